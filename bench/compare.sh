#!/usr/bin/env bash
# Fiberscope vs its peers, in one command:
#   installs the packages (scripts/install-deps.sh), builds a Release tree in
#   build-bench/, runs every benchmark and prints a table of medians and ratios.
#
# Usage: bench/compare.sh
# Environment (all optional):
#   BENCH_REPS=10        repetitions of the micro-benchmarks (yield, spawn+await)
#   BENCH_SKYNET_REPS=5  repetitions of the skynets (Fiberscope, Boost.Fiber, Go)
#   BENCH_JOBS=1         parallel build jobs (the build runs under nice -n 10)
#   BENCH_TIMEOUT=600    seconds before one benchmark process counts as hung
#   ECHO_REPS=5          runs per cell of the echo table (bench/echo/run.sh)
#
# Raw results stay in build-bench/results/: Google Benchmark JSON (*.json),
# the console output of each run (*.log), the Go peer's output (go*.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$root/build-bench
results=$build/results
reps=${BENCH_REPS:-10}
skynet_reps=${BENCH_SKYNET_REPS:-5}
jobs=${BENCH_JOBS:-1}
limit=${BENCH_TIMEOUT:-600}

say() { printf '==> %s\n' "$*"; }

# --- machine -----------------------------------------------------------------
cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
[ -n "$cpu_model" ] || cpu_model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -1)
machine_info() {
  echo "machine: nproc=$(nproc), CPU: ${cpu_model:-unknown}"
  echo "         kernel $(uname -r), $(awk '/MemTotal/ {printf "%.1f GiB RAM", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine_info

# --- install, configure, build ------------------------------------------------
say "installing packages (scripts/install-deps.sh)"
scripts/install-deps.sh libbenchmark-dev libboost-context-dev libboost-fiber-dev golang-go

say "configuring Release build in build-bench/"
mkdir -p "$build"
nice -n 10 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DFIBERSCOPE_BUILD_BENCH=ON -DFIBERSCOPE_BUILD_TESTS=OFF >"$build/configure.log" 2>&1 \
  || { cat "$build/configure.log"; exit 1; }
grep 'bench:' "$build/configure.log" || true

say "building (nice -n 10, -j$jobs)"
nice -n 10 cmake --build "$build" -j "$jobs" --target fiberscope_bench

go_exe=""
if command -v go >/dev/null; then
  say "building the Go peer (go build)"
  mkdir -p "$build/go"
  GOCACHE="$build/go/cache" GOPATH="$build/go/path" \
    nice -n 10 go build -o "$build/go/skynet_go" "$root/bench/peers/skynet.go"
  go_exe=$build/go/skynet_go
else
  echo "bench: go not found (golang-go); skipping the Go peer"
fi

# --- run -----------------------------------------------------------------------
rm -rf "$results"
mkdir -p "$results"
failed=0

# gbench NAME EXE FILTER REPS: one Google Benchmark run; JSON to results/NAME.json.
gbench() {
  local name=$1 exe=$2 filter=$3 n=$4
  if [ ! -x "$exe" ]; then
    echo "    (skipped: $exe was not built)"
    return 0
  fi
  local rc=0
  # BENCH_PIN (e.g. "taskset -c 1"), where set, runs the benchmark pinned.
  timeout "$limit" ${BENCH_PIN:-} "$exe" --benchmark_filter="$filter" --benchmark_repetitions="$n" \
    --benchmark_display_aggregates_only=true \
    --benchmark_out="$results/$name.json" --benchmark_out_format=json \
    >"$results/$name.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    failed=1
    [ $rc -eq 124 ] && echo "    FAILED: $name hung (killed after ${limit}s)" || echo "    FAILED: $name exited with status $rc"
    tail -n 20 "$results/$name.log" | sed 's/^/    | /'
    echo "$rc" >"$results/$name.failed"
  fi
}

say "fiberscope: yield ping-pong, spawn+await ($reps repetitions)"
gbench fiberscope_micro "$build/bench/fiberscope_runtime_bench" '^BM_(YieldPingPong|SpawnAwait|ReadClock|TraceEvent)' "$reps"
say "fiberscope: skynet 1M ($skynet_reps repetitions)"
gbench fiberscope_skynet "$build/bench/fiberscope_runtime_bench" '^BM_Skynet(OneThread)?/' "$skynet_reps"
say "fiberscope on the epoll backend: yield, spawn+await, skynet 1M"
FIBERSCOPE_BACKEND=epoll gbench fiberscope_micro_epoll "$build/bench/fiberscope_runtime_bench" '^BM_(YieldPingPong|SpawnAwait)' "$reps"
FIBERSCOPE_BACKEND=epoll gbench fiberscope_skynet_epoll "$build/bench/fiberscope_runtime_bench" '^BM_Skynet(OneThread)?/' "$skynet_reps"
say "fiberscope: the scheduler policies side by side (FIBERSCOPE_SCHEDULER=seed, then scaling): spawn+await, skynet 1M"
for policy in seed scaling; do
  FIBERSCOPE_SCHEDULER=$policy gbench fiberscope_micro_$policy "$build/bench/fiberscope_runtime_bench" '^BM_SpawnAwait' "$reps"
  FIBERSCOPE_SCHEDULER=$policy gbench fiberscope_skynet_$policy "$build/bench/fiberscope_runtime_bench" '^BM_Skynet(OneThread)?/' "$skynet_reps"
done
say "fiberscope: the scaling table, under each policy: skynet, yield-heavy and hand-off-heavy at 1, 2 and 4 threads"
for policy in seed scaling; do
  FIBERSCOPE_SCHEDULER=$policy gbench fiberscope_table_$policy "$build/bench/fiberscope_runtime_bench" '^BM_Scaling' "$skynet_reps"
done
say "fiberscope: skynet 1M traced ($skynet_reps repetitions)"
gbench fiberscope_skynet_traced "$build/bench/fiberscope_runtime_bench" '^BM_SkynetTraced/' "$skynet_reps"
say "Boost.Context: continuation ping-pong ($reps repetitions)"
gbench boost_context "$build/bench/boost_context_pingpong" '^BM_BoostContextResume' "$reps"
# The switch pinned to each CPU in turn. A shared machine's vCPUs are not
# equal: on the 2-vCPU VM this was written on, one ran Fiberscope's yield at
# ~11 ns and Boost.Context's resume at ~6.3 ns, the other at ~7.4 and ~5.4,
# the same binaries a second apart (its core was busy with something outside
# the VM). An unpinned run lands on either, so its ratio can compare two
# different CPUs; the pinned pairs compare like with like.
if command -v taskset >/dev/null 2>&1; then
  pinned_cpus=$(nproc); [ "$pinned_cpus" -gt 4 ] && pinned_cpus=4
  say "the switch pinned to each of the first $pinned_cpus CPUs: yield and Boost.Context resume ($reps repetitions each)"
  for cpu in $(seq 0 $((pinned_cpus - 1))); do
    BENCH_PIN="taskset -c $cpu" gbench fiberscope_yield_cpu$cpu "$build/bench/fiberscope_runtime_bench" '^BM_YieldPingPong' "$reps"
    BENCH_PIN="taskset -c $cpu" gbench boost_context_cpu$cpu "$build/bench/boost_context_pingpong" '^BM_BoostContextResume' "$reps"
  done
fi
say "Boost.Fiber: yield ping-pong ($reps repetitions)"
gbench boost_fiber_micro "$build/bench/boost_fiber_bench" '^BM_BoostFiberYield' "$reps"
say "Boost.Fiber: skynet 1M ($skynet_reps repetitions)"
gbench boost_fiber_skynet "$build/bench/boost_fiber_bench" '^BM_BoostFiberSkynet' "$skynet_reps"
if [ -n "$go_exe" ]; then
  for mode in plain trace; do
    flag=""; [ $mode = trace ] && flag=-trace
    say "Go: skynet 1M${flag:+ with runtime/trace} ($skynet_reps runs + 1 warm-up)"
    rc=0
    timeout "$limit" "$go_exe" -runs "$skynet_reps" $flag >"$results/go_$mode.txt" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then
      failed=1
      echo "    FAILED: Go skynet ($mode) exited with status $rc"
      sed 's/^/    | /' "$results/go_$mode.txt"
    fi
  done
fi

say "echo servers on loopback: epoll peer vs Fiberscope (${ECHO_REPS:-5} runs of each cell)"
if ! bench/echo/run.sh "$build/bench" "$results/echo.txt" >"$results/echo.log" 2>&1; then
  failed=1
  echo "    FAILED: the echo benchmark"
  tail -n 20 "$results/echo.log" | sed 's/^/    | /'
fi

# --- report --------------------------------------------------------------------
echo
machine_info
echo "build:   $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt"), $(c++ --version | head -1), \
$(sed -n 's/^\(FIBERSCOPE_[A-Z_]*\):BOOL=\(.*\)/\1=\2/p' "$build/CMakeCache.txt" | sort | tr '\n' ' ')"
python3 - "$results" "$reps" "$skynet_reps" <<'PY'
import json, os, re, sys

results, reps, skynet_reps = sys.argv[1], sys.argv[2], sys.argv[3]
to_ns = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

medians, cvs, errors, context = {}, {}, {}, None
bytes_per_event = None
for name in sorted(os.listdir(results)):
    if not name.endswith(".json"):
        continue
    try:
        with open(os.path.join(results, name)) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:  # e.g. the process crashed mid-write
        print(f"warning: cannot read {name}: {e}")
        continue
    context = context or data.get("context")
    # Runs on the epoll backend (results/*_epoll.json) are keyed "epoll:RUN",
    # runs pinned to a scheduler policy (*_seed.json, *_scaling.json) "seed:RUN"
    # and "scaling:RUN"; runs pinned to CPU N (*_cpuN.json) "cpuN:RUN".
    prefix = ""
    for tag in ("epoll", "seed", "scaling"):
        if name.endswith(f"_{tag}.json"):
            prefix = tag + ":"
    pinned = re.search(r"_(cpu[0-9]+)\.json$", name)
    if pinned:
        prefix = pinned.group(1) + ":"
    for b in data.get("benchmarks", []):
        run = prefix + b.get("run_name", b["name"])
        if b.get("error_occurred"):
            errors[run] = b.get("error_message", "error")
            continue
        if b.get("run_type") != "aggregate":
            continue
        scale = to_ns[b.get("time_unit", "ns")]
        if b["aggregate_name"] == "median":
            medians[run] = b["real_time"] * scale
            if "bytes_per_event" in b:
                bytes_per_event = b["bytes_per_event"]
        elif b["aggregate_name"] == "cv":
            cvs[run] = b["real_time"]  # a fraction, unit-less

for key, fname in (("GO", "go_plain.txt"), ("GO_TRACED", "go_trace.txt")):
    path = os.path.join(results, fname)
    if os.path.exists(path):
        for line in open(path):
            parts = line.split()
            if len(parts) == 2 and parts[0] in ("skynet_go_ms", "skynet_go_traced_ms"):
                medians[key] = float(parts[1]) * 1e6
            elif parts and parts[0] == "skynet_go_runs_ms":
                runs = [float(x) for x in parts[1:]]
                if len(runs) > 1:
                    mean = sum(runs) / len(runs)
                    sd = (sum((x - mean) ** 2 for x in runs) / (len(runs) - 1)) ** 0.5
                    cvs[key] = sd / mean
            elif parts and parts[0] == "skynet_go_gomaxprocs":
                medians[key + "_PROCS"] = int(parts[1])

def fmt(ns, unit):
    if ns is None:
        return "n/a"
    return f"{ns:.2f} ns" if unit == "ns" else f"{ns / 1e6:.1f} ms"

def get(run):
    return medians.get(run)

def status(run):
    if run in errors:
        return "error: " + errors[run]
    return "not run / failed"

FS_YIELD = "BM_YieldPingPong/real_time"
FS_SPAWN1 = "BM_SpawnAwait/threads:1/real_time"
FS_SPAWN2 = "BM_SpawnAwait/threads:2/real_time"
FS_SKYNET = "BM_Skynet/real_time"
FS_SKYNET1 = "BM_SkynetOneThread/real_time"
FS_CLOCK = "BM_ReadClock"
FS_EVENT = "BM_TraceEvent"
FS_SKYNET_TRACED = "BM_SkynetTraced/real_time"
BC_RESUME = "BM_BoostContextResume/real_time"
BF_YIELD = "BM_BoostFiberYield/real_time"
BF_SKYNET = "BM_BoostFiberSkynet/real_time"

nproc = os.cpu_count()
go_procs = medians.get("GO_PROCS", nproc)
rows = []

def row(label, fs_run, peer_label, peer_run, unit, target=None, inverse_target=None):
    fs, peer = get(fs_run), (get(peer_run) if peer_run else None)
    fs_cell = fmt(fs, unit) if fs is not None else status(fs_run)
    # The same Fiberscope benchmark on the epoll backend, where it was run.
    ep = get("epoll:" + fs_run)
    ep_cell = "—" if ep is None else fmt(ep, unit) + (f" ({ep / peer:.2f}x)" if peer else "")
    if peer_run is None:
        rows.append([label, fs_cell, ep_cell, "—", "—", "—", "absolute (no peer)"])
        return
    peer_cell = fmt(peer, unit) if peer is not None else status(peer_run)
    ratio = f"{fs / peer:.2f}x" if fs and peer else "n/a"
    if target is not None:
        if fs and peer:
            verdict = "met" if fs / peer <= target else "MISSED"
            tgt = f"<= {target:.1f}x: {verdict}"
        else:
            tgt = f"<= {target:.1f}x: n/a"
    elif inverse_target is not None:
        if fs and peer:
            inv = peer / fs
            verdict = "met" if inv >= inverse_target else "MISSED"
            tgt = f"peer/fiberscope >= {inverse_target:.0f}x: is {inv:.1f}x, {verdict}"
        else:
            tgt = f"peer/fiberscope >= {inverse_target:.0f}x: n/a"
    else:
        tgt = "— (reference)"
    rows.append([label, fs_cell, ep_cell, peer_label, peer_cell, ratio, tgt])

row("yield (ns per switch, 1 thread)", FS_YIELD, "Boost.Context resume", BC_RESUME, "ns", target=1.5)
row("yield (ns per switch, 1 thread)", FS_YIELD, "Boost.Fiber yield", BF_YIELD, "ns")
row("spawn+await empty fiber, threads=1", FS_SPAWN1, None, None, "ns")
row("spawn+await empty fiber, threads=2", FS_SPAWN2, None, None, "ns")
row(f"skynet 1M, threads={nproc}", FS_SKYNET, f"Go (GOMAXPROCS={go_procs})", "GO", "ms", target=1.0)
row(f"skynet 1M, threads={nproc}", FS_SKYNET, "Boost.Fiber (1 thread)", BF_SKYNET, "ms", inverse_target=5)
row("skynet 1M, threads=1 (extra)", FS_SKYNET1, "Boost.Fiber (1 thread)", BF_SKYNET, "ms")
row("one trace event (clock + encode)", FS_EVENT, "one trace clock read (rdtsc)", FS_CLOCK, "ns", target=1.5)
row(f"skynet 1M traced, threads={nproc}", FS_SKYNET_TRACED, "skynet 1M untraced", FS_SKYNET, "ms", target=1.5)
def print_table(header, rows):
    """A Markdown table, each column as wide as its widest cell."""
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    cells_line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    print(cells_line(header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(cells_line(r))
    print()

# The scaling table: each workload at 1, 2 and 4 threads under each policy,
# with the time against the same policy's 1-thread time. Threads beyond the
# machine's CPUs oversubscribe it: those rows are marked.
table_rows = []
for label, bench, unit in (("skynet 1M", "BM_ScalingSkynet", "ms"), ("yield-heavy, per yield", "BM_ScalingYield", "ns"),
                           ("hand-off-heavy, per round trip", "BM_ScalingHandoff", "ns")):
    for threads in (1, 2, 4):
        cells = [label, f"{threads}" + (" (oversubscribed)" if threads > nproc else "")]
        for policy in ("seed", "scaling"):
            one = get(f"{policy}:{bench}/threads:1/real_time")
            here = get(f"{policy}:{bench}/threads:{threads}/real_time")
            cells.append(f"{fmt(here, unit)} ({here / one:.2f}x)" if one and here else "n/a")
        table_rows.append(cells)
if any(c != "n/a" for r in table_rows for c in r[2:]):
    print_table(["scaling table (time, and x its 1-thread time)", "threads", "seed", "scaling"], table_rows)

if "GO" in medians and "GO_TRACED" in medians:
    rows.append(["Go skynet traced (reference)", fmt(medians["GO_TRACED"], "ms"), "—", "Go skynet untraced",
                 fmt(medians["GO"], "ms"), f"{medians['GO_TRACED'] / medians['GO']:.2f}x", "— (Go's tracer)"])
if bytes_per_event is not None:
    rows.append(["trace bytes per event (skynet)", f"{bytes_per_event:.2f} B", "—", "Go new tracer (published)", "~4.5 B",
                 f"{bytes_per_event / 4.5:.2f}x", f"<= 8 B: {'met' if bytes_per_event <= 8 else 'MISSED'}"])

header = ["benchmark", "fiberscope (io_uring)", "epoll backend (its ratio to the peer)", "peer", "peer time", "ratio (fiberscope/peer)", "target"]
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
print()
print(f"Medians of real (wall-clock) time: {reps} repetitions for yield / spawn+await / resume, "
      f"{skynet_reps} for the skynets (Go: {skynet_reps} runs after a warm-up).")
print()
print(line(header))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows:
    print(line(r))
print()

# The switch pinned to each CPU: yield against Boost.Context on the same CPU.
pinned_rows = []
for cpu in range(nproc):
    fs, bc = get(f"cpu{cpu}:{FS_YIELD}"), get(f"cpu{cpu}:{BC_RESUME}")
    if fs is None and bc is None:
        continue
    ratio = f"{fs / bc:.2f}x" if fs and bc else "n/a"
    verdict = ("met" if fs / bc <= 1.5 else "MISSED") if fs and bc else "n/a"
    pinned_rows.append([f"CPU {cpu}", fmt(fs, "ns") if fs else status(f"cpu{cpu}:{FS_YIELD}"),
                        fmt(bc, "ns") if bc else status(f"cpu{cpu}:{BC_RESUME}"), ratio, f"<= 1.5x: {verdict}"])
if pinned_rows:
    print_table(["yield vs Boost.Context, both pinned to", "yield", "Boost.Context resume", "ratio", "target"], pinned_rows)

# The scheduler policies side by side: each policy's 2-thread (or N-thread)
# time against its own 1-thread time, with the issue-15 targets.
policy_rows = []
for label, one, many, target in (("spawn+await, threads=2 vs 1", FS_SPAWN1, FS_SPAWN2, 2.0),
                                 (f"skynet 1M, threads={nproc} vs 1", FS_SKYNET1, FS_SKYNET, 0.7)):
    cells = [label]
    for policy in ("seed", "scaling"):
        a, b = get(policy + ":" + one), get(policy + ":" + many)
        unit = "ns" if one == FS_SPAWN1 else "ms"
        if a and b:
            cells.append(f"{fmt(a, unit)} -> {fmt(b, unit)} ({b / a:.2f}x, <= {target:.1f}x: {'met' if b / a <= target else 'MISSED'})")
        else:
            cells.append("n/a")
    policy_rows.append(cells)

if any(c != "n/a" for r in policy_rows for c in r[1:]):
    print_table(["scheduler policy (1 thread -> more)", "seed", "scaling"], policy_rows)

if "GO" in medians and "GO_TRACED" in medians:
    print(f"Go skynet with runtime/trace on: {fmt(medians['GO_TRACED'], 'ms')} "
          f"({medians['GO_TRACED'] / medians['GO']:.2f}x untraced) — the reference for the tracer's overhead.")
noise = [(n, c) for n, c in sorted(cvs.items())]
pretty = {"GO": "Go skynet", "GO_TRACED": "Go skynet traced"}
if noise:
    print("Spread (coefficient of variation over the repetitions): " +
          ", ".join(f"{pretty.get(n, n.replace('/real_time', ''))} {100 * c:.1f}%" for n, c in noise))
if context:
    print(f"Google Benchmark {context.get('library_build_type', '?')} library; "
          f"{context.get('num_cpus', '?')} CPUs at {context.get('mhz_per_cpu', '?')} MHz; "
          f"CPU frequency scaling {'on' if context.get('cpu_scaling_enabled') else 'off'}.")
for run, msg in sorted(errors.items()):
    print(f"ERROR in {run}: {msg}")
PY

echo
[ -s "$results/echo.txt" ] && python3 bench/echo/summarize.py "$results/echo.txt"

if [ $failed -ne 0 ]; then
  echo "compare.sh: some benchmarks failed; see above and $results/" >&2
  exit 1
fi

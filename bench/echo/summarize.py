#!/usr/bin/env python3
"""Medians of bench/echo/run.sh output, as a table of ratios against the epoll server.

Usage: summarize.py RESULTS_FILE
"""
import statistics
import sys

LABELS = {
    "epoll": "plain epoll server (peer)",
    "uring": "Fiberscope, io_uring, 1 thread",
    "uring2": "Fiberscope, io_uring, 2 threads",
    "epoll-backend": "Fiberscope, epoll backend, 1 thread",
}

runs = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) < 4:
        continue
    server, connections = parts[0], int(parts[1])
    fields = dict(zip(parts[2::2], parts[3::2]))
    runs.setdefault((server, connections), []).append({k: float(v) for k, v in fields.items()})

def median(server, connections, key):
    values = [r[key] for r in runs.get((server, connections), []) if key in r]
    return statistics.median(values) if values else None

servers = [s for s in LABELS if any(k[0] == s for k in runs)]
connection_counts = sorted({k[1] for k in runs})
header = ["connections", "server", "req/s", "p99 µs", "CPU µs/req", "throughput vs epoll", "target"]
rows = []
for c in connection_counts:
    base = median("epoll", c, "rps")
    for server in servers:
        rps = median(server, c, "rps")
        if rps is None:
            continue
        ratio = rps / base if base else None
        target = "—"
        if server == "uring" and ratio is not None:
            target = ">= 1.0x: " + ("met" if ratio >= 1.0 else "MISSED")
        rows.append([str(c), LABELS[server], f"{rps:,.0f}", f"{median(server, c, 'p99_us'):.0f}",
                     f"{median(server, c, 'cpu_us_per_request'):.2f}",
                     f"{ratio:.2f}x" if ratio is not None else "n/a", target])
reps = max((len(v) for v in runs.values()), default=0)
widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
fmt = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"
print(f"Echo on loopback, 64-byte messages, closed-loop client; medians of {reps} runs per cell.")
print(fmt(header))
print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
for r in rows:
    print(fmt(r))

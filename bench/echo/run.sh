#!/usr/bin/env bash
# The echo benchmark: each server in turn, loaded by the same bounded client
# (echo_client) on loopback, at 1, 64 and 256 connections. Servers alternate
# within each repetition, so a noisy neighbour hurts all of them alike.
#
# Usage: bench/echo/run.sh BIN_DIR OUT_FILE
# Environment: ECHO_REPS=5, ECHO_SECONDS=1, ECHO_CONNECTIONS="1 64 256",
#   ECHO_SERVERS="epoll uring epoll-backend uring2" (see `server_command` below).
# OUT_FILE gets one line per run:
#   SERVER CONNECTIONS requests N seconds S rps R p50_us A p99_us B all_requests M cpu_us_per_request C
# where C is the server's CPU time (user + system) per request.
set -euo pipefail
bin=$1
out=$2
reps=${ECHO_REPS:-5}
seconds=${ECHO_SECONDS:-1}
connections=${ECHO_CONNECTIONS:-"1 64 256"}
servers=${ECHO_SERVERS:-"epoll uring epoll-backend uring2"}
: >"$out"

# Where the two processes run. Left to the kernel, the client and a
# one-thread server sometimes share a CPU (round trips then skip the
# cross-CPU wake-up) and sometimes not, and a run's result depends on which.
# With two or more CPUs, single-threaded servers get CPU 0 and the client
# CPU 1, every time; multi-threaded servers may use every CPU.
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  pin_server="taskset -c 0"
  pin_client="taskset -c 1"
else
  pin_server=""
  pin_client=""
fi

server_command() {
  case $1 in
    epoll) echo "$bin/epoll_echo_server" ;;
    uring) echo "$bin/fiberscope_echo_server --threads 1 --backend uring" ;;
    uring2) echo "$bin/fiberscope_echo_server --threads 2 --backend uring" ;;
    epoll-backend) echo "$bin/fiberscope_echo_server --threads 1 --backend epoll" ;;
    *) echo "echo/run.sh: unknown server '$1'" >&2; return 1 ;;
  esac
}

# CPU time (user + system, in clock ticks) the process has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

for rep in $(seq "$reps"); do
  for c in $connections; do
    for server in $servers; do
      log=$(mktemp)
      pin=$pin_server
      [ "$server" = uring2 ] && pin=""
      $pin $(server_command "$server") >"$log" 2>&1 &
      pid=$!
      port=""
      for _ in $(seq 100); do
        port=$(awk '$1 == "port" {print $2}' "$log")
        [ -n "$port" ] && break
        sleep 0.05
      done
      if [ -z "$port" ]; then
        echo "echo/run.sh: server '$server' did not start:" >&2
        sed 's/^/  | /' "$log" >&2
        kill "$pid" 2>/dev/null || true
        exit 1
      fi
      before=$(cpu_ticks "$pid")
      result=$(timeout 60 $pin_client "$bin/echo_client" --port "$port" --connections "$c" --seconds "$seconds")
      after=$(cpu_ticks "$pid")
      kill "$pid"
      wait "$pid" 2>/dev/null || true
      rm -f "$log"
      requests=$(echo "$result" | awk '{print $12}')
      ticks_per_second=$(getconf CLK_TCK)
      cpu=$(awk -v a="$after" -v b="$before" -v n="$requests" -v hz="$ticks_per_second" \
        'BEGIN { printf "%.2f", (a - b) / hz * 1e6 / (n > 0 ? n : 1) }')
      echo "$server $c $result cpu_us_per_request $cpu" | tee -a "$out"
    done
  done
done

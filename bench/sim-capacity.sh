#!/usr/bin/env bash
# sim-capacity.sh — how many concurrent streams does `spate sim` sustain
# within timing tolerance, and what does a streamed request cost it in CPU?
#
# Builds spate and bench/simcap, starts `spate sim` in deterministic mode as
# its own process on loopback, and runs simcap against it for each
# concurrency level. The simulator's CPU time is read from /proc/PID/stat,
# so it excludes the client's. Settings come from the environment:
#
#   TTFT=50ms ITL=10ms TOKENS=128 LEVELS=1000,5000,10000 DURATION=20s PORT=18080 TOL=1ms
#
# Loopback only; every level is bounded by DURATION.
set -euo pipefail
cd "$(dirname "$0")/.."

TTFT=${TTFT:-50ms}
ITL=${ITL:-10ms}
TOKENS=${TOKENS:-128}
LEVELS=${LEVELS:-1000,5000,10000}
DURATION=${DURATION:-20s}
PORT=${PORT:-18080}
TOL=${TOL:-1ms}

# Each stream holds a socket on both sides.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ulimit -n 200000 2>/dev/null || true
echo "open files limit: $(ulimit -n)"

tmp=$(mktemp -d)
sim_pid=""
cleanup() {
	if [[ -n "$sim_pid" ]] && kill -0 "$sim_pid" 2>/dev/null; then
		kill -INT "$sim_pid" 2>/dev/null || true
		wait "$sim_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/spate" ./cmd/spate
go build -o "$tmp/simcap" ./bench/simcap

"$tmp/spate" sim --addr "127.0.0.1:$PORT" --ttft "$TTFT" --itl "$ITL" --output-tokens 0 &
sim_pid=$!
for _ in $(seq 100); do
	if curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
	sleep 0.1
done

"$tmp/simcap" -url "http://127.0.0.1:$PORT" -pid "$sim_pid" -ttft "$TTFT" -itl "$ITL" \
	-tokens "$TOKENS" -levels "$LEVELS" -duration "$DURATION" -tol "$TOL"

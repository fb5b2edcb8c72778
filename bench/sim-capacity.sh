#!/usr/bin/env bash
# sim-capacity.sh — how many concurrent streams does `spate sim` sustain
# within timing tolerance, and what does a streamed request cost it in CPU?
#
# Builds spate and bench/simcap, starts `spate sim` in deterministic mode as
# its own process on a free loopback port, and runs simcap against it for
# each concurrency level. The simulator's CPU time is read from
# /proc/PID/stat, so it excludes the client's. Settings come from the
# environment:
#
#   TTFT=50ms ITL=100ms TOKENS=128 LEVELS=1000,5000,10000 DURATION=20s TOL=2ms TOL99=2ms \
#   TICK=1ms CLIENT=raw LOOPS=1 SIMARGS="" bench/sim-capacity.sh
#
# TOL bounds the TTFT and ITL medians' error, TOL99 their p99s' (0: not
# judged). CLIENT=raw is simcap's epoll client, several times cheaper per
# event than CLIENT=http (net/http, a goroutine per stream), so that the
# client is not what gives out first.
#
# Loopback only; every level is bounded by DURATION plus one stream length.
set -euo pipefail
cd "$(dirname "$0")/.."

TTFT=${TTFT:-50ms}
ITL=${ITL:-100ms}
TOKENS=${TOKENS:-128}
LEVELS=${LEVELS:-1000,5000,10000}
DURATION=${DURATION:-20s}
TOL=${TOL:-2ms}
TOL99=${TOL99:-2ms}
TICK=${TICK:-1ms}
CLIENT=${CLIENT:-raw}
LOOPS=${LOOPS:-1}
SIMARGS=${SIMARGS:-}

# Each stream holds a socket on both sides, and the simulator a duplicate
# descriptor of each socket it writes directly: raise the limit (root may
# raise the hard one) before falling back to the hard limit.
ulimit -n 200000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
echo "open files limit: $(ulimit -n); load average: $(cut -d' ' -f1-3 /proc/loadavg)"

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

PORT=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
# shellcheck disable=SC2086
"$tmp/spate" sim --addr "127.0.0.1:$PORT" --ttft "$TTFT" --itl "$ITL" --output-tokens 0 --tick "$TICK" $SIMARGS &
sim_pid=$!
for _ in $(seq 100); do
	if curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
	sleep 0.1
done
kill -0 "$sim_pid"

"$tmp/simcap" -url "http://127.0.0.1:$PORT" -pid "$sim_pid" -ttft "$TTFT" -itl "$ITL" \
	-tokens "$TOKENS" -levels "$LEVELS" -duration "$DURATION" -tol "$TOL" -tol99 "$TOL99" -client "$CLIENT" -loops "$LOOPS"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

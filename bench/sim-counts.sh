#!/usr/bin/env bash
# sim-counts.sh — counts per streamed request that do not depend on how busy
# the machine is, for `spate sim`, bench/naivesim (and bench/floorsim) at
# one load:
#
#   - system calls and context switches per request and per token (perf stat
#     on the server, natively, over one run of D2 at CONC streams x ITL);
#   - user-space instructions per request (valgrind --tool=callgrind): each
#     server runs under callgrind for two lengths (D1, D2) of a lighter load
#     (CG_CONC streams x CG_ITL, which the servers keep up with under
#     valgrind), its counts dumped by callgrind_control before it is killed
#     (callgrind trips on the stop signal); the difference of instructions
#     over the difference of requests completed cancels start-up.
#
#   CONC=200 ITL=10ms CG_CONC=20 CG_ITL=20ms TTFT=50ms TOKENS=128 D1=3s D2=8s TICK=1ms bench/sim-counts.sh
#
# SERVERS="naive spate" picks the servers (floor adds bench/floorsim); SPATE=path counts that spate
# binary (built with CGO_ENABLED=0) instead of this tree's, to compare two
# versions; CALLGRIND=0 skips the instruction counts.
#
# Under callgrind the servers run one thread at a time, tens of times
# slower, without asynchronous preemption (GODEBUG=asyncpreemptoff=1: its
# signals trip callgrind): the instruction counts hold, the timings do not.
# Needs valgrind and perf; loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
CONC=${CONC:-200}
ITL=${ITL:-10ms}
TTFT=${TTFT:-50ms}
TOKENS=${TOKENS:-128}
CG_CONC=${CG_CONC:-20}
CG_ITL=${CG_ITL:-20ms}
D1=${D1:-3s}
D2=${D2:-8s}
TICK=${TICK:-1ms}
ulimit -n 100000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d)
srv=""
cleanup() {
	if [[ -n "$srv" ]] && kill -0 "$srv" 2>/dev/null; then
		kill -INT "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
SERVERS=${SERVERS:-naive spate}
# shellcheck source=bench/servers.sh
source bench/servers.sh
check_servers sim-counts
CALLGRIND=${CALLGRIND:-1}
if [[ -n "${SPATE:-}" ]]; then cp "$SPATE" "$tmp/spate"; else CGO_ENABLED=0 go build -o "$tmp/spate" ./cmd/spate; fi
CGO_ENABLED=0 go build -o "$tmp/naivesim" ./bench/naivesim
go build -o "$tmp/simcap" ./bench/simcap
if [[ " $SERVERS " == *" floor "* ]]; then CGO_ENABLED=0 go build -o "$tmp/floorsim" ./bench/floorsim; fi
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start WHICH PORT ITL [WRAPPER...]: starts the server (under WRAPPER) and waits for it.
start() {
	local which=$1 port=$2 itl=$3
	shift 3
	if [[ $which == spate ]]; then
		GODEBUG=${GODEBUG_RUN:-} "$@" "$tmp/spate" sim --addr "127.0.0.1:$port" --ttft "$TTFT" --itl "$itl" --output-tokens 0 --tick "$TICK" >/dev/null 2>"$tmp/$which.err" &
	elif [[ $which == floor ]]; then
		GODEBUG=${GODEBUG_RUN:-} "$@" "$tmp/floorsim" -addr "127.0.0.1:$port" -ttft "$TTFT" -itl "$itl" -tick "$TICK" 2>"$tmp/$which.err" &
	else
		GODEBUG=${GODEBUG_RUN:-} "$@" "$tmp/naivesim" -addr "127.0.0.1:$port" -ttft "$TTFT" -itl "$itl" 2>"$tmp/$which.err" &
	fi
	srv=$!
	for _ in $(seq 300); do
		if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then return; fi
		sleep 0.1
	done
	failed "$which did not start${1:+ under $1}" "${1:-}"
}
# failed WHAT [WRAPPER]: says what failed with the end of the server's output, and stops.
failed() {
	echo "sim-counts: $1; the end of its output:" >&2
	tail -n 5 "$tmp/$which.err" >&2
	if [[ ${2:-} == valgrind ]]; then
		echo "sim-counts: callgrind can fail to run Go programs on some kernels (seen: an assertion in vgCallgrind_post_signal, kernel 6.18, valgrind 3.19); CALLGRIND=0 counts system calls alone" >&2
	fi
	exit 1
}
stop() {
	kill -INT "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	srv=""
}
drive() { # PORT DURATION CONC ITL: prints requests completed
	"$tmp/simcap" -url "http://127.0.0.1:$1" -ttft "$TTFT" -itl "$4" -tokens "$TOKENS" -levels "$3" -duration "$2" -client raw -json 2>/dev/null |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'
}
irs() { awk '/^summary:|^totals:/ {print $2; exit}' "$1"; }

echo "sim-counts: $TOKENS tokens, TTFT $TTFT, spate --tick $TICK; system calls at $CONC streams x $ITL, instructions at $CG_CONC x $CG_ITL; load $(cut -d' ' -f1-3 /proc/loadavg)"
for which in $SERVERS; do
	# System calls: natively, perf stat over one run.
	port=$(freeport)
	start "$which" "$port" "$ITL"
	perf stat -x, -e 'raw_syscalls:sys_enter,context-switches' -p "$srv" -o "$tmp/perf.$which" &
	pp=$!
	n=$(drive "$port" "$D2" "$CONC" "$ITL")
	kill -INT "$pp"
	wait "$pp" 2>/dev/null || true
	stop
	awk -F, -v n="$n" -v t="$TOKENS" -v w="$which" '$3 ~ /sys_enter|context-switches/ {printf "%s: %s %d over %d requests => %.1f per request, %.3f per token\n", w, $3, $1, n, $1 / n, $1 / n / t}' "$tmp/perf.$which"
	if [[ $CALLGRIND == 0 ]]; then continue; fi
	# Instructions: two lengths under callgrind.
	declare -A req ir
	for d in "$D1" "$D2"; do
		port=$(freeport)
		GODEBUG_RUN=asyncpreemptoff=1 start "$which" "$port" "$CG_ITL" valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$tmp/cg.$which.$d"
		req[$d]=$(drive "$port" "$d" "$CG_CONC" "$CG_ITL")
		callgrind_control -d "$srv" >/dev/null 2>&1
		kill -KILL "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
		srv=""
		if [[ ! -s "$tmp/cg.$which.$d.1" ]]; then failed "$which under callgrind left no counts" valgrind; fi
		ir[$d]=$(irs "$tmp/cg.$which.$d.1")
	done
	if [[ -n "${KEEP:-}" ]]; then cp "$tmp/cg.$which.$D2.1" "$KEEP.$which"; fi
	echo "$which: callgrind $D1: ${req[$D1]} requests, ${ir[$D1]} Ir; $D2: ${req[$D2]} requests, ${ir[$D2]} Ir => $(((ir[$D2] - ir[$D1]) / (req[$D2] - req[$D1]))) user instructions per request"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# sim-compare.sh — CPU per streamed request of `spate sim` against a
# sleep-per-token Go simulator (bench/naivesim), side by side, driven by the
# same client (bench/simcap) at the same load.
#
# For each load (CONC:ITL) and each of REPS rounds, it starts each server as
# its own process on a free loopback port (the order alternates by round),
# runs simcap against it for DURATION after one stream length of ramp-up,
# and reads the server's CPU time (user + system) from /proc/PID/stat. It
# prints every run and then, per load, the median and range of each server's
# CPU per 128-token request, their ratio, and the timing errors (TTFT and ITL
# p50 against the settings), with the load average seen during the runs.
#
#   LOADS="200:10ms 200:100ms 2000:100ms" REPS=3 DURATION=10s TTFT=50ms TOKENS=128 \
#   TICK=1ms CLIENT=raw SIMARGS="" SERVERS="naive spate" bench/sim-compare.sh
#
# SERVERS="naive spate floor" adds bench/floorsim (Linux), the floor: the
# same streams from one thread with no net/http and no goroutine per
# request, on the same --tick grid. The order of the servers rotates by
# round.
#
# Loopback only; every run is bounded by DURATION plus one stream length.
set -euo pipefail
cd "$(dirname "$0")/.."

LOADS=${LOADS:-"200:10ms 200:100ms 2000:100ms"}
REPS=${REPS:-3}
DURATION=${DURATION:-10s}
TTFT=${TTFT:-50ms}
TOKENS=${TOKENS:-128}
TICK=${TICK:-1ms}
CLIENT=${CLIENT:-raw}
SIMARGS=${SIMARGS:-}
SERVERS=${SERVERS:-naive spate}
# shellcheck source=bench/servers.sh
source bench/servers.sh
check_servers sim-compare

ulimit -n 200000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
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

go build -o "$tmp/spate" ./cmd/spate
go build -o "$tmp/naivesim" ./bench/naivesim
go build -o "$tmp/simcap" ./bench/simcap
if [[ " $SERVERS " == *" floor "* ]]; then go build -o "$tmp/floorsim" ./bench/floorsim; fi

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# one SERVER CONC ITL: start the server, run simcap, print one JSON line.
one() {
	local which=$1 conc=$2 itl=$3 port
	port=$(freeport)
	if [[ $which == spate ]]; then
		# shellcheck disable=SC2086
		"$tmp/spate" sim --addr "127.0.0.1:$port" --ttft "$TTFT" --itl "$itl" --output-tokens 0 --tick "$TICK" $SIMARGS >/dev/null &
	elif [[ $which == floor ]]; then
		"$tmp/floorsim" -addr "127.0.0.1:$port" -ttft "$TTFT" -itl "$itl" -tick "$TICK" &
	else
		"$tmp/naivesim" -addr "127.0.0.1:$port" -ttft "$TTFT" -itl "$itl" &
	fi
	srv=$!
	for _ in $(seq 100); do
		if curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; then break; fi
		sleep 0.1
	done
	kill -0 "$srv" # the server must be ours and alive
	local load0 out
	load0=$(cut -d' ' -f1 /proc/loadavg)
	out=$("$tmp/simcap" -url "http://127.0.0.1:$port" -pid "$srv" -ttft "$TTFT" -itl "$itl" -tokens "$TOKENS" \
		-levels "$conc" -duration "$DURATION" -client "$CLIENT" -json)
	kill -INT "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	srv=""
	printf '{"server":"%s","itl":"%s","load0":%s,"load1":%s,"run":%s}\n' "$which" "$itl" "$load0" "$(cut -d' ' -f1 /proc/loadavg)" "$out"
}

echo "sim-compare: loads [$LOADS], $REPS rounds, $DURATION each, TTFT $TTFT, $TOKENS tokens, spate --tick $TICK $SIMARGS, $CLIENT client; $(nproc) CPUs, kernel $(uname -r)"
results="$tmp/results.jsonl"
for load in $LOADS; do
	conc=${load%%:*}
	itl=${load##*:}
	for rep in $(seq "$REPS"); do
		read -r -a servers <<<"$SERVERS"
		shift_by=$(((rep - 1) % ${#servers[@]}))
		order=("${servers[@]:shift_by}" "${servers[@]:0:shift_by}")
		for which in "${order[@]}"; do
			line=$(one "$which" "$conc" "$itl")
			echo "$line" >>"$results"
			python3 -c '
import json, sys
r = json.loads(sys.argv[1]); x = r["run"]
print("  %-5s c=%-5d itl=%-6s load %.2f-%.2f: %6d req, cpu/req %.3f ms (usr %.3f sys %.3f), ttft p50 %.3f p99 %.3f, itl p50 %.3f p99 %.3f, failed %d" % (
    r["server"], x["conc"], r["itl"], r["load0"], r["load1"], x["requests"], x["sim_cpu_ms"], x["sim_usr_ms"], x["sim_sys_ms"],
    x["ttft_p50_ms"], x["ttft_p99_ms"], x["itl_p50_ms"], x["itl_p99_ms"], x["failed"]))' "$line"
		done
	done
done

python3 - "$results" "$TTFT" "$SERVERS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
servers = sys.argv[3].split()
def ms(s):
    return float(s[:-2]) if s.endswith("ms") else float(s[:-1]) * 1000
ttft = ms(sys.argv[2])
print()
print("| streams | ITL | server | CPU/request, median (range) | TTFT p50 err | ITL p50 err (% of ITL) | ITL p99 | load avg | runs |")
print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
groups = {}
for r in rows:
    groups.setdefault((r["run"]["conc"], r["itl"]), {}).setdefault(r["server"], []).append(r)
for (conc, itl), by in groups.items():
    med = {}
    for srv in servers:
        rs = by.get(srv, [])
        if not rs:
            continue
        cpu = [r["run"]["sim_cpu_ms"] for r in rs]
        med[srv] = statistics.median(cpu)
        te = statistics.median(r["run"]["ttft_p50_ms"] - ttft for r in rs)
        ie = statistics.median(r["run"]["itl_p50_ms"] - ms(itl) for r in rs)
        i99 = statistics.median(r["run"]["itl_p99_ms"] for r in rs)
        loads = [r["load0"] for r in rs] + [r["load1"] for r in rs]
        print(f"| {conc} | {itl} | {srv} | {med[srv]:.3f} ms ({min(cpu):.3f}–{max(cpu):.3f}) | {te:+.3f} ms | {ie:+.3f} ms ({100*ie/ms(itl):+.2f} %) | {i99:.2f} ms | {min(loads):.1f}–{max(loads):.1f} | {len(rs)} |")
    for srv in servers:
        if srv != "naive" and "naive" in med and srv in med:
            print(f"| {conc} | {itl} | **ratio** | **{med[srv]/med['naive']:.2f}×** ({srv} / naive) | | | | | |")
PY

#!/usr/bin/env bash
# CPU time per streamed token of spate's client against a Python client
# (bench/asyncio_client.py; bench/aiohttp_client.py with PEER), all driving the same loopback
# simulator at the same load, one after the other. CPU comes from each
# client process's own rusage (user + system).
#
#   bench/stream-cpu.sh [RATE] [TOKENS] [SECONDS]          RATE req/s × TOKENS tokens (ITL 5 ms)
#   bench/stream-cpu.sh --streams N [TOKENS] [SECONDS]       N concurrent streams (ITL 50 ms; the
#                                                          rate that holds N in flight)
#
# SPATE_NETHTTP=1 makes spate read streams with net/http instead of its
# reactor (package internal/client/rawhttp), for comparison;
# SPATE_REACTOR_TICK sets the reactor's tick (e.g. -1ns: none).
# SERVER=writer serves the streams with bench/sseserver (a minimal paced
# writer) instead of the simulator. SPATE=path runs that spate binary
# instead of building this tree's (to compare two versions). PORT (default 18000) is the server's port.
#
# The issue's setting (issue 37) is set by environment variables:
#   TTFT_MS (default 20), ITL_MS (default 5, 50 with --streams),
#   INPUT_TOKENS (default 64: the prompt's length, both clients),
#   ARRIVAL (default constant; poisson: exponential gaps, both clients).
#   TTFT_MS=100 ITL_MS=20 INPUT_TOKENS=1024 ARRIVAL=poisson bench/stream-cpu.sh 100 128 10
# PEER picks the Python client(s): asyncio (default, bench/asyncio_client.py,
# standard library), aiohttp (bench/aiohttp_client.py, shaped like vLLM's
# benchmark client; needs /usr/bin/python3 with python3-aiohttp) or both
# (spate, then asyncio, then aiohttp).
set -euo pipefail
cd "$(dirname "$0")/.."
itl_ms=${ITL_MS:-5}
streams=
if [ "${1:-}" = "--streams" ]; then
  streams=$2; shift 2
  itl_ms=${ITL_MS:-50}
fi
ttft_ms=${TTFT_MS:-20}
input=${INPUT_TOKENS:-64}
arrival=${ARRIVAL:-constant}
if [ -n "$streams" ]; then
  tokens=${1:-128}; secs=${2:-20}
else
  tokens=${2:-128}; secs=${3:-20}
fi
if [ -n "$streams" ]; then
  rate=$(python3 -c "print(round($streams / (($ttft_ms + ($tokens - 1) * $itl_ms) / 1000), 2))")
else
  rate=${1:-100}
fi
ulimit -n 65536 2>/dev/null || true
out=bench/out
mkdir -p "$out"
spate=${SPATE:-$out/spate}
[ -n "${SPATE:-}" ] || go build -o "$out/spate" ./cmd/spate
addr=127.0.0.1:${PORT:-18000}
if [ "${SERVER:-sim}" = writer ]; then
  go build -o "$out/sseserver" ./bench/sseserver
  "$out/sseserver" -addr "$addr" -ttft "${ttft_ms}ms" -itl "${itl_ms}ms" -tokens "$tokens" & sim=$!
  health=stats
else
  "$spate" sim --addr "$addr" --ttft "${ttft_ms}ms" --itl "${itl_ms}ms" --output-tokens "$tokens" >/dev/null 2>&1 & sim=$!
  health=health
fi
trap 'kill $sim 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://$addr/$health" >/dev/null 2>&1 && break; sleep 0.1; done
kill -0 $sim 2>/dev/null || { echo "the simulator did not start (is $addr taken?)" >&2; exit 1; }
echo "load: $rate req/s ($arrival) × $input in / $tokens out tokens, TTFT $ttft_ms ms, ITL $itl_ms ms, ${secs} s${streams:+ ($streams concurrent streams)}, server ${SERVER:-sim}; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$spate" "$addr" "$rate" "$tokens" "$secs" "$input" "$arrival" "${PEER:-asyncio}" <<'PY'
import json, resource, subprocess, sys
spate, addr, rate, tokens, secs, input_tokens, arrival, peer = sys.argv[1:]
host, port = addr.split(":")

def child_cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode not in (0, 4):
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout

res = "bench/out/stream-cpu.json"
spate_cpu, _ = child_cpu([spate, "run", "--target", f"http://{addr}/v1", "--model", "spate-sim",
                          "--rate", rate, "--arrival", arrival, "--duration", f"{secs}s",
                          "--input-tokens", input_tokens, "--output-tokens", tokens, "--out", res, "--quiet"])
r = json.load(open(res))["scenarios"][0]
spate_tok = r["tokens"]["output"]
# Fixed start-up cost (loading the tokenizer, building the client), for reference.
fixed_cpu, _ = child_cpu([spate, "run", "--target", f"http://{addr}/v1", "--model", "spate-sim",
                          "--concurrency", "1", "--requests", "1", "--output-tokens", "1", "--out", "bench/out/fixed.json", "--quiet"])
s_us = spate_cpu / spate_tok * 1e6
late = 100 * (r["load"].get("late_events") or 0)
print(f"spate : {spate_tok} tokens, {spate_cpu:.2f} s CPU, {s_us:.2f} µs/token "
      f"(start-up {fixed_cpu:.2f} s; without it {(spate_cpu-fixed_cpu)/spate_tok*1e6:.2f} µs/token); "
      f"TTFT p50 {r['metrics']['ttft_ms']['p50']:.2f} ms, ITL p50 {r['metrics']['itl_ms']['p50']:.2f} ms, "
      f"late events {late:.2f} %, valid {r['load']['valid']}")
peers = {"asyncio": ["python3", "bench/asyncio_client.py"], "aiohttp": ["/usr/bin/python3", "bench/aiohttp_client.py"]}
for name in (["asyncio", "aiohttp"] if peer == "both" else [peer]):
    if name not in peers:
        sys.exit(f"PEER={peer}: want asyncio, aiohttp or both")
    py_cpu, py_out = child_cpu(peers[name] + [host, port, rate, secs, tokens, input_tokens, arrival])
    py = json.loads(py_out)
    p_us = py_cpu / py["tokens"] * 1e6
    print(f"{name}: {py['tokens']} tokens, {py_cpu:.2f} s CPU, {p_us:.2f} µs/token; "
          f"ITL p50 {py.get('itl_p50_ms', 0):.2f} ms, p99 {py.get('itl_p99_ms', 0):.2f} ms, "
          f"gaps under 1 ms {100 * py.get('gaps_under_1ms', 0):.2f} % (tokens read together, where it fell behind)")
    print(f"ratio : spate uses {s_us/p_us:.3f}× the CPU per token of the {name} client (issue 37's target: <= 0.20)")
PY

#!/usr/bin/env bash
# CPU time per streamed token of spate's client against a Python asyncio
# client (bench/asyncio_client.py), both driving the same loopback
# simulator at the same load: RATE req/s × TOKENS tokens for SECONDS.
# CPU comes from each client process's own rusage (user + system).
#
#   bench/stream-cpu.sh [RATE] [TOKENS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-100}
tokens=${2:-128}
secs=${3:-20}
out=bench/out
mkdir -p "$out"
go build -o "$out/spate" ./cmd/spate
addr=127.0.0.1:18000
"$out/spate" sim --addr "$addr" --ttft 20ms --itl 5ms --output-tokens "$tokens" >/dev/null 2>&1 & sim=$!
trap 'kill $sim 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://$addr/health" >/dev/null 2>&1 && break; sleep 0.1; done

python3 - "$out/spate" "$addr" "$rate" "$tokens" "$secs" <<'PY'
import json, resource, subprocess, sys
spate, addr, rate, tokens, secs = sys.argv[1:]
host, port = addr.split(":")

def child_cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), p.stdout

res = "bench/out/stream-cpu.json"
spate_cpu, _ = child_cpu([spate, "run", "--target", f"http://{addr}/v1", "--model", "spate-sim",
                          "--rate", rate, "--arrival", "constant", "--duration", f"{secs}s",
                          "--input-tokens", "64", "--output-tokens", tokens, "--out", res, "--quiet"])
r = json.load(open(res))["scenarios"][0]
spate_tok = r["tokens"]["output"]
# Fixed start-up cost (loading the tokenizer, building the client), for reference.
fixed_cpu, _ = child_cpu([spate, "run", "--target", f"http://{addr}/v1", "--model", "spate-sim",
                          "--concurrency", "1", "--requests", "1", "--output-tokens", "1", "--out", "bench/out/fixed.json", "--quiet"])
py_cpu, py_out = child_cpu(["python3", "bench/asyncio_client.py", host, port, rate, secs, tokens])
py = json.loads(py_out)
s_us = spate_cpu / spate_tok * 1e6
p_us = py_cpu / py["tokens"] * 1e6
print(f"spate : {spate_tok} tokens, {spate_cpu:.2f} s CPU, {s_us:.2f} µs/token "
      f"(start-up {fixed_cpu:.2f} s; without it {(spate_cpu-fixed_cpu)/spate_tok*1e6:.2f} µs/token); "
      f"TTFT p50 {r['metrics']['ttft_ms']['p50']:.2f} ms, ITL p50 {r['metrics']['itl_ms']['p50']:.2f} ms")
print(f"python: {py['tokens']} tokens, {py_cpu:.2f} s CPU, {p_us:.2f} µs/token")
print(f"ratio : spate uses {s_us/p_us:.3f}× the CPU per token of the asyncio client (target <= 0.10)")
PY

#!/usr/bin/env bash
# spate measured against the simulator's deterministic mode, whose timings
# are known: first token after TTFT, then one every ITL. Prints, for several
# numbers of concurrent streams, how far spate's medians and p99s are from
# the truth. This is where the 1 ms figures are shown (tests use wider,
# CI-proof tolerances).
#
# C concurrent streams are held in steady state by an open-loop constant
# rate of C / E2E requests per second (one warm-up E2E is left out), so that
# streams start spread out as real traffic does; a closed loop of C workers
# would instead start C requests in the same instant, every E2E.
#
#   [TTFT_MS=100 ITL_MS=20 TOKENS=64] bench/fidelity.sh [CONCURRENCY...]   (default: 10 100 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(10 100 1000)
ulimit -n 65536 2>/dev/null || true
out=bench/out
mkdir -p "$out"
go build -o "$out/spate" ./cmd/spate
addr=127.0.0.1:18100
ttft_ms=${TTFT_MS:-100}; itl_ms=${ITL_MS:-20}; tokens=${TOKENS:-64}
"$out/spate" sim --addr "$addr" --ttft "${ttft_ms}ms" --itl "${itl_ms}ms" --output-tokens "$tokens" >/dev/null 2>&1 & sim=$!
trap 'kill $sim 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://$addr/health" >/dev/null 2>&1 && break; sleep 0.1; done
echo "simulator: ttft ${ttft_ms} ms, itl ${itl_ms} ms, ${tokens} tokens (e2e $((ttft_ms + (tokens-1)*itl_ms)) ms)"
e2e_ms=$((ttft_ms + (tokens-1)*itl_ms))
for c in "${levels[@]}"; do
  rate=$(python3 -c "print($c / ($e2e_ms / 1000))")
  "$out/spate" run --target "http://$addr/v1" --model spate-sim --rate "$rate" --arrival constant \
    --warmup "${e2e_ms}ms" --duration "$((2 * e2e_ms))ms" \
    --input-tokens 32 --output-tokens "$tokens" --out "$out/fidelity-$c.json" --quiet
  python3 - "$out/fidelity-$c.json" "$c" "$ttft_ms" "$itl_ms" "$tokens" <<'PY'
import json, sys
path, c, ttft, itl, n = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
sc = json.load(open(path))["scenarios"][0]
m = sc["metrics"]
e2e = ttft + (n - 1) * itl
def row(name, key, truth):
    d = m[key]
    return f"{name} p50 {d['p50'] - truth:+.2f} ms, p99 {d['p99'] - truth:+.2f} ms"
print(f"{c:5d} streams, {sc['load']['target_rate']:.0f} req/s ({sc['requests']['succeeded']} ok, {sc['requests']['failed']} failed, lag p99 {sc['load']['schedule_lag_ms']['p99']:.2f} ms): " +
      "; ".join([row("TTFT", "ttft_ms", ttft), row("ITL", "itl_ms", itl), row("TPOT", "tpot_ms", itl), row("E2E", "e2e_ms", e2e)]))
PY
done

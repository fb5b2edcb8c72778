#!/usr/bin/env bash
# spate measured against a server whose timings are known: first token
# after TTFT, then one every ITL. Prints, for several numbers of concurrent
# streams, how far spate's medians and p99s are from the truth, with the
# generator's schedule lag and read lag and whether spate judged the stage
# valid. This is where the 1 ms figures are shown (tests use wider,
# CI-proof tolerances).
#
# The server is bench/sseserver, a minimal writer whose pacer threads keep
# time with nanosleep and write each frame with one write(2), so that it is
# not the bottleneck; it reports how late its own writes were ("server
# late"), which is part of what spate sees against the nominal timings. It
# also keeps when each request arrived and each event was written, and
# spate's records are joined with those by trace id: "vs server" is spate's
# error against what the server actually did (TTFT: spate's less the
# server's arrival-to-first-write, so request and response transit are in
# it; ITL: each gap less the server's gap between the two writes), which
# holds on a machine too busy for the server to keep time. SERVER=sim uses
# the simulator's deterministic mode instead (nominal figures only).
#
# C concurrent streams are held in steady state by an open-loop constant
# rate of C / E2E requests per second (one warm-up E2E is left out), so that
# streams start spread out as real traffic does; a closed loop of C workers
# would instead start C requests in the same instant, every E2E.
#
# SCHEME=https serves the writer over TLS (a self-signed certificate the
# run trusts through SSL_CERT_FILE): spate then reads through net/http and
# its stamped connections instead of the reactor.
#
#   [TTFT_MS=100 ITL_MS=20 TOKENS=64 SERVER=writer SCHEME=http] bench/fidelity.sh [CONCURRENCY...]   (default: 10 100 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
levels=("$@")
[ ${#levels[@]} -gt 0 ] || levels=(10 100 1000)
ulimit -n 65536 2>/dev/null || true
out=bench/out
mkdir -p "$out"
go build -o "$out/spate" ./cmd/spate
go build -o "$out/sseserver" ./bench/sseserver
addr=127.0.0.1:18100
ttft_ms=${TTFT_MS:-100}; itl_ms=${ITL_MS:-20}; tokens=${TOKENS:-64}
server=${SERVER:-writer}
scheme=${SCHEME:-http}
tlsflag=(); curlca=()
if [ "$scheme" = https ]; then
  [ "$server" = writer ] || { echo "SCHEME=https needs SERVER=writer" >&2; exit 2; }
  tlsflag=(-tls-cert "$out/sseserver.pem"); curlca=(--cacert "$out/sseserver.pem")
fi
e2e_ms=$((ttft_ms + (tokens-1)*itl_ms))
for c in "${levels[@]}"; do
  # A fresh server per level, so that its lateness figures are this level's.
  if [ "$server" = sim ]; then
    "$out/spate" sim --addr "$addr" --ttft "${ttft_ms}ms" --itl "${itl_ms}ms" --output-tokens "$tokens" >/dev/null 2>&1 & srv=$!
    health=health
  else
    "$out/sseserver" -addr "$addr" -ttft "${ttft_ms}ms" -itl "${itl_ms}ms" -tokens "$tokens" -truth "${tlsflag[@]}" & srv=$!
    health=stats
  fi
  trap 'kill $srv 2>/dev/null' EXIT
  for _ in $(seq 50); do curl -sf "${curlca[@]}" "$scheme://$addr/$health" >/dev/null 2>&1 && break; sleep 0.1; done
  load=$(cut -d' ' -f1 /proc/loadavg)
  rate=$(python3 -c "print($c / ($e2e_ms / 1000))")
  SSL_CERT_FILE=${tlsflag[1]:-} "$out/spate" run --target "$scheme://$addr/v1" --model spate-sim --rate "$rate" --arrival constant \
    --warmup "${e2e_ms}ms" --duration "$((2 * e2e_ms))ms" \
    --input-tokens 32 --output-tokens "$tokens" --out "$out/fidelity-$c.json" --records "$out/fidelity-$c.jsonl" --quiet || [ $? = 4 ]
  late="n/a"
  : > "$out/fidelity-$c.truth"
  if [ "$server" != sim ]; then
    curl -sf "${curlca[@]}" "$scheme://$addr/truth" > "$out/fidelity-$c.truth"
    late=$(curl -sf "${curlca[@]}" "$scheme://$addr/stats" | python3 -c 'import json,sys; s=json.load(sys.stdin); print("p50 %.2f ms, p99 %.2f ms" % (s["late_p50_us"]/1000, s["late_p99_us"]/1000))')
  fi
  kill $srv 2>/dev/null; wait $srv 2>/dev/null || true
  python3 - "$out/fidelity-$c.json" "$c" "$ttft_ms" "$itl_ms" "$tokens" "$late" "$load" "$out/fidelity-$c.jsonl" "$out/fidelity-$c.truth" <<'PY'
import json, sys
path, c, ttft, itl, n, late, load, recs, truthf = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9]
sc = json.load(open(path))["scenarios"][0]
m, l = sc["metrics"], sc["load"]
e2e = ttft + (n - 1) * itl
def row(name, key, truth):
    d = m[key]
    return f"{name} p50 {d['p50'] - truth:+.2f} ms, p99 {d['p99'] - truth:+.2f} ms"
rl = l.get("read_lag_ms") or {}
print(f"{c:5d} streams, {l['target_rate']:.0f} req/s, {c * 1000 / itl:.0f} events/s (loadavg {load}; {sc['requests']['succeeded']} ok, {sc['requests']['failed']} failed; "
      f"lag p99 {l['schedule_lag_ms']['p99']:.2f} ms, send delay p99 {l['send_delay_ms']['p99']:.2f} ms, late events {100 * (l.get('late_events') or 0):.2f} % (first tokens {100 * (l.get('late_first_tokens') or 0):.2f} %, gaps {100 * (l.get('late_gaps') or 0):.2f} %), read lag max/request p50 {rl.get('p50', float('nan')):.2f} ms; server late {late}; "
      f"valid {l['valid']}{' (' + l.get('invalid_cause', '') + ')' if not l['valid'] else ''}): " +
      "; ".join([row("TTFT", "ttft_ms", ttft), row("ITL", "itl_ms", itl), row("TPOT", "tpot_ms", itl), row("E2E", "e2e_ms", e2e)]))
truth = {}
for line in open(truthf):
    t = json.loads(line)
    if t["trace_id"] and len(t["writes_ns"]) == n:
        truth[t["trace_id"]] = t
if truth:
    def pct(v, p):
        v = sorted(v)
        return v[min(int(p / 100 * len(v)), len(v) - 1)] if v else float("nan")
    sp_ttft, sv_ttft, e_ttft, sp_itl, sv_itl, e_itl = [], [], [], [], [], []
    for line in open(recs):
        r = json.loads(line)
        t = truth.get(r.get("trace_id"))
        if r.get("warmup") or r.get("error") or t is None or len(r.get("itl_ms", [])) != n - 1:
            continue
        w = t["writes_ns"]
        s_ttft = (w[0] - t["arrived_ns"]) / 1e6
        sp_ttft.append(r["ttft_ms"]); sv_ttft.append(s_ttft); e_ttft.append(r["ttft_ms"] - s_ttft)
        for i, g in enumerate(r["itl_ms"]):
            sg = (w[i + 1] - w[i]) / 1e6
            sp_itl.append(g); sv_itl.append(sg); e_itl.append(g - sg)
    ok = lambda x: abs(x) <= 1.0
    dt50, dt99 = pct(sp_ttft, 50) - pct(sv_ttft, 50), pct(sp_ttft, 99) - pct(sv_ttft, 99)
    di50, di99 = pct(sp_itl, 50) - pct(sv_itl, 50), pct(sp_itl, 99) - pct(sv_itl, 99)
    verdict = "within 1 ms" if all(map(ok, [dt50, dt99, di50, di99])) else "NOT within 1 ms"
    print(f"       vs server ({len(sp_ttft)} requests, {len(sp_itl)} gaps): TTFT p50 {dt50:+.2f} ms, p99 {dt99:+.2f} ms "
          f"(per request: error p50 {pct(e_ttft, 50):+.2f}, p99 {pct(e_ttft, 99):+.2f} ms); ITL p50 {di50:+.2f} ms, p99 {di99:+.2f} ms "
          f"(per gap: error p1 {pct(e_itl, 1):+.2f}, p99 {pct(e_itl, 99):+.2f} ms): {verdict}")
PY
  [ -n "${KEEP:-}" ] || rm -f "$out/fidelity-$c.jsonl" "$out/fidelity-$c.truth"
done

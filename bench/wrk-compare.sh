#!/usr/bin/env bash
# Closed-loop plain-HTTP rate of spate (--api http --concurrency 64) against
# wrk's, side by side against the same loopback server, alternating runs so
# that both see the same machine. Prints each run and the median ratio.
#
#   bench/wrk-compare.sh [ROUNDS] [SECONDS]
#
# Needs wrk (apt-get install wrk); loopback only; stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 1; }
out=bench/out
mkdir -p "$out"
go build -o "$out/spate" ./cmd/spate
go build -o "$out/httpserver" ./bench/httpserver
addr=127.0.0.1:18080
"$out/httpserver" -addr "$addr" & srv=$!
trap 'kill $srv 2>/dev/null' EXIT
sleep 0.5
# Warm both up once.
wrk -t2 -c64 -d1s "http://$addr/" >/dev/null
wrk_rates=(); spate_rates=()
for i in $(seq "$rounds"); do
  w=$(wrk -t2 -c64 -d"${secs}s" "http://$addr/" | awk '/Requests\/sec/ {print $2}')
  s=$("$out/spate" run --api http --target "http://$addr" --concurrency 64 --duration "${secs}s" \
      --out "$out/wrk-compare.json" --quiet && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["scenarios"][0]["throughput"]["requests_per_s"])' "$out/wrk-compare.json")
  printf 'round %d: wrk %.0f req/s, spate %.0f req/s, ratio %.2f\n' "$i" "$w" "$s" "$(python3 -c "print($s/$w)")"
  wrk_rates+=("$w"); spate_rates+=("$s")
done
python3 - "${wrk_rates[@]}" -- "${spate_rates[@]}" <<'PY'
import statistics, sys
a = sys.argv[1:]
i = a.index("--")
w = [float(x) for x in a[:i]]
s = [float(x) for x in a[i+1:]]
print(f"median: wrk {statistics.median(w):.0f} req/s, spate {statistics.median(s):.0f} req/s, "
      f"ratio {statistics.median([b/a for a, b in zip(w, s)]):.2f} (target >= 0.70)")
PY

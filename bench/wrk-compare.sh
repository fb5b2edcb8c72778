#!/usr/bin/env bash
# Closed-loop plain-HTTP rate of spate (--api http --concurrency 64) against
# wrk's, side by side against the same loopback server, alternating runs so
# that both see the same machine. Prints each run, with each client's own
# CPU per request (user + system, from GNU time), and the median ratio: on
# a shared machine the client's CPU per request is what leaves the server
# room.
#
#   bench/wrk-compare.sh [ROUNDS] [SECONDS]
#
# SPATE_FASTHTTP=1 makes spate send with fasthttp instead of its reactor.
# SAME_REQUEST=1 makes wrk send the headers spate sends by default
# (User-Agent and a W3C traceparent, one fixed trace for wrk), so that the
# server parses the same request from both; by default wrk sends only Host.
# Needs wrk and GNU time (apt-get install -y wrk time); loopback only;
# stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
secs=${2:-5}
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "GNU time is not installed: apt-get install -y time" >&2; exit 1; }
out=bench/out
mkdir -p "$out"
go build -o "$out/spate" ./cmd/spate
go build -o "$out/httpserver" ./bench/httpserver
addr=127.0.0.1:18080
"$out/httpserver" -addr "$addr" & srv=$!
trap 'kill $srv 2>/dev/null' EXIT
sleep 0.5
echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
# Warm both up once.
wrk -t2 -c64 -d1s "http://$addr/" >/dev/null
wrk_args=()
if [ "${SAME_REQUEST:-0}" = 1 ]; then
  wrk_args=(-H "User-Agent: spate" -H "Traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
fi
wrk_rates=(); spate_rates=()
cpu() { awk '{print $1 + $2}' "$1"; }
for i in $(seq "$rounds"); do
  /usr/bin/time -f "%U %S" -o "$out/wrk.cpu" wrk -t2 -c64 -d"${secs}s" "${wrk_args[@]}" "http://$addr/" > "$out/wrk.txt"
  w=$(awk '/Requests\/sec/ {print $2}' "$out/wrk.txt")
  wn=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
  /usr/bin/time -f "%U %S" -o "$out/spate.cpu" "$out/spate" run --api http --target "http://$addr" --concurrency 64 --duration "${secs}s" \
      --out "$out/wrk-compare.json" --quiet
  read -r s sn < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["scenarios"][0]; print(s["throughput"]["requests_per_s"], s["requests"]["total"] + s["requests"]["warmup"])' "$out/wrk-compare.json")
  printf 'round %d: wrk %.0f req/s (%.1f µs CPU/request), spate %.0f req/s (%.1f µs CPU/request), ratio %.2f\n' "$i" "$w" \
    "$(python3 -c "print($(cpu "$out/wrk.cpu") / $wn * 1e6)")" "$s" "$(python3 -c "print($(cpu "$out/spate.cpu") / $sn * 1e6)")" "$(python3 -c "print($s/$w)")"
  wrk_rates+=("$w"); spate_rates+=("$s")
done
python3 - "${wrk_rates[@]}" -- "${spate_rates[@]}" <<'PY'
import statistics, sys
a = sys.argv[1:]
i = a.index("--")
w = [float(x) for x in a[:i]]
s = [float(x) for x in a[i+1:]]
print(f"median: wrk {statistics.median(w):.0f} req/s, spate {statistics.median(s):.0f} req/s, "
      f"ratio {statistics.median([b/a for a, b in zip(w, s)]):.2f} (issue 37: target >= 1.0, goal 1.2)")
PY

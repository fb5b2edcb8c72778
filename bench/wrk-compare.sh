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
# GOLOOP=1 also runs bench/goloop, the floor of a Go client, each round in
# two shapes with spate's per-request figure work (six clock reads, eleven
# histogram records): wrk's (two loops, each reading, recording and writing
# on its own thread) and spate's (one loop waking a goroutine a connection),
# and makes wrk send spate's request (SAME_REQUEST=1), as goloop does.
# GOLOOP_SHAPES picks goloop's shapes (default "wrk handoff"; also "coro",
# wrk's shape with each connection's work in a coroutine its loop resumes,
# and "coro1", the same with one loop).
# Each line also gives the server's CPU per request (from /proc).
# SAME_REQUEST=1 makes wrk send the headers spate sends by default
# (User-Agent and a W3C traceparent, one fixed trace for wrk), so that the
# server parses the same request from both; by default wrk sends only Host.
# PIN=1 gives the server and the clients a core each (taskset: the server
# on CPU 1, every client on CPU 0, wrk with one thread, goloop with one
# loop): the clients no longer share the server's cores, and a client that
# keeps up runs at the server's rate.
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
if [ "${GOLOOP:-0}" = 1 ]; then
  go build -o "$out/goloop" ./bench/goloop
  SAME_REQUEST=1
fi
addr=127.0.0.1:18080
srvpin=(); pin=(); wrk_threads=2; loops=2
if [ "${PIN:-0}" = 1 ]; then
  [ "$(nproc)" -ge 2 ] || { echo "PIN=1 needs two CPUs" >&2; exit 1; }
  srvpin=(taskset -c 1); pin=(taskset -c 0); wrk_threads=1; loops=1
fi
"${srvpin[@]}" "$out/httpserver" -addr "$addr" & srv=$!
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
shapes=${GOLOOP_SHAPES:-wrk handoff}
declare -A g_rates
cpu() { awk '{print $1 + $2}' "$1"; }
# The server's user + system CPU so far, in clock ticks.
srvcpu() { awk '{print $14 + $15}' "/proc/$srv/stat"; }
hz=$(getconf CLK_TCK)
# perreq TICKS N: CPU ticks per request, in µs.
perreq() { python3 -c "print(f'{$1 / $hz / $2 * 1e6:.1f}')"; }
for i in $(seq "$rounds"); do
  s0=$(srvcpu)
  /usr/bin/time -f "%U %S" -o "$out/wrk.cpu" "${pin[@]}" wrk -t"$wrk_threads" -c64 -d"${secs}s" "${wrk_args[@]}" "http://$addr/" > "$out/wrk.txt"
  w=$(awk '/Requests\/sec/ {print $2}' "$out/wrk.txt")
  wn=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
  s1=$(srvcpu)
  /usr/bin/time -f "%U %S" -o "$out/spate.cpu" "${pin[@]}" "$out/spate" run --api http --target "http://$addr" --concurrency 64 --duration "${secs}s" \
      --out "$out/wrk-compare.json" --quiet
  s2=$(srvcpu)
  read -r s sn < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["scenarios"][0]; print(s["throughput"]["requests_per_s"], s["requests"]["total"] + s["requests"]["warmup"])' "$out/wrk-compare.json")
  printf 'round %d: wrk %.0f req/s (%.1f µs CPU/request), spate %.0f req/s (%.1f µs CPU/request), ratio %.2f\n' "$i" "$w" \
    "$(python3 -c "print($(cpu "$out/wrk.cpu") / $wn * 1e6)")" "$s" "$(python3 -c "print($(cpu "$out/spate.cpu") / $sn * 1e6)")" "$(python3 -c "print($s/$w)")"
  echo "  server CPU/request: under wrk $(perreq $((s1 - s0)) "$wn") µs, under spate $(perreq $((s2 - s1)) "$sn") µs"
  wrk_rates+=("$w"); spate_rates+=("$s")
  if [ "${GOLOOP:-0}" = 1 ]; then
    for shape in $shapes; do
      args=(-figures 11 -clocks 6 -loops "$loops")
      case $shape in
        wrk) ;;
        handoff) args+=(-handoff) ;;
        coro) args+=(-coro) ;;
        coro1) args+=(-coro -loops 1) ;;
        *) echo "GOLOOP_SHAPES: unknown shape $shape (want wrk, handoff, coro or coro1)" >&2; exit 2 ;;
      esac
      g0=$(srvcpu)
      "${pin[@]}" "$out/goloop" -addr "$addr" -c 64 -d "${secs}s" "${args[@]}" > "$out/goloop.txt"
      g1=$(srvcpu)
      read -r gn gr gc < <(awk '{print $2, $6, $8}' "$out/goloop.txt")
      printf '  goloop, %s shape: %.0f req/s (%.1f µs CPU/request; server %s µs), ratio to wrk %.2f\n' "$shape" "$gr" "$gc" "$(perreq $((g1 - g0)) "$gn")" "$(python3 -c "print($gr/$w)")"
      g_rates[$shape]="${g_rates[$shape]:-} $gr"
    done
  fi
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
if [ "${GOLOOP:-0}" = 1 ]; then
  for shape in $shapes; do
    # shellcheck disable=SC2086
    python3 - "$shape" "${wrk_rates[@]}" -- ${g_rates[$shape]} <<'PY'
import statistics, sys
shape, a = sys.argv[1], sys.argv[2:]
i = a.index("--")
w, g = [float(x) for x in a[:i]], [float(x) for x in a[i+1:]]
print(f"median: goloop, {shape} shape: {statistics.median(g):.0f} req/s (ratio {statistics.median([b / a for a, b in zip(w, g)]):.2f})")
PY
  done
fi

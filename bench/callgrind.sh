#!/usr/bin/env bash
# User-space instructions per plain-HTTP request, spate's (and with WRK=1
# wrk's), counted by callgrind: unlike wall-clock rates, the count does not
# depend on what else runs on the machine, so a change's effect shows even
# on a loaded one.
#
#   bench/callgrind.sh [N1] [N2]
#
# Runs spate (closed loop of 64, --api http, against bench/httpserver) under
# callgrind for N1 and N2 requests (default 20000 and 40000) and prints
# (Ir(N2) - Ir(N1)) / (N2 - N1): start-up cancels out. valgrind runs one
# thread at a time; --fair-sched=yes hands the turn round in order, without
# which an idle runtime's spinning threads add tens of percent, differently
# from run to run. The callgrind files
# stay in bench/out (callgrind.spate.N) for callgrind_annotate. WRK=1 also
# counts wrk (-t1 -c64, 3 s and 6 s) the same way, per request it made.
# GOLOOP=1 also counts bench/goloop (-figures 11 -clocks 6: spate's figure
# work) in wrk's shape and in spate's (-handoff), 3 s and 6 s each, per
# request it made (see bench/wrk-compare.sh).
# SPATE=path counts that spate binary instead of building this tree's
# (built with CGO_ENABLED=0), to compare two versions.
# Needs valgrind (apt-get install -y valgrind); loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
n1=${1:-20000}
n2=${2:-40000}
command -v valgrind >/dev/null || { echo "valgrind is not installed: apt-get install -y valgrind" >&2; exit 1; }
out=bench/out
mkdir -p "$out"
# Without cgo and asynchronous preemption callgrind runs the Go runtime
# without tripping on its signals.
spate=${SPATE:-$out/spate}
[ -n "${SPATE:-}" ] || CGO_ENABLED=0 go build -o "$out/spate" ./cmd/spate
go build -o "$out/httpserver" ./bench/httpserver
addr=127.0.0.1:${PORT:-18091}
"$out/httpserver" -addr "$addr" & srv=$!
trap 'kill $srv 2>/dev/null' EXIT
sleep 0.5
kill -0 $srv 2>/dev/null || { echo "bench/httpserver did not start on $addr (PORT=... picks another port)" >&2; exit 1; }
irs() { awk '/^summary:|^totals:/ {print $2; exit}' "$1"; }
count() {
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$out/callgrind.spate.$1" \
    "$spate" run --api http --target "http://$addr" --concurrency 64 --requests "$1" \
    --out "$out/callgrind.json" --quiet 2>"$out/callgrind.log"
  irs "$out/callgrind.spate.$1"
}
a=$(count "$n1")
b=$(count "$n2")
echo "spate: $n1 requests $a Ir, $n2 requests $b Ir => $(( (b - a) / (n2 - n1) )) instructions per request"
if [ "${WRK:-0}" = 1 ]; then
  command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 1; }
  wrkcount() {
    valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$out/callgrind.wrk.$1" wrk -t1 -c64 -d"$1" "http://$addr/" \
      >"$out/callgrind.wrk.$1.txt" 2>>"$out/callgrind.log"
    echo "$(awk '/requests in/ {print $1}' "$out/callgrind.wrk.$1.txt") $(irs "$out/callgrind.wrk.$1")"
  }
  read -r wa ia < <(wrkcount 3s)
  read -r wb ib < <(wrkcount 6s)
  echo "wrk: $wa requests $ia Ir, $wb requests $ib Ir => $(( (ib - ia) / (wb - wa) )) instructions per request"
fi
if [ "${GOLOOP:-0}" = 1 ]; then
  go build -o "$out/goloop" ./bench/goloop
  gocount() { # shape-name duration args...
    local name=$1 d=$2; shift 2
    GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$out/callgrind.goloop-$name.$d" \
      "$out/goloop" -addr "$addr" -d "$d" -figures 11 -clocks 6 "$@" >"$out/callgrind.goloop.txt" 2>>"$out/callgrind.log"
    echo "$(awk '{print $2}' "$out/callgrind.goloop.txt") $(irs "$out/callgrind.goloop-$name.$d")"
  }
  for shape in wrk handoff; do
    args=()
    [ "$shape" = handoff ] && args=(-handoff)
    read -r ga ia < <(gocount "$shape" 3s "${args[@]}")
    read -r gb ib < <(gocount "$shape" 6s "${args[@]}")
    echo "goloop, $shape shape: $ga requests $ia Ir, $gb requests $ib Ir => $(( (ib - ia) / (gb - ga) )) instructions per request"
  done
fi

#!/usr/bin/env bash
# System calls and context switches per plain-HTTP request, spate's and
# wrk's, counted by perf against the same loopback server (closed loop of
# 64, one run each): unlike a rate, a count per request barely moves with
# what else runs on the machine. With bench/callgrind.sh (user-space
# instructions per request) it says where a client's cost per request
# goes.
#
#   bench/syscalls.sh [SECONDS]
#
# GOLOOP=1 also counts bench/goloop (the floor of a Go client, with
# spate's per-request figure work) in wrk's shape and in spate's
# (-handoff); see bench/wrk-compare.sh.
# Needs perf with the syscalls tracepoints (root, or perf_event_paranoid
# at most 1) and wrk (apt-get install -y linux-perf wrk); loopback only;
# stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
command -v perf >/dev/null || { echo "perf is not installed: apt-get install -y linux-perf" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install -y wrk" >&2; exit 1; }
out=bench/out
mkdir -p "$out"
go build -o "$out/spate" ./cmd/spate
go build -o "$out/httpserver" ./bench/httpserver
addr=127.0.0.1:${PORT:-18092}
"$out/httpserver" -addr "$addr" & srv=$!
trap 'kill $srv 2>/dev/null' EXIT
sleep 0.5
kill -0 $srv 2>/dev/null || { echo "bench/httpserver did not start on $addr (PORT=... picks another port)" >&2; exit 1; }
events=(-e 'syscalls:sys_enter_*' -e context-switches -e task-clock)
echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
perf stat "${events[@]}" -o "$out/syscalls.spate" -- "$out/spate" run --api http --target "http://$addr" \
  --concurrency 64 --duration "${secs}s" --out "$out/syscalls.json" --quiet
sn=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["scenarios"][0]; print(s["requests"]["total"] + s["requests"]["warmup"])' "$out/syscalls.json")
perf stat "${events[@]}" -o "$out/syscalls.wrk" -- wrk -t2 -c64 -d"${secs}s" "http://$addr/" > "$out/syscalls.wrk.txt"
wn=$(awk '/requests in/ {print $1}' "$out/syscalls.wrk.txt")
runs=("$out/syscalls.spate" "$sn" "$out/syscalls.wrk" "$wn")
if [ "${GOLOOP:-0}" = 1 ]; then
  go build -o "$out/goloop" ./bench/goloop
  for shape in wrk handoff; do
    args=(-figures 11 -clocks 6)
    [ "$shape" = handoff ] && args+=(-handoff)
    perf stat "${events[@]}" -o "$out/syscalls.goloop-$shape" -- "$out/goloop" -addr "$addr" -d "${secs}s" "${args[@]}" > "$out/syscalls.goloop.txt"
    runs+=("$out/syscalls.goloop-$shape" "$(awk '{print $2}' "$out/syscalls.goloop.txt")")
  done
fi
python3 - "${runs[@]}" <<'PY'
import re, sys
def read(path):
    counts, user, sys_ = {}, 0.0, 0.0
    for line in open(path):
        m = re.match(r"\s*([\d,.]+)\s+(?:msec\s+)?(\S+)", line)
        if m and not line.strip().startswith("#"):
            try:
                counts[m.group(2)] = float(m.group(1).replace(",", ""))
            except ValueError:
                pass
        m = re.match(r"\s*([\d.]+) seconds (user|sys)", line)
        if m:
            if m.group(2) == "user":
                user = float(m.group(1))
            else:
                sys_ = float(m.group(1))
    return counts, user, sys_
for path, n in zip(sys.argv[1::2], sys.argv[2::2]):
    n = float(n)
    counts, user, sys_ = read(path)
    name = path.rsplit("syscalls.", 1)[1]
    calls = {k.split("sys_enter_")[1]: v / n for k, v in counts.items() if "sys_enter_" in k and v > 0}
    total = sum(calls.values())
    top = ", ".join(f"{k} {v:.3f}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v >= 0.01)
    print(f"{name}: {n:.0f} requests; per request: {total:.2f} system calls ({top}); "
          f"{counts.get('context-switches', 0) / n:.3f} context switches; "
          f"CPU {user / n * 1e6:.1f} us user + {sys_ / n * 1e6:.1f} us system (traced: each system call costs more)")
PY

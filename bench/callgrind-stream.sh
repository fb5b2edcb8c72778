#!/usr/bin/env bash
# User-space instructions per streamed token of spate's client, counted by
# callgrind (the method of bench/callgrind.sh, for streams): unlike CPU
# time, the count hardly depends on what else runs on the machine.
#
#   bench/callgrind-stream.sh [N1] [N2]
#
# Runs `spate sim` (natively) and spate's client under callgrind against
# it: a closed loop of CONC (default 32) streams, 1024 input and 128 output
# tokens, TTFT 100 ms and ITL 20 ms (issue 37's setting; TTFT_MS, ITL_MS,
# INPUT_TOKENS and CONC change it), for N1 and N2 requests (default 64
# and 192), and prints (Ir(N2) - Ir(N1)) / (tokens(N2) - tokens(N1)):
# start-up cancels out, per-request work is spread over its tokens. At 32
# streams of 50 tokens a second the client under callgrind keeps up (each
# read holds one event, as outside it); callgrind.stream.log says the
# run's late events. --fair-sched=yes hands the one thread valgrind runs
# at a time round in order. The callgrind files stay in bench/out
# (callgrind.stream.N) for callgrind_annotate. SPATE=path counts that
# spate binary instead of building this tree's (CGO_ENABLED=0), to compare
# two versions. Needs valgrind (apt-get install -y valgrind); loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
n1=${1:-64}
n2=${2:-192}
conc=${CONC:-32}
ttft_ms=${TTFT_MS:-100}
itl_ms=${ITL_MS:-20}
input=${INPUT_TOKENS:-1024}
command -v valgrind >/dev/null || { echo "valgrind is not installed: apt-get install -y valgrind" >&2; exit 1; }
out=bench/out
mkdir -p "$out"
spate=${SPATE:-$out/spate-cg}
[ -n "${SPATE:-}" ] || CGO_ENABLED=0 go build -o "$out/spate-cg" ./cmd/spate
go build -o "$out/spate-sim" ./cmd/spate
addr=127.0.0.1:${PORT:-18092}
"$out/spate-sim" sim --addr "$addr" --ttft "${ttft_ms}ms" --itl "${itl_ms}ms" --output-tokens 128 >/dev/null 2>&1 & sim=$!
trap 'kill $sim 2>/dev/null' EXIT
for _ in $(seq 50); do curl -sf "http://$addr/health" >/dev/null 2>&1 && break; sleep 0.1; done
kill -0 $sim 2>/dev/null || { echo "the simulator did not start on $addr (PORT=... picks another port)" >&2; exit 1; }
echo "load: closed loop of $conc streams, $input in / 128 out tokens, TTFT $ttft_ms ms, ITL $itl_ms ms; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
irs() { awk '/^summary:|^totals:/ {print $2; exit}' "$1"; }
count() {
  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$out/callgrind.stream.$1" \
    "$spate" run --target "http://$addr/v1" --model spate-sim --concurrency "$conc" --requests "$1" \
    --input-tokens "$input" --output-tokens 128 --out "$out/callgrind.stream.$1.json" --quiet 2>>"$out/callgrind.stream.log"
  python3 - "$out/callgrind.stream.$1.json" "$(irs "$out/callgrind.stream.$1")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["scenarios"][0]
print(sys.argv[2], r["tokens"]["output"], r["load"].get("late_events") or 0, r["load"]["valid"])
PY
}
read -r a ta la va < <(count "$n1")
read -r b tb lb vb < <(count "$n2")
echo "spate: $n1 requests $a Ir $ta tokens (late events $la, valid $va), $n2 requests $b Ir $tb tokens (late events $lb, valid $vb)"
echo "=> $(( (b - a) / (tb - ta) )) instructions per token"
# Where they go: each function's own instructions, difference of the two
# runs per token, by package; the garbage collector's marking and sweeping
# apart, as the count of collections between the two runs varies by one
# or two (each marks the tokenizer's tables), which moves the total by
# up to 2,700 instructions per token; the histograms' summaries apart too
# (per second of the run, which callgrind stretches).
for n in "$n1" "$n2"; do
  callgrind_annotate --auto=no --threshold=100 "$out/callgrind.stream.$n" | grep -v '=>' >"$out/callgrind.stream.$n.txt"
done
python3 - "$out/callgrind.stream.$n1.txt" "$out/callgrind.stream.$n2.txt" "$((tb - ta))" <<'PY'
import collections, re, sys
gc = re.compile(r"^runtime\.(\(\*(gcWork|spanSet|mspan|sweepLocked|gcBits)\)\.|scan|markroot|greyobject|findObject|tryDeferToSpanScan|"
                r"typePointers|gcmarknewobject|gcDrain|wbBuf|extractHeapBits|spanSetScans|sweep|bgsweep|spanOf|heapBits|pageIndexOf|gcBgMarkWorker|gcMark)")
# The per-second and final summaries iterate the histograms: their count
# follows the run's seconds under callgrind, not its tokens.
summary = re.compile(r"^github.com/HdrHistogram/hdrhistogram-go\.(\(\*iterator\)|\(\*Histogram\)\.(Mean|StdDev|Max|Min|"
                     r"ValueAtQuantile|nextNonEquivalentValue|getValueFromIdxUpToCount|medianEquivalentValue|"
                     r"sizeOfEquivalentValueRange|lowestEquivalentValue|highestEquivalentValue|fillBufferFromCountsArray|Export|Merge|pIterator))")
def load(path):
    d = collections.Counter()
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)", line)
        if not m or m.group(2).startswith("PROGRAM"):
            continue
        fn = m.group(2).split(" [")[0]
        fn = re.sub(r"'\d+", "", fn.split(":", 1)[-1])
        d[fn] += int(m.group(1).replace(",", ""))
    return d
a, b, tokens = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3])
pkgs = collections.Counter()
for fn in set(a) | set(b):
    per = (b[fn] - a[fn]) / tokens
    if gc.match(fn):
        pkgs["(GC marking and sweeping)"] += per
    elif summary.match(fn):
        pkgs["(histogram summaries)"] += per
    else:
        pkgs[re.sub(r"\.[^./]*$", "", re.sub(r"[.\[]\(.*|\[.*", "", fn))] += per
gcper, sumper = pkgs["(GC marking and sweeping)"], pkgs["(histogram summaries)"]
print(f"=> {sum(pkgs.values()) - gcper - sumper:.0f} per token without the GC's marking and sweeping ({gcper:.0f}) "
      f"and the histograms' summaries ({sumper:.0f})")
print("per token, by package:", ", ".join(f"{k} {v:.0f}" for k, v in pkgs.most_common(14)))
PY

#!/usr/bin/env bash
# Memory of long runs: spate's peak RSS (from /usr/bin/time -v) after
# PLAIN plain-HTTP requests (closed loop of 64 against bench/httpserver)
# and after STREAMED streamed requests (closed loop of 64 against
# bench/sseserver, 4 tokens each, with --records to a file), to show that
# memory does not grow with the number of requests.
#
#   [PLAIN=10000000 STREAMED=1000000] bench/mem.sh
#
# Needs GNU time (apt-get install -y time); loopback only; stops by itself.
# The records file (about 350 bytes a request) goes to bench/out. Memory is
# the subject: a run spate judges untrustworthy (exit 4: 64 streams of 1 ms
# ITL can be more than two shared cores read on time) still counts.
set -euo pipefail
cd "$(dirname "$0")/.."
plain=${PLAIN:-10000000}
streamed=${STREAMED:-1000000}
[ -x /usr/bin/time ] || { echo "GNU time is not installed: apt-get install -y time" >&2; exit 1; }
out=bench/out
mkdir -p "$out"
go build -o "$out/spate" ./cmd/spate
go build -o "$out/httpserver" ./bench/httpserver
go build -o "$out/sseserver" ./bench/sseserver
"$out/httpserver" -addr 127.0.0.1:18090 & hs=$!
"$out/sseserver" -addr 127.0.0.1:18091 -ttft 1ms -itl 1ms -tokens 4 & ss=$!
trap 'kill $hs $ss 2>/dev/null' EXIT
sleep 0.5
peak() { grep -E "Maximum resident" "$1" | awk '{printf "%.1f MB", $6/1024}'; }
echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/time -v "$out/spate" run --api http --target http://127.0.0.1:18090 --concurrency 64 \
  --requests "$plain" --out "$out/mem-plain.json" --quiet 2> "$out/mem-plain.time" || [ $? = 4 ]
echo "plain HTTP: $plain requests, peak RSS $(peak "$out/mem-plain.time"), $(grep Elapsed "$out/mem-plain.time" | awk '{print $NF}') wall"
/usr/bin/time -v "$out/spate" run --target http://127.0.0.1:18091/v1 --model m --concurrency 64 \
  --requests "$streamed" --output-tokens 4 --records "$out/mem-records.jsonl" --out "$out/mem-stream.json" --quiet 2> "$out/mem-stream.time" || [ $? = 4 ]
echo "streamed: $streamed requests with --records ($(du -m "$out/mem-records.jsonl" | cut -f1) MB of records), peak RSS $(peak "$out/mem-stream.time"), $(grep Elapsed "$out/mem-stream.time" | awk '{print $NF}') wall"
rm -f "$out/mem-records.jsonl"

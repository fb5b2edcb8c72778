#!/usr/bin/env python3
"""Reference streaming client for bench/stream-cpu.sh: the way a typical
Python benchmark (vLLM's bench serve, GuideLLM) drives an OpenAI server —
asyncio, one task per request, SSE lines parsed and each event's JSON
decoded. Standard library only (aiohttp is not installable here), with a
raw HTTP/1.1 keep-alive connection pool, which is cheaper than aiohttp.

Usage: asyncio_client.py HOST PORT RATE DURATION_S OUTPUT_TOKENS [INPUT_TOKENS [ARRIVAL]]
INPUT_TOKENS (default 64) is the prompt's length in words ("hello "
repeated); ARRIVAL is constant (default) or poisson (exponential gaps of
mean 1/RATE, seeded, so every run sends at the same times).
Prints one JSON line: requests, tokens, cpu_s (this process's rusage), and
how promptly it read: the median and p99 of the gaps it saw between a
stream's tokens and the share of gaps under 1 ms (tokens read together
because the client fell behind, which also makes each token cheaper).
"""
import asyncio
import json
import random
import resource
import sys
import time


class Pool:
    def __init__(self, host, port):
        self.host, self.port, self.idle = host, port, []

    async def get(self):
        if self.idle:
            return self.idle.pop()
        return await asyncio.open_connection(self.host, self.port)

    def put(self, conn):
        self.idle.append(conn)


async def one(pool, host, max_tokens, input_tokens, stats):
    body = json.dumps({
        "model": "spate-sim", "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "hello " * input_tokens}],
    }).encode()
    reader, writer = await pool.get()
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + host.encode() +
                 b"\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " +
                 str(len(body)).encode() + b"\r\n\r\n" + body)
    await writer.drain()
    # Headers.
    chunked = False
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower():
            chunked = True
    first = None
    tokens = 0
    buf = b""
    done = False
    while not done:
        if chunked:
            size_line = await reader.readline()
            size = int(size_line.strip(), 16)
            if size == 0:
                await reader.readline()
                break
            data = await reader.readexactly(size + 2)
            buf += data[:-2]
        else:
            data = await reader.read(65536)
            if not data:
                break
            buf += data
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    done = True
                    break
                obj = json.loads(payload)
                for ch in obj.get("choices") or []:
                    if (ch.get("delta") or {}).get("content"):
                        now = time.perf_counter()
                        if first is None:
                            first = now
                        else:
                            stats["gaps"].append(now - last)
                        last = now
                        tokens += 1
    if done and chunked:
        # Drain the terminating chunk so the connection can be reused.
        while True:
            size_line = await reader.readline()
            if not size_line or int(size_line.strip() or b"0", 16) == 0:
                await reader.readline()
                break
            await reader.readexactly(int(size_line.strip(), 16) + 2)
    pool.put((reader, writer))
    stats["requests"] += 1
    stats["tokens"] += tokens


async def main():
    host, port, rate, duration, max_tokens = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    input_tokens = int(sys.argv[6]) if len(sys.argv) > 6 else 64
    arrival = sys.argv[7] if len(sys.argv) > 7 else "constant"
    if arrival not in ("constant", "poisson"):
        sys.exit(f"asyncio_client.py: arrival {arrival!r}: want constant or poisson")
    rng = random.Random(1)
    pool = Pool(host, port)
    stats = {"requests": 0, "tokens": 0, "gaps": []}
    tasks = []
    start = time.perf_counter()
    n = 0
    at = start
    while True:
        if n > 0:
            at += rng.expovariate(rate) if arrival == "poisson" else 1 / rate
        if at - start >= duration:
            break
        delay = at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(pool, host, max_tokens, input_tokens, stats)))
        n += 1
    await asyncio.gather(*tasks)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    stats["cpu_s"] = ru.ru_utime + ru.ru_stime
    stats["wall_s"] = time.perf_counter() - start
    gaps = sorted(stats.pop("gaps"))
    if gaps:
        stats["itl_p50_ms"] = 1000 * gaps[len(gaps) // 2]
        stats["itl_p99_ms"] = 1000 * gaps[min(len(gaps) - 1, len(gaps) * 99 // 100)]
        stats["gaps_under_1ms"] = sum(g < 0.001 for g in gaps) / len(gaps)
    print(json.dumps(stats))


asyncio.run(main())

#!/usr/bin/python3
"""Streaming client for bench/stream-cpu.sh shaped like vLLM's benchmark
client (which cannot be installed here): aiohttp, one ClientSession, one
task per request, the body sent with json=, the response read line by
line from response.content, each "data: " line's JSON decoded with
json.loads and each content delta stamped with time.perf_counter(). Our
own code, written for this bench. It runs with the system Python, where
aiohttp comes from Debian (apt-get install -y python3-aiohttp).

The connector has no connection limit (aiohttp's default is 100, fewer
than the streams in flight at 100 req/s of 2.6 s each): the client must
keep up with the load for its cost to compare.

Usage: aiohttp_client.py HOST PORT RATE DURATION_S OUTPUT_TOKENS [INPUT_TOKENS [ARRIVAL]]
as bench/asyncio_client.py, with the same JSON line on output.
"""
import asyncio
import json
import random
import resource
import sys
import time

import aiohttp


async def one(session, url, max_tokens, input_tokens, stats):
    payload = {
        "model": "spate-sim", "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "hello " * input_tokens}],
    }
    tokens = 0
    last = None
    async with session.post(url, json=payload) as resp:
        if resp.status != 200:
            stats["errors"] += 1
            return
        async for line in resp.content:
            line = line.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            obj = json.loads(data)
            choices = obj.get("choices")
            if choices and choices[0].get("delta", {}).get("content"):
                now = time.perf_counter()
                if last is not None:
                    stats["gaps"].append(now - last)
                last = now
                tokens += 1
    stats["requests"] += 1
    stats["tokens"] += tokens


async def main():
    host, port, rate, duration, max_tokens = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    input_tokens = int(sys.argv[6]) if len(sys.argv) > 6 else 64
    arrival = sys.argv[7] if len(sys.argv) > 7 else "constant"
    if arrival not in ("constant", "poisson"):
        sys.exit(f"aiohttp_client.py: arrival {arrival!r}: want constant or poisson")
    rng = random.Random(1)
    url = f"http://{host}:{port}/v1/chat/completions"
    stats = {"requests": 0, "tokens": 0, "errors": 0, "gaps": []}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=600)) as session:
        tasks = []
        start = time.perf_counter()
        at, n = start, 0
        while True:
            if n > 0:
                at += rng.expovariate(rate) if arrival == "poisson" else 1 / rate
            if at - start >= duration:
                break
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(session, url, max_tokens, input_tokens, stats)))
            n += 1
        await asyncio.gather(*tasks)
        stats["wall_s"] = time.perf_counter() - start
    ru = resource.getrusage(resource.RUSAGE_SELF)
    stats["cpu_s"] = ru.ru_utime + ru.ru_stime
    gaps = sorted(stats.pop("gaps"))
    if gaps:
        stats["itl_p50_ms"] = 1000 * gaps[len(gaps) // 2]
        stats["itl_p99_ms"] = 1000 * gaps[min(len(gaps) - 1, len(gaps) * 99 // 100)]
        stats["gaps_under_1ms"] = sum(g < 0.001 for g in gaps) / len(gaps)
    print(json.dumps(stats))


asyncio.run(main())

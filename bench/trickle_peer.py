#!/usr/bin/python3
"""The Python peer for bench.py trickle: a streaming client built the way vLLM's benchmark client is (aiohttp, one
coroutine per request, every SSE line decoded, parsed with json and timestamped as it arrives). Run with Debian's
python3 and python3-aiohttp:

    /usr/bin/python3 bench/trickle_peer.py URL STREAMS TOKENS

Sends STREAMS streamed chat requests at once, each asking for TOKENS tokens, and prints one JSON line: the content
tokens received, the requests that finished, and the CPU seconds of the load phase (from before the first request to
after the last answer, this process)."""

import asyncio
import json
import resource
import sys
import time

import aiohttp


def cpu_s():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


async def one(session, url, tokens):
    body = {"model": "bench", "messages": [{"role": "user", "content": "hi"}], "max_tokens": tokens, "stream": True}
    stamps = []
    async with session.post(url, json=body) as r:
        if r.status != 200:
            return 0, False
        async for line in r.content:
            line = line.strip()
            if not line:
                continue
            data = line.decode("utf-8").removeprefix("data: ")
            if data == "[DONE]":
                continue
            t = time.perf_counter()
            choices = json.loads(data).get("choices") or [{}]
            if choices[0].get("delta", {}).get("content"):
                stamps.append(t)
    return len(stamps), True


async def main(url, streams, tokens):
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=900)) as session:
        c0, w0 = cpu_s(), time.monotonic()
        res = await asyncio.gather(*(one(session, url, tokens) for _ in range(streams)))
        c1, w1 = cpu_s(), time.monotonic()
    print(json.dumps({"tokens": sum(r[0] for r in res), "finished": sum(1 for r in res if r[1]),
                      "cpu_s": c1 - c0, "wall_s": w1 - w0}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: trickle_peer.py URL STREAMS TOKENS")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))

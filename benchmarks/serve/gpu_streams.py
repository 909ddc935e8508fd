#!/usr/bin/env python3
"""Many concurrent streaming clients for dv-serve (asyncio, standard library
only, spread over PROCS processes): C connections, each posting the same
speech request (streamed PCM, a fresh seed each time) back to back for D
seconds. Per response: time to first audio (the first body bytes after the
headers), audio seconds, seconds from the first audio to the last, and the
worst underrun (how far, from the first byte on, a chunk arrived after the
audio before it would have finished playing). A stream is real-time when it
ran at least at 1x from its first byte (audio_s / stream_s >= 1) with no
underrun over SLACK seconds (a client's playback buffer). Prints one JSON
line: the level's counts, real-time fraction, TTFA and per-stream speed
percentiles.

Clients join over RAMP seconds (the environment's RAMP, default 1): with a
ramp as long as a request, the closed loop's clients are out of step, as a
service's users are, and `ttfa_steady_*` gives the time to first audio of
the requests sent after the ramp (no opening burst in it).

usage: gpu_streams.py URL CONCURRENCY SECONDS TEXT [PROCS] [SLACK]
"""
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from urllib.parse import urlparse


async def one(host, port, body):
    t0 = time.perf_counter()
    r, w = await asyncio.open_connection(host, port)
    req = (
        f"POST /v1/audio/speech HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    w.write(req)
    await w.drain()
    head = await r.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if status != 200:
        w.close()
        return {"status": status}
    rate = 16384
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"x-sample-rate:"):
            rate = int(line.split(b":")[1])
    chunked = b"transfer-encoding: chunked" in head.lower()
    first, got, worst = None, 0, 0.0
    while True:
        if chunked:
            size_line = await r.readline()
            size = int(size_line.strip() or b"0", 16)
            if size == 0:
                break
            data = await r.readexactly(size + 2)
            n = size
        else:
            data = await r.read(65536)
            if not data:
                break
            n = len(data)
        now = time.perf_counter()
        if first is None:
            first = now
        else:
            worst = max(worst, (now - first) - got / 2 / rate)
        got += n
    end = time.perf_counter()
    w.close()
    if first is None:
        return {"status": "empty"}
    return {"status": 200, "ttfa": first - t0, "audio": got / 2 / rate, "stream": end - first, "lag": worst}


async def client(host, port, text, start, deadline, seed0, out):
    k = 0
    while time.perf_counter() < deadline:
        body = json.dumps({"model": "tts-1", "input": text, "response_format": "pcm", "seed": seed0 + k}).encode()
        k += 1
        t = time.perf_counter() - start
        try:
            r = await one(host, port, body)
        except Exception as e:  # a reset or a protocol error counts as a failure
            r = {"status": "error", "error": repr(e)[:200]}
        r["t"] = t
        out.append(r)


def proc(args):
    url, conc, seconds, text, index = args
    u = urlparse(url)
    out = []

    async def main():
        start = time.perf_counter()
        deadline = start + seconds
        # Clients join over RAMP seconds (default the first one), not in one burst.
        tasks = []
        for c in range(conc):
            seed0 = (index * 100000 + c) * 1000
            tasks.append(asyncio.create_task(client(u.hostname, u.port, text, start, deadline, seed0, out)))
            await asyncio.sleep(RAMP / max(conc, 1))
        # The ramp as it ended here (a busy loop oversleeps): requests sent after it are steady.
        ramp_end = time.perf_counter() - start
        await asyncio.gather(*tasks)
        for r in out:
            r["steady"] = r["t"] >= max(RAMP, ramp_end)

    asyncio.run(main())
    return out


RAMP = float(os.environ.get("RAMP", "1"))


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))]


if __name__ == "__main__":
    url, conc, seconds, text = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    procs = int(sys.argv[5]) if len(sys.argv) > 5 else min(8, max(1, conc // 64))
    slack = float(sys.argv[6]) if len(sys.argv) > 6 else 0.3
    procs = max(1, min(procs, conc))
    shares = [conc // procs + (1 if i < conc % procs else 0) for i in range(procs)]
    with mp.Pool(procs) as pool:
        parts = pool.map(proc, [(url, s, seconds, text, i) for i, s in enumerate(shares)])
    res = [r for p in parts for r in p]
    ok = [r for r in res if r["status"] == 200]
    statuses = {}
    for r in res:
        statuses[str(r["status"])] = statuses.get(str(r["status"]), 0) + 1
    speed = [r["audio"] / r["stream"] for r in ok if r["stream"] > 0]
    realtime = [r for r in ok if r["stream"] > 0 and r["audio"] / r["stream"] >= 1.0 and r["lag"] <= slack]
    ttfa = [r["ttfa"] for r in ok]
    steady = [r["ttfa"] for r in ok if r["steady"]]
    print(json.dumps({
        "concurrency": conc,
        "seconds": seconds,
        "responses": len(res),
        "statuses": statuses,
        "ok": len(ok),
        "realtime_fraction": len(realtime) / len(ok) if ok else 0.0,
        "slack_s": slack,
        "ttfa_p50_s": pct(ttfa, 50),
        "ttfa_p99_s": pct(ttfa, 99),
        "ramp_s": RAMP,
        "ttfa_steady_n": len(steady),
        "ttfa_steady_p50_s": pct(steady, 50),
        "ttfa_steady_p99_s": pct(steady, 99),
        "speed_p1": pct(speed, 1),
        "speed_p50": pct(speed, 50),
        "lag_p99_s": pct([r["lag"] for r in ok], 99),
        "audio_s_mean": statistics.mean([r["audio"] for r in ok]) if ok else None,
        "errors": [r.get("error") for r in res if r["status"] == "error"][:3],
    }))

#!/usr/bin/env python3
"""Concurrent streaming clients for dv-serve: C threads, each posting the
same speech request (streamed WAV) back to back for D seconds, timing the
first body byte (header + first audio block arrive together) and every
chunk. A stream keeps up with real time when no chunk arrives later than
the audio before it would have finished playing from the first byte on
(an underrun). Prints one JSON line.

usage: streams.py URL CONCURRENCY SECONDS TEXT
"""
import http.client
import json
import statistics
import sys
import threading
import time
from urllib.parse import urlparse

url, conc, seconds, text = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
u = urlparse(url)
body = json.dumps({"model": "deepvoice", "input": text, "response_format": "wav", "seed": 1})
results, lock = [], threading.Lock()


def one():
    t0 = time.perf_counter()
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request("POST", "/v1/audio/speech", body, {"content-type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        r.read()
        return {"status": r.status}
    rate = int(r.getheader("x-sample-rate"))
    first, got, worst = None, 0, 0.0
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        now = time.perf_counter()
        if first is None:
            first = now
            got = len(chunk) - 44
            continue
        # Audio received before this chunk would play until first + got/rate.
        worst = max(worst, (now - first) - got / 2 / rate)
        got += len(chunk)
    end = time.perf_counter()
    c.close()
    return {"status": 200, "ttfa": first - t0, "total": end - t0, "audio": got / 2 / rate, "lag": worst}


def worker(deadline):
    while time.perf_counter() < deadline:
        try:
            res = one()
        except Exception as e:  # a crash or reset counts as a failure
            res = {"status": "error", "error": str(e)}
        with lock:
            results.append(res)


deadline = time.perf_counter() + seconds
threads = [threading.Thread(target=worker, args=(deadline,)) for _ in range(conc)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ok = [r for r in results if r["status"] == 200]
q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] if xs else None
ttfa = [r["ttfa"] for r in ok]
out = {
    "concurrency": conc,
    "requests": len(results),
    "status": {str(s): sum(1 for r in results if r["status"] == s) for s in {r["status"] for r in results}},
    "ttfa_p50_ms": q(ttfa, 0.5) and 1000 * q(ttfa, 0.5),
    "ttfa_p99_ms": q(ttfa, 0.99) and 1000 * q(ttfa, 0.99),
    "audio_s_per_request": ok and statistics.mean(r["audio"] for r in ok),
    "speed_x_real_time_min": ok and min(r["audio"] / (r["total"] - r["ttfa"]) for r in ok),
    "speed_x_real_time_median": ok and statistics.median(r["audio"] / (r["total"] - r["ttfa"]) for r in ok),
    "underruns": sum(1 for r in ok if r["lag"] > 0),
    "worst_lag_ms": ok and 1000 * max(r["lag"] for r in ok),
}
print(json.dumps(out))

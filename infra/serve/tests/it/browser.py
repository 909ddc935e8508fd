#!/usr/bin/env python3
"""Drives headless chromium over the DevTools protocol on a pipe (no
websocket library needed): opens URL, waits until the page's #result line is
filled (its self-test spoke), then until the audio it scheduled has played,
and prints what it saw as one JSON line.

usage: browser.py CHROMIUM URL PROFILE_DIR [TIMEOUT_S]
"""
import json
import os
import subprocess
import sys
import time

chromium, url, profile = sys.argv[1:4]
timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0

# --remote-debugging-pipe: chromium reads commands on fd 3 and writes
# replies on fd 4, each message JSON ended by a NUL byte.
to_chrome_r, to_chrome_w = os.pipe()
from_chrome_r, from_chrome_w = os.pipe()


def child_fds():
    # Through fresh descriptors first: the pipe may already be fd 3 or 4,
    # and dup2 onto itself would keep its close-on-exec flag.
    r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
    os.dup2(r, 3)
    os.dup2(w, 4)


proc = subprocess.Popen(
    [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--autoplay-policy=no-user-gesture-required",
        "--remote-debugging-pipe",
        "--user-data-dir=" + profile,
        "about:blank",
    ],
    preexec_fn=child_fds,
    close_fds=False,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
)
os.close(to_chrome_r)
os.close(from_chrome_w)
out = os.fdopen(to_chrome_w, "wb", buffering=0)
inp = os.fdopen(from_chrome_r, "rb", buffering=0)
buf = b""
next_id = 0


def call(method, params=None, session=None):
    """Sends a command and returns its result (events in between are skipped)."""
    global buf, next_id
    next_id += 1
    msg = {"id": next_id, "method": method, "params": params or {}}
    if session:
        msg["sessionId"] = session
    out.write(json.dumps(msg).encode() + b"\0")
    while True:
        while b"\0" not in buf:
            chunk = inp.read(65536)
            if not chunk:
                raise SystemExit("chromium closed the pipe")
            buf += chunk
        raw, buf = buf.split(b"\0", 1)
        reply = json.loads(raw)
        if reply.get("id") == next_id:
            if "error" in reply:
                raise SystemExit(f"{method}: {reply['error']}")
            return reply["result"]


def evaluate(session, expr):
    r = call("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session)
    return r["result"].get("value")


result = {"result": "", "played": 0, "audio_state": None, "timeline_spans": 0}
try:
    target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    call("Page.enable", {}, session)
    call("Page.navigate", {"url": url}, session)
    start = time.time()
    while time.time() - start < timeout:
        text = evaluate(session, "(document.getElementById('result')||{}).textContent||''")
        if text:
            result["result"] = text
            break
        time.sleep(0.1)
    # Then the audio scheduled into WebAudio plays out (real time).
    want = evaluate(session, "parseInt(document.body.dataset.samples||'0')") or 0
    while time.time() - start < timeout:
        played = evaluate(session, "parseInt(document.body.dataset.played||'0')") or 0
        result["played"] = played
        if want and played >= want:
            break
        time.sleep(0.1)
    result["audio_state"] = evaluate(session, "ctx ? ctx.state : null")
    result["timeline_spans"] = evaluate(session, "document.querySelectorAll('#lanes .span').length")
    result["words"] = evaluate(
        session, "[...document.querySelectorAll('#lanes .word')].map(e => e.textContent).join(' ')"
    )
    result["voices"] = evaluate(session, "[...document.querySelectorAll('#voice option')].map(e => e.value)")
    result["elapsed_s"] = time.time() - start
    try:
        call("Browser.close")
    except SystemExit:
        pass
finally:
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
print(json.dumps(result), flush=True)

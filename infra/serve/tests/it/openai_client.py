"""OpenAI's own Python client against dv-serve (run by openai.rs).

    python3 openai_client.py BASE_URL API_KEY VOICE TEXT OUT_DIR

Asks for TEXT in wav, pcm and flac with `client.audio.speech.create`, then
streams pcm with `with_streaming_response` (plain audio, and OpenAI's SSE
events), writing each answer's bytes to OUT_DIR/<name>.<format>. Prints one
JSON line: per answer its file, the X-Sample-Rate header, the chunks it came
in and the seconds to its first chunk. Decoding and judging the audio is the
Rust test's (with sox, an independent decoder).
"""

import base64
import json
import os
import sys
import time

import openai


def main():
    base_url, api_key, voice, text, out_dir = sys.argv[1:6]
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=120, max_retries=0)
    result = {"openai_version": openai.__version__, "answers": {}}

    for fmt in ["wav", "pcm", "flac"]:
        speech = client.audio.speech.create(model="tts-1", voice=voice, input=text, response_format=fmt)
        path = os.path.join(out_dir, "speech." + fmt)
        speech.write_to_file(path)
        result["answers"][fmt] = {
            "file": path,
            "sample_rate": speech.response.headers.get("x-sample-rate"),
            "content_type": speech.response.headers.get("content-type"),
        }

    # Streamed: bytes as they come.
    t = time.monotonic()
    first = None
    chunks = 0
    path = os.path.join(out_dir, "stream.pcm")
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice=voice, input=text, response_format="pcm"
    ) as r, open(path, "wb") as f:
        rate = r.headers.get("x-sample-rate")
        for chunk in r.iter_bytes():
            if not chunk:
                continue
            if first is None:
                first = time.monotonic() - t
            chunks += 1
            f.write(chunk)
    total = time.monotonic() - t
    result["answers"]["stream"] = {
        "file": path,
        "sample_rate": rate,
        "chunks": chunks,
        "first_s": first,
        "total_s": total,
    }

    # OpenAI's SSE: speech.audio.delta events of base64 audio, then
    # speech.audio.done.
    path = os.path.join(out_dir, "sse.pcm")
    types = []
    done = None
    with client.audio.speech.with_streaming_response.create(
        model="tts-1", voice=voice, input=text, response_format="pcm", stream_format="sse"
    ) as r, open(path, "wb") as f:
        rate = r.headers.get("x-sample-rate")
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[len("data: "):])
            types.append(event["type"])
            if event["type"] == "speech.audio.delta":
                f.write(base64.b64decode(event["audio"]))
            elif event["type"] == "speech.audio.done":
                done = event
    result["answers"]["sse"] = {
        "file": path,
        "sample_rate": rate,
        "deltas": types.count("speech.audio.delta"),
        "last": types[-1] if types else None,
        "done_sample_rate": done and done["timing"]["sample_rate"],
        "done_samples": done and done["timing"]["samples"],
        "usage": done and done["usage"],
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

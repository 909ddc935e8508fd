"""OpenAI's own Python client against dv-serve (run by openai.rs).

    python3 openai_client.py BASE_URL API_KEY VOICE TEXT OUT_DIR

Asks for TEXT in every format (wav, pcm, flac, mp3, opus) with
`client.audio.speech.create`, then streams each with
`with_streaming_response` (and pcm as OpenAI's SSE events), writing each
answer's bytes to OUT_DIR/<name>.<format>. Prints one JSON line: per answer
its file, the X-Sample-Rate and Content-Type headers, the chunks it came in
and the seconds to its first chunk. Decoding and judging the audio is the
Rust test's (with sox and ffmpeg, independent decoders).
"""

import base64
import json
import os
import sys
import time

import openai

# dv-serve's `seed` (sent as OpenAI's client sends any extra field): every
# answer is the same samples, so that each format's level can be compared
# with the pcm answer's (an unlucky fresh seed can render louder).
SEED = {"seed": 42}


def main():
    base_url, api_key, voice, text, out_dir = sys.argv[1:6]
    client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=120, max_retries=0)
    result = {"openai_version": openai.__version__, "answers": {}}

    formats = ["wav", "pcm", "flac", "mp3", "opus"]
    for fmt in formats:
        speech = client.audio.speech.create(model="tts-1", voice=voice, input=text, response_format=fmt, extra_body=SEED)
        path = os.path.join(out_dir, "speech." + fmt)
        speech.write_to_file(path)
        result["answers"][fmt] = {
            "file": path,
            "sample_rate": speech.response.headers.get("x-sample-rate"),
            "content_type": speech.response.headers.get("content-type"),
        }

    # Streamed: bytes as they come ("stream" is pcm, "stream_<format>" the
    # others).
    for fmt in formats:
        t = time.monotonic()
        first = None
        chunks = 0
        name = "stream" if fmt == "pcm" else "stream_" + fmt
        path = os.path.join(out_dir, name + "." + fmt)
        with client.audio.speech.with_streaming_response.create(
            model="tts-1", voice=voice, input=text, response_format=fmt, extra_body=SEED
        ) as r, open(path, "wb") as f:
            rate = r.headers.get("x-sample-rate")
            content_type = r.headers.get("content-type")
            for chunk in r.iter_bytes():
                if not chunk:
                    continue
                if first is None:
                    first = time.monotonic() - t
                chunks += 1
                f.write(chunk)
        total = time.monotonic() - t
        result["answers"][name] = {
            "file": path,
            "sample_rate": rate,
            "content_type": content_type,
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
        model="tts-1", voice=voice, input=text, response_format="pcm", stream_format="sse", extra_body=SEED
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

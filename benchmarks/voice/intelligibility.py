#!/usr/bin/env python3
"""Intelligibility of a voice package, as a listener's machine would judge it (issue 28).

pocketsphinx (PyPI; its wheel bundles the US English acoustic model, language model and
dictionary, so it runs offline) recognises sentences in three conditions:

  (a) ref     the reference recordings (held-out corpus utterances; for the novel
              sentences, festival's slt HTS voice, the voice the corpus was rendered with)
  (b) oracle  the voice from the reference phonemes, durations and F0
              (`dv synth --features F --utterance ID`, the paper's Table 1 setting)
  (c) text    the voice from text alone (`dv synth "text"`)

and prints the WER of each, the mel-cepstral distortion (DTW-aligned; cepstra c1-c24 of a
40-band log-mel spectrum, 25 ms / 5 ms frames, silence at the ends left out: smoother than SPTK's
mel-cepstra, so lower than MCDs computed with SPTK; compare within this record) of (b) and (c) against
(a), the real-time factor of the synthesis, and draws one sentence's log-mel spectrogram in
each condition to PNG.

  python3 benchmarks/voice/intelligibility.py --dv DV --voice VOICE --corpus CORPUS \
      --features FEATURES --out DIR [--n 200] [--skip 0] [--novel infra/dv/src/recipe/novel.txt] \
      [--synth-args "--int16 --threads 2"]

CORPUS is the rendered embedded corpus (ARCTIC layout: etc/txt.done.data, wav/); held-out
utterances are those every training run left out (the id hash of trainers/train/src/features.rs,
seed 0, fraction 0.05), taken in id order. FEATURES is a `dv featurize` output that holds them.
"""
import argparse
import functools
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import time
import wave
import zlib

import numpy as np

MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def is_validation(uid, seed=0, fraction=0.05):
    h = 0xCBF29CE484222325
    for b in uid.encode():
        h = ((h ^ b) * 0x00000100000001B3) & MASK
    return splitmix64(seed ^ h) / 18446744073709551616.0 < fraction


def prompts(corpus):
    out = []
    for line in open(os.path.join(corpus, "etc", "txt.done.data"), encoding="utf-8"):
        m = re.match(r'\(\s*(\S+)\s+"(.*)"\s*\)\s*$', line.strip())
        if m:
            out.append((m.group(1), m.group(2).replace('\\"', '"')))
    return out


def normalized(dv, texts):
    """The words each text is spoken as: dv's own normalizer (numbers, abbreviations), lowercased."""
    res = subprocess.run([dv, "text", "normalize"], input="\n".join(texts) + "\n", capture_output=True,
                         text=True, check=True)
    lines = res.stdout.splitlines()
    assert len(lines) == len(texts), (len(lines), len(texts))
    return [words(line) for line in lines]


def words(s):
    return re.sub(r"[^a-z' ]", " ", s.lower()).split()


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, y in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (x != y))
    return d[len(b)]


def read_wav(path):
    with wave.open(path) as w:
        rate, n, ch = w.getframerate(), w.getnframes(), w.getnchannels()
        x = np.frombuffer(w.readframes(n), dtype="<i2").astype(np.float32) / 32768.0
    if ch > 1:
        x = x.reshape(-1, ch).mean(axis=1)
    return x, rate


def to16k(path, tmp):
    subprocess.run(["sox", "-R", path, "-r", "16000", "-b", "16", "-c", "1", tmp, "rate", "-h"], check=True)
    return read_wav(tmp)[0]


class Recognizer:
    def __init__(self):
        from pocketsphinx import Decoder
        self.d = Decoder(samprate=16000, loglevel="FATAL")

    def __call__(self, x):
        pcm = (np.clip(x, -1, 1) * 32767).astype("<i2").tobytes()
        self.d.start_utt()
        self.d.process_raw(pcm, full_utt=True)
        self.d.end_utt()
        h = self.d.hyp()
        return words(h.hypstr) if h else []


def mel_filters(n_fft, rate, n_mels=40):
    mel = lambda f: 2595 * np.log10(1 + f / 700)
    inv = lambda m: 700 * (10 ** (m / 2595) - 1)
    pts = inv(np.linspace(mel(0), mel(rate / 2), n_mels + 2))
    bins = np.fft.rfftfreq(n_fft, 1 / rate)
    fb = np.zeros((n_mels, len(bins)))
    for i in range(n_mels):
        lo, c, hi = pts[i], pts[i + 1], pts[i + 2]
        fb[i] = np.clip(np.minimum((bins - lo) / (c - lo), (hi - bins) / (hi - c)), 0, None)
    return fb


def log_mel(x, rate=16000, n_fft=512, hop=80, win=400):
    if len(x) < win:
        x = np.pad(x, (0, win - len(x)))
    frames = np.lib.stride_tricks.sliding_window_view(x, win)[::hop] * np.hanning(win)
    spec = np.abs(np.fft.rfft(frames, n_fft)) ** 2
    return np.log(spec @ mel_filters(n_fft, rate).T + 1e-10)


def mel_cepstrum(x, n=25):
    lm = 0.5 * log_mel(x)  # natural-log amplitude, the unit of the MCD formula
    k = np.arange(lm.shape[1])
    dct = np.cos(np.pi / lm.shape[1] * (k + 0.5)[None, :] * np.arange(n)[:, None])
    # the cepstrum's own scale: log|H(w)| = c0 + 2 sum c_m cos(m w) (as SPTK's mel-cepstra), so
    # c_m = (1/N) sum_k L_k cos(pi m (k + 1/2) / N) over the N mel bands
    c = lm @ dct.T / lm.shape[1]
    energy = lm.max(axis=1)
    return c[:, 1:], energy  # c0 (level) left out, as MCD usually is


def speech_frames(c, energy, db=40):
    """Frames within `db` of the loudest: leading and trailing silence does not count."""
    keep = energy > energy.max() - db / 10 * np.log(10)
    idx = np.flatnonzero(keep)
    return c[idx[0]:idx[-1] + 1] if len(idx) else c


def mcd_dtw(ref, hyp):
    """Mean MCD along the DTW path (steps (1,1), (1,0), (0,1)), computed one anti-diagonal at a time."""
    a, b = speech_frames(*mel_cepstrum(ref)), speech_frames(*mel_cepstrum(hyp))
    d = np.sqrt(2 * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
    n, m = d.shape
    acc = np.full((n + 1, m + 1), np.inf)
    steps = np.zeros((n + 1, m + 1))
    acc[0, 0] = 0
    for k in range(2, n + m + 1):  # cells (i, j) with i + j = k, 1-based
        i = np.arange(max(1, k - m), min(n, k - 1) + 1)
        j = k - i
        cand = np.stack([acc[i - 1, j - 1], acc[i - 1, j], acc[i, j - 1]])
        prev = np.stack([steps[i - 1, j - 1], steps[i - 1, j], steps[i, j - 1]])
        best = cand.argmin(axis=0)
        acc[i, j] = d[i - 1, j - 1] + cand[best, np.arange(len(i))]
        steps[i, j] = prev[best, np.arange(len(i))] + 1
    # the scale of "MCD = 10 / ln 10 · sqrt(2 Σ Δc²)", averaged over the path
    return 10 / np.log(10) * acc[n, m] / max(steps[n, m], 1)


def png(path, rows):
    """A grayscale PNG from a 2-D array in [0, 1] (row 0 at the top)."""
    h, w = rows.shape
    raw = b"".join(b"\x00" + bytes((np.clip(r, 0, 1) * 255).astype(np.uint8)) for r in rows)
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def spectrograms(path, xs):
    """Log-mel spectrograms stacked top to bottom, one per condition, 2 px per frame."""
    mats = [log_mel(x).T[::-1] for x in xs]
    hi = max(m.max() for m in mats)
    w = max(m.shape[1] for m in mats)
    out = np.zeros((0, w * 2))
    for m in mats:
        m = np.clip((m - (hi - 10)) / 10, 0, 1)
        m = np.repeat(np.repeat(np.pad(m, ((0, 0), (0, w - m.shape[1]))), 2, axis=1), 3, axis=0)
        out = np.vstack([out, m, np.ones((4, w * 2))])
    png(path, out)


@functools.lru_cache(maxsize=None)
def voice_digest(voice):
    """SHA-256 of the voice package's weights: what a reused WAV must have been made with."""
    h = hashlib.sha256()
    with open(os.path.join(voice, "model.safetensors"), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def synth(dv, voice, out, extra, text=None, features=None, utt=None, seed=0):
    cmd = [dv, "synth", "--voice", voice, "-o", out, "--seed", str(seed)] + extra
    cmd += ["--features", features, "--utterance", utt] if features else [text]
    key = {"voice_sha256": voice_digest(voice), "args": cmd[1:]}
    if os.path.exists(out) and os.path.exists(out + ".json"):
        # a rerun reuses what is there, only if the same weights and arguments made it
        t = json.load(open(out + ".json"))
        if all(t.get(k) == v for k, v in key.items()):
            return t["wall_s"], t["sampling_s"]
    t = time.time()
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {res.stderr.strip()[-500:]}")
    m = re.search(r"sampling ([0-9.]+) s", res.stdout)
    wall, samp = time.time() - t, float(m.group(1)) if m else None
    json.dump({"wall_s": wall, "sampling_s": samp, **key}, open(out + ".json", "w"))
    return wall, samp


def render_festival(text, out):
    scm = f'(voice_cmu_us_slt_arctic_hts)\n(utt.save.wave (SynthText "{text}") "{out}" \'riff)\n'
    subprocess.run(["festival", "--pipe"], input=scm, text=True, check=True, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dv", required=True)
    ap.add_argument("--voice", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--features")
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--skip", type=int, default=0,
                    help="leave out the first SKIP held-out utterances (a tuning set apart from the first 200)")
    ap.add_argument("--novel")
    ap.add_argument("--synth-args", default="")
    ap.add_argument("--conditions", default="ref,oracle,text")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    extra = args.synth_args.split()
    conds = args.conditions.split(",")
    items = [(i, t, os.path.join(args.corpus, "wav", i + ".wav")) for i, t in prompts(args.corpus) if is_validation(i)]
    items = sorted(items)[args.skip : args.skip + args.n]
    sets = [("heldout", items)] if items else []
    if args.novel:
        lines = [l.strip() for l in open(args.novel, encoding="utf-8") if l.strip() and not l.startswith("#")]
        sets.append(("novel", [(f"novel_{k:03d}", t, None) for k, t in enumerate(lines)]))
    asr = Recognizer()
    tmp = os.path.join(args.out, "tmp16k.wav")
    report = {"voice": args.voice, "synth_args": args.synth_args, "sets": {}}
    for name, its in sets:
        refs = normalized(args.dv, [t for _, t, _ in its])
        res = {c: {"err": 0, "words": 0, "mcd": [], "audio_s": 0.0, "sampling_s": 0.0, "wall_s": 0.0} for c in conds}
        rows = []
        for k, ((uid, text, wav), ref) in enumerate(zip(its, refs)):
            audio = {}
            for c in conds:
                path = os.path.join(args.out, f"{uid}-{c}.wav")
                if c == "ref":
                    if wav is None:
                        render_festival(text.replace('"', ""), path)
                    else:
                        path = wav
                elif c == "oracle":
                    if wav is None or not args.features:
                        continue
                    wall, samp = synth(args.dv, args.voice, path, extra, features=args.features, utt=uid)
                    res[c]["wall_s"] += wall
                    res[c]["sampling_s"] += samp or 0
                else:
                    wall, samp = synth(args.dv, args.voice, path, extra, text=text)
                    res[c]["wall_s"] += wall
                    res[c]["sampling_s"] += samp or 0
                x = to16k(path, tmp)
                audio[c] = x
                if c != "ref":
                    res[c]["audio_s"] += len(x) / 16000
                hyp = asr(x)
                e = edit_distance(ref, hyp)
                res[c]["err"] += e
                res[c]["words"] += len(ref)
                rows.append({"set": name, "id": uid, "condition": c, "ref": " ".join(ref), "hyp": " ".join(hyp),
                             "errors": e})
                if c != "ref" and "ref" in audio:
                    res[c]["mcd"].append(mcd_dtw(audio["ref"], x))
            if k == 0:
                spectrograms(os.path.join(args.out, f"spectrogram-{name}-{uid}.png"), [audio[c] for c in conds if c in audio])
            done = {c: f"{100 * r['err'] / max(r['words'], 1):.1f}%" for c, r in res.items() if r["words"]}
            print(f"\r{name} {k + 1}/{len(its)} WER {done}   ", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        summary = {}
        for c, r in res.items():
            if not r["words"]:
                continue
            summary[c] = {"wer": round(100 * r["err"] / r["words"], 2), "errors": r["err"], "words": r["words"],
                          "sentences": len(its)}
            if r["mcd"]:
                summary[c]["mcd_db"] = round(float(np.mean(r["mcd"])), 2)
            if r["sampling_s"]:
                summary[c]["real_time_factor"] = round(r["audio_s"] / r["sampling_s"], 2)
                summary[c]["audio_s"] = round(r["audio_s"], 1)
        report["sets"][name] = summary
        with open(os.path.join(args.out, f"{name}.jsonl"), "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        print(name, json.dumps(summary))
    os.remove(tmp)
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

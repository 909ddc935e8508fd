#!/usr/bin/env python3
"""A natural-sounding speaker the project never saw (issue 41): hibari-tts's bundled voice
(PyPI `hibari-tts`, af_heart distilled from Kokoro-82M; American English, female, 24 kHz)
reading plain sentences of Debian's `fortunes`. Festival's ked diphone voice (make_ked.py) was
hard to understand even as recorded; this one is not (whisper tiny.en: 1-3 % WER).

Two steps, so the text can be chosen where `fortunes` and festival's lexicon are installed and
the audio rendered anywhere hibari-tts is (the GPU machine renders an hour in seconds on 16
cores):

  make_hibari.py sentences OUT.tsv            every plain fortunes sentence of 3-32 words whose
                                              words festival's CMU lexicon knows, in a seeded
                                              shuffle, none of infra/dv/src/recipe/novel.txt
                                              (id<TAB>text, about 9,900)
  make_hibari.py render SENTENCES.tsv OUT [--minutes 60] [--jobs N]
                                              the first sentences of the list until MINUTES of
                                              audio: OUT/metadata.tsv (path<TAB>text) and
                                              OUT/wav/<id>.wav (24 kHz, 16-bit): audio and text
                                              only, what a user brings. Corpora of different
                                              lengths nest: an hour is the start of 8 hours.
  make_hibari.py novel OUT                    the novel sentences as the speaker's recordings:
                                              OUT/novel-NNN.wav and OUT/novel.tsv

Every sentence's noise is seeded from its id, so a render is the same on every machine (up to
onnxruntime's float arithmetic). A sentence hibari cannot say is left out, named, and the
corpus goes on. Needs: hibari-tts (numpy, onnxruntime); `sentences` also fortunes, festlex-cmu.
"""
import argparse
import hashlib
import os
import random
import sys
import wave
from multiprocessing import Pool

HERE = os.path.dirname(os.path.abspath(__file__))
NOVEL = os.path.join(HERE, "..", "..", "infra", "dv", "src", "recipe", "novel.txt")
RATE = 24000


def novel_sentences():
    with open(NOVEL, encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def choose(out, seed):
    sys.path.insert(0, HERE)
    import make_ked  # the fortunes reader and the plain-sentence rule of issue 30's corpus

    lex = make_ked.festival_words()
    novel = set(novel_sentences())
    found, seen = [], set()
    for name in sorted(os.listdir(make_ked.FORTUNES)):
        path = os.path.join(make_ked.FORTUNES, name)
        if not os.path.isfile(path) or name.endswith(".dat") or name.endswith(".u8"):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for e in make_ked.entries(f.read()):
                for s in make_ked.sentences(e):
                    if s not in seen and s not in novel and make_ked.plain(s, lex):
                        seen.add(s)
                        found.append(s)
    random.Random(seed).shuffle(found)
    tmp = out + ".partial"
    with open(tmp, "w", encoding="utf-8") as f:
        for k, s in enumerate(found):
            f.write(f"hibari_{k:05d}\t{s}\n")
    os.replace(tmp, out)
    print(f"{len(found)} sentences to {out}")


_tts = None


def _say(job):
    """(id, text, wav path) -> (id, text, seconds) or None when hibari cannot say it."""
    global _tts
    uid, text, path = job
    try:
        if _tts is None:
            from hibari import Hibari
            _tts = Hibari(threads=1)
        seed = int.from_bytes(hashlib.sha256(uid.encode()).digest()[:4], "little")
        audio = _tts(text, seed=seed)
        if len(audio) < RATE // 10:
            raise ValueError(f"{len(audio)} samples")
        tmp = path + ".partial"
        write_wav(tmp, audio)
        os.replace(tmp, path)
        return uid, text, len(audio) / RATE
    except Exception as e:  # one sentence it cannot say is named and left out
        print(f"  left out {uid} ({text!r}): {e}", file=sys.stderr, flush=True)
        return None


def write_wav(path, audio):
    import numpy as np
    pcm = (np.clip(audio, -1.0, 1.0) * 32767.0).round().astype("<i2")
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def render(sentences, out, minutes, jobs):
    os.makedirs(os.path.join(out, "wav"), exist_ok=True)
    with open(sentences, encoding="utf-8") as f:
        rows = [l.rstrip("\n").split("\t", 1) for l in f if "\t" in l]
    work = [(uid, text, os.path.join(out, "wav", uid + ".wav")) for uid, text in rows]
    kept, total = [], 0.0
    with Pool(jobs) as pool:
        for r in pool.imap(_say, work, chunksize=4):
            if r is None:
                continue
            kept.append(r)
            total += r[2]
            if len(kept) % 200 == 0:
                print(f"  {len(kept)} utterances, {total / 60:.1f} min", file=sys.stderr, flush=True)
            if total >= minutes * 60:
                pool.terminate()
                break
    keep = {r[0] for r in kept}
    for name in os.listdir(os.path.join(out, "wav")):  # renders past the end of the list
        if name.endswith(".partial") or name[:-4] not in keep:
            os.unlink(os.path.join(out, "wav", name))
    tmp = os.path.join(out, "metadata.tsv.partial")
    with open(tmp, "w", encoding="utf-8") as f:
        for uid, text, _ in kept:
            f.write(f"wav/{uid}.wav\t{text}\n")
    os.replace(tmp, os.path.join(out, "metadata.tsv"))
    print(f"{len(kept)} utterances, {total / 60:.1f} min ({total / 3600:.2f} h) in {out}")


def novel(out, jobs):
    os.makedirs(out, exist_ok=True)
    lines = novel_sentences()
    work = [(f"novel-{k:03d}", t, os.path.join(out, f"novel-{k:03d}.wav")) for k, t in enumerate(lines)]
    with Pool(jobs) as pool:
        done = [r for r in pool.map(_say, work) if r]
    with open(os.path.join(out, "novel.tsv"), "w", encoding="utf-8") as f:
        for uid, text, _ in done:
            f.write(f"{uid}.wav\t{text}\n")
    print(f"{len(done)} novel sentences in {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sentences")
    s.add_argument("out")
    s.add_argument("--seed", type=int, default=41)
    r = sub.add_parser("render")
    r.add_argument("sentences")
    r.add_argument("out")
    r.add_argument("--minutes", type=float, default=60)
    r.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    n = sub.add_parser("novel")
    n.add_argument("out")
    n.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    if a.cmd == "sentences":
        choose(a.out, a.seed)
    elif a.cmd == "render":
        render(a.sentences, a.out, a.minutes, a.jobs)
    else:
        novel(a.out, a.jobs)


if __name__ == "__main__":
    main()

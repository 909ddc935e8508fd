#!/usr/bin/env python3
"""A corpus of a speaker the project never saw (issue 30): festival's ked
diphone voice (Debian `festvox-kdlpc16k`, American English male, 16 kHz)
reading plain sentences from Debian's `fortunes` that the shipped slt voice
never heard (the embedded corpus took all 7,982 of 5-20 words without
apostrophes; these are the 1,955 others of 3-32 words) (none of the 7,982 of the embedded corpus, none of
infra/dv/src/recipe/novel.txt).

Writes under OUT:
  corpus/metadata.tsv      path<TAB>text: what a user brings (audio and text only)
  corpus/wav/<id>.flac     16 kHz mono FLAC
  reference/lab/<id>.lab   festival's own segment end times (xwaves), used
                           only to score the aligner afterwards
  reference/sentences.txt  id<TAB>text

Usage: make_ked.py OUT [--minutes 75] [--seed 30] [--jobs 2]
Needs: festival, festvox-kdlpc16k, fortunes, flac (apt).
"""
import argparse, os, random, re, subprocess, sys, tempfile, wave
from concurrent.futures import ThreadPoolExecutor

FORTUNES = "/usr/share/games/fortunes"
LEXICON = "/usr/share/festival/dicts/cmu/cmudict-0.4.out"
SLT_TEXT = os.path.expanduser("~/.cache/deepvoice-rs/corpora/cmu_us_slt_fortunes_7982/etc/txt.done.data")
HERE = os.path.dirname(os.path.abspath(__file__))


def festival_words():
    words = set()
    with open(LEXICON, encoding="latin-1") as f:
        for line in f:
            if line.startswith('("'):
                words.add(line[2:].split('"', 1)[0])
    return words


def entries(text):
    out, cur = [], []
    for line in text.splitlines():
        t = line.strip()
        if t == "%":
            out.append(" ".join(cur)); cur = []
            continue
        if t.startswith("--") or t.startswith("\u2014"):
            continue
        cur.append(t)
    out.append(" ".join(cur))
    return [" ".join(e.split()) for e in out if e.strip()]


def sentences(entry):
    return [s.strip() for s in re.split(r"(?<=[.!?])(?= |$)", entry) if s.strip()]


def plain(s, lex):
    # the embedded corpus's rule (datasets/corpus/src/recipe/sentences.rs, is_plain) took every
    # sentence of 5-20 words; this takes the rest: 3-32 words, apostrophes allowed
    if not all(c.isascii() and (c.isalpha() or c in " ,;.!?'") for c in s):
        return False
    if not s[:1].isupper() or s[-1:] not in ".!?":
        return False
    words = s.split(" ")
    if not 3 <= len(words) <= 32:
        return False
    for i, w in enumerate(words):
        core = w.rstrip(",;.!?")
        tail = w[len(core):]
        ok = (len(tail) == 1 and tail not in ",;") if i == len(words) - 1 else (len(tail) <= 1 and not any(c in tail for c in ".!?"))
        caps = len(core) > 1 and core.isupper()
        if not core or not ok or caps or core.lower() not in lex:
            return False
    return True


def synth(args):
    uid, text, out = args
    wav = os.path.join(out, "tmp", uid + ".wav")
    lab = os.path.join(out, "reference", "lab", uid + ".lab")
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    script = (f'(voice_ked_diphone)\n(set! u (utt.synth (Utterance Text "{quoted}")))\n'
              f'(utt.save.wave u "{wav}" \'riff)\n(utt.save.segs u "{lab}")\n')
    with tempfile.NamedTemporaryFile("w", suffix=".scm", delete=False) as f:
        f.write(script)
    flac = os.path.join(out, "corpus", "wav", uid + ".flac")
    try:
        subprocess.run(["festival", "-b", f.name], check=True, capture_output=True, timeout=120)
        with wave.open(wav) as w:
            seconds = w.getnframes() / w.getframerate()
        subprocess.run(["flac", "-s", "-f", "--best", "-o", flac, wav], check=True, capture_output=True)
    except (subprocess.SubprocessError, OSError, EOFError, wave.Error) as e:
        # one sentence festival cannot say is left out, named, and the corpus goes on
        print(f"  left out {uid} ({text!r}): {e}", file=sys.stderr, flush=True)
        for p in (wav, flac, lab):
            if os.path.exists(p):
                os.unlink(p)
        return None
    finally:
        os.unlink(f.name)
    os.unlink(wav)
    return uid, text, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--minutes", type=float, default=75)
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    lex = festival_words()
    seen = set()
    with open(SLT_TEXT) as f:
        for line in f:
            m = re.match(r'\( \S+ "(.*)" \)$', line.strip())
            if m:
                seen.add(m.group(1))
    with open(os.path.join(HERE, "..", "..", "infra", "dv", "src", "recipe", "novel.txt")) as f:
        seen.update(l.strip() for l in f if l.strip())
    if len(seen) < 7982:
        sys.exit(f"{SLT_TEXT}: expected the 7,982 sentences of the embedded corpus (dv corpus make-default --utterances 7982 --labels-only)")
    pool, dup = [], set()
    for name in sorted(os.listdir(FORTUNES)):
        p = os.path.join(FORTUNES, name)
        if not os.path.isfile(p) or os.path.islink(p) or "." in name:
            continue
        with open(p, encoding="utf-8", errors="replace") as f:
            for e in entries(f.read()):
                for s in sentences(e):
                    if s not in dup and s not in seen and plain(s, lex):
                        dup.add(s); pool.append(s)
    random.Random(a.seed).shuffle(pool)
    for d in ("corpus/wav", "reference/lab", "tmp"):
        os.makedirs(os.path.join(a.out, d), exist_ok=True)
    print(f"{len(pool)} unseen plain sentences; rendering about {a.minutes:.0f} minutes with ked", flush=True)
    done, total, i = [], 0.0, 0
    with ThreadPoolExecutor(a.jobs) as ex:
        while total < a.minutes * 60 and i < len(pool):
            batch = [(f"ked_{n:05d}", pool[n], a.out) for n in range(i, min(i + 64, len(pool)))]
            i += len(batch)
            for r in ex.map(synth, batch):
                if r is not None and total < a.minutes * 60:
                    done.append(r); total += r[2]
            print(f"  {len(done)} utterances, {total / 60:.1f} min", flush=True)
    os.rmdir(os.path.join(a.out, "tmp")) if not os.listdir(os.path.join(a.out, "tmp")) else None
    if not done:
        sys.exit(f"{a.out}: festival rendered no sentence with ked (festival, festvox-kdlpc16k and flac installed?)")
    kept = {u for u, _, _ in done}
    for f in os.listdir(os.path.join(a.out, "corpus", "wav")):
        if f[:-5] not in kept:
            os.unlink(os.path.join(a.out, "corpus", "wav", f))
            os.unlink(os.path.join(a.out, "reference", "lab", f[:-5] + ".lab"))
    with open(os.path.join(a.out, "corpus", "metadata.tsv"), "w") as f:
        for u, t, _ in done:
            f.write(f"wav/{u}.flac\t{t}\n")
    with open(os.path.join(a.out, "reference", "sentences.txt"), "w") as f:
        for u, t, _ in done:
            f.write(f"{u}\t{t}\n")
    print(f"{len(done)} utterances, {total / 3600:.2f} h of ked in {a.out}")


if __name__ == "__main__":
    main()

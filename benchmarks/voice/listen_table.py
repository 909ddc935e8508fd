#!/usr/bin/env python3
"""Issue 41's table: voices beside their recordings and the peer, on the same sentences, in one
run, judged by infra/dv/src/recipe/listen.py (whisper tiny.en WER, pocketsphinx WER, DNSMOS).

Sets:
  novel     the sentences of infra/dv/src/recipe/novel.txt (no corpus holds them)
  heldout   --heldout CORPUS.tsv: the utterances of a table corpus (path<TAB>text) that every
            training run left out (the recipe's split: 5 %, seed 0, by id), at most --heldout-n

Systems (--system NAME=KIND[:ARG], any number, in the table's order):
  NAME=recordings:DIR      novel: DIR/novel-NNN.wav (make_hibari.py novel; festival_slt below);
                           heldout: the corpus's own audio
  NAME=wavs:DIR            DIR/<set>/<id>.wav, rendered elsewhere: a recipe's evaluate/listen
                           (its voice from text; hibari_gpu.sh resynth adds resynth/, the held-out
                           utterances from their true durations and F0: use SET=resynth as
                           wavs:DIR:resynth to read that folder for the held-out set)
  NAME=festival_slt        festival's slt HTS voice (the shipped voice's ground truth), novel only
  NAME=dv:VOICE[:FLAGS]    `dv synth --voice VOICE FLAGS` per sentence (FLAGS split on spaces,
                           e.g. "dv:inference/voices/slt:--sampling temperature:0.8")
  NAME=hibari              hibari-tts's bundled voice (the peer)

  listen_table.py --out DIR --system ... [--sets novel,heldout] [--heldout CORPUS.tsv]
      [--dv PATH] [--metrics whisper,pocketsphinx,dnsmos] [--jobs N] [--render-only]

--jobs N speaks N sentences at once (`dv` systems); --render-only writes the WAVs and stops (on a
machine without the judges' packages: the GPU machine's 32 cores, then score here with wavs:DIR).

Writes DIR/<system>/<set>/*.wav (kept: rerunning skips what exists), DIR/items.json,
DIR/listen.json and DIR/table.md, and prints the table.
"""
import argparse
import concurrent.futures
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
LISTEN = os.path.join(ROOT, "infra", "dv", "src", "recipe", "listen.py")
NOVEL = os.path.join(ROOT, "infra", "dv", "src", "recipe", "novel.txt")


def is_validation(uid, seed=0, fraction=0.05):
    """dv_train::is_validation: FNV-1a of the id, mixed with the seed by splitmix64."""
    m = (1 << 64) - 1
    h = 0xCBF29CE484222325
    for b in uid.encode():
        h = ((h ^ b) * 0x100000001B3) & m
    z = ((seed ^ h) + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    z ^= z >> 31
    return z / 2.0**64 < fraction


def novel_set():
    with open(NOVEL, encoding="utf-8") as f:
        lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    return [(f"novel-{k:03d}", t, None) for k, t in enumerate(lines)]


def heldout_set(tsv, n):
    root = os.path.dirname(os.path.abspath(tsv))
    out = []
    with open(tsv, encoding="utf-8") as f:
        for line in f:
            if "\t" not in line:
                continue
            path, text = line.rstrip("\n").split("\t", 1)
            uid = os.path.splitext(os.path.basename(path))[0]
            if is_validation(uid):
                out.append((uid, text, os.path.join(root, path)))
    return out[:n]


def render(kind, arg, set_name, sentences, dir, dv, jobs=1):
    """WAV paths by id for one system on one set (None where it has none)."""
    os.makedirs(dir, exist_ok=True)
    if kind == "dv" and jobs > 1:
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            parts = pool.map(lambda s: render(kind, arg, set_name, [s], dir, dv), sentences)
            return {k: v for part in parts for k, v in part.items()}
    paths = {}
    tts = None
    for uid, text, recording in sentences:
        if kind == "recordings":
            p = recording if set_name == "heldout" else os.path.join(arg, uid + ".wav")
            paths[uid] = p if p and os.path.exists(p) else None
            continue
        if kind == "wavs":
            root, _, folder = arg.partition(":")
            p = os.path.join(root, folder or set_name, uid + ".wav")
            paths[uid] = p if os.path.exists(p) else None
            continue
        p = os.path.join(dir, uid + ".wav")
        if not os.path.exists(p):
            tmp = p[:-4] + ".partial.wav"
            if kind == "dv":
                voice, _, flags = arg.partition(":")
                cmd = [dv, "synth", "--voice", voice, "-o", tmp] + shlex.split(flags) + [text]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"  {uid}: dv synth failed: {r.stderr.strip()[-300:]}", file=sys.stderr)
                    paths[uid] = None
                    continue
            elif kind == "hibari":
                if tts is None:
                    from hibari import Hibari
                    tts = Hibari()
                tts.save(text, tmp, seed=0)
            elif kind == "festival_slt":
                if set_name != "novel":
                    paths[uid] = None
                    continue
                scm = (f'(voice_cmu_us_slt_arctic_hts)\n(set! u (utt.synth (Utterance Text "{text}")))\n'
                       f'(utt.save.wave u "{tmp}" \'riff)\n')
                subprocess.run(["festival", "-b", "--pipe"], input=scm, text=True, check=True, capture_output=True)
            else:
                sys.exit(f"unknown system kind {kind!r}")
            os.replace(tmp, p)
        paths[uid] = p
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--system", action="append", required=True)
    ap.add_argument("--sets", default="novel,heldout")
    ap.add_argument("--heldout")
    ap.add_argument("--heldout-n", type=int, default=60)
    ap.add_argument("--dv", default=os.path.expanduser("~/.cache/deepvoice-rs/target/debug/dv"))
    ap.add_argument("--metrics")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--render-only", action="store_true")
    a = ap.parse_args()
    sets = {}
    for s in a.sets.split(","):
        if s == "novel":
            sets["novel"] = novel_set()
        elif s == "heldout":
            if not a.heldout:
                sys.exit("--sets heldout needs --heldout CORPUS.tsv")
            sets["heldout"] = heldout_set(a.heldout, a.heldout_n)
    systems = []
    for spec in a.system:
        name, _, rest = spec.partition("=")
        kind, _, arg = rest.partition(":")
        systems.append((name, kind, arg))
    items = {}
    t0 = time.time()
    for name, kind, arg in systems:
        for set_name, sentences in sets.items():
            t = time.time()
            paths = render(kind, arg, set_name, sentences, os.path.join(a.out, name, set_name), a.dv, a.jobs)
            print(f"{name} {set_name}: {sum(p is not None for p in paths.values())} of {len(sentences)} "
                  f"in {time.time() - t:.0f} s", file=sys.stderr, flush=True)
            for uid, text, _ in sentences:
                it = items.setdefault(uid, {"id": uid, "set": set_name, "reference": text, "audio": {}})
                if paths.get(uid):
                    it["audio"][name] = paths[uid]
    if a.render_only:
        return
    items = list(items.values())
    with open(os.path.join(a.out, "items.json"), "w") as f:
        json.dump(items, f, indent=1)
    cmd = [sys.executable, LISTEN, os.path.join(a.out, "items.json"), "-o", os.path.join(a.out, "listen.json")]
    if a.metrics:
        cmd += ["--metrics", a.metrics]
    subprocess.run(cmd, check=True)
    with open(os.path.join(a.out, "listen.json")) as f:
        result = json.load(f)
    rows = ["| system | set | sentences | words | whisper WER | pocketsphinx WER | DNSMOS OVRL | SIG | BAK |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    pct = lambda v: "–" if v is None else f"{100 * v:.1f} %"
    num = lambda v: "–" if v is None else f"{v:.2f}"
    for set_name in sets:
        for name, _, _ in systems:
            s = result["summary"].get(set_name, {}).get(name)
            if not s:
                continue
            rows.append(f"| {name} | {set_name} | {s['utterances']} | {s['words']} | {pct(s.get('whisper_wer'))} | "
                        f"{pct(s.get('pocketsphinx_wer'))} | {num(s.get('dnsmos_ovrl'))} | {num(s.get('dnsmos_sig'))} | "
                        f"{num(s.get('dnsmos_bak'))} |")
    table = "\n".join(rows) + "\n"
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(table)
    print(table)
    print(f"{time.time() - t0:.0f} s in all", file=sys.stderr)


if __name__ == "__main__":
    main()

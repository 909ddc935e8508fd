#!/usr/bin/env python3
"""Padding of random and length-bucketed batches over a corpus's durations.

Replays `dv_train::Sampler` (trainers/train/src/data/sampler.rs) exactly:
the seeded Fisher-Yates permutation per epoch, and with `[train]
bucket_batches = W` windows of W global batches sorted by length (longest
first, stable) and the epoch's batches visited in a seeded order. For each
setting it prints, over `--steps` steps, the padding ratio (frames the padded
batches hold over the frames they carry) and the mean longest utterance per
batch in frames (what a latency-bound recurrent step's cost follows).

    python3 benchmarks/train/padding.py /root/voicework/hibari60 --batch 32 --steps 4000

Frames are 10 ms (dv-train's FRAME_SECONDS), from the WAV headers.
"""
import argparse
import pathlib

import soundfile

MASK = (1 << 64) - 1
FRAME_SECONDS = 0.01


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def permutation(n, seed, epoch):
    p = list(range(n))
    state = splitmix64(seed ^ splitmix64(epoch))
    for i in range(n - 1, 0, -1):
        state = splitmix64(state)
        j = state % (i + 1)
        p[i], p[j] = p[j], p[i]
    return p


class Sampler:
    def __init__(self, lengths, batch, seed, window_batches):
        self.lengths, self.batch, self.seed, self.window = lengths, batch, seed, window_batches
        self.per = max(len(lengths) // batch, 1)
        self.epoch, self.batches = None, None

    def _epoch(self, epoch):
        perm = permutation(len(self.lengths), self.seed, epoch)
        usable = self.per * self.batch
        if self.window == 0:
            return [perm[k * self.batch:(k + 1) * self.batch] for k in range(self.per)]
        width = self.window * self.batch
        cut = []
        for start in range(0, usable, width):
            w = sorted(perm[start:min(start + width, usable)], key=lambda i: -self.lengths[i])
            cut += [w[a:a + self.batch] for a in range(0, len(w), self.batch)]
        order = permutation(self.per, splitmix64(self.seed ^ 0x6275636B), epoch)
        return [cut[j] for j in order]

    def global_batch(self, step):
        epoch, k = divmod(step, self.per)
        if epoch != self.epoch:
            self.epoch, self.batches = epoch, self._epoch(epoch)
        return self.batches[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", help="a directory with metadata.tsv (wav path, text)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--windows", default="0,8,16,32", help="bucket_batches values (0 = random)")
    a = ap.parse_args()
    root = pathlib.Path(a.corpus)
    lengths = []
    for line in (root / "metadata.tsv").read_text().splitlines():
        if line.strip():
            info = soundfile.info(str(root / line.split("\t")[0]))
            lengths.append(round(info.frames / info.samplerate / FRAME_SECONDS))
    secs = [n * FRAME_SECONDS for n in lengths]
    print(f"{len(lengths)} utterances, {min(secs):.2f}-{max(secs):.2f} s, mean {sum(secs) / len(secs):.2f} s")
    print("| bucket_batches | padding ratio | mean longest per batch (frames) |")
    print("| ---: | ---: | ---: |")
    for w in (int(x) for x in a.windows.split(",")):
        s = Sampler(lengths, a.batch, a.seed, w)
        padded = real = longest = 0
        for step in range(a.steps):
            b = [lengths[i] for i in s.global_batch(step)]
            padded += max(b) * len(b)
            real += sum(b)
            longest += max(b)
        print(f"| {w} | {padded / real:.3f} | {longest / a.steps:.0f} |")


if __name__ == "__main__":
    main()

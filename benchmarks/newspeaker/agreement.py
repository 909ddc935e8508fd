#!/usr/bin/env python3
"""How far two aligners' phone boundaries lie apart, on the utterances both aligned (issue 41).

  python3 benchmarks/newspeaker/agreement.py REFERENCE.parquet OTHER.parquet [--json OUT]

Both files are `dv align` outputs (`<recipe out>/aligned/alignments.parquet`: id, phones,
starts, ends in seconds, confidence, quarantined). For a corpus without reference times
(hibari-tts's, made from text) the reference is the aligner trusted most, e.g. the recipe's on
an hour of the same speaker, against one trained on 20 minutes. Utterances whose phone
sequences differ, or that either file quarantined, are counted and skipped. Boundaries are the
ends of every phone but the last; the first (where the leading pause ends, i.e. speech starts)
and the last (where the trailing pause begins) are reported apart from the internal ones, since
CTC does not tie them to a moment (trainers/align/src/boundary.rs).
"""
import argparse
import json
import sys

import numpy as np
import pyarrow.parquet as pq


def load(path):
    return {r["id"]: r for r in pq.read_table(path).to_pylist()}


def summary(ms):
    ms = np.asarray(ms, dtype=float)
    if ms.size == 0:
        return {"boundaries": 0}
    return {
        "boundaries": int(ms.size),
        "mean_ms": round(float(ms.mean()), 1),
        "median_ms": round(float(np.median(ms)), 1),
        "within_20_ms": round(float((ms <= 20).mean()), 3),
    }


def compare(reference, other):
    first, last, internal = [], [], []
    skipped = {"missing": 0, "quarantined": 0, "different_phones": 0}
    for key, ref in reference.items():
        got = other.get(key)
        if got is None:
            skipped["missing"] += 1
            continue
        if ref["quarantined"] or got["quarantined"]:
            skipped["quarantined"] += 1
            continue
        if list(ref["phones"]) != list(got["phones"]):
            skipped["different_phones"] += 1
            continue
        d = np.abs(np.asarray(got["ends"][:-1]) - np.asarray(ref["ends"][:-1])) * 1000.0
        if d.size == 0:
            continue
        first.append(d[0])
        if d.size > 1:
            last.append(d[-1])
        internal.extend(d[1:-1])
    return {
        "utterances": len(first),
        "skipped": skipped,
        "speech_start": summary(first),
        "speech_end": summary(last),
        "internal": summary(internal),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reference")
    ap.add_argument("other")
    ap.add_argument("--json")
    a = ap.parse_args()
    r = compare(load(a.reference), load(a.other))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    print(f"{r['utterances']} utterances compared, skipped {r['skipped']}")
    for part in ("internal", "speech_start", "speech_end"):
        s = r[part]
        if s["boundaries"]:
            print(f"{part:13s} {s['boundaries']:6d} boundaries: mean |diff| {s['mean_ms']:7.1f} ms, "
                  f"median {s['median_ms']:6.1f} ms, within 20 ms {100 * s['within_20_ms']:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Phone-boundary error of the recipe's aligner against festival's own segment times (issue 30).

  python3 benchmarks/newspeaker/boundary.py ALIGNMENTS_PARQUET LAB_DIR [--json OUT]
  python3 benchmarks/newspeaker/boundary.py --self-test LAB_DIR

ALIGNMENTS_PARQUET is `<recipe out>/aligned/alignments.parquet` (columns id, phones, starts,
ends in seconds, confidence, quarantined); LAB_DIR holds `<id>.lab`, xwaves labels as festival's
`utt.save.segs` writes them (make_ked.py's reference/lab): a `#` line, then `end_time colour
phone` per line, each segment starting where the previous one ended (the first at 0).

Festival's radio phones are mapped to the project's inventory exactly as the Rust code does
(`Phoneme::from_festival`, datasets/text/src/phoneme.rs): `pau`/`h#`/`sil`/`ssil`/`brth` -> `sil`,
`ax` -> `AH`, every other phone upper-cased and required to be one of the 39 CMUDict
phonemes (so `axr`, `dx`, `el`, `em`, `en`, `ix`, `nx` are errors there and here).

Per utterance the two phone sequences are aligned by edit distance (Levenshtein: match 0,
substitution/insertion/deletion 1). A reference boundary (between reference phones i-1 and i)
is scored when both phones are paired (match or substitution) with two consecutive aligner
phones j-1 and j; its error is the aligner's boundary time minus festival's (aligner boundary
j = the midpoint of ends[j-1] and starts[j], which are equal in the recipe's output). The
boundary that ends the leading silence (speech start) and the one that begins the trailing
silence (speech end) are reported apart from the internal boundaries, and only scored when the
aligner's paired boundary is its own speech start/end as well. Internal boundaries include
those next to internal pauses (also reported on their own). Quarantined rows are counted and
skipped. Every figure is also given for the utterances whose mapped phone sequences are
identical.

festival's ked voice writes every `er` as two segments, `er r` (the `r` about 47 ms); CMUDict's
`ER` is one. By default those boundaries go unscored (the festival `r` is a deletion);
--merge-er-r joins each festival `er r` into one `ER` segment first (off by default, so the
default mapping stays exactly the Rust one).
"""
import argparse
import collections
import json
import os
import statistics
import sys
import tempfile

SYMBOLS = ["AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G", "HH", "IH",
           "IY", "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T", "TH", "UH", "UW", "V",
           "W", "Y", "Z", "ZH"]
SIL = "sil"
SILENCES = {"pau", "h#", "sil", "ssil", "brth"}
THRESHOLDS_MS = (10, 20, 25)
CATEGORIES = ("internal", "speech_start", "speech_end")


class InputError(Exception):
    pass


def from_festival(symbol):
    """datasets/text/src/phoneme.rs, Phoneme::from_festival (the phoneme; stress is none)."""
    lower = symbol.lower()
    if lower in SILENCES:
        return SIL
    if lower == "ax":
        return "AH"
    if lower.upper() in SYMBOLS:
        return lower.upper()
    raise ValueError(f"unknown phoneme {symbol!r}")


def project_phone(symbol):
    """A phone of the aligner's output: the project's symbol (`AH`, `AH0`, `sil`), or a festival name."""
    s = symbol[:-1] if symbol[-1:].isdigit() else symbol
    if s.lower() == SIL:
        return SIL
    if s.upper() in SYMBOLS:
        return s.upper()
    return from_festival(symbol)


def parse_lab(path):
    """datasets/corpus/src/label.rs, parse_xwaves_lab: [(phone, start, end)], errors naming the file."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: reference label file missing")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise InputError(f"{path}: {e}") from e
    if not any(l.strip() == "#" for l in lines):
        raise InputError(f"{path}: malformed label file: no `#` line ends the header")
    k = next(i for i, l in enumerate(lines) if l.strip() == "#")
    spans, start = [], 0.0
    for i in range(k + 1, len(lines)):
        line = lines[i].split(";")[0].strip()
        if not line:
            continue
        f = line.split()
        if len(f) < 3:
            raise InputError(f"{path}: malformed label file: line {i + 1}: expected `end colour phone`, got {line!r}")
        try:
            end = float(f[0])
        except ValueError:
            raise InputError(f"{path}: malformed label file: line {i + 1}: bad time {f[0]!r}") from None
        if not end == end or end in (float("inf"), float("-inf")) or end < start:
            raise InputError(f"{path}: malformed label file: line {i + 1}: time {end} goes backwards (previous {start})")
        try:
            phone = from_festival(f[2])
        except ValueError as e:
            raise InputError(f"{path}: malformed label file: line {i + 1}: {e}") from None
        spans.append((phone, start, end))
        start = end
    if not spans:
        raise InputError(f"{path}: malformed label file: no segments")
    return spans


def merge_er_r(spans):
    """festival's `er r` as one ER segment (the first `r` after each `er`)."""
    out = []
    for s in spans:
        if s[0] == "R" and out and out[-1][0] == "ER" and not out[-1][3]:
            out[-1] = ("ER", out[-1][1], s[2], True)
        else:
            out.append((s[0], s[1], s[2], False))
    return [(p, a, b) for p, a, b, _ in out]


def read_alignments(path):
    import pyarrow.parquet as pq
    if not os.path.isfile(path):
        raise InputError(f"{path}: alignments file missing")
    t = pq.read_table(path)
    need = {"id", "phones", "starts", "ends"}
    if not need <= set(t.column_names):
        raise InputError(f"{path}: expected columns {sorted(need)}, found {t.column_names}")
    rows = []
    for r in t.to_pylist():
        uid = r["id"]
        phones, starts, ends = r["phones"] or [], r["starts"] or [], r["ends"] or []
        if not (len(phones) == len(starts) == len(ends)):
            raise InputError(f"{path}: {uid}: phones/starts/ends lengths differ "
                             f"({len(phones)}/{len(starts)}/{len(ends)})")
        try:
            phones = [project_phone(p) for p in phones]
        except ValueError as e:
            raise InputError(f"{path}: {uid}: {e}") from None
        rows.append({"id": uid, "phones": phones, "starts": list(starts), "ends": list(ends),
                     "quarantined": bool(r.get("quarantined") or False)})
    return rows


def align(ref, hyp):
    """Levenshtein alignment: ref index -> hyp index for paired phones, and the edit operations."""
    n, m = len(ref), len(hyp)
    d = [list(range(m + 1))]
    for i in range(1, n + 1):
        prev, row, x = d[-1], [i] + [0] * m, ref[i - 1]
        for j in range(1, m + 1):
            row[j] = min(prev[j - 1] + (x != hyp[j - 1]), prev[j] + 1, row[j - 1] + 1)
        d.append(row)
    pair, ops = {}, []
    i, j = n, m
    while i > 0 or j > 0:  # the diagonal first on ties, then deletion, then insertion
        if i > 0 and j > 0 and d[i][j] == d[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            pair[i - 1] = j - 1
            ops.append(("match" if ref[i - 1] == hyp[j - 1] else "sub", ref[i - 1], hyp[j - 1]))
            i, j = i - 1, j - 1
        elif i > 0 and d[i][j] == d[i - 1][j] + 1:
            ops.append(("del", ref[i - 1], None))
            i -= 1
        else:
            ops.append(("ins", None, hyp[j - 1]))
            j -= 1
    return pair, ops[::-1], d[n][m]


def categories(phones):
    """Category of each boundary k (between phones k-1 and k), k = 1..n-1; None inside edge silence."""
    n = len(phones)
    speech = [k for k, p in enumerate(phones) if p != SIL]
    cat = {}
    if not speech:
        return cat
    a, b = speech[0], speech[-1]
    for k in range(1, n):
        if k == a:
            cat[k] = "speech_start"
        elif k == b + 1:
            cat[k] = "speech_end"
        elif a < k <= b:
            cat[k] = "internal"
    return cat


def stats(errors_s, reference):
    e = [x * 1000 for x in errors_s]
    a = [abs(x) for x in e]
    out = {"boundaries": len(e), "reference_boundaries": reference,
           "scorable_fraction": round(len(e) / reference, 4) if reference else None}
    if e:
        out.update({"mean_abs_ms": round(statistics.fmean(a), 2), "median_abs_ms": round(statistics.median(a), 2),
                    "mean_signed_ms": round(statistics.fmean(e), 2)})
        for t in THRESHOLDS_MS:
            out[f"within_{t}ms_pct"] = round(100 * sum(x <= t + 1e-6 for x in a) / len(a), 2)
    return out


def evaluate(alignments, lab_dir, merge=False):
    rows = read_alignments(alignments)
    quarantined = sum(r["quarantined"] for r in rows)
    # per subset ("all", "identical"): per category the errors and the reference boundary count
    acc = {s: {c: ([], 0) for c in CATEGORIES + ("internal_pause_adjacent",)} for s in ("all", "identical")}
    ops_count = collections.Counter()
    subs, dels, ins = collections.Counter(), collections.Counter(), collections.Counter()
    scored = identical = 0
    ref_len = hyp_len = 0
    per_utt = []
    for r in rows:
        if r["quarantined"]:
            continue
        ref = parse_lab(os.path.join(lab_dir, r["id"] + ".lab"))
        if merge:
            ref = merge_er_r(ref)
        rp = [p for p, _, _ in ref]
        rb = {k: ref[k - 1][2] for k in range(1, len(ref))}
        hp, hs, he = r["phones"], r["starts"], r["ends"]
        hb = {j: (he[j - 1] + hs[j]) / 2 for j in range(1, len(hp))}
        pair, ops, dist = align(rp, hp)
        same = rp == hp
        scored += 1
        identical += same
        ref_len += len(rp)
        hyp_len += len(hp)
        for op, a, b in ops:
            ops_count[op] += 1
            if op == "sub":
                subs[f"{a}->{b}"] += 1
            elif op == "del":
                dels[a] += 1
            elif op == "ins":
                ins[b] += 1
        rc, hc = categories(rp), categories(hp)
        errs = []
        for k, c in rc.items():
            keys = [c] + (["internal_pause_adjacent"] if c == "internal" and SIL in (rp[k - 1], rp[k]) else [])
            j = pair.get(k)
            ok = j is not None and pair.get(k - 1) == j - 1 and hc.get(j) == c
            for s in ("all", "identical") if same else ("all",):
                for key in keys:
                    lst, nref = acc[s][key]
                    if ok:
                        lst.append(hb[j] - rb[k])
                    acc[s][key] = (lst, nref + 1)
            if ok and c == "internal":
                errs.append(abs(hb[j] - rb[k]))
        per_utt.append({"id": r["id"], "edit_distance": dist, "identical": same, "ref_phones": len(rp),
                        "hyp_phones": len(hp), "internal_scored": len(errs),
                        "internal_mean_abs_ms": round(1000 * statistics.fmean(errs), 2) if errs else None})
    labs = {f[:-4] for f in os.listdir(lab_dir) if f.endswith(".lab")} if os.path.isdir(lab_dir) else set()
    report = {
        "alignments": alignments,
        "labs": lab_dir,
        "merge_er_r": merge,
        "utterances": {"rows": len(rows), "quarantined": quarantined, "scored": scored, "identical": identical,
                       "labs_without_alignment": len(labs - {r["id"] for r in rows})},
        "sequences": {"reference_phones": ref_len, "aligner_phones": hyp_len,
                      "operations": dict(ops_count),
                      "top_substitutions": subs.most_common(15), "top_deletions_ref_only": dels.most_common(10),
                      "top_insertions_aligner_only": ins.most_common(10)},
    }
    for s in ("all", "identical"):
        report[s] = {c: stats(*acc[s][c]) for c in acc[s]}
    report["per_utterance"] = per_utt
    return report


def line(name, st):
    if not st["boundaries"]:
        return f"  {name:<24} 0 of {st['reference_boundaries']} reference boundaries scorable"
    w = "  ".join(f"<={t}ms {st[f'within_{t}ms_pct']:5.1f}%" for t in THRESHOLDS_MS)
    return (f"  {name:<24} {st['boundaries']:6d}/{st['reference_boundaries']:<6d} ({100 * st['scorable_fraction']:5.1f}%)"
            f"  mean|e| {st['mean_abs_ms']:7.2f} ms  median {st['median_abs_ms']:7.2f}  shift {st['mean_signed_ms']:+8.2f}  {w}")


def summary(rep):
    u, q = rep["utterances"], rep["sequences"]
    out = [f"{rep['alignments']} vs {rep['labs']}" + (" (festival er r merged into ER)" if rep["merge_er_r"] else ""),
           f"utterances: {u['scored']} scored, {u['quarantined']} quarantined (skipped), {u['identical']} with identical "
           f"phone sequences; {u['labs_without_alignment']} labs without an alignment row",
           f"phones: {q['reference_phones']} festival, {q['aligner_phones']} aligner; edit ops {q['operations']}"]
    if q["top_substitutions"]:
        out.append("  substitutions (festival->aligner): " + ", ".join(f"{k} {v}" for k, v in q["top_substitutions"][:10]))
    if q["top_deletions_ref_only"]:
        out.append("  festival only: " + ", ".join(f"{k} {v}" for k, v in q["top_deletions_ref_only"]))
    if q["top_insertions_aligner_only"]:
        out.append("  aligner only: " + ", ".join(f"{k} {v}" for k, v in q["top_insertions_aligner_only"]))
    for s, title in (("all", "all scored utterances"), ("identical", "utterances with identical phone sequences")):
        out.append(f"{title}: boundaries scored/reference (scorable), error = aligner - festival")
        for c in CATEGORIES + ("internal_pause_adjacent",):
            out.append(line(c, rep[s][c]))
    return "\n".join(out)


def write_alignments(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq
    t = pa.table({
        "id": pa.array([r["id"] for r in rows], pa.string()),
        "phones": pa.array([r["phones"] for r in rows], pa.large_list(pa.string())),
        "starts": pa.array([r["starts"] for r in rows], pa.large_list(pa.float64())),
        "ends": pa.array([r["ends"] for r in rows], pa.large_list(pa.float64())),
        "confidence": pa.array([0.0] * len(rows), pa.float64()),
        "quarantined": pa.array([r.get("quarantined", False) for r in rows], pa.bool_()),
    })
    pq.write_table(t, path)


def self_test(lab_dir):
    ids = sorted(f[:-4] for f in os.listdir(lab_dir) if f.endswith(".lab"))
    if not ids:
        raise InputError(f"{lab_dir}: no .lab files")
    labs = {i: parse_lab(os.path.join(lab_dir, i + ".lab")) for i in ids}
    exact = [{"id": i, "phones": [p for p, _, _ in s], "starts": [a for _, a, _ in s], "ends": [b for _, _, b in s]}
             for i, s in labs.items()]
    failures = []

    def check(name, cond, detail):
        print(f"  [{'ok' if cond else 'FAIL'}] {name}: {detail}")
        if not cond:
            failures.append(name)

    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "a.parquet")
        # 1. the labs themselves: zero error, every boundary scorable
        write_alignments(p, exact)
        r = evaluate(p, lab_dir)
        print("1. alignments built from the labs themselves")
        for c in CATEGORIES:
            st = r["all"][c]
            check(f"exact {c}", st["boundaries"] == st["reference_boundaries"] > 0 and st["mean_abs_ms"] < 1e-6,
                  f"{st['boundaries']}/{st['reference_boundaries']} scored, mean|e| {st['mean_abs_ms']} ms")
        check("exact identical", r["utterances"]["identical"] == len(ids), f"{r['utterances']['identical']}/{len(ids)}")
        # 2. every boundary 7 ms late
        shifted = [dict(u, starts=[u["starts"][0]] + [x + 0.007 for x in u["starts"][1:]],
                        ends=[x + 0.007 for x in u["ends"][:-1]] + [u["ends"][-1]]) for u in exact]
        write_alignments(p, shifted)
        r = evaluate(p, lab_dir)
        print("2. every boundary shifted by +7 ms")
        for c in CATEGORIES:
            st = r["all"][c]
            check(f"+7ms {c}", st["boundaries"] == st["reference_boundaries"] and abs(st["mean_signed_ms"] - 7) < 1e-3
                  and abs(st["mean_abs_ms"] - 7) < 1e-3 and abs(st["median_abs_ms"] - 7) < 1e-3
                  and st["within_10ms_pct"] == 100,
                  f"shift {st['mean_signed_ms']:+} ms, mean|e| {st['mean_abs_ms']} ms, <=10ms {st['within_10ms_pct']}%")
        # 3. sequence edits: a substitution keeps both boundaries, a deletion loses two, quarantine skips
        edited, lost, n_sub, n_del = [], 0, 0, 0
        for k, u in enumerate(exact):
            u = dict(u, phones=list(u["phones"]), starts=list(u["starts"]), ends=list(u["ends"]))
            ph = u["phones"]
            mid = len(ph) // 2
            if k % 4 == 1 and ph[mid] != SIL:  # substitution in the middle
                ph[mid] = "ZH" if ph[mid] != "ZH" else "SH"
                n_sub += 1
            elif k % 4 == 2:  # deletion of an internal speech phone unlike both neighbours
                i = next((i for i in range(2, len(ph) - 2) if ph[i] != SIL and SIL not in (ph[i - 1], ph[i + 1])
                          and len({ph[i - 1], ph[i], ph[i + 1]}) == 3), None)
                if i is not None:
                    u["ends"][i - 1] = u["ends"][i]
                    del ph[i], u["starts"][i], u["ends"][i]
                    lost += 2
                    n_del += 1
            elif k % 4 == 3:
                u["quarantined"] = True
            edited.append(u)
        nq = sum(u.get("quarantined", False) for u in edited)
        write_alignments(p, edited)
        r = evaluate(p, lab_dir)
        ref_internal = sum(list(categories([x for x, _, _ in labs[u["id"]]]).values()).count("internal")
                           for u in edited if not u.get("quarantined"))
        st = r["all"]["internal"]
        print(f"3. {n_sub} substitutions, {n_del} deletions, {nq} quarantined")
        check("quarantined counted", r["utterances"]["quarantined"] == nq and r["utterances"]["scored"] == len(ids) - nq,
              f"{r['utterances']['quarantined']} quarantined, {r['utterances']['scored']} scored")
        check("identical subset", r["utterances"]["identical"] == len(ids) - nq - n_sub - n_del,
              f"{r['utterances']['identical']} identical")
        check("deletions lose two boundaries each", st["reference_boundaries"] == ref_internal
              and st["boundaries"] == ref_internal - lost and st["mean_abs_ms"] < 1e-6,
              f"{st['boundaries']}/{st['reference_boundaries']} internal scored (expected {ref_internal - lost}), "
              f"mean|e| {st['mean_abs_ms']} ms")
        # 4. --merge-er-r: alignments with one ER where festival has `er r`
        merged = []
        for u in exact:
            m = merge_er_r(list(zip(u["phones"], u["starts"], u["ends"])))
            merged.append({"id": u["id"], "phones": [x for x, _, _ in m], "starts": [a for _, a, _ in m],
                           "ends": [b for _, _, b in m]})
        write_alignments(p, merged)
        r, plain = evaluate(p, lab_dir, merge=True), evaluate(p, lab_dir)
        n_er = sum(u["phones"].count("ER") for u in merged)
        print(f"4. festival's `er r` merged ({n_er} ER)")
        st, sp = r["all"]["internal"], plain["all"]["internal"]
        check("merged exact", st["boundaries"] == st["reference_boundaries"] and st["mean_abs_ms"] < 1e-6
              and r["utterances"]["identical"] == len(ids),
              f"{st['boundaries']}/{st['reference_boundaries']} scored, mean|e| {st['mean_abs_ms']} ms")
        check("unmerged loses the er-r boundaries", sp["boundaries"] < sp["reference_boundaries"] and sp["mean_abs_ms"] < 1e-6,
              f"without --merge-er-r: {sp['boundaries']}/{sp['reference_boundaries']} scored, mean|e| {sp['mean_abs_ms']} ms")
        # 5. errors name the file
        write_alignments(p, exact[:1] + [dict(exact[0], id="no_such_utterance")])
        try:
            evaluate(p, lab_dir)
            check("missing lab", False, "no error")
        except InputError as e:
            check("missing lab", "no_such_utterance.lab" in str(e), str(e))
        bad = os.path.join(tmp, "labs")
        os.makedirs(bad)
        with open(os.path.join(bad, exact[0]["id"] + ".lab"), "w") as f:
            f.write("#\n0.1 100 pau\n0.2 100 qq\n")
        write_alignments(p, exact[:1])
        try:
            evaluate(p, bad)
            check("malformed lab", False, "no error")
        except InputError as e:
            check("malformed lab", exact[0]["id"] + ".lab" in str(e) and "line 3" in str(e), str(e))
    print("self-test", "FAILED: " + ", ".join(failures) if failures else "passed")
    return not failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("alignments", nargs="?", help="<recipe out>/aligned/alignments.parquet")
    ap.add_argument("lab_dir", nargs="?", help="festival's reference labels, <id>.lab")
    ap.add_argument("--json", help="write the report (with per-utterance rows) here")
    ap.add_argument("--merge-er-r", action="store_true", help="join festival's `er r` into one ER segment first")
    ap.add_argument("--self-test", metavar="LAB_DIR", help="check the scorer on alignments built from LAB_DIR")
    a = ap.parse_args()
    try:
        if a.self_test:
            sys.exit(0 if self_test(a.self_test) else 1)
        if not a.alignments or not a.lab_dir:
            ap.error("ALIGNMENTS_PARQUET and LAB_DIR are required (or --self-test LAB_DIR)")
        rep = evaluate(a.alignments, a.lab_dir, merge=a.merge_er_r)
    except InputError as e:
        sys.exit(f"boundary.py: {e}")
    print(summary(rep))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rep, f, indent=1)
        print(f"wrote {a.json}")


if __name__ == "__main__":
    main()

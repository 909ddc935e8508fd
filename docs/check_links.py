#!/usr/bin/env python3
"""Check the relative links of Markdown files: every target must exist, and every
`#anchor` must name a heading of its target (GitHub's heading slugs).

    python3 docs/check_links.py                 # README.md and docs/*.md
    python3 docs/check_links.py FILE.md ...     # the files given

Also reports repository paths written in backticks (`inference/voices/slt`) that do
not exist, as warnings. Exit status 1 when a link is broken.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_PATH = re.compile(r"`((?:datasets|pipeline|trainers|inference|infra|benchmarks|docs|\.ci)/[^`\s*{}<>…]*)`")
TOP_DIRS = ("datasets/", "pipeline/", "trainers/", "inference/", "infra/", "benchmarks/", "docs/", ".ci/")


def slug(heading: str) -> str:
    text = re.sub(r"`|\*\*|\*|_(?=\W)|\[|\]\([^)]*\)", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: str) -> set:
    seen = {}
    out = set()
    fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                out.add(s if n == 0 else f"{s}-{n}")
    return out


def strip_code(text: str) -> str:
    # links inside fenced code blocks are not links
    return re.sub(r"```.*?```", "", text, flags=re.S)


def check(md: str) -> tuple:
    errors, warnings = [], []
    base = os.path.dirname(os.path.abspath(md))
    rel = os.path.relpath(os.path.abspath(md), ROOT)
    with open(md, encoding="utf-8") as f:
        text = f.read()
    for target in LINK.findall(strip_code(text)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, frag = target.partition("#")
        full = os.path.normpath(os.path.join(base, path)) if path else os.path.abspath(md)
        if not os.path.exists(full):
            errors.append(f"{rel}: {target}: {os.path.relpath(full, ROOT)} does not exist")
            continue
        if frag and full.endswith(".md") and frag not in anchors(full):
            errors.append(f"{rel}: {target}: no heading #{frag} in {os.path.relpath(full, ROOT)}")
    for p in set(CODE_PATH.findall(text)):
        p = p.rstrip(".,;:)")
        if p.startswith(TOP_DIRS) and not os.path.exists(os.path.join(ROOT, p)):
            warnings.append(f"{rel}: `{p}` is not a path in the repository")
    return errors, warnings


def main(argv):
    files = argv or [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md")
    )
    errors, warnings, links = [], [], 0
    for md in files:
        with open(md, encoding="utf-8") as f:
            links += len(LINK.findall(strip_code(f.read())))
        e, w = check(md)
        errors += e
        warnings += w
    for w in warnings:
        print("warning:", w)
    for e in errors:
        print("broken:", e)
    print(f"{len(files)} files, {links} links, {len(errors)} broken, {len(warnings)} warnings")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

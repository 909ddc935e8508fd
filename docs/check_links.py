#!/usr/bin/env python3
"""Check the relative links of Markdown files: every target must exist, and every
`#anchor` must name a heading of its target (GitHub's heading slugs).

    python3 docs/check_links.py                 # README.md, docs/*.md, benchmarks/README.md
    python3 docs/check_links.py FILE.md ...     # the files given

Every repository path written in backticks (`inference/voices/slt`, anything under
datasets/, pipeline/, trainers/, inference/, infra/, benchmarks/, docs/, .ci/) must exist
too; a path with braces names each of its expansions, as the shell's brace expansion does
(`pipeline/audio/src/{pitch,mulaw}.rs` is two paths, each checked). And the benchmarks'
index, benchmarks/README.md, must name every file git tracks under benchmarks/ (by a link, a
path in backticks, or a glob in backticks such as `newspeaker/hibari-*.toml`). Exit status 1
when a link, a path or an index entry is missing. `infra/run test` runs it before the tests.
"""
import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_PATH = re.compile(r"`((?:datasets|pipeline|trainers|inference|infra|benchmarks|docs|\.ci)/[^`\s*<>…]*)`")
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


def expand_braces(path: str) -> list:
    """Every expansion of the first `{a,b,...}` group, recursively, as the shell does:
    `a/{b,c}/{d,e}.rs` is four paths. Nested groups are expanded too; a group with no
    comma, or an unmatched brace, is left as written."""
    start = path.find("{")
    while start != -1:
        depth, parts, begin = 0, [], start + 1
        for i in range(start, len(path)):
            c = path[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    parts.append(path[begin:i])
                    if len(parts) > 1:
                        head, tail = path[:start], path[i + 1 :]
                        return [e for p in parts for e in expand_braces(head + p + tail)]
                    break
            elif c == "," and depth == 1:
                parts.append(path[begin:i])
                begin = i + 1
        else:
            return [path]  # unmatched brace
        start = path.find("{", start + 1)
    return [path]


def strip_code(text: str) -> str:
    # links inside fenced code blocks are not links
    return re.sub(r"```.*?```", "", text, flags=re.S)


def check(md: str) -> list:
    errors = []
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
    for written in sorted(set(CODE_PATH.findall(text))):
        for p in expand_braces(written.rstrip(".,;:)")):
            if p.startswith(TOP_DIRS) and not os.path.exists(os.path.join(ROOT, p)):
                shown = p if p == written else f"{p} (from {written})"
                errors.append(f"{rel}: `{shown}` is not a path in the repository")
    return errors


def unindexed_benchmarks() -> list:
    """Files git tracks under benchmarks/ that benchmarks/README.md does not name."""
    index = os.path.join(ROOT, "benchmarks", "README.md")
    try:
        tracked = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "benchmarks"], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return []  # not a git checkout: nothing to compare with
    with open(index, encoding="utf-8") as f:
        text = f.read()
    named = set()
    for target in LINK.findall(text):
        named.add(os.path.normpath(os.path.join("benchmarks", target.partition("#")[0])))
    patterns = [os.path.join("benchmarks", p) for p in re.findall(r"`([^`\s]+)`", text)]
    missing = []
    for path in tracked:
        if path == "benchmarks/README.md" or path in named:
            continue
        if not any(fnmatch.fnmatch(path, p) for p in patterns):
            missing.append(f"benchmarks/README.md: `{path}` is not in the index")
    return missing


def main(argv):
    files = argv or (
        [os.path.join(ROOT, "README.md")]
        + sorted(os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
        + [os.path.join(ROOT, "benchmarks", "README.md")]
    )
    errors, links = [], 0
    for md in files:
        with open(md, encoding="utf-8") as f:
            links += len(LINK.findall(strip_code(f.read())))
        errors += check(md)
    if not argv:
        errors += unindexed_benchmarks()
    for e in errors:
        print("broken:", e)
    print(f"{len(files)} files, {links} links, {len(errors)} broken")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

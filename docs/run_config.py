#!/usr/bin/env python3
"""Writes docs/run-config.md, every key of a `dv train` run config, from the source that
parses it (infra/config/src/*.rs): the example in run.rs's module docs, then one table per
section with each field's type, default and doc comment as the structs declare them.

    python3 docs/run_config.py            # rewrite docs/run-config.md
    python3 docs/run_config.py --check    # exit 1 if docs/run-config.md is not what it would write

`infra/run test` runs the check, so the page cannot drift from the code: a field added,
renamed or documented in infra/config changes the page, and the check fails until the page
is written again.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "infra", "config", "src")
PAGE = os.path.join(ROOT, "docs", "run-config.md")

# The page's sections: a heading, the file and the struct whose fields are its keys, and the
# `[data] kind` that selects the struct. A `[model.sizes]` table is read through a private
# serde shape (`G2pToml`, ...); the public struct it converts to (`PUBLIC`) documents it.
SECTIONS = [
    ("`[model]`", None, None, None),
    ('`[model.sizes]` with `kind = "segmentation"`', "segmentation.rs", "SegmentationConfig", None),
    ('`[model.sizes]` with `kind = "g2p"`', "g2p.rs", "G2pToml", None),
    ('`[model.sizes]` with `kind = "duration"`', "duration.rs", "DurationToml", None),
    ('`[model.sizes]` with `kind = "wavenet"`', "wavenet.rs", "WavenetToml", None),
    ('`[data]` with `kind = "synthetic"`', "data.rs", "SyntheticConfig", "synthetic"),
    ('`[data]` with `kind = "features"`', "data.rs", "FeaturesConfig", "features"),
    ('`[data]` with `kind = "chunks"`', "data.rs", "ChunksConfig", "chunks"),
    ('`[data]` with `kind = "prosody"`', "data.rs", "ProsodyConfig", "prosody"),
    ('`[data]` with `kind = "lexicon"`', "data.rs", "LexiconConfig", "lexicon"),
    ("`[optimizer]`", "optim.rs", "AdamConfig", None),
    ("`[schedule]`", "optim.rs", "StepAnnealing", None),
    ("`[train]`", "run.rs", "TrainConfig", None),
    ("`[checkpoint]`", "run.rs", "CheckpointConfig", None),
    ("`[init]` (optional)", "run.rs", "InitConfig", None),
    ("`[tracking]` (optional)", "run.rs", "TrackingConfig", None),
]
PUBLIC = {"G2pToml": "G2pConfig", "DurationToml": "DurationConfig", "WavenetToml": "WavenetConfig"}


def read(name: str) -> str:
    with open(os.path.join(SRC, name), encoding="utf-8") as f:
        return f.read()


def module_docs(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("//!"):
            break
        lines.append(line[4:] if line.startswith("//! ") else line[3:])
    return "\n".join(lines).strip()


def block(text: str, header: str) -> tuple:
    """The doc comment above `header` and the body between its braces."""
    at = text.index(header)
    at = text.rfind("\n", 0, at) + 1  # the line's start, before `pub`
    docs = []
    for line in reversed(text[:at].splitlines()):
        s = line.strip()
        if s.startswith("///"):
            docs.append(s[4:] if s.startswith("/// ") else s[3:])
        elif s.startswith("#[") or not s:
            if not s and docs:
                break
            continue
        else:
            break
    start = text.index("{", at)
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return " ".join(reversed(docs)), text[start + 1 : i]
    raise ValueError(f"unclosed {header}")


def fields(body: str) -> list:
    """(name, type, serde attributes, doc) for each field of a struct body."""
    out, docs, attrs = [], [], []
    for line in body.splitlines():
        s = line.strip()
        if s.startswith("///"):
            docs.append(s[4:] if s.startswith("/// ") else s[3:])
        elif s.startswith("#[serde("):
            attrs.append(s[len("#[serde(") : -2])
        elif s.startswith("#["):
            continue
        else:
            m = re.match(r"(?:pub(?:\(crate\))?\s+)?(\w+):\s*(.+?),?$", s)
            if m:
                out.append((m.group(1), m.group(2), ", ".join(attrs), " ".join(docs)))
            docs, attrs = [], []
    return out


def toml_type(rust: str) -> str:
    m = re.fullmatch(r"Option<(.+)>", rust)
    if m:
        return toml_type(m.group(1))
    m = re.fullmatch(r"\[(\w+);\s*(\d+)\]", rust)
    if m:
        return "[" + ", ".join([toml_type(m.group(1))] * int(m.group(2))) + "]"
    m = re.fullmatch(r"\((.+)\)", rust)
    if m:
        return "[" + ", ".join(toml_type(t.strip()) for t in m.group(1).split(",")) + "]"
    if rust in ("usize", "u64", "u32", "i64", "i32"):
        return "integer"
    if rust in ("f64", "f32"):
        return "float"
    if rust in ("String", "PathBuf"):
        return "string"
    return rust


def default(text: str, rust: str, attrs: str, doc: str) -> str:
    m = re.search(r'default\s*=\s*"(\w+)"', attrs)
    if m:
        f = re.search(r"fn " + m.group(1) + r"\(\)[^{]*\{\s*(.*?)\s*\}", text, re.S)
        value = f.group(1) if f else m.group(1) + "()"
        value = re.sub(r'^"(.*)"\.into\(\)$', r'"\1"', value)
        return f"`{value}`"
    if not re.search(r"\bdefault\b", attrs):
        return "required"
    if rust.startswith("Option<"):
        d = re.search(r"Default: (.*?)(?: \(|\.(?=\s)|\.?$)", doc)
        return d.group(1) if d else "optional"
    return {"bool": "`false`", "String": '`""`'}.get(rust, "`0`")


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def example_comments(run: str) -> dict:
    """`(section, key) -> comment` from the trailing comments of run.rs's example."""
    out, section = {}, None
    for line in module_docs(run).splitlines():
        m = re.match(r"\[(\w+)\]", line)
        if m:
            section = m.group(1)
        m = re.match(r"(\w+) = [^#]*#\s*(.+)$", line)
        if m and section:
            out[(section, m.group(1))] = m.group(2).strip()
    return out


def table(text: str, struct: str, lead: list, comments: dict) -> list:
    doc, body = block(text, f"struct {struct} ")
    rows = fields(body)
    if struct in PUBLIC:
        # The private shape's own docs say why it exists; the public struct says what it holds,
        # with each optional key's default as "`key` (value)".
        doc, public = block(text, f"struct {PUBLIC[struct]} ")
        public_docs = {n: d for n, _, _, d in fields(public)}
        given = dict(re.findall(r"`(\w+)` \(([^)]*)\)", doc))
        rows = [(n, t, a, d or public_docs.get(n, "")) for n, t, a, d in rows]
    else:
        given = {}
    keys = []
    for n, t, a, d in rows:
        if "flatten" in a:
            continue
        value = default(text, t, a, d)
        if t.startswith("Option<") and n in given:
            value = f"`{given[n]}`"
        meaning = re.sub(r"^Default: [^(]*?(?: \([^)]*\))?\.$", "", d)  # said by the default column
        keys.append((n, toml_type(t), value, meaning or comments.get(n, "")))
    out = [doc, ""] if doc else []
    rows = lead + keys
    out += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
    out += [f"| `{n}` | {t} | {d} | {cell(m)} |" for n, t, d, m in rows]
    return out


def presets(run: str) -> str:
    """Each family's preset names (from the errors that list them) and its sizes without either."""
    names = dict(re.findall(r'unknown (\w+) preset \{p:\?\} \(([^)]*)\)', run))
    voice = open(os.path.join(ROOT, "inference", "voice", "src", "config.rs"), encoding="utf-8").read()
    table2 = re.findall(r'\("(\w+)", WavenetConfig::table2', voice)
    parts = []
    for family in ("segmentation", "g2p", "duration", "wavenet"):
        listed = names.get(family, "")
        if "preset_names" in listed or family == "wavenet":
            listed = ", ".join(table2 + ["paper", "tiny"])
        fn = re.search(r"fn " + family + r"_sizes.*?\(None, None\) => Ok\((.*?)\),\n", run, re.S)
        if fn:
            t2 = re.search(r"table2\((\d+), (\d+), (\d+)\)", fn.group(1))
            fallback = "x".join(t2.groups()) if t2 else re.sub(r".*::(\w+)\(\)$", r"\1", fn.group(1))
        else:
            fallback = "?"
        shown = ", ".join(f"`{n.strip()}`" for n in listed.split(","))
        parts.append(f"{family}: {shown} (neither `preset` nor `sizes`: `{fallback}`)")
    return "; ".join(parts)


def page() -> str:
    run = read("run.rs")
    out = [
        "# Run config keys",
        "",
        "<!-- Written by docs/run_config.py from infra/config/src/*.rs; edit those, then run",
        "     `python3 docs/run_config.py`. `infra/run test` fails while this page is stale. -->",
        "",
        "Every key of the TOML file `dv train --config run.toml` reads (and each training stage of",
        "`dv recipe` writes), generated from the `dv-config` crate that parses it",
        "(`infra/config/src/`). A key not listed is an error that names it. Working examples:",
        "`trainers/train/configs/` and the recipes' presets in `infra/recipes/`.",
        "",
        module_docs(run),
        "",
    ]
    _, model = block(run, "enum ModelConfig ")
    kinds = re.findall(r"^\s{4}(\w+) \{", model, re.M)
    comments = {}
    for (section, key), text in example_comments(run).items():
        comments.setdefault(section, {})[key] = text
    for title, file, struct, kind in SECTIONS:
        out += [f"## {title}", ""]
        if file is None:
            out += [
                "| key | type | default | meaning |",
                "| --- | --- | --- | --- |",
                "| `kind` | string | required | the model family: "
                + ", ".join(f'`"{k.lower()}"`' for k in kinds)
                + " |",
                "| `preset` | string | optional | a named size of the family; `[model.sizes]`, when given, "
                "is used instead. " + presets(run) + " |",
                "| `sizes` | table | optional | the family's sizes, below |",
                "",
            ]
            continue
        text = read(file)
        lead = []
        if kind is not None:
            lead = [("kind", "string", "required", f'`"{kind}"`')]
            if kind == "synthetic":
                _, data = block(run, "enum DataConfig ")
                variant = data[data.index("Synthetic {") :]
                lead += [
                    (n, toml_type(t), default(run, t, a, d), d)
                    for n, t, a, d in fields(variant[: variant.index("}")])
                    if "flatten" not in a
                ]
        section = "data" if kind else re.match(r"`\[(\w+)", title).group(1)
        out += table(text, struct, lead, comments.get(section, {})) + [""]
    return "\n".join(out).rstrip() + "\n"


def main(argv) -> int:
    text = page()
    if argv == ["--check"]:
        with open(PAGE, encoding="utf-8") as f:
            if f.read() == text:
                print("docs/run-config.md is up to date")
                return 0
        print("docs/run-config.md is stale: run python3 docs/run_config.py", file=sys.stderr)
        return 1
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

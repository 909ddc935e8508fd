#!/usr/bin/env python3
"""Shrinks a `dv train` checkpoint for carrying between GPU machines, and restores it.

  ckpt_pack.py pack   IN.safetensors OUT.packed     # Adam's moments (adam.*) in bfloat16
  ckpt_pack.py unpack IN.packed OUT.safetensors     # back to float32, dv.crc32 recomputed

The weights (model.*) stay float32 bit for bit; Adam's first and second moments are rounded to
bfloat16 (round to nearest even; the float32 exponent range, so small second moments do not
underflow as they would in binary16), which makes a (40, 64, 256) WaveNet checkpoint 44.5 MB →
about 27 MB before xz. Training resumed from an unpacked checkpoint sees moments within 0.4 %
of the saved ones. The file layout is safetensors with dv's metadata (trainers/train/src/
checkpoint.rs: `dv.state`, and `dv.crc32` = CRC-32 of every tensor's stored bytes in name order).
numpy only: it runs on the GPU machine's Python.
"""
import json
import struct
import sys
import zlib

import numpy as np


def read(path):
    buf = open(path, "rb").read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = buf[8 + n:]
    tensors = {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}
    return meta, tensors


def write(path, meta, tensors):
    names = sorted(tensors)
    header, offset, crc = {}, 0, 0
    for k in names:
        dtype, shape, raw = tensors[k]
        header[k] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        crc = zlib.crc32(raw, crc)
    meta = dict(meta, **{"dv.crc32": f"{crc:08x}"})
    header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for k in names:
            f.write(tensors[k][2])
    import os
    os.replace(path + ".tmp", path)


def to_bf16(raw):
    u = np.frombuffer(raw, dtype="<u4").astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
    return r.tobytes()


def from_bf16(raw):
    return (np.frombuffer(raw, dtype="<u2").astype("<u4") << 16).tobytes()


def main():
    mode, src, dst = sys.argv[1:4]
    meta, tensors = read(src)
    out = {}
    for k, (dtype, shape, raw) in tensors.items():
        if mode == "pack" and k.startswith("adam.") and dtype == "F32":
            out[k] = ("BF16", shape, to_bf16(raw))
        elif mode == "unpack" and dtype == "BF16":
            out[k] = ("F32", shape, from_bf16(raw))
        else:
            out[k] = (dtype, shape, raw)
    write(dst, meta, out)
    print(f"{mode}: {src} → {dst}: {sum(len(v[2]) for v in out.values()) / 1e6:.1f} MB of tensors")


if __name__ == "__main__":
    main()

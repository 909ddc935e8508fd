"""Largest difference between the model tensors of two dv-train checkpoints
(safetensors: 8-byte header length, JSON header, raw little-endian data)."""
import json, struct, sys
import numpy as np

def load(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    data = b[8 + n:]
    out = {}
    for k, v in head.items():
        if k == "__metadata__" or not k.startswith("model."):
            continue
        s, e = v["data_offsets"]
        out[k] = np.frombuffer(data[s:e], dtype="<f4").reshape(v["shape"])
    return out

a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys()
worst_abs = max(float(np.abs(a[k] - b[k]).max()) for k in a)
worst_rel = max(float((np.abs(a[k] - b[k]) / (1.0 + np.abs(a[k]))).max()) for k in a)
scale = max(float(np.abs(a[k]).max()) for k in a)
print(json.dumps({"tensors": len(a), "parameters": int(sum(x.size for x in a.values())),
                  "max_abs_diff": worst_abs, "max_rel_diff": worst_rel, "max_abs_param": scale}))

"""Where the WaveNet training step's time goes on a GPU: the (40, 64, 256) model of
trainers/train/src/wavenet.rs rebuilt op for op in PyTorch (conditioning omitted: a few
ms), timed forward+backward at batch 8 × 20480 samples in several formulations.
Usage: python3 ops.py OUT_JSON"""
import json, sys, time
import torch
import torch.nn.functional as F

dev = "cuda"
b, r, s, a, L, hop = 8, 64, 256, 256, 40, 64
N = 20480
Fr = N // hop
dil = [2 ** (i % 10) for i in range(L)]

def params():
    g = torch.Generator(device="cpu").manual_seed(0)
    def u(*shape, fan):
        return ((torch.rand(*shape, generator=g) * 2 - 1) / fan ** 0.5).to(dev).requires_grad_()
    P = {"ec": u(a, r, fan=1), "ep": u(a, r, fan=1),
         "wp": [u(2 * r, r, fan=2 * r) for _ in range(L)], "wc": [u(2 * r, r, fan=2 * r) for _ in range(L)],
         "b": [u(2 * r, fan=1e6) for _ in range(L)], "wr": [u(r, r, fan=r) for _ in range(L)],
         "br": [u(r, fan=1e6) for _ in range(L)], "ws": u(s, L * r, fan=L * r), "bs": u(s, fan=1e6),
         "w1": u(a, s, fan=s), "b1": u(a, fan=1e6), "w2": u(a, a, fan=a), "b2": u(a, fan=1e6)}
    return P

def conv_form(P, y, cond):
    """channels-first conv1d, as wavenet.rs does"""
    pad = torch.cat([torch.full((b, 2), 128, device=dev, dtype=torch.long), y], 1)
    x = (F.embedding(pad[:, 1:N + 1], P["ec"]) + F.embedding(pad[:, :N], P["ep"])).transpose(1, 2).contiguous()
    skip = 0
    for i, d in enumerate(dil):
        w = torch.stack([P["wp"][i], P["wc"][i]], 2)
        hp = F.conv1d(F.pad(x, (d, 0)), w, P["b"][i], 1, 0, d)
        li = cond[:, :, i * 2 * r:(i + 1) * 2 * r].transpose(1, 2).unsqueeze(3)
        hp = (hp.view(b, 2 * r, Fr, hop) + li).view(b, 2 * r, N)
        h = torch.tanh(hp[:, :r]) * torch.sigmoid(hp[:, r:])
        skip = skip + F.conv1d(h, P["ws"][:, i * r:(i + 1) * r].unsqueeze(2))
        if i + 1 < L:
            x = x + F.conv1d(h, P["wr"][i].unsqueeze(2), P["br"][i])
    zs = F.relu(skip + P["bs"].view(1, -1, 1))
    za = F.relu(F.conv1d(zs, P["w1"].unsqueeze(2), P["b1"]))
    return F.conv1d(za, P["w2"].unsqueeze(2), P["b2"])

def matmul_form(P, y, cond):
    """time-major [b, N, c] with matmuls; skip from one matmul over all layers' h"""
    pad = torch.cat([torch.full((b, 2), 128, device=dev, dtype=torch.long), y], 1)
    x = F.embedding(pad[:, 1:N + 1], P["ec"]) + F.embedding(pad[:, :N], P["ep"])  # [b, N, r]
    hs = []
    for i, d in enumerate(dil):
        xp = F.pad(x, (0, 0, d, 0))[:, :N]
        w = torch.cat([P["wp"][i], P["wc"][i]], 1)  # [2r, 2r]
        hp = torch.cat([xp, x], 2) @ w.t() + P["b"][i]
        li = cond[:, :, i * 2 * r:(i + 1) * 2 * r].unsqueeze(2)  # [b, F, 1, 2r]
        hp = (hp.view(b, Fr, hop, 2 * r) + li).view(b, N, 2 * r)
        h = torch.tanh(hp[..., :r]) * torch.sigmoid(hp[..., r:])
        hs.append(h)
        if i + 1 < L:
            x = x + h @ P["wr"][i].t() + P["br"][i]
    zs = F.relu(torch.cat(hs, 2) @ P["ws"].t() + P["bs"])
    za = F.relu(zs @ P["w1"].t() + P["b1"])
    return (za @ P["w2"].t() + P["b2"]).transpose(1, 2)

def step(form, P, y, cond, amp):
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
        logits = form(P, y, cond)
    loss = F.cross_entropy(logits.float(), y)
    loss.backward()

def time_it(name, fn, n=10):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) / n * 1000
    print(f"{name}: {ms:.1f} ms fwd+bwd", flush=True)
    return ms

res = {}
P = params()
y = torch.randint(256, (b, N), device=dev)
cond = torch.randn(b, Fr, L * 2 * r, device=dev, requires_grad=True)
for bench in [False, True]:
    torch.backends.cudnn.benchmark = bench
    for tf32 in [False, True]:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        for form in ["conv", "matmul"]:
            for amp in [False, True]:
                if amp and tf32:
                    continue
                f = conv_form if form == "conv" else matmul_form
                name = f"{form} cudnn_benchmark={bench} tf32={tf32} bf16={amp}"
                res[name] = time_it(name, lambda: step(f, P, y, cond, amp))
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = True
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(3):
        step(conv_form, P, y, cond, False)
    torch.cuda.synchronize()
table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=15)
print(table)
res["profile_conv_default"] = table
print("peak MiB", torch.cuda.max_memory_allocated() / 2**20)
json.dump(res, open(sys.argv[1], "w"), indent=1)

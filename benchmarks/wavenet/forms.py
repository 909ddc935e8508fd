"""Formulations of the WaveNet training step (issue 7's speed goal), timed forward + backward in
PyTorch on the GPU: the (40, 64, 256) model of trainers/train/src/wavenet.rs in bf16 weights and
activations (as `bf16 = true` runs it), conditioning given, at batch 8 (one GPU) and 4 (each of
two GPUs) × 20480 samples.

  rust      the op sequence wavenet.rs ran until this record: pad+narrow for x(t-d), cat, matmul,
            + bias, + L, narrow → tanh · sigmoid, residual matmul + bias + add
  lean      bias folded into L at the frame rate, chunk instead of two narrows (one cat in the
            backward instead of two zero-filled slices and an add), residual through addmm
  split     lean, and no cat of [x(t-d), x]: one matmul x·[Wc; Wp]ᵀ, the x(t-d) half shifted by a
            pad and added
  compiled  lean under torch.compile (Inductor fuses the elementwise chain): what a fused gate
            kernel with its own backward would give
  graphed   lean captured in a CUDA graph (launch overhead removed)

Usage: python3 forms.py OUT_JSON"""
import json, sys, time
import torch
import torch.nn.functional as F

dev, dt = "cuda", torch.bfloat16
r, s, a, L, hop, N = 64, 256, 256, 40, 64, 20480
Fr = N // hop
dil = [2 ** (i % 10) for i in range(L)]


def params():
    g = torch.Generator(device="cpu").manual_seed(0)

    def u(*shape, fan):
        return ((torch.rand(*shape, generator=g) * 2 - 1) / fan ** 0.5).to(dev, dt).requires_grad_()

    return {"ec": u(a, r, fan=1), "ep": u(a, r, fan=1), "e0": u(r, fan=1e6),
            "wp": [u(2 * r, r, fan=2 * r) for _ in range(L)], "wc": [u(2 * r, r, fan=2 * r) for _ in range(L)],
            "b": [u(2 * r, fan=1e6) for _ in range(L)], "wr": [u(r, r, fan=r) for _ in range(L - 1)],
            "br": [u(r, fan=1e6) for _ in range(L - 1)], "ws": u(s, L * r, fan=L * r), "bs": u(s, fan=1e6),
            "w1": u(a, s, fan=s), "b1": u(a, fan=1e6), "w2": u(a, a, fan=a), "b2": u(a, fan=1e6)}


def embed(P, y):
    b = y.shape[0]
    pad = torch.cat([torch.full((b, 2), 128, device=dev, dtype=torch.long), y], 1)
    return F.embedding(pad[:, 1:N + 1], P["ec"]) + F.embedding(pad[:, :N], P["ep"]) + P["e0"]


def head(P, hs):
    zs = F.relu(torch.cat(hs, 2) @ P["ws"].t() + P["bs"])
    za = F.relu(zs @ P["w1"].t() + P["b1"])
    return za @ P["w2"].t() + P["b2"]


def rust_form(P, y, cond):
    b = y.shape[0]
    x, hs = embed(P, y), []
    for i, d in enumerate(dil):
        past = F.pad(x, (0, 0, d, 0))[:, :N]
        w = torch.cat([P["wp"][i], P["wc"][i]], 1)
        hp = torch.cat([past, x], 2) @ w.t() + P["b"][i]
        li = cond[:, :, i * 2 * r:(i + 1) * 2 * r].unsqueeze(2)
        hp = (hp.view(b, Fr, hop, 2 * r) + li).view(b, N, 2 * r)
        h = torch.tanh(hp[..., :r]) * torch.sigmoid(hp[..., r:])
        if i + 1 < L:
            x = x + (h @ P["wr"][i].t() + P["br"][i])
        hs.append(h)
    return head(P, hs)


def lean_form(P, y, cond, split=False):
    b = y.shape[0]
    x, hs = embed(P, y), []
    for i, d in enumerate(dil):
        li = (cond[:, :, i * 2 * r:(i + 1) * 2 * r] + P["b"][i]).unsqueeze(2)  # bias at the frame rate
        if split:
            yy = x @ torch.cat([P["wc"][i], P["wp"][i]], 0).t()  # [b, N, 4r]
            cur, pst = yy.chunk(2, 2)
            hp = cur + F.pad(pst, (0, 0, d, 0))[:, :N]
        else:
            past = F.pad(x, (0, 0, d, 0))[:, :N]
            hp = torch.cat([past, x], 2) @ torch.cat([P["wp"][i], P["wc"][i]], 1).t()
        hp = (hp.view(b, Fr, hop, 2 * r) + li).view(b, N, 2 * r)
        ta, sb = hp.chunk(2, 2)
        h = torch.tanh(ta) * torch.sigmoid(sb)
        if i + 1 < L:
            x = torch.addmm(x.reshape(-1, r), h.reshape(-1, r), P["wr"][i].t(), beta=1).view(b, N, r) + P["br"][i]
        hs.append(h)
    return head(P, hs)


def step(form, P, y, cond):
    logits = form(P, y, cond)
    loss = F.cross_entropy(logits.float().reshape(-1, a), y.reshape(-1))
    loss.backward()
    return loss


def time_it(name, fn, n=15):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) / n * 1000
    print(f"{name}: {ms:.1f} ms fwd+bwd, peak {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB", flush=True)
    torch.cuda.reset_peak_memory_stats()
    return ms


res = {}
P = params()
leaves = [t for v in P.values() for t in (v if isinstance(v, list) else [v])]
for b in [8, 4]:
    y = torch.randint(256, (b, N), device=dev)
    cond = torch.randn(b, Fr, L * 2 * r, device=dev, dtype=dt, requires_grad=True)
    # The forms are the same function: check it before timing.
    ref = rust_form(P, y, cond).float()
    for name, f in [("lean", lambda P, y, c: lean_form(P, y, c)), ("split", lambda P, y, c: lean_form(P, y, c, True))]:
        err = (f(P, y, cond).float() - ref).abs().max().item()
        print(f"b{b} {name} vs rust: max |Δlogit| {err:.3g} (scale {ref.abs().max().item():.3g})", flush=True)
    forms = {"rust": rust_form, "lean": lean_form, "split": lambda P, y, c: lean_form(P, y, c, True)}
    for name, f in forms.items():
        res[f"{name} b{b}"] = time_it(f"{name} b{b}", lambda: step(f, P, y, cond))
    try:
        comp = torch.compile(lean_form)
        res[f"compiled b{b}"] = time_it(f"compiled b{b}", lambda: step(comp, P, y, cond))
    except Exception as e:  # noqa: BLE001
        print(f"compiled b{b}: failed: {e}", flush=True)
    try:  # CUDA graph of forward + backward (grads accumulate into static .grad buffers)
        s_ = torch.cuda.Stream()
        s_.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s_):
            for _ in range(3):
                step(lean_form, P, y, cond)
        torch.cuda.current_stream().wait_stream(s_)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step(lean_form, P, y, cond)
        res[f"graphed b{b}"] = time_it(f"graphed b{b}", g.replay)
    except Exception as e:  # noqa: BLE001
        print(f"graphed b{b}: failed: {e}", flush=True)
    for t in leaves:
        t.grad = None
    cond.grad = None
from torch.profiler import profile, ProfilerActivity
y = torch.randint(256, (8, N), device=dev)
cond = torch.randn(8, Fr, L * 2 * r, device=dev, dtype=dt, requires_grad=True)
for name, f in [("rust", rust_form), ("lean", lean_form)]:
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            step(f, P, y, cond)
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=14, max_name_column_width=70)
    print(f"profile {name} b8 (2 steps)\n{table}", flush=True)
    res[f"profile {name}"] = table
json.dump(res, open(sys.argv[1], "w"), indent=1)

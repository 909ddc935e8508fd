# The floor under `dv train --gpus 2`'s all-reduce: NCCL all-reduce through PyTorch, one
# process a GPU, for the sizes the WaveNet trainer reduces ((40, 64, 256) has 3,702,016 parameters, counted from its shapes).
# Run on the device machine (NCCL_DEBUG=INFO shows the transport NCCL picked):
#   NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT python3 benchmarks/wavenet/nccl_bench.py
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    for kind in (torch.float32, torch.bfloat16):
        for n in (2, 1 << 20, 4 << 20):
            t = torch.ones(n, device="cuda", dtype=kind)
            for _ in range(10):
                dist.all_reduce(t)
            torch.cuda.synchronize()
            iters = 200
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t)
            torch.cuda.synchronize()
            us = (time.perf_counter() - t0) / iters * 1e6
            # with a host sync after each (as dv's NCCL collective waits for its stream)
            t0 = time.perf_counter()
            for _ in range(iters):
                dist.all_reduce(t)
                torch.cuda.synchronize()
            us_sync = (time.perf_counter() - t0) / iters * 1e6
            if rank == 0:
                bw = n * t.element_size() / (us * 1e-6) / 1e9
                print(f"all_reduce {str(kind):>14} {n:>8} elems: {us:8.1f} us back to back, "
                      f"{us_sync:8.1f} us with a sync each, algbw {bw:6.1f} GB/s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)

"""collectives_torch: PyTorch's Gloo backend (torch.distributed, Debian's
python3-torch 1.13) at every size from 1 KB to max_bytes (powers of 4), the
same points and output as collectives_bench.cc: "RESULT torch_<what> <bytes>
<median us> <calls>" from rank 0. all_reduce (float32 sum, in place),
reduce_scatter (in = bytes, out = bytes / 2; torch 1.13's Gloo backend does not
implement it: the line says "unsupported" with torch's reason) and all_gather
(a list of 2 tensors of bytes / 2). bench/collectives starts both ranks.
Usage: /usr/bin/python3 collectives_torch.py RANK PORT [max_bytes] [seconds]
"""
import os
import sys
import time

import torch
import torch.distributed as dist

rank, port = int(sys.argv[1]), sys.argv[2]
max_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 256 << 20
seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 0.25
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)


def point(name, nbytes, once):
    dist.barrier()
    t = time.perf_counter()
    once()
    calls = torch.tensor([min(1000, max(3, int(seconds / max(time.perf_counter() - t, 1e-7))))])
    dist.broadcast(calls, 0)
    us = []
    for _ in range(int(calls)):
        dist.barrier()
        t = time.perf_counter()
        once()
        us.append((time.perf_counter() - t) * 1e6)
    us.sort()
    if rank == 0:
        print(f"RESULT torch_{name} {nbytes} {us[len(us) // 2]:.2f} {len(us)}", flush=True)


nbytes = 1024
while nbytes <= max_bytes:
    n = nbytes // 4
    full = torch.ones(n)
    halves = [torch.empty(n // 2), torch.empty(n - n // 2)]
    point("allreduce", nbytes, lambda: dist.all_reduce(full))
    try:
        out = torch.empty(n // 2)
        point("reduce_scatter", nbytes, lambda: dist.reduce_scatter(out, list(full.split([n // 2, n - n // 2]))))
    except RuntimeError as e:
        if rank == 0:
            print(f"RESULT torch_reduce_scatter {nbytes} unsupported {str(e).splitlines()[0]}", flush=True)
    point("all_gather", nbytes, lambda: dist.all_gather(halves, halves[rank].clone()))
    nbytes *= 4
dist.destroy_process_group()

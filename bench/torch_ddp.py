#!/usr/bin/env python3
"""PyTorch DDP on Gloo with dstrain's benchmark model, for bench/train_bench.

784-512-512-10 MLP (ReLU), softmax cross-entropy, Adam lr 1e-3, batch
BATCH per rank, synthetic data, torch.set_num_threads(THREADS). Reads the
torchrun contract (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), so it runs
under dslaunch or with the variables set by hand. Rank 0 prints
"torch throughput: X samples/s" (global samples per second of training steps).
Usage: torch_ddp.py [steps=300] [batch=64] [threads=1]
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    torch.set_num_threads(threads)
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(64 * batch, 784, generator=g)
    y = torch.randint(0, 10, (64 * batch,), generator=g)
    warmup = 20
    for i in range(steps + warmup):
        if i == warmup:
            start = time.perf_counter()
        j = (i % 64) * batch
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[j:j + batch]), y[j:j + batch])
        loss.backward()
        opt.step()
    elapsed = time.perf_counter() - start
    if rank == 0:
        print(f"torch throughput: {steps * batch * world / elapsed:.1f} samples/s "
              f"(torch {torch.__version__}, {threads} thread(s)/rank, {world} rank(s))", flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""PyTorch DDP (Gloo) on Fashion-MNIST with dstrain's recipe, for
bench/accuracy_compare: 784-512-512-10 MLP (ReLU), cross-entropy, Adam lr
1e-3 (betas 0.9/0.999, eps 1e-8), batch 64 per rank, each epoch a fresh
shuffle split across ranks (DistributedSampler, drop_last), pixels
normalised with Fashion-MNIST's mean 0.2860 and std 0.3530 as dstrain does,
1 thread per rank. Reads the torchrun contract (RANK, WORLD_SIZE, MASTER_*),
so dslaunch starts it. Rank 0 prints, after every epoch,
"epoch E: test accuracy A, S samples/s" (S: training samples per second of
that epoch, all ranks).
Usage: torch_ddp_mnist.py [epochs=3] [data=/usr/share/datasets/fashion-mnist]
"""
import gzip
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn


def load(d, kind):
    with gzip.open(f"{d}/{kind}-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32)
    with gzip.open(f"{d}/{kind}-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy((x / 255.0 - 0.2860) / 0.3530), torch.from_numpy(y)


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    data = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(42)
    xtr, ytr = load(data, "train")
    xte, yte = load(data, "t10k")
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    loss_fn = nn.CrossEntropyLoss()
    sampler = torch.utils.data.distributed.DistributedSampler(range(len(ytr)), world, rank, shuffle=True,
                                                              seed=42, drop_last=True)
    batch = 64
    for epoch in range(1, epochs + 1):
        sampler.set_epoch(epoch)
        idx = torch.tensor(list(sampler))
        steps = len(idx) // batch
        t = time.perf_counter()
        model.train()
        for s in range(steps):
            b = idx[s * batch:(s + 1) * batch]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xtr[b]), ytr[b]).backward()
            opt.step()
        rate = steps * batch * world / (time.perf_counter() - t)
        model.eval()
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        if rank == 0:
            print(f"epoch {epoch}: test accuracy {acc:.4f}, {rate:.0f} samples/s", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

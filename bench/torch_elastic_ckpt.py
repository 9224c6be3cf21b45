"""The torchrun side of bench/inplace: PyTorch DDP (Gloo, CPU) on Fashion-MNIST
with dstrain's model and recipe there (784-512-512-10 MLP, ReLU, Adam lr 1e-3,
batch 64 per rank, 1 thread), checkpointing every 10 steps and resuming from
the newest checkpoint when torchrun restarts it.

Rank 0 saves CKPT/step_NNNNNNNN.pt (model and optimizer state; written to a
temporary name and renamed, the newest 4 kept) every 10 steps, and appends to
OUT, one line each: "resumed from step S (world W): process entered at T1,
process group joined at T2" (T: Unix seconds) when it starts from a
checkpoint, and "[rank0] step N/MAX world W" after every 10th step (the form
of dstrain's progress line that bench/inplace polls for). Every rank loads the
newest checkpoint at start (CKPT is shared by the hosts). Reads the torchrun
contract (RANK, WORLD_SIZE, MASTER_*).
Usage: torch_elastic_ckpt.py CKPT OUT [max_steps=800] [data=/usr/share/datasets/fashion-mnist]
"""
import glob
import os
import sys
import time

ENTRY = time.time()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ddp_mnist import load  # noqa: E402

EVERY, KEEP, BATCH = 10, 4, 64


def newest(ckpt):
    files = sorted(glob.glob(f"{ckpt}/step_*.pt"))
    return torch.load(files[-1]) if files else None


def save(ckpt, step, model, opt):
    tmp = f"{ckpt}/.step_{step:08d}.pt.tmp"
    torch.save({"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()}, tmp)
    os.rename(tmp, f"{ckpt}/step_{step:08d}.pt")
    for old in sorted(glob.glob(f"{ckpt}/step_*.pt"))[:-KEEP]:
        os.remove(old)


def main():
    ckpt, out = sys.argv[1], sys.argv[2]
    max_steps = int(sys.argv[3]) if len(sys.argv) > 3 else 800
    data = sys.argv[4] if len(sys.argv) > 4 else "/usr/share/datasets/fashion-mnist"
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    joined = time.time()
    rank, world = dist.get_rank(), dist.get_world_size()
    log = open(out, "a", buffering=1) if rank == 0 else None
    torch.manual_seed(3)
    xtr, ytr = load(data, "train")
    net = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    step = 0
    state = newest(ckpt)
    if state:
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
        if log:
            log.write(f"resumed from step {step} (world {world}): process entered at {ENTRY:.3f},"
                      f" process group joined at {joined:.3f}\n")
    model = nn.parallel.DistributedDataParallel(net)
    loss_fn = nn.CrossEntropyLoss()
    sampler = torch.utils.data.distributed.DistributedSampler(range(len(ytr)), world, rank, shuffle=True,
                                                              seed=3, drop_last=True)
    per_epoch = len(sampler) // BATCH
    while step < max_steps:
        sampler.set_epoch(step // per_epoch)
        idx = torch.tensor(list(sampler))
        for s in range(step % per_epoch, per_epoch):
            b = idx[s * BATCH:(s + 1) * BATCH]
            opt.zero_grad(set_to_none=True)
            loss_fn(model(xtr[b]), ytr[b]).backward()
            opt.step()
            step += 1
            if step % EVERY == 0 and rank == 0:
                save(ckpt, step, model, opt)
                log.write(f"[rank0] step {step}/{max_steps} world {world}\n")
            if step == max_steps:
                break
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

# A DDP (Gloo) script that uses dslaunch.torch: restore() at the start,
# snapshot() every EVERY steps. Rank 0 prints the SHA-256 of the parameters
# at every save and after a restore, so a test can compare them bit for bit;
# every rank its pid at each (re)start.
# With ELASTIC=1 the training runs inside dslaunch.torch.elastic(): with
# elastic.in_place the survivors of a lost peer keep their processes and
# train() runs again in the new world from the save the coordinator chose.
# STEPS (default 100000), EVERY (default 20), SLEEP (default 0.01 s).
import hashlib
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import dslaunch.torch as dst


def checksum(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def train():
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model = DDP(net)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start, state = dst.restore()
    print(f"rank={rank} pid={os.getpid()} world={world} generation={os.environ.get('DSLAUNCH_GENERATION')} "
          f"start={start}", flush=True)
    if state is not None:
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optim"])
        if rank == 0:
            print(f"restored step={start} checksum={checksum(net)} world={world}", flush=True)
    steps, every = int(os.environ.get("STEPS", "100000")), int(os.environ.get("EVERY", "20"))
    pause = float(os.environ.get("SLEEP", "0.01"))
    for step in range(start + 1, steps + 1):
        g = torch.Generator().manual_seed(step * 1000 + rank)
        x = torch.randn(32, 16, generator=g)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % every == 0:
            dst.snapshot(step, {"model": net.state_dict(), "optim": opt.state_dict()})
            if rank == 0:
                print(f"saved step={step} checksum={checksum(net)}", flush=True)
        time.sleep(pause)  # a step's worth of work
    return rank


if os.environ.get("ELASTIC") == "1":
    rank = dst.elastic(train)
else:
    dist.init_process_group("gloo")
    rank = train()
    dst.wait()
    dist.destroy_process_group()
print(f"rank={rank} done", flush=True)

# A plain DDP (Gloo) training script with no dslaunch code at all: steps
# should show up in `dslaunch status` through the optimizer hook alone.
# STEPS: how many steps (default 600); STUCK_RANK/STUCK_AT: that rank stops in
# user code at that step (the others then wait in the next all-reduce).
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps = int(os.environ.get("STEPS", "600"))
stuck_rank = int(os.environ.get("STUCK_RANK", "-1"))
stuck_at = int(os.environ.get("STUCK_AT", "30"))


def stuck_in_user_code():
    while True:
        time.sleep(0.05)


for step in range(1, steps + 1):
    loss = model(torch.randn(16, 8)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    time.sleep(0.02)  # a step's worth of work
    if step == stuck_at and rank == stuck_rank:
        stuck_in_user_code()
print(f"rank={rank} done steps={steps}", flush=True)
dist.destroy_process_group()

"""The worker of bench/torchrun_compare, the same under every launcher.

Stamps CLOCK_REALTIME (ns) on entry, joins torch.distributed (Gloo, env://)
and passes a barrier, stamps again, then either exits 0 (`barrier`) or
trains (`train`: an allreduce of a 1 MB tensor every 20 ms, until killed).
Each stamp goes to OUT/up.<pid>: "entry_ns barrier_ns rank world_size pid ppid".
Under mpirun (no MASTER_* in the environment) it takes rank and size from
Open MPI's OMPI_COMM_WORLD_* and MASTER_ADDR/MASTER_PORT from BENCH_MASTER_*.
Usage: torchrun_worker.py barrier|train OUT
"""
import os
import sys
import time

entry = time.time_ns()
if "OMPI_COMM_WORLD_RANK" in os.environ and "RANK" not in os.environ:
    os.environ.update(RANK=os.environ["OMPI_COMM_WORLD_RANK"], WORLD_SIZE=os.environ["OMPI_COMM_WORLD_SIZE"],
                      MASTER_ADDR=os.environ["BENCH_MASTER_ADDR"], MASTER_PORT=os.environ["BENCH_MASTER_PORT"])

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

mode, out = sys.argv[1], sys.argv[2]
dist.init_process_group("gloo")
dist.barrier()
t = torch.ones(262144)
dist.all_reduce(t)
passed = time.time_ns()
rank, world = dist.get_rank(), dist.get_world_size()
tmp = f"{out}/.up.{os.getpid()}"
with open(tmp, "w") as f:
    f.write(f"{entry} {passed} {rank} {world} {os.getpid()} {os.getppid()}\n")
os.rename(tmp, f"{out}/up.{os.getpid()}")
if mode == "barrier":
    sys.exit(0)
while True:
    dist.all_reduce(t)
    time.sleep(0.02)

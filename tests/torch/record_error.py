# A torchrun-style PyTorch script, as our users write them: it checks that it
# was started by a torchelastic-compatible launcher, reads torchrun's worker
# variables, joins a Gloo process group through MASTER_ADDR/MASTER_PORT
# (env://), all-reduces, and then rank FAIL_RANK raises inside a function
# decorated with @record. That rank first points its stderr at /dev/null, so
# the exception reaches dslaunch's summary only through TORCHELASTIC_ERROR_FILE.
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


def check_learning_rate(lr):
    if lr > 1.0:
        raise ValueError(f"learning rate {lr} is too large on rank {os.environ['RANK']}")


@record
def main():
    if not dist.is_torchelastic_launched():
        sys.exit("not launched by a torchelastic-compatible launcher")
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    print(f"rank={rank} world={world} role={os.environ['ROLE_NAME']} "
          f"run_id_set={bool(os.environ['TORCHELASTIC_RUN_ID'])} "
          f"restarts={os.environ['TORCHELASTIC_RESTART_COUNT']}/{os.environ['TORCHELASTIC_MAX_RESTARTS']} "
          f"error_file_set={bool(os.environ.get('TORCHELASTIC_ERROR_FILE'))} "
          f"args={' '.join(sys.argv[1:])}", flush=True)
    dist.init_process_group("gloo")
    t = torch.tensor([rank + 1.0])
    dist.all_reduce(t)
    print(f"rank={rank} allreduce={t.item():g}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if rank == int(os.environ.get("FAIL_RANK", "-1")):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        check_learning_rate(float(os.environ.get("LR", "3.5")))


if __name__ == "__main__":
    main()

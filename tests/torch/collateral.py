# Rank 3 raises (no @record) while rank 2 waits for it in a Gloo all-reduce
# of their own group; rank 3's exit closes the connection and rank 2 fails
# with Gloo's "Connection closed by peer", which may reach dslaunch first.
# Ranks 0 and 1 wait until dslaunch stops them. The summary must name rank 3.
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = int(os.environ["RANK"])
pair = dist.new_group([2, 3])
dist.barrier()
if rank == 3:
    raise ValueError("rank 3 raises: the root cause")
if rank == 2:
    dist.all_reduce(torch.tensor([1.0]), group=pair)
time.sleep(120)

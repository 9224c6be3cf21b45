"""bench/torch_recovery's in-place side: bench/torch_dst_ckpt.py (the same
DDP model, data, recipe, cadence, dslaunch.torch snapshots and output lines)
run as dslaunch.torch.elastic(train): with elastic.in_place the survivors of
a node loss keep their processes, and train() runs again in the new world
from the save the coordinator chose. The data is loaded once per process,
as a script written for elastic() would (outside train()).
Usage: as torch_elastic_ckpt.py (its CKPT argument is unused).
"""
import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_dst_ckpt  # noqa: E402,F401  (swaps the checkpoint for dslaunch.torch's)
import torch_elastic_ckpt as base  # noqa: E402
import dslaunch.torch as dst  # noqa: E402


class _Formed:
    """torch.distributed, but the group is elastic()'s to form and destroy."""

    def __getattr__(self, name):
        return getattr(base.torch.distributed, name)

    def init_process_group(self, *args, **kwargs):
        pass

    def destroy_process_group(self, *args, **kwargs):
        pass


base.dist = _Formed()
base.load = functools.lru_cache(maxsize=None)(base.load)
if __name__ == "__main__":
    dst.elastic(base.main)

"""bench/torch_recovery's dslaunch side: bench/torch_elastic_ckpt.py (the same
DDP model, data, recipe, cadence and output lines) with its checkpoint swapped
for dslaunch.torch: rank 0 snapshots model and optimizer into the agents'
memory every 10 steps (replicated by them, no shared directory), and every
rank resumes from the save the coordinator chose (dst.restore()).
Usage: as torch_elastic_ckpt.py (its CKPT argument is unused).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_elastic_ckpt as base  # noqa: E402  (sets ENTRY, imports torch)
import dslaunch.torch as dst  # noqa: E402


def newest(_ckpt):
    _step, state = dst.restore()
    return state


def save(_ckpt, step, model, opt):
    dst.snapshot(step, {"step": step, "model": model.module.state_dict(), "opt": opt.state_dict()})


base.newest, base.save = newest, save
if __name__ == "__main__":
    base.main()
    dst.wait()

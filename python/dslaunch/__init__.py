"""dslaunch: what a Python worker started by dslaunch can say to its agent.

Pure Python (the standard library only; torch is imported by dslaunch.torch
alone). dslaunch's agent puts this package on every worker's PYTHONPATH
(appended to yours), with a sitecustomize that counts torch.optim steps as
step beats without any code (_optim_hook). Outside dslaunch every call is a
no-op, so a script that uses it still runs under python3 or torchrun.

    import dslaunch
    dslaunch.step(samples=batch_size, loss=loss.item())   # optional: say more

The protocol is dslaunch's worker contract (wire/wire_format.md, "The dslaunch
Python package").
"""

from dslaunch._version import __version__
from dslaunch import _contract, _optim_hook

__all__ = ["__version__", "step", "current_step", "launched"]

_optim_hook.install()


def step(n=None, samples=None, loss=None):
    """Says that a training step finished: `n` its number (default: the last
    one said or counted, plus one), `samples` the samples this rank processed
    in it (gives samples/s), `loss` its loss (a float or a one-element tensor:
    `status --json`, the report's loss curve). From the first call
    on, the optimizer's steps are no longer counted: the script says them."""
    _contract.counter.said(n, samples, loss)


def current_step():
    """The last step said or counted (after dslaunch.torch.restore(): the restored one)."""
    return _contract.counter.step


def launched():
    """True when this process was started by dslaunch's agent."""
    import os
    return bool(os.environ.get("DSLAUNCH_HEARTBEAT_ADDR")) and bool(os.environ.get("DSLAUNCH_JOB_ID"))

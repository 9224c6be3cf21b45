#!/usr/bin/python3
"""torchrun for Debian bookworm's python3-torch 1.13 on Python 3.11, unchanged
but for one fix applied at import time (no system file is modified).

What breaks: torch/distributed/elastic/multiprocessing/api.py, Std.from_str,
looks a value up with `for s in Std: if s == v: return s`. Since Python 3.11,
iterating a Flag enum yields only its single-bit members (OUT, ERR), not NONE
(0) or ALL (3), so from_str("0") (torchrun's default --redirects/--tee) returns
None and every launch dies in to_map() with
  AttributeError: 'NoneType' object has no attribute 'get'
The one-line fix (what later PyTorch releases do): to_std(v) = Std(int(v)).

Usage: exactly torchrun's: /usr/bin/python3 bench/torchrun_py311.py --standalone ...
"""
import re
import sys

from torch.distributed.elastic.multiprocessing import api


def _from_str(cls, vm):
    if re.match(api._VALUE_REGEX, vm):
        return cls(int(vm))  # the fix: Std(int(v)) instead of iterating Std
    if re.match(api._MAPPING_REGEX, vm):
        return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


api.Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    from torch.distributed.run import main
    sys.exit(main())

"""Step beats without code: every torch.optim optimizer's step() is counted.

How (the same on torch 1.13, Debian's, and on 2.x): once the module
torch.optim.optimizer has run, Optimizer.__init__ is wrapped so that the
class of each optimizer made (torch's own, or the script's subclass) gets its
step() wrapped once; the wrapper calls the original, then counts. torch 2.x's
global register_optimizer_step_post_hook is not used: torch 1.13 has no
global hook, and one mechanism on both is one mechanism tested (a step that
calls super().step() is counted once: only the outermost call counts).

install() never imports torch: a meta-path finder waits for
torch.optim.optimizer to be imported (by the script, whenever it imports
torch) and patches it right after it ran. Installed by the sitecustomize
module dslaunch puts on a Python worker's path, or by `import dslaunch`.
"""

import functools
import sys
import threading

_MODULE = "torch.optim.optimizer"
_MARK = "_dslaunch_counted"
_depth = threading.local()


def _wrap_step(step):
    @functools.wraps(step)
    def counted_step(self, *args, **kwargs):
        depth = getattr(_depth, "n", 0)
        _depth.n = depth + 1
        try:
            result = step(self, *args, **kwargs)
        finally:
            _depth.n = depth
        if depth == 0:
            from dslaunch._contract import counter
            counter.optimizer_stepped(self)
        return result

    setattr(counted_step, _MARK, True)
    return counted_step


def _count_class(cls):
    step = cls.__dict__.get("step")
    if step is None or getattr(step, _MARK, False) or not callable(step):
        step = getattr(cls, "step", None)  # inherited: wrapped where it is defined, or here
        if step is None or getattr(step, _MARK, False):
            return
    cls.step = _wrap_step(step)


def patch(module):
    """Counts the steps of every optimizer `module.Optimizer` makes from now on."""
    optimizer = getattr(module, "Optimizer", None)
    if optimizer is None or getattr(optimizer.__init__, _MARK, False):
        return
    init = optimizer.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            _count_class(type(self))
        except Exception:  # never the script's failure
            pass

    setattr(__init__, _MARK, True)
    optimizer.__init__ = __init__


class _Finder:
    """Meta-path finder that only watches for torch.optim.optimizer."""

    def find_spec(self, name, path=None, target=None):
        if name != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            try:
                patch(module)
            except Exception:
                pass

        loader.exec_module = exec_module
        return spec

    def invalidate_caches(self):
        pass


_installed = False


def install():
    """Idempotent; patches at once when torch.optim is imported already."""
    global _installed
    if _installed:
        return
    _installed = True
    module = sys.modules.get(_MODULE)
    if module is not None:
        patch(module)
    else:
        sys.meta_path.insert(0, _Finder())

# dslaunch's sitecustomize: the agent appends this folder to a worker's
# PYTHONPATH, so Python imports this module at start-up (not under -I, -E or
# -S: those leave the path and site alone, and the worker then runs without
# step beats). It installs the optimizer-step hook (dslaunch/_optim_hook.py:
# imports nothing of torch) and then runs the sitecustomize this one hides,
# the next one on sys.path (Debian's /usr/lib/python3.X/sitecustomize.py, a
# virtualenv's), as if it had been found first.
def _dslaunch_site():
    import os
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from dslaunch import _optim_hook
        _optim_hook.install()
    except Exception as e:  # never the worker's failure
        sys.stderr.write("dslaunch: no step beats from the optimizer: %s: %s\n" % (type(e).__name__, e))
    rest, seen = [], False
    for entry in sys.path:
        if seen:
            rest.append(entry)
        elif os.path.abspath(entry or os.curdir) == here:
            seen = True
    if not rest:
        return
    import importlib.machinery
    import importlib.util
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_dslaunch_site()
del _dslaunch_site

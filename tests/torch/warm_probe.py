"""A worker that reports what a script can see of how it was started, for
tests/torch/warm_test.sh: the same lines from a cold worker and from a warm
spare must match once the per-run values are masked.

Generation 0 (DSLAUNCH_GENERATION=0): rank 1 waits until the test opens
GO_FIFO (the spares are ready by then), optionally SIGKILLs its agent's
spare first (KILL_SPARE=1), and exits 1: the next generation starts, from
the spares when there are any. Generation 1: every rank prints its
observations and, with RAISE_AT_IMPORT=1, rank 1 raises at module level;
otherwise it joins a Gloo group (env://) and all-reduces.
"""
import ctypes
import os
import signal
import sys

gen = os.environ.get("DSLAUNCH_GENERATION")
rank = int(os.environ["RANK"])
preloaded = "torch" in sys.modules  # before this script imported anything heavy


def spare_siblings():
    """The agent's other children that are warm spares."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if ppid == os.getppid() and b"_dsagent_spare" in cmd:
            out.append(int(p))
    return out


if gen == "0":
    if rank == 1:
        with open(os.environ["GO_FIFO"]):
            pass
        if os.environ.get("KILL_SPARE") == "1":
            for pid in spare_siblings():
                os.kill(pid, signal.SIGKILL)
                # Dead before this worker's exit reaches the agent: every thread
                # gone and the leader a zombie (waitable), or already reaped.
                while True:
                    try:
                        with open(f"/proc/{pid}/stat") as f:
                            zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
                        if zombie and os.listdir(f"/proc/{pid}/task") == [str(pid)]:
                            break
                    except FileNotFoundError:
                        break
        sys.exit(1)
    signal.pause()  # until the agent stops this generation (SIGTERM)
    sys.exit(0)

libc = ctypes.CDLL(None, use_errno=True)
pdeath = ctypes.c_int(0)
libc.prctl(2, ctypes.byref(pdeath), 0, 0, 0)  # PR_GET_PDEATHSIG
with open(f"/proc/{os.getppid()}/comm") as f:
    parent = f.read().strip()
err_file = os.environ.get("TORCHELASTIC_ERROR_FILE", "")
obs = {
    "argv": sys.argv, "orig_argv": sys.orig_argv[1:], "file": __file__, "path0": sys.path[0], "name": __name__,
    "package": __package__, "spec": getattr(__spec__, "name", None),
    "pgid_is_pid": os.getpgid(0) == os.getpid(), "pdeathsig": pdeath.value, "parent": parent,
    "cwd": os.getcwd(), "cores": sorted(os.sched_getaffinity(0)), "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "sigint": str(signal.getsignal(signal.SIGINT)), "sigterm": str(signal.getsignal(signal.SIGTERM)),
    "sigpipe": str(signal.getsignal(signal.SIGPIPE)), "blocked": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "stdin": os.readlink("/proc/self/fd/0"), "stdout": os.readlink("/proc/self/fd/1").split(":")[0],
    "error_file_dir": os.path.isdir(os.path.dirname(err_file)) if err_file else None,
    "env_names": sorted(os.environ),
    "env": {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "ROLE_NAME",
                                           "TORCHELASTIC_RESTART_COUNT", "DSLAUNCH_GENERATION", "OMP_NUM_THREADS",
                                           "MASTER_ADDR")},
    "fds": sorted(int(x) for x in os.listdir("/proc/self/fd") if int(x) <= 2),
}
print(f"probe rank={rank} {sorted(obs.items())}")
print(f"preloaded rank={rank} {preloaded}")
sys.stderr.write(f"stderr line from rank {rank}\n")

if os.environ.get("RAISE_AT_IMPORT") == "1" and rank == 1:
    raise RuntimeError(f"rank {rank} cannot start")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

print(f"cuda_initialized rank={rank} {torch.cuda.is_initialized()}")
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print(f"rank={rank} allreduce={int(t.item())}")

"""Snapshots of a PyTorch job in the agents' memory, replicated to peers by
the agents, no shared storage (checkpoint_format/checkpoint_format.md,
"Snapshots"; wire/wire_format.md, "The dslaunch Python package").

    import dslaunch.torch as dst
    step, state = dst.restore()          # (0, None) on a fresh start
    ...
    dst.snapshot(step, {"model": model.state_dict(), "optim": opt.state_dict()})

and, for recovery in place (elastic: {in_place: true}; _elastic.py):

    dst.elastic(train)                   # train() builds DDP, restores, trains

snapshot() stalls the caller for torch.save into memory only (the state is
serialised, so it is consistent at `step`); a helper thread then hands the
bytes to the node's agent (its DSLAUNCH_SNAPSHOT_DIR/incoming/), which keeps
them in memory, writes them to the node's checkpoint directory and sends
replicas to its peers. Which save a restarted job resumes is the
coordinator's choice (the recovery point: DSLAUNCH_RESUME_STEP and
DSLAUNCH_RESUME_SET); its agent has gathered it before the workers start.

Two kinds of state:
  replicated (default): the same on every rank (DDP's model and optimizer).
      Global rank 0 hands it over; the other ranks' calls return at once. A
      save of 1 shard: it restores at any world size.
  per_rank=True: each rank's own (a sampler's position, RNG states). Every
      rank hands its shard at the same step; it restores at the same world
      size only (another world size raises, naming both).
A job without snapshots (checkpoint.dir unset, or shared without replicas:
no DSLAUNCH_SNAPSHOT_DIR) gets (0, None) from restore() and a snapshot()
that does nothing but says so once on stderr.

Not thread-safe: call from the training thread.
"""

import io
import json
import os
import sys
import threading
import time
import zlib

import torch as _torch

from dslaunch import _contract
from dslaunch._elastic import elastic  # noqa: F401  (dslaunch.torch.elastic)

FORMAT = "dslaunch.torch/1"
# The save's "config hash" (checkpoint_format.md): what gives the bytes their
# meaning, torch.save's format; 8 hex digits.
CONFIG = "%08x" % zlib.crc32(FORMAT.encode())
_writer = None  # the helper thread of the last save
_warned = False


def _env(name, default=""):
    return os.environ.get(name, default)


def _manifest(step, world, per_rank):
    """The save's manifest: the same bytes on every rank (its digest is the
    save's set), so no collective is needed to agree on it."""
    return json.dumps({"format": FORMAT, "step": int(step), "world_size": world, "per_rank": per_rank,
                       "run_id": _env("DSLAUNCH_RUN_ID"), "generation": int(_env("DSLAUNCH_GENERATION", "0") or 0)},
                      sort_keys=True, separators=(",", ":")).encode()


def _write(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _hand_over(incoming, step, shard, world, data, manifest):
    crc = zlib.crc32(data) & 0xFFFFFFFF
    name = "%08d.%d.%d.0.%s.%s.%08x" % (step, shard, world, CONFIG, _env("DSLAUNCH_RUN_ID"), crc)
    spare = os.path.join(incoming, "spare.%d" % shard)  # memory the agent kept for this shard (tmpfs pages)
    target = os.path.join(incoming, name + ".shard")
    try:
        os.rename(spare, target)
    except OSError:
        pass
    _write(target, data)  # the agent ignores .shard names: the manifest's arrival completes it
    tmp = os.path.join(incoming, name + ".manifest.tmp")
    _write(tmp, manifest)
    os.rename(tmp, os.path.join(incoming, name + ".manifest"))


def wait():
    """Waits until the last save is handed to the agent (snapshot() does it first)."""
    global _writer
    if _writer is not None:
        _writer.join()
        _writer = None


def snapshot(step, state, per_rank=False):
    """Hands `state` (anything torch.save takes) at `step` to this node's
    agent; returns once it is serialised in memory. See the module's doc."""
    global _writer, _warned
    snapshot_dir = _env("DSLAUNCH_SNAPSHOT_DIR")
    rank, world = int(_env("RANK", "0") or 0), int(_env("WORLD_SIZE", "1") or 1)
    if not snapshot_dir or not _env("DSLAUNCH_RUN_ID"):
        if not _warned and rank == 0:
            sys.stderr.write("dslaunch.torch: snapshot() does nothing: this job has no snapshots (set checkpoint.dir "
                             "to a node-local folder, e.g. /var/tmp/ckpt-{host}, or checkpoint.replicas)\n")
        _warned = True
        return
    if not per_rank and rank != 0:
        return
    wait()
    started = time.monotonic()
    buffer = io.BytesIO()
    _torch.save(state, buffer)
    data = buffer.getbuffer()
    _contract.counter.saved(time.monotonic() - started)
    shard, shards = (rank, world) if per_rank else (0, 1)
    manifest = _manifest(step, shards, per_rank)
    incoming = os.path.join(snapshot_dir, "incoming")
    _writer = threading.Thread(target=_hand_over, args=(incoming, int(step), shard, shards, data, manifest),
                               name="dslaunch-snapshot", daemon=False)
    _writer.start()


def restore(map_location="cpu"):
    """(step, state) of the save the coordinator chose for this generation,
    or (0, None) on a fresh start. Raises RuntimeError naming the file when
    the save is not where the agent put it, or was saved per rank at another
    world size."""
    step = int(_env("DSLAUNCH_RESUME_STEP", "-1") or -1)
    save = _env("DSLAUNCH_RESUME_SET")
    snapshot_dir = _env("DSLAUNCH_SNAPSHOT_DIR")
    if step < 0 or not save or not snapshot_dir:
        return 0, None
    folder = os.path.join(snapshot_dir, "step_%08d.%s" % (step, save))
    try:
        with open(os.path.join(folder, "manifest.json"), "rb") as f:
            manifest = json.loads(f.read())
    except (OSError, ValueError) as e:
        raise RuntimeError("dslaunch.torch: cannot read the save to resume (%s): %s" %
                           (os.path.join(folder, "manifest.json"), e)) from None
    if manifest.get("format") != FORMAT:
        raise RuntimeError("dslaunch.torch: %s is not a dslaunch.torch save (format %r): another program's "
                           "snapshot in this job's checkpoint.dir?" % (folder, manifest.get("format")))
    rank, world = int(_env("RANK", "0") or 0), int(_env("WORLD_SIZE", "1") or 1)
    shard = 0
    if manifest.get("per_rank"):
        if manifest.get("world_size") != world:
            raise RuntimeError("dslaunch.torch: step %d was saved per rank at world size %s; this generation's is %d "
                               "(per-rank state restores at the same world size only)" %
                               (step, manifest.get("world_size"), world))
        shard = rank
    path = os.path.join(folder, "shard_%d.bin" % shard)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise RuntimeError("dslaunch.torch: cannot read %s: %s" % (path, e)) from None
    state = _torch.load(io.BytesIO(data), map_location=map_location)
    _contract.counter.restored(step)
    return step, state

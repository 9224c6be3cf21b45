"""python/dslaunch: the beat datagram is the one dsagent decodes, the
optimizer hook counts steps without code (torch 1.13 and 2.x alike), an
explicit dslaunch.step() takes over, and the sitecustomize chains to the one
it hides, and the version is the programs. Run against the package as built:
dslaunch_test.py BUILD/python [DSLAUNCH].
Real processes and a real UDP socket; torch checks skip (77) without torch
only when nothing else was to be checked."""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import unittest

PKG = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None
DSLAUNCH = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None  # to compare versions with
TOKEN = "0123456789abcdef0123456789abcdef"


def have_torch():
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


class Receiver:
    """The agent's beat endpoint, as far as a test needs it."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(10)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]

    def env(self, **more):
        e = dict(os.environ)
        e.update(DSLAUNCH_HEARTBEAT_ADDR=self.addr, DSLAUNCH_HEARTBEAT_TOKEN=TOKEN, RANK="3",
                 DSLAUNCH_JOB_ID="j", PYTHONPATH=PKG)
        e.update(more)
        return e

    def beats(self, n):
        out = []
        for _ in range(n):
            data = self.sock.recv(200)
            rank, step = struct.unpack(">qq", data[:16])
            token = data[16:48].decode()
            rest = struct.unpack(">%dq" % ((len(data) - 48) // 8), data[48:])
            out.append((len(data), rank, step, token) + rest)
        return out

    def __del__(self):
        self.sock.close()

    def none_left(self):
        self.sock.settimeout(0.2)
        try:
            self.sock.recv(200)
            return False
        except socket.timeout:
            return True


def read(path):
    with open(path, "rb") as f:
        return f.read()


def run(code, env, cwd=None):
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("worker failed (%d): %s" % (p.returncode, p.stderr))
    return p.stdout


class BeatFormat(unittest.TestCase):
    def test_explicit_steps_are_the_long_form_with_samples(self):
        r = Receiver()
        run("import dslaunch\ndslaunch.step(samples=32)\ndslaunch.step(7)\n", r.env())
        self.assertEqual(r.beats(2), [(64, 3, 1, TOKEN, -1, 32), (64, 3, 7, TOKEN, -1, -1)])

    def test_a_loss_is_the_metric_form_accuracy_not_said(self):
        r = Receiver()
        run("import dslaunch\ndslaunch.step(5, samples=8, loss=0.5)\n", r.env())
        data = r.sock.recv(200)
        self.assertEqual(len(data), 88)
        self.assertEqual(struct.unpack(">qqq", data[48:72]), (-1, 8, -1))
        loss, accuracy = struct.unpack(">dd", data[72:])
        self.assertEqual(loss, 0.5)
        self.assertNotEqual(accuracy, accuracy)  # NaN

    def test_a_save_stall_rides_on_the_next_beat_once(self):
        r = Receiver()
        run("import dslaunch\nfrom dslaunch import _contract\n_contract.counter.saved(0.25)\n"
            "dslaunch.step()\ndslaunch.step()\n", r.env())
        self.assertEqual(r.beats(2), [(72, 3, 1, TOKEN, -1, -1, 250000), (64, 3, 2, TOKEN, -1, -1)])

    def test_outside_dslaunch_nothing_is_sent_and_nothing_fails(self):
        e = dict(os.environ, PYTHONPATH=PKG)
        e.pop("DSLAUNCH_HEARTBEAT_ADDR", None)
        self.assertEqual(run("import dslaunch\ndslaunch.step(1)\nprint(dslaunch.launched())\n", e).strip(), "False")

    def test_the_version_is_the_programs(self):
        out = run("import dslaunch\nprint(dslaunch.__version__)\n", dict(os.environ, PYTHONPATH=PKG)).strip()
        self.assertTrue(out and "@" not in out, out)
        if DSLAUNCH:
            programs = subprocess.run([DSLAUNCH, "--version"], capture_output=True, text=True).stdout.split()
            self.assertEqual(programs, ["dslaunch", out])


@unittest.skipUnless(have_torch(), "no torch on this interpreter")
class OptimizerHook(unittest.TestCase):
    SCRIPT = """
import torch
m = torch.nn.Linear(2, 1)
a = torch.optim.SGD(m.parameters(), lr=0.1)
b = torch.optim.Adam(m.parameters(), lr=0.1)
for i in range(3):          # two optimizers stepping once per iteration: one step each
    m(torch.ones(1, 2)).sum().backward()
    a.step(); b.step()
"""
    SUBCLASS = """
import torch
class Mine(torch.optim.SGD):
    def step(self, closure=None):
        return super().step(closure)
m = torch.nn.Linear(2, 1)
c = Mine(m.parameters(), lr=0.1)
for i in range(2):          # super().step() inside Mine.step: counted once per call
    c.step()
"""

    def test_a_subclass_calling_super_step_counts_once(self):
        r = Receiver()
        run(self.SUBCLASS, r.env())
        self.assertEqual([b[2] for b in r.beats(2)], [1, 2])
        self.assertTrue(r.none_left(), "super().step() counted again")

    def test_steps_are_counted_with_no_dslaunch_code(self):
        r = Receiver()
        run(self.SCRIPT, r.env())  # sitecustomize installs the hook
        self.assertEqual([b[2] for b in r.beats(3)], [1, 2, 3])
        self.assertTrue(r.none_left(), "the second optimizer counted again")

    def test_after_dslaunch_step_the_script_says_the_steps(self):
        r = Receiver()
        run("import dslaunch\ndslaunch.step(100)\n" + self.SCRIPT, r.env())
        self.assertEqual([b[2] for b in r.beats(1)], [100])
        self.assertTrue(r.none_left())

    def test_isolated_mode_keeps_the_path_as_python_makes_it(self):
        r = Receiver()
        p = subprocess.run([sys.executable, "-I", "-c", "import sys; print(any('dslaunch' in (m or '') for m in sys.modules))"],
                           env=r.env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.stdout.strip(), "False")


@unittest.skipUnless(have_torch(), "no torch on this interpreter")
class TorchSnapshots(unittest.TestCase):
    """dslaunch.torch against the agent's side of the hand-off, done here by
    hand: the handoff's names (wire/snapshot_handoff.h), then a save moved
    where the agent keeps it, restored bit for bit."""

    SAVE = """
import torch, dslaunch.torch as dst
torch.manual_seed(3)
m = torch.nn.Linear(4, 2)
print(dst.restore())
dst.snapshot(40, {"model": m.state_dict(), "step": 40}, per_rank=PER_RANK)
dst.wait()
print(repr(m.weight.detach().numpy().tobytes()))
"""
    LOAD = """
import torch, dslaunch, dslaunch.torch as dst
step, state = dst.restore()
print(step, dslaunch.current_step(), repr(state["model"]["weight"].numpy().tobytes()))
"""

    def env(self, d, **more):
        e = dict(os.environ, PYTHONPATH=PKG, DSLAUNCH_SNAPSHOT_DIR=d, DSLAUNCH_RUN_ID="0123abcd", RANK="1",
                 WORLD_SIZE="2", DSLAUNCH_GENERATION="0")
        e.update(more)
        return e

    def save_and_restore(self, per_rank):
        import hashlib
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        d = tmp.name
        if True:
            os.mkdir(os.path.join(d, "incoming"))
            out = run(self.SAVE.replace("PER_RANK", str(per_rank)), self.env(d)).splitlines()
            self.assertEqual(out[0], "(0, None)")  # a fresh start
            names = sorted(os.listdir(os.path.join(d, "incoming")))
            if not per_rank:
                self.assertEqual(names, [], "rank 1 handed replicated state: rank 0 alone does")
                out = run(self.SAVE.replace("PER_RANK", "False"), self.env(d, RANK="0")).splitlines()
                names = sorted(os.listdir(os.path.join(d, "incoming")))
            shard = 1 if per_rank else 0
            world = 2 if per_rank else 1
            self.assertEqual(len(names), 2, names)
            manifest_name, shard_name = names
            self.assertRegex(manifest_name, r"^00000040\.%d\.%d\.0\.[0-9a-f]{8}\.0123abcd\.[0-9a-f]{8}\.manifest$"
                             % (shard, world))
            self.assertEqual(shard_name, manifest_name[:-len("manifest")] + "shard")
            data = read(os.path.join(d, "incoming", shard_name))
            import zlib
            self.assertEqual("%08x" % (zlib.crc32(data) & 0xFFFFFFFF), manifest_name.split(".")[6])
            manifest = read(os.path.join(d, "incoming", manifest_name))
            # The agent's part: the set is the manifest's digest; the pair moves into the step's folder.
            save = hashlib.sha256(manifest).hexdigest()[:16]
            step_dir = os.path.join(d, "step_00000040." + save)
            os.mkdir(step_dir)
            os.rename(os.path.join(d, "incoming", shard_name), os.path.join(step_dir, "shard_%d.bin" % shard))
            os.rename(os.path.join(d, "incoming", manifest_name), os.path.join(step_dir, "manifest.json"))
            return d, save, out[1]

    def test_replicated_state_restores_bit_for_bit_at_any_world_size(self):
        d, save, weights = self.save_and_restore(per_rank=False)
        for rank, world in (("0", "1"), ("2", "3")):
            out = run(self.LOAD, self.env(d, RANK=rank, WORLD_SIZE=world, DSLAUNCH_RESUME_STEP="40",
                                          DSLAUNCH_RESUME_SET=save)).split(" ", 2)
            self.assertEqual(out[:2], ["40", "40"])
            self.assertEqual(out[2].strip(), weights)

    def test_per_rank_state_restores_at_the_same_world_size_only(self):
        d, save, weights = self.save_and_restore(per_rank=True)
        out = run(self.LOAD, self.env(d, DSLAUNCH_RESUME_STEP="40", DSLAUNCH_RESUME_SET=save)).split(" ", 2)
        self.assertEqual(out[2].strip(), weights)
        p = subprocess.run([sys.executable, "-c", self.LOAD], capture_output=True, text=True, timeout=120,
                           env=self.env(d, WORLD_SIZE="3", DSLAUNCH_RESUME_STEP="40", DSLAUNCH_RESUME_SET=save))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("step 40 was saved per rank at world size 2; this generation's is 3", p.stderr)


class SiteChain(unittest.TestCase):
    def test_the_hidden_sitecustomize_still_runs(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "sitecustomize.py"), "w") as f:
                f.write("import builtins\nbuiltins.CHAINED = 'yes'\n")
            e = dict(os.environ, PYTHONPATH=PKG + ":" + d)
            out = run("import builtins, sys\nprint(getattr(builtins, 'CHAINED', 'no'), 'dslaunch' in sys.modules)\n", e)
            self.assertEqual(out.strip(), "yes True")


if __name__ == "__main__":
    if PKG is None:
        sys.exit("usage: dslaunch_test.py BUILD/python [DSLAUNCH]")
    result = unittest.main(exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if not have_torch():
        print("SKIP: the optimizer hook's checks need torch (%s has none)" % sys.executable)
        sys.exit(77)

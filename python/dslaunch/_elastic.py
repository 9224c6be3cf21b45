"""dslaunch.torch.elastic(): a PyTorch job recovered in place (docs/usage.md,
"Your own PyTorch script"; wire/wire_format.md, "In-place recovery").

With `elastic: {in_place: true}` and snapshots on, the agent gives each
worker a control channel (DSLAUNCH_CONTROL_FD). elastic(train) forms the
process group itself, runs train(), and when a peer is lost the process
stays: a reader thread takes WorkerReshape off the channel and shuts the
group's TCP connections (so a collective in flight, even one waiting on a
peer that vanished without a word, raises at once), the training thread
destroys the group, takes its new rank and world, forms the new group
through the coordinator's store, answers WorkerReshaped and calls train()
again, whose restore() then gives the save the coordinator chose (gathered
into this node's agent before the word came).

Each group is formed through a TCPStore its rank 0 serves on a free port:
rank 0 publishes "<address>:<port>" under dslaunch.torch/<generation>/store
in the coordinator's store (DSLAUNCH_STORE_ADDR, authenticated with the
first generation's DSLAUNCH_STORE_TOKEN on a connection kept for the job's
life), the others read it there. A replacement started in a reshaped
generation does the same with its own token. A WorkerReshape that names a
store (a coordinator that took the job over from a lost one) moves that
connection to it.

Without a control channel (in_place off, warm spares, not under dslaunch)
elastic(train) is init_process_group from the environment, train(), and
destroy_process_group: a failure ends the process, and the launcher's
restart (if any) starts it again.
"""

import datetime
import gc
import os
import socket
import sys
import threading
import time

import torch.distributed as _dist

from dslaunch import _contract, _wire

# A collective's failure that a lost peer causes (Gloo's, NCCL's, a store's):
# the worker waits for its agent's word then. Any other exception is the
# script's own and ends the process at once.
_COMM_WORDS = ("gloo", "nccl", "connection closed", "connection reset", "broken pipe", "timed out",
               "processgroup", "socket", "store")


def _is_comm_error(e):
    if type(e).__name__ in ("DistBackendError", "DistNetworkError", "DistStoreError"):
        return True
    return isinstance(e, RuntimeError) and any(w in str(e).lower() for w in _COMM_WORDS)


def _socket_fds():
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink("/proc/self/fd/" + name)
        except OSError:
            continue
        if target.startswith("socket:["):
            out[int(name)] = target
    return out


def _tcp_table():
    """socket:[inode] -> (local port, remote port, state) of this process's TCP sockets."""
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            with open("/proc/self/net/" + name) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            f = row.split()
            out["socket:[%s]" % f[9]] = (int(f[1].rsplit(":", 1)[1], 16), int(f[2].rsplit(":", 1)[1], 16), f[3])
    return out


class _Group:
    """One generation's process group and the TCP connections it opened."""

    def __init__(self, store, store_port, fds):
        self.store = store  # kept: rank 0's serves the group while it lives
        self.store_port, self.fds = store_port, fds
        self.shut_down = False

    def shut(self):
        """Shuts (not closes: the fds stay the group's) every established
        connection the group opened but its store's, so whatever waits on one
        returns with an error now. Safe from any thread, more than once."""
        if self.shut_down:
            return
        self.shut_down = True
        table = _tcp_table()
        for fd, target in self.fds.items():
            entry = table.get(target)
            if entry is None or entry[2] != "01" or self.store_port in entry[:2]:  # 01: ESTABLISHED
                continue
            try:
                if os.readlink("/proc/self/fd/%d" % fd) != target:
                    continue  # closed, and the number reused
                s = socket.socket(fileno=os.dup(fd))
                try:
                    s.shutdown(socket.SHUT_RDWR)
                finally:
                    s.close()
            except OSError:
                pass


class _Control:
    """This worker's end of the control channel; a daemon thread reads it."""

    def __init__(self, fd):
        self.sock = socket.socket(fileno=fd)
        self.cv = threading.Condition()
        self.request = None    # the newest WorkerReshape not yet taken, and when it came
        self.closed = False
        self.group = None      # shut when a request comes
        threading.Thread(target=self._read, name="dslaunch-control", daemon=True).start()

    def _read(self):
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            try:
                msg_type, length = _wire.parse_header(data)
                if length != len(data) - _wire.HEADER.size:
                    raise _wire.WireError("a packet of %d bytes for a frame of %d" % (len(data), length))
                if msg_type != _wire.WORKER_RESHAPE:
                    raise _wire.WireError("message type %d" % msg_type)
                request = _wire.decode_worker_reshape(data[_wire.HEADER.size:])
            except _wire.WireError as e:
                sys.stderr.write("dslaunch.torch: control channel: %s; ignored\n" % e)
                continue
            with self.cv:
                self.request = (request, time.monotonic())
                group = self.group
                self.cv.notify_all()
            if group is not None:
                group.shut()
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def pending(self):
        with self.cv:
            return self.request is not None

    def take(self, timeout):
        """The newest request, waiting up to `timeout` s; None when none came or the agent is gone."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while self.request is None and not self.closed and time.monotonic() < deadline:
                self.cv.wait(max(0.0, deadline - time.monotonic()))
            request, self.request = self.request, None
            return request

    def answer(self, generation, ok, why, micros):
        try:
            self.sock.send(_wire.encode_worker_reshaped(generation, ok, why, micros))
        except OSError as e:
            sys.stderr.write("dslaunch.torch: cannot answer the reshape to generation %d: %s\n" % (generation, e))


def _local_address(toward):
    """This host's address on the route toward `toward` (the first
    generation's MASTER_ADDR, dslaunch's pick of the address every node
    reaches): where a rank 0 tells the others its store listens."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect((toward, 9))  # a UDP connect sends nothing
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


class _Job:
    def __init__(self, control, backend, timeout, wait):
        env = os.environ
        self.control, self.backend, self.timeout, self.wait = control, backend, timeout, wait
        self.host = _local_address(env.get("MASTER_ADDR", "127.0.0.1"))
        self.store = _wire.StoreClient(env["DSLAUNCH_STORE_ADDR"], env.get("DSLAUNCH_STORE_TOKEN", ""),
                                       env.get("DSLAUNCH_JOB_ID", ""))

    def follow(self, request):
        """A WorkerReshape that names a store (a coordinator took the job over
        from a lost one, whose store went with it): the groups meet there
        from now on."""
        if request["store_addr"]:
            lost, self.store = self.store, _wire.StoreClient(request["store_addr"], request["store_token"],
                                                             os.environ.get("DSLAUNCH_JOB_ID", ""))
            lost.close()
            os.environ["DSLAUNCH_STORE_ADDR"] = request["store_addr"]
            os.environ["DSLAUNCH_STORE_TOKEN"] = request["store_token"]

    def form(self, generation, rank, world):
        """The group of `generation` (collective: every rank of it calls this)."""
        key = "dslaunch.torch/%d/store" % generation
        before = _socket_fds()
        if rank == 0:
            tcp = _dist.TCPStore(self.host, 0, world, True, timeout=self.timeout, wait_for_workers=False)
            host, port = self.host, tcp.port
            self.store.set(key, "%s:%d" % (host, port))
        else:
            host, _, port = self.store.get(key, self.timeout.total_seconds()).decode().rpartition(":")
            port = int(port)
            tcp = _dist.TCPStore(host, port, world, False, timeout=self.timeout)
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = host, str(port)  # for a script that reads them
        _dist.init_process_group(self.backend, store=_dist.PrefixStore("dslaunch/%d" % generation, tcp),
                                 rank=rank, world_size=world, timeout=self.timeout)
        after = _socket_fds()
        group = _Group(tcp, port, {fd: t for fd, t in after.items() if before.get(fd) != t})
        with self.control.cv:
            self.control.group = group
            pending = self.control.request is not None
        if pending:
            group.shut()  # a newer word came while it formed
        return group

    def drop(self, group):
        from dslaunch import torch as dst
        dst.wait()
        group.shut()
        with self.control.cv:
            self.control.group = None
        if _dist.is_initialized():
            _dist.destroy_process_group()
        gc.collect()  # the old DDP and its buffers, held by the exception's frames until now


def _apply(request):
    env = os.environ
    env["RANK"] = env["ROLE_RANK"] = str(request["rank"])
    env["WORLD_SIZE"] = env["ROLE_WORLD_SIZE"] = str(request["world"])
    env["DSLAUNCH_GENERATION"] = str(request["generation"])
    env["DSLAUNCH_RESUME_STEP"] = str(request["step"])
    env["DSLAUNCH_RESUME_SET"] = request["set"]
    _contract.counter.reshaped()


def _control_from_env():
    text = os.environ.get("DSLAUNCH_CONTROL_FD", "")
    if not text or not os.environ.get("DSLAUNCH_STORE_ADDR"):
        return None
    if not text.isdigit():
        raise RuntimeError("dslaunch.torch: DSLAUNCH_CONTROL_FD=%r: expected a file descriptor number" % text)
    return _Control(int(text))


def elastic(train, backend="gloo", timeout=datetime.timedelta(minutes=30), wait=60.0):
    """Runs train() (no arguments; it builds DDP, calls restore() and trains)
    in a process group this function forms (`backend`, `timeout` as for
    init_process_group), again after each in-place recovery; returns what
    the last train() returned. `wait`: how long a rank whose collective
    failed waits for its agent's word before the error ends it."""
    control = _control_from_env()
    if control is None:
        if not _dist.is_initialized():
            _dist.init_process_group(backend, timeout=timeout)
        try:
            return train()
        finally:
            from dslaunch import torch as dst
            dst.wait()
            if _dist.is_initialized():
                _dist.destroy_process_group()
    _contract.counter.open()  # the beats carry the rank this worker started with
    job = _Job(control, backend, timeout, wait)
    env = os.environ
    generation, rank, world = int(env.get("DSLAUNCH_GENERATION", "0")), int(env["RANK"]), int(env["WORLD_SIZE"])
    request = None
    while True:
        try:
            if request is not None:
                job.follow(request[0])
            group = job.form(generation, rank, world)
        except Exception as e:
            if request is not None:
                control.answer(generation, False, "could not form the group of %d: %s" % (world, e),
                               (time.monotonic() - request[1]) * 1e6)
            raise
        if request is not None:
            control.answer(generation, True, "", (time.monotonic() - request[1]) * 1e6)
        try:
            result = train()
        except Exception as e:
            if not control.pending() and not _is_comm_error(e):
                raise
            request = control.take(job.wait)
            if request is None:
                raise
        else:
            job.drop(group)
            return result
        job.drop(group)
        generation, rank, world = request[0]["generation"], request[0]["rank"], request[0]["world"]
        _apply(request[0])

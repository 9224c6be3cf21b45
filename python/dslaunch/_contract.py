"""The worker contract as a Python worker speaks it (wire/wire_format.md,
"Step heartbeats (UDP)" and "The dslaunch Python package").

What dslaunch's agent set in this process's environment is read here, once,
at the first use (not at import: a warm spare imports this before it is given
its generation's environment). Step beats are one UDP datagram each, sent
without blocking to DSLAUNCH_HEARTBEAT_ADDR; a lost or refused datagram only
delays hang detection and never fails the caller. Outside dslaunch (no
DSLAUNCH_HEARTBEAT_ADDR) every call here is a no-op.

Thread-safety: step counting takes a lock; it is called from the training
thread (the optimizer's step) and may be called from any other.
"""

import os
import socket
import struct
import threading
import weakref

TOKEN_CHARS = 32  # wire/step_heartbeat.h kStepBeatTokenChars
_NAN = float("nan")


def encode_beat(rank, step, token, compute_micros=-1, samples=-1, save_stall_micros=-1, loss=None):
    """The datagram for one beat (wire/step_heartbeat.h): the long form (64
    bytes); the save form (72) when it carries a save's stall; the metric form
    (88) when it carries a loss (accuracy: not said, NaN)."""
    out = struct.pack(">qq", rank, step) + token + struct.pack(">qq", compute_micros, samples)
    if loss is not None:
        return out + struct.pack(">qdd", save_stall_micros if save_stall_micros >= 0 else -1, loss, _NAN)
    if save_stall_micros >= 0:
        out += struct.pack(">q", save_stall_micros)
    return out


class _Endpoint:
    """The agent's beat endpoint as this process's environment names it."""

    def __init__(self, environ):
        self.rank = int(environ.get("RANK", "0") or 0)
        self.token = environ.get("DSLAUNCH_HEARTBEAT_TOKEN", "").encode("ascii", "replace")
        self.sock = None
        addr = environ.get("DSLAUNCH_HEARTBEAT_ADDR", "")
        host, _, port = addr.rpartition(":")
        if not host or not port.isdigit() or len(self.token) != TOKEN_CHARS:
            return
        host = host.strip("[]")
        try:
            info = socket.getaddrinfo(host, int(port), type=socket.SOCK_DGRAM, flags=socket.AI_NUMERICHOST)[0]
            sock = socket.socket(info[0], socket.SOCK_DGRAM)
            sock.setblocking(False)
            sock.connect(info[4])
            self.sock = sock
        except OSError:
            self.sock = None

    def send(self, step, samples=-1, save_stall_micros=-1, loss=None):
        if self.sock is None:
            return
        try:
            self.sock.send(encode_beat(self.rank, step, self.token, -1, samples, save_stall_micros, loss))
        except OSError:
            pass  # the agent is gone or busy: a lost beat, by design


class StepCounter:
    """Which step this worker is at, and the beat that says it.

    Counted by the optimizer hook (optimizer_stepped: a new step whenever any
    optimizer reaches a step count none reached before, so two optimizers
    stepping once per iteration count one step), or said by the script
    (step(): from then on the hook counts nothing). restored() moves the
    count to a restored step."""

    def __init__(self, environ=None):
        self._environ = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._endpoint = None
        self._pid = None
        self._explicit = False
        self._per_optimizer = weakref.WeakKeyDictionary()
        self._most = 0      # the most steps any one optimizer made
        self.step = 0       # the last step said
        self.loss = None    # the last loss the script gave
        self._save_stall_micros = -1

    def open(self):
        """Opens the endpoint now (else at the first beat) with the RANK of
        now: the one the agent started this worker with, which its beats
        carry for its life, also after an in-place recovery renumbers it."""
        with self._lock:
            self._open()

    def _open(self):
        if self._pid != os.getpid():  # first use, or a forked child: its own socket, its parent's contract
            self._endpoint = _Endpoint(self._environ)
            self._pid = os.getpid()

    def _send(self, samples=-1, loss=None):
        self._open()
        stall, self._save_stall_micros = self._save_stall_micros, -1
        self._endpoint.send(self.step, samples, stall, loss)

    def optimizer_stepped(self, optimizer):
        with self._lock:
            if self._explicit:
                return
            n = self._per_optimizer.get(optimizer, 0) + 1
            self._per_optimizer[optimizer] = n
            if n <= self._most:
                return
            self._most = n
            self.step += 1
            self._send()

    def said(self, n=None, samples=None, loss=None):
        with self._lock:
            self._explicit = True
            self.step = self.step + 1 if n is None else int(n)
            if loss is not None:
                self.loss = float(loss)
            self._send(-1 if samples is None else max(-1, int(samples)), None if loss is None else float(loss))

    def restored(self, step):
        with self._lock:
            self.step = int(step)

    def reshaped(self):
        """After an in-place recovery: the new generation's optimizers count
        from their first step."""
        with self._lock:
            self._per_optimizer = weakref.WeakKeyDictionary()
            self._most = 0

    def saved(self, stall_seconds):
        """The next beat carries this save's stall (dslaunch_rank_save_stall_seconds)."""
        with self._lock:
            self._save_stall_micros = max(0, int(stall_seconds * 1e6))


counter = StepCounter()

"""dslaunch's frames as a Python worker speaks them (wire/wire_format.md:
"Frames", "Handshake", "Store session", "In-place recovery"): the control
channel's WorkerReshape/WorkerReshaped and a blocking client of the
coordinator's key/value store. Standard library only.

A frame is a 12-byte header (magic "DSLN", u16 version, u16 type, u32
length), then the payload; integers big-endian, str = u32 length + bytes.
"""

import hashlib
import hmac
import socket
import struct
import time

MAGIC = 0x44534C4E
VERSION = 13  # wire/wire_format.h kVersion (tests/python checks they agree)
HEADER = struct.Struct(">IHHI")
MAX_HANDSHAKE_REPLY = 4096  # wire/wire_format.h kMaxHandshakeReply
MAX_PAYLOAD = 16 << 20

# wire/wire_format.h MsgType
HELLO, CHALLENGE, AUTH, AUTH_OK, ERROR = 1, 2, 3, 4, 5
STORE_SET, STORE_GET, STORE_OK, STORE_VALUE = 30, 31, 34, 35
WORKER_RESHAPE, WORKER_RESHAPED = 43, 44
ROLE_STORE = 2


class WireError(Exception):
    """A frame that is not one of ours, or a peer that broke the protocol."""


def frame(msg_type, payload):
    return HEADER.pack(MAGIC, VERSION, msg_type, len(payload)) + payload


def string(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack(">I", len(b)) + b


class Reader:
    """Decodes one payload's fields in order; finish() refuses bytes left over."""

    def __init__(self, data):
        self.data, self.at = bytes(data), 0

    def _take(self, n):
        if self.at + n > len(self.data):
            raise WireError("short payload")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def u8(self):
        return self._take(1)[0]

    def u32(self):
        return struct.unpack(">I", self._take(4))[0]

    def i32(self):
        return struct.unpack(">i", self._take(4))[0]

    def i64(self):
        return struct.unpack(">q", self._take(8))[0]

    def blob(self):
        return self._take(self.u32())

    def str(self):
        return self.blob().decode("utf-8", "replace")

    def finish(self):
        if self.at != len(self.data):
            raise WireError("%d bytes left over" % (len(self.data) - self.at))


def printable(text):
    """A peer's words as common/strings.h Printable() shows them: printable
    ASCII kept, every other byte \\xNN."""
    return "".join(chr(b) if 32 <= b < 127 else "\\x%02x" % b for b in text.encode("utf-8", "surrogateescape"))


def parse_header(data):
    """(type, length) of a frame's first 12 bytes; WireError for another magic or version."""
    if len(data) < HEADER.size:
        raise WireError("truncated header")
    magic, version, msg_type, length = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise WireError("not a dslaunch frame")
    if version != VERSION:
        raise WireError("wire version %d, this package speaks %d (dslaunch and this package differ)" %
                        (version, VERSION))
    return msg_type, length


def decode_worker_reshape(payload):
    """WorkerReshape: {generation, rank, world, step, set, store_addr, store_token}."""
    r = Reader(payload)
    out = {"generation": r.u32(), "rank": r.i32(), "world": r.u32(), "step": r.i64(), "set": r.str(),
           "store_addr": r.str(), "store_token": r.str()}
    r.finish()
    return out


def encode_worker_reshaped(generation, ok, why, micros):
    return frame(WORKER_RESHAPED, struct.pack(">IB", generation, 1 if ok else 0) + string(why) +
                 struct.pack(">I", max(0, min(int(micros), 0xFFFFFFFF))))


class StoreClient:
    """The coordinator's key/value store (DSLAUNCH_STORE_ADDR), authenticated
    with a generation's store token (DSLAUNCH_STORE_TOKEN) both ways: it
    proves the token and checks the server's proof before it trusts a
    reply. One request at a time; not thread-safe."""

    def __init__(self, addr, token, job_id, timeout=10.0):
        host, _, port = addr.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError("DSLAUNCH_STORE_ADDR=%r: expected host:port" % addr)
        self.addr = addr
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self._handshake(token.encode(), job_id, timeout)
        except BaseException:
            self.sock.close()
            raise

    def _handshake(self, key, job_id, timeout):
        deadline = time.monotonic() + timeout
        self._send(HELLO, struct.pack(">B", ROLE_STORE) + string("dslaunch.torch") + string(job_id) +
                   struct.pack(">I", 0))
        nonce = self._expect(CHALLENGE, deadline, MAX_HANDSHAKE_REPLY).blob()
        self._send(AUTH, string(hmac.new(key, nonce, hashlib.sha256).digest()))
        proof = self._expect(AUTH_OK, deadline, MAX_HANDSHAKE_REPLY).blob()
        if not hmac.compare_digest(proof, hmac.new(key, b"server" + nonce, hashlib.sha256).digest()):
            raise WireError("store %s failed to prove it knows the token: it is not this job's" % self.addr)

    def _send(self, msg_type, payload):
        self.sock.sendall(frame(msg_type, payload))

    def _read(self, n, deadline):
        out = b""
        while len(out) < n:
            self.sock.settimeout(max(0.001, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(n - len(out))
            except socket.timeout:
                raise TimeoutError("store %s: no reply in time" % self.addr) from None
            if not chunk:
                raise WireError("store %s closed the connection" % self.addr)
            out += chunk
        return out

    def _expect(self, want, deadline, limit=MAX_PAYLOAD):
        msg_type, length = parse_header(self._read(HEADER.size, deadline))
        if length > limit:
            raise WireError("store %s: a frame of %d bytes" % (self.addr, length))
        r = Reader(self._read(length, deadline))
        if msg_type == ERROR:
            code, message = r.u32(), r.str()
            raise WireError("store %s: error %d: %s" % (self.addr, code, printable(message)))
        if msg_type != want:
            raise WireError("store %s: message type %d, expected %d" % (self.addr, msg_type, want))
        return r

    def set(self, key, value):
        self._send(STORE_SET, string(key) + string(value))
        self._expect(STORE_OK, time.monotonic() + 30).finish()

    def get(self, key, timeout):
        """The value of `key` once it exists, waiting up to `timeout` seconds."""
        ms = max(1, int(timeout * 1000))
        self._send(STORE_GET, string(key) + struct.pack(">I", min(ms, 0xFFFFFFFF)))
        r = self._expect(STORE_VALUE, time.monotonic() + timeout + 10)
        value = r.blob()
        r.finish()
        return value

    def close(self):
        self.sock.close()

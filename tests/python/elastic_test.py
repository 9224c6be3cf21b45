"""python/dslaunch/_wire.py and _elastic.py: the frames are the C++ side's
(the golden payloads of tests/wire/protocol_golden_test.cc, the wire
version of wire/wire_format.h), the store client refuses a server that
cannot prove the token, the control channel's word shuts the group's
connections (a receive waiting on a silent peer returns at once; the
store's connection is spared) and its answer is a WorkerReshaped, a word
that names a store moves the store's connection there, and only
a collective's failure waits for the agent's word.
Run against the package as built: elastic_test.py BUILD/python.
Real sockets (TCP, a SOCK_SEQPACKET pair); _elastic's checks need torch."""

import datetime
import hashlib
import hmac
import os
import re
import socket
import struct
import sys
import threading
import time
import unittest

PKG = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else None
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
if PKG:
    sys.path.insert(0, PKG)

from dslaunch import _wire  # noqa: E402

# tests/wire/protocol_golden_test.cc's WorkerReshape pin
RESHAPE = bytes.fromhex("00000005000000020000000600000000000001900000001030313233343536373839616263646566"
                        "0000000e31302e302e302e393a323934303000000003746f6b")
RESHAPED = bytes.fromhex("0000000501000000026f6b00000309")


def have_torch():
    try:
        import torch.distributed  # noqa: F401
        return True
    except ImportError:
        return False


class Frames(unittest.TestCase):
    def test_the_wire_version_is_the_programs(self):
        with open(os.path.join(SOURCE, "wire", "wire_format.h")) as f:
            version = int(re.search(r"constexpr uint16_t kVersion = (\d+);", f.read()).group(1))
        self.assertEqual(_wire.VERSION, version)

    def test_worker_reshape_decodes_the_golden_payload(self):
        self.assertEqual(_wire.decode_worker_reshape(RESHAPE),
                         {"generation": 5, "rank": 2, "world": 6, "step": 400, "set": "0123456789abcdef",
                          "store_addr": "10.0.0.9:29400", "store_token": "tok"})

    def test_a_payload_short_or_long_is_refused(self):
        for bad in (RESHAPE[:-1], RESHAPE + b"\0"):
            with self.assertRaises(_wire.WireError):
                _wire.decode_worker_reshape(bad)

    def test_worker_reshaped_is_the_golden_frame(self):
        out = _wire.encode_worker_reshaped(5, True, "ok", 777)
        self.assertEqual(out, struct.pack(">IHHI", 0x44534C4E, _wire.VERSION, 44, len(RESHAPED)) + RESHAPED)

    def test_another_version_is_named(self):
        with self.assertRaisesRegex(_wire.WireError, "wire version 3"):
            _wire.parse_header(struct.pack(">IHHI", 0x44534C4E, 3, 43, 0))


class FakeStore:
    """The coordinator's side of the handshake, honest or not, then one reply."""

    def __init__(self, key, honest=True, reply=None):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.addr = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.key, self.honest, self.got = key, honest, []
        self.reply = reply or _wire.frame(_wire.STORE_VALUE, _wire.string(b"10.0.0.1:4242"))
        threading.Thread(target=self.serve, daemon=True).start()

    def read_frame(self, conn):
        head = conn.recv(12, socket.MSG_WAITALL)
        msg_type, length = _wire.parse_header(head)
        return msg_type, (conn.recv(length, socket.MSG_WAITALL) if length else b"")

    def serve(self):
        conn, _ = self.listener.accept()
        self.listener.close()
        with conn:
            self.got.append(self.read_frame(conn))  # Hello
            nonce = os.urandom(32)
            conn.sendall(_wire.frame(_wire.CHALLENGE, _wire.string(nonce)))
            self.got.append(self.read_frame(conn))  # Auth
            proof = hmac.new(self.key if self.honest else b"another", b"server" + nonce, hashlib.sha256).digest()
            conn.sendall(_wire.frame(_wire.AUTH_OK, _wire.string(proof)))
            try:
                self.got.append(self.read_frame(conn))
                conn.sendall(self.reply)
            except (OSError, _wire.WireError):
                pass


class Store(unittest.TestCase):
    def test_a_get_after_the_handshake(self):
        s = FakeStore(b"tok")
        c = _wire.StoreClient(s.addr, "tok", "job-1")
        self.assertEqual(c.get("dslaunch.torch/1/store", 5), b"10.0.0.1:4242")
        c.close()
        hello, auth, get = s.got
        self.assertEqual(hello[0], _wire.HELLO)
        r = _wire.Reader(hello[1])
        self.assertEqual((r.u8(), r.str(), r.str(), r.u32()), (_wire.ROLE_STORE, "dslaunch.torch", "job-1", 0))
        self.assertEqual(get[0], _wire.STORE_GET)

    def test_an_error_text_is_escaped_before_it_is_shown(self):
        s = FakeStore(b"tok", reply=_wire.frame(_wire.ERROR, struct.pack(">I", 3) + _wire.string("no key \x1b[2J")))
        c = _wire.StoreClient(s.addr, "tok", "job-1")
        with self.assertRaises(_wire.WireError) as e:
            c.get("k", 5)
        c.close()
        self.assertIn("no key \\x1b[2J", str(e.exception))

    def test_a_server_that_cannot_prove_the_token_is_refused(self):
        s = FakeStore(b"tok", honest=False)
        with self.assertRaisesRegex(_wire.WireError, "failed to prove"):
            _wire.StoreClient(s.addr, "tok", "job-1")


@unittest.skipUnless(have_torch(), "no torch on this interpreter")
class Control(unittest.TestCase):
    def setUp(self):
        from dslaunch import _elastic
        self.elastic = _elastic
        self.agent, worker = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.control = _elastic._Control(worker.detach())
        self.addCleanup(self.control.sock.close)
        self.addCleanup(self.agent.close)

    def pair(self):
        listener = socket.create_server(("127.0.0.1", 0))
        a = socket.create_connection(listener.getsockname())
        b, _ = listener.accept()
        listener.close()
        return a, b

    def test_the_word_shuts_the_groups_connections_but_the_stores(self):
        before = self.elastic._socket_fds()
        peer_link, peer = self.pair()      # a Gloo pair whose peer went silent
        store_link, store_end = self.pair()
        after = self.elastic._socket_fds()
        fds = {fd: t for fd, t in after.items() if before.get(fd) != t}
        group = self.elastic._Group(None, store_end.getsockname()[1], fds)
        self.control.group = group
        waited = []

        def receive():
            started = time.monotonic()
            waited.append((peer_link.recv(10), time.monotonic() - started))
        t = threading.Thread(target=receive)
        t.start()
        self.agent.send(_wire.frame(_wire.WORKER_RESHAPE, RESHAPE))
        t.join(10)
        self.assertFalse(t.is_alive(), "the receive on the silent peer still waits")
        self.assertEqual(waited[0][0], b"")
        request = self.control.take(5)
        self.assertEqual(request[0]["rank"], 2)
        store_end.sendall(b"x")  # the store's connection still carries bytes
        self.assertEqual(store_link.recv(1), b"x")
        for s in (peer_link, peer, store_link, store_end):
            s.close()

    def test_a_bad_packet_is_skipped_and_the_answer_is_a_worker_reshaped(self):
        self.agent.send(b"garbage that is no frame")
        self.agent.send(_wire.frame(_wire.WORKER_RESHAPE, RESHAPE))
        self.assertEqual(self.control.take(5)[0]["generation"], 5)
        self.control.answer(5, True, "ok", 777)
        self.assertEqual(self.agent.recv(1 << 16)[12:], RESHAPED)

    def test_no_word_when_the_agent_is_gone(self):
        self.agent.close()
        self.assertIsNone(self.control.take(5))

    def test_a_word_that_names_a_store_moves_the_connection_there(self):
        # A coordinator that took the job over names its own store: the groups meet there from now on.
        first, second = FakeStore(b"tok0"), FakeStore(b"tok1")
        env = {"DSLAUNCH_STORE_ADDR": first.addr, "DSLAUNCH_STORE_TOKEN": "tok0", "DSLAUNCH_JOB_ID": "job-1",
               "MASTER_ADDR": "127.0.0.1"}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            job = self.elastic._Job(self.control, "gloo", datetime.timedelta(seconds=5), 1.0)
            job.follow({"store_addr": "", "store_token": ""})  # the one it holds
            self.assertEqual(job.store.addr, first.addr)
            job.follow(_wire.decode_worker_reshape(RESHAPE) | {"store_addr": second.addr, "store_token": "tok1"})
            self.assertEqual((job.store.addr, os.environ["DSLAUNCH_STORE_ADDR"]), (second.addr, second.addr))
            self.assertEqual(job.store.get("dslaunch.torch/1/store", 5), b"10.0.0.1:4242")  # tok1 proved both ways
            job.store.close()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_only_a_collectives_failure_waits_for_the_word(self):
        comm = RuntimeError("[./gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:4242")
        self.assertTrue(self.elastic._is_comm_error(comm))
        self.assertFalse(self.elastic._is_comm_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied")))
        self.assertFalse(self.elastic._is_comm_error(ValueError("gloo")))


if __name__ == "__main__":
    if PKG is None:
        sys.exit("usage: elastic_test.py BUILD/python")
    result = unittest.main(exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if not have_torch():
        print("SKIP: the control channel's checks need torch (%s has none)" % sys.executable)
        sys.exit(77)

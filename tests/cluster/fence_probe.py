#!/usr/bin/env python3
"""The fencing probe of failover_partition_test.sh: a frame replayed from a
deposed leader must command nobody (wire/wire_format.md "Fencing").

  fence_probe.py sniff IFACE OUT
      Records the first Fenced Ping a coordinator sends on IFACE (the old
      leader's to its own host's agent, on lo) into OUT, as hex, and exits.

  fence_probe.py relay LISTEN_IP LISTEN_PORT FRAME LOG
      A TCP relay for connections iptables redirected to it (their original
      destination from SO_ORIGINAL_DST; its own connections carry MARK, which
      the redirect rule skips). Once a coordinator's Fenced frame with a
      token newer than FRAME's has passed to the agent, it injects, at a
      frame boundary of that connection: FRAME (the old leader's stamped
      Ping, byte for byte), then a control Ping with a stamp of its own
      inside a Fenced with the new token. An agent that admitted a Ping
      answers it at once (its echo_micros = the stamp), in order. So when
      the control's echo comes back and FRAME's did not come before it,
      FRAME was refused: "refused" in LOG; "ADMITTED" when its echo came.
      Both echoes are kept from the coordinator. Ends after 120 s.

Standard library only; frames as python/dslaunch/_wire.py reads them.
"""

import importlib.util
import os
import socket
import struct
import sys
import threading
import time

# _wire.py alone (the package's __init__ wants the build's _version.py).
_spec = importlib.util.spec_from_file_location(
    "_wire", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "dslaunch", "_wire.py"))
_wire = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_wire)

PING, FENCED = 19, 49
SO_ORIGINAL_DST = 80
MARK = 0x4453  # the relay's own connections: the redirect rule skips them


def fenced_ping(payload):
    """(token, sent_micros) of a Fenced Ping payload, else None."""
    try:
        r = _wire.Reader(payload)
        token, inner, body = struct.unpack(">Q", r._take(8))[0], r.u32(), r.blob()
        r.finish()
        if inner != PING or len(body) != 16:
            return None
        return token, struct.unpack(">QQ", body)[0]
    except _wire.WireError:
        return None


def sniff(iface, out):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    deadline = time.time() + 60
    while time.time() < deadline:
        pkt = s.recv(65536)[14:]  # past the (zero) Ethernet header of lo
        if len(pkt) < 20 or pkt[0] >> 4 != 4 or pkt[9] != 6:
            continue
        tcp = pkt[(pkt[0] & 15) * 4:]
        data = tcp[(tcp[12] >> 4) * 4:]
        if len(data) < _wire.HEADER.size:
            continue
        magic, _version, msg_type, length = _wire.HEADER.unpack_from(data)
        if magic != _wire.MAGIC or msg_type != FENCED or len(data) < _wire.HEADER.size + length:
            continue
        frame = data[:_wire.HEADER.size + length]
        if fenced_ping(frame[_wire.HEADER.size:]) is None:
            continue
        with open(out + ".tmp", "w") as f:
            f.write(frame.hex())
        os.rename(out + ".tmp", out)
        return 0
    return 1


def read_frame(sock):
    """One whole frame (header and payload) as bytes; None at the end."""
    head = b""
    while len(head) < _wire.HEADER.size:
        got = sock.recv(_wire.HEADER.size - len(head))
        if not got:
            return None
        head += got
    length = _wire.HEADER.unpack(head)[3]
    body = b""
    while len(body) < length:
        got = sock.recv(min(65536, length - len(body)))
        if not got:
            return None
        body += got
    return head + body


class Probe:
    def __init__(self, old_frame, log):
        self.old = old_frame
        self.old_token, self.old_stamp = fenced_ping(old_frame[_wire.HEADER.size:])
        self.control_stamp = self.old_stamp + 1
        self.log_path = log
        self.lock = threading.Lock()
        self.injected = False
        self.old_echoed = False
        self.done = False

    def log(self, line):
        with self.lock, open(self.log_path, "a") as f:
            f.write(line + "\n")

    def to_agent(self, frame, agent):
        """Forwards a coordinator's frame; injects the probe after the first newer token."""
        agent.sendall(frame)
        _magic, _v, msg_type, _n = _wire.HEADER.unpack_from(frame)
        if msg_type != FENCED or self.injected:
            return
        token = struct.unpack_from(">Q", frame, _wire.HEADER.size)[0]
        if token <= self.old_token:
            return
        self.injected = True
        control = struct.pack(">QQ", self.control_stamp, 0)
        control = _wire.frame(FENCED, struct.pack(">QI", token, PING) + _wire.string(control))
        agent.sendall(self.old + control)
        self.log("injected: the old leader's Ping (token %d) and a control Ping (token %d)" % (self.old_token, token))

    def to_coordinator(self, frame, coordinator):
        """Forwards an agent's frame, except the echoes of the probe's Pings."""
        _magic, _v, msg_type, length = _wire.HEADER.unpack_from(frame)
        if msg_type == PING and length == 16:
            echo = struct.unpack_from(">QQ", frame, _wire.HEADER.size)[1]
            if echo == self.old_stamp:
                self.old_echoed = True
                self.log("ADMITTED: the agent answered the old leader's replayed Ping (token %d)" % self.old_token)
                return
            if echo == self.control_stamp:
                if not self.old_echoed:
                    self.log("refused: the old leader's Ping (token %d) got no answer; the control's did" %
                             self.old_token)
                self.done = True
                return
        coordinator.sendall(frame)


def pump(src, dst, each):
    try:
        while True:
            frame = read_frame(src)
            if frame is None:
                break
            each(frame, dst)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(agent, probe):
    raw = agent.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, ip = struct.unpack_from(">H", raw, 2)[0], socket.inet_ntoa(raw[4:8])
    up = socket.socket()
    up.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, MARK)
    up.settimeout(3)
    try:
        up.connect((ip, port))
    except OSError as e:
        probe.log("no connection to %s:%d: %s" % (ip, port, e))
        agent.close()
        return
    up.settimeout(None)
    probe.log("relaying an agent to %s:%d" % (ip, port))
    threading.Thread(target=pump, args=(up, agent, probe.to_agent), daemon=True).start()
    threading.Thread(target=pump, args=(agent, up, probe.to_coordinator), daemon=True).start()


def relay(listen_ip, listen_port, frame_file, log):
    with open(frame_file) as f:
        probe = Probe(bytes.fromhex(f.read().strip()), log)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((listen_ip, int(listen_port)))
    s.listen(16)
    s.settimeout(1)
    probe.log("listening")
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            agent, _ = s.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(agent, probe), daemon=True).start()
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "sniff":
        sys.exit(sniff(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 6 and sys.argv[1] == "relay":
        sys.exit(relay(*sys.argv[2:]))
    sys.exit(__doc__)

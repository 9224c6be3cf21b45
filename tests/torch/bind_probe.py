# torchrun's contract where it is explicit (cases from torch's own launcher
# tests): every rank prints the MASTER_PORT it sees; then either
#   MODE=bind:  rank 0 binds (MASTER_ADDR, MASTER_PORT) itself, not the any
#               address, and every other rank connects there and reads a line;
#   MODE=store: a Gloo group over env:// (rank 0's TCPStore on MASTER_PORT)
#               all-reduces.
import os
import socket
import time

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
print(f"rank={rank} master_addr={addr} master_port={port}", flush=True)
if os.environ.get("MODE", "bind") == "store":
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"rank={rank} allreduce={int(t.item())}", flush=True)
    dist.destroy_process_group()
elif rank == 0:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen()
    for _ in range(world - 1):
        c, _ = s.accept()
        c.sendall(b"hello from rank 0\n")
        c.close()
    print("rank=0 served", flush=True)
else:
    deadline = time.monotonic() + 60
    while True:  # as torch's store client: refused while rank 0 does not listen yet
        try:
            c = socket.create_connection((addr, port), timeout=60)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # the client's retry interval, as torch's (it has a deadline)
    print(f"rank={rank} got={c.makefile().readline().strip()!r}", flush=True)

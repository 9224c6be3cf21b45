# Does a rank reach rank 0's store before rank 0 has made it? Rank 1 connects
# to MASTER_ADDR:MASTER_PORT while rank 0 waits (on the FIFO PROBE_FIFO) for
# it to finish: rank 0 has not created its TCPStore yet, so the connect is
# accepted only when something else already listens there (dslaunch's store
# relay); without one it is refused, and torch's own store client would wait
# out its 1 s retry. Then both join a Gloo group through env:// and pass a
# barrier. Prints each rank's MASTER_PORT and rank 1's probe result.
import os
import select
import socket

import torch.distributed as dist

rank = int(os.environ["RANK"])
addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
fifo = os.environ["PROBE_FIFO"]
print(f"rank={rank} master_port={port}", flush=True)
if rank == 0:
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    ready, _, _ = select.select([fd], [], [], 60)  # no writer yet: not readable until rank 1 writes
    print(f"rank=0 probe_done={bool(ready)}", flush=True)
else:
    try:
        with socket.create_connection((addr, port), timeout=10):
            result = "accepted"
    except ConnectionRefusedError:
        result = "refused"
    print(f"rank={rank} store_probe={result}", flush=True)
    with open(fifo, "w") as f:
        f.write("done")
dist.init_process_group("gloo")
dist.barrier()
print(f"rank={rank} past_barrier", flush=True)
dist.destroy_process_group()

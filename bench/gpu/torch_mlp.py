"""PyTorch's side of bench/gpu/gpu_bench: the same MLP, batch, precision and
optimizer as the dstrain run beside it, on the same GPU. The data set is
synthetic and kept in GPU memory, each batch gathered there by a random
permutation (dstrain does the same). bf16/fp16 use torch.autocast with fp32
parameters and Adam(fused=True) on them: PyTorch's usual mixed precision;
fp32 leaves TF32 off unless --tf32 (PyTorch's default for matmul).
Prints: torch <samples/s> samples/s (<steps> steps after <warmup> warm-up)."""
import argparse
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", required=True, help="e.g. 784,512,512,10")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--precision", choices=["fp32", "fp16", "bf16"], default="fp32")
    ap.add_argument("--samples", type=int, default=60000)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--tf32", action="store_true")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    sizes = [int(s) for s in a.sizes.split(",")]
    dev = torch.device("cuda")
    torch.manual_seed(1)
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, fused=True)
    x = torch.randn(a.samples, sizes[0], device=dev)
    y = torch.randint(0, sizes[-1], (a.samples,), device=dev)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")
    loss_fn = torch.nn.CrossEntropyLoss()
    perm = torch.randperm(a.samples, device=dev)
    at = 0

    def step():
        nonlocal perm, at
        if at + a.batch > a.samples:
            perm, at = torch.randperm(a.samples, device=dev), 0
        idx = perm[at:at + a.batch]
        at += a.batch
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = loss_fn(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    loss.item()  # the last step's loss on the host, as dstrain reads its own
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print(f"torch {a.steps * a.batch / dt:.1f} samples/s ({a.steps} steps after {a.warmup} warm-up)")


if __name__ == "__main__":
    main()

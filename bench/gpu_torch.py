"""gpu_torch.py - PyTorch's conv stem on the GPU, timed like bench-gpu_stem:
F.gelu(F.conv1d(...)) twice (cuDNN), kernel-only time between CUDA events on
device-resident inputs (4 buffers rotated), median of many runs after
warm-up, 3000 frames per window. fp32 with TF32 off, tf32 (TF32 allowed),
bf16 and fp16 (weights and input cast to the type).

    python3 bench/gpu_torch.py [--iters N] [--only tiny|large-v3]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

SHAPES = [("tiny", 80, 384, (1, 16, 64)), ("large-v3", 128, 1280, (1, 64))]
T = 3000


def stem(x, w1, b1, w2, b2):
    x = F.gelu(F.conv1d(x, w1, b1, padding=1))
    return F.gelu(F.conv1d(x, w2, b2, stride=2, padding=1))


def bench(prec, n_mels, d, nw, iters):
    torch.backends.cudnn.allow_tf32 = prec == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
    dt = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[prec]
    g = torch.Generator(device="cuda").manual_seed(0)
    k1, k2 = (3 * n_mels) ** -0.5, (3 * d) ** -0.5
    w1 = ((torch.rand(d, n_mels, 3, device="cuda", generator=g) * 2 - 1) * k1).to(dt)
    b1 = ((torch.rand(d, device="cuda", generator=g) * 2 - 1) * k1).to(dt)
    w2 = ((torch.rand(d, d, 3, device="cuda", generator=g) * 2 - 1) * k2).to(dt)
    b2 = ((torch.rand(d, device="cuda", generator=g) * 2 - 1) * k2).to(dt)
    xs = [(torch.rand(nw, n_mels, T, device="cuda", generator=g) * 2.5 - 1).to(dt) for _ in range(4)]
    with torch.no_grad():
        for i in range(5):
            stem(xs[i % 4], w1, b1, w2, b2)
        torch.cuda.synchronize()
        ts = []
        for i in range(iters):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            stem(xs[i % 4], w1, b1, w2, b2)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--only")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    print(f"# device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    print(f"{'shape':9s} {'prec':5s} {'win':>4s} {'us/launch':>12s} {'us/window':>12s} {'TFLOP/s':>10s}")
    for name, n_mels, d, wins in SHAPES:
        if args.only and args.only != name:
            continue
        flop = 2.0 * (T * d * 3 * n_mels + 1500.0 * d * 3 * d)
        for prec in ("fp32", "tf32", "bf16", "fp16"):
            for nw in wins:
                med = bench(prec, n_mels, d, nw, args.iters)
                print(f"{name:9s} {prec:5s} {nw:4d} {med:12.1f} {med / nw:12.2f} {flop * nw / (med * 1e-6) / 1e12:10.1f}", flush=True)


if __name__ == "__main__":
    main()

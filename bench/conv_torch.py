"""The CPU peer of build/bench-conv: the same cases with PyTorch's F.conv1d
(groups, dilation; the causal conv as padding K-1 and a slice, as Mamba's
reference does) and autograd for the backward. Same output format.

    python3 bench/conv_torch.py [--threads N] [--reps R] [--case NAME]
"""
import argparse
import time

import torch
import torch.nn.functional as F

CASES = [
    # name, n, c_in, c_out, groups, k, dil, pad_l, pad_r, t, act, bwd
    # bwd: 0 forward, 1 forward then backward, 2 backward alone (the forward untimed)
    ("dw_fwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, None, 0),
    ("dw_bwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, None, 2),
    ("dw_fwdbwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, None, 1),
    ("dil_relu", 32, 512, 512, 1, 3, 9, 9, 9, 32, "relu", 0),
    ("dw_silu", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, "silu", 0),
    ("dw_silu_bwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, "silu", 2),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--case")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for name, n, ci, co, g, k, dil, pl, pr, t, act, bwd in CASES:
        if a.case and a.case != name:
            continue
        x = torch.rand(n, ci, t) * 2 - 1
        w = torch.rand(co, ci // g, k) * 2 - 1
        b = torch.rand(co) * 2 - 1
        if bwd:
            x.requires_grad_(True)
            w.requires_grad_(True)
            b.requires_grad_(True)

        def fwd():
            y = F.conv1d(F.pad(x, (pl, pr)), w, b, dilation=dil, groups=g)
            return F.relu(y) if act == "relu" else F.silu(y) if act == "silu" else y

        dy = torch.rand_like(fwd().detach()) * 2 - 1
        ts = []
        for r in range(-3, a.reps):
            if bwd == 2:
                x.grad = w.grad = b.grad = None
                y = fwd()
            t0 = time.perf_counter()
            if bwd == 2:
                y.backward(dy)
            elif bwd:
                x.grad = w.grad = b.grad = None
                fwd().backward(dy)
            else:
                with torch.no_grad():
                    fwd()
            if r >= 0:
                ts.append(1e6 * (time.perf_counter() - t0))
        ts.sort()
        print(f"case={name} threads={a.threads} us={ts[len(ts) // 2]:.1f} min_us={ts[0]:.1f}")


if __name__ == "__main__":
    main()

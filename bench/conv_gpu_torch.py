"""conv_gpu_torch.py - the peer of bench-conv_gpu (bench/conv_gpu.c): the same rows of
docs/conv-engine.md's speed table in PyTorch on CUDA, cuDNN with its autotuner on
(torch.backends.cudnn.benchmark = True), fp32 with TF32 off, tf32 (fp32 tensors, TF32 on:
torch.backends.cudnn.allow_tf32, the dense forward rows only, as bench-conv_gpu) and bf16
(x, w, b, dy cast).

What each row computes (the same as bench/conv_gpu.c's descriptors):
  dw_*         Mamba's reference causal conv: silu(F.conv1d(x, w, b, groups=C, padding=3)[..., :T]).
               NLC: x is a contiguous (N, T, C) tensor, passed as x.transpose(1, 2), and the
               output is made a contiguous (N, T, C) tensor: any layout copies PyTorch makes
               are in the time.
  dw_bwd_*     the backward of that: forward once outside the timed region (x, w, b with
               requires_grad), then torch.autograd.grad(y, [x, w, b], dy, retain_graph=True)
               timed: the BWD kernels only (dx, dw, db).
  dil_relu     relu(F.conv1d(x, w, b, padding=9, dilation=9)), N256 C512 T32.
  resblock     x + F.conv1d(relu(F.conv1d(relu(x), w1, b1, padding=9, dilation=9)), w2, b2).
  jukebox      relu(F.conv1d(x, w, b, padding=27, dilation=27)), N4 C64 T131072.
  pointwise    F.conv1d(x, w, b), K1, N8 C512 -> 512 T16384 (a 1x1 conv).
  wav2vec2_fe  7x gelu(F.conv1d(h, w_i, stride=s_i)), no bias, N8 T160000; the GroupNorm
               after wav2vec2-base's first conv is left out (as in bench/conv_gpu.c).
  dac_down     F.conv1d(x, w, b, stride=8, padding=4), N8 C512->1024 T6890 K16.
  odd_c        gelu(F.conv1d(x, w, b, padding=1)), N8 C40->512 T16384 (C_in off multiples of 16).
  dil_bwd, w2v_bwd, dac_bwd  the backward (dx, dw, db; as dw_bwd_*) of F.conv1d alone: dil_relu's
               conv, a wav2vec2 512->512 K3 S2 layer (N8 T31999, no bias), dac_down's conv.
Timing: CUDA events around each call of the row (all of its convs), device-resident
inputs rotated over 4 copies when one set is under 256 MiB, 10 warm-up calls, the median
(and min) of --iters. Without CUDA events (--device cpu): time.perf_counter.

    python3 bench/conv_gpu_torch.py [--iters N] [--only SUBSTRING] [--json FILE]
                                    [--device cuda|cpu] [--quick]
--quick shrinks the shapes as bench-conv_gpu --quick does (N <= 2, T / 16 where T >= 512);
with --device cpu it smoke-tests the script on any machine.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F

# one conv: c_in, c_out, groups, k, stride, dil, pad_l, pad_r, pre, act, bias, add_in
def DW(c):
    return (c, c, c, 4, 1, 1, 3, 0, None, "silu", True, False)


def W2V(ci, k, s):
    return (ci, 512, 1, k, s, 1, 0, 0, None, "gelu", False, False)


def STEM1(m, d):
    return (m, d, 1, 3, 1, 1, 1, 1, None, "gelu", True, False)


def STEM2(d):
    return (d, d, 1, 3, 2, 1, 1, 1, None, "gelu", True, False)


# name, what, n, t, bwd, nlc, calls (as in bench/conv_gpu.c)
ROWS = [
    ("dw_fwd_n4", "depthwise causal FWD N4 C5120 T2048 K4 +bias+SILU", 4, 2048, False, True, [DW(5120)]),
    ("dw_bwd_n4", "depthwise causal BWD (dx,dw,db) N4 C5120 T2048 K4 +bias+SILU", 4, 2048, True, True, [DW(5120)]),
    ("dw_fwd_n1", "depthwise causal FWD N1 C12288 T16384 K4 +bias+SILU", 1, 16384, False, True, [DW(12288)]),
    ("dw_bwd_n1", "depthwise causal BWD (dx,dw,db) N1 C12288 T16384 K4 +bias+SILU", 1, 16384, True, True, [DW(12288)]),
    ("dil_relu", "dilated K3 D9 +bias+ReLU N256 C512 T32", 256, 32, False, True,
     [(512, 512, 1, 3, 1, 9, 9, 9, None, "relu", True, False)]),
    ("resblock", "ResConv1D block (relu, K3 D9, relu, K1, +x) N256 C512 T32, 2 calls", 256, 32, False, True,
     [(512, 512, 1, 3, 1, 9, 9, 9, "relu", "relu", True, False),
      (512, 512, 1, 1, 1, 1, 0, 0, None, None, True, True)]),
    ("jukebox", "dilated K3 D27 +bias+ReLU N4 C64 T131072 (Jukebox)", 4, 131072, False, True,
     [(64, 64, 1, 3, 1, 27, 27, 27, None, "relu", True, False)]),
    ("pointwise", "pointwise K1 +bias N8 C512 T16384", 8, 16384, False, True,
     [(512, 512, 1, 1, 1, 1, 0, 0, None, None, True, False)]),
    ("wav2vec2_fe", "wav2vec2 feature encoder, 7 convs + GELU, N8 T160000, 7 calls", 8, 160000, False, True,
     [W2V(1, 10, 5)] + [W2V(512, 3, 2)] * 4 + [W2V(512, 2, 2)] * 2),
    ("dac_down", "DAC downsampler N8 C512->1024 T6890 K16 S8 P4 +bias", 8, 6890, False, True,
     [(512, 1024, 1, 16, 8, 1, 4, 4, None, None, True, False)]),
    ("odd_c", "dense K3 P1 +bias+GELU N8 C40->512 T16384 (C_in off multiples of 16)", 8, 16384, False, True,
     [(40, 512, 1, 3, 1, 1, 1, 1, None, "gelu", True, False)]),
    ("dil_bwd", "dense BWD (dx,dw,db) K3 D9 P9 +bias N256 C512 T32", 256, 32, True, True,
     [(512, 512, 1, 3, 1, 9, 9, 9, None, None, True, False)]),
    ("w2v_bwd", "dense BWD (dx,dw,db) wav2vec2 512->512 K3 S2 N8 T31999", 8, 31999, True, True,
     [(512, 512, 1, 3, 2, 1, 0, 0, None, None, False, False)]),
    ("dac_bwd", "dense BWD (dx,dw,db) DAC C512->1024 K16 S8 P4 +bias N8 T6890", 8, 6890, True, True,
     [(512, 1024, 1, 16, 8, 1, 4, 4, None, None, True, False)]),
    ("stem_tiny", "Whisper tiny stem's convs, 64 windows (80->384 K3, 384->384 K3 S2, +bias+GELU), 2 calls",
     64, 3000, False, True, [STEM1(80, 384), STEM2(384)]),
    ("stem_large", "Whisper large-v3 stem's convs, 64 windows (128->1280 K3, 1280->1280 K3 S2, +bias+GELU), 2 calls",
     64, 3000, False, True, [STEM1(128, 1280), STEM2(1280)]),
]
ACT = {None: lambda v: v, "relu": F.relu, "gelu": F.gelu, "silu": F.silu}
ROTATE_BELOW = 256 << 20


def out_len(t, k, s, d, pl, pr):
    return (t + pl + pr - d * (k - 1) - 1) // s + 1


def conv(h, spec, w, b, t_out):
    ci, co, g, k, s, d, pl, pr, pre, act, _, _ = spec
    h = ACT[pre](h)
    if pl == pr:
        y = F.conv1d(h, w, b, stride=s, padding=pl, dilation=d, groups=g)
    elif pr == 0 and s == 1:  # causal: Mamba's padding K-1 and a slice
        y = F.conv1d(h, w, b, padding=pl, dilation=d, groups=g)[..., :t_out]
    else:
        y = F.conv1d(F.pad(h, (pl, pr)), w, b, stride=s, dilation=d, groups=g)
    return ACT[act](y)


def forward(x, params, calls, touts, nlc):
    """the row's calls on x ((N, C, T), or (N, T, C) when nlc)"""
    x_ncl = x.transpose(1, 2) if nlc else x
    h = x_ncl
    for spec, (w, b), t_out in zip(calls, params, touts):
        h = conv(h, spec, w, b, t_out)
        if spec[11]:
            h = h + x_ncl
    return h.transpose(1, 2).contiguous() if nlc else h


def median_time(fn, sets, warmup, iters, device):
    for i in range(warmup):
        fn(i % sets)
    if device == "cuda":
        torch.cuda.synchronize()
    ts = []
    for i in range(iters):
        if device == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(i % sets)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1000.0)
        else:
            t0 = time.perf_counter()
            fn(i % sets)
            ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ts), min(ts)


def run_row(row, nlc, mode, args, seed):
    """one row in one mode; cuDNN's TF32 allowed for mode tf32 only, for this row alone"""
    with torch.backends.cudnn.flags(enabled=True, benchmark=True, deterministic=False,
                                    allow_tf32=mode == "tf32"):
        return run_row_as_set(row, nlc, mode, args, seed)


def run_row_as_set(row, nlc, mode, args, seed):
    dt = torch.bfloat16 if mode == "bf16" else torch.float32
    name, what, n, t, bwd, _, calls = row
    if args.quick:
        n, t = min(n, 2), (t // 16 if t >= 512 else t)
    dev = args.device
    g = torch.Generator(device=dev).manual_seed(seed)
    rnd = lambda *shape, scale=1.0: ((torch.rand(*shape, device=dev, generator=g) * 2 - 1) * scale).to(dt)
    touts, params, tin = [], [], t
    for ci, co, gr, k, s, d, pl, pr, _, _, bias, _ in calls:
        sc = ((ci // gr) * k) ** -0.5
        params.append((rnd(co, ci // gr, k, scale=sc), rnd(co, scale=sc) if bias else None))
        tin = out_len(tin, k, s, d, pl, pr)
        touts.append(tin)
    c0, c_last = calls[0][0], calls[-1][1]
    x_shape = (n, t, c0) if nlc else (n, c0, t)
    y_shape = (n, touts[-1], c_last) if nlc else (n, c_last, touts[-1])
    es = torch.tensor([], dtype=dt).element_size()
    set_bytes = es * (n * c0 * t + sum(n * sp[1] * to for sp, to in zip(calls, touts)))
    if bwd:
        set_bytes *= 3  # x, dy, y, dx and autograd's saved tensors
    sets = 4 if set_bytes < ROTATE_BELOW else 1
    xs = [rnd(*x_shape) for _ in range(sets)]
    if not bwd:
        def fn(i):
            with torch.no_grad():
                forward(xs[i], params, calls, touts, nlc)
    else:
        w, b = params[0]
        wb = [w] + ([b] if b is not None else [])  # wav2vec2's convs have no bias
        for p in wb:
            p.requires_grad_(True)
        for x in xs:
            x.requires_grad_(True)
        ys = [forward(x, params, calls, touts, nlc) for x in xs]
        dy = rnd(*y_shape)

        def fn(i):
            torch.autograd.grad(ys[i], [xs[i]] + wb, dy, retain_graph=True)
    med, mn = median_time(fn, sets, 10, args.iters, dev)
    return {"case": name, "what": what, "layout": "nlc" if nlc else "ncl",
            "dtype": mode, "n": n, "t": t,
            "us": round(med, 3), "min_us": round(mn, 3), "sets": sets}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--only")
    ap.add_argument("--json")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False  # fp32 means FFMA on both sides (tf32: run_row's flags)
    torch.backends.cuda.matmul.allow_tf32 = False
    if args.device == "cuda":
        print(f"# device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
              f"cuDNN {torch.backends.cudnn.version()}")
    else:
        print(f"# device: cpu, torch {torch.__version__}")
    print(f"{'case':12s} {'lay':3s} {'type':4s} {'us':>10s} {'min_us':>10s} {'sets':>4s}")
    out = []
    for ri, row in enumerate(ROWS):
        for nlc in (False, True) if row[5] else (False,):
            for di, mode in enumerate(("fp32", "tf32", "bf16")):
                if mode == "tf32" and (row[4] or row[6][0][2] != 1):
                    continue  # tf32: dense forward rows only
                label = f"{row[0]}/{'nlc' if nlc else 'ncl'}/{mode}"
                if args.only and args.only not in label:
                    continue
                # the C bench's seeds: fp32 and tf32 rows draw the same data
                r = run_row(row, nlc, mode, args, 1000 * (ri + 1) + 10 * nlc + (mode == "bf16"))
                out.append(r)
                print(f"{r['case']:12s} {r['layout']:3s} {r['dtype']:4s} {r['us']:10.1f} {r['min_us']:10.1f} "
                      f"{r['sets']:4d}", flush=True)
                if args.device == "cuda":
                    torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

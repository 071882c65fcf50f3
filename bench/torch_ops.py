#!/usr/bin/env python3
"""torch_ops.py - whisper_stem.torch beside PyTorch on a CUDA GPU (PyTorch 2.x), same run.

    WHISPER_STEM_LIB=build/libwhisper-stem.so.0 python3 bench/torch_ops.py \\
        [--iters N] [--warmup N] [--group G] [--groups M] [--calls N] [--json FILE]
    WHISPER_STEM_LIB=build/libwhisper-stem.so.0 python3 bench/torch_ops.py --host-cpu \\
        [--calls N] [--json FILE]

(without WHISPER_STEM_LIB, build/libwhisper-stem.so.0 beside this script is used when it
exists; the package is imported from python/.)

1. Mamba's depthwise causal conv, forward + backward, N4 C5120 T2048 K4, SiLU, bfloat16
   and float32: x a channel-last view (a contiguous [N][T][C] tensor, transposed), w [C][K]
   and b [C] requiring grad, the output gradient channel-last too.
     whisper_stem  y = whisper_stem.torch.causal_conv1d(x, w, b, activation="silu")
     PyTorch       y = F.silu(F.conv1d(F.pad(x, (K-1, 0)), w.unsqueeze(1), b, groups=C))
   then torch.autograd.grad(y, [x, w, b], dy) for both (no .grad accumulation).
   torch.backends.cudnn.benchmark = True, TF32 off (float32 is float32 in both). Their
   outputs and gradients are compared once. Two measures, after --warmup calls of each:
   - per call: torch.cuda.Event records around one forward + backward, waited for after
     each; the two alternating call by call, median (and min) of --iters (>= 50). It
     counts what one step costs alone: the GPU's work, plus the host's time where the GPU
     waits for it (the launch of the first kernel, and any gap where the host enqueues
     more slowly than the GPU runs).
   - steady: --group (G, 10) forward + backward iterations back to back between two
     events, waited for once, divided by G; the two alternating group by group, median
     of --groups (20). It counts one iteration of a training loop: the host enqueues
     ahead while the GPU runs, so it is the GPU's time per iteration where the host keeps
     ahead, and the host's where it does not (a host-bound op shows its host time here).
2. The Python layer's overhead: host wall time (time.perf_counter) of --calls calls of
   whisper_stem.torch.causal_conv1d (forward, no autograd) on N1 C64 T64 float32 in a loop
   with one torch.cuda.synchronize() at the end, against as many bare ws_gpu_conv_enqueue
   calls through ctypes (whisper_stem._conv) with arguments built once, on the same
   stream; the difference per call is what the Python layer adds. Best of 5 rounds.

3. --host-cpu, instead of 1 and 2, without a GPU: the Python layer's host time on CPU
   tensors small enough that the CPU engine's run is cheap (N1 C8 T16, K4 depthwise causal
   and K3 dense 8 -> 8 channels, one thread): microseconds per call of causal_conv1d
   (forward without autograd; forward + autograd.grad of x, w, b in float32, and in
   bfloat16 with a channel-last x and bfloat16 w and b) and of conv1d (the same two),
   each the best of 5 rounds of --calls calls, beside bare ws_conv_run calls through
   ctypes with arguments built once (the same plans' FWD and BWD, as the floor). "host"
   is the call's time less the bare runs it makes: what whisper_stem.torch, PyTorch's
   allocations and autograd add.

Prints a Markdown table (date, device, torch version, the numbers); --json FILE writes
them too. Exits 1 without a CUDA device (but for --host-cpu), 2 when outputs disagree.
"""

import argparse
import ctypes
import datetime
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
if "WHISPER_STEM_LIB" not in os.environ and os.path.exists(os.path.join(ROOT, "build", "libwhisper-stem.so.0")):
    os.environ["WHISPER_STEM_LIB"] = os.path.join(ROOT, "build", "libwhisper-stem.so.0")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import whisper_stem  # noqa: E402
import whisper_stem.torch as wst  # noqa: E402
from whisper_stem import _conv  # noqa: E402

N, C, T, K = 4, 5120, 2048, 4
TINY = (1, 64, 64)


def cuda_time(fn, start, end, times=1):
    """Microseconds per call of `times` calls of fn back to back between two events."""
    start.record()
    for _ in range(times):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / times


def fwd_bwd_case(dtype, iters, warmup, group, groups):
    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(0)
    h = torch.randn(N, T, C, device=dev, dtype=dtype, generator=g).requires_grad_()
    x = h.transpose(1, 2)  # the channel-last view [N][C][T]; its gradient lands in h
    w = (torch.randn(C, K, device=dev, generator=g) / 2).to(dtype).requires_grad_()
    b = torch.randn(C, device=dev, generator=g).to(dtype).requires_grad_()
    dy = torch.randn(N, T, C, device=dev, dtype=dtype, generator=g).transpose(1, 2)

    def ours():
        y = wst.causal_conv1d(x, w, b, activation="silu")
        return y, torch.autograd.grad(y, [h, w, b], dy)

    def peer():
        y = F.silu(F.conv1d(F.pad(x, (K - 1, 0)), w.unsqueeze(1), b, groups=C))
        return y, torch.autograd.grad(y, [h, w, b], dy)

    # one comparison (the engine's sums are float32, as cuDNN's)
    yo, go = ours()
    yp, gp = peer()
    torch.cuda.synchronize()
    check = {}
    for name, a, p in zip(["y", "dx", "dw", "db"], [yo] + list(go), [yp] + list(gp)):
        a, p = a.float(), p.float()
        check[name] = float((a - p).abs().max() / (p.abs().max() + 1e-12))
    del yo, go, yp, gp

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        cuda_time(ours, start, end)
        cuda_time(peer, start, end)
    t_ours, t_peer = [], []
    for _ in range(iters):
        t_ours.append(cuda_time(ours, start, end))
        t_peer.append(cuda_time(peer, start, end))
    s_ours, s_peer = [], []
    for _ in range(groups):
        s_ours.append(cuda_time(ours, start, end, group))
        s_peer.append(cuda_time(peer, start, end, group))
    return {
        "ours_median_us": statistics.median(t_ours), "ours_min_us": min(t_ours),
        "torch_median_us": statistics.median(t_peer), "torch_min_us": min(t_peer),
        "ours_steady_us": statistics.median(s_ours), "torch_steady_us": statistics.median(s_peer),
        "max_rel_diff": check,
    }


def overhead(calls, rounds=5):
    n, c, t = TINY
    dev = torch.device("cuda", torch.cuda.current_device())
    x = torch.randn(n, c, t, device=dev)
    w = torch.randn(c, K, device=dev)
    b = torch.randn(c, device=dev)
    out = {}
    ours_ok = True
    try:
        wst.causal_conv1d(x, w, b, activation="silu")
        torch.cuda.synchronize()
    except whisper_stem.Error as e:
        ours_ok = False
        out["refused"] = str(e)

    # the bare call: the descriptor whisper_stem.torch makes, its ws_gpu, arguments built once
    spec = (c, c, c, K, 1, 1, K - 1, 0, _conv.F32, _conv.F32, _conv.MATH_F32, _conv.ACT_NONE, _conv.ACT_SILU)
    key = wst._key(_conv.FWD, spec, _conv.NCL)
    gpu = wst._gpu(dev.index)
    err = _conv.CError()
    y = torch.empty(n, c, t, device=dev)
    args = _conv.Args(n=n, t_in=t, x=x.data_ptr(), y=y.data_ptr())
    if ours_ok:
        plan = _conv.gpu_conv_new(gpu.handle, ctypes.byref(_conv.desc(key)), None, None, ctypes.byref(err))
        args.w, args.b = w.data_ptr(), b.data_ptr()
        out["bare_plan"] = "weights per call"
    else:  # a plan holding the weights, so that the bare call can still be timed
        w_host, b_host = w.reshape(c, 1, K).cpu().contiguous(), b.cpu().contiguous()
        plan = _conv.gpu_conv_new(gpu.handle, ctypes.byref(_conv.desc(key)), w_host.data_ptr(), b_host.data_ptr(),
                                  ctypes.byref(err))
        out["bare_plan"] = "weights in the plan (per-call weights refused)"
    if not plan:
        raise whisper_stem.Error(err.msg.decode())
    stream = wst._stream_handle(dev)
    enqueue, pargs, perr = _conv.gpu_conv_enqueue, ctypes.byref(args), ctypes.byref(err)

    def bare():
        for _ in range(calls):
            if enqueue(plan, pargs, stream, perr):
                raise whisper_stem.Error(err.msg.decode())

    def python_layer():
        f = wst.causal_conv1d
        for _ in range(calls):
            f(x, w, b, activation="silu")

    def wall(fn):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / calls * 1e6

    contenders = [("bare", bare)] + ([("ours", python_layer)] if ours_ok else [])
    for _, fn in contenders:
        wall(fn)  # warm
    best = {name: min(wall(fn) for _ in range(rounds)) for name, fn in contenders}
    _conv.gpu_conv_free(plan)
    out["bare_us_per_call"] = best["bare"]
    if ours_ok:
        out["ours_us_per_call"] = best["ours"]
        out["python_layer_us_per_call"] = best["ours"] - best["bare"]
    return out


HOST = (1, 8, 16)  # N, C, T of --host-cpu


def host_cpu(calls, rounds=5):
    """Section 3: microseconds per call on CPU tensors (best of `rounds` rounds of `calls`),
    each beside the bare ws_conv_run calls it makes."""
    torch.set_num_threads(1)
    n, c, t = HOST
    gen = torch.Generator().manual_seed(0)
    err = _conv.CError()
    grad = torch.autograd.grad

    def randn(*shape, dtype=torch.float32):
        return torch.randn(*shape, generator=gen).to(dtype)

    def best(loop):
        loop(min(calls, 200))  # plans made, signatures kept
        out = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            loop(calls)
            out.append((time.perf_counter() - t0) / calls * 1e6)
        return min(out)

    def bare(op, spec, layout, **tensors):
        """ws_conv_run of the plan whisper_stem.torch runs (one thread), arguments built once."""
        plan = wst._cpu_plan(wst._key(op, spec, layout), 1)
        args = _conv.Args(n=n, t_in=t, **{k: v.data_ptr() for k, v in tensors.items()})
        run, pa, pe = _conv.conv_run, ctypes.byref(args), ctypes.byref(err)

        def loop(m):
            for _ in range(m):
                if run(plan, pa, pe):
                    raise whisper_stem.Error(err.msg.decode())
        return best(loop)

    def empty_like(v, dtype=None):
        return torch.empty_strided(v.shape, v.stride(), dtype=dtype or v.dtype)

    rows = []

    def row(name, loop, bare_us):
        us = best(loop)
        rows.append({"case": name, "us_per_call": us, "bare_us": bare_us, "host_us": us - bare_us})

    def causal_rows(label, x, leaf, w, b, dy, spec, layout):
        b32 = b.float()
        fwd = bare(_conv.FWD, spec, layout, x=x, w=w, b=b32, y=empty_like(x))
        bwd = bare(_conv.BWD, spec, layout, x=x, w=w, b=b32, dy=dy, dx=empty_like(x),
                   dw=torch.empty(w.shape), db=torch.empty(c))
        f = wst.causal_conv1d

        def forward(m):
            with torch.no_grad():
                for _ in range(m):
                    f(x, w, b, activation="silu")

        def fwd_grad(m):
            for _ in range(m):
                y = f(x, w, b, activation="silu")
                grad(y, [leaf, w, b], dy)
        row("causal_conv1d %s, forward" % label, forward, fwd)
        row("causal_conv1d %s, forward + grad(x, w, b)" % label, fwd_grad, fwd + bwd)

    k = K
    spec = (c, c, c, k, 1, 1, k - 1, 0, _conv.F32, _conv.F32, _conv.MATH_F32, _conv.ACT_NONE, _conv.ACT_SILU)
    x = randn(n, c, t).requires_grad_()
    causal_rows("fp32", x, x, randn(c, k).requires_grad_(), randn(c).requires_grad_(), randn(n, c, t), spec,
                _conv.NCL)
    bf = torch.bfloat16
    spec = (c, c, c, k, 1, 1, k - 1, 0, _conv.BF16, _conv.BF16, _conv.MATH_BF16, _conv.ACT_NONE, _conv.ACT_SILU)
    h = randn(n, t, c, dtype=bf).requires_grad_()
    causal_rows("bf16 channel-last, bf16 w and b", h.transpose(1, 2), h, randn(c, k, dtype=bf).requires_grad_(),
                randn(c, dtype=bf).requires_grad_(), randn(n, t, c, dtype=bf).transpose(1, 2), spec, _conv.NLC)

    # conv1d, dense K3 c -> c, padding 1, GELU
    spec = (c, c, 1, 3, 1, 1, 1, 1, _conv.F32, _conv.F32, _conv.MATH_F32, _conv.ACT_NONE, _conv.ACT_GELU)
    x, w, b, dy = randn(n, c, t).requires_grad_(), randn(c, c, 3).requires_grad_(), randn(c).requires_grad_(), \
        randn(n, c, t)
    fwd = bare(_conv.FWD, spec, _conv.NCL, x=x, w=w, b=b, y=empty_like(x))
    bwd = bare(_conv.BWD, spec, _conv.NCL, x=x, w=w, b=b, dy=dy, dx=empty_like(x), dw=torch.empty(w.shape),
               db=torch.empty(c))

    def conv_forward(m):
        with torch.no_grad():
            for _ in range(m):
                wst.conv1d(x, w, b, padding=1, act="gelu")

    def conv_fwd_grad(m):
        for _ in range(m):
            y = wst.conv1d(x, w, b, padding=1, act="gelu")
            grad(y, [x, w, b], dy)
    row("conv1d fp32 K3 %d -> %d, forward" % (c, c), conv_forward, fwd)
    row("conv1d fp32 K3 %d -> %d, forward + grad(x, w, b)" % (c, c), conv_fwd_grad, fwd + bwd)

    class Clone(torch.autograd.Function):
        @staticmethod
        def forward(ctx, v):
            return v.clone()

        @staticmethod
        def backward(ctx, gv):
            return gv

    def floor(m):
        for _ in range(m):
            grad(Clone.apply(x), [x], dy)
    row("(PyTorch alone: a Function returning x.clone(), apply + grad)", floor, 0.0)
    return rows


def host_cpu_main(a):
    import platform
    calls = max(1, a.calls)
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": platform.processor() or platform.machine(), "python": platform.python_version(),
        "torch": torch.__version__, "whisper_stem_lib": whisper_stem.library_version(), "calls": calls,
        "rows": host_cpu(calls),
    }
    print("## whisper_stem.torch host time on the CPU, %s" % res["date"])
    print()
    print("Python %s, torch %s, libwhisper-stem %s; N%d C%d T%d, one thread; best of 5 rounds of %d calls." % (
        res["python"], res["torch"], res["whisper_stem_lib"], HOST[0], HOST[1], HOST[2], calls))
    print()
    print("| call | us per call | bare ws_conv_run us | host us |")
    print("|---|---|---|---|")
    for r in res["rows"]:
        print("| %s | %.2f | %.2f | %.2f |" % (r["case"], r["us_per_call"], r["bare_us"], r["host_us"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=50, help="timed fwd+bwd calls of each (>= 50)")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--group", type=int, default=10, help="fwd+bwd iterations between two events, steady measure")
    ap.add_argument("--groups", type=int, default=20, help="groups timed of each, steady measure (median)")
    ap.add_argument("--calls", type=int, default=5000, help="calls in the overhead loop and in each --host-cpu round")
    ap.add_argument("--host-cpu", action="store_true", help="time the Python layer's host cost on CPU tensors instead")
    ap.add_argument("--json", help="write the numbers to this file too")
    a = ap.parse_args()
    if a.host_cpu:
        return host_cpu_main(a)
    if not torch.cuda.is_available():
        print("torch_ops.py: no CUDA device (torch.cuda.is_available() is False): nothing measured")
        return 1
    iters = max(50, a.iters)
    group, groups = max(1, a.group), max(1, a.groups)
    torch.backends.cudnn.benchmark = True
    dev_name = torch.cuda.get_device_name()
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": dev_name, "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(), "whisper_stem_lib": whisper_stem.library_version(),
        "iters": iters, "warmup": a.warmup, "group": group, "groups": groups, "calls": a.calls, "cases": {},
    }
    refused = None
    # float32 as float32 in both: cuDNN's TF32 off (the engine's float32 is exact FFMA)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        try:
            res["cases"][name] = fwd_bwd_case(dtype, iters, a.warmup, group, groups)
        except whisper_stem.Error as e:
            refused = str(e)
            res["cases"][name] = {"refused": refused}
    res["overhead"] = overhead(a.calls)

    print("## whisper_stem.torch beside PyTorch, %s" % res["date"])
    print()
    print("%s; torch %s (CUDA %s, cuDNN %s); libwhisper-stem %s; cudnn.benchmark on, TF32 off; per call: %d timed "
          "calls after %d warm-up calls of each, alternating; steady: median of %d groups of %d back to back, "
          "alternating." % (dev_name, res["torch"], res["cuda"], res["cudnn"], res["whisper_stem_lib"], iters,
                            a.warmup, groups, group))
    print()
    print("| causal conv fwd+bwd, N%d C%d T%d K%d, SiLU, channel-last | whisper_stem.torch us (min) "
          "| PyTorch F.conv1d us (min) | PyTorch / whisper_stem | steady whisper_stem.torch us "
          "| steady PyTorch us | max rel diff y, dx, dw, db |" % (N, C, T, K))
    print("|---|---|---|---|---|---|---|")
    bad = False
    for name, r in res["cases"].items():
        if "refused" in r:
            print("| %s | refused: %s | | | | | |" % (name, r["refused"]))
            continue
        d = r["max_rel_diff"]
        tol = 2e-2 if name == "bf16" else 1e-4
        bad |= any(v > tol for v in d.values())
        print("| %s | %.1f (%.1f) | %.1f (%.1f) | %.2fx | %.1f | %.1f | %s |" % (
            name, r["ours_median_us"], r["ours_min_us"], r["torch_median_us"], r["torch_min_us"],
            r["torch_median_us"] / r["ours_median_us"], r["ours_steady_us"], r["torch_steady_us"],
            ", ".join("%.1e" % d[k] for k in ("y", "dx", "dw", "db"))))
    o = res["overhead"]
    print()
    print("| overhead, N%d C%d T%d fp32 forward, %d calls, one sync | us per call |" % (TINY + (a.calls,)))
    print("|---|---|")
    if "ours_us_per_call" in o:
        print("| whisper_stem.torch.causal_conv1d | %.2f |" % o["ours_us_per_call"])
    else:
        print("| whisper_stem.torch.causal_conv1d | refused: %s |" % o["refused"])
    print("| bare ws_gpu_conv_enqueue through ctypes (%s) | %.2f |" % (o["bare_plan"], o["bare_us_per_call"]))
    if "python_layer_us_per_call" in o:
        print("| the Python layer (difference) | %.2f |" % o["python_layer_us_per_call"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    if bad:
        print("\ntorch_ops.py: whisper_stem.torch and PyTorch disagree beyond the bounds (see the last column)")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

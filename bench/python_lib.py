#!/usr/bin/env python3
"""whisper_stem from Python, in process, beside the peers (same run, same machine).

    make BUILD=build lib build/ws-mkmodel
    WHISPER_STEM_LIB=build/libwhisper-stem.so.0 PYTHONPATH=python /usr/bin/python3 bench/python_lib.py \\
        [--build build] [--runs N] [--size tiny] [--device cpu|cuda[:N]] [--precision fp32|tf32|bf16|fp16]

Measures, on one 30 s clip and on a batch of 64 clips (30 s each, different audio):
  1. whisper_stem.log_mel / features vs openai-whisper's log_mel_spectrogram written in
     PyTorch as whisper/audio.py writes it (CPU, torch.set_num_threads = the CPUs this
     process may use), called per clip as openai calls it and batched ([64, 480000] in one
     torch.stft), and vs transformers' WhisperFeatureExtractor when it is importable;
  2. Frontend.embed (Python: argument checks, array wrapping) vs the same C call,
     whisper_stem_embed_pcm + whisper_stem_array_free, made through ctypes in a bare loop
     on the same context: the Python layer's overhead. One 30 s clip and 64 windows.
Times are medians of N runs (the embed rows 3N for one clip), in blocks per contender
for the log-Mel (see timeit), alternating run by run for the embed pair. The outputs are
compared (log-Mel within 2e-4 of torch's, embed bit for bit with the bare call): exit 1
on a mismatch. The targets (issue 13: >= 3x openai's torch log_mel on the CPU; embed
within 10 % of the C call) are printed as reached or missed.
"""

import argparse
import ctypes
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))

import whisper_stem as ws  # noqa: E402
from whisper_stem import _lib  # noqa: E402

import reference as ref  # noqa: E402  (python/tests/reference.py: openai's function in torch)

N_SAMPLES = 480000


def clips(n, seed):
    """n different 30 s clips: speech-band tones with noise and an envelope, float32."""
    rng = np.random.default_rng(seed)
    t = np.arange(N_SAMPLES) / 16000.0
    out = []
    for _ in range(n):
        f = rng.uniform(100, 3000, size=4)
        x = sum(0.1 * np.sin(2 * np.pi * fi * t + rng.uniform(0, 6.28)) for fi in f)
        x = x * (0.5 + 0.5 * np.sin(2 * np.pi * 0.7 * t)) + 0.02 * rng.standard_normal(N_SAMPLES)
        out.append(x.astype(np.float32))
    return out


def timeit(fns, runs, warm=2, rounds=3):
    """{name: median seconds} over `runs` runs of each fn.

    The runs come in blocks: each contender in turn runs runs / rounds times after a
    warm-up call, for `rounds` rounds. Blocks, not single runs interleaved, because
    PyTorch's OpenMP workers spin for a while after each parallel region and would
    take the CPUs from the next contender's threads; rounds spread slow drifts of
    the machine's load over all contenders.
    """
    for _ in range(warm):
        for f in fns.values():
            f()
    t = {k: [] for k in fns}
    per = max(1, runs // rounds)
    for _ in range(rounds):
        for k, f in fns.items():
            f()
            for _ in range(per):
                t0 = time.perf_counter()
                f()
                t[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in t.items()}


def interleaved(fns, runs, warm=2):
    """{name: median seconds}, the fns run alternately, one run each in turn: for
    contenders that share everything but a thin layer, so that drifts of the
    machine's load fall on both alike."""
    for _ in range(warm):
        for f in fns.values():
            f()
    t = {k: [] for k in fns}
    for _ in range(runs):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            t[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in t.items()}


def maxabs(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("WS_BUILD", "build"))
    ap.add_argument("--runs", type=int, default=21, help="runs per measurement of one clip (batches: a third)")
    ap.add_argument("--size", default="tiny", help="ws-mkmodel size for the embed bench")
    ap.add_argument("--device", default="cpu", help="where the embed bench runs the stem (cpu, cuda, cuda:N)")
    ap.add_argument("--precision", default="fp32", help="the GPU's precision for the embed bench")
    args = ap.parse_args()

    import torch

    ncpu = len(os.sched_getaffinity(0))
    torch.set_num_threads(ncpu)
    try:
        model_name = [l.split(":", 1)[1].strip() for l in subprocess.run(
            ["lscpu"], stdout=subprocess.PIPE, text=True).stdout.splitlines() if l.startswith("Model name")][0]
    except Exception:  # noqa: BLE001
        model_name = platform.processor()
    print("# %s, %d CPUs (%s); whisper_stem %s (%s), numpy %s, torch %s, Python %s" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), ncpu, model_name, ws.library_version(),
        ws.library_path(), np.__version__, torch.__version__, platform.python_version()))
    print("# load average at start: %s" % " ".join("%.2f" % x for x in os.getloadavg()))

    try:
        from transformers import WhisperFeatureExtractor
        hf = WhisperFeatureExtractor(feature_size=80)
    except Exception as e:  # noqa: BLE001
        hf = None
        print("# transformers: not importable (%s): its extractor is not measured" % e.__class__.__name__)

    bad = []
    one = clips(1, seed=1)[0]
    batch = clips(64, seed=2)
    filters = torch.from_numpy(ref.mel_filters(80))  # openai caches them (lru_cache)

    def openai_log_mel(audio):
        # whisper/audio.py's log_mel_spectrogram: from_numpy, hann_window per call, stft, ...
        return ref.log_mel_torch(torch.from_numpy(audio), filters=filters, window=torch.hann_window(400))

    batch_t = torch.from_numpy(np.stack(batch))

    # --- log-Mel ------------------------------------------------------------------------
    err = maxabs(ws.log_mel(one), openai_log_mel(one).numpy())
    err_b = maxabs(ws.features(batch), openai_log_mel(np.stack(batch)).numpy())
    print("# check: max |ws - torch| one clip %.2e, batch %.2e (bound 2e-4)" % (err, err_b))
    if max(err, err_b) > 2e-4:
        bad.append("log-Mel differs from torch's by %.2e" % max(err, err_b))
    if hf is not None:
        err_hf = maxabs(ws.features(batch), hf(batch, sampling_rate=16000, return_tensors="np").input_features)
        print("# check: max |ws.features - transformers| batch %.2e (bound 2e-4)" % err_hf)
        if err_hf > 2e-4:
            bad.append("features differ from transformers' by %.2e" % err_hf)

    fns = {"ws.log_mel": lambda: ws.log_mel(one), "ws.features": lambda: ws.features([one]),
           "torch (openai)": lambda: openai_log_mel(one)}
    if hf is not None:
        fns["transformers"] = lambda: hf([one], sampling_rate=16000, return_tensors="np")
    t1 = timeit(fns, args.runs)
    nb = max(3, args.runs // 3)
    fns = {"ws.features": lambda: ws.features(batch), "ws.log_mel loop": lambda: [ws.log_mel(c) for c in batch],
           "torch (openai) loop": lambda: [openai_log_mel(c) for c in batch],
           "torch batched": lambda: ref.log_mel_torch(batch_t, filters=filters)}
    if hf is not None:
        fns["transformers"] = lambda: hf(batch, sampling_rate=16000, return_tensors="np")
    t64 = timeit(fns, nb, warm=1)

    print("\n## log-Mel, 80 bands (median ms; ratio = peer / whisper_stem)\n")
    print("| input | whisper_stem | ms | peer | ms | ratio |")
    print("|---|---|---|---|---|---|")
    rows = []
    for peer in [k for k in t1 if not k.startswith("ws.")]:
        for mine in ("ws.log_mel", "ws.features"):
            rows.append(("one 30 s clip", mine, t1[mine], peer, t1[peer]))
    for peer in [k for k in t64 if not k.startswith("ws.")]:
        for mine in ("ws.features", "ws.log_mel loop"):
            rows.append(("64 clips of 30 s", mine, t64[mine], peer, t64[peer]))
    for inp, mine, tm, peer, tp in rows:
        print("| %s | %s | %.2f | %s | %.2f | %.2fx |" % (inp, mine, tm * 1e3, peer, tp * 1e3, tp / tm))
    worst = min(min(t1["torch (openai)"] / t1["ws.log_mel"], t1["torch (openai)"] / t1["ws.features"]),
                min(t64["torch (openai) loop"], t64["torch batched"]) / t64["ws.features"])
    print("\ntarget >= 3x openai's torch log_mel (the worst of the rows against torch): %.2fx: %s" % (
        worst, "reached" if worst >= 3 else "MISSED"))

    # --- embed ----------------------------------------------------------------------------
    tmp = tempfile.mkdtemp(prefix="ws-bench-")
    model = os.path.join(tmp, "%s.gguf" % args.size)
    subprocess.run([os.path.join(args.build, "ws-mkmodel"), "--size", args.size, "-o", model], check=True,
                   stdout=subprocess.DEVNULL)
    fe = ws.Frontend(model, device=args.device, precision=args.precision)
    long_audio = np.concatenate(batch)  # 32 min: 64 windows in one call
    h = fe._ctx.handle
    out = _lib._CArray()
    cerr = _lib.new_error()

    def raw(x):
        # the bare C call through ctypes, its result freed: the library's own time
        r = _lib.embed_pcm(h, x.ctypes.data, x.shape[0], 16000, 1, ctypes.byref(out), ctypes.byref(cerr))
        if r:
            raise RuntimeError(cerr.msg)
        _lib.array_free(ctypes.byref(out))

    def raw_copy(x):
        r = _lib.embed_pcm(h, x.ctypes.data, x.shape[0], 16000, 1, ctypes.byref(out), ctypes.byref(cerr))
        if r:
            raise RuntimeError(cerr.msg)
        shape = tuple(out.shape[i] for i in range(out.ndim))
        a = np.ctypeslib.as_array(ctypes.cast(out.data, ctypes.POINTER(ctypes.c_float)), shape=shape).copy()
        _lib.array_free(ctypes.byref(out))
        return a

    for name, x in (("one clip", one), ("64 windows", long_audio)):
        if not np.array_equal(fe.embed(x), raw_copy(x)):  # the GPU's sums have a fixed order too
            bad.append("embed(%s) differs from the bare call" % name)
    where = "CPU, %d threads" % ncpu if fe.device == "cpu" else "%s, %s" % (fe.device, args.precision)
    print("\n## Frontend.embed vs the bare C call (%s model, %s; median ms)\n" % (args.size, where))
    print("| input | Frontend.embed | C call (ctypes, bare) | Python overhead |")
    print("|---|---|---|---|")
    worst_e = -1.0
    for name, x, runs in (("one 30 s clip", one, 3 * args.runs), ("64 windows (32 min)", long_audio, nb)):
        t = interleaved({"py": lambda: fe.embed(x), "c": lambda: raw(x)}, runs, warm=1)
        over = t["py"] / t["c"] - 1
        worst_e = max(worst_e, over)
        print("| %s | %.2f | %.2f | %+.1f %% |" % (name, t["py"] * 1e3, t["c"] * 1e3, over * 100))
    print("\ntarget: embed from Python within 10 %% of the C call: worst %+.1f %%: %s" % (
        worst_e * 100, "reached" if worst_e <= 0.10 else "MISSED"))
    fe.close()
    os.remove(model)
    os.rmdir(tmp)
    print("# load average at end: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
    if bad:
        print("MISMATCH: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""whisper_stem from Python on a GPU, beside the command and PyTorch (same run, same machine).

    make bundle BUILD=build-gpu   (on the GPU machine: the bundle's libwhisper-stem.so.0)
    WHISPER_STEM_LIB=B/libwhisper-stem.so.0 python3 bench/python_gpu.py --build B \\
        [--files 4096] [--runs 21] [--size tiny] [--precision bf16]

Rows (medians of --runs runs after warm-up; each figure counts what its row says):
  1. Frontend.embed of one 30 s clip (16 kHz float32 in host memory) and of one 32 min
     input (64 windows): output="numpy" (the result in host memory), output="torch" (a
     CUDA tensor, timed to torch.cuda.synchronize(): the GPU's work included), and
     mel_device="cpu" with numpy output (the CPU's log-Mel, as the library ran before);
     beside PyTorch's own GPU path as a user writes it: torch.from_numpy(x).cuda(),
     openai's log_mel_spectrogram on the GPU, F.conv1d + F.gelu under bf16 autocast
     (the same random weights), the result left on the GPU, synchronized.
  2. features(64 clips, device="cuda") against transformers' WhisperFeatureExtractor
     (when importable) and features on the CPU.
  3. Frontend.embed_files over --files WAVs of 30 s (64 different clips, linked under
     distinct names), numpy results consumed and dropped (no writes): the whole call and
     its steady state (files per second between the first quarter's end and the last
     file), beside the command on the same list writing .npy files to tmpfs (-O), its
     steady state from two runs, the whole list and its first quarter:
     (N - N/4) / (t(N) - t(N/4)).
The outputs are compared: torch output against numpy output bit for bit; the PyTorch path
against ours within 5e-2 (bf16 math on both sides); exit 1 on a mismatch.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))

import whisper_stem as ws  # noqa: E402

import reference as ref  # noqa: E402
from python_lib import N_SAMPLES, clips  # noqa: E402  (the same test audio)


def write_wav16(path, x):
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(np.clip(np.round(x * 32767), -32768, 32767).astype("<i2").tobytes())


def med(fn, runs, warm=3):
    for _ in range(warm):
        fn()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return statistics.median(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get("WS_BUILD", "build"))
    ap.add_argument("--files", type=int, default=4096)
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--precision", default="bf16")
    args = ap.parse_args()

    import torch
    import torch.nn.functional as F

    bad = []
    print("# %s, %s; whisper_stem %s (%s), torch %s, %d CPUs" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), torch.cuda.get_device_name(0), ws.library_version(),
        ws.library_path(), torch.__version__, len(os.sched_getaffinity(0))))
    tmp = tempfile.mkdtemp(prefix="ws-pygpu-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    model = os.path.join(tmp, "%s.gguf" % args.size)
    subprocess.run([os.path.join(args.build, "ws-mkmodel"), "--size", args.size, "-o", model], check=True,
                   stdout=subprocess.DEVNULL)
    batch = clips(64, seed=2)
    one = batch[0]
    long_audio = np.concatenate(batch)  # 32 min: 64 windows

    kw = dict(device="cuda", precision=args.precision)
    fe_np = ws.Frontend(model, **kw)
    fe_t = ws.Frontend(model, output="torch", **kw)
    fe_cpu_mel = ws.Frontend(model, mel_device="cpu", **kw)
    d = fe_np.d_model

    # PyTorch's own path, with the model's weights (bench/gguf_read.py, as the other peers)
    sys.path.insert(0, HERE)
    from gguf_read import gguf_tensors  # noqa: E402

    t = gguf_tensors(model)
    dev = torch.device("cuda", 0)
    g = lambda k: torch.from_numpy(np.array(t[k], dtype=np.float32)).to(dev)  # noqa: E731
    w1, b1, w2, b2 = g("encoder.conv1.weight"), g("encoder.conv1.bias"), g("encoder.conv2.weight"), g("encoder.conv2.bias")
    filters = torch.from_numpy(ref.mel_filters(fe_np.n_mels)).to(dev)
    window = torch.hann_window(400, device=dev)

    def torch_path(x):
        a = torch.from_numpy(x).to(dev)
        n_win = max(1, -(-(x.shape[0] // 160) // 3000))  # the library's windows (ws_mel_geometry)
        a = F.pad(a, (0, n_win * N_SAMPLES - x.shape[0]))
        mel = ref.log_mel_torch(a, filters=filters, window=window)  # [n_mels, n_win*3000]
        mel = mel.reshape(mel.shape[0], n_win, 3000).permute(1, 0, 2)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = F.gelu(F.conv1d(mel, w1, b1, padding=1))
            y = F.gelu(F.conv1d(h, w2, b2, stride=2, padding=1))
        return y.float().transpose(1, 2)

    sync = torch.cuda.synchronize

    print("\n## Frontend.embed on the GPU (%s, %s; median ms of %d)\n" % (args.size, args.precision, args.runs))
    print("| input | numpy output | torch output (synced) | CPU log-Mel, numpy | PyTorch path (synced) |")
    print("|---|---|---|---|---|")
    rows = {}
    for name, x in (("one 30 s clip", one), ("64 windows (32 min)", long_audio)):
        want = fe_np.embed(x)
        got = fe_t.embed(x).cpu().numpy()
        if not np.array_equal(got, want):
            bad.append("torch output differs from numpy output (%s)" % name)
        p = torch_path(x).cpu().numpy()
        e = float(np.max(np.abs(p.reshape(want.shape) - want)))
        print("# check %s: max |PyTorch path - ours| %.2e" % (name, e))
        if e > 5e-2:
            bad.append("the PyTorch path differs by %.2e (%s)" % (e, name))
        r = max(5, args.runs if x is one else args.runs // 3)
        tn = med(lambda: fe_np.embed(x), r)
        tt = med(lambda: (fe_t.embed(x), sync()), r)
        tc = med(lambda: fe_cpu_mel.embed(x), r)
        tp = med(lambda: (torch_path(x), sync()), r)
        rows[name] = (tn, tt, tc, tp)
        print("| %s | %.3f | %.3f | %.3f | %.3f |" % (name, tn * 1e3, tt * 1e3, tc * 1e3, tp * 1e3))
    print("\ntarget: one clip <= 0.6 ms: numpy %.3f, torch %.3f; 64 windows <= 40 ms with torch output: %.1f" % (
        rows["one 30 s clip"][0] * 1e3, rows["one 30 s clip"][1] * 1e3, rows["64 windows (32 min)"][1] * 1e3))

    # --- a PyTorch consumer: device-to-host copies, counted by the CUDA profiler -------------
    # Whisper's residual attention block (pre-LayerNorm, GELU MLP) on each embedding, the
    # embeddings from output="torch"; as a control, the same loop on output="numpy" (its
    # result comes down to the host, then goes up again). torch.profiler records every
    # copy and kernel of the process through CUPTI, the library's driver-API work included.
    from torch.profiler import ProfilerActivity, profile

    block = torch.nn.TransformerEncoderLayer(d, nhead=max(1, d // 64), dim_feedforward=4 * d,
                                             activation="gelu", batch_first=True, norm_first=True).to(dev)

    def consume(fe, n):
        for _ in range(n):
            y = fe.embed(one)
            if not torch.is_tensor(y):
                y = torch.from_numpy(y).to(dev)
            block(y)
        sync()

    def profiled(fe, n=8):
        consume(fe, 2)
        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            consume(fe, n)
        names = [e.name for e in prof.events()]
        dtoh = sum(1 for x in names if "DtoH" in x or "Device -> Pageable" in x or "Device -> Pinned" in x)
        htod = sum(1 for x in names if "HtoD" in x)
        ours = sum(1 for x in names if x.startswith("ws_"))
        return dtoh, htod, ours, len(names)

    print("\n## A PyTorch consumer: one clip embedded, then an encoder block on it, 8 times (CUDA profiler)\n")
    print("| output | device-to-host copies | host-to-device copies | the library's kernels seen | events |")
    print("|---|---|---|---|---|")
    for label, fe in (("torch", fe_t), ("numpy (control)", fe_np)):
        c = profiled(fe)
        print("| %s | %d | %d | %d | %d |" % ((label,) + c))
        if label == "torch" and c[0] != 0:
            bad.append("the torch-output consumer made %d device-to-host copies" % c[0])

    # --- features ---------------------------------------------------------------------------
    try:
        from transformers import WhisperFeatureExtractor

        hf = WhisperFeatureExtractor(feature_size=80)
    except Exception as ex:  # noqa: BLE001
        hf = None
        print("# transformers: not importable (%s)" % ex.__class__.__name__)
    fg = ws.features(batch, device="cuda")
    fc = ws.features(batch)
    e = float(np.max(np.abs(fg - fc)))
    print("\n# check: features GPU vs CPU max |diff| %.2e (bound 1e-4)" % e)
    if e > 1e-4:
        bad.append("GPU features differ from the CPU's by %.2e" % e)
    r = max(5, args.runs // 3)
    tg = med(lambda: ws.features(batch, device="cuda"), r)
    tc = med(lambda: ws.features(batch), r)
    th = med(lambda: hf(batch, sampling_rate=16000, return_tensors="np"), 3, warm=1) if hf else float("nan")
    print("\n## features, 64 clips of 30 s (median ms)\n")
    print("| features(device=\"cuda\") | features (CPU) | transformers' extractor | transformers / ours (GPU) |")
    print("|---|---|---|---|")
    print("| %.1f | %.1f | %.1f | %.1fx |" % (tg * 1e3, tc * 1e3, th * 1e3, th / tg))

    # --- embed_files and the command -------------------------------------------------------------
    src = os.path.join(tmp, "src")
    os.mkdir(src)
    for i, x in enumerate(batch):
        write_wav16(os.path.join(src, "c%02d.wav" % i), x)
    lst = os.path.join(tmp, "in")
    os.mkdir(lst)
    paths = []
    for i in range(args.files):
        p = os.path.join(lst, "f%05d.wav" % i)
        os.symlink(os.path.join(src, "c%02d.wav" % (i % 64)), p)
        paths.append(p)
    for p in paths[:64]:
        open(p, "rb").read()
    q = args.files // 4

    def lib_run(ps):
        stamps = []
        t0 = time.perf_counter()
        n_ok = 0
        for x in fe_np.embed_files(ps, errors="return"):
            n_ok += not isinstance(x, ws.Error)
            stamps.append(time.perf_counter() - t0)
        return stamps, n_ok

    lib_run(paths[:256])  # warm-up: pinned slabs, the slots' buffers
    stamps, n_ok = lib_run(paths)
    if n_ok != len(paths):
        bad.append("embed_files: %d of %d files failed" % (len(paths) - n_ok, len(paths)))
    whole = len(paths) / stamps[-1]
    steady = (len(paths) - q) / (stamps[-1] - stamps[q - 1])

    def cmd_run(ps, precision=args.precision):
        listf = os.path.join(tmp, "list.txt")
        with open(listf, "w") as f:
            f.write("\n".join(ps) + "\n")
        out = os.path.join(tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run([os.path.join(args.build, "whisper-stem"), "-q", "--device", "cuda", "--precision",
                        precision, "-m", model, "--list", listf, "-O", out], check=True)
        el = time.perf_counter() - t0
        shutil.rmtree(out, ignore_errors=True)
        return el

    cmd_run(paths[:256])
    tq = min(cmd_run(paths[:q]) for _ in range(2))
    tn = min(cmd_run(paths) for _ in range(2))
    c_whole = len(paths) / tn
    c_steady = (len(paths) - q) / (tn - tq)
    print("\n## %d WAVs of 30 s, %s %s (files/s)\n" % (len(paths), args.size, args.precision))
    print("| | whole run | steady state |")
    print("|---|---|---|")
    print("| Frontend.embed_files (numpy results, no writes) | %.0f | %.0f |" % (whole, steady))
    print("| whisper-stem --list ... -O tmpfs (min of 2 runs) | %.0f | %.0f |" % (c_whole, c_steady))
    print("\ntarget: embed_files >= 2000 files/s (%.0f) and >= 90 %% of the command's steady state (%.0f %%)" % (
        whole, 100 * whole / c_steady))

    # the whole command, tiny fp32: every run given (wall time of the process, as a shell sees it)
    cmd_run(paths[:256], "fp32")
    runs_q = sorted(cmd_run(paths[:q], "fp32") for _ in range(3))
    runs_n = [cmd_run(paths, "fp32") for _ in range(5)]
    med_n = statistics.median(runs_n)
    st = (len(paths) - q) / (med_n - statistics.median(runs_q))
    print("\n## The whole command, %d WAVs of 30 s, %s fp32, -O tmpfs\n" % (len(paths), args.size))
    print("| run | wall s | files/s |")
    print("|---|---|---|")
    for i, t_ in enumerate(runs_n):
        print("| %d | %.3f | %.0f |" % (i + 1, t_, len(paths) / t_))
    print("\nmedian %.0f files/s whole; steady state (N - N/4) / (median t(N) - median t(N/4)) = %.0f files/s; "
          "whole / steady %.0f %%; target >= 3000 files/s whole" % (len(paths) / med_n, st, 100 * len(paths) / med_n / st))

    for f in (fe_np, fe_t, fe_cpu_mel):
        f.close()
    shutil.rmtree(tmp, ignore_errors=True)
    if bad:
        print("MISMATCH: " + "; ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

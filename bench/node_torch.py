#!/usr/bin/env python3
"""The batched PyTorch pipeline a competent user writes today, the peer of
`whisper-stem --list LIST -O OUTDIR` in the node benchmark (bench/run-node.sh).

    python3 bench/node_torch.py -m MODEL.gguf --list LIST -O OUTDIR
        [--device cuda|cpu] [--precision fp32|bf16] [--out-dtype f32|f16]
        [--pad mel0|audio] [--pos] [--workers N] [--files F] [--batch B]

- a torch DataLoader with N worker processes (default: CPUs - 1) decodes the
  files: soundfile when installed, else the stdlib `wave` module for WAV and,
  for other formats, torchaudio.load, else ffmpeg or sox through a pipe; the
  audio is mixed to mono and resampled to 16 kHz in the workers with
  torchaudio.functional.resample (without torchaudio: the same windowed-sinc
  resampler, copied here in plain torch);
- openai-whisper's log_mel_spectrogram on the device, F files at a time (one
  batched STFT per padded length): torch.stft (n_fft 400, hop 160, Hann, return_complex), |.|^2 without the last
  frame, openai's mel filters (mel_filters.npz), log10 of clamp(1e-10),
  max(x, x.max() - 8) per file, (x + 4) / 4. --pad mel0 (default) is
  log_mel_spectrogram(audio, padding=N_SAMPLES) cut into 3000-frame windows
  over the n_samples/160 content frames, the last window zero-filled as
  pad_or_trim does (transcribe()'s windows); --pad audio pads the audio to
  whole 30 s windows first (log_mel_spectrogram(pad_or_trim(audio)) per 30 s);
- the conv stem with F.conv1d + F.gelu on B windows at a time (cuDNN,
  cudnn.benchmark on): fp32 with TF32 off, or bf16 under torch.autocast;
  --pos adds the file's positional embedding (else sinusoids(1500, d));
- one .npy per input from a thread pool (np.save), [1500, d] for one window,
  [n_windows, 1500, d] for more, named OUTDIR/<input name without extension>.npy
  as whisper-stem names them; --out-dtype f16 stores float16; --fsync flushes
  each file (and the directory at the end) to disk, as whisper-stem does for
  every output (plain np.save leaves them in the page cache).

Weights come from the same GGUF file whisper-stem reads (F32, F16 or BF16
tensors). Prints one JSON line on stdout: files, windows, seconds, files/s,
audio seconds / wall seconds, CPU busy (this process and its workers: CPU
time / wall / CPUs), GPU busy (mean of nvidia-smi samples; null without one),
the decoder and resampler used.
"""
import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
import wave
from concurrent.futures import ThreadPoolExecutor
from threading import BoundedSemaphore

T_START = time.perf_counter()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_read import NAMES, gguf_tensors  # noqa: E402
from node_time import GpuSampler, n_cpus  # noqa: E402

try:
    import soundfile  # noqa: E402
except Exception:  # not installed (or no libsndfile)
    soundfile = None
try:
    import torchaudio  # noqa: E402
except Exception:
    torchaudio = None

SR = 16000
N_FFT = 400
HOP = 160
N_SAMPLES = 480000
N_FRAMES = 3000
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------- weights

def stem_weights(path):
    t = gguf_tensors(path)
    w = {}
    for k, names in NAMES.items():
        for n in names:
            if n in t:
                w[k] = np.ascontiguousarray(t[n])
                break
    for k in ("w1", "b1", "w2", "b2"):
        if k not in w:
            raise SystemExit(f"{path}: no {NAMES[k][0]}")
    d = w["w1"].shape[0]
    w["b1"] = w["b1"].reshape(d)
    w["b2"] = w["b2"].reshape(d)
    if "pos" in w:
        w["pos"] = w["pos"].reshape(-1, d)
    return w


def sinusoids(length, channels, max_timescale=10000):
    """openai-whisper's sinusoids(), in float64."""
    inc = math.log(max_timescale) / (channels // 2 - 1)
    inv = np.exp(-inc * np.arange(channels // 2, dtype=np.float64))
    t = np.arange(length, dtype=np.float64)[:, None] * inv[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1).astype(np.float32)


def mel_filters(n_mels):
    for d in (os.path.join(REPO, "tests", "data"), os.path.join(REPO, "..", "shared", "data")):
        p = os.path.join(d, "mel_filters.npz")
        if os.path.exists(p):
            with np.load(p) as f:
                return f[f"mel_{n_mels}"].astype(np.float32)
    raise SystemExit("mel_filters.npz not found (tests/data or ../shared/data)")


# ---------------------------------------------------------------- decoding

def have(cmd):
    return shutil.which(cmd) is not None


def pick_decoder(paths):
    """(wav decoder, other-format decoder) names; the workers use them."""
    if soundfile is not None:
        return "soundfile", "soundfile"
    other = None
    if torchaudio is not None:
        try:  # torchaudio >= 2.9 needs torchcodec to load; try it once
            probe = next((p for p in paths if not p.lower().endswith(".wav")), None)
            if probe is not None:
                torchaudio.load(probe)
            other = "torchaudio"
        except Exception:
            other = None
    if other is None:
        other = "ffmpeg" if have("ffmpeg") else "sox" if have("sox") else None
    return "wave", other


def decode(path, wav_dec, other_dec):
    """float32 [channels, n] and the sample rate."""
    is_wav = path.lower().endswith(".wav")
    dec = wav_dec if is_wav else other_dec
    if dec == "soundfile":
        x, sr = soundfile.read(path, dtype="float32", always_2d=True)
        return np.ascontiguousarray(x.T), sr
    if dec == "wave":
        with wave.open(path) as f:
            sr, ch, sw = f.getframerate(), f.getnchannels(), f.getsampwidth()
            raw = f.readframes(f.getnframes())
        if sw == 2:
            x = np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0
        elif sw == 4:
            x = np.frombuffer(raw, "<i4").astype(np.float32) / 2147483648.0
        elif sw == 1:
            x = (np.frombuffer(raw, np.uint8).astype(np.float32) - 128.0) / 128.0
        else:
            raise RuntimeError(f"{path}: {8 * sw}-bit WAV needs soundfile")
        return x.reshape(-1, ch).T, sr
    if dec == "torchaudio":
        x, sr = torchaudio.load(path)
        return x.numpy(), sr
    if dec in ("ffmpeg", "sox"):
        sr = probe_rate(path, dec)
        if dec == "ffmpeg":
            cmd = ["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "s16le", "-ac", "1", "-"]
        else:
            cmd = ["sox", path, "-t", "raw", "-e", "signed", "-b", "16", "-c", "1", "-"]
        raw = subprocess.run(cmd, stdout=subprocess.PIPE, check=True).stdout
        return (np.frombuffer(raw, "<i2").astype(np.float32) / 32768.0)[None], sr
    raise RuntimeError(f"{path}: no decoder for this format (install soundfile)")


def probe_rate(path, dec):
    if dec == "sox" or have("soxi"):
        return int(subprocess.run(["soxi", "-r", path], stdout=subprocess.PIPE, check=True,
                                  text=True).stdout)
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                          "stream=sample_rate", "-of", "csv=p=0", path],
                         stdout=subprocess.PIPE, check=True, text=True).stdout
    return int(out.strip())


_kernels = {}


def resample_torch(x, orig, new, lowpass_filter_width=6, rolloff=0.99):
    """torchaudio.functional.resample's default (sinc_interp_hann), in plain
    torch, for machines without torchaudio. x: float32 tensor [n]."""
    g = math.gcd(orig, new)
    orig, new = orig // g, new // g
    key = (orig, new)
    if key not in _kernels:
        base = min(orig, new) * rolloff
        width = math.ceil(lowpass_filter_width * orig / base)
        idx = torch.arange(-width, width + orig, dtype=torch.float64)[None, None] / orig
        t = torch.arange(0, -new, -1, dtype=torch.float64)[:, None, None] / new + idx
        t = (t * base).clamp_(-lowpass_filter_width, lowpass_filter_width)
        window = torch.cos(t * math.pi / lowpass_filter_width / 2) ** 2
        t = t * math.pi
        scale = base / orig
        k = torch.where(t == 0, torch.tensor(1.0, dtype=torch.float64), torch.sin(t) / t)
        _kernels[key] = ((k * window * scale).to(torch.float32), width)
    kernel, width = _kernels[key]
    n = x.shape[-1]
    y = F.conv1d(F.pad(x[None, None], (width, width + orig)), kernel, stride=orig)
    y = y[0].t().reshape(-1)
    return y[:math.ceil(new * n / orig)]


class Files(torch.utils.data.Dataset):
    def __init__(self, paths, wav_dec, other_dec):
        self.paths, self.wav_dec, self.other_dec = paths, wav_dec, other_dec

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        x, sr = decode(self.paths[i], self.wav_dec, self.other_dec)
        x = torch.from_numpy(np.ascontiguousarray(x.mean(axis=0) if x.shape[0] > 1 else x[0]))
        if sr != SR:
            if torchaudio is not None:
                x = torchaudio.functional.resample(x, sr, SR)
            else:
                x = resample_torch(x, sr, SR)
        return i, x.float()


def collate(items):
    return items


# ---------------------------------------------------------------- compute

def geometry(n, pad):
    """(n_total, content frames, windows), as whisper-stem's ws_mel_geometry."""
    if pad == "audio":
        chunks = max(1, -(-n // N_SAMPLES))
        total = chunks * N_SAMPLES
        content = total // HOP
    else:
        total = n + N_SAMPLES
        content = n // HOP
    n_win = 1 if content == 0 else -(-content // N_FRAMES)
    return total, content, n_win


def log_mel_windows(audios, pad, filters, window, dev):
    """audios: list of 1-D CPU tensors. Returns [W, n_mels, 3000] on dev and
    the windows of each file. One batched STFT per padded length (files of the
    same length share it), so each file's reflect padding at its end is its own,
    as in openai's per-file log_mel_spectrogram."""
    geo = [geometry(a.shape[0], pad) for a in audios]
    groups = {}
    for k, g in enumerate(geo):
        groups.setdefault(g[0], []).append(k)
    log_specs = [None] * len(audios)
    for total, ks in groups.items():
        x = torch.zeros(len(ks), total, dtype=torch.float32, pin_memory=dev.type == "cuda")
        for r, k in enumerate(ks):
            a = audios[k][:total]
            x[r, :a.shape[0]] = a
        x = x.to(dev, non_blocking=True)
        stft = torch.stft(x, N_FFT, HOP, window=window, return_complex=True)
        mag = stft[..., :-1].abs() ** 2                   # [files, 201, total/160]
        ls = torch.clamp(filters @ mag, min=1e-10).log10()
        for r, k in enumerate(ks):
            log_specs[k] = ls[r]
    wins, counts = [], []
    for k, (total, content, n_win) in enumerate(geo):
        ls = log_specs[k]
        ls = torch.maximum(ls, ls.max() - 8.0)
        ls = (ls + 4.0) / 4.0
        need = n_win * N_FRAMES
        if pad == "mel0":
            ls = ls[:, :content]                            # pad_or_trim of mel[:, seek:seek+3000]
        if ls.shape[1] < need:
            ls = F.pad(ls, (0, need - ls.shape[1]))
        ls = ls[:, :need]
        wins.append(ls.reshape(ls.shape[0], n_win, N_FRAMES).transpose(0, 1))
        counts.append(n_win)
    return torch.cat(wins), counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--list", required=True, help="input paths, one a line")
    ap.add_argument("-O", "--outdir", required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--out-dtype", choices=["f32", "f16"], default="f32")
    ap.add_argument("--pad", choices=["mel0", "audio"], default="mel0")
    ap.add_argument("--pos", action="store_true", help="add the positional embedding")
    ap.add_argument("--workers", type=int, default=max(1, n_cpus() - 1))
    ap.add_argument("--files", type=int, default=16, help="files per log-Mel batch")
    ap.add_argument("--batch", type=int, default=64, help="windows per conv batch")
    ap.add_argument("--save-threads", type=int, default=8)
    ap.add_argument("--fsync", action="store_true",
                    help="fsync each output and the directory, as whisper-stem does (np.save does not)")
    a = ap.parse_args()

    with open(a.list) as f:
        paths = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    os.makedirs(a.outdir, exist_ok=True)
    dev = torch.device(a.device)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False          # fp32 means fp32, as whisper-stem's
    torch.backends.cuda.matmul.allow_tf32 = False
    sampler = GpuSampler(dev.type == "cuda")

    w = stem_weights(a.model)
    d, n_mels = w["w1"].shape[0], w["w1"].shape[1]
    t = {k: torch.from_numpy(v.copy()).to(dev) for k, v in w.items()}
    if a.pos and "pos" not in t:
        t["pos"] = torch.from_numpy(sinusoids(N_FRAMES // 2, d)).to(dev)
    filters = torch.from_numpy(mel_filters(n_mels)).to(dev)
    window = torch.hann_window(N_FFT, device=dev)
    out_np = np.float16 if a.out_dtype == "f16" else np.float32
    out_t = torch.float16 if a.out_dtype == "f16" else torch.float32

    wav_dec, other_dec = pick_decoder(paths)
    if other_dec is None and any(not p.lower().endswith(".wav") for p in paths):
        raise SystemExit("node_torch.py: no decoder for the non-WAV inputs: soundfile is not installed, "
                         "torchaudio.load failed (or is missing) and there is no ffmpeg or sox")
    loader = torch.utils.data.DataLoader(
        Files(paths, wav_dec, other_dec), batch_size=a.files, num_workers=a.workers,
        collate_fn=collate, prefetch_factor=2 if a.workers else None,
        persistent_workers=False)
    pool = ThreadPoolExecutor(a.save_threads)
    inflight = BoundedSemaphore(4 * a.save_threads)
    futures = []
    audio_s = 0.0
    n_windows = 0

    def save(path, arr):
        try:
            if a.fsync:
                with open(path, "wb") as f:
                    np.save(f, arr)
                    f.flush()
                    os.fsync(f.fileno())
            else:
                np.save(path, arr)
        finally:
            inflight.release()

    def stem(mel):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            x = F.gelu(F.conv1d(mel, t["w1"], t["b1"], padding=1))
            x = F.gelu(F.conv1d(x, t["w2"], t["b2"], stride=2, padding=1))
        x = x.float().transpose(1, 2)                     # [B, 1500, d]
        if a.pos:
            x = x + t["pos"]
        return x.to(out_t)

    with torch.inference_mode():
        for batch in loader:
            idx = [i for i, _ in batch]
            audios = [x for _, x in batch]
            audio_s += sum(x.shape[0] for x in audios) / SR
            mel, counts = log_mel_windows(audios, a.pad, filters, window, dev)
            outs = [stem(mel[s:s + a.batch]) for s in range(0, mel.shape[0], a.batch)]
            y = torch.cat(outs).cpu().numpy()
            n_windows += y.shape[0]
            s = 0
            for i, c in zip(idx, counts):
                name = os.path.splitext(os.path.basename(paths[i]))[0] + ".npy"
                arr = y[s] if c == 1 else y[s:s + c]
                s += c
                inflight.acquire()
                futures.append(pool.submit(save, os.path.join(a.outdir, name), arr.astype(out_np, copy=False)))
    for fu in futures:
        fu.result()
    pool.shutdown()
    if a.fsync:
        fd = os.open(a.outdir, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    del loader
    wall = time.perf_counter() - T_START
    gpu = sampler.stop()
    ru_s = resource.getrusage(resource.RUSAGE_SELF)
    ru_c = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru_s.ru_utime + ru_s.ru_stime + ru_c.ru_utime + ru_c.ru_stime
    cores = n_cpus()
    rec = {
        "tool": "pytorch", "files": len(paths), "windows": n_windows, "seconds": round(wall, 3),
        "files_per_s": round(len(paths) / wall, 2), "x_realtime": round(audio_s / wall, 1),
        "cpu_busy_pct": round(100.0 * cpu / wall / cores, 1), "gpu_busy_pct": gpu,
        "device": str(dev), "precision": a.precision, "out_dtype": a.out_dtype, "pad": a.pad,
        "pos": a.pos, "fsync": a.fsync, "workers": a.workers, "cores": cores,
        "decoder": {"wav": wav_dec, "other": other_dec},
        "resampler": "torchaudio" if torchaudio is not None else "torch (torchaudio's sinc_interp_hann, copied)",
        "torch": torch.__version__,
    }
    print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()

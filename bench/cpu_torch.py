#!/usr/bin/env python3
"""PyTorch on the CPU, the peer: openai-whisper's log_mel_spectrogram math and
F.gelu(F.conv1d(...)) x2, on 30 s windows. Same protocol as bench/cpu.c:
three rotated inputs, 3 warm-up runs, median and min of R runs, in ms.

    python3 bench/cpu_torch.py --threads N [--reps R] [--n-mels 80] [--d 384] [--seconds S] [--windows W]

--windows W: the stem on a batch of W windows (the inputs' log-Mels in turn) in one call, as
bench-cpu --windows; stem_ms is the call's, window_ms per window.
"""
import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--reps", type=int, default=20)
ap.add_argument("--n-mels", type=int, default=80)
ap.add_argument("--d", type=int, default=384)
ap.add_argument("--seconds", type=float, default=30.0)
ap.add_argument("--windows", type=int, default=1)
ap.add_argument("--filters", default="tests/data")
a = ap.parse_args()
torch.set_num_threads(a.threads)

N = 480000
filters = torch.from_numpy(np.fromfile(f"{a.filters}/mel_{a.n_mels}.f32", dtype="<f4").reshape(a.n_mels, 201))
window = torch.hann_window(400)


def log_mel(audio):  # openai-whisper audio.py
    stft = torch.stft(audio, 400, 160, window=window, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2
    mel_spec = filters @ magnitudes
    log_spec = torch.clamp(mel_spec, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    return (log_spec + 4.0) / 4.0


g = torch.Generator().manual_seed(0)
d, nm = a.d, a.n_mels
w1 = (torch.rand(d, nm, 3, generator=g) * 2 - 1) / math.sqrt(nm * 3)
b1 = (torch.rand(d, generator=g) * 2 - 1) / math.sqrt(nm * 3)
w2 = (torch.rand(d, d, 3, generator=g) * 2 - 1) / math.sqrt(d * 3)
b2 = (torch.rand(d, generator=g) * 2 - 1) / math.sqrt(d * 3)
t = torch.arange(N) / 16000.0
n_audio = int(a.seconds * 16000)
audios = [(0.2 * torch.sin(2 * math.pi * (200 + 50 * k) * t) * (0.5 + 0.5 * torch.sin(2 * math.pi * 3.0 * t))
           + 0.05 * (torch.rand(N, generator=g) - 0.5)).float() for k in range(3)]
for x in audios:  # a clip of n_audio samples, pad_or_trim'd to 30 s
    x[n_audio:] = 0
mels = [log_mel(x) for x in audios]
batch = torch.stack([mels[w % 3] for w in range(a.windows)])

tm, ts = [], []
with torch.no_grad():
    for i in range(-3, a.reps):
        k = (i + 3) % 3
        t0 = time.perf_counter()
        log_mel(audios[k])
        t1 = time.perf_counter()
        x = F.gelu(F.conv1d(mels[k][None] if a.windows == 1 else batch, w1, b1, padding=1))
        x = F.gelu(F.conv1d(x, w2, b2, stride=2, padding=1)).permute(0, 2, 1).contiguous()
        t2 = time.perf_counter()
        if i >= 0:
            tm.append(1e3 * (t1 - t0))
            ts.append(1e3 * (t2 - t1))
tm.sort()
ts.sort()
print(f"seconds={a.seconds:g} threads={a.threads} n_mels={nm} d={d} reps={a.reps} mel_ms={tm[len(tm)//2]:.3f} mel_min_ms={tm[0]:.3f} "
      f"stem_ms={ts[len(ts)//2]:.3f} stem_min_ms={ts[0]:.3f} windows={a.windows} window_ms={ts[len(ts)//2]/a.windows:.3f} "
      f"torch={torch.__version__}")

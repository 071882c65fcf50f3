#!/usr/bin/env python3
"""The PyTorch CPU pipeline a user runs over a corpus today, the peer of
`whisper-stem --device cpu --list`: for each file, decode with soundfile, pad or
trim to 30 s, openai-whisper's log_mel_spectrogram math, the conv stem
(F.conv1d + F.gelu, float32), np.save of [1500, d]. Weights from our GGUF file
(F32 tensors), so both sides compute the same thing.

    python3 bench/cmd_torch.py MODEL.gguf LIST OUTDIR [--threads N] [--filters tests/data]

LIST: one 16 kHz mono audio path a line. Prints one key=value line on stderr:
import_ms (Python and the imports), setup_ms (weights, filters), work_ms (the files),
files.
"""
import argparse
import os
import sys
import time

t_start = time.perf_counter()
import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_read import gguf_tensors  # noqa: E402

t_import = time.perf_counter()
ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("list")
ap.add_argument("outdir")
ap.add_argument("--threads", type=int, default=0, help="torch threads (0: PyTorch's default)")
ap.add_argument("--filters", default="tests/data")
a = ap.parse_args()
if a.threads > 0:
    torch.set_num_threads(a.threads)
w = gguf_tensors(a.model)
w1 = torch.from_numpy(w["encoder.conv1.weight"].copy())
b1 = torch.from_numpy(w["encoder.conv1.bias"].copy())
w2 = torch.from_numpy(w["encoder.conv2.weight"].copy())
b2 = torch.from_numpy(w["encoder.conv2.bias"].copy())
n_mels = w1.shape[1]
filters = torch.from_numpy(np.fromfile(f"{a.filters}/mel_{n_mels}.f32", "<f4").reshape(n_mels, 201))
window = torch.hann_window(400)
paths = [p for p in open(a.list).read().splitlines() if p and not p.startswith("#")]
os.makedirs(a.outdir, exist_ok=True)
t_setup = time.perf_counter()

with torch.inference_mode():
    for p in paths:
        audio, sr = sf.read(p, dtype="float32", always_2d=True)
        if sr != 16000 or audio.shape[1] != 1:
            raise SystemExit(f"{p}: {sr} Hz, {audio.shape[1]} channels (the peer takes 16 kHz mono)")
        audio = torch.from_numpy(audio[:, 0])
        audio = F.pad(audio, (0, max(0, 480000 - audio.shape[0])))[:480000]  # whisper.pad_or_trim
        stft = torch.stft(audio, 400, 160, window=window, return_complex=True)  # whisper.audio
        mag = stft[..., :-1].abs() ** 2
        log_spec = torch.clamp(filters @ mag, min=1e-10).log10()
        log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
        mel = (log_spec + 4.0) / 4.0
        x = F.gelu(F.conv1d(mel[None], w1, b1, padding=1))
        x = F.gelu(F.conv1d(x, w2, b2, stride=2, padding=1)).permute(0, 2, 1)[0]
        name = os.path.splitext(os.path.basename(p))[0]
        np.save(os.path.join(a.outdir, name + ".npy"), x.contiguous().numpy())
t_end = time.perf_counter()
print(f"import_ms={1e3*(t_import-t_start):.1f} setup_ms={1e3*(t_setup-t_import):.1f} "
      f"work_ms={1e3*(t_end-t_setup):.1f} files={len(paths)}", file=sys.stderr)

#!/usr/bin/env python3
"""The PyTorch path users run today, end to end, for the whole-run comparison:
read a 16 kHz WAV, openai-whisper's log_mel_spectrogram math on the GPU, the
conv stem (F.conv1d + F.gelu, fp32, TF32 off), np.save. Weights from our GGUF
file (F32 tensors) so both sides compute the same thing.

    python3 bench/whole_torch.py MODEL.gguf IN.wav OUT.npy [--filters tests/data]
"""
import argparse
import sys
import time

t_start = time.perf_counter()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import wave  # noqa: E402

from gguf_read import gguf_tensors  # noqa: E402

t_import = time.perf_counter()
ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("wav")
ap.add_argument("out")
ap.add_argument("--filters", default="tests/data")
a = ap.parse_args()


dev = torch.device("cuda")
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
w = gguf_tensors(a.model)
w1 = torch.from_numpy(w["encoder.conv1.weight"].copy()).to(dev)
b1 = torch.from_numpy(w["encoder.conv1.bias"].copy()).to(dev)
w2 = torch.from_numpy(w["encoder.conv2.weight"].copy()).to(dev)
b2 = torch.from_numpy(w["encoder.conv2.bias"].copy()).to(dev)
n_mels = w1.shape[1]
filters = torch.from_numpy(np.fromfile(f"{a.filters}/mel_{n_mels}.f32", "<f4").reshape(n_mels, 201)).to(dev)
t_setup = time.perf_counter()

with wave.open(a.wav) as f:
    assert f.getframerate() == 16000 and f.getnchannels() == 1 and f.getsampwidth() == 2
    audio = np.frombuffer(f.readframes(f.getnframes()), "<i2").astype(np.float32) / 32768.0
audio = torch.from_numpy(np.pad(audio, (0, max(0, 480000 - len(audio))))[:480000]).to(dev)
with torch.no_grad():
    window = torch.hann_window(400, device=dev)
    stft = torch.stft(audio, 400, 160, window=window, return_complex=True)
    mag = stft[..., :-1].abs() ** 2
    log_spec = torch.clamp(filters @ mag, min=1e-10).log10()
    log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
    mel = (log_spec + 4.0) / 4.0
    x = F.gelu(F.conv1d(mel[None], w1, b1, padding=1))
    x = F.gelu(F.conv1d(x, w2, b2, stride=2, padding=1)).permute(0, 2, 1)[0]
    np.save(a.out, x.cpu().numpy())
t_end = time.perf_counter()
print(f"import_ms={1e3*(t_import-t_start):.1f} setup_ms={1e3*(t_setup-t_import):.1f} "
      f"work_ms={1e3*(t_end-t_setup):.1f}", file=sys.stderr)

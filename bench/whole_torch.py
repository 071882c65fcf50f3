#!/usr/bin/env python3
"""The PyTorch path users run today, end to end, for the whole-run comparison:
read a 16 kHz WAV, openai-whisper's log_mel_spectrogram math on the GPU, the
conv stem (F.conv1d + F.gelu, fp32, TF32 off), np.save. Weights from our GGUF
file (F32 tensors) so both sides compute the same thing.

    python3 bench/whole_torch.py MODEL.gguf IN.wav OUT.npy [--filters tests/data]
"""
import argparse
import struct
import sys
import time

t_start = time.perf_counter()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import wave  # noqa: E402

t_import = time.perf_counter()
ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("wav")
ap.add_argument("out")
ap.add_argument("--filters", default="tests/data")
a = ap.parse_args()


def gguf_tensors(path):
    """Minimal GGUF v3 reader for F32 tensors (enough for ws-mkmodel files)."""
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF"
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    off = 24

    def rstr(o):
        n = struct.unpack_from("<Q", b, o)[0]
        return b[o + 8:o + 8 + n].decode(), o + 8 + n

    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    align = 32

    def rval(t, o):
        if t == 8:
            return rstr(o)
        if t == 9:
            et, n = struct.unpack_from("<IQ", b, o)
            o += 12
            for _ in range(n):
                _, o = rval(et, o)
            return None, o
        fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}[t]
        return struct.unpack_from("<" + fmt, b, o)[0], o + sizes[t]

    for _ in range(n_kv):
        k, off = rstr(off)
        t = struct.unpack_from("<I", b, off)[0]
        v, off = rval(t, off + 4)
        if k == "general.alignment":
            align = v
    infos = []
    for _ in range(n_t):
        name, off = rstr(off)
        nd = struct.unpack_from("<I", b, off)[0]
        ne = struct.unpack_from("<%dQ" % nd, b, off + 4)
        typ, toff = struct.unpack_from("<IQ", b, off + 4 + 8 * nd)
        off += 4 + 8 * nd + 12
        infos.append((name, ne, typ, toff))
    data = (off + align - 1) // align * align
    out = {}
    for name, ne, typ, toff in infos:
        assert typ == 0, "F32 models only"
        n = int(np.prod(ne))
        out[name] = np.frombuffer(b, "<f4", n, data + toff).reshape(tuple(reversed(ne)))
    return out


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

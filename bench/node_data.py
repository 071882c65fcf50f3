#!/usr/bin/env python3
"""Data sets for the node benchmark (bench/run-node.sh).

    python3 bench/node_data.py DIR [--wav N] [--flac M] [--flac-seconds S]

- DIR/wav/sNNNNN.wav: N x 30 s, 16 kHz mono 16-bit WAV of speech: samples/jfk.wav
  looped from a different offset per file (and a slightly different gain), so
  no two files are equal; DIR/wav.list lists them.
- DIR/flac/lNNNN.flac: M x S seconds (default 600: 10 min), 44.1 kHz mono 16-bit
  FLAC of the same speech (jfk.wav brought to 44.1 kHz by linear interpolation,
  looped from a per-file offset); DIR/flac.list. Writer: soundfile when
  installed, else the `flac` or `sox` or `ffmpeg` command, else torchaudio.save;
  with none of them it says so on stderr and writes no FLAC set (no flac.list).

A set that DIR already holds with the same count and length is kept (DIR/*.done).
Prints one line per set: what it wrote or kept, and the FLAC writer.
"""
import argparse
import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import wave
from concurrent.futures import ThreadPoolExecutor

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def speech16k():
    for p in (os.path.join(REPO, "samples", "jfk.wav"), os.path.join(REPO, "..", "shared", "data", "jfk.wav")):
        if os.path.exists(p):
            with wave.open(p) as f:
                assert f.getframerate() == 16000 and f.getnchannels() == 1 and f.getsampwidth() == 2
                return np.frombuffer(f.readframes(f.getnframes()), "<i2").astype(np.float32)
    sys.exit("node_data.py: samples/jfk.wav not found")


def looped(src, n, i):
    off = (i * 104729 + 7 * i * i) % len(src)
    gain = 0.8 + 0.2 * ((i * 37) % 11) / 10.0
    y = np.resize(np.roll(src, -off), n) * gain
    return np.clip(np.rint(y), -32768, 32767).astype("<i2")


def done_ok(dirpath, tag):
    p = dirpath + ".done"
    return os.path.exists(p) and open(p).read().strip() == tag


def write_wav(path, pcm, rate):
    with wave.open(path, "wb") as g:
        g.setnchannels(1)
        g.setsampwidth(2)
        g.setframerate(rate)
        g.writeframes(pcm.tobytes())


def flac_writer():
    try:
        import soundfile  # noqa: F401
        return "soundfile"
    except Exception:
        pass
    for c in ("flac", "sox", "ffmpeg"):
        if shutil.which(c):
            return c
    if sndfile() is not None:
        return "libsndfile"
    try:
        import torch
        import torchaudio
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            torchaudio.save(os.path.join(d, "probe.flac"), torch.zeros(1, 16), 16000, format="flac")
        return "torchaudio"
    except Exception:
        return None


class _SfInfo(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int), ("channels", ctypes.c_int),
                ("format", ctypes.c_int), ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]


_SF = []


def sndfile():
    """libsndfile through ctypes ($NODE_SNDFILE, e.g. a bundle's lib/libsndfile.so.1, or the
    system's), or None."""
    if not _SF:
        lib = None
        for p in (os.environ.get("NODE_SNDFILE"), ctypes.util.find_library("sndfile")):
            try:
                lib = ctypes.CDLL(p) if p else None
            except OSError:
                lib = None
            if lib is not None:
                lib.sf_open.restype = ctypes.c_void_p
                lib.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_SfInfo)]
                lib.sf_writef_short.restype = ctypes.c_int64
                lib.sf_writef_short.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
                lib.sf_close.argtypes = [ctypes.c_void_p]
                break
        _SF.append(lib)
    return _SF[0]


def write_flac(path, pcm, rate, how):
    raw = ["-t", "raw", "-r", str(rate), "-e", "signed", "-b", "16", "-c", "1"]
    if how == "soundfile":
        import soundfile
        soundfile.write(path, pcm, rate, subtype="PCM_16", format="FLAC")
    elif how == "flac":
        subprocess.run(["flac", "-s", "-f", "--force-raw-format", "--endian=little", "--sign=signed",
                        "--channels=1", "--bps=16", f"--sample-rate={rate}", "-o", path, "-"],
                       input=pcm.tobytes(), check=True)
    elif how == "sox":
        subprocess.run(["sox"] + raw + ["-", path], input=pcm.tobytes(), check=True)
    elif how == "ffmpeg":
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "s16le", "-ar", str(rate),
                        "-ac", "1", "-i", "-", "-c:a", "flac", path], input=pcm.tobytes(), check=True)
    elif how == "libsndfile":
        lib = sndfile()
        info = _SfInfo(0, rate, 1, 0x170000 | 0x0002, 0, 0)  # SF_FORMAT_FLAC | SF_FORMAT_PCM_16
        f = lib.sf_open(path.encode(), 0x20, ctypes.byref(info))  # SFM_WRITE
        if not f:
            raise OSError(f"libsndfile cannot write {path}")
        x = np.ascontiguousarray(pcm, dtype="<i2")
        n = lib.sf_writef_short(f, x.ctypes.data, len(x))
        lib.sf_close(f)
        if n != len(x):
            raise OSError(f"libsndfile wrote {n} of {len(x)} frames to {path}")
    elif how == "torchaudio":
        import torch
        import torchaudio
        torchaudio.save(path, torch.from_numpy(pcm.astype(np.float32) / 32768.0)[None], rate,
                        format="flac", bits_per_sample=16)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--wav", type=int, default=1024)
    ap.add_argument("--flac", type=int, default=50)
    ap.add_argument("--flac-seconds", type=float, default=600.0)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    src = speech16k()
    threads = max(1, len(os.sched_getaffinity(0)))

    wdir = os.path.join(a.dir, "wav")
    tag = f"wav {a.wav} x 30 s 16000 Hz"
    if a.wav > 0 and not done_ok(wdir, tag):
        shutil.rmtree(wdir, ignore_errors=True)
        os.makedirs(wdir)
        paths = [os.path.join(wdir, f"s{i:05d}.wav") for i in range(a.wav)]
        with ThreadPoolExecutor(threads) as ex:
            list(ex.map(lambda i: write_wav(paths[i], looped(src, 480000, i), 16000), range(a.wav)))
        with open(os.path.join(a.dir, "wav.list"), "w") as f:
            f.write("".join(p + "\n" for p in paths))
        open(wdir + ".done", "w").write(tag + "\n")
        print(f"node_data: wrote {tag} in {wdir}")
    elif a.wav > 0:
        print(f"node_data: kept {tag} in {wdir}")

    fdir = os.path.join(a.dir, "flac")
    tag = f"flac {a.flac} x {a.flac_seconds:g} s 44100 Hz"
    flist = os.path.join(a.dir, "flac.list")
    if a.flac <= 0:
        return
    if done_ok(fdir, tag):
        print(f"node_data: kept {tag} in {fdir}")
        return
    how = flac_writer()
    if how is None:
        if os.path.exists(flist):
            os.remove(flist)
        print("node_data: no FLAC writer (soundfile, flac, sox, ffmpeg, torchaudio): no FLAC set",
              file=sys.stderr)
        return
    shutil.rmtree(fdir, ignore_errors=True)
    os.makedirs(fdir)
    t16 = np.arange(len(src)) / 16000.0
    n44 = int(len(src) * 44100 / 16000)
    src44 = np.interp(np.arange(n44) / 44100.0, t16, src).astype(np.float32)
    n = int(round(a.flac_seconds * 44100))
    paths = [os.path.join(fdir, f"l{i:04d}.flac") for i in range(a.flac)]
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(lambda i: write_flac(paths[i], looped(src44, n, i), 44100, how), range(a.flac)))
    with open(flist, "w") as f:
        f.write("".join(p + "\n" for p in paths))
    open(fdir + ".done", "w").write(tag + "\n")
    print(f"node_data: wrote {tag} in {fdir} (FLAC writer: {how})")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The default decoder against --decode openai (openai-whisper's load_audio), per rate and format.

For each case, samples/jfk.wav (11 s of speech) is encoded by ffmpeg at a rate and in a
format corpora keep; then whisper_stem decodes it both ways:
  default  libsndfile / libmpg123 / FFmpeg's libraries, float samples, libsoxr to 16 kHz
  openai   ffmpeg's decoding and libswresample to int16 at 16 kHz, / 32768: bit for bit
           what whisper.audio.load_audio returns (tests/test_audio_av.c holds that)
and reports how far the default's log-Mel and embeddings are from openai's:
  - log-Mel max |difference|, all 80 bands and the bands wholly below 7.2 kHz (0.9 x the
    Nyquist frequency of the lowest rate above 16 kHz in the table);
  - embeddings relative L2 (||default - openai|| / ||openai||) through a tiny model.
The model is a random one from ws-mkmodel (--size tiny) unless --model names real weights.

Run:  WHISPER_STEM_LIB=build/libwhisper-stem.so.0 PYTHONPATH=python \\
          python3 bench/decode_openai.py [--build build] [--model tiny.gguf]
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

import whisper_stem as ws

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = [
    # label, ffmpeg output arguments, extension
    ("8 kHz WAV (telephone)", "-ar 8000 -c:a pcm_s16le", "wav"),
    ("8 kHz mu-law WAV", "-ar 8000 -c:a pcm_mulaw", "wav"),
    ("16 kHz WAV", "-ar 16000 -c:a pcm_s16le", "wav"),
    ("22.05 kHz WAV", "-ar 22050 -c:a pcm_s16le", "wav"),
    ("44.1 kHz WAV, stereo", "-ar 44100 -ac 2 -c:a pcm_s16le", "wav"),
    ("48 kHz FLAC", "-ar 48000 -c:a flac", "flac"),
    ("44.1 kHz MP3 128k", "-ar 44100 -c:a libmp3lame -b:a 128k", "mp3"),
    ("22.05 kHz MP3 32k", "-ar 22050 -c:a libmp3lame -b:a 32k", "mp3"),
    ("44.1 kHz AAC (M4A) 96k", "-ar 44100 -c:a aac -b:a 96k", "m4a"),
    ("48 kHz Opus (WebM) 32k", "-c:a libopus -b:a 32k", "webm"),
    ("48 kHz Vorbis (Ogg)", "-ar 48000 -c:a libvorbis", "ogg"),
]


def band_edges_hz(n_mels=80):
    f = np.load(os.path.join(ROOT, "..", "shared", "data", "mel_filters.npz"))["mel_%d" % n_mels]
    top = np.array([np.nonzero(row)[0].max() for row in f])  # highest FFT bin of each band
    return top * 16000.0 / 400.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--model", default=None, help="real weights (GGUF); default: a random tiny model")
    ap.add_argument("--audio", default=os.path.join(ROOT, "samples", "jfk.wav"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ws-decode-")
    model = a.model
    if model is None:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([os.path.join(a.build, "ws-mkmodel"), "--size", "tiny", "-o", model], check=True,
                       stdout=subprocess.DEVNULL)
    low = band_edges_hz() < 7200
    ver = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True).stdout.split("\n")[0]
    print("# %s; whisper_stem %s; model %s" % (ver, ws.__version__, "random tiny" if a.model is None else a.model))
    print("| input | log-Mel max abs diff, all bands | bands below 7.2 kHz | embeddings rel L2 |")
    print("|---|---|---|---|")
    with ws.Frontend(model, device="cpu") as fe:
        for label, args, ext in CASES:
            path = os.path.join(tmp, "in." + ext)
            subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", a.audio] + args.split() + [path],
                           check=True)
            d = ws.load_audio(path)
            o = ws.load_audio(path, decode="openai")
            n = min(len(d), len(o))  # the same length but for a codec's padding
            md, mo = ws.log_mel(d[:n]), ws.log_mel(o[:n])
            diff = np.abs(md - mo)
            ed, eo = fe.embed_audio(d[:n]), fe.embed_audio(o[:n])
            rel = float(np.linalg.norm(ed - eo) / np.linalg.norm(eo))
            extra = "" if len(d) == len(o) else " (lengths %d, %d)" % (len(d), len(o))
            print("| %s%s | %.2e | %.2e | %.2e |" % (label, extra, diff.max(), diff[low].max(), rel))
            sys.stdout.flush()


if __name__ == "__main__":
    main()

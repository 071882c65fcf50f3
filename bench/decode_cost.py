#!/usr/bin/env python3
"""What decoding costs: per hour of audio by format, and segments of a long file.

1. Decode cost per hour of audio: a 10-minute recording (samples/jfk.wav looped, 16 kHz
   speech) encoded by ffmpeg as FLAC, MP3, AAC (M4A), Opus (WebM) and Vorbis (Ogg), at
   their usual rates; whisper_stem.load_audio (decode, mono, resample to 16 kHz) timed, the
   median of --runs runs, one thread; given as seconds per hour of audio. With
   decode="openai" beside it.
2. Segments: 20 segments of --seg seconds spread over the same 10-minute file, each read
   with load_audio(path, start, duration), against the same audio as a file of its own
   (ffmpeg cut it out, same format): the cost of a segment over the cost of its own audio.
   Both include opening the file and the resampler's start, so the ratio says what the
   position in a long file adds (1.0: nothing; decoding from the start would be ~minutes).

Run:  WHISPER_STEM_LIB=build/libwhisper-stem.so.0 PYTHONPATH=python python3 bench/decode_cost.py
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import whisper_stem as ws

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FORMATS = [
    ("FLAC 16 kHz", "flac", "-ar 16000 -c:a flac"),
    ("FLAC 44.1 kHz", "flac", "-ar 44100 -c:a flac"),
    ("WAV 16 kHz", "wav", "-ar 16000 -c:a pcm_s16le"),
    ("MP3 44.1 kHz 128k", "mp3", "-ar 44100 -c:a libmp3lame -b:a 128k"),
    ("AAC 44.1 kHz 96k (M4A)", "m4a", "-ar 44100 -c:a aac -b:a 96k"),
    ("Opus 48 kHz 32k (WebM)", "webm", "-c:a libopus -b:a 32k"),
    ("Vorbis 44.1 kHz (Ogg)", "ogg", "-ar 44100 -c:a libvorbis"),
]


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y"] + list(args), check=True)


def timed(fn, runs):
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--seg", type=float, default=5.0)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ws-cost-")
    src = os.path.join(tmp, "source.wav")
    secs = a.minutes * 60
    ffmpeg("-stream_loop", "-1", "-i", os.path.join(ROOT, "samples", "jfk.wav"), "-t", str(secs), "-ar", "16000",
           src)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print("# %s of speech; median of %d runs; seconds per hour of audio (x realtime)" % (
        "%g min" % a.minutes, a.runs))
    print("| format | default | --decode openai | segment / own audio (%g s, default) |" % a.seg)
    print("|---|---|---|---|")
    for label, ext, args in FORMATS:
        path = os.path.join(tmp, "long." + ext)
        ffmpeg("-i", src, *args.split(), path)
        d = timed(lambda: ws.load_audio(path), a.runs)
        o = timed(lambda: ws.load_audio(path, decode="openai"), a.runs)
        per_h = 3600.0 / secs
        # segments, each against a file of its own audio
        ratios = []
        for k in range(20):
            start = (secs - a.seg - 1) * (k + 0.5) / 20
            own = os.path.join(tmp, "own%d.%s" % (k, ext))
            ffmpeg("-ss", "%.3f" % start, "-t", "%.3f" % a.seg, "-i", src, *args.split(), own)
            t_seg = timed(lambda: ws.load_audio(path, start=start, duration=a.seg), a.runs)
            t_own = timed(lambda: ws.load_audio(own), a.runs)
            ratios.append(t_seg / t_own)
        print("| %s | %.2f s (%.0fx) | %.2f s (%.0fx) | %.2f (%.2f .. %.2f) |" % (
            label, d * per_h, secs / d, o * per_h, secs / o, statistics.median(ratios), min(ratios),
            max(ratios)), flush=True)


if __name__ == "__main__":
    main()

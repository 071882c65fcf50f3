#!/usr/bin/env python3
"""What decoding costs: per hour of audio by format, and segments of a long file.

1. Decode cost per hour of audio: a 10-minute recording (samples/jfk.wav looped, 16 kHz
   speech) encoded by ffmpeg as FLAC, MP3, AAC (M4A), Opus (WebM) and Vorbis (Ogg), at
   their usual rates; whisper_stem.load_audio (decode, mono, resample to 16 kHz) timed, the
   median of --runs runs, one thread; given as seconds per hour of audio. With
   decode="openai" beside it.
2. Segments: 20 segments of --seg seconds spread over the same 10-minute file, each read
   with load_audio(path, start, duration), against the same audio as a file of its own
   (lossy formats: the long file's packets from there, copied by `ffmpeg -i LONG -ss START
   -t SEG -c copy`, the same encoded bits and so the same decoding work; WAV and FLAC: the
   same samples encoded again): the cost of a segment over the cost of its own audio.
   Both include opening the file and the resampler's start, so the ratio says what the
   position in a long file adds (1.0: nothing; decoding from the start would be ~minutes).
   The two are timed in turn, --runs times each, and the medians compared; the table gives
   the median ratio over the 20 segments and its range. Repeated reads of a file find what
   the process kept of it (MP3's frame index), so the last column is the first read of
   the last segment (570 s in), before anything else of that file was read (but after
   another file of the format, so that the decoder's libraries are loaded), over its own
   audio: one timing, what a lone segment near the end of a long file costs.

Run:  WHISPER_STEM_LIB=build/libwhisper-stem.so.0 PYTHONPATH=python python3 bench/decode_cost.py
      (or --make DIR here, then --from DIR on a machine without ffmpeg)
"""

import argparse
import json
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


def make(d, minutes, seg, formats):
    """The files of the run in d (index.json says what they are): the long recording in each
    format and 20 segments of it as files of their own."""
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "source.wav")
    secs = minutes * 60
    ffmpeg("-stream_loop", "-1", "-i", os.path.join(ROOT, "samples", "jfk.wav"), "-t", str(secs), "-ar", "16000",
           src)
    index = {"seconds": secs, "seg": seg, "formats": []}
    for i, (label, ext, args) in enumerate(formats):
        path = "long%d.%s" % (i, ext)
        ffmpeg("-i", src, *args.split(), os.path.join(d, path))
        segs = []
        for k in range(20):
            start = round((secs - seg - 1) * (k + 0.5) / 20, 3)
            own = "own%d-%d.%s" % (i, k, ext)
            if ext in ("wav", "flac"):  # lossless: the same samples encoded again
                ffmpeg("-ss", "%.3f" % start, "-t", "%.3f" % seg, "-i", src, *args.split(), os.path.join(d, own))
            else:  # lossy: the long file's own packets, copied (the same bits to decode)
                ffmpeg("-i", os.path.join(d, path), "-ss", "%.3f" % start, "-t", "%.3f" % seg, "-c", "copy",
                       os.path.join(d, own))
            segs.append({"start": start, "file": own})
        index["formats"].append({"label": label, "file": path, "segments": segs})
    os.remove(src)
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump(index, f)


def paired(fa, fb, runs):
    """Medians of fa's and fb's times, taken in turn (so that a drift of the machine's speed
    reaches both alike)."""
    ta, tb = [], []
    for _ in range(runs):
        for fn, ts in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def run(d, runs, keep):
    with open(os.path.join(d, "index.json")) as f:
        index = json.load(f)
    secs, seg = index["seconds"], index["seg"]
    print("# %g min of speech; median of %d runs; seconds per hour of audio (x realtime)" % (secs / 60, runs))
    print("| format | default | --decode openai | segment / own audio (%g s, default) | last segment, first read |"
          % seg)
    print("|---|---|---|---|---|")
    for fm in index["formats"]:
        if keep and fm["label"].split()[0] not in keep:
            continue
        path = os.path.join(d, fm["file"])
        last = fm["segments"][-1]
        for f in [fm["file"]] + [sg["file"] for sg in fm["segments"]]:  # into the page cache: decode, not disk
            with open(os.path.join(d, f), "rb") as fh:
                fh.read()
        try:  # before anything else reads this file: what a first segment near its end costs
            ws.load_audio(os.path.join(d, fm["segments"][0]["file"]))  # the decoder's libraries loaded
            t0 = time.perf_counter()
            ws.load_audio(path, start=last["start"], duration=seg)
            t_cold = time.perf_counter() - t0
        except ws.Error as e:  # FFmpeg's libraries missing on this machine
            print("| %s | %s | | | |" % (fm["label"], e), flush=True)
            continue
        cold = t_cold / timed(lambda: ws.load_audio(os.path.join(d, last["file"])), runs)
        d_s = timed(lambda: ws.load_audio(path), runs)
        try:
            o = "%.2f s (%.0fx)" % (timed(lambda: ws.load_audio(path, decode="openai"), runs) * 3600 / secs,
                                    secs / timed(lambda: ws.load_audio(path, decode="openai"), 1))
        except ws.Error:
            o = "(no FFmpeg libraries)"
        ratios = []
        for sg in fm["segments"]:
            own = os.path.join(d, sg["file"])
            t_seg, t_own = paired(lambda: ws.load_audio(path, start=sg["start"], duration=seg),
                                  lambda: ws.load_audio(own), runs)
            ratios.append(t_seg / t_own)
        print("| %s | %.2f s (%.0fx) | %s | %.2f (%.2f .. %.2f) | %.2f |" % (
            fm["label"], d_s * 3600 / secs, secs / d_s, o, statistics.median(ratios), min(ratios), max(ratios),
            cold), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--seg", type=float, default=5.0)
    ap.add_argument("--make", metavar="DIR", help="only write the files (needs ffmpeg) into DIR")
    ap.add_argument("--from", dest="src", metavar="DIR", help="time the files --make wrote (no ffmpeg needed)")
    ap.add_argument("--formats", default="", help="comma-separated labels' first words to make or time (e.g. FLAC,WAV)")
    a = ap.parse_args()
    formats = [f for f in FORMATS if not a.formats or f[0].split()[0] in a.formats.split(",")]
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if a.make:
        make(a.make, a.minutes, a.seg, formats)
        return
    d = a.src or tempfile.mkdtemp(prefix="ws-cost-")
    if not a.src:
        make(d, a.minutes, a.seg, formats)
    run(d, a.runs, [f[0].split()[0] for f in formats] if a.formats else None)


if __name__ == "__main__":
    main()

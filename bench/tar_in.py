#!/usr/bin/env python3
"""FLAC from tar shards against the same FLACs as loose files: the whole command's files/s.

From one FLAC (--flac), N copies are made (standard library only: no ffmpeg needed):
  loose/utt00000.flac ...              given as --list loose.txt
  S plain shards  shard-K.tar          given as --tar-in shard-K.tar ...
  S gzip shards   shard-K.tar.gz       (level 1), given the same way
and `whisper-stem -m MODEL --device DEV -O out -q` runs over each, in turn, --runs rounds
(outputs removed between runs; the files are in the page cache after the first round, as
they are for the loose ones). Reported: the median files/s of each, and tar / loose.
The outputs of the three are compared byte for byte once.

Run:  python3 bench/tar_in.py --bin build/whisper-stem --mkmodel build/ws-mkmodel \
          --flac speech30s.flac --n 4000 --shards 16 --device cuda
"""

import argparse
import filecmp
import gzip
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--mkmodel", required=True)
    ap.add_argument("--flac", required=True)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--shards", type=int, default=16)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="ws-tarin-")
    os.makedirs(d, exist_ok=True)
    model = os.path.join(d, "tiny.gguf")
    subprocess.run([a.mkmodel, "--size", "tiny", "-o", model], check=True, stdout=subprocess.DEVNULL)
    loose = os.path.join(d, "loose")
    os.makedirs(loose, exist_ok=True)
    names = ["utt%05d.flac" % i for i in range(a.n)]
    for nm in names:
        shutil.copyfile(a.flac, os.path.join(loose, nm))
    with open(os.path.join(d, "loose.txt"), "w") as f:
        f.writelines(os.path.join(loose, nm) + "\n" for nm in names)
    per = (a.n + a.shards - 1) // a.shards
    plain, gz = [], []
    for k in range(a.shards):
        part = names[k * per:(k + 1) * per]
        p = os.path.join(d, "shard-%03d.tar" % k)
        with tarfile.open(p, "w", format=tarfile.USTAR_FORMAT) as t:
            for nm in part:
                t.add(os.path.join(loose, nm), arcname=nm)
        plain.append(p)
        with open(p, "rb") as src, gzip.open(p + ".gz", "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        gz.append(p + ".gz")

    def run(kind, args):
        out = os.path.join(d, "out-" + kind)
        shutil.rmtree(out, ignore_errors=True)
        cmd = [a.bin, "-m", model, "--device", a.device, "-O", out, "-q"] + args
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        return time.perf_counter() - t0

    kinds = {
        "loose": ["--list", os.path.join(d, "loose.txt")],
        "tar": sum((["--tar-in", p] for p in plain), []),
        "tar.gz": sum((["--tar-in", p] for p in gz), []),
    }
    times = {k: [] for k in kinds}
    for _ in range(a.runs):
        for k, args in kinds.items():
            times[k].append(run(k, args))
    same = all(
        filecmp.cmp(os.path.join(d, "out-loose", nm.replace(".flac", ".npy")),
                    os.path.join(d, "out-" + k, nm.replace(".flac", ".npy")), shallow=False)
        for k in ("tar", "tar.gz") for nm in names[:: max(1, a.n // 50)])
    rate = {k: a.n / statistics.median(v) for k, v in times.items()}
    print("# %d copies of %s (%d bytes) in %d shards; --device %s; %d rounds; outputs identical: %s" % (
        a.n, os.path.basename(a.flac), os.path.getsize(a.flac), a.shards, a.device, a.runs, same))
    for k in kinds:
        print("%-7s %8.1f files/s  (runs: %s s)  %.3f of loose" % (
            k, rate[k], ", ".join("%.2f" % t for t in times[k]), rate[k] / rate["loose"]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""node_profile.py - where the time of one whisper-stem run over many inputs goes.

Runs `whisper-stem ARGS... --json REPORT` once, timing the whole command, and prints one
line: inputs, wall seconds, inputs/s, the report's model-load, init and total times, and
the per-input stage times (decode, stage, mel, stem, write: mean and 90th percentile in ms;
summed over inputs and divided by the wall time, i.e. how many threads' worth each stage
kept busy).

    bench/node_profile.py BIN -m tiny.gguf --device cuda --list files.txt -O /dev/shm/out -q
"""
import json
import os
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    fd, report = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = sys.argv[1:] + ["--json", report]
    t0 = time.perf_counter()
    rc = subprocess.call(cmd)
    wall = time.perf_counter() - t0
    with open(report) as f:
        r = json.load(f)
    os.unlink(report)
    ins = r.get("inputs", [])
    ok = sum(1 for i in ins if i.get("ok"))
    out = {"rc": rc, "inputs": len(ins), "ok": ok, "wall_s": round(wall, 3),
           "inputs_per_s": round(len(ins) / wall, 1) if wall > 0 else None,
           "device": r.get("device_name"), "mel_device": r.get("mel_device"),
           "batch_windows": r.get("batch_windows"), "gpu_batches": r.get("gpu_batches")}
    out.update({k + "_ms": round(v, 1) for k, v in r.get("timings_ms", {}).items()})
    for st in ("decode", "stage", "mel", "stem", "write"):
        v = sorted(i["timings_ms"].get(st, 0) for i in ins if "timings_ms" in i)
        if v:
            out[st] = {"mean_ms": round(sum(v) / len(v), 3), "p90_ms": round(v[int(0.9 * (len(v) - 1))], 3),
                       "threads_busy": round(sum(v) / 1e3 / wall, 2)}
    print(json.dumps(out))
    sys.exit(rc)


if __name__ == "__main__":
    main()

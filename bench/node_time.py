#!/usr/bin/env python3
"""Whole-command measurement for the node benchmark (bench/run-node.sh).

    python3 bench/node_time.py [--gpu] [--tag TEXT] -- COMMAND [ARG...]

Runs COMMAND once and prints one JSON line on stdout: wall seconds, the
CPU time of COMMAND and everything it started (getrusage of the children),
CPU busy = that CPU time / wall / the CPUs this process may use, and with
--gpu the mean GPU utilisation that `nvidia-smi -lms 100` sampled while it
ran (null when nvidia-smi is missing or gave no samples). COMMAND's stdout
goes to stderr, so the JSON line is the only thing on stdout.

Also a module: node_torch.py uses GpuSampler and n_cpus().
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time


def n_cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class GpuSampler:
    """nvidia-smi --query-gpu=utilization.gpu -lms 100 in the background;
    mean() is the mean over all samples and GPUs (None without samples)."""

    def __init__(self, enabled=True, period_ms=100):
        self.samples = []
        self.proc = None
        self.thread = None
        if not enabled or shutil.which("nvidia-smi") is None:
            return
        try:
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", str(period_ms)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self.proc = None
            return
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                self.samples.append(float(line.strip()))
            except ValueError:
                pass

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.thread.join(timeout=5)
        return self.mean()

    def mean(self):
        return round(sum(self.samples) / len(self.samples), 1) if self.samples else None


def main(argv):
    gpu = False
    tag = None
    while argv and argv[0] != "--":
        a = argv.pop(0)
        if a == "--gpu":
            gpu = True
        elif a == "--tag":
            tag = argv.pop(0)
        else:
            sys.exit(f"node_time.py: unknown option {a}")
    if not argv or len(argv) < 2:
        sys.exit("usage: node_time.py [--gpu] [--tag TEXT] -- COMMAND [ARG...]")
    cmd = argv[1:]
    sampler = GpuSampler(gpu)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        rc = subprocess.call(cmd, stdout=sys.stderr)
    except OSError as e:
        print(f"node_time.py: {cmd[0]}: {e.strerror}", file=sys.stderr)
        rc = 127
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    gpu_busy = sampler.stop()
    user = r1.ru_utime - r0.ru_utime
    sys_ = r1.ru_stime - r0.ru_stime
    cores = n_cpus()
    rec = {"tag": tag, "rc": rc, "wall_s": round(wall, 3), "cpu_user_s": round(user, 2),
           "cpu_sys_s": round(sys_, 2), "cores": cores,
           "cpu_busy_pct": round(100.0 * (user + sys_) / wall / cores, 1) if wall > 0 else None,
           "gpu_busy_pct": gpu_busy}
    print(json.dumps(rec), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

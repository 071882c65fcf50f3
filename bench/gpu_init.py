#!/usr/bin/env python3
"""Where a process's GPU start-up goes: times, through the CUDA driver API
directly (ctypes, no PyTorch), cuInit, retaining the primary context, and
loading whisper-stem's emitted PTX modules (from --dump-ptx), each module
separately and all of them again; and the whole `whisper-stem --check`-free
start-up is in `--json`'s timings_ms.init.

    whisper-stem --dump-ptx DIR [-m model.gguf] && python3 bench/gpu_init.py DIR
"""
import ctypes
import glob
import os
import sys
import time

d = sys.argv[1]
cu = ctypes.CDLL(os.environ.get("WHISPER_STEM_LIBCUDA", "libcuda.so.1"))


def ok(r, what):
    if r != 0:
        raise SystemExit(f"{what}: CUresult {r}")


t = time.perf_counter()
ok(cu.cuInit(0), "cuInit")
t_init = time.perf_counter() - t
dev = ctypes.c_int()
ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
t = time.perf_counter()
ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
t_ctx = time.perf_counter() - t
rows = []
for rep in range(2):
    for f in sorted(glob.glob(os.path.join(d, "*.ptx"))):
        src = open(f, "rb").read() + b"\0"
        mod = ctypes.c_void_p()
        t = time.perf_counter()
        ok(cu.cuModuleLoadData(ctypes.byref(mod), src), f"cuModuleLoadData {f}")
        rows.append((rep, os.path.basename(f), time.perf_counter() - t))
        cu.cuModuleUnload(mod)
print(f"cuInit {1e3 * t_init:.1f} ms; primary context {1e3 * t_ctx:.1f} ms")
for rep, name, s in rows:
    print(f"load {'first' if rep == 0 else 'again'} {name}: {1e3 * s:.1f} ms")
print(f"modules, first load total {1e3 * sum(s for r, _, s in rows if r == 0):.1f} ms; "
      f"again {1e3 * sum(s for r, _, s in rows if r == 1):.1f} ms")

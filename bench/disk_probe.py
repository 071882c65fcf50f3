#!/usr/bin/env python3
"""disk_probe.py DIR [FILES] [MB] - what a directory's file system takes: FILES files of MB
each written by 16 threads (a) each fsynced, renamed into place and its directory fsynced,
(b) the same through an unnamed file (O_TMPFILE, linked into place), (c) the same with the
link under one process-wide lock, (d) written and renamed, then one syncfs for all. Prints files/s and
GB/s of each; the gap is what grouping the flushes could win."""
import ctypes
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

d = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
mb = float(sys.argv[3]) if len(sys.argv) > 3 else 1.15
data = os.urandom(int(mb * 1e6))
os.makedirs(d, exist_ok=True)
dfd = os.open(d, os.O_RDONLY)
LIBC = ctypes.CDLL(None, use_errno=True)


LOCK = threading.Lock()
LOCKED = [False]


def one_tmpfile(i):
    """whisper-stem's way: an unnamed file (O_TMPFILE), fsynced, linked into place (under
    one process-wide lock when LOCKED), the directory fsynced"""
    dst = os.path.join(d, f"f{i}.npy")
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    # linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD, dst, AT_SYMLINK_FOLLOW); os.link calls link()
    if LOCKED[0]:
        LOCK.acquire()
    rc = LIBC.linkat(-100, f"/proc/self/fd/{fd}".encode(), -100, dst.encode(), 0x400)
    if LOCKED[0]:
        LOCK.release()
    if rc:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    os.close(fd)
    os.fsync(dfd)


def one(i, durable):
    tmp, dst = os.path.join(d, f".t{i}"), os.path.join(d, f"f{i}.npy")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, data)
    if durable:
        os.fsync(fd)
    os.close(fd)
    os.rename(tmp, dst)
    if durable:
        os.fsync(dfd)


for mode in ("fsync each", "O_TMPFILE + fsync each", "O_TMPFILE + fsync each, link under a lock", "one syncfs"):
    LOCKED[0] = "lock" in mode
    if mode.startswith("O_TMPFILE"):
        try:
            one_tmpfile("probe")
        except OSError as e:
            print(f"{mode}: not here ({e.strerror})")
            continue
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.sync()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as ex:
        if mode.startswith("O_TMPFILE"):
            list(ex.map(one_tmpfile, range(n)))
        else:
            list(ex.map(lambda i: one(i, mode == "fsync each"), range(n)))
    if mode == "one syncfs":
        os.sync()
    t = time.perf_counter() - t0
    print(f"{mode}: {n} files of {mb} MB in {t:.2f} s: {n / t:.0f} files/s, {n * mb / 1e3 / t:.2f} GB/s")

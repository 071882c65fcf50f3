#!/usr/bin/python3
"""tar_read.py - what other readers see in a shard written by src/cli/tar.c.

    tar_read.py SHARD                 every member, read with Python's tarfile
    tar_read.py --first-header SHARD  the first member's header only (stream
                                      mode: the data need not be there)
    tar_read.py --webdataset SHARD    the samples webdataset yields (exit 3 when
                                      webdataset is not installed)

prints one JSON object on stdout:
    {"members": [{"name": str (U+FFFD for bytes that are not UTF-8),
                  "name_hex": hex of the name's bytes,
                  "size": int, "sha256": hex, "type": "file" | "other",
                  "mtime": int, "mode": int, "uid": int, "gid": int,
                  "uname": str, "gname": str, "pax": [record keys],
                  "npy": {"shape": [...], "dtype": str, "sha256": hex of the
                          array's bytes}   (members ending in ".npy" only)}]}
    {"first": {...the same fields but sha256 and npy...}}
    {"samples": [{"key": str, "url": str, "parts": {ext: sha256}}]}

Used by tests/test_tar.c (run with /usr/bin/python3). Only the standard
library, numpy for .npy members, and webdataset for --webdataset. tarfile
checks each header's checksum and each pax record's length, and fails
(exit 1, a traceback on stderr) on a malformed shard.
"""
import hashlib
import io
import json
import sys
import tarfile


def header_fields(ti):
    raw = ti.name.encode("utf-8", "surrogateescape")
    return {
        "name": raw.decode("utf-8", "replace"),  # for reading; name_hex is exact
        "name_hex": raw.hex(),
        "size": ti.size,
        "type": "file" if ti.isreg() else "other",
        "mtime": ti.mtime,
        "mode": ti.mode,
        "uid": ti.uid,
        "gid": ti.gid,
        "uname": ti.uname,
        "gname": ti.gname,
        "pax": sorted(ti.pax_headers.keys()),
    }


def npy_fields(data):
    import numpy as np

    arr = np.load(io.BytesIO(data), allow_pickle=False)
    return {
        "shape": list(arr.shape),
        "dtype": arr.dtype.str,
        "sha256": hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest(),
    }


def members(path):
    out = []
    with tarfile.open(path, "r:", encoding="utf-8", errors="surrogateescape") as tf:
        for ti in tf:
            m = header_fields(ti)
            if ti.isreg():
                data = tf.extractfile(ti).read()
                if len(data) != ti.size:
                    raise SystemExit(f"{ti.name}: read {len(data)} of {ti.size} bytes")
                m["sha256"] = hashlib.sha256(data).hexdigest()
                if ti.name.endswith(".npy"):
                    m["npy"] = npy_fields(data)
            out.append(m)
    return {"members": out}


def first_header(path):
    with open(path, "rb") as f:
        tf = tarfile.open(fileobj=f, mode="r|", encoding="utf-8", errors="surrogateescape")
        ti = tf.next()
        return {"first": header_fields(ti) if ti else None}


def webdataset_samples(path):
    try:
        import webdataset as wds
    except ImportError:
        sys.exit(3)
    try:
        ds = wds.WebDataset(path, shardshuffle=False)
    except TypeError:  # versions before the shardshuffle argument
        ds = wds.WebDataset(path)
    samples = []
    for s in ds:
        parts = {
            k: hashlib.sha256(v).hexdigest()
            for k, v in s.items()
            if not k.startswith("__") and isinstance(v, (bytes, bytearray))
        }
        samples.append({"key": s["__key__"], "url": str(s.get("__url__", "")), "parts": parts})
    return {"samples": samples}


def main(argv):
    if len(argv) == 2:
        result = members(argv[1])
    elif len(argv) == 3 and argv[1] == "--first-header":
        result = first_header(argv[2])
    elif len(argv) == 3 and argv[1] == "--webdataset":
        result = webdataset_samples(argv[2])
    else:
        sys.stderr.write(__doc__)
        return 2
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""wheel.py BUNDLE OUTDIR - the Python package as a self-contained wheel (make wheel).

BUNDLE is scripts/bundle.sh's tree of libwhisper-stem.so.0 alone: the library (RUNPATH
$ORIGIN/lib), lib/ (every shared library it needs that is not glibc's, RUNPATH $ORIGIN) and
licenses/ (the Debian copyright files of those libraries, the licence texts, SOURCES.txt).
The wheel holds python/whisper_stem/*.py and that tree inside the package:

    whisper_stem/libwhisper-stem.so.0     found first by _lib.py ("a copy inside the package")
    whisper_stem/lib/*.so*                its dependencies
    whisper_stem/licenses/...             what redistributing them requires

Tag: py3-none-linux_<machine>: pure Python over ctypes (any CPython >= 3.9 with numpy),
binaries for this machine's architecture and a glibc at least as new as the build's (the
bundle's rule). Written with the standard library alone (zipfile, hashlib): no
setuptools, no network. Prints the wheel's path.
"""

import base64
import hashlib
import os
import platform
import re
import sys
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def version():
    with open(os.path.join(ROOT, "python", "whisper_stem", "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"', f.read(), re.M)
    if not m:
        sys.exit("wheel.py: no __version__ in python/whisper_stem/__init__.py")
    return m.group(1)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: wheel.py BUNDLE OUTDIR")
    bundle, outdir = sys.argv[1], sys.argv[2]
    lib = os.path.join(bundle, "libwhisper-stem.so.0")
    if not os.path.isfile(lib):
        sys.exit("wheel.py: %s missing (scripts/bundle.sh makes it)" % lib)
    ver = version()
    tag = "py3-none-linux_%s" % platform.machine()
    name = "whisper_stem-%s-%s.whl" % (ver, tag)
    dist = "whisper_stem-%s.dist-info" % ver

    files = []  # (archive name, source path or bytes, executable)
    pkg = os.path.join(ROOT, "python", "whisper_stem")
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py") and f != "_config.py":
            files.append(("whisper_stem/" + f, os.path.join(pkg, f), False))
    files.append(("whisper_stem/libwhisper-stem.so.0", lib, True))
    for sub in ("lib", "licenses"):
        top = os.path.join(bundle, sub)
        for d, _, names in sorted(os.walk(top)):
            for f in sorted(names):
                p = os.path.join(d, f)
                files.append(("whisper_stem/%s/%s" % (sub, os.path.relpath(p, top)), p, sub == "lib"))

    with open(os.path.join(ROOT, "python", "README.md")) as f:
        readme = f.read()
    meta = ("Metadata-Version: 2.1\nName: whisper-stem\nVersion: %s\n"
            "Summary: Whisper's audio frontend (log-Mel, conv stem) over libwhisper-stem, NumPy in and out\n"
            "License: MIT\nRequires-Python: >=3.9\nRequires-Dist: numpy\n"
            "Classifier: Programming Language :: Python :: 3\n"
            "Classifier: Operating System :: POSIX :: Linux\n"
            "Description-Content-Type: text/markdown\n\n%s" % (ver, readme))
    wheel = ("Wheel-Version: 1.0\nGenerator: whisper-stem scripts/wheel.py\nRoot-Is-Purelib: false\n"
             "Tag: %s\n" % tag)
    files.append((dist + "/METADATA", meta.encode(), False))
    files.append((dist + "/WHEEL", wheel.encode(), False))

    os.makedirs(outdir, exist_ok=True)
    out = os.path.join(outdir, name)
    tmp = out + ".tmp"
    record = []
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, src, exe in files:
            data = src if isinstance(src, bytes) else open(src, "rb").read()
            info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if exe else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arc, h, len(data)))
        record.append(dist + "/RECORD,,")
        info = zipfile.ZipInfo(dist + "/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        z.writestr(info, "\n".join(record) + "\n")
    os.replace(tmp, out)
    print(out)


if __name__ == "__main__":
    main()

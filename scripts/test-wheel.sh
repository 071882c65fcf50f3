#!/bin/sh
# test-wheel.sh BUILD - the wheel (make wheel) tested as a user installs it: a fresh venv
# made from the python3 on PATH (WHEEL_PYTHON to name another), `pip install --no-index`
# of BUILD/dist/whisper_stem-*.whl into it, then the Python test suite run against that
# installed copy: the tests copied out of the tree (so that python/whisper_stem is not on
# the path), PYTHONPATH and WHISPER_STEM_LIB unset, so the package loads the library it
# carries (python/tests/test_whisper_stem.py, test_installed_copy_loads_its_own_library).
#
# numpy: nothing is fetched. The venv sees the system's site packages; a Python whose
# own has no numpy (pyenv's, say) of the same minor version as Debian's python3 gets
# Debian's python3-numpy through a .pth file. Failing both, the test stops with a line
# saying so (exit 1).
set -eu
BUILD=$(cd "${1:?usage: test-wheel.sh BUILD}" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${WHEEL_PYTHON:-$(command -v python3)}
whl=$(ls "$BUILD"/dist/whisper_stem-*.whl)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" -m venv --system-site-packages "$tmp/venv"
V=$tmp/venv/bin/python
if ! "$V" -c "import numpy" 2>/dev/null; then
    sys_py=/usr/bin/python3
    mine=$("$V" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    theirs=$("$sys_py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
    if [ "$mine" = "$theirs" ] && "$sys_py" -c "import numpy" 2>/dev/null; then
        site=$("$V" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
        # numpy alone from Debian's tree would drag the rest of it in; a directory with a
        # link to it does not
        np_dir=$("$sys_py" -c 'import numpy, os; print(os.path.dirname(numpy.__file__))')
        mkdir -p "$tmp/sysnumpy"
        for d in "$np_dir" "$np_dir"-*.*-info; do # the package and its metadata (pip reads it)
            [ -e "$d" ] && ln -s "$d" "$tmp/sysnumpy/"
        done
        echo "$tmp/sysnumpy" >"$site/system-numpy.pth"
    else
        echo "test-wheel: $PY ($mine) has no numpy and /usr/bin/python3 ($theirs) cannot lend it one; install numpy for it" >&2
        exit 1
    fi
fi
"$tmp/venv/bin/pip" install -q --no-index "$whl"
mkdir -p "$tmp/t"
cp -r "$ROOT/python/tests" "$tmp/t/tests"
rm -rf "$tmp/t/tests/__pycache__"
echo "test-wheel: $whl in a venv of $PY ($("$V" --version 2>&1))"
cd "$tmp"
env -u PYTHONPATH -u WHISPER_STEM_LIB WS_ROOT="$ROOT" WS_BUILD="$BUILD" WS_EXPECT_INSTALLED="$tmp/venv" \
    PYTHONDONTWRITEBYTECODE=1 "$V" -m unittest discover -s t/tests -t t -v

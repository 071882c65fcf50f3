#!/bin/sh
# bundle.sh BUILD DEST - a relocatable copy of the built programs for a
# machine without our build dependencies (a GPU node): DEST/ holds
# whisper-stem, test_runner, the ws-* tools and bench-* benchmarks, and
# DEST/lib every shared library they need that is not part of glibc, plus
# libopenblas.so.0 and its dependencies (the CPU conv opens it with dlopen).
# RUNPATH is $ORIGIN/lib on the programs and $ORIGIN on the libraries.
# Also writes DEST.tar.xz (the same tree, ~1/4 of the size: what travels to
# a GPU node, where scripts/gpu-node.sh unpacks it).
# Called by `make bundle`; needs patchelf (apt-get install patchelf) and xz.
set -eu
BUILD=${1:?usage: bundle.sh BUILD DEST}
DEST=${2:?usage: bundle.sh BUILD DEST}
command -v patchelf >/dev/null || { echo "bundle.sh: patchelf not found (apt-get install patchelf)" >&2; exit 1; }

rm -rf "$DEST"
mkdir -p "$DEST/lib"
progs=""
for f in "$BUILD"/whisper-stem "$BUILD"/test_runner "$BUILD"/ws-* "$BUILD"/bench-*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    cp "$f" "$DEST/"
    progs="$progs $DEST/$(basename "$f")"
done

# glibc's own libraries stay with the target system (it must be glibc >= ours)
is_glibc() {
    case "$1" in
        linux-vdso.so.*|ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|libutil.so.*) return 0 ;;
    esac
    return 1
}

copy_deps() { # copy_deps FILE: the non-glibc libraries FILE needs, recursively (ldd resolves all)
    ldd "$1" 2>/dev/null | awk '/=> \//{print $1, $3}' | while read -r name path; do
        is_glibc "$name" && continue
        [ -f "$DEST/lib/$name" ] && continue
        cp -L "$path" "$DEST/lib/$name"
    done
}

for p in $progs; do copy_deps "$p"; done
blas=$(ldconfig -p | awk '/libopenblas\.so\.0 .*x86-64/{print $NF; exit}')
if [ -n "$blas" ]; then
    cp -L "$blas" "$DEST/lib/libopenblas.so.0"
    copy_deps "$blas"
else
    echo "bundle.sh: libopenblas.so.0 not found; the bundle's CPU conv will use its built-in loops" >&2
fi

for p in $progs; do patchelf --set-rpath '$ORIGIN/lib' "$p"; done
for l in "$DEST"/lib/*; do chmod u+w "$l"; patchelf --set-rpath '$ORIGIN' "$l"; done
tar -C "$(dirname "$DEST")" -cf - "$(basename "$DEST")" | xz -T0 -6 >"$DEST.tar.xz.tmp"
mv "$DEST.tar.xz.tmp" "$DEST.tar.xz"
echo "bundle.sh: $(ls "$DEST" | wc -l) entries, $(ls "$DEST/lib" | wc -l) libraries, $(du -sh "$DEST" | cut -f1) in $DEST, $(du -sh "$DEST.tar.xz" | cut -f1) packed"

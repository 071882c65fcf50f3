#!/bin/sh
# bundle.sh BUILD DEST - a relocatable copy of the built programs for a
# machine without our build dependencies (a GPU node): DEST/ holds
# whisper-stem, test_runner, the ws-* tools and bench-* benchmarks,
# libwhisper-stem.so.0 (the library the Python package loads), and
# DEST/lib every shared library they need that is not part of glibc, plus
# RUNPATH is $ORIGIN/lib on the programs and $ORIGIN on the libraries.
# DEST/licenses holds what redistributing the bundle requires
# (THIRD-PARTY-NOTICES.md says why): LICENSE, THIRD-PARTY-NOTICES.md, for
# each library in DEST/lib the Debian copyright file of its package as
# <package>.copyright, the licence texts those files refer to
# (common-licenses/), and SOURCES.txt (this repository's commit; each
# library's binary and source package with versions). A library whose
# copyright file cannot be found stops the bundle: no bundle without it.
# Also writes DEST.tar.xz (the same tree, ~1/4 of the size: what travels to
# a GPU node, where scripts/gpu-node.sh unpacks it).
# Called by `make bundle`; needs patchelf (apt-get install patchelf), xz and
# dpkg (the licence files come from the Debian packages of the libraries).
set -eu
BUILD=${1:?usage: bundle.sh BUILD DEST}
DEST=${2:?usage: bundle.sh BUILD DEST}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
command -v patchelf >/dev/null || { echo "bundle.sh: patchelf not found (apt-get install patchelf)" >&2; exit 1; }
command -v dpkg-query >/dev/null || { echo "bundle.sh: dpkg-query not found: the bundle's licence files are the Debian copyright files of its libraries" >&2; exit 1; }

# A failed run leaves neither a partial DEST nor an older DEST.tar.xz behind.
rm -rf "$DEST" "$DEST.tar.xz"
mkdir -p "$DEST/lib"
srcs=$(mktemp)
trap 'rm -f "$srcs"' EXIT
die() { echo "bundle.sh: $*" >&2; rm -rf "$DEST"; exit 1; }

progs=""
for f in "$BUILD"/whisper-stem "$BUILD"/test_runner "$BUILD"/ws-* "$BUILD"/bench-*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    cp "$f" "$DEST/"
    progs="$progs $DEST/$(basename "$f")"
done
# the shared library, for the Python package on the node (WHISPER_STEM_LIB=DEST/libwhisper-stem.so.0)
if [ -f "$BUILD/libwhisper-stem.so.0" ]; then
    cp -L "$BUILD/libwhisper-stem.so.0" "$DEST/"
    progs="$progs $DEST/libwhisper-stem.so.0"
fi

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
        echo "$name $path" >>"$srcs"
    done
}

for p in $progs; do copy_deps "$p"; done

# --- licences ----------------------------------------------------------------
deb_pkg() { # deb_pkg PATH: the Debian package that installed PATH (as the file or a
            # link to it; /lib and /usr/lib are one directory on a merged-/usr system)
    real=$(readlink -f "$1")
    for c in "$real" "${real#/usr}" "$1" "${1#/usr}"; do
        dpkg-query -S "$c" 2>/dev/null | awk -v c="$c" '
            /^diversion by / { next }
            { i = index($0, ": "); if (i == 0 || substr($0, i + 2) != c) next
              split(substr($0, 1, i - 1), p, ", "); sub(/:.*/, "", p[1]); print p[1]; found = 1; exit }
            END { exit !found }' && return 0
    done
    return 1
}

L=$DEST/licenses
mkdir -p "$L/common-licenses"
for f in LICENSE THIRD-PARTY-NOTICES.md; do
    [ -f "$ROOT/$f" ] || die "$ROOT/$f missing"
    cp "$ROOT/$f" "$L/"
done
rev=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null) || rev="unknown (not a git checkout)"
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    rev="$rev, with uncommitted changes (the corresponding source is that working tree)"
fi
{
    echo "Corresponding source of this bundle (THIRD-PARTY-NOTICES.md, \"Redistributing the bundle\")."
    echo "whisper-stem: commit $rev"
    echo "Libraries in lib/, each from a Debian binary package built from the source package named"
    echo "(apt-get source SOURCE=VERSION, or https://snapshot.debian.org/package/SOURCE/VERSION/):"
    echo
    printf '%-24s %-24s %-28s %s\n' LIBRARY PACKAGE VERSION "SOURCE VERSION"
} >"$L/SOURCES.txt"
for l in "$DEST"/lib/*; do
    name=$(basename "$l")
    path=$(awk -v n="$name" '$1 == n { print $2; exit }' "$srcs")
    [ -n "$path" ] || die "lib/$name: no record of where it was copied from"
    pkg=$(deb_pkg "$path") || die "lib/$name ($path): no Debian package owns it (dpkg -S), so its licence is unknown; a bundle does not ship without every library's copyright file"
    copyright=/usr/share/doc/$pkg/copyright
    [ -f "$copyright" ] || die "lib/$name ($path) is from package $pkg, but $copyright is missing (apt-get install --reinstall $pkg; check path-exclude in /etc/dpkg/dpkg.cfg.d/); a bundle does not ship without every library's copyright file"
    cp -L "$copyright" "$L/$pkg.copyright"
    dpkg-query -W -f='${Package} ${Version} ${source:Package} ${source:Version}\n' "$pkg" |
        awk -v n="$name" '{ printf "%-24s %-24s %-28s %s %s\n", n, $1, $2, $3, $4; exit }' >>"$L/SOURCES.txt"
done
# The full texts the copyright files refer to (/usr/share/common-licenses/GPL-2, ...),
# and always GPL-2, GPL-3 and LGPL-2.1, which THIRD-PARTY-NOTICES.md relies on.
texts=$(cat "$L"/*.copyright | grep -o '/usr/share/common-licenses/[A-Za-z0-9._+-]*' |
        sed -e 's|.*/||' -e 's/\.$//' | grep -v '^$' || true)
for t in $(printf '%s\n' GPL-2 GPL-3 LGPL-2.1 $texts | sort -u); do
    [ -f "/usr/share/common-licenses/$t" ] || die "/usr/share/common-licenses/$t (referred to by a bundled library's copyright file) is missing"
    cp -L "/usr/share/common-licenses/$t" "$L/common-licenses/$t"
done

for p in $progs; do patchelf --set-rpath '$ORIGIN/lib' "$p"; done
for l in "$DEST"/lib/*; do chmod u+w "$l"; patchelf --set-rpath '$ORIGIN' "$l"; done
tar -C "$(dirname "$DEST")" -cf - "$(basename "$DEST")" | xz -T0 -6 >"$DEST.tar.xz.tmp"
mv "$DEST.tar.xz.tmp" "$DEST.tar.xz"
echo "bundle.sh: $(ls "$DEST" | wc -l) entries, $(ls "$DEST/lib" | wc -l) libraries, $(ls "$L"/*.copyright | wc -l) copyright files, $(du -sh "$DEST" | cut -f1) in $DEST, $(du -sh "$DEST.tar.xz" | cut -f1) packed"

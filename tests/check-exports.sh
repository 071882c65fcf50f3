#!/bin/sh
# check-exports.sh BUILD - what the libraries in BUILD make visible to a program.
#   1. The shared library exports exactly the functions include/*.h declares with WS_API:
#      any other defined dynamic symbol fails, and so does a declared one that is missing.
#   2. Every global symbol of the static archive carries the project's prefix (ws_,
#      whisper_stem_, wscu_, WS), so that linking it into another program cannot clash.
#      Weak nvtx* symbols are let through: NVTX's header-only library (compiled in when
#      found) defines them weak on purpose, the same code in every user, merged at link.
#      Under SAN=1, AddressSanitizer adds __odr_asan.NAME beside each global NAME (its
#      one-definition-rule indicator): let through too.
# Run by `make test`.
set -eu
build=${1:?usage: check-exports.sh BUILD}
cd "$(dirname "$0")/.."
so=$(ls "$build"/libwhisper-stem.so.*.*.* | head -n 1)
ar="$build/libwhisper-stem.a"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

# Declared: the name before the first '(' of each WS_API declaration, comments and
# preprocessor lines removed, the headers flattened to one line.
grep -hv '^[[:space:]]*#' include/*.h |
    perl -0777 -pe 's{/\*.*?\*/}{}gs; s{//[^\n]*}{}g; s/\s+/ /g' |
    grep -o 'WS_API [^;(]*(' | sed 's/[[:space:]]*($//; s/.*[^A-Za-z0-9_]//' | sort -u >"$t/declared"
nm -D --defined-only "$so" | awk 'NF >= 3 { print $3 }' | sort -u >"$t/exported"

bad=0
extra=$(comm -13 "$t/declared" "$t/exported")
missing=$(comm -23 "$t/declared" "$t/exported")
if [ -n "$extra" ]; then
    echo "✗ $so exports symbols that include/*.h does not declare with WS_API:" >&2
    echo "$extra" | sed 's/^/    /' >&2
    bad=1
fi
if [ -n "$missing" ]; then
    echo "✗ $so lacks functions that include/*.h declares:" >&2
    echo "$missing" | sed 's/^/    /' >&2
    bad=1
fi
[ "$(wc -l <"$t/declared")" -ge 30 ] || { echo "✗ only $(wc -l <"$t/declared") WS_API declarations found in include/*.h" >&2; bad=1; }

nm -g --defined-only "$ar" | awk 'NF == 3 { print $2, $3 }' | sort -u |
    grep -Ev ' (ws_|whisper_stem_|wscu_|WS)' | grep -Ev '^[WVwv] (nvtx|InitializeInjectionNvtx)' | grep -v ' __odr_asan\.' \
    >"$t/unprefixed" || true
if [ -s "$t/unprefixed" ]; then
    echo "✗ $ar has global symbols without the ws_ / whisper_stem_ / wscu_ / WS prefix:" >&2
    sed 's/^/    /' "$t/unprefixed" >&2
    bad=1
fi
[ $bad = 0 ] && echo "✓ $(basename "$so") exports the $(wc -l <"$t/exported") functions include/*.h declares, nothing else; $(basename "$ar")'s globals are all prefixed"
exit $bad

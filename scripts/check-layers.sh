#!/bin/sh
# check-layers.sh - the include graph of src/ points one way (README "Layout"):
#   cli -> whisper -> {conv, cuda, mel, audio, gguf};  cuda -> conv;  convert -> {gguf, whisper}
#   api (include/whisper_stem.h) -> {whisper, conv, cuda, mel, audio, gguf}; nothing includes api
# and the shared base (src/*.h: common, output, signals, strmap, trace) includes no layer;
# the PTX emitters (cuda/ptx/: ptx_*, gelu_ptx.*) include
# only one another, common.h and ws_conv.h.
# Prints each include that points the wrong way; exit 1 if there is one. Run by `make test`.
set -eu
cd "$(dirname "$0")/../src"
# allowed[layer] = the layers its files may include (besides itself and the base)
allowed() {
    case $1 in
    api) echo "whisper conv cuda mel audio gguf" ;;
    cli) echo "whisper conv cuda mel audio gguf convert" ;;
    whisper) echo "conv cuda mel audio gguf" ;;
    convert) echo "gguf whisper" ;;
    cuda) echo "conv" ;;
    conv|mel|audio|gguf) echo "" ;;
    base) echo "" ;;
    esac
}
bad=0
for f in $(find . -name '*.[ch]' | sed 's|^\./||' | sort); do
    case $f in */*) layer=${f%%/*} ;; *) layer=base ;; esac
    ok=" $layer $(allowed "$layer") "
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        if [ -f "$(dirname "$f")/$inc" ]; then   # beside the file (or ../ from it)
            rel=$(realpath -m --relative-to=. "$(dirname "$f")/$inc")
        else                                     # rooted at src/ (-Isrc), or include/
            rel=$inc
        fi
        case $rel in
        ../*) echo "src/$f includes \"$inc\": outside src/" >&2; bad=1; continue ;;
        */*) to=${rel%%/*} ;;
        *) to=base ;;
        esac
        [ "$to" = "$layer" ] && continue
        [ "$to" = base ] && [ "$layer" != base ] && continue
        case "$ok" in *" $to "*) ;; *)
            echo "src/$f includes \"$inc\": $layer may not include $to" >&2; bad=1 ;;
        esac
    done
done
# The PTX emitters are pure text (ARCHITECTURE: cuda/ptx): they include one another, common.h
# and ws_conv.h only, never the runtime (driver.h, gpu*.h).
is_emitter() {
    case $1 in
    cuda/ptx/*.[ch]) return 0 ;;
    esac
    return 1
}
for f in $(find cuda -name '*.[ch]' | sort); do
    is_emitter "$f" || continue
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        case $inc in common.h | ws_conv.h) continue ;; esac
        is_emitter "cuda/ptx/$inc" && [ -f "cuda/ptx/$inc" ] && continue
        echo "src/$f includes \"$inc\": the PTX emitters include only one another, common.h and ws_conv.h" >&2
        bad=1
    done
done
[ $bad = 0 ] && echo "✓ include layers point one way, the PTX emitters are pure text (scripts/check-layers.sh)"
exit $bad

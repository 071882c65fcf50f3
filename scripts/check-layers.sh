#!/bin/sh
# check-layers.sh - the include graph of src/ points one way (README "Layout"):
#   cli -> whisper -> {conv, cuda, mel, audio, gguf};  cuda -> conv;  convert -> {gguf, whisper}
# and the shared base (src/*.h: common, output, signals, strmap, trace) includes no layer.
# Prints each include that points the wrong way; exit 1 if there is one. Run by `make test`.
set -eu
cd "$(dirname "$0")/../src"
# allowed[layer] = the layers its files may include (besides itself and the base)
allowed() {
    case $1 in
    cli) echo "whisper conv cuda mel audio gguf convert" ;;
    whisper) echo "conv cuda mel audio gguf" ;;
    convert) echo "gguf whisper" ;;
    cuda) echo "conv" ;;
    conv|mel|audio|gguf) echo "" ;;
    base) echo "" ;;
    esac
}
bad=0
for f in *.c *.h */*.c */*.h; do
    [ -f "$f" ] || continue
    case $f in */*) layer=${f%%/*} ;; *) layer=base ;; esac
    ok=" $layer $(allowed "$layer") "
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        case $inc in
        */*) to=${inc%%/*} ;;
        *) [ -f "$(dirname "$f")/$inc" ] && continue   # the file's own directory
           to=base ;;
        esac
        [ "$to" = base ] && [ "$layer" != base ] && continue
        case "$ok" in *" $to "*) ;; *)
            echo "src/$f includes \"$inc\": $layer may not include $to" >&2; bad=1 ;;
        esac
    done
done
[ $bad = 0 ] && echo "✓ include layers point one way (scripts/check-layers.sh)"
exit $bad

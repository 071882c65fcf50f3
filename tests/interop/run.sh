#!/bin/sh
# run.sh - GGUF interop: files written by ws-mkmodel and ws-convert are read by
# an independent GGUF reader, @huggingface/gguf (version pinned in
# package.json / package-lock.json), through check.mjs.
#
#   tests/interop/run.sh [BUILD_DIR]     (default: build)
#
# Needs node >= 20 (the package's "engines"; checked with node 20.20, npm 11.19)
# and npm, and the npm registry for `npm ci`. Debian 12's own nodejs is 18.20,
# below that: take node 20 from NodeSource (package nodejs, with npm in it) or
# Debian 13 (apt-get install nodejs npm).
# Prints one line per file; exits non-zero on the first mismatch.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../../build}" && pwd)
cd "$here"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

"$build/ws-mkmodel" --size tiny --type f16 --pos -o "$tmp/tiny.gguf"
node check.mjs "$tmp/tiny.gguf" --n-mels 80 --d 384 --weights f16 --biases f16 --pos 1500:f32

"$build/ws-mkmodel" --size large-v3 --type bf16 -o "$tmp/large-v3.gguf"
node check.mjs "$tmp/large-v3.gguf" --n-mels 128 --d 1280 --weights bf16 --biases bf16

node make-safetensors.mjs "$tmp/model.safetensors"
"$build/ws-convert" "$tmp/model.safetensors" -o "$tmp/converted.gguf"
node check.mjs "$tmp/converted.gguf" --n-mels 4 --d 6 --weights f16 --biases f32 --pos 8:f32 \
    --meta general.name=model --meta whisper.source.format=safetensors \
    --meta whisper.n_mels=4 --meta whisper.d=6 --data-from "$tmp/model.safetensors"

"$build/ws-convert" "$tmp/model.safetensors" -o "$tmp/converted-bf16.gguf" --type bf16
node check.mjs "$tmp/converted-bf16.gguf" --n-mels 4 --d 6 --weights bf16 --biases bf16 \
    --pos 8:bf16

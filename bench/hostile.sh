#!/usr/bin/env bash
# Costs that must stay near-linear, and memory that must stay bounded:
#   - the -O name-clash check over N inputs (a usage error stops the run right
#     after it, so the time is the check's alone);
#   - peak RSS of --mel over long inputs, at 1 and 8 threads.
# Usage: bench/hostile.sh [BUILD_DIR]   (default build; needs GNU time for RSS)
set -euo pipefail
B=${1:-build}
BIN=$(readlink -f "$B/whisper-stem")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"

echo "## -O clash check: N inputs, the clash at the end (s, median of 3)"
for n in 8000 16000 64000; do
    seq 0 $((n - 1)) | sed 's|^|d/f|; s|$|.wav|' > list
    echo other/f$((n - 1)).flac >> list
    ts=()
    for r in 1 2 3; do
        s=$(date +%s.%N)
        "$BIN" --mel -O out $(cat list) 2>/dev/null || true
        e=$(date +%s.%N)
        ts+=("$(echo "$e - $s" | bc)")
    done
    printf '%6d inputs: %s s\n' "$n" "$(printf '%s\n' "${ts[@]}" | sort -n | sed -n 2p)"
done

if [ -x /usr/bin/time ] && [ "${SKIP_RSS:-0}" != 1 ]; then
    echo "## --mel peak RSS: 6 inputs of 2 h (16 kHz, silence with a tone)"
    python3 - <<'PY'
import struct, math
n = 16000 * 7200
with open("long.wav", "wb") as f:
    f.write(b"RIFF" + struct.pack("<I", 36 + 2 * n) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16))
    f.write(b"data" + struct.pack("<I", 2 * n))
    blk = b"".join(struct.pack("<h", int(3000 * math.sin(2 * math.pi * 440 * i / 16000))) for i in range(16000))
    for _ in range(7200):
        f.write(blk)
PY
    for i in 1 2 3 4 5 6; do ln -f long.wav l$i.wav; done
    for th in 1 8; do
        /usr/bin/time -f "threads $th: %M KiB peak RSS, %e s" "$BIN" --mel --threads $th -O rss l?.wav 2>&1 | tail -1
        rm -rf rss
    done
fi

#!/usr/bin/env bash
# corpus.sh - one process over a list vs one process per file (what `xargs` gives), on the
# 200-file corpus of tests/corpus/make-corpus.sh (0.5-3 s each), a random tiny model, the
# CPU. Both runs write the same outputs; each pair runs back to back, REPS times.
#   make && bench/corpus.sh [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3}
B=${BUILD:-build}
BIN=$(realpath "$B/whisper-stem")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
tests/corpus/make-corpus.sh "$T" >/dev/null
"$B"/ws-mkmodel --size tiny -o "$T/m.gguf" >/dev/null
N=$(wc -l < "$T/good.txt")
echo "date: $(date -u +%F)  cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')  cores: $(nproc)  files: $N  reps: $REPS"
printf "| run | one process (--list) s | one per file (xargs -P %d) s | ratio |\n|---|---|---|---|\n" "$(nproc)"
for r in $(seq 1 "$REPS"); do
    rm -rf "$T/a" "$T/b"
    t0=$(date +%s.%N)
    "$B"/whisper-stem -q -m "$T/m.gguf" --device cpu --list "$T/good.txt" --root "$T/audio" -O "$T/a"
    t1=$(date +%s.%N)
    # one process per file, nproc at a time, each its own output name under the same tree
    (cd "$T/audio" && sed "s|^$T/audio/||" "$T/good.txt" | tr '\n' '\0' | \
        xargs -0 -P "$(nproc)" -I{} sh -c 'mkdir -p "$(dirname "$2/$1")" && exec "$0" -q -m "$3" --device cpu --threads 1 "$1" -o "$2/${1%.wav}.npy"' \
        "$BIN" {} "$T/b" "$T/m.gguf")
    t2=$(date +%s.%N)
    a=$(echo "$t1 - $t0" | bc -l); b=$(echo "$t2 - $t1" | bc -l)
    printf "| %d | %.2f | %.2f | %.1fx |\n" "$r" "$a" "$b" "$(echo "$b / $a" | bc -l)"
done
# the same bytes either way
(cd "$T/a" && find . -name '*.npy' | sort | while read -r f; do cmp -s "$f" "$T/b/$f" || { echo "differs: $f" >&2; exit 1; }; done)
echo "outputs identical: $(find "$T/a" -name '*.npy' | wc -l) files"

#!/bin/bash
# parallel.sh - scripts/parallel-shards.sh over the test corpus: 3 shards run by
# GNU parallel on this machine, then the checks of tests/corpus/check.py.
#
#   tests/corpus/parallel.sh [BUILD_DIR]     (default: build; run by make corpus)
#
# Needs GNU parallel, python3 with numpy (scripts/install-deps.sh --test) and the
# built whisper-stem and ws-mkmodel. Steps:
#   1. make-corpus.sh: 200 good WAV files and 6 bad inputs in a list; a random
#      tiny model; a single-file run of each good input as its reference
#   2. parallel-shards.sh -j 3 (206 inputs: shards of 69, 69 and 68): exits 1
#      (some inputs failed); check.py run ... first: the shards covered the list
#      once, outputs equal the references, the bad inputs failed with an error,
#      failed.txt and summary.txt say so
#   3. the same command again: exits 1; every good input "skipped", the bad ones
#      "failed", and no file under OUT changed (check.py snapshot before/after)
#   4. whisper-stem --list OUT/failed.txt: the bad inputs again, each failed
#   5. slurm-array.sh --merge with one shard's manifest empty and another's
#      gone: their inputs are "not reached" and in failed.txt; and over a manifest whose inputs need
#      JSON escapes: failed.txt gives back the list's bytes
#   6. parallel-shards.sh --help exits 0, a missing -l exits 2
set -u
here=$(cd "$(dirname -- "$0")" && pwd)
. "$here/lib.sh"
corpus_init parallel "${1:-}"
trap 'corpus_cleanup $?' EXIT
echo "corpus/parallel: scripts/parallel-shards.sh, 3 shards (work: $work)"
command -v parallel >/dev/null 2>&1 ||
    { echo "✗ corpus/parallel: GNU parallel not found (scripts/install-deps.sh --test)"; exit 1; }
corpus_prepare

shards=3
c=$work/corpus
out=$work/out
run_shards() {
    "$repo/scripts/parallel-shards.sh" -l "$c/list.txt" -r "$c/audio" -o "$out" -m "$model" \
        -j "$shards" --bin "$ws" -- "${STEM_OPTS[@]}" > "$work/$1.log" 2>&1
}

t0=$(date +%s)
run_shards first
corpus_expect_status $? 1 "first run ($(($(date +%s) - t0)) s; some inputs are bad)"
corpus_check run "$c" "$out" "$work/ref" "$shards" first

"$py" "$here/check.py" snapshot "$out" > "$work/before.txt"
t0=$(date +%s)
run_shards again
corpus_expect_status $? 1 "second run ($(($(date +%s) - t0)) s)"
corpus_check run "$c" "$out" "$work/ref" "$shards" again
"$py" "$here/check.py" snapshot "$out" > "$work/after.txt"
if cmp -s "$work/before.txt" "$work/after.txt" && [[ -s $work/before.txt ]]; then
    echo "  ✓ the second run wrote nothing under OUT (outputs' size, mtime and inode unchanged)"
else
    echo "  ✗ the second run changed files under OUT:"
    diff "$work/before.txt" "$work/after.txt" | head -10
    corpus_failed=$((corpus_failed + 1))
fi

"$ws" --list "$out/failed.txt" --root "$c/audio" -O "$work/retry" --manifest "$work/retry.jsonl" \
    -m "$model" "${STEM_OPTS[@]}" -q 2>/dev/null
corpus_expect_status $? 1 "whisper-stem --list OUT/failed.txt"
corpus_check retried "$work/retry.jsonl" "$c"

mkdir "$work/lost"
cp "$out"/manifest-*.jsonl "$work/lost/"
: > "$work/lost/manifest-0.jsonl"
rm "$work/lost/manifest-1.jsonl"
"$repo/scripts/slurm-array.sh" --merge "$work/lost" "$c/list.txt" "$shards" > "$work/lost.log" 2>&1
corpus_expect_status $? 1 "slurm-array.sh --merge with manifest-0.jsonl empty and manifest-1.jsonl gone"
corpus_check lost "$c" "$work/lost" "$shards" 0,1
corpus_check escapes "$repo/scripts/slurm-array.sh" "$work/escapes"

"$repo/scripts/parallel-shards.sh" --help > "$work/help.txt"
corpus_expect_status $? 0 "parallel-shards.sh --help"
"$repo/scripts/parallel-shards.sh" -o "$out" -r "$c/audio" -m "$model" > /dev/null 2>&1
corpus_expect_status $? 2 "parallel-shards.sh without -l"

corpus_done

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
#      "failed", and no file under OUT changed (check.py snapshot before/after);
#      the shard manifests were appended to, the first run's lines kept
#   4. whisper-stem --list OUT/failed.txt: the bad inputs again, each failed
#   5. parallel-shards.sh -l OUT/failed.txt (the retry the summary suggests): its
#      summary and failed.txt count the 6 retried inputs, and manifest.jsonl
#      still holds every input of the whole list
#   6. slurm-array.sh --merge with one shard's manifest empty and another's
#      gone: their inputs are "not reached" and in failed.txt; over a manifest whose inputs need
#      JSON escapes: failed.txt gives back the list's bytes; over manifests whose
#      manifest-0.jsonl ends in half a line (a full disk): that line is warned
#      about and counted, the next file's first line read as it is
#   7. a run after manifest-0.jsonl was left with half a line: the shard's lines
#      start on a line of their own, one unreadable line is counted
#   8. a ROOT and an OUT whose names hold {}, {.} and {#} (GNU parallel's
#      replacement strings): outputs and manifests land under them as named
#   9. parallel-shards.sh --help exits 0, a missing -l exits 2
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
mkdir "$work/prev"
cp "$out"/manifest-*.jsonl "$work/prev/"
t0=$(date +%s)
run_shards again
corpus_expect_status $? 1 "second run ($(($(date +%s) - t0)) s)"
corpus_check run "$c" "$out" "$work/ref" "$shards" again "$work/prev"
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

cp "$out/failed.txt" "$work/retry-list.txt"
"$repo/scripts/parallel-shards.sh" -l "$out/failed.txt" -r "$c/audio" -o "$out" -m "$model" \
    -j "$shards" --bin "$ws" -- "${STEM_OPTS[@]}" > "$work/retry-recipe.log" 2>&1
corpus_expect_status $? 1 "parallel-shards.sh -l OUT/failed.txt"
corpus_check union "$c" "$out" "$work/retry-list.txt"

mkdir "$work/lost"
cp "$work/prev"/manifest-*.jsonl "$work/lost/"
: > "$work/lost/manifest-0.jsonl"
rm "$work/lost/manifest-1.jsonl"
"$repo/scripts/slurm-array.sh" --merge "$work/lost" "$c/list.txt" "$shards" > "$work/lost.log" 2>&1
corpus_expect_status $? 1 "slurm-array.sh --merge with manifest-0.jsonl empty and manifest-1.jsonl gone"
corpus_check lost "$c" "$work/lost" "$shards" 0,1
corpus_check escapes "$repo/scripts/slurm-array.sh" "$work/escapes"
mkdir "$work/partial"
cp "$work/prev"/manifest-*.jsonl "$work/partial/"
corpus_check partial "$c" "$work/partial" "$repo/scripts/slurm-array.sh" "$shards"

# half a line at the end of manifest-0.jsonl, then the same run again
m0=$out/manifest-0.jsonl
truncate -s $(($(stat -c %s "$m0") - 40)) "$m0"
n0=$(($(wc -l < "$m0")))
run_shards cut
corpus_expect_status $? 1 "a run after manifest-0.jsonl was cut inside its last line"
corpus_check cutline "$m0" "$n0" "$out"

# GNU parallel's replacement strings in the paths given to the script
braces_root="$work/root {} {.}"
braces_out="$work/out {} {.} {#}"
mkdir -p "$braces_root/spk01"
: > "$work/braces.txt"
for f in "$c"/audio/spk01/00[1-4].wav "$c/audio/bad/empty.wav"; do
    cp "$f" "$braces_root/spk01/"
    echo "$braces_root/spk01/${f##*/}" >> "$work/braces.txt"
done
ls_before=$(ls "$work")
"$repo/scripts/parallel-shards.sh" -l "$work/braces.txt" -r "$braces_root" -o "$braces_out" \
    -m "$model" -j 2 --bin "$ws" -- "${STEM_OPTS[@]}" > "$work/braces.log" 2>&1
corpus_expect_status $? 1 "parallel-shards.sh with {}, {.} and {#} in ROOT and OUT (one input is bad)"
braces_ok=1
for k in 1 2 3 4; do
    cmp -s "$braces_out/spk01/00$k.npy" "$work/ref/spk01/00$k.npy" || braces_ok=0
done
[[ -s $braces_out/manifest-0.jsonl && -s $braces_out/manifest-1.jsonl ]] || braces_ok=0
[[ $(wc -l < "$braces_out/manifest.jsonl") -eq 5 ]] || braces_ok=0
[[ $(cat "$braces_out/failed.txt") == "$braces_root/spk01/empty.wav" ]] || braces_ok=0
[[ $(ls "$work" | grep -v -x -e "${braces_out##*/}" -e braces.log) == "$ls_before" ]] || braces_ok=0
if ((braces_ok)); then
    echo "  ✓ with {}, {.} and {#} in ROOT and OUT: 4 outputs under OUT equal the references," \
        "manifest-0/1.jsonl there, 5 lines merged, the bad input in failed.txt, nothing else made"
else
    echo "  ✗ with {}, {.} and {#} in ROOT and OUT the run went elsewhere (log: $work/braces.log):"
    ls -la "$work" | sed 's/^/    /'
    corpus_failed=$((corpus_failed + 1))
fi

"$repo/scripts/parallel-shards.sh" --help > "$work/help.txt"
corpus_expect_status $? 0 "parallel-shards.sh --help"
"$repo/scripts/parallel-shards.sh" -o "$out" -r "$c/audio" -m "$model" > /dev/null 2>&1
corpus_expect_status $? 2 "parallel-shards.sh without -l"
# a list of segments or tar shards: the merge keys inputs by path, so the recipe refuses it
printf '%s\t0\t1\n' "$c/audio/spk01/001.wav" > "$work/segments.tsv"
"$repo/scripts/parallel-shards.sh" -l "$work/segments.tsv" -o "$work/seg-out" -r "$c/audio" \
    -m "$model" > /dev/null 2> "$work/segments.err"
corpus_expect_status $? 2 "parallel-shards.sh with a list of segments"

corpus_done

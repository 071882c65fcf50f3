# lib.sh - shared steps of tests/corpus/parallel.sh and slurm.sh (sourced, bash).
#
# corpus_init NAME BUILD   absolute paths of the binaries (ws, mkmodel), a python3
#                          ($py), a work directory ($work, kept when the test fails
#                          or WS_CORPUS_KEEP is set)
# corpus_prepare           $work/corpus (make-corpus.sh), a random tiny model
#                          ($model), and $work/ref: each good input through a
#                          single-file run `whisper-stem -m M in.wav -o x.npy`
# corpus_check ARGS...     check.py ARGS, counting a failed check
# corpus_done              the closing line; the exit status says whether all passed
#
# Every run uses STEM_OPTS (--device cpu: the same bytes on any machine, and
# CI has no GPU).
STEM_OPTS=(--device cpu)
corpus_failed=0

corpus_init() {
    corpus_name=$1
    corpus_t0=$(date +%s)
    local here build
    here=$(cd "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
    repo=$(cd "$here/../.." && pwd)
    build=$(cd "${2:-$repo/build}" && pwd) || exit 1
    ws=$build/whisper-stem
    mkmodel=$build/ws-mkmodel
    for b in "$ws" "$mkmodel"; do
        [[ -x $b ]] || { echo "✗ $corpus_name: $b missing: run make first"; exit 1; }
    done
    py=""
    for p in ${PYTHON:-} python3 /usr/bin/python3; do
        if "$p" -c 'import numpy' >/dev/null 2>&1; then
            py=$p
            break
        fi
    done
    [[ -n $py ]] || { echo "✗ $corpus_name: no python3 with numpy (scripts/install-deps.sh --test)"; exit 1; }
    work=$(mktemp -d "${TMPDIR:-/tmp}/ws-corpus-$corpus_name.XXXXXX") || exit 1
    # the work tree is searched by the jobs, so it must be readable by them
    chmod 755 "$work"
}

# The EXIT trap calls this last: the work directory goes when every check passed.
corpus_cleanup() {
    local rc=$1
    if ((rc == 0)) && [[ -z ${WS_CORPUS_KEEP:-} ]]; then
        rm -rf -- "$work"
    else
        echo "  (work directory kept: $work)"
    fi
}

corpus_prepare() {
    "$repo/tests/corpus/make-corpus.sh" "$work/corpus" | sed 's/^/  /' || exit 1
    model=$work/tiny.gguf
    "$mkmodel" --size tiny -o "$model" >/dev/null || exit 1
    # one run per good input, as many at once as there are CPUs
    local t0 n=0 f running=0 np bad=0
    t0=$(date +%s)
    np=$(nproc 2>/dev/null || echo 1)
    while IFS= read -r f; do
        if ((running >= np)); then
            wait -n || bad=1
            running=$((running - 1))
        fi
        reference "$f" &
        running=$((running + 1))
        n=$((n + 1))
    done < "$work/corpus/good.txt"
    while ((running)); do
        wait -n || bad=1
        running=$((running - 1))
    done
    if ((bad)); then
        echo "✗ $corpus_name: a single-file reference run failed (above)"
        exit 1
    fi
    echo "  references: $n single-file runs in $(($(date +%s) - t0)) s"
}

# reference IN: $work/ref/<IN's path under corpus/audio, without extension>.npy
reference() {
    local rel=${1#"$work/corpus/audio/"}
    if ! mkdir -p "$work/ref/$(dirname -- "$rel")" ||
        ! "$ws" -m "$model" "$1" -o "$work/ref/${rel%.*}.npy" "${STEM_OPTS[@]}" -q; then
        echo "  the single-file run of $1 failed"
        return 1
    fi
}

corpus_check() {
    "$py" "$repo/tests/corpus/check.py" "$@" || corpus_failed=$((corpus_failed + 1))
}

# expect STATUS WHAT: the last command's status was STATUS
corpus_expect_status() {
    local got=$1 want=$2 what=$3
    if ((got == want)); then
        echo "  ✓ $what exited $got"
    else
        echo "  ✗ $what exited $got, expected $want"
        corpus_failed=$((corpus_failed + 1))
    fi
}

corpus_done() {
    local s=$(($(date +%s) - corpus_t0))
    if ((corpus_failed)); then
        echo "✗ corpus/$corpus_name: $corpus_failed step(s) failed ($s s)"
        return 1
    fi
    echo "✓ corpus/$corpus_name: every check passed ($s s)"
}

# --- the workflow (workflow.sh; slurm.sh) ----------------------------------------
# corpus_wf_prepare        $wf: a small corpus (check.py wfprep: 11 good WAV files,
#                          the last held back, and 3 broken ones) and $wf_model, a
#                          small random model; references by single-file runs
# corpus_workflow NAME MODE OUT WANT
#                          a new user's runs into OUT with the recipe the caller
#                          defines as wf_recipe LIST LOG (runs it, its status) and
#                          wf_interrupt LIST LOG (runs it and stops it once OUT has a
#                          manifest line, corpus_wf_wait; its status, WANT):
#                          1. the list, interrupted after its first output: the
#                             list's last input is a FIFO no one writes, so the run
#                             cannot end first; the real file then takes its place
#                          2. --list OUT/failed.txt: the retry the summary suggests
#                          3. the list again: nothing under OUT changes
#                          MODE (file or tar) says what check.py expects; each step
#                          is checked by check.py wf
corpus_wf_prepare() {
    wf=$work/wf
    wf_model=$work/small.gguf
    "$mkmodel" --n-mels 80 --d 64 --seed 5 -o "$wf_model" > /dev/null || exit 1
    mkdir -p "$wf"
    "$py" "$repo/tests/corpus/check.py" wfprep "$wf" "$ws" "$wf_model" || exit 1
}

# corpus_wf_wait OUT: until a manifest under OUT holds a whole line of an input written
# (at most 120 s; a failed input's line can come first, and a tar shard's inputs are
# reported once the shard is committed)
corpus_wf_wait() {
    local i
    for ((i = 0; i < 2400; i++)); do
        cat "$1"/manifest-*.jsonl 2>/dev/null | grep -q '"status":"ok".*}$' && return 0
        sleep 0.05
    done
    echo "  ✗ no manifest line of an input written under $1 in 120 s"
    return 1
}

corpus_workflow() {
    local name=$1 mode=$2 out=$3 want=$4 late
    late=$(tail -n 1 "$wf/list.txt")
    rm -f -- "$late"
    mkfifo -- "$late" || exit 1
    wf_interrupt "$wf/list.txt" "$work/$name-interrupted.log"
    corpus_expect_status $? "$want" "$name: the list, interrupted after its first output"
    cp -- "$late.real" "$late.tmp" && mv -f -- "$late.tmp" "$late" || exit 1
    corpus_check wf interrupted "$wf" "$out" "$mode"

    cp -- "$out/failed.txt" "$work/$name-retry-list.txt" 2>/dev/null || : > "$work/$name-retry-list.txt"
    wf_recipe "$out/failed.txt" "$work/$name-retry.log"
    corpus_expect_status $? 1 "$name: retried with --list OUT/failed.txt (the broken inputs fail)"
    corpus_check wf retried "$wf" "$out" "$mode" "$work/$name-retry-list.txt"

    "$py" "$repo/tests/corpus/check.py" snapshot "$out" > "$work/$name-before.txt"
    wf_recipe "$wf/list.txt" "$work/$name-rerun.log"
    corpus_expect_status $? 1 "$name: the list again"
    "$py" "$repo/tests/corpus/check.py" snapshot "$out" > "$work/$name-after.txt"
    if cmp -s "$work/$name-before.txt" "$work/$name-after.txt" && [[ -s $work/$name-before.txt ]]; then
        echo "  ✓ $name: the rerun wrote nothing under OUT (outputs' size, mtime and inode unchanged)"
    else
        echo "  ✗ $name: the rerun changed files under OUT:"
        diff "$work/$name-before.txt" "$work/$name-after.txt" | head -10 | sed 's/^/    /'
        corpus_failed=$((corpus_failed + 1))
    fi
    corpus_check wf rerun "$wf" "$out" "$mode"
}

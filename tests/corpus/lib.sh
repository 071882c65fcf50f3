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

#!/bin/bash
# workflow.sh - a new user's corpus run through scripts/parallel-shards.sh, in
# file mode and with --tar-size (run by make corpus).
#
#   tests/corpus/workflow.sh [BUILD_DIR]     (default: build)
#
# Over a list with broken files (lib.sh corpus_workflow; check.py wf), each mode:
#   1. the list, 2 shards, SIGTERM to the script's process group (as Ctrl-C)
#      once a manifest line is written: exits 143 after merging what was done;
#      every manifest line whole; failed.txt lists what was not done
#   2. -l OUT/failed.txt: exits 1; manifest.jsonl still holds one line per input
#      of the whole list; each broken input failed with its own decode error
#      (that of a single-file run); failed.txt and summary.txt count the retried
#      list only
#   3. the list again: exits 1 and writes nothing under OUT; every good input ok
#      or skipped with shape, duration_s, windows and valid_ctx, its output equal
#      to a single-file run (a tar member with --tar-size); one line per input,
#      each with a "time"; the broken inputs failed with their own errors
# Small (11 + 3 inputs, a d=64 random model): seconds on 2 cores.
set -u
here=$(cd "$(dirname -- "$0")" && pwd)
. "$here/lib.sh"
corpus_init workflow "${1:-}"
trap 'corpus_cleanup $?' EXIT
echo "corpus/workflow: scripts/parallel-shards.sh, interrupted, retried, rerun (work: $work)"
command -v parallel >/dev/null 2>&1 ||
    { echo "✗ corpus/workflow: GNU parallel not found (scripts/install-deps.sh --test)"; exit 1; }
corpus_wf_prepare

wf_opts=()
wf_out=""
wf_recipe() { # LIST LOG (with wf_exec set: exec'd, the caller's process is the script's)
    ${wf_exec:+exec} "$repo/scripts/parallel-shards.sh" -l "$1" -r "$wf/audio" -o "$wf_out" -m "$wf_model" -j 2 \
        --bin "$ws" -- "${STEM_OPTS[@]}" "${wf_opts[@]}" > "$2" 2>&1
}
wf_interrupt() { # LIST LOG: stopped as Ctrl-C would, once a manifest line is written
    local pid rc
    set -m # its own process group, led by the script itself: waiting for $pid waits for
    # the script's merge after the signal, not only for a subshell the signal ended
    wf_exec=1 wf_recipe "$@" &
    pid=$!
    set +m
    corpus_wf_wait "$wf_out"
    kill -TERM -- "-$pid"
    wait "$pid"
    rc=$?
    return "$rc"
}

wf_out=$work/out-files
corpus_workflow "file mode" file "$wf_out" 143

wf_out=$work/out-tar
wf_opts=(--tar-size 2)
corpus_workflow "--tar-size 2" tar "$wf_out" 143

corpus_done

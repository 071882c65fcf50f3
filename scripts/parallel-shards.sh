#!/bin/bash
# parallel-shards.sh - whisper-stem over a list of audio files on one machine,
# as N shards run side by side by GNU parallel.
#
#   scripts/parallel-shards.sh -l LIST -o OUT -r ROOT -m MODEL -j N [options] [-- WHISPER-STEM OPTIONS]
#
# Runs, for I = 0 .. N-1, at most N at once:
#   whisper-stem --list LIST --root ROOT -O OUT --shard I/N --skip-existing \
#       --manifest OUT/manifest-I.jsonl --progress 60 -m MODEL --threads T [WHISPER-STEM OPTIONS]
# which is
#   parallel -j N whisper-stem ... --shard {}/N ... ::: $(seq 0 $((N-1)))
# and then merges the manifests as the Slurm array's merge job does
# (scripts/slurm-array.sh --merge OUT LIST N): OUT/manifest.jsonl, OUT/failed.txt
# (the inputs that failed or were not reached, one a line: feed it back as
# --list to retry) and OUT/summary.txt, printed at the end.
#
# Why a script and not just the parallel line: each whisper-stem would start as
# many threads as there are CPUs, so N of them would oversubscribe the machine
# N times; the script gives each T = CPUs / N threads (at least 1) unless the
# WHISPER-STEM OPTIONS set --threads. No path or option given to the script is
# put in parallel's command line, where parallel would rewrite any {}, {.},
# {/} ... in it: they reach each shard through the environment, and parallel
# only runs this script again with the shard number. Each shard appends to its
# manifest-I.jsonl, never emptying it (a line left partial by a full disk or a
# kill first gets its newline), and the merge keeps each input's newest line:
# OUT/manifest.jsonl covers every run into OUT, a retry of failed.txt included,
# while failed.txt and summary.txt describe this LIST. Outputs already there
# are "skipped". The script ends with the same merge, summary and failed.txt as
# a Slurm run, also when interrupted (then over what was done).
#
# GPUs: each shard runs where its --device says, and shards on one GPU share
# it (each holds its own copy of the model). With --gpus, shard I runs on GPU I
# (--device cuda:I): give -j the number of GPUs.
#
# Options:
#   -l, --list FILE   input paths, one a line (whisper-stem --list)
#   -o, --out DIR     output tree; also the manifests, failed.txt, summary.txt
#   -r, --root DIR    the input tree OUT mirrors (an input outside it fails)
#   -m, --model FILE  GGUF weights (default: $WHISPER_STEM_MODEL)
#   -j, --jobs N      shards, all run at once (default: the CPU count)
#       --bin PATH    the whisper-stem to run (default: the whisper-stem in this
#                     script's directory (installed), else whisper-stem on PATH,
#                     else ../build/whisper-stem from this script)
#       --progress S  seconds between each shard's progress lines (default 60)
#       --gpus        shard I on GPU I (--device cuda:I)
#   -h, --help        this text
#   -- ...            the rest: whisper-stem options for every shard
#
# Exit status: 0 every input ok or skipped, 1 some failed or were not reached
# (the summary says which), 2 usage error; interrupted (Ctrl-C: 130, SIGTERM:
# 143) once the shards have stopped and what they did is merged (the inputs not
# reached are in failed.txt).
#
# Installed (make install) as whisper-stem-parallel, beside whisper-stem and
# whisper-stem-slurm (the merge), which it then runs.
#
# Tested by tests/corpus/parallel.sh (make corpus).
set -u
prog=$(basename -- "$0")
here=$(cd "$(dirname -- "$0")" && pwd)
self=$here/$(basename -- "$0")

# the merge: slurm-array.sh beside this script, or installed, whisper-stem-slurm
merge_script=$here/slurm-array.sh
[[ -f $merge_script ]] || merge_script=$here/whisper-stem-slurm

# A manifest whose last line has no newline (cut short by a full disk or a
# kill) gets one, so that the next line appended starts a line of its own.
end_line() {
    if [[ -s $1 ]] && (($(tail -c 1 -- "$1" | wc -l) == 0)); then
        printf '\n' >> "$1"
    fi
}

# --shard-run I: one shard, as parallel runs it; everything else comes from the
# environment the script set (WS_PS_*), so that no user text passes through
# parallel's command line
if [[ ${1:-} == --shard-run ]]; then
    i=${2:-}
    [[ $i =~ ^[0-9]+$ && -n ${WS_PS_BIN:-} ]] ||
        { echo "$prog --shard-run: runs only as a shard that $prog starts" >&2; exit 2; }
    opts=()
    eval "opts=(${WS_PS_OPTS:-})"
    device=()
    [[ -n ${WS_PS_GPUS:-} ]] && device=(--device "cuda:$i")
    threads=()
    [[ -n ${WS_PS_THREADS:-} ]] && threads=(--threads "$WS_PS_THREADS")
    end_line "$WS_PS_OUT/manifest-$i.jsonl"
    exec "$WS_PS_BIN" --list "$WS_PS_LIST" --root "$WS_PS_ROOT" -O "$WS_PS_OUT" \
        --shard "$i/$WS_PS_JOBS" --skip-existing --manifest "$WS_PS_OUT/manifest-$i.jsonl" \
        --progress "$WS_PS_PROGRESS" -m "$WS_PS_MODEL" "${threads[@]}" "${device[@]}" "${opts[@]}"
fi

usage_error() {
    echo "$prog: $*" >&2
    echo "$prog: see $prog --help" >&2
    exit 2
}

list="" out="" root="" model=${WHISPER_STEM_MODEL:-} jobs="" bin="" progress=60 stem_opts=() gpus=""
while (($#)); do
    opt=$1
    val=""
    case $opt in
        --) shift; stem_opts=("$@"); break ;;
        -h|--help) awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
        --gpus) gpus=1; shift; continue ;;
        --*=*) val=${opt#*=}; opt=${opt%%=*} ;;
        -l|-o|-r|-m|-j|--list|--out|--root|--model|--jobs|--bin|--progress)
            (($# >= 2)) || usage_error "$opt needs a value"
            val=$2
            shift ;;
        *) usage_error "unknown option '$opt' (whisper-stem options go after --)" ;;
    esac
    shift
    case $opt in
        -l|--list) list=$val ;;
        -o|--out) out=$val ;;
        -r|--root) root=$val ;;
        -m|--model) model=$val ;;
        -j|--jobs) jobs=$val ;;
        --bin) bin=$val ;;
        --progress) progress=$val ;;
        *) usage_error "unknown option '$opt' (whisper-stem options go after --)" ;;
    esac
done

ncpu=$(nproc 2>/dev/null || echo 1)
jobs=${jobs:-$ncpu}
[[ -n $list ]] || usage_error "no list: -l FILE"
[[ -n $out ]] || usage_error "no output directory: -o DIR"
[[ -n $root ]] || usage_error "no root: -r DIR (OUT mirrors the tree under it)"
[[ -n $model ]] || usage_error "no model: -m FILE or WHISPER_STEM_MODEL"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || usage_error "-j must be a positive integer, not '$jobs'"
[[ $list != - ]] || usage_error "-l -: every shard reads the list; give a file"
[[ -f $list && -r $list ]] || usage_error "$list: not a readable file"
# The merge (failed.txt, summary.txt) keys every input by its list line, a path: a list of
# segments (TSV lines, NeMo or lhotse manifests) or of tar shards would be merged wrong, so it
# is refused here; run whisper-stem --shard I/N with --manifest directly for those
# (docs/corpus.md).
if [[ $list == *.jsonl || $list == *.json || $list == *.gz ]] ||
    LC_ALL=C grep -qE $'\t|^[[:space:]]*\\{|\\.([tT][aA][rR]|[tT][aA][rR]\\.[gG][zZ]|[tT][gG][zZ])$' "$list"; then
    usage_error "$list: a list of segments or tar shards; this recipe's merge keys inputs by path (run whisper-stem --shard I/N --manifest ... directly)"
fi
[[ -d $root ]] || usage_error "$root: not a directory"
[[ -f $model ]] || usage_error "$model: no such model file"
command -v parallel >/dev/null 2>&1 || { echo "$prog: GNU parallel not found (Debian: apt-get install parallel)" >&2; exit 1; }
if [[ -z $bin ]]; then
    if [[ -x $here/whisper-stem && ! -d $here/whisper-stem ]]; then
        bin=$here/whisper-stem
    else
        bin=$(command -v whisper-stem 2>/dev/null) || bin=$here/../build/whisper-stem
    fi
fi
[[ -x $bin && ! -d $bin ]] || usage_error "$bin: no whisper-stem binary there (--bin PATH)"
if ! "$bin" --help 2>&1 | grep -q -- '--shard'; then
    echo "$prog: $bin has no --shard option: a newer whisper-stem is needed" >&2
    exit 1
fi

threads=$((ncpu / jobs > 0 ? ncpu / jobs : 1))
for a in "${stem_opts[@]}"; do
    [[ $a == --threads || $a == --threads=* ]] && threads=""
done

mkdir -p -- "$out" || exit 1
opts_q=""
((${#stem_opts[@]})) && opts_q=$(printf '%q ' "${stem_opts[@]}")
export WS_PS_BIN=$bin WS_PS_LIST=$list WS_PS_ROOT=$root WS_PS_OUT=$out WS_PS_MODEL=$model \
    WS_PS_JOBS=$jobs WS_PS_PROGRESS=$progress WS_PS_THREADS=$threads WS_PS_GPUS=$gpus \
    WS_PS_OPTS=$opts_q WS_PS_SELF=$self
# a Ctrl-C or kill of the process group reaches parallel and the shards too
# (they exit 130/143 with whole outputs and manifest lines); then the merge
sig=""
trap 'sig=130' INT
trap 'sig=143' TERM
# each shard runs "$WS_PS_SELF" --shard-run I (the command line holds no user
# text); --line-buffer keeps each shard's stderr lines whole
parallel -j "$jobs" --line-buffer '"$WS_PS_SELF" --shard-run {}' ::: $(seq 0 $((jobs - 1)))
rc=$?
if [[ -n $sig ]]; then
    echo "$prog: interrupted; what was done:" >&2
    "$merge_script" --merge "$out" "$list" "$jobs"
    exit "$sig"
fi
# parallel's status is the number of shards that exited non-zero, up to 100
# (101: more); a shard's 1 means some input failed, which the merge reports.
# Above that parallel itself failed or was stopped: no merge
if ((rc > 101)); then
    echo "$prog: GNU parallel ended with status $rc; merge what was done with:" \
        "$merge_script --merge $out $list $jobs" >&2
    exit $((rc >= 128 ? rc : 1))
fi
"$merge_script" --merge "$out" "$list" "$jobs"

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
# WHISPER-STEM OPTIONS set --threads. It also empties the per-shard manifests
# first (OUT describes this run; outputs already there are "skipped"), quotes
# every argument for parallel (-q: paths with spaces), and ends with the same
# merge, summary and failed.txt as a Slurm run.
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
#       --bin PATH    the whisper-stem to run (default: whisper-stem on PATH,
#                     else build/whisper-stem beside this script)
#       --progress S  seconds between each shard's progress lines (default 60)
#       --gpus        shard I on GPU I (--device cuda:I)
#   -h, --help        this text
#   -- ...            the rest: whisper-stem options for every shard
#
# Exit status: 0 every input ok or skipped, 1 some failed or were not reached
# (the summary says which), 2 usage error; interrupted (Ctrl-C: 130), there is
# no merge: run scripts/slurm-array.sh --merge OUT LIST N by hand.
#
# Tested by tests/corpus/parallel.sh (make corpus).
set -u
prog=parallel-shards.sh
here=$(cd "$(dirname -- "$0")" && pwd)

usage_error() {
    echo "$prog: $*" >&2
    echo "$prog: see $prog --help" >&2
    exit 2
}

list="" out="" root="" model=${WHISPER_STEM_MODEL:-} jobs="" bin="" progress=60 stem_opts=() device=()
while (($#)); do
    opt=$1
    val=""
    case $opt in
        --) shift; stem_opts=("$@"); break ;;
        -h|--help) awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
        --gpus) device=(--device "cuda:{}"); shift; continue ;;
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
[[ -d $root ]] || usage_error "$root: not a directory"
[[ -f $model ]] || usage_error "$model: no such model file"
command -v parallel >/dev/null 2>&1 || { echo "$prog: GNU parallel not found (Debian: apt-get install parallel)" >&2; exit 1; }
if [[ -z $bin ]]; then
    bin=$(command -v whisper-stem 2>/dev/null) || bin=$here/../build/whisper-stem
fi
[[ -x $bin && ! -d $bin ]] || usage_error "$bin: no whisper-stem binary there (--bin PATH)"
if ! "$bin" --help 2>&1 | grep -q -- '--shard'; then
    echo "$prog: $bin has no --shard option: a newer whisper-stem is needed" >&2
    exit 1
fi

threads=(--threads $((ncpu / jobs > 0 ? ncpu / jobs : 1)))
for a in "${stem_opts[@]}"; do
    [[ $a == --threads || $a == --threads=* ]] && threads=()
done

mkdir -p -- "$out" || exit 1
for ((i = 0; i < jobs; i++)); do
    : > "$out/manifest-$i.jsonl" || exit 1
done
# a Ctrl-C or kill of the process group reaches parallel and the shards too
# (they exit 130/143 with whole outputs and manifest lines); no merge then
sig=""
trap 'sig=130' INT
trap 'sig=143' TERM
# -q quotes each word for the shell parallel runs the command in; {} is the
# shard; --line-buffer keeps each shard's stderr lines whole
parallel -q -j "$jobs" --line-buffer \
    "$bin" --list "$list" --root "$root" -O "$out" --shard "{}/$jobs" --skip-existing \
    --manifest "$out/manifest-{}.jsonl" --progress "$progress" -m "$model" "${threads[@]}" \
    "${device[@]}" "${stem_opts[@]}" ::: $(seq 0 $((jobs - 1)))
rc=$?
if [[ -n $sig ]]; then
    echo "$prog: interrupted; merge what was done with:" \
        "$here/slurm-array.sh --merge $out $list $jobs" >&2
    exit "$sig"
fi
# parallel's status is the number of shards that exited non-zero, up to 100
# (101: more); a shard's 1 means some input failed, which the merge reports.
# Above that parallel itself failed or was stopped: no merge
if ((rc > 101)); then
    echo "$prog: GNU parallel ended with status $rc; merge what was done with:" \
        "$here/slurm-array.sh --merge $out $list $jobs" >&2
    exit $((rc >= 128 ? rc : 1))
fi
"$here/slurm-array.sh" --merge "$out" "$list" "$jobs"

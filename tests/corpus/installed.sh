#!/bin/bash
# installed.sh - the installed corpus scripts and .pt converter (run by make install-check).
#
#   tests/corpus/installed.sh BINDIR MODEL WAV EMB
#
# BINDIR holds a `make install`; MODEL is a GGUF file, WAV an audio file and EMB
# the installed whisper-stem's output for it (-m MODEL --device cpu). Run with a
# PATH that holds no whisper-stem (only BINDIR, a stand-in sbatch and the system
# directories), so that each script must find the whisper-stem installed beside it:
#   1. whisper-stem-parallel, whisper-stem-slurm and whisper-stem-pt-to-gguf
#      --help exit 0 (the last only where python3 is)
#   2. whisper-stem-parallel -j 1 over a list of WAV: its output equals EMB and
#      the merge (whisper-stem-slurm beside it) wrote summary.txt (skipped
#      without GNU parallel)
#   3. whisper-stem-slurm -n 1, called by its name on PATH, with a stand-in
#      sbatch that records its arguments: the array job runs
#      BINDIR/whisper-stem-slurm --task BINDIR/whisper-stem ..., the merge job
#      BINDIR/whisper-stem-slurm --merge ...; the recorded task, run as task 0
#      of 1, writes EMB's bytes and the recorded merge merges it
# Exit status: 0 all passed, 1 a check failed (each printed).
set -u
if (($# != 4)); then
    echo "usage: $0 BINDIR MODEL WAV EMB" >&2
    exit 2
fi
bindir=$(cd "$1" && pwd) || exit 1
abs() { printf '%s/%s\n' "$(cd "$(dirname -- "$1")" && pwd)" "$(basename -- "$1")"; }
model=$(abs "$2") wav=$(abs "$3") emb=$(abs "$4")
t=$(mktemp -d "${TMPDIR:-/tmp}/ws-installed.XXXXXX") || exit 1
trap 'rm -rf -- "$t"' EXIT
failed=0
check() { # COND-STATUS WHAT
    if (($1 == 0)); then
        echo "  ✓ $2"
    else
        echo "  ✗ $2"
        failed=1
    fi
}
mkdir "$t/stub" "$t/calls"
cat > "$t/stub/sbatch" <<'EOF'
#!/bin/bash
# a stand-in sbatch: records its arguments (NUL-separated), answers a job id
n=$(ls "$WS_SBATCH_CALLS" | wc -l)
printf '%s\0' "$@" > "$WS_SBATCH_CALLS/call-$n"
echo $((4242 + n))
EOF
chmod 755 "$t/stub/sbatch"
export PATH=$bindir:$t/stub:/usr/bin:/bin WS_SBATCH_CALLS=$t/calls
unset WHISPER_STEM_MODEL

for s in whisper-stem-parallel whisper-stem-slurm; do
    "$bindir/$s" --help > "$t/help.txt" 2>&1
    check $? "$s --help"
done
if command -v python3 > /dev/null 2>&1; then
    whisper-stem-pt-to-gguf --help > "$t/help.txt" 2>&1
    check $? "whisper-stem-pt-to-gguf --help"
fi

root=$(dirname -- "$wav")
echo "$wav" > "$t/list.txt"
cd "$t" || exit 1
if command -v parallel > /dev/null 2>&1; then
    whisper-stem-parallel -l list.txt -r "$root" -o par -m "$model" -j 1 -- --device cpu > par.log 2>&1
    rc=$?
    cmp -s "par/$(basename -- "${wav%.*}").npy" "$emb"
    check $((rc || $?)) "whisper-stem-parallel ran the installed whisper-stem (output equal)"
    grep -q '^  ok: *1$' par/summary.txt 2>/dev/null
    check $? "whisper-stem-parallel merged through the installed whisper-stem-slurm (summary.txt: ok 1)"
else
    echo "  ✗ GNU parallel not found: whisper-stem-parallel was not run (scripts/install-deps.sh --test)"
fi

whisper-stem-slurm -l list.txt -r "$root" -o slu -m "$model" -n 1 -- --device cpu > slu.log 2>&1
check $? "whisper-stem-slurm submitted (to a stand-in sbatch)"
call_args() { # N: the arguments after the script's path in sbatch call N
    local -a a=()
    mapfile -d '' a < "$t/calls/call-$1" 2>/dev/null
    local i
    for ((i = 0; i < ${#a[@]}; i++)); do
        if [[ ${a[i]} == "$bindir/whisper-stem-slurm" ]]; then
            printf '%s\0' "${a[@]:i+1}"
            return 0
        fi
    done
    return 1
}
task=() merge=()
mapfile -d '' task < <(call_args 0)
mapfile -d '' merge < <(call_args 1)
[[ ${task[0]:-} == --task && ${task[1]:-} == "$bindir/whisper-stem" ]]
check $? "the array job runs $bindir/whisper-stem-slurm --task $bindir/whisper-stem ..."
[[ ${merge[0]:-} == --merge ]]
check $? "the merge job runs $bindir/whisper-stem-slurm --merge ..."
if ((${#task[@]} && ${#merge[@]})); then
    SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=1 "$bindir/whisper-stem-slurm" "${task[@]}" \
        > task.log 2>&1
    rc=$?
    cmp -s "slu/$(basename -- "${wav%.*}").npy" "$emb"
    check $((rc || $?)) "the recorded task, run as task 0 of 1, wrote the installed whisper-stem's output"
    "$bindir/whisper-stem-slurm" "${merge[@]}" > merge.log 2>&1
    check $? "the recorded merge job merged it (exit 0)"
fi
((failed)) && { echo "  (logs: $t kept)"; trap - EXIT; }
exit "$failed"

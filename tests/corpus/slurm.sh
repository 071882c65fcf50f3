#!/bin/bash
# slurm.sh - scripts/slurm-array.sh on a one-node Slurm cluster started here:
# a 4-task array job over the test corpus, its merge job, and the checks of
# tests/corpus/check.py.
#
#   tests/corpus/slurm.sh [BUILD_DIR]     (default: build; run by make corpus)
#
# Steps:
#   1. make-corpus.sh: 200 good WAV files and 6 bad inputs in a list; a random
#      tiny model; a single-file run of each good input as its reference
#   2. start munged and a one-node Slurm (below)
#   3. slurm-array.sh -n 4 -p corpus -c 1 -t 10 --max-parallel 3 -J corpus-test
#      --merge-sbatch=--comment=merge --wait: exits 1 (some inputs failed); one
#      log per task (task-<job>_0..3.log) and the merge job's log; check.py run
#      ... first: the shards covered the list once, outputs equal the
#      references, the bad inputs failed with an error, manifest.jsonl,
#      failed.txt and summary.txt are right
#   4. the same submission again: every good input "skipped", the bad ones
#      "failed", no file under OUT changed; the task manifests appended to
#   5. a third submission with -l OUT/failed.txt (the retry a user would run):
#      the merge reads the list it then replaces; the 6 bad inputs fail again,
#      manifest.jsonl still holds the whole list
#   6. a 2-task submission whose OUT holds '%' (sbatch expands %A, %j ... in
#      log names; the script writes it %%): the tasks ran, logs under OUT
#   7. the new user's workflow (lib.sh corpus_workflow) in file mode: the list,
#      its array job cancelled (scancel) once a manifest line is written, the
#      merge job then run (exits 1: inputs not reached); -l OUT/failed.txt; the
#      list again, writing nothing
#   8. slurm-array.sh --help exits 0; usage errors exit 2
#
# What it needs, as found on Debian 12 (slurm-wlm 22.05.8, munge 0.5.15) in a
# container, as root, with no systemd:
#   - root: slurmd starts each job as its user (setuid); here the jobs run as root
#   - packages slurm-wlm and munge (scripts/install-deps.sh --test). No service is
#     started or changed: munged, slurmctld and slurmd run from the temporary
#     work directory, on their own socket and ports, and are stopped on exit
#     (the EXIT trap: jobs cancelled, then slurmd, slurmctld, munged)
#   - munged with a generated key (1024 random bytes, mode 0400) and --socket,
#     --pid-file, --log-file and --seed-file there; it refuses a socket directory
#     that others cannot enter ("execute permissions for all required"), so that
#     one is 0755. AuthInfo=socket=... points Slurm at it; without it slurmd
#     cannot register ("Failed to access /run/munge/munge.socket.2")
#   - ProctrackType=proctrack/linuxproc. The default, proctrack/cgroup, fails
#     every job step here ("cgroup namespace 'freezer' not mounted")
#   - the rest of slurm.conf (written below) is chosen to depend on nothing of
#     the machine: SlurmctldHost=localhost, NodeName=localhost NodeAddr=127.0.0.1
#     CPUs=<nproc> and slurmd -N localhost (whatever the host name); SlurmUser
#     and SlurmdUser root; two free TCP ports on 127.0.0.1; state, spool, pid and
#     log files in the work directory; TaskPlugin=task/none, JobAcctGatherType=
#     jobacct_gather/none, AccountingStorageType=accounting_storage/none (no
#     slurmdbd), an empty PlugStackConfig (not /etc/slurm/plugstack.conf),
#     ReturnToService=2, MailProg=/bin/true (none is installed), MpiDefault=none.
#     TaskPlugin, JobAcctGatherType, PlugStackConfig, ReturnToService and the -N
#     were each also tried at their defaults here, and jobs ran
#   - slurmd logs "can not load PMIx library" while it probes the MPI plugins:
#     harmless (no MPI is used)
#   - SLURM_CONF in the environment, so that sbatch, squeue and scancel find
#     this cluster; every SLURM_*, SBATCH_*, SALLOC_* and SRUN_* variable from
#     an enclosing job is unset first
set -u
here=$(cd "$(dirname -- "$0")" && pwd)
. "$here/lib.sh"
corpus_init slurm "${1:-}"

sl=$work/slurm
ctld_pid="" slurmd_pid="" munged_started=0
stop_slurm() {
    # jobs first (their slurmstepd processes end with them), then the daemons
    if [[ -n $ctld_pid ]] && kill -0 "$ctld_pid" 2>/dev/null; then
        scancel --quiet --user=root >/dev/null 2>&1
        for _ in $(seq 30); do
            [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
            sleep 1
        done
    fi
    for p in $slurmd_pid $ctld_pid; do
        kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    if ((munged_started)); then
        munged -s -S "$sl/munge/socket" >/dev/null 2>&1
    fi
}
on_exit() {
    local rc=$?
    stop_slurm
    if ((rc)) && [[ -d $sl/log ]]; then
        for f in "$sl"/log/*.log; do
            echo "  --- last lines of $f"
            tail -n 15 "$f" | sed 's/^/  /'
        done
    fi
    corpus_cleanup "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "corpus/slurm: scripts/slurm-array.sh on a one-node Slurm (work: $work)"
if [[ $(id -u) -ne 0 ]]; then
    echo "✗ corpus/slurm: needs root to start slurmd (CI runs as root); skipped"
    exit 0
fi
for b in munged slurmctld slurmd sbatch squeue scancel sinfo; do
    command -v "$b" >/dev/null 2>&1 ||
        { echo "✗ corpus/slurm: $b not found (scripts/install-deps.sh --test installs slurm-wlm and munge)"; exit 1; }
done
corpus_prepare

# --- a one-node cluster --------------------------------------------------------
for v in $(compgen -e); do
    case $v in SLURM_*|SBATCH_*|SALLOC_*|SRUN_*) unset "$v" ;; esac
done
mkdir -p "$sl/munge" "$sl/state" "$sl/spool" "$sl/log"
chmod 755 "$sl" "$sl/munge"
head -c 1024 /dev/urandom > "$sl/munge/munge.key"
chmod 400 "$sl/munge/munge.key"
if ! munged --key-file="$sl/munge/munge.key" --socket="$sl/munge/socket" \
        --pid-file="$sl/munge/munged.pid" --log-file="$sl/log/munged.log" \
        --seed-file="$sl/munge/munged.seed"; then
    echo "✗ corpus/slurm: munged did not start"
    exit 1
fi
munged_started=1

read -r ctld_port slurmd_port < <("$py" -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
touch "$sl/plugstack.conf"
cat > "$sl/slurm.conf" <<EOF
# a one-node cluster for tests/corpus/slurm.sh (see its header)
ClusterName=wscorpus
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sl/munge/socket
StateSaveLocation=$sl/state
SlurmdSpoolDir=$sl/spool
SlurmctldPidFile=$sl/slurmctld.pid
SlurmdPidFile=$sl/slurmd.pid
SlurmctldLogFile=$sl/log/slurmctld.log
SlurmdLogFile=$sl/log/slurmd.log
PlugStackConfig=$sl/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc)
PartitionName=corpus Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$sl/slurm.conf
slurmctld -D > "$sl/log/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N localhost > "$sl/log/slurmd.out" 2>&1 &
slurmd_pid=$!
state=""
for _ in $(seq 60); do
    state=$(sinfo -h -n localhost -o %T 2>/dev/null)
    [[ $state == idle ]] && break
    if ! kill -0 "$ctld_pid" 2>/dev/null || ! kill -0 "$slurmd_pid" 2>/dev/null; then
        break
    fi
    sleep 0.5
done
if [[ $state != idle ]]; then
    echo "✗ corpus/slurm: the node is not idle after 30 s (state '$state'); logs below"
    exit 1
fi
echo "  ✓ slurmctld and slurmd up: node localhost idle, $(nproc) CPUs, ports $ctld_port/$slurmd_port"

# --- the runs ---------------------------------------------------------------
tasks=4
c=$work/corpus
out=$work/out
cd "$work" || exit 1
submit() { # LIST LOG
    timeout 300 "$repo/scripts/slurm-array.sh" -l "$1" -r "$c/audio" -o "$out" -m "$model" \
        -n "$tasks" -p corpus -c 1 -t 10 --max-parallel 3 -J corpus-test \
        --merge-sbatch=--comment=merge --progress 5 --bin "$ws" --wait -- "${STEM_OPTS[@]}" \
        > "$work/$2.log" 2>&1
}

t0=$(date +%s)
submit "$c/list.txt" first
corpus_expect_status $? 1 "first submission ($(($(date +%s) - t0)) s; some inputs are bad)"
array_id=$(sed -n 's/^slurm-array.sh: array job \([0-9]*\):.*/\1/p' "$work/first.log")
logs_ok=1
for ((i = 0; i < tasks; i++)); do
    grep -q -- "--shard $i/$tasks " "$out/slurm-logs/task-${array_id}_$i.log" 2>/dev/null || logs_ok=0
done
if ((logs_ok)) && [[ -n $array_id ]] && ls "$out"/slurm-logs/merge-*.log >/dev/null 2>&1; then
    echo "  ✓ array job $array_id ran tasks 0-3, each with --shard I/4; the merge job logged"
else
    echo "  ✗ the logs of array job '$array_id' (tasks 0-3, --shard I/4) or of the merge job are missing:"
    ls "$out/slurm-logs" 2>&1 | head
    sed 's/^/    /' "$work/first.log" | head -20
    corpus_failed=$((corpus_failed + 1))
fi
corpus_check run "$c" "$out" "$work/ref" "$tasks" first

"$py" "$here/check.py" snapshot "$out" > "$work/before.txt"
mkdir "$work/prev"
cp "$out"/manifest-*.jsonl "$work/prev/"
t0=$(date +%s)
submit "$c/list.txt" again
corpus_expect_status $? 1 "second submission ($(($(date +%s) - t0)) s)"
corpus_check run "$c" "$out" "$work/ref" "$tasks" again "$work/prev"
"$py" "$here/check.py" snapshot "$out" > "$work/after.txt"
if cmp -s "$work/before.txt" "$work/after.txt" && [[ -s $work/before.txt ]]; then
    echo "  ✓ the second submission wrote nothing under OUT (outputs' size, mtime and inode unchanged)"
else
    echo "  ✗ the second submission changed files under OUT:"
    diff "$work/before.txt" "$work/after.txt" | head -10
    corpus_failed=$((corpus_failed + 1))
fi

cp "$out/failed.txt" "$work/failed-before-retry.txt"
submit "$out/failed.txt" retry
corpus_expect_status $? 1 "a submission of -l OUT/failed.txt"
corpus_check union "$c" "$out" "$work/failed-before-retry.txt"
if cmp -s "$out/failed.txt" "$work/failed-before-retry.txt"; then
    echo "  ✓ its failed.txt, written over the list it read, lists the same 6 inputs"
else
    echo "  ✗ failed.txt after the retry differs from the list it was made from"
    corpus_failed=$((corpus_failed + 1))
fi

# --- '%' in OUT ------------------------------------------------------------------
corpus_wf_prepare
pct_out="$work/out 50%A %j %%"
head -n 4 "$wf/good.txt" > "$work/pct-list.txt"
timeout 300 "$repo/scripts/slurm-array.sh" -l "$work/pct-list.txt" -r "$wf/audio" -o "$pct_out" \
    -m "$wf_model" -n 2 -p corpus -c 1 -t 10 --bin "$ws" --wait -- "${STEM_OPTS[@]}" \
    > "$work/pct.log" 2>&1
corpus_expect_status $? 0 "a submission whose OUT holds % (4 good inputs, 2 tasks)"
pct_id=$(sed -n 's/^slurm-array.sh: array job \([0-9]*\):.*/\1/p' "$work/pct.log")
if [[ -n $pct_id && -s $pct_out/slurm-logs/task-${pct_id}_0.log && -s $pct_out/slurm-logs/task-${pct_id}_1.log ]] &&
    ls "$pct_out"/slurm-logs/merge-*.log > /dev/null 2>&1 && grep -q '^  ok: *4$' "$pct_out/summary.txt"; then
    echo "  ✓ its tasks logged to OUT/slurm-logs/task-${pct_id}_0/1.log, the merge job too; summary.txt: ok 4"
else
    echo "  ✗ with % in OUT the tasks or their logs are missing:"
    ls -R "$work" | grep -i slurm-logs -A3 | head | sed 's/^/    /'
    corpus_failed=$((corpus_failed + 1))
fi

# --- the new user's workflow --------------------------------------------------------
wf_out=$work/out-wf
wf_recipe() { # LIST LOG
    timeout 300 "$repo/scripts/slurm-array.sh" -l "$1" -r "$wf/audio" -o "$wf_out" -m "$wf_model" \
        -n 2 -p corpus -c 1 -t 10 --bin "$ws" --progress 5 --wait -- "${STEM_OPTS[@]}" > "$2" 2>&1
}
wf_interrupt() { # LIST LOG: the array job cancelled once a manifest line is written
    local pid id=""
    wf_recipe "$@" &
    pid=$!
    corpus_wf_wait "$wf_out"
    id=$(sed -n 's/^slurm-array.sh: array job \([0-9]*\):.*/\1/p' "$2")
    [[ -n $id ]] && scancel "$id"
    wait "$pid"
}
corpus_workflow "slurm, file mode" file "$wf_out" 1

"$repo/scripts/slurm-array.sh" --help > "$work/help.txt"
corpus_expect_status $? 0 "slurm-array.sh --help"
"$repo/scripts/slurm-array.sh" -l "$c/list.txt" -r "$c/audio" -o "$out" -m "$model" > /dev/null 2>&1
corpus_expect_status $? 2 "slurm-array.sh without -n"
"$repo/scripts/slurm-array.sh" -l "$c/list.txt" -r "$c/audio" -o "$out" -m "$model" -n 0 > /dev/null 2>&1
corpus_expect_status $? 2 "slurm-array.sh -n 0"
"$repo/scripts/slurm-array.sh" --task "$ws" > /dev/null 2>&1
corpus_expect_status $? 2 "slurm-array.sh --task outside an array job"

corpus_done

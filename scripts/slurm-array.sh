#!/bin/bash
# slurm-array.sh - whisper-stem over a list of audio files as a Slurm array job.
#
#   scripts/slurm-array.sh -l LIST -o OUT -r ROOT -m MODEL -n TASKS [options] [-- WHISPER-STEM OPTIONS]
#
# Submits two jobs with sbatch:
#
#   1. an array job of TASKS tasks (--array=0-(TASKS-1)). Task I runs
#        whisper-stem --list LIST --root ROOT -O OUT --shard I/TASKS --skip-existing \
#            --manifest OUT/manifest-I.jsonl --progress 60 -m MODEL [WHISPER-STEM OPTIONS]
#      so it takes the list positions p with p % TASKS == I (blank and '#' lines
#      are not positions), writes OUT/<path under ROOT, without extension>.npy for
#      each, and appends one JSON line per input to its manifest as the input ends.
#      I comes from $SLURM_ARRAY_TASK_ID and TASKS from $SLURM_ARRAY_TASK_COUNT
#      (checked against the TASKS submitted: another split would not cover the list).
#   2. a merge job that starts once every task has ended, however it ended
#      (--dependency=afterany): it merges OUT/manifest.jsonl and every
#      OUT/manifest-I.jsonl into OUT/manifest.jsonl (each input once, its newest
#      line: see merge below), writes OUT/failed.txt (every input of the list
#      that failed or that no task reached, one a line, in list order: feed it
#      back as --list to retry) and OUT/summary.txt (ok / skipped / failed / not
#      reached counts over the list, the first errors), and prints the summary
#      into its log. It exits 0 when every input of the list ended ok or
#      skipped, 1 otherwise.
#
# Logs: OUT/slurm-logs/task-<array job>_<task>.log and merge-<job>.log (a '%'
# in OUT is written '%%' for sbatch, which would expand it).
# The manifests are appended to, never emptied: a task appends to its
# manifest-I.jsonl (after giving a partial last line its newline) and the merge
# keeps, per input, the newest line of every submission into OUT, so
# manifest.jsonl covers them all (a retry of failed.txt leaves a manifest of the
# whole list), while failed.txt and summary.txt describe the list of this
# submission. Outputs written by an earlier submission are "skipped"
# (--skip-existing), so submitting the same list again retries only what is
# missing. One submission at a time per OUT: two would share the manifest names.
#
# Installed (make install) as whisper-stem-slurm beside whisper-stem, which it
# then runs; the merge job runs the installed script again.
#
# Paths are used as given: the jobs run in the directory sbatch was called from
# (Slurm's default), so relative LIST, ROOT, OUT and list lines mean the same
# there, provided the compute nodes see that directory. MODEL and the binary are
# made absolute at submission.
#
# Options:
#   -l, --list FILE        input paths, one a line (whisper-stem --list)
#   -o, --out DIR          output tree; also the manifests, failed.txt, summary.txt, logs
#   -r, --root DIR         the input tree OUT mirrors (an input outside it fails)
#   -m, --model FILE       GGUF weights (default: $WHISPER_STEM_MODEL)
#   -n, --tasks N          array tasks, the shards of the list
#   -p, --partition P      sbatch --partition, for both jobs
#   -A, --account A        sbatch --account, for both jobs
#   -t, --time T           sbatch --time of each task (e.g. 2:00:00)
#   -c, --cpus-per-task N  sbatch --cpus-per-task; whisper-stem gets --threads N
#                          unless the WHISPER-STEM OPTIONS set --threads
#   -G, --gres G           sbatch --gres of each task, e.g. gpu:1 (then pass
#                          -- --device cuda to fail rather than fall back to the CPU)
#       --mem M            sbatch --mem of each task
#       --max-parallel K   at most K tasks run at once (--array=0-(N-1)%K)
#   -J, --job-name NAME    the array job's name (default whisper-stem); the merge
#                          job is NAME-merge
#       --sbatch OPT       any other sbatch option for the tasks, repeatable,
#                          e.g. --sbatch=--qos=long --sbatch=--constraint=avx2
#       --merge-sbatch OPT the same for the merge job (it asks for 1 CPU and
#                          --time=30:00 unless told otherwise)
#       --bin PATH         the whisper-stem to run (default: the whisper-stem in
#                          this script's directory (installed), else whisper-stem
#                          on PATH, else ../build/whisper-stem from this script)
#       --progress S       seconds between progress lines in the task logs (default 60)
#       --wait             wait for the merge job, print the summary and exit with
#                          the merge job's status (0: every input ok or skipped)
#   -h, --help             this text
#   -- ...                 the rest: whisper-stem options for every task, e.g.
#                          -- --device cuda --precision bf16 --out-dtype f16
#
#   scripts/slurm-array.sh --merge OUT LIST TASKS
#                          the merge job's work, run by hand: after tasks that
#                          were submitted some other way, or after
#                          scripts/parallel-shards.sh (which runs it)
#
# Exit status: 0 submitted (with --wait: the merge job's status), 1 sbatch or
# the merge failed, 2 usage error. --merge: 0 every input of LIST ok or
# skipped, 1 some failed or were not reached (or the merge failed), 2 usage.
#
# Example (2 GPU tasks on partition gpu, 4 CPUs each):
#   find /data/audio -name '*.wav' > wavs.txt
#   scripts/slurm-array.sh -l wavs.txt -r /data/audio -o /scratch/emb -m ggml-large-v3.gguf \
#       -n 2 -p gpu -G gpu:1 -c 4 -t 4:00:00 -- --device cuda --precision bf16
#   cat /scratch/emb/summary.txt                  # once the merge job has ended
#   scripts/slurm-array.sh -l /scratch/emb/failed.txt -r /data/audio -o /scratch/emb ...   # retry
#
# Tested by tests/corpus/slurm.sh (make corpus) on a one-node Slurm it starts.
set -u

prog=slurm-array.sh
[[ $(basename -- "$0") == whisper-stem-slurm ]] && prog=whisper-stem-slurm

usage_error() {
    echo "$prog: $*" >&2
    echo "$prog: see $prog --help" >&2
    exit 2
}

# The comment block at the top of this file, without its '# '.
show_help() {
    awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"
}

# --- merge: the per-task manifests into one, failed.txt, summary.txt ---------
#
# A manifest line is one JSON object as whisper-stem writes it (cJSON,
# unformatted): {"input":"...","output":"...","status":"ok","error":null,...,
# "time":1764165000.123}. The manifests are appended to, never truncated: each
# submission adds its lines, and an input retried has several. The merge reads
# OUT/manifest.jsonl (the last merge's result) and then every
# OUT/manifest-I.jsonl in the order of I, and keeps, per input, the line with
# the greatest "time" (a line without one counts as 0; ties: the later line),
# so OUT/manifest.jsonl is the union of every submission, each input once.
#
# A line counts only when it is one whole JSON object (the awk below checks
# its syntax token by token) with a string "input" and a "status" ok, skipped
# or failed at its top level: a partial last line (a full disk, a killed
# writer) or two lines run together are warned about on stderr, counted in
# summary.txt and left out. Each file is read on its own (never concatenated),
# so one file's partial last line cannot swallow the next file's first line.
#
# String values are unescaped (\" \\ \/ \b \f \n \r \t \uXXXX with surrogate
# pairs, to UTF-8 bytes; a lone \udc80..\udcff is the byte 80..ff, the way
# whisper-stem writes bytes of a name that are not UTF-8). LC_ALL=C makes awk
# count and print bytes, not characters. Paths reach awk through the
# environment (an argument "a=b" would be an assignment, -v would interpret
# backslashes). The list is read with whisper-stem's rules: a trailing LF,
# then a trailing CR, dropped; empty lines and lines that start with '#'
# skipped; a line seen before is not a second input.
#
# Two passes over the manifests: the first finds each input's newest line (by
# file and line number: memory grows with the inputs, not with the lines'
# size), the second copies those lines, in the order they are found, into the
# new manifest.jsonl. failed.txt and summary.txt describe the inputs of LIST
# only. Every file is written beside its old one and renamed over it, so LIST
# may be OUT/failed.txt itself (a retry) and a reader never sees half a file.
merge() {
    local out=$1 list=$2 tasks=$3 t f i files=() missing=() nums=()
    [[ -d $out ]] || { echo "$prog --merge: $out: not a directory" >&2; return 1; }
    [[ -f $list && -r $list ]] || { echo "$prog --merge: $list: cannot read the list" >&2; return 1; }
    [[ $tasks =~ ^[1-9][0-9]*$ ]] || { echo "$prog --merge: TASKS must be a positive integer, not '$tasks'" >&2; return 2; }
    for ((t = 0; t < tasks; t++)); do
        [[ -f $out/manifest-$t.jsonl ]] || missing+=("$t")
    done
    # every task manifest there, of this submission or an earlier one, by number
    for f in "$out"/manifest-*.jsonl; do
        i=${f##*/manifest-}
        i=${i%.jsonl}
        [[ -f $f && $i =~ ^[0-9]+$ ]] && nums+=("$i")
    done
    if ((${#nums[@]})); then
        while IFS= read -r i; do
            files+=("$out/manifest-$i.jsonl")
        done < <(printf '%s\n' "${nums[@]}" | sort -n)
    fi
    local n_tasks_files=${#files[@]}
    [[ -f $out/manifest.jsonl ]] && files=("$out/manifest.jsonl" "${files[@]}")
    local tmp_m="$out/.manifest.jsonl.$$" tmp_f="$out/.failed.txt.$$" tmp_s="$out/.summary.txt.$$"
    local -a fenv=()
    for ((i = 0; i < ${#files[@]}; i++)); do
        fenv+=("MERGE_FILE_$i=${files[i]}")
    done
    env LC_ALL=C MERGE_N="${#files[@]}" "${fenv[@]}" MERGED_OUT="$tmp_m" FAILED_OUT="$tmp_f" \
        OUT_DIR="$out" LIST_FILE="$list" MISSING_TASKS="${missing[*]:-}" TASKS="$tasks" \
        N_TASK_FILES="$n_tasks_files" PROG="$prog --merge" awk '
    function hexval(s,   i, v) {
        v = 0
        for (i = 1; i <= length(s); i++)
            v = v * 16 + index("0123456789abcdef", tolower(substr(s, i, 1))) - 1
        return v
    }
    function utf8(c) {
        if (c < 128) return sprintf("%c", c)
        if (c < 2048) return sprintf("%c%c", 192 + int(c / 64), 128 + c % 64)
        if (c < 65536) return sprintf("%c%c%c", 224 + int(c / 4096), 128 + int(c / 64) % 64, 128 + c % 64)
        return sprintf("%c%c%c%c", 240 + int(c / 262144), 128 + int(c / 4096) % 64,
                       128 + int(c / 64) % 64, 128 + c % 64)
    }
    # the bytes of a JSON string body (without its quotes)
    function unescape(s,   r, i, c, u, lo) {
        if (index(s, "\\") == 0) return s
        r = ""
        while ((i = index(s, "\\")) > 0) {
            r = r substr(s, 1, i - 1)
            c = substr(s, i + 1, 1)
            if (c == "u") {
                u = hexval(substr(s, i + 2, 4))
                s = substr(s, i + 6)
                if (u >= 55296 && u < 56320 && substr(s, 1, 2) == "\\u") {
                    lo = hexval(substr(s, 3, 4))
                    if (lo >= 56320 && lo < 57344) {
                        u = 65536 + (u - 55296) * 1024 + (lo - 56320)
                        s = substr(s, 7)
                    }
                }
                if (u >= 56448 && u < 56576)    # \udc80..\udcff: a byte that is not UTF-8
                    r = r sprintf("%c", u - 56320)
                else
                    r = r utf8(u)
                continue
            }
            if (c == "n") c = "\n"
            else if (c == "t") c = "\t"
            else if (c == "r") c = "\r"
            else if (c == "b") c = "\b"
            else if (c == "f") c = "\f"
            r = r c
            s = substr(s, i + 2)
        }
        return r s
    }
    # 1 when s is exactly one JSON object (whitespace around it allowed); its
    # top-level members go to top[key] as their raw text for strings, numbers
    # and literals ("" for objects and arrays).
    function parse(s,   d, need, c, tok, key, type) {
        split("", top)
        d = 0; need = "top"; key = ""
        while (1) {
            c = substr(s, 1, 1)
            if (c == " " || c == "\t" || c == "\r") {
                match(s, /^[ \t\r]+/)
                s = substr(s, RLENGTH + 1)
                continue
            }
            if (c == "") break
            if (c == "\"") {
                if (!match(s, /^"([^"\\]|\\.)*"/)) return 0
                tok = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1)
                if (need == "key" || need == "key_or_close") {
                    if (d == 1) key = unescape(substr(tok, 2, length(tok) - 2))
                    need = "colon"
                    continue
                }
            } else if (c == "-" || (c >= "0" && c <= "9")) {
                if (!match(s, /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/)) return 0
                tok = substr(s, 1, RLENGTH); s = substr(s, RLENGTH + 1)
            } else if (c == "t" || c == "n" || c == "f") {
                tok = substr(s, 1, c == "f" ? 5 : 4)
                if (tok != "true" && tok != "null" && tok != "false") return 0
                s = substr(s, length(tok) + 1)
            } else {
                s = substr(s, 2)
                if (c == ":") {
                    if (need != "colon") return 0
                    need = "value"
                } else if (c == ",") {
                    if (need != "next") return 0
                    need = type[d] == "{" ? "key" : "value"
                } else if (c == "}" || c == "]") {
                    if (!(need == "next" || (c == "}" && need == "key_or_close") ||
                          (c == "]" && need == "value_or_close")) || type[d] != (c == "}" ? "{" : "["))
                        return 0
                    d--
                    need = d ? "next" : "end"
                } else if (c == "{" || c == "[") {
                    if (!(need == "value" || need == "value_or_close" || (need == "top" && c == "{")))
                        return 0
                    if (d == 1) top[key] = ""
                    type[++d] = c
                    if (d > 64) return 0
                    need = c == "{" ? "key_or_close" : "value_or_close"
                } else
                    return 0
                continue
            }
            # a string, number or literal as a value
            if (need != "value" && need != "value_or_close") return 0
            if (d == 1) top[key] = tok
            need = "next"
        }
        return need == "end"
    }
    # the string member k of the line parsed last, unescaped; got = 0 when it
    # is missing or not a string
    function str(k,   v) {
        got = 0
        if (!(k in top)) return ""
        v = top[k]
        if (substr(v, 1, 1) != "\"") return ""
        got = 1
        return unescape(substr(v, 2, length(v) - 2))
    }
    # s as one word for a POSIX shell
    function shq(s) {
        if (s ~ /^[-A-Za-z0-9_.\/,:+=@%]+$/) return s
        gsub(/\047/, "\047\\\\\047\047", s)
        return "\047" s "\047"
    }
    function warn(msg) {
        if (++warned <= 10) print prog ": " msg > "/dev/stderr"
    }
    BEGIN {
        n_files = ENVIRON["MERGE_N"] + 0
        prog = ENVIRON["PROG"]
        # pass 1: the newest line of each input
        for (f = 0; f < n_files; f++) {
            file = ENVIRON["MERGE_FILE_" f]
            n = 0
            while ((rc = (getline line < file)) > 0) {
                n++
                if (line == "") continue
                ok_line = parse(line)
                if (ok_line) {
                    input = str("input"); has_input = got
                    st = str("status")
                    ok_line = has_input && got && (st == "ok" || st == "skipped" || st == "failed")
                }
                if (!ok_line) {
                    unreadable++
                    warn(file " line " n ": not one whole JSON object with an input and a status" \
                         " (a partial line?): not counted")
                    continue
                }
                t = ("time" in top) && top["time"] ~ /^-?[0-9]/ ? top["time"] + 0 : 0
                if (!(input in at) || t >= time_of[input]) {
                    if (!(input in at)) n_inputs++
                    at[input] = f SUBSEP n
                    time_of[input] = t
                    status_of[input] = st
                    if (st == "failed") {
                        err = str("error")
                        error_of[input] = got && err != "" ? err : "(no error text)"
                    } else
                        delete error_of[input]
                }
            }
            if (rc < 0) {
                print prog ": " file ": cannot read" > "/dev/stderr"
                exit 3
            }
            close(file)
        }
        if (warned > 10)
            print prog ": ... " warned " lines in all not counted" > "/dev/stderr"
        for (input in at) keep[at[input]] = 1
        # pass 2: those lines, in the order they come
        merged = ENVIRON["MERGED_OUT"]
        printf "" > merged
        for (f = 0; f < n_files; f++) {
            file = ENVIRON["MERGE_FILE_" f]
            n = 0
            while ((getline line < file) > 0) {
                n++
                k = f SUBSEP n
                if (k in keep) print line > merged
            }
            close(file)
        }
        if (close(merged) != 0) exit 3

        # the list: each input with its newest status
        failed_out = ENVIRON["FAILED_OUT"]
        printf "" > failed_out
        list_file = ENVIRON["LIST_FILE"]
        while ((rc = (getline line < list_file)) > 0) {
            sub(/\r$/, "", line)
            if (line == "" || substr(line, 1, 1) == "#") continue
            if (line in listed_before) { dups++; continue }
            listed_before[line] = 1
            listed++
            if (!(line in status_of)) {
                unreached++
                st = "not reached"
            } else {
                st = status_of[line]
                count[st]++
            }
            if (st == "failed" || st == "not reached") {
                print line > failed_out
                n_failed_txt++
                if (shown < 10) {
                    shown++
                    # whisper-stem errors start with the input already
                    if (st != "failed")
                        first[shown] = "  " line ": no task reached it"
                    else if (index(error_of[line], line ": ") == 1)
                        first[shown] = "  " error_of[line]
                    else
                        first[shown] = "  " line ": " error_of[line]
                }
            }
        }
        if (rc < 0) {
            print prog ": " list_file ": cannot read" > "/dev/stderr"
            exit 3
        }
        if (close(failed_out) != 0) exit 3

        out_dir = ENVIRON["OUT_DIR"]
        printf "whisper-stem corpus run: %s\n", out_dir
        printf "  list:         %s (%d inputs%s)\n", list_file, listed,
            dups ? sprintf("; %d repeated lines not counted again", dups) : ""
        printf "  ok:           %d\n", count["ok"]
        printf "  skipped:      %d (output there already)\n", count["skipped"]
        printf "  failed:       %d\n", count["failed"]
        printf "  not reached:  %d (in the list, in no manifest: a task was killed, timed out or never started)\n", unreached
        prev = n_files > ENVIRON["N_TASK_FILES"] + 0 ? " and the previous manifest.jsonl" : ""
        printf "  manifest.jsonl: %d inputs, the newest line of each, from %d task manifests%s\n", n_inputs,
            ENVIRON["N_TASK_FILES"], prev
        if (ENVIRON["MISSING_TASKS"] != "")
            printf "  no manifest from task(s) %s of %d\n", ENVIRON["MISSING_TASKS"], ENVIRON["TASKS"]
        if (unreadable)
            printf "  unreadable:   %d (manifest lines that are not one whole JSON object with an input and a status, such as a line cut short by a full disk: not counted)\n", unreadable
        printf "  failed.txt:   %d inputs", n_failed_txt
        if (n_failed_txt)
            printf " (to retry them: the same command with --list %s)", shq(out_dir "/failed.txt")
        printf "\n"
        if (shown) {
            printf "first failures:\n"
            for (i = 1; i <= shown; i++) print first[i]
        }
        exit n_failed_txt ? 1 : 0
    }' > "$tmp_s"
    local rc=$?
    if ((rc > 1)) || [[ ! -f $tmp_f || ! -f $tmp_m ]]; then
        echo "$prog --merge: the merge failed (awk status $rc); nothing was replaced" >&2
        rm -f -- "$tmp_m" "$tmp_f" "$tmp_s"
        return 1
    fi
    mv -f -- "$tmp_m" "$out/manifest.jsonl" && mv -f -- "$tmp_f" "$out/failed.txt" &&
        mv -f -- "$tmp_s" "$out/summary.txt" || return 1
    cat -- "$out/summary.txt"
    return "$rc"
}

# A manifest whose last line has no newline (cut short by a full disk or a
# kill) gets one, so that the next line appended starts a line of its own.
end_line() {
    if [[ -s $1 ]] && (($(tail -c 1 -- "$1" | wc -l) == 0)); then
        printf '\n' >> "$1"
    fi
}

# --- one array task -----------------------------------------------------------
# argv: BIN LIST ROOT OUT MODEL TASKS PROGRESS [WHISPER-STEM OPTIONS...]
task() {
    if [[ -z ${SLURM_ARRAY_TASK_ID:-} || -z ${SLURM_ARRAY_TASK_COUNT:-} ]]; then
        echo "$prog --task: runs only as a task of the array job $prog submits" >&2
        exit 2
    fi
    local bin=$1 list=$2 root=$3 out=$4 model=$5 tasks=$6 progress=$7
    shift 7
    local i=$SLURM_ARRAY_TASK_ID n=$SLURM_ARRAY_TASK_COUNT
    if [[ $n != "$tasks" ]]; then
        echo "$prog: this array has $n tasks, the submission asked for $tasks: the shards would not cover the list" >&2
        exit 2
    fi
    local threads=() a
    if [[ -n ${SLURM_CPUS_PER_TASK:-} ]]; then
        threads=(--threads "$SLURM_CPUS_PER_TASK")
        for a in "$@"; do
            [[ $a == --threads || $a == --threads=* ]] && threads=()
        done
    fi
    end_line "$out/manifest-$i.jsonl" || exit 1
    local cmd=("$bin" --list "$list" --root "$root" -O "$out" --shard "$i/$n" --skip-existing
               --manifest "$out/manifest-$i.jsonl" --progress "$progress" -m "$model"
               "${threads[@]}" "$@")
    echo "$prog: task $i of $n on $(hostname) in $PWD:$(printf ' %q' "${cmd[@]}")"
    exec "${cmd[@]}"
}

# --- submission ---------------------------------------------------------------
abspath() {
    local d
    d=$(cd "$(dirname -- "$1")" && pwd) || return 1
    printf '%s/%s\n' "$d" "$(basename -- "$1")"
}

submit() {
    local list="" out="" root="" model=${WHISPER_STEM_MODEL:-} tasks="" bin="" progress=60
    local max_parallel="" job_name=whisper-stem wait=0 threads_from=""
    local task_opts=() both_opts=() merge_opts=() stem_opts=()
    local opt val
    while (($#)); do
        opt=$1
        val=""
        case $opt in
            --) shift; stem_opts=("$@"); break ;;
            -h|--help) show_help; exit 0 ;;
            --wait) wait=1; shift; continue ;;
            --*=*) val=${opt#*=}; opt=${opt%%=*} ;;
            -l|-o|-r|-m|-n|-p|-A|-t|-c|-G|-J|--list|--out|--root|--model|--tasks|--partition|\
            --account|--time|--cpus-per-task|--gres|--mem|--max-parallel|--job-name|--sbatch|\
            --merge-sbatch|--bin|--progress)
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
            -n|--tasks) tasks=$val ;;
            -p|--partition) both_opts+=("--partition=$val") ;;
            -A|--account) both_opts+=("--account=$val") ;;
            -t|--time) task_opts+=("--time=$val") ;;
            -c|--cpus-per-task) task_opts+=("--cpus-per-task=$val"); threads_from=$val ;;
            -G|--gres) task_opts+=("--gres=$val") ;;
            --mem) task_opts+=("--mem=$val") ;;
            --max-parallel) max_parallel=$val ;;
            -J|--job-name) job_name=$val ;;
            --sbatch) task_opts+=("$val") ;;
            --merge-sbatch) merge_opts+=("$val") ;;
            --bin) bin=$val ;;
            --progress) progress=$val ;;
            *) usage_error "unknown option '$opt' (whisper-stem options go after --)" ;;
        esac
    done

    [[ -n $list ]] || usage_error "no list: -l FILE"
    [[ -n $out ]] || usage_error "no output directory: -o DIR"
    [[ -n $root ]] || usage_error "no root: -r DIR (OUT mirrors the tree under it)"
    [[ -n $model ]] || usage_error "no model: -m FILE or WHISPER_STEM_MODEL"
    [[ -n $tasks ]] || usage_error "no task count: -n N"
    [[ $tasks =~ ^[1-9][0-9]*$ ]] || usage_error "-n must be a positive integer, not '$tasks'"
    [[ -z $max_parallel || $max_parallel =~ ^[1-9][0-9]*$ ]] ||
        usage_error "--max-parallel must be a positive integer, not '$max_parallel'"
    [[ -z $threads_from || $threads_from =~ ^[1-9][0-9]*$ ]] ||
        usage_error "-c must be a positive integer, not '$threads_from'"
    [[ $list != - ]] || usage_error "-l -: the tasks read the list later, on other nodes; give a file"
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
    [[ $out != *\\* ]] || usage_error "$out: a backslash in OUT would stop sbatch from naming the logs (%A, %a, %j)"
    model=$(abspath "$model")
    command -v sbatch >/dev/null 2>&1 || { echo "$prog: sbatch not found: is this a Slurm login node?" >&2; exit 1; }

    if [[ -z $bin ]]; then
        local here
        here=$(dirname -- "$0")
        if [[ -x $here/whisper-stem && ! -d $here/whisper-stem ]]; then
            bin=$here/whisper-stem
        else
            bin=$(command -v whisper-stem 2>/dev/null) || bin=$here/../build/whisper-stem
        fi
    fi
    [[ -x $bin && ! -d $bin ]] || usage_error "$bin: no whisper-stem binary there (--bin PATH)"
    bin=$(abspath "$bin")
    if ! "$bin" --help 2>&1 | grep -q -- '--shard'; then
        echo "$prog: $bin has no --shard option: a newer whisper-stem is needed" >&2
        exit 1
    fi

    local n_inputs
    n_inputs=$(LC_ALL=C awk '{ sub(/\r$/, "") } $0 != "" && substr($0, 1, 1) != "#" { n++ } END { print n + 0 }' "$list")
    if ((n_inputs == 0)); then
        echo "$prog: $list names no inputs" >&2
        exit 1
    fi
    if ((tasks > n_inputs)); then
        echo "$prog: warning: $tasks tasks for $n_inputs inputs: $((tasks - n_inputs)) tasks get none" >&2
    fi

    mkdir -p -- "$out/slurm-logs" || exit 1
    # sbatch expands %A, %a, %j ... in --output: a '%' of OUT is written '%%'
    local logs=${out//%/%%}/slurm-logs
    local self
    self=$(abspath "$0") || exit 1
    local array="0-$((tasks - 1))${max_parallel:+%$max_parallel}"
    local array_id
    array_id=$(sbatch --parsable --job-name="$job_name" --array="$array" --ntasks=1 \
        --output="$logs/task-%A_%a.log" "${both_opts[@]}" "${task_opts[@]}" \
        "$self" --task "$bin" "$list" "$root" "$out" "$model" "$tasks" "$progress" \
        "${stem_opts[@]}") || { echo "$prog: sbatch refused the array job" >&2; exit 1; }
    array_id=${array_id%%;*} # "id;cluster" on multi-cluster sites
    echo "$prog: array job $array_id: $tasks tasks over $n_inputs inputs of $list"

    local merge_cmd=(sbatch --job-name="$job_name-merge" --dependency="afterany:$array_id"
        --ntasks=1 --cpus-per-task=1 --time=30:00 --output="$logs/merge-%j.log"
        "${both_opts[@]}" "${merge_opts[@]}")
    if ((wait)); then
        echo "$prog: merge job after it (afterany:$array_id); waiting for both"
        "${merge_cmd[@]}" --wait "$self" --merge "$out" "$list" "$tasks"
        local rc=$?
        if [[ -f $out/summary.txt ]]; then
            cat "$out/summary.txt"
        else
            echo "$prog: the merge job wrote no $out/summary.txt (sbatch --wait: status $rc); see $out/slurm-logs/" >&2
            ((rc)) || rc=1
        fi
        exit "$rc"
    fi
    local merge_id
    merge_id=$("${merge_cmd[@]}" --parsable "$self" --merge "$out" "$list" "$tasks") || {
        echo "$prog: sbatch refused the merge job; the array job $array_id runs anyway:" \
            "merge by hand once it has ended: $self --merge $out $list $tasks" >&2
        exit 1
    }
    merge_id=${merge_id%%;*}
    echo "$prog: merge job $merge_id after it (afterany:$array_id)"
    echo "$prog: watch: squeue -j $array_id,$merge_id; logs: $out/slurm-logs/"
    echo "$prog: when it has ended: $out/summary.txt, $out/manifest.jsonl, $out/failed.txt"
}

case ${1:-} in
    --task) shift; task "$@" ;;
    --merge)
        (($# == 4)) || usage_error "--merge takes OUT LIST TASKS"
        merge "$2" "$3" "$4"
        exit $? ;;
    *) submit "$@" ;;
esac

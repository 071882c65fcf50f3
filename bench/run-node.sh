#!/bin/bash
# run-node.sh - whole-node throughput: whisper-stem beside the batched PyTorch
# pipeline (bench/node_torch.py) on the same inputs, whole commands timed.
#
# For each case both tools run on the same list, to a tmpfs directory and to
# a local-disk directory (df -T says which filesystem each is), the outputs
# removed between runs, after a warm-up run of each tool (JIT cache, cuDNN,
# page cache; the inputs are read once before too). Each timed run goes
# through bench/node_time.py: wall seconds of the whole command, CPU busy
# (CPU time of the command and its children / wall / CPUs), GPU busy (mean of
# nvidia-smi -lms 100 samples; null without nvidia-smi or with NODE_DEVICE=cpu).
# Before the cases, a sanity check of the peer: both tools in fp32 on the first
# two files of each data set, max |difference| of the outputs (16 kHz WAV: must be
# < 1e-3; the 44.1 kHz FLAC goes through two different resamplers, shown only).
#
# Output under $OUT: table.md (one markdown table), node.jsonl (the raw JSON
# lines: ours from node_time.py, PyTorch's from node_time.py with its own line
# as "self"), check.txt, logs; the table and the JSON lines also on stdout.
# Exit status 1 when a run failed or the check did.
#
#   BIN          whisper-stem (default build/whisper-stem)
#   MKMODEL      ws-mkmodel (default: next to BIN)
#   PYTHON       a Python 3 with numpy and torch (default python3)
#   OUT          results directory (default /tmp/ws-node-out)
#   NODE_DATA    inputs, made by bench/node_data.py and kept (default /tmp/ws-node-data)
#   NODE_FILES   30 s 16 kHz WAV files (default 1024)
#   NODE_FLAC    10 min 44.1 kHz FLAC files (default 50: the spec's 200 scaled to fit ~8 min)
#   NODE_FLAC_SECONDS  length of each FLAC file (default 600)
#   NODE_CASES   cases, each [flac-]SIZE-PRECISION[-f16] (SIZE: tiny base small medium
#                large large-v3; PRECISION fp32 bf16; -f16: --out-dtype f16; flac-: the
#                FLAC set, else the WAV set) (default: tiny-fp32 tiny-bf16
#                large-v3-bf16 tiny-bf16-f16 flac-tiny-fp32)
#   NODE_TARGETS tmpfs disk (default both)
#   NODE_TMPFS   tmpfs output directory (default /dev/shm/ws-node)
#   NODE_DISK    local-disk output directory (default /tmp/ws-node-disk)
#   NODE_TOOLS   ours torch [torch-fsync] (default "ours torch"; torch-fsync: the
#                PyTorch pipeline fsyncing every output, as whisper-stem does)
#   NODE_DEVICE  cuda or cpu (default cuda)
#   NODE_PAD     mel0 (openai's log_mel_spectrogram(audio, padding=N_SAMPLES) + 3000-frame
#                windows, as transcribe()) or audio (whisper-stem's default; default audio); both
#                tools get it
#   NODE_WARMUP  files in each warm-up run (default 64; 0: the whole list)
#   NODE_MEL_DEVICE  passed to whisper-stem as --mel-device when its --help lists
#                the option (default: NODE_DEVICE)
#   NODE_TORCH_ARGS  extra arguments for node_torch.py (e.g. "--batch 32 --files 8")
#
# Short run on a CPU-only machine:
#   NODE_FILES=8 NODE_FLAC=1 NODE_DEVICE=cpu bench/run-node.sh
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s)
BIN=${BIN:-build/whisper-stem}
MKMODEL=${MKMODEL:-$(dirname "$BIN")/ws-mkmodel}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-/tmp/ws-node-out}
DATA=${NODE_DATA:-/tmp/ws-node-data}
NFILES=${NODE_FILES:-1024}
NFLAC=${NODE_FLAC:-50}
FLACSEC=${NODE_FLAC_SECONDS:-600}
CASES=${NODE_CASES:-tiny-fp32 tiny-bf16 large-v3-bf16 tiny-bf16-f16 flac-tiny-fp32}
TARGETS=${NODE_TARGETS:-tmpfs disk}
TMPFS=${NODE_TMPFS:-/dev/shm/ws-node}
DISK=${NODE_DISK:-/tmp/ws-node-disk}
TOOLS=${NODE_TOOLS:-ours torch}
DEV=${NODE_DEVICE:-cuda}
PAD=${NODE_PAD:-audio}
WARM=${NODE_WARMUP:-64}
MELDEV=${NODE_MEL_DEVICE:-$DEV}
TARGS=${NODE_TORCH_ARGS:-}
GPUFLAG=; [ "$DEV" != cpu ] && GPUFLAG=--gpu

case $BIN in /*) ;; *) BIN=$PWD/$BIN ;; esac
case $MKMODEL in /*) ;; *) MKMODEL=$PWD/$MKMODEL ;; esac
[ -x "$BIN" ] || { echo "run-node.sh: no whisper-stem at $BIN (set BIN)" >&2; exit 2; }
[ -x "$MKMODEL" ] || { echo "run-node.sh: no ws-mkmodel at $MKMODEL (set MKMODEL)" >&2; exit 2; }
mkdir -p "$OUT" "$DATA/models" "$TMPFS" "$DISK" || exit 2
J=$OUT/node.jsonl; : >"$J"; : >"$OUT/check.txt"; LOG=$OUT/node.log; : >"$LOG"

ours_extra=()
if "$BIN" --help 2>&1 | grep -q -- '--mel-device'; then
    ours_extra=(--mel-device "$MELDEV"); meldev_note="--mel-device $MELDEV"
else
    meldev_note="no --mel-device option in this binary"
fi

echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# host $(hostname), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM"
if [ "$DEV" != cpu ] && command -v nvidia-smi >/dev/null; then
    echo "# device $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
else
    echo "# device $DEV (no GPU busy numbers)"
fi
echo "# whisper-stem: $("$BIN" --version 2>&1) ($BIN; $meldev_note)"
echo "# pytorch: $("$PYTHON" -c 'import torch; print(torch.__version__)' 2>&1 | tail -1)"
declare -A FS
for t in $TARGETS; do
    case $t in tmpfs) d=$TMPFS ;; disk) d=$DISK ;; *) echo "run-node.sh: unknown target $t" >&2; exit 2 ;; esac
    FS[$t]=$(df -T "$d" | awk 'NR == 2 {print $2}')
    echo "# target $t: $d ($(df -T "$d" | awk 'NR == 2 {print $2 " on " $1 ", " $7}'))"
done
[ "$NFLAC" -lt 200 ] && echo "# FLAC set scaled: $NFLAC x ${FLACSEC} s files (the spec: 200 x 600 s; NODE_FLAC=200 for it)"
echo "# pad $PAD, positional embedding added (--pos), models: ws-mkmodel random F32 weights"
echo "# whisper-stem fsyncs every output and its directory; the PyTorch rows use plain np.save (page cache) unless tool torch-fsync"

# ---- data and models
need_flac=0; for c in $CASES; do case $c in flac-*) need_flac=1 ;; esac; done
fl=0; [ $need_flac = 1 ] && fl=$NFLAC
# a FLAC writer of last resort: the libsndfile next to the binary (a bundle's)
[ -z "${NODE_SNDFILE:-}" ] && [ -e "$(dirname "$BIN")/lib/libsndfile.so.1" ] &&
    export NODE_SNDFILE="$(dirname "$BIN")/lib/libsndfile.so.1"
"$PYTHON" bench/node_data.py "$DATA" --wav "$NFILES" --flac "$fl" --flac-seconds "$FLACSEC" 2>&1 | sed 's/^/# /'
model() { # size -> path
    local f=$DATA/models/$1.gguf
    [ -s "$f" ] || "$MKMODEL" --size "$1" --pos -o "$f" >>"$LOG" 2>&1 || { echo "run-node.sh: ws-mkmodel --size $1 failed" >&2; exit 1; }
    echo "$f"
}

ours_cmd() { # model prec odt list outdir
    echo "$BIN" -m "$1" --device "$DEV" --precision "$2" --out-dtype "$3" --pad "$PAD" --pos \
        "${ours_extra[@]}" --list "$4" -O "$5" -q
}
torch_cmd() { # model prec odt list outdir [--fsync]
    echo "$PYTHON" bench/node_torch.py -m "$1" --device "$DEV" --precision "$2" --out-dtype "$3" \
        --pad "$PAD" --pos --list "$4" -O "$5" $TARGS ${6:-}
}
tool_cmd() { # tool model prec odt list outdir
    case $1 in
    ours) ours_cmd "$2" "$3" "$4" "$5" "$6" ;;
    torch) torch_cmd "$2" "$3" "$4" "$5" "$6" ;;
    torch-fsync) torch_cmd "$2" "$3" "$4" "$5" "$6" --fsync ;;
    *) echo "run-node.sh: unknown tool $1" >&2; exit 2 ;;
    esac
}

# ---- sanity check of the peer: fp32, first two files of each set
check_set() { # list label limit
    local l=$OUT/check-$2.list m; m=$(model tiny)
    head -2 "$1" >"$l"
    rm -rf "$TMPFS/chk-ours" "$TMPFS/chk-torch"
    $(ours_cmd "$m" fp32 f32 "$l" "$TMPFS/chk-ours") >>"$LOG" 2>&1
    $(torch_cmd "$m" fp32 f32 "$l" "$TMPFS/chk-torch") 2>>"$LOG" >"$OUT/check-$2.json"
    "$PYTHON" -c '
import json, sys
try:
    r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
    dec, res, wk = r["decoder"], r["resampler"], r["workers"]
    print(f"# PyTorch pipeline on {sys.argv[2]}: decoder {dec}, resampler {res}, {wk} DataLoader workers")
except Exception:
    print(f"# PyTorch pipeline on {sys.argv[2]}: FAILED (see the log)")' "$OUT/check-$2.json" "$2" | tee -a "$OUT/check.txt"
    "$PYTHON" - "$TMPFS/chk-ours" "$TMPFS/chk-torch" "$l" "$2" "$3" <<'EOF' | tee -a "$OUT/check.txt"
import os, sys
import numpy as np
ours, theirs, lst, label, limit = sys.argv[1:6]
worst = 0.0
for p in open(lst).read().split():
    n = os.path.splitext(os.path.basename(p))[0] + ".npy"
    try:
        a, b = np.load(os.path.join(ours, n)), np.load(os.path.join(theirs, n))
    except OSError as e:
        print(f"# check {label}: {n}: missing output ({e})"); worst = float("inf"); continue
    if a.shape != b.shape:
        print(f"# check {label}: {n}: shapes differ: whisper-stem {a.shape}, PyTorch {b.shape}")
        worst = float("inf"); continue
    d = float(np.abs(a - b).max()); worst = max(worst, d)
    print(f"# check {label} fp32 {n}: shape {a.shape}, max |whisper-stem - PyTorch| {d:.2e}")
if limit != "-":
    print(f"# check {label}: {'ok' if worst < float(limit) else 'FAILED'} (max {worst:.2e}, limit {limit})")
else:
    print(f"# check {label}: max {worst:.2e} (different resamplers: shown, not held to 1e-3)")
EOF
    rm -rf "$TMPFS/chk-ours" "$TMPFS/chk-torch"
}
check_set "$DATA/wav.list" wav-16k 1e-3
[ $need_flac = 1 ] && [ -s "$DATA/flac.list" ] && check_set "$DATA/flac.list" flac-44k -

# ---- cases
for c in $CASES; do
    if ! [[ $c =~ ^(flac-)?(tiny|base|small|medium|large|large-v3)-(fp32|bf16)(-f16)?$ ]]; then
        echo "run-node.sh: bad case $c (want [flac-]SIZE-fp32|bf16[-f16])" >&2; exit 2
    fi
    size=${BASH_REMATCH[2]} prec=${BASH_REMATCH[3]} odt=f32
    [ -n "${BASH_REMATCH[4]}" ] && odt=f16
    if [ -n "${BASH_REMATCH[1]}" ]; then
        list=$DATA/flac.list
        [ -s "$list" ] || { echo "# $c: skipped (no FLAC set: see node_data.py above)"; continue; }
        secs=$FLACSEC
    else
        list=$DATA/wav.list secs=30
    fi
    m=$(model "$size")
    n=$(grep -c . "$list")
    audio=$(awk -v n="$n" -v s="$secs" 'BEGIN {print n * s}')
    cat $(cat "$list") >/dev/null                 # page cache
    wl=$OUT/warm.list
    if [ "$WARM" -gt 0 ]; then head -n "$WARM" "$list" >"$wl"; else cp "$list" "$wl"; fi
    for tool in $TOOLS; do
        rm -rf "$TMPFS/warm"
        $(tool_cmd "$tool" "$m" "$prec" "$odt" "$wl" "$TMPFS/warm") >>"$LOG" 2>&1 \
            || echo "# $c $tool: warm-up failed (see $LOG)"
        rm -rf "$TMPFS/warm"
    done
    # outputs of one run: files x windows x 1500 x d x 4 (or 2) bytes; a target without
    # room for them (a container's small /dev/shm) is skipped, and says so
    dm=$(case $size in tiny) echo 384 ;; base) echo 512 ;; small) echo 768 ;; medium) echo 1024 ;; *) echo 1280 ;; esac)
    need_mb=$(awk -v n="$n" -v s="$secs" -v d="$dm" -v b="$([ $odt = f16 ] && echo 2 || echo 4)" \
        'BEGIN { w = int((s * 100 + 2999) / 3000); if (w < 1) w = 1; printf "%d", n * w * 1500 * d * b * 1.05 / 1048576 + 1 }')
    for t in $TARGETS; do
        case $t in tmpfs) d=$TMPFS/out ;; disk) d=$DISK/out ;; esac
        free_mb=$(df -Pm "$(dirname "$d")" | awk 'NR == 2 {print $4}')
        if [ "$free_mb" -lt "$need_mb" ]; then
            echo "# $c $t: skipped: the outputs need ${need_mb} MiB, $(dirname "$d") has ${free_mb} MiB free"
            continue
        fi
        for tool in $TOOLS; do
            rm -rf "$d"; sync
            line=$("$PYTHON" bench/node_time.py $GPUFLAG --tag "$c" -- $(tool_cmd "$tool" "$m" "$prec" "$odt" "$list" "$d") 2>>"$LOG.$tool")
            self=$(grep '^{"tool": "pytorch"' "$LOG.$tool" 2>/dev/null | tail -1)
            cat "$LOG.$tool" >>"$LOG"; : >"$LOG.$tool"
            outs=$(find "$d" -name '*.npy' 2>/dev/null | wc -l)
            "$PYTHON" -c '
import json, sys
r = json.loads(sys.argv[1] or "{}")
r.update(case=sys.argv[2], target=sys.argv[3], fs=sys.argv[4], tool=sys.argv[5], files=int(sys.argv[6]),
         audio_s=float(sys.argv[7]), outputs=int(sys.argv[8]))
if sys.argv[9]:
    r["self"] = json.loads(sys.argv[9])
print(json.dumps(r))' "$line" "$c" "$t" "${FS[$t]}" "$tool" "$n" "$audio" "$outs" "$self" >>"$J"
            rm -rf "$d"
        done
    done
    echo "# $c done at +$(( $(date +%s) - T0 )) s" >&2
done

# ---- the table
"$PYTHON" - "$J" <<'EOF' | tee "$OUT/table.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
name = {"ours": "whisper-stem", "torch": "PyTorch", "torch-fsync": "PyTorch + fsync"}
print("| case | target | tool | files/s | x real time | CPU busy % | GPU busy % | ours / PyTorch |")
print("|---|---|---|---|---|---|---|---|")
fmt = lambda v: "-" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)
for r in rows:
    ok = r.get("rc") == 0 and r.get("outputs") == r["files"]
    w = r.get("wall_s")
    fps = r["files"] / w if ok and w else None
    xrt = r["audio_s"] / w if ok and w else None
    ratio = ""
    if r["tool"] == "ours" and fps:
        for q in rows:
            if q["case"] == r["case"] and q["target"] == r["target"] and q["tool"] == "torch" \
                    and q.get("rc") == 0 and q.get("outputs") == q["files"] and q.get("wall_s"):
                ratio = f"{q['wall_s'] / w:.2f}x"
    status = "" if ok else f" (FAILED: rc {r.get('rc')}, {r.get('outputs')} of {r['files']} outputs)"
    print(f"| {r['case']} | {r['target']} ({r['fs']}) | {name.get(r['tool'], r['tool'])}{status} | "
          f"{'-' if fps is None else f'{fps:.1f}'} | {'-' if xrt is None else f'{xrt:.0f}'} | "
          f"{fmt(r.get('cpu_busy_pct'))} | {fmt(r.get('gpu_busy_pct'))} | {ratio} |")
EOF
echo
echo "# files/s and x real time: files and audio seconds / wall seconds of the whole command (start-up included);"
echo "# ours / PyTorch: PyTorch wall / whisper-stem wall on the same case and target; raw lines in $J:"
cat "$J"
echo "# total $(( $(date +%s) - T0 )) s"
# exit 1 when a run failed or the peer's check did
! grep -q FAILED "$OUT/table.md" "$OUT/check.txt"

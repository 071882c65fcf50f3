#!/usr/bin/env bash
# docs/conv-engine.md's speed table on a GPU machine, in one call: bench-conv_gpu (the conv
# engine's GPU backend, each row checked against the CPU engine) and bench/conv_gpu_torch.py
# (PyTorch + cuDNN) on the same rows, then bench-gpu_stem and bench/gpu_torch.py for the
# Whisper tiny stem row (64 windows a launch), joined into one markdown table, printed last;
# then bench-conv_pair_gpu (the ResConv1D block as one kernel against its two calls; beside
# BIN, when ONLY is unset or names resblock/jukebox), its table as it prints it.
#   bench/run-conv-gpu.sh [ITERS]        (default 50 timed runs per case)
# Environment:
#   BIN       bench-conv_gpu (default ${BUILD:-build}/bench-conv_gpu)
#   STEM_BIN  bench-gpu_stem (default: beside BIN; the stem row is left out when missing)
#   PYTHON    a Python 3 with torch (default python3)
#   OUT       where the JSON, text and logs go (default /tmp/ws-conv-gpu)
#   ONLY      passed as --only to both benches (a substring of case/layout/type,
#             e.g. dw_fwd_n4/nlc/bf16); the stem row runs only when ONLY is unset
#   QUICK=1   small shapes (--quick), for a smoke run; DEVICE=cpu runs the PyTorch side
#             on the CPU (with QUICK=1 this script's logic runs on a machine without a GPU)
# Exit: 77 when bench-conv_gpu finds no GPU (one line says so); 1 when a check failed or a
# bench erred; else 0.
set -uo pipefail
cd "$(dirname "$0")/.."
ITERS=${1:-50}
BIN=${BIN:-${BUILD:-build}/bench-conv_gpu}
STEM_BIN=${STEM_BIN:-$(dirname "$BIN")/bench-gpu_stem}
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/ws-conv-gpu}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT"
q=()
[ "${QUICK:-0}" = 1 ] && q=(--quick)
only=()
[ -n "${ONLY:-}" ] && only=(--only "$ONLY")
status=0

"$BIN" --iters "$ITERS" --json "$OUT/conv-ours.json" "${only[@]}" "${q[@]}" >"$OUT/conv-ours.txt" 2>"$OUT/conv-ours.err"
rc=$?
cat "$OUT/conv-ours.txt"
if [ $rc = 77 ]; then
    [ "$DEVICE" = cpu ] || exit 77
    # a smoke run without a GPU: an empty "ours" side
    echo "[]" >"$OUT/conv-ours.json"
elif [ $rc != 0 ]; then
    echo "run-conv-gpu.sh: bench-conv_gpu exited $rc ($OUT/conv-ours.err):" >&2
    tail -5 "$OUT/conv-ours.err" >&2
    status=1
fi
PYTHONUNBUFFERED=1 "$PY" bench/conv_gpu_torch.py --iters "$ITERS" --json "$OUT/conv-torch.json" \
    --device "$DEVICE" "${only[@]}" "${q[@]}" >"$OUT/conv-torch.txt" 2>&1 || {
    echo "run-conv-gpu.sh: bench/conv_gpu_torch.py failed ($OUT/conv-torch.txt):" >&2
    tail -5 "$OUT/conv-torch.txt" >&2
    echo "[]" >"$OUT/conv-torch.json"
    status=1
}
cat "$OUT/conv-torch.txt"
rm -f "$OUT/stem-ours.txt" "$OUT/stem-torch.txt"
if [ -z "${ONLY:-}" ] && [ "$DEVICE" = cuda ] && [ -x "$STEM_BIN" ]; then
    "$STEM_BIN" --iters "$ITERS" --only tiny --win 64 >"$OUT/stem-ours.txt" 2>"$OUT/stem-ours.err" || status=1
    PYTHONUNBUFFERED=1 "$PY" bench/gpu_torch.py --iters "$ITERS" --only tiny >"$OUT/stem-torch.txt" 2>&1 || status=1
fi
PAIR_BIN=$(dirname "$BIN")/bench-conv_pair_gpu
case "${ONLY:-resblock}" in
*resblock* | *jukebox*)
    if [ "$DEVICE" = cuda ] && [ -x "$PAIR_BIN" ]; then
        "$PAIR_BIN" --iters "$ITERS" ${ONLY:+--only "$ONLY"} >"$OUT/pair-ours.txt" 2>"$OUT/pair-ours.err" || status=1
    fi
    ;;
esac

echo
echo "date: $(date -u '+%F %H:%M') UTC  device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)  iters: $ITERS"
OUT=$OUT "$PY" - <<'EOF' || status=1
import json, os
out = os.environ["OUT"]
ours = json.load(open(f"{out}/conv-ours.json"))
torch = json.load(open(f"{out}/conv-torch.json"))
T = {(r["case"], r["layout"], r["dtype"]): r for r in torch}
O = {(r["case"], r["layout"], r["dtype"]): r for r in ours}
keys = []
for r in ours + torch:  # rows in the benches' order
    k = (r["case"], r["layout"])
    if k not in keys:
        keys.append(k)
what = {(r["case"], r["layout"]): r["what"] for r in torch + ours}
must = {(r["case"], r["layout"], r["dtype"]): r["must_us"] for r in ours}

def us(d, k):
    return f"{d[k]['us']:.1f}" if k in d else "-"

def stem(path):  # "tiny <prec> 64 <us/launch> <us/window> ..." -> {prec: us/window}
    v = {}
    if os.path.exists(path):
        for line in open(path):
            f = line.split()
            if len(f) >= 5 and f[0] == "tiny" and f[2] == "64":
                try:
                    v[f[1]] = float(f[4])
                except ValueError:
                    pass
    return v

print("| case | ours fp32 | PyTorch fp32 | ours tf32 | PyTorch tf32 | ours bf16 | PyTorch bf16 | must-reach | ratio (PyTorch/ours) | rel L2 vs CPU (fp32 / tf32 / bf16) |")
print("|---|---|---|---|---|---|---|---|---|---|")
fails = []
for case, lay in keys:
    name = what[(case, lay)] + (", " + lay.upper() if (case, "nlc") in what else "")
    mr, ra, rel = [], [], []
    for dt in ("fp32", "tf32", "bf16"):
        k = (case, lay, dt)
        m = must.get(k, 0)
        if m:
            s = f"{dt} <= {m:.0f}"
            if k in O:
                s += " met" if O[k]["us"] <= m else f" missed by {100 * (O[k]['us'] / m - 1):.0f} %"
            mr.append(s)
        if k in O and k in T:
            ra.append(f"{dt} {T[k]['us'] / O[k]['us']:.2f}x")
        if k in O:
            c = O[k]
            if c["check"] == "skipped":
                rel.append("-")
            else:  # rel_l2 null: NaN
                rel.append(("NaN" if c["rel_l2"] is None else f"{c['rel_l2']:.1e}")
                           + ("" if c["check"] == "ok" else " FAIL")
                           + (f" (n={c['checked_n']})" if c["checked_n"] != c["n"] else ""))
            if c["check"] == "FAIL":
                fails.append("/".join(k))
        elif any((case, lay, d) in O for d in ("fp32", "tf32", "bf16")):
            rel.append("-")  # one slot per type: "fp32 / tf32 / bf16"
    print(f"| {name} | {us(O, (case, lay, 'fp32'))} | {us(T, (case, lay, 'fp32'))} | {us(O, (case, lay, 'tf32'))} "
          f"| {us(T, (case, lay, 'tf32'))} | {us(O, (case, lay, 'bf16'))} | {us(T, (case, lay, 'bf16'))} | {'; '.join(mr) or '-'} | {'; '.join(ra) or '-'} | {' / '.join(rel) or '-'} |")
so, st = stem(f"{out}/stem-ours.txt"), stem(f"{out}/stem-torch.txt")
if so or st:
    f = lambda d, p: f"{d[p]:.2f}" if p in d else "-"
    today = {"fp32": 43.7, "bf16": 9.43}
    mr = "; ".join(f"{p} <= {today[p]}" + ("" if p not in so else " met" if so[p] <= today[p] else f" missed by {100 * (so[p] / today[p] - 1):.0f} %") for p in today)
    ra = "; ".join(f"{p} {st[p] / so[p]:.2f}x" for p in today if p in so and p in st) or "-"
    print(f"| Whisper tiny stem, N64 windows, us per window (bench-gpu_stem: the stem's two engine plans) | {f(so, 'fp32')} | {f(st, 'fp32')} "
          f"| - | - | {f(so, 'bf16')} | {f(st, 'bf16')} | {mr} | {ra} | - (the suite's gpu_* tests) |")
print()
print("us per call, kernel-only medians (CUDA events); a row of several calls: ours = the median of per-iteration sums of its calls' times "
      "(no launch gaps), PyTorch = the whole sequence between two events. Floors and achieved GB/s, TFLOP/s: "
      "conv-ours.txt beside the JSON.")
if fails:
    print("CHECK FAILED: " + ", ".join(fails))
    raise SystemExit(1)
EOF
if [ -s "$OUT/pair-ours.txt" ]; then
    echo
    echo "The ResConv1D block as one kernel (bench-conv_pair_gpu, us per call):"
    cat "$OUT/pair-ours.txt"
fi
exit $status

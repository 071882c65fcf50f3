#!/bin/bash
# gpu-session.sh [PHASE...] - everything that belongs together on a GPU node,
# run from the repository root with a bundle built here (make bundle
# BUILD=build-gpu), carried as build-gpu/bundle.tar.xz (unpacked here into
# /tmp) or as the directory build-gpu/bundle. PHASEs: info tests bench torch
# (default: all four). Logs go to $OUT (default /tmp/ws-gpu-out).
#   WS_BUNDLE   bundle directory (default build-gpu/bundle, else the tarball)
#   WS_FILTER   Criterion filter for the tests (default: the whole suite)
#   WS_ITERS    timed runs per bench case (default 50)
set -u
OUT=${OUT:-/tmp/ws-gpu-out}
B=${WS_BUNDLE:-build-gpu/bundle}
if [ ! -x "$B/test_runner" ] && [ -f "$B.tar.xz" ]; then
    mkdir -p /tmp/ws-bundle && tar -C /tmp/ws-bundle -xJf "$B.tar.xz" || exit 1
    B=/tmp/ws-bundle/$(basename "$B")
fi
ITERS=${WS_ITERS:-50}
mkdir -p "$OUT"
phases=${*:-info tests bench torch}
status=0
for ph in $phases; do
    case $ph in
    info)
        nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,memory.used \
            --format=csv | tee "$OUT/nvidia-smi.txt"
        ;;
    tests)
        ptxas=$(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || true)
        case $B in /*) ab=$B ;; *) ab=$PWD/$B ;; esac
        WS_BIN=$ab/whisper-stem WS_MKMODEL=$ab/ws-mkmodel WS_CONVERT=$ab/ws-convert \
        WS_TESTDATA=$PWD/tests/data \
        WS_SAMPLES=$PWD/samples WS_PTXAS=$ptxas \
            "$B/test_runner" -j8 ${WS_FILTER:+--filter="$WS_FILTER"} >"$OUT/tests.log" 2>&1 || status=1
        grep -E "^\[(FAIL|----)\]|Synthesis" "$OUT/tests.log" | tail -40
        ;;
    bench)
        "$B/bench-gpu_stem" --iters "$ITERS" >"$OUT/bench-gpu.txt" 2>"$OUT/bench-gpu.err" || status=1
        cat "$OUT/bench-gpu.txt"; tail -12 "$OUT/bench-gpu.err"
        ;;
    torch)
        PYTHONUNBUFFERED=1 python3 bench/gpu_torch.py --iters "$ITERS" >"$OUT/bench-torch.txt" 2>&1 || status=1
        cat "$OUT/bench-torch.txt"
        ;;
    *) echo "gpu-session.sh: unknown phase $ph" >&2; exit 2 ;;
    esac
done
exit $status

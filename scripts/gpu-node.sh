#!/bin/bash
# gpu-node.sh [PHASE...] - everything that belongs together on a GPU node,
# run from the repository root with a bundle built here (make bundle
# BUILD=build-gpu), copied over as build-gpu/bundle.tar.xz (unpacked here into
# /tmp) or as the directory build-gpu/bundle. PHASEs: info tests bench torch
# wholerun (default: all five), torch-ops (whisper_stem.torch's GPU tests and
# bench/torch_ops.py; only when named), and conv-bench (the conv engine's speed table:
# bench/run-conv-gpu.sh with the bundle's bench-conv_gpu; only when named).
# node-bench (whole-node throughput, whisper-stem beside the batched PyTorch pipeline:
# bench/run-node.sh with the bundle's binaries, its NODE_* variables passed on, the
# table in $OUT/node-bench.md; only when named). cpu-scaling (the CPU engine on the node's
# cores: bench-cpu on 1 and 64 windows at 1, 2, 4, ... threads, PyTorch's CPU stem beside;
# only when named).
# Logs go to $OUT (default /tmp/ws-gpu-out).
#   WS_BUNDLE   bundle directory (default build-gpu/bundle, else the tarball)
#   WS_FILTER   Criterion filter for the tests (default: the whole suite)
#   WS_ITERS    timed runs per bench case (default 50)
#   WS_PYTHON   a Python 3 with numpy for the tests (default: python3 on PATH)
set -u
OUT=${OUT:-/tmp/ws-gpu-out}
B=${WS_BUNDLE:-build-gpu/bundle}
if [ ! -x "$B/test_runner" ] && [ -f "$B.tar.xz" ]; then
    mkdir -p /tmp/ws-bundle && tar -C /tmp/ws-bundle -xJf "$B.tar.xz" || exit 1
    B=/tmp/ws-bundle/$(basename "$B")
fi
ITERS=${WS_ITERS:-50}
mkdir -p "$OUT"
phases=${*:-info tests bench torch wholerun}
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
        WS_SAMPLES=$PWD/samples WS_PTXAS=$ptxas WS_PYTHON=${WS_PYTHON:-$(command -v python3)} \
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
    torch-ops)
        # whisper_stem.torch on the GPU: its tests (python/tests/test_torch_gpu.py, the CPU ones
        # too) and bench/torch_ops.py beside PyTorch, with the bundle's libwhisper-stem.so.0
        case $B in /*) lb=$B ;; *) lb=$PWD/$B ;; esac
        (cd python && WHISPER_STEM_LIB=$lb/libwhisper-stem.so.0 \
            python3 -m unittest -v tests.test_torch_gpu tests.test_torch) \
            >"$OUT/torch-tests.log" 2>&1 || status=1
        tail -25 "$OUT/torch-tests.log"
        WHISPER_STEM_LIB=$lb/libwhisper-stem.so.0 python3 bench/torch_ops.py --iters "$ITERS" \
            --json "$OUT/torch-ops.json" >"$OUT/torch-ops.md" 2>&1 || status=1
        cat "$OUT/torch-ops.md"
        ;;
    conv-bench)
        # every row of docs/conv-engine.md's speed table, ours (checked against the CPU engine)
        # beside PyTorch + cuDNN, joined into one markdown table (conv-bench.md); JSON,
        # raw tables and logs in $OUT/conv-bench/
        OUT=$OUT/conv-bench BIN=$B/bench-conv_gpu STEM_BIN=$B/bench-gpu_stem PYTHON=python3 \
            bench/run-conv-gpu.sh "$ITERS" >"$OUT/conv-bench.txt" 2>"$OUT/conv-bench.err" || status=1
        sed -n '/^| case /,$p' "$OUT/conv-bench.txt" >"$OUT/conv-bench.md"
        cat "$OUT/conv-bench/conv-ours.txt" 2>/dev/null; grep -E "^(date|# device)" "$OUT/conv-bench.txt"
        cat "$OUT/conv-bench.md"; tail -5 "$OUT/conv-bench.err"
        ;;
    cpu-scaling)
        # the CPU engine on this node's cores: the FMA peak, the tiny stem on one window and
        # on 64 (one call) at 1, 2, 4, ... threads up to the CPUs, and PyTorch's CPU stem
        # (bench/cpu_torch.py) at 1, 2 and all threads, in $OUT/cpu-scaling.txt
        {
            lscpu | grep -E '^(Model name|Thread|Core|Socket|CPU\(s\))'
            n=$(nproc); t=1
            for p in 1 2 4 8 "$n"; do [ "$p" -le "$n" ] && "$B/bench-cpu" --peak --threads "$p"; done
            while [ "$t" -le "$n" ]; do
                "$B/bench-cpu" --threads "$t" --reps 10
                "$B/bench-cpu" --threads "$t" --reps 5 --windows 64
                [ "$t" -lt "$n" ] && [ $((t * 2)) -gt "$n" ] && t=$n || t=$((t * 2))
            done
            for t in 1 2 "$n"; do
                python3 bench/cpu_torch.py --threads "$t" --reps 10 || status=1
                python3 bench/cpu_torch.py --threads "$t" --reps 3 --windows 64 || status=1
            done
        } >"$OUT/cpu-scaling.txt" 2>&1 || status=1
        cat "$OUT/cpu-scaling.txt"
        ;;
    node-bench)
        # whole data sets (30 s WAV, 10 min FLAC) through whisper-stem and bench/node_torch.py,
        # to tmpfs and to local disk: files/s, x real time, CPU and GPU busy; JSON lines, logs
        # and the peer's sanity check in $OUT/node-bench/
        OUT=$OUT/node-bench BIN=$B/whisper-stem MKMODEL=$B/ws-mkmodel PYTHON=python3 \
            bench/run-node.sh >"$OUT/node-bench.txt" 2>"$OUT/node-bench.err" || status=1
        cp "$OUT/node-bench/table.md" "$OUT/node-bench.md" 2>/dev/null || status=1
        grep -E "^(date|# )" "$OUT/node-bench.txt"; cat "$OUT/node-bench.md" 2>/dev/null; tail -5 "$OUT/node-bench.err"
        ;;
    wholerun)
        # whole runs of the binary on 30 s of speech (samples/jfk.wav looped), tiny F32
        # weights: cold JIT cache (a fresh CUDA_CACHE_PATH), warm cache, CPU; 64 files
        # in one run; the PyTorch path (bench/whole_torch.py) on the same file; GPU vs
        # CPU outputs compared; --check.
        w=/tmp/ws-whole; rm -rf $w; mkdir -p $w/in
        python3 -c "
import wave, numpy as np
with wave.open('samples/jfk.wav') as f: x = np.frombuffer(f.readframes(f.getnframes()), '<i2')
y = np.resize(x, 480000)
with wave.open('$w/in/speech30.wav', 'wb') as g:
    g.setnchannels(1); g.setsampwidth(2); g.setframerate(16000); g.writeframes(y.astype('<i2').tobytes())"
        for i in $(seq -w 1 64); do cp $w/in/speech30.wav $w/in/s$i.wav; done
        "$B/ws-mkmodel" --size tiny -o $w/tiny.gguf
        bin="$B/whisper-stem -m $w/tiny.gguf"
        tm() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>>"$OUT/wholerun.err"; e=$(date +%s.%N); awk "BEGIN { printf \"%.3f\\n\", $e - $s }"; }
        med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
        {
        echo "| run | wall s (median of 5) |"; echo "|---|---|"
        for k in 1 2 3 4 5; do CUDA_CACHE_PATH=$w/cache$k tm $bin --device cuda $w/in/speech30.wav -o $w/g.npy; done | med | xargs printf "| cold JIT cache, GPU, 1 file | %s |\n"
        for k in 1 2 3 4 5; do CUDA_CACHE_PATH=$w/cache1 tm $bin --device cuda $w/in/speech30.wav -o $w/g.npy; done | med | xargs printf "| warm JIT cache, GPU, 1 file | %s |\n"
        for k in 1 2 3 4 5; do tm $bin --device cpu --threads 16 $w/in/speech30.wav -o $w/c.npy; done | med | xargs printf "| CPU (16 threads), 1 file | %s |\n"
        for k in 1 2 3 4 5; do tm python3 bench/whole_torch.py $w/tiny.gguf $w/in/speech30.wav $w/t.npy; done | med | xargs printf "| PyTorch GPU path (python, bench/whole_torch.py), 1 file | %s |\n"
        for k in 1 2 3; do CUDA_CACHE_PATH=$w/cache1 tm $bin --device cuda -O $w/out $w/in/s*.wav; done | med | xargs printf "| warm JIT cache, GPU, 64 files in one run | %s |\n"
        for k in 1 2 3; do tm $bin --device cpu --threads 16 -O $w/outc $w/in/s*.wav; done | med | xargs printf "| CPU (16 threads), 64 files in one run | %s |\n"
        } | tee "$OUT/wholerun.md"
        CUDA_CACHE_PATH=$w/cache1 $bin --device cuda $w/in/speech30.wav -o $w/g.npy --json "$OUT/wholerun-gpu.json" -v 2>&1 | tail -3
        $bin --device cpu --threads 16 $w/in/speech30.wav -o $w/c.npy --json "$OUT/wholerun-cpu.json"
        python3 -c "
import numpy as np
g, c, t = np.load('$w/g.npy'), np.load('$w/c.npy'), np.load('$w/t.npy')
r = lambda a, b: float(np.linalg.norm(a - b) / np.linalg.norm(b))
print(f'GPU fp32 vs CPU: rel L2 {r(g, c):.2e}, max {abs(g - c).max():.2e}; GPU vs PyTorch: rel L2 {r(g, t):.2e}, max {abs(g - t).max():.2e}; shape {g.shape}')
" | tee -a "$OUT/wholerun.md"
        CUDA_CACHE_PATH=$w/cache1 "$B/whisper-stem" --check | tee "$OUT/check.txt" || status=1
        ;;
    *) echo "gpu-node.sh: unknown phase $ph" >&2; exit 2 ;;
    esac
done
exit $status

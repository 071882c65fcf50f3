#!/usr/bin/env bash
# Side by side on this machine: whisper-stem's CPU log-Mel and conv stem vs
# PyTorch on the CPU (openai's log_mel math; F.conv1d + F.gelu), one 30 s
# window, 1 and 2 threads, Whisper tiny (80 -> 384) and large-v3 (128 -> 1280);
# for tiny also a 5 s clip padded to 30 s (--pad audio), where whisper-stem
# computes the padded tail once. Each row runs ours, PyTorch, PyTorch, ours back
# to back, so drift hits both alike and each side is once first of a pair.
#   make && bench/run-cpu.sh [REPS]        (needs Debian's python3-torch)
# PEER_ENV="VAR=value ..." runs the PyTorch side under those variables, e.g. glibc's
# MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296, which keep its
# per-call buffers off mmap (on VMs whose page faults are slow, its timings otherwise
# swing by 10x: bench/RESULTS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-20}
PY=${PYTHON:-/usr/bin/python3}
BIN=${BUILD:-build}/bench-cpu
val() { sed -n "s/.*[[:space:]]$1=\([^ ]*\).*/\1/p" <<<" $2"; }
echo "date: $(date -u +%F)  cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')  cores: $(nproc)  reps: $REPS  OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE:-unset}  PyTorch env: ${PEER_ENV:-none}"
printf "| shape | audio | threads | stage | whisper-stem ms | PyTorch ms | PyTorch / whisper-stem |\n|---|---|---|---|---|---|---|\n"
for shape in "80 384 tiny 30" "80 384 tiny 5" "128 1280 large-v3 30"; do
    set -- $shape
    for th in 1 2; do
        # ours, PyTorch, PyTorch, ours: each side once first and once second of a pair (on
        # some VMs the second of two back-to-back runs is ~10 % slower); each stage's
        # figure is the lower of its side's two medians
        o1=$($BIN --threads $th --reps $REPS --n-mels $1 --d $2 --seconds $4)
        t1=$(env ${PEER_ENV:-} $PY bench/cpu_torch.py --threads $th --reps $REPS --n-mels $1 --d $2 --seconds $4)
        t2=$(env ${PEER_ENV:-} $PY bench/cpu_torch.py --threads $th --reps $REPS --n-mels $1 --d $2 --seconds $4)
        o2=$($BIN --threads $th --reps $REPS --n-mels $1 --d $2 --seconds $4)
        ours=$o2; torch=$t2
        low() { local a b; a=$(val "$1" "$2"); b=$(val "$1" "$3"); echo "if ($a < $b) $a else $b" | bc -l; }
        for stage in mel stem; do
            o=$(low ${stage}_ms "$o1" "$o2"); t=$(low ${stage}_ms "$t1" "$t2")
            printf "| %s | %s s | %d | %s | %.2f | %.2f | %.2fx |\n" "$3" "$4" "$th" "$stage" "$o" "$t" "$(echo "$t / $o" | bc -l)"
        done
        o=$(echo "$(low mel_ms "$o1" "$o2") + $(low stem_ms "$o1" "$o2")" | bc -l)
        t=$(echo "$(low mel_ms "$t1" "$t2") + $(low stem_ms "$t1" "$t2")" | bc -l)
        printf "| %s | %s s | %d | **mel+stem** | %.2f | %.2f | **%.2fx** |\n" "$3" "$4" "$th" "$o" "$t" "$(echo "$t / $o" | bc -l)"
    done
done
peak=$($BIN --peak)
echo "whisper-stem sgemm: $(val sgemm "$ours"); PyTorch $(val torch "$torch"); one-thread sgemm ceiling (1536^3): $(val sgemm_ceiling_gflops "$($BIN --ceiling)") GFLOP/s; one core's FMA peak: AVX-512 $(val fma_peak_avx512_gflops "$peak"), AVX2 $(val fma_peak_avx2_gflops "$peak") GFLOP/s"

#!/usr/bin/env bash
# Side by side on this machine: whisper-stem's CPU log-Mel and conv stem vs
# PyTorch on the CPU (openai's log_mel math; F.conv1d + F.gelu), 30 s of
# audio, 1 and 2 threads, Whisper tiny (80 -> 384) and large-v3 (128 -> 1280).
# Each pair runs back to back, alternating, so drift hits both alike.
#   make && bench/run-cpu.sh [REPS]        (needs Debian's python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-20}
PY=${PYTHON:-/usr/bin/python3}
BIN=${BUILD:-build}/bench-cpu
val() { sed -n "s/.*[[:space:]]$1=\([^ ]*\).*/\1/p" <<<"$2"; }
echo "date: $(date -u +%F)  cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')  cores: $(nproc)"
printf "| shape | threads | stage | whisper-stem ms | PyTorch ms | ratio |\n|---|---|---|---|---|---|\n"
for shape in "80 384 tiny" "128 1280 large-v3"; do
    set -- $shape
    for th in 1 2; do
        ours=$($BIN --threads $th --reps $REPS --n-mels $1 --d $2)
        torch=$($PY bench/cpu_torch.py --threads $th --reps $REPS --n-mels $1 --d $2)
        for stage in mel stem; do
            o=$(val ${stage}_ms "$ours"); t=$(val ${stage}_ms "$torch")
            printf "| %s | %d | %s | %.2f | %.2f | %.2fx |\n" "$3" "$th" "$stage" "$o" "$t" "$(echo "$t / $o" | bc -l)"
        done
        o=$(echo "$(val mel_ms "$ours") + $(val stem_ms "$ours")" | bc -l)
        t=$(echo "$(val mel_ms "$torch") + $(val stem_ms "$torch")" | bc -l)
        printf "| %s | %d | mel+stem | %.2f | %.2f | %.2fx |\n" "$3" "$th" "$o" "$t" "$(echo "$t / $o" | bc -l)"
    done
done
echo "sgemm: $(val sgemm "$ours")"

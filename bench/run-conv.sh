#!/usr/bin/env bash
# Side by side on this machine: the conv engine's CPU backend vs PyTorch's
# F.conv1d (+ autograd) on the contract's CPU cases, THREADS threads (default 1), each pair
# back to back so that drift hits both alike; the depthwise rows' bandwidth also as a share
# of the copy row's (memcpy of the same input).
#   make && bench/run-conv.sh [REPS]        (needs Debian's python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-20}
PY=${PYTHON:-/usr/bin/python3}
BIN=${BUILD:-build}/bench-conv
val() { sed -n "s/.*[[:space:]]$1=\([^ ]*\).*/\1/p" <<<" $2"; }
echo "date: $(date -u +%F)  cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')  cores: $(nproc)  reps: $REPS"
THREADS=${THREADS:-1}
printf "| case | threads | whisper-stem us | whisper-stem GB/s (of copy) | PyTorch us | PyTorch / whisper-stem |\n|---|---|---|---|---|---|\n"
copy=
for c in copy read2 dw_fwd dw_bwd dw_fwdbwd dil_relu dw_silu dw_silu_bwd; do
    ours=$($BIN --threads $THREADS --reps $REPS --case $c)
    o=$(val us "$ours"); g=$(val gbps "$ours")
    if [ $c = copy ]; then
        copy=$g
        printf "| copy (memcpy, bandwidth) | %d | %.1f | %.1f | | |\n" "$THREADS" "$o" "$g"
        continue
    fi
    if [ $c = read2 ]; then
        printf "| read2 (two buffers read, bandwidth) | %d | %.1f | %.1f (%.0f %%) | | |\n" "$THREADS" "$o" "$g" "$(echo "100 * $g / $copy" | bc -l)"
        continue
    fi
    torch=$($PY bench/conv_torch.py --threads $THREADS --reps $REPS --case $c)
    t=$(val us "$torch")
    share=$([ $c = dil_relu ] && echo "$(val gflops "$ours") GFLOP/s" || printf "%.1f (%.0f %%)" "$g" "$(echo "100 * $g / $copy" | bc -l)")
    printf "| %s | %d | %.1f | %s | %.1f | %.2fx |\n" "$c" "$THREADS" "$o" "$share" "$t" "$(echo "$t / $o" | bc -l)"
done

#!/usr/bin/env bash
# Side by side on this machine: the conv engine's CPU backend vs PyTorch's
# F.conv1d (+ autograd) on the contract's CPU cases, 1 thread, each pair back
# to back so that drift hits both alike.
#   make && bench/run-conv.sh [REPS]        (needs Debian's python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-20}
PY=${PYTHON:-/usr/bin/python3}
BIN=${BUILD:-build}/bench-conv
val() { sed -n "s/.*[[:space:]]$1=\([^ ]*\).*/\1/p" <<<" $2"; }
echo "date: $(date -u +%F)  cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')  cores: $(nproc)  reps: $REPS"
printf "| case | threads | whisper-stem us | PyTorch us | PyTorch / whisper-stem |\n|---|---|---|---|---|\n"
for c in dw_fwd dw_fwdbwd dil_relu; do
    ours=$($BIN --threads 1 --reps $REPS --case $c)
    torch=$($PY bench/conv_torch.py --threads 1 --reps $REPS --case $c)
    o=$(val us "$ours"); t=$(val us "$torch")
    printf "| %s | 1 | %.1f | %.1f | %.2fx |\n" "$c" "$o" "$t" "$(echo "$t / $o" | bc -l)"
done

#!/usr/bin/env bash
# The whole command on the CPU against the PyTorch pipeline users run today
# (bench/cmd_torch.py: soundfile, openai's log-Mel, F.conv1d + F.gelu, np.save), over
# FILES 30 s WAVs (16 kHz, 16-bit, made from samples/jfk.wav with other offsets, gains and
# a little noise) and a random tiny model, THREADS threads on both sides. Each side runs
# over all the files and over the first tenth, back to back, REPS times:
#   whole   the command's wall time over all the files (start-up, decoding, writing included)
#   steady  (T(all) - T(tenth)) / (files - tenth): per file, start-up excluded on both sides
# Then the two sides' outputs are compared (max |difference|).
#   make && bench/run-cmd-cpu.sh [REPS]     (Debian's python3-torch, python3-soundfile)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3}
FILES=${FILES:-200}
THREADS=${THREADS:-2}
PY=${PYTHON:-/usr/bin/python3}
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/audio"
"$PY" - "$T/audio" "$FILES" <<'PY'
import sys, numpy as np, soundfile as sf
out, n = sys.argv[1], int(sys.argv[2])
x, sr = sf.read("samples/jfk.wav", dtype="float32")
assert sr == 16000
rng = np.random.default_rng(0)
for i in range(n):
    y = np.tile(np.roll(x, -int(rng.integers(0, len(x)))), 3)[:480000] * float(rng.uniform(0.5, 1.0))
    y = y + rng.normal(0, 1e-3, y.shape)
    sf.write(f"{out}/f{i:04d}.wav", np.clip(y, -1, 1), 16000, subtype="PCM_16")
PY
ls "$T"/audio/*.wav > "$T/all.txt"
TENTH=$((FILES / 10))
head -n "$TENTH" "$T/all.txt" > "$T/tenth.txt"
"$B"/ws-mkmodel --size tiny -o "$T/m.gguf" >/dev/null
ours() { "$B"/whisper-stem -q -m "$T/m.gguf" --device cpu --threads "$THREADS" --list "$1" -O "$2"; }
torch() { "$PY" bench/cmd_torch.py "$T/m.gguf" "$1" "$2" --threads "$THREADS" 2>/dev/null; }
wall() { local t0 t1; rm -rf "$T/o"; t0=$(date +%s.%N); "$@" "$T/o"; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
echo "date: $(date -u +%F)  cpu: $(lscpu | sed -n 's/^Model name:[[:space:]]*//p')  cores: $(nproc)  files: $FILES x 30 s  threads: $THREADS  reps: $REPS"
printf "| rep | whisper-stem whole s | PyTorch whole s | whole ratio | whisper-stem steady ms/file | PyTorch steady ms/file | steady ratio |\n|---|---|---|---|---|---|---|\n"
for r in $(seq 1 "$REPS"); do
    if [ $((r % 2)) = 1 ]; then # ours first in odd reps, PyTorch first in even ones
        oa=$(wall ours "$T/all.txt"); ta=$(wall torch "$T/all.txt")
        ot=$(wall ours "$T/tenth.txt"); tt=$(wall torch "$T/tenth.txt")
    else
        ta=$(wall torch "$T/all.txt"); oa=$(wall ours "$T/all.txt")
        tt=$(wall torch "$T/tenth.txt"); ot=$(wall ours "$T/tenth.txt")
    fi
    os=$(echo "1000 * ($oa - $ot) / ($FILES - $TENTH)" | bc -l); ts=$(echo "1000 * ($ta - $tt) / ($FILES - $TENTH)" | bc -l)
    printf "| %d | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx |\n" "$r" "$oa" "$ta" "$(echo "$ta / $oa" | bc -l)" \
        "$os" "$ts" "$(echo "$ts / $os" | bc -l)"
done
# the same tensors: both sides on the first tenth
rm -rf "$T/a" "$T/b"; ours "$T/tenth.txt" "$T/a"; torch "$T/tenth.txt" "$T/b"
"$PY" - "$T/a" "$T/b" <<'PY'
import os, sys, numpy as np
a, b = sys.argv[1], sys.argv[2]
names = sorted(f for f in os.listdir(b) if f.endswith(".npy"))
d = max(float(np.abs(np.load(f"{a}/{f}") - np.load(f"{b}/{f}")).max()) for f in names)
print(f"outputs: {len(names)} files compared, max |whisper-stem - PyTorch| = {d:.3g}")
PY

#!/bin/sh
# make-corpus.sh - a small corpus for the corpus-run tests (tests/corpus/).
#
#   tests/corpus/make-corpus.sh DIR
#
# Writes, under DIR (made if missing; DIR/audio and DIR/outside must not exist):
#   audio/spkNN/MMM.wav   200 WAV files: 10 speakers x 20 takes, so every base
#                         name (001.wav ...) occurs 10 times; 0.5-3 s of tones
#                         and noise, 16-bit PCM at 16 kHz or 44.1 kHz, mono or
#                         stereo. Two names test quoting: "spk03/020 (take 2).wav"
#                         and "spk04/019-café.wav" (UTF-8).
#   audio/bad/...         inputs that must fail: an empty file, a WAV cut inside
#                         its header, a WAV cut inside its data chunk, and a text
#                         file named 'notes "v2".wav'
#   outside/stray.wav     a good WAV outside the root (--root DIR/audio fails it)
#   list.txt              every input above by absolute path, plus one path that
#                         does not exist, in a fixed shuffled order (so each shard
#                         gets good and bad ones), with a comment line, a blank
#                         line and one line ending in CR LF (whisper-stem --list
#                         skips the first two and drops the CR)
#   good.txt, bad.txt     the list's inputs that must succeed / fail, one a line
#
# Deterministic: the same files byte for byte on every run (numpy's seeded
# generator). Needs python3 with numpy (scripts/install-deps.sh --test installs
# Debian's): the first of $PYTHON, python3 on PATH, /usr/bin/python3 that has it.
set -eu
if [ $# -ne 1 ]; then
    echo "usage: $0 DIR" >&2
    exit 2
fi
mkdir -p "$1"
dir=$(cd "$1" && pwd)
if [ -e "$dir/audio" ] || [ -e "$dir/outside" ]; then
    echo "$0: $dir/audio or $dir/outside exists already" >&2
    exit 2
fi

py=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c 'import numpy' >/dev/null 2>&1; then
        py=$p
        break
    fi
done
if [ -z "$py" ]; then
    echo "$0: no python3 with numpy (scripts/install-deps.sh --test installs python3-numpy)" >&2
    exit 1
fi

"$py" - "$dir" <<'PY'
import os, sys, wave
import numpy as np

root = sys.argv[1]
rng = np.random.default_rng(20240611)

def write_wav(path, seconds, rate, channels):
    n = int(round(seconds * rate))
    t = np.arange(n) / rate
    sig = np.zeros((n, channels))
    for ch in range(channels):
        for _ in range(3):
            f = rng.uniform(80.0, 3000.0)
            sig[:, ch] += rng.uniform(0.05, 0.25) * np.sin(2 * np.pi * f * t + rng.uniform(0, 6.3))
        sig[:, ch] += 0.02 * rng.standard_normal(n)
    pcm = np.clip(np.round(sig * 32767.0), -32768, 32767).astype("<i2")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm.tobytes())

good, bad = [], []
for s in range(1, 11):
    for k in range(1, 21):
        name = "%03d.wav" % k
        if (s, k) == (3, 20):
            name = "020 (take 2).wav"
        elif (s, k) == (4, 19):
            name = "019-café.wav"
        path = os.path.join(root, "audio", "spk%02d" % s, name)
        i = (s - 1) * 20 + (k - 1)
        write_wav(path, rng.uniform(0.5, 3.0), (16000, 44100)[i % 2], 1 + (i // 2) % 2)
        good.append(path)

b = os.path.join(root, "audio", "bad")
os.makedirs(b)
open(os.path.join(b, "empty.wav"), "wb").close()
write_wav(os.path.join(b, "whole.wav"), 2.0, 16000, 1)
data = open(os.path.join(b, "whole.wav"), "rb").read()
os.remove(os.path.join(b, "whole.wav"))
with open(os.path.join(b, "cut-in-header.wav"), "wb") as f:
    f.write(data[:30])
with open(os.path.join(b, "cut-in-data.wav"), "wb") as f:
    f.write(data[:len(data) // 3])
with open(os.path.join(b, 'notes "v2".wav'), "w") as f:
    f.write("speaker notes, not audio\n")
bad += [os.path.join(b, n) for n in ("empty.wav", "cut-in-header.wav", "cut-in-data.wav", 'notes "v2".wav')]
bad.append(os.path.join(b, "missing.wav"))  # listed, never written
stray = os.path.join(root, "outside", "stray.wav")
write_wav(stray, 1.0, 16000, 1)
bad.append(stray)

inputs = good + bad
order = rng.permutation(len(inputs))
with open(os.path.join(root, "list.txt"), "wb") as f:
    f.write(b"# corpus for tests/corpus: one input path a line\n")
    for n, i in enumerate(order):
        if n == 50:
            f.write(b"\n")
        f.write(inputs[i].encode() + (b"\r\n" if n == 70 else b"\n"))
for name, items in (("good.txt", good), ("bad.txt", bad)):
    with open(os.path.join(root, name), "wb") as f:
        f.write(b"".join(p.encode() + b"\n" for p in items))
print("make-corpus: %d good and %d bad inputs in %s/list.txt" % (len(good), len(bad), root))
PY

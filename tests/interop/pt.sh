#!/bin/sh
# pt.sh - scripts/pt-to-gguf.py on an openai-whisper-style .pt checkpoint
# ({"dims": ..., "model_state_dict": ...}, written here by torch.save), read
# back tensor by tensor from the GGUF bytes, and loaded by whisper-stem (-v).
#   tests/interop/pt.sh [BUILD_DIR]      needs python3 with torch and numpy
# (install-deps.sh --test installs Debian's); prints a skip line without them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
# the first python3 with torch and numpy: $PYTHON, the one on PATH, Debian's
PY=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if "$p" -c "import torch, numpy" 2>/dev/null; then
        PY=$p
        break
    fi
done
if [ -z "$PY" ]; then
    echo "skip pt.sh: no python3 with torch and numpy (scripts/pt-to-gguf.py needs them)"
    exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
$PY - "$tmp/tiny-like.pt" <<'PYEOF'
import sys, torch
g = torch.Generator().manual_seed(0)
d, nm = 6, 4
sd = {"encoder.conv1.weight": torch.randn(d, nm, 3, generator=g).half(),
      "encoder.conv1.bias": torch.randn(d, generator=g).half(),
      "encoder.conv2.weight": torch.randn(d, d, 3, generator=g).half(),
      "encoder.conv2.bias": torch.randn(d, generator=g).half(),
      "encoder.positional_embedding": torch.randn(8, d, generator=g),
      "decoder.token_embedding.weight": torch.randn(10, d, generator=g).half()}
dims = dict(n_mels=nm, n_vocab=10, n_audio_ctx=8, n_audio_state=d, n_audio_head=1, n_audio_layer=1,
            n_text_ctx=8, n_text_state=d, n_text_head=1, n_text_layer=1)
torch.save({"dims": dims, "model_state_dict": sd}, sys.argv[1])
PYEOF
$PY "$root/scripts/pt-to-gguf.py" "$tmp/tiny-like.pt" -o "$tmp/out.gguf"
# whisper-stem's own loader takes it (the PTX dump loads the model and needs no GPU)
"$build/whisper-stem" -v -m "$tmp/out.gguf" --dump-ptx "$tmp/ptx" 2>&1 |
    grep -q "n_mels 4, d 6, conv1 f16, conv2 f16, positional embedding in file" ||
    { echo "FAIL pt.sh: whisper-stem does not load the converted file as expected"; exit 1; }
$PY - "$tmp/tiny-like.pt" "$tmp/out.gguf" <<'PYEOF'
import struct, sys, numpy as np, torch
sd = torch.load(sys.argv[1], weights_only=True)["model_state_dict"]
b = open(sys.argv[2], "rb").read()
assert b[:4] == b"GGUF", "not GGUF"
n_t, n_kv = struct.unpack_from("<QQ", b, 8)
off = 24
def rstr(o):
    n = struct.unpack_from("<Q", b, o)[0]
    return b[o + 8:o + 8 + n].decode(), o + 8 + n
size = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
def skip(t, o):
    if t == 8: return rstr(o)[1]
    if t == 9:
        et, n = struct.unpack_from("<IQ", b, o); o += 12
        for _ in range(n): o = skip(et, o)
        return o
    return o + size[t]
for _ in range(n_kv):
    _, off = rstr(off); t = struct.unpack_from("<I", b, off)[0]; off = skip(t, off + 4)
infos = []
for _ in range(n_t):
    name, off = rstr(off); nd = struct.unpack_from("<I", b, off)[0]
    ne = struct.unpack_from("<%dQ" % nd, b, off + 4); typ, to = struct.unpack_from("<IQ", b, off + 4 + 8 * nd)
    off += 16 + 8 * nd; infos.append((name, ne, typ, to))
data = (off + 31) // 32 * 32
dt = {0: "<f4", 1: "<f2"}
for name, ne, typ, to in infos:
    n = int(np.prod(ne))
    got = np.frombuffer(b, dt[typ], n, data + to)
    want = sd[name].numpy().reshape(-1)
    assert got.dtype == want.dtype and np.array_equal(got, want), name
print(f"ok {sys.argv[1].split('/')[-1]} -> GGUF: {len(infos)} tensors equal to the checkpoint's, bit for bit")
PYEOF

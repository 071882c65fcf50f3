"""gguf_read.py - a minimal GGUF reader for the PyTorch peers in bench/ (node_torch.py,
whole_torch.py): enough for the stem tensors of ws-mkmodel and whisper-stem-convert files."""
import struct

import numpy as np


def gguf_tensors(path):
    """GGUF v2/v3 reader for F32 / F16 / BF16 tensors (quantised ones are left out).
    Returns float32 arrays in numpy order (the GGUF ne reversed)."""
    b = open(path, "rb").read()
    if b[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    off = 24
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    fmts = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}
    align = 32

    def rstr(o):
        n = struct.unpack_from("<Q", b, o)[0]
        return b[o + 8:o + 8 + n].decode(), o + 8 + n

    def rval(t, o):
        if t == 8:
            return rstr(o)
        if t == 9:
            et, n = struct.unpack_from("<IQ", b, o)
            o += 12
            for _ in range(n):
                _, o = rval(et, o)
            return None, o
        return struct.unpack_from("<" + fmts[t], b, o)[0], o + sizes[t]

    for _ in range(n_kv):
        k, off = rstr(off)
        t = struct.unpack_from("<I", b, off)[0]
        v, off = rval(t, off + 4)
        if k == "general.alignment":
            align = v
    infos = []
    for _ in range(n_t):
        name, off = rstr(off)
        nd = struct.unpack_from("<I", b, off)[0]
        ne = struct.unpack_from("<%dQ" % nd, b, off + 4)
        typ, toff = struct.unpack_from("<IQ", b, off + 4 + 8 * nd)
        off += 4 + 8 * nd + 12
        infos.append((name, ne, typ, toff))
    data = (off + align - 1) // align * align
    out = {}
    for name, ne, typ, toff in infos:
        n = int(np.prod(ne))
        shape = tuple(reversed(ne))
        if typ == 0:
            a = np.frombuffer(b, "<f4", n, data + toff)
        elif typ == 1:
            a = np.frombuffer(b, "<f2", n, data + toff).astype(np.float32)
        elif typ == 30:
            a = (np.frombuffer(b, "<u2", n, data + toff).astype(np.uint32) << 16).view(np.float32)
        else:
            continue  # quantised tensors: not stem tensors of our files
        out[name] = a.reshape(shape)
    return out


NAMES = {  # ours / openai, Hugging Face, llama.cpp mmproj
    "w1": ("encoder.conv1.weight", "model.encoder.conv1.weight", "a.conv1d.1.weight"),
    "b1": ("encoder.conv1.bias", "model.encoder.conv1.bias", "a.conv1d.1.bias"),
    "w2": ("encoder.conv2.weight", "model.encoder.conv2.weight", "a.conv1d.2.weight"),
    "b2": ("encoder.conv2.bias", "model.encoder.conv2.bias", "a.conv1d.2.bias"),
    "pos": ("encoder.positional_embedding", "model.encoder.embed_positions.weight",
            "a.position_embd.weight"),
}

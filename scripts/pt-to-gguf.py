#!/usr/bin/env python3
"""pt-to-gguf.py - openai-whisper .pt checkpoint -> whisper-stem's conv-stem GGUF.

    python3 scripts/pt-to-gguf.py IN.pt -o OUT.gguf [--type keep|f32|f16|bf16] [--name NAME]

Needs PyTorch and NumPy (pip install torch numpy). whisper-stem-convert reads
safetensors, whisper.cpp ggml .bin and GGUF in C; a .pt file is a zip holding
a pickle, which only PyTorch should unpickle, so this script does it, with
torch.load(weights_only=True) (no arbitrary code from the file).

openai-whisper's .pt (whisper/__init__.py download URLs) is
    {"dims": {"n_mels": ..., "n_audio_state": ..., ...},
     "model_state_dict": {"encoder.conv1.weight": Tensor[d, n_mels, 3], ...}}
The output is what whisper-stem-convert writes (src/convert/convert.c): GGUF v3,
tensors encoder.conv1.weight / .bias, encoder.conv2.weight / .bias, and
encoder.positional_embedding when present, biases as [d]; metadata
general.architecture = "whisper", general.name, whisper.source.file,
whisper.source.format = "pytorch", whisper.n_mels, whisper.d and each
dims entry as whisper.<key> (u32). Types are kept unless --type asks.

GGUF layout (ggml docs/gguf.md; little-endian): "GGUF", u32 version 3,
u64 n_tensors, u64 n_kv; kv = (string key, u32 type, value); tensor infos =
(string name, u32 n_dims, u64 ne[n_dims] innermost first, u32 ggml type,
u64 offset); zero padding to 32; data, each tensor padded to 32.

Exit status: 0 written, 1 failed (one line on stderr, no output file), 2 usage.
Checked by tests/interop/pt.sh (make interop) against a torch.save'd checkpoint.
"""
import argparse
import os
import struct
import sys
import tempfile

ALIGN = 32
GGUF_U32, GGUF_STRING = 4, 8
GGML = {"f32": 0, "f16": 1, "bf16": 30}

# role -> our name, then the names a source may use for it
ROLES = [
    ("encoder.conv1.weight", ["encoder.conv1.weight", "model.encoder.conv1.weight"], True),
    ("encoder.conv1.bias", ["encoder.conv1.bias", "model.encoder.conv1.bias"], True),
    ("encoder.conv2.weight", ["encoder.conv2.weight", "model.encoder.conv2.weight"], True),
    ("encoder.conv2.bias", ["encoder.conv2.bias", "model.encoder.conv2.bias"], True),
    ("encoder.positional_embedding",
     ["encoder.positional_embedding", "model.encoder.embed_positions.weight"], False),
]


class Fail(Exception):
    pass


def gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def pad(n):
    return (ALIGN - n % ALIGN) % ALIGN


def write_gguf(path, kv, tensors):
    """kv: [(key, "str"|"u32", value)]; tensors: [(name, ggml_type, ne, bytes)].
    Written to a temporary file in the same folder, then renamed."""
    head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv)))
    for key, kind, val in kv:
        head += gguf_str(key)
        if kind == "str":
            head += struct.pack("<I", GGUF_STRING) + gguf_str(val)
        else:
            head += struct.pack("<II", GGUF_U32, val)
    off = 0
    for name, ttype, ne, data in tensors:
        head += gguf_str(name) + struct.pack("<I", len(ne))
        head += b"".join(struct.pack("<Q", n) for n in ne)
        head += struct.pack("<IQ", ttype, off)
        off += len(data) + pad(len(data))
    head += b"\0" * pad(len(head))
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(head)
            for _, _, _, data in tensors:
                f.write(data + b"\0" * pad(len(data)))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def tensor_bytes(t, to, torch):
    """Little-endian bytes of t (contiguous), in its own type or `to`."""
    kinds = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
    if t.dtype not in kinds:
        raise Fail(f"type {t.dtype} is not supported (float32, float16 or bfloat16)")
    if to != "keep" and kinds[t.dtype] != to:
        t = t.to({"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[to])
    t = t.detach().cpu().contiguous()
    kind = kinds[t.dtype]
    arr = (t.view(torch.int16) if kind == "bf16" else t).numpy()
    return GGML[kind], arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()


def convert(args):
    import torch  # imported here so that --help works without it

    try:
        ckpt = torch.load(args.input, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many kinds; one line is what we promise
        raise Fail(f"cannot load as a PyTorch checkpoint: {str(e).splitlines()[0]}")
    if not isinstance(ckpt, dict):
        raise Fail("not a checkpoint dictionary")
    sd = ckpt.get("model_state_dict", ckpt.get("state_dict", ckpt))
    dims = ckpt.get("dims", {}) if isinstance(ckpt.get("dims", {}), dict) else {}
    found = {}
    for ours, names, required in ROLES:
        hit = next((n for n in names if n in sd), None)
        if hit is None and required:
            raise Fail(f"no tensor '{names[0]}' (nor '{names[1]}'): not a Whisper checkpoint?")
        if hit is not None:
            found[ours] = sd[hit]
    w1 = found["encoder.conv1.weight"]
    if w1.dim() != 3 or w1.shape[2] != 3:
        raise Fail(f"encoder.conv1.weight: shape {list(w1.shape)}, expected [d, n_mels, 3]")
    d, n_mels = int(w1.shape[0]), int(w1.shape[1])
    want = {"encoder.conv2.weight": [d, d, 3], "encoder.conv1.bias": [d],
            "encoder.conv2.bias": [d]}
    for name, shape in want.items():
        t = found[name]
        if name.endswith("bias"):
            t = found[name] = t.reshape(-1) if t.numel() == d else t
        if list(t.shape) != shape:
            raise Fail(f"{name}: shape {list(t.shape)}, expected {shape}")
    pos = found.get("encoder.positional_embedding")
    if pos is not None and (pos.dim() != 2 or pos.shape[1] != d):
        raise Fail(f"encoder.positional_embedding: shape {list(pos.shape)}, expected [n_pos, {d}]")
    for key, expect in (("n_mels", n_mels), ("n_audio_state", d)):
        if key in dims and int(dims[key]) != expect:
            raise Fail(f"dims says {key} = {dims[key]}, but encoder.conv1.weight has {expect}")

    base = os.path.basename(args.input)
    name = args.name or (base[:-3] if base.endswith(".pt") else base)
    kv = [("general.architecture", "str", "whisper"), ("general.name", "str", name),
          ("whisper.source.file", "str", base), ("whisper.source.format", "str", "pytorch"),
          ("whisper.n_mels", "u32", n_mels), ("whisper.d", "u32", d)]
    for key in sorted(dims):
        if key != "n_mels" and isinstance(dims[key], int) and 0 <= dims[key] < 2**32:
            kv.append((f"whisper.{key}", "u32", int(dims[key])))
    tensors = []
    for ours, _, _ in ROLES:
        if ours in found:
            t = found[ours]
            try:
                ttype, data = tensor_bytes(t, args.type, torch)
            except Fail as e:
                raise Fail(f"{ours}: {e}")
            tensors.append((ours, ttype, [int(n) for n in reversed(t.shape)], data))
    write_gguf(args.output, kv, tensors)


def main():
    p = argparse.ArgumentParser(
        description="openai-whisper .pt -> whisper-stem conv-stem GGUF (needs torch, numpy)")
    p.add_argument("input", help="IN.pt")
    p.add_argument("-o", "--output", required=True, help="OUT.gguf")
    p.add_argument("--type", choices=["keep", "f32", "f16", "bf16"], default="keep")
    p.add_argument("--name", help="general.name (default: IN's name less .pt)")
    args = p.parse_args()  # exits 2 on a usage error
    try:
        convert(args)
    except ImportError as e:
        print(f"pt-to-gguf: {e.name or e}: this script needs PyTorch and NumPy "
              "(pip install torch numpy)", file=sys.stderr)
        return 1
    except (Fail, OSError) as e:
        print(f"pt-to-gguf: {args.input}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

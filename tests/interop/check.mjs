// check.mjs - reads a GGUF file written by whisper-stem (ws-mkmodel, ws-convert)
// with an independent reader, @huggingface/gguf, and checks the stem in it.
//
//   node check.mjs FILE --n-mels N --d D [--weights f32|f16|bf16] [--biases TYPE]
//                  [--pos N:TYPE] [--meta key=value]... [--data-from X.safetensors]
//
// Checks: general.architecture = "whisper"; encoder.conv1.weight ne [3, n_mels, d],
// encoder.conv2.weight ne [3, d, d] (type --weights), the biases ne [d] (type --biases),
// encoder.positional_embedding ne [d, N] when --pos is given (absent otherwise);
// each --meta value; every tensor's data inside the file at an aligned offset; and
// with --data-from, that each stem tensor's bytes equal the safetensors file's
// (parsed here from its published layout, Hugging Face names).
// Prints one line; exits 0 when all hold, 1 on the first mismatch, 2 on bad usage.
import { gguf, GGMLQuantizationType } from "@huggingface/gguf";
import { readFileSync, statSync } from "node:fs";

const TYPES = { f32: GGMLQuantizationType.F32, f16: GGMLQuantizationType.F16, bf16: GGMLQuantizationType.BF16 };
const SIZE = { [GGMLQuantizationType.F32]: 4, [GGMLQuantizationType.F16]: 2, [GGMLQuantizationType.BF16]: 2 };
const HF = {
  "encoder.conv1.weight": "model.encoder.conv1.weight",
  "encoder.conv1.bias": "model.encoder.conv1.bias",
  "encoder.conv2.weight": "model.encoder.conv2.weight",
  "encoder.conv2.bias": "model.encoder.conv2.bias",
  "encoder.positional_embedding": "model.encoder.embed_positions.weight",
};

function usage(msg) {
  console.log(`check.mjs: ${msg}`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { weights: "f32", biases: "f32", meta: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => (i + 1 < argv.length ? argv[++i] : usage(`missing value after ${a}`));
    if (a === "--n-mels") o.nMels = BigInt(v());
    else if (a === "--d") o.d = BigInt(v());
    else if (a === "--weights") o.weights = v();
    else if (a === "--biases") o.biases = v();
    else if (a === "--pos") {
      const [n, t] = v().split(":");
      o.pos = { n: BigInt(n), type: t ?? "f32" };
    } else if (a === "--meta") {
      const kv = v();
      const eq = kv.indexOf("=");
      if (eq < 0) usage(`--meta wants key=value: ${kv}`);
      o.meta.push([kv.slice(0, eq), kv.slice(eq + 1)]);
    } else if (a === "--data-from") o.dataFrom = v();
    else if (!o.file && !a.startsWith("-")) o.file = a;
    else usage(`unknown argument ${a}`);
  }
  if (!o.file || o.nMels === undefined || o.d === undefined) usage("FILE, --n-mels and --d are required");
  for (const t of [o.weights, o.biases, o.pos?.type].filter(Boolean))
    if (!(t in TYPES)) usage(`unknown type ${t}`);
  return o;
}

class Mismatch extends Error {}
const fail = (msg) => {
  throw new Mismatch(msg);
};

function expectTensor(byName, name, shape, type) {
  const t = byName.get(name);
  if (!t) fail(`no tensor ${name}`);
  const got = t.shape.map(String).join(",");
  if (got !== shape.map(String).join(",")) fail(`${name}: shape [${got}], expected [${shape.join(",")}]`);
  if (t.dtype !== TYPES[type]) fail(`${name}: type ${GGMLQuantizationType[t.dtype]}, expected ${type}`);
}

// { name: Uint8Array } from a safetensors file: u64 LE header length, JSON, data.
function readSafetensors(path) {
  const buf = readFileSync(path);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString("utf8"));
  const out = {};
  for (const [name, e] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    out[name] = buf.subarray(8 + n + e.data_offsets[0], 8 + n + e.data_offsets[1]);
  }
  return out;
}

async function check(o) {
  const { metadata, tensorInfos, tensorDataOffset } = await gguf(o.file, { allowLocalFile: true });
  if (metadata["general.architecture"] !== "whisper")
    fail(`general.architecture = ${metadata["general.architecture"]}, expected whisper`);
  for (const [k, want] of o.meta)
    if (String(metadata[k]) !== want) fail(`metadata ${k} = ${metadata[k]}, expected ${want}`);

  const byName = new Map(tensorInfos.map((t) => [t.name, t]));
  const { nMels, d } = o;
  expectTensor(byName, "encoder.conv1.weight", [3n, nMels, d], o.weights);
  expectTensor(byName, "encoder.conv2.weight", [3n, d, d], o.weights);
  expectTensor(byName, "encoder.conv1.bias", [d], o.biases);
  expectTensor(byName, "encoder.conv2.bias", [d], o.biases);
  if (o.pos) expectTensor(byName, "encoder.positional_embedding", [d, o.pos.n], o.pos.type);
  else if (byName.has("encoder.positional_embedding")) fail("unexpected encoder.positional_embedding");

  // Every tensor lies in the file, at a multiple of the alignment.
  const size = BigInt(statSync(o.file).size);
  const align = BigInt(metadata["general.alignment"] ?? 32);
  for (const t of tensorInfos) {
    if (t.offset % align !== 0n) fail(`${t.name}: offset ${t.offset} not a multiple of ${align}`);
    const es = SIZE[t.dtype];
    if (es === undefined) continue;
    const nbytes = t.shape.reduce((a, b) => a * b, 1n) * BigInt(es);
    if (tensorDataOffset + t.offset + nbytes > size) fail(`${t.name}: data runs past the end of the file`);
  }

  if (o.dataFrom) {
    const src = readSafetensors(o.dataFrom);
    const file = readFileSync(o.file);
    for (const [ours, hf] of Object.entries(HF)) {
      if (!src[hf] || !byName.has(ours)) continue;
      const t = byName.get(ours);
      const at = Number(tensorDataOffset + t.offset);
      const got = file.subarray(at, at + src[hf].length);
      if (!got.equals(src[hf])) fail(`${ours}: bytes differ from ${hf} in ${o.dataFrom}`);
    }
  }
  return tensorInfos.length;
}

const o = parseArgs(process.argv.slice(2));
try {
  const n = await check(o);
  console.log(`ok ${o.file}: ${n} tensors read by @huggingface/gguf`);
} catch (e) {
  console.log(`FAIL ${o.file}: ${e instanceof Mismatch ? e.message : `unreadable: ${e.message}`}`);
  process.exit(1);
}

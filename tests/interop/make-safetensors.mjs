// make-safetensors.mjs - writes a tiny Hugging Face-style Whisper checkpoint
// (n_mels 4, d 6, 8 positions) from the safetensors layout, independently of
// whisper-stem: u64 LE header length, JSON header padded with spaces to a
// multiple of 8, then the tensors' little-endian bytes back to back.
//
//   node make-safetensors.mjs OUT.safetensors
import { writeFileSync } from "node:fs";

const tensors = [
  ["model.encoder.conv1.weight", "F16", [6, 4, 3]],
  ["model.encoder.conv1.bias", "F32", [6]],
  ["model.encoder.conv2.weight", "F16", [6, 6, 3]],
  ["model.encoder.conv2.bias", "F32", [6]],
  ["model.encoder.embed_positions.weight", "F32", [8, 6]],
];
const SIZE = { F16: 2, F32: 4 };

const header = { __metadata__: { format: "pt" } };
const chunks = [];
let off = 0;
tensors.forEach(([name, dtype, shape], k) => {
  const n = shape.reduce((a, b) => a * b, 1);
  const bytes = Buffer.alloc(n * SIZE[dtype]);
  for (let i = 0; i < n; i++) {
    const x = (((i * 7919 + k * 104729) % 2001) - 1000) / 337;
    if (dtype === "F32") bytes.writeFloatLE(x, 4 * i);
    // a finite half: sign, exponent 13..16, any mantissa
    else bytes.writeUInt16LE((x < 0 ? 0x8000 : 0) | ((13 + (i % 4)) << 10) | ((i * 97) & 0x3ff), 2 * i);
  }
  header[name] = { dtype, shape, data_offsets: [off, off + bytes.length] };
  off += bytes.length;
  chunks.push(bytes);
});
let json = JSON.stringify(header);
json += " ".repeat((8 - ((8 + json.length) % 8)) % 8);
const len = Buffer.alloc(8);
len.writeBigUInt64LE(BigInt(json.length));
writeFileSync(process.argv[2], Buffer.concat([len, Buffer.from(json), ...chunks]));

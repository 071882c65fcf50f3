/* ckpt.h - read other programs' Whisper checkpoints and convert their conv
 * stem to our GGUF (docs/spec.md, "Weights: GGUF").
 *
 * A ws_ckpt is a read-only view of one checkpoint: its tensors (name, type,
 * shape innermost first, where its little-endian bytes lie in which file)
 * and a few integer hyper-parameters. Readers, one file per format:
 *   safetensors.c       Hugging Face model.safetensors, and a sharded
 *                       checkpoint's model.safetensors.index.json
 *   ggml.c              whisper.cpp's legacy ggml .bin (magic "ggml")
 *   gguf.c              GGUF (ours, whisper.cpp's or llama.cpp's mmproj names)
 * open.c detects the format and owns the open files; convert.c picks the
 * stem tensors out and writes them. Every input is hostile: each reader
 * checks lengths, offsets and sizes (overflow-checked) against the file and
 * fails with one line naming the file and the problem.
 *
 * Usage:
 *   ws_err err;
 *   ws_ckpt *c = ws_ckpt_open("model.safetensors", WS_CKPT_AUTO, &err);
 *   if (!c || ws_ckpt_convert(c, "stem.gguf", &(ws_convert_opts){WS_CONVERT_KEEP, NULL}, &err))
 *       fprintf(stderr, "%s\n", err.msg);
 *   ws_ckpt_close(c);
 *
 * Tested by tests/test_convert.c (fixtures assembled byte by byte from each
 * published layout, converted by the tool, read back with ws_gguf_open).
 */
#ifndef WS_CKPT_H
#define WS_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "gguf/gguf.h"

#define WS_CKPT_MAX_DIMS 8      /* safetensors allows any rank; we keep 8 */
#define WS_CKPT_MAX_HPARAMS 16

typedef enum {
    WS_CKPT_AUTO = 0,         /* detect from the first bytes */
    WS_CKPT_SAFETENSORS,
    WS_CKPT_SAFETENSORS_INDEX,
    WS_CKPT_GGML,
    WS_CKPT_GGUF,
} ws_ckpt_format;

/* Format name as the CLI and the metadata spell it ("safetensors", ...). */
const char *ws_ckpt_format_name(ws_ckpt_format f);
/* The format for a CLI name, or -1. */
int ws_ckpt_format_parse(const char *name);

/* A ggml type id we can convert (WS_GGML_F32/F16/BF16), another ggml id, or
 * WS_CKPT_TYPE_OTHER for a dtype ggml has no id for (safetensors I64, ...). */
#define WS_CKPT_TYPE_OTHER 0xffffffffu

typedef struct {
    char *name;                    /* owned by the ws_ckpt */
    const char *dtype;             /* as the file spells it: "F16", "BF16", "Q4_0", ... */
    uint32_t type;                 /* see WS_CKPT_TYPE_OTHER */
    uint32_t n_dims;
    uint64_t ne[WS_CKPT_MAX_DIMS]; /* innermost first (PyTorch shape reversed); past n_dims: 1 */
    uint64_t n_elements;
    int readable;                  /* size known: ws_ckpt_read reads its nbytes */
    size_t nbytes;
    uint64_t offset;               /* of its little-endian bytes in file */
    const char *file;              /* the file holding it (a shard, for an index) */
    const ws_rfile *src;           /* that file, open */
} ws_ckpt_tensor;

typedef struct {
    char key[48];                  /* GGUF key, e.g. "whisper.n_audio_state" */
    uint32_t val;
} ws_ckpt_hparam;

typedef struct ws_ckpt ws_ckpt;

/* Opens and validates a checkpoint (the format forced, or detected when
 * WS_CKPT_AUTO). NULL with err naming the file and the problem. Reads the
 * headers only and keeps the files open (read with pread, never mapped: see
 * ws_rfile in gguf.h); tensor data is read by ws_ckpt_read. Every input must
 * be a regular file ("is a directory", "not a regular file (a FIFO)"). */
ws_ckpt *ws_ckpt_open(const char *path, ws_ckpt_format fmt, ws_err *err);
void ws_ckpt_close(ws_ckpt *c); /* NULL-safe; every pointer from c becomes invalid */

const char *ws_ckpt_path(const ws_ckpt *c);
const ws_ckpt_tensor *ws_ckpt_tensor_at(const ws_ckpt *c, size_t i);
/* The tensor with this exact name, or NULL (a hash lookup). */
const ws_ckpt_tensor *ws_ckpt_find(const ws_ckpt *c, const char *name);
/* Reads t's nbytes into dst; -1 with err when t is not readable or its file
 * changed since it was opened. */
int ws_ckpt_read(const ws_ckpt_tensor *t, void *dst, ws_err *err);
/* Fails, naming both, when path exists and is one of the files c has read
 * (same device and inode: the same path, another path to it, a hard link),
 * so that writing it would destroy an input. */
int ws_ckpt_check_output(const ws_ckpt *c, const char *path, ws_err *err);
const ws_ckpt_hparam *ws_ckpt_hparam_at(const ws_ckpt *c, size_t i);

/* --- conversion (convert.c) ----------------------------------------------- */

typedef enum {
    WS_CONVERT_KEEP = -1, /* each tensor in the type it has */
    WS_CONVERT_F32 = 0,
    WS_CONVERT_F16 = 1,
    WS_CONVERT_BF16 = 30,
} ws_convert_type;

typedef struct {
    ws_convert_type type; /* applies to the stem tensors and the positional table */
    const char *name;     /* general.name; NULL: the input file's name without extension */
} ws_convert_opts;

/* Writes the stem of c to out_path as GGUF v3 under openai-whisper's names
 * (encoder.conv1.weight [d, n_mels, 3], encoder.conv1.bias [d], conv2 alike,
 * encoder.positional_embedding [n_pos, d] when the source has one, and
 * mel_filters [n_mel, n_fft] F32 from a ggml .bin), biases as 1-D [d].
 * Source names, shapes and types accepted: the table in whisper/tensors.h,
 * the one the loader reads (openai's, Hugging Face's model.encoder.* and
 * embed_positions, llama.cpp mmproj's a.conv1d.1/2.* and a.position_embd).
 * Metadata: general.architecture = "whisper", general.name,
 * whisper.source.file (base name), whisper.source.format, whisper.n_mels,
 * whisper.d, plus the source's hyper-parameters (whisper.n_audio_state, ...).
 * Values are copied bit for bit unless opts->type asks for another type
 * (round to nearest even). Returns 0, or -1 with err; out_path is written
 * through a temporary file, so a failure leaves no output. An out_path that
 * is one of the input files is refused before anything is written
 * (ws_ckpt_check_output). */
int ws_ckpt_convert(const ws_ckpt *c, const char *out_path, const ws_convert_opts *opts,
                    ws_err *err);

#endif

/* gguf.h - read and write GGUF files (versions 2 and 3, little-endian).
 *
 * Layout (ggml docs/gguf.md; all integers little-endian):
 *   header   "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 *   kv[]     string key | u32 value_type | value
 *              value: u8 i8 u16 i16 u32 i32 f32 bool(u8) string array u64 i64 f64
 *                     (type ids 0..12); string = u64 len + bytes, no NUL;
 *                     array = u32 elem_type + u64 count + elements
 *   info[]   string name | u32 n_dims | u64 ne[n_dims] | u32 ggml_type | u64 offset
 *   padding  to a multiple of general.alignment (u32, default 32, power of two)
 *   data     each tensor at data_start + offset (offset a multiple of the alignment)
 * ne lists dimensions innermost first: PyTorch [d, n_mels, 3] is ne = [3, n_mels, d].
 * Version 1 (32-bit counts) is refused; version 2 has the same layout as 3.
 *
 * Every file is treated as hostile: the reader walks the file with a bounded
 * cursor, checks each count, length and size for overflow and against the
 * file's length, and fails with one line naming the file, the offset and the
 * tensor. Limits (beyond "it must fit in the file"):
 *   WS_GGUF_MAX_COUNT  tensors and metadata pairs, each
 *   WS_GGUF_MAX_NAME   bytes in a key or tensor name (the spec's key limit)
 *   WS_GGUF_MAX_STRING bytes in a string value
 *   WS_GGUF_MAX_DIMS   dimensions per tensor (ggml's GGML_MAX_DIMS)
 * Arrays of arrays are refused (ggml neither writes nor reads them).
 * Tensor types the reader does not know are listed with readable == 0;
 * their data range cannot be checked and cannot be read.
 *
 * Only the header (metadata and tensor infos) is read at open; tensor data is
 * read when asked for, with pread (see ws_rfile below for why not mmap), so a
 * whole-model file of gigabytes costs what the tensors a caller reads cost.
 *
 * Usage:
 *   ws_err err;
 *   ws_gguf *g = ws_gguf_open("tiny.gguf", &err);
 *   if (!g) { fprintf(stderr, "%s\n", err.msg); ... }
 *   const ws_gguf_tensor *t = ws_gguf_find(g, "encoder.conv1.weight");
 *   if (t && t->type == WS_GGML_F32) ws_gguf_read(g, t, 0, buf, t->nbytes, &err) ...
 *   ws_gguf_close(g);            // t is invalid from here on
 *
 *   ws_gguf_writer *w = ws_gguf_writer_new();
 *   ws_gguf_writer_set_str(w, "general.architecture", "whisper", &err);
 *   ws_gguf_writer_add_tensor(w, "x", 2, (uint64_t[]){3, 4}, WS_GGML_F16, src, &err);
 *   ws_gguf_writer_write(w, "out.gguf", &err);
 *   ws_gguf_writer_free(w);
 *
 * Tested by tests/test_gguf.c (including a file assembled byte by byte).
 */
#ifndef WS_GGUF_H
#define WS_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* --- regular files, read with pread ------------------------------------------
 * Models and checkpoints are read, never mapped. A mapped file that shrinks
 * while it is mapped (rewritten in place, truncated by another program) turns
 * the next access to a page past its new end into SIGBUS, which kills the
 * process without a message. pread returns short instead, which is an error
 * for that file. The other way out, a SIGBUS handler that siglongjmps out of
 * guarded accesses, would need a guard around every touch of mapped bytes
 * (cJSON's parse of a header, the GGUF writer's copies) and competes with
 * sanitizers for the signal; reading only what is needed costs no more
 * memory than the touched pages of a mapping did.
 *
 * ws_rfile_open opens with O_NONBLOCK, so a FIFO or a device cannot block it,
 * and refuses anything but a regular file ("is a directory", "not a regular
 * file (a FIFO)"). ws_rfile_read reads exactly n bytes or fails: a file that
 * is shorter than at open, or whose size or modification time changed since,
 * is "the file changed while being read". */
typedef struct {
    int fd;             /* -1 when closed */
    char *path;         /* for messages; owned */
    uint64_t size;      /* st_size at open */
    uint64_t dev, ino;  /* identity, to tell whether two paths are one file */
    int64_t mtime_s, mtime_ns;
} ws_rfile;

/* Opens path read-only. 0, or -1 with err naming the file (f is then closed). */
int ws_rfile_open(ws_rfile *f, const char *path, ws_err *err);
/* Reads bytes [off, off + n) into dst. what (may be NULL) names the part
 * being read in a message ("tensor 'x'", "the header"). */
int ws_rfile_read(const ws_rfile *f, uint64_t off, void *dst, size_t n, const char *what,
                  ws_err *err);
void ws_rfile_close(ws_rfile *f); /* NULL-safe, idempotent */

/* A read-ahead window over a ws_rfile, for parsers that walk a file in small
 * steps: ws_window_at returns bytes [off, off + n) (the caller has checked
 * that they lie within f->size), valid until the next call; NULL with err.
 * Start from (ws_window){.f = &file}. */
typedef struct {
    const ws_rfile *f;
    uint8_t *buf;
    uint64_t off;       /* file offset of buf[0] */
    size_t len, cap;
} ws_window;

const uint8_t *ws_window_at(ws_window *w, uint64_t off, size_t n, const char *what, ws_err *err);
void ws_window_free(ws_window *w);

/* --- GGUF ----------------------------------------------------------------- */

#define WS_GGUF_MAX_DIMS 4
#define WS_GGUF_MAX_COUNT (1u << 20)
#define WS_GGUF_MAX_NAME 65535u
#define WS_GGUF_MAX_STRING (1u << 24)
#define WS_GGUF_DEFAULT_ALIGNMENT 32u

/* ggml tensor type ids used here (ggml.h enum ggml_type). */
enum { WS_GGML_F32 = 0, WS_GGML_F16 = 1, WS_GGML_Q8_0 = 8, WS_GGML_BF16 = 30 };

/* GGUF metadata value types. */
enum {
    WS_GGUF_U8 = 0, WS_GGUF_I8, WS_GGUF_U16, WS_GGUF_I16, WS_GGUF_U32, WS_GGUF_I32,
    WS_GGUF_F32, WS_GGUF_BOOL, WS_GGUF_STRING, WS_GGUF_ARRAY, WS_GGUF_U64, WS_GGUF_I64,
    WS_GGUF_F64
};

typedef struct ws_gguf ws_gguf;

typedef struct {
    const char *name;              /* NUL-terminated; owned by the ws_gguf */
    uint32_t n_dims;               /* 0..WS_GGUF_MAX_DIMS */
    uint64_t ne[WS_GGUF_MAX_DIMS]; /* innermost first; entries past n_dims are 1 */
    uint32_t type;                 /* ggml type id */
    uint64_t n_elements;           /* product of ne */
    int readable;                  /* 1 when the type's size is known: ws_gguf_read reads it */
    size_t nbytes;                 /* bytes of data; 0 if the type is unknown */
    size_t file_offset;            /* absolute offset of the data in the file */
    size_t info_offset;            /* absolute offset of this tensor's info record */
} ws_gguf_tensor;

/* Reads and validates the header (metadata, tensor infos, every data range
 * inside the file); keeps the file open for ws_gguf_read. NULL with err on
 * failure. */
ws_gguf *ws_gguf_open(const char *path, ws_err *err);
/* Closes the file; every pointer obtained from g becomes invalid. NULL-safe. */
void ws_gguf_close(ws_gguf *g);

/* Reads bytes [off, off + n) of t's data into dst. -1 with err when t is not
 * readable, the range is not inside t, or the file changed since open. */
int ws_gguf_read(const ws_gguf *g, const ws_gguf_tensor *t, size_t off, void *dst, size_t n,
                 ws_err *err);
/* The open file (for its identity, or to read through ws_rfile_read). */
const ws_rfile *ws_gguf_file(const ws_gguf *g);

const char *ws_gguf_path(const ws_gguf *g);
uint32_t ws_gguf_version(const ws_gguf *g);
size_t ws_gguf_alignment(const ws_gguf *g);
size_t ws_gguf_data_offset(const ws_gguf *g); /* absolute start of the data section */
size_t ws_gguf_n_tensors(const ws_gguf *g);
size_t ws_gguf_n_kv(const ws_gguf *g);
/* Tensors in file order, i < ws_gguf_n_tensors(g). */
const ws_gguf_tensor *ws_gguf_tensor_at(const ws_gguf *g, size_t i);
/* The tensor with this exact name, or NULL. */
const ws_gguf_tensor *ws_gguf_find(const ws_gguf *g, const char *name);

/* Metadata by key. Each returns 1 and sets *out when the key holds a value of
 * a fitting type, 0 when the key is absent, -1 when it holds another type.
 * get_str copies at most cap-1 bytes and NUL-terminates (cap >= 1); *len (may
 * be NULL) gets the full length. get_int takes any integer or bool type
 * (-1 for a u64 above INT64_MAX); get_float takes f32 or f64. */
int ws_gguf_get_str(const ws_gguf *g, const char *key, char *buf, size_t cap, size_t *len);
int ws_gguf_get_int(const ws_gguf *g, const char *key, int64_t *out);
int ws_gguf_get_float(const ws_gguf *g, const char *key, double *out);

/* "F32", "Q8_0", ... for a ggml type id, or NULL when unknown. */
const char *ws_ggml_type_name(uint32_t type);
/* Bytes for n elements of a type, 0 with err if the type is unknown, n is
 * not a whole number of its blocks, or the size overflows. Used to validate
 * both what is read and what is written. */
int ws_ggml_nbytes(uint32_t type, uint64_t n, size_t *out, ws_err *err);

/* --- writer ---------------------------------------------------------------
 * Collects metadata and tensors (copied), then writes GGUF v3 in one go to
 * PATH.tmp.XXXXXX and renames it to PATH (mode 0644), so PATH is never seen
 * half-written; the temporary file is removed on failure. Keys and names must
 * be unique. Setting "general.alignment" (u32, a power of two) changes the
 * alignment used; otherwise 32 is used and not written. */
typedef struct ws_gguf_writer ws_gguf_writer;

ws_gguf_writer *ws_gguf_writer_new(void); /* NULL when out of memory */
void ws_gguf_writer_free(ws_gguf_writer *w); /* NULL-safe */

int ws_gguf_writer_set_str(ws_gguf_writer *w, const char *key, const char *val, ws_err *err);
int ws_gguf_writer_set_u32(ws_gguf_writer *w, const char *key, uint32_t val, ws_err *err);
int ws_gguf_writer_set_f32(ws_gguf_writer *w, const char *key, float val, ws_err *err);

/* Adds a tensor of shape ne[0..n_dims) (innermost first) from float32 src,
 * converted to type F32, F16 or BF16 (round to nearest even). */
int ws_gguf_writer_add_tensor(ws_gguf_writer *w, const char *name, uint32_t n_dims,
                              const uint64_t *ne, uint32_t type, const float *src, ws_err *err);
/* Adds a tensor of any type whose size is known, from nbytes of raw data. */
int ws_gguf_writer_add_raw(ws_gguf_writer *w, const char *name, uint32_t n_dims,
                           const uint64_t *ne, uint32_t type, const void *data, size_t nbytes,
                           ws_err *err);

int ws_gguf_writer_write(const ws_gguf_writer *w, const char *path, ws_err *err);

#endif

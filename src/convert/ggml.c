/* ggml.c - whisper.cpp's legacy ggml model file (ggml-*.bin).
 *
 * Layout, as whisper.cpp's models/convert-pt-to-ggml.py writes it and
 * whisper_model_load reads it (all int32/float32 little-endian, no padding):
 *   u32  magic 0x67676d6c ("ggml" as a little-endian u32: bytes "lmgg")
 *   i32  n_vocab n_audio_ctx n_audio_state n_audio_head n_audio_layer
 *        n_text_ctx n_text_state n_text_head n_text_layer n_mels ftype
 *   i32  n_mel, i32 n_fft, then n_mel x n_fft f32     mel filterbank, row-major
 *   i32  n_tokens, then per token: i32 len + len bytes  (n_tokens may differ from n_vocab)
 *   tensor records until end of file:
 *     i32 n_dims, i32 name_len, i32 ttype, i32 ne[n_dims] (innermost first),
 *     name_len bytes of name, then the data: ggml type ttype, ne[0]*...*ne[n-1]
 *     elements (0 F32, 1 F16, quantized types in blocks)
 * whisper.cpp stores conv weights F16 with ne = [3, n_mels, d] and the conv
 * biases F32 reshaped to PyTorch [d, 1], i.e. ne = [1, d]; a quantized file
 * keeps the conv tensors F16. The filterbank becomes tensor "mel_filters"
 * (ne = [n_fft, n_mel], F32) and the hyper-parameters whisper.n_vocab, ...,
 * whisper.ftype. Tensors of any ggml type with a known size are skipped over.
 *
 * Tested by tests/test_convert.c (convert/ggml_*).
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define GGML_MAGIC 0x67676d6cu
#define GGML_MAX_DIMS 4
#define MAX_NAME 4096          /* whisper.cpp names are < 64 bytes */
#define MAX_MEL 65536          /* sanity limits on the filterbank's sides */

static const char *const HPARAMS[] = {
    "n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer", "n_text_ctx",
    "n_text_state", "n_text_head", "n_text_layer", "n_mels", "ftype",
};
#define N_HPARAMS (sizeof HPARAMS / sizeof HPARAMS[0])

/* Walks the file through a read-ahead window: records are small and many
 * (a vocabulary of 51865 tokens), and tensor data is skipped unread. */
typedef struct {
    ws_window w;
    size_t n, off;
    const char *path;
} cursor;

static int need(cursor *c, size_t k, const char *what, ws_err *err)
{
    if (c->n - c->off < k)
        return ws_errf(err, "%s: truncated at byte %zu reading %s (%zu bytes needed, %zu left)",
                       c->path, c->off, what, k, c->n - c->off);
    return 0;
}

/* need(), then the k bytes at the cursor (valid until the next call). */
static const uint8_t *bytes_at(cursor *c, size_t k, const char *what, ws_err *err)
{
    if (need(c, k, what, err))
        return NULL;
    return ws_window_at(&c->w, c->off, k, NULL, err);
}

static int rd_i32(cursor *c, const char *what, int32_t *v, ws_err *err)
{
    const uint8_t *b = bytes_at(c, 4, what, err);
    if (!b)
        return -1;
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                 (uint32_t)b[3] << 24;
    memcpy(v, &u, 4);
    c->off += 4;
    return 0;
}

/* An int32 in [lo, hi]. */
static int rd_range(cursor *c, const char *what, int32_t lo, int32_t hi, int32_t *v, ws_err *err)
{
    size_t at = c->off;
    if (rd_i32(c, what, v, err))
        return -1;
    if (*v < lo || *v > hi)
        return ws_errf(err, "%s: %s = %" PRId32 " at byte %zu, expected %" PRId32 "..%" PRId32,
                       c->path, what, *v, at, lo, hi);
    return 0;
}

static int skip(cursor *c, size_t k, const char *what, ws_err *err)
{
    if (need(c, k, what, err))
        return -1;
    c->off += k;
    return 0;
}

static int read_tensor(ws_ckpt *c, cursor *cur, ws_err *err)
{
    const size_t at = cur->off;
    int32_t n_dims, name_len, ttype;
    if (need(cur, 12, "a tensor header", err) ||
        rd_range(cur, "tensor n_dims", 1, GGML_MAX_DIMS, &n_dims, err) ||
        rd_range(cur, "tensor name length", 1, MAX_NAME, &name_len, err) ||
        rd_range(cur, "tensor type", 0, INT32_MAX, &ttype, err))
        return -1;
    ws_ckpt_tensor t = {0};
    t.n_dims = (uint32_t)n_dims;
    size_t numel = 1;
    for (int j = 0; j < WS_CKPT_MAX_DIMS; j++)
        t.ne[j] = 1;
    for (int j = 0; j < n_dims; j++) {
        int32_t ne;
        if (rd_range(cur, "tensor ne", 1, INT32_MAX, &ne, err))
            return -1;
        t.ne[j] = (uint64_t)ne;
        if (ws_mul_size(numel, (size_t)ne, &numel))
            return ws_errf(err, "%s: tensor at byte %zu: element count overflows", cur->path, at);
    }
    t.n_elements = numel;
    char name[MAX_NAME + 1];
    const uint8_t *nb = bytes_at(cur, (size_t)name_len, "a tensor name", err);
    if (!nb)
        return -1;
    memcpy(name, nb, (size_t)name_len);
    name[name_len] = 0;
    cur->off += (size_t)name_len;
    if (strlen(name) != (size_t)name_len)
        return ws_errf(err, "%s: tensor name at byte %zu holds a NUL byte", cur->path,
                       cur->off - (size_t)name_len);
    t.name = name;
    t.type = (uint32_t)ttype;
    t.dtype = ws_ggml_type_name(t.type);
    if (!t.dtype)
        return ws_errf(err, "%s: tensor '%s': unknown ggml type %" PRId32, cur->path, name,
                       ttype);
    ws_err e2 = {{0}};
    if (ws_ggml_nbytes(t.type, numel, &t.nbytes, &e2) || (t.nbytes == 0 && numel))
        return ws_errf(err, "%s: tensor '%s': %s: %s", cur->path, name, t.dtype,
                       e2.msg[0] ? e2.msg : "size unknown");
    t.readable = 1;
    t.offset = cur->off;
    t.src = cur->w.f;
    char what[MAX_NAME + 32];
    snprintf(what, sizeof what, "the data of '%s'", name);
    if (skip(cur, t.nbytes, what, err))
        return -1;
    return ws_ckpt_add_tensor(c, &t, cur->path, err);
}

/* The whole file, record by record. */
static int walk(ws_ckpt *c, const char *path, cursor *cur, ws_err *err)
{
    int32_t magic;
    if (rd_i32(cur, "the magic", &magic, err))
        return -1;
    if ((uint32_t)magic != GGML_MAGIC)
        return ws_errf(err, "%s: not a ggml model: magic 0x%08" PRIx32 ", expected 0x%08x",
                       path, (uint32_t)magic, GGML_MAGIC);
    for (size_t i = 0; i < N_HPARAMS; i++) {
        int32_t v;
        char key[48];
        if (rd_range(cur, HPARAMS[i], 0, INT32_MAX, &v, err))
            return -1;
        snprintf(key, sizeof key, "whisper.%s", HPARAMS[i]);
        if (ws_ckpt_set_hparam(c, key, (uint32_t)v, err))
            return -1;
    }
    /* mel filterbank */
    int32_t n_mel, n_fft;
    if (rd_range(cur, "mel filter n_mel", 1, MAX_MEL, &n_mel, err) ||
        rd_range(cur, "mel filter n_fft", 1, MAX_MEL, &n_fft, err))
        return -1;
    ws_ckpt_tensor mel = {.name = "mel_filters", .dtype = "F32", .type = WS_GGML_F32,
                          .n_dims = 2};
    for (int j = 0; j < WS_CKPT_MAX_DIMS; j++)
        mel.ne[j] = 1;
    mel.ne[0] = (uint64_t)n_fft;
    mel.ne[1] = (uint64_t)n_mel;
    mel.n_elements = (uint64_t)n_mel * (uint64_t)n_fft; /* < 2^32 */
    mel.nbytes = (size_t)mel.n_elements * 4;
    mel.readable = 1;
    mel.offset = cur->off;
    mel.src = cur->w.f;
    if (skip(cur, mel.nbytes, "the mel filters", err) ||
        ws_ckpt_add_tensor(c, &mel, cur->path, err))
        return -1;
    /* vocabulary: skipped, but every length checked */
    int32_t n_tok;
    if (rd_range(cur, "vocabulary size", 0, INT32_MAX, &n_tok, err))
        return -1;
    for (int32_t i = 0; i < n_tok; i++) {
        int32_t len;
        if (rd_range(cur, "token length", 0, INT32_MAX, &len, err) ||
            skip(cur, (size_t)len, "a token", err))
            return -1;
    }
    while (cur->off < cur->n)
        if (read_tensor(c, cur, err))
            return -1;
    return 0;
}

int ws_ckpt_read_ggml(ws_ckpt *c, const char *path, ws_err *err)
{
    const ws_rfile *f;
    if (ws_ckpt_open_file(c, path, &f, err))
        return -1;
    if (f->size > SIZE_MAX)
        return ws_errf(err, "%s: too large to read", path);
    cursor cur = {{.f = f}, (size_t)f->size, 0, f->path};
    int rc = walk(c, path, &cur, err);
    ws_window_free(&cur.w);
    return rc;
}

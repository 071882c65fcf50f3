/* model.c - the stem weights: load from GGUF, save to GGUF, random init.
 *
 * Tensors (PyTorch shape; GGUF ne, innermost first):
 *   encoder.conv1.weight          [d, n_mels, 3]  ne [3, n_mels, d]
 *   encoder.conv1.bias            [d]             ne [d], or [1, d] / [d, 1]
 *   encoder.conv2.weight          [d, d, 3]       ne [3, d, d]
 *   encoder.conv2.bias            [d]             ne [d], or [1, d] / [d, 1]
 *   encoder.positional_embedding  [n_pos, d]      ne [d, n_pos]   (optional)
 * Hugging Face names are the same with a "model." prefix, except the
 * positional table, model.encoder.embed_positions.weight. n_mels and d come
 * from conv1.weight; every other shape must agree with them. Because ne is
 * innermost first and PyTorch is row-major, the file's bytes are already in
 * the [d][n_mels][3] order model.h documents: loading is a type conversion.
 * F16 and BF16 are widened to float32 exactly. Every name, type and shape is
 * checked (find_stem) before any data is read, and only the stem's tensors
 * are read, so a whole-model file costs what its stem costs.
 * Tested by tests/test_model.c.
 */
#include "model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stem.h"
#include "gguf/gguf.h"

#define MAX_DIM 65536      /* sanity limit on n_mels, d and n_pos */
#define RANDOM_N_POS 1500  /* openai-whisper's n_audio_ctx */

const char *ws_tensor_type_name(ws_tensor_type t)
{
    switch (t) {
    case WS_TT_F32: return "f32";
    case WS_TT_F16: return "f16";
    case WS_TT_BF16: return "bf16";
    }
    return "?";
}

void ws_model_free(ws_model *m)
{
    if (!m)
        return;
    free(m->conv1_w);
    free(m->conv1_b);
    free(m->conv2_w);
    free(m->conv2_b);
    free(m->pos);
    memset(m, 0, sizeof *m);
}

/* --- load ---------------------------------------------------------------- */

/* "[3,80,384]": ne as the file lists it. */
static void fmt_ne(char *buf, size_t cap, const uint64_t *ne, uint32_t n_dims)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (uint32_t j = 0; j < n_dims && k < cap; j++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%" PRIu64, j ? "," : "", ne[j]);
    if (k < cap)
        snprintf(buf + k, cap - k, "]");
}

/* Same shape, ignoring trailing dimensions of 1 (unused dims read as 1). */
static int same_shape(const ws_gguf_tensor *t, const uint64_t *want)
{
    for (int j = 0; j < WS_GGUF_MAX_DIMS; j++)
        if (t->ne[j] != want[j])
            return 0;
    return 1;
}

/* The tensor under its openai name, else its Hugging Face name; NULL with
 * err naming both when required and neither is there. */
static const ws_gguf_tensor *find2(ws_gguf *g, const char *oa, const char *hf, int required,
                                   ws_err *err)
{
    const ws_gguf_tensor *t = ws_gguf_find(g, oa);
    if (!t)
        t = ws_gguf_find(g, hf);
    if (!t && required)
        ws_errf(err, "%s: no tensor '%s' (nor '%s')", ws_gguf_path(g), oa, hf);
    return t;
}

static int check_type(ws_gguf *g, const ws_gguf_tensor *t, ws_err *err)
{
    if (t->type == WS_GGML_F32 || t->type == WS_GGML_F16 || t->type == WS_GGML_BF16)
        return 0;
    const char *n = ws_ggml_type_name(t->type);
    if (n)
        return ws_errf(err, "%s: tensor '%s': type %s is not supported (F32, F16 or BF16)",
                       ws_gguf_path(g), t->name, n);
    return ws_errf(err, "%s: tensor '%s': type %" PRIu32 " is not supported (F32, F16 or BF16)",
                   ws_gguf_path(g), t->name, t->type);
}

static int shape_error(ws_gguf *g, const ws_gguf_tensor *t, const char *expected, ws_err *err)
{
    char got[128];
    fmt_ne(got, sizeof got, t->ne, t->n_dims);
    return ws_errf(err, "%s: %s: got ne=%s, expected %s", ws_gguf_path(g), t->name, got, expected);
}

/* Reads t and widens it to float32, with no buffer beside the result: the
 * raw bytes are read into the top of the output (F32: all of it; F16/BF16:
 * its second half) and converted upwards in place. Element i's raw bytes
 * sit at or above the float it becomes, so no raw byte is overwritten before
 * it is read (F16: raw i at 2n + 2i >= 4i + 4 for i < n - 1, and element
 * n - 1 reads its bytes before writing). Peak memory is the float array. */
static float *to_f32(ws_gguf *g, const ws_gguf_tensor *t, ws_err *err)
{
    if (check_type(g, t, err))
        return NULL;
    size_t n = (size_t)t->n_elements;
    float *out = malloc((n ? n : 1) * sizeof *out);
    if (!out)
        return ws_errf(err, "%s: tensor '%s': out of memory for %zu floats", ws_gguf_path(g),
                       t->name, n), NULL;
    uint8_t *raw = (uint8_t *)out + n * sizeof *out - t->nbytes; /* nbytes: n * 4 or n * 2 */
    const uint8_t *p = raw;
    if (ws_gguf_read(g, t, 0, raw, t->nbytes, err)) {
        free(out);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (t->type == WS_GGML_F32) {
            uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
                         (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
            memcpy(&out[i], &u, 4);
        } else {
            uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
            out[i] = t->type == WS_GGML_F16 ? ws_f16_to_f32(h) : ws_bf16_to_f32(h);
        }
    }
    return out;
}

static const ws_gguf_tensor *find_bias(ws_gguf *g, const char *oa, const char *hf, uint64_t d,
                                       ws_err *err)
{
    const ws_gguf_tensor *t = find2(g, oa, hf, 1, err);
    if (!t)
        return NULL;
    const uint64_t a[4] = {d, 1, 1, 1}, b[4] = {1, d, 1, 1};
    if (!same_shape(t, a) && !same_shape(t, b)) {
        char want[96];
        snprintf(want, sizeof want, "[%" PRIu64 "] (or [1,%" PRIu64 "] or [%" PRIu64 ",1])", d, d, d);
        return shape_error(g, t, want, err), NULL;
    }
    return check_type(g, t, err) ? NULL : t;
}

/* The stem's tensors in a file, every name, type and shape checked; no data
 * is read. n_mels and d come from conv1.weight. */
typedef struct {
    const ws_gguf_tensor *w1, *b1, *w2, *b2, *pos; /* pos may be NULL */
} stem_tensors;

static int find_stem(ws_gguf *g, stem_tensors *s, ws_err *err)
{
    memset(s, 0, sizeof *s);
    const ws_gguf_tensor *w1 =
        find2(g, "encoder.conv1.weight", "model.encoder.conv1.weight", 1, err);
    if (!w1 || check_type(g, w1, err))
        return -1;
    if (w1->ne[0] != 3 || w1->ne[1] < 1 || w1->ne[1] > MAX_DIM || w1->ne[2] < 1 ||
        w1->ne[2] > MAX_DIM || w1->ne[3] != 1)
        return shape_error(g, w1, "[3,n_mels,d] with n_mels and d in 1..65536", err);
    const uint64_t d = w1->ne[2];

    const ws_gguf_tensor *w2 =
        find2(g, "encoder.conv2.weight", "model.encoder.conv2.weight", 1, err);
    if (!w2 || check_type(g, w2, err))
        return -1;
    const uint64_t want2[4] = {3, d, d, 1};
    if (!same_shape(w2, want2)) {
        char want[96];
        snprintf(want, sizeof want, "[3,%" PRIu64 ",%" PRIu64 "]", d, d);
        return shape_error(g, w2, want, err);
    }

    const ws_gguf_tensor *pos = find2(g, "encoder.positional_embedding",
                                      "model.encoder.embed_positions.weight", 0, err);
    if (pos && (pos->ne[0] != d || pos->ne[1] < 1 || pos->ne[1] > MAX_DIM || pos->ne[2] != 1 ||
                pos->ne[3] != 1)) {
        char want[96];
        snprintf(want, sizeof want, "[%" PRIu64 ",n_pos] with n_pos in 1..65536", d);
        return shape_error(g, pos, want, err);
    }
    if (pos && check_type(g, pos, err))
        return -1;
    s->b1 = find_bias(g, "encoder.conv1.bias", "model.encoder.conv1.bias", d, err);
    if (!s->b1)
        return -1;
    s->b2 = find_bias(g, "encoder.conv2.bias", "model.encoder.conv2.bias", d, err);
    if (!s->b2)
        return -1;
    s->w1 = w1;
    s->w2 = w2;
    s->pos = pos;
    return 0;
}

int ws_model_load_gguf(ws_model *m, ws_gguf *g, ws_err *err)
{
    memset(m, 0, sizeof *m);
    stem_tensors s;
    if (find_stem(g, &s, err))
        return -1;
    m->n_mels = (int)s.w1->ne[1];
    m->d = (int)s.w1->ne[2];
    m->conv1_type = (ws_tensor_type)s.w1->type;
    m->conv2_type = (ws_tensor_type)s.w2->type;
    /* Only the stem's tensors are read; the rest of a whole-model file is not. */
    if (!(m->conv1_w = to_f32(g, s.w1, err)) || !(m->conv1_b = to_f32(g, s.b1, err)) ||
        !(m->conv2_w = to_f32(g, s.w2, err)) || !(m->conv2_b = to_f32(g, s.b2, err)) ||
        (s.pos && !(m->pos = to_f32(g, s.pos, err)))) {
        ws_model_free(m);
        return -1;
    }
    if (s.pos)
        m->n_pos = (int)s.pos->ne[1];
    if (ws_gguf_get_str(g, "general.name", m->name, sizeof m->name, NULL) < 0)
        m->name[0] = 0; /* present with another type: ignore, the name is informative */
    snprintf(m->path, sizeof m->path, "%s", ws_gguf_path(g));
    return 0;
}

int ws_model_load(ws_model *m, const char *path, ws_err *err)
{
    memset(m, 0, sizeof *m);
    ws_gguf *g = ws_gguf_open(path, err);
    if (!g)
        return -1;
    int rc = ws_model_load_gguf(m, g, err);
    ws_gguf_close(g);
    return rc;
}

int ws_model_probe(const char *path, int *n_mels, int *d, ws_err *err)
{
    ws_gguf *g = ws_gguf_open(path, err);
    if (!g)
        return -1;
    stem_tensors s;
    int rc = find_stem(g, &s, err);
    if (!rc) {
        *n_mels = (int)s.w1->ne[1];
        *d = (int)s.w1->ne[2];
    }
    ws_gguf_close(g);
    return rc;
}

/* --- random -------------------------------------------------------------- */

static void fill_uniform(ws_rng *r, float *x, size_t n, double bound)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((2.0 * ws_rng_uniform(r) - 1.0) * bound);
}

int ws_model_init_random(ws_model *m, int n_mels, int d, uint64_t seed, int with_pos, ws_err *err)
{
    memset(m, 0, sizeof *m);
    if (n_mels < 1 || n_mels > MAX_DIM || d < 1 || d > MAX_DIM)
        return ws_errf(err, "model shape %dx%d: n_mels and d must be in 1..%d", n_mels, d, MAX_DIM);
    if (with_pos && (d < 4 || d % 2))
        return ws_errf(err, "positional embedding needs an even width >= 4, got %d", d);
    const size_t nm = (size_t)n_mels, dd = (size_t)d;
    m->n_mels = n_mels;
    m->d = d;
    m->conv1_w = malloc(dd * nm * 3 * sizeof(float));
    m->conv1_b = malloc(dd * sizeof(float));
    m->conv2_w = malloc(dd * dd * 3 * sizeof(float));
    m->conv2_b = malloc(dd * sizeof(float));
    if (with_pos)
        m->pos = malloc((size_t)RANDOM_N_POS * dd * sizeof(float));
    if (!m->conv1_w || !m->conv1_b || !m->conv2_w || !m->conv2_b || (with_pos && !m->pos)) {
        ws_model_free(m);
        return ws_errf(err, "out of memory for a %dx%d model", n_mels, d);
    }
    /* PyTorch's Conv1d default: kaiming_uniform(a=sqrt(5)) for the weight and
     * the bias bound both reduce to U(-1/sqrt(fan_in), 1/sqrt(fan_in)). */
    ws_rng r = {seed};
    const double b1 = 1.0 / sqrt(3.0 * n_mels), b2 = 1.0 / sqrt(3.0 * d);
    fill_uniform(&r, m->conv1_w, dd * nm * 3, b1);
    fill_uniform(&r, m->conv1_b, dd, b1);
    fill_uniform(&r, m->conv2_w, dd * dd * 3, b2);
    fill_uniform(&r, m->conv2_b, dd, b2);
    if (with_pos) {
        ws_sinusoids(RANDOM_N_POS, d, m->pos);
        m->n_pos = RANDOM_N_POS;
    }
    m->conv1_type = m->conv2_type = WS_TT_F32;
    snprintf(m->name, sizeof m->name, "random-%dx%d-seed%" PRIu64, n_mels, d, seed);
    return 0;
}

/* --- save ---------------------------------------------------------------- */

int ws_model_save_gguf_opts(const ws_model *m, const char *path, const ws_model_save_opts *o,
                            ws_err *err)
{
    if (o->type != WS_TT_F32 && o->type != WS_TT_F16 && o->type != WS_TT_BF16)
        return ws_errf(err, "%s: cannot save tensors of type %d", path, (int)o->type);
    ws_gguf_writer *w = ws_gguf_writer_new();
    if (!w)
        return ws_errf(err, "%s: out of memory", path);
    const char *pre = o->hf_names ? "model." : "";
    const uint64_t d = (uint64_t)m->d, nm = (uint64_t)m->n_mels;
    const uint64_t ne1[3] = {3, nm, d}, ne2[3] = {3, d, d};
    const uint64_t neb[2] = {o->bias_2d ? 1 : d, d};
    char n1w[64], n1b[64], n2w[64], n2b[64];
    snprintf(n1w, sizeof n1w, "%sencoder.conv1.weight", pre);
    snprintf(n1b, sizeof n1b, "%sencoder.conv1.bias", pre);
    snprintf(n2w, sizeof n2w, "%sencoder.conv2.weight", pre);
    snprintf(n2b, sizeof n2b, "%sencoder.conv2.bias", pre);
    ws_err e;
    int rc = ws_gguf_writer_set_str(w, "general.architecture", "whisper", &e) ||
             ws_gguf_writer_set_str(w, "general.name", m->name, &e) ||
             ws_gguf_writer_add_tensor(w, n1w, 3, ne1, o->type, m->conv1_w, &e) ||
             ws_gguf_writer_add_tensor(w, n1b, o->bias_2d ? 2 : 1, neb, o->type, m->conv1_b, &e) ||
             ws_gguf_writer_add_tensor(w, n2w, 3, ne2, o->type, m->conv2_w, &e) ||
             ws_gguf_writer_add_tensor(w, n2b, o->bias_2d ? 2 : 1, neb, o->type, m->conv2_b, &e);
    if (!rc && m->pos) {
        const uint64_t nep[2] = {d, (uint64_t)m->n_pos};
        rc = ws_gguf_writer_add_tensor(w, o->hf_names ? "model.encoder.embed_positions.weight"
                                                      : "encoder.positional_embedding",
                                       2, nep, WS_GGML_F32, m->pos, &e);
    }
    if (rc)
        ws_errf(err, "%s: %s", path, e.msg);
    else
        rc = ws_gguf_writer_write(w, path, err);
    ws_gguf_writer_free(w);
    return rc ? -1 : 0;
}

int ws_model_save_gguf(const ws_model *m, const char *path, ws_tensor_type type, ws_err *err)
{
    const ws_model_save_opts o = {type, 0, 0};
    return ws_model_save_gguf_opts(m, path, &o, err);
}

/* model.c - the stem weights: load from GGUF, save to GGUF, random init.
 *
 * The tensors, their names (openai-whisper's, Hugging Face's, llama.cpp
 * mmproj's), shapes and checks are the table in tensors.h, shared with the
 * converter; in short (PyTorch shape; GGUF ne, innermost first):
 *   encoder.conv1.weight          [d, n_mels, 3]  ne [3, n_mels, d]
 *   encoder.conv1.bias            [d]             ne [d], or [1, d] / [d, 1]
 *   encoder.conv2.weight          [d, d, 3]       ne [3, d, d]
 *   encoder.conv2.bias            [d]             ne [d], or [1, d] / [d, 1]
 *   encoder.positional_embedding  [n_pos, d]      ne [d, n_pos]   (optional)
 * n_mels and d come from conv1.weight; every other shape must agree with
 * them. Because ne is innermost first and PyTorch is row-major, the file's
 * bytes are already in the [d][n_mels][3] order model.h documents: loading
 * is a type conversion. F16 and BF16 are widened to float32 exactly; a NaN or
 * infinity in any stem tensor refuses the file, naming it, the tensor and the
 * element (ws_model_probe reads no data, so it does not see them). Every
 * name, type and shape is checked (find_stem) before any data is read, and
 * only the stem's tensors are read, so a whole-model file costs what its
 * stem costs. Tested by tests/test_model.c.
 */
#include "model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf.h"
#include "stem.h"
#include "tensors.h"

#define MAX_DIM WS_STEM_MAX_DIM /* n_mels, d and n_pos: 1..MAX_DIM */
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

/* A GGUF tensor as the table's checks read it (tensors.h). */
static ws_stem_view gguf_view(ws_gguf *g, const ws_gguf_tensor *t)
{
    return (ws_stem_view){ws_gguf_path(g), t->name, t->type, NULL, t->n_dims, t->ne, t};
}

static int gguf_find(void *ctx, const char *name, ws_stem_view *out)
{
    const ws_gguf_tensor *t = ws_gguf_find(ctx, name);
    if (t)
        *out = gguf_view(ctx, t);
    return t != NULL;
}

/* Reads t and widens it to float32, with no buffer beside the result: the
 * raw bytes are read into the top of the output (F32: all of it; F16/BF16:
 * its second half) and converted upwards in place. Element i's raw bytes
 * sit at or above the float it becomes, so no raw byte is overwritten before
 * it is read (F16: raw i at 2n + 2i >= 4i + 4 for i < n - 1, and element
 * n - 1 reads its bytes before writing). Peak memory is the float array. */
static float *to_f32(ws_gguf *g, const ws_gguf_tensor *t, ws_err *err)
{
    const ws_stem_view v = gguf_view(g, t);
    if (ws_stem_check_type(&v, err)) /* nbytes below is n * 4 or n * 2 */
        return NULL;
    size_t n = (size_t)t->n_elements;
    float *out = malloc((n ? n : 1) * sizeof *out);
    if (!out)
        return ws_errf(err, "%s: tensor '%s': out of memory for %zu floats", ws_gguf_path(g),
                       t->name, n), NULL;
    uint8_t *raw = (uint8_t *)out + n * sizeof *out - t->nbytes;
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
    /* A NaN or infinity would spread through every output frame the conv touches. */
    for (size_t i = 0; i < n; i++)
        if (!isfinite(out[i])) {
            ws_errf(err, "%s: tensor '%s': element %zu is not a finite number (%g)",
                    ws_gguf_path(g), t->name, i, (double)out[i]);
            free(out);
            return NULL;
        }
    return out;
}

/* The stem's tensors in a file, every name, type and shape checked by the
 * table (tensors.h); no data is read. n_mels and d come from conv1.weight. */
typedef struct {
    const ws_gguf_tensor *t[WS_STEM_N_TENSORS]; /* t[WS_STEM_POS] may be NULL */
    ws_stem_dims dims;
} stem_tensors;

static int find_stem(ws_gguf *g, stem_tensors *s, ws_err *err)
{
    memset(s, 0, sizeof *s);
    ws_stem_view v[WS_STEM_N_TENSORS];
    if (ws_stem_find_tensors(gguf_find, g, ws_gguf_path(g), v, &s->dims, err))
        return -1;
    for (int r = 0; r < WS_STEM_N_TENSORS; r++)
        s->t[r] = v[r].ref;
    return 0;
}

int ws_model_load_gguf(ws_model *m, ws_gguf *g, ws_err *err)
{
    memset(m, 0, sizeof *m);
    stem_tensors s;
    if (find_stem(g, &s, err))
        return -1;
    const ws_gguf_tensor *const *t = s.t;
    m->n_mels = (int)s.dims.n_mels;
    m->d = (int)s.dims.d;
    m->conv1_type = (ws_tensor_type)t[WS_STEM_CONV1_W]->type;
    m->conv2_type = (ws_tensor_type)t[WS_STEM_CONV2_W]->type;
    /* Only the stem's tensors are read; the rest of a whole-model file is not. */
    if (!(m->conv1_w = to_f32(g, t[WS_STEM_CONV1_W], err)) ||
        !(m->conv1_b = to_f32(g, t[WS_STEM_CONV1_B], err)) ||
        !(m->conv2_w = to_f32(g, t[WS_STEM_CONV2_W], err)) ||
        !(m->conv2_b = to_f32(g, t[WS_STEM_CONV2_B], err)) ||
        (t[WS_STEM_POS] && !(m->pos = to_f32(g, t[WS_STEM_POS], err)))) {
        ws_model_free(m);
        return -1;
    }
    if (t[WS_STEM_POS])
        m->n_pos = (int)s.dims.n_pos;
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
        *n_mels = (int)s.dims.n_mels;
        *d = (int)s.dims.d;
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
    /* Names and shapes from the table (tensors.h): its first shape, or for a
     * bias with bias_2d its [1, d] variant; the positional table as F32. */
    const ws_stem_naming naming = o->hf_names ? WS_NAMES_HF : WS_NAMES_OPENAI;
    const ws_stem_dims dims = {(uint64_t)m->n_mels, (uint64_t)m->d, (uint64_t)m->n_pos};
    const float *const data[WS_STEM_N_TENSORS] = {m->conv1_w, m->conv1_b, m->conv2_w, m->conv2_b,
                                                  m->pos};
    ws_err e;
    int rc = ws_gguf_writer_set_str(w, "general.architecture", "whisper", &e) ||
             ws_gguf_writer_set_str(w, "general.name", m->name, &e);
    for (int r = 0; r < WS_STEM_N_TENSORS && !rc; r++) {
        if (!data[r])
            continue;
        const int bias = r == WS_STEM_CONV1_B || r == WS_STEM_CONV2_B;
        uint64_t ne[WS_STEM_MAX_RANK];
        const uint32_t n_dims = ws_stem_tensor_ne((ws_stem_role)r, bias && o->bias_2d, &dims, ne);
        rc = ws_gguf_writer_add_tensor(w, WS_STEM_TENSORS[r].name[naming], n_dims, ne,
                                       r == WS_STEM_POS ? WS_GGML_F32 : (uint32_t)o->type,
                                       data[r], &e);
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

/* convert.c - a checkpoint's conv stem to our GGUF (SPEC.md, "Weights: GGUF").
 *
 * Stem tensors, by role (PyTorch shape; GGUF ne innermost first):
 *   encoder.conv1.weight          [d, n_mels, 3]  ne [3, n_mels, d]
 *   encoder.conv1.bias            [d]             ne [d]  (source: [d], [d,1] or [1,d])
 *   encoder.conv2.weight          [d, d, 3]       ne [3, d, d]
 *   encoder.conv2.bias            [d]             ne [d]
 *   encoder.positional_embedding  [n_pos, d]      ne [d, n_pos]  (when the source has it)
 *   mel_filters                   [n_mel, n_fft]  ne [n_fft, n_mel] F32 (ggml .bin only)
 * Each role is looked up under openai-whisper's name, then Hugging Face's
 * (model.encoder.conv1.weight, model.encoder.embed_positions.weight), then
 * llama.cpp mmproj's (a.conv1d.1.weight, a.position_embd.weight). Row-major
 * PyTorch bytes are already in ne order, so a bias [d,1] is the same bytes as
 * [d]: only the shape is rewritten. With WS_CONVERT_KEEP, or a target type
 * equal to the source's, the bytes are copied unchanged; otherwise values go
 * through float32 (exact for F16/BF16) to the target, rounding to nearest even.
 * Tested by tests/test_convert.c.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { R_CONV1_W, R_CONV1_B, R_CONV2_W, R_CONV2_B, R_POS, N_ROLES };

static const struct {
    const char *out;        /* our name */
    const char *names[3];   /* openai, Hugging Face, llama.cpp mmproj */
    int required;
} ROLES[N_ROLES] = {
    [R_CONV1_W] = {"encoder.conv1.weight",
                   {"encoder.conv1.weight", "model.encoder.conv1.weight", "a.conv1d.1.weight"}, 1},
    [R_CONV1_B] = {"encoder.conv1.bias",
                   {"encoder.conv1.bias", "model.encoder.conv1.bias", "a.conv1d.1.bias"}, 1},
    [R_CONV2_W] = {"encoder.conv2.weight",
                   {"encoder.conv2.weight", "model.encoder.conv2.weight", "a.conv1d.2.weight"}, 1},
    [R_CONV2_B] = {"encoder.conv2.bias",
                   {"encoder.conv2.bias", "model.encoder.conv2.bias", "a.conv1d.2.bias"}, 1},
    [R_POS] = {"encoder.positional_embedding",
               {"encoder.positional_embedding", "model.encoder.embed_positions.weight",
                "a.position_embd.weight"}, 0},
};

static const ws_ckpt_tensor *lookup(const ws_ckpt *c, int role, ws_err *err)
{
    for (int k = 0; k < 3; k++) {
        const ws_ckpt_tensor *t = ws_ckpt_find(c, ROLES[role].names[k]);
        if (t)
            return t;
    }
    if (ROLES[role].required)
        ws_errf(err, "%s: no tensor '%s' (nor '%s', '%s'): not a Whisper checkpoint?", c->path,
                ROLES[role].names[0], ROLES[role].names[1], ROLES[role].names[2]);
    return NULL;
}

static int check_float(const ws_ckpt_tensor *t, ws_err *err)
{
    if (t->type == WS_GGML_F32 || t->type == WS_GGML_F16 || t->type == WS_GGML_BF16)
        return t->readable ? 0 : ws_errf(err, "%s: tensor '%s' has no data", t->file, t->name);
    return ws_errf(err, "%s: tensor '%s': type %s is not supported (F32, F16 or BF16)", t->file,
                   t->name, t->dtype);
}

static int shape_is(const ws_ckpt_tensor *t, uint32_t n_dims, const uint64_t *ne)
{
    if (t->n_dims != n_dims)
        return 0;
    for (uint32_t j = 0; j < n_dims; j++)
        if (t->ne[j] != ne[j])
            return 0;
    return 1;
}

static int shape_error(const ws_ckpt_tensor *t, const char *want, ws_err *err)
{
    char got[160];
    ckpt_fmt_ne(got, sizeof got, t->ne, t->n_dims);
    return ws_errf(err, "%s: %s: got ne=%s, expected %s", t->file, t->name, got, want);
}

/* A bias of d values: ne [d], [1, d] or [d, 1]. */
static int check_bias(const ws_ckpt_tensor *t, uint64_t d, ws_err *err)
{
    if (shape_is(t, 1, (uint64_t[]){d}) || shape_is(t, 2, (uint64_t[]){1, d}) ||
        shape_is(t, 2, (uint64_t[]){d, 1}))
        return 0;
    char want[96];
    snprintf(want, sizeof want, "[%" PRIu64 "] (or [1,%" PRIu64 "])", d, d);
    return shape_error(t, want, err);
}

static float load_f32(const uint8_t *p, uint32_t type, size_t i)
{
    if (type == WS_GGML_F32) {
        const uint8_t *b = p + 4 * i;
        uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                     (uint32_t)b[3] << 24;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
    return type == WS_GGML_F16 ? ws_f16_to_f32(h) : ws_bf16_to_f32(h);
}

/* Adds t as `name` with shape ne[0..n_dims), in the type asked for. */
static int add(ws_gguf_writer *w, const ws_ckpt_tensor *t, const char *name, uint32_t n_dims,
               const uint64_t *ne, ws_convert_type to, ws_err *err)
{
    uint8_t *raw = malloc(t->nbytes ? t->nbytes : 1);
    if (!raw)
        return ws_errf(err, "%s: tensor '%s': out of memory for %zu bytes", t->file, t->name,
                       t->nbytes);
    if (ws_ckpt_read(t, raw, err)) {
        free(raw);
        return -1;
    }
    int rc;
    if (to == WS_CONVERT_KEEP || (uint32_t)to == t->type) {
        rc = ws_gguf_writer_add_raw(w, name, n_dims, ne, t->type, raw, t->nbytes, err);
    } else {
        size_t n = (size_t)t->n_elements;
        float *f = malloc((n ? n : 1) * sizeof *f);
        if (!f) {
            free(raw);
            return ws_errf(err, "%s: out of memory for %zu floats", t->name, n);
        }
        for (size_t i = 0; i < n; i++)
            f[i] = load_f32(raw, t->type, i);
        rc = ws_gguf_writer_add_tensor(w, name, n_dims, ne, (uint32_t)to, f, err);
        free(f);
    }
    free(raw);
    return rc;
}

/* "ggml-base.en.bin" -> "ggml-base.en": the base name less a known extension. */
static void default_name(const char *path, char *buf, size_t cap)
{
    static const char *const EXT[] = {".safetensors.index.json", ".safetensors", ".bin", ".gguf",
                                      ".json"};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    for (size_t k = 0; k < sizeof EXT / sizeof EXT[0]; k++) {
        size_t e = strlen(EXT[k]);
        if (n > e && !strcmp(base + n - e, EXT[k])) {
            n -= e;
            break;
        }
    }
    snprintf(buf, cap, "%.*s", (int)n, base);
}

/* A source hyper-parameter that names a dimension must agree with the shapes. */
static int check_hparams(const ws_ckpt *c, uint64_t n_mels, uint64_t d, ws_err *err)
{
    for (size_t i = 0; i < c->n_hp; i++) {
        const ws_ckpt_hparam *h = &c->hp[i];
        uint64_t want = !strcmp(h->key, "whisper.n_mels")          ? n_mels
                        : !strcmp(h->key, "whisper.n_audio_state") ? d
                                                                   : h->val;
        if (h->val != want)
            return ws_errf(err, "%s: header says %s = %" PRIu32 ", but encoder.conv1.weight "
                           "has %" PRIu64, c->path, h->key, h->val, want);
    }
    return 0;
}

static int add_metadata(ws_gguf_writer *w, const ws_ckpt *c, const ws_convert_opts *o,
                        uint64_t n_mels, uint64_t d, ws_err *err)
{
    char name[256];
    if (o->name)
        snprintf(name, sizeof name, "%s", o->name);
    else
        default_name(c->path, name, sizeof name);
    const char *base = strrchr(c->path, '/');
    base = base ? base + 1 : c->path;
    if (ws_gguf_writer_set_str(w, "general.architecture", "whisper", err) ||
        ws_gguf_writer_set_str(w, "general.name", name, err) ||
        ws_gguf_writer_set_str(w, "whisper.source.file", base, err) ||
        ws_gguf_writer_set_str(w, "whisper.source.format", ws_ckpt_format_name(c->format), err) ||
        ws_gguf_writer_set_u32(w, "whisper.n_mels", (uint32_t)n_mels, err) ||
        ws_gguf_writer_set_u32(w, "whisper.d", (uint32_t)d, err))
        return -1;
    for (size_t i = 0; i < c->n_hp; i++)
        if (strcmp(c->hp[i].key, "whisper.n_mels") &&
            ws_gguf_writer_set_u32(w, c->hp[i].key, c->hp[i].val, err))
            return -1;
    return 0;
}

int ws_ckpt_convert(const ws_ckpt *c, const char *out_path, const ws_convert_opts *o,
                    ws_err *err)
{
    /* Before anything: writing an input would destroy it (the temporary file
     * is renamed over it) and leave a stem in its place. */
    if (ws_ckpt_check_output(c, out_path, err))
        return -1;
    const ws_ckpt_tensor *t[N_ROLES];
    for (int r = 0; r < N_ROLES; r++) {
        t[r] = lookup(c, r, err);
        if ((ROLES[r].required && !t[r]) || (t[r] && check_float(t[r], err)))
            return -1;
    }
    /* n_mels and d come from conv1.weight; everything else must agree. */
    const ws_ckpt_tensor *w1 = t[R_CONV1_W];
    if (w1->n_dims != 3 || w1->ne[0] != 3 || w1->ne[1] == 0 || w1->ne[2] == 0 ||
        w1->ne[1] > 65536 || w1->ne[2] > 65536)
        return shape_error(w1, "[3, n_mels, d]", err);
    const uint64_t n_mels = w1->ne[1], d = w1->ne[2];
    char want[96];
    snprintf(want, sizeof want, "[3,%" PRIu64 ",%" PRIu64 "]", d, d);
    if (!shape_is(t[R_CONV2_W], 3, (uint64_t[]){3, d, d}))
        return shape_error(t[R_CONV2_W], want, err);
    if (check_bias(t[R_CONV1_B], d, err) || check_bias(t[R_CONV2_B], d, err))
        return -1;
    if (t[R_POS] && (t[R_POS]->n_dims != 2 || t[R_POS]->ne[0] != d || t[R_POS]->ne[1] == 0)) {
        snprintf(want, sizeof want, "[%" PRIu64 ", n_pos]", d);
        return shape_error(t[R_POS], want, err);
    }
    const ws_ckpt_tensor *mel = ws_ckpt_find(c, "mel_filters");
    if (mel && (mel->type != WS_GGML_F32 || mel->n_dims != 2))
        return ws_errf(err, "%s: mel_filters: expected a 2-D F32 tensor", mel->file);
    if (check_hparams(c, n_mels, d, err))
        return -1;

    ws_gguf_writer *w = ws_gguf_writer_new();
    if (!w)
        return ws_errf(err, "%s: out of memory", out_path);
    const ws_convert_type to = o->type;
    int rc = add_metadata(w, c, o, n_mels, d, err) ||
             add(w, t[R_CONV1_W], ROLES[R_CONV1_W].out, 3, w1->ne, to, err) ||
             add(w, t[R_CONV1_B], ROLES[R_CONV1_B].out, 1, &d, to, err) ||
             add(w, t[R_CONV2_W], ROLES[R_CONV2_W].out, 3, t[R_CONV2_W]->ne, to, err) ||
             add(w, t[R_CONV2_B], ROLES[R_CONV2_B].out, 1, &d, to, err) ||
             (t[R_POS] && add(w, t[R_POS], ROLES[R_POS].out, 2, t[R_POS]->ne, to, err)) ||
             (mel && add(w, mel, "mel_filters", 2, mel->ne, WS_CONVERT_KEEP, err)) ||
             ws_gguf_writer_write(w, out_path, err);
    ws_gguf_writer_free(w);
    return rc ? -1 : 0;
}

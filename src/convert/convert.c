/* convert.c - a checkpoint's conv stem to our GGUF (docs/spec.md, "Weights: GGUF").
 *
 * Which tensors make the stem, the names they may have (openai-whisper's,
 * Hugging Face's, llama.cpp mmproj's), their shapes and the checks are the
 * table in whisper/tensors.h, the one the GGUF loader reads, so whatever
 * converts also loads. Written (PyTorch shape; GGUF ne innermost first):
 *   encoder.conv1.weight          [d, n_mels, 3]  ne [3, n_mels, d]
 *   encoder.conv1.bias            [d]             ne [d]  (source: [d], [d,1] or [1,d])
 *   encoder.conv2.weight          [d, d, 3]       ne [3, d, d]
 *   encoder.conv2.bias            [d]             ne [d]
 *   encoder.positional_embedding  [n_pos, d]      ne [d, n_pos]  (when the source has it)
 *   mel_filters                   [n_mel, n_fft]  ne [n_fft, n_mel] F32 (ggml .bin only)
 * Row-major PyTorch bytes are already in ne order, so a bias [d,1] is the
 * same bytes as [d]: only the shape is rewritten (the table's first shape).
 * With WS_CONVERT_KEEP, or a target type equal to the source's, the bytes
 * are copied unchanged; otherwise values go through float32 (exact for
 * F16/BF16) to the target, rounding to nearest even.
 * Tested by tests/test_convert.c.
 */
#include "internal.h"
#include "whisper/tensors.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A checkpoint tensor as the table's checks read it (whisper/tensors.h). */
static int ckpt_find(void *ctx, const char *name, ws_stem_view *out)
{
    const ws_ckpt_tensor *t = ws_ckpt_find(ctx, name);
    if (t)
        *out = (ws_stem_view){t->file, t->name, t->type, t->dtype, t->n_dims, t->ne, t};
    return t != NULL;
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
static int check_hparams(const ws_ckpt *c, const char *conv1, uint64_t n_mels, uint64_t d,
                         ws_err *err)
{
    for (size_t i = 0; i < c->n_hp; i++) {
        const ws_ckpt_hparam *h = &c->hp[i];
        uint64_t want = !strcmp(h->key, "whisper.n_mels")          ? n_mels
                        : !strcmp(h->key, "whisper.n_audio_state") ? d
                                                                   : h->val;
        if (h->val != want)
            return ws_errf(err, "%s: header says %s = %" PRIu32 ", but %s has %" PRIu64,
                           c->path, h->key, h->val, conv1, want);
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
    /* Names, types and shapes: the loader's table and checks (tensors.h). */
    ws_stem_view v[WS_STEM_N_TENSORS];
    ws_stem_dims dims;
    if (ws_stem_find_tensors(ckpt_find, (void *)c, c->path, v, &dims, err))
        return -1;
    const ws_ckpt_tensor *t[WS_STEM_N_TENSORS];
    for (int r = 0; r < WS_STEM_N_TENSORS; r++) {
        t[r] = v[r].ref;
        if (t[r] && !t[r]->readable)
            return ws_errf(err, "%s: tensor '%s' has no data", t[r]->file, t[r]->name);
    }
    const ws_ckpt_tensor *mel = ws_ckpt_find(c, "mel_filters");
    if (mel && (mel->type != WS_GGML_F32 || mel->n_dims != 2))
        return ws_errf(err, "%s: mel_filters: expected a 2-D F32 tensor", mel->file);
    if (check_hparams(c, t[WS_STEM_CONV1_W]->name, dims.n_mels, dims.d, err))
        return -1;

    ws_gguf_writer *w = ws_gguf_writer_new();
    if (!w)
        return ws_errf(err, "%s: out of memory", out_path);
    /* Each found tensor under its openai name, in the table's first shape
     * (a bias [d]; trailing 1s dropped): the same bytes, maybe re-typed. */
    int rc = add_metadata(w, c, o, dims.n_mels, dims.d, err);
    for (int r = 0; r < WS_STEM_N_TENSORS && !rc; r++) {
        if (!t[r])
            continue;
        uint64_t ne[WS_STEM_MAX_RANK];
        const uint32_t n_dims = ws_stem_tensor_ne((ws_stem_role)r, 0, &dims, ne);
        rc = add(w, t[r], WS_STEM_TENSORS[r].name[WS_NAMES_OPENAI], n_dims, ne, o->type, err);
    }
    rc = rc || (mel && add(w, mel, "mel_filters", 2, mel->ne, WS_CONVERT_KEEP, err)) ||
         ws_gguf_writer_write(w, out_path, err);
    ws_gguf_writer_free(w);
    return rc ? -1 : 0;
}

/* open.c - a checkpoint: format detection, its open files, the tensor list.
 *
 * Detection reads the first bytes, never the extension:
 *   "GGUF"                        GGUF
 *   6c 6d 67 67 (0x67676d6c LE)   whisper.cpp ggml .bin
 *   first non-blank byte '{'      a sharded checkpoint's index (JSON)
 *   u64 LE n, then '{'            safetensors (header of n bytes of JSON)
 *   "PK\3\4"                      a zip: PyTorch's torch.save (.pt), which
 *                                 needs scripts/pt-to-gguf.py
 * Tested by tests/test_convert.c.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const FORMAT_NAMES[] = {
    [WS_CKPT_AUTO] = "auto",
    [WS_CKPT_SAFETENSORS] = "safetensors",
    [WS_CKPT_SAFETENSORS_INDEX] = "safetensors-index",
    [WS_CKPT_GGML] = "ggml",
    [WS_CKPT_GGUF] = "gguf",
};
#define N_FORMATS (sizeof FORMAT_NAMES / sizeof FORMAT_NAMES[0])

const char *ws_ckpt_format_name(ws_ckpt_format f)
{
    return (size_t)f < N_FORMATS ? FORMAT_NAMES[f] : "?";
}

int ws_ckpt_format_parse(const char *name)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (!strcmp(name, FORMAT_NAMES[i]))
            return (int)i;
    return -1;
}

int ws_ckpt_open_file(ws_ckpt *c, const char *path, const ws_rfile **f, ws_err *err)
{
    size_t i;
    if (c->opened && ws_strmap_get(c->opened, path, strlen(path), &i)) {
        *f = c->files[i];
        return 0;
    }
    if (!c->opened && !(c->opened = ws_strmap_new()))
        return ws_errf(err, "%s: out of memory", path);
    if (c->n_files == c->cap_files) {
        size_t cap = c->cap_files ? 2 * c->cap_files : 4;
        ws_rfile **nf = realloc(c->files, cap * sizeof *nf);
        if (!nf)
            return ws_errf(err, "%s: out of memory", path);
        c->files = nf;
        c->cap_files = cap;
    }
    ws_rfile *nf = malloc(sizeof *nf);
    if (!nf)
        return ws_errf(err, "%s: out of memory", path);
    if (ws_rfile_open(nf, path, err)) {
        free(nf);
        return -1;
    }
    if (nf->size == 0) {
        ws_rfile_close(nf);
        free(nf);
        return ws_errf(err, "%s: empty file", path);
    }
    if (ws_strmap_put(c->opened, path, strlen(path), c->n_files, NULL) < 0) {
        ws_rfile_close(nf);
        free(nf);
        return ws_errf(err, "%s: out of memory", path);
    }
    c->files[c->n_files++] = nf;
    *f = nf;
    return 0;
}

int ws_ckpt_add_tensor(ws_ckpt *c, const ws_ckpt_tensor *t, const char *file, ws_err *err)
{
    if (!c->names && !(c->names = ws_strmap_new()))
        return ws_errf(err, "%s: out of memory", file);
    if (c->n_t == c->cap_t) {
        size_t cap = c->cap_t ? 2 * c->cap_t : 64;
        ws_ckpt_tensor *nt = realloc(c->t, cap * sizeof *nt);
        if (!nt)
            return ws_errf(err, "%s: out of memory", file);
        c->t = nt;
        c->cap_t = cap;
    }
    int rc = ws_strmap_put(c->names, t->name, strlen(t->name), c->n_t, NULL);
    if (rc > 0)
        return ws_errf(err, "%s: tensor '%s' appears twice", file, t->name);
    if (rc < 0)
        return ws_errf(err, "%s: out of memory", file);
    ws_ckpt_tensor *d = &c->t[c->n_t];
    *d = *t;
    d->file = file;
    d->name = strdup(t->name);
    if (!d->name)
        return ws_errf(err, "%s: out of memory", file); /* the map keeps the name: c is closed on error */
    c->n_t++;
    return 0;
}

int ws_ckpt_set_hparam(ws_ckpt *c, const char *key, uint32_t val, ws_err *err)
{
    if (c->n_hp == WS_CKPT_MAX_HPARAMS || strlen(key) >= sizeof c->hp[0].key)
        return ws_errf(err, "%s: too many hyper-parameters", c->path);
    snprintf(c->hp[c->n_hp].key, sizeof c->hp[0].key, "%s", key);
    c->hp[c->n_hp].val = val;
    c->n_hp++;
    return 0;
}

/* --- detection ------------------------------------------------------------ */

static int detect(const char *path, ws_ckpt_format *out, ws_err *err)
{
    uint8_t b[16] = {0};
    ws_rfile f;
    if (ws_rfile_open(&f, path, err))
        return -1;
    size_t n = f.size < sizeof b ? (size_t)f.size : sizeof b;
    int rc = ws_rfile_read(&f, 0, b, n, NULL, err);
    ws_rfile_close(&f);
    if (rc)
        return -1;
    if (n == 0)
        return ws_errf(err, "%s: empty file", path);
    if (n >= 4 && !memcmp(b, "GGUF", 4))
        *out = WS_CKPT_GGUF;
    else if (n >= 4 && !memcmp(b, "lmgg", 4))
        *out = WS_CKPT_GGML;
    else if (n >= 4 && !memcmp(b, "PK\3\4", 4))
        return ws_errf(err, "%s: a zip archive (PyTorch .pt?): convert it with "
                       "scripts/pt-to-gguf.py, which needs PyTorch", path);
    else if (n >= 9 && b[8] == '{')
        *out = WS_CKPT_SAFETENSORS;
    else {
        size_t i = 0;
        while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
            i++;
        if (i < n && b[i] == '{')
            *out = WS_CKPT_SAFETENSORS_INDEX;
        else
            return ws_errf(err, "%s: not a checkpoint this tool reads (safetensors, "
                           "safetensors index, ggml .bin or GGUF)", path);
    }
    return 0;
}

ws_ckpt *ws_ckpt_open(const char *path, ws_ckpt_format fmt, ws_err *err)
{
    if (fmt == WS_CKPT_AUTO && detect(path, &fmt, err))
        return NULL;
    ws_ckpt *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(path))) {
        free(c);
        ws_errf(err, "%s: out of memory", path);
        return NULL;
    }
    c->format = fmt;
    int rc;
    switch (fmt) {
    case WS_CKPT_SAFETENSORS: rc = ws_ckpt_read_safetensors(c, path, err); break;
    case WS_CKPT_SAFETENSORS_INDEX: rc = ws_ckpt_read_safetensors_index(c, path, err); break;
    case WS_CKPT_GGML: rc = ws_ckpt_read_ggml(c, path, err); break;
    case WS_CKPT_GGUF: rc = ws_ckpt_read_gguf(c, path, err); break;
    default: rc = ws_errf(err, "%s: unknown format %d", path, (int)fmt); break;
    }
    if (rc) {
        ws_ckpt_close(c);
        return NULL;
    }
    return c;
}

void ws_ckpt_close(ws_ckpt *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_t; i++)
        free(c->t[i].name);
    free(c->t);
    ws_strmap_free(c->names);
    for (size_t i = 0; i < c->n_files; i++) {
        ws_rfile_close(c->files[i]);
        free(c->files[i]);
    }
    free(c->files);
    ws_strmap_free(c->opened);
    ws_gguf_close(c->gguf);
    free(c->path);
    free(c);
}

const char *ws_ckpt_path(const ws_ckpt *c) { return c->path; }

const ws_ckpt_tensor *ws_ckpt_tensor_at(const ws_ckpt *c, size_t i)
{
    return i < c->n_t ? &c->t[i] : NULL;
}

const ws_ckpt_hparam *ws_ckpt_hparam_at(const ws_ckpt *c, size_t i)
{
    return i < c->n_hp ? &c->hp[i] : NULL;
}

const ws_ckpt_tensor *ws_ckpt_find(const ws_ckpt *c, const char *name)
{
    size_t i;
    return c->names && ws_strmap_get(c->names, name, strlen(name), &i) ? &c->t[i] : NULL;
}

int ws_ckpt_read(const ws_ckpt_tensor *t, void *dst, ws_err *err)
{
    char what[160];
    snprintf(what, sizeof what, "tensor '%.100s'", t->name);
    if (!t->readable || !t->src)
        return ws_errf(err, "%s: %s: %s data cannot be read (size unknown)", t->file, what,
                       t->dtype);
    return ws_rfile_read(t->src, t->offset, dst, t->nbytes, what, err);
}

/* --- the output must not be an input --------------------------------------- */

static int same_file(const ws_rfile *f, const struct stat *st, const char *out, ws_err *err)
{
    if (f->dev != (uint64_t)st->st_dev || f->ino != (uint64_t)st->st_ino)
        return 0;
    return ws_errf(err, "%s: is the input file %s (the same file); refusing to overwrite it",
                   out, f->path);
}

int ws_ckpt_check_output(const ws_ckpt *c, const char *path, ws_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) /* absent, or unreachable: the writer says why */
        return 0;
    for (size_t i = 0; i < c->n_files; i++)
        if (same_file(c->files[i], &st, path, err))
            return -1;
    if (c->gguf && same_file(ws_gguf_file(c->gguf), &st, path, err))
        return -1;
    return 0;
}

/* write.c - the GGUF v3 writer (layout in gguf.h).
 *
 * Everything is collected in memory first (tensors copied and converted), so
 * that the offsets are known before the first byte is written: infos carry
 * each tensor's offset relative to the data section, which starts at the
 * next multiple of the alignment after the infos; each tensor is padded to
 * the alignment too, as ggml does. The bytes go through output.h's writer
 * (an unnamed file beside PATH, synced and renamed over it, mode 0666 &
 * ~umask), so PATH is either the old file or the whole new one. Tested by
 * tests/test_gguf.c, which also reads a file built byte by byte to check
 * this layout independently, and tests/test_output.c (umask).
 */
#include "gguf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"

typedef struct {
    char *key;
    uint32_t type; /* WS_GGUF_STRING, _U32 or _F32 */
    uint32_t u32;  /* u32, or f32's bits */
    char *str;
} wkv;

typedef struct {
    char *name;
    uint32_t n_dims;
    uint64_t ne[WS_GGUF_MAX_DIMS];
    uint32_t type;
    void *data;
    size_t nbytes;
} wtensor;

struct ws_gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint32_t alignment;
};

ws_gguf_writer *ws_gguf_writer_new(void)
{
    ws_gguf_writer *w = calloc(1, sizeof *w);
    if (w)
        w->alignment = WS_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void ws_gguf_writer_free(ws_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].str);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->kv);
    free(w->t);
    free(w);
}

/* Grows *arr (n used, *cap allocated) to hold one more element of size sz. */
static int grow(void **arr, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 8, bytes;
    if (ws_mul_size(nc, sz, &bytes))
        return -1;
    void *p = realloc(*arr, bytes);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

static int add_kv(ws_gguf_writer *w, const char *key, uint32_t type, uint32_t u32,
                  const char *str, ws_err *err)
{
    if (strlen(key) > WS_GGUF_MAX_NAME)
        return ws_errf(err, "metadata key of %zu bytes exceeds the limit %u", strlen(key),
                       WS_GGUF_MAX_NAME);
    if (str && strlen(str) > WS_GGUF_MAX_STRING)
        return ws_errf(err, "%s: string of %zu bytes exceeds the limit %u", key, strlen(str),
                       WS_GGUF_MAX_STRING);
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, key) == 0)
            return ws_errf(err, "metadata key '%s' set twice", key);
    if (strcmp(key, "general.alignment") == 0) {
        if (type != WS_GGUF_U32 || u32 == 0 || (u32 & (u32 - 1)))
            return ws_errf(err, "general.alignment must be a u32 power of two");
        w->alignment = u32;
    }
    if (grow((void **)&w->kv, w->n_kv, &w->cap_kv, sizeof *w->kv))
        return ws_errf(err, "out of memory");
    wkv *r = &w->kv[w->n_kv];
    *r = (wkv){strdup(key), type, u32, str ? strdup(str) : NULL};
    if (!r->key || (str && !r->str)) {
        free(r->key);
        free(r->str);
        return ws_errf(err, "out of memory");
    }
    w->n_kv++;
    return 0;
}

int ws_gguf_writer_set_str(ws_gguf_writer *w, const char *key, const char *val, ws_err *err)
{
    return add_kv(w, key, WS_GGUF_STRING, 0, val, err);
}

int ws_gguf_writer_set_u32(ws_gguf_writer *w, const char *key, uint32_t val, ws_err *err)
{
    return add_kv(w, key, WS_GGUF_U32, val, NULL, err);
}

int ws_gguf_writer_set_f32(ws_gguf_writer *w, const char *key, float val, ws_err *err)
{
    uint32_t bits;
    memcpy(&bits, &val, 4);
    return add_kv(w, key, WS_GGUF_F32, bits, NULL, err);
}

/* Checks name and shape, and reserves the tensor's slot (not yet counted). */
static wtensor *new_tensor(ws_gguf_writer *w, const char *name, uint32_t n_dims,
                           const uint64_t *ne, uint32_t type, size_t *nbytes, ws_err *err)
{
    if (strlen(name) > WS_GGUF_MAX_NAME)
        return ws_errf(err, "tensor name of %zu bytes exceeds the limit %u", strlen(name),
                       WS_GGUF_MAX_NAME), NULL;
    if (n_dims > WS_GGUF_MAX_DIMS)
        return ws_errf(err, "%s: %" PRIu32 " dimensions, at most %d", name, n_dims,
                       WS_GGUF_MAX_DIMS), NULL;
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0)
            return ws_errf(err, "tensor '%s' added twice", name), NULL;
    size_t n = 1;
    for (uint32_t j = 0; j < n_dims; j++)
        if (ne[j] > INT64_MAX || ne[j] > SIZE_MAX || ws_mul_size(n, (size_t)ne[j], &n))
            return ws_errf(err, "%s: element count overflows", name), NULL;
    ws_err e;
    if (ws_ggml_nbytes(type, n, nbytes, &e))
        return ws_errf(err, "%s: %s", name, e.msg), NULL;
    if (grow((void **)&w->t, w->n_t, &w->cap_t, sizeof *w->t))
        return ws_errf(err, "out of memory"), NULL;
    wtensor *t = &w->t[w->n_t];
    *t = (wtensor){.name = strdup(name), .n_dims = n_dims, .type = type, .nbytes = *nbytes};
    for (uint32_t j = 0; j < WS_GGUF_MAX_DIMS; j++)
        t->ne[j] = j < n_dims ? ne[j] : 1;
    t->data = malloc(*nbytes ? *nbytes : 1);
    if (!t->name || !t->data) {
        free(t->name);
        free(t->data);
        return ws_errf(err, "%s: out of memory for %zu bytes", name, *nbytes), NULL;
    }
    return t;
}

int ws_gguf_writer_add_tensor(ws_gguf_writer *w, const char *name, uint32_t n_dims,
                              const uint64_t *ne, uint32_t type, const float *src, ws_err *err)
{
    if (type != WS_GGML_F32 && type != WS_GGML_F16 && type != WS_GGML_BF16)
        return ws_errf(err, "%s: cannot convert float32 to type %s", name,
                       ws_ggml_type_name(type) ? ws_ggml_type_name(type) : "unknown");
    size_t nbytes;
    wtensor *t = new_tensor(w, name, n_dims, ne, type, &nbytes, err);
    if (!t)
        return -1;
    uint8_t *d = t->data;
    if (type == WS_GGML_F32) {
        for (size_t i = 0; i < nbytes / 4; i++) {
            uint32_t u;
            memcpy(&u, &src[i], 4);
            for (int b = 0; b < 4; b++)
                d[4 * i + b] = (uint8_t)(u >> 8 * b);
        }
    } else {
        for (size_t i = 0; i < nbytes / 2; i++) {
            uint16_t h = type == WS_GGML_F16 ? ws_f32_to_f16(src[i]) : ws_f32_to_bf16(src[i]);
            d[2 * i] = (uint8_t)h;
            d[2 * i + 1] = (uint8_t)(h >> 8);
        }
    }
    w->n_t++;
    return 0;
}

int ws_gguf_writer_add_raw(ws_gguf_writer *w, const char *name, uint32_t n_dims,
                           const uint64_t *ne, uint32_t type, const void *data, size_t nbytes,
                           ws_err *err)
{
    size_t want;
    wtensor *t = new_tensor(w, name, n_dims, ne, type, &want, err);
    if (!t)
        return -1;
    if (want != nbytes) {
        free(t->name);
        free(t->data);
        return ws_errf(err, "%s: %zu bytes given, the shape and type need %zu", name, nbytes, want);
    }
    memcpy(t->data, data, nbytes);
    w->n_t++;
    return 0;
}

/* --- serialisation ------------------------------------------------------- */

typedef struct {
    FILE *f;
    size_t pos; /* bytes emitted so far (the layout position, even after a failed write) */
    int bad;
} out;

static void put(out *o, const void *p, size_t n)
{
    if (!o->bad && fwrite(p, 1, n, o->f) != n)
        o->bad = 1;
    o->pos += n;
}

static void put_le(out *o, uint64_t v, int n)
{
    uint8_t b[8];
    for (int i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> 8 * i);
    put(o, b, (size_t)n);
}

static void put_str(out *o, const char *s)
{
    size_t n = strlen(s);
    put_le(o, n, 8);
    put(o, s, n);
}

static void pad_to(out *o, size_t align)
{
    static const uint8_t zeros[64];
    while (o->pos % align) {
        size_t n = align - o->pos % align;
        put(o, zeros, n < sizeof zeros ? n : sizeof zeros);
    }
}

static size_t align_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

static void emit(const ws_gguf_writer *w, out *o)
{
    put(o, "GGUF", 4);
    put_le(o, 3, 4);
    put_le(o, w->n_t, 8);
    put_le(o, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(o, w->kv[i].key);
        put_le(o, w->kv[i].type, 4);
        if (w->kv[i].type == WS_GGUF_STRING)
            put_str(o, w->kv[i].str);
        else
            put_le(o, w->kv[i].u32, 4);
    }
    size_t off = 0; /* relative to the data section */
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(o, t->name);
        put_le(o, t->n_dims, 4);
        for (uint32_t j = 0; j < t->n_dims; j++)
            put_le(o, t->ne[j], 8);
        put_le(o, t->type, 4);
        put_le(o, off, 8);
        off = align_up(off + t->nbytes, w->alignment);
    }
    pad_to(o, w->alignment);
    for (size_t i = 0; i < w->n_t; i++) {
        put(o, w->t[i].data, w->t[i].nbytes);
        pad_to(o, w->alignment);
    }
}

/* FILE * over a ws_out (output.h), so that emit() writes buffered */
typedef struct {
    ws_out *o;
    ws_err err; /* the first write failure */
    int bad;
} out_cookie;

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
    out_cookie *k = c;
    if (k->bad || ws_out_write(k->o, buf, n, &k->err)) {
        k->bad = 1;
        return -1;
    }
    return (ssize_t)n;
}

int ws_gguf_writer_write(const ws_gguf_writer *w, const char *path, ws_err *err)
{
    out_cookie k = {ws_out_open(path, err), {{0}}, 0};
    if (!k.o)
        return -1;
    FILE *f = fopencookie(&k, "w", (cookie_io_functions_t){.write = cookie_write});
    if (!f) {
        ws_out_abort(k.o);
        return ws_errf(err, "%s: out of memory", path);
    }
    out o = {f, 0, 0};
    emit(w, &o);
    int bad = o.bad | (fclose(f) != 0);
    if (bad) {
        ws_out_abort(k.o);
        if (k.bad && err)
            *err = k.err;
        else
            ws_errf(err, "%s: write failed: out of memory", path);
        return -1;
    }
    return ws_out_commit(k.o, err);
}

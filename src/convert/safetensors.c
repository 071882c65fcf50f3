/* safetensors.c - Hugging Face safetensors, single file or sharded.
 *
 * Layout (huggingface/safetensors README, "Format"):
 *   u64 LE  N                  length of the header
 *   N bytes JSON header        starts with '{', may end in spaces (0x20)
 *   rest    byte buffer        the tensors' data, little-endian, row-major
 * The header maps each tensor name to
 *   {"dtype": "F16", "shape": [d, n_mels, 3], "data_offsets": [BEGIN, END]}
 * with offsets relative to the byte buffer (END one past the last byte), and
 * may hold "__metadata__": {string: string}. The spec caps N at 100 MB and
 * requires the tensors to cover the buffer exactly, with no holes or overlaps;
 * both are checked, as are END - BEGIN == numel x dtype size (overflow-checked)
 * and every number being a non-negative integer JSON can hold exactly.
 *
 * A sharded checkpoint's index, model.safetensors.index.json, is
 *   {"metadata": {...}, "weight_map": {"tensor name": "shard file", ...}}
 * with shard files relative to the index's directory; every shard named is
 * read and every tensor must be in the shard the map names. A shard name may
 * not be absolute or hold "..", and must resolve (symlinks followed) inside
 * the index's directory or the directory of the file the index resolves to
 * (shard_dirs_of says why both).
 *
 * Tested by tests/test_convert.c (convert/safetensors_*, convert/index_*).
 */
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HEADER_MAX (100u * 1000u * 1000u) /* the spec's limit on N */
#define JSON_INT_MAX 9007199254740992.0   /* 2^53: doubles hold integers exactly below it */

static const struct {
    const char *name;
    uint32_t size;
    uint32_t ggml;
} DTYPES[] = {
    {"F64", 8, 28},        {"F32", 4, WS_GGML_F32}, {"F16", 2, WS_GGML_F16},
    {"BF16", 2, WS_GGML_BF16}, {"I64", 8, 27},      {"I32", 4, 26},
    {"I16", 2, 25},        {"I8", 1, 24},           {"U64", 8, WS_CKPT_TYPE_OTHER},
    {"U32", 4, WS_CKPT_TYPE_OTHER}, {"U16", 2, WS_CKPT_TYPE_OTHER},
    {"U8", 1, WS_CKPT_TYPE_OTHER},  {"BOOL", 1, WS_CKPT_TYPE_OTHER},
    {"F8_E4M3", 1, WS_CKPT_TYPE_OTHER}, {"F8_E5M2", 1, WS_CKPT_TYPE_OTHER},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

/* A JSON number that is a whole number in [0, 2^53). */
static int json_u64(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return -1;
    double x = v->valuedouble;
    if (!(x >= 0) || x >= JSON_INT_MAX || x != (double)(uint64_t)x)
        return -1;
    *out = (uint64_t)x;
    return 0;
}

typedef struct {
    uint64_t begin, end;
    const char *name;
} span;

static int by_begin(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* One header entry: checks it and adds the tensor. */
static int read_entry(ws_ckpt *c, const ws_rfile *f, const cJSON *e, uint64_t buf_start,
                      uint64_t buf_size, span *sp, ws_err *err)
{
    const char *path = f->path;
    const char *name = e->string;
    if (!cJSON_IsObject(e))
        return ws_errf(err, "%s: header: '%s' is not an object", path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs))
        return ws_errf(err, "%s: header: tensor '%s' lacks dtype, shape or data_offsets", path,
                       name);
    size_t k = 0;
    while (k < N_DTYPES && strcmp(DTYPES[k].name, dt->valuestring))
        k++;
    if (k == N_DTYPES)
        return ws_errf(err, "%s: tensor '%s': unknown dtype \"%.32s\"", path, name,
                       dt->valuestring);
    ws_ckpt_tensor t = {0};
    t.name = (char *)name;
    t.dtype = DTYPES[k].name;
    t.type = DTYPES[k].ggml;
    int rank = cJSON_GetArraySize(shape);
    if (rank > WS_CKPT_MAX_DIMS)
        return ws_errf(err, "%s: tensor '%s': %d dimensions (at most %d)", path, name, rank,
                       WS_CKPT_MAX_DIMS);
    t.n_dims = (uint32_t)rank;
    for (int j = 0; j < WS_CKPT_MAX_DIMS; j++)
        t.ne[j] = 1;
    size_t numel = 1;
    int j = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, shape) {
        uint64_t dim;
        if (json_u64(v, &dim))
            return ws_errf(err, "%s: tensor '%s': shape[%d] is not a non-negative integer", path,
                           name, j);
        t.ne[rank - 1 - j] = dim; /* PyTorch order, outermost first: reverse */
        if (dim > SIZE_MAX || ws_mul_size(numel, (size_t)dim, &numel))
            return ws_errf(err, "%s: tensor '%s': element count overflows", path, name);
        j++;
    }
    t.n_elements = numel;
    if (ws_mul_size(numel, DTYPES[k].size, &t.nbytes))
        return ws_errf(err, "%s: tensor '%s': byte size overflows", path, name);
    uint64_t be[2];
    if (cJSON_GetArraySize(offs) != 2 || json_u64(cJSON_GetArrayItem(offs, 0), &be[0]) ||
        json_u64(cJSON_GetArrayItem(offs, 1), &be[1]))
        return ws_errf(err, "%s: tensor '%s': data_offsets is not two non-negative integers",
                       path, name);
    if (be[0] > be[1] || be[1] > buf_size)
        return ws_errf(err, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                       "] outside the %" PRIu64 "-byte data section", path, name, be[0], be[1],
                       buf_size);
    if (be[1] - be[0] != t.nbytes)
        return ws_errf(err, "%s: tensor '%s': data_offsets span %" PRIu64 " bytes, but %s x %zu "
                       "elements is %zu", path, name, be[1] - be[0], t.dtype, numel, t.nbytes);
    t.readable = 1;
    t.offset = buf_start + be[0];
    t.src = f;
    sp->begin = be[0];
    sp->end = be[1];
    sp->name = name;
    return ws_ckpt_add_tensor(c, &t, path, err);
}

/* The header of a safetensors file, parsed; *json (the header's bytes,
 * which cJSON's strings do not point into) is the caller's to free. */
static int read_header(const ws_rfile *f, const char *path, char **json, uint64_t *len,
                       cJSON **out, ws_err *err)
{
    *json = NULL;
    *out = NULL;
    if (f->size < 8)
        return ws_errf(err, "%s: truncated: %" PRIu64 " bytes, shorter than the 8-byte header "
                       "length", path, f->size);
    uint8_t lb[8];
    if (ws_rfile_read(f, 0, lb, 8, "the header length", err))
        return -1;
    uint64_t n = 0;
    for (int i = 0; i < 8; i++)
        n |= (uint64_t)lb[i] << 8 * i;
    if (n > f->size - 8)
        return ws_errf(err, "%s: not safetensors or truncated: header length %" PRIu64
                       " exceeds the %" PRIu64 " bytes after it", path, n, f->size - 8);
    if (n > HEADER_MAX)
        return ws_errf(err, "%s: header length %" PRIu64 " exceeds the format's 100 MB limit",
                       path, n);
    if (n < 2)
        return ws_errf(err, "%s: not safetensors: the header does not start with '{'", path);
    if (!(*json = malloc((size_t)n)))
        return ws_errf(err, "%s: out of memory for a %" PRIu64 "-byte header", path, n);
    if (ws_rfile_read(f, 8, *json, (size_t)n, "the header", err))
        return -1;
    if ((*json)[0] != '{')
        return ws_errf(err, "%s: not safetensors: the header does not start with '{'", path);
    const char *end = NULL;
    cJSON *h = cJSON_ParseWithLengthOpts(*json, (size_t)n, &end, 0);
    if (!h || !cJSON_IsObject(h)) {
        size_t at = end ? (size_t)(end - *json) : 0;
        cJSON_Delete(h);
        return ws_errf(err, "%s: header is not well-formed JSON (near byte %zu of %" PRIu64 ")",
                       path, at + 8, n);
    }
    for (const char *p = end; p < *json + n; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            cJSON_Delete(h);
            return ws_errf(err, "%s: header has bytes after its JSON object (at byte %zu)", path,
                           (size_t)(p - *json) + 8);
        }
    *len = n;
    *out = h;
    return 0;
}

int ws_ckpt_read_safetensors(ws_ckpt *c, const char *path, ws_err *err)
{
    const ws_rfile *f;
    if (ws_ckpt_open_file(c, path, &f, err))
        return -1;
    char *json;
    uint64_t n = 0;
    cJSON *h;
    if (read_header(f, path, &json, &n, &h, err)) {
        free(json);
        return -1;
    }
    free(json);
    const uint64_t buf_start = 8 + n, buf_size = f->size - 8 - n;
    int count = cJSON_GetArraySize(h);
    span *sp = calloc((size_t)count + 1, sizeof *sp);
    int rc = sp ? 0 : ws_errf(err, "%s: out of memory", path);
    int ns = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, h) {
        if (rc)
            break;
        if (!e->string) {
            rc = ws_errf(err, "%s: header: an entry without a name", path);
        } else if (!strcmp(e->string, "__metadata__")) {
            if (!cJSON_IsObject(e))
                rc = ws_errf(err, "%s: header: __metadata__ is not an object", path);
        } else {
            rc = read_entry(c, f, e, buf_start, buf_size, &sp[ns], err);
            ns += !rc;
        }
    }
    if (!rc) {
        /* The spec: the buffer is entirely indexed, without holes or overlaps. */
        qsort(sp, (size_t)ns, sizeof *sp, by_begin);
        uint64_t at = 0;
        for (int i = 0; i < ns && !rc; i++) {
            if (sp[i].begin != at)
                rc = ws_errf(err, "%s: tensor '%s': data at %" PRIu64 " %s the previous "
                             "tensor's end %" PRIu64, path, sp[i].name, sp[i].begin,
                             sp[i].begin < at ? "overlaps" : "leaves a hole after", at);
            at = sp[i].end;
        }
        if (!rc && at != buf_size)
            rc = ws_errf(err, "%s: the tensors cover %" PRIu64 " of the %" PRIu64
                         " data bytes (trailing bytes or a mislabelled file)", path, at, buf_size);
    }
    free(sp);
    cJSON_Delete(h);
    return rc;
}

/* --- sharded: model.safetensors.index.json -------------------------------- */

/* A shard name must stay under the index's directory. */
static int safe_relative(const char *s)
{
    if (!*s || *s == '/')
        return 0;
    for (const char *p = s;;) {
        if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == 0))
            return 0;
        const char *q = strchr(p, '/');
        if (!q)
            return 1;
        p = q + 1;
    }
}

/* path is inside dir (both canonical, dir without a trailing slash unless
 * it is the root). */
static int inside(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return 1;
    return !strncmp(path, dir, n) && path[n] == '/';
}

/* The directories a shard may resolve into: the index's directory as named,
 * and the directory of the file the index resolves to. Hugging Face's cache
 * keeps a snapshot as symlinks (snapshots/REV/model-00001-of-00002.safetensors
 * -> ../../blobs/HASH), the index among them, so its shards resolve next to
 * the index's own target. A symlink planted to read a file elsewhere (a key,
 * another user's data) resolves into neither. */
typedef struct {
    char *named, *real; /* canonical; real may equal named */
} shard_dirs;

static int shard_dirs_of(const char *index, shard_dirs *d, ws_err *err)
{
    d->named = d->real = NULL;
    const char *slash = strrchr(index, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == index)
        snprintf(dir, sizeof dir, "/");
    else if (snprintf(dir, sizeof dir, "%.*s", (int)(slash - index), index) >= (int)sizeof dir)
        return ws_errf(err, "%s: path too long", index);
    char *ri = realpath(index, NULL);
    d->named = realpath(dir, NULL);
    if (!ri || !d->named) {
        int e = errno;
        free(ri);
        free(d->named);
        d->named = NULL;
        return ws_errf(err, "%s: cannot resolve its directory: %s", index, strerror(e));
    }
    char *rs = strrchr(ri, '/'); /* realpath gives an absolute path: there is one */
    if (rs == ri)
        rs[1] = 0;
    else
        *rs = 0;
    d->real = ri;
    return 0;
}

/* A shard's name has passed safe_relative (no "..", not absolute); its
 * resolved path must also lie in one of dirs. *st gets the file it resolves
 * to (*resolved = 0 when it does not resolve: opening it will say why). */
static int shard_check(const char *shard, const char *name, const shard_dirs *dirs,
                       const char *index, struct stat *st, int *resolved, ws_err *err)
{
    *resolved = 0;
    char *rp = realpath(shard, NULL);
    if (!rp)
        return 0;
    int rc = 0;
    if (!inside(dirs->named, rp) && !inside(dirs->real, rp))
        rc = ws_errf(err, "%s: shard '%s' resolves to %s, outside the index's directory %s",
                     index, name, rp, dirs->named);
    else
        *resolved = stat(rp, st) == 0;
    free(rp);
    return rc;
}

/* Reads a shard; the file opened must be the file its path resolved to a
 * moment ago (a swap in between is refused). */
static int shard_read(ws_ckpt *c, const char *shard, const struct stat *st, int resolved,
                      ws_err *err)
{
    const ws_rfile *f;
    if (ws_ckpt_open_file(c, shard, &f, err))
        return -1;
    if (!resolved || f->dev != (uint64_t)st->st_dev || f->ino != (uint64_t)st->st_ino)
        return ws_errf(err, "%s: the file changed while being read: it is no longer the file "
                       "its path resolved to", shard);
    return ws_ckpt_read_safetensors(c, shard, err);
}

int ws_ckpt_read_safetensors_index(ws_ckpt *c, const char *path, ws_err *err)
{
    const ws_rfile *f;
    if (ws_ckpt_open_file(c, path, &f, err))
        return -1;
    if (f->size > HEADER_MAX)
        return ws_errf(err, "%s: index larger than 100 MB", path);
    char *text = malloc((size_t)f->size);
    if (!text)
        return ws_errf(err, "%s: out of memory", path);
    if (ws_rfile_read(f, 0, text, (size_t)f->size, NULL, err)) {
        free(text);
        return -1;
    }
    cJSON *h = cJSON_ParseWithLength(text, (size_t)f->size);
    free(text);
    if (!h || !cJSON_IsObject(h)) {
        cJSON_Delete(h);
        return ws_errf(err, "%s: not a safetensors index: not well-formed JSON", path);
    }
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(h, "weight_map");
    if (!cJSON_IsObject(wm)) {
        cJSON_Delete(h);
        return ws_errf(err, "%s: not a safetensors index: no \"weight_map\" object", path);
    }
    shard_dirs dirs;
    if (shard_dirs_of(path, &dirs, err)) {
        cJSON_Delete(h);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) + 1 : 0;
    int rc = 0;
    const cJSON *e;
    char shard[4096];
    /* Read each shard once, then check that the map agrees with the shards. */
    for (int pass = 0; pass < 2 && !rc; pass++) {
        cJSON_ArrayForEach(e, wm) {
            if (!cJSON_IsString(e) || !safe_relative(e->valuestring)) {
                rc = ws_errf(err, "%s: weight_map['%s'] is not a file name under the index's "
                             "directory", path, e->string);
                break;
            }
            if (snprintf(shard, sizeof shard, "%.*s%s", dir_len, path, e->valuestring) >=
                (int)sizeof shard) {
                rc = ws_errf(err, "%s: shard path too long", path);
                break;
            }
            if (pass == 0) {
                struct stat st;
                int resolved;
                size_t seen;
                if (c->opened && ws_strmap_get(c->opened, shard, strlen(shard), &seen))
                    continue; /* read already (the index itself counts: it holds no tensor) */
                if ((rc = shard_check(shard, e->valuestring, &dirs, path, &st, &resolved, err)))
                    break;
                if ((rc = shard_read(c, shard, &st, resolved, err))) {
                    char msg[WS_ERR_LEN];
                    snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
                    ws_errf(err, "%s (a shard listed in %s)", msg, path);
                    break;
                }
                continue;
            }
            const ws_ckpt_tensor *t = ws_ckpt_find(c, e->string);
            if (!t || strcmp(t->file, shard)) {
                rc = ws_errf(err, "%s: weight_map puts '%s' in %s, which does not hold it", path,
                             e->string, e->valuestring);
                break;
            }
        }
    }
    free(dirs.named);
    free(dirs.real);
    cJSON_Delete(h);
    return rc;
}

/* read.c - regular files read with pread, the GGUF reader and the ggml type
 * table (layout in gguf.h).
 *
 * The header is walked with a cursor {size, off} over a read-ahead window of
 * the file (ws_window); every read first checks that the bytes are in the
 * file (need()), and what must outlive the walk (keys, string values, tensor
 * names, scalar values) is copied into one arena. Skipped bytes (arrays, the
 * data section) are never read. Counts are checked against what the rest of
 * the file could hold before anything is allocated for them, so a 40-byte
 * file cannot ask for gigabytes. All multi-byte fields are decoded byte by
 * byte, so the host's byte order and alignment do not matter. Tested by
 * tests/test_gguf.c.
 */
#include "gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strmap.h"

#define GGUF_HEADER_BYTES 24 /* magic, version, tensor_count, kv_count */
#define MIN_KV_BYTES 13      /* empty key (8) + type (4) + a 1-byte value */
#define MIN_INFO_BYTES 24    /* empty name (8) + n_dims (4) + type (4) + offset (8) */
#define READ_AHEAD 65536     /* bytes a window reads at least: few syscalls for small fields */

/* --- regular files ----------------------------------------------------------- */

static int not_regular(const char *path, mode_t mode, ws_err *err)
{
    if (S_ISDIR(mode))
        return ws_errf(err, "%s: is a directory", path);
    const char *kind = S_ISFIFO(mode)  ? "a FIFO"
                       : S_ISCHR(mode) ? "a character device"
                       : S_ISBLK(mode) ? "a block device"
                       : S_ISSOCK(mode) ? "a socket"
                                        : "of an unknown kind";
    return ws_errf(err, "%s: not a regular file (%s)", path, kind);
}

int ws_rfile_open(ws_rfile *f, const char *path, ws_err *err)
{
    memset(f, 0, sizeof *f);
    f->fd = -1;
    /* O_NONBLOCK: open() of a FIFO would otherwise wait for a writer forever
     * (and a device might too). On a regular file it changes nothing. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        if (e == ENXIO && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* a socket */
            return not_regular(path, st.st_mode, err);
        return ws_errf(err, "%s: cannot open: %s", path, strerror(e));
    }
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ws_errf(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return not_regular(path, st.st_mode, err);
    }
    if (!(f->path = strdup(path))) {
        close(fd);
        return ws_errf(err, "%s: out of memory", path);
    }
    f->fd = fd;
    f->size = (uint64_t)st.st_size;
    f->dev = (uint64_t)st.st_dev;
    f->ino = (uint64_t)st.st_ino;
    f->mtime_s = (int64_t)st.st_mtim.tv_sec;
    f->mtime_ns = (int64_t)st.st_mtim.tv_nsec;
    return 0;
}

void ws_rfile_close(ws_rfile *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f->path);
    f->fd = -1;
    f->path = NULL;
}

static int changed(const ws_rfile *f, const char *what, uint64_t now, ws_err *err)
{
    char part[160] = "";
    if (what)
        snprintf(part, sizeof part, " (%s)", what);
    if (now < f->size)
        return ws_errf(err, "%s: the file changed while being read%s: it shrank from %" PRIu64
                            " to %" PRIu64 " bytes", f->path, part, f->size, now);
    return ws_errf(err, "%s: the file changed while being read%s: modified after it was opened",
                   f->path, part);
}

int ws_rfile_read(const ws_rfile *f, uint64_t off, void *dst, size_t n, const char *what,
                  ws_err *err)
{
    if (n == 0)
        return 0;
    /* Size and mtime as at open: what was validated is what is read. */
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return ws_errf(err, "%s: cannot stat: %s", f->path, strerror(errno));
    if ((uint64_t)st.st_size != f->size || (int64_t)st.st_mtim.tv_sec != f->mtime_s ||
        (int64_t)st.st_mtim.tv_nsec != f->mtime_ns)
        return changed(f, what, (uint64_t)st.st_size, err);
    if (off > f->size || n > f->size - off)
        return ws_errf(err, "%s: reading %zu bytes at offset %" PRIu64 " past the end (%" PRIu64
                            " bytes)", f->path, n, off, f->size);
    uint8_t *p = dst;
    while (n) {
        size_t k = n > (1u << 30) ? (1u << 30) : n;
        ssize_t r = pread(f->fd, p, k, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return ws_errf(err, "%s: read error at offset %" PRIu64 ": %s", f->path, off,
                           strerror(errno));
        if (r == 0) /* shorter than fstat said a moment ago */
            return changed(f, what, fstat(f->fd, &st) == 0 ? (uint64_t)st.st_size : off, err);
        p += r;
        off += (uint64_t)r;
        n -= (size_t)r;
    }
    return 0;
}

const uint8_t *ws_window_at(ws_window *w, uint64_t off, size_t n, const char *what, ws_err *err)
{
    if (n == 0)
        return (const uint8_t *)"";
    if (w->buf && off >= w->off && off - w->off <= w->len && n <= w->len - (off - w->off))
        return w->buf + (off - w->off);
    size_t want = n > READ_AHEAD ? n : READ_AHEAD;
    if (off >= w->f->size)
        want = 0;
    else if (want > w->f->size - off)
        want = (size_t)(w->f->size - off);
    if (want < n) /* the caller checks the range; this keeps a mistake from reading past buf */
        return ws_errf(err, "%s: %zu bytes at offset %" PRIu64 " are past the end (%" PRIu64
                            " bytes)", w->f->path, n, off, w->f->size), NULL;
    if (want > w->cap) {
        uint8_t *nb = realloc(w->buf, want);
        if (!nb)
            return ws_errf(err, "%s: out of memory for %zu bytes", w->f->path, want), NULL;
        w->buf = nb;
        w->cap = want;
    }
    w->len = 0;
    if (ws_rfile_read(w->f, off, w->buf, want, what, err))
        return NULL;
    w->off = off;
    w->len = want;
    return w->buf;
}

void ws_window_free(ws_window *w)
{
    free(w->buf);
    w->buf = NULL;
    w->len = w->cap = 0;
}

/* --- ggml types ------------------------------------------------------------ */

typedef struct {
    const char *name;
    uint32_t block;   /* elements per block (1 for plain types) */
    uint32_t bytes;   /* bytes per block; 0: size not known here */
} type_info;

/* ggml.h enum ggml_type and the block structs of ggml-common.h. Ids 4, 5 and
 * 31..33 were retired; the IQ and ternary sizes are not needed here. */
static const type_info TYPES[] = {
    [0] = {"F32", 1, 4},       [1] = {"F16", 1, 2},       [2] = {"Q4_0", 32, 18},
    [3] = {"Q4_1", 32, 20},    [6] = {"Q5_0", 32, 22},    [7] = {"Q5_1", 32, 24},
    [8] = {"Q8_0", 32, 34},    [9] = {"Q8_1", 32, 36},    [10] = {"Q2_K", 256, 84},
    [11] = {"Q3_K", 256, 110}, [12] = {"Q4_K", 256, 144}, [13] = {"Q5_K", 256, 176},
    [14] = {"Q6_K", 256, 210}, [15] = {"Q8_K", 256, 292}, [16] = {"IQ2_XXS", 256, 0},
    [17] = {"IQ2_XS", 256, 0}, [18] = {"IQ3_XXS", 256, 0}, [19] = {"IQ1_S", 256, 0},
    [20] = {"IQ4_NL", 32, 0},  [21] = {"IQ3_S", 256, 0},  [22] = {"IQ2_S", 256, 0},
    [23] = {"IQ4_XS", 256, 0}, [24] = {"I8", 1, 1},       [25] = {"I16", 1, 2},
    [26] = {"I32", 1, 4},      [27] = {"I64", 1, 8},      [28] = {"F64", 1, 8},
    [29] = {"IQ1_M", 256, 0},  [30] = {"BF16", 1, 2},     [34] = {"TQ1_0", 256, 0},
    [35] = {"TQ2_0", 256, 0},  [39] = {"MXFP4", 32, 0},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

const char *ws_ggml_type_name(uint32_t type)
{
    return type < N_TYPES ? TYPES[type].name : NULL;
}

int ws_ggml_nbytes(uint32_t type, uint64_t n, size_t *out, ws_err *err)
{
    if (type >= N_TYPES || !TYPES[type].name)
        return ws_errf(err, "unknown tensor type %" PRIu32, type);
    const type_info *t = &TYPES[type];
    if (!t->bytes)
        return ws_errf(err, "size of tensor type %s is not known here", t->name);
    if (n % t->block)
        return ws_errf(err, "%" PRIu64 " elements of type %s are not whole blocks of %" PRIu32, n,
                       t->name, t->block);
    if (n / t->block > SIZE_MAX || ws_mul_size((size_t)(n / t->block), t->bytes, out))
        return ws_errf(err, "%" PRIu64 " elements of type %s overflow size_t", n, t->name);
    return 0;
}

/* --- the handle ---------------------------------------------------------- */

typedef struct {
    size_t key, key_len; /* in the arena */
    uint32_t type;
    size_t val_off;      /* file offset of the value (for messages) */
    uint8_t val[8];      /* a scalar value's bytes, little-endian */
    size_t str, str_len; /* a string value, in the arena */
} kv_rec;

struct ws_gguf {
    char *path;
    ws_rfile f;
    size_t size;
    uint32_t version;
    size_t alignment;
    size_t data_off;
    size_t n_kv, n_tensors;
    kv_rec *kv;
    ws_strmap *keys;                /* key -> index in kv */
    ws_gguf_tensor *t;
    const ws_gguf_tensor **by_name; /* sorted by name, for bsearch */
    char *arena;                    /* keys, string values, tensor names; each NUL-terminated */
    size_t arena_len, arena_cap;
};

/* Copies n bytes (plus a NUL) into g's arena; *at gets their offset. The
 * arena holds only bytes read from the file, so it is bounded by its size. */
static int arena_put(ws_gguf *g, const uint8_t *p, size_t n, size_t *at, ws_err *err)
{
    if (n + 1 > g->arena_cap - g->arena_len) {
        size_t cap = g->arena_cap ? g->arena_cap : 4096;
        while (n + 1 > cap - g->arena_len) {
            if (cap > SIZE_MAX / 2)
                return ws_errf(err, "%s: out of memory", g->path);
            cap *= 2;
        }
        char *na = realloc(g->arena, cap);
        if (!na)
            return ws_errf(err, "%s: out of memory for %zu bytes of names", g->path, cap);
        g->arena = na;
        g->arena_cap = cap;
    }
    *at = g->arena_len;
    if (n)
        memcpy(g->arena + g->arena_len, p, n);
    g->arena[g->arena_len + n] = 0;
    g->arena_len += n + 1;
    return 0;
}

/* --- cursor -------------------------------------------------------------- */

typedef struct {
    ws_gguf *g;
    ws_window w;
    size_t size, off; /* invariant: off <= size */
    const char *path;
    ws_err *err;
} cursor;

static uint64_t le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static size_t left(const cursor *c)
{
    return c->size - c->off;
}

/* Fails unless n more bytes are there; what names the field being read.
 * On success *p (when p is not NULL) points at them, valid until the next
 * need(). */
static int need_at(cursor *c, size_t n, const char *what, const uint8_t **p)
{
    if (n > left(c))
        return ws_errf(c->err, "%s: truncated at offset %zu: %s needs %zu bytes, %zu left",
                       c->path, c->off, what, n, left(c));
    if (p && !(*p = ws_window_at(&c->w, c->off, n, "the header", c->err)))
        return -1;
    return 0;
}

static int need(cursor *c, size_t n, const char *what)
{
    return need_at(c, n, what, NULL);
}

static int rd_u32(cursor *c, uint32_t *v, const char *what)
{
    const uint8_t *p;
    if (need_at(c, 4, what, &p))
        return -1;
    *v = (uint32_t)le(p, 4);
    c->off += 4;
    return 0;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what)
{
    const uint8_t *p;
    if (need_at(c, 8, what, &p))
        return -1;
    *v = le(p, 8);
    c->off += 8;
    return 0;
}

static int skip(cursor *c, uint64_t n, const char *what)
{
    if (n > left(c))
        return need(c, n > SIZE_MAX ? SIZE_MAX : (size_t)n, what);
    c->off += (size_t)n;
    return 0;
}

/* A gguf string: u64 length, then the bytes. With at, the bytes are copied
 * into the arena (*at: their offset); without, they are skipped unread. */
static int rd_str(cursor *c, uint64_t max, size_t *at, size_t *len, const char *what)
{
    size_t start = c->off;
    uint64_t n;
    if (rd_u64(c, &n, what))
        return -1;
    if (n > max)
        return ws_errf(c->err, "%s: %s at offset %zu: length %" PRIu64 " exceeds the limit %" PRIu64,
                       c->path, what, start, n, max);
    if (len)
        *len = (size_t)n;
    if (!at)
        return skip(c, n, what);
    const uint8_t *p;
    if (need_at(c, (size_t)n, what, &p) || arena_put(c->g, p, (size_t)n, at, c->err))
        return -1;
    c->off += (size_t)n;
    return 0;
}

/* --- metadata ------------------------------------------------------------ */

static size_t scalar_size(uint32_t type)
{
    static const uint8_t SZ[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < sizeof SZ ? SZ[type] : 0;
}

/* Steps over one value of the given type. */
static int skip_value(cursor *c, uint32_t type, int depth, const char *key)
{
    if (type == WS_GGUF_STRING) {
        char what[120];
        snprintf(what, sizeof what, "string value of '%s'", key);
        return rd_str(c, WS_GGUF_MAX_STRING, NULL, NULL, what);
    }
    if (type == WS_GGUF_ARRAY) {
        size_t at = c->off;
        uint32_t et;
        uint64_t count;
        if (depth > 0)
            return ws_errf(c->err, "%s: key '%s' at offset %zu: arrays of arrays are not supported",
                           c->path, key, at);
        if (rd_u32(c, &et, "array type") || rd_u64(c, &count, "array length"))
            return -1;
        if (et == WS_GGUF_ARRAY)
            return ws_errf(c->err, "%s: key '%s' at offset %zu: arrays of arrays are not supported",
                           c->path, key, at);
        size_t es = et == WS_GGUF_STRING ? 8 : scalar_size(et); /* a string is >= its length */
        if (!es)
            return ws_errf(c->err, "%s: key '%s' at offset %zu: unknown array element type %" PRIu32,
                           c->path, key, at, et);
        if (count > left(c) / es)
            return ws_errf(c->err, "%s: key '%s' at offset %zu: array of %" PRIu64 " elements runs "
                                   "past the end of the file (%zu bytes)",
                           c->path, key, at, count, c->size);
        if (et != WS_GGUF_STRING) /* fixed-size elements: one bounds check */
            return skip(c, count * es, "array elements");
        for (uint64_t i = 0; i < count; i++)
            if (skip_value(c, et, depth + 1, key))
                return -1;
        return 0;
    }
    size_t es = scalar_size(type);
    if (!es)
        return ws_errf(c->err, "%s: key '%s' at offset %zu: unknown value type %" PRIu32, c->path,
                       key, c->off - 4, type);
    return skip(c, es, "value");
}

static int parse_kv(ws_gguf *g, cursor *c, uint64_t n_kv)
{
    for (uint64_t i = 0; i < n_kv; i++) {
        kv_rec *r = &g->kv[i];
        char what[48];
        snprintf(what, sizeof what, "key of metadata pair %" PRIu64, i);
        if (rd_str(c, WS_GGUF_MAX_NAME, &r->key, &r->key_len, what))
            return -1;
        char key[80]; /* for messages only */
        snprintf(key, sizeof key, "%.*s", (int)(r->key_len < 64 ? r->key_len : 64),
                 g->arena + r->key);
        if (rd_u32(c, &r->type, "value type"))
            return -1;
        r->val_off = c->off;
        /* Keep what the getters return: a scalar's bytes, a string. */
        size_t es = scalar_size(r->type);
        const uint8_t *p;
        if (es) {
            if (need_at(c, es, "value", &p))
                return -1;
            memcpy(r->val, p, es);
        }
        if (r->type == WS_GGUF_STRING) {
            char sw[120];
            snprintf(sw, sizeof sw, "string value of '%s'", key);
            if (rd_str(c, WS_GGUF_MAX_STRING, &r->str, &r->str_len, sw))
                return -1;
        } else if (skip_value(c, r->type, 0, key)) {
            return -1;
        }
        g->n_kv = i + 1;
    }
    return 0;
}

static const kv_rec *find_kv(const ws_gguf *g, const char *key)
{
    size_t i;
    return g->keys && ws_strmap_get(g->keys, key, strlen(key), &i) ? &g->kv[i] : NULL;
}

/* Duplicate keys are an error (ggml refuses them too): which one would win? */
static int check_unique_keys(ws_gguf *g, ws_err *err)
{
    if (!(g->keys = ws_strmap_new()))
        return ws_errf(err, "%s: out of memory", g->path);
    for (size_t i = 0; i < g->n_kv; i++) {
        const kv_rec *r = &g->kv[i];
        int rc = ws_strmap_put(g->keys, g->arena + r->key, r->key_len, i, NULL);
        if (rc < 0)
            return ws_errf(err, "%s: out of memory", g->path);
        if (rc > 0)
            return ws_errf(err, "%s: metadata key '%.*s' appears twice", g->path,
                           (int)(r->key_len < 200 ? r->key_len : 200), g->arena + r->key);
    }
    return 0;
}

static int read_alignment(ws_gguf *g, ws_err *err)
{
    g->alignment = WS_GGUF_DEFAULT_ALIGNMENT;
    const kv_rec *r = find_kv(g, "general.alignment");
    if (!r)
        return 0;
    if (r->type != WS_GGUF_U32)
        return ws_errf(err, "%s: general.alignment at offset %zu has value type %" PRIu32
                            ", expected u32 (%d)", g->path, r->val_off, r->type, WS_GGUF_U32);
    uint32_t a = (uint32_t)le(r->val, 4);
    if (a == 0 || (a & (a - 1)))
        return ws_errf(err, "%s: general.alignment %" PRIu32 " at offset %zu is not a power of two",
                       g->path, a, r->val_off);
    g->alignment = a;
    return 0;
}

/* --- tensor infos -------------------------------------------------------- */

static int parse_infos(ws_gguf *g, cursor *c, uint64_t n_t, size_t *name_off, size_t *name_len)
{
    for (uint64_t i = 0; i < n_t; i++) {
        ws_gguf_tensor *t = &g->t[i];
        char what[48];
        snprintf(what, sizeof what, "name of tensor %" PRIu64, i);
        t->info_offset = c->off;
        if (rd_str(c, WS_GGUF_MAX_NAME, &name_off[i], &name_len[i], what))
            return -1;
        const char *nm = g->arena + name_off[i];
        char tn[80];
        snprintf(tn, sizeof tn, "%.*s", (int)(name_len[i] < 64 ? name_len[i] : 64), nm);
        if (memchr(nm, 0, name_len[i]))
            return ws_errf(c->err, "%s: tensor %" PRIu64 " at offset %zu: name contains a NUL byte",
                           c->path, i, t->info_offset);
        size_t at = c->off;
        if (rd_u32(c, &t->n_dims, "n_dims"))
            return -1;
        if (t->n_dims > WS_GGUF_MAX_DIMS)
            return ws_errf(c->err, "%s: tensor '%s': n_dims %" PRIu32 " at offset %zu exceeds %d",
                           c->path, tn, t->n_dims, at, WS_GGUF_MAX_DIMS);
        uint64_t nel = 1;
        int overflow = 0;
        for (uint32_t j = 0; j < WS_GGUF_MAX_DIMS; j++) {
            t->ne[j] = 1;
            if (j >= t->n_dims)
                continue;
            at = c->off;
            if (rd_u64(c, &t->ne[j], "ne"))
                return -1;
            if (t->ne[j] > INT64_MAX) /* ggml stores ne as int64 */
                return ws_errf(c->err, "%s: tensor '%s': ne[%" PRIu32 "] = %" PRIu64
                                       " at offset %zu is negative as int64",
                               c->path, tn, j, t->ne[j], at);
            size_t p;
            if (t->ne[j] > SIZE_MAX || ws_mul_size((size_t)nel, (size_t)t->ne[j], &p))
                overflow = 1;
            else
                nel = p;
        }
        if (overflow) {
            char shape[128];
            int k = snprintf(shape, sizeof shape, "%" PRIu64, t->ne[0]);
            for (uint32_t j = 1; j < t->n_dims && k > 0 && (size_t)k < sizeof shape; j++)
                k += snprintf(shape + k, sizeof shape - (size_t)k, ",%" PRIu64, t->ne[j]);
            return ws_errf(c->err, "%s: tensor '%s': element count of ne=[%s] overflows size_t",
                           c->path, tn, shape);
        }
        t->n_elements = nel;
        uint64_t off;
        if (rd_u32(c, &t->type, "tensor type") || rd_u64(c, &off, "tensor offset"))
            return -1;
        t->file_offset = off > SIZE_MAX ? SIZE_MAX : (size_t)off; /* relative for now */
        if (off % g->alignment)
            return ws_errf(c->err, "%s: tensor '%s': offset %" PRIu64
                                   " is not a multiple of the alignment %zu",
                           c->path, tn, off, g->alignment);
        if (t->type < N_TYPES && TYPES[t->type].bytes) {
            ws_err e;
            if (ws_ggml_nbytes(t->type, nel, &t->nbytes, &e))
                return ws_errf(c->err, "%s: tensor '%s': %s", c->path, tn, e.msg);
        }
        g->n_tensors = i + 1;
    }
    return 0;
}

static int cmp_tensor(const void *a, const void *b)
{
    const ws_gguf_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* Points each tensor at its name in the arena (which no longer moves) and
 * indexes the names. */
static int index_names(ws_gguf *g, const size_t *name_off, ws_err *err)
{
    g->by_name = malloc((g->n_tensors ? g->n_tensors : 1) * sizeof *g->by_name);
    if (!g->by_name)
        return ws_errf(err, "%s: out of memory for %zu tensor names", g->path, g->n_tensors);
    for (size_t i = 0; i < g->n_tensors; i++) {
        g->t[i].name = g->arena + name_off[i];
        g->by_name[i] = &g->t[i];
    }
    qsort(g->by_name, g->n_tensors, sizeof *g->by_name, cmp_tensor);
    for (size_t i = 1; i < g->n_tensors; i++)
        if (strcmp(g->by_name[i - 1]->name, g->by_name[i]->name) == 0)
            return ws_errf(err, "%s: tensor name '%s' appears twice", g->path, g->by_name[i]->name);
    return 0;
}

/* Places every tensor of known size inside the data section, in the file. */
static int place_data(ws_gguf *g, ws_err *err)
{
    for (size_t i = 0; i < g->n_tensors; i++) {
        ws_gguf_tensor *t = &g->t[i];
        size_t start, end;
        if (ws_add_size(g->data_off, t->file_offset, &start))
            return ws_errf(err, "%s: tensor '%s': data offset %zu + %zu overflows", g->path,
                           t->name, g->data_off, t->file_offset);
        if (ws_add_size(start, t->nbytes, &end) || end > g->size)
            return ws_errf(err, "%s: tensor '%s': data [offset %zu, %zu bytes) runs past the end "
                                "of the file (%zu bytes)",
                           g->path, t->name, start, t->nbytes, g->size);
        t->file_offset = start;
        t->readable = t->type < N_TYPES && TYPES[t->type].bytes;
    }
    return 0;
}

/* --- header and open ----------------------------------------------------- */

static int parse_body(ws_gguf *g, cursor *cp, ws_err *err)
{
    cursor *c = cp;
    const uint8_t *magic;
    if (need_at(c, g->size < 4 ? g->size : 4, "the magic", &magic))
        return -1;
    if (g->size < 4 || memcmp(magic, "GGUF", 4) != 0) {
        char shown[5] = {0}, hex[16] = {0};
        for (size_t i = 0; i < 4 && i < g->size; i++) {
            uint8_t b = magic[i];
            shown[i] = b >= 0x20 && b < 0x7f ? (char)b : '.';
            snprintf(hex + 3 * i, sizeof hex - 3 * i, "%02x ", b);
        }
        hex[strlen(hex) - 1] = 0; /* the last space */
        return ws_errf(err, "%s: not a GGUF file: starts with '%s' (%s), expected 'GGUF'", g->path,
                       shown, hex);
    }
    c->off = 4;
    if (rd_u32(c, &g->version, "version"))
        return -1;
    if (g->version == 1)
        return ws_errf(err, "%s: GGUF version 1 (32-bit counts) is not supported; convert the "
                            "file again with a current ggml", g->path);
    if (g->version != 2 && g->version != 3) {
        if (g->version && (g->version & 0xffffffu) == 0) /* 2 or 3 read the other way round */
            return ws_errf(err, "%s: GGUF version 0x%08" PRIx32 " looks byte-swapped: big-endian "
                                "files are not supported", g->path, g->version);
        return ws_errf(err, "%s: GGUF version %" PRIu32 " is not supported (2 or 3)", g->path,
                       g->version);
    }
    uint64_t n_t, n_kv;
    if (rd_u64(c, &n_t, "tensor count") || rd_u64(c, &n_kv, "metadata count"))
        return -1;
    if (n_t > WS_GGUF_MAX_COUNT)
        return ws_errf(err, "%s: tensor count %" PRIu64 " at offset 8 exceeds the limit %u",
                       g->path, n_t, WS_GGUF_MAX_COUNT);
    if (n_kv > WS_GGUF_MAX_COUNT)
        return ws_errf(err, "%s: metadata count %" PRIu64 " at offset 16 exceeds the limit %u",
                       g->path, n_kv, WS_GGUF_MAX_COUNT);
    /* Before allocating for them, the counts must fit in what is left. */
    if (n_kv * MIN_KV_BYTES + n_t * MIN_INFO_BYTES > left(c))
        return ws_errf(err, "%s: truncated: %" PRIu64 " metadata pairs and %" PRIu64
                            " tensors cannot fit in the %zu bytes after the header",
                       g->path, n_kv, n_t, left(c));
    g->kv = calloc(n_kv ? n_kv : 1, sizeof *g->kv);
    g->t = calloc(n_t ? n_t : 1, sizeof *g->t);
    size_t *name_off = calloc(n_t ? n_t : 1, sizeof *name_off);
    size_t *name_len = calloc(n_t ? n_t : 1, sizeof *name_len);
    int rc = -1;
    if (!g->kv || !g->t || !name_off || !name_len)
        ws_errf(err, "%s: out of memory", g->path);
    else if (!parse_kv(g, c, n_kv) && !check_unique_keys(g, err) && !read_alignment(g, err) &&
             !parse_infos(g, c, n_t, name_off, name_len) && !index_names(g, name_off, err)) {
        /* The data section starts at the next multiple of the alignment. */
        size_t pad = (g->alignment - c->off % g->alignment) % g->alignment;
        if (ws_add_size(c->off, pad, &g->data_off))
            g->data_off = SIZE_MAX;
        rc = place_data(g, err);
    }
    free(name_off);
    free(name_len);
    return rc;
}

static int parse(ws_gguf *g, ws_err *err)
{
    cursor c = {g, {&g->f, NULL, 0, 0, 0}, g->size, 0, g->path, err};
    int rc = parse_body(g, &c, err);
    ws_window_free(&c.w); /* the header is no longer needed: what is kept was copied */
    return rc;
}

ws_gguf *ws_gguf_open(const char *path, ws_err *err)
{
    ws_gguf *g = calloc(1, sizeof *g);
    if (g)
        g->f.fd = -1;
    if (!g || !(g->path = strdup(path))) {
        free(g);
        return ws_errf(err, "%s: out of memory", path), NULL;
    }
    if (ws_rfile_open(&g->f, path, err))
        goto fail;
    if (g->f.size == 0) {
        ws_errf(err, "%s: empty file (0 bytes), expected a GGUF header", path);
        goto fail;
    }
    if (g->f.size > SIZE_MAX) {
        ws_errf(err, "%s: too large to read", path);
        goto fail;
    }
    g->size = (size_t)g->f.size;
    if (parse(g, err))
        goto fail;
    return g;
fail:
    ws_gguf_close(g);
    return NULL;
}

void ws_gguf_close(ws_gguf *g)
{
    if (!g)
        return;
    ws_rfile_close(&g->f);
    free(g->kv);
    ws_strmap_free(g->keys);
    free(g->t);
    free(g->by_name);
    free(g->arena);
    free(g->path);
    free(g);
}

int ws_gguf_read(const ws_gguf *g, const ws_gguf_tensor *t, size_t off, void *dst, size_t n,
                 ws_err *err)
{
    char what[160];
    snprintf(what, sizeof what, "tensor '%.100s'", t->name);
    if (!t->readable)
        return ws_errf(err, "%s: %s: type %" PRIu32 " has no known size; its data cannot be read",
                       g->path, what, t->type);
    if (off > t->nbytes || n > t->nbytes - off)
        return ws_errf(err, "%s: %s: bytes [%zu, +%zu) are outside its %zu bytes", g->path, what,
                       off, n, t->nbytes);
    return ws_rfile_read(&g->f, (uint64_t)(t->file_offset + off), dst, n, what, err);
}

const ws_rfile *ws_gguf_file(const ws_gguf *g) { return &g->f; }

/* --- queries ------------------------------------------------------------- */

const char *ws_gguf_path(const ws_gguf *g) { return g->path; }
uint32_t ws_gguf_version(const ws_gguf *g) { return g->version; }
size_t ws_gguf_alignment(const ws_gguf *g) { return g->alignment; }
size_t ws_gguf_data_offset(const ws_gguf *g) { return g->data_off; }
size_t ws_gguf_n_tensors(const ws_gguf *g) { return g->n_tensors; }
size_t ws_gguf_n_kv(const ws_gguf *g) { return g->n_kv; }

const ws_gguf_tensor *ws_gguf_tensor_at(const ws_gguf *g, size_t i)
{
    return i < g->n_tensors ? &g->t[i] : NULL;
}

const ws_gguf_tensor *ws_gguf_find(const ws_gguf *g, const char *name)
{
    ws_gguf_tensor key = {.name = name};
    const ws_gguf_tensor *pk = &key;
    const ws_gguf_tensor **hit =
        bsearch(&pk, g->by_name, g->n_tensors, sizeof *g->by_name, cmp_tensor);
    return hit ? *hit : NULL;
}

int ws_gguf_get_str(const ws_gguf *g, const char *key, char *buf, size_t cap, size_t *len)
{
    const kv_rec *r = find_kv(g, key);
    if (!r)
        return 0;
    if (r->type != WS_GGUF_STRING)
        return -1;
    size_t n = r->str_len;
    if (cap) {
        size_t k = n < cap - 1 ? n : cap - 1;
        memcpy(buf, g->arena + r->str, k);
        buf[k] = 0;
    }
    if (len)
        *len = n;
    return 1;
}

int ws_gguf_get_int(const ws_gguf *g, const char *key, int64_t *out)
{
    const kv_rec *r = find_kv(g, key);
    if (!r)
        return 0;
    const uint8_t *p = r->val;
    uint64_t u;
    switch (r->type) {
    case WS_GGUF_U8: case WS_GGUF_BOOL: *out = p[0]; return 1;
    case WS_GGUF_I8: *out = (int8_t)p[0]; return 1;
    case WS_GGUF_U16: *out = (uint16_t)le(p, 2); return 1;
    case WS_GGUF_I16: *out = (int16_t)le(p, 2); return 1;
    case WS_GGUF_U32: *out = (uint32_t)le(p, 4); return 1;
    case WS_GGUF_I32: *out = (int32_t)le(p, 4); return 1;
    case WS_GGUF_I64: u = le(p, 8); memcpy(out, &u, 8); return 1;
    case WS_GGUF_U64:
        u = le(p, 8);
        if (u > INT64_MAX)
            return -1;
        *out = (int64_t)u;
        return 1;
    default: return -1;
    }
}

int ws_gguf_get_float(const ws_gguf *g, const char *key, double *out)
{
    const kv_rec *r = find_kv(g, key);
    if (!r)
        return 0;
    if (r->type == WS_GGUF_F32) {
        uint32_t u = (uint32_t)le(r->val, 4);
        float f;
        memcpy(&f, &u, 4);
        *out = f;
        return 1;
    }
    if (r->type == WS_GGUF_F64) {
        uint64_t u = le(r->val, 8);
        memcpy(out, &u, 8);
        return 1;
    }
    return -1;
}

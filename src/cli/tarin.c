/* tarin.c - tar shards as inputs: listing a shard's members by its headers, and the
 * reader that hands out a gzip shard's members in shard order (tarin.h). Tested by
 * tests/test_tar_in.c. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tarin.h"

/* A pax header's records, a GNU long name: at most this many bytes (a path is 4096; the
 * records of one member a few hundred). */
#define META_MAX ((uint64_t)1 << 20)
/* Sizes past this are no file's (and offsets plus sizes cannot overflow). */
#define SIZE_LIMIT ((uint64_t)1 << 62)
/* zlib's buffer for a gzip shard, and the most one gzread asks for. zlib decompresses a
 * request of twice its buffer or more straight into the caller's memory, and a stream
 * that breaks inside one decompression loses all that decompression gave (gzread fails
 * with none of it). Asked for less, it refills its own buffer, always from where the last
 * refill ended and as far as the buffer holds (or its gzip member ends): the same places
 * of the stream whatever is asked, so that the listing and the second pass lose the same
 * bytes at a break, and a member the listing saw whole is read whole. */
#define GZ_BUFFER (1 << 17)
#define GZ_CHUNK ((uint64_t)1 << 16)
_Static_assert(GZ_CHUNK < 2 * (uint64_t)GZ_BUFFER, "every gzread goes through zlib's buffer");

struct ws_tarin_gz {
    char *path;
    struct stat st;      /* the shard as listed: the second pass reads the same file */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gzFile z;            /* the second pass, opened at the first read */
    uint64_t pos;        /* bytes of the decompressed stream passed */
    char broken[WS_ERR_LEN]; /* non-empty: the stream broke; later reads fail with it */
    int n_turns, next;
    unsigned char *over; /* [n_turns] */
};

/* --- the names ------------------------------------------------------------------------- */

int ws_tarin_is_audio(const char *name)
{
    /* what the decoders read (libsndfile, libmpg123, FFmpeg's libraries); a WebDataset
     * sample's other members (.json, .txt, .cls, ...) are not inputs */
    static const char *const ext[] = {"wav",  "wave", "flac", "mp3", "mp2",  "ogg", "oga",
                                      "opus", "m4a",  "mp4",  "aac", "webm", "wma", "aiff",
                                      "aif",  "aifc", "w64",  "au",  "snd",  "caf", "mka",
                                      "mkv",  "spx",  "amr",  "ac3", "wv",   "rf64", "sph",
                                      "nist", "voc",  "mov",  "3gp", "avi"};
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    if (!dot)
        return 0;
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++)
        if (!strcasecmp(dot + 1, ext[i]))
            return 1;
    return 0;
}

int ws_tarin_key(const char *name, int keep_ext, char *out, size_t cap)
{
    while (name[0] == '.' && name[1] == '/') /* tar -C dir . names them ./a.flac */
        name += 2;
    if (!*name || *name == '/')
        return -1;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = keep_ext ? NULL : strchr(base, '.');
    size_t len = dot ? (size_t)(dot - name) : strlen(name);
    if (len + 1 > cap)
        return -1;
    memcpy(out, name, len);
    out[len] = 0;
    for (const char *c = out;;) { /* every part names a file or directory of its own */
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return -1;
        if (!c[n])
            return 0;
        c += n + 1;
    }
}

/* --- the walk ---------------------------------------------------------------------------- */

typedef struct {
    const char *path;
    int fd;
    gzFile z;       /* gzip: the decompressed stream */
    uint64_t pos;   /* gzip: its bytes passed */
    uint64_t fsize; /* plain: the file's size */
    char why[256];  /* why a read came short: a read error, the gzip stream's own */
} walker;

/* gzerror's message without the name zlib gives a gzdopen'd stream ("<fd:3>: "): the
 * caller's message names the shard. *ze: its code. */
static const char *gz_why(gzFile z, int *ze)
{
    const char *m = gzerror(z, ze);
    const char *c = strncmp(m, "<fd:", 4) ? NULL : strstr(m, ">: ");
    return c ? c + 3 : m;
}

/* gzip: passes the decompressed bytes up to off (never back). 0, or -1 when the stream
 * ends or fails first (why set). */
static int gz_skip(gzFile z, uint64_t *pos, uint64_t off, char *why, size_t cap)
{
    static __thread char scratch[GZ_CHUNK];
    while (*pos < off) {
        uint64_t k = off - *pos;
        int n = gzread(z, scratch, (unsigned)(k < sizeof scratch ? k : sizeof scratch));
        if (n <= 0) {
            int ze = Z_OK;
            const char *zm = gz_why(z, &ze);
            snprintf(why, cap, "%s", n == 0 || ze == Z_BUF_ERROR || ze == Z_OK
                                         ? "the shard ends early (truncated)"
                                         : ze == Z_ERRNO ? strerror(errno) : zm);
            return -1;
        }
        *pos += (uint64_t)n;
    }
    return 0;
}

/* gzip: n bytes of the stream into buf (at its position). n, fewer at its end, or -1. */
static int64_t gz_take(gzFile z, uint64_t *pos, void *buf, uint64_t n, char *why, size_t cap)
{
    uint64_t got = 0;
    while (got < n) {
        uint64_t k = n - got;
        int r = gzread(z, (char *)buf + got, (unsigned)(k < GZ_CHUNK ? k : GZ_CHUNK));
        if (r < 0) {
            int ze = Z_OK;
            const char *zm = gz_why(z, &ze);
            snprintf(why, cap, "%s", ze == Z_ERRNO ? strerror(errno) : zm);
            return -1;
        }
        if (r == 0) {
            int ze = Z_OK;
            const char *zm = gz_why(z, &ze);
            if (ze != Z_OK && ze != Z_BUF_ERROR) {
                snprintf(why, cap, "%s", zm);
                return -1;
            }
            break;
        }
        got += (uint64_t)r;
        *pos += (uint64_t)r;
    }
    return (int64_t)got;
}

/* n bytes at off into buf: n, fewer at the end of the shard, or -1 (w->why). */
static int64_t w_read(walker *w, uint64_t off, void *buf, size_t n)
{
    if (w->z) {
        if (gz_skip(w->z, &w->pos, off, w->why, sizeof w->why))
            return -1;
        return gz_take(w->z, &w->pos, buf, n, w->why, sizeof w->why);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(w->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(w->why, sizeof w->why, "%s", strerror(errno));
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (int64_t)got;
}

/* A numeric header field: octal (spaces before, NUL or spaces after), or GNU's base-256
 * (the first byte's high bit set). 0, or -1 when it is neither or too large. */
static int parse_num(const unsigned char *f, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    if (f[0] & 0x80) {
        if (f[0] != 0x80) /* negative, or more than 8 bytes of number */
            return -1;
        for (size_t i = 1; i < n; i++) {
            if (x >> 55)
                return -1;
            x = x << 8 | f[i];
        }
    } else {
        size_t i = 0;
        while (i < n && f[i] == ' ')
            i++;
        for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
            if (x >> 58)
                return -1;
            x = x << 3 | (uint64_t)(f[i] - '0');
        }
        for (; i < n; i++) /* an empty field is 0 */
            if (f[i] != 0 && f[i] != ' ')
                return -1;
    }
    if (x >= SIZE_LIMIT)
        return -1;
    *v = x;
    return 0;
}

static int checksum_ok(const unsigned char *h)
{
    uint64_t want;
    if (parse_num(h + 148, 8, &want))
        return 0;
    unsigned long u = 0;
    long s = 0; /* some old tars summed signed chars */
    for (int i = 0; i < 512; i++) {
        unsigned char b = i >= 148 && i < 156 ? ' ' : h[i];
        u += b;
        s += (signed char)b;
    }
    return want == u || (long long)want == (long long)s;
}

/* pax records "LEN KEY=VALUE\n": path and size into *name (malloc'd) and *size. 0, or -1
 * with why. */
static int pax_records(const char *p, size_t n, char **name, uint64_t *size, char *why,
                       size_t cap)
{
    size_t at = 0;
    while (at < n) {
        if (p[at] == 0) /* NUL padding after the records */
            break;
        size_t len = 0, i = at;
        while (i < n && p[i] >= '0' && p[i] <= '9' && len < n)
            len = len * 10 + (size_t)(p[i++] - '0');
        if (i == at || i >= n || p[i] != ' ' || len <= i - at + 1 || len > n - at ||
            p[at + len - 1] != '\n')
            return snprintf(why, cap, "a record is malformed"), -1;
        const char *kv = p + i + 1, *end = p + at + len - 1;
        const char *eq = memchr(kv, '=', (size_t)(end - kv));
        if (!eq)
            return snprintf(why, cap, "a record has no '='"), -1;
        const size_t kl = (size_t)(eq - kv), vl = (size_t)(end - eq - 1);
        if (kl == 4 && !memcmp(kv, "path", 4)) {
            if (memchr(eq + 1, 0, vl) || vl == 0)
                return snprintf(why, cap, "its path record is empty or holds a NUL byte"), -1;
            free(*name);
            if (!(*name = strndup(eq + 1, vl)))
                return snprintf(why, cap, "out of memory"), -1;
        } else if (kl == 4 && !memcmp(kv, "size", 4)) {
            uint64_t v = 0;
            if (vl == 0 || vl > 19)
                return snprintf(why, cap, "its size record is not a size"), -1;
            for (size_t k = 0; k < vl; k++) {
                char c = eq[1 + k];
                if (c < '0' || c > '9')
                    return snprintf(why, cap, "its size record is not a size"), -1;
                v = v * 10 + (uint64_t)(c - '0');
            }
            if (v >= SIZE_LIMIT)
                return snprintf(why, cap, "its size record is too large"), -1;
            *size = v;
        }
        at += len;
    }
    return 0;
}

/* The walk's end at a bad header: fn told, once. A header whose name field is empty names
 * no member: the shard is the input that fails, not "SHARD:". */
static int bad_at(ws_tarin_fn fn, void *ctx, const char *name, uint64_t off, const char *fmt,
                  const char *a)
{
    char msg[1024];
    snprintf(msg, sizeof msg, fmt, a);
    return fn(ctx, name && *name ? name : NULL, off, 0, msg);
}

static int walk(walker *w, ws_tarin_fn fn, void *ctx)
{
    unsigned char h[512];
    uint64_t off = 0, meta_size = 0;
    char *next_name = NULL; /* from a pax header or a GNU long name, for the next member */
    int have_meta_size = 0, rc = 0;
    char *meta = NULL;
    for (;;) {
        int64_t n = w_read(w, off, h, sizeof h);
        if (n < 0) {
            char m[400];
            snprintf(m, sizeof m, "cannot read the header at offset %llu: %s",
                     (unsigned long long)off, w->why);
            rc = bad_at(fn, ctx, next_name, off, "%s", m);
            break;
        }
        if (n == 0 && !next_name && !have_meta_size) /* no end blocks: an end all the same */
            break;
        if (n < (int64_t)sizeof h) {
            char o[32];
            snprintf(o, sizeof o, "%llu", (unsigned long long)off);
            rc = bad_at(fn, ctx, next_name, off, "the shard ends inside the header at offset %s "
                                                 "(truncated)", o);
            break;
        }
        int zero = 1;
        for (size_t i = 0; i < sizeof h && zero; i++)
            zero = h[i] == 0;
        if (zero)
            break;
        char o[32];
        snprintf(o, sizeof o, "%llu", (unsigned long long)off);
        uint64_t size;
        if (!checksum_ok(h)) {
            rc = bad_at(fn, ctx, next_name, off, "bad header checksum at offset %s (not a tar "
                                                 "header: a damaged shard); the rest is not read", o);
            break;
        }
        if (parse_num(h + 124, 12, &size)) {
            rc = bad_at(fn, ctx, next_name, off, "the header at offset %s has no size; the rest "
                                                 "is not read", o);
            break;
        }
        const char type = (char)h[156];
        if (have_meta_size && type != 'x' && type != 'g' && type != 'L' && type != 'K')
            size = meta_size;
        /* the name: a pax path or GNU long name, else ustar's prefix/name */
        char hname[260];
        const size_t nl = strnlen((const char *)h, 100);
        const int posix = !memcmp(h + 257, "ustar\0", 6);
        const size_t pl = posix ? strnlen((const char *)h + 345, 155) : 0;
        if (pl)
            snprintf(hname, sizeof hname, "%.*s/%.*s", (int)pl, (const char *)h + 345, (int)nl,
                     (const char *)h);
        else
            snprintf(hname, sizeof hname, "%.*s", (int)nl, (const char *)h);
        const char *name = next_name ? next_name : hname;
        const uint64_t data = off + 512;
        if (!w->z && (data > w->fsize || size > w->fsize - data)) {
            char m[600];
            snprintf(m, sizeof m, "the member's %llu bytes at offset %llu run past the end of the "
                                  "shard (%llu bytes: truncated)",
                     (unsigned long long)size, (unsigned long long)data,
                     (unsigned long long)w->fsize);
            rc = bad_at(fn, ctx, name, off, "%s", m);
            break;
        }
        if (type == 'x' || type == 'L') { /* this member's name (and size) for the next */
            if (size > META_MAX) {
                rc = bad_at(fn, ctx, next_name, off, "the extended header at offset %s is larger "
                                                     "than 1 MiB; the rest is not read", o);
                break;
            }
            free(meta);
            int64_t got = (meta = malloc(size + 1)) ? w_read(w, data, meta, size) : -1;
            if (got != (int64_t)size) {
                rc = bad_at(fn, ctx, next_name, off, "the shard ends inside the extended header "
                                                     "at offset %s (truncated)", o);
                break;
            }
            meta[size] = 0;
            if (type == 'L') {
                if (!meta[0]) {
                    rc = bad_at(fn, ctx, NULL, off, "the long name at offset %s is empty", o);
                    break;
                }
                free(next_name);
                if (!(next_name = strdup(meta))) {
                    rc = bad_at(fn, ctx, NULL, off, "out of memory at offset %s", o);
                    break;
                }
            } else {
                char why[200];
                uint64_t ps = UINT64_MAX;
                if (pax_records(meta, (size_t)size, &next_name, &ps, why, sizeof why)) {
                    char m[300];
                    snprintf(m, sizeof m, "the pax header at offset %s: %s", o, why);
                    rc = bad_at(fn, ctx, next_name, off, "%s; the rest is not read", m);
                    break;
                }
                if (ps != UINT64_MAX) {
                    meta_size = ps;
                    have_meta_size = 1;
                }
            }
        } else if (type == '0' || type == 0 || type == '7') {
            if (ws_tarin_is_audio(name)) {
                /* gzip: the member's bytes are all there before it is listed */
                if (w->z && gz_skip(w->z, &w->pos, data + size, w->why, sizeof w->why)) {
                    char m[400];
                    snprintf(m, sizeof m, "%s, inside the member's %llu bytes at offset %llu",
                             w->why, (unsigned long long)size, (unsigned long long)data);
                    rc = bad_at(fn, ctx, name, off, "%s", m);
                    break;
                }
                if ((rc = fn(ctx, name, data, size, NULL)) != 0)
                    break;
            }
        }
        if (type != 'x' && type != 'L' && type != 'K' && type != 'g') {
            free(next_name);
            next_name = NULL;
            have_meta_size = 0;
        }
        off = data + ((size + 511) & ~(uint64_t)511);
    }
    free(meta);
    free(next_name);
    return rc;
}

int ws_tarin_list(const char *path, ws_tarin_fn fn, void *ctx, struct ws_tarin_gz **reader,
                  ws_err *err)
{
    *reader = NULL;
    walker w = {.path = path, .fd = -1};
    w.fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (w.fd < 0)
        return ws_errf(err, "%s", strerror(errno));
    struct stat st;
    const int stat_bad = fstat(w.fd, &st) != 0, e = errno;
    if (stat_bad || !S_ISREG(st.st_mode)) {
        close(w.fd);
        return ws_errf(err, "%s", stat_bad ? strerror(e)
                                            : "not a regular file (a shard is read in place)");
    }
    w.fsize = (uint64_t)st.st_size;
    unsigned char magic[2] = {0, 0};
    const int gz = pread(w.fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    struct ws_tarin_gz *g = NULL;
    if (gz) {
        g = calloc(1, sizeof *g);
        if (!g || !(g->path = strdup(path)) || !(w.z = gzdopen(w.fd, "rb"))) {
            if (g)
                free(g->path);
            free(g);
            close(w.fd);
            return ws_errf(err, "out of memory");
        }
        gzbuffer(w.z, GZ_BUFFER);
        w.fd = -1; /* the gzFile's */
        g->st = st;
        pthread_mutex_init(&g->mu, NULL);
        pthread_cond_init(&g->cv, NULL);
    }
    const int rc = walk(&w, fn, ctx);
    if (w.z)
        gzclose(w.z);
    else
        close(w.fd);
    if (rc)
        ws_tarin_gz_free(g);
    else
        *reader = g;
    return rc;
}

/* --- the reader of a gzip shard ---------------------------------------------------------- */

int ws_tarin_gz_add_turn(struct ws_tarin_gz *g)
{
    return g->n_turns++;
}

int ws_tarin_gz_ready(struct ws_tarin_gz *g)
{
    free(g->over);
    g->over = calloc((size_t)g->n_turns + 1, 1);
    g->next = 0;
    return g->over ? 0 : -1;
}

void ws_tarin_gz_wait(struct ws_tarin_gz *g, int t)
{
    pthread_mutex_lock(&g->mu);
    while (g->next < t)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

void ws_tarin_gz_pass(struct ws_tarin_gz *g, int t)
{
    pthread_mutex_lock(&g->mu);
    g->over[t] = 1;
    while (g->next < g->n_turns && g->over[g->next])
        g->next++;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

int ws_tarin_gz_read(struct ws_tarin_gz *g, uint64_t off, void *buf, uint64_t size, ws_err *err)
{
    /* only the turn's holder is here: the stream is its alone */
    if (g->broken[0])
        return ws_errf(err, "%s", g->broken);
    if (!g->z) {
        int fd = open(g->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;
        const char *bad = fd < 0 || fstat(fd, &st) ? strerror(errno)
                          : st.st_dev != g->st.st_dev || st.st_ino != g->st.st_ino ||
                                  st.st_size != g->st.st_size ||
                                  st.st_mtim.tv_sec != g->st.st_mtim.tv_sec ||
                                  st.st_mtim.tv_nsec != g->st.st_mtim.tv_nsec
                              ? "the shard changed since it was listed"
                              : NULL;
        if (!bad && !(g->z = gzdopen(fd, "rb")))
            bad = "out of memory";
        if (bad) {
            if (fd >= 0)
                close(fd);
            snprintf(g->broken, sizeof g->broken, "the shard %s: %s", g->path, bad);
            return ws_errf(err, "%s", g->broken);
        }
        gzbuffer(g->z, GZ_BUFFER);
    }
    char why[256];
    if (off < g->pos) {
        snprintf(g->broken, sizeof g->broken, "the shard %s: members out of order", g->path);
        return ws_errf(err, "%s", g->broken);
    }
    int64_t got = 0;
    if (gz_skip(g->z, &g->pos, off, why, sizeof why) ||
        (got = gz_take(g->z, &g->pos, buf, size, why, sizeof why)) != (int64_t)size) {
        if (got >= 0 && got != (int64_t)size)
            snprintf(why, sizeof why, "the shard ends early (truncated, or changed since it was "
                                      "listed)");
        snprintf(g->broken, sizeof g->broken, "the shard %s: %s", g->path, why);
        return ws_errf(err, "%s", g->broken);
    }
    return 0;
}

void ws_tarin_gz_free(struct ws_tarin_gz *g)
{
    if (!g)
        return;
    if (g->z)
        gzclose(g->z);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->over);
    free(g->path);
    free(g);
}

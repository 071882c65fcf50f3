/* names.c - the inputs (positional, --list, --shard) and their outputs' names: -O's
 * flat names, --root's tree, tar shards and member keys, and the checks that run before
 * anything is read (no two inputs write one file, no output is an input). Tested by
 * tests/test_cli.c, tests/test_cli_names.c and tests/test_segments.c. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "cli.h"
#include "strmap.h"
#include "tar.h"
#include "tarin.h"

/* A line of --list holds at most this many bytes (a path, PATH_MAX is 4096): a longer one
 * means the file is no list (a binary file, /dev/zero), said at once. */
#define LIST_LINE_MAX 65536
/* A line of a JSON Lines list (a lhotse cut may carry its supervisions and alignments). */
#define JSON_LINE_MAX (1 << 20)
/* The paths of the whole list are held at most to this many bytes, or --max-memory's
 * when larger. */
#define LIST_BYTES_MAX ((size_t)4 << 30)

typedef struct {
    options *o;
    ws_strmap *seen; /* every path (or segment) kept: exact duplicates are dropped */
    size_t cap, bytes, max_bytes;
    size_t bytes_segs, bytes_srcs; /* counted once, when the arrays are made */
    long long dups;
} gather;

static void segment_free(ws_segment *s)
{
    if (s) {
        free(s->id);
        free(s->bad);
        free(s);
    }
}

/* A shard given as an input: its path, and its gzip reader (NULL: plain). */
struct tar_shard_in {
    char *path;
    struct ws_tarin_gz *gz;
};

/* Appends path (copied) to o->inputs, with seg (taken: a segment, a bad line's message, or
 * NULL for the whole file) and src (taken: a tar shard's member "SHARD:MEMBER", or NULL),
 * unless it is there already: the same path, or the same path, start, duration and id (a
 * bad line is never dropped). 0, or the exit status. */
static int add_input_src(gather *g, const char *path, size_t len, ws_segment *seg,
                         ws_tar_src *src)
{
    options *o = g->o;
    int r = 0;
    size_t extra = src ? sizeof *src + strlen(src->name) + strlen(src->key) + 2 : 0;
    if (seg && !seg->bad) {
        /* the key: the path, then NUL-separated start, duration and id (no path holds a
         * NUL, so no key of a whole file is one of a segment) */
        size_t il = strlen(seg->id), kl = len + il + 64;
        char *k = malloc(kl);
        if (!k) {
            segment_free(seg);
            return ws_eprintf(PROG ": out of memory for the input list"), 1;
        }
        memcpy(k, path, len);
        int n = snprintf(k + len, kl - len, "%c%.17g%c%.17g%c", 0, seg->start_s, 0,
                         seg->duration_s, 0);
        memcpy(k + len + n, seg->id, il);
        r = ws_strmap_put(g->seen, k, len + (size_t)n + il, 0, NULL);
        free(k);
        extra = sizeof *seg + il + 1;
    } else if (seg) {
        extra = sizeof *seg + strlen(seg->bad) + 1;
    } else {
        r = ws_strmap_put(g->seen, path, len, 0, NULL);
    }
    if (r < 0 || r == 1) {
        segment_free(seg);
        free(src);
    }
    if (r < 0)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    if (r == 1) {
        g->dups++;
        return 0;
    }
    if (o->n_inputs == INT_MAX - 1) {
        segment_free(seg);
        free(src);
        return ws_eprintf(PROG ": more than %d inputs", INT_MAX - 1), 2;
    }
    g->bytes += len + 1 + sizeof(char *) + extra + (o->segs ? sizeof(ws_segment *) : 0) +
                (o->srcs ? sizeof(ws_tar_src *) : 0);
    if (g->bytes > g->max_bytes) {
        free(src);
        segment_free(seg);
        return ws_eprintf(PROG ": the input list holds more than %zu MiB of paths (the bound: "
                          "4 GiB, or --max-memory when larger)", g->max_bytes >> 20), 2;
    }
    if ((size_t)o->n_inputs == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 64;
        char **t = realloc(o->inputs, nc * sizeof *t);
        ws_segment **ts = t && o->segs ? realloc(o->segs, nc * sizeof *ts) : NULL;
        if (t)
            o->inputs = t;
        if (ts)
            o->segs = ts;
        ws_tar_src **tr = t && (!o->segs || ts) && o->srcs ? realloc(o->srcs, nc * sizeof *tr)
                                                           : NULL;
        if (tr)
            o->srcs = tr;
        if (!t || (o->segs && !ts) || (o->srcs && !tr)) {
            segment_free(seg);
            free(src);
            return ws_eprintf(PROG ": out of memory for the input list"), 1;
        }
        g->cap = nc;
    }
    if ((seg && !o->segs && !(o->segs = calloc(g->cap, sizeof *o->segs))) ||
        (src && !o->srcs && !(o->srcs = calloc(g->cap, sizeof *o->srcs)))) {
        segment_free(seg);
        free(src);
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    }
    if (seg && g->bytes_segs == 0) /* the first segment: the array beside the paths */
        g->bytes += (g->bytes_segs = g->cap * sizeof *o->segs);
    if (src && g->bytes_srcs == 0)
        g->bytes += (g->bytes_srcs = g->cap * sizeof *o->srcs);
    char *s = malloc(len + 1);
    if (!s) {
        segment_free(seg);
        free(src);
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    }
    memcpy(s, path, len);
    s[len] = 0;
    if (o->segs)
        o->segs[o->n_inputs] = seg;
    if (o->srcs)
        o->srcs[o->n_inputs] = src;
    o->inputs[o->n_inputs++] = s;
    return 0;
}

static int add_input(gather *g, const char *path, size_t len, ws_segment *seg)
{
    return add_input_src(g, path, len, seg, NULL);
}

/* --- tar shards ------------------------------------------------------------------------ */

/* An input or list line that names a tar shard (by its name; --tar-in names one whatever
 * its name): its members are the inputs. */
static int is_shard_name(const char *p, size_t len)
{
    static const char *const suf[] = {".tar", ".tar.gz", ".tgz"};
    for (int i = 0; i < 3; i++) {
        const size_t k = strlen(suf[i]);
        if (len > k && !strncasecmp(p + len - k, suf[i], k))
            return 1;
    }
    return 0;
}

/* An input that fails with msg (a bad member, a shard that cannot be read). */
static int bad_input(gather *g, const char *where, const char *msg)
{
    ws_segment *s = calloc(1, sizeof *s);
    if (!s || !(s->bad = strdup(msg))) {
        free(s);
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    }
    return add_input(g, where, strlen(where), s);
}

typedef struct {
    gather *g;
    const char *shard;
} shard_walk;

/* "SHARD:NAME" (malloc'd), or NULL */
static char *member_input(const char *shard, const char *name)
{
    size_t cap = strlen(shard) + strlen(name) + 2;
    char *w = malloc(cap);
    if (w)
        snprintf(w, cap, "%s:%s", shard, name);
    return w;
}

/* A member of the shard (ws_tarin_fn): an input "SHARD:MEMBER", or one that fails. */
static int member_found(void *ctx, const char *name, uint64_t off, uint64_t size,
                        const char *bad)
{
    shard_walk *w = ctx;
    char *where = name ? member_input(w->shard, name) : strdup(w->shard);
    if (!where)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    int rc;
    const size_t nl = name ? strlen(name) : 0, cap = nl + 1;
    ws_tar_src *src = bad ? NULL : malloc(sizeof *src + 2 * cap);
    if (bad) {
        rc = bad_input(w->g, where, bad);
    } else if (!src) {
        rc = (ws_eprintf(PROG ": out of memory for the input list"), 1);
    } else {
        char *nm = (char *)(src + 1), *key = nm + cap;
        memcpy(nm, name, cap);
        if (ws_tarin_key(name, w->g->o->keep_ext, key, cap)) {
            free(src);
            rc = bad_input(w->g, where, "its key cannot name an output (it starts with '/', or "
                                        "has an empty, '.' or '..' part)");
        } else {
            *src = (ws_tar_src){.shard = w->shard, .name = nm, .key = key, .off = off,
                                .size = size, .turn = -1};
            rc = add_input_src(w->g, where, strlen(where), NULL, src);
        }
    }
    free(where);
    return rc;
}

/* A shard's listing made ahead of the inputs it gives (ws_tarin_list's calls kept), so
 * that several shards are listed side by side: a gzip shard is listed by decompressing it
 * whole, one thread a shard. */
typedef struct {
    char *name, *bad;
    uint64_t off, size;
} listed_member;

typedef struct {
    const char *path;
    listed_member *m;
    size_t n, cap;
    int rc, oom;
    ws_err err;
    struct ws_tarin_gz *gz;
} shard_listing;

static int keep_member(void *ctx, const char *name, uint64_t off, uint64_t size, const char *bad)
{
    shard_listing *l = ctx;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 64;
        listed_member *t = realloc(l->m, nc * sizeof *t);
        if (!t)
            return l->oom = 1;
        l->m = t;
        l->cap = nc;
    }
    listed_member *m = &l->m[l->n];
    *m = (listed_member){.off = off, .size = size};
    if ((name && !(m->name = strdup(name))) || (bad && !(m->bad = strdup(bad)))) {
        free(m->name);
        return l->oom = 1;
    }
    l->n++;
    return 0;
}

static void listing_free(shard_listing *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->m[i].name);
        free(l->m[i].bad);
    }
    free(l->m);
    ws_tarin_gz_free(l->gz);
    memset(l, 0, sizeof *l);
}

typedef struct {
    shard_listing *l;
    int n;
} listings;

static void list_some(void *ctx, int i, int n)
{
    listings *ls = ctx;
    for (int k = i; k < ls->n; k += n) {
        shard_listing *l = &ls->l[k];
        l->rc = ws_tarin_list(l->path, keep_member, l, &l->gz, &l->err);
    }
}

/* The audio members of the shard at path, in shard order (docs/corpus.md "Tar shards as
 * inputs"), from its listing l (made here when NULL); a shard that cannot be read is an
 * input that fails. 0, or the exit status. */
static int add_shard(gather *g, const char *path, size_t len, shard_listing *l)
{
    options *o = g->o;
    struct tar_shard_in *t = realloc(o->shards_in, ((size_t)o->n_shards_in + 1) * sizeof *t);
    if (!t)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    o->shards_in = t;
    t = &o->shards_in[o->n_shards_in];
    if (!(t->path = strndup(path, len)))
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    t->gz = NULL;
    o->n_shards_in++;
    shard_walk w = {g, t->path};
    const int first = o->n_inputs;
    ws_err e = {{0}};
    int rc;
    if (l) {
        if (l->oom)
            return ws_eprintf(PROG ": out of memory for the input list"), 1;
        t->gz = l->gz;
        l->gz = NULL;
        rc = 0;
        for (size_t i = 0; !rc && i < l->n; i++)
            rc = member_found(&w, l->m[i].name, l->m[i].off, l->m[i].size, l->m[i].bad);
        if (!rc && l->rc < 0)
            rc = l->rc, e = l->err;
    } else {
        rc = ws_tarin_list(t->path, member_found, &w, &t->gz, &e);
    }
    if (rc < 0)
        return bad_input(g, t->path, e.msg);
    for (int i = first; !rc && t->gz && i < o->n_inputs; i++)
        if (o->srcs && o->srcs[i])
            o->srcs[i]->gz = t->gz;
    return rc;
}

/* The shards of --tar-in, listed side by side on up to --threads threads, then taken as
 * inputs in their order. 0, or the exit status. */
static int add_tar_in(gather *g)
{
    options *o = g->o;
    const int n = o->n_tar_in;
    if (n < 2) {
        for (int i = 0; i < n; i++) {
            int rc = add_shard(g, o->tar_in[i], strlen(o->tar_in[i]), NULL);
            if (rc)
                return rc;
        }
        return 0;
    }
    listings ls = {calloc((size_t)n, sizeof *ls.l), n};
    if (!ls.l)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    for (int i = 0; i < n; i++)
        ls.l[i].path = o->tar_in[i];
    int threads = o->threads > 0 ? o->threads : 1;
    ws_parallel(threads < n ? threads : n, list_some, &ls);
    int rc = 0;
    for (int i = 0; !rc && i < n; i++)
        rc = add_shard(g, o->tar_in[i], strlen(o->tar_in[i]), &ls.l[i]);
    for (int i = 0; i < n; i++)
        listing_free(&ls.l[i]);
    free(ls.l);
    return rc;
}

/* The list's bytes: a file, standard input, or a gzip file (name ending ".gz"). */
typedef struct {
    FILE *f;
    gzFile z;
} list_in;

/* One line of in into buf (cap bytes) with its newline: its length, 0 at the end, or
 * cap + 1 when no newline comes within cap bytes (the rest is not read). */
static size_t read_line(list_in *in, char *buf, size_t cap)
{
    size_t n = 0;
    int c;
    while ((c = in->z ? gzgetc(in->z) : getc_unlocked(in->f)) != EOF) {
        if (n == cap)
            return cap + 1;
        buf[n++] = (char)c;
        if (c == '\n')
            break;
    }
    return n;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* --- segment lines -------------------------------------------------------------------- */

/* Where a list line is and what is wrong with it: a bad line becomes an input of its own,
 * "LIST:LINE", that fails with the message (one stderr line at its turn, status 1). */
typedef struct {
    gather *g;
    const char *list; /* as named in messages: the path, or "stdin" */
    long long lineno;
} list_pos;

static int bad_line(const list_pos *p, const char *fmt, const char *a)
{
    char where[4200], msg[1024];
    snprintf(where, sizeof where, "%s:%lld", p->list, p->lineno);
    snprintf(msg, sizeof msg, fmt, a);
    ws_segment *s = calloc(1, sizeof *s);
    if (!s || !(s->bad = strdup(msg))) {
        free(s);
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    }
    return add_input(p->g, where, strlen(where), s);
}

/* s (whole, n bytes) as a finite number >= 0: 0; -1 when it is none */
static int parse_seconds(const char *s, size_t n, double *v)
{
    char buf[64], *end;
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    errno = 0;
    *v = strtod(buf, &end);
    return *end == 0 && isfinite(*v) && *v >= 0 ? 0 : -1;
}

/* An id names a file (-O DIR/ID.npy) and a tar member: not empty, ".", "..", nor with '/'
 * (a NUL cannot reach one: a list line holding one, or \u0000, is refused). */
static int id_ok(const char *id)
{
    return *id && strcmp(id, ".") && strcmp(id, "..") && !strchr(id, '/');
}

/* The name of a segment given no id: the file's name without its extension (with it under
 * --keep-ext), '_' and the start in seconds with 3 decimals: clip_12.500. */
static char *default_id(const char *path, double start, int keep_ext)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = keep_ext ? NULL : strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    size_t cap = (size_t)len + 48;
    char *id = malloc(cap);
    if (id)
        snprintf(id, cap, "%.*s_%.3f", len, base, start);
    return id;
}

/* Adds the segment of path from start, duration long (0: to the end), named id (NULL: the
 * default name); a bad id is a bad line. 0, or the exit status. */
static int add_segment(const list_pos *p, const char *path, size_t len, double start,
                       double duration, const char *id)
{
    if (id && !id_ok(id))
        return bad_line(p, "the id '%s' cannot name an output (empty, '.', '..' or holding "
                           "'/')", id);
    ws_segment *s = calloc(1, sizeof *s);
    char *pz = s ? strndup(path, len) : NULL;
    if (s && pz)
        s->id = id ? strdup(id) : default_id(pz, start, p->g->o->keep_ext);
    free(pz);
    if (!s || !s->id) {
        segment_free(s);
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    }
    s->start_s = start;
    s->duration_s = duration;
    if (!id && !id_ok(s->id)) { /* a path ending in '/' */
        int rc = bad_line(p, "the segment's name '%s' cannot name an output", s->id);
        segment_free(s);
        return rc;
    }
    return add_input(p->g, path, len, s);
}

/* A line of a list of paths: PATH<TAB>START<TAB>DURATION[<TAB>ID] is a segment when it
 * has 2 or 3 tabs and START and DURATION are whole numbers >= 0 (strtod); anything else
 * is a path, as it always was. 0, or the exit status. */
static int path_line(const list_pos *p, char *line, size_t len)
{
    const char *tab[4];
    int tabs = 0;
    for (const char *q = line; tabs < 4 && (q = memchr(q, '\t', len - (size_t)(q - line)));
         q++)
        tab[tabs++] = q;
    double start, duration;
    if (tabs == 2 || tabs == 3) {
        const char *f2 = tab[0] + 1, *f3 = tab[1] + 1, *end = line + len;
        if (!parse_seconds(f2, (size_t)(tab[1] - f2), &start) &&
            !parse_seconds(f3, (size_t)((tabs == 3 ? tab[2] : end) - f3), &duration)) {
            if (tab[0] == line)
                return bad_line(p, "a segment line with no path before its first tab%s", "");
            char *id = NULL;
            if (tabs == 3 && tab[2] + 1 < end && !(id = strndup(tab[2] + 1, (size_t)(end - tab[2] - 1))))
                return ws_eprintf(PROG ": out of memory for the input list"), 1;
            int rc = add_segment(p, line, (size_t)(tab[0] - line), start, duration, id);
            free(id);
            return rc;
        }
    }
    if (is_shard_name(line, len))
        return add_shard(p->g, line, len, NULL);
    return add_input(p->g, line, len, NULL);
}

/* o[key] as seconds: 0 and *v set; 1 absent (or null, where null_ok); -1 with *why set. */
static int json_seconds(const cJSON *o, const char *key, int null_ok, double *v, char *why,
                        size_t cap)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!x || (null_ok && cJSON_IsNull(x)))
        return 1;
    if (!cJSON_IsNumber(x))
        return snprintf(why, cap, "'%s' is not a number", key), -1;
    if (!isfinite(x->valuedouble) || x->valuedouble < 0)
        return snprintf(why, cap, "'%s' is %g: a segment needs seconds >= 0", key,
                        x->valuedouble), -1;
    *v = x->valuedouble;
    return 0;
}

/* A NeMo manifest line: audio_filepath (relative: to the manifest's directory), offset
 * (default 0), duration (absent or null: to the end). */
static int nemo_line(const list_pos *p, const cJSON *o, const char *list_dir)
{
    char why[256];
    const cJSON *af = cJSON_GetObjectItemCaseSensitive(o, "audio_filepath");
    double start = 0, duration = 0;
    if (!cJSON_IsString(af) || !af->valuestring[0])
        return bad_line(p, "'audio_filepath' is not a path (a string)%s", "");
    if (json_seconds(o, "offset", 1, &start, why, sizeof why) < 0 ||
        json_seconds(o, "duration", 1, &duration, why, sizeof why) < 0)
        return bad_line(p, "%s", why);
    const char *path = af->valuestring;
    if (path[0] == '/' || !list_dir)
        return add_segment(p, path, strlen(path), start, duration, NULL);
    size_t cap = strlen(list_dir) + strlen(path) + 2;
    char *full = malloc(cap);
    if (!full)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    snprintf(full, cap, "%s/%s", list_dir, path);
    int rc = add_segment(p, full, strlen(full), start, duration, NULL);
    free(full);
    return rc;
}

/* A lhotse cut (MonoCut): id, start, duration, channel, and its recording's source of that
 * channel, of type "file" (relative: to the working directory, as lhotse reads it). */
static int lhotse_line(const list_pos *p, const cJSON *o)
{
    char why[256];
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type"),
                *id = cJSON_GetObjectItemCaseSensitive(o, "id"),
                *rec = cJSON_GetObjectItemCaseSensitive(o, "recording"),
                *ch = cJSON_GetObjectItemCaseSensitive(o, "channel");
    double start = 0, duration = 0;
    if (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "MonoCut")))
        return bad_line(p, "a cut of type '%s' (only MonoCut is supported)",
                        cJSON_IsString(type) ? type->valuestring : "?");
    if (!cJSON_IsString(id))
        return bad_line(p, "the cut has no 'id' string%s", "");
    int r = json_seconds(o, "start", 0, &start, why, sizeof why);
    if (r == 0)
        r = json_seconds(o, "duration", 0, &duration, why, sizeof why);
    if (r > 0)
        snprintf(why, sizeof why, "the cut has no 'start' or no 'duration'");
    if (r)
        return bad_line(p, "%s", why);
    if (ch && (!cJSON_IsNumber(ch) || !(ch->valuedouble >= 0 && ch->valuedouble < 65536)))
        return bad_line(p, "the cut's 'channel' is not one number (only MonoCut is supported)%s",
                        "");
    const int c = ch ? (int)ch->valuedouble : 0;
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(rec, "transforms");
    if (cJSON_GetArraySize(tr) > 0)
        return bad_line(p, "the recording has transforms (speed, volume, resampling), which are "
                           "not supported%s", "");
    /* the source of the cut's channel */
    const cJSON *src = NULL, *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(rec, "sources"))
    {
        const cJSON *chs = cJSON_GetObjectItemCaseSensitive(s, "channels"), *x;
        int has = !chs;
        cJSON_ArrayForEach(x, chs) has |= cJSON_IsNumber(x) && x->valuedouble == (double)c;
        if (has) {
            src = s;
            break;
        }
    }
    if (!src)
        return bad_line(p, "the recording has no source of the cut's channel%s", "");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(src, "type"),
                *path = cJSON_GetObjectItemCaseSensitive(src, "source");
    if (!cJSON_IsString(st) || strcmp(st->valuestring, "file"))
        return bad_line(p, "recording source type '%s' is not supported (only 'file')",
                        cJSON_IsString(st) ? st->valuestring : "?");
    if (!cJSON_IsString(path) || !path->valuestring[0])
        return bad_line(p, "the recording's source has no 'source' path%s", "");
    /* the loader averages a file's channels; lhotse would take the cut's channel alone */
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(src, "channels")) > 1)
        return bad_line(p, "the source '%s' holds several channels: a cut of one of them is not "
                           "supported (they would be averaged)", path->valuestring);
    return add_segment(p, path->valuestring, strlen(path->valuestring), start, duration,
                       id->valuestring);
}

/* A line of a JSON Lines list: a NeMo manifest line or a lhotse cut. 0, or the exit
 * status (a bad line is an input that fails). */
static int json_line(const list_pos *p, const char *line, size_t len, const char *list_dir)
{
    /* a NUL in a string would cut a path or an id short unseen */
    for (const char *q = line; (q = memmem(q, len - (size_t)(q - line), "\\u0000", 6)); q++) {
        size_t bs = 0; /* backslashes before it: an odd count escapes this one's backslash */
        while (q - bs > line && q[-(ptrdiff_t)bs - 1] == '\\')
            bs++;
        if (bs % 2 == 0)
            return bad_line(p, "a string holds \\u0000 (a NUL byte)%s", "");
    }
    cJSON *o = ws_json_parse(line, len);
    int rc;
    if (!cJSON_IsObject(o))
        rc = bad_line(p, "not a JSON object (a JSON Lines list holds one a line)%s", "");
    else if (cJSON_GetObjectItemCaseSensitive(o, "audio_filepath"))
        rc = nemo_line(p, o, list_dir);
    else if (cJSON_GetObjectItemCaseSensitive(o, "recording"))
        rc = lhotse_line(p, o);
    else if (cJSON_GetObjectItemCaseSensitive(o, "start"))
        rc = bad_line(p, "a lhotse cut with no 'recording'%s", "");
    else if (cJSON_GetObjectItemCaseSensitive(o, "offset") ||
             cJSON_GetObjectItemCaseSensitive(o, "duration") ||
             cJSON_GetObjectItemCaseSensitive(o, "text"))
        rc = bad_line(p, "a NeMo manifest line with no 'audio_filepath'%s", "");
    else
        rc = bad_line(p, "neither a NeMo manifest line ('audio_filepath') nor a lhotse cut "
                         "('recording')%s", "");
    cJSON_Delete(o);
    return rc;
}

static int read_list(gather *g)
{
    options *o = g->o;
    const int is_stdin = !strcmp(o->list, "-"), gz = !is_stdin && ends_with(o->list, ".gz");
    list_in in = {NULL, NULL};
    errno = 0;
    if (gz)
        in.z = gzopen(o->list, "rb");
    else
        in.f = is_stdin ? stdin : fopen(o->list, "r");
    if (!in.f && !in.z) {
        ws_eprintf(PROG ": --list %s: %s", o->list, errno ? strerror(errno) : "out of memory");
        return 1;
    }
    /* JSON Lines by its name, else by its first line that is not blank (nor a comment) */
    int json = ends_with(o->list, ".jsonl") || ends_with(o->list, ".jsonl.gz") ||
               ends_with(o->list, ".json"), decided = json;
    /* NeMo's relative paths are relative to the manifest's directory */
    char list_dir[4096];
    const char *ldir = NULL;
    if (!is_stdin) {
        ws_dirname(o->list, list_dir, sizeof list_dir);
        ldir = strcmp(list_dir, ".") ? list_dir : NULL;
    }
    const size_t cap = JSON_LINE_MAX + 2; /* the line, CR, LF */
    char *line = malloc(cap);
    list_pos pos = {g, is_stdin ? "stdin" : o->list, 0};
    size_t n;
    int rc = line ? 0 : (ws_eprintf(PROG ": out of memory for the input list"), 1);
    while (!rc && (n = read_line(&in, line, cap)) > 0) {
        pos.lineno++;
        size_t len = n;
        if (len <= cap && line[len - 1] == '\n')
            len--;
        if (len <= cap && len && line[len - 1] == '\r')
            len--;
        if (!decided && len && line[0] != '#') {
            size_t k = 0;
            while (k < len && k < cap && (line[k] == ' ' || line[k] == '\t'))
                k++;
            json = k < len && k < cap && line[k] == '{';
            decided = 1;
        }
        const size_t max = json ? JSON_LINE_MAX : LIST_LINE_MAX;
        if (len > max) {
            ws_eprintf(PROG ": --list %s: line %lld is longer than %zu bytes (a list holds one "
                       "%s a line)", o->list, pos.lineno, max, json ? "JSON object" : "path");
            rc = 2;
            break;
        }
        if (len == 0 || line[0] == '#')
            continue;
        if (memchr(line, 0, len)) {
            ws_eprintf(PROG ": --list %s: line %lld holds a NUL byte", o->list, pos.lineno);
            rc = 2;
            break;
        }
        if (is_stdin && len == 1 && line[0] == '-') {
            ws_eprintf(PROG ": --list -: line %lld is '-', but standard input is the list",
                       pos.lineno);
            rc = 2;
            break;
        }
        if (json) {
            size_t k = 0;
            while (k < len && (line[k] == ' ' || line[k] == '\t'))
                k++;
            if (k < len) /* a line of blanks is a blank line */
                rc = json_line(&pos, line, len, ldir);
        } else {
            rc = path_line(&pos, line, len);
        }
    }
    if (!rc && in.z) {
        int ze = Z_OK;
        const char *zm = gzerror(in.z, &ze);
        if (ze != Z_OK && ze != Z_BUF_ERROR) {
            ws_eprintf(PROG ": --list %s: %s", o->list, ze == Z_ERRNO ? strerror(errno) : zm);
            rc = 1;
        } else if (ze == Z_BUF_ERROR) {
            ws_eprintf(PROG ": --list %s: the gzip data ends early (a truncated file)", o->list);
            rc = 1;
        }
    } else if (!rc && ferror(in.f)) {
        ws_eprintf(PROG ": --list %s: %s", o->list, strerror(errno));
        rc = 1;
    }
    free(line);
    if (in.z)
        gzclose(in.z);
    else if (!is_stdin)
        fclose(in.f);
    return rc;
}

/* The inputs: the positional ones, then --list's lines (blank lines and lines starting
 * with '#' skipped, a trailing CR dropped; paths, segments, NeMo manifest lines or lhotse
 * cuts: docs/corpus.md "Segment lists"), exact duplicates dropped (one warning), the
 * whole list: --shard selects later (ws_cli_output_names), once every name is checked.
 * 0, or the exit status. */
/* The inputs [first, n_inputs) (those of --tar-in) taken in turn from each shard, each
 * shard's members still in shard order: a gzip shard is read by one member at a time, so
 * with its members side by side in the run, the workers would wait on one stream while
 * the other shards' streams idle. Done when two or more of them are gzip shards. A shard
 * that failed as a whole (no member) is a run of its own. Linear in the inputs. 0, or -1
 * out of memory. */
static int interleave_shards(options *o, int first)
{
    const int n = o->n_inputs - first;
    int gz = 0;
    for (int k = 0; k < o->n_shards_in; k++)
        gz += o->shards_in[k].gz != NULL;
    if (n < 2 || gz < 2 || !o->srcs)
        return 0;
    /* each shard's members were added together: runs of one shard, [beg[k], end[k]) */
    int *beg = malloc(sizeof *beg * (size_t)n), *cur = malloc(sizeof *cur * (size_t)n);
    char **in = malloc(sizeof *in * (size_t)n);
    ws_tar_src **src = malloc(sizeof *src * (size_t)n);
    ws_segment **seg = o->segs ? malloc(sizeof *seg * (size_t)n) : NULL;
    int rc = -1, runs = 0;
    if (!beg || !cur || !in || !src || (o->segs && !seg))
        goto out;
    for (int i = 0; i < n; i++) {
        const ws_tar_src *s = o->srcs[first + i], *p = i ? o->srcs[first + i - 1] : NULL;
        if (!i || !s || !p || s->shard != p->shard)
            beg[runs++] = i;
    }
    for (int k = 0; k < runs; k++)
        cur[k] = beg[k];
    /* round after round, the next member of each run */
    for (int placed = 0; placed < n;)
        for (int k = 0; k < runs; k++) {
            const int end = k + 1 < runs ? beg[k + 1] : n;
            if (cur[k] == end)
                continue;
            const int i = first + cur[k]++;
            in[placed] = o->inputs[i];
            src[placed] = o->srcs[i];
            if (seg)
                seg[placed] = o->segs[i];
            placed++;
        }
    for (int i = 0; i < n; i++) {
        o->inputs[first + i] = in[i];
        o->srcs[first + i] = src[i];
        if (seg)
            o->segs[first + i] = seg[i];
    }
    rc = 0;
out:
    free(beg);
    free(cur);
    free(in);
    free(src);
    free(seg);
    return rc;
}

int ws_cli_gather_inputs(options *o)
{
    gather g = {.o = o, .seen = ws_strmap_new(), .max_bytes = LIST_BYTES_MAX};
    if (o->max_memory > g.max_bytes)
        g.max_bytes = o->max_memory;
    if (!g.seen)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    int rc = 0;
    for (int i = 0; !rc && i < o->n_args; i++) {
        const size_t len = strlen(o->args[i]);
        rc = is_shard_name(o->args[i], len) ? add_shard(&g, o->args[i], len, NULL)
                                            : add_input(&g, o->args[i], len, NULL);
    }
    const int first_tar_in = o->n_inputs;
    if (!rc)
        rc = add_tar_in(&g);
    if (!rc && interleave_shards(o, first_tar_in))
        rc = (ws_eprintf(PROG ": out of memory for the input list"), 1);
    if (!rc && o->list)
        rc = read_list(&g);
    ws_strmap_free(g.seen);
    if (!rc && g.dups && !o->quiet)
        ws_eprintf(PROG ": %lld duplicate input%s dropped (each input is done once)", g.dups,
                   g.dups == 1 ? "" : "s");
    o->n_listed = o->n_inputs;
    if (!rc && o->output && o->n_inputs > 1) /* -o x.npy shard.tar: which member? */
        return ws_cli_usage_error("-o takes one input, but the shards hold several members; "
                                  "use -O DIR%s", "");
    return rc; /* an empty list (or shard) is a run with nothing to do */
}

void ws_cli_inputs_free(options *o)
{
    for (int i = 0; i < o->n_inputs; i++) {
        free(o->inputs[i]);
        if (o->segs)
            segment_free(o->segs[i]);
    }
    for (int i = 0; o->srcs && i < o->n_inputs; i++)
        free(o->srcs[i]);
    for (int i = 0; i < o->n_shards_in; i++) {
        free(o->shards_in[i].path);
        ws_tarin_gz_free(o->shards_in[i].gz);
    }
    free(o->shards_in);
    free(o->tar_in);
    free(o->inputs);
    free(o->segs);
    free(o->srcs);
    o->inputs = NULL;
    o->segs = NULL;
    o->srcs = NULL;
    o->shards_in = NULL;
    o->tar_in = NULL;
    o->n_shards_in = o->n_tar_in = 0;
    o->n_inputs = 0;
}

/* path made absolute (the working directory in front) and normalised as text: "." and
 * empty components dropped, ".." takes one back (never above "/"); symbolic links are
 * not followed, so a tree of links mirrors as it is named. 0, or -1 if it does not fit. */
static int norm_path(const char *path, char *out, size_t cap)
{
    char buf[8192];
    if (path[0] == '/') {
        if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
            return -1;
    } else {
        /* the working directory as the shell names it ($PWD, through symbolic links) when
         * it is the same directory, as `pwd -L`: /data -> /mnt/data must not make inputs
         * named /data/... fall outside a relative --root */
        char cwd[4096];
        const char *pwd = getenv("PWD");
        struct stat a, b;
        if (pwd && pwd[0] == '/' && strlen(pwd) < sizeof cwd && stat(pwd, &a) == 0 &&
            stat(".", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            strcpy(cwd, pwd);
        else if (!getcwd(cwd, sizeof cwd))
            return -1;
        if (snprintf(buf, sizeof buf, "%s/%s", cwd, path) >= (int)sizeof buf)
            return -1;
    }
    size_t n = 0;
    out[0] = 0;
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
            out[n] = 0;
            continue;
        }
        size_t k = strlen(c);
        if (n + 1 + k + 1 > cap)
            return -1;
        out[n++] = '/';
        memcpy(out + n, c, k + 1);
        n += k;
    }
    if (n == 0) {
        if (cap < 2)
            return -1;
        strcpy(out, "/");
    }
    return 0;
}

/* --tar-size: each input's member key (its output name under -O without ".npy", made
 * safe for webdataset by ws_tar_key) and, in place of that name, its shard's path:
 * OUT/shard-NNNNNN.tar, numbered k * N + I for the k-th shard of --shard I/N (so shards of
 * different --shard runs never share a name). 0, or the exit status. */
static int tar_names(const options *o, char **outs, char ***members, char ***shard_paths,
                     const char **whys)
{
    const int n = o->n_inputs, per = o->tar_size, n_sh = (n + per - 1) / per;
    const size_t dl = strlen(o->outdir);
    *members = calloc((size_t)n, sizeof **members);
    *shard_paths = calloc((size_t)n_sh, sizeof **shard_paths);
    if (!*members || !*shard_paths)
        return ws_eprintf(PROG ": out of memory"), 1;
    for (int k = 0; k < n_sh; k++) {
        const long long num = (long long)k * (o->shard_n ? o->shard_n : 1) + o->shard_i;
        size_t cap = dl + 32;
        if (!((*shard_paths)[k] = malloc(cap)))
            return ws_eprintf(PROG ": out of memory"), 1;
        snprintf((*shard_paths)[k], cap, "%s/shard-%06lld.tar", o->outdir, num);
    }
    for (int i = 0; i < n; i++) {
        if (!outs[i]) /* outside --root: fails, no member */
            continue;
        /* outs[i] is OUT/<rel>.npy */
        const char *rel = outs[i] + dl + 1;
        const size_t rl = strlen(rel) - 4, cap = 3 * rl + 1;
        char *r = malloc(rl + 1), *key = malloc(cap);
        if (!r || !key) {
            free(r);
            free(key);
            return ws_eprintf(PROG ": out of memory"), 1;
        }
        memcpy(r, rel, rl);
        r[rl] = 0;
        int bad = ws_tar_key(r, key, cap) != 0 || strlen(key) + 5 > WS_TAR_NAME_MAX;
        free(r);
        free(outs[i]);
        outs[i] = NULL;
        if (bad) { /* that input fails alone */
            free(key);
            whys[i] = "no tar member name for it (empty, '.' or '..' parts, or longer than "
                      "4090 bytes once '.' and '%' are escaped)";
            continue;
        }
        (*members)[i] = key;
        if (!(outs[i] = strdup((*shard_paths)[i / per])))
            return ws_eprintf(PROG ": out of memory"), 1;
    }
    return 0;
}

/* The part of in (normalised) under the directory whose resolved path is root_real: the
 * rest after the shortest leading directory of in that resolves to it, as in names it
 * (so /data/a/b.wav under --root /mnt/data, /data being a link to it, is a/b.wav), or
 * NULL. */
static const char *under_resolved(const char *in, const char *root_real)
{
    char prefix[8192], real[PATH_MAX];
    for (const char *p = strchr(in + 1, '/'); p; p = strchr(p + 1, '/')) {
        size_t k = (size_t)(p - in);
        memcpy(prefix, in, k);
        prefix[k] = 0;
        if (realpath(prefix, real) && !strcmp(real, root_real))
            return p + 1;
    }
    return NULL;
}

/* -O OUT --root ROOT: OUT/<input's path under ROOT, extension dropped>.npy, or NULL
 * (malloc'd) when the input is not under ROOT (that input then fails). Under ROOT: by the
 * paths as written (normalised, links not followed), else by the directories they
 * resolve to (root_real: ROOT resolved, NULL when it does not resolve). *oom on
 * failure. */
static char *tree_path(const char *outdir, const char *root_norm, const char *root_real,
                       const char *input, int keep_ext, int *oom, const char **why)
{
    char in[8192];
    *why = "standard input has no path under --root";
    if (!strcmp(input, "-"))
        return NULL;
    *why = "the path is too long to place under --root";
    if (norm_path(input, in, sizeof in))
        return NULL;
    *why = NULL; /* not under the root: the caller's message */
    size_t rl = strlen(root_norm);
    const char *rel;
    if (!strcmp(root_norm, "/"))
        rel = in + 1;
    else if (!strncmp(in, root_norm, rl) && in[rl] == '/')
        rel = in + rl + 1;
    else if (!root_real || !(rel = under_resolved(in, root_real)))
        return NULL;
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    const char *dot = keep_ext ? NULL : strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - rel) : strlen(rel);
    size_t cap = strlen(outdir) + len + 8;
    char *out = malloc(cap);
    if (!out) {
        *oom = 1;
        return NULL;
    }
    snprintf(out, cap, "%s/%.*s.npy", outdir, (int)len, rel);
    return out;
}

/* --root: a segment's output is named by its id in its file's directory of the tree:
 * OUT/<dir>/<name>.npy becomes OUT/<dir>/<id>.npy (out freed; NULL when out of memory). */
static char *segment_in_tree(char *out, const char *id)
{
    const size_t dl = (size_t)(strrchr(out, '/') - out), cap = dl + strlen(id) + 8;
    char *p = malloc(cap);
    if (p)
        snprintf(p, cap, "%.*s/%s.npy", (int)dl, out, id);
    free(out);
    return p;
}

/* "DIR/<basename without extension>.npy" (with it: keep_ext); "-" is named "stdin". */
/* 0 when the input's last path part is empty, "." or "..": it can only name a directory, and
 * under -O it would write OUT/.npy or OUT/..npy (so two of them would clash and stop the
 * run); such an input fails alone instead */
static int names_a_file(const char *input)
{
    const char *slash = strrchr(input, '/'), *base = slash ? slash + 1 : input;
    return *base && strcmp(base, ".") && strcmp(base, "..");
}

static void outdir_path(const char *dir, const char *input, int keep_ext, char *buf, size_t cap)
{
    const char *base = strcmp(input, "-") == 0 ? "stdin" : input;
    const char *slash = strrchr(base, '/');
    if (slash)
        base = slash + 1;
    const char *dot = keep_ext ? NULL : strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(buf, cap, "%s/%.*s.npy", dir, len, base);
}

/* The file a path names, as a key for identity checks: "i<dev>:<ino>" for
 * an existing regular file (symlinks followed), "d<dev>:<ino>/<name>" for a
 * name in an existing directory, else "p" and the path as written. Two
 * spellings of one file (./a.npy, a.npy, a hard link) get the same key. */
static void file_key(const char *path, char *key, size_t cap)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(key, cap, "i%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
        return;
    }
    const char *slash = strrchr(path, '/');
    char dir[4096];
    ws_dirname(path, dir, sizeof dir);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(key, cap, "d%ju:%ju/%s", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                 slash ? slash + 1 : path);
    else
        snprintf(key, cap, "p%s", path);
}

enum { REC_NONE, REC_SIDECAR, REC_INDEX };

/* The record beside the output out (REC_SIDECAR: OUT/x.npy's OUT/x.json; REC_INDEX:
 * OUT/shard-N.tar's OUT/shard-N.jsonl) into buf; 0, or -1 when it does not fit. */
static int record_path(const char *out, int kind, char *buf, size_t cap)
{
    size_t n = strlen(out);
    if (kind == REC_SIDECAR && n > 4 && !strcasecmp(out + n - 4, ".npy"))
        n -= 4;
    else if (kind == REC_INDEX && n > 4 && !strcmp(out + n - 4, ".tar"))
        n -= 4;
    return snprintf(buf, cap, "%.*s%s", (int)n, out, kind == REC_INDEX ? ".jsonl" : ".json") <
                   (int)cap
               ? 0
               : -1;
}

/* Output names, checked before anything runs: no output (nor the record beside it:
 * records, a REC_* kind) is an input, --json and --manifest are none of them.
 * Near-linear in the number of inputs (hash maps). Returns -1 to go on, else the exit
 * status (2: usage error). */
static int check_outputs(const options *o, char *const *outs, int records)
{
    static const char *const rec_name[] = {"output", "sidecar", "shard index"};
    int rc = -1;
    char key[8192];
    ws_strmap *ins = ws_strmap_new(), *outk = ws_strmap_new();
    if (!ins || !outk) {
        ws_eprintf(PROG ": out of memory");
        rc = 1;
        goto done;
    }
    for (int i = 0; i < o->n_inputs && rc < 0; i++) {
        struct stat st;
        if (strcmp(o->inputs[i], "-") && stat(o->inputs[i], &st) == 0 && S_ISREG(st.st_mode)) {
            file_key(o->inputs[i], key, sizeof key);
            if (ws_strmap_put(ins, key, strlen(key), (size_t)i, NULL) < 0)
                rc = 1;
        }
        /* a member's shard is read too (once per shard: its members come together) */
        const ws_tar_src *src = o->srcs ? o->srcs[i] : NULL;
        if (src && (i == 0 || !o->srcs[i - 1] || o->srcs[i - 1]->shard != src->shard)) {
            file_key(src->shard, key, sizeof key);
            if (ws_strmap_put(ins, key, strlen(key), (size_t)i, NULL) < 0)
                rc = 1;
        }
    }
    for (int i = 0; i < o->n_inputs && rc < 0; i++) {
        size_t at;
        if (!outs[i] || !strcmp(outs[i], "-"))
            continue;
        char rp[8192];
        for (int r = 0; r < 2 && rc < 0; r++) { /* the output, then its record */
            const char *path = r ? rp : outs[i];
            if (r && (!records || record_path(outs[i], records, rp, sizeof rp)))
                break;
            file_key(path, key, sizeof key);
            if (ws_strmap_get(ins, key, strlen(key), &at)) {
                ws_eprintf(PROG ": the %s %s is the input '%s'; refusing to overwrite an input",
                           rec_name[r ? records : REC_NONE], path, o->inputs[at]);
                rc = 2;
            } else if ((o->json || o->manifest) &&
                       ws_strmap_put(outk, key, strlen(key), (size_t)i * 3 + (r ? records : 0),
                                     NULL) < 0) {
                rc = 1;
            }
        }
    }
    const char *extra[2][2] = {{"--json", o->json}, {"--manifest", o->manifest}};
    for (int e = 0; e < 2 && rc < 0; e++) {
        size_t at;
        if (!extra[e][1])
            continue;
        file_key(extra[e][1], key, sizeof key);
        if (ws_strmap_get(ins, key, strlen(key), &at)) {
            ws_eprintf(PROG ": %s %s is the input '%s'; refusing to overwrite an input",
                       extra[e][0], extra[e][1], o->inputs[at]);
            rc = 2;
        } else if (ws_strmap_get(outk, key, strlen(key), &at)) {
            ws_eprintf(PROG ": %s %s is also the %s of '%s'", extra[e][0], extra[e][1],
                       rec_name[at % 3], o->inputs[at / 3]);
            rc = 2;
        }
    }
    if (o->json && o->manifest && rc < 0) {
        char k2[8192];
        file_key(o->json, key, sizeof key);
        file_key(o->manifest, k2, sizeof k2);
        if (!strcmp(key, k2)) {
            ws_eprintf(PROG ": --json and --manifest name one file, %s", o->json);
            rc = 2;
        }
    }
done:
    ws_strmap_free(ins);
    ws_strmap_free(outk);
    return rc;
}

/* Input i's segment, or NULL (a whole file, or a bad line). */
static const ws_segment *seg_of(const options *o, size_t i)
{
    return o->segs && o->segs[i] && !o->segs[i]->bad ? o->segs[i] : NULL;
}

/* " (segment ID from S s)" for a segment, "" for a whole file. */
static const char *seg_desc(const options *o, size_t i, char *buf, size_t cap)
{
    const ws_segment *s = seg_of(o, i);
    if (!s)
        return "";
    snprintf(buf, cap, " (segment %.60s from %.3f s)", s->id, s->start_s);
    return buf;
}

/* -O: no two inputs of the whole list write one file (-O flattens directories; without
 * --keep-ext, x.wav and x.flac are both x.npy). Every clash is found in one pass and the
 * first MAX_CLASHES shown. -1 to go on, else the exit status. */
#define MAX_CLASHES 10
static int report_clashes(const options *o, char *const *outs)
{
    ws_strmap *names = ws_strmap_new();
    if (!names)
        return ws_eprintf(PROG ": out of memory"), 1;
    long long clashes = 0, seg_clashes = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        size_t prev;
        int r = outs[i] ? ws_strmap_put(names, outs[i], strlen(outs[i]), (size_t)i, &prev) : 0;
        if (r < 0) {
            ws_strmap_free(names);
            return ws_eprintf(PROG ": out of memory"), 1;
        }
        if (r == 1 && (seg_of(o, prev) || seg_of(o, i)))
            seg_clashes++;
        if (r == 1 && ++clashes <= MAX_CLASHES) {
            char a[128], b[128];
            ws_eprintf(PROG ": inputs '%s'%s and '%s'%s would both write %s", o->inputs[prev],
                       seg_desc(o, prev, a, sizeof a), o->inputs[i], seg_desc(o, i, b, sizeof b),
                       outs[i]);
        }
    }
    ws_strmap_free(names);
    if (!clashes)
        return -1;
    ws_eprintf(PROG ": %lld clash%s in all; %s", clashes, clashes == 1 ? "" : "es",
               seg_clashes  ? "a segment's output is named by its id: give each its own"
               : !o->keep_ext ? "--keep-ext names outputs with their extensions"
               : !o->root   ? "--root DIR keeps the inputs' directories under -O"
                            : "two list lines name one file");
    return 2;
}

/* --shard I/N: keeps the inputs at list positions I, I+N, ... (with their names). */
static void select_shard(options *o, char **outs, const char **whys)
{
    int k = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        if (i % o->shard_n == o->shard_i) {
            o->inputs[k] = o->inputs[i];
            if (o->segs)
                o->segs[k] = o->segs[i];
            if (o->srcs)
                o->srcs[k] = o->srcs[i];
            outs[k] = outs[i];
            whys[k] = whys[i];
            k++;
        } else {
            free(o->inputs[i]);
            if (o->segs)
                segment_free(o->segs[i]);
            if (o->srcs)
                free(o->srcs[i]);
            free(outs[i]);
        }
    }
    o->n_inputs = k;
}

/* -o, -O, --manifest and --json: no link on their paths that the trust rule refuses
 * (output.h), before anything is opened or read. 0, or the exit status. */
static int check_links(const options *o)
{
    const char *paths[4][2] = {{"-o", o->output}, {"-O", o->outdir}, {"--manifest", o->manifest},
                               {"--json", o->json}};
    for (int i = 0; i < 4; i++) {
        ws_err err;
        if (paths[i][1] && strcmp(paths[i][1], "-") && ws_path_links_trusted(paths[i][1], &err)) {
            ws_eprintf(PROG ": %s %s", paths[i][0], err.msg);
            return 1;
        }
    }
    return 0;
}

int ws_cli_make_outdir(const options *o)
{
    ws_err err;
    size_t k = strlen(o->outdir);
    char *p = malloc(k + 3);
    if (p)
        snprintf(p, k + 3, "%s/.", o->outdir); /* the parents of DIR/. : DIR and above */
    const int oom = !p, bad = oom || ws_mkdir_parents(p, &err);
    free(p);
    if (bad) {
        ws_eprintf(PROG ": -O %s: %s", o->outdir, oom ? "out of memory" : err.msg);
        return 1;
    }
    return 0;
}

int ws_cli_output_names(options *o, ws_cli_names *nm)
{
    int st;
    if ((st = check_links(o)) != 0)
        return st;
    char root_norm[8192], root_real[PATH_MAX];
    if (o->root && norm_path(o->root, root_norm, sizeof root_norm)) {
        ws_eprintf(PROG ": --root %s: path too long", o->root);
        return 2;
    }
    const int root_ok = o->root && realpath(o->root, root_real);
    char **outs = nm->outs = calloc((size_t)o->n_inputs, sizeof *outs);
    const char **whys = nm->whys = calloc((size_t)o->n_inputs, sizeof *whys);
    if (o->root) {
        size_t cap = strlen(o->root) + 32;
        if ((nm->not_under = malloc(cap)))
            snprintf(nm->not_under, cap, "not under --root %s", o->root);
    }
    int oom = !outs || !whys || (o->root && !nm->not_under);
    for (int i = 0; !oom && i < o->n_inputs; i++) {
        const ws_segment *sg = o->segs ? o->segs[i] : NULL;
        if (sg && sg->bad) { /* a list line that names no input: it fails */
            whys[i] = sg->bad;
            continue;
        }
        const ws_tar_src *src = o->srcs ? o->srcs[i] : NULL;
        if (src && o->outdir) { /* named by its key (--root or not) */
            size_t cap = strlen(o->outdir) + strlen(src->key) + 8;
            if (!(outs[i] = malloc(cap))) {
                oom = 1;
                break;
            }
            snprintf(outs[i], cap, "%s/%s.npy", o->outdir, src->key);
            continue;
        }
        if (o->root) { /* NULL: not under the root, that input fails */
            outs[i] = tree_path(o->outdir, root_norm, root_ok ? root_real : NULL, o->inputs[i],
                                o->keep_ext, &oom, &whys[i]);
            if (!outs[i] && !whys[i])
                whys[i] = nm->not_under;
            if (outs[i] && sg && !(outs[i] = segment_in_tree(outs[i], sg->id)))
                oom = 1;
            continue;
        }
        if (sg) { /* named by its id */
            size_t cap = strlen(o->outdir) + strlen(sg->id) + 8;
            if (!(outs[i] = malloc(cap))) {
                oom = 1;
                break;
            }
            snprintf(outs[i], cap, "%s/%s.npy", o->outdir, sg->id);
            continue;
        }
        if (o->outdir && !names_a_file(o->inputs[i])) { /* "d/", ".", "..": no name under -O */
            whys[i] = "the path ends in a directory ('/', '.' or '..'), not a file";
            continue;
        }
        size_t cap = (o->outdir ? strlen(o->outdir) : 0) + strlen(o->inputs[i]) + 16;
        if (!(outs[i] = malloc(o->output ? strlen(o->output) + 1 : cap))) {
            oom = 1;
            break;
        }
        if (o->outdir)
            outdir_path(o->outdir, o->inputs[i], o->keep_ext, outs[i], cap);
        else
            strcpy(outs[i], o->output);
    }
    if (oom) {
        ws_eprintf(PROG ": out of memory for %d output names", o->n_inputs);
        return 1;
    }
    if (o->outdir && (st = report_clashes(o, outs)) >= 0)
        return st;
    if (o->shard_n)
        select_shard(o, outs, whys);
    /* a gzip shard's members take turns at its reader in the order of this run's part */
    for (int i = 0; o->srcs && i < o->n_inputs; i++)
        if (o->srcs[i] && o->srcs[i]->gz)
            o->srcs[i]->turn = ws_tarin_gz_add_turn(o->srcs[i]->gz);
    for (int k = 0; k < o->n_shards_in; k++)
        if (o->shards_in[k].gz && ws_tarin_gz_ready(o->shards_in[k].gz)) {
            ws_eprintf(PROG ": out of memory");
            return 1;
        }
    if (o->n_inputs == 0) /* an empty shard: nothing to do */
        return 0;
    if ((st = check_outputs(o, outs, o->outdir && !o->tar_size ? REC_SIDECAR : REC_NONE)) >= 0)
        return st;
    if (o->tar_size) {
        if ((st = tar_names(o, outs, &nm->members, &nm->shard_paths, whys)) != 0)
            return st;
        if ((st = check_outputs(o, outs, REC_INDEX)) >= 0) /* the shards' paths */
            return st;
    }
    return 0;
}

void ws_cli_names_free(const options *o, ws_cli_names *nm)
{
    for (int i = 0; nm->members && i < o->n_inputs; i++)
        free(nm->members[i]);
    free(nm->members);
    for (int i = 0; nm->shard_paths && o->tar_size && i < (o->n_inputs + o->tar_size - 1) / o->tar_size; i++)
        free(nm->shard_paths[i]);
    free(nm->shard_paths);
    free(nm->whys);
    free(nm->not_under);
    for (int i = 0; nm->outs && i < o->n_inputs; i++)
        free(nm->outs[i]);
    free(nm->outs);
    memset(nm, 0, sizeof *nm);
}

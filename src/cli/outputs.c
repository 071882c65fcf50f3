/* outputs.c - writing one output (a file, a streamed file's commit, a tar member), its
 * sidecar, and the --skip-existing decisions for files. */
#include <cjson/cJSON.h>
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

#include "output.h"
#include "run_int.h"
#include "trace.h"

/* --- outputs redone by --skip-existing ------------------------------------------------ */

static pthread_mutex_t g_redo_mu = PTHREAD_MUTEX_INITIALIZER;
static long g_redone;            /* outputs */
static unsigned g_redo_why;      /* the reasons seen (bits of ws_provenance_diff) */

void ws_run_redo_note(unsigned diff, long n)
{
    pthread_mutex_lock(&g_redo_mu);
    g_redone += n;
    g_redo_why |= diff;
    pthread_mutex_unlock(&g_redo_mu);
}

void ws_run_redo_say(void)
{
    pthread_mutex_lock(&g_redo_mu);
    if (g_redone) {
        char why[256] = "";
        for (int k = 0; k < WS_REDO_N; k++)
            if (g_redo_why & (1u << k))
                snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s", *why ? ", " : "",
                         ws_redo_reasons[k]);
        ws_eprintf("whisper-stem: --skip-existing: %ld output%s made with other settings (%s) "
                   "redone", g_redone, g_redone == 1 ? "" : "s", why);
    }
    g_redone = 0;
    g_redo_why = 0;
    pthread_mutex_unlock(&g_redo_mu);
}

/* --- records (sidecars, shard indexes) ------------------------------------------------ */

int ws_record_lines(const char *path, size_t max, ws_record_line_fn fn, void *ctx,
                    long *too_long, ws_err *why)
{
    ws_err e = {{0}};
    *too_long = 0;
    /* the trust rule that writes obey; then no link, no FIFO or device (opened without
     * waiting: a FIFO's open would wait for a writer), at most st_size and max bytes */
    if (ws_path_links_trusted(path, &e))
        return ws_errf(why, "%s; no record", e.msg), -1;
    const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return 1;
        return ws_errf(why, "%s: %s; no record", path,
                       errno == ELOOP ? "a symbolic link (not followed)" : strerror(errno)), -1;
    }
    struct stat st;
    const char *bad = fstat(fd, &st) != 0        ? strerror(errno)
                      : !S_ISREG(st.st_mode)     ? "not a regular file"
                      : (uintmax_t)st.st_size > max ? "larger than a record may be"
                                                 : NULL;
    if (bad) {
        ws_errf(why, "%s: %s; no record", path, bad);
        close(fd);
        return -1;
    }
    /* a line and its newline, or the whole file when smaller (a sidecar is a few hundred
     * bytes: no 1 MiB buffer an output) */
    const size_t cap = (uintmax_t)st.st_size < WS_RECORD_MAX ? (size_t)st.st_size + 1
                                                             : WS_RECORD_MAX + 1;
    char *buf = malloc(cap);
    size_t have = 0, left = (size_t)st.st_size;
    int skipping = 0, rc = 0; /* skipping: inside a line over WS_RECORD_MAX bytes */
    if (!buf)
        rc = ws_errf(why, "%s: out of memory; no record", path);
    while (!rc) {
        ssize_t k = 0;
        if (left && have < cap) {
            k = read(fd, buf + have, cap - have < left ? cap - have : left);
            if (k < 0 && errno == EINTR)
                continue;
            if (k < 0) {
                rc = ws_errf(why, "%s: %s; no record", path, strerror(errno));
                break;
            }
            left = k ? left - (size_t)k : 0; /* shorter than it was: its end */
            have += (size_t)k;
        }
        /* the lines by their length (a NUL in one is a byte of it) */
        size_t s = 0;
        const char *nl;
        while ((nl = memchr(buf + s, '\n', have - s))) {
            const size_t len = (size_t)(nl - (buf + s));
            if (skipping)
                skipping = 0, ++*too_long;
            else
                fn(ctx, buf + s, len);
            s += len + 1;
        }
        memmove(buf, buf + s, have - s);
        have -= s;
        if (!left) { /* the last line, without its newline */
            if (skipping || have > WS_RECORD_MAX)
                ++*too_long;
            else if (have)
                fn(ctx, buf, have);
            break;
        }
        if (have == cap) { /* no newline within a record's length: passed over */
            skipping = 1;
            have = 0;
        }
    }
    free(buf);
    close(fd);
    return rc;
}

int ws_record_remove(const char *path, ws_err *e)
{
    char dir[4096];
    struct stat st;
    ws_dirname(path, dir, sizeof dir);
    if (ws_path_links_trusted(dir, e))
        return -1;
    if (lstat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR
                   ? 0
                   : ws_errf(e, "%s: the old record: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return ws_errf(e, "%s: is a directory", path);
    if (unlink(path) != 0 && errno != ENOENT)
        return ws_errf(e, "%s: cannot remove the old record: %s", path, strerror(errno));
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const int rc = fd < 0 || (fsync(fd) != 0 && errno != EINVAL) ? -1 : 0;
    if (rc)
        ws_errf(e, "%s: the old record removed, but its directory could not be flushed to "
                   "disk: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    return rc;
}

typedef struct {
    cJSON *r;
    int lines; /* non-empty lines */
} one_record;

static void record_line(void *ctx, const char *line, size_t len)
{
    one_record *o = ctx;
    if (!len)
        return;
    if (++o->lines == 1)
        o->r = ws_json_parse(line, len);
}

cJSON *ws_read_record(const char *path, size_t max)
{
    one_record o = {NULL, 0};
    long too_long;
    ws_err e = {{0}};
    const int rc = ws_record_lines(path, max, record_line, &o, &too_long, &e);
    if (rc < 0)
        ws_eprintf("whisper-stem: %s", e.msg);
    if (rc || too_long || o.lines != 1 || !cJSON_IsObject(o.r)) {
        cJSON_Delete(o.r);
        return NULL;
    }
    return o.r;
}

/* --- sidecars ----------------------------------------------------------------------- */

/* OUT/x.npy's sidecar OUT/x.json (malloc'd; other names get ".json" added), or NULL. */
static char *sidecar_path(const char *out)
{
    size_t n = strlen(out);
    char *p = malloc(n + 6);
    if (!p)
        return NULL;
    memcpy(p, out, n + 1);
    if (n > 4 && !strcasecmp(p + n - 4, ".npy"))
        n -= 4;
    strcpy(p + n, ".json");
    return p;
}

/* j's sidecar: its manifest line, as "ok", written atomically after the output. */
static int write_sidecar(const ws_run_ctx *c, ws_job *j, ws_err *e)
{
    char *path = sidecar_path(j->output);
    j->ok = 1;
    char *line = path ? ws_job_line(c, j) : NULL;
    j->ok = 0;
    int rc;
    if (!line) {
        rc = ws_errf(e, "%s: out of memory for its sidecar", j->output);
    } else {
        size_t n = strlen(line);
        line[n] = '\n'; /* over the NUL: written with its length */
        rc = ws_write_file_atomic(path, line, n + 1, e);
    }
    free(line);
    free(path);
    return rc;
}

/* --- one output ------------------------------------------------------------------------ */

void ws_run_to_f16(const ws_run_ctx *c, ws_job *j, size_t count)
{
    if (c->out_dtype != WS_OUT_F16)
        return;
    if (j->result_f16) /* converted on the GPU (cvt.rn.f16.f32: infinity beyond the range) */
        j->f16_clamped += (long long)ws_f16_saturate(j->result, count);
    else
        j->f16_clamped += (long long)ws_f32_to_f16_inplace(j->result, count);
}

int ws_run_decide(const ws_run_ctx *c, ws_job *j)
{
    struct stat st;
    if (j->skipped) /* decided by a record (shards.c) */
        return 1;
    if (j->rec) /* failed before, recorded so in a complete shard: not redone */
        return -1;
    const int exists = strcmp(j->output, "-") && stat(j->output, &st) == 0;
    if (j->shard >= 0) {
        /* a tar member: ws_shards_plan decided */
    } else if (c->skip_existing && exists && S_ISREG(st.st_mode)) {
        /* outputs appear whole or not at all: this one is complete; with sidecars, skipped
         * only when its record says it was made with this run's settings */
        if (!c->sidecars) {
            j->skipped = 1;
            return 1;
        }
        char *sp = sidecar_path(j->output);
        cJSON *rec = sp ? ws_read_record(sp, WS_RECORD_MAX) : NULL;
        free(sp);
        const cJSON *st_ = rec ? cJSON_GetObjectItem(rec, "status") : NULL;
        /* a segment's output is of its start and duration too: another one is redone; and
         * of its input (a segment id now naming another file's audio; a whole file's output
         * is named by its input already) */
        const unsigned diff =
            cJSON_IsString(st_) && !strcmp(st_->valuestring, "ok") &&
                    (!j->seg || ws_record_is_of(rec, j))
                ? ws_provenance_diff(c->provenance, cJSON_GetObjectItem(rec, "provenance")) |
                      ws_segment_diff(j->seg, rec)
                : 1u << WS_REDO_NO_RECORD;
        if (!diff) {
            j->rec = rec;
            j->skipped = 1;
            return 1;
        }
        cJSON_Delete(rec);
        ws_run_redo_note(diff, 1);
    }
    /* a FIFO or device, or a tar member: held whole, never streamed */
    j->special = (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) || j->shard >= 0;
    return 0;
}

int ws_run_write_out(const ws_run_ctx *c, ws_job *j)
{
    ws_err e = {{0}};
    double t0 = ws_now();
    WS_RANGE_PUSH("write");
    int rc = 0;
    if (c->sidecars && j->shard < 0 && !j->special) {
        /* the old sidecar goes before the new output is named: a kill between the two
         * leaves an output without a record (made again), never a record of another run
         * beside it */
        char *sp = sidecar_path(j->output);
        rc = sp ? ws_record_remove(sp, &e) : ws_errf(&e, "out of memory for its sidecar");
        free(sp);
    }
    if (rc) { /* not written: the old output and what is left of its record stay */
        ws_out_abort(j->out);
        j->out = NULL;
    } else if (j->out) { /* streamed by the stem: flush and name it */
        rc = ws_out_commit(j->out, &e);
        j->out = NULL;
    } else if (j->shard >= 0) {
        rc = ws_shard_write_member(c, j, &e);
    } else {
        size_t count = 1;
        for (int i = 0; i < j->ndim; i++)
            count *= (size_t)j->shape[i];
        ws_run_to_f16(c, j, count);
        /* a tree under -O: --root's, or a member's key with directories */
        rc = ((c->root || (j->src && strchr(j->src->key, '/'))) &&
              ws_mkdir_parents(j->output, &e)) ||
             ws_write_array_dtype(j->output, j->result, c->out_dtype, j->shape, j->ndim, &e);
    }
    if (!rc && c->sidecars && j->shard < 0 && !j->special)
        rc = write_sidecar(c, j, &e);
    WS_RANGE_POP();
    j->ms.write += 1e3 * (ws_now() - t0);
    if (rc)
        return ws_run_fail(j, "%s: %s", j->input, e.msg);
    j->ok = 1;
    ws_run_release(j);
    return 0;
}


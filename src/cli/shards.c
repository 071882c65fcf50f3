/* shards.c - --tar-size: the run's tar shards, their members, commit and report. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"
#include "progress.h"
#include "run_int.h"
#include "signals.h"
#include "strmap.h"
#include "tar.h"
#include "trace.h"

/* --- tar shards ------------------------------------------------------------- */

struct ws_shard {
    pthread_mutex_t mu;
    const char *path;
    ws_job *jobs;    /* its inputs */
    int n;
    ws_tar *t;       /* open from the first member on */
    int left;        /* inputs not finished yet */
    int written;     /* inputs whose members are in */
    char *error;     /* the shard itself failed (an I/O error): why; its inputs fail */
    int state;       /* SHARD_*: what an existing file at path means for this run */
    char *refused;   /* SHARD_REFUSED: why */
};

enum {
    SHARD_UNKNOWN = 0, /* not looked at yet */
    SHARD_WRITE,       /* no file there, or one to replace: its members are all this shard's */
    SHARD_COMPLETE,    /* there, holding a member for every input: skipped (--skip-existing) */
    SHARD_REFUSED,     /* there with members of other inputs (another list or --tar-size): kept */
};

typedef struct {
    ws_strmap *mine; /* this shard's member names */
    ws_strmap *seen; /* those found in the file */
    const char *foreign;
    char first[256];
} shard_scan;

static int scan_member(void *ctx, const char *name, uint64_t size)
{
    shard_scan *s = ctx;
    (void)size;
    if (ws_strmap_get(s->mine, name, strlen(name), NULL)) {
        ws_strmap_put(s->seen, name, strlen(name), 0, NULL);
        return 0;
    }
    snprintf(s->first, sizeof s->first, "%s", name);
    s->foreign = s->first;
    return 1;
}

/* Looks at the file at the shard's path once, with sh->mu held. */
static void shard_look(const ws_run_ctx *c, struct ws_shard *sh)
{
    if (sh->state != SHARD_UNKNOWN)
        return;
    struct stat st;
    sh->state = SHARD_WRITE;
    if (stat(sh->path, &st) != 0)
        return;
    char buf[512];
    shard_scan s = {ws_strmap_new(), ws_strmap_new(), NULL, ""};
    int expected = 0, oom = !s.mine || !s.seen;
    for (int k = 0; k < sh->n && !oom; k++) {
        const ws_job *m = &sh->jobs[k];
        if (!m->member)
            continue;
        for (int e = 0; e < 2 && !oom; e++) {
            snprintf(buf, sizeof buf, "%s.%s", m->member, e ? "json" : "npy");
            oom = ws_strmap_put(s.mine, buf, strlen(buf), 0, NULL) < 0;
        }
        expected += 2;
    }
    ws_err e = {{0}};
    int rc = oom ? -1 : ws_tar_list(sh->path, scan_member, &s, &e);
    char msg[WS_ERR_LEN + 600];
    if (oom || rc < 0 || s.foreign) {
        if (s.foreign)
            snprintf(msg, sizeof msg, "%s holds '%s', which is not from this shard's inputs "
                                      "(another list or --tar-size?): not replaced",
                     sh->path, s.foreign);
        else
            snprintf(msg, sizeof msg, "%s is there and cannot be read as a shard (%s): not "
                                      "replaced", sh->path, oom ? "out of memory" : e.msg);
        sh->state = SHARD_REFUSED;
        sh->refused = strdup(msg);
    } else if (c->skip_existing && ws_strmap_size(s.seen) == (size_t)expected) {
        sh->state = SHARD_COMPLETE;
    }
    ws_strmap_free(s.mine);
    ws_strmap_free(s.seen);
}

struct ws_shard *ws_shards_new(char *const *paths, ws_job *jobs, int n_jobs, int per_shard)
{
    const int n = (n_jobs + per_shard - 1) / per_shard;
    struct ws_shard *s = calloc((size_t)(n > 0 ? n : 1), sizeof *s);
    for (int i = 0; s && i < n; i++) {
        pthread_mutex_init(&s[i].mu, NULL);
        s[i].path = paths[i];
        s[i].jobs = jobs + (size_t)i * per_shard;
        s[i].n = n_jobs - i * per_shard < per_shard ? n_jobs - i * per_shard : per_shard;
        s[i].left = s[i].n;
        for (int k = 0; k < s[i].n; k++)
            s[i].jobs[k].shard = i;
    }
    return s;
}

void ws_shards_free(struct ws_shard *s, int n_jobs, int per_shard)
{
    const int n = (n_jobs + per_shard - 1) / per_shard;
    for (int i = 0; s && i < n; i++) {
        ws_tar_abort(s[i].t);
        free(s[i].error);
        free(s[i].refused);
        pthread_mutex_destroy(&s[i].mu);
    }
    free(s);
}

int ws_shard_decide(const ws_run_ctx *c, ws_job *j)
{
    struct ws_shard *sh = &c->shards[j->shard];
    pthread_mutex_lock(&sh->mu);
    shard_look(c, sh);
    const int state = sh->state;
    pthread_mutex_unlock(&sh->mu);
    if (state == SHARD_REFUSED)
        return ws_run_fail(j, "%s: %s", j->input, sh->refused ? sh->refused : "shard not replaced");
    if (state == SHARD_COMPLETE) {
        j->skipped = 1;
        return 1;
    }
    return 0;
}

/* j's members KEY.npy (the array, as a .npy file) and KEY.json (its manifest line) into
 * its shard, which is opened at the first one. 0, or -1 with e (the shard has failed). */
int ws_shard_write_member(const ws_run_ctx *c, ws_job *j, ws_err *e)
{
    struct ws_shard *sh = &c->shards[j->shard];
    size_t count = 1;
    for (int i = 0; i < j->ndim; i++)
        count *= (size_t)j->shape[i];
    const size_t esz = c->out_dtype == WS_OUT_F16 ? 2 : sizeof(float);
    if (c->out_dtype == WS_OUT_F16 && !j->result_f16)
        ws_f32_to_f16_inplace(j->result, count);
    char header[256], name[WS_TAR_NAME_MAX + 1];
    const size_t hl = ws_npy_header_dtype(header, sizeof header, j->shape, j->ndim, c->out_dtype);
    if (!hl)
        return ws_errf(e, "shape too long for a .npy header");
    j->ok = 1; /* the line the member holds says what the manifest will */
    cJSON *o = ws_job_json(c, j);
    char *json = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    j->ok = 0;
    if (!json)
        return ws_errf(e, "out of memory for the manifest line");
    int rc = -1;
    pthread_mutex_lock(&sh->mu);
    if (sh->error) {
        ws_errf(e, "%s", sh->error);
    } else if ((sh->t || (sh->t = ws_tar_open(sh->path, e))) &&
               snprintf(name, sizeof name, "%s.npy", j->member) < (int)sizeof name &&
               !ws_tar_begin(sh->t, name, hl + count * esz, e) &&
               !ws_tar_write(sh->t, header, hl, e) &&
               !ws_tar_write(sh->t, j->result, count * esz, e) && !ws_tar_end(sh->t, e) &&
               snprintf(name, sizeof name, "%s.json", j->member) < (int)sizeof name &&
               !ws_tar_add(sh->t, name, json, strlen(json), e)) {
        sh->written++;
        rc = 0;
    } else if (!sh->error) { /* the shard is broken from here on: keep the first reason */
        sh->error = strdup(e->msg[0] ? e->msg : "the member name is too long");
        if (!e->msg[0])
            ws_errf(e, "%s: the member name is too long", sh->path);
    }
    pthread_mutex_unlock(&sh->mu);
    free(json);
    return rc;
}

void ws_run_report(const ws_run_ctx *c, ws_job *j)
{
    if (j->shard < 0) {
        ws_run_report_one(c, j);
        return;
    }
    struct ws_shard *sh = &c->shards[j->shard];
    pthread_mutex_lock(&sh->mu);
    const int last = --sh->left == 0;
    pthread_mutex_unlock(&sh->mu);
    if (!last)
        return;
    ws_err e = {{0}};
    int rc = 0;
    if (sh->t && sh->written && !sh->error) {
        WS_RANGE_PUSH("write");
        rc = ws_tar_commit(sh->t, &e);
        WS_RANGE_POP();
    } else {
        ws_tar_abort(sh->t);
    }
    sh->t = NULL;
    for (int k = 0; k < sh->n; k++) {
        ws_job *m = &sh->jobs[k];
        if ((rc || sh->error) && m->ok)
            ws_run_fail(m, "%s: %s", m->input, rc ? e.msg : sh->error);
        ws_run_report_one(c, m);
    }
}


/* shards.c - --tar-size: the run's tar shards: their numbers (probing past shards of
 * other inputs), what earlier runs left (the shard index OUT/shard-NNNNNN.jsonl beside
 * each OUT/shard-NNNNNN.tar), the members, the commit, the index, the report.
 *
 * Shard k of --shard I/N tries the numbers I + N * (k + m * K), m = 0, 1, ..., with
 * K = ceil(ceil(list length / N) / tar_size): the first number that is free or whose shard
 * holds exactly this shard's inputs (by its index; without one, by its members) is used.
 * With --skip-existing, a shard whose .tar and index are there, for exactly these inputs,
 * made with this run's settings, is complete: its ok inputs are skipped, its failed ones
 * fail again with the recorded error. Then every OUT/shard-*.jsonl is read: an input whose
 * newest record is "ok" with this run's settings is skipped wherever it is; the shard gets
 * the others (and its number is probed for them). A shard given no input is not made.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"
#include "run_int.h"
#include "strmap.h"
#include "tar.h"
#include "trace.h"

struct ws_shard {
    pthread_mutex_t mu;
    char *path;        /* OUT/shard-NNNNNN.tar once numbered (ws_shards_plan), else NULL */
    ws_job *jobs;      /* its slice of the list */
    int n;
    int given;         /* jobs of the slice it writes (the others were decided by records) */
    long long num0, stride; /* its numbers: num0 + stride * m */
    const char *outdir;
    ws_tar *t;         /* open from the first member on */
    int left;          /* given inputs not finished yet */
    int written;       /* inputs whose members are in */
    char *error;       /* the shard itself failed (an I/O error): why; its inputs fail */
};

struct ws_shard *ws_shards_new(const ws_shard_names *nm, ws_job *jobs, int n_jobs, int per_shard)
{
    const int n = (n_jobs + per_shard - 1) / per_shard;
    const long long N = nm->shard_n > 0 ? nm->shard_n : 1;
    const long long per_task = (nm->n_listed + N - 1) / N;
    long long K = (per_task + per_shard - 1) / per_shard;
    if (K < n)
        K = n;
    struct ws_shard *s = calloc((size_t)(n > 0 ? n : 1), sizeof *s);
    for (int i = 0; s && i < n; i++) {
        pthread_mutex_init(&s[i].mu, NULL);
        s[i].jobs = jobs + (size_t)i * per_shard;
        s[i].n = n_jobs - i * per_shard < per_shard ? n_jobs - i * per_shard : per_shard;
        s[i].num0 = nm->shard_i + N * i;
        s[i].stride = N * K;
        s[i].outdir = nm->outdir;
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
        free(s[i].path);
        pthread_mutex_destroy(&s[i].mu);
    }
    free(s);
}

/* --- reading indexes ------------------------------------------------------------------- */

typedef struct {
    cJSON **line; /* parsed, in file order */
    int n;
} index_lines;

static void index_free(index_lines *x)
{
    for (int i = 0; i < x->n; i++)
        cJSON_Delete(x->line[i]);
    free(x->line);
    x->line = NULL;
    x->n = 0;
}

static ws_strmap *g_warned; /* indexes said to have bad lines (the plan reads some twice) */

typedef struct {
    index_lines *x;
    long bad;
} index_ctx;

static void index_line(void *ctx, const char *line, size_t len)
{
    index_ctx *ic = ctx;
    index_lines *x = ic->x;
    cJSON *o = ws_json_parse(line, len);
    const cJSON *in = o ? cJSON_GetObjectItem(o, "input") : NULL;
    cJSON **t = cJSON_IsString(in) ? realloc(x->line, sizeof *t * (size_t)(x->n + 1)) : NULL;
    if (!t) {
        cJSON_Delete(o);
        ic->bad++;
        return;
    }
    x->line = t;
    x->line[x->n++] = o;
}

/* Says msg once per path (the plan reads some twice). */
static void warn_once(const char *path, const char *msg)
{
    if (!g_warned || ws_strmap_put(g_warned, path, strlen(path), 0, NULL) == 0)
        ws_eprintf("whisper-stem: %s", msg);
}

/* The lines of the index at path: 0; -1: none there; -2: something there that is not
 * read (said once: a link, a FIFO, a device, too large, unreadable). Lines over
 * WS_RECORD_MAX bytes or not one JSON object with an "input" string are left out, with
 * one warning. */
static int index_read(const char *path, index_lines *x)
{
    x->line = NULL;
    x->n = 0;
    index_ctx ic = {x, 0};
    long too_long = 0;
    ws_err e = {{0}};
    const int rc = ws_record_lines(path, WS_INDEX_MAX, index_line, &ic, &too_long, &e);
    if (rc) {
        index_free(x);
        if (rc < 0)
            warn_once(path, e.msg);
        return rc > 0 ? -1 : -2;
    }
    const long bad = ic.bad + too_long;
    if (bad) {
        char msg[WS_ERR_LEN];
        snprintf(msg, sizeof msg, "%s: %ld line%s left out (not a JSON object with an input, "
                 "or over 1 MiB)", path, bad, bad == 1 ? "" : "s");
        warn_once(path, msg);
    }
    return 0;
}

/* What is at a tar's path: 1 a regular file (through links the trust rule follows), 0
 * nothing, -1 something else (said once: a link refused, a FIFO, a device, a directory;
 * never opened). */
static int tar_at(const char *path)
{
    struct stat st;
    char msg[WS_ERR_LEN + 32];
    ws_err e = {{0}};
    if (ws_path_links_trusted(path, &e)) {
        snprintf(msg, sizeof msg, "%s; no record", e.msg);
        warn_once(path, msg);
        return -1;
    }
    if (stat(path, &st) != 0)
        return 0;
    if (S_ISREG(st.st_mode))
        return 1;
    snprintf(msg, sizeof msg, "%s: not a regular file; no record", path);
    warn_once(path, msg);
    return -1;
}

static const char *line_input(const cJSON *o)
{
    return cJSON_GetObjectItem(o, "input")->valuestring;
}

/* The key the records of an input go by: its path, and for a segment a NUL and its id
 * (segments of one file are inputs of their own). malloc'd (*len its bytes), or NULL. */
static char *rec_key(const char *input, const char *id, size_t *len)
{
    const size_t a = strlen(input), b = id ? strlen(id) + 1 : 0;
    char *k = malloc(a + b + 1);
    if (!k)
        return NULL;
    memcpy(k, input, a + 1);
    if (id)
        memcpy(k + a + 1, id, b);
    *len = a + b;
    return k;
}

static char *line_key(const cJSON *o, size_t *len)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "segment"), "id");
    return rec_key(line_input(o), cJSON_IsString(id) ? id->valuestring : NULL, len);
}

static int line_ok(const cJSON *o)
{
    const cJSON *s = cJSON_GetObjectItem(o, "status");
    return cJSON_IsString(s) && !strcmp(s->valuestring, "ok");
}

/* --- what is at a shard number ---------------------------------------------------------- */

enum { AT_FREE, AT_SAME, AT_OTHER };

typedef struct {
    int what;          /* AT_* */
    int has_tar, has_index;
    index_lines idx;   /* AT_SAME with an index: its lines, in the slice's order */
    int members_all;   /* AT_SAME without an index: a member for every input */
} at_shard;

static char *shard_path(const struct ws_shard *sh, long long m, const char *ext)
{
    size_t cap = strlen(sh->outdir) + 40;
    char *p = malloc(cap);
    if (p)
        snprintf(p, cap, "%s/shard-%06lld.%s", sh->outdir, sh->num0 + sh->stride * m, ext);
    return p;
}

typedef struct {
    ws_strmap *mine;
    ws_strmap *seen;
    int foreign;
} member_scan;

static int scan_member(void *ctx, const char *name, uint64_t size)
{
    member_scan *s = ctx;
    (void)size;
    if (!ws_strmap_get(s->mine, name, strlen(name), NULL)) {
        s->foreign = 1;
        return 1;
    }
    ws_strmap_put(s->seen, name, strlen(name), 0, NULL);
    return 0;
}

/* What the shard number m holds for the inputs set[0..n) (jobs, in list order). */
static at_shard look_at(const struct ws_shard *sh, long long m, ws_job *const *set, int n)
{
    at_shard a = {AT_FREE, 0, 0, {NULL, 0}, 0};
    char *tar = shard_path(sh, m, "tar"), *idx = shard_path(sh, m, "jsonl");
    if (!tar || !idx) {
        a.what = AT_OTHER;
        goto out;
    }
    /* something there that is not read: the number is taken (never written into) */
    const int t = tar_at(tar), ir = index_read(idx, &a.idx);
    a.has_tar = t == 1;
    a.has_index = ir == 0;
    if (t < 0 || ir == -2) {
        index_free(&a.idx);
        a.what = AT_OTHER;
        goto out;
    }
    if (a.has_index) {
        int same = a.idx.n == n;
        for (int i = 0; same && i < n; i++)
            same = ws_record_is_of(a.idx.line[i], set[i]);
        a.what = same ? AT_SAME : AT_OTHER;
        if (!same)
            index_free(&a.idx);
    } else if (a.has_tar) { /* an index not written (killed, or an older version): members */
        member_scan s = {ws_strmap_new(), ws_strmap_new(), 0};
        int expected = 0, oom = !s.mine || !s.seen;
        char buf[WS_TAR_NAME_MAX + 8];
        for (int k = 0; k < n && !oom; k++)
            for (int e = 0; e < 2 && set[k]->member && !oom; e++, expected++) {
                snprintf(buf, sizeof buf, "%s.%s", set[k]->member, e ? "json" : "npy");
                oom = ws_strmap_put(s.mine, buf, strlen(buf), 0, NULL) < 0;
            }
        ws_err e = {{0}};
        const int rc = oom ? -1 : ws_tar_list(tar, scan_member, &s, &e);
        a.what = rc < 0 || s.foreign ? AT_OTHER : AT_SAME;
        a.members_all = a.what == AT_SAME && ws_strmap_size(s.seen) == (size_t)expected;
        ws_strmap_free(s.mine);
        ws_strmap_free(s.seen);
    }
out:
    free(tar);
    free(idx);
    return a;
}

#define MAX_PROBES 100000

/* The first number m free or holding exactly set (its look in *a), or -1. */
static long long probe(const struct ws_shard *sh, ws_job *const *set, int n, at_shard *a)
{
    for (long long m = 0; m < MAX_PROBES; m++) {
        *a = look_at(sh, m, set, n);
        if (a->what != AT_OTHER)
            return m;
    }
    return -1;
}

/* --- the plan ------------------------------------------------------------------------- */

/* Each input of the run that some index records: its newest line (by "time"). */
typedef struct {
    ws_strmap *inputs; /* input -> job index + 1 */
    cJSON **best;      /* per job: its newest line, or NULL */
    double *best_t;
    char **best_tar;   /* the tar beside that index */
} records;

static double line_time(const cJSON *o)
{
    const cJSON *t = cJSON_GetObjectItem(o, "time");
    return cJSON_IsNumber(t) ? t->valuedouble : 0;
}

/* Reads every OUT/shard-*.jsonl for the inputs of jobs, in name order; of two lines of an
 * input with the same time, the later read is kept. */
static void records_read(records *r, const char *outdir)
{
    struct dirent **ents = NULL;
    const int n_ents = scandir(outdir, &ents, NULL, alphasort); /* by name: ties go the same way */
    for (int ei = 0; ei < n_ents; ei++) {
        const char *nm = ents[ei]->d_name;
        size_t l = strlen(nm);
        if (strncmp(nm, "shard-", 6) || l < 12 || strcmp(nm + l - 6, ".jsonl") ||
            strspn(nm + 6, "0123456789") != l - 12)
            continue;
        size_t cap = strlen(outdir) + l + 2;
        char *path = malloc(cap);
        index_lines x;
        if (!path || (snprintf(path, cap, "%s/%s", outdir, nm), index_read(path, &x))) {
            free(path);
            continue;
        }
        strcpy(path + strlen(path) - 6, ".tar");
        const int has_tar = tar_at(path) == 1; /* "ok" lines hold only with their tar */
        for (int i = 0; i < x.n; i++) {
            size_t v, kl;
            char *key = line_key(x.line[i], &kl);
            const int mine = key && ws_strmap_get(r->inputs, key, kl, &v);
            free(key);
            if (!mine || (line_ok(x.line[i]) && !has_tar))
                continue;
            const double t = line_time(x.line[i]);
            if (r->best[v] && t < r->best_t[v])
                continue;
            cJSON_Delete(r->best[v]);
            free(r->best_tar[v]);
            r->best[v] = x.line[i];
            r->best_t[v] = t;
            r->best_tar[v] = strdup(path);
            x.line[i] = NULL;
        }
        index_free(&x);
        free(path);
    }
    for (int ei = 0; ei < n_ents; ei++)
        free(ents[ei]);
    free(ents);
}

static void set_str(cJSON *o, const char *key, const char *v)
{
    cJSON *x = cJSON_CreateString(v);
    if (x && cJSON_GetObjectItemCaseSensitive(o, key))
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, x);
    else if (x)
        cJSON_AddItemToObject(o, key, x);
}

/* j is decided by its record rec (taken), of the tar at tar (its output, as this run names
 * it): skipped when "ok", else failed again with the recorded error. It leaves its shard
 * (reported alone; its line is made from rec by manifest.c, with "shard" its output). */
static void decide_by_record(ws_job *j, cJSON *rec, const char *tar)
{
    j->rec = rec;
    j->shard = -1;
    set_str(rec, "output", tar); /* j->output lives in rec */
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(rec, "output");
    j->output = cJSON_IsString(o) ? o->valuestring : NULL; /* lives as long as j->rec */
    if (line_ok(rec)) {
        j->skipped = 1;
        return;
    }
    const cJSON *e = cJSON_GetObjectItem(rec, "error");
    free(j->error);
    j->error = strdup(cJSON_IsString(e) ? e->valuestring : "failed (recorded without a message)");
}

/* Whether the shard at a (AT_SAME, for the whole slice) is complete and made with this
 * run's settings. (The outputs it holds otherwise are counted as redone where each input's
 * redo is decided, in ws_shards_plan.) */
static int complete(const ws_run_ctx *c, const at_shard *a, ws_job *const *set)
{
    if (!a->has_tar || !a->has_index)
        return 0;
    for (int i = 0; i < a->idx.n; i++)
        if (line_ok(a->idx.line[i]) &&
            (ws_provenance_diff(c->provenance, cJSON_GetObjectItem(a->idx.line[i], "provenance")) ||
             ws_segment_diff(set[i]->seg, a->idx.line[i])))
            return 0;
    return 1;
}

int ws_shards_plan(const ws_run_ctx *c, ws_job *jobs, int n)
{
    struct ws_shard *shs = c->shards;
    const int n_sh = n > 0 ? jobs[n - 1].shard + 1 : 0;
    ws_job **set = malloc(sizeof *set * (size_t)(n > 0 ? n : 1));
    records r = {0};
    unsigned *no_record = NULL; /* per job: in a tar of an older run, without an index */
    if (!set)
        return -1;
    g_warned = ws_strmap_new();
    if (c->skip_existing) {
        r.inputs = ws_strmap_new();
        r.best = calloc((size_t)n + 1, sizeof *r.best);
        r.best_t = calloc((size_t)n + 1, sizeof *r.best_t);
        r.best_tar = calloc((size_t)n + 1, sizeof *r.best_tar);
        no_record = calloc((size_t)n + 1, sizeof *no_record);
    }
    for (int k = 0; k < n_sh; k++) {
        struct ws_shard *sh = &shs[k];
        for (int i = 0; i < sh->n; i++)
            set[i] = &sh->jobs[i];
        at_shard a = {AT_FREE, 0, 0, {NULL, 0}, 0};
        long long m = c->skip_existing ? probe(sh, set, sh->n, &a) : -1;
        if (m >= 0 && a.what == AT_SAME) {
            char *tar = complete(c, &a, set) ? shard_path(sh, m, "tar") : NULL;
            if (tar) {
                for (int i = 0; i < sh->n; i++) {
                    decide_by_record(&sh->jobs[i], a.idx.line[i], tar);
                    a.idx.line[i] = NULL;
                }
                free(tar);
                index_free(&a.idx);
                continue;
            }
            const int older = a.has_tar && !a.has_index && a.members_all;
            for (int i = 0; no_record && older && i < sh->n; i++)
                no_record[(size_t)(sh->jobs - jobs) + (size_t)i] = 1u << WS_REDO_NO_RECORD;
        }
        index_free(&a.idx);
        for (int i = 0; r.inputs && i < sh->n; i++) {
            const ws_job *j = &sh->jobs[i];
            size_t kl;
            char *key = rec_key(j->input, j->seg ? j->seg->id : NULL, &kl);
            if (key)
                ws_strmap_put(r.inputs, key, kl, (size_t)(j - jobs), NULL);
            free(key);
        }
    }
    if (r.inputs && r.best && r.best_t && r.best_tar)
        records_read(&r, shs[0].outdir);
    for (int k = 0; k < n_sh; k++) {
        struct ws_shard *sh = &shs[k];
        int g = 0;
        for (int i = 0; i < sh->n; i++) {
            ws_job *j = &sh->jobs[i];
            const size_t v = (size_t)(j - jobs);
            if (j->shard < 0) /* decided above */
                continue;
            /* its newest record decides: skipped, or redone (counted here, once an input) */
            if (r.best && r.best[v] && line_ok(r.best[v])) {
                unsigned diff = ws_provenance_diff(c->provenance,
                                                   cJSON_GetObjectItem(r.best[v], "provenance")) |
                                ws_segment_diff(j->seg, r.best[v]);
                if (!diff) {
                    decide_by_record(j, r.best[v], r.best_tar[v]);
                    r.best[v] = NULL;
                    continue;
                }
                ws_run_redo_note(diff, 1);
            } else if (no_record && no_record[v]) {
                ws_run_redo_note(no_record[v], 1);
            }
            set[g++] = j;
        }
        sh->given = sh->left = g;
        if (g == 0)
            continue;
        at_shard a;
        long long m = probe(sh, set, g, &a);
        index_free(&a.idx);
        if (m < 0 || !(sh->path = shard_path(sh, m, "tar"))) {
            sh->error = strdup(m < 0 ? "no free shard number" : "out of memory");
            continue;
        }
        for (int i = 0; i < g; i++)
            if (set[i]->member) /* the others have no output name: they fail */
                set[i]->output = sh->path;
    }
    for (int i = 0; r.best && i <= n; i++) {
        cJSON_Delete(r.best[i]);
        free(r.best_tar[i]);
    }
    free(r.best);
    free(r.best_t);
    free(r.best_tar);
    free(no_record);
    ws_strmap_free(r.inputs);
    ws_strmap_free(g_warned);
    g_warned = NULL;
    free(set);
    return 0;
}

/* --- members, commit, index ------------------------------------------------------------ */

/* j's members KEY.npy (the array, as a .npy file) and KEY.json (its manifest line) into
 * its shard, which is opened at the first one. 0, or -1 with e (the shard has failed). */
int ws_shard_write_member(const ws_run_ctx *c, ws_job *j, ws_err *e)
{
    struct ws_shard *sh = &c->shards[j->shard];
    size_t count = 1;
    for (int i = 0; i < j->ndim; i++)
        count *= (size_t)j->shape[i];
    const size_t esz = c->out_dtype == WS_OUT_F16 ? 2 : sizeof(float);
    ws_run_to_f16(c, j, count);
    char header[256], name[WS_TAR_NAME_MAX + 1];
    const size_t hl = ws_npy_header_dtype(header, sizeof header, j->shape, j->ndim, c->out_dtype);
    if (!hl)
        return ws_errf(e, "shape too long for a .npy header");
    j->ok = 1; /* the line the member holds says what the manifest will */
    char *json = ws_job_line(c, j);
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

/* OUT/shard-NNNNNN.tar's index OUT/shard-NNNNNN.jsonl (malloc'd), or NULL. */
static char *index_path(const struct ws_shard *sh)
{
    const size_t pl = strlen(sh->path);
    char *path = malloc(pl + 3);
    if (path)
        snprintf(path, pl + 3, "%.*s.jsonl", (int)(pl - 4), sh->path);
    return path;
}

/* The index beside sh's tar: one line per given input, in list order, its final status. */
static void write_index(const ws_run_ctx *c, struct ws_shard *sh)
{
    size_t cap = 0, len = 0;
    char *text = NULL;
    int oom = 0;
    for (int k = 0; k < sh->n && !oom; k++) {
        const ws_job *m = &sh->jobs[k];
        if (m->shard < 0)
            continue;
        char *line = ws_job_line(c, m);
        size_t l = line ? strlen(line) : 0;
        if (line && len + l + 1 > cap) {
            size_t nc = (len + l + 1) * 2;
            char *t = realloc(text, nc);
            if (t) {
                text = t;
                cap = nc;
            }
        }
        if (!line || len + l + 1 > cap) {
            oom = 1;
        } else {
            memcpy(text + len, line, l);
            text[len + l] = '\n';
            len += l + 1;
        }
        free(line);
    }
    char *path = index_path(sh);
    ws_err e = {{0}};
    if (oom || !path)
        ws_eprintf("whisper-stem: %s: out of memory for its index", sh->path);
    else if (ws_write_file_atomic(path, text, len, &e))
        ws_eprintf("whisper-stem: %s", e.msg);
    free(path);
    free(text);
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
    int rc = 0, committed = 0;
    char *idx = sh->path ? index_path(sh) : NULL;
    if (sh->t && sh->written && !sh->error) {
        /* the old index goes before the new tar is named: a kill between the two leaves a
         * tar without an index (its inputs made again), never another run's index */
        WS_RANGE_PUSH("write");
        if (!idx)
            rc = ws_errf(&e, "%s: out of memory for its index", sh->path);
        else if ((rc = ws_record_remove(idx, &e)) != 0)
            ws_tar_abort(sh->t);
        else
            rc = ws_tar_commit(sh->t, &e);
        committed = !rc;
        WS_RANGE_POP();
    } else {
        ws_tar_abort(sh->t);
    }
    sh->t = NULL;
    for (int k = 0; k < sh->n; k++) {
        ws_job *m = &sh->jobs[k];
        if (m->shard >= 0 && (rc || sh->error) && m->ok)
            ws_run_fail(m, "%s: %s", m->input, rc ? e.msg : sh->error);
    }
    /* the index says what the tar holds: written beside a tar just committed only. A shard
     * none of whose inputs was written leaves nothing, and its inputs are tried again by the
     * next run, as in file mode (a rerun converges: it writes nothing new); beside an earlier
     * run's tar, left over after a failure (a full disk, an I/O error), an index of failures
     * would be taken as that tar's and the failures replayed forever: no index there */
    if (idx && committed) {
        write_index(c, sh);
    } else if (idx) {
        ws_err e2 = {{0}};
        if (ws_record_remove(idx, &e2))
            ws_eprintf("whisper-stem: %s", e2.msg);
    }
    free(idx);
    for (int k = 0; k < sh->n; k++)
        if (sh->jobs[k].shard >= 0)
            ws_run_report_one(c, &sh->jobs[k]);
}

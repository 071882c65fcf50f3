/* run.c - inputs to outputs, overlapped across files, in bounded memory (see run.h).
 *
 * A job moves through states under one mutex:
 *   NEW -> PREP (a worker decodes and computes the log-Mel) -> PREPPED
 *       -> STEM (the calling thread runs the stem) -> STEMMED
 *       -> WRITE (a worker writes the output, or finishes a streamed one) -> DONE
 * A failure at any stage goes straight to DONE with the job's error set.
 * Workers prefer writing (it frees memory) over preparing. The stem takes
 * the prepared job with the lowest index, not strictly the next one: an
 * input that blocks (a FIFO whose writer has not come yet) holds one worker
 * and nothing else. FFTW's plan, the model and the stems are shared
 * read-only by the workers; only the calling thread touches the GPU context
 * and the CPU stem's buffers.
 *
 * Memory. Each job reserves, before it allocates, the bytes it will hold at
 * its peak (job_need: the decoder's buffers, then the 16 kHz samples with
 * the log-Mel being made, then the log-Mel with the embeddings); the
 * decoder asks as soon as the header tells the length, and again as a
 * stream of unknown length grows. Reservations of all jobs together stay
 * under max_memory: a job waits while others that will finish hold memory,
 * and an input that alone needs more than max_memory fails with one line
 * saying so. Embeddings of a long input are not held whole: they are
 * computed and written STREAM_BYTES (or max_memory / 8) at a time into the
 * output file, which
 * is named only when complete (output.h).
 * Validated by tests/test_cli.c (many_inputs_give_the_same_bytes_as_one_per_run,
 * memory bound and streamed output tests).
 */
#include "run.h"

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
#include "signals.h"
#include "strmap.h"
#include "tar.h"
#include "trace.h"

enum { NEW, PREP, PREPPED, STEM, STEMMED, WRITE, DONE };

/* Embeddings of one input are computed and written at most this many bytes
 * at a time (whole windows, at least one): 29 windows of tiny, 8 of large-v3. */
#define STREAM_BYTES ((size_t)64 << 20)

ws_job *ws_jobs_new(int n, char *const *inputs, char *const *outputs)
{
    ws_job *j = calloc((size_t)(n > 0 ? n : 1), sizeof *j);
    for (int i = 0; j && i < n; i++) {
        j[i].input = inputs[i];
        j[i].output = outputs[i];
        j[i].shard = -1;
        j[i].slot = -1;
    }
    return j;
}

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

/* j's members KEY.npy (the array, as a .npy file) and KEY.json (its manifest line) into
 * its shard, which is opened at the first one. 0, or -1 with e (the shard has failed). */
static int write_member(const ws_run_ctx *c, ws_job *j, ws_err *e)
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

static void release(ws_job *j)
{
    ws_audio_free(&j->audio);
    if (j->result != j->mel.data && !j->result_pinned)
        free(j->result);
    j->result = NULL;
    j->result_pinned = 0;
    ws_mel_out_free(&j->mel);
    ws_out_abort(j->out);
    j->out = NULL;
}

void ws_jobs_free(ws_job *jobs, int n)
{
    for (int i = 0; jobs && i < n; i++) {
        release(&jobs[i]);
        free(jobs[i].error);
        free(jobs[i].slabs); /* slabs not given back: the batcher frees them all */
    }
    free(jobs);
}

static int fail(ws_job *j, const char *fmt, const char *a, const char *b)
{
    char msg[WS_ERR_LEN + 4096];
    snprintf(msg, sizeof msg, fmt, a, b);
    free(j->error);
    j->error = strdup(msg);
    release(j);
    j->ok = 0;
    return -1;
}

/* --- memory ---------------------------------------------------------------- */

typedef struct {
    pthread_mutex_t *mu; /* NULL: one job, nobody to wait for */
    pthread_cond_t *cv;
    size_t budget, held, held_waiting;
} mem_acct;

/* Embedding windows computed and written at once: STREAM_BYTES, or an
 * eighth of the memory bound when that is less. */
static int chunk_windows(const ws_run_ctx *c)
{
    size_t per = (size_t)ws_stem_out_len(WS_CHUNK_FRAMES) * (size_t)c->model->d * sizeof(float);
    size_t bytes = c->max_memory / 8 < STREAM_BYTES ? c->max_memory / 8 : STREAM_BYTES;
    size_t w = bytes / per;
    return w < 1 ? 1 : w > 4096 ? 4096 : (int)w;
}

/* Peak bytes one input of n samples at 16 kHz holds, given the decoder's own
 * peak (mel.c: a [frames][n_mels] buffer and the windows; SIZE_MAX on overflow). */
static size_t job_need(const ws_run_ctx *c, const ws_job *j, size_t decoder_bytes, size_t n)
{
    const double f = sizeof(float), nm = c->n_mels;
    double total = c->pad == WS_PAD_AUDIO  ? (n / WS_CHUNK_SAMPLES + 1.0) * WS_CHUNK_SAMPLES
                   : c->pad == WS_PAD_MEL0 ? (double)n + WS_CHUNK_SAMPLES
                                           : (double)n;
    double frames = total / WS_HOP, content = (double)(n / WS_HOP);
    double windows = c->pad == WS_PAD_NONE ? 1 : content / WS_CHUNK_FRAMES + 1;
    double win_frames = c->pad == WS_PAD_NONE ? content : WS_CHUNK_FRAMES;
    double mel = windows * nm * win_frames * f;
    double mel_peak = (double)n * f + frames * nm * f + mel;
    double out = 0;
    if (!c->mel_only) {
        double w = windows < chunk_windows(c) || j->special ? windows : chunk_windows(c);
        out = w * ws_stem_out_len((int)(win_frames < 1 ? 1 : win_frames)) * c->model->d * f;
    }
    double need = (double)decoder_bytes;
    if (mel_peak > need)
        need = mel_peak;
    if (mel + out > need)
        need = mel + out;
    return need >= (double)SIZE_MAX ? SIZE_MAX : (size_t)need;
}

static void fmt_mib(char *buf, size_t cap, size_t bytes)
{
    snprintf(buf, cap, "%.0f MiB", (double)bytes / (1 << 20));
}

/* Raises j's reservation to need bytes: waits while the others hold too much
 * and some of them will free it without waiting themselves; fails when need
 * alone is over the budget. When every holder is itself waiting (streams of
 * unknown length growing at once), the first to wake goes on past the bound
 * rather than stalling the run: the total then stays under twice the bound. */
static int reserve(mem_acct *m, ws_job *j, size_t need, size_t samples, ws_err *err)
{
    if (need <= j->reserved)
        return 0;
    if (need > m->budget) {
        char a[32], b[32];
        fmt_mib(a, sizeof a, need);
        fmt_mib(b, sizeof b, m->budget);
        if (samples == 0) /* a stream still being read: its length is not known yet */
            return ws_errf(err, "%s: more than %s of input to hold, over the memory bound of %s "
                                "(--max-memory)", j->input, b, b);
        return ws_errf(err,
                       "%s: %.1f min of audio needs about %s at once, over the memory bound of "
                       "%s (--max-memory)",
                       j->input, samples / (double)WS_SAMPLE_RATE / 60.0, a, b);
    }
    size_t delta = need - j->reserved;
    if (m->mu) {
        pthread_mutex_lock(m->mu);
        m->held_waiting += j->reserved;
        while (m->held + delta > m->budget && m->held > m->held_waiting)
            pthread_cond_wait(m->cv, m->mu);
        m->held_waiting -= j->reserved;
        m->held += delta;
        pthread_mutex_unlock(m->mu);
    }
    j->reserved = need;
    return 0;
}

/* Called with m->mu held (or with no mutex). */
static void unreserve(mem_acct *m, ws_job *j)
{
    if (m->mu)
        m->held -= j->reserved;
    j->reserved = 0;
}

typedef struct {
    const ws_run_ctx *c;
    mem_acct *mem;
    ws_job *j;
} reserve_ctx;

static int reserve_for_audio(void *ctx, size_t decoder_bytes, size_t samples_16k, ws_err *err)
{
    reserve_ctx *r = ctx;
    return reserve(r->mem, r->j, job_need(r->c, r->j, decoder_bytes, samples_16k), samples_16k, err);
}

/* --- stages ---------------------------------------------------------------- */

/* What a GPU batch takes of j (gpu_batch.h). */
static ws_gpu_input job_input(const ws_run_ctx *c, const ws_job *j)
{
    ws_gpu_input in = {.slabs = j->slabs, .n_win = j->mel.n_windows, .win_frames = j->mel.n_frames};
    if (c->mel_on_gpu) {
        in.x = j->slabs ? NULL : j->audio.x;
        in.n = j->samples;
        in.n_total = j->geom.n_total;
        in.n_frames = (uint64_t)j->geom.n_frames;
        in.content = (uint64_t)j->geom.content;
    } else {
        in.mel = j->slabs ? NULL : j->mel.data;
    }
    return in;
}

/* Copies j's upload (bytes at src) into pinned slabs when it will go in a batch and
 * slabs are free (the stem thread then need not copy it). */
static void stage(const ws_run_ctx *c, ws_job *j, const void *src, size_t bytes)
{
    if (!c->batcher)
        return;
    ws_gpu_input in = job_input(c, j);
    if (!ws_gpu_batch_fits(c->batcher, &in) || !bytes)
        return;
    WS_RANGE_PUSH("stage");
    double t0 = ws_now();
    if ((j->slabs = ws_gpu_stage(c->batcher, bytes, &j->n_slabs)))
        ws_gpu_stage_copy(c->batcher, j->slabs, src, bytes);
    j->ms.stage = 1e3 * (ws_now() - t0);
    WS_RANGE_POP();
}

static void unstage(const ws_run_ctx *c, ws_job *j)
{
    if (j->slabs)
        ws_gpu_unstage(c->batcher, j->slabs, j->n_slabs);
    j->slabs = NULL;
    j->n_slabs = 0;
}

/* decode + log-Mel on mel_threads threads */
static int prep(const ws_run_ctx *c, mem_acct *mem, ws_job *j, int mel_threads)
{
    ws_err e = {{0}};
    double t0 = ws_now();
    struct stat st;
    if (!j->output)
        return fail(j, "%s: %s", j->input, j->why ? j->why : "no output name");
    const int exists = strcmp(j->output, "-") && stat(j->output, &st) == 0;
    if (j->shard >= 0) { /* decided for the whole shard, by what its file holds */
        struct ws_shard *sh = &c->shards[j->shard];
        pthread_mutex_lock(&sh->mu);
        shard_look(c, sh);
        const int state = sh->state;
        pthread_mutex_unlock(&sh->mu);
        if (state == SHARD_REFUSED)
            return fail(j, "%s: %s", j->input, sh->refused ? sh->refused : "shard not replaced");
        if (state == SHARD_COMPLETE) {
            j->skipped = 1;
            return 1;
        }
    } else if (c->skip_existing && exists && S_ISREG(st.st_mode)) {
        j->skipped = 1; /* outputs appear whole or not at all: this one is complete */
        return 1;
    }
    /* a FIFO or device, or a tar member: held whole, never streamed */
    j->special = (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) || j->shard >= 0;
    reserve_ctx rc_ = {c, mem, j};
    ws_audio_opts ao = {.max_stream_bytes = mem->budget, .reserve = reserve_for_audio,
                        .reserve_ctx = &rc_};
    WS_RANGE_PUSH("decode");
    int rc = ws_audio_load_opts(&j->audio, j->input, &ao, &e);
    WS_RANGE_POP();
    j->ms.decode = 1e3 * (ws_now() - t0);
    if (rc)
        return fail(j, "%s%s", e.msg, "");
    j->decoded = 1;
    j->src_rate = j->audio.src_rate;
    j->src_channels = j->audio.src_channels;
    j->samples = j->audio.n;
    /* the length is known now, whatever the header said */
    if (reserve(mem, j, job_need(c, j, 0, j->audio.n), j->audio.n, &e))
        return fail(j, "%s%s", e.msg, "");
    t0 = ws_now();
    if (c->mel_on_gpu) { /* the shape now, the numbers on the GPU */
        if (ws_mel_geometry(j->audio.n, c->pad, &j->geom, &e))
            return fail(j, "%s: %s", j->input, e.msg);
        j->mel.n_windows = j->geom.n_win;
        j->mel.n_mels = c->n_mels;
        j->mel.n_frames = j->geom.win_frames;
        stage(c, j, j->audio.x, j->audio.n * sizeof(float));
        if (j->slabs)
            ws_audio_free(&j->audio);
    } else {
        WS_RANGE_PUSH("mel");
        rc = ws_mel_compute_nt(c->mel, j->audio.x, j->audio.n, c->pad, mel_threads, &j->mel, &e);
        WS_RANGE_POP();
        j->ms.mel = 1e3 * (ws_now() - t0);
        ws_audio_free(&j->audio); /* the samples are not needed past the log-Mel */
        if (rc)
            return fail(j, "%s: %s", j->input, e.msg);
        if (c->batcher) {
            stage(c, j, j->mel.data, (size_t)j->mel.n_windows * j->mel.n_mels * j->mel.n_frames *
                                         sizeof(float));
            if (j->slabs) {
                free(j->mel.data);
                j->mel.data = NULL;
            }
        }
    }
    j->windows = j->mel.n_windows;
    /* frames of audio in the last window, and the output rows that see them (conv2:
     * stride 2, so row u covers frames 2u-1 .. 2u+1) */
    const long long content = (long long)(j->samples / WS_HOP);
    long long last = c->pad == WS_PAD_NONE ? content
                                           : content - (long long)WS_CHUNK_FRAMES * (j->windows - 1);
    j->content_frames = (int)(last < 0 ? 0 : last > j->mel.n_frames ? j->mel.n_frames : last);
    j->valid_ctx = (j->content_frames + 1) / 2;
    return 0;
}

/* Windows [w0, w0 + nw) of j's log-Mel through the stem into out. */
static int stem_windows(const ws_run_ctx *c, const ws_job *j, int w0, int nw, float *out, ws_err *e)
{
    const ws_mel_out *mo = &j->mel;
    const float *mel = mo->data + (size_t)w0 * mo->n_mels * mo->n_frames;
    return ws_stem_run(c->stem, mel, nw, mo->n_frames, c->add_pos, out, e);
}

/* j's shape (stem: [n_win] x t_out x d, --mel: [n_win] x n_mels x frames). */
static void set_shape(const ws_run_ctx *c, ws_job *j)
{
    j->ndim = 0;
    if (j->mel.n_windows > 1)
        j->shape[j->ndim++] = j->mel.n_windows;
    if (c->mel_only) {
        j->shape[j->ndim++] = j->mel.n_mels;
        j->shape[j->ndim++] = j->mel.n_frames;
    } else {
        j->shape[j->ndim++] = ws_stem_out_len(j->mel.n_frames);
        j->shape[j->ndim++] = c->model->d;
    }
}

/* The conv stem, or nothing with --mel; sets result (or, for a long input,
 * writes the embeddings into j->out piece by piece) and the shape. */
static int stem(const ws_run_ctx *c, ws_job *j)
{
    const ws_mel_out *mo = &j->mel;
    set_shape(c, j);
    if (c->mel_only) {
        j->result = mo->data;
        return 0;
    }
    const int d = c->model->d, t_out = ws_stem_out_len(mo->n_frames);
    const size_t per = (size_t)t_out * d;
    const int cw = chunk_windows(c), n_win = mo->n_windows;
    /* not into a FIFO or device: the stem thread must never wait for its reader */
    const int streamed = n_win > cw && !j->special;
    const int nw_buf = streamed ? cw : n_win;
    ws_err e = {{0}};
    double t0 = ws_now();
    j->result = malloc(per * (size_t)nw_buf * sizeof(float));
    if (!j->result)
        return fail(j, "%s: out of memory for the embeddings%s", j->input, "");
    if (!streamed) {
        if (stem_windows(c, j, 0, n_win, j->result, &e))
            return fail(j, "%s: %s", j->input, e.msg);
        j->ms.stem = 1e3 * (ws_now() - t0);
        return 0;
    }
    /* A long input: its output file is written as the windows come, and
     * named only when complete (ws_out_commit in the write stage). */
    double t_write = 0;
    if ((c->root && ws_mkdir_parents(j->output, &e)) || !(j->out = ws_out_open(j->output, &e)))
        return fail(j, "%s: %s", j->input, e.msg);
    const size_t esz = c->out_dtype == WS_OUT_F16 ? 2 : sizeof(float);
    if (ws_path_is_npy(j->output)) {
        char header[256];
        size_t hl = ws_npy_header_dtype(header, sizeof header, j->shape, j->ndim, c->out_dtype);
        if (!hl || ws_out_write(j->out, header, hl, &e))
            return fail(j, "%s: %s", j->input, hl ? e.msg : "shape too long for a .npy header");
    }
    for (int w0 = 0; w0 < n_win; w0 += cw) {
        int nw = n_win - w0 < cw ? n_win - w0 : cw;
        if (stem_windows(c, j, w0, nw, j->result, &e))
            return fail(j, "%s: %s", j->input, e.msg);
        double tw = ws_now();
        WS_RANGE_PUSH("write");
        if (c->out_dtype == WS_OUT_F16)
            ws_f32_to_f16_inplace(j->result, per * (size_t)nw);
        int rc = ws_out_write(j->out, j->result, per * (size_t)nw * esz, &e);
        WS_RANGE_POP();
        t_write += ws_now() - tw;
        if (rc)
            return fail(j, "%s: %s", j->input, e.msg);
    }
    free(j->result);
    j->result = NULL;
    ws_mel_out_free(&j->mel); /* the embeddings are in the file: nothing else is needed */
    j->ms.stem = 1e3 * (ws_now() - t0 - t_write);
    j->ms.write = 1e3 * t_write;
    return 0;
}

/* j's staged upload back into malloc'd memory (the batches shrank after it was staged):
 * the pointer, or NULL when out of memory. The slabs are given back. */
static void *unstage_back(const ws_run_ctx *c, ws_job *j, size_t bytes)
{
    char *dst = malloc(bytes ? bytes : 1);
    if (dst)
        ws_gpu_stage_read(c->batcher, j->slabs, dst, bytes);
    unstage(c, j);
    return dst;
}

/* An input that fits no GPU batch (longer than a batch holds, or --no-pad beyond
 * 30 s): its log-Mel on the GPU alone when the log-Mel runs there, then stem() as for
 * one input (its windows in pieces, streamed to its file). */
static int stem_alone(const ws_run_ctx *c, ws_job *j)
{
    const size_t mel_n = (size_t)j->mel.n_windows * j->mel.n_mels * j->mel.n_frames;
    if (!c->mel_on_gpu) {
        if (j->slabs && !(j->mel.data = unstage_back(c, j, mel_n * sizeof(float))))
            return fail(j, "%s: out of memory for its log-Mel%s", j->input, "");
        return stem(c, j);
    }
    ws_err e = {{0}};
    double t0 = ws_now();
    ws_gpu_input in = job_input(c, j);
    float *x = j->audio.x, *copy = NULL;
    if (j->slabs && !(x = copy = unstage_back(c, j, (size_t)j->samples * sizeof(float))))
        return fail(j, "%s: out of memory for its samples%s", j->input, "");
    in.x = x;
    in.slabs = NULL;
    j->mel.data = malloc(mel_n * sizeof(float));
    int rc = j->mel.data ? ws_gpu_mel_alone(c->batcher, &in, j->mel.data, &e)
                         : ws_errf(&e, "out of memory for the log-Mel");
    free(copy);
    ws_audio_free(&j->audio);
    j->ms.mel = 1e3 * (ws_now() - t0);
    if (rc)
        return fail(j, "%s: %s", j->input, e.msg);
    return stem(c, j);
}

static int write_out(const ws_run_ctx *c, ws_job *j)
{
    ws_err e = {{0}};
    double t0 = ws_now();
    WS_RANGE_PUSH("write");
    int rc;
    if (j->out) { /* streamed by the stem: flush and name it */
        rc = ws_out_commit(j->out, &e);
        j->out = NULL;
    } else if (j->shard >= 0) {
        rc = write_member(c, j, &e);
    } else {
        size_t count = 1;
        for (int i = 0; i < j->ndim; i++)
            count *= (size_t)j->shape[i];
        if (c->out_dtype == WS_OUT_F16 && !j->result_f16)
            ws_f32_to_f16_inplace(j->result, count);
        rc = (c->root && ws_mkdir_parents(j->output, &e)) ||
             ws_write_array_dtype(j->output, j->result, c->out_dtype, j->shape, j->ndim, &e);
    }
    WS_RANGE_POP();
    j->ms.write += 1e3 * (ws_now() - t0);
    if (rc)
        return fail(j, "%s: %s", j->input, e.msg);
    j->ok = 1;
    release(j);
    return 0;
}

cJSON *ws_job_json(const ws_run_ctx *c, const ws_job *j)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "input", j->input);
    if (j->output)
        cJSON_AddStringToObject(o, "output", j->output);
    else
        cJSON_AddNullToObject(o, "output");
    if (j->member) {
        char m[WS_TAR_NAME_MAX + 8];
        snprintf(m, sizeof m, "%s.npy", j->member);
        cJSON_AddStringToObject(o, "member", m);
    }
    cJSON_AddStringToObject(o, "status", j->ok ? "ok" : j->skipped ? "skipped" : "failed");
    if (j->ok || j->skipped)
        cJSON_AddNullToObject(o, "error");
    else
        cJSON_AddStringToObject(o, "error", j->error ? j->error : "(no message: out of memory)");
    if (j->ok) {
        cJSON *a = cJSON_AddArrayToObject(o, "shape");
        for (int i = 0; i < j->ndim; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)j->shape[i]));
        cJSON_AddStringToObject(o, "dtype", c->out_dtype == WS_OUT_F16 ? "float16" : "float32");
    }
    if (j->decoded) {
        cJSON_AddNumberToObject(o, "sample_rate", j->src_rate);
        cJSON_AddNumberToObject(o, "channels", j->src_channels);
        cJSON_AddNumberToObject(o, "samples", (double)j->samples);
        cJSON_AddNumberToObject(o, "duration_s", j->samples / (double)WS_SAMPLE_RATE);
    }
    if (j->ok) {
        cJSON_AddNumberToObject(o, "windows", j->windows);
        cJSON_AddNumberToObject(o, "content_frames", j->content_frames);
        if (!c->mel_only)
            cJSON_AddNumberToObject(o, "valid_ctx", j->valid_ctx);
    }
    return o;
}

static int g_manifest_lost; /* lines not written (under the pipeline's lock) */

int ws_run_manifest_lost(void)
{
    return g_manifest_lost;
}

typedef struct {
    int fd;
    const char *line;
    size_t n;
    int err; /* errno, or -1 for a short write */
} line_write;

static int write_line(void *ctx)
{
    line_write *w = ctx;
    size_t off = 0;
    while (off < w->n) {
        ssize_t k = write(w->fd, w->line + off, w->n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->err = k < 0 ? errno : -1;
            return -1;
        }
        off += (size_t)k;
    }
    return 0;
}

/* One line to the manifest, in one write(2) under the signal lock (a terminating signal
 * waits for it): a kill leaves whole lines only. */
static void manifest_line(const ws_run_ctx *c, const ws_job *j)
{
    cJSON *o = ws_job_json(c, j);
    char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    size_t n = txt ? strlen(txt) : 0;
    char *line = txt ? realloc(txt, n + 2) : NULL;
    if (!line) {
        free(txt);
        g_manifest_lost++;
        ws_eprintf("whisper-stem: --manifest %s: out of memory for the line of %s", c->manifest,
                   j->input);
        return;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    line_write w = {c->manifest_fd, line, n + 1, 0};
    if (ws_temp_locked(write_line, &w)) {
        g_manifest_lost++;
        ws_eprintf("whisper-stem: --manifest %s: the line of %s: %s", c->manifest, j->input,
                   w.err > 0 ? strerror(w.err) : "short write");
    }
    free(line);
}

static void report_one(const ws_run_ctx *c, const ws_job *j)
{
    if (j->skipped)
        ws_progress_skipped();
    else
        ws_progress_done(j->ok);
    ws_progress_job(j->ok ? WS_PROGRESS_OK : j->skipped ? WS_PROGRESS_SKIPPED : WS_PROGRESS_FAILED,
                    j->ok ? j->samples / (double)WS_SAMPLE_RATE : 0);
    ws_progress_hold(); /* the terminal's progress line cleared, kept off until release */
    if (c->manifest_fd >= 0)
        manifest_line(c, j);
    if (!j->ok && !j->skipped)
        ws_eprintf("whisper-stem: %s", j->error ? j->error : "(no message: out of memory)");
    else if (c->verbose && j->ok)
        ws_eprintf("whisper-stem: %s -> %s: %.2f s of audio, %d window%s; decode %.1f ms, "
                   "mel %.1f ms, stem %.1f ms, write %.1f ms",
                   j->input, j->output, j->samples / (double)WS_SAMPLE_RATE, j->windows,
                   j->windows == 1 ? "" : "s", j->ms.decode, j->ms.mel, j->ms.stem, j->ms.write);
    ws_progress_release();
}

/* Called once per job, with the pipeline's lock held (one at a time). A job of a tar
 * shard is reported when the shard is complete: after its commit, so "ok" in the manifest
 * means the shard is in place; if the commit fails, its written inputs fail with it. */
static void report(const ws_run_ctx *c, ws_job *j)
{
    if (j->shard < 0) {
        report_one(c, j);
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
            fail(m, "%s: %s", m->input, rc ? e.msg : sh->error);
        report_one(c, m);
    }
}

/* --- one input: every stage on this thread --------------------------------- */

static int run_serial(const ws_run_ctx *c, ws_job *jobs, int n)
{
    int failed = 0;
    mem_acct mem = {.budget = c->max_memory};
    for (int i = 0; i < n; i++) {
        ws_job *j = &jobs[i];
        if (prep(c, &mem, j, c->threads) == 0 && (c->batcher ? stem_alone(c, j) : stem(c, j)) == 0)
            write_out(c, j);
        unreserve(&mem, j);
        j->state = DONE;
        report(c, j);
    }
    for (int i = 0; i < n; i++) /* counted at the end: a shard's commit can fail its inputs */
        failed += !jobs[i].ok && !jobs[i].skipped;
    return failed;
}

/* --- many inputs: workers prepare and write, this thread runs the stem ------ */

typedef struct {
    const ws_run_ctx *c;
    ws_job *jobs;
    int n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    mem_acct mem;
    int next_prep;    /* next job to prepare; jobs before it have been taken */
    int inflight;     /* jobs taken and not DONE */
    int max_inflight;
    int low;          /* no job before this one waits for the stem or a write */
    int unstemmed;    /* jobs that will still reach the stem or fail before it */
    int done;
    int preparing;    /* jobs in PREP */
    /* GPU batches (c->batcher): per slot, whether its batch is in flight, how many of its
     * jobs still hold results in its pinned buffer, and its jobs while in flight */
    int *in_flight, *held, *n_slot_jobs;
    ws_job ***slot_jobs;
    int *flight;      /* slots in flight, oldest first */
    int n_flight;
    long batches;
} pipe_state;

static void finish(pipe_state *p, ws_job *j)
{
    if (j->slot >= 0) /* its result is written (or dropped): the slot's buffer is free of it */
        p->held[j->slot]--;
    j->slot = -1;
    j->state = DONE;
    p->done++;
    p->inflight--;
    unreserve(&p->mem, j);
    report(p->c, j);
    pthread_cond_broadcast(&p->cv);
}

/* The first job in state s (jobs before low are DONE or past it); with
 * plain_only, not one whose output is a FIFO or device (opening it may wait). */
static ws_job *first_in(pipe_state *p, int s, int plain_only)
{
    while (p->low < p->next_prep && p->jobs[p->low].state == DONE)
        p->low++;
    for (int i = p->low; i < p->next_prep; i++)
        if (p->jobs[i].state == s && !(plain_only && p->jobs[i].special))
            return &p->jobs[i];
    return NULL;
}

/* Writes w (STEMMED) and finishes it; mu held, released meanwhile. */
static void write_one(pipe_state *p, ws_job *w)
{
    w->state = WRITE;
    pthread_mutex_unlock(&p->mu);
    write_out(p->c, w);
    pthread_mutex_lock(&p->mu);
    finish(p, w);
}

static void worker(void *arg, int ti, int nt)
{
    pipe_state *p = arg;
    (void)ti;
    (void)nt;
    pthread_mutex_lock(&p->mu);
    while (p->done < p->n) {
        ws_job *w = first_in(p, STEMMED, 0);
        if (w) {
            write_one(p, w);
        } else if (p->next_prep < p->n && p->inflight < p->max_inflight &&
                   p->mem.held < p->mem.budget) {
            ws_job *j = &p->jobs[p->next_prep++];
            j->state = PREP;
            p->inflight++;
            p->preparing++;
            pthread_mutex_unlock(&p->mu);
            int rc = prep(p->c, &p->mem, j, p->n == 1 ? p->c->threads : 1);
            pthread_mutex_lock(&p->mu);
            p->preparing--;
            if (rc) {
                p->unstemmed--;
                finish(p, j);
            } else {
                j->state = PREPPED;
            }
            pthread_cond_broadcast(&p->cv);
        } else {
            double t0 = p->c->stats ? ws_now() : 0;
            pthread_cond_wait(&p->cv, &p->mu);
            if (p->c->stats)
                p->c->stats->workers_idle_ms += 1e3 * (ws_now() - t0);
        }
    }
    pthread_mutex_unlock(&p->mu);
}

static void *worker_main(void *arg)
{
    worker(arg, 0, 0);
    return NULL;
}

/* The calling thread runs the stem, then helps with the writes. */
static void stem_loop(pipe_state *p)
{
    pthread_mutex_lock(&p->mu);
    while (p->unstemmed > 0) {
        ws_job *j = first_in(p, PREPPED, 0), *w;
        if (j) {
            j->state = STEM;
            pthread_mutex_unlock(&p->mu);
            int rc = stem(p->c, j);
            pthread_mutex_lock(&p->mu);
            p->unstemmed--;
            if (rc)
                finish(p, j);
            else
                j->state = STEMMED;
            pthread_cond_broadcast(&p->cv);
        } else if ((w = first_in(p, STEMMED, 1))) {
            /* Nothing to stem: write, so that memory is freed even while
             * every worker waits for memory or for a slow input. */
            write_one(p, w);
        } else {
            pthread_cond_wait(&p->cv, &p->mu);
        }
    }
    pthread_mutex_unlock(&p->mu);
    worker(p, 0, 0);
}

/* --- many inputs in GPU batches ---------------------------------------------------- */

/* Slot s's batch has completed (e NULL) or failed (e): its jobs get their results (in
 * the slot's pinned buffer, which they hold until written) or the error. mu held. */
static void reap(pipe_state *p, int s, const ws_err *e)
{
    const ws_run_ctx *c = p->c;
    ws_gpu_batcher *b = c->batcher;
    const int k = p->n_slot_jobs[s];
    const double ms = ws_gpu_batch_ms(b, s);
    if (c->stats && !e)
        c->stats->gpu_ms += ms;
    for (int i = 0; i < k; i++) {
        ws_job *j = p->slot_jobs[s][i];
        if (c->stats)
            c->stats->staged += j->slabs != NULL;
        unstage(c, j);
        ws_audio_free(&j->audio);
        ws_mel_out_free(&j->mel); /* the dims stay in j->shape below */
        p->unstemmed--;
        if (e) {
            fail(j, "%s: %s", j->input, e->msg);
            finish(p, j);
            continue;
        }
        size_t bytes = 0;
        const void *res = ws_gpu_batch_output(b, s, i, &bytes);
        j->result_f16 = c->out_dtype == WS_OUT_F16;
        j->ms.stem = ms / k;
        if (j->special && j->shard < 0) {
            /* a FIFO or device: its writer may wait for a reader; a copy, so that it holds
             * no slot meanwhile */
            if (!(j->result = malloc(bytes ? bytes : 1))) {
                j->result_f16 = 0;
                fail(j, "%s: out of memory for the embeddings%s", j->input, "");
                finish(p, j);
                continue;
            }
            memcpy(j->result, res, bytes);
        } else {
            j->result = (float *)res;
            j->result_pinned = 1;
            j->slot = s;
            p->held[s]++;
        }
        j->state = STEMMED;
    }
    int at = 0; /* s is the oldest in flight, or (a failed submission) the newest, or none */
    while (at < p->n_flight && p->flight[at] != s)
        at++;
    if (at < p->n_flight) {
        for (int i = at + 1; i < p->n_flight; i++)
            p->flight[i - 1] = p->flight[i];
        p->n_flight--;
    }
    p->in_flight[s] = 0;
    ws_gpu_batch_clear(b, s);
    pthread_cond_broadcast(&p->cv);
}

/* Waits for the oldest batch in flight, then reaps it. mu held (released meanwhile). */
static void wait_oldest(pipe_state *p)
{
    const int s = p->flight[0];
    ws_err e = {{0}};
    pthread_mutex_unlock(&p->mu);
    double t0 = ws_now();
    int rc = ws_gpu_batch_wait(p->c->batcher, s, &e);
    if (p->c->stats)
        p->c->stats->wait_ms += 1e3 * (ws_now() - t0);
    pthread_mutex_lock(&p->mu);
    reap(p, s, rc ? &e : NULL);
}

static int free_slot(const pipe_state *p, int S)
{
    for (int s = 0; s < S; s++)
        if (!p->in_flight[s] && p->held[s] == 0)
            return s;
    return -1;
}

/* The calling thread fills GPU batches with prepared inputs, lowest index first, keeps
 * up to S in flight, and hands finished ones to the writers; an input that fits no batch
 * goes alone (stem_alone). A batch less than half full waits while another is in flight
 * and more inputs are coming, so that launches stay large. */
static void stem_loop_batched(pipe_state *p)
{
    const ws_run_ctx *c = p->c;
    ws_gpu_batcher *b = c->batcher;
    const int S = ws_gpu_batch_slots(b);
    pthread_mutex_lock(&p->mu);
    while (p->unstemmed > 0 || p->n_flight > 0) {
        if (p->n_flight > 0) { /* the oldest done already? */
            ws_err e = {{0}};
            int d = ws_gpu_batch_done(b, p->flight[0], &e);
            if (d > 0) {
                wait_oldest(p); /* done: only reads its time */
                continue;
            }
            if (d < 0) {
                reap(p, p->flight[0], &e);
                continue;
            }
        }
        ws_job *j = first_in(p, PREPPED, 0), *w;
        const int s = free_slot(p, S);
        if (j && s >= 0) {
            ws_gpu_input in = job_input(c, j);
            if (!ws_gpu_batch_fits(b, &in)) {
                j->state = STEM; /* stem() sets its shape */
                if (c->stats)
                    c->stats->alone++;
                pthread_mutex_unlock(&p->mu);
                int rc = stem_alone(c, j);
                pthread_mutex_lock(&p->mu);
                p->unstemmed--;
                if (rc)
                    finish(p, j);
                else
                    j->state = STEMMED;
                pthread_cond_broadcast(&p->cv);
                continue;
            }
            int k = 0, windows = 0;
            ws_gpu_batch_clear(b, s);
            for (int i = p->low; i < p->next_prep; i++) {
                ws_job *q = &p->jobs[i];
                if (q->state != PREPPED)
                    continue;
                ws_gpu_input qi = job_input(c, q);
                if (!ws_gpu_batch_fits(b, &qi))
                    continue;
                if (!ws_gpu_batch_add(b, s, &qi))
                    break;
                p->slot_jobs[s][k++] = q;
            }
            if (k == 0) { /* not even the first one went in: out of memory */
                unstage(c, j);
                fail(j, "%s: out of memory for a GPU batch%s", j->input, "");
                p->unstemmed--;
                finish(p, j);
                continue;
            }
            ws_gpu_batch_count(b, s, &windows);
            const int coming = p->next_prep < p->n || p->preparing > 0;
            if (p->n_flight > 0 && coming && 2 * windows < ws_gpu_batch_max_windows(b)) {
                ws_gpu_batch_clear(b, s);
                wait_oldest(p);
                continue;
            }
            char label[96];
            snprintf(label, sizeof label, "batch %ld: %d files, %d windows", p->batches, k, windows);
            for (int i = 0; i < k; i++) {
                p->slot_jobs[s][i]->state = STEM;
                set_shape(c, p->slot_jobs[s][i]);
            }
            p->n_slot_jobs[s] = k;
            p->in_flight[s] = 1;
            pthread_mutex_unlock(&p->mu);
            ws_err e = {{0}};
            double t0 = ws_now();
            int rc = ws_gpu_batch_submit(b, s, label, &e);
            pthread_mutex_lock(&p->mu);
            if (c->stats) {
                c->stats->submit_ms += 1e3 * (ws_now() - t0);
                if (rc == 0) {
                    c->stats->batches++;
                    c->stats->windows += windows;
                    c->stats->inputs += k;
                }
            }
            if (rc == WS_BATCH_SHRUNK) { /* out of device memory: smaller batches, again */
                for (int i = 0; i < k; i++)
                    p->slot_jobs[s][i]->state = PREPPED;
                p->in_flight[s] = 0;
                continue;
            }
            p->batches++;
            if (rc)
                reap(p, s, &e);
            else
                p->flight[p->n_flight++] = s;
        } else if (p->n_flight > 0) {
            wait_oldest(p);
        } else if ((w = first_in(p, STEMMED, 1))) {
            write_one(p, w);
        } else {
            pthread_cond_wait(&p->cv, &p->mu);
        }
    }
    pthread_mutex_unlock(&p->mu);
    worker(p, 0, 0);
}

int ws_run(const ws_run_ctx *c, ws_job *jobs, int n)
{
    int threads = c->threads < 1 ? 1 : c->threads;
    /* The CPU stem keeps every thread busy on its own; the GPU stem and
     * --mel leave the cores to decoding, log-Mel and writing. At least two
     * workers: one input that blocks (a FIFO) leaves the other to go on. */
    int n_workers = c->on_gpu || c->mel_only ? threads : (threads + 1) / 2;
    if (n_workers < 2)
        n_workers = 2;
    if (n_workers > n)
        n_workers = n;
    if (n < 1 || (n == 1 && !c->batcher))
        return run_serial(c, jobs, n);
    pipe_state p = {.c = c, .jobs = jobs, .n = n, .max_inflight = 2 * n_workers + 2,
                    .unstemmed = n, .mem = {.budget = c->max_memory}};
    const int S = c->batcher ? ws_gpu_batch_slots(c->batcher) : 0;
    int *slot_ints = NULL;
    if (c->batcher) { /* enough inputs in flight to fill every slot and the next batch */
        const int W = ws_gpu_batch_max_windows(c->batcher);
        if ((S + 1) * W + n_workers > p.max_inflight)
            p.max_inflight = (S + 1) * W + n_workers;
        slot_ints = calloc((size_t)4 * S, sizeof *slot_ints);
        p.slot_jobs = calloc((size_t)S, sizeof *p.slot_jobs);
        for (int s = 0; p.slot_jobs && s < S; s++)
            if (!(p.slot_jobs[s] = malloc((size_t)W * sizeof **p.slot_jobs)))
                break;
        if (!slot_ints || !p.slot_jobs || !p.slot_jobs[S - 1]) {
            ws_eprintf("whisper-stem: out of memory for the GPU batches; inputs run one at a time");
            for (int s = 0; p.slot_jobs && s < S; s++)
                free(p.slot_jobs[s]);
            free(p.slot_jobs);
            free(slot_ints);
            return run_serial(c, jobs, n);
        }
        p.in_flight = slot_ints;
        p.held = slot_ints + S;
        p.n_slot_jobs = slot_ints + 2 * S;
        p.flight = slot_ints + 3 * S;
    }
    pthread_t *tid = malloc((size_t)n_workers * sizeof *tid);
    int started = 0;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    p.mem.mu = &p.mu;
    p.mem.cv = &p.cv;
    for (int i = 0; tid && i < n_workers; i++)
        if (pthread_create(&tid[started], NULL, worker_main, &p) == 0)
            started++;
    if (started == 0) { /* no thread at all: one input after another on this one */
        ws_eprintf("whisper-stem: could not start worker threads; inputs run one at a time");
        free(tid);
        for (int s = 0; s < S; s++)
            free(p.slot_jobs[s]);
        free(p.slot_jobs);
        free(slot_ints);
        pthread_cond_destroy(&p.cv);
        pthread_mutex_destroy(&p.mu);
        return run_serial(c, jobs, n);
    }
    if (started < n_workers)
        ws_eprintf("whisper-stem: could not start all worker threads; %d of %d run", started,
                   n_workers);
    if (c->batcher)
        stem_loop_batched(&p);
    else
        stem_loop(&p);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
    for (int s = 0; s < S; s++)
        free(p.slot_jobs[s]);
    free(p.slot_jobs);
    free(slot_ints);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    int failed = 0;
    for (int i = 0; i < n; i++)
        failed += !jobs[i].ok && !jobs[i].skipped;
    return failed;
}

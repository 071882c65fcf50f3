/* stages.c - one job's stages: decode and log-Mel (prep), the stem (CPU, or a GPU input
 * alone), and the memory each job reserves (run.h "Memory", pipeline.c). */
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
#include "tarin.h"
#include "trace.h"

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

void ws_run_release(ws_job *j)
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
        ws_run_release(&jobs[i]);
        free(jobs[i].error);
        cJSON_Delete(jobs[i].rec);
        free(jobs[i].slabs); /* slabs not given back: the batcher frees them all */
    }
    free(jobs);
}

int ws_run_fail(ws_job *j, const char *fmt, const char *a, const char *b)
{
    char msg[WS_ERR_LEN + 4096];
    snprintf(msg, sizeof msg, fmt, a, b);
    free(j->error);
    j->error = strdup(msg);
    ws_run_release(j);
    j->ok = 0;
    return -1;
}
/* --- memory ---------------------------------------------------------------- */

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
void ws_run_unreserve(mem_acct *m, ws_job *j)
{
    if (m->mu)
        m->held -= j->reserved;
    j->reserved = 0;
}

typedef struct {
    const ws_run_ctx *c;
    mem_acct *mem;
    ws_job *j;
    size_t held; /* bytes the job holds beside the decoder's (a gzip shard's member) */
} reserve_ctx;

static int reserve_for_audio(void *ctx, size_t decoder_bytes, size_t samples_16k, ws_err *err)
{
    reserve_ctx *r = ctx;
    const size_t d = decoder_bytes > SIZE_MAX - r->held ? SIZE_MAX : decoder_bytes + r->held;
    return reserve(r->mem, r->j, job_need(r->c, r->j, d, samples_16k), samples_16k, err);
}

/* A member of a tar shard to 16 kHz: a plain shard's decoded in place; a gzip shard's
 * bytes read into memory at its turn (tarin.h), counted against the memory bound like
 * the decoder's own buffers, then decoded from there. 0, or -1 with e. */
static int load_member(reserve_ctx *rc_, ws_job *j, const ws_audio_opts *ao, ws_err *e)
{
    const ws_tar_src *s = j->src;
    if (s->size == 0)
        return ws_errf(e, "%s: an empty member (no bytes, no audio)", j->input);
    if (!s->gz)
        return ws_audio_load_range(&j->audio, s->shard, s->off, s->size, j->input, ao, e);
    mem_acct *mem = rc_->mem;
    if (s->size > mem->budget || s->size > SIZE_MAX) {
        char a[32], b[32];
        fmt_mib(a, sizeof a, (size_t)(s->size > SIZE_MAX ? SIZE_MAX : s->size));
        fmt_mib(b, sizeof b, mem->budget);
        return ws_errf(e, "%s: the member is %s, over the memory bound of %s (--max-memory): a "
                          "gzip shard's member is held in memory to be decoded", j->input, a, b);
    }
    /* the turn first, then the memory: a member waiting for its turn holds none, so the
     * member before it can always get what the others will free */
    ws_tarin_gz_wait(s->gz, s->turn);
    char *buf = NULL;
    int rc = reserve(mem, j, (size_t)s->size, 0, e);
    if (!rc && !(buf = malloc((size_t)s->size)))
        rc = ws_errf(e, "%s: out of memory for the member's bytes", j->input);
    if (!rc && ws_tarin_gz_read(s->gz, s->off, buf, s->size, e)) {
        char why[WS_ERR_LEN];
        snprintf(why, sizeof why, "%s", e->msg);
        rc = ws_errf(e, "%s: %s", j->input, why);
    }
    ws_tarin_gz_pass(s->gz, s->turn);
    j->gz_passed = 1;
    if (!rc) {
        rc_->held = (size_t)s->size;
        rc = ws_audio_load_memory_opts(&j->audio, buf, (size_t)s->size, j->input, ao, e);
        rc_->held = 0;
    }
    free(buf);
    return rc;
}

/* --- stages ---------------------------------------------------------------- */

/* What a GPU batch takes of j (gpu_batch.h). */
ws_gpu_input ws_run_job_input(const ws_run_ctx *c, const ws_job *j)
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
    ws_gpu_input in = ws_run_job_input(c, j);
    if (!ws_gpu_batch_fits(c->batcher, &in) || !bytes)
        return;
    WS_RANGE_PUSH("stage");
    double t0 = ws_now();
    if ((j->slabs = ws_gpu_stage(c->batcher, bytes, &j->n_slabs)))
        ws_gpu_stage_copy(c->batcher, j->slabs, src, bytes);
    j->ms.stage = 1e3 * (ws_now() - t0);
    WS_RANGE_POP();
}

void ws_run_unstage(const ws_run_ctx *c, ws_job *j)
{
    if (j->slabs)
        ws_gpu_unstage(c->batcher, j->slabs, j->n_slabs);
    j->slabs = NULL;
    j->n_slabs = 0;
}

static int prep(const ws_run_ctx *c, mem_acct *mem, ws_job *j, int mel_threads);

/* decode + log-Mel on mel_threads threads */
int ws_run_prep(const ws_run_ctx *c, mem_acct *mem, ws_job *j, int mel_threads)
{
    const int rc = prep(c, mem, j, mel_threads);
    /* a gzip shard's member whose bytes were not read (skipped, failed before): its turn
     * passes all the same, or the members after it would wait for it forever */
    if (j->src && j->src->gz && !j->gz_passed) {
        ws_tarin_gz_pass(j->src->gz, j->src->turn);
        j->gz_passed = 1;
    }
    return rc;
}

static int prep(const ws_run_ctx *c, mem_acct *mem, ws_job *j, int mel_threads)
{
    ws_err e = {{0}};
    double t0 = ws_now();
    if (!j->output)
        return ws_run_fail(j, "%s: %s", j->input, j->why ? j->why : "no output name");
    const int decided = ws_run_decide(c, j); /* skipped or failed already, or to be made */
    if (decided)
        return decided;
    reserve_ctx rc_ = {c, mem, j, 0};
    ws_audio_opts ao = {.max_stream_bytes = mem->budget, .reserve = reserve_for_audio,
                        .reserve_ctx = &rc_, .decode = c->decode,
                        .start_s = j->seg ? j->seg->start_s : 0,
                        .duration_s = j->seg ? j->seg->duration_s : 0};
    WS_RANGE_PUSH("decode");
    int rc = j->src ? load_member(&rc_, j, &ao, &e) : ws_audio_load_opts(&j->audio, j->input, &ao, &e);
    WS_RANGE_POP();
    j->ms.decode = 1e3 * (ws_now() - t0);
    if (rc && j->seg) /* several segments of one file: which one */
        return ws_run_fail(j, "segment %s: %s", j->seg->id, e.msg);
    if (rc)
        return ws_run_fail(j, "%s%s", e.msg, "");
    j->decoded = 1;
    j->src_rate = j->audio.src_rate;
    j->src_channels = j->audio.src_channels;
    j->samples = j->audio.n;
    /* the length is known now, whatever the header said */
    if (reserve(mem, j, job_need(c, j, 0, j->audio.n), j->audio.n, &e))
        return ws_run_fail(j, "%s%s", e.msg, "");
    t0 = ws_now();
    if (c->mel_on_gpu) { /* the shape now, the numbers on the GPU */
        if (ws_mel_geometry(j->audio.n, c->pad, &j->geom, &e))
            return ws_run_fail(j, "%s: %s", j->input, e.msg);
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
            return ws_run_fail(j, "%s: %s", j->input, e.msg);
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
void ws_run_set_shape(const ws_run_ctx *c, ws_job *j)
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
int ws_run_stem(const ws_run_ctx *c, ws_job *j)
{
    const ws_mel_out *mo = &j->mel;
    ws_run_set_shape(c, j);
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
        return ws_run_fail(j, "%s: out of memory for the embeddings%s", j->input, "");
    if (!streamed) {
        if (stem_windows(c, j, 0, n_win, j->result, &e))
            return ws_run_fail(j, "%s: %s", j->input, e.msg);
        j->ms.stem = 1e3 * (ws_now() - t0);
        return 0;
    }
    /* A long input: its output file is written as the windows come, and
     * named only when complete (ws_out_commit in the write stage). */
    double t_write = 0;
    if (((c->root || (j->src && strchr(j->src->key, '/'))) && ws_mkdir_parents(j->output, &e)) ||
        !(j->out = ws_out_open(j->output, &e)))
        return ws_run_fail(j, "%s: %s", j->input, e.msg);
    const size_t esz = c->out_dtype == WS_OUT_F16 ? 2 : sizeof(float);
    if (ws_path_is_npy(j->output)) {
        char header[256];
        size_t hl = ws_npy_header_dtype(header, sizeof header, j->shape, j->ndim, c->out_dtype);
        if (!hl || ws_out_write(j->out, header, hl, &e))
            return ws_run_fail(j, "%s: %s", j->input, hl ? e.msg : "shape too long for a .npy header");
    }
    for (int w0 = 0; w0 < n_win; w0 += cw) {
        int nw = n_win - w0 < cw ? n_win - w0 : cw;
        if (stem_windows(c, j, w0, nw, j->result, &e))
            return ws_run_fail(j, "%s: %s", j->input, e.msg);
        double tw = ws_now();
        WS_RANGE_PUSH("write");
        if (c->out_dtype == WS_OUT_F16)
            j->f16_clamped += (long long)ws_f32_to_f16_inplace(j->result, per * (size_t)nw);
        int rc = ws_out_write(j->out, j->result, per * (size_t)nw * esz, &e);
        WS_RANGE_POP();
        t_write += ws_now() - tw;
        if (rc)
            return ws_run_fail(j, "%s: %s", j->input, e.msg);
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
    ws_run_unstage(c, j);
    return dst;
}

/* An input that fits no GPU batch (longer than a batch holds, or --no-pad beyond
 * 30 s): its log-Mel on the GPU alone when the log-Mel runs there, then ws_run_stem() as for
 * one input (its windows in pieces, streamed to its file). */
int ws_run_stem_alone(const ws_run_ctx *c, ws_job *j)
{
    const size_t mel_n = (size_t)j->mel.n_windows * j->mel.n_mels * j->mel.n_frames;
    if (!c->mel_on_gpu) {
        if (j->slabs && !(j->mel.data = unstage_back(c, j, mel_n * sizeof(float))))
            return ws_run_fail(j, "%s: out of memory for its log-Mel%s", j->input, "");
        return ws_run_stem(c, j);
    }
    ws_err e = {{0}};
    double t0 = ws_now();
    ws_gpu_input in = ws_run_job_input(c, j);
    float *x = j->audio.x, *copy = NULL;
    if (j->slabs && !(x = copy = unstage_back(c, j, (size_t)j->samples * sizeof(float))))
        return ws_run_fail(j, "%s: out of memory for its samples%s", j->input, "");
    in.x = x;
    in.slabs = NULL;
    j->mel.data = malloc(mel_n * sizeof(float));
    int rc = j->mel.data ? ws_gpu_mel_alone(c->batcher, &in, j->mel.data, &e)
                         : ws_errf(&e, "out of memory for the log-Mel");
    free(copy);
    ws_audio_free(&j->audio);
    j->ms.mel = 1e3 * (ws_now() - t0);
    if (rc)
        return ws_run_fail(j, "%s: %s", j->input, e.msg);
    return ws_run_stem(c, j);
}


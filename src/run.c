/* run.c - inputs to outputs, overlapped across files (see run.h).
 *
 * A job moves through states under one mutex:
 *   NEW -> PREP (a worker decodes and computes the log-Mel) -> PREPPED
 *       -> (the calling thread runs the stem, in input order) -> STEMMED
 *       -> WRITE (a worker writes the output) -> DONE
 * A failure at any stage goes straight to DONE with the job's error set.
 * Workers prefer writing (it frees memory) over preparing, and prepare at
 * most `ahead` jobs beyond the one in the stem. FFTW's plan, the model and
 * the stems are shared read-only by the workers; only the calling thread
 * touches the GPU context and the CPU stem's buffers.
 * Validated by tests/test_cli.c (many_inputs_give_the_same_bytes_as_one_per_run).
 */
#include "run.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "signals.h"
#include "trace.h"

enum { NEW, PREP, PREPPED, STEMMED, WRITE, DONE };

ws_job *ws_jobs_new(int n, char *const *inputs, char *const *outputs)
{
    ws_job *j = calloc((size_t)(n > 0 ? n : 1), sizeof *j);
    for (int i = 0; j && i < n; i++) {
        j[i].input = inputs[i];
        j[i].output = outputs[i];
    }
    return j;
}

static void release(ws_job *j)
{
    ws_audio_free(&j->audio);
    if (j->result != j->mel.data)
        free(j->result);
    j->result = NULL;
    ws_mel_out_free(&j->mel);
}

void ws_jobs_free(ws_job *jobs, int n)
{
    for (int i = 0; jobs && i < n; i++)
        release(&jobs[i]);
    free(jobs);
}

static int fail(ws_job *j, const char *fmt, const char *a, const char *b)
{
    snprintf(j->error, sizeof j->error, fmt, a, b);
    release(j);
    j->ok = 0;
    return -1;
}

/* decode + log-Mel on mel_threads threads */
static int prep(const ws_run_ctx *c, ws_job *j, int mel_threads)
{
    ws_err e = {{0}};
    double t0 = ws_now();
    WS_RANGE_PUSH("decode");
    int rc = ws_audio_load(&j->audio, j->input, &e);
    WS_RANGE_POP();
    j->ms.decode = 1e3 * (ws_now() - t0);
    if (rc)
        return fail(j, "%s%s", e.msg, "");
    j->decoded = 1;
    j->src_rate = j->audio.src_rate;
    j->src_channels = j->audio.src_channels;
    j->samples = j->audio.n;
    t0 = ws_now();
    WS_RANGE_PUSH("mel");
    rc = ws_mel_compute_nt(c->mel, j->audio.x, j->audio.n, c->pad, mel_threads, &j->mel, &e);
    WS_RANGE_POP();
    j->ms.mel = 1e3 * (ws_now() - t0);
    ws_audio_free(&j->audio); /* the samples are not needed past the log-Mel */
    if (rc)
        return fail(j, "%s: %s", j->input, e.msg);
    j->windows = j->mel.n_windows;
    return 0;
}

/* the conv stem, or nothing with --mel; sets result and shape */
static int stem(const ws_run_ctx *c, ws_job *j)
{
    const ws_mel_out *mo = &j->mel;
    j->ndim = 0;
    if (mo->n_windows > 1)
        j->shape[j->ndim++] = mo->n_windows;
    if (c->mel_only) {
        j->result = mo->data;
        j->shape[j->ndim++] = mo->n_mels;
        j->shape[j->ndim++] = mo->n_frames;
        return 0;
    }
    const int d = c->model->d, t_out = ws_stem_out_len(mo->n_frames);
    const size_t per = (size_t)t_out * d;
    j->result = malloc(per * (size_t)mo->n_windows * sizeof(float));
    if (!j->result)
        return fail(j, "%s: out of memory for the embeddings%s", j->input, "");
    ws_err e = {{0}};
    double t0 = ws_now();
    if (c->gpu) {
        if (ws_gpu_stem(c->gpu, mo->data, mo->n_windows, mo->n_frames, c->add_pos, j->result, &e))
            return fail(j, "%s: GPU: %s", j->input, e.msg);
    } else {
        for (int w = 0; w < mo->n_windows; w++)
            if (ws_stem_run(c->cpu, mo->data + (size_t)w * mo->n_mels * mo->n_frames, mo->n_frames,
                            c->add_pos, j->result + w * per, &e))
                return fail(j, "%s: %s", j->input, e.msg);
    }
    j->ms.stem = 1e3 * (ws_now() - t0);
    j->shape[j->ndim++] = t_out;
    j->shape[j->ndim++] = d;
    return 0;
}

static int write_out(ws_job *j)
{
    ws_err e = {{0}};
    double t0 = ws_now();
    WS_RANGE_PUSH("write");
    int rc = ws_write_array(j->output, j->result, j->shape, j->ndim, &e);
    WS_RANGE_POP();
    j->ms.write = 1e3 * (ws_now() - t0);
    if (rc)
        return fail(j, "%s: %s", j->input, e.msg);
    j->ok = 1;
    release(j);
    return 0;
}

static void report(const ws_run_ctx *c, const ws_job *j)
{
    ws_progress_done(j->ok);
    if (!j->ok)
        fprintf(stderr, "whisper-stem: %s\n", j->error);
    else if (c->verbose)
        fprintf(stderr, "whisper-stem: %s -> %s: %.2f s of audio, %d window%s; decode %.1f ms, "
                        "mel %.1f ms, stem %.1f ms, write %.1f ms\n",
                j->input, j->output, j->samples / (double)WS_SAMPLE_RATE, j->windows,
                j->windows == 1 ? "" : "s", j->ms.decode, j->ms.mel, j->ms.stem, j->ms.write);
}

/* --- one input: every stage on this thread --------------------------------- */

static int run_serial(const ws_run_ctx *c, ws_job *jobs, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        ws_job *j = &jobs[i];
        if (prep(c, j, c->threads) == 0 && stem(c, j) == 0)
            write_out(j);
        j->state = DONE;
        report(c, j);
        failed += !j->ok;
    }
    return failed;
}

/* --- many inputs: workers prepare and write, this thread runs the stem ------ */

typedef struct {
    const ws_run_ctx *c;
    ws_job *jobs;
    int n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next_prep;  /* next job to prepare */
    int stem_at;    /* job the stem works on next */
    int ahead;      /* jobs prepared beyond stem_at at most */
    int write_from; /* no job before this one waits for a write */
    int done;
} pipe_state;

static void finish(pipe_state *p, ws_job *j)
{
    j->state = DONE;
    p->done++;
    report(p->c, j);
    pthread_cond_broadcast(&p->cv);
}

static void worker(void *arg, int ti, int nt)
{
    pipe_state *p = arg;
    (void)ti;
    (void)nt;
    pthread_mutex_lock(&p->mu);
    while (p->done < p->n) {
        ws_job *w = NULL;
        while (p->write_from < p->n && p->jobs[p->write_from].state == DONE)
            p->write_from++;
        for (int i = p->write_from; i < p->stem_at && i < p->n; i++)
            if (p->jobs[i].state == STEMMED) {
                w = &p->jobs[i];
                break;
            }
        if (w) {
            w->state = WRITE;
            pthread_mutex_unlock(&p->mu);
            write_out(w);
            pthread_mutex_lock(&p->mu);
            finish(p, w);
        } else if (p->next_prep < p->n && p->next_prep <= p->stem_at + p->ahead) {
            ws_job *j = &p->jobs[p->next_prep++];
            j->state = PREP;
            pthread_mutex_unlock(&p->mu);
            int rc = prep(p->c, j, 1);
            pthread_mutex_lock(&p->mu);
            if (rc)
                finish(p, j);
            else
                j->state = PREPPED;
            pthread_cond_broadcast(&p->cv);
        } else {
            pthread_cond_wait(&p->cv, &p->mu);
        }
    }
    pthread_mutex_unlock(&p->mu);
}

/* Thread 0 of ws_parallel runs the stem in order; the others are workers. */
static void pipeline_task(void *arg, int ti, int nt)
{
    pipe_state *p = arg;
    if (ti != 0) {
        worker(p, ti, nt);
        return;
    }
    for (int i = 0; i < p->n; i++) {
        ws_job *j = &p->jobs[i];
        pthread_mutex_lock(&p->mu);
        while (j->state < PREPPED) {
            if (j->state == NEW && p->next_prep == i) { /* no worker has taken it: do it here */
                p->next_prep++;
                j->state = PREP;
                pthread_mutex_unlock(&p->mu);
                int rc = prep(p->c, j, 1);
                pthread_mutex_lock(&p->mu);
                if (rc)
                    finish(p, j);
                else
                    j->state = PREPPED;
            } else {
                pthread_cond_wait(&p->cv, &p->mu);
            }
        }
        int ready = j->state == PREPPED;
        pthread_mutex_unlock(&p->mu);
        int rc = ready ? stem(p->c, j) : -1;
        pthread_mutex_lock(&p->mu);
        if (ready && rc)
            finish(p, j);
        else if (ready)
            j->state = STEMMED;
        p->stem_at = i + 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    worker(p, 0, nt); /* then help with the writes that are left */
}

int ws_run(const ws_run_ctx *c, ws_job *jobs, int n)
{
    int threads = c->threads < 1 ? 1 : c->threads;
    /* The CPU stem keeps every thread busy on its own; the GPU stem and
     * --mel leave the cores to decoding, log-Mel and writing. */
    int n_workers = c->gpu || c->mel_only ? threads : (threads + 1) / 2;
    if (n_workers > n)
        n_workers = n;
    if (n <= 1 || n_workers < 1)
        return run_serial(c, jobs, n);
    pipe_state p = {.c = c, .jobs = jobs, .n = n, .ahead = 2 * n_workers + 1};
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    if (ws_parallel(n_workers + 1, pipeline_task, &p))
        fprintf(stderr, "whisper-stem: could not start all worker threads; fewer are used\n");
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    int failed = 0;
    for (int i = 0; i < n; i++)
        failed += !jobs[i].ok;
    return failed;
}

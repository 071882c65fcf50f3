/* pipeline.c - inputs to outputs, overlapped across files, in bounded memory (see run.h).
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

/* --- one input: every stage on this thread --------------------------------- */

static int run_serial(const ws_run_ctx *c, ws_job *jobs, int n)
{
    int failed = 0;
    mem_acct mem = {.budget = c->max_memory};
    for (int i = 0; i < n; i++) {
        ws_job *j = &jobs[i];
        if (ws_run_prep(c, &mem, j, c->threads) == 0 && (c->batcher ? ws_run_stem_alone(c, j) : ws_run_stem(c, j)) == 0)
            ws_run_write_out(c, j);
        ws_run_unreserve(&mem, j);
        j->state = DONE;
        ws_run_report(c, j);
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
    ws_run_unreserve(&p->mem, j);
    ws_run_report(p->c, j);
    pthread_cond_broadcast(&p->cv);
}

/* The first job in state s (jobs before low are DONE or past it); with
 * plain_only, not one whose output is a FIFO or device (opening it may wait); a tar
 * member is held whole like those but never waits for a reader, so the stem thread writes
 * it too (else workers waiting for memory would wait for members nobody writes). */
static ws_job *first_in(pipe_state *p, int s, int plain_only)
{
    while (p->low < p->next_prep && p->jobs[p->low].state == DONE)
        p->low++;
    for (int i = p->low; i < p->next_prep; i++)
        if (p->jobs[i].state == s && !(plain_only && p->jobs[i].special && p->jobs[i].shard < 0))
            return &p->jobs[i];
    return NULL;
}

/* Writes w (STEMMED) and finishes it; mu held, released meanwhile. */
static void write_one(pipe_state *p, ws_job *w)
{
    w->state = WRITE;
    pthread_mutex_unlock(&p->mu);
    ws_run_write_out(p->c, w);
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
            int rc = ws_run_prep(p->c, &p->mem, j, p->n == 1 ? p->c->threads : 1);
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
            int rc = ws_run_stem(p->c, j);
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
        ws_run_unstage(c, j);
        ws_audio_free(&j->audio);
        ws_mel_out_free(&j->mel); /* the dims stay in j->shape below */
        p->unstemmed--;
        if (e) {
            ws_run_fail(j, "%s: %s", j->input, e->msg);
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
                ws_run_fail(j, "%s: out of memory for the embeddings%s", j->input, "");
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
            ws_gpu_input in = ws_run_job_input(c, j);
            if (!ws_gpu_batch_fits(b, &in)) {
                j->state = STEM; /* ws_run_stem() sets its shape */
                if (c->stats)
                    c->stats->alone++;
                pthread_mutex_unlock(&p->mu);
                int rc = ws_run_stem_alone(c, j);
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
                ws_gpu_input qi = ws_run_job_input(c, q);
                if (!ws_gpu_batch_fits(b, &qi))
                    continue;
                if (!ws_gpu_batch_add(b, s, &qi))
                    break;
                p->slot_jobs[s][k++] = q;
            }
            if (k == 0) { /* not even the first one went in: out of memory */
                ws_run_unstage(c, j);
                ws_run_fail(j, "%s: out of memory for a GPU batch%s", j->input, "");
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
                ws_run_set_shape(c, p->slot_jobs[s][i]);
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

static int run_all(const ws_run_ctx *c, ws_job *jobs, int n)
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

int ws_run(const ws_run_ctx *c, ws_job *jobs, int n)
{
    if (c->shards)
        ws_shards_plan(c, jobs, n); /* shard numbers; what earlier runs left decides skips */
    const int failed = run_all(c, jobs, n);
    ws_run_redo_say();
    return failed;
}

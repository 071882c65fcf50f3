/* batch.c - many files, overlapped as the command overlaps them (src/cli/run.c): W
 * worker threads decode and compute the log-Mel of the next inputs while the caller's
 * thread runs the stem in whisper_stem_batch_next; results in input order.
 *
 * Slots. Input i lives in slot i % A (A = 2 W + 2) from the moment a worker takes it
 * until batch_next hands it over: a worker takes input i only when i < next_out + A,
 * so at most A inputs are held at once (each its samples, then its log-Mel), and the
 * slot it needs is free. A slot goes EMPTY -> BUSY (a worker decodes) -> READY (its
 * log-Mel or its error), and back to EMPTY in batch_next. Everything under one mutex.
 *
 * The log-Mel of a worker runs on one thread (the command's workers do the same; the
 * values do not depend on it), the stem under the context's lock with its threads or
 * the GPU. So a result is the bytes of whisper_stem_embed_file for the same path
 * (tests/test_api.c: api.batch_*).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EMPTY, BUSY, READY, SUBMITTED, COPY, COPYING, DONE };

typedef struct {
    int state;
    ws_mel_out mel; /* READY and no error (the CPU's log-Mel) */
    char *error;    /* READY: the input failed ("path: problem"), or NULL */
    whisper_stem_info info;
    /* the GPU path: the samples (or their staged copy) until the batch that takes them is
     * done; then (DONE) the result */
    ws_audio audio;
    ws_gpu_input in;
    void **slabs;
    int n_slabs;
    int gslot, gidx;  /* SUBMITTED .. COPYING: its GPU slot and place there */
    whisper_stem_array res;
    whisper_stem_device_array dres; /* results on the device: the caller's block for it */
} slot;

enum { MAX_FLIGHT = 2, GROUP_MAX = 64 /* inputs in a launch: at most its windows (16) */ };

typedef struct {
    int gpu_slot;
    int left;     /* its inputs not yet copied out */
    int gpu_done; /* its inputs are COPY (or past) */
    int waiting;  /* a thread waits for it on the GPU (one at a time) */
} flight;

struct whisper_stem_batch {
    whisper_stem *ctx;
    int decode;        /* the context's decoder when the batch was opened */
    char **paths;
    size_t n;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *slots;
    size_t n_slots;   /* A */
    size_t next_take; /* the next input a worker takes */
    size_t next_out;  /* the next input batch_next returns */
    int stop;
    pthread_t *tid;
    int n_workers;    /* started; 0: batch_next prepares each input itself */
    int gpu;          /* the GPU path (see the top) */
    size_t next_sub;  /* GPU: the first input not yet given to a GPU slot */
    flight fl[MAX_FLIGHT];
    int n_fl;
    whisper_stem_info last; /* of the input batch_next returned last */
    int have_last;
    /* results on the device (whisper_stem_batch_to_device) */
    int dev;
    void *dev_stream;
    whisper_stem_device_alloc dev_alloc;
    void *dev_user;
    int started; /* a batch_next was called */
};

static void release_input(whisper_stem_batch *b, slot *s)
{
    if (s->slabs)
        ws_gpu_unstage(b->ctx->batcher, s->slabs, s->n_slabs);
    s->slabs = NULL;
    s->n_slabs = 0;
    ws_audio_free(&s->audio);
}

/* Decodes path and computes its log-Mel into s (error or mel); on the GPU path keeps the
 * samples, staged into pinned slabs when some are free. */
static void prepare(whisper_stem_batch *b, whisper_stem *ctx, const char *path, slot *s)
{
    ws_audio a;
    ws_err e = {{0}};
    ws_audio_opts ao = {.decode = b->decode};
    int rc = ws_audio_load_opts(&a, path, &ao, &e);
    if (!rc)
        ws_api_info(ctx, &a, &s->info);
    if (!rc && b->gpu) {
        ws_mel_geom g;
        ws_err ge = {{0}};
        if (ws_api_gpu_input(ctx, &a, &s->in, &g, &ge)) {
            ws_errf(&e, "%s: %s", path, ge.msg);
            ws_audio_free(&a);
            rc = -1;
        } else {
            s->audio = a;
            const size_t bytes = a.n * sizeof(float);
            if (bytes && ws_gpu_batch_fits(ctx->batcher, &s->in) &&
                (s->slabs = ws_gpu_stage(ctx->batcher, bytes, &s->n_slabs))) {
                ws_gpu_stage_copy(ctx->batcher, s->slabs, a.x, bytes);
                ws_audio_free(&s->audio);
                s->in.slabs = s->slabs;
                s->in.x = NULL;
            }
        }
    } else if (!rc) {
        rc = ws_api_mel(ctx, &a, 1, path, &s->mel, &e);
        ws_audio_free(&a);
    }
    if (rc && !(s->error = strdup(e.msg)))
        s->mel.n_windows = -1; /* batch_next reports it as out of memory */
}

static void copy_one(whisper_stem_batch *b, slot *s);
static void copied(whisper_stem_batch *b, slot *s);
static void gpu_finished(whisper_stem_batch *b, int g, int rc, const ws_err *e);

/* With b->mu: waits (the lock let go) for the oldest launch no one waits for yet, and marks
 * it finished; 1, or 0 when there is none. The workers call it when idle, so that a batch's
 * slots come back even while its caller does not call batch_next (another batch or call
 * of the context may be waiting for one). */
static int wait_flight(whisper_stem_batch *b)
{
    int f = 0;
    while (f < b->n_fl && (b->fl[f].gpu_done || b->fl[f].waiting))
        f++;
    if (f == b->n_fl)
        return 0;
    b->fl[f].waiting = 1;
    const int g = b->fl[f].gpu_slot;
    pthread_mutex_unlock(&b->mu);
    ws_err we = {{0}};
    const int wrc = ws_gpu_batch_wait(b->ctx->batcher, g, &we);
    pthread_mutex_lock(&b->mu);
    gpu_finished(b, g, wrc, &we);
    return 1;
}

/* COPY inputs of the GPU path, oldest first: one claimed (COPYING), or NULL. */
static slot *claim_copy(whisper_stem_batch *b)
{
    for (size_t i = b->next_out; b->gpu && i < b->next_sub; i++) {
        slot *s = &b->slots[i % b->n_slots];
        if (s->state == COPY) {
            s->state = COPYING;
            return s;
        }
    }
    return NULL;
}

static void *worker(void *arg)
{
    whisper_stem_batch *b = arg;
    pthread_mutex_lock(&b->mu);
    while (!b->stop) {
        slot *c = claim_copy(b); /* results first: they free pinned memory and a GPU slot */
        if (c) {
            pthread_mutex_unlock(&b->mu);
            copy_one(b, c);
            pthread_mutex_lock(&b->mu);
            copied(b, c);
            continue;
        }
        if (b->next_take < b->n && b->next_take < b->next_out + b->n_slots) {
            size_t i = b->next_take++;
            slot *s = &b->slots[i % b->n_slots];
            s->state = BUSY;
            pthread_mutex_unlock(&b->mu);
            prepare(b, b->ctx, b->paths[i], s);
            pthread_mutex_lock(&b->mu);
            s->state = READY;
            pthread_cond_broadcast(&b->cv);
            continue;
        }
        if (b->gpu && wait_flight(b))
            continue;
        if (b->next_take >= b->n && (!b->gpu || b->next_out >= b->n))
            break;
        pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

void whisper_stem_batch_close(whisper_stem_batch *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    for (int i = 0; i < b->n_workers; i++)
        pthread_join(b->tid[i], NULL);
    if (b->n_fl) { /* batches in flight read the inputs' slabs: wait, give the slots back */
        whisper_stem *ctx = b->ctx;
        for (int f = 0; f < b->n_fl; f++) {
            ws_err e;
            ws_gpu_batch_wait(ctx->batcher, b->fl[f].gpu_slot, &e);
        }
        pthread_mutex_lock(&ctx->stem_mu);
        for (int f = 0; f < b->n_fl; f++)
            ws_api_slot_give(ctx, b->fl[f].gpu_slot);
        pthread_mutex_unlock(&ctx->stem_mu);
        b->n_fl = 0;
    }
    for (size_t i = 0; b->slots && i < b->n_slots; i++) {
        ws_mel_out_free(&b->slots[i].mel);
        free(b->slots[i].error);
        if (b->gpu)
            release_input(b, &b->slots[i]);
        whisper_stem_array_free(&b->slots[i].res);
    }
    for (size_t i = 0; b->paths && i < b->n; i++)
        free(b->paths[i]);
    free(b->paths);
    free(b->slots);
    free(b->tid);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

whisper_stem_batch *whisper_stem_batch_open(whisper_stem *ctx, const char *const *paths,
                                            size_t n_paths, whisper_stem_error *err)
{
    ws_err e = {{0}};
    if (!ctx)
        return ws_errf(&e, "whisper_stem_batch_open: ctx is NULL"), ws_api_fail(err, &e), NULL;
    if (n_paths && !paths)
        return ws_errf(&e, "whisper_stem_batch_open: paths is NULL with n_paths %zu", n_paths),
               ws_api_fail(err, &e), NULL;
    if (!ctx->have_model)
        return ws_errf(&e, "whisper_stem_batch_open: no model: the context was made with "
                           "params.model NULL (log-Mel only)"),
               ws_api_fail(err, &e), NULL;
    for (size_t i = 0; i < n_paths; i++)
        if (!paths[i])
            return ws_errf(&e, "whisper_stem_batch_open: paths[%zu] is NULL", i),
                   ws_api_fail(err, &e), NULL;
    whisper_stem_batch *b = calloc(1, sizeof *b);
    if (!b)
        return ws_errf(&e, "whisper_stem_batch_open: out of memory"), ws_api_fail(err, &e), NULL;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->ctx = ctx;
    b->decode = ctx->decode;
    b->n = n_paths;
    /* the command's split: the CPU stem keeps every thread busy on its own */
    int w = ctx->on_gpu ? ctx->threads : (ctx->threads + 1) / 2;
    if (w < 2)
        w = 2;
    if ((size_t)w > n_paths)
        w = (int)n_paths;
    b->n_slots = 2 * (size_t)(w > 0 ? w : 1) + 2;
    b->gpu = ctx->on_gpu && ctx->mel_gpu && ctx->batcher;
    if (b->gpu) { /* room for two slots in flight, and the workers ahead of them */
        const size_t fl = (size_t)(MAX_FLIGHT + 1) * (size_t)ws_gpu_batch_max_windows(ctx->batcher);
        if (b->n_slots < fl + (size_t)w)
            b->n_slots = fl + (size_t)w;
    }
    int oom = !(b->paths = calloc(n_paths ? n_paths : 1, sizeof *b->paths)) ||
              !(b->slots = calloc(b->n_slots, sizeof *b->slots)) ||
              !(b->tid = calloc((size_t)(w > 0 ? w : 1), sizeof *b->tid));
    for (size_t i = 0; !oom && i < n_paths; i++)
        oom = !(b->paths[i] = strdup(paths[i]));
    if (oom) {
        whisper_stem_batch_close(b);
        return ws_errf(&e, "whisper_stem_batch_open: out of memory for %zu paths", n_paths),
               ws_api_fail(err, &e), NULL;
    }
    for (int i = 0; i < w; i++)
        if (pthread_create(&b->tid[b->n_workers], NULL, worker, b) == 0)
            b->n_workers++;
    return b;
}

/* --- the GPU path ------------------------------------------------------------------ */

/* s's result out of its GPU slot's pinned buffer into its array (without b->mu). */
static void copy_one(whisper_stem_batch *b, slot *s)
{
    if (b->dev) { /* the result is in the caller's device memory already */
        release_input(b, s);
        return;
    }
    size_t bytes = 0;
    const void *r = ws_gpu_batch_output(b->ctx->batcher, s->gslot, s->gidx, &bytes);
    ws_err e = {{0}};
    if (!r)
        ws_errf(&e, "no result in GPU slot %d", s->gslot);
    else if (!ws_api_emb_array(b->ctx, s->in.n_win, s->in.win_frames, &s->res, &e))
        memcpy(s->res.data, r, bytes);
    if (e.msg[0] && !(s->error = strdup(e.msg)))
        s->mel.n_windows = -1;
    release_input(b, s);
}

/* With b->mu: s is copied (DONE); the last of its GPU slot's inputs gives the slot back. */
static void copied(whisper_stem_batch *b, slot *s)
{
    s->state = DONE;
    for (int f = 0; f < b->n_fl; f++) {
        if (b->fl[f].gpu_slot != s->gslot || !b->fl[f].gpu_done)
            continue;
        if (--b->fl[f].left == 0) {
            whisper_stem *ctx = b->ctx;
            pthread_mutex_lock(&ctx->stem_mu);
            ws_api_slot_give(ctx, b->fl[f].gpu_slot);
            pthread_mutex_unlock(&ctx->stem_mu);
            memmove(&b->fl[f], &b->fl[f + 1], (size_t)(b->n_fl - f - 1) * sizeof b->fl[0]);
            b->n_fl--;
        }
        break;
    }
    pthread_cond_broadcast(&b->cv);
}

/* With b->mu: the batch of GPU slot g is done (rc 0) or failed (rc -1, e): its inputs go
 * COPY, or fail with e; a slot with nothing left to copy goes back. */
static void gpu_finished(whisper_stem_batch *b, int g, int rc, const ws_err *e)
{
    int f = 0;
    while (f < b->n_fl && b->fl[f].gpu_slot != g)
        f++;
    if (f == b->n_fl || b->fl[f].gpu_done)
        return;
    b->fl[f].gpu_done = 1;
    b->fl[f].waiting = 0;
    for (size_t i = b->next_out; i < b->next_sub; i++) {
        slot *s = &b->slots[i % b->n_slots];
        if (s->state != SUBMITTED || s->gslot != g)
            continue;
        if (!rc) {
            s->state = COPY;
            continue;
        }
        ws_err ie;
        ws_errf(&ie, "%s: %s", b->paths[i], e->msg);
        if (!(s->error = strdup(ie.msg)))
            s->mel.n_windows = -1;
        release_input(b, s);
        s->state = DONE;
        b->fl[f].left--;
    }
    if (b->fl[f].left == 0) {
        whisper_stem *ctx = b->ctx;
        pthread_mutex_lock(&ctx->stem_mu);
        ws_api_slot_give(ctx, g);
        pthread_mutex_unlock(&ctx->stem_mu);
        memmove(&b->fl[f], &b->fl[f + 1], (size_t)(b->n_fl - f - 1) * sizeof b->fl[0]);
        b->n_fl--;
    }
    pthread_cond_broadcast(&b->cv);
}

/* An allocator that gives the block the caller gave already (user: its device array). */
static void *given_block(void *user, size_t bytes)
{
    (void)bytes; /* the same input, the same size */
    return ((whisper_stem_device_array *)user)->data;
}

/* The caller's device memory for s's result (dres; kept when a launch is put off). */
static int dev_block(whisper_stem_batch *b, slot *s, ws_err *e)
{
    if (s->dres.data)
        return 0;
    whisper_stem_array shape = {0};
    const size_t bytes = ws_api_emb_shape(b->ctx, s->in.n_win, s->in.win_frames, &shape);
    if (!bytes)
        return ws_errf(e, "%d windows: the embeddings would overflow", s->in.n_win);
    void *p = b->dev_alloc(b->dev_user, bytes);
    if (!p)
        return ws_errf(e, "the device allocator gave no memory for %zu bytes", bytes);
    s->dres.data = p;
    s->dres.ndim = shape.ndim;
    memcpy(s->dres.shape, shape.shape, sizeof s->dres.shape);
    if ((uintptr_t)p % 16)
        return ws_errf(e, "the device allocator's pointer %p is not 16-byte aligned", p);
    return 0;
}

/* One input longer than a slot, alone and synchronously (b->mu not held). */
static void run_alone(whisper_stem_batch *b, size_t i)
{
    whisper_stem *ctx = b->ctx;
    slot *s = &b->slots[i % b->n_slots];
    ws_err e = {{0}};
    int rc = 0;
    if (s->slabs) { /* staged: the samples back out of the slabs (they were freed) */
        const size_t bytes = s->in.n * sizeof(float);
        if (!(s->audio.x = malloc(bytes ? bytes : 4))) {
            rc = ws_errf(&e, "out of memory for %llu samples", (unsigned long long)s->in.n);
        } else {
            ws_gpu_stage_read(ctx->batcher, s->slabs, s->audio.x, bytes);
            s->audio.n = s->in.n;
        }
    }
    /* as whisper_stem_embed_file runs it: the same path, so the same bytes; on the device
     * into the block the caller gave for it already, if any (a launch that shrank) */
    if (!rc && b->dev)
        rc = ws_api_gpu_embed_device(ctx, &s->audio, b->dev_stream,
                                     s->dres.data ? given_block : b->dev_alloc,
                                     s->dres.data ? (void *)&s->dres : b->dev_user, &s->dres, &e);
    else if (!rc)
        rc = ws_api_gpu_embed(ctx, &s->audio, &s->res, &e);
    if (rc) {
        whisper_stem_array_free(&s->res);
        ws_err pe = e;
        ws_errf(&e, "%s: %s", b->paths[i], pe.msg);
        if (!(s->error = strdup(e.msg)))
            s->mel.n_windows = -1;
    }
    release_input(b, s);
}

/* Inputs from next_sub on that are READY, in order, into one GPU slot, submitted: called
 * with b->mu held (released around the GPU work). 1 when something was submitted or run,
 * 0 when nothing could be (the next input not ready, or two slots in flight already). */
static int submit_ready(whisper_stem_batch *b)
{
    whisper_stem *ctx = b->ctx;
    size_t j = b->next_sub;
    while (j < b->n && j < b->next_out + b->n_slots) { /* failed inputs need no GPU */
        slot *s = &b->slots[j % b->n_slots];
        if (s->state != READY || !(s->error || s->mel.n_windows < 0))
            break;
        j++;
    }
    b->next_sub = j;
    if (j >= b->n || b->slots[j % b->n_slots].state != READY)
        return 0;
    slot *s0 = &b->slots[j % b->n_slots];
    if (!ws_gpu_batch_fits(ctx->batcher, &s0->in)) { /* alone, now */
        b->next_sub = j + 1;
        s0->state = SUBMITTED;
        pthread_mutex_unlock(&b->mu);
        run_alone(b, j);
        pthread_mutex_lock(&b->mu);
        s0->state = DONE;
        pthread_cond_broadcast(&b->cv);
        return 1;
    }
    if (b->n_fl >= MAX_FLIGHT)
        return 0;
    /* the group: READY inputs that fit a slot beside each other, failed ones passed over */
    size_t end = j, count = 0;
    int windows = 0, T = s0->in.win_frames;
    const int cap = ws_gpu_batch_max_windows(ctx->batcher);
    while (end < b->n && end < b->next_out + b->n_slots) {
        slot *s = &b->slots[end % b->n_slots];
        if (s->state != READY)
            break;
        if (!(s->error || s->mel.n_windows < 0)) {
            if (!ws_gpu_batch_fits(ctx->batcher, &s->in) || s->in.win_frames != T ||
                windows + s->in.n_win > cap)
                break;
            windows += s->in.n_win;
            count++;
        }
        end++;
    }
    for (size_t i = j; i < end; i++) {
        slot *s = &b->slots[i % b->n_slots];
        if (!(s->error || s->mel.n_windows < 0)) {
            s->state = SUBMITTED;
            s->gslot = -1; /* its GPU slot is set under b->mu once the launch is registered */
        }
    }
    b->next_sub = end;
    const int have_flights = b->n_fl > 0;
    pthread_mutex_unlock(&b->mu);

    ws_err e = {{0}};
    /* results on the device: the caller's blocks first (its allocator may call back into
     * Python: never under the context's lock), kept if the launch is put off */
    wscu_devptr dst[GROUP_MAX];
    int arc = 0, k = 0;
    for (size_t i = j; b->dev && !arc && i < end; i++) {
        slot *s = &b->slots[i % b->n_slots];
        if (s->state != SUBMITTED)
            continue;
        if (k >= GROUP_MAX)
            arc = ws_errf(&e, "more than %d inputs in a launch", GROUP_MAX);
        else if (!(arc = dev_block(b, s, &e)))
            dst[k++] = (wscu_devptr)(uintptr_t)s->dres.data;
    }
    pthread_mutex_lock(&ctx->stem_mu);
    /* with launches of its own in flight the batch does not wait for a slot (those come
     * back by themselves); without, it may: the other holders give theirs back unasked */
    int g = arc ? -1 : ws_api_slot_get(ctx, !have_flights, &e);
    if (g == -2) {
        pthread_mutex_unlock(&ctx->stem_mu);
        pthread_mutex_lock(&b->mu);
        for (size_t i = j; i < end; i++)
            if (b->slots[i % b->n_slots].state == SUBMITTED)
                b->slots[i % b->n_slots].state = READY;
        b->next_sub = j;
        return 0;
    }
    int rc = g < 0 ? -1 : 0;
    k = 0;
    for (size_t i = j; !rc && i < end; i++) {
        slot *s = &b->slots[i % b->n_slots];
        if (s->state != SUBMITTED)
            continue;
        if (!ws_gpu_batch_add(ctx->batcher, g, &s->in))
            rc = ws_errf(&e, "a GPU batch did not take an input");
        s->gidx = k++; /* read only once the input is COPY */
    }
    if (!rc) {
        rc = b->dev ? ws_gpu_batch_submit_to(ctx->batcher, g, "batch", ws_api_stream(b->dev_stream),
                                             dst, NULL, &e)
                    : ws_gpu_batch_submit(ctx->batcher, g, "batch", &e);
        if (rc == WS_BATCH_SHRUNK) /* out of device memory: the inputs one by one, alone */
            rc = 2;
        else /* failed part-way or not: what it queued must be done before the slot's reuse */
            ctx->slot_used[g] = 1;
    }
    if (rc && g >= 0)
        ws_api_slot_give(ctx, g);
    pthread_mutex_unlock(&ctx->stem_mu);
    if (rc == 2) {
        for (size_t i = j; i < end; i++) {
            slot *s = &b->slots[i % b->n_slots];
            if (s->state == SUBMITTED)
                run_alone(b, i);
        }
    } else if (rc) {
        for (size_t i = j; i < end; i++) {
            slot *s = &b->slots[i % b->n_slots];
            if (s->state != SUBMITTED)
                continue;
            ws_err ie;
            ws_errf(&ie, "%s: %s", b->paths[i], e.msg);
            if (!(s->error = strdup(ie.msg)))
                s->mel.n_windows = -1;
            release_input(b, s);
        }
    }
    pthread_mutex_lock(&b->mu);
    if (rc) {
        for (size_t i = j; i < end; i++)
            if (b->slots[i % b->n_slots].state == SUBMITTED)
                b->slots[i % b->n_slots].state = DONE;
        pthread_cond_broadcast(&b->cv);
    } else {
        for (size_t i = j; i < end; i++)
            if (b->slots[i % b->n_slots].state == SUBMITTED)
                b->slots[i % b->n_slots].gslot = g;
        b->fl[b->n_fl++] = (flight){g, (int)count, 0, 0};
    }
    return 1;
}

/* batch_next on the GPU path, from input i (slot s), with b->mu held. */
static int next_gpu(whisper_stem_batch *b, whisper_stem_array *out,
                    whisper_stem_device_array *dout, size_t *index, whisper_stem_error *err,
                    const size_t i, slot *s)
{
    ws_err e = {{0}};
    for (;;) {
        /* keep the GPU fed: what is ready goes in (two slots at most in flight) */
        if (b->n_fl < MAX_FLIGHT && submit_ready(b))
            continue;
        if (s->state == DONE || (s->state == READY && (s->error || s->mel.n_windows < 0)))
            break;
        if (s->state == COPY) { /* its result, here rather than wait for a worker */
            s->state = COPYING;
            pthread_mutex_unlock(&b->mu);
            copy_one(b, s);
            pthread_mutex_lock(&b->mu);
            copied(b, s);
            continue;
        }
        if (wait_flight(b)) /* the oldest launch still on the GPU */
            continue;
        pthread_cond_wait(&b->cv, &b->mu);
    }
    slot got = *s;
    memset(s, 0, sizeof *s); /* EMPTY */
    b->next_out++;
    if (b->next_sub < b->next_out)
        b->next_sub = b->next_out;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (index)
        *index = i;
    b->last = got.info;
    b->have_last = 1;
    int rc = 1;
    if (got.error)
        rc = ws_errf(&e, "%s", got.error);
    else if (got.mel.n_windows < 0)
        rc = ws_errf(&e, "%s: out of memory for the error message", b->paths[i]);
    else if (!b->dev)
        *out = got.res;
    if (b->dev) /* on failure too: the block is the caller's to free */
        *dout = got.dres;
    free(got.error);
    if (rc < 0) {
        whisper_stem_array_free(&got.res);
        return ws_api_fail(err, &e);
    }
    return 1;
}

int whisper_stem_batch_info(const whisper_stem_batch *b, whisper_stem_info *info)
{
    if (info)
        memset(info, 0, sizeof *info);
    if (!b || !info || !b->have_last)
        return -1;
    *info = b->last;
    return 0;
}

int whisper_stem_batch_to_device(whisper_stem_batch *b, void *stream,
                                 whisper_stem_device_alloc alloc, void *user,
                                 whisper_stem_error *err)
{
    static const char fn[] = "whisper_stem_batch_to_device";
    ws_err e = {{0}};
    if (!b || !alloc)
        return ws_errf(&e, "%s: %s is NULL", fn, b ? "alloc" : "batch"), ws_api_fail(err, &e);
    if (!b->gpu)
        return ws_errf(&e, "%s: results on the device need the stem and the log-Mel on a GPU "
                           "(device cuda, mel device auto or cuda)", fn),
               ws_api_fail(err, &e);
    pthread_mutex_lock(&b->mu);
    const int started = b->started;
    if (!started) {
        b->dev = 1;
        b->dev_stream = stream;
        b->dev_alloc = alloc;
        b->dev_user = user;
    }
    pthread_mutex_unlock(&b->mu);
    if (started)
        return ws_errf(&e, "%s: called after the batch's first result", fn), ws_api_fail(err, &e);
    return 0;
}

static int batch_next(whisper_stem_batch *b, whisper_stem_array *out,
                      whisper_stem_device_array *dout, size_t *index, whisper_stem_error *err)
{
    ws_err e = {{0}};
    const char *fn = dout ? "whisper_stem_batch_next_device" : "whisper_stem_batch_next";
    if (out)
        memset(out, 0, sizeof *out);
    if (dout)
        memset(dout, 0, sizeof *dout);
    if (!b)
        return ws_errf(&e, "%s: batch is NULL", fn), ws_api_fail(err, &e);
    if (!out && !dout)
        return ws_errf(&e, "%s: out is NULL", fn), ws_api_fail(err, &e);
    if (!b->dev != !dout)
        return ws_errf(&e, "%s: the batch gives its results %s", fn,
                       b->dev ? "on the device: whisper_stem_batch_next_device"
                              : "in host memory: whisper_stem_batch_next"),
               ws_api_fail(err, &e);
    whisper_stem_array none;
    if (!out)
        out = &none;
    pthread_mutex_lock(&b->mu);
    b->started = 1;
    if (b->next_out >= b->n) {
        pthread_mutex_unlock(&b->mu);
        return 0;
    }
    const size_t i = b->next_out;
    slot *s = &b->slots[i % b->n_slots];
    if (b->n_workers == 0 && s->state == EMPTY) { /* no threads could start: here, in turn */
        b->next_take = i + 1;
        s->state = BUSY;
        pthread_mutex_unlock(&b->mu);
        prepare(b, b->ctx, b->paths[i], s);
        pthread_mutex_lock(&b->mu);
        s->state = READY;
    }
    if (b->gpu)
        return next_gpu(b, out, dout, index, err, i, s);
    while (s->state != READY)
        pthread_cond_wait(&b->cv, &b->mu);
    slot got = *s;
    memset(s, 0, sizeof *s); /* EMPTY */
    b->next_out++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);

    if (index)
        *index = i;
    b->last = got.info;
    b->have_last = 1;
    int rc;
    if (got.error) {
        rc = ws_errf(&e, "%s", got.error);
    } else if (got.mel.n_windows < 0) {
        rc = ws_errf(&e, "%s: out of memory for the error message", b->paths[i]);
    } else if (ws_api_embed_windows(b->ctx, got.mel.data, got.mel.n_windows, got.mel.n_frames,
                                    out, &e)) {
        ws_err pe = e;
        rc = ws_errf(&e, "%s: %s", b->paths[i], pe.msg);
    } else {
        rc = 1;
    }
    free(got.error);
    ws_mel_out_free(&got.mel);
    return rc < 0 ? ws_api_fail(err, &e) : 1;
}

int whisper_stem_batch_next(whisper_stem_batch *b, whisper_stem_array *out, size_t *index,
                            whisper_stem_error *err)
{
    if (!out) { /* not the device's either */
        ws_err e = {{0}};
        return ws_errf(&e, "whisper_stem_batch_next: out is NULL"), ws_api_fail(err, &e);
    }
    return batch_next(b, out, NULL, index, err);
}

int whisper_stem_batch_next_device(whisper_stem_batch *b, whisper_stem_device_array *out,
                                   size_t *index, whisper_stem_error *err)
{
    if (!out) {
        ws_err e = {{0}};
        return ws_errf(&e, "whisper_stem_batch_next_device: out is NULL"), ws_api_fail(err, &e);
    }
    return batch_next(b, NULL, out, index, err);
}

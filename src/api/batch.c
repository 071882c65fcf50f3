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

enum { EMPTY, BUSY, READY };

typedef struct {
    int state;
    ws_mel_out mel; /* READY and no error */
    char *error;    /* READY: the input failed ("path: problem"), or NULL */
} slot;

struct whisper_stem_batch {
    whisper_stem *ctx;
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
};

/* Decodes path and computes its log-Mel into s (error or mel). */
static void prepare(whisper_stem *ctx, const char *path, slot *s)
{
    ws_audio a;
    ws_err e = {{0}};
    int rc = ws_audio_load(&a, path, &e);
    if (!rc) {
        rc = ws_api_mel(ctx, &a, 1, path, &s->mel, &e);
        ws_audio_free(&a);
    }
    if (rc && !(s->error = strdup(e.msg)))
        s->mel.n_windows = -1; /* batch_next reports it as out of memory */
}

static void *worker(void *arg)
{
    whisper_stem_batch *b = arg;
    pthread_mutex_lock(&b->mu);
    while (!b->stop && b->next_take < b->n) {
        if (b->next_take >= b->next_out + b->n_slots) {
            pthread_cond_wait(&b->cv, &b->mu);
            continue;
        }
        size_t i = b->next_take++;
        slot *s = &b->slots[i % b->n_slots];
        s->state = BUSY;
        pthread_mutex_unlock(&b->mu);
        prepare(b->ctx, b->paths[i], s);
        pthread_mutex_lock(&b->mu);
        s->state = READY;
        pthread_cond_broadcast(&b->cv);
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
    for (size_t i = 0; b->slots && i < b->n_slots; i++) {
        ws_mel_out_free(&b->slots[i].mel);
        free(b->slots[i].error);
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
    b->n = n_paths;
    /* the command's split: the CPU stem keeps every thread busy on its own */
    int w = ctx->on_gpu ? ctx->threads : (ctx->threads + 1) / 2;
    if (w < 2)
        w = 2;
    if ((size_t)w > n_paths)
        w = (int)n_paths;
    b->n_slots = 2 * (size_t)(w > 0 ? w : 1) + 2;
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

int whisper_stem_batch_next(whisper_stem_batch *b, whisper_stem_array *out, size_t *index,
                            whisper_stem_error *err)
{
    ws_err e = {{0}};
    if (out)
        memset(out, 0, sizeof *out);
    if (!b)
        return ws_errf(&e, "whisper_stem_batch_next: batch is NULL"), ws_api_fail(err, &e);
    if (!out)
        return ws_errf(&e, "whisper_stem_batch_next: out is NULL"), ws_api_fail(err, &e);
    pthread_mutex_lock(&b->mu);
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
        prepare(b->ctx, b->paths[i], s);
        pthread_mutex_lock(&b->mu);
        s->state = READY;
    }
    while (s->state != READY)
        pthread_cond_wait(&b->cv, &b->mu);
    slot got = *s;
    memset(s, 0, sizeof *s); /* EMPTY */
    b->next_out++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);

    if (index)
        *index = i;
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

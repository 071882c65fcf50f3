/* api.c - include/whisper_stem.h over the layers below: audio (decode, resample), mel
 * (the log-Mel plan) and whisper (model, stem), the way the command drives them
 * (src/cli/main.c, run.c), so that a result is the bytes the command writes for the same
 * input on the same device (tests/test_api.c compares them with the command's files).
 *
 * Layouts. The log-Mel comes from ws_mel_compute_nt as [n_win][n_mels][F] (F = 3000, or
 * n/160 with PAD_NONE) and is returned as [n_mels][n_win * F]: one window is handed over
 * as is, more are interleaved by rows (out[m][w F + t] = in[w][m][t]). embed_mel does the
 * reverse before the stem, a chunk of windows at a time.
 *
 * Memory. The stem gets at most STEM_CHUNK_BYTES of output windows per call (the
 * command's streaming size), so the GPU's buffers stay bounded for long inputs; the
 * result array holds every window.
 */
#include "internal.h"

#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu.h"
#include "whisper/frontend.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define VERSION_STRING                                                                       \
    STR(WHISPER_STEM_VERSION_MAJOR) "." STR(WHISPER_STEM_VERSION_MINOR) "." STR(            \
        WHISPER_STEM_VERSION_PATCH)

#define STEM_CHUNK_BYTES ((size_t)64 << 20)
#define MAX_THREADS 256

_Static_assert(sizeof(((whisper_stem_error *)0)->msg) == WS_ERR_LEN,
               "whisper_stem_error holds a ws_err message");

/* FFTW's planner and destroyer are not thread-safe: contexts are made and freed one at
 * a time in a process. */
static pthread_mutex_t g_plan_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_contexts; /* contexts alive, under g_plan_mu: the last one out empties the kept
                        * result buffers (whisper_stem_array_free) */
static void bufs_drain(void);

const char *whisper_stem_version(void)
{
    return VERSION_STRING;
}

int ws_api_fail(whisper_stem_error *err, const ws_err *e)
{
    if (err)
        snprintf(err->msg, sizeof err->msg, "%s", e->msg);
    return -1;
}

/* One line into err, printf-style; returns -1. */
static int failf(whisper_stem_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(whisper_stem_error *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void zero_array(whisper_stem_array *a)
{
    if (a)
        memset(a, 0, sizeof *a);
}

whisper_stem_params whisper_stem_default_params(void)
{
    whisper_stem_params p = {.model = NULL, .device = "auto", .precision = "fp32",
                             .threads = 0, .n_mels = 0, .pad = WHISPER_STEM_PAD_AUDIO,
                             .pos = 0};
    return p;
}

static ws_pad map_pad(int pad)
{
    return pad == WHISPER_STEM_PAD_NONE ? WS_PAD_NONE
           : pad == WHISPER_STEM_PAD_MEL0 ? WS_PAD_MEL0
                                          : WS_PAD_AUDIO;
}

/* The GPU path of the context (internal.h): the stem's batcher, or without a model one of
 * the log-Mel alone on GPU `ordinal`. Slots: 3 (one call's upload, another's kernels and a
 * third's download at once); windows a slot: 16, fewer where a slot's results would pass
 * 48 MiB (large: 6), as the command's; staging slabs for a batch's inputs in flight. */
static int make_batcher(whisper_stem *ctx, int ordinal, ws_err *e)
{
    const int d = ctx->have_model ? ctx->model.d : 0;
    ws_gpu_batch_opts bo = {.mel_on_gpu = 1, .stem = ctx->on_gpu, .add_pos = ctx->pos,
                            .out_f16 = 0, .n_mels = ctx->n_mels, .filters = ws_mel_filters(ctx->mel),
                            .slots = 3};
    const size_t out = d ? (size_t)1500 * d * 4 : (size_t)ctx->n_mels * WS_CHUNK_FRAMES * 4;
    const size_t w = ((size_t)48 << 20) / out;
    bo.max_windows = w < 1 ? 1 : w > 16 ? 16 : (int)w;
    size_t slabs = (size_t)(2 * ctx->threads + 2 + 2 * bo.max_windows) * ((size_t)2 << 20);
    bo.stage_bytes = slabs < ((size_t)256 << 20) ? slabs : ((size_t)256 << 20);
    if (ctx->on_gpu && ctx->pos && ws_stem_gpu_prepare_add(ctx->stem, WS_CHUNK_FRAMES, e))
        return -1;
    ws_err ge = {{0}};
    ctx->batcher = ws_gpu_batcher_new(ctx->on_gpu ? ws_stem_gpu(ctx->stem) : NULL, ordinal, &bo, &ge);
    if (!ctx->batcher)
        return ws_errf(e, "params.device: the GPU's log-Mel and batches: %s", ge.msg);
    const int S = ws_gpu_batch_slots(ctx->batcher);
    if (!(ctx->slot_owner = calloc((size_t)S, sizeof(int))) ||
        !(ctx->slot_used = calloc((size_t)S, sizeof(int))))
        return ws_errf(e, "out of memory");
    ctx->mel_gpu = 1;
    snprintf(ctx->mel_name, sizeof ctx->mel_name, "cuda:%d", ordinal);
    if (!ctx->on_gpu)
        snprintf(ctx->device, sizeof ctx->device, "cpu");
    return 0;
}

/* Builds ctx from p; with g_plan_mu held. 0, or -1 with e. */
static int build(whisper_stem *ctx, const whisper_stem_params *p, ws_err *e)
{
    ws_device_kind kind;
    int ordinal;
    ws_precision prec = WS_PREC_FP32;
    if (ws_device_parse(p->device, &kind, &ordinal))
        return ws_errf(e, "params.device '%s': must be auto, cpu, cuda or cuda:N (N 0 .. 1023)",
                       p->device);
    if (p->precision && ws_precision_parse(p->precision, &prec))
        return ws_errf(e, "params.precision '%s': must be fp32, tf32, bf16 or fp16",
                       p->precision);
    if (p->threads < 0 || p->threads > MAX_THREADS)
        return ws_errf(e, "params.threads %d: must be 0 (the CPUs this process may use) or "
                          "1 .. %d", p->threads, MAX_THREADS);
    if (p->n_mels != 0 && p->n_mels != 80 && p->n_mels != 128)
        return ws_errf(e, "params.n_mels %d: must be 0 (the model's), 80 or 128", p->n_mels);
    if (p->pad != WHISPER_STEM_PAD_AUDIO && p->pad != WHISPER_STEM_PAD_NONE &&
        p->pad != WHISPER_STEM_PAD_MEL0)
        return ws_errf(e, "params.pad %d: must be WHISPER_STEM_PAD_AUDIO (0), _NONE (1) or "
                          "_MEL0 (2)", p->pad);
    ctx->threads = p->threads ? p->threads : ws_ncpu();
    ctx->pad = map_pad(p->pad);
    ctx->pos = p->pos != 0;
    snprintf(ctx->device, sizeof ctx->device, "cpu");

    if (p->model) {
        if (ws_model_load(&ctx->model, p->model, e))
            return -1;
        ctx->have_model = 1;
        if (p->n_mels && p->n_mels != ctx->model.n_mels)
            return ws_errf(e, "params.n_mels %d, but the model %s takes %d mel bands", p->n_mels,
                           p->model, ctx->model.n_mels);
        ctx->n_mels = ctx->model.n_mels;
        ws_stem_choice sc;
        ws_err ge = {{0}};
        int rc = ws_frontend_stem(&ctx->model, kind, ordinal, prec, ctx->threads, &sc, &ge);
        if (rc > 0)
            return ws_errf(e, "params.device '%s': %s", p->device, ge.msg);
        if (rc < 0)
            return *e = ge, -1;
        ctx->stem = sc.stem;
        if (sc.on_gpu) {
            /* the launches the command's batches make: a window's bits do not depend
             * on the other windows of the call, and equal the command's */
            ws_gpu_set_fixed(ws_stem_gpu(ctx->stem), 1);
            ctx->on_gpu = 1;
            snprintf(ctx->device, sizeof ctx->device, "cuda:%d", ordinal);
        }
    } else {
        ctx->n_mels = p->n_mels ? p->n_mels : 80;
        char name[160]; /* the log-Mel runs on the CPU; still, CUDA may have been asked for */
        ws_err ge = {{0}};
        if (ws_frontend_require_gpu(kind, ordinal, name, sizeof name, &ge))
            return ws_errf(e, "params.device '%s': %s", p->device, ge.msg);
    }
    if (!(ctx->mel = ws_mel_new(ctx->n_mels, ctx->threads, e)))
        return -1;
    ctx->ordinal = ordinal;
    if (ctx->on_gpu || (!p->model && kind == WS_DEVICE_CUDA)) {
        ws_err be = {{0}};
        if (make_batcher(ctx, ordinal, &be) == 0)
            return 0;
        if (kind == WS_DEVICE_CUDA)
            return *e = be, -1;
        /* "auto" with the stem on the GPU: the log-Mel on the CPU then, as before batches */
        ws_gpu_batcher_free(ctx->batcher);
        ctx->batcher = NULL;
        ctx->mel_gpu = 0;
    }
    return 0;
}

static void destroy(whisper_stem *ctx)
{
    ws_gpu_batcher_free(ctx->batcher); /* before the stem: it shares the stem's context */
    ctx->batcher = NULL;
    free(ctx->slot_owner);
    free(ctx->slot_used);
    ws_stem_free(ctx->stem);
    ws_mel_free(ctx->mel);
    if (ctx->have_model)
        ws_model_free(&ctx->model);
}

whisper_stem *whisper_stem_new(const whisper_stem_params *p, whisper_stem_error *err)
{
    whisper_stem_params def = whisper_stem_default_params();
    if (!p)
        p = &def;
    whisper_stem *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return failf(err, "whisper_stem_new: out of memory"), NULL;
    ws_err e = {{0}};
    pthread_mutex_lock(&g_plan_mu);
    int rc = build(ctx, p, &e);
    if (rc)
        destroy(ctx);
    else
        g_contexts++;
    pthread_mutex_unlock(&g_plan_mu);
    if (rc) {
        free(ctx);
        return ws_api_fail(err, &e), NULL;
    }
    pthread_mutex_init(&ctx->stem_mu, NULL);
    pthread_cond_init(&ctx->slot_cv, NULL);
    return ctx;
}

void whisper_stem_free(whisper_stem *ctx)
{
    if (!ctx)
        return;
    pthread_mutex_lock(&g_plan_mu);
    destroy(ctx);
    const int last = --g_contexts == 0;
    pthread_mutex_unlock(&g_plan_mu);
    if (last)
        bufs_drain();
    pthread_mutex_destroy(&ctx->stem_mu);
    pthread_cond_destroy(&ctx->slot_cv);
    free(ctx);
}

int whisper_stem_set_mel_device(whisper_stem *ctx, const char *mel_device, whisper_stem_error *err)
{
    if (!ctx)
        return failf(err, "whisper_stem_set_mel_device: ctx is NULL");
    if (!mel_device)
        return failf(err, "whisper_stem_set_mel_device: mel_device is NULL");
    if (!strcmp(mel_device, "cpu")) {
        ctx->mel_gpu = 0;
        return 0;
    }
    if (strcmp(mel_device, "auto") && strcmp(mel_device, "cuda"))
        return failf(err, "mel_device '%s': must be auto, cpu or cuda", mel_device);
    if (ctx->batcher) {
        ctx->mel_gpu = 1;
        return 0;
    }
    if (!strcmp(mel_device, "cuda"))
        return failf(err, "mel_device 'cuda': the context is on the CPU (device '%s'); the log-Mel "
                          "runs on a GPU only with the stem there, or without a model with device "
                          "cuda", ctx->device);
    return 0;
}

/* "default" or "openai" as ws_audio_decode; -1 for another name. */
static int decode_parse(const char *name)
{
    if (!strcmp(name, "default"))
        return WS_DECODE_DEFAULT;
    if (!strcmp(name, "openai"))
        return WS_DECODE_OPENAI;
    return -1;
}

int whisper_stem_set_decode(whisper_stem *ctx, const char *decode, whisper_stem_error *err)
{
    if (!ctx)
        return failf(err, "whisper_stem_set_decode: ctx is NULL");
    if (!decode)
        return failf(err, "whisper_stem_set_decode: decode is NULL");
    int d = decode_parse(decode);
    if (d < 0)
        return failf(err, "decode '%s': must be default or openai", decode);
    ctx->decode = d;
    return 0;
}

const char *whisper_stem_mel_device(const whisper_stem *ctx)
{
    return ctx && ctx->mel_gpu ? ctx->mel_name : "cpu";
}

/* --- the GPU path ---------------------------------------------------------------- */

int ws_api_slot_take(whisper_stem *ctx, ws_err *e)
{
    return ws_api_slot_get(ctx, 1, e);
}

int ws_api_slot_get(whisper_stem *ctx, int wait, ws_err *e)
{
    const int S = ws_gpu_batch_slots(ctx->batcher);
    for (;;) {
        for (int s = 0; s < S; s++)
            if (!ctx->slot_owner[s]) {
                ctx->slot_owner[s] = 1;
                if (ctx->slot_used[s] && ws_gpu_batch_wait(ctx->batcher, s, e)) {
                    ctx->slot_owner[s] = 0;
                    pthread_cond_broadcast(&ctx->slot_cv);
                    return -1;
                }
                ctx->slot_used[s] = 0;
                ws_gpu_batch_clear(ctx->batcher, s);
                return s;
            }
        if (!wait)
            return -2;
        pthread_cond_wait(&ctx->slot_cv, &ctx->stem_mu);
    }
}

void ws_api_slot_give(whisper_stem *ctx, int s)
{
    ctx->slot_owner[s] = 0;
    pthread_cond_broadcast(&ctx->slot_cv);
}

int ws_api_gpu_input(const whisper_stem *ctx, const ws_audio *a, ws_gpu_input *in,
                     ws_mel_geom *g, ws_err *e)
{
    if (ws_mel_geometry(a->n, ctx->pad, g, e))
        return -1;
    *in = (ws_gpu_input){.x = a->x, .n = a->n, .n_total = g->n_total,
                         .n_frames = (uint64_t)g->n_frames, .content = (uint64_t)g->content,
                         .n_win = g->n_win, .win_frames = g->win_frames};
    return 0;
}

void ws_api_info(const whisper_stem *ctx, const ws_audio *a, whisper_stem_info *info)
{
    memset(info, 0, sizeof *info);
    ws_mel_geom g;
    ws_err e;
    if (ws_mel_geometry(a->n, ctx->pad, &g, &e))
        return;
    info->windows = g.n_win;
    const long long content = (long long)(a->n / WS_HOP);
    long long last = ctx->pad == WS_PAD_NONE ? content : content - (long long)WS_CHUNK_FRAMES * (g.n_win - 1);
    info->content_frames = (int)(last < 0 ? 0 : last > g.win_frames ? g.win_frames : last);
    info->valid_ctx = (info->content_frames + 1) / 2;
    info->duration_s = (double)a->n / 16000.0;
    info->src_rate = a->src_rate;
    info->src_channels = a->src_channels;
}

size_t ws_api_emb_shape(const whisper_stem *ctx, int n_win, int n_frames, whisper_stem_array *out)
{
    const int d = ctx->model.d, t_out = ws_stem_out_len(n_frames);
    size_t total;
    if (ws_mul_size((size_t)t_out * (size_t)d, (size_t)n_win, &total) ||
        ws_mul_size(total, sizeof(float), &total))
        return 0;
    out->data = NULL;
    out->ndim = 0;
    if (n_win > 1)
        out->shape[out->ndim++] = n_win;
    out->shape[out->ndim++] = t_out;
    out->shape[out->ndim++] = d;
    return total;
}

int ws_api_emb_array(const whisper_stem *ctx, int n_win, int n_frames, whisper_stem_array *out,
                     ws_err *e)
{
    const size_t total = ws_api_emb_shape(ctx, n_win, n_frames, out);
    if (!total)
        return ws_errf(e, "%d windows of %d frames: the embeddings would overflow", n_win, n_frames);
    if (!(out->data = ws_api_buf_get(total)))
        return ws_errf(e, "out of memory for %zu MiB of embeddings", total >> 20);
    return 0;
}

/* The embeddings of 16 kHz samples with the log-Mel on the GPU: into a host array (out), or
 * with dev set into the device memory dev->alloc gives, on dev->stream. */
typedef struct {
    wscu_stream stream;
    whisper_stem_device_alloc alloc;
    void *user;
    whisper_stem_device_array *out;
} dev_target;

static int upload_result(whisper_stem *ctx, const whisper_stem_array *h, const dev_target *t, ws_err *e);
static int gpu_mel(whisper_stem *ctx, const ws_audio *a, const char *name, ws_mel_out *mo, ws_err *e);

static int gpu_embed(whisper_stem *ctx, const ws_audio *a, whisper_stem_array *out,
                     const dev_target *dev, ws_err *e)
{
    ws_gpu_input in;
    ws_mel_geom g;
    if (ws_api_gpu_input(ctx, a, &in, &g, e))
        return -1;
    if (in.win_frames > WS_CHUNK_FRAMES) { /* one window of more than 30 s (pad NONE): the
                                            * log-Mel on the GPU, the stem as embed_mel's */
        ws_mel_out mo = {0};
        whisper_stem_array h = {0};
        ws_err me = {{0}};
        int rc = gpu_mel(ctx, a, "pcm", &mo, &me);
        if (rc)
            *e = me;
        else
            rc = ws_api_embed_windows(ctx, mo.data, mo.n_windows, mo.n_frames, &h, e);
        ws_mel_out_free(&mo);
        if (!rc && dev)
            rc = upload_result(ctx, &h, dev, e);
        if (rc || dev)
            whisper_stem_array_free(&h);
        else
            *out = h;
        return rc;
    }
    whisper_stem_array shape = {0};
    const size_t bytes = ws_api_emb_shape(ctx, in.n_win, in.win_frames, &shape);
    if (!bytes)
        return ws_errf(e, "%d windows: the embeddings would overflow", in.n_win);
    if (!dev && !(shape.data = ws_api_buf_get(bytes)))
        return ws_errf(e, "out of memory for %zu MiB of embeddings", bytes >> 20);
    wscu_devptr dst = 0;
    if (dev) {
        dev->out->ndim = shape.ndim;
        memcpy(dev->out->shape, shape.shape, sizeof shape.shape);
        void *p = dev->alloc(dev->user, bytes);
        if (!p)
            return ws_errf(e, "the device allocator gave no memory for %zu bytes", bytes);
        dev->out->data = p; /* the caller's to free, also when refused below */
        if ((uintptr_t)p % 16)
            return ws_errf(e, "the device allocator's pointer %p is not 16-byte aligned", p);
        dst = (wscu_devptr)(uintptr_t)p;
    }
    int rc = 0;
    pthread_mutex_lock(&ctx->stem_mu);
    if (!ws_gpu_batch_fits(ctx->batcher, &in)) {
        rc = ws_gpu_embed_alone(ctx->batcher, &in, dev ? dev->stream : NULL, dev ? NULL : shape.data,
                                dst, e);
    } else {
        const int s = ws_api_slot_take(ctx, e);
        if (s < 0) {
            rc = -1;
        } else {
            if (!ws_gpu_batch_add(ctx->batcher, s, &in))
                rc = ws_errf(e, "a GPU batch did not take the input");
            int sr = 0, alone = 0;
            void *host = shape.data;
            while (!rc && (sr = ws_gpu_batch_submit_to(ctx->batcher, s, "embed", dev ? dev->stream : NULL,
                                                       dev ? &dst : NULL, dev ? NULL : &host, e)) ==
                              WS_BATCH_SHRUNK) {
                if (!ws_gpu_batch_fits(ctx->batcher, &in)) { /* the slots shrank below it */
                    rc = ws_gpu_embed_alone(ctx->batcher, &in, dev ? dev->stream : NULL,
                                            dev ? NULL : shape.data, dst, e);
                    alone = 1;
                    sr = 0;
                    break;
                }
                ws_gpu_batch_add(ctx->batcher, s, &in);
            }
            if (!rc && sr < 0)
                rc = -1;
            if (!alone) /* even after a failed submission: work of it may be queued */
                ctx->slot_used[s] = 1;
            if (!rc && !dev && !alone) { /* the result is in shape.data already */
                size_t got = 0;
                rc = ws_gpu_batch_wait(ctx->batcher, s, e);
                if (!rc && (ws_gpu_batch_output(ctx->batcher, s, 0, &got), got != bytes))
                    rc = ws_errf(e, "a GPU batch gave %zu bytes, not %zu", got, bytes);
            }
            ws_api_slot_give(ctx, s);
        }
    }
    pthread_mutex_unlock(&ctx->stem_mu);
    if (rc) {
        free(shape.data);
        return -1;
    }
    if (!dev)
        *out = shape;
    return 0;
}

int ws_api_gpu_embed(whisper_stem *ctx, const ws_audio *a, whisper_stem_array *out, ws_err *e)
{
    return gpu_embed(ctx, a, out, NULL, e);
}

/* The log-Mel of 16 kHz samples on the GPU into mo ([n_win][n_mels][F], host). */
static int gpu_mel(whisper_stem *ctx, const ws_audio *a, const char *name, ws_mel_out *mo, ws_err *e)
{
    ws_gpu_input in;
    ws_mel_geom g;
    ws_err ge = {{0}};
    if (ws_api_gpu_input(ctx, a, &in, &g, &ge))
        return ws_errf(e, "%s: %s", name, ge.msg);
    size_t total;
    if (ws_mul_size((size_t)in.n_win * (size_t)ctx->n_mels, (size_t)in.win_frames, &total) ||
        ws_mul_size(total, sizeof(float), &total))
        return ws_errf(e, "%s: the log-Mel would overflow", name);
    memset(mo, 0, sizeof *mo);
    if (!(mo->data = malloc(total ? total : 4)))
        return ws_errf(e, "%s: out of memory for a %d-window log-Mel", name, in.n_win);
    mo->n_windows = in.n_win;
    mo->n_mels = ctx->n_mels;
    mo->n_frames = in.win_frames;
    pthread_mutex_lock(&ctx->stem_mu);
    int rc = ws_gpu_mel_alone(ctx->batcher, &in, mo->data, &ge);
    pthread_mutex_unlock(&ctx->stem_mu);
    if (rc) {
        ws_mel_out_free(mo);
        return ws_errf(e, "%s: %s", name, ge.msg);
    }
    return 0;
}

int whisper_stem_n_mels(const whisper_stem *ctx)
{
    return ctx ? ctx->n_mels : 0;
}

int whisper_stem_d_model(const whisper_stem *ctx)
{
    return ctx && ctx->have_model ? ctx->model.d : 0;
}

const char *whisper_stem_device(const whisper_stem *ctx)
{
    return ctx ? ctx->device : "cpu";
}

/* Result buffers. A result is megabytes; a fresh allocation of that size is mapped anew
 * and faults in page by page as the result is written (0.2-0.3 ms for a 30 s window's
 * 2.3 MB). So whisper_stem_array_free keeps a few large buffers for the next results:
 * at most CACHE_N of them, CACHE_BYTES in all, each at least CACHE_MIN. They are plain
 * malloc blocks: one freed with free() instead is no harm. */
#define CACHE_N 8
#define CACHE_MIN ((size_t)256 << 10)
#define CACHE_BYTES ((size_t)64 << 20)

static struct {
    pthread_mutex_t mu;
    void *p[CACHE_N];
    size_t cap[CACHE_N];
    int n;
    size_t bytes;
} g_bufs = {.mu = PTHREAD_MUTEX_INITIALIZER};

void *ws_api_buf_get(size_t bytes)
{
    if (bytes >= CACHE_MIN) {
        pthread_mutex_lock(&g_bufs.mu);
        int best = -1;
        for (int i = 0; i < g_bufs.n; i++) /* the smallest that holds it, up to twice its size */
            if (g_bufs.cap[i] >= bytes && g_bufs.cap[i] / 2 <= bytes &&
                (best < 0 || g_bufs.cap[i] < g_bufs.cap[best]))
                best = i;
        void *p = NULL;
        if (best >= 0) {
            p = g_bufs.p[best];
            g_bufs.bytes -= g_bufs.cap[best];
            g_bufs.n--;
            g_bufs.p[best] = g_bufs.p[g_bufs.n];
            g_bufs.cap[best] = g_bufs.cap[g_bufs.n];
        }
        pthread_mutex_unlock(&g_bufs.mu);
        if (p)
            return p;
    }
    return malloc(bytes ? bytes : 4);
}

static void buf_put(void *p, size_t bytes)
{
    if (p && bytes >= CACHE_MIN && bytes <= CACHE_BYTES / 2) {
        pthread_mutex_lock(&g_bufs.mu);
        while (g_bufs.n && (g_bufs.n == CACHE_N || g_bufs.bytes + bytes > CACHE_BYTES)) {
            g_bufs.n--; /* the oldest out */
            g_bufs.bytes -= g_bufs.cap[0];
            free(g_bufs.p[0]);
            memmove(g_bufs.p, g_bufs.p + 1, (size_t)g_bufs.n * sizeof g_bufs.p[0]);
            memmove(g_bufs.cap, g_bufs.cap + 1, (size_t)g_bufs.n * sizeof g_bufs.cap[0]);
        }
        g_bufs.p[g_bufs.n] = p;
        g_bufs.cap[g_bufs.n++] = bytes;
        g_bufs.bytes += bytes;
        pthread_mutex_unlock(&g_bufs.mu);
        return;
    }
    free(p);
}

/* The kept buffers back to the allocator (the last context is freed). */
static void bufs_drain(void)
{
    pthread_mutex_lock(&g_bufs.mu);
    for (int i = 0; i < g_bufs.n; i++)
        free(g_bufs.p[i]);
    g_bufs.n = 0;
    g_bufs.bytes = 0;
    pthread_mutex_unlock(&g_bufs.mu);
}

void whisper_stem_array_free(whisper_stem_array *a)
{
    if (!a)
        return;
    buf_put(a->data, a->data ? malloc_usable_size(a->data) : 0); /* the block's own size, not
                                                                  * the (caller-writable) shape */
    memset(a, 0, sizeof *a);
}

/* o as the loader's options (decode: o's, else fallback): 0, or -1 with e. */
static int audio_opts(const char *fn, const whisper_stem_audio_opts *o, int fallback,
                      ws_audio_opts *ao, ws_err *e)
{
    memset(ao, 0, sizeof *ao);
    ao->decode = fallback;
    if (!o)
        return 0;
    if (o->decode && (ao->decode = decode_parse(o->decode)) < 0)
        return ws_errf(e, "%s: decode '%s': must be default or openai", fn, o->decode);
    ao->start_s = o->start; /* checked by the loader, which names the input */
    ao->duration_s = o->duration;
    return 0;
}

/* A path, or data[0 .. size) named name, decoded with ao. */
static int load_any(const char *path, const void *data, size_t size, const char *name,
                    const ws_audio_opts *ao, ws_audio *a, ws_err *e)
{
    if (path)
        return ws_audio_load_opts(a, path, ao, e);
    return ws_audio_load_memory_opts(a, data, size, name ? name : "(memory)", ao, e);
}

/* The loaders' common part: path, or (path NULL) the bytes data[0 .. size). */
static int load_audio_into(const char *fn, const char *path, const void *data, size_t size,
                           const char *name, const whisper_stem_audio_opts *o,
                           whisper_stem_array *out, whisper_stem_error *err)
{
    zero_array(out);
    if (!out)
        return failf(err, "%s: out is NULL", fn);
    ws_audio a;
    ws_audio_opts ao;
    ws_err e = {{0}};
    if (audio_opts(fn, o, WS_DECODE_DEFAULT, &ao, &e) ||
        load_any(path, data, size, name, &ao, &a, &e))
        return ws_api_fail(err, &e);
    out->data = a.x;
    out->ndim = 1;
    out->shape[0] = (int64_t)a.n;
    return 0;
}

int whisper_stem_load_audio(const char *path, whisper_stem_array *out, whisper_stem_error *err)
{
    zero_array(out);
    if (!path)
        return failf(err, "whisper_stem_load_audio: path is NULL");
    return load_audio_into("whisper_stem_load_audio", path, NULL, 0, NULL, NULL, out, err);
}

int whisper_stem_load_audio_opts(const char *path, const whisper_stem_audio_opts *o,
                                 whisper_stem_array *out, whisper_stem_error *err)
{
    zero_array(out);
    if (!path)
        return failf(err, "whisper_stem_load_audio_opts: path is NULL");
    return load_audio_into("whisper_stem_load_audio_opts", path, NULL, 0, NULL, o, out, err);
}

int whisper_stem_load_audio_memory(const void *data, size_t size, const char *name,
                                   const whisper_stem_audio_opts *o, whisper_stem_array *out,
                                   whisper_stem_error *err)
{
    static const unsigned char none[1]; /* an empty buffer may come as NULL */
    zero_array(out);
    if (!data && size)
        return failf(err, "whisper_stem_load_audio_memory: data is NULL");
    return load_audio_into("whisper_stem_load_audio_memory", NULL, data ? data : none, size,
                           name, o, out, err);
}

int ws_api_mel(const whisper_stem *ctx, const ws_audio *a, int n_threads, const char *name,
               ws_mel_out *mo, ws_err *e)
{
    ws_err me = {{0}};
    if (ctx->mel_gpu)
        return gpu_mel((whisper_stem *)ctx, a, name, mo, e);
    if (ws_mel_compute_nt(ctx->mel, a->x, a->n, ctx->pad, n_threads, mo, &me))
        return ws_errf(e, "%s: %s", name, me.msg);
    return 0;
}

/* Checks ctx, pcm and out, and brings the samples to 16 kHz mono: 16 kHz mono PCM is
 * used in place (a->x is then the caller's, borrowed: pcm_done leaves it). */
static int pcm_in(const char *fn, whisper_stem *ctx, const float *pcm, size_t n, int rate,
                  int channels, whisper_stem_array *out, ws_audio *a, ws_err *e)
{
    memset(a, 0, sizeof *a);
    if (!ctx)
        return ws_errf(e, "%s: ctx is NULL", fn);
    if (!out)
        return ws_errf(e, "%s: out is NULL", fn);
    if (n && !pcm)
        return ws_errf(e, "%s: pcm is NULL with n_samples %zu", fn, n);
    const int v = ws_audio_pcm_view(a, pcm, n, rate, channels, ctx->threads, "pcm", e);
    if (v)
        return v < 0 ? -1 : 0;
    return ws_audio_from_pcm(a, pcm, n, rate, channels, "pcm", e);
}

/* Frees what pcm_in made (not the caller's samples). */
static void pcm_done(ws_audio *a, const float *pcm)
{
    if (a->x && a->x != pcm)
        ws_audio_free(a);
    memset(a, 0, sizeof *a);
}

int whisper_stem_log_mel(whisper_stem *ctx, const float *pcm, size_t n_samples, int sample_rate,
                         int channels, whisper_stem_array *out, whisper_stem_error *err)
{
    zero_array(out);
    ws_err e = {{0}};
    ws_audio a;
    ws_mel_out mo = {0};
    if (pcm_in("whisper_stem_log_mel", ctx, pcm, n_samples, sample_rate, channels, out, &a, &e))
        return ws_api_fail(err, &e);
    int rc = ws_api_mel(ctx, &a, ctx->threads, "pcm", &mo, &e);
    pcm_done(&a, pcm);
    if (rc)
        return ws_api_fail(err, &e);
    const size_t nm = (size_t)mo.n_mels, F = (size_t)mo.n_frames, nw = (size_t)mo.n_windows;
    float *data = mo.data;
    if (nw > 1) { /* [n_win][n_mels][F] -> [n_mels][n_win * F] */
        if (!(data = malloc(nw * nm * F * sizeof *data))) {
            ws_mel_out_free(&mo);
            return failf(err, "whisper_stem_log_mel: out of memory for a %zu-frame log-Mel",
                         nw * F);
        }
        for (size_t w = 0; w < nw; w++)
            for (size_t m = 0; m < nm; m++)
                memcpy(data + m * nw * F + w * F, mo.data + (w * nm + m) * F, F * sizeof *data);
        ws_mel_out_free(&mo);
    }
    out->data = data;
    out->ndim = 2;
    out->shape[0] = (int64_t)nm;
    out->shape[1] = (int64_t)(nw * F);
    return 0;
}

/* The stem over n_win windows of mel, each [n_mels][F] at get(i) (windows in place, or
 * regrouped by the caller), into out. */
typedef const float *(*window_fn)(void *ctx, int w0, int nw, ws_err *e);

static int embed_chunks(whisper_stem *ctx, int n_win, int F, window_fn get, void *get_ctx,
                        whisper_stem_array *out, ws_err *e)
{
    if (!ctx->have_model)
        return ws_errf(e, "no model: the context was made with params.model NULL (log-Mel "
                          "only)");
    const int d = ctx->model.d, t_out = ws_stem_out_len(F);
    size_t per, total;
    if (ws_mul_size((size_t)t_out, (size_t)d, &per) ||
        ws_mul_size(per, (size_t)n_win, &total) || ws_mul_size(total, sizeof(float), &total))
        return ws_errf(e, "%d windows of %d frames: the embeddings would overflow", n_win, F);
    float *data = ws_api_buf_get(total);
    if (!data)
        return ws_errf(e, "out of memory for %zu MiB of embeddings", total >> 20);
    size_t cw = STEM_CHUNK_BYTES / (per * sizeof(float));
    if (cw < 1)
        cw = 1;
    int rc = 0;
    pthread_mutex_lock(&ctx->stem_mu);
    for (int w0 = 0; w0 < n_win && !rc; w0 += (int)cw) {
        int nw = n_win - w0 < (int)cw ? n_win - w0 : (int)cw;
        const float *mel = get(get_ctx, w0, nw, e);
        rc = !mel || ws_stem_run(ctx->stem, mel, nw, F, ctx->pos, data + (size_t)w0 * per, e);
    }
    pthread_mutex_unlock(&ctx->stem_mu);
    if (rc) {
        free(data);
        return -1;
    }
    out->data = data;
    out->ndim = 0;
    if (n_win > 1)
        out->shape[out->ndim++] = n_win;
    out->shape[out->ndim++] = t_out;
    out->shape[out->ndim++] = d;
    return 0;
}

typedef struct {
    const float *mel;
    size_t win_floats;
} in_place;

static const float *get_in_place(void *c, int w0, int nw, ws_err *e)
{
    in_place *p = c;
    (void)nw;
    (void)e;
    return p->mel + (size_t)w0 * p->win_floats;
}

int ws_api_embed_windows(whisper_stem *ctx, const float *mel, int n_win, int n_frames,
                         whisper_stem_array *out, ws_err *e)
{
    in_place p = {mel, (size_t)ctx->n_mels * (size_t)n_frames};
    return embed_chunks(ctx, n_win, n_frames, get_in_place, &p, out, e);
}

int whisper_stem_embed_pcm(whisper_stem *ctx, const float *pcm, size_t n_samples,
                           int sample_rate, int channels, whisper_stem_array *out,
                           whisper_stem_error *err)
{
    zero_array(out);
    ws_err e = {{0}};
    if (ctx && !ctx->have_model)
        return failf(err, "whisper_stem_embed_pcm: no model: the context was made with "
                          "params.model NULL (log-Mel only)");
    ws_audio a;
    ws_mel_out mo = {0};
    if (pcm_in("whisper_stem_embed_pcm", ctx, pcm, n_samples, sample_rate, channels, out, &a,
               &e))
        return ws_api_fail(err, &e);
    if (ctx->on_gpu && ctx->mel_gpu) {
        int rc = gpu_embed(ctx, &a, out, NULL, &e);
        pcm_done(&a, pcm);
        return rc ? ws_api_fail(err, &e) : 0;
    }
    int rc = ws_api_mel(ctx, &a, ctx->threads, "pcm", &mo, &e);
    pcm_done(&a, pcm);
    if (!rc)
        rc = ws_api_embed_windows(ctx, mo.data, mo.n_windows, mo.n_frames, out, &e);
    ws_mel_out_free(&mo);
    return rc ? ws_api_fail(err, &e) : 0;
}

/* [n_mels][n_win * F] regrouped into [nw][n_mels][F], a chunk at a time. */
typedef struct {
    const float *mel;
    int n_mels, n_win, F;
    float *buf;
} regroup;

static const float *get_regrouped(void *c, int w0, int nw, ws_err *e)
{
    regroup *r = c;
    const size_t F = (size_t)r->F, nm = (size_t)r->n_mels, row = (size_t)r->n_win * F;
    if (!r->buf && !(r->buf = malloc((size_t)nw * nm * F * sizeof *r->buf)))
        return ws_errf(e, "out of memory for %d log-Mel windows", nw), NULL;
    for (int w = 0; w < nw; w++)
        for (size_t m = 0; m < nm; m++)
            memcpy(r->buf + ((size_t)w * nm + m) * F, r->mel + m * row + (size_t)(w0 + w) * F,
                   F * sizeof *r->buf);
    return r->buf;
}

int whisper_stem_embed_mel(whisper_stem *ctx, const float *mel, int n_mels, int64_t n_frames,
                           whisper_stem_array *out, whisper_stem_error *err)
{
    static const char fn[] = "whisper_stem_embed_mel";
    zero_array(out);
    if (!ctx)
        return failf(err, "%s: ctx is NULL", fn);
    if (!out)
        return failf(err, "%s: out is NULL", fn);
    if (!mel)
        return failf(err, "%s: mel is NULL", fn);
    if (!ctx->have_model)
        return failf(err, "%s: no model: the context was made with params.model NULL "
                          "(log-Mel only)", fn);
    if (n_mels != ctx->n_mels)
        return failf(err, "%s: n_mels %d, but the model takes %d mel bands", fn, n_mels,
                     ctx->n_mels);
    int n_win, F;
    if (ctx->pad == WS_PAD_NONE) {
        if (n_frames < 1 || n_frames > INT_MAX / 2)
            return failf(err, "%s: n_frames %lld: must be 1 .. %d (one window, pad NONE)", fn,
                         (long long)n_frames, INT_MAX / 2);
        n_win = 1;
        F = (int)n_frames;
    } else {
        if (n_frames < WS_CHUNK_FRAMES || n_frames % WS_CHUNK_FRAMES ||
            n_frames / WS_CHUNK_FRAMES > INT_MAX)
            return failf(err, "%s: n_frames %lld: must be a positive multiple of %d (whole "
                              "30 s windows)", fn, (long long)n_frames, WS_CHUNK_FRAMES);
        n_win = (int)(n_frames / WS_CHUNK_FRAMES);
        F = WS_CHUNK_FRAMES;
    }
    /* a NaN or an infinity would run through the stem into every output row it reaches */
    const size_t row = (size_t)n_win * (size_t)F;
    for (size_t m = 0; m < (size_t)n_mels; m++)
        for (size_t t = 0; t < row; t++)
            if (!isfinite(mel[m * row + t]))
                return failf(err, "%s: mel[%zu][%zu] is %s: a log-Mel must be finite", fn, m, t,
                             isnan(mel[m * row + t]) ? "NaN" : "infinite");
    ws_err e = {{0}};
    int rc;
    if (n_win == 1) {
        rc = ws_api_embed_windows(ctx, mel, 1, F, out, &e);
    } else {
        regroup r = {mel, n_mels, n_win, F, NULL};
        rc = embed_chunks(ctx, n_win, F, get_regrouped, &r, out, &e);
        free(r.buf);
    }
    return rc ? ws_api_fail(err, &e) : 0;
}

/* The embeddings of a file (path) or of a file's bytes (data, size), decoded with o (its
 * decode NULL: the context's). Errors name the path or name. */
static int embed_source(const char *fn, whisper_stem *ctx, const char *path, const void *data,
                        size_t size, const char *name, const whisper_stem_audio_opts *o,
                        whisper_stem_array *out, whisper_stem_error *err)
{
    zero_array(out);
    if (!ctx)
        return failf(err, "%s: ctx is NULL", fn);
    if (!out)
        return failf(err, "%s: out is NULL", fn);
    if (!ctx->have_model)
        return failf(err, "%s: no model: the context was made with params.model NULL "
                          "(log-Mel only)", fn);
    const char *who = path ? path : name ? name : "(memory)";
    ws_audio a;
    ws_audio_opts ao;
    ws_mel_out mo = {0};
    ws_err e = {{0}};
    if (audio_opts(fn, o, ctx->decode, &ao, &e) || load_any(path, data, size, who, &ao, &a, &e))
        return ws_api_fail(err, &e);
    if (ctx->on_gpu && ctx->mel_gpu) {
        int rc = gpu_embed(ctx, &a, out, NULL, &e);
        ws_audio_free(&a);
        if (rc) {
            ws_err pe = e;
            ws_errf(&e, "%s: %s", who, pe.msg);
        }
        return rc ? ws_api_fail(err, &e) : 0;
    }
    int rc = ws_api_mel(ctx, &a, ctx->threads, who, &mo, &e);
    ws_audio_free(&a);
    if (!rc && ws_api_embed_windows(ctx, mo.data, mo.n_windows, mo.n_frames, out, &e)) {
        ws_err pe = e;
        ws_errf(&e, "%s: %s", who, pe.msg);
        rc = -1;
    }
    ws_mel_out_free(&mo);
    return rc ? ws_api_fail(err, &e) : 0;
}

int whisper_stem_embed_file(whisper_stem *ctx, const char *path, whisper_stem_array *out,
                            whisper_stem_error *err)
{
    return whisper_stem_embed_file_opts(ctx, path, NULL, out, err);
}

int whisper_stem_embed_file_opts(whisper_stem *ctx, const char *path,
                                 const whisper_stem_audio_opts *o, whisper_stem_array *out,
                                 whisper_stem_error *err)
{
    zero_array(out);
    const char *fn = o ? "whisper_stem_embed_file_opts" : "whisper_stem_embed_file";
    if (ctx && out && !path)
        return failf(err, "%s: path is NULL", fn);
    return embed_source(fn, ctx, path, NULL, 0, NULL, o, out, err);
}

int whisper_stem_embed_memory(whisper_stem *ctx, const void *data, size_t size, const char *name,
                              const whisper_stem_audio_opts *o, whisper_stem_array *out,
                              whisper_stem_error *err)
{
    static const unsigned char none[1];
    zero_array(out);
    if (ctx && out && !data && size)
        return failf(err, "whisper_stem_embed_memory: data is NULL");
    return embed_source("whisper_stem_embed_memory", ctx, NULL, data ? data : none, size, name, o,
                        out, err);
}

/* A host result h up to the device memory t->alloc gives, on t->stream. */
static int upload_result(whisper_stem *ctx, const whisper_stem_array *h, const dev_target *t, ws_err *e)
{
    size_t bytes = sizeof(float);
    for (int i = 0; i < h->ndim; i++)
        bytes *= (size_t)h->shape[i];
    t->out->ndim = h->ndim;
    memcpy(t->out->shape, h->shape, sizeof h->shape);
    void *p = t->alloc(t->user, bytes);
    if (!p)
        return ws_errf(e, "the device allocator gave no memory for %zu bytes", bytes);
    t->out->data = p;
    pthread_mutex_lock(&ctx->stem_mu);
    int rc = ws_gpu_copy_up(ctx->batcher, t->stream, (wscu_devptr)(uintptr_t)p, h->data, bytes, e);
    pthread_mutex_unlock(&ctx->stem_mu);
    return rc;
}

wscu_stream ws_api_stream(void *stream)
{
    /* NULL is the legacy default stream, which the driver calls CU_STREAM_LEGACY (0x1) */
    return stream ? (wscu_stream)stream : (wscu_stream)(uintptr_t)1;
}

int ws_api_gpu_embed_device(whisper_stem *ctx, const ws_audio *a, void *stream,
                            whisper_stem_device_alloc alloc, void *user,
                            whisper_stem_device_array *out, ws_err *e)
{
    dev_target t = {ws_api_stream(stream), alloc, user, out};
    return gpu_embed(ctx, a, NULL, &t, e);
}

int whisper_stem_embed_pcm_device(whisper_stem *ctx, const float *pcm, size_t n_samples,
                                  int sample_rate, int channels, void *stream,
                                  whisper_stem_device_alloc alloc, void *user,
                                  whisper_stem_device_array *out, whisper_stem_error *err)
{
    static const char fn[] = "whisper_stem_embed_pcm_device";
    if (out)
        memset(out, 0, sizeof *out);
    if (!ctx)
        return failf(err, "%s: ctx is NULL", fn);
    if (!out)
        return failf(err, "%s: out is NULL", fn);
    if (!alloc)
        return failf(err, "%s: alloc is NULL", fn);
    if (!ctx->have_model)
        return failf(err, "%s: no model: the context was made with params.model NULL (log-Mel "
                          "only)", fn);
    if (!ctx->on_gpu)
        return failf(err, "%s: the stem runs on the CPU (device '%s'): results on a GPU need "
                          "device cuda", fn, ctx->device);
    ws_err e = {{0}};
    ws_audio a;
    whisper_stem_array dummy;
    if (pcm_in(fn, ctx, pcm, n_samples, sample_rate, channels, &dummy, &a, &e))
        return ws_api_fail(err, &e);
    dev_target t = {ws_api_stream(stream), alloc, user, out};
    int rc;
    if (ctx->mel_gpu) {
        rc = gpu_embed(ctx, &a, NULL, &t, &e);
    } else { /* the CPU's log-Mel: the stem's result to the host, then up */
        whisper_stem_array h = {0};
        ws_mel_out mo = {0};
        rc = ws_api_mel(ctx, &a, ctx->threads, "pcm", &mo, &e) ||
             ws_api_embed_windows(ctx, mo.data, mo.n_windows, mo.n_frames, &h, &e);
        ws_mel_out_free(&mo);
        if (!rc)
            rc = upload_result(ctx, &h, &t, &e);
        whisper_stem_array_free(&h);
    }
    pcm_done(&a, pcm);
    return rc ? ws_api_fail(err, &e) : 0; /* on failure out->data is still the block alloc
                                           * gave (or NULL): the caller's to free */
}

int whisper_stem_pcm_info(const whisper_stem *ctx, size_t n_samples, int sample_rate, int channels,
                          whisper_stem_info *info, whisper_stem_error *err)
{
    if (info)
        memset(info, 0, sizeof *info);
    if (!ctx || !info)
        return failf(err, "whisper_stem_pcm_info: %s is NULL", ctx ? "info" : "ctx");
    if (sample_rate < 1 || sample_rate > 1536000)
        return failf(err, "sample_rate %d: must be 1 .. 1536000", sample_rate);
    if (channels < 1 || channels > WS_AUDIO_MAX_CHANNELS)
        return failf(err, "channels %d: must be 1 .. %d", channels, WS_AUDIO_MAX_CHANNELS);
    const double n16 = ws_audio_out_len((double)n_samples, sample_rate, 16000);
    if (!(n16 <= (double)WS_AUDIO_MAX_SAMPLES))
        return failf(err, "%zu samples at %d Hz give %.0f at 16 kHz, over the limit of %zu", n_samples,
                     sample_rate, n16, WS_AUDIO_MAX_SAMPLES);
    ws_audio a = {.x = NULL, .n = (size_t)n16, .src_rate = sample_rate, .src_channels = channels};
    ws_mel_geom g;
    ws_err e = {{0}};
    if (ws_mel_geometry(a.n, ctx->pad, &g, &e))
        return ws_api_fail(err, &e);
    ws_api_info(ctx, &a, info);
    return 0;
}

/* --- many log-Mels at once ---------------------------------------------------------- */

typedef struct {
    whisper_stem *ctx;
    ws_audio *a;     /* [count] */
    float *out;      /* [count][n_mels][3000] */
    size_t count, per;
    int *failed;     /* per item: its error in errs */
    ws_err *errs;
    /* the GPU path: one group's items [g0, g0 + gn), their slabs, the slot's results */
    void ***slabs;
    int *n_slabs;
    size_t g0, gn;
    int slot;
    const float *const *pcm; /* the inputs, for mel_in_task */
    const size_t *n_in;
    int rate, channels;
} mel_many;

/* Items i, i + n, ...: to 16 kHz mono (pcm_in) and one window each, or failed. */
static int pcm_in(const char *fn, whisper_stem *ctx, const float *pcm, size_t n, int rate,
                  int channels, whisper_stem_array *out, ws_audio *a, ws_err *e);
static void mel_in_task(void *c_, int i, int n)
{
    mel_many *c = c_;
    for (size_t k = (size_t)i; k < c->count; k += (size_t)n) {
        whisper_stem_array dummy;
        ws_mel_geom g;
        ws_err *e = &c->errs[k];
        if (pcm_in("log_mel_batch", c->ctx, c->pcm[k], c->n_in[k], c->rate, c->channels, &dummy, &c->a[k], e) ||
            ws_mel_geometry(c->a[k].n, c->ctx->pad, &g, e))
            c->failed[k] = 1;
        else if (g.n_win != 1)
            c->failed[k] = 1, ws_errf(e, "%zu samples at 16 kHz give %d windows; a batch takes clips of one "
                                         "30 s window (at most 480000 samples at 16 kHz)", c->a[k].n, g.n_win);
    }
}

/* CPU: items i, i + n, ... each on one thread. */
static void mel_cpu_task(void *c_, int i, int n)
{
    mel_many *c = c_;
    for (size_t k = (size_t)i; k < c->count; k += (size_t)n) {
        ws_mel_out mo = {0};
        if (ws_mel_compute_nt(c->ctx->mel, c->a[k].x, c->a[k].n, c->ctx->pad, 1, &mo, &c->errs[k]))
            c->failed[k] = 1;
        else
            memcpy(c->out + k * c->per, mo.data, c->per * sizeof(float));
        ws_mel_out_free(&mo);
    }
}

/* GPU: stage items [g0, g0 + gn) into pinned slabs (task i of n: every n-th item). */
static void stage_task(void *c_, int i, int n)
{
    mel_many *c = c_;
    ws_gpu_batcher *b = c->ctx->batcher;
    for (size_t k = c->g0 + (size_t)i; k < c->g0 + c->gn; k += (size_t)n) {
        const size_t bytes = c->a[k].n * sizeof(float);
        if (bytes && (c->slabs[k] = ws_gpu_stage(b, bytes, &c->n_slabs[k])))
            ws_gpu_stage_copy(b, c->slabs[k], c->a[k].x, bytes);
    }
}

/* GPU: the group's results from the slot's pinned buffer into out. */
static void take_task(void *c_, int i, int n)
{
    mel_many *c = c_;
    for (size_t k = c->g0 + (size_t)i; k < c->g0 + c->gn; k += (size_t)n) {
        size_t bytes = 0;
        const void *r = ws_gpu_batch_output(c->ctx->batcher, c->slot, (int)(k - c->g0), &bytes);
        if (r && bytes == c->per * sizeof(float))
            memcpy(c->out + k * c->per, r, bytes);
        else
            c->failed[k] = 1, ws_errf(&c->errs[k], "the GPU gave %zu bytes", bytes);
        if (c->slabs[k])
            ws_gpu_unstage(c->ctx->batcher, c->slabs[k], c->n_slabs[k]);
        c->slabs[k] = NULL;
    }
}

/* The GPU path of log_mel_batch: groups of a slot's windows, staged on the threads,
 * submitted, up to the slots' count in flight; the oldest's results taken out as the next
 * group needs its slot. Under stem_mu. 0 or -1 with e. */
static int mel_many_gpu(mel_many *c, ws_err *e)
{
    whisper_stem *ctx = c->ctx;
    ws_gpu_batcher *b = ctx->batcher;
    const int S = ws_gpu_batch_slots(b);
    const int T = ctx->threads < 16 ? ctx->threads : 16;
    struct { size_t g0, gn; int slot; } fl[8];
    int nfl = 0, rc = 0;
    size_t next = 0;
    while (!rc && (next < c->count || nfl)) {
        if (next < c->count && nfl < S && nfl < 8) {
            const int cap = ws_gpu_batch_max_windows(b); /* smaller after WS_BATCH_SHRUNK */
            const size_t gn = c->count - next < (size_t)cap ? c->count - next : (size_t)cap;
            c->g0 = next;
            c->gn = gn;
            ws_parallel(T < (int)gn ? T : (int)gn, stage_task, c);
            const int s = ws_api_slot_take(ctx, e);
            if (s < 0) {
                rc = -1;
                break;
            }
            ws_mel_geom g;
            for (size_t k = next; !rc && k < next + gn; k++) {
                ws_gpu_input in;
                if (ws_api_gpu_input(ctx, &c->a[k], &in, &g, e))
                    rc = -1;
                in.slabs = c->slabs[k];
                if (in.slabs)
                    in.x = NULL;
                if (!rc && !ws_gpu_batch_add(b, s, &in))
                    rc = ws_errf(e, "a GPU batch did not take pcm[%zu]", k);
            }
            int sr = rc ? -1 : ws_gpu_batch_submit(b, s, "log_mel_batch", e);
            if (sr == WS_BATCH_SHRUNK) {
                ws_api_slot_give(ctx, s);
                for (size_t k = next; k < next + gn; k++)
                    if (c->slabs[k])
                        ws_gpu_unstage(b, c->slabs[k], c->n_slabs[k]), c->slabs[k] = NULL;
                continue; /* the same items again, in smaller groups */
            }
            if (sr) {
                ctx->slot_used[s] = 1; /* it may have queued work */
                ws_api_slot_give(ctx, s);
                rc = -1;
                break;
            }
            ctx->slot_used[s] = 1;
            fl[nfl].g0 = next;
            fl[nfl].gn = gn;
            fl[nfl].slot = s;
            nfl++;
            next += gn;
            continue;
        }
        /* the oldest group's results */
        if (ws_gpu_batch_wait(b, fl[0].slot, e)) {
            rc = -1;
            break;
        }
        c->g0 = fl[0].g0;
        c->gn = fl[0].gn;
        c->slot = fl[0].slot;
        ws_parallel(T < (int)c->gn ? T : (int)c->gn, take_task, c);
        ws_api_slot_give(ctx, fl[0].slot);
        memmove(&fl[0], &fl[1], (size_t)(nfl - 1) * sizeof fl[0]);
        nfl--;
    }
    for (int f = 0; f < nfl; f++) { /* after a failure: the slots back, once done */
        ws_err we;
        ws_gpu_batch_wait(b, fl[f].slot, &we);
        ws_api_slot_give(ctx, fl[f].slot);
    }
    for (size_t k = 0; k < c->count; k++)
        if (c->slabs[k])
            ws_gpu_unstage(b, c->slabs[k], c->n_slabs[k]), c->slabs[k] = NULL;
    return rc;
}

int whisper_stem_log_mel_batch(whisper_stem *ctx, const float *const *pcm, const size_t *n_samples,
                               size_t count, int sample_rate, int channels, float *out,
                               whisper_stem_error *err)
{
    static const char fn[] = "whisper_stem_log_mel_batch";
    if (!ctx)
        return failf(err, "%s: ctx is NULL", fn);
    if (count && (!pcm || !n_samples || !out))
        return failf(err, "%s: %s is NULL with count %zu", fn, !pcm ? "pcm" : !n_samples ? "n_samples" : "out",
                     count);
    if (ctx->pad == WS_PAD_NONE)
        return failf(err, "%s: the context's pad is NONE; a batch takes whole 30 s windows (pad AUDIO or "
                          "MEL0)", fn);
    if (!count)
        return 0;
    mel_many c = {.ctx = ctx, .count = count, .out = out, .per = (size_t)ctx->n_mels * WS_CHUNK_FRAMES};
    c.a = calloc(count, sizeof *c.a);
    c.failed = calloc(count, sizeof *c.failed);
    c.errs = calloc(count, sizeof *c.errs);
    c.slabs = calloc(count, sizeof *c.slabs);
    c.n_slabs = calloc(count, sizeof *c.n_slabs);
    int rc = 0;
    ws_err e = {{0}};
    if (!c.a || !c.failed || !c.errs || !c.slabs || !c.n_slabs)
        rc = ws_errf(&e, "%s: out of memory for %zu items", fn, count);
    if (!rc) { /* every item checked (and resampled) first, side by side */
        c.pcm = pcm;
        c.n_in = n_samples;
        c.rate = sample_rate;
        c.channels = channels;
        const int T = (size_t)ctx->threads < count ? ctx->threads : (int)count;
        ws_parallel(T, mel_in_task, &c);
        for (size_t k = 0; !rc && k < count; k++)
            if (c.failed[k])
                rc = ws_errf(&e, "pcm[%zu]: %s", k, c.errs[k].msg);
    }
    if (!rc) {
        if (ctx->mel_gpu && !ctx->on_gpu) { /* a log-Mel batcher: several clips a launch */
            pthread_mutex_lock(&ctx->stem_mu);
            rc = mel_many_gpu(&c, &e);
            pthread_mutex_unlock(&ctx->stem_mu);
        } else if (ctx->mel_gpu) { /* the stem's batcher gives embeddings: one clip at a time */
            for (size_t k = 0; !rc && k < count; k++) {
                ws_mel_out mo = {0};
                if (gpu_mel(ctx, &c.a[k], "pcm", &mo, &c.errs[k]))
                    c.failed[k] = 1;
                else
                    memcpy(out + k * c.per, mo.data, c.per * sizeof(float));
                ws_mel_out_free(&mo);
            }
        } else {
            const int T = (size_t)ctx->threads < count ? ctx->threads : (int)count;
            ws_parallel(T, mel_cpu_task, &c);
        }
        for (size_t k = 0; !rc && k < count; k++)
            if (c.failed[k])
                rc = ws_errf(&e, "pcm[%zu]: %s", k, c.errs[k].msg);
    }
    for (size_t k = 0; c.a && k < count; k++)
        pcm_done(&c.a[k], pcm[k]);
    free(c.a);
    free(c.failed);
    free(c.errs);
    free(c.slabs);
    free(c.n_slabs);
    return rc ? ws_api_fail(err, &e) : 0;
}

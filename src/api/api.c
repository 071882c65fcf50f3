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
    return 0;
}

static void destroy(whisper_stem *ctx)
{
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
    pthread_mutex_unlock(&g_plan_mu);
    if (rc) {
        free(ctx);
        return ws_api_fail(err, &e), NULL;
    }
    pthread_mutex_init(&ctx->stem_mu, NULL);
    return ctx;
}

void whisper_stem_free(whisper_stem *ctx)
{
    if (!ctx)
        return;
    pthread_mutex_lock(&g_plan_mu);
    destroy(ctx);
    pthread_mutex_unlock(&g_plan_mu);
    pthread_mutex_destroy(&ctx->stem_mu);
    free(ctx);
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

void whisper_stem_array_free(whisper_stem_array *a)
{
    if (!a)
        return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

int whisper_stem_load_audio(const char *path, whisper_stem_array *out, whisper_stem_error *err)
{
    zero_array(out);
    if (!out)
        return failf(err, "whisper_stem_load_audio: out is NULL");
    if (!path)
        return failf(err, "whisper_stem_load_audio: path is NULL");
    ws_audio a;
    ws_err e = {{0}};
    if (ws_audio_load(&a, path, &e))
        return ws_api_fail(err, &e);
    out->data = a.x;
    out->ndim = 1;
    out->shape[0] = (int64_t)a.n;
    return 0;
}

int ws_api_mel(const whisper_stem *ctx, const ws_audio *a, int n_threads, const char *name,
               ws_mel_out *mo, ws_err *e)
{
    ws_err me = {{0}};
    if (ws_mel_compute_nt(ctx->mel, a->x, a->n, ctx->pad, n_threads, mo, &me))
        return ws_errf(e, "%s: %s", name, me.msg);
    return 0;
}

/* Checks ctx, pcm and out, and brings the samples to 16 kHz mono. */
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
    return ws_audio_from_pcm(a, pcm, n, rate, channels, "pcm", e);
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
    ws_audio_free(&a);
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
    float *data = malloc(total);
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
    int rc = ws_api_mel(ctx, &a, ctx->threads, "pcm", &mo, &e);
    ws_audio_free(&a);
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

int whisper_stem_embed_file(whisper_stem *ctx, const char *path, whisper_stem_array *out,
                            whisper_stem_error *err)
{
    static const char fn[] = "whisper_stem_embed_file";
    zero_array(out);
    if (!ctx)
        return failf(err, "%s: ctx is NULL", fn);
    if (!out)
        return failf(err, "%s: out is NULL", fn);
    if (!path)
        return failf(err, "%s: path is NULL", fn);
    if (!ctx->have_model)
        return failf(err, "%s: no model: the context was made with params.model NULL "
                          "(log-Mel only)", fn);
    ws_audio a;
    ws_mel_out mo = {0};
    ws_err e = {{0}};
    if (ws_audio_load(&a, path, &e))
        return ws_api_fail(err, &e);
    int rc = ws_api_mel(ctx, &a, ctx->threads, path, &mo, &e);
    ws_audio_free(&a);
    if (!rc && ws_api_embed_windows(ctx, mo.data, mo.n_windows, mo.n_frames, out, &e)) {
        ws_err pe = e;
        ws_errf(&e, "%s: %s", path, pe.msg);
        rc = -1;
    }
    ws_mel_out_free(&mo);
    return rc ? ws_api_fail(err, &e) : 0;
}

/* gpu_stem.c - Whisper's stem on the GPU as two plans of the conv engine: ws_gpu_* of gpu.h.
 *
 * Per call (n_win windows of T = n_frames, T2 = (T-1)/2 + 1):
 *   upload   mel [n_win][C][T] f32  (host -> pinned staging -> device)
 *   conv1    h1  [n_win][T][D]  elem    gelu(conv1(mel)): the engine reads the channel-major
 *                                       log-Mel as it is (staging it where its kernel needs)
 *   conv2    out [n_win][T2][D] f32     gelu(conv2(h1)) (+ pos: conv2's add, batch stride 0)
 *   download out (device -> pinned staging -> host)
 * elem is conv1's y_type: f32 for fp32 and tf32, bf16 or f16 otherwise (ws_stem_descs).
 * conv1 and conv2 are engine plans (ws_gpu_conv_new, gpu_conv.c) of the pair's two
 * descriptors, enqueued with ws_gpu_conv_enqueue on the stream of the run; the engine picks
 * the kernels per call (the Hopper GEMM, the mma.sync or FFMA GEMM, or the direct kernel)
 * and fills and checks their arguments.
 *
 * Lanes: a plan's scratch is its own, so calls of one plan on two streams at once would
 * race. ws_gpu_new makes the two plans from the weights (the proto plans, never run); the
 * pair holds up to WS_GPU_LANES lanes, each a pair of clones of them {conv1, conv2}
 * (ws_gpu_conv_clone: the same kernels and device weights, scratch of their own): lane 0 is
 * the pair's own (ws_gpu_stem, ws_gpu_bench), made in ws_gpu_new; lanes 1.. are made at
 * their first ws_gpu_enqueue_fixed (the batches of gpu_batch.c give each slot, a stream, its
 * own lane).
 *
 * Fixed: the only choice of the engine that depends on the call's number of windows is the
 * float32 FFMA GEMM's sum in parts (a call too small to fill the GPU, or the last wave of
 * blocks of a larger one, sums its K in parts added in a fixed order: gemm_parts and
 * gemm_tail in gpu_conv.c). ws_gpu_conv_no_split turns it off; the
 * lanes of ws_gpu_enqueue_fixed always have it off, lane 0 when ws_gpu_set_fixed says so.
 * Then every output's sum is whole, in the descriptor's order, and a window's bits do not
 * depend on the other windows of the launch. Tiles, kernels and orders otherwise depend on
 * the descriptor alone.
 *
 * Runs on a ws_gpu of the device runtime (gpu.c: the driver, the device's primary context,
 * the stream, the pinned staging, the module cache, which loads each module once per
 * process however many plans use it). Owns: that ws_gpu, the lanes' plans, ws_gpu_gelu's
 * plan, events, device buffers (grown on demand) and the add table.
 * Tested by tests/test_gpu.c against the float64 oracle and the CPU stem, by
 * tests/test_gpu_runtime.c against a stand-in driver (modules loaded once, launches).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "driver.h"
#include "gpu_conv_internal.h"
#include "gpu_internal.h"
#include "gpu_runtime.h"

typedef struct {
    ws_gpu_conv *c[2];            /* conv1, conv2 */
} stem_lane;

struct ws_gpu_pair {
    ws_gpu *gpu;                  /* the device runtime's: its driver, context and stream */
    ws_cu *cu;                    /* &gpu->cu */
    wscu_context ctx;             /* gpu->ctx */
    wscu_stream stream;           /* gpu->stream */
    wscu_event ev0, ev1, ev_c1;   /* bench: start, end, after conv1 */
    ws_conv_desc c[2];            /* the pair: conv1, conv2 */
    int n_mels, d;
    ws_precision prec;
    stem_lane proto;              /* the plans made from the weights, never run: the lanes
                                   * are their clones (read only, so cloning needs no lock
                                   * against a lane that runs) */
    stem_lane lane[WS_GPU_LANES]; /* [0] the pair's own; the others ws_gpu_enqueue_fixed's */
    pthread_mutex_t mu;           /* lanes 1.. are made under it */
    ws_gpu_conv *gelu;            /* ws_gpu_gelu's plan, or NULL before its first call */
    wscu_devptr mel, h1, out, pos;
    size_t mel_cap, h1_cap, out_cap;
    int pos_rows;                 /* rows of the device add (pos) table */
    int poison;
    int fixed;                    /* ws_gpu_set_fixed */
    char name[200];
    char report[8192];
};

const char *ws_gpu_device_name(const ws_gpu_pair *g)
{
    return g ? g->name : "";
}

void ws_gpu_set_poison(ws_gpu_pair *g, int on)
{
    g->poison = on;
}

void ws_gpu_set_fixed(ws_gpu_pair *g, int on)
{
    g->fixed = on;
    for (int k = 0; k < 2; k++)
        ws_gpu_conv_no_split(g->lane[0].c[k], on);
}

ws_gpu_conv *ws_gpu_pair_plan(ws_gpu_pair *g, int lane, int k)
{
    if (!g || lane < 0 || lane >= WS_GPU_LANES || k < 0 || k > 1)
        return NULL;
    pthread_mutex_lock(&g->mu);
    ws_gpu_conv *c = g->lane[lane].c[k];
    pthread_mutex_unlock(&g->mu);
    return c;
}

static void lane_free(stem_lane *l)
{
    for (int k = 0; k < 2; k++) {
        ws_gpu_conv_free(l->c[k]);
        l->c[k] = NULL;
    }
}

void ws_gpu_free(ws_gpu_pair *g)
{
    if (!g)
        return;
    if (g->gpu) {
        ws_cu *cu = &g->gpu->cu;
        cu->CtxSetCurrent(g->gpu->ctx);
        cu->StreamSynchronize(g->gpu->stream);
        for (int i = 0; i < WS_GPU_LANES; i++) /* plans go before their ws_gpu, clones */
            lane_free(&g->lane[i]);               /* before the plans they borrow from */
        lane_free(&g->proto);
        ws_gpu_conv_free(g->gelu);
        cu->CtxSetCurrent(g->gpu->ctx);
        wscu_devptr bufs[] = { g->mel, g->h1, g->out, g->pos };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            if (bufs[i])
                cu->MemFree(bufs[i]);
        ws_gpu_event_free(g->gpu, g->ev0);
        ws_gpu_event_free(g->gpu, g->ev1);
        ws_gpu_event_free(g->gpu, g->ev_c1);
        ws_gpu_close(g->gpu); /* the stream, the staging, the context's reference */
    }
    pthread_mutex_destroy(&g->mu);
    free(g);
}

/* Allocates and uploads n bytes from host (synchronously, via the stream). */
static int upload(ws_gpu_pair *g, wscu_devptr *dst, const void *src, size_t n, ws_err *err)
{
    ws_cu *cu = g->cu;
    CU_TRY(cu, MemAlloc(dst, n), err);
    CU_TRY(cu, MemcpyHtoDAsync(*dst, src, n, g->stream), err);
    CU_TRY(cu, StreamSynchronize(g->stream), err);
    return 0;
cleanup:
    return -1;
}

/* T2 for T frames */
static int out_len(const ws_gpu_pair *g, int n_frames)
{
    return ws_conv_out_len(&g->c[1], n_frames);
}

/* bytes of one element of the intermediate h1 (conv1's y) */
static size_t h1_elem(const ws_gpu_pair *g)
{
    return g->c[0].y_type == WS_F32 ? 4 : 2;
}

/* lane l's two plans as clones of the pair's proto plans (ws_gpu_conv_clone: their kernels
 * and weights, scratch of their own: nothing emitted, loaded or uploaded); fixed: their
 * float32 sums whole (the file's header). 0, or -1 with err and nothing made. */
static int lane_clone(ws_gpu_pair *g, stem_lane *l, int fixed, ws_err *err)
{
    if (!(l->c[0] = ws_gpu_conv_clone(g->proto.c[0], err)) ||
        !(l->c[1] = ws_gpu_conv_clone(g->proto.c[1], err))) {
        lane_free(l);
        return -1;
    }
    for (int k = 0; k < 2; k++)
        ws_gpu_conv_no_split(l->c[k], fixed);
    return 0;
}

/* --- which pairs the GPU stem takes ------------------------------------------------- */

static const char *dtype_name(ws_dtype t)
{
    return t == WS_F32 ? "f32" : t == WS_F16 ? "f16" : t == WS_BF16 ? "bf16" : "?";
}

static const char *act_name(int a)
{
    static const char *const n[] = {"NONE", "RELU", "GELU", "SILU"};
    return a >= 0 && a < 4 ? n[a] : "?";
}

/* one field against the value the stem takes: 0, or -1 with the message */
static int want(int got, int need, int which, const char *field, ws_err *err)
{
    if (got == need)
        return 0;
    return ws_errf(err, "the GPU stem does not take conv %d with %s %d (it takes %d)", which + 1,
                   field, got, need);
}

/* the same for a field with names (op, layout, act) */
static int want_named(int got, int need, const char *got_name, const char *need_name, int which,
                      const char *field, ws_err *err)
{
    if (got == need)
        return 0;
    return ws_errf(err, "the GPU stem does not take conv %d with %s %s (it takes %s)", which + 1,
                   field, got_name, need_name);
}

static int want_type(ws_dtype got, ws_dtype need, int which, const char *field, ws_err *err)
{
    if (got == need)
        return 0;
    return ws_errf(err, "the GPU stem does not take conv %d with %s %s (it takes %s here)",
                   which + 1, field, dtype_name(got), dtype_name(need));
}

int ws_gpu_check_pair(const ws_conv_desc pair[2], ws_precision *prec, ws_err *err)
{
    for (int i = 0; i < 2; i++)
        if (ws_conv_check(&pair[i], err))
            return -1;
    const ws_conv_desc *c1 = &pair[0], *c2 = &pair[1];
    if (c1->math != c2->math)
        return ws_errf(err, "the GPU stem takes a pair of one math only (conv 1 math %d, conv 2 "
                            "math %d)", (int)c1->math, (int)c2->math);
    switch (c1->math) {
    case WS_MATH_F32: *prec = WS_PREC_FP32; break;
    case WS_MATH_TF32: *prec = WS_PREC_TF32; break;
    case WS_MATH_BF16: *prec = WS_PREC_BF16; break;
    case WS_MATH_F16: *prec = WS_PREC_FP16; break;
    default: return ws_errf(err, "unknown math %d", (int)c1->math);
    }
    /* the intermediate is stored in the math's type: float32 for F32 and TF32 */
    const ws_dtype elem = *prec == WS_PREC_FP16 ? WS_F16 : *prec == WS_PREC_BF16 ? WS_BF16 : WS_F32;
    for (int i = 0; i < 2; i++) {
        const ws_conv_desc *c = &pair[i];
        if (want_named((int)c->op, WS_CONV_FWD, c->op == WS_CONV_FWD ? "FWD" : "BWD", "FWD", i,
                       "op", err) ||
            want(c->groups, 1, i, "groups", err) || want(c->k, 3, i, "k", err) ||
            want(c->dilation, 1, i, "dilation", err) || want(c->pad_l, 1, i, "pad_l", err) ||
            want(c->pad_r, 1, i, "pad_r", err) || want(c->stride, i ? 2 : 1, i, "stride", err) ||
            want_named((int)c->pre, WS_ACT_NONE, act_name((int)c->pre), "NONE", i, "pre", err) ||
            want_named((int)c->act, WS_ACT_GELU, act_name((int)c->act), "GELU", i, "act", err) ||
            want_named((int)c->y_layout, WS_NLC, c->y_layout == WS_NCL ? "NCL" : "NLC", "NLC", i,
                       "y_layout", err) ||
            want_type(c->w_type, WS_F32, i, "w_type", err))
            return -1;
    }
    if (want_named((int)c1->x_layout, WS_NCL, c1->x_layout == WS_NCL ? "NCL" : "NLC", "NCL", 0,
                   "x_layout", err) ||
        want_named((int)c2->x_layout, WS_NLC, c2->x_layout == WS_NCL ? "NCL" : "NLC", "NLC", 1,
                   "x_layout", err) ||
        want_type(c1->x_type, WS_F32, 0, "x_type", err) ||
        want_type(c1->y_type, elem, 0, "y_type", err) ||
        want_type(c2->x_type, elem, 1, "x_type", err) ||
        want_type(c2->y_type, WS_F32, 1, "y_type", err))
        return -1;
    if (c2->c_in != c1->c_out || c2->c_out != c1->c_out)
        return ws_errf(err, "the GPU stem's conv 2 reads conv 1's output: c_in %d and c_out %d "
                            "must be conv 1's c_out %d", c2->c_in, c2->c_out, c1->c_out);
    return 0;
}

ws_gpu_pair *ws_gpu_new(int ordinal, const ws_conv_desc pair[2], const float *w1, const float *b1,
                        const float *w2, const float *b2, ws_err *err)
{
    ws_precision p;
    if (ws_gpu_check_pair(pair, &p, err))
        return NULL;
    if (!w1 || !b1 || !w2 || !b2)
        return ws_errf(err, "ws_gpu_new: the pair needs both weights and both biases"), NULL;
    ws_gpu_pair *g = calloc(1, sizeof *g);
    if (!g)
        return ws_errf(err, "out of memory"), NULL;
    pthread_mutex_init(&g->mu, NULL);
    g->c[0] = pair[0];
    g->c[1] = pair[1];
    g->n_mels = pair[0].c_in;
    g->d = pair[0].c_out;
    g->prec = p;
    /* the driver, device `ordinal`, its primary context and a stream */
    if (!(g->gpu = ws_gpu_open(ordinal, err)))
        goto cleanup;
    ws_cu *cu = g->cu = &g->gpu->cu;
    g->ctx = g->gpu->ctx;
    g->stream = g->gpu->stream;
    snprintf(g->name, sizeof g->name, "%s, sm_%d%d, %d SMs, driver %d.%d", g->gpu->name,
             g->gpu->cc_major, g->gpu->cc_minor, g->gpu->sms, cu->version / 1000,
             cu->version % 1000 / 10);
    if (ws_gpu_event_new(g->gpu, WS_CU_EVENT_DEFAULT, &g->ev0, err) ||
        ws_gpu_event_new(g->gpu, WS_CU_EVENT_DEFAULT, &g->ev1, err) ||
        ws_gpu_event_new(g->gpu, WS_CU_EVENT_DEFAULT, &g->ev_c1, err) ||
        !(g->proto.c[0] = ws_gpu_conv_new(g->gpu, &g->c[0], w1, b1, err)) ||
        !(g->proto.c[1] = ws_gpu_conv_new(g->gpu, &g->c[1], w2, b2, err)) ||
        lane_clone(g, &g->lane[0], 0, err))
        goto cleanup;
    return g;
cleanup:
    ws_gpu_free(g);
    return NULL;
}

/* Grows a device buffer to at least n bytes (contents not kept). */
static int ensure(ws_gpu_pair *g, wscu_devptr *p, size_t *cap, size_t n, ws_err *err)
{
    ws_cu *cu = g->cu;
    if (*cap >= n)
        return 0;
    if (*p)
        CU_TRY(cu, MemFree(*p), err);
    *p = 0;
    *cap = 0;
    CU_TRY(cu, MemAlloc(p, n), err);
    *cap = n;
    return 0;
cleanup:
    return -1;
}

int ws_gpu_set_add(ws_gpu_pair *g, const float *add, int rows, ws_err *err)
{
    ws_cu *cu = g->cu;
    wscu_devptr fresh = 0;
    if (rows < 1 || !add)
        return ws_errf(err, "ws_gpu_set_add: rows %d must be >= 1 and the table given", rows);
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    if (upload(g, &fresh, add, (size_t)rows * g->d * sizeof(float), err)) {
        if (fresh)
            cu->MemFree(fresh);
        return -1; /* the old table stays */
    }
    if (g->pos)
        cu->MemFree(g->pos);
    g->pos = fresh;
    g->pos_rows = rows;
    return 0;
cleanup:
    return -1;
}

int ws_gpu_add_rows(const ws_gpu_pair *g)
{
    return g ? g->pos_rows : 0;
}

/* with_add needs an add table of at least t_out rows */
static int check_add(const ws_gpu_pair *g, int with_add, int t_out, ws_err *err)
{
    if (with_add && g->pos_rows < t_out)
        return ws_errf(err, "the add table has %d rows, %d outputs need it (ws_gpu_set_add)",
                       g->pos_rows, t_out);
    return 0;
}

/* a device pointer as ws_conv_args takes it */
static void *dp(wscu_devptr p)
{
    return (void *)(uintptr_t)p;
}

/* Enqueues conv1 and conv2 of lane l on stream s: mel (device) -> h1 -> out (device), + pos
 * where pos is not 0. marks: record ev_c1 between the convs (benchmarks). */
static int enqueue_lane(ws_gpu_pair *g, stem_lane *l, wscu_stream s, wscu_devptr mel,
                        wscu_devptr h1, wscu_devptr out, int n_win, int n_frames, wscu_devptr pos,
                        int marks, ws_err *err)
{
    const uint64_t st = (uint64_t)(uintptr_t)s; /* a CUstream as ws_gpu_conv_enqueue takes it */
    const ws_conv_args a1 = { .n = n_win, .t_in = n_frames, .x = dp(mel), .y = dp(h1) };
    const ws_conv_args a2 = { .n = n_win, .t_in = n_frames, .x = dp(h1), .y = dp(out),
                              .add = pos ? dp(pos) : NULL, .add_batch_stride = 0 };
    WS_RANGE_PUSH("conv1");
    int rc = ws_gpu_conv_enqueue(l->c[0], &a1, st, err);
    WS_RANGE_POP();
    if (rc)
        return -1;
    if (marks && g->cu->EventRecord(g->ev_c1, s) != WS_CUDA_SUCCESS)
        return ws_errf(err, "cuEventRecord failed");
    WS_RANGE_PUSH("conv2");
    rc = ws_gpu_conv_enqueue(l->c[1], &a2, st, err);
    WS_RANGE_POP();
    return rc;
}

int ws_gpu_enqueue_fixed(ws_gpu_pair *g, int lane, wscu_stream s, wscu_devptr mel, wscu_devptr h1,
                         wscu_devptr out, int n_win, int n_frames, int add_pos, ws_err *err)
{
    if (n_win < 1 || n_frames < 1)
        return ws_errf(err, "ws_gpu_enqueue_fixed: %d windows of %d frames", n_win, n_frames);
    if (lane < 1 || lane >= WS_GPU_LANES)
        return ws_errf(err, "ws_gpu_enqueue_fixed: lane %d is not in 1 .. %d", lane,
                       WS_GPU_LANES - 1);
    if (check_add(g, add_pos, out_len(g, n_frames), err))
        return -1;
    pthread_mutex_lock(&g->mu);
    stem_lane *l = &g->lane[lane];
    const int rc = l->c[0] ? 0 : lane_clone(g, l, 1, err);
    pthread_mutex_unlock(&g->mu);
    if (rc)
        return -1;
    return enqueue_lane(g, l, s, mel, h1, out, n_win, n_frames, add_pos ? g->pos : 0, 0, err);
}

void ws_gpu_stem_bytes(const ws_gpu_pair *g, int n_win, int n_frames, size_t *h1, size_t *out)
{
    const size_t nw = (size_t)n_win, T = (size_t)n_frames, T2 = (size_t)out_len(g, n_frames);
    *h1 = nw * T * g->d * h1_elem(g);
    *out = nw * T2 * g->d * 4;
}

ws_gpu *ws_gpu_pair_gpu(ws_gpu_pair *g)
{
    return g->gpu;
}

int ws_gpu_pair_dims(const ws_gpu_pair *g, int *d)
{
    *d = g->d;
    return g->n_mels;
}

/* Device buffers for n_win x n_frames (mel, h1 and out). */
static int ensure_buffers(ws_gpu_pair *g, int n_win, int n_frames, ws_err *err)
{
    size_t h1 = 0, out = 0;
    ws_gpu_stem_bytes(g, n_win, n_frames, &h1, &out);
    return ensure(g, &g->mel, &g->mel_cap, (size_t)n_win * g->n_mels * n_frames * 4, err) ||
           ensure(g, &g->h1, &g->h1_cap, h1, err) || ensure(g, &g->out, &g->out_cap, out, err);
}

int ws_gpu_stem(ws_gpu_pair *g, const float *mel, int n_win, int n_frames, int add_pos, float *out,
                ws_err *err)
{
    ws_cu *cu = g->cu;
    if (n_win < 1 || n_frames < 1)
        return ws_errf(err, "ws_gpu_stem: %d windows of %d frames", n_win, n_frames);
    const int T2 = out_len(g, n_frames);
    const size_t mel_bytes = (size_t)n_win * g->n_mels * n_frames * 4;
    const size_t out_bytes = (size_t)n_win * T2 * g->d * 4;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    if (ensure_buffers(g, n_win, n_frames, err))
        return -1;
    if (check_add(g, add_pos, T2, err))
        return -1;
    size_t need = mel_bytes > out_bytes ? mel_bytes : out_bytes;
    void *pinned = ws_gpu_staging(g->gpu, need, err);
    if (!pinned)
        return -1;
    if (g->poison) {
        const unsigned nan = 0x7fc00000u;
        CU_TRY(cu, MemsetD32Async(g->h1, nan, g->h1_cap / 4, g->stream), err);
        CU_TRY(cu, MemsetD32Async(g->out, nan, g->out_cap / 4, g->stream), err);
    }
    WS_RANGE_PUSH("upload");
    memcpy(pinned, mel, mel_bytes);
    wscu_result r = cu->MemcpyHtoDAsync(g->mel, pinned, mel_bytes, g->stream);
    WS_RANGE_POP();
    if (r != WS_CUDA_SUCCESS)
        return ws_cu_fail(cu, r, "cuMemcpyHtoDAsync(mel)", __FILE__, __LINE__, err);
    if (enqueue_lane(g, &g->lane[0], g->stream, g->mel, g->h1, g->out, n_win, n_frames,
                     add_pos ? g->pos : 0, 0, err))
        return -1;
    WS_RANGE_PUSH("download");
    r = cu->MemcpyDtoHAsync(pinned, g->out, out_bytes, g->stream);
    if (r == WS_CUDA_SUCCESS)
        r = cu->StreamSynchronize(g->stream);
    if (r == WS_CUDA_SUCCESS)
        memcpy(out, pinned, out_bytes);
    WS_RANGE_POP();
    if (r != WS_CUDA_SUCCESS)
        return ws_cu_fail(cu, r, "cuMemcpyDtoHAsync(out)/cuStreamSynchronize", __FILE__, __LINE__,
                          err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_gelu(ws_gpu_pair *g, const float *x, float *y, int n, ws_err *err)
{
    static const float one = 1.0f;
    static const ws_conv_desc unit = {
        .op = WS_CONV_FWD, .c_in = 1, .c_out = 1, .groups = 1, .k = 1, .stride = 1,
        .dilation = 1, .pad_l = 0, .pad_r = 0, .x_layout = WS_NCL, .y_layout = WS_NCL,
        .x_type = WS_F32, .w_type = WS_F32, .y_type = WS_F32, .math = WS_MATH_F32,
        .pre = WS_ACT_NONE, .act = WS_ACT_GELU,
    };
    if (n < 1)
        return ws_errf(err, "ws_gpu_gelu: n %d must be >= 1", n);
    if (!g->gelu && !(g->gelu = ws_gpu_conv_new(g->gpu, &unit, &one, NULL, err)))
        return -1;
    uint64_t dx = 0, dy = 0;
    const size_t bytes = (size_t)n * sizeof(float);
    ws_conv_args a = { .n = 1, .t_in = n }; /* each output's sum: the one product 1 * x, exact */
    int rc = -1;
    if (ws_gpu_alloc(g->gpu, bytes, &dx, err) || ws_gpu_alloc(g->gpu, bytes, &dy, err) ||
        ws_gpu_upload(g->gpu, dx, x, bytes, err))
        goto done;
    a.x = dp(dx);
    a.y = dp(dy);
    if (ws_gpu_conv_run(g->gelu, &a, err) || ws_gpu_download(g->gpu, y, dy, bytes, err))
        goto done;
    rc = 0;
done:
    ws_gpu_release(g->gpu, dx);
    ws_gpu_release(g->gpu, dy);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int ws_gpu_bench(ws_gpu_pair *g, int n_win, int n_frames, int add_pos, int n_bufs, int warmup,
                 int iters, double *median_us, double *min_us, double stage_us[3], ws_err *err)
{
    ws_cu *cu = g->cu;
    wscu_devptr in[16] = { 0 };
    double *ts = NULL, *st[2] = { NULL, NULL };
    float *h = NULL;
    int rc = -1;
    if (n_bufs < 1 || n_bufs > 16 || iters < 1 || warmup < 0 || n_win < 1 || n_frames < 1)
        return ws_errf(err, "ws_gpu_bench: bad arguments");
    const size_t n = (size_t)n_win * g->n_mels * n_frames;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    if (ensure_buffers(g, n_win, n_frames, err))
        return -1;
    if (check_add(g, add_pos, out_len(g, n_frames), err))
        return -1;
    h = malloc(n * sizeof *h);
    ts = malloc((size_t)iters * sizeof *ts);
    for (int k = 0; k < 2; k++)
        st[k] = malloc((size_t)iters * sizeof *st[k]);
    if (!h || !ts || !st[0] || !st[1]) {
        ws_errf(err, "out of memory");
        goto cleanup;
    }
    ws_rng rng = { 12345 };
    for (int bi = 0; bi < n_bufs; bi++) {
        for (size_t i = 0; i < n; i++)   /* log-Mel-like values in [-1, 1.5] */
            h[i] = (float)(ws_rng_uniform(&rng) * 2.5 - 1.0);
        CU_TRY(cu, MemAlloc(&in[bi], n * 4), err);
        CU_TRY(cu, MemcpyHtoDAsync(in[bi], h, n * 4, g->stream), err);
        CU_TRY(cu, StreamSynchronize(g->stream), err);
    }
    const wscu_devptr pos = add_pos ? g->pos : 0;
    stem_lane *l = &g->lane[0];
    for (int i = 0; i < warmup; i++)
        if (enqueue_lane(g, l, g->stream, in[i % n_bufs], g->h1, g->out, n_win, n_frames, pos, 0,
                         err))
            goto cleanup;
    int nt = 0, ns = 0;
    for (int i = 0; i < iters; i++) {
        /* with stage_us, odd runs carry the stage mark and even runs time the launch alone */
        const int marks = stage_us && (i & 1);
        CU_TRY(cu, EventRecord(g->ev0, g->stream), err);
        if (enqueue_lane(g, l, g->stream, in[i % n_bufs], g->h1, g->out, n_win, n_frames, pos,
                         marks, err))
            goto cleanup;
        CU_TRY(cu, EventRecord(g->ev1, g->stream), err);
        CU_TRY(cu, EventSynchronize(g->ev1), err);
        float ms = 0, a = 0, b = 0;
        if (marks) {
            CU_TRY(cu, EventElapsedTime(&a, g->ev0, g->ev_c1), err);
            CU_TRY(cu, EventElapsedTime(&b, g->ev_c1, g->ev1), err);
            st[0][ns] = a * 1000.0;
            st[1][ns] = b * 1000.0;
            ns++;
        } else {
            CU_TRY(cu, EventElapsedTime(&ms, g->ev0, g->ev1), err);
            ts[nt++] = ms * 1000.0;
        }
    }
    qsort(ts, (size_t)nt, sizeof *ts, cmp_double);
    *median_us = ts[nt / 2];
    *min_us = ts[0];
    if (stage_us) {
        stage_us[0] = 0; /* no stage before conv1: it reads the log-Mel as it is */
        for (int k = 0; k < 2; k++) {
            qsort(st[k], (size_t)ns, sizeof *st[k], cmp_double);
            stage_us[k + 1] = ns ? st[k][ns / 2] : 0;
        }
    }
    rc = 0;
cleanup:
    for (int bi = 0; bi < n_bufs; bi++)
        if (in[bi])
            cu->MemFree(in[bi]);
    free(h);
    free(ts);
    for (int k = 0; k < 2; k++)
        free(st[k]);
    return rc;
}

const char *ws_gpu_kernel_report(ws_gpu_pair *g)
{
    size_t off = 0;
    g->report[0] = '\0';
    for (int k = 0; k < 2 && off + 1 < sizeof g->report; k++) {
        const ws_conv_desc *c = &g->c[k];
        int w = snprintf(g->report + off, sizeof g->report - off, "conv%d (%d -> %d, stride %d):\n",
                         k + 1, c->c_in, c->c_out, c->stride);
        if (w < 0 || (size_t)w >= sizeof g->report - off)
            break;
        off += (size_t)w;
        ws_gpu_conv_report(g->lane[0].c[k], g->report + off, sizeof g->report - off);
        off += strlen(g->report + off);
    }
    return g->report;
}

int ws_gpu_dump_ptx(const ws_conv_desc pair[2], const char *dir, ws_err *err)
{
    ws_precision p;
    if (ws_gpu_check_pair(pair, &p, err))
        return -1;
    /* sm_90 PTX (the H100's); a plan emits for the device it finds */
    for (int k = 0; k < 2; k++)
        if (ws_conv_dump_ptx(&pair[k], 9, 0, dir, err))
            return -1;
    return 0;
}

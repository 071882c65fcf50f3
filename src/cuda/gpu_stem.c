/* gpu_stem.c - the GPU backend's pair of convs (Whisper's stem): ws_gpu_* of gpu.h.
 *
 * Per call (n_win windows of T = n_frames, T2 = (T-1)/2 + 1):
 *   upload   mel [n_win][C][T] f32  (host -> pinned staging -> device)
 *   mel_t    xt  [n_win][T][C]  elem          (kernels_misc.c; not for fp32,
 *                                             whose conv1 reads mel as it is)
 *   conv1    h1  [n_win][T][D]  elem          gelu(conv1(xt))
 *   conv2    out [n_win][T2][D] f32           gelu(conv2(h1)) (+ pos)
 *   download out (device -> pinned staging -> host)
 * elem is f32 for fp32 and tf32 (tf32 values rounded by cvt.rna), bf16 or
 * f16 otherwise. The kernels are lower.c's for the pair of descriptors; weights are
 * packed once in ws_gpu_new (ws_pack_weights); the add (pos) table is the caller's,
 * uploaded by ws_gpu_set_add.
 * The tile variant is picked per launch: the large tile when it fills every
 * multiprocessor at least once, else the small one. Every launch's arguments are filled
 * by the index enum of its kernel's parameter table (ptx_params.h, the table the emitter
 * declared the .entry from) and checked against it before the launch (ws_kargs_check).
 * Runs on a ws_gpu of the device runtime (gpu.c: the driver, the device's primary context,
 * the stream, the pinned staging, the module cache, which loads each kernel once per
 * process). Owns: that ws_gpu, events, device buffers (grown on demand).
 * Tested by tests/test_gpu.c against the float64 oracle.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "driver.h"
#include "gpu_internal.h"
#include "gpu_runtime.h"
#include "ptx/kernels.h"
#include "ptx/ptx_params.h"

struct ws_gpu_pair {
    ws_gpu *gpu;                  /* the device runtime's: its driver, context and stream */
    ws_cu *cu;                    /* &gpu->cu */
    wscu_context ctx;             /* gpu->ctx */
    wscu_stream stream;           /* gpu->stream */
    wscu_event ev0, ev1, ev_mel, ev_c1;  /* bench: start, end, after mel_t, after conv1 */
    wscu_module mod[WS_K_COUNT];  /* the runtime's module cache holds them */
    wscu_function fn[WS_K_COUNT];
    ws_kernel_src k[WS_K_COUNT];  /* ptx freed after loading */
    ws_conv_desc c[2];            /* the pair: conv1, conv2 */
    int n_mels, d, sms, cc_major, cc_minor;
    ws_precision prec;
    wscu_devptr w1, b1, w2, b2;
    wscu_devptr mel, xt, h1, out, pos;
    wscu_devptr ws;               /* split-K partial sums (fp32, few windows) */
    size_t mel_cap, xt_cap, h1_cap, out_cap, ws_cap;
    int pos_rows;                 /* rows of the device add (pos) table */
    int poison, force_tile;
    int fixed;                    /* ws_gpu_set_fixed */
    char name[200];
    char report[1024];
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
}

void ws_gpu_force_tile(ws_gpu_pair *g, int small)
{
    g->force_tile = small;
}

void ws_gpu_free(ws_gpu_pair *g)
{
    if (!g)
        return;
    if (g->gpu) {
        ws_cu *cu = &g->gpu->cu;
        cu->CtxSetCurrent(g->gpu->ctx);
        cu->StreamSynchronize(g->gpu->stream);
        wscu_devptr bufs[] = { g->w1, g->b1, g->w2, g->b2, g->mel, g->xt, g->h1, g->out, g->pos,
                               g->ws };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            if (bufs[i])
                cu->MemFree(bufs[i]);
        ws_gpu_event_free(g->gpu, g->ev0);
        ws_gpu_event_free(g->gpu, g->ev1);
        ws_gpu_event_free(g->gpu, g->ev_mel);
        ws_gpu_event_free(g->gpu, g->ev_c1);
        ws_gpu_close(g->gpu); /* the stream, the staging, the context's reference */
    }
    for (int i = 0; i < WS_K_COUNT; i++)
        free(g->k[i].ptx);
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

static int pack_upload(ws_gpu_pair *g, wscu_devptr *dst, const float *w, int cin, int cout,
                       ws_err *err)
{
    size_t n = (size_t)3 * cin * cout * ws_prec_elem_bytes(g->prec);
    void *tmp = malloc(n);
    if (!tmp)
        return ws_errf(err, "out of memory packing weights");
    ws_pack_weights(w, cin, cout, g->prec, tmp);
    int rc = upload(g, dst, tmp, n, err);
    free(tmp);
    return rc;
}

/* T2 for T frames */
static int out_len(const ws_gpu_pair *g, int n_frames)
{
    return ws_conv_out_len(&g->c[1], n_frames);
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
    g->c[0] = pair[0];
    g->c[1] = pair[1];
    g->n_mels = pair[0].c_in;
    g->d = pair[0].c_out;
    g->prec = p;
    g->force_tile = -1;
    /* the driver, device `ordinal`, its primary context and a stream */
    if (!(g->gpu = ws_gpu_open(ordinal, err)))
        goto cleanup;
    ws_cu *cu = g->cu = &g->gpu->cu;
    g->ctx = g->gpu->ctx;
    g->stream = g->gpu->stream;
    g->cc_major = g->gpu->cc_major;
    g->cc_minor = g->gpu->cc_minor;
    g->sms = g->gpu->sms;
    snprintf(g->name, sizeof g->name, "%s, sm_%d%d, %d SMs, driver %d.%d", g->gpu->name,
             g->cc_major, g->cc_minor, g->sms, cu->version / 1000, cu->version % 1000 / 10);
    if (ws_gpu_event_new(g->gpu, WS_CU_EVENT_DEFAULT, &g->ev0, err) ||
        ws_gpu_event_new(g->gpu, WS_CU_EVENT_DEFAULT, &g->ev1, err) ||
        ws_gpu_event_new(g->gpu, WS_CU_EVENT_DEFAULT, &g->ev_mel, err) ||
        ws_gpu_event_new(g->gpu, WS_CU_EVENT_DEFAULT, &g->ev_c1, err))
        goto cleanup;

    ws_kernel_src *ks = NULL;
    if (ws_gpu_lower(g->c, g->cc_major, g->cc_minor, &ks, err))
        goto cleanup;
    memcpy(g->k, ks, sizeof g->k);
    free(ks);
    for (int i = 0; i < WS_K_COUNT; i++) {
        if (ws_gpu_module(g->gpu, g->k[i].name, g->k[i].ptx, &g->mod[i], err))
            goto cleanup;
        free(g->k[i].ptx);
        g->k[i].ptx = NULL;
        CU_TRY(cu, ModuleGetFunction(&g->fn[i], g->mod[i], g->k[i].name), err);
        if (g->k[i].smem > 48 * 1024)
            CU_TRY(cu, FuncSetAttribute(g->fn[i], WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        g->k[i].smem), err);
    }
    if (pack_upload(g, &g->w1, w1, g->n_mels, g->d, err) ||
        upload(g, &g->b1, b1, (size_t)g->d * 4, err) ||
        pack_upload(g, &g->w2, w2, g->d, g->d, err) ||
        upload(g, &g->b2, b2, (size_t)g->d * 4, err))
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

/* Where one run of the stem goes: its stream and intermediates. fixed: the large tile and
 * no split of K whatever the number of windows, so that a window's result does not depend
 * on what else is in the launch (batches of many inputs). */
typedef struct {
    wscu_stream s;
    wscu_devptr xt, h1;
    int fixed;
} stem_run;

/* kernel `slot` with the arguments a (checked against its table) on stream s */
static int launch_on(ws_gpu_pair *g, wscu_stream s, int slot, unsigned gx, unsigned gy,
                     unsigned gz, ws_kargs *a, ws_err *err)
{
    ws_cu *cu = g->cu;
    if (ws_kargs_check(a, g->k[slot].name, err))
        return -1;
    CU_TRY(cu, LaunchKernel(g->fn[slot], gx, gy, gz, (unsigned)g->k[slot].threads, 1, 1,
                            (unsigned)g->k[slot].smem, s, a->v, NULL), err);
    return 0;
cleanup:
    return -1;
}

static int launch(ws_gpu_pair *g, int slot, unsigned gx, unsigned gy, unsigned gz, ws_kargs *a,
                  ws_err *err)
{
    return launch_on(g, g->stream, slot, gx, gy, gz, a, err);
}

static int pick_small(const ws_gpu_pair *g, int large_slot, int t_out, int n_win, int fixed)
{
    if (g->force_tile >= 0)
        return g->force_tile;
    if (fixed)
        return 0;
    if (g->prec == WS_PREC_FP32)
        return 0;   /* the FFMA kernels split K instead (conv_launch) */
    const ws_kernel_src *k = &g->k[large_slot];
    long blocks = (long)((t_out + k->bm - 1) / k->bm) * (g->d / k->bn) * n_win;
    return blocks < g->sms;
}

/* Split-K parts for an FFMA conv: when the output tiles fill fewer than the
 * 2 * SMs block slots (two 256-thread blocks fit on a multiprocessor), K is
 * cut into parts so that the grid fills them; at least 4 K tiles a part. ws_splitk_finish then adds the parts, in order, and applies the
 * bias, GELU and pos. */
static int pick_splits(const ws_gpu_pair *g, int slot, int cin, int t_out, int n_win, int fixed)
{
    if (g->prec != WS_PREC_FP32 || fixed)
        return 1;
    const ws_kernel_src *k = &g->k[slot];
    long blocks = (long)((t_out + k->bm - 1) / k->bm) * (g->d / k->bn) * n_win;
    long slots = 2L * g->sms, kt = 3L * cin / (k->bk > 0 ? k->bk : 8);
    if (blocks >= slots)
        return 1;
    long s = slots / blocks;
    if (s > kt / 4)
        s = kt / 4;
    return s < 1 ? 1 : (int)s;
}

/* Launches one conv: x [n_win][t_in][cin] -> y [n_win][t_out][d]. */
static int conv_launch(ws_gpu_pair *g, const stem_run *st, int slot, int cin, wscu_devptr x,
                       wscu_devptr w, wscu_devptr bias, wscu_devptr pos, wscu_devptr y,
                       unsigned t_in, unsigned t_out, int n_win, ws_err *err)
{
    const ws_kernel_src *k = &g->k[slot];
    const unsigned gx = (unsigned)(g->d / k->bn), gy = (t_out + (unsigned)k->bm - 1) / (unsigned)k->bm;
    ws_kargs a;
    if (g->prec != WS_PREC_FP32) {
        ws_kargs_init(&a, WS_PARAMS_STEM_CONV_MMA);
        WS_KARG(&a, WS_SCONV_X, x), WS_KARG(&a, WS_SCONV_W, w), WS_KARG(&a, WS_SCONV_BIAS, bias);
        WS_KARG(&a, WS_SCONV_POS, pos), WS_KARG(&a, WS_SCONV_Y, y);
        WS_KARG(&a, WS_SCONV_T_IN, t_in), WS_KARG(&a, WS_SCONV_T_OUT, t_out);
        return launch_on(g, st->s, slot, gx, gy, (unsigned)n_win, &a, err);
    }
    unsigned splits = (unsigned)pick_splits(g, slot, cin, (int)t_out, n_win, st->fixed);
    if (splits > 1) {
        size_t wsb = (size_t)splits * n_win * t_out * g->d * 4;
        if (ensure(g, &g->ws, &g->ws_cap, wsb, err))
            return -1;
    }
    ws_kargs_init(&a, WS_PARAMS_STEM_CONV_FFMA);
    WS_KARG(&a, WS_SCONV_X, x), WS_KARG(&a, WS_SCONV_W, w), WS_KARG(&a, WS_SCONV_BIAS, bias);
    WS_KARG(&a, WS_SCONV_POS, pos), WS_KARG(&a, WS_SCONV_Y, y);
    WS_KARG(&a, WS_SCONV_T_IN, t_in), WS_KARG(&a, WS_SCONV_T_OUT, t_out);
    WS_KARG(&a, WS_SCONV_WS, g->ws), WS_KARG(&a, WS_SCONV_SPLITS, splits);
    if (launch_on(g, st->s, slot, gx, gy, (unsigned)n_win * splits, &a, err))
        return -1;
    if (splits == 1)
        return 0;
    unsigned rows = t_out * (unsigned)n_win;
    unsigned quads = rows * (unsigned)g->d / 4;
    ws_kargs af;
    ws_kargs_init(&af, WS_PARAMS_STEM_FINISH);
    WS_KARG(&af, WS_SFIN_WS, g->ws), WS_KARG(&af, WS_SFIN_BIAS, bias);
    WS_KARG(&af, WS_SFIN_POS, pos), WS_KARG(&af, WS_SFIN_Y, y);
    WS_KARG(&af, WS_SFIN_T_OUT, t_out), WS_KARG(&af, WS_SFIN_ROWS, rows);
    WS_KARG(&af, WS_SFIN_SPLITS, splits);
    return launch_on(g, st->s, WS_K_FINISH, (quads + 255) / 256, 1, 1, &af, err);
}

/* Enqueues mel_t, conv1, conv2 on the stream: mel (device) -> out (device).
 * marks: record ev_mel and ev_c1 between the stages (benchmarks). */
static int enqueue_run(ws_gpu_pair *g, const stem_run *st, wscu_devptr mel, int n_win,
                       int n_frames, wscu_devptr pos, wscu_devptr out, int marks, ws_err *err)
{
    unsigned T = (unsigned)n_frames, T2 = (unsigned)out_len(g, n_frames);
    wscu_devptr xt = st->xt;
    ws_kargs a0;
    ws_kargs_init(&a0, WS_PARAMS_STEM_MEL_T);
    WS_KARG(&a0, WS_SMELT_MEL, mel), WS_KARG(&a0, WS_SMELT_XT, xt), WS_KARG(&a0, WS_SMELT_T, T);
    const int fp32 = g->prec == WS_PREC_FP32;  /* conv1 reads the channel-major mel itself */
    if (!fp32 && launch_on(g, st->s, WS_K_MEL_T, (T + 31) / 32, (unsigned)(g->n_mels + 31) / 32,
                           (unsigned)n_win, &a0, err))
        return -1;
    if (marks && g->cu->EventRecord(g->ev_mel, st->s) != WS_CUDA_SUCCESS)
        return ws_errf(err, "cuEventRecord failed");
    WS_RANGE_PUSH("conv1");
    int s1 = pick_small(g, WS_K_CONV1_L, n_frames, n_win, st->fixed) ? WS_K_CONV1_S : WS_K_CONV1_L;
    int rc = conv_launch(g, st, s1, g->n_mels, fp32 ? mel : st->xt, g->w1, g->b1, 0, st->h1, T, T,
                         n_win, err);
    WS_RANGE_POP();
    if (rc)
        return -1;
    if (marks && g->cu->EventRecord(g->ev_c1, st->s) != WS_CUDA_SUCCESS)
        return ws_errf(err, "cuEventRecord failed");
    WS_RANGE_PUSH("conv2");
    int s2 = pick_small(g, WS_K_CONV2_L, (int)T2, n_win, st->fixed) ? WS_K_CONV2_S : WS_K_CONV2_L;
    rc = conv_launch(g, st, s2, g->d, st->h1, g->w2, g->b2, pos, out, T, T2, n_win, err);
    WS_RANGE_POP();
    return rc;
}

/* The pair's own stream and intermediates, the tile and split chosen for n_win. */
static int enqueue_stem(ws_gpu_pair *g, wscu_devptr mel, int n_win, int n_frames, wscu_devptr pos,
                        wscu_devptr out, int marks, ws_err *err)
{
    const stem_run st = { g->stream, g->xt, g->h1, g->fixed };
    return enqueue_run(g, &st, mel, n_win, n_frames, pos, out, marks, err);
}

int ws_gpu_enqueue_fixed(ws_gpu_pair *g, wscu_stream s, wscu_devptr mel, wscu_devptr xt,
                         wscu_devptr h1, wscu_devptr out, int n_win, int n_frames, int add_pos,
                         ws_err *err)
{
    if (n_win < 1 || n_frames < 1)
        return ws_errf(err, "ws_gpu_enqueue_fixed: %d windows of %d frames", n_win, n_frames);
    if (check_add(g, add_pos, out_len(g, n_frames), err))
        return -1;
    const stem_run st = { s, xt, h1, 1 };
    return enqueue_run(g, &st, mel, n_win, n_frames, add_pos ? g->pos : 0, out, 0, err);
}

void ws_gpu_stem_bytes(const ws_gpu_pair *g, int n_win, int n_frames, size_t *xt, size_t *h1,
                       size_t *out)
{
    const size_t es = (size_t)ws_prec_elem_bytes(g->prec);
    const size_t nw = (size_t)n_win, T = (size_t)n_frames, T2 = (size_t)out_len(g, n_frames);
    *xt = g->prec == WS_PREC_FP32 ? 0 : nw * T * g->n_mels * es;
    *h1 = nw * T * g->d * es;
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

/* Device buffers for n_win x n_frames (mel and out included). */
static int ensure_buffers(ws_gpu_pair *g, int n_win, int n_frames, ws_err *err)
{
    const size_t es = (size_t)ws_prec_elem_bytes(g->prec);
    const size_t nw = (size_t)n_win, T = (size_t)n_frames, T2 = (size_t)out_len(g, n_frames);
    return ensure(g, &g->mel, &g->mel_cap, nw * g->n_mels * T * 4, err) ||
           (g->prec != WS_PREC_FP32 && ensure(g, &g->xt, &g->xt_cap, nw * T * g->n_mels * es, err)) ||
           ensure(g, &g->h1, &g->h1_cap, nw * T * g->d * es, err) ||
           ensure(g, &g->out, &g->out_cap, nw * T2 * g->d * 4, err);
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
    if (enqueue_stem(g, g->mel, n_win, n_frames, add_pos ? g->pos : 0, g->out, 0, err))
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
    ws_cu *cu = g->cu;
    wscu_devptr dx = 0, dy = 0;
    int rc = -1;
    size_t bytes = (size_t)n * 4;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, MemAlloc(&dx, bytes), err);
    CU_TRY(cu, MemAlloc(&dy, bytes), err);
    CU_TRY(cu, MemcpyHtoDAsync(dx, x, bytes, g->stream), err);
    unsigned un = (unsigned)n;
    ws_kargs args;
    ws_kargs_init(&args, WS_PARAMS_STEM_GELU);
    WS_KARG(&args, WS_SGELU_X, dx), WS_KARG(&args, WS_SGELU_Y, dy), WS_KARG(&args, WS_SGELU_N, un);
    if (launch(g, WS_K_GELU, (un + 255) / 256, 1, 1, &args, err))
        goto cleanup;
    CU_TRY(cu, MemcpyDtoHAsync(y, dy, bytes, g->stream), err);
    CU_TRY(cu, StreamSynchronize(g->stream), err);
    rc = 0;
cleanup:
    if (dx)
        cu->MemFree(dx);
    if (dy)
        cu->MemFree(dy);
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
    double *ts = NULL, *st[3] = { NULL, NULL, NULL };
    float *h = NULL;
    int rc = -1;
    if (n_bufs < 1 || n_bufs > 16 || iters < 1)
        return ws_errf(err, "ws_gpu_bench: bad arguments");
    const size_t n = (size_t)n_win * g->n_mels * n_frames;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    if (ensure_buffers(g, n_win, n_frames, err))
        return -1;
    if (check_add(g, add_pos, out_len(g, n_frames), err))
        return -1;
    h = malloc(n * sizeof *h);
    ts = malloc((size_t)iters * sizeof *ts);
    for (int k = 0; k < 3; k++)
        st[k] = malloc((size_t)iters * sizeof *st[k]);
    if (!h || !ts || !st[0] || !st[1] || !st[2]) {
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
    wscu_devptr pos = add_pos ? g->pos : 0;
    for (int i = 0; i < warmup; i++)
        if (enqueue_stem(g, in[i % n_bufs], n_win, n_frames, pos, g->out, 0, err))
            goto cleanup;
    int nt = 0, ns = 0;
    for (int i = 0; i < iters; i++) {
        /* with stage_us, odd runs carry stage marks and even runs time the launch alone */
        int marks = stage_us && (i & 1);
        CU_TRY(cu, EventRecord(g->ev0, g->stream), err);
        if (enqueue_stem(g, in[i % n_bufs], n_win, n_frames, pos, g->out, marks, err))
            goto cleanup;
        CU_TRY(cu, EventRecord(g->ev1, g->stream), err);
        CU_TRY(cu, EventSynchronize(g->ev1), err);
        float ms = 0, a = 0, b = 0, c = 0;
        if (marks) {
            CU_TRY(cu, EventElapsedTime(&a, g->ev0, g->ev_mel), err);
            CU_TRY(cu, EventElapsedTime(&b, g->ev_mel, g->ev_c1), err);
            CU_TRY(cu, EventElapsedTime(&c, g->ev_c1, g->ev1), err);
            st[0][ns] = a * 1000.0;
            st[1][ns] = b * 1000.0;
            st[2][ns] = c * 1000.0;
            ns++;
        } else {
            CU_TRY(cu, EventElapsedTime(&ms, g->ev0, g->ev1), err);
            ts[nt++] = ms * 1000.0;
        }
    }
    qsort(ts, (size_t)nt, sizeof *ts, cmp_double);
    *median_us = ts[nt / 2];
    *min_us = ts[0];
    if (stage_us)
        for (int k = 0; k < 3; k++) {
            qsort(st[k], (size_t)ns, sizeof *st[k], cmp_double);
            stage_us[k] = ns ? st[k][ns / 2] : 0;
        }
    rc = 0;
cleanup:
    for (int bi = 0; bi < n_bufs; bi++)
        if (in[bi])
            cu->MemFree(in[bi]);
    free(h);
    free(ts);
    for (int k = 0; k < 3; k++)
        free(st[k]);
    return rc;
}

const char *ws_gpu_kernel_report(ws_gpu_pair *g)
{
    size_t off = 0;
    g->report[0] = '\0';
    for (int i = 0; i < WS_K_COUNT && off < sizeof g->report; i++) {
        int regs = -1, local = -1;
        g->cu->FuncGetAttribute(&regs, WS_CU_FUNC_ATTRIBUTE_NUM_REGS, g->fn[i]);
        g->cu->FuncGetAttribute(&local, WS_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, g->fn[i]);
        int w = snprintf(g->report + off, sizeof g->report - off,
                         "%-22s %4d threads %4d regs %4d local bytes %6d dyn smem\n", g->k[i].name,
                         g->k[i].threads, regs, local, g->k[i].smem);
        if (w < 0)
            break;
        off += (size_t)w;
    }
    return g->report;
}

int ws_gpu_dump_ptx(const ws_conv_desc pair[2], const char *dir, ws_err *err)
{
    ws_kernel_src *ks = NULL;
    /* sm_90 PTX (the H100's); the runtime emits for the device it finds */
    if (ws_gpu_lower(pair, 9, 0, &ks, err))
        return -1;
    int rc = 0;
    for (int i = 0; i < WS_K_COUNT && !rc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.ptx", dir, ks[i].name);
        FILE *f = fopen(path, "w");
        if (!f || fputs(ks[i].ptx, f) < 0) {
            rc = ws_errf(err, "cannot write %s", path);
        }
        if (f && fclose(f) && !rc)
            rc = ws_errf(err, "cannot write %s", path);
    }
    ws_gpu_kernels_free(ks);
    return rc;
}

/* conv_gpu.c - the conv engine's GPU backend on every row of docs/conv-engine.md's speed table.
 *
 *   bench-conv_gpu [--only SUBSTRING] [--iters N] [--json FILE] [--no-check] [--quick] [--list]
 *                  [--emit-cc MAJOR.MINOR] [--per-call] [--no-hgemm] [--no-phased] [--direct] [--n N]
 *
 * For each row, layout and type (fp32: f32 storage, WS_MATH_F32; tf32: f32 storage,
 * WS_MATH_TF32, dense forward rows only; bf16: bf16 storage, WS_MATH_BF16; b, dw, db are
 * float32 in all): descriptors, random inputs from fixed seeds
 * (x, dy uniform in [-1, 1]; w and b uniform in +-1/sqrt(Cg*K), PyTorch's init range),
 * uploaded; ws_gpu_conv_new; one ws_gpu_conv_run over outputs poisoned with NaN, checked
 * against the CPU engine (ws_conv_run) on the same host data: rel L2 <= 1e-5 (fp32),
 * 2e-3 (tf32) or 1e-2 (bf16). A chain is checked call by call, each call's input downloaded from the
 * device; rows whose CPU work exceeds 5e10 FLOP are checked on batch item 0 (a BWD row by a call
 * over that item alone: dx of it, dw and db summed over it). Then kernel-only time (ws_gpu_conv_bench:
 * CUDA events around each call, no host work between them): 10 warm-up calls, the median
 * and minimum of --iters (default 50). Inputs are rotated over 4 device copies when one
 * set is under 256 MiB (H100's L2 is 50 MB). A row of several calls (the ResConv1D block,
 * wav2vec2's encoder) is timed call by call and the per-iteration sums are reported: the
 * launch gaps between calls are not included.
 *
 * Rows (NCL unless said; bias on every conv except wav2vec2's):
 *   dw_fwd_n4, dw_bwd_n4   depthwise causal K4 (P 3/0) + bias + SILU, N4 C5120 T2048, NCL and
 *                          NLC; FWD, and BWD of the same (dx, dw, db; SILU' recomputed)
 *   dw_fwd_n1, dw_bwd_n1   the same at N1 C12288 T16384
 *   dil_relu               dense K3 D9 P9/9 + bias + ReLU, N256 C512 T32 (pre NONE)
 *   resblock               the ResConv1D block, N256 C512 T32, two calls: pre ReLU, K3 D9
 *                          P9/9 + bias + ReLU; then K1 + bias, add = the block's input
 *   jukebox                dense K3 D27 P27/27 + bias + ReLU, N4 C64 T131072
 *   pointwise              dense K1 + bias, N8 C512 -> 512 T16384 (a 1x1 conv)
 *   wav2vec2_fe            wav2vec2's feature encoder, N8 T160000 (10 s at 16 kHz), 7 calls,
 *                          no bias, GELU after each: 1->512 K10 S5, 4x 512->512 K3 S2,
 *                          2x 512->512 K2 S2, no padding. wav2vec2-base's GroupNorm after
 *                          the first conv is left out (it is not a conv); so is the peer's.
 *   dac_down               DAC's encoder downsampler, N8 C512->1024 T6890 K16 S8, padding
 *                          ceil(S/2) = 4 on both sides (nn.Conv1d's padding=4) + bias, no
 *                          activation (DAC's Snake before it is not in the act table)
 *   odd_c                  dense K3 P1 + bias + GELU, N8 C40 -> 512 T16384: input channels off
 *                          multiples of 16 (the Hopper GEMM through padded channels, ptx_hcol.h)
 *   dil_bwd, w2v_bwd,      the dense backward (dx, dw, db) of dil_relu's conv without its
 *   dac_bwd                ReLU, of a wav2vec2 512->512 K3 S2 layer (N8 T31999, its second
 *                          conv's input; no bias, no GELU) and of dac_down
 *   stem_tiny, stem_large  the Whisper stem's two convs (tiny 80->384, large-v3 128->1280;
 *                          K3 P1 then K3 S2 P1, + bias + GELU) over 64 windows of 3000
 *                          frames, both in the row's layout and type and without the
 *                          positional table: the engine on the stem's shapes (the command's
 *                          stem runs the same descriptors as engine plans, in its layouts:
 *                          bench-gpu_stem)
 * The Whisper stem row is bench-gpu_stem's (bench/run-conv-gpu.sh runs it beside this).
 *
 * Columns: median and min us per call (a row's calls summed); GB/s of the fewest bytes
 * the calls must move (FWD: each call reads x, w, b (and add) once and writes y once; BWD:
 * reads x, dy, w, b, writes dx, dw, db); TFLOP/s (2*MACs; BWD = dx + dw = 2x the FWD's);
 * the floor, max(bytes / 3.0 TB/s, FLOP / 51 TFLOP/s FFMA for fp32, 390 tf32, 780 bf16)
 * and which term sets it; issue 11's must-reach time; rel L2 vs the CPU engine.
 * --per-call adds two columns: pc_us, the median us per call of the same calls made by
 * plans without weights, given w (device, storage type) and b per call (timed as above,
 * after the plan-weight timing, in the same run: any conversion of w inside the call is
 * counted), and enq_us, the host time of one ws_gpu_conv_enqueue of that per-call plan
 * (median of 200 calls enqueued on the ws_gpu's stream in batches of 10, each call between
 * two CLOCK_MONOTONIC reads, the stream waited for between batches so that no call waits
 * for room in the launch queue; rows of one call).
 * --no-hgemm: calls the Hopper GEMM (ptx_hgemm.h) would take run the gemm kernel of
 * ptx_gemm.h instead (the two compared in one device session).
 * --no-phased: a dense backward's NCL dx at stride > 1 goes through X' and the "_u" pass even
 * where the Hopper GEMM's phased form would write it (ws_gpu_conv_no_phased).
 * --direct: every call on the direct kernels (ws_gpu_conv_force_direct), for comparison.
 * --json FILE writes the same rows as a JSON array (bench/run-conv-gpu.sh joins it with
 * bench/conv_gpu_torch.py's). --list prints the rows' shapes, bytes and floors without a
 * GPU; --quick shrinks the shapes (N <= 2, T / 16 where T >= 512) for a smoke run; --n N runs
 * every selected row at batch N (the Whisper stem's rows at one window: --only stem_ --n 1);
 * --parts Z sums every float32 call's GEMM in Z parts (ws_gpu_conv_parts; 1: whole, also
 * the last tiles that a call past a whole wave of blocks would sum in parts, gemm_tail).
 * --no-slice: a float32 call of few blocks sums in parts, not in slices inside its blocks
 * (ws_gpu_conv_no_slice).
 * --hg-blocks B caps the Hopper GEMM's grid at B blocks (ws_gpu_conv_hgemm_blocks; a large B:
 * a block a tile, the loop over tiles not used).
 * Without a GPU it prints one line and exits 77 (skipped); 1 if a check fails or a call
 * errs, else 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cuda/gpu_conv_internal.h"
#include "ws_conv.h"

#define MAX_CALLS 7
#define MAX_SETS 4
#define BW 3.0e12
#define RATE_F32 51.0e12
#define RATE_BF16 780.0e12
#define RATE_TF32 390.0e12
#ifndef CHECK_FLOP_MAX /* FLOP of a FWD row over which only batch item 0 is checked */
#define CHECK_FLOP_MAX 5.0e10
#endif
#define ROTATE_BELOW ((size_t)256 << 20)

typedef struct {
    int c_in, c_out, groups, k, stride, dil, pad_l, pad_r;
    ws_act pre, act;
    int bias, add_in; /* add_in: add = the row's input (the block's residual) */
} cspec;

typedef struct {
    const char *name, *what;
    int n, t, bwd, nlc;        /* nlc: run in NLC as well as NCL */
    double must_f32, must_bf16; /* issue 11's "Must reach", us; 0: none stated */
    int ncalls;
    cspec c[MAX_CALLS];
} row;

#define DW(C) { C, C, C, 4, 1, 1, 3, 0, WS_ACT_NONE, WS_ACT_SILU, 1, 0 }
#define W2V(CI, K, S) { CI, 512, 1, K, S, 1, 0, 0, WS_ACT_NONE, WS_ACT_GELU, 0, 0 }
/* the Whisper stem's two convs (ws_stem_descs) in one layout and type, without the
 * positional table: the engine on the stem's shapes */
#define STEM1(M, D) { M, D, 1, 3, 1, 1, 1, 1, WS_ACT_NONE, WS_ACT_GELU, 1, 0 }
#define STEM2(D) { D, D, 1, 3, 2, 1, 1, 1, WS_ACT_NONE, WS_ACT_GELU, 1, 0 }

/* fp32 must-reach of the depthwise rows: "fp32 likewise at the same percentages", twice
 * the bf16 bytes, so twice the bf16 time */
static const row ROWS[] = {
    { "dw_fwd_n4", "depthwise causal FWD N4 C5120 T2048 K4 +bias+SILU", 4, 2048, 0, 1, 132, 66, 1,
      { DW(5120) } },
    { "dw_bwd_n4", "depthwise causal BWD (dx,dw,db) N4 C5120 T2048 K4 +bias+SILU", 4, 2048, 1, 1,
      224, 112, 1, { DW(5120) } },
    { "dw_fwd_n1", "depthwise causal FWD N1 C12288 T16384 K4 +bias+SILU", 1, 16384, 0, 1, 640, 320,
      1, { DW(12288) } },
    { "dw_bwd_n1", "depthwise causal BWD (dx,dw,db) N1 C12288 T16384 K4 +bias+SILU", 1, 16384, 1, 1,
      1080, 540, 1, { DW(12288) } },
    { "dil_relu", "dilated K3 D9 +bias+ReLU N256 C512 T32", 256, 32, 0, 1, 0, 30, 1,
      { { 512, 512, 1, 3, 1, 9, 9, 9, WS_ACT_NONE, WS_ACT_RELU, 1, 0 } } },
    { "resblock", "ResConv1D block (relu, K3 D9, relu, K1, +x) N256 C512 T32, 2 calls", 256, 32, 0,
      1, 0, 40, 2,
      { { 512, 512, 1, 3, 1, 9, 9, 9, WS_ACT_RELU, WS_ACT_RELU, 1, 0 },
        { 512, 512, 1, 1, 1, 1, 0, 0, WS_ACT_NONE, WS_ACT_NONE, 1, 1 } } },
    { "jukebox", "dilated K3 D27 +bias+ReLU N4 C64 T131072 (Jukebox)", 4, 131072, 0, 1, 0, 60, 1,
      { { 64, 64, 1, 3, 1, 27, 27, 27, WS_ACT_NONE, WS_ACT_RELU, 1, 0 } } },
    { "pointwise", "pointwise K1 +bias N8 C512 T16384", 8, 16384, 0, 1, 0, 0, 1,
      { { 512, 512, 1, 1, 1, 1, 0, 0, WS_ACT_NONE, WS_ACT_NONE, 1, 0 } } },
    { "wav2vec2_fe", "wav2vec2 feature encoder, 7 convs + GELU, N8 T160000, 7 calls", 8, 160000, 0,
      1, 9000, 1200, 7,
      { W2V(1, 10, 5), W2V(512, 3, 2), W2V(512, 3, 2), W2V(512, 3, 2), W2V(512, 3, 2),
        W2V(512, 2, 2), W2V(512, 2, 2) } },
    { "dac_down", "DAC downsampler N8 C512->1024 T6890 K16 S8 P4 +bias", 8, 6890, 0, 1, 0, 300, 1,
      { { 512, 1024, 1, 16, 8, 1, 4, 4, WS_ACT_NONE, WS_ACT_NONE, 1, 0 } } },
    { "odd_c", "dense K3 P1 +bias+GELU N8 C40->512 T16384 (C_in off multiples of 16)", 8, 16384, 0, 1, 0, 0, 1,
      { { 40, 512, 1, 3, 1, 1, 1, 1, WS_ACT_NONE, WS_ACT_GELU, 1, 0 } } },
    /* the dense backward (dx, dw, db; act NONE): the ResConv1D block's K3 D9 conv, a wav2vec2
     * 512 -> 512 K3 S2 layer (its second conv's input length), DAC's downsampler */
    { "dil_bwd", "dense BWD (dx,dw,db) K3 D9 P9 +bias N256 C512 T32", 256, 32, 1, 1, 0, 0, 1,
      { { 512, 512, 1, 3, 1, 9, 9, 9, WS_ACT_NONE, WS_ACT_NONE, 1, 0 } } },
    { "w2v_bwd", "dense BWD (dx,dw,db) wav2vec2 512->512 K3 S2 N8 T31999", 8, 31999, 1, 1, 0, 0, 1,
      { { 512, 512, 1, 3, 2, 1, 0, 0, WS_ACT_NONE, WS_ACT_NONE, 0, 0 } } },
    { "dac_bwd", "dense BWD (dx,dw,db) DAC C512->1024 K16 S8 P4 +bias N8 T6890", 8, 6890, 1, 1, 0, 0, 1,
      { { 512, 1024, 1, 16, 8, 1, 4, 4, WS_ACT_NONE, WS_ACT_NONE, 1, 0 } } },
    { "stem_tiny", "Whisper tiny stem's convs, 64 windows (80->384 K3, 384->384 K3 S2, +bias+GELU), 2 calls",
      64, 3000, 0, 1, 0, 0, 2,
      { STEM1(80, 384), STEM2(384) } },
    { "stem_large", "Whisper large-v3 stem's convs, 64 windows (128->1280 K3, 1280->1280 K3 S2, +bias+GELU), 2 calls",
      64, 3000, 0, 1, 0, 0, 2,
      { STEM1(128, 1280), STEM2(1280) } },
};
#define NROWS (sizeof ROWS / sizeof *ROWS)

/* a column of the table: storage type and math */
typedef struct {
    const char *name; /* fp32, tf32, bf16 */
    ws_dtype dt;      /* x, w, y (and dy, dx) */
    ws_math math;
    double rate, tol; /* FLOP/s of the math's units; the check's rel L2 bound */
    const char *unit; /* "ffma" or "mma" */
} mode;

/* tf32: float32 storage, products on tensor cores (the contract's 2e-3), dense rows only */
static const mode MODES[] = {
    { "fp32", WS_F32, WS_MATH_F32, RATE_F32, 1e-5, "ffma" },
    { "tf32", WS_F32, WS_MATH_TF32, RATE_TF32, 2e-3, "mma" },
    { "bf16", WS_BF16, WS_MATH_BF16, RATE_BF16, 1e-2, "mma" },
};
#define NMODES (sizeof MODES / sizeof *MODES)

typedef struct {
    const char *only, *json;
    int iters, warmup, check, quick, list, per_call, no_hgemm, no_phased, direct;
    int n; /* --n: every row's batch N (0: the row's own) */
    int parts; /* --parts: the FFMA GEMM's sum in that many parts (ws_gpu_conv_parts) */
    int no_slice; /* --no-slice: small float32 calls in parts, not slices (ws_gpu_conv_no_slice) */
    unsigned hg_blocks; /* --hg-blocks: the Hopper GEMM's grid cap (ws_gpu_conv_hgemm_blocks) */
    int emit_major, emit_minor; /* --emit-cc: PTX for that capability (ws_gpu_emit_cc), e.g.
                                   8.0 on an H100 to time the mma.sync GEMM beside wgmma */
} opts;

typedef struct { /* one call of a row, at one layout and type */
    ws_conv_desc d;
    int t_in, t_out;
    size_t nx, ny, nw; /* elements over the whole batch; w */
    void *w;           /* host, storage type */
    float *b;          /* host, or NULL */
    ws_gpu_conv *gc;
    uint64_t y[MAX_SETS];
} call_st;

typedef struct {
    double us, min_us, bytes, flops, floor_us, rel;
    double pc_us, enq_us; /* --per-call */
    int checked_n, check_ok, checked;
    const char *bound;
} result;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static size_t esize(ws_dtype t)
{
    return t == WS_F32 ? 4 : 2;
}

/* n values uniform in [-scale, scale), stored as t */
static void *rnd(size_t n, ws_dtype t, double scale, uint64_t seed)
{
    ws_rng r = { seed };
    void *p = malloc(n * esize(t));
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        float v = (float)(scale * (2.0 * ws_rng_uniform(&r) - 1.0));
        if (t == WS_F32)
            ((float *)p)[i] = v;
        else
            ((uint16_t *)p)[i] = ws_f32_to_bf16(v);
    }
    return p;
}

static double ld(const void *p, ws_dtype t, size_t i)
{
    return t == WS_F32 ? ((const float *)p)[i] : ws_bf16_to_f32(((const uint16_t *)p)[i]);
}

/* ||a - ref|| / ||ref||; NaN when either holds a NaN (it fails every bound) */
static double rel_l2(const void *a, const void *ref, ws_dtype t, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double x = ld(a, t, i), y = ld(ref, t, i);
        num += (x - y) * (x - y);
        den += y * y;
    }
    if (isnan(num) || isnan(den))
        return NAN;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int row_n(const row *r, const opts *o)
{
    if (o->n > 0)
        return o->n;
    return o->quick && r->n > 2 ? 2 : r->n;
}

static int row_t(const row *r, int quick)
{
    return quick && r->t >= 512 ? r->t / 16 : r->t;
}

/* the calls' descriptors, lengths and sizes; 0, or -1 with err */
static int make_calls(const row *r, ws_layout lay, const mode *m, int n, int t, call_st *cs,
                      ws_err *err)
{
    const ws_dtype dt = m->dt;
    for (int j = 0; j < r->ncalls; j++) {
        const cspec *s = &r->c[j];
        call_st *c = &cs[j];
        c->d = (ws_conv_desc){ .op = r->bwd ? WS_CONV_BWD : WS_CONV_FWD, .c_in = s->c_in,
                               .c_out = s->c_out, .groups = s->groups, .k = s->k,
                               .stride = s->stride, .dilation = s->dil, .pad_l = s->pad_l,
                               .pad_r = s->pad_r, .x_layout = lay, .y_layout = lay, .x_type = dt,
                               .w_type = dt, .y_type = dt,
                               .math = m->math, .pre = s->pre,
                               .act = s->act };
        if (ws_conv_check(&c->d, err))
            return -1;
        c->t_in = j ? cs[j - 1].t_out : t;
        c->t_out = ws_conv_out_len(&c->d, c->t_in);
        if (c->t_out <= 0)
            return ws_errf(err, "%s call %d: t_in %d too short", r->name, j, c->t_in);
        c->nx = (size_t)n * s->c_in * c->t_in;
        c->ny = (size_t)n * s->c_out * c->t_out;
        c->nw = (size_t)s->c_out * (s->c_in / s->groups) * s->k;
    }
    return 0;
}

/* fewest bytes and FLOPs of the calls, and the floor */
static void cost(const row *r, const call_st *cs, const mode *m, result *res)
{
    const double es = (double)esize(m->dt);
    double bytes = 0, flops = 0;
    for (int j = 0; j < r->ncalls; j++) {
        const call_st *c = &cs[j];
        const double b = r->c[j].bias ? 4.0 * r->c[j].c_out : 0;
        const double f = 2.0 * (double)c->ny * (r->c[j].c_in / r->c[j].groups) * r->c[j].k;
        if (r->bwd) {
            bytes += es * (2.0 * c->nx + c->ny + c->nw) + 4.0 * c->nw + 2 * b;
            flops += 2 * f;
        } else {
            bytes += es * ((double)c->nx + c->ny + c->nw + (r->c[j].add_in ? c->ny : 0)) + b;
            flops += f;
        }
    }
    const double tm = bytes / BW * 1e6, tf = flops / m->rate * 1e6;
    res->bytes = bytes;
    res->flops = flops;
    res->floor_us = tm > tf ? tm : tf;
    res->bound = tm > tf ? "mem" : m->unit;
}

static int row_selected(const row *r, ws_layout lay, const mode *m, const char *only)
{
    if (m->math == WS_MATH_TF32 && (r->bwd || r->c[0].groups != 1))
        return 0;
    char label[96];
    snprintf(label, sizeof label, "%s/%s/%s", r->name, lay == WS_NLC ? "nlc" : "ncl", m->name);
    return !only || strstr(label, only);
}

/* times the row's calls (ncalls x sets args, call-major): a single call over one set is
 * ws_gpu_conv_bench's own median; otherwise one timed call per call and iteration, sets
 * rotated, per-iteration sums */
static int time_calls(call_st *cs, int ncalls, const ws_conv_args *a, int sets, const opts *o,
                      double *med, double *mn, ws_err *err)
{
    double m = 0, x = 0;
    if (ncalls == 1 && sets == 1)
        return ws_gpu_conv_bench(cs[0].gc, &a[0], o->warmup, o->iters, med, mn, err);
    for (int s = 0; s < sets; s++)
        for (int j = 0; j < ncalls; j++)
            if (ws_gpu_conv_bench(cs[j].gc, &a[j * sets + s], s ? 1 : o->warmup, 1, &m, &x, err))
                return -1;
    double *ts = malloc((size_t)o->iters * (size_t)(ncalls + 1) * sizeof *ts);
    if (!ts)
        return ws_errf(err, "out of memory");
    double *per = ts + o->iters; /* per[j * iters + i]: call j of iteration i */
    for (int i = 0; i < o->iters; i++) {
        double sum = 0;
        for (int j = 0; j < ncalls; j++) {
            if (ws_gpu_conv_bench(cs[j].gc, &a[j * sets + i % sets], 0, 1, &m, &x, err)) {
                free(ts);
                return -1;
            }
            sum += m;
            per[j * o->iters + i] = m;
        }
        ts[i] = sum;
    }
    /* each call's median on stderr, beside the row's sum (where the row's time goes) */
    for (int j = 0; j < ncalls; j++) {
        double *pj = per + (size_t)j * (size_t)o->iters;
        qsort(pj, (size_t)o->iters, sizeof *pj, cmp_double);
        fprintf(stderr, "  call %d (C_in %d C_out %d K %d S %d, %s, math %d): median %.1f us\n", j,
                cs[j].d.c_in, cs[j].d.c_out, cs[j].d.k, cs[j].d.stride,
                cs[j].d.x_layout == WS_NLC ? "NLC" : "NCL", (int)cs[j].d.math, pj[o->iters / 2]);
    }
    qsort(ts, (size_t)o->iters, sizeof *ts, cmp_double);
    *med = o->iters % 2 ? ts[o->iters / 2] : 0.5 * (ts[o->iters / 2 - 1] + ts[o->iters / 2]);
    *mn = ts[0];
    free(ts);
    return 0;
}

/* poisons `bytes` at dptr with 0xff (NaN in f32 and bf16) */
static int poison(ws_gpu *g, uint64_t dptr, size_t bytes, ws_err *err)
{
    void *p = malloc(bytes);
    if (!p)
        return ws_errf(err, "out of memory (%zu bytes)", bytes);
    memset(p, 0xff, bytes);
    int rc = ws_gpu_upload(g, dptr, p, bytes, err);
    free(p);
    return rc;
}

#define DEV(g, ptr, bytes)                                                                      \
    do {                                                                                        \
        if (ws_gpu_alloc(g, bytes, &(ptr), err))                                                \
            goto done;                                                                          \
    } while (0)
#define P(u) ((void *)(uintptr_t)(u))

/* FWD check: every call once on set 0 in order, then each call against the CPU on the first
 * nc items, its input downloaded from the device (the first call's is hx); max rel L2 */
static int check_fwd(ws_gpu *g, const row *r, call_st *cs, const ws_conv_args *a, int sets,
                     int n, int nc, const void *hx, ws_dtype dt, double *rel, ws_err *err)
{
    const size_t es = esize(dt);
    int rc = -1;
    void *in = NULL, *gy = NULL, *cy = NULL;
    ws_conv *cc = NULL;
    for (int j = 0; j < r->ncalls; j++)
        if (poison(g, cs[j].y[0], cs[j].ny * es, err))
            return -1;
    for (int j = 0; j < r->ncalls; j++)
        if (ws_gpu_conv_run(cs[j].gc, &a[j * sets], err))
            return -1;
    *rel = 0;
    for (int j = 0; j < r->ncalls; j++) {
        const call_st *c = &cs[j];
        const size_t nx = c->nx / (size_t)n * nc, ny = c->ny / (size_t)n * nc;
        if (!(gy = malloc(ny * es)) || !(cy = malloc(ny * es)) ||
            (j && !(in = malloc(nx * es)))) {
            ws_errf(err, "out of memory");
            goto done;
        }
        if ((j && ws_gpu_download(g, in, cs[j - 1].y[0], nx * es, err)) ||
            ws_gpu_download(g, gy, c->y[0], ny * es, err))
            goto done;
        if (!(cc = ws_conv_new(&c->d, c->w, c->b, 0, err)))
            goto done;
        ws_conv_args ca = { .n = nc, .t_in = c->t_in, .x = j ? in : hx, .y = cy };
        if (r->c[j].add_in) {
            ca.add = hx;
            ca.add_batch_stride = (long long)(c->ny / (size_t)n);
        }
        if (ws_conv_run(cc, &ca, err))
            goto done;
        double e = rel_l2(gy, cy, dt, ny);
        if (!(e <= *rel)) /* keeps a NaN */
            *rel = e;
        ws_conv_free(cc), cc = NULL;
        free(in), free(gy), free(cy);
        in = gy = cy = NULL;
    }
    rc = 0;
done:
    ws_conv_free(cc);
    free(in), free(gy), free(cy);
    return rc;
}

/* BWD check (one call over the first n items): dx, dw, db against the CPU; max rel L2 */
static int check_bwd(ws_gpu *g, call_st *c, const ws_conv_args *a0, int n, const void *hx,
                     const void *hdy, ws_dtype dt, double *rel, ws_err *err)
{
    const size_t es = esize(dt), nb = (size_t)c->d.c_out;
    ws_conv_args a1 = *a0;
    const ws_conv_args *a = &a1;
    const size_t nx_all = c->nx;
    a1.n = n;
    c->nx = c->nx / (size_t)a0->n * (size_t)n; /* this check's items (restored below) */
    int rc = -1;
    void *gdx = malloc(c->nx * es), *cdx = malloc(c->nx * es);
    float *gdw = malloc(c->nw * 4), *cdw = malloc(c->nw * 4), *gdb = malloc(nb * 4),
          *cdb = malloc(nb * 4);
    ws_conv *cc = NULL;
    if (!gdx || !cdx || !gdw || !cdw || !gdb || !cdb) {
        ws_errf(err, "out of memory");
        goto done;
    }
    if (poison(g, (uint64_t)(uintptr_t)a->dx, c->nx * es, err) ||
        poison(g, (uint64_t)(uintptr_t)a->dw, c->nw * 4, err) ||
        poison(g, (uint64_t)(uintptr_t)a->db, nb * 4, err) || ws_gpu_conv_run(c->gc, a, err) ||
        ws_gpu_download(g, gdx, (uint64_t)(uintptr_t)a->dx, c->nx * es, err) ||
        ws_gpu_download(g, gdw, (uint64_t)(uintptr_t)a->dw, c->nw * 4, err) ||
        ws_gpu_download(g, gdb, (uint64_t)(uintptr_t)a->db, nb * 4, err))
        goto done;
    if (!(cc = ws_conv_new(&c->d, c->w, c->b, 0, err)))
        goto done;
    ws_conv_args ca = { .n = n, .t_in = c->t_in, .x = hx, .dy = hdy, .dx = cdx, .dw = cdw,
                        .db = cdb };
    if (ws_conv_run(cc, &ca, err))
        goto done;
    double e[3] = { rel_l2(gdx, cdx, dt, c->nx), rel_l2(gdw, cdw, WS_F32, c->nw),
                    rel_l2(gdb, cdb, WS_F32, nb) };
    *rel = 0;
    for (int i = 0; i < 3; i++)
        if (!(e[i] <= *rel))
            *rel = e[i];
    rc = 0;
done:
    c->nx = nx_all;
    ws_conv_free(cc);
    free(gdx), free(cdx), free(gdw), free(cdw), free(gdb), free(cdb);
    return rc;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* --per-call: the row's calls again, by plans without weights given w and b per call:
 * res->pc_us (time_calls) and, for one-call rows, res->enq_us (host time of one enqueue) */
static int per_call_time(ws_gpu *g, const row *r, call_st *cs, ws_conv_args *a, int sets,
                         const opts *o, result *res, ws_err *err)
{
    ws_gpu_conv *plan_gc[MAX_CALLS];
    uint64_t wd[MAX_CALLS] = { 0 }, bd[MAX_CALLS] = { 0 };
    int rc = -1;
    for (int j = 0; j < r->ncalls; j++)
        plan_gc[j] = cs[j].gc, cs[j].gc = NULL;
    for (int j = 0; j < r->ncalls; j++) {
        const size_t wb = cs[j].nw * esize(cs[j].d.w_type), bb = (size_t)cs[j].d.c_out * 4;
        if (ws_gpu_alloc(g, wb, &wd[j], err) || ws_gpu_upload(g, wd[j], cs[j].w, wb, err) ||
            (cs[j].b && (ws_gpu_alloc(g, bb, &bd[j], err) ||
                         ws_gpu_upload(g, bd[j], cs[j].b, bb, err))) ||
            !(cs[j].gc = ws_gpu_conv_new(g, &cs[j].d, NULL, NULL, err)))
            goto done;
        ws_gpu_conv_no_hgemm(cs[j].gc, o->no_hgemm);
        ws_gpu_conv_no_phased(cs[j].gc, o->no_phased);
        ws_gpu_conv_force_direct(cs[j].gc, o->direct);
        ws_gpu_conv_parts(cs[j].gc, o->parts);
        ws_gpu_conv_no_slice(cs[j].gc, o->no_slice);
        ws_gpu_conv_hgemm_blocks(cs[j].gc, o->hg_blocks);
        for (int s = 0; s < sets; s++) {
            a[j * sets + s].w = P(wd[j]);
            a[j * sets + s].b = (const float *)P(bd[j]);
        }
    }
    double mn = 0;
    if (time_calls(cs, r->ncalls, a, sets, o, &res->pc_us, &mn, err))
        goto done;
    if (r->ncalls == 1) {
        enum { NQ = 200, BATCH = 10 };
        double t[NQ];
        for (int i = 0; i < NQ; i++) {
            const double t0 = now_us();
            if (ws_gpu_conv_enqueue(cs[0].gc, &a[i % sets], 0, err))
                goto done;
            t[i] = now_us() - t0;
            /* a few calls in flight at a time: the launch queue never fills, so no call
             * waits for the device */
            if (i % BATCH == BATCH - 1 && ws_gpu_user_stream_wait(g, 0, err))
                goto done;
        }
        qsort(t, NQ, sizeof *t, cmp_double);
        res->enq_us = 0.5 * (t[NQ / 2 - 1] + t[NQ / 2]);
    }
    rc = 0;
done:
    for (int j = 0; j < r->ncalls; j++) {
        ws_gpu_conv_free(cs[j].gc);
        cs[j].gc = plan_gc[j];
        ws_gpu_release(g, wd[j]);
        ws_gpu_release(g, bd[j]);
        for (int s = 0; s < sets; s++)
            a[j * sets + s].w = NULL, a[j * sets + s].b = NULL;
    }
    return rc;
}

/* one row at one layout and type: set up, check, time; 0, or -1 with err */
static int run_row(ws_gpu *g, const row *r, int ri, ws_layout lay, const mode *m, const opts *o,
                   result *res, ws_err *err)
{
    const ws_dtype dt = m->dt;
    const int n = row_n(r, o), t = row_t(r, o->quick);
    const size_t es = esize(dt);
    call_st cs[MAX_CALLS];
    ws_conv_args a[MAX_CALLS * MAX_SETS];
    uint64_t x0[MAX_SETS] = { 0 }, dy[MAX_SETS] = { 0 }, dx[MAX_SETS] = { 0 },
             dw[MAX_SETS] = { 0 }, db[MAX_SETS] = { 0 };
    void *hx = NULL, *hdy = NULL;
    int rc = -1, sets = 1;
    memset(cs, 0, sizeof cs);
    memset(a, 0, sizeof a);
    memset(res, 0, sizeof *res);
    if (make_calls(r, lay, m, n, t, cs, err))
        return -1;
    cost(r, cs, m, res);
    const uint64_t seed = 1000u * (uint64_t)(ri + 1) + 10u * (uint64_t)lay + (uint64_t)dt;
    /* host data */
    if (!(hx = rnd(cs[0].nx, dt, 1.0, seed)) ||
        (r->bwd && !(hdy = rnd(cs[0].ny, dt, 1.0, seed + 1)))) {
        ws_errf(err, "out of memory");
        goto done;
    }
    for (int j = 0; j < r->ncalls; j++) {
        const double sc = 1.0 / sqrt((double)(r->c[j].c_in / r->c[j].groups) * r->c[j].k);
        if (!(cs[j].w = rnd(cs[j].nw, dt, sc, seed + 100 + 2 * (uint64_t)j)) ||
            (r->c[j].bias &&
             !(cs[j].b = rnd((size_t)r->c[j].c_out, WS_F32, sc, seed + 101 + 2 * (uint64_t)j)))) {
            ws_errf(err, "out of memory");
            goto done;
        }
    }
    /* device: one set is x (+ dy, dx, dw, db) and every call's output */
    size_t set_bytes = cs[0].nx * es;
    for (int j = 0; j < r->ncalls; j++)
        set_bytes += cs[j].ny * es;
    if (r->bwd)
        set_bytes += cs[0].nx * es + (cs[0].nw + (size_t)cs[0].d.c_out) * 4;
    sets = set_bytes < ROTATE_BELOW ? MAX_SETS : 1;
    for (int s = 0; s < sets; s++) {
        DEV(g, x0[s], cs[0].nx * es);
        if (ws_gpu_upload(g, x0[s], hx, cs[0].nx * es, err))
            goto done;
        if (r->bwd) {
            DEV(g, dy[s], cs[0].ny * es);
            DEV(g, dx[s], cs[0].nx * es);
            DEV(g, dw[s], cs[0].nw * 4);
            DEV(g, db[s], (size_t)cs[0].d.c_out * 4);
            if (ws_gpu_upload(g, dy[s], hdy, cs[0].ny * es, err))
                goto done;
            a[s] = (ws_conv_args){ .n = n, .t_in = t, .x = P(x0[s]), .dy = P(dy[s]),
                                   .dx = P(dx[s]), .dw = (float *)P(dw[s]),
                                   .db = (float *)P(db[s]) };
            continue;
        }
        for (int j = 0; j < r->ncalls; j++) {
            DEV(g, cs[j].y[s], cs[j].ny * es);
            ws_conv_args *aj = &a[j * sets + s];
            *aj = (ws_conv_args){ .n = n, .t_in = cs[j].t_in,
                                  .x = P(j ? cs[j - 1].y[s] : x0[s]), .y = P(cs[j].y[s]) };
            if (r->c[j].add_in) {
                aj->add = P(x0[s]);
                aj->add_batch_stride = (long long)(cs[j].ny / (size_t)n);
            }
        }
    }
    for (int j = 0; j < r->ncalls; j++) {
        const double t0 = now_us();
        if (!(cs[j].gc = ws_gpu_conv_new(g, &cs[j].d, cs[j].w, cs[j].b, err)))
            goto done;
        /* host time of making the plan: emitting every module, loading those this process has
         * not loaded yet (with CUDA_CACHE_DISABLE=1, the driver's compile of each), preparing
         * and uploading the weights */
        fprintf(stderr, "plan %s call %d: %.1f ms\n", r->name, j, (now_us() - t0) / 1e3);
        ws_gpu_conv_no_hgemm(cs[j].gc, o->no_hgemm);
        ws_gpu_conv_no_phased(cs[j].gc, o->no_phased);
        ws_gpu_conv_force_direct(cs[j].gc, o->direct);
        ws_gpu_conv_parts(cs[j].gc, o->parts);
        ws_gpu_conv_no_slice(cs[j].gc, o->no_slice);
        ws_gpu_conv_hgemm_blocks(cs[j].gc, o->hg_blocks);
    }
    /* check */
    if (o->check) {
        double cpu_flop = res->flops;
        res->checked_n = cpu_flop <= CHECK_FLOP_MAX ? n : 1;
        if (r->bwd ? check_bwd(g, &cs[0], &a[0], res->checked_n, hx, hdy, dt, &res->rel, err)
                   : check_fwd(g, r, cs, a, sets, n, res->checked_n, hx, dt, &res->rel, err))
            goto done;
        res->checked = 1;
        res->check_ok = res->rel <= m->tol;
    }
    /* time */
    if (time_calls(cs, r->ncalls, a, sets, o, &res->us, &res->min_us, err))
        goto done;
    if (o->per_call && per_call_time(g, r, cs, a, sets, o, res, err))
        goto done;
    rc = 0;
done:
    for (int j = 0; j < r->ncalls; j++) {
        ws_gpu_conv_free(cs[j].gc);
        for (int s = 0; s < MAX_SETS; s++)
            ws_gpu_release(g, cs[j].y[s]);
        free(cs[j].w);
        free(cs[j].b);
    }
    for (int s = 0; s < MAX_SETS; s++) {
        ws_gpu_release(g, x0[s]);
        ws_gpu_release(g, dy[s]);
        ws_gpu_release(g, dx[s]);
        ws_gpu_release(g, dw[s]);
        ws_gpu_release(g, db[s]);
    }
    free(hx);
    free(hdy);
    return rc;
}

/* the targets are stated for fp32 (FFMA) and bf16; tf32 has none */
static double must(const row *r, const mode *m)
{
    return m->math == WS_MATH_F32 ? r->must_f32 : m->math == WS_MATH_BF16 ? r->must_bf16 : 0;
}

static void print_head(int list)
{
    if (list)
        printf("%-12s %-3s %-4s %10s %10s %9s %-4s %8s  %s\n", "case", "lay", "type", "MB",
               "GFLOP", "floor_us", "by", "must_us", "what");
    else
        printf("%-12s %-3s %-4s %10s %10s %8s %8s %9s %-4s %8s %9s %s\n", "case", "lay", "type",
               "us", "min_us", "GB/s", "TFLOP/s", "floor_us", "by", "must_us", "rel_l2",
               "check");
}

int main(int argc, char **argv)
{
    opts o = { .iters = 50, .warmup = 10, .check = 1 };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc)
            o.only = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            o.iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            o.json = argv[++i];
        else if (!strcmp(argv[i], "--no-check"))
            o.check = 0;
        else if (!strcmp(argv[i], "--quick"))
            o.quick = 1;
        else if (!strcmp(argv[i], "--per-call"))
            o.per_call = 1;
        else if (!strcmp(argv[i], "--no-hgemm"))
            o.no_hgemm = 1;
        else if (!strcmp(argv[i], "--no-phased"))
            o.no_phased = 1;
        else if (!strcmp(argv[i], "--direct"))
            o.direct = 1;
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            o.n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--parts") && i + 1 < argc)
            o.parts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-slice"))
            o.no_slice = 1;
        else if (!strcmp(argv[i], "--hg-blocks") && i + 1 < argc)
            o.hg_blocks = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--list"))
            o.list = 1;
        else if (!strcmp(argv[i], "--emit-cc") && i + 1 < argc &&
                 sscanf(argv[i + 1], "%d.%d", &o.emit_major, &o.emit_minor) == 2)
            i++;
        else {
            fprintf(stderr, "usage: %s [--only SUBSTRING] [--iters N] [--json FILE] [--no-check] "
                            "[--quick] [--list] [--emit-cc MAJOR.MINOR] [--per-call] [--no-hgemm] [--no-phased] [--direct] [--n N] [--parts Z] [--no-slice] [--hg-blocks B]\n", argv[0]);
            return 2;
        }
    }
    if (o.iters < 1) {
        fprintf(stderr, "bench-conv_gpu: --iters %d must be >= 1\n", o.iters);
        return 2;
    }
    if (o.n < 0 || o.n > 4096) {
        fprintf(stderr, "bench-conv_gpu: --n %d must be between 1 and 4096\n", o.n);
        return 2;
    }
    ws_err err = { "" };
    ws_gpu *g = NULL;
    if (!o.list && !(g = ws_gpu_open(0, &err))) {
        printf("bench-conv_gpu: skipped: no usable GPU (%s)\n", err.msg);
        return 77;
    }
    if (g && o.emit_major && ws_gpu_emit_cc(g, o.emit_major, o.emit_minor)) {
        fprintf(stderr, "bench-conv_gpu: --emit-cc %d.%d: not between 8.0 and the device's capability\n",
                o.emit_major, o.emit_minor);
        ws_gpu_close(g);
        return 2;
    }
    FILE *js = NULL;
    if (o.json && !(js = fopen(o.json, "w"))) {
        fprintf(stderr, "bench-conv_gpu: cannot write %s\n", o.json);
        ws_gpu_close(g);
        return 1;
    }
    if (js)
        fprintf(js, "[");
    print_head(o.list);
    int rc = 0, nrows = 0;
    for (size_t ri = 0; ri < NROWS; ri++) {
        const row *r = &ROWS[ri];
        for (int li = 0; li < 1 + r->nlc; li++) {
            const ws_layout lay = li ? WS_NLC : WS_NCL;
            for (size_t mi = 0; mi < NMODES; mi++) {
                const mode *m = &MODES[mi];
                if (!row_selected(r, lay, m, o.only))
                    continue;
                const char *ls = lay == WS_NLC ? "nlc" : "ncl", *ts = m->name;
                result res;
                memset(&res, 0, sizeof res);
                if (o.list) {
                    call_st cs[MAX_CALLS];
                    memset(cs, 0, sizeof cs);
                    if (make_calls(r, lay, m, row_n(r, &o), row_t(r, o.quick), cs, &err)) {
                        fprintf(stderr, "bench-conv_gpu: %s: %s\n", r->name, err.msg);
                        rc = 1;
                        continue;
                    }
                    cost(r, cs, m, &res);
                    printf("%-12s %-3s %-4s %10.1f %10.2f %9.1f %-4s %8.0f  %s; T_out", r->name,
                           ls, ts, res.bytes / 1e6, res.flops / 1e9, res.floor_us, res.bound,
                           must(r, m), r->what);
                    for (int j = 0; j < r->ncalls; j++)
                        printf(" %d", cs[j].t_out);
                    printf("\n");
                    continue;
                }
                if (run_row(g, r, (int)ri, lay, m, &o, &res, &err)) {
                    fprintf(stderr, "bench-conv_gpu: %s/%s/%s: %s\n", r->name, ls, ts, err.msg);
                    printf("%-12s %-3s %-4s  error: %s\n", r->name, ls, ts, err.msg);
                    rc = 1;
                    continue;
                }
                const char *chk = !res.checked ? "skipped" : res.check_ok ? "ok" : "FAIL";
                if (res.checked && !res.check_ok)
                    rc = 1;
                char nck[32] = "", ms[16] = "-", rs[16] = "-";
                if (res.checked && res.checked_n != row_n(r, &o))
                    snprintf(nck, sizeof nck, " (n=%d)", res.checked_n);
                if (must(r, m) > 0)
                    snprintf(ms, sizeof ms, "%.0f", must(r, m));
                if (res.checked)
                    snprintf(rs, sizeof rs, "%.2e", res.rel);
                printf("%-12s %-3s %-4s %10.1f %10.1f %8.0f %8.2f %9.1f %-4s %8s %9s %s%s",
                       r->name, ls, ts, res.us, res.min_us, res.bytes / res.us / 1e3,
                       res.flops / res.us / 1e6, res.floor_us, res.bound, ms, rs, chk, nck);
                if (o.per_call)
                    printf("  pc_us %.1f (%+.1f%%) enq_us %.2f", res.pc_us,
                           100.0 * (res.pc_us / res.us - 1.0), res.enq_us);
                printf("\n");
                fflush(stdout);
                if (js) {
                    char rel[32] = "null"; /* not checked, or NaN */
                    if (res.checked && isfinite(res.rel))
                        snprintf(rel, sizeof rel, "%.3e", res.rel);
                    fprintf(js,
                            "%s\n {\"case\": \"%s\", \"what\": \"%s\", \"layout\": \"%s\", "
                            "\"dtype\": \"%s\", \"n\": %d, \"t\": %d, \"us\": %.3f, "
                            "\"min_us\": %.3f, \"bytes\": %.0f, \"flops\": %.0f, \"gbps\": %.2f, "
                            "\"tflops\": %.4f, \"floor_us\": %.3f, \"bound\": \"%s\", "
                            "\"must_us\": %.0f, \"rel_l2\": %s, \"checked_n\": %d, "
                            "\"check\": \"%s\", \"pc_us\": %.3f, \"enq_us\": %.3f}",
                            nrows ? "," : "", r->name, r->what, ls, ts, row_n(r, &o),
                            row_t(r, o.quick), res.us, res.min_us, res.bytes, res.flops,
                            res.bytes / res.us / 1e3, res.flops / res.us / 1e6, res.floor_us,
                            res.bound, must(r, m), rel, res.checked_n, chk, res.pc_us, res.enq_us);
                    nrows++;
                }
            }
        }
    }
    if (js) {
        fprintf(js, "\n]\n");
        if (fclose(js)) {
            fprintf(stderr, "bench-conv_gpu: writing %s failed\n", o.json);
            rc = 1;
        }
    }
    ws_gpu_close(g);
    return rc;
}

/* test_gpu_pair.c - a pair of forward convs as one block (include/ws_conv.h ws_conv_pair_*,
 * src/conv/pair.c, src/cuda/gpu_pair.c, src/cuda/ptx/ptx_hpair.c).
 *
 * conv_pair/...: the CPU pair is the two calls, bit for bit; refusals name the field.
 * gpu_pair_ptx/...: which pairs the fused kernel takes; every case's module (clusters of 1 and
 *   2) through ptxas for sm_90a without spills (WS_PTXAS; skipped without it).
 * gpu_pair/...: on a GPU of compute capability 9.0: fused by default where h has at least
 *   WS_HPAIR_MIN_MID channels; each case, fused (forced), against the CPU pair
 *   (rel L2 within the math's bound) and against the GPU's own two calls (the same
 *   roundings, the sums in another order), over y poisoned with NaN; two runs the same bits;
 *   clusters of 1 and 2; weights per call on a stream of the caller's the same bits as the
 *   plan's. Skipped without a GPU or below 9.0 (the pair runs as two calls there, which
 *   test_gpu_conv.c covers).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ws_conv.h>

#include "common.h"
#include "cuda/gpu_conv_internal.h"
#include "cuda/ptx/ptx_hpair.h"
#include "helpers.h"

typedef struct {
    const char *name;
    int n, t, c_in, c_mid, c_out, k, dil, pad_l, pad_r;
    ws_layout lay;
    ws_dtype xt, ht, yt; /* x; h (d1's y, d2's x); y */
    ws_math math;
    ws_act pre1, act1, pre2, act2;
    int bias2, add; /* add: the block's input (x), which needs xt == yt and c_in == c_out */
} pcase;

#define BF WS_BF16
static const pcase pcases[] = {
    /* the ResConv1D block (Jukebox / DAC): odd item groups leave a cluster's second block idle */
    { "resblock_ncl", 6, 32, 512, 512, 512, 3, 9, 9, 9, WS_NCL, BF, BF, BF, WS_MATH_BF16, WS_ACT_RELU, WS_ACT_RELU,
      WS_ACT_NONE, WS_ACT_NONE, 1, 1 },
    { "resblock_nlc", 5, 32, 512, 512, 512, 3, 9, 9, 9, WS_NLC, BF, BF, BF, WS_MATH_BF16, WS_ACT_RELU, WS_ACT_RELU,
      WS_ACT_NONE, WS_ACT_NONE, 1, 1 },
    /* two time tiles of 64 with a partial one; GELU, a pre-activation on h; float32 y, no add */
    { "nlc_t100_gelu", 3, 100, 128, 256, 96, 3, 1, 1, 1, WS_NLC, BF, BF, WS_F32, WS_MATH_BF16, WS_ACT_NONE,
      WS_ACT_GELU, WS_ACT_RELU, WS_ACT_SILU, 1, 0 },
    /* float32 x and h (rounded by the kernel), C_in 80 (a partial chunk), no bias on conv 2; NCL
     * at T_in % 8 != 0: x read a time at a time */
    { "ncl_f32_cin80", 2, 45, 80, 64, 32, 5, 2, 4, 4, WS_NCL, WS_F32, WS_F32, WS_F32, WS_MATH_BF16, WS_ACT_SILU,
      WS_ACT_RELU, WS_ACT_NONE, WS_ACT_NONE, 0, 0 },
    /* float32 x read 8 times at a time (T_in % 8 == 0), GELU */
    { "ncl_f32_t64", 3, 64, 64, 128, 64, 3, 2, 2, 2, WS_NCL, WS_F32, WS_F32, WS_F32, WS_MATH_BF16, WS_ACT_NONE,
      WS_ACT_GELU, WS_ACT_NONE, WS_ACT_NONE, 1, 1 },
    /* GELU on a bf16 h: rounded before and after, as the two calls do */
    { "ncl_pre2_gelu", 2, 40, 64, 128, 96, 3, 1, 1, 1, WS_NCL, BF, BF, BF, WS_MATH_BF16, WS_ACT_NONE,
      WS_ACT_NONE, WS_ACT_GELU, WS_ACT_RELU, 1, 0 },
    /* f16 math, causal K2 D3 */
    { "nlc_f16_causal", 5, 17, 64, 128, 128, 2, 3, 3, 0, WS_NLC, WS_F16, WS_F16, WS_F16, WS_MATH_F16, WS_ACT_NONE,
      WS_ACT_RELU, WS_ACT_NONE, WS_ACT_NONE, 1, 0 },
    /* Jukebox's dilation 27 over a long item: the halo's rows set the smallest time tile */
    { "ncl_d27_long", 1, 700, 64, 64, 64, 3, 27, 27, 27, WS_NCL, BF, BF, BF, WS_MATH_BF16, WS_ACT_RELU, WS_ACT_RELU,
      WS_ACT_NONE, WS_ACT_NONE, 1, 1 },
    /* NLC at C_out 64: the stores split over positions too */
    { "nlc_d27_c64", 2, 300, 64, 64, 64, 3, 27, 27, 27, WS_NLC, BF, BF, BF, WS_MATH_BF16, WS_ACT_RELU, WS_ACT_RELU,
      WS_ACT_NONE, WS_ACT_NONE, 1, 1 },
    /* no padding (T_out = T_in - 4), C_in 16: a chunk three quarters zeros */
    { "nlc_valid_cin16", 3, 50, 16, 64, 32, 3, 2, 0, 0, WS_NLC, BF, BF, BF, WS_MATH_BF16, WS_ACT_NONE, WS_ACT_RELU,
      WS_ACT_NONE, WS_ACT_NONE, 1, 0 },
    { "ncl_valid_cin16", 3, 50, 16, 64, 32, 3, 2, 0, 0, WS_NCL, WS_F32, WS_F32, WS_F32, WS_MATH_BF16, WS_ACT_NONE,
      WS_ACT_RELU, WS_ACT_NONE, WS_ACT_NONE, 1, 0 },
    /* NCL y at C_out 64 (the vector stores' channels) but T_out % 4 != 0: the element stores */
    { "ncl_t45_c64_elements", 2, 45, 64, 128, 64, 3, 1, 1, 1, WS_NCL, BF, BF, BF, WS_MATH_BF16, WS_ACT_NONE,
      WS_ACT_RELU, WS_ACT_NONE, WS_ACT_NONE, 1, 1 },
};
#define NP ((int)(sizeof pcases / sizeof pcases[0]))

static void descs(const pcase *c, ws_conv_desc *d1, ws_conv_desc *d2)
{
    *d1 = (ws_conv_desc){ .op = WS_CONV_FWD, .c_in = c->c_in, .c_out = c->c_mid, .groups = 1, .k = c->k,
                          .stride = 1, .dilation = c->dil, .pad_l = c->pad_l, .pad_r = c->pad_r,
                          .x_layout = c->lay, .y_layout = c->lay, .x_type = c->xt, .w_type = WS_F32,
                          .y_type = c->ht, .math = c->math, .pre = c->pre1, .act = c->act1 };
    *d2 = (ws_conv_desc){ .op = WS_CONV_FWD, .c_in = c->c_mid, .c_out = c->c_out, .groups = 1, .k = 1,
                          .stride = 1, .dilation = 1, .x_layout = c->lay, .y_layout = c->lay, .x_type = c->ht,
                          .w_type = WS_F32, .y_type = c->yt, .math = c->math, .pre = c->pre2, .act = c->act2 };
}

static size_t tsize(ws_dtype t) { return t == WS_F32 ? 4 : 2; }

static double get(const void *p, ws_dtype t, size_t i)
{
    if (t == WS_F32)
        return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == WS_F16 ? ws_f16_to_f32(h) : ws_bf16_to_f32(h);
}

static void *random_buf(size_t n, ws_dtype t, double scale, ws_rng *r)
{
    void *p = malloc(n * tsize(t) + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        float v = (float)((ws_rng_uniform(r) * 2.0 - 1.0) * scale);
        if (t == WS_F32)
            ((float *)p)[i] = v;
        else
            ((uint16_t *)p)[i] = t == WS_F16 ? ws_f32_to_f16(v) : ws_f32_to_bf16(v);
    }
    return p;
}

/* rel L2 of a against b over n values of type t; none of a NaN */
static double pair_rel_l2(const char *name, const void *a, const void *b, ws_dtype t, size_t n)
{
    double se = 0, sr = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = get(a, t, i), y = get(b, t, i);
        cr_assert(!isnan(x), "%s: y[%zu] is NaN (not written?)", name, i);
        se += (x - y) * (x - y), sr += y * y;
    }
    return sr > 0 ? sqrt(se / sr) : sqrt(se);
}

/* ---- the CPU pair ---- */

Test(conv_pair, cpu_pair_is_the_two_calls_bit_for_bit)
{
    for (int i = 0; i < NP; i++) {
        const pcase *c = &pcases[i];
        ws_conv_desc d1, d2;
        descs(c, &d1, &d2);
        ws_rng r = { 1234u + (unsigned)i };
        const int t_mid = ws_conv_out_len(&d1, c->t);
        cr_assert_eq(t_mid, c->t + c->pad_l + c->pad_r - c->dil * (c->k - 1), "%s", c->name);
        const size_t nx = (size_t)c->n * c->c_in * c->t, nh = (size_t)c->n * c->c_mid * t_mid;
        const size_t ny = (size_t)c->n * c->c_out * t_mid;
        void *x = random_buf(nx, c->xt, 1.0, &r);
        float *w1 = random_buf((size_t)c->c_mid * c->c_in * c->k, WS_F32, 1.0 / sqrt(c->c_in * c->k), &r);
        float *b1 = random_buf((size_t)c->c_mid, WS_F32, 0.1, &r);
        float *w2 = random_buf((size_t)c->c_out * c->c_mid, WS_F32, 1.0 / sqrt(c->c_mid), &r);
        float *b2 = c->bias2 ? random_buf((size_t)c->c_out, WS_F32, 0.1, &r) : NULL;
        void *h = malloc(nh * tsize(c->ht)), *y1 = malloc(ny * tsize(c->yt)), *y2 = malloc(ny * tsize(c->yt));
        ws_err e = { "" };
        ws_conv *c1 = ws_conv_new(&d1, w1, b1, 1, &e), *c2 = ws_conv_new(&d2, w2, b2, 1, &e);
        ws_conv_pair *p = ws_conv_pair_new(&d1, w1, b1, &d2, w2, b2, 2, &e);
        cr_assert(c1 && c2 && p, "%s: %s", c->name, e.msg);
        ws_conv_args a1 = { .n = c->n, .t_in = c->t, .x = x, .y = h };
        const long long abs = (long long)c->c_out * c->t; /* the residual item by item */
        ws_conv_args a2 = { .n = c->n, .t_in = t_mid, .x = h, .y = y1, .add = c->add ? x : NULL,
                            .add_batch_stride = c->add ? abs : 0 };
        cr_assert_eq(ws_conv_run(c1, &a1, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_conv_run(c2, &a2, &e), 0, "%s", e.msg);
        ws_conv_pair_args pa = { .n = c->n, .t_in = c->t, .x = x, .add = c->add ? x : NULL,
                                 .add_batch_stride = c->add ? abs : 0, .y = y2 };
        cr_assert_eq(ws_conv_pair_run(p, &pa, &e), 0, "%s: %s", c->name, e.msg);
        cr_assert_eq(memcmp(y1, y2, ny * tsize(c->yt)), 0, "%s: the pair differs from its two calls", c->name);
        ws_conv_free(c1), ws_conv_free(c2), ws_conv_pair_free(p);
        free(x), free(w1), free(b1), free(w2), free(b2), free(h), free(y1), free(y2);
    }
}

Test(conv_pair, bad_pairs_and_calls_are_refused)
{
    ws_conv_desc d1, d2;
    descs(&pcases[0], &d1, &d2);
    ws_err e = { "" };
    cr_assert_eq(ws_conv_pair_check(&d1, &d2, &e), 0, "%s", e.msg);
    ws_conv_desc b = d2;
    b.c_in = 256;
    cr_assert_eq(ws_conv_pair_check(&d1, &b, &e), -1);
    cr_assert(strstr(e.msg, "d2.c_in 256") && strstr(e.msg, "d1.c_out 512"), "%s", e.msg);
    b = d2, b.x_layout = WS_NLC;
    cr_assert_eq(ws_conv_pair_check(&d1, &b, &e), -1);
    cr_assert(strstr(e.msg, "x_layout"), "%s", e.msg);
    b = d2, b.x_type = WS_F32;
    cr_assert_eq(ws_conv_pair_check(&d1, &b, &e), -1);
    cr_assert(strstr(e.msg, "x_type"), "%s", e.msg);
    b = d1, b.op = WS_CONV_BWD, b.pre = WS_ACT_NONE;
    cr_assert_eq(ws_conv_pair_check(&b, &d2, &e), -1);
    cr_assert(strstr(e.msg, "d1") && strstr(e.msg, "FWD"), "%s", e.msg);
    b = d2, b.groups = 3;
    cr_assert_eq(ws_conv_pair_check(&d1, &b, &e), -1);
    cr_assert(strstr(e.msg, "d2: ") && strstr(e.msg, "groups"), "%s", e.msg);
    cr_assert_null(ws_conv_pair_new(&d1, NULL, NULL, &b, NULL, NULL, 1, &e));

    /* calls: each half's arguments checked, named by its conv */
    ws_conv_pair *p = ws_conv_pair_new(&d1, NULL, NULL, &d2, NULL, NULL, 1, &e);
    cr_assert_not_null(p, "%s", e.msg);
    uint16_t x[512 * 32], y[512 * 32];
    ws_conv_pair_args a = { .n = 1, .t_in = 32, .x = x, .y = y };
    cr_assert_eq(ws_conv_pair_run(p, &a, &e), -1);
    cr_assert(strstr(e.msg, "conv 1") && strstr(e.msg, "w is NULL"), "%s", e.msg);
    float *w1 = calloc(512 * 512 * 3, sizeof *w1), *w2 = calloc(512 * 512, sizeof *w2);
    cr_assert(w1 && w2);
    a.w1 = w1;
    cr_assert_eq(ws_conv_pair_run(p, &a, &e), -1);
    cr_assert(strstr(e.msg, "conv 2") && strstr(e.msg, "w is NULL"), "%s", e.msg);
    a.w2 = w2, a.y = NULL;
    cr_assert_eq(ws_conv_pair_run(p, &a, &e), -1);
    cr_assert(strstr(e.msg, "conv 2") && strstr(e.msg, "y is NULL"), "%s", e.msg);
    a.y = y, a.t_in = 0;
    cr_assert_eq(ws_conv_pair_run(p, &a, &e), -1);
    cr_assert(strstr(e.msg, "conv 1") && strstr(e.msg, "t_in"), "%s", e.msg);
    a.t_in = 32;
    memset(x, 0, sizeof x);
    cr_assert_eq(ws_conv_pair_run(p, &a, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_conv_pair_run(NULL, &a, &e), -1);
    cr_assert_eq(ws_conv_pair_run(p, NULL, &e), -1);
    cr_assert(strstr(e.msg, "args is NULL"), "%s", e.msg);
    ws_conv_pair_free(p);
    ws_conv_pair_free(NULL);
    free(w1), free(w2);
    /* the GPU pair refuses the same without a device */
    cr_assert_null(ws_gpu_conv_pair_new(NULL, &d1, NULL, NULL, &d2, NULL, NULL, &e));
    cr_assert(strstr(e.msg, "g is NULL"), "%s", e.msg);
    cr_assert_eq(ws_gpu_conv_pair_run(NULL, &a, &e), -1);
    cr_assert_eq(ws_gpu_conv_pair_enqueue(NULL, &a, 0, &e), -1);
    ws_gpu_conv_pair_free(NULL);
}

/* ---- which pairs the fused kernel takes, and its PTX ---- */

Test(gpu_pair_ptx, the_fused_kernel_takes_the_block_and_refuses_others)
{
    for (int i = 0; i < NP; i++) {
        ws_conv_desc d1, d2;
        descs(&pcases[i], &d1, &d2);
        cr_assert(ws_hpair_fits(&d1, &d2, 9, 0), "%s", pcases[i].name);
        cr_assert(!ws_hpair_fits(&d1, &d2, 8, 0) && !ws_hpair_fits(&d1, &d2, 10, 0), "%s", pcases[i].name);
    }
    ws_conv_desc d1, d2, b;
    descs(&pcases[0], &d1, &d2);
    b = d2, b.k = 3, b.pad_l = b.pad_r = 1; /* the second conv is not pointwise */
    cr_assert(!ws_hpair_fits(&d1, &b, 9, 0));
    b = d1, b.math = WS_MATH_F32; /* float32 math: FFMA, two calls */
    cr_assert(!ws_hpair_fits(&b, &d2, 9, 0));
    b = d1, b.stride = 2;
    cr_assert(!ws_hpair_fits(&b, &d2, 9, 0));
    b = d1, b.c_out = 576; /* h over 512 channels */
    ws_conv_desc b2 = d2;
    b2.c_in = 576;
    cr_assert(!ws_hpair_fits(&b, &b2, 9, 0));
    b2 = d2, b2.c_out = 520; /* y over 512 */
    cr_assert(!ws_hpair_fits(&d1, &b2, 9, 0));
    b = d1, b.c_in = 504; /* C_in % 16 */
    cr_assert(!ws_hpair_fits(&b, &d2, 9, 0));
    b = d1, b.dilation = 200; /* the halo's rows do not fit shared memory */
    b.pad_l = b.pad_r = 200;
    cr_assert(!ws_hpair_fits(&b, &d2, 9, 0));
    b = d1, b.y_type = WS_F16, b2 = d2, b2.x_type = WS_F16; /* h rounded twice in the chain */
    cr_assert(!ws_hpair_fits(&b, &b2, 9, 0));
    /* the time tile: at least tbmin, the smallest power of two >= T_out, at most 64 */
    ws_hpair_geom q;
    cr_assert_eq(ws_hpair_geom_of(&d1, &d2, 2, WS_HPAIR_BK, &q), 0);
    cr_assert_eq(q.tbmin, 32, "the block's halo of 18 rows: 64 + 2*18 rows a chunk (got tbmin %d)", q.tbmin);
    cr_assert_leq(q.smem, WS_HPAIR_SMEM_MAX);
    cr_assert_eq(ws_hpair_lgtb(&q, 32), 5);
    cr_assert_eq(ws_hpair_lgtb(&q, 7), 5);
    cr_assert_eq(ws_hpair_lgtb(&q, 33), 6);
    cr_assert_eq(ws_hpair_lgtb(&q, 100000), 6);
    cr_assert_eq(q.kt1, 8 * 3 * (64 / WS_HPAIR_BK));
    cr_assert_eq(q.kt2, 512 / WS_HPAIR_BK);
}

Test(gpu_pair_ptx, every_pair_module_assembles_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    for (int i = 0; i < NP; i++)
        for (int v = 0; v < 4; v++) {
            const int cl = 1 + v % 2, bk = v < 2 ? 32 : 64;
            ws_conv_desc d1, d2;
            descs(&pcases[i], &d1, &d2);
            ws_err e = { "" };
            char *text = ws_hpair_emit(&d1, &d2, cl, bk, &e);
            cr_assert_not_null(text, "%s: %s", pcases[i].name, e.msg);
            char *again = ws_hpair_emit(&d1, &d2, cl, bk, &e);
            cr_assert(again && !strcmp(text, again), "%s: emission is not deterministic", pcases[i].name);
            cr_assert_null(strstr(text, "atom."), "%s: atomics", pcases[i].name);
            cr_assert_eq(!!strstr(text, ".reqnctapercluster 2, 1, 1"), cl == 2, "%s", pcases[i].name);
            cr_assert_eq(!!strstr(text, ".multicast::cluster"), cl == 2, "%s", pcases[i].name);
            char path[2048], cmd[4096], log[16384];
            snprintf(path, sizeof path, "%s/hpair_%d_%d_%d.ptx", dir, i, cl, bk);
            FILE *f = fopen(path, "w");
            cr_assert_not_null(f);
            fputs(text, f);
            fclose(f);
            free(text), free(again);
            snprintf(cmd, sizeof cmd, "'%s' -arch=sm_90a -v '%s' -o /dev/null 2>&1", ptxas, path);
            FILE *pp = popen(cmd, "r");
            cr_assert_not_null(pp);
            size_t n = fread(log, 1, sizeof log - 1, pp);
            log[n] = '\0';
            cr_assert_eq(pclose(pp), 0, "ptxas failed on %s:\n%s", pcases[i].name, log);
            cr_assert(!strstr(log, "Potential Performance Loss"), "%s:\n%s", pcases[i].name, log);
            cr_assert(strstr(log, "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"), "%s:\n%s",
                      pcases[i].name, log);
        }
    ws_conv_desc d1, d2;
    descs(&pcases[0], &d1, &d2);
    d2.k = 3;
    ws_err e = { "" };
    cr_assert_null(ws_hpair_emit(&d1, &d2, 2, 32, &e));
    cr_assert(strstr(e.msg, "not a pair"), "%s", e.msg);
}

/* ---- on the GPU ---- */

static ws_gpu *gpu_or_skip(void)
{
    ws_err e = { "" };
    ws_gpu *g = ws_gpu_open(0, &e);
    if (!g && (strstr(e.msg, "no CUDA driver") || strstr(e.msg, "no CUDA device") ||
               strstr(e.msg, "CUDA_ERROR_NO_DEVICE")))
        cr_skip_test("no CUDA driver/device: %s", e.msg);
    cr_assert_not_null(g, "ws_gpu_open: %s", e.msg);
    return g;
}

static uint64_t up(ws_gpu *g, const void *h, size_t bytes)
{
    uint64_t p = 0;
    ws_err e = { "" };
    cr_assert_eq(ws_gpu_alloc(g, bytes, &p, &e), 0, "%s", e.msg);
    if (h)
        cr_assert_eq(ws_gpu_upload(g, p, h, bytes, &e), 0, "%s", e.msg);
    return p;
}

static void *P(uint64_t p) { return (void *)(uintptr_t)p; }

Test(gpu_pair, fused_matches_the_cpu_pair_and_the_two_calls, .timeout = 600)
{
    ws_gpu *g = gpu_or_skip();
    if (!ws_gpu_hgemm_available(g)) {
        ws_gpu_close(g);
        cr_skip_test("compute capability below 9.0 or no tensor maps: the pair runs as two calls");
    }
    ws_err e = { "" };
    uint64_t ustream = 0;
    cr_assert_eq(ws_gpu_user_stream_new(g, &ustream, &e), 0, "%s", e.msg);
    for (int i = 0; i < NP; i++) {
        const pcase *c = &pcases[i];
        ws_conv_desc d1, d2;
        descs(c, &d1, &d2);
        ws_rng r = { 777u + (unsigned)i };
        const int t_out = ws_conv_out_len(&d1, c->t);
        const size_t nx = (size_t)c->n * c->c_in * c->t, ny = (size_t)c->n * c->c_out * t_out;
        const size_t yb = ny * tsize(c->yt);
        void *x = random_buf(nx, c->xt, 1.0, &r);
        float *w1 = random_buf((size_t)c->c_mid * c->c_in * c->k, WS_F32, 1.0 / sqrt(c->c_in * c->k), &r);
        float *b1 = random_buf((size_t)c->c_mid, WS_F32, 0.1, &r);
        float *w2 = random_buf((size_t)c->c_out * c->c_mid, WS_F32, 1.0 / sqrt(c->c_mid), &r);
        float *b2 = c->bias2 ? random_buf((size_t)c->c_out, WS_F32, 0.1, &r) : NULL;
        /* the CPU's reference: x and w rounded to the math type as the GPU rounds them */
        ws_conv_desc r1 = d1, r2 = d2;
        const ws_dtype mt = c->math == WS_MATH_BF16 ? WS_BF16 : WS_F16;
        float *w1r = malloc((size_t)c->c_mid * c->c_in * c->k * 4), *w2r = malloc((size_t)c->c_out * c->c_mid * 4);
        for (size_t j = 0; j < (size_t)c->c_mid * c->c_in * c->k; j++)
            w1r[j] = mt == WS_BF16 ? ws_bf16_to_f32(ws_f32_to_bf16(w1[j])) : ws_f16_to_f32(ws_f32_to_f16(w1[j]));
        for (size_t j = 0; j < (size_t)c->c_out * c->c_mid; j++)
            w2r[j] = mt == WS_BF16 ? ws_bf16_to_f32(ws_f32_to_bf16(w2[j])) : ws_f16_to_f32(ws_f32_to_f16(w2[j]));
        void *ycpu = malloc(yb), *yf = malloc(yb), *yf2 = malloc(yb), *yc = malloc(yb), *yp = malloc(yb);
        ws_conv_pair *cp = ws_conv_pair_new(&r1, w1r, b1, &r2, w2r, b2, 0, &e);
        cr_assert_not_null(cp, "%s: %s", c->name, e.msg);
        const long long abs = (long long)c->c_out * c->t; /* the residual item by item */
        ws_conv_pair_args ca = { .n = c->n, .t_in = c->t, .x = x, .add = c->add ? x : NULL,
                                 .add_batch_stride = c->add ? abs : 0, .y = ycpu };
        cr_assert_eq(ws_conv_pair_run(cp, &ca, &e), 0, "%s: %s", c->name, e.msg);

        const uint64_t dx = up(g, x, nx * tsize(c->xt)), dy = up(g, NULL, yb);
        ws_gpu_conv_pair *p = ws_gpu_conv_pair_new(g, &d1, w1, b1, &d2, w2, b2, &e);
        cr_assert_not_null(p, "%s: %s", c->name, e.msg);
        ws_conv_pair_args a = { .n = c->n, .t_in = c->t, .x = P(dx), .add = c->add ? P(dx) : NULL,
                                .add_batch_stride = c->add ? abs : 0, .y = P(dy) };
        /* the two calls' h buffer made for one item, then grown by the calls below */
        {
            ws_conv_pair_args one = a;
            one.n = 1;
            ws_gpu_conv_pair_fuse(p, -1);
            cr_assert_eq(ws_gpu_conv_pair_run(p, &one, &e), 0, "%s (one item): %s", c->name, e.msg);
            ws_gpu_conv_pair_fuse(p, 0);
        }
        /* by default fused where h has at least WS_HPAIR_MIN_MID channels; then always */
        cr_assert_eq(ws_gpu_conv_pair_run(p, &a, &e), 0, "%s: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_conv_pair_fused_calls(p), c->c_mid >= WS_HPAIR_MIN_MID, "%s", c->name);
        ws_gpu_conv_pair_fuse(p, 1);
        /* every variant (clusters of 2 and 1, weight stages of 32 and 64 channels): the same
         * products in the same order, so the same bits, run after run */
        static const int VAR[4][2] = { { 2, 32 }, { 1, 32 }, { 2, 64 }, { 1, 64 } };
        double rl = 0;
        for (int v = 0; v < 4; v++) {
            const int cl = VAR[v][0], bk = VAR[v][1];
            cr_assert_eq(ws_gpu_conv_pair_variant(p, cl, bk, &e), 0, "%s: %s", c->name, e.msg);
            void *out = v ? yf2 : yf;
            for (int rep = 0; rep < 2; rep++) {
                memset(yp, 0xff, yb); /* NaN in every type */
                cr_assert_eq(ws_gpu_upload(g, dy, yp, yb, &e), 0, "%s", e.msg);
                const unsigned long before = ws_gpu_conv_pair_fused_calls(p);
                cr_assert_eq(ws_gpu_conv_pair_run(p, &a, &e), 0, "%s (cluster %d, bk %d): %s", c->name, cl, bk, e.msg);
                cr_assert_eq(ws_gpu_conv_pair_fused_calls(p), before + 1, "%s: not fused", c->name);
                if (rep) {
                    cr_assert_eq(ws_gpu_download(g, yp, dy, yb, &e), 0, "%s", e.msg);
                    cr_assert_eq(memcmp(yp, out, yb), 0, "%s (cluster %d, bk %d): two runs differ", c->name, cl, bk);
                } else {
                    cr_assert_eq(ws_gpu_download(g, out, dy, yb, &e), 0, "%s", e.msg);
                }
            }
            if (!v)
                rl = pair_rel_l2(c->name, out, ycpu, c->yt, ny);
            else
                cr_assert_eq(memcmp(yf, yf2, yb), 0, "%s: cluster %d, bk %d differs from cluster 2, bk 32", c->name,
                             cl, bk);
        }
        cr_assert_eq(ws_gpu_conv_pair_variant(p, WS_HPAIR_CL, WS_HPAIR_BK, &e), 0, "%s", e.msg);
        /* y one element into its buffer: the last epilogue's element stores where its vector
         * stores need y aligned to 4 elements; the same bits */
        {
            const uint64_t dyb = up(g, NULL, yb + tsize(c->yt)), dy1 = dyb + tsize(c->yt);
            ws_conv_pair_args a1 = a;
            a1.y = P(dy1);
            memset(yp, 0xff, yb);
            cr_assert_eq(ws_gpu_upload(g, dy1, yp, yb, &e), 0, "%s", e.msg);
            const unsigned long before = ws_gpu_conv_pair_fused_calls(p);
            cr_assert_eq(ws_gpu_conv_pair_run(p, &a1, &e), 0, "%s (y misaligned): %s", c->name, e.msg);
            cr_assert_eq(ws_gpu_conv_pair_fused_calls(p), before + 1, "%s (y misaligned): not fused", c->name);
            cr_assert_eq(ws_gpu_download(g, yp, dy1, yb, &e), 0, "%s", e.msg);
            cr_assert_eq(memcmp(yp, yf, yb), 0, "%s: y one element off alignment gives other bits", c->name);
            ws_gpu_release(g, dyb);
        }
        /* the GPU's own two calls */
        ws_gpu_conv_pair_fuse(p, -1);
        memset(yc, 0xff, yb);
        cr_assert_eq(ws_gpu_upload(g, dy, yc, yb, &e), 0, "%s", e.msg);
        const unsigned long fused = ws_gpu_conv_pair_fused_calls(p);
        cr_assert_eq(ws_gpu_conv_pair_run(p, &a, &e), 0, "%s (two calls): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_conv_pair_fused_calls(p), fused);
        cr_assert_eq(ws_gpu_download(g, yc, dy, yb, &e), 0, "%s", e.msg);
        const double rc = pair_rel_l2(c->name, yc, ycpu, c->yt, ny), rf = pair_rel_l2(c->name, yf, yc, c->yt, ny);
        /* the math type's rounding of x (float32 storage) and of h; 16-bit y's own */
        const double bound = c->xt == WS_F32 ? 1e-2 : 4e-3;
        if (getenv("WS_TEST_VERBOSE"))
            fprintf(stderr, "gpu_pair %-16s fused vs cpu %.3g, two calls vs cpu %.3g, fused vs two calls %.3g\n",
                    c->name, rl, rc, rf);
        cr_assert_leq(rl, bound, "%s: fused rel L2 %.3g against the CPU over %.3g", c->name, rl, bound);
        cr_assert_leq(rf, bound, "%s: fused rel L2 %.3g against the two calls over %.3g", c->name, rf, bound);

        /* weights per call on the caller's stream: the plan's bits */
        if (i == 0) {
            const uint64_t pw1 = up(g, w1, (size_t)c->c_mid * c->c_in * c->k * 4);
            /* b1 given 4 bytes into a buffer: a per-call bias need not be 8-byte aligned */
            float *b1s = calloc((size_t)c->c_mid + 1, sizeof *b1s);
            cr_assert_not_null(b1s);
            memcpy(b1s + 1, b1, (size_t)c->c_mid * 4);
            const uint64_t pb1a = up(g, b1s, ((size_t)c->c_mid + 1) * 4), pb1 = pb1a + 4;
            free(b1s);
            const uint64_t pw2 = up(g, w2, (size_t)c->c_out * c->c_mid * 4), pb2 = up(g, b2, (size_t)c->c_out * 4);
            ws_gpu_conv_pair *q = ws_gpu_conv_pair_new(g, &d1, NULL, NULL, &d2, NULL, NULL, &e);
            cr_assert_not_null(q, "%s", e.msg);
            ws_conv_pair_args qa = a;
            cr_assert_eq(ws_gpu_conv_pair_enqueue(q, &qa, ustream, &e), -1);
            cr_assert(strstr(e.msg, "w is NULL"), "%s", e.msg);
            qa.w1 = P(pw1), qa.b1 = P(pb1), qa.w2 = P(pw2), qa.b2 = P(pb2);
            memset(yp, 0xff, yb);
            cr_assert_eq(ws_gpu_upload(g, dy, yp, yb, &e), 0, "%s", e.msg);
            cr_assert_eq(ws_gpu_conv_pair_enqueue(q, &qa, ustream, &e), 0, "%s", e.msg);
            cr_assert_eq(ws_gpu_user_stream_wait(g, ustream, &e), 0, "%s", e.msg);
            cr_assert_eq(ws_gpu_conv_pair_fused_calls(q), 1);
            cr_assert_eq(ws_gpu_download(g, yp, dy, yb, &e), 0, "%s", e.msg);
            cr_assert_eq(memcmp(yp, yf, yb), 0, "%s: weights per call differ from the plan's", c->name);
            ws_gpu_conv_pair_free(q);
            ws_gpu_release(g, pw1), ws_gpu_release(g, pb1a), ws_gpu_release(g, pw2), ws_gpu_release(g, pb2);
        }
        /* NLC x 2 bytes off 16-byte alignment: the two calls (the fused kernel reads x 16 bytes
         * at a time), on whatever kernel each conv takes for it (the direct one where the GEMM
         * needs aligned x: float32 products of w as given), within the math's bound of the CPU */
        if (c->lay == WS_NLC && c->xt != WS_F32) {
            const size_t xb = nx * tsize(c->xt);
            uint8_t *xo = malloc(xb + 2);
            cr_assert_not_null(xo);
            memset(xo, 0, 2);
            memcpy(xo + 2, x, xb);
            const uint64_t dxo = up(g, xo, xb + 2);
            free(xo);
            ws_conv_pair_args ma = a;
            ma.x = P(dxo + 2);
            if (c->add)
                ma.add = ma.x;
            const unsigned long f = ws_gpu_conv_pair_fused_calls(p);
            ws_gpu_conv_pair_fuse(p, 1);
            cr_assert_eq(ws_gpu_conv_pair_run(p, &ma, &e), 0, "%s (misaligned x): %s", c->name, e.msg);
            cr_assert_eq(ws_gpu_conv_pair_fused_calls(p), f, "%s: a misaligned NLC x fused", c->name);
            cr_assert_eq(ws_gpu_download(g, yp, dy, yb, &e), 0, "%s", e.msg);
            const double rm = pair_rel_l2(c->name, yp, ycpu, c->yt, ny);
            cr_assert_leq(rm, 4e-3, "%s: misaligned x, rel L2 %.3g against the CPU", c->name, rm);
            ws_gpu_release(g, dxo);
        }
        /* y over x (in place, where the shapes allow): the two calls, the same values */
        if (c->add && c->xt == c->yt && c->c_in == c->c_out) {
            const uint64_t dxy = up(g, x, nx * tsize(c->xt));
            ws_conv_pair_args ia = a;
            ia.x = ia.add = ia.y = P(dxy);
            ws_gpu_conv_pair_fuse(p, 1);
            const unsigned long f = ws_gpu_conv_pair_fused_calls(p);
            cr_assert_eq(ws_gpu_conv_pair_run(p, &ia, &e), 0, "%s (in place): %s", c->name, e.msg);
            cr_assert_eq(ws_gpu_conv_pair_fused_calls(p), f, "%s: fused in place", c->name);
            cr_assert_eq(ws_gpu_download(g, yp, dxy, yb, &e), 0, "%s", e.msg);
            cr_assert_eq(memcmp(yp, yc, yb), 0, "%s: in place differs from the two calls", c->name);
            ws_gpu_release(g, dxy);
        }
        ws_gpu_conv_pair_free(p);
        ws_conv_pair_free(cp);
        ws_gpu_release(g, dx), ws_gpu_release(g, dy);
        free(x), free(w1), free(b1), free(w2), free(b2), free(w1r), free(w2r);
        free(ycpu), free(yf), free(yf2), free(yc), free(yp);
    }
    ws_gpu_user_stream_free(g, ustream);
    ws_gpu_close(g);
}

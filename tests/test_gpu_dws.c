/* test_gpu_dws.c - the depthwise causal kernels with packed sequences and carried states
 * (src/cuda/ptx/ptx_dws.c, src/cuda/gpu_dws.c) on a GPU; every test skips, saying so, without a
 * driver or a device.
 *
 * Each row of `cases` (NLC, NCL and mixed layouts, f32 / f16 / bf16 x and y, K 2, 4, 8, 20,
 * dilation 1 and 2, act none, silu, gelu, pre relu on FWD, bias, add, packed sequences with
 * padding, initial states, T shorter than K-1) runs through ws_dws_load / ws_dws_enqueue
 * against a float64 reference written here from the semantics of ptx_dws.h:
 *   x_at(n,c,t,p) = p >= 0: x[n,c,p] unless seq_idx[n][p] != seq_idx[n][t]; p < 0:
 *                   initial_states[n][c][p + K-1] (0 when not given)
 *   y = seq_idx[n][t] < 0 ? 0 : act(b + sum_k w[c,k] pre(x_at(t + D*k - P_L))) + add
 *   final_states[n][c][j] = the input at T - (K-1) + j (a state where that is < 0)
 *   gz = dy act'(z) (0 at padding); dx, dinitial_states, dw, db its adjoints.
 * FWD (fwd_*): y and final_states against the reference, padding outputs exactly +0, every
 * output written (outputs poisoned with NaN before each run), the same bits twice; without
 * seq_idx a run in chunks (lengths 2, 1, 5, 3, 9, ..., some shorter than K-1; each chunk's
 * initial_states the previous chunk's final_states, in place in one buffer) gives the whole
 * run's y and final_states bit for bit; with seq_idx each sequence run alone gives the packed
 * run's bits; with neither, the plan's own kernels (ws_gpu_conv: the depthwise kernels where
 * the call fits them, and the direct ones) give the same bits.
 * BWD (bwd_*): dx, dinitial_states (rows without seq_idx), dw and db against the reference,
 * dx exactly +0 at padding, the same bits twice and for a run asking dw alone.
 * Refusals (refuses_*): seq_idx with states, states with dilation 2, t_out other than t_in,
 * BWD without scratch, a descriptor other than the module's.
 *
 * Tolerances (the reference in float64 from the same stored inputs; per element, with M the
 * sum of the magnitudes that enter the value):
 *   y: |err| <= 1e-5 M + 2e-6, M = (|b| + sum_k |w pre(x)|) * 1.2 + |add| (float32 sums of K
 *      products, GELU / SILU approximations of ~1e-6; act' <= 1.2);
 *   gz-based sums (dx, dinitial_states, dw, db): |err| <= 2e-5 M + 1e-6 with M = sum over
 *      the terms of |dy| (1 + |b| + sum_k |w x|) times |w| (dx, dinit), |x| (dw) or 1 (db):
 *      act' approximations (~1e-6) and float32 sums of up to N*T terms;
 *   f16 / bf16 stores (y, dx, dinitial_states): plus 1 ulp of the type at the value.
 * final_states is a copy: its bits must equal the inputs'.
 * Set WS_TEST_VERBOSE=1 to print the largest error of each output relative to its bound.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ws_conv.h>

#include "common.h"
#include "cuda/driver.h"
#include "cuda/gpu_conv_internal.h"
#include "cuda/gpu_dws.h"
#include "cuda/gpu_runtime.h"
#include "helpers.h"

/* ---- the device: driver, primary context, one stream ---- */

typedef struct {
    ws_gpu *wg;  /* the device through the runtime (ws_gpu_open) */
    ws_cu cu;    /* its driver table */
    wscu_stream st;
    int major, minor;
} gdev;

static gdev *gdev_or_skip(void)
{
    gdev *g = calloc(1, sizeof *g);
    cr_assert_not_null(g);
    ws_err e = {""};
    g->wg = ws_gpu_open(0, &e);
    if (!g->wg) {
        free(g);
        if (strstr(e.msg, "no CUDA driver") || strstr(e.msg, "no CUDA device") ||
            strstr(e.msg, "CUDA_ERROR_NO_DEVICE"))
            cr_skip_test("no CUDA driver/device: %s", e.msg);
        cr_assert_fail("ws_gpu_open: %s", e.msg);
    }
    g->cu = g->wg->cu;
    g->st = g->wg->stream;
    g->major = g->wg->cc_major, g->minor = g->wg->cc_minor;
    cr_assert_eq(ws_gpu_current(g->wg, &e), 0, "%s", e.msg);
    return g;
}

static void gdev_close(gdev *g)
{
    ws_gpu_close(g->wg);
    free(g);
}

static uint64_t dalloc(gdev *g, size_t bytes)
{
    wscu_devptr p = 0;
    cr_assert_eq(g->cu.MemAlloc(&p, bytes ? bytes : 1), 0, "cuMemAlloc(%zu)", bytes);
    return p;
}

static void dfree(gdev *g, uint64_t p)
{
    if (p)
        g->cu.MemFree(p);
}

static void up(gdev *g, uint64_t dst, const void *src, size_t bytes)
{
    cr_assert_eq(g->cu.MemcpyHtoDAsync(dst, src, bytes, g->st), 0);
    cr_assert_eq(g->cu.StreamSynchronize(g->st), 0);
}

static void down(gdev *g, void *dst, uint64_t src, size_t bytes)
{
    cr_assert_eq(g->cu.MemcpyDtoHAsync(dst, src, bytes, g->st), 0);
    cr_assert_eq(g->cu.StreamSynchronize(g->st), 0);
}

/* a device buffer holding host bytes */
static uint64_t dcopy(gdev *g, const void *src, size_t bytes)
{
    const uint64_t p = dalloc(g, bytes);
    up(g, p, src, bytes);
    return p;
}

/* bytes of 0xff (NaN in f32, f16 and bf16) into p */
static void poison(gdev *g, uint64_t p, size_t bytes)
{
    void *h = malloc(bytes);
    cr_assert_not_null(h);
    memset(h, 0xff, bytes);
    up(g, p, h, bytes);
    free(h);
}

static void *P(uint64_t p)
{
    return (void *)(uintptr_t)p;
}

/* ---- the cases ---- */

typedef struct {
    const char *name;
    int n, c, k, dil, t;
    ws_layout xl, yl;
    ws_dtype xt, yt;
    ws_act pre, act;
    int bias, add; /* add: per item, batch stride C*T */
    int seq;       /* packed sequences with padding */
    int init;      /* initial_states given */
} dcase;

#define NLC WS_NLC
#define NCL WS_NCL
#define F32 WS_F32
#define F16 WS_F16
#define BF16 WS_BF16
#define NONE WS_ACT_NONE
#define RELU WS_ACT_RELU
#define SILU WS_ACT_SILU
#define GELU WS_ACT_GELU
static const dcase cases[] = {
    {"nlc_f32_k4_silu_seq", 2, 24, 4, 1, 40, NLC, NLC, F32, F32, NONE, SILU, 1, 0, 1, 0},
    {"ncl_bf16_k4_silu_states", 2, 20, 4, 1, 37, NCL, NCL, BF16, BF16, NONE, SILU, 1, 0, 0, 1},
    {"nlc_f16_k2_none_states_add", 3, 16, 2, 1, 33, NLC, NLC, F16, F16, NONE, NONE, 0, 1, 0, 1},
    {"ncl_f32_k8_d2_gelu_seq", 2, 12, 8, 2, 50, NCL, NCL, F32, F32, NONE, GELU, 1, 0, 1, 0},
    {"nlc_bf16_k8_gelu_states_pre_relu_add", 2, 40, 8, 1, 45, NLC, NLC, BF16, BF16, RELU, GELU, 1, 1, 0, 1},
    {"ncl_f16_k2_d2_silu_seq_pre_relu_add", 2, 9, 2, 2, 31, NCL, NCL, F16, F16, RELU, SILU, 1, 1, 1, 0},
    {"nlc_f32_k2_d2_none_seq", 1, 33, 2, 2, 29, NLC, NLC, F32, F32, NONE, NONE, 0, 0, 1, 0},
    {"ncl_f32_k4_gelu_no_states_t64", 2, 16, 4, 1, 64, NCL, NCL, F32, F32, NONE, GELU, 1, 0, 0, 0},
    {"nlc_bf16_k4_silu_no_states_c64", 2, 64, 4, 1, 48, NLC, NLC, BF16, BF16, NONE, SILU, 1, 0, 0, 0},
    {"ncl_x_nlc_y_bf16_f32_k4_states", 2, 16, 4, 1, 26, NCL, NLC, BF16, F32, NONE, SILU, 1, 1, 0, 1},
    {"nlc_x_ncl_y_f32_f16_k4_d2_seq", 2, 10, 4, 2, 30, NLC, NCL, F32, F16, NONE, GELU, 1, 0, 1, 0},
    {"nlc_f32_k20_looped_states", 1, 8, 20, 1, 64, NLC, NLC, F32, F32, NONE, SILU, 1, 0, 0, 1},
    {"nlc_f32_k8_t3_states", 2, 8, 8, 1, 3, NLC, NLC, F32, F32, NONE, SILU, 1, 0, 0, 1},
    {"ncl_f16_k4_t2_no_states", 2, 8, 4, 1, 2, NCL, NCL, F16, F16, NONE, GELU, 1, 0, 0, 0},
};
#undef NLC
#undef NCL
#undef F32
#undef F16
#undef BF16
#undef NONE
#undef RELU
#undef SILU
#undef GELU
enum { N_CASES = sizeof cases / sizeof cases[0] };

static ws_conv_desc desc_of(const dcase *c, ws_conv_op op)
{
    ws_conv_desc d = {.op = op, .c_in = c->c, .c_out = c->c, .groups = c->c, .k = c->k, .stride = 1,
                      .dilation = c->dil, .pad_l = c->dil * (c->k - 1), .pad_r = 0,
                      .x_layout = c->xl, .y_layout = c->yl, .x_type = c->xt, .w_type = WS_F32,
                      .y_type = c->yt, .math = WS_MATH_F32,
                      .pre = op == WS_CONV_FWD ? c->pre : WS_ACT_NONE, .act = c->act};
    return d;
}

static int verbose(void)
{
    const char *v = getenv("WS_TEST_VERBOSE");
    return v && *v && strcmp(v, "0");
}

/* ---- host data ---- */

static size_t tsize(ws_dtype t)
{
    return t == WS_F32 ? 4 : 2;
}

static double get(const void *p, ws_dtype t, size_t i)
{
    if (t == WS_F32)
        return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    return t == WS_F16 ? ws_f16_to_f32(h) : ws_bf16_to_f32(h);
}

/* n values uniform in [-1, 1) stored in t */
static void *random_buf(size_t n, ws_dtype t, ws_rng *r)
{
    void *p = malloc(n * tsize(t) + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        const float v = (float)(ws_rng_uniform(r) * 2.0 - 1.0);
        if (t == WS_F32)
            ((float *)p)[i] = v;
        else
            ((uint16_t *)p)[i] = t == WS_F16 ? ws_f32_to_f16(v) : ws_f32_to_bf16(v);
    }
    return p;
}

/* one unit in the last place of t at |v| (f16: 10 stored bits, bf16: 7) */
static double ulp_of(ws_dtype t, double v)
{
    int e;
    frexp(fabs(v), &e);
    if (t == WS_F16)
        return ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    return ldexp(1.0, e - 1 - 7);
}

/* element (n, c, t) of an [N][C][T] tensor in layout l */
static size_t at(ws_layout l, int n, int c, int t, int C, int T)
{
    return l == WS_NCL ? ((size_t)n * C + c) * T + t : ((size_t)n * T + t) * C + c;
}

/* items n0 .. n0+nn-1, times t0 .. t0+L-1 of src [N][C][T] (layout l, es-byte elements) as a
 * new [nn][C][L] tensor */
static void *sub(const void *src, size_t es, ws_layout l, int C, int T, int n0, int nn, int t0, int L)
{
    char *d = malloc((size_t)nn * C * L * es + 1);
    cr_assert_not_null(d);
    for (int n = 0; n < nn; n++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < L; t++)
                memcpy(d + at(l, n, c, t, C, L) * es, (const char *)src + at(l, n0 + n, c, t0 + t, C, T) * es,
                       es);
    return d;
}

/* the inverse: part [nn][C][L] into items n0.., times t0.. of dst [N][C][T] */
static void put(void *dst, const void *part, size_t es, ws_layout l, int C, int T, int n0, int nn, int t0,
                int L)
{
    for (int n = 0; n < nn; n++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < L; t++)
                memcpy((char *)dst + at(l, n0 + n, c, t0 + t, C, T) * es,
                       (const char *)part + at(l, n, c, t, C, L) * es, es);
}

/* seq_idx [N][T]: runs of 1 to 9 positions, about one in four padding (-1), ids increasing;
 * item 0 also has a run of one and ends in padding */
static int32_t *make_seq(int N, int T, ws_rng *r)
{
    int32_t *s = malloc((size_t)N * T * sizeof *s);
    cr_assert_not_null(s);
    for (int n = 0; n < N; n++) {
        int id = 0, t = 0, run = 0;
        while (t < T) {
            int len = 1 + (int)(ws_rng_next(r) % 9);
            int padding = run > 0 && ws_rng_next(r) % 4 == 0;
            if (n == 0 && run == 1)
                len = 1, padding = 0;
            if (n == 0 && t + len >= T - 2 && T > 6)
                len = T - t, padding = 1;
            for (int i = 0; i < len && t < T; i++)
                s[(size_t)n * T + t++] = padding ? -1 : id;
            if (!padding)
                id++;
            run++;
        }
    }
    return s;
}

/* ---- the float64 reference ---- */

typedef struct {
    const dcase *c;
    int N, C, K, D, P, T;
    const void *x, *init, *add;
    const float *w, *b;
    const int32_t *seq;
} ref;

static double act_of(ws_act a, double v)
{
    switch (a) {
    case WS_ACT_RELU: return v > 0 ? v : 0;
    case WS_ACT_GELU: return 0.5 * v * erfc(-v / sqrt(2.0));
    case WS_ACT_SILU: return v / (1.0 + exp(-v));
    default: return v;
    }
}

static double act_grad(ws_act a, double z)
{
    switch (a) {
    case WS_ACT_RELU: return z > 0 ? 1 : 0;
    case WS_ACT_GELU:
        return 0.5 * erfc(-z / sqrt(2.0)) + z * exp(-0.5 * z * z) / sqrt(2.0 * 3.14159265358979323846);
    case WS_ACT_SILU: {
        const double s = 1.0 / (1.0 + exp(-z));
        return s * (1.0 + z * (1.0 - s));
    }
    default: return 1;
    }
}

/* x_at(n, c, t, p) (ptx_dws.h) */
static double x_at(const ref *r, int n, int c, int t, int p)
{
    if (p >= 0) {
        if (r->seq && r->seq[(size_t)n * r->T + p] != r->seq[(size_t)n * r->T + t])
            return 0;
        return get(r->x, r->c->xt, at(r->c->xl, n, c, p, r->C, r->T));
    }
    if (r->init && p + r->K - 1 >= 0)
        return get(r->init, r->c->xt, ((size_t)n * r->C + c) * (r->K - 1) + (size_t)(p + r->K - 1));
    return 0;
}

static int padding(const ref *r, int n, int t)
{
    return r->seq && r->seq[(size_t)n * r->T + t] < 0;
}

/* z = b + sum_k w pre(x_at) and its magnitude |b| + sum |w pre(x_at)| */
static double z_of(const ref *r, int n, int c, int t, ws_act pre, double *mag)
{
    double z = r->b ? r->b[c] : 0, m = fabs(z);
    for (int k = 0; k < r->K; k++) {
        const double v = act_of(pre, x_at(r, n, c, t, t + r->D * k - r->P)) * r->w[c * r->K + k];
        z += v;
        m += fabs(v);
    }
    *mag = m;
    return z;
}

/* ---- comparisons ---- */

/* got (stored in t) against want within 1e-5|2e-5 * mag + abs0 (+ 1 ulp of t for 16 bits);
 * what names the output; returns the worst err / bound */
static double check(const char *name, const char *what, const void *got, ws_dtype t, const double *want,
                    const double *mag, size_t count, double rel, double abs0)
{
    double worst = 0;
    for (size_t i = 0; i < count; i++) {
        const double g = get(got, t, i);
        cr_assert(!isnan(g), "%s: %s[%zu] is NaN (not written?)", name, what, i);
        double lim = rel * mag[i] + abs0;
        if (t != WS_F32)
            lim += ulp_of(t, fmax(fabs(g), fabs(want[i])));
        const double err = fabs(g - want[i]);
        cr_assert(err <= lim, "%s: %s[%zu] GPU %.9g, reference %.9g (bound %.3g)", name, what, i, g,
                  want[i], lim);
        worst = fmax(worst, err / lim);
    }
    if (verbose())
        fprintf(stderr, "gpu_dws %-40s %-6s worst err / bound %.3f\n", name, what, worst);
    return worst;
}

/* ---- runs ---- */

typedef struct {
    gdev *g;
    ws_dws *m;
    ws_conv_desc d;
    uint64_t w, b; /* float32 weights and bias (or 0) on the device */
} kern;

static kern kern_load(gdev *g, const dcase *c, ws_conv_op op, const float *w, const float *b)
{
    kern k = {.g = g, .d = desc_of(c, op)};
    ws_err e = {""};
    cr_assert(ws_dws_fits(&k.d), "%s: not a depthwise causal descriptor", c->name);
    k.m = ws_dws_load(g->wg, &k.d, &e);
    cr_assert_not_null(k.m, "%s: ws_dws_load: %s", c->name, e.msg);
    k.w = dcopy(g, w, (size_t)c->c * c->k * sizeof(float));
    k.b = b ? dcopy(g, b, (size_t)c->c * sizeof(float)) : 0;
    return k;
}

static void kern_free(kern *k)
{
    ws_dws_free(k->m);
    dfree(k->g, k->w);
    dfree(k->g, k->b);
}

/* one call enqueued and waited for; 0 or -1 with e */
static int run(kern *k, const ws_conv_args *a, uint64_t scratch, ws_err *e)
{
    if (ws_dws_enqueue(k->m, &k->g->cu, &k->d, a, a->t_in, k->w, k->b, scratch, k->g->st, e))
        return -1;
    cr_assert_eq(k->g->cu.StreamSynchronize(k->g->st), 0, "the kernels failed");
    return 0;
}

/* the host inputs of a case */
typedef struct {
    void *x, *init, *add;
    float *w, *b;
    int32_t *seq;
    size_t nx, ns, ny; /* elements of x, of a state tensor, of y */
} inputs;

static inputs inputs_of(const dcase *c, uint64_t seed)
{
    ws_rng r = {seed};
    inputs in = {0};
    in.nx = in.ny = (size_t)c->n * c->c * c->t;
    in.ns = (size_t)c->n * c->c * (c->k - 1);
    in.x = random_buf(in.nx, c->xt, &r);
    in.w = random_buf((size_t)c->c * c->k, WS_F32, &r);
    in.b = c->bias ? random_buf((size_t)c->c, WS_F32, &r) : NULL;
    in.add = c->add ? random_buf(in.ny, c->yt, &r) : NULL;
    in.init = c->init ? random_buf(in.ns, c->xt, &r) : NULL;
    in.seq = c->seq ? make_seq(c->n, c->t, &r) : NULL;
    return in;
}

static void inputs_free(inputs *in)
{
    free(in->x), free(in->w), free(in->b), free(in->add), free(in->init), free(in->seq);
}

/* the forward of one case (fwd_* tests) */
static void fwd_case(gdev *g, const dcase *c)
{
    const int N = c->n, C = c->c, K = c->k, T = c->t, S = K - 1;
    inputs in = inputs_of(c, 0xd5f00000u + (uint64_t)C * 131 + (uint64_t)K * 7 + (uint64_t)T);
    const size_t xs = tsize(c->xt), ys = tsize(c->yt);
    const size_t xb = in.nx * xs, yb = in.ny * ys, sb = in.ns * xs;
    kern k = kern_load(g, c, WS_CONV_FWD, in.w, in.b);
    const ref r = {.c = c, .N = N, .C = C, .K = K, .D = c->dil, .P = c->dil * S, .T = T, .x = in.x,
                   .init = in.init, .add = in.add, .w = in.w, .b = in.b, .seq = in.seq};

    /* the reference */
    double *yref = malloc(in.ny * sizeof *yref), *ymag = malloc(in.ny * sizeof *ymag);
    cr_assert(yref && ymag);
    for (int n = 0; n < N; n++)
        for (int ch = 0; ch < C; ch++)
            for (int t = 0; t < T; t++) {
                const size_t i = at(c->yl, n, ch, t, C, T);
                if (padding(&r, n, t)) {
                    yref[i] = ymag[i] = 0;
                    continue;
                }
                double m;
                const double z = z_of(&r, n, ch, t, c->pre, &m);
                const double av = in.add ? get(in.add, c->yt, i) : 0;
                yref[i] = act_of(c->act, z) + av;
                ymag[i] = 1.2 * m + fabs(av);
            }

    /* the whole call, twice */
    uint64_t dx = dcopy(g, in.x, xb), dy = dalloc(g, yb), dseq = 0, dinit = 0, dfin = 0, dadd = 0;
    if (in.seq)
        dseq = dcopy(g, in.seq, (size_t)N * T * sizeof(int32_t));
    if (in.init)
        dinit = dcopy(g, in.init, sb);
    if (in.add)
        dadd = dcopy(g, in.add, yb);
    const int want_final = !in.seq && S > 0 && c->dil == 1; /* states need dilation 1 */
    if (want_final)
        dfin = dalloc(g, sb);
    ws_conv_args a = {.n = N, .t_in = T, .x = P(dx), .y = P(dy), .add = P(dadd),
                      .add_batch_stride = (long long)C * T, .seq_idx = P(dseq),
                      .initial_states = P(dinit), .final_states = P(dfin)};
    void *y1 = malloc(yb), *y2 = malloc(yb), *f1 = malloc(sb + 1), *f2 = malloc(sb + 1);
    cr_assert(y1 && y2 && f1 && f2);
    ws_err e = {""};
    for (int rep = 0; rep < 2; rep++) {
        poison(g, dy, yb);
        if (want_final)
            poison(g, dfin, sb);
        cr_assert_eq(run(&k, &a, 0, &e), 0, "%s: %s", c->name, e.msg);
        down(g, rep ? y2 : y1, dy, yb);
        if (want_final)
            down(g, rep ? f2 : f1, dfin, sb);
    }
    cr_assert(!memcmp(y1, y2, yb), "%s: two runs, other y bits", c->name);
    cr_assert(!want_final || !memcmp(f1, f2, sb), "%s: two runs, other final_states bits", c->name);
    check(c->name, "y", y1, c->yt, yref, ymag, in.ny, 1e-5, 2e-6);
    for (int n = 0; n < N; n++)
        for (int ch = 0; ch < C; ch++)
            for (int t = 0; t < T; t++)
                if (padding(&r, n, t)) {
                    const size_t i = at(c->yl, n, ch, t, C, T);
                    uint32_t bits = 0;
                    memcpy(&bits, (const char *)y1 + i * ys, ys);
                    cr_assert_eq(bits, 0, "%s: y[%d,%d,%d] at padding is not +0 (bits %x)", c->name, n, ch, t,
                                 bits);
                }
    if (want_final) /* a copy of the last K-1 inputs */
        for (int n = 0; n < N; n++)
            for (int ch = 0; ch < C; ch++)
                for (int j = 0; j < S; j++) {
                    const int q = T - S + j;
                    const size_t o = ((size_t)n * C + ch) * S + (size_t)j;
                    const char *src = q >= 0 ? (const char *)in.x + at(c->xl, n, ch, q, C, T) * xs
                                      : in.init ? (const char *)in.init + (((size_t)n * C + ch) * S + (size_t)(T + j)) * xs
                                                : NULL;
                    const uint32_t zero = 0;
                    cr_assert(!memcmp((const char *)f1 + o * xs, src ? src : (const char *)&zero, xs),
                              "%s: final_states[%d][%d][%d] is not the input at %d", c->name, n, ch, j, q);
                }

    if (want_final) { /* chunks: each chunk's initial_states the last one's final_states, in place */
        static const int lens[] = {2, 1, 5, 3, 9};
        void *ycat = malloc(yb), *fcat = malloc(sb + 1);
        cr_assert(ycat && fcat);
        const uint64_t dstate = dalloc(g, sb);
        if (in.init)
            up(g, dstate, in.init, sb);
        int chunks = 0;
        for (int t0 = 0; t0 < T; chunks++) {
            const int L = lens[chunks % 5] < T - t0 ? lens[chunks % 5] : T - t0;
            void *xc = sub(in.x, xs, c->xl, C, T, 0, N, t0, L);
            void *ac = in.add ? sub(in.add, ys, c->yl, C, T, 0, N, t0, L) : NULL;
            const size_t xcb = (size_t)N * C * L * xs, ycb = (size_t)N * C * L * ys;
            uint64_t dxc = dcopy(g, xc, xcb), dyc = dalloc(g, ycb), dac = ac ? dcopy(g, ac, ycb) : 0;
            poison(g, dyc, ycb);
            ws_conv_args ca = {.n = N, .t_in = L, .x = P(dxc), .y = P(dyc), .add = P(dac),
                               .add_batch_stride = (long long)C * L,
                               .initial_states = t0 > 0 || in.init ? P(dstate) : NULL,
                               .final_states = P(dstate)};
            cr_assert_eq(run(&k, &ca, 0, &e), 0, "%s chunk at %d: %s", c->name, t0, e.msg);
            void *yc = malloc(ycb);
            cr_assert_not_null(yc);
            down(g, yc, dyc, ycb);
            put(ycat, yc, ys, c->yl, C, T, 0, N, t0, L);
            free(yc), free(xc), free(ac);
            dfree(g, dxc), dfree(g, dyc), dfree(g, dac);
            t0 += L;
        }
        for (size_t i = 0; i < in.ny; i++)
            cr_assert(!memcmp((const char *)ycat + i * ys, (const char *)y1 + i * ys, ys),
                      "%s: %d chunks: y[%zu] %.9g, one run %.9g", c->name, chunks, i, get(ycat, c->yt, i),
                      get(y1, c->yt, i));
        down(g, fcat, dstate, sb);
        cr_assert(!memcmp(fcat, f1, sb), "%s: %d chunks, other final_states bits", c->name, chunks);
        dfree(g, dstate);
        free(ycat), free(fcat);
    } else if (in.seq) { /* each sequence alone gives the packed run's bits */
        int runs = 0;
        for (int n = 0; n < N; n++)
            for (int t0 = 0; t0 < T;) {
                int t1 = t0;
                const int32_t id = in.seq[(size_t)n * T + t0];
                while (t1 < T && in.seq[(size_t)n * T + t1] == id)
                    t1++;
                if (id >= 0) {
                    const int L = t1 - t0;
                    void *xc = sub(in.x, xs, c->xl, C, T, n, 1, t0, L);
                    void *ac = in.add ? sub(in.add, ys, c->yl, C, T, n, 1, t0, L) : NULL;
                    const size_t xcb = (size_t)C * L * xs, ycb = (size_t)C * L * ys;
                    uint64_t dxc = dcopy(g, xc, xcb), dyc = dalloc(g, ycb), dac = ac ? dcopy(g, ac, ycb) : 0;
                    poison(g, dyc, ycb);
                    ws_conv_args sa = {.n = 1, .t_in = L, .x = P(dxc), .y = P(dyc), .add = P(dac),
                                       .add_batch_stride = 0};
                    cr_assert_eq(run(&k, &sa, 0, &e), 0, "%s sequence at %d: %s", c->name, t0, e.msg);
                    void *yc = malloc(ycb), *yp = sub(y1, ys, c->yl, C, T, n, 1, t0, L);
                    cr_assert_not_null(yc);
                    down(g, yc, dyc, ycb);
                    cr_assert(!memcmp(yc, yp, ycb), "%s: item %d, sequence at %d (%d long): alone, other bits",
                              c->name, n, t0, L);
                    free(yc), free(yp), free(xc), free(ac);
                    dfree(g, dxc), dfree(g, dyc), dfree(g, dac);
                    runs++;
                }
                t0 = t1;
            }
        cr_assert_gt(runs, N, "%s: too few sequences (%d)", c->name, runs);
    }

    if (!in.seq && !in.init) { /* the plan's own kernels give the same bits */
        ws_err ge = {""};
        ws_gpu *pg = ws_gpu_open(0, &ge);
        cr_assert_not_null(pg, "ws_gpu_open: %s", ge.msg);
        ws_gpu_conv *plan = ws_gpu_conv_new(pg, &k.d, in.w, in.b, &ge);
        cr_assert_not_null(plan, "%s: ws_gpu_conv_new: %s", c->name, ge.msg);
        ws_conv_args pa = {.n = N, .t_in = T, .x = P(dx), .y = P(dy), .add = P(dadd),
                           .add_batch_stride = (long long)C * T};
        void *yp = malloc(yb);
        cr_assert_not_null(yp);
        for (int direct = 0; direct < 2; direct++) {
            ws_gpu_conv_force_direct(plan, direct);
            const int kind = ws_gpu_conv_kernel(plan, &pa);
            poison(g, dy, yb);
            cr_assert_eq(ws_gpu_conv_run(plan, &pa, &ge), 0, "%s: %s", c->name, ge.msg);
            down(g, yp, dy, yb);
            for (size_t i = 0; i < in.ny; i++)
                cr_assert(!memcmp((const char *)yp + i * ys, (const char *)y1 + i * ys, ys),
                          "%s: y[%zu] %.9g, the plan's %s kernel %.9g", c->name, i, get(y1, c->yt, i),
                          kind == 1 ? "depthwise" : "direct", get(yp, c->yt, i));
            if (verbose())
                fprintf(stderr, "gpu_dws %-40s the same bits as the %s kernel\n", c->name,
                        kind == 1 ? "depthwise" : "direct");
        }
        free(yp);
        ws_gpu_conv_free(plan);
        ws_gpu_close(pg);
        cr_assert_eq(g->cu.CtxSetCurrent(g->wg->ctx), 0);
    }

    kern_free(&k);
    dfree(g, dx), dfree(g, dy), dfree(g, dseq), dfree(g, dinit), dfree(g, dfin), dfree(g, dadd);
    free(y1), free(y2), free(f1), free(f2), free(yref), free(ymag);
    inputs_free(&in);
}

/* the backward of one case (bwd_* tests; pre and add dropped) */
static void bwd_case(gdev *g, const dcase *c)
{
    const int N = c->n, C = c->c, K = c->k, T = c->t, S = K - 1, D = c->dil, P_L = D * S;
    inputs in = inputs_of(c, 0xb5d00000u + (uint64_t)C * 131 + (uint64_t)K * 7 + (uint64_t)T);
    ws_rng rr = {0x9e3779b9u + (uint64_t)T};
    void *dyh = random_buf(in.ny, c->yt, &rr);
    const size_t xs = tsize(c->xt), ys = tsize(c->yt);
    const size_t xb = in.nx * xs, yb = in.ny * ys, sb = in.ns * xs;
    kern k = kern_load(g, c, WS_CONV_BWD, in.w, in.b);
    const ref r = {.c = c, .N = N, .C = C, .K = K, .D = D, .P = P_L, .T = T, .x = in.x,
                   .init = in.init, .w = in.w, .b = in.b, .seq = in.seq};

    /* the reference: gz and its magnitude in [N][C][T] (NCL), then the sums */
    const size_t nz = (size_t)N * C * T;
    double *gz = malloc(nz * sizeof *gz), *gm = malloc(nz * sizeof *gm);
    cr_assert(gz && gm);
    for (int n = 0; n < N; n++)
        for (int ch = 0; ch < C; ch++)
            for (int t = 0; t < T; t++) {
                const size_t o = ((size_t)n * C + ch) * T + t;
                if (padding(&r, n, t)) {
                    gz[o] = gm[o] = 0;
                    continue;
                }
                double m;
                const double z = z_of(&r, n, ch, t, WS_ACT_NONE, &m);
                const double dv = get(dyh, c->yt, at(c->yl, n, ch, t, C, T));
                gz[o] = dv * act_grad(c->act, z);
                gm[o] = fabs(dv) * (1 + m);
            }
    double *dxr = calloc(in.nx, sizeof *dxr), *dxm = calloc(in.nx, sizeof *dxm);
    double *dir = calloc(in.ns + 1, sizeof *dir), *dim = calloc(in.ns + 1, sizeof *dim);
    double *dwr = calloc((size_t)C * K, sizeof *dwr), *dwm = calloc((size_t)C * K, sizeof *dwm);
    double *dbr = calloc((size_t)C, sizeof *dbr), *dbm = calloc((size_t)C, sizeof *dbm);
    cr_assert(dxr && dxm && dir && dim && dwr && dwm && dbr && dbm);
    for (int n = 0; n < N; n++)
        for (int ch = 0; ch < C; ch++) {
            const double *grow = gz + ((size_t)n * C + ch) * T, *mrow = gm + ((size_t)n * C + ch) * T;
            for (int p = 0; p < T; p++) {
                const size_t i = at(c->xl, n, ch, p, C, T);
                if (padding(&r, n, p))
                    continue;
                for (int kk = 0; kk < K; kk++) {
                    const int t = p + P_L - D * kk;
                    if (t >= T || (in.seq && in.seq[(size_t)n * T + t] != in.seq[(size_t)n * T + p]))
                        continue;
                    dxr[i] += in.w[ch * K + kk] * grow[t];
                    dxm[i] += fabs(in.w[ch * K + kk]) * mrow[t];
                }
            }
            for (int j = 0; j < S; j++) {
                const size_t i = ((size_t)n * C + ch) * S + (size_t)j;
                for (int kk = 0; kk < K; kk++) {
                    const int t = j - S + P_L - D * kk;
                    if (t < 0 || t >= T)
                        continue;
                    dir[i] += in.w[ch * K + kk] * grow[t];
                    dim[i] += fabs(in.w[ch * K + kk]) * mrow[t];
                }
            }
            for (int t = 0; t < T; t++) {
                for (int kk = 0; kk < K; kk++) {
                    const double xv = x_at(&r, n, ch, t, t + D * kk - P_L);
                    dwr[ch * K + kk] += grow[t] * xv;
                    dwm[ch * K + kk] += mrow[t] * fabs(xv);
                }
                dbr[ch] += grow[t];
                dbm[ch] += mrow[t];
            }
        }

    uint64_t dx = dcopy(g, in.x, xb), ddy = dcopy(g, dyh, yb), dseq = 0, dinit = 0;
    if (in.seq)
        dseq = dcopy(g, in.seq, (size_t)N * T * sizeof(int32_t));
    if (in.init)
        dinit = dcopy(g, in.init, sb);
    const int want_dinit = !in.seq && S > 0 && D == 1; /* states need dilation 1 */
    const size_t scratch_b = ws_dws_scratch_bytes(&k.d, N, T);
    cr_assert_eq(scratch_b, nz * sizeof(float));
    const uint64_t scratch = dalloc(g, scratch_b);
    const uint64_t ddx = dalloc(g, xb), ddi = want_dinit ? dalloc(g, sb) : 0;
    const uint64_t ddw = dalloc(g, (size_t)C * K * 4), ddb = dalloc(g, (size_t)C * 4);
    ws_conv_args a = {.n = N, .t_in = T, .x = P(dx), .dy = P(ddy), .dx = P(ddx), .dw = P(ddw),
                      .db = P(ddb), .seq_idx = P(dseq), .initial_states = P(dinit),
                      .dinitial_states = P(ddi)};
    const size_t bytes[4] = {xb, sb, (size_t)C * K * 4, (size_t)C * 4};
    const uint64_t dev[4] = {ddx, ddi, ddw, ddb};
    void *h[2][4];
    for (int rep = 0; rep < 2; rep++)
        for (int o = 0; o < 4; o++)
            cr_assert_not_null(h[rep][o] = malloc(bytes[o] + 1));
    ws_err e = {""};
    for (int rep = 0; rep < 2; rep++) {
        for (int o = 0; o < 4; o++)
            if (dev[o])
                poison(g, dev[o], bytes[o]);
        poison(g, scratch, scratch_b);
        cr_assert_eq(run(&k, &a, scratch, &e), 0, "%s: %s", c->name, e.msg);
        for (int o = 0; o < 4; o++)
            if (dev[o])
                down(g, h[rep][o], dev[o], bytes[o]);
    }
    static const char *const outs[4] = {"dx", "dinitial_states", "dw", "db"};
    for (int o = 0; o < 4; o++)
        cr_assert(!dev[o] || !memcmp(h[0][o], h[1][o], bytes[o]), "%s: two runs, other %s bits", c->name,
                  outs[o]);
    check(c->name, "dx", h[0][0], c->xt, dxr, dxm, in.nx, 2e-5, 1e-6);
    if (want_dinit)
        check(c->name, "dinit", h[0][1], c->xt, dir, dim, in.ns, 2e-5, 1e-6);
    check(c->name, "dw", h[0][2], WS_F32, dwr, dwm, (size_t)C * K, 2e-5, 1e-6);
    check(c->name, "db", h[0][3], WS_F32, dbr, dbm, (size_t)C, 2e-5, 1e-6);
    for (int n = 0; n < N; n++)
        for (int ch = 0; ch < C; ch++)
            for (int p = 0; p < T; p++)
                if (padding(&r, n, p)) {
                    uint32_t bits = 0;
                    memcpy(&bits, (const char *)h[0][0] + at(c->xl, n, ch, p, C, T) * xs, xs);
                    cr_assert_eq(bits, 0, "%s: dx[%d,%d,%d] at padding is not +0", c->name, n, ch, p);
                }

    /* dw alone: the same bits */
    poison(g, ddw, bytes[2]);
    ws_conv_args wa = {.n = N, .t_in = T, .x = P(dx), .dy = P(ddy), .dw = P(ddw), .seq_idx = P(dseq),
                       .initial_states = P(dinit)};
    cr_assert_eq(run(&k, &wa, scratch, &e), 0, "%s dw alone: %s", c->name, e.msg);
    down(g, h[1][2], ddw, bytes[2]);
    cr_assert(!memcmp(h[0][2], h[1][2], bytes[2]), "%s: dw alone, other bits", c->name);

    kern_free(&k);
    dfree(g, dx), dfree(g, ddy), dfree(g, dseq), dfree(g, dinit), dfree(g, scratch);
    for (int o = 0; o < 4; o++)
        dfree(g, dev[o]);
    for (int rep = 0; rep < 2; rep++)
        for (int o = 0; o < 4; o++)
            free(h[rep][o]);
    free(gz), free(gm), free(dxr), free(dxm), free(dir), free(dim), free(dwr), free(dwm), free(dbr),
        free(dbm), free(dyh);
    inputs_free(&in);
}

Test(gpu_dws, fwd_every_case_matches_the_reference_chunks_and_sequences, .timeout = 600)
{
    gdev *g = gdev_or_skip();
    for (int i = 0; i < N_CASES; i++)
        fwd_case(g, &cases[i]);
    gdev_close(g);
}

Test(gpu_dws, bwd_every_case_matches_the_reference, .timeout = 600)
{
    gdev *g = gdev_or_skip();
    for (int i = 0; i < N_CASES; i++)
        bwd_case(g, &cases[i]);
    gdev_close(g);
}

Test(gpu_dws, refuses_states_with_sequences_or_dilation_and_other_lengths)
{
    gdev *g = gdev_or_skip();
    const dcase c = {"refusals", 1, 8, 4, 2, 16, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_ACT_NONE,
                     WS_ACT_SILU, 0, 0, 0, 0};
    float w[8 * 4] = {0};
    kern f = kern_load(g, &c, WS_CONV_FWD, w, NULL), b = kern_load(g, &c, WS_CONV_BWD, w, NULL);
    const uint64_t buf = dalloc(g, 4096);
    ws_err e = {""};
    ws_conv_args a = {.n = 1, .t_in = 16, .x = P(buf), .y = P(buf), .seq_idx = P(buf),
                      .initial_states = P(buf)};
    cr_assert_eq(run(&f, &a, 0, &e), -1);
    cr_assert(strstr(e.msg, "seq_idx and initial_states"), "%s", e.msg);
    a.seq_idx = NULL;
    cr_assert_eq(run(&f, &a, 0, &e), -1, "initial_states with dilation 2 accepted");
    cr_assert(strstr(e.msg, "dilation 2"), "%s", e.msg);
    a.initial_states = NULL;
    a.final_states = P(buf);
    cr_assert_eq(run(&f, &a, 0, &e), -1, "final_states with dilation 2 accepted");
    cr_assert(strstr(e.msg, "final_states with dilation 2"), "%s", e.msg);
    a.final_states = NULL;
    cr_assert_eq(ws_dws_enqueue(f.m, &g->cu, &f.d, &a, 15, f.w, 0, 0, g->st, &e), -1);
    cr_assert(strstr(e.msg, "t_out 15"), "%s", e.msg);
    ws_conv_args ba = {.n = 1, .t_in = 16, .x = P(buf), .dy = P(buf), .dw = (float *)P(buf)};
    cr_assert_eq(run(&b, &ba, 0, &e), -1, "BWD without scratch accepted");
    cr_assert(strstr(e.msg, "scratch"), "%s", e.msg);
    cr_assert_eq(ws_dws_enqueue(f.m, &g->cu, &b.d, &ba, 16, f.w, 0, buf, g->st, &e), -1,
                 "a BWD descriptor given to the FWD module");
    cr_assert(strstr(e.msg, "module loaded for"), "%s", e.msg);
    ba.dinitial_states = P(buf);
    ba.seq_idx = P(buf);
    cr_assert_eq(run(&b, &ba, buf, &e), -1);
    cr_assert(strstr(e.msg, "seq_idx and dinitial_states"), "%s", e.msg);
    dfree(g, buf);
    kern_free(&f);
    kern_free(&b);
    gdev_close(g);
}

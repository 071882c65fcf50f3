/* test_engine_states.c - the conv engine's packed sequences and carried state on the CPU
 * (ws_conv_args seq_idx, initial_states, final_states, dinitial_states; include/ws_conv.h,
 * docs/conv-engine.md "Packed sequences and carried state").
 *
 * Only the public header is included. The checks:
 * - FWD and BWD against the float64 oracle (tests/oracle.c, oracle_dw_causal_*) over a
 *   table of depthwise causal shapes: both layouts (and a mixed pair), f32 / f16 / bf16
 *   storage, every act and pre, K 1..8, dilation 1..3 with seq_idx, T_in < K-1, N > 1,
 *   more than one block of channels and of times; final_states exactly (they are copies).
 * - the bit rule: a run cut in chunks (each chunk's initial_states the previous chunk's
 *   final_states, also updated in place) gives the bits of one run over the whole sequence
 *   (y and final_states), for NCL and NLC, f32 / f16 / bf16, every act, K 2..8 (and 12);
 *   a packed batch gives the bits of its sequences run one by one, padding exactly 0.
 * - dinitial_states by central differences of the oracle, and by the adjoint identity
 *   (<dinitial_states, v> = the derivative of L along v, from the oracle; and, with act
 *   NONE and no bias, <y, dy> = <x, dx> + <initial_states, dinitial_states>, all engine).
 * - every refusal: -1, nothing written, the message names the field(s).
 * Tolerances as tests/test_engine.c: float32 storage rel L2 <= 1e-5 and max |err| <= 1e-4
 * of the largest |value|; f16 / bf16 storage rel L2 <= 1e-2 (the oracle sees the stored
 * inputs). Set WS_TEST_VERBOSE=1 for the errors seen.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ws_conv.h>

#include "helpers.h"
#include "oracle.h"

/* --- numbers, storage types, layouts (this file's own) ------------------------ */

typedef struct { uint64_t s; } srng;

static uint64_t srng_u64(srng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double srng_pm1(srng *r) { return (double)(srng_u64(r) >> 11) * 0x1p-53 * 2.0 - 1.0; }

static double *rand_pm1(size_t n, uint64_t seed)
{
    srng r = {seed * 0x2545f4914f6cdd1dULL + 7};
    double *a = malloc((n ? n : 1) * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = srng_pm1(&r);
    return a;
}


static int olay(ws_layout l) { return l == WS_NLC ? ORACLE_NLC : ORACLE_NCL; }

/* v logical [N][C][T] -> stored in layout l and type ty (malloc'd); v becomes the stored
 * values, so that the oracle sees what the engine sees. The oracle's arrays are in the
 * engine's layout (the oracle takes layouts too), so v is replaced in place by index. */
static void *pack(double *v, size_t count, ws_dtype ty)
{
    void *buf = malloc((count ? count : 1) * ref_tsize(ty));
    for (size_t i = 0; i < count; i++)
        v[i] = ref_put(buf, ty, i, v[i]);
    return buf;
}

static float *unpack(const void *buf, size_t count, ws_dtype ty)
{
    float *f = malloc((count ? count : 1) * sizeof *f);
    for (size_t i = 0; i < count; i++)
        f[i] = (float)ref_get(buf, ty, i);
    return f;
}

static void *poisoned(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    memset(p, 0xff, bytes ? bytes : 1);
    return p;
}

static int all_ff(const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        if (((const unsigned char *)p)[i] != 0xff)
            return 0;
    return 1;
}

static int verbose(void)
{
    const char *v = getenv("WS_TEST_VERBOSE");
    return v && *v && strcmp(v, "0");
}

static void expect_close(const char *name, const char *what, const float *got, const double *want,
                         size_t n, ws_dtype stored)
{
    if (!n)
        return;
    double rl = rel_l2(got, want, n), ma = max_abs_err(got, want, n), scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    if (verbose())
        fprintf(stderr, "engine_states %-34s %-6s rel L2 %.2e  max |err| %.2e  (max |want| %.3g)\n",
                name, what, rl, ma, scale);
    if (scale == 0) {
        cr_assert_eq(ma, 0.0, "%s %s: want all 0, max |got| %.3g", name, what, ma);
        return;
    }
    if (stored == WS_F32) {
        cr_assert_leq(rl, 1e-5, "%s %s: rel L2 %.3g > 1e-5", name, what, rl);
        assert_close(what, got, want, n, 1e-4 * scale, 0.0);
    } else {
        cr_assert_leq(rl, 1e-2, "%s %s: rel L2 %.3g > 1e-2 (%s storage)", name, what, rl,
                      stored == WS_F16 ? "f16" : "bf16");
    }
}

/* seq_idx [N][T]: runs of one id (lengths 1 .. 2K+3, ids increasing), now and then a run of
 * padding (-1 or -2); some rows start with padding */
static int32_t *make_seq(int N, int T, int K, uint64_t seed)
{
    srng r = {seed * 0x9e3779b97f4a7c15ULL + 3};
    int32_t *s = malloc((size_t)N * T * sizeof *s);
    for (int n = 0; n < N; n++) {
        int t = 0, id = (int)(srng_u64(&r) % 3);
        while (t < T) {
            int pad = srng_u64(&r) % 6 == 0;
            int len = 1 + (int)(srng_u64(&r) % (uint64_t)(pad ? 3 : 2 * K + 3));
            int v = pad ? -1 - (int)(srng_u64(&r) % 2) : id++;
            for (int i = 0; i < len && t < T; i++)
                s[(size_t)n * T + t++] = v;
        }
    }
    return s;
}

static ws_conv_desc causal_desc(ws_conv_op op, int C, int K, int D, ws_layout xl, ws_layout yl,
                                ws_dtype xt, ws_dtype wt, ws_dtype yt, ws_act pre, ws_act act)
{
    ws_conv_desc d = {.op = op, .c_in = C, .c_out = C, .groups = C, .k = K, .stride = 1,
                      .dilation = D, .pad_l = D * (K - 1), .pad_r = 0, .x_layout = xl,
                      .y_layout = yl, .x_type = xt, .w_type = wt, .y_type = yt,
                      .math = WS_MATH_F32, .pre = op == WS_CONV_FWD ? pre : WS_ACT_NONE,
                      .act = act};
    return d;
}

/* --- the table ---------------------------------------------------------------------- */

enum { M_SEQ, M_STATES, M_FINAL_ONLY };

typedef struct {
    char name[44];
    int n, c, k, dil, t;
    ws_layout xl, yl;
    ws_dtype xt, wt, yt;
    ws_act pre, act;
    int bias, add; /* add: one per item (FWD only) */
    int mode;      /* M_SEQ: seq_idx; M_STATES: initial and final states (BWD: initial and
                      dinitial); M_FINAL_ONLY: final_states without initial_states (BWD:
                      dinitial_states at zero states) */
} st_case;

#define F32 WS_F32, WS_F32, WS_F32
#define F16 WS_F16, WS_F16, WS_F16
#define BF16 WS_BF16, WS_BF16, WS_BF16
static const st_case cases[] = {
    {"seq_nlc_f32_silu_k4", 2, 20, 4, 1, 37, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, M_SEQ},
    {"seq_ncl_f32_silu_k4", 2, 20, 4, 1, 37, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0, M_SEQ},
    {"seq_nlc_f32_gelu_k3_d2_add", 3, 17, 3, 2, 41, WS_NLC, WS_NLC, F32, WS_ACT_RELU, WS_ACT_GELU, 1, 1,
     M_SEQ},
    {"seq_ncl_bf16_relu_k5_d3", 2, 9, 5, 3, 50, WS_NCL, WS_NCL, BF16, 0, WS_ACT_RELU, 1, 0, M_SEQ},
    {"seq_nlc_f16_none_k2", 2, 33, 2, 1, 29, WS_NLC, WS_NLC, F16, 0, WS_ACT_NONE, 0, 0, M_SEQ},
    {"seq_ncl_f32_silu_k8_long", 2, 18, 8, 1, 300, WS_NCL, WS_NCL, F32, WS_ACT_SILU, WS_ACT_SILU, 1, 1,
     M_SEQ},
    {"seq_nlc_bf16_silu_k4_pre_add", 2, 24, 4, 1, 61, WS_NLC, WS_NLC, BF16, WS_ACT_GELU, WS_ACT_SILU, 1, 1,
     M_SEQ},
    {"seq_nlc_f32_silu_k1", 2, 5, 1, 1, 19, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, M_SEQ},
    {"states_nlc_f32_silu_k4", 3, 20, 4, 1, 37, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, M_STATES},
    {"states_ncl_f32_silu_k4", 3, 20, 4, 1, 37, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0, M_STATES},
    {"states_nlc_f32_gelu_k3_pre", 2, 11, 3, 1, 23, WS_NLC, WS_NLC, F32, WS_ACT_SILU, WS_ACT_GELU, 1, 1,
     M_STATES},
    {"states_nlc_f16_gelu_k6_t3", 2, 12, 6, 1, 3, WS_NLC, WS_NLC, F16, 0, WS_ACT_GELU, 1, 0, M_STATES},
    {"states_ncl_bf16_silu_k8_t1", 2, 7, 8, 1, 1, WS_NCL, WS_NCL, BF16, 0, WS_ACT_SILU, 1, 0, M_STATES},
    {"states_nlc_f32_none_k2_t1", 2, 6, 2, 1, 1, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 0, 0, M_STATES},
    {"states_ncl_f32_relu_k7_t4_pre", 2, 6, 7, 1, 4, WS_NCL, WS_NCL, F32, WS_ACT_RELU, WS_ACT_RELU, 1, 0,
     M_STATES},
    {"states_nlc_to_ncl_f32_silu_k4", 2, 10, 4, 1, 30, WS_NLC, WS_NCL, F32, 0, WS_ACT_SILU, 1, 1, M_STATES},
    {"states_ncl_f32_gelu_k3_c40_t600", 1, 40, 3, 1, 600, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 1,
     M_STATES},
    {"states_nlc_f32_silu_k5_c40_t300", 2, 40, 5, 1, 300, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0,
     M_STATES},
    {"final_only_ncl_f32_relu_k7_t4", 2, 6, 7, 1, 4, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0, M_FINAL_ONLY},
    {"final_only_nlc_f32_silu_k4", 2, 9, 4, 1, 25, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, M_FINAL_ONLY},
    {"final_only_ncl_f16_gelu_k2_t1", 3, 5, 2, 1, 1, WS_NCL, WS_NCL, F16, 0, WS_ACT_GELU, 1, 0, M_FINAL_ONLY},
    {"states_ncl_f32_silu_k12", 2, 5, 12, 1, 30, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0, M_STATES},
};
#undef F32
#undef F16
#undef BF16
enum { N_CASES = sizeof cases / sizeof cases[0] };

static void free_params(struct criterion_test_params *p) { cr_free(p->params); }

static struct criterion_test_params all_cases(void)
{
    int *idx = cr_malloc(sizeof(int) * N_CASES);
    for (int i = 0; i < N_CASES; i++)
        idx[i] = i;
    return cr_make_param_array(int, idx, N_CASES, free_params);
}

static oracle_conv_shape oshape(const st_case *c, ws_conv_op op)
{
    oracle_conv_shape p = {c->n, c->c, c->c, c->c, c->k, 1, c->dil, c->dil * (c->k - 1), 0, c->t,
                           olay(c->xl), olay(c->yl), op == WS_CONV_FWD ? (int)c->pre : 0,
                           (int)c->act};
    return p;
}

/* --- forward against the oracle --------------------------------------------------- */

ParameterizedTestParameters(engine_states, forward_matches_the_oracle) { return all_cases(); }

ParameterizedTest(int *ci, engine_states, forward_matches_the_oracle)
{
    const st_case *c = &cases[*ci];
    const ws_conv_desc d = causal_desc(WS_CONV_FWD, c->c, c->k, c->dil, c->xl, c->yl, c->xt, c->wt,
                                       c->yt, c->pre, c->act);
    const oracle_conv_shape p = oshape(c, WS_CONV_FWD);
    const size_t nx = (size_t)c->n * c->c * c->t, nw = (size_t)c->c * c->k;
    const size_t ns = (size_t)c->n * c->c * (c->k - 1);
    const uint64_t seed = 100 + (uint64_t)*ci * 16;
    double *x = rand_pm1(nx, seed), *w = rand_pm1(nw, seed + 1), *b = rand_pm1(c->c, seed + 2);
    double *add = c->add ? rand_pm1(nx, seed + 3) : NULL, *init = NULL;
    void *xs = pack(x, nx, c->xt), *wsb = pack(w, nw, c->wt), *adds = add ? pack(add, nx, c->yt) : NULL;
    void *inits = NULL;
    float *bf = malloc(c->c * sizeof *bf);
    for (int i = 0; i < c->c; i++)
        b[i] = bf[i] = (float)b[i];
    int32_t *seq = c->mode == M_SEQ ? make_seq(c->n, c->t, c->k, seed + 4) : NULL;
    if (c->mode == M_STATES) {
        init = rand_pm1(ns, seed + 5);
        inits = pack(init, ns, c->xt);
    }
    const int want_final = c->mode != M_SEQ;

    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, wsb, c->bias ? bf : NULL, 2, &err);
    cr_assert(plan, "%s: %s", c->name, err.msg);
    void *y = poisoned(nx * ref_tsize(c->yt)), *fin = want_final ? poisoned(ns * ref_tsize(c->xt)) : NULL;
    ws_conv_args a = {.n = c->n, .t_in = c->t, .x = xs, .add = adds,
                      .add_batch_stride = (long long)c->c * c->t, .y = y, .seq_idx = seq,
                      .initial_states = inits, .final_states = fin};
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s: %s", c->name, err.msg);

    double *wy = malloc(nx * sizeof *wy), *wf = malloc((ns ? ns : 1) * sizeof *wf);
    cr_assert_eq(oracle_dw_causal_fwd(&p, x, w, c->bias ? b : NULL, add, (long long)c->c * c->t, seq,
                                      init, wy, want_final ? wf : NULL),
                 c->t);
    float *gy = unpack(y, nx, c->yt);
    expect_close(c->name, "y", gy, wy, nx, c->yt);
    if (seq) /* padding: 0 exactly, whatever bias, act and add give elsewhere */
        for (int n = 0; n < c->n; n++)
            for (int ch = 0; ch < c->c; ch++)
                for (int t = 0; t < c->t; t++)
                    if (seq[(size_t)n * c->t + t] < 0) {
                        size_t i = ref_at(c->yl, n, ch, t, c->c, c->t);
                        cr_assert_eq(ref_get(y, c->yt, i), 0.0, "%s: padding y[%d,%d,%d] = %g", c->name, n,
                                     ch, t, ref_get(y, c->yt, i));
                        cr_assert(!signbit(ref_get(y, c->yt, i)), "%s: padding y is -0", c->name);
                    }
    if (want_final) /* copies of stored inputs: exact */
        for (size_t i = 0; i < ns; i++)
            cr_assert_eq(ref_get(fin, c->xt, i), wf[i], "%s: final_states[%zu] = %.9g, want %.9g", c->name,
                         i, ref_get(fin, c->xt, i), wf[i]);
    ws_conv_free(plan);
    free(x), free(w), free(b), free(add), free(init), free(xs), free(wsb), free(adds), free(inits);
    free(bf), free(seq), free(y), free(fin), free(wy), free(wf), free(gy);
}

/* --- backward against the oracle -------------------------------------------------- */

enum { W_DX = 1, W_DW = 2, W_DB = 4, W_DI = 8 };

static void bwd_vs_oracle(const st_case *c, uint64_t seed, int wanted)
{
    const ws_conv_desc d = causal_desc(WS_CONV_BWD, c->c, c->k, c->dil, c->xl, c->yl, c->xt, c->wt,
                                       c->yt, 0, c->act);
    const oracle_conv_shape p = oshape(c, WS_CONV_BWD);
    const size_t nx = (size_t)c->n * c->c * c->t, nw = (size_t)c->c * c->k;
    const size_t ns = (size_t)c->n * c->c * (c->k - 1);
    double *x = rand_pm1(nx, seed), *w = rand_pm1(nw, seed + 1), *b = rand_pm1(c->c, seed + 2);
    double *dy = rand_pm1(nx, seed + 3), *init = NULL;
    void *xs = pack(x, nx, c->xt), *wsb = pack(w, nw, c->wt), *dys = pack(dy, nx, c->yt), *inits = NULL;
    float *bf = malloc(c->c * sizeof *bf);
    for (int i = 0; i < c->c; i++)
        b[i] = bf[i] = (float)b[i];
    int32_t *seq = c->mode == M_SEQ ? make_seq(c->n, c->t, c->k, seed + 4) : NULL;
    if (c->mode == M_STATES) {
        init = rand_pm1(ns, seed + 5);
        inits = pack(init, ns, c->xt);
    }
    if (seq) /* dy at padding is ignored: NaN there must not reach any gradient */
        for (int n = 0; n < c->n; n++)
            for (int ch = 0; ch < c->c; ch++)
                for (int t = 0; t < c->t; t++)
                    if (seq[(size_t)n * c->t + t] < 0) {
                        size_t i = ref_at(c->yl, n, ch, t, c->c, c->t);
                        ref_put(dys, c->yt, i, NAN);
                        dy[i] = 0.0;
                    }
    if (seq) /* no states with seq_idx: dx instead of dinitial_states */
        wanted = (wanted & ~W_DI) | (wanted == W_DI ? W_DX : 0);
    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, NULL, NULL, 2, &err); /* w and b per call */
    cr_assert(plan, "%s: %s", c->name, err.msg);
    void *dx = wanted & W_DX ? poisoned(nx * ref_tsize(c->xt)) : NULL;
    float *dw = wanted & W_DW ? poisoned(nw * 4) : NULL, *db = wanted & W_DB ? poisoned(c->c * 4) : NULL;
    void *di = wanted & W_DI ? poisoned(ns * ref_tsize(c->xt)) : NULL;
    ws_conv_args a = {.n = c->n, .t_in = c->t, .x = xs, .w = wsb, .b = c->bias ? bf : NULL,
                      .dy = dys, .dx = dx, .dw = dw, .db = db, .seq_idx = seq,
                      .initial_states = inits, .dinitial_states = di};
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s: %s", c->name, err.msg);

    double *wdx = malloc(nx * sizeof *wdx), *wdw = malloc(nw * sizeof *wdw);
    double *wdb = malloc(c->c * sizeof *wdb), *wdi = malloc((ns ? ns : 1) * sizeof *wdi);
    cr_assert_eq(oracle_dw_causal_bwd(&p, x, w, c->bias ? b : NULL, seq, init, dy, wdx, wdw, wdb,
                                      seq ? NULL : wdi),
                 c->t);
    if (dx) {
        float *g = unpack(dx, nx, c->xt);
        expect_close(c->name, "dx", g, wdx, nx, c->xt);
        if (seq) /* padding feeds no tap: dx 0 exactly */
            for (int n = 0; n < c->n; n++)
                for (int ch = 0; ch < c->c; ch++)
                    for (int t = 0; t < c->t; t++)
                        if (seq[(size_t)n * c->t + t] < 0)
                            cr_assert_eq(g[ref_at(c->xl, n, ch, t, c->c, c->t)], 0.0f,
                                         "%s: dx at padding [%d,%d,%d]", c->name, n, ch, t);
        free(g);
    }
    if (dw)
        expect_close(c->name, "dw", dw, wdw, nw, WS_F32);
    if (db)
        expect_close(c->name, "db", db, wdb, c->c, WS_F32);
    if (di) {
        float *g = unpack(di, ns, c->xt);
        expect_close(c->name, "dinit", g, wdi, ns, c->xt);
        free(g);
    }
    ws_conv_free(plan);
    free(x), free(w), free(b), free(dy), free(init), free(xs), free(wsb), free(dys), free(inits);
    free(bf), free(seq), free(dx), free(dw), free(db), free(di), free(wdx), free(wdw), free(wdb);
    free(wdi);
}

ParameterizedTestParameters(engine_states, backward_matches_the_oracle) { return all_cases(); }

ParameterizedTest(int *ci, engine_states, backward_matches_the_oracle)
{
    const st_case *c = &cases[*ci];
    const uint64_t seed = 3000 + (uint64_t)*ci * 16;
    bwd_vs_oracle(c, seed, W_DX | W_DW | W_DB | W_DI);
    bwd_vs_oracle(c, seed + 100, W_DI);
    bwd_vs_oracle(c, seed + 200, W_DX);
    bwd_vs_oracle(c, seed + 300, W_DW | W_DB);
}

/* --- the oracle on its own ----------------------------------------------------------- */

static double loss(const oracle_conv_shape *p, const double *x, const double *w, const double *b,
                   const int32_t *seq, const double *init, const double *dy, double *ybuf)
{
    const size_t ny = (size_t)p->n * p->c_out * p->t_in;
    cr_assert_eq(oracle_dw_causal_fwd(p, x, w, b, NULL, 0, seq, init, ybuf, NULL), p->t_in);
    double s = 0;
    for (size_t i = 0; i < ny; i++)
        s += ybuf[i] * dy[i];
    return s;
}

Test(engine_states, oracle_backward_matches_central_differences_of_its_forward)
{
    /* (dx, dw, db with seq_idx, and with states; dinit with states given and at zero states):
     * h = 1e-5, so 1e-6 as in tests/test_engine.c */
    static const struct { oracle_conv_shape p; int seq, init; } shapes[] = {
        {{2, 5, 5, 5, 4, 1, 1, 3, 0, 23, ORACLE_NLC, ORACLE_NLC, 0, ORACLE_ACT_SILU}, 1, 0},
        {{2, 4, 4, 4, 3, 1, 2, 4, 0, 19, ORACLE_NCL, ORACLE_NCL, 0, ORACLE_ACT_GELU}, 1, 0},
        {{2, 5, 5, 5, 4, 1, 1, 3, 0, 9, ORACLE_NLC, ORACLE_NCL, 0, ORACLE_ACT_SILU}, 0, 1},
        {{2, 3, 3, 3, 6, 1, 1, 5, 0, 3, ORACLE_NCL, ORACLE_NCL, 0, ORACLE_ACT_GELU}, 0, 1},
        {{1, 3, 3, 3, 5, 1, 1, 4, 0, 2, ORACLE_NLC, ORACLE_NLC, 0, ORACLE_ACT_SILU}, 0, 0},
    };
    double worst = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const oracle_conv_shape *p = &shapes[s].p;
        const size_t nx = (size_t)p->n * p->c_in * p->t_in, nw = (size_t)p->c_in * p->k;
        const size_t ns = (size_t)p->n * p->c_in * (p->k - 1);
        double *x = rand_pm1(nx, 70 + s), *w = rand_pm1(nw, 80 + s), *b = rand_pm1(p->c_in, 90 + s);
        double *dy = rand_pm1(nx, 100 + s), *ybuf = malloc(nx * sizeof *ybuf);
        double *st = rand_pm1(ns, 110 + s), *zero = calloc(ns ? ns : 1, sizeof *zero);
        int32_t *seq = shapes[s].seq ? make_seq(p->n, p->t_in, p->k, 120 + s) : NULL;
        /* with no initial state the derivative is taken at zeros: differences in zero */
        double *init = shapes[s].init ? st : zero;
        double *dx = malloc(nx * sizeof *dx), *dw = malloc(nw * sizeof *dw);
        double *db = malloc(p->c_in * sizeof *db), *di = malloc((ns ? ns : 1) * sizeof *di);
        cr_assert_eq(oracle_dw_causal_bwd(p, x, w, b, seq, seq ? NULL : shapes[s].init ? init : NULL,
                                          dy, dx, dw, db, seq ? NULL : di),
                     p->t_in);
        struct { double *v, *g; size_t n; const char *name; } vars[] = {
            {x, dx, nx, "dx"}, {w, dw, nw, "dw"}, {b, db, (size_t)p->c_in, "db"},
            {init, seq ? NULL : di, ns, "dinit"}};
        for (int vi = 0; vi < 4; vi++) {
            if (!vars[vi].g || !vars[vi].n)
                continue;
            for (int e = 0; e < 6; e++) {
                size_t i = (size_t)(e * 7919 + 13 * vi) % vars[vi].n;
                const double h = 1e-5, v0 = vars[vi].v[i];
                const double *ip = seq ? NULL : init;
                vars[vi].v[i] = v0 + h;
                double lp = loss(p, x, w, b, seq, ip, dy, ybuf);
                vars[vi].v[i] = v0 - h;
                double lm = loss(p, x, w, b, seq, ip, dy, ybuf);
                vars[vi].v[i] = v0;
                double fd = (lp - lm) / (2 * h), an = vars[vi].g[i];
                double err = fabs(fd - an) / (1 + fabs(an));
                worst = fmax(worst, err);
                cr_assert_leq(err, 1e-6, "shape %zu %s[%zu]: analytic %.12g, central difference %.12g",
                              s, vars[vi].name, i, an, fd);
            }
        }
        free(x), free(w), free(b), free(dy), free(ybuf), free(st), free(zero), free(seq), free(dx);
        free(dw), free(db), free(di);
    }
    if (verbose())
        fprintf(stderr, "engine_states oracle backward vs central differences: worst %.2e\n", worst);
}

/* --- dinitial_states: finite differences and the adjoint identity ------------------ */

Test(engine_states, dinitial_states_match_central_differences_of_the_oracle)
{
    /* the engine's dinitial_states (f32) against central differences of the oracle's L in
     * each state element, with states given and at zero states (initial_states NULL) */
    enum { N = 2, C = 3, K = 4, T = 5 };
    for (int with_init = 0; with_init < 2; with_init++)
        for (int lay = 0; lay < 2; lay++) {
            const ws_layout l = lay ? WS_NLC : WS_NCL;
            const ws_conv_desc d = causal_desc(WS_CONV_BWD, C, K, 1, l, l, WS_F32, WS_F32, WS_F32, 0,
                                               WS_ACT_SILU);
            const oracle_conv_shape p = {N, C, C, C, K, 1, 1, K - 1, 0, T, olay(l), olay(l), 0,
                                         ORACLE_ACT_SILU};
            const size_t nx = N * C * T, ns = N * C * (K - 1);
            double *x = rand_pm1(nx, 500 + lay), *w = rand_pm1(C * K, 510), *b = rand_pm1(C, 520);
            double *dy = rand_pm1(nx, 530 + lay), *init = rand_pm1(ns, 540 + lay);
            if (!with_init)
                memset(init, 0, ns * sizeof *init);
            float *xs = pack(x, nx, WS_F32), *wsb = pack(w, C * K, WS_F32), *dys = pack(dy, nx, WS_F32);
            float *is = pack(init, ns, WS_F32), bf[C], *di = poisoned(ns * 4);
            for (int i = 0; i < C; i++)
                b[i] = bf[i] = (float)b[i];
            ws_err err = {{0}};
            ws_conv *plan = ws_conv_new(&d, wsb, bf, 1, &err);
            cr_assert(plan, "%s", err.msg);
            ws_conv_args a = {.n = N, .t_in = T, .x = xs, .dy = dys, .dinitial_states = di,
                              .initial_states = with_init ? is : NULL};
            cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s", err.msg);
            double *ybuf = malloc(nx * sizeof *ybuf);
            for (size_t i = 0; i < ns; i++) {
                const double h = 1e-5, v0 = init[i];
                init[i] = v0 + h;
                double lp = loss(&p, x, w, b, NULL, init, dy, ybuf);
                init[i] = v0 - h;
                double lm = loss(&p, x, w, b, NULL, init, dy, ybuf);
                init[i] = v0;
                double fd = (lp - lm) / (2 * h);
                cr_assert_leq(fabs(di[i] - fd), 1e-5 * (1 + fabs(fd)),
                              "%s init, %s: dinitial_states[%zu] = %.9g, central difference %.9g",
                              with_init ? "given" : "zero", lay ? "NLC" : "NCL", i, (double)di[i], fd);
            }
            /* the last state element reaches output 0 only through tap K-2 and so on: the
             * gradient is not all zeros */
            double mag = 0;
            for (size_t i = 0; i < ns; i++)
                mag += fabs(di[i]);
            cr_assert_gt(mag, 0.1);
            ws_conv_free(plan);
            free(x), free(w), free(b), free(dy), free(init), free(xs), free(wsb), free(dys), free(is);
            free(di), free(ybuf);
        }
}

Test(engine_states, dinitial_states_satisfy_the_adjoint_identity)
{
    /* 1. <dinitial_states, v> = d/dh L(initial_states + h v) at h = 0, L from the oracle
     *    (central difference in double), v random; with states and at zero states.
     * 2. act NONE, no bias: y is linear in (x, initial_states), so
     *    <y, dy> = <x, dx> + <initial_states, dinitial_states>, every term from the engine. */
    static const struct { int n, c, k, t; ws_layout l; ws_act act; } sh[] = {
        {2, 6, 4, 9, WS_NLC, WS_ACT_SILU}, {3, 5, 7, 3, WS_NCL, WS_ACT_GELU},
        {2, 20, 3, 40, WS_NCL, WS_ACT_SILU}, {1, 17, 8, 2, WS_NLC, WS_ACT_GELU},
    };
    for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++)
        for (int with_init = 0; with_init < 2; with_init++) {
            const int N = sh[s].n, C = sh[s].c, K = sh[s].k, T = sh[s].t;
            const size_t nx = (size_t)N * C * T, ns = (size_t)N * C * (K - 1);
            const ws_conv_desc d = causal_desc(WS_CONV_BWD, C, K, 1, sh[s].l, sh[s].l, WS_F32, WS_F32,
                                               WS_F32, 0, sh[s].act);
            const oracle_conv_shape p = {N, C, C, C, K, 1, 1, K - 1, 0, T, olay(sh[s].l),
                                         olay(sh[s].l), 0, (int)sh[s].act};
            double *x = rand_pm1(nx, 600 + s), *w = rand_pm1((size_t)C * K, 610 + s);
            double *b = rand_pm1(C, 620 + s), *dy = rand_pm1(nx, 630 + s);
            double *init = rand_pm1(ns, 640 + s), *v = rand_pm1(ns, 650 + s);
            if (!with_init)
                memset(init, 0, ns * sizeof *init);
            float *xs = pack(x, nx, WS_F32), *wsb = pack(w, (size_t)C * K, WS_F32);
            float *dys = pack(dy, nx, WS_F32), *is = pack(init, ns, WS_F32), *bf = malloc(C * 4);
            for (int i = 0; i < C; i++)
                b[i] = bf[i] = (float)b[i];
            float *di = poisoned(ns * 4);
            ws_err err = {{0}};
            ws_conv *plan = ws_conv_new(&d, wsb, bf, 2, &err);
            cr_assert(plan, "%s", err.msg);
            ws_conv_args a = {.n = N, .t_in = T, .x = xs, .dy = dys, .dinitial_states = di,
                              .initial_states = with_init ? is : NULL};
            cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s", err.msg);
            double lhs = 0;
            for (size_t i = 0; i < ns; i++)
                lhs += (double)di[i] * v[i];
            double *ybuf = malloc(nx * sizeof *ybuf), *ip = malloc(ns * sizeof *ip);
            const double h = 1e-6;
            for (size_t i = 0; i < ns; i++)
                ip[i] = init[i] + h * v[i];
            double lp = loss(&p, x, w, b, NULL, ip, dy, ybuf);
            for (size_t i = 0; i < ns; i++)
                ip[i] = init[i] - h * v[i];
            double lm = loss(&p, x, w, b, NULL, ip, dy, ybuf);
            double rhs = (lp - lm) / (2 * h);
            if (verbose())
                fprintf(stderr, "engine_states adjoint shape %zu %s: <dinit,v> %.9g  dL/dh %.9g\n", s,
                        with_init ? "states" : "zeros", lhs, rhs);
            cr_assert_leq(fabs(lhs - rhs), 1e-5 * (1 + fabs(rhs)),
                          "shape %zu (%s): <dinitial_states, v> %.12g, derivative of L along v %.12g", s,
                          with_init ? "states" : "zero states", lhs, rhs);
            ws_conv_free(plan);

            /* 2: linear, all engine */
            ws_conv_desc fd = causal_desc(WS_CONV_FWD, C, K, 1, sh[s].l, sh[s].l, WS_F32, WS_F32,
                                          WS_F32, 0, WS_ACT_NONE);
            ws_conv_desc bd = fd;
            bd.op = WS_CONV_BWD;
            ws_conv *f = ws_conv_new(&fd, wsb, NULL, 2, &err), *g = ws_conv_new(&bd, wsb, NULL, 2, &err);
            cr_assert(f && g, "%s", err.msg);
            float *y = poisoned(nx * 4), *dx = poisoned(nx * 4);
            ws_conv_args fa = {.n = N, .t_in = T, .x = xs, .y = y, .initial_states = is};
            ws_conv_args ga = {.n = N, .t_in = T, .x = xs, .dy = dys, .dx = dx, .initial_states = is,
                               .dinitial_states = di};
            cr_assert_eq(ws_conv_run(f, &fa, &err), 0, "%s", err.msg);
            cr_assert_eq(ws_conv_run(g, &ga, &err), 0, "%s", err.msg);
            double ydy = 0, xdx = 0, sds = 0;
            for (size_t i = 0; i < nx; i++)
                ydy += (double)y[i] * dys[i], xdx += (double)xs[i] * dx[i];
            for (size_t i = 0; i < ns; i++)
                sds += (double)is[i] * di[i];
            if (verbose())
                fprintf(stderr, "engine_states adjoint shape %zu: <y,dy> %.9g  <x,dx> + <s,ds> %.9g\n",
                        s, ydy, xdx + sds);
            cr_assert_leq(fabs(ydy - (xdx + sds)), 1e-5 * fabs(ydy),
                          "shape %zu: <y,dy> %.12g vs <x,dx> %.12g + <s,dinit> %.12g", s, ydy, xdx, sds);
            if (with_init)
                cr_assert_gt(fabs(sds), 1e-3 * fabs(ydy), "shape %zu: the states' term is nil", s);
            ws_conv_free(f), ws_conv_free(g);
            free(x), free(w), free(b), free(dy), free(init), free(v), free(xs), free(wsb), free(dys);
            free(is), free(bf), free(di), free(ybuf), free(ip), free(y), free(dx);
        }
}

/* --- the bit rule: chunks give the whole run's bits -------------------------------- */

/* the [N][C][t1-t0] slice of times [t0, t1) of src ([N][C][T] in layout l, elements of es
 * bytes), in layout l */
static void *slice_t(const void *src, ws_layout l, int N, int C, int T, int t0, int t1, size_t es)
{
    const int L = t1 - t0;
    char *dst = malloc((size_t)N * C * (L ? L : 1) * es);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int t = t0; t < t1; t++)
                memcpy(dst + ref_at(l, n, c, t - t0, C, L) * es, (const char *)src + ref_at(l, n, c, t, C, T) * es,
                       es);
    return dst;
}

/* one configuration: a whole run on the fast path (no states), the whole run again with
 * final_states, then chunks carrying the state in two buffers and in one (in place) */
static void chunked_vs_whole(ws_layout l, ws_dtype ty, ws_act act, int K, const int *cuts, int ncut,
                             uint64_t seed)
{
    enum { N = 2, C = 20 };
    const int T = cuts[ncut - 1];
    const ws_act pre = K % 2 ? act : WS_ACT_NONE;
    const int with_add = K % 2 == 0;
    const ws_conv_desc d = causal_desc(WS_CONV_FWD, C, K, 1, l, l, ty, ty, ty, pre, act);
    const size_t es = ref_tsize(ty), nx = (size_t)N * C * T, ns = (size_t)N * C * (K - 1);
    double *x = rand_pm1(nx, seed), *w = rand_pm1((size_t)C * K, seed + 1);
    double *b = rand_pm1(C, seed + 2), *add = rand_pm1(nx, seed + 3);
    void *xs = pack(x, nx, ty), *wsb = pack(w, (size_t)C * K, ty), *adds = pack(add, nx, ty);
    float bf[C];
    for (int i = 0; i < C; i++)
        bf[i] = (float)b[i];
    char what[96];
    snprintf(what, sizeof what, "%s %s act %d K %d", l == WS_NLC ? "NLC" : "NCL",
             ty == WS_F32 ? "f32" : ty == WS_F16 ? "f16" : "bf16", (int)act, K);
    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, wsb, bf, 2, &err);
    cr_assert(plan, "%s: %s", what, err.msg);
    void *y = poisoned(nx * es), *y2 = poisoned(nx * es), *fin = poisoned(ns * es + 1);
    ws_conv_args a = {.n = N, .t_in = T, .x = xs, .y = y, .add = with_add ? adds : NULL,
                      .add_batch_stride = (long long)C * T};
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s: %s", what, err.msg);
    a.y = y2;
    a.final_states = fin;
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s: %s", what, err.msg);
    cr_assert_eq(memcmp(y, y2, nx * es), 0, "%s: y with final_states differs from y without", what);

    for (int inplace = 0; inplace < 2; inplace++) {
        void *state = NULL, *one = poisoned(ns * es + 1);
        for (int i = 0; i < ncut; i++) {
            const int t0 = i ? cuts[i - 1] : 0, t1 = cuts[i], L = t1 - t0;
            void *xc = slice_t(xs, l, N, C, T, t0, t1, es), *ac = slice_t(adds, l, N, C, T, t0, t1, es);
            void *yc = poisoned((size_t)N * C * L * es);
            void *next = inplace ? one : poisoned(ns * es + 1);
            ws_conv_args ca = {.n = N, .t_in = L, .x = xc, .y = yc, .add = with_add ? ac : NULL,
                               .add_batch_stride = (long long)C * L, .initial_states = state,
                               .final_states = next};
            cr_assert_eq(ws_conv_run(plan, &ca, &err), 0, "%s: %s", what, err.msg);
            void *want = slice_t(y, l, N, C, T, t0, t1, es);
            for (size_t e = 0; e < (size_t)N * C * L; e++)
                cr_assert_eq(memcmp((char *)yc + e * es, (char *)want + e * es, es), 0,
                             "%s%s: chunk [%d, %d) y element %zu: %.9g, whole run %.9g", what,
                             inplace ? " (state in place)" : "", t0, t1, e, ref_get(yc, ty, e),
                             ref_get(want, ty, e));
            if (!inplace && state)
                free(state);
            state = next;
            free(xc), free(ac), free(yc), free(want);
        }
        cr_assert_eq(memcmp(state, fin, ns * es), 0, "%s%s: the last chunk's final_states differ from "
                     "the whole run's", what, inplace ? " (in place)" : "");
        if (!inplace)
            free(state);
        free(one);
    }
    if (verbose())
        fprintf(stderr, "engine_states chunked == whole: %s (%d chunks)\n", what, ncut);
    ws_conv_free(plan);
    free(x), free(w), free(b), free(add), free(xs), free(wsb), free(adds), free(y), free(y2), free(fin);
}

Test(engine_states, chunked_runs_give_the_bits_of_one_run)
{
    static const ws_layout lays[] = {WS_NCL, WS_NLC};
    static const ws_dtype tys[] = {WS_F32, WS_F16, WS_BF16};
    static const ws_act acts[] = {WS_ACT_NONE, WS_ACT_RELU, WS_ACT_GELU, WS_ACT_SILU};
    static const int ks[] = {2, 3, 4, 5, 6, 7, 8, 12}; /* 12: the direct kernel's (NCL) sums */
    uint64_t seed = 9000;
    for (int li = 0; li < 2; li++)
        for (int ti = 0; ti < 3; ti++)
            for (int ai = 0; ai < 4; ai++)
                for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                    const int K = ks[ki];
                    /* chunks shorter than K-1 (1, K-2), one of K-1, longer ones; 90 in all */
                    int cuts[8], nc = 0, t = 0;
                    const int lens[] = {1, K > 2 ? K - 2 : 2, 3, K - 1, 17, 1, 2};
                    for (int i = 0; i < 7; i++)
                        cuts[nc++] = t += lens[i];
                    cuts[nc++] = 90 > t ? 90 : t + 1;
                    chunked_vs_whole(lays[li], tys[ti], acts[ai], K, cuts, nc, seed++);
                }
}

Test(engine_states, chunked_runs_give_the_bits_of_one_run_past_the_blocks)
{
    /* the fast kernels' blocks (NLC: 64 times x 512 channels) and the state path's
     * (256 times x 16 channels) cut at other places: C 520, T 700, chunks 300 + 1 + 399 */
    static const int cuts[] = {300, 301, 700};
    chunked_vs_whole(WS_NLC, WS_F32, WS_ACT_SILU, 4, cuts, 3, 77);
    chunked_vs_whole(WS_NCL, WS_BF16, WS_ACT_GELU, 4, cuts, 3, 78);
}

/* --- packed sequences give the values of separate runs ------------------------------- */

static void packed_vs_separate(ws_layout l, ws_dtype ty, ws_act act, int K, int D, uint64_t seed)
{
    enum { N = 3, C = 19, T = 83 };
    const ws_conv_desc fd = causal_desc(WS_CONV_FWD, C, K, D, l, l, ty, ty, ty, WS_ACT_NONE, act);
    ws_conv_desc bd = fd;
    bd.op = WS_CONV_BWD;
    const size_t es = ref_tsize(ty), nx = (size_t)N * C * T;
    double *x = rand_pm1(nx, seed), *w = rand_pm1((size_t)C * K, seed + 1);
    double *b = rand_pm1(C, seed + 2), *add = rand_pm1(nx, seed + 3), *dy = rand_pm1(nx, seed + 4);
    void *xs = pack(x, nx, ty), *wsb = pack(w, (size_t)C * K, ty), *adds = pack(add, nx, ty);
    void *dys = pack(dy, nx, ty);
    float bf[C];
    for (int i = 0; i < C; i++)
        bf[i] = (float)b[i];
    int32_t *seq = make_seq(N, T, K * D, seed + 5);
    char what[96];
    snprintf(what, sizeof what, "%s %s act %d K %d D %d", l == WS_NLC ? "NLC" : "NCL",
             ty == WS_F32 ? "f32" : ty == WS_F16 ? "f16" : "bf16", (int)act, K, D);
    ws_err err = {{0}};
    ws_conv *f = ws_conv_new(&fd, wsb, bf, 2, &err), *g = ws_conv_new(&bd, wsb, bf, 2, &err);
    cr_assert(f && g, "%s: %s", what, err.msg);
    void *y = poisoned(nx * es), *dx = poisoned(nx * es);
    float dw[C * 16], db[C];
    ws_conv_args a = {.n = N, .t_in = T, .x = xs, .y = y, .add = adds,
                      .add_batch_stride = (long long)C * T, .seq_idx = seq};
    cr_assert_eq(ws_conv_run(f, &a, &err), 0, "%s: %s", what, err.msg);
    ws_conv_args ga = {.n = N, .t_in = T, .x = xs, .dy = dys, .dx = dx, .dw = dw, .db = db,
                       .seq_idx = seq};
    cr_assert_eq(ws_conv_run(g, &ga, &err), 0, "%s: %s", what, err.msg);

    double sdw[C * 16] = {0}, sdb[C] = {0};
    int runs = 0, padded = 0;
    for (int n = 0; n < N; n++)
        for (int t0 = 0; t0 < T;) {
            const int32_t id = seq[(size_t)n * T + t0];
            int t1 = t0 + 1;
            while (t1 < T && seq[(size_t)n * T + t1] == id)
                t1++;
            if (id < 0) { /* padding: y and dx 0 exactly (all bits) */
                for (int c = 0; c < C; c++)
                    for (int t = t0; t < t1; t++) {
                        size_t i = ref_at(l, n, c, t, C, T);
                        for (size_t q = 0; q < es; q++)
                            cr_assert_eq(((unsigned char *)y)[i * es + q], 0, "%s: padding y not +0", what);
                        cr_assert_eq(ref_get(dx, ty, i), 0.0, "%s: padding dx %g", what, ref_get(dx, ty, i));
                    }
                padded++;
                t0 = t1;
                continue;
            }
            /* the run [t0, t1) of item n alone: the ordinary call, no seq_idx. (ids
             * increase, so a run is all of its sequence) */
            const int L = t1 - t0;
            void *xn = slice_t((const char *)xs + (size_t)n * C * T * es, l, 1, C, T, t0, t1, es);
            void *an = slice_t((const char *)adds + (size_t)n * C * T * es, l, 1, C, T, t0, t1, es);
            void *dn = slice_t((const char *)dys + (size_t)n * C * T * es, l, 1, C, T, t0, t1, es);
            void *yn = poisoned((size_t)C * L * es), *dxn = poisoned((size_t)C * L * es);
            float dwn[C * 16], dbn[C];
            ws_conv_args sa = {.n = 1, .t_in = L, .x = xn, .y = yn, .add = an};
            ws_conv_args sg = {.n = 1, .t_in = L, .x = xn, .dy = dn, .dx = dxn, .dw = dwn, .db = dbn};
            cr_assert_eq(ws_conv_run(f, &sa, &err), 0, "%s: %s", what, err.msg);
            cr_assert_eq(ws_conv_run(g, &sg, &err), 0, "%s: %s", what, err.msg);
            for (int c = 0; c < C; c++)
                for (int t = t0; t < t1; t++) {
                    size_t ip = ref_at(l, n, c, t, C, T), is = ref_at(l, 0, c, t - t0, C, L);
                    cr_assert_eq(memcmp((char *)y + ip * es, (char *)yn + is * es, es), 0,
                                 "%s: item %d sequence [%d, %d) y[c %d, t %d] %.9g, alone %.9g", what, n,
                                 t0, t1, c, t, ref_get(y, ty, ip), ref_get(yn, ty, is));
                    double gp = ref_get(dx, ty, ip), gs = ref_get(dxn, ty, is);
                    cr_assert_leq(fabs(gp - gs), (ty == WS_F32 ? 1e-6 : 1e-2) * (1 + fabs(gs)),
                                  "%s: item %d sequence [%d, %d) dx[c %d, t %d] %.9g, alone %.9g", what,
                                  n, t0, t1, c, t, gp, gs);
                }
            for (int i = 0; i < C * K; i++)
                sdw[i] += dwn[i];
            for (int i = 0; i < C; i++)
                sdb[i] += dbn[i];
            runs++;
            free(xn), free(an), free(dn), free(yn), free(dxn);
            t0 = t1;
        }
    cr_assert_gt(runs, N);
    cr_assert_gt(padded, 0, "%s: the pattern has no padding", what);
    /* dw, db: the packed sums against the separate runs' sums (other orders: float32 bounds) */
    expect_close(what, "dw", dw, sdw, (size_t)C * K, WS_F32);
    expect_close(what, "db", db, sdb, C, WS_F32);
    ws_conv_free(f), ws_conv_free(g);
    free(x), free(w), free(b), free(add), free(dy), free(xs), free(wsb), free(adds), free(dys);
    free(seq), free(y), free(dx);
}

Test(engine_states, packed_sequences_give_the_values_of_separate_runs)
{
    static const struct { ws_layout l; ws_dtype ty; ws_act act; int k, d; } cfg[] = {
        {WS_NLC, WS_F32, WS_ACT_SILU, 4, 1}, {WS_NCL, WS_F32, WS_ACT_SILU, 4, 1},
        {WS_NLC, WS_BF16, WS_ACT_GELU, 2, 1}, {WS_NCL, WS_F16, WS_ACT_RELU, 8, 1},
        {WS_NLC, WS_F32, WS_ACT_NONE, 3, 2}, {WS_NCL, WS_F32, WS_ACT_GELU, 5, 3},
        {WS_NCL, WS_BF16, WS_ACT_SILU, 12, 1}, {WS_NLC, WS_F16, WS_ACT_SILU, 7, 1},
    };
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++)
        packed_vs_separate(cfg[i].l, cfg[i].ty, cfg[i].act, cfg[i].k, cfg[i].d, 700 + 10 * i);
}

Test(engine_states, dinitial_states_alone_is_a_backward_call)
{
    /* BWD asking for dinitial_states only (no dx, dw, db) is accepted and writes only it */
    enum { N = 1, C = 4, K = 3, T = 6 };
    const ws_conv_desc d = causal_desc(WS_CONV_BWD, C, K, 1, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0,
                                       WS_ACT_NONE);
    float w[C * K], x[N * T * C], dy[N * T * C], di[N * C * (K - 1)];
    for (int i = 0; i < C * K; i++)
        w[i] = (float)(i + 1);
    for (int i = 0; i < N * T * C; i++)
        x[i] = 1.0f, dy[i] = 0.0f;
    /* dy = 1 at t = 0 of channel 1 only: dinit[1][j] = w[1][j] (output 0 reads state j,
     * position j-(K-1), through tap k = j) */
    dy[0 * C + 1] = 1.0f;
    memset(di, 0xff, sizeof di);
    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, w, NULL, 1, &err);
    cr_assert(plan, "%s", err.msg);
    ws_conv_args a = {.n = N, .t_in = T, .x = x, .dy = dy, .dinitial_states = di};
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s", err.msg);
    for (int c = 0; c < C; c++)
        for (int j = 0; j < K - 1; j++) {
            float want = c == 1 ? w[c * K + j] : 0.0f;
            cr_assert_eq(di[c * (K - 1) + j], want, "dinit[%d][%d] = %g, want %g", c, j,
                         (double)di[c * (K - 1) + j], (double)want);
        }
    ws_conv_free(plan);
}

/* --- refusals ------------------------------------------------------------------------ */

static int names_word(const char *msg, const char *word)
{
    size_t L = strlen(word);
    for (const char *p = msg; (p = strstr(p, word)); p++) {
        int before = p == msg || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = !(isalnum((unsigned char)p[L]) || p[L] == '_');
        if (before && after)
            return 1;
    }
    return 0;
}

Test(engine_states, refusals_name_the_fields_and_write_nothing)
{
    enum { N = 2, C = 8, K = 4, T = 12 };
    const ws_conv_desc cf = causal_desc(WS_CONV_FWD, C, K, 1, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0,
                                        WS_ACT_SILU);
    ws_conv_desc cb = cf, dense = cf, padr = cf, strided = cf, shortpad = cf, grouped = cf, dil2 = cf;
    cb.op = WS_CONV_BWD;
    dense.groups = 1;
    padr.pad_r = 1;
    strided.stride = 2;
    shortpad.pad_l = K - 2;
    grouped.groups = 2;
    dil2.dilation = 2, dil2.pad_l = 2 * (K - 1);
    ws_conv_desc dil2b = dil2, denseb = dense, padrb = padr;
    dil2b.op = denseb.op = padrb.op = WS_CONV_BWD;
    const ws_conv_desc *descs[] = {&cf, &cb, &dense, &padr, &strided, &shortpad, &grouped, &dil2, &dil2b,
                                   &denseb, &padrb};
    ws_conv *pl[11];
    ws_err err = {{0}};
    float *w = calloc(C * C * K, sizeof *w), *x = calloc(N * C * T, sizeof *x);
    float *dy = calloc(N * C * T, sizeof *dy), *st = calloc(N * C * K, sizeof *st);
    int32_t *seq = calloc(N * T, sizeof *seq);
    for (int i = 0; i < 11; i++) {
        pl[i] = ws_conv_new(descs[i], w, NULL, 1, &err);
        cr_assert(pl[i], "plan %d: %s", i, err.msg);
    }
    const size_t ny = (size_t)N * C * T * 4, nsb = (size_t)N * C * (K - 1) * 4;
    float *y = poisoned(ny), *dx = poisoned(ny), *dw = poisoned(C * C * K * 4), *db = poisoned(C * 4);
    float *fin = poisoned(nsb), *di = poisoned(nsb);
    enum { P_CF, P_CB, P_DENSE, P_PADR, P_STRIDED, P_SHORTPAD, P_GROUPED, P_DIL2, P_DIL2B, P_DENSEB,
           P_PADRB };
#define FWD_ARGS .n = N, .t_in = T, .x = x, .y = y
#define BWD_ARGS .n = N, .t_in = T, .x = x, .dy = dy, .dx = dx, .dw = dw, .db = db
    struct { const char *what, *fields; int plan; ws_conv_args a; } bad[] = {
        {"seq_idx on a dense descriptor", "seq_idx", P_DENSE, {FWD_ARGS, .seq_idx = seq}},
        {"initial_states on a dense descriptor", "initial_states", P_DENSE, {FWD_ARGS, .initial_states = st}},
        {"final_states on a dense descriptor", "final_states", P_DENSE, {FWD_ARGS, .final_states = fin}},
        {"dinitial_states on a dense descriptor", "dinitial_states", P_DENSEB,
         {BWD_ARGS, .dinitial_states = di}},
        {"seq_idx with pad_r 1", "seq_idx", P_PADR, {FWD_ARGS, .seq_idx = seq}},
        {"initial_states with pad_r 1", "initial_states", P_PADR, {FWD_ARGS, .initial_states = st}},
        {"final_states with pad_r 1", "final_states", P_PADR, {FWD_ARGS, .final_states = fin}},
        {"dinitial_states with pad_r 1", "dinitial_states", P_PADRB, {BWD_ARGS, .dinitial_states = di}},
        {"seq_idx with stride 2", "seq_idx", P_STRIDED, {FWD_ARGS, .seq_idx = seq}},
        {"initial_states with pad_l k-2", "initial_states", P_SHORTPAD, {FWD_ARGS, .initial_states = st}},
        {"final_states with groups 2", "final_states", P_GROUPED, {FWD_ARGS, .final_states = fin}},
        {"initial_states with dilation 2", "initial_states dilation", P_DIL2,
         {FWD_ARGS, .initial_states = st}},
        {"final_states with dilation 2", "final_states dilation", P_DIL2, {FWD_ARGS, .final_states = fin}},
        {"dinitial_states with dilation 2", "dinitial_states dilation", P_DIL2B,
         {BWD_ARGS, .dinitial_states = di}},
        {"seq_idx and initial_states", "seq_idx initial_states", P_CF,
         {FWD_ARGS, .seq_idx = seq, .initial_states = st}},
        {"seq_idx and final_states", "seq_idx final_states", P_CF,
         {FWD_ARGS, .seq_idx = seq, .final_states = fin}},
        {"seq_idx and dinitial_states", "seq_idx dinitial_states", P_CB,
         {BWD_ARGS, .seq_idx = seq, .dinitial_states = di}},
        {"final_states in BWD", "final_states", P_CB, {BWD_ARGS, .final_states = fin}},
        {"dinitial_states in FWD", "dinitial_states", P_CF, {FWD_ARGS, .dinitial_states = di}},
    };
#undef FWD_ARGS
#undef BWD_ARGS
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        cr_assert_eq(ws_conv_run(pl[bad[i].plan], &bad[i].a, &err), -1, "%s: accepted", bad[i].what);
        cr_assert(err.msg[0] && !strchr(err.msg, '\n'), "%s: \"%s\"", bad[i].what, err.msg);
        char buf[96];
        snprintf(buf, sizeof buf, "%s", bad[i].fields);
        for (char *f = strtok(buf, " "); f; f = strtok(NULL, " "))
            cr_assert(names_word(err.msg, f), "%s: \"%s\" does not name %s", bad[i].what, err.msg, f);
        if (verbose())
            fprintf(stderr, "engine_states refusal %-38s %s\n", bad[i].what, err.msg);
        cr_assert(all_ff(y, ny) && all_ff(dx, ny) && all_ff(dw, C * C * K * 4) && all_ff(db, C * 4) &&
                      all_ff(fin, nsb) && all_ff(di, nsb),
                  "%s: an output was written", bad[i].what);
    }
    /* the same fields on the depthwise causal plans run */
    ws_conv_args ok = {.n = N, .t_in = T, .x = x, .y = y, .initial_states = st, .final_states = fin};
    cr_assert_eq(ws_conv_run(pl[P_CF], &ok, &err), 0, "%s", err.msg);
    ws_conv_args ok2 = {.n = N, .t_in = T, .x = x, .y = y, .seq_idx = seq};
    ws_conv *dil = ws_conv_new(&dil2, w, NULL, 1, &err); /* seq_idx with dilation 2: allowed */
    cr_assert(dil, "%s", err.msg);
    cr_assert_eq(ws_conv_run(dil, &ok2, &err), 0, "%s", err.msg);
    ws_conv_free(dil);
    for (int i = 0; i < 11; i++)
        ws_conv_free(pl[i]);
    free(w), free(x), free(dy), free(st), free(seq), free(y), free(dx), free(dw), free(db), free(fin);
    free(di);
}

Test(engine_states, a_state_size_that_overflows_is_refused)
{
    /* N*C*(K-1) state elements past 2^63 bytes, with x and w of sizes that fit: refused by
     * the argument check before anything is read (the plan holds no weights: none made) */
    const int C = 1 << 30, K = 1 << 30;
    ws_conv_desc d = causal_desc(WS_CONV_FWD, C, K, 1, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, 0, 0);
    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, NULL, NULL, 1, &err);
    cr_assert(plan, "%s", err.msg);
    float dummy[4] = {0}, *y = poisoned(16);
    ws_conv_args a = {.n = 16, .t_in = 1, .x = dummy, .w = dummy, .y = y, .initial_states = dummy};
    cr_assert_eq(ws_conv_run(plan, &a, &err), -1, "accepted");
    cr_assert(names_word(err.msg, "initial_states") && strstr(err.msg, "overflow"), "%s", err.msg);
    if (verbose())
        fprintf(stderr, "engine_states refusal %-38s %s\n", "state size overflow", err.msg);
    cr_assert(all_ff(y, 16), "y was written");
    ws_conv_free(plan);
    free(y);
}

/* test_engine.c - the conv engine's CPU backend (include/ws_conv.h) against the
 * float64 oracle (tests/oracle.c, written apart from src/), and falsifiers that do
 * not share the oracle's assumptions.
 *
 * Only the public header is included: the engine is tested as its callers see it.
 * One table of descriptors holds every client shape of docs/conv-engine.md, scaled down
 * (Whisper, wav2vec2, DAC, Mamba, VQ-VAE) and the edges (T_out = 1, K = 1 and 16,
 * odd channels, stride > K, groups 2 and 4, asymmetric pads, f16 and bf16 storage).
 * Each is run forward, and backward where the contract allows (pre NONE, no add),
 * with inputs drawn uniform in [-1, 1] and packed into the descriptor's layouts and
 * types by this file's own index formulas.
 *
 * Tolerances:
 * - float32 storage: rel L2 <= 1e-5 (docs/spec.md's fp32 bound) and max |err| <= 1e-4 of
 *   the largest |value|: the engine sums in float32, at most ~1100 terms here (dw over
 *   N*T_out), each rounded at 2^-24; measured worst rel L2 3e-7.
 * - f16 / bf16 storage: the oracle gets the inputs as rounded to the storage type,
 *   so what is left is the rounding of the stored output (half an ulp: 2^-11 for
 *   f16, 2^-8 for bf16, relative) plus float32 sums; rel L2 <= 1e-2 bounds that.
 *   Outputs kept in float32 (dw, db) keep the float32 bounds.
 * - the oracle's backward against central differences of its own forward (double,
 *   h = 1e-5): truncation ~h^2 and cancellation ~1e-16 / h, so 1e-6.
 * - the adjoint identity, both sides from the engine, compared in double: float32
 *   sums over at most a few hundred terms, so relative 1e-5 (measured <= 1e-6).
 * Set WS_TEST_VERBOSE=1 for one line per comparison with the errors seen.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ws_conv.h>

#include "helpers.h"
#include "oracle.h"

/* --- random numbers, storage types, layouts (this file's own) -------------- */

typedef struct { uint64_t s; } trng;

/* splitmix64, mapped to [-1, 1). */
static double trng_pm1(trng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static double *rand_pm1(size_t n, uint64_t seed)
{
    trng r = {seed * 0x2545f4914f6cdd1dULL + 1};
    double *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = trng_pm1(&r);
    return a;
}


/* v is logical [N][C][T]; returns it stored in layout l and type ty, and replaces v
 * by the stored (rounded) values so that the oracle sees what the engine sees. */
static void *pack(double *v, int N, int C, int T, ws_layout l, ws_dtype ty)
{
    void *buf = malloc((size_t)N * C * T * ref_tsize(ty));
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < T; t++) {
                size_t i = ((size_t)n * C + c) * T + t;
                v[i] = ref_put(buf, ty, ref_at(l, n, c, t, C, T), v[i]);
            }
    return buf;
}

/* buf in layout l and type ty, returned as logical [N][C][T] floats (exact). */
static float *unpack(const void *buf, int N, int C, int T, ws_layout l, ws_dtype ty)
{
    float *v = malloc((size_t)N * C * T * sizeof *v);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < T; t++)
                v[((size_t)n * C + c) * T + t] = (float)ref_get(buf, ty, ref_at(l, n, c, t, C, T));
    return v;
}

static float *to_float(const double *v, size_t n)
{
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (float)v[i];
    return f;
}

/* A NaN byte pattern over an output, so that an unwritten element shows. */
static void *poisoned(size_t bytes)
{
    void *p = malloc(bytes);
    memset(p, 0xff, bytes);
    return p;
}

static int all_ff(const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        if (((const unsigned char *)p)[i] != 0xff)
            return 0;
    return 1;
}

/* The errors seen, one line per comparison, when WS_TEST_VERBOSE is set. */
static int verbose(void)
{
    const char *v = getenv("WS_TEST_VERBOSE");
    return v && *v && strcmp(v, "0");
}

/* --- the table ---------------------------------------------------------------- */

enum { ADD_NONE, ADD_BROADCAST, ADD_PER_ITEM, ADD_INPUT };

typedef struct {
    char name[40];
    int n, c_in, c_out, groups, k, stride, dilation, pad_l, pad_r, t_in;
    ws_layout xl, yl;
    ws_dtype xt, wt, yt;
    ws_act pre, act;
    int bias;     /* a bias */
    int add;      /* ADD_*: ADD_INPUT is add = x (K1 S1 P0, same layout and type) */
    int bwd;      /* also run as a BWD descriptor */
    int per_call; /* w and b given per call instead of to ws_conv_new */
} eng_case;

#define F32 WS_F32, WS_F32, WS_F32
static const eng_case cases[] = {
    /* Whisper conv1 / conv2 (n_mels 8, d 12): K3 S1 / S2 P1 GELU; conv2 adds the positional
     * table, one for every item, time-major out */
    {"whisper_conv1", 2, 8, 12, 1, 3, 1, 1, 1, 1, 30, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0, 1, 0},
    {"whisper_conv2_pos", 2, 12, 12, 1, 3, 2, 1, 1, 1, 30, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1,
     ADD_BROADCAST, 0, 1},
    /* wav2vec2 feature encoder: K10 S5 from the waveform, then K3 S2; GELU */
    {"wav2vec2_k10_s5", 3, 1, 16, 1, 10, 5, 1, 0, 0, 203, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0, 1, 0},
    {"wav2vec2_k3_s2", 2, 16, 16, 1, 3, 2, 1, 0, 0, 41, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0, 1, 1},
    /* DAC downsampler K16 S8 P4 */
    {"dac_k16_s8_p4", 2, 8, 16, 1, 16, 8, 1, 4, 4, 96, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0, 1, 0},
    /* Mamba: depthwise causal K4, SILU or none, NLC and NCL */
    {"mamba_nlc_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, 1, 0},
    {"mamba_ncl_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0, 1, 1},
    {"mamba_nlc_none", 3, 20, 20, 20, 4, 1, 1, 3, 0, 33, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 0, 0, 1, 0},
    {"mamba_k2_nlc_silu", 1, 9, 9, 9, 2, 1, 1, 1, 0, 17, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, 1, 0},
    /* VQ-VAE ResConv1D: K3 dilation 3 and 9, P = D, pre RELU, act RELU; then K1 + the input */
    {"vqvae_d3_relu", 2, 16, 16, 1, 3, 1, 3, 3, 3, 40, WS_NCL, WS_NCL, F32, WS_ACT_RELU, WS_ACT_RELU, 1, 0, 0, 0},
    {"vqvae_d9_relu", 2, 16, 16, 1, 3, 1, 9, 9, 9, 40, WS_NCL, WS_NCL, F32, WS_ACT_RELU, WS_ACT_RELU, 1, 0, 0, 1},
    {"vqvae_d9_relu_bwd", 2, 16, 16, 1, 3, 1, 9, 9, 9, 40, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0, 1, 0},
    {"vqvae_k1_add_input", 2, 16, 16, 1, 1, 1, 1, 0, 0, 40, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1,
     ADD_INPUT, 0, 0},
    {"vqvae_k1_add_input_nlc", 3, 10, 10, 1, 1, 1, 1, 0, 0, 21, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 1,
     ADD_INPUT, 0, 1},
    /* edges */
    {"t_out_1", 2, 5, 3, 1, 5, 1, 1, 0, 0, 5, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0, 1, 0},
    {"t_out_1_stride", 1, 4, 6, 2, 3, 4, 2, 1, 0, 4, WS_NLC, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0, 1, 1},
    {"k1_dense", 2, 7, 5, 1, 1, 1, 1, 0, 0, 19, WS_NCL, WS_NLC, F32, 0, WS_ACT_SILU, 1, ADD_PER_ITEM, 0, 0},
    {"k1_bwd", 2, 7, 5, 1, 1, 1, 1, 0, 0, 19, WS_NLC, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0, 1, 0},
    {"k16_same_length", 2, 5, 6, 1, 16, 1, 1, 7, 8, 29, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0, 1, 1},
    {"odd_channels_nlc_to_ncl", 2, 7, 9, 1, 3, 1, 1, 1, 1, 23, WS_NLC, WS_NCL, F32, 0, WS_ACT_GELU, 1,
     ADD_PER_ITEM, 0, 0},
    {"odd_channels_bwd", 3, 7, 9, 1, 3, 1, 1, 1, 1, 23, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0, 1, 1},
    {"stride_5_over_k2", 2, 6, 4, 1, 2, 5, 1, 0, 0, 31, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0, 1, 0},
    {"groups2", 2, 8, 6, 2, 3, 1, 1, 1, 1, 25, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0, 1, 0},
    {"groups4_s2_d2_asym", 2, 12, 8, 4, 5, 2, 2, 2, 3, 27, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, 1, 1},
    {"groups4_out_mult2", 2, 4, 8, 4, 3, 1, 1, 1, 1, 15, WS_NCL, WS_NLC, F32, 0, WS_ACT_NONE, 1, 0, 1, 0},
    {"groups2_c32_sgemm_blocks", 1, 32, 48, 2, 3, 1, 2, 2, 1, 600, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1,
     ADD_PER_ITEM, 0, 0},
    {"asym_pad_0_4", 2, 6, 5, 1, 4, 3, 1, 0, 4, 26, WS_NLC, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0, 1, 0},
    {"asym_pad_5_1", 1, 3, 4, 1, 3, 2, 2, 5, 1, 14, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 0, 0, 1, 1},
    {"dilation_larger_than_input", 1, 4, 4, 1, 3, 1, 7, 7, 7, 6, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0, 1, 0},
    /* past one block of output times (1024) and many NLC transpose blocks */
    {"long_t_depthwise_nlc", 1, 8, 8, 8, 4, 1, 1, 3, 0, 1100, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, 1, 0},
    {"long_t_dense_ncl", 1, 4, 8, 1, 3, 1, 1, 1, 1, 1100, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0, 1, 1},
    /* depthwise channel-last past one block of channels (512) and of times (64); K 8;
     * strided and dilated with pre and add; half storage */
    {"mamba_c520_k8_nlc", 1, 520, 520, 520, 8, 1, 1, 7, 0, 130, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0, 1, 0},
    {"dw_nlc_s2_d2_pre_gelu_add_bf16", 2, 33, 33, 33, 3, 2, 2, 4, 1, 150, WS_NLC, WS_NLC, WS_BF16, WS_F32,
     WS_BF16, WS_ACT_GELU, WS_ACT_RELU, 1, ADD_PER_ITEM, 0, 1},
    {"dw_nlc_causal_pre_silu_f16", 2, 40, 40, 40, 4, 1, 1, 3, 0, 90, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16,
     WS_ACT_SILU, WS_ACT_GELU, 1, ADD_BROADCAST, 0, 0},
    {"dw_nlc_stride3_f32", 3, 17, 17, 17, 5, 3, 1, 2, 2, 200, WS_NLC, WS_NLC, F32, WS_ACT_RELU, WS_ACT_NONE, 0,
     ADD_PER_ITEM, 0, 0},
    /* storage types */
    {"f16_whisper_conv2_pos", 2, 12, 12, 1, 3, 2, 1, 1, 1, 30, WS_NCL, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_GELU, 1, ADD_BROADCAST, 0, 0},
    {"bf16_whisper_conv2_pos", 2, 12, 12, 1, 3, 2, 1, 1, 1, 30, WS_NCL, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     0, WS_ACT_GELU, 1, ADD_BROADCAST, 0, 1},
    {"f16_mamba_nlc_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_SILU, 1, 0, 1, 0},
    {"bf16_mamba_ncl_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_SILU, 1, 0, 1, 1},
    {"mixed_bf16_x_f32_w_f16_y", 2, 8, 6, 2, 3, 2, 1, 1, 2, 21, WS_NLC, WS_NCL, WS_BF16, WS_F32, WS_F16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM, 0, 0},
    {"mixed_f32_x_bf16_w_f32_y_bwd", 2, 8, 6, 2, 3, 2, 1, 1, 2, 21, WS_NCL, WS_NLC, WS_F32, WS_BF16, WS_F32,
     0, WS_ACT_GELU, 1, 0, 1, 0},
    {"f16_vqvae_k1_add_input", 2, 16, 16, 1, 1, 1, 1, 0, 0, 40, WS_NCL, WS_NCL, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_NONE, 1, ADD_INPUT, 0, 0},
    {"bf16_vqvae_d3_relu", 2, 16, 16, 1, 3, 1, 3, 3, 3, 40, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     WS_ACT_RELU, WS_ACT_RELU, 1, 0, 0, 0},
};
#undef F32
enum { N_CASES = sizeof cases / sizeof cases[0] };

static ws_conv_desc desc_of(const eng_case *c, ws_conv_op op)
{
    ws_conv_desc d = {.op = op, .c_in = c->c_in, .c_out = c->c_out, .groups = c->groups, .k = c->k,
                      .stride = c->stride, .dilation = c->dilation, .pad_l = c->pad_l,
                      .pad_r = c->pad_r, .x_layout = c->xl, .y_layout = c->yl, .x_type = c->xt,
                      .w_type = c->wt, .y_type = c->yt, .math = WS_MATH_F32,
                      .pre = op == WS_CONV_FWD ? c->pre : WS_ACT_NONE, .act = c->act};
    return d;
}

static oracle_conv_shape shape_of(const eng_case *c, ws_conv_op op)
{
    oracle_conv_shape p = {c->n, c->c_in, c->c_out, c->groups, c->k, c->stride, c->dilation,
                           c->pad_l, c->pad_r, c->t_in, ORACLE_NCL, ORACLE_NCL,
                           op == WS_CONV_FWD ? (int)c->pre : ORACLE_ACT_NONE, (int)c->act};
    return p;
}

/* Compares got (logical order) with the oracle: float32 bounds for float32 storage,
 * 1e-2 rel L2 for f16/bf16 storage (header comment). Prints the errors seen. */
static void expect_close(const eng_case *c, const char *what, const float *got, const double *want,
                         size_t n, ws_dtype stored)
{
    double rl = rel_l2(got, want, n), ma = max_abs_err(got, want, n), scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(want[i]));
    if (verbose())
        fprintf(stderr, "engine %-30s %-3s rel L2 %.2e  max |err| %.2e  (max |want| %.3g)\n", c->name, what,
            rl, ma, scale);
    if (stored == WS_F32) {
        cr_assert_leq(rl, 1e-5, "%s %s: rel L2 %.3g > 1e-5", c->name, what, rl);
        assert_close(what, got, want, n, 1e-4 * scale, 0.0);
    } else {
        cr_assert_leq(rl, 1e-2, "%s %s: rel L2 %.3g > 1e-2 (%s storage)", c->name, what, rl,
                      stored == WS_F16 ? "f16" : "bf16");
    }
}

/* --- forward against the oracle ---------------------------------------------- */

static void free_params(struct criterion_test_params *p) { cr_free(p->params); }

/* The indices into cases[] of the rows whose int at flag_offset is set (all rows: all),
 * in Criterion's shared memory. */
static struct criterion_test_params case_params(size_t flag_offset, int all)
{
    size_t n = 0;
    for (int i = 0; i < N_CASES; i++)
        n += all || *(const int *)((const char *)&cases[i] + flag_offset);
    int *idx = cr_malloc(sizeof(int) * n);
    n = 0;
    for (int i = 0; i < N_CASES; i++)
        if (all || *(const int *)((const char *)&cases[i] + flag_offset))
            idx[n++] = i;
    return cr_make_param_array(int, idx, n, free_params);
}

ParameterizedTestParameters(engine, forward_matches_the_oracle_for_every_table_descriptor)
{
    return case_params(0, 1);
}

ParameterizedTest(int *ci, engine, forward_matches_the_oracle_for_every_table_descriptor)
{
    const eng_case *c = &cases[*ci];
    const ws_conv_desc d = desc_of(c, WS_CONV_FWD);
    const oracle_conv_shape p = shape_of(c, WS_CONV_FWD);
    const int cg = c->c_in / c->groups, t_out = ws_conv_out_len(&d, c->t_in);
    cr_assert_eq(t_out, oracle_conv_out_len(&p), "%s: ws_conv_out_len %d", c->name, t_out);
    cr_assert_gt(t_out, 0, "%s", c->name);
    const size_t nx = (size_t)c->n * c->c_in * c->t_in, nw = (size_t)c->c_out * cg * c->k;
    const size_t ny = (size_t)c->n * c->c_out * t_out;

    uint64_t seed = 1000 + (uint64_t)*ci * 10;
    double *x = rand_pm1(nx, seed), *w = rand_pm1(nw, seed + 1), *b = rand_pm1(c->c_out, seed + 2);
    void *xs = pack(x, c->n, c->c_in, c->t_in, c->xl, c->xt);
    void *ws = pack(w, 1, 1, (int)nw, WS_NCL, c->wt);
    float *bf = to_float(b, c->c_out);
    for (int o = 0; o < c->c_out; o++)
        b[o] = bf[o];

    double *add = NULL;
    const void *adds = NULL;
    void *add_owned = NULL;
    long long add_stride = 0;
    if (c->add == ADD_BROADCAST || c->add == ADD_PER_ITEM) {
        int items = c->add == ADD_PER_ITEM ? c->n : 1;
        add = rand_pm1((size_t)items * c->c_out * t_out, seed + 3);
        adds = add_owned = pack(add, items, c->c_out, t_out, c->yl, c->yt);
        add_stride = c->add == ADD_PER_ITEM ? (long long)c->c_out * t_out : 0;
    } else if (c->add == ADD_INPUT) {
        cr_assert(c->k == 1 && c->stride == 1 && c->c_in == c->c_out && c->xl == c->yl && c->xt == c->yt);
        add = x;
        adds = xs;
        add_stride = (long long)c->c_in * c->t_in; /* one item */
    }

    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, c->per_call ? NULL : ws, c->per_call || !c->bias ? NULL : bf, 2, &err);
    cr_assert(plan, "%s: ws_conv_new: %s", c->name, err.msg);
    void *y = poisoned(ny * ref_tsize(c->yt));
    ws_conv_args a = {.n = c->n, .t_in = c->t_in, .x = xs, .w = c->per_call ? ws : NULL,
                      .b = c->per_call && c->bias ? bf : NULL, .add = adds,
                      .add_batch_stride = add_stride, .y = y};
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s: ws_conv_run: %s", c->name, err.msg);

    double *want = malloc(ny * sizeof *want);
    cr_assert_eq(oracle_conv1d_fwd(&p, x, w, c->bias ? b : NULL, add, add_stride, want), t_out);
    float *got = unpack(y, c->n, c->c_out, t_out, c->yl, c->yt);
    expect_close(c, "y", got, want, ny, c->yt);

    ws_conv_free(plan);
    free(x), free(w), free(b), free(bf), free(xs), free(ws), free(add_owned), free(y), free(want), free(got);
    if (c->add != ADD_INPUT)
        free(add);
}

/* --- backward against the oracle --------------------------------------------- */

ParameterizedTestParameters(engine, backward_matches_the_oracle_for_every_table_descriptor)
{
    return case_params(offsetof(eng_case, bwd), 0);
}

enum { WANT_DX = 1, WANT_DW = 2, WANT_DB = 4 };

/* One BWD run asking for the outputs in `want`, each compared with the oracle. */
static void bwd_vs_oracle(const eng_case *c, uint64_t seed, int wanted)
{
    const ws_conv_desc d = desc_of(c, WS_CONV_BWD);
    const oracle_conv_shape p = shape_of(c, WS_CONV_BWD);
    const int cg = c->c_in / c->groups, t_out = ws_conv_out_len(&d, c->t_in);
    cr_assert_gt(t_out, 0, "%s", c->name);
    const size_t nx = (size_t)c->n * c->c_in * c->t_in, nw = (size_t)c->c_out * cg * c->k;
    const size_t ny = (size_t)c->n * c->c_out * t_out;

    double *x = rand_pm1(nx, seed), *w = rand_pm1(nw, seed + 1), *b = rand_pm1(c->c_out, seed + 2);
    double *dy = rand_pm1(ny, seed + 3);
    void *xs = pack(x, c->n, c->c_in, c->t_in, c->xl, c->xt);
    void *ws = pack(w, 1, 1, (int)nw, WS_NCL, c->wt);
    void *dys = pack(dy, c->n, c->c_out, t_out, c->yl, c->yt);
    float *bf = to_float(b, c->c_out);
    for (int o = 0; o < c->c_out; o++)
        b[o] = bf[o];

    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, c->per_call ? NULL : ws,
                                c->per_call || !c->bias ? NULL : bf, 2, &err);
    cr_assert(plan, "%s: ws_conv_new (BWD): %s", c->name, err.msg);
    void *dx = wanted & WANT_DX ? poisoned(nx * ref_tsize(c->xt)) : NULL;
    float *dw = wanted & WANT_DW ? poisoned(nw * sizeof(float)) : NULL;
    float *db = wanted & WANT_DB ? poisoned(c->c_out * sizeof(float)) : NULL;
    ws_conv_args a = {.n = c->n, .t_in = c->t_in, .x = xs, .w = c->per_call ? ws : NULL,
                      .b = c->per_call && c->bias ? bf : NULL, .dy = dys, .dx = dx, .dw = dw, .db = db};
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s: ws_conv_run (BWD): %s", c->name, err.msg);

    double *wdx = malloc(nx * sizeof *wdx), *wdw = malloc(nw * sizeof *wdw);
    double *wdb = malloc(c->c_out * sizeof *wdb);
    cr_assert_eq(oracle_conv1d_bwd(&p, x, w, c->bias ? b : NULL, dy, wdx, wdw, wdb), t_out);
    if (dx) {
        float *got = unpack(dx, c->n, c->c_in, c->t_in, c->xl, c->xt);
        expect_close(c, "dx", got, wdx, nx, c->xt);
        free(got);
    }
    if (dw)
        expect_close(c, "dw", dw, wdw, nw, WS_F32);
    if (db)
        expect_close(c, "db", db, wdb, c->c_out, WS_F32);

    ws_conv_free(plan);
    free(x), free(w), free(b), free(dy), free(xs), free(ws), free(dys), free(bf);
    free(dx), free(dw), free(db), free(wdx), free(wdw), free(wdb);
}

ParameterizedTest(int *ci, engine, backward_matches_the_oracle_for_every_table_descriptor)
{
    const eng_case *c = &cases[*ci];
    uint64_t seed = 5000 + (uint64_t)*ci * 10;
    bwd_vs_oracle(c, seed, WANT_DX | WANT_DW | WANT_DB);
    bwd_vs_oracle(c, seed + 100, WANT_DW);
    bwd_vs_oracle(c, seed + 200, WANT_DX);
    bwd_vs_oracle(c, seed + 300, WANT_DB);
}

/* --- the oracle checked on its own -------------------------------------------- */

static double loss(const oracle_conv_shape *p, const double *x, const double *w, const double *b,
                   const double *dy, double *ybuf, size_t ny)
{
    oracle_conv1d_fwd(p, x, w, b, NULL, 0, ybuf);
    double s = 0;
    for (size_t i = 0; i < ny; i++)
        s += ybuf[i] * dy[i];
    return s;
}

/* Central difference of L = sum(y * dy) in v[i]; v is one of x, w, b. */
static double central_diff(const oracle_conv_shape *p, double *x, double *w, double *b,
                           const double *dy, double *ybuf, size_t ny, double *v, size_t i)
{
    const double h = 1e-5, v0 = v[i];
    v[i] = v0 + h;
    double lp = loss(p, x, w, b, dy, ybuf, ny);
    v[i] = v0 - h;
    double lm = loss(p, x, w, b, dy, ybuf, ny);
    v[i] = v0;
    return (lp - lm) / (2 * h);
}

Test(engine, oracle_backward_matches_central_differences_of_its_forward)
{
    /* GELU, SILU and none (RELU's kink makes differences meaningless at 0) */
    static const oracle_conv_shape shapes[] = {
        {2, 12, 8, 4, 5, 2, 2, 2, 3, 27, ORACLE_NLC, ORACLE_NLC, 0, ORACLE_ACT_SILU},
        {2, 24, 24, 24, 4, 1, 1, 3, 0, 19, ORACLE_NLC, ORACLE_NLC, 0, ORACLE_ACT_SILU},
        {2, 6, 5, 1, 4, 3, 1, 0, 4, 26, ORACLE_NCL, ORACLE_NLC, 0, ORACLE_ACT_GELU},
        {1, 8, 16, 1, 16, 8, 1, 4, 4, 48, ORACLE_NCL, ORACLE_NCL, 0, ORACLE_ACT_NONE},
    };
    double worst = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const oracle_conv_shape *p = &shapes[s];
        const int t_out = oracle_conv_out_len(p), cg = p->c_in / p->groups;
        const size_t nx = (size_t)p->n * p->c_in * p->t_in, nw = (size_t)p->c_out * cg * p->k;
        const size_t ny = (size_t)p->n * p->c_out * t_out;
        double *x = rand_pm1(nx, 70 + s), *w = rand_pm1(nw, 80 + s), *b = rand_pm1(p->c_out, 90 + s);
        double *dy = rand_pm1(ny, 100 + s), *ybuf = malloc(ny * sizeof *ybuf);
        double *dx = malloc(nx * sizeof *dx), *dw = malloc(nw * sizeof *dw);
        double *db = malloc(p->c_out * sizeof *db);
        cr_assert_eq(oracle_conv1d_bwd(p, x, w, b, dy, dx, dw, db), t_out);
        struct { double *v, *g; size_t n; const char *name; } vars[] = {
            {x, dx, nx, "dx"}, {w, dw, nw, "dw"}, {b, db, (size_t)p->c_out, "db"}};
        for (int vi = 0; vi < 3; vi++)
            for (int e = 0; e < 5; e++) {
                size_t i = (size_t)(e * 7919 + 13 * vi) % vars[vi].n;
                double fd = central_diff(p, x, w, b, dy, ybuf, ny, vars[vi].v, i);
                double an = vars[vi].g[i], err = fabs(fd - an) / (1 + fabs(an));
                worst = fmax(worst, err);
                cr_assert_leq(err, 1e-6, "shape %zu %s[%zu]: analytic %.12g, central difference %.12g",
                              s, vars[vi].name, i, an, fd);
            }
        free(x), free(w), free(b), free(dy), free(ybuf), free(dx), free(dw), free(db);
    }
    fprintf(stderr, "engine oracle backward vs central differences: worst %.2e\n", worst);
}

Test(engine, oracle_layouts_agree_and_dense_case_matches_the_older_oracle)
{
    oracle_conv_shape p = {2, 6, 4, 2, 3, 2, 2, 2, 1, 17, ORACLE_NCL, ORACLE_NCL, 0, ORACLE_ACT_GELU};
    const int t_out = oracle_conv_out_len(&p);
    const size_t nx = 2 * 6 * 17, ny = (size_t)2 * 4 * t_out;
    double *x = rand_pm1(nx, 3), *w = rand_pm1(4 * 3 * 3, 4), *b = rand_pm1(4, 5);
    double *xt = malloc(nx * sizeof *xt), *y1 = malloc(ny * sizeof *y1), *y2 = malloc(ny * sizeof *y2);
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 6; c++)
            for (int t = 0; t < 17; t++)
                xt[ref_at(WS_NLC, n, c, t, 6, 17)] = x[ref_at(WS_NCL, n, c, t, 6, 17)];
    oracle_conv1d_fwd(&p, x, w, b, NULL, 0, y1);
    p.x_layout = ORACLE_NLC;
    p.y_layout = ORACLE_NLC;
    oracle_conv1d_fwd(&p, xt, w, b, NULL, 0, y2);
    for (int n = 0; n < 2; n++)
        for (int o = 0; o < 4; o++)
            for (int t = 0; t < t_out; t++)
                cr_assert_eq(y1[ref_at(WS_NCL, n, o, t, 4, t_out)], y2[ref_at(WS_NLC, n, o, t, 4, t_out)]);

    /* dense, symmetric pad, one item: the stem's older oracle_conv1d */
    oracle_conv_shape q = {1, 5, 7, 1, 3, 2, 1, 1, 1, 20, ORACLE_NCL, ORACLE_NCL, 0, ORACLE_ACT_GELU};
    float wf[7 * 5 * 3], bf[7];
    for (int i = 0; i < 7 * 5 * 3; i++)
        wf[i] = (float)w[i % 36] * 0.5f;
    for (int i = 0; i < 7; i++)
        bf[i] = (float)x[i];
    double wd[7 * 5 * 3], bd[7], yq[7 * 10], yo[7 * 10];
    for (int i = 0; i < 7 * 5 * 3; i++)
        wd[i] = wf[i];
    for (int i = 0; i < 7; i++)
        bd[i] = bf[i];
    cr_assert_eq(oracle_conv1d_fwd(&q, x, wd, bd, NULL, 0, yq), 10);
    cr_assert_eq(oracle_conv1d(x, 5, 20, wf, bf, 7, 3, 2, 1, 1, yo), 10);
    for (int i = 0; i < 70; i++)
        cr_assert_float_eq(yq[i], yo[i], 1e-14, "at %d", i);
    free(x), free(w), free(b), free(xt), free(y1), free(y2);
}

/* --- the engine against itself -------------------------------------------------- */

static double dot_f(const float *a, const double *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

Test(engine, backward_is_the_adjoint_of_forward_when_act_is_none)
{
    /* <conv(x), dy> = <x, conv^T(dy)> = <w, dw>, without bias or act */
    static const eng_case shapes[] = {
        {"adj_groups4", 2, 12, 8, 4, 5, 2, 2, 2, 3, 27, WS_NLC, WS_NCL, WS_F32, WS_F32, WS_F32, 0, 0, 0, 0, 1, 0},
        {"adj_depthwise", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0, 0, 0, 0, 1, 0},
        {"adj_k16_s8", 2, 8, 16, 1, 16, 8, 1, 4, 4, 96, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, 0, 0, 0, 0, 1, 0},
        {"adj_dense_d3", 1, 9, 7, 1, 3, 1, 3, 3, 1, 30, WS_NCL, WS_NLC, WS_F32, WS_F32, WS_F32, 0, 0, 0, 0, 1, 0},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const eng_case *c = &shapes[s];
        ws_conv_desc fd = desc_of(c, WS_CONV_FWD), bd = desc_of(c, WS_CONV_BWD);
        const int t_out = ws_conv_out_len(&fd, c->t_in), cg = c->c_in / c->groups;
        const size_t nx = (size_t)c->n * c->c_in * c->t_in, nw = (size_t)c->c_out * cg * c->k;
        const size_t ny = (size_t)c->n * c->c_out * t_out;
        double *x = rand_pm1(nx, 300 + s), *w = rand_pm1(nw, 310 + s), *dy = rand_pm1(ny, 320 + s);
        float *xs = pack(x, c->n, c->c_in, c->t_in, c->xl, WS_F32);
        float *ws = pack(w, 1, 1, (int)nw, WS_NCL, WS_F32);
        float *dys = pack(dy, c->n, c->c_out, t_out, c->yl, WS_F32);
        float *y = poisoned(ny * 4), *dx = poisoned(nx * 4), *dw = poisoned(nw * 4);
        ws_err err = {{0}};
        ws_conv *f = ws_conv_new(&fd, ws, NULL, 2, &err);
        cr_assert(f, "%s: %s", c->name, err.msg);
        ws_conv *g = ws_conv_new(&bd, ws, NULL, 2, &err);
        cr_assert(g, "%s: %s", c->name, err.msg);
        ws_conv_args a = {.n = c->n, .t_in = c->t_in, .x = xs, .y = y};
        cr_assert_eq(ws_conv_run(f, &a, &err), 0, "%s: %s", c->name, err.msg);
        ws_conv_args ga = {.n = c->n, .t_in = c->t_in, .x = xs, .dy = dys, .dx = dx, .dw = dw};
        cr_assert_eq(ws_conv_run(g, &ga, &err), 0, "%s: %s", c->name, err.msg);
        /* dy and y are in the same layout, dx and x too: the dots need no reordering */
        double ydy = 0, xdx = 0, wdw = 0;
        for (size_t i = 0; i < ny; i++)
            ydy += (double)y[i] * dys[i];
        for (size_t i = 0; i < nx; i++)
            xdx += (double)xs[i] * dx[i];
        wdw = dot_f(dw, w, nw);
        double e1 = fabs(ydy - xdx) / fabs(ydy), e2 = fabs(ydy - wdw) / fabs(ydy);
        if (verbose())
            fprintf(stderr, "engine adjoint %-14s <y,dy> %.9g  <x,dx> %.9g (%.1e)  <w,dw> %.9g (%.1e)\n",
                c->name, ydy, xdx, e1, wdw, e2);
        cr_assert_leq(e1, 1e-5, "%s: <y,dy> %.12g vs <x,dx> %.12g", c->name, ydy, xdx);
        cr_assert_leq(e2, 1e-5, "%s: <y,dy> %.12g vs <w,dw> %.12g", c->name, ydy, wdw);
        ws_conv_free(f);
        ws_conv_free(g);
        free(x), free(w), free(dy), free(xs), free(ws), free(dys), free(y), free(dx), free(dw);
    }
}

Test(engine, the_same_run_twice_gives_the_same_bits_for_any_thread_count)
{
    /* ws_conv.h promises the same bits for the same inputs, run after run and for any
     * thread count: 3 threads, twice on one plan and once on a second plan, then 1 thread. */
    static const eng_case shapes[] = {
        {"det_depthwise", 3, 48, 48, 48, 4, 1, 1, 3, 0, 300, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0,
         WS_ACT_SILU, 1, 0, 1, 0},
        {"det_dense", 2, 24, 32, 1, 3, 2, 1, 1, 1, 200, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, 0,
         WS_ACT_GELU, 1, 0, 1, 0},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const eng_case *c = &shapes[s];
        ws_conv_desc fd = desc_of(c, WS_CONV_FWD), bd = desc_of(c, WS_CONV_BWD);
        const int t_out = ws_conv_out_len(&fd, c->t_in), cg = c->c_in / c->groups;
        const size_t nx = (size_t)c->n * c->c_in * c->t_in, nw = (size_t)c->c_out * cg * c->k;
        const size_t ny = (size_t)c->n * c->c_out * t_out;
        double *x = rand_pm1(nx, 400 + s), *w = rand_pm1(nw, 410 + s), *b = rand_pm1(c->c_out, 420 + s);
        double *dy = rand_pm1(ny, 430 + s);
        float *xs = pack(x, c->n, c->c_in, c->t_in, c->xl, WS_F32);
        float *ws = pack(w, 1, 1, (int)nw, WS_NCL, WS_F32);
        float *dys = pack(dy, c->n, c->c_out, t_out, c->yl, WS_F32), *bf = to_float(b, c->c_out);
        ws_err err = {{0}};
        ws_conv *plans[4] = {ws_conv_new(&fd, ws, bf, 3, &err), ws_conv_new(&fd, ws, bf, 3, &err),
                             ws_conv_new(&bd, ws, bf, 3, &err), ws_conv_new(&bd, ws, bf, 3, &err)};
        for (int i = 0; i < 4; i++)
            cr_assert(plans[i], "%s: %s", c->name, err.msg);
        float *y[3], *dx[3], *dw[3], *db[3];
        for (int r = 0; r < 3; r++) {
            y[r] = poisoned(ny * 4), dx[r] = poisoned(nx * 4), dw[r] = poisoned(nw * 4);
            db[r] = poisoned(c->c_out * 4);
            ws_conv_args a = {.n = c->n, .t_in = c->t_in, .x = xs, .y = y[r]};
            ws_conv_args g = {.n = c->n, .t_in = c->t_in, .x = xs, .dy = dys, .dx = dx[r], .dw = dw[r],
                              .db = db[r]};
            cr_assert_eq(ws_conv_run(plans[r == 2], &a, &err), 0, "%s", err.msg);
            cr_assert_eq(ws_conv_run(plans[2 + (r == 2)], &g, &err), 0, "%s", err.msg);
        }
        for (int r = 1; r < 3; r++) {
            cr_assert_eq(memcmp(y[0], y[r], ny * 4), 0, "%s: y differs on run %d", c->name, r);
            cr_assert_eq(memcmp(dx[0], dx[r], nx * 4), 0, "%s: dx differs on run %d", c->name, r);
            cr_assert_eq(memcmp(dw[0], dw[r], nw * 4), 0, "%s: dw differs on run %d", c->name, r);
            cr_assert_eq(memcmp(db[0], db[r], c->c_out * 4), 0, "%s: db differs on run %d", c->name, r);
        }
        /* 1 thread against 3: ws_conv.h promises the same bits for any thread count */
        ws_conv *one = ws_conv_new(&fd, ws, bf, 1, &err);
        cr_assert(one, "%s", err.msg);
        float *y1 = poisoned(ny * 4);
        ws_conv_args a1 = {.n = c->n, .t_in = c->t_in, .x = xs, .y = y1};
        cr_assert_eq(ws_conv_run(one, &a1, &err), 0, "%s", err.msg);
        cr_assert_eq(memcmp(y1, y[0], ny * 4), 0, "%s: FWD with 1 and 3 threads differs", c->name);
        ws_conv_free(one);
        free(y1);
        for (int i = 0; i < 4; i++)
            ws_conv_free(plans[i]);
        for (int r = 0; r < 3; r++)
            free(y[r]), free(dx[r]), free(dw[r]), free(db[r]);
        free(x), free(w), free(b), free(dy), free(xs), free(ws), free(dys), free(bf);
    }
}

Test(engine, big_depthwise_outputs_written_past_the_caches_match_the_small_runs_bits)
{
    /* Depthwise NCL outputs of 16 MiB and more are written with streaming stores from the
     * first 32-byte aligned time of each row on. T odd puts each row at another alignment.
     * Item 0 of the big run (y and dx 2 x 16.8 MB) against the same item run alone (8.4 MB,
     * cached stores): the same bits; and a few rows against float64 sums. */
    const int N = 2, C = 256, T = 8193, K = 4;
    ws_conv_desc fd = {.op = WS_CONV_FWD, .c_in = C, .c_out = C, .groups = C, .k = K, .stride = 1,
                       .dilation = 1, .pad_l = K - 1, .pad_r = 0};
    ws_conv_desc bd = fd;
    bd.op = WS_CONV_BWD;
    const size_t nx = (size_t)N * C * T, per = (size_t)C * T;
    double *xd = rand_pm1(nx, 501), *wd = rand_pm1((size_t)C * K, 502), *bd_ = rand_pm1(C, 503);
    double *dyd = rand_pm1(nx, 504);
    float *x = to_float(xd, nx), *w = to_float(wd, (size_t)C * K), *b = to_float(bd_, C);
    float *dy = to_float(dyd, nx);
    ws_err err = {{0}};
    ws_conv *f = ws_conv_new(&fd, w, b, 2, &err), *g = ws_conv_new(&bd, w, b, 2, &err);
    cr_assert(f && g, "%s", err.msg);
    float *y[2], *dx[2];
    for (int r = 0; r < 2; r++) {
        const int n = r == 0 ? N : 1;
        y[r] = poisoned((size_t)n * per * 4), dx[r] = poisoned((size_t)n * per * 4);
        ws_conv_args a = {.n = n, .t_in = T, .x = x, .y = y[r]};
        ws_conv_args ga = {.n = n, .t_in = T, .x = x, .dy = dy, .dx = dx[r]};
        cr_assert_eq(ws_conv_run(f, &a, &err), 0, "%s", err.msg);
        cr_assert_eq(ws_conv_run(g, &ga, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(memcmp(y[0], y[1], per * 4), 0, "y: the streamed rows differ from the cached ones");
    cr_assert_eq(memcmp(dx[0], dx[1], per * 4), 0, "dx: the streamed rows differ from the cached ones");
    const int rows[] = {0, 1, 77, C - 1, C + 3, 2 * C - 1};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const size_t r = (size_t)rows[i], c = r % C;
        for (int t = 0; t < T; t++) {
            double sy = bd_[c], sx = 0;
            for (int k = 0; k < K; k++) {
                const int u = t + k - (K - 1), v = t + (K - 1) - k;
                if (u >= 0)
                    sy += wd[c * K + k] * (double)x[r * T + u];
                if (v < T)
                    sx += wd[c * K + k] * (double)dy[r * T + v];
            }
            cr_assert_float_eq(y[0][r * T + t], sy, 1e-5, "y row %zu t %d", r, t);
            cr_assert_float_eq(dx[0][r * T + t], sx, 1e-5, "dx row %zu t %d", r, t);
        }
    }
    ws_conv_free(f), ws_conv_free(g);
    for (int r = 0; r < 2; r++)
        free(y[r]), free(dx[r]);
    free(xd), free(wd), free(bd_), free(dyd), free(x), free(w), free(b), free(dy);
}

/* --- falsifiers ---------------------------------------------------------------------- */

Test(engine, a_delta_input_reproduces_a_weight_column)
{
    /* grouped, strided, dilated, asymmetric pads, NLC in and NCL out; act NONE, no bias:
     * one 1 at (n 1, channel 4, time 4) gives y[1, o, t] = w[o, 4 - g*cg, k] exactly where
     * S*t + D*k - P_L = 4 and o is in channel 4's group, and 0 elsewhere */
    enum { N = 2, CI = 6, CO = 4, G = 2, CG = CI / G, K = 3, S = 2, D = 2, PL = 2, PR = 1, T = 11 };
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = CI, .c_out = CO, .groups = G, .k = K, .stride = S,
                      .dilation = D, .pad_l = PL, .pad_r = PR, .x_layout = WS_NLC, .y_layout = WS_NCL};
    const int t_out = ws_conv_out_len(&d, T), n0 = 1, i0 = 4, u0 = 4, g0 = i0 / CG;
    cr_assert_eq(t_out, (T + PL + PR - D * (K - 1) - 1) / S + 1);
    double *wd = rand_pm1(CO * CG * K, 9);
    float w[CO * CG * K], x[N * T * CI] = {0};
    for (int i = 0; i < CO * CG * K; i++)
        w[i] = (float)wd[i];
    x[(n0 * T + u0) * CI + i0] = 1.0f;
    float *y = poisoned(sizeof(float) * N * CO * t_out);
    ws_err err = {{0}};
    ws_conv *c = ws_conv_new(&d, w, NULL, 1, &err);
    cr_assert(c, "%s", err.msg);
    ws_conv_args a = {.n = N, .t_in = T, .x = x, .y = y};
    cr_assert_eq(ws_conv_run(c, &a, &err), 0, "%s", err.msg);
    int hits = 0;
    for (int n = 0; n < N; n++)
        for (int o = 0; o < CO; o++)
            for (int t = 0; t < t_out; t++) {
                float want = 0.0f;
                int rel = u0 - S * t + PL; /* = D * k */
                if (n == n0 && o / (CO / G) == g0 && rel >= 0 && rel % D == 0 && rel / D < K) {
                    want = w[(o * CG + (i0 - g0 * CG)) * K + rel / D];
                    hits++;
                }
                cr_assert_eq(y[(n * CO + o) * t_out + t], want, "n %d o %d t %d: got %.9g want %.9g", n,
                             o, t, (double)y[(n * CO + o) * t_out + t], (double)want);
            }
    cr_assert_gt(hits, 0);
    ws_conv_free(c);
    free(wd), free(y);
}

Test(engine, shifting_the_input_by_the_stride_shifts_the_output_by_one)
{
    /* stride 3, no padding, GELU with bias: x'[t] = x[t + 3] gives y'[t] = y[t + 1] */
    enum { N = 2, CI = 5, CO = 7, K = 5, S = 3, T = 40 };
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = CI, .c_out = CO, .groups = 1, .k = K, .stride = S,
                      .dilation = 1, .x_layout = WS_NCL, .y_layout = WS_NLC, .act = WS_ACT_GELU};
    const int t1 = ws_conv_out_len(&d, T), t2 = ws_conv_out_len(&d, T - S);
    cr_assert_eq(t2, t1 - 1);
    double *wd = rand_pm1(CO * CI * K, 11), *bd = rand_pm1(CO, 12), *xd = rand_pm1(N * CI * T, 13);
    float w[CO * CI * K], b[CO], x[N * CI * T], xs[N * CI * (T - S)];
    for (int i = 0; i < CO * CI * K; i++)
        w[i] = (float)wd[i];
    for (int i = 0; i < CO; i++)
        b[i] = (float)bd[i];
    for (int i = 0; i < N * CI * T; i++)
        x[i] = (float)xd[i];
    for (int n = 0; n < N; n++)
        for (int c = 0; c < CI; c++)
            for (int t = 0; t < T - S; t++)
                xs[(n * CI + c) * (T - S) + t] = x[(n * CI + c) * T + t + S];
    float *y = poisoned(sizeof(float) * N * CO * t1), *ys = poisoned(sizeof(float) * N * CO * t2);
    ws_err err = {{0}};
    ws_conv *c = ws_conv_new(&d, w, b, 2, &err);
    cr_assert(c, "%s", err.msg);
    ws_conv_args a = {.n = N, .t_in = T, .x = x, .y = y}, as = {.n = N, .t_in = T - S, .x = xs, .y = ys};
    cr_assert_eq(ws_conv_run(c, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_conv_run(c, &as, &err), 0, "%s", err.msg);
    for (int n = 0; n < N; n++)
        for (int t = 0; t < t2; t++)
            for (int o = 0; o < CO; o++) {
                float g = ys[(n * t2 + t) * CO + o], want = y[(n * t1 + t + 1) * CO + o];
                /* the same products; only a summation order that depends on t could differ */
                cr_assert_float_eq(g, want, 1e-6 * (1 + fabsf(want)), "n %d t %d o %d", n, t, o);
            }
    ws_conv_free(c);
    free(wd), free(bd), free(xd), free(y), free(ys);
}

/* --- refusals ------------------------------------------------------------------------ */

/* msg names word as a whole word (not inside a longer identifier). */
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

/* One line naming one of the fields (a space-separated list) and, when given, the value. */
static void expect_message(const char *what, const char *msg, const char *fields, const char *value)
{
    cr_assert(msg[0], "%s: empty message", what);
    cr_assert(!strchr(msg, '\n'), "%s: message is not one line: %s", what, msg);
    char buf[128];
    snprintf(buf, sizeof buf, "%s", fields);
    int named = 0;
    for (char *f = strtok(buf, " "); f; f = strtok(NULL, " "))
        named |= names_word(msg, f);
    cr_assert(named, "%s: \"%s\" names none of {%s}", what, msg, fields);
    if (value)
        cr_assert(names_word(msg, value), "%s: \"%s\" does not give the value %s", what, msg, value);
}

static const ws_conv_desc good_desc = {.op = WS_CONV_FWD, .c_in = 8, .c_out = 8, .groups = 2, .k = 3,
                                       .stride = 1, .dilation = 1, .pad_l = 1, .pad_r = 1};

Test(engine, bad_descriptors_are_refused_naming_the_field)
{
    struct { const char *what, *fields, *value; ws_conv_desc d; } bad[] = {
        {"groups not dividing c_in", "groups c_in", "3", good_desc},
        {"groups not dividing c_out", "groups c_out", "6", good_desc},
        {"k 0", "k", "0", good_desc},
        {"stride 0", "stride", "0", good_desc},
        {"dilation 0", "dilation", "0", good_desc},
        {"negative pad_l", "pad_l", "-1", good_desc},
        {"negative pad_r", "pad_r", "-2", good_desc},
        {"c_in 0", "c_in", "0", good_desc},
        {"c_out negative", "c_out", "-4", good_desc},
        {"BWD with pre", "pre", NULL, good_desc},
    };
    bad[0].d.groups = 3;
    bad[1].d.c_out = 6, bad[1].d.groups = 4;
    bad[2].d.k = 0;
    bad[3].d.stride = 0;
    bad[4].d.dilation = 0;
    bad[5].d.pad_l = -1;
    bad[6].d.pad_r = -2;
    bad[7].d.c_in = 0;
    bad[8].d.c_out = -4;
    bad[9].d.op = WS_CONV_BWD, bad[9].d.pre = WS_ACT_RELU;
    ws_err err;
    cr_assert_eq(ws_conv_check(&good_desc, &err), 0, "%s", err.msg);
    float w[8 * 4 * 3] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        cr_assert_eq(ws_conv_check(&bad[i].d, &err), -1, "%s: accepted by ws_conv_check", bad[i].what);
        expect_message(bad[i].what, err.msg, bad[i].fields, bad[i].value);
        if (verbose())
            fprintf(stderr, "engine refusal %-28s %s\n", bad[i].what, err.msg);
        memset(&err, 0, sizeof err);
        cr_assert_null(ws_conv_new(&bad[i].d, w, NULL, 1, &err), "%s: ws_conv_new made a plan", bad[i].what);
        expect_message(bad[i].what, err.msg, bad[i].fields, bad[i].value);
        if (verbose())
            fprintf(stderr, "engine refusal %-28s %s\n", bad[i].what, err.msg);
        cr_assert_eq(ws_conv_out_len(&bad[i].d, 100), 0, "%s: ws_conv_out_len not 0", bad[i].what);
    }
    ws_conv_free(NULL);
}

Test(engine, bad_arguments_are_refused_naming_the_field_and_write_nothing)
{
    enum { N = 2, C = 8, K = 5, T = 12 };
    ws_conv_desc fd = good_desc, bd = good_desc;
    fd.k = bd.k = K;
    fd.pad_l = bd.pad_l = fd.pad_r = bd.pad_r = 0;
    bd.op = WS_CONV_BWD;
    const int t_out = ws_conv_out_len(&fd, T);
    cr_assert_eq(t_out, T - K + 1);
    cr_assert_eq(ws_conv_out_len(&fd, K - 1), 0);
    double *xd = rand_pm1(N * C * T, 21), *wd = rand_pm1(C * 4 * K, 22);
    float *x = pack(xd, N, C, T, WS_NCL, WS_F32), *w = pack(wd, 1, 1, C * 4 * K, WS_NCL, WS_F32);
    float *dy = pack(xd, N, C, t_out, WS_NCL, WS_F32), add[N * C * T];
    memcpy(add, x, sizeof add);
    const size_t ny = (size_t)N * C * t_out * 4, nx = (size_t)N * C * T * 4, nw = C * 4 * K * 4;
    float *y = poisoned(ny), *dx = poisoned(nx), *dw = poisoned(nw), *db = poisoned(C * 4);
    ws_err err;
    ws_conv *f = ws_conv_new(&fd, w, NULL, 1, &err), *g = ws_conv_new(&bd, w, NULL, 1, &err);
    ws_conv *fnw = ws_conv_new(&fd, NULL, NULL, 1, &err); /* no weights in the plan */
    cr_assert(f && g && fnw, "%s", err.msg);

    struct { const char *what, *fields, *value; ws_conv *plan; ws_conv_args a; } bad[] = {
        {"t_in too short", "t_in", "4", f, {.n = N, .t_in = K - 1, .x = x, .y = y}},
        {"t_in 0", "t_in", "0", f, {.n = N, .t_in = 0, .x = x, .y = y}},
        {"n 0", "n", "0", f, {.n = 0, .t_in = T, .x = x, .y = y}},
        {"NULL x", "x", NULL, f, {.n = N, .t_in = T, .y = y}},
        {"NULL y for FWD", "y", NULL, f, {.n = N, .t_in = T, .x = x}},
        {"no weights in plan or call", "w", NULL, fnw, {.n = N, .t_in = T, .x = x, .y = y}},
        {"negative add_batch_stride", "add_batch_stride", "-1", f,
         {.n = N, .t_in = T, .x = x, .y = y, .add = add, .add_batch_stride = -1}},
        {"BWD asking for nothing", "dx dw db", NULL, g, {.n = N, .t_in = T, .x = x, .dy = dy}},
        {"BWD without dy", "dy", NULL, g, {.n = N, .t_in = T, .x = x, .dx = dx, .dw = dw, .db = db}},
        {"BWD without x", "x", NULL, g, {.n = N, .t_in = T, .dy = dy, .dx = dx, .dw = dw, .db = db}},
        {"BWD with add", "add", NULL, g,
         {.n = N, .t_in = T, .x = x, .dy = dy, .add = add, .dx = dx, .dw = dw, .db = db}},
        {"BWD t_in too short", "t_in", "3", g, {.n = N, .t_in = 3, .x = x, .dy = dy, .dx = dx, .dw = dw, .db = db}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&err, 0, sizeof err);
        cr_assert_eq(ws_conv_run(bad[i].plan, &bad[i].a, &err), -1, "%s: accepted", bad[i].what);
        expect_message(bad[i].what, err.msg, bad[i].fields, bad[i].value);
        if (verbose())
            fprintf(stderr, "engine refusal %-28s %s\n", bad[i].what, err.msg);
        cr_assert(all_ff(y, ny) && all_ff(dx, nx) && all_ff(dw, nw) && all_ff(db, C * 4),
                  "%s: an output was written", bad[i].what);
    }
    /* the same plans still run */
    ws_conv_args ok = {.n = N, .t_in = T, .x = x, .y = y};
    cr_assert_eq(ws_conv_run(f, &ok, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < ny / 4; i++)
        cr_assert(isfinite(y[i]), "y[%zu] not written", i);
    ws_conv_free(f), ws_conv_free(g), ws_conv_free(fnw);
    free(xd), free(wd), free(x), free(w), free(dy), free(y), free(dx), free(dw), free(db);
}

struct plan_run {
    ws_conv *plan;
    ws_conv_args a;
    ws_err err;
    int rc;
};

static void *run_thread(void *p)
{
    struct plan_run *r = p;
    r->rc = ws_conv_run(r->plan, &r->a, &r->err);
    return NULL;
}

/* A short item on many threads: the dense FWD cuts each row block's columns into blocks
 * (more tasks); the bits are those of one thread, in y stored in place (NLC f32) and
 * through the staging (NCL bf16), with bias, GELU and a per-item add. */
Test(engine, dense_bits_do_not_depend_on_the_threads_or_the_column_blocks)
{
    enum { N = 1, CI = 48, CO = 288, K = 3, T = 150 };
    static const ws_layout yl[] = {WS_NLC, WS_NCL};
    static const ws_dtype yt[] = {WS_F32, WS_BF16};
    for (int v = 0; v < 2; v++) {
        ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = CI, .c_out = CO, .groups = 1, .k = K, .stride = 1,
                          .dilation = 1, .pad_l = 1, .pad_r = 1, .x_layout = WS_NCL, .y_layout = yl[v],
                          .y_type = yt[v], .act = WS_ACT_GELU};
        const int t_out = ws_conv_out_len(&d, T);
        const size_t ny = (size_t)N * CO * t_out, ysz = ny * (yt[v] == WS_F32 ? 4 : 2);
        double *xd = rand_pm1(N * CI * T, 61), *wd = rand_pm1(CO * CI * K, 62), *bd = rand_pm1(CO, 63);
        double *ad = rand_pm1(ny, 64);
        float *x = pack(xd, N, CI, T, WS_NCL, WS_F32), *w = pack(wd, 1, 1, CO * CI * K, WS_NCL, WS_F32);
        float *b = pack(bd, 1, 1, CO, WS_NCL, WS_F32);
        void *add = pack(ad, N, CO, t_out, yl[v], yt[v]);
        void *want = poisoned(ysz), *got = poisoned(ysz);
        static const int threads[] = {1, 2, 3, 8, 16};
        for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
            ws_err err;
            ws_conv *plan = ws_conv_new(&d, w, b, threads[i], &err);
            cr_assert(plan, "%s", err.msg);
            ws_conv_args a = {.n = N, .t_in = T, .x = x, .add = add, .y = i ? got : want};
            cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s", err.msg);
            if (i)
                cr_assert(!memcmp(want, got, ysz), "y %s: %d threads differ from 1",
                          v ? "NCL bf16" : "NLC f32", threads[i]);
            ws_conv_free(plan);
        }
        free(xd), free(wd), free(bd), free(ad), free(x), free(w), free(b), free(add), free(want), free(got);
    }
}

Test(engine, runs_on_one_plan_from_several_threads_at_once_give_the_serial_bits)
{
    /* ws_conv.h: a plan is immutable; ws_conv_run may be called from several threads at
     * once with different buffers. Each thread's y must equal the serial run's bits. */
    enum { NT = 3, N = 2, C = 16, K = 3, T = 200 };
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = C, .c_out = C, .groups = 1, .k = K, .stride = 1,
                      .dilation = 2, .pad_l = 2, .pad_r = 2, .x_layout = WS_NLC, .y_layout = WS_NCL,
                      .act = WS_ACT_GELU};
    const int t_out = ws_conv_out_len(&d, T);
    double *xd = rand_pm1(N * C * T, 51), *wd = rand_pm1(C * C * K, 52);
    float *x = pack(xd, N, C, T, WS_NLC, WS_F32), *w = pack(wd, 1, 1, C * C * K, WS_NCL, WS_F32);
    const size_t ny = (size_t)N * C * t_out;
    ws_err err;
    ws_conv *plan = ws_conv_new(&d, w, NULL, 1, &err);
    cr_assert(plan, "%s", err.msg);
    float *want = poisoned(ny * 4);
    ws_conv_args a = {.n = N, .t_in = T, .x = x, .y = want};
    cr_assert_eq(ws_conv_run(plan, &a, &err), 0, "%s", err.msg);

    struct plan_run runs[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        runs[i].plan = plan;
        runs[i].a = a;
        runs[i].a.y = poisoned(ny * 4);
    }
    for (int i = 0; i < NT; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, run_thread, &runs[i]), 0);
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++) {
        cr_assert_eq(runs[i].rc, 0, "thread %d: %s", i, runs[i].err.msg);
        cr_assert_eq(memcmp(runs[i].a.y, want, ny * 4), 0, "thread %d: y differs from the serial run", i);
        free(runs[i].a.y);
    }
    ws_conv_free(plan);
    free(xd), free(wd), free(x), free(w), free(want);
}

Test(engine, a_size_that_overflows_n_c_t_is_refused)
{
    /* N*C*T far past 2^63: refused by the argument check, before any buffer is touched */
    ws_conv_desc d = good_desc;
    float x[4] = {1, 2, 3, 4}, w[8 * 4 * 3] = {0};
    float *y = poisoned(16);
    ws_err err = {{0}};
    ws_conv *plan = ws_conv_new(&d, w, NULL, 1, &err);
    cr_assert(plan, "%s", err.msg);
    ws_conv_args a = {.n = INT_MAX, .t_in = INT_MAX, .x = x, .y = y};
    cr_assert_eq(ws_conv_run(plan, &a, &err), -1, "n and t_in INT_MAX: accepted");
    expect_message("n*C*T overflow", err.msg, "n t_in c_in c_out", NULL);
    if (verbose())
        fprintf(stderr, "engine refusal %-28s %s\n", "n*C*T overflow", err.msg);
    cr_assert(all_ff(y, 16), "y was written");
    ws_conv_free(plan);
    free(y);
}

Test(engine, a_negative_thread_count_and_a_null_plan_are_refused)
{
    ws_err err = {{0}};
    float w[8 * 4 * 3] = {0};
    cr_assert_null(ws_conv_new(&good_desc, w, NULL, -1, &err));
    expect_message("n_threads -1", err.msg, "n_threads", "-1");
    float x[8 * 10] = {0}, *y = poisoned(8 * 10 * 4);
    ws_conv_args a = {.n = 1, .t_in = 10, .x = x, .y = y};
    memset(&err, 0, sizeof err);
    cr_assert_eq(ws_conv_run(NULL, &a, &err), -1);
    cr_assert(err.msg[0] && !strchr(err.msg, '\n'), "NULL plan: \"%s\"", err.msg);
    cr_assert(all_ff(y, 8 * 10 * 4), "y was written");
    /* 0 threads: all online CPUs, and it runs */
    ws_conv *c = ws_conv_new(&good_desc, w, NULL, 0, &err);
    cr_assert(c, "%s", err.msg);
    cr_assert_eq(ws_conv_run(c, &a, &err), 0, "%s", err.msg);
    for (int i = 0; i < 8 * 10; i++)
        cr_assert_eq(y[i], 0.0f, "y[%d] = %g for zero x and w", i, (double)y[i]);
    ws_conv_free(c);
    free(y);
}

Test(engine, t_in_near_int_max_is_refused_before_anything_is_read)
{
    /* the kernels walk times in int blocks: lengths within 8192 of INT_MAX are refused
     * with a message, never an overflow (x is not read: one float stands for it) */
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = 1, .c_out = 1, .groups = 1, .k = 1, .stride = 1,
                      .dilation = 1};
    float w = 1, x = 0, y = 7;
    ws_err err = {{0}};
    ws_conv *c = ws_conv_new(&d, &w, NULL, 1, &err);
    cr_assert(c, "%s", err.msg);
    ws_conv_args a = {.n = 1, .t_in = 2147483647 - 100, .x = &x, .y = &y};
    cr_assert_eq(ws_conv_run(c, &a, &err), -1);
    cr_assert(strstr(err.msg, "t_in") && strstr(err.msg, "over the limit"), "%s", err.msg);
    cr_assert_eq(y, 7.0f, "nothing written");
    ws_conv_free(c);
}

/* gelu.c - exact (erf) GELU in float32, vectorisable, and the conv epilogue.
 *
 *   gelu(x) = x/2 * (1 + erf(x/sqrt2)) = max(x, 0) - |x|/2 * erfc(|x|/sqrt2)
 *
 * erfc(z), z >= 0, by the Chebyshev-fitted form of Numerical Recipes
 * (erfcc, 2nd ed. section 6.2: fractional error < 1.2e-7 for all z >= 0):
 *   t = 1 / (1 + z/2)
 *   erfc(z) = t * exp(-z^2 - 1.26551223 + t*(1.00002368 + t*(0.37409196 + ...)))
 * The second form of gelu keeps relative accuracy in both tails (no
 * cancellation in 1 + erf for large negative x). exp is a Cephes-style
 * float exp (range reduction by ln 2 in two parts, degree-6 polynomial,
 * 2^n built in the exponent bits), branch-free so that the loop vectorises;
 * the function is cloned for AVX-512 and AVX2 (by CPU feature, not by model: "arch=haswell"
 * matched Intel parts only, so AMD AVX2 machines ran the baseline) and picked at load time.
 * The epilogue also takes the conv engine's RELU and SILU (x * sigmoid(x), sigmoid from
 * the same exp on -|x|: relative error about 2 float32 ulps, tests/test_engine.c).
 * Measured max |error| vs erf in double over [-10, 10]: tests/test_conv.c.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "conv.h"
#include "engine.h" /* ws_act_grad_rows */

typedef union {
    int32_t i;
    float f;
} pun; /* a union (not memcpy) keeps the loops vectorisable with GCC 12 */

/* The steps below run on L lanes side by side, each step a loop over the lanes: in the
 * vectorised loops L is LANES (a block of 64 floats, eight AVX2 vectors), so that the
 * block's chains of dependent operations (about 60 for GELU) overlap and the core runs
 * them nearer its throughput than one chain's latency (a row of GELU on a Zen 3 core, ns
 * per 8 floats: 29.7 one vector at a time, 33.7 / 27.9 / 19.2 / 15.9 / 17.2 with L 8 / 16 /
 * 32 / 64 / 128; SiLU 7.0 -> 4.7); a row's rest goes in blocks of 8, then one at a time
 * (L 1, the scalar forms). Every lane does the same operations in the same order whatever
 * L, and a NaN result is always the quiet NaN 0x7fc00000 (CANON): which operand's NaN an
 * operation passes on is the compiler's choice of operand order, which differs between the
 * clones and the block sizes (a NaN's sign did, in the AVX-512 clone's gradient). So the
 * bits do not depend on where a value falls in its row. */
enum { LANES = 64 };

/* v[i] for i < L, a NaN replaced by the quiet NaN 0x7fc00000 (NAN) */
#define CANON(v, L)                                                                                \
    do {                                                                                           \
        for (int i_ = 0; i_ < (L); i_++)                                                           \
            (v)[i_] = (v)[i_] == (v)[i_] ? (v)[i_] : NAN;                                          \
    } while (0)

/* e[i] = exp(x[i]) for x[i] in [-87, 0] (below that the result is < 1.7e-38 and treated as
 * such), i < L */
static inline __attribute__((always_inline)) void exp_nonpos_n(const float *restrict x, float *restrict e,
                                                               const int L)
{
    float v[LANES], fn[LANES], r[LANES], p[LANES];
    pun k[LANES], scale[LANES];
    for (int i = 0; i < L; i++)
        v[i] = x[i] > -87.0f ? x[i] : -87.0f;
    /* n = round(x / ln2) by the 1.5 * 2^23 shifter: adding it leaves n in the low mantissa
     * bits (no float->int conversion, which blocks vectorising) */
    for (int i = 0; i < L; i++)
        k[i].f = v[i] * 1.44269504088896341f + 12582912.0f;
    for (int i = 0; i < L; i++)
        fn[i] = k[i].f - 12582912.0f;
    for (int i = 0; i < L; i++)
        r[i] = v[i] - fn[i] * 0.693359375f; /* ln2 high part (exact product) */
    for (int i = 0; i < L; i++)
        r[i] = r[i] - fn[i] * -2.12194440e-4f; /* ln2 low part */
    for (int i = 0; i < L; i++)
        p[i] = 1.9875691500e-4f * r[i] + 1.3981999507e-3f;
    for (int i = 0; i < L; i++)
        p[i] = p[i] * r[i] + 8.3334519073e-3f;
    for (int i = 0; i < L; i++)
        p[i] = p[i] * r[i] + 4.1665795894e-2f;
    for (int i = 0; i < L; i++)
        p[i] = p[i] * r[i] + 1.6666665459e-1f;
    for (int i = 0; i < L; i++)
        p[i] = p[i] * r[i] + 5.0000001201e-1f;
    for (int i = 0; i < L; i++)
        p[i] = p[i] * r[i] * r[i] + r[i] + 1.0f;
    for (int i = 0; i < L; i++)
        scale[i].i = (k[i].i - 0x4B400000 + 127) << 23; /* 2^n */
    for (int i = 0; i < L; i++)
        e[i] = p[i] * scale[i].f;
}

/* e[i] = erfc(z[i]) for z[i] >= 0, the erfcc form in the file's header, i < L */
static inline __attribute__((always_inline)) void erfc_nonneg_n(const float *restrict z, float *restrict e,
                                                                const int L)
{
    float t[LANES], q[LANES];
    for (int i = 0; i < L; i++)
        t[i] = 1.0f / (1.0f + 0.5f * z[i]);
    for (int i = 0; i < L; i++)
        q[i] = 0.17087277f * t[i] - 0.82215223f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] + 1.48851587f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] - 1.13520398f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] + 0.27886807f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] - 0.18628806f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] + 0.09678418f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] + 0.37409196f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] + 1.00002368f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] * t[i] - 1.26551223f;
    for (int i = 0; i < L; i++)
        q[i] = q[i] - z[i] * z[i];
    exp_nonpos_n(q, e, L);
    for (int i = 0; i < L; i++)
        e[i] = t[i] * e[i];
}

/* v[i] = gelu(v[i]), i < L */
static inline __attribute__((always_inline)) void gelu_n(float *restrict v, const int L)
{
    float ax[LANES], z[LANES], e[LANES];
    for (int i = 0; i < L; i++)
        ax[i] = v[i] < 0.0f ? -v[i] : v[i];
    for (int i = 0; i < L; i++)
        z[i] = ax[i] * 0.70710678118654752f;
    erfc_nonneg_n(z, e, L);
    /* the factor capped at FLT_MAX, so that gelu(inf) = inf (not inf * 0) */
    for (int i = 0; i < L; i++)
        v[i] = (v[i] > 0.0f ? v[i] : 0.0f) - 0.5f * (ax[i] < FLT_MAX ? ax[i] : FLT_MAX) * e[i];
    CANON(v, L);
}

/* silu(x) = x * sigmoid(x), sigmoid from e = exp(-|x|) so that exp never overflows:
 * sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0; v[i] = silu(v[i]), i < L */
static inline __attribute__((always_inline)) void silu_n(float *restrict v, const int L)
{
    float m[LANES], e[LANES];
    for (int i = 0; i < L; i++)
        m[i] = -(v[i] < 0.0f ? -v[i] : v[i]);
    exp_nonpos_n(m, e, L);
    for (int i = 0; i < L; i++)
        v[i] = v[i] * ((v[i] >= 0.0f ? 1.0f : e[i]) / (1.0f + e[i]));
    CANON(v, L);
}

/* AT(j, L) for the lanes [j, j + L) of a row of n: blocks of LANES, then of 8, then one by
 * one (AT a function-like macro: L is a constant at each use) */
#define OVER_ROW(n, AT)                                                                            \
    do {                                                                                           \
        int j_ = 0;                                                                                \
        for (; j_ + LANES <= (n); j_ += LANES)                                                     \
            AT(j_, LANES);                                                                         \
        for (; j_ + 8 <= (n); j_ += 8)                                                             \
            AT(j_, 8);                                                                             \
        for (; j_ < (n); j_++)                                                                     \
            AT(j_, 1);                                                                             \
    } while (0)

float ws_gelu(float x)
{
    gelu_n(&x, 1);
    return x;
}

/* gelu_n's steps with every a*b + c fused: the scalar model of sgemm.c's gelu512x and
 * gelu256x, which must give its bits lane for lane (tests/test_conv.c) */
float ws_gelu_fma(float x)
{
    const float ax = fabsf(x), z = ax * 0.70710678118654752f;
    const float t = 1.0f / fmaf(0.5f, z, 1.0f);
    float q = 0.17087277f;
    q = fmaf(q, t, -0.82215223f);
    q = fmaf(q, t, 1.48851587f);
    q = fmaf(q, t, -1.13520398f);
    q = fmaf(q, t, 0.27886807f);
    q = fmaf(q, t, -0.18628806f);
    q = fmaf(q, t, 0.09678418f);
    q = fmaf(q, t, 0.37409196f);
    q = fmaf(q, t, 1.00002368f);
    q = fmaf(q, t, -1.26551223f);
    float a = fmaf(-z, z, q);
    a = a > -87.0f ? a : -87.0f; /* NaN: -87 (the vector max's rule); t carries the NaN */
    pun k;
    k.f = fmaf(a, 1.44269504088896341f, 12582912.0f);
    const float fn = k.f - 12582912.0f;
    const int32_t n = k.i - 0x4B400000;
    float r = fmaf(-fn, 0.693359375f, a);
    r = fmaf(fn, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p * r, r, r) + 1.0f;
    pun scale;
    scale.i = (n + 127) << 23;
    const float erfc = t * (p * scale.f);
    return fmaf(-(0.5f * (ax < FLT_MAX ? ax : FLT_MAX)), erfc, x > 0.0f ? x : 0.0f);
}

/* The clones are static: GCC gives a non-static target_clones function's dispatcher
 * default visibility whatever -fvisibility says, which would export it from the shared
 * library (tests/check-exports.sh). */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
bias_act_rows(float *y, int n_rows, int ldy, int n, const float *bias, ws_act act,
              const float *add)
{
    for (int r = 0; r < n_rows; r++) {
        float *row = y + (size_t)r * ldy;
        if (bias)
            for (int j = 0; j < n; j++)
                row[j] += bias[j];
#define GELU_AT(j, L) gelu_n(row + (j), L)
#define SILU_AT(j, L) silu_n(row + (j), L)
        if (act == WS_ACT_GELU)
            OVER_ROW(n, GELU_AT);
        else if (act == WS_ACT_RELU)
            for (int j = 0; j < n; j++)
                row[j] = row[j] > 0.0f ? row[j] : 0.0f;
        else if (act == WS_ACT_SILU)
            OVER_ROW(n, SILU_AT);
#undef GELU_AT
#undef SILU_AT
        if (add) {
            const float *a = add + (size_t)r * n;
            for (int j = 0; j < n; j++)
                row[j] += a[j];
        }
    }
}

void ws_bias_act_rows(float *y, int n_rows, int ldy, int n, const float *bias, ws_act act,
                      const float *add)
{
    bias_act_rows(y, n_rows, ldy, n, bias, act, add);
}

/* g[i] *= gelu'(z[i]) = Phi(z) + z*phi(z), i < L: Phi from erfc(|z|/sqrt2) as in gelu_n
 * (Phi = 1 - erfc/2 for z >= 0, erfc/2 below), phi = exp(-z^2/2) / sqrt(2 pi) */
static inline __attribute__((always_inline)) void gelu_grad_n(float *restrict g, const float *restrict z,
                                                              const int L)
{
    float u[LANES], m[LANES], e[LANES], p[LANES];
    for (int i = 0; i < L; i++)
        u[i] = (z[i] < 0.0f ? -z[i] : z[i]) * 0.70710678118654752f;
    erfc_nonneg_n(u, e, L);
    for (int i = 0; i < L; i++)
        m[i] = -u[i] * u[i];
    exp_nonpos_n(m, p, L);
    for (int i = 0; i < L; i++) {
        const float half_erfc = 0.5f * e[i];
        const float cdf = z[i] >= 0.0f ? 1.0f - half_erfc : half_erfc;
        g[i] *= cdf + z[i] * (0.39894228040143268f * p[i]);
    }
    CANON(g, L);
}

/* g[i] *= silu'(z[i]) = s + z*s*(1-s), i < L: s and 1-s from e = exp(-|z|) with no
 * cancellation */
static inline __attribute__((always_inline)) void silu_grad_n(float *restrict g, const float *restrict z,
                                                              const int L)
{
    float m[LANES], e[LANES];
    for (int i = 0; i < L; i++)
        m[i] = -(z[i] < 0.0f ? -z[i] : z[i]);
    exp_nonpos_n(m, e, L);
    for (int i = 0; i < L; i++) {
        const float r = 1.0f / (1.0f + e[i]);
        const float s = (z[i] >= 0.0f ? 1.0f : e[i]) * r, s1 = (z[i] >= 0.0f ? e[i] : 1.0f) * r;
        g[i] *= s + z[i] * s * s1;
    }
    CANON(g, L);
}

/* g[j] *= act'(z[j]) for j < n: the conv engine's gradient through act, branch-free:
 * RELU [z > 0], GELU gelu_grad_n, SILU silu_grad_n
 * (tests/test_engine.c: backward against the float64 oracle) */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
act_grad_rows(float *g, const float *z, int n, ws_act act)
{
#define GELU_GRAD_AT(j, L) gelu_grad_n(g + (j), z + (j), L)
#define SILU_GRAD_AT(j, L) silu_grad_n(g + (j), z + (j), L)
    if (act == WS_ACT_RELU) {
        for (int j = 0; j < n; j++)
            g[j] = z[j] > 0.0f ? g[j] : 0.0f;
    } else if (act == WS_ACT_GELU)
        OVER_ROW(n, GELU_GRAD_AT);
    else if (act == WS_ACT_SILU)
        OVER_ROW(n, SILU_GRAD_AT);
#undef GELU_GRAD_AT
#undef SILU_GRAD_AT
}

void ws_act_grad_rows(float *g, const float *z, int n, ws_act act)
{
    act_grad_rows(g, z, n, act);
}

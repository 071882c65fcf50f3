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

static inline __attribute__((always_inline)) float exp_nonpos(float x)
{
    /* x in [-87, 0]: below that the result is < 1.7e-38 and treated as such */
    x = x > -87.0f ? x : -87.0f;
    /* n = round(x / ln2) by the 1.5 * 2^23 shifter: adding it leaves n in the
     * low mantissa bits (no float->int conversion, which blocks vectorising) */
    pun k;
    k.f = x * 1.44269504088896341f + 12582912.0f;
    const float fn = k.f - 12582912.0f;
    const int32_t n = k.i - 0x4B400000;
    float r = x - fn * 0.693359375f; /* ln2 high part (exact product) */
    r = r - fn * -2.12194440e-4f;    /* ln2 low part */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    pun scale; /* 2^n */
    scale.i = (n + 127) << 23;
    return p * scale.f;
}

/* erfc(z) for z >= 0, the erfcc form in the file's header */
static inline __attribute__((always_inline)) float erfc_nonneg(float z)
{
    const float t = 1.0f / (1.0f + 0.5f * z);
    float q = 0.17087277f;
    q = q * t - 0.82215223f;
    q = q * t + 1.48851587f;
    q = q * t - 1.13520398f;
    q = q * t + 0.27886807f;
    q = q * t - 0.18628806f;
    q = q * t + 0.09678418f;
    q = q * t + 0.37409196f;
    q = q * t + 1.00002368f;
    q = q * t - 1.26551223f;
    return t * exp_nonpos(q - z * z);
}

static inline __attribute__((always_inline)) float gelu_inline(float x)
{
    const float ax = x < 0.0f ? -x : x;
    /* the factor capped at FLT_MAX, so that gelu(inf) = inf (not inf * 0) */
    return (x > 0.0f ? x : 0.0f) - 0.5f * (ax < FLT_MAX ? ax : FLT_MAX) * erfc_nonneg(ax * 0.70710678118654752f);
}

/* silu(x) = x * sigmoid(x), sigmoid from e = exp(-|x|) so that exp never overflows:
 * sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e) for x < 0 */
static inline __attribute__((always_inline)) float silu_inline(float x)
{
    const float ax = x < 0.0f ? -x : x;
    const float e = exp_nonpos(-ax);
    return x * ((x >= 0.0f ? 1.0f : e) / (1.0f + e));
}

float ws_gelu(float x)
{
    return gelu_inline(x);
}

/* gelu_inline's steps with every a*b + c fused: the scalar model of sgemm.c's gelu512 and
 * gelu256, which must give its bits lane for lane (tests/test_conv.c) */
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
        if (act == WS_ACT_GELU)
            for (int j = 0; j < n; j++)
                row[j] = gelu_inline(row[j]);
        else if (act == WS_ACT_RELU)
            for (int j = 0; j < n; j++)
                row[j] = row[j] > 0.0f ? row[j] : 0.0f;
        else if (act == WS_ACT_SILU)
            for (int j = 0; j < n; j++)
                row[j] = silu_inline(row[j]);
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

/* g[j] *= act'(z[j]) for j < n: the conv engine's gradient through act, branch-free:
 *   RELU  [z > 0]
 *   GELU  Phi(z) + z*phi(z), Phi from erfc(|z|/sqrt2) as in gelu_inline (Phi = 1 - erfc/2
 *         for z >= 0, erfc/2 below), phi = exp(-z^2/2) / sqrt(2 pi)
 *   SILU  s + z*s*(1-s), s and 1-s from e = exp(-|z|) with no cancellation
 * (tests/test_engine.c: backward against the float64 oracle) */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
act_grad_rows(float *g, const float *z, int n, ws_act act)
{
    if (act == WS_ACT_RELU) {
        for (int j = 0; j < n; j++)
            g[j] = z[j] > 0.0f ? g[j] : 0.0f;
    } else if (act == WS_ACT_GELU) {
        for (int j = 0; j < n; j++) {
            const float x = z[j], ax = x < 0.0f ? -x : x;
            const float u = ax * 0.70710678118654752f;
            const float half_erfc = 0.5f * erfc_nonneg(u);
            const float cdf = x >= 0.0f ? 1.0f - half_erfc : half_erfc;
            const float pdf = 0.39894228040143268f * exp_nonpos(-u * u);
            g[j] *= cdf + x * pdf;
        }
    } else if (act == WS_ACT_SILU) {
        for (int j = 0; j < n; j++) {
            const float x = z[j], ax = x < 0.0f ? -x : x;
            const float e = exp_nonpos(-ax), r = 1.0f / (1.0f + e);
            const float s = (x >= 0.0f ? 1.0f : e) * r, s1 = (x >= 0.0f ? e : 1.0f) * r;
            g[j] *= s + x * s * s1;
        }
    }
}

void ws_act_grad_rows(float *g, const float *z, int n, ws_act act)
{
    act_grad_rows(g, z, n, act);
}

/* gelu_ptx.c - the erf GELU as a PTX instruction sequence and its C model.
 * Math, coefficients' origin and error bounds: gelu_ptx.h. Tested by
 * tests/test_ptx.c (gelu_model_error_within_bound) and tests/test_gpu.c
 * (gelu_ptx_matches_double). */
#include <math.h>

#include "gelu_ptx.h"

#define Z_CLAMP 4.0f          /* erfc(4) = 1.5e-8: beyond, t = 0 */
#define INV_SQRT2 0x1.6a09e6p-1f

/* log2(erfc(z)) = z * R(z), R of degree 9 (R[0] is the z^1 coefficient):
 * least squares in z on [0, 4], weighted by 1/|log2 erfc|, double, rounded
 * to float. Horner in z itself, not in a shifted variable, so that near
 * z = 0 the sum carries no cancellation. */
static const float R[10] = {
    -0x1.a0be88p+0f, -0x1.d63da2p-1f, -0x1.2fd2p-3f,   0x1.c87526p-6f,  -0x1.b72b2p-14f,
    -0x1.1aa0e8p-9f, 0x1.b2dc84p-11f, -0x1.5d6368p-13f, 0x1.32695cp-16f, -0x1.cd7d56p-21f,
};
#define NR (int)(sizeof R / sizeof R[0])

/* t = erfc(|z|) as the PTX computes it (exp2f standing in for ex2.approx) */
static float erfc_abs(float az)
{
    float zc = fminf(az, Z_CLAMP);
    float q = R[NR - 1];
    for (int i = NR - 2; i >= 0; i--)
        q = fmaf(q, zc, R[i]);
    q = q * zc;
    return az > Z_CLAMP ? 0.0f : exp2f(q);
}

float ws_erf_model(float z)
{
    return copysignf(1.0f - erfc_abs(fabsf(z)), z);
}

float ws_gelu_model(float x)
{
    float t = erfc_abs(fabsf(x * INV_SQRT2));
    float phi = x > 0.0f ? fmaf(t, -0.5f, 1.0f) : 0.5f * t;
    return x * phi;
}

void ws_gelu_emit(ptx_buf *b, const char *y, const char *x)
{
    preg az = ws_ptx_reg(b, PTX_F32), zc = ws_ptx_reg(b, PTX_F32), q = ws_ptx_reg(b, PTX_F32);
    preg t = ws_ptx_reg(b, PTX_F32), pp = ws_ptx_reg(b, PTX_F32), pn = ws_ptx_reg(b, PTX_F32);
    preg big = ws_ptx_reg(b, PTX_PRED), pos = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_comment(b, "%s = gelu(%s) = x * Phi(x); t = erfc(|x|/sqrt2) = 2^(z R(z)); Phi = 1 - t/2 (x > 0), t/2", y, x);
    ws_ptx_ins(b, "mul.f32 %s, %s, %s", az.n, x, ws_ptx_f32(INV_SQRT2).s);
    ws_ptx_ins(b, "abs.f32 %s, %s", az.n, az.n);
    ws_ptx_ins(b, "min.f32 %s, %s, %s", zc.n, az.n, ws_ptx_f32(Z_CLAMP).s);
    ws_ptx_ins(b, "mov.f32 %s, %s", q.n, ws_ptx_f32(R[NR - 1]).s);
    for (int i = NR - 2; i >= 0; i--)
        ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", q.n, q.n, zc.n, ws_ptx_f32(R[i]).s);
    ws_ptx_ins(b, "mul.f32 %s, %s, %s", q.n, q.n, zc.n);
    ws_ptx_ins(b, "ex2.approx.ftz.f32 %s, %s", t.n, q.n);
    ws_ptx_ins(b, "setp.gt.f32 %s, %s, %s", big.n, az.n, ws_ptx_f32(Z_CLAMP).s);
    ws_ptx_ins(b, "selp.f32 %s, 0f00000000, %s, %s", t.n, t.n, big.n);
    ws_ptx_ins(b, "fma.rn.f32 %s, %s, 0fBF000000, 0f3F800000", pp.n, t.n);
    ws_ptx_ins(b, "mul.f32 %s, %s, 0f3F000000", pn.n, t.n);
    ws_ptx_ins(b, "setp.gt.f32 %s, %s, 0f00000000", pos.n, x);
    ws_ptx_ins(b, "selp.f32 %s, %s, %s, %s", pp.n, pp.n, pn.n, pos.n);
    ws_ptx_ins(b, "mul.f32 %s, %s, %s", y, x, pp.n);
}

/* gelu_ptx.c - the erf GELU as a PTX instruction sequence and its C model.
 * Math, coefficients' origin and error bounds: gelu_ptx.h. Tested by
 * tests/test_ptx.c (gelu_model_error_within_bound) and tests/test_gpu.c
 * (gelu_ptx_matches_double). */
#include <math.h>

#include "gelu_ptx.h"

#define Z_SPLIT 0.9f          /* |z| below: odd polynomial for erf */
#define Z_CLAMP 4.0f          /* erfc(4) = 1.5e-8: beyond, erf(z) rounds to +-1 */
#define INV_SQRT2 0x1.6a09e6p-1f
#define P1_A 0x1.3c0ca4p+1f   /* 2 / 0.81: z^2 in [0, 0.81] -> s in [-1, 1] */
#define P2_A 0x1.4a5294p-1f   /* 2 / 3.1 */
#define P2_B -0x1.94a52ap+0f  /* -(0.9 + 4) / 3.1 */

/* erf(z)/z = P(s), Chebyshev interpolant of degree 6, monomials in s */
static const float P1[7] = {
    0x1.fc5ddp-1f, -0x1.ec22acp-4f, 0x1.c7db74p-7f, -0x1.56551p-10f,
    0x1.a8093ep-14f, -0x1.be8ff2p-18f, 0x1.9427d2p-22f,
};
/* log2(erfc(z)) = Q(s'), Chebyshev interpolant of degree 10 on [0.9, 4] */
static const float P2[11] = {
    -0x1.5c2a2p+3f, -0x1.7846eap+3f, -0x1.a20744p+1f, -0x1.f16968p-5f,
    0x1.363544p-6f, -0x1.77e8bcp-8f, 0x1.ab9b04p-10f, -0x1.c0085ep-12f,
    0x1.82bd48p-14f, -0x1.40627ep-19f, -0x1.8d803cp-18f,
};
#define NP1 (int)(sizeof P1 / sizeof P1[0])
#define NP2 (int)(sizeof P2 / sizeof P2[0])

static float erfc_tail(float az)
{
    float s = fmaf(fminf(az, Z_CLAMP), P2_A, P2_B);
    float q = P2[NP2 - 1];
    for (int i = NP2 - 2; i >= 0; i--)
        q = fmaf(q, s, P2[i]);
    return az > Z_CLAMP ? 0.0f : exp2f(q);
}

static float erf_small(float z)
{
    float s = fmaf(z * z, P1_A, -1.0f);
    float p = P1[NP1 - 1];
    for (int i = NP1 - 2; i >= 0; i--)
        p = fmaf(p, s, P1[i]);
    return z * p;
}

float ws_erf_model(float z)
{
    float az = fabsf(z);
    if (az < Z_SPLIT)
        return erf_small(z);
    return copysignf(1.0f - erfc_tail(az), z);
}

float ws_gelu_model(float x)
{
    float z = x * INV_SQRT2, az = fabsf(z), hx = 0.5f * x;
    if (az < Z_SPLIT)
        return fmaf(hx, erf_small(z), hx);
    float t = erfc_tail(az);
    return x > 0.0f ? x * fmaf(t, -0.5f, 1.0f) : hx * t;
}

void ws_gelu_emit(ptx_buf *b, const char *y, const char *x)
{
    preg z = ptx_reg(b, PTX_F32), az = ptx_reg(b, PTX_F32), hx = ptx_reg(b, PTX_F32);
    preg w = ptx_reg(b, PTX_F32), s = ptx_reg(b, PTX_F32), p = ptx_reg(b, PTX_F32);
    preg g1 = ptx_reg(b, PTX_F32), s2 = ptx_reg(b, PTX_F32), q = ptx_reg(b, PTX_F32);
    preg t = ptx_reg(b, PTX_F32), gp = ptx_reg(b, PTX_F32), gn = ptx_reg(b, PTX_F32);
    preg g2 = ptx_reg(b, PTX_F32);
    preg small = ptx_reg(b, PTX_PRED), pos = ptx_reg(b, PTX_PRED);
    ptx_comment(b, "gelu(%s) -> %s: erf by odd polynomial for |z| < 0.9, else erfc = 2^Q", x, y);
    ptx_ins(b, "mul.f32 %s, %s, %s", z.n, x, ptx_f32(INV_SQRT2).s);
    ptx_ins(b, "abs.f32 %s, %s", az.n, z.n);
    ptx_ins(b, "mul.f32 %s, %s, 0f3F000000", hx.n, x);
    /* piece 1: erf(z) = z * P(z^2 * A - 1) */
    ptx_ins(b, "mul.f32 %s, %s, %s", w.n, z.n, z.n);
    ptx_ins(b, "fma.rn.f32 %s, %s, %s, 0fBF800000", s.n, w.n, ptx_f32(P1_A).s);
    ptx_ins(b, "mov.f32 %s, %s", p.n, ptx_f32(P1[NP1 - 1]).s);
    for (int i = NP1 - 2; i >= 0; i--)
        ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", p.n, p.n, s.n, ptx_f32(P1[i]).s);
    ptx_ins(b, "mul.f32 %s, %s, %s", p.n, z.n, p.n);
    ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", g1.n, hx.n, p.n, hx.n);
    /* piece 2: t = erfc(|z|) = 2^Q(min(|z|, 4) * A + B) */
    ptx_ins(b, "min.f32 %s, %s, %s", s2.n, az.n, ptx_f32(Z_CLAMP).s);
    ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", s2.n, s2.n, ptx_f32(P2_A).s, ptx_f32(P2_B).s);
    ptx_ins(b, "mov.f32 %s, %s", q.n, ptx_f32(P2[NP2 - 1]).s);
    for (int i = NP2 - 2; i >= 0; i--)
        ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", q.n, q.n, s2.n, ptx_f32(P2[i]).s);
    ptx_ins(b, "ex2.approx.ftz.f32 %s, %s", t.n, q.n);
    ptx_ins(b, "setp.gt.f32 %s, %s, %s", pos.n, az.n, ptx_f32(Z_CLAMP).s);
    ptx_ins(b, "selp.f32 %s, 0f00000000, %s, %s", t.n, t.n, pos.n);
    ptx_ins(b, "fma.rn.f32 %s, %s, 0fBF000000, 0f3F800000", gp.n, t.n);
    ptx_ins(b, "mul.f32 %s, %s, %s", gp.n, x, gp.n);
    ptx_ins(b, "mul.f32 %s, %s, %s", gn.n, hx.n, t.n);
    ptx_ins(b, "setp.gt.f32 %s, %s, 0f00000000", pos.n, x);
    ptx_ins(b, "selp.f32 %s, %s, %s, %s", g2.n, gp.n, gn.n, pos.n);
    ptx_ins(b, "setp.lt.f32 %s, %s, %s", small.n, az.n, ptx_f32(Z_SPLIT).s);
    ptx_ins(b, "selp.f32 %s, %s, %s, %s", y, g1.n, g2.n, small.n);
}

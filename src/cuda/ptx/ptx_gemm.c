/* ptx_gemm.c - the dense implicit-GEMM forward kernel's emitter; tiling, mapping and
 * parameters in ptx_gemm.h. Emission is a pure function of the descriptor and the compute
 * capability. Tested by tests/test_gpu_conv.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_act.h"
#include "ptx_emit.h"
#include "ptx_epi.h"
#include "ptx_gemm.h"
#include "ptx_hgemm.h"
#include "ptx_params.h"

#define BN WS_GEMM_BN
#define BK WS_GEMM_BK
#define NT WS_GEMM_THREADS
#define LOG2_BK (BK == 16 ? 4 : 3)
#define TX 16              /* threads along positions; BN / TX = 8 per thread */
#define TY 16              /* threads along channels;  BM / TY = 8 or 4 per thread (TM) */
#define NA_MAX (WS_GEMM_BM * BK / NT) /* A elements per thread per stage: BM*BK/NT, A_ROWS apart */
#define NB (BK * BN / NT)  /* B elements per thread per stage: BK/2, r 2 apart */
#define A_ROWS (NT / BK)   /* 256/BK */
#define B_RSTEP (NT / BN)  /* 2 */

#define MBK WS_GEMM_MMA_BK /* r per stage of the mma kernel: two k16 steps */
#define MRS 80            /* bytes per shared row of the mma kernel: 32 halves + 16 of padding */
#define MMA_N 16          /* A and B elements per thread per stage of the mma kernel (BM 128,
                             16-bit math; 8 of each for tf32) */

#define I(...) ws_ptx_ins(b, __VA_ARGS__)

_Static_assert((BK == 8 || BK == 16) && NT == 256 && BN == 128 && TX * TY == NT &&
               WS_GEMM_BM / TY == 8 && BN / TX == 8 && WS_GEMM_BM_SMALL / TY == 4,
               "the emitter below is written for 8x8 (4x8) per thread, 256 threads, BK 8 or 16");

int ws_gemm_fits(const ws_conv_desc *d)
{
    if (d->op != WS_CONV_FWD || d->groups != 1)
        return 0;
    /* r = j*K + k and its bounds in u32 with room for a step past the end */
    if ((long long)d->c_in * d->k > INT_MAX - 2 * MBK)
        return 0;
    return 1;
}

int ws_gemm_bm(const ws_conv_desc *d)
{
    return d->c_out <= WS_GEMM_BM_SMALL ? WS_GEMM_BM_SMALL : WS_GEMM_BM;
}

int ws_gemm_call_fits(const ws_conv_desc *d, int n, int t_out)
{
    if (!ws_gemm_fits(d) || n < 1 || t_out < 1)
        return 0;
    const long long P = (long long)n * t_out;
    if (P > INT_MAX - BN) /* positions in u32, p0 + BN without wrap */
        return 0;
    const int bm = ws_gemm_bm(d);
    if (((long long)d->c_out + bm - 1) / bm > 65535) /* grid y */
        return 0;
    /* the channel-lane gather's u = S*t - P_L + D*k in s32 */
    if (ws_gemm_ffma_cl(d) && (long long)t_out * d->stride + (long long)d->dilation * d->k + d->pad_l > INT_MAX)
        return 0;
    return 1;
}

int ws_gemm_wgmma(const ws_conv_desc *d, int cc_major, int cc_minor)
{
    return WS_GEMM_WGMMA && cc_major == 9 && cc_minor == 0 && ws_gemm_mma(d) && ws_gemm_bm(d) == WS_GEMM_BM;
}

int ws_gemm_mma(const ws_conv_desc *d)
{
    return WS_GEMM_MMA && ws_gemm_fits(d) && d->math != WS_MATH_F32;
}

int ws_gemm_mma_wbytes(const ws_conv_desc *d)
{
    return d->math == WS_MATH_TF32 ? 4 : 2;
}

/* the mma kernel's r per stage: 64 bytes of a shared row, two k steps of 32 bytes */
static int mma_bk(const ws_conv_desc *d)
{
    return 64 / ws_gemm_mma_wbytes(d);
}

static const char *mma_type(const ws_conv_desc *d)
{
    return d->math == WS_MATH_BF16 ? "bf16" : d->math == WS_MATH_F16 ? "f16" : "tf32";
}

void ws_gemm_name(const ws_conv_desc *d, char name[WS_GEMM_NAME_MAX])
{
    snprintf(name, WS_GEMM_NAME_MAX, "ws_gemm_%s_c%d_%d_k%d_s%d_d%d_p%d_%s_%s_%s_%s_%s_%s",
             !ws_gemm_mma(d) ? "fwd" : d->math == WS_MATH_BF16 ? "mma_bf16"
                                 : d->math == WS_MATH_F16  ? "mma_f16" : "mma_tf32",
             d->c_in, d->c_out, d->k, d->stride, d->dilation, d->pad_l,
             d->x_layout == WS_NCL ? "ncl" : "nlc", d->y_layout == WS_NCL ? "ncl" : "nlc",
             ws_ptx_type_name(d->x_type), ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre), ws_ptx_act_name(d->act));
}

/* the kernel being written */
typedef struct {
    ptx_buf *b;
    const ws_conv_desc *d;
    long long R;      /* C_in * K */
    int BM, TM, NA;   /* channels per block, per thread, A elements per thread per stage */
    int AS, A_BYTES, STAGE; /* As row stride in floats (BM + 4: the transposing stores hit
                               32 banks), bytes of As, bytes of a stage (As then Bs) */
    int xs, ys;       /* bytes per element of x, of y (and add) */
    int NBV;          /* B elements per thread per stage: NB, or nbm for the mma kernel */
    /* per thread, fixed for the block */
    preg tin32, tin64, tout32, npos;
    preg wa;          /* &W[o0 + tid/BK, 0] (mma: &W[o0 + tid/tpr, 0]) */
    preg aok[NA_MAX]; /* row o0 + tid/BK + A_ROWS*e < C_out */
    preg ka;          /* tid % BK: A's r within the stage (mma: (tid % tpr) * NA) */
    preg kb;          /* tid / 128: B's first r within the stage (mma: (tid / 128) * nbm) */
    preg pv;          /* B's position p0 + tid%128 < P */
    preg ub;          /* (s64) S*t - P_L of B's position */
    preg xn;          /* &x[n, 0, 0] of B's position */
    /* raw loads in flight */
    preg av[MMA_N];   /* f32 */
    preg bv[MMA_N];   /* f32, or b16 (f16), or b32 holding the u16 (bf16) */
    /* the mma kernel (ptx_gemm.h, TENSOR CORES) */
    const char *mt;   /* "bf16", "f16" or "tf32" */
    int es;           /* bytes of an element in shared memory: 2, or 4 (tf32) */
    int mbk;          /* r per stage: 32, or 16 (tf32): 64 bytes of a row either way */
    int nbm;          /* B elements per thread per stage: mbk / 2 */
    int tpr;          /* threads per A row: mbk / NA */
    int kmajor;       /* r = k*C_in + j (ws_gemm_mma_kmajor) */
    int vecw;         /* 16-byte W loads (R a multiple of 16 / es): av holds NA * es / 4 words,
                         else NA elements (u16 or b32) */
    int raw;          /* x already in the math type and pre NONE: pairs packed as loaded */
    preg sT;          /* NCL, kmajor: T_in * xs, the step between channels */
    int bvec;         /* NLC, kmajor: a thread's nbm channels of one u are one run of memory,
                         loaded 16 bytes at a time into bx (ws_gemm_x_align) */
    ws_ptx_vec bx[4]; /* ... those vectors of 16 / xs elements: nbm * xs / 16 of them */
    int cl;           /* FFMA, k-major, NLC f32 x: a stage's x by channel lanes (emit_gather_cl):
                         thread (q = tid%4, pl = tid/4) loads channels 4q.. of positions pl and
                         pl + 64, 16 bytes each (a warp: 8 positions x 64 bytes); Bs swizzled */
    preg cpv[2], cub[2], cn[2]; /* cl: per position pl + 64e: p < P, S*t - P_L (s32: ws_gemm_call_fits), n */
    int wpack;        /* FFMA, ws_gemm_ffma_wpack: A by cp.async from W packed [R][C_out], NAC
                         16-byte chunks a thread a stage (no registers, no stores) */
    int NAC;
    preg cga[2], cso[2], cok[2]; /* wpack: chunk e's &W[kk][o0 + 4oc] (r0 0), its As offset
                                    (bytes), o0 + 4oc < C_out */
    int split;        /* FFMA: the _split entry (grid z = the parts of the sum, raw partials) */
    int swap;         /* FFMA, NLC y: thread (tx, ty) = (tid/16, tid%16), so that a warp's
                         16 lanes of one tx store 16 runs of 4 channels of one position */
    int wg;           /* wgmma (sm_90a): the stages in rows of 64 bytes with the 64-byte swizzle
                         (chunk c of row r at (c ^ (r/2 % 4)) * 16), read by the tensor cores */
} gk;

/* registers for the raw B values of x_type */
static void alloc_raw(gk *s)
{
    for (int e = 0; e < s->NA; e++)
        s->av[e] = ws_ptx_reg(s->b, PTX_F32);
    if (s->bvec)
        for (int q = 0; q < s->NBV * s->xs / 16; q++)
            s->bx[q] = ws_ptx_vec_new(s->b, s->d->x_type, 16 / s->xs);
    else
        for (int e = 0; e < s->NBV; e++)
            s->bv[e] = ws_ptx_reg(s->b, s->d->x_type == WS_F32 ? PTX_F32 : s->d->x_type == WS_F16 ? PTX_B16 : PTX_B32);
}

/* float value of the raw x element bv[e], pre applied */
static preg b_value(gk *s, int e)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    preg v;
    if (s->bvec) { /* element e of the loaded vectors */
        const int V = 16 / s->xs;
        v = ws_ptx_vec_elem(b, &s->bx[e / V], e % V);
    } else if (d->x_type == WS_F32) {
        v = s->bv[e];
    } else if (d->x_type == WS_F16) {
        v = ws_ptx_reg(b, PTX_F32);
        I("cvt.f32.f16 %s, %s", v.n, s->bv[e].n);
    } else {
        preg t = ws_ptx_reg(b, PTX_B32);
        v = ws_ptx_reg(b, PTX_F32);
        I("shl.b32 %s, %s, 16", t.n, s->bv[e].n);
        I("mov.b32 %s, %s", v.n, t.n);
    }
    ws_ptx_act(b, v, d->pre); /* pre(0) = 0 for every act: the padding stays zero */
    return v;
}

/* bv[e] = raw x of X[r0 + kb + rstep*e][p0 + tid%128] (zero where out of range) */
static void emit_gather_b(gk *s, preg r0, int e, int rstep)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long R = s->R;
    preg r = ws_ptx_reg(b, PTX_B32), j = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), uok = ws_ptx_reg(b, PTX_PRED);
    preg u = ws_ptx_reg(b, PTX_B64), off = ws_ptx_reg(b, PTX_B64), xa = ws_ptx_reg(b, PTX_B64);
    I("add.u32 %s, %s, %s", r.n, r0.n, s->kb.n);
    if (e)
        I("add.u32 %s, %s, %d", r.n, r.n, rstep * e);
    I("setp.lt.u32 %s, %s, %lld", ok.n, r.n, R);
    I("and.pred %s, %s, %s", ok.n, ok.n, s->pv.n);
    if (d->k == 1) {
        I("mov.u32 %s, %s", j.n, r.n);
        I("mov.u32 %s, 0", k.n);
    } else {
        I("div.u32 %s, %s, %d", j.n, r.n, d->k);
        I("mul.lo.u32 %s, %s, %d", k.n, j.n, d->k);
        I("sub.u32 %s, %s, %s", k.n, r.n, k.n);
    }
    I("mul.wide.u32 %s, %s, %d", u.n, k.n, d->dilation);
    I("add.s64 %s, %s, %s", u.n, u.n, s->ub.n);
    I("setp.lt.u64 %s, %s, %s", uok.n, u.n, s->tin64.n);
    I("and.pred %s, %s, %s", ok.n, ok.n, uok.n);
    if (d->x_layout == WS_NCL) {
        I("mul.wide.u32 %s, %s, %s", off.n, j.n, s->tin32.n); /* x[n][j][u] */
        I("add.u64 %s, %s, %s", off.n, off.n, u.n);
    } else {
        preg j64 = ws_ptx_reg(b, PTX_B64);
        I("cvt.u64.u32 %s, %s", j64.n, j.n);
        I("mad.lo.u64 %s, %s, %d, %s", off.n, u.n, d->c_in, j64.n); /* x[n][u][j] */
    }
    I("mad.lo.u64 %s, %s, %d, %s", xa.n, off.n, s->xs, s->xn.n);
    if (d->x_type == WS_F32) {
        I("mov.f32 %s, 0f00000000", s->bv[e].n);
        I("@%s ld.global.nc.f32 %s, [%s]", ok.n, s->bv[e].n, xa.n);
    } else if (d->x_type == WS_F16) {
        I("mov.b16 %s, 0", s->bv[e].n);
        I("@%s ld.global.nc.b16 %s, [%s]", ok.n, s->bv[e].n, xa.n);
    } else {
        I("mov.b32 %s, 0", s->bv[e].n);
        I("@%s ld.global.nc.u16 %s, [%s]", ok.n, s->bv[e].n, xa.n);
    }
}

/* r = k*C_in + j (kmajor): bv[e] = raw x of X[r0 + kb + e][p0 + tid%128], e < nbm (kb the
 * thread's first r of the stage, a multiple of nbm): one tap k and channels j .. j + nbm - 1,
 * one u and one test for all; NLC with bvec: the words bx, 16 bytes at a time */
static void emit_gather_kmajor(gk *s, preg r0)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long R = s->R;
    ws_ptx_comment(b, "B: x of X[r0 + (tid/128)*%d + e][p0 + tid%%128], r = k*C_in + j: one k, j .. j+%d, "
                      "u = S*t - P_L + D*k", s->nbm, s->nbm - 1);
    preg r = ws_ptx_reg(b, PTX_B32), j = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), uok = ws_ptx_reg(b, PTX_PRED);
    preg u = ws_ptx_reg(b, PTX_B64), off = ws_ptx_reg(b, PTX_B64), xa = ws_ptx_reg(b, PTX_B64);
    I("add.u32 %s, %s, %s", r.n, r0.n, s->kb.n);
    I("setp.lt.u32 %s, %s, %lld", ok.n, r.n, R);
    I("and.pred %s, %s, %s", ok.n, ok.n, s->pv.n);
    I("div.u32 %s, %s, %d", k.n, r.n, d->c_in);
    I("mul.lo.u32 %s, %s, %d", j.n, k.n, d->c_in);
    I("sub.u32 %s, %s, %s", j.n, r.n, j.n);
    I("mul.wide.u32 %s, %s, %d", u.n, k.n, d->dilation);
    I("add.s64 %s, %s, %s", u.n, u.n, s->ub.n);
    I("setp.lt.u64 %s, %s, %s", uok.n, u.n, s->tin64.n);
    I("and.pred %s, %s, %s", ok.n, ok.n, uok.n);
    if (d->x_layout == WS_NCL) {
        I("mul.wide.u32 %s, %s, %s", off.n, j.n, s->tin32.n); /* x[n][j][u] */
        I("add.u64 %s, %s, %s", off.n, off.n, u.n);
    } else {
        preg j64 = ws_ptx_reg(b, PTX_B64);
        I("cvt.u64.u32 %s, %s", j64.n, j.n);
        I("mad.lo.u64 %s, %s, %d, %s", off.n, u.n, d->c_in, j64.n); /* x[n][u][j] */
    }
    I("mad.lo.u64 %s, %s, %d, %s", xa.n, off.n, s->xs, s->xn.n);
    if (s->bvec) {
        ws_ptx_comment(b, "NLC: the %d channels are %d bytes of one row, 16 at a time", s->nbm, s->nbm * s->xs);
        for (int q = 0; q < s->nbm * s->xs / 16; q++) {
            preg qa = xa;
            if (q) {
                qa = ws_ptx_reg(b, PTX_B64);
                I("add.u64 %s, %s, %d", qa.n, xa.n, 16 * q);
            }
            ws_ptx_vec_load(b, &s->bx[q], qa, ok);
        }
        return;
    }
    for (int e = 0; e < s->nbm; e++) { /* NCL (NLC took the 16-byte loads above) */
        const int imm = 0;
        if (e)
            I("add.u64 %s, %s, %s", xa.n, xa.n, s->sT.n);
        if (d->x_type == WS_F32) {
            I("mov.f32 %s, 0f00000000", s->bv[e].n);
            I("@%s ld.global.nc.f32 %s, [%s+%d]", ok.n, s->bv[e].n, xa.n, imm);
        } else if (d->x_type == WS_F16) {
            I("mov.b16 %s, 0", s->bv[e].n);
            I("@%s ld.global.nc.b16 %s, [%s+%d]", ok.n, s->bv[e].n, xa.n, imm);
        } else {
            I("mov.b32 %s, 0", s->bv[e].n);
            I("@%s ld.global.nc.u16 %s, [%s+%d]", ok.n, s->bv[e].n, xa.n, imm);
        }
    }
}

/* cl (k-major, NLC f32 x): the stage's X rows r0 .. r0 + 15 (one tap k, channels j0 ..
 * j0 + 15) for positions p0 + tid/4 + 64e, e < 2: bx[e] = x[n][u][j0 + 4(tid%4) .. + 3],
 * u = S*t - P_L + D*k, zero where out of range; k and j0 given */
static void emit_gather_cl(gk *s, preg k, preg j0)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    ws_ptx_comment(b, "B: x[n][u][j0 + 4q .. 4q+3], q = tid%%4, positions p0 + tid/4 + 64e: bytes 16 at a time");
    preg du = ws_ptx_reg(b, PTX_B32), tq = ws_ptx_reg(b, PTX_B32), px = ws_ptx_reg(b, PTX_B64);
    preg jq = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, px, ws_params_of(WS_PARAMS_FWD), WS_FWD_X);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("mul.lo.u32 %s, %s, %d", du.n, k.n, d->dilation);
    I("mov.u32 %s, %%tid.x", tq.n);
    I("and.b32 %s, %s, 3", tq.n, tq.n);
    I("mad.lo.u32 %s, %s, 4, %s", tq.n, tq.n, j0.n);
    I("mul.wide.u32 %s, %s, 4", jq.n, tq.n);
    I("add.u64 %s, %s, %s", jq.n, jq.n, px.n);
    for (int e = 0; e < 2; e++) {
        preg u = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), xa = ws_ptx_reg(b, PTX_B64);
        preg u64 = ws_ptx_reg(b, PTX_B64);
        ws_ptx_comment(b, "u = S*t - P_L + D*k (s32), valid when 0 <= u < T_in; x + ((n*T_in + u)*C_in + j)*4");
        I("add.s32 %s, %s, %s", u.n, s->cub[e].n, du.n);
        I("setp.lt.u32 %s, %s, %s", ok.n, u.n, s->tin32.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, s->cpv[e].n);
        I("cvt.u64.u32 %s, %s", u64.n, u.n);
        I("mad.wide.u32 %s, %s, %s, %s", xa.n, s->cn[e].n, s->tin32.n, u64.n);
        I("mul.lo.u64 %s, %s, %lld", xa.n, xa.n, (long long)d->c_in * 4);
        I("add.u64 %s, %s, %s", xa.n, xa.n, jq.n);
        ws_ptx_vec_load(b, &s->bx[e], xa, ok);
    }
}

/* av[e] = W[o0 + tid/BK + A_ROWS*e, r0 + tid%BK], bv[e] = raw x of X[r0 + tid/128 + 2e, p0 + tid%128]
 * (zero where out of range); no register is consumed here, so the loads are in flight
 * while the current stage is multiplied */
static void emit_gload(gk *s, preg r0, preg so)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long R = s->R;
    if (s->wpack) {
        ws_ptx_comment(b, "A: cp.async As[kk][4oc ..] <- W[r0 + kk][o0 + 4oc ..] (packed [R][C_out]), "
                          "chunk tid + 256e, kk = chunk / %d, oc = chunk %% %d, zeros past C_out",
                       s->BM / 4, s->BM / 4);
        preg off = ws_ptx_reg(b, PTX_B64), sb = ws_ptx_reg(b, PTX_B32);
        I("mul.wide.u32 %s, %s, %d", off.n, r0.n, d->c_out * 4);
        I("mov.u32 %s, smem", sb.n);
        I("add.u32 %s, %s, %s", sb.n, sb.n, so.n);
        for (int e = 0; e < s->NAC; e++) {
            preg ga = ws_ptx_reg(b, PTX_B64), sa = ws_ptx_reg(b, PTX_B32), sz = ws_ptx_reg(b, PTX_B32);
            I("add.u64 %s, %s, %s", ga.n, s->cga[e].n, off.n);
            I("selp.b64 %s, %s, %s, %s", ga.n, ga.n, s->cga[e].n, s->cok[e].n); /* in range either way */
            I("selp.u32 %s, 16, 0, %s", sz.n, s->cok[e].n);
            I("add.u32 %s, %s, %s", sa.n, sb.n, s->cso[e].n);
            I("cp.async.cg.shared.global [%s], [%s], 16, %s", sa.n, ga.n, sz.n);
        }
        I("cp.async.commit_group");
    }
    if (s->kmajor) {
        /* a stage is one tap k and channels j0 .. j0 + BK - 1 (C_in % BK == 0, R % BK == 0):
         * W[o][r0 + q] = w[o][j0 + q][k] at (j0 + q)*K + k of row o */
        ws_ptx_comment(b, "A: W[o0 + tid/%d + %de][r0 + tid%%%d], r0 = k*C_in + j0: w[o][j0 + tid%%%d][k], e < %d",
                       BK, A_ROWS, BK, BK, s->NA);
        preg k = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64);
        preg j0 = ws_ptx_reg(b, PTX_B32);
        I("div.u32 %s, %s, %d", k.n, r0.n, d->c_in);
        I("mul.lo.u32 %s, %s, %d", j0.n, k.n, d->c_in);
        I("sub.u32 %s, %s, %s", j0.n, r0.n, j0.n);
        if (!s->wpack) {
            I("add.u32 %s, %s, %s", q.n, j0.n, s->ka.n);
            I("mad.lo.u32 %s, %s, %d, %s", q.n, q.n, d->k, k.n);
            I("mad.wide.u32 %s, %s, 4, %s", ga.n, q.n, s->wa.n);
            for (int e = 0; e < s->NA; e++) {
                if (e)
                    I("add.u64 %s, %s, %lld", ga.n, ga.n, (long long)A_ROWS * R * 4);
                I("mov.f32 %s, 0f00000000", s->av[e].n);
                I("@%s ld.global.nc.f32 %s, [%s]", s->aok[e].n, s->av[e].n, ga.n);
            }
        }
        if (s->cl)
            emit_gather_cl(s, k, j0);
        else
            emit_gather_kmajor(s, r0);
        return;
    }
    ws_ptx_comment(b, "A: W[o0 + tid/%d + %de][r0 + tid%%%d], e < %d", BK, A_ROWS, BK, s->NA);
    {
        preg r = ws_ptx_reg(b, PTX_B32), rok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
        I("add.u32 %s, %s, %s", r.n, r0.n, s->ka.n);
        I("setp.lt.u32 %s, %s, %lld", rok.n, r.n, R);
        I("mad.wide.u32 %s, %s, 4, %s", ga.n, r.n, s->wa.n);
        for (int e = 0; e < s->NA; e++) {
            preg ok = ws_ptx_reg(b, PTX_PRED);
            I("and.pred %s, %s, %s", ok.n, rok.n, s->aok[e].n);
            if (e)
                I("add.u64 %s, %s, %lld", ga.n, ga.n, (long long)A_ROWS * R * 4);
            I("mov.f32 %s, 0f00000000", s->av[e].n);
            I("@%s ld.global.nc.f32 %s, [%s]", ok.n, s->av[e].n, ga.n);
        }
    }
    ws_ptx_comment(b, "B: x of X[r0 + tid/128 + 2e][p0 + tid%%128], r = j*K + k, u = S*t - P_L + D*k");
    for (int e = 0; e < NB; e++)
        emit_gather_b(s, r0, e, B_RSTEP);
}

/* the raw loads into the stage at byte offset `so`: As[tid%BK][tid/BK + A_ROWS*e] = av[e];
 * Bs[tid/128 + 2e][tid%128] = pre(float(bv[e])); addresses from %tid.x (no register held
 * across the multiply) */
static void emit_sstore(gk *s, preg so)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    preg tid = ws_ptx_reg(b, PTX_B32), sb = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B32);
    preg c = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, smem", sb.n);
    I("add.u32 %s, %s, %s", sb.n, sb.n, so.n);
    if (!s->wpack) {
        ws_ptx_comment(b, "As[tid%%%d][tid/%d + %de]", BK, BK, A_ROWS);
        I("and.b32 %s, %s, %d", a.n, tid.n, BK - 1);
        I("shr.u32 %s, %s, %d", c.n, tid.n, LOG2_BK);
        I("mad.lo.u32 %s, %s, %d, %s", a.n, a.n, s->AS, c.n);
        I("mad.lo.u32 %s, %s, 4, %s", a.n, a.n, sb.n);
        for (int e = 0; e < s->NA; e++)
            I("st.shared.f32 [%s+%d], %s", a.n, e * A_ROWS * 4, s->av[e].n);
    }
    if (s->cl) {
        ws_ptx_comment(b, "Bs[4q + c][(pl + 64e) ^ 8q] = x, q = tid%%4, pl = tid/4 (the swizzle: a warp's "
                          "stores on 32 banks)");
        preg q = ws_ptx_reg(b, PTX_B32), pl = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        I("and.b32 %s, %s, 3", q.n, tid.n);
        I("shr.u32 %s, %s, 2", pl.n, tid.n);
        I("shl.b32 %s, %s, 3", t.n, q.n);
        I("xor.b32 %s, %s, %s", pl.n, pl.n, t.n);
        I("mul.lo.u32 %s, %s, %d", q.n, q.n, 4 * BN);
        I("add.u32 %s, %s, %s", q.n, q.n, pl.n);
        I("mad.lo.u32 %s, %s, 4, %s", q.n, q.n, sb.n);
        for (int e = 0; e < 2; e++)
            for (int ch = 0; ch < 4; ch++)
                I("st.shared.f32 [%s+%d], %s", q.n, s->A_BYTES + (ch * BN + 64 * e) * 4, s->bx[e].r[ch].n);
        return;
    }
    if (s->kmajor)
        ws_ptx_comment(b, "Bs[(tid/128)*%d + e][tid%%128] = pre(x)", NB);
    else
        ws_ptx_comment(b, "Bs[tid/128 + 2e][tid%%128] = pre(x)");
    preg q = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 7", q.n, tid.n);
    I("and.b32 %s, %s, %d", p.n, tid.n, BN - 1);
    if (s->kmajor) {
        I("mul.lo.u32 %s, %s, %d", q.n, q.n, NB);
        I("mad.lo.u32 %s, %s, %d, %s", q.n, q.n, BN, p.n);
        I("mad.lo.u32 %s, %s, 4, %s", q.n, q.n, sb.n);
        for (int e = 0; e < NB; e++) {
            preg v = b_value(s, e);
            I("st.shared.f32 [%s+%d], %s", q.n, s->A_BYTES + e * BN * 4, v.n);
        }
        return;
    }
    I("mad.lo.u32 %s, %s, %d, %s", q.n, q.n, BN, p.n);
    I("mad.lo.u32 %s, %s, 4, %s", q.n, q.n, sb.n);
    for (int e = 0; e < NB; e++) {
        preg v;
        if (d->x_type == WS_F32) {
            v = s->bv[e];
        } else if (d->x_type == WS_F16) {
            v = ws_ptx_reg(b, PTX_F32);
            I("cvt.f32.f16 %s, %s", v.n, s->bv[e].n);
        } else {
            preg t = ws_ptx_reg(b, PTX_B32);
            v = ws_ptx_reg(b, PTX_F32);
            I("shl.b32 %s, %s, 16", t.n, s->bv[e].n);
            I("mov.b32 %s, %s", v.n, t.n);
        }
        ws_ptx_act(b, v, d->pre); /* pre(0) = 0 for every act: the padding stays zero */
        I("st.shared.f32 [%s+%d], %s", q.n, s->A_BYTES + e * B_RSTEP * BN * 4, v.n);
    }
}

/* the epilogue's parameters (ld.param'd, cvta'd) */
typedef struct { preg pb, pa, py, abs, hasb, hasa; } epi;

/* pb, pa, py, abs = the parameters b, add, y, add_bs; hasb = pb != 0, hasa = pa != 0;
 * pb, pa, py as global addresses */
static epi emit_epi_params(gk *s)
{
    ptx_buf *b = s->b;
    epi e;
    e.pb = ws_ptx_reg(b, PTX_B64);
    e.pa = ws_ptx_reg(b, PTX_B64);
    e.py = ws_ptx_reg(b, PTX_B64);
    e.abs = ws_ptx_reg(b, PTX_B64);
    e.hasb = ws_ptx_reg(b, PTX_PRED);
    e.hasa = ws_ptx_reg(b, PTX_PRED);
    const ws_params *pt = ws_params_of(WS_PARAMS_FWD);
    ws_ptx_ld_param(b, e.pb, pt, WS_FWD_B);
    ws_ptx_ld_param(b, e.pa, pt, WS_FWD_ADD);
    ws_ptx_ld_param(b, e.py, pt, WS_FWD_Y);
    ws_ptx_ld_param(b, e.abs, pt, WS_FWD_ADD_BS);
    I("setp.ne.u64 %s, %s, 0", e.hasb.n, e.pb.n);
    I("setp.ne.u64 %s, %s, 0", e.hasa.n, e.pa.n);
    I("cvta.to.global.u64 %s, %s", e.pb.n, e.pb.n);
    I("cvta.to.global.u64 %s, %s", e.pa.n, e.pa.n);
    I("cvta.to.global.u64 %s, %s", e.py.n, e.py.n);
    return e;
}

/* the epilogue's stores: acc[i][j] is output (eo0 + ro[i], ep0 + pos[j]) (o, p), i < TM,
 * j < TN: + b[o], act, + add, stored in y_type and y_layout where o < C_out and p < P */
static void emit_epi_store(gk *s, const epi *e, preg eo0, preg ep0, int TM, const int *ro, int TN,
                           const int *po, const char *lane_term, preg acc[8][16])
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    ws_ptx_comment(b, "rows: o_i, o_i < C_out, b[o_i] (0 without bias)");
    preg oi[8], ook[8], bias[8];
    for (int i = 0; i < TM; i++) {
        preg ba = ws_ptx_reg(b, PTX_B64), lb = ws_ptx_reg(b, PTX_PRED);
        oi[i] = ws_ptx_reg(b, PTX_B32);
        ook[i] = ws_ptx_reg(b, PTX_PRED);
        bias[i] = ws_ptx_reg(b, PTX_F32);
        I("add.u32 %s, %s, %d", oi[i].n, eo0.n, ro[i]);
        I("setp.lt.u32 %s, %s, %d", ook[i].n, oi[i].n, d->c_out);
        I("and.pred %s, %s, %s", lb.n, ook[i].n, e->hasb.n);
        I("mul.wide.u32 %s, %s, 4", ba.n, oi[i].n);
        I("add.u64 %s, %s, %s", ba.n, ba.n, e->pb.n);
        I("mov.f32 %s, 0f00000000", bias[i].n);
        I("@%s ld.global.nc.f32 %s, [%s]", lb.n, bias[i].n, ba.n);
    }
    for (int j = 0; j < TN; j++) {
        ws_ptx_comment(b, "position p0 + %d + %s = n*T_out + t", po[j], lane_term);
        preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        preg pok = ws_ptx_reg(b, PTX_PRED), ybase = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64);
        preg n64 = ws_ptx_reg(b, PTX_B64);
        plabel pskip = ws_ptx_label_new(b, "pos");
        I("add.u32 %s, %s, %d", p.n, ep0.n, po[j]);
        I("setp.lt.u32 %s, %s, %s", pok.n, p.n, s->npos.n);
        I("@!%s bra %s", pok.n, pskip.n);
        I("div.u32 %s, %s, %s", n.n, p.n, s->tout32.n);
        I("mul.lo.u32 %s, %s, %s", t.n, n.n, s->tout32.n);
        I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
        ws_ptx_comment(b, "item n: y + n*C_out*T_out*%d, add + n*add_bs*%d", s->ys, s->ys);
        I("mul.wide.u32 %s, %s, %s", ybase.n, n.n, s->tout32.n);
        I("mul.lo.u64 %s, %s, %lld", ybase.n, ybase.n, (long long)d->c_out * s->ys);
        I("add.u64 %s, %s, %s", ybase.n, ybase.n, e->py.n);
        I("cvt.u64.u32 %s, %s", n64.n, n.n);
        I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, e->abs.n);
        I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, s->ys, e->pa.n);
        for (int i = 0; i < TM; i++) {
            plabel skip = ws_ptx_label_new(b, "out");
            preg v = ws_ptx_reg(b, PTX_F32), off = ws_ptx_reg(b, PTX_B64), ya = ws_ptx_reg(b, PTX_B64);
            I("@!%s bra %s", ook[i].n, skip.n);
            if (d->y_layout == WS_NCL) {
                preg t64 = ws_ptx_reg(b, PTX_B64);
                I("cvt.u64.u32 %s, %s", t64.n, t.n);
                I("mad.wide.u32 %s, %s, %s, %s", off.n, oi[i].n, s->tout32.n, t64.n);
            } else {
                preg o64 = ws_ptx_reg(b, PTX_B64);
                I("cvt.u64.u32 %s, %s", o64.n, oi[i].n);
                I("mad.wide.u32 %s, %s, %d, %s", off.n, t.n, d->c_out, o64.n);
            }
            const ws_ptx_epi ep = {
                .act = d->act, .y_type = d->y_type, .n = 1, .v = &v, .src = &acc[i][j],
                .bias = &bias[i], .add_if = e->hasa,
                .add = {.index = off, .base = abase, .scale = s->ys},
                .y = {.at = ya, .index = off, .base = ybase, .scale = s->ys}};
            ws_ptx_epi_emit(b, &ep);
            ws_ptx_label(b, skip);
        }
        ws_ptx_label(b, pskip);
    }
}

/* the FFMA kernel's epilogue (one of two copies: with_add, or none of the add's loads and
 * address arithmetic): acc[i][j] is output (eo0 + ro[i], ep0 + po[j]) (o, p), i < TM,
 * j < 8: + b[o], act, + add, stored in y_type and y_layout where o < C_out and p < P, each
 * element's add read and store under that predicate, with no branch, so that the
 * assembler schedules the elements of a position (and their GELUs) together */
static void emit_ffma_epi(gk *s, const epi *e, preg eo0, preg ep0, int TM, const int *ro, const int *po,
                          preg acc[8][16], int with_add)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d0 = s->d;
    /* the _split entry: raw float32 sums, no bias, act or add (the _fin entry applies them) */
    ws_conv_desc draw = *d0;
    if (s->split) {
        draw.act = WS_ACT_NONE;
        draw.y_type = WS_F32;
    }
    const ws_conv_desc *d = &draw;
    const int ys = s->split ? 4 : s->ys;
    ws_ptx_comment(b, "rows: o_i, o_i < C_out, b[o_i] (0 without bias)");
    preg oi[8], ook[8], bias[8];
    for (int i = 0; i < TM; i++) {
        preg ba = ws_ptx_reg(b, PTX_B64), lb = ws_ptx_reg(b, PTX_PRED);
        oi[i] = ws_ptx_reg(b, PTX_B32);
        ook[i] = ws_ptx_reg(b, PTX_PRED);
        bias[i] = ws_ptx_reg(b, PTX_F32);
        I("add.u32 %s, %s, %d", oi[i].n, eo0.n, ro[i]);
        I("setp.lt.u32 %s, %s, %d", ook[i].n, oi[i].n, d->c_out);
        if (s->split)
            continue;
        I("and.pred %s, %s, %s", lb.n, ook[i].n, e->hasb.n);
        I("mul.wide.u32 %s, %s, 4", ba.n, oi[i].n);
        I("add.u64 %s, %s, %s", ba.n, ba.n, e->pb.n);
        I("mov.f32 %s, 0f00000000", bias[i].n);
        I("@%s ld.global.nc.f32 %s, [%s]", lb.n, bias[i].n, ba.n);
    }
    if (d->y_layout == WS_NCL && !s->split) {
        /* NCL y: a thread's positions 4tx + 64g .. + 3 are consecutive times of one item
         * where T_out % 4 == 0 (p0 + 4tx is a multiple of 4), so each row's four are one
         * vector store (and add load) where y (and add, add_bs) are aligned to it */
        const int vb = 4 * ys;
        preg vec = ws_ptx_reg(b, PTX_PRED), q = ws_ptx_reg(b, PTX_PRED), r = ws_ptx_reg(b, PTX_B32);
        preg r64 = ws_ptx_reg(b, PTX_B64);
        plabel scalar = ws_ptx_label_new(b, "epi_scalar");
        ws_ptx_comment(b, "vectors of 4 times where T_out %% 4 == 0 and y%s is aligned to %d bytes",
                       with_add ? ", add and add_bs" : "", vb);
        I("and.b32 %s, %s, 3", r.n, s->tout32.n);
        I("setp.eq.u32 %s, %s, 0", vec.n, r.n);
        I("and.b64 %s, %s, %d", r64.n, e->py.n, vb - 1);
        I("setp.eq.u64 %s, %s, 0", q.n, r64.n);
        I("and.pred %s, %s, %s", vec.n, vec.n, q.n);
        if (with_add) {
            I("and.b64 %s, %s, %d", r64.n, e->pa.n, vb - 1);
            I("setp.eq.u64 %s, %s, 0", q.n, r64.n);
            I("and.pred %s, %s, %s", vec.n, vec.n, q.n);
            I("and.b64 %s, %s, 3", r64.n, e->abs.n);
            I("setp.eq.u64 %s, %s, 0", q.n, r64.n);
            I("and.pred %s, %s, %s", vec.n, vec.n, q.n);
        }
        I("@!%s bra %s", vec.n, scalar.n);
        for (int g = 0; g < 2; g++) {
            ws_ptx_comment(b, "times p0 + %d + 4tx .. + 3 = n*T_out + t ..", po[4 * g]);
            preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
            preg pok = ws_ptx_reg(b, PTX_PRED), ybase = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64);
            preg t64 = ws_ptx_reg(b, PTX_B64);
            I("add.u32 %s, %s, %d", p.n, ep0.n, po[4 * g]);
            I("setp.lt.u32 %s, %s, %s", pok.n, p.n, s->npos.n);
            I("div.u32 %s, %s, %s", n.n, p.n, s->tout32.n);
            I("mul.lo.u32 %s, %s, %s", t.n, n.n, s->tout32.n);
            I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
            I("cvt.u64.u32 %s, %s", t64.n, t.n);
            I("mul.wide.u32 %s, %s, %s", ybase.n, n.n, s->tout32.n);
            I("mul.lo.u64 %s, %s, %lld", ybase.n, ybase.n, (long long)d->c_out * ys);
            I("add.u64 %s, %s, %s", ybase.n, ybase.n, e->py.n);
            if (with_add) {
                preg n64 = ws_ptx_reg(b, PTX_B64);
                I("cvt.u64.u32 %s, %s", n64.n, n.n);
                I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, e->abs.n);
                I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, ys, e->pa.n);
            }
            for (int i = 0; i < TM; i++) {
                preg v[4], off = ws_ptx_reg(b, PTX_B64), in = ws_ptx_reg(b, PTX_PRED);
                for (int c = 0; c < 4; c++)
                    v[c] = ws_ptx_reg(b, PTX_F32);
                I("and.pred %s, %s, %s", in.n, ook[i].n, pok.n);
                I("mad.wide.u32 %s, %s, %s, %s", off.n, oi[i].n, s->tout32.n, t64.n);
                ws_ptx_epi ep = {
                    .act = d->act, .y_type = d->y_type, .n = 4, .v = v, .src = &acc[i][4 * g],
                    .bias = &bias[i], .bias_stride = 0, .in = in,
                    .y = {.index = off, .base = ybase, .scale = ys}};
                if (with_add) {
                    ep.add_if = e->hasa;
                    ep.add = (ws_ptx_addr){.index = off, .base = abase, .scale = ys};
                }
                ws_ptx_epi_emit(b, &ep);
            }
        }
        I("ret");
        ws_ptx_label(b, scalar);
    }
    for (int j = 0; j < 8; j++) {
        ws_ptx_comment(b, "position p0 + %d + 4tx = n*T_out + t", po[j]);
        preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        preg pok = ws_ptx_reg(b, PTX_PRED), ybase = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64);
        I("add.u32 %s, %s, %d", p.n, ep0.n, po[j]);
        I("setp.lt.u32 %s, %s, %s", pok.n, p.n, s->npos.n);
        I("div.u32 %s, %s, %s", n.n, p.n, s->tout32.n);
        I("mul.lo.u32 %s, %s, %s", t.n, n.n, s->tout32.n);
        I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
        I("mul.wide.u32 %s, %s, %s", ybase.n, n.n, s->tout32.n);
        I("mul.lo.u64 %s, %s, %lld", ybase.n, ybase.n, (long long)d->c_out * ys);
        I("add.u64 %s, %s, %s", ybase.n, ybase.n, e->py.n);
        if (with_add) {
            preg n64 = ws_ptx_reg(b, PTX_B64);
            I("cvt.u64.u32 %s, %s", n64.n, n.n);
            I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, e->abs.n);
            I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, ys, e->pa.n);
        }
        for (int i = 0; i < TM; i++) {
            preg v = ws_ptx_reg(b, PTX_F32), off = ws_ptx_reg(b, PTX_B64), in = ws_ptx_reg(b, PTX_PRED);
            I("and.pred %s, %s, %s", in.n, ook[i].n, pok.n);
            if (d->y_layout == WS_NCL) {
                preg t64 = ws_ptx_reg(b, PTX_B64);
                I("cvt.u64.u32 %s, %s", t64.n, t.n);
                I("mad.wide.u32 %s, %s, %s, %s", off.n, oi[i].n, s->tout32.n, t64.n);
            } else {
                preg o64 = ws_ptx_reg(b, PTX_B64);
                I("cvt.u64.u32 %s, %s", o64.n, oi[i].n);
                I("mad.wide.u32 %s, %s, %d, %s", off.n, t.n, d->c_out, o64.n);
            }
            ws_ptx_epi ep = {
                .act = d->act, .y_type = d->y_type, .n = 1, .v = &v, .src = &acc[i][j],
                .bias = s->split ? NULL : &bias[i], .in = in,
                .y = {.index = off, .base = ybase, .scale = ys}};
            if (with_add) {
                ep.add_if = e->hasa;
                ep.add = (ws_ptx_addr){.index = off, .base = abase, .scale = ys};
            }
            ws_ptx_epi_emit(b, &ep);
        }
    }
}

/* the _split entry's raw sums in the tile's order (ws_gemm_split_groups): group g < 2*TM of
 * thread tid, block blk = ctaid.y*nctaid.x + ctaid.x, part z = ctaid.z, is the float4 at
 * p_y + 16*(((z*nblk + blk)*G + g)*256 + tid): NLC y acc[4(g/8) + c][g%8] (4 channels of a
 * position), NCL y acc[g/2][4(g%2) + c] (4 positions of a channel), c < 4; a warp's store is
 * 512 contiguous bytes, and _fin reads each group back as one 16-byte load */
static void emit_split_store(gk *s, preg py, preg acc[8][16])
{
    ptx_buf *b = s->b;
    const int TM = s->TM, G = 2 * TM;
    ws_ptx_comment(b, "raw sums of part z, in the tile's order: %d float4 groups a thread", G);
    preg blk = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B64);
    I("mov.u32 %s, %%ctaid.z", blk.n);
    I("mov.u32 %s, %%nctaid.y", t.n);
    I("mul.lo.u32 %s, %s, %s", blk.n, blk.n, t.n);
    I("mov.u32 %s, %%ctaid.y", t.n);
    I("add.u32 %s, %s, %s", blk.n, blk.n, t.n);
    I("mov.u32 %s, %%nctaid.x", t.n);
    I("mul.lo.u32 %s, %s, %s", blk.n, blk.n, t.n);
    I("mov.u32 %s, %%ctaid.x", t.n);
    I("add.u32 %s, %s, %s", blk.n, blk.n, t.n);
    I("mul.lo.u32 %s, %s, %d", blk.n, blk.n, G * WS_GEMM_THREADS);
    I("mov.u32 %s, %%tid.x", t.n);
    I("add.u32 %s, %s, %s", blk.n, blk.n, t.n);
    I("mul.wide.u32 %s, %s, 16", a.n, blk.n);
    I("add.u64 %s, %s, %s", a.n, a.n, py.n);
    for (int g = 0; g < G; g++) {
        preg v[4];
        for (int c = 0; c < 4; c++)
            v[c] = s->d->y_layout == WS_NLC ? acc[4 * (g / 8) + c][g % 8] : acc[g / 2][4 * (g % 2) + c];
        I("st.global.v4.f32 [%s+%d], {%s, %s, %s, %s}", a.n, g * WS_GEMM_THREADS * 16, v[0].n, v[1].n,
          v[2].n, v[3].n);
    }
    I("ret");
}

/* this thread's B position p = p0 + tid%BN = n*T_out + t: s->pv (p < N*T_out), s->ub
 * (S*t - P_L), s->xn (x's item n), s->kb = tid / 128 */
static void emit_b_position(gk *s, preg px, preg tid, preg p0)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
    preg t64 = ws_ptx_reg(b, PTX_B64), item = ws_ptx_reg(b, PTX_B64);
    s->pv = ws_ptx_reg(b, PTX_PRED);
    s->ub = ws_ptx_reg(b, PTX_B64);
    s->xn = ws_ptx_reg(b, PTX_B64);
    s->kb = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, %d", p.n, tid.n, BN - 1);
    I("add.u32 %s, %s, %s", p.n, p.n, p0.n);
    I("setp.lt.u32 %s, %s, %s", s->pv.n, p.n, s->npos.n);
    I("div.u32 %s, %s, %s", n.n, p.n, s->tout32.n);
    I("mul.lo.u32 %s, %s, %s", t.n, n.n, s->tout32.n);
    I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
    I("cvt.u64.u32 %s, %s", t64.n, t.n);
    I("mul.lo.u64 %s, %s, %d", s->ub.n, t64.n, d->stride);
    I("sub.s64 %s, %s, %d", s->ub.n, s->ub.n, d->pad_l);
    ws_ptx_comment(b, "item n of x at x + n * C_in * T_in * %d bytes", s->xs);
    I("mul.wide.u32 %s, %s, %s", item.n, n.n, s->tin32.n);
    I("mul.lo.u64 %s, %s, %lld", item.n, item.n, (long long)d->c_in * s->xs);
    I("add.u64 %s, %s, %s", s->xn.n, item.n, px.n);
    I("shr.u32 %s, %s, 7", s->kb.n, tid.n);
}

/* both kernels' start: the parameters (x, w global; T_in, T_out, N*T_out into s) and the
 * block's origin o0 = ctaid.y*BM, p0 = ctaid.x*BN (the _split entry: (ctaid.x + p_xoff)*BN);
 * `what` ends the block section's title */
static void emit_prologue(gk *s, const char *what, preg *px_, preg *pw_, preg *tid_, preg *o0_,
                          preg *p0_)
{
    ptx_buf *b = s->b;
    const int BM = s->BM;
    ws_ptx_section(b, "parameters");
    preg px = ws_ptx_reg(b, PTX_B64), pw = ws_ptx_reg(b, PTX_B64);
    preg n32 = ws_ptx_reg(b, PTX_B32);
    s->tin32 = ws_ptx_reg(b, PTX_B32);
    s->tout32 = ws_ptx_reg(b, PTX_B32);
    s->tin64 = ws_ptx_reg(b, PTX_B64);
    s->npos = ws_ptx_reg(b, PTX_B32);
    const ws_params *pt = ws_params_of(WS_PARAMS_FWD);
    ws_ptx_ld_param(b, px, pt, WS_FWD_X);
    ws_ptx_ld_param(b, pw, pt, WS_FWD_W);
    ws_ptx_ld_param(b, n32, pt, WS_FWD_N);
    ws_ptx_ld_param(b, s->tin32, pt, WS_FWD_T_IN);
    ws_ptx_ld_param(b, s->tout32, pt, WS_FWD_T_OUT);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", pw.n, pw.n);
    I("cvt.u64.u32 %s, %s", s->tin64.n, s->tin32.n);
    I("mul.lo.u32 %s, %s, %s", s->npos.n, n32.n, s->tout32.n);

    char title[96];
    snprintf(title, sizeof title, "block (o0 = ctaid.y*BM, p0 = %s*BN); %s",
             s->split ? "(ctaid.x + p_xoff)" : "ctaid.x", what);
    ws_ptx_section(b, title);
    preg tid = ws_ptx_reg(b, PTX_B32), o0 = ws_ptx_reg(b, PTX_B32), p0 = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, %%ctaid.x", p0.n);
    if (s->split) { /* a launch of the tiles from p_xoff on along positions */
        preg xoff = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ld_param(b, xoff, ws_params_of(WS_PARAMS_FWD_PARTS), WS_FWDP_XOFF);
        I("add.u32 %s, %s, %s", p0.n, p0.n, xoff.n);
    }
    I("mul.lo.u32 %s, %s, %d", p0.n, p0.n, BN);
    I("mov.u32 %s, %%ctaid.y", o0.n);
    I("mul.lo.u32 %s, %s, %d", o0.n, o0.n, BM);
    *px_ = px, *pw_ = pw, *tid_ = tid, *o0_ = o0, *p0_ = p0;
}

static void emit_body(gk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long R = s->R, KT = (R + BK - 1) / BK;
    const int BM = s->BM, TM = s->TM, AS = s->AS, A_BYTES = s->A_BYTES, STAGE = s->STAGE;

    /* cl: 128-byte alignment, so that bits 5 and 6 of a B address are the column's alone
     * (the swizzle flips them) */
    ws_ptx_raw(b, "\t.shared .align %d .b8 smem[%d];\n", s->cl ? 128 : 16, 2 * STAGE);
    preg px, pw, tid, o0, p0;
    emit_prologue(s, "A rows of this thread", &px, &pw, &tid, &o0, &p0);
    if (s->wpack) {
        ws_ptx_comment(b, "A chunks e < %d: c = tid + 256e, kk = c / %d, oc = c %% %d: &W[kk][o0 + 4oc], "
                          "As + (kk*%d + 4oc)*4, o0 + 4oc < C_out", s->NAC, BM / 4, BM / 4, AS);
        for (int e = 0; e < s->NAC; e++) {
            preg c = ws_ptx_reg(b, PTX_B32), kk = ws_ptx_reg(b, PTX_B32), oc = ws_ptx_reg(b, PTX_B32);
            s->cga[e] = ws_ptx_reg(b, PTX_B64);
            s->cso[e] = ws_ptx_reg(b, PTX_B32);
            s->cok[e] = ws_ptx_reg(b, PTX_PRED);
            I("add.u32 %s, %s, %d", c.n, tid.n, NT * e);
            I("shr.u32 %s, %s, %d", kk.n, c.n, BM == 128 ? 5 : 4);
            I("and.b32 %s, %s, %d", oc.n, c.n, BM / 4 - 1);
            I("shl.b32 %s, %s, 2", oc.n, oc.n);                                   /* 4oc */
            I("mad.lo.u32 %s, %s, %d, %s", s->cso[e].n, kk.n, AS, oc.n);          /* kk*AS + 4oc */
            I("shl.b32 %s, %s, 2", s->cso[e].n, s->cso[e].n);
            I("add.u32 %s, %s, %s", oc.n, oc.n, o0.n);                            /* o0 + 4oc */
            I("setp.lt.u32 %s, %s, %d", s->cok[e].n, oc.n, d->c_out);
            I("mad.lo.u32 %s, %s, %d, %s", kk.n, kk.n, d->c_out, oc.n);          /* kk*C_out + o */
            I("mad.wide.u32 %s, %s, 4, %s", s->cga[e].n, kk.n, pw.n);
        }
    } else {
        preg oa = ws_ptx_reg(b, PTX_B32), oa64 = ws_ptx_reg(b, PTX_B64);
        s->ka = ws_ptx_reg(b, PTX_B32);
        s->wa = ws_ptx_reg(b, PTX_B64);
        I("and.b32 %s, %s, %d", s->ka.n, tid.n, BK - 1);
        I("shr.u32 %s, %s, %d", oa.n, tid.n, LOG2_BK);
        I("add.u32 %s, %s, %s", oa.n, oa.n, o0.n);
        for (int e = 0; e < s->NA; e++) {
            preg t = ws_ptx_reg(b, PTX_B32);
            s->aok[e] = ws_ptx_reg(b, PTX_PRED);
            I("add.u32 %s, %s, %d", t.n, oa.n, e * A_ROWS);
            I("setp.lt.u32 %s, %s, %d", s->aok[e].n, t.n, d->c_out);
        }
        ws_ptx_comment(b, "W row o0 + tid/%d: w + (o0 + tid/%d) * R * 4 (R = %lld)", BK, BK, R);
        I("cvt.u64.u32 %s, %s", oa64.n, oa.n);
        I("mad.lo.u64 %s, %s, %lld, %s", s->wa.n, oa64.n, R * 4, pw.n);
    }
    if (s->cl) {
        ws_ptx_section(b, "B positions of this thread: p = p0 + tid/4 + 64e = n*T_out + t, e < 2");
        for (int e = 0; e < 2; e++) {
            preg p = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
            s->cpv[e] = ws_ptx_reg(b, PTX_PRED);
            s->cub[e] = ws_ptx_reg(b, PTX_B32);
            s->cn[e] = ws_ptx_reg(b, PTX_B32);
            I("shr.u32 %s, %s, 2", p.n, tid.n);
            I("add.u32 %s, %s, %s", p.n, p.n, p0.n);
            if (e)
                I("add.u32 %s, %s, 64", p.n, p.n);
            I("setp.lt.u32 %s, %s, %s", s->cpv[e].n, p.n, s->npos.n);
            I("div.u32 %s, %s, %s", s->cn[e].n, p.n, s->tout32.n);
            I("mul.lo.u32 %s, %s, %s", t.n, s->cn[e].n, s->tout32.n);
            I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
            I("mul.lo.u32 %s, %s, %d", s->cub[e].n, t.n, d->stride);
            I("sub.s32 %s, %s, %d", s->cub[e].n, s->cub[e].n, d->pad_l);
        }
    } else {
        ws_ptx_section(b, "B position of this thread: p = p0 + tid%128 = n*T_out + t");
        emit_b_position(s, px, tid, p0);
    }
    if (s->kmajor && !s->cl) { /* the thread's B rows of a stage: (tid/128)*NB .. + NB - 1 */
        I("shl.b32 %s, %s, %d", s->kb.n, s->kb.n, NB == 8 ? 3 : 2);
        if (d->x_layout == WS_NCL) {
            s->sT = ws_ptx_reg(b, PTX_B64);
            I("mul.wide.u32 %s, %s, %d", s->sT.n, s->tin32.n, s->xs);
        }
    }
    alloc_raw(s);
    preg acc[8][16], fa[8], fb[8];
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < 8; j++)
            acc[i][j] = ws_ptx_reg(b, PTX_F32);
    for (int i = 0; i < 8; i++) {
        fa[i] = ws_ptx_reg(b, PTX_F32);
        fb[i] = ws_ptx_reg(b, PTX_F32);
    }

    ws_ptx_section(b, s->split ? "prologue: the part's first stage into stage 0" : "prologue: r in [0, BK) into stage 0");
    preg cur = ws_ptx_reg(b, PTX_B32), nxt = ws_ptx_reg(b, PTX_B32), r0 = ws_ptx_reg(b, PTX_B32);
    preg kt = ws_ptx_reg(b, PTX_B32), ke = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", cur.n);
    if (s->split) {
        ws_ptx_comment(b, "part z = ctaid.z of Z = nctaid.z: stages [z*KT/Z, (z+1)*KT/Z), KT = %lld", KT);
        preg z = ws_ptx_reg(b, PTX_B32), nz = ws_ptx_reg(b, PTX_B32);
        I("mov.u32 %s, %%ctaid.z", z.n);
        I("mov.u32 %s, %%nctaid.z", nz.n);
        I("mul.lo.u32 %s, %s, %lld", kt.n, z.n, KT);
        I("div.u32 %s, %s, %s", kt.n, kt.n, nz.n);
        I("mad.lo.u32 %s, %s, %lld, %lld", ke.n, z.n, KT, KT);
        I("div.u32 %s, %s, %s", ke.n, ke.n, nz.n);
        I("mul.lo.u32 %s, %s, %d", r0.n, kt.n, BK);
        I("add.u32 %s, %s, 1", kt.n, kt.n);
    } else {
        I("mov.u32 %s, 0", r0.n);
        I("mov.u32 %s, 1", kt.n);
    }
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < 8; j++)
            I("mov.f32 %s, 0f00000000", acc[i][j].n);
    emit_gload(s, r0, cur);
    emit_sstore(s, cur);
    if (s->wpack)
        I("cp.async.wait_group 0");
    I("bar.sync 0");

    ws_ptx_section(b, "main loop over the stages of r");
    ws_ptx_comment(b, "%lld stages of %d", KT, BK);
    plabel top = ws_ptx_label_new(b, "stage"), noload = ws_ptx_label_new(b, "noload");
    plabel nostore = ws_ptx_label_new(b, "nostore");
    preg more = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_label(b, top);
    if (s->split)
        I("setp.lt.u32 %s, %s, %s", more.n, kt.n, ke.n);
    else
        I("setp.lt.u32 %s, %s, %lld", more.n, kt.n, KT);
    I("sub.u32 %s, %d, %s", nxt.n, STAGE, cur.n);
    I("@!%s bra.uni %s", more.n, noload.n);
    I("add.u32 %s, %s, %d", r0.n, r0.n, BK);
    ws_ptx_comment(b, "the next stage's elements into registers%s", s->wpack ? " (W by cp.async into it)" : "");
    emit_gload(s, r0, nxt);
    ws_ptx_label(b, noload);
    ws_ptx_comment(b, "multiply stage `cur`: %d steps of %d fma", BK, TM * 8);
    {
        preg ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32), ti = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "As[kk][4*ty + 64g], Bs[kk][4*tx + 64h]: ty = tid/16, tx = tid%%16%s",
                       s->swap ? " (NLC y: ty = tid%16, tx = tid/16, a warp's lanes along channels)" : "");
        I("mov.u32 %s, %%tid.x", ti.n);
        I("%s %s, %s, %s", s->swap ? "and.b32" : "shr.u32", ra.n, ti.n, s->swap ? "15" : "4");
        I("%s %s, %s, %s", s->swap ? "shr.u32" : "and.b32", rb.n, ti.n, s->swap ? "4" : "15");
        I("mov.u32 %s, smem", ti.n);
        I("add.u32 %s, %s, %s", ti.n, ti.n, cur.n);
        I("mad.lo.u32 %s, %s, 16, %s", ra.n, ra.n, ti.n);
        I("mad.lo.u32 %s, %s, 16, %s", rb.n, rb.n, ti.n);
        preg rbs = rb;
        if (s->cl)
            rbs = ws_ptx_reg(b, PTX_B32);
        for (int kk = 0; kk < BK; kk++) {
            if (s->cl && kk % 4 == 0) { /* rows 4m .. 4m+3: columns ^ 8m, bytes ^ 32m */
                ws_ptx_comment(b, "Bs rows %d..%d: column ^ %d", kk, kk + 3, 2 * kk);
                I("xor.b32 %s, %s, %d", rbs.n, rb.n, 8 * kk);
            }
            for (int g = 0; g < TM / 4; g++)
                I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", fa[4 * g].n, fa[4 * g + 1].n,
                  fa[4 * g + 2].n, fa[4 * g + 3].n, ra.n, (kk * AS + g * 4 * TY) * 4);
            for (int h = 0; h < 2; h++)
                I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", fb[4 * h].n, fb[4 * h + 1].n,
                  fb[4 * h + 2].n, fb[4 * h + 3].n, rbs.n, A_BYTES + (kk * BN + h * 4 * TX) * 4);
            for (int i = 0; i < TM; i++)
                for (int j = 0; j < 8; j++)
                    I("fma.rn.f32 %s, %s, %s, %s", acc[i][j].n, fa[i].n, fb[j].n, acc[i][j].n);
        }
    }
    I("@!%s bra.uni %s", more.n, nostore.n);
    emit_sstore(s, nxt);
    if (s->wpack)
        I("cp.async.wait_group 0");
    I("mov.u32 %s, %s", cur.n, nxt.n);
    ws_ptx_label(b, nostore);
    I("bar.sync 0");
    I("add.u32 %s, %s, 1", kt.n, kt.n);
    I("@%s bra.uni %s", more.n, top.n);

    ws_ptx_section(b, "epilogue: (o, p) of acc[i][j]: o = o0 + 64(i/4) + 4ty + i%4, p = p0 + 64(j/4) + 4tx + j%4");
    const epi e = emit_epi_params(s);
    preg etid = ws_ptx_reg(b, PTX_B32), ety = ws_ptx_reg(b, PTX_B32), etx = ws_ptx_reg(b, PTX_B32);
    preg eo0 = ws_ptx_reg(b, PTX_B32), ep0 = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", etid.n);
    I("%s %s, %s, %s", s->swap ? "and.b32" : "shr.u32", ety.n, etid.n, s->swap ? "15" : "4");
    I("%s %s, %s, %s", s->swap ? "shr.u32" : "and.b32", etx.n, etid.n, s->swap ? "4" : "15");
    I("mov.u32 %s, %%ctaid.y", eo0.n);
    I("mad.lo.u32 %s, %s, %d, 0", eo0.n, eo0.n, BM);
    I("mad.lo.u32 %s, %s, 4, %s", eo0.n, ety.n, eo0.n);
    I("mov.u32 %s, %%ctaid.x", ep0.n);
    I("mul.lo.u32 %s, %s, %d", ep0.n, ep0.n, BN);
    I("mad.lo.u32 %s, %s, 4, %s", ep0.n, etx.n, ep0.n);
    int ro[8], po[8];
    for (int i = 0; i < TM; i++)
        ro[i] = (i / 4) * 4 * TY + i % 4;
    for (int j = 0; j < 8; j++)
        po[j] = (j / 4) * 4 * TX + j % 4;
    if (s->split) { /* (eo0, ep0 above are the whole kernel's; the parts are stored by the
                       launch's block index) */
        emit_split_store(s, e.py, acc);
        return;
    }
    ws_ptx_comment(b, "two copies of the stores: without an add (no add loads), and with one");
    {
        plabel adds = ws_ptx_label_new(b, "with_add");
        I("@%s bra.uni %s", e.hasa.n, adds.n);
        emit_ffma_epi(s, &e, eo0, ep0, TM, ro, po, acc, 0);
        I("ret");
        ws_ptx_label(b, adds);
        emit_ffma_epi(s, &e, eo0, ep0, TM, ro, po, acc, 1);
    }
    I("ret");
}

/* ---- the tensor-core kernel (ptx_gemm.h, TENSOR CORES) ---- */

int ws_gemm_mma_kmajor(const ws_conv_desc *d)
{
    /* NCL at stride S > 2: a warp's 32 positions span 32*S elements, and the 16 channels
     * of a thread 16 more rows; with r = j*K + k a thread's taps share those sectors (H100,
     * DAC C512->1024 K16 S8 bf16: 1.17 -> 1.00 ms; wav2vec2's S2 convs: 3.06 -> 3.61 ms the
     * other way). WS_HGEMM_KMAJOR_NCL: k-major all the same, the order the Hopper GEMM reads
     * (ptx_hgemm.h), which takes those calls on compute capability 9.0 (DAC NCL bf16 on
     * the H100: 1.16 ms on this kernel, 0.22 ms on the Hopper GEMM); other GPUs pay the 17 %
     * above */
    return d->c_in % 16 == 0 && (d->x_layout == WS_NLC || d->stride <= 2 || WS_HGEMM_KMAJOR_NCL);
}

int ws_gemm_ffma_kmajor(const ws_conv_desc *d)
{
    /* NCL at stride S > 2 as the mma kernel's (ws_gemm_mma_kmajor): r = j*K + k keeps a
     * thread's taps on the sectors of one row */
    return !ws_gemm_mma(d) && WS_GEMM_BK == 16 && d->c_in % WS_GEMM_BK == 0 && (d->x_layout == WS_NLC || d->stride <= 2);
}

int ws_gemm_ffma_wpack(const ws_conv_desc *d)
{
    return ws_gemm_fits(d) && ws_gemm_ffma_kmajor(d) && d->c_out % 4 == 0;
}

int ws_gemm_packs(const ws_conv_desc *d)
{
    return ws_gemm_fits(d) && (ws_gemm_mma(d) || ws_gemm_ffma_wpack(d));
}

size_t ws_gemm_packed_bytes(const ws_conv_desc *d)
{
    return (size_t)d->c_out * (size_t)d->c_in * (size_t)d->k *
           (size_t)(ws_gemm_mma(d) ? ws_gemm_mma_wbytes(d) : 4);
}

void ws_gemm_ffma_weights(const ws_conv_desc *d, const float *w, float *out)
{
    const int K = d->k, C = d->c_in, O = d->c_out;
    /* in blocks of 64 channels o: each row of out written 256 bytes at a time, the block's
     * rows of w read while they are in cache (a transpose of 5 M weights, large-v3's conv2) */
    for (size_t o0 = 0; o0 < (size_t)O; o0 += 64) {
        const size_t o1 = o0 + 64 < (size_t)O ? o0 + 64 : (size_t)O;
        for (int j = 0; j < C; j++)
            for (int k = 0; k < K; k++) {
                float *row = out + ((size_t)k * C + j) * O;
                for (size_t o = o0; o < o1; o++)
                    row[o] = w[(o * C + j) * K + k];
            }
    }
}

void ws_gemm_pack_weights(const ws_conv_desc *d, const float *w, void *out)
{
    if (ws_gemm_mma(d))
        ws_gemm_mma_weights(d, w, out);
    else
        ws_gemm_ffma_weights(d, w, out);
}

int ws_gemm_ffma_cl(const ws_conv_desc *d)
{
    return ws_gemm_ffma_kmajor(d) && d->x_layout == WS_NLC && d->x_type == WS_F32 && d->pre == WS_ACT_NONE;
}

int ws_gemm_x_align(const ws_conv_desc *d)
{
    const int km = ws_gemm_mma(d) ? ws_gemm_mma_kmajor(d) : ws_gemm_ffma_kmajor(d);
    return km && d->x_layout == WS_NLC ? 16 : 1;
}

void ws_gemm_mma_weights(const ws_conv_desc *d, const float *w, void *out)
{
    const int km = ws_gemm_mma_kmajor(d), K = d->k, C = d->c_in;
    const size_t R = (size_t)C * K;
    for (size_t o = 0; o < (size_t)d->c_out; o++)
        for (int j = 0; j < C; j++)
            for (int k = 0; k < K; k++) {
                const float v = w[o * R + (size_t)j * K + k];
                const size_t i = o * R + (km ? (size_t)k * C + j : (size_t)j * K + k);
                if (d->math == WS_MATH_TF32)
                    ((float *)out)[i] = ws_f32_to_tf32(v);
                else
                    ((uint16_t *)out)[i] = d->math == WS_MATH_BF16 ? ws_f32_to_bf16(v) : ws_f32_to_f16(v);
            }
}

/* av = W[o0 + tid/tpr, r0 + (tid%tpr)*NA + e] (e < NA; W in the math type, ws_gemm_mma_weights),
 * bv[e] = raw x of X[r0 + (tid/128)*nbm + e][p0 + tid%128] (e < nbm; NLC kmajor: the words bw);
 * zero where out of range */
static void emit_mma_gload(gk *s, preg r0)
{
    ptx_buf *b = s->b;
    const long long R = s->R;
    ws_ptx_comment(b, "A: W[o0 + tid/%d][r0 + (tid%%%d)*%d + e], e < %d, %s", s->tpr, s->tpr, s->NA, s->NA,
                   s->vecw ? "16 bytes at a time" : "one by one");
    {
        preg r = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64);
        I("add.u32 %s, %s, %s", r.n, r0.n, s->ka.n);
        I("mad.wide.u32 %s, %s, %d, %s", ga.n, r.n, s->es, s->wa.n);
        for (int e = 0; e < s->NA; e += s->vecw ? 16 / s->es : 1) {
            preg ok = ws_ptx_reg(b, PTX_PRED), re = ws_ptx_reg(b, PTX_B32);
            I("add.u32 %s, %s, %d", re.n, r.n, e);
            I("setp.lt.u32 %s, %s, %lld", ok.n, re.n, R);
            I("and.pred %s, %s, %s", ok.n, ok.n, s->aok[0].n);
            if (s->vecw) {
                const int q = e * s->es / 4;
                for (int i = 0; i < 4; i++)
                    I("mov.b32 %s, 0", s->av[q + i].n);
                I("@%s ld.global.nc.v4.b32 {%s, %s, %s, %s}, [%s+%d]", ok.n, s->av[q].n, s->av[q + 1].n,
                  s->av[q + 2].n, s->av[q + 3].n, ga.n, e * s->es);
            } else {
                I("mov.b32 %s, 0", s->av[e].n);
                I("@%s ld.global.nc.%s %s, [%s+%d]", ok.n, s->es == 4 ? "b32" : "u16", s->av[e].n, ga.n,
                  e * s->es);
            }
        }
    }
    if (!s->kmajor) {
        ws_ptx_comment(b, "B: x of X[r0 + (tid/128)*%d + e][p0 + tid%%128], r = j*K + k, u = S*t - P_L + D*k",
                       s->nbm);
        for (int e = 0; e < s->nbm; e++)
            emit_gather_b(s, r0, e, 1);
        return;
    }
    emit_gather_kmajor(s, r0);
}

/* swizzled stores: the n 16-byte chunks c0 + q of row `row` (regs v[4q..4q+3]) at
 * base + row*64 + ((c0 + q) ^ (row/2 % 4))*16 */
static void emit_sw_store(gk *s, preg base, preg row, preg c0, int n, const preg *v)
{
    ptx_buf *b = s->b;
    preg sw = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 1", sw.n, row.n);
    I("and.b32 %s, %s, 3", sw.n, sw.n);
    I("mad.lo.u32 %s, %s, 64, %s", rb.n, row.n, base.n);
    for (int q = 0; q < n; q++) {
        preg t = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", t.n, c0.n, q);
        I("xor.b32 %s, %s, %s", t.n, t.n, sw.n);
        I("mad.lo.u32 %s, %s, 16, %s", t.n, t.n, rb.n);
        I("st.shared.v4.b32 [%s], {%s, %s, %s, %s}", t.n, v[4 * q].n, v[4 * q + 1].n, v[4 * q + 2].n,
          v[4 * q + 3].n);
    }
}

/* the raw loads, rounded to the math type, into the stage at byte offset `so`:
 * As[tid/tpr][(tid%tpr)*NA + e] = av[e], Bs[tid%128][(tid/128)*nbm + e] = pre(float(bv[e])),
 * r contiguous: rows of MRS bytes (the layout ldmatrix reads), or for wgmma rows of 64 bytes
 * with the 64-byte swizzle (emit_sw_store), then fence.proxy.async */
static void emit_mma_sstore(gk *s, preg so)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    preg tid = ws_ptx_reg(b, PTX_B32), sb = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B32);
    preg c = ws_ptx_reg(b, PTX_B32);
    preg pk[MMA_N / 2];
    for (int i = 0; i < MMA_N / 2; i++)
        pk[i] = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, smem", sb.n);
    I("add.u32 %s, %s, %s", sb.n, sb.n, so.n);
    ws_ptx_comment(b, "As[tid/%d][(tid%%%d)*%d + e] = W", s->tpr, s->tpr, s->NA);
    I("div.u32 %s, %s, %d", a.n, tid.n, s->tpr);
    I("rem.u32 %s, %s, %d", c.n, tid.n, s->tpr);
    I("mul.lo.u32 %s, %s, %d", c.n, c.n, s->NA * s->es);
    if (s->wg) {
        I("shr.u32 %s, %s, 4", c.n, c.n); /* the first 16-byte chunk */
    } else {
        I("mad.lo.u32 %s, %s, %d, %s", a.n, a.n, MRS, c.n);
        I("add.u32 %s, %s, %s", a.n, a.n, sb.n);
    }
    const preg *ap = s->av;
    if (!s->vecw && s->es == 2) {
        for (int i = 0; i < s->NA / 2; i++)
            I("prmt.b32 %s, %s, %s, 0x5410", pk[i].n, s->av[2 * i].n, s->av[2 * i + 1].n);
        ap = pk;
    }
    if (s->wg)
        emit_sw_store(s, sb, a, c, s->NA * s->es / 16, ap);
    else
        for (int q = 0; q < s->NA * s->es / 16; q++)
            I("st.shared.v4.b32 [%s+%d], {%s, %s, %s, %s}", a.n, q * 16, ap[4 * q].n, ap[4 * q + 1].n,
              ap[4 * q + 2].n, ap[4 * q + 3].n);
    ws_ptx_comment(b, "Bs[tid%%128][(tid/128)*%d + e] = %s(pre(x))", s->nbm, s->mt);
    preg q = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 7", q.n, tid.n);
    I("and.b32 %s, %s, %d", p.n, tid.n, BN - 1);
    if (s->wg) {
        I("shl.b32 %s, %s, 1", q.n, q.n); /* the first 16-byte chunk */
    } else {
        I("mul.lo.u32 %s, %s, 32", q.n, q.n);
        I("mad.lo.u32 %s, %s, %d, %s", q.n, p.n, MRS, q.n);
        I("add.u32 %s, %s, %s", q.n, q.n, sb.n);
    }
    for (int i = 0; i < MMA_N / 2; i++) {
        if (s->es == 4) {
            preg v = b_value(s, i);
            I("cvt.rna.tf32.f32 %s, %s", pk[i].n, v.n);
        } else if (s->raw && s->bvec) { /* pair i: word i % 4 of vector i / 4 */
            I("mov.b32 %s, %s", pk[i].n, s->bx[i / 4].r[i % 4].n);
        } else if (s->raw && d->x_type == WS_BF16) {
            I("prmt.b32 %s, %s, %s, 0x5410", pk[i].n, s->bv[2 * i].n, s->bv[2 * i + 1].n);
        } else if (s->raw) {
            I("mov.b32 %s, {%s, %s}", pk[i].n, s->bv[2 * i].n, s->bv[2 * i + 1].n);
        } else {
            preg lo = b_value(s, 2 * i), hi = b_value(s, 2 * i + 1);
            I("cvt.rn.%sx2.f32 %s, %s, %s", s->mt, pk[i].n, hi.n, lo.n);
        }
    }
    if (s->wg) {
        preg bb = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", bb.n, sb.n, s->A_BYTES);
        emit_sw_store(s, bb, p, q, 2, pk);
        I("fence.proxy.async.shared::cta"); /* the tensor cores read through the async proxy */
    } else {
        for (int h = 0; h < 2; h++)
            I("st.shared.v4.b32 [%s+%d], {%s, %s, %s, %s}", q.n, s->A_BYTES + h * 16, pk[4 * h].n,
              pk[4 * h + 1].n, pk[4 * h + 2].n, pk[4 * h + 3].n);
    }
}

/* the mma kernel's epilogue for NCL y: the accumulators through shared memory, 64 rows a
 * pass (the stages' memory, free after the loop's last barrier), as Ys[64][128 + 4] f32;
 * then thread tid takes position p0 + tid%128 (one n, t) and rows tid/128 + 2i: + b[o], act,
 * + add, stored in y_type, a warp's 32 lanes on 32 consecutive positions */
#define YS_ROW (BN + 4)
static void emit_mma_epi_ncl(gk *s, const epi *e, preg acc[4][16][4], int MI, int NI, preg wm, preg wn,
                             preg lane, preg o0, preg p0)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const int BM = s->BM;
    preg tid = ws_ptx_reg(b, PTX_B32), sb = ws_ptx_reg(b, PTX_B32), wa = ws_ptx_reg(b, PTX_B32);
    preg tmp = ws_ptx_reg(b, PTX_B32), ra = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, smem", sb.n);
    ws_ptx_comment(b, "fragment writes: Ys[%s16mi + 8h + lane/4][32wn + 8ni + 2(lane%%4) + e]",
                   BM == 64 ? "32wm + " : "");
    I("shr.u32 %s, %s, 2", wa.n, lane.n);
    if (BM == 64)
        I("mad.lo.u32 %s, %s, 32, %s", wa.n, wm.n, wa.n);
    if (s->wg) /* wgmma: warp w's rows 16w + 8h + lane/4 (wn: (w%4)*16), all 128 positions */
        I("add.u32 %s, %s, %s", wa.n, wa.n, wn.n);
    I("mul.lo.u32 %s, %s, %d", wa.n, wa.n, YS_ROW);
    I("and.b32 %s, %s, 3", tmp.n, lane.n);
    I("shl.b32 %s, %s, 1", tmp.n, tmp.n);
    I("add.u32 %s, %s, %s", wa.n, wa.n, tmp.n);
    if (!s->wg)
        I("mad.lo.u32 %s, %s, 32, %s", wa.n, wn.n, wa.n);
    I("mad.lo.u32 %s, %s, 4, %s", wa.n, wa.n, sb.n);
    ws_ptx_comment(b, "reads: Ys[tid/128 + 2i][tid%%128]");
    I("and.b32 %s, %s, %d", tmp.n, tid.n, BN - 1);
    I("shr.u32 %s, %s, 7", ra.n, tid.n);
    I("mad.lo.u32 %s, %s, %d, %s", ra.n, ra.n, YS_ROW, tmp.n);
    I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, sb.n);
    ws_ptx_comment(b, "position p = p0 + tid%%128 = n*T_out + t; y + (n*C_out*T_out + t)*%d, add + (n*add_bs + t)*%d",
                   s->ys, s->ys);
    preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
    preg pok = ws_ptx_reg(b, PTX_PRED), ybase = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64);
    preg n64 = ws_ptx_reg(b, PTX_B64), t64 = ws_ptx_reg(b, PTX_B64), orow = ws_ptx_reg(b, PTX_B32);
    I("add.u32 %s, %s, %s", p.n, p0.n, tmp.n);
    I("setp.lt.u32 %s, %s, %s", pok.n, p.n, s->npos.n);
    I("div.u32 %s, %s, %s", n.n, p.n, s->tout32.n);
    I("mul.lo.u32 %s, %s, %s", t.n, n.n, s->tout32.n);
    I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
    I("cvt.u64.u32 %s, %s", t64.n, t.n);
    I("mul.wide.u32 %s, %s, %s", ybase.n, n.n, s->tout32.n);
    I("mul.lo.u64 %s, %s, %d", ybase.n, ybase.n, d->c_out);
    I("add.u64 %s, %s, %s", ybase.n, ybase.n, t64.n);
    I("mad.lo.u64 %s, %s, %d, %s", ybase.n, ybase.n, s->ys, e->py.n);
    I("cvt.u64.u32 %s, %s", n64.n, n.n);
    I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, e->abs.n);
    I("add.u64 %s, %s, %s", abase.n, abase.n, t64.n);
    I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, s->ys, e->pa.n);
    I("shr.u32 %s, %s, 7", orow.n, tid.n);
    I("add.u32 %s, %s, %s", orow.n, orow.n, o0.n);
    for (int h = 0; h < BM / 64; h++) {
        plabel nowrite = ws_ptx_label_new(b, "nowrite"), done = ws_ptx_label_new(b, "rowsdone");
        ws_ptx_comment(b, "pass %d: rows o0 + %d ..", h, 64 * h);
        if (h)
            I("bar.sync 0");
        if (BM == 128) {
            preg mine = ws_ptx_reg(b, PTX_PRED);
            I("setp.eq.u32 %s, %s, %d", mine.n, wm.n, h);
            I("@!%s bra.uni %s", mine.n, nowrite.n);
        }
        for (int mi = 0; mi < MI; mi++)
            for (int ni = 0; ni < NI; ni++)
                for (int hh = 0; hh < 2; hh++)
                    I("st.shared.v2.f32 [%s+%d], {%s, %s}", wa.n, ((16 * mi + 8 * hh) * YS_ROW + 8 * ni) * 4,
                      acc[mi][ni][2 * hh].n, acc[mi][ni][2 * hh + 1].n);
        ws_ptx_label(b, nowrite);
        I("bar.sync 0");
        I("@!%s bra %s", pok.n, done.n);
        for (int i = 0; i < 32; i++) {
            preg o = ws_ptx_reg(b, PTX_B32), ook = ws_ptx_reg(b, PTX_PRED), lb = ws_ptx_reg(b, PTX_PRED);
            preg v = ws_ptx_reg(b, PTX_F32), bias = ws_ptx_reg(b, PTX_F32);
            preg off = ws_ptx_reg(b, PTX_B64), ba = ws_ptx_reg(b, PTX_B64), ya = ws_ptx_reg(b, PTX_B64);
            plabel skip = ws_ptx_label_new(b, "out");
            I("add.u32 %s, %s, %d", o.n, orow.n, 64 * h + 2 * i);
            I("setp.lt.u32 %s, %s, %d", ook.n, o.n, d->c_out);
            I("@!%s bra %s", ook.n, skip.n);
            I("ld.shared.f32 %s, [%s+%d]", v.n, ra.n, 2 * i * YS_ROW * 4);
            I("and.pred %s, %s, %s", lb.n, ook.n, e->hasb.n);
            I("mul.wide.u32 %s, %s, 4", ba.n, o.n);
            I("add.u64 %s, %s, %s", ba.n, ba.n, e->pb.n);
            I("mov.f32 %s, 0f00000000", bias.n);
            I("@%s ld.global.nc.f32 %s, [%s]", lb.n, bias.n, ba.n);
            I("mul.wide.u32 %s, %s, %s", off.n, o.n, s->tout32.n);
            const ws_ptx_epi ep = {
                .act = d->act, .y_type = d->y_type, .n = 1, .v = &v, .bias = &bias,
                .add_if = e->hasa, .add = {.index = off, .base = abase, .scale = s->ys},
                .y = {.at = ya, .index = off, .base = ybase, .scale = s->ys}};
            ws_ptx_epi_emit(b, &ep);
            ws_ptx_label(b, skip);
        }
        ws_ptx_label(b, done);
    }
}

/* the tensor-core kernels' set-up: parameters and block (emit_prologue); this thread's A row
 * (s->ka, s->wa, s->aok[0]) and B position (emit_b_position, s->kb in elements, s->sT) */
static void emit_mma_setup(gk *s, preg *tid_, preg *o0_, preg *p0_)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long R = s->R;
    preg px, pw, tid, o0, p0;
    emit_prologue(s, "the A row of this thread", &px, &pw, &tid, &o0, &p0);
    {
        preg oa = ws_ptx_reg(b, PTX_B32), oa64 = ws_ptx_reg(b, PTX_B64);
        s->ka = ws_ptx_reg(b, PTX_B32);
        s->wa = ws_ptx_reg(b, PTX_B64);
        s->aok[0] = ws_ptx_reg(b, PTX_PRED);
        I("rem.u32 %s, %s, %d", s->ka.n, tid.n, s->tpr);
        I("mul.lo.u32 %s, %s, %d", s->ka.n, s->ka.n, s->NA);
        I("div.u32 %s, %s, %d", oa.n, tid.n, s->tpr);
        I("add.u32 %s, %s, %s", oa.n, oa.n, o0.n);
        I("setp.lt.u32 %s, %s, %d", s->aok[0].n, oa.n, d->c_out);
        ws_ptx_comment(b, "W row o0 + tid/%d: w + (o0 + tid/%d) * R * %d (R = %lld)", s->tpr, s->tpr, s->es, R);
        I("cvt.u64.u32 %s, %s", oa64.n, oa.n);
        I("mad.lo.u64 %s, %s, %lld, %s", s->wa.n, oa64.n, R * s->es, pw.n);
    }
    ws_ptx_section(b, "B position of this thread: p = p0 + tid%128 = n*T_out + t");
    {
        emit_b_position(s, px, tid, p0);
        I("shl.b32 %s, %s, %d", s->kb.n, s->kb.n, s->nbm == 16 ? 4 : 3);
        if (s->kmajor && d->x_layout == WS_NCL) {
            s->sT = ws_ptx_reg(b, PTX_B64);
            I("mul.wide.u32 %s, %s, %d", s->sT.n, s->tin32.n, s->xs);
        }
    }
    *tid_ = tid, *o0_ = o0, *p0_ = p0;
}

static void emit_mma_body(gk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long R = s->R, KT = (R + s->mbk - 1) / s->mbk;
    const int BM = s->BM, A_BYTES = s->A_BYTES, STAGE = s->STAGE;
    const int WTM = BM / 2, MI = WTM / 16, NI = 4; /* warps 2 (channels) x 4 (positions) */
    const int YS = d->y_layout == WS_NCL ? 64 * YS_ROW * 4 : 0; /* emit_mma_epi_ncl's Ys */

    ws_ptx_raw(b, "\t.shared .align 16 .b8 smem[%d];\n", 2 * STAGE > YS ? 2 * STAGE : YS);
    preg tid, o0, p0;
    emit_mma_setup(s, &tid, &o0, &p0);
    ws_ptx_section(b, "warp (wm = warp/4: channels wm*WTM.., wn = warp%4: positions wn*32..); ldmatrix lanes");
    preg lane = ws_ptx_reg(b, PTX_B32), warp = ws_ptx_reg(b, PTX_B32), wm = ws_ptx_reg(b, PTX_B32);
    preg wn = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32), t2 = ws_ptx_reg(b, PTX_B32);
    preg alane = ws_ptx_reg(b, PTX_B32), blane = ws_ptx_reg(b, PTX_B32), sbase = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 31", lane.n, tid.n);
    I("shr.u32 %s, %s, 5", warp.n, tid.n);
    I("and.b32 %s, %s, 3", wn.n, warp.n);
    I("shr.u32 %s, %s, 2", wm.n, warp.n);
    I("mov.u32 %s, smem", sbase.n);
    ws_ptx_comment(b, "A: As + (wm*%d + lane%%16)*%d + (lane/16)*16", WTM, MRS);
    I("and.b32 %s, %s, 15", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, %d, %s", alane.n, wm.n, WTM, tmp.n);
    I("mul.lo.u32 %s, %s, %d", alane.n, alane.n, MRS);
    I("shr.u32 %s, %s, 4", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, 16, %s", alane.n, tmp.n, alane.n);
    I("add.u32 %s, %s, %s", alane.n, alane.n, sbase.n);
    ws_ptx_comment(b, "B: Bs + (wn*32 + lane%%8 + 8*(lane/16))*%d + ((lane/8)%%2)*16", MRS);
    I("and.b32 %s, %s, 7", tmp.n, lane.n);
    I("shr.u32 %s, %s, 4", t2.n, lane.n);
    I("mad.lo.u32 %s, %s, 8, %s", tmp.n, t2.n, tmp.n);
    I("mad.lo.u32 %s, %s, 32, %s", blane.n, wn.n, tmp.n);
    I("mul.lo.u32 %s, %s, %d", blane.n, blane.n, MRS);
    I("shr.u32 %s, %s, 3", t2.n, lane.n);
    I("and.b32 %s, %s, 1", t2.n, t2.n);
    I("mad.lo.u32 %s, %s, 16, %s", blane.n, t2.n, blane.n);
    I("add.u32 %s, %s, %d", blane.n, blane.n, A_BYTES);
    I("add.u32 %s, %s, %s", blane.n, blane.n, sbase.n);

    for (int e = 0; e < (s->vecw ? s->NA * s->es / 4 : s->NA); e++)
        s->av[e] = ws_ptx_reg(b, PTX_B32);
    if (s->bvec)
        for (int q = 0; q < s->nbm * s->xs / 16; q++)
            s->bx[q] = ws_ptx_vec_new(b, d->x_type, 16 / s->xs);
    else
        for (int e = 0; e < s->nbm; e++)
            s->bv[e] = ws_ptx_reg(b, d->x_type == WS_F32 ? PTX_F32 : d->x_type == WS_F16 ? PTX_B16 : PTX_B32);
    preg acc[4][16][4], fa[4][4], fb[4][2];
    for (int mi = 0; mi < MI; mi++)
        for (int ni = 0; ni < NI; ni++)
            for (int e = 0; e < 4; e++)
                acc[mi][ni][e] = ws_ptx_reg(b, PTX_F32);
    for (int mi = 0; mi < MI; mi++)
        for (int e = 0; e < 4; e++)
            fa[mi][e] = ws_ptx_reg(b, PTX_B32);
    for (int ni = 0; ni < NI; ni++)
        for (int e = 0; e < 2; e++)
            fb[ni][e] = ws_ptx_reg(b, PTX_B32);

    ws_ptx_section(b, "prologue: r in [0, BK) into stage 0");
    preg cur = ws_ptx_reg(b, PTX_B32), nxt = ws_ptx_reg(b, PTX_B32), r0 = ws_ptx_reg(b, PTX_B32);
    preg kt = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", cur.n);
    I("mov.u32 %s, 0", r0.n);
    I("mov.u32 %s, 1", kt.n);
    for (int mi = 0; mi < MI; mi++)
        for (int ni = 0; ni < NI; ni++)
            for (int e = 0; e < 4; e++)
                I("mov.f32 %s, 0f00000000", acc[mi][ni][e].n);
    emit_mma_gload(s, r0);
    emit_mma_sstore(s, cur);
    I("bar.sync 0");

    ws_ptx_section(b, "main loop over the stages of r");
    ws_ptx_comment(b, "%lld stages of %d", KT, s->mbk);
    plabel top = ws_ptx_label_new(b, "stage"), noload = ws_ptx_label_new(b, "noload");
    plabel nostore = ws_ptx_label_new(b, "nostore");
    preg more = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_label(b, top);
    I("setp.lt.u32 %s, %s, %lld", more.n, kt.n, KT);
    I("sub.u32 %s, %d, %s", nxt.n, STAGE, cur.n);
    I("@!%s bra.uni %s", more.n, noload.n);
    I("add.u32 %s, %s, %d", r0.n, r0.n, s->mbk);
    ws_ptx_comment(b, "the next stage's elements into registers");
    emit_mma_gload(s, r0);
    ws_ptx_label(b, noload);
    {
        preg ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", ra.n, alane.n, cur.n);
        I("add.u32 %s, %s, %s", rb.n, blane.n, cur.n);
        for (int ks = 0; ks < 2; ks++) {
            ws_ptx_comment(b, "k step %d: fragments, then %d mma", ks, MI * NI);
            for (int mi = 0; mi < MI; mi++)
                I("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d]", fa[mi][0].n,
                  fa[mi][1].n, fa[mi][2].n, fa[mi][3].n, ra.n, mi * 16 * MRS + ks * 32);
            for (int nj = 0; nj < NI / 2; nj++)
                I("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d]",
                  fb[2 * nj][0].n, fb[2 * nj][1].n, fb[2 * nj + 1][0].n, fb[2 * nj + 1][1].n, rb.n,
                  nj * 16 * MRS + ks * 32);
            for (int mi = 0; mi < MI; mi++)
                for (int ni = 0; ni < NI; ni++)
                    I("mma.sync.aligned.%s.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, "
                      "{%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s}",
                      s->es == 4 ? "m16n8k8" : "m16n8k16", s->mt, s->mt, acc[mi][ni][0].n, acc[mi][ni][1].n, acc[mi][ni][2].n,
                      acc[mi][ni][3].n, fa[mi][0].n, fa[mi][1].n, fa[mi][2].n, fa[mi][3].n,
                      fb[ni][0].n, fb[ni][1].n, acc[mi][ni][0].n, acc[mi][ni][1].n,
                      acc[mi][ni][2].n, acc[mi][ni][3].n);
        }
    }
    I("@!%s bra.uni %s", more.n, nostore.n);
    emit_mma_sstore(s, nxt);
    I("mov.u32 %s, %s", cur.n, nxt.n);
    ws_ptx_label(b, nostore);
    I("bar.sync 0");
    I("add.u32 %s, %s, 1", kt.n, kt.n);
    I("@%s bra.uni %s", more.n, top.n);

    ws_ptx_section(b, "epilogue: acc[mi][ni][2h + e] is (o0 + wm*WTM + 16mi + 8h + lane/4, "
                      "p0 + wn*32 + 8ni + 2(lane%4) + e)");
    const epi e = emit_epi_params(s);
    if (d->y_layout == WS_NCL) {
        emit_mma_epi_ncl(s, &e, acc, MI, NI, wm, wn, lane, o0, p0);
        I("ret");
        return;
    }
    preg eo0 = ws_ptx_reg(b, PTX_B32), ep0 = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 2", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, %d, %s", eo0.n, wm.n, WTM, tmp.n);
    I("add.u32 %s, %s, %s", eo0.n, eo0.n, o0.n);
    I("and.b32 %s, %s, 3", tmp.n, lane.n);
    I("shl.b32 %s, %s, 1", tmp.n, tmp.n);
    I("mad.lo.u32 %s, %s, 32, %s", ep0.n, wn.n, tmp.n);
    I("add.u32 %s, %s, %s", ep0.n, ep0.n, p0.n);
    int ro[8], po[8];
    preg av[8][16];
    for (int mi = 0; mi < MI; mi++)
        for (int h = 0; h < 2; h++) {
            ro[2 * mi + h] = 16 * mi + 8 * h;
            for (int ni = 0; ni < NI; ni++)
                for (int q = 0; q < 2; q++)
                    av[2 * mi + h][2 * ni + q] = acc[mi][ni][2 * h + q];
        }
    for (int ni = 0; ni < NI; ni++)
        for (int q = 0; q < 2; q++)
            po[2 * ni + q] = 8 * ni + q;
    emit_epi_store(s, &e, eo0, ep0, 2 * MI, ro, 2 * NI, po, "wn*32 + 2(lane%4)", av);
    I("ret");
}

/* ---- the wgmma kernel (sm_90a; ptx_gemm.h, WGMMA) ---- */

/* the 64-bit shared-memory matrix descriptor of a K-major tile at shared address `addr`
 * (u32) in rows of 64 bytes with the 64-byte swizzle: start >> 4 in bits 0-13, the leading
 * byte offset (unused with a swizzle: 1) in 16-29, the stride byte offset (8 rows: 512 >> 4)
 * in 32-45, the layout type (2: 64-byte swizzle) in 62-63 */
static void emit_wg_desc(gk *s, preg desc, preg addr)
{
    ptx_buf *b = s->b;
    preg lo = ws_ptx_reg(b, PTX_B32), hi = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 4", lo.n, addr.n);
    I("and.b32 %s, %s, 16383", lo.n, lo.n);
    I("or.b32 %s, %s, %d", lo.n, lo.n, 1 << 16);
    I("mov.u32 %s, %u", hi.n, (512u >> 4) | (2u << 30));
    I("mov.b64 %s, {%s, %s}", desc.n, lo.n, hi.n);
}

static void emit_wgmma_body(gk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long R = s->R, KT = (R + s->mbk - 1) / s->mbk;
    const int A_BYTES = s->A_BYTES, STAGE = s->STAGE;
    const int YS = d->y_layout == WS_NCL ? 64 * YS_ROW * 4 : 0;

    ws_ptx_raw(b, "\t.shared .align 1024 .b8 smem[%d];\n", 2 * STAGE > YS ? 2 * STAGE : YS);
    preg tid, o0, p0;
    emit_mma_setup(s, &tid, &o0, &p0);
    ws_ptx_section(b, "warpgroup g = tid/128: rows 64g.. of the tile, all 128 positions");
    preg lane = ws_ptx_reg(b, PTX_B32), warp = ws_ptx_reg(b, PTX_B32), wg = ws_ptx_reg(b, PTX_B32);
    preg wrow = ws_ptx_reg(b, PTX_B32), sbase = ws_ptx_reg(b, PTX_B32), aoff = ws_ptx_reg(b, PTX_B32);
    preg one = ws_ptx_reg(b, PTX_PRED);
    I("and.b32 %s, %s, 31", lane.n, tid.n);
    I("shr.u32 %s, %s, 5", warp.n, tid.n);
    I("shr.u32 %s, %s, 7", wg.n, tid.n);
    I("and.b32 %s, %s, 3", wrow.n, warp.n);
    I("shl.b32 %s, %s, 4", wrow.n, wrow.n);
    I("mov.u32 %s, smem", sbase.n);
    I("mad.lo.u32 %s, %s, %d, %s", aoff.n, wg.n, 64 * 64, sbase.n);
    I("setp.eq.u32 %s, 1, 1", one.n);

    for (int e = 0; e < (s->vecw ? s->NA * s->es / 4 : s->NA); e++)
        s->av[e] = ws_ptx_reg(b, PTX_B32);
    if (s->bvec)
        for (int q = 0; q < s->nbm * s->xs / 16; q++)
            s->bx[q] = ws_ptx_vec_new(b, d->x_type, 16 / s->xs);
    else
        for (int e = 0; e < s->nbm; e++)
            s->bv[e] = ws_ptx_reg(b, d->x_type == WS_F32 ? PTX_F32 : d->x_type == WS_F16 ? PTX_B16 : PTX_B32);
    preg acc[4][16][4];
    for (int ni = 0; ni < 16; ni++)
        for (int e = 0; e < 4; e++)
            acc[0][ni][e] = ws_ptx_reg(b, PTX_F32);

    ws_ptx_section(b, "prologue: r in [0, BK) into stage 0");
    preg cur = ws_ptx_reg(b, PTX_B32), nxt = ws_ptx_reg(b, PTX_B32), r0 = ws_ptx_reg(b, PTX_B32);
    preg kt = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", cur.n);
    I("mov.u32 %s, 0", r0.n);
    I("mov.u32 %s, 1", kt.n);
    for (int ni = 0; ni < 16; ni++)
        for (int e = 0; e < 4; e++)
            I("mov.f32 %s, 0f00000000", acc[0][ni][e].n);
    emit_mma_gload(s, r0);
    emit_mma_sstore(s, cur);
    I("bar.sync 0");

    ws_ptx_section(b, "main loop: wgmma on stage cur (async) while the next stage is gathered");
    ws_ptx_comment(b, "%lld stages of %d", KT, s->mbk);
    plabel top = ws_ptx_label_new(b, "stage"), noload = ws_ptx_label_new(b, "noload");
    plabel nostore = ws_ptx_label_new(b, "nostore");
    preg more = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_label(b, top);
    I("setp.lt.u32 %s, %s, %lld", more.n, kt.n, KT);
    I("sub.u32 %s, %d, %s", nxt.n, STAGE, cur.n);
    I("@!%s bra.uni %s", more.n, noload.n);
    I("add.u32 %s, %s, %d", r0.n, r0.n, s->mbk);
    emit_mma_gload(s, r0);
    ws_ptx_label(b, noload);
    {
        preg aa = ws_ptx_reg(b, PTX_B32), ba = ws_ptx_reg(b, PTX_B32);
        preg da = ws_ptx_reg(b, PTX_B64), db = ws_ptx_reg(b, PTX_B64);
        I("add.u32 %s, %s, %s", aa.n, aoff.n, cur.n);
        I("add.u32 %s, %s, %s", ba.n, sbase.n, cur.n);
        I("add.u32 %s, %s, %d", ba.n, ba.n, A_BYTES);
        I("wgmma.fence.sync.aligned");
        for (int ks = 0; ks < 2; ks++) {
            preg ak = ws_ptx_reg(b, PTX_B32), bk = ws_ptx_reg(b, PTX_B32);
            I("add.u32 %s, %s, %d", ak.n, aa.n, ks * 32);
            I("add.u32 %s, %s, %d", bk.n, ba.n, ks * 32);
            emit_wg_desc(s, da, ak);
            emit_wg_desc(s, db, bk);
            char regs[64 * 8 + 8];
            int o = 0;
            for (int ni = 0; ni < 16; ni++)
                for (int e = 0; e < 4; e++)
                    o += snprintf(regs + o, sizeof regs - (size_t)o, "%s%s", o ? ", " : "", acc[0][ni][e].n);
            if (s->es == 4)
                I("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%s}, %s, %s, %s, 1, 1", regs, da.n, db.n,
                  one.n);
            else
                I("wgmma.mma_async.sync.aligned.m64n128k16.f32.%s.%s {%s}, %s, %s, %s, 1, 1, 0, 0", s->mt, s->mt,
                  regs, da.n, db.n, one.n);
        }
        I("wgmma.commit_group.sync.aligned");
    }
    I("@!%s bra.uni %s", more.n, nostore.n);
    ws_ptx_comment(b, "the group that read stage nxt is done (this warpgroup's, then both)");
    I("wgmma.wait_group.sync.aligned 1");
    I("bar.sync 0");
    emit_mma_sstore(s, nxt);
    I("mov.u32 %s, %s", cur.n, nxt.n);
    I("bar.sync 0");
    ws_ptx_label(b, nostore);
    I("add.u32 %s, %s, 1", kt.n, kt.n);
    I("@%s bra.uni %s", more.n, top.n);
    I("wgmma.wait_group.sync.aligned 0");
    I("bar.sync 0");

    ws_ptx_section(b, "epilogue: acc[0][ni][2h + e] is (o0 + 16*warp + 8h + lane/4, p0 + 8ni + 2(lane%4) + e)");
    const epi e = emit_epi_params(s);
    if (d->y_layout == WS_NCL) {
        /* the NCL epilogue's pass h is written by warps with wm == h: warpgroup h */
        emit_mma_epi_ncl(s, &e, acc, 1, 16, wg, wrow, lane, o0, p0);
        I("ret");
        return;
    }
    preg eo0 = ws_ptx_reg(b, PTX_B32), ep0 = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 2", tmp.n, lane.n);
    I("shl.b32 %s, %s, 4", eo0.n, warp.n);
    I("add.u32 %s, %s, %s", eo0.n, eo0.n, tmp.n);
    I("add.u32 %s, %s, %s", eo0.n, eo0.n, o0.n);
    I("and.b32 %s, %s, 3", tmp.n, lane.n);
    I("shl.b32 %s, %s, 1", tmp.n, tmp.n);
    I("add.u32 %s, %s, %s", ep0.n, tmp.n, p0.n);
    for (int half = 0; half < 2; half++) {
        int ro[8] = {0, 8}, po[16];
        preg av[8][16];
        for (int ni = 0; ni < 8; ni++)
            for (int q = 0; q < 2; q++) {
                po[2 * ni + q] = 64 * half + 8 * ni + q;
                for (int h = 0; h < 2; h++)
                    av[h][2 * ni + q] = acc[0][8 * half + ni][2 * h + q];
            }
        emit_epi_store(s, &e, eo0, ep0, 2, ro, 16, po, "2(lane%4)", av);
    }
    I("ret");
}

/* the store of a group of 4 summed float32 values v (the _fin entry's, and the _slice
 * entry's): NLC y, channels o .. o+3 of position q; NCL y, positions q .. q+3 of channel o
 * (q = n*T_out + t, np = N*T_out, to = T_out): + b, act, + add, stored in y_type; one
 * vector access where the 4 are in range, in one item and aligned, else one by one. Ends
 * with ret, or a branch to *done (the vector path falls through to it) */
static void emit_group_store(ptx_buf *b, const ws_conv_desc *d, const preg v[4], preg o, preg q, preg np,
                             preg to, preg py, preg pb, preg pa, preg abs, preg hasb, preg hasa,
                             const plabel *done)
{
    const int ys = d->y_type == WS_F32 ? 4 : 2, nlc = d->y_layout == WS_NLC;
    ws_ptx_comment(b, "the 4 elements are one aligned run of y (and of add) when all are in range, "
                      "in one item, and the addresses are %d-byte aligned: one vector access", 4 * ys);
    preg vin = ws_ptx_reg(b, PTX_PRED), pl = ws_ptx_reg(b, PTX_PRED), e0 = ws_ptx_reg(b, PTX_B32);
    preg n0 = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32), off0 = ws_ptx_reg(b, PTX_B32);
    preg ya0 = ws_ptx_reg(b, PTX_B64), aa0 = ws_ptx_reg(b, PTX_B64), al = ws_ptx_reg(b, PTX_B64);
    preg w64 = ws_ptx_reg(b, PTX_B64), w32 = ws_ptx_reg(b, PTX_B32);
    I("setp.lt.u32 %s, %s, %s", vin.n, q.n, np.n);
    I("div.u32 %s, %s, %s", n0.n, q.n, to.n);
    I("mul.lo.u32 %s, %s, %s", t0.n, n0.n, to.n);
    I("sub.u32 %s, %s, %s", t0.n, q.n, t0.n);
    if (nlc) {
        I("add.u32 %s, %s, 3", e0.n, o.n);
        I("setp.lt.u32 %s, %s, %d", pl.n, e0.n, d->c_out);
        I("mad.lo.u32 %s, %s, %d, %s", off0.n, t0.n, d->c_out, o.n);
    } else {
        I("setp.lt.u32 %s, %s, %d", pl.n, o.n, d->c_out);
        I("and.pred %s, %s, %s", vin.n, vin.n, pl.n);
        I("add.u32 %s, %s, 3", e0.n, t0.n);
        I("setp.lt.u32 %s, %s, %s", pl.n, e0.n, to.n);
        I("mad.lo.u32 %s, %s, %s, %s", off0.n, o.n, to.n, t0.n);
    }
    I("and.pred %s, %s, %s", vin.n, vin.n, pl.n);
    I("mul.lo.u32 %s, %s, %s", w32.n, n0.n, to.n);
    I("mul.wide.u32 %s, %s, %d", ya0.n, w32.n, d->c_out);
    I("cvt.u64.u32 %s, %s", w64.n, off0.n);
    I("add.u64 %s, %s, %s", ya0.n, ya0.n, w64.n);
    I("mad.lo.u64 %s, %s, %d, %s", ya0.n, ya0.n, ys, py.n);
    I("cvt.u64.u32 %s, %s", aa0.n, n0.n);
    I("mad.lo.u64 %s, %s, %s, %s", aa0.n, aa0.n, abs.n, w64.n);
    I("mad.lo.u64 %s, %s, %d, %s", aa0.n, aa0.n, ys, pa.n);
    I("and.b64 %s, %s, %d", al.n, ya0.n, 4 * ys - 1);
    I("setp.eq.u64 %s, %s, 0", pl.n, al.n);
    I("and.pred %s, %s, %s", vin.n, vin.n, pl.n);
    I("and.b64 %s, %s, %d", al.n, aa0.n, 4 * ys - 1);
    I("setp.eq.or.u64 %s, %s, 0, !%s", pl.n, al.n, hasa.n);
    I("and.pred %s, %s, %s", vin.n, vin.n, pl.n);
    plabel vec = ws_ptx_label_new(b, "vec");
    I("@%s bra %s", vin.n, vec.n);
    ws_ptx_comment(b, "else element by element");
    for (int c = 0; c < 4; c++) {
        ws_ptx_comment(b, "element %d: (o%s, p%s) = n*T_out + t", c, nlc ? " + c" : "", nlc ? "" : " + c");
        preg oc = ws_ptx_reg(b, PTX_B32), pc = ws_ptx_reg(b, PTX_B32), in = ws_ptx_reg(b, PTX_PRED);
        preg pin = ws_ptx_reg(b, PTX_PRED), nn = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        preg off = ws_ptx_reg(b, PTX_B32), o64 = ws_ptx_reg(b, PTX_B64), off64 = ws_ptx_reg(b, PTX_B64);
        preg ao = ws_ptx_reg(b, PTX_B64), nn64 = ws_ptx_reg(b, PTX_B64), yv = ws_ptx_reg(b, PTX_F32);
        I("add.u32 %s, %s, %d", oc.n, o.n, nlc ? c : 0);
        I("add.u32 %s, %s, %d", pc.n, q.n, nlc ? 0 : c);
        I("setp.lt.u32 %s, %s, %d", in.n, oc.n, d->c_out);
        I("setp.lt.u32 %s, %s, %s", pin.n, pc.n, np.n);
        I("and.pred %s, %s, %s", in.n, in.n, pin.n);
        I("div.u32 %s, %s, %s", nn.n, pc.n, to.n);
        I("mul.lo.u32 %s, %s, %s", t.n, nn.n, to.n);
        I("sub.u32 %s, %s, %s", t.n, pc.n, t.n);
        if (nlc)
            I("mad.lo.u32 %s, %s, %d, %s", off.n, t.n, d->c_out, oc.n);
        else
            I("mad.lo.u32 %s, %s, %s, %s", off.n, oc.n, to.n, t.n);
        ws_ptx_comment(b, "y at n*C_out*T_out + off, add at n*add_bs + off");
        I("cvt.u64.u32 %s, %s", o64.n, oc.n);
        I("cvt.u64.u32 %s, %s", nn64.n, nn.n);
        I("cvt.u64.u32 %s, %s", off64.n, off.n);
        I("mad.lo.u64 %s, %s, %s, %s", ao.n, nn64.n, abs.n, off64.n);
        I("mul.lo.u32 %s, %s, %s", nn.n, nn.n, to.n);
        I("mul.wide.u32 %s, %s, %d", nn64.n, nn.n, d->c_out);
        I("add.u64 %s, %s, %s", off64.n, off64.n, nn64.n);
        ws_ptx_comment(b, "b[o] read only for an element in range (0 without bias)");
        preg bv = ws_ptx_reg(b, PTX_F32), lb = ws_ptx_reg(b, PTX_PRED), ba = ws_ptx_reg(b, PTX_B64);
        I("and.pred %s, %s, %s", lb.n, in.n, hasb.n);
        I("mad.lo.u64 %s, %s, 4, %s", ba.n, o64.n, pb.n);
        I("mov.f32 %s, 0f00000000", bv.n);
        I("@%s ld.global.nc.f32 %s, [%s]", lb.n, bv.n, ba.n);
        I("mov.f32 %s, %s", yv.n, v[c].n);
        const ws_ptx_epi ep = {
            .act = d->act, .y_type = d->y_type, .n = 1, .v = &yv, .bias = &bv,
            .add_if = hasa, .add = {.index = ao, .base = pa, .scale = ys},
            .y = {.index = off64, .base = py, .scale = ys}, .in = in};
        ws_ptx_epi_emit(b, &ep);
    }
    if (done)
        I("bra.uni %s", done->n);
    else
        I("ret");
    ws_ptx_label(b, vec);
    ws_ptx_comment(b, "one vector: bias %s (0 without bias)", nlc ? "b[o .. o+3]" : "b[o] for all 4");
    preg bv[4], yv[4], ba = ws_ptx_reg(b, PTX_B64);
    for (int c = 0; c < 4; c++) {
        bv[c] = ws_ptx_reg(b, PTX_F32);
        yv[c] = ws_ptx_reg(b, PTX_F32);
        I("mov.f32 %s, %s", yv[c].n, v[c].n);
    }
    I("mul.wide.u32 %s, %s, 4", ba.n, o.n);
    I("add.u64 %s, %s, %s", ba.n, ba.n, pb.n);
    for (int c = 0; c < (nlc ? 4 : 1); c++) {
        I("mov.f32 %s, 0f00000000", bv[c].n);
        I("@%s ld.global.nc.f32 %s, [%s+%d]", hasb.n, bv[c].n, ba.n, 4 * c);
    }
    const ws_ptx_epi ev = {
        .act = d->act, .y_type = d->y_type, .n = 4, .v = yv, .bias = bv, .bias_stride = nlc ? 1 : 0,
        .add_if = hasa, .add = {.at = aa0}, .y = {.at = ya0}, .in = vin};
    ws_ptx_epi_emit(b, &ev);
    if (!done)
        I("ret");
}

/* the _fin entry (FFMA split sums): a thread a float4 group of the parts' tile order
 * (emit_split_store: blocks of WS_GEMM_THREADS threads, G = ws_gemm_split_groups blocks a
 * tile, fin block f = tile*G + g, thread tid), its 4 elements of y
 * y = act(b[o] + sum_{z < Z} part[z]) + add, the parts added in order z = 0, 1, .. (the same
 * bits every run); the conv forward table with p_x the parts and p_t_in their number Z, and
 * p_xoff the first tile along p of the _split launch (its tiles: p_xoff .. gx - 1 along p,
 * every tile along o; tile = by*(gx - p_xoff) + bx - p_xoff).
 * The thread's (o, p) are the GEMM thread's: o0 + 64(i/4) + 4ty + i%4, p0 + 64(j/4) + 4tx +
 * j%4 ((tx, ty) swapped for NLC y); each element is stored where o < C_out and p < P. Index
 * arithmetic is 32-bit (gpu_conv.c keeps the parts within 256 MiB, 2^26 floats). */
static void emit_fin(ptx_buf *b, const ws_conv_desc *d)
{
    const ws_params *pt = ws_params_of(WS_PARAMS_FWD_PARTS);
    const int BM = ws_gemm_bm(d), G = ws_gemm_split_groups(d), nlc = d->y_layout == WS_NLC;
    ws_ptx_comment(b, "y = act(b[o] + sum_z part[z]) + add, 4 elements a thread; y %s %s, act %s; tile %dx%d, %d groups",
                   nlc ? "NLC" : "NCL", ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->act), BM,
                   WS_GEMM_BN, G);
    static const int pi[] = { WS_FWD_X, WS_FWD_B, WS_FWD_ADD, WS_FWD_Y };
    preg p[4];
    ws_ptx_param_ptrs(b, p, pt, pi, 4);
    const preg pp = p[0], pb = p[1], pa = p[2], py = p[3];
    preg n32 = ws_ptx_reg(b, PTX_B32), nz = ws_ptx_reg(b, PTX_B32), to = ws_ptx_reg(b, PTX_B32);
    preg abs = ws_ptx_reg(b, PTX_B64), hasb = ws_ptx_reg(b, PTX_PRED), hasa = ws_ptx_reg(b, PTX_PRED);
    preg pbr = ws_ptx_reg(b, PTX_B64), par = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, n32, pt, WS_FWD_N);
    ws_ptx_ld_param(b, nz, pt, WS_FWD_T_IN);
    ws_ptx_ld_param(b, to, pt, WS_FWD_T_OUT);
    ws_ptx_ld_param(b, abs, pt, WS_FWD_ADD_BS);
    ws_ptx_ld_param(b, pbr, pt, WS_FWD_B);
    ws_ptx_ld_param(b, par, pt, WS_FWD_ADD);
    I("setp.ne.u64 %s, %s, 0", hasb.n, pbr.n);
    I("setp.ne.u64 %s, %s, 0", hasa.n, par.n);
    ws_ptx_comment(b, "P = N*T_out; the tiles: gx = ceil(P / %d) along p, nblk = gx * ceil(C_out / %d)", WS_GEMM_BN, BM);
    preg np = ws_ptx_reg(b, PTX_B32), gx = ws_ptx_reg(b, PTX_B32), nblk = ws_ptx_reg(b, PTX_B32);
    preg f = ws_ptx_reg(b, PTX_B32), tid = ws_ptx_reg(b, PTX_B32), tile = ws_ptx_reg(b, PTX_B32);
    preg g = ws_ptx_reg(b, PTX_B32), bx = ws_ptx_reg(b, PTX_B32), by = ws_ptx_reg(b, PTX_B32);
    preg xoff = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ld_param(b, xoff, pt, WS_FWDP_XOFF);
    I("mul.lo.u32 %s, %s, %s", np.n, n32.n, to.n);
    I("add.u32 %s, %s, %d", gx.n, np.n, WS_GEMM_BN - 1);
    I("div.u32 %s, %s, %d", gx.n, gx.n, WS_GEMM_BN);
    ws_ptx_comment(b, "the launch's tiles along p: from p_xoff to gx, gx - p_xoff of them");
    I("sub.u32 %s, %s, %s", gx.n, gx.n, xoff.n);
    I("mul.lo.u32 %s, %s, %d", nblk.n, gx.n, (d->c_out + BM - 1) / BM);
    I("mov.u32 %s, %%ctaid.x", f.n);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("div.u32 %s, %s, %d", tile.n, f.n, G);
    I("mul.lo.u32 %s, %s, %d", g.n, tile.n, G);
    I("sub.u32 %s, %s, %s", g.n, f.n, g.n);
    I("div.u32 %s, %s, %s", by.n, tile.n, gx.n);
    I("mul.lo.u32 %s, %s, %s", bx.n, by.n, gx.n);
    I("sub.u32 %s, %s, %s", bx.n, tile.n, bx.n);
    I("add.u32 %s, %s, %s", bx.n, bx.n, xoff.n);
    ws_ptx_comment(b, "the parts, in order, four 16-byte loads in flight");
    preg a = ws_ptx_reg(b, PTX_B64), step = ws_ptx_reg(b, PTX_B64), t32 = ws_ptx_reg(b, PTX_B32);
    preg z = ws_ptx_reg(b, PTX_B32), zk = ws_ptx_reg(b, PTX_B32), more = ws_ptx_reg(b, PTX_PRED);
    preg v[4], pv[4][4], pk[4];
    for (int c = 0; c < 4; c++)
        v[c] = ws_ptx_reg(b, PTX_F32);
    for (int k = 0; k < 4; k++) {
        pk[k] = ws_ptx_reg(b, PTX_PRED);
        for (int c = 0; c < 4; c++)
            pv[k][c] = ws_ptx_reg(b, PTX_F32);
    }
    plabel top = ws_ptx_label_new(b, "part");
    for (int c = 0; c < 4; c++)
        I("mov.f32 %s, 0f00000000", v[c].n);
    I("mad.lo.u32 %s, %s, %d, %s", t32.n, f.n, WS_GEMM_THREADS, tid.n);
    I("mul.wide.u32 %s, %s, 16", a.n, t32.n);
    I("add.u64 %s, %s, %s", a.n, a.n, pp.n);
    I("mul.lo.u32 %s, %s, %d", t32.n, nblk.n, G * WS_GEMM_THREADS);
    I("mul.wide.u32 %s, %s, 16", step.n, t32.n);
    I("mov.u32 %s, 0", z.n);
    ws_ptx_label(b, top);
    for (int k = 0; k < 4; k++) {
        I("add.u32 %s, %s, %d", zk.n, z.n, k);
        I("setp.lt.u32 %s, %s, %s", pk[k].n, zk.n, nz.n);
        I("@%s ld.global.v4.f32 {%s, %s, %s, %s}, [%s]", pk[k].n, pv[k][0].n, pv[k][1].n, pv[k][2].n,
          pv[k][3].n, a.n);
        I("add.u64 %s, %s, %s", a.n, a.n, step.n);
    }
    for (int k = 0; k < 4; k++)
        for (int c = 0; c < 4; c++)
            I("@%s add.f32 %s, %s, %s", pk[k].n, v[c].n, v[c].n, pv[k][c].n);
    I("add.u32 %s, %s, 4", z.n, z.n);
    I("setp.lt.u32 %s, %s, %s", more.n, z.n, nz.n);
    I("@%s bra %s", more.n, top.n);
    ws_ptx_comment(b, "the group's first (o, p): %s",
                   nlc ? "NLC: ty = tid%16, tx = tid/16; o = o0 + 64(g/8) + 4ty + c, p = p0 + 64(g%8/4) + 4tx + g%4"
                       : "NCL: ty = tid/16, tx = tid%16; o = o0 + 64(g/8) + 4ty + g/2%4, p = p0 + 64(g%2) + 4tx + c");
    preg tx = ws_ptx_reg(b, PTX_B32), ty = ws_ptx_reg(b, PTX_B32);
    preg o = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32), h = ws_ptx_reg(b, PTX_B32);
    I("%s %s, %s, %s", nlc ? "and.b32" : "shr.u32", ty.n, tid.n, nlc ? "15" : "4");
    I("%s %s, %s, %s", nlc ? "shr.u32" : "and.b32", tx.n, tid.n, nlc ? "4" : "15");
    I("mul.lo.u32 %s, %s, %d", o.n, by.n, BM);
    I("mad.lo.u32 %s, %s, 4, %s", o.n, ty.n, o.n);
    I("mul.lo.u32 %s, %s, %d", q.n, bx.n, WS_GEMM_BN);
    I("mad.lo.u32 %s, %s, 4, %s", q.n, tx.n, q.n);
    if (nlc) { /* g = 8*i4 + j: rows 4*i4 .. +3, column j */
        I("shr.u32 %s, %s, 3", h.n, g.n);
        I("mad.lo.u32 %s, %s, 64, %s", o.n, h.n, o.n);
        I("and.b32 %s, %s, 4", h.n, g.n);
        I("mad.lo.u32 %s, %s, 16, %s", q.n, h.n, q.n);
        I("and.b32 %s, %s, 3", h.n, g.n);
        I("add.u32 %s, %s, %s", q.n, q.n, h.n);
    } else { /* g = 2*i + j4: row i, columns 4*j4 .. +3 */
        I("shr.u32 %s, %s, 3", h.n, g.n);
        I("mad.lo.u32 %s, %s, 64, %s", o.n, h.n, o.n);
        I("shr.u32 %s, %s, 1", h.n, g.n);
        I("and.b32 %s, %s, 3", h.n, h.n);
        I("add.u32 %s, %s, %s", o.n, o.n, h.n);
        I("and.b32 %s, %s, 1", h.n, g.n);
        I("mad.lo.u32 %s, %s, 64, %s", q.n, h.n, q.n);
    }
    emit_group_store(b, d, v, o, q, np, to, py, pb, pa, abs, hasb, hasa, NULL);
}

/* ---- the sliced tile for calls of few blocks (ptx_gemm.h, SLICES) ---- */

#define SL_TM 12                       /* channels a thread */
#define SL_TN 6                        /* positions a thread */
#define SL_TY 8                        /* threads along channels in a slice */
#define SL_BM WS_GEMM_SLICE_BM         /* 96 = SL_TY * SL_TM */
#define SL_NS WS_GEMM_SLICE_STAGES
#define SL_BKP (BK + 4)                /* floats a B row (a position): 16 r and 4 of padding */
#define SL_A_BYTES (BK * SL_BM * 4)    /* As[BK][SL_BM] */
#define SL_RROW (SL_BM + 4)            /* floats a row (a position) of a slice's sums */

/* variant v's shape: S slices of T = SL_TY * TX threads, a tile of SL_BM x BN = TX * SL_TN */
typedef struct {
    int ns, ntx, thr, bn;   /* S, TX, T, BN */
    int stage, ring, red;   /* bytes: a stage, a slice's ring, a slice's sums */
    int bch;                /* B chunks (NLC x) a thread a stage */
    int groups;             /* groups of 4 elements a tile */
} slcfg;

static slcfg slice_cfg(int v)
{
    slcfg c;
    c.ns = v ? WS_GEMM_SLICE_NS1 : WS_GEMM_SLICE_NS0;
    c.ntx = v ? 16 : 8;
    c.thr = SL_TY * c.ntx;
    c.bn = c.ntx * SL_TN;
    c.stage = SL_A_BYTES + c.bn * SL_BKP * 4;
    c.ring = SL_NS * c.stage;
    c.red = c.bn * SL_RROW * 4;
    c.bch = c.bn * BK / 4 / c.thr;
    c.groups = SL_BM * c.bn / 4;
    return c;
}

_Static_assert(SL_BM == SL_TY * SL_TM && BK == 16 && SL_TM % 4 == 0 && SL_NS >= 2 &&
               WS_GEMM_SLICE_BM == 96 && WS_GEMM_SLICE_NS0 == 4 && WS_GEMM_SLICE_NS1 == 2,
               "the sliced tile below: 12x6 a thread, BK 16, 256 threads in 4 slices of 64 or 2 of 128");

int ws_gemm_slice_threads(int v)
{
    const slcfg c = slice_cfg(v);
    return c.ns * c.thr;
}

int ws_gemm_slice_bn(int v)
{
    return slice_cfg(v).bn;
}

int ws_gemm_slice_smem(int v)
{
    const slcfg c = slice_cfg(v);
    return c.ns * (c.ring > c.red ? c.ring : c.red);
}

int ws_gemm_slice_fits(const ws_conv_desc *d)
{
    return ws_gemm_fits(d) && !ws_gemm_mma(d) && ws_gemm_ffma_wpack(d) && d->x_type == WS_F32 &&
           d->pre == WS_ACT_NONE;
}

/* the slice's registers for its copies. A stage's 16 x 24 chunks of A (16 bytes: 4 channels
 * of a row r) are copied by the thread as (row lt/8 + (T/8)b, column lt%8 + 8a), a < 3, b <
 * 128/T: fixed offsets from one pointer, so that a chunk costs one instruction. The copies
 * follow a cursor, the next stage to copy (its tap k, its first channel j0, the pointer wa),
 * moved on by each stage's copies: no division in the loop */
typedef struct {
    const ws_conv_desc *d;
    preg px, pw, tin;
    preg sb;                   /* the slice's ring (shared address) */
    slcfg c;
    preg ldu, lj0;             /* the cursor: D*k and j0 of the next stage to copy */
    preg wa;                   /* A: &W[16kt + lt/8][o0 + 4(lt%8)] (packed [R][C_out]) of that stage */
    preg aok[3];               /* column a in range: o0 + 4(lt%8 + 8a) < C_out */
    preg aso;                  /* A: the thread's byte offset in a stage */
    preg xb[4];                /* NLC x, chunk e < c.bch: &x[n][u0][4(lt%4)] (u0 = S*t - P_L; the
                                  address of an out-of-range u is never read) */
    preg bu0[4];               /* its u0, or 0x40000000 for a position past N*T_out (past any
                                  T_in: gpu_conv.c's gemm_slice takes N*T_in < 2^30) */
    preg bso;                  /* B: the byte offset in a stage of the thread's first chunk (NLC
                                  x) or of its position's row (NCL x) */
    preg bthr;                 /* NCL x: lt < BN, the thread copies position lt */
    preg bxn;                  /* NCL x: &x[n][0][0] of that position */
} sl;

/* position p = n*T_out + t: n, and u0 = S*t - P_L, its first x row, or 0x40000000 (past any
 * T_in) where p >= np = N*T_out */
static void emit_slice_u0(ptx_buf *b, const ws_conv_desc *d, preg p, preg np, preg tout, preg n, preg u0)
{
    preg t = ws_ptx_reg(b, PTX_B32), pv = ws_ptx_reg(b, PTX_PRED);
    I("setp.lt.u32 %s, %s, %s", pv.n, p.n, np.n);
    I("div.u32 %s, %s, %s", n.n, p.n, tout.n);
    I("mul.lo.u32 %s, %s, %s", t.n, n.n, tout.n);
    I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
    I("mul.lo.u32 %s, %s, %d", u0.n, t.n, d->stride);
    I("sub.s32 %s, %s, %d", u0.n, u0.n, d->pad_l);
    I("selp.b32 %s, %s, %d, %s", u0.n, u0.n, 0x40000000, pv.n);
}

/* the copies of the cursor's stage (one tap k, channels j0 .. j0 + 15) into the ring's slot at
 * byte offset so, zeros where x is out of range; the cursor moves to the next stage. The
 * caller commits the group */
static void emit_slice_load(ptx_buf *b, const sl *q, preg so)
{
    const ws_conv_desc *d = q->d;
    const int T = q->c.thr, nb = 16 * 8 / T;
    preg base = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "A: W packed [R][C_out], the thread's 3 x %d chunks at fixed offsets from wa", nb);
    I("add.u32 %s, %s, %s", base.n, q->sb.n, so.n);
    {
        preg ab = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", ab.n, base.n, q->aso.n);
        for (int bb = 0; bb < nb; bb++)
            for (int a = 0; a < 3; a++)
                I("@%s cp.async.cg.shared.global [%s+%d], [%s+%lld], 16", q->aok[a].n, ab.n,
                  (32 * a + bb * (T / 8) * SL_BM) * 4, q->wa.n, (32LL * a + (long long)bb * (T / 8) * d->c_out) * 4);
    }
    if (d->x_layout == WS_NLC) {
        ws_ptx_comment(b, "B: x[n][u0 + D*k][j0 + 4(lt%%4) ..], %d chunks of 16 bytes a thread, zeros out of range",
                       q->c.bch);
        preg xo = ws_ptx_reg(b, PTX_B32), bb = ws_ptx_reg(b, PTX_B32);
        I("mad.lo.u32 %s, %s, %d, %s", xo.n, q->ldu.n, d->c_in, q->lj0.n);
        I("add.u32 %s, %s, %s", bb.n, base.n, q->bso.n);
        for (int e = 0; e < q->c.bch; e++) {
            preg u = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), xa = ws_ptx_reg(b, PTX_B64);
            preg sz = ws_ptx_reg(b, PTX_B32);
            I("add.s32 %s, %s, %s", u.n, q->bu0[e].n, q->ldu.n);
            I("setp.lt.u32 %s, %s, %s", ok.n, u.n, q->tin.n);
            I("mad.wide.u32 %s, %s, 4, %s", xa.n, xo.n, q->xb[e].n);
            I("selp.b64 %s, %s, %s, %s", xa.n, xa.n, q->px.n, ok.n);
            I("selp.u32 %s, 16, 0, %s", sz.n, ok.n);
            I("cp.async.cg.shared.global [%s+%d], [%s], 16, %s", bb.n, e * (T / 4) * SL_BKP * 4, xa.n, sz.n);
        }
    } else {
        ws_ptx_comment(b, "B: threads lt < %d, position p0 + lt: x[n][j0 + jj][u], jj < 16, 4 bytes each", q->c.bn);
        plabel skip = ws_ptx_label_new(b, "sl_nob");
        preg u = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), xa = ws_ptx_reg(b, PTX_B64);
        preg sz = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), w = ws_ptx_reg(b, PTX_B32);
        preg st = ws_ptx_reg(b, PTX_B64), u64 = ws_ptx_reg(b, PTX_B64);
        I("@!%s bra %s", q->bthr.n, skip.n);
        I("add.s32 %s, %s, %s", u.n, q->bu0[0].n, q->ldu.n);
        I("setp.lt.u32 %s, %s, %s", ok.n, u.n, q->tin.n);
        I("cvt.u64.u32 %s, %s", u64.n, u.n);
        I("mad.wide.u32 %s, %s, %s, %s", xa.n, q->lj0.n, q->tin.n, u64.n);
        I("mad.lo.u64 %s, %s, 4, %s", xa.n, xa.n, q->bxn.n);
        I("selp.b64 %s, %s, %s, %s", xa.n, xa.n, q->px.n, ok.n);
        I("selp.u32 %s, 4, 0, %s", sz.n, ok.n);
        I("selp.u32 %s, %s, 0, %s", w.n, q->tin.n, ok.n);
        I("mul.wide.u32 %s, %s, 4", st.n, w.n);
        I("add.u32 %s, %s, %s", sa.n, base.n, q->bso.n);
        for (int jj = 0; jj < BK; jj++) {
            if (jj)
                I("add.u64 %s, %s, %s", xa.n, xa.n, st.n);
            I("cp.async.ca.shared.global [%s+%d], [%s], 4, %s", sa.n, 4 * jj, xa.n, sz.n);
        }
        ws_ptx_label(b, skip);
    }
    ws_ptx_comment(b, "the cursor to the next stage: 16 rows of W on, j0 + 16 (tap k + 1 after C_in)");
    preg wrap = ws_ptx_reg(b, PTX_PRED);
    I("add.u64 %s, %s, %lld", q->wa.n, q->wa.n, (long long)BK * d->c_out * 4);
    I("add.u32 %s, %s, %d", q->lj0.n, q->lj0.n, BK);
    I("setp.eq.u32 %s, %s, %d", wrap.n, q->lj0.n, d->c_in);
    I("selp.u32 %s, 0, %s, %s", q->lj0.n, q->lj0.n, wrap.n);
    I("@%s add.u32 %s, %s, %d", wrap.n, q->ldu.n, q->ldu.n, d->dilation);
}

/* v[0..3] = the 4 sums at shared address a of slices 0, 1, .. ns - 1 (red bytes apart), added
 * in that order */
static void emit_slice_sum4(ptx_buf *b, const preg v[4], preg a, int ns, int red)
{
    for (int z = 0; z < ns; z++) {
        preg t[4];
        for (int c = 0; c < 4; c++)
            t[c] = z ? ws_ptx_reg(b, PTX_F32) : v[c];
        I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", t[0].n, t[1].n, t[2].n, t[3].n, a.n, z * red);
        if (z)
            for (int c = 0; c < 4; c++)
                I("add.f32 %s, %s, %s", v[c].n, v[c].n, t[c].n);
    }
}

/* the _slice entry: a block of WS_GEMM_SLICE_THREADS threads computes a tile of SL_BM channels
 * x C.bn positions as C.ns slices of the sum, each over its own run of the stages of r
 * through its own ring, then adds the slices' sums in order and runs the epilogue */
static void emit_slice(ptx_buf *b, const ws_conv_desc *d, int variant, int pdl)
{
    const slcfg C = slice_cfg(variant);
    const long long R = (long long)d->c_in * d->k, KT = R / BK;
    const ws_params *pt = ws_params_of(WS_PARAMS_FWD);
    sl q = { .d = d, .c = C };
    ws_ptx_comment(b, "y = act(b[o] + sum_r W[o, r] X[r, p]) + add, r = k*C_in + j in %lld stages of %d; tile %dx%d, "
                      "%d slices of %d threads (%dx%d a thread) over stages [s*KT/%d, (s+1)*KT/%d), %d-stage "
                      "rings of cp.async; the slices' sums added in order s = 0, 1, ..",
                   KT, BK, SL_BM, C.bn, C.ns, C.thr, SL_TM, SL_TN, C.ns, C.ns, SL_NS);
    if (pdl) {
        ws_ptx_comment(b, "a kernel launched after this one in the stream may begin (its own wait holds its reads)");
        I("griddepcontrol.launch_dependents");
    }
    ws_ptx_section(b, "parameters, the thread's slice and place");
    q.px = ws_ptx_reg(b, PTX_B64);
    q.pw = ws_ptx_reg(b, PTX_B64);
    q.tin = ws_ptx_reg(b, PTX_B32);
    preg n32 = ws_ptx_reg(b, PTX_B32), tout = ws_ptx_reg(b, PTX_B32), np = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ld_param(b, q.px, pt, WS_FWD_X);
    ws_ptx_ld_param(b, q.pw, pt, WS_FWD_W);
    ws_ptx_ld_param(b, n32, pt, WS_FWD_N);
    ws_ptx_ld_param(b, q.tin, pt, WS_FWD_T_IN);
    ws_ptx_ld_param(b, tout, pt, WS_FWD_T_OUT);
    I("cvta.to.global.u64 %s, %s", q.px.n, q.px.n);
    I("cvta.to.global.u64 %s, %s", q.pw.n, q.pw.n);
    I("mul.lo.u32 %s, %s, %s", np.n, n32.n, tout.n);
    preg tid = ws_ptx_reg(b, PTX_B32), s = ws_ptx_reg(b, PTX_B32), lt = ws_ptx_reg(b, PTX_B32);
    preg ty = ws_ptx_reg(b, PTX_B32), tx = ws_ptx_reg(b, PTX_B32), o0 = ws_ptx_reg(b, PTX_B32);
    preg p0 = ws_ptx_reg(b, PTX_B32), kt = ws_ptx_reg(b, PTX_B32), ke = ws_ptx_reg(b, PTX_B32);
    preg sm = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("shr.u32 %s, %s, %d", s.n, tid.n, C.thr == 64 ? 6 : 7);
    I("and.b32 %s, %s, %d", lt.n, tid.n, C.thr - 1);
    I("shr.u32 %s, %s, %d", ty.n, lt.n, C.ntx == 8 ? 3 : 4);
    I("and.b32 %s, %s, %d", tx.n, lt.n, C.ntx - 1);
    I("mov.u32 %s, %%ctaid.y", o0.n);
    I("mul.lo.u32 %s, %s, %d", o0.n, o0.n, SL_BM);
    I("mov.u32 %s, %%ctaid.x", p0.n);
    I("mul.lo.u32 %s, %s, %d", p0.n, p0.n, C.bn);
    ws_ptx_comment(b, "slice s = tid/%d sums stages [s*KT/%d, (s+1)*KT/%d), KT = %lld", C.thr, C.ns, C.ns, KT);
    I("mul.lo.u32 %s, %s, %lld", kt.n, s.n, KT);
    I("div.u32 %s, %s, %d", kt.n, kt.n, C.ns);
    I("add.u32 %s, %s, 1", ke.n, s.n);
    I("mul.lo.u32 %s, %s, %lld", ke.n, ke.n, KT);
    I("div.u32 %s, %s, %d", ke.n, ke.n, C.ns);
    I("mov.u32 %s, gsl_smem", sm.n);
    q.sb = ws_ptx_reg(b, PTX_B32);
    I("mad.lo.u32 %s, %s, %d, %s", q.sb.n, s.n, C.ring, sm.n);

    ws_ptx_section(b, "the thread's copies, and the cursor at the slice's first stage kt");
    {
        preg r0 = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32), acol = ws_ptx_reg(b, PTX_B32);
        preg arow = ws_ptx_reg(b, PTX_B32), oc = ws_ptx_reg(b, PTX_B32), w = ws_ptx_reg(b, PTX_B32);
        q.ldu = ws_ptx_reg(b, PTX_B32);
        q.lj0 = ws_ptx_reg(b, PTX_B32);
        q.wa = ws_ptx_reg(b, PTX_B64);
        q.aso = ws_ptx_reg(b, PTX_B32);
        I("shl.b32 %s, %s, 4", r0.n, kt.n);
        I("div.u32 %s, %s, %d", k.n, r0.n, d->c_in);
        I("mul.lo.u32 %s, %s, %d", q.lj0.n, k.n, d->c_in);
        I("sub.u32 %s, %s, %s", q.lj0.n, r0.n, q.lj0.n);
        I("mul.lo.u32 %s, %s, %d", q.ldu.n, k.n, d->dilation);
        ws_ptx_comment(b, "A: row lt/8 of the stage, columns lt%%8 + 8a");
        I("and.b32 %s, %s, 7", acol.n, lt.n);
        I("shr.u32 %s, %s, 3", arow.n, lt.n);
        I("mad.lo.u32 %s, %s, %d, %s", q.aso.n, arow.n, SL_BM / 4, acol.n);
        I("shl.b32 %s, %s, 4", q.aso.n, q.aso.n);
        I("mad.lo.u32 %s, %s, 4, %s", oc.n, acol.n, o0.n);
        for (int a = 0; a < 3; a++) {
            preg e = ws_ptx_reg(b, PTX_B32);
            q.aok[a] = ws_ptx_reg(b, PTX_PRED);
            I("add.u32 %s, %s, %d", e.n, oc.n, 32 * a);
            I("setp.lt.u32 %s, %s, %d", q.aok[a].n, e.n, d->c_out);
        }
        preg w64 = ws_ptx_reg(b, PTX_B64);
        I("add.u32 %s, %s, %s", w.n, r0.n, arow.n);
        I("mul.wide.u32 %s, %s, %d", q.wa.n, w.n, d->c_out);
        I("cvt.u64.u32 %s, %s", w64.n, oc.n);
        I("add.u64 %s, %s, %s", q.wa.n, q.wa.n, w64.n);
        I("mad.lo.u64 %s, %s, 4, %s", q.wa.n, q.wa.n, q.pw.n);
    }
    q.bso = ws_ptx_reg(b, PTX_B32);
    if (d->x_layout == WS_NLC) {
        ws_ptx_comment(b, "B chunks c = lt + %de: position p0 + c/4 (= lt/4 + %de), channels 4(c%%4) .. of the stage's 16",
                       C.thr, C.thr / 4);
        preg jc = ws_ptx_reg(b, PTX_B32), pl0 = ws_ptx_reg(b, PTX_B32);
        I("and.b32 %s, %s, 3", jc.n, lt.n);
        I("shl.b32 %s, %s, 2", jc.n, jc.n);
        I("shr.u32 %s, %s, 2", pl0.n, lt.n);
        I("mad.lo.u32 %s, %s, %d, %s", q.bso.n, pl0.n, SL_BKP, jc.n);
        I("mad.lo.u32 %s, %s, 4, %d", q.bso.n, q.bso.n, SL_A_BYTES);
        for (int e = 0; e < C.bch; e++) {
            preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), row = ws_ptx_reg(b, PTX_B32);
            preg r64 = ws_ptx_reg(b, PTX_B64);
            q.bu0[e] = ws_ptx_reg(b, PTX_B32);
            q.xb[e] = ws_ptx_reg(b, PTX_B64);
            I("add.u32 %s, %s, %s", p.n, pl0.n, p0.n);
            I("add.u32 %s, %s, %d", p.n, p.n, C.thr / 4 * e);
            emit_slice_u0(b, d, p, np, tout, n, q.bu0[e]);
            ws_ptx_comment(b, "(n*T_in + u0)*C_in + 4(lt%%4), signed: u0 may be negative (past N*T_out: never read)");
            I("mad.lo.u32 %s, %s, %s, %s", row.n, n.n, q.tin.n, q.bu0[e].n);
            I("mul.wide.s32 %s, %s, %d", r64.n, row.n, d->c_in);
            I("cvt.u64.u32 %s, %s", q.xb[e].n, jc.n);
            I("add.s64 %s, %s, %s", r64.n, r64.n, q.xb[e].n);
            I("mad.lo.u64 %s, %s, 4, %s", q.xb[e].n, r64.n, q.px.n);
        }
    } else {
        ws_ptx_comment(b, "B: thread lt < %d copies position p0 + lt, its 16 rows of the stage", C.bn);
        preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), item = ws_ptx_reg(b, PTX_B64);
        q.bthr = ws_ptx_reg(b, PTX_PRED);
        q.bu0[0] = ws_ptx_reg(b, PTX_B32);
        q.bxn = ws_ptx_reg(b, PTX_B64);
        I("setp.lt.u32 %s, %s, %d", q.bthr.n, lt.n, C.bn);
        I("add.u32 %s, %s, %s", p.n, lt.n, p0.n);
        emit_slice_u0(b, d, p, np, tout, n, q.bu0[0]);
        I("mul.wide.u32 %s, %s, %s", item.n, n.n, q.tin.n);
        I("mul.lo.u64 %s, %s, %lld", item.n, item.n, (long long)d->c_in * 4);
        I("add.u64 %s, %s, %s", q.bxn.n, item.n, q.px.n);
        I("mad.lo.u32 %s, %s, %d, %d", q.bso.n, lt.n, SL_BKP * 4, SL_A_BYTES);
    }

    preg acc[SL_TM][SL_TN], af[SL_TM], bf[SL_TN][4];
    for (int i = 0; i < SL_TM; i++)
        for (int j = 0; j < SL_TN; j++) {
            acc[i][j] = ws_ptx_reg(b, PTX_F32);
            I("mov.f32 %s, 0f00000000", acc[i][j].n);
        }
    for (int i = 0; i < SL_TM; i++)
        af[i] = ws_ptx_reg(b, PTX_F32);
    for (int j = 0; j < SL_TN; j++)
        for (int c = 0; c < 4; c++)
            bf[j][c] = ws_ptx_reg(b, PTX_F32);

    if (pdl) {
        ws_ptx_comment(b, "launched early (programmatic dependent launch): no global access before the stream's "
                          "previous kernel is done");
        I("griddepcontrol.wait");
    }
    ws_ptx_section(b, "prologue: the slice's first stages into its ring");
    preg rd = ws_ptx_reg(b, PTX_B32), wr = ws_ptx_reg(b, PTX_B32), kn = ws_ptx_reg(b, PTX_B32);
    preg more = ws_ptx_reg(b, PTX_PRED);
    for (int i = 0; i < SL_NS - 1; i++) {
        plabel no = ws_ptx_label_new(b, "sl_pro");
        preg so = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", kn.n, kt.n, i);
        I("setp.lt.u32 %s, %s, %s", more.n, kn.n, ke.n);
        I("@!%s bra %s", more.n, no.n);
        I("mov.u32 %s, %d", so.n, i * C.stage);
        emit_slice_load(b, &q, so);
        ws_ptx_label(b, no);
        I("cp.async.commit_group");
    }
    I("mov.u32 %s, 0", rd.n);
    I("mov.u32 %s, %d", wr.n, (SL_NS - 1) * C.stage);

    ws_ptx_section(b, "main loop: wait for stage kt, start stage kt + NS - 1, multiply stage kt");
    plabel top = ws_ptx_label_new(b, "sl_stage"), done = ws_ptx_label_new(b, "sl_done");
    plabel noload = ws_ptx_label_new(b, "sl_noload");
    preg bar = ws_ptx_reg(b, PTX_B32);
    I("add.u32 %s, %s, 1", bar.n, s.n);
    ws_ptx_label(b, top);
    I("setp.ge.u32 %s, %s, %s", more.n, kt.n, ke.n);
    I("@%s bra %s", more.n, done.n);
    I("cp.async.wait_group %d", SL_NS - 2);
    I("bar.sync %s, %d", bar.n, C.thr);
    {
        preg sa = ws_ptx_reg(b, PTX_B32), sbb = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "As[r][4ty + 32g ..], Bs[tx + %dj][r ..]: ty = lt/%d, tx = lt%%%%%d", C.ntx, C.ntx, C.ntx);
        I("add.u32 %s, %s, %s", sa.n, q.sb.n, rd.n);
        I("mad.lo.u32 %s, %s, %d, %s", sbb.n, tx.n, SL_BKP * 4, sa.n);
        I("mad.lo.u32 %s, %s, 16, %s", sa.n, ty.n, sa.n);
        for (int kq = 0; kq < BK / 4; kq++) {
            for (int j = 0; j < SL_TN; j++)
                I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", bf[j][0].n, bf[j][1].n, bf[j][2].n, bf[j][3].n,
                  sbb.n, SL_A_BYTES + (C.ntx * j * SL_BKP + 4 * kq) * 4);
            for (int c = 0; c < 4; c++) {
                for (int g = 0; g < SL_TM / 4; g++)
                    I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", af[4 * g].n, af[4 * g + 1].n, af[4 * g + 2].n,
                      af[4 * g + 3].n, sa.n, ((4 * kq + c) * SL_BM + 32 * g) * 4);
                if (kq == 0 && c == 0) {
                    ws_ptx_comment(b, "the copies of stage kt + NS - 1 while the first reads are under way");
                    I("add.u32 %s, %s, %d", kn.n, kt.n, SL_NS - 1);
                    I("setp.lt.u32 %s, %s, %s", more.n, kn.n, ke.n);
                    I("@!%s bra %s", more.n, noload.n);
                    emit_slice_load(b, &q, wr);
                    ws_ptx_label(b, noload);
                    I("cp.async.commit_group");
                }
                for (int i = 0; i < SL_TM; i++)
                    for (int j = 0; j < SL_TN; j++)
                        I("fma.rn.f32 %s, %s, %s, %s", acc[i][j].n, af[i].n, bf[j][c].n, acc[i][j].n);
            }
        }
    }
    const preg slot[2] = { rd, wr }; /* each to the ring's next stage, 0 after the last */
    for (int i = 0; i < 2; i++) {
        I("add.u32 %s, %s, %d", slot[i].n, slot[i].n, C.stage);
        I("setp.eq.u32 %s, %s, %d", more.n, slot[i].n, C.ring);
        I("selp.u32 %s, 0, %s, %s", slot[i].n, slot[i].n, more.n);
    }
    I("add.u32 %s, %s, 1", kt.n, kt.n);
    I("bra.uni %s", top.n);
    ws_ptx_label(b, done);
    I("cp.async.wait_group 0");

    const int nlc = d->y_layout == WS_NLC;
    static const int pi[] = { WS_FWD_B, WS_FWD_ADD, WS_FWD_Y };
    preg pp[3];
    ws_ptx_param_ptrs(b, pp, pt, pi, 3);
    const preg pb = pp[0], pa = pp[1], py = pp[2];
    preg abs = ws_ptx_reg(b, PTX_B64), hasb = ws_ptx_reg(b, PTX_PRED), hasa = ws_ptx_reg(b, PTX_PRED);
    preg pbr = ws_ptx_reg(b, PTX_B64), par = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, abs, pt, WS_FWD_ADD_BS);
    ws_ptx_ld_param(b, pbr, pt, WS_FWD_B);
    ws_ptx_ld_param(b, par, pt, WS_FWD_ADD);
    I("setp.ne.u64 %s, %s, 0", hasb.n, pbr.n);
    I("setp.ne.u64 %s, %s, 0", hasa.n, par.n);
    const int ys = d->y_type == WS_F32 ? 4 : 2, erows = C.ns * C.thr / (SL_BM / 4);
    preg ecol = {0}, erow = {0}, eo = {0}, ook = {0}, vecok = {0}, ebv[4];
    if (nlc) {
        ecol = ws_ptx_reg(b, PTX_B32);
        erow = ws_ptx_reg(b, PTX_B32);
        eo = ws_ptx_reg(b, PTX_B32);
        ook = ws_ptx_reg(b, PTX_PRED);
        vecok = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_section(b, "NLC y: the thread's 4 channels o0 + 4(tid%24) .. for every position it stores, and their bias, "
                          "read once");
        preg lb = ws_ptx_reg(b, PTX_PRED), ba = ws_ptx_reg(b, PTX_B64), al = ws_ptx_reg(b, PTX_B64);
        preg t1 = ws_ptx_reg(b, PTX_PRED);
        I("div.u32 %s, %s, %d", erow.n, tid.n, SL_BM / 4);
        I("mad.lo.s32 %s, %s, %d, %s", ecol.n, erow.n, -(SL_BM / 4), tid.n);
        I("mad.lo.u32 %s, %s, 4, %s", eo.n, ecol.n, o0.n);
        I("setp.lt.u32 %s, %s, %d", ook.n, eo.n, d->c_out);
        I("and.pred %s, %s, %s", lb.n, ook.n, hasb.n);
        I("mul.wide.u32 %s, %s, 4", ba.n, eo.n);
        I("add.u64 %s, %s, %s", ba.n, ba.n, pb.n);
        for (int c = 0; c < 4; c++) {
            ebv[c] = ws_ptx_reg(b, PTX_F32);
            I("mov.f32 %s, 0f00000000", ebv[c].n);
            I("@%s ld.global.nc.f32 %s, [%s+%d]", lb.n, ebv[c].n, ba.n, 4 * c);
        }
        ws_ptx_comment(b, "every group is one aligned vector of y and of add when y, add and add_bs allow it");
        I("and.b64 %s, %s, %d", al.n, py.n, 4 * ys - 1);
        I("setp.eq.u64 %s, %s, 0", vecok.n, al.n);
        I("and.b64 %s, %s, %d", al.n, pa.n, 4 * ys - 1);
        I("setp.eq.u64 %s, %s, 0", t1.n, al.n);
        I("and.b64 %s, %s, 3", al.n, abs.n);
        I("setp.eq.and.u64 %s, %s, 0, %s", t1.n, al.n, t1.n);
        I("or.pred %s, %s, !%s", t1.n, t1.n, hasa.n);
        I("and.pred %s, %s, %s", vecok.n, vecok.n, t1.n);
    }
    I("bar.sync 0");

    char title[128];
    snprintf(title, sizeof title, "the slices' sums into shared memory: slice s, position pl, channel ol at (s*%d + pl)*%d + ol",
             C.bn, SL_RROW);
    ws_ptx_section(b, title);
    {
        preg ra = ws_ptx_reg(b, PTX_B32);
        I("mad.lo.u32 %s, %s, %d, %s", ra.n, s.n, C.bn, tx.n);
        I("mad.lo.u32 %s, %s, %d, 0", ra.n, ra.n, SL_RROW);
        I("mad.lo.u32 %s, %s, 4, %s", ra.n, ty.n, ra.n);
        I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, sm.n);
        for (int j = 0; j < SL_TN; j++)
            for (int g = 0; g < SL_TM / 4; g++)
                I("st.shared.v4.f32 [%s+%d], {%s, %s, %s, %s}", ra.n, (C.ntx * j * SL_RROW + 32 * g) * 4,
                  acc[4 * g][j].n, acc[4 * g + 1][j].n, acc[4 * g + 2][j].n, acc[4 * g + 3][j].n);
    }
    I("bar.sync 0");

    if (nlc) {
        snprintf(title, sizeof title, "epilogue, NLC y in vectors: the thread's channels at positions p0 + tid/%d + %di",
                 SL_BM / 4, erows);
        ws_ptx_section(b, title);
        plabel slow = ws_ptx_label_new(b, "sl_gen"), ltop = ws_ptx_label_new(b, "sl_row");
        plabel lend = ws_ptx_label_new(b, "sl_rend"), tok = ws_ptx_label_new(b, "sl_tok");
        preg p = ws_ptx_reg(b, PTX_B32), pl = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32);
        preg t = ws_ptx_reg(b, PTX_B32), ra = ws_ptx_reg(b, PTX_B32), ya = ws_ptx_reg(b, PTX_B64);
        preg aa = ws_ptx_reg(b, PTX_B64), dn = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B32);
        preg w64 = ws_ptx_reg(b, PTX_B64), stop = ws_ptx_reg(b, PTX_PRED), v[4];
        preg lpa = ws_ptx_reg(b, PTX_PRED);
        I("@!%s bra %s", vecok.n, slow.n);
        I("and.pred %s, %s, %s", lpa.n, ook.n, hasa.n);
        I("setp.ge.u32 %s, %s, %d", stop.n, tid.n, erows * (SL_BM / 4));
        I("@%s bra %s", stop.n, lend.n);
        I("mov.u32 %s, %s", pl.n, erow.n);
        I("add.u32 %s, %s, %s", p.n, p0.n, pl.n);
        I("div.u32 %s, %s, %s", n.n, p.n, tout.n);
        I("mul.lo.u32 %s, %s, %s", t.n, n.n, tout.n);
        I("sub.u32 %s, %s, %s", t.n, p.n, t.n);
        ws_ptx_comment(b, "y at (p*C_out + o)*%d, add at (n*add_bs + t*C_out + o)*%d; a batch on: add_bs - T_out*C_out", ys, ys);
        I("mul.wide.u32 %s, %s, %d", ya.n, p.n, d->c_out);
        I("cvt.u64.u32 %s, %s", w64.n, eo.n);
        I("add.u64 %s, %s, %s", ya.n, ya.n, w64.n);
        I("mad.lo.u64 %s, %s, %d, %s", ya.n, ya.n, ys, py.n);
        I("cvt.u64.u32 %s, %s", aa.n, n.n);
        I("mad.lo.u32 %s, %s, %d, %s", w.n, t.n, d->c_out, eo.n);
        I("cvt.u64.u32 %s, %s", w64.n, w.n);
        I("mad.lo.u64 %s, %s, %s, %s", aa.n, aa.n, abs.n, w64.n);
        I("mad.lo.u64 %s, %s, %d, %s", aa.n, aa.n, ys, pa.n);
        I("mul.wide.u32 %s, %s, %d", w64.n, tout.n, d->c_out);
        I("sub.s64 %s, %s, %s", dn.n, abs.n, w64.n);
        I("mul.lo.s64 %s, %s, %d", dn.n, dn.n, ys);
        I("mad.lo.u32 %s, %s, %d, %s", ra.n, pl.n, SL_RROW, eo.n);
        I("sub.u32 %s, %s, %s", ra.n, ra.n, o0.n);
        I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, sm.n);
        ws_ptx_label(b, ltop);
        I("setp.ge.u32 %s, %s, %d", stop.n, pl.n, C.bn);
        I("setp.ge.or.u32 %s, %s, %s, %s", stop.n, p.n, np.n, stop.n);
        I("@%s bra %s", stop.n, lend.n);
        ws_ptx_comment(b, "the add's vector read first, its latency under the slices' sum and the activation");
        const ws_ptx_vec av = ws_ptx_vec_new(b, d->y_type, 4);
        preg adv[4];
        ws_hgemm_vec_add(b, &av, lpa, aa, adv);
        for (int c = 0; c < 4; c++)
            v[c] = ws_ptx_reg(b, PTX_F32);
        emit_slice_sum4(b, v, ra, C.ns, C.red);
        const ws_ptx_epi ev = {
            .act = d->act, .y_type = d->y_type, .n = 4, .v = v, .bias = ebv, .bias_stride = 1,
            .add_if = lpa, .add_v = adv, .y = {.at = ya}, .in = ook};
        ws_ptx_epi_emit(b, &ev);
        ws_ptx_comment(b, "%d positions on", erows);
        I("add.u32 %s, %s, %d", pl.n, pl.n, erows);
        I("add.u32 %s, %s, %d", p.n, p.n, erows);
        I("add.u32 %s, %s, %d", ra.n, ra.n, erows * SL_RROW * 4);
        I("add.u64 %s, %s, %lld", ya.n, ya.n, (long long)erows * d->c_out * ys);
        I("add.u64 %s, %s, %lld", aa.n, aa.n, (long long)erows * d->c_out * ys);
        I("add.u32 %s, %s, %d", t.n, t.n, erows);
        ws_ptx_label(b, tok);
        I("setp.lt.u32 %s, %s, %s", stop.n, t.n, tout.n);
        I("@%s bra %s", stop.n, ltop.n);
        I("sub.u32 %s, %s, %s", t.n, t.n, tout.n);
        I("add.s64 %s, %s, %s", aa.n, aa.n, dn.n);
        I("bra.uni %s", tok.n);
        ws_ptx_label(b, lend);
        I("ret");
        ws_ptx_label(b, slow);
    }
    if (nlc)
        snprintf(title, sizeof title, "epilogue: groups g = tid + %di of 4 channels o0 + 4(g%%%d) .. of position p0 + g/%d",
                 C.ns * C.thr, SL_BM / 4, SL_BM / 4);
    else
        snprintf(title, sizeof title, "epilogue: groups g = tid + %di of 4 positions p0 + 4(g%%%d) .. of channel o0 + g/%d",
                 C.ns * C.thr, C.bn / 4, C.bn / 4);
    ws_ptx_section(b, title);
    preg g = ws_ptx_reg(b, PTX_B32);
    plabel gtop = ws_ptx_label_new(b, "sl_group"), gnext = ws_ptx_label_new(b, "sl_next");
    plabel gend = ws_ptx_label_new(b, "sl_end");
    I("mov.u32 %s, %s", g.n, tid.n);
    ws_ptx_label(b, gtop);
    I("setp.ge.u32 %s, %s, %d", more.n, g.n, C.groups);
    I("@%s bra %s", more.n, gend.n);
    {
        preg h = ws_ptx_reg(b, PTX_B32), r = ws_ptx_reg(b, PTX_B32), o = ws_ptx_reg(b, PTX_B32);
        preg p = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B32), v[4];
        for (int c = 0; c < 4; c++)
            v[c] = ws_ptx_reg(b, PTX_F32);
        if (nlc) {
            I("div.u32 %s, %s, %d", h.n, g.n, SL_BM / 4);            /* pl */
            I("mad.lo.s32 %s, %s, %d, %s", r.n, h.n, -(SL_BM / 4), g.n); /* g % 24 */
            I("shl.b32 %s, %s, 2", r.n, r.n);                         /* 4oc */
            I("add.u32 %s, %s, %s", o.n, o0.n, r.n);
            I("add.u32 %s, %s, %s", p.n, p0.n, h.n);
            I("mad.lo.u32 %s, %s, %d, %s", a.n, h.n, SL_RROW, r.n);
            I("mad.lo.u32 %s, %s, 4, %s", a.n, a.n, sm.n);
            emit_slice_sum4(b, v, a, C.ns, C.red);
        } else {
            I("div.u32 %s, %s, %d", h.n, g.n, C.bn / 4);            /* ol */
            I("mad.lo.s32 %s, %s, %d, %s", r.n, h.n, -(C.bn / 4), g.n); /* g % (BN/4) */
            I("shl.b32 %s, %s, 2", r.n, r.n);                         /* 4pq */
            I("add.u32 %s, %s, %s", o.n, o0.n, h.n);
            I("add.u32 %s, %s, %s", p.n, p0.n, r.n);
            I("mad.lo.u32 %s, %s, %d, %s", a.n, r.n, SL_RROW, h.n);
            I("mad.lo.u32 %s, %s, 4, %s", a.n, a.n, sm.n);
            for (int z = 0; z < C.ns; z++)
                for (int c = 0; c < 4; c++) {
                    preg t = z ? ws_ptx_reg(b, PTX_F32) : v[c];
                    I("ld.shared.f32 %s, [%s+%d]", t.n, a.n, z * C.red + c * SL_RROW * 4);
                    if (z)
                        I("add.f32 %s, %s, %s", v[c].n, v[c].n, t.n);
                }
        }
        emit_group_store(b, d, v, o, p, np, tout, py, pb, pa, abs, hasb, hasa, &gnext);
    }
    ws_ptx_label(b, gnext);
    I("add.u32 %s, %s, %d", g.n, g.n, C.ns * C.thr);
    I("bra.uni %s", gtop.n);
    ws_ptx_label(b, gend);
    I("ret");
}

int ws_gemm_split_groups(const ws_conv_desc *d)
{
    return ws_gemm_bm(d) / 8;
}

void ws_gemm_entry(const ws_conv_desc *d, int which, char name[WS_GEMM_NAME_MAX])
{
    char base[WS_GEMM_NAME_MAX];
    ws_gemm_name(d, base);
    snprintf(name, WS_GEMM_NAME_MAX, "%.*s%s", WS_GEMM_NAME_MAX - 8, base,
             which == 1 ? "_split" : which == 2 ? "_fin" : which == 3 ? "_slice" : which == 4 ? "_slice2" : "");
}

char *ws_gemm_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_GEMM_NAME_MAX];
    ws_gemm_name(d, name);
    if (!ws_gemm_fits(d)) {
        ws_errf(err, "ws_gemm_emit(%s): not a dense forward descriptor the gemm kernel takes", name);
        return NULL;
    }
    ptx_buf mod, kb;
    ws_ptx_init(&mod);
    ws_ptx_init(&kb);
    const int mma = ws_gemm_mma(d), wg = ws_gemm_wgmma(d, cc_major, cc_minor);
    if (wg)
        ws_ptx_module_begin_sm90a(&mod, "whisper-stem conv engine: dense forward as an implicit GEMM (wgmma)");
    else
        ws_ptx_module_begin(&mod, cc_major, cc_minor,
                         mma ? "whisper-stem conv engine: dense forward as an implicit GEMM (mma.sync)"
                             : "whisper-stem conv engine: dense forward as an implicit GEMM (FFMA)");
    gk s = { .b = &kb, .d = d, .R = (long long)d->c_in * d->k,
             .xs = d->x_type == WS_F32 ? 4 : 2, .ys = d->y_type == WS_F32 ? 4 : 2 };
    s.BM = ws_gemm_bm(d);
    if (mma) {
        s.mt = mma_type(d);
        s.es = ws_gemm_mma_wbytes(d);
        s.mbk = mma_bk(d);
        s.nbm = s.mbk / 2;
        s.NA = s.BM * s.mbk / NT;
        s.tpr = s.mbk / s.NA;
        s.NBV = s.nbm;
        s.kmajor = ws_gemm_mma_kmajor(d);
        s.bvec = ws_gemm_x_align(d) == 16;
        s.vecw = s.R % (16 / s.es) == 0;
        s.raw = d->pre == WS_ACT_NONE && ((d->x_type == WS_BF16 && d->math == WS_MATH_BF16) ||
                                          (d->x_type == WS_F16 && d->math == WS_MATH_F16));
        s.wg = wg;
        s.A_BYTES = s.BM * (wg ? 64 : MRS);
        s.STAGE = s.A_BYTES + BN * (wg ? 64 : MRS);
        ws_ptx_comment(&kb, "y[o, n*T_out + t] = act(b[o] + sum_r W[o, r] X[r, n*T_out + t]) + add; r = j*K + k");
        ws_ptx_comment(&kb, "C_in %d C_out %d K %d S %d D %d P_L %d; x %s %s, y %s %s; pre %s, act %s; "
                         "tile %dx%d, BK %d, %s %s %s, %s, r = %s",
                    d->c_in, d->c_out, d->k, d->stride, d->dilation, d->pad_l,
                    d->x_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->x_type),
                    d->y_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre),
                    ws_ptx_act_name(d->act), s.BM, BN, s.mbk, s.mt, wg ? "wgmma" : "mma.sync",
                    wg ? (s.es == 4 ? "m64n128k8" : "m64n128k16") : s.es == 4 ? "m16n8k8" : "m16n8k16",
                    wg ? "two warpgroups of 64 rows" : s.BM == 128 ? "warps 2x4 of 64x32" : "warps 2x4 of 32x32",
                    s.kmajor ? "k*C_in + j" : "j*K + k");
        if (wg)
            emit_wgmma_body(&s);
        else
            emit_mma_body(&s);
    } else {
        s.TM = s.BM / TY;
        s.NA = s.BM * BK / NT;
        s.NBV = NB;
        s.nbm = NB;
        s.kmajor = ws_gemm_ffma_kmajor(d);
        s.bvec = ws_gemm_x_align(d) == 16;
        s.swap = d->y_layout == WS_NLC;
        s.cl = ws_gemm_ffma_cl(d);
        s.wpack = ws_gemm_ffma_wpack(d);
        s.NAC = s.BM * BK / 4 / NT;
        s.AS = s.BM + 4;
        s.A_BYTES = BK * s.AS * 4;
        s.STAGE = s.A_BYTES + BK * BN * 4;
        ws_ptx_comment(&kb, "y[o, n*T_out + t] = act(b[o] + sum_r W[o, r] X[r, n*T_out + t]) + add; r = j*K + k");
        ws_ptx_comment(&kb, "C_in %d C_out %d K %d S %d D %d P_L %d; x %s %s, y %s %s; pre %s, act %s; "
                         "tile %dx%d, BK %d, %dx8 per thread%s",
                    d->c_in, d->c_out, d->k, d->stride, d->dilation, d->pad_l,
                    d->x_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->x_type),
                    d->y_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre),
                    ws_ptx_act_name(d->act), s.BM, BN, BK, s.TM, s.kmajor ? ", r = k*C_in + j" : "");
        gk s0 = s; /* the configuration, before emit_body allocates its registers */
        emit_body(&s);
        ws_ptx_kernel_end_params(&kb, &mod, name, ws_params_of(WS_PARAMS_FWD), NT, 0, 0);
        char en[WS_GEMM_NAME_MAX];
        ptx_buf k2, k3;
        ws_ptx_init(&k2);
        ws_ptx_init(&k3);
        gk s2 = s0;
        s2.b = &k2;
        s2.split = 1;
        ws_ptx_comment(&k2, "the sum in parts (grid z): raw float32 sums of part z into p_y, in the tile's order");
        emit_body(&s2);
        ws_gemm_entry(d, 1, en);
        /* the 64-row tile: two blocks a multiprocessor, as gemm_parts sizes the parts
         * (without it ptxas aims that tile's split at three on sm_80, and spills) */
        ws_ptx_kernel_end_params(&k2, &mod, en, ws_params_of(WS_PARAMS_FWD_PARTS), NT,
                                 s0.BM == WS_GEMM_BM_SMALL ? 2 : 0, 0);
        emit_fin(&k3, d);
        ws_gemm_entry(d, 2, en);
        ws_ptx_kernel_end_params(&k3, &mod, en, ws_params_of(WS_PARAMS_FWD_PARTS), WS_GEMM_FIN_THREADS, 0, 0);
        if (ws_gemm_slice_fits(d)) {
            ws_ptx_raw(&mod, ".extern .shared .align 16 .b8 gsl_smem[];\n");
            for (int v = 0; v < WS_GEMM_SLICE_VARIANTS; v++) {
                ptx_buf k4;
                ws_ptx_init(&k4);
                emit_slice(&k4, d, v, cc_major >= 9);
                ws_gemm_entry(d, 3 + v, en);
                ws_ptx_kernel_end_params(&k4, &mod, en, ws_params_of(WS_PARAMS_FWD), ws_gemm_slice_threads(v), 0,
                                         0);
            }
        }
        char why[160];
        char *text = ws_ptx_take(&mod, why, sizeof why);
        if (!text)
            ws_errf(err, "ws_gemm_emit(%s): %s", name, why);
        return text;
    }
    ws_ptx_kernel_end_params(&kb, &mod, name, ws_params_of(WS_PARAMS_FWD), NT, 0, 0);
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_gemm_emit(%s): %s", name, why);
    return text;
}

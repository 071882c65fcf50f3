/* kernels_ffma.c - fp32 conv1d + bias + exact GELU (+ pos) as a tiled FFMA
 * implicit GEMM (the contract and layouts: kernels.h).
 *
 *   y[t][o] = gelu(b[o] + sum_{k<3} sum_{i<Cin} x[s*t + k - 1][i] * w[o][i][k]) (+ pos[t][o])
 *
 * Block tile BM x BN outputs (time rows x channels), K step BK; threads
 * TY x TX with TY = BM/TM, TX = BN/TN, each owning TM x TN accumulators in
 * groups of 4x4: rows g*4*TY + 4*ty + r, cols h*4*TX + 4*tx + c, so that
 * every shared-memory read is a 16-byte vector and a warp reads 2 A vectors
 * (broadcast) and 16 consecutive B vectors.
 *   large: 128 x 128, BK 16, 8x8 per thread, 256 threads
 *   small:  64 x  64, BK 16, 4x4 per thread, 256 threads (tests force it)
 * Shared memory, double-buffered (one barrier per K step):
 *   As[2][BK][BM+4]  A transposed (time contiguous); +4 floats per row spread
 *                    the transposing stores over the banks
 *   Bs[2][BK][BN]    weights B[kk][o], packed K-major on the host
 * Per K step: the next B tile goes straight to the other stage by cp.async
 * (16 bytes a chunk, no registers); the next A tile is loaded into registers
 * while this one is multiplied, then stored transposed into the other stage:
 *   time-major x (conv2: h1 [T_in][Cin]): float4 along channels of one row,
 *     x[s*t + k - 1][i0 .. i0+3]
 *   channel-major x (conv1 reads the log-Mel [Cin][T_in] itself): scalars
 *     along time, x[i0 + kk][t + k - 1], coalesced across the warp
 *   zero when the row is outside [0, T_in) or t >= T_out (padding 1).
 * Tap k and channel offset i0 of tile kt: kt*BK = k*Cin + i0 (Cin % BK == 0).
 * Split-K (p_splits > 1, few windows): grid z = windows x parts, part s
 * takes K tiles [s*KT/splits, (s+1)*KT/splits) and stores raw sums to the
 * workspace; ws_splitk_finish (kernels_misc.c) adds them in order.
 * Registers: on sm_90 the kernel is capped (.minnctapersm 2, 128 registers)
 * so that two blocks share a multiprocessor, and assembles with no spill;
 * for sm_8x the cap is left to ptxas, which otherwise spills 8 bytes there.
 * Emitter: small static functions over the kernel being written (fk), each
 * headed by the pseudo-C of what it emits, called in listing order; register
 * numbers follow the order of allocation, so that order is part of the text.
 * Accumulation: float32 FFMA in K order. Tested by tests/test_gpu.c
 * (gpu_stem::*: fp32 within rel L2 1e-5 and 1e-4 absolute of the float64
 * oracle) and tests/test_ptx.c (ptxas sm_90 and sm_80, no spills).
 */
#include <stdio.h>

#include "gelu_ptx.h"
#include "kernels.h"
#include "ptx_params.h"

typedef struct { int bm, bn, bk, tm, tn; } ffma_tile;

static const ffma_tile TILE_LARGE = { 128, 128, 16, 8, 8 };
static const ffma_tile TILE_SMALL = { 64, 64, 16, 4, 4 };

#define I(...) ws_ptx_ins(b, __VA_ARGS__)

/* ld.param.<type> r, [<name>] of the conv's parameter i (ptx_params.h's
 * WS_PARAMS_STEM_CONV_FFMA) */
static void ld_param(ptx_buf *b, preg r, int i)
{
    ws_ptx_ld_param(b, r, ws_params_of(WS_PARAMS_STEM_CONV_FFMA), i);
}

static int ilog2(int v)
{
    int l = 0;
    while ((1 << l) < v)
        l++;
    return l;
}

/* the kernel being written: its shape constants, then the registers that
 * live across the emitters below (allocated in the order the fields are set) */
typedef struct {
    ptx_buf *b;
    const ws_conv_spec *s;
    ffma_tile T;
    int TX, TY, NT;   /* threads per row and column of the block, threads */
    int GM, GN;       /* 4x4 groups per thread */
    int C, N, KT;     /* Cin, Cout, K tiles of BK */
    int AS;           /* As row stride (floats): BM + 4 */
    int A_BYTES, STAGE; /* bytes of As, of a stage (As then Bs) */
    int NA, NB;       /* float4 loads per thread: A (time-major x), B */
    int NE;           /* channel-major x: scalar A loads per thread */
    int KKB;          /* B rows between a thread's cp.async chunks */
    int KKS;          /* channel-major x: channels between a thread's 4 elements */
    /* parameters and block coordinates */
    preg pw, pbias, ppos, py, tin, tout, haspos;
    preg tid, n0, t0, win, tx, ty, splits, split, zz;
    preg xw;          /* &x[win][0][0] (either layout) */
    preg tmp, cst;    /* scratch; channel-major: T_in * KKS, the step between elements */
    /* per-thread load addresses */
    preg arow[4];     /* input row of tap 0 (time-major), or t - 1 (channel-major) */
    preg aok[4];      /* t < T_out */
    preg aq[4];       /* &x of the thread's chunk, tap 0, channel 0 */
    preg bg;          /* &w[kt*BK + tid/(BN/4)][n0 + 4*(tid%(BN/4))] of the next B tile */
    preg lk, li0, left; /* tap and channel offset of the next A tile; K tiles left to load */
    preg av[4][4];    /* the next A tile, in flight from global to shared memory */
    preg acc[8][8];   /* TM x TN accumulators */
    preg fa[8], fb[8]; /* one K step's A column and B row */
} fk;

/* parameters, cvta'd; tid, n0 = ctaid.x*BN, t0 = ctaid.y*BM, win/split of ctaid.z,
 * tx, ty; xw = &x[win*T_in*C] */
static void emit_coords(fk *k)
{
    ptx_buf *b = k->b;
    const ffma_tile T = k->T;
    ws_ptx_section(b, "parameters and block coordinates");
    preg px = ws_ptx_reg(b, PTX_B64);
    k->pw = ws_ptx_reg(b, PTX_B64);
    k->pbias = ws_ptx_reg(b, PTX_B64);
    k->ppos = ws_ptx_reg(b, PTX_B64);
    k->py = ws_ptx_reg(b, PTX_B64);
    k->tin = ws_ptx_reg(b, PTX_B32);
    k->tout = ws_ptx_reg(b, PTX_B32);
    ld_param(b, px, WS_SCONV_X);
    ld_param(b, k->pw, WS_SCONV_W);
    ld_param(b, k->pbias, WS_SCONV_BIAS);
    ld_param(b, k->ppos, WS_SCONV_POS);
    ld_param(b, k->py, WS_SCONV_Y);
    ld_param(b, k->tin, WS_SCONV_T_IN);
    ld_param(b, k->tout, WS_SCONV_T_OUT);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", k->pw.n, k->pw.n);
    I("cvta.to.global.u64 %s, %s", k->pbias.n, k->pbias.n);
    k->haspos = ws_ptx_reg(b, PTX_PRED);
    I("setp.ne.u64 %s, %s, 0", k->haspos.n, k->ppos.n);
    I("cvta.to.global.u64 %s, %s", k->ppos.n, k->ppos.n);
    I("cvta.to.global.u64 %s, %s", k->py.n, k->py.n);
    k->tid = ws_ptx_reg(b, PTX_B32);
    k->n0 = ws_ptx_reg(b, PTX_B32);
    k->t0 = ws_ptx_reg(b, PTX_B32);
    k->win = ws_ptx_reg(b, PTX_B32);
    k->tx = ws_ptx_reg(b, PTX_B32);
    k->ty = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", k->tid.n);
    I("mov.u32 %s, %%ctaid.x", k->n0.n);
    I("shl.b32 %s, %s, %d", k->n0.n, k->n0.n, ilog2(T.bn));
    I("mov.u32 %s, %%ctaid.y", k->t0.n);
    I("shl.b32 %s, %s, %d", k->t0.n, k->t0.n, ilog2(T.bm));
    k->splits = ws_ptx_reg(b, PTX_B32);
    k->split = ws_ptx_reg(b, PTX_B32);
    k->zz = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "ctaid.z = win * splits + split: split-K parts of one window are neighbours");
    ld_param(b, k->splits, WS_SCONV_SPLITS);
    I("mov.u32 %s, %%ctaid.z", k->zz.n);
    I("div.u32 %s, %s, %s", k->win.n, k->zz.n, k->splits.n);
    I("mul.lo.u32 %s, %s, %s", k->split.n, k->win.n, k->splits.n);
    I("sub.u32 %s, %s, %s", k->split.n, k->zz.n, k->split.n);
    I("and.b32 %s, %s, %d", k->tx.n, k->tid.n, k->TX - 1);
    I("shr.u32 %s, %s, %d", k->ty.n, k->tid.n, ilog2(k->TX));
    preg sbase = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, smem", sbase.n);
    /* x of this window: x + win * T_in * C floats (either layout) */
    k->xw = ws_ptx_reg(b, PTX_B64);
    k->tmp = ws_ptx_reg(b, PTX_B32);
    k->cst = ws_ptx_reg(b, PTX_B32);
    I("mul.lo.u32 %s, %s, %s", k->tmp.n, k->win.n, k->tin.n);
    I("mul.wide.u32 %s, %s, %d", k->xw.n, k->tmp.n, k->C * 4);
    I("add.u64 %s, %s, %s", k->xw.n, k->xw.n, px.n);
}

/* channel-major: m = tid%BM, kk = tid/BM, t = t0 + m; aok = t < T_out; arow = t - 1;
 * aq = &xw[kk*T_in]; cst = T_in*KKS */
static void emit_a_address_chan(fk *k)
{
    ptx_buf *b = k->b;
    preg m = ws_ptx_reg(b, PTX_B32), kk = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
    k->arow[0] = ws_ptx_reg(b, PTX_B32);
    k->aok[0] = ws_ptx_reg(b, PTX_PRED);
    k->aq[0] = ws_ptx_reg(b, PTX_B64);
    I("and.b32 %s, %s, %d", m.n, k->tid.n, k->T.bm - 1);
    I("shr.u32 %s, %s, %d", kk.n, k->tid.n, ilog2(k->T.bm));
    I("add.u32 %s, %s, %s", t.n, k->t0.n, m.n);
    I("setp.lt.u32 %s, %s, %s", k->aok[0].n, t.n, k->tout.n);
    I("sub.u32 %s, %s, 1", k->arow[0].n, t.n);
    I("mul.lo.u32 %s, %s, %s", k->tmp.n, kk.n, k->tin.n);
    I("mul.wide.u32 %s, %s, 4", k->aq[0].n, k->tmp.n);
    I("add.u64 %s, %s, %s", k->aq[0].n, k->aq[0].n, k->xw.n);
    I("mul.lo.u32 %s, %s, %d", k->cst.n, k->tin.n, k->KKS);
}

/* time-major, chunk c = tid + j*NT: m = c/(BK/4), q = c%(BK/4), t = t0 + m;
 * aok[j] = t < T_out; arow[j] = stride*t - 1; aq[j] = &xw[4*q] */
static void emit_a_address_time(fk *k, int j)
{
    ptx_buf *b = k->b;
    const int bk = k->T.bk;
    preg c = ws_ptx_reg(b, PTX_B32), m = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32);
    preg t = ws_ptx_reg(b, PTX_B32);
    k->arow[j] = ws_ptx_reg(b, PTX_B32);
    k->aok[j] = ws_ptx_reg(b, PTX_PRED);
    k->aq[j] = ws_ptx_reg(b, PTX_B64);
    I("add.u32 %s, %s, %d", c.n, k->tid.n, j * k->NT);
    I("shr.u32 %s, %s, %d", m.n, c.n, ilog2(bk / 4));
    I("and.b32 %s, %s, %d", q.n, c.n, bk / 4 - 1);
    I("add.u32 %s, %s, %s", t.n, k->t0.n, m.n);
    I("setp.lt.u32 %s, %s, %s", k->aok[j].n, t.n, k->tout.n);
    ws_ptx_comment(b, "input row of tap 0: %d*t - 1", k->s->stride);
    I("mad.lo.u32 %s, %s, %d, -1", k->arow[j].n, t.n, k->s->stride);
    I("mul.wide.u32 %s, %s, 16", k->aq[j].n, q.n);
    I("add.u64 %s, %s, %s", k->aq[j].n, k->aq[j].n, k->xw.n);
}

/* chunk c = tid (the thread's further chunks are KKB rows below):
 * bg = &w[c/(BN/4)][n0 + 4*(c%(BN/4))] (tile 0) */
static void emit_b_address(fk *k)
{
    ptx_buf *b = k->b;
    const int bn = k->T.bn;
    preg c = ws_ptx_reg(b, PTX_B32), kk = ws_ptx_reg(b, PTX_B32), n4 = ws_ptx_reg(b, PTX_B32);
    preg off = ws_ptx_reg(b, PTX_B32);
    k->bg = ws_ptx_reg(b, PTX_B64);
    I("mov.u32 %s, %s", c.n, k->tid.n);
    I("shr.u32 %s, %s, %d", kk.n, c.n, ilog2(bn / 4));
    I("and.b32 %s, %s, %d", n4.n, c.n, bn / 4 - 1);
    I("shl.b32 %s, %s, 2", n4.n, n4.n);
    I("mad.lo.u32 %s, %s, %d, %s", off.n, kk.n, k->N, n4.n);
    I("add.u32 %s, %s, %s", off.n, off.n, k->n0.n);
    I("mul.wide.u32 %s, %s, 4", k->bg.n, off.n);
    I("add.u64 %s, %s, %s", k->bg.n, k->bg.n, k->pw.n);
}

/* kb0 = split*KT/splits, kb1 = (split+1)*KT/splits; left = kb1 - kb0 - 1;
 * lk = kb0 / (C/BK), li0 = (kb0 % (C/BK)) * BK; bg += kb0*BK*N */
static void emit_ktile_range(fk *k)
{
    ptx_buf *b = k->b;
    const int C = k->C, BK = k->T.bk, KT = k->KT;
    /* tile counters: tap k and channel offset i0 of the tile being loaded;
     * `left` K tiles remain to be loaded after the current one */
    k->lk = ws_ptx_reg(b, PTX_B32);
    k->li0 = ws_ptx_reg(b, PTX_B32);
    k->left = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "K tiles [split*KT/splits, (split+1)*KT/splits) of KT = %d", KT);
    preg kb0 = ws_ptx_reg(b, PTX_B32), kb1 = ws_ptx_reg(b, PTX_B32);
    I("mul.lo.u32 %s, %s, %d", kb0.n, k->split.n, KT);
    I("div.u32 %s, %s, %s", kb0.n, kb0.n, k->splits.n);
    I("mad.lo.u32 %s, %s, %d, %d", kb1.n, k->split.n, KT, KT);
    I("div.u32 %s, %s, %s", kb1.n, kb1.n, k->splits.n);
    I("sub.u32 %s, %s, %s", k->left.n, kb1.n, kb0.n);
    I("sub.u32 %s, %s, 1", k->left.n, k->left.n);
    I("div.u32 %s, %s, %d", k->lk.n, kb0.n, C / BK);
    I("mul.lo.u32 %s, %s, %d", k->li0.n, k->lk.n, C / BK);
    I("sub.u32 %s, %s, %s", k->li0.n, kb0.n, k->li0.n);
    I("mul.lo.u32 %s, %s, %d", k->li0.n, k->li0.n, BK);
    preg o64 = ws_ptx_reg(b, PTX_B64);
    I("mul.wide.u32 %s, %s, %d", o64.n, kb0.n, BK * k->N * 4);
    I("add.u64 %s, %s, %s", k->bg.n, k->bg.n, o64.n);
}

/* (no text) registers of the A tile in flight, the accumulators and one K step's fragments */
static void alloc_tiles(fk *k)
{
    ptx_buf *b = k->b;
    for (int j = 0; j < (k->s->chan_major ? k->NE / 4 : k->NA); j++)
        for (int e = 0; e < 4; e++)
            k->av[j][e] = ws_ptx_reg(b, PTX_F32);
    for (int r = 0; r < k->T.tm; r++)
        for (int c = 0; c < k->T.tn; c++)
            k->acc[r][c] = ws_ptx_reg(b, PTX_F32);
    for (int r = 0; r < k->T.tm; r++)
        k->fa[r] = ws_ptx_reg(b, PTX_F32);
    for (int c = 0; c < k->T.tn; c++)
        k->fb[c] = ws_ptx_reg(b, PTX_F32);
}

/* av[e/4][e%4] = ok ? x[li0 + kk + e*KKS][arow + lk] : 0, e < NE (channel-major) */
static void emit_gload_chan(fk *k)
{
    ptx_buf *b = k->b;
    preg row = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
    ws_ptx_comment(b, "x[i0 + kk + e*%d][t + k - 1], %d channels, time coalesced", k->KKS, k->NE);
    I("add.u32 %s, %s, %s", row.n, k->arow[0].n, k->lk.n);
    I("setp.lt.u32 %s, %s, %s", ok.n, row.n, k->tin.n);
    I("and.pred %s, %s, %s", ok.n, ok.n, k->aok[0].n);
    I("mad.lo.u32 %s, %s, %s, %s", off.n, k->li0.n, k->tin.n, row.n);
    for (int e = 0; e < k->NE; e++) {
        if (e)
            I("add.u32 %s, %s, %s", off.n, off.n, k->cst.n);
        I("mad.wide.u32 %s, %s, 4, %s", ga.n, off.n, k->aq[0].n);
        I("mov.f32 %s, 0f00000000", k->av[e / 4][e % 4].n);
        I("@%s ld.global.nc.f32 %s, [%s]", ok.n, k->av[e / 4][e % 4].n, ga.n);
    }
}

/* av[j][0..3] = ok ? x[arow[j] + lk][li0 + 4q .. +3] : 0 (time-major, float4) */
static void emit_gload_time(fk *k, int j)
{
    ptx_buf *b = k->b;
    preg row = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
    I("add.u32 %s, %s, %s", row.n, k->arow[j].n, k->lk.n);
    I("setp.lt.u32 %s, %s, %s", ok.n, row.n, k->tin.n);
    I("and.pred %s, %s, %s", ok.n, ok.n, k->aok[j].n);
    I("mad.lo.u32 %s, %s, %d, %s", off.n, row.n, k->C, k->li0.n);
    I("mad.wide.u32 %s, %s, 4, %s", ga.n, off.n, k->aq[j].n);
    for (int e = 0; e < 4; e++)
        I("mov.f32 %s, 0f00000000", k->av[j][e].n);
    I("@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s]", ok.n, k->av[j][0].n, k->av[j][1].n,
      k->av[j][2].n, k->av[j][3].n, ga.n);
}

/* av = A tile (lk, li0) from global memory; li0 += BK; if (li0 == C) { li0 = 0; lk++; } */
static void emit_gload(fk *k)
{
    ptx_buf *b = k->b;
    if (k->s->chan_major)
        emit_gload_chan(k);
    for (int j = 0; j < k->NA && !k->s->chan_major; j++)
        emit_gload_time(k, j);
    preg wrap = ws_ptx_reg(b, PTX_PRED);
    I("add.u32 %s, %s, %d", k->li0.n, k->li0.n, k->T.bk);
    I("setp.eq.u32 %s, %s, %d", wrap.n, k->li0.n, k->C);
    I("selp.u32 %s, 0, %s, %s", k->li0.n, k->li0.n, wrap.n);
    I("selp.u32 %s, 1, 0, %s", k->tmp.n, wrap.n);
    I("add.u32 %s, %s, %s", k->lk.n, k->lk.n, k->tmp.n);
}

/* As[so][kk][m] = av, transposed; the addresses are recomputed from %tid.x
 * here (a few integer operations per K tile) so that they hold no registers
 * across the FFMA loop */
static void emit_sstore(fk *k, preg so)
{
    ptx_buf *b = k->b;
    const ffma_tile T = k->T;
    const int AS = k->AS;
    preg sti = ws_ptx_reg(b, PTX_B32), sb = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", sti.n);
    I("mov.u32 %s, smem", sb.n);
    I("add.u32 %s, %s, %s", sb.n, sb.n, so.n);
    if (k->s->chan_major) {
        preg a = ws_ptx_reg(b, PTX_B32), c = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "As[kk + e*%d][m], kk = tid / BM, m = tid %% BM", k->KKS);
        I("shr.u32 %s, %s, %d", c.n, sti.n, ilog2(T.bm));
        I("and.b32 %s, %s, %d", a.n, sti.n, T.bm - 1);
        I("mad.lo.u32 %s, %s, %d, %s", a.n, c.n, AS, a.n);
        I("mad.lo.u32 %s, %s, 4, %s", a.n, a.n, sb.n);
        for (int e = 0; e < k->NE; e++)
            I("st.shared.f32 [%s+%d], %s", a.n, e * k->KKS * AS * 4, k->av[e / 4][e % 4].n);
    }
    for (int j = 0; j < k->NA && !k->s->chan_major; j++) {
        preg a = ws_ptx_reg(b, PTX_B32), c = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "As[q*4 + e][m], m = c / (BK/4), q = c %% (BK/4)");
        I("add.u32 %s, %s, %d", c.n, sti.n, j * k->NT);
        I("and.b32 %s, %s, %d", a.n, c.n, T.bk / 4 - 1);
        I("shr.u32 %s, %s, %d", c.n, c.n, ilog2(T.bk / 4));
        I("mad.lo.u32 %s, %s, %d, %s", a.n, a.n, 4 * AS, c.n);
        I("mad.lo.u32 %s, %s, 4, %s", a.n, a.n, sb.n);
        for (int e = 0; e < 4; e++)
            I("st.shared.f32 [%s+%d], %s", a.n, e * AS * 4, k->av[j][e].n);
    }
}

/* cp.async Bs[so][tid/(BN/4) + j*KKB][4*(tid%(BN/4)) ..] <- bg[j*KKB*N ..], j < NB;
 * commit; bg += BK*N (the weights go to shared memory as they are, no registers) */
static void emit_bissue(fk *k, preg so)
{
    ptx_buf *b = k->b;
    const int N = k->N;
    preg a = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "Bs[kk][n4*4] <- w[kt*BK + kk][n0 + n4*4], chunks %d rows apart", k->KKB);
    I("mov.u32 %s, %%tid.x", a.n);
    I("shl.b32 %s, %s, 4", a.n, a.n);
    I("add.u32 %s, %s, %s", a.n, a.n, so.n);
    I("add.u32 %s, %s, %d", a.n, a.n, k->A_BYTES);
    for (int j = 0; j < k->NB; j++) {
        preg sa = ws_ptx_reg(b, PTX_B32);
        I("mov.u32 %s, smem", sa.n);
        I("add.u32 %s, %s, %s", sa.n, sa.n, a.n);
        I("cp.async.cg.shared.global [%s+%d], [%s+%d], 16", sa.n, j * k->NT * 16, k->bg.n,
          j * k->KKB * N * 4);
    }
    I("cp.async.commit_group");
    I("add.u64 %s, %s, %d", k->bg.n, k->bg.n, k->T.bk * N * 4);
}

/* for (kk < BK) { fa = As[cur][kk][4*ty ..]; fb = Bs[cur][kk][4*tx ..]; acc += fa x fb } */
static void emit_multiply(fk *k, preg cur)
{
    ptx_buf *b = k->b;
    const ffma_tile T = k->T;
    const int TX = k->TX, TY = k->TY;
    ws_ptx_comment(b, "multiply the tile in stage `cur`: %d steps of %d FFMA", T.bk, T.tm * T.tn);
    preg ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32), ti = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "read addresses As[kk][4*ty], Bs[kk][4*tx] from %%tid.x (no registers held)");
    I("mov.u32 %s, %%tid.x", ti.n);
    I("shr.u32 %s, %s, %d", ra.n, ti.n, ilog2(TX));
    I("and.b32 %s, %s, %d", rb.n, ti.n, TX - 1);
    I("mov.u32 %s, smem", ti.n);
    I("add.u32 %s, %s, %s", ti.n, ti.n, cur.n);
    I("mad.lo.u32 %s, %s, 16, %s", ra.n, ra.n, ti.n);
    I("mad.lo.u32 %s, %s, 16, %s", rb.n, rb.n, ti.n);
    I("add.u32 %s, %s, %d", rb.n, rb.n, k->A_BYTES);
    for (int kk = 0; kk < T.bk; kk++) {
        for (int g = 0; g < k->GM; g++)
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", k->fa[4 * g].n, k->fa[4 * g + 1].n,
              k->fa[4 * g + 2].n, k->fa[4 * g + 3].n, ra.n, (kk * k->AS + g * 4 * TY) * 4);
        for (int h = 0; h < k->GN; h++)
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", k->fb[4 * h].n, k->fb[4 * h + 1].n,
              k->fb[4 * h + 2].n, k->fb[4 * h + 3].n, rb.n, (kk * T.bn + h * 4 * TX) * 4);
        for (int r = 0; r < T.tm; r++)
            for (int c = 0; c < T.tn; c++)
                I("fma.rn.f32 %s, %s, %s, %s", k->acc[r][c].n, k->fa[r].n, k->fb[c].n,
                  k->acc[r][c].n);
    }
}

/* acc = 0; tile 0 -> stage 0; do { tile kt+1 -> other stage (B by cp.async, A via av)
 * while multiplying stage cur; swap } while (left--) */
static void emit_main_loop(fk *k)
{
    ptx_buf *b = k->b;
    ws_ptx_section(b, "prologue: tile 0 into stage 0");
    preg cur = ws_ptx_reg(b, PTX_B32), nxt = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", cur.n);
    for (int r = 0; r < k->T.tm; r++)
        for (int c = 0; c < k->T.tn; c++)
            I("mov.f32 %s, 0f00000000", k->acc[r][c].n);
    emit_bissue(k, cur);
    emit_gload(k);
    emit_sstore(k, cur);
    I("cp.async.wait_group 0");
    I("bar.sync 0");

    ws_ptx_section(b, "main loop over K tiles");
    plabel top = ws_ptx_label_new(b, "ktile"), noload = ws_ptx_label_new(b, "nolast");
    plabel nostore = ws_ptx_label_new(b, "nostore");
    preg more = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_label(b, top);
    I("setp.ne.u32 %s, %s, 0", more.n, k->left.n);
    I("sub.u32 %s, %d, %s", nxt.n, k->STAGE, cur.n);
    I("@!%s bra.uni %s", more.n, noload.n);
    I("sub.u32 %s, %s, 1", k->left.n, k->left.n);
    ws_ptx_comment(b, "tile kt+1: B by cp.async into the other stage, A into registers");
    emit_bissue(k, nxt);
    emit_gload(k);
    ws_ptx_label(b, noload);
    emit_multiply(k, cur);
    I("@!%s bra.uni %s", more.n, nostore.n);
    emit_sstore(k, nxt);
    I("cp.async.wait_group 0");
    I("mov.u32 %s, %s", cur.n, nxt.n);
    ws_ptx_label(b, nostore);
    I("bar.sync 0");
    I("@%s bra.uni %s", more.n, top.n);
}

/* if (splits != 1) { ws[(ctaid.z*T_out + t)*N + o] = acc (t < T_out); return; } */
static void emit_splitk_store(fk *k, plabel epi)
{
    ptx_buf *b = k->b;
    const ffma_tile T = k->T;
    const int TX = k->TX, TY = k->TY, N = k->N;
    preg one = ws_ptx_reg(b, PTX_PRED), pws = ws_ptx_reg(b, PTX_B64), to3 = ws_ptx_reg(b, PTX_B32);
    preg tid3 = ws_ptx_reg(b, PTX_B32), tx3 = ws_ptx_reg(b, PTX_B32), ty3 = ws_ptx_reg(b, PTX_B32);
    preg n03 = ws_ptx_reg(b, PTX_B32), t03 = ws_ptx_reg(b, PTX_B32), zz3 = ws_ptx_reg(b, PTX_B32);
    preg sp3 = ws_ptx_reg(b, PTX_B32), base = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
    ld_param(b, sp3, WS_SCONV_SPLITS);
    I("setp.eq.u32 %s, %s, 1", one.n, sp3.n);
    I("@%s bra.uni %s", one.n, epi.n);
    ld_param(b, pws, WS_SCONV_WS);
    I("cvta.to.global.u64 %s, %s", pws.n, pws.n);
    ld_param(b, to3, WS_SCONV_T_OUT);
    I("mov.u32 %s, %%tid.x", tid3.n);
    I("and.b32 %s, %s, %d", tx3.n, tid3.n, TX - 1);
    I("shr.u32 %s, %s, %d", ty3.n, tid3.n, ilog2(TX));
    I("mov.u32 %s, %%ctaid.x", n03.n);
    I("shl.b32 %s, %s, %d", n03.n, n03.n, ilog2(T.bn));
    I("mov.u32 %s, %%ctaid.y", t03.n);
    I("shl.b32 %s, %s, %d", t03.n, t03.n, ilog2(T.bm));
    I("mov.u32 %s, %%ctaid.z", zz3.n);
    ws_ptx_comment(b, "ws[(ctaid.z * T_out + t) * N + o]: part s of window w at z = w*splits + s");
    I("mad.lo.u32 %s, %s, 4, %s", base.n, ty3.n, t03.n);
    I("mad.lo.u32 %s, %s, %s, %s", base.n, zz3.n, to3.n, base.n);
    I("mul.lo.u32 %s, %s, %d", base.n, base.n, N);
    I("add.u32 %s, %s, %s", base.n, base.n, n03.n);
    I("mad.lo.u32 %s, %s, 4, %s", base.n, tx3.n, base.n);
    for (int g = 0; g < k->GM; g++)
        for (int r = 0; r < 4; r++) {
            const int row = g * 4 * TY + r;
            preg t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
            I("mad.lo.u32 %s, %s, 4, %s", t.n, ty3.n, t03.n);
            I("add.u32 %s, %s, %d", t.n, t.n, row);
            I("setp.lt.u32 %s, %s, %s", ok.n, t.n, to3.n);
            I("add.u32 %s, %s, %d", u.n, base.n, row * N);
            I("mad.wide.u32 %s, %s, 4, %s", ga.n, u.n, pws.n);
            for (int h = 0; h < k->GN; h++)
                I("@%s st.global.v4.f32 [%s+%d], {%s, %s, %s, %s}", ok.n, ga.n, h * 4 * TX * 4,
                  k->acc[4 * g + r][4 * h].n, k->acc[4 * g + r][4 * h + 1].n,
                  k->acc[4 * g + r][4 * h + 2].n, k->acc[4 * g + r][4 * h + 3].n);
        }
    ws_ptx_comment(b, "ws_splitk_finish adds the parts up in split order, then bias, gelu, pos");
    I("ret");
}

/* pbias, ppos, py, tout, tx, ty, n0, t0, splits, zz, win re-read from the
 * parameters and special registers (none is held across the loop) */
static void emit_epilogue_coords(fk *k)
{
    ptx_buf *b = k->b;
    const ffma_tile T = k->T;
    ws_ptx_comment(b, "pointers and coordinates re-read here so they hold no register in the loop");
    preg pb2 = ws_ptx_reg(b, PTX_B64), pp2 = ws_ptx_reg(b, PTX_B64), py2 = ws_ptx_reg(b, PTX_B64);
    preg to2 = ws_ptx_reg(b, PTX_B32), tid2 = ws_ptx_reg(b, PTX_B32);
    ld_param(b, pb2, WS_SCONV_BIAS);
    ld_param(b, pp2, WS_SCONV_POS);
    ld_param(b, py2, WS_SCONV_Y);
    ld_param(b, to2, WS_SCONV_T_OUT);
    I("cvta.to.global.u64 %s, %s", k->pbias.n, pb2.n);
    I("cvta.to.global.u64 %s, %s", k->ppos.n, pp2.n);
    I("cvta.to.global.u64 %s, %s", k->py.n, py2.n);
    I("mov.u32 %s, %s", k->tout.n, to2.n);
    I("mov.u32 %s, %%tid.x", tid2.n);
    I("and.b32 %s, %s, %d", k->tx.n, tid2.n, k->TX - 1);
    I("shr.u32 %s, %s, %d", k->ty.n, tid2.n, ilog2(k->TX));
    I("mov.u32 %s, %%ctaid.x", k->n0.n);
    I("shl.b32 %s, %s, %d", k->n0.n, k->n0.n, ilog2(T.bn));
    I("mov.u32 %s, %%ctaid.y", k->t0.n);
    I("shl.b32 %s, %s, %d", k->t0.n, k->t0.n, ilog2(T.bm));
    ld_param(b, k->splits, WS_SCONV_SPLITS);
    I("mov.u32 %s, %%ctaid.z", k->zz.n);
    I("div.u32 %s, %s, %s", k->win.n, k->zz.n, k->splits.n);
}

/* y[win][t][o] = gelu(acc + b[o]) (+ pos[t][o]) for the thread's rows t < T_out, float4 stores */
static void emit_epilogue(fk *k)
{
    ptx_buf *b = k->b;
    const int TX = k->TX, TY = k->TY, N = k->N;
    emit_epilogue_coords(k);
    ws_ptx_comment(b, "bias is re-read per row (L1 hits) rather than held: registers are short here");
    preg bptr = ws_ptx_reg(b, PTX_B64);
    {
        preg col = ws_ptx_reg(b, PTX_B32);
        I("mad.lo.u32 %s, %s, 4, %s", col.n, k->tx.n, k->n0.n);
        I("mad.wide.u32 %s, %s, 4, %s", bptr.n, col.n, k->pbias.n);
    }
    /* out row base: (win*T_out + t0 + 4*ty) * N + n0 + 4*tx */
    preg orow = ws_ptx_reg(b, PTX_B32), tb = ws_ptx_reg(b, PTX_B32);
    I("mad.lo.u32 %s, %s, 4, %s", tb.n, k->ty.n, k->t0.n);
    I("mad.lo.u32 %s, %s, %s, %s", orow.n, k->win.n, k->tout.n, tb.n);
    preg col0 = ws_ptx_reg(b, PTX_B32);
    I("mad.lo.u32 %s, %s, 4, %s", col0.n, k->tx.n, k->n0.n);
    for (int g = 0; g < k->GM; g++) {
        for (int r = 0; r < 4; r++) {
            const int row = g * 4 * TY + r;     /* + 4*ty */
            preg t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), pok = ws_ptx_reg(b, PTX_PRED);
            preg oi = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64);
            preg pi = ws_ptx_reg(b, PTX_B32), pa = ws_ptx_reg(b, PTX_B64);
            I("add.u32 %s, %s, %d", t.n, tb.n, row);
            I("setp.lt.u32 %s, %s, %s", ok.n, t.n, k->tout.n);
            I("and.pred %s, %s, %s", pok.n, ok.n, k->haspos.n);
            I("add.u32 %s, %s, %d", oi.n, orow.n, row);
            I("mad.lo.u32 %s, %s, %d, %s", oi.n, oi.n, N, col0.n);
            I("mul.wide.u32 %s, %s, 4", ga.n, oi.n);
            I("add.u64 %s, %s, %s", ga.n, ga.n, k->py.n);
            I("mad.lo.u32 %s, %s, %d, %s", pi.n, t.n, N, col0.n);
            I("mul.wide.u32 %s, %s, 4", pa.n, pi.n);
            I("add.u64 %s, %s, %s", pa.n, pa.n, k->ppos.n);
            for (int h = 0; h < k->GN; h++) {
                preg v[4], pv[4], bs[4];
                for (int e = 0; e < 4; e++)
                    bs[e] = ws_ptx_reg(b, PTX_F32);
                I("ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+%d]", bs[0].n, bs[1].n, bs[2].n, bs[3].n,
                  bptr.n, h * 4 * TX * 4);
                for (int e = 0; e < 4; e++) {
                    v[e] = ws_ptx_reg(b, PTX_F32);
                    pv[e] = ws_ptx_reg(b, PTX_F32);
                    I("add.f32 %s, %s, %s", v[e].n, k->acc[4 * g + r][4 * h + e].n, bs[e].n);
                    ws_gelu_emit(b, v[e].n, v[e].n);
                }
                if (k->s->last) {
                    for (int e = 0; e < 4; e++)
                        I("mov.f32 %s, 0f00000000", pv[e].n);
                    I("@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+%d]", pok.n, pv[0].n, pv[1].n,
                      pv[2].n, pv[3].n, pa.n, h * 4 * TX * 4);
                    for (int e = 0; e < 4; e++)
                        I("add.f32 %s, %s, %s", v[e].n, v[e].n, pv[e].n);
                }
                I("@%s st.global.v4.f32 [%s+%d], {%s, %s, %s, %s}", ok.n, ga.n, h * 4 * TX * 4,
                  v[0].n, v[1].n, v[2].n, v[3].n);
            }
        }
    }
    I("ret");
}

int ws_emit_conv_ffma(ptx_buf *mod, const ws_conv_spec *s, ws_kernel_src *info, ws_err *err)
{
    ptx_buf kb;
    fk k = { .b = &kb, .s = s, .T = s->small ? TILE_SMALL : TILE_LARGE };
    const ffma_tile T = k.T;
    k.TX = T.bn / T.tn;
    k.TY = T.bm / T.tm;
    k.NT = k.TX * k.TY;
    k.GM = T.tm / 4;
    k.GN = T.tn / 4;
    k.C = s->cin;
    k.N = s->cout;
    k.KT = 3 * k.C / T.bk;
    k.AS = T.bm + 4;
    k.A_BYTES = T.bk * k.AS * 4;
    k.STAGE = k.A_BYTES + T.bk * T.bn * 4;
    k.NA = T.bm * T.bk / 4 / k.NT;
    k.NB = T.bk * T.bn / 4 / k.NT;
    k.NE = T.bm * T.bk / k.NT;
    k.KKB = k.NT / (T.bn / 4);
    k.KKS = k.NT / T.bm;
    const int C = k.C, N = k.N, NT = k.NT;
    if (C % T.bk || N % T.bn || k.NA < 1 || k.NB < 1 || k.NA > 4 || k.NE > 16 || NT % (T.bn / 4) ||
        (s->chan_major && (NT % T.bm || s->stride != 1)))
        return ws_errf(err, "fp32 conv: unsupported shape cin %d cout %d (cin %% %d, cout %% %d)", C,
                       N, T.bk, T.bn);

    snprintf(info->name, sizeof info->name, "ws_conv%d_fp32_%s", s->last ? 2 : 1,
             s->small ? "s" : "l");
    info->threads = NT;
    info->smem = 0;
    info->bm = T.bm;
    info->bn = T.bn;
    info->bk = T.bk;

    ptx_buf *b = &kb;
    ws_ptx_init(b);
    ws_ptx_raw(b, "\t.shared .align 16 .b8 smem[%d];\n", 2 * k.STAGE);
    ws_ptx_comment(b, "y[t][o] = gelu(b[o] + sum_k sum_i x[%d*t + k - 1][i] * w[o][i][k])%s; "
                   "cin %d, cout %d, tile %dx%d, BK %d, %dx%d per thread",
                s->stride, s->last ? " (+ pos[t][o])" : "", C, N, T.bm, T.bn, T.bk, T.tm, T.tn);
    emit_coords(&k);

    ws_ptx_section(b, "per-thread load addresses");
    if (s->chan_major)
        emit_a_address_chan(&k);
    for (int j = 0; j < k.NA && !s->chan_major; j++)
        emit_a_address_time(&k, j);
    emit_b_address(&k);
    emit_ktile_range(&k);
    alloc_tiles(&k);
    emit_main_loop(&k);

    ws_ptx_section(b, "split-K: partial sums to the workspace (p_splits > 1)");
    plabel epi = ws_ptx_label_new(b, "epilogue");
    emit_splitk_store(&k, epi);
    ws_ptx_label(b, epi);
    ws_ptx_section(b, "epilogue: + bias, gelu, + pos, store time-major");
    emit_epilogue(&k);
    ws_ptx_kernel_end_params(b, mod, info->name, ws_params_of(WS_PARAMS_STEM_CONV_FFMA), NT,
                             s->cc_major >= 9 ? 2 : 0, 0);
    return 0;
}

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
 * Accumulation: float32 FFMA in K order. Tested by tests/test_gpu.c
 * (gpu_stem::*: fp32 within rel L2 1e-5 and 1e-4 absolute of the float64
 * oracle) and tests/test_ptx.c (ptxas sm_90 and sm_80, no spills).
 */
#include <stdio.h>

#include "gelu_ptx.h"
#include "kernels.h"

typedef struct { int bm, bn, bk, tm, tn; } ffma_tile;

static const ffma_tile TILE_LARGE = { 128, 128, 16, 8, 8 };
static const ffma_tile TILE_SMALL = { 64, 64, 16, 4, 4 };

#define I(...) ws_ptx_ins(b, __VA_ARGS__)

static int ilog2(int v)
{
    int l = 0;
    while ((1 << l) < v)
        l++;
    return l;
}

int ws_emit_conv_ffma(ptx_buf *mod, const ws_conv_spec *s, ws_kernel_src *info, ws_err *err)
{
    const ffma_tile T = s->small ? TILE_SMALL : TILE_LARGE;
    const int TX = T.bn / T.tn, TY = T.bm / T.tm, NT = TX * TY;
    const int GM = T.tm / 4, GN = T.tn / 4;   /* 4x4 groups per thread */
    const int C = s->cin, N = s->cout, KT = 3 * C / T.bk;
    const int AS = T.bm + 4;                  /* As row stride (floats) */
    const int A_BYTES = T.bk * AS * 4, B_BYTES = T.bk * T.bn * 4, STAGE = A_BYTES + B_BYTES;
    const int NA = T.bm * T.bk / 4 / NT, NB = T.bk * T.bn / 4 / NT; /* float4 loads per thread */
    const int NE = T.bm * T.bk / NT;          /* channel-major: scalar A loads per thread */
    const int KKB = NT / (T.bn / 4);          /* B rows between a thread's cp.async chunks */
    if (C % T.bk || N % T.bn || NA < 1 || NB < 1 || NA > 4 || NE > 16 || NT % (T.bn / 4) ||
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

    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    ws_ptx_raw(b, "\t.shared .align 16 .b8 smem[%d];\n", 2 * STAGE);
    ws_ptx_comment(b, "y[t][o] = gelu(b[o] + sum_k sum_i x[%d*t + k - 1][i] * w[o][i][k])%s; "
                   "cin %d, cout %d, tile %dx%d, BK %d, %dx%d per thread",
                s->stride, s->last ? " (+ pos[t][o])" : "", C, N, T.bm, T.bn, T.bk, T.tm, T.tn);

    ws_ptx_section(b, "parameters and block coordinates");
    preg px = ws_ptx_reg(b, PTX_B64), pw = ws_ptx_reg(b, PTX_B64), pbias = ws_ptx_reg(b, PTX_B64);
    preg ppos = ws_ptx_reg(b, PTX_B64), py = ws_ptx_reg(b, PTX_B64);
    preg tin = ws_ptx_reg(b, PTX_B32), tout = ws_ptx_reg(b, PTX_B32);
    I("ld.param.u64 %s, [p_x]", px.n);
    I("ld.param.u64 %s, [p_w]", pw.n);
    I("ld.param.u64 %s, [p_bias]", pbias.n);
    I("ld.param.u64 %s, [p_pos]", ppos.n);
    I("ld.param.u64 %s, [p_y]", py.n);
    I("ld.param.u32 %s, [p_tin]", tin.n);
    I("ld.param.u32 %s, [p_tout]", tout.n);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", pw.n, pw.n);
    I("cvta.to.global.u64 %s, %s", pbias.n, pbias.n);
    preg haspos = ws_ptx_reg(b, PTX_PRED);
    I("setp.ne.u64 %s, %s, 0", haspos.n, ppos.n);
    I("cvta.to.global.u64 %s, %s", ppos.n, ppos.n);
    I("cvta.to.global.u64 %s, %s", py.n, py.n);
    preg tid = ws_ptx_reg(b, PTX_B32), n0 = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32);
    preg win = ws_ptx_reg(b, PTX_B32), tx = ws_ptx_reg(b, PTX_B32), ty = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, %%ctaid.x", n0.n);
    I("shl.b32 %s, %s, %d", n0.n, n0.n, ilog2(T.bn));
    I("mov.u32 %s, %%ctaid.y", t0.n);
    I("shl.b32 %s, %s, %d", t0.n, t0.n, ilog2(T.bm));
    preg splits = ws_ptx_reg(b, PTX_B32), split = ws_ptx_reg(b, PTX_B32), zz = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "ctaid.z = win * splits + split: split-K parts of one window are neighbours");
    I("ld.param.u32 %s, [p_splits]", splits.n);
    I("mov.u32 %s, %%ctaid.z", zz.n);
    I("div.u32 %s, %s, %s", win.n, zz.n, splits.n);
    I("mul.lo.u32 %s, %s, %s", split.n, win.n, splits.n);
    I("sub.u32 %s, %s, %s", split.n, zz.n, split.n);
    I("and.b32 %s, %s, %d", tx.n, tid.n, TX - 1);
    I("shr.u32 %s, %s, %d", ty.n, tid.n, ilog2(TX));
    preg sbase = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, smem", sbase.n);
    /* x of this window: x + win * T_in * C floats (either layout) */
    preg xw = ws_ptx_reg(b, PTX_B64), tmp = ws_ptx_reg(b, PTX_B32), cst = ws_ptx_reg(b, PTX_B32);
    I("mul.lo.u32 %s, %s, %s", tmp.n, win.n, tin.n);
    I("mul.wide.u32 %s, %s, %d", xw.n, tmp.n, C * 4);
    I("add.u64 %s, %s, %s", xw.n, xw.n, px.n);

    ws_ptx_section(b, "per-thread load addresses");
    preg arow[4], aok[4], aq[4];
    const int KKS = NT / T.bm;   /* channel-major: channels between a thread's 4 elements */
    if (s->chan_major) {
        /* element e of thread tid: channel kk = tid/BM + e*KKS, time m = tid % BM */
        preg m = ws_ptx_reg(b, PTX_B32), kk = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        arow[0] = ws_ptx_reg(b, PTX_B32);
        aok[0] = ws_ptx_reg(b, PTX_PRED);
        aq[0] = ws_ptx_reg(b, PTX_B64);
        I("and.b32 %s, %s, %d", m.n, tid.n, T.bm - 1);
        I("shr.u32 %s, %s, %d", kk.n, tid.n, ilog2(T.bm));
        I("add.u32 %s, %s, %s", t.n, t0.n, m.n);
        I("setp.lt.u32 %s, %s, %s", aok[0].n, t.n, tout.n);
        I("sub.u32 %s, %s, 1", arow[0].n, t.n);
        I("mul.lo.u32 %s, %s, %s", tmp.n, kk.n, tin.n);
        I("mul.wide.u32 %s, %s, 4", aq[0].n, tmp.n);
        I("add.u64 %s, %s, %s", aq[0].n, aq[0].n, xw.n);
        I("mul.lo.u32 %s, %s, %d", cst.n, tin.n, KKS);
    }
    for (int j = 0; j < NA && !s->chan_major; j++) {
        /* chunk c = tid + j*NT: time row m = c / (BK/4), channel quad q = c % (BK/4) */
        preg c = ws_ptx_reg(b, PTX_B32), m = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32);
        preg t = ws_ptx_reg(b, PTX_B32);
        arow[j] = ws_ptx_reg(b, PTX_B32);
        aok[j] = ws_ptx_reg(b, PTX_PRED);
        aq[j] = ws_ptx_reg(b, PTX_B64);
        I("add.u32 %s, %s, %d", c.n, tid.n, j * NT);
        I("shr.u32 %s, %s, %d", m.n, c.n, ilog2(T.bk / 4));
        I("and.b32 %s, %s, %d", q.n, c.n, T.bk / 4 - 1);
        I("add.u32 %s, %s, %s", t.n, t0.n, m.n);
        I("setp.lt.u32 %s, %s, %s", aok[j].n, t.n, tout.n);
        ws_ptx_comment(b, "input row of tap 0: %d*t - 1", s->stride);
        I("mad.lo.u32 %s, %s, %d, -1", arow[j].n, t.n, s->stride);
        I("mul.wide.u32 %s, %s, 16", aq[j].n, q.n);
        I("add.u64 %s, %s, %s", aq[j].n, aq[j].n, xw.n);
    }
    preg bg[1];
    for (int j = 0; j < 1; j++) {
        /* chunk c = tid (+ j*NT for the thread's further chunks, KKB rows below):
         * weight row kk = c / (BN/4), column quad n4 = c % (BN/4) */
        preg c = ws_ptx_reg(b, PTX_B32), kk = ws_ptx_reg(b, PTX_B32), n4 = ws_ptx_reg(b, PTX_B32);
        preg off = ws_ptx_reg(b, PTX_B32);
        bg[j] = ws_ptx_reg(b, PTX_B64);
        I("mov.u32 %s, %s", c.n, tid.n);
        I("shr.u32 %s, %s, %d", kk.n, c.n, ilog2(T.bn / 4));
        I("and.b32 %s, %s, %d", n4.n, c.n, T.bn / 4 - 1);
        I("shl.b32 %s, %s, 2", n4.n, n4.n);
        I("mad.lo.u32 %s, %s, %d, %s", off.n, kk.n, N, n4.n);
        I("add.u32 %s, %s, %s", off.n, off.n, n0.n);
        I("mul.wide.u32 %s, %s, 4", bg[j].n, off.n);
        I("add.u64 %s, %s, %s", bg[j].n, bg[j].n, pw.n);
    }

    /* tile counters: tap k and channel offset i0 of the tile being loaded;
     * `left` K tiles remain to be loaded after the current one */
    preg lk = ws_ptx_reg(b, PTX_B32), li0 = ws_ptx_reg(b, PTX_B32), left = ws_ptx_reg(b, PTX_B32);
    {
        ws_ptx_comment(b, "K tiles [split*KT/splits, (split+1)*KT/splits) of KT = %d", KT);
        preg kb0 = ws_ptx_reg(b, PTX_B32), kb1 = ws_ptx_reg(b, PTX_B32);
        I("mul.lo.u32 %s, %s, %d", kb0.n, split.n, KT);
        I("div.u32 %s, %s, %s", kb0.n, kb0.n, splits.n);
        I("mad.lo.u32 %s, %s, %d, %d", kb1.n, split.n, KT, KT);
        I("div.u32 %s, %s, %s", kb1.n, kb1.n, splits.n);
        I("sub.u32 %s, %s, %s", left.n, kb1.n, kb0.n);
        I("sub.u32 %s, %s, 1", left.n, left.n);
        I("div.u32 %s, %s, %d", lk.n, kb0.n, C / T.bk);
        I("mul.lo.u32 %s, %s, %d", li0.n, lk.n, C / T.bk);
        I("sub.u32 %s, %s, %s", li0.n, kb0.n, li0.n);
        I("mul.lo.u32 %s, %s, %d", li0.n, li0.n, T.bk);
        {
            preg o64 = ws_ptx_reg(b, PTX_B64);
            I("mul.wide.u32 %s, %s, %d", o64.n, kb0.n, T.bk * N * 4);
            I("add.u64 %s, %s, %s", bg[0].n, bg[0].n, o64.n);
        }
    }
    preg av[4][4];
    for (int j = 0; j < (s->chan_major ? NE / 4 : NA); j++)
        for (int e = 0; e < 4; e++)
            av[j][e] = ws_ptx_reg(b, PTX_F32);
    preg acc[8][8];
    for (int r = 0; r < T.tm; r++)
        for (int c = 0; c < T.tn; c++)
            acc[r][c] = ws_ptx_reg(b, PTX_F32);
    preg fa[8], fb[8];
    for (int r = 0; r < T.tm; r++)
        fa[r] = ws_ptx_reg(b, PTX_F32);
    for (int c = 0; c < T.tn; c++)
        fb[c] = ws_ptx_reg(b, PTX_F32);

    /* emits: global loads of the A tile (lk, li0) into av, then advances */
    #define EMIT_GLOAD()                                                                   \
        do {                                                                               \
            if (s->chan_major) {                                                           \
                preg row = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B32);                 \
                preg ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);                  \
                ws_ptx_comment(b, "x[i0 + kk + e*%d][t + k - 1], %d channels, time coalesced", KKS, NE); \
                I("add.u32 %s, %s, %s", row.n, arow[0].n, lk.n);                           \
                I("setp.lt.u32 %s, %s, %s", ok.n, row.n, tin.n);                           \
                I("and.pred %s, %s, %s", ok.n, ok.n, aok[0].n);                            \
                I("mad.lo.u32 %s, %s, %s, %s", off.n, li0.n, tin.n, row.n);                \
                for (int e = 0; e < NE; e++) {                                             \
                    if (e)                                                                 \
                        I("add.u32 %s, %s, %s", off.n, off.n, cst.n);                      \
                    I("mad.wide.u32 %s, %s, 4, %s", ga.n, off.n, aq[0].n);                 \
                    I("mov.f32 %s, 0f00000000", av[e / 4][e % 4].n);                       \
                    I("@%s ld.global.nc.f32 %s, [%s]", ok.n, av[e / 4][e % 4].n, ga.n);    \
                }                                                                          \
            }                                                                              \
            for (int j = 0; j < NA && !s->chan_major; j++) {                               \
                preg row = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B32);                 \
                preg ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);                  \
                I("add.u32 %s, %s, %s", row.n, arow[j].n, lk.n);                           \
                I("setp.lt.u32 %s, %s, %s", ok.n, row.n, tin.n);                           \
                I("and.pred %s, %s, %s", ok.n, ok.n, aok[j].n);                            \
                I("mad.lo.u32 %s, %s, %d, %s", off.n, row.n, C, li0.n);                    \
                I("mad.wide.u32 %s, %s, 4, %s", ga.n, off.n, aq[j].n);                     \
                for (int e = 0; e < 4; e++)                                                \
                    I("mov.f32 %s, 0f00000000", av[j][e].n);                               \
                I("@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s]", ok.n, av[j][0].n,      \
                  av[j][1].n, av[j][2].n, av[j][3].n, ga.n);                               \
            }                                                                              \
            preg wrap = ws_ptx_reg(b, PTX_PRED);                                              \
            I("add.u32 %s, %s, %d", li0.n, li0.n, T.bk);                                   \
            I("setp.eq.u32 %s, %s, %d", wrap.n, li0.n, C);                                 \
            I("selp.u32 %s, 0, %s, %s", li0.n, li0.n, wrap.n);                             \
            I("selp.u32 %s, 1, 0, %s", tmp.n, wrap.n);                                     \
            I("add.u32 %s, %s, %s", lk.n, lk.n, tmp.n);                                    \
        } while (0)
    /* emits: av -> shared stage at byte offset `so` (a register); the
     * addresses are recomputed from %tid.x here (a few integer operations per
     * K tile) so that they hold no registers across the FFMA loop */
    #define EMIT_SSTORE(so)                                                                \
        do {                                                                               \
            preg sti = ws_ptx_reg(b, PTX_B32), sb = ws_ptx_reg(b, PTX_B32);                      \
            I("mov.u32 %s, %%tid.x", sti.n);                                               \
            I("mov.u32 %s, smem", sb.n);                                                   \
            I("add.u32 %s, %s, %s", sb.n, sb.n, (so).n);                                   \
            if (s->chan_major) {                                                           \
                preg a = ws_ptx_reg(b, PTX_B32), c = ws_ptx_reg(b, PTX_B32);                     \
                ws_ptx_comment(b, "As[kk + e*%d][m], kk = tid / BM, m = tid %% BM", KKS);       \
                I("shr.u32 %s, %s, %d", c.n, sti.n, ilog2(T.bm));                          \
                I("and.b32 %s, %s, %d", a.n, sti.n, T.bm - 1);                             \
                I("mad.lo.u32 %s, %s, %d, %s", a.n, c.n, AS, a.n);                         \
                I("mad.lo.u32 %s, %s, 4, %s", a.n, a.n, sb.n);                             \
                for (int e = 0; e < NE; e++)                                               \
                    I("st.shared.f32 [%s+%d], %s", a.n, e * KKS * AS * 4, av[e / 4][e % 4].n); \
            }                                                                              \
            for (int j = 0; j < NA && !s->chan_major; j++) {                               \
                preg a = ws_ptx_reg(b, PTX_B32), c = ws_ptx_reg(b, PTX_B32);                     \
                ws_ptx_comment(b, "As[q*4 + e][m], m = c / (BK/4), q = c %% (BK/4)");           \
                I("add.u32 %s, %s, %d", c.n, sti.n, j * NT);                               \
                I("and.b32 %s, %s, %d", a.n, c.n, T.bk / 4 - 1);                           \
                I("shr.u32 %s, %s, %d", c.n, c.n, ilog2(T.bk / 4));                        \
                I("mad.lo.u32 %s, %s, %d, %s", a.n, a.n, 4 * AS, c.n);                     \
                I("mad.lo.u32 %s, %s, 4, %s", a.n, a.n, sb.n);                             \
                for (int e = 0; e < 4; e++)                                                \
                    I("st.shared.f32 [%s+%d], %s", a.n, e * AS * 4, av[j][e].n);           \
            }                                                                              \
        } while (0)
    /* emits: cp.async of the B tile at bg into the stage at byte offset `so`
     * (weights go to shared memory as they are, no registers), then advances */
    #define EMIT_BISSUE(so)                                                                \
        do {                                                                               \
            preg a = ws_ptx_reg(b, PTX_B32);                                                  \
            ws_ptx_comment(b, "Bs[kk][n4*4] <- w[kt*BK + kk][n0 + n4*4], chunks %d rows apart", KKB); \
            I("mov.u32 %s, %%tid.x", a.n);                                                 \
            I("shl.b32 %s, %s, 4", a.n, a.n);                                              \
            I("add.u32 %s, %s, %s", a.n, a.n, (so).n);                                     \
            I("add.u32 %s, %s, %d", a.n, a.n, A_BYTES);                                    \
            for (int j = 0; j < NB; j++) {                                                 \
                preg sa = ws_ptx_reg(b, PTX_B32);                                             \
                I("mov.u32 %s, smem", sa.n);                                               \
                I("add.u32 %s, %s, %s", sa.n, sa.n, a.n);                                  \
                I("cp.async.cg.shared.global [%s+%d], [%s+%d], 16", sa.n, j * NT * 16,     \
                  bg[0].n, j * KKB * N * 4);                                               \
            }                                                                              \
            I("cp.async.commit_group");                                                    \
            I("add.u64 %s, %s, %d", bg[0].n, bg[0].n, T.bk * N * 4);                       \
        } while (0)

    ws_ptx_section(b, "prologue: tile 0 into stage 0");
    preg cur = ws_ptx_reg(b, PTX_B32), nxt = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", cur.n);
    for (int r = 0; r < T.tm; r++)
        for (int c = 0; c < T.tn; c++)
            I("mov.f32 %s, 0f00000000", acc[r][c].n);
    EMIT_BISSUE(cur);
    EMIT_GLOAD();
    EMIT_SSTORE(cur);
    I("cp.async.wait_group 0");
    I("bar.sync 0");

    ws_ptx_section(b, "main loop over K tiles");
    plabel top = ws_ptx_label_new(b, "ktile"), noload = ws_ptx_label_new(b, "nolast");
    plabel nostore = ws_ptx_label_new(b, "nostore");
    preg more = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_label(b, top);
    I("setp.ne.u32 %s, %s, 0", more.n, left.n);
    I("sub.u32 %s, %d, %s", nxt.n, STAGE, cur.n);
    I("@!%s bra.uni %s", more.n, noload.n);
    I("sub.u32 %s, %s, 1", left.n, left.n);
    ws_ptx_comment(b, "tile kt+1: B by cp.async into the other stage, A into registers");
    EMIT_BISSUE(nxt);
    EMIT_GLOAD();
    ws_ptx_label(b, noload);
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
    I("add.u32 %s, %s, %d", rb.n, rb.n, A_BYTES);
    for (int kk = 0; kk < T.bk; kk++) {
        for (int g = 0; g < GM; g++)
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", fa[4 * g].n, fa[4 * g + 1].n,
              fa[4 * g + 2].n, fa[4 * g + 3].n, ra.n, (kk * AS + g * 4 * TY) * 4);
        for (int h = 0; h < GN; h++)
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", fb[4 * h].n, fb[4 * h + 1].n,
              fb[4 * h + 2].n, fb[4 * h + 3].n, rb.n, (kk * T.bn + h * 4 * TX) * 4);
        for (int r = 0; r < T.tm; r++)
            for (int c = 0; c < T.tn; c++)
                I("fma.rn.f32 %s, %s, %s, %s", acc[r][c].n, fa[r].n, fb[c].n, acc[r][c].n);
    }
    I("@!%s bra.uni %s", more.n, nostore.n);
    EMIT_SSTORE(nxt);
    I("cp.async.wait_group 0");
    I("mov.u32 %s, %s", cur.n, nxt.n);
    ws_ptx_label(b, nostore);
    I("bar.sync 0");
    I("@%s bra.uni %s", more.n, top.n);
    #undef EMIT_GLOAD
    #undef EMIT_SSTORE
    #undef EMIT_BISSUE

    ws_ptx_section(b, "split-K: partial sums to the workspace (p_splits > 1)");
    plabel epi = ws_ptx_label_new(b, "epilogue");
    {
        preg one = ws_ptx_reg(b, PTX_PRED), pws = ws_ptx_reg(b, PTX_B64), to3 = ws_ptx_reg(b, PTX_B32);
        preg tid3 = ws_ptx_reg(b, PTX_B32), tx3 = ws_ptx_reg(b, PTX_B32), ty3 = ws_ptx_reg(b, PTX_B32);
        preg n03 = ws_ptx_reg(b, PTX_B32), t03 = ws_ptx_reg(b, PTX_B32), zz3 = ws_ptx_reg(b, PTX_B32);
        preg sp3 = ws_ptx_reg(b, PTX_B32), base = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
        I("ld.param.u32 %s, [p_splits]", sp3.n);
        I("setp.eq.u32 %s, %s, 1", one.n, sp3.n);
        I("@%s bra.uni %s", one.n, epi.n);
        I("ld.param.u64 %s, [p_ws]", pws.n);
        I("cvta.to.global.u64 %s, %s", pws.n, pws.n);
        I("ld.param.u32 %s, [p_tout]", to3.n);
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
        for (int g = 0; g < GM; g++)
            for (int r = 0; r < 4; r++) {
                const int row = g * 4 * TY + r;
                preg t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
                I("mad.lo.u32 %s, %s, 4, %s", t.n, ty3.n, t03.n);
                I("add.u32 %s, %s, %d", t.n, t.n, row);
                I("setp.lt.u32 %s, %s, %s", ok.n, t.n, to3.n);
                I("add.u32 %s, %s, %d", u.n, base.n, row * N);
                I("mad.wide.u32 %s, %s, 4, %s", ga.n, u.n, pws.n);
                for (int h = 0; h < GN; h++)
                    I("@%s st.global.v4.f32 [%s+%d], {%s, %s, %s, %s}", ok.n, ga.n, h * 4 * TX * 4,
                      acc[4 * g + r][4 * h].n, acc[4 * g + r][4 * h + 1].n,
                      acc[4 * g + r][4 * h + 2].n, acc[4 * g + r][4 * h + 3].n);
            }
        ws_ptx_comment(b, "ws_splitk_finish adds the parts up in split order, then bias, gelu, pos");
        I("ret");
    }
    ws_ptx_label(b, epi);
    ws_ptx_section(b, "epilogue: + bias, gelu, + pos, store time-major");
    ws_ptx_comment(b, "pointers and coordinates re-read here so they hold no register in the loop");
    {
        preg pb2 = ws_ptx_reg(b, PTX_B64), pp2 = ws_ptx_reg(b, PTX_B64), py2 = ws_ptx_reg(b, PTX_B64);
        preg to2 = ws_ptx_reg(b, PTX_B32), tid2 = ws_ptx_reg(b, PTX_B32);
        I("ld.param.u64 %s, [p_bias]", pb2.n);
        I("ld.param.u64 %s, [p_pos]", pp2.n);
        I("ld.param.u64 %s, [p_y]", py2.n);
        I("ld.param.u32 %s, [p_tout]", to2.n);
        I("cvta.to.global.u64 %s, %s", pbias.n, pb2.n);
        I("cvta.to.global.u64 %s, %s", ppos.n, pp2.n);
        I("cvta.to.global.u64 %s, %s", py.n, py2.n);
        I("mov.u32 %s, %s", tout.n, to2.n);
        I("mov.u32 %s, %%tid.x", tid2.n);
        I("and.b32 %s, %s, %d", tx.n, tid2.n, TX - 1);
        I("shr.u32 %s, %s, %d", ty.n, tid2.n, ilog2(TX));
        I("mov.u32 %s, %%ctaid.x", n0.n);
        I("shl.b32 %s, %s, %d", n0.n, n0.n, ilog2(T.bn));
        I("mov.u32 %s, %%ctaid.y", t0.n);
        I("shl.b32 %s, %s, %d", t0.n, t0.n, ilog2(T.bm));
        I("ld.param.u32 %s, [p_splits]", splits.n);
        I("mov.u32 %s, %%ctaid.z", zz.n);
        I("div.u32 %s, %s, %s", win.n, zz.n, splits.n);
    }
    ws_ptx_comment(b, "bias is re-read per row (L1 hits) rather than held: registers are short here");
    preg bptr = ws_ptx_reg(b, PTX_B64);
    {
        preg col = ws_ptx_reg(b, PTX_B32);
        I("mad.lo.u32 %s, %s, 4, %s", col.n, tx.n, n0.n);
        I("mad.wide.u32 %s, %s, 4, %s", bptr.n, col.n, pbias.n);
    }
    /* out row base: (win*T_out + t0 + 4*ty) * N + n0 + 4*tx */
    preg orow = ws_ptx_reg(b, PTX_B32), tb = ws_ptx_reg(b, PTX_B32);
    I("mad.lo.u32 %s, %s, 4, %s", tb.n, ty.n, t0.n);
    I("mad.lo.u32 %s, %s, %s, %s", orow.n, win.n, tout.n, tb.n);
    preg col0 = ws_ptx_reg(b, PTX_B32);
    I("mad.lo.u32 %s, %s, 4, %s", col0.n, tx.n, n0.n);
    for (int g = 0; g < GM; g++) {
        for (int r = 0; r < 4; r++) {
            const int row = g * 4 * TY + r;     /* + 4*ty */
            preg t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), pok = ws_ptx_reg(b, PTX_PRED);
            preg oi = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64);
            preg pi = ws_ptx_reg(b, PTX_B32), pa = ws_ptx_reg(b, PTX_B64);
            I("add.u32 %s, %s, %d", t.n, tb.n, row);
            I("setp.lt.u32 %s, %s, %s", ok.n, t.n, tout.n);
            I("and.pred %s, %s, %s", pok.n, ok.n, haspos.n);
            I("add.u32 %s, %s, %d", oi.n, orow.n, row);
            I("mad.lo.u32 %s, %s, %d, %s", oi.n, oi.n, N, col0.n);
            I("mul.wide.u32 %s, %s, 4", ga.n, oi.n);
            I("add.u64 %s, %s, %s", ga.n, ga.n, py.n);
            I("mad.lo.u32 %s, %s, %d, %s", pi.n, t.n, N, col0.n);
            I("mul.wide.u32 %s, %s, 4", pa.n, pi.n);
            I("add.u64 %s, %s, %s", pa.n, pa.n, ppos.n);
            for (int h = 0; h < GN; h++) {
                preg v[4], pv[4], bs[4];
                for (int e = 0; e < 4; e++)
                    bs[e] = ws_ptx_reg(b, PTX_F32);
                I("ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+%d]", bs[0].n, bs[1].n, bs[2].n, bs[3].n,
                  bptr.n, h * 4 * TX * 4);
                for (int e = 0; e < 4; e++) {
                    v[e] = ws_ptx_reg(b, PTX_F32);
                    pv[e] = ws_ptx_reg(b, PTX_F32);
                    I("add.f32 %s, %s, %s", v[e].n, acc[4 * g + r][4 * h + e].n, bs[e].n);
                    ws_gelu_emit(b, v[e].n, v[e].n);
                }
                if (s->last) {
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
    ws_ptx_kernel_end(b, mod,
                   info->name,
                   "\t.param .u64 p_x,\n\t.param .u64 p_w,\n\t.param .u64 p_bias,\n"
                   "\t.param .u64 p_pos,\n\t.param .u64 p_y,\n\t.param .u32 p_tin,\n"
                   "\t.param .u32 p_tout,\n\t.param .u64 p_ws,\n"
                   "\t.param .u32 p_splits",
                   NT, s->cc_major >= 9 ? 2 : 0);
    return 0;
}

/* kernels_mma.c - tf32 / bf16 / fp16 conv1d + bias + exact GELU (+ pos) on
 * tensor cores: mma.sync with float32 accumulation, as an implicit GEMM
 * (contract and layouts: kernels.h).
 *
 *   D[16x8] += A[16xk] * B[kx8]   mma.sync.aligned.m16n8k16 (bf16, f16)
 *                                 mma.sync.aligned.m16n8k8  (tf32)
 * One k step is 32 bytes of a row in either case (16 halves, 8 tf32).
 * Block tile BM x BN, WM x WN warps, each warp (BM/WM) x (BN/WN) outputs as
 * MI x NI fragments of 16x8:
 *   large: 128 x 128, 2 x 4 warps (64 x 32 each, MI 4, NI 4), 256 threads
 *   small:  64 x  64, 2 x 2 warps (32 x 32 each, MI 2, NI 4), 128 threads
 * Shared memory, STAGES deep (3, or 2 where 3 would not leave room for two
 * blocks), rows of BKB bytes (128 or 64, or a whole tap's channels when
 * those are short and not a multiple of 64 bytes: 160 for 80 mels in bf16)
 * + 16 bytes of padding (the 8 row addresses of an ldmatrix then fall on 8
 * distinct 16-byte bank groups for every row size used):
 *   As[row t][BKB]  X[s*t + k - 1][i0 ..], filled by cp.async (16 bytes,
 *                   zero-fill when the row is outside [0, T_in) or t >= T_out)
 *   Bs[row o][BKB]  Bt[o][kt*BK ..] (weights packed o-major)
 * Fragments come from ldmatrix.x4 (A: rows m0 + lane%16, column half lane/16;
 * B: rows n0 + lane%8 + 8*(lane/16), column half (lane/8)%2). For tf32 an
 * 8x8 b16 matrix is 8 rows of 4 floats, which is exactly the m16n8k8 tf32
 * fragment layout, so the same addressing serves all three types; the tf32
 * inputs are pre-rounded (cvt.rna) so that mma's use of the top 19 bits is
 * exact. Pipeline: prologue issues STAGES-1 tiles; each step waits for the
 * oldest group, barriers, issues tile kt+STAGES-1 into the stage freed by
 * step kt-1, then multiplies stage kt % STAGES.
 * Epilogue: D fragment c0,c1 at row lane/4, cols 2*(lane%4) + {0,1}; c2,c3
 * 8 rows below. conv1 stores its output in the input type of conv2
 * (bf16x2 / f16x2 packed, or tf32-rounded f32); conv2 stores f32 (+ pos).
 * Tested by tests/test_gpu.c (gpu_stem::*: tf32 rel L2 <= 2e-3, bf16/fp16 <= 1e-2
 * against the float64 oracle) and tests/test_ptx.c (ptx_kernels::*, no spills).
 */
#include <stdio.h>

#include "gelu_ptx.h"
#include "kernels.h"

typedef struct { int bm, bn, wm, wn, stages; } mma_tile;

static const mma_tile TILE_LARGE = { 128, 128, 2, 4, 3 };
static const mma_tile TILE_SMALL = { 64, 64, 2, 2, 3 };

#define I(...) ws_ptx_ins(b, __VA_ARGS__)
#define MAXF 4

static int ilog2(int v)
{
    int l = 0;
    while ((1 << l) < v)
        l++;
    return l;
}

int ws_emit_conv_mma(ptx_buf *mod, const ws_conv_spec *s, ws_kernel_src *info, ws_err *err)
{
    mma_tile T = s->small ? TILE_SMALL : TILE_LARGE;
    const int es = ws_prec_elem_bytes(s->prec);
    const int C = s->cin, N = s->cout;
    /* bytes of a row per stage: 128 or 64 when they divide a tap's row; else
     * the whole tap (C = 80 in bf16: 160 bytes, 5 k steps) when it is short,
     * rather than many 32-byte stages that are mostly barrier and bookkeeping */
    const int TAPB = C * es;
    const int BKB = TAPB % 128 == 0 ? 128 : TAPB % 64 == 0 ? 64 : TAPB <= 256 ? TAPB : 32;
    const int BK = BKB / es, KT = 3 * C / BK, KSTEPS = BKB / 32;
    const int RS = BKB + 16, STAGE = (T.bm + T.bn) * RS;
    if (T.stages * STAGE > 113 * 1024)   /* keep two blocks on a multiprocessor */
        T.stages = 2;
    const int SMEM = T.stages * STAGE;
    const int NW = T.wm * T.wn, NT = 32 * NW;
    const int WTM = T.bm / T.wm, WTN = T.bn / T.wn, MI = WTM / 16, NI = WTN / 8;
    const int CPR = BKB / 16, NA = T.bm * CPR / NT, NB = T.bn * CPR / NT; /* 16-byte chunks */
    const int is_tf32 = s->prec == WS_PREC_TF32;
    const char *ab = s->prec == WS_PREC_BF16 ? "bf16" : s->prec == WS_PREC_FP16 ? "f16" : "tf32";
    if ((C * es) % 32 || N % T.bn || NA < 1 || NB < 1 || KT < T.stages - 1 || MI > MAXF ||
        T.bm * CPR % NT || T.bn * CPR % NT || NA > 8 || NB > 8 ||
        NI > MAXF || NI % 2)
        return ws_errf(err, "%s conv: unsupported shape cin %d cout %d", ab, C, N);

    snprintf(info->name, sizeof info->name, "ws_conv%d_%s_%s", s->last ? 2 : 1,
             ws_precision_name(s->prec), s->small ? "s" : "l");
    info->threads = NT;
    info->smem = SMEM;
    info->bm = T.bm;
    info->bn = T.bn;

    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    ws_ptx_raw(mod, "\n.extern .shared .align 16 .b8 smem[];\n");
    ws_ptx_comment(b, "y[t][o] = gelu(b[o] + sum_k sum_i x[%d*t + k - 1][i] * w[o][i][k])%s; "
                   "%s mma, cin %d, cout %d, tile %dx%d, %d stages of %d bytes per row",
                s->stride, s->last ? " (+ pos[t][o])" : "", ab, C, N, T.bm, T.bn, T.stages, BKB);

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
    preg haspos = ws_ptx_reg(b, PTX_PRED);
    I("setp.ne.u64 %s, %s, 0", haspos.n, ppos.n);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", pw.n, pw.n);
    I("cvta.to.global.u64 %s, %s", pbias.n, pbias.n);
    I("cvta.to.global.u64 %s, %s", ppos.n, ppos.n);
    I("cvta.to.global.u64 %s, %s", py.n, py.n);
    preg tid = ws_ptx_reg(b, PTX_B32), n0 = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32);
    preg win = ws_ptx_reg(b, PTX_B32), lane = ws_ptx_reg(b, PTX_B32), warp = ws_ptx_reg(b, PTX_B32);
    preg wm = ws_ptx_reg(b, PTX_B32), wn = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, %%ctaid.x", n0.n);
    I("shl.b32 %s, %s, %d", n0.n, n0.n, ilog2(T.bn));
    I("mov.u32 %s, %%ctaid.y", t0.n);
    I("shl.b32 %s, %s, %d", t0.n, t0.n, ilog2(T.bm));
    I("mov.u32 %s, %%ctaid.z", win.n);
    I("and.b32 %s, %s, 31", lane.n, tid.n);
    I("shr.u32 %s, %s, 5", warp.n, tid.n);
    I("and.b32 %s, %s, %d", wn.n, warp.n, T.wn - 1);
    I("shr.u32 %s, %s, %d", wm.n, warp.n, ilog2(T.wn));
    preg sbase = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, smem", sbase.n);
    preg xw = ws_ptx_reg(b, PTX_B64);
    I("mul.lo.u32 %s, %s, %s", tmp.n, win.n, tin.n);
    I("mul.wide.u32 %s, %s, %d", xw.n, tmp.n, C * es);
    I("add.u64 %s, %s, %s", xw.n, xw.n, px.n);

    ws_ptx_section(b, "per-thread cp.async addresses");
    preg arow[8], aok[8], aq[8], ast[8], bg[8], bst[8];
    for (int j = 0; j < NA; j++) {
        /* 16-byte chunk c = tid + j*NT: time row m = c / CPR, chunk q = c % CPR */
        preg c = ws_ptx_reg(b, PTX_B32), m = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32);
        preg t = ws_ptx_reg(b, PTX_B32);
        arow[j] = ws_ptx_reg(b, PTX_B32);
        aok[j] = ws_ptx_reg(b, PTX_PRED);
        aq[j] = ws_ptx_reg(b, PTX_B64);
        ast[j] = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", c.n, tid.n, j * NT);
        I("div.u32 %s, %s, %d", m.n, c.n, CPR);
        I("rem.u32 %s, %s, %d", q.n, c.n, CPR);
        I("add.u32 %s, %s, %s", t.n, t0.n, m.n);
        I("setp.lt.u32 %s, %s, %s", aok[j].n, t.n, tout.n);
        I("mad.lo.u32 %s, %s, %d, -1", arow[j].n, t.n, s->stride);
        I("mul.wide.u32 %s, %s, 16", aq[j].n, q.n);
        I("add.u64 %s, %s, %s", aq[j].n, aq[j].n, xw.n);
        I("mad.lo.u32 %s, %s, %d, %s", ast[j].n, m.n, RS, sbase.n);
        I("mad.lo.u32 %s, %s, 16, %s", ast[j].n, q.n, ast[j].n);
    }
    for (int j = 0; j < NB; j++) {
        preg c = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32);
        bg[j] = ws_ptx_reg(b, PTX_B64);
        bst[j] = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", c.n, tid.n, j * NT);
        I("div.u32 %s, %s, %d", n.n, c.n, CPR);
        I("rem.u32 %s, %s, %d", q.n, c.n, CPR);
        I("mad.lo.u32 %s, %s, %d, %s", bst[j].n, n.n, RS, sbase.n);
        I("mad.lo.u32 %s, %s, 16, %s", bst[j].n, q.n, bst[j].n);
        I("add.u32 %s, %s, %d", bst[j].n, bst[j].n, T.bm * RS);
        ws_ptx_comment(b, "Bt[n0 + n][q*16 bytes]");
        I("add.u32 %s, %s, %s", n.n, n.n, n0.n);
        I("mul.wide.u32 %s, %s, %d", bg[j].n, n.n, 3 * C * es);
        I("add.u64 %s, %s, %s", bg[j].n, bg[j].n, pw.n);
        I("mad.wide.u32 %s, %s, 16, %s", bg[j].n, q.n, bg[j].n);
    }
    ws_ptx_comment(b, "ldmatrix lane addresses (stage-relative)");
    preg alane = ws_ptx_reg(b, PTX_B32), blane = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 15", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, %d, %s", alane.n, wm.n, WTM, tmp.n);
    I("mul.lo.u32 %s, %s, %d", alane.n, alane.n, RS);
    I("shr.u32 %s, %s, 4", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, 16, %s", alane.n, tmp.n, alane.n);
    I("add.u32 %s, %s, %s", alane.n, alane.n, sbase.n);
    preg t2 = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 7", tmp.n, lane.n);
    I("shr.u32 %s, %s, 4", t2.n, lane.n);
    I("mad.lo.u32 %s, %s, 8, %s", tmp.n, t2.n, tmp.n);
    I("mad.lo.u32 %s, %s, %d, %s", blane.n, wn.n, WTN, tmp.n);
    I("mul.lo.u32 %s, %s, %d", blane.n, blane.n, RS);
    I("shr.u32 %s, %s, 3", t2.n, lane.n);
    I("and.b32 %s, %s, 1", t2.n, t2.n);
    I("mad.lo.u32 %s, %s, 16, %s", blane.n, t2.n, blane.n);
    I("add.u32 %s, %s, %d", blane.n, blane.n, T.bm * RS);
    I("add.u32 %s, %s, %s", blane.n, blane.n, sbase.n);

    preg lk = ws_ptx_reg(b, PTX_B32), li0 = ws_ptx_reg(b, PTX_B32), wst = ws_ptx_reg(b, PTX_B32);
    preg rst = ws_ptx_reg(b, PTX_B32), kt = ws_ptx_reg(b, PTX_B32);
    preg acc[MAXF][MAXF][4];
    for (int mi = 0; mi < MI; mi++)
        for (int ni = 0; ni < NI; ni++)
            for (int e = 0; e < 4; e++)
                acc[mi][ni][e] = ws_ptx_reg(b, PTX_F32);
    preg fa[MAXF][4], fb[MAXF][2];
    for (int mi = 0; mi < MI; mi++)
        for (int e = 0; e < 4; e++)
            fa[mi][e] = ws_ptx_reg(b, PTX_B32);
    for (int ni = 0; ni < NI; ni++)
        for (int e = 0; e < 2; e++)
            fb[ni][e] = ws_ptx_reg(b, PTX_B32);

    /* emits: cp.async of tile (lk, li0) into the stage at byte offset wst, then advances */
    #define EMIT_ISSUE()                                                                      \
        do {                                                                                  \
            for (int j = 0; j < NA; j++) {                                                    \
                preg row = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B32);                    \
                preg ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);                     \
                preg sz = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32);                      \
                I("add.u32 %s, %s, %s", row.n, arow[j].n, lk.n);                              \
                I("setp.lt.u32 %s, %s, %s", ok.n, row.n, tin.n);                              \
                I("and.pred %s, %s, %s", ok.n, ok.n, aok[j].n);                               \
                I("mad.lo.u32 %s, %s, %d, %s", off.n, row.n, C, li0.n);                       \
                I("selp.u32 %s, %s, 0, %s", off.n, off.n, ok.n);                              \
                I("selp.u32 %s, 16, 0, %s", sz.n, ok.n);                                      \
                I("mad.wide.u32 %s, %s, %d, %s", ga.n, off.n, es, aq[j].n);                   \
                I("add.u32 %s, %s, %s", sa.n, ast[j].n, wst.n);                               \
                I("cp.async.cg.shared.global [%s], [%s], 16, %s", sa.n, ga.n, sz.n);          \
            }                                                                                 \
            for (int j = 0; j < NB; j++) {                                                    \
                preg sa = ws_ptx_reg(b, PTX_B32);                                                \
                I("add.u32 %s, %s, %s", sa.n, bst[j].n, wst.n);                               \
                I("cp.async.cg.shared.global [%s], [%s], 16", sa.n, bg[j].n);                 \
                I("add.u64 %s, %s, %d", bg[j].n, bg[j].n, BKB);                               \
            }                                                                                 \
            preg wrap = ws_ptx_reg(b, PTX_PRED);                                                 \
            I("add.u32 %s, %s, %d", li0.n, li0.n, BK);                                        \
            I("setp.eq.u32 %s, %s, %d", wrap.n, li0.n, C);                                    \
            I("selp.u32 %s, 0, %s, %s", li0.n, li0.n, wrap.n);                                \
            I("selp.u32 %s, 1, 0, %s", tmp.n, wrap.n);                                        \
            I("add.u32 %s, %s, %s", lk.n, lk.n, tmp.n);                                       \
            I("add.u32 %s, %s, %d", wst.n, wst.n, STAGE);                                     \
            I("setp.eq.u32 %s, %s, %d", wrap.n, wst.n, SMEM);                                 \
            I("selp.u32 %s, 0, %s, %s", wst.n, wst.n, wrap.n);                                \
        } while (0)

    ws_ptx_section(b, "prologue: stages 0 .. STAGES-2");
    I("mov.u32 %s, 0", lk.n);
    I("mov.u32 %s, 0", li0.n);
    I("mov.u32 %s, 0", wst.n);
    I("mov.u32 %s, 0", rst.n);
    I("mov.u32 %s, 0", kt.n);
    for (int mi = 0; mi < MI; mi++)
        for (int ni = 0; ni < NI; ni++)
            for (int e = 0; e < 4; e++)
                I("mov.f32 %s, 0f00000000", acc[mi][ni][e].n);
    for (int st = 0; st < T.stages - 1; st++) {
        EMIT_ISSUE();
        I("cp.async.commit_group");
    }

    ws_ptx_section(b, "main loop over K tiles");
    plabel top = ws_ptx_label_new(b, "ktile"), noissue = ws_ptx_label_new(b, "noissue");
    preg more = ws_ptx_reg(b, PTX_PRED), issue = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_label(b, top);
    I("cp.async.wait_group %d", T.stages - 2);
    I("bar.sync 0");
    I("setp.lt.u32 %s, %s, %d", issue.n, kt.n, KT - (T.stages - 1));
    I("@!%s bra.uni %s", issue.n, noissue.n);
    ws_ptx_comment(b, "tile kt + %d into the stage step kt-1 used", T.stages - 1);
    EMIT_ISSUE();
    ws_ptx_label(b, noissue);
    I("cp.async.commit_group");
    preg ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32);
    I("add.u32 %s, %s, %s", ra.n, alane.n, rst.n);
    I("add.u32 %s, %s, %s", rb.n, blane.n, rst.n);
    for (int ks = 0; ks < KSTEPS; ks++) {
        ws_ptx_comment(b, "k step %d: fragments, then %d mma", ks, MI * NI);
        for (int mi = 0; mi < MI; mi++)
            I("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d]", fa[mi][0].n,
              fa[mi][1].n, fa[mi][2].n, fa[mi][3].n, ra.n, mi * 16 * RS + ks * 32);
        for (int nj = 0; nj < NI / 2; nj++)
            I("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d]",
              fb[2 * nj][0].n, fb[2 * nj][1].n, fb[2 * nj + 1][0].n, fb[2 * nj + 1][1].n, rb.n,
              nj * 16 * RS + ks * 32);
        for (int mi = 0; mi < MI; mi++)
            for (int ni = 0; ni < NI; ni++)
                I("mma.sync.aligned.%s.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, {%s, %s, %s, %s}, "
                  "{%s, %s}, {%s, %s, %s, %s}",
                  is_tf32 ? "m16n8k8" : "m16n8k16", ab, ab, acc[mi][ni][0].n, acc[mi][ni][1].n,
                  acc[mi][ni][2].n, acc[mi][ni][3].n, fa[mi][0].n, fa[mi][1].n, fa[mi][2].n,
                  fa[mi][3].n, fb[ni][0].n, fb[ni][1].n, acc[mi][ni][0].n, acc[mi][ni][1].n,
                  acc[mi][ni][2].n, acc[mi][ni][3].n);
    }
    I("add.u32 %s, %s, %d", rst.n, rst.n, STAGE);
    I("setp.eq.u32 %s, %s, %d", more.n, rst.n, SMEM);
    I("selp.u32 %s, 0, %s, %s", rst.n, rst.n, more.n);
    I("add.u32 %s, %s, 1", kt.n, kt.n);
    I("setp.lt.u32 %s, %s, %d", more.n, kt.n, KT);
    I("@%s bra.uni %s", more.n, top.n);
    I("cp.async.wait_group 0");
    #undef EMIT_ISSUE

    ws_ptx_section(b, "epilogue: + bias, gelu, + pos, store time-major");
    /* columns of this lane: n0 + wn*WTN + ni*8 + 2*(lane%4) */
    preg col0 = ws_ptx_reg(b, PTX_B32), rowl = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 3", tmp.n, lane.n);
    I("shl.b32 %s, %s, 1", tmp.n, tmp.n);
    I("mad.lo.u32 %s, %s, %d, %s", col0.n, wn.n, WTN, tmp.n);
    I("add.u32 %s, %s, %s", col0.n, col0.n, n0.n);
    preg bias[MAXF][2];
    for (int ni = 0; ni < NI; ni++) {
        preg ga = ws_ptx_reg(b, PTX_B64);
        bias[ni][0] = ws_ptx_reg(b, PTX_F32);
        bias[ni][1] = ws_ptx_reg(b, PTX_F32);
        I("mad.wide.u32 %s, %s, 4, %s", ga.n, col0.n, pbias.n);
        I("ld.global.nc.v2.f32 {%s, %s}, [%s+%d]", bias[ni][0].n, bias[ni][1].n, ga.n, ni * 32);
    }
    /* rows: t0 + wm*WTM + mi*16 + lane/4 + 8*half */
    I("shr.u32 %s, %s, 2", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, %d, %s", rowl.n, wm.n, WTM, tmp.n);
    I("add.u32 %s, %s, %s", rowl.n, rowl.n, t0.n);
    const int oes = s->last ? 4 : es;   /* output element bytes */
    for (int mi = 0; mi < MI; mi++) {
        for (int half = 0; half < 2; half++) {
            preg t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), pok = ws_ptx_reg(b, PTX_PRED);
            preg oi = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64);
            I("add.u32 %s, %s, %d", t.n, rowl.n, mi * 16 + half * 8);
            I("setp.lt.u32 %s, %s, %s", ok.n, t.n, tout.n);
            I("mad.lo.u32 %s, %s, %s, %s", oi.n, win.n, tout.n, t.n);
            I("mad.lo.u32 %s, %s, %d, %s", oi.n, oi.n, N, col0.n);
            I("mul.wide.u32 %s, %s, %d", ga.n, oi.n, oes);
            I("add.u64 %s, %s, %s", ga.n, ga.n, py.n);
            preg pa = ws_ptx_reg(b, PTX_B64);
            if (s->last) {
                preg pi = ws_ptx_reg(b, PTX_B32);
                I("and.pred %s, %s, %s", pok.n, ok.n, haspos.n);
                I("mad.lo.u32 %s, %s, %d, %s", pi.n, t.n, N, col0.n);
                I("mul.wide.u32 %s, %s, 4", pa.n, pi.n);
                I("add.u64 %s, %s, %s", pa.n, pa.n, ppos.n);
            }
            for (int ni = 0; ni < NI; ni++) {
                preg v0 = ws_ptx_reg(b, PTX_F32), v1 = ws_ptx_reg(b, PTX_F32);
                I("add.f32 %s, %s, %s", v0.n, acc[mi][ni][2 * half].n, bias[ni][0].n);
                I("add.f32 %s, %s, %s", v1.n, acc[mi][ni][2 * half + 1].n, bias[ni][1].n);
                ws_gelu_emit(b, v0.n, v0.n);
                ws_gelu_emit(b, v1.n, v1.n);
                if (s->last) {
                    preg p0 = ws_ptx_reg(b, PTX_F32), p1 = ws_ptx_reg(b, PTX_F32);
                    I("mov.f32 %s, 0f00000000", p0.n);
                    I("mov.f32 %s, 0f00000000", p1.n);
                    I("@%s ld.global.nc.v2.f32 {%s, %s}, [%s+%d]", pok.n, p0.n, p1.n, pa.n, ni * 32);
                    I("add.f32 %s, %s, %s", v0.n, v0.n, p0.n);
                    I("add.f32 %s, %s, %s", v1.n, v1.n, p1.n);
                    I("@%s st.global.v2.f32 [%s+%d], {%s, %s}", ok.n, ga.n, ni * 32, v0.n, v1.n);
                } else if (is_tf32) {
                    preg r0 = ws_ptx_reg(b, PTX_B32), r1 = ws_ptx_reg(b, PTX_B32);
                    I("cvt.rna.tf32.f32 %s, %s", r0.n, v0.n);
                    I("cvt.rna.tf32.f32 %s, %s", r1.n, v1.n);
                    I("@%s st.global.v2.b32 [%s+%d], {%s, %s}", ok.n, ga.n, ni * 32, r0.n, r1.n);
                } else {
                    preg pk = ws_ptx_reg(b, PTX_B32);
                    I("cvt.rn.%sx2.f32 %s, %s, %s", ab, pk.n, v1.n, v0.n);
                    I("@%s st.global.b32 [%s+%d], %s", ok.n, ga.n, ni * 8 * es, pk.n);
                }
            }
        }
    }
    I("ret");
    ws_ptx_kernel_end(b, mod, info->name,
                   "\t.param .u64 p_x,\n\t.param .u64 p_w,\n\t.param .u64 p_bias,\n"
                   "\t.param .u64 p_pos,\n\t.param .u64 p_y,\n\t.param .u32 p_tin,\n"
                   "\t.param .u32 p_tout",
                   NT, 2);
    return 0;
}

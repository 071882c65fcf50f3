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
 * Emitter: small static functions over the kernel being written (mk), each
 * headed by the pseudo-C of what it emits, called in listing order; register
 * numbers follow the order of allocation, so that order is part of the text.
 * Tested by tests/test_gpu.c (gpu_stem::*: tf32 rel L2 <= 2e-3, bf16/fp16 <= 1e-2
 * against the float64 oracle) and tests/test_ptx.c (ptx_kernels::*, no spills).
 */
#include <stdio.h>

#include "gelu_ptx.h"
#include "kernels.h"
#include "ptx_params.h"

typedef struct { int bm, bn, wm, wn, stages; } mma_tile;

static const mma_tile TILE_LARGE = { 128, 128, 2, 4, 3 };
static const mma_tile TILE_SMALL = { 64, 64, 2, 2, 3 };

#define I(...) ws_ptx_ins(b, __VA_ARGS__)

/* ld.param.<type> r, [<name>] of the conv's parameter i (ptx_params.h's
 * WS_PARAMS_STEM_CONV_MMA) */
static void ld_param(ptx_buf *b, preg r, int i)
{
    ws_ptx_ld_param(b, r, ws_params_of(WS_PARAMS_STEM_CONV_MMA), i);
}
#define MAXF 4

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
    mma_tile T;
    int es;           /* bytes of an input element: 2, or 4 (tf32) */
    int C, N;         /* Cin, Cout */
    int BKB, BK, KT;  /* bytes and elements of a row per stage, K tiles */
    int KSTEPS;       /* k steps (32 bytes of a row) per stage */
    int RS, STAGE, SMEM; /* shared row stride, bytes of a stage, of all stages */
    int NT;           /* threads */
    int WTM, WTN;     /* outputs of a warp: rows, columns */
    int MI, NI;       /* 16x8 fragments of a warp: rows, columns */
    int CPR, NA, NB;  /* 16-byte chunks of a row; chunks per thread of A, of B */
    int is_tf32;
    const char *ab;   /* "bf16", "f16" or "tf32" */
    /* parameters and block coordinates */
    preg pw, pbias, ppos, py, tin, tout, haspos;
    preg tid, n0, t0, win, lane, wm, wn, tmp;
    preg sbase;       /* smem */
    preg xw;          /* &x[win][0][0] */
    /* per-thread cp.async addresses */
    preg arow[8];     /* input row of tap 0: stride*t - 1 */
    preg aok[8];      /* t < T_out */
    preg aq[8];       /* &xw[16 bytes * chunk] */
    preg ast[8];      /* &As[m][16 bytes * chunk] of stage 0 */
    preg bg[8];       /* &Bt[n0 + n][16 bytes * chunk] of the next tile */
    preg bst[8];      /* &Bs[n][16 bytes * chunk] of stage 0 */
    preg alane, blane; /* ldmatrix lane addresses of stage 0 */
    preg lk, li0, wst; /* tap, channel offset and stage byte offset of the next tile issued */
    preg rst, kt;     /* stage byte offset and index of the tile multiplied */
    preg acc[MAXF][MAXF][4]; /* MI x NI D fragments */
    preg fa[MAXF][4], fb[MAXF][2]; /* one k step's A and B fragments */
} mk;

/* parameters, cvta'd; tid, n0 = ctaid.x*BN, t0 = ctaid.y*BM, win = ctaid.z, lane, wm, wn;
 * sbase = smem; xw = &x[win*T_in*C] */
static void emit_coords(mk *k)
{
    ptx_buf *b = k->b;
    const mma_tile T = k->T;
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
    k->haspos = ws_ptx_reg(b, PTX_PRED);
    I("setp.ne.u64 %s, %s, 0", k->haspos.n, k->ppos.n);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", k->pw.n, k->pw.n);
    I("cvta.to.global.u64 %s, %s", k->pbias.n, k->pbias.n);
    I("cvta.to.global.u64 %s, %s", k->ppos.n, k->ppos.n);
    I("cvta.to.global.u64 %s, %s", k->py.n, k->py.n);
    k->tid = ws_ptx_reg(b, PTX_B32);
    k->n0 = ws_ptx_reg(b, PTX_B32);
    k->t0 = ws_ptx_reg(b, PTX_B32);
    k->win = ws_ptx_reg(b, PTX_B32);
    k->lane = ws_ptx_reg(b, PTX_B32);
    preg warp = ws_ptx_reg(b, PTX_B32);
    k->wm = ws_ptx_reg(b, PTX_B32);
    k->wn = ws_ptx_reg(b, PTX_B32);
    k->tmp = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", k->tid.n);
    I("mov.u32 %s, %%ctaid.x", k->n0.n);
    I("shl.b32 %s, %s, %d", k->n0.n, k->n0.n, ilog2(T.bn));
    I("mov.u32 %s, %%ctaid.y", k->t0.n);
    I("shl.b32 %s, %s, %d", k->t0.n, k->t0.n, ilog2(T.bm));
    I("mov.u32 %s, %%ctaid.z", k->win.n);
    I("and.b32 %s, %s, 31", k->lane.n, k->tid.n);
    I("shr.u32 %s, %s, 5", warp.n, k->tid.n);
    I("and.b32 %s, %s, %d", k->wn.n, warp.n, T.wn - 1);
    I("shr.u32 %s, %s, %d", k->wm.n, warp.n, ilog2(T.wn));
    k->sbase = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, smem", k->sbase.n);
    k->xw = ws_ptx_reg(b, PTX_B64);
    I("mul.lo.u32 %s, %s, %s", k->tmp.n, k->win.n, k->tin.n);
    I("mul.wide.u32 %s, %s, %d", k->xw.n, k->tmp.n, k->C * k->es);
    I("add.u64 %s, %s, %s", k->xw.n, k->xw.n, px.n);
}

/* chunk c = tid + j*NT: m = c/CPR, q = c%CPR, t = t0 + m; aok[j] = t < T_out;
 * arow[j] = stride*t - 1; aq[j] = xw + 16q; ast[j] = &As[m][16q] */
static void emit_a_address(mk *k, int j)
{
    ptx_buf *b = k->b;
    preg c = ws_ptx_reg(b, PTX_B32), m = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32);
    preg t = ws_ptx_reg(b, PTX_B32);
    k->arow[j] = ws_ptx_reg(b, PTX_B32);
    k->aok[j] = ws_ptx_reg(b, PTX_PRED);
    k->aq[j] = ws_ptx_reg(b, PTX_B64);
    k->ast[j] = ws_ptx_reg(b, PTX_B32);
    I("add.u32 %s, %s, %d", c.n, k->tid.n, j * k->NT);
    I("div.u32 %s, %s, %d", m.n, c.n, k->CPR);
    I("rem.u32 %s, %s, %d", q.n, c.n, k->CPR);
    I("add.u32 %s, %s, %s", t.n, k->t0.n, m.n);
    I("setp.lt.u32 %s, %s, %s", k->aok[j].n, t.n, k->tout.n);
    I("mad.lo.u32 %s, %s, %d, -1", k->arow[j].n, t.n, k->s->stride);
    I("mul.wide.u32 %s, %s, 16", k->aq[j].n, q.n);
    I("add.u64 %s, %s, %s", k->aq[j].n, k->aq[j].n, k->xw.n);
    I("mad.lo.u32 %s, %s, %d, %s", k->ast[j].n, m.n, k->RS, k->sbase.n);
    I("mad.lo.u32 %s, %s, 16, %s", k->ast[j].n, q.n, k->ast[j].n);
}

/* chunk c = tid + j*NT: n = c/CPR, q = c%CPR; bst[j] = &Bs[n][16q];
 * bg[j] = &Bt[n0 + n][16q] (tile 0) */
static void emit_b_address(mk *k, int j)
{
    ptx_buf *b = k->b;
    preg c = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32);
    k->bg[j] = ws_ptx_reg(b, PTX_B64);
    k->bst[j] = ws_ptx_reg(b, PTX_B32);
    I("add.u32 %s, %s, %d", c.n, k->tid.n, j * k->NT);
    I("div.u32 %s, %s, %d", n.n, c.n, k->CPR);
    I("rem.u32 %s, %s, %d", q.n, c.n, k->CPR);
    I("mad.lo.u32 %s, %s, %d, %s", k->bst[j].n, n.n, k->RS, k->sbase.n);
    I("mad.lo.u32 %s, %s, 16, %s", k->bst[j].n, q.n, k->bst[j].n);
    I("add.u32 %s, %s, %d", k->bst[j].n, k->bst[j].n, k->T.bm * k->RS);
    ws_ptx_comment(b, "Bt[n0 + n][q*16 bytes]");
    I("add.u32 %s, %s, %s", n.n, n.n, k->n0.n);
    I("mul.wide.u32 %s, %s, %d", k->bg[j].n, n.n, 3 * k->C * k->es);
    I("add.u64 %s, %s, %s", k->bg[j].n, k->bg[j].n, k->pw.n);
    I("mad.wide.u32 %s, %s, 16, %s", k->bg[j].n, q.n, k->bg[j].n);
}

/* alane = &As[wm*WTM + lane%16][16*(lane/16)];
 * blane = &Bs[wn*WTN + lane%8 + 8*(lane/16)][16*((lane/8)%2)] (stage 0) */
static void emit_lane_addresses(mk *k)
{
    ptx_buf *b = k->b;
    const int RS = k->RS;
    preg tmp = k->tmp, lane = k->lane;
    ws_ptx_comment(b, "ldmatrix lane addresses (stage-relative)");
    k->alane = ws_ptx_reg(b, PTX_B32);
    k->blane = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 15", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, %d, %s", k->alane.n, k->wm.n, k->WTM, tmp.n);
    I("mul.lo.u32 %s, %s, %d", k->alane.n, k->alane.n, RS);
    I("shr.u32 %s, %s, 4", tmp.n, lane.n);
    I("mad.lo.u32 %s, %s, 16, %s", k->alane.n, tmp.n, k->alane.n);
    I("add.u32 %s, %s, %s", k->alane.n, k->alane.n, k->sbase.n);
    preg t2 = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 7", tmp.n, lane.n);
    I("shr.u32 %s, %s, 4", t2.n, lane.n);
    I("mad.lo.u32 %s, %s, 8, %s", tmp.n, t2.n, tmp.n);
    I("mad.lo.u32 %s, %s, %d, %s", k->blane.n, k->wn.n, k->WTN, tmp.n);
    I("mul.lo.u32 %s, %s, %d", k->blane.n, k->blane.n, RS);
    I("shr.u32 %s, %s, 3", t2.n, lane.n);
    I("and.b32 %s, %s, 1", t2.n, t2.n);
    I("mad.lo.u32 %s, %s, 16, %s", k->blane.n, t2.n, k->blane.n);
    I("add.u32 %s, %s, %d", k->blane.n, k->blane.n, k->T.bm * RS);
    I("add.u32 %s, %s, %s", k->blane.n, k->blane.n, k->sbase.n);
}

/* (no text) the pipeline counters, the accumulators and one k step's fragments */
static void alloc_tiles(mk *k)
{
    ptx_buf *b = k->b;
    k->lk = ws_ptx_reg(b, PTX_B32);
    k->li0 = ws_ptx_reg(b, PTX_B32);
    k->wst = ws_ptx_reg(b, PTX_B32);
    k->rst = ws_ptx_reg(b, PTX_B32);
    k->kt = ws_ptx_reg(b, PTX_B32);
    for (int mi = 0; mi < k->MI; mi++)
        for (int ni = 0; ni < k->NI; ni++)
            for (int e = 0; e < 4; e++)
                k->acc[mi][ni][e] = ws_ptx_reg(b, PTX_F32);
    for (int mi = 0; mi < k->MI; mi++)
        for (int e = 0; e < 4; e++)
            k->fa[mi][e] = ws_ptx_reg(b, PTX_B32);
    for (int ni = 0; ni < k->NI; ni++)
        for (int e = 0; e < 2; e++)
            k->fb[ni][e] = ws_ptx_reg(b, PTX_B32);
}

/* cp.async As[wst][m][16q] <- ok ? x[arow[j] + lk][li0 ..] : zeros (16 bytes), j < NA */
static void emit_issue_a(mk *k, int j)
{
    ptx_buf *b = k->b;
    preg row = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
    preg sz = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32);
    I("add.u32 %s, %s, %s", row.n, k->arow[j].n, k->lk.n);
    I("setp.lt.u32 %s, %s, %s", ok.n, row.n, k->tin.n);
    I("and.pred %s, %s, %s", ok.n, ok.n, k->aok[j].n);
    I("mad.lo.u32 %s, %s, %d, %s", off.n, row.n, k->C, k->li0.n);
    I("selp.u32 %s, %s, 0, %s", off.n, off.n, ok.n);
    I("selp.u32 %s, 16, 0, %s", sz.n, ok.n);
    I("mad.wide.u32 %s, %s, %d, %s", ga.n, off.n, k->es, k->aq[j].n);
    I("add.u32 %s, %s, %s", sa.n, k->ast[j].n, k->wst.n);
    I("cp.async.cg.shared.global [%s], [%s], 16, %s", sa.n, ga.n, sz.n);
}

/* tile (lk, li0) by cp.async into the stage at byte offset wst: A chunks, then
 * Bs[wst][n][16q] <- bg[j], bg[j] += BKB; li0 += BK (wrapping into lk++);
 * wst = (wst + STAGE) % SMEM */
static void emit_issue(mk *k)
{
    ptx_buf *b = k->b;
    for (int j = 0; j < k->NA; j++)
        emit_issue_a(k, j);
    for (int j = 0; j < k->NB; j++) {
        preg sa = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", sa.n, k->bst[j].n, k->wst.n);
        I("cp.async.cg.shared.global [%s], [%s], 16", sa.n, k->bg[j].n);
        I("add.u64 %s, %s, %d", k->bg[j].n, k->bg[j].n, k->BKB);
    }
    preg wrap = ws_ptx_reg(b, PTX_PRED);
    I("add.u32 %s, %s, %d", k->li0.n, k->li0.n, k->BK);
    I("setp.eq.u32 %s, %s, %d", wrap.n, k->li0.n, k->C);
    I("selp.u32 %s, 0, %s, %s", k->li0.n, k->li0.n, wrap.n);
    I("selp.u32 %s, 1, 0, %s", k->tmp.n, wrap.n);
    I("add.u32 %s, %s, %s", k->lk.n, k->lk.n, k->tmp.n);
    I("add.u32 %s, %s, %d", k->wst.n, k->wst.n, k->STAGE);
    I("setp.eq.u32 %s, %s, %d", wrap.n, k->wst.n, k->SMEM);
    I("selp.u32 %s, 0, %s, %s", k->wst.n, k->wst.n, wrap.n);
}

/* fa[mi] = ldmatrix.x4(ra + mi*16 rows + ks*32); fb[2nj], fb[2nj+1] = ldmatrix.x4(rb ..);
 * acc[mi][ni] = mma(fa[mi], fb[ni], acc[mi][ni]) */
static void emit_kstep(mk *k, preg ra, preg rb, int ks)
{
    ptx_buf *b = k->b;
    const int RS = k->RS, MI = k->MI, NI = k->NI;
    const char *ab = k->ab;
    ws_ptx_comment(b, "k step %d: fragments, then %d mma", ks, MI * NI);
    for (int mi = 0; mi < MI; mi++)
        I("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d]", k->fa[mi][0].n,
          k->fa[mi][1].n, k->fa[mi][2].n, k->fa[mi][3].n, ra.n, mi * 16 * RS + ks * 32);
    for (int nj = 0; nj < NI / 2; nj++)
        I("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s+%d]",
          k->fb[2 * nj][0].n, k->fb[2 * nj][1].n, k->fb[2 * nj + 1][0].n, k->fb[2 * nj + 1][1].n,
          rb.n, nj * 16 * RS + ks * 32);
    for (int mi = 0; mi < MI; mi++)
        for (int ni = 0; ni < NI; ni++) {
            preg *d = k->acc[mi][ni], *fa = k->fa[mi], *fb = k->fb[ni];
            I("mma.sync.aligned.%s.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, {%s, %s, %s, %s}, "
              "{%s, %s}, {%s, %s, %s, %s}",
              k->is_tf32 ? "m16n8k8" : "m16n8k16", ab, ab, d[0].n, d[1].n, d[2].n, d[3].n,
              fa[0].n, fa[1].n, fa[2].n, fa[3].n, fb[0].n, fb[1].n, d[0].n, d[1].n, d[2].n,
              d[3].n);
        }
}

/* acc = 0; issue tiles 0 .. STAGES-2; for (kt < KT) { wait for tile kt; barrier;
 * issue tile kt+STAGES-1 (if any); multiply stage rst } */
static void emit_main_loop(mk *k)
{
    ptx_buf *b = k->b;
    const int stages = k->T.stages;
    ws_ptx_section(b, "prologue: stages 0 .. STAGES-2");
    I("mov.u32 %s, 0", k->lk.n);
    I("mov.u32 %s, 0", k->li0.n);
    I("mov.u32 %s, 0", k->wst.n);
    I("mov.u32 %s, 0", k->rst.n);
    I("mov.u32 %s, 0", k->kt.n);
    for (int mi = 0; mi < k->MI; mi++)
        for (int ni = 0; ni < k->NI; ni++)
            for (int e = 0; e < 4; e++)
                I("mov.f32 %s, 0f00000000", k->acc[mi][ni][e].n);
    for (int st = 0; st < stages - 1; st++) {
        emit_issue(k);
        I("cp.async.commit_group");
    }

    ws_ptx_section(b, "main loop over K tiles");
    plabel top = ws_ptx_label_new(b, "ktile"), noissue = ws_ptx_label_new(b, "noissue");
    preg more = ws_ptx_reg(b, PTX_PRED), issue = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_label(b, top);
    I("cp.async.wait_group %d", stages - 2);
    I("bar.sync 0");
    I("setp.lt.u32 %s, %s, %d", issue.n, k->kt.n, k->KT - (stages - 1));
    I("@!%s bra.uni %s", issue.n, noissue.n);
    ws_ptx_comment(b, "tile kt + %d into the stage step kt-1 used", stages - 1);
    emit_issue(k);
    ws_ptx_label(b, noissue);
    I("cp.async.commit_group");
    preg ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32);
    I("add.u32 %s, %s, %s", ra.n, k->alane.n, k->rst.n);
    I("add.u32 %s, %s, %s", rb.n, k->blane.n, k->rst.n);
    for (int ks = 0; ks < k->KSTEPS; ks++)
        emit_kstep(k, ra, rb, ks);
    I("add.u32 %s, %s, %d", k->rst.n, k->rst.n, k->STAGE);
    I("setp.eq.u32 %s, %s, %d", more.n, k->rst.n, k->SMEM);
    I("selp.u32 %s, 0, %s, %s", k->rst.n, k->rst.n, more.n);
    I("add.u32 %s, %s, 1", k->kt.n, k->kt.n);
    I("setp.lt.u32 %s, %s, %d", more.n, k->kt.n, k->KT);
    I("@%s bra.uni %s", more.n, top.n);
    I("cp.async.wait_group 0");
}

/* the pair v0, v1 of fragment column ni to the output row at ga:
 *   conv2: ga[2ni*4 ..] = {v0, v1} + (pok ? pos[pa ..] : 0)   (f32)
 *   conv1: ga[ni*8 ..] = cvt(v0, v1)   (tf32-rounded f32, or bf16x2 / f16x2 packed) */
static void emit_store_pair(mk *k, int ni, preg v0, preg v1, preg ok, preg pok, preg ga, preg pa)
{
    ptx_buf *b = k->b;
    if (k->s->last) {
        preg p0 = ws_ptx_reg(b, PTX_F32), p1 = ws_ptx_reg(b, PTX_F32);
        I("mov.f32 %s, 0f00000000", p0.n);
        I("mov.f32 %s, 0f00000000", p1.n);
        I("@%s ld.global.nc.v2.f32 {%s, %s}, [%s+%d]", pok.n, p0.n, p1.n, pa.n, ni * 32);
        I("add.f32 %s, %s, %s", v0.n, v0.n, p0.n);
        I("add.f32 %s, %s, %s", v1.n, v1.n, p1.n);
        I("@%s st.global.v2.f32 [%s+%d], {%s, %s}", ok.n, ga.n, ni * 32, v0.n, v1.n);
    } else if (k->is_tf32) {
        preg r0 = ws_ptx_reg(b, PTX_B32), r1 = ws_ptx_reg(b, PTX_B32);
        I("cvt.rna.tf32.f32 %s, %s", r0.n, v0.n);
        I("cvt.rna.tf32.f32 %s, %s", r1.n, v1.n);
        I("@%s st.global.v2.b32 [%s+%d], {%s, %s}", ok.n, ga.n, ni * 32, r0.n, r1.n);
    } else {
        preg pk = ws_ptx_reg(b, PTX_B32);
        I("cvt.rn.%sx2.f32 %s, %s, %s", k->ab, pk.n, v1.n, v0.n);
        I("@%s st.global.b32 [%s+%d], %s", ok.n, ga.n, ni * 8 * k->es, pk.n);
    }
}

/* y[win][t][o] = gelu(acc + b[o]) (+ pos[t][o]) for the lane's rows
 * t0 + wm*WTM + mi*16 + lane/4 + 8*half < T_out, columns n0 + wn*WTN + ni*8 + 2*(lane%4) + {0,1} */
static void emit_epilogue(mk *k)
{
    ptx_buf *b = k->b;
    const ws_conv_spec *s = k->s;
    const int NI = k->NI;
    preg tmp = k->tmp;
    ws_ptx_section(b, "epilogue: + bias, gelu, + pos, store time-major");
    /* columns of this lane: n0 + wn*WTN + ni*8 + 2*(lane%4) */
    preg col0 = ws_ptx_reg(b, PTX_B32), rowl = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 3", tmp.n, k->lane.n);
    I("shl.b32 %s, %s, 1", tmp.n, tmp.n);
    I("mad.lo.u32 %s, %s, %d, %s", col0.n, k->wn.n, k->WTN, tmp.n);
    I("add.u32 %s, %s, %s", col0.n, col0.n, k->n0.n);
    preg bias[MAXF][2];
    for (int ni = 0; ni < NI; ni++) {
        preg ga = ws_ptx_reg(b, PTX_B64);
        bias[ni][0] = ws_ptx_reg(b, PTX_F32);
        bias[ni][1] = ws_ptx_reg(b, PTX_F32);
        I("mad.wide.u32 %s, %s, 4, %s", ga.n, col0.n, k->pbias.n);
        I("ld.global.nc.v2.f32 {%s, %s}, [%s+%d]", bias[ni][0].n, bias[ni][1].n, ga.n, ni * 32);
    }
    /* rows: t0 + wm*WTM + mi*16 + lane/4 + 8*half */
    I("shr.u32 %s, %s, 2", tmp.n, k->lane.n);
    I("mad.lo.u32 %s, %s, %d, %s", rowl.n, k->wm.n, k->WTM, tmp.n);
    I("add.u32 %s, %s, %s", rowl.n, rowl.n, k->t0.n);
    const int oes = s->last ? 4 : k->es;   /* output element bytes */
    for (int mi = 0; mi < k->MI; mi++) {
        for (int half = 0; half < 2; half++) {
            preg t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), pok = ws_ptx_reg(b, PTX_PRED);
            preg oi = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64);
            I("add.u32 %s, %s, %d", t.n, rowl.n, mi * 16 + half * 8);
            I("setp.lt.u32 %s, %s, %s", ok.n, t.n, k->tout.n);
            I("mad.lo.u32 %s, %s, %s, %s", oi.n, k->win.n, k->tout.n, t.n);
            I("mad.lo.u32 %s, %s, %d, %s", oi.n, oi.n, k->N, col0.n);
            I("mul.wide.u32 %s, %s, %d", ga.n, oi.n, oes);
            I("add.u64 %s, %s, %s", ga.n, ga.n, k->py.n);
            preg pa = ws_ptx_reg(b, PTX_B64);
            if (s->last) {
                preg pi = ws_ptx_reg(b, PTX_B32);
                I("and.pred %s, %s, %s", pok.n, ok.n, k->haspos.n);
                I("mad.lo.u32 %s, %s, %d, %s", pi.n, t.n, k->N, col0.n);
                I("mul.wide.u32 %s, %s, 4", pa.n, pi.n);
                I("add.u64 %s, %s, %s", pa.n, pa.n, k->ppos.n);
            }
            for (int ni = 0; ni < NI; ni++) {
                preg v0 = ws_ptx_reg(b, PTX_F32), v1 = ws_ptx_reg(b, PTX_F32);
                I("add.f32 %s, %s, %s", v0.n, k->acc[mi][ni][2 * half].n, bias[ni][0].n);
                I("add.f32 %s, %s, %s", v1.n, k->acc[mi][ni][2 * half + 1].n, bias[ni][1].n);
                ws_gelu_emit(b, v0.n, v0.n);
                ws_gelu_emit(b, v1.n, v1.n);
                emit_store_pair(k, ni, v0, v1, ok, pok, ga, pa);
            }
        }
    }
    I("ret");
}

int ws_emit_conv_mma(ptx_buf *mod, const ws_conv_spec *s, ws_kernel_src *info, ws_err *err)
{
    ptx_buf kb;
    mk k = { .b = &kb, .s = s, .T = s->small ? TILE_SMALL : TILE_LARGE };
    k.es = ws_prec_elem_bytes(s->prec);
    k.C = s->cin;
    k.N = s->cout;
    /* bytes of a row per stage: 128 or 64 when they divide a tap's row; else
     * the whole tap (C = 80 in bf16: 160 bytes, 5 k steps) when it is short,
     * rather than many 32-byte stages that are mostly barrier and bookkeeping */
    const int TAPB = k.C * k.es;
    k.BKB = TAPB % 128 == 0 ? 128 : TAPB % 64 == 0 ? 64 : TAPB <= 256 ? TAPB : 32;
    k.BK = k.BKB / k.es;
    k.KT = 3 * k.C / k.BK;
    k.KSTEPS = k.BKB / 32;
    k.RS = k.BKB + 16;
    k.STAGE = (k.T.bm + k.T.bn) * k.RS;
    if (k.T.stages * k.STAGE > 113 * 1024)   /* keep two blocks on a multiprocessor */
        k.T.stages = 2;
    const mma_tile T = k.T;
    k.SMEM = T.stages * k.STAGE;
    k.NT = 32 * T.wm * T.wn;
    k.WTM = T.bm / T.wm;
    k.WTN = T.bn / T.wn;
    k.MI = k.WTM / 16;
    k.NI = k.WTN / 8;
    k.CPR = k.BKB / 16;
    k.NA = T.bm * k.CPR / k.NT;
    k.NB = T.bn * k.CPR / k.NT;
    k.is_tf32 = s->prec == WS_PREC_TF32;
    k.ab = s->prec == WS_PREC_BF16 ? "bf16" : s->prec == WS_PREC_FP16 ? "f16" : "tf32";
    const int C = k.C, N = k.N, NT = k.NT, CPR = k.CPR;
    if ((C * k.es) % 32 || N % T.bn || k.NA < 1 || k.NB < 1 || k.KT < T.stages - 1 ||
        k.MI > MAXF || T.bm * CPR % NT || T.bn * CPR % NT || k.NA > 8 || k.NB > 8 ||
        k.NI > MAXF || k.NI % 2)
        return ws_errf(err, "%s conv: unsupported shape cin %d cout %d", k.ab, C, N);

    snprintf(info->name, sizeof info->name, "ws_conv%d_%s_%s", s->last ? 2 : 1,
             ws_precision_name(s->prec), s->small ? "s" : "l");
    info->threads = NT;
    info->smem = k.SMEM;
    info->bm = T.bm;
    info->bn = T.bn;

    ptx_buf *b = &kb;
    ws_ptx_init(b);
    ws_ptx_raw(mod, "\n.extern .shared .align 16 .b8 smem[];\n");
    ws_ptx_comment(b, "y[t][o] = gelu(b[o] + sum_k sum_i x[%d*t + k - 1][i] * w[o][i][k])%s; "
                   "%s mma, cin %d, cout %d, tile %dx%d, %d stages of %d bytes per row",
                s->stride, s->last ? " (+ pos[t][o])" : "", k.ab, C, N, T.bm, T.bn, T.stages,
                k.BKB);
    emit_coords(&k);

    ws_ptx_section(b, "per-thread cp.async addresses");
    for (int j = 0; j < k.NA; j++)
        emit_a_address(&k, j);
    for (int j = 0; j < k.NB; j++)
        emit_b_address(&k, j);
    emit_lane_addresses(&k);
    alloc_tiles(&k);
    emit_main_loop(&k);
    emit_epilogue(&k);
    ws_ptx_kernel_end_params(b, mod, info->name, ws_params_of(WS_PARAMS_STEM_CONV_MMA), NT, 2, 0);
    return 0;
}

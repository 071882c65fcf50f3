/* ptx_mel.c - the GPU log-Mel's emitter and host tables (ptx_mel.h says what each kernel
 * computes). Emission is a pure function of n_mels and the compute capability.
 * Tested by tests/test_gpu_mel.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_emit.h"
#include "ptx_mel.h"
#include "ptx_params.h"

#define I(...) ws_ptx_ins(b, __VA_ARGS__)

enum {
    FB = WS_MEL_FB,
    NT = WS_MEL_THREADS,
    MR = WS_MEL_M,
    KC = WS_MEL_K,
    FD_STRIDE_M = 4 * FB * 8,        /* bytes per row m of the folded frames */
    FD_STRIDE_C = FB * 8,            /* bytes per component */
    TW_STRIDE_M = 4 * KC * 8,        /* bytes per row m of the twiddles */
    TW_STRIDE_C = KC * 8,
    PW_OFF = MR * FD_STRIDE_M,       /* power [FB][201] doubles */
    PW_ROW = 201 * 8,
    FI_OFF = PW_OFF + FB * PW_ROW,   /* frame info, FI_SIZE bytes a frame: */
    FI_SIZE = 48,                    /* xptr u64 0, start s64 8, n 16, n_total 24, item u32 32,
                                        valid u32 36, key u32 40 */
    SMEM = FI_OFF + FB * FI_SIZE,
    WF = WS_MEL_WFRAMES,
    WT = WS_MEL_WTHREADS,
    WI_SIZE = 24,                    /* write kernel's frame info: obase u64 0, win_frames u32 8,
                                        valid u32 12, in content u32 16, floor f32 20 */
    ITEM = WS_MEL_ITEM_BYTES,
};
_Static_assert(SMEM == WS_MEL_FRAMES_SMEM, "shared memory layout");
_Static_assert(FI_OFF % 16 == 0, "frame info alignment");

static double cos_j(int j) /* cos(2 pi j / 400), exact at quarter turns */
{
    switch (j) {
    case 0: return 1.0;
    case 100: return 0.0;
    case 200: return -1.0;
    case 300: return 0.0;
    }
    return cos(2.0 * M_PI * j / 400.0);
}

static double sin_j(int j)
{
    switch (j) {
    case 0: return 0.0;
    case 100: return 1.0;
    case 200: return 0.0;
    case 300: return -1.0;
    }
    return sin(2.0 * M_PI * j / 400.0);
}

void ws_mel_twiddles(double *tw)
{
    for (int m = 0; m < MR; m++)
        for (int c = 0; c < 4; c++)
            for (int k = 0; k < KC; k++) {
                const int n = 2 * m + (c & 1);
                double v = 0.0;
                if (k <= 100 && n <= 200) {
                    const int j = k * n % 400;
                    v = c < 2 ? cos_j(j) : sin_j(j);
                }
                tw[(m * 4 + c) * KC + k] = v;
            }
}

void ws_mel_hann(double *w)
{
    for (int i = 0; i < 400; i++)
        w[i] = 0.5 - 0.5 * cos(2.0 * M_PI * i / 400.0);
}

/* --- pieces ----------------------------------------------------------------------- */

/* lo = the last item whose frame_off <= g (items sorted by frame_off, n_items >= 1) */
static preg item_search(ptx_buf *b, preg items, preg n_items, preg g)
{
    preg lo = ws_ptx_reg(b, PTX_B32), hi = ws_ptx_reg(b, PTX_B32), mid = ws_ptx_reg(b, PTX_B32);
    preg d = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B64), fo = ws_ptx_reg(b, PTX_B64);
    preg p = ws_ptx_reg(b, PTX_PRED);
    plabel top = ws_ptx_label_new(b, "bs"), end = ws_ptx_label_new(b, "bs_end");
    ws_ptx_comment(b, "%s = the last item with frame_off <= %s (binary search)", lo.n, g.n);
    I("mov.u32 %s, 0", lo.n);
    I("mov.u32 %s, %s", hi.n, n_items.n);
    ws_ptx_label(b, top);
    I("sub.u32 %s, %s, %s", d.n, hi.n, lo.n);
    I("setp.le.u32 %s, %s, 1", p.n, d.n);
    I("@%s bra %s", p.n, end.n);
    I("add.u32 %s, %s, %s", mid.n, lo.n, hi.n);
    I("shr.u32 %s, %s, 1", mid.n, mid.n);
    I("mad.wide.u32 %s, %s, %d, %s", a.n, mid.n, ITEM, items.n);
    I("ld.global.nc.u64 %s, [%s+24]", fo.n, a.n);
    I("setp.le.u64 %s, %s, %s", p.n, fo.n, g.n);
    I("selp.b32 %s, %s, %s, %s", lo.n, mid.n, lo.n, p.n);
    I("selp.b32 %s, %s, %s, %s", hi.n, hi.n, mid.n, p.n);
    I("bra %s", top.n);
    ws_ptx_label(b, end);
    return lo;
}

/* y = hann[i] * xpad(start + i) in float64; i a u32 register < 400 */
static preg sample(ptx_buf *b, preg i, preg start, preg xptr, preg n, preg ntot, preg period,
                   preg hann)
{
    preg pos = ws_ptx_reg(b, PTX_B64), i64 = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64);
    preg po = ws_ptx_reg(b, PTX_PRED), pq = ws_ptx_reg(b, PTX_PRED);
    preg v = ws_ptx_reg(b, PTX_F32), d = ws_ptx_reg(b, PTX_F64), h = ws_ptx_reg(b, PTX_F64);
    preg y = ws_ptx_reg(b, PTX_F64);
    plabel ok = ws_ptx_label_new(b, "inside");
    I("cvt.u64.u32 %s, %s", i64.n, i.n);
    I("add.s64 %s, %s, %s", pos.n, start.n, i64.n);
    I("setp.lt.s64 %s, %s, 0", po.n, pos.n);
    I("setp.ge.s64 %s, %s, %s", pq.n, pos.n, ntot.n);
    I("or.pred %s, %s, %s", po.n, po.n, pq.n);
    I("@!%s bra %s", po.n, ok.n);
    ws_ptx_comment(b, "reflect: j = pos mod 2(n_total-1), j < 0: + period, j >= n_total: period - j");
    I("rem.s64 %s, %s, %s", pos.n, pos.n, period.n);
    I("setp.lt.s64 %s, %s, 0", pq.n, pos.n);
    I("@%s add.s64 %s, %s, %s", pq.n, pos.n, pos.n, period.n);
    I("setp.ge.s64 %s, %s, %s", pq.n, pos.n, ntot.n);
    I("@%s sub.s64 %s, %s, %s", pq.n, pos.n, period.n, pos.n);
    I("setp.eq.s64 %s, %s, 0", pq.n, period.n);
    I("@%s mov.b64 %s, 0", pq.n, pos.n);
    ws_ptx_label(b, ok);
    I("setp.lt.s64 %s, %s, %s", pq.n, pos.n, n.n);
    I("mov.f32 %s, 0f00000000", v.n);
    I("shl.b64 %s, %s, 2", a.n, pos.n);
    I("add.s64 %s, %s, %s", a.n, a.n, xptr.n);
    I("@%s ld.global.nc.f32 %s, [%s]", pq.n, v.n, a.n);
    I("cvt.f64.f32 %s, %s", d.n, v.n);
    I("mad.wide.u32 %s, %s, 8, %s", a.n, i.n, hann.n);
    I("ld.global.nc.f64 %s, [%s]", h.n, a.n);
    I("mul.rn.f64 %s, %s, %s", y.n, d.n, h.n);
    return y;
}

/* r = t's .u64 parameter i as a global address: ld.param.u64 r, [<name>]; cvta.to.global */
static void ptr_param(ptx_buf *b, preg r, const ws_params *t, int i)
{
    ws_ptx_ld_param(b, r, t, i);
    I("cvta.to.global.u64 %s, %s", r.n, r.n);
}

/* --- ws_mel_frames ------------------------------------------------------------------ */

static void emit_frames(ptx_buf *mod, int nm)
{
    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    ws_ptx_comment(b, "log10 mel of %d frames a block, %d bands; float64 folded DFT", FB, nm);
    preg px = ws_ptx_reg(b, PTX_B64), pitems = ws_ptx_reg(b, PTX_B64), ptw = ws_ptx_reg(b, PTX_B64);
    preg phann = ws_ptx_reg(b, PTX_B64), pband = ws_ptx_reg(b, PTX_B64);
    preg pwts = ws_ptx_reg(b, PTX_B64), pL = ws_ptx_reg(b, PTX_B64), pkeys = ws_ptx_reg(b, PTX_B64);
    preg total = ws_ptx_reg(b, PTX_B64), nitems = ws_ptx_reg(b, PTX_B32);
    const ws_params *pt = ws_params_of(WS_PARAMS_MEL_FRAMES);
    ptr_param(b, px, pt, WS_MFR_X);
    ptr_param(b, pitems, pt, WS_MFR_ITEMS);
    ptr_param(b, ptw, pt, WS_MFR_TW);
    ptr_param(b, phann, pt, WS_MFR_HANN);
    ptr_param(b, pband, pt, WS_MFR_BAND);
    ptr_param(b, pwts, pt, WS_MFR_WTS);
    ptr_param(b, pL, pt, WS_MFR_L);
    ptr_param(b, pkeys, pt, WS_MFR_KEYS);
    ws_ptx_ld_param(b, total, pt, WS_MFR_TOTAL);
    ws_ptx_ld_param(b, nitems, pt, WS_MFR_N_ITEMS);
    preg tid = ws_ptx_reg(b, PTX_B32), g0 = ws_ptx_reg(b, PTX_B64), sb = ws_ptx_reg(b, PTX_B32);
    preg t32 = ws_ptx_reg(b, PTX_B32);
    preg p = ws_ptx_reg(b, PTX_PRED);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, %%ctaid.x", t32.n);
    I("mul.wide.u32 %s, %s, %d", g0.n, t32.n, FB);
    I("mov.u32 %s, msm", sb.n);

    ws_ptx_section(b, "1. threads f < FB: frame g0 + f's item, start and samples");
    {
        plabel skip = ws_ptx_label_new(b, "info_done"), store = ws_ptx_label_new(b, "info_store");
        preg g = ws_ptx_reg(b, PTX_B64), xptr = ws_ptx_reg(b, PTX_B64), start = ws_ptx_reg(b, PTX_B64);
        preg n = ws_ptx_reg(b, PTX_B64), ntot = ws_ptx_reg(b, PTX_B64), item = ws_ptx_reg(b, PTX_B32);
        preg valid = ws_ptx_reg(b, PTX_B32), fi = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B64);
        preg fo = ws_ptx_reg(b, PTX_B64), xo = ws_ptx_reg(b, PTX_B64);
        I("setp.ge.u32 %s, %s, %d", p.n, tid.n, FB);
        I("@%s bra %s", p.n, skip.n);
        I("cvt.u64.u32 %s, %s", g.n, tid.n);
        I("add.u64 %s, %s, %s", g.n, g.n, g0.n);
        I("mov.b64 %s, 0", xptr.n);
        I("mov.b64 %s, 0", start.n);
        I("mov.b64 %s, 0", n.n);
        I("mov.b64 %s, 1", ntot.n);
        I("mov.u32 %s, 0", item.n);
        I("mov.u32 %s, 0", valid.n);
        I("setp.ge.u64 %s, %s, %s", p.n, g.n, total.n);
        I("@%s bra %s", p.n, store.n);
        preg lo = item_search(b, pitems, nitems, g);
        I("mov.u32 %s, %s", item.n, lo.n);
        I("mad.wide.u32 %s, %s, %d, %s", a.n, lo.n, ITEM, pitems.n);
        I("ld.global.nc.u64 %s, [%s]", xo.n, a.n);
        I("ld.global.nc.u64 %s, [%s+8]", n.n, a.n);
        I("ld.global.nc.u64 %s, [%s+16]", ntot.n, a.n);
        I("ld.global.nc.u64 %s, [%s+24]", fo.n, a.n);
        I("sub.u64 %s, %s, %s", start.n, g.n, fo.n);
        I("mul.lo.u64 %s, %s, 160", start.n, start.n);
        I("sub.s64 %s, %s, 200", start.n, start.n);
        I("shl.b64 %s, %s, 2", xo.n, xo.n);
        I("add.u64 %s, %s, %s", xptr.n, px.n, xo.n);
        I("mov.u32 %s, 1", valid.n);
        ws_ptx_label(b, store);
        I("mad.lo.u32 %s, %s, %d, %s", fi.n, tid.n, FI_SIZE, sb.n);
        I("st.shared.u64 [%s+%d], %s", fi.n, FI_OFF, xptr.n);
        I("st.shared.u64 [%s+%d], %s", fi.n, FI_OFF + 8, start.n);
        I("st.shared.u64 [%s+%d], %s", fi.n, FI_OFF + 16, n.n);
        I("st.shared.u64 [%s+%d], %s", fi.n, FI_OFF + 24, ntot.n);
        I("st.shared.u32 [%s+%d], %s", fi.n, FI_OFF + 32, item.n);
        I("st.shared.u32 [%s+%d], %s", fi.n, FI_OFF + 36, valid.n);
        I("st.shared.u32 [%s+%d], 0", fi.n, FI_OFF + 40);
        ws_ptx_label(b, skip);
        I("bar.sync 0");
    }

    ws_ptx_section(b, "2. gather: folded windowed frames fd[m][c][f] in float64");
    {
        plabel top = ws_ptx_label_new(b, "gather"), end = ws_ptx_label_new(b, "gather_end");
        preg idx = ws_ptx_reg(b, PTX_B32), f = ws_ptx_reg(b, PTX_B32), m = ws_ptx_reg(b, PTX_B32);
        preg fi = ws_ptx_reg(b, PTX_B32), valid = ws_ptx_reg(b, PTX_B32);
        preg xptr = ws_ptx_reg(b, PTX_B64), start = ws_ptx_reg(b, PTX_B64), n = ws_ptx_reg(b, PTX_B64);
        preg ntot = ws_ptx_reg(b, PTX_B64), period = ws_ptx_reg(b, PTX_B64);
        preg i1 = ws_ptx_reg(b, PTX_B32), p1 = ws_ptx_reg(b, PTX_B32), i2 = ws_ptx_reg(b, PTX_B32);
        preg p2 = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32);
        preg z1 = ws_ptx_reg(b, PTX_PRED), z2 = ws_ptx_reg(b, PTX_PRED), zall = ws_ptx_reg(b, PTX_PRED);
        preg q = ws_ptx_reg(b, PTX_PRED);
        preg ae = ws_ptx_reg(b, PTX_F64), be = ws_ptx_reg(b, PTX_F64), ao = ws_ptx_reg(b, PTX_F64);
        preg bo = ws_ptx_reg(b, PTX_F64);
        I("mov.u32 %s, %s", idx.n, tid.n);
        ws_ptx_label(b, top);
        I("setp.ge.u32 %s, %s, %d", p.n, idx.n, FB * MR);
        I("@%s bra %s", p.n, end.n);
        ws_ptx_comment(b, "f = idx / %d, m = idx %% %d: consecutive threads read along a frame", MR, MR);
        I("div.u32 %s, %s, %d", f.n, idx.n, MR);
        I("mad.lo.u32 %s, %s, %d, %s", m.n, f.n, -MR, idx.n);
        I("mad.lo.u32 %s, %s, %d, %s", fi.n, f.n, FI_SIZE, sb.n);
        I("ld.shared.u64 %s, [%s+%d]", xptr.n, fi.n, FI_OFF);
        I("ld.shared.u64 %s, [%s+%d]", start.n, fi.n, FI_OFF + 8);
        I("ld.shared.u64 %s, [%s+%d]", n.n, fi.n, FI_OFF + 16);
        I("ld.shared.u64 %s, [%s+%d]", ntot.n, fi.n, FI_OFF + 24);
        I("ld.shared.u32 %s, [%s+%d]", valid.n, fi.n, FI_OFF + 36);
        I("sub.s64 %s, %s, 1", period.n, ntot.n);
        I("shl.b64 %s, %s, 1", period.n, period.n);
        ws_ptx_comment(b, "i1 = 2m, p1 = min(400 - 2m, 399), i2 = 2m + 1, p2 = 399 - 2m (m <= 101)");
        I("shl.b32 %s, %s, 1", i1.n, m.n);
        I("sub.u32 %s, 400, %s", p1.n, i1.n);
        I("min.u32 %s, %s, 399", p1.n, p1.n);
        I("add.u32 %s, %s, 1", i2.n, i1.n);
        I("sub.u32 %s, 399, %s", p2.n, i1.n);
        preg y1 = sample(b, i1, start, xptr, n, ntot, period, phann);
        preg yp1 = sample(b, p1, start, xptr, n, ntot, period, phann);
        preg y2 = sample(b, i2, start, xptr, n, ntot, period, phann);
        preg yp2 = sample(b, p2, start, xptr, n, ntot, period, phann);
        ws_ptx_comment(b, "no partner at m = 0 (n = 400) and m = 100 (n = 200 itself); no odd n past 199");
        I("setp.eq.u32 %s, %s, 0", z1.n, m.n);
        I("setp.ge.u32 %s, %s, 100", z2.n, m.n);
        I("or.pred %s, %s, %s", z1.n, z1.n, z2.n);
        I("selp.f64 %s, 0d0000000000000000, %s, %s", yp1.n, yp1.n, z1.n);
        I("add.rn.f64 %s, %s, %s", ae.n, y1.n, yp1.n);
        I("sub.rn.f64 %s, %s, %s", be.n, y1.n, yp1.n);
        I("add.rn.f64 %s, %s, %s", ao.n, y2.n, yp2.n);
        I("sub.rn.f64 %s, %s, %s", bo.n, y2.n, yp2.n);
        I("selp.f64 %s, 0d0000000000000000, %s, %s", ao.n, ao.n, z2.n);
        I("selp.f64 %s, 0d0000000000000000, %s, %s", bo.n, bo.n, z2.n);
        ws_ptx_comment(b, "rows m > 100 and frames past the batch are zero");
        I("setp.gt.u32 %s, %s, 100", zall.n, m.n);
        I("setp.eq.u32 %s, %s, 0", q.n, valid.n);
        I("or.pred %s, %s, %s", zall.n, zall.n, q.n);
        I("selp.f64 %s, 0d0000000000000000, %s, %s", ae.n, ae.n, zall.n);
        I("selp.f64 %s, 0d0000000000000000, %s, %s", be.n, be.n, zall.n);
        I("selp.f64 %s, 0d0000000000000000, %s, %s", ao.n, ao.n, zall.n);
        I("selp.f64 %s, 0d0000000000000000, %s, %s", bo.n, bo.n, zall.n);
        I("mad.lo.u32 %s, %s, %d, %s", sa.n, m.n, FD_STRIDE_M, sb.n);
        I("mad.lo.u32 %s, %s, 8, %s", sa.n, f.n, sa.n);
        I("st.shared.f64 [%s], %s", sa.n, ae.n);
        I("st.shared.f64 [%s+%d], %s", sa.n, FD_STRIDE_C, ao.n);
        I("st.shared.f64 [%s+%d], %s", sa.n, 2 * FD_STRIDE_C, be.n);
        I("st.shared.f64 [%s+%d], %s", sa.n, 3 * FD_STRIDE_C, bo.n);
        I("add.u32 %s, %s, %d", idx.n, idx.n, NT);
        I("bra %s", top.n);
        ws_ptx_label(b, end);
        I("bar.sync 0");
    }

    ws_ptx_section(b, "3. E, O, Es, Os for 4 k x 2 frames a thread (warp: 16 k x 16 frames)");
    preg acc[4][2][4]; /* [c][f][kk] */
    preg kbase = ws_ptx_reg(b, PTX_B32), fg = ws_ptx_reg(b, PTX_B32);
    {
        preg warp = ws_ptx_reg(b, PTX_B32), lane = ws_ptx_reg(b, PTX_B32), kgl = ws_ptx_reg(b, PTX_B32);
        preg twp = ws_ptx_reg(b, PTX_B64), fdp = ws_ptx_reg(b, PTX_B32), cnt = ws_ptx_reg(b, PTX_B32);
        plabel top = ws_ptx_label_new(b, "m");
        I("shr.u32 %s, %s, 5", warp.n, tid.n);
        I("and.b32 %s, %s, 31", lane.n, tid.n);
        I("and.b32 %s, %s, 3", kgl.n, lane.n);
        I("shr.u32 %s, %s, 2", fg.n, lane.n);
        I("shl.b32 %s, %s, 4", kbase.n, warp.n);
        I("mad.lo.u32 %s, %s, 4, %s", kbase.n, kgl.n, kbase.n);
        I("mad.wide.u32 %s, %s, 8, %s", twp.n, kbase.n, ptw.n);
        I("mad.lo.u32 %s, %s, 16, %s", fdp.n, fg.n, sb.n);
        for (int c = 0; c < 4; c++)
            for (int f = 0; f < 2; f++)
                for (int kk = 0; kk < 4; kk++) {
                    acc[c][f][kk] = ws_ptx_reg(b, PTX_F64);
                    I("mov.f64 %s, 0d0000000000000000", acc[c][f][kk].n);
                }
        I("mov.u32 %s, %d", cnt.n, MR / 2);
        ws_ptx_label(b, top);
        for (int u = 0; u < 2; u++) {
            preg fr[4][2], tw[4][4];
            for (int c = 0; c < 4; c++) {
                fr[c][0] = ws_ptx_reg(b, PTX_F64);
                fr[c][1] = ws_ptx_reg(b, PTX_F64);
                I("ld.shared.v2.f64 {%s, %s}, [%s+%d]", fr[c][0].n, fr[c][1].n, fdp.n,
                  u * FD_STRIDE_M + c * FD_STRIDE_C);
            }
            for (int c = 0; c < 4; c++) {
                for (int kk = 0; kk < 4; kk++)
                    tw[c][kk] = ws_ptx_reg(b, PTX_F64);
                I("ld.global.nc.v2.f64 {%s, %s}, [%s+%d]", tw[c][0].n, tw[c][1].n, twp.n,
                  u * TW_STRIDE_M + c * TW_STRIDE_C);
                I("ld.global.nc.v2.f64 {%s, %s}, [%s+%d]", tw[c][2].n, tw[c][3].n, twp.n,
                  u * TW_STRIDE_M + c * TW_STRIDE_C + 16);
            }
            for (int c = 0; c < 4; c++)
                for (int f = 0; f < 2; f++)
                    for (int kk = 0; kk < 4; kk++)
                        I("fma.rn.f64 %s, %s, %s, %s", acc[c][f][kk].n, fr[c][f].n, tw[c][kk].n,
                          acc[c][f][kk].n);
        }
        I("add.u32 %s, %s, %d", fdp.n, fdp.n, 2 * FD_STRIDE_M);
        I("add.u64 %s, %s, %d", twp.n, twp.n, 2 * TW_STRIDE_M);
        I("sub.u32 %s, %s, 1", cnt.n, cnt.n);
        I("setp.ne.u32 %s, %s, 0", p.n, cnt.n);
        I("@%s bra %s", p.n, top.n);
    }

    ws_ptx_section(b, "4. power |X_k|^2, |X_(200-k)|^2 into pw[f][201]");
    {
        preg row = ws_ptx_reg(b, PTX_B32), a1 = ws_ptx_reg(b, PTX_B32), a2 = ws_ptx_reg(b, PTX_B32);
        preg k = ws_ptx_reg(b, PTX_B32), pk = ws_ptx_reg(b, PTX_PRED), pm = ws_ptx_reg(b, PTX_PRED);
        preg s = ws_ptx_reg(b, PTX_F64), t = ws_ptx_reg(b, PTX_F64), pw = ws_ptx_reg(b, PTX_F64);
        for (int f = 0; f < 2; f++) {
            I("shl.b32 %s, %s, 1", row.n, fg.n);
            if (f)
                I("add.u32 %s, %s, 1", row.n, row.n);
            I("mad.lo.u32 %s, %s, %d, %s", row.n, row.n, PW_ROW, sb.n);
            for (int kk = 0; kk < 4; kk++) {
                I("add.u32 %s, %s, %d", k.n, kbase.n, kk);
                I("setp.le.u32 %s, %s, 100", pk.n, k.n);
                I("setp.lt.u32 %s, %s, 100", pm.n, k.n);
                I("mad.lo.u32 %s, %s, 8, %s", a1.n, k.n, row.n);
                I("mad.lo.u32 %s, %s, -8, %s", a2.n, k.n, row.n);
                I("add.rn.f64 %s, %s, %s", s.n, acc[0][f][kk].n, acc[1][f][kk].n);
                I("add.rn.f64 %s, %s, %s", t.n, acc[2][f][kk].n, acc[3][f][kk].n);
                I("mul.rn.f64 %s, %s, %s", pw.n, s.n, s.n);
                I("fma.rn.f64 %s, %s, %s, %s", pw.n, t.n, t.n, pw.n);
                I("@%s st.shared.f64 [%s+%d], %s", pk.n, a1.n, PW_OFF, pw.n);
                I("sub.rn.f64 %s, %s, %s", s.n, acc[0][f][kk].n, acc[1][f][kk].n);
                I("sub.rn.f64 %s, %s, %s", t.n, acc[2][f][kk].n, acc[3][f][kk].n);
                I("mul.rn.f64 %s, %s, %s", pw.n, s.n, s.n);
                I("fma.rn.f64 %s, %s, %s, %s", pw.n, t.n, t.n, pw.n);
                I("@%s st.shared.f64 [%s+%d], %s", pm.n, a2.n, PW_OFF + 200 * 8, pw.n);
            }
        }
        I("bar.sync 0");
    }

    ws_ptx_section(b, "5. mel bands, log10, per-frame max image");
    {
        plabel top = ws_ptx_label_new(b, "band"), end = ws_ptx_label_new(b, "band_end");
        plabel next = ws_ptx_label_new(b, "band_next"), qtop = ws_ptx_label_new(b, "bin");
        plabel qend = ws_ptx_label_new(b, "bin_end");
        preg o = ws_ptx_reg(b, PTX_B32), f = ws_ptx_reg(b, PTX_B32), bd = ws_ptx_reg(b, PTX_B32);
        preg fi = ws_ptx_reg(b, PTX_B32), valid = ws_ptx_reg(b, PTX_B32), ba = ws_ptx_reg(b, PTX_B64);
        preg lo = ws_ptx_reg(b, PTX_B32), len = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B32);
        preg wp = ws_ptx_reg(b, PTX_B64), pp = ws_ptx_reg(b, PTX_B32), acc1 = ws_ptx_reg(b, PTX_F64);
        preg w = ws_ptx_reg(b, PTX_F64), pv = ws_ptx_reg(b, PTX_F64), mf = ws_ptx_reg(b, PTX_F32);
        preg l = ws_ptx_reg(b, PTX_F32), ppos = ws_ptx_reg(b, PTX_PRED), la = ws_ptx_reg(b, PTX_B64);
        preg g0nm = ws_ptx_reg(b, PTX_B64), u = ws_ptx_reg(b, PTX_B32), kn = ws_ptx_reg(b, PTX_B32);
        preg key = ws_ptx_reg(b, PTX_B32), pneg = ws_ptx_reg(b, PTX_PRED), dummy = ws_ptx_reg(b, PTX_B32);
        I("mul.lo.u64 %s, %s, %d", g0nm.n, g0.n, nm);
        I("mov.u32 %s, %s", o.n, tid.n);
        ws_ptx_label(b, top);
        I("setp.ge.u32 %s, %s, %d", p.n, o.n, FB * nm);
        I("@%s bra %s", p.n, end.n);
        I("div.u32 %s, %s, %d", f.n, o.n, nm);
        I("mad.lo.u32 %s, %s, %d, %s", bd.n, f.n, -nm, o.n);
        I("mad.lo.u32 %s, %s, %d, %s", fi.n, f.n, FI_SIZE, sb.n);
        I("ld.shared.u32 %s, [%s+%d]", valid.n, fi.n, FI_OFF + 36);
        I("setp.eq.u32 %s, %s, 0", p.n, valid.n);
        I("@%s bra %s", p.n, next.n);
        I("mad.wide.u32 %s, %s, 12, %s", ba.n, bd.n, pband.n);
        I("ld.global.nc.u32 %s, [%s]", lo.n, ba.n);
        I("ld.global.nc.u32 %s, [%s+4]", len.n, ba.n);
        I("ld.global.nc.u32 %s, [%s+8]", off.n, ba.n);
        I("mad.wide.u32 %s, %s, 8, %s", wp.n, off.n, pwts.n);
        I("mad.lo.u32 %s, %s, %d, %s", pp.n, f.n, PW_ROW, sb.n);
        I("mad.lo.u32 %s, %s, 8, %s", pp.n, lo.n, pp.n);
        I("mov.f64 %s, 0d0000000000000000", acc1.n);
        ws_ptx_label(b, qtop);
        I("setp.eq.u32 %s, %s, 0", p.n, len.n);
        I("@%s bra %s", p.n, qend.n);
        I("ld.global.nc.f64 %s, [%s]", w.n, wp.n);
        I("ld.shared.f64 %s, [%s+%d]", pv.n, pp.n, PW_OFF);
        I("fma.rn.f64 %s, %s, %s, %s", acc1.n, w.n, pv.n, acc1.n);
        I("add.u64 %s, %s, 8", wp.n, wp.n);
        I("add.u32 %s, %s, 8", pp.n, pp.n);
        I("sub.u32 %s, %s, 1", len.n, len.n);
        I("bra %s", qtop.n);
        ws_ptx_label(b, qend);
        ws_ptx_comment(b, "L = M > 1e-10 ? log2(M) log10(2) : -10, M as float32");
        I("cvt.rn.f32.f64 %s, %s", mf.n, acc1.n);
        I("setp.gt.f32 %s, %s, %s", ppos.n, mf.n, ws_ptx_f32(1e-10f).s);
        I("lg2.approx.ftz.f32 %s, %s", l.n, mf.n);
        I("mul.rn.f32 %s, %s, %s", l.n, l.n, ws_ptx_f32(0.30102999566398120f).s);
        I("selp.f32 %s, %s, %s, %s", l.n, l.n, ws_ptx_f32(-10.0f).s, ppos.n);
        I("cvt.u64.u32 %s, %s", la.n, o.n);
        I("add.u64 %s, %s, %s", la.n, la.n, g0nm.n);
        I("shl.b64 %s, %s, 2", la.n, la.n);
        I("add.u64 %s, %s, %s", la.n, la.n, pL.n);
        I("st.global.f32 [%s], %s", la.n, l.n);
        ws_ptx_comment(b, "order-preserving image: u >= 0: u | 0x80000000, u < 0: ~u");
        I("mov.b32 %s, %s", u.n, l.n);
        I("setp.lt.s32 %s, %s, 0", pneg.n, u.n);
        I("not.b32 %s, %s", kn.n, u.n);
        I("or.b32 %s, %s, 0x80000000", key.n, u.n);
        I("selp.b32 %s, %s, %s, %s", key.n, kn.n, key.n, pneg.n);
        I("atom.shared.max.u32 %s, [%s+%d], %s", dummy.n, fi.n, FI_OFF + 40, key.n);
        ws_ptx_label(b, next);
        I("add.u32 %s, %s, %d", o.n, o.n, NT);
        I("bra %s", top.n);
        ws_ptx_label(b, end);
        I("bar.sync 0");
    }

    ws_ptx_section(b, "6. thread 0: each item's max over the block's frames into keys[item]");
    {
        plabel done = ws_ptx_label_new(b, "done");
        preg cur = ws_ptx_reg(b, PTX_B32), ck = ws_ptx_reg(b, PTX_B32), valid = ws_ptx_reg(b, PTX_B32);
        preg item = ws_ptx_reg(b, PTX_B32), key = ws_ptx_reg(b, PTX_B32), ka = ws_ptx_reg(b, PTX_B64);
        preg pv = ws_ptx_reg(b, PTX_PRED), pd = ws_ptx_reg(b, PTX_PRED), ph = ws_ptx_reg(b, PTX_PRED);
        preg dummy = ws_ptx_reg(b, PTX_B32);
        I("setp.ne.u32 %s, %s, 0", p.n, tid.n);
        I("@%s bra %s", p.n, done.n);
        I("mov.u32 %s, 0xFFFFFFFF", cur.n);
        I("mov.u32 %s, 0", ck.n);
        for (int f = 0; f < FB; f++) {
            const int o = FI_OFF + f * FI_SIZE;
            I("ld.shared.u32 %s, [%s+%d]", valid.n, sb.n, o + 36);
            I("ld.shared.u32 %s, [%s+%d]", item.n, sb.n, o + 32);
            I("ld.shared.u32 %s, [%s+%d]", key.n, sb.n, o + 40);
            I("setp.ne.u32 %s, %s, 0", pv.n, valid.n);
            I("setp.ne.u32 %s, %s, %s", pd.n, item.n, cur.n);
            I("and.pred %s, %s, %s", pd.n, pd.n, pv.n);
            I("setp.ne.u32 %s, %s, 0xFFFFFFFF", ph.n, cur.n);
            I("and.pred %s, %s, %s", ph.n, ph.n, pd.n);
            I("mad.wide.u32 %s, %s, 4, %s", ka.n, cur.n, pkeys.n);
            I("@%s atom.global.max.u32 %s, [%s], %s", ph.n, dummy.n, ka.n, ck.n);
            I("@%s mov.u32 %s, %s", pd.n, ck.n, key.n);
            I("@%s mov.u32 %s, %s", pd.n, cur.n, item.n);
            I("@%s max.u32 %s, %s, %s", pv.n, ck.n, ck.n, key.n);
        }
        I("setp.ne.u32 %s, %s, 0xFFFFFFFF", ph.n, cur.n);
        I("mad.wide.u32 %s, %s, 4, %s", ka.n, cur.n, pkeys.n);
        I("@%s atom.global.max.u32 %s, [%s], %s", ph.n, dummy.n, ka.n, ck.n);
        ws_ptx_label(b, done);
        I("ret");
    }
    ws_ptx_kernel_end_params(b, mod, "ws_mel_frames", pt, NT, 2, 0);
}

/* --- ws_mel_write ------------------------------------------------------------------- */

static void emit_write(ptx_buf *mod, int nm)
{
    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    const int rowf = nm + 1; /* tile row in floats: odd, so column reads miss no bank */
    ws_ptx_raw(b, "\t.shared .align 16 .b8 wtile[%d];\n", WF * rowf * 4);
    ws_ptx_raw(b, "\t.shared .align 16 .b8 winfo[%d];\n", WF * WI_SIZE);
    ws_ptx_comment(b, "out = (max(L, max_item - 8) + 4) / 4 into the windows, %d bands", nm);
    preg pitems = ws_ptx_reg(b, PTX_B64), pL = ws_ptx_reg(b, PTX_B64), pkeys = ws_ptx_reg(b, PTX_B64);
    preg pout = ws_ptx_reg(b, PTX_B64), total = ws_ptx_reg(b, PTX_B64), nitems = ws_ptx_reg(b, PTX_B32);
    const ws_params *pt = ws_params_of(WS_PARAMS_MEL_WRITE);
    ptr_param(b, pitems, pt, WS_MWR_ITEMS);
    ptr_param(b, pL, pt, WS_MWR_L);
    ptr_param(b, pkeys, pt, WS_MWR_KEYS);
    ptr_param(b, pout, pt, WS_MWR_OUT);
    ws_ptx_ld_param(b, total, pt, WS_MWR_TOTAL);
    ws_ptx_ld_param(b, nitems, pt, WS_MWR_N_ITEMS);
    preg tid = ws_ptx_reg(b, PTX_B32), g0 = ws_ptx_reg(b, PTX_B64), t32 = ws_ptx_reg(b, PTX_B32);
    preg tb = ws_ptx_reg(b, PTX_B32), ib = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_PRED);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, %%ctaid.x", t32.n);
    I("mul.wide.u32 %s, %s, %d", g0.n, t32.n, WF);
    I("mov.u32 %s, wtile", tb.n);
    I("mov.u32 %s, winfo", ib.n);

    ws_ptx_section(b, "threads < 32: frame g0 + tid's place in its item's windows and floor");
    {
        plabel skip = ws_ptx_label_new(b, "info_done"), store = ws_ptx_label_new(b, "info_store");
        preg g = ws_ptx_reg(b, PTX_B64), obase = ws_ptx_reg(b, PTX_B64), wf = ws_ptx_reg(b, PTX_B32);
        preg valid = ws_ptx_reg(b, PTX_B32), inc = ws_ptx_reg(b, PTX_B32), fl = ws_ptx_reg(b, PTX_F32);
        preg a = ws_ptx_reg(b, PTX_B64), fo = ws_ptx_reg(b, PTX_B64), oo = ws_ptx_reg(b, PTX_B64);
        preg content = ws_ptx_reg(b, PTX_B32), nwin = ws_ptx_reg(b, PTX_B32), t64 = ws_ptx_reg(b, PTX_B64);
        preg t = ws_ptx_reg(b, PTX_B32), wt = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B32);
        preg j = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B64), key = ws_ptx_reg(b, PTX_B32);
        preg kx = ws_ptx_reg(b, PTX_B32), pk = ws_ptx_reg(b, PTX_PRED), wa = ws_ptx_reg(b, PTX_B32);
        preg j64 = ws_ptx_reg(b, PTX_B64), q = ws_ptx_reg(b, PTX_PRED);
        I("setp.ge.u32 %s, %s, %d", p.n, tid.n, WF);
        I("@%s bra %s", p.n, skip.n);
        I("cvt.u64.u32 %s, %s", g.n, tid.n);
        I("add.u64 %s, %s, %s", g.n, g.n, g0.n);
        I("mov.b64 %s, 0", obase.n);
        I("mov.u32 %s, 0", wf.n);
        I("mov.u32 %s, 0", valid.n);
        I("mov.u32 %s, 0", inc.n);
        I("mov.f32 %s, 0f00000000", fl.n);
        I("setp.ge.u64 %s, %s, %s", p.n, g.n, total.n);
        I("@%s bra %s", p.n, store.n);
        preg lo = item_search(b, pitems, nitems, g);
        I("mad.wide.u32 %s, %s, %d, %s", a.n, lo.n, ITEM, pitems.n);
        I("ld.global.nc.u64 %s, [%s+24]", fo.n, a.n);
        I("ld.global.nc.u64 %s, [%s+32]", oo.n, a.n);
        I("ld.global.nc.u32 %s, [%s+44]", content.n, a.n);
        I("ld.global.nc.u32 %s, [%s+48]", nwin.n, a.n);
        I("ld.global.nc.u32 %s, [%s+52]", wf.n, a.n);
        I("sub.u64 %s, %s, %s", t64.n, g.n, fo.n);
        I("mul.wide.u32 %s, %s, %s", wt.n, nwin.n, wf.n);
        I("setp.ge.u64 %s, %s, %s", p.n, t64.n, wt.n);
        I("@%s bra %s", p.n, store.n);
        I("cvt.u32.u64 %s, %s", t.n, t64.n);
        I("div.u32 %s, %s, %s", w.n, t.n, wf.n);
        I("mul.lo.u32 %s, %s, %s", j.n, w.n, wf.n);
        I("sub.u32 %s, %s, %s", j.n, t.n, j.n);
        ws_ptx_comment(b, "obase = out_off + (w*n_mels)*win_frames + j");
        I("mul.lo.u32 %s, %s, %d", w.n, w.n, nm);
        I("mul.wide.u32 %s, %s, %s", tmp.n, w.n, wf.n);
        I("add.u64 %s, %s, %s", obase.n, oo.n, tmp.n);
        I("cvt.u64.u32 %s, %s", j64.n, j.n);
        I("add.u64 %s, %s, %s", obase.n, obase.n, j64.n);
        I("setp.lt.u32 %s, %s, %s", q.n, t.n, content.n);
        I("selp.u32 %s, 1, 0, %s", inc.n, q.n);
        ws_ptx_comment(b, "floor = decode(keys[item]) - 8");
        I("mad.wide.u32 %s, %s, 4, %s", a.n, lo.n, pkeys.n);
        I("ld.global.u32 %s, [%s]", key.n, a.n);
        I("setp.lt.s32 %s, %s, 0", pk.n, key.n);
        I("and.b32 %s, %s, 0x7FFFFFFF", kx.n, key.n);
        I("not.b32 %s, %s", key.n, key.n);
        I("selp.b32 %s, %s, %s, %s", key.n, kx.n, key.n, pk.n);
        I("mov.b32 %s, %s", fl.n, key.n);
        I("sub.rn.f32 %s, %s, 0f41000000", fl.n, fl.n);
        I("mov.u32 %s, 1", valid.n);
        ws_ptx_label(b, store);
        I("mad.lo.u32 %s, %s, %d, %s", wa.n, tid.n, WI_SIZE, ib.n);
        I("st.shared.u64 [%s], %s", wa.n, obase.n);
        I("st.shared.u32 [%s+8], %s", wa.n, wf.n);
        I("st.shared.u32 [%s+12], %s", wa.n, valid.n);
        I("st.shared.u32 [%s+16], %s", wa.n, inc.n);
        I("st.shared.f32 [%s+20], %s", wa.n, fl.n);
        ws_ptx_label(b, skip);
    }

    ws_ptx_section(b, "the tile L[g0 .. g0+31][0 .. n_mels) into shared memory, along bands");
    {
        plabel top = ws_ptx_label_new(b, "load"), end = ws_ptx_label_new(b, "load_end");
        plabel next = ws_ptx_label_new(b, "load_next");
        preg e = ws_ptx_reg(b, PTX_B32), ff = ws_ptx_reg(b, PTX_B32), bb = ws_ptx_reg(b, PTX_B32);
        preg g = ws_ptx_reg(b, PTX_B64), la = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32);
        preg sa = ws_ptx_reg(b, PTX_B32), g0nm = ws_ptx_reg(b, PTX_B64);
        I("mul.lo.u64 %s, %s, %d", g0nm.n, g0.n, nm);
        I("mov.u32 %s, %s", e.n, tid.n);
        ws_ptx_label(b, top);
        I("setp.ge.u32 %s, %s, %d", p.n, e.n, WF * nm);
        I("@%s bra %s", p.n, end.n);
        I("div.u32 %s, %s, %d", ff.n, e.n, nm);
        I("mad.lo.u32 %s, %s, %d, %s", bb.n, ff.n, -nm, e.n);
        I("cvt.u64.u32 %s, %s", g.n, ff.n);
        I("add.u64 %s, %s, %s", g.n, g.n, g0.n);
        I("setp.ge.u64 %s, %s, %s", p.n, g.n, total.n);
        I("@%s bra %s", p.n, next.n);
        I("cvt.u64.u32 %s, %s", la.n, e.n);
        I("add.u64 %s, %s, %s", la.n, la.n, g0nm.n);
        I("shl.b64 %s, %s, 2", la.n, la.n);
        I("add.u64 %s, %s, %s", la.n, la.n, pL.n);
        I("ld.global.nc.f32 %s, [%s]", v.n, la.n);
        I("mad.lo.u32 %s, %s, %d, %s", sa.n, ff.n, rowf, bb.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, tb.n);
        I("st.shared.f32 [%s], %s", sa.n, v.n);
        ws_ptx_label(b, next);
        I("add.u32 %s, %s, %d", e.n, e.n, WT);
        I("bra %s", top.n);
        ws_ptx_label(b, end);
        I("bar.sync 0");
    }

    ws_ptx_section(b, "lane = frame, warp = bands wv, wv+8, ..: stores along frames");
    {
        plabel top = ws_ptx_label_new(b, "store"), done = ws_ptx_label_new(b, "done");
        preg lane = ws_ptx_reg(b, PTX_B32), wv = ws_ptx_reg(b, PTX_B32), wa = ws_ptx_reg(b, PTX_B32);
        preg obase = ws_ptx_reg(b, PTX_B64), wf = ws_ptx_reg(b, PTX_B32), valid = ws_ptx_reg(b, PTX_B32);
        preg inc = ws_ptx_reg(b, PTX_B32), fl = ws_ptx_reg(b, PTX_F32), pin = ws_ptx_reg(b, PTX_PRED);
        preg sa = ws_ptx_reg(b, PTX_B32), v = ws_ptx_reg(b, PTX_F32), oa = ws_ptx_reg(b, PTX_B64);
        I("and.b32 %s, %s, 31", lane.n, tid.n);
        I("shr.u32 %s, %s, 5", wv.n, tid.n);
        I("mad.lo.u32 %s, %s, %d, %s", wa.n, lane.n, WI_SIZE, ib.n);
        I("ld.shared.u64 %s, [%s]", obase.n, wa.n);
        I("ld.shared.u32 %s, [%s+8]", wf.n, wa.n);
        I("ld.shared.u32 %s, [%s+12]", valid.n, wa.n);
        I("ld.shared.u32 %s, [%s+16]", inc.n, wa.n);
        I("ld.shared.f32 %s, [%s+20]", fl.n, wa.n);
        I("setp.eq.u32 %s, %s, 0", p.n, valid.n);
        I("@%s bra %s", p.n, done.n);
        I("setp.ne.u32 %s, %s, 0", pin.n, inc.n);
        ws_ptx_label(b, top);
        I("setp.ge.u32 %s, %s, %d", p.n, wv.n, nm);
        I("@%s bra %s", p.n, done.n);
        I("mad.lo.u32 %s, %s, %d, %s", sa.n, lane.n, rowf, wv.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, tb.n);
        I("ld.shared.f32 %s, [%s]", v.n, sa.n);
        I("max.f32 %s, %s, %s", v.n, v.n, fl.n);
        I("add.rn.f32 %s, %s, 0f40800000", v.n, v.n);
        I("mul.rn.f32 %s, %s, 0f3E800000", v.n, v.n);
        I("selp.f32 %s, %s, 0f00000000, %s", v.n, v.n, pin.n);
        I("mul.wide.u32 %s, %s, %s", oa.n, wv.n, wf.n);
        I("add.u64 %s, %s, %s", oa.n, oa.n, obase.n);
        I("shl.b64 %s, %s, 2", oa.n, oa.n);
        I("add.u64 %s, %s, %s", oa.n, oa.n, pout.n);
        I("st.global.f32 [%s], %s", oa.n, v.n);
        I("add.u32 %s, %s, %d", wv.n, wv.n, WT / 32);
        I("bra %s", top.n);
        ws_ptx_label(b, done);
        I("ret");
    }
    ws_ptx_kernel_end_params(b, mod, "ws_mel_write", pt, WT, 0, 0);
}

/* --- ws_mel_f16 --------------------------------------------------------------------- */

static void emit_f16(ptx_buf *mod)
{
    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    ws_ptx_comment(b, "dst[i] = cvt.rn.f16.f32(src[i]), i < count, grid-stride");
    preg ps = ws_ptx_reg(b, PTX_B64), pd = ws_ptx_reg(b, PTX_B64), cnt = ws_ptx_reg(b, PTX_B64);
    preg i = ws_ptx_reg(b, PTX_B64), step = ws_ptx_reg(b, PTX_B64), t = ws_ptx_reg(b, PTX_B32);
    preg t2 = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32);
    preg h = ws_ptx_reg(b, PTX_B16), p = ws_ptx_reg(b, PTX_PRED), tmp = ws_ptx_reg(b, PTX_B64);
    plabel top = ws_ptx_label_new(b, "elem"), done = ws_ptx_label_new(b, "done");
    const ws_params *pt = ws_params_of(WS_PARAMS_MEL_F16);
    ptr_param(b, ps, pt, WS_MF16_SRC);
    ptr_param(b, pd, pt, WS_MF16_DST);
    ws_ptx_ld_param(b, cnt, pt, WS_MF16_COUNT);
    I("mov.u32 %s, %%ctaid.x", t.n);
    I("mov.u32 %s, %%tid.x", t2.n);
    I("mul.wide.u32 %s, %s, %d", i.n, t.n, WS_MEL_F16_THREADS);
    I("cvt.u64.u32 %s, %s", tmp.n, t2.n);
    I("add.u64 %s, %s, %s", i.n, i.n, tmp.n);
    I("mov.u32 %s, %%nctaid.x", t.n);
    I("mul.wide.u32 %s, %s, %d", step.n, t.n, WS_MEL_F16_THREADS);
    ws_ptx_label(b, top);
    I("setp.ge.u64 %s, %s, %s", p.n, i.n, cnt.n);
    I("@%s bra %s", p.n, done.n);
    I("shl.b64 %s, %s, 2", a.n, i.n);
    I("add.u64 %s, %s, %s", a.n, a.n, ps.n);
    I("ld.global.nc.f32 %s, [%s]", v.n, a.n);
    I("cvt.rn.f16.f32 %s, %s", h.n, v.n);
    I("shl.b64 %s, %s, 1", a.n, i.n);
    I("add.u64 %s, %s, %s", a.n, a.n, pd.n);
    I("st.global.b16 [%s], %s", a.n, h.n);
    I("add.u64 %s, %s, %s", i.n, i.n, step.n);
    I("bra %s", top.n);
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(b, mod, "ws_mel_f16", pt, WS_MEL_F16_THREADS, 0, 0);
}

char *ws_mel_emit(int n_mels, int cc_major, int cc_minor, ws_err *err)
{
    if (n_mels != 80 && n_mels != 128)
        return ws_errf(err, "the GPU log-Mel takes 80 or 128 bands, not %d", n_mels), NULL;
    ptx_buf mod;
    ws_ptx_init(&mod);
    char title[96];
    snprintf(title, sizeof title, "the log-Mel spectrogram, %d bands (ptx_mel.c)", n_mels);
    ws_ptx_module_begin(&mod, cc_major, cc_minor, title);
    ws_ptx_raw(&mod, "\n.extern .shared .align 16 .b8 msm[];\n");
    emit_frames(&mod, n_mels);
    emit_write(&mod, n_mels);
    emit_f16(&mod);
    char why[200];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        return ws_errf(err, "log-Mel PTX: %s", why), NULL;
    return text;
}

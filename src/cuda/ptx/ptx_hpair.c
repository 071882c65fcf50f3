/* ptx_hpair.c - the fused pair's emitter (ptx_hpair.h: tiles, threads, the rings). Emission is
 * a pure function of the two descriptors and the cluster size. Tested by tests/test_ptx.c
 * (ptxas, the parameter table) and tests/test_gpu_pair.c (ptxas; on an H100 against the CPU
 * pair and the GPU's two calls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_act.h"
#include "ptx_emit.h"
#include "ptx_epi.h"
#include "ptx_gemm.h"
#include "ptx_hgemm.h"
#include "ptx_hpair.h"
#include "ptx_params.h"

#define I(...) ws_ptx_ins(b, __VA_ARGS__)
#define NA_MAX 128 /* accumulators a consumer thread: 64 positions x 256 channels / 128 */
#define XSTAGERS 96 /* warps 1-3 of warpgroup 0 */

static ws_dtype mtype(const ws_conv_desc *d)
{
    return d->math == WS_MATH_BF16 ? WS_BF16 : WS_F16;
}

static const char *mname(const ws_conv_desc *d)
{
    return d->math == WS_MATH_BF16 ? "bf16" : "f16";
}

/* the weight tile's copies: a block loads rows m / cl in boxes of at most 256 rows */
static int nbox(int m, int cl)
{
    return m / cl > 256 ? 2 : 1;
}

/* the last epilogue's Ys row in floats: NLC y 65 (a thread's channel rows on 32 banks), NCL y
 * 68 (16-byte aligned rows for the vector reads; the accumulators' stores, 4 channels x 8
 * positions a warp, still hit 32 banks) */
static int ys_row(const ws_conv_desc *d2)
{
    return d2->y_layout == WS_NCL ? WS_HPAIR_YS_ROW_NCL : WS_HPAIR_YS_ROW;
}

/* NLC y with C_out % 4 == 0: Ys position-major instead, Ys[64][C_out + 4] (a position's
 * channels in 16-byte groups for the vector reads; the accumulators' pairs of channels, 8
 * positions x 4 pairs a warp, at most 2-way bank conflicted) */
static int ys_pm(const ws_conv_desc *d2)
{
    return d2->y_layout == WS_NLC && d2->c_out % 4 == 0;
}

/* Ys's bytes (before Bs) */
static int ys_bytes(const ws_conv_desc *d2)
{
    return ys_pm(d2) ? WS_HPAIR_P * (d2->c_out + 4) * 4 : d2->c_out * ys_row(d2) * 4;
}

int ws_hpair_geom_of(const ws_conv_desc *d1, const ws_conv_desc *d2, int cl, int bk, ws_hpair_geom *q)
{
    memset(q, 0, sizeof *q);
    if ((cl != 1 && cl != 2) || (bk != 32 && bk != 64))
        return -1;
    const int m1 = d1->c_out, m2 = d2->c_out;
    q->m1 = m1, q->m2 = m2, q->n1 = m1 / 2, q->n2 = m2 / 2, q->cl = cl;
    q->bk = bk, q->wst = bk == 32 ? 4 : 2;
    const long long halo = (long long)d1->dilation * (d1->k - 1);
    if (halo > 4096)
        return -1;
    q->halo = (int)halo;
    q->wsb = (m1 > m2 ? m1 : m2) * bk * 2;
    q->nc1 = (d1->c_in + 63) / 64;
    q->kt1 = q->nc1 * d1->k * (64 / bk), q->kt2 = m1 / bk;
    for (int tb = 8; tb <= WS_HPAIR_P; tb *= 2) {
        const int xr = WS_HPAIR_P + (WS_HPAIR_P / tb) * q->halo;
        q->xr = xr, q->xcb = xr * 128, q->tbmin = tb;
        /* the weight ring, h (GEMM 1's extra weight slots until its epilogue), the x ring */
        q->hoff = q->wst * q->wsb;
        q->ws1 = q->wst + m1 * 128 / q->wsb;
        q->xoff = q->hoff + m1 * 128;
        q->boff = q->xoff + WS_HPAIR_XST * q->xcb;
        q->smem = 1024 + q->boff + 8 * 2 * (q->ws1 + WS_HPAIR_XST);
        /* the last epilogue's Ys (ys_bytes) and Bs[C_out] over the weight ring and h */
        const int ys = ys_bytes(d2) + m2 * 4;
        if (q->smem <= WS_HPAIR_SMEM_MAX && ys <= q->xoff)
            return 0;
    }
    return -1;
}

int ws_hpair_lgtb(const ws_hpair_geom *q, int t_out)
{
    int lg = 3;
    while ((1 << lg) < q->tbmin || ((1 << lg) < t_out && (1 << lg) < WS_HPAIR_P))
        lg++;
    return lg;
}

static int kmajor_packed(const ws_conv_desc *d)
{
    return ws_gemm_packs(d) && ws_gemm_mma(d) && ws_gemm_mma_kmajor(d);
}

int ws_hpair_fits(const ws_conv_desc *d1, const ws_conv_desc *d2, int cc_major, int cc_minor)
{
    if (!WS_HGEMM || cc_major != 9 || cc_minor != 0)
        return 0;
    if (d1->op != WS_CONV_FWD || d2->op != WS_CONV_FWD || d1->groups != 1 || d2->groups != 1)
        return 0;
    if (d1->math != d2->math || (d1->math != WS_MATH_BF16 && d1->math != WS_MATH_F16))
        return 0;
    if (d1->stride != 1 || !kmajor_packed(d1) || !kmajor_packed(d2))
        return 0;
    if (d2->k != 1 || d2->stride != 1 || d2->dilation != 1 || d2->pad_l || d2->pad_r ||
        d2->c_in != d1->c_out || d2->x_layout != d1->y_layout || d2->x_type != d1->y_type)
        return 0;
    /* h rounded once to the math type, as the chain rounds it */
    if (d1->y_type != WS_F32 && d1->y_type != mtype(d1))
        return 0;
    if (d1->c_out % 64 || d1->c_out < 64 || d1->c_out > 512 || d2->c_out % 16 || d2->c_out < 32 ||
        d2->c_out > 512)
        return 0;
    ws_hpair_geom q;
    return ws_hpair_geom_of(d1, d2, 2, WS_HPAIR_BK, &q) == 0;
}

void ws_hpair_name(const ws_conv_desc *d1, const ws_conv_desc *d2, int cl, int bk, char name[WS_HPAIR_NAME_MAX])
{
    snprintf(name, WS_HPAIR_NAME_MAX, "ws_hpair_%s_c%d_%d_%d_k%d_d%d_p%d_%s_%s_%s_%s_%s_%s_%s_%s_cl%d_bk%d",
             mname(d1), d1->c_in, d1->c_out, d2->c_out, d1->k, d1->dilation, d1->pad_l,
             d1->x_layout == WS_NCL ? "ncl" : "nlc", d2->y_layout == WS_NCL ? "ncl" : "nlc",
             ws_ptx_type_name(d1->x_type), ws_ptx_type_name(d2->y_type), ws_ptx_act_name(d1->pre),
             ws_ptx_act_name(d1->act), ws_ptx_act_name(d2->pre), ws_ptx_act_name(d2->act), cl, bk);
}

/* waits for use u of a barrier (u's parity) */
static void emit_wait_use(ptx_buf *b, preg bar, preg u, int cluster)
{
    preg par = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 1", par.n, u.n);
    ws_hgemm_wait(b, bar, par, cluster);
}

/* two float32 values of a 16-bit pair (lo, hi) of type t */
static void emit_unpack(ptx_buf *b, ws_dtype t, preg pair, preg f0, preg f1)
{
    if (t == WS_BF16) {
        preg u = ws_ptx_reg(b, PTX_B32);
        I("shl.b32 %s, %s, 16", u.n, pair.n);
        I("mov.b32 %s, %s", f0.n, u.n);
        I("and.b32 %s, %s, -65536", u.n, pair.n);
        I("mov.b32 %s, %s", f1.n, u.n);
    } else {
        preg h0 = ws_ptx_reg(b, PTX_B16), h1 = ws_ptx_reg(b, PTX_B16);
        I("mov.b32 {%s, %s}, %s", h0.n, h1.n, pair.n);
        I("cvt.f32.f16 %s, %s", f0.n, h0.n);
        I("cvt.f32.f16 %s, %s", f1.n, h1.n);
    }
}

/* pair = (lo f0, hi f1) rounded to the math type */
static void emit_pack(ptx_buf *b, const ws_conv_desc *d, preg pair, preg f0, preg f1)
{
    I("cvt.rn.%s.f32 %s, %s, %s", mtype(d) == WS_BF16 ? "bf16x2" : "f16x2", pair.n, f1.n, f0.n);
}

/* 8 consecutive x elements at a (16 bytes of a 16-bit type, 32 of float32) where ok, zeros
 * elsewhere, as 4 pairs w[] of the math type: float32 gets pre applied and is rounded here;
 * a 16-bit x stays as loaded (emit_x8_finish converts it after the loads in flight) */
static void emit_x8_load(ptx_buf *b, const ws_conv_desc *d, preg ok, preg a, preg w[4])
{
    for (int i = 0; i < 4; i++)
        w[i] = ws_ptx_reg(b, PTX_B32);
    if (d->x_type == WS_F32) {
        preg f[8];
        for (int i = 0; i < 8; i++) {
            f[i] = ws_ptx_reg(b, PTX_F32);
            I("mov.f32 %s, 0f00000000", f[i].n);
        }
        I("@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s]", ok.n, f[0].n, f[1].n, f[2].n, f[3].n, a.n);
        I("@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s+16]", ok.n, f[4].n, f[5].n, f[6].n, f[7].n, a.n);
        for (int i = 0; i < 8; i++)
            ws_ptx_act(b, f[i], d->pre);
        for (int i = 0; i < 4; i++)
            emit_pack(b, d, w[i], f[2 * i], f[2 * i + 1]);
    } else {
        for (int i = 0; i < 4; i++)
            I("mov.b32 %s, 0", w[i].n);
        I("@%s ld.global.nc.v4.b32 {%s, %s, %s, %s}, [%s]", ok.n, w[0].n, w[1].n, w[2].n, w[3].n, a.n);
    }
}

/* a 16-bit x's pairs from emit_x8_load into the math type with pre applied (nothing to do for
 * float32, or for the math type without pre) */
static void emit_x8_finish(ptx_buf *b, const ws_conv_desc *d, preg w[4])
{
    if (d->x_type == WS_F32 || (d->x_type == mtype(d) && d->pre == WS_ACT_NONE))
        return;
    for (int i = 0; i < 4; i++) {
        preg f0 = ws_ptx_reg(b, PTX_F32), f1 = ws_ptx_reg(b, PTX_F32);
        emit_unpack(b, d->x_type, w[i], f0, f1);
        ws_ptx_act(b, f0, d->pre);
        ws_ptx_act(b, f1, d->pre);
        emit_pack(b, d, w[i], f0, f1);
    }
}

/* ---- shared state of the emission ---- */
typedef struct {
    const ws_conv_desc *d1, *d2;
    ws_hpair_geom q;
    const ws_params *pt;
    preg tid, sbase, bars, t0, n0, lgtb, rank;
} hp;

/* the mbarriers after h: wfull[WST], wempty[WST], xfull[XST], xempty[XST] */
static int bar_off(const ws_hpair_geom *q, int which)
{
    return which == 0 ? 0 : which == 1 ? 8 * q->ws1 : which == 2 ? 16 * q->ws1 : 16 * q->ws1 + 8 * WS_HPAIR_XST;
}

static void bar_addr(ptx_buf *b, const hp *h, preg out, int which, preg idx)
{
    /* which: 0 wfull, 1 wempty, 2 xfull, 3 xempty; slot idx */
    I("mad.lo.u32 %s, %s, 8, %s", out.n, idx.n, h->bars.n);
    if (which)
        I("add.u32 %s, %s, %d", out.n, out.n, bar_off(&h->q, which));
}

/* the ring position of stage `it` (both GEMMs counted): GEMM 1 (it < KT1) over ws1 slots,
 * s = it % ws1, use u = it / ws1; GEMM 2 over the first wst slots, j = it - KT1, s = j % wst,
 * u = j / wst + the uses GEMM 1 made of slot s */
static void emit_slot_of(ptx_buf *b, const hp *h, preg it, preg s, preg u)
{
    const ws_hpair_geom *q = &h->q;
    preg g1 = ws_ptx_reg(b, PTX_PRED), j = ws_ptx_reg(b, PTX_B32), s2 = ws_ptx_reg(b, PTX_B32);
    preg u2 = ws_ptx_reg(b, PTX_B32), ub = ws_ptx_reg(b, PTX_B32), ps = ws_ptx_reg(b, PTX_PRED);
    I("setp.lt.u32 %s, %s, %d", g1.n, it.n, q->kt1);
    I("rem.u32 %s, %s, %d", s.n, it.n, q->ws1);
    I("div.u32 %s, %s, %d", u.n, it.n, q->ws1);
    I("sub.u32 %s, %s, %d", j.n, it.n, q->kt1);
    I("and.b32 %s, %s, %d", s2.n, j.n, q->wst - 1);
    I("shr.u32 %s, %s, %d", u2.n, j.n, q->wst == 4 ? 2 : 1);
    I("mov.u32 %s, %d", ub.n, (q->kt1 + q->ws1 - 1) / q->ws1);
    for (int k = 1; k < q->wst; k++) {
        I("setp.eq.u32 %s, %s, %d", ps.n, s2.n, k);
        I("@%s mov.u32 %s, %d", ps.n, ub.n, (q->kt1 - k + q->ws1 - 1) / q->ws1);
    }
    I("add.u32 %s, %s, %s", u2.n, u2.n, ub.n);
    I("@!%s mov.u32 %s, %s", g1.n, s.n, s2.n);
    I("@!%s mov.u32 %s, %s", g1.n, u.n, u2.n);
}

/* ---- the producer's thread 0: the weight tiles of both GEMMs, KT1 + KT2 stages ---- */
static void emit_wcopies(ptx_buf *b, const hp *h)
{
    const ws_hpair_geom *q = &h->q;
    const int cl = q->cl, K = h->d1->k, BK = q->bk;
    ws_ptx_section(b, "producer thread 0: weight tiles, GEMM 1 (chunk of 64 channels, tap, half) then GEMM 2");
    preg t1 = ws_ptx_reg(b, PTX_B64), t2 = ws_ptx_reg(b, PTX_B64);
    ws_ptx_param_tmap(b, t1, h->pt, WS_PR_T1);
    ws_ptx_param_tmap(b, t2, h->pt, WS_PR_T2);
    preg it = ws_ptx_reg(b, PTX_B32), c0 = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32);
    preg hf = ws_ptx_reg(b, PTX_B32), ch = ws_ptx_reg(b, PTX_B32);
    preg j2 = ws_ptx_reg(b, PTX_B32), s = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
    preg mask = ws_ptx_reg(b, PTX_B16), zero = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", it.n);
    I("mov.u32 %s, 0", c0.n);
    I("mov.u32 %s, 0", k.n);
    I("mov.u32 %s, 0", hf.n);
    I("mov.u32 %s, 0", j2.n);
    I("mov.u32 %s, 0", zero.n);
    I("mov.b16 %s, %d", mask.n, (1 << cl) - 1);
    plabel top = ws_ptx_label_new(b, "wtop"), first = ws_ptx_label_new(b, "wfirst");
    ws_ptx_label(b, top);
    emit_slot_of(b, h, it, s, u);
    {
        preg p0 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B32), pu = ws_ptx_reg(b, PTX_B32);
        I("setp.eq.u32 %s, %s, 0", p0.n, u.n);
        I("@%s bra %s", p0.n, first.n);
        ws_ptx_comment(b, "slot s free: use u - 1 released by the consumer warps of %s", cl > 1 ? "both blocks" : "the block");
        bar_addr(b, h, e, 1, s);
        I("sub.u32 %s, %s, 1", pu.n, u.n);
        emit_wait_use(b, e, pu, cl > 1);
    }
    ws_ptx_label(b, first);
    preg full = ws_ptx_reg(b, PTX_B32), dst = ws_ptx_reg(b, PTX_B32), g1 = ws_ptx_reg(b, PTX_PRED);
    bar_addr(b, h, full, 0, s);
    I("mad.lo.u32 %s, %s, %d, %s", dst.n, s.n, q->wsb, h->sbase.n);
    I("setp.lt.u32 %s, %s, %d", g1.n, it.n, q->kt1);
    I("@%s mbarrier.arrive.expect_tx.shared::cta.b64 _, [%s], %d", g1.n, full.n, q->m1 * BK * 2);
    I("@!%s mbarrier.arrive.expect_tx.shared::cta.b64 _, [%s], %d", g1.n, full.n, q->m2 * BK * 2);
    I("mad.lo.u32 %s, %s, %d, %s", ch.n, hf.n, BK, c0.n);
    for (int gm = 0; gm < 2; gm++) {
        const int m = gm ? q->m2 : q->m1, nb = nbox(m, cl), br = m / (cl * nb);
        for (int i = 0; i < nb; i++) {
            preg row = ws_ptx_reg(b, PTX_B32), da = ws_ptx_reg(b, PTX_B32);
            I("mul.lo.u32 %s, %s, %d", row.n, h->rank.n, m / cl);
            if (i)
                I("add.u32 %s, %s, %d", row.n, row.n, i * br);
            I("mad.lo.u32 %s, %s, %d, %s", da.n, row.n, BK * 2, dst.n);
            char pre[24];
            snprintf(pre, sizeof pre, "@%s%s", gm ? "!" : "", g1.n);
            if (cl > 1)
                I("%s cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster "
                  "[%s], [%s, {%s, %s, %s}], [%s], %s",
                  pre, da.n, gm ? t2.n : t1.n, gm ? j2.n : ch.n, gm ? zero.n : k.n, row.n, full.n, mask.n);
            else
                I("%s cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                  "[%s], [%s, {%s, %s, %s}], [%s]",
                  pre, da.n, gm ? t2.n : t1.n, gm ? j2.n : ch.n, gm ? zero.n : k.n, row.n, full.n);
        }
    }
    {
        preg wrap = ws_ptx_reg(b, PTX_PRED), more = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_comment(b, "GEMM 1: the other half, else tap k + 1, else the next chunk; GEMM 2: channels j2 + %d", BK);
        if (BK == 32)
            I("@%s xor.b32 %s, %s, 1", g1.n, hf.n, hf.n);
        I("setp.eq.and.u32 %s, %s, 0, %s", wrap.n, hf.n, g1.n);
        I("@%s add.u32 %s, %s, 1", wrap.n, k.n, k.n);
        I("setp.eq.and.u32 %s, %s, %d, %s", wrap.n, k.n, K, wrap.n);
        I("@%s mov.u32 %s, 0", wrap.n, k.n);
        I("@%s add.u32 %s, %s, 64", wrap.n, c0.n, c0.n);
        I("@!%s add.u32 %s, %s, %d", g1.n, j2.n, j2.n, BK);
        I("add.u32 %s, %s, 1", it.n, it.n);
        I("setp.lt.u32 %s, %s, %d", more.n, it.n, q->kt1 + q->kt2);
        I("@%s bra %s", more.n, top.n);
    }
}

/* ---- warps 1-3: x chunks into the x ring ---- */
static void emit_xstage(ptx_buf *b, const hp *h)
{
    const ws_conv_desc *d = h->d1;
    const ws_hpair_geom *q = &h->q;
    const ws_dtype mt = mtype(d), xt = d->x_type;
    const int xs = xt == WS_F32 ? 4 : 2, ncl = d->x_layout == WS_NCL;
    const int raw = xt == mt && d->pre == WS_ACT_NONE; /* 16-bit pairs stored as they are */
    ws_ptx_section(b, "warps 1-3: x chunk c (channels 64c..) of the block's items, pre applied, "
                      "rows nb*RX + i at input time t0 - P_L + i");
    preg xi = ws_ptx_reg(b, PTX_B32), lane = ws_ptx_reg(b, PTX_B32), xw = ws_ptx_reg(b, PTX_B32);
    preg px = ws_ptx_reg(b, PTX_B64), n32 = ws_ptx_reg(b, PTX_B32), tin = ws_ptx_reg(b, PTX_B32);
    preg nbn = ws_ptx_reg(b, PTX_B32), rx = ws_ptx_reg(b, PTX_B32), u0 = ws_ptx_reg(b, PTX_B32);
    preg c = ws_ptx_reg(b, PTX_B32), c0 = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    I("sub.u32 %s, %s, 32", xi.n, h->tid.n);
    I("and.b32 %s, %s, 31", lane.n, h->tid.n);
    I("shr.u32 %s, %s, 5", xw.n, xi.n);
    ws_ptx_ld_param(b, px, h->pt, WS_PR_X);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    ws_ptx_ld_param(b, n32, h->pt, WS_PR_N);
    ws_ptx_ld_param(b, tin, h->pt, WS_PR_T_IN);
    preg vec = ws_ptx_reg(b, PTX_PRED);
    if (ncl) {
        preg t7 = ws_ptx_reg(b, PTX_B32), x15 = ws_ptx_reg(b, PTX_B64), pa = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_comment(b, "NCL rows read 8 times (16 bytes) at a time where T_in %% 8 == 0 and x is 16-byte aligned");
        I("and.b32 %s, %s, 7", t7.n, tin.n);
        I("and.b64 %s, %s, 15", x15.n, px.n);
        I("setp.eq.u32 %s, %s, 0", vec.n, t7.n);
        I("setp.eq.u64 %s, %s, 0", pa.n, x15.n);
        I("and.pred %s, %s, %s", vec.n, vec.n, pa.n);
    }
    ws_ptx_comment(b, "NB = 64 >> lgtb items, RX = TB + %d rows an item", q->halo);
    I("sub.u32 %s, 6, %s", tmp.n, h->lgtb.n);
    I("shl.b32 %s, 1, %s", nbn.n, tmp.n);
    I("shl.b32 %s, 1, %s", rx.n, h->lgtb.n);
    I("add.u32 %s, %s, %d", rx.n, rx.n, q->halo);
    I("sub.s32 %s, %s, %d", u0.n, h->t0.n, d->pad_l);
    I("mov.u32 %s, 0", c.n);
    I("mov.u32 %s, 0", c0.n);
    plabel ctop = ws_ptx_label_new(b, "xchunk"), cfirst = ws_ptx_label_new(b, "xfirst");
    ws_ptx_label(b, ctop);
    preg xs_ = ws_ptx_reg(b, PTX_B32), v = ws_ptx_reg(b, PTX_B32), xb = ws_ptx_reg(b, PTX_B32);
    I("and.b32 %s, %s, 1", xs_.n, c.n);
    I("shr.u32 %s, %s, 1", v.n, c.n);
    {
        preg p0 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B32), pv = ws_ptx_reg(b, PTX_B32);
        I("setp.eq.u32 %s, %s, 0", p0.n, v.n);
        I("@%s bra %s", p0.n, cfirst.n);
        bar_addr(b, h, e, 3, xs_);
        I("sub.u32 %s, %s, 1", pv.n, v.n);
        emit_wait_use(b, e, pv, 0);
    }
    ws_ptx_label(b, cfirst);
    I("mad.lo.u32 %s, %s, %d, %s", xb.n, xs_.n, q->xcb, h->sbase.n);
    I("add.u32 %s, %s, %d", xb.n, xb.n, q->xoff);
    preg nb = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), nok = ws_ptx_reg(b, PTX_PRED);
    I("mov.u32 %s, 0", nb.n);
    plabel ntop = ws_ptx_label_new(b, "xitem");
    ws_ptx_label(b, ntop);
    I("add.u32 %s, %s, %s", n.n, h->n0.n, nb.n);
    I("setp.lt.u32 %s, %s, %s", nok.n, n.n, n32.n);
    preg rowb = ws_ptx_reg(b, PTX_B32);
    I("mul.lo.u32 %s, %s, %s", rowb.n, nb.n, rx.n);
    if (!ncl) {
        ws_ptx_comment(b, "NLC: a thread 8 channels (q = xi %% 8) of rows i = xi / 8 + 12m");
        preg r = ws_ptx_reg(b, PTX_B32), qq = ws_ptx_reg(b, PTX_B32), ch = ws_ptx_reg(b, PTX_B32);
        preg chok = ws_ptx_reg(b, PTX_PRED), rowsz = ws_ptx_reg(b, PTX_B64);
        I("shr.u32 %s, %s, 3", r.n, xi.n);
        I("and.b32 %s, %s, 7", qq.n, xi.n);
        I("shl.b32 %s, %s, 3", ch.n, qq.n);
        I("add.u32 %s, %s, %s", ch.n, ch.n, c0.n);
        I("setp.lt.and.u32 %s, %s, %d, %s", chok.n, ch.n, d->c_in, nok.n);
        /* NR rows a step, their loads in flight together */
        const int NR = xt == WS_F32 ? 2 : 4, RS = XSTAGERS / 8;
        plabel rtop = ws_ptx_label_new(b, "xrow"), rdone = ws_ptx_label_new(b, "xrow_done");
        ws_ptx_label(b, rtop);
        {
            preg pr = ws_ptx_reg(b, PTX_PRED);
            I("setp.ge.u32 %s, %s, %s", pr.n, r.n, rx.n);
            I("@%s bra %s", pr.n, rdone.n);
        }
        preg w[4][4], rin[4];
        for (int e = 0; e < NR; e++) {
            preg rr = ws_ptx_reg(b, PTX_B32), uu = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
            preg a = ws_ptx_reg(b, PTX_B64);
            rin[e] = ws_ptx_reg(b, PTX_PRED);
            I("add.u32 %s, %s, %d", rr.n, r.n, RS * e);
            I("setp.lt.u32 %s, %s, %s", rin[e].n, rr.n, rx.n);
            I("add.u32 %s, %s, %s", uu.n, u0.n, rr.n);
            I("setp.lt.and.u32 %s, %s, %s, %s", ok.n, uu.n, tin.n, chok.n);
            I("and.pred %s, %s, %s", ok.n, ok.n, rin[e].n);
            ws_ptx_comment(b, "x + ((n*T_in + u)*C_in + ch)*%d (used only where ok)", xs);
            I("mul.wide.u32 %s, %s, %s", a.n, n.n, tin.n);
            I("cvt.u64.u32 %s, %s", rowsz.n, uu.n);
            I("add.u64 %s, %s, %s", a.n, a.n, rowsz.n);
            I("mul.lo.u64 %s, %s, %d", a.n, a.n, d->c_in);
            I("cvt.u64.u32 %s, %s", rowsz.n, ch.n);
            I("add.u64 %s, %s, %s", a.n, a.n, rowsz.n);
            I("mad.lo.u64 %s, %s, %d, %s", a.n, a.n, xs, px.n);
            emit_x8_load(b, d, ok, a, w[e]);
        }
        for (int e = 0; e < NR; e++) {
            emit_x8_finish(b, d, w[e]);
            preg row = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), sw = ws_ptx_reg(b, PTX_B32);
            I("add.u32 %s, %s, %s", row.n, rowb.n, r.n);
            I("add.u32 %s, %s, %d", row.n, row.n, RS * e);
            I("and.b32 %s, %s, 7", sw.n, row.n);
            I("xor.b32 %s, %s, %s", sw.n, sw.n, qq.n);
            I("shl.b32 %s, %s, 4", sw.n, sw.n);
            I("mad.lo.u32 %s, %s, 128, %s", sa.n, row.n, xb.n);
            I("add.u32 %s, %s, %s", sa.n, sa.n, sw.n);
            I("@%s st.shared.v4.b32 [%s], {%s, %s, %s, %s}", rin[e].n, sa.n, w[e][0].n, w[e][1].n, w[e][2].n, w[e][3].n);
        }
        I("add.u32 %s, %s, %d", r.n, r.n, RS * NR);
        I("bra %s", rtop.n);
        ws_ptx_label(b, rdone);
    } else {
        plabel scalar = ws_ptx_label_new(b, "xscalar");
        I("@!%s bra %s", vec.n, scalar.n);
        {
            ws_ptx_comment(b, "NCL by 16 bytes: unit w = xi + 96m is channel j = w %% 64 of segment w / 64, the 8 "
                              "times 8*(seg0 + w / 64).. (wholly inside or outside [0, T_in))");
            preg seg0 = ws_ptx_reg(b, PTX_B32), nseg = ws_ptx_reg(b, PTX_B32), w = ws_ptx_reg(b, PTX_B32);
            preg tmp2 = ws_ptx_reg(b, PTX_B32);
            I("shr.s32 %s, %s, 3", seg0.n, u0.n);
            I("add.u32 %s, %s, %s", tmp2.n, u0.n, rx.n);
            I("sub.u32 %s, %s, 1", tmp2.n, tmp2.n);
            I("shr.s32 %s, %s, 3", nseg.n, tmp2.n);
            I("sub.u32 %s, %s, %s", nseg.n, nseg.n, seg0.n);
            I("add.u32 %s, %s, 1", nseg.n, nseg.n);
            I("mov.u32 %s, %s", w.n, xi.n);
            plabel wtop = ws_ptx_label_new(b, "xvec"), wdone = ws_ptx_label_new(b, "xvec_done");
            ws_ptx_label(b, wtop);
            {
                preg sg = ws_ptx_reg(b, PTX_B32), pr = ws_ptx_reg(b, PTX_PRED);
                I("shr.u32 %s, %s, 6", sg.n, w.n);
                I("setp.ge.u32 %s, %s, %s", pr.n, sg.n, nseg.n);
                I("@%s bra %s", pr.n, wdone.n);
            }
            enum { NU = 4 }; /* units a step: their loads in flight together */
            preg wv[NU][4], uin[NU], useg[NU], jj[NU];
            for (int k = 0; k < NU; k++) {
                preg sg = ws_ptx_reg(b, PTX_B32), ch = ws_ptx_reg(b, PTX_B32), wk = ws_ptx_reg(b, PTX_B32);
                preg ok = ws_ptx_reg(b, PTX_PRED), pr = ws_ptx_reg(b, PTX_PRED);
                preg a = ws_ptx_reg(b, PTX_B64), t64 = ws_ptx_reg(b, PTX_B64);
                uin[k] = ws_ptx_reg(b, PTX_PRED), useg[k] = ws_ptx_reg(b, PTX_B32), jj[k] = ws_ptx_reg(b, PTX_B32);
                I("add.u32 %s, %s, %d", wk.n, w.n, XSTAGERS * k);
                I("shr.u32 %s, %s, 6", sg.n, wk.n);
                I("setp.lt.u32 %s, %s, %s", uin[k].n, sg.n, nseg.n);
                I("and.b32 %s, %s, 63", jj[k].n, wk.n);
                I("add.u32 %s, %s, %s", ch.n, c0.n, jj[k].n);
                I("add.u32 %s, %s, %s", useg[k].n, seg0.n, sg.n);
                I("shl.b32 %s, %s, 3", useg[k].n, useg[k].n);
                I("setp.lt.and.u32 %s, %s, %s, %s", ok.n, useg[k].n, tin.n, uin[k].n); /* useg < 0 wraps */
                I("setp.lt.and.u32 %s, %s, %d, %s", pr.n, ch.n, d->c_in, nok.n);
                I("and.pred %s, %s, %s", ok.n, ok.n, pr.n);
                ws_ptx_comment(b, "x + ((n*C_in + ch)*T_in + useg)*%d (used only where ok)", xs);
                I("mul.wide.u32 %s, %s, %d", a.n, n.n, d->c_in);
                I("cvt.u64.u32 %s, %s", t64.n, ch.n);
                I("add.u64 %s, %s, %s", a.n, a.n, t64.n);
                I("cvt.u64.u32 %s, %s", t64.n, tin.n);
                I("mul.lo.u64 %s, %s, %s", a.n, a.n, t64.n);
                I("cvt.u64.u32 %s, %s", t64.n, useg[k].n);
                I("add.u64 %s, %s, %s", a.n, a.n, t64.n);
                I("mad.lo.u64 %s, %s, %d, %s", a.n, a.n, xs, px.n);
                emit_x8_load(b, d, ok, a, wv[k]);
            }
            for (int k = 0; k < NU; k++) {
                emit_x8_finish(b, d, wv[k]);
                ws_ptx_comment(b, "the 8 times into rows r = useg + e - u0 in [0, RX): channel j of row nb*RX + r");
                preg r0 = ws_ptx_reg(b, PTX_B32), cb = ws_ptx_reg(b, PTX_B32), jq = ws_ptx_reg(b, PTX_B32);
                I("sub.u32 %s, %s, %s", r0.n, useg[k].n, u0.n);
                I("shr.u32 %s, %s, 3", jq.n, jj[k].n);
                I("and.b32 %s, %s, 7", cb.n, jj[k].n);
                I("shl.b32 %s, %s, 1", cb.n, cb.n);
                I("add.u32 %s, %s, %s", cb.n, cb.n, xb.n);
                for (int e = 0; e < 8; e++) {
                    preg r = ws_ptx_reg(b, PTX_B32), in = ws_ptx_reg(b, PTX_PRED), row = ws_ptx_reg(b, PTX_B32);
                    preg sw = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), hv = ws_ptx_reg(b, PTX_B16);
                    preg hx = ws_ptx_reg(b, PTX_B16);
                    I("add.u32 %s, %s, %d", r.n, r0.n, e);
                    I("setp.lt.and.u32 %s, %s, %s, %s", in.n, r.n, rx.n, uin[k].n); /* r < 0 wraps above RX */
                    I("add.u32 %s, %s, %s", row.n, rowb.n, r.n);
                    I("and.b32 %s, %s, 7", sw.n, row.n);
                    I("xor.b32 %s, %s, %s", sw.n, sw.n, jq.n);
                    I("shl.b32 %s, %s, 4", sw.n, sw.n);
                    I("mad.lo.u32 %s, %s, 128, %s", sa.n, row.n, cb.n);
                    I("add.u32 %s, %s, %s", sa.n, sa.n, sw.n);
                    if (e % 2 == 0)
                        I("mov.b32 {%s, %s}, %s", hv.n, hx.n, wv[k][e / 2].n);
                    else
                        I("mov.b32 {%s, %s}, %s", hx.n, hv.n, wv[k][e / 2].n);
                    I("@%s st.shared.b16 [%s], %s", in.n, sa.n, hv.n);
                }
            }
            I("add.u32 %s, %s, %d", w.n, w.n, XSTAGERS * NU);
            I("bra %s", wtop.n);
            ws_ptx_label(b, wdone);
        }
        plabel ncl_done = ws_ptx_label_new(b, "xncl_done");
        I("bra %s", ncl_done.n);
        ws_ptx_label(b, scalar);
        ws_ptx_comment(b, "NCL: lanes rows i = lane + 32m; a warp channel pairs jp = warp + 3j, 4 pairs (8 loads) "
                          "in flight");
        preg a0 = ws_ptx_reg(b, PTX_B64), t64 = ws_ptx_reg(b, PTX_B64), ts2 = ws_ptx_reg(b, PTX_B64);
        preg ts1 = ws_ptx_reg(b, PTX_B64), lim = ws_ptx_reg(b, PTX_B32), r = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "a0 = x + ((n*C_in + c0 + 2*warp)*T_in)*%d; pairs 2*T_in*%d bytes apart", xs, xs);
        I("mul.wide.u32 %s, %s, %d", a0.n, n.n, d->c_in);
        I("shl.b32 %s, %s, 1", tmp.n, xw.n);
        I("add.u32 %s, %s, %s", tmp.n, tmp.n, c0.n);
        I("cvt.u64.u32 %s, %s", t64.n, tmp.n);
        I("add.u64 %s, %s, %s", a0.n, a0.n, t64.n);
        I("mul.wide.u32 %s, %s, %d", ts1.n, tin.n, xs);
        I("mul.lo.u64 %s, %s, %s", a0.n, a0.n, ts1.n);
        I("add.u64 %s, %s, %s", a0.n, a0.n, px.n);
        I("shl.b64 %s, %s, 1", ts2.n, ts1.n);
        I("sub.u32 %s, %d, %s", lim.n, d->c_in, c0.n);
        I("mov.u32 %s, %s", r.n, lane.n);
        plabel rtop = ws_ptx_label_new(b, "xrow"), rdone = ws_ptx_label_new(b, "xrow_done");
        ws_ptx_label(b, rtop);
        {
            preg pr = ws_ptx_reg(b, PTX_PRED);
            I("setp.ge.u32 %s, %s, %s", pr.n, r.n, rx.n);
            I("@%s bra %s", pr.n, rdone.n);
        }
        preg uu = ws_ptx_reg(b, PTX_B32), uok = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64);
        preg row = ws_ptx_reg(b, PTX_B32), rsa = ws_ptx_reg(b, PTX_B32), sw = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", uu.n, u0.n, r.n);
        I("setp.lt.and.u32 %s, %s, %s, %s", uok.n, uu.n, tin.n, nok.n);
        I("mad.wide.u32 %s, %s, %d, %s", e.n, uu.n, xs, a0.n);
        I("add.u32 %s, %s, %s", row.n, rowb.n, r.n);
        I("and.b32 %s, %s, 7", sw.n, row.n);
        I("mad.lo.u32 %s, %s, 128, %s", rsa.n, row.n, xb.n);
        for (int g4 = 0; g4 < 3; g4++) {
            preg ok[4], jv[4], jp[4];
            preg f0[4], f1[4];
            preg h0[4], h1[4];
            for (int i = 0; i < 4; i++) {
                const int j = 4 * g4 + i;
                preg ad0 = ws_ptx_reg(b, PTX_B64), ad1 = ws_ptx_reg(b, PTX_B64), c2 = ws_ptx_reg(b, PTX_B32);
                ok[i] = ws_ptx_reg(b, PTX_PRED), jv[i] = ws_ptx_reg(b, PTX_PRED), jp[i] = ws_ptx_reg(b, PTX_B32);
                I("add.u32 %s, %s, %d", jp[i].n, xw.n, 3 * j);
                I("setp.lt.u32 %s, %s, 32", jv[i].n, jp[i].n);
                I("shl.b32 %s, %s, 1", c2.n, jp[i].n);
                I("setp.lt.and.u32 %s, %s, %s, %s", ok[i].n, c2.n, lim.n, jv[i].n);
                I("and.pred %s, %s, %s", ok[i].n, ok[i].n, uok.n);
                I("mad.lo.u64 %s, %s, %d, %s", ad0.n, ts2.n, 3 * j, e.n);
                I("add.u64 %s, %s, %s", ad1.n, ad0.n, ts1.n);
                if (xt == WS_F32) {
                    f0[i] = ws_ptx_reg(b, PTX_F32), f1[i] = ws_ptx_reg(b, PTX_F32);
                    I("mov.f32 %s, 0f00000000", f0[i].n);
                    I("mov.f32 %s, 0f00000000", f1[i].n);
                    I("@%s ld.global.nc.f32 %s, [%s]", ok[i].n, f0[i].n, ad0.n);
                    I("@%s ld.global.nc.f32 %s, [%s]", ok[i].n, f1[i].n, ad1.n);
                } else {
                    h0[i] = ws_ptx_reg(b, PTX_B16), h1[i] = ws_ptx_reg(b, PTX_B16);
                    I("mov.b16 %s, 0", h0[i].n);
                    I("mov.b16 %s, 0", h1[i].n);
                    I("@%s ld.global.nc.b16 %s, [%s]", ok[i].n, h0[i].n, ad0.n);
                    I("@%s ld.global.nc.b16 %s, [%s]", ok[i].n, h1[i].n, ad1.n);
                }
            }
            for (int i = 0; i < 4; i++) {
                preg w = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), q4 = ws_ptx_reg(b, PTX_B32);
                if (xt == WS_F32) {
                    ws_ptx_act(b, f0[i], d->pre);
                    ws_ptx_act(b, f1[i], d->pre);
                    emit_pack(b, d, w, f0[i], f1[i]);
                } else {
                    I("mov.b32 %s, {%s, %s}", w.n, h0[i].n, h1[i].n);
                    if (!raw) {
                        preg g0 = ws_ptx_reg(b, PTX_F32), g1 = ws_ptx_reg(b, PTX_F32);
                        emit_unpack(b, xt, w, g0, g1);
                        ws_ptx_act(b, g0, d->pre);
                        ws_ptx_act(b, g1, d->pre);
                        emit_pack(b, d, w, g0, g1);
                    }
                }
                ws_ptx_comment(b, "pair jp: 16-byte chunk (jp / 4) ^ (row %% 8), word jp %% 4");
                I("shr.u32 %s, %s, 2", q4.n, jp[i].n);
                I("xor.b32 %s, %s, %s", q4.n, q4.n, sw.n);
                I("shl.b32 %s, %s, 4", q4.n, q4.n);
                I("add.u32 %s, %s, %s", sa.n, rsa.n, q4.n);
                I("and.b32 %s, %s, 3", q4.n, jp[i].n);
                I("mad.lo.u32 %s, %s, 4, %s", sa.n, q4.n, sa.n);
                I("@%s st.shared.b32 [%s], %s", jv[i].n, sa.n, w.n);
            }
        }
        I("add.u32 %s, %s, 32", r.n, r.n);
        I("bra %s", rtop.n);
        ws_ptx_label(b, rdone);
        ws_ptx_label(b, ncl_done);
    }
    {
        preg more = ws_ptx_reg(b, PTX_PRED);
        I("add.u32 %s, %s, 1", nb.n, nb.n);
        I("setp.lt.u32 %s, %s, %s", more.n, nb.n, nbn.n);
        I("@%s bra %s", more.n, ntop.n);
    }
    {
        preg f = ws_ptx_reg(b, PTX_B32), more = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_comment(b, "chunk written: every stager arrives (release)");
        bar_addr(b, h, f, 2, xs_);
        I("mbarrier.arrive.shared::cta.b64 _, [%s]", f.n);
        I("add.u32 %s, %s, 1", c.n, c.n);
        I("add.u32 %s, %s, 64", c0.n, c0.n);
        I("setp.lt.u32 %s, %s, %d", more.n, c.n, q->nc1);
        I("@%s bra %s", more.n, ctop.n);
    }
}

/* ---- the consumers ---- */
typedef struct {
    preg g, w4, lane, m, kh, rbase;
    preg acc[NA_MAX];
    preg a[2][4][4]; /* A fragments: buffer, k16 step, register */
    char regs[NA_MAX * 8 + 8];
    preg one;
    preg it;        /* the ring's stage count (both GEMMs) */
    preg k, c;      /* GEMM 1: tap, chunk of 64 channels */
    preg jj;        /* GEMM 2: h's tile */
    preg hf;        /* the stage's half of the 64 channels */
} cons;

static void acc_list(cons *cs, int na)
{
    int o = 0;
    for (int i = 0; i < na; i++)
        o += snprintf(cs->regs + o, sizeof cs->regs - (size_t)o, "%s%s", i ? ", " : "", cs->acc[i].n);
}

/* lane 0 of each consumer warp releases slot `slot`: its own block's empty barrier and, cl 2,
 * the peer's */
static void emit_release_w(ptx_buf *b, const hp *h, const cons *cs, preg slot)
{
    preg e = ws_ptx_reg(b, PTX_B32), l0 = ws_ptx_reg(b, PTX_PRED);
    plabel skip = ws_ptx_label_new(b, "norel");
    I("setp.ne.u32 %s, %s, 0", l0.n, cs->lane.n);
    I("@%s bra %s", l0.n, skip.n);
    bar_addr(b, h, e, 1, slot);
    /* plain arrivals: the slot's reads are the products', complete at wgmma.wait_group; a
     * release at cluster scope would be a memory barrier of the whole GPU at every stage
     * (ncu: a third of the stall samples on it) */
    I("mbarrier.arrive.shared::cta.b64 _, [%s]", e.n);
    if (h->q.cl > 1) {
        preg re = ws_ptx_reg(b, PTX_B32), peer = ws_ptx_reg(b, PTX_B32);
        I("xor.b32 %s, %s, 1", peer.n, h->rank.n);
        I("mapa.shared::cluster.u32 %s, %s, %s", re.n, e.n, peer.n);
        I("mbarrier.arrive.shared::cluster.b64 _, [%s]", re.n);
    }
    ws_ptx_label(b, skip);
}

/* one stage of GEMM `gm` (1 or 2) with A buffer ab: wait, A fragments, 2 wgmma (32
 * channels), commit, wait for the stage before and release its slot; advances the counters */
static void emit_stage(ptx_buf *b, const hp *h, cons *cs, int gm, int ab)
{
    const ws_hpair_geom *q = &h->q;
    const ws_conv_desc *d = h->d1;
    const int N = gm == 1 ? q->n1 : q->n2, K = d->k, NKS = q->bk / 16;
    const char *mt = mname(d);
    preg s = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32), full = ws_ptx_reg(b, PTX_B32);
    emit_slot_of(b, h, cs->it, s, u);
    preg base = ws_ptx_reg(b, PTX_B32), sw = ws_ptx_reg(b, PTX_B32), kc0 = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "the half's first 16-byte chunk: 4 * hf + kh");
    I("mad.lo.u32 %s, %s, 4, %s", kc0.n, cs->hf.n, cs->kh.n);
    if (gm == 1) {
        preg xs = ws_ptx_reg(b, PTX_B32), rr = ws_ptx_reg(b, PTX_B32), kz = ws_ptx_reg(b, PTX_B32);
        plabel nox = ws_ptx_label_new(b, "samechunk");
        I("and.b32 %s, %s, 1", xs.n, cs->c.n);
        {
            preg nz = ws_ptx_reg(b, PTX_PRED), xf = ws_ptx_reg(b, PTX_B32), cu = ws_ptx_reg(b, PTX_B32);
            I("or.b32 %s, %s, %s", kz.n, cs->k.n, cs->hf.n);
            I("setp.ne.u32 %s, %s, 0", nz.n, kz.n);
            I("@%s bra %s", nz.n, nox.n);
            ws_ptx_comment(b, "tap 0, half 0: chunk c's x staged");
            bar_addr(b, h, xf, 2, xs);
            I("shr.u32 %s, %s, 1", cu.n, cs->c.n);
            emit_wait_use(b, xf, cu, 0);
        }
        ws_ptx_label(b, nox);
        ws_ptx_comment(b, "A: row nb*RX + t + D*k of the chunk, 16-byte chunk (4hf + 2ks + kh) ^ (row %% 8)");
        I("mad.lo.u32 %s, %s, %d, %s", rr.n, cs->k.n, d->dilation, cs->rbase.n);
        I("mad.lo.u32 %s, %s, %d, %s", base.n, xs.n, q->xcb, h->sbase.n);
        I("add.u32 %s, %s, %d", base.n, base.n, q->xoff);
        I("mad.lo.u32 %s, %s, 128, %s", base.n, rr.n, base.n);
        I("and.b32 %s, %s, 7", sw.n, rr.n);
    } else {
        ws_ptx_comment(b, "A: row m of h's tile jj, 16-byte chunk (4hf + 2ks + kh) ^ (m %% 8)");
        I("mad.lo.u32 %s, %s, 8192, %s", base.n, cs->jj.n, h->sbase.n);
        I("add.u32 %s, %s, %d", base.n, base.n, q->hoff);
        I("mad.lo.u32 %s, %s, 128, %s", base.n, cs->m.n, base.n);
        I("and.b32 %s, %s, 7", sw.n, cs->m.n);
    }
    for (int ks = 0; ks < NKS; ks++) {
        preg kc = ws_ptx_reg(b, PTX_B32), ad = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", kc.n, kc0.n, 2 * ks);
        I("xor.b32 %s, %s, %s", kc.n, kc.n, sw.n);
        I("shl.b32 %s, %s, 4", kc.n, kc.n);
        I("add.u32 %s, %s, %s", ad.n, base.n, kc.n);
        I("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%s, %s, %s, %s}, [%s]", cs->a[ab][ks][0].n, cs->a[ab][ks][1].n,
          cs->a[ab][ks][2].n, cs->a[ab][ks][3].n, ad.n);
    }
    if (gm == 1) { /* the chunk's last stage: its x is in registers, its slot is free */
        preg last = ws_ptx_reg(b, PTX_PRED), xe = ws_ptx_reg(b, PTX_B32), xs = ws_ptx_reg(b, PTX_B32);
        plabel keep = ws_ptx_label_new(b, "keepx");
        I("setp.ne.u32 %s, %s, %d", last.n, cs->k.n, K - 1);
        if (q->bk == 32) /* and the second half */
            I("setp.eq.or.u32 %s, %s, 0, %s", last.n, cs->hf.n, last.n);
        I("@%s bra %s", last.n, keep.n);
        I("and.b32 %s, %s, 1", xs.n, cs->c.n);
        bar_addr(b, h, xe, 3, xs);
        I("mbarrier.arrive.shared::cta.b64 _, [%s]", xe.n);
        ws_ptx_label(b, keep);
    }
    bar_addr(b, h, full, 0, s);
    emit_wait_use(b, full, u, 0);
    preg wb = ws_ptx_reg(b, PTX_B32);
    I("mad.lo.u32 %s, %s, %d, %s", wb.n, s.n, q->wsb, h->sbase.n);
    I("mad.lo.u32 %s, %s, %d, %s", wb.n, cs->g.n, N * q->bk * 2, wb.n);
    I("wgmma.fence.sync.aligned");
    for (int ks = 0; ks < NKS; ks++) {
        preg bk = ws_ptx_reg(b, PTX_B32), db = ws_ptx_reg(b, PTX_B64);
        I("add.u32 %s, %s, %d", bk.n, wb.n, 32 * ks);
        ws_hgemm_desc(b, db, bk, 2 * q->bk);
        I("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, {%s, %s, %s, %s}, %s, %s, 1, 1, 0", N, mt, mt,
          cs->regs, cs->a[ab][ks][0].n, cs->a[ab][ks][1].n, cs->a[ab][ks][2].n, cs->a[ab][ks][3].n, db.n,
          cs->one.n);
    }
    I("wgmma.commit_group.sync.aligned");
    ws_ptx_comment(b, "the stage before is done: release its weight slot");
    I("wgmma.wait_group.sync.aligned 1");
    {
        preg fst = ws_ptx_reg(b, PTX_PRED), first = ws_ptx_reg(b, PTX_B32);
        plabel norel = ws_ptx_label_new(b, "firststage");
        /* GEMM 2's first stage: the slot before was released after GEMM 1 */
        if (gm == 1) {
            I("setp.eq.u32 %s, %s, 0", fst.n, cs->it.n);
        } else {
            I("or.b32 %s, %s, %s", first.n, cs->jj.n, cs->hf.n);
            I("setp.eq.u32 %s, %s, 0", fst.n, first.n);
        }
        I("@%s bra %s", fst.n, norel.n);
        preg ps = ws_ptx_reg(b, PTX_B32), pu = ws_ptx_reg(b, PTX_B32), pit = ws_ptx_reg(b, PTX_B32);
        I("sub.u32 %s, %s, 1", pit.n, cs->it.n);
        emit_slot_of(b, h, pit, ps, pu);
        emit_release_w(b, h, cs, ps);
        ws_ptx_label(b, norel);
    }
    I("add.u32 %s, %s, 1", cs->it.n, cs->it.n);
    {
        preg wrap = ws_ptx_reg(b, PTX_PRED);
        if (q->bk == 32)
            I("xor.b32 %s, %s, 1", cs->hf.n, cs->hf.n);
        I("setp.eq.u32 %s, %s, 0", wrap.n, cs->hf.n);
        if (gm == 1) {
            I("@%s add.u32 %s, %s, 1", wrap.n, cs->k.n, cs->k.n);
            I("setp.eq.and.u32 %s, %s, %d, %s", wrap.n, cs->k.n, K, wrap.n);
            I("@%s mov.u32 %s, 0", wrap.n, cs->k.n);
            I("@%s add.u32 %s, %s, 1", wrap.n, cs->c.n, cs->c.n);
        } else {
            I("@%s add.u32 %s, %s, 1", wrap.n, cs->jj.n, cs->jj.n);
        }
    }
}

/* a GEMM's KT stages, unrolled by two (A buffers 0, 1) */
static void emit_gemm_loop(ptx_buf *b, const hp *h, cons *cs, int gm, int KT)
{
    plabel top = ws_ptx_label_new(b, gm == 1 ? "g1" : "g2"), done = ws_ptx_label_new(b, gm == 1 ? "g1_done" : "g2_done");
    preg cnt = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_PRED);
    I("mov.u32 %s, 0", cnt.n);
    ws_ptx_label(b, top);
    for (int ab = 0; ab < 2; ab++) {
        emit_stage(b, h, cs, gm, ab);
        I("add.u32 %s, %s, 1", cnt.n, cnt.n);
        I("setp.%s.u32 %s, %s, %d", ab ? "lt" : "eq", p.n, cnt.n, KT);
        I("@%s bra %s", p.n, ab ? top.n : done.n);
    }
    ws_ptx_label(b, done);
    I("wgmma.wait_group.sync.aligned 0");
}

#define HP_EGV 4 /* the NCL vector epilogue's vectors whose reads are issued together */

/* The last epilogue's NCL y in vectors of 4 positions, where T_out % 4 == 0 and y and the add
 * (with add_bs) are aligned to 4 elements (else on to the element form after it): thread c
 * takes positions 4(c % 16) .. + 3 (n, t and their range once: TB >= 8 keeps the four in one
 * item) of channels c/16 + 16m; each is one 16-byte read of Ys, one vector add read and one
 * vector store, a warp's 32 of them two channels' 64 positions. Ends at done. */
static void emit_ncl4(ptx_buf *b, const hp *h, const ws_conv_desc *d, preg c, preg bs, preg tbm, preg pa, preg py,
                      preg abs, preg hasa, preg n32, preg tout, plabel done)
{
    const ws_hpair_geom *q = &h->q;
    const int ys = d->y_type == WS_F32 ? 4 : 2, YR = ys_row(d);
    ws_ptx_comment(b, "NCL y in vectors: positions 4(c %% 16).. (n, t once), channels c/16 + 16m, %d at a time, "
                      "where T_out %% 4 == 0 and y and the add are aligned to 4 elements", HP_EGV);
    plabel scalar = ws_ptx_label_new(b, "ncl_scalar");
    ws_hgemm_vec_or(b, py, pa, abs, hasa, tout, ys, scalar);
    preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), ok2 = ws_ptx_reg(b, PTX_PRED), orow = ws_ptx_reg(b, PTX_B32);
    preg t64 = ws_ptx_reg(b, PTX_B64), n64 = ws_ptx_reg(b, PTX_B64), ya = ws_ptx_reg(b, PTX_B64);
    preg aa = ws_ptx_reg(b, PTX_B64), rstep = ws_ptx_reg(b, PTX_B64), ra = ws_ptx_reg(b, PTX_B32);
    preg rb = ws_ptx_reg(b, PTX_B32), o64 = ws_ptx_reg(b, PTX_B64), tmp = ws_ptx_reg(b, PTX_B64);
    I("and.b32 %s, %s, 15", p.n, c.n);
    I("shl.b32 %s, %s, 2", p.n, p.n);
    I("shr.u32 %s, %s, 4", orow.n, c.n);
    I("shr.u32 %s, %s, %s", n.n, p.n, h->lgtb.n);
    I("add.u32 %s, %s, %s", n.n, n.n, h->n0.n);
    I("and.b32 %s, %s, %s", t.n, p.n, tbm.n);
    I("add.u32 %s, %s, %s", t.n, t.n, h->t0.n);
    I("setp.lt.u32 %s, %s, %s", ok.n, n.n, n32.n);
    I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
    I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
    I("@!%s bra %s", ok.n, done.n);
    ws_ptx_comment(b, "y + ((n*C_out + o)*T_out + t)*%d, add + (n*add_bs + o*T_out + t)*%d; rows 16 apart: "
                      "16*T_out*%d bytes", ys, ys, ys);
    I("cvt.u64.u32 %s, %s", t64.n, t.n);
    I("cvt.u64.u32 %s, %s", o64.n, orow.n);
    I("mul.wide.u32 %s, %s, %d", ya.n, n.n, d->c_out);
    I("add.u64 %s, %s, %s", ya.n, ya.n, o64.n);
    I("cvt.u64.u32 %s, %s", tmp.n, tout.n);
    I("mul.lo.u64 %s, %s, %s", ya.n, ya.n, tmp.n);
    I("add.u64 %s, %s, %s", ya.n, ya.n, t64.n);
    I("mad.lo.u64 %s, %s, %d, %s", ya.n, ya.n, ys, py.n);
    I("cvt.u64.u32 %s, %s", n64.n, n.n);
    I("mul.lo.u64 %s, %s, %s", aa.n, n64.n, abs.n);
    I("mad.lo.u64 %s, %s, %s, %s", o64.n, o64.n, tmp.n, t64.n);
    I("add.u64 %s, %s, %s", aa.n, aa.n, o64.n);
    I("mad.lo.u64 %s, %s, %d, %s", aa.n, aa.n, ys, pa.n);
    I("mul.lo.u64 %s, %s, %d", rstep.n, tmp.n, 16 * ys);
    I("mad.lo.u32 %s, %s, %d, %s", ra.n, orow.n, YR, p.n);
    I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, h->sbase.n);
    I("mad.lo.u32 %s, %s, 4, %s", rb.n, orow.n, bs.n);
    preg mm = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", mm.n);
    plabel top = ws_ptx_label_new(b, "ncl4_y");
    ws_ptx_label(b, top);
    preg v[HP_EGV][4], bias[HP_EGV], af[HP_EGV][4], yv[HP_EGV];
    for (int e = 0; e < HP_EGV; e++) {
        for (int j = 0; j < 4; j++)
            v[e][j] = ws_ptx_reg(b, PTX_F32);
        bias[e] = ws_ptx_reg(b, PTX_F32), yv[e] = ws_ptx_reg(b, PTX_B64);
        I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", v[e][0].n, v[e][1].n, v[e][2].n, v[e][3].n, ra.n,
          16 * e * YR * 4);
        I("ld.shared.f32 %s, [%s+%d]", bias[e].n, rb.n, 16 * e * 4);
        if (e == 0) {
            I("mov.u64 %s, %s", yv[e].n, ya.n);
        } else {
            I("add.u64 %s, %s, %s", yv[e].n, yv[e - 1].n, rstep.n);
        }
        ws_ptx_vec a = ws_ptx_vec_new(b, d->y_type, 4);
        preg av = ws_ptx_reg(b, PTX_B64);
        I("mad.lo.u64 %s, %s, %d, %s", av.n, rstep.n, e, aa.n);
        ws_hgemm_vec_add(b, &a, hasa, av, af[e]);
    }
    for (int e = 0; e < HP_EGV; e++) {
        const ws_ptx_epi ep = {
            .act = d->act, .y_type = d->y_type, .n = 4, .v = v[e], .bias = &bias[e], .bias_stride = 0,
            .add_if = hasa, .add_v = af[e], .in = ok, .y = {.at = yv[e]}};
        ws_ptx_epi_emit(b, &ep);
    }
    {
        preg more = ws_ptx_reg(b, PTX_PRED);
        I("add.u32 %s, %s, %d", ra.n, ra.n, 16 * HP_EGV * YR * 4);
        I("add.u32 %s, %s, %d", rb.n, rb.n, 16 * HP_EGV * 4);
        I("mad.lo.u64 %s, %s, %d, %s", ya.n, rstep.n, HP_EGV, ya.n);
        I("mad.lo.u64 %s, %s, %d, %s", aa.n, rstep.n, HP_EGV, aa.n);
        I("add.u32 %s, %s, %d", mm.n, mm.n, HP_EGV);
        I("setp.lt.u32 %s, %s, %d", more.n, mm.n, q->m2 / 16);
        I("@%s bra %s", more.n, top.n);
    }
    I("bra %s", done.n);
    ws_ptx_label(b, scalar);
}

/* The last epilogue's NLC y in vectors of 4 channels (Ys position-major: ys_pm), where y and
 * the add (with add_bs) are aligned to 4 elements (else on to the element form after it):
 * vector k = c + 256j of the tile's 64 x C_out/4 is position k / (C_out/4), channels
 * 4(k % (C_out/4)) .. + 3: one 16-byte read of Ys and of Bs, one vector add read and one
 * vector store, a warp's 32 of them consecutive channels. Ends at done. */
static void emit_nlc4(ptx_buf *b, const hp *h, const ws_conv_desc *d, preg c, preg bs, preg tbm, preg pa, preg py,
                      preg abs, preg hasa, preg n32, preg tout, plabel done)
{
    const int ys = d->y_type == WS_F32 ? 4 : 2, NG = d->c_out / 4, YRN = d->c_out + 4;
    const int NV = WS_HPAIR_P * NG, per = (NV + 255) / 256;
    ws_ptx_comment(b, "NLC y in vectors: vector k = c + 256j, position k / %d, channels 4(k %% %d).., %d at a time, "
                      "where y and the add are aligned to 4 elements", NG, NG, HP_EGV);
    plabel scalar = ws_ptx_label_new(b, "nlc_scalar");
    ws_hgemm_vec_or(b, py, pa, abs, hasa, (preg){""}, ys, scalar);
    preg k = ws_ptx_reg(b, PTX_B32), absb = ws_ptx_reg(b, PTX_B64);
    I("mov.u32 %s, %s", k.n, c.n);
    I("mul.lo.u64 %s, %s, %d", absb.n, abs.n, ys);
    plabel top = ws_ptx_label_new(b, "nlc4_y");
    const int G = per % HP_EGV == 0 ? HP_EGV : 1;
    ws_ptx_label(b, top);
    preg v[HP_EGV][4], bias[HP_EGV][4], af[HP_EGV][4], ya[HP_EGV], ok[HP_EGV];
    for (int e = 0; e < G; e++) {
        preg ke = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_B32), cg = ws_ptx_reg(b, PTX_B32);
        preg n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32), ok2 = ws_ptx_reg(b, PTX_PRED);
        preg ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32), t64 = ws_ptx_reg(b, PTX_B64);
        preg pos = ws_ptx_reg(b, PTX_B64), o4 = ws_ptx_reg(b, PTX_B32), aa = ws_ptx_reg(b, PTX_B64);
        preg n64 = ws_ptx_reg(b, PTX_B64);
        ok[e] = ws_ptx_reg(b, PTX_PRED), ya[e] = ws_ptx_reg(b, PTX_B64);
        for (int j = 0; j < 4; j++)
            v[e][j] = ws_ptx_reg(b, PTX_F32), bias[e][j] = ws_ptx_reg(b, PTX_F32);
        I("add.u32 %s, %s, %d", ke.n, k.n, 256 * e);
        I("div.u32 %s, %s, %d", p.n, ke.n, NG);
        I("mul.lo.u32 %s, %s, %d", cg.n, p.n, NG);
        I("sub.u32 %s, %s, %s", cg.n, ke.n, cg.n);
        I("shl.b32 %s, %s, 2", o4.n, cg.n);
        I("shr.u32 %s, %s, %s", n.n, p.n, h->lgtb.n);
        I("add.u32 %s, %s, %s", n.n, n.n, h->n0.n);
        I("and.b32 %s, %s, %s", t.n, p.n, tbm.n);
        I("add.u32 %s, %s, %s", t.n, t.n, h->t0.n);
        I("setp.lt.u32 %s, %s, %s", ok[e].n, n.n, n32.n);
        I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
        I("and.pred %s, %s, %s", ok[e].n, ok[e].n, ok2.n);
        I("setp.lt.u32 %s, %s, %d", ok2.n, ke.n, NV);
        I("and.pred %s, %s, %s", ok[e].n, ok[e].n, ok2.n);
        I("mad.lo.u32 %s, %s, %d, %s", ra.n, p.n, YRN, o4.n);
        I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, h->sbase.n);
        I("mad.lo.u32 %s, %s, 4, %s", rb.n, o4.n, bs.n);
        I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s]", v[e][0].n, v[e][1].n, v[e][2].n, v[e][3].n, ra.n);
        I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s]", bias[e][0].n, bias[e][1].n, bias[e][2].n, bias[e][3].n, rb.n);
        ws_ptx_comment(b, "y + ((n*T_out + t)*C_out + o)*%d, add + (n*add_bs + t*C_out + o)*%d", ys, ys);
        I("cvt.u64.u32 %s, %s", t64.n, t.n);
        I("mad.wide.u32 %s, %s, %s, %s", pos.n, n.n, tout.n, t64.n);
        I("mul.lo.u64 %s, %s, %d", pos.n, pos.n, d->c_out);
        I("cvt.u64.u32 %s, %s", t64.n, o4.n);
        I("add.u64 %s, %s, %s", pos.n, pos.n, t64.n);
        I("mad.lo.u64 %s, %s, %d, %s", ya[e].n, pos.n, ys, py.n);
        I("cvt.u64.u32 %s, %s", n64.n, n.n);
        I("cvt.u64.u32 %s, %s", pos.n, t.n);
        I("mad.lo.u64 %s, %s, %d, %s", aa.n, pos.n, d->c_out, t64.n);
        I("mad.lo.u64 %s, %s, %d, %s", aa.n, aa.n, ys, pa.n);
        I("mad.lo.u64 %s, %s, %s, %s", aa.n, n64.n, absb.n, aa.n);
        ws_ptx_vec a = ws_ptx_vec_new(b, d->y_type, 4);
        preg pr = ws_ptx_reg(b, PTX_PRED);
        I("and.pred %s, %s, %s", pr.n, ok[e].n, hasa.n);
        ws_hgemm_vec_add(b, &a, pr, aa, af[e]);
    }
    for (int e = 0; e < G; e++) {
        const ws_ptx_epi ep = {
            .act = d->act, .y_type = d->y_type, .n = 4, .v = v[e], .bias = bias[e], .bias_stride = 1,
            .add_if = hasa, .add_v = af[e], .in = ok[e], .y = {.at = ya[e]}};
        ws_ptx_epi_emit(b, &ep);
    }
    {
        preg more = ws_ptx_reg(b, PTX_PRED);
        I("add.u32 %s, %s, %d", k.n, k.n, 256 * G);
        I("setp.lt.u32 %s, %s, %d", more.n, k.n, NV);
        I("@%s bra %s", more.n, top.n);
    }
    I("bra %s", done.n);
    ws_ptx_label(b, scalar);
}

static void emit_consumers(ptx_buf *b, const hp *h)
{
    const ws_hpair_geom *q = &h->q;
    const ws_conv_desc *d1 = h->d1, *d2 = h->d2;
    cons C, *cs = &C;
    memset(cs, 0, sizeof *cs);
    ws_ptx_section(b, "consumers (warpgroups 1, 2): g = warpgroup - 1 owns channels g*C/2.. of each GEMM, "
                      "all 64 positions");
    I("setmaxnreg.inc.sync.aligned.u32 %d", WS_HPAIR_CREG);
    cs->g = ws_ptx_reg(b, PTX_B32), cs->w4 = ws_ptx_reg(b, PTX_B32), cs->lane = ws_ptx_reg(b, PTX_B32);
    cs->m = ws_ptx_reg(b, PTX_B32), cs->kh = ws_ptx_reg(b, PTX_B32), cs->rbase = ws_ptx_reg(b, PTX_B32);
    cs->one = ws_ptx_reg(b, PTX_PRED);
    cs->it = ws_ptx_reg(b, PTX_B32);
    cs->k = ws_ptx_reg(b, PTX_B32), cs->c = ws_ptx_reg(b, PTX_B32), cs->jj = ws_ptx_reg(b, PTX_B32);
    cs->hf = ws_ptx_reg(b, PTX_B32);
    preg tmp = ws_ptx_reg(b, PTX_B32), tbm = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 7", cs->g.n, h->tid.n);
    I("sub.u32 %s, %s, 1", cs->g.n, cs->g.n);
    I("shr.u32 %s, %s, 5", cs->w4.n, h->tid.n);
    I("and.b32 %s, %s, 3", cs->w4.n, cs->w4.n);
    I("and.b32 %s, %s, 31", cs->lane.n, h->tid.n);
    ws_ptx_comment(b, "ldmatrix rows: m = 16*warp + lane %% 8 + 8*((lane / 8) %% 2), k half kh = lane / 16");
    I("and.b32 %s, %s, 7", cs->m.n, cs->lane.n);
    I("shr.u32 %s, %s, 3", tmp.n, cs->lane.n);
    I("and.b32 %s, %s, 1", tmp.n, tmp.n);
    I("mad.lo.u32 %s, %s, 8, %s", cs->m.n, tmp.n, cs->m.n);
    I("mad.lo.u32 %s, %s, 16, %s", cs->m.n, cs->w4.n, cs->m.n);
    I("shr.u32 %s, %s, 4", cs->kh.n, cs->lane.n);
    ws_ptx_comment(b, "x row of position m at tap 0: (m >> lgtb) * RX + (m & (TB - 1))");
    {
        preg rx = ws_ptx_reg(b, PTX_B32);
        I("shl.b32 %s, 1, %s", rx.n, h->lgtb.n);
        I("sub.u32 %s, %s, 1", tbm.n, rx.n);
        I("add.u32 %s, %s, %d", rx.n, rx.n, q->halo);
        I("shr.u32 %s, %s, %s", tmp.n, cs->m.n, h->lgtb.n);
        I("mul.lo.u32 %s, %s, %s", cs->rbase.n, tmp.n, rx.n);
        I("and.b32 %s, %s, %s", tmp.n, cs->m.n, tbm.n);
        I("add.u32 %s, %s, %s", cs->rbase.n, cs->rbase.n, tmp.n);
    }
    I("setp.eq.u32 %s, 1, 1", cs->one.n);
    const int NA = (q->n1 > q->n2 ? q->n1 : q->n2) / 2;
    for (int i = 0; i < NA; i++)
        cs->acc[i] = ws_ptx_reg(b, PTX_F32);
    for (int ab = 0; ab < 2; ab++)
        for (int ks = 0; ks < q->bk / 16; ks++)
            for (int r = 0; r < 4; r++)
                cs->a[ab][ks][r] = ws_ptx_reg(b, PTX_B32);
    for (int i = 0; i < q->n1 / 2; i++)
        I("mov.f32 %s, 0f00000000", cs->acc[i].n);
    acc_list(cs, q->n1 / 2);
    I("mov.u32 %s, 0", cs->it.n);
    I("mov.u32 %s, 0", cs->k.n);
    I("mov.u32 %s, 0", cs->c.n);
    I("mov.u32 %s, 0", cs->jj.n);
    I("mov.u32 %s, 0", cs->hf.n);
    ws_ptx_section(b, "GEMM 1: h = W1 * x over chunks and taps");
    emit_gemm_loop(b, h, cs, 1, q->kt1);
    {
        preg ls = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "GEMM 1's last slot released");
        preg lit = ws_ptx_reg(b, PTX_B32), lu = ws_ptx_reg(b, PTX_B32);
        I("sub.u32 %s, %s, 1", lit.n, cs->it.n);
        emit_slot_of(b, h, lit, ls, lu);
        emit_release_w(b, h, cs, ls);
    }

    ws_ptx_section(b, "epilogue 1: h[p][ch] = pre2(act1(acc + b1)) in the math type, into h's tiles");
    /* h stored in the math type by the two calls and pre2 not RELU (which commutes with the
     * rounding): rounded before pre2 as well, as the second call reads it */
    const int round_twice = d1->y_type != WS_F32 && d2->pre != WS_ACT_NONE && d2->pre != WS_ACT_RELU;
    ws_ptx_comment(b, "h's region held GEMM 1's last weight slots: both consumers past their products first");
    I("bar.sync 1, 256");
    {
        preg pb = ws_ptx_reg(b, PTX_B64), hasb = ws_ptx_reg(b, PTX_PRED), colb = ws_ptx_reg(b, PTX_B32);
        preg sw = ws_ptx_reg(b, PTX_B32), rowa = ws_ptx_reg(b, PTX_B32), q0 = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ld_param(b, pb, h->pt, WS_PR_B1);
        I("setp.ne.u64 %s, %s, 0", hasb.n, pb.n);
        I("cvta.to.global.u64 %s, %s", pb.n, pb.n);
        ws_ptx_comment(b, "a thread's channels g*N1 + 8i + 2(lane %% 4) + e, rows 16*warp + lane/4 (+8)");
        I("and.b32 %s, %s, 3", colb.n, cs->lane.n);
        I("shl.b32 %s, %s, 1", colb.n, colb.n);
        I("mad.lo.u32 %s, %s, %d, %s", colb.n, cs->g.n, q->n1, colb.n);
        I("shr.u32 %s, %s, 2", sw.n, cs->lane.n);
        I("mad.lo.u32 %s, %s, 16, %s", rowa.n, cs->w4.n, sw.n);
        I("mad.lo.u32 %s, %s, 128, %s", rowa.n, rowa.n, h->sbase.n);
        I("add.u32 %s, %s, %d", rowa.n, rowa.n, q->hoff);
        {
            preg t2 = ws_ptx_reg(b, PTX_B32);
            I("and.b32 %s, %s, 3", t2.n, cs->lane.n);
            I("mad.lo.u32 %s, %s, 4, %s", rowa.n, t2.n, rowa.n);
        }
        I("shr.u32 %s, %s, 3", q0.n, colb.n); /* (g*N1) / 8: the thread's first 16-byte chunk index */
        preg bl0[8], bl1[8];
        for (int i = 0; i < q->n1 / 8; i++) {
            if (i % 8 == 0) { /* the next 8 bias pairs, read together */
                preg ba = ws_ptx_reg(b, PTX_B64);
                I("mul.wide.u32 %s, %s, 4", ba.n, colb.n);
                I("add.u64 %s, %s, %s", ba.n, ba.n, pb.n);
                for (int j = 0; j < 8 && i + j < q->n1 / 8; j++) {
                    bl0[j] = ws_ptx_reg(b, PTX_F32), bl1[j] = ws_ptx_reg(b, PTX_F32);
                    I("mov.f32 %s, 0f00000000", bl0[j].n);
                    I("mov.f32 %s, 0f00000000", bl1[j].n);
                    /* two scalar loads: a bias given per call need not be 8-byte aligned */
                    I("@%s ld.global.nc.f32 %s, [%s+%d]", hasb.n, bl0[j].n, ba.n, 32 * (i + j));
                    I("@%s ld.global.nc.f32 %s, [%s+%d]", hasb.n, bl1[j].n, ba.n, 32 * (i + j) + 4);
                }
            }
            preg bb0 = bl0[i % 8], bb1 = bl1[i % 8];
            preg qi = ws_ptx_reg(b, PTX_B32), ad = ws_ptx_reg(b, PTX_B32);
            ws_ptx_comment(b, "tile (g*N1/8 + %d) / 8, chunk (g*N1/8 + %d) %% 8 ^ (row %% 8)", i, i);
            I("add.u32 %s, %s, %d", qi.n, q0.n, i);
            I("shr.u32 %s, %s, 3", ad.n, qi.n);
            I("and.b32 %s, %s, 7", qi.n, qi.n);
            I("xor.b32 %s, %s, %s", qi.n, qi.n, sw.n);
            I("shl.b32 %s, %s, 4", qi.n, qi.n);
            I("shl.b32 %s, %s, 13", ad.n, ad.n);
            I("add.u32 %s, %s, %s", ad.n, ad.n, qi.n);
            I("add.u32 %s, %s, %s", ad.n, ad.n, rowa.n);
            for (int hh = 0; hh < 2; hh++) {
                preg v0 = ws_ptx_reg(b, PTX_F32), v1 = ws_ptx_reg(b, PTX_F32), w = ws_ptx_reg(b, PTX_B32);
                I("add.f32 %s, %s, %s", v0.n, cs->acc[4 * i + 2 * hh].n, bb0.n);
                I("add.f32 %s, %s, %s", v1.n, cs->acc[4 * i + 2 * hh + 1].n, bb1.n);
                ws_ptx_act(b, v0, d1->act);
                ws_ptx_act(b, v1, d1->act);
                if (round_twice) { /* the two calls store h in the math type, then apply pre2 */
                    emit_pack(b, d1, w, v0, v1);
                    emit_unpack(b, mtype(d1), w, v0, v1);
                }
                ws_ptx_act(b, v0, d2->pre);
                ws_ptx_act(b, v1, d2->pre);
                emit_pack(b, d1, w, v0, v1);
                I("st.shared.b32 [%s+%d], %s", ad.n, hh * 8 * 128, w.n);
            }
        }
    }
    I("bar.sync 1, 256");

    ws_ptx_section(b, "GEMM 2: y = W2 * h over h's tiles");
    for (int i = 0; i < q->n2 / 2; i++)
        I("mov.f32 %s, 0f00000000", cs->acc[i].n);
    acc_list(cs, q->n2 / 2);
    emit_gemm_loop(b, h, cs, 2, q->kt2);

    const int YR = ys_row(d2), PM = ys_pm(d2), YRN = q->m2 + 4;
    ws_ptx_section(b, PM ? "epilogue 2: accumulators into Ys[64][C_out + 4] over the drained rings, b2 into Bs"
                      : YR == WS_HPAIR_YS_ROW_NCL ? "epilogue 2: accumulators into Ys[C_out][68] over the drained rings, b2 into Bs"
                                                  : "epilogue 2: accumulators into Ys[C_out][65] over the drained rings, b2 into Bs");
    const int ysb = ys_bytes(d2);
    I("bar.sync 1, 256");
    {
        preg wa = ws_ptx_reg(b, PTX_B32), t2 = ws_ptx_reg(b, PTX_B32), p0 = ws_ptx_reg(b, PTX_B32);
        I("and.b32 %s, %s, 3", t2.n, cs->lane.n);
        I("shl.b32 %s, %s, 1", t2.n, t2.n);
        I("mad.lo.u32 %s, %s, %d, %s", t2.n, cs->g.n, q->n2, t2.n);
        I("shr.u32 %s, %s, 2", p0.n, cs->lane.n);
        I("mad.lo.u32 %s, %s, 16, %s", p0.n, cs->w4.n, p0.n);
        if (PM) { /* Ys[position][channel]: a pair of channels a store */
            I("mad.lo.u32 %s, %s, %d, %s", wa.n, p0.n, YRN, t2.n);
            I("mad.lo.u32 %s, %s, 4, %s", wa.n, wa.n, h->sbase.n);
            for (int i = 0; i < q->n2 / 8; i++)
                for (int hh = 0; hh < 2; hh++)
                    I("st.shared.v2.f32 [%s+%d], {%s, %s}", wa.n, (8 * hh * YRN + 8 * i) * 4,
                      cs->acc[4 * i + 2 * hh].n, cs->acc[4 * i + 2 * hh + 1].n);
        } else {
            I("mad.lo.u32 %s, %s, %d, %s", wa.n, t2.n, YR, p0.n);
            I("mad.lo.u32 %s, %s, 4, %s", wa.n, wa.n, h->sbase.n);
            for (int i = 0; i < q->n2 / 8; i++)
                for (int hh = 0; hh < 2; hh++)
                    for (int e = 0; e < 2; e++)
                        I("st.shared.f32 [%s+%d], %s", wa.n, ((8 * i + e) * YR + 8 * hh) * 4,
                          cs->acc[4 * i + 2 * hh + e].n);
        }
    }
    preg c = ws_ptx_reg(b, PTX_B32), bs = ws_ptx_reg(b, PTX_B32);
    I("sub.u32 %s, %s, 128", c.n, h->tid.n);
    I("add.u32 %s, %s, %d", bs.n, h->sbase.n, ysb);
    {
        preg pb = ws_ptx_reg(b, PTX_B64), hasb = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_ld_param(b, pb, h->pt, WS_PR_B2);
        I("setp.ne.u64 %s, %s, 0", hasb.n, pb.n);
        I("cvta.to.global.u64 %s, %s", pb.n, pb.n);
        for (int o0 = 0; o0 < q->m2; o0 += 256) {
            preg o = ws_ptx_reg(b, PTX_B32), in = ws_ptx_reg(b, PTX_PRED), ba = ws_ptx_reg(b, PTX_B64);
            preg bv = ws_ptx_reg(b, PTX_F32), sa = ws_ptx_reg(b, PTX_B32), lb = ws_ptx_reg(b, PTX_PRED);
            I("add.u32 %s, %s, %d", o.n, c.n, o0);
            I("setp.lt.u32 %s, %s, %d", in.n, o.n, q->m2);
            I("and.pred %s, %s, %s", lb.n, in.n, hasb.n);
            I("mul.wide.u32 %s, %s, 4", ba.n, o.n);
            I("add.u64 %s, %s, %s", ba.n, ba.n, pb.n);
            I("mov.f32 %s, 0f00000000", bv.n);
            I("@%s ld.global.nc.f32 %s, [%s]", lb.n, bv.n, ba.n);
            I("mad.lo.u32 %s, %s, 4, %s", sa.n, o.n, bs.n);
            I("@%s st.shared.f32 [%s], %s", in.n, sa.n, bv.n);
        }
    }
    I("bar.sync 1, 256");

    /* the stores: ptx_hgemm.c's element helpers, with d2's act, y_type and add */
    const ws_conv_desc *d = d2;
    const int ys = d->y_type == WS_F32 ? 4 : 2;
    preg pa = ws_ptx_reg(b, PTX_B64), py = ws_ptx_reg(b, PTX_B64), abs = ws_ptx_reg(b, PTX_B64);
    preg hasa = ws_ptx_reg(b, PTX_PRED), n32 = ws_ptx_reg(b, PTX_B32), tout = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ld_param(b, pa, h->pt, WS_PR_ADD);
    ws_ptx_ld_param(b, py, h->pt, WS_PR_Y);
    ws_ptx_ld_param(b, abs, h->pt, WS_PR_ADD_BS);
    ws_ptx_ld_param(b, n32, h->pt, WS_PR_N);
    ws_ptx_ld_param(b, tout, h->pt, WS_PR_T_OUT);
    I("setp.ne.u64 %s, %s, 0", hasa.n, pa.n);
    I("cvta.to.global.u64 %s, %s", pa.n, pa.n);
    I("cvta.to.global.u64 %s, %s", py.n, py.n);
    plabel done = ws_ptx_label_new(b, "stores_done");
    if (d->y_layout == WS_NCL && q->m2 % (16 * HP_EGV) == 0)
        emit_ncl4(b, h, d, c, bs, tbm, pa, py, abs, hasa, n32, tout, done);
    if (d->y_layout == WS_NCL) {
        /* many add reads in flight: each waits on L2 */
        const int EG = (q->m2 / 4) % 32 == 0 ? 32 : (q->m2 / 4) % 16 == 0 ? 16 : 4;
        ws_ptx_comment(b, "NCL y: position p = c %% 64 (n, t once), channels c/64 + 4m, %d at a time", EG);
        preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        preg ok = ws_ptx_reg(b, PTX_PRED), ok2 = ws_ptx_reg(b, PTX_PRED), t64 = ws_ptx_reg(b, PTX_B64);
        preg n64 = ws_ptx_reg(b, PTX_B64), ybase = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64);
        preg orow = ws_ptx_reg(b, PTX_B32), ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32);
        I("and.b32 %s, %s, 63", p.n, c.n);
        I("shr.u32 %s, %s, 6", orow.n, c.n);
        I("shr.u32 %s, %s, %s", n.n, p.n, h->lgtb.n);
        I("add.u32 %s, %s, %s", n.n, n.n, h->n0.n);
        I("and.b32 %s, %s, %s", t.n, p.n, tbm.n);
        I("add.u32 %s, %s, %s", t.n, t.n, h->t0.n);
        I("setp.lt.u32 %s, %s, %s", ok.n, n.n, n32.n);
        I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("@!%s bra %s", ok.n, done.n);
        I("cvt.u64.u32 %s, %s", t64.n, t.n);
        I("mul.wide.u32 %s, %s, %s", ybase.n, n.n, tout.n);
        I("mul.lo.u64 %s, %s, %d", ybase.n, ybase.n, d->c_out);
        I("add.u64 %s, %s, %s", ybase.n, ybase.n, t64.n);
        I("mad.lo.u64 %s, %s, %d, %s", ybase.n, ybase.n, ys, py.n);
        I("cvt.u64.u32 %s, %s", n64.n, n.n);
        I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, abs.n);
        I("add.u64 %s, %s, %s", abase.n, abase.n, t64.n);
        I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, ys, pa.n);
        I("mad.lo.u32 %s, %s, %d, %s", ra.n, orow.n, YR, p.n);
        I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, h->sbase.n);
        I("mad.lo.u32 %s, %s, 4, %s", rb.n, orow.n, bs.n);
        preg mm = ws_ptx_reg(b, PTX_B32), oo0 = ws_ptx_reg(b, PTX_B32);
        I("mov.u32 %s, 0", mm.n);
        I("mov.u32 %s, %s", oo0.n, orow.n);
        plabel top = ws_ptx_label_new(b, "ncl_y");
        ws_ptx_label(b, top);
        preg v[32], bias[32], off[32], pp[32], r[32], in[32];
        for (int e = 0; e < EG; e++) {
            preg oo = ws_ptx_reg(b, PTX_B32);
            v[e] = ws_ptx_reg(b, PTX_F32), bias[e] = ws_ptx_reg(b, PTX_F32), off[e] = ws_ptx_reg(b, PTX_B64);
            pp[e] = hasa, r[e] = ws_ptx_reg(b, d->y_type == WS_F32 ? PTX_F32 : PTX_B16);
            in[e] = ok;
            I("add.u32 %s, %s, %d", oo.n, oo0.n, 4 * e);
            I("ld.shared.f32 %s, [%s+%d]", v[e].n, ra.n, 4 * e * YR * 4);
            I("ld.shared.f32 %s, [%s+%d]", bias[e].n, rb.n, 4 * e * 4);
            I("mul.wide.u32 %s, %s, %s", off[e].n, oo.n, tout.n);
            ws_hgemm_add_read(b, d, r[e], pp[e], off[e], abase, ys);
        }
        for (int e = 0; e < EG; e++)
            ws_hgemm_elem(b, d, v[e], bias[e], pp[e], r[e], in[e], off[e], ybase, ys);
        {
            preg more = ws_ptx_reg(b, PTX_PRED);
            I("add.u32 %s, %s, %d", ra.n, ra.n, 4 * EG * YR * 4);
            I("add.u32 %s, %s, %d", rb.n, rb.n, 4 * EG * 4);
            I("add.u32 %s, %s, %d", oo0.n, oo0.n, 4 * EG);
            I("add.u32 %s, %s, %d", mm.n, mm.n, EG);
            I("setp.lt.u32 %s, %s, %d", more.n, mm.n, q->m2 / 4);
            I("@%s bra %s", more.n, top.n);
        }
    } else {
        if (PM)
            emit_nlc4(b, h, d, c, bs, tbm, pa, py, abs, hasa, n32, tout, done);
        /* C_out <= 128: the threads split the positions too (pg groups), so that all 256 store */
        const int EG = 16, pg = q->m2 <= 64 ? 4 : q->m2 <= 128 ? 2 : 1, ppg = 64 / pg;
        ws_ptx_comment(b, "NLC y: channel o = c %% %d + 256j, positions %d(c / %d).. + %d, %d at a time",
                       pg > 1 ? q->m2 : 256, ppg, pg > 1 ? q->m2 : 256, ppg, EG);
        for (int o0 = 0; o0 < q->m2; o0 += 256) {
            preg o = ws_ptx_reg(b, PTX_B32), ook = ws_ptx_reg(b, PTX_PRED), bias = ws_ptx_reg(b, PTX_F32);
            preg ra = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), off = ws_ptx_reg(b, PTX_B64);
            preg pi = ws_ptx_reg(b, PTX_B32), pend = ws_ptx_reg(b, PTX_B32);
            plabel skip = ws_ptx_label_new(b, "nlc_skip"), top = ws_ptx_label_new(b, "nlc_y");
            if (pg > 1) {
                I("rem.u32 %s, %s, %d", o.n, c.n, q->m2);
                I("div.u32 %s, %s, %d", pi.n, c.n, q->m2);
                I("setp.lt.u32 %s, %s, %d", ook.n, pi.n, pg);
                I("mul.lo.u32 %s, %s, %d", pi.n, pi.n, ppg);
                I("add.u32 %s, %s, %d", pend.n, pi.n, ppg);
            } else {
                I("add.u32 %s, %s, %d", o.n, c.n, o0);
                I("setp.lt.u32 %s, %s, %d", ook.n, o.n, q->m2);
                I("mov.u32 %s, 0", pi.n);
                I("mov.u32 %s, 64", pend.n);
            }
            I("@!%s bra %s", ook.n, skip.n);
            I("mad.lo.u32 %s, %s, 4, %s", sa.n, o.n, bs.n);
            I("ld.shared.f32 %s, [%s]", bias.n, sa.n);
            I("cvt.u64.u32 %s, %s", off.n, o.n);
            if (PM)
                I("mad.lo.u32 %s, %s, %d, %s", ra.n, pi.n, YRN, o.n);
            else
                I("mad.lo.u32 %s, %s, %d, %s", ra.n, o.n, YR, pi.n);
            I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, h->sbase.n);
            ws_ptx_label(b, top);
            preg v[16], ybase[16], pp[16], r[16], okk[16];
            for (int e = 0; e < EG; e++) {
                preg i = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
                preg ok2 = ws_ptx_reg(b, PTX_PRED), pos = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64);
                preg n64 = ws_ptx_reg(b, PTX_B64), t64 = ws_ptx_reg(b, PTX_B64);
                okk[e] = ws_ptx_reg(b, PTX_PRED), v[e] = ws_ptx_reg(b, PTX_F32), ybase[e] = ws_ptx_reg(b, PTX_B64);
                pp[e] = ws_ptx_reg(b, PTX_PRED), r[e] = ws_ptx_reg(b, d->y_type == WS_F32 ? PTX_F32 : PTX_B16);
                I("add.u32 %s, %s, %d", i.n, pi.n, e);
                I("shr.u32 %s, %s, %s", n.n, i.n, h->lgtb.n);
                I("add.u32 %s, %s, %s", n.n, n.n, h->n0.n);
                I("and.b32 %s, %s, %s", t.n, i.n, tbm.n);
                I("add.u32 %s, %s, %s", t.n, t.n, h->t0.n);
                I("setp.lt.u32 %s, %s, %s", okk[e].n, n.n, n32.n);
                I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
                I("and.pred %s, %s, %s", okk[e].n, okk[e].n, ok2.n);
                I("ld.shared.f32 %s, [%s+%d]", v[e].n, ra.n, 4 * e * (PM ? YRN : 1));
                I("cvt.u64.u32 %s, %s", t64.n, t.n);
                I("mad.wide.u32 %s, %s, %s, %s", pos.n, n.n, tout.n, t64.n);
                I("mul.lo.u64 %s, %s, %lld", ybase[e].n, pos.n, (long long)d->c_out * ys);
                I("add.u64 %s, %s, %s", ybase[e].n, ybase[e].n, py.n);
                I("and.pred %s, %s, %s", pp[e].n, okk[e].n, hasa.n);
                I("cvt.u64.u32 %s, %s", n64.n, n.n);
                I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, abs.n);
                I("mad.lo.u64 %s, %s, %d, %s", abase.n, t64.n, d->c_out, abase.n);
                I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, ys, pa.n);
                ws_hgemm_add_read(b, d, r[e], pp[e], off, abase, ys);
            }
            for (int e = 0; e < EG; e++)
                ws_hgemm_elem(b, d, v[e], bias, pp[e], r[e], okk[e], off, ybase[e], ys);
            {
                preg more = ws_ptx_reg(b, PTX_PRED);
                I("add.u32 %s, %s, %d", ra.n, ra.n, 4 * EG * (PM ? YRN : 1));
                I("add.u32 %s, %s, %d", pi.n, pi.n, EG);
                I("setp.lt.u32 %s, %s, %s", more.n, pi.n, pend.n);
                I("@%s bra %s", more.n, top.n);
            }
            ws_ptx_label(b, skip);
        }
    }
    ws_ptx_label(b, done);
}

static void emit_kernel(ptx_buf *mod, const ws_conv_desc *d1, const ws_conv_desc *d2, int cl, int bk, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    hp H, *h = &H;
    memset(h, 0, sizeof *h);
    h->d1 = d1, h->d2 = d2, h->pt = ws_params_of(WS_PARAMS_HPAIR);
    if (ws_hpair_geom_of(d1, d2, cl, bk, &h->q)) {
        ws_ptx_fail(b, "the pair does not fit shared memory");
        ws_ptx_kernel_end_params_cl(&kb, mod, name, h->pt, WS_HPAIR_THREADS, 1, 168, cl);
        return;
    }
    const ws_hpair_geom *q = &h->q;
    ws_ptx_comment(b, "h = pre2(act1(b1 + W1 * pre1(x))) (K %d D %d P_L %d, C_in %d -> C_mid %d), "
                      "y = act2(b2 + W2 * h) + add (C_out %d); cluster %d",
                   d1->k, d1->dilation, d1->pad_l, d1->c_in, q->m1, q->m2, cl);
    ws_ptx_comment(b, "shared memory: weight ring +0 (%d x %d), x ring +%d (%d x %d, %d rows), h +%d, "
                      "mbarriers +%d; %d bytes with alignment",
                   q->wst, q->wsb, q->xoff, WS_HPAIR_XST, q->xcb, q->xr, q->hoff, q->boff, q->smem);
    ws_ptx_section(b, "block: positions (n0.., t0..) = ((ctaid / ntt) << (6 - lgtb), (ctaid % ntt) << lgtb)");
    h->tid = ws_ptx_reg(b, PTX_B32), h->sbase = ws_ptx_reg(b, PTX_B32), h->bars = ws_ptx_reg(b, PTX_B32);
    h->t0 = ws_ptx_reg(b, PTX_B32), h->n0 = ws_ptx_reg(b, PTX_B32), h->lgtb = ws_ptx_reg(b, PTX_B32);
    h->rank = ws_ptx_reg(b, PTX_B32);
    preg cta = ws_ptx_reg(b, PTX_B32), ntt = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    preg wg = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", h->tid.n);
    I("mov.u32 %s, smem", h->sbase.n);
    I("add.u32 %s, %s, 1023", h->sbase.n, h->sbase.n);
    I("and.b32 %s, %s, -1024", h->sbase.n, h->sbase.n);
    I("add.u32 %s, %s, %d", h->bars.n, h->sbase.n, q->boff);
    I("mov.u32 %s, %%ctaid.x", cta.n);
    ws_ptx_ld_param(b, ntt, h->pt, WS_PR_NTT);
    ws_ptx_ld_param(b, h->lgtb, h->pt, WS_PR_LGTB);
    I("rem.u32 %s, %s, %s", h->t0.n, cta.n, ntt.n);
    I("shl.b32 %s, %s, %s", h->t0.n, h->t0.n, h->lgtb.n);
    I("div.u32 %s, %s, %s", h->n0.n, cta.n, ntt.n);
    I("sub.u32 %s, 6, %s", tmp.n, h->lgtb.n);
    I("shl.b32 %s, %s, %s", h->n0.n, h->n0.n, tmp.n);
    if (cl > 1)
        I("mov.u32 %s, %%cluster_ctarank", h->rank.n);
    else
        I("mov.u32 %s, 0", h->rank.n);
    {
        preg not0 = ws_ptx_reg(b, PTX_PRED);
        plabel skip = ws_ptx_label_new(b, "init_done");
        I("setp.ne.u32 %s, %s, 0", not0.n, h->tid.n);
        I("@%s bra %s", not0.n, skip.n);
        ws_ptx_comment(b, "wfull: 1 (the producer, with the bytes); wempty: 8 consumer warps x %d blocks; "
                          "xfull: %d stagers; xempty: 256 consumers", cl, XSTAGERS);
        for (int s = 0; s < q->ws1; s++) {
            I("mbarrier.init.shared::cta.b64 [%s+%d], 1", h->bars.n, bar_off(q, 0) + 8 * s);
            I("mbarrier.init.shared::cta.b64 [%s+%d], %d", h->bars.n, bar_off(q, 1) + 8 * s, 8 * cl);
        }
        for (int s = 0; s < WS_HPAIR_XST; s++) {
            I("mbarrier.init.shared::cta.b64 [%s+%d], %d", h->bars.n, bar_off(q, 2) + 8 * s, XSTAGERS);
            I("mbarrier.init.shared::cta.b64 [%s+%d], 256", h->bars.n, bar_off(q, 3) + 8 * s);
        }
        I("fence.mbarrier_init.release.cluster");
        ws_ptx_label(b, skip);
    }
    I("bar.sync 0");
    if (cl > 1) {
        ws_ptx_comment(b, "the peer's barriers are initialised before any copy signals them");
        I("barrier.cluster.arrive.release.aligned");
        I("barrier.cluster.wait.acquire.aligned");
    }
    I("shr.u32 %s, %s, 7", wg.n, h->tid.n);
    plabel cons_l = ws_ptx_label_new(b, "consumers"), fin = ws_ptx_label_new(b, "fin");
    {
        preg isc = ws_ptx_reg(b, PTX_PRED), t0p = ws_ptx_reg(b, PTX_PRED), wp = ws_ptx_reg(b, PTX_B32);
        plabel stg = ws_ptx_label_new(b, "stagers");
        I("setp.ne.u32 %s, %s, 0", isc.n, wg.n);
        I("@%s bra %s", isc.n, cons_l.n);
        ws_ptx_section(b, "warpgroup 0: thread 0 copies the weights, warps 1-3 stage x");
        I("setmaxnreg.dec.sync.aligned.u32 %d", WS_HPAIR_PREG);
        I("shr.u32 %s, %s, 5", wp.n, h->tid.n);
        I("setp.ne.u32 %s, %s, 0", t0p.n, wp.n);
        I("@%s bra %s", t0p.n, stg.n);
        I("setp.ne.u32 %s, %s, 0", t0p.n, h->tid.n);
        I("@%s bra %s", t0p.n, fin.n);
        emit_wcopies(b, h);
        I("bra %s", fin.n);
        ws_ptx_label(b, stg);
        emit_xstage(b, h);
        I("bra %s", fin.n);
    }
    ws_ptx_label(b, cons_l);
    emit_consumers(b, h);
    ws_ptx_label(b, fin);
    if (cl > 1) {
        ws_ptx_comment(b, "no block leaves while its peer may still signal its barriers");
        I("barrier.cluster.arrive.release");
        I("barrier.cluster.wait.acquire");
    }
    I("ret");
    ws_ptx_kernel_end_params_cl(&kb, mod, name, h->pt, WS_HPAIR_THREADS, 1, 168, cl);
}

char *ws_hpair_emit(const ws_conv_desc *d1, const ws_conv_desc *d2, int cl, int bk, ws_err *err)
{
    if (ws_conv_check(d1, err) || ws_conv_check(d2, err))
        return NULL;
    char name[WS_HPAIR_NAME_MAX];
    ws_hpair_name(d1, d2, cl, bk, name);
    ws_hpair_geom q;
    if (!ws_hpair_fits(d1, d2, 9, 0) || ws_hpair_geom_of(d1, d2, cl, bk, &q)) {
        ws_errf(err, "ws_hpair_emit(%s): not a pair the fused kernel takes", name);
        return NULL;
    }
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin_sm90a(&mod, "whisper-stem conv engine: a conv and a pointwise conv as one kernel "
                                    "(TMA multicast + wgmma)");
    ws_ptx_raw(&mod, ".extern .shared .align 1024 .b8 smem[];\n");
    emit_kernel(&mod, d1, d2, cl, bk, name);
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_hpair_emit(%s): %s", name, why);
    return text;
}

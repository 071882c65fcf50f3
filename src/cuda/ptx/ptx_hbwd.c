/* ptx_hbwd.c - the dense backward's GEMM passes (ptx_hbwd.h). Emission is a pure function of
 * the descriptor and the compute capability. Tested by tests/test_ptx.c and
 * tests/test_gpu_conv.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "ptx_act.h"
#include "ptx_emit.h"
#include "ptx_gemm.h"
#include "ptx_hbwd.h"
#include "ptx_hgemm.h"
#include "ptx_params.h"

#define I(...) ws_ptx_ins(b, __VA_ARGS__)
#define TH WS_GBWD_THREADS

/* the gradient's layout and type: dy's where act is NONE, else gz's (float32 NCL) */
static ws_layout g_layout(const ws_conv_desc *d)
{
    return d->act == WS_ACT_NONE ? d->y_layout : WS_NCL;
}

static ws_dtype g_type(const ws_conv_desc *d)
{
    return d->act == WS_ACT_NONE ? d->y_type : WS_F32;
}

ws_dtype ws_gbwd_math_type(const ws_conv_desc *d)
{
    return d->math == WS_MATH_BF16 ? WS_BF16 : d->math == WS_MATH_F16 ? WS_F16 : WS_F32;
}

static int fdiv(int a, int b) /* floor(a / b), b > 0 */
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* 1 when tap k of d feeds phase r of dx (D*k = r + P_L - S*m for an integer m), with that m */
static int phase_tap(const ws_conv_desc *d, int r, int k, int *m)
{
    const int S = d->stride;
    const long long num = (long long)r + d->pad_l - (long long)d->dilation * k;
    if (((num % S) + S) % S)
        return 0;
    *m = (int)(num >= 0 ? num / S : -((-num) / S));
    return 1;
}

void ws_gbwd_dx_taps(const ws_conv_desc *d, const ws_gbwd_dx *x, int *lo, int *hi)
{
    for (int r = 0; r < x->phases; r++) {
        lo[r] = INT_MAX, hi[r] = -1;
        for (int k = 0; k < d->k; k++) {
            int m;
            if (!phase_tap(d, r, k, &m))
                continue;
            const int i = m - x->m0;
            lo[r] = i < lo[r] ? i : lo[r];
            hi[r] = i > hi[r] ? i : hi[r];
        }
        if (hi[r] < 0)
            lo[r] = hi[r] = 0;
    }
}

int ws_gbwd_dx_of(const ws_conv_desc *d, ws_gbwd_dx *out)
{
    if (d->op != WS_CONV_BWD || d->groups != 1 || d->pre != WS_ACT_NONE)
        return 0;
    const int S = d->stride, D = d->dilation, K = d->k;
    const long long span = (long long)D * (K - 1);
    ws_gbwd_dx x = { 0 };
    x.sub = (ws_conv_desc){ .op = WS_CONV_FWD, .c_in = d->c_out, .groups = 1, .stride = 1,
                            .x_layout = g_layout(d), .x_type = g_type(d), .w_type = WS_F32,
                            .y_type = d->x_type, .math = d->math, .pre = WS_ACT_NONE,
                            .act = WS_ACT_NONE };
    if (S == 1) {
        if (d->pad_l > span || d->pad_r > span)
            return 0;
        x.phases = 1;
        x.sub.c_out = d->c_in, x.sub.k = K, x.sub.dilation = D;
        x.sub.pad_l = (int)(span - d->pad_l), x.sub.pad_r = (int)(span - d->pad_r);
        x.sub.y_layout = d->x_layout;
    } else {
        int m0 = INT_MAX, m1 = INT_MIN;
        for (int r = 0; r < S; r++)
            for (int k = 0; k < K; k++) {
                int m;
                if (!phase_tap(d, r, k, &m))
                    continue;
                m0 = m < m0 ? m : m0;
                m1 = m > m1 ? m : m1;
            }
        if (m0 == INT_MAX)
            return 0;
        if (m0 > 0)
            m0 = 0;
        const int kk = m1 - m0 + 1;
        if (kk > 4 * ((K + S - 1) / S) + 2 || (long long)S * d->c_in > 65535)
            return 0;
        x.phases = S, x.m0 = m0;
        x.sub.c_out = S * d->c_in, x.sub.k = kk, x.sub.dilation = 1;
        x.sub.pad_l = -m0;
        /* T_out of the sub >= ceil(T_in / S) for every T_in (ws_gbwd_dx_rows) */
        const int pr = kk - 1 + m0 + fdiv((int)(span - d->pad_l - d->pad_r) + S - 1, S);
        x.sub.pad_r = pr > 0 ? pr : 0;
        x.sub.y_layout = WS_NLC;
    }
    ws_err e;
    if (ws_conv_check(&x.sub, &e))
        return 0;
    if (out)
        *out = x;
    return 1;
}

int ws_gbwd_used(const ws_conv_desc *d)
{
    return WS_GBWD && d->op == WS_CONV_BWD && d->groups == 1 && d->pre == WS_ACT_NONE &&
           (d->act == WS_ACT_NONE || d->math == WS_MATH_F32);
}

int ws_gbwd_has_dw(const ws_conv_desc *d)
{
    return d->op == WS_CONV_BWD && d->groups == 1 && d->pre == WS_ACT_NONE && d->k <= WS_GBWD_KMAX &&
           (long long)d->c_in * d->k <= 65535 && d->c_out <= 65535;
}

int ws_gbwd_g_rows(const ws_conv_desc *d)
{
    return !ws_gbwd_ffma_dw(d) && g_layout(d) == WS_NCL;
}

int ws_gbwd_x_rows(const ws_conv_desc *d)
{
    return !ws_gbwd_ffma_dw(d) && d->x_layout == WS_NCL && d->stride <= 2;
}

int ws_gbwd_ffma_dw(const ws_conv_desc *d)
{
    return ws_gbwd_has_dw(d) && d->math == WS_MATH_F32;
}

int ws_gbwd_ffma_dw_cc(const ws_conv_desc *d, int cc_major, int cc_minor)
{
    return ws_gbwd_has_dw(d) && (d->math == WS_MATH_F32 || !ws_hgemm_wgrad_fits(d, cc_major, cc_minor));
}

int ws_gbwd_dx_rows(const ws_gbwd_dx *x, int t_out, int t_in)
{
    (void)t_in;
    return ws_conv_out_len(&x->sub, t_out);
}

void ws_gbwd_name(const ws_conv_desc *d, char name[WS_GBWD_NAME_MAX])
{
    snprintf(name, WS_GBWD_NAME_MAX, "ws_gbwd_%s_c%d_%d_k%d_s%d_d%d_p%d_%d_%s_%s_%s_%s_%s",
             d->math == WS_MATH_F32 ? "f32" : d->math == WS_MATH_TF32 ? "tf32"
             : d->math == WS_MATH_BF16 ? "bf16" : "f16",
             d->c_in, d->c_out, d->k, d->stride, d->dilation, d->pad_l, d->pad_r,
             d->x_layout == WS_NCL ? "ncl" : "nlc", d->y_layout == WS_NCL ? "ncl" : "nlc",
             ws_ptx_type_name(d->x_type), ws_ptx_type_name(d->y_type),
             d->act == WS_ACT_NONE ? "none" : "gz");
}

/* stores f32 v at byte address a as type mt; d NULL: float32 as it is, else TF32 math
 * rounds a float32 (kept in float32) */
static void st_math(ptx_buf *b, preg a, preg v, ws_dtype mt, const ws_conv_desc *d)
{
    if (mt == WS_F32) {
        preg r = ws_ptx_reg(b, PTX_B32);
        if (d && d->math == WS_MATH_TF32)
            I("cvt.rna.tf32.f32 %s, %s", r.n, v.n);
        else
            I("mov.b32 %s, %s", r.n, v.n);
        I("st.global.b32 [%s], %s", a.n, r.n);
    } else {
        preg h = ws_ptx_reg(b, PTX_B16);
        I("cvt.rn.%s.f32 %s, %s", mt == WS_BF16 ? "bf16" : "f16", h.n, v.n);
        I("st.global.b16 [%s], %s", a.n, h.n);
    }
}

/* the staging entries' parameters (WS_PARAMS_GBS): src and dst as global addresses, T, pitch */
static void gbs_params(ptx_buf *b, preg src, preg dst, preg T, preg pitch)
{
    const ws_params *pt = ws_params_of(WS_PARAMS_GBS);
    ws_ptx_ld_param(b, src, pt, WS_GBS_SRC);
    ws_ptx_ld_param(b, dst, pt, WS_GBS_DST);
    ws_ptx_ld_param(b, T, pt, WS_GBS_T);
    ws_ptx_ld_param(b, pitch, pt, WS_GBS_PITCH);
    I("cvta.to.global.u64 %s, %s", src.n, src.n);
    I("cvta.to.global.u64 %s, %s", dst.n, dst.n);
}

/* e = the element index of row j, time u of item n in a source of C rows and T times (b32
 * registers; w a b64 scratch): NCL (n*C + j)*T + u, NLC (n*T + u)*C + j */
static void src_index(ptx_buf *b, preg e, preg w, preg n, preg j, preg u, preg T, int C, int ncl)
{
    if (ncl) {
        I("mad.wide.u32 %s, %s, %d, 0", e.n, n.n, C);
        I("cvt.u64.u32 %s, %s", w.n, j.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, T.n);
        I("mul.lo.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, u.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
    } else {
        I("mul.wide.u32 %s, %s, %s", e.n, n.n, T.n);
        I("cvt.u64.u32 %s, %s", w.n, u.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("mul.lo.u64 %s, %s, %d", e.n, e.n, C);
        I("cvt.u64.u32 %s, %s", w.n, j.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
    }
}

/* the staging of a time-major operand through shared memory, a block a tile of 32 times q x
 * 32 rows j of one class c: dst[n][c][j][q] (classes ncls, rows C, p_pitch times) =
 * src[n, j, S*(q + sh[c]) + r[c]] (layout L, type t, p_t times; zero outside [0, p_t) and
 * past C), stored as dt (TF32 math: rounded, kept in float32). Reads go along the source's
 * contiguous axis, writes along q. Grid (ceil(pitch / 32), ceil(C / 32) * ncls, N):
 * ctaid.y = jt*ncls + c, so the classes of one tile are neighbours (their reads meet in L2) */
static void emit_tile(ptx_buf *mod, const ws_conv_desc *d, const char *name, int C, int S, ws_layout L,
                      ws_dtype t, const ws_gbwd_cls *cl, ws_dtype dt, int round)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_GBS);
    const int ncls = cl ? cl->n : 1, ncl = L == WS_NCL;
    ws_ptx_comment(b, "dst[n][c][j][q] = src[n, j, %d*(q + sh[c]) + r[c]] (%s %s) as %s%s, zero outside "
                      "[0, T); C %d, %d classes; a block 32 q x 32 j", S, ncl ? "NCL" : "NLC",
                   ws_ptx_type_name(t), ws_ptx_type_name(dt),
                   round && d->math == WS_MATH_TF32 && dt == WS_F32 ? " (tf32)" : "", C, ncls);
    ws_ptx_raw(b, "\t.shared .align 4 .b8 tile[%d];\n", 32 * 33 * 4);
    preg ps = ws_ptx_reg(b, PTX_B64), pd = ws_ptx_reg(b, PTX_B64), T = ws_ptx_reg(b, PTX_B32);
    preg pitch = ws_ptx_reg(b, PTX_B32), tid = ws_ptx_reg(b, PTX_B32), tx = ws_ptx_reg(b, PTX_B32);
    preg ty = ws_ptx_reg(b, PTX_B32), q0 = ws_ptx_reg(b, PTX_B32), y = ws_ptx_reg(b, PTX_B32);
    preg n = ws_ptx_reg(b, PTX_B32), cls = ws_ptx_reg(b, PTX_B32), j0 = ws_ptx_reg(b, PTX_B32);
    preg r = ws_ptx_reg(b, PTX_B32), sh = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_PRED);
    preg sb = ws_ptx_reg(b, PTX_B32);
    gbs_params(b, ps, pd, T, pitch);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("and.b32 %s, %s, 31", tx.n, tid.n);
    I("shr.u32 %s, %s, 5", ty.n, tid.n);
    I("mov.u32 %s, %%ctaid.x", q0.n);
    I("shl.b32 %s, %s, 5", q0.n, q0.n);
    I("mov.u32 %s, %%ctaid.y", y.n);
    I("mov.u32 %s, %%ctaid.z", n.n);
    I("rem.u32 %s, %s, %d", cls.n, y.n, ncls);
    I("div.u32 %s, %s, %d", j0.n, y.n, ncls);
    I("shl.b32 %s, %s, 5", j0.n, j0.n);
    I("mov.u32 %s, tile", sb.n);
    I("mov.u32 %s, 0", r.n);
    I("mov.u32 %s, 0", sh.n);
    for (int i = 0; cl && i < cl->n; i++) {
        I("setp.eq.u32 %s, %s, %d", p.n, cls.n, i);
        I("@%s mov.u32 %s, %d", p.n, r.n, cl->r[i]);
        I("@%s mov.u32 %s, %d", p.n, sh.n, cl->m[i] - cl->align);
    }
    ws_ptx_section(b, ncl ? "read: tile[jj][tx] = src[n, j0 + jj, S*(q0 + tx + sh) + r], jj = ty + 8i"
                          : "read: tile[tx][qq] = src[n, S*(q0 + qq + sh) + r, j0 + tx], qq = ty + 8i");
    for (int i = 0; i < 4; i++) {
        preg j = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
        preg ok = ws_ptx_reg(b, PTX_PRED), ok2 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64);
        preg w = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32);
        preg sa = ws_ptx_reg(b, PTX_B32);
        if (ncl) {
            I("add.u32 %s, %s, %d", j.n, ty.n, 8 * i);
            I("add.u32 %s, %s, %s", j.n, j.n, j0.n);
            I("add.u32 %s, %s, %s", q.n, q0.n, tx.n);
        } else {
            I("add.u32 %s, %s, %s", j.n, j0.n, tx.n);
            I("add.u32 %s, %s, %d", q.n, ty.n, 8 * i);
            I("add.u32 %s, %s, %s", q.n, q.n, q0.n);
        }
        I("add.s32 %s, %s, %s", u.n, q.n, sh.n);
        I("mad.lo.s32 %s, %s, %d, %s", u.n, u.n, S, r.n);
        I("setp.ge.s32 %s, %s, 0", ok.n, u.n);
        I("setp.lt.s32 %s, %s, %s", ok2.n, u.n, T.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("setp.lt.u32 %s, %s, %d", ok2.n, j.n, C);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("max.s32 %s, %s, 0", u.n, u.n);
        src_index(b, e, w, n, j, u, T, C, ncl);
        I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, t == WS_F32 ? 4 : 2, ps.n);
        ws_ptx_load_pred(b, v, a, ok, t);
        if (ncl) { /* tile[ty + 8i][tx] */
            I("add.u32 %s, %s, %d", sa.n, ty.n, 8 * i);
            I("mad.lo.u32 %s, %s, 33, %s", sa.n, sa.n, tx.n);
        } else {   /* tile[tx][ty + 8i] */
            I("mad.lo.u32 %s, %s, 33, %s", sa.n, tx.n, ty.n);
            I("add.u32 %s, %s, %d", sa.n, sa.n, 8 * i);
        }
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        I("st.shared.f32 [%s], %s", sa.n, v.n);
    }
    I("bar.sync 0");
    ws_ptx_section(b, "write: dst[n][c][j0 + jj][q0 + tx] = tile[jj][tx], jj = ty + 8i");
    for (int i = 0; i < 4; i++) {
        preg j = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
        preg ok2 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B64);
        preg a = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32), sa = ws_ptx_reg(b, PTX_B32);
        plabel skip = ws_ptx_label_new(b, "skip");
        I("add.u32 %s, %s, %d", j.n, ty.n, 8 * i);
        I("mad.lo.u32 %s, %s, 33, %s", sa.n, j.n, tx.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        I("ld.shared.f32 %s, [%s]", v.n, sa.n);
        I("add.u32 %s, %s, %s", j.n, j.n, j0.n);
        I("add.u32 %s, %s, %s", q.n, q0.n, tx.n);
        I("setp.lt.u32 %s, %s, %d", ok.n, j.n, C);
        I("setp.lt.u32 %s, %s, %s", ok2.n, q.n, pitch.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("@!%s bra %s", ok.n, skip.n);
        ws_ptx_comment(b, "((n*ncls + c)*C + j)*pitch + q");
        I("mad.lo.u32 %s, %s, %d, %s", j.n, cls.n, C, j.n);
        I("mad.wide.u32 %s, %s, %d, 0", e.n, n.n, C * ncls);
        I("cvt.u64.u32 %s, %s", w.n, j.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, pitch.n);
        I("mul.lo.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, q.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, dt == WS_F32 ? 4 : 2, pd.n);
        st_math(b, a, v, dt, round ? d : NULL);
        ws_ptx_label(b, skip);
    }
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 0, 0);
}

/* the staging of a time-major operand from a time-major (NCL) source, no transpose:
 * dst[n][c][j][q] (classes ncls, rows C, p_pitch times, a multiple of the V elements of 16
 * bytes of dt) = src[n, j, S*(q + sh[c]) + r[c]] (NCL, type t, p_t times; zero outside [0,
 * p_t)), stored as dt (TF32 math: rounded, kept in float32). A thread V consecutive q of one
 * row: V loads, one 16-byte store; thread i = ctaid.x*TH + tid of item ctaid.z takes row
 * i / nv (= j*ncls + c, so a row's classes are neighbours: their reads meet in L2), vector
 * i % nv, nv = pitch / V. Grid (ceil(C * ncls * nv / TH), 1, N) */
static void emit_rowgather(ptx_buf *mod, const ws_conv_desc *d, const char *name, int C, int S, ws_dtype t,
                           const ws_gbwd_cls *cl, ws_dtype dt)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_GBS);
    const int ncls = cl ? cl->n : 1, es = dt == WS_F32 ? 4 : 2, V = 16 / es;
    const int tf32 = d->math == WS_MATH_TF32 && dt == WS_F32;
    ws_ptx_comment(b, "dst[n][c][j][q] = src[n, j, %d*(q + sh[c]) + r[c]] (NCL %s) as %s%s, zero outside [0, T); "
                      "C %d, %d classes; a thread %d q", S, ws_ptx_type_name(t), ws_ptx_type_name(dt),
                   tf32 ? " (tf32)" : "", C, ncls, V);
    preg ps = ws_ptx_reg(b, PTX_B64), pd = ws_ptx_reg(b, PTX_B64), T = ws_ptx_reg(b, PTX_B32);
    preg pitch = ws_ptx_reg(b, PTX_B32), q0 = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    preg y = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), cls = ws_ptx_reg(b, PTX_B32);
    preg j = ws_ptx_reg(b, PTX_B32), r = ws_ptx_reg(b, PTX_B32), sh = ws_ptx_reg(b, PTX_B32);
    preg p = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B64);
    preg src = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64), u0 = ws_ptx_reg(b, PTX_B32);
    plabel done = ws_ptx_label_new(b, "done");
    gbs_params(b, ps, pd, T, pitch);
    preg nv = ws_ptx_reg(b, PTX_B32), gi = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, %d", nv.n, pitch.n, V == 8 ? 3 : 2);
    I("mov.u32 %s, %%ctaid.x", gi.n);
    I("mov.u32 %s, %%tid.x", tmp.n);
    I("mad.lo.u32 %s, %s, %d, %s", gi.n, gi.n, TH, tmp.n);
    I("mul.lo.u32 %s, %s, %d", tmp.n, nv.n, C * ncls);
    I("setp.ge.u32 %s, %s, %s", p.n, gi.n, tmp.n);
    I("@%s bra %s", p.n, done.n);
    I("div.u32 %s, %s, %s", y.n, gi.n, nv.n);
    I("mul.lo.u32 %s, %s, %s", q0.n, y.n, nv.n);
    I("sub.u32 %s, %s, %s", q0.n, gi.n, q0.n);
    I("mul.lo.u32 %s, %s, %d", q0.n, q0.n, V);
    I("mov.u32 %s, %%ctaid.z", n.n);
    I("rem.u32 %s, %s, %d", cls.n, y.n, ncls);
    I("div.u32 %s, %s, %d", j.n, y.n, ncls);
    I("mov.u32 %s, 0", r.n);
    I("mov.u32 %s, 0", sh.n);
    for (int i = 0; cl && i < cl->n; i++) {
        I("setp.eq.u32 %s, %s, %d", p.n, cls.n, i);
        I("@%s mov.u32 %s, %d", p.n, r.n, cl->r[i]);
        I("@%s mov.u32 %s, %d", p.n, sh.n, cl->m[i] - cl->align);
    }
    ws_ptx_comment(b, "src + ((n*C + j)*T)*es; u = S*(q0 + sh) + r");
    I("mad.wide.u32 %s, %s, %d, 0", e.n, n.n, C);
    I("cvt.u64.u32 %s, %s", w.n, j.n);
    I("add.u64 %s, %s, %s", e.n, e.n, w.n);
    I("cvt.u64.u32 %s, %s", w.n, T.n);
    I("mul.lo.u64 %s, %s, %s", e.n, e.n, w.n);
    I("mad.lo.u64 %s, %s, %d, %s", src.n, e.n, t == WS_F32 ? 4 : 2, ps.n);
    I("add.s32 %s, %s, %s", u0.n, q0.n, sh.n);
    I("mad.lo.s32 %s, %s, %d, %s", u0.n, u0.n, S, r.n);
    preg v[8], bits[8];
    for (int i = 0; i < V; i++) {
        preg u = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), ua = ws_ptx_reg(b, PTX_B64);
        v[i] = ws_ptx_reg(b, PTX_F32);
        I("add.s32 %s, %s, %d", u.n, u0.n, S * i);
        I("setp.lt.u32 %s, %s, %s", ok.n, u.n, T.n); /* unsigned: a negative u is out too */
        I("max.s32 %s, %s, 0", u.n, u.n);
        I("mad.wide.u32 %s, %s, %d, %s", ua.n, u.n, t == WS_F32 ? 4 : 2, src.n);
        ws_ptx_load_pred(b, v[i], ua, ok, t);
    }
    ws_ptx_comment(b, "dst + (((n*ncls + c)*C + j)*pitch + q0)*es: one 16-byte store");
    for (int i = 0; i < 4; i++) {
        bits[i] = ws_ptx_reg(b, PTX_B32);
        if (es == 4) {
            if (tf32)
                I("cvt.rna.tf32.f32 %s, %s", bits[i].n, v[i].n);
            else
                I("mov.b32 %s, %s", bits[i].n, v[i].n);
        } else { /* element 2i in the low half */
            I("cvt.rn.%sx2.f32 %s, %s, %s", dt == WS_BF16 ? "bf16" : "f16", bits[i].n, v[2 * i + 1].n, v[2 * i].n);
        }
    }
    I("mad.lo.u32 %s, %s, %d, %s", tmp.n, n.n, ncls, cls.n);
    I("mad.lo.u32 %s, %s, %d, %s", tmp.n, tmp.n, C, j.n);
    I("mul.wide.u32 %s, %s, %s", e.n, tmp.n, pitch.n);
    I("cvt.u64.u32 %s, %s", w.n, q0.n);
    I("add.u64 %s, %s, %s", e.n, e.n, w.n);
    I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, es, pd.n);
    I("st.global.v4.b32 [%s], {%s, %s, %s, %s}", a.n, bits[0].n, bits[1].n, bits[2].n, bits[3].n);
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 0, 0);
}

/* W'[oc][o][m] from float32 w[o][c][k] (ptx_hbwd.h), one thread an element of W' */
/* packed: W' as the conv's GEMM reads it (ws_gemm_pack_weights: for tensor-core math rounded
 * to the math type, r = m*C_out + o where k-major, else o*K' + m; for the FFMA kernel float32
 * [r][oc], r = m*C_out + o), else float32 [oc][o][m] */
static void emit_wx(ptx_buf *mod, const ws_conv_desc *d, const ws_gbwd_dx *x, const char *name, int packed)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_WPREP);
    const int KK = x->sub.k, S = x->phases, Ci = d->c_in, Co = d->c_out, K = d->k, D = d->dilation;
    ws_ptx_comment(b, "W'[oc][o][m] (%d x %d x %d) from wT[c][k][o] = w[o][c][k] (%d x %d x %d), %s", x->sub.c_out, Co, KK,
                   Co, Ci, K, S == 1 ? "k = K-1-m" : "oc = r*C_in + c, D*k = r + P_L - S*(m + m0)");
    preg pw = ws_ptx_reg(b, PTX_B64), po = ws_ptx_reg(b, PTX_B64), nn = ws_ptx_reg(b, PTX_B32);
    preg i = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_PRED);
    preg m = ws_ptx_reg(b, PTX_B32), o = ws_ptx_reg(b, PTX_B32), oc = ws_ptx_reg(b, PTX_B32);
    preg r = ws_ptx_reg(b, PTX_B32), c = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), v = ws_ptx_reg(b, PTX_F32), a = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ld_param(b, pw, pt, WS_WPREP_W);
    ws_ptx_ld_param(b, po, pt, WS_WPREP_OUT);
    ws_ptx_ld_param(b, nn, pt, WS_WPREP_N);
    I("cvta.to.global.u64 %s, %s", pw.n, pw.n);
    I("cvta.to.global.u64 %s, %s", po.n, po.n);
    I("mov.u32 %s, %%ctaid.x", i.n);
    I("mov.u32 %s, %%tid.x", tmp.n);
    I("mad.lo.u32 %s, %s, %d, %s", i.n, i.n, TH, tmp.n);
    I("setp.ge.u32 %s, %s, %s", p.n, i.n, nn.n);
    I("@%s bra %s", p.n, done.n);
    ws_ptx_comment(b, "i = (oc*K' + m)*C_out + o: o fastest, so that wT's reads go along o");
    I("rem.u32 %s, %s, %d", o.n, i.n, Co);
    I("div.u32 %s, %s, %d", tmp.n, i.n, Co);
    I("rem.u32 %s, %s, %d", m.n, tmp.n, KK);
    I("div.u32 %s, %s, %d", oc.n, tmp.n, KK);
    I("rem.u32 %s, %s, %d", c.n, oc.n, Ci);
    I("div.u32 %s, %s, %d", r.n, oc.n, Ci);
    if (S == 1) {
        I("sub.u32 %s, %d, %s", k.n, K - 1, m.n);
        I("setp.eq.u32 %s, 1, 1", ok.n);
    } else {
        preg num = ws_ptx_reg(b, PTX_B32), q = ws_ptx_reg(b, PTX_PRED), rm = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "num = r + P_L - S*(m + m0) >= 0, D | num, num / D < K");
        I("add.s32 %s, %s, %d", num.n, m.n, x->m0);
        I("mul.lo.s32 %s, %s, %d", num.n, num.n, -S);
        I("add.s32 %s, %s, %s", num.n, num.n, r.n);
        I("add.s32 %s, %s, %d", num.n, num.n, d->pad_l);
        I("setp.ge.s32 %s, %s, 0", ok.n, num.n);
        I("max.s32 %s, %s, 0", num.n, num.n);
        I("rem.u32 %s, %s, %d", rm.n, num.n, D);
        I("setp.eq.u32 %s, %s, 0", q.n, rm.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, q.n);
        I("div.u32 %s, %s, %d", k.n, num.n, D);
        I("setp.lt.u32 %s, %s, %d", q.n, k.n, K);
        I("and.pred %s, %s, %s", ok.n, ok.n, q.n);
    }
    ws_ptx_comment(b, "wT[(c*K + k)*C_out + o] = w[o][c][k] (the _t entry's transpose)");
    I("mad.lo.u32 %s, %s, %d, %s", tmp.n, c.n, K, k.n);
    I("mad.lo.u32 %s, %s, %d, %s", tmp.n, tmp.n, Co, o.n);
    I("mad.wide.u32 %s, %s, 4, %s", a.n, tmp.n, pw.n);
    I("mov.f32 %s, 0f00000000", v.n);
    I("@%s ld.global.nc.f32 %s, [%s]", ok.n, v.n, a.n);
    if (!packed) {
        ws_ptx_comment(b, "W'[(oc*C_out + o)*K' + m]");
        I("mad.lo.u32 %s, %s, %d, %s", tmp.n, oc.n, Co, o.n);
        I("mad.lo.u32 %s, %s, %d, %s", tmp.n, tmp.n, KK, m.n);
        I("mad.wide.u32 %s, %s, 4, %s", a.n, tmp.n, po.n);
        I("st.global.f32 [%s], %s", a.n, v.n);
    } else if (!ws_gemm_mma(&x->sub)) { /* the FFMA kernel's: [r][oc], r = m*C_out + o */
        ws_ptx_comment(b, "packed (FFMA): (m*C_out + o)*%d + oc", x->sub.c_out);
        I("mad.lo.u32 %s, %s, %d, %s", tmp.n, m.n, Co, o.n);
        I("mad.lo.u32 %s, %s, %d, %s", tmp.n, tmp.n, x->sub.c_out, oc.n);
        I("mad.wide.u32 %s, %s, 4, %s", a.n, tmp.n, po.n);
        I("st.global.f32 [%s], %s", a.n, v.n);
    } else {
        const int km = ws_gemm_mma_kmajor(&x->sub), R = Co * KK;
        ws_ptx_comment(b, "packed: oc*%d + %s", R, km ? "m*C_out + o" : "o*K' + m");
        I("mad.lo.u32 %s, %s, %d, %s", tmp.n, km ? m.n : o.n, km ? Co : KK, km ? o.n : m.n);
        I("mad.lo.u32 %s, %s, %d, %s", tmp.n, oc.n, R, tmp.n);
        if (d->math == WS_MATH_TF32) {
            preg t32 = ws_ptx_reg(b, PTX_B32);
            I("cvt.rna.tf32.f32 %s, %s", t32.n, v.n);
            I("mad.wide.u32 %s, %s, 4, %s", a.n, tmp.n, po.n);
            I("st.global.b32 [%s], %s", a.n, t32.n);
        } else {
            preg h = ws_ptx_reg(b, PTX_B16);
            I("cvt.rn.%s.f32 %s, %s", d->math == WS_MATH_BF16 ? "bf16" : "f16", h.n, v.n);
            I("mad.wide.u32 %s, %s, 2, %s", a.n, tmp.n, po.n);
            I("st.global.b16 [%s], %s", a.n, h.n);
        }
    }
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 0, 0);
}

/* dx from X' (ptx_hbwd.h): NLC dx is X' item by item (X' has p_pitch times an item where
 * dx has p_t): dst[n][i] = src[n][i], i < p_t * C_in, grid (ceil(p_t * C_in / TH), 1, N);
 * NCL dx is emit_tile's transpose of X' read as NLC over p_pitch times */
static void emit_unstage(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    const int C = d->c_in, xs = d->x_type == WS_F32 ? 4 : 2;
    if (d->x_layout == WS_NCL) {
        emit_tile(mod, d, name, C, 1, WS_NLC, d->x_type, NULL, d->x_type, 0);
        return;
    }
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_GBS);
    ws_ptx_comment(b, "dx[n][i] = X'[n][i], i < T_in * %d (NLC, %s)", C, ws_ptx_type_name(d->x_type));
    preg ps = ws_ptx_reg(b, PTX_B64), pd = ws_ptx_reg(b, PTX_B64), T = ws_ptx_reg(b, PTX_B32);
    preg rows = ws_ptx_reg(b, PTX_B32), i = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    preg n = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_PRED), lim = ws_ptx_reg(b, PTX_B32);
    preg e = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    gbs_params(b, ps, pd, T, rows);
    I("mov.u32 %s, %%ctaid.x", i.n);
    I("mov.u32 %s, %%tid.x", tmp.n);
    I("mad.lo.u32 %s, %s, %d, %s", i.n, i.n, TH, tmp.n);
    I("mul.lo.u32 %s, %s, %d", lim.n, T.n, C);
    I("setp.ge.u32 %s, %s, %s", p.n, i.n, lim.n);
    I("@%s bra %s", p.n, done.n);
    I("mov.u32 %s, %%ctaid.z", n.n);
    I("cvt.u64.u32 %s, %s", w.n, i.n);
    I("mul.wide.u32 %s, %s, %s", e.n, n.n, rows.n);
    I("mul.lo.u64 %s, %s, %d", e.n, e.n, C);
    I("add.u64 %s, %s, %s", e.n, e.n, w.n);
    I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, xs, ps.n);
    preg v32 = ws_ptx_reg(b, PTX_B32), v16 = ws_ptx_reg(b, PTX_B16);
    if (xs == 4)
        I("ld.global.nc.b32 %s, [%s]", v32.n, a.n);
    else
        I("ld.global.nc.b16 %s, [%s]", v16.n, a.n);
    I("mul.wide.u32 %s, %s, %s", e.n, n.n, lim.n);
    I("add.u64 %s, %s, %s", e.n, e.n, w.n);
    I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, xs, pd.n);
    if (xs == 4)
        I("st.global.b32 [%s], %s", a.n, v32.n);
    else
        I("st.global.b16 [%s], %s", a.n, v16.n);
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 0, 0);
}

/* the float32 weight gradient's operands (ptx_hbwd.h): dst[n][t][c] (row pitch P, a
 * multiple of 4) = src[n, c, t] (layout L, type t, p_t times, C channels) as float32, zero
 * for c in [C, P). A block a tile of 32 times x 32 channels through shared memory, read
 * along the source's contiguous axis, written along c. Grid (ceil(T / 32), ceil(P / 32), N) */
static void emit_rows(ptx_buf *mod, const char *name, int C, ws_layout L, ws_dtype t)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_GBS);
    const int ncl = L == WS_NCL;
    ws_ptx_comment(b, "dst[n][t][c] (pitch p_pitch) = src[n, c, t] (%s %s, C %d) as f32, zero past C; a block "
                      "32 t x 32 c", ncl ? "NCL" : "NLC", ws_ptx_type_name(t), C);
    ws_ptx_raw(b, "\t.shared .align 4 .b8 tile[%d];\n", 32 * 33 * 4);
    preg ps = ws_ptx_reg(b, PTX_B64), pd = ws_ptx_reg(b, PTX_B64), T = ws_ptx_reg(b, PTX_B32);
    preg P = ws_ptx_reg(b, PTX_B32), tid = ws_ptx_reg(b, PTX_B32), tx = ws_ptx_reg(b, PTX_B32);
    preg ty = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32), c0 = ws_ptx_reg(b, PTX_B32);
    preg n = ws_ptx_reg(b, PTX_B32), sb = ws_ptx_reg(b, PTX_B32);
    gbs_params(b, ps, pd, T, P);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("and.b32 %s, %s, 31", tx.n, tid.n);
    I("shr.u32 %s, %s, 5", ty.n, tid.n);
    I("mov.u32 %s, %%ctaid.x", t0.n);
    I("shl.b32 %s, %s, 5", t0.n, t0.n);
    I("mov.u32 %s, %%ctaid.y", c0.n);
    I("shl.b32 %s, %s, 5", c0.n, c0.n);
    I("mov.u32 %s, %%ctaid.z", n.n);
    I("mov.u32 %s, tile", sb.n);
    ws_ptx_section(b, ncl ? "read: tile[tx][cc] = src[n, c0 + cc, t0 + tx], cc = ty + 8i"
                          : "read: tile[tt][tx] = src[n, t0 + tt, c0 + tx], tt = ty + 8i");
    for (int i = 0; i < 4; i++) {
        preg c = ws_ptx_reg(b, PTX_B32), tt = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
        preg ok2 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B64);
        preg a = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32), sa = ws_ptx_reg(b, PTX_B32);
        if (ncl) {
            I("add.u32 %s, %s, %d", c.n, ty.n, 8 * i);
            I("add.u32 %s, %s, %s", c.n, c.n, c0.n);
            I("add.u32 %s, %s, %s", tt.n, t0.n, tx.n);
        } else {
            I("add.u32 %s, %s, %s", c.n, c0.n, tx.n);
            I("add.u32 %s, %s, %d", tt.n, ty.n, 8 * i);
            I("add.u32 %s, %s, %s", tt.n, tt.n, t0.n);
        }
        I("setp.lt.u32 %s, %s, %s", ok.n, tt.n, T.n);
        I("setp.lt.u32 %s, %s, %d", ok2.n, c.n, C);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        src_index(b, e, w, n, c, tt, T, C, ncl);
        I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, t == WS_F32 ? 4 : 2, ps.n);
        ws_ptx_load_pred(b, v, a, ok, t);
        /* tile[t_local][c_local] */
        if (ncl)
            I("mad.lo.u32 %s, %s, 33, %s", sa.n, tx.n, ty.n), I("add.u32 %s, %s, %d", sa.n, sa.n, 8 * i);
        else
            I("add.u32 %s, %s, %d", sa.n, ty.n, 8 * i), I("mad.lo.u32 %s, %s, 33, %s", sa.n, sa.n, tx.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        I("st.shared.f32 [%s], %s", sa.n, v.n);
    }
    I("bar.sync 0");
    ws_ptx_section(b, "write: dst[(n*T + t0 + tt)*P + c0 + tx] = tile[tt][tx], tt = ty + 8i, c < P");
    for (int i = 0; i < 4; i++) {
        preg c = ws_ptx_reg(b, PTX_B32), tt = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
        preg ok2 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B64);
        preg a = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32), sa = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", tt.n, ty.n, 8 * i);
        I("mad.lo.u32 %s, %s, 33, %s", sa.n, tt.n, tx.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        I("ld.shared.f32 %s, [%s]", v.n, sa.n);
        I("add.u32 %s, %s, %s", tt.n, tt.n, t0.n);
        I("add.u32 %s, %s, %s", c.n, c0.n, tx.n);
        I("setp.lt.u32 %s, %s, %s", ok.n, tt.n, T.n);
        I("setp.lt.u32 %s, %s, %s", ok2.n, c.n, P.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("mul.wide.u32 %s, %s, %s", e.n, n.n, T.n);
        I("cvt.u64.u32 %s, %s", w.n, tt.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, P.n);
        I("mul.lo.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, c.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("mad.lo.u64 %s, %s, 4, %s", a.n, e.n, pd.n);
        I("@%s st.global.f32 [%s], %s", ok.n, a.n, v.n);
    }
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 0, 0);
}

#define FM WS_GBWD_FWG_BM     /* o of a tile */
#define FN WS_GBWD_FWG_BN     /* j of a tile */
#define FK WS_GBWD_FWG_BK     /* times a stage */
#define FS WS_GBWD_FWG_STAGES /* stages in the ring */
#define FSTAGE ((FM + FN) * FK * 4) /* bytes of a stage: A [FK][FM], then B [FK][FN] */
_Static_assert(FM == FN && FM == 128 && FK == 16 && FS >= 2 && FS * FSTAGE <= 49152,
               "the float32 weight gradient: one copy offset for both operands, 8 x 8 a thread");

/* one stage's cp.async copies (the caller commits): chunk tid + 256h (h < 2) of each operand is
 * row kk = lr + 8h (time t0 + kk), 4 elements from column 4*lc; A[kk][..] = G[n][t][o0 + ..],
 * B[kk][..] = X[n][S*t + sh][j0 + ..]; zero where t >= T_out, the row of x is outside
 * [0, T_in) or the column is past the pitch */
typedef struct {
    preg ga, gb, pa, pb;   /* the first element of the thread's column (u64), the bases */
    preg oka, okb;         /* its column is inside the pitches */
    preg To, Ti, ap, bp;   /* u32 */
    preg sh;               /* D*k - P_L (s32) */
    preg so;               /* the thread's offset in a stage, lr*4*FM + lc*16 */
    int S;
} fwg;

static void fwg_load(ptx_buf *b, const fwg *f, preg n, preg t0, preg sbuf)
{
    for (int h = 0; h < 2; h++) {
        preg t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), q = ws_ptx_reg(b, PTX_PRED);
        preg e = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64);
        preg sz = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", t.n, t0.n, 8 * h);
        I("setp.lt.u32 %s, %s, %s", ok.n, t.n, f->To.n);
        ws_ptx_comment(b, "A: G + ((n*T_out + t)*ap)*4 + column");
        I("mul.wide.u32 %s, %s, %s", e.n, n.n, f->To.n);
        I("cvt.u64.u32 %s, %s", w.n, t.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, f->ap.n);
        I("mul.lo.u64 %s, %s, %s", e.n, e.n, w.n);
        I("mad.lo.u64 %s, %s, 4, %s", a.n, e.n, f->ga.n);
        I("and.pred %s, %s, %s", q.n, ok.n, f->oka.n);
        I("selp.b64 %s, %s, %s, %s", a.n, a.n, f->pa.n, q.n);
        I("selp.u32 %s, 16, 0, %s", sz.n, q.n);
        I("add.u32 %s, %s, %d", sa.n, sbuf.n, 8 * h * FM * 4);
        I("cp.async.cg.shared.global [%s], [%s], 16, %s", sa.n, a.n, sz.n);
        ws_ptx_comment(b, "B: X + ((n*T_in + u)*bp)*4 + column, u = %d*t + sh in [0, T_in)", f->S);
        I("mad.lo.s32 %s, %s, %d, %s", u.n, t.n, f->S, f->sh.n);
        I("and.pred %s, %s, %s", q.n, ok.n, f->okb.n);
        I("setp.lt.u32 %s, %s, %s", ok.n, u.n, f->Ti.n); /* unsigned: a negative u is out too */
        I("and.pred %s, %s, %s", q.n, q.n, ok.n);
        I("mul.wide.u32 %s, %s, %s", e.n, n.n, f->Ti.n);
        I("cvt.u64.u32 %s, %s", w.n, u.n);
        I("add.u64 %s, %s, %s", e.n, e.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, f->bp.n);
        I("mul.lo.u64 %s, %s, %s", e.n, e.n, w.n);
        I("mad.lo.u64 %s, %s, 4, %s", a.n, e.n, f->gb.n);
        I("selp.b64 %s, %s, %s, %s", a.n, a.n, f->pb.n, q.n);
        I("selp.u32 %s, 16, 0, %s", sz.n, q.n);
        I("add.u32 %s, %s, %d", sa.n, sbuf.n, FK * FM * 4 + 8 * h * FN * 4);
        I("cp.async.cg.shared.global [%s], [%s], 16, %s", sa.n, a.n, sz.n);
    }
}

/* the float32 weight gradient (ptx_hbwd.h, "_m") */
static void emit_fwg(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_FWG);
    const int Co = d->c_out, Ci = d->c_in, K = d->k;
    const int ot = (Co + FM - 1) / FM, jt = (Ci + FN - 1) / FN;
    fwg f = { .S = d->stride };
    ws_ptx_comment(b, "part[s][k][o][j] = sum over split s's (n, t) of G[n][t][o] X[n][%d*t + %d*k - %d][j]; tile "
                      "%d o x %d j, %d times a stage, %d stages, a thread 8 x 8", d->stride, d->dilation, d->pad_l,
                   FM, FN, FK, FS);
    ws_ptx_raw(b, "\t.shared .align 16 .b8 smem[%d];\n", FS * FSTAGE);
    preg ppart = ws_ptx_reg(b, PTX_B64), nn = ws_ptx_reg(b, PTX_B32), kts = ws_ptx_reg(b, PTX_B32);
    preg tid = ws_ptx_reg(b, PTX_B32), tx = ws_ptx_reg(b, PTX_B32), ty = ws_ptx_reg(b, PTX_B32);
    preg bx = ws_ptx_reg(b, PTX_B32), o0 = ws_ptx_reg(b, PTX_B32), j0 = ws_ptx_reg(b, PTX_B32);
    preg k = ws_ptx_reg(b, PTX_B32), s = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    preg tch = ws_ptx_reg(b, PTX_B32), e0 = ws_ptx_reg(b, PTX_B32), e1 = ws_ptx_reg(b, PTX_B32);
    preg lc = ws_ptx_reg(b, PTX_B32), lr = ws_ptx_reg(b, PTX_B32), w64 = ws_ptx_reg(b, PTX_B64);
    preg sm = ws_ptx_reg(b, PTX_B32), p = ws_ptx_reg(b, PTX_PRED), i = ws_ptx_reg(b, PTX_B32);
    preg rb = ws_ptx_reg(b, PTX_B32), wb = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32);
    preg t0 = ws_ptx_reg(b, PTX_B32), sbuf = ws_ptx_reg(b, PTX_B32), e = ws_ptx_reg(b, PTX_B32);
    f.ga = ws_ptx_reg(b, PTX_B64), f.gb = ws_ptx_reg(b, PTX_B64), f.pa = ws_ptx_reg(b, PTX_B64);
    f.pb = ws_ptx_reg(b, PTX_B64), f.oka = ws_ptx_reg(b, PTX_PRED), f.okb = ws_ptx_reg(b, PTX_PRED);
    f.To = ws_ptx_reg(b, PTX_B32), f.Ti = ws_ptx_reg(b, PTX_B32), f.ap = ws_ptx_reg(b, PTX_B32);
    f.bp = ws_ptx_reg(b, PTX_B32), f.sh = ws_ptx_reg(b, PTX_B32), f.so = ws_ptx_reg(b, PTX_B32);
    preg acc[8][8];
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++)
            acc[r][c] = ws_ptx_reg(b, PTX_F32);
    plabel top = ws_ptx_label_new(b, "stage"), done = ws_ptx_label_new(b, "sums_done");
    ws_ptx_ld_param(b, f.pa, pt, WS_FWG_A);
    ws_ptx_ld_param(b, f.pb, pt, WS_FWG_B);
    ws_ptx_ld_param(b, ppart, pt, WS_FWG_PART);
    ws_ptx_ld_param(b, nn, pt, WS_FWG_N);
    ws_ptx_ld_param(b, f.To, pt, WS_FWG_T_OUT);
    ws_ptx_ld_param(b, f.Ti, pt, WS_FWG_T_IN);
    ws_ptx_ld_param(b, f.ap, pt, WS_FWG_AP);
    ws_ptx_ld_param(b, f.bp, pt, WS_FWG_BP);
    ws_ptx_ld_param(b, kts, pt, WS_FWG_KTS);
    I("cvta.to.global.u64 %s, %s", f.pa.n, f.pa.n);
    I("cvta.to.global.u64 %s, %s", f.pb.n, f.pb.n);
    I("cvta.to.global.u64 %s, %s", ppart.n, ppart.n);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("and.b32 %s, %s, 15", tx.n, tid.n);
    I("shr.u32 %s, %s, 4", ty.n, tid.n);
    ws_ptx_comment(b, "block: ctaid.x = (k*%d + j0/%d)*%d + o0/%d, ctaid.y = s", jt, FN, ot, FM);
    I("mov.u32 %s, %%ctaid.x", bx.n);
    I("rem.u32 %s, %s, %d", o0.n, bx.n, ot);
    I("mul.lo.u32 %s, %s, %d", o0.n, o0.n, FM);
    I("div.u32 %s, %s, %d", bx.n, bx.n, ot);
    I("rem.u32 %s, %s, %d", j0.n, bx.n, jt);
    I("mul.lo.u32 %s, %s, %d", j0.n, j0.n, FN);
    I("div.u32 %s, %s, %d", k.n, bx.n, jt);
    I("mov.u32 %s, %%ctaid.y", s.n);
    I("mad.lo.s32 %s, %s, %d, %d", f.sh.n, k.n, d->dilation, -d->pad_l);
    ws_ptx_comment(b, "the split's stages e0 .. e1 - 1 of N * ceil(T_out / %d), e = n*tch + t0/%d", FK, FK);
    I("add.u32 %s, %s, %d", tch.n, f.To.n, FK - 1);
    I("shr.u32 %s, %s, %d", tch.n, tch.n, 4);
    I("mul.lo.u32 %s, %s, %s", tmp.n, nn.n, tch.n);
    I("mul.lo.u32 %s, %s, %s", e0.n, s.n, kts.n);
    I("add.u32 %s, %s, %s", e1.n, e0.n, kts.n);
    I("min.u32 %s, %s, %s", e1.n, e1.n, tmp.n);
    ws_ptx_comment(b, "copies: lr = tid / 32 (rows lr, lr + 8), lc = tid %% 32 (4 elements at 4*lc)");
    I("shr.u32 %s, %s, 5", lr.n, tid.n);
    I("and.b32 %s, %s, 31", lc.n, tid.n);
    I("shl.b32 %s, %s, 2", tmp.n, lc.n);
    I("add.u32 %s, %s, %s", tmp.n, tmp.n, o0.n);
    I("setp.lt.u32 %s, %s, %s", f.oka.n, tmp.n, f.ap.n);
    I("mad.wide.u32 %s, %s, 4, %s", f.ga.n, tmp.n, f.pa.n);
    I("shl.b32 %s, %s, 2", tmp.n, lc.n);
    I("add.u32 %s, %s, %s", tmp.n, tmp.n, j0.n);
    I("setp.lt.u32 %s, %s, %s", f.okb.n, tmp.n, f.bp.n);
    I("mad.wide.u32 %s, %s, 4, %s", f.gb.n, tmp.n, f.pb.n);
    I("mul.lo.u32 %s, %s, %d", f.so.n, lr.n, 4 * FM);
    I("mad.lo.u32 %s, %s, 16, %s", f.so.n, lc.n, f.so.n);
    I("mov.u32 %s, smem", sm.n);
    for (int r = 0; r < 8; r++)
        for (int c = 0; c < 8; c++)
            I("mov.f32 %s, 0f00000000", acc[r][c].n);
    ws_ptx_section(b, "prologue: stages e0, e0 + 1 into buffers 0, 1 (a group each, empty past e1)");
    for (int st = 0; st < FS - 1; st++) {
        plabel skip = ws_ptx_label_new(b, "pro_skip");
        I("add.u32 %s, %s, %d", e.n, e0.n, st);
        I("setp.ge.u32 %s, %s, %s", p.n, e.n, e1.n);
        I("@%s bra %s", p.n, skip.n);
        I("div.u32 %s, %s, %s", n.n, e.n, tch.n);
        I("mul.lo.u32 %s, %s, %s", t0.n, n.n, tch.n);
        I("sub.u32 %s, %s, %s", t0.n, e.n, t0.n);
        I("shl.b32 %s, %s, %d", t0.n, t0.n, 4);
        I("add.u32 %s, %s, %s", t0.n, t0.n, lr.n);
        I("add.u32 %s, %s, %d", sbuf.n, sm.n, st * FSTAGE);
        I("add.u32 %s, %s, %s", sbuf.n, sbuf.n, f.so.n);
        fwg_load(b, &f, n, t0, sbuf);
        ws_ptx_label(b, skip);
        I("cp.async.commit_group");
    }
    I("mov.u32 %s, %s", i.n, e0.n);
    I("mov.u32 %s, 0", rb.n);
    I("mov.u32 %s, %d", wb.n, FS - 1);
    ws_ptx_section(b, "stage i: wait for it, start stage i + 2, multiply stage i");
    ws_ptx_label(b, top);
    I("setp.ge.u32 %s, %s, %s", p.n, i.n, e1.n);
    I("@%s bra %s", p.n, done.n);
    I("cp.async.wait_group %d", FS - 2);
    I("bar.sync 0");
    {
        plabel skip = ws_ptx_label_new(b, "ld_skip");
        I("add.u32 %s, %s, %d", e.n, i.n, FS - 1);
        I("setp.ge.u32 %s, %s, %s", p.n, e.n, e1.n);
        I("@%s bra %s", p.n, skip.n);
        I("div.u32 %s, %s, %s", n.n, e.n, tch.n);
        I("mul.lo.u32 %s, %s, %s", t0.n, n.n, tch.n);
        I("sub.u32 %s, %s, %s", t0.n, e.n, t0.n);
        I("shl.b32 %s, %s, %d", t0.n, t0.n, 4);
        I("add.u32 %s, %s, %s", t0.n, t0.n, lr.n);
        I("mad.lo.u32 %s, %s, %d, %s", sbuf.n, wb.n, FSTAGE, sm.n);
        I("add.u32 %s, %s, %s", sbuf.n, sbuf.n, f.so.n);
        fwg_load(b, &f, n, t0, sbuf);
        ws_ptx_label(b, skip);
        I("cp.async.commit_group");
    }
    ws_ptx_comment(b, "acc[r][c] += A[kk][o_r] * B[kk][j_c]: o_r = 4ty + r (r < 4), 64 + 4ty + r - 4; j_c the same "
                      "with tx");
    {
        preg as = ws_ptx_reg(b, PTX_B32), bs = ws_ptx_reg(b, PTX_B32);
        I("mad.lo.u32 %s, %s, %d, %s", as.n, rb.n, FSTAGE, sm.n);
        I("mad.lo.u32 %s, %s, 16, %s", bs.n, tx.n, as.n);
        I("add.u32 %s, %s, %d", bs.n, bs.n, FK * FM * 4);
        I("mad.lo.u32 %s, %s, 16, %s", as.n, ty.n, as.n);
        preg av[8], bv[8];
        for (int q = 0; q < 8; q++)
            av[q] = ws_ptx_reg(b, PTX_F32), bv[q] = ws_ptx_reg(b, PTX_F32);
        for (int kk = 0; kk < FK; kk++) {
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", av[0].n, av[1].n, av[2].n, av[3].n, as.n, kk * FM * 4);
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", av[4].n, av[5].n, av[6].n, av[7].n, as.n,
              kk * FM * 4 + FM * 2);
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", bv[0].n, bv[1].n, bv[2].n, bv[3].n, bs.n, kk * FN * 4);
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", bv[4].n, bv[5].n, bv[6].n, bv[7].n, bs.n,
              kk * FN * 4 + FN * 2);
            for (int r = 0; r < 8; r++)
                for (int c = 0; c < 8; c++)
                    I("fma.rn.f32 %s, %s, %s, %s", acc[r][c].n, av[r].n, bv[c].n, acc[r][c].n);
        }
    }
    I("add.u32 %s, %s, 1", i.n, i.n);
    I("add.u32 %s, %s, 1", rb.n, rb.n);
    I("setp.eq.u32 %s, %s, %d", p.n, rb.n, FS);
    I("@%s mov.u32 %s, 0", p.n, rb.n);
    I("add.u32 %s, %s, 1", wb.n, wb.n);
    I("setp.eq.u32 %s, %s, %d", p.n, wb.n, FS);
    I("@%s mov.u32 %s, 0", p.n, wb.n);
    I("bra %s", top.n);
    ws_ptx_label(b, done);
    I("cp.async.wait_group 0");
    ws_ptx_section(b, "out: part[((s*K + k)*C_out + o)*C_in + j], o < C_out, j < C_in");
    {
        preg base = ws_ptx_reg(b, PTX_B32), o = ws_ptx_reg(b, PTX_B32), j = ws_ptx_reg(b, PTX_B32);
        preg po = ws_ptx_reg(b, PTX_PRED), pj = ws_ptx_reg(b, PTX_PRED), q = ws_ptx_reg(b, PTX_PRED);
        preg a = ws_ptx_reg(b, PTX_B64), ix = ws_ptx_reg(b, PTX_B64);
        I("mad.lo.u32 %s, %s, %d, %s", base.n, s.n, K, k.n);
        for (int r = 0; r < 8; r++) {
            I("mad.lo.u32 %s, %s, 4, %s", o.n, ty.n, o0.n);
            I("add.u32 %s, %s, %d", o.n, o.n, (r < 4 ? r : FM / 2 + r - 4));
            I("setp.lt.u32 %s, %s, %d", po.n, o.n, Co);
            I("mad.lo.u32 %s, %s, %d, %s", tmp.n, base.n, Co, o.n); /* (s*K + k)*C_out + o */
            for (int h = 0; h < 2; h++) {
                I("mad.lo.u32 %s, %s, 4, %s", j.n, tx.n, j0.n);
                if (h)
                    I("add.u32 %s, %s, %d", j.n, j.n, FN / 2);
                I("mul.wide.u32 %s, %s, %d", ix.n, tmp.n, Ci);
                I("cvt.u64.u32 %s, %s", w64.n, j.n);
                I("add.u64 %s, %s, %s", ix.n, ix.n, w64.n);
                I("mad.lo.u64 %s, %s, 4, %s", a.n, ix.n, ppart.n);
                if (Ci % 4 == 0) {
                    I("setp.lt.u32 %s, %s, %d", pj.n, j.n, Ci);
                    I("and.pred %s, %s, %s", q.n, po.n, pj.n);
                    I("@%s st.global.v4.f32 [%s], {%s, %s, %s, %s}", q.n, a.n, acc[r][4 * h].n, acc[r][4 * h + 1].n,
                      acc[r][4 * h + 2].n, acc[r][4 * h + 3].n);
                } else {
                    for (int c = 0; c < 4 && c < Ci; c++) { /* j + c < C_in: j < C_in - c > 0 */
                        I("setp.lt.u32 %s, %s, %d", pj.n, j.n, Ci - c);
                        I("and.pred %s, %s, %s", q.n, po.n, pj.n);
                        I("@%s st.global.f32 [%s+%d], %s", q.n, a.n, 4 * c, acc[r][4 * h + c].n);
                    }
                }
            }
        }
    }
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 2, 0);
}

#define FIN_PAIRS WS_GBWD_FIN_PAIRS

/* dw[o][j][k] = sum over s < p_splits, in order, of part[s][k][o][j]. A block: FIN_PAIRS
 * consecutive i = o*C_in + j and their K taps; the sums (read along i) go to shared memory,
 * then out along dw's own order, so reads and writes are both contiguous */
static void emit_finish(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_GBF);
    const int Ci = d->c_in, Co = d->c_out, K = d->k;
    const long long total = (long long)Co * Ci;
    ws_ptx_comment(b, "dw[o][j][k] = part[0][k][o][j] + part[1][k][o][j] + ...: a block %d (o, j), %d taps",
                   FIN_PAIRS, K);
    ws_ptx_raw(b, "\t.shared .align 4 .b8 fin[%d];\n", FIN_PAIRS * K * 4);
    preg pp = ws_ptx_reg(b, PTX_B64), pd = ws_ptx_reg(b, PTX_B64), ns = ws_ptx_reg(b, PTX_B32);
    preg i0 = ws_ptx_reg(b, PTX_B32), tid = ws_ptx_reg(b, PTX_B32), it = ws_ptx_reg(b, PTX_B32);
    preg p = ws_ptx_reg(b, PTX_PRED), a = ws_ptx_reg(b, PTX_B64), acc = ws_ptx_reg(b, PTX_F32);
    preg v = ws_ptx_reg(b, PTX_F32), s = ws_ptx_reg(b, PTX_B32), step = ws_ptx_reg(b, PTX_B64);
    preg sb = ws_ptx_reg(b, PTX_B32), jj = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32);
    preg i = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), in = ws_ptx_reg(b, PTX_PRED);
    plabel l1 = ws_ptx_label_new(b, "sums"), l1e = ws_ptx_label_new(b, "sums_done");
    plabel ls = ws_ptx_label_new(b, "split"), l2 = ws_ptx_label_new(b, "out"), l2e = ws_ptx_label_new(b, "out_done");
    plabel skip = ws_ptx_label_new(b, "skip");
    ws_ptx_ld_param(b, pp, pt, WS_GBF_PART);
    ws_ptx_ld_param(b, pd, pt, WS_GBF_DW);
    ws_ptx_ld_param(b, ns, pt, WS_GBF_SPLITS);
    I("cvta.to.global.u64 %s, %s", pp.n, pp.n);
    I("cvta.to.global.u64 %s, %s", pd.n, pd.n);
    I("mov.u32 %s, %%ctaid.x", i0.n);
    I("mul.lo.u32 %s, %s, %d", i0.n, i0.n, FIN_PAIRS);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mov.u32 %s, fin", sb.n);
    I("mov.u64 %s, %lld", step.n, 4LL * K * Co * Ci);
    ws_ptx_section(b, "sums: item it = k*FIN_PAIRS + jj, i = i0 + jj; fin[jj*K + k]");
    I("mov.u32 %s, %s", it.n, tid.n);
    ws_ptx_label(b, l1);
    I("setp.ge.u32 %s, %s, %d", p.n, it.n, FIN_PAIRS * K);
    I("@%s bra %s", p.n, l1e.n);
    I("rem.u32 %s, %s, %d", jj.n, it.n, FIN_PAIRS);
    I("div.u32 %s, %s, %d", k.n, it.n, FIN_PAIRS);
    I("add.u32 %s, %s, %s", i.n, i0.n, jj.n);
    I("setp.lt.u32 %s, %s, %lld", in.n, i.n, total);
    I("mov.f32 %s, 0f00000000", acc.n);
    I("@!%s bra %s", in.n, skip.n);
    ws_ptx_comment(b, "part + (k*C_out*C_in + i), a split %lld further", (long long)K * Co * Ci);
    I("mad.lo.u32 %s, %s, %lld, %s", sa.n, k.n, total, i.n);
    I("mad.wide.u32 %s, %s, 4, %s", a.n, sa.n, pp.n);
    I("mov.u32 %s, 0", s.n);
    ws_ptx_label(b, ls);
    I("ld.global.nc.f32 %s, [%s]", v.n, a.n);
    I("add.rn.f32 %s, %s, %s", acc.n, acc.n, v.n);
    I("add.u64 %s, %s, %s", a.n, a.n, step.n);
    I("add.u32 %s, %s, 1", s.n, s.n);
    I("setp.lt.u32 %s, %s, %s", p.n, s.n, ns.n);
    I("@%s bra %s", p.n, ls.n);
    ws_ptx_label(b, skip);
    I("mad.lo.u32 %s, %s, %d, %s", sa.n, jj.n, K, k.n);
    I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
    I("st.shared.f32 [%s], %s", sa.n, acc.n);
    I("add.u32 %s, %s, %d", it.n, it.n, TH);
    I("bra %s", l1.n);
    ws_ptx_label(b, l1e);
    I("bar.sync 0");
    ws_ptx_section(b, "out: dw[i0*K + it] = fin[it], it < FIN_PAIRS*K, i0 + it/K < C_out*C_in");
    I("mov.u32 %s, %s", it.n, tid.n);
    ws_ptx_label(b, l2);
    I("setp.ge.u32 %s, %s, %d", p.n, it.n, FIN_PAIRS * K);
    I("@%s bra %s", p.n, l2e.n);
    I("div.u32 %s, %s, %d", jj.n, it.n, K);
    I("add.u32 %s, %s, %s", i.n, i0.n, jj.n);
    I("setp.lt.u32 %s, %s, %lld", in.n, i.n, total);
    I("mad.lo.u32 %s, %s, 4, %s", sa.n, it.n, sb.n);
    I("ld.shared.f32 %s, [%s]", v.n, sa.n);
    I("mad.lo.u32 %s, %s, %d, %s", sa.n, i0.n, K, it.n);
    I("mad.wide.u32 %s, %s, 4, %s", a.n, sa.n, pd.n);
    I("@%s st.global.f32 [%s], %s", in.n, a.n, v.n);
    I("add.u32 %s, %s, %d", it.n, it.n, TH);
    I("bra %s", l2.n);
    ws_ptx_label(b, l2e);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 0, 0);
}

#define DB_ILP 8 /* loads a db thread has in flight */
#define DB_ROW_T 2048 /* NCL g with rows of at least this many times: summed row by row */

/* db[o] = the sum of g[n, o, t] over e = n*T_out + t: thread i the e = i, i + TH, ... (DB_ILP
 * loads issued, then added in order), then a tree of fixed shape in shared memory; block o.
 * NCL g with T_out >= DB_ROW_T: thread i the t = i, i + TH, ... of row n = 0, 1, ... in turn,
 * so that no element costs a division (the order fixed by the shape all the same) */
static void emit_db(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_BWD_DB);
    const ws_layout L = g_layout(d);
    const ws_dtype t = g_type(d);
    const int Co = d->c_out;
    ws_ptx_comment(b, "db[o] = sum_n sum_t g[n, o, t], g %s %s: a block an o, a fixed tree",
                   L == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(t));
    ws_ptx_raw(b, "\t.shared .align 4 .b8 red[%d];\n", TH * 4);
    preg pg = ws_ptx_reg(b, PTX_B64), pdb = ws_ptx_reg(b, PTX_B64), nn = ws_ptx_reg(b, PTX_B32);
    preg T = ws_ptx_reg(b, PTX_B32), o = ws_ptx_reg(b, PTX_B32), tid = ws_ptx_reg(b, PTX_B32);
    preg tot = ws_ptx_reg(b, PTX_B32), e0 = ws_ptx_reg(b, PTX_B32), acc = ws_ptx_reg(b, PTX_F32);
    preg p = ws_ptx_reg(b, PTX_PRED), a = ws_ptx_reg(b, PTX_B64), sa = ws_ptx_reg(b, PTX_B32);
    plabel top = ws_ptx_label_new(b, "elems"), sum = ws_ptx_label_new(b, "tree");
    ws_ptx_ld_param(b, pg, pt, WS_BDB_GZ);
    ws_ptx_ld_param(b, pdb, pt, WS_BDB_DB);
    ws_ptx_ld_param(b, nn, pt, WS_BDB_N);
    ws_ptx_ld_param(b, T, pt, WS_BDB_T_OUT);
    I("cvta.to.global.u64 %s, %s", pg.n, pg.n);
    I("cvta.to.global.u64 %s, %s", pdb.n, pdb.n);
    I("mov.u32 %s, %%ctaid.x", o.n);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("mul.lo.u32 %s, %s, %s", tot.n, nn.n, T.n);
    I("mov.f32 %s, 0f00000000", acc.n);
    I("mov.u32 %s, %s", e0.n, tid.n);
    I("setp.ge.u32 %s, %s, %s", p.n, e0.n, tot.n);
    I("@%s bra %s", p.n, sum.n);
    if (L == WS_NCL) {
        /* rows of at least DB_ROW_T times: row by row, thread i the t = i, i + TH, ... of each
         * row n in turn (no division an element; the order is still fixed by the shape) */
        plabel flat = ws_ptx_label_new(b, "flat"), rown = ws_ptx_label_new(b, "row");
        plabel rowt = ws_ptx_label_new(b, "row_t"), rowe = ws_ptx_label_new(b, "row_done");
        preg n = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B64);
        preg w = ws_ptx_reg(b, PTX_B64);
        I("setp.lt.u32 %s, %s, %d", p.n, T.n, DB_ROW_T);
        I("@%s bra %s", p.n, flat.n);
        I("mov.u32 %s, 0", n.n);
        ws_ptx_label(b, rown);
        ws_ptx_comment(b, "row base g + ((n*C_out + o)*T)*es");
        I("mad.wide.u32 %s, %s, %d, 0", rb.n, n.n, Co);
        I("cvt.u64.u32 %s, %s", w.n, o.n);
        I("add.u64 %s, %s, %s", rb.n, rb.n, w.n);
        I("cvt.u64.u32 %s, %s", w.n, T.n);
        I("mul.lo.u64 %s, %s, %s", rb.n, rb.n, w.n);
        I("mad.lo.u64 %s, %s, %d, %s", rb.n, rb.n, t == WS_F32 ? 4 : 2, pg.n);
        I("mov.u32 %s, %s", t0.n, tid.n);
        ws_ptx_label(b, rowt);
        I("setp.ge.u32 %s, %s, %s", p.n, t0.n, T.n);
        I("@%s bra %s", p.n, rowe.n);
        preg rv[DB_ILP];
        for (int u = 0; u < DB_ILP; u++) {
            preg tt = ws_ptx_reg(b, PTX_B32), in = ws_ptx_reg(b, PTX_PRED), ra = ws_ptx_reg(b, PTX_B64);
            rv[u] = ws_ptx_reg(b, PTX_F32);
            I("add.u32 %s, %s, %d", tt.n, t0.n, TH * u);
            I("setp.lt.u32 %s, %s, %s", in.n, tt.n, T.n);
            I("mad.wide.u32 %s, %s, %d, %s", ra.n, tt.n, t == WS_F32 ? 4 : 2, rb.n);
            ws_ptx_load_pred(b, rv[u], ra, in, t);
        }
        for (int u = 0; u < DB_ILP; u++)
            I("add.rn.f32 %s, %s, %s", acc.n, acc.n, rv[u].n);
        I("add.u32 %s, %s, %d", t0.n, t0.n, TH * DB_ILP);
        I("bra %s", rowt.n);
        ws_ptx_label(b, rowe);
        I("add.u32 %s, %s, 1", n.n, n.n);
        I("setp.lt.u32 %s, %s, %s", p.n, n.n, nn.n);
        I("@%s bra %s", p.n, rown.n);
        I("bra %s", sum.n);
        ws_ptx_label(b, flat);
    }
    ws_ptx_label(b, top);
    preg v[DB_ILP];
    for (int u = 0; u < DB_ILP; u++) {
        preg e = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), tt = ws_ptx_reg(b, PTX_B32);
        preg ix = ws_ptx_reg(b, PTX_B64), w = ws_ptx_reg(b, PTX_B64), in = ws_ptx_reg(b, PTX_PRED);
        v[u] = ws_ptx_reg(b, PTX_F32);
        I("add.u32 %s, %s, %d", e.n, e0.n, TH * u);
        I("setp.lt.u32 %s, %s, %s", in.n, e.n, tot.n);
        I("min.u32 %s, %s, %s", e.n, e.n, tot.n);
        I("div.u32 %s, %s, %s", n.n, e.n, T.n);
        I("rem.u32 %s, %s, %s", tt.n, e.n, T.n);
        if (L == WS_NCL) { /* (n*C_out + o)*T + t */
            I("mad.wide.u32 %s, %s, %d, 0", ix.n, n.n, Co);
            I("cvt.u64.u32 %s, %s", w.n, o.n);
            I("add.u64 %s, %s, %s", ix.n, ix.n, w.n);
            I("cvt.u64.u32 %s, %s", w.n, T.n);
            I("mul.lo.u64 %s, %s, %s", ix.n, ix.n, w.n);
            I("cvt.u64.u32 %s, %s", w.n, tt.n);
            I("add.u64 %s, %s, %s", ix.n, ix.n, w.n);
        } else { /* e*C_out + o */
            I("mul.wide.u32 %s, %s, %d", ix.n, e.n, Co);
            I("cvt.u64.u32 %s, %s", w.n, o.n);
            I("add.u64 %s, %s, %s", ix.n, ix.n, w.n);
        }
        I("mad.lo.u64 %s, %s, %d, %s", a.n, ix.n, t == WS_F32 ? 4 : 2, pg.n);
        ws_ptx_load_pred(b, v[u], a, in, t);
    }
    ws_ptx_comment(b, "added in the order of e");
    for (int u = 0; u < DB_ILP; u++)
        I("add.rn.f32 %s, %s, %s", acc.n, acc.n, v[u].n);
    I("add.u32 %s, %s, %d", e0.n, e0.n, TH * DB_ILP);
    I("setp.lt.u32 %s, %s, %s", p.n, e0.n, tot.n);
    I("@%s bra %s", p.n, top.n);
    ws_ptx_label(b, sum);
    I("mov.u32 %s, red", sa.n);
    I("mad.lo.u32 %s, %s, 4, %s", sa.n, tid.n, sa.n);
    I("st.shared.f32 [%s], %s", sa.n, acc.n);
    for (int h = TH / 2; h >= 1; h /= 2) {
        preg q = ws_ptx_reg(b, PTX_PRED), u = ws_ptx_reg(b, PTX_F32);
        I("bar.sync 0");
        I("setp.lt.u32 %s, %s, %d", q.n, tid.n, h);
        I("@%s ld.shared.f32 %s, [%s+%d]", q.n, u.n, sa.n, 4 * h);
        I("@%s add.rn.f32 %s, %s, %s", q.n, acc.n, acc.n, u.n);
        I("@%s st.shared.f32 [%s], %s", q.n, sa.n, acc.n);
    }
    I("setp.eq.u32 %s, %s, 0", p.n, tid.n);
    I("mad.wide.u32 %s, %s, 4, %s", a.n, o.n, pdb.n);
    I("@%s st.global.f32 [%s], %s", p.n, a.n, acc.n);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, TH, 0, 0);
}

char *ws_gbwd_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_GBWD_NAME_MAX], en[WS_GBWD_NAME_MAX + 4];
    ws_gbwd_name(d, name);
    ws_gbwd_dx x;
    const int has_dx = ws_gbwd_dx_of(d, &x);
    if (d->op != WS_CONV_BWD || d->groups != 1 || d->pre != WS_ACT_NONE) {
        ws_errf(err, "ws_gbwd_emit(%s): not a dense backward descriptor", name);
        return NULL;
    }
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin(&mod, cc_major, cc_minor, "whisper-stem conv engine: dense backward GEMM passes");
    if (has_dx) {
        snprintf(en, sizeof en, "%s_t", name);
        emit_tile(&mod, d, en, d->c_in * d->k, 1, WS_NLC, WS_F32, NULL, WS_F32, 0);
        snprintf(en, sizeof en, "%s_w", name);
        emit_wx(&mod, d, &x, en, 0);
        if (ws_gemm_packs(&x.sub)) {
            snprintf(en, sizeof en, "%s_p", name);
            emit_wx(&mod, d, &x, en, 1);
        }
        if (x.phases > 1) {
            snprintf(en, sizeof en, "%s_u", name);
            emit_unstage(&mod, d, en);
        }
    }
    if (!ws_gbwd_has_dw(d))
        goto done;
    snprintf(en, sizeof en, "%s_g", name);
    if (ws_gbwd_ffma_dw_cc(d, cc_major, cc_minor)) {
        emit_rows(&mod, en, d->c_out, g_layout(d), g_type(d));
        snprintf(en, sizeof en, "%s_x", name);
        emit_rows(&mod, en, d->c_in, d->x_layout, d->x_type);
        snprintf(en, sizeof en, "%s_m", name);
        emit_fwg(&mod, d, en);
    } else {
        if (ws_gbwd_g_rows(d)) /* time-major already: rows gathered, no transpose */
            emit_rowgather(&mod, d, en, d->c_out, 1, g_type(d), NULL, ws_gbwd_math_type(d));
        else
            emit_tile(&mod, d, en, d->c_out, 1, g_layout(d), g_type(d), NULL, ws_gbwd_math_type(d), 1);
        snprintf(en, sizeof en, "%s_x", name);
        ws_gbwd_cls cl;
        ws_hgemm_wgrad_classes(d, &cl);
        if (ws_gbwd_x_rows(d))
            emit_rowgather(&mod, d, en, d->c_in, d->stride, d->x_type, &cl, ws_gbwd_math_type(d));
        else
            emit_tile(&mod, d, en, d->c_in, d->stride, d->x_layout, d->x_type, &cl, ws_gbwd_math_type(d), 1);
    }
    snprintf(en, sizeof en, "%s_f", name);
    emit_finish(&mod, d, en);
    snprintf(en, sizeof en, "%s_b", name);
    emit_db(&mod, d, en);
done:;
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_gbwd_emit(%s): %s", name, why);
    return text;
}

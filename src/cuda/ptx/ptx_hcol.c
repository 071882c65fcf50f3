/* ptx_hcol.c - the columns of short dense convs for the Hopper GEMM (ptx_hcol.h). Emission is a
 * pure function of the descriptor. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_act.h"
#include "ptx_emit.h"
#include "ptx_gemm.h"
#include "ptx_hcol.h"
#include "ptx_hgemm.h"
#include "ptx_params.h"
#include "ptx_wprep.h"

#define I(...) ws_ptx_ins(b, __VA_ARGS__)

int ws_hcol_pad(const ws_conv_desc *d)
{
    return (long long)d->c_in * d->k > WS_HCOL_R_MAX;
}

int ws_hcol_fits(const ws_conv_desc *d, int cc_major, int cc_minor)
{
    if (!(WS_HGEMM && cc_major == 9 && cc_minor == 0 && d->op == WS_CONV_FWD && d->groups == 1 && ws_gemm_mma(d) &&
          d->c_in % 16 != 0 && d->c_out >= WS_HGEMM_MIN_COUT && d->stride <= 8))
        return 0;
    /* the taps' reach in the kernels' 32-bit immediates */
    if ((long long)d->dilation * (d->k - 1) + d->pad_l > INT_MAX / 2)
        return 0;
    if (!ws_hcol_pad(d))
        return 1;
    if (d->c_in > WS_HCOL_C_MAX) /* "_col" loads a time's channels one by one, unrolled */
        return 0;
    /* padded channels: where the Hopper GEMM would take the padded conv itself (at least 3
     * stages), and for TF32 with NCL x on ws_hgemm_fits' terms (6 stages, C_out over 64: the
     * 4-byte staging costs more than the kernel saves below that) */
    ws_conv_desc in;
    ws_hcol_inner(d, &in);
    const long long kt = (long long)in.k * ((in.c_in + ws_hgemm_bkc(&in) - 1) / ws_hgemm_bkc(&in));
    return ws_hgemm_fits(&in, 9, 0) && !(d->math == WS_MATH_TF32 && d->x_layout == WS_NCL && (kt < 6 || d->c_out <= 64));
}

int ws_hcol_rp(const ws_conv_desc *d)
{
    const long long r = ((long long)d->c_in * d->k + 15) / 16 * 16;
    return r < INT_MAX ? (int)r : INT_MAX; /* meant for the columns (C_in * K <= WS_HCOL_R_MAX) */
}

int ws_hcol_cp(const ws_conv_desc *d)
{
    return (d->c_in + 15) / 16 * 16;
}

static ws_dtype math_type(const ws_conv_desc *d)
{
    return d->math == WS_MATH_BF16 ? WS_BF16 : d->math == WS_MATH_F16 ? WS_F16 : WS_F32;
}

void ws_hcol_inner(const ws_conv_desc *d, ws_conv_desc *in)
{
    *in = *d;
    if (ws_hcol_pad(d)) {
        in->c_in = ws_hcol_cp(d);
    } else {
        in->c_in = ws_hcol_rp(d);
        in->k = 1, in->stride = 1, in->dilation = 1, in->pad_l = in->pad_r = 0;
    }
    in->x_layout = WS_NLC;
    in->x_type = math_type(d);
    in->pre = WS_ACT_NONE;
}

void ws_hcol_weights(const ws_conv_desc *d, const float *w, float *out)
{
    const size_t C = (size_t)d->c_in, K = (size_t)d->k, R = C * K, CP = (size_t)ws_hcol_cp(d);
    for (size_t o = 0; o < (size_t)d->c_out; o++) {
        if (ws_hcol_pad(d)) { /* [C_out][CP][K] */
            for (size_t c = 0; c < CP; c++)
                for (size_t k = 0; k < K; k++)
                    out[(o * CP + c) * K + k] = c < C ? w[(o * C + c) * K + k] : 0.0f;
        } else { /* [C_out][RP] */
            const size_t RP = (size_t)ws_hcol_rp(d);
            for (size_t r = 0; r < RP; r++)
                out[o * RP + r] = r < R ? w[o * R + r] : 0.0f;
        }
    }
}

void ws_hcol_name(const ws_conv_desc *d, char name[WS_HCOL_NAME_MAX])
{
    snprintf(name, WS_HCOL_NAME_MAX, "ws_hcol_%s_c%d_k%d_s%d_d%d_p%d_%s_%s_w%s_%s",
             d->math == WS_MATH_BF16 ? "bf16" : d->math == WS_MATH_F16 ? "f16" : "tf32", d->c_in, d->k,
             d->stride, d->dilation, d->pad_l, d->x_layout == WS_NCL ? "ncl" : "nlc",
             ws_ptx_type_name(d->x_type), ws_ptx_type_name(d->w_type), ws_ptx_act_name(d->pre));
}

/* one 16-byte group of a row of Xc / Xp: v[0..] (8 float32 of 16-bit math, 4 of TF32), of which
 * the first `real` are values and the rest zeros, rounded to the math type (TF32: cvt.rna) and
 * packed (16-bit: element 2i in the low half), stored at dst + off */
static void emit_group_store(ptx_buf *b, const ws_conv_desc *d, const preg *v, int real, preg dst, int off)
{
    const int tf32 = d->math == WS_MATH_TF32;
    preg w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = ws_ptx_reg(b, PTX_B32);
        if (tf32 && i < real)
            I("cvt.rna.tf32.f32 %s, %s", w[i].n, v[i].n);
        else if (!tf32 && 2 * i < real)
            I("cvt.rn.%s.f32 %s, %s, %s", d->math == WS_MATH_BF16 ? "bf16x2" : "f16x2", w[i].n, v[2 * i + 1].n,
              v[2 * i].n);
        else
            I("mov.b32 %s, 0", w[i].n);
    }
    I("st.global.v4.b32 [%s+%d], {%s, %s, %s, %s}", dst.n, off, w[0].n, w[1].n, w[2].n, w[3].n);
}

/* "_col" of padded channels: Xp[n][t][c] (PADDED CHANNELS), a thread a time of x */
static void emit_pad(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_HCOL);
    const int C = d->c_in, CP = ws_hcol_cp(d), ncl = d->x_layout == WS_NCL;
    const int xs = d->x_type == WS_F32 ? 4 : 2, tf32 = d->math == WS_MATH_TF32, es = tf32 ? 4 : 2;
    const int V = 16 / es; /* elements a 16-byte store */
    ws_ptx_comment(b, "Xp[n][t][c] = %s(pre(x[n, c, t])), c < %d, zero to %d; x %s %s, pre %s; a thread a time",
                   tf32 ? "tf32" : d->math == WS_MATH_BF16 ? "bf16" : "f16", C, CP, ncl ? "NCL" : "NLC",
                   ws_ptx_type_name(d->x_type), ws_ptx_act_name(d->pre));
    preg px = ws_ptx_reg(b, PTX_B64), pxc = ws_ptx_reg(b, PTX_B64), tin = ws_ptx_reg(b, PTX_B32);
    preg t = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), r32 = ws_ptx_reg(b, PTX_B32);
    preg out = ws_ptx_reg(b, PTX_PRED), in = ws_ptx_reg(b, PTX_PRED), xn = ws_ptx_reg(b, PTX_B64);
    preg dst = ws_ptx_reg(b, PTX_B64), e = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ld_param(b, px, pt, WS_HC_X);
    ws_ptx_ld_param(b, pxc, pt, WS_HC_XC);
    ws_ptx_ld_param(b, tin, pt, WS_HC_T_IN);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", pxc.n, pxc.n);
    I("mov.u32 %s, %%ctaid.x", t.n);
    I("mov.u32 %s, %%tid.x", r32.n);
    I("mad.lo.u32 %s, %s, %d, %s", t.n, t.n, WS_HCOL_THREADS, r32.n);
    I("setp.ge.u32 %s, %s, %s", out.n, t.n, tin.n);
    I("@%s bra %s", out.n, done.n);
    I("setp.lt.u32 %s, %s, %s", in.n, t.n, tin.n);
    I("mov.u32 %s, %%ctaid.y", n.n);
    ws_ptx_comment(b, "the item's x: n * C_in * T_in elements on; its row of Xp: (n * T_in + t) * CP");
    I("mul.wide.u32 %s, %s, %s", e.n, n.n, tin.n);
    I("mul.lo.u64 %s, %s, %d", e.n, e.n, C * xs);
    I("add.u64 %s, %s, %s", xn.n, px.n, e.n);
    I("mul.wide.u32 %s, %s, %s", e.n, n.n, tin.n);
    I("cvt.u64.u32 %s, %s", dst.n, t.n);
    I("add.u64 %s, %s, %s", e.n, e.n, dst.n);
    I("mad.lo.u64 %s, %s, %d, %s", dst.n, e.n, CP * es, pxc.n);
    for (int g = 0; g < CP / V; g++) {
        preg v[8];
        for (int i = 0; i < V; i++) {
            const int c = g * V + i;
            v[i] = ws_ptx_reg(b, PTX_F32);
            if (c >= C) {
                I("mov.f32 %s, 0f00000000", v[i].n);
                continue;
            }
            preg a = ws_ptx_reg(b, PTX_B64), ix = ws_ptx_reg(b, PTX_B64);
            if (ncl) { /* x[n, c, t]: c*T_in + t */
                I("mul.wide.u32 %s, %s, %d", ix.n, tin.n, c * xs);
                I("mad.wide.u32 %s, %s, %d, %s", ix.n, t.n, xs, ix.n);
            } else { /* x[n, t, c]: t*C_in + c */
                I("mul.wide.u32 %s, %s, %d", ix.n, t.n, C * xs);
                I("add.u64 %s, %s, %d", ix.n, ix.n, c * xs);
            }
            I("add.u64 %s, %s, %s", a.n, xn.n, ix.n);
            ws_ptx_load_pred(b, v[i], a, in, d->x_type);
            ws_ptx_act(b, v[i], d->pre);
        }
        emit_group_store(b, d, v, C - g * V, dst, 16 * g);
    }
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, WS_HCOL_THREADS, 0, 0);
}

/* "_col": Xc[n][t][r] (THE COLUMNS), a thread a position */
static void emit_col(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_HCOL);
    const int C = d->c_in, K = d->k, R = C * K, RP = ws_hcol_rp(d), ncl = d->x_layout == WS_NCL;
    const int xs = d->x_type == WS_F32 ? 4 : 2, tf32 = d->math == WS_MATH_TF32, es = tf32 ? 4 : 2;
    const int V = 16 / es; /* elements a 16-byte store */
    ws_ptx_comment(b, "Xc[n][t][r] = %s(pre(x[n, j, %d*t + %d*k - %d])), r = j*%d + k < %d, zero to %d; "
                      "x %s %s, pre %s; a thread a position",
                   tf32 ? "tf32" : d->math == WS_MATH_BF16 ? "bf16" : "f16", d->stride, d->dilation, d->pad_l, K,
                   R, RP, ncl ? "NCL" : "NLC", ws_ptx_type_name(d->x_type), ws_ptx_act_name(d->pre));
    preg px = ws_ptx_reg(b, PTX_B64), pxc = ws_ptx_reg(b, PTX_B64), tin = ws_ptx_reg(b, PTX_B32);
    preg tout = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32);
    preg r32 = ws_ptx_reg(b, PTX_B32), out = ws_ptx_reg(b, PTX_PRED), xn = ws_ptx_reg(b, PTX_B64);
    preg dst = ws_ptx_reg(b, PTX_B64), u0 = ws_ptx_reg(b, PTX_B32), e = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ld_param(b, px, pt, WS_HC_X);
    ws_ptx_ld_param(b, pxc, pt, WS_HC_XC);
    ws_ptx_ld_param(b, tin, pt, WS_HC_T_IN);
    ws_ptx_ld_param(b, tout, pt, WS_HC_T_OUT);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", pxc.n, pxc.n);
    I("mov.u32 %s, %%ctaid.x", t.n);
    I("mov.u32 %s, %%tid.x", r32.n);
    I("mad.lo.u32 %s, %s, %d, %s", t.n, t.n, WS_HCOL_THREADS, r32.n);
    I("setp.ge.u32 %s, %s, %s", out.n, t.n, tout.n);
    I("@%s bra %s", out.n, done.n);
    I("mov.u32 %s, %%ctaid.y", n.n);
    ws_ptx_comment(b, "the item's x: n * C_in * T_in elements on; its column row: (n * T_out + t) * RP");
    I("mul.wide.u32 %s, %s, %s", e.n, n.n, tin.n);
    I("mul.lo.u64 %s, %s, %d", e.n, e.n, C * xs);
    I("add.u64 %s, %s, %s", xn.n, px.n, e.n);
    I("mul.wide.u32 %s, %s, %s", e.n, n.n, tout.n);
    I("cvt.u64.u32 %s, %s", dst.n, t.n);
    I("add.u64 %s, %s, %s", e.n, e.n, dst.n);
    I("mad.lo.u64 %s, %s, %d, %s", dst.n, e.n, RP * es, pxc.n);
    ws_ptx_comment(b, "u0 = S*t - P_L (host: S*T_out + D*K + P_L < 2^31); tap k reads time u0 + D*k");
    I("mul.lo.u32 %s, %s, %d", u0.n, t.n, d->stride);
    I("sub.u32 %s, %s, %d", u0.n, u0.n, d->pad_l);
    preg uk[WS_HCOL_R_MAX], okk[WS_HCOL_R_MAX];
    for (int k = 0; k < K; k++) {
        uk[k] = ws_ptx_reg(b, PTX_B32), okk[k] = ws_ptx_reg(b, PTX_PRED);
        I("add.u32 %s, %s, %d", uk[k].n, u0.n, d->dilation * k);
        I("setp.lt.u32 %s, %s, %s", okk[k].n, uk[k].n, tin.n);
    }
    for (int g = 0; g < RP / V; g++) {
        preg v[8];
        for (int i = 0; i < V; i++) {
            const int r = g * V + i;
            v[i] = ws_ptx_reg(b, PTX_F32);
            if (r >= R) {
                I("mov.f32 %s, 0f00000000", v[i].n);
                continue;
            }
            const int j = r / K, k = r % K;
            preg a = ws_ptx_reg(b, PTX_B64), ix = ws_ptx_reg(b, PTX_B64);
            if (ncl) { /* x[n, j, u]: j*T_in + u */
                I("mul.wide.u32 %s, %s, %d", ix.n, tin.n, j * xs);
                I("mad.wide.u32 %s, %s, %d, %s", ix.n, uk[k].n, xs, ix.n);
            } else { /* x[n, u, j]: u*C_in + j (u < T_in where it is read; the product in 64 bits) */
                I("mul.wide.u32 %s, %s, %d", ix.n, uk[k].n, C * xs);
                I("add.u64 %s, %s, %d", ix.n, ix.n, j * xs);
            }
            I("add.u64 %s, %s, %s", a.n, xn.n, ix.n);
            ws_ptx_load_pred(b, v[i], a, okk[k], d->x_type);
            ws_ptx_act(b, v[i], d->pre); /* pre(0) = 0 for every act: the padding stays zero */
        }
        emit_group_store(b, d, v, R - g * V, dst, 16 * g);
    }
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, WS_HCOL_THREADS, 0, 0);
}

/* "_wpad": the columns' out[o*RP + r] = round(w[o*R + r]) (r < R), else 0, i = o*RP + r; padded
 * channels' out[(o*K + k)*CP + c] = round(w[(o*C_in + c)*K + k]) (c < C_in), else 0; i < p_n */
static void emit_wpad(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_WPREP);
    const int tf32 = d->math == WS_MATH_TF32, pad = ws_hcol_pad(d);
    const int C = d->c_in, K = d->k, CP = ws_hcol_cp(d);
    const int R = pad ? 0 : d->c_in * d->k, RP = pad ? 0 : ws_hcol_rp(d); /* the columns': at most 64 */
    if (pad)
        ws_ptx_comment(b, "out[(o*%d + k)*%d + c] = %s(w[(o*%d + c)*%d + k]) for c < %d, else 0; w %s", K, CP,
                       tf32 ? "tf32" : d->math == WS_MATH_BF16 ? "bf16" : "f16", C, K, C, ws_ptx_type_name(d->w_type));
    else
        ws_ptx_comment(b, "out[o*%d + r] = %s(w[o*%d + r]) for r < %d, else 0; w %s", RP,
                       tf32 ? "tf32" : d->math == WS_MATH_BF16 ? "bf16" : "f16", R, R, ws_ptx_type_name(d->w_type));
    preg pw = ws_ptx_reg(b, PTX_B64), pout = ws_ptx_reg(b, PTX_B64), n = ws_ptx_reg(b, PTX_B32);
    preg i = ws_ptx_reg(b, PTX_B32), r32 = ws_ptx_reg(b, PTX_B32), o = ws_ptx_reg(b, PTX_B32);
    preg r = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), out = ws_ptx_reg(b, PTX_PRED);
    preg a = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32), src = ws_ptx_reg(b, PTX_B32);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ld_param(b, pw, pt, WS_WPREP_W);
    ws_ptx_ld_param(b, pout, pt, WS_WPREP_OUT);
    ws_ptx_ld_param(b, n, pt, WS_WPREP_N);
    I("cvta.to.global.u64 %s, %s", pw.n, pw.n);
    I("cvta.to.global.u64 %s, %s", pout.n, pout.n);
    ws_ptx_comment(b, "p_n = C_out * RP (padded channels: C_out * K * CP) < 2^32 (the host checks)");
    I("mov.u32 %s, %%ctaid.x", i.n);
    I("mov.u32 %s, %%tid.x", r32.n);
    I("mad.lo.u32 %s, %s, %d, %s", i.n, i.n, WS_WPREP_THREADS, r32.n);
    I("setp.ge.u32 %s, %s, %s", out.n, i.n, n.n);
    I("@%s bra %s", out.n, done.n);
    if (pad) { /* i = (o*K + k)*CP + c: c in r, o*K + k in o, then o, k */
        preg k = ws_ptx_reg(b, PTX_B32);
        I("div.u32 %s, %s, %d", o.n, i.n, CP);
        I("mul.lo.u32 %s, %s, %d", r.n, o.n, CP);
        I("sub.u32 %s, %s, %s", r.n, i.n, r.n);
        I("setp.lt.u32 %s, %s, %d", ok.n, r.n, C);
        I("div.u32 %s, %s, %d", k.n, o.n, K);
        I("mul.lo.u32 %s, %s, %d", k.n, k.n, K);
        I("sub.u32 %s, %s, %s", k.n, o.n, k.n);
        I("sub.u32 %s, %s, %s", o.n, o.n, k.n);
        ws_ptx_comment(b, "src = (o*C + c)*K + k = o*K*C + c*K + k, o*K in the register");
        I("mul.lo.u32 %s, %s, %d", src.n, o.n, C);
        I("mad.lo.u32 %s, %s, %d, %s", src.n, r.n, K, src.n);
        I("add.u32 %s, %s, %s", src.n, src.n, k.n);
    } else {
        I("div.u32 %s, %s, %d", o.n, i.n, RP);
        I("mul.lo.u32 %s, %s, %d", r.n, o.n, RP);
        I("sub.u32 %s, %s, %s", r.n, i.n, r.n);
        I("setp.lt.u32 %s, %s, %d", ok.n, r.n, R);
        I("mad.lo.u32 %s, %s, %d, %s", src.n, o.n, R, r.n);
    }
    I("mul.wide.u32 %s, %s, %d", a.n, src.n, d->w_type == WS_F32 ? 4 : 2);
    I("add.u64 %s, %s, %s", a.n, a.n, pw.n);
    ws_ptx_load_pred(b, v, a, ok, d->w_type);
    if (tf32) {
        preg t = ws_ptx_reg(b, PTX_B32);
        I("cvt.rna.tf32.f32 %s, %s", t.n, v.n);
        I("mul.wide.u32 %s, %s, 4", a.n, i.n);
        I("add.u64 %s, %s, %s", a.n, a.n, pout.n);
        I("st.global.b32 [%s], %s", a.n, t.n);
    } else {
        preg h = ws_ptx_reg(b, PTX_B16);
        I("cvt.rn.%s.f32 %s, %s", d->math == WS_MATH_BF16 ? "bf16" : "f16", h.n, v.n);
        I("mul.wide.u32 %s, %s, 2", a.n, i.n);
        I("add.u64 %s, %s, %s", a.n, a.n, pout.n);
        I("st.global.b16 [%s], %s", a.n, h.n);
    }
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, WS_WPREP_THREADS, 0, 0);
}

char *ws_hcol_emit(const ws_conv_desc *d, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_HCOL_NAME_MAX], en[WS_HCOL_NAME_MAX + 8];
    ws_hcol_name(d, name);
    if (!ws_hcol_fits(d, 9, 0)) {
        ws_errf(err, "ws_hcol_emit(%s): not a descriptor the columns take", name);
        return NULL;
    }
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin_sm90a(&mod, "whisper-stem conv engine: a short dense conv's columns for the Hopper GEMM");
    snprintf(en, sizeof en, "%s_col", name);
    if (ws_hcol_pad(d))
        emit_pad(&mod, d, en);
    else
        emit_col(&mod, d, en);
    snprintf(en, sizeof en, "%s_wpad", name);
    emit_wpad(&mod, d, en);
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_hcol_emit(%s): %s", name, why);
    return text;
}

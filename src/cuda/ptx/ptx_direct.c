/* ptx_direct.c - the direct kernels' emitter (forward; backward gz, dx, dw, db); math,
 * mapping and parameters in ptx_direct.h. Each emit helper below says in pseudo-C what it
 * writes. Emission is a pure function of the descriptor and the compute capability.
 * Tested by tests/test_gpu_conv.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gelu_ptx.h"
#include "ptx_act.h"
#include "ptx_direct.h"
#include "ptx_emit.h"
#include "ptx_epi.h"
#include "ptx_params.h"

/* Taps up to this many are unrolled; longer filters loop over k. */
#define UNROLL_K 16

/* the kernel being written */
typedef struct {
    ptx_buf *b;
    const ws_conv_desc *d;
    long long cg, cog;  /* C_in / G, C_out / G */
    int xs, ys;         /* bytes per element of x and of y (and add) */
    preg tin;           /* u64 T_in */
    int split;          /* products by mul.rn then add.rn (BWD's z), not fma */
} dk;

void ws_direct_name(const ws_conv_desc *d, char name[WS_DIRECT_NAME_MAX])
{
    snprintf(name, WS_DIRECT_NAME_MAX, "ws_direct_%s_c%d_%d_g%d_k%d_s%d_d%d_p%d_%s_%s_%s_%s_%s_%s",
             d->op == WS_CONV_BWD ? "bwd" : "fwd", d->c_in, d->c_out, d->groups, d->k, d->stride,
             d->dilation, d->pad_l, d->x_layout == WS_NCL ? "ncl" : "nlc",
             d->y_layout == WS_NCL ? "ncl" : "nlc", ws_ptx_type_name(d->x_type), ws_ptx_type_name(d->y_type),
             ws_ptx_act_name(d->pre), ws_ptx_act_name(d->act));
}

/* q = a / m; r = a - q*m  (u64; m a register or an immediate) */
static void emit_divmod(dk *s, preg q, preg r, preg a, const char *m)
{
    ws_ptx_ins(s->b, "div.u64 %s, %s, %s", q.n, a.n, m);
    ws_ptx_ins(s->b, "mul.lo.u64 %s, %s, %s", r.n, q.n, m);
    ws_ptx_ins(s->b, "sub.u64 %s, %s, %s", r.n, a.n, r.n);
}

/* One tap:  if ((u64)u < T_in) acc += w[woff] * pre(x[xrow + u*tstep])
 * (u < 0 wraps to a huge unsigned value, so one compare tests both ends); fma, or with
 * s->split mul.rn then add.rn (two roundings, as the CPU's a += w * x). */
static void emit_tap(dk *s, preg acc, preg u, preg xrow, const char *tstep, preg wp, long long woff)
{
    ptx_buf *b = s->b;
    preg in = ws_ptx_reg(b, PTX_PRED), xa = ws_ptx_reg(b, PTX_B64);
    preg xv = ws_ptx_reg(b, PTX_F32), wv = ws_ptx_reg(b, PTX_F32);
    plabel skip = ws_ptx_label_new(b, "tap");
    ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", in.n, u.n, s->tin.n);
    ws_ptx_ins(b, "@!%s bra %s", in.n, skip.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", xa.n, u.n, tstep, xrow.n);
    ws_ptx_load(s->b, xv, xa, s->d->x_type, 1);
    ws_ptx_act(s->b, xv, s->d->pre);
    ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s+%lld]", wv.n, wp.n, woff);
    if (s->split) {
        ws_ptx_ins(b, "mul.rn.f32 %s, %s, %s", xv.n, wv.n, xv.n);
        ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", acc.n, acc.n, xv.n);
    } else {
        ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc.n, wv.n, xv.n, acc.n);
    }
    ws_ptx_label(b, skip);
}

/* for k < K: tap(u0 + D*k, w[wp + 4k]) - unrolled up to UNROLL_K taps, else a loop */
static void emit_taps(dk *s, preg acc, preg u0, preg xrow, const char *tstep, preg wp)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    if (d->k <= UNROLL_K) {
        for (int k = 0; k < d->k; k++) {
            preg u = ws_ptx_reg(b, PTX_B64);
            ws_ptx_ins(b, "add.s64 %s, %s, %lld", u.n, u0.n, (long long)d->dilation * k);
            emit_tap(s, acc, u, xrow, tstep, wp, 4LL * k);
        }
        return;
    }
    preg u = ws_ptx_reg(b, PTX_B64), wk = ws_ptx_reg(b, PTX_B64), kc = ws_ptx_reg(b, PTX_B32);
    preg more = ws_ptx_reg(b, PTX_PRED);
    plabel lp = ws_ptx_label_new(b, "k");
    ws_ptx_ins(b, "mov.b64 %s, %s", u.n, u0.n);
    ws_ptx_ins(b, "mov.b64 %s, %s", wk.n, wp.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", kc.n);
    ws_ptx_label(b, lp);
    emit_tap(s, acc, u, xrow, tstep, wk, 0);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", u.n, u.n, d->dilation);
    ws_ptx_ins(b, "add.u64 %s, %s, 4", wk.n, wk.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", kc.n, kc.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %d", more.n, kc.n, d->k);
    ws_ptx_ins(b, "@%s bra %s", more.n, lp.n);
}

/* acc = sum_{j<Cg} sum_{k<K} w[o,j,k] * pre(x[n, g*Cg + j, S*t + D*k - P_L]) in the order
 * j then k (g = o / Cog); n, o, t u64 registers, px / pw global pointers. Returns acc. */
static preg emit_conv_sum(dk *s, preg n, preg o, preg t, preg px, preg pw)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long cin = d->c_in, K = d->k;
    ws_ptx_section(b, "x rows of group g = o / Cog, w row of o, u0 = S*t - P_L");
    preg g = ws_ptx_reg(b, PTX_B64), xrow = ws_ptx_reg(b, PTX_B64), wp = ws_ptx_reg(b, PTX_B64);
    preg u0 = ws_ptx_reg(b, PTX_B64), jstep = ws_ptx_reg(b, PTX_B64);
    char tstep[32];
    ws_ptx_ins(b, "div.u64 %s, %s, %lld", g.n, o.n, s->cog);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", g.n, g.n, s->cg);
    if (d->x_layout == WS_NCL) {
        ws_ptx_comment(b, "x NCL: row (n, c) at ((n*C_in + c)*T_in)*%d bytes, times %d apart", s->xs, s->xs);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", xrow.n, n.n, cin, g.n);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", xrow.n, xrow.n, s->tin.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xrow.n, xrow.n, s->xs, px.n);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", jstep.n, s->tin.n, s->xs);
        snprintf(tstep, sizeof tstep, "%d", s->xs);
    } else {
        ws_ptx_comment(b, "x NLC: row (n, c) at (n*T_in*C_in + c)*%d bytes, times %lld apart", s->xs,
                    cin * s->xs);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", xrow.n, n.n, s->tin.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", xrow.n, xrow.n, cin, g.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xrow.n, xrow.n, s->xs, px.n);
        ws_ptx_ins(b, "mov.u64 %s, %d", jstep.n, s->xs);
        snprintf(tstep, sizeof tstep, "%lld", cin * s->xs);
    }
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", wp.n, o.n, s->cg * K * 4, pw.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", u0.n, t.n, d->stride);
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", u0.n, u0.n, d->pad_l);

    ws_ptx_section(b, "acc = sum_j sum_k w[o,j,k] * pre(x[n, g*Cg + j, u0 + D*k]), j then k");
    preg acc = ws_ptx_reg(b, PTX_F32);
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    if (s->cg == 1) {
        emit_taps(s, acc, u0, xrow, tstep, wp);
    } else {
        preg j = ws_ptx_reg(b, PTX_B32), more = ws_ptx_reg(b, PTX_PRED);
        plabel lp = ws_ptx_label_new(b, "j");
        ws_ptx_ins(b, "mov.u32 %s, 0", j.n);
        ws_ptx_label(b, lp);
        emit_taps(s, acc, u0, xrow, tstep, wp);
        ws_ptx_ins(b, "add.u64 %s, %s, %s", xrow.n, xrow.n, jstep.n);
        ws_ptx_ins(b, "add.u64 %s, %s, %lld", wp.n, wp.n, K * 4);
        ws_ptx_ins(b, "add.u32 %s, %s, 1", j.n, j.n);
        ws_ptx_ins(b, "setp.lt.u32 %s, %s, %lld", more.n, j.n, s->cg);
        ws_ptx_ins(b, "@%s bra %s", more.n, lp.n);
    }
    return acc;
}

/* the forward kernel's body into b */
static void emit_body(dk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long cout = d->c_out;
    char imm[32];

    ws_ptx_section(b, "parameters");
    preg px = ws_ptx_reg(b, PTX_B64), pw = ws_ptx_reg(b, PTX_B64), pb = ws_ptx_reg(b, PTX_B64);
    preg pa = ws_ptx_reg(b, PTX_B64), py = ws_ptx_reg(b, PTX_B64), abs = ws_ptx_reg(b, PTX_B64);
    preg n32 = ws_ptx_reg(b, PTX_B32), tin32 = ws_ptx_reg(b, PTX_B32), tout32 = ws_ptx_reg(b, PTX_B32);
    preg hasb = ws_ptx_reg(b, PTX_PRED), hasa = ws_ptx_reg(b, PTX_PRED);
    const ws_params *pt = ws_params_of(WS_PARAMS_FWD); /* every parameter, in the table's order */
    const preg *ld[WS_FWD_NPARAMS] = { [WS_FWD_X] = &px, [WS_FWD_W] = &pw, [WS_FWD_B] = &pb,
                                       [WS_FWD_ADD] = &pa, [WS_FWD_Y] = &py, [WS_FWD_N] = &n32,
                                       [WS_FWD_T_IN] = &tin32, [WS_FWD_T_OUT] = &tout32,
                                       [WS_FWD_ADD_BS] = &abs };
    for (int i = 0; i < WS_FWD_NPARAMS; i++)
        ws_ptx_ld_param(b, *ld[i], pt, i);
    ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", hasb.n, pb.n);
    ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", hasa.n, pa.n);
    const preg *gp[] = { &px, &pw, &pb, &pa, &py };
    for (size_t i = 0; i < sizeof gp / sizeof gp[0]; i++)
        ws_ptx_ins(b, "cvta.to.global.u64 %s, %s", gp[i]->n, gp[i]->n);

    ws_ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < N * C_out * T_out");
    preg i = ws_ptx_reg(b, PTX_B64), tid = ws_ptx_reg(b, PTX_B64), r32 = ws_ptx_reg(b, PTX_B32);
    preg tout = ws_ptx_reg(b, PTX_B64), total = ws_ptx_reg(b, PTX_B64), out = ws_ptx_reg(b, PTX_PRED);
    plabel done = ws_ptx_label_new(b, "done");
    s->tin = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mov.u32 %s, %%ctaid.x", r32.n);
    ws_ptx_ins(b, "mul.wide.u32 %s, %s, %d", i.n, r32.n, WS_DIRECT_THREADS);
    ws_ptx_ins(b, "mov.u32 %s, %%tid.x", r32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tid.n, r32.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", i.n, i.n, tid.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tout.n, tout32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", s->tin.n, tin32.n);
    ws_ptx_ins(b, "mul.wide.u32 %s, %s, %s", total.n, n32.n, tout32.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, total.n, cout);
    ws_ptx_ins(b, "setp.ge.u64 %s, %s, %s", out.n, i.n, total.n);
    ws_ptx_ins(b, "@%s bra %s", out.n, done.n);

    preg n = ws_ptx_reg(b, PTX_B64), o = ws_ptx_reg(b, PTX_B64), t = ws_ptx_reg(b, PTX_B64);
    preg r = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", cout);
    if (d->y_layout == WS_NCL) {
        ws_ptx_comment(b, "y NCL: i = (n*C_out + o)*T_out + t");
        emit_divmod(s, r, t, i, tout.n);
        emit_divmod(s, n, o, r, imm);
    } else {
        ws_ptx_comment(b, "y NLC: i = (n*T_out + t)*C_out + o");
        emit_divmod(s, r, o, i, imm);
        emit_divmod(s, n, t, r, tout.n);
    }

    preg acc = emit_conv_sum(s, n, o, t, px, pw);

    ws_ptx_section(b, "z = acc + b[o] (b given); act; + add (given); store");
    preg ai = ws_ptx_reg(b, PTX_B64);
    ws_ptx_comment(b, "add element n*add_bs + (i - n*C_out*T_out), read in y_type");
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", ai.n, n.n, tout.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", ai.n, ai.n, cout);
    ws_ptx_ins(b, "sub.u64 %s, %s, %s", ai.n, i.n, ai.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", ai.n, n.n, abs.n, ai.n);
    const ws_ptx_epi ep = {
        .act = d->act, .y_type = d->y_type, .n = 1, .v = &acc,
        .bias_at = {.index = o, .base = pb, .scale = 4}, .bias_if = hasb,
        .add_if = hasa, .add = {.index = ai, .base = pa, .scale = s->ys},
        .y = {.index = i, .base = py, .scale = s->ys}};
    ws_ptx_epi_emit(b, &ep);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* ---- backward kernels (ptx_direct.h: gz, dx, dw, db) ---- */

#define LOG2E_HALF_NEG WS_LOG2E_HALF_NEG
#define INV_SQRT_2PI WS_INV_SQRT_2PI
#define TINY_Z WS_GELU_TINY_Z

float ws_direct_gelu_grad_model(float z)
{
    const float cdf = fabsf(z) < TINY_Z ? 0.5f : ws_gelu_model(z) / z;
    const float pdf = exp2f(z * z * LOG2E_HALF_NEG) * INV_SQRT_2PI;
    return fmaf(z, pdf, cdf);
}

/* i = ctaid.x * 256 + tid.x; if (i >= total) goto done  (total a register or immediate) */
static preg emit_thread_index(ptx_buf *b, const char *total, plabel done)
{
    preg i = ws_ptx_reg(b, PTX_B64), tid = ws_ptx_reg(b, PTX_B64), r32 = ws_ptx_reg(b, PTX_B32);
    preg out = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "mov.u32 %s, %%ctaid.x", r32.n);
    ws_ptx_ins(b, "mul.wide.u32 %s, %s, %d", i.n, r32.n, WS_DIRECT_THREADS);
    ws_ptx_ins(b, "mov.u32 %s, %%tid.x", r32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tid.n, r32.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", i.n, i.n, tid.n);
    ws_ptx_ins(b, "setp.ge.u64 %s, %s, %s", out.n, i.n, total);
    ws_ptx_ins(b, "@%s bra %s", out.n, done.n);
    return i;
}

/* gz[n,o,t] = dy[n,o,t] * act'(z), z = b[o] + conv (j then k; RELU: mul.rn / add.rn) */
static void emit_gz(dk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long cout = d->c_out;
    char imm[32];

    ws_ptx_section(b, "parameters");
    const ws_params *pt = ws_params_of(WS_PARAMS_BWD_GZ);
    static const int pi[] = { WS_BGZ_X, WS_BGZ_W, WS_BGZ_B, WS_BGZ_DY, WS_BGZ_GZ };
    preg p[5];
    ws_ptx_param_ptrs(b, p, pt, pi, 5);
    preg px = p[0], pw = p[1], pb = p[2], pdy = p[3], pgz = p[4];
    preg nn = ws_ptx_param_u32(b, pt, WS_BGZ_N);
    s->tin = ws_ptx_param_u32(b, pt, WS_BGZ_T_IN);
    preg tout = ws_ptx_param_u32(b, pt, WS_BGZ_T_OUT);

    ws_ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < N * C_out * T_out (y's index)");
    preg total = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", total.n, nn.n, tout.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, total.n, cout);
    preg i = emit_thread_index(b, total.n, done);
    preg n = ws_ptx_reg(b, PTX_B64), o = ws_ptx_reg(b, PTX_B64), t = ws_ptx_reg(b, PTX_B64);
    preg r = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", cout);
    if (d->y_layout == WS_NCL) {
        ws_ptx_comment(b, "dy NCL: i = (n*C_out + o)*T_out + t");
        emit_divmod(s, r, t, i, tout.n);
        emit_divmod(s, n, o, r, imm);
    } else {
        ws_ptx_comment(b, "dy NLC: i = (n*T_out + t)*C_out + o");
        emit_divmod(s, r, o, i, imm);
        emit_divmod(s, n, t, r, tout.n);
    }

    preg g = ws_ptx_reg(b, PTX_F32), ya = ws_ptx_reg(b, PTX_B64);
    if (d->act != WS_ACT_NONE) {
        preg z = emit_conv_sum(s, n, o, t, px, pw);
        ws_ptx_section(b, "z = acc + b[o] (b given)");
        plabel nob = ws_ptx_label_new(b, "nobias");
        preg hasb = ws_ptx_reg(b, PTX_PRED), ba = ws_ptx_reg(b, PTX_B64), bv = ws_ptx_reg(b, PTX_F32);
        ws_ptx_ins(b, "setp.eq.u64 %s, %s, 0", hasb.n, pb.n);
        ws_ptx_ins(b, "@%s bra %s", hasb.n, nob.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", ba.n, o.n, pb.n);
        ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s]", bv.n, ba.n);
        ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", z.n, z.n, bv.n);
        ws_ptx_label(b, nob);
        ws_ptx_section(b, "g = dy * act'(z)");
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", ya.n, i.n, s->ys, pdy.n);
        ws_ptx_load(s->b, g, ya, d->y_type, 1);
        ws_ptx_act_grad(s->b, s->d->act, g, z);
    } else {
        (void)px, (void)pw, (void)pb;
        ws_ptx_section(b, "g = dy (act NONE: act' = 1, z not needed)");
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", ya.n, i.n, s->ys, pdy.n);
        ws_ptx_load(s->b, g, ya, d->y_type, 1);
    }
    ws_ptx_section(b, "gz[(n*C_out + o)*T_out + t] = g");
    preg ga = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", ga.n, n.n, cout, o.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", ga.n, ga.n, tout.n, t.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", ga.n, ga.n, pgz.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", ga.n, g.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* One dx tap: v = v0 - D*k; t = v / S if S divides v (S 1: t = v); if ((u64)t < T_out)
 * acc += w[wp + woff] * gz[gzrow + 4t]  (fma) */
static void emit_dx_tap(dk *s, preg acc, preg v, preg gzrow, preg tout, preg wp, long long woff)
{
    ptx_buf *b = s->b;
    const int S = s->d->stride;
    preg t = ws_ptx_reg(b, PTX_B64), in = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
    preg wv = ws_ptx_reg(b, PTX_F32), gv = ws_ptx_reg(b, PTX_F32);
    plabel skip = ws_ptx_label_new(b, "tap");
    if (S == 1) {
        ws_ptx_ins(b, "mov.b64 %s, %s", t.n, v.n);
    } else {
        preg rm = ws_ptx_reg(b, PTX_B64), whole = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_ins(b, "div.s64 %s, %s, %d", t.n, v.n, S);
        ws_ptx_ins(b, "mul.lo.s64 %s, %s, %d", rm.n, t.n, S);
        ws_ptx_ins(b, "setp.eq.s64 %s, %s, %s", whole.n, rm.n, v.n);
        ws_ptx_ins(b, "@!%s bra %s", whole.n, skip.n);
    }
    ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", in.n, t.n, tout.n);
    ws_ptx_ins(b, "@!%s bra %s", in.n, skip.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", ga.n, t.n, gzrow.n);
    ws_ptx_ins(b, "ld.global.f32 %s, [%s]", gv.n, ga.n);
    ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s+%lld]", wv.n, wp.n, woff);
    ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc.n, wv.n, gv.n, acc.n);
    ws_ptx_label(b, skip);
}

/* dx[n,c,u] = sum_{o of c's group} sum_k w[o, c - g*Cg, k] * gz[n, o, (u + P_L - D*k) / S] */
static void emit_dx(dk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long cin = d->c_in, cout = d->c_out, K = d->k;
    char imm[32];

    ws_ptx_section(b, "parameters");
    const ws_params *pt = ws_params_of(WS_PARAMS_BWD_DX);
    static const int pi[] = { WS_BDX_W, WS_BDX_GZ, WS_BDX_DX };
    preg p[3];
    ws_ptx_param_ptrs(b, p, pt, pi, 3);
    preg pw = p[0], pgz = p[1], pdx = p[2];
    preg nn = ws_ptx_param_u32(b, pt, WS_BDX_N);
    s->tin = ws_ptx_param_u32(b, pt, WS_BDX_T_IN);
    preg tout = ws_ptx_param_u32(b, pt, WS_BDX_T_OUT);

    ws_ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < N * C_in * T_in (dx's index)");
    preg total = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", total.n, nn.n, s->tin.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, total.n, cin);
    preg i = emit_thread_index(b, total.n, done);
    preg n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64), u = ws_ptx_reg(b, PTX_B64);
    preg r = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", cin);
    if (d->x_layout == WS_NCL) {
        ws_ptx_comment(b, "dx NCL: i = (n*C_in + c)*T_in + u");
        emit_divmod(s, r, u, i, s->tin.n);
        emit_divmod(s, n, c, r, imm);
    } else {
        ws_ptx_comment(b, "dx NLC: i = (n*T_in + u)*C_in + c");
        emit_divmod(s, r, c, i, imm);
        emit_divmod(s, n, u, r, s->tin.n);
    }

    ws_ptx_section(b, "g = c / Cg, j = c - g*Cg; w row of (g*Cog, j), gz row of (n, g*Cog), v0 = u + P_L");
    preg g = ws_ptx_reg(b, PTX_B64), j = ws_ptx_reg(b, PTX_B64), wp = ws_ptx_reg(b, PTX_B64);
    preg gzrow = ws_ptx_reg(b, PTX_B64), gzstep = ws_ptx_reg(b, PTX_B64), v0 = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", s->cg);
    emit_divmod(s, g, j, c, imm);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", g.n, g.n, s->cog);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", wp.n, g.n, s->cg, j.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", wp.n, wp.n, K * 4, pw.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", gzrow.n, n.n, cout, g.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", gzrow.n, gzrow.n, tout.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", gzrow.n, gzrow.n, pgz.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, 4", gzstep.n, tout.n);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", v0.n, u.n, d->pad_l);

    ws_ptx_section(b, "acc = sum_o sum_k w[o,j,k] * gz[n,o,t], o then k");
    preg acc = ws_ptx_reg(b, PTX_F32), ol = ws_ptx_reg(b, PTX_B32), omore = ws_ptx_reg(b, PTX_PRED);
    plabel olp = ws_ptx_label_new(b, "o");
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    if (s->cog > 1) {
        ws_ptx_ins(b, "mov.u32 %s, 0", ol.n);
        ws_ptx_label(b, olp);
    }
    if (K <= UNROLL_K) {
        for (int k = 0; k < K; k++) {
            preg v = ws_ptx_reg(b, PTX_B64);
            ws_ptx_ins(b, "sub.s64 %s, %s, %lld", v.n, v0.n, (long long)d->dilation * k);
            emit_dx_tap(s, acc, v, gzrow, tout, wp, 4LL * k);
        }
    } else {
        preg v = ws_ptx_reg(b, PTX_B64), wk = ws_ptx_reg(b, PTX_B64), kc = ws_ptx_reg(b, PTX_B32);
        preg more = ws_ptx_reg(b, PTX_PRED);
        plabel lp = ws_ptx_label_new(b, "k");
        ws_ptx_ins(b, "mov.b64 %s, %s", v.n, v0.n);
        ws_ptx_ins(b, "mov.b64 %s, %s", wk.n, wp.n);
        ws_ptx_ins(b, "mov.u32 %s, 0", kc.n);
        ws_ptx_label(b, lp);
        emit_dx_tap(s, acc, v, gzrow, tout, wk, 0);
        ws_ptx_ins(b, "sub.s64 %s, %s, %d", v.n, v.n, d->dilation);
        ws_ptx_ins(b, "add.u64 %s, %s, 4", wk.n, wk.n);
        ws_ptx_ins(b, "add.u32 %s, %s, 1", kc.n, kc.n);
        ws_ptx_ins(b, "setp.lt.u32 %s, %s, %lld", more.n, kc.n, K);
        ws_ptx_ins(b, "@%s bra %s", more.n, lp.n);
    }
    if (s->cog > 1) {
        ws_ptx_ins(b, "add.u64 %s, %s, %lld", wp.n, wp.n, s->cg * K * 4);
        ws_ptx_ins(b, "add.u64 %s, %s, %s", gzrow.n, gzrow.n, gzstep.n);
        ws_ptx_ins(b, "add.u32 %s, %s, 1", ol.n, ol.n);
        ws_ptx_ins(b, "setp.lt.u32 %s, %s, %lld", omore.n, ol.n, s->cog);
        ws_ptx_ins(b, "@%s bra %s", omore.n, olp.n);
    }
    ws_ptx_section(b, "dx[i] = acc in x_type");
    preg xa = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xa.n, i.n, s->xs, pdx.n);
    ws_ptx_store(s->b, xa, acc, d->x_type);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* dw[o,j,k] = sum_n sum_t gz[n,o,t] * x[n, g*Cg + j, S*t + D*k - P_L]  (fma, n then t) */
static void emit_dw(dk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long cin = d->c_in, cout = d->c_out, K = d->k;
    char imm[32];

    ws_ptx_section(b, "parameters");
    const ws_params *pt = ws_params_of(WS_PARAMS_BWD_DW);
    static const int pi[] = { WS_BDW_X, WS_BDW_GZ, WS_BDW_DW };
    preg p[3];
    ws_ptx_param_ptrs(b, p, pt, pi, 3);
    preg px = p[0], pgz = p[1], pdw = p[2];
    preg n32 = ws_ptx_reg(b, PTX_B32), t32 = ws_ptx_reg(b, PTX_B32), tout = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, n32, pt, WS_BDW_N);
    s->tin = ws_ptx_param_u32(b, pt, WS_BDW_T_IN);
    ws_ptx_ld_param(b, t32, pt, WS_BDW_T_OUT);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tout.n, t32.n);

    ws_ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < C_out * Cg * K (dw's index)");
    plabel done = ws_ptx_label_new(b, "done");
    snprintf(imm, sizeof imm, "%lld", cout * s->cg * K);
    preg i = emit_thread_index(b, imm, done);
    preg o = ws_ptx_reg(b, PTX_B64), j = ws_ptx_reg(b, PTX_B64), k = ws_ptx_reg(b, PTX_B64);
    preg r = ws_ptx_reg(b, PTX_B64);
    ws_ptx_comment(b, "i = (o*Cg + j)*K + k");
    snprintf(imm, sizeof imm, "%lld", K);
    emit_divmod(s, r, k, i, imm);
    snprintf(imm, sizeof imm, "%lld", s->cg);
    emit_divmod(s, o, j, r, imm);

    ws_ptx_section(b, "x row of (0, g*Cg + j) at u0 = D*k - P_L; gz row of (0, o)");
    preg c = ws_ptx_reg(b, PTX_B64), xrow = ws_ptx_reg(b, PTX_B64), gzrow = ws_ptx_reg(b, PTX_B64);
    preg u0 = ws_ptx_reg(b, PTX_B64), xitem = ws_ptx_reg(b, PTX_B64), gzitem = ws_ptx_reg(b, PTX_B64);
    long long ustep; /* bytes between consecutive u of one channel */
    ws_ptx_ins(b, "div.u64 %s, %s, %lld", c.n, o.n, s->cog);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", c.n, c.n, s->cg, j.n);
    if (d->x_layout == WS_NCL) {
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", xrow.n, c.n, s->tin.n);
        ustep = s->xs;
    } else {
        ws_ptx_ins(b, "mov.b64 %s, %s", xrow.n, c.n);
        ustep = cin * s->xs;
    }
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xrow.n, xrow.n, s->xs, px.n);
    ws_ptx_comment(b, "items are C_in*T_in*%d bytes apart in x, C_out*T_out*4 in gz", s->xs);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", xitem.n, s->tin.n, cin * s->xs);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", gzitem.n, tout.n, cout * 4);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", gzrow.n, o.n, tout.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", gzrow.n, gzrow.n, pgz.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", u0.n, k.n, d->dilation);
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", u0.n, u0.n, d->pad_l);

    ws_ptx_section(b, "acc = sum_n sum_t gz[n,o,t] * x[n,c,u0 + S*t], n then t");
    preg acc = ws_ptx_reg(b, PTX_F32), nl = ws_ptx_reg(b, PTX_B32), tl = ws_ptx_reg(b, PTX_B32);
    preg u = ws_ptx_reg(b, PTX_B64), ga = ws_ptx_reg(b, PTX_B64), in = ws_ptx_reg(b, PTX_PRED);
    preg xa = ws_ptx_reg(b, PTX_B64), xv = ws_ptx_reg(b, PTX_F32), gv = ws_ptx_reg(b, PTX_F32);
    preg more = ws_ptx_reg(b, PTX_PRED);
    plabel nlp = ws_ptx_label_new(b, "n"), tlp = ws_ptx_label_new(b, "t"), skip = ws_ptx_label_new(b, "tap");
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", nl.n);
    ws_ptx_label(b, nlp);
    ws_ptx_ins(b, "mov.b64 %s, %s", u.n, u0.n);
    ws_ptx_ins(b, "mov.b64 %s, %s", ga.n, gzrow.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", tl.n);
    ws_ptx_label(b, tlp);
    ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", in.n, u.n, s->tin.n);
    ws_ptx_ins(b, "@!%s bra %s", in.n, skip.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", xa.n, u.n, ustep, xrow.n);
    ws_ptx_load(s->b, xv, xa, d->x_type, 1);
    ws_ptx_ins(b, "ld.global.f32 %s, [%s]", gv.n, ga.n);
    ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc.n, gv.n, xv.n, acc.n);
    ws_ptx_label(b, skip);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", u.n, u.n, d->stride);
    ws_ptx_ins(b, "add.u64 %s, %s, 4", ga.n, ga.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", tl.n, tl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, tl.n, t32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, tlp.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", xrow.n, xrow.n, xitem.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", gzrow.n, gzrow.n, gzitem.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", nl.n, nl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, nl.n, n32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, nlp.n);
    ws_ptx_section(b, "dw[i] = acc");
    preg wa = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", wa.n, i.n, pdw.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", wa.n, acc.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* db[o] = sum_n sum_t gz[n,o,t]  (n then t) */
static void emit_db(dk *s)
{
    ptx_buf *b = s->b;
    const long long cout = s->d->c_out;
    char imm[32];

    ws_ptx_section(b, "parameters");
    const ws_params *pt = ws_params_of(WS_PARAMS_BWD_DB);
    static const int pi[] = { WS_BDB_GZ, WS_BDB_DB };
    preg p[2];
    ws_ptx_param_ptrs(b, p, pt, pi, 2);
    preg pgz = p[0], pdb = p[1];
    preg n32 = ws_ptx_reg(b, PTX_B32), t32 = ws_ptx_reg(b, PTX_B32), tout = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, n32, pt, WS_BDB_N);
    ws_ptx_ld_param(b, t32, pt, WS_BDB_T_OUT);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tout.n, t32.n);

    ws_ptx_section(b, "o = blockIdx.x * 256 + threadIdx.x < C_out");
    plabel done = ws_ptx_label_new(b, "done");
    snprintf(imm, sizeof imm, "%lld", cout);
    preg o = emit_thread_index(b, imm, done);
    preg gzrow = ws_ptx_reg(b, PTX_B64), gzitem = ws_ptx_reg(b, PTX_B64), ga = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", gzitem.n, tout.n, cout * 4);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", gzrow.n, o.n, tout.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", gzrow.n, gzrow.n, pgz.n);

    ws_ptx_section(b, "acc = sum_n sum_t gz[n,o,t], n then t");
    preg acc = ws_ptx_reg(b, PTX_F32), gv = ws_ptx_reg(b, PTX_F32), nl = ws_ptx_reg(b, PTX_B32);
    preg tl = ws_ptx_reg(b, PTX_B32), more = ws_ptx_reg(b, PTX_PRED);
    plabel nlp = ws_ptx_label_new(b, "n"), tlp = ws_ptx_label_new(b, "t");
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", nl.n);
    ws_ptx_label(b, nlp);
    ws_ptx_ins(b, "mov.b64 %s, %s", ga.n, gzrow.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", tl.n);
    ws_ptx_label(b, tlp);
    ws_ptx_ins(b, "ld.global.f32 %s, [%s]", gv.n, ga.n);
    ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", acc.n, acc.n, gv.n);
    ws_ptx_ins(b, "add.u64 %s, %s, 4", ga.n, ga.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", tl.n, tl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, tl.n, t32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, tlp.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", gzrow.n, gzrow.n, gzitem.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", nl.n, nl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, nl.n, n32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, nlp.n);
    ws_ptx_section(b, "db[o] = acc");
    preg da = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", da.n, o.n, pdb.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", da.n, acc.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

static const char *const PART_SUFFIX[WS_DIRECT_NPARTS] = { "gz", "dx", "dw", "db" };
/* part p's parameters are the table WS_PARAMS_BWD_GZ + p */
_Static_assert(WS_PARAMS_BWD_DX - WS_PARAMS_BWD_GZ == WS_DIRECT_DX &&
               WS_PARAMS_BWD_DW - WS_PARAMS_BWD_GZ == WS_DIRECT_DW &&
               WS_PARAMS_BWD_DB - WS_PARAMS_BWD_GZ == WS_DIRECT_DB, "ws_direct_part's order");

void ws_direct_bwd_entry(const ws_conv_desc *d, ws_direct_part part, char name[WS_DIRECT_NAME_MAX])
{
    ws_direct_name(d, name); /* at most ~125 characters: room for the suffix */
    const size_t len = strlen(name);
    snprintf(name + len, WS_DIRECT_NAME_MAX - len, "_%s", PART_SUFFIX[part]);
}

/* the backward module: the four entries of ptx_direct.h into mod */
static void emit_bwd_module(ptx_buf *mod, const ws_conv_desc *d, const dk *proto)
{
    static void (*const body[WS_DIRECT_NPARTS])(dk *) = { emit_gz, emit_dx, emit_dw, emit_db };
    static const char *const what[WS_DIRECT_NPARTS] = {
        "gz[n,o,t] = dy[n,o,t] * act'(b[o] + sum_j sum_k w[o,j,k] * x[n, g*Cg+j, S*t + D*k - P_L])",
        "dx[n,c,u] = sum_o sum_k w[o, c - g*Cg, k] * gz[n, o, (u + P_L - D*k) / S]",
        "dw[o,j,k] = sum_n sum_t gz[n,o,t] * x[n, g*Cg+j, S*t + D*k - P_L]",
        "db[o] = sum_n sum_t gz[n,o,t]",
    };
    for (int p = 0; p < WS_DIRECT_NPARTS; p++) {
        ptx_buf kb;
        ws_ptx_init(&kb);
        dk s = *proto;
        s.b = &kb;
        s.split = p == WS_DIRECT_GZ && d->act == WS_ACT_RELU;
        char name[WS_DIRECT_NAME_MAX];
        ws_direct_bwd_entry(d, (ws_direct_part)p, name);
        ws_ptx_comment(&kb, "%s", what[p]);
        ws_ptx_comment(&kb, "C_in %d C_out %d G %d K %d S %d D %d P_L %d; x %s %s, dy %s %s; act %s",
                    d->c_in, d->c_out, d->groups, d->k, d->stride, d->dilation, d->pad_l,
                    d->x_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->x_type),
                    d->y_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->act));
        body[p](&s);
        ws_ptx_kernel_end_params(&kb, mod, name, ws_params_of(WS_PARAMS_BWD_GZ + p), WS_DIRECT_THREADS,
                                 0, 0);
    }
}

char *ws_direct_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    const int bwd = d->op == WS_CONV_BWD;
    char name[WS_DIRECT_NAME_MAX];
    ws_direct_name(d, name);
    ptx_buf mod, kb;
    ws_ptx_init(&mod);
    ws_ptx_init(&kb);
    ws_ptx_module_begin(&mod, cc_major, cc_minor,
                     bwd ? "whisper-stem conv engine: direct backward kernels (gz, dx, dw, db)"
                         : "whisper-stem conv engine: direct forward kernel");
    dk s = { .b = &kb, .d = d, .cg = d->c_in / d->groups, .cog = d->c_out / d->groups,
             .xs = d->x_type == WS_F32 ? 4 : 2, .ys = d->y_type == WS_F32 ? 4 : 2 };
    if (bwd) {
        ws_ptx_free(&kb);
        emit_bwd_module(&mod, d, &s);
    } else {
        ws_ptx_comment(&kb, "y[n,o,t] = act(b[o] + sum_j sum_k w[o,j,k] * pre(x[n, g*Cg+j, S*t + D*k - P_L])) + add");
        ws_ptx_comment(&kb, "C_in %d C_out %d G %d K %d S %d D %d P_L %d; x %s %s, y %s %s; pre %s, act %s",
                    d->c_in, d->c_out, d->groups, d->k, d->stride, d->dilation, d->pad_l,
                    d->x_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->x_type),
                    d->y_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre),
                    ws_ptx_act_name(d->act));
        emit_body(&s);
        ws_ptx_kernel_end_params(&kb, &mod, name, ws_params_of(WS_PARAMS_FWD), WS_DIRECT_THREADS, 0, 0);
    }
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_direct_emit(%s): %s", name, why);
    return text;
}

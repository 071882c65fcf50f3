/* ptx_direct.c - the direct forward kernel's emitter; math, mapping and parameters in
 * ptx_direct.h. Each emit helper below says in pseudo-C what it writes. Emission is a pure
 * function of the descriptor and the compute capability. Tested by tests/test_gpu_conv.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "gelu_ptx.h"
#include "ptx_direct.h"
#include "ptx_emit.h"

/* Taps up to this many are unrolled; longer filters loop over k. */
#define UNROLL_K 16
#define NEG_LOG2E (-1.44269504088896341f)

/* the kernel being written */
typedef struct {
    ptx_buf *b;
    const ws_conv_desc *d;
    long long cg, cog;  /* C_in / G, C_out / G */
    int xs, ys;         /* bytes per element of x and of y (and add) */
    preg tin;           /* u64 T_in */
} dk;

static const char *type_name(ws_dtype t)
{
    return t == WS_F32 ? "f32" : t == WS_F16 ? "f16" : "bf16";
}

static const char *act_name(ws_act a)
{
    switch (a) {
    case WS_ACT_NONE: return "none";
    case WS_ACT_RELU: return "relu";
    case WS_ACT_GELU: return "gelu";
    case WS_ACT_SILU: return "silu";
    }
    return "?";
}

void ws_direct_name(const ws_conv_desc *d, char name[WS_DIRECT_NAME_MAX])
{
    snprintf(name, WS_DIRECT_NAME_MAX, "ws_direct_fwd_c%d_%d_g%d_k%d_s%d_d%d_p%d_%s_%s_%s_%s_%s_%s",
             d->c_in, d->c_out, d->groups, d->k, d->stride, d->dilation, d->pad_l,
             d->x_layout == WS_NCL ? "ncl" : "nlc", d->y_layout == WS_NCL ? "ncl" : "nlc",
             type_name(d->x_type), type_name(d->y_type), act_name(d->pre), act_name(d->act));
}

/* v = (float)*(type *)addr;  nc: through the read-only (non-coherent) path */
static void emit_load(dk *s, preg v, preg addr, ws_dtype t, int nc)
{
    ptx_buf *b = s->b;
    const char *sp = nc ? "global.nc" : "global";
    if (t == WS_F32) {
        ptx_ins(b, "ld.%s.f32 %s, [%s]", sp, v.n, addr.n);
    } else if (t == WS_F16) {
        preg h = ptx_reg(b, PTX_B16);
        ptx_ins(b, "ld.%s.b16 %s, [%s]", sp, h.n, addr.n);
        ptx_ins(b, "cvt.f32.f16 %s, %s", v.n, h.n);
    } else { /* bf16: the 16 bits are the top half of the float32 */
        preg r = ptx_reg(b, PTX_B32);
        ptx_ins(b, "ld.%s.u16 %s, [%s]", sp, r.n, addr.n);
        ptx_ins(b, "shl.b32 %s, %s, 16", r.n, r.n);
        ptx_ins(b, "mov.b32 %s, %s", v.n, r.n);
    }
}

/* *(type *)addr = v, rounded to nearest even */
static void emit_store(dk *s, preg addr, preg v, ws_dtype t)
{
    ptx_buf *b = s->b;
    if (t == WS_F32) {
        ptx_ins(b, "st.global.f32 [%s], %s", addr.n, v.n);
        return;
    }
    preg h = ptx_reg(b, PTX_B16);
    ptx_ins(b, "cvt.rn.%s.f32 %s, %s", t == WS_F16 ? "f16" : "bf16", h.n, v.n);
    ptx_ins(b, "st.global.b16 [%s], %s", addr.n, h.n);
}

/* v = act(v): relu max(v, 0); gelu x Phi(x) (gelu_ptx.h); silu v / (1 + 2^(-v log2 e)) */
static void emit_act(dk *s, preg v, ws_act a)
{
    ptx_buf *b = s->b;
    if (a == WS_ACT_RELU) {
        ptx_ins(b, "max.f32 %s, %s, 0f00000000", v.n, v.n);
    } else if (a == WS_ACT_GELU) {
        ws_gelu_emit(b, v.n, v.n);
    } else if (a == WS_ACT_SILU) {
        preg e = ptx_reg(b, PTX_F32);
        ptx_comment(b, "%s = silu(%s) = z / (1 + 2^(-z log2 e))", v.n, v.n);
        ptx_ins(b, "mul.f32 %s, %s, %s", e.n, v.n, ptx_f32(NEG_LOG2E).s);
        ptx_ins(b, "ex2.approx.ftz.f32 %s, %s", e.n, e.n);
        ptx_ins(b, "add.f32 %s, %s, 0f3F800000", e.n, e.n);
        ptx_ins(b, "div.rn.f32 %s, %s, %s", v.n, v.n, e.n);
    }
}

/* q = a / m; r = a - q*m  (u64; m a register or an immediate) */
static void emit_divmod(dk *s, preg q, preg r, preg a, const char *m)
{
    ptx_ins(s->b, "div.u64 %s, %s, %s", q.n, a.n, m);
    ptx_ins(s->b, "mul.lo.u64 %s, %s, %s", r.n, q.n, m);
    ptx_ins(s->b, "sub.u64 %s, %s, %s", r.n, a.n, r.n);
}

/* One tap:  if ((u64)u < T_in) acc += w[woff] * pre(x[xrow + u*tstep])
 * (u < 0 wraps to a huge unsigned value, so one compare tests both ends). */
static void emit_tap(dk *s, preg acc, preg u, preg xrow, const char *tstep, preg wp, long long woff)
{
    ptx_buf *b = s->b;
    preg in = ptx_reg(b, PTX_PRED), xa = ptx_reg(b, PTX_B64);
    preg xv = ptx_reg(b, PTX_F32), wv = ptx_reg(b, PTX_F32);
    plabel skip = ptx_label_new(b, "tap");
    ptx_ins(b, "setp.lt.u64 %s, %s, %s", in.n, u.n, s->tin.n);
    ptx_ins(b, "@!%s bra %s", in.n, skip.n);
    ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", xa.n, u.n, tstep, xrow.n);
    emit_load(s, xv, xa, s->d->x_type, 1);
    emit_act(s, xv, s->d->pre);
    ptx_ins(b, "ld.global.nc.f32 %s, [%s+%lld]", wv.n, wp.n, woff);
    ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc.n, wv.n, xv.n, acc.n);
    ptx_label(b, skip);
}

/* for k < K: tap(u0 + D*k, w[wp + 4k]) - unrolled up to UNROLL_K taps, else a loop */
static void emit_taps(dk *s, preg acc, preg u0, preg xrow, const char *tstep, preg wp)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    if (d->k <= UNROLL_K) {
        for (int k = 0; k < d->k; k++) {
            preg u = ptx_reg(b, PTX_B64);
            ptx_ins(b, "add.s64 %s, %s, %lld", u.n, u0.n, (long long)d->dilation * k);
            emit_tap(s, acc, u, xrow, tstep, wp, 4LL * k);
        }
        return;
    }
    preg u = ptx_reg(b, PTX_B64), wk = ptx_reg(b, PTX_B64), kc = ptx_reg(b, PTX_B32);
    preg more = ptx_reg(b, PTX_PRED);
    plabel lp = ptx_label_new(b, "k");
    ptx_ins(b, "mov.b64 %s, %s", u.n, u0.n);
    ptx_ins(b, "mov.b64 %s, %s", wk.n, wp.n);
    ptx_ins(b, "mov.u32 %s, 0", kc.n);
    ptx_label(b, lp);
    emit_tap(s, acc, u, xrow, tstep, wk, 0);
    ptx_ins(b, "add.s64 %s, %s, %d", u.n, u.n, d->dilation);
    ptx_ins(b, "add.u64 %s, %s, 4", wk.n, wk.n);
    ptx_ins(b, "add.u32 %s, %s, 1", kc.n, kc.n);
    ptx_ins(b, "setp.lt.u32 %s, %s, %d", more.n, kc.n, d->k);
    ptx_ins(b, "@%s bra %s", more.n, lp.n);
}

/* the kernel body into b */
static void emit_body(dk *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const long long cin = d->c_in, cout = d->c_out, K = d->k;
    char imm[32];

    ptx_section(b, "parameters");
    preg px = ptx_reg(b, PTX_B64), pw = ptx_reg(b, PTX_B64), pb = ptx_reg(b, PTX_B64);
    preg pa = ptx_reg(b, PTX_B64), py = ptx_reg(b, PTX_B64), abs = ptx_reg(b, PTX_B64);
    preg n32 = ptx_reg(b, PTX_B32), tin32 = ptx_reg(b, PTX_B32), tout32 = ptx_reg(b, PTX_B32);
    preg hasb = ptx_reg(b, PTX_PRED), hasa = ptx_reg(b, PTX_PRED);
    ptx_ins(b, "ld.param.u64 %s, [p_x]", px.n);
    ptx_ins(b, "ld.param.u64 %s, [p_w]", pw.n);
    ptx_ins(b, "ld.param.u64 %s, [p_b]", pb.n);
    ptx_ins(b, "ld.param.u64 %s, [p_add]", pa.n);
    ptx_ins(b, "ld.param.u64 %s, [p_y]", py.n);
    ptx_ins(b, "ld.param.u32 %s, [p_n]", n32.n);
    ptx_ins(b, "ld.param.u32 %s, [p_t_in]", tin32.n);
    ptx_ins(b, "ld.param.u32 %s, [p_t_out]", tout32.n);
    ptx_ins(b, "ld.param.u64 %s, [p_add_bs]", abs.n);
    ptx_ins(b, "setp.ne.u64 %s, %s, 0", hasb.n, pb.n);
    ptx_ins(b, "setp.ne.u64 %s, %s, 0", hasa.n, pa.n);
    const preg *gp[] = { &px, &pw, &pb, &pa, &py };
    for (size_t i = 0; i < sizeof gp / sizeof gp[0]; i++)
        ptx_ins(b, "cvta.to.global.u64 %s, %s", gp[i]->n, gp[i]->n);

    ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < N * C_out * T_out");
    preg i = ptx_reg(b, PTX_B64), tid = ptx_reg(b, PTX_B64), r32 = ptx_reg(b, PTX_B32);
    preg tout = ptx_reg(b, PTX_B64), total = ptx_reg(b, PTX_B64), out = ptx_reg(b, PTX_PRED);
    plabel done = ptx_label_new(b, "done");
    s->tin = ptx_reg(b, PTX_B64);
    ptx_ins(b, "mov.u32 %s, %%ctaid.x", r32.n);
    ptx_ins(b, "mul.wide.u32 %s, %s, %d", i.n, r32.n, WS_DIRECT_THREADS);
    ptx_ins(b, "mov.u32 %s, %%tid.x", r32.n);
    ptx_ins(b, "cvt.u64.u32 %s, %s", tid.n, r32.n);
    ptx_ins(b, "add.u64 %s, %s, %s", i.n, i.n, tid.n);
    ptx_ins(b, "cvt.u64.u32 %s, %s", tout.n, tout32.n);
    ptx_ins(b, "cvt.u64.u32 %s, %s", s->tin.n, tin32.n);
    ptx_ins(b, "mul.wide.u32 %s, %s, %s", total.n, n32.n, tout32.n);
    ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, total.n, cout);
    ptx_ins(b, "setp.ge.u64 %s, %s, %s", out.n, i.n, total.n);
    ptx_ins(b, "@%s bra %s", out.n, done.n);

    preg n = ptx_reg(b, PTX_B64), o = ptx_reg(b, PTX_B64), t = ptx_reg(b, PTX_B64);
    preg r = ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", cout);
    if (d->y_layout == WS_NCL) {
        ptx_comment(b, "y NCL: i = (n*C_out + o)*T_out + t");
        emit_divmod(s, r, t, i, tout.n);
        emit_divmod(s, n, o, r, imm);
    } else {
        ptx_comment(b, "y NLC: i = (n*T_out + t)*C_out + o");
        emit_divmod(s, r, o, i, imm);
        emit_divmod(s, n, t, r, tout.n);
    }

    ptx_section(b, "x rows of group g = o / Cog, w row of o, u0 = S*t - P_L");
    preg g = ptx_reg(b, PTX_B64), xrow = ptx_reg(b, PTX_B64), wp = ptx_reg(b, PTX_B64);
    preg u0 = ptx_reg(b, PTX_B64), jstep = ptx_reg(b, PTX_B64);
    char tstep[32];
    ptx_ins(b, "div.u64 %s, %s, %lld", g.n, o.n, s->cog);
    ptx_ins(b, "mul.lo.u64 %s, %s, %lld", g.n, g.n, s->cg);
    if (d->x_layout == WS_NCL) {
        ptx_comment(b, "x NCL: row (n, c) at ((n*C_in + c)*T_in)*%d bytes, times %d apart", s->xs, s->xs);
        ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", xrow.n, n.n, cin, g.n);
        ptx_ins(b, "mul.lo.u64 %s, %s, %s", xrow.n, xrow.n, s->tin.n);
        ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xrow.n, xrow.n, s->xs, px.n);
        ptx_ins(b, "mul.lo.u64 %s, %s, %d", jstep.n, s->tin.n, s->xs);
        snprintf(tstep, sizeof tstep, "%d", s->xs);
    } else {
        ptx_comment(b, "x NLC: row (n, c) at (n*T_in*C_in + c)*%d bytes, times %lld apart", s->xs,
                    cin * s->xs);
        ptx_ins(b, "mul.lo.u64 %s, %s, %s", xrow.n, n.n, s->tin.n);
        ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", xrow.n, xrow.n, cin, g.n);
        ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xrow.n, xrow.n, s->xs, px.n);
        ptx_ins(b, "mov.u64 %s, %d", jstep.n, s->xs);
        snprintf(tstep, sizeof tstep, "%lld", cin * s->xs);
    }
    ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", wp.n, o.n, s->cg * K * 4, pw.n);
    ptx_ins(b, "mul.lo.u64 %s, %s, %d", u0.n, t.n, d->stride);
    ptx_ins(b, "sub.s64 %s, %s, %d", u0.n, u0.n, d->pad_l);

    ptx_section(b, "acc = sum_j sum_k w[o,j,k] * pre(x[n, g*Cg + j, u0 + D*k]), j then k");
    preg acc = ptx_reg(b, PTX_F32);
    ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    if (s->cg == 1) {
        emit_taps(s, acc, u0, xrow, tstep, wp);
    } else {
        preg j = ptx_reg(b, PTX_B32), more = ptx_reg(b, PTX_PRED);
        plabel lp = ptx_label_new(b, "j");
        ptx_ins(b, "mov.u32 %s, 0", j.n);
        ptx_label(b, lp);
        emit_taps(s, acc, u0, xrow, tstep, wp);
        ptx_ins(b, "add.u64 %s, %s, %s", xrow.n, xrow.n, jstep.n);
        ptx_ins(b, "add.u64 %s, %s, %lld", wp.n, wp.n, K * 4);
        ptx_ins(b, "add.u32 %s, %s, 1", j.n, j.n);
        ptx_ins(b, "setp.lt.u32 %s, %s, %lld", more.n, j.n, s->cg);
        ptx_ins(b, "@%s bra %s", more.n, lp.n);
    }

    ptx_section(b, "z = acc + b[o] (b given); act; + add (given); store");
    plabel nob = ptx_label_new(b, "nobias"), noadd = ptx_label_new(b, "noadd");
    preg ba = ptx_reg(b, PTX_B64), bv = ptx_reg(b, PTX_F32);
    ptx_ins(b, "@!%s bra %s", hasb.n, nob.n);
    ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", ba.n, o.n, pb.n);
    ptx_ins(b, "ld.global.nc.f32 %s, [%s]", bv.n, ba.n);
    ptx_ins(b, "add.f32 %s, %s, %s", acc.n, acc.n, bv.n);
    ptx_label(b, nob);
    emit_act(s, acc, d->act);
    preg ai = ptx_reg(b, PTX_B64), aa = ptx_reg(b, PTX_B64), av = ptx_reg(b, PTX_F32);
    ptx_ins(b, "@!%s bra %s", hasa.n, noadd.n);
    ptx_comment(b, "add element n*add_bs + (i - n*C_out*T_out), read in y_type");
    ptx_ins(b, "mul.lo.u64 %s, %s, %s", ai.n, n.n, tout.n);
    ptx_ins(b, "mul.lo.u64 %s, %s, %lld", ai.n, ai.n, cout);
    ptx_ins(b, "sub.u64 %s, %s, %s", ai.n, i.n, ai.n);
    ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", ai.n, n.n, abs.n, ai.n);
    ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", aa.n, ai.n, s->ys, pa.n);
    emit_load(s, av, aa, d->y_type, 0);
    ptx_ins(b, "add.f32 %s, %s, %s", acc.n, acc.n, av.n);
    ptx_label(b, noadd);
    preg ya = ptx_reg(b, PTX_B64);
    ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", ya.n, i.n, s->ys, py.n);
    emit_store(s, ya, acc, d->y_type);
    ptx_label(b, done);
    ptx_ins(b, "ret");
}

char *ws_direct_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    if (d->op != WS_CONV_FWD) {
        ws_errf(err, "ws_direct_emit: op BWD has no direct GPU kernel yet");
        return NULL;
    }
    char name[WS_DIRECT_NAME_MAX];
    ws_direct_name(d, name);
    ptx_buf mod, kb;
    ptx_init(&mod);
    ptx_init(&kb);
    ptx_module_begin(&mod, cc_major, cc_minor, "whisper-stem conv engine: direct forward kernel");
    dk s = { .b = &kb, .d = d, .cg = d->c_in / d->groups, .cog = d->c_out / d->groups,
             .xs = d->x_type == WS_F32 ? 4 : 2, .ys = d->y_type == WS_F32 ? 4 : 2 };
    ptx_comment(&kb, "y[n,o,t] = act(b[o] + sum_j sum_k w[o,j,k] * pre(x[n, g*Cg+j, S*t + D*k - P_L])) + add");
    ptx_comment(&kb, "C_in %d C_out %d G %d K %d S %d D %d P_L %d; x %s %s, y %s %s; pre %s, act %s",
                d->c_in, d->c_out, d->groups, d->k, d->stride, d->dilation, d->pad_l,
                d->x_layout == WS_NCL ? "NCL" : "NLC", type_name(d->x_type),
                d->y_layout == WS_NCL ? "NCL" : "NLC", type_name(d->y_type), act_name(d->pre),
                act_name(d->act));
    emit_body(&s);
    ptx_kernel_end(&kb, &mod, name,
                   "\t.param .u64 p_x,\n\t.param .u64 p_w,\n\t.param .u64 p_b,\n"
                   "\t.param .u64 p_add,\n\t.param .u64 p_y,\n\t.param .u32 p_n,\n"
                   "\t.param .u32 p_t_in,\n\t.param .u32 p_t_out,\n\t.param .u64 p_add_bs",
                   WS_DIRECT_THREADS, 0);
    char why[160];
    char *text = ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_direct_emit(%s): %s", name, why);
    return text;
}

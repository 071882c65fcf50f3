/* ptx_dws.c - the emitter of the depthwise causal kernels with packed sequences and carried
 * states (ptx_dws.h: math, mapping, parameters). Each emit helper says in pseudo-C what it
 * writes. Emission is a pure function of the descriptor and the compute capability.
 * Tested by tests/test_ptx.c and tests/test_gpu_dws.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_act.h"
#include "ptx_dws.h"
#include "ptx_emit.h"
#include "ptx_epi.h"
#include "ptx_params.h"

/* Taps up to this many are unrolled; longer filters loop over k. */
#define UNROLL_K 16
/* .maxnreg of the _dw and _db entries: ptxas unrolls their loops over t and, left to itself,
 * caps them at 32 registers and spills (sm_80); 64 lets them unroll without */
#define REDUCE_REGS 64

/* part p's parameters are the table WS_PARAMS_DWS_FWD + p */
_Static_assert(WS_PARAMS_DWS_FINAL - WS_PARAMS_DWS_FWD == WS_DWS_FINAL &&
               WS_PARAMS_DWS_GZ - WS_PARAMS_DWS_FWD == WS_DWS_GZ &&
               WS_PARAMS_DWS_DX - WS_PARAMS_DWS_FWD == WS_DWS_DX &&
               WS_PARAMS_DWS_DINIT - WS_PARAMS_DWS_FWD == WS_DWS_DINIT &&
               WS_PARAMS_DWS_DW - WS_PARAMS_DWS_FWD == WS_DWS_DW &&
               WS_PARAMS_DWS_DB - WS_PARAMS_DWS_FWD == WS_DWS_DB, "ws_dws_part's order");

static const char *const PART_SUFFIX[WS_DWS_NPARTS] = { "fwd", "final", "gz", "dx", "dinit", "dw", "db" };

/* the kernel being written */
typedef struct {
    ptx_buf *b;
    const ws_conv_desc *d;
    long long C;
    int K, D, P;        /* taps, dilation, P_L = D*(K-1) */
    int xs, ys;         /* bytes per element of x (states, dx) and of y (add, dy) */
    preg T;             /* u64 T (T_in = T_out) */
    /* x_at's context (the rows of the thread's (n, c), set by the entry) */
    preg hasseq, noseq, hasinit;
    preg xrow;          /* x[n,c,p] at xrow + p*pstep */
    long long pstep;
    preg srow;          /* seq_idx[n][p] at srow + 4p */
    preg irow;          /* initial_states[n][c][j] at irow + j*xs */
    preg st;            /* s32: seq_idx[n][t] of the output (0 when not given) */
} ds;

int ws_dws_fits(const ws_conv_desc *d)
{
    if (!d || ws_conv_check(d, NULL))
        return 0;
    return d->groups == d->c_in && d->c_out == d->c_in && d->stride == 1 && d->pad_r == 0 &&
           (long long)d->pad_l == (long long)d->dilation * (d->k - 1);
}

int ws_dws_has_part(const ws_conv_desc *d, ws_dws_part part)
{
    if ((unsigned)part >= WS_DWS_NPARTS)
        return 0;
    return d->op == WS_CONV_BWD ? part >= WS_DWS_GZ : part < WS_DWS_GZ;
}

static const char *layout_name(ws_layout l)
{
    return l == WS_NCL ? "ncl" : "nlc";
}

void ws_dws_name(const ws_conv_desc *d, char name[WS_DWS_NAME_MAX])
{
    char lay[16];
    if (d->x_layout == d->y_layout)
        snprintf(lay, sizeof lay, "%s", layout_name(d->x_layout));
    else
        snprintf(lay, sizeof lay, "%s_%s", layout_name(d->x_layout), layout_name(d->y_layout));
    snprintf(name, WS_DWS_NAME_MAX, "ws_dws_%s_c%d_k%d_d%d_%s_%s_%s_%s_%s",
             d->op == WS_CONV_BWD ? "bwd" : "fwd", d->c_in, d->k, d->dilation, lay,
             ws_ptx_type_name(d->x_type), ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre),
             ws_ptx_act_name(d->act));
}

void ws_dws_entry(const ws_conv_desc *d, ws_dws_part part, char name[WS_DWS_NAME_MAX])
{
    ws_dws_name(d, name); /* at most ~80 characters: room for the suffix */
    const size_t len = strlen(name);
    snprintf(name + len, WS_DWS_NAME_MAX - len, "_%s",
             (unsigned)part < WS_DWS_NPARTS ? PART_SUFFIX[part] : "?");
}

unsigned long long ws_dws_elements(const ws_conv_desc *d, ws_dws_part part, int n, int t)
{
    if (!ws_dws_has_part(d, part) || n < 1 || t < 1)
        return 0;
    const unsigned long long N = (unsigned long long)n, C = (unsigned long long)d->c_in;
    const unsigned long long K = (unsigned long long)d->k;
    switch (part) {
    case WS_DWS_FWD: case WS_DWS_GZ: case WS_DWS_DX: return N * C * (unsigned long long)t;
    case WS_DWS_FINAL: return N * C;
    case WS_DWS_DINIT: return N * C * (K - 1);
    case WS_DWS_DW: return C * K;
    case WS_DWS_DB: return C;
    default: return 0;
    }
}

/* ---- small pieces ---- */

/* r[i] = t's parameter i, for every parameter of t in order: ld.param into a fresh %rd
 * (.u64) or %r (.u32) register */
static void load_params(ptx_buf *b, const ws_params *t, preg *r)
{
    ws_ptx_section(b, "parameters");
    for (int i = 0; i < t->n; i++) {
        r[i] = ws_ptx_reg(b, t->p[i].type == WS_PTYPE_U64 ? PTX_B64 : PTX_B32);
        ws_ptx_ld_param(b, r[i], t, i);
    }
}

/* f = (p != 0) for a pointer p; then p = cvta.to.global(p) */
static preg flag_of(ptx_buf *b, preg p)
{
    preg f = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", f.n, p.n);
    return f;
}

static void to_global(ptx_buf *b, preg p)
{
    ws_ptx_ins(b, "cvta.to.global.u64 %s, %s", p.n, p.n);
}

/* (u64) a .u32 register */
static preg widen(ptx_buf *b, preg r32)
{
    preg r = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", r.n, r32.n);
    return r;
}

/* q = a / m; r = a - q*m  (u64; m a register or an immediate) */
static void divmod(ptx_buf *b, preg q, preg r, preg a, const char *m)
{
    ws_ptx_ins(b, "div.u64 %s, %s, %s", q.n, a.n, m);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", r.n, q.n, m);
    ws_ptx_ins(b, "sub.u64 %s, %s, %s", r.n, a.n, r.n);
}

/* i = ctaid.x * WS_DWS_THREADS + tid.x; if (i >= total) goto done */
static preg thread_index(ptx_buf *b, preg total, plabel done)
{
    preg i = ws_ptx_reg(b, PTX_B64), tid = ws_ptx_reg(b, PTX_B64), r32 = ws_ptx_reg(b, PTX_B32);
    preg out = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "mov.u32 %s, %%ctaid.x", r32.n);
    ws_ptx_ins(b, "mul.wide.u32 %s, %s, %d", i.n, r32.n, WS_DWS_THREADS);
    ws_ptx_ins(b, "mov.u32 %s, %%tid.x", r32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tid.n, r32.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", i.n, i.n, tid.n);
    ws_ptx_ins(b, "setp.ge.u64 %s, %s, %s", out.n, i.n, total.n);
    ws_ptx_ins(b, "@%s bra %s", out.n, done.n);
    return i;
}

/* (n, c, t) of element i of an [N][C][T] tensor in layout l:
 * NCL i = (n*C + c)*T + t, NLC i = (n*T + t)*C + c */
static void decode(ds *s, ws_layout l, preg i, preg n, preg c, preg t)
{
    ptx_buf *b = s->b;
    char imm[32];
    preg r = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", s->C);
    if (l == WS_NCL) {
        ws_ptx_comment(b, "NCL: i = (n*C + c)*T + t");
        divmod(b, r, t, i, s->T.n);
        divmod(b, n, c, r, imm);
    } else {
        ws_ptx_comment(b, "NLC: i = (n*T + t)*C + c");
        divmod(b, r, c, i, imm);
        divmod(b, n, t, r, s->T.n);
    }
}

/* row of (n, c) in an [N][C][T] tensor of layout l and es-byte elements at base: returns
 * the address of element (n, c, 0); *step = bytes between consecutive t */
static preg row_of(ds *s, ws_layout l, preg base, preg n, preg c, int es, long long *step)
{
    ptx_buf *b = s->b;
    preg row = ws_ptx_reg(b, PTX_B64);
    if (l == WS_NCL) {
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", row.n, n.n, s->C, c.n);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", row.n, row.n, s->T.n);
        *step = es;
    } else {
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", row.n, n.n, s->T.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", row.n, row.n, s->C, c.n);
        *step = s->C * es;
    }
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", row.n, row.n, es, base.n);
    return row;
}

/* v = (float)(okx ? x at xa : oki ? x_type at ia : 0): raw loads of x_type (.nc: the
 * read-only path), one conversion */
static preg load_either(ds *s, preg okx, preg xa, preg oki, preg ia, int nc)
{
    ptx_buf *b = s->b;
    const ws_dtype t = s->d->x_type;
    const char *sp = nc ? "global.nc" : "global";
    preg v = ws_ptx_reg(b, PTX_F32);
    if (t == WS_F32) {
        ws_ptx_ins(b, "mov.f32 %s, 0f00000000", v.n);
        ws_ptx_ins(b, "@%s ld.%s.f32 %s, [%s]", okx.n, sp, v.n, xa.n);
        ws_ptx_ins(b, "@%s ld.%s.f32 %s, [%s]", oki.n, sp, v.n, ia.n);
    } else if (t == WS_F16) {
        preg h = ws_ptx_reg(b, PTX_B16);
        ws_ptx_ins(b, "mov.b16 %s, 0", h.n);
        ws_ptx_ins(b, "@%s ld.%s.b16 %s, [%s]", okx.n, sp, h.n, xa.n);
        ws_ptx_ins(b, "@%s ld.%s.b16 %s, [%s]", oki.n, sp, h.n, ia.n);
        ws_ptx_ins(b, "cvt.f32.f16 %s, %s", v.n, h.n);
    } else { /* bf16: the top half of the float32 */
        preg r = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ins(b, "mov.b32 %s, 0", r.n);
        ws_ptx_ins(b, "@%s ld.%s.u16 %s, [%s]", okx.n, sp, r.n, xa.n);
        ws_ptx_ins(b, "@%s ld.%s.u16 %s, [%s]", oki.n, sp, r.n, ia.n);
        ws_ptx_ins(b, "shl.b32 %s, %s, 16", r.n, r.n);
        ws_ptx_ins(b, "mov.b32 %s, %s", v.n, r.n);
    }
    return v;
}

/* v = x_at(p) as float32 (ptx_dws.h), p an s64 register, with the rows and the output's
 * seq_idx of s:
 *   okx = p >= 0 && (!hasseq || seq[srow + 4p] == st)
 *   oki = p < 0 && hasinit && p + K-1 >= 0
 *   v = okx ? x[xrow + p*pstep] : oki ? init[irow + (p + K-1)*xs] : 0 */
static preg x_at(ds *s, preg p)
{
    ptx_buf *b = s->b;
    preg pos = ws_ptx_reg(b, PTX_PRED), ldq = ws_ptx_reg(b, PTX_PRED), okx = ws_ptx_reg(b, PTX_PRED);
    preg oki = ws_ptx_reg(b, PTX_PRED), sa = ws_ptx_reg(b, PTX_B64), sp = ws_ptx_reg(b, PTX_B32);
    preg j = ws_ptx_reg(b, PTX_B64), xa = ws_ptx_reg(b, PTX_B64), ia = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "setp.ge.s64 %s, %s, 0", pos.n, p.n);
    ws_ptx_ins(b, "and.pred %s, %s, %s", ldq.n, pos.n, s->hasseq.n);
    ws_ptx_ins(b, "mad.lo.s64 %s, %s, 4, %s", sa.n, p.n, s->srow.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", sp.n);
    ws_ptx_ins(b, "@%s ld.global.nc.u32 %s, [%s]", ldq.n, sp.n, sa.n);
    ws_ptx_ins(b, "setp.eq.or.s32 %s, %s, %s, %s", okx.n, sp.n, s->st.n, s->noseq.n);
    ws_ptx_ins(b, "and.pred %s, %s, %s", okx.n, okx.n, pos.n);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", j.n, p.n, s->K - 1);
    ws_ptx_ins(b, "setp.lt.and.s64 %s, %s, 0, %s", oki.n, p.n, s->hasinit.n);
    ws_ptx_ins(b, "setp.ge.and.s64 %s, %s, 0, %s", oki.n, j.n, oki.n);
    ws_ptx_ins(b, "mad.lo.s64 %s, %s, %lld, %s", xa.n, p.n, s->pstep, s->xrow.n);
    ws_ptx_ins(b, "mad.lo.s64 %s, %s, %d, %s", ia.n, j.n, s->xs, s->irow.n);
    return load_either(s, okx, xa, oki, ia, 1);
}

/* one tap at position q (s64) with its weight at [wa + woff] */
typedef void (*tap_fn)(ds *s, preg q, preg wa, long long woff, void *ctx);

/* for k < K: fn(q0 + step*k, w at wrow + 4k), in the order k: unrolled up to UNROLL_K taps,
 * else a loop */
static void over_taps(ds *s, preg q0, long long step, preg wrow, tap_fn fn, void *ctx)
{
    ptx_buf *b = s->b;
    if (s->K <= UNROLL_K) {
        for (int k = 0; k < s->K; k++) {
            preg q = ws_ptx_reg(b, PTX_B64);
            ws_ptx_ins(b, "add.s64 %s, %s, %lld", q.n, q0.n, step * k);
            fn(s, q, wrow, 4LL * k, ctx);
        }
        return;
    }
    preg q = ws_ptx_reg(b, PTX_B64), wk = ws_ptx_reg(b, PTX_B64), kc = ws_ptx_reg(b, PTX_B32);
    preg more = ws_ptx_reg(b, PTX_PRED);
    plabel lp = ws_ptx_label_new(b, "k");
    ws_ptx_ins(b, "mov.b64 %s, %s", q.n, q0.n);
    ws_ptx_ins(b, "mov.b64 %s, %s", wk.n, wrow.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", kc.n);
    ws_ptx_label(b, lp);
    fn(s, q, wk, 0, ctx);
    ws_ptx_ins(b, "add.s64 %s, %s, %lld", q.n, q.n, step);
    ws_ptx_ins(b, "add.u64 %s, %s, 4", wk.n, wk.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", kc.n, kc.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %d", more.n, kc.n, s->K);
    ws_ptx_ins(b, "@%s bra %s", more.n, lp.n);
}

/* the forward / gz sum's tap */
typedef struct {
    preg acc;
    ws_act pre; /* applied to x as read (FWD) */
    int split;  /* mul.rn then add.rn (the gz of RELU), else fma */
} sum_ctx;

/* acc += w * pre(x_at(p)) */
static void sum_tap(ds *s, preg p, preg wa, long long woff, void *ctx)
{
    ptx_buf *b = s->b;
    const sum_ctx *c = ctx;
    preg v = x_at(s, p), wv = ws_ptx_reg(b, PTX_F32);
    ws_ptx_act(b, v, c->pre);
    ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s+%lld]", wv.n, wa.n, woff);
    if (c->split) {
        ws_ptx_ins(b, "mul.rn.f32 %s, %s, %s", v.n, wv.n, v.n);
        ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", c->acc.n, c->acc.n, v.n);
    } else {
        ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", c->acc.n, wv.n, v.n, c->acc.n);
    }
}

/* the gz sum's tap of dx / dinit */
typedef struct {
    preg acc;
    preg grow;      /* gz[n,c,t] at grow + t*gstep */
    long long gstep;
    preg srow, sp;  /* dx: seq_idx row and the position's seq_idx (s32) */
    int seq;        /* dx: match seq_idx[n][t] with sp */
} grad_ctx;

/* t = q; ok = (u64)t < T (&& (!hasseq || seq[t] == sp)); acc += w * (ok ? gz[t] : 0) */
static void grad_tap(ds *s, preg t, preg wa, long long woff, void *ctx)
{
    ptx_buf *b = s->b;
    const grad_ctx *c = ctx;
    preg ok = ws_ptx_reg(b, PTX_PRED), ga = ws_ptx_reg(b, PTX_B64);
    preg gv = ws_ptx_reg(b, PTX_F32), wv = ws_ptx_reg(b, PTX_F32);
    ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", ok.n, t.n, s->T.n);
    if (c->seq) {
        preg ldq = ws_ptx_reg(b, PTX_PRED), sa = ws_ptx_reg(b, PTX_B64), sq = ws_ptx_reg(b, PTX_B32);
        preg m = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_ins(b, "and.pred %s, %s, %s", ldq.n, ok.n, s->hasseq.n);
        ws_ptx_ins(b, "mad.lo.s64 %s, %s, 4, %s", sa.n, t.n, c->srow.n);
        ws_ptx_ins(b, "mov.u32 %s, 0", sq.n);
        ws_ptx_ins(b, "@%s ld.global.nc.u32 %s, [%s]", ldq.n, sq.n, sa.n);
        ws_ptx_ins(b, "setp.eq.or.s32 %s, %s, %s, %s", m.n, sq.n, c->sp.n, s->noseq.n);
        ws_ptx_ins(b, "and.pred %s, %s, %s", ok.n, ok.n, m.n);
    }
    ws_ptx_ins(b, "mad.lo.s64 %s, %s, %lld, %s", ga.n, t.n, c->gstep, c->grow.n);
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", gv.n);
    ws_ptx_ins(b, "@%s ld.global.f32 %s, [%s]", ok.n, gv.n, ga.n);
    ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s+%lld]", wv.n, wa.n, woff);
    ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", c->acc.n, wv.n, gv.n, c->acc.n);
}

/* hasseq / noseq / hasinit from the raw pointers, st = 0 */
static void flags(ds *s, preg seq, preg init)
{
    ptx_buf *b = s->b;
    s->hasseq = flag_of(b, seq);
    s->noseq = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "not.pred %s, %s", s->noseq.n, s->hasseq.n);
    s->hasinit = flag_of(b, init);
}

/* total = N*C*T (u64) */
static preg total_nct(ds *s, preg n)
{
    preg total = ws_ptx_reg(s->b, PTX_B64);
    ws_ptx_ins(s->b, "mul.lo.u64 %s, %s, %s", total.n, n.n, s->T.n);
    ws_ptx_ins(s->b, "mul.lo.u64 %s, %s, %lld", total.n, total.n, s->C);
    return total;
}

/* x_at's rows for (n, c): xrow, srow = seq + 4*n*T, irow = init + (n*C + c)*(K-1)*xs */
static void rows_for(ds *s, preg n, preg c, preg px, preg pseq, preg pinit)
{
    ptx_buf *b = s->b;
    s->xrow = row_of(s, s->d->x_layout, px, n, c, s->xs, &s->pstep);
    s->srow = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", s->srow.n, n.n, s->T.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", s->srow.n, s->srow.n, pseq.n);
    s->irow = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", s->irow.n, n.n, s->C, c.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", s->irow.n, s->irow.n, (long long)(s->K - 1) * s->xs,
               pinit.n);
}

/* st = hasseq ? seq[srow + 4t] : 0; if (st < 0) goto pad */
static void seq_of_output(ds *s, preg t, plabel pad)
{
    ptx_buf *b = s->b;
    preg sa = ws_ptx_reg(b, PTX_B64), neg = ws_ptx_reg(b, PTX_PRED);
    s->st = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", sa.n, t.n, s->srow.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", s->st.n);
    ws_ptx_ins(b, "@%s ld.global.nc.u32 %s, [%s]", s->hasseq.n, s->st.n, sa.n);
    ws_ptx_ins(b, "setp.lt.s32 %s, %s, 0", neg.n, s->st.n);
    ws_ptx_ins(b, "@%s bra %s", neg.n, pad.n);
}

/* *(type *)(base + i*es) = 0 */
static void store_zero(ptx_buf *b, preg base, preg i, int es, ws_dtype t)
{
    preg a = ws_ptx_reg(b, PTX_B64), z = ws_ptx_reg(b, PTX_F32);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", a.n, i.n, es, base.n);
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", z.n);
    ws_ptx_store(b, a, z, t);
}

/* ---- forward ---- */

/* y[i] = act(b[c] + sum_k w[c,k] * pre(x_at(n, c, t, t + D*k - P_L))) + add; 0 at padding */
static void emit_fwd(ds *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const ws_params *pt = ws_params_of(WS_PARAMS_DWS_FWD);
    preg r[WS_PARAMS_MAX];
    load_params(b, pt, r);
    preg px = r[WS_DSFWD_X], pw = r[WS_DSFWD_W], pb = r[WS_DSFWD_B], pa = r[WS_DSFWD_ADD];
    preg py = r[WS_DSFWD_Y], pseq = r[WS_DSFWD_SEQ], pinit = r[WS_DSFWD_INIT], abs = r[WS_DSFWD_ADD_BS];
    preg hasb = flag_of(b, pb), hasa = flag_of(b, pa);
    flags(s, pseq, pinit);
    const preg gp[] = { px, pw, pb, pa, py, pseq, pinit };
    for (size_t k = 0; k < sizeof gp / sizeof gp[0]; k++)
        to_global(b, gp[k]);
    preg nn = widen(b, r[WS_DSFWD_N]);
    s->T = widen(b, r[WS_DSFWD_T]);

    ws_ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < N * C * T (y's index)");
    plabel done = ws_ptx_label_new(b, "done"), pad = ws_ptx_label_new(b, "pad");
    preg total = total_nct(s, nn);
    preg i = thread_index(b, total, done);
    preg n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64), t = ws_ptx_reg(b, PTX_B64);
    decode(s, d->y_layout, i, n, c, t);

    ws_ptx_section(b, "rows of (n, c): x, seq_idx, initial_states; st = seq_idx[n][t] (< 0: padding)");
    rows_for(s, n, c, px, pseq, pinit);
    seq_of_output(s, t, pad);

    ws_ptx_section(b, "acc = sum_k w[c,k] * pre(x_at(t - P_L + D*k)), fma in the order k");
    preg wrow = ws_ptx_reg(b, PTX_B64), p0 = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", wrow.n, c.n, s->K * 4, pw.n);
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", p0.n, t.n, s->P);
    sum_ctx sc = { .acc = ws_ptx_reg(b, PTX_F32), .pre = d->pre, .split = 0 };
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", sc.acc.n);
    over_taps(s, p0, s->D, wrow, sum_tap, &sc);

    ws_ptx_section(b, "acc + b[c] (b given); act; + add (given); store");
    preg ai = ws_ptx_reg(b, PTX_B64);
    ws_ptx_comment(b, "add element n*add_bs + (i - n*C*T), read in y_type");
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", ai.n, n.n, s->T.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", ai.n, ai.n, s->C);
    ws_ptx_ins(b, "sub.u64 %s, %s, %s", ai.n, i.n, ai.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", ai.n, n.n, abs.n, ai.n);
    const ws_ptx_epi ep = {
        .act = d->act, .y_type = d->y_type, .n = 1, .v = &sc.acc,
        .bias_at = {.index = c, .base = pb, .scale = 4}, .bias_if = hasb,
        .add_if = hasa, .add = {.index = ai, .base = pa, .scale = s->ys},
        .y = {.index = i, .base = py, .scale = s->ys}};
    ws_ptx_epi_emit(b, &ep);
    ws_ptx_ins(b, "bra %s", done.n);

    ws_ptx_section(b, "padding: y[i] = 0");
    ws_ptx_label(b, pad);
    store_zero(b, py, i, s->ys, d->y_type);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* final[n][c][j] = raw input at q = T - (K-1) + j: x[n,c,q] (q >= 0), else init[n][c][T + j]
 * (given), else 0; one thread per (n, c), j increasing (in place over init) */
static void emit_final(ds *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const ws_params *pt = ws_params_of(WS_PARAMS_DWS_FINAL);
    preg r[WS_PARAMS_MAX];
    load_params(b, pt, r);
    preg px = r[WS_DSFIN_X], pinit = r[WS_DSFIN_INIT], pfin = r[WS_DSFIN_FINAL];
    preg hasinit = flag_of(b, pinit);
    to_global(b, px), to_global(b, pinit), to_global(b, pfin);
    preg nn = widen(b, r[WS_DSFIN_N]);
    s->T = widen(b, r[WS_DSFIN_T]);
    const int S = s->K - 1;

    ws_ptx_section(b, "i = n*C + c < N * C (none when K = 1)");
    plabel done = ws_ptx_label_new(b, "done");
    preg total = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, nn.n, S ? s->C : 0);
    preg i = thread_index(b, total, done);
    preg n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64);
    char imm[32];
    snprintf(imm, sizeof imm, "%lld", s->C);
    divmod(b, n, c, i, imm);

    ws_ptx_section(b, "rows: x of (n, c); initial_states and final_states of (n, c) at i*(K-1)*xs");
    long long pstep;
    preg xrow = row_of(s, d->x_layout, px, n, c, s->xs, &pstep);
    preg irow = ws_ptx_reg(b, PTX_B64), fa = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", irow.n, i.n, (long long)(S ? S : 1) * s->xs, pinit.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", fa.n, i.n, (long long)(S ? S : 1) * s->xs, pfin.n);

    ws_ptx_section(b, "for j < K-1: q = T - (K-1) + j; final[j] = q >= 0 ? x[q] : init ? init[q + K-1] : 0");
    preg q = ws_ptx_reg(b, PTX_B64), j = ws_ptx_reg(b, PTX_B32), more = ws_ptx_reg(b, PTX_PRED);
    preg okx = ws_ptx_reg(b, PTX_PRED), oki = ws_ptx_reg(b, PTX_PRED);
    preg xa = ws_ptx_reg(b, PTX_B64), ia = ws_ptx_reg(b, PTX_B64);
    const int wide = d->x_type == WS_F32;
    preg raw = ws_ptx_reg(b, wide ? PTX_B32 : PTX_B16);
    const char *bt = wide ? "b32" : "b16";
    plabel lp = ws_ptx_label_new(b, "j");
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", q.n, s->T.n, S);
    ws_ptx_ins(b, "mov.u32 %s, 0", j.n);
    ws_ptx_label(b, lp);
    ws_ptx_ins(b, "setp.ge.s64 %s, %s, 0", okx.n, q.n);
    ws_ptx_ins(b, "setp.lt.and.s64 %s, %s, 0, %s", oki.n, q.n, hasinit.n);
    ws_ptx_ins(b, "mad.lo.s64 %s, %s, %lld, %s", xa.n, q.n, pstep, xrow.n);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", ia.n, q.n, S);
    ws_ptx_ins(b, "mad.lo.s64 %s, %s, %d, %s", ia.n, ia.n, s->xs, irow.n);
    ws_ptx_ins(b, "mov.%s %s, 0", bt, raw.n);
    ws_ptx_ins(b, "@%s ld.global.%s %s, [%s]", okx.n, bt, raw.n, xa.n);
    ws_ptx_ins(b, "@%s ld.global.%s %s, [%s]", oki.n, bt, raw.n, ia.n);
    ws_ptx_ins(b, "st.global.%s [%s], %s", bt, fa.n, raw.n);
    ws_ptx_ins(b, "add.s64 %s, %s, 1", q.n, q.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %d", fa.n, fa.n, s->xs);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", j.n, j.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %d", more.n, j.n, S);
    ws_ptx_ins(b, "@%s bra %s", more.n, lp.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* ---- backward ---- */

/* gz[i] = dy[i] * act'(b[c] + sum_k w[c,k] * x_at(...)); 0 at padding */
static void emit_gz(ds *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const ws_params *pt = ws_params_of(WS_PARAMS_DWS_GZ);
    preg r[WS_PARAMS_MAX];
    load_params(b, pt, r);
    preg px = r[WS_DSGZ_X], pw = r[WS_DSGZ_W], pb = r[WS_DSGZ_B], pdy = r[WS_DSGZ_DY];
    preg pseq = r[WS_DSGZ_SEQ], pinit = r[WS_DSGZ_INIT], pgz = r[WS_DSGZ_GZ];
    preg hasb = flag_of(b, pb);
    flags(s, pseq, pinit);
    const preg gp[] = { px, pw, pb, pdy, pseq, pinit, pgz };
    for (size_t k = 0; k < sizeof gp / sizeof gp[0]; k++)
        to_global(b, gp[k]);
    preg nn = widen(b, r[WS_DSGZ_N]);
    s->T = widen(b, r[WS_DSGZ_T]);

    ws_ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < N * C * T (dy's and gz's index)");
    plabel done = ws_ptx_label_new(b, "done"), pad = ws_ptx_label_new(b, "pad");
    preg total = total_nct(s, nn);
    preg i = thread_index(b, total, done);
    preg n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64), t = ws_ptx_reg(b, PTX_B64);
    decode(s, d->y_layout, i, n, c, t);

    ws_ptx_section(b, "rows of (n, c): x, seq_idx, initial_states; st = seq_idx[n][t] (< 0: padding)");
    rows_for(s, n, c, px, pseq, pinit);
    seq_of_output(s, t, pad);

    preg g = ws_ptx_reg(b, PTX_F32), ya = ws_ptx_reg(b, PTX_B64);
    if (d->act != WS_ACT_NONE) {
        ws_ptx_section(b, "z = sum_k w[c,k] * x_at(t - P_L + D*k) in the order k (+ b[c])");
        preg wrow = ws_ptx_reg(b, PTX_B64), p0 = ws_ptx_reg(b, PTX_B64);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", wrow.n, c.n, s->K * 4, pw.n);
        ws_ptx_ins(b, "sub.s64 %s, %s, %d", p0.n, t.n, s->P);
        sum_ctx sc = { .acc = ws_ptx_reg(b, PTX_F32), .pre = WS_ACT_NONE,
                       .split = d->act == WS_ACT_RELU };
        ws_ptx_ins(b, "mov.f32 %s, 0f00000000", sc.acc.n);
        over_taps(s, p0, s->D, wrow, sum_tap, &sc);
        preg ba = ws_ptx_reg(b, PTX_B64), bv = ws_ptx_reg(b, PTX_F32);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", ba.n, c.n, pb.n);
        ws_ptx_ins(b, "mov.f32 %s, 0f00000000", bv.n);
        ws_ptx_ins(b, "@%s ld.global.nc.f32 %s, [%s]", hasb.n, bv.n, ba.n);
        ws_ptx_ins(b, "@%s add.rn.f32 %s, %s, %s", hasb.n, sc.acc.n, sc.acc.n, bv.n);
        ws_ptx_section(b, "g = dy * act'(z)");
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", ya.n, i.n, s->ys, pdy.n);
        ws_ptx_load(b, g, ya, d->y_type, 1);
        ws_ptx_act_grad(b, d->act, g, sc.acc);
    } else {
        (void)pw, (void)hasb;
        ws_ptx_section(b, "g = dy (act NONE: act' = 1, z not needed)");
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", ya.n, i.n, s->ys, pdy.n);
        ws_ptx_load(b, g, ya, d->y_type, 1);
    }
    ws_ptx_section(b, "gz[i] = g");
    preg ga = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", ga.n, i.n, pgz.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", ga.n, g.n);
    ws_ptx_ins(b, "bra %s", done.n);

    ws_ptx_section(b, "padding: gz[i] = 0");
    ws_ptx_label(b, pad);
    store_zero(b, pgz, i, 4, WS_F32);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* gz row of (n, c) (gz in y_layout, float32) into c->grow, c->gstep */
static void gz_row(ds *s, grad_ctx *g, preg pgz, preg n, preg c)
{
    g->grow = row_of(s, s->d->y_layout, pgz, n, c, 4, &g->gstep);
}

/* dx[n,c,p] = sum_k w[c,k] * gz[n,c,p + P_L - D*k] over the taps in [0, T) of p's
 * sequence; 0 at padding */
static void emit_dx(ds *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const ws_params *pt = ws_params_of(WS_PARAMS_DWS_DX);
    preg r[WS_PARAMS_MAX];
    load_params(b, pt, r);
    preg pw = r[WS_DSDX_W], pgz = r[WS_DSDX_GZ], pseq = r[WS_DSDX_SEQ], pdx = r[WS_DSDX_DX];
    s->hasseq = flag_of(b, pseq);
    s->noseq = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "not.pred %s, %s", s->noseq.n, s->hasseq.n);
    to_global(b, pw), to_global(b, pgz), to_global(b, pseq), to_global(b, pdx);
    preg nn = widen(b, r[WS_DSDX_N]);
    s->T = widen(b, r[WS_DSDX_T]);

    ws_ptx_section(b, "i = blockIdx.x * 256 + threadIdx.x < N * C * T (dx's index)");
    plabel done = ws_ptx_label_new(b, "done"), pad = ws_ptx_label_new(b, "pad");
    preg total = total_nct(s, nn);
    preg i = thread_index(b, total, done);
    preg n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64), p = ws_ptx_reg(b, PTX_B64);
    decode(s, d->x_layout, i, n, c, p);

    ws_ptx_section(b, "sp = seq_idx[n][p] (< 0: padding); gz row of (n, c); v0 = p + P_L");
    grad_ctx gc = { .acc = ws_ptx_reg(b, PTX_F32), .seq = 1 };
    gc.srow = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", gc.srow.n, n.n, s->T.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", gc.srow.n, gc.srow.n, pseq.n);
    s->srow = gc.srow;
    seq_of_output(s, p, pad);
    gc.sp = s->st;
    gz_row(s, &gc, pgz, n, c);
    preg wrow = ws_ptx_reg(b, PTX_B64), v0 = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", wrow.n, c.n, s->K * 4, pw.n);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", v0.n, p.n, s->P);

    ws_ptx_section(b, "acc = sum_k w[c,k] * gz[n,c,v0 - D*k] (t < T, same sequence), fma in the order k");
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", gc.acc.n);
    over_taps(s, v0, -(long long)s->D, wrow, grad_tap, &gc);
    ws_ptx_section(b, "dx[i] = acc in x_type");
    preg xa = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xa.n, i.n, s->xs, pdx.n);
    ws_ptx_store(b, xa, gc.acc, d->x_type);
    ws_ptx_ins(b, "bra %s", done.n);

    ws_ptx_section(b, "padding: dx[i] = 0");
    ws_ptx_label(b, pad);
    store_zero(b, pdx, i, s->xs, d->x_type);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* dinit[n][c][j] = sum_k w[c,k] * gz[n,c,j - (K-1) + P_L - D*k] over the taps in [0, T) */
static void emit_dinit(ds *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const ws_params *pt = ws_params_of(WS_PARAMS_DWS_DINIT);
    preg r[WS_PARAMS_MAX];
    load_params(b, pt, r);
    preg pw = r[WS_DSDI_W], pgz = r[WS_DSDI_GZ], pdi = r[WS_DSDI_DINIT];
    to_global(b, pw), to_global(b, pgz), to_global(b, pdi);
    preg nn = widen(b, r[WS_DSDI_N]);
    s->T = widen(b, r[WS_DSDI_T]);
    const int S = s->K - 1;
    char imm[32];

    ws_ptx_section(b, "i = (n*C + c)*(K-1) + j < N * C * (K-1) (none when K = 1)");
    plabel done = ws_ptx_label_new(b, "done");
    preg total = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, nn.n, s->C * S);
    preg i = thread_index(b, total, done);
    preg n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64), j = ws_ptx_reg(b, PTX_B64);
    preg rr = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%d", S ? S : 1);
    divmod(b, rr, j, i, imm);
    snprintf(imm, sizeof imm, "%lld", s->C);
    divmod(b, n, c, rr, imm);

    ws_ptx_section(b, "gz row of (n, c); v0 = j - (K-1) + P_L");
    grad_ctx gc = { .acc = ws_ptx_reg(b, PTX_F32), .seq = 0 };
    gz_row(s, &gc, pgz, n, c);
    preg wrow = ws_ptx_reg(b, PTX_B64), v0 = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", wrow.n, c.n, s->K * 4, pw.n);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", v0.n, j.n, s->P - S);

    ws_ptx_section(b, "acc = sum_k w[c,k] * gz[n,c,v0 - D*k] (0 <= t < T), fma in the order k");
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", gc.acc.n);
    over_taps(s, v0, -(long long)s->D, wrow, grad_tap, &gc);
    ws_ptx_section(b, "dinit[i] = acc in x_type");
    preg da = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", da.n, i.n, s->xs, pdi.n);
    ws_ptx_store(b, da, gc.acc, d->x_type);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* dw[c*K + k] = sum_n sum_t gz[n,c,t] * x_at(n, c, t, t + D*k - P_L)  (fma, n then t) */
static void emit_dw(ds *s)
{
    ptx_buf *b = s->b;
    const ws_params *pt = ws_params_of(WS_PARAMS_DWS_DW);
    preg r[WS_PARAMS_MAX];
    load_params(b, pt, r);
    preg px = r[WS_DSDW_X], pgz = r[WS_DSDW_GZ], pseq = r[WS_DSDW_SEQ], pinit = r[WS_DSDW_INIT];
    preg pdw = r[WS_DSDW_DW], n32 = r[WS_DSDW_N], t32 = r[WS_DSDW_T];
    flags(s, pseq, pinit);
    to_global(b, px), to_global(b, pgz), to_global(b, pseq), to_global(b, pinit), to_global(b, pdw);
    s->T = widen(b, t32);
    char imm[32];

    ws_ptx_section(b, "i = k*C + c < C * K (consecutive threads, consecutive channels)");
    plabel done = ws_ptx_label_new(b, "done");
    preg total = ws_ptx_reg(b, PTX_B64), k = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mov.u64 %s, %lld", total.n, s->C * s->K);
    preg i = thread_index(b, total, done);
    snprintf(imm, sizeof imm, "%lld", s->C);
    divmod(b, k, c, i, imm);

    ws_ptx_section(b, "rows of (0, c): x, seq_idx, initial_states, gz; each item C*T*xs, 4T, C*(K-1)*xs, C*T*4 on");
    preg zero = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mov.u64 %s, 0", zero.n);
    rows_for(s, zero, c, px, pseq, pinit);
    grad_ctx gc = { 0 };
    gz_row(s, &gc, pgz, zero, c);
    preg xitem = ws_ptx_reg(b, PTX_B64), gitem = ws_ptx_reg(b, PTX_B64), sitem = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", xitem.n, s->T.n, s->C * s->xs);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", gitem.n, s->T.n, s->C * 4);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, 4", sitem.n, s->T.n);
    preg pk = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", pk.n, k.n, s->D);
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", pk.n, pk.n, s->P);

    ws_ptx_section(b, "acc = sum_n sum_t gz[n,c,t] * x_at(n, c, t, t + D*k - P_L), n then t");
    preg acc = ws_ptx_reg(b, PTX_F32), nl = ws_ptx_reg(b, PTX_B32), tl = ws_ptx_reg(b, PTX_B32);
    preg p = ws_ptx_reg(b, PTX_B64), ga = ws_ptx_reg(b, PTX_B64), sa = ws_ptx_reg(b, PTX_B64);
    preg gv = ws_ptx_reg(b, PTX_F32), more = ws_ptx_reg(b, PTX_PRED);
    plabel nlp = ws_ptx_label_new(b, "n"), tlp = ws_ptx_label_new(b, "t");
    s->st = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", nl.n);
    ws_ptx_label(b, nlp);
    ws_ptx_ins(b, "mov.b64 %s, %s", p.n, pk.n);
    ws_ptx_ins(b, "mov.b64 %s, %s", ga.n, gc.grow.n);
    ws_ptx_ins(b, "mov.b64 %s, %s", sa.n, s->srow.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", tl.n);
    ws_ptx_label(b, tlp);
    ws_ptx_ins(b, "ld.global.f32 %s, [%s]", gv.n, ga.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", s->st.n);
    ws_ptx_ins(b, "@%s ld.global.nc.u32 %s, [%s]", s->hasseq.n, s->st.n, sa.n);
    preg v = x_at(s, p);
    ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc.n, gv.n, v.n, acc.n);
    ws_ptx_ins(b, "add.s64 %s, %s, 1", p.n, p.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %lld", ga.n, ga.n, gc.gstep);
    ws_ptx_ins(b, "add.u64 %s, %s, 4", sa.n, sa.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", tl.n, tl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, tl.n, t32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, tlp.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", s->xrow.n, s->xrow.n, xitem.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", gc.grow.n, gc.grow.n, gitem.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", s->srow.n, s->srow.n, sitem.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %lld", s->irow.n, s->irow.n, s->C * (s->K - 1) * s->xs);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", nl.n, nl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, nl.n, n32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, nlp.n);
    ws_ptx_section(b, "dw[c*K + k] = acc");
    preg wa = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", wa.n, c.n, s->K, k.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", wa.n, wa.n, pdw.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", wa.n, acc.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* db[c] = sum_n sum_t gz[n,c,t]  (n then t) */
static void emit_db(ds *s)
{
    ptx_buf *b = s->b;
    const ws_params *pt = ws_params_of(WS_PARAMS_DWS_DB);
    preg r[WS_PARAMS_MAX];
    load_params(b, pt, r);
    preg pgz = r[WS_DSDB_GZ], pdb = r[WS_DSDB_DB], n32 = r[WS_DSDB_N], t32 = r[WS_DSDB_T];
    to_global(b, pgz), to_global(b, pdb);
    s->T = widen(b, t32);

    ws_ptx_section(b, "c = blockIdx.x * 256 + threadIdx.x < C");
    plabel done = ws_ptx_label_new(b, "done");
    preg total = ws_ptx_reg(b, PTX_B64), zero = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mov.u64 %s, %lld", total.n, s->C);
    preg c = thread_index(b, total, done);
    ws_ptx_ins(b, "mov.u64 %s, 0", zero.n);
    grad_ctx gc = { 0 };
    gz_row(s, &gc, pgz, zero, c);
    preg gitem = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", gitem.n, s->T.n, s->C * 4);

    ws_ptx_section(b, "acc = sum_n sum_t gz[n,c,t], n then t");
    preg acc = ws_ptx_reg(b, PTX_F32), gv = ws_ptx_reg(b, PTX_F32), nl = ws_ptx_reg(b, PTX_B32);
    preg tl = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64), more = ws_ptx_reg(b, PTX_PRED);
    plabel nlp = ws_ptx_label_new(b, "n"), tlp = ws_ptx_label_new(b, "t");
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", nl.n);
    ws_ptx_label(b, nlp);
    ws_ptx_ins(b, "mov.b64 %s, %s", ga.n, gc.grow.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", tl.n);
    ws_ptx_label(b, tlp);
    ws_ptx_ins(b, "ld.global.f32 %s, [%s]", gv.n, ga.n);
    ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", acc.n, acc.n, gv.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %lld", ga.n, ga.n, gc.gstep);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", tl.n, tl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, tl.n, t32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, tlp.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", gc.grow.n, gc.grow.n, gitem.n);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", nl.n, nl.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %s", more.n, nl.n, n32.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, nlp.n);
    ws_ptx_section(b, "db[c] = acc");
    preg da = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", da.n, c.n, pdb.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", da.n, acc.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* ---- the module ---- */

char *ws_dws_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_DWS_NAME_MAX];
    ws_dws_name(d, name);
    if (!ws_dws_fits(d)) {
        ws_errf(err, "ws_dws_emit(%s): not a depthwise causal descriptor (groups = c_in = c_out, "
                     "stride 1, pad_l = dilation*(k-1), pad_r 0)", name);
        return NULL;
    }
    static void (*const body[WS_DWS_NPARTS])(ds *) = { emit_fwd, emit_final, emit_gz, emit_dx,
                                                       emit_dinit, emit_dw, emit_db };
    static const char *const what[WS_DWS_NPARTS] = {
        "y[n,c,t] = act(b[c] + sum_k w[c,k] * pre(x_at(n, c, t, t + D*k - P_L))) + add; 0 where seq_idx < 0",
        "final_states[n][c][j] = input at T - (K-1) + j (x, or initial_states before t = 0)",
        "gz[n,c,t] = dy[n,c,t] * act'(b[c] + sum_k w[c,k] * x_at(n, c, t, t + D*k - P_L)); 0 where seq_idx < 0",
        "dx[n,c,p] = sum_k w[c,k] * gz[n,c,p + P_L - D*k] (same sequence); 0 where seq_idx < 0",
        "dinitial_states[n][c][j] = sum_k w[c,k] * gz[n,c,j - (K-1) + P_L - D*k]",
        "dw[c,k] = sum_n sum_t gz[n,c,t] * x_at(n, c, t, t + D*k - P_L)",
        "db[c] = sum_n sum_t gz[n,c,t]",
    };
    const int bwd = d->op == WS_CONV_BWD;
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin(&mod, cc_major, cc_minor,
                        bwd ? "whisper-stem conv engine: depthwise causal backward with sequences and "
                              "states (gz, dx, dinit, dw, db)"
                            : "whisper-stem conv engine: depthwise causal forward with sequences and "
                              "states (y, final states)");
    for (int p = 0; p < WS_DWS_NPARTS; p++) {
        if (!ws_dws_has_part(d, (ws_dws_part)p))
            continue;
        ptx_buf kb;
        ws_ptx_init(&kb);
        ds s = { .b = &kb, .d = d, .C = d->c_in, .K = d->k, .D = d->dilation, .P = d->pad_l,
                 .xs = d->x_type == WS_F32 ? 4 : 2, .ys = d->y_type == WS_F32 ? 4 : 2 };
        char entry[WS_DWS_NAME_MAX];
        ws_dws_entry(d, (ws_dws_part)p, entry);
        ws_ptx_comment(&kb, "%s", what[p]);
        ws_ptx_comment(&kb, "C %d K %d D %d P_L %d; x %s %s, y %s %s; pre %s, act %s", d->c_in, d->k,
                       d->dilation, d->pad_l, layout_name(d->x_layout), ws_ptx_type_name(d->x_type),
                       layout_name(d->y_layout), ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre),
                       ws_ptx_act_name(d->act));
        body[p](&s);
        ws_ptx_kernel_end_params(&kb, &mod, entry, ws_params_of(WS_PARAMS_DWS_FWD + p),
                                 WS_DWS_THREADS, 0,
                                 p == WS_DWS_DW || p == WS_DWS_DB ? REDUCE_REGS : 0);
    }
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_dws_emit(%s): %s", name, why);
    return text;
}

/* ptx_dw.c - the depthwise kernels' emitter (ptx_dw.h: forward NLC and NCL, the fused
 * backward and its finishing pass). Each emit helper says in pseudo-C what it writes.
 * Emission is a pure function of the descriptor and the compute capability.
 * Tested by tests/test_gpu_conv.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_act.h"
#include "ptx_dw.h"
#include "ptx_emit.h"
#include "ptx_epi.h"
#include "ptx_params.h"

/* rows are loaded this many steps ahead of their first use: 8 rows of 8 or 16 bytes per
 * thread in flight (H100, N4 C5120 T2048 K4 bf16 NLC: 4 ahead 75 us forward and 137 us
 * backward, 8 ahead 72 and 129) */
#define PREFETCH 8
#define WS_DW_MAX_REGS 255 /* .maxnreg of the NLC kernels (ptx_emit.h) */

/* the kernel being written */
typedef struct {
    ptx_buf *b;
    const ws_conv_desc *d;
    int V;          /* elements per vector */
    int K, D, P, H; /* taps, dilation, left padding, halo D*(K-1) */
    int PF;         /* prefetch_of */
    int R;          /* ring slots: H + 1 + PF */
    int U;          /* steps per loop iteration, a multiple of R */
    int L;          /* NLC: output times per thread, a multiple of U */
    preg tin, tout; /* u64 */
    ws_dtype wt;    /* the type w is read in: float32 (the plan's own, converted), or the
                       descriptor's w_type for weights given per call */
} dw;

int ws_dw_vec(const ws_conv_desc *d)
{
    if (d->op == WS_CONV_BWD && d->x_layout == WS_NLC) /* four rings of registers */
        return 2;
    if (d->x_layout == WS_NLC)
        return 4; /* twice the threads of 16-byte bf16 vectors: fewer idle SMs in the last wave */
    return d->x_type == WS_F32 || d->y_type == WS_F32 ? 4 : 8;
}

int ws_dw_fits(const ws_conv_desc *d)
{
    if (d->groups != d->c_in || d->c_out != d->c_in || d->stride != 1 ||
        d->x_layout != d->y_layout || d->k > WS_DW_MAX_K ||
        (long long)d->dilation * (d->k - 1) > WS_DW_MAX_HALO || d->pad_l > WS_DW_MAX_HALO ||
        d->pad_r > WS_DW_MAX_HALO)
        return 0; /* the NCL kernels hold V + P_L (+ H) elements in registers */
    if (d->op == WS_CONV_BWD && d->pre != WS_ACT_NONE)
        return 0;
    if (d->x_layout == WS_NLC && d->c_in % ws_dw_vec(d))
        return 0;
    return 1;
}

void ws_dw_name_w(const ws_conv_desc *d, ws_dtype wt, char name[WS_DW_NAME_MAX])
{
    snprintf(name, WS_DW_NAME_MAX, "ws_dw_%s_c%d_k%d_d%d_p%d_%s_%s_%s_%s_%s%s%s",
             d->op == WS_CONV_BWD ? "bwd" : "fwd", d->c_in, d->k, d->dilation, d->pad_l,
             d->x_layout == WS_NCL ? "ncl" : "nlc", ws_ptx_type_name(d->x_type), ws_ptx_type_name(d->y_type),
             ws_ptx_act_name(d->pre), ws_ptx_act_name(d->act), wt == WS_F32 ? "" : "_w",
             wt == WS_F32 ? "" : ws_ptx_type_name(wt));
}

void ws_dw_name(const ws_conv_desc *d, char name[WS_DW_NAME_MAX])
{
    ws_dw_name_w(d, WS_F32, name);
}

void ws_dw_entry_w(const ws_conv_desc *d, ws_dtype wt, int fin, char name[WS_DW_NAME_MAX])
{
    ws_dw_name_w(d, wt, name);
    const size_t len = strlen(name);
    snprintf(name + len, WS_DW_NAME_MAX - len, fin ? "_fin" : "_bwd");
}

void ws_dw_entry(const ws_conv_desc *d, int fin, char name[WS_DW_NAME_MAX])
{
    ws_dw_entry_w(d, WS_F32, fin, name);
}

/* ring and loop sizes of d's kernels */
static void shape_of(const ws_conv_desc *d, dw *s)
{
    s->d = d;
    s->wt = WS_F32;
    s->V = ws_dw_vec(d);
    s->K = d->k;
    s->D = d->dilation;
    s->P = d->pad_l;
    s->H = d->dilation * (d->k - 1);
    s->PF = PREFETCH;
    s->R = s->H + 1 + s->PF;
    /* the backward unrolls one ring (ptxas hoists loads across a longer body and runs out
     * of registers); the forward two when the ring is short */
    s->U = d->op == WS_CONV_BWD ? s->R : s->R * (s->R >= 16 ? 1 : 16 / s->R);
    const int want = d->op == WS_CONV_BWD ? WS_DW_BWD_CHUNK
                     : d->x_type == WS_F32 ? WS_DW_CHUNK_F32 : WS_DW_CHUNK;
    s->L = s->U * ((want + s->U - 1) / s->U);
}

long long ws_dw_nch(const ws_conv_desc *d, int t_in, int t_out)
{
    dw s;
    shape_of(d, &s);
    if (d->x_layout == WS_NCL) {
        const long long span = d->op == WS_CONV_BWD && t_in > t_out ? t_in : t_out;
        const long long nv = span / s.V;
        return d->op == WS_CONV_BWD ? (nv + 31) / 32 * 32 : nv;
    }
    long long span = t_out;
    if (d->op == WS_CONV_BWD && (long long)t_in + s.P > span)
        span = (long long)t_in + s.P;
    return (span + s.L - 1) / s.L;
}

long long ws_dw_parts(const ws_conv_desc *d, int t_in, int t_out)
{
    const long long nch = ws_dw_nch(d, t_in, t_out);
    return d->x_layout == WS_NCL ? nch / 32 : nch;
}

/* ---- small pieces ---- */

/* i = ctaid.x * WS_DW_THREADS + tid.x; if (i >= total) goto done */
static preg thread_index(ptx_buf *b, preg total, plabel done)
{
    preg i = ws_ptx_reg(b, PTX_B64), tid = ws_ptx_reg(b, PTX_B64), r32 = ws_ptx_reg(b, PTX_B32);
    preg out = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "mov.u32 %s, %%ctaid.x", r32.n);
    ws_ptx_ins(b, "mul.wide.u32 %s, %s, %d", i.n, r32.n, WS_DW_THREADS);
    ws_ptx_ins(b, "mov.u32 %s, %%tid.x", r32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tid.n, r32.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", i.n, i.n, tid.n);
    ws_ptx_ins(b, "setp.ge.u64 %s, %s, %s", out.n, i.n, total.n);
    ws_ptx_ins(b, "@%s bra %s", out.n, done.n);
    return i;
}

/* y = ctaid.y, z = ctaid.z (u64) */
static void grid_yz(ptx_buf *b, preg y, preg z)
{
    preg r32 = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ins(b, "mov.u32 %s, %%ctaid.y", r32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", y.n, r32.n);
    ws_ptx_ins(b, "mov.u32 %s, %%ctaid.z", r32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", z.n, r32.n);
}

/* q = a / m; r = a - q*m */
static void divmod(ptx_buf *b, preg q, preg r, preg a, const char *m)
{
    ws_ptx_ins(b, "div.u64 %s, %s, %s", q.n, a.n, m);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", r.n, q.n, m);
    ws_ptx_ins(b, "sub.u64 %s, %s, %s", r.n, a.n, r.n);
}

/* f[v] = base[v*stride_bytes] as float32 for v < count (read-only path); pred: else 0 */
static void load_f32s(ptx_buf *b, preg *f, int count, preg base, int stride_bytes, const preg *pred)
{
    for (int v = 0; v < count; v++) {
        f[v] = ws_ptx_reg(b, PTX_F32);
        if (pred) {
            ws_ptx_ins(b, "mov.f32 %s, 0f00000000", f[v].n);
            ws_ptx_ins(b, "@%s ld.global.nc.f32 %s, [%s+%d]", pred->n, f[v].n, base.n,
                    v * stride_bytes);
        } else {
            ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s+%d]", f[v].n, base.n, v * stride_bytes);
        }
    }
}

/* bytes of one element of type t */
static int ws_dtype_bytes(ws_dtype t)
{
    return t == WS_F32 ? 4 : 2;
}

/* f = (float)((type *)base)[i] for a 16-bit w type (weights given per call) */
static void load_w16(ptx_buf *b, preg f, preg base, int i, ws_dtype t)
{
    if (t == WS_F16) {
        preg h = ws_ptx_reg(b, PTX_B16);
        ws_ptx_ins(b, "ld.global.nc.b16 %s, [%s+%d]", h.n, base.n, 2 * i);
        ws_ptx_ins(b, "cvt.f32.f16 %s, %s", f.n, h.n);
    } else { /* bf16: the top half of the float32 */
        preg r = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ins(b, "ld.global.nc.u16 %s, [%s+%d]", r.n, base.n, 2 * i);
        ws_ptx_ins(b, "shl.b32 %s, %s, 16", r.n, r.n);
        ws_ptx_ins(b, "mov.b32 %s, %s", f.n, r.n);
    }
}

/* NCL: w[k] = w[c][k] (k < K) and bias[0] = hasb ? b[c] : 0 for channel c */
static void channel_weights(ptx_buf *b, int K, preg c, preg pw, preg pb, preg hasb, preg *w,
                            preg *bias, ws_dtype wt)
{
    ws_ptx_section(b, "w[c][k], b[c]");
    preg wa = ws_ptx_reg(b, PTX_B64), ba = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", wa.n, c.n, K * ws_dtype_bytes(wt), pw.n);
    if (wt == WS_F32)
        load_f32s(b, w, K, wa, 4, NULL);
    else
        for (int k = 0; k < K; k++) {
            w[k] = ws_ptx_reg(b, PTX_F32);
            load_w16(b, w[k], wa, k, wt);
        }
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", ba.n, c.n, pb.n);
    load_f32s(b, bias, 1, ba, 4, &hasb);
}

/* p = (u64)(base + off) < lim, address a = start + (base + off) * step: one row's load */
static void row_at(ptx_buf *b, preg p, preg a, preg base, long long off, preg lim, preg start,
                   long long step)
{
    preg u = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "add.s64 %s, %s, %lld", u.n, base.n, off);
    ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", p.n, u.n, lim.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", a.n, u.n, step, start.n);
}

static int mod(int a, int m)
{
    return ((a % m) + m) % m;
}

/* ---- forward ---- */

/* the forward's common parameters; hasb / hasa: bias / add given */
typedef struct {
    preg px, pw, pb, pa, py, abs, n;
    preg hasb, hasa;
} fwd_params;

static fwd_params fwd_param_load(dw *s)
{
    ptx_buf *b = s->b;
    fwd_params f;
    const ws_params *pt = ws_params_of(WS_PARAMS_FWD);
    static const int pi[] = { WS_FWD_X, WS_FWD_W, WS_FWD_B, WS_FWD_ADD, WS_FWD_Y };
    preg p[5];
    ws_ptx_section(b, "parameters");
    ws_ptx_param_ptrs(b, p, pt, pi, 5);
    f.px = p[0], f.pw = p[1], f.pb = p[2], f.pa = p[3], f.py = p[4];
    f.n = ws_ptx_param_u32(b, pt, WS_FWD_N);
    s->tin = ws_ptx_param_u32(b, pt, WS_FWD_T_IN);
    s->tout = ws_ptx_param_u32(b, pt, WS_FWD_T_OUT);
    f.abs = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, f.abs, pt, WS_FWD_ADD_BS);
    f.hasb = ws_ptx_reg(b, PTX_PRED);
    f.hasa = ws_ptx_reg(b, PTX_PRED);
    preg raw = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, raw, pt, WS_FWD_B);
    ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", f.hasb.n, raw.n);
    ws_ptx_ld_param(b, raw, pt, WS_FWD_ADD);
    ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", f.hasa.n, raw.n);
    return f;
}

/* the float32 register of x for tap k and output v */
typedef preg (*x_of_fn)(ptx_buf *b, int k, int v, const void *ctx);

/* acc[v] = sum_k w[k*kstride + v*vstride] * pre(x(k, v)) for v < V, fma in the order k (the
 * direct kernel's sequence; the epilogue, ptx_epi.h, adds the bias) */
static void fwd_sum(dw *s, preg *acc, x_of_fn x_of, const void *ctx, const preg *w, int kstride,
                    int vstride)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    for (int v = 0; v < s->V; v++) {
        acc[v] = ws_ptx_reg(b, PTX_F32);
        ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc[v].n);
    }
    for (int k = 0; k < s->K; k++)
        for (int v = 0; v < s->V; v++) {
            preg x = x_of(b, k, v, ctx);
            if (d->pre != WS_ACT_NONE) {
                preg t = ws_ptx_reg(b, PTX_F32);
                ws_ptx_ins(b, "mov.f32 %s, %s", t.n, x.n);
                ws_ptx_act(b, t, d->pre);
                x = t;
            }
            ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc[v].n, w[k * kstride + v * vstride].n,
                    x.n, acc[v].n);
        }
}

/* NLC: tap k of channel v is element v of ring vector xk[k] */
static preg x_of_nlc(ptx_buf *b, int k, int v, const void *ctx)
{
    const ws_ptx_vec *const *xk = ctx;
    return ws_ptx_vec_elem(b, xk[k], v);
}

/* NLC forward: a thread streams V channels through L output times (ptx_dw.h) */
static void emit_fwd_nlc(dw *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const int V = s->V, K = s->K, R = s->R, U = s->U, H = s->H;
    const long long C = d->c_in, CV = C / V;
    const int xs = d->x_type == WS_F32 ? 4 : 2, ys = d->y_type == WS_F32 ? 4 : 2;
    char imm[32];
    fwd_params f = fwd_param_load(s);

    ws_ptx_section(b, "i = ((n*nch + ch)*C/V + cv) < N * nch * C/V, nch = ceil(T_out / L)");
    preg nch = ws_ptx_reg(b, PTX_B64), total = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ins(b, "add.u64 %s, %s, %d", nch.n, s->tout.n, s->L - 1);
    ws_ptx_ins(b, "div.u64 %s, %s, %d", nch.n, nch.n, s->L);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", total.n, f.n.n, nch.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, total.n, CV);
    preg i = thread_index(b, total, done);
    preg cv = ws_ptx_reg(b, PTX_B64), r = ws_ptx_reg(b, PTX_B64), ch = ws_ptx_reg(b, PTX_B64);
    preg n = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", CV);
    divmod(b, r, cv, i, imm);
    divmod(b, n, ch, r, nch.n);

    ws_ptx_section(b, "w[c0 + v][k], b[c0 + v] for the thread's channels c0 = cv*V");
    preg wa = ws_ptx_reg(b, PTX_B64), ba = ws_ptx_reg(b, PTX_B64);
    preg w[WS_DW_MAX_K * 8], bias[8];
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", wa.n, cv.n, V * K * ws_dtype_bytes(s->wt));
    ws_ptx_ins(b, "add.u64 %s, %s, %s", wa.n, wa.n, f.pw.n);
    for (int k = 0; k < K; k++)
        for (int v = 0; v < V; v++) {
            w[k * V + v] = ws_ptx_reg(b, PTX_F32);
            if (s->wt == WS_F32)
                ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s+%d]", w[k * V + v].n, wa.n, (v * K + k) * 4);
            else
                load_w16(b, w[k * V + v], wa, v * K + k, s->wt);
        }
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", ba.n, cv.n, V * 4);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", ba.n, ba.n, f.pb.n);
    load_f32s(b, bias, V, ba, 4, &f.hasb);

    ws_ptx_section(b, "rows: x row u at xb + u*C*xs, y / add row t at yb / ab + t*C*ys");
    preg xb = ws_ptx_reg(b, PTX_B64), yb = ws_ptx_reg(b, PTX_B64), ab = ws_ptx_reg(b, PTX_B64);
    preg t0 = ws_ptx_reg(b, PTX_B64), ulo = ws_ptx_reg(b, PTX_B64), tlo = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", xb.n, n.n, s->tin.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", xb.n, xb.n, C);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xb.n, cv.n, V, xb.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xb.n, xb.n, xs, f.px.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", yb.n, n.n, s->tout.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", yb.n, yb.n, C);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", yb.n, cv.n, V, yb.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", yb.n, yb.n, ys, f.py.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", ab.n, n.n, f.abs.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", ab.n, cv.n, V, ab.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", ab.n, ab.n, ys, f.pa.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", t0.n, ch.n, s->L);
    ws_ptx_comment(b, "step j computes t = t0 + j from x rows t0 - P + j + D*k (ring row j + D*k)");
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", ulo.n, t0.n, s->P);
    ws_ptx_ins(b, "mov.b64 %s, %s", tlo.n, t0.n);

    ws_ptx_section(b, "the ring: row r in slot r % R, rows 0 .. H+PF-1 loaded before the loop");
    ws_ptx_vec ring[64];
    for (int q = 0; q < R; q++)
        ring[q] = ws_ptx_vec_new(b, d->x_type, V);
    preg lp = ws_ptx_reg(b, PTX_PRED), la = ws_ptx_reg(b, PTX_B64);
    for (int q = 0; q < H + s->PF; q++) {
        row_at(b, lp, la, ulo, q, s->tin, xb, C * xs);
        ws_ptx_vec_load(b, &ring[q % R], la, lp);
    }
    /* 16-bit x: each row unpacked once, at step row - H, into a float32 ring (the taps use
     * it K times) */
    ws_ptx_vec fring[64];
    const int unpack = d->x_type != WS_F32;
    for (int q = 0; unpack && q < R; q++) {
        fring[q] = ws_ptx_vec_new(b, WS_F32, V);
        if (q < H)
            for (int v = 0; v < V; v++)
                ws_ptx_ins(b, "mov.f32 %s, %s", fring[q].r[v].n, ws_ptx_vec_elem(b, &ring[q], v).n);
    }

    ws_ptx_section(b, "loop: U steps per iteration, L / U iterations (or to T_out)");
    preg it = ws_ptx_reg(b, PTX_B32), more = ws_ptx_reg(b, PTX_PRED), tp = ws_ptx_reg(b, PTX_PRED);
    preg t = ws_ptx_reg(b, PTX_B64), ya = ws_ptx_reg(b, PTX_B64), aa = ws_ptx_reg(b, PTX_B64);
    plabel top = ws_ptx_label_new(b, "steps");
    ws_ptx_ins(b, "mov.u32 %s, 0", it.n);
    ws_ptx_label(b, top);
    for (int jj = 0; jj < U; jj++) {
        ws_ptx_comment(b, "step %d: prefetch row %d, then t = tlo + %d", jj, jj + H + s->PF, jj);
        row_at(b, lp, la, ulo, jj + H + s->PF, s->tin, xb, C * xs);
        ws_ptx_vec_load(b, &ring[(jj + H + s->PF) % R], la, lp);
        if (unpack)
            for (int v = 0; v < V; v++)
                ws_ptx_ins(b, "mov.f32 %s, %s", fring[(jj + H) % R].r[v].n,
                        ws_ptx_vec_elem(b, &ring[(jj + H) % R], v).n);
        const ws_ptx_vec *xk[WS_DW_MAX_K];
        for (int k = 0; k < K; k++)
            xk[k] = unpack ? &fring[(jj + s->D * k) % R] : &ring[(jj + s->D * k) % R];
        preg acc[8];
        fwd_sum(s, acc, x_of_nlc, xk, w, V, 1);
        ws_ptx_ins(b, "add.s64 %s, %s, %d", t.n, tlo.n, jj);
        ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", tp.n, t.n, s->tout.n);
        const ws_ptx_epi ep = {
            .act = d->act, .y_type = d->y_type, .n = V, .v = acc, .bias = bias, .bias_stride = 1,
            .bias_if = f.hasb, .add_if = f.hasa, .in = tp,
            .add = {.at = aa, .index = t, .base = ab, .scale = C * ys},
            .y = {.at = ya, .index = t, .base = yb, .scale = C * ys}};
        ws_ptx_epi_emit(b, &ep);
    }
    ws_ptx_ins(b, "add.s64 %s, %s, %d", ulo.n, ulo.n, U);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", tlo.n, tlo.n, U);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", it.n, it.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %d", more.n, it.n, s->L / U);
    ws_ptx_ins(b, "setp.lt.and.u64 %s, %s, %s, %s", more.n, tlo.n, s->tout.n, more.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, top.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* NCL: the aligned vectors around a thread's V times; element e (t0 + e) of the span */
typedef struct {
    const ws_ptx_vec *q; /* vectors qlo .. qhi */
    int qlo, V, P, D;
    preg cache[128]; /* element e's float32 register at [e - qlo*V], unpacked once */
    char have[128];
} ncl_span;

/* element e of the span as float32, unpacked at its first use (straight-line code: later
 * uses follow it) */
static preg span_elem(ptx_buf *b, ncl_span *sp, int e)
{
    const int q = (e - mod(e, sp->V)) / sp->V, at = e - sp->qlo * sp->V;
    if (at >= 0 && at < (int)sizeof sp->have && sp->have[at])
        return sp->cache[at];
    preg r = ws_ptx_vec_elem(b, &sp->q[q - sp->qlo], mod(e, sp->V));
    if (at >= 0 && at < (int)sizeof sp->have) {
        sp->cache[at] = r;
        sp->have[at] = 1;
    }
    return r;
}

/* output m, tap k reads x at t0 + m - P + D*k */
static preg x_of_ncl(ptx_buf *b, int k, int m, const void *ctx)
{
    ncl_span *sp = (ncl_span *)ctx;
    return span_elem(b, sp, m - sp->P + sp->D * k);
}

static int floor_div(int a, int m)
{
    return (a - mod(a, m)) / m;
}

/* loads vectors qlo..qhi of x row xrow around vector j: q[i] = x[(j + qlo + i)*V ..], zero
 * outside [0, lim) (lim a multiple of V) */
static void load_span(dw *s, ws_ptx_vec *q, int qlo, int qhi, ws_dtype t, preg j, preg lim,
                      preg row)
{
    ptx_buf *b = s->b;
    const int es = t == WS_F32 ? 4 : 2;
    preg p = ws_ptx_reg(b, PTX_PRED), a = ws_ptx_reg(b, PTX_B64), u = ws_ptx_reg(b, PTX_B64);
    for (int i = 0; i <= qhi - qlo; i++) {
        q[i] = ws_ptx_vec_new(b, t, s->V);
        ws_ptx_ins(b, "add.s64 %s, %s, %d", u.n, j.n, qlo + i);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", u.n, u.n, s->V);
        ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", p.n, u.n, lim.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", a.n, u.n, es, row.n);
        ws_ptx_vec_load(b, &q[i], a, p);
    }
}

/* load_span for a warp whose lanes hold consecutive vectors j of one row: vector 0 loaded,
 * vectors -1 and +1 from the neighbour lanes (shfl.sync up / down by one), loaded only by
 * lane 0 / lane 31; others loaded. Every lane of the warp must run this. */
static void load_span_shfl(dw *s, ws_ptx_vec *q, int qlo, int qhi, ws_dtype t, preg j, preg lim,
                           preg row)
{
    ptx_buf *b = s->b;
    const int es = t == WS_F32 ? 4 : 2;
    preg p = ws_ptx_reg(b, PTX_PRED), a = ws_ptx_reg(b, PTX_B64), u = ws_ptx_reg(b, PTX_B64);
    preg lane = ws_ptx_reg(b, PTX_B32), edge = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "mov.u32 %s, %%laneid", lane.n);
    const int c0 = -qlo; /* index of vector 0 */
    /* vector 0 first: the neighbours shuffle it */
    int order[16], n = 0;
    order[n++] = c0;
    for (int i = 0; i <= qhi - qlo; i++)
        if (i != c0)
            order[n++] = i;
    for (int o = 0; o < n; o++) {
        const int i = order[o], qq = qlo + i;
        q[i] = ws_ptx_vec_new(b, t, s->V);
        ws_ptx_ins(b, "add.s64 %s, %s, %d", u.n, j.n, qq);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", u.n, u.n, s->V);
        ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", p.n, u.n, lim.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", a.n, u.n, es, row.n);
        if (qq == -1 || qq == 1) {
            ws_ptx_comment(b, "vector %+d: lane %s's vector 0, or loaded at the warp's edge", qq,
                           qq < 0 ? "- 1" : "+ 1");
            for (int r = 0; r < q[i].nr; r++)
                ws_ptx_ins(b, "shfl.sync.%s.b32 %s, %s, 1, %d, -1", qq < 0 ? "up" : "down",
                           q[i].r[r].n, q[c0].r[r].n, qq < 0 ? 0 : 31);
            ws_ptx_ins(b, "setp.eq.u32 %s, %s, %d", edge.n, lane.n, qq < 0 ? 0 : 31);
            for (int r = 0; r < q[i].nr; r++)
                ws_ptx_ins(b, "@%s mov.b32 %s, 0", edge.n, q[i].r[r].n);
            ws_ptx_ins(b, "and.pred %s, %s, %s", p.n, p.n, edge.n);
            char list[160];
            ws_ptx_vec_list(&q[i], list, sizeof list);
            if (q[i].nr == 1)
                ws_ptx_ins(b, "@%s ld.global.nc.%s %s, [%s]", p.n, t == WS_F32 ? "f32" : "b32",
                           q[i].r[0].n, a.n);
            else
                ws_ptx_ins(b, "@%s ld.global.nc.v%d.%s %s, [%s]", p.n, q[i].nr,
                           t == WS_F32 ? "f32" : "b32", list, a.n);
        } else {
            ws_ptx_vec_load(b, &q[i], a, p);
        }
    }
}

/* NCL forward: a thread computes V consecutive times of one row (ptx_dw.h) */
static void emit_fwd_ncl(dw *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const int V = s->V, K = s->K;
    const long long C = d->c_in;
    const int xs = d->x_type == WS_F32 ? 4 : 2, ys = d->y_type == WS_F32 ? 4 : 2;
    fwd_params f = fwd_param_load(s);

    ws_ptx_section(b, "j = ctaid.x*WS_DW_THREADS + tid.x, c = ctaid.y, n = ctaid.z; whole warps past nj = T_out / V leave, the rest stay for the shuffles (live: j < nj)");
    preg nj = ws_ptx_reg(b, PTX_B64), w0 = ws_ptx_reg(b, PTX_B64), live = ws_ptx_reg(b, PTX_PRED);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ins(b, "div.u64 %s, %s, %d", nj.n, s->tout.n, V);
    preg all = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mov.u64 %s, -1", all.n);
    preg j = thread_index(b, all, done), n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64);
    preg row = ws_ptx_reg(b, PTX_B64), gone = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "and.b64 %s, %s, -32", w0.n, j.n);
    ws_ptx_ins(b, "setp.ge.u64 %s, %s, %s", gone.n, w0.n, nj.n);
    ws_ptx_ins(b, "@%s bra %s", gone.n, done.n);
    ws_ptx_ins(b, "setp.lt.u64 %s, %s, %s", live.n, j.n, nj.n);
    grid_yz(b, c, n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", row.n, n.n, C, c.n);

    preg w[WS_DW_MAX_K], bias[1];
    channel_weights(b, K, c, f.pw, f.pb, f.hasb, w, bias, s->wt);

    const int qlo = floor_div(-s->P, V), qhi = floor_div(V - 1 - s->P + s->H, V);
    if (qhi - qlo + 1 > 16 || -qlo >= 16) {
        ws_ptx_fail(b, "padding too large for the depthwise NCL kernel");
        return;
    }
    ws_ptx_section(b, "x vectors j + qlo .. j + qhi of row (n, c)");
    preg xrow = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", xrow.n, row.n, s->tin.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xrow.n, xrow.n, xs, f.px.n);
    ws_ptx_vec q[16];
    load_span_shfl(s, q, qlo, qhi, d->x_type, j, s->tin, xrow);
    ncl_span sp = { .q = q, .qlo = qlo, .V = V, .P = s->P, .D = s->D };

    ws_ptx_section(b, "y[t0 + m] = act(b + sum_k w[k] x[t0 + m - P + D*k]) + add, m < V (live lanes)");
    preg acc[8];
    fwd_sum(s, acc, x_of_ncl, &sp, w, 1, 0);
    preg t0 = ws_ptx_reg(b, PTX_B64), aa = ws_ptx_reg(b, PTX_B64), ya = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", t0.n, j.n, V);
    ws_ptx_comment(b, "add element n*add_bs + c*T_out + t0, y element (n*C + c)*T_out + t0");
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", aa.n, c.n, s->tout.n, t0.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", aa.n, n.n, f.abs.n, aa.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %s, %s", ya.n, row.n, s->tout.n, t0.n);
    const ws_ptx_epi ep = {
        .act = d->act, .y_type = d->y_type, .n = V, .v = acc, .bias = bias, .bias_stride = 0,
        .bias_if = f.hasb, .add_if = f.hasa, .in = live,
        .add = {.at = aa, .index = aa, .base = f.pa, .scale = ys},
        .y = {.at = ya, .index = ya, .base = f.py, .scale = ys}};
    ws_ptx_epi_emit(b, &ep);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* ---- backward ---- */

typedef struct {
    preg px, pw, pb, pdy, pdx, ppart, n, nch;
    preg hasb, hasdx, haspart;
} bwd_params;

static bwd_params bwd_param_load(dw *s)
{
    ptx_buf *b = s->b;
    bwd_params f;
    const ws_params *pt = ws_params_of(WS_PARAMS_DW_BWD);
    static const int pi[] = { WS_DWBWD_X, WS_DWBWD_W, WS_DWBWD_B, WS_DWBWD_DY, WS_DWBWD_DX, WS_DWBWD_PART };
    preg p[6];
    ws_ptx_section(b, "parameters");
    ws_ptx_param_ptrs(b, p, pt, pi, 6);
    f.px = p[0], f.pw = p[1], f.pb = p[2], f.pdy = p[3], f.pdx = p[4], f.ppart = p[5];
    f.n = ws_ptx_param_u32(b, pt, WS_DWBWD_N);
    s->tin = ws_ptx_param_u32(b, pt, WS_DWBWD_T_IN);
    s->tout = ws_ptx_param_u32(b, pt, WS_DWBWD_T_OUT);
    f.nch = ws_ptx_param_u32(b, pt, WS_DWBWD_NCH);
    preg *flag[] = { &f.hasb, &f.hasdx, &f.haspart };
    static const int fi[] = { WS_DWBWD_B, WS_DWBWD_DX, WS_DWBWD_PART };
    preg raw = ws_ptx_reg(b, PTX_B64);
    for (int i = 0; i < 3; i++) {
        *flag[i] = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_ld_param(b, raw, pt, fi[i]);
        ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", flag[i]->n, raw.n);
    }
    return f;
}

/* g = dy * act'(z), z = (hasb ? b : 0) + sum_k w[k] x[k] by fma (RELU: mul.rn then add.rn;
 * the direct gz's rounding); x[k] the float32 taps, dyv the float32 dy; g a fresh register */
static preg bwd_gz(dw *s, const preg *x, const preg *w, int wstride, preg bias, preg hasb, preg dyv)
{
    ptx_buf *b = s->b;
    const ws_act act = s->d->act;
    preg g = ws_ptx_reg(b, PTX_F32);
    ws_ptx_ins(b, "mov.f32 %s, %s", g.n, dyv.n);
    if (act == WS_ACT_NONE)
        return g;
    preg z = ws_ptx_reg(b, PTX_F32), p = ws_ptx_reg(b, PTX_F32);
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", z.n);
    for (int k = 0; k < s->K; k++) {
        if (act == WS_ACT_RELU) {
            ws_ptx_ins(b, "mul.rn.f32 %s, %s, %s", p.n, w[k * wstride].n, x[k].n);
            ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", z.n, z.n, p.n);
        } else {
            ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", z.n, w[k * wstride].n, x[k].n, z.n);
        }
    }
    ws_ptx_ins(b, "@%s add.rn.f32 %s, %s, %s", hasb.n, z.n, z.n, bias.n);
    ws_ptx_act_grad(b, act, g, z);
    return g;
}

/* acc = sum_k w[k] * gz[k] by fma (the direct dx's order and rounding) */
static preg bwd_dx(ptx_buf *b, int K, const preg *w, int wstride, const preg *gz)
{
    preg acc = ws_ptx_reg(b, PTX_F32);
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    for (int k = 0; k < K; k++)
        ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc.n, w[k * wstride].n, gz[k].n, acc.n);
    return acc;
}

/* NLC backward, the state of one thread (V <= 4) */
typedef struct {
    ws_ptx_vec x[64], dy[64];
    preg gz[64][4];
    preg w[WS_DW_MAX_K * 4], bias[4];
    preg dw[WS_DW_MAX_K * 4], db[4];
    preg xb, dyb, dxb;
    bwd_params f;
} nlc_bwd;

/* One step: ring row jm (mod R) of the chunk, x rows at xbase + off.., dy / gz time tbase +
 * off; warm: gz only (the H steps before t0) */
static void bwd_nlc_step(dw *s, nlc_bwd *st, int jm, preg xbase, preg tbase, int off, int warm)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const int V = s->V, K = s->K, R = s->R, H = s->H;
    const long long C = d->c_in;
    const int xs = d->x_type == WS_F32 ? 4 : 2, ys = d->y_type == WS_F32 ? 4 : 2;
    preg lp = ws_ptx_reg(b, PTX_PRED), la = ws_ptx_reg(b, PTX_B64);
    ws_ptx_comment(b, "step (slot %d%s): prefetch x row +%d, dy row +%d", jm, warm ? ", warm-up" : "",
                off + H + s->PF, off + s->PF);
    row_at(b, lp, la, xbase, off + H + s->PF, s->tin, st->xb, C * xs);
    ws_ptx_vec_load(b, &st->x[(jm + H + s->PF) % R], la, lp);
    row_at(b, lp, la, tbase, off + s->PF, s->tout, st->dyb, C * ys);
    ws_ptx_vec_load(b, &st->dy[(jm + s->PF) % R], la, lp);

    preg xe[WS_DW_MAX_K][4];
    for (int k = 0; k < K; k++)
        for (int v = 0; v < V; v++)
            xe[k][v] = ws_ptx_vec_elem(b, &st->x[(jm + s->D * k) % R], v);
    for (int v = 0; v < V; v++) {
        preg xv[WS_DW_MAX_K];
        for (int k = 0; k < K; k++)
            xv[k] = xe[k][v];
        preg dyv = ws_ptx_vec_elem(b, &st->dy[jm], v);
        preg g = bwd_gz(s, xv, st->w + v, V, st->bias[v], st->f.hasb, dyv);
        ws_ptx_ins(b, "mov.f32 %s, %s", st->gz[jm][v].n, g.n);
    }
    if (warm)
        return;
    ws_ptx_comment(b, "dx[u = t - P] = sum_k w[k] gz[t - D*k]; dw[k] += gz[t] x[t - P + D*k]; db += gz[t]");
    preg dx[4];
    for (int v = 0; v < V; v++) {
        preg gk[WS_DW_MAX_K];
        for (int k = 0; k < K; k++)
            gk[k] = st->gz[mod(jm - s->D * k, R)][v];
        dx[v] = bwd_dx(b, K, st->w + v, V, gk);
    }
    preg u = ws_ptx_reg(b, PTX_B64), up = ws_ptx_reg(b, PTX_PRED), ua = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", u.n, tbase.n, off - s->P);
    ws_ptx_ins(b, "setp.lt.and.u64 %s, %s, %s, %s", up.n, u.n, s->tin.n, st->f.hasdx.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", ua.n, u.n, C * xs, st->dxb.n);
    ws_ptx_vec_store(b, ua, dx, V, d->x_type, up);
    for (int v = 0; v < V; v++) {
        for (int k = 0; k < K; k++)
            ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", st->dw[k * V + v].n, st->gz[jm][v].n,
                    xe[k][v].n, st->dw[k * V + v].n);
        ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", st->db[v].n, st->db[v].n, st->gz[jm][v].n);
    }
}

/* NLC backward: a thread streams V channels through the output times [t0, t0 + L) */
static void emit_bwd_nlc(dw *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const int V = s->V, K = s->K, R = s->R, U = s->U, H = s->H;
    const long long C = d->c_in, CV = C / V;
    const int xs = d->x_type == WS_F32 ? 4 : 2, ys = d->y_type == WS_F32 ? 4 : 2;
    char imm[32];
    nlc_bwd *st = calloc(1, sizeof *st);
    if (!st) {
        ws_ptx_fail(b, "out of memory");
        return;
    }
    st->f = bwd_param_load(s);
    bwd_params *f = &st->f;

    ws_ptx_section(b, "i = ((n*nch + ch)*C/V + cv) < N * nch * C/V");
    preg total = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", total.n, f->n.n, f->nch.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", total.n, total.n, CV);
    preg i = thread_index(b, total, done);
    preg cv = ws_ptx_reg(b, PTX_B64), r = ws_ptx_reg(b, PTX_B64), ch = ws_ptx_reg(b, PTX_B64);
    preg n = ws_ptx_reg(b, PTX_B64);
    snprintf(imm, sizeof imm, "%lld", CV);
    divmod(b, r, cv, i, imm);
    divmod(b, n, ch, r, f->nch.n);

    ws_ptx_section(b, "w[c0 + v][k], b[c0 + v], c0 = cv*V; dw, db partial sums 0");
    preg wa = ws_ptx_reg(b, PTX_B64), ba = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", wa.n, cv.n, V * K * ws_dtype_bytes(s->wt));
    ws_ptx_ins(b, "add.u64 %s, %s, %s", wa.n, wa.n, f->pw.n);
    for (int k = 0; k < K; k++)
        for (int v = 0; v < V; v++) {
            st->w[k * V + v] = ws_ptx_reg(b, PTX_F32);
            if (s->wt == WS_F32)
                ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s+%d]", st->w[k * V + v].n, wa.n, (v * K + k) * 4);
            else
                load_w16(b, st->w[k * V + v], wa, v * K + k, s->wt);
            st->dw[k * V + v] = ws_ptx_reg(b, PTX_F32);
            ws_ptx_ins(b, "mov.f32 %s, 0f00000000", st->dw[k * V + v].n);
        }
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", ba.n, cv.n, V * 4);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", ba.n, ba.n, f->pb.n);
    load_f32s(b, st->bias, V, ba, 4, &f->hasb);
    for (int v = 0; v < V; v++) {
        st->db[v] = ws_ptx_reg(b, PTX_F32);
        ws_ptx_ins(b, "mov.f32 %s, 0f00000000", st->db[v].n);
    }
    for (int q = 0; q < R; q++) {
        st->x[q] = ws_ptx_vec_new(b, d->x_type, V);
        st->dy[q] = ws_ptx_vec_new(b, d->y_type, V);
        for (int v = 0; v < V; v++)
            st->gz[q][v] = ws_ptx_reg(b, PTX_F32);
    }

    ws_ptx_section(b, "rows: x / dx row u at xb / dxb + u*C*xs, dy row t at dyb + t*C*ys");
    st->xb = ws_ptx_reg(b, PTX_B64), st->dyb = ws_ptx_reg(b, PTX_B64), st->dxb = ws_ptx_reg(b, PTX_B64);
    preg t0 = ws_ptx_reg(b, PTX_B64), xlo = ws_ptx_reg(b, PTX_B64), tlo = ws_ptx_reg(b, PTX_B64);
    preg ulo = ws_ptx_reg(b, PTX_B64), lim = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", st->xb.n, n.n, s->tin.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", st->xb.n, st->xb.n, C);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", st->xb.n, cv.n, V, st->xb.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", st->dxb.n, st->xb.n, xs, f->pdx.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", st->xb.n, st->xb.n, xs, f->px.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", st->dyb.n, n.n, s->tout.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", st->dyb.n, st->dyb.n, C);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", st->dyb.n, cv.n, V, st->dyb.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", st->dyb.n, st->dyb.n, ys, f->pdy.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", t0.n, ch.n, s->L);
    ws_ptx_comment(b, "step j: gz at t = t0 - H + j from x rows t0 - H - P + j + D*k (ring row j + D*k)");
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", tlo.n, t0.n, H);
    ws_ptx_ins(b, "sub.s64 %s, %s, %d", xlo.n, tlo.n, s->P);
    ws_ptx_comment(b, "lim = max(T_out, T_in + P): no dx and no dw at or past it");
    ws_ptx_ins(b, "add.u64 %s, %s, %d", lim.n, s->tin.n, s->P);
    ws_ptx_ins(b, "max.u64 %s, %s, %s", lim.n, lim.n, s->tout.n);

    ws_ptx_section(b, "preload x rows 0 .. H+PF-1 and dy rows 0 .. PF-1");
    preg lp = ws_ptx_reg(b, PTX_PRED), la = ws_ptx_reg(b, PTX_B64);
    for (int q = 0; q < H + s->PF; q++) {
        row_at(b, lp, la, xlo, q, s->tin, st->xb, C * xs);
        ws_ptx_vec_load(b, &st->x[q % R], la, lp);
    }
    for (int q = 0; q < s->PF; q++) {
        row_at(b, lp, la, tlo, q, s->tout, st->dyb, C * ys);
        ws_ptx_vec_load(b, &st->dy[q % R], la, lp);
    }
    ws_ptx_section(b, "warm-up: gz at t0 - H .. t0 - 1");
    for (int j = 0; j < H; j++)
        bwd_nlc_step(s, st, j % R, xlo, tlo, j, 1);

    ws_ptx_section(b, "loop: U steps per iteration over t in [t0, t0 + L), to lim");
    preg it = ws_ptx_reg(b, PTX_B32), more = ws_ptx_reg(b, PTX_PRED);
    plabel top = ws_ptx_label_new(b, "steps");
    ws_ptx_ins(b, "add.s64 %s, %s, %d", ulo.n, xlo.n, H);
    ws_ptx_ins(b, "mov.b64 %s, %s", tlo.n, t0.n);
    ws_ptx_ins(b, "mov.u32 %s, 0", it.n);
    ws_ptx_label(b, top);
    for (int jj = 0; jj < U; jj++)
        bwd_nlc_step(s, st, (H + jj) % R, ulo, tlo, jj, 0);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", ulo.n, ulo.n, U);
    ws_ptx_ins(b, "add.s64 %s, %s, %d", tlo.n, tlo.n, U);
    ws_ptx_ins(b, "add.u32 %s, %s, 1", it.n, it.n);
    ws_ptx_ins(b, "setp.lt.u32 %s, %s, %d", more.n, it.n, s->L / U);
    ws_ptx_ins(b, "setp.lt.and.s64 %s, %s, %s, %s", more.n, tlo.n, lim.n, more.n);
    ws_ptx_ins(b, "@%s bra %s", more.n, top.n);

    ws_ptx_section(b, "partials: part[((n*nch + ch)*(K+1) + k)*C + c0 ..] = dw[k], [.. K ..] = db");
    plabel nopart = ws_ptx_label_new(b, "nopart");
    preg pa = ws_ptx_reg(b, PTX_B64), yes = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "@!%s bra %s", f->haspart.n, nopart.n);
    ws_ptx_ins(b, "setp.eq.u64 %s, %s, %s", yes.n, r.n, r.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", pa.n, r.n, (long long)(K + 1) * C);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", pa.n, cv.n, V, pa.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", pa.n, pa.n, f->ppart.n);
    for (int k = 0; k <= K; k++) {
        preg a = ws_ptx_reg(b, PTX_B64);
        ws_ptx_ins(b, "add.u64 %s, %s, %lld", a.n, pa.n, (long long)k * C * 4);
        ws_ptx_vec_store(b, a, k < K ? st->dw + k * V : st->db, V, WS_F32, yes);
    }
    ws_ptx_label(b, nopart);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
    free(st);
}

/* NCL backward: a thread owns the V times t0 = j*V .. of one row (ptx_dw.h) */
static void emit_bwd_ncl(dw *s)
{
    ptx_buf *b = s->b;
    const ws_conv_desc *d = s->d;
    const int V = s->V, K = s->K, P = s->P, H = s->H, D = s->D;
    const long long C = d->c_in;
    const int xs = d->x_type == WS_F32 ? 4 : 2, ys = d->y_type == WS_F32 ? 4 : 2;
    bwd_params f = bwd_param_load(s);

    ws_ptx_section(b, "j = ctaid.x*WS_DW_THREADS + tid.x < nch (vectors per row, padded to 32: whole warps), c = ctaid.y, n = ctaid.z");
    plabel done = ws_ptx_label_new(b, "done");
    preg j = thread_index(b, f.nch, done), n = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64);
    preg row = ws_ptx_reg(b, PTX_B64);
    grid_yz(b, c, n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", row.n, n.n, C, c.n);

    preg w[WS_DW_MAX_K], bias[1];
    channel_weights(b, K, c, f.pw, f.pb, f.hasb, w, bias, s->wt);

    /* gz at offsets glo .. ghi from t0 serves dx (u + P - D*k) and dw, db (0 .. V-1) */
    const int glo = P - H < 0 ? P - H : 0, ghi = V - 1 + P > V - 1 ? V - 1 + P : V - 1;
    const int xlo = floor_div(glo - P, V), xhi = floor_div(ghi - P + H, V);
    const int dlo = floor_div(glo, V), dhi = floor_div(ghi, V);
    if (ghi - glo + 1 > 64 || xhi - xlo + 1 > 16 || dhi - dlo + 1 > 16) {
        ws_ptx_fail(b, "padding too large for the depthwise NCL kernel");
        return;
    }
    ws_ptx_section(b, "x vectors of row (n, c) and dy vectors of row (n, c) around j");
    preg xrow = ws_ptx_reg(b, PTX_B64), dyrow = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", xrow.n, row.n, s->tin.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xrow.n, xrow.n, xs, f.px.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", dyrow.n, row.n, s->tout.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", dyrow.n, dyrow.n, ys, f.pdy.n);
    ws_ptx_vec xq[16], dq[16];
    load_span(s, xq, xlo, xhi, d->x_type, j, s->tin, xrow);
    load_span(s, dq, dlo, dhi, d->y_type, j, s->tout, dyrow);
    ncl_span xsp = { .q = xq, .qlo = xlo, .V = V, .P = P, .D = D };
    ncl_span dsp = { .q = dq, .qlo = dlo, .V = V, .P = P, .D = D };

    ws_ptx_section(b, "gz[g] = dy[t0 + g] * act'(z(t0 + g)), g = glo .. ghi");
    preg gz[64];
    for (int g = glo; g <= ghi; g++) {
        preg xv[WS_DW_MAX_K];
        for (int k = 0; k < K; k++)
            xv[k] = span_elem(b, &xsp, g - P + D * k);
        gz[g - glo] = bwd_gz(s, xv, w, 1, bias[0], f.hasb, span_elem(b, &dsp, g));
    }

    ws_ptx_section(b, "dx[t0 + m] = sum_k w[k] gz[m + P - D*k], m < V (t0 < T_in)");
    preg dx[8], t0 = ws_ptx_reg(b, PTX_B64), xa = ws_ptx_reg(b, PTX_B64), dxp = ws_ptx_reg(b, PTX_PRED);
    for (int m = 0; m < V; m++) {
        preg gk[WS_DW_MAX_K];
        for (int k = 0; k < K; k++)
            gk[k] = gz[m + P - D * k - glo];
        dx[m] = bwd_dx(b, K, w, 1, gk);
    }
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", t0.n, j.n, V);
    ws_ptx_ins(b, "setp.lt.and.u64 %s, %s, %s, %s", dxp.n, t0.n, s->tin.n, f.hasdx.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", xa.n, row.n, s->tin.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", xa.n, xa.n, t0.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", xa.n, xa.n, xs, f.pdx.n);
    ws_ptx_vec_store(b, xa, dx, V, d->x_type, dxp);

    ws_ptx_section(b, "dw[k] = sum_m gz[m] x[t0 + m - P + D*k], db = sum_m gz[m]; the warp's sum");
    plabel nopart = ws_ptx_label_new(b, "nopart");
    ws_ptx_ins(b, "@!%s bra %s", f.haspart.n, nopart.n);
    preg acc[WS_DW_MAX_K + 1];
    for (int k = 0; k <= K; k++) {
        acc[k] = ws_ptx_reg(b, PTX_F32);
        ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc[k].n);
        for (int m = 0; m < V; m++) {
            if (k < K) {
                preg x = span_elem(b, &xsp, m - P + D * k);
                ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", acc[k].n, gz[m - glo].n, x.n, acc[k].n);
            } else {
                ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", acc[k].n, acc[k].n, gz[m - glo].n);
            }
        }
        preg o = ws_ptx_reg(b, PTX_F32);
        for (int sh = 16; sh >= 1; sh /= 2) {
            ws_ptx_ins(b, "shfl.sync.down.b32 %s, %s, %d, 31, -1", o.n, acc[k].n, sh);
            ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", acc[k].n, acc[k].n, o.n);
        }
    }
    ws_ptx_comment(b, "lane 0: part[((n*nch/32 + j/32)*(K+1) + k)*C + c]");
    preg lane = ws_ptx_reg(b, PTX_B64), l0 = ws_ptx_reg(b, PTX_PRED), pa = ws_ptx_reg(b, PTX_B64);
    preg p = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "and.b64 %s, %s, 31", lane.n, j.n);
    ws_ptx_ins(b, "setp.eq.u64 %s, %s, 0", l0.n, lane.n);
    ws_ptx_ins(b, "shr.u64 %s, %s, 5", p.n, f.nch.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %s", p.n, p.n, n.n);
    ws_ptx_ins(b, "shr.u64 %s, %s, 5", pa.n, j.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", p.n, p.n, pa.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", pa.n, p.n, (long long)(K + 1) * C);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", pa.n, pa.n, c.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", pa.n, pa.n, f.ppart.n);
    for (int k = 0; k <= K; k++)
        ws_ptx_ins(b, "@%s st.global.f32 [%s+%lld], %s", l0.n, pa.n, (long long)k * C * 4, acc[k].n);
    ws_ptx_label(b, nopart);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* dw[c,k] = sum_p part[p][k][c], db[c] = sum_p part[p][K][c], in the order p */
static void emit_fin(dw *s)
{
    ptx_buf *b = s->b;
    const long long C = s->d->c_in, K = s->K;
    ws_ptx_section(b, "parameters");
    const ws_params *pt = ws_params_of(WS_PARAMS_DW_FIN);
    static const int pi[] = { WS_DWFIN_PART, WS_DWFIN_DW, WS_DWFIN_DB };
    preg p[3];
    ws_ptx_param_ptrs(b, p, pt, pi, 3);
    preg np = ws_ptx_param_u32(b, pt, WS_DWFIN_NP);
    preg hasdw = ws_ptx_reg(b, PTX_PRED), hasdb = ws_ptx_reg(b, PTX_PRED), raw = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, raw, pt, WS_DWFIN_DW);
    ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", hasdw.n, raw.n);
    ws_ptx_ld_param(b, raw, pt, WS_DWFIN_DB);
    ws_ptx_ins(b, "setp.ne.u64 %s, %s, 0", hasdb.n, raw.n);

    ws_ptx_section(b, "i = k*C + c < (K+1)*C");
    preg total = ws_ptx_reg(b, PTX_B64), kk = ws_ptx_reg(b, PTX_B64), c = ws_ptx_reg(b, PTX_B64);
    plabel done = ws_ptx_label_new(b, "done");
    char imm[32];
    ws_ptx_ins(b, "mov.u64 %s, %lld", total.n, (K + 1) * C);
    preg i = thread_index(b, total, done);
    snprintf(imm, sizeof imm, "%lld", C);
    divmod(b, kk, c, i, imm);

    ws_ptx_section(b, "acc = sum_p part[p*(K+1)*C + i], four loads ahead of the adds");
    preg a = ws_ptx_reg(b, PTX_B64), acc = ws_ptx_reg(b, PTX_F32), q = ws_ptx_reg(b, PTX_B64);
    preg left = ws_ptx_reg(b, PTX_PRED), v[4];
    const long long step = (K + 1) * C * 4;
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", a.n, i.n, p[0].n);
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", acc.n);
    ws_ptx_ins(b, "mov.u64 %s, 0", q.n);
    plabel four = ws_ptx_label_new(b, "four"), one = ws_ptx_label_new(b, "one");
    plabel tail = ws_ptx_label_new(b, "tail"), end = ws_ptx_label_new(b, "end");
    for (int u = 0; u < 4; u++)
        v[u] = ws_ptx_reg(b, PTX_F32);
    preg q4 = ws_ptx_reg(b, PTX_B64);
    ws_ptx_label(b, four);
    ws_ptx_ins(b, "add.u64 %s, %s, 4", q4.n, q.n);
    ws_ptx_ins(b, "setp.gt.u64 %s, %s, %s", left.n, q4.n, np.n);
    ws_ptx_ins(b, "@%s bra %s", left.n, tail.n);
    for (int u = 0; u < 4; u++)
        ws_ptx_ins(b, "ld.global.f32 %s, [%s+%lld]", v[u].n, a.n, u * step);
    for (int u = 0; u < 4; u++)
        ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", acc.n, acc.n, v[u].n);
    ws_ptx_ins(b, "add.u64 %s, %s, %lld", a.n, a.n, 4 * step);
    ws_ptx_ins(b, "mov.b64 %s, %s", q.n, q4.n);
    ws_ptx_ins(b, "bra %s", four.n);
    ws_ptx_label(b, tail);
    ws_ptx_label(b, one);
    ws_ptx_ins(b, "setp.ge.u64 %s, %s, %s", left.n, q.n, np.n);
    ws_ptx_ins(b, "@%s bra %s", left.n, end.n);
    ws_ptx_ins(b, "ld.global.f32 %s, [%s]", v[0].n, a.n);
    ws_ptx_ins(b, "add.rn.f32 %s, %s, %s", acc.n, acc.n, v[0].n);
    ws_ptx_ins(b, "add.u64 %s, %s, %lld", a.n, a.n, step);
    ws_ptx_ins(b, "add.u64 %s, %s, 1", q.n, q.n);
    ws_ptx_ins(b, "bra %s", one.n);
    ws_ptx_label(b, end);

    ws_ptx_section(b, "k < K: dw[c*K + k] = acc; k = K: db[c] = acc");
    preg isdb = ws_ptx_reg(b, PTX_PRED), st = ws_ptx_reg(b, PTX_PRED), da = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "setp.eq.u64 %s, %s, %lld", isdb.n, kk.n, K);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", da.n, c.n, K, kk.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", da.n, da.n, p[1].n);
    ws_ptx_ins(b, "not.pred %s, %s", st.n, isdb.n);
    ws_ptx_ins(b, "and.pred %s, %s, %s", st.n, st.n, hasdw.n);
    ws_ptx_ins(b, "@%s st.global.f32 [%s], %s", st.n, da.n, acc.n);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", da.n, c.n, p[2].n);
    ws_ptx_ins(b, "and.pred %s, %s, %s", st.n, isdb.n, hasdb.n);
    ws_ptx_ins(b, "@%s st.global.f32 [%s], %s", st.n, da.n, acc.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* ---- the module ---- */

char *ws_dw_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err)
{
    return ws_dw_emit_w(d, WS_F32, cc_major, cc_minor, err);
}

char *ws_dw_emit_w(const ws_conv_desc *d, ws_dtype wt, int cc_major, int cc_minor, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_DW_NAME_MAX];
    ws_dw_name_w(d, wt, name);
    if (!ws_dw_fits(d)) {
        ws_errf(err, "ws_dw_emit(%s): not a depthwise stride-1 descriptor the kernels take", name);
        return NULL;
    }
    const int bwd = d->op == WS_CONV_BWD, ncl = d->x_layout == WS_NCL;
    ptx_buf mod, kb;
    ws_ptx_init(&mod);
    ws_ptx_module_begin(&mod, cc_major, cc_minor,
                     bwd ? "whisper-stem conv engine: depthwise backward (fused) and its finishing pass"
                         : "whisper-stem conv engine: depthwise forward");
    dw s;
    shape_of(d, &s);
    s.wt = wt;
    ws_ptx_init(&kb);
    s.b = &kb;
    ws_ptx_comment(&kb, "C %d K %d D %d P_L %d P_R %d, %s, x %s, y %s, pre %s, act %s; V %d R %d U %d L %d",
                d->c_in, d->k, d->dilation, d->pad_l, d->pad_r, ncl ? "NCL" : "NLC",
                ws_ptx_type_name(d->x_type), ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre), ws_ptx_act_name(d->act), s.V,
                s.R, s.U, s.L);
    if (!bwd) {
        if (ncl)
            emit_fwd_ncl(&s);
        else
            emit_fwd_nlc(&s);
        ws_ptx_kernel_end_params(&kb, &mod, name, ws_params_of(WS_PARAMS_FWD), WS_DW_THREADS, 0,
                                 ncl ? 0 : WS_DW_MAX_REGS);
    } else {
        char entry[WS_DW_NAME_MAX];
        if (ncl)
            emit_bwd_ncl(&s);
        else
            emit_bwd_nlc(&s);
        ws_dw_entry_w(d, wt, 0, entry);
        ws_ptx_kernel_end_params(&kb, &mod, entry, ws_params_of(WS_PARAMS_DW_BWD), WS_DW_THREADS, 0,
                                 ncl ? 0 : WS_DW_MAX_REGS);
        ws_ptx_init(&kb);
        s.b = &kb;
        emit_fin(&s);
        ws_dw_entry_w(d, wt, 1, entry);
        ws_ptx_kernel_end_params(&kb, &mod, entry, ws_params_of(WS_PARAMS_DW_FIN), WS_DW_THREADS, 0, 0);
    }
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_dw_emit(%s): %s", name, why);
    return text;
}

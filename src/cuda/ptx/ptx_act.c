/* ptx_act.c - the activation table and element conversions as PTX (ptx_act.h). */
#include <stdio.h>
#include <string.h>

#include "gelu_ptx.h"
#include "ptx_act.h"

#define NEG_LOG2E WS_NEG_LOG2E
#define LOG2E_HALF_NEG WS_LOG2E_HALF_NEG
#define INV_SQRT_2PI WS_INV_SQRT_2PI
#define TINY_Z WS_GELU_TINY_Z

/* v = (float)*(type *)addr;  nc: through the read-only (non-coherent) path */
void ws_ptx_load(ptx_buf *b, preg v, preg addr, ws_dtype t, int nc)
{
    const char *sp = nc ? "global.nc" : "global";
    if (t == WS_F32) {
        ws_ptx_ins(b, "ld.%s.f32 %s, [%s]", sp, v.n, addr.n);
    } else if (t == WS_F16) {
        preg h = ws_ptx_reg(b, PTX_B16);
        ws_ptx_ins(b, "ld.%s.b16 %s, [%s]", sp, h.n, addr.n);
        ws_ptx_ins(b, "cvt.f32.f16 %s, %s", v.n, h.n);
    } else { /* bf16: the 16 bits are the top half of the float32 */
        preg r = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ins(b, "ld.%s.u16 %s, [%s]", sp, r.n, addr.n);
        ws_ptx_ins(b, "shl.b32 %s, %s, 16", r.n, r.n);
        ws_ptx_ins(b, "mov.b32 %s, %s", v.n, r.n);
    }
}

void ws_ptx_load_pred(ptx_buf *b, preg v, preg addr, preg p, ws_dtype t)
{
    ws_ptx_ins(b, "mov.f32 %s, 0f00000000", v.n);
    if (t == WS_F32) {
        ws_ptx_ins(b, "@%s ld.global.nc.f32 %s, [%s]", p.n, v.n, addr.n);
        return;
    }
    preg h = ws_ptx_reg(b, PTX_B16);
    ws_ptx_ins(b, "mov.b16 %s, 0", h.n);
    ws_ptx_ins(b, "@%s ld.global.nc.b16 %s, [%s]", p.n, h.n, addr.n);
    if (t == WS_F16) {
        ws_ptx_ins(b, "cvt.f32.f16 %s, %s", v.n, h.n);
    } else { /* bf16: the 16 bits are the top half of the float32 */
        preg w = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ins(b, "cvt.u32.u16 %s, %s", w.n, h.n);
        ws_ptx_ins(b, "shl.b32 %s, %s, 16", w.n, w.n);
        ws_ptx_ins(b, "mov.b32 %s, %s", v.n, w.n);
    }
}

/* *(type *)addr = v, rounded to nearest even */
void ws_ptx_store(ptx_buf *b, preg addr, preg v, ws_dtype t)
{
    if (t == WS_F32) {
        ws_ptx_ins(b, "st.global.f32 [%s], %s", addr.n, v.n);
        return;
    }
    preg h = ws_ptx_reg(b, PTX_B16);
    ws_ptx_ins(b, "cvt.rn.%s.f32 %s, %s", t == WS_F16 ? "f16" : "bf16", h.n, v.n);
    ws_ptx_ins(b, "st.global.b16 [%s], %s", addr.n, h.n);
}

/* ---- vectors of V elements: v2 / v4 accesses, 16-bit types as f16x2 / bf16x2 pairs ---- */

ws_ptx_vec ws_ptx_vec_new(ptx_buf *b, ws_dtype t, int V)
{
    ws_ptx_vec v = { .t = t, .nr = t == WS_F32 ? V : V / 2 };
    for (int i = 0; i < v.nr; i++)
        v.r[i] = ws_ptx_reg(b, t == WS_F32 ? PTX_F32 : PTX_B32);
    return v;
}

/* "{r0, r1, ...}" */
void ws_ptx_vec_list(const ws_ptx_vec *v, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "{");
    for (int i = 0; i < v->nr && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? ", " : "", v->r[i].n);
    if (n < cap)
        snprintf(out + n, cap - n, "}");
}

/* v = pred ? *(vector *)addr : 0  (read-only path) */
void ws_ptx_vec_load(ptx_buf *b, const ws_ptx_vec *v, preg addr, preg pred)
{
    char list[160];
    for (int i = 0; i < v->nr; i++)
        ws_ptx_ins(b, "mov.b32 %s, 0", v->r[i].n);
    ws_ptx_vec_list(v, list, sizeof list);
    if (v->nr == 1)
        ws_ptx_ins(b, "@%s ld.global.nc.%s %s, [%s]", pred.n, v->t == WS_F32 ? "f32" : "b32",
                v->r[0].n, addr.n);
    else
        ws_ptx_ins(b, "@%s ld.global.nc.v%d.%s %s, [%s]", pred.n, v->nr,
                v->t == WS_F32 ? "f32" : "b32", list, addr.n);
}

/* element e of v as float32: a register of v itself (f32) or a fresh one */
preg ws_ptx_vec_elem(ptx_buf *b, const ws_ptx_vec *v, int e)
{
    if (v->t == WS_F32)
        return v->r[e];
    preg f = ws_ptx_reg(b, PTX_F32);
    const preg w = v->r[e / 2];
    if (v->t == WS_BF16) {
        preg u = ws_ptx_reg(b, PTX_B32);
        if (e % 2)
            ws_ptx_ins(b, "and.b32 %s, %s, 0xFFFF0000", u.n, w.n);
        else
            ws_ptx_ins(b, "shl.b32 %s, %s, 16", u.n, w.n);
        ws_ptx_ins(b, "mov.b32 %s, %s", f.n, u.n);
    } else {
        preg lo = ws_ptx_reg(b, PTX_B16), hi = ws_ptx_reg(b, PTX_B16);
        ws_ptx_ins(b, "mov.b32 {%s, %s}, %s", lo.n, hi.n, w.n);
        ws_ptx_ins(b, "cvt.f32.f16 %s, %s", f.n, e % 2 ? hi.n : lo.n);
    }
    return f;
}

/* if (pred) *(vector of type t *)addr = f[0..V-1], rounded to nearest even */
void ws_ptx_vec_store(ptx_buf *b, preg addr, const preg *f, int V, ws_dtype t, preg pred)
{
    char list[160];
    size_t n = (size_t)snprintf(list, sizeof list, "{");
    if (t == WS_F32) {
        for (int i = 0; i < V; i++)
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", f[i].n);
    } else {
        for (int i = 0; i < V / 2; i++) {
            preg p = ws_ptx_reg(b, PTX_B32);
            ws_ptx_ins(b, "cvt.rn.%s.f32 %s, %s, %s", t == WS_F16 ? "f16x2" : "bf16x2", p.n,
                    f[2 * i + 1].n, f[2 * i].n);
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", p.n);
        }
    }
    snprintf(list + n, sizeof list - n, "}");
    const int nr = t == WS_F32 ? V : V / 2;
    if (nr == 1) /* "{r}" -> "r" */
        ws_ptx_ins(b, "@%s st.global.%s [%s], %.*s", pred.n, t == WS_F32 ? "f32" : "b32", addr.n,
                (int)strlen(list) - 2, list + 1);
    else
        ws_ptx_ins(b, "@%s st.global.v%d.%s [%s], %s", pred.n, nr, t == WS_F32 ? "f32" : "b32",
                addr.n, list);
}

/* v = act(v): relu max(v, 0); gelu x Phi(x) (gelu_ptx.h); silu v / (1 + 2^(-v log2 e)) */
void ws_ptx_act(ptx_buf *b, preg v, ws_act a)
{
    if (a == WS_ACT_RELU) {
        ws_ptx_ins(b, "max.f32 %s, %s, 0f00000000", v.n, v.n);
    } else if (a == WS_ACT_GELU) {
        ws_gelu_emit(b, v.n, v.n);
    } else if (a == WS_ACT_SILU) {
        preg e = ws_ptx_reg(b, PTX_F32);
        ws_ptx_comment(b, "%s = silu(%s) = z * rcp(1 + 2^(-z log2 e))", v.n, v.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", e.n, v.n, ws_ptx_f32(NEG_LOG2E).s);
        ws_ptx_ins(b, "ex2.approx.ftz.f32 %s, %s", e.n, e.n);
        ws_ptx_ins(b, "add.f32 %s, %s, 0f3F800000", e.n, e.n);
        ws_ptx_ins(b, "rcp.approx.ftz.f32 %s, %s", e.n, e.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", v.n, v.n, e.n);
    }
}

/* g *= act'(z):
 *   RELU  z > 0 ? g : 0
 *   GELU  Phi(z) + z*phi(z): Phi = gelu(z) / z from gelu_ptx.h's erf sequence (Phi = 0.5 for
 *         |z| < 2^-60), phi = 2^(-z^2 log2(e) / 2) / sqrt(2 pi) by ex2.approx.ftz
 *   SILU  s + z*s*(1-s): e = 2^(-|z| log2 e), r = 1/(1+e); s, 1-s = r, e*r (z >= 0) or
 *         e*r, r (z < 0), so neither side cancels (act.c's form) */
void ws_ptx_act_grad(ptx_buf *b, ws_act a, preg g, preg z)
{
    if (a == WS_ACT_RELU) {
        preg pos = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_comment(b, "%s *= relu'(%s) = [z > 0]", g.n, z.n);
        ws_ptx_ins(b, "setp.gt.f32 %s, %s, 0f00000000", pos.n, z.n);
        ws_ptx_ins(b, "selp.f32 %s, %s, 0f00000000, %s", g.n, g.n, pos.n);
    } else if (a == WS_ACT_GELU) {
        preg gl = ws_ptx_reg(b, PTX_F32), cdf = ws_ptx_reg(b, PTX_F32), az = ws_ptx_reg(b, PTX_F32);
        preg pdf = ws_ptx_reg(b, PTX_F32), tiny = ws_ptx_reg(b, PTX_PRED);
        ws_gelu_emit(b, gl.n, z.n);
        ws_ptx_comment(b, "%s *= gelu'(%s) = Phi(z) + z phi(z), Phi = gelu(z) / z", g.n, z.n);
        ws_ptx_ins(b, "div.rn.f32 %s, %s, %s", cdf.n, gl.n, z.n);
        ws_ptx_ins(b, "abs.f32 %s, %s", az.n, z.n);
        ws_ptx_ins(b, "setp.lt.f32 %s, %s, %s", tiny.n, az.n, ws_ptx_f32(TINY_Z).s);
        ws_ptx_ins(b, "selp.f32 %s, 0f3F000000, %s, %s", cdf.n, cdf.n, tiny.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", pdf.n, z.n, z.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", pdf.n, pdf.n, ws_ptx_f32(LOG2E_HALF_NEG).s);
        ws_ptx_ins(b, "ex2.approx.ftz.f32 %s, %s", pdf.n, pdf.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", pdf.n, pdf.n, ws_ptx_f32(INV_SQRT_2PI).s);
        ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", cdf.n, z.n, pdf.n, cdf.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", g.n, g.n, cdf.n);
    } else if (a == WS_ACT_SILU) {
        preg e = ws_ptx_reg(b, PTX_F32), r = ws_ptx_reg(b, PTX_F32), er = ws_ptx_reg(b, PTX_F32);
        preg sg = ws_ptx_reg(b, PTX_F32), s1 = ws_ptx_reg(b, PTX_F32), pos = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_comment(b, "%s *= silu'(%s) = s + z s (1 - s)", g.n, z.n);
        ws_ptx_ins(b, "abs.f32 %s, %s", e.n, z.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", e.n, e.n, ws_ptx_f32(NEG_LOG2E).s);
        ws_ptx_ins(b, "ex2.approx.ftz.f32 %s, %s", e.n, e.n);
        ws_ptx_ins(b, "add.f32 %s, %s, 0f3F800000", r.n, e.n);
        ws_ptx_ins(b, "rcp.approx.ftz.f32 %s, %s", r.n, r.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", er.n, e.n, r.n);
        ws_ptx_ins(b, "setp.ge.f32 %s, %s, 0f00000000", pos.n, z.n);
        ws_ptx_ins(b, "selp.f32 %s, %s, %s, %s", sg.n, r.n, er.n, pos.n);
        ws_ptx_ins(b, "selp.f32 %s, %s, %s, %s", s1.n, er.n, r.n, pos.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", s1.n, sg.n, s1.n);
        ws_ptx_ins(b, "fma.rn.f32 %s, %s, %s, %s", sg.n, z.n, s1.n, sg.n);
        ws_ptx_ins(b, "mul.f32 %s, %s, %s", g.n, g.n, sg.n);
    }
}


const char *ws_ptx_type_name(ws_dtype t)
{
    return t == WS_F32 ? "f32" : t == WS_F16 ? "f16" : "bf16";
}

const char *ws_ptx_act_name(ws_act a)
{
    switch (a) {
    case WS_ACT_NONE: return "none";
    case WS_ACT_RELU: return "relu";
    case WS_ACT_GELU: return "gelu";
    case WS_ACT_SILU: return "silu";
    }
    return "?";
}

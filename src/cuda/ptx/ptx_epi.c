/* ptx_epi.c - the forward epilogue as PTX (ptx_epi.h). */
#include <string.h>

#include "ptx_epi.h"

static int named(preg r)
{
    return r.n[0] != '\0';
}

/* a->at, or at = base + index * scale (a fresh at when a->at is not named) */
static preg addr_at(ptx_buf *b, const ws_ptx_addr *a)
{
    if (!named(a->index))
        return a->at;
    const preg at = named(a->at) ? a->at : ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %lld, %s", at.n, a->index.n, a->scale, a->base.n);
    return at;
}

/* if (!bias_if) goto nobias; v += *(float *)bias_at; nobias: */
static void bias_from_memory(ptx_buf *b, const ws_ptx_epi *e, preg v)
{
    plabel nob = ws_ptx_label_new(b, "nobias");
    const preg bv = ws_ptx_reg(b, PTX_F32);
    ws_ptx_ins(b, "@!%s bra %s", e->bias_if.n, nob.n);
    const preg ba = addr_at(b, &e->bias_at);
    ws_ptx_ins(b, "ld.global.nc.f32 %s, [%s]", bv.n, ba.n);
    ws_ptx_ins(b, "add.f32 %s, %s, %s", v.n, v.n, bv.n);
    ws_ptx_label(b, nob);
}

/* v[i] = act(src[i] + bias[i*stride]), i < n; if (add_if) v += add; y = v (ptx_epi.h) */
void ws_ptx_epi_emit(ptx_buf *b, const ws_ptx_epi *e)
{
    const int bias_mem = named(e->bias_at.at) || named(e->bias_at.index);
    if (e->n != 1 && (e->n % 2 || e->n > 8 || !named(e->in) || bias_mem)) {
        ws_ptx_fail(b, "ws_ptx_epi_emit: n is 1, or 2, 4, 8 with a predicate in and bias registers");
        return;
    }
    if (bias_mem && (e->bias || !named(e->bias_if))) {
        ws_ptx_fail(b, "ws_ptx_epi_emit: bias_at with bias registers, or without bias_if");
        return;
    }
    /* a predicated bias add writes v only where the predicate holds: v must be the source */
    if (e->bias && named(e->bias_if) && e->src) {
        ws_ptx_fail(b, "ws_ptx_epi_emit: bias_if with bias registers takes v as its own source");
        return;
    }
    /* one vector access is at most 16 bytes */
    if (e->n > 1 && e->n * (e->y_type == WS_F32 ? 4 : 2) > 16) {
        ws_ptx_fail(b, "ws_ptx_epi_emit: a vector of n elements of y_type over 16 bytes");
        return;
    }
    for (int i = 0; i < e->n; i++) {
        const preg v = e->v[i], s = e->src ? e->src[i] : v;
        if (e->bias && named(e->bias_if))
            ws_ptx_ins(b, "@%s add.f32 %s, %s, %s", e->bias_if.n, v.n, s.n,
                       e->bias[i * e->bias_stride].n);
        else if (e->bias)
            ws_ptx_ins(b, "add.f32 %s, %s, %s", v.n, s.n, e->bias[i * e->bias_stride].n);
        else if (strcmp(s.n, v.n))
            ws_ptx_ins(b, "mov.f32 %s, %s", v.n, s.n);
        if (bias_mem)
            bias_from_memory(b, e, v);
        ws_ptx_act(b, v, e->act);
    }
    if (e->n == 1 && named(e->in)) { /* branch-free: the add read and the store under `in` */
        if (named(e->add_if) && e->add_v) {
            ws_ptx_ins(b, "@%s add.f32 %s, %s, %s", e->add_if.n, e->v[0].n, e->v[0].n, e->add_v[0].n);
        } else if (named(e->add_if)) {
            const preg p = ws_ptx_reg(b, PTX_PRED), av = ws_ptx_reg(b, PTX_F32);
            const preg aa = addr_at(b, &e->add);
            ws_ptx_ins(b, "and.pred %s, %s, %s", p.n, e->in.n, e->add_if.n);
            ws_ptx_ins(b, "mov.f32 %s, 0f00000000", av.n);
            if (e->y_type == WS_F32) {
                ws_ptx_ins(b, "@%s ld.global.f32 %s, [%s]", p.n, av.n, aa.n);
            } else {
                const preg h = ws_ptx_reg(b, PTX_B16);
                ws_ptx_ins(b, "mov.b16 %s, 0", h.n);
                ws_ptx_ins(b, "@%s ld.global.b16 %s, [%s]", p.n, h.n, aa.n);
                if (e->y_type == WS_F16) {
                    ws_ptx_ins(b, "cvt.f32.f16 %s, %s", av.n, h.n);
                } else {
                    const preg w = ws_ptx_reg(b, PTX_B32);
                    ws_ptx_ins(b, "cvt.u32.u16 %s, %s", w.n, h.n);
                    ws_ptx_ins(b, "shl.b32 %s, %s, 16", w.n, w.n);
                    ws_ptx_ins(b, "mov.b32 %s, %s", av.n, w.n);
                }
            }
            ws_ptx_ins(b, "@%s add.f32 %s, %s, %s", p.n, e->v[0].n, e->v[0].n, av.n);
        }
        const preg ya = addr_at(b, &e->y);
        if (e->y_type == WS_F32) {
            ws_ptx_ins(b, "@%s st.global.f32 [%s], %s", e->in.n, ya.n, e->v[0].n);
        } else {
            const preg h = ws_ptx_reg(b, PTX_B16);
            ws_ptx_ins(b, "cvt.rn.%s.f32 %s, %s", e->y_type == WS_F16 ? "f16" : "bf16", h.n, e->v[0].n);
            ws_ptx_ins(b, "@%s st.global.b16 [%s], %s", e->in.n, ya.n, h.n);
        }
        return;
    }
    if (named(e->add_if) && e->add_v) { /* n > 1, the add already read: no branch */
        for (int i = 0; i < e->n; i++)
            ws_ptx_ins(b, "@%s add.f32 %s, %s, %s", e->add_if.n, e->v[i].n, e->v[i].n, e->add_v[i].n);
    } else if (named(e->add_if)) {
        plabel noadd = ws_ptx_label_new(b, "noadd");
        ws_ptx_ins(b, "@!%s bra %s", e->add_if.n, noadd.n);
        const preg aa = addr_at(b, &e->add);
        if (e->n == 1) {
            const preg av = ws_ptx_reg(b, PTX_F32);
            ws_ptx_load(b, av, aa, e->y_type, 0);
            ws_ptx_ins(b, "add.f32 %s, %s, %s", e->v[0].n, e->v[0].n, av.n);
        } else {
            const ws_ptx_vec a = ws_ptx_vec_new(b, e->y_type, e->n);
            ws_ptx_vec_load(b, &a, aa, e->in);
            for (int i = 0; i < e->n; i++) {
                const preg av = ws_ptx_vec_elem(b, &a, i);
                ws_ptx_ins(b, "add.f32 %s, %s, %s", e->v[i].n, e->v[i].n, av.n);
            }
        }
        ws_ptx_label(b, noadd);
    }
    const preg ya = addr_at(b, &e->y);
    if (e->n == 1)
        ws_ptx_store(b, ya, e->v[0], e->y_type);
    else
        ws_ptx_vec_store(b, ya, e->v, e->n, e->y_type, e->in);
}

/* ptx_wprep.c - the weight-preparation kernels' emitter (ptx_wprep.h). Emission is a pure
 * function of the descriptor and the compute capability. */
#include <stdio.h>
#include <stdlib.h>

#include "ptx_act.h"
#include "ptx_emit.h"
#include "ptx_gemm.h"
#include "ptx_params.h"
#include "ptx_wprep.h"

int ws_wprep_packs(const ws_conv_desc *d)
{
    return ws_gemm_packs(d);
}

void ws_wprep_name(const ws_conv_desc *d, char name[WS_WPREP_NAME_MAX])
{
    snprintf(name, WS_WPREP_NAME_MAX, "ws_wprep_%s_c%d_%d_g%d_k%d_%s%s",
             ws_ptx_type_name(d->w_type), d->c_in, d->c_out, d->groups, d->k,
             !ws_wprep_packs(d) ? "cast"
             : d->math == WS_MATH_BF16 ? "bf16" : d->math == WS_MATH_F16 ? "f16"
             : d->math == WS_MATH_TF32 ? "tf32" : "f32t",
             ws_wprep_packs(d) && ws_gemm_mma(d) && ws_gemm_mma_kmajor(d) ? "_km" : "");
}

void ws_wprep_entry(const ws_conv_desc *d, int pack, char name[WS_WPREP_NAME_MAX])
{
    char base[WS_WPREP_NAME_MAX];
    ws_wprep_name(d, base);
    snprintf(name, WS_WPREP_NAME_MAX, "%.*s_%s", WS_WPREP_NAME_MAX - 8, base,
             pack ? "pack" : "cast");
}

/* i = ctaid.x * WS_WPREP_THREADS + tid.x (u64); if (i >= p_n) goto done. The parameter
 * pointers p_w, p_out into pw, pout (global). */
static preg prologue(ptx_buf *b, plabel done, preg *pw, preg *pout)
{
    const ws_params *t = ws_params_of(WS_PARAMS_WPREP);
    static const int pi[] = { WS_WPREP_W, WS_WPREP_OUT };
    preg p[2];
    ws_ptx_param_ptrs(b, p, t, pi, 2);
    *pw = p[0], *pout = p[1];
    preg n = ws_ptx_param_u32(b, t, WS_WPREP_N);
    preg i = ws_ptx_reg(b, PTX_B64), tid = ws_ptx_reg(b, PTX_B64), r32 = ws_ptx_reg(b, PTX_B32);
    preg out = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_ins(b, "mov.u32 %s, %%ctaid.x", r32.n);
    ws_ptx_ins(b, "mul.wide.u32 %s, %s, %d", i.n, r32.n, WS_WPREP_THREADS);
    ws_ptx_ins(b, "mov.u32 %s, %%tid.x", r32.n);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", tid.n, r32.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", i.n, i.n, tid.n);
    ws_ptx_ins(b, "setp.ge.u64 %s, %s, %s", out.n, i.n, n.n);
    ws_ptx_ins(b, "@%s bra %s", out.n, done.n);
    return i;
}

/* v = (float)w[src] */
static void load_w(ptx_buf *b, preg v, preg pw, preg src, ws_dtype wt)
{
    preg a = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", a.n, src.n, wt == WS_F32 ? 4 : 2, pw.n);
    ws_ptx_load(b, v, a, wt, 1);
}

/* cast: out[i] = (float)w[i] */
static void emit_cast(ptx_buf *b, const ws_conv_desc *d)
{
    ws_ptx_comment(b, "out[i] = (float)w[i], i < p_n; w %s", ws_ptx_type_name(d->w_type));
    plabel done = ws_ptx_label_new(b, "done");
    preg pw, pout;
    preg i = prologue(b, done, &pw, &pout);
    preg v = ws_ptx_reg(b, PTX_F32), a = ws_ptx_reg(b, PTX_B64);
    load_w(b, v, pw, i, d->w_type);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", a.n, i.n, pout.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", a.n, v.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* pack, the FFMA kernel's (ws_gemm_ffma_weights): out[i] = w[o][j][k], i = (k*C + j)*C_out + o */
static void emit_pack_f32(ptx_buf *b, const ws_conv_desc *d)
{
    const int C = d->c_in, K = d->k, O = d->c_out;
    ws_ptx_comment(b, "out[(k*C + j)*C_out + o] = w[o][j][k]; C_in %d, C_out %d, K %d", C, O, K);
    plabel done = ws_ptx_label_new(b, "done");
    preg pw, pout;
    preg i = prologue(b, done, &pw, &pout);
    preg o = ws_ptx_reg(b, PTX_B64), r = ws_ptx_reg(b, PTX_B64), j = ws_ptx_reg(b, PTX_B64);
    preg k = ws_ptx_reg(b, PTX_B64), src = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "div.u64 %s, %s, %d", r.n, i.n, O);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", o.n, r.n, O);
    ws_ptx_ins(b, "sub.u64 %s, %s, %s", o.n, i.n, o.n);
    ws_ptx_ins(b, "div.u64 %s, %s, %d", k.n, r.n, C);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", j.n, k.n, C);
    ws_ptx_ins(b, "sub.u64 %s, %s, %s", j.n, r.n, j.n);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", src.n, o.n, (long long)C * K);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", src.n, j.n, K, src.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", src.n, src.n, k.n);
    preg v = ws_ptx_reg(b, PTX_F32), a = ws_ptx_reg(b, PTX_B64);
    load_w(b, v, pw, src, d->w_type);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", a.n, i.n, pout.n);
    ws_ptx_ins(b, "st.global.f32 [%s], %s", a.n, v.n);
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

/* pack: out[i] = round(w[o][j][k]), i = o*R + (k-major ? k*C + j : j*K + k) */
static void emit_pack(ptx_buf *b, const ws_conv_desc *d)
{
    if (!ws_gemm_mma(d)) {
        emit_pack_f32(b, d);
        return;
    }
    const int C = d->c_in, K = d->k, km = ws_gemm_mma_kmajor(d);
    const long long R = (long long)C * K;
    const char *mt = d->math == WS_MATH_BF16 ? "bf16" : d->math == WS_MATH_F16 ? "f16" : "tf32";
    ws_ptx_comment(b, "out[o*R + %s] = %s(w[o][j][k]); R = %lld, C_in %d, K %d",
                   km ? "k*C + j" : "j*K + k", mt, R, C, K);
    plabel done = ws_ptx_label_new(b, "done");
    preg pw, pout;
    preg i = prologue(b, done, &pw, &pout);
    preg o = ws_ptx_reg(b, PTX_B64), r = ws_ptx_reg(b, PTX_B64), j = ws_ptx_reg(b, PTX_B64);
    preg k = ws_ptx_reg(b, PTX_B64), src = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ins(b, "div.u64 %s, %s, %lld", o.n, i.n, R);
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", r.n, o.n, R);
    ws_ptx_ins(b, "sub.u64 %s, %s, %s", r.n, i.n, r.n);
    if (km) {
        ws_ptx_ins(b, "div.u64 %s, %s, %d", k.n, r.n, C);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", j.n, k.n, C);
        ws_ptx_ins(b, "sub.u64 %s, %s, %s", j.n, r.n, j.n);
    } else {
        ws_ptx_ins(b, "div.u64 %s, %s, %d", j.n, r.n, K);
        ws_ptx_ins(b, "mul.lo.u64 %s, %s, %d", k.n, j.n, K);
        ws_ptx_ins(b, "sub.u64 %s, %s, %s", k.n, r.n, k.n);
    }
    ws_ptx_ins(b, "mul.lo.u64 %s, %s, %lld", src.n, o.n, R);
    ws_ptx_ins(b, "mad.lo.u64 %s, %s, %d, %s", src.n, j.n, K, src.n);
    ws_ptx_ins(b, "add.u64 %s, %s, %s", src.n, src.n, k.n);
    preg v = ws_ptx_reg(b, PTX_F32), a = ws_ptx_reg(b, PTX_B64);
    load_w(b, v, pw, src, d->w_type);
    if (d->math == WS_MATH_TF32) {
        preg t = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ins(b, "cvt.rna.tf32.f32 %s, %s", t.n, v.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, 4, %s", a.n, i.n, pout.n);
        ws_ptx_ins(b, "st.global.b32 [%s], %s", a.n, t.n);
    } else {
        preg h = ws_ptx_reg(b, PTX_B16);
        ws_ptx_ins(b, "cvt.rn.%s.f32 %s, %s", mt, h.n, v.n);
        ws_ptx_ins(b, "mad.lo.u64 %s, %s, 2, %s", a.n, i.n, pout.n);
        ws_ptx_ins(b, "st.global.b16 [%s], %s", a.n, h.n);
    }
    ws_ptx_label(b, done);
    ws_ptx_ins(b, "ret");
}

char *ws_wprep_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_WPREP_NAME_MAX], entry[WS_WPREP_NAME_MAX];
    ws_wprep_name(d, name);
    ptx_buf mod, kb;
    ws_ptx_init(&mod);
    ws_ptx_module_begin(&mod, cc_major, cc_minor,
                        "whisper-stem conv engine: weights given per call, prepared for the kernels");
    const ws_params *t = ws_params_of(WS_PARAMS_WPREP);
    for (int pack = 0; pack <= ws_wprep_packs(d); pack++) {
        ws_ptx_init(&kb);
        if (pack)
            emit_pack(&kb, d);
        else
            emit_cast(&kb, d);
        ws_wprep_entry(d, pack, entry);
        ws_ptx_kernel_end_params(&kb, &mod, entry, t, WS_WPREP_THREADS, 0, 0);
    }
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_wprep_emit(%s): %s", name, why);
    return text;
}

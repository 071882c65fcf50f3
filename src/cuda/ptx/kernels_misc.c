/* kernels_misc.c - the small kernels around the convs.
 *
 * ws_mel_t_<p>: transpose and convert the log-Mel for the conv kernels,
 *   xt[w][t][i] = cvt(mel[w][i][t]),  mel [n_win][C][T] f32,  xt [n_win][T][C]
 *   through a 32 x 33 float shared tile (the +1 column keeps the transposed
 *   reads on distinct banks); block 32 x 8 threads, each moving 4 values;
 *   grid (ceil(T/32), ceil(C/32), n_win). cvt: none (fp32), cvt.rna.tf32.f32
 *   (tf32), cvt.rn.bf16.f32, cvt.rn.f16.f32.
 * ws_splitk_finish: the end of an fp32 conv whose K was split into parts
 *   (kernels_ffma.c): ws[w*splits + s][t][o] holds part s's sums; per output
 *   y[w][t][o] = gelu(b[o] + sum_s ws[w*splits + s][t][o]) (+ pos[t][o]),
 *   the parts added in split order (the same bits on every run). One thread
 *   per 4 consecutive outputs (float4), 256 threads a block.
 * ws_gelu_grid: y[i] = gelu(x[i]) for i < n, 256 threads a block; exists so
 *   that tests/test_gpu.c (gelu_ptx_matches_double) can hold the PTX GELU to
 *   its stated error on a dense grid.
 */
#include <stdio.h>

#include "gelu_ptx.h"
#include "kernels.h"
#include "ptx_params.h"

#define I(...) ws_ptx_ins(b, __VA_ARGS__)

void ws_emit_mel_t(ptx_buf *mod, int cin, ws_precision p, ws_kernel_src *info)
{
    const int es = ws_prec_elem_bytes(p);
    snprintf(info->name, sizeof info->name, "ws_mel_t_%s", ws_precision_name(p));
    info->threads = 256;
    info->smem = 0;
    info->bm = info->bn = 0;
    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    ws_ptx_raw(b, "\t.shared .align 4 .b8 tile[%d];\n", 32 * 33 * 4);
    ws_ptx_comment(b, "xt[w][t][i] = %s(mel[w][i][t]), C = %d", p == WS_PREC_FP32 ? "" : "cvt", cin);
    const ws_params *pt = ws_params_of(WS_PARAMS_STEM_MEL_T);
    preg pm = ws_ptx_reg(b, PTX_B64), pxt = ws_ptx_reg(b, PTX_B64), T = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ld_param(b, pm, pt, WS_SMELT_MEL);
    ws_ptx_ld_param(b, pxt, pt, WS_SMELT_XT);
    ws_ptx_ld_param(b, T, pt, WS_SMELT_T);
    I("cvta.to.global.u64 %s, %s", pm.n, pm.n);
    I("cvta.to.global.u64 %s, %s", pxt.n, pxt.n);
    preg tid = ws_ptx_reg(b, PTX_B32), tx = ws_ptx_reg(b, PTX_B32), ty = ws_ptx_reg(b, PTX_B32);
    preg tb = ws_ptx_reg(b, PTX_B32), ib = ws_ptx_reg(b, PTX_B32), w = ws_ptx_reg(b, PTX_B32);
    preg sb = ws_ptx_reg(b, PTX_B32), wbase = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid.n);
    I("and.b32 %s, %s, 31", tx.n, tid.n);
    I("shr.u32 %s, %s, 5", ty.n, tid.n);
    I("mov.u32 %s, %%ctaid.x", tb.n);
    I("shl.b32 %s, %s, 5", tb.n, tb.n);
    I("mov.u32 %s, %%ctaid.y", ib.n);
    I("shl.b32 %s, %s, 5", ib.n, ib.n);
    I("mov.u32 %s, %%ctaid.z", w.n);
    I("mov.u32 %s, tile", sb.n);
    I("mul.lo.u32 %s, %s, %s", wbase.n, w.n, T.n);
    I("mul.lo.u32 %s, %s, %d", wbase.n, wbase.n, cin);   /* w*T*C: same for both layouts */
    ws_ptx_section(b, "read 4 rows of channels, time contiguous");
    preg t = ws_ptx_reg(b, PTX_B32), tok = ws_ptx_reg(b, PTX_PRED);
    I("add.u32 %s, %s, %s", t.n, tb.n, tx.n);
    I("setp.lt.u32 %s, %s, %s", tok.n, t.n, T.n);
    for (int j = 0; j < 4; j++) {
        preg i = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), off = ws_ptx_reg(b, PTX_B32);
        preg ga = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32), sa = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", i.n, ib.n, ty.n);
        I("add.u32 %s, %s, %d", i.n, i.n, 8 * j);
        I("setp.lt.u32 %s, %s, %d", ok.n, i.n, cin);
        I("and.pred %s, %s, %s", ok.n, ok.n, tok.n);
        I("mad.lo.u32 %s, %s, %s, %s", off.n, i.n, T.n, t.n);
        I("add.u32 %s, %s, %s", off.n, off.n, wbase.n);
        I("mul.wide.u32 %s, %s, 4", ga.n, off.n);
        I("add.u64 %s, %s, %s", ga.n, ga.n, pm.n);
        I("mov.f32 %s, 0f00000000", v.n);
        I("@%s ld.global.nc.f32 %s, [%s]", ok.n, v.n, ga.n);
        I("add.u32 %s, %s, %d", sa.n, ty.n, 8 * j);
        I("mad.lo.u32 %s, %s, 33, %s", sa.n, sa.n, tx.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        I("st.shared.f32 [%s], %s", sa.n, v.n);
    }
    I("bar.sync 0");
    ws_ptx_section(b, "write 4 rows of time, channels contiguous");
    preg i = ws_ptx_reg(b, PTX_B32), iok = ws_ptx_reg(b, PTX_PRED);
    I("add.u32 %s, %s, %s", i.n, ib.n, tx.n);
    I("setp.lt.u32 %s, %s, %d", iok.n, i.n, cin);
    for (int j = 0; j < 4; j++) {
        preg tt = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), off = ws_ptx_reg(b, PTX_B32);
        preg ga = ws_ptx_reg(b, PTX_B64), v = ws_ptx_reg(b, PTX_F32), sa = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", tt.n, tb.n, ty.n);
        I("add.u32 %s, %s, %d", tt.n, tt.n, 8 * j);
        I("setp.lt.u32 %s, %s, %s", ok.n, tt.n, T.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, iok.n);
        I("mad.lo.u32 %s, %s, 33, %s", sa.n, tx.n, ty.n);
        I("add.u32 %s, %s, %d", sa.n, sa.n, 8 * j);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        I("ld.shared.f32 %s, [%s]", v.n, sa.n);
        I("mad.lo.u32 %s, %s, %d, %s", off.n, tt.n, cin, i.n);
        I("add.u32 %s, %s, %s", off.n, off.n, wbase.n);
        I("mul.wide.u32 %s, %s, %d", ga.n, off.n, es);
        I("add.u64 %s, %s, %s", ga.n, ga.n, pxt.n);
        if (p == WS_PREC_FP32) {
            I("@%s st.global.f32 [%s], %s", ok.n, ga.n, v.n);
        } else if (p == WS_PREC_TF32) {
            preg r = ws_ptx_reg(b, PTX_B32);
            I("cvt.rna.tf32.f32 %s, %s", r.n, v.n);
            I("@%s st.global.b32 [%s], %s", ok.n, ga.n, r.n);
        } else {
            preg h = ws_ptx_reg(b, PTX_B16);
            I("cvt.rn.%s.f32 %s, %s", p == WS_PREC_BF16 ? "bf16" : "f16", h.n, v.n);
            I("@%s st.global.b16 [%s], %s", ok.n, ga.n, h.n);
        }
    }
    I("ret");
    ws_ptx_kernel_end_params(b, mod, info->name, pt, 256, 0, 0);
}

void ws_emit_gelu_grid(ptx_buf *mod, ws_kernel_src *info)
{
    snprintf(info->name, sizeof info->name, "ws_gelu_grid");
    info->threads = 256;
    info->smem = 0;
    info->bm = info->bn = 0;
    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    ws_ptx_comment(b, "y[i] = gelu(x[i]) for i < n");
    preg px = ws_ptx_reg(b, PTX_B64), py = ws_ptx_reg(b, PTX_B64), n = ws_ptx_reg(b, PTX_B32);
    preg i = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
    preg v = ws_ptx_reg(b, PTX_F32);
    plabel done = ws_ptx_label_new(b, "done");
    const ws_params *pt = ws_params_of(WS_PARAMS_STEM_GELU);
    ws_ptx_ld_param(b, px, pt, WS_SGELU_X);
    ws_ptx_ld_param(b, py, pt, WS_SGELU_Y);
    ws_ptx_ld_param(b, n, pt, WS_SGELU_N);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", py.n, py.n);
    I("mov.u32 %s, %%ctaid.x", i.n);
    I("mov.u32 %s, %%tid.x", tmp.n);
    I("mad.lo.u32 %s, %s, 256, %s", i.n, i.n, tmp.n);
    I("setp.ge.u32 %s, %s, %s", ok.n, i.n, n.n);
    I("@%s bra.uni %s", ok.n, done.n);
    I("mad.wide.u32 %s, %s, 4, %s", px.n, i.n, px.n);
    I("mad.wide.u32 %s, %s, 4, %s", py.n, i.n, py.n);
    I("ld.global.f32 %s, [%s]", v.n, px.n);
    ws_gelu_emit(b, v.n, v.n);
    I("st.global.f32 [%s], %s", py.n, v.n);
    ws_ptx_label(b, done);
    I("ret");
    ws_ptx_kernel_end_params(b, mod, info->name, pt, 256, 0, 0);
}

void ws_emit_splitk_finish(ptx_buf *mod, int n_out, ws_kernel_src *info)
{
    const int N = n_out;
    snprintf(info->name, sizeof info->name, "ws_splitk_finish");
    info->threads = 256;
    info->smem = 0;
    info->bm = info->bn = 0;
    ptx_buf kb, *b = &kb;
    ws_ptx_init(b);
    ws_ptx_comment(b, "y[w][t][o] = gelu(b[o] + sum_s ws[w*splits + s][t][o]) (+ pos[t][o]), N = %d", N);
    preg pws = ws_ptx_reg(b, PTX_B64), pb = ws_ptx_reg(b, PTX_B64), pp = ws_ptx_reg(b, PTX_B64);
    preg py = ws_ptx_reg(b, PTX_B64), tout = ws_ptx_reg(b, PTX_B32), rows = ws_ptx_reg(b, PTX_B32);
    preg sp = ws_ptx_reg(b, PTX_B32), i = ws_ptx_reg(b, PTX_B32), tmp = ws_ptx_reg(b, PTX_B32);
    preg row = ws_ptx_reg(b, PTX_B32), col = ws_ptx_reg(b, PTX_B32), w = ws_ptx_reg(b, PTX_B32);
    preg t = ws_ptx_reg(b, PTX_B32), idx = ws_ptx_reg(b, PTX_B32), ga = ws_ptx_reg(b, PTX_B64);
    preg stride = ws_ptx_reg(b, PTX_B64), k = ws_ptx_reg(b, PTX_B32);
    preg done = ws_ptx_reg(b, PTX_PRED), haspos = ws_ptx_reg(b, PTX_PRED), again = ws_ptx_reg(b, PTX_PRED);
    plabel out = ws_ptx_label_new(b, "done"), lp = ws_ptx_label_new(b, "parts");
    const ws_params *pt = ws_params_of(WS_PARAMS_STEM_FINISH);
    ws_ptx_ld_param(b, pws, pt, WS_SFIN_WS);
    ws_ptx_ld_param(b, pb, pt, WS_SFIN_BIAS);
    ws_ptx_ld_param(b, pp, pt, WS_SFIN_POS);
    ws_ptx_ld_param(b, py, pt, WS_SFIN_Y);
    ws_ptx_ld_param(b, tout, pt, WS_SFIN_T_OUT);
    ws_ptx_ld_param(b, rows, pt, WS_SFIN_ROWS);
    ws_ptx_ld_param(b, sp, pt, WS_SFIN_SPLITS);
    I("setp.ne.u64 %s, %s, 0", haspos.n, pp.n);
    I("cvta.to.global.u64 %s, %s", pws.n, pws.n);
    I("cvta.to.global.u64 %s, %s", pb.n, pb.n);
    I("cvta.to.global.u64 %s, %s", pp.n, pp.n);
    I("cvta.to.global.u64 %s, %s", py.n, py.n);
    ws_ptx_section(b, "output quad i: row = 4i / N, col = 4i % N; row = w * T_out + t");
    I("mov.u32 %s, %%ctaid.x", i.n);
    I("mov.u32 %s, %%tid.x", tmp.n);
    I("mad.lo.u32 %s, %s, 256, %s", i.n, i.n, tmp.n);
    I("shl.b32 %s, %s, 2", i.n, i.n);
    I("div.u32 %s, %s, %d", row.n, i.n, N);
    I("setp.ge.u32 %s, %s, %s", done.n, row.n, rows.n);
    I("@%s bra.uni %s", done.n, out.n);
    I("mad.lo.u32 %s, %s, %d, %s", col.n, row.n, -N, i.n);
    I("div.u32 %s, %s, %s", w.n, row.n, tout.n);
    I("mul.lo.u32 %s, %s, %s", tmp.n, w.n, tout.n);
    I("sub.u32 %s, %s, %s", t.n, row.n, tmp.n);
    ws_ptx_comment(b, "part 0 of window w: ((w*splits)*T_out + t)*N + col; parts T_out*N apart");
    I("mul.lo.u32 %s, %s, %s", idx.n, w.n, sp.n);
    I("mad.lo.u32 %s, %s, %s, %s", idx.n, idx.n, tout.n, t.n);
    I("mad.lo.u32 %s, %s, %d, %s", idx.n, idx.n, N, col.n);
    I("mad.wide.u32 %s, %s, 4, %s", ga.n, idx.n, pws.n);
    I("mul.wide.u32 %s, %s, %d", stride.n, tout.n, N * 4);
    ws_ptx_section(b, "sum the parts in split order");
    preg v[4], a[4];
    for (int e = 0; e < 4; e++) {
        v[e] = ws_ptx_reg(b, PTX_F32);
        a[e] = ws_ptx_reg(b, PTX_F32);
        I("mov.f32 %s, 0f00000000", v[e].n);
    }
    I("mov.u32 %s, %s", k.n, sp.n);
    ws_ptx_label(b, lp);
    I("ld.global.cg.v4.f32 {%s, %s, %s, %s}, [%s]", a[0].n, a[1].n, a[2].n, a[3].n, ga.n);
    for (int e = 0; e < 4; e++)
        I("add.f32 %s, %s, %s", v[e].n, v[e].n, a[e].n);
    I("add.u64 %s, %s, %s", ga.n, ga.n, stride.n);
    I("sub.u32 %s, %s, 1", k.n, k.n);
    I("setp.ne.u32 %s, %s, 0", again.n, k.n);
    I("@%s bra.uni %s", again.n, lp.n);
    ws_ptx_section(b, "+ bias, gelu, + pos, store");
    I("mad.wide.u32 %s, %s, 4, %s", ga.n, col.n, pb.n);
    I("ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s]", a[0].n, a[1].n, a[2].n, a[3].n, ga.n);
    for (int e = 0; e < 4; e++) {
        I("add.f32 %s, %s, %s", v[e].n, v[e].n, a[e].n);
        ws_gelu_emit(b, v[e].n, v[e].n);
        I("mov.f32 %s, 0f00000000", a[e].n);
    }
    I("mad.lo.u32 %s, %s, %d, %s", idx.n, t.n, N, col.n);
    I("mad.wide.u32 %s, %s, 4, %s", ga.n, idx.n, pp.n);
    I("@%s ld.global.nc.v4.f32 {%s, %s, %s, %s}, [%s]", haspos.n, a[0].n, a[1].n, a[2].n, a[3].n, ga.n);
    for (int e = 0; e < 4; e++)
        I("add.f32 %s, %s, %s", v[e].n, v[e].n, a[e].n);
    I("mad.wide.u32 %s, %s, 4, %s", ga.n, i.n, py.n);
    I("st.global.v4.f32 [%s], {%s, %s, %s, %s}", ga.n, v[0].n, v[1].n, v[2].n, v[3].n);
    ws_ptx_label(b, out);
    I("ret");
    ws_ptx_kernel_end_params(b, mod, info->name, pt, 256, 0, 0);
}

/* gpu_conv.c - the conv engine's GPU backend (include/ws_conv.h): the plans.
 *
 * ws_gpu (the device, its primary context made current on each call, one non-blocking
 * stream, device memory and copies) is the device runtime's, gpu.c (gpu_runtime.h).
 * ws_gpu_conv (a plan): the direct kernels (ptx_direct.c) emitted for the device's compute
 * capability and loaded as one module: FWD one kernel, BWD four entries (gz, dx, dw, db);
 * beside them, where the descriptor has them, the depthwise module (ptx_dw.c: FWD one
 * kernel, BWD the fused kernel and its finishing pass) or the dense forward implicit GEMM
 * (ptx_gemm.c: FFMA, or mma.sync for TF32 / BF16 / F16 math). w converted from w_type to float32
 * [C_out][Cg][K] (and for mma to the math type, in the GEMM's r order) and uploaded with b
 * (float32 [C_out], or none) at ws_gpu_conv_new. ws_gpu_conv_run checks the call as the
 * CPU does (ws_conv_check_args), then launch() picks per call: the depthwise kernels when
 * dw_call_fits (alignment, whole vectors), else the GEMM when gemm_call_fits (grid
 * limits, x aligned to ws_gemm_x_align), else the direct kernels (FWD ceil(N*C_out*T_out / 256) blocks of 256 threads;
 * BWD grows the plan's float32 gz scratch [N][C_out][T_out], launches gz, then dx, dw, db
 * as asked). A dense BWD plan also holds the GEMM backward (ptx_hbwd.h, launch_bwd_all): a
 * forward plan for dx's conv and, on 9.0, the weight-gradient kernel; each call's dx, dw
 * and db take them where they fit, the direct kernels where not. Grids are checked against the limits before anything is launched; the call
 * waits for the stream before returning (ws_gpu_conv_bench times launches between events).
 * Every launch's argument array is filled by the index enum of its kernel's parameter table
 * (ptx_params.h, the table the emitter declared the .entry from) and each value's size is
 * checked against the table's type before the launch (ws_kargs_check).
 * Tested by tests/test_gpu_conv.c against the CPU engine.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv/engine.h"
#include "driver.h"
#include "gpu_conv_internal.h"
#include "gpu_dws.h"
#include "gpu_runtime.h"
#include "output.h"
#include "ptx/ptx_direct.h"
#include "ptx/ptx_dw.h"
#include "ptx/ptx_gemm.h"
#include "ptx/ptx_hbwd.h"
#include "ptx/ptx_hcol.h"
#include "ptx/ptx_hgemm.h"
#include "ptx/ptx_params.h"
#include "ptx/ptx_wprep.h"

struct ws_gpu_conv {
    ws_gpu *g;
    ws_conv_desc d;
    wscu_module mod;
    wscu_function fn;     /* FWD: the kernel; BWD: the gz entry */
    wscu_function bwd[WS_DIRECT_NPARTS]; /* BWD: gz, dx, dw, db */
    wscu_devptr w, b;     /* float32 [C_out][Cg][K]; [C_out] or 0 */
    wscu_devptr gz;       /* BWD: float32 scratch of gz_bytes, grown as calls need */
    size_t gz_bytes;
    char name[WS_DIRECT_NAME_MAX]; /* the module's name (FWD: the kernel's) */
    /* depthwise stride-1 descriptors (ptx_dw.h): their own module, used by every call
     * that ws_dw's conditions admit (dw_call_fits); the direct kernels take the others */
    wscu_module dwmod;
    wscu_function dwfn[2]; /* FWD: [0] the kernel; BWD: [0] _bwd, [1] _fin */
    int dw_v;              /* the vector width, 0: no depthwise kernels */
    int force_direct;      /* ws_gpu_conv_force_direct */
    /* dense FWD descriptors (ptx_gemm.h): the implicit-GEMM kernel's own module, used by
     * every call that gemm_call_fits admits; the direct kernel takes the others */
    wscu_module gemmmod;
    wscu_function gemmfn;  /* 0: no gemm kernel */
    wscu_function gsplitfn, gfinfn; /* the FFMA module's _split and _fin entries, or 0 */
    int no_split;          /* ws_gpu_conv_no_split */
    wscu_function gslicefn[WS_GEMM_SLICE_VARIANTS]; /* the FFMA module's _slice entries
                              (ws_gemm_slice_fits), or 0 */
    int no_slice;          /* ws_gpu_conv_no_slice */
    int no_pdl;            /* ws_gpu_conv_no_pdl */
    unsigned long slice_calls; /* calls that took it (ws_gpu_conv_slice_calls) */
    int parts;             /* ws_gpu_conv_parts: 0 automatic */
    unsigned long split_calls; /* calls that took them (ws_gpu_conv_split_calls) */
    int tail_parts;        /* ws_gpu_conv_tail_parts: 0 automatic */
    unsigned long tail_calls; /* calls whose last tiles took them (ws_gpu_conv_tail_calls) */
    wscu_devptr wh;        /* the gemm kernel's packed weights (ws_gemm_pack_weights: the mma
                              kernel's, the FFMA kernel's where ws_gemm_ffma_wpack), or 0 */
    /* the Hopper GEMM (ptx_hgemm.h), where ws_hgemm_fits and the driver encodes tensor
     * maps: taken before the gemm kernel by every call hgemm_call_fits admits; it reads wh */
    wscu_module hgmod;
    wscu_function hgfn, hpfn; /* the kernel, its x staging entry; 0: none */
    wscu_function hmfn;       /* its "_mn" entry, channel-first x read in place (ws_hgemm_mn), or 0 */
    wscu_function hp8fn;      /* the staging's "_prep8" entry (ws_hgemm_prep8), or 0 */
    unsigned long mn_calls;   /* calls launched on it (ws_gpu_conv_hgemm_mn_calls) */
    unsigned long p8_calls;   /* calls staged by "_prep8" (ws_gpu_conv_hgemm_prep8_calls) */
    wscu_devptr hx;           /* staged x, [N][T_in][C_in] in the math type, grown as calls need */
    size_t hx_bytes;
    int no_hgemm;             /* ws_gpu_conv_no_hgemm */
    /* dx's conv of an NCL BWD plan at stride > 1 (this plan is its dxp): the Hopper GEMM in
     * the phased form (ws_hgemm_emit_phased), which writes dx itself; ph_t: dx's T for the
     * call launch_gb_dx makes (0: the plain kernel) */
    wscu_module hphmod;
    wscu_function hphfn;
    uint32_t ph_t;
    int ph_s;                 /* its phases S */
    int ph_lo[WS_HGEMM_PHASES_MAX], ph_hi[WS_HGEMM_PHASES_MAX]; /* their taps (ws_gbwd_dx_taps) */
    int no_phased;            /* ws_gpu_conv_no_phased (on the BWD plan) */
    unsigned long ph_calls;   /* calls launched on it */
    unsigned long hg_calls;   /* calls launched on it (ws_gpu_conv_hgemm_calls) */
    unsigned hg_blocks;       /* its grid's cap (ws_gpu_conv_hgemm_blocks); 0: SMs x blocks an SM */
    wscu_devptr hgctr;        /* its tile counter (u32, zero between calls; 8 bytes) */
    wscu_devptr part;      /* BWD: float32 partials of dw, db, grown as calls need */
    size_t part_bytes;
    /* the dense backward as GEMMs (ptx_hbwd.h): dx as a forward plan of its own (dxp) over
     * the gradient with W' (wxx) made by the passes' module (gbmod) per call, or once for
     * the plan's own weights (wxx_own), X' in dxs
     * where S > 1; dw and db on the Hopper weight-gradient kernel (wgfn) over G (gst) and
     * Xs (xst) where they are staged (in float32 math on gb_m, over rows of channels:
     * ptx_hbwd.h); gb_calls counts calls that took either */
    ws_gpu_conv *dxp;
    ws_gbwd_dx gx;
    wscu_module gbmod, wgmod;
    wscu_function gb_w, gb_u, gb_g, gb_x, gb_f, gb_b, gb_p, gb_t, wgfn;
    wscu_function gb_m; /* float32 math: dw's FFMA kernel of the passes' module, or 0 */
    wscu_devptr wxx, dxs, gst, xst, wt;
    size_t wxx_bytes, dxs_bytes, gst_bytes, xst_bytes, wt_bytes;
    int wxx_own; /* 1 + packed: wxx holds W' of the plan's own weights in that form (made by
                  * an earlier call and kept: own weights never change); 0: made per call */
    unsigned long gb_calls;
    /* weights given per call (a->w): the plan's own w, b, wh above are 0 when it was made
     * without weights; the preparation module's cast and pack entries (ptx_wprep.h) write
     * the call's w into wcall (float32) and whcall (the GEMM's packed weights) on the call's
     * stream. Plans made without weights allocate them at ws_gpu_conv_new, the others at
     * their first call with a->w; the inner plan of a conv through its columns has neither
     * (its W' comes from the outer plan's "_wpad" into the outer plan's wpc). */
    int has_w;             /* made with weights */
    ws_dtype dw_wt;        /* the type the depthwise kernels read w in (ws_dw_emit_w) */
    wscu_module prepmod;
    wscu_function castfn, packfn;
    wscu_devptr wcall, whcall;
    /* depthwise causal descriptors (ptx_dws.h): the kernels of calls with seq_idx or states,
     * loaded at ws_gpu_conv_new; their BWD scratch is gz above */
    ws_dws *dws;
    int borrowed;          /* ws_gpu_conv_clone: w, b and wh are the source plan's */
    /* a dense conv with C_in off multiples of 16 through its columns or padded channels
     * (ptx_hcol.h), where ws_hcol_fits: the "_col" and "_wpad" entries, and the inner plan colp
     * on the Hopper GEMM (K 1 over the columns, or the conv itself over x with its channels
     * padded; its weights are this plan's, padded); wpc: W' of weights given per call, in the
     * inner plan's packed form; col_calls: calls that took it */
    ws_gpu_conv *colp;
    wscu_module colmod;
    wscu_function colfn, wpadfn;
    wscu_devptr wpc;
    unsigned long col_calls;
    int inner; /* the inner plan of such a conv: its Hopper GEMM takes any count of stages, and
                  its x (the columns) is in the math type, rounded */
};

void ws_gpu_conv_free(ws_gpu_conv *c)
{
    if (!c)
        return;
    if (!c->g) {
        free(c);
        return;
    }
    ws_cu *cu = &c->g->cu;
    cu->CtxSetCurrent(c->g->ctx);
    if (c->w && !c->borrowed)
        cu->MemFree(c->w);
    if (c->b && !c->borrowed)
        cu->MemFree(c->b);
    if (c->gz)
        cu->MemFree(c->gz);
    if (c->part)
        cu->MemFree(c->part);
    if (c->wh && !c->borrowed)
        cu->MemFree(c->wh);
    ws_dws_free(c->dws);
    if (c->wcall)
        cu->MemFree(c->wcall);
    if (c->whcall)
        cu->MemFree(c->whcall);
    if (c->hx)
        cu->MemFree(c->hx);
    if (c->hgctr) /* a clone's too: each plan has its own */
        cu->MemFree(c->hgctr);
    ws_gpu_conv_free(c->dxp);
    ws_gpu_conv_free(c->colp);
    cu->CtxSetCurrent(c->g->ctx);
    if (c->wpc)
        cu->MemFree(c->wpc);
    wscu_devptr bufs[] = { c->wxx, c->dxs, c->gst, c->xst, c->wt };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i])
            cu->MemFree(bufs[i]);
    free(c);
}

/* a Hopper GEMM entry's launch attributes for tile q: its dynamic shared memory, and for the
 * small and narrow tiles (two and three blocks an SM) the largest carveout. 0, or -1 err */
static int hg_attrs(ws_cu *cu, wscu_function fn, const ws_hgemm_cfg *q, ws_err *err)
{
    CU_TRY(cu, FuncSetAttribute(fn, WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, q->smem), err);
    if (q->minb > 1)
        CU_TRY(cu, FuncSetAttribute(fn, WS_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, 100), err);
    return 0;
cleanup:
    return -1;
}

/* the Hopper GEMM's tile counter, for a plan whose tile runs the tile loop (ptx_hgemm.h, the
 * narrow tile), zeroed once: each call's last block sets it back to zero. 0, or -1 err */
static int hg_counter(ws_gpu_conv *c, ws_err *err)
{
    ws_cu *cu = &c->g->cu;
    CU_TRY(cu, CtxSetCurrent(c->g->ctx), err);
    CU_TRY(cu, MemAlloc(&c->hgctr, 8), err);
    CU_TRY(cu, MemsetD32Async(c->hgctr, 0, 2, c->g->stream), err);
    CU_TRY(cu, StreamSynchronize(c->g->stream), err);
    return 0;
cleanup:
    if (c->hgctr)
        cu->MemFree(c->hgctr);
    c->hgctr = 0;
    return -1;
}

/* the phased form of dx's conv x->sub for BWD descriptor d (ptx_hgemm.h): its tap ranges
 * into lo, hi (where x->phases <= WS_HGEMM_PHASES_MAX, else none), its entry's name, its
 * module text (malloc'd), or NULL with err */
static char *phased_ptx(const ws_conv_desc *d, const ws_gbwd_dx *x, int *lo, int *hi,
                        char name[WS_HGEMM_NAME_MAX], ws_err *err)
{
    const int tp = x->phases <= WS_HGEMM_PHASES_MAX;
    if (tp)
        ws_gbwd_dx_taps(d, x, lo, hi);
    ws_hgemm_phased_name(&x->sub, x->phases, tp ? lo : NULL, tp ? hi : NULL, name);
    return ws_hgemm_emit_phased(&x->sub, x->phases, tp ? lo : NULL, tp ? hi : NULL, err);
}

/* conv_new's flags: the inner plan of a conv through its columns (col_load); a plan that never
 * takes the columns (the dense backward's dx conv: its weights come per call from its BWD plan,
 * in its own GEMM layout) */
#define CONV_INNER 1
#define CONV_NO_COLS 2

static ws_gpu_conv *conv_new(ws_gpu *g, const ws_conv_desc *d, const void *w, const float *b, int flags,
                             ws_err *err);

/* the dense backward's GEMM passes for a BWD plan (ptx_hbwd.h): their module, the plan of
 * dx's conv, and on 9.0 the weight-gradient kernel. 0, or -1 with err */
static int gbwd_load(ws_gpu_conv *c, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    if (!ws_gbwd_used(d))
        return 0;
    char name[WS_GBWD_NAME_MAX], en[WS_GBWD_NAME_MAX + 4];
    ws_gbwd_name(d, name);
    char *ptx = ws_gbwd_emit(d, g->emit_major, g->emit_minor, err);
    if (!ptx)
        return -1;
    const int rc = ws_gpu_module(g, name, ptx, &c->gbmod, err);
    free(ptx);
    if (rc)
        return -1;
    struct { const char *suf; wscu_function *fn; } e[] = {
        { "_g", &c->gb_g }, { "_x", &c->gb_x }, { "_f", &c->gb_f }, { "_b", &c->gb_b },
        { "_w", &c->gb_w }, { "_t", &c->gb_t }, { "_u", &c->gb_u } };
    const int has_dx = ws_gbwd_dx_of(d, &c->gx), has_dw = ws_gbwd_has_dw(d);
    const int ne = !has_dx ? 4 : c->gx.phases > 1 ? 7 : 6;
    for (int i = has_dw ? 0 : 4; i < ne; i++) {
        snprintf(en, sizeof en, "%s%s", name, e[i].suf);
        CU_TRY(cu, ModuleGetFunction(e[i].fn, c->gbmod, en), err);
    }
    if (has_dx && ws_gemm_packs(&c->gx.sub)) {
        snprintf(en, sizeof en, "%s_p", name);
        CU_TRY(cu, ModuleGetFunction(&c->gb_p, c->gbmod, en), err);
    }
    if (ws_gbwd_ffma_dw_cc(d, g->emit_major, g->emit_minor)) {
        snprintf(en, sizeof en, "%s_m", name);
        CU_TRY(cu, ModuleGetFunction(&c->gb_m, c->gbmod, en), err);
    }
    if (has_dx && !(c->dxp = conv_new(g, &c->gx.sub, NULL, NULL, CONV_NO_COLS, err)))
        return -1;
    if (c->dxp) { /* its weights come from this plan (launch_gb_dx): no buffers of its own, and
                   * no columns (CONV_NO_COLS: their inner plan reads its own padded W', which W'
                   * is not) */
        if (c->dxp->wcall)
            cu->MemFree(c->dxp->wcall);
        if (c->dxp->whcall)
            cu->MemFree(c->dxp->whcall);
        c->dxp->wcall = c->dxp->whcall = 0;
    }
    if (c->dxp && c->dxp->hgfn && d->x_layout == WS_NCL && ws_hgemm_phased_fits(&c->gx.sub, c->gx.phases)) {
        char pname[WS_HGEMM_NAME_MAX];
        if (!(ptx = phased_ptx(d, &c->gx, c->dxp->ph_lo, c->dxp->ph_hi, pname, err)))
            return -1;
        const int r3 = ws_gpu_module(g, pname, ptx, &c->dxp->hphmod, err);
        free(ptx);
        if (r3)
            return -1;
        ws_hgemm_cfg q;
        ws_hgemm_cfg_of(&c->gx.sub, &q);
        CU_TRY(cu, ModuleGetFunction(&c->dxp->hphfn, c->dxp->hphmod, pname), err);
        c->dxp->ph_s = c->gx.phases;
        if (hg_attrs(cu, c->dxp->hphfn, &q, err))
            return -1;
    }
    if (cu->TensorMapEncodeTiled && ws_hgemm_wgrad_fits(d, g->emit_major, g->emit_minor)) {
        char wname[WS_HGEMM_NAME_MAX];
        ws_hgemm_wgrad_name(d, wname);
        if (!(ptx = ws_hgemm_wgrad_emit(d, err)))
            return -1;
        const int r2 = ws_gpu_module(g, wname, ptx, &c->wgmod, err);
        free(ptx);
        if (r2)
            return -1;
        CU_TRY(cu, ModuleGetFunction(&c->wgfn, c->wgmod, wname), err);
        CU_TRY(cu, FuncSetAttribute(c->wgfn, WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    WS_HGEMM_SMEM), err);
    }
    return 0;
cleanup:
    return -1;
}

/* the weight-preparation module of c (ptx_wprep.h), loaded once */
static int prep_load(ws_gpu_conv *c, ws_err *err)
{
    if (c->prepmod)
        return 0;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    char name[WS_WPREP_NAME_MAX];
    char *ptx = ws_wprep_emit(&c->d, g->emit_major, g->emit_minor, err);
    if (!ptx)
        return -1;
    ws_wprep_name(&c->d, name);
    const int rc = ws_gpu_module(g, name, ptx, &c->prepmod, err);
    free(ptx);
    if (rc)
        return -1;
    ws_wprep_entry(&c->d, 0, name);
    CU_TRY(cu, ModuleGetFunction(&c->castfn, c->prepmod, name), err);
    if (ws_wprep_packs(&c->d)) {
        ws_wprep_entry(&c->d, 1, name);
        CU_TRY(cu, ModuleGetFunction(&c->packfn, c->prepmod, name), err);
    }
    return 0;
cleanup:
    return -1;
}

/* the buffers the call's weights are prepared into: float32 (wcall) where w_type is not
 * float32 (a float32 w is read where it is), the GEMM's packed ones (whcall) where its
 * kernel packs (ws_gemm_packs) */
static int prep_buffers(ws_gpu_conv *c, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    const size_t nw = (size_t)d->c_out * (size_t)(d->c_in / d->groups) * (size_t)d->k;
    ws_cu *cu = &c->g->cu;
    CU_TRY(cu, CtxSetCurrent(c->g->ctx), err);
    if (d->w_type != WS_F32 && !c->wcall)
        CU_TRY(cu, MemAlloc(&c->wcall, nw * sizeof(float)), err);
    if (c->packfn && !c->whcall)
        CU_TRY(cu, MemAlloc(&c->whcall, ws_gemm_packed_bytes(d)), err);
    return 0;
cleanup:
    return -1;
}

static int col_load(ws_gpu_conv *c, const float *wf, const float *b, ws_err *err);

/* ws_gpu_conv_new, with CONV_* flags */
static ws_gpu_conv *conv_new(ws_gpu *g, const ws_conv_desc *d, const void *w, const float *b, int flags,
                             ws_err *err)
{
    if (!g) {
        ws_errf(err, "ws_gpu_conv_new: g is NULL");
        return NULL;
    }
    if (ws_conv_check(d, err))
        return NULL;
    if (!w && b) {
        ws_errf(err, "ws_gpu_conv_new: b is given without w: a plan takes both at plan time, "
                     "or both per call");
        return NULL;
    }
    ws_gpu_conv *c = calloc(1, sizeof *c);
    const size_t nw = (size_t)d->c_out * (size_t)(d->c_in / d->groups) * (size_t)d->k;
    float *wf = w ? malloc(nw * sizeof *wf) : NULL;
    char *ptx = NULL;
    if (!c || (w && !wf)) {
        ws_errf(err, "ws_gpu_conv_new: out of memory (weights %zu floats)", nw);
        goto fail;
    }
    if (w && d->w_type == WS_F32)
        memcpy(wf, w, nw * sizeof *wf);
    else if (w)
        for (size_t i = 0; i < nw; i++)
            wf[i] = ws_ld(w, d->w_type, i);
    c->g = g;
    c->d = *d;
    c->has_w = w != NULL;
    const int inner = (flags & CONV_INNER) != 0;
    c->inner = inner;
    /* weights given per call in a 16-bit type: the depthwise kernels read them as they are */
    c->dw_wt = w ? WS_F32 : d->w_type;
    ws_direct_name(d, c->name);
    ws_cu *cu = &g->cu;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    if (!inner) { /* an inner plan runs its Hopper GEMM alone (launch_col): no direct kernel */
        if (!(ptx = ws_direct_emit(d, g->emit_major, g->emit_minor, err)) ||
            ws_gpu_module(g, c->name, ptx, &c->mod, err))
            goto fail;
        if (d->op == WS_CONV_BWD) {
            for (int p = 0; p < WS_DIRECT_NPARTS; p++) {
                char entry[WS_DIRECT_NAME_MAX];
                ws_direct_bwd_entry(d, (ws_direct_part)p, entry);
                CU_TRY(cu, ModuleGetFunction(&c->bwd[p], c->mod, entry), err);
            }
            c->fn = c->bwd[WS_DIRECT_GZ];
        } else {
            CU_TRY(cu, ModuleGetFunction(&c->fn, c->mod, c->name), err);
        }
    }
    if (ws_dw_fits(d)) {
        char dwname[WS_DW_NAME_MAX];
        free(ptx);
        if (!(ptx = ws_dw_emit_w(d, c->dw_wt, g->emit_major, g->emit_minor, err)))
            goto fail;
        ws_dw_name_w(d, c->dw_wt, dwname);
        if (ws_gpu_module(g, dwname, ptx, &c->dwmod, err))
            goto fail;
        for (int e = 0; e < (d->op == WS_CONV_BWD ? 2 : 1); e++) {
            if (d->op == WS_CONV_BWD)
                ws_dw_entry_w(d, c->dw_wt, e, dwname);
            CU_TRY(cu, ModuleGetFunction(&c->dwfn[e], c->dwmod, dwname), err);
        }
        c->dw_v = ws_dw_vec(d);
    }
    if (ws_gemm_fits(d) && !inner) { /* nor the gemm module */
        char gname[WS_GEMM_NAME_MAX];
        free(ptx);
        if (!(ptx = ws_gemm_emit(d, g->emit_major, g->emit_minor, err)))
            goto fail;
        ws_gemm_name(d, gname);
        if (ws_gpu_module(g, gname, ptx, &c->gemmmod, err))
            goto fail;
        CU_TRY(cu, ModuleGetFunction(&c->gemmfn, c->gemmmod, gname), err);
        if (!ws_gemm_mma(d)) {
            ws_gemm_entry(d, 1, gname);
            CU_TRY(cu, ModuleGetFunction(&c->gsplitfn, c->gemmmod, gname), err);
            ws_gemm_entry(d, 2, gname);
            CU_TRY(cu, ModuleGetFunction(&c->gfinfn, c->gemmmod, gname), err);
            if (ws_gemm_slice_fits(d))
                for (int v = 0; v < WS_GEMM_SLICE_VARIANTS; v++) {
                    ws_gemm_entry(d, 3 + v, gname);
                    CU_TRY(cu, ModuleGetFunction(&c->gslicefn[v], c->gemmmod, gname), err);
                    /* a device whose blocks may not take the variant's shared memory (99 KiB
                     * an SM on compute capability 8.6, 8.9 and 12.x) runs the parts instead */
                    if (cu->FuncSetAttribute(c->gslicefn[v], WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             ws_gemm_slice_smem(v)) != 0)
                        c->gslicefn[v] = 0;
                }
        }
    }
    if (cu->TensorMapEncodeTiled && (inner ? ws_hgemm_emits(d) : ws_hgemm_fits(d, g->emit_major, g->emit_minor))) {
        char hname[WS_HGEMM_NAME_MAX + 8];
        free(ptx);
        if (!(ptx = ws_hgemm_emit(d, err)))
            goto fail;
        ws_hgemm_name(d, hname);
        if (ws_gpu_module(g, hname, ptx, &c->hgmod, err))
            goto fail;
        CU_TRY(cu, ModuleGetFunction(&c->hgfn, c->hgmod, hname), err);
        ws_hgemm_cfg q;
        ws_hgemm_cfg_of(d, &q);
        if (hg_attrs(cu, c->hgfn, &q, err))
            goto fail;
        if (ws_hgemm_mn(d)) {
            char mname[WS_HGEMM_NAME_MAX + 16];
            snprintf(mname, sizeof mname, "%s_mn", hname);
            CU_TRY(cu, ModuleGetFunction(&c->hmfn, c->hgmod, mname), err);
            if (hg_attrs(cu, c->hmfn, &q, err))
                goto fail;
        }
        if (ws_hgemm_prep8(d)) {
            char pname[WS_HGEMM_NAME_MAX + 16];
            snprintf(pname, sizeof pname, "%s_prep8", hname);
            CU_TRY(cu, ModuleGetFunction(&c->hp8fn, c->hgmod, pname), err);
        }
        strcat(hname, "_prep");
        CU_TRY(cu, ModuleGetFunction(&c->hpfn, c->hgmod, hname), err);
        if (q.loop && hg_counter(c, err)) /* the tile loop's counter (the narrow tile) */
            goto fail;
    }
    if (!c->hgfn && !flags && cu->TensorMapEncodeTiled && ws_hcol_fits(d, g->emit_major, g->emit_minor) &&
        col_load(c, wf, b, err))
        goto fail;
    if (ws_dws_fits(d) && !(c->dws = ws_dws_load(g, d, err)))
        goto fail;
    if (gbwd_load(c, err))
        goto fail;
    if (!w) { /* weights per call: the preparation module and its buffers, now (an inner plan's
               * come prepared by its outer plan's "_wpad", launch_col) */
        if (!inner && (prep_load(c, err) || prep_buffers(c, err)))
            goto fail;
        free(ptx);
        return c;
    }
    /* float32 w for the direct and FFMA kernels (an inner plan runs neither: it reads wh) */
    if (!inner && (ws_gpu_alloc(g, nw * sizeof *wf, &c->w, err) ||
                   ws_gpu_upload(g, c->w, wf, nw * sizeof *wf, err)))
        goto fail;
    if (b && (ws_gpu_alloc(g, (size_t)d->c_out * sizeof *b, &c->b, err) ||
              ws_gpu_upload(g, c->b, b, (size_t)d->c_out * sizeof *b, err)))
        goto fail;
    if ((c->gemmfn || c->hgfn) && ws_gemm_packs(d)) { /* W as the gemm or Hopper GEMM kernel reads
                                                         it: rounded to the math type, in its order
                                                         of r */
        const size_t wb = ws_gemm_packed_bytes(d);
        void *wh = malloc(wb);
        if (!wh) {
            ws_errf(err, "ws_gpu_conv_new: out of memory (weights %zu bytes)", wb);
            goto fail;
        }
        ws_gemm_pack_weights(d, wf, wh);
        const int rc = ws_gpu_alloc(g, wb, &c->wh, err) || ws_gpu_upload(g, c->wh, wh, wb, err);
        free(wh);
        if (rc)
            goto fail;
    }
    free(wf);
    free(ptx);
    return c;
cleanup: /* CU_TRY */
fail:
    free(wf);
    free(ptx);
    ws_gpu_conv_free(c);
    return NULL;
}

ws_gpu_conv *ws_gpu_conv_new(ws_gpu *g, const ws_conv_desc *d, const void *w, const float *b,
                             ws_err *err)
{
    return conv_new(g, d, w, b, 0, err);
}

/* the columns of a short conv (ptx_hcol.h): their module, the inner plan (with W' from the
 * plan's weights wf, float32, where it has them, else without) and the buffer W' of weights
 * given per call is prepared into. Where the inner plan has no Hopper GEMM the plan goes
 * without (colp 0). 0, or -1 with err */
static int col_load(ws_gpu_conv *c, const float *wf, const float *b, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    char name[WS_HCOL_NAME_MAX], en[WS_HCOL_NAME_MAX + 8];
    ws_hcol_name(d, name);
    char *ptx = ws_hcol_emit(d, err);
    if (!ptx)
        return -1;
    const int rc = ws_gpu_module(g, name, ptx, &c->colmod, err);
    free(ptx);
    if (rc)
        return -1;
    snprintf(en, sizeof en, "%s_col", name);
    CU_TRY(cu, ModuleGetFunction(&c->colfn, c->colmod, en), err);
    snprintf(en, sizeof en, "%s_wpad", name);
    CU_TRY(cu, ModuleGetFunction(&c->wpadfn, c->colmod, en), err);
    ws_conv_desc in;
    ws_hcol_inner(d, &in);
    const size_t O = (size_t)d->c_out;
    const size_t RP = ws_hcol_pad(d) ? (size_t)ws_hcol_cp(d) * (size_t)d->k : (size_t)ws_hcol_rp(d);
    if (wf) {
        float *wp = malloc(O * RP * sizeof *wp);
        if (!wp)
            return ws_errf(err, "ws_gpu_conv_new: out of memory (weights %zu floats)", O * RP);
        ws_hcol_weights(d, wf, wp);
        in.w_type = WS_F32;
        c->colp = conv_new(g, &in, wp, b, CONV_INNER, err);
        free(wp);
    } else {
        c->colp = conv_new(g, &in, NULL, NULL, CONV_INNER, err);
    }
    if (!c->colp)
        return -1;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    if (!c->colp->hgfn) { /* no Hopper GEMM for it after all: the plan's own kernels */
        ws_gpu_conv_free(c->colp);
        c->colp = NULL;
        return 0;
    }
    CU_TRY(cu, MemAlloc(&c->wpc, ws_gemm_packed_bytes(&in)), err);
    return 0;
cleanup:
    return -1;
}

/* a scratch buffer of the plan (*buf of *cap bytes) grown to at least `bytes`, the context
 * current: the only device allocation of a call, and the only wait (calls of the plan are
 * ordered on st, and the last one may still read the old buffer). 0, or -1 with err. */
int ws_gpu_scratch(ws_gpu *g, uint64_t *buf, size_t *cap, size_t bytes, uint64_t stream, ws_err *err)
{
    if (bytes <= *cap)
        return 0;
    ws_cu *cu = &g->cu;
    const wscu_stream st = (wscu_stream)(uintptr_t)stream;
    if (*buf) {
        CU_TRY(cu, StreamSynchronize(st), err);
        cu->MemFree(*buf);
    }
    *buf = 0;
    *cap = 0;
    CU_TRY(cu, MemAlloc(buf, bytes), err);
    *cap = bytes;
    return 0;
cleanup:
    return -1;
}

static int scratch(ws_gpu_conv *c, wscu_devptr *buf, size_t *cap, size_t bytes, wscu_stream st,
                   ws_err *err)
{
    return ws_gpu_scratch(c->g, buf, cap, bytes, (uint64_t)(uintptr_t)st, err);
}

/* ceil(elements / WS_DIRECT_THREADS) into *blocks; -1 with err over the grid limit */
static int grid_of(unsigned long long elements, const char *what, unsigned *blocks, ws_err *err)
{
    const unsigned long long nb = (elements + WS_DIRECT_THREADS - 1) / WS_DIRECT_THREADS;
    if (nb > (unsigned long long)INT_MAX)
        return ws_errf(err, "ws_gpu_conv_run: %s of %llu elements needs %llu blocks, over the grid "
                            "limit %d", what, elements, nb, INT_MAX);
    *blocks = (unsigned)nb;
    return 0;
}

/* one forward call's kernel arguments: the values, and args pointing at them in the order of
 * ptx_params.h's WS_PARAMS_FWD (the direct, depthwise and gemm forward kernels all take it) */
typedef struct {
    uint64_t x, w, b, add, y;
    uint32_t n, t_in, t_out;
    uint64_t add_bs;
    uint32_t xoff; /* WS_PARAMS_FWD_PARTS only */
    ws_kargs args;
} fwd_call;

/* which weights a kernel reads: float32 [C_out][Cg][K] (direct, FFMA GEMM where it does not
 * pack), the depthwise kernels' (in dw_wt), the GEMM's packed ones (ws_gemm_pack_weights) */
typedef enum { W_F32 = 0, W_DW, W_PACKED } w_want;

/* *out = the weights a `want` kernel reads in call a: the plan's own (a->w NULL), a->w as it
 * is where the kernel reads that type, else a->w prepared into wcall / whcall by the
 * preparation module, enqueued on st before the kernel. 0, or -1 with err. */
static int call_weights(ws_gpu_conv *c, const ws_conv_args *a, w_want want, wscu_stream st,
                        wscu_devptr *out, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    if (!a->w) {
        *out = want == W_PACKED ? c->wh : c->w;
        return 0;
    }
    uint64_t pw = (uint64_t)(uintptr_t)a->w;
    if ((want == W_DW && c->dw_wt == d->w_type) || (want != W_PACKED && d->w_type == WS_F32)) {
        *out = pw;
        return 0;
    }
    const unsigned long long nw = (unsigned long long)d->c_out *
                                  (unsigned long long)(d->c_in / d->groups) * (unsigned long long)d->k;
    if (nw > UINT32_MAX)
        return ws_errf(err, "ws_gpu_conv_run: w of %llu elements given per call: over %u", nw,
                       UINT32_MAX);
    if (prep_load(c, err) || prep_buffers(c, err))
        return -1;
    ws_cu *cu = &c->g->cu;
    uint64_t dst = want == W_PACKED ? c->whcall : c->wcall;
    uint32_t n = (uint32_t)nw;
    ws_kargs k;
    ws_kargs_init(&k, WS_PARAMS_WPREP);
    WS_KARG(&k, WS_WPREP_W, pw), WS_KARG(&k, WS_WPREP_OUT, dst), WS_KARG(&k, WS_WPREP_N, n);
    if (ws_kargs_check(&k, "ws_gpu_conv_run", err))
        return -1;
    CU_TRY(cu, LaunchKernel(want == W_PACKED ? c->packfn : c->castfn,
                            (unsigned)((nw + WS_WPREP_THREADS - 1) / WS_WPREP_THREADS), 1, 1,
                            WS_WPREP_THREADS, 1, 1, 0, st, k.v, NULL), err);
    *out = dst;
    return 0;
cleanup:
    return -1;
}

/* the bias of call a: its own, else the plan's (0: none) */
static wscu_devptr call_bias(const ws_gpu_conv *c, const ws_conv_args *a)
{
    return a->b ? (wscu_devptr)(uintptr_t)a->b : c->b;
}

/* f for call a with weights w (call_weights), checked against the table: WS_PARAMS_FWD, or
 * WS_PARAMS_FWD_PARTS (the FFMA GEMM's _split and _fin entries: then also xoff, the launch's
 * first tile along positions) */
static int fwd_bind_table(fwd_call *f, const ws_gpu_conv *c, const ws_conv_args *a, int t_out,
                          wscu_devptr w, ws_params_id table, unsigned xoff, ws_err *err)
{
    f->x = (uint64_t)(uintptr_t)a->x, f->w = w, f->b = call_bias(c, a);
    f->add = (uint64_t)(uintptr_t)a->add, f->y = (uint64_t)(uintptr_t)a->y;
    f->n = (uint32_t)a->n, f->t_in = (uint32_t)a->t_in, f->t_out = (uint32_t)t_out;
    f->add_bs = a->add ? (uint64_t)a->add_batch_stride : 0;
    f->xoff = xoff;
    ws_kargs *k = &f->args;
    ws_kargs_init(k, table);
    WS_KARG(k, WS_FWD_X, f->x), WS_KARG(k, WS_FWD_W, f->w), WS_KARG(k, WS_FWD_B, f->b);
    WS_KARG(k, WS_FWD_ADD, f->add), WS_KARG(k, WS_FWD_Y, f->y), WS_KARG(k, WS_FWD_N, f->n);
    WS_KARG(k, WS_FWD_T_IN, f->t_in), WS_KARG(k, WS_FWD_T_OUT, f->t_out);
    WS_KARG(k, WS_FWD_ADD_BS, f->add_bs);
    if (table == WS_PARAMS_FWD_PARTS)
        WS_KARG(k, WS_FWDP_XOFF, f->xoff);
    return ws_kargs_check(k, "ws_gpu_conv_run", err);
}

static int fwd_bind(fwd_call *f, const ws_gpu_conv *c, const ws_conv_args *a, int t_out,
                    wscu_devptr w, ws_err *err)
{
    return fwd_bind_table(f, c, a, t_out, w, WS_PARAMS_FWD, 0, err);
}

static int check_call(const ws_gpu_conv *c, const ws_conv_args *a, const char *fn, int *t_out,
                      ws_err *err);

/* BWD on the direct kernels: gz (where want[WS_DIRECT_GZ]), then those of dx, dw, db that
 * are asked and wanted, enqueued; grids and scratch settled before the first launch */
static int launch_bwd(ws_gpu_conv *c, const ws_conv_args *a, int t_out, const int want[WS_DIRECT_NPARTS],
                      wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    const unsigned long long n = (unsigned long long)a->n, cg = (unsigned long long)(d->c_in / d->groups);
    const unsigned long long ny = n * (unsigned long long)d->c_out * (unsigned long long)t_out;
    unsigned blocks[WS_DIRECT_NPARTS] = { 0 };
    if ((want[WS_DIRECT_GZ] && grid_of(ny, "gz", &blocks[WS_DIRECT_GZ], err)) ||
        (a->dx && want[WS_DIRECT_DX] &&
         grid_of(n * (unsigned long long)d->c_in * (unsigned long long)a->t_in, "dx",
                 &blocks[WS_DIRECT_DX], err)) ||
        (a->dw && want[WS_DIRECT_DW] &&
         grid_of((unsigned long long)d->c_out * cg * (unsigned long long)d->k, "dw",
                 &blocks[WS_DIRECT_DW], err)) ||
        (a->db && want[WS_DIRECT_DB] &&
         grid_of((unsigned long long)d->c_out, "db", &blocks[WS_DIRECT_DB], err)))
        return -1;
    if (!want[WS_DIRECT_GZ])
        return 0;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    if (scratch(c, &c->gz, &c->gz_bytes, (size_t)ny * sizeof(float), st, err))
        return -1;
    uint64_t px = (uint64_t)(uintptr_t)a->x, pw = 0, pb = call_bias(c, a), pgz = c->gz;
    if (call_weights(c, a, W_F32, st, &pw, err))
        return -1;
    uint64_t pdy = (uint64_t)(uintptr_t)a->dy, pdx = (uint64_t)(uintptr_t)a->dx;
    uint64_t pdw = (uint64_t)(uintptr_t)a->dw, pdb = (uint64_t)(uintptr_t)a->db;
    uint32_t nn = (uint32_t)a->n, t_in = (uint32_t)a->t_in, to = (uint32_t)t_out;
    ws_kargs args[WS_DIRECT_NPARTS];
    ws_kargs *a_gz = &args[WS_DIRECT_GZ], *a_dx = &args[WS_DIRECT_DX];
    ws_kargs *a_dw = &args[WS_DIRECT_DW], *a_db = &args[WS_DIRECT_DB];
    for (int p = 0; p < WS_DIRECT_NPARTS; p++)
        ws_kargs_init(&args[p], WS_PARAMS_BWD_GZ + p);
    WS_KARG(a_gz, WS_BGZ_X, px), WS_KARG(a_gz, WS_BGZ_W, pw), WS_KARG(a_gz, WS_BGZ_B, pb);
    WS_KARG(a_gz, WS_BGZ_DY, pdy), WS_KARG(a_gz, WS_BGZ_GZ, pgz), WS_KARG(a_gz, WS_BGZ_N, nn);
    WS_KARG(a_gz, WS_BGZ_T_IN, t_in), WS_KARG(a_gz, WS_BGZ_T_OUT, to);
    WS_KARG(a_dx, WS_BDX_W, pw), WS_KARG(a_dx, WS_BDX_GZ, pgz), WS_KARG(a_dx, WS_BDX_DX, pdx);
    WS_KARG(a_dx, WS_BDX_N, nn), WS_KARG(a_dx, WS_BDX_T_IN, t_in), WS_KARG(a_dx, WS_BDX_T_OUT, to);
    WS_KARG(a_dw, WS_BDW_X, px), WS_KARG(a_dw, WS_BDW_GZ, pgz), WS_KARG(a_dw, WS_BDW_DW, pdw);
    WS_KARG(a_dw, WS_BDW_N, nn), WS_KARG(a_dw, WS_BDW_T_IN, t_in), WS_KARG(a_dw, WS_BDW_T_OUT, to);
    WS_KARG(a_db, WS_BDB_GZ, pgz), WS_KARG(a_db, WS_BDB_DB, pdb), WS_KARG(a_db, WS_BDB_N, nn);
    WS_KARG(a_db, WS_BDB_T_OUT, to);
    for (int p = 0; p < WS_DIRECT_NPARTS; p++)
        if (ws_kargs_check(&args[p], "ws_gpu_conv_run", err))
            return -1;
    for (int p = 0; p < WS_DIRECT_NPARTS; p++)
        if (blocks[p])
            CU_TRY(cu, LaunchKernel(c->bwd[p], blocks[p], 1, 1, WS_DIRECT_THREADS, 1, 1, 0,
                                    st, args[p].v, NULL), err);
    return 0;
cleanup:
    return -1;
}

/* the call checked as the CPU checks it (ws_conv_check_args); T_out into *t_out */
static int check_call(const ws_gpu_conv *c, const ws_conv_args *a, const char *fn, int *t_out,
                      ws_err *err)
{
    if (!c)
        return ws_errf(err, "%s: plan is NULL", fn);
    ws_err e = { "" };
    if (ws_conv_check_args(&c->d, a, c->has_w, t_out, &e)) {
        const char *m = e.msg;
        if (!strncmp(m, "ws_conv_run: ", 13))
            m += 13;
        return ws_errf(err, "%s: %s", fn, m);
    }
    return 0;
}

/* a call with packed sequences or carried states: the ptx_dws kernels (float32 w, the gz
 * scratch grown as for the direct backward) */
static int states_call(const ws_conv_args *a)
{
    return a->seq_idx || a->initial_states || a->final_states || a->dinitial_states;
}

static int aligned(const void *p, size_t bytes)
{
    return (uintptr_t)p % bytes == 0;
}

/* a call the depthwise kernels take: vectors of V elements aligned, for NCL whole vectors
 * per row (ptx_dw.h) */
static int dw_call_fits(const ws_gpu_conv *c, const ws_conv_args *a, int t_out)
{
    const ws_conv_desc *d = &c->d;
    if (!c->dw_v || c->force_direct)
        return 0;
    const size_t v = (size_t)c->dw_v, xb = v * (d->x_type == WS_F32 ? 4 : 2),
                 yb = v * (d->y_type == WS_F32 ? 4 : 2);
    if (!aligned(a->x, xb) || !aligned(a->y, yb) || !aligned(a->add, yb) ||
        !aligned(a->dy, yb) || !aligned(a->dx, xb))
        return 0;
    if (a->add && a->add_batch_stride % (long long)v)
        return 0;
    if (d->x_layout == WS_NCL && (a->t_in % (int)v || t_out % (int)v || d->c_in > 65535 ||
                                  a->n > 65535))
        return 0;
    return 1;
}

/* blocks of WS_DW_THREADS for `threads`; 0 over the grid limit */
static unsigned dw_blocks(unsigned long long threads)
{
    const unsigned long long nb = (threads + WS_DW_THREADS - 1) / WS_DW_THREADS;
    return nb > (unsigned long long)INT_MAX ? 0 : (unsigned)nb;
}

/* the depthwise kernels for a call dw_call_fits admits: 1 when the grid is too large for
 * them (the caller goes direct), 0 enqueued, -1 err */
static int launch_dw(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st,
                     ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    const unsigned long long n = (unsigned long long)a->n, C = (unsigned long long)d->c_in;
    const unsigned long long V = (unsigned long long)c->dw_v;
    const int ncl = d->x_layout == WS_NCL;
    uint64_t px = (uint64_t)(uintptr_t)a->x, pw = 0, pb = call_bias(c, a);
    uint32_t nn = (uint32_t)a->n, t_in = (uint32_t)a->t_in, to = (uint32_t)t_out;
    if (d->op == WS_CONV_FWD) {
        const unsigned long long chunks =
            ncl ? (unsigned long long)t_out / V : (unsigned long long)ws_dw_nch(d, a->t_in, t_out);
        const unsigned blocks = dw_blocks(ncl ? chunks : n * chunks * (C / V));
        if (!blocks)
            return 1;
        fwd_call f;
        if (call_weights(c, a, W_DW, st, &pw, err) || fwd_bind(&f, c, a, t_out, pw, err))
            return -1;
        CU_TRY(cu, LaunchKernel(c->dwfn[0], blocks, ncl ? (unsigned)C : 1, ncl ? (unsigned)n : 1,
                                WS_DW_THREADS, 1, 1, 0, st, f.args.v, NULL), err);
        return 0;
    }
    const long long nch = ws_dw_nch(d, a->t_in, t_out);
    const unsigned long long np = n * (unsigned long long)ws_dw_parts(d, a->t_in, t_out);
    const unsigned blocks = dw_blocks(ncl ? (unsigned long long)nch
                                          : n * (unsigned long long)nch * (C / V));
    const unsigned fin_blocks = dw_blocks(C * (unsigned long long)(d->k + 1));
    if (!blocks || !fin_blocks || nch > (long long)UINT32_MAX || np > UINT32_MAX)
        return 1;
    const int want_part = a->dw || a->db;
    if (want_part) {
        const size_t bytes = (size_t)np * (size_t)(d->k + 1) * (size_t)C * sizeof(float);
        if (scratch(c, &c->part, &c->part_bytes, bytes, st, err))
            return -1;
    }
    uint64_t pdy = (uint64_t)(uintptr_t)a->dy, pdx = (uint64_t)(uintptr_t)a->dx;
    uint64_t ppart = want_part ? c->part : 0;
    if (call_weights(c, a, W_DW, st, &pw, err))
        return -1;
    uint64_t pdw = (uint64_t)(uintptr_t)a->dw, pdb = (uint64_t)(uintptr_t)a->db;
    uint32_t nch32 = (uint32_t)nch, np32 = (uint32_t)np;
    ws_kargs args, fargs;
    ws_kargs_init(&args, WS_PARAMS_DW_BWD);
    WS_KARG(&args, WS_DWBWD_X, px), WS_KARG(&args, WS_DWBWD_W, pw), WS_KARG(&args, WS_DWBWD_B, pb);
    WS_KARG(&args, WS_DWBWD_DY, pdy), WS_KARG(&args, WS_DWBWD_DX, pdx);
    WS_KARG(&args, WS_DWBWD_PART, ppart), WS_KARG(&args, WS_DWBWD_N, nn);
    WS_KARG(&args, WS_DWBWD_T_IN, t_in), WS_KARG(&args, WS_DWBWD_T_OUT, to);
    WS_KARG(&args, WS_DWBWD_NCH, nch32);
    ws_kargs_init(&fargs, WS_PARAMS_DW_FIN);
    WS_KARG(&fargs, WS_DWFIN_PART, ppart), WS_KARG(&fargs, WS_DWFIN_DW, pdw);
    WS_KARG(&fargs, WS_DWFIN_DB, pdb), WS_KARG(&fargs, WS_DWFIN_NP, np32);
    if (ws_kargs_check(&args, "ws_gpu_conv_run", err) || ws_kargs_check(&fargs, "ws_gpu_conv_run", err))
        return -1;
    CU_TRY(cu, LaunchKernel(c->dwfn[0], blocks, ncl ? (unsigned)C : 1, ncl ? (unsigned)n : 1,
                            WS_DW_THREADS, 1, 1, 0, st, args.v, NULL), err);
    if (want_part)
        CU_TRY(cu, LaunchKernel(c->dwfn[1], fin_blocks, 1, 1, WS_DW_THREADS, 1, 1, 0, st,
                                fargs.v, NULL), err);
    return 0;
cleanup:
    return -1;
}

/* a call the gemm kernel takes (ptx_gemm.h: FWD, groups 1, positions and grid in range) */
static int gemm_call_fits(const ws_gpu_conv *c, const ws_conv_args *a, int t_out)
{
    return c->gemmfn && !c->force_direct && ws_gemm_call_fits(&c->d, a->n, t_out) &&
           (uintptr_t)a->x % (uintptr_t)ws_gemm_x_align(&c->d) == 0;
}

/* the device's multiprocessors (1 where the runtime could not tell) */
static unsigned sms_of(const ws_gpu_conv *c)
{
    return c->g->sms > 0 ? (unsigned)c->g->sms : 1u;
}

/* the FFMA kernel's stages of r: ceil(C_in * K / WS_GEMM_BK) */
static long long gemm_kt(const ws_conv_desc *d)
{
    return ((long long)d->c_in * d->k + WS_GEMM_BK - 1) / WS_GEMM_BK;
}

/* the parts the FFMA kernel's sum of a call is cut into: 1 (no split) unless the call's
 * blocks fill at most half of the block slots (two a multiprocessor): then as many parts as
 * keep them all in one wave, each part at least WS_GEMM_PART_STAGES stages of r (H100, one
 * window of the Whisper stem in float32, NLC, per call: tiny conv2 in 7 parts 127.5 ->
 * 55.8 us, in 4 parts 76.6; tiny conv1, 15 stages, in 3 parts 40.1 -> 36.7 us) */
#define WS_GEMM_PART_STAGES 5
static unsigned gemm_parts(const ws_gpu_conv *c, unsigned long long blocks)
{
    const ws_conv_desc *d = &c->d;
    if (!c->gsplitfn || c->no_split || blocks == 0)
        return 1;
    const unsigned long long slots = 2ULL * (unsigned long long)sms_of(c);
    const long long kt = gemm_kt(d);
    unsigned long long z = slots / blocks;
    if (z > (unsigned long long)(kt / WS_GEMM_PART_STAGES))
        z = (unsigned long long)(kt / WS_GEMM_PART_STAGES);
    if (c->parts > 0) /* ws_gpu_conv_parts: at least a stage a part */
        z = (unsigned long long)c->parts < (unsigned long long)kt ? (unsigned long long)c->parts
                                                                  : (unsigned long long)kt;
    if (z < 2)
        return 1;
    if (z > 64)
        z = 64;
    /* the parts' scratch, a tile of floats a block a part, within 256 MiB: the _fin entry's
     * indices are 32-bit */
    while (z > 1 && blocks * (unsigned long long)ws_gemm_bm(d) * WS_GEMM_BN * z * sizeof(float) >
                        (256ULL << 20))
        z--;
    return (unsigned)z;
}

/* the tiles of parts a plan keeps scratch for from its first call on, so that no later call
 * allocates (docs/conv-engine.md, the caller's stream): 4 a multiprocessor (a tail's parts,
 * gemm_tail; a small call's, gemm_parts, take at most 2), within 256 MiB */
static unsigned long long parts_reserve(const ws_gpu_conv *c)
{
    const unsigned long long tile = (unsigned long long)ws_gemm_bm(&c->d) * WS_GEMM_BN * sizeof(float);
    unsigned long long n = 4ULL * (unsigned long long)sms_of(c);
    if (n * tile > (256ULL << 20))
        n = (256ULL << 20) / tile;
    return n;
}

/* 1 when some call of the plan may sum the FFMA GEMM in parts (gemm_parts, gemm_tail): the
 * parts on, a sum of two parts of WS_GEMM_PART_STAGES stages at least, or parts forced */
static int can_split(const ws_gpu_conv *c)
{
    const long long kt = gemm_kt(&c->d);
    return c->gsplitfn && !c->no_split && (c->parts > 1 || (c->parts == 0 && kt / WS_GEMM_PART_STAGES >= 2));
}

/* the reserve of parts_reserve, taken by every forward call of a plan that may split (also
 * one that runs on another kernel, x misaligned for the GEMM), before its kernels */
static int parts_reserved(ws_gpu_conv *c, wscu_stream st, ws_err *err)
{
    if (!can_split(c))
        return 0;
    return scratch(c, &c->part, &c->part_bytes,
                   (size_t)(parts_reserve(c) * ws_gemm_bm(&c->d) * WS_GEMM_BN * sizeof(float)), st, err);
}

/* the last tiles of a call of at least one whole wave of blocks (two a multiprocessor): where
 * the blocks past the last whole wave leave most slots idle, the tiles from *xoff on along
 * positions (every tile along channels) are summed in z parts (the _split and _fin entries),
 * the others whole by the kernel. Returns z, 1 for none. A multiprocessor runs its blocks
 * at about the same rate one or two at a time (an FFMA block alone takes half a pair's time:
 * H200, the tiny stem's conv2 at 61 windows, 33 blocks past 8 waves, takes 103 us more than
 * at 60, a wave 215 us), so the model counts the stages of r the busiest multiprocessor
 * runs: the tail of TB blocks whole ceil(TB / SMs) * KT; in z parts ceil(TB z / SMs) *
 * (KT / z + WS_GEMM_PART_COST) + WS_GEMM_FIN_COST + TB z / 64 (the finish, which reads the
 * parts). z: the cheapest, each part at least WS_GEMM_PART_STAGES stages, the parts within
 * parts_reserve. H200, float32, against the whole sum, us: DAC's downsampler 3737-3740 ->
 * 3162-3163 NCL, 2965-2966 -> 2556-2557 NLC; the tiny stem's conv2 at 64 windows 1933 -> 1893 */
#define WS_GEMM_PART_COST 2
#define WS_GEMM_FIN_COST 4
static unsigned gemm_tail(const ws_gpu_conv *c, unsigned gx, unsigned gy, unsigned *xoff)
{
    const ws_conv_desc *d = &c->d;
    if (!c->gsplitfn || c->no_split || c->parts > 0 || c->tail_parts == 1 || gx < 2 || gy < 1)
        return 1;
    const unsigned long long sms = (unsigned long long)sms_of(c), slots = 2 * sms;
    const unsigned long long blocks = (unsigned long long)gx * gy, rem = blocks % slots;
    if (blocks < slots || rem == 0)
        return 1;
    const unsigned long long tx = (rem + gy - 1) / gy, tb = tx * gy;
    if (tx >= gx)
        return 1;
    const unsigned long long kt = (unsigned long long)gemm_kt(d);
    unsigned long long zmax = kt / WS_GEMM_PART_STAGES;
    if (zmax > 64)
        zmax = 64;
    if (zmax > parts_reserve(c) / tb) /* the parts within the plan's reserve */
        zmax = parts_reserve(c) / tb;
    double best = (double)((tb + sms - 1) / sms * kt);
    unsigned z = 1;
    for (unsigned long long q = 2; q <= zmax; q++) {
        const double cost = (double)((tb * q + sms - 1) / sms) * ((double)kt / (double)q + WS_GEMM_PART_COST) +
                            WS_GEMM_FIN_COST + (double)(tb * q) / 64.0;
        if (cost < best)
            best = cost, z = (unsigned)q;
    }
    if (c->tail_parts > 1)
        z = (unsigned long long)c->tail_parts <= zmax ? (unsigned)c->tail_parts : (unsigned)zmax;
    if (z < 2)
        return 1;
    *xoff = (unsigned)(gx - tx);
    return z;
}

/* the FFMA GEMM's sum in z parts of the tiles from xoff on along positions (every tile along
 * channels): the _split entry into the plan's scratch, then the ordered finish */
static int launch_parts(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_devptr pw, unsigned gx,
                        unsigned gy, unsigned xoff, unsigned z, wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_cu *cu = &c->g->cu;
    const unsigned tx = gx - xoff;
    const unsigned long long tile = (unsigned long long)tx * gy * ws_gemm_bm(d) * WS_GEMM_BN;
    const unsigned long long fb = (unsigned long long)tx * gy * ws_gemm_split_groups(d);
    /* within the reserve launch took (parts_reserved), but where ws_gpu_conv_parts forces z */
    if (scratch(c, &c->part, &c->part_bytes, (size_t)(tile * z * sizeof(float)), st, err))
        return -1;
    /* the _split entry writes the parts where y was, the _fin entry reads them as x, their
     * number as t_in (ws_gemm_entry) */
    ws_conv_args as = *a, af = *a;
    as.y = (void *)(uintptr_t)c->part;
    af.x = (const void *)(uintptr_t)c->part, af.t_in = (int)z;
    fwd_call fs, ff;
    if (fwd_bind_table(&fs, c, &as, t_out, pw, WS_PARAMS_FWD_PARTS, xoff, err) ||
        fwd_bind_table(&ff, c, &af, t_out, pw, WS_PARAMS_FWD_PARTS, xoff, err))
        return -1;
    CU_TRY(cu, LaunchKernel(c->gsplitfn, tx, gy, z, WS_GEMM_THREADS, 1, 1, 0, st, fs.args.v, NULL), err);
    CU_TRY(cu, LaunchKernel(c->gfinfn, (unsigned)fb, 1, 1, WS_GEMM_FIN_THREADS, 1, 1, 0, st, ff.args.v,
                            NULL), err);
    c->split_calls++;
    return 0;
cleanup:
    return -1;
}

/* the _slice variant a call of npos positions that gemm_parts sums in parts runs instead,
 * and its grid (*sx, *sy), or -1: the entries there and on, and a variant whose blocks (one
 * a multiprocessor) make one wave at least half full; of those the one of more blocks. H200, float32: the Whisper
 * tiny stem at one window, conv1 (384 x 3000, 15 stages) 128 blocks of 96 x 96, conv2
 * (384 x 1500, 72 stages) 128 of 96 x 48; wav2vec2's last layer at N8 (512 x 3992, 64
 * stages), whose variants take two waves or more, runs 0.2-0.7 % slower in slices (its
 * encoder 9694-9728 us NCL against 9657-9668 in parts), so it keeps the parts */
static int gemm_slice(const ws_gpu_conv *c, const ws_conv_args *a, unsigned long long npos, unsigned *sx,
                      unsigned *sy)
{
    /* the entries index x's rows n*T_in + u as signed 32-bit, and mark a position past N*T_out
     * by a u past any T_in below 2^30 */
    if (c->no_slice || c->no_split || c->parts > 0 || (unsigned long long)a->n * (unsigned long long)a->t_in >= (1ULL << 30))
        return -1;
    const unsigned long long sms = (unsigned long long)sms_of(c);
    const unsigned long long gy = ((unsigned long long)c->d.c_out + WS_GEMM_SLICE_BM - 1) / WS_GEMM_SLICE_BM;
    int best = -1;
    unsigned long long most = 0;
    for (int v = 0; v < WS_GEMM_SLICE_VARIANTS; v++) {
        const unsigned long long bn = (unsigned long long)ws_gemm_slice_bn(v), gx = (npos + bn - 1) / bn;
        if (c->gslicefn[v] && gx * gy <= sms && 2 * gx * gy >= sms && gx * gy > most)
            best = v, most = gx * gy, *sx = (unsigned)gx, *sy = (unsigned)gy;
    }
    return best;
}

/* the gemm kernel for a call gemm_call_fits admits, enqueued: 0, or -1 err */
static int launch_gemm(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st,
                       ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    const unsigned long long npos = (unsigned long long)a->n * (unsigned long long)t_out;
    const unsigned gx = (unsigned)((npos + WS_GEMM_BN - 1) / WS_GEMM_BN);
    const unsigned long long bm = (unsigned long long)ws_gemm_bm(d);
    const unsigned gy = (unsigned)(((unsigned long long)d->c_out + bm - 1) / bm);
    fwd_call f;
    wscu_devptr pw = 0;
    if (call_weights(c, a, ws_gemm_packs(d) ? W_PACKED : W_F32, st, &pw, err) ||
        fwd_bind(&f, c, a, t_out, pw, err))
        return -1;
    const unsigned z = gemm_parts(c, (unsigned long long)gx * gy);
    unsigned sx = 0, sy = 0;
    const int sv = z > 1 ? gemm_slice(c, a, npos, &sx, &sy) : -1;
    if (sv >= 0) { /* the sum in slices inside each block */
        if (cu->LaunchKernelEx && g->emit_major >= 9 && !c->no_pdl) {
            /* programmatic dependent launch: the blocks may be placed while the stream's
             * previous kernel ends (the entry's griddepcontrol.wait holds its reads) */
            wscu_launch_attr at = {.id = WSCU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION};
            at.value.i = 1;
            const wscu_launch_config lc = {.gx = sx, .gy = sy, .gz = 1, .bx = (unsigned)ws_gemm_slice_threads(sv), .by = 1, .bz = 1,
                                           .shared = (unsigned)ws_gemm_slice_smem(sv), .stream = st, .attrs = &at,
                                           .n_attrs = 1};
            CU_TRY(cu, LaunchKernelEx(&lc, c->gslicefn[sv], f.args.v, NULL), err);
        } else {
            CU_TRY(cu, LaunchKernel(c->gslicefn[sv], sx, sy, 1, (unsigned)ws_gemm_slice_threads(sv), 1, 1,
                                    (unsigned)ws_gemm_slice_smem(sv), st, f.args.v, NULL), err);
        }
        c->slice_calls++;
        return 0;
    }
    if (z > 1) /* the whole sum in z parts */
        return launch_parts(c, a, t_out, pw, gx, gy, 0, z, st, err);
    unsigned xoff = 0;
    const unsigned zt = gemm_tail(c, gx, gy, &xoff);
    CU_TRY(cu, LaunchKernel(c->gemmfn, zt > 1 ? xoff : gx, gy, 1, WS_GEMM_THREADS, 1, 1, 0, st, f.args.v,
                            NULL), err);
    if (zt > 1) { /* the last tiles in parts */
        if (launch_parts(c, a, t_out, pw, gx, gy, xoff, zt, st, err))
            return -1;
        c->tail_calls++;
    }
    return 0;
cleanup:
    return -1;
}

/* the Hopper GEMM's tile for a call: log2 TB, the time tiles ntt, the grid and whether x is
 * staged; 1 when the call fits its grid, 32-bit coordinates and the staging kernel's grid,
 * else 0 */
typedef struct { int lgtb; unsigned ntt, gx; int staged, mn; } hg_call;

static int hgemm_call_fits(const ws_gpu_conv *c, const ws_conv_args *a, int t_out, hg_call *h)
{
    const ws_conv_desc *d = &c->d;
    if (!c->hgfn || c->force_direct || c->no_hgemm || a->n < 1 || t_out < 1 || a->t_in < 1)
        return 0;
    if ((long long)a->t_in + (long long)d->pad_l + (long long)d->k * d->dilation > INT_MAX / 2 ||
        (long long)t_out * d->stride > INT_MAX / 2)
        return 0;
    hg_call v;
    ws_hgemm_cfg q;
    ws_hgemm_cfg_of(d, &q);
    v.lgtb = ws_hgemm_lgtb(d, t_out);
    const long long tb = 1LL << v.lgtb, nb = q.bn / tb;
    const long long ntt = ((long long)t_out + tb - 1) / tb, nnt = ((long long)a->n + nb - 1) / nb;
    const long long gy = ((long long)d->c_out + q.bm - 1) / q.bm;
    if (ntt * nnt * gy > INT_MAX)
        return 0;
    /* an inner plan's x, the columns, is in the math type and rounded (ptx_hcol.h) */
    v.staged = (ws_hgemm_staged(d) && !c->inner) || (uintptr_t)a->x % 16 != 0;
    /* channel-first x read in place: not the phased form (its own kernel) */
    v.mn = c->hmfn && !c->ph_t && ws_hgemm_mn_call(d, v.lgtb, a->t_in, (uint64_t)(uintptr_t)a->x);
    if (v.mn)
        v.staged = 0;
    if (v.staged && (a->n > 65535 || (d->c_in + 63) / 64 > 65535)) /* the staging grid's z, y */
        return 0;
    v.ntt = (unsigned)ntt, v.gx = (unsigned)(ntt * nnt * gy);
    if (h)
        *h = v;
    return 1;
}

/* a tensor map of rank r (3 here) over addr: dims, strides (r - 1 of them, bytes), box,
 * element strides es, the 128-byte swizzle, zeros out of range */
static int tmaps(ws_cu *cu, wscu_tensor_map *m, int dtype, uint32_t r, uint64_t addr, const uint64_t *dim,
                 const uint64_t *stride, const uint32_t *box, const uint32_t *es, int swizzle, ws_err *err)
{
    CU_TRY(cu, TensorMapEncodeTiled(m, dtype, r, (void *)(uintptr_t)addr, dim, stride, box, es,
                                    WS_CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                    WS_CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                    WS_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), err);
    return 0;
cleanup:
    return -1;
}

static int tmapr(ws_cu *cu, wscu_tensor_map *m, int dtype, uint32_t r, uint64_t addr, const uint64_t *dim,
                 const uint64_t *stride, const uint32_t *box, const uint32_t *es, ws_err *err)
{
    return tmaps(cu, m, dtype, r, addr, dim, stride, box, es, WS_CU_TENSOR_MAP_SWIZZLE_128B, err);
}

/* a 3-D tensor map over addr: dims (d0, d1, d2), strides (s1, s2) bytes, box (b0, b1, b2),
 * element strides (1, e1, 1) */
static int tmap3(ws_cu *cu, wscu_tensor_map *m, int dtype, uint64_t addr, const uint64_t dim[3],
                 const uint64_t stride[2], const uint32_t box[3], uint32_t e1, ws_err *err)
{
    const uint32_t es[3] = { 1, e1, 1 };
    return tmapr(cu, m, dtype, 3, addr, dim, stride, box, es, err);
}

/* the Hopper GEMM for a call hgemm_call_fits admits (with its staging kernel first where x
 * is staged), enqueued: 0, or -1 err */
static int launch_hgemm(ws_gpu_conv *c, const ws_conv_args *a, int t_out, const hg_call *h,
                        wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_cu *cu = &c->g->cu;
    wscu_devptr pw = 0;
    if (call_weights(c, a, W_PACKED, st, &pw, err))
        return -1;
    uint64_t xb = (uint64_t)(uintptr_t)a->x;
    const uint64_t C = (uint64_t)d->c_in, N = (uint64_t)a->n, T = (uint64_t)a->t_in;
    const uint64_t es = (uint64_t)ws_hgemm_xbytes(d);
    const uint32_t bkc = (uint32_t)ws_hgemm_bkc(d);
    /* the scratch grown and both maps encoded before the staging and the GEMM are
     * launched (a per-call weight pack, above, writes only the plan's own buffer) */
    if (h->staged && scratch(c, &c->hx, &c->hx_bytes, (size_t)(N * T * C * es), st, err))
        return -1;
    const uint64_t px = xb;
    if (h->staged)
        xb = c->hx;
    const int dt = d->math == WS_MATH_BF16 ? WS_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                   : d->math == WS_MATH_F16 ? WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                            : WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const uint32_t tb = 1u << h->lgtb;
    ws_hgemm_cfg q;
    ws_hgemm_cfg_of(d, &q);
    wscu_tensor_map ta, tbm;
    {
        const uint64_t dim[3] = { C, (uint64_t)d->k, (uint64_t)d->c_out };
        const uint64_t str[2] = { C * es, C * (uint64_t)d->k * es };
        const uint32_t box[3] = { bkc, 1, (uint32_t)q.bm };
        if (tmap3(cu, &ta, dt, pw, dim, str, box, 1, err))
            return -1;
    }
    if (h->mn) { /* x as it is, channel-first: blocks of BK times x BK channels */
        const uint64_t dim[3] = { T, C, N };
        const uint64_t str[2] = { T * es, C * T * es };
        const uint32_t box[3] = { bkc, bkc, 1 };
        if (tmap3(cu, &tbm, dt, xb, dim, str, box, 1, err))
            return -1;
    } else {
        const uint64_t dim[3] = { C, T, N };
        const uint64_t str[2] = { C * es, T * C * es };
        const uint32_t box[3] = { bkc, tb * (uint32_t)d->stride, (uint32_t)q.bn / tb };
        if (tmap3(cu, &tbm, dt, xb, dim, str, box, (uint32_t)d->stride, err))
            return -1;
    }
    uint64_t pb = call_bias(c, a), padd = (uint64_t)(uintptr_t)a->add, py = (uint64_t)(uintptr_t)a->y;
    uint64_t abs = a->add ? (uint64_t)a->add_batch_stride : 0;
    if (c->ph_t) /* the phased form: no add; p_add_bs is dx's T */
        padd = 0, abs = c->ph_t;
    uint32_t n32 = (uint32_t)N, tout = (uint32_t)t_out, ntt = h->ntt, lg = (uint32_t)h->lgtb;
    ws_kargs k;
    ws_kargs_init(&k, WS_PARAMS_HGEMM);
    WS_KARG(&k, WS_HG_TA, ta), WS_KARG(&k, WS_HG_TB, tbm), WS_KARG(&k, WS_HG_B, pb);
    WS_KARG(&k, WS_HG_ADD, padd), WS_KARG(&k, WS_HG_Y, py), WS_KARG(&k, WS_HG_N, n32);
    WS_KARG(&k, WS_HG_T_OUT, tout), WS_KARG(&k, WS_HG_NTT, ntt), WS_KARG(&k, WS_HG_LGTB, lg);
    WS_KARG(&k, WS_HG_ADD_BS, abs);
    uint64_t pctr = c->hgctr; /* 0 where the kernel has no tile loop: not read */
    WS_KARG(&k, WS_HG_CTR, pctr);
    if (ws_kargs_check(&k, "ws_gpu_conv_run", err))
        return -1;
    if (h->staged) {
        uint64_t pxs = px, pxp = c->hx;
        uint32_t t32 = (uint32_t)T;
        ws_kargs p;
        ws_kargs_init(&p, WS_PARAMS_HPREP);
        WS_KARG(&p, WS_HP_X, pxs), WS_KARG(&p, WS_HP_XP, pxp);
        WS_KARG(&p, WS_HP_N, n32), WS_KARG(&p, WS_HP_T_IN, t32);
        if (ws_kargs_check(&p, "ws_gpu_conv_run", err))
            return -1;
        /* 16-byte copies where x's rows start 16-byte aligned and fill its blocks (at T_in 32
         * a 128-time block would be 3/4 idle: the dilated K3 D9 row, N256 T32, took 35.1 us
         * against 30.9 with the 32-time blocks) */
        const int p8 = c->hp8fn && ws_hgemm_prep8_call(d, (long long)T, px);
        const uint64_t tt = p8 ? (uint64_t)ws_hgemm_prep8_t(d) : 32;
        CU_TRY(cu, LaunchKernel(p8 ? c->hp8fn : c->hpfn, (unsigned)((T + tt - 1) / tt), (unsigned)((C + 63) / 64),
                                (unsigned)N, WS_HPREP_THREADS, 1, 1, 0, st, p.v, NULL), err);
        c->p8_calls += p8;
    }
    /* the tile loop (ptx_hgemm.h, the narrow tile): the blocks that fit the GPU at once, each
     * on to the next tile it asks for, or hg_blocks (ws_gpu_conv_hgemm_blocks); else a block a
     * tile */
    unsigned gx = c->hg_blocks ? c->hg_blocks : sms_of(c) * (unsigned)q.minb;
    if (!q.loop || gx > h->gx)
        gx = h->gx;
    CU_TRY(cu, LaunchKernel(c->ph_t ? c->hphfn : h->mn ? c->hmfn : c->hgfn, gx, 1, 1, (unsigned)q.threads, 1, 1,
                            (unsigned)q.smem, st, k.v, NULL), err);
    c->hg_calls++;
    c->mn_calls += h->mn != 0;
    c->ph_calls += c->ph_t != 0;
    return 0;
cleanup:
    return -1;
}

/* 1 when forward call a runs through the columns (ptx_hcol.h): the plan has them, the call's
 * columns fit 32-bit times and the grid, and the inner plan's Hopper GEMM takes the call
 * over them */
static int col_call_fits(const ws_gpu_conv *c, const ws_conv_args *a, int t_out)
{
    const ws_conv_desc *d = &c->d;
    if (!c->colp || c->no_hgemm || c->force_direct || d->op != WS_CONV_FWD || a->n < 1 || a->n > 65535 ||
        t_out < 1 || a->t_in < 1)
        return 0;
    if (!a->w && !c->colp->wh) /* W' from the call's weights or the plan's, never others */
        return 0;
    if (a->w && ws_gemm_packed_bytes(&c->colp->d) / (d->math == WS_MATH_TF32 ? 4 : 2) > UINT32_MAX - 256)
        return 0; /* "_wpad"'s element count in 32 bits */
    /* the kernel's u = S*t - P_L + D*k in 32 bits, and its grid: a thread a position of the
     * columns (T_out) or a time of x (padded channels) */
    const int pad = ws_hcol_pad(d), pos = pad ? a->t_in : t_out;
    if ((long long)t_out * d->stride + (long long)d->dilation * d->k + d->pad_l > INT_MAX / 2 ||
        ((long long)pos + WS_HCOL_THREADS - 1) / WS_HCOL_THREADS > INT_MAX)
        return 0;
    const ws_conv_args in = { .n = a->n, .t_in = pos, .x = (const void *)(uintptr_t)16, .y = a->y };
    return hgemm_call_fits(c->colp, &in, t_out, NULL);
}

/* a call col_call_fits admits: W' where the call gives weights ("_wpad"), the columns
 * ("_col") into the staging scratch, then the inner plan's call over them. 0, or -1 err */
static int launch_col(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_cu *cu = &c->g->cu;
    ws_gpu_conv *x = c->colp;
    /* a row of RP columns a position (T_out of them), or of CP padded channels a time of x */
    const int pad = ws_hcol_pad(d);
    const uint64_t RP = (uint64_t)(pad ? ws_hcol_cp(d) : ws_hcol_rp(d)), es = d->math == WS_MATH_TF32 ? 4 : 2;
    const uint64_t N = (uint64_t)a->n, T = (uint64_t)(pad ? a->t_in : t_out);
    if (N * T > SIZE_MAX / (RP * es))
        return ws_errf(err, "ws_gpu_conv_run: the columns of %llu x %llu positions do not fit memory",
                       (unsigned long long)N, (unsigned long long)T);
    if (scratch(c, &c->hx, &c->hx_bytes, (size_t)(N * T * RP * es), st, err))
        return -1;
    const ws_conv_args in = { .n = a->n, .t_in = (int)T, .x = (const void *)(uintptr_t)c->hx, .y = a->y,
                              .add = a->add, .add_batch_stride = a->add_batch_stride, .b = a->b };
    int t2 = 0;
    const int had = x->has_w;
    x->has_w = 1; /* its weights: its own, or the call's W' below */
    const int bad = check_call(x, &in, "ws_gpu_conv_run", &t2, err);
    x->has_w = had;
    if (bad)
        return -1;
    /* the inner plan runs its Hopper GEMM alone (it reads W' from x->wh; the plan has no other
     * kernel that would): col_call_fits asked the same, so this holds */
    hg_call h;
    if (!hgemm_call_fits(x, &in, t2, &h))
        return ws_errf(err, "ws_gpu_conv_run: the Hopper GEMM does not take the columns' conv of this call");
    uint64_t px = (uint64_t)(uintptr_t)a->x, pxc = c->hx;
    uint32_t n32 = (uint32_t)N, tin = (uint32_t)a->t_in, tout = (uint32_t)t_out;
    ws_kargs k;
    ws_kargs_init(&k, WS_PARAMS_HCOL);
    WS_KARG(&k, WS_HC_X, px), WS_KARG(&k, WS_HC_XC, pxc), WS_KARG(&k, WS_HC_N, n32);
    WS_KARG(&k, WS_HC_T_IN, tin), WS_KARG(&k, WS_HC_T_OUT, tout);
    if (ws_kargs_check(&k, "ws_gpu_conv_run", err))
        return -1;
    const wscu_devptr own = x->wh;
    if (a->w) { /* W' of the call's weights, in the inner plan's packed form (its count within 32
                 * bits: col_call_fits) */
        uint64_t pw = (uint64_t)(uintptr_t)a->w, pout = c->wpc;
        uint32_t nw = (uint32_t)((uint64_t)d->c_out * RP * (pad ? (uint64_t)d->k : 1));
        ws_kargs kw;
        ws_kargs_init(&kw, WS_PARAMS_WPREP);
        WS_KARG(&kw, WS_WPREP_W, pw), WS_KARG(&kw, WS_WPREP_OUT, pout), WS_KARG(&kw, WS_WPREP_N, nw);
        if (ws_kargs_check(&kw, "ws_gpu_conv_run", err))
            return -1;
        CU_TRY(cu, LaunchKernel(c->wpadfn, (unsigned)(((uint64_t)nw + WS_WPREP_THREADS - 1) / WS_WPREP_THREADS), 1, 1,
                                WS_WPREP_THREADS, 1, 1, 0, st, kw.v, NULL), err);
        x->wh = c->wpc;
    }
    CU_TRY(cu, LaunchKernel(c->colfn, (unsigned)((T + WS_HCOL_THREADS - 1) / WS_HCOL_THREADS), n32, 1,
                            WS_HCOL_THREADS, 1, 1, 0, st, k.v, NULL), err);
    x->has_w = 1;
    const int rc = launch_hgemm(x, &in, t2, &h, st, err);
    x->has_w = had, x->wh = own;
    if (rc)
        return -1;
    c->col_calls++;
    return 0;
cleanup:
    x->wh = own;
    return -1;
}

int ws_gpu_conv_packed(ws_gpu_conv *c, const void *w, const float *b, uint64_t stream, uint64_t *pw,
                       uint64_t *pb, ws_err *err)
{
    const ws_conv_args a = { .w = w, .b = b };
    wscu_devptr d = 0;
    if (!c->wh && !w)
        return ws_errf(err, "ws_gpu_conv_packed: the plan has no packed weights");
    if (call_weights(c, &a, W_PACKED, stream ? (wscu_stream)(uintptr_t)stream : c->g->stream, &d, err))
        return -1;
    *pw = d, *pb = call_bias(c, &a);
    return 0;
}

int ws_gpu_tmap3(ws_gpu *g, void *map, int dtype, uint64_t addr, const uint64_t dim[3],
                 const uint64_t stride[2], const uint32_t box[3], int swizzle, ws_err *err)
{
    const uint32_t es[3] = { 1, 1, 1 };
    return tmaps(&g->cu, (wscu_tensor_map *)map, dtype, 3, addr, dim, stride, box, es,
                 swizzle == 64 ? WS_CU_TENSOR_MAP_SWIZZLE_64B : WS_CU_TENSOR_MAP_SWIZZLE_128B, err);
}

unsigned long ws_gpu_conv_hgemm_calls(const ws_gpu_conv *c)
{
    return c ? c->hg_calls : 0;
}

unsigned long ws_gpu_conv_hgemm_col_calls(const ws_gpu_conv *c)
{
    return c ? c->col_calls : 0;
}

unsigned long ws_gpu_conv_hgemm_mn_calls(const ws_gpu_conv *c)
{
    return c ? c->mn_calls : 0;
}

unsigned long ws_gpu_conv_hgemm_prep8_calls(const ws_gpu_conv *c)
{
    return c ? c->p8_calls : 0;
}

int ws_gpu_conv_hgemm_blocks_per_sm(const ws_gpu_conv *c)
{
    if (!c || !c->hgfn || !c->g->cu.OccupancyMaxActiveBlocksPerMultiprocessor)
        return -1;
    ws_hgemm_cfg q;
    ws_hgemm_cfg_of(&c->d, &q);
    int blocks = -1;
    if (c->g->cu.OccupancyMaxActiveBlocksPerMultiprocessor(&blocks, c->hgfn, q.threads, (size_t)q.smem) != 0)
        return -1;
    return blocks;
}

int ws_gpu_hgemm_available(const ws_gpu *g)
{
    return g && g->cu.TensorMapEncodeTiled && g->emit_major == 9 && g->emit_minor == 0 && WS_HGEMM;
}

void ws_gpu_conv_no_split(ws_gpu_conv *c, int on)
{
    if (c)
        c->no_split = on;
}

void ws_gpu_conv_parts(ws_gpu_conv *c, int z)
{
    if (c)
        c->parts = z < 0 ? 0 : z;
}

unsigned long ws_gpu_conv_split_calls(const ws_gpu_conv *c)
{
    return c ? c->split_calls : 0;
}

void ws_gpu_conv_no_slice(ws_gpu_conv *c, int on)
{
    if (c)
        c->no_slice = on;
}

void ws_gpu_conv_no_pdl(ws_gpu_conv *c, int on)
{
    if (c)
        c->no_pdl = on;
}

unsigned long ws_gpu_conv_slice_calls(const ws_gpu_conv *c)
{
    return c ? c->slice_calls : 0;
}

void ws_gpu_conv_tail_parts(ws_gpu_conv *c, int z)
{
    if (c)
        c->tail_parts = z < 0 ? 0 : z;
}

unsigned long ws_gpu_conv_tail_calls(const ws_gpu_conv *c)
{
    return c ? c->tail_calls : 0;
}

void ws_gpu_conv_no_hgemm(ws_gpu_conv *c, int on)
{
    if (c)
        c->no_hgemm = on;
    if (c && c->dxp) /* dx's conv too */
        c->dxp->no_hgemm = on;
}

void ws_gpu_conv_hgemm_blocks(ws_gpu_conv *c, unsigned blocks)
{
    if (c)
        c->hg_blocks = blocks;
    if (c && c->dxp) /* dx's conv too */
        c->dxp->hg_blocks = blocks;
    if (c && c->colp) /* the columns' conv too */
        c->colp->hg_blocks = blocks;
}

void ws_gpu_conv_no_phased(ws_gpu_conv *c, int on)
{
    if (c)
        c->no_phased = on;
}

int ws_gpu_conv_hgemm(const ws_gpu_conv *c, const ws_conv_args *a)
{
    int t_out = 0;
    if (!c || check_call(c, a, "ws_gpu_conv_hgemm", &t_out, NULL))
        return -1;
    return !states_call(a) && !dw_call_fits(c, a, t_out) &&
           (hgemm_call_fits(c, a, t_out, NULL) || col_call_fits(c, a, t_out));
}

int ws_gpu_user_stream_new(ws_gpu *g, uint64_t *stream, ws_err *err)
{
    ws_cu *cu = &g->cu;
    wscu_stream st = NULL;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, StreamCreate(&st, WS_CU_STREAM_NON_BLOCKING), err);
    *stream = (uint64_t)(uintptr_t)st;
    return 0;
cleanup:
    return -1;
}

int ws_gpu_user_stream_wait(ws_gpu *g, uint64_t stream, ws_err *err)
{
    ws_cu *cu = &g->cu;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, StreamSynchronize(stream ? (wscu_stream)(uintptr_t)stream : g->stream), err);
    return 0;
cleanup:
    return -1;
}

void ws_gpu_user_stream_free(ws_gpu *g, uint64_t stream)
{
    if (!g || !stream)
        return;
    g->cu.CtxSetCurrent(g->ctx);
    g->cu.StreamDestroy((wscu_stream)(uintptr_t)stream);
}

int ws_gpu_emit_cc(ws_gpu *g, int major, int minor)
{
    const int cc = major * 10 + minor;
    if (!g || cc < 80 || cc > g->cc_major * 10 + g->cc_minor)
        return -1;
    g->emit_major = major;
    g->emit_minor = minor;
    return 0;
}

void ws_gpu_conv_force_direct(ws_gpu_conv *c, int on)
{
    if (c)
        c->force_direct = on;
}

int ws_gpu_conv_kernel(const ws_gpu_conv *c, const ws_conv_args *a)
{
    int t_out = 0;
    if (!c || check_call(c, a, "ws_gpu_conv_kernel", &t_out, NULL))
        return -1;
    return states_call(a) ? 3 : dw_call_fits(c, a, t_out) ? 1
         : hgemm_call_fits(c, a, t_out, NULL) || col_call_fits(c, a, t_out) || gemm_call_fits(c, a, t_out) ? 2
                                                                                                       : 0;
}

static int launch_states(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st,
                         ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    if (!c->dws) /* ws_conv_check_args admits states only where ws_dws_fits */
        return ws_errf(err, "ws_gpu_conv_run: seq_idx and states need a depthwise causal plan");
    const size_t sb = ws_dws_scratch_bytes(d, a->n, a->t_in);
    if (scratch(c, &c->gz, &c->gz_bytes, sb, st, err))
        return -1;
    wscu_devptr pw = 0;
    if (call_weights(c, a, W_F32, st, &pw, err))
        return -1;
    return ws_dws_enqueue(c->dws, cu, d, a, t_out, pw, call_bias(c, a), sb ? c->gz : 0, st, err);
}

static int launch(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st, ws_err *err);

/* the gradient of a BWD call: dy where act is NONE, else the gz scratch (ptx_hbwd.h) */
static uint64_t grad_of(const ws_gpu_conv *c, const ws_conv_args *a)
{
    return c->d.act == WS_ACT_NONE ? (uint64_t)(uintptr_t)a->dy : c->gz;
}

/* dx of call a as the forward plan c->dxp over the gradient: 1 when it fits its grids */
static int gb_dx_fits(const ws_gpu_conv *c, const ws_conv_args *a, int t_out)
{
    const ws_conv_desc *d = &c->d;
    if (!c->dxp || c->force_direct || (c->gx.phases > 1 && a->n > 65535))
        return 0;
    const long long rows = ws_conv_out_len(&c->gx.sub, t_out), S = d->stride;
    const long long nw = (long long)c->gx.sub.c_out * c->gx.sub.c_in * c->gx.sub.k;
    if (nw > INT_MAX || rows < (a->t_in + S - 1) / S || rows * S > INT_MAX ||
        ((long long)d->c_in * d->k + 31) / 32 > 65535 ||
        (long long)a->t_in * d->c_in > INT_MAX)
        return 0;
    return 1;
}

/* dx of call a (gb_dx_fits): W' from the call's float32 w, the forward plan, then X' moved
 * into dx where S > 1 and X' is not dx itself */
static int launch_gb_dx(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_cu *cu = &c->g->cu;
    const ws_conv_desc *sd = &c->gx.sub;
    const int S = d->stride, rows = ws_conv_out_len(sd, t_out);
    const size_t nw = (size_t)sd->c_out * (size_t)sd->c_in * (size_t)sd->k;
    const size_t xs = d->x_type == WS_F32 ? 4 : 2;
    /* NCL dx at S > 1 on the Hopper GEMM: its phased form writes dx itself (no X', no _u) */
    ws_conv_args probe = { .n = a->n, .t_in = t_out, .x = (const void *)(uintptr_t)grad_of(c, a),
                           .w = (const void *)(uintptr_t)1, .y = a->dx };
    const int phased = S > 1 && d->x_layout == WS_NCL && !c->no_phased && c->dxp->hphfn &&
                       hgemm_call_fits(c->dxp, &probe, rows, NULL);
    const int whole = S == 1 || phased || (d->x_layout == WS_NLC && (long long)rows * S == a->t_in);
    /* W' in the form the conv's kernel for this call reads: packed for the tensor-core GEMM,
     * else float32; handed to the plan as its own weights for the call */
    probe.y = whole ? a->dx : (void *)(uintptr_t)(c->dxs ? c->dxs : 16);
    const int packed = c->gb_p && ws_gpu_conv_kernel(c->dxp, &probe) == 2;
    const size_t wxb = packed ? ws_gemm_packed_bytes(sd) : nw * sizeof(float);
    /* a plan's own weights (a->w NULL) give the same W' every call: made by the first such
     * call and kept (calls of one plan never overlap, so later calls, on any stream, are
     * ordered after the one that wrote it) */
    const int kept = !a->w && c->wxx_own == 1 + packed;
    wscu_devptr pw = 0;
    const size_t nw0 = (size_t)d->c_out * (size_t)d->c_in * (size_t)d->k;
    if (call_weights(c, a, W_F32, st, &pw, err) ||
        scratch(c, &c->wt, &c->wt_bytes, nw0 * sizeof(float), st, err) ||
        scratch(c, &c->wxx, &c->wxx_bytes, wxb, st, err) ||
        (!whole && scratch(c, &c->dxs, &c->dxs_bytes,
                           (size_t)a->n * (size_t)rows * (size_t)sd->c_out * xs, st, err)))
        return -1;
    uint64_t pwx = c->wxx, pdx = (uint64_t)(uintptr_t)a->dx, pdxs = c->dxs, pwt = c->wt;
    uint32_t tco = (uint32_t)d->c_out;
    ws_kargs kt; /* wT[c*K + k][o] = w[o][c][k]: emit_tile's transpose, w read as NLC over C_out times */
    ws_kargs_init(&kt, WS_PARAMS_GBS);
    WS_KARG(&kt, WS_GBS_SRC, pw), WS_KARG(&kt, WS_GBS_DST, pwt), WS_KARG(&kt, WS_GBS_T, tco);
    WS_KARG(&kt, WS_GBS_PITCH, tco);
    uint32_t n32 = (uint32_t)nw, tin = (uint32_t)a->t_in, rows32 = (uint32_t)rows * (uint32_t)S;
    if (d->x_layout == WS_NCL) { /* emit_tile: the source's times, then dx's */
        const uint32_t t = tin;
        tin = rows32, rows32 = t;
    }
    ws_kargs kw, ku;
    ws_kargs_init(&kw, WS_PARAMS_WPREP);
    WS_KARG(&kw, WS_WPREP_W, pwt), WS_KARG(&kw, WS_WPREP_OUT, pwx), WS_KARG(&kw, WS_WPREP_N, n32);
    ws_kargs_init(&ku, WS_PARAMS_GBS);
    WS_KARG(&ku, WS_GBS_SRC, pdxs), WS_KARG(&ku, WS_GBS_DST, pdx), WS_KARG(&ku, WS_GBS_T, tin);
    WS_KARG(&ku, WS_GBS_PITCH, rows32);
    if (ws_kargs_check(&kw, "ws_gpu_conv_run", err) || ws_kargs_check(&ku, "ws_gpu_conv_run", err) ||
        ws_kargs_check(&kt, "ws_gpu_conv_run", err))
        return -1;
    const ws_conv_args a2 = { .n = a->n, .t_in = t_out, .x = (const void *)(uintptr_t)grad_of(c, a),
                              .y = whole ? a->dx : (void *)(uintptr_t)c->dxs };
    int t2 = 0, rc;
    ws_gpu_conv *x = c->dxp;
    x->has_w = 1, x->w = packed ? 0 : c->wxx, x->wh = packed ? c->wxx : 0;
    x->ph_t = phased ? (uint32_t)a->t_in : 0;
    rc = check_call(x, &a2, "ws_gpu_conv_run", &t2, err);
    if (!rc && !kept) {
        c->wxx_own = 0;
        CU_TRY(cu, LaunchKernel(c->gb_t, (unsigned)((d->c_out + 31) / 32),
                                (unsigned)(((size_t)d->c_in * (size_t)d->k + 31) / 32), 1, WS_GBWD_THREADS, 1, 1, 0,
                                st, kt.v, NULL), err);
        CU_TRY(cu, LaunchKernel(packed ? c->gb_p : c->gb_w, (unsigned)((nw + WS_GBWD_THREADS - 1) / WS_GBWD_THREADS),
                                1, 1, WS_GBWD_THREADS, 1, 1, 0, st, kw.v, NULL), err);
        c->wxx_own = a->w ? 0 : 1 + packed;
    }
    if (!rc)
        rc = launch(x, &a2, t2, st, err);
    x->has_w = 0, x->w = x->wh = 0, x->ph_t = 0;
    if (rc || phased)
        return rc ? -1 : 0;
    if (!whole && d->x_layout == WS_NCL) /* a transpose, tiles of 32 x 32 */
        CU_TRY(cu, LaunchKernel(c->gb_u, (unsigned)((a->t_in + 31) / 32), (unsigned)((d->c_in + 31) / 32),
                                (unsigned)a->n, WS_GBWD_THREADS, 1, 1, 0, st, ku.v, NULL), err);
    else if (!whole)
        CU_TRY(cu, LaunchKernel(c->gb_u,
                                (unsigned)(((uint64_t)a->t_in * (uint64_t)d->c_in + WS_GBWD_THREADS - 1) /
                                           WS_GBWD_THREADS),
                                1, (unsigned)a->n, WS_GBWD_THREADS, 1, 1, 0, st, ku.v, NULL), err);
    return 0;
cleanup:
    c->dxp->has_w = 0, c->dxp->w = c->dxp->wh = 0, c->dxp->ph_t = 0;
    return -1;
}

/* dw and db of call a on the weight-gradient kernel: 1 when its grids fit */
static int gb_wg_fits(const ws_gpu_conv *c, const ws_conv_args *a, int t_out)
{
    const ws_conv_desc *d = &c->d;
    const int ffma = c->gb_m != 0; /* the module's FFMA weight gradient (ws_gbwd_ffma_dw_cc) */
    if ((ffma ? 0 : !c->wgfn || c->no_hgemm) || c->force_direct || a->n > 65535)
        return 0;
    const long long bk = ffma ? WS_GBWD_FWG_BK : ws_hgemm_bkc(d), tch = (t_out + bk - 1) / bk;
    /* the row gathers' threads an item (launch_gb_wg's pitches; at most K classes) */
    const long long al = 16 / ws_hgemm_xbytes(d), S = d->stride;
    const long long xv = ((a->t_in + S - 1) / S + 2 * al - 1) / al, gv = (t_out + al - 1) / al;
    if (!ffma && ((long long)d->k * d->c_in * xv > (long long)UINT_MAX - WS_GBWD_THREADS ||
                  (long long)d->c_out * gv > (long long)UINT_MAX - WS_GBWD_THREADS))
        return 0;
    if ((long long)a->n * tch > INT_MAX / 2 || (long long)a->n * t_out > INT_MAX ||
        (long long)d->c_out * d->c_in * d->k > INT_MAX || a->t_in + (long long)d->pad_l + d->pad_r +
        (long long)d->dilation * d->k > INT_MAX / 2)
        return 0;
    return 1;
}

/* the splits of dw's sum over `chunks` stages (ptx_hbwd.h): `want`, but at most 256 MiB of
 * partials (wbytes each), at most one a stage and at least one; *kts stages a split, the last
 * split's possibly fewer */
static uint64_t gb_splits(uint64_t want, uint64_t chunks, uint64_t wbytes, uint64_t *kts)
{
    const uint64_t cap = (256ull << 20) > wbytes ? (256ull << 20) / wbytes : 1;
    uint64_t splits = want > cap ? cap : want;
    splits = splits > chunks ? chunks : splits ? splits : 1;
    *kts = (chunks + splits - 1) / splits;
    return (chunks + *kts - 1) / *kts;
}

/* the arguments of the passes around dw's kernel (ptx_hbwd.h), for a call asking for dw and
 * db as a says: _g (g -> c->gst at pitch *gp), _x (x -> c->xst at pitch *xp), _f (the
 * partials -> dw), _b (g -> db). The values are the caller's (the launches read them); 0, or
 * -1 with err */
typedef struct {
    uint64_t pg, px, part, dw, db;
    uint32_t n, to, ti, gp, xp, splits;
} gb_vals;

static int gb_pass_args(ws_gpu_conv *c, const ws_conv_args *a, gb_vals *v, ws_kargs *kg, ws_kargs *kx,
                        ws_kargs *kf, ws_kargs *kb, ws_err *err)
{
    ws_kargs_init(kg, WS_PARAMS_GBS);
    WS_KARG(kg, WS_GBS_SRC, v->pg), WS_KARG(kg, WS_GBS_DST, c->gst), WS_KARG(kg, WS_GBS_T, v->to);
    WS_KARG(kg, WS_GBS_PITCH, v->gp);
    ws_kargs_init(kx, WS_PARAMS_GBS);
    WS_KARG(kx, WS_GBS_SRC, v->px), WS_KARG(kx, WS_GBS_DST, c->xst), WS_KARG(kx, WS_GBS_T, v->ti);
    WS_KARG(kx, WS_GBS_PITCH, v->xp);
    ws_kargs_init(kf, WS_PARAMS_GBF);
    WS_KARG(kf, WS_GBF_PART, v->part), WS_KARG(kf, WS_GBF_DW, v->dw), WS_KARG(kf, WS_GBF_SPLITS, v->splits);
    ws_kargs_init(kb, WS_PARAMS_BWD_DB);
    WS_KARG(kb, WS_BDB_GZ, v->pg), WS_KARG(kb, WS_BDB_DB, v->db), WS_KARG(kb, WS_BDB_N, v->n);
    WS_KARG(kb, WS_BDB_T_OUT, v->to);
    if ((a->dw && (ws_kargs_check(kg, "ws_gpu_conv_run", err) || ws_kargs_check(kx, "ws_gpu_conv_run", err) ||
                   ws_kargs_check(kf, "ws_gpu_conv_run", err))) ||
        (a->db && ws_kargs_check(kb, "ws_gpu_conv_run", err)))
        return -1;
    return 0;
}

/* dw and db of call a in float32 math: A and B (ptx_hbwd.h) in place or staged, the FFMA
 * kernel's partials, their finish; db as the tensor-core maths' */
static int launch_gb_fwg(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    const uint64_t N = (uint64_t)a->n, Co = (uint64_t)d->c_out, Ci = (uint64_t)d->c_in, K = (uint64_t)d->k;
    const uint64_t To = (uint64_t)t_out, Ti = (uint64_t)a->t_in;
    uint64_t pg = grad_of(c, a), px = (uint64_t)(uintptr_t)a->x;
    const int a_in = d->act == WS_ACT_NONE && d->y_layout == WS_NLC && d->y_type == WS_F32 && Co % 4 == 0 &&
                     pg % 16 == 0;
    const int b_in = d->x_layout == WS_NLC && d->x_type == WS_F32 && Ci % 4 == 0 && px % 16 == 0;
    const uint64_t ap = (Co + 3) / 4 * 4, bp = (Ci + 3) / 4 * 4, BK = WS_GBWD_FWG_BK;
    const uint64_t chunks = N * ((To + BK - 1) / BK);
    const uint64_t tiles = (Co + WS_GBWD_FWG_BM - 1) / WS_GBWD_FWG_BM * ((Ci + WS_GBWD_FWG_BN - 1) / WS_GBWD_FWG_BN) * K;
    const uint64_t wbytes = K * Co * Ci * 4, slots = 2 * (uint64_t)(g->sms > 0 ? g->sms : 132);
    /* as many splits as fill the block slots (two blocks an SM) without a second wave, at
     * most 65535 (the grid's y) */
    uint64_t kts;
    const uint64_t want = tiles >= slots ? 1 : slots / tiles;
    const uint64_t splits = gb_splits(want > 65535 ? 65535 : want, chunks, wbytes, &kts);
    if (tiles > INT_MAX)
        return ws_errf(err, "ws_gpu_conv_run: dw's grid of %llu blocks is over the limit", (unsigned long long)tiles);
    if (a->dw && ((!a_in && scratch(c, &c->gst, &c->gst_bytes, (size_t)(N * To * ap * 4), st, err)) ||
                  (!b_in && scratch(c, &c->xst, &c->xst_bytes, (size_t)(N * Ti * bp * 4), st, err)) ||
                  scratch(c, &c->part, &c->part_bytes, (size_t)(splits * wbytes), st, err)))
        return -1;
    uint64_t A = a_in ? pg : c->gst, B = b_in ? px : c->xst;
    gb_vals v = { .pg = pg, .px = px, .part = c->part, .dw = (uint64_t)(uintptr_t)a->dw,
                  .db = (uint64_t)(uintptr_t)a->db, .n = (uint32_t)N, .to = (uint32_t)To, .ti = (uint32_t)Ti,
                  .gp = (uint32_t)ap, .xp = (uint32_t)bp, .splits = (uint32_t)splits };
    uint32_t kts32 = (uint32_t)kts;
    ws_kargs km, kg, kx, kf, kb;
    ws_kargs_init(&km, WS_PARAMS_FWG);
    WS_KARG(&km, WS_FWG_A, A), WS_KARG(&km, WS_FWG_B, B), WS_KARG(&km, WS_FWG_PART, v.part);
    WS_KARG(&km, WS_FWG_N, v.n), WS_KARG(&km, WS_FWG_T_OUT, v.to), WS_KARG(&km, WS_FWG_T_IN, v.ti);
    WS_KARG(&km, WS_FWG_AP, v.gp), WS_KARG(&km, WS_FWG_BP, v.xp), WS_KARG(&km, WS_FWG_KTS, kts32);
    if (gb_pass_args(c, a, &v, &kg, &kx, &kf, &kb, err) || (a->dw && ws_kargs_check(&km, "ws_gpu_conv_run", err)))
        return -1;
    const unsigned T = WS_GBWD_THREADS;
    if (a->dw) {
        if (!a_in)
            CU_TRY(cu, LaunchKernel(c->gb_g, (unsigned)((To + 31) / 32), (unsigned)((ap + 31) / 32), (unsigned)N,
                                    T, 1, 1, 0, st, kg.v, NULL), err);
        if (!b_in)
            CU_TRY(cu, LaunchKernel(c->gb_x, (unsigned)((Ti + 31) / 32), (unsigned)((bp + 31) / 32), (unsigned)N,
                                    T, 1, 1, 0, st, kx.v, NULL), err);
        CU_TRY(cu, LaunchKernel(c->gb_m, (unsigned)tiles, (unsigned)splits, 1, WS_GBWD_THREADS, 1, 1, 0, st, km.v,
                                NULL), err);
        CU_TRY(cu, LaunchKernel(c->gb_f, (unsigned)((Co * Ci + WS_GBWD_FIN_PAIRS - 1) / WS_GBWD_FIN_PAIRS), 1, 1, T,
                                1, 1, 0, st, kf.v, NULL), err);
    }
    if (a->db)
        CU_TRY(cu, LaunchKernel(c->gb_b, (unsigned)Co, 1, 1, T, 1, 1, 0, st, kb.v, NULL), err);
    return 0;
cleanup:
    return -1;
}

static int launch_gb_wg(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st, ws_err *err)
{
    if (c->gb_m)
        return launch_gb_fwg(c, a, t_out, st, err);
    const ws_conv_desc *d = &c->d;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    const ws_dtype mt = ws_gbwd_math_type(d);
    const uint64_t es = mt == WS_F32 ? 4 : 2, al = 16 / es, BK = (uint64_t)ws_hgemm_bkc(d);
    const uint64_t N = (uint64_t)a->n, Co = (uint64_t)d->c_out, Ci = (uint64_t)d->c_in, K = (uint64_t)d->k;
    const uint64_t S = (uint64_t)d->stride, To = (uint64_t)t_out, Ti = (uint64_t)a->t_in;
    const int exact = d->math != WS_MATH_TF32; /* TF32 operands are rounded by the staging */
    uint64_t pg = grad_of(c, a), px = (uint64_t)(uintptr_t)a->x;
    const int g_in = exact && d->act == WS_ACT_NONE && d->y_layout == WS_NCL && d->y_type == mt &&
                     (To * es) % 16 == 0 && pg % 16 == 0;
    ws_gbwd_cls cl; /* x is staged by class (ptx_hbwd.h): the copies start on 16 bytes */
    ws_hgemm_wgrad_classes(d, &cl);
    const uint64_t gp = g_in ? To : (To + al - 1) / al * al, ncls = (uint64_t)cl.n;
    const uint64_t xp = ((Ti + S - 1) / S + al + al - 1) / al * al;
    const uint64_t tch = (To + BK - 1) / BK, chunks = N * tch;
    const uint64_t rows = (Co + WS_HGEMM_BM - 1) / WS_HGEMM_BM, jt = (Ci + WS_HGEMM_BN - 1) / WS_HGEMM_BN;
    const uint64_t tiles = rows * jt * K, wbytes = K * Co * Ci * 4;
    uint64_t kts;
    const uint64_t splits = gb_splits((2 * (uint64_t)(g->sms > 0 ? g->sms : 132) + tiles - 1) / tiles, chunks,
                                      wbytes, &kts);
    if (tiles * splits > INT_MAX)
        return ws_errf(err, "ws_gpu_conv_run: dw's grid of %llu blocks is over the limit",
                       (unsigned long long)(tiles * splits));
    if (a->dw && ((!g_in && scratch(c, &c->gst, &c->gst_bytes, (size_t)(N * Co * gp * es), st, err)) ||
                  scratch(c, &c->xst, &c->xst_bytes, (size_t)(N * ncls * Ci * xp * es), st, err) ||
                  scratch(c, &c->part, &c->part_bytes, (size_t)(splits * wbytes), st, err)))
        return -1;
    const uint64_t G = g_in ? pg : c->gst, X = c->xst;
    const int dt = d->math == WS_MATH_BF16 ? WS_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                   : d->math == WS_MATH_F16 ? WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                            : WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    ws_kargs km, kg, kx, kf, kb;
    wscu_tensor_map ta, tb;
    gb_vals v = { .pg = pg, .px = px, .part = c->part, .dw = (uint64_t)(uintptr_t)a->dw,
                  .db = (uint64_t)(uintptr_t)a->db, .n = (uint32_t)N, .to = (uint32_t)To, .ti = (uint32_t)Ti,
                  .gp = (uint32_t)gp, .xp = (uint32_t)xp, .splits = (uint32_t)splits };
    uint32_t tch32 = (uint32_t)tch, kts32 = (uint32_t)kts, nsk = (uint32_t)(splits * K);
    if (a->dw) {
        const uint64_t dimA[3] = { To, Co, N }, strA[2] = { gp * es, Co * gp * es };
        const uint32_t boxA[3] = { (uint32_t)BK, WS_HGEMM_BM, 1 };
        const uint64_t dimB[3] = { xp, ncls * Ci, N }, strB[2] = { xp * es, ncls * Ci * xp * es };
        const uint32_t boxB[3] = { (uint32_t)BK, WS_HGEMM_BN, 1 };
        if (tmap3(cu, &ta, dt, G, dimA, strA, boxA, 1, err) || tmap3(cu, &tb, dt, X, dimB, strB, boxB, 1, err))
            return -1;
    }
    ws_kargs_init(&km, WS_PARAMS_HWG);
    WS_KARG(&km, WS_HW_TA, ta), WS_KARG(&km, WS_HW_TB, tb), WS_KARG(&km, WS_HW_Y, v.part);
    WS_KARG(&km, WS_HW_N, v.n), WS_KARG(&km, WS_HW_TCH, tch32), WS_KARG(&km, WS_HW_KTS, kts32);
    WS_KARG(&km, WS_HW_NSK, nsk);
    if (gb_pass_args(c, a, &v, &kg, &kx, &kf, &kb, err) || (a->dw && ws_kargs_check(&km, "ws_gpu_conv_run", err)))
        return -1;
    const unsigned T = WS_GBWD_THREADS;
    if (a->dw) { /* NCL sources gathered by rows (al elements a thread), else tiles of 32 x 32 */
        if (!g_in && ws_gbwd_g_rows(d))
            CU_TRY(cu, LaunchKernel(c->gb_g, (unsigned)((Co * (gp / al) + T - 1) / T), 1, (unsigned)N, T, 1, 1, 0,
                                    st, kg.v, NULL), err);
        else if (!g_in)
            CU_TRY(cu, LaunchKernel(c->gb_g, (unsigned)((gp + 31) / 32), (unsigned)((Co + 31) / 32), (unsigned)N,
                                    T, 1, 1, 0, st, kg.v, NULL), err);
        if (ws_gbwd_x_rows(d))
            CU_TRY(cu, LaunchKernel(c->gb_x, (unsigned)((Ci * ncls * (xp / al) + T - 1) / T), 1, (unsigned)N, T, 1, 1,
                                    0, st, kx.v, NULL), err);
        else
            CU_TRY(cu, LaunchKernel(c->gb_x, (unsigned)((xp + 31) / 32), (unsigned)((Ci + 31) / 32 * ncls),
                                    (unsigned)N, T, 1, 1, 0, st, kx.v, NULL), err);
        CU_TRY(cu, LaunchKernel(c->wgfn, (unsigned)(tiles * splits), 1, 1, WS_HGEMM_THREADS, 1, 1, WS_HGEMM_SMEM,
                                st, km.v, NULL), err);
        CU_TRY(cu, LaunchKernel(c->gb_f, (unsigned)((Co * Ci + WS_GBWD_FIN_PAIRS - 1) / WS_GBWD_FIN_PAIRS), 1, 1, T,
                                1, 1, 0, st, kf.v,
                                NULL), err);
    }
    if (a->db)
        CU_TRY(cu, LaunchKernel(c->gb_b, (unsigned)Co, 1, 1, T, 1, 1, 0, st, kb.v, NULL), err);
    return 0;
cleanup:
    return -1;
}

/* BWD: the GEMM passes where they take the call's parts, the direct kernels for the rest
 * (gz first wherever the direct kernels run or act is not NONE) */
static int launch_bwd_all(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st, ws_err *err)
{
    const int gdx = a->dx && gb_dx_fits(c, a, t_out);
    const int gwg = (a->dw || a->db) && gb_wg_fits(c, a, t_out);
    int want[WS_DIRECT_NPARTS] = { 0, !gdx, !gwg, !gwg };
    want[WS_DIRECT_GZ] = (a->dx && !gdx) || ((a->dw || a->db) && !gwg) ||
                         ((gdx || gwg) && c->d.act != WS_ACT_NONE);
    if (launch_bwd(c, a, t_out, want, st, err))
        return -1;
    if (gdx && launch_gb_dx(c, a, t_out, st, err))
        return -1;
    if (gwg && launch_gb_wg(c, a, t_out, st, err))
        return -1;
    c->gb_calls += gdx || gwg;
    return 0;
}

unsigned long ws_gpu_conv_gbwd_calls(const ws_gpu_conv *c)
{
    return c ? c->gb_calls : 0;
}

unsigned long ws_gpu_conv_phased_calls(const ws_gpu_conv *c)
{
    return c && c->dxp ? c->dxp->ph_calls : 0;
}

/* enqueues a checked call on stream st; launch and the launch_* functions expect the plan's
 * context current (ws_gpu_conv_run, _enqueue and _bench make it so) */
static int launch(ws_gpu_conv *c, const ws_conv_args *a, int t_out, wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d = &c->d;
    if (states_call(a))
        return launch_states(c, a, t_out, st, err);
    if (dw_call_fits(c, a, t_out)) {
        const int rc = launch_dw(c, a, t_out, st, err);
        if (rc <= 0)
            return rc;
    }
    hg_call h;
    if (hgemm_call_fits(c, a, t_out, &h))
        return launch_hgemm(c, a, t_out, &h, st, err);
    if (col_call_fits(c, a, t_out))
        return launch_col(c, a, t_out, st, err);
    if (d->op == WS_CONV_FWD && parts_reserved(c, st, err))
        return -1;
    if (gemm_call_fits(c, a, t_out))
        return launch_gemm(c, a, t_out, st, err);
    if (d->op == WS_CONV_BWD)
        return launch_bwd_all(c, a, t_out, st, err);
    const unsigned long long total = (unsigned long long)a->n * (unsigned long long)d->c_out *
                                     (unsigned long long)t_out;
    unsigned blocks = 0;
    if (grid_of(total, "y", &blocks, err))
        return -1;
    ws_gpu *g = c->g;
    ws_cu *cu = &g->cu;
    fwd_call f;
    wscu_devptr pw = 0;
    if (call_weights(c, a, W_F32, st, &pw, err) || fwd_bind(&f, c, a, t_out, pw, err))
        return -1;
    CU_TRY(cu, LaunchKernel(c->fn, blocks, 1, 1, WS_DIRECT_THREADS, 1, 1, 0, st,
                            f.args.v, NULL), err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_conv_run(ws_gpu_conv *c, const ws_conv_args *a, ws_err *err)
{
    int t_out = 0;
    ws_cu *cu = &c->g->cu;
    if (check_call(c, a, "ws_gpu_conv_run", &t_out, err))
        return -1;
    CU_TRY(cu, CtxSetCurrent(c->g->ctx), err);
    if (launch(c, a, t_out, c->g->stream, err))
        return -1;
    CU_TRY(cu, StreamSynchronize(c->g->stream), err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_conv_enqueue(ws_gpu_conv *c, const ws_conv_args *a, uint64_t stream, ws_err *err)
{
    int t_out = 0;
    if (check_call(c, a, "ws_gpu_conv_enqueue", &t_out, err))
        return -1;
    /* the plan's context made current where another is (or none), and the caller's
     * (PyTorch's current device) put back after */
    ws_cu *cu = &c->g->cu;
    wscu_context was = NULL;
    if (cu->CtxGetCurrent(&was) != 0 || was != c->g->ctx) {
        if (cu->CtxSetCurrent(c->g->ctx) != 0)
            return ws_errf(err, "ws_gpu_conv_enqueue: cuCtxSetCurrent failed");
    }
    const int rc = launch(c, a, t_out, stream ? (wscu_stream)(uintptr_t)stream : c->g->stream, err);
    if (was != c->g->ctx)
        cu->CtxSetCurrent(was);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int ws_gpu_time_calls(ws_gpu *g, int (*enq)(void *ctx, uint64_t stream, ws_err *err), void *ctx,
                      int warmup, int iters, double *median_us, double *min_us, ws_err *err)
{
    if (iters < 1 || warmup < 0)
        return ws_errf(err, "ws_gpu_time_calls: iters %d must be >= 1, warmup %d >= 0", iters, warmup);
    ws_cu *cu = &g->cu;
    wscu_event e0 = NULL, e1 = NULL;
    const uint64_t st = (uint64_t)(uintptr_t)g->stream;
    double *us = malloc((size_t)iters * sizeof *us);
    int rc = -1;
    if (!us)
        return ws_errf(err, "ws_gpu_time_calls: out of memory");
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, EventCreate(&e0, 0), err);
    CU_TRY(cu, EventCreate(&e1, 0), err);
    for (int i = 0; i < warmup; i++)
        if (enq(ctx, st, err))
            goto cleanup;
    CU_TRY(cu, StreamSynchronize(g->stream), err);
    for (int i = 0; i < iters; i++) {
        float ms = 0;
        CU_TRY(cu, EventRecord(e0, g->stream), err);
        if (enq(ctx, st, err))
            goto cleanup;
        CU_TRY(cu, EventRecord(e1, g->stream), err);
        CU_TRY(cu, EventSynchronize(e1), err);
        CU_TRY(cu, EventElapsedTime(&ms, e0, e1), err);
        us[i] = 1000.0 * ms;
    }
    qsort(us, (size_t)iters, sizeof *us, cmp_double);
    *median_us = iters % 2 ? us[iters / 2] : 0.5 * (us[iters / 2 - 1] + us[iters / 2]);
    *min_us = us[0];
    rc = 0;
cleanup:
    if (e0)
        cu->EventDestroy(e0);
    if (e1)
        cu->EventDestroy(e1);
    free(us);
    return rc;
}

typedef struct {
    ws_gpu_conv *c;
    const ws_conv_args *a;
    int t_out;
} bench_call;

static int bench_launch(void *ctx, uint64_t stream, ws_err *err)
{
    const bench_call *b = ctx;
    return launch(b->c, b->a, b->t_out, (wscu_stream)(uintptr_t)stream, err);
}

int ws_gpu_conv_bench(ws_gpu_conv *c, const ws_conv_args *a, int warmup, int iters,
                      double *median_us, double *min_us, ws_err *err)
{
    int t_out = 0;
    if (check_call(c, a, "ws_gpu_conv_bench", &t_out, err))
        return -1;
    bench_call b = { c, a, t_out };
    return ws_gpu_time_calls(c->g, bench_launch, &b, warmup, iters, median_us, min_us, err);
}

/* dir/name.ptx = text, written whole or not at all */
static int write_ptx(const char *dir, const char *name, const char *text, ws_err *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s.ptx", dir, name) >= sizeof path)
        return ws_errf(err, "ws_conv_dump_ptx: path %s/%s.ptx is too long", dir, name);
    ws_out *o = ws_out_open(path, err);
    if (!o)
        return -1;
    if (ws_out_write(o, text, strlen(text), err)) {
        ws_out_abort(o);
        return -1;
    }
    return ws_out_commit(o, err);
}

int ws_conv_dump_ptx(const ws_conv_desc *d, int cc_major, int cc_minor, const char *dir,
                     ws_err *err)
{
    if (ws_conv_check(d, err))
        return -1;
    if (!dir || !*dir)
        return ws_errf(err, "ws_conv_dump_ptx: dir is %s", dir ? "empty" : "NULL");
    if (ws_dw_fits(d)) { /* the depthwise module beside the direct one */
        char *dw = ws_dw_emit(d, cc_major, cc_minor, err);
        char dwname[WS_DW_NAME_MAX];
        if (!dw)
            return -1;
        ws_dw_name(d, dwname);
        const int rc = write_ptx(dir, dwname, dw, err);
        free(dw);
        if (rc)
            return -1;
    }
    if (ws_dws_fits(d)) { /* the packed-sequence and carried-state module */
        char *m = ws_dws_emit(d, cc_major, cc_minor, err);
        char mname[WS_DWS_NAME_MAX];
        if (!m)
            return -1;
        ws_dws_name(d, mname);
        const int rc = write_ptx(dir, mname, m, err);
        free(m);
        if (rc)
            return -1;
    }
    if (ws_gemm_fits(d)) { /* the gemm module beside the direct one */
        char *gm = ws_gemm_emit(d, cc_major, cc_minor, err);
        char gname[WS_GEMM_NAME_MAX];
        if (!gm)
            return -1;
        ws_gemm_name(d, gname);
        const int rc = write_ptx(dir, gname, gm, err);
        free(gm);
        if (rc)
            return -1;
    }
    if (!ws_hgemm_fits(d, cc_major, cc_minor) && ws_hcol_fits(d, cc_major, cc_minor)) {
        /* the columns' module, and the inner conv's Hopper GEMM (ptx_hcol.h) */
        char *cm = ws_hcol_emit(d, err);
        char cname[WS_HCOL_NAME_MAX];
        if (!cm)
            return -1;
        ws_hcol_name(d, cname);
        int rc = write_ptx(dir, cname, cm, err);
        free(cm);
        ws_conv_desc in;
        ws_hcol_inner(d, &in);
        char *hm = rc ? NULL : ws_hgemm_emit(&in, err);
        char hname[WS_HGEMM_NAME_MAX];
        if (!hm)
            return -1;
        ws_hgemm_name(&in, hname);
        rc = write_ptx(dir, hname, hm, err);
        free(hm);
        if (rc)
            return -1;
    }
    if (ws_hgemm_fits(d, cc_major, cc_minor)) { /* the Hopper GEMM's module beside them */
        char *hm = ws_hgemm_emit(d, err);
        char hname[WS_HGEMM_NAME_MAX];
        if (!hm)
            return -1;
        ws_hgemm_name(d, hname);
        const int rc = write_ptx(dir, hname, hm, err);
        free(hm);
        if (rc)
            return -1;
    }
    if (ws_gbwd_used(d)) { /* the GEMM passes, dx's conv */
        char *gm = ws_gbwd_emit(d, cc_major, cc_minor, err);
        char gname[WS_GBWD_NAME_MAX];
        if (!gm)
            return -1;
        ws_gbwd_name(d, gname);
        int rc = write_ptx(dir, gname, gm, err);
        free(gm);
        if (!rc && ws_hgemm_wgrad_fits(d, cc_major, cc_minor)) {
            char *wm = ws_hgemm_wgrad_emit(d, err);
            if (!wm)
                return -1;
            ws_hgemm_wgrad_name(d, gname);
            rc = write_ptx(dir, gname, wm, err);
            free(wm);
        }
        ws_gbwd_dx x;
        const int has_dx = !rc && ws_gbwd_dx_of(d, &x);
        if (has_dx)
            rc = ws_conv_dump_ptx(&x.sub, cc_major, cc_minor, dir, err);
        if (!rc && has_dx && d->x_layout == WS_NCL && ws_hgemm_fits(&x.sub, cc_major, cc_minor) &&
            ws_hgemm_phased_fits(&x.sub, x.phases)) { /* dx's conv in its phased form */
            int lo[WS_HGEMM_PHASES_MAX], hi[WS_HGEMM_PHASES_MAX];
            char *pm = phased_ptx(d, &x, lo, hi, gname, err);
            if (!pm)
                return -1;
            rc = write_ptx(dir, gname, pm, err);
            free(pm);
        }
        if (rc)
            return -1;
    }
    char *ptx = ws_direct_emit(d, cc_major, cc_minor, err);
    if (!ptx)
        return -1;
    char name[WS_DIRECT_NAME_MAX];
    ws_direct_name(d, name);
    const int rc = write_ptx(dir, name, ptx, err);
    free(ptx);
    return rc;
}
/* one line of ws_gpu_conv_report for the loaded function f (0: none, no line): its entry's
 * name, the threads a block of it is launched with (0: not fixed by the plan, "-"), its
 * registers and local (stack, spill) bytes as the driver reports them (-1: not reported) */
static int report_line(const ws_gpu_conv *c, wscu_function f, const char *name, int threads,
                       char *buf, size_t cap, size_t *off)
{
    if (!f || *off + 1 >= cap)
        return 0;
    ws_cu *cu = &c->g->cu;
    int regs = -1, local = -1;
    if (cu->FuncGetAttribute) {
        cu->FuncGetAttribute(&regs, WS_CU_FUNC_ATTRIBUTE_NUM_REGS, f);
        cu->FuncGetAttribute(&local, WS_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
    }
    char th[16] = "   -";
    if (threads > 0)
        snprintf(th, sizeof th, "%4d", threads);
    const int w = snprintf(buf + *off, cap - *off, "%-60s %s threads %4d regs %4d local bytes\n",
                           name, th, regs, local);
    if (w > 0)
        *off += (size_t)w < cap - *off ? (size_t)w : cap - *off - 1;
    return 1;
}

int ws_gpu_conv_report(const ws_gpu_conv *c, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return 0;
    buf[0] = '\0';
    if (!c || !c->g)
        return 0;
    const ws_conv_desc *d = &c->d;
    size_t off = 0;
    int n = 0;
    char name[WS_DIRECT_NAME_MAX + 8];
    if (d->op == WS_CONV_BWD) {
        for (int p = 0; p < WS_DIRECT_NPARTS; p++) {
            ws_direct_bwd_entry(d, (ws_direct_part)p, name);
            n += report_line(c, c->bwd[p], name, WS_DIRECT_THREADS, buf, cap, &off);
        }
    } else {
        n += report_line(c, c->fn, c->name, WS_DIRECT_THREADS, buf, cap, &off);
    }
    for (int e = 0; e < 2; e++) {
        if (d->op == WS_CONV_BWD)
            ws_dw_entry_w(d, c->dw_wt, e, name);
        else
            ws_dw_name_w(d, c->dw_wt, name);
        n += report_line(c, c->dwfn[e], name, WS_DW_THREADS, buf, cap, &off);
    }
    ws_gemm_name(d, name);
    n += report_line(c, c->gemmfn, name, WS_GEMM_THREADS, buf, cap, &off);
    ws_gemm_entry(d, 1, name);
    n += report_line(c, c->gsplitfn, name, WS_GEMM_THREADS, buf, cap, &off);
    ws_gemm_entry(d, 2, name);
    n += report_line(c, c->gfinfn, name, WS_GEMM_FIN_THREADS, buf, cap, &off);
    for (int v = 0; v < WS_GEMM_SLICE_VARIANTS; v++) {
        ws_gemm_entry(d, 3 + v, name);
        n += report_line(c, c->gslicefn[v], name, ws_gemm_slice_threads(v), buf, cap, &off);
    }
    if (c->hgfn) {
        ws_hgemm_cfg q;
        ws_hgemm_cfg_of(d, &q);
        ws_hgemm_name(d, name);
        n += report_line(c, c->hgfn, name, q.threads, buf, cap, &off);
        strcat(name, "_prep");
        n += report_line(c, c->hpfn, name, WS_HPREP_THREADS, buf, cap, &off);
        if (c->hmfn) {
            ws_hgemm_name(d, name);
            strcat(name, "_mn");
            n += report_line(c, c->hmfn, name, q.threads, buf, cap, &off);
        }
        if (c->hp8fn) {
            ws_hgemm_name(d, name);
            strcat(name, "_prep8");
            n += report_line(c, c->hp8fn, name, WS_HPREP_THREADS, buf, cap, &off);
        }
        if (c->hphfn) {
            const int tp = c->ph_s <= WS_HGEMM_PHASES_MAX;
            ws_hgemm_phased_name(d, c->ph_s, tp ? c->ph_lo : NULL, tp ? c->ph_hi : NULL, name);
            n += report_line(c, c->hphfn, name, q.threads, buf, cap, &off);
        }
    }
    ws_wprep_entry(d, 0, name);
    n += report_line(c, c->castfn, name, WS_WPREP_THREADS, buf, cap, &off);
    ws_wprep_entry(d, 1, name);
    n += report_line(c, c->packfn, name, WS_WPREP_THREADS, buf, cap, &off);
    if (c->gbmod) {
        static const char *const suf[] = { "_g", "_x", "_f", "_b", "_w", "_t", "_u", "_p", "_m" };
        const wscu_function gf[] = { c->gb_g, c->gb_x, c->gb_f, c->gb_b,
                                     c->gb_w, c->gb_t, c->gb_u, c->gb_p, c->gb_m };
        char gname[WS_GBWD_NAME_MAX];
        ws_gbwd_name(d, gname);
        for (int i = 0; i < 9; i++) {
            snprintf(name, sizeof name, "%s%s", gname, suf[i]);
            n += report_line(c, gf[i], name, 0, buf, cap, &off);
        }
    }
    if (c->wgfn) {
        ws_hgemm_wgrad_name(d, name);
        n += report_line(c, c->wgfn, name, 0, buf, cap, &off);
    }
    if (c->colp) { /* the columns' entries, then the inner plan's kernels */
        char cname[WS_HCOL_NAME_MAX];
        ws_hcol_name(d, cname);
        snprintf(name, sizeof name, "%s_col", cname);
        n += report_line(c, c->colfn, name, WS_HCOL_THREADS, buf, cap, &off);
        snprintf(name, sizeof name, "%s_wpad", cname);
        n += report_line(c, c->wpadfn, name, WS_WPREP_THREADS, buf, cap, &off);
        if (off + 1 < cap) {
            const int k = ws_gpu_conv_report(c->colp, buf + off, cap - off);
            n += k;
            off += strlen(buf + off);
        }
    }
    if (c->dxp && off + 1 < cap)
        n += ws_gpu_conv_report(c->dxp, buf + off, cap - off);
    return n;
}

ws_gpu_conv *ws_gpu_conv_clone(const ws_gpu_conv *src, ws_err *err)
{
    if (!src || src->d.op != WS_CONV_FWD || !src->has_w || src->dws || src->dxp)
        return ws_errf(err, "ws_gpu_conv_clone: a forward plan made with its weights only"), NULL;
    ws_gpu_conv *c = malloc(sizeof *c);
    if (!c)
        return ws_errf(err, "out of memory"), NULL;
    *c = *src; /* the modules and functions (the runtime's cache holds them), the weights */
    c->borrowed = 1;
    c->gz = c->part = c->hx = c->wcall = c->whcall = 0;
    c->gz_bytes = c->part_bytes = c->hx_bytes = 0;
    c->wxx = c->dxs = c->gst = c->xst = c->wt = 0;
    c->wxx_bytes = c->dxs_bytes = c->gst_bytes = c->xst_bytes = c->wt_bytes = 0;
    c->wxx_own = 0;
    c->split_calls = c->slice_calls = c->tail_calls = c->hg_calls = c->mn_calls = c->p8_calls = c->gb_calls = 0;
    c->hgctr = 0; /* its own tile counter: the two plans may run at once */
    c->colp = NULL, c->wpc = 0, c->col_calls = 0; /* its own inner plan and W' buffer */
    if (src->hgctr && hg_counter(c, err)) {
        free(c);
        return NULL;
    }
    if (src->colp) {
        ws_cu *cu = &c->g->cu;
        if (!(c->colp = ws_gpu_conv_clone(src->colp, err))) {
            ws_gpu_conv_free(c);
            return NULL;
        }
        CU_TRY(cu, CtxSetCurrent(c->g->ctx), err);
        CU_TRY(cu, MemAlloc(&c->wpc, ws_gemm_packed_bytes(&src->colp->d)), err);
    }
    return c;
cleanup:
    ws_gpu_conv_free(c);
    return NULL;
}

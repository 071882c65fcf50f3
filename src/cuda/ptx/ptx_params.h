/* ptx_params.h - the kernel parameter tables (the conv engine's and the log-Mel's): for each
 * kernel kind the order, names and PTX types (.u32 / .u64) of its parameters, written once
 * and read by both sides of a launch:
 *   the emitters  the ".param" list of the entry (ws_ptx_kernel_end_params) and every
 *                 ld.param (ws_ptx_ld_param, ws_ptx_param_u32, ws_ptx_param_ptrs), named
 *                 by the table's index enum, never by a literal;
 *   the runtime   the launch's void *args[] filled by the same index enum (WS_KARG), each
 *                 value's size checked against the table's type before the launch
 *                 (ws_kargs_check: one line naming the kernel and the parameter).
 *
 * The tables (ptx_direct.h, ptx_dw.h, ptx_gemm.h and ptx_dws.h describe what each parameter
 * means):
 *   WS_PARAMS_FWD     conv forward: the direct, depthwise and GEMM forward kernels
 *                     .u64 p_x, p_w, p_b, p_add, p_y; .u32 p_n, p_t_in, p_t_out; .u64 p_add_bs
 *   WS_PARAMS_FWD_PARTS  the FFMA GEMM's sum in parts (its _split and _fin entries): those of
 *                     WS_PARAMS_FWD, then .u32 p_xoff
 *   WS_PARAMS_BWD_GZ  direct backward gz  .u64 p_x, p_w, p_b, p_dy, p_gz; .u32 p_n, p_t_in, p_t_out
 *   WS_PARAMS_BWD_DX  direct backward dx  .u64 p_w, p_gz, p_dx; .u32 p_n, p_t_in, p_t_out
 *   WS_PARAMS_BWD_DW  direct backward dw  .u64 p_x, p_gz, p_dw; .u32 p_n, p_t_in, p_t_out
 *   WS_PARAMS_BWD_DB  direct backward db  .u64 p_gz, p_db; .u32 p_n, p_t_out
 *   WS_PARAMS_DW_BWD  depthwise fused backward ("_bwd")
 *                     .u64 p_x, p_w, p_b, p_dy, p_dx, p_part; .u32 p_n, p_t_in, p_t_out, p_nch
 *   WS_PARAMS_DW_FIN  its finishing kernel ("_fin")   .u64 p_part, p_dw, p_db; .u32 p_np
 *   WS_PARAMS_WPREP   weights given per call (ptx_wprep.h)  .u64 p_w, p_out; .u32 p_n
 * The depthwise causal kernels of calls with packed sequences or carried states (ptx_dws.h),
 * one table per entry, in ws_dws_part's order (part p's table is WS_PARAMS_DWS_FWD + p):
 *   WS_PARAMS_DWS_FWD    "_fwd"    .u64 p_x, p_w, p_b, p_add, p_y, p_seq, p_init; .u32 p_n, p_t;
 *                                  .u64 p_add_bs
 *   WS_PARAMS_DWS_FINAL  "_final"  .u64 p_x, p_init, p_final; .u32 p_n, p_t
 *   WS_PARAMS_DWS_GZ     "_gz"     .u64 p_x, p_w, p_b, p_dy, p_seq, p_init, p_gz; .u32 p_n, p_t
 *   WS_PARAMS_DWS_DX     "_dx"     .u64 p_w, p_gz, p_seq, p_dx; .u32 p_n, p_t
 *   WS_PARAMS_DWS_DINIT  "_dinit"  .u64 p_w, p_gz, p_dinit; .u32 p_n, p_t
 *   WS_PARAMS_DWS_DW     "_dw"     .u64 p_x, p_gz, p_seq, p_init, p_dw; .u32 p_n, p_t
 *   WS_PARAMS_DWS_DB     "_db"     .u64 p_gz, p_db; .u32 p_n, p_t
 * BWD_GZ .. BWD_DB are in ws_direct_part's order: part p's table is WS_PARAMS_BWD_GZ + p.
 * The log-Mel's (ptx_mel.h; gpu_mel.c launches them):
 *   WS_PARAMS_MEL_FRAMES      ws_mel_frames       .u64 p_x, p_items; .u32 p_n_items;
 *                                                 .u64 p_total, p_tw, p_hann, p_band, p_wts,
 *                                                 p_L, p_keys
 *   WS_PARAMS_MEL_WRITE       ws_mel_write        .u64 p_items; .u32 p_n_items;
 *                                                 .u64 p_total, p_L, p_keys, p_out
 *   WS_PARAMS_MEL_F16         ws_mel_f16          .u64 p_src, p_dst, p_count
 * The Hopper GEMM's (ptx_hgemm.h; gpu_conv.c launches them):
 *   WS_PARAMS_HGEMM   the forward    .tmap p_ta, p_tb; .u64 p_b, p_add, p_y;
 *                                    .u32 p_n, p_t_out, p_ntt, p_lgtb; .u64 p_add_bs
 *   WS_PARAMS_HPREP   its x staging  .u64 p_x, p_xp; .u32 p_n, p_t_in
 *   WS_PARAMS_HCOL    a short conv's columns (ptx_hcol.h)  .u64 p_x, p_xc; .u32 p_n, p_t_in,
 *                                    p_t_out
 *   WS_PARAMS_HWG     the weight gradient  .tmap p_ta, p_tb; .u64 p_y; .u32 p_n, p_tch,
 *                                          p_kts, p_nsk
 * The dense backward's passes (ptx_hbwd.h; gpu_conv.c launches them; its _w entry takes
 * WS_PARAMS_WPREP, its _b entry WS_PARAMS_BWD_DB):
 *   WS_PARAMS_GBS     staging        .u64 p_src, p_dst; .u32 p_t, p_pitch
 *   WS_PARAMS_GBF     dw's finish    .u64 p_part, p_dw; .u32 p_splits
 *   WS_PARAMS_FWG     the float32 weight gradient (FFMA)  .u64 p_a, p_b, p_part;
 *                                    .u32 p_n, p_t_out, p_t_in, p_ap, p_bp, p_kts
 * The fused pair's (ptx_hpair.h; gpu_pair.c launches it):
 *   WS_PARAMS_HPAIR   .tmap p_t1, p_t2; .u64 p_x, p_b1, p_b2, p_add, p_y; .u32 p_n, p_t_in,
 *                     p_t_out, p_ntt, p_lgtb; .u64 p_add_bs
 * Index enums: WS_FWD_*, WS_FWDP_XOFF, WS_BGZ_*, WS_BDX_*, WS_BDW_*, WS_BDB_*, WS_DWBWD_*, WS_DWFIN_*,
 * WS_WPREP_*, WS_DSFWD_*, WS_DSFIN_*, WS_DSGZ_*, WS_DSDX_*, WS_DSDI_*, WS_DSDW_*, WS_DSDB_*,
 * WS_MFR_*, WS_MWR_*, WS_MF16_*, WS_HG_*, WS_HP_*, WS_HC_*, WS_HW_*, WS_GBS_*, WS_GBF_*, WS_FWG_*, WS_PR_* (e.g.
 * WS_FWD_ADD_BS, WS_DWFIN_NP, WS_DSFWD_SEQ), each ending in a *_NPARAMS count.
 *
 * Usage, emitter:
 *   const ws_params *t = ws_params_of(WS_PARAMS_FWD);
 *   preg n = ws_ptx_param_u32(&kb, t, WS_FWD_N);           // (u64) p_n
 *   ws_ptx_ld_param(&kb, r, t, WS_FWD_ADD_BS);             // ld.param.u64 r, [p_add_bs]
 *   ws_ptx_kernel_end_params(&kb, &mod, name, t, 256, 0, 0);
 * Usage, runtime:
 *   ws_kargs a;
 *   ws_kargs_init(&a, WS_PARAMS_FWD);
 *   WS_KARG(&a, WS_FWD_X, px);  ...  WS_KARG(&a, WS_FWD_ADD_BS, abs);
 *   if (ws_kargs_check(&a, "ws_gpu_conv_run", err)) return -1;
 *   cuLaunchKernel(..., a.v, NULL);
 *
 * Tested by tests/test_ptx.c (ptx_params/...): one module of each kernel family and table
 * (direct forward and backward parts, depthwise forward and backward, GEMM FFMA and mma, the
 * weight preparation, the seven entries of the depthwise causal kernels with sequences and
 * states; the log-Mel's three entries):
 * its .entry parameter list is parsed and held to its table, and every ld.param in it names a parameter of its table
 * with the table's type; the runtime's size check refuses a wrong size and a missing value.
 */
#ifndef WS_CUDA_PTX_PARAMS_H
#define WS_CUDA_PTX_PARAMS_H

#include <stddef.h>

#include "common.h"
#include "ptx_emit.h"

/* WS_PTYPE_TMAP: a tensor map (CUtensorMap, 128 bytes, 64-byte aligned) passed by value,
 * declared ".param .align 64 .b8 <name>[128]" and read by cp.async.bulk.tensor through its
 * generic address (ws_ptx_param_tmap), never ld.param'd */
typedef enum { WS_PTYPE_U32 = 0, WS_PTYPE_U64, WS_PTYPE_TMAP } ws_ptype;

typedef struct {
    const char *name; /* "p_x" */
    ws_ptype type;
} ws_param;

typedef struct {
    const char *kernel;  /* which kernels take it, for messages: "conv forward" */
    const ws_param *p;   /* in order */
    int n;
} ws_params;

typedef enum {
    WS_PARAMS_FWD = 0,
    WS_PARAMS_BWD_GZ, WS_PARAMS_BWD_DX, WS_PARAMS_BWD_DW, WS_PARAMS_BWD_DB, /* ws_direct_part's order */
    WS_PARAMS_DW_BWD, WS_PARAMS_DW_FIN,
    WS_PARAMS_WPREP,
    WS_PARAMS_DWS_FWD, WS_PARAMS_DWS_FINAL, WS_PARAMS_DWS_GZ, WS_PARAMS_DWS_DX, /* ws_dws_part's order */
    WS_PARAMS_DWS_DINIT, WS_PARAMS_DWS_DW, WS_PARAMS_DWS_DB,
    WS_PARAMS_HGEMM, WS_PARAMS_HPREP, WS_PARAMS_HWG, WS_PARAMS_GBS, WS_PARAMS_GBF, WS_PARAMS_FWG,
    WS_PARAMS_HPAIR, WS_PARAMS_FWD_PARTS, WS_PARAMS_HCOL,
    WS_PARAMS_MEL_FRAMES, WS_PARAMS_MEL_WRITE, WS_PARAMS_MEL_F16,
    WS_PARAMS_COUNT
} ws_params_id;

/* the index enums: the position of each parameter in its table */
enum { WS_FWD_X, WS_FWD_W, WS_FWD_B, WS_FWD_ADD, WS_FWD_Y, WS_FWD_N, WS_FWD_T_IN, WS_FWD_T_OUT,
       WS_FWD_ADD_BS, WS_FWD_NPARAMS };
/* WS_PARAMS_FWD_PARTS (the FFMA GEMM's _split and _fin entries): WS_PARAMS_FWD's parameters,
 * then the first tile along positions of the launch (ptx_gemm.h, SUM IN PARTS) */
enum { WS_FWDP_XOFF = WS_FWD_NPARAMS, WS_FWDP_NPARAMS };
enum { WS_BGZ_X, WS_BGZ_W, WS_BGZ_B, WS_BGZ_DY, WS_BGZ_GZ, WS_BGZ_N, WS_BGZ_T_IN, WS_BGZ_T_OUT,
       WS_BGZ_NPARAMS };
enum { WS_BDX_W, WS_BDX_GZ, WS_BDX_DX, WS_BDX_N, WS_BDX_T_IN, WS_BDX_T_OUT, WS_BDX_NPARAMS };
enum { WS_BDW_X, WS_BDW_GZ, WS_BDW_DW, WS_BDW_N, WS_BDW_T_IN, WS_BDW_T_OUT, WS_BDW_NPARAMS };
enum { WS_BDB_GZ, WS_BDB_DB, WS_BDB_N, WS_BDB_T_OUT, WS_BDB_NPARAMS };
enum { WS_DWBWD_X, WS_DWBWD_W, WS_DWBWD_B, WS_DWBWD_DY, WS_DWBWD_DX, WS_DWBWD_PART, WS_DWBWD_N,
       WS_DWBWD_T_IN, WS_DWBWD_T_OUT, WS_DWBWD_NCH, WS_DWBWD_NPARAMS };
enum { WS_DWFIN_PART, WS_DWFIN_DW, WS_DWFIN_DB, WS_DWFIN_NP, WS_DWFIN_NPARAMS };
enum { WS_WPREP_W, WS_WPREP_OUT, WS_WPREP_N, WS_WPREP_NPARAMS };
enum { WS_DSFWD_X, WS_DSFWD_W, WS_DSFWD_B, WS_DSFWD_ADD, WS_DSFWD_Y, WS_DSFWD_SEQ, WS_DSFWD_INIT,
       WS_DSFWD_N, WS_DSFWD_T, WS_DSFWD_ADD_BS, WS_DSFWD_NPARAMS };
enum { WS_DSFIN_X, WS_DSFIN_INIT, WS_DSFIN_FINAL, WS_DSFIN_N, WS_DSFIN_T, WS_DSFIN_NPARAMS };
enum { WS_DSGZ_X, WS_DSGZ_W, WS_DSGZ_B, WS_DSGZ_DY, WS_DSGZ_SEQ, WS_DSGZ_INIT, WS_DSGZ_GZ,
       WS_DSGZ_N, WS_DSGZ_T, WS_DSGZ_NPARAMS };
enum { WS_DSDX_W, WS_DSDX_GZ, WS_DSDX_SEQ, WS_DSDX_DX, WS_DSDX_N, WS_DSDX_T, WS_DSDX_NPARAMS };
enum { WS_DSDI_W, WS_DSDI_GZ, WS_DSDI_DINIT, WS_DSDI_N, WS_DSDI_T, WS_DSDI_NPARAMS };
enum { WS_DSDW_X, WS_DSDW_GZ, WS_DSDW_SEQ, WS_DSDW_INIT, WS_DSDW_DW, WS_DSDW_N, WS_DSDW_T,
       WS_DSDW_NPARAMS };
enum { WS_DSDB_GZ, WS_DSDB_DB, WS_DSDB_N, WS_DSDB_T, WS_DSDB_NPARAMS };
enum { WS_MFR_X, WS_MFR_ITEMS, WS_MFR_N_ITEMS, WS_MFR_TOTAL, WS_MFR_TW, WS_MFR_HANN, WS_MFR_BAND,
       WS_MFR_WTS, WS_MFR_L, WS_MFR_KEYS, WS_MFR_NPARAMS };
enum { WS_MWR_ITEMS, WS_MWR_N_ITEMS, WS_MWR_TOTAL, WS_MWR_L, WS_MWR_KEYS, WS_MWR_OUT,
       WS_MWR_NPARAMS };
enum { WS_MF16_SRC, WS_MF16_DST, WS_MF16_COUNT, WS_MF16_NPARAMS };
enum { WS_HG_TA, WS_HG_TB, WS_HG_B, WS_HG_ADD, WS_HG_Y, WS_HG_N, WS_HG_T_OUT, WS_HG_NTT, WS_HG_LGTB,
       WS_HG_ADD_BS, WS_HG_CTR, WS_HG_NPARAMS };
enum { WS_HP_X, WS_HP_XP, WS_HP_N, WS_HP_T_IN, WS_HP_NPARAMS };
enum { WS_HC_X, WS_HC_XC, WS_HC_N, WS_HC_T_IN, WS_HC_T_OUT, WS_HC_NPARAMS };
enum { WS_HW_TA, WS_HW_TB, WS_HW_Y, WS_HW_N, WS_HW_TCH, WS_HW_KTS, WS_HW_NSK, WS_HW_NPARAMS };
enum { WS_GBS_SRC, WS_GBS_DST, WS_GBS_T, WS_GBS_PITCH, WS_GBS_NPARAMS };
enum { WS_GBF_PART, WS_GBF_DW, WS_GBF_SPLITS, WS_GBF_NPARAMS };
enum { WS_FWG_A, WS_FWG_B, WS_FWG_PART, WS_FWG_N, WS_FWG_T_OUT, WS_FWG_T_IN, WS_FWG_AP, WS_FWG_BP,
       WS_FWG_KTS, WS_FWG_NPARAMS };
enum { WS_PR_T1, WS_PR_T2, WS_PR_X, WS_PR_B1, WS_PR_B2, WS_PR_ADD, WS_PR_Y, WS_PR_N, WS_PR_T_IN,
       WS_PR_T_OUT, WS_PR_NTT, WS_PR_LGTB, WS_PR_ADD_BS, WS_PR_NPARAMS };

/* the most parameters of any table (the fused pair's 13) */
#define WS_PARAMS_MAX 13

/* The table of kind id; NULL for an id out of range. */
const ws_params *ws_params_of(ws_params_id id);

/* "u32" / "u64" / "tmap"; bytes 4 / 8 / 128 */
const char *ws_ptype_name(ws_ptype t);
size_t ws_ptype_bytes(ws_ptype t);

/* ---- the emitter's side ---- */

/* ws_ptx_kernel_end_regs with t's ".param" list, one "\t.param .<type> <name>" line per
 * entry, joined by ",\n". max_regs 0: no .maxnreg. */
void ws_ptx_kernel_end_params(ptx_buf *k, ptx_buf *mod, const char *name, const ws_params *t,
                              int maxntid, int min_blocks, int max_regs);
/* the same with ".reqnctapercluster cluster, 1, 1" where cluster > 1 */
void ws_ptx_kernel_end_params_cl(ptx_buf *k, ptx_buf *mod, const char *name, const ws_params *t,
                                 int maxntid, int min_blocks, int max_regs, int cluster);

/* ld.param.<type> r, [<name>]  of t's parameter i; r must be of the type's class (.u64 a
 * %rd register, .u32 a %r one), else b fails */
void ws_ptx_ld_param(ptx_buf *b, preg r, const ws_params *t, int i);

/* r = the generic address of t's tensor-map parameter i (mov.b64, cvta.param.u64): the
 * operand cp.async.bulk.tensor reads the map through; r a b64 register, else b fails */
void ws_ptx_param_tmap(ptx_buf *b, preg r, const ws_params *t, int i);

/* (u64) t's .u32 parameter i: a fresh b32 register loaded, widened into a fresh b64 one */
preg ws_ptx_param_u32(ptx_buf *b, const ws_params *t, int i);

/* r[j] = t's .u64 parameter idx[j] as a global address: count fresh b64 registers, each
 * ld.param'd, then each cvta.to.global'd */
void ws_ptx_param_ptrs(ptx_buf *b, preg *r, const ws_params *t, const int *idx, int count);

/* ---- the runtime's side ---- */

/* one launch's argument array, filled by index from one table */
typedef struct {
    const ws_params *t;
    void *v[WS_PARAMS_MAX];     /* the cuLaunchKernel kernelParams */
    size_t size[WS_PARAMS_MAX]; /* bytes of each value given */
    int bad;                    /* an index out of the table was given */
} ws_kargs;

void ws_kargs_init(ws_kargs *a, ws_params_id id);
void ws_kargs_set(ws_kargs *a, int i, void *value, size_t size);
/* a->v[i] = &value, remembering sizeof value for the check */
#define WS_KARG(a, i, value) ws_kargs_set((a), (i), &(value), sizeof(value))
/* 0 when every parameter of the table has a value of its type's size; else -1 with err
 * "<fn>: <kernel> parameter <name> (.<type>) given <bytes> bytes" (or "not given") */
int ws_kargs_check(const ws_kargs *a, const char *fn, ws_err *err);

#endif

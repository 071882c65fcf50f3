/* ptx_params.c - see ptx_params.h. The tables, the emit helpers that read them and the
 * runtime's argument check. Pure text and bookkeeping: nothing here touches a device.
 * Tested by tests/test_ptx.c (ptx_params/...).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_params.h"

#define U32 WS_PTYPE_U32
#define U64 WS_PTYPE_U64
#define TMAP WS_PTYPE_TMAP

/* conv forward: the direct (ptx_direct.h), depthwise (ptx_dw.h) and GEMM (ptx_gemm.h) kernels */
#define FWD_PARAMS                                                          \
    [WS_FWD_X] = { "p_x", U64 },       [WS_FWD_W] = { "p_w", U64 },         \
    [WS_FWD_B] = { "p_b", U64 },       [WS_FWD_ADD] = { "p_add", U64 },     \
    [WS_FWD_Y] = { "p_y", U64 },       [WS_FWD_N] = { "p_n", U32 },         \
    [WS_FWD_T_IN] = { "p_t_in", U32 }, [WS_FWD_T_OUT] = { "p_t_out", U32 }, \
    [WS_FWD_ADD_BS] = { "p_add_bs", U64 }
static const ws_param FWD[] = { FWD_PARAMS };
/* the FFMA GEMM's sum in parts (ptx_gemm.h: _split, _fin) */
static const ws_param FWDP[] = { FWD_PARAMS, [WS_FWDP_XOFF] = { "p_xoff", U32 } };
#undef FWD_PARAMS
/* the direct backward's four entries (ptx_direct.h) */
static const ws_param BGZ[] = {
    [WS_BGZ_X] = { "p_x", U64 },       [WS_BGZ_W] = { "p_w", U64 },
    [WS_BGZ_B] = { "p_b", U64 },       [WS_BGZ_DY] = { "p_dy", U64 },
    [WS_BGZ_GZ] = { "p_gz", U64 },     [WS_BGZ_N] = { "p_n", U32 },
    [WS_BGZ_T_IN] = { "p_t_in", U32 }, [WS_BGZ_T_OUT] = { "p_t_out", U32 },
};
static const ws_param BDX[] = {
    [WS_BDX_W] = { "p_w", U64 },       [WS_BDX_GZ] = { "p_gz", U64 },
    [WS_BDX_DX] = { "p_dx", U64 },     [WS_BDX_N] = { "p_n", U32 },
    [WS_BDX_T_IN] = { "p_t_in", U32 }, [WS_BDX_T_OUT] = { "p_t_out", U32 },
};
static const ws_param BDW[] = {
    [WS_BDW_X] = { "p_x", U64 },       [WS_BDW_GZ] = { "p_gz", U64 },
    [WS_BDW_DW] = { "p_dw", U64 },     [WS_BDW_N] = { "p_n", U32 },
    [WS_BDW_T_IN] = { "p_t_in", U32 }, [WS_BDW_T_OUT] = { "p_t_out", U32 },
};
static const ws_param BDB[] = {
    [WS_BDB_GZ] = { "p_gz", U64 },     [WS_BDB_DB] = { "p_db", U64 },
    [WS_BDB_N] = { "p_n", U32 },       [WS_BDB_T_OUT] = { "p_t_out", U32 },
};
/* the depthwise backward's fused kernel and its finishing pass (ptx_dw.h) */
static const ws_param DWBWD[] = {
    [WS_DWBWD_X] = { "p_x", U64 },       [WS_DWBWD_W] = { "p_w", U64 },
    [WS_DWBWD_B] = { "p_b", U64 },       [WS_DWBWD_DY] = { "p_dy", U64 },
    [WS_DWBWD_DX] = { "p_dx", U64 },     [WS_DWBWD_PART] = { "p_part", U64 },
    [WS_DWBWD_N] = { "p_n", U32 },       [WS_DWBWD_T_IN] = { "p_t_in", U32 },
    [WS_DWBWD_T_OUT] = { "p_t_out", U32 }, [WS_DWBWD_NCH] = { "p_nch", U32 },
};
static const ws_param DWFIN[] = {
    [WS_DWFIN_PART] = { "p_part", U64 }, [WS_DWFIN_DW] = { "p_dw", U64 },
    [WS_DWFIN_DB] = { "p_db", U64 },     [WS_DWFIN_NP] = { "p_np", U32 },
};
/* weights given per call (ptx_wprep.h) */
static const ws_param WPREP[] = {
    [WS_WPREP_W] = { "p_w", U64 }, [WS_WPREP_OUT] = { "p_out", U64 }, [WS_WPREP_N] = { "p_n", U32 },
};
/* the depthwise causal kernels with packed sequences and carried states (ptx_dws.h) */
static const ws_param DSFWD[] = {
    [WS_DSFWD_X] = { "p_x", U64 },     [WS_DSFWD_W] = { "p_w", U64 },
    [WS_DSFWD_B] = { "p_b", U64 },     [WS_DSFWD_ADD] = { "p_add", U64 },
    [WS_DSFWD_Y] = { "p_y", U64 },     [WS_DSFWD_SEQ] = { "p_seq", U64 },
    [WS_DSFWD_INIT] = { "p_init", U64 }, [WS_DSFWD_N] = { "p_n", U32 },
    [WS_DSFWD_T] = { "p_t", U32 },     [WS_DSFWD_ADD_BS] = { "p_add_bs", U64 },
};
static const ws_param DSFIN[] = {
    [WS_DSFIN_X] = { "p_x", U64 },     [WS_DSFIN_INIT] = { "p_init", U64 },
    [WS_DSFIN_FINAL] = { "p_final", U64 }, [WS_DSFIN_N] = { "p_n", U32 },
    [WS_DSFIN_T] = { "p_t", U32 },
};
static const ws_param DSGZ[] = {
    [WS_DSGZ_X] = { "p_x", U64 },      [WS_DSGZ_W] = { "p_w", U64 },
    [WS_DSGZ_B] = { "p_b", U64 },      [WS_DSGZ_DY] = { "p_dy", U64 },
    [WS_DSGZ_SEQ] = { "p_seq", U64 },  [WS_DSGZ_INIT] = { "p_init", U64 },
    [WS_DSGZ_GZ] = { "p_gz", U64 },    [WS_DSGZ_N] = { "p_n", U32 },
    [WS_DSGZ_T] = { "p_t", U32 },
};
static const ws_param DSDX[] = {
    [WS_DSDX_W] = { "p_w", U64 },      [WS_DSDX_GZ] = { "p_gz", U64 },
    [WS_DSDX_SEQ] = { "p_seq", U64 },  [WS_DSDX_DX] = { "p_dx", U64 },
    [WS_DSDX_N] = { "p_n", U32 },      [WS_DSDX_T] = { "p_t", U32 },
};
static const ws_param DSDI[] = {
    [WS_DSDI_W] = { "p_w", U64 },      [WS_DSDI_GZ] = { "p_gz", U64 },
    [WS_DSDI_DINIT] = { "p_dinit", U64 }, [WS_DSDI_N] = { "p_n", U32 },
    [WS_DSDI_T] = { "p_t", U32 },
};
static const ws_param DSDW[] = {
    [WS_DSDW_X] = { "p_x", U64 },      [WS_DSDW_GZ] = { "p_gz", U64 },
    [WS_DSDW_SEQ] = { "p_seq", U64 },  [WS_DSDW_INIT] = { "p_init", U64 },
    [WS_DSDW_DW] = { "p_dw", U64 },    [WS_DSDW_N] = { "p_n", U32 },
    [WS_DSDW_T] = { "p_t", U32 },
};
static const ws_param DSDB[] = {
    [WS_DSDB_GZ] = { "p_gz", U64 },    [WS_DSDB_DB] = { "p_db", U64 },
    [WS_DSDB_N] = { "p_n", U32 },      [WS_DSDB_T] = { "p_t", U32 },
};

/* the log-Mel's kernels (ptx_mel.h) */
static const ws_param MFR[] = {
    [WS_MFR_X] = { "p_x", U64 },         [WS_MFR_ITEMS] = { "p_items", U64 },
    [WS_MFR_N_ITEMS] = { "p_n_items", U32 }, [WS_MFR_TOTAL] = { "p_total", U64 },
    [WS_MFR_TW] = { "p_tw", U64 },       [WS_MFR_HANN] = { "p_hann", U64 },
    [WS_MFR_BAND] = { "p_band", U64 },   [WS_MFR_WTS] = { "p_wts", U64 },
    [WS_MFR_L] = { "p_L", U64 },         [WS_MFR_KEYS] = { "p_keys", U64 },
};
static const ws_param MWR[] = {
    [WS_MWR_ITEMS] = { "p_items", U64 }, [WS_MWR_N_ITEMS] = { "p_n_items", U32 },
    [WS_MWR_TOTAL] = { "p_total", U64 }, [WS_MWR_L] = { "p_L", U64 },
    [WS_MWR_KEYS] = { "p_keys", U64 },   [WS_MWR_OUT] = { "p_out", U64 },
};
static const ws_param MF16[] = {
    [WS_MF16_SRC] = { "p_src", U64 }, [WS_MF16_DST] = { "p_dst", U64 },
    [WS_MF16_COUNT] = { "p_count", U64 },
};

/* the Hopper GEMM (ptx_hgemm.h) */
static const ws_param HG[] = {
    [WS_HG_TA] = { "p_ta", TMAP },      [WS_HG_TB] = { "p_tb", TMAP },
    [WS_HG_B] = { "p_b", U64 },         [WS_HG_ADD] = { "p_add", U64 },
    [WS_HG_Y] = { "p_y", U64 },         [WS_HG_N] = { "p_n", U32 },
    [WS_HG_T_OUT] = { "p_t_out", U32 }, [WS_HG_NTT] = { "p_ntt", U32 },
    [WS_HG_LGTB] = { "p_lgtb", U32 },   [WS_HG_ADD_BS] = { "p_add_bs", U64 },
    [WS_HG_CTR] = { "p_ctr", U64 },
};
static const ws_param HP[] = {
    [WS_HP_X] = { "p_x", U64 }, [WS_HP_XP] = { "p_xp", U64 },
    [WS_HP_N] = { "p_n", U32 }, [WS_HP_T_IN] = { "p_t_in", U32 },
};
static const ws_param HC[] = {
    [WS_HC_X] = { "p_x", U64 },         [WS_HC_XC] = { "p_xc", U64 },     [WS_HC_N] = { "p_n", U32 },
    [WS_HC_T_IN] = { "p_t_in", U32 },   [WS_HC_T_OUT] = { "p_t_out", U32 },
};
static const ws_param HW[] = {
    [WS_HW_TA] = { "p_ta", TMAP },  [WS_HW_TB] = { "p_tb", TMAP }, [WS_HW_Y] = { "p_y", U64 },
    [WS_HW_N] = { "p_n", U32 },     [WS_HW_TCH] = { "p_tch", U32 }, [WS_HW_KTS] = { "p_kts", U32 },
    [WS_HW_NSK] = { "p_nsk", U32 },
};
/* the dense backward's passes (ptx_hbwd.h) */
static const ws_param GBS[] = {
    [WS_GBS_SRC] = { "p_src", U64 }, [WS_GBS_DST] = { "p_dst", U64 },
    [WS_GBS_T] = { "p_t", U32 },     [WS_GBS_PITCH] = { "p_pitch", U32 },
};
static const ws_param GBF[] = {
    [WS_GBF_PART] = { "p_part", U64 }, [WS_GBF_DW] = { "p_dw", U64 },
    [WS_GBF_SPLITS] = { "p_splits", U32 },
};
static const ws_param FWG[] = {
    [WS_FWG_A] = { "p_a", U64 },         [WS_FWG_B] = { "p_b", U64 },       [WS_FWG_PART] = { "p_part", U64 },
    [WS_FWG_N] = { "p_n", U32 },         [WS_FWG_T_OUT] = { "p_t_out", U32 }, [WS_FWG_T_IN] = { "p_t_in", U32 },
    [WS_FWG_AP] = { "p_ap", U32 },       [WS_FWG_BP] = { "p_bp", U32 },     [WS_FWG_KTS] = { "p_kts", U32 },
};
/* the fused pair (ptx_hpair.h) */
static const ws_param PR[] = {
    [WS_PR_T1] = { "p_t1", TMAP },      [WS_PR_T2] = { "p_t2", TMAP },     [WS_PR_X] = { "p_x", U64 },
    [WS_PR_B1] = { "p_b1", U64 },       [WS_PR_B2] = { "p_b2", U64 },      [WS_PR_ADD] = { "p_add", U64 },
    [WS_PR_Y] = { "p_y", U64 },         [WS_PR_N] = { "p_n", U32 },        [WS_PR_T_IN] = { "p_t_in", U32 },
    [WS_PR_T_OUT] = { "p_t_out", U32 }, [WS_PR_NTT] = { "p_ntt", U32 },    [WS_PR_LGTB] = { "p_lgtb", U32 },
    [WS_PR_ADD_BS] = { "p_add_bs", U64 },
};

#undef U32
#undef U64
#undef TMAP

#define COUNT(a) ((int)(sizeof a / sizeof a[0]))
/* each table as long as its index enum says, and no longer than WS_PARAMS_MAX */
_Static_assert(COUNT(FWD) == WS_FWD_NPARAMS, "FWD");
_Static_assert(COUNT(FWDP) == WS_FWDP_NPARAMS && WS_FWDP_NPARAMS <= WS_PARAMS_MAX, "FWDP");
_Static_assert(COUNT(BGZ) == WS_BGZ_NPARAMS, "BGZ");
_Static_assert(COUNT(BDX) == WS_BDX_NPARAMS, "BDX");
_Static_assert(COUNT(BDW) == WS_BDW_NPARAMS, "BDW");
_Static_assert(COUNT(BDB) == WS_BDB_NPARAMS, "BDB");
_Static_assert(COUNT(DWBWD) == WS_DWBWD_NPARAMS, "DWBWD");
_Static_assert(COUNT(DWFIN) == WS_DWFIN_NPARAMS, "DWFIN");
_Static_assert(COUNT(WPREP) == WS_WPREP_NPARAMS, "WPREP");
_Static_assert(WS_DWBWD_NPARAMS <= WS_PARAMS_MAX && WS_FWD_NPARAMS <= WS_PARAMS_MAX, "WS_PARAMS_MAX");
_Static_assert(COUNT(DSFWD) == WS_DSFWD_NPARAMS, "DSFWD");
_Static_assert(COUNT(DSFIN) == WS_DSFIN_NPARAMS, "DSFIN");
_Static_assert(COUNT(DSGZ) == WS_DSGZ_NPARAMS, "DSGZ");
_Static_assert(COUNT(DSDX) == WS_DSDX_NPARAMS, "DSDX");
_Static_assert(COUNT(DSDI) == WS_DSDI_NPARAMS, "DSDI");
_Static_assert(COUNT(DSDW) == WS_DSDW_NPARAMS, "DSDW");
_Static_assert(COUNT(DSDB) == WS_DSDB_NPARAMS, "DSDB");
_Static_assert(WS_DWBWD_NPARAMS <= WS_PARAMS_MAX && WS_FWD_NPARAMS <= WS_PARAMS_MAX &&
               WS_DSFWD_NPARAMS <= WS_PARAMS_MAX && WS_DSGZ_NPARAMS <= WS_PARAMS_MAX, "WS_PARAMS_MAX");
_Static_assert(COUNT(MFR) == WS_MFR_NPARAMS, "MFR");
_Static_assert(COUNT(MWR) == WS_MWR_NPARAMS, "MWR");
_Static_assert(COUNT(MF16) == WS_MF16_NPARAMS, "MF16");
_Static_assert(COUNT(HG) == WS_HG_NPARAMS && WS_HG_NPARAMS <= WS_PARAMS_MAX, "HG");
_Static_assert(COUNT(HP) == WS_HP_NPARAMS, "HP");
_Static_assert(COUNT(HC) == WS_HC_NPARAMS, "HC");
_Static_assert(COUNT(HW) == WS_HW_NPARAMS && WS_HW_NPARAMS <= WS_PARAMS_MAX, "HW");
_Static_assert(COUNT(GBS) == WS_GBS_NPARAMS, "GBS");
_Static_assert(COUNT(GBF) == WS_GBF_NPARAMS, "GBF");
_Static_assert(COUNT(FWG) == WS_FWG_NPARAMS && WS_FWG_NPARAMS <= WS_PARAMS_MAX, "FWG");
_Static_assert(COUNT(PR) == WS_PR_NPARAMS && WS_PR_NPARAMS <= WS_PARAMS_MAX, "PR");
_Static_assert(WS_DWBWD_NPARAMS <= WS_PARAMS_MAX && WS_FWD_NPARAMS <= WS_PARAMS_MAX &&
                   WS_MFR_NPARAMS <= WS_PARAMS_MAX,
               "WS_PARAMS_MAX");

static const ws_params TABLES[WS_PARAMS_COUNT] = {
    [WS_PARAMS_FWD] = { "conv forward", FWD, COUNT(FWD) },
    [WS_PARAMS_BWD_GZ] = { "direct backward gz", BGZ, COUNT(BGZ) },
    [WS_PARAMS_BWD_DX] = { "direct backward dx", BDX, COUNT(BDX) },
    [WS_PARAMS_BWD_DW] = { "direct backward dw", BDW, COUNT(BDW) },
    [WS_PARAMS_BWD_DB] = { "direct backward db", BDB, COUNT(BDB) },
    [WS_PARAMS_DW_BWD] = { "depthwise backward", DWBWD, COUNT(DWBWD) },
    [WS_PARAMS_DW_FIN] = { "depthwise backward finish", DWFIN, COUNT(DWFIN) },
    [WS_PARAMS_WPREP] = { "weight preparation", WPREP, COUNT(WPREP) },
    [WS_PARAMS_DWS_FWD] = { "depthwise causal forward", DSFWD, COUNT(DSFWD) },
    [WS_PARAMS_DWS_FINAL] = { "depthwise causal final states", DSFIN, COUNT(DSFIN) },
    [WS_PARAMS_DWS_GZ] = { "depthwise causal backward gz", DSGZ, COUNT(DSGZ) },
    [WS_PARAMS_DWS_DX] = { "depthwise causal backward dx", DSDX, COUNT(DSDX) },
    [WS_PARAMS_DWS_DINIT] = { "depthwise causal backward dinitial_states", DSDI, COUNT(DSDI) },
    [WS_PARAMS_DWS_DW] = { "depthwise causal backward dw", DSDW, COUNT(DSDW) },
    [WS_PARAMS_DWS_DB] = { "depthwise causal backward db", DSDB, COUNT(DSDB) },
    [WS_PARAMS_MEL_FRAMES] = { "log-Mel frames", MFR, COUNT(MFR) },
    [WS_PARAMS_MEL_WRITE] = { "log-Mel write", MWR, COUNT(MWR) },
    [WS_PARAMS_MEL_F16] = { "log-Mel f16", MF16, COUNT(MF16) },
    [WS_PARAMS_HGEMM] = { "Hopper GEMM forward", HG, COUNT(HG) },
    [WS_PARAMS_HPREP] = { "Hopper GEMM x staging", HP, COUNT(HP) },
    [WS_PARAMS_HCOL] = { "Hopper GEMM columns", HC, COUNT(HC) },
    [WS_PARAMS_HWG] = { "Hopper GEMM weight gradient", HW, COUNT(HW) },
    [WS_PARAMS_GBS] = { "dense backward staging", GBS, COUNT(GBS) },
    [WS_PARAMS_GBF] = { "dense backward dw finish", GBF, COUNT(GBF) },
    [WS_PARAMS_FWG] = { "float32 weight gradient", FWG, COUNT(FWG) },
    [WS_PARAMS_HPAIR] = { "fused pair", PR, COUNT(PR) },
    [WS_PARAMS_FWD_PARTS] = { "conv forward in parts", FWDP, COUNT(FWDP) },
};

const ws_params *ws_params_of(ws_params_id id)
{
    return (unsigned)id < WS_PARAMS_COUNT ? &TABLES[id] : NULL;
}

const char *ws_ptype_name(ws_ptype t)
{
    return t == WS_PTYPE_TMAP ? "tmap" : t == WS_PTYPE_U64 ? "u64" : "u32";
}

size_t ws_ptype_bytes(ws_ptype t)
{
    return t == WS_PTYPE_TMAP ? 128 : t == WS_PTYPE_U64 ? 8 : 4;
}

/* ---- the emitter's side ---- */

void ws_ptx_kernel_end_params(ptx_buf *k, ptx_buf *mod, const char *name, const ws_params *t,
                              int maxntid, int min_blocks, int max_regs)
{
    ws_ptx_kernel_end_params_cl(k, mod, name, t, maxntid, min_blocks, max_regs, 1);
}

void ws_ptx_kernel_end_params_cl(ptx_buf *k, ptx_buf *mod, const char *name, const ws_params *t,
                                 int maxntid, int min_blocks, int max_regs, int cluster)
{
    ptx_buf decl;
    ws_ptx_init(&decl);
    for (int i = 0; i < t->n; i++) {
        if (t->p[i].type == WS_PTYPE_TMAP)
            ws_ptx_raw(&decl, "%s\t.param .align 64 .b8 %s[128]", i ? ",\n" : "", t->p[i].name);
        else
            ws_ptx_raw(&decl, "%s\t.param .%s %s", i ? ",\n" : "", ws_ptype_name(t->p[i].type),
                       t->p[i].name);
    }
    char why[160];
    char *text = ws_ptx_take(&decl, why, sizeof why);
    if (!text) {
        ws_ptx_fail(k, why);
        ws_ptx_kernel_end_cl(k, mod, name, "", maxntid, min_blocks, max_regs, cluster);
        return;
    }
    ws_ptx_kernel_end_cl(k, mod, name, text, maxntid, min_blocks, max_regs, cluster);
    free(text);
}

/* r's name fits t's parameter i: "%rd<n>" for .u64, "%r<n>" for .u32 */
static int reg_fits(preg r, ws_ptype t)
{
    if (t == WS_PTYPE_U64)
        return !strncmp(r.n, "%rd", 3) && r.n[3] >= '0' && r.n[3] <= '9';
    return !strncmp(r.n, "%r", 2) && r.n[2] >= '0' && r.n[2] <= '9';
}

void ws_ptx_ld_param(ptx_buf *b, preg r, const ws_params *t, int i)
{
    char why[160];
    if (i < 0 || i >= t->n) {
        snprintf(why, sizeof why, "%s: no parameter %d", t->kernel, i);
        ws_ptx_fail(b, why);
        return;
    }
    const ws_param *p = &t->p[i];
    if (p->type == WS_PTYPE_TMAP) {
        snprintf(why, sizeof why, "%s: %s is a tensor map, read by its address", t->kernel, p->name);
        ws_ptx_fail(b, why);
        return;
    }
    if (!reg_fits(r, p->type)) {
        snprintf(why, sizeof why, "%s: %s is .%s, loaded into %s", t->kernel, p->name,
                 ws_ptype_name(p->type), r.n);
        ws_ptx_fail(b, why);
        return;
    }
    ws_ptx_ins(b, "ld.param.%s %s, [%s]", ws_ptype_name(p->type), r.n, p->name);
}

void ws_ptx_param_tmap(ptx_buf *b, preg r, const ws_params *t, int i)
{
    if (i < 0 || i >= t->n || t->p[i].type != WS_PTYPE_TMAP || !reg_fits(r, WS_PTYPE_U64)) {
        char why[160];
        snprintf(why, sizeof why, "%s: parameter %d is not a tensor map read into a b64 register",
                 t->kernel, i);
        ws_ptx_fail(b, why);
        return;
    }
    ws_ptx_ins(b, "mov.b64 %s, %s", r.n, t->p[i].name);
    ws_ptx_ins(b, "cvta.param.u64 %s, %s", r.n, r.n);
}

preg ws_ptx_param_u32(ptx_buf *b, const ws_params *t, int i)
{
    preg r32 = ws_ptx_reg(b, PTX_B32), r = ws_ptx_reg(b, PTX_B64);
    ws_ptx_ld_param(b, r32, t, i);
    ws_ptx_ins(b, "cvt.u64.u32 %s, %s", r.n, r32.n);
    return r;
}

void ws_ptx_param_ptrs(ptx_buf *b, preg *r, const ws_params *t, const int *idx, int count)
{
    for (int j = 0; j < count; j++) {
        r[j] = ws_ptx_reg(b, PTX_B64);
        ws_ptx_ld_param(b, r[j], t, idx[j]);
    }
    for (int j = 0; j < count; j++)
        ws_ptx_ins(b, "cvta.to.global.u64 %s, %s", r[j].n, r[j].n);
}

/* ---- the runtime's side ---- */

void ws_kargs_init(ws_kargs *a, ws_params_id id)
{
    memset(a, 0, sizeof *a);
    a->t = ws_params_of(id);
}

void ws_kargs_set(ws_kargs *a, int i, void *value, size_t size)
{
    if (!a->t || i < 0 || i >= a->t->n) {
        a->bad = 1;
        return;
    }
    a->v[i] = value;
    a->size[i] = size;
}

int ws_kargs_check(const ws_kargs *a, const char *fn, ws_err *err)
{
    if (!a->t)
        return ws_errf(err, "%s: kernel arguments without a parameter table", fn);
    if (a->bad)
        return ws_errf(err, "%s: %s arguments: an index outside its %d parameters", fn, a->t->kernel,
                       a->t->n);
    for (int i = 0; i < a->t->n; i++) {
        const ws_param *p = &a->t->p[i];
        if (!a->v[i])
            return ws_errf(err, "%s: %s parameter %s (.%s) not given", fn, a->t->kernel, p->name,
                           ws_ptype_name(p->type));
        if (a->size[i] != ws_ptype_bytes(p->type))
            return ws_errf(err, "%s: %s parameter %s (.%s) given %zu bytes", fn, a->t->kernel,
                           p->name, ws_ptype_name(p->type), a->size[i]);
    }
    return 0;
}

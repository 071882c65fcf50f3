/* gpu_dws.c - loading and launching the depthwise causal kernels with packed sequences and
 * carried states (gpu_dws.h; the kernels: ptx_dws.h). Every launch's argument array is
 * filled by the index enum of its entry's parameter table (ptx_params.h) and checked
 * against the table (ws_kargs_check) before the first launch of the call.
 * Tested by tests/test_gpu_dws.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_dws.h"
#include "ptx/ptx_params.h"

struct ws_dws {
    ws_conv_desc d;
    wscu_module mod;
    wscu_function fn[WS_DWS_NPARTS]; /* the entries of d's op, 0 for the others */
    char name[WS_DWS_NAME_MAX];
};

void ws_dws_free(ws_dws *m)
{
    free(m);
}

ws_dws *ws_dws_load(ws_gpu *g, const ws_conv_desc *d, ws_err *err)
{
    if (!g || !d) {
        ws_errf(err, "ws_dws_load: %s is NULL", g ? "d" : "g");
        return NULL;
    }
    ws_cu *cu = &g->cu;
    char *ptx = ws_dws_emit(d, g->emit_major, g->emit_minor, err);
    if (!ptx)
        return NULL;
    ws_dws *m = calloc(1, sizeof *m);
    if (!m) {
        free(ptx);
        ws_errf(err, "ws_dws_load: out of memory");
        return NULL;
    }
    m->d = *d;
    ws_dws_name(d, m->name);
    if (ws_gpu_module(g, m->name, ptx, &m->mod, err))
        goto cleanup;
    for (int p = 0; p < WS_DWS_NPARTS; p++) {
        if (!ws_dws_has_part(d, (ws_dws_part)p))
            continue;
        char entry[WS_DWS_NAME_MAX];
        ws_dws_entry(d, (ws_dws_part)p, entry);
        CU_TRY(cu, ModuleGetFunction(&m->fn[p], m->mod, entry), err);
    }
    free(ptx);
    return m;
cleanup: /* CU_TRY */
    free(ptx);
    ws_dws_free(m);
    return NULL;
}

size_t ws_dws_scratch_bytes(const ws_conv_desc *d, int n, int t_in)
{
    if (!d || !ws_dws_fits(d) || d->op != WS_CONV_BWD || n < 1 || t_in < 1)
        return 0;
    return (size_t)ws_dws_elements(d, WS_DWS_GZ, n, t_in) * sizeof(float);
}

static uint64_t dptr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

int ws_dws_enqueue(ws_dws *m, ws_cu *cu, const ws_conv_desc *d, const ws_conv_args *a, int t_out,
                   uint64_t w_f32, uint64_t b_f32, uint64_t scratch, wscu_stream st, ws_err *err)
{
    static const char fn[] = "ws_dws_enqueue";
    if (!m || !cu || !d || !a)
        return ws_errf(err, "%s: %s is NULL", fn, !m ? "module" : !cu ? "cu" : !d ? "d" : "args");
    char name[WS_DWS_NAME_MAX];
    if (!ws_dws_fits(d))
        return ws_errf(err, "%s: not a depthwise causal descriptor (groups = c_in = c_out, stride 1, "
                            "pad_l = dilation*(k-1), pad_r 0)", fn);
    ws_dws_name(d, name);
    if (strcmp(name, m->name))
        return ws_errf(err, "%s: descriptor %s, module loaded for %s", fn, name, m->name);
    const int bwd = d->op == WS_CONV_BWD;
    if (a->n < 1 || a->t_in < 1 || t_out != a->t_in)
        return ws_errf(err, "%s: n %d, t_in %d, t_out %d: a causal depthwise call needs n, t_in >= 1 "
                            "and t_out = t_in", fn, a->n, a->t_in, t_out);
    if (!w_f32)
        return ws_errf(err, "%s: w_f32 is 0", fn);
    if (!a->x || (bwd ? !a->dy : !a->y))
        return ws_errf(err, "%s: %s is NULL", fn, !a->x ? "x" : bwd ? "dy" : "y");
    if (bwd && !scratch)
        return ws_errf(err, "%s: scratch is 0 (BWD needs ws_dws_scratch_bytes = %zu bytes)", fn,
                       ws_dws_scratch_bytes(d, a->n, a->t_in));
    const void *state_out = bwd ? a->dinitial_states : a->final_states;
    if (a->seq_idx && (a->initial_states || state_out))
        return ws_errf(err, "%s: seq_idx and %s in one call: packed sequences take no states", fn,
                       a->initial_states ? "initial_states" : bwd ? "dinitial_states" : "final_states");
    if ((a->initial_states || state_out) && d->dilation != 1)
        return ws_errf(err, "%s: %s with dilation %d: states need dilation 1", fn,
                       a->initial_states ? "initial_states" : bwd ? "dinitial_states" : "final_states",
                       d->dilation);

    /* which entries run, and their grids, before anything is launched */
    int run[WS_DWS_NPARTS] = { 0 };
    if (!bwd) {
        run[WS_DWS_FWD] = 1;
        run[WS_DWS_FINAL] = a->final_states != NULL;
    } else {
        run[WS_DWS_GZ] = 1;
        run[WS_DWS_DX] = a->dx != NULL;
        run[WS_DWS_DINIT] = a->dinitial_states != NULL;
        run[WS_DWS_DW] = a->dw != NULL;
        run[WS_DWS_DB] = a->db != NULL;
    }
    unsigned blocks[WS_DWS_NPARTS] = { 0 };
    for (int p = 0; p < WS_DWS_NPARTS; p++) {
        if (!run[p])
            continue;
        const unsigned long long el = ws_dws_elements(d, (ws_dws_part)p, a->n, a->t_in);
        const unsigned long long nb = (el + WS_DWS_THREADS - 1) / WS_DWS_THREADS;
        if (nb > (unsigned long long)INT_MAX) {
            char entry[WS_DWS_NAME_MAX];
            ws_dws_entry(d, (ws_dws_part)p, entry);
            return ws_errf(err, "%s: grid of %s: %llu threads need %llu blocks of %d, over the "
                                "grid limit %d", fn, entry, el, nb, WS_DWS_THREADS, INT_MAX);
        }
        blocks[p] = (unsigned)nb; /* 0: nothing to do (K = 1 has no states) */
        if (!m->fn[p])
            return ws_errf(err, "%s: module %s lacks entry %d", fn, m->name, p);
    }

    /* the values, alive until the launches */
    uint64_t px = dptr(a->x), pw = w_f32, pb = b_f32, padd = dptr(a->add), py = dptr(a->y);
    uint64_t pseq = dptr(a->seq_idx), pinit = dptr(a->initial_states), pfin = dptr(a->final_states);
    uint64_t pdy = dptr(a->dy), pgz = scratch, pdx = dptr(a->dx), pdi = dptr(a->dinitial_states);
    uint64_t pdw = dptr(a->dw), pdb = dptr(a->db);
    uint64_t abs = a->add ? (uint64_t)a->add_batch_stride : 0;
    uint32_t nn = (uint32_t)a->n, tt = (uint32_t)a->t_in;
    ws_kargs k[WS_DWS_NPARTS];
    for (int p = 0; p < WS_DWS_NPARTS; p++)
        ws_kargs_init(&k[p], WS_PARAMS_DWS_FWD + p);
    ws_kargs *f = &k[WS_DWS_FWD];
    WS_KARG(f, WS_DSFWD_X, px), WS_KARG(f, WS_DSFWD_W, pw), WS_KARG(f, WS_DSFWD_B, pb);
    WS_KARG(f, WS_DSFWD_ADD, padd), WS_KARG(f, WS_DSFWD_Y, py), WS_KARG(f, WS_DSFWD_SEQ, pseq);
    WS_KARG(f, WS_DSFWD_INIT, pinit), WS_KARG(f, WS_DSFWD_N, nn), WS_KARG(f, WS_DSFWD_T, tt);
    WS_KARG(f, WS_DSFWD_ADD_BS, abs);
    f = &k[WS_DWS_FINAL];
    WS_KARG(f, WS_DSFIN_X, px), WS_KARG(f, WS_DSFIN_INIT, pinit), WS_KARG(f, WS_DSFIN_FINAL, pfin);
    WS_KARG(f, WS_DSFIN_N, nn), WS_KARG(f, WS_DSFIN_T, tt);
    f = &k[WS_DWS_GZ];
    WS_KARG(f, WS_DSGZ_X, px), WS_KARG(f, WS_DSGZ_W, pw), WS_KARG(f, WS_DSGZ_B, pb);
    WS_KARG(f, WS_DSGZ_DY, pdy), WS_KARG(f, WS_DSGZ_SEQ, pseq), WS_KARG(f, WS_DSGZ_INIT, pinit);
    WS_KARG(f, WS_DSGZ_GZ, pgz), WS_KARG(f, WS_DSGZ_N, nn), WS_KARG(f, WS_DSGZ_T, tt);
    f = &k[WS_DWS_DX];
    WS_KARG(f, WS_DSDX_W, pw), WS_KARG(f, WS_DSDX_GZ, pgz), WS_KARG(f, WS_DSDX_SEQ, pseq);
    WS_KARG(f, WS_DSDX_DX, pdx), WS_KARG(f, WS_DSDX_N, nn), WS_KARG(f, WS_DSDX_T, tt);
    f = &k[WS_DWS_DINIT];
    WS_KARG(f, WS_DSDI_W, pw), WS_KARG(f, WS_DSDI_GZ, pgz), WS_KARG(f, WS_DSDI_DINIT, pdi);
    WS_KARG(f, WS_DSDI_N, nn), WS_KARG(f, WS_DSDI_T, tt);
    f = &k[WS_DWS_DW];
    WS_KARG(f, WS_DSDW_X, px), WS_KARG(f, WS_DSDW_GZ, pgz), WS_KARG(f, WS_DSDW_SEQ, pseq);
    WS_KARG(f, WS_DSDW_INIT, pinit), WS_KARG(f, WS_DSDW_DW, pdw), WS_KARG(f, WS_DSDW_N, nn);
    WS_KARG(f, WS_DSDW_T, tt);
    f = &k[WS_DWS_DB];
    WS_KARG(f, WS_DSDB_GZ, pgz), WS_KARG(f, WS_DSDB_DB, pdb), WS_KARG(f, WS_DSDB_N, nn);
    WS_KARG(f, WS_DSDB_T, tt);
    for (int p = 0; p < WS_DWS_NPARTS; p++)
        if (run[p] && ws_kargs_check(&k[p], fn, err))
            return -1;
    for (int p = 0; p < WS_DWS_NPARTS; p++)
        if (run[p] && blocks[p])
            CU_TRY(cu, LaunchKernel(m->fn[p], blocks[p], 1, 1, WS_DWS_THREADS, 1, 1, 0, st, k[p].v,
                                    NULL), err);
    return 0;
cleanup: /* CU_TRY */
    return -1;
}

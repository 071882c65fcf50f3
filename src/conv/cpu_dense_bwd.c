/* cpu_dense_bwd.c - the conv engine's dense BWD (groups 1) as sgemm over time-major copies.
 *
 *   g[t][o]     = dy[n,o,t] * act'(z[t][o]),  z = b + conv (conv.c's ws_rowconv, act NONE)
 *   db[o]      += sum_t g[t][o]                               (double, t in order)
 *   dw_k[o][i] += sum_t gT[o][t] * xp[S*t + D*k][i]           (sgemm: gT [O][T_out] times
 *                                                              rows S*t + D*k of xp, ldb S*C_in)
 *   dx[u][i]    = sum_k sum_o gu[u + P_L - D*k][o] * w[o,i,k]  (sgemm per tap over gu)
 * where xp[r][i] = x[n, i, r - P_L] zero-padded (as cpu_dense.c) and gu is g upsampled by S
 * and padded: gu[p] = g[p/S] when S divides p and 0 <= p/S < T_out, else 0, for
 * p in [-(D*(K-1) - P_L), T_in - 1 + P_L]. w is packed [K][O][C_in].
 * dw work is split in fixed tasks (tap, block of OB output channels) and dx in fixed blocks of
 * UB input times, each one sgemm chain whatever the thread count: the bits of dx, dw, db do
 * not depend on it (z too: cpu_dense.c's fixed row blocks).
 * dw and db sum over n in order (dw in float32 through the sgemm's beta = 1, db in double).
 * Tested by tests/test_engine.c (dense BWD rows: oracle, finite differences, adjoint).
 */
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "conv.h"
#include "engine.h"

enum {
    MAX_FLOATS = 1 << 27, /* any one scratch above 512 MiB: the direct kernel */
    OB = 64,              /* output channels per dw task */
    UB = 256,             /* input times per dx task */
    MAX_THREADS = 256,    /* ws_parallel's cap */
};

typedef struct {
    const ws_conv_desc *d;
    int t_in, t_out, nob;
    long long front; /* gu row of p = 0 */
    const float *xp, *gt, *gu, *wt;
    float *dwk, *dxs;
    long long items;
} bwd_job;

static void dw_task(void *ctx, int ti, int nt)
{
    bwd_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const int I = d->c_in, O = d->c_out;
    const long long lo = J->items * ti / nt, hi = J->items * (ti + 1) / nt;
    for (long long it = lo; it < hi; it++) {
        const int k = (int)(it / J->nob), o0 = (int)(it % J->nob) * OB;
        const int ob = O - o0 < OB ? O - o0 : OB;
        ws_sgemm(ob, I, J->t_out, 1.0f, J->gt + (size_t)o0 * J->t_out, J->t_out,
                 J->xp + (size_t)d->dilation * k * I, d->stride * I, 1.0f,
                 J->dwk + ((size_t)k * O + o0) * I, I);
    }
}

static void dx_task(void *ctx, int ti, int nt)
{
    bwd_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const int I = d->c_in, O = d->c_out;
    const long long lo = J->items * ti / nt, hi = J->items * (ti + 1) / nt;
    for (long long it = lo; it < hi; it++) {
        const int u0 = (int)it * UB, ub = J->t_in - u0 < UB ? J->t_in - u0 : UB;
        for (int k = 0; k < d->k; k++) {
            const long long row = J->front + u0 + d->pad_l - (long long)d->dilation * k;
            ws_sgemm(ub, I, O, 1.0f, J->gu + (size_t)row * O, O, J->wt + (size_t)k * O * I, I,
                     k ? 1.0f : 0.0f, J->dxs + (size_t)u0 * I, I);
        }
    }
}

static int nthreads(int n_threads, long long items)
{
    long long t = n_threads < MAX_THREADS ? n_threads : MAX_THREADS;
    return (int)(items < t ? items : t);
}

int ws_conv_dense_bwd(const ws_conv_desc *d, const struct ws_rowconv *rc, const ws_conv_args *a,
                      int t_out, const float *w, int n_threads, ws_err *err)
{
    const int I = d->c_in, O = d->c_out, K = d->k, S = d->stride, T = a->t_in;
    const long long R = (long long)S * (t_out - 1) + (long long)d->dilation * (K - 1) + 1;
    const long long front0 = (long long)d->dilation * (K - 1) - d->pad_l;
    const long long front = front0 > 0 ? front0 : 0;
    const long long RU = front + T + d->pad_l; /* p up to T_in - 1 + P_L */
    if (R * I > MAX_FLOATS || (long long)t_out * O > MAX_FLOATS || RU * O > MAX_FLOATS ||
        (long long)T * I > MAX_FLOATS || (long long)K * O * I > MAX_FLOATS)
        return 1;
    const int want_z = d->act != WS_ACT_NONE;
    float *xp = calloc((size_t)R * I, sizeof(float));
    float *g = malloc((size_t)t_out * O * sizeof(float));
    float *z = want_z ? malloc((size_t)t_out * O * sizeof(float)) : NULL;
    float *gt = a->dw ? malloc((size_t)t_out * O * sizeof(float)) : NULL;
    float *gu = a->dx ? calloc((size_t)RU * O, sizeof(float)) : NULL;
    float *dxs = a->dx ? malloc((size_t)T * I * sizeof(float)) : NULL;
    float *wt = a->dx ? malloc((size_t)K * O * I * sizeof(float)) : NULL;
    float *dwk = a->dw ? calloc((size_t)K * O * I, sizeof(float)) : NULL;
    double *dbs = a->db ? calloc((size_t)O, sizeof(double)) : NULL;
    float *tmp = malloc((size_t)(T > t_out ? T : t_out) * sizeof(float));
    if (!xp || !g || (want_z && !z) || (a->dw && (!gt || !dwk)) || (a->dx && (!gu || !dxs || !wt)) ||
        (a->db && !dbs) || !tmp) {
        free(xp), free(g), free(z), free(gt), free(gu), free(dxs), free(wt), free(dwk), free(dbs),
            free(tmp);
        return ws_errf(err, "ws_conv_run: out of memory for dense BWD scratch (c_in %d, c_out %d, "
                            "t_in %d)",
                       I, O, T);
    }
    if (wt) /* w[o][i][k] -> wt[k][o][i] */
        for (int o = 0; o < O; o++)
            for (int i = 0; i < I; i++)
                for (int k = 0; k < K; k++)
                    wt[((size_t)k * O + o) * I + i] = w[((size_t)o * I + i) * K + k];
    bwd_job J = {.d = d, .t_in = T, .t_out = t_out, .nob = (O + OB - 1) / OB, .front = front,
                 .xp = xp, .gt = gt, .gu = gu, .wt = wt, .dwk = dwk, .dxs = dxs};
    for (int n = 0; n < a->n; n++) {
        if (want_z || a->dw)
            ws_conv_dense_fill_xp(d, a, n, R, xp, tmp);
        /* g [T_out][O] from dy */
        if (d->y_layout == WS_NLC) {
            ws_conv_ld_row(g, a->dy, d->y_type, (size_t)n * t_out * O, 1, (long long)t_out * O);
        } else
            for (int o = 0; o < O; o++) {
                ws_conv_ld_row(tmp, a->dy, d->y_type, ((size_t)n * O + o) * t_out, 1, t_out);
                for (int t = 0; t < t_out; t++)
                    g[(size_t)t * O + o] = tmp[t];
            }
        if (want_z) {
            ws_conv_dense_rows(rc, xp, t_out, z, O, NULL, n_threads);
            for (int t = 0; t < t_out; t++)
                ws_act_grad_rows(g + (size_t)t * O, z + (size_t)t * O, O, d->act);
        }
        if (dbs)
            for (int t = 0; t < t_out; t++)
                for (int o = 0; o < O; o++)
                    dbs[o] += g[(size_t)t * O + o];
        if (a->dw) {
            for (int t = 0; t < t_out; t++)
                for (int o = 0; o < O; o++)
                    gt[(size_t)o * t_out + t] = g[(size_t)t * O + o];
            J.items = (long long)K * J.nob;
            ws_parallel(nthreads(n_threads, J.items), dw_task, &J);
        }
        if (a->dx) {
            for (int t = 0; t < t_out; t++) {
                const long long p = (long long)S * t;
                if (p > (long long)T - 1 + d->pad_l)
                    break;
                memcpy(gu + (size_t)(front + p) * O, g + (size_t)t * O, (size_t)O * sizeof(float));
            }
            J.items = (T + UB - 1) / UB;
            ws_parallel(nthreads(n_threads, J.items), dx_task, &J);
            if (d->x_layout == WS_NLC)
                ws_conv_st_row(a->dx, d->x_type, (size_t)n * T * I, 1, dxs, (long long)T * I);
            else
                for (int i = 0; i < I; i++) {
                    for (int u = 0; u < T; u++)
                        tmp[u] = dxs[(size_t)u * I + i];
                    ws_conv_st_row(a->dx, d->x_type, ((size_t)n * I + i) * T, 1, tmp, T);
                }
        }
    }
    if (a->dw)
        for (int o = 0; o < O; o++)
            for (int i = 0; i < I; i++)
                for (int k = 0; k < K; k++)
                    a->dw[((size_t)o * I + i) * K + k] = dwk[((size_t)k * O + o) * I + i];
    if (a->db)
        for (int o = 0; o < O; o++)
            a->db[o] = (float)dbs[o];
    free(xp), free(g), free(z), free(gt), free(gu), free(dxs), free(wt), free(dwk), free(dbs),
        free(tmp);
    return 0;
}

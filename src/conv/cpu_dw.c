/* cpu_dw.c - the conv engine's depthwise FWD for channel-last data (Mamba's layout).
 *
 *   y[n,t,c] = act( b[c] + sum_{k<K} w[c,k] * pre(x[n, S*t + D*k - P_L, c]) ) + add[n,t,c]
 *   (G = C_in = C_out = C; x and y NLC: x[(n*T_in + u)*C + c], y[(n*T_out + t)*C + c])
 *
 * Method: one task per (n, block of TB outputs, block of CB channels). The input rows the
 * block reads, u = S*t0 - P_L .. S*(t1-1) + D*(K-1) - P_L, are converted (pre applied, zero
 * outside [0, T_in)) into a [rows][CB] scratch; each output row is then K multiply-adds over
 * contiguous channels (vectorised over c) with w packed [K][C], then bias and act (gelu.c's
 * epilogue), add, and the store in y_type. Every y element is summed in the order k = 0..K-1
 * by one thread, so the bits do not depend on the thread count.
 * Tested by tests/test_engine.c (the depthwise NLC rows against the float64 oracle).
 */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "engine.h"

enum {
    TB = 64,           /* output times per task */
    CB = 512,          /* channels per task */
    MAX_ROWS = 4096,   /* input rows a task may stage; more (huge S or D): the direct kernel */
    MAX_THREADS = 256, /* ws_parallel's cap */
};

typedef struct {
    const ws_conv_desc *d;
    const ws_conv_args *a;
    const float *wt, *b; /* wt [K][C] */
    int t_out, rows, ntb, ncb;
    float *tbuf; /* per thread: rows*CB (staged x) + 2*CB (acc, add) */
    size_t tlen;
    long long items;
} dw_job;

int ws_conv_dw_nlc_ok(const ws_conv_desc *d)
{
    const long long rows = (long long)d->stride * (TB - 1) + (long long)d->dilation * (d->k - 1) + 1;
    return d->op == WS_CONV_FWD && d->groups == d->c_in && d->c_in == d->c_out &&
           d->x_layout == WS_NLC && d->y_layout == WS_NLC && rows <= MAX_ROWS;
}

static void dw_task(void *ctx, int ti, int nt)
{
    dw_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int C = d->c_in, K = d->k, S = d->stride, T = a->t_in;
    float *xb = J->tbuf + (size_t)ti * J->tlen;
    float *acc = xb + (size_t)J->rows * CB, *ad = acc + CB;
    const long long lo = J->items * ti / nt, hi = J->items * (ti + 1) / nt;
    for (long long it = lo; it < hi; it++) {
        const int n = (int)(it / ((long long)J->ntb * J->ncb));
        const int tb = (int)(it / J->ncb % J->ntb), cb = (int)(it % J->ncb);
        const int t0 = tb * TB, t1 = t0 + TB < J->t_out ? t0 + TB : J->t_out;
        const int c0 = cb * CB, cw = c0 + CB < C ? CB : C - c0;
        const long long u0 = (long long)S * t0 - d->pad_l;
        const int nrows = S * (t1 - 1 - t0) + d->dilation * (K - 1) + 1;
        for (int r = 0; r < nrows; r++) {
            float *row = xb + (size_t)r * CB;
            const long long u = u0 + r;
            if (u < 0 || u >= T) {
                memset(row, 0, (size_t)cw * sizeof(float));
                continue;
            }
            ws_conv_ld_row(row, a->x, d->x_type, ((size_t)n * T + (size_t)u) * C + c0, 1, cw);
            if (d->pre != WS_ACT_NONE)
                ws_act_row(row, cw, NULL, d->pre);
        }
        for (int t = t0; t < t1; t++) {
            memset(acc, 0, (size_t)cw * sizeof(float));
            for (int k = 0; k < K; k++) {
                const float *src = xb + ((size_t)S * (t - t0) + (size_t)d->dilation * k) * CB;
                const float *wk = J->wt + (size_t)k * C + c0;
                for (int c = 0; c < cw; c++)
                    acc[c] += wk[c] * src[c];
            }
            const size_t yi = ((size_t)n * J->t_out + t) * C + c0;
            const float *addp = NULL;
            if (a->add) {
                ws_conv_ld_row(ad, a->add, d->y_type,
                               (size_t)n * (size_t)a->add_batch_stride + (size_t)t * C + c0, 1, cw);
                addp = ad;
            }
            ws_bias_act_rows(acc, 1, cw, cw, J->b ? J->b + c0 : NULL, d->act, addp);
            ws_conv_st_row(a->y, d->y_type, yi, 1, acc, cw);
        }
    }
}

int ws_conv_dw_nlc_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err)
{
    const int C = d->c_in, K = d->k;
    dw_job J = {.d = d, .a = a, .b = b, .t_out = t_out};
    J.rows = d->stride * (TB - 1) + d->dilation * (K - 1) + 1;
    J.ntb = (t_out + TB - 1) / TB;
    J.ncb = (C + CB - 1) / CB;
    J.items = (long long)a->n * J.ntb * J.ncb;
    J.tlen = (size_t)J.rows * CB + 2 * CB;
    const int nt = (int)(J.items < (n_threads < MAX_THREADS ? n_threads : MAX_THREADS)
                             ? J.items
                             : (n_threads < MAX_THREADS ? n_threads : MAX_THREADS));
    float *wt = malloc((size_t)K * C * sizeof(float));
    J.tbuf = malloc((size_t)nt * J.tlen * sizeof(float));
    if (!wt || !J.tbuf) {
        free(wt), free(J.tbuf);
        return ws_errf(err, "ws_conv_run: out of memory for depthwise scratch (c %d, k %d)", C, K);
    }
    for (int c = 0; c < C; c++) /* [C][1][K] -> [K][C] */
        for (int k = 0; k < K; k++)
            wt[(size_t)k * C + c] = w[(size_t)c * K + k];
    J.wt = wt;
    ws_parallel(nt, dw_task, &J);
    free(wt), free(J.tbuf);
    return 0;
}

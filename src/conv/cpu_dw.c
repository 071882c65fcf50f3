/* cpu_dw.c - the conv engine's depthwise FWD and BWD for channel-last data (Mamba's layout).
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
 * BWD (dy NLC, dx NLC): per block (n, TB outputs, CB channels) g = dy * act'(b + conv) and
 * the block's dw, db partial sums over its outputs in order (float32), then per channel the
 * partials summed in block order in double: a fixed partition, so the bits do not depend on
 * the thread count. dx per block of TB input times: the outputs it feeds get g recomputed
 * (a halo of D*(K-1)/S), then dx[u,c] = sum_k w[c,k] * g[(u + P_L - D*k)/S, c] over the k
 * that divide, in k order.
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
    float *tbuf; /* per thread: rows*CB (staged x), grows*CB (BWD: g), 2*CB (acc, add) */
    size_t tlen;
    int grows;         /* BWD: g rows per task */
    float *part_dw;    /* BWD: [N][ntb][K][C] per-block dw sums, or NULL */
    float *part_db;    /* BWD: [N][ntb][C], or NULL */
    long long items;
} dw_job;

/* input rows staged for outputs [ta, tb) of a block: S*(tb-1-ta) + D*(K-1) + 1 */
static long long rows_for(const ws_conv_desc *d, long long nt)
{
    return (long long)d->stride * (nt - 1) + (long long)d->dilation * (d->k - 1) + 1;
}

/* outputs a BWD dx block of TB input times reads: at most TB/S + D*(K-1)/S + 2 */
static long long bwd_t_span(const ws_conv_desc *d)
{
    return TB / d->stride + (long long)d->dilation * (d->k - 1) / d->stride + 2;
}

int ws_conv_dw_nlc_ok(const ws_conv_desc *d)
{
    if (d->groups != d->c_in || d->c_in != d->c_out || d->x_layout != WS_NLC ||
        d->y_layout != WS_NLC)
        return 0;
    if (d->op == WS_CONV_FWD)
        return rows_for(d, TB) <= MAX_ROWS;
    /* the backward stages rows_for(max(span, TB)) rows per task: hold that to the bound too */
    long long span = bwd_t_span(d) > TB ? bwd_t_span(d) : TB;
    return rows_for(d, span) <= MAX_ROWS;
}

/* xb[r][c] = pre(x[n, S*ta - P_L + r, c0 + c]) for r < rows_for(tb - ta), zero outside */
static void stage(const dw_job *J, int n, int ta, int tb, int c0, int cw, float *xb)
{
    const ws_conv_desc *d = J->d;
    const int C = d->c_in, T = J->a->t_in;
    const long long u0 = (long long)d->stride * ta - d->pad_l;
    const long long nrows = rows_for(d, tb - ta);
    for (long long r = 0; r < nrows; r++) {
        float *row = xb + (size_t)r * CB;
        const long long u = u0 + r;
        if (u < 0 || u >= T) {
            memset(row, 0, (size_t)cw * sizeof(float));
            continue;
        }
        ws_conv_ld_row(row, J->a->x, d->x_type, ((size_t)n * T + (size_t)u) * C + c0, 1, cw);
        if (d->pre != WS_ACT_NONE)
            ws_act_row(row, cw, NULL, d->pre);
    }
}

/* acc[c] = sum_k w[c0+c, k] * xb[S*i + D*k][c]  (output i of the staged block) */
static void conv_row(const dw_job *J, const float *xb, int i, int c0, int cw, float *acc)
{
    const ws_conv_desc *d = J->d;
    memset(acc, 0, (size_t)cw * sizeof(float));
    for (int k = 0; k < d->k; k++) {
        const float *src = xb + ((size_t)d->stride * i + (size_t)d->dilation * k) * CB;
        const float *wk = J->wt + (size_t)k * d->c_in + c0;
        for (int c = 0; c < cw; c++)
            acc[c] += wk[c] * src[c];
    }
}

static void dw_task(void *ctx, int ti, int nt)
{
    dw_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int C = d->c_in;
    float *xb = J->tbuf + (size_t)ti * J->tlen;
    float *acc = xb + (size_t)J->rows * CB, *ad = acc + CB;
    const long long lo = J->items * ti / nt, hi = J->items * (ti + 1) / nt;
    for (long long it = lo; it < hi; it++) {
        const int n = (int)(it / ((long long)J->ntb * J->ncb));
        const int tb = (int)(it / J->ncb % J->ntb), cb = (int)(it % J->ncb);
        const int t0 = tb * TB, t1 = t0 + TB < J->t_out ? t0 + TB : J->t_out;
        const int c0 = cb * CB, cw = c0 + CB < C ? CB : C - c0;
        stage(J, n, t0, t1, c0, cw, xb);
        for (int t = t0; t < t1; t++) {
            conv_row(J, xb, t - t0, c0, cw, acc);
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

/* gb[i][c] = dy[n, ta+i, c0+c] * act'(b + conv) for outputs [ta, tb); xb staged when act
 * is not NONE (or already, when stage_x is 0 and the caller staged it) */
static void grad_rows(const dw_job *J, int n, int ta, int tb, int c0, int cw, int stage_x,
                      float *xb, float *gb, float *acc)
{
    const ws_conv_desc *d = J->d;
    if (stage_x && d->act != WS_ACT_NONE)
        stage(J, n, ta, tb, c0, cw, xb);
    for (int t = ta; t < tb; t++) {
        float *g = gb + (size_t)(t - ta) * CB;
        ws_conv_ld_row(g, J->a->dy, d->y_type, ((size_t)n * J->t_out + t) * d->c_in + c0, 1, cw);
        if (d->act == WS_ACT_NONE)
            continue;
        conv_row(J, xb, t - ta, c0, cw, acc);
        if (J->b)
            for (int c = 0; c < cw; c++)
                acc[c] += J->b[c0 + c];
        ws_act_grad_rows(g, acc, cw, d->act);
    }
}

/* dw, db partial sums of block (n, tb, cb), over its outputs in order */
static void wgrad_task(void *ctx, int ti, int nt)
{
    dw_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const int C = d->c_in, K = d->k;
    float *xb = J->tbuf + (size_t)ti * J->tlen;
    float *gb = xb + (size_t)J->rows * CB, *acc = gb + (size_t)J->grows * CB;
    const long long lo = J->items * ti / nt, hi = J->items * (ti + 1) / nt;
    for (long long it = lo; it < hi; it++) {
        const int n = (int)(it / ((long long)J->ntb * J->ncb));
        const int tb = (int)(it / J->ncb % J->ntb), cb = (int)(it % J->ncb);
        const int t0 = tb * TB, t1 = t0 + TB < J->t_out ? t0 + TB : J->t_out;
        const int c0 = cb * CB, cw = c0 + CB < C ? CB : C - c0;
        const size_t blk = (size_t)n * J->ntb + tb;
        if (J->part_dw || d->act != WS_ACT_NONE)
            stage(J, n, t0, t1, c0, cw, xb);
        grad_rows(J, n, t0, t1, c0, cw, 0, xb, gb, acc);
        if (J->part_db) {
            float *p = J->part_db + blk * C + c0;
            memset(p, 0, (size_t)cw * sizeof(float));
            for (int t = 0; t < t1 - t0; t++)
                for (int c = 0; c < cw; c++)
                    p[c] += gb[(size_t)t * CB + c];
        }
        if (J->part_dw)
            for (int k = 0; k < K; k++) {
                float *p = J->part_dw + (blk * K + k) * C + c0;
                memset(p, 0, (size_t)cw * sizeof(float));
                for (int t = 0; t < t1 - t0; t++) {
                    const float *g = gb + (size_t)t * CB;
                    const float *x = xb + ((size_t)d->stride * t + (size_t)d->dilation * k) * CB;
                    for (int c = 0; c < cw; c++)
                        p[c] += g[c] * x[c];
                }
            }
    }
}

/* dx block (n, input times [u0, u0+TB), channels): gather over k of w * g */
static void dx_task(void *ctx, int ti, int nt)
{
    dw_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const int C = d->c_in, K = d->k, S = d->stride, T = J->a->t_in;
    const int nub = (T + TB - 1) / TB;
    float *xb = J->tbuf + (size_t)ti * J->tlen;
    float *gb = xb + (size_t)J->rows * CB, *acc = gb + (size_t)J->grows * CB;
    const long long lo = (long long)J->a->n * nub * J->ncb * ti / nt;
    const long long hi = (long long)J->a->n * nub * J->ncb * (ti + 1) / nt;
    for (long long it = lo; it < hi; it++) {
        const int n = (int)(it / ((long long)nub * J->ncb));
        const int ub = (int)(it / J->ncb % nub), cb = (int)(it % J->ncb);
        const int u0 = ub * TB, u1 = u0 + TB < T ? u0 + TB : T;
        const int c0 = cb * CB, cw = c0 + CB < C ? CB : C - c0;
        /* outputs that read [u0, u1): S*t + D*k - P_L in it for some k */
        const long long num = (long long)u0 + d->pad_l - (long long)d->dilation * (K - 1);
        const long long ta_ = num <= 0 ? 0 : (num + S - 1) / S;
        long long tb_ = ((long long)u1 - 1 + d->pad_l) / S + 1;
        tb_ = tb_ < J->t_out ? tb_ : J->t_out;
        const int ta = (int)ta_, tb = (int)(tb_ > ta_ ? tb_ : ta_);
        if (tb > ta)
            grad_rows(J, n, ta, tb, c0, cw, 1, xb, gb, acc);
        for (int u = u0; u < u1; u++) {
            memset(acc, 0, (size_t)cw * sizeof(float));
            for (int k = 0; k < K; k++) {
                const long long v = (long long)u + d->pad_l - (long long)d->dilation * k;
                if (v < 0 || v % S)
                    continue;
                const long long t = v / S;
                if (t < ta || t >= tb)
                    continue;
                const float *g = gb + (size_t)(t - ta) * CB;
                const float *wk = J->wt + (size_t)k * C + c0;
                for (int c = 0; c < cw; c++)
                    acc[c] += wk[c] * g[c];
            }
            ws_conv_st_row(J->a->dx, d->x_type, ((size_t)n * T + u) * C + c0, 1, acc, cw);
        }
    }
}

/* dw[c][k], db[c]: the block partials summed in block order, in double */
static void reduce_task(void *ctx, int ti, int nt)
{
    dw_job *J = ctx;
    const int C = J->d->c_in, K = J->d->k;
    const long long nblk = (long long)J->a->n * J->ntb;
    const int c_lo = (int)((long long)C * ti / nt), c_hi = (int)((long long)C * (ti + 1) / nt);
    for (int c = c_lo; c < c_hi; c++) {
        if (J->part_db) {
            double s = 0;
            for (long long b = 0; b < nblk; b++)
                s += J->part_db[(size_t)b * C + c];
            J->a->db[c] = (float)s;
        }
        if (J->part_dw)
            for (int k = 0; k < K; k++) {
                double s = 0;
                for (long long b = 0; b < nblk; b++)
                    s += J->part_dw[((size_t)b * K + k) * C + c];
                J->a->dw[(size_t)c * K + k] = (float)s;
            }
    }
}

static int clamp_threads(int n_threads, long long items)
{
    long long t = n_threads < MAX_THREADS ? n_threads : MAX_THREADS;
    return (int)(items < t ? items : t);
}

int ws_conv_dw_nlc_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err)
{
    const int C = d->c_in, K = d->k;
    dw_job J = {.d = d, .a = a, .b = b, .t_out = t_out};
    const long long span = bwd_t_span(d);
    J.grows = (int)(span > TB ? span : TB);
    J.rows = (int)rows_for(d, J.grows);
    J.ntb = (t_out + TB - 1) / TB;
    J.ncb = (C + CB - 1) / CB;
    J.tlen = ((size_t)J.rows + J.grows + 2) * CB;
    const int nt = clamp_threads(n_threads, (long long)a->n * J.ntb * J.ncb + 1);
    const size_t nblk = (size_t)a->n * J.ntb;
    size_t npart; /* nblk*K*C floats of partials: checked, K*C alone can be near the limit */
    if (ws_mul_size(nblk, (size_t)K * C, &npart) || ws_mul_size(npart, sizeof(float), &npart))
        return ws_errf(err, "ws_conv_run: dw partials (n %d x %d blocks x k %d x c %d) overflow",
                       a->n, J.ntb, K, C);
    float *wt = malloc((size_t)K * C * sizeof(float));
    J.tbuf = malloc((size_t)nt * J.tlen * sizeof(float));
    J.part_dw = a->dw ? malloc(npart) : NULL;
    J.part_db = a->db ? malloc(nblk * C * sizeof(float)) : NULL;
    if (!wt || !J.tbuf || (a->dw && !J.part_dw) || (a->db && !J.part_db)) {
        free(wt), free(J.tbuf), free(J.part_dw), free(J.part_db);
        return ws_errf(err, "ws_conv_run: out of memory for depthwise scratch (c %d, k %d)", C, K);
    }
    for (int c = 0; c < C; c++) /* [C][1][K] -> [K][C] */
        for (int k = 0; k < K; k++)
            wt[(size_t)k * C + c] = w[(size_t)c * K + k];
    J.wt = wt;
    if (a->dw || a->db) {
        J.items = (long long)a->n * J.ntb * J.ncb;
        ws_parallel(clamp_threads(nt, J.items), wgrad_task, &J);
        ws_parallel(clamp_threads(nt, C), reduce_task, &J);
    }
    if (a->dx)
        ws_parallel(clamp_threads(nt, (long long)a->n * ((a->t_in + TB - 1) / TB) * J.ncb), dx_task,
                    &J);
    free(wt), free(J.tbuf), free(J.part_dw), free(J.part_db);
    return 0;
}

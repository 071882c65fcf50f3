/* cpu_dense.c - the conv engine's dense FWD (groups 1) as shifted-row sgemm (BWD: cpu_dense_bwd.c).
 *
 *   y[n,o,t] = act( b[o] + sum_i sum_k w[o,i,k] * pre(x[n, i, S*t + D*k - P_L]) ) + add[n,o,t]
 *
 * Per batch item, x is copied (converted, pre applied) to a zero-padded time-major buffer
 *   xp[r][i] = pre(x[n, i, r - P_L]),  r < R = S*(T_out-1) + D*(K-1) + 1
 * (zero where r - P_L is outside [0, T_in)), so tap k of output row t is row S*t + D*k and
 * conv.c's ws_rowconv (pad 0, K sgemms over shifted row views, bias and act in its
 * epilogue) computes y time-major [T_out][C_out]: straight into y when y is f32 NLC (add
 * too), else into a scratch that is then added to and stored in y's type and layout.
 * Sums in float32 in the BLAS's order; the time axis is cut into blocks whose size depends
 * on T_out alone (16 rows, 128 from T_out 1024), one single-threaded sgemm chain each, so the
 * bits do not depend on the thread count. Tested by tests/test_engine.c (the dense rows).
 */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "engine.h"

enum {
    MIN_CK = 8,                /* C_in*K below this: the direct kernel */
    MIN_COUT = 4,              /* C_out below this: the direct kernel */
    MAX_XP_FLOATS = 1 << 27,   /* a padded item above 512 MiB: the direct kernel */
};

int ws_conv_dense_ok(const ws_conv_desc *d)
{
    return d->groups == 1 && (long long)d->c_in * d->k >= MIN_CK &&
           d->c_out >= MIN_COUT;
}

struct ws_rowconv *ws_conv_dense_new(const ws_conv_desc *d, const float *w, const float *b)
{
    ws_rowconv_desc rd = {.in_ch = d->c_in, .out_ch = d->c_out, .kernel = d->k,
                          .stride = d->stride, .pad = 0, .dilation = d->dilation,
                          .act = d->op == WS_CONV_FWD ? d->act : WS_ACT_NONE}; /* BWD: z = b + conv */
    return ws_rowconv_new(&rd, w, b, NULL);
}

/* xp[r][i] = pre(x[n, i, r - P_L]) for r < R, rows outside x left as they are (zero) */
void ws_conv_dense_fill_xp(const ws_conv_desc *d, const ws_conv_args *a, int n, long long R,
                           float *xp, float *tmp)
{
    const int C = d->c_in, T = a->t_in;
    const long long u0 = d->pad_l < R ? d->pad_l : R;                   /* rows [0, u0): zero */
    const long long u1 = d->pad_l + (long long)T < R ? d->pad_l + T : R; /* [u0, u1): x */
    if (u1 <= u0)
        return;
    float *xr = xp + (size_t)u0 * C;
    if (d->x_layout == WS_NLC) {
        ws_conv_ld_row(xr, a->x, d->x_type, (size_t)n * T * C, 1, (u1 - u0) * C);
    } else
        for (int i = 0; i < C; i++) { /* NCL row i becomes column i */
            ws_conv_ld_row(tmp, a->x, d->x_type, ((size_t)n * C + i) * T, 1, u1 - u0);
            for (long long u = 0; u < u1 - u0; u++)
                xr[(size_t)u * C + i] = tmp[u];
        }
    if (d->pre != WS_ACT_NONE)
        ws_act_row(xr, (int)((u1 - u0) * C), NULL, d->pre);
}

typedef struct {
    const struct ws_rowconv *rc;
    const float *xp, *add;
    float *y;
    int ldy, t_out, rb;
    long long nblk;
} rows_job;

static void rows_task(void *ctx, int ti, int nt)
{
    const rows_job *J = ctx;
    for (long long b = J->nblk * ti / nt; b < J->nblk * (ti + 1) / nt; b++) {
        const int r0 = (int)b * J->rb, nr = J->t_out - r0 < J->rb ? J->t_out - r0 : J->rb;
        ws_rowconv_run_rows(J->rc, J->xp, r0, nr, J->y, J->ldy, J->add, 1);
    }
}

void ws_conv_dense_rows(const struct ws_rowconv *rc, const float *xp, int t_out, float *y, int ldy,
                        const float *add, int n_threads)
{
    /* the block size depends on T_out alone, never on the thread count */
    rows_job J = {rc, xp, add, y, ldy, t_out, t_out < 1024 ? 16 : 128, 0};
    J.nblk = (t_out + J.rb - 1) / J.rb;
    const int cap = n_threads < 256 ? n_threads : 256;
    ws_parallel((int)(J.nblk < cap ? J.nblk : cap), rows_task, &J);
}

int ws_conv_dense_fwd(const ws_conv_desc *d, const struct ws_rowconv *rc, const ws_conv_args *a,
                      int t_out, int n_threads, ws_err *err)
{
    const int C = d->c_in, O = d->c_out, T = a->t_in;
    const long long R = (long long)d->stride * (t_out - 1) + (long long)d->dilation * (d->k - 1) + 1;
    if (R * C > MAX_XP_FLOATS)
        return 1; /* too big a copy: the caller takes the direct kernel */
    const int direct_y = d->y_layout == WS_NLC && d->y_type == WS_F32;
    float *xp = malloc((size_t)R * C * sizeof(float));
    float *ys = direct_y ? NULL : malloc((size_t)t_out * O * sizeof(float));
    size_t ntmp = (size_t)T > 2 * (size_t)t_out ? (size_t)T : 2 * (size_t)t_out;
    ntmp = ntmp > (size_t)O ? ntmp : (size_t)O; /* an x row, a y row and its add, a y time */
    float *tmp = malloc(ntmp * sizeof(float));
    if (!xp || (!direct_y && !ys) || !tmp) {
        free(xp), free(ys), free(tmp);
        return ws_errf(err, "ws_conv_run: out of memory for the padded input (%lld rows x c_in %d)",
                       R, C);
    }
    memset(xp, 0, (size_t)R * C * sizeof(float));
    for (int n = 0; n < a->n; n++) {
        ws_conv_dense_fill_xp(d, a, n, R, xp, tmp);
        const float *add = a->add ? (const float *)a->add + (size_t)n * a->add_batch_stride : NULL;
        if (direct_y) {
            ws_conv_dense_rows(rc, xp, t_out, (float *)a->y + (size_t)n * t_out * O, O, add,
                               n_threads);
            continue;
        }
        ws_conv_dense_rows(rc, xp, t_out, ys, O, NULL, n_threads);
        const size_t abase = (size_t)n * (size_t)a->add_batch_stride;
        if (d->y_layout == WS_NLC) {
            for (int t = 0; t < t_out; t++) {
                float *row = ys + (size_t)t * O;
                if (a->add) {
                    ws_conv_ld_row(tmp, a->add, d->y_type, abase + (size_t)t * O, 1, O);
                    for (int o = 0; o < O; o++)
                        row[o] += tmp[o];
                }
                ws_conv_st_row(a->y, d->y_type, ((size_t)n * t_out + t) * O, 1, row, O);
            }
        } else {
            for (int o = 0; o < O; o++) {
                for (int t = 0; t < t_out; t++)
                    tmp[t] = ys[(size_t)t * O + o];
                if (a->add) {
                    float *ad = tmp + t_out;
                    ws_conv_ld_row(ad, a->add, d->y_type, abase + (size_t)o * t_out, 1, t_out);
                    for (int t = 0; t < t_out; t++)
                        tmp[t] += ad[t];
                }
                ws_conv_st_row(a->y, d->y_type, ((size_t)n * O + o) * t_out, 1, tmp, t_out);
            }
        }
    }
    free(xp), free(ys), free(tmp);
    return 0;
}

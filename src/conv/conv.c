/* conv.c - conv1d as K shifted-row GEMMs (see conv.h for math and layouts).
 *
 * For tap k the input rows used by output rows t = 0..T_out-1 are
 * s*t + dil*k of the padded input: a matrix view starting at row dil*k with
 * leading dimension s*IC. So
 *   Y[t0:t1, :] = sum_k  X_k[t0:t1, :] (rows of xp) * W_k   (W_k = w[:, :, k]^T, [IC][OC])
 * with no im2col copy: the sgemm packs blocks of the K views' rows side by side
 * (ws_sgemm_conv), one product of depth K*IC. Output rows are split into one
 * contiguous range per thread and walked in blocks of ROW_BLOCK rows; the epilogue
 * (bias, GELU, add) runs on each tile of the product as its last sums leave the registers.
 * Validated by tests/test_conv.c (delta, linearity, shift, oracle).
 */
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "conv.h"

#define ROW_BLOCK 256 /* rows per sgemm call: the block of y stays in L2 across the K taps */

struct ws_rowconv {
    ws_rowconv_desc d;
    float *wk;   /* [K][IC][OC]: wk[(k*IC + i)*OC + o] = w[(o*IC + i)*K + k] */
    float *wpk;  /* wk as one [K*IC][OC] matrix, packed for ws_sgemm_conv */
    float *bias; /* [OC] or NULL */
};

int ws_rowconv_out_len(const ws_rowconv_desc *c, int t_in)
{
    long long span = (long long)c->dilation * (c->kernel - 1) + 1;
    long long num = (long long)t_in + 2LL * c->pad - span;
    if (t_in < 1 || num < 0)
        return 0;
    return (int)(num / c->stride + 1);
}

ws_rowconv *ws_rowconv_new(const ws_rowconv_desc *c, const float *w, const float *b, ws_err *err)
{
    if (c->in_ch < 1 || c->out_ch < 1 || c->kernel < 1 || c->stride < 1 || c->dilation < 1 ||
        c->pad < 0)
        return ws_errf(err, "conv1d: invalid shape (in %d, out %d, k %d, s %d, d %d, p %d)",
                       c->in_ch, c->out_ch, c->kernel, c->stride, c->dilation, c->pad), NULL;
    ws_rowconv *cv = calloc(1, sizeof *cv);
    size_t nw = (size_t)c->kernel * c->in_ch * c->out_ch;
    if (!cv || !(cv->wk = malloc(nw * sizeof(float))) ||
        (b && !(cv->bias = malloc((size_t)c->out_ch * sizeof(float))))) {
        ws_rowconv_free(cv);
        return ws_errf(err, "out of memory for conv weights"), NULL;
    }
    cv->d = *c;
    const int K = c->kernel, IC = c->in_ch, OC = c->out_ch;
    for (int o = 0; o < OC; o++)
        for (int i = 0; i < IC; i++)
            for (int k = 0; k < K; k++)
                cv->wk[((size_t)k * IC + i) * OC + o] = w[((size_t)o * IC + i) * K + k];
    if (b)
        memcpy(cv->bias, b, (size_t)OC * sizeof(float));
    if (!(cv->wpk = aligned_alloc(64, (ws_sgemm_packed_floats(K * IC, OC) + 15) / 16 * 16 * sizeof(float)))) {
        ws_rowconv_free(cv);
        return ws_errf(err, "out of memory for conv weights"), NULL;
    }
    ws_sgemm_pack(K * IC, OC, cv->wk, OC, cv->wpk);
    return cv;
}

void ws_rowconv_free(ws_rowconv *cv)
{
    if (!cv)
        return;
    free(cv->wk);
    free(cv->wpk);
    free(cv->bias);
    free(cv);
}

typedef struct {
    const ws_rowconv *cv;
    const float *xp;
    float *y;
    int ldy;
    int row0, n_rows; /* output rows [row0, row0 + n_rows) */
    int col0, n_cols; /* output columns [col0, col0 + n_cols) */
    const float *add;
} conv_job;

static void conv_worker(void *ctx, int ti, int nt)
{
    const conv_job *j = ctx;
    const ws_rowconv_desc *c = &j->cv->d;
    const int IC = c->in_ch, OC = c->out_ch, s = c->stride;
    int per = (j->n_rows + nt - 1) / nt;
    int r0 = j->row0 + per * ti, r1 = r0 + per < j->row0 + j->n_rows ? r0 + per : j->row0 + j->n_rows;
    const int c0 = j->col0, K = c->kernel * IC;
    for (int t0 = r0; t0 < r1; t0 += ROW_BLOCK) {
        int mb = r1 - t0 < ROW_BLOCK ? r1 - t0 : ROW_BLOCK;
        float *y = j->y + (size_t)t0 * j->ldy + c0;
        /* the K taps as one product: tap k of row t is row s*t + dil*k of xp */
        const ws_sgemm_epi e = { j->cv->bias ? j->cv->bias + c0 : NULL, c->act,
                                 j->add ? j->add + (size_t)t0 * OC + c0 : NULL, OC };
        ws_sgemm_conv(mb, j->n_cols, c->kernel, IC, j->xp + (size_t)s * t0 * IC, (long)s * IC,
                      (long)c->dilation * IC, ws_sgemm_packed_col(K, j->cv->wpk, c0), 0.0f, y, j->ldy, &e);
    }
}

void ws_rowconv_run_rows(const ws_rowconv *cv, const float *xp, int row0, int n_rows, float *y, int ldy,
                      const float *add, int n_threads)
{
    if (n_rows < 1)
        return;
    int nt = n_threads < 1 ? 1 : n_threads;
    if (nt > n_rows / 16 + 1) /* tiny inputs: not worth a thread */
        nt = n_rows / 16 + 1;
    conv_job job = {cv, xp, y, ldy, row0, n_rows, 0, cv->d.out_ch, add};
    ws_parallel(nt, conv_worker, &job);
}

void ws_rowconv_run_block(const ws_rowconv *cv, const float *xp, int row0, int n_rows, int col0,
                          int n_cols, float *y, int ldy, const float *add)
{
    if (n_rows < 1 || n_cols < 1)
        return;
    conv_job job = {cv, xp, y, ldy, row0, n_rows, col0, n_cols, add};
    conv_worker(&job, 0, 1);
}

void ws_rowconv_run(const ws_rowconv *cv, const float *xp, int t_in, float *y, int ldy, const float *add,
                 int n_threads)
{
    ws_rowconv_run_rows(cv, xp, 0, ws_rowconv_out_len(&cv->d, t_in), y, ldy, add, n_threads);
}

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
 *
 * Minimal filtering (Winograd's F(2,3) for stride 1; for stride 2, F(2,2) on the even
 * input rows, which carry taps 0 and 2, and tap 1 on the odd rows): output rows in pairs,
 * 4 or 5 products of depth IC per pair instead of 6 (mf_new has the algebra), each output
 * computed from its own three input rows alone. Used by the engine's dense FWD
 * (cpu_dense.c) where the plan asks for it (minfilt) and the shape allows;
 * WS_CPU_WINOGRAD=0 turns it off. The error stays within the fp32 bounds
 * (tests/test_conv.c: minfilt.*).
 * Validated by tests/test_conv.c (delta, linearity, shift, oracle).
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

#include "blas.h"
#include "conv.h"

#define ROW_BLOCK 256 /* rows per sgemm call: the block of y stays in L2 across the K taps */
#define HUGE_BYTES ((size_t)2 << 20)
#define MF_CB 512 /* minimal filtering's columns at a time */

struct ws_rowconv {
    ws_rowconv_desc d;
    float *wk;   /* [K][IC][OC]: wk[(k*IC + i)*OC + o] = w[(o*IC + i)*K + k] */
    float *wpk;  /* wk as one [K*IC][OC] matrix, packed for ws_sgemm_conv */
    float *bias; /* [OC] or NULL */
    /* minimal filtering (wr rows a group, 2; 0: none): packed [IC][OC] weights w0, w2 (W0
     * and W2, the first and the second row's own products), g1 (the shared product P1), g2
     * (stride 1: P2) and w1 (stride 2: W1, every row's product with its odd input row) */
    int wr;
    float *w0, *w2, *w1, *g1, *g2;
};

/* Minimal filtering where it lowers the multiply-adds and the products stay large enough to
 * run near the core's peak: K 3, dilation 1, stride 1 or 2, IC and OC at least MF_MIN_CH.
 * WS_CPU_WINOGRAD=0 turns it off (every conv then sums its taps directly). */
#define MF_MIN_CH 32

static int mf_wanted(const ws_rowconv_desc *c)
{
    const char *e = getenv("WS_CPU_WINOGRAD");
    if (!c->minfilt || (e && e[0] == '0' && !e[1]))
        return 0;
    return c->kernel == 3 && c->dilation == 1 && (c->stride == 1 || c->stride == 2) && c->pad == 0 &&
           c->in_ch >= MF_MIN_CH && c->out_ch >= MF_MIN_CH;
}

/* n floats for packed weights, 64-byte aligned; from 2 MiB on, in whole 2 MiB pages the
 * kernel is asked to back with huge pages (the micro-kernels stream the panels: one TLB
 * entry for 2 MiB, not 512; the minimal filtering of a 1280-channel conv runs about 4 %
 * faster) */
static float *pk_alloc(size_t n)
{
    size_t by = (n + 15) / 16 * 16 * sizeof(float);
    if (by < HUGE_BYTES)
        return aligned_alloc(64, by);
    by = (by + HUGE_BYTES - 1) / HUGE_BYTES * HUGE_BYTES;
    float *p = aligned_alloc(HUGE_BYTES, by);
#ifdef MADV_HUGEPAGE
    if (p)
        madvise(p, by, MADV_HUGEPAGE); /* a hint: where it is refused, small pages */
#endif
    return p;
}

/* [IC][OC] weights packed for ws_sgemm_conv */
static float *mf_pack(const float *m, int IC, int OC)
{
    float *pk = pk_alloc(ws_sgemm_packed_floats(IC, OC));
    if (pk)
        ws_sgemm_pack(IC, OC, m, OC, pk);
    return pk;
}

/* The transformed weights. Output rows in pairs (2j, 2j+1).
 * Stride 1, F(2,3), from the input rows d_i = xp[2j + i], i < 4:
 *   D0 = d0 - d2,  D3 = d3 - d1,  D1 = d1 + d2,  D2 = d2 - d1,
 *   P1 = D1 (W0 + W1 + W2)/2,  P2 = D2 (W0 - W1 + W2)/2,
 *   y0 = P1 + P2 + D0 W0,  y1 = P1 - P2 + D3 W2:  4 products of IC (direct: 6).
 * Stride 2: the even rows e_i = xp[4j + 2i], i < 3, carry taps 0 and 2 (a 2-tap filter over
 * them, F(2,2)), the odd rows o_r = xp[4j + 2r + 1] tap 1:
 *   P1 = e1 (W0 + W2),  y0 = P1 + (e0 - e1) W0 + o0 W1,  y1 = P1 + (e2 - e1) W2 + o1 W1:
 *   5 products of IC (direct: 6).
 * Summed in that order. Each row's sums involve its own three input rows alone (the
 * terms that cancel are its own), so an input row never reaches an output that does not
 * read it, not even as rounding (F(3,2) over three rows would save more, 7 of 9, but y0 and
 * y2 would then carry a neighbour's row in terms that cancel: an Inf or a 1e20 there would
 * spoil them). The transformed weights are rounded once from double. Where a pair's
 * inputs are equal (a constant run), D0 = D3 = D2 = 0 (e0 - e1 = e2 - e1 = 0) and both rows
 * have the bits of P1 (+ o W1). */
static int mf_new(ws_rowconv *cv)
{
    const int IC = cv->d.in_ch, OC = cv->d.out_ch, s = cv->d.stride;
    const size_t n = (size_t)IC * OC;
    const float *W = cv->wk; /* tap k at W + k*n */
    float *h = malloc(2 * n * sizeof(float));
    if (!h)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const double w0 = W[i], w1 = W[n + i], w2 = W[2 * n + i];
        h[i] = (float)(s == 1 ? (w0 + w1 + w2) * 0.5 : w0 + w2);
        h[n + i] = (float)((w0 - w1 + w2) * 0.5); /* stride 1 only */
    }
    cv->wr = 2;
    cv->g1 = mf_pack(h, IC, OC);
    cv->g2 = s == 1 ? mf_pack(h + n, IC, OC) : NULL;
    cv->w0 = mf_pack(W, IC, OC);
    cv->w2 = mf_pack(W + 2 * n, IC, OC);
    cv->w1 = s == 2 ? mf_pack(W + n, IC, OC) : NULL;
    free(h);
    return cv->g1 && cv->w0 && cv->w2 && (s == 1 ? cv->g2 != NULL : cv->w1 != NULL) ? 0 : -1;
}

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
    if (!(cv->wpk = pk_alloc(ws_sgemm_packed_floats(K * IC, OC)))) {
        ws_rowconv_free(cv);
        return ws_errf(err, "out of memory for conv weights"), NULL;
    }
    ws_sgemm_pack(K * IC, OC, cv->wk, OC, cv->wpk);
    if (mf_wanted(c) && mf_new(cv)) {
        ws_rowconv_free(cv);
        return ws_errf(err, "out of memory for conv weights"), NULL;
    }
    return cv;
}

void ws_rowconv_free(ws_rowconv *cv)
{
    if (!cv)
        return;
    free(cv->wk);
    free(cv->wpk);
    free(cv->bias);
    free(cv->w0);
    free(cv->w1);
    free(cv->w2);
    free(cv->g1);
    free(cv->g2);
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

/* --- minimal filtering ------------------------------------------------------------ */

int ws_rowconv_group_rows(const ws_rowconv *cv)
{
    return cv->wr;
}

size_t ws_rowconv_group_scratch(const ws_rowconv *cv, int ngroups, int n_cols)
{
    return cv->wr ? (size_t)ngroups * (4 * (size_t)cv->d.in_ch + 2 * (size_t)n_cols) + 16 : 0; /* u, p1, p2 */
}

/* The transform and the sums, vectorised in clones for the CPU at hand (adds, subtracts and
 * exact sign flips: the same bits in every clone). The clones stay static: GCC exports a
 * non-static target_clones function's dispatcher whatever the visibility. */
#if defined(__x86_64__) && defined(__GNUC__)
#define MF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MF_CLONES
#endif

/* u = [d0 - d2 | d3 - d1 | d1 + d2 | d2 - d1] of the rows d_i = x + i*step, C floats each */
MF_CLONES static void mf_u(const float *restrict x, size_t step, int C, float *restrict u)
{
    const float *d0 = x, *d1 = x + step, *d2 = x + 2 * step, *d3 = x + 3 * step;
    for (int i = 0; i < C; i++)
        u[i] = d0[i] - d2[i];
    for (int i = 0; i < C; i++)
        u[C + i] = d3[i] - d1[i];
    for (int i = 0; i < C; i++)
        u[2 * C + i] = d1[i] + d2[i];
    for (int i = 0; i < C; i++)
        u[3 * C + i] = d2[i] - d1[i];
}

/* u = [e0 - e1 | e2 - e1 | e1] of the rows e_i = x + i*step, C floats each */
MF_CLONES static void mf_u2(const float *restrict x, size_t step, int C, float *restrict u)
{
    const float *e0 = x, *e1 = x + step, *e2 = x + 2 * step;
    for (int i = 0; i < C; i++)
        u[i] = e0[i] - e1[i];
    for (int i = 0; i < C; i++)
        u[C + i] = e2[i] - e1[i];
    memcpy(u + 2 * C, e1, (size_t)C * sizeof(float));
}

/* o = a + sg*b, sg = +-1 (a - b exactly: the product by -1 is exact) */
MF_CLONES static void mf_sum(const float *restrict a, const float *restrict b, float sg, float *restrict o,
                             int n)
{
    for (int c = 0; c < n; c++)
        o[c] = a[c] + sg * b[c];
}

void ws_rowconv_run_groups(const ws_rowconv *cv, const float *xp, int ngroups, int col0, int n_cols,
                           float *y, int ldy, const float *add, float *scratch)
{
    if (ngroups < 1 || n_cols < 1)
        return;
    const int C = cv->d.in_ch, OC = cv->d.out_ch, s = cv->d.stride, uw = s == 1 ? 4 * C : 3 * C;
    float *u = scratch, *p1 = u + (size_t)ngroups * uw, *p2 = p1 + (size_t)ngroups * n_cols;
    for (int j = 0; j < ngroups; j++) /* pair j reads xp rows 2s*j .. 2s*j + 3 (stride 2: + 4) */
        if (s == 1) /* u = [D0 | D3 | D1 | D2] */
            mf_u(xp + (size_t)2 * j * C, (size_t)C, C, u + (size_t)j * uw);
        else /* u = [e0 - e1 | e2 - e1 | e1] */
            mf_u2(xp + (size_t)4 * j * C, (size_t)2 * C, C, u + (size_t)j * uw);
    /* MF_CB columns at a time (the sgemm's NC), so that the block of y the products write
     * and add to stays in L2 between them (large-v3: 2-3 % faster than all at once) */
    for (int c0 = col0; c0 < col0 + n_cols; c0 += MF_CB) {
        const int nc = col0 + n_cols - c0 < MF_CB ? col0 + n_cols - c0 : MF_CB;
        ws_sgemm_conv(ngroups, nc, 1, C, u + 2 * C, uw, 0, ws_sgemm_packed_col(C, cv->g1, c0), 0.0f, p1, nc,
                      NULL);
        if (s == 1)
            ws_sgemm_conv(ngroups, nc, 1, C, u + 3 * C, uw, 0, ws_sgemm_packed_col(C, cv->g2, c0), 0.0f, p2,
                          nc, NULL);
        for (int j = 0; j < ngroups; j++) /* stride 1: P1 + P2, P1 - P2; stride 2: P1, P1 */
            for (int r = 0; r < 2; r++) {
                float *o = y + ((size_t)2 * j + r) * ldy + c0;
                if (s == 1)
                    mf_sum(p1 + (size_t)j * nc, p2 + (size_t)j * nc, r ? -1.0f : 1.0f, o, nc);
                else
                    memcpy(o, p1 + (size_t)j * nc, (size_t)nc * sizeof(float));
            }
        /* each row's own product, then (stride 2) tap 1 on every row; the epilogue with the
         * last product a row gets */
        const ws_sgemm_epi e = { cv->bias ? cv->bias + c0 : NULL, cv->d.act, add ? add + c0 : NULL, OC };
        const ws_sgemm_epi e0 = { e.bias, e.act, e.add, 2L * OC };
        const ws_sgemm_epi e1 = { e.bias, e.act, add ? add + OC + c0 : NULL, 2L * OC };
        ws_sgemm_conv(ngroups, nc, 1, C, u, uw, 0, ws_sgemm_packed_col(C, cv->w0, c0), 1.0f, y + c0, 2 * ldy,
                      s == 1 ? &e0 : NULL);
        ws_sgemm_conv(ngroups, nc, 1, C, u + C, uw, 0, ws_sgemm_packed_col(C, cv->w2, c0), 1.0f,
                      y + (size_t)ldy + c0, 2 * ldy, s == 1 ? &e1 : NULL);
        if (s == 2) /* o_r = xp row 2t + 1 of output row t = 2j + r */
            ws_sgemm_conv(2 * ngroups, nc, 1, C, xp + C, 2L * C, 0, ws_sgemm_packed_col(C, cv->w1, c0), 1.0f,
                          y + c0, ldy, &e);
    }
}

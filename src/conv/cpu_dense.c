/* cpu_dense.c - the conv engine's dense FWD (groups 1) as shifted-row sgemm (BWD: cpu_dense_bwd.c).
 *
 *   y[n,o,t] = act( b[o] + sum_i sum_k w[o,i,k] * pre(x[n, i, S*t + D*k - P_L]) ) + add[n,o,t]
 *
 * One task per (item n, block of RB output rows t0..): the input rows the block reads are
 * copied (converted, pre applied) to a zero-padded time-major buffer
 *   xp[j][i] = pre(x[n, i, S*t0 - P_L + j]),  j < S*(RB-1) + D*(K-1) + 1
 * (zero where the time is outside [0, T_in)), so tap k of output row t0 + t is row S*t + D*k
 * and conv.c's ws_rowconv (pad 0, K sgemms over shifted row views, bias and act in its
 * epilogue) computes the block time-major [RB][C_out]: straight into y when y is f32 NLC
 * (add too), else into a scratch then added to and stored in y's type and layout.
 * Sums in float32 in the BLAS's order; blocks of at most RB = 256 rows (more, of at least
 * 128, when N < 8: up to 8 tasks; a multiple of the threads when there are few: fwd_run),
 * each one single-threaded sgemm chain. The sgemm's sums do not depend on the rows of a
 * call, so the bits depend neither on the blocks nor on the thread count.
 * ws_conv_dense_rows does the same over a whole padded item (BWD's z).
 *
 * Minimal filtering (K 3, stride 1 or 2: conv.c, ws_rowconv_run_groups): the rows below
 * T_out - T_out % R are computed in groups of R = 2 (pairs), anchored at row 0; the rest
 * directly. Blocks start on a multiple of 4R rows; where a call's first or last row cuts a
 * group (ws_conv_run_rows), that group is computed whole into the scratch and the rows
 * asked for copied, so that a row's bits never depend on the rows a call covers, the
 * block sizes or the threads.
 *
 * Grouped FWD (1 < G, not depthwise) is G dense convs side by side: group g reads xp's
 * columns [g*Cg, (g+1)*Cg) and writes y's columns [g*Cog, (g+1)*Cog), so the same staged
 * block serves every group and each (group, tap) is one sgemm on a column-offset view of it
 * (weights packed per group once per plan); the same fixed blocks, so the same bits for
 * any thread count. Tested by tests/test_engine.c (the dense and grouped rows).
 */
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "blas.h"
#include "conv.h"
#include "engine.h"

enum {
    MIN_CK = 8,                /* C_in*K below this: the direct kernel */
    MIN_COUT = 4,              /* C_out below this: the direct kernel */
    MIN_GCH = 16,              /* grouped: Cg or Cog below this: the direct kernel (G sgemm
                                * calls of rank Cg per tap and block lose to it there) */
    MAX_XP_FLOATS = 1 << 24,   /* a staged block above 64 MiB (huge S or D): the direct kernel */
    RB = 256,                  /* output rows per task, at most */
    MIN_TASKS = 8,             /* below this many items, blocks shorter than RB, */
    MIN_CW = 64,               /* columns of a task, at least, where rows are split further */
    MIN_RB = 128,              /* down to this: each block's sgemm packs the weights again
                                * (the tiny stem on a 5 s clip, 1 thread: 5.4-5.9 ms with
                                * 128 rows, 5.8-7.7 ms with 32) */
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
                          .act = d->op == WS_CONV_FWD ? d->act : WS_ACT_NONE, /* BWD: z = b + conv */
                          .minfilt = d->op == WS_CONV_FWD};
    return ws_rowconv_new(&rd, w, b, NULL);
}

/* out[j][i] = x[i][j] for j < n, i < C (x: C rows of row stride T; out: row stride C), four
 * rows and four times at a time through 4 x 4 transposes on x86 */
static void ncl_to_rows(float *out, const float *x, long long T, int C, long long n)
{
    int i = 0;
#if defined(__x86_64__)
    for (; i + 4 <= C; i += 4) {
        const float *a = x + (size_t)i * T;
        long long j = 0;
        for (; j + 4 <= n; j += 4) {
            __m128 r0 = _mm_loadu_ps(a + j), r1 = _mm_loadu_ps(a + T + j);
            __m128 r2 = _mm_loadu_ps(a + 2 * T + j), r3 = _mm_loadu_ps(a + 3 * T + j);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(out + (size_t)j * C + i, r0);
            _mm_storeu_ps(out + (size_t)(j + 1) * C + i, r1);
            _mm_storeu_ps(out + (size_t)(j + 2) * C + i, r2);
            _mm_storeu_ps(out + (size_t)(j + 3) * C + i, r3);
        }
        for (; j < n; j++)
            for (int q = 0; q < 4; q++)
                out[(size_t)j * C + i + q] = a[(size_t)q * T + j];
    }
#endif
    for (; i < C; i++)
        for (long long j = 0; j < n; j++)
            out[(size_t)j * C + i] = x[(size_t)i * T + j];
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
    rows_job J = {rc, xp, add, y, ldy, t_out, RB, 0};
    J.nblk = (t_out + J.rb - 1) / J.rb;
    const int cap = n_threads < 256 ? n_threads : 256;
    ws_parallel((int)(J.nblk < cap ? J.nblk : cap), rows_task, &J);
}

/* grouped FWD's packed weights: wk [G][K][Cg][Cog], b [C_out] or NULL, the FWD act */
struct ws_gpack {
    int g;
    ws_act act;
    float *wk, *b;
};

typedef struct {
    const ws_conv_desc *d;
    const ws_conv_args *a;
    const struct ws_rowconv *rc; /* groups 1 */
    const struct ws_gpack *gp;   /* groups > 1 (rc NULL) */
    int t_out, nblk, rb; /* nblk blocks of output rows per item (blk_start), rb rows at most */
    int unit;            /* block starts are multiples of unit rows (but the first) */
    int ncb, cw;         /* column blocks per row block (dense: more when the row blocks are
                          * fewer than the threads), cw columns each (a multiple of 32) */
    int r_first, r_end;  /* output rows [r_first, r_end) are computed (all: 0, t_out) */
    long long xrows;     /* staged input rows per task: S*(rb-1) + D*(K-1) + 1, with
                          * minimal filtering S*(rb+2R-3) + D*(K-1) + 1 */
    long long ntmp;      /* floats of tmp */
    size_t tlen;         /* per task, in its thread's scratch: xrows*C_in (xp), (rb+2R)*C_out
                          * (y block), tmp, minimal filtering's scratch */
    long long items;
    int failed;          /* a task found no memory for its scratch (set atomically, read
                          * after ws_parallel returns; y is then incomplete) */
} fwd_job;

/* y[t][O] (row stride O) for the block's nr output rows, columns [c0, c0 + cw), from its
 * staged xp[][C_in]: act(b + conv) + add (add [nr][O] or NULL), single-threaded */
static void block_rows(const fwd_job *J, const float *xp, int nr, int c0, int cw, float *y,
                       const float *add)
{
    if (J->rc) {
        ws_rowconv_run_block(J->rc, xp, 0, nr, c0, cw, y, J->d->c_out, add);
        return;
    }
    /* group g is a dense conv from columns [g*Cg, (g+1)*Cg) of xp to columns
     * [g*Cog, (g+1)*Cog) of y: per tap k, Y_g[nr x Cog] += X_gk[nr x Cg] * W_gk, where X_gk
     * starts at row D*k, column g*Cg of xp with row stride S*C_in (the shifted-row view of
     * the dense path, offset by the group's columns) and W_gk[j][oo] = w[g*Cog + oo, j, k] */
    const struct ws_gpack *p = J->gp;
    const int C = J->d->c_in, O = J->d->c_out, S = J->d->stride, D = J->d->dilation;
    const int G = p->g, Cg = C / G, Cog = O / G, K = J->d->k;
    for (int g = 0; g < G; g++)
        for (int k = 0; k < K; k++)
            ws_sgemm(nr, Cog, Cg, 1.0f, xp + (size_t)D * k * C + (size_t)g * Cg, S * C,
                     p->wk + ((size_t)g * K + k) * Cg * Cog, Cog, k ? 1.0f : 0.0f,
                     y + (size_t)g * Cog, O);
    ws_bias_act_rows(y, nr, O, O, p->b, p->act, add);
}

/* the first output row of block b of an item (b = nblk: the end of the rows) */
static int blk_start(const fwd_job *J, int b)
{
    if (b <= 0)
        return J->r_first;
    if (b >= J->nblk)
        return J->r_end;
    const long long rows = J->r_end - J->r_first;
    const long long s = (J->r_first + rows * b / J->nblk) / J->unit * J->unit;
    return (int)(s > J->r_first ? s : J->r_first);
}

/* xp rows for output rows [r0, r0 + nr) of item n: row j is x time S*r0 - P_L + j, zero
 * outside x, pre applied */
static void stage_rows(const fwd_job *J, int n, int r0, int nr, float *xp, float *tmp)
{
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int C = d->c_in, T = a->t_in, S = d->stride;
    /* rows [ja, jb) lie inside x */
    const long long nrows = (long long)S * (nr - 1) + (long long)d->dilation * (d->k - 1) + 1;
    const long long base = (long long)S * r0 - d->pad_l;
    long long ja = base < 0 ? -base : 0, jb = (long long)T - base;
    ja = ja < nrows ? ja : nrows;
    jb = jb < nrows ? jb : nrows;
    jb = jb > ja ? jb : ja;
    memset(xp, 0, (size_t)ja * C * sizeof(float));
    memset(xp + (size_t)jb * C, 0, (size_t)(nrows - jb) * C * sizeof(float));
    if (jb <= ja)
        return;
    float *xr = xp + (size_t)ja * C;
    if (d->x_layout == WS_NLC)
        ws_conv_ld_row(xr, a->x, d->x_type, ((size_t)n * T + (size_t)(base + ja)) * C, 1,
                       (jb - ja) * C);
    else if (d->x_type == WS_F32) /* NCL row i becomes column i */
        ncl_to_rows(xr, (const float *)a->x + (size_t)n * C * T + (size_t)(base + ja), T, C,
                    jb - ja);
    else
        for (int i = 0; i < C; i++) {
            ws_conv_ld_row(tmp, a->x, d->x_type, ((size_t)n * C + i) * T + (size_t)(base + ja), 1,
                           jb - ja);
            for (long long j = 0; j < jb - ja; j++)
                xr[(size_t)j * C + i] = tmp[j];
        }
    if (d->pre != WS_ACT_NONE)
        ws_act_row(xr, (int)((jb - ja) * C), NULL, d->pre);
}

/* Rows [e0, e0 + ne) of a dense conv with minimal filtering (R rows a group, e0 a multiple
 * of R where it is below tw): the whole groups below tw = T_out - T_out % R by groups, the
 * rest directly; y and add at row e0 (row stride O) */
static void rows_grouped(const fwd_job *J, const float *xp, int e0, int ne, int c0, int cw, float *y,
                         const float *add, float *gs)
{
    const int R = ws_rowconv_group_rows(J->rc), tw = J->t_out / R * R;
    int done = 0;
    if (e0 < tw) {
        const int ng = ((e0 + ne < tw ? e0 + ne : tw) - e0) / R;
        ws_rowconv_run_groups(J->rc, xp, ng, c0, cw, y, J->d->c_out, add, gs);
        done = ng * R;
    }
    if (done < ne)
        ws_rowconv_run_block(J->rc, xp, done, ne - done, c0, cw, y, J->d->c_out, add);
}

/* one task: output rows [r0, r0 + nr) of item n */
static void fwd_task(void *ctx, int ti, int nt)
{
    const fwd_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int C = d->c_in, O = d->c_out;
    const int R = J->rc ? ws_rowconv_group_rows(J->rc) : 0;
    float *xp = ws_scratch_take(J->tlen * sizeof(float));
    if (!xp) {
        __atomic_store_n(&((fwd_job *)ctx)->failed, 1, __ATOMIC_RELAXED); /* read after the join */
        return;
    }
    float *ys = xp + (size_t)J->xrows * C, *tmp = ys + (size_t)(J->rb + 2 * R) * O;
    float *gs = tmp + J->ntmp; /* minimal filtering's scratch */
    for (long long it = J->items * ti / nt; it < J->items * (ti + 1) / nt; it++) {
        const long long rbk = it / J->ncb; /* (item, row block), then the column block */
        const int n = (int)(rbk / J->nblk), r0 = blk_start(J, (int)(rbk % J->nblk));
        const int nr = blk_start(J, (int)(rbk % J->nblk) + 1) - r0;
        if (nr < 1)
            continue;
        const int c0 = (int)(it % J->ncb) * J->cw, cw = O - c0 < J->cw ? O - c0 : J->cw;
        /* with minimal filtering, a group of R rows is computed whole wherever the call's
         * rows or the block cut it (rows [e0, e1), into ys), so that every row has the bits
         * of its place in its group whatever rows a call or a block covers */
        int e0 = r0, e1 = r0 + nr;
        if (R) {
            const int tw = J->t_out / R * R;
            e0 = e0 < tw ? e0 / R * R : e0;
            e1 = e1 < tw ? (e1 + R - 1) / R * R : e1;
        }
        stage_rows(J, n, e0, e1 - e0, xp, tmp);
        const size_t abase = (size_t)n * (size_t)a->add_batch_stride;
        const float *add = a->add ? (const float *)a->add + abase + (size_t)e0 * O : NULL;
        if (d->y_layout == WS_NLC && d->y_type == WS_F32) { /* straight into y, add there too */
            float *y = (float *)a->y + ((size_t)n * J->t_out + r0) * O;
            if (!R) {
                block_rows(J, xp, nr, c0, cw, y, add);
                continue;
            }
            if (e0 == r0 && e1 == r0 + nr) {
                rows_grouped(J, xp, e0, nr, c0, cw, y, add, gs);
                continue;
            }
            rows_grouped(J, xp, e0, e1 - e0, c0, cw, ys, add, gs);
            for (int t = 0; t < nr; t++)
                memcpy(y + (size_t)t * O + c0, ys + (size_t)(r0 - e0 + t) * O + c0, (size_t)cw * sizeof(float));
            continue;
        }
        if (R)
            rows_grouped(J, xp, e0, e1 - e0, c0, cw, ys, NULL, gs);
        else
            block_rows(J, xp, nr, c0, cw, ys, NULL);
        const float *yb = ys + (size_t)(r0 - e0) * O; /* row r0 */
        if (d->y_layout == WS_NLC) {
            for (int t = 0; t < nr; t++) {
                float *row = (float *)yb + (size_t)t * O + c0;
                if (a->add) {
                    ws_conv_ld_row(tmp, a->add, d->y_type, abase + (size_t)(r0 + t) * O + c0, 1, cw);
                    for (int o = 0; o < cw; o++)
                        row[o] += tmp[o];
                }
                ws_conv_st_row(a->y, d->y_type, ((size_t)n * J->t_out + r0 + t) * O + c0, 1, row, cw);
            }
        } else {
            for (int o = c0; o < c0 + cw; o++) {
                for (int t = 0; t < nr; t++)
                    tmp[t] = yb[(size_t)t * O + o];
                if (a->add) {
                    float *ad = tmp + J->rb;
                    ws_conv_ld_row(ad, a->add, d->y_type, abase + (size_t)o * J->t_out + r0, 1, nr);
                    for (int t = 0; t < nr; t++)
                        tmp[t] += ad[t];
                }
                ws_conv_st_row(a->y, d->y_type, ((size_t)n * O + o) * J->t_out + r0, 1, tmp, nr);
            }
        }
    }
    ws_scratch_give(xp);
}

static int fwd_run(const ws_conv_desc *d, const struct ws_rowconv *rc, const struct ws_gpack *gp,
                   const ws_conv_args *a, int t_out, int r_first, int r_end, int n_threads,
                   ws_err *err)
{
    const int C = d->c_in, O = d->c_out, rows = r_end - r_first;
    fwd_job J = {.d = d, .a = a, .rc = rc, .gp = gp, .t_out = t_out, .rb = RB,
                 .r_first = r_first, .r_end = r_end};
    if (rows < 1)
        return 0;
    /* Blocks of rbmax rows or fewer (minimal filtering: 240, 12 groups of R rows for the
     * micro-kernel's 12 rows); few items: at least MIN_TASKS blocks in all where the rows
     * allow blocks of MIN_RB; few blocks: their count a multiple of the threads. The blocks
     * split the rows evenly, their starts rounded down to a multiple of `unit` rows (4
     * groups), so that only a call's first and last rows can cut a group; a block then has
     * at most rbmax + unit - 1 rows. A row's bits do not depend on its block (the sgemm's
     * sums do not depend on the rows of a call; groups are anchored at row 0), so the
     * blocks may follow the threads. */
    const int R = rc ? ws_rowconv_group_rows(rc) : 0, unit = R > 1 ? 4 * R : 16;
    const int rbmax = R > 1 ? RB - RB % (12 * R) : RB;
    /* whether the staged block is too big for this path is decided from the plan's shape
     * alone (the largest block any call can have), never from the threads, the items or
     * the rows of a call: the direct kernel's bits differ */
    const long long xmax = (long long)d->stride * (rbmax + unit - 1 + (R > 1 ? 2 * R - 2 : 0) - 1) +
                           (long long)d->dilation * (d->k - 1) + 1;
    if (xmax * C > MAX_XP_FLOATS)
        return 1; /* too big a staged block: the caller takes the direct kernel */
    long long nblk = (rows + rbmax - 1) / rbmax;
    if (a->n < MIN_TASKS) {
        long long per_item = (MIN_TASKS + a->n - 1) / a->n, cap = rows / MIN_RB;
        per_item = per_item < cap ? per_item : cap;
        nblk = nblk > per_item ? nblk : per_item;
    }
    const long long tot = (long long)a->n * nblk;
    if (n_threads > 1 && tot < 4LL * n_threads && tot % n_threads)
        nblk = ((tot + n_threads - 1) / n_threads * n_threads + a->n - 1) / a->n;
    J.nblk = (int)(nblk < rows ? nblk : rows);
    J.unit = unit;
    J.rb = 1;
    for (int b = 0; b < J.nblk; b++) {
        const int nr = blk_start(&J, b + 1) - blk_start(&J, b);
        J.rb = nr > J.rb ? nr : J.rb;
    }
    J.xrows = (long long)d->stride * (J.rb + (R > 1 ? 2 * R - 2 : 0) - 1) +
              (long long)d->dilation * (d->k - 1) + 1; /* <= xmax */
    /* Fewer row blocks than threads (one short item on many cores): each row block's
     * columns in ncb blocks of cw columns (at least MIN_CW, a multiple of 32; the last block
     * takes what is left), one task each, so that every thread has work. The columns' sums
     * do not depend on the blocks, so neither do the bits. */
    const long long rblocks = (long long)a->n * J.nblk;
    J.ncb = 1;
    J.cw = O;
    if (rc && rblocks < n_threads && O >= 2 * MIN_CW) {
        long long want = (n_threads + rblocks - 1) / rblocks;
        want = want < O / MIN_CW ? want : O / MIN_CW;
        J.cw = (int)((O + want - 1) / want + WS_SGEMM_COL_ALIGN - 1) / WS_SGEMM_COL_ALIGN * WS_SGEMM_COL_ALIGN;
        J.ncb = (O + J.cw - 1) / J.cw;
    }
    J.items = rblocks * J.ncb;
    long long ntmp = J.xrows > 2 * J.rb ? J.xrows : 2 * J.rb;
    ntmp = ntmp > O ? ntmp : O; /* an x row, a y row and its add, a y time */
    J.ntmp = ntmp;
    J.tlen = (size_t)J.xrows * C + (size_t)(J.rb + 2 * R) * O + (size_t)ntmp +
             (R ? ws_rowconv_group_scratch(rc, (J.rb + 2 * R) / R, O) : 0);
    const int cap = n_threads < 256 ? n_threads : 256;
    const int nt = (int)(J.items < cap ? J.items : cap);
    ws_parallel(nt, fwd_task, &J);
    if (__atomic_load_n(&J.failed, __ATOMIC_RELAXED))
        return ws_errf(err, "ws_conv_run: out of memory for the staged input (%lld rows x c_in %d)",
                       J.xrows, C);
    return 0;
}

int ws_conv_dense_fwd(const ws_conv_desc *d, const struct ws_rowconv *rc, const ws_conv_args *a,
                      int t_out, int n_threads, ws_err *err)
{
    return fwd_run(d, rc, NULL, a, t_out, 0, t_out, n_threads, err);
}

int ws_conv_dense_fwd_rows(const ws_conv_desc *d, const struct ws_rowconv *rc,
                           const ws_conv_args *a, int t_out, int t0, int nt, int n_threads,
                           ws_err *err)
{
    return fwd_run(d, rc, NULL, a, t_out, t0, t0 + nt, n_threads, err);
}

/* --- grouped FWD: one sgemm per group and tap over the same staged blocks --------- */

int ws_conv_grouped_ok(const ws_conv_desc *d)
{
    const int G = d->groups;
    if (d->op != WS_CONV_FWD || G <= 1 || (G == d->c_in && d->c_in == d->c_out))
        return 0; /* dense, depthwise, or BWD: their own paths */
    const int Cg = d->c_in / G, Cog = d->c_out / G;
    return Cg >= MIN_GCH && Cog >= MIN_GCH;
}

struct ws_gpack *ws_conv_grouped_new(const ws_conv_desc *d, const float *w, const float *b)
{
    const int G = d->groups, K = d->k, Cg = d->c_in / G, Cog = d->c_out / G, O = d->c_out;
    struct ws_gpack *p = calloc(1, sizeof *p);
    const size_t nw = (size_t)O * Cg * K;
    if (!p || !(p->wk = malloc(nw * sizeof(float))) ||
        (b && !(p->b = malloc((size_t)O * sizeof(float))))) {
        ws_conv_grouped_free(p);
        return NULL;
    }
    p->g = G;
    p->act = d->act;
    /* wk[g][k][j][oo] = w[g*Cog + oo][j][k]: W_gk row-major [Cg][Cog] */
    for (int g = 0; g < G; g++)
        for (int oo = 0; oo < Cog; oo++)
            for (int j = 0; j < Cg; j++)
                for (int k = 0; k < K; k++)
                    p->wk[(((size_t)g * K + k) * Cg + j) * Cog + oo] =
                        w[(((size_t)g * Cog + oo) * Cg + j) * K + k];
    if (b)
        memcpy(p->b, b, (size_t)O * sizeof(float));
    return p;
}

void ws_conv_grouped_free(struct ws_gpack *p)
{
    if (!p)
        return;
    free(p->wk);
    free(p->b);
    free(p);
}

int ws_conv_grouped_fwd(const ws_conv_desc *d, const struct ws_gpack *gp, const ws_conv_args *a,
                        int t_out, int n_threads, ws_err *err)
{
    return fwd_run(d, NULL, gp, a, t_out, 0, t_out, n_threads, err);
}

/* cpu_dw_states.c - the conv engine's packed sequences and carried state, FWD and BWD, for
 * depthwise causal descriptors (G = C_in = C_out = C, S 1, P = P_L = D*(K-1), P_R 0, so
 * T_out = T_in = T), any layouts and storage types. ws_conv_run (cpu.c) comes here for a
 * call that gives any of seq_idx, initial_states, final_states, dinitial_states, after
 * desc.c has refused every other use of them (another descriptor, states with D != 1,
 * seq_idx with a state, final_states in BWD, dinitial_states in FWD); calls without them
 * never come here, so the other kernels carry no test for them.
 *
 * Semantics (include/ws_conv.h, docs/conv-engine.md). Tap k of output t reads position
 * p = t + D*k - P (p <= t) and sees
 *   v(t, k) = pre(x[n,c,p])                 p >= 0, and seq_idx NULL or seq[n][p] == seq[n][t]
 *           = pre(init[n][c][p + K-1])      p < 0 and initial_states given (D is 1 then)
 *           = 0                             otherwise (another sequence, or no state)
 *   FWD  y[n,c,t] = act(b[c] + sum_k w[c,k] * v(t,k)) + add[n,c,t], and y = 0 exactly (no
 *        bias, act or add) where seq[n][t] < 0 (padding).
 *        final[n][c][j] = x[n,c,T-(K-1)+j] as stored (its bits), or where that position is
 *        negative init[n][c][T+j] (0 without initial_states). Written after y, so
 *        final_states may be the buffer initial_states is (a chunk's state updated in place).
 *   BWD  L = sum(y * dy); gz = dy * act'(z), z = b + the sum above; gz = 0 where seq < 0
 *        (dy ignored there), so padding feeds no tap and its dx is 0.
 *        dx[n,c,u]      = sum_k w[c,k] * gz[n,c,u+P-D*k]  over the t = u+P-D*k < T of u's sequence
 *        dinit[n][c][j] = sum_k w[c,k] * gz[n,c,j-k]      over j-k >= 0 (the taps that read
 *                         position j-(K-1)); defined whether initial_states is given or not
 *        dw[c,k] = sum_n sum_t gz[n,c,t] * v(t,k),   db[c] = sum_n sum_t gz[n,c,t]
 *
 * Bits. A chunked run (each chunk's initial_states the previous chunk's final_states) gives
 * bit for bit the y of one run over the whole sequence, and a packed batch the y of its
 * sequences run one by one, because an output is formed here with the float32 operations of
 * the other depthwise kernels (cpu_dw.c, cpu_dw_ncl.c, cpu_direct.c) and in their order:
 * acc = +0, acc += w[k] * v(t,k) for k = 0..K-1 (a float32 product, then a float32 add: the
 * engine is compiled without contraction), then acc + b[c], act, + add (gelu.c's epilogue,
 * through ws_act_row), then the one rounding to y_type. A tap that sees 0 adds a signed zero,
 * which leaves acc as the kernels that skip such a tap leave it (acc starts at +0 and so is
 * never -0). The one difference left: an output whose sum is exactly -0 in cpu_dw_ncl.c
 * (which starts from its first product) with a bias of exactly -0.0f. pre is the same
 * elementwise function on x, states and all.
 *
 * Method: tasks (n, block of TB times, block of CW channels). A task stages, for each tap k,
 * the TB values v(t, k) its outputs see (one window of x per tap: the scratch is K*CW*TB
 * floats whatever the dilation), pre applied, states in front, masked by seq_idx; each
 * channel's outputs are then K multiply-adds over contiguous rows. BWD per batch chunk:
 * gz [nb][C][T] in float32, held whole (as the direct kernel holds its gradient) with each
 * block's dw / db partials (float32 sums over its times in order); then dx and
 * dinitial_states per (n, channel block, block of TB positions), gathering gz over k in
 * order; dw and db are the partials added in double in block order. Every sum has an order
 * fixed by the shapes alone: the bits do not depend on the thread count.
 * Tested by tests/test_engine_states.c (float64 oracle, chunked against whole, packed
 * against separate, finite differences, the adjoint identity, refusals).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

enum {
    CW = 16,                /* channels per task */
    TB_MAX = 256,           /* times per task (fewer when K is large: the scratch is K*CW*TB) */
    CHUNK_FLOATS = 1 << 24, /* BWD: gz per batch chunk (64 MiB), at least one item */
    MAX_THREADS = 256,      /* ws_parallel's cap */
};

typedef struct {
    const ws_conv_desc *d;
    const ws_conv_args *a;
    const float *w, *b; /* w [C][K], b [C] or NULL */
    int C, K, T, tb, ntb, ncb;
    long long D, P;
    size_t xts, yts; /* elements between consecutive times of a channel in x, in y */
    float *tbuf;     /* per thread: K*CW*tb (the staged taps) + 2*tb */
    size_t tlen;
    int n0, nb;        /* BWD: this chunk's batch items [n0, n0 + nb) */
    float *gz;         /* BWD: [nb][C][T] */
    float *part;       /* BWD: [N][ntb][C][K+1], dw (k < K) and db (K) per block; or NULL */
    long long u_lo, u_hi; /* BWD: positions [u_lo, u_hi) of dinitial_states (< 0) and dx (>= 0) */
    long long items;   /* tasks of the current phase */
} st_job;

static size_t lay(ws_layout l, int C, int T, int n, int c, long long t)
{
    return l == WS_NCL ? ((size_t)n * C + c) * T + (size_t)t : ((size_t)n * T + (size_t)t) * C + c;
}

static int threads_for(int n_threads, long long items)
{
    long long t = n_threads < MAX_THREADS ? n_threads : MAX_THREADS;
    return (int)(items < t ? items : t);
}

/* v[(k*CW + cc)*tb + i] = v(t0 + i, k) of channel c0 + cc, for k < K, cc < cw, i < nt */
static void stage(const st_job *J, int n, int t0, int nt, int c0, int cw, float *v)
{
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int K = J->K;
    const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * J->T : NULL;
    unsigned char other[TB_MAX]; /* seq_idx: position read by output t0+i is of another sequence */
    for (int k = 0; k < K; k++) {
        const long long p0 = t0 + J->D * k - J->P; /* the position output t0 reads */
        const int neg = p0 >= 0 ? 0 : -p0 < nt ? (int)-p0 : nt; /* i < neg: p < 0 */
        int any = 0;
        if (seq)
            for (int i = neg; i < nt; i++)
                any |= other[i] = seq[p0 + i] != seq[t0 + i];
        for (int cc = 0; cc < cw; cc++) {
            float *row = v + ((size_t)k * CW + cc) * J->tb;
            const int c = c0 + cc;
            if (neg < nt) {
                ws_conv_ld_row(row + neg, a->x, d->x_type,
                               lay(d->x_layout, J->C, J->T, n, c, p0 + neg), J->xts, nt - neg);
                if (d->pre != WS_ACT_NONE)
                    ws_act_row(row + neg, nt - neg, NULL, d->pre);
                if (any)
                    for (int i = neg; i < nt; i++)
                        if (other[i])
                            row[i] = 0.0f;
            }
            if (neg > 0 && a->initial_states) { /* D = 1: p0 >= -(K-1) */
                ws_conv_ld_row(row, a->initial_states, d->x_type,
                               ((size_t)n * J->C + c) * (size_t)(K - 1) + (size_t)(p0 + K - 1), 1, neg);
                if (d->pre != WS_ACT_NONE)
                    ws_act_row(row, neg, NULL, d->pre);
            } else if (neg > 0)
                memset(row, 0, (size_t)neg * sizeof(float));
        }
    }
}

/* acc[i] = sum_k w[c,k] * v(t0+i, k), k in order from acc = +0 (the file's header) */
static void conv_sum(const st_job *J, const float *v, int cc, int c, int nt, float *acc)
{
    const float *wc = J->w + (size_t)c * J->K;
    memset(acc, 0, (size_t)nt * sizeof(float));
    for (int k = 0; k < J->K; k++) {
        const float *row = v + ((size_t)k * CW + cc) * J->tb;
        const float wk = wc[k];
        for (int i = 0; i < nt; i++)
            acc[i] += wk * row[i];
    }
}

/* the task's (n, time block, channel block) from its index it over [n][ntb][ncb] */
static void task_of(const st_job *J, long long it, int *n, int *t0, int *nt, int *c0, int *cw,
                    int *tblk)
{
    *n = (int)(it / ((long long)J->ntb * J->ncb));
    *tblk = (int)(it / J->ncb % J->ntb);
    const int cb = (int)(it % J->ncb);
    *t0 = *tblk * J->tb;
    *nt = J->T - *t0 < J->tb ? J->T - *t0 : J->tb;
    *c0 = cb * CW;
    *cw = J->C - *c0 < CW ? J->C - *c0 : CW;
}

static void fwd_task(void *ctx, int ti, int nth)
{
    const st_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    float *v = J->tbuf + (size_t)ti * J->tlen;
    float *acc = v + (size_t)J->K * CW * J->tb, *ad = acc + J->tb;
    const long long lo = J->items * ti / nth, hi = J->items * (ti + 1) / nth;
    for (long long it = lo; it < hi; it++) {
        int n, t0, nt, c0, cw, tblk;
        task_of(J, it, &n, &t0, &nt, &c0, &cw, &tblk);
        const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * J->T + t0 : NULL;
        stage(J, n, t0, nt, c0, cw, v);
        for (int cc = 0; cc < cw; cc++) {
            const int c = c0 + cc;
            conv_sum(J, v, cc, c, nt, acc);
            ws_act_row(acc, nt, J->b ? J->b + c : NULL, d->act); /* + b, then act */
            if (a->add) {
                ws_conv_ld_row(ad, a->add, d->y_type,
                               (size_t)n * (size_t)a->add_batch_stride +
                                   lay(d->y_layout, J->C, J->T, 0, c, t0),
                               J->yts, nt);
                for (int i = 0; i < nt; i++)
                    acc[i] += ad[i];
            }
            if (seq)
                for (int i = 0; i < nt; i++)
                    if (seq[i] < 0)
                        acc[i] = 0.0f; /* padding: 0 exactly */
            ws_conv_st_row(a->y, d->y_type, lay(d->y_layout, J->C, J->T, n, c, t0), J->yts, acc, nt);
        }
    }
}

/* final_states: the raw last K-1 inputs (the header's rule); after y, so it may alias the
 * initial states (it reads state T+j, never one already written) */
static void write_final_states(const st_job *J)
{
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const size_t es = ws_dtype_size(d->x_type), k1 = (size_t)J->K - 1;
    const char *x = a->x, *init = a->initial_states;
    char *fin = a->final_states;
    for (int n = 0; n < a->n; n++)
        for (int c = 0; c < J->C; c++)
            for (size_t j = 0; j < k1; j++) {
                const long long p = (long long)J->T - (long long)k1 + (long long)j;
                const size_t s = ((size_t)n * J->C + c) * k1;
                char *dst = fin + (s + j) * es;
                if (p >= 0)
                    memcpy(dst, x + lay(d->x_layout, J->C, J->T, n, c, p) * es, es);
                else if (init)
                    memcpy(dst, init + (s + (size_t)(p + (long long)k1)) * es, es);
                else
                    memset(dst, 0, es);
            }
}

/* the time block and the per-thread scratch; 0, or -1 (overflow) */
static int setup(st_job *J, const ws_conv_desc *d, const ws_conv_args *a, const float *w,
                 const float *b)
{
    J->d = d;
    J->a = a;
    J->w = w;
    J->b = b;
    J->C = d->c_in;
    J->K = d->k;
    J->T = a->t_in;
    J->D = d->dilation;
    J->P = d->pad_l;
    J->xts = d->x_layout == WS_NCL ? 1 : (size_t)J->C;
    J->yts = d->y_layout == WS_NCL ? 1 : (size_t)J->C;
    const int by_k = 16384 / J->K;
    J->tb = by_k >= TB_MAX ? TB_MAX : by_k < 8 ? 8 : by_k;
    J->ntb = (int)(((long long)J->T + J->tb - 1) / J->tb);
    J->ncb = (J->C + CW - 1) / CW;
    size_t t;
    if (ws_mul_size((size_t)J->K * CW, (size_t)J->tb, &t) || ws_add_size(t, 2 * (size_t)J->tb, &t))
        return -1;
    J->tlen = t;
    return 0;
}

int ws_conv_dw_states_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                          const float *b, int n_threads, ws_err *err)
{
    st_job J = {0};
    size_t bytes;
    if (setup(&J, d, a, w, b))
        return ws_errf(err, "ws_conv_run: depthwise scratch (k %d) overflows", d->k);
    J.items = (long long)a->n * J.ntb * J.ncb;
    const int nt = threads_for(n_threads, J.items);
    if (ws_mul_size(J.tlen, (size_t)nt * sizeof(float), &bytes))
        return ws_errf(err, "ws_conv_run: depthwise scratch (k %d) overflows", d->k);
    J.tbuf = malloc(bytes);
    if (!J.tbuf)
        return ws_errf(err, "ws_conv_run: out of memory for depthwise scratch (k %d)", d->k);
    ws_parallel(nt, fwd_task, &J);
    if (a->final_states)
        write_final_states(&J);
    free(J.tbuf);
    return 0;
}

/* BWD phase 1: gz of the chunk's block (n, times, channels) and its dw / db partials */
static void grad_task(void *ctx, int ti, int nth)
{
    const st_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int K = J->K;
    float *v = J->tbuf + (size_t)ti * J->tlen;
    float *acc = v + (size_t)K * CW * J->tb;
    const long long lo = J->items * ti / nth, hi = J->items * (ti + 1) / nth;
    for (long long it = lo; it < hi; it++) {
        int nl, t0, nt, c0, cw, tblk;
        task_of(J, it, &nl, &t0, &nt, &c0, &cw, &tblk);
        const int n = J->n0 + nl;
        const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * J->T + t0 : NULL;
        if (d->act != WS_ACT_NONE || J->part)
            stage(J, n, t0, nt, c0, cw, v);
        for (int cc = 0; cc < cw; cc++) {
            const int c = c0 + cc;
            float *g = J->gz + ((size_t)nl * J->C + c) * J->T + t0;
            ws_conv_ld_row(g, a->dy, d->y_type, lay(d->y_layout, J->C, J->T, n, c, t0), J->yts, nt);
            if (d->act != WS_ACT_NONE) {
                conv_sum(J, v, cc, c, nt, acc);
                if (J->b)
                    for (int i = 0; i < nt; i++)
                        acc[i] += J->b[c];
                ws_act_grad_rows(g, acc, nt, d->act);
            }
            if (seq)
                for (int i = 0; i < nt; i++)
                    if (seq[i] < 0)
                        g[i] = 0.0f; /* padding: dy ignored */
            if (!J->part)
                continue;
            float *p = J->part + (((size_t)n * J->ntb + tblk) * J->C + c) * (size_t)(K + 1);
            for (int k = 0; k < K; k++) {
                const float *row = v + ((size_t)k * CW + cc) * J->tb;
                float s = 0.0f;
                for (int i = 0; i < nt; i++)
                    s += g[i] * row[i];
                p[k] = s;
            }
            float s = 0.0f;
            for (int i = 0; i < nt; i++)
                s += g[i];
            p[K] = s;
        }
    }
}

/* BWD phase 2: dx (positions >= 0) and dinitial_states (positions -(K-1)..-1) of the
 * chunk's block (n, channels, positions [u0, u0 + nu)) */
static void dx_task(void *ctx, int ti, int nth)
{
    const st_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int K = J->K, T = J->T;
    const long long nub = (J->u_hi - J->u_lo + J->tb - 1) / J->tb;
    float *acc = J->tbuf + (size_t)ti * J->tlen;
    const long long lo = J->items * ti / nth, hi = J->items * (ti + 1) / nth;
    for (long long it = lo; it < hi; it++) {
        const int nl = (int)(it / (nub * J->ncb));
        const long long ub = it / J->ncb % nub;
        const int cb = (int)(it % J->ncb);
        const int n = J->n0 + nl;
        const long long u0 = J->u_lo + ub * J->tb;
        const int nu = (int)(J->u_hi - u0 < J->tb ? J->u_hi - u0 : J->tb);
        const int c0 = cb * CW, cw = J->C - c0 < CW ? J->C - c0 : CW;
        const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * T : NULL;
        const int nneg = u0 >= 0 ? 0 : -u0 < nu ? (int)-u0 : nu; /* i < nneg: dinitial_states */
        for (int cc = 0; cc < cw; cc++) {
            const int c = c0 + cc;
            const float *g = J->gz + ((size_t)nl * J->C + c) * T;
            const float *wc = J->w + (size_t)c * K;
            memset(acc, 0, (size_t)nu * sizeof(float));
            for (int k = 0; k < K; k++) {
                const long long off = J->P - J->D * k; /* the output reading u is u + off */
                const float wk = wc[k];
                for (int i = 0; i < nu; i++) {
                    const long long u = u0 + i, t = u + off;
                    if (t < 0 || t >= T || (seq && seq[t] != seq[u]))
                        continue;
                    acc[i] += wk * g[t];
                }
            }
            if (seq)
                for (int i = nneg; i < nu; i++)
                    if (seq[u0 + i] < 0)
                        acc[i] = 0.0f; /* padding feeds no tap */
            if (nneg)
                ws_conv_st_row(a->dinitial_states, d->x_type,
                               ((size_t)n * J->C + c) * (size_t)(K - 1) + (size_t)(u0 + K - 1), 1,
                               acc, nneg);
            if (nneg < nu)
                ws_conv_st_row(a->dx, d->x_type, lay(d->x_layout, J->C, T, n, c, u0 + nneg),
                               J->xts, acc + nneg, nu - nneg);
        }
    }
}

/* dw[c][k], db[c]: the blocks' partials in block order, in double */
static void reduce_task(void *ctx, int ti, int nth)
{
    const st_job *J = ctx;
    const int C = J->C, K = J->K;
    const long long nblk = (long long)J->a->n * J->ntb;
    const int c_lo = (int)((long long)C * ti / nth), c_hi = (int)((long long)C * (ti + 1) / nth);
    for (int c = c_lo; c < c_hi; c++)
        for (int k = 0; k <= K; k++) {
            if (k < K ? !J->a->dw : !J->a->db)
                continue;
            double s = 0;
            for (long long bl = 0; bl < nblk; bl++)
                s += J->part[((size_t)bl * C + c) * (size_t)(K + 1) + k];
            if (k < K)
                J->a->dw[(size_t)c * K + k] = (float)s;
            else
                J->a->db[c] = (float)s;
        }
}

int ws_conv_dw_states_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                          const float *b, int n_threads, ws_err *err)
{
    st_job J = {0};
    const int C = d->c_in, K = d->k;
    const size_t per_item = (size_t)C * (size_t)a->t_in; /* fits: x's size was checked */
    size_t nb = CHUNK_FLOATS / per_item;
    nb = nb < 1 ? 1 : nb > (size_t)a->n ? (size_t)a->n : nb;
    size_t tbytes, gbytes, pbytes = 0;
    if (setup(&J, d, a, w, b))
        return ws_errf(err, "ws_conv_run: depthwise scratch (k %d) overflows", K);
    J.u_lo = a->dinitial_states ? -(long long)(K - 1) : 0;
    J.u_hi = a->dx ? a->t_in : 0;
    const long long nub = (J.u_hi - J.u_lo + J.tb - 1) / J.tb;
    /* threads: the most any phase has tasks for */
    long long most = (long long)a->n * J.ncb * (J.ntb > nub ? J.ntb : nub);
    const int nt = threads_for(n_threads, most > C ? most : C);
    if (ws_mul_size(J.tlen, (size_t)nt * sizeof(float), &tbytes) ||
        ws_mul_size(nb * per_item, sizeof(float), &gbytes) ||
        ws_mul_size((size_t)a->n * J.ntb, (size_t)C, &pbytes) ||
        ws_mul_size(pbytes, (size_t)(K + 1) * sizeof(float), &pbytes))
        return ws_errf(err, "ws_conv_run: depthwise scratch (n %d x c %d x t %d, k %d) overflows",
                       a->n, C, a->t_in, K);
    const int grads = a->dw || a->db;
    J.tbuf = malloc(tbytes);
    J.gz = malloc(gbytes);
    J.part = grads ? malloc(pbytes) : NULL;
    if (!J.tbuf || !J.gz || (grads && !J.part)) {
        free(J.tbuf), free(J.gz), free(J.part);
        return ws_errf(err, "ws_conv_run: out of memory for depthwise scratch (c %d x t %d, k %d)",
                       C, a->t_in, K);
    }
    for (int n0 = 0; n0 < a->n; n0 += (int)nb) {
        J.n0 = n0;
        J.nb = a->n - n0 < (int)nb ? a->n - n0 : (int)nb;
        J.items = (long long)J.nb * J.ntb * J.ncb;
        ws_parallel(threads_for(nt, J.items), grad_task, &J);
        if (nub > 0) {
            J.items = (long long)J.nb * nub * J.ncb;
            ws_parallel(threads_for(nt, J.items), dx_task, &J);
        }
    }
    if (grads)
        ws_parallel(threads_for(nt, C), reduce_task, &J);
    free(J.tbuf), free(J.gz), free(J.part);
    return 0;
}

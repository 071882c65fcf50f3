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
 * Method: tasks (n, block of TB times, block of CW channels; NCL 256 x 16, NLC 64 x 128 so
 * that a time reads 512 contiguous bytes; TB smaller when K is large). A task stages the
 * values its outputs see into a channel-major scratch, pre applied, states (or zeros) in
 * front of position 0: without seq_idx one window of positions t0 - P .. t1 - 1 per channel,
 * the taps views of it; with seq_idx one window per tap, masked by the sequence test (its
 * size K*CW*TB whatever the dilation). Each channel's outputs are then K multiply-adds over
 * contiguous rows. Blocks move between the tensors and the scratch a time at a time (NLC:
 * CW contiguous channels) or a channel at a time (NCL). BWD per batch chunk: gz
 * [nb][C][T] in float32, held whole (as the direct kernel holds its gradient), with each
 * block's dw / db partials (8 float32 lanes over its times, the lanes added in double);
 * then dx and dinitial_states per (n, channel block, block of TB positions), gathering gz
 * over k in order; dw and db are the partials added in double in block order. Every sum has
 * an order fixed by the shapes alone: the bits do not depend on the thread count.
 * Cost (N2 C1536 T2048 K4 SILU f32, one thread, against the kernels calls without these
 * fields take): NLC FWD about 2x, BWD about 1.2x; NCL FWD and BWD about 3 to 4x
 * (cpu_dw_ncl.c reads and writes float32 rows in place in one pass).
 * Tested by tests/test_engine_states.c (float64 oracle, chunked against whole, packed
 * against separate, finite differences, the adjoint identity, refusals).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

enum {
    TB_MAX = 256,           /* times per task at most */
    CHUNK_FLOATS = 1 << 24, /* BWD: gz per batch chunk (64 MiB), at least one item */
    MAX_THREADS = 256,      /* ws_parallel's cap */
};

typedef struct {
    const ws_conv_desc *d;
    const ws_conv_args *a;
    const float *w, *b;            /* w [C][K], b [C] or NULL */
    int C, K, T, cw, tb, ntb, ncb; /* blocks of cw channels x tb times (setup) */
    long long D, P;
    int uni;     /* stage() keeps one window per channel, the taps views of it (no seq_idx) */
    size_t vrow; /* floats between a channel's staged rows: tb + P (uni), else tb */
    size_t vlen; /* floats of the staged values: cw*(tb + P) (uni), else K*cw*tb */
    float *tbuf; /* per thread: the staged values (vlen), two blocks cw*tb, a row of cw */
    size_t tlen;
    int n0, nb;           /* BWD: this chunk's batch items [n0, n0 + nb) */
    float *gz;            /* BWD: [nb][C][T] */
    double *part;         /* BWD: [N][ntb][C][K+1], dw (k < K) and db (K) per block; or NULL */
    long long u_lo, u_hi; /* BWD: positions [u_lo, u_hi) of dinitial_states (< 0) and dx (>= 0) */
    long long items;      /* tasks of the current phase */
} st_job;

/* the per-thread scratch of thread ti */
typedef struct {
    float *v, *blk, *blk2, *row;
} scratch;

static scratch scratch_of(const st_job *J, int ti)
{
    float *p = J->tbuf + (size_t)ti * J->tlen;
    const size_t bs = (size_t)J->cw * J->tb;
    scratch s = {p, p + J->vlen, p + J->vlen + bs, p + J->vlen + 2 * bs};
    return s;
}

static int threads_for(int n_threads, long long items)
{
    long long t = n_threads < MAX_THREADS ? n_threads : MAX_THREADS;
    return (int)(items < t ? items : t);
}

/* dst[cc*ds + i] = element (c0 + cc, t0 + i) of an item of a [C][T] tensor in layout l, type
 * ty, starting at element off, for cc < cw, i < nt; NLC a time (cw contiguous channels) at a
 * time through row */
static void load_block(const void *src, ws_dtype ty, ws_layout l, int C, int T, size_t off, int c0,
                       int cw, long long t0, int nt, float *dst, size_t ds, float *row)
{
    if (l == WS_NCL) {
        for (int cc = 0; cc < cw; cc++)
            ws_conv_ld_row(dst + cc * ds, src, ty, off + (size_t)(c0 + cc) * T + (size_t)t0, 1, nt);
        return;
    }
    for (int i = 0; i < nt; i++) {
        ws_conv_ld_row(row, src, ty, off + (size_t)(t0 + i) * C + c0, 1, cw);
        for (int cc = 0; cc < cw; cc++)
            dst[cc * ds + i] = row[cc];
    }
}

/* the inverse: element (c0 + cc, t0 + i) = src[cc*ds + i], stored in ty */
static void store_block(void *dst, ws_dtype ty, ws_layout l, int C, int T, size_t off, int c0, int cw,
                        long long t0, int nt, const float *src, size_t ds, float *row)
{
    if (l == WS_NCL) {
        for (int cc = 0; cc < cw; cc++)
            ws_conv_st_row(dst, ty, off + (size_t)(c0 + cc) * T + (size_t)t0, 1, src + cc * ds, nt);
        return;
    }
    for (int i = 0; i < nt; i++) {
        for (int cc = 0; cc < cw; cc++)
            row[cc] = src[cc * ds + i];
        ws_conv_st_row(dst, ty, off + (size_t)(t0 + i) * C + c0, 1, row, cw);
    }
}

/* tap k's row of channel c0 + cc in the staged values v: tap(J, v, k, cc)[i] = v(t0 + i, k) */
static inline const float *tap(const st_job *J, const float *v, int k, int cc)
{
    return J->uni ? v + (size_t)cc * J->vrow + (size_t)(J->D * k)
                  : v + ((size_t)k * J->cw + cc) * J->tb;
}

/* the values v(t0 + i, k) of channels c0 + cc (cc < cw, i < nt) into v, pre applied, as
 * tap() reads them. uni: the positions t0 - P .. t0 + nt - 1 once per channel (states, or 0,
 * before position 0). Otherwise one window per tap, masked by seq_idx (a position of another
 * sequence reads 0), of size K*cw*tb whatever the dilation. */
static void stage(const st_job *J, int n, int t0, int nt, int c0, int cw, float *v, float *row)
{
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int K = J->K, C = J->C, T = J->T;
    const size_t vr = J->vrow;
    const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * T : NULL;
    unsigned char other[TB_MAX]; /* seq_idx: position read by output t0+i is of another sequence */
    for (int k = 0; k < (J->uni ? 1 : K); k++) {
        float *vk = v + (size_t)k * J->cw * vr;
        /* the window: positions p0 + i, i < len */
        const long long p0 = J->uni ? t0 - J->P : t0 + J->D * k - J->P;
        const int len = J->uni ? nt + (int)J->P : nt;
        const int neg = p0 >= 0 ? 0 : -p0 < len ? (int)-p0 : len; /* i < neg: p < 0 */
        if (neg < len)
            load_block(a->x, d->x_type, d->x_layout, C, T, (size_t)n * C * T, c0, cw, p0 + neg,
                       len - neg, vk + neg, vr, row);
        int any = 0;
        if (seq)
            for (int i = neg; i < nt; i++)
                any |= other[i] = seq[p0 + i] != seq[t0 + i];
        for (int cc = 0; cc < cw; cc++) {
            float *r = vk + cc * vr;
            if (neg < len && d->pre != WS_ACT_NONE)
                ws_act_row(r + neg, len - neg, NULL, d->pre);
            if (any)
                for (int i = neg; i < nt; i++)
                    if (other[i])
                        r[i] = 0.0f;
            if (neg > 0 && a->initial_states) { /* D = 1: p0 >= -(K-1) */
                ws_conv_ld_row(r, a->initial_states, d->x_type,
                               ((size_t)n * C + c0 + cc) * (size_t)(K - 1) + (size_t)(p0 + K - 1), 1,
                               neg);
                if (d->pre != WS_ACT_NONE)
                    ws_act_row(r, neg, NULL, d->pre);
            } else if (neg > 0)
                memset(r, 0, (size_t)neg * sizeof(float));
        }
    }
}

/* acc[i] = sum_k w[c,k] * v(t0+i, k), k in order from acc = +0 (the file's header) */
static void conv_sum(const st_job *J, const float *v, int cc, int c, int nt, float *acc)
{
    const float *wc = J->w + (size_t)c * J->K;
    memset(acc, 0, (size_t)nt * sizeof(float));
    for (int k = 0; k < J->K; k++) {
        const float *r = tap(J, v, k, cc);
        const float wk = wc[k];
        for (int i = 0; i < nt; i++)
            acc[i] += wk * r[i];
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
    *c0 = cb * J->cw;
    *cw = J->C - *c0 < J->cw ? J->C - *c0 : J->cw;
}

static void fwd_task(void *ctx, int ti, int nth)
{
    const st_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int C = J->C, T = J->T;
    const size_t tb = (size_t)J->tb;
    const scratch s = scratch_of(J, ti);
    const long long lo = J->items * ti / nth, hi = J->items * (ti + 1) / nth;
    for (long long it = lo; it < hi; it++) {
        int n, t0, nt, c0, cw, tblk;
        task_of(J, it, &n, &t0, &nt, &c0, &cw, &tblk);
        const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * T + t0 : NULL;
        stage(J, n, t0, nt, c0, cw, s.v, s.row);
        if (a->add)
            load_block(a->add, d->y_type, d->y_layout, C, T, (size_t)n * (size_t)a->add_batch_stride,
                       c0, cw, t0, nt, s.blk2, tb, s.row);
        for (int cc = 0; cc < cw; cc++) {
            float *acc = s.blk + cc * tb;
            conv_sum(J, s.v, cc, c0 + cc, nt, acc);
            ws_act_row(acc, nt, J->b ? J->b + c0 + cc : NULL, d->act); /* + b, then act */
            if (a->add)
                for (int i = 0; i < nt; i++)
                    acc[i] += s.blk2[cc * tb + i];
            if (seq)
                for (int i = 0; i < nt; i++)
                    if (seq[i] < 0)
                        acc[i] = 0.0f; /* padding: 0 exactly */
        }
        store_block(a->y, d->y_type, d->y_layout, C, T, (size_t)n * C * T, c0, cw, t0, nt, s.blk, tb,
                    s.row);
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
                if (p >= 0) {
                    const size_t xi = d->x_layout == WS_NCL
                                          ? ((size_t)n * J->C + c) * J->T + (size_t)p
                                          : ((size_t)n * J->T + (size_t)p) * J->C + c;
                    memcpy(dst, x + xi * es, es);
                } else if (init)
                    memcpy(dst, init + (s + (size_t)(p + (long long)k1)) * es, es);
                else
                    memset(dst, 0, es);
            }
}

/* the blocks and the per-thread scratch; 0, or -1 (overflow) */
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
    /* NCL: 16 channel rows of up to 256 times; NLC: 128 channels (512 contiguous bytes of
     * f32 per time) of up to 64 times. Fewer times when K is large. */
    const int ncl = d->x_layout == WS_NCL, by_k = (ncl ? 16384 : 8192) / J->K;
    const int tmax = ncl ? TB_MAX : 64;
    J->cw = ncl ? 16 : 128;
    J->tb = by_k >= tmax ? tmax : by_k < 8 ? 8 : by_k;
    J->ntb = (int)(((long long)J->T + J->tb - 1) / J->tb);
    J->ncb = (J->C + J->cw - 1) / J->cw;
    /* one window per channel when the taps can share it (no seq_idx: then D is 1, a state
     * being given) and it is not much longer than the block */
    J->uni = !a->seq_idx && J->P <= 4096;
    J->vrow = J->uni ? (size_t)J->tb + (size_t)J->P : (size_t)J->tb;
    size_t t;
    if (ws_mul_size(J->uni ? 1 : (size_t)J->K, (size_t)J->cw * J->vrow, &J->vlen) ||
        ws_mul_size(2, (size_t)J->cw * J->tb, &t) || ws_add_size(t, J->vlen, &t) ||
        ws_add_size(t, (size_t)J->cw, &t))
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

/* sum_i g[i] * r[i] (r NULL: sum_i g[i]) for i < n: 8 float32 lanes (i mod 8) in order,
 * the lanes added in double */
static double dot8(const float *g, const float *r, int n)
{
    float l[8] = {0};
    int i = 0;
    if (r)
        for (; i + 8 <= n; i += 8)
            for (int q = 0; q < 8; q++)
                l[q] += g[i + q] * r[i + q];
    else
        for (; i + 8 <= n; i += 8)
            for (int q = 0; q < 8; q++)
                l[q] += g[i + q];
    for (; i < n; i++)
        l[i & 7] += r ? g[i] * r[i] : g[i];
    double s = 0;
    for (int q = 0; q < 8; q++)
        s += l[q];
    return s;
}

/* BWD phase 1: gz of the chunk's block (n, times, channels) and its dw / db partials */
static void grad_task(void *ctx, int ti, int nth)
{
    const st_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int K = J->K, C = J->C, T = J->T;
    const scratch s = scratch_of(J, ti);
    const long long lo = J->items * ti / nth, hi = J->items * (ti + 1) / nth;
    for (long long it = lo; it < hi; it++) {
        int nl, t0, nt, c0, cw, tblk;
        task_of(J, it, &nl, &t0, &nt, &c0, &cw, &tblk);
        const int n = J->n0 + nl;
        const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * T + t0 : NULL;
        if (d->act != WS_ACT_NONE || J->part)
            stage(J, n, t0, nt, c0, cw, s.v, s.row);
        /* dy through the block (gz's rows are T apart: scattering a time's channels there
         * would touch cw far-apart lines per time) */
        load_block(a->dy, d->y_type, d->y_layout, C, T, (size_t)n * C * T, c0, cw, t0, nt, s.blk2,
                   (size_t)J->tb, s.row);
        for (int cc = 0; cc < cw; cc++) {
            const int c = c0 + cc;
            float *g = J->gz + ((size_t)nl * C + c) * T + t0;
            memcpy(g, s.blk2 + (size_t)cc * J->tb, (size_t)nt * sizeof(float));
            if (d->act != WS_ACT_NONE) {
                conv_sum(J, s.v, cc, c, nt, s.blk);
                if (J->b)
                    for (int i = 0; i < nt; i++)
                        s.blk[i] += J->b[c];
                ws_act_grad_rows(g, s.blk, nt, d->act);
            }
            if (seq)
                for (int i = 0; i < nt; i++)
                    if (seq[i] < 0)
                        g[i] = 0.0f; /* padding: dy ignored */
            if (!J->part)
                continue;
            double *p = J->part + (((size_t)n * J->ntb + tblk) * C + c) * (size_t)(K + 1);
            for (int k = 0; k < K; k++)
                p[k] = dot8(g, tap(J, s.v, k, cc), nt);
            p[K] = dot8(g, NULL, nt);
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
    const int K = J->K, T = J->T, C = J->C;
    const size_t tb = (size_t)J->tb;
    const long long nub = (J->u_hi - J->u_lo + J->tb - 1) / J->tb;
    const scratch s = scratch_of(J, ti);
    const long long lo = J->items * ti / nth, hi = J->items * (ti + 1) / nth;
    for (long long it = lo; it < hi; it++) {
        const int nl = (int)(it / (nub * J->ncb));
        const long long ub = it / J->ncb % nub;
        const int cb = (int)(it % J->ncb);
        const int n = J->n0 + nl;
        const long long u0 = J->u_lo + ub * J->tb;
        const int nu = (int)(J->u_hi - u0 < J->tb ? J->u_hi - u0 : J->tb);
        const int c0 = cb * J->cw, cw = C - c0 < J->cw ? C - c0 : J->cw;
        const int32_t *seq = a->seq_idx ? a->seq_idx + (size_t)n * T : NULL;
        const int nneg = u0 >= 0 ? 0 : -u0 < nu ? (int)-u0 : nu; /* i < nneg: dinitial_states */
        for (int cc = 0; cc < cw; cc++) {
            const int c = c0 + cc;
            const float *g = J->gz + ((size_t)nl * C + c) * T;
            const float *wc = J->w + (size_t)c * K;
            float *acc = s.blk + cc * tb;
            memset(acc, 0, (size_t)nu * sizeof(float));
            for (int k = 0; k < K; k++) {
                const long long off = J->P - J->D * k; /* the output reading u is u + off */
                const float wk = wc[k];
                /* i with 0 <= u0 + i + off < T */
                long long ilo = -off - u0, ihi = (long long)T - off - u0;
                ilo = ilo < 0 ? 0 : ilo;
                ihi = ihi > nu ? nu : ihi;
                const float *gk = g + u0 + off;
                if (!seq)
                    for (long long i = ilo; i < ihi; i++)
                        acc[i] += wk * gk[i];
                else
                    for (long long i = ilo; i < ihi; i++)
                        if (seq[u0 + i + off] == seq[u0 + i])
                            acc[i] += wk * gk[i];
            }
            if (seq)
                for (int i = nneg; i < nu; i++)
                    if (seq[u0 + i] < 0)
                        acc[i] = 0.0f; /* padding feeds no tap */
            if (nneg)
                ws_conv_st_row(a->dinitial_states, d->x_type,
                               ((size_t)n * C + c) * (size_t)(K - 1) + (size_t)(u0 + K - 1), 1, acc,
                               nneg);
        }
        if (nneg < nu)
            store_block(a->dx, d->x_type, d->x_layout, C, T, (size_t)n * C * T, c0, cw, u0 + nneg,
                        nu - nneg, s.blk + nneg, tb, s.row);
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
    const long long most = (long long)a->n * J.ncb * (J.ntb > nub ? J.ntb : nub);
    const int nt = threads_for(n_threads, most > C ? most : C);
    if (ws_mul_size(J.tlen, (size_t)nt * sizeof(float), &tbytes) ||
        ws_mul_size(nb * per_item, sizeof(float), &gbytes) ||
        ws_mul_size((size_t)a->n * J.ntb, (size_t)C, &pbytes) ||
        ws_mul_size(pbytes, (size_t)(K + 1) * sizeof(double), &pbytes))
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

/* cpu_direct.c - the conv engine's direct CPU kernels: every descriptor, FWD and BWD.
 *
 *   FWD  y[n,o,t] = act( b[o] + sum_{j<Cg} sum_{k<K} w[o,j,k] * pre(x[n, g*Cg+j, S*t + D*k - P_L]) )
 *                   + add[n,o,t]                                  g = o / Cog, Cog = C_out / G
 *   BWD  z = b + conv(x),  gr[n,o,t] = dy[n,o,t] * act'(z[n,o,t])
 *        db[o]     = sum_n sum_t gr[n,o,t]
 *        dw[o,j,k] = sum_n sum_t gr[n,o,t] * x[n, g*Cg+j, S*t + D*k - P_L]
 *        dx[n,i,u] = sum_{o in group of i} sum_k sum_{t: S*t + D*k - P_L = u} w[o,i-g*Cg,k] * gr[n,o,t]
 *
 * Method: batch items are taken in chunks; for each, x is converted (and pre applied) to a
 * float32 scratch xs[n][C_in][T_in] (channel rows, whatever x_layout), so every tap is a
 * contiguous (S = 1) or strided row read over the output times whose input is inside
 * [0, T_in) (the padding is never materialised). FWD: one task per (n, o), output times in
 * blocks of TB, sum order j, k fixed; epilogue bias, act, add, store in y_type/y_layout.
 * FWD with Cg = 1 and NCL x (depthwise, PyTorch's layout) skips the xs pass: each (n, o)
 * task converts its one input row itself.
 * BWD: gr per (n, o) in float32; dw/db per o, summing over n in order, then t: db in
 * double, dw in 8 fixed float32 lanes whose sums are added in double; dx per (n, i) by
 * scattering taps in the fixed order (o, k, t). No sum is ever split across threads, so
 * the bits do not depend on the thread count. Sums in float32 (dw, db: float32 within an
 * item, double across).
 * Tested by tests/test_engine.c (float64 oracle, finite differences, adjoint identity).
 */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "engine.h"

enum {
    TB = 1024,            /* output times per FWD block: the accumulator stays in L1 */
    NLC_TB = 64,          /* times per NLC transpose block */
    CHUNK_FLOATS = 1 << 24, /* scratch per batch chunk (64 MiB), at least one item */
    MAX_THREADS = 256,    /* ws_parallel's cap */
};

typedef struct {
    const ws_conv_desc *d;
    const ws_conv_args *a;
    const float *w, *b;
    int t_in, t_out, cg, cog;
    int n0, nb;      /* this chunk: batch items [n0, n0 + nb) */
    float *xs;       /* [nb][C_in][T_in]; NULL when fused */
    int fused;       /* FWD, Cg 1, NCL x: each task reads its own input row, no xs pass */
    float *gr;       /* BWD: [nb][C_out][T_out] */
    float *tbuf;     /* per-thread scratch: tbuf + i * tlen */
    size_t tlen;
    double *dw_acc;  /* [C_out][Cg][K] or NULL */
    double *db_acc;  /* [C_out] or NULL */
    long long items; /* tasks of the current phase */
} job;

static void split(long long items, int i, int n, long long *lo, long long *hi)
{
    *lo = items * i / n;
    *hi = items * (i + 1) / n;
}

/* dst[i] = src[base + i*stride] for i < n, converted from type t */
void ws_conv_ld_row(float *dst, const void *src, ws_dtype t, size_t base, size_t stride, long long n)
{
    if (t == WS_F32) {
        const float *p = (const float *)src + base;
        if (stride == 1)
            memcpy(dst, p, (size_t)n * sizeof(float));
        else
            for (long long i = 0; i < n; i++)
                dst[i] = p[(size_t)i * stride];
    } else {
        const uint16_t *p = (const uint16_t *)src + base;
        if (t == WS_F16)
            for (long long i = 0; i < n; i++)
                dst[i] = ws_f16_to_f32(p[(size_t)i * stride]);
        else
            for (long long i = 0; i < n; i++)
                dst[i] = ws_bf16_to_f32(p[(size_t)i * stride]);
    }
}

/* dst[base + i*stride] = v[i] for i < n, stored in type t (round to nearest even) */
void ws_conv_st_row(void *dst, ws_dtype t, size_t base, size_t stride, const float *v, long long n)
{
    if (t == WS_F32) {
        float *p = (float *)dst + base;
        if (stride == 1)
            memcpy(p, v, (size_t)n * sizeof(float));
        else
            for (long long i = 0; i < n; i++)
                p[(size_t)i * stride] = v[i];
    } else {
        uint16_t *p = (uint16_t *)dst + base;
        if (t == WS_F16)
            for (long long i = 0; i < n; i++)
                p[(size_t)i * stride] = ws_f32_to_f16(v[i]);
        else
            for (long long i = 0; i < n; i++)
                p[(size_t)i * stride] = ws_f32_to_bf16(v[i]);
    }
}

/* times t with 0 <= S*t + off < T_in, intersected with [t0, t1): [*lo, *hi) */
static void tap_range(long long off, int s, int t_in, long long t0, long long t1, long long *lo,
                      long long *hi)
{
    long long a = off >= 0 ? 0 : (-off + s - 1) / s;
    long long b = t_in - 1 - off < 0 ? 0 : (t_in - 1 - off) / s + 1;
    *lo = a > t0 ? a : t0;
    *hi = b < t1 ? b : t1;
    if (*hi < *lo)
        *hi = *lo;
}

/* x -> xs, pre applied: NCL one task per row (n, c), NLC one per (n, block of times) */
static void load_x(void *ctx, int i, int n)
{
    job *J = ctx;
    const ws_conv_desc *d = J->d;
    const int C = d->c_in, T = J->t_in;
    long long lo, hi;
    split(J->items, i, n, &lo, &hi);
    for (long long r = lo; r < hi; r++) {
        if (d->x_layout == WS_NCL) {
            float *dst = J->xs + (size_t)r * T;
            ws_conv_ld_row(dst, J->a->x, d->x_type, ((size_t)J->n0 * C + (size_t)r) * T, 1, T);
            if (d->pre != WS_ACT_NONE)
                ws_act_row(dst, T, NULL, d->pre);
        } else {
            const long long nblk = (T + NLC_TB - 1) / NLC_TB;
            const int nl = (int)(r / nblk), t0 = (int)(r % nblk) * NLC_TB;
            const int t1 = t0 + NLC_TB < T ? t0 + NLC_TB : T;
            float *dst = J->xs + (size_t)nl * C * T;
            for (int c = 0; c < C; c++) {
                float *row = dst + (size_t)c * T + t0;
                ws_conv_ld_row(row, J->a->x, d->x_type, ((size_t)(J->n0 + nl) * T + t0) * C + c, C, t1 - t0);
                if (d->pre != WS_ACT_NONE)
                    ws_act_row(row, t1 - t0, NULL, d->pre);
            }
        }
    }
}

/* the first of output channel o's Cg input rows in xs */
static const float *xs_rows(const job *J, int nl, int o)
{
    return J->xs + ((size_t)nl * J->d->c_in + (size_t)(o / J->cog) * J->cg) * J->t_in;
}

/* acc[t - t0] = sum_j sum_k w[o,j,k] * xg[j][S*t + D*k - P_L] for t in [t0, t1) */
static void conv_block(const job *J, const float *xg, int o, int t0, int t1, float *acc)
{
    const ws_conv_desc *d = J->d;
    const int K = d->k, S = d->stride, T = J->t_in;
    memset(acc, 0, (size_t)(t1 - t0) * sizeof(float));
    for (int j = 0; j < J->cg; j++) {
        const float *row = xg + (size_t)j * T;
        const float *wr = J->w + ((size_t)o * J->cg + j) * K;
        for (int k = 0; k < K; k++) {
            const float wv = wr[k];
            const long long off = (long long)d->dilation * k - d->pad_l;
            long long lo, hi;
            tap_range(off, S, T, t0, t1, &lo, &hi);
            if (hi <= lo)
                continue;
            float *a = acc + (lo - t0);
            const float *src = row + (S * lo + off);
            const long long n = hi - lo;
            if (S == 1)
                for (long long t = 0; t < n; t++)
                    a[t] += wv * src[t];
            else
                for (long long t = 0; t < n; t++)
                    a[t] += wv * src[(size_t)S * t];
        }
    }
}

static size_t y_index(const ws_conv_desc *d, int n, int o, int t, int t_out)
{
    return d->y_layout == WS_NCL ? ((size_t)n * d->c_out + o) * t_out + t
                                 : ((size_t)n * t_out + t) * d->c_out + o;
}

/* elements between consecutive times of one channel in y's layout */
static size_t y_tstride(const ws_conv_desc *d)
{
    return d->y_layout == WS_NCL ? 1 : (size_t)d->c_out;
}

static void fwd_task(void *ctx, int i, int n)
{
    job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    float *acc = J->tbuf + (size_t)i * J->tlen;
    long long lo, hi;
    split(J->items, i, n, &lo, &hi);
    for (long long r = lo; r < hi; r++) {
        const int nl = (int)(r / d->c_out), o = (int)(r % d->c_out), nn = J->n0 + nl;
        const float *xg;
        if (J->fused) { /* Cg 1: input channel o / Cog, read here */
            float *row = acc + 2 * TB;
            ws_conv_ld_row(row, a->x, d->x_type, ((size_t)nn * d->c_in + o / J->cog) * J->t_in, 1,
                           J->t_in);
            if (d->pre != WS_ACT_NONE)
                ws_act_row(row, J->t_in, NULL, d->pre);
            xg = row;
        } else
            xg = xs_rows(J, nl, o);
        for (int t0 = 0; t0 < J->t_out; t0 += TB) {
            const int t1 = t0 + TB < J->t_out ? t0 + TB : J->t_out;
            conv_block(J, xg, o, t0, t1, acc);
            ws_act_row(acc, t1 - t0, J->b ? J->b + o : NULL, d->act);
            if (a->add) {
                float *ad = acc + TB;
                ws_conv_ld_row(ad, a->add, d->y_type,
                       (size_t)nn * (size_t)a->add_batch_stride + y_index(d, 0, o, t0, J->t_out),
                       y_tstride(d), t1 - t0);
                for (int t = 0; t < t1 - t0; t++)
                    acc[t] += ad[t];
            }
            ws_conv_st_row(a->y, d->y_type, y_index(d, nn, o, t0, J->t_out), y_tstride(d), acc, t1 - t0);
        }
    }
}

/* BWD: gr[nl][o][t] = dy * act'(b + conv) */
static void grad_task(void *ctx, int i, int n)
{
    job *J = ctx;
    const ws_conv_desc *d = J->d;
    float *acc = J->tbuf + (size_t)i * J->tlen;
    long long lo, hi;
    split(J->items, i, n, &lo, &hi);
    for (long long r = lo; r < hi; r++) {
        const int nl = (int)(r / d->c_out), o = (int)(r % d->c_out), nn = J->n0 + nl;
        float *g = J->gr + (size_t)r * J->t_out;
        for (int t0 = 0; t0 < J->t_out; t0 += TB) {
            const int t1 = t0 + TB < J->t_out ? t0 + TB : J->t_out;
            ws_conv_ld_row(g + t0, J->a->dy, d->y_type, y_index(d, nn, o, t0, J->t_out), y_tstride(d),
                   t1 - t0);
            if (d->act != WS_ACT_NONE) {
                conv_block(J, xs_rows(J, nl, o), o, t0, t1, acc);
                if (J->b)
                    for (int t = 0; t < t1 - t0; t++)
                        acc[t] += J->b[o];
                ws_act_grad_rows(g + t0, acc, t1 - t0, d->act);
            }
        }
    }
}

/* sum_t a[t] * b[t*s] over n terms: 8 float32 lanes in a fixed order, lanes added in double */
static double dot8(const float *a, const float *b, int s, long long n)
{
    float l[8] = {0};
    long long t = 0;
    if (s == 1)
        for (; t + 8 <= n; t += 8)
            for (int q = 0; q < 8; q++)
                l[q] += a[t + q] * b[t + q];
    else
        for (; t + 8 <= n; t += 8)
            for (int q = 0; q < 8; q++)
                l[q] += a[t + q] * b[(size_t)(t + q) * s];
    for (; t < n; t++)
        l[t & 7] += a[t] * b[(size_t)t * s];
    double sum = 0;
    for (int q = 0; q < 8; q++)
        sum += l[q];
    return sum;
}

/* dw, db: one task per output channel o, items of the chunk in order */
static void wgrad_task(void *ctx, int i, int n)
{
    job *J = ctx;
    const ws_conv_desc *d = J->d;
    const int K = d->k, S = d->stride, T = J->t_in, To = J->t_out;
    long long lo, hi;
    split(J->items, i, n, &lo, &hi);
    for (long long o = lo; o < hi; o++) {
        for (int nl = 0; nl < J->nb; nl++) {
            const float *g = J->gr + ((size_t)nl * d->c_out + o) * To;
            if (J->db_acc) {
                double s = 0;
                for (int t = 0; t < To; t++)
                    s += g[t];
                J->db_acc[o] += s;
            }
            if (!J->dw_acc)
                continue;
            const float *xg = J->xs + ((size_t)nl * d->c_in + (size_t)(o / J->cog) * J->cg) * T;
            for (int j = 0; j < J->cg; j++)
                for (int k = 0; k < K; k++) {
                    const long long off = (long long)d->dilation * k - d->pad_l;
                    long long a, b;
                    tap_range(off, S, T, 0, To, &a, &b);
                    if (b <= a)
                        continue;
                    J->dw_acc[((size_t)o * J->cg + j) * K + k] +=
                        dot8(g + a, xg + (size_t)j * T + (S * a + off), S, b - a);
                }
        }
    }
}

/* dx: one task per (n, i); acc[u] over T_in, scattered in the order (o, k, t) */
static void dx_task(void *ctx, int i, int n)
{
    job *J = ctx;
    const ws_conv_desc *d = J->d;
    const int K = d->k, S = d->stride, T = J->t_in, To = J->t_out, C = d->c_in;
    float *acc = J->tbuf + (size_t)i * J->tlen;
    long long lo, hi;
    split(J->items, i, n, &lo, &hi);
    for (long long r = lo; r < hi; r++) {
        const int nl = (int)(r / C), ci = (int)(r % C), nn = J->n0 + nl;
        const int g = ci / J->cg, j = ci % J->cg;
        memset(acc, 0, (size_t)T * sizeof(float));
        for (int o = g * J->cog; o < (g + 1) * J->cog; o++) {
            const float *gr = J->gr + ((size_t)nl * d->c_out + o) * To;
            const float *wr = J->w + ((size_t)o * J->cg + j) * K;
            for (int k = 0; k < K; k++) {
                const float wv = wr[k];
                const long long off = (long long)d->dilation * k - d->pad_l;
                long long a, b;
                tap_range(off, S, T, 0, To, &a, &b);
                if (b <= a)
                    continue;
                float *dst = acc + (S * a + off);
                if (S == 1)
                    for (long long t = a; t < b; t++)
                        dst[t - a] += wv * gr[t];
                else
                    for (long long t = a; t < b; t++)
                        dst[(size_t)(t - a) * S] += wv * gr[t];
            }
        }
        if (d->x_layout == WS_NCL)
            ws_conv_st_row(J->a->dx, d->x_type, ((size_t)nn * C + ci) * T, 1, acc, T);
        else
            ws_conv_st_row(J->a->dx, d->x_type, (size_t)nn * T * C + ci, C, acc, T);
    }
}

static int threads_for(int n_threads, long long items)
{
    long long t = n_threads < MAX_THREADS ? n_threads : MAX_THREADS;
    return (int)(items < t ? items : t);
}

static void phase(job *J, long long items, ws_task_fn fn, int n_threads)
{
    J->items = items;
    ws_parallel(threads_for(n_threads, items), fn, J);
}

/* scratch for a chunk of nb items plus per-thread buffers; 0 or -1 (nothing allocated) */
static int setup(job *J, const ws_conv_desc *d, const ws_conv_args *a, int t_out, int bwd,
                 int n_threads, ws_err *err)
{
    J->fused = !bwd && d->c_in == d->groups && d->x_layout == WS_NCL;
    const size_t per_item =
        (J->fused ? 0 : (size_t)d->c_in * a->t_in) + (bwd ? (size_t)d->c_out * t_out : 0);
    size_t nb = per_item ? CHUNK_FLOATS / per_item : (size_t)a->n;
    nb = nb < 1 ? 1 : nb > (size_t)a->n ? (size_t)a->n : nb;
    J->nb = (int)nb;
    J->t_in = a->t_in;
    J->t_out = t_out;
    J->cg = d->c_in / d->groups;
    J->cog = d->c_out / d->groups;
    J->tlen = bwd && a->dx ? (size_t)(a->t_in > TB ? a->t_in : TB)
                           : 2 * TB + (J->fused ? (size_t)a->t_in : 0); /* FWD: acc, add, x row */
    const int nt = n_threads < MAX_THREADS ? n_threads : MAX_THREADS;
    J->xs = J->fused ? NULL : malloc(nb * (size_t)d->c_in * a->t_in * sizeof(float));
    J->gr = bwd ? malloc(nb * (size_t)d->c_out * t_out * sizeof(float)) : NULL;
    J->tbuf = malloc((size_t)nt * J->tlen * sizeof(float));
    const size_t nw = (size_t)d->c_out * J->cg * d->k;
    J->dw_acc = bwd && a->dw ? calloc(nw, sizeof(double)) : NULL;
    J->db_acc = bwd && a->db ? calloc((size_t)d->c_out, sizeof(double)) : NULL;
    if ((!J->fused && !J->xs) || (bwd && !J->gr) || !J->tbuf || (bwd && a->dw && !J->dw_acc) ||
        (bwd && a->db && !J->db_acc)) {
        free(J->xs), free(J->gr), free(J->tbuf), free(J->dw_acc), free(J->db_acc);
        return ws_errf(err, "ws_conv_run: out of memory for scratch (%zu items of c_in %d x t_in %d)",
                       nb, d->c_in, a->t_in);
    }
    return 0;
}

static void teardown(job *J)
{
    free(J->xs), free(J->gr), free(J->tbuf), free(J->dw_acc), free(J->db_acc);
}

static long long load_items(const job *J, const ws_conv_desc *d, int nb)
{
    return d->x_layout == WS_NCL ? (long long)nb * d->c_in
                                 : (long long)nb * ((J->t_in + NLC_TB - 1) / NLC_TB);
}

int ws_conv_direct_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err)
{
    job J = {.d = d, .a = a, .w = w, .b = b};
    if (setup(&J, d, a, t_out, 0, n_threads, err))
        return -1;
    const int chunk = J.nb;
    for (int n0 = 0; n0 < a->n; n0 += chunk) {
        J.n0 = n0;
        J.nb = a->n - n0 < chunk ? a->n - n0 : chunk;
        if (!J.fused)
            phase(&J, load_items(&J, d, J.nb), load_x, n_threads);
        phase(&J, (long long)J.nb * d->c_out, fwd_task, n_threads);
    }
    teardown(&J);
    return 0;
}

int ws_conv_direct_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err)
{
    job J = {.d = d, .a = a, .w = w, .b = b};
    if (setup(&J, d, a, t_out, 1, n_threads, err))
        return -1;
    const int chunk = J.nb;
    for (int n0 = 0; n0 < a->n; n0 += chunk) {
        J.n0 = n0;
        J.nb = a->n - n0 < chunk ? a->n - n0 : chunk;
        phase(&J, load_items(&J, d, J.nb), load_x, n_threads);
        phase(&J, (long long)J.nb * d->c_out, grad_task, n_threads);
        if (a->dw || a->db)
            phase(&J, d->c_out, wgrad_task, n_threads);
        if (a->dx)
            phase(&J, (long long)J.nb * d->c_in, dx_task, n_threads);
    }
    if (a->dw) {
        const size_t nw = (size_t)d->c_out * J.cg * d->k;
        for (size_t i = 0; i < nw; i++)
            a->dw[i] = (float)J.dw_acc[i];
    }
    if (a->db)
        for (int o = 0; o < d->c_out; o++)
            a->db[o] = (float)J.db_acc[o];
    teardown(&J);
    return 0;
}

/* cpu_dw_ncl.c - the conv engine's depthwise FWD and BWD for channel-first data (PyTorch's
 * layout), stride 1: one pass over each (n, c) row.
 *
 *   FWD  y[n,c,t] = act( b[c] + sum_{k<K} w[c,k] * pre(x[n,c, t + D*k - P_L]) ) + add[n,c,t]
 *   BWD  g = dy * act'(z), z = b + conv(x) (recomputed; g = dy when act is NONE)
 *        dx[n,c,u] = sum_k w[c,k] * g[n,c, u + P_L - D*k]     (g zero outside [0, T_out))
 *        dw[c,k]   = sum_n sum_t g[n,c,t] * x[n,c, t + D*k - P_L]
 *        db[c]     = sum_n sum_t g[n,c,t]
 *   (G = C_in = C_out = C, S = 1, x and y NCL: x[(n*C + c)*T_in + u], y[(n*C + c)*T_out + t])
 *
 * Method: FWD and dx are the same correlation, out[t] = sum_k w[k] * in[t + o0 + s*k]
 * (FWD: in = x, o0 = -P_L, s = D; dx: in = g, o0 = P_L, s = -D). A row of T floats fits L1,
 * so each task reads x (and dy) once from memory and writes y (or dx) once: over the times
 * where every tap is inside [0, n_in) the taps are 8-wide vector loads (GCC vector
 * extensions; the functions are cloned by CPU feature, AVX-512, AVX2 and the baseline,
 * not by arch=, which matches CPU models and would leave other vendors on the baseline),
 * the few times at the row's ends add only the taps inside. Rows read or written in place
 * are prefetched one row ahead while the current one is computed, so the next row's lines
 * are on their way when it starts (measured: FWD 3.1 -> 2.5 ms, BWD 5.3 -> 3.6 ms at
 * N2 C1536 T2048 K4, one core). A float32 output of STREAM_BYTES or more that is written in
 * place (FWD y without act or add, BWD dx) goes out with streaming stores from the first
 * 32-byte aligned time of each row: its lines are not read for ownership first and do not
 * evict the inputs (BWD at N2 C1536 T2048: 2.03-2.22 -> 1.90-2.03 ms on one core, 1.06-1.24 ->
 * 1.00-1.06 ms on two), and a task ends with
 * a fence so that they are in memory when it is joined; the times before go to the scalar
 * loop, which sums in the same order, so the bits do not depend on the buffer's alignment.
 * Each output is summed k = 0..K-1, then the
 * bias, by one thread. Float32 rows (x, dy, y, dx) are read and written in place; f16 /
 * bf16 storage, pre and act go through a float32 row and the vectorised epilogues.
 * dw, db per row: 8 float32 lanes per tap over the interior times plus one float32 sum of
 * the edge terms, added in double; the rows' partials are then summed over n in order in
 * double. The partition is by row alone, so the bits do not depend on the thread count.
 * Taken for K <= MAX_K (the tap weights stay in registers); other descriptors run on the
 * direct kernels.
 * Tested by tests/test_engine.c (the depthwise NCL rows against the float64 oracle).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "conv.h"
#include "engine.h"

enum {
    MAX_K = 8,
    STREAM_BYTES = 16 << 20, /* outputs this big are written with streaming stores */
};

typedef float v8 __attribute__((vector_size(32)));
/* the same, for loads and stores at any float address */
typedef float v8u __attribute__((vector_size(32), aligned(4), may_alias));
#define LD8(p) (*(const v8u *)(const void *)(p))
#define ST8(p, v) (*(v8u *)(void *)(p) = (v))

/* v to p (32-byte aligned) past the caches: two SSE streaming stores, which every x86-64 has
 * (the clones for AVX issue them VEX-encoded); elsewhere a plain store */
static inline __attribute__((always_inline)) void st_stream(float *p, v8 v)
{
#if defined(__x86_64__)
    _mm_stream_ps(p, (__m128)__builtin_shufflevector(v, v, 0, 1, 2, 3));
    _mm_stream_ps(p + 4, (__m128)__builtin_shufflevector(v, v, 4, 5, 6, 7));
#else
    ST8(p, v);
#endif
}

int ws_conv_dw_ncl_ok(const ws_conv_desc *d)
{
    return d->groups == d->c_in && d->c_in == d->c_out && d->x_layout == WS_NCL &&
           d->y_layout == WS_NCL && d->stride == 1 && d->k <= MAX_K;
}

/* p + n as an address to prefetch (possibly past the array: never dereferenced) */
static inline const void *ahead(const float *p, long long n)
{
    return (const void *)((uintptr_t)p + (uintptr_t)(n * (long long)sizeof(float)));
}

/* [*lo, *hi): the t < n_out whose taps t + o0 + s*k (k < K) all lie in [0, n_in) */
static void interior(long long n_in, long long n_out, int K, long long o0, long long s,
                     long long *lo, long long *hi)
{
    const long long span = s * (K - 1);
    const long long omin = o0 + (span < 0 ? span : 0), omax = o0 + (span > 0 ? span : 0);
    long long a = -omin, b = n_in - omax;
    a = a < 0 ? 0 : a > n_out ? n_out : a;
    b = b < a ? a : b > n_out ? n_out : b;
    *lo = a;
    *hi = b;
}

/* out[t] = (sum_{k<K} w[k] * in[t + o0 + s*k]) + bias for t < n_out, in zero outside
 * [0, n_in); K a constant where inlined */
static inline __attribute__((always_inline)) void
corr_k(const float *restrict in, long long n_in, float *restrict out, long long n_out,
       const float *w, const int K, long long o0, long long s, float bias, long long pf_in,
       long long pf_out, int nt)
{
    long long lo, hi;
    interior(n_in, n_out, K, o0, s, &lo, &hi);
    v8 wv[MAX_K];
    for (int k = 0; k < K; k++)
        wv[k] = (v8){0} + w[k];
    const v8 bv = (v8){0} + bias;
    if (nt) { /* streaming: the vector stores start where out is 32-byte aligned (the times
               * before go to the scalar loop below, which gives the same bits) */
        const long long mis = (long long)(((uintptr_t)out / sizeof(float)) & 7);
        const long long a = lo + ((8 - ((mis + lo) & 7)) & 7);
        lo = a < hi ? a : hi;
        pf_out = 0; /* its lines are not read */
    }
    long long t = lo;
    for (; t + 8 <= hi; t += 8) {
        const float *p = in + t + o0;
        if (pf_in)
            __builtin_prefetch(ahead(p, pf_in), 0, 3);
        if (pf_out)
            __builtin_prefetch(ahead(out + t, pf_out), 1, 3);
        v8 acc = wv[0] * LD8(p);
        for (int k = 1; k < K; k++)
            acc += wv[k] * LD8(p + s * k);
        if (nt)
            st_stream(out + t, acc + bv);
        else
            ST8(out + t, acc + bv);
    }
    const long long vhi = t;
    for (t = 0; t < n_out; t++) { /* the ends, and the interior's last few: scalar */
        if (t == lo)
            t = vhi;
        if (t >= n_out)
            break;
        float acc = 0.0f;
        int first = 1;
        for (int k = 0; k < K; k++) {
            const long long u = t + o0 + s * k;
            if (u < 0 || u >= n_in)
                continue;
            acc = first ? w[k] * in[u] : acc + w[k] * in[u];
            first = 0;
        }
        out[t] = acc + bias;
    }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void
corr_row(const float *restrict in, long long n_in, float *restrict out, long long n_out,
         const float *w, int K, long long o0, long long s, float bias, long long pf_in,
         long long pf_out, int nt)
{
    switch (K) {
    case 1: corr_k(in, n_in, out, n_out, w, 1, o0, s, bias, pf_in, pf_out, nt); break;
    case 2: corr_k(in, n_in, out, n_out, w, 2, o0, s, bias, pf_in, pf_out, nt); break;
    case 3: corr_k(in, n_in, out, n_out, w, 3, o0, s, bias, pf_in, pf_out, nt); break;
    case 4: corr_k(in, n_in, out, n_out, w, 4, o0, s, bias, pf_in, pf_out, nt); break;
    case 5: corr_k(in, n_in, out, n_out, w, 5, o0, s, bias, pf_in, pf_out, nt); break;
    case 6: corr_k(in, n_in, out, n_out, w, 6, o0, s, bias, pf_in, pf_out, nt); break;
    case 7: corr_k(in, n_in, out, n_out, w, 7, o0, s, bias, pf_in, pf_out, nt); break;
    default: corr_k(in, n_in, out, n_out, w, 8, o0, s, bias, pf_in, pf_out, nt); break;
    }
}

/* part[k] = sum_t g[t] * x[t + D*k - P] (k < K), part[K] = sum_t g[t], over t < n_g, x zero
 * outside [0, n_x): interior times in 8 float32 lanes per sum, the rest in one float32
 * sum each, lanes then the rest added in double */
static inline __attribute__((always_inline)) void
wgrad_k(const float *restrict g, long long n_g, const float *restrict x, long long n_x,
        const int K, long long D, long long P, double *part, long long pf_g, long long pf_x)
{
    long long lo, hi;
    interior(n_x, n_g, K, -P, D, &lo, &hi);
    v8 a[MAX_K + 1];
    for (int k = 0; k <= K; k++)
        a[k] = (v8){0};
    long long t = lo;
    for (; t + 8 <= hi; t += 8) {
        const v8 gv = LD8(g + t);
        const float *p = x + t - P;
        if (pf_g)
            __builtin_prefetch(ahead(g + t, pf_g), 0, 3);
        if (pf_x)
            __builtin_prefetch(ahead(p, pf_x), 0, 3);
        for (int k = 0; k < K; k++)
            a[k] += gv * LD8(p + D * k);
        a[K] += gv;
    }
    const long long vhi = t;
    float e[MAX_K + 1] = {0};
    for (t = 0; t < n_g; t++) {
        if (t == lo)
            t = vhi;
        if (t >= n_g)
            break;
        for (int k = 0; k < K; k++) {
            const long long u = t + D * k - P;
            if (u >= 0 && u < n_x)
                e[k] += g[t] * x[u];
        }
        e[K] += g[t];
    }
    for (int k = 0; k <= K; k++) {
        double s = 0;
        for (int q = 0; q < 8; q++)
            s += a[k][q];
        part[k] = s + e[k];
    }
}

__attribute__((target_clones("avx512f", "avx2", "default"))) static void
wgrad_row(const float *restrict g, long long n_g, const float *restrict x, long long n_x, int K,
          long long D, long long P, double *part, long long pf_g, long long pf_x)
{
    switch (K) {
    case 1: wgrad_k(g, n_g, x, n_x, 1, D, P, part, pf_g, pf_x); break;
    case 2: wgrad_k(g, n_g, x, n_x, 2, D, P, part, pf_g, pf_x); break;
    case 3: wgrad_k(g, n_g, x, n_x, 3, D, P, part, pf_g, pf_x); break;
    case 4: wgrad_k(g, n_g, x, n_x, 4, D, P, part, pf_g, pf_x); break;
    case 5: wgrad_k(g, n_g, x, n_x, 5, D, P, part, pf_g, pf_x); break;
    case 6: wgrad_k(g, n_g, x, n_x, 6, D, P, part, pf_g, pf_x); break;
    case 7: wgrad_k(g, n_g, x, n_x, 7, D, P, part, pf_g, pf_x); break;
    default: wgrad_k(g, n_g, x, n_x, 8, D, P, part, pf_g, pf_x); break;
    }
}

typedef struct {
    const ws_conv_desc *d;
    const ws_conv_args *a;
    const float *w, *b; /* w [C][K] */
    long long t_in, t_out, rows;
    float *tbuf; /* per thread: 3 rows of tlen floats */
    size_t tlen;
    double *part; /* BWD: [N*C][K+1] row partials of dw (k < K) and db (K), or NULL */
    int stream;   /* float32 outputs written in place bypass the caches (STREAM_BYTES) */
} ncl_job;

/* row i of src (n floats from element base) as float32: in place when f32, else via tmp */
static const float *ld_f32(const void *src, ws_dtype t, size_t base, long long n, float *tmp)
{
    if (t == WS_F32)
        return (const float *)src + base;
    ws_conv_ld_row(tmp, src, t, base, 1, n);
    return tmp;
}

static void fwd_task(void *ctx, int ti, int nt)
{
    const ncl_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int C = d->c_in, K = d->k;
    const long long T = J->t_in, To = J->t_out;
    float *xb = J->tbuf + (size_t)ti * 3 * J->tlen, *yb = xb + J->tlen, *ab = yb + J->tlen;
    const long long lo = J->rows * ti / nt, hi = J->rows * (ti + 1) / nt;
    for (long long r = lo; r < hi; r++) {
        const int n = (int)(r / C), c = (int)(r % C);
        const float *x;
        if (d->x_type == WS_F32 && d->pre == WS_ACT_NONE)
            x = (const float *)a->x + (size_t)r * T;
        else {
            ws_conv_ld_row(xb, a->x, d->x_type, (size_t)r * T, 1, T);
            if (d->pre != WS_ACT_NONE)
                ws_act_row(xb, (int)T, NULL, d->pre);
            x = xb;
        }
        float *y = d->y_type == WS_F32 ? (float *)a->y + (size_t)r * To : yb;
        corr_row(x, T, y, To, J->w + (size_t)c * K, K, -(long long)d->pad_l, d->dilation,
                 J->b ? J->b[c] : 0.0f, x == xb ? 0 : T, y == yb ? 0 : To,
                 J->stream && y != yb && d->act == WS_ACT_NONE && !a->add);
        if (d->act != WS_ACT_NONE)
            ws_act_row(y, (int)To, NULL, d->act);
        if (a->add) {
            const float *ad = ld_f32(a->add, d->y_type,
                                     (size_t)n * (size_t)a->add_batch_stride + (size_t)c * To, To, ab);
            for (long long t = 0; t < To; t++)
                y[t] += ad[t];
        }
        if (d->y_type != WS_F32)
            ws_conv_st_row(a->y, d->y_type, (size_t)r * To, 1, y, To);
    }
    if (J->stream) /* the streaming stores reach memory before the task is joined */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void bwd_task(void *ctx, int ti, int nt)
{
    const ncl_job *J = ctx;
    const ws_conv_desc *d = J->d;
    const ws_conv_args *a = J->a;
    const int C = d->c_in, K = d->k;
    const long long T = J->t_in, To = J->t_out, D = d->dilation, P = d->pad_l;
    float *xb = J->tbuf + (size_t)ti * 3 * J->tlen, *gb = xb + J->tlen, *ob = gb + J->tlen;
    const long long lo = J->rows * ti / nt, hi = J->rows * (ti + 1) / nt;
    for (long long r = lo; r < hi; r++) {
        const int c = (int)(r % C);
        const float *wc = J->w + (size_t)c * K;
        const int need_x = J->part || d->act != WS_ACT_NONE;
        const float *x = need_x ? ld_f32(a->x, d->x_type, (size_t)r * T, T, xb) : NULL;
        const float *g;
        if (d->act == WS_ACT_NONE)
            g = ld_f32(a->dy, d->y_type, (size_t)r * To, To, gb);
        else {
            ws_conv_ld_row(gb, a->dy, d->y_type, (size_t)r * To, 1, To);
            corr_row(x, T, ob, To, wc, K, -P, D, J->b ? J->b[c] : 0.0f, 0, 0, 0); /* z */
            ws_act_grad_rows(gb, ob, (int)To, d->act);
            g = gb;
        }
        if (J->part)
            wgrad_row(g, To, x, T, K, D, P, J->part + (size_t)r * (K + 1), g == gb ? 0 : To,
                      x == xb ? 0 : T);
        if (a->dx) {
            float *dx = d->x_type == WS_F32 ? (float *)a->dx + (size_t)r * T : ob;
            corr_row(g, To, dx, T, wc, K, P, -D, 0.0f, 0, dx == ob ? 0 : T, J->stream && dx != ob);
            if (d->x_type != WS_F32)
                ws_conv_st_row(a->dx, d->x_type, (size_t)r * T, 1, dx, T);
        }
    }
    if (J->stream) /* the streaming stores reach memory before the task is joined */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static int threads_for(int n_threads, long long items)
{
    long long t = n_threads < WS_PARALLEL_MAX ? n_threads : WS_PARALLEL_MAX;
    return (int)(items < t ? items : t);
}

static int run(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
               const float *b, int n_threads, ws_err *err)
{
    ncl_job J = {.d = d, .a = a, .w = w, .b = b, .t_in = a->t_in, .t_out = t_out};
    J.rows = (long long)a->n * d->c_in;
    J.tlen = (size_t)(a->t_in > t_out ? a->t_in : t_out);
    const int nt = threads_for(n_threads, J.rows);
    const int K = d->k;
    J.stream = (double)J.rows * (double)(d->op == WS_CONV_BWD ? a->t_in : t_out) * sizeof(float) >=
               STREAM_BYTES;
    size_t nbuf, npart = 0;
    if (ws_mul_size((size_t)nt * 3, J.tlen, &nbuf) || ws_mul_size(nbuf, sizeof(float), &nbuf) ||
        ws_mul_size((size_t)J.rows, (size_t)(K + 1) * sizeof(double), &npart))
        return ws_errf(err, "ws_conv_run: depthwise scratch (n %d x c %d, t %lld) overflows", a->n,
                       d->c_in, (long long)J.tlen);
    const int bwd = d->op == WS_CONV_BWD, grads = bwd && (a->dw || a->db);
    J.tbuf = malloc(nbuf);
    J.part = grads ? malloc(npart) : NULL;
    if (!J.tbuf || (grads && !J.part)) {
        free(J.tbuf), free(J.part);
        return ws_errf(err, "ws_conv_run: out of memory for depthwise scratch (t %lld)",
                       (long long)J.tlen);
    }
    ws_parallel(nt, bwd ? bwd_task : fwd_task, &J);
    if (grads) /* per channel, the rows' partials over n in order */
        for (int c = 0; c < d->c_in; c++)
            for (int k = 0; k <= K; k++) {
                double s = 0;
                for (int n = 0; n < a->n; n++)
                    s += J.part[((size_t)n * d->c_in + c) * (K + 1) + k];
                if (k < K && a->dw)
                    a->dw[(size_t)c * K + k] = (float)s;
                else if (k == K && a->db)
                    a->db[c] = (float)s;
            }
    free(J.tbuf), free(J.part);
    return 0;
}

int ws_conv_dw_ncl_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err)
{
    return run(d, a, t_out, w, b, n_threads, err);
}

int ws_conv_dw_ncl_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err)
{
    return run(d, a, t_out, w, b, n_threads, err);
}

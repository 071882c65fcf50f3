/* conv.c - times the conv engine's CPU backend on the contract's CPU cases.
 *
 *   build/bench-conv [--threads N] [--reps R] [--case NAME]
 *
 * Cases (docs/conv-engine.md, "Must reach" of the CPU half; NCL f32 like PyTorch's):
 *   dw_fwd      depthwise causal K4, N2 C1536 T2048, forward
 *   dw_bwd      the same, backward alone (dx, dw, db)
 *   dw_fwdbwd   the same, forward then backward (dx, dw, db)
 *   dil_relu    dense K3 dilation 9 pad 9 + bias + ReLU, N32 C512 T32
 *   dw_silu     dw_fwd + SiLU (causal-conv1d's activation="silu", as Mamba runs it)
 *   dw_silu_bwd the same, backward alone (the SiLU's gradient, dx, dw, db)
 *   copy        memcpy of the depthwise cases' x (N2 C1536 T2048 floats, 25 MB) to another
 *               buffer, on each of the threads (a slice each): the copy bandwidth the
 *               depthwise rows are a fraction of (bytes read + written)
 *   read2       a sum over two such buffers, read side by side (a slice per thread): the
 *               read bandwidth of the backward's dw pass, which reads dy and x together
 * One line per case, key=value (bench/run-conv.sh reads it): the median and
 * min over R runs after 3 warm-ups, in microseconds, and the rate (GB/s of the
 * fewest bytes for the depthwise cases, GFLOP/s for the dense one). Inputs are
 * random in [-1, 1] (never zeros); exits non-zero if an output is not finite.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "ws_conv.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static float *rnd(size_t n, uint64_t seed)
{
    ws_rng r = {seed};
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(2.0 * ws_rng_uniform(&r) - 1.0);
    return x;
}

typedef struct {
    const char *name;
    int n, c_in, c_out, groups, k, dil, pad_l, pad_r, t;
    ws_act act;
    int bwd; /* 0 forward, 1 forward then backward, 2 backward alone */
} bcase;

static const bcase CASES[] = {
    {"dw_fwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, WS_ACT_NONE, 0},
    {"dw_bwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, WS_ACT_NONE, 2},
    {"dw_fwdbwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, WS_ACT_NONE, 1},
    {"dil_relu", 32, 512, 512, 1, 3, 9, 9, 9, 32, WS_ACT_RELU, 0},
    {"dw_silu", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, WS_ACT_SILU, 0},
    {"dw_silu_bwd", 2, 1536, 1536, 1536, 4, 1, 3, 0, 2048, WS_ACT_SILU, 2},
};

typedef struct {
    const float *src;
    float *dst;
    size_t n;
} copy_job;

static void copy_task(void *ctx, int ti, int nt)
{
    const copy_job *j = ctx;
    const size_t a = j->n * (size_t)ti / (size_t)nt, b = j->n * (size_t)(ti + 1) / (size_t)nt;
    memcpy(j->dst + a, j->src + a, (b - a) * sizeof(float));
}

/* one bandwidth row: fn over `threads` tasks, 3 warm-ups then `reps` timed runs, `bytes`
 * moved per run; prints the median and min */
static void bandwidth_row(const char *name, int threads, int reps, ws_task_fn fn, void *ctx, double bytes)
{
    double *ts = malloc(sizeof(double) * (size_t)reps);
    for (int r = -3; r < reps; r++) {
        double t0 = ws_now();
        ws_parallel(threads, fn, ctx);
        if (r >= 0)
            ts[r] = 1e6 * (ws_now() - t0);
    }
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    const double med = ts[reps / 2];
    printf("case=%s threads=%d us=%.1f min_us=%.1f gbps=%.2f gflops=0\n", name, threads, med, ts[0],
           bytes / med / 1e3);
    free(ts);
}

/* the copy row: x of the depthwise cases, memcpy'd in one slice per thread */
static void copy_row(int threads, int reps)
{
    const size_t n = (size_t)2 * 1536 * 2048;
    float *src = rnd(n, 1), *dst = malloc(n * sizeof(float));
    copy_job j = {src, dst, n};
    bandwidth_row("copy", threads, reps, copy_task, &j, 8.0 * (double)n);
    free(src), free(dst);
}

typedef float v8r __attribute__((vector_size(32)));

typedef struct {
    const float *a, *b;
    size_t n;
    float out[256];
} read_job;

/* the sum of a[i] + b[i] over [lo, hi) (a multiple of 32 long), 8 vector sums of 8 floats;
 * cloned for AVX2 so that the loads are 32 bytes wide where the CPU has them */
__attribute__((target_clones("avx2", "default"))) static float sum2(const float *a, const float *b,
                                                                    size_t lo, size_t hi)
{
    v8r s[8] = {{0}};
    for (size_t i = lo; i < hi; i += 32)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) {
            v8r x, y;
            memcpy(&x, a + i + 8 * k, sizeof x);
            memcpy(&y, b + i + 8 * k, sizeof y);
            s[k] += x;
            s[k + 4] += y;
        }
    float t = 0;
    for (int k = 0; k < 8; k++)
        for (int q = 0; q < 8; q++)
            t += s[k][q];
    return t;
}

static void read_task(void *ctx, int ti, int nt)
{
    read_job *j = ctx;
    const size_t lo = j->n * (size_t)ti / (size_t)nt / 32 * 32, hi = j->n * (size_t)(ti + 1) / (size_t)nt / 32 * 32;
    j->out[ti] = sum2(j->a, j->b, lo, hi);
}

/* the read2 row: two buffers of the depthwise cases' x size, summed side by side */
static int read_row(int threads, int reps)
{
    const size_t n = (size_t)2 * 1536 * 2048;
    float *a = rnd(n, 1), *b = rnd(n, 2);
    read_job j = {a, b, n, {0}};
    bandwidth_row("read2", threads, reps, read_task, &j, 8.0 * (double)n);
    const int bad = !isfinite(j.out[0]);
    free(a), free(b);
    return bad;
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 20;
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--case"))
            only = argv[i + 1];
    }
    int bad = 0;
    if (!only || !strcmp(only, "copy"))
        copy_row(threads, reps);
    if (!only || !strcmp(only, "read2"))
        bad |= read_row(threads, reps);
    for (size_t ci = 0; ci < sizeof CASES / sizeof *CASES; ci++) {
        const bcase *b = &CASES[ci];
        if (only && strcmp(only, b->name))
            continue;
        ws_err err;
        ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = b->c_in, .c_out = b->c_out, .groups = b->groups,
                          .k = b->k, .stride = 1, .dilation = b->dil, .pad_l = b->pad_l,
                          .pad_r = b->pad_r, .act = b->act};
        int t_out = ws_conv_out_len(&d, b->t);
        size_t nx = (size_t)b->n * b->c_in * b->t, ny = (size_t)b->n * b->c_out * t_out;
        size_t nw = (size_t)b->c_out * (b->c_in / b->groups) * b->k;
        float *x = rnd(nx, 1), *w = rnd(nw, 2), *bias = rnd((size_t)b->c_out, 3), *dy = rnd(ny, 4);
        float *y = malloc(ny * sizeof *y), *dx = malloc(nx * sizeof *dx), *dw = malloc(nw * sizeof *dw),
              *db = malloc((size_t)b->c_out * sizeof *db);
        ws_conv *f = ws_conv_new(&d, w, bias, threads, &err);
        d.op = WS_CONV_BWD;
        ws_conv *g = b->bwd ? ws_conv_new(&d, w, bias, threads, &err) : NULL;
        if (!f || (b->bwd && !g)) {
            fprintf(stderr, "bench-conv: %s: %s\n", b->name, err.msg);
            return 1;
        }
        ws_conv_args fa = {.n = b->n, .t_in = b->t, .x = x, .y = y};
        ws_conv_args ga = {.n = b->n, .t_in = b->t, .x = x, .dy = dy, .dx = dx, .dw = dw, .db = db};
        double *ts = malloc(sizeof(double) * (size_t)reps);
        for (int r = -3; r < reps; r++) {
            double t0 = ws_now();
            if ((b->bwd != 2 && ws_conv_run(f, &fa, &err)) || (g && ws_conv_run(g, &ga, &err))) {
                fprintf(stderr, "bench-conv: %s: %s\n", b->name, err.msg);
                return 1;
            }
            if (r >= 0)
                ts[r] = 1e6 * (ws_now() - t0);
        }
        qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
        for (size_t i = 0; i < ny && b->bwd != 2; i++)
            bad |= !isfinite(y[i]);
        for (size_t i = 0; i < nx && b->bwd; i++)
            bad |= !isfinite(dx[i]);
        double med = ts[reps / 2];
        /* fewest bytes: x read and y written (FWD); dy and x read, dx written (BWD) */
        double bytes = (b->bwd != 2 ? 4.0 * (double)(nx + ny) : 0) + (b->bwd ? 4.0 * (double)(nx + ny + nx) : 0);
        double flops = 2.0 * (double)ny * (b->c_in / b->groups) * b->k;
        printf("case=%s threads=%d us=%.1f min_us=%.1f gbps=%.2f gflops=%.2f\n", b->name, threads, med,
               ts[0], bytes / med / 1e3, flops * (b->bwd == 1 ? 3 : b->bwd == 2 ? 2 : 1) / med / 1e3);
        free(ts), free(x), free(w), free(bias), free(dy), free(y), free(dx), free(dw), free(db);
        ws_conv_free(f);
        ws_conv_free(g);
    }
    return bad;
}

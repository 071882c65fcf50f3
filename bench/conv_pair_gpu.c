/* conv_pair_gpu.c - the fused pair (ws_gpu_conv_pair, ptx_hpair.h) against the same two convs
 * as two calls, on the GPU.
 *
 *   bench-conv_pair_gpu [--only SUBSTRING] [--iters N]
 *
 * Rows (bf16 storage and math, NCL and NLC; b1, b2 uniform in +-0.1, w in +-1/sqrt(C*K), x
 * uniform in [-1, 1]; add = x item by item, add_batch_stride C*T):
 *   resblock   the ResConv1D block, N256 C512 T32: relu, K3 D9 P9/9 + bias, relu, K1 + bias,
 *              + x (bench-conv_gpu's resblock row, there as two calls)
 *   jukebox    the same block at Jukebox's width and reach: N4 C64 T131072, K3 D27 P27/27
 * Lines, us per call: "2calls", the two convs as two calls (ws_gpu_conv_pair_fuse -1: each on
 * the engine's kernel for it, h through memory); then the fused kernel (forced) in each variant:
 * clN_bkM, weights multicast over a cluster of N blocks, weight stages of M channels (the
 * plan's default is ptx_hpair.h's WS_HPAIR_CL, WS_HPAIR_BK). Median and min of --iters
 * (default 50) after 10 warm-up calls, each call between two CUDA events, inputs rotated over
 * 4 device copies (the L2 of 50 MB holds one). TFLOP/s of the median (2 * MACs of both
 * convs); the floor max(bytes / 3.0 TB/s, FLOP / 780 TFLOP/s), bytes = x read, y written,
 * the weights read once. rel_2calls: y against the two calls' (whole); rel_cpu0: the two
 * calls' item 0 against the CPU pair's. --n N: every row at batch N.
 * Without a GPU it prints one line and exits 77; 1 if a check fails or a call errs.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cuda/gpu_conv_internal.h"
#include "ws_conv.h"

#define SETS 4
#define BW 3.0e12
#define RATE 780.0e12

typedef struct {
    const char *name;
    int n, t, c, k, dil;
} prow;

static const prow ROWS[] = {
    { "resblock", 256, 32, 512, 3, 9 },
    { "jukebox", 4, 131072, 64, 3, 27 },
};

static void *rnd(size_t n, int bf, double scale, uint64_t seed)
{
    ws_rng r = { seed };
    void *p = malloc(n * (bf ? 2 : 4));
    if (!p)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const float v = (float)(scale * (2.0 * ws_rng_uniform(&r) - 1.0));
        if (bf)
            ((uint16_t *)p)[i] = ws_f32_to_bf16(v);
        else
            ((float *)p)[i] = v;
    }
    return p;
}

static double rel(const uint16_t *a, const uint16_t *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double x = ws_bf16_to_f32(a[i]), y = ws_bf16_to_f32(b[i]);
        num += (x - y) * (x - y), den += y * y;
    }
    return isnan(num) || isnan(den) ? NAN : den > 0 ? sqrt(num / den) : sqrt(num);
}

static int cmpd(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* median and min of iters calls, set i % SETS each */
static int timeit(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, int iters, double *med, double *mn, ws_err *err)
{
    double *t = malloc((size_t)iters * sizeof *t), m, x;
    if (!t)
        return -1;
    for (int i = 0; i < 10; i++)
        if (ws_gpu_conv_pair_bench(p, &a[i % SETS], 0, 1, &m, &x, err))
            return free(t), -1;
    for (int i = 0; i < iters; i++) {
        if (ws_gpu_conv_pair_bench(p, &a[i % SETS], 0, 1, &t[i], &x, err))
            return free(t), -1;
    }
    qsort(t, (size_t)iters, sizeof *t, cmpd);
    *med = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
    *mn = t[0];
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int iters = 50, nover = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            nover = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--only SUBSTRING] [--iters N] [--n N]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1)
        iters = 1;
    ws_err e = { "" };
    ws_gpu *g = ws_gpu_open(0, &e);
    if (!g) {
        printf("bench-conv_pair_gpu: skipped: %s\n", e.msg);
        return 77;
    }
    int bad = 0;
    printf("%-22s %-10s %9s %9s %8s %8s %10s %10s\n", "row", "variant", "us", "min_us", "TFLOP/s", "floor",
           "rel_2calls", "rel_cpu0");
    for (size_t ri = 0; ri < sizeof ROWS / sizeof *ROWS; ri++)
        for (int lay = 0; lay < 2; lay++) {
            const prow *r = &ROWS[ri];
            char label[64];
            snprintf(label, sizeof label, "%s/%s/bf16", r->name, lay ? "nlc" : "ncl");
            if (only && !strstr(label, only))
                continue;
            const ws_layout L = lay ? WS_NLC : WS_NCL;
            ws_conv_desc d1 = { .op = WS_CONV_FWD, .c_in = r->c, .c_out = r->c, .groups = 1, .k = r->k, .stride = 1,
                                .dilation = r->dil, .pad_l = r->dil * (r->k - 1) / 2,
                                .pad_r = r->dil * (r->k - 1) / 2, .x_layout = L, .y_layout = L, .x_type = WS_BF16,
                                .w_type = WS_F32, .y_type = WS_BF16, .math = WS_MATH_BF16, .pre = WS_ACT_RELU,
                                .act = WS_ACT_RELU };
            ws_conv_desc d2 = d1;
            d2.k = 1, d2.dilation = 1, d2.pad_l = d2.pad_r = 0, d2.pre = d2.act = WS_ACT_NONE;
            const int n = nover > 0 ? nover : r->n;
            const size_t nx = (size_t)n * r->c * r->t, bytes = nx * 2;
            float *w1 = rnd((size_t)r->c * r->c * r->k, 0, 1.0 / sqrt(r->c * r->k), 11);
            float *w2 = rnd((size_t)r->c * r->c, 0, 1.0 / sqrt(r->c), 12);
            float *b1 = rnd((size_t)r->c, 0, 0.1, 13), *b2 = rnd((size_t)r->c, 0, 0.1, 14);
            uint16_t *x = rnd(nx, 1, 1.0, 15), *yf = malloc(bytes), *yc = malloc(bytes);
            uint64_t dx[SETS] = { 0 }, dy[SETS] = { 0 };
            ws_gpu_conv_pair *p = ws_gpu_conv_pair_new(g, &d1, w1, b1, &d2, w2, b2, &e);
            if (!p || !w1 || !w2 || !b1 || !b2 || !x || !yf || !yc) {
                fprintf(stderr, "%s: %s\n", label, p ? "out of memory" : e.msg);
                return 1;
            }
            ws_conv_pair_args a[SETS];
            for (int s = 0; s < SETS; s++) {
                if (ws_gpu_alloc(g, bytes, &dx[s], &e) || ws_gpu_alloc(g, bytes, &dy[s], &e) ||
                    ws_gpu_upload(g, dx[s], x, bytes, &e)) {
                    fprintf(stderr, "%s: %s\n", label, e.msg);
                    return 1;
                }
                a[s] = (ws_conv_pair_args){ .n = n, .t_in = r->t, .x = (void *)(uintptr_t)dx[s],
                                            .add = (void *)(uintptr_t)dx[s],
                                            .add_batch_stride = (long long)r->c * r->t,
                                            .y = (void *)(uintptr_t)dy[s] };
            }
            const double flop = 2.0 * n * r->t * (double)r->c * r->c * (r->k + 1);
            const double floor_b = (2.0 * bytes + 2.0 * r->c * r->c * (r->k + 1)) / BW * 1e6, floor_f = flop / RATE * 1e6;
            const double fl = floor_b > floor_f ? floor_b : floor_f;
            /* the two calls first: the reference of every variant */
            ws_gpu_conv_pair_fuse(p, -1);
            double med = 0, mn = 0;
            if (ws_gpu_conv_pair_run(p, &a[0], &e) || ws_gpu_download(g, yc, dy[0], bytes, &e) ||
                timeit(p, a, iters, &med, &mn, &e)) {
                fprintf(stderr, "%s: %s\n", label, e.msg);
                return 1;
            }
            double r0 = NAN;
            {   /* item 0 on the CPU pair (NLC and NCL items are contiguous alike) */
                ws_conv_pair *cp = ws_conv_pair_new(&d1, w1, b1, &d2, w2, b2, 0, &e);
                const size_t n0 = (size_t)r->c * r->t;
                uint16_t *y0 = malloc(n0 * 2);
                ws_conv_pair_args ca = { .n = 1, .t_in = r->t, .x = x, .add = x,
                                         .add_batch_stride = (long long)r->c * r->t, .y = y0 };
                if (cp && y0 && !ws_conv_pair_run(cp, &ca, &e))
                    r0 = rel(yc, y0, n0);
                ws_conv_pair_free(cp);
                free(y0);
            }
            printf("%-22s %-10s %9.1f %9.1f %8.1f %8.1f %10s %10.2e%s\n", label, "2calls", med, mn, flop / med * 1e-6, fl,
                   "-", r0, !(r0 <= 1e-2) ? "  CHECK FAILED" : "");
            bad |= !(r0 <= 1e-2);
            ws_gpu_conv_pair_fuse(p, 1);
            static const int VAR[][2] = { { 2, 32 }, { 1, 32 }, { 2, 64 }, { 1, 64 } };
            for (int v = 0; v < 4; v++) {
                char vn[16];
                snprintf(vn, sizeof vn, "cl%d_bk%d", VAR[v][0], VAR[v][1]);
                const unsigned long f0 = ws_gpu_conv_pair_fused_calls(p);
                memset(yf, 0xff, bytes); /* NaN: a y not written fails the check */
                if (ws_gpu_conv_pair_variant(p, VAR[v][0], VAR[v][1], &e) || ws_gpu_upload(g, dy[0], yf, bytes, &e) ||
                    ws_gpu_conv_pair_run(p, &a[0], &e) || ws_gpu_download(g, yf, dy[0], bytes, &e) ||
                    ws_gpu_conv_pair_fused_calls(p) != f0 + 1 || timeit(p, a, iters, &med, &mn, &e)) {
                    fprintf(stderr, "%s %s: %s\n", label, vn, e.msg[0] ? e.msg : "not fused");
                    bad = 1;
                    continue;
                }
                const double rc = rel(yf, yc, nx);
                printf("%-22s %-10s %9.1f %9.1f %8.1f %8.1f %10.2e %10s%s\n", label, vn, med, mn, flop / med * 1e-6, fl, rc,
                       "-", !(rc <= 1e-2) ? "  CHECK FAILED" : "");
                bad |= !(rc <= 1e-2);
            }
            fflush(stdout);
            for (int s = 0; s < SETS; s++)
                ws_gpu_release(g, dx[s]), ws_gpu_release(g, dy[s]);
            ws_gpu_conv_pair_free(p);
            free(w1), free(w2), free(b1), free(b2), free(x), free(yf), free(yc);
        }
    ws_gpu_close(g);
    return bad;
}

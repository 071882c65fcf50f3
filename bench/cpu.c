/* cpu.c - times the CPU log-Mel and conv stem on 30 s windows.
 *
 *   build/bench-cpu [--threads N] [--reps R] [--n-mels 80|128] [--d D] [--seconds S] [--windows W]
 *                   [--mel-only]
 *
 * --windows W: the stem runs on W windows in one call (the inputs' log-Mels in turn, as a
 * long recording gives them); stem_ms is then the call's, and window_ms and gflops per
 * window (the log-Mel stays one window's).
 * S < 30: a clip of S seconds padded to one 30 s window, as --pad audio does.
 * --mel-only: the log-Mel alone, call after call, each output freed as the command frees a
 * file's (mel_ms and mel_min_ms; the other lines time it between stem runs, caches cold).
 *
 * Inputs: three different 30 s synthetic signals, rotated so that repeated
 * runs do not all hit one buffer. Reports the median and min over R runs
 * after 3 warm-up runs, in milliseconds, as one line of key=value pairs
 * (bench/run-cpu.sh reads it); gflops is a full window's FLOPs over the stem
 * time, so it exceeds the machine when the padded tail is skipped. Exits
 * non-zero if an output is not finite. --ceiling instead times one
 * 1536^3 sgemm on one thread (best of 5): the CPU path's arithmetic ceiling.
 * --peak instead times a loop of independent FMAs on one thread (16 zmm or 12 ymm
 * accumulators, best of 3): the core's FMA peak for AVX-512 and AVX2, what a kernel's
 * GFLOP/s is a fraction of (0 for a set the CPU lacks). --peak --threads N runs it on N
 * threads at once and sums them: the peak with N cores busy (clocks drop as more run).
 * --convs [N_MELS D] instead times the stem's conv1 and conv2 alone on one thread: through the
 * engine, and as the bare product (with and without the GELU epilogue), each as a share of
 * the core's FMA peak measured in the same run for the path the engine runs (AVX-512 or AVX2,
 * as WS_CPU_ISA and the CPU pick; the higher of a probe before the convs and one after, so
 * that a probe slowed by a busy host does not inflate the shares; min of 30 runs); the
 * engine's also counting
 * only the multiply-adds it does where it computes rows by minimal filtering (row_group 2;
 * WS_CPU_WINOGRAD=0 for the direct sums). --kernel instead times the
 * bare product on blocks that stay in cache (192 rows; 384 x 256, 384 x 1152 and 32 x 256),
 * best of 5: the micro-kernel's own share of the peak.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "conv/blas.h"
#include "conv/conv.h"
#include "conv/engine.h" /* ws_conv_row_group */
#include "whisper/stem.h"
#include "mel/mel.h"
#include "whisper/model.h"

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f,fma"))) static double peak512(long n)
{
    __m512 a[16];
    for (int i = 0; i < 16; i++)
        a[i] = _mm512_set1_ps(1.0f + (float)i * 1e-7f);
    const __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-8f);
    double t0 = ws_now();
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
            a[i] = _mm512_fmadd_ps(a[i], b, c);
    }
    const double t = ws_now() - t0;
    float s = 0;
    for (int i = 0; i < 16; i++)
        s += _mm512_reduce_add_ps(a[i]);
    return s == 12345.0f ? 0 : 2.0 * 16 * 16 * (double)n / t / 1e9;
}

__attribute__((target("avx2,fma"))) static double peak256(long n)
{
    __m256 a[12];
    for (int i = 0; i < 12; i++)
        a[i] = _mm256_set1_ps(1.0f + (float)i * 1e-7f);
    const __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-8f);
    double t0 = ws_now();
    for (long k = 0; k < n; k++) {
#pragma GCC unroll 12
        for (int i = 0; i < 12; i++)
            a[i] = _mm256_fmadd_ps(a[i], b, c);
    }
    const double t = ws_now() - t0;
    float s[8];
    __m256 z = a[0];
    for (int i = 1; i < 12; i++)
        z = _mm256_add_ps(z, a[i]);
    _mm256_storeu_ps(s, z);
    return s[0] == 12345.0f ? 0 : 2.0 * 8 * 12 * (double)n / t / 1e9;
}

/* the probe of the path the engine runs (WS_CPU_ISA and the CPU): AVX-512 or AVX2; 0 on the
 * plain-C path, which has no FMA peak to be a share of. *name: the path's name for the line */
static double peak_path(const char **name)
{
    if (ws_cpu_isa() >= WS_ISA_AVX512) {
        *name = "avx512";
        return peak512(100000000L);
    }
    if (ws_cpu_isa() >= WS_ISA_AVX2) {
        *name = "avx2";
        return peak256(100000000L);
    }
    *name = "scalar";
    return 0;
}
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* --peak --threads N: the probe on N threads at once (each its own loop); the sum */
typedef struct {
    double g[256];
    int wide;
} peak_job;

static void peak_task(void *ctx, int i, int n)
{
    (void)n;
    peak_job *j = ctx;
#if defined(__x86_64__)
    j->g[i] = j->wide ? peak512(100000000L) : peak256(100000000L);
#else
    j->g[i] = 0;
#endif
}

static double peak_all(int threads, int wide)
{
    peak_job j = {.wide = wide};
    ws_parallel(threads, peak_task, &j);
    double s = 0;
    for (int i = 0; i < threads; i++)
        s += j.g[i];
    return s;
}

/* --convs: the stem's two convs alone on one thread, through the engine (ws_conv_run: staging,
 * packing, the product, bias + GELU) and as the bare product of the same shape
 * (ws_sgemm_conv over time-major input already staged, with and without the GELU epilogue),
 * each as GFLOP/s and a share of the core's FMA peak measured in the same run */

static double time_med(int reps, void (*fn)(void *), void *ctx, double *min)
{
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = -3; r < reps; r++) {
        const double t0 = ws_now();
        fn(ctx);
        if (r >= 0)
            t[r] = ws_now() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    const double m = t[reps / 2];
    *min = t[0];
    free(t);
    return m;
}

typedef struct {
    ws_conv *c;
    ws_conv_args a;
} conv_call;

static void run_conv(void *ctx)
{
    conv_call *c = ctx;
    ws_err err;
    if (ws_conv_run(c->c, &c->a, &err))
        fprintf(stderr, "bench-cpu: %s\n", err.msg);
}

typedef struct {
    int M, N, taps, ic, stride, rows; /* rows per sgemm call (the engine's block) */
    const float *x, *pk;
    float *y;
    const ws_sgemm_epi *e;
} prod_call;

static void run_prod(void *ctx)
{
    prod_call *p = ctx;
    for (int m0 = 0; m0 < p->M; m0 += p->rows) {
        const int mb = p->M - m0 < p->rows ? p->M - m0 : p->rows;
        ws_sgemm_conv(mb, p->N, p->taps, p->ic, p->x + (size_t)p->stride * m0 * p->ic, (long)p->stride * p->ic,
                      p->ic, p->pk, 0.0f, p->y + (size_t)m0 * p->N, p->N, p->e);
    }
}

static int convs(int n_mels, int d, int reps)
{
    const int T = 3000;
    ws_conv_desc pair[2];
    ws_stem_descs(n_mels, d, WS_PREC_FP32, pair);
    ws_rng r = {7};
    const int cin[2] = {n_mels, d}, M[2] = {T, T / 2}, S[2] = {1, 2}, rows[2] = {256, 192};
    const char *isa;
    const double peak = peak_path(&isa);
    if (peak <= 0) {
        fprintf(stderr, "bench-cpu: --convs: the plain-C path has no FMA peak to compare with\n");
        return 2;
    }
    float *xin = malloc(sizeof(float) * (size_t)(T + 2) * d), *h = malloc(sizeof(float) * (size_t)T * d);
    float *y = malloc(sizeof(float) * (size_t)T * d), *b = malloc(sizeof(float) * d);
    for (size_t i = 0; i < (size_t)(T + 2) * d; i++)
        xin[i] = (float)(ws_rng_uniform(&r) - 0.5);
    for (int i = 0; i < d; i++)
        b[i] = 0.01f;
    /* each conv's line waits for the probe after both (the higher of the two probes is the
     * peak: a probe that a busy host slowed would put the shares above 100 %) */
    struct {
        double med, mn, mults, pmed, pmn, gmed, gmn; /* engine, product, product + GELU (s) */
        int group;
    } res[2];
    for (int c = 0; c < 2; c++) {
        const int K = 3 * cin[c];
        float *w = malloc(sizeof(float) * (size_t)d * K);
        for (size_t i = 0; i < (size_t)d * K; i++)
            w[i] = (float)(ws_rng_uniform(&r) - 0.5) * 0.05f;
        ws_err err;
        ws_conv *plan = ws_conv_new(&pair[c], w, b, 1, &err);
        if (!plan) {
            fprintf(stderr, "bench-cpu: %s\n", err.msg);
            return 1;
        }
        conv_call cc = {plan, {.n = 1, .t_in = T, .x = c ? h : xin, .y = c ? y : h}};
        double mn, med = time_med(reps, run_conv, &cc, &mn);
        /* the product alone: w as [K][d] (tap-major rows, as the engine packs it) */
        float *wk = malloc(sizeof(float) * (size_t)K * d);
        for (int o = 0; o < d; o++)
            for (int i = 0; i < cin[c]; i++)
                for (int k = 0; k < 3; k++)
                    wk[((size_t)k * cin[c] + i) * d + o] = w[((size_t)o * cin[c] + i) * 3 + k];
        float *pk = aligned_alloc(64, (ws_sgemm_packed_floats(K, d) + 15) / 16 * 16 * sizeof(float));
        ws_sgemm_pack(K, d, wk, d, pk);
        const ws_sgemm_epi gelu = {b, WS_ACT_GELU, NULL, 0};
        prod_call pc = {M[c], d, 3, cin[c], S[c], rows[c], xin, pk, y, NULL};
        double pmn, pmed = time_med(reps, run_prod, &pc, &pmn);
        pc.e = &gelu;
        double gmn, gmed = time_med(reps, run_prod, &pc, &gmn);
        /* with minimal filtering (rows in pairs) the engine does 4 (stride 1) or 5 (stride 2)
         * of the direct 6 multiply-adds a pair: engine_pct counts the direct ones (the work
         * done for the output), engine_mults_pct those it does */
        const int R = ws_conv_row_group(plan);
        const double mults = R == 1 ? 1.0 : S[c] == 1 ? 4.0 / 6 : 5.0 / 6;
        res[c].med = med, res[c].mn = mn, res[c].mults = mults, res[c].group = R;
        res[c].pmed = pmed, res[c].pmn = pmn, res[c].gmed = gmed, res[c].gmn = gmn;
        ws_conv_free(plan);
        free(w), free(wk), free(pk);
    }
    const double after = peak_path(&isa);
    const double hi = after > peak ? after : peak;
    printf("fma_peak_gflops=%.1f isa=%s threads=1 sgemm=%s (probes %.1f before, %.1f after)\n", hi, isa,
           ws_blas_name(), peak, after);
    for (int c = 0; c < 2; c++) {
        const int K = 3 * cin[c];
        const double flops = 2.0 * M[c] * d * K, g = 1e9 * hi / 100; /* FLOP/s per percent */
        printf("conv%d M=%d N=%d K=%d row_group=%d engine_ms=%.3f engine_min_ms=%.3f engine_pct=%.1f "
               "engine_mults_pct=%.1f product_ms=%.3f product_pct=%.1f product_gelu_ms=%.3f "
               "product_gelu_pct=%.1f\n",
               c + 1, M[c], d, K, res[c].group, 1e3 * res[c].med, 1e3 * res[c].mn, flops / res[c].mn / g,
               res[c].mults * flops / res[c].mn / g, 1e3 * res[c].pmed, flops / res[c].pmn / g,
               1e3 * res[c].gmed, flops / res[c].gmn / g);
    }
    free(xin), free(h), free(y), free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--kernel")) { /* the product on blocks already in cache */
#if defined(__x86_64__)
        const char *isa;
        double peak = peak_path(&isa), g[3];
        if (peak <= 0) {
            fprintf(stderr, "bench-cpu: --kernel: the plain-C path has no FMA peak to compare with\n");
            return 2;
        }
        static const int shapes[][3] = {{192, 384, 256}, {192, 384, 1152}, {192, 32, 256}};
        for (int i = 0; i < 3; i++) {
            const int m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
            float *a = malloc(sizeof(float) * (size_t)m * k), *bb = malloc(sizeof(float) * (size_t)k * n);
            float *c = malloc(sizeof(float) * (size_t)m * n);
            float *pk = aligned_alloc(64, (ws_sgemm_packed_floats(k, n) + 15) / 16 * 16 * sizeof(float));
            for (long j = 0; j < (long)m * k; j++)
                a[j] = (float)(j % 7) * 0.1f;
            for (long j = 0; j < (long)k * n; j++)
                bb[j] = (float)(j % 5) * 0.1f;
            ws_sgemm_pack(k, n, bb, n, pk);
            const int reps = (int)(2e9 / (2.0 * m * n * k)) + 1;
            double best = 1e9;
            for (int r = 0; r < 5; r++) {
                const double t0 = ws_now();
                for (int q = 0; q < reps; q++)
                    ws_sgemm_conv(m, n, 1, k, a, k, 0, pk, 0.0f, c, n, NULL);
                const double t = ws_now() - t0;
                best = t < best ? t : best;
            }
            g[i] = 2.0 * m * n * k * reps / best / 1e9;
            free(a), free(bb), free(c), free(pk);
        }
        const double after = peak_path(&isa); /* the higher of the probes before and after */
        peak = after > peak ? after : peak;
        for (int i = 0; i < 3; i++)
            printf("kernel M=%d N=%d K=%d gflops=%.1f pct=%.1f\n", shapes[i][0], shapes[i][1], shapes[i][2],
                   g[i], 100 * g[i] / peak);
        printf("fma_peak_gflops=%.1f isa=%s sgemm=%s\n", peak, isa, ws_blas_name());
        return 0;
#else
        fprintf(stderr, "bench-cpu: --kernel needs x86-64 (the peak probe)\n");
        return 2;
#endif
    }
    if (argc >= 2 && !strcmp(argv[1], "--convs")) {
#if defined(__x86_64__)
        const int nm = argc >= 4 ? atoi(argv[2]) : 80, dd = argc >= 4 ? atoi(argv[3]) : 384;
        if ((nm != 80 && nm != 128) || dd < 32 || dd > 4096) {
            fprintf(stderr, "bench-cpu: --convs [N_MELS D]\n");
            return 2;
        }
        return convs(nm, dd, 30);
#else
        fprintf(stderr, "bench-cpu: --convs needs x86-64 (the peak probe)\n");
        return 2;
#endif
    }
    if ((argc == 2 || (argc == 4 && !strcmp(argv[2], "--threads"))) && !strcmp(argv[1], "--peak")) {
        double p512 = 0, p256 = 0;
        int threads = argc == 4 ? atoi(argv[3]) : 1;
        threads = threads < 1 ? 1 : threads > 256 ? 256 : threads;
#if defined(__x86_64__)
        for (int r = 0; r < 3; r++) {
            if (ws_cpu_isa_have() >= WS_ISA_AVX512) {
                const double g = peak_all(threads, 1);
                p512 = g > p512 ? g : p512;
            }
            if (ws_cpu_isa_have() >= WS_ISA_AVX2) {
                const double g = peak_all(threads, 0);
                p256 = g > p256 ? g : p256;
            }
        }
#endif
        printf("fma_peak_avx512_gflops=%.1f fma_peak_avx2_gflops=%.1f threads=%d\n", p512, p256, threads);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--ceiling")) {
        enum { S = 1536 };
        float *a = malloc(sizeof(float) * S * S), *b = malloc(sizeof(float) * S * S),
              *c = malloc(sizeof(float) * S * S);
        for (int i = 0; i < S * S; i++) {
            a[i] = (float)(i % 101) * 1e-3f;
            b[i] = (float)(i % 89) * 1e-3f;
        }
        double best = 1e9;
        for (int r = 0; r < 6; r++) {
            double t0 = ws_now();
            ws_sgemm(S, S, S, 1.0f, a, S, b, S, 0.0f, c, S);
            double t = ws_now() - t0;
            if (r && t < best)
                best = t;
        }
        printf("sgemm_ceiling_gflops=%.1f n=%d threads=1 sgemm=%s\n", 2.0 * S * S * S / best / 1e9, S,
               ws_blas_name());
        free(a), free(b), free(c);
        return 0;
    }
    int threads = 1, reps = 20, n_mels = 80, d = 384, windows = 1, mel_only = 0;
    double seconds = 30;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--mel-only")) {
            mel_only = 1;
            i--;
            continue;
        }
        if (i + 1 >= argc)
            break;
        if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--n-mels"))
            n_mels = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--d"))
            d = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--windows"))
            windows = atoi(argv[i + 1]);
    }
    const int n_audio = (int)(seconds * 16000);
    if (threads < 1 || reps < 1 || d < 4 || n_audio < 1 || n_audio > 480000 || windows < 1 || windows > 4096) {
        fprintf(stderr, "bench-cpu: bad arguments\n");
        return 2;
    }
    enum { N_IN = 3, N = 480000 };
    float *audio[N_IN];
    for (int k = 0; k < N_IN; k++) {
        ws_rng r = {(uint64_t)k + 1};
        audio[k] = malloc(sizeof(float) * N);
        for (int i = 0; i < N; i++)
            audio[k][i] = i >= n_audio ? 0.0f : (float)(0.2 * sin(2 * M_PI * (200 + 50 * k) * i / 16000.0) *
                                      (0.5 + 0.5 * sin(2 * M_PI * 3.0 * i / 16000.0)) +
                                  0.05 * (ws_rng_uniform(&r) - 0.5));
    }
    ws_err err;
    ws_mel *mel = ws_mel_new(n_mels, threads, &err);
    if (mel && mel_only) { /* the log-Mel alone, call after call, each output freed */
        double *t = malloc(sizeof(double) * reps);
        int bad = 0;
        for (int i = -3; i < reps; i++) {
            ws_mel_out o;
            const double t0 = ws_now();
            bad |= ws_mel_compute(mel, audio[(i + 3) % N_IN], (size_t)n_audio, WS_PAD_AUDIO, &o, &err) != 0;
            const double t1 = ws_now();
            ws_mel_out_free(&o);
            if (i >= 0)
                t[i] = 1e3 * (t1 - t0);
        }
        qsort(t, reps, sizeof *t, cmp_double);
        printf("seconds=%g threads=%d n_mels=%d reps=%d mel_only=1 mel_ms=%.3f mel_min_ms=%.3f\n", seconds,
               threads, n_mels, reps, t[reps / 2], t[0]);
        free(t);
        for (int k = 0; k < N_IN; k++)
            free(audio[k]);
        ws_mel_free(mel);
        return bad;
    }
    ws_model m;
    if (!mel || ws_model_init_random(&m, n_mels, d, 1, 0, &err)) {
        fprintf(stderr, "bench-cpu: %s\n", err.msg);
        return 1;
    }
    ws_stem *stem = ws_stem_new_cpu(&m, threads, &err);
    if (!stem) {
        fprintf(stderr, "bench-cpu: %s\n", err.msg);
        return 1;
    }
    ws_mel_out mo[N_IN];
    for (int k = 0; k < N_IN; k++)
        ws_mel_compute(mel, audio[k], (size_t)n_audio, WS_PAD_AUDIO, &mo[k], &err);
    const size_t win = (size_t)n_mels * 3000;
    float *mels = malloc(sizeof(float) * win * (size_t)windows); /* W windows: the inputs in turn */
    for (int w = 0; w < windows; w++)
        memcpy(mels + (size_t)w * win, mo[w % N_IN].data, sizeof(float) * win);
    float *out = malloc(sizeof(float) * 1500 * d * (size_t)windows);
    double *tm = malloc(sizeof(double) * reps), *ts = malloc(sizeof(double) * reps);
    for (int i = -3; i < reps; i++) {
        int k = (i + 3) % N_IN;
        ws_mel_out o;
        double t0 = ws_now();
        ws_mel_compute(mel, audio[k], (size_t)n_audio, WS_PAD_AUDIO, &o, &err);
        double t1 = ws_now();
        if (windows == 1)
            ws_stem_run(stem, mo[k].data, 1, 3000, 0, out, &err);
        else
            ws_stem_run(stem, mels, windows, 3000, 0, out, &err);
        double t2 = ws_now();
        ws_mel_out_free(&o);
        if (i >= 0) {
            tm[i] = 1e3 * (t1 - t0);
            ts[i] = 1e3 * (t2 - t1);
        }
    }
    char blas_id[96];
    snprintf(blas_id, sizeof blas_id, "%s", ws_blas_name());
    for (char *c = blas_id; *c; c++)
        if (*c == ' ')
            *c = '_';
    int bad = 0;
    for (size_t i = 0; i < (size_t)1500 * d * windows; i++)
        bad |= !isfinite(out[i]);
    qsort(tm, reps, sizeof *tm, cmp_double);
    qsort(ts, reps, sizeof *ts, cmp_double);
    printf("seconds=%g threads=%d n_mels=%d d=%d reps=%d mel_ms=%.3f mel_min_ms=%.3f stem_ms=%.3f stem_min_ms=%.3f "
           "windows=%d window_ms=%.3f gflops=%.1f sgemm=%s\n",
           seconds, threads, n_mels, d, reps, tm[reps / 2], tm[0], ts[reps / 2], ts[0], windows,
           ts[reps / 2] / windows,
           2.0 * 3 * (3000.0 * n_mels * d + 1500.0 * d * d) * windows / (ts[reps / 2] * 1e6), blas_id);
    for (int k = 0; k < N_IN; k++) {
        ws_mel_out_free(&mo[k]);
        free(audio[k]);
    }
    free(out), free(mels), free(tm), free(ts);
    ws_stem_free(stem);
    ws_mel_free(mel);
    ws_model_free(&m);
    if (bad)
        fprintf(stderr, "bench-cpu: non-finite output\n");
    return bad;
}

/* bench/resample.c - accuracy and speed of the candidate resamplers for 16 kHz.
 *
 * For each candidate (libsoxr at SOXR_VHQ and SOXR_HQ, with its default
 * "small" passband roll-off and with SOXR_ROLLOFF_NONE; libsamplerate at
 * SRC_SINC_BEST_QUALITY and SRC_SINC_MEDIUM_QUALITY when it is installed; and
 * ws_resample, the product path) and each input rate r in {44100, 48000,
 * 22050, 8000}:
 *
 *   passband  x(t) = sum_k a_k sin(2 pi f_k t + p_k), every f_k < 0.9 * min(r, 16000) / 2,
 *             sampled at r (float32), resampled, compared with the same x(t)
 *             evaluated in double at t = i / 16000. Error = 20 log10(||y - x|| / ||x||)
 *             over the middle of the signal (0.5 s .. 2.5 s of 3 s: away from the
 *             edges, where the signal starts and stops abruptly), and max |y - x|.
 *             A delay of even 1/100 sample would show as about -50 dB at 7 kHz, so this
 *             also checks that output sample 0 is input time 0.
 *   length    the flushed output length must be round(n * 16000 / r).
 *   alias     (downsampling only) tones between 8.4 kHz and r/2, which must vanish:
 *             output RMS over the middle relative to the input RMS, in dB.
 *   speed     30 s of the multi-tone at 44.1 kHz -> 16 kHz, median of 9 runs.
 *
 * The product path (ws_resample) is validated: the program exits 1 when it misses
 * -120 dB passband error, -100 dB aliasing, or the exact output length.
 *
 * Usage: build/bench-resample            (results: bench/RESULTS-audio.md)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <soxr.h>
#ifdef WS_HAVE_SAMPLERATE
#include <samplerate.h>
#endif

#include "audio/audio.h"
#include "common.h"

#define OUT_RATE 16000.0
#define SIG_SECONDS 3.0
#define MID_FROM 0.5 /* seconds of output skipped at each end */
#define SPEED_SECONDS 30.0
#define SPEED_RUNS 9

/* Product bounds (exit 1 when missed). */
#define PASS_MAX_DB (-120.0)
#define ALIAS_MAX_DB (-100.0)

typedef int (*resample_fn)(const float *in, size_t n, double in_rate, float **out, size_t *n_out,
                           const void *cfg);

typedef struct {
    const char *name;
    resample_fn fn;
    const void *cfg;
    int is_product;
} candidate;

/* --- candidates ---------------------------------------------------------- */

typedef struct {
    unsigned long recipe, flags;
} soxr_cfg;

static int run_soxr(const float *in, size_t n, double in_rate, float **out, size_t *n_out,
                    const void *cfgp)
{
    const soxr_cfg *cfg = cfgp;
    size_t want = (size_t)llround((double)n * OUT_RATE / in_rate);
    size_t cap = want + 4096;
    float *y = malloc(cap * sizeof *y);
    if (!y)
        return -1;
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(cfg->recipe, cfg->flags);
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    soxr_t s = soxr_create(in_rate, OUT_RATE, 1, &e, &io, &q, &rt);
    if (!s) {
        free(y);
        return -1;
    }
    size_t idone = 0, odone = 0, tot = 0;
    e = soxr_process(s, in, n, &idone, y, cap, &odone);
    tot = odone;
    while (!e && tot < cap) { /* flush: in = NULL means end of input */
        e = soxr_process(s, NULL, 0, NULL, y + tot, cap - tot, &odone);
        if (odone == 0)
            break;
        tot += odone;
    }
    soxr_delete(s);
    if (e || idone != n) {
        free(y);
        return -1;
    }
    *out = y;
    *n_out = tot;
    return 0;
}

#ifdef WS_HAVE_SAMPLERATE
static int run_src(const float *in, size_t n, double in_rate, float **out, size_t *n_out,
                   const void *cfgp)
{
    int type = *(const int *)cfgp;
    size_t want = (size_t)llround((double)n * OUT_RATE / in_rate);
    size_t cap = want + 4096;
    float *y = malloc(cap * sizeof *y);
    if (!y)
        return -1;
    SRC_DATA d = {.data_in = in,
                  .data_out = y,
                  .input_frames = (long)n,
                  .output_frames = (long)cap,
                  .src_ratio = OUT_RATE / in_rate,
                  .end_of_input = 1};
    if (src_simple(&d, type, 1)) {
        free(y);
        return -1;
    }
    *out = y;
    *n_out = (size_t)d.output_frames_gen;
    return 0;
}
#endif

static int run_product(const float *in, size_t n, double in_rate, float **out, size_t *n_out,
                       const void *cfg)
{
    ws_err err;
    if (ws_resample(in, n, in_rate, OUT_RATE, out, n_out, &err)) {
        fprintf(stderr, "ws_resample: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* --- signals ------------------------------------------------------------- */

static const double TONE_F[] = {97.0, 441.7, 1003.0, 2011.3, 3307.0, 4999.0, 6007.0, 7100.0};
static const double ALIAS_F[] = {8400.0, 9000.0, 10500.0, 12000.0, 15000.0, 21000.0};
#define N_TONE (sizeof TONE_F / sizeof TONE_F[0])
#define N_ALIAS (sizeof ALIAS_F / sizeof ALIAS_F[0])

typedef struct {
    double f[16], a[16], p[16];
    int n;
} tones;

/* The passband tones usable at rate r: below 0.9 x the lower Nyquist. */
static tones pass_tones(double r)
{
    tones t = {.n = 0};
    double fmax = 0.9 * fmin(r, OUT_RATE) / 2;
    for (size_t k = 0; k < N_TONE; k++)
        if (TONE_F[k] < fmax) {
            t.f[t.n] = TONE_F[k];
            t.p[t.n] = 0.7 * (double)k + 0.1;
            t.n++;
        }
    for (int k = 0; k < t.n; k++)
        t.a[k] = 0.9 / t.n; /* peak <= 0.9 */
    return t;
}

static tones alias_tones(double r)
{
    tones t = {.n = 0};
    for (size_t k = 0; k < N_ALIAS; k++)
        if (ALIAS_F[k] < 0.95 * r / 2) {
            t.f[t.n] = ALIAS_F[k];
            t.p[t.n] = 0.3 * (double)k;
            t.n++;
        }
    for (int k = 0; k < t.n; k++)
        t.a[k] = 0.9 / t.n;
    return t;
}

static double tone_at(const tones *t, double sec)
{
    double s = 0;
    for (int k = 0; k < t->n; k++)
        s += t->a[k] * sin(2 * M_PI * t->f[k] * sec + t->p[k]);
    return s;
}

static float *sample(const tones *t, double r, double seconds, size_t *n)
{
    *n = (size_t)llround(r * seconds);
    float *x = malloc(*n * sizeof *x);
    for (size_t i = 0; x && i < *n; i++)
        x[i] = (float)tone_at(t, (double)i / r);
    return x;
}

/* --- measurements -------------------------------------------------------- */

typedef struct {
    double pass_db, pass_max, alias_db;
    int len_ok;
    int ok; /* ran */
} result;

static result measure(const candidate *c, double r)
{
    result res = {.alias_db = NAN};
    tones t = pass_tones(r);
    size_t n, ny;
    float *x = sample(&t, r, SIG_SECONDS, &n), *y = NULL;
    if (!x || c->fn(x, n, r, &y, &ny, c->cfg)) {
        free(x);
        return res;
    }
    res.ok = 1;
    res.len_ok = ny == (size_t)llround((double)n * OUT_RATE / r);
    size_t i0 = (size_t)(MID_FROM * OUT_RATE), i1 = ny > i0 ? ny - i0 : 0;
    double e2 = 0, r2 = 0, emax = 0;
    for (size_t i = i0; i < i1; i++) {
        double want = tone_at(&t, (double)i / OUT_RATE), e = (double)y[i] - want;
        e2 += e * e;
        r2 += want * want;
        emax = fmax(emax, fabs(e));
    }
    res.pass_db = 10 * log10(e2 / r2);
    res.pass_max = emax;
    free(x);
    free(y);

    if (r > OUT_RATE) {
        tones a = alias_tones(r);
        x = sample(&a, r, SIG_SECONDS, &n);
        if (x && !c->fn(x, n, r, &y, &ny, c->cfg)) {
            double o2 = 0, in2 = 0;
            for (size_t i = i0; i < i1 && i < ny; i++)
                o2 += (double)y[i] * y[i];
            for (int k = 0; k < a.n; k++)
                in2 += a.a[k] * a.a[k] / 2;
            res.alias_db = 10 * log10(o2 / (double)(i1 - i0) / in2);
            free(y);
        }
        free(x);
    }
    return res;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double speed_ms(const candidate *c)
{
    tones t = pass_tones(44100);
    size_t n, ny;
    float *x = sample(&t, 44100, SPEED_SECONDS, &n), *y;
    double ms[SPEED_RUNS];
    for (int k = 0; k < SPEED_RUNS; k++) {
        double t0 = ws_now();
        if (c->fn(x, n, 44100, &y, &ny, c->cfg)) {
            free(x);
            return NAN;
        }
        ms[k] = 1e3 * (ws_now() - t0);
        free(y);
    }
    free(x);
    qsort(ms, SPEED_RUNS, sizeof ms[0], cmp_double);
    return ms[SPEED_RUNS / 2];
}

int main(void)
{
    static const soxr_cfg vhq = {SOXR_VHQ, 0}, vhq_flat = {SOXR_VHQ, SOXR_ROLLOFF_NONE},
                          hq = {SOXR_HQ, 0}, hq_flat = {SOXR_HQ, SOXR_ROLLOFF_NONE};
#ifdef WS_HAVE_SAMPLERATE
    static const int best = SRC_SINC_BEST_QUALITY, medium = SRC_SINC_MEDIUM_QUALITY;
#endif
    const candidate cands[] = {
        {"soxr VHQ", run_soxr, &vhq, 0},
        {"soxr VHQ ROLLOFF_NONE", run_soxr, &vhq_flat, 0},
        {"soxr HQ", run_soxr, &hq, 0},
        {"soxr HQ ROLLOFF_NONE", run_soxr, &hq_flat, 0},
#ifdef WS_HAVE_SAMPLERATE
        {"libsamplerate SINC_BEST", run_src, &best, 0},
        {"libsamplerate SINC_MEDIUM", run_src, &medium, 0},
#endif
        {"ws_resample (product)", run_product, NULL, 1},
    };
    const double rates[] = {44100, 48000, 22050, 8000};
    const int n_cand = (int)(sizeof cands / sizeof cands[0]), n_rate = 4;
    int fail = 0;

    printf("soxr %s", soxr_version());
#ifdef WS_HAVE_SAMPLERATE
    printf(", %s", src_get_version());
#endif
    printf("\n\npassband error dB (max |err|) over %.1f..%.1f s; alias residual dB; "
           "length == round(n*16000/r)\n\n",
           MID_FROM, SIG_SECONDS - MID_FROM);
    printf("| resampler | 44.1k pass | 48k pass | 22.05k pass | 8k pass | 44.1k alias | "
           "48k alias | 22.05k alias | lengths | 30 s @44.1k, ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (int c = 0; c < n_cand; c++) {
        result res[4];
        int len_ok = 1;
        printf("| %s |", cands[c].name);
        for (int i = 0; i < n_rate; i++) {
            res[i] = measure(&cands[c], rates[i]);
            if (!res[i].ok) {
                printf(" failed |");
                fail |= cands[c].is_product;
                continue;
            }
            len_ok &= res[i].len_ok;
            printf(" %.1f (%.1e) |", res[i].pass_db, res[i].pass_max);
            if (cands[c].is_product && !(res[i].pass_db <= PASS_MAX_DB))
                fail = 1;
        }
        for (int i = 0; i < 3; i++) {
            printf(" %.1f |", res[i].alias_db);
            if (cands[c].is_product && !(res[i].alias_db <= ALIAS_MAX_DB))
                fail = 1;
        }
        if (cands[c].is_product && !len_ok)
            fail = 1;
        printf(" %s | %.1f |\n", len_ok ? "exact" : "off", speed_ms(&cands[c]));
        fflush(stdout);
    }
    if (fail)
        fprintf(stderr,
                "FAIL: ws_resample misses %.0f dB passband, %.0f dB alias or exact length\n",
                PASS_MAX_DB, ALIAS_MAX_DB);
    return fail;
}

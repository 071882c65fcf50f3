/* test_mel.c - the log-Mel against openai's filters and the float64 oracle.
 *
 * Tolerances: docs/spec.md holds the log-Mel to max |error| <= 1e-4 against a
 * float64 reference on 16 kHz input (LOGMEL_ATOL). Filters to 1e-7
 * (float32 rounding of librosa's float64 values is ~1e-9 at these sizes).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "mel/mel.h"
#include "oracle.h"

#define LOGMEL_ATOL 1e-4 /* docs/spec.md accuracy bound, float32 FFT vs float64 */

/* 16-bit PCM mono WAV, parsed here independently of the audio module. */
static float *read_wav16(const char *path, size_t *n)
{
    size_t len;
    uint8_t *b = read_file(path, &len);
    cr_assert(b, "cannot read %s", path);
    size_t off = 12;
    while (off + 8 <= len) {
        uint32_t sz = b[off + 4] | b[off + 5] << 8 | b[off + 6] << 16 | (uint32_t)b[off + 7] << 24;
        if (!memcmp(b + off, "data", 4)) {
            *n = sz / 2;
            float *x = malloc(*n * sizeof *x);
            for (size_t i = 0; i < *n; i++)
                x[i] = (int16_t)(b[off + 8 + 2 * i] | b[off + 9 + 2 * i] << 8) / 32768.0f;
            free(b);
            return x;
        }
        off += 8 + sz + (sz & 1);
    }
    cr_assert_fail("no data chunk in %s", path);
    return NULL;
}

/* Speech-like synthetic signal: tones, a chirp and noise, amplitude ~0.3. */
static float *synth(size_t n, uint64_t seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        double t = i / 16000.0;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double noise = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.05;
        x[i] = (float)(0.2 * sin(2 * M_PI * 440 * t) + 0.1 * sin(2 * M_PI * (300 + 200 * t) * t) +
                       0.05 * sin(2 * M_PI * 3100 * t) + noise);
    }
    return x;
}

/* Our windows vs the oracle's frames [f0, f0 + nf) of a log-Mel over xref. */
static void check_window(const char *name, const float *got, int n_mels, int win_frames,
                         const double *ref, int ref_frames, int f0, int nf)
{
    double *want = malloc(sizeof(double) * n_mels * win_frames);
    for (int m = 0; m < n_mels; m++)
        for (int j = 0; j < win_frames; j++)
            want[(size_t)m * win_frames + j] = j < nf ? ref[(size_t)m * ref_frames + f0 + j] : 0.0;
    assert_close(name, got, want, (size_t)n_mels * win_frames, LOGMEL_ATOL, 0);
    free(want);
}

static double *to_double_padded(const float *x, size_t n, size_t n_total)
{
    double *d = calloc(n_total, sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

static void compare_padded(const float *x, size_t n, int n_mels, ws_pad pad)
{
    ws_err err;
    ws_mel *m = ws_mel_new(n_mels, 2, &err);
    cr_assert(m, "%s", err.msg);
    ws_mel_out o;
    cr_assert_eq(ws_mel_compute(m, x, n, pad, &o, &err), 0, "%s", err.msg);
    size_t n_total = pad == WS_PAD_AUDIO ? (n ? (n + 479999) / 480000 : 1) * 480000 : n + 480000;
    double *xd = to_double_padded(x, n, n_total);
    int rf;
    double *ref = oracle_log_mel(xd, n_total, n_mels, &rf);
    int content = pad == WS_PAD_AUDIO ? rf : (int)(n / 160);
    int want_win = pad == WS_PAD_AUDIO ? rf / 3000 : (content ? (content + 2999) / 3000 : 1);
    cr_assert_eq(o.n_windows, want_win);
    cr_assert_eq(o.n_frames, 3000);
    cr_assert_eq(o.n_mels, n_mels);
    for (int w = 0; w < o.n_windows; w++) {
        int nf = content - 3000 * w;
        nf = nf > 3000 ? 3000 : nf < 0 ? 0 : nf;
        char name[64];
        snprintf(name, sizeof name, "window %d", w);
        check_window(name, o.data + (size_t)w * n_mels * 3000, n_mels, 3000, ref, rf, 3000 * w, nf);
    }
    free(ref);
    free(xd);
    ws_mel_out_free(&o);
    ws_mel_free(m);
}

static void check_filters(int n_mels)
{
    ws_err err;
    ws_mel *m = ws_mel_new(n_mels, 1, &err);
    cr_assert(m, "%s", err.msg);
    const double *want = oracle_filters(n_mels);
    cr_assert(want, "tests/data/mel_%d.f32 missing", n_mels);
    const double *got = ws_mel_filters(m);
    float *gotf = malloc(sizeof(float) * n_mels * 201);
    for (int i = 0; i < n_mels * 201; i++)
        gotf[i] = (float)got[i];
    assert_close("filters", gotf, want, (size_t)n_mels * 201, 1e-7, 0);
    free(gotf);
    ws_mel_free(m);
}

Test(mel, filters_equal_openai_npz_80) { check_filters(80); }
Test(mel, filters_equal_openai_npz_128) { check_filters(128); }

Test(mel, jfk_speech_matches_float64_oracle_80)
{
    size_t n;
    float *x = read_wav16(test_sample("jfk.wav"), &n);
    cr_assert_gt(n, 160000);
    compare_padded(x, n, 80, WS_PAD_AUDIO);
    free(x);
}

Test(mel, jfk_speech_matches_float64_oracle_128)
{
    size_t n;
    float *x = read_wav16(test_sample("jfk.wav"), &n);
    compare_padded(x, n, 128, WS_PAD_AUDIO);
    free(x);
}

Test(mel, exactly_30s_reflects_real_audio_at_the_end)
{
    float *x = synth(480000, 1);
    compare_padded(x, 480000, 80, WS_PAD_AUDIO);
    free(x);
}

Test(mel, just_over_30s_gives_two_windows_with_one_global_max)
{
    float *x = synth(480001, 2);
    compare_padded(x, 480001, 80, WS_PAD_AUDIO);
    free(x);
}

Test(mel, long_audio_is_cut_into_consecutive_windows, .timeout = 120)
{
    size_t n = 75 * 16000;
    float *x = synth(n, 3);
    compare_padded(x, n, 80, WS_PAD_AUDIO);
    free(x);
}

Test(mel, pad_mel0_fills_after_content_with_zero)
{
    size_t n = 100003;
    float *x = synth(n, 4);
    compare_padded(x, n, 80, WS_PAD_MEL0);
    free(x);
}

Test(mel, pad_mel0_long_audio_windows, .timeout = 120)
{
    size_t n = 35 * 16000 + 77;
    float *x = synth(n, 5);
    compare_padded(x, n, 128, WS_PAD_MEL0);
    free(x);
}

static void check_nopad(size_t n)
{
    ws_err err;
    float *x = synth(n, 100 + n);
    ws_mel *m = ws_mel_new(80, 2, &err);
    ws_mel_out o;
    cr_assert_eq(ws_mel_compute(m, x, n, WS_PAD_NONE, &o, &err), 0, "%s", err.msg);
    cr_assert_eq(o.n_windows, 1);
    cr_assert_eq(o.n_frames, (int)(n / 160), "n=%zu: %d frames", n, o.n_frames);
    double *xd = to_double_padded(x, n, n);
    int rf;
    double *ref = oracle_log_mel(xd, n, 80, &rf);
    cr_assert_eq(rf, o.n_frames);
    char name[64];
    snprintf(name, sizeof name, "--no-pad n=%zu", n);
    check_window(name, o.data, 80, o.n_frames, ref, rf, 0, rf);
    free(ref);
    free(xd);
    free(x);
    ws_mel_out_free(&o);
    ws_mel_free(m);
}

Test(mel, no_pad_odd_lengths_match_oracle)
{
    size_t lens[] = {160, 161, 200, 319, 320, 1000, 12345, 48017};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
        check_nopad(lens[i]);
}

Test(mel, no_pad_rejects_fewer_than_160_samples)
{
    ws_err err;
    ws_mel *m = ws_mel_new(80, 1, &err);
    ws_mel_out o;
    float x[159] = {0};
    cr_assert_eq(ws_mel_compute(m, x, 159, WS_PAD_NONE, &o, &err), -1);
    cr_assert(strstr(err.msg, "160"), "message: %s", err.msg);
    cr_assert_eq(ws_mel_compute(m, x, 0, WS_PAD_NONE, &o, &err), -1);
    ws_mel_free(m);
}

Test(mel, silence_hits_the_floor)
{
    /* all-zero power: log10(1e-10) = -10 everywhere, max - 8 below it, (-10 + 4) / 4 */
    ws_err err;
    ws_mel *m = ws_mel_new(80, 2, &err);
    ws_mel_out o;
    cr_assert_eq(ws_mel_compute(m, NULL, 0, WS_PAD_AUDIO, &o, &err), 0, "%s", err.msg);
    cr_assert_eq(o.n_windows, 1);
    cr_assert_eq(o.n_frames, 3000);
    for (int i = 0; i < 80 * 3000; i++)
        cr_assert_eq(o.data[i], -1.5f, "value %d = %g", i, (double)o.data[i]);
    ws_mel_out_free(&o);
    ws_mel_free(m);
}

Test(mel, tone_at_bin_centre_peaks_in_its_band)
{
    /* 1000 Hz = bin 25 exactly; the band with the largest weight on bin 25 must win */
    size_t n = 16000;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(0.5 * sin(2 * M_PI * 1000.0 * i / 16000.0));
    ws_err err;
    ws_mel *m = ws_mel_new(80, 1, &err);
    ws_mel_out o;
    cr_assert_eq(ws_mel_compute(m, x, n, WS_PAD_NONE, &o, &err), 0);
    const double *f = ws_mel_filters(m);
    int want = 0, got = 0;
    for (int b = 1; b < 80; b++) {
        if (f[b * 201 + 25] > f[want * 201 + 25])
            want = b;
        if (o.data[(size_t)b * o.n_frames + 50] > o.data[(size_t)got * o.n_frames + 50])
            got = b;
    }
    cr_assert_eq(got, want, "peak in band %d, filter for 1 kHz is band %d", got, want);
    free(x);
    ws_mel_out_free(&o);
    ws_mel_free(m);
}

/* Every rule (two windows, with a block of 32 frames across their boundary at frame 3000,
 * except WS_PAD_NONE's one long window), on 1, 2, 3 and 5 threads: the threads claim blocks as
 * they come, the bits are the one thread's. */
Test(mel, thread_count_does_not_change_results)
{
    size_t n = 16000 * 37 + 77;
    float *x = synth(n, 9);
    ws_err err;
    const ws_pad pads[3] = {WS_PAD_AUDIO, WS_PAD_MEL0, WS_PAD_NONE};
    const int threads[3] = {2, 3, 5};
    ws_mel *m1 = ws_mel_new(80, 1, &err);
    cr_assert(m1, "%s", err.msg);
    for (int p = 0; p < 3; p++) {
        ws_mel_out a;
        cr_assert_eq(ws_mel_compute(m1, x, n, pads[p], &a, &err), 0, "%s", err.msg);
        const size_t len = (size_t)a.n_windows * a.n_mels * a.n_frames;
        cr_assert_eq(a.n_windows, pads[p] == WS_PAD_NONE ? 1 : 2);
        for (int t = 0; t < 3; t++) {
            ws_mel_out b;
            cr_assert_eq(ws_mel_compute_nt(m1, x, n, pads[p], threads[t], &b, &err), 0, "%s",
                         err.msg);
            cr_assert_eq(b.n_windows, a.n_windows);
            cr_assert_eq(b.n_frames, a.n_frames);
            cr_assert_eq(memcmp(a.data, b.data, sizeof(float) * len), 0,
                         "rule %d, %d threads: the bits differ from one thread's", p, threads[t]);
            ws_mel_out_free(&b);
        }
        ws_mel_out_free(&a);
    }
    ws_mel_free(m1);
    free(x);
}

/* One plan, several callers at once, each call on 2 threads of its own (what the API's
 * log_mel does from many Python threads; `make tsan` runs this under ThreadSanitizer):
 * each result is the serial one's bits. */
typedef struct {
    const ws_mel *m;
    const float *x;
    size_t n;
    ws_mel_out o;
    int rc;
} mel_job;

static void *mel_job_run(void *arg)
{
    mel_job *j = arg;
    ws_err e;
    j->rc = ws_mel_compute_nt(j->m, j->x, j->n, WS_PAD_AUDIO, 2, &j->o, &e);
    return NULL;
}

Test(mel, one_plan_from_several_threads_at_once_gives_the_serial_bits, .timeout = 120)
{
    enum { N = 4 };
    ws_err err;
    ws_mel *m = ws_mel_new(80, 2, &err);
    cr_assert(m, "%s", err.msg);
    float *x[N];
    mel_job jobs[N];
    pthread_t tid[N];
    for (int i = 0; i < N; i++) {
        size_t n = 16000 * (size_t)(7 + 9 * i); /* 7 .. 34 s: one or two windows */
        x[i] = synth(n, 20 + (uint64_t)i);
        jobs[i] = (mel_job){.m = m, .x = x[i], .n = n};
        cr_assert_eq(pthread_create(&tid[i], NULL, mel_job_run, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(jobs[i].rc, 0, "thread %d failed", i);
        ws_mel_out want;
        cr_assert_eq(ws_mel_compute_nt(m, x[i], jobs[i].n, WS_PAD_AUDIO, 1, &want, &err), 0);
        cr_assert_eq(jobs[i].o.n_windows, want.n_windows, "input %d: windows", i);
        cr_assert_eq(memcmp(jobs[i].o.data, want.data,
                            sizeof(float) * 80 * 3000 * (size_t)want.n_windows), 0,
                     "input %d: the bits differ from a call alone", i);
        ws_mel_out_free(&want);
        ws_mel_out_free(&jobs[i].o);
        free(x[i]);
    }
    ws_mel_free(m);
}

Test(mel, fast_log10_is_within_2_ulp)
{
    /* every float32 exponent from 1e-10 up, 64 mantissas each, plus dense [0.5, 2] */
    double worst = 0;
    float worst_x = 0;
    for (float x = 1e-10f; x < 1e30f; x *= 1.0123f) {
        double want = log10((double)x);
        double ulp = nextafterf((float)fabs(want), INFINITY) - (float)fabs(want);
        double e = fabs((double)ws_log10_fast(x) - want) / (ulp > 0 ? ulp : 1e-45);
        if (want == 0)
            e = fabs((double)ws_log10_fast(x)) / 1e-8;
        if (e > worst) {
            worst = e;
            worst_x = x;
        }
    }
    for (float x = 0.5f; x < 2.0f; x += 1e-5f) {
        double want = log10((double)x);
        double e = fabs((double)ws_log10_fast(x) - want);
        cr_assert_leq(e, 2e-7 * (fabs(want) > 0.1 ? fabs(want) : 0.1), "x = %.9g", (double)x);
    }
    cr_assert_leq(worst, 2.0, "%.2f ulp at x = %.9g", worst, (double)worst_x);
}

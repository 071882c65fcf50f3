/* resample.c - mono float32 from one rate to another with libsoxr: the
 * resampler the decoder feeds chunk by chunk (ws_audio_rs_*), and ws_resample.
 *
 * Settings: SOXR_VHQ (28-bit precision, linear phase, passband to 0.913 x
 * Nyquist) with SOXR_ROLLOFF_NONE, single-threaded, at most SOXR_PIECE samples
 * per soxr_process call. soxr's output does not depend on how its input is cut
 * (test: audio.chunked_resampling_equals_one_shot, bit for bit).
 *
 * Why libsoxr, and why ROLLOFF_NONE (bench/RESULTS-audio.md, build/bench-resample):
 * multi-tone error against the analytic signal at 16 kHz, every tone below
 * 0.9 x the lower Nyquist, is -150 dB for 44.1/48/22.05/8 kHz input (float32's
 * own floor), aliasing below -154 dB, 30 s of 44.1 kHz in about 10 ms. SOXR_VHQ's
 * default "small" roll-off droops toward 7 kHz (-72 dB at 44.1 kHz);
 * libsamplerate's SINC_BEST reaches -135 dB, drops the last sample at 44.1 kHz
 * and is more than 100x slower (tests: audio.resamples_*_to_16k_within_minus_
 * 120_db, audio.resampling_removes_tones_above_8k).
 *
 * Alignment and length: soxr removes its filter delay itself, so output sample 0
 * is input time 0 (the analytic comparison would show a delay of 1/100 sample as
 * -50 dB). The stream is flushed (soxr_process with in = NULL) and the output
 * length is exactly round(n * out_rate / in_rate), halves up (ws_audio_out_len);
 * anything else is an error (test: audio.resampled_length_is_rounded_ratio).
 * The output goes into an outbuf (outbuf.c), grown under the caller's
 * reservation.
 *
 * Finiteness: the loaders refuse non-finite input, but finite input can still
 * resample to infinities: the filter overshoots at each jump (Gibbs, a few per
 * cent), and samples within that of +-FLT_MAX (3.4e38) go past the float range.
 * Every sample soxr gives is checked (ws_audio_first_nonfinite: a pass over the
 * output, far cheaper than the filter) and the first non-finite one is an error
 * for that input, naming its 16 kHz index. Not prevented by clamping or scaling:
 * either would change the signal of a file that is almost certainly damaged, and
 * its log-Mel would overflow anyway (test:
 * audio.samples_near_flt_max_that_resample_to_infinity_are_refused).
 *
 * Tests: tests/test_audio.c; fuzzed by tests/fuzz/fuzz_audio.c.
 */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SOXR_PIECE 16384                 /* mono samples per soxr_process call */

/* --- resampling ---------------------------------------------------------- */

int ws_audio_rs_open(resampler *r, double in_rate, double out_rate, const char *name, ws_err *err)
{
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, SOXR_ROLLOFF_NONE);
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    r->ratio = out_rate / in_rate;
    r->in = 0;
    r->s = soxr_create(in_rate, out_rate, 1, &e, &io, &q, &rt);
    if (!r->s)
        return ws_errf(err, "%s: soxr_create(%g -> %g Hz) failed: %s", name, in_rate, out_rate,
                       soxr_strerror(e));
    return 0;
}

/* 0 when soxr's output b->y[from..b->n) is finite, else -1 with err. */
static int check_finite(const outbuf *b, size_t from, const char *name, ws_err *err)
{
    const size_t bad = from + ws_audio_first_nonfinite(b->y + from, b->n - from);
    if (bad == b->n)
        return 0;
    return ws_errf(err,
                   "%s: sample %zu is not a finite number after resampling to 16 kHz (%g): "
                   "input samples this close to the float limit (+-%g) overshoot it",
                   name, bad, (double)b->y[bad], (double)FLT_MAX);
}

/* Feeds n samples, appending what comes out to b. */
int ws_audio_rs_feed(resampler *r, outbuf *b, const float *x, size_t n, const char *name,
                     ws_err *err)
{
    size_t used = 0;
    int stalls = 0;
    while (used < n) {
        size_t piece = n - used < SOXR_PIECE ? n - used : SOXR_PIECE, idone = 0, odone = 0;
        size_t need = b->n + (size_t)((double)piece * r->ratio) + 64;
        if (b->exact && need > b->want + 1)
            need = b->want + 1 > b->n ? b->want + 1 : b->n; /* soxr keeps the rest */
        if (stalls)
            need = b->cap + GROW_BYTES / sizeof(float);
        if (ws_audio_out_grow(b, need, err))
            return -1;
        soxr_error_t e = soxr_process(r->s, x + used, piece, &idone, b->y + b->n, b->cap - b->n,
                                      &odone);
        if (e)
            return ws_errf(err, "%s: soxr failed: %s", name, soxr_strerror(e));
        used += idone;
        b->n += odone;
        if (check_finite(b, b->n - odone, name, err))
            return -1;
        if (idone == 0 && odone == 0 && ++stalls > 2)
            return ws_errf(err, "%s: soxr made no progress after %zu samples", name, r->in + used);
        if (idone || odone)
            stalls = 0;
    }
    r->in += n;
    return 0;
}

/* Flushes (in = NULL marks the end) and checks the length: round(in * ratio). */
int ws_audio_rs_finish(resampler *r, outbuf *b, size_t want, const char *name, ws_err *err)
{
    for (;;) {
        size_t odone = 0;
        if (ws_audio_out_grow(b, want + 1 > b->n ? want + 1 : b->n + 1, err))
            return -1;
        soxr_error_t e = soxr_process(r->s, NULL, 0, NULL, b->y + b->n, b->cap - b->n, &odone);
        if (e)
            return ws_errf(err, "%s: soxr failed: %s", name, soxr_strerror(e));
        if (odone == 0)
            break;
        b->n += odone;
        if (check_finite(b, b->n - odone, name, err))
            return -1;
        if (b->n > want)
            break;
    }
    if (b->n != want)
        return ws_errf(err, "%s: soxr consumed %zu samples and produced %zu, expected %zu", name,
                       r->in, b->n, want);
    return 0;
}

void ws_audio_rs_close(resampler *r)
{
    if (r->s)
        soxr_delete(r->s);
    r->s = NULL;
}

/* round(n * out / in), halves up: the length soxr's flushed output has. */
double ws_audio_out_len(double n, double in_rate, double out_rate)
{
    return floor(n * out_rate / in_rate + 0.5);
}

/* --- ws_resample --------------------------------------------------------- */

int ws_resample(const float *in, size_t n, double in_rate, double out_rate, float **out,
                size_t *n_out, ws_err *err)
{
    *out = NULL;
    *n_out = 0;
    if (!(in_rate > 0) || !(out_rate > 0) || !isfinite(in_rate) || !isfinite(out_rate))
        return ws_errf(err, "resample: invalid rates %g -> %g Hz", in_rate, out_rate);
    if (n == 0)
        return 0;

    double want_d = ws_audio_out_len((double)n, in_rate, out_rate);
    if (!(want_d <= (double)WS_AUDIO_MAX_SAMPLES))
        return ws_errf(err,
                       "resample: %zu samples at %g Hz give %.0f at %g Hz, over the limit of %zu",
                       n, in_rate, want_d, out_rate, WS_AUDIO_MAX_SAMPLES);
    size_t want = (size_t)want_d, bytes;

    if (in_rate == out_rate) {
        if (ws_mul_size(n, sizeof **out, &bytes) || !(*out = malloc(bytes)))
            return ws_errf(err, "resample: out of memory for %zu samples", n);
        memcpy(*out, in, bytes);
        *n_out = n;
        return 0;
    }
    if (want == 0)
        return 0;

    load_opts o = {.name = "resample", .max_samples = WS_AUDIO_MAX_SAMPLES};
    outbuf b = {.o = &o, .sized = 1, .exact = 1, .want = want, .reserved = SIZE_MAX};
    resampler r = {0};
    int rc = ws_audio_rs_open(&r, in_rate, out_rate, "resample", err);
    if (!rc)
        rc = ws_audio_rs_feed(&r, &b, in, n, "resample", err);
    if (!rc)
        rc = ws_audio_rs_finish(&r, &b, want, "resample", err);
    ws_audio_rs_close(&r);
    if (rc) {
        free(b.y);
        return -1;
    }
    *out = b.y;
    *n_out = b.n;
    return 0;
}

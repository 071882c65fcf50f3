/* pcm.c - samples already in memory (any rate, interleaved channels) to 16 kHz mono,
 * the way a decoded file goes: the channels averaged frame by frame (ws_audio_downmix,
 * the decoder's own), then the rate converted by the same libsoxr resampler, whose
 * output does not depend on how its input is cut (resample.c). So a float32 WAV of the
 * same samples, loaded with ws_audio_load, gives the same bits
 * (api.pcm_at_44k_stereo_equals_the_command_on_that_wav in tests/test_api.c).
 */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Loops the compiler vectorises, in an AVX2 clone beside the baseline one. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VECTORISED __attribute__((target_clones("avx2", "default"), optimize("tree-vectorize")))
#elif defined(__x86_64__)
#define VECTORISED __attribute__((target_clones("avx2", "default")))
#elif defined(__GNUC__) && !defined(__clang__)
#define VECTORISED __attribute__((optimize("tree-vectorize")))
#else
#define VECTORISED
#endif

/* The index of the first non-finite value of x[0, n), or n: blocks scanned branch-free
 * (vectorised: a 30-minute input takes milliseconds), a block with one searched again. */
VECTORISED static size_t first_nonfinite(const float *x, size_t n)
{
    enum { BLK = 4096 };
    for (size_t i0 = 0; i0 < n; i0 += BLK) {
        const size_t e = n - i0 < BLK ? n : i0 + BLK;
        uint32_t bad = 0;
        for (size_t i = i0; i < e; i++) {
            uint32_t u;
            memcpy(&u, x + i, sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        if (bad)
            for (size_t i = i0; i < e; i++)
                if (!isfinite(x[i]))
                    return i;
    }
    return n;
}

VECTORISED static void s16_to_float(const short *restrict x, float *restrict y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)x[i] * (1.0f / 32768.0f); /* 2^-15: exact */
}

/* The clones stay static: GCC exports a non-static target_clones function's dispatcher
 * whatever the visibility (src/conv/gelu.c says the same). */
size_t ws_audio_first_nonfinite(const float *x, size_t n)
{
    return first_nonfinite(x, n);
}

void ws_audio_s16_to_float(const short *x, float *y, size_t n)
{
    s16_to_float(x, y, n);
}

/* Long inputs are checked on several threads (memory-bound: one core reads 123 MB, 32
 * minutes, in about 10 ms): parts of at least 2 Mi samples, at most 8 and at most the
 * caller's threads, the first non-finite of the lowest part that has one. */
#define NF_PART ((size_t)2 << 20)
#define NF_PARTS 8

typedef struct {
    const float *x;
    size_t n;
    size_t first[NF_PARTS];
} nf_job;

static void nf_part(void *ctx, int i, int n)
{
    nf_job *j = ctx;
    const size_t a = j->n / (size_t)n * (size_t)i, b = i == n - 1 ? j->n : j->n / (size_t)n * (size_t)(i + 1);
    const size_t k = ws_audio_first_nonfinite(j->x + a, b - a);
    j->first[i] = k < b - a ? a + k : j->n;
}

static size_t first_nonfinite_long(const float *x, size_t n, int threads)
{
    size_t parts = n / NF_PART;
    if (threads >= 1 && parts > (size_t)threads)
        parts = (size_t)threads;
    if (parts < 2)
        return ws_audio_first_nonfinite(x, n);
    nf_job j = {.x = x, .n = n};
    for (int i = 0; i < NF_PARTS; i++)
        j.first[i] = n;
    ws_parallel(parts > NF_PARTS ? NF_PARTS : (int)parts, nf_part, &j);
    for (int i = 0; i < NF_PARTS; i++)
        if (j.first[i] < n)
            return j.first[i];
    return n;
}

int ws_audio_pcm_view(ws_audio *a, const float *pcm, size_t frames, int rate, int channels,
                      int threads, const char *name, ws_err *err)
{
    memset(a, 0, sizeof *a);
    if (rate != WS_SAMPLE_RATE || channels != 1 || !pcm || !frames)
        return 0;
    if (frames > WS_AUDIO_MAX_SAMPLES)
        return ws_errf(err, "%s: %zu samples, over the limit of %zu", name, frames, WS_AUDIO_MAX_SAMPLES);
    const size_t bad = first_nonfinite_long(pcm, frames, threads);
    if (bad < frames)
        return ws_errf(err, "%s: frame %zu is not a finite number (%g)", name, bad, (double)pcm[bad]);
    a->x = (float *)pcm; /* borrowed: read only, never freed */
    a->n = frames;
    a->src_rate = rate;
    a->src_channels = 1;
    return 1;
}

int ws_audio_from_pcm(ws_audio *a, const float *pcm, size_t frames, int rate, int channels,
                      const char *name, ws_err *err)
{
    memset(a, 0, sizeof *a);
    if (channels < 1 || channels > WS_AUDIO_MAX_CHANNELS)
        return ws_errf(err, "%s: %d channels: must be 1 .. %d", name, channels,
                       WS_AUDIO_MAX_CHANNELS);
    if (rate < 1 || rate > WS_AUDIO_MAX_RATE)
        return ws_errf(err, "%s: sample rate %d Hz: must be 1 .. %d", name, rate,
                       WS_AUDIO_MAX_RATE);
    if (frames && !pcm)
        return ws_errf(err, "%s: no samples (NULL) for %zu frames", name, frames);
    size_t bytes;
    if (ws_mul_size(frames, (size_t)channels, &bytes) || ws_mul_size(bytes, sizeof(float), &bytes))
        return ws_errf(err, "%s: %zu frames: too many", name, frames);
    float *mono = frames ? malloc(frames * sizeof *mono) : NULL;
    if (frames && !mono)
        return ws_errf(err, "%s: out of memory for %zu samples", name, frames);
    if (channels == 1 && frames) { /* mono: checked in blocks, copied whole */
        const size_t bad = ws_audio_first_nonfinite(pcm, frames);
        if (bad < frames) {
            free(mono);
            return ws_errf(err, "%s: frame %zu is not a finite number (%g)", name, bad, (double)pcm[bad]);
        }
        memcpy(mono, pcm, frames * sizeof *mono);
    }
    for (size_t t = 0; channels > 1 && t < frames; t++) {
        const float v = ws_audio_downmix(pcm + t * (size_t)channels, channels);
        if (!isfinite(v)) {
            free(mono);
            return ws_errf(err, "%s: frame %zu is not a finite number (%g)", name, t, (double)v);
        }
        mono[t] = v;
    }
    if (rate == WS_SAMPLE_RATE) {
        if (frames > WS_AUDIO_MAX_SAMPLES) {
            free(mono);
            return ws_errf(err, "%s: %zu samples, over the limit of %zu", name, frames,
                           WS_AUDIO_MAX_SAMPLES);
        }
        a->x = mono;
        a->n = frames;
    } else {
        ws_err e = {{0}};
        int rc = ws_resample(mono, frames, rate, WS_SAMPLE_RATE, &a->x, &a->n, &e);
        free(mono);
        if (rc)
            return ws_errf(err, "%s: %s", name, e.msg);
    }
    a->src_rate = rate;
    a->src_channels = channels;
    return 0;
}

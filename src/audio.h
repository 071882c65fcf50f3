/* audio.h - any audio file libsndfile decodes, to 16 kHz mono float32.
 *
 * Steps: decode (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, MP3, AIFF, ...),
 * convert to float in [-1, 1) (int16 / 32768 for 16-bit PCM), average the
 * channels, resample to 16000 Hz with a high-quality resampler. Input that
 * already is 16 kHz mono passes through bit-exact.
 *
 * Usage:
 *   ws_audio a; ws_err err;
 *   if (ws_audio_load(&a, "in.flac", &err)) { ... err.msg ... }
 *   ... a.x[0 .. a.n) at 16 kHz ...
 *   ws_audio_free(&a);
 */
#ifndef WS_AUDIO_H
#define WS_AUDIO_H

#include <stddef.h>

#include "common.h"

#define WS_SAMPLE_RATE 16000

/* Limits, checked before any large allocation. Output length is capped at
 * 2^31 - 1 samples (37.28 hours at 16 kHz); longer input is refused with a
 * message, never truncated. Input rates outside [WS_AUDIO_MIN_RATE,
 * WS_AUDIO_MAX_RATE] Hz are refused (header garbage, not audio). */
#define WS_AUDIO_MAX_SAMPLES ((size_t)2147483647)
#define WS_AUDIO_MIN_RATE 1000
#define WS_AUDIO_MAX_RATE 1536000

typedef struct {
    float *x;         /* [n] samples at 16 kHz, mono; NULL when n == 0 */
    size_t n;
    int src_rate;     /* the file's sample rate */
    int src_channels; /* the file's channel count */
} ws_audio;

/* Decodes path ("-" reads standard input, pipes included) to 16 kHz mono.
 * Returns 0, or -1 with err naming the path ("<stdin>" for "-") and the problem,
 * one line: unreadable, not audio (with libsndfile's reason), truncated (a data
 * chunk longer than the file, fewer frames than the header promises, an Ogg
 * stream with no end), non-finite samples, or over the limits above. A file with
 * no samples gives a->n == 0, a->x == NULL and returns 0. */
int ws_audio_load(ws_audio *a, const char *path, ws_err *err);

/* The same from a buffer already in memory; name is used in messages. */
int ws_audio_load_memory(ws_audio *a, const void *data, size_t len, const char *name, ws_err *err);

/* Resamples mono float32 from in_rate to out_rate (high quality); *out is
 * malloc'd, *n_out set. in_rate == out_rate copies. Returns 0 or -1.
 * libsoxr SOXR_VHQ, flat passband to 0.913 x Nyquist; output sample 0 is input
 * time 0 and *n_out == round(n * out_rate / in_rate), halves up
 * (bench/RESULTS-audio.md; tests/test_audio.c). n == 0 gives *out == NULL. */
int ws_resample(const float *in, size_t n, double in_rate, double out_rate, float **out,
                size_t *n_out, ws_err *err);

/* Frees a->x and zeroes *a. NULL-safe. */
void ws_audio_free(ws_audio *a);

#endif

/* mel.h - log-Mel spectrogram exactly as whisper.audio.log_mel_spectrogram.
 *
 * Math (openai-whisper audio.py):
 *   STFT: n_fft 400, hop 160, periodic Hann w[n] = 0.5 - 0.5 cos(2 pi n / 400),
 *         centred (reflect-pad 200 samples each side), frames = 1 + n/160,
 *         the last frame dropped  -> n_frames = n / 160
 *   power P[f, t] = |X[f, t]|^2, f in [0, 201)
 *   mel   M[m, t] = sum_f filt[m, f] P[f, t]  (Slaney scale and norm, librosa's)
 *   log   L = log10(max(M, 1e-10)); L = max(L, max(L) - 8); out = (L + 4) / 4
 * Layout of every result: channel-major [n_mels][n_frames] per window.
 *
 * Windowing (docs/spec.md):
 *   WS_PAD_AUDIO  samples zero-padded to a whole number of 480000 (at least
 *                 one window); log-Mel of all of it (one global max), cut into
 *                 3000-frame windows.
 *   WS_PAD_MEL0   log-Mel of samples + 480000 zeros; content frames = n/160;
 *                 3000-frame windows of those, the last filled with 0.0.
 *   WS_PAD_NONE   n/160 frames, one window; n < 160 is an error.
 * Validated by tests/test_mel.c against a naive-DFT double-precision oracle.
 */
#ifndef WS_MEL_H
#define WS_MEL_H

#include <stddef.h>

#include "common.h"

#define WS_N_FFT 400
#define WS_HOP 160
#define WS_N_BINS (WS_N_FFT / 2 + 1)
#define WS_CHUNK_SAMPLES 480000
#define WS_CHUNK_FRAMES 3000

typedef enum { WS_PAD_AUDIO = 0, WS_PAD_MEL0, WS_PAD_NONE } ws_pad;

typedef struct ws_mel ws_mel;

/* Builds the filterbank (double precision, Slaney) and the FFTW plans.
 * n_mels: 80 or 128. Not thread-safe (FFTW planning); call once per process. */
ws_mel *ws_mel_new(int n_mels, int n_threads, ws_err *err);
void ws_mel_free(ws_mel *m);

/* The filterbank [n_mels][201], float64. */
const double *ws_mel_filters(const ws_mel *m);

typedef struct {
    float *data;   /* [n_windows][n_mels][n_frames] */
    int n_windows;
    int n_mels;
    int n_frames;  /* per window: 3000, or n/160 with WS_PAD_NONE */
} ws_mel_out;

/* The geometry of the log-Mel of n samples under the windowing rule pad (above):
 * n_total  length of the zero-padded signal the STFT sees
 * n_frames frames computed (n_total / 160); the floor is max - 8 over all of them
 * content  frames that carry output (later frames of a window are 0.0)
 * n_win, win_frames  the windows written.
 * 0, or -1 with err (too short for WS_PAD_NONE, too long, unknown rule). */
typedef struct {
    size_t n_total;
    long long n_frames, content;
    int n_win, win_frames;
} ws_mel_geom;
int ws_mel_geometry(size_t n, ws_pad pad, ws_mel_geom *g, ws_err *err);

/* Log-Mel of x[0..n) (16 kHz mono) with the windowing rule pad.
 * Returns 0, or -1 with err (e.g. too short for WS_PAD_NONE). */
int ws_mel_compute(ws_mel *m, const float *x, size_t n, ws_pad pad, ws_mel_out *out, ws_err *err);

/* The same on n_threads threads. Reads m only: any number of threads may
 * call it at once on one plan (FFTW's execute on new arrays is thread-safe). */
int ws_mel_compute_nt(const ws_mel *m, const float *x, size_t n, ws_pad pad, int n_threads,
                      ws_mel_out *out, ws_err *err);
void ws_mel_out_free(ws_mel_out *o);

/* The vectorisable log10 the log-Mel uses, for x in [1e-10, FLT_MAX]; x below 1e-10, and a
 * NaN, are taken as 1e-10 (audio.py's clamp): -10. */
float ws_log10_fast(float x);

#endif

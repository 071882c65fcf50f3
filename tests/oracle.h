/* oracle.h - float64 reference of every step, written plainly and
 * independently of the fast code (no FFTW, no BLAS, no shared helpers):
 * a naive DFT log-Mel, loop convolutions, erf GELU in double.
 * The only things taken from outside are the filter bank (openai's own
 * mel_filters.npz values, tests/data/mel_*.f32) and the weights. */
#ifndef WS_ORACLE_H
#define WS_ORACLE_H

#include <stddef.h>

/* openai's filter bank [n_mels][201] (float32 values as double), from
 * tests/data/mel_80.f32 or mel_128.f32. Static storage; NULL on failure. */
const double *oracle_filters(int n_mels);

/* log_mel_spectrogram(x) for x[0..n) exactly as openai computes it, in
 * double: reflect-padded centred STFT by naive DFT with the periodic Hann,
 * power, mel, log10(max(., 1e-10)), floor at max - 8, (x + 4) / 4.
 * out: [n_mels][n/160] (malloc'd, returned), *n_frames set. n >= 1
 * (reflect padding of n < 201 reflects repeatedly, as np.pad does). */
double *oracle_log_mel(const double *x, size_t n, int n_mels, int *n_frames);

/* Conv1d + optional exact GELU in double, PyTorch semantics.
 * x [in_ch][t_in] channel-major, w [out_ch][in_ch][k], b [out_ch] (or NULL),
 * y [out_ch][t_out] channel-major; returns t_out. */
int oracle_conv1d(const double *x, int in_ch, int t_in, const float *w, const float *b, int out_ch,
                  int k, int stride, int pad, int gelu, double *y);

/* The stem, out time-major [t_out][d] (malloc'd, returned), *t_out set:
 * gelu(conv1(mel)), gelu(conv2(.)), transposed; + pos[t][d] when pos != NULL.
 * mel is float32 [n_mels][n_frames] as our code produces it. */
double *oracle_stem(const float *mel, int n_mels, int n_frames, const float *w1, const float *b1,
                    const float *w2, const float *b2, int d, const float *pos, int *t_out);

/* erf GELU in double. */
double oracle_gelu(double x);

#endif

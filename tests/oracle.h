/* oracle.h - float64 reference of every step, written plainly and
 * independently of the fast code (no FFTW, no BLAS, no shared helpers):
 * a naive DFT log-Mel, loop convolutions, erf GELU in double.
 * The only things taken from outside are the filter bank (openai's own
 * mel_filters.npz values, tests/data/mel_*.f32) and the weights. */
#ifndef WS_ORACLE_H
#define WS_ORACLE_H

#include <stddef.h>
#include <stdint.h>

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

/* The conv engine's math (docs/conv-engine.md) in double, loops only.
 * Dims: n batch, c_in, c_out, groups (cg = c_in / groups), k taps, stride S,
 * dilation D, pad_l / pad_r, t_in; t_out = (t_in + pad_l + pad_r - D*(k-1) - 1) / S + 1.
 *   FWD  y[n,o,t] = act(b[o] + sum_{j<cg,kk<k} w[o,j,kk] * pre(x[n, g*cg+j, S*t + D*kk - pad_l]))
 *                   + add[n,o,t],   g = o / (c_out / groups), x = 0 outside [0, t_in)
 *   BWD  with L = sum(y * dy): dx = dL/dx, dw = dL/dw, db = dL/db (pre NONE, no add).
 * x / dx are indexed in x_layout, y / dy / add in y_layout:
 *   ORACLE_NCL  a[(n*C + c)*T + t]      ORACLE_NLC  a[(n*T + t)*C + c]
 * w is [c_out][cg][k]. act / pre use the numbering of ws_act (NONE, RELU, GELU, SILU). */
enum { ORACLE_NCL = 0, ORACLE_NLC = 1 };
enum { ORACLE_ACT_NONE = 0, ORACLE_ACT_RELU, ORACLE_ACT_GELU, ORACLE_ACT_SILU };

typedef struct {
    int n, c_in, c_out, groups, k, stride, dilation, pad_l, pad_r, t_in;
    int x_layout, y_layout;
    int pre, act;
} oracle_conv_shape;

/* t_out, or 0 when t_in is too short or the shape is invalid. */
int oracle_conv_out_len(const oracle_conv_shape *p);

/* act(z) and d act / dz in double; GELU exact (erf), GELU' = Phi(z) + z*phi(z),
 * SILU' = s + z*s*(1 - s) with s = sigmoid(z), RELU' = (z > 0). */
double oracle_act(int act, double z);
double oracle_act_grad(int act, double z);

/* y [n][c_out][t_out] in y_layout, written whole. b and add may be NULL; item n of add
 * starts at add + n * add_batch_stride (0: the same add for every n). Returns t_out, or
 * -1 for an invalid shape. */
int oracle_conv1d_fwd(const oracle_conv_shape *p, const double *x, const double *w,
                      const double *b, const double *add, long long add_batch_stride, double *y);

/* Any of dx [n][c_in][t_in] (x_layout), dw [c_out][cg][k], db [c_out] (NULL: not wanted),
 * each written whole, from x, w, b (may be NULL) and dy [n][c_out][t_out] (y_layout).
 * Returns t_out, or -1 for an invalid shape (or pre not NONE). */
int oracle_conv1d_bwd(const oracle_conv_shape *p, const double *x, const double *w,
                      const double *b, const double *dy, double *dx, double *dw, double *db);

/* Packed sequences and carried state (docs/conv-engine.md), for depthwise causal shapes
 * only (groups = c_in = c_out, stride 1, pad_l = dilation*(k-1), pad_r 0, so t_out = t_in;
 * a state needs dilation 1). seq_idx is [n][t_in] or NULL, init [n][c][k-1] or NULL (zeros).
 * Tap kk of output t reads position u = t + D*kk - pad_l and sees
 *   x[n,c,u]                  u >= 0 and (no seq_idx, or seq_idx[n][u] == seq_idx[n][t])
 *   init[n][c][u + k-1]       u < 0 and init given
 *   0                         otherwise;
 * pre applies to what it sees (FWD). An output with seq_idx[n][t] < 0 is 0 (FWD) and has
 * no gradient (BWD: dy ignored there).
 * FWD: y as oracle_conv1d_fwd, and final [n][c][k-1] (NULL: not wanted): the input at
 * position t_in-(k-1)+j, init (or 0) where that is negative.
 * BWD: with L = sum(y * dy), any of dx, dw, db, dinit = dL/d init ([n][c][k-1], defined
 * also when init is NULL: the gradient at zero states); NULL: not wanted.
 * Both return t_out, or -1 for a shape these are not defined for. */
int oracle_dw_causal_fwd(const oracle_conv_shape *p, const double *x, const double *w,
                         const double *b, const double *add, long long add_batch_stride,
                         const int32_t *seq_idx, const double *init, double *y, double *final);
int oracle_dw_causal_bwd(const oracle_conv_shape *p, const double *x, const double *w,
                         const double *b, const int32_t *seq_idx, const double *init,
                         const double *dy, double *dx, double *dw, double *db, double *dinit);

#endif

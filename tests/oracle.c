/* oracle.c - float64 reference; see oracle.h.
 *
 * Deliberately naive and independent of src/: the DFT is a direct sum over
 * a cosine/sine table, the convolutions are loops, GELU is erf from libm in
 * double. Follows openai-whisper audio.py log_mel_spectrogram and model.py
 * AudioEncoder.forward line by line.
 */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

enum { N_FFT = 400, HOP = 160, N_BINS = 201 };

const double *oracle_filters(int n_mels)
{
    static double f80[80 * N_BINS], f128[128 * N_BINS];
    static int have80, have128;
    double *dst = n_mels == 80 ? f80 : n_mels == 128 ? f128 : NULL;
    int *have = n_mels == 80 ? &have80 : &have128;
    if (!dst)
        return NULL;
    if (!*have) {
        char name[32];
        snprintf(name, sizeof name, "mel_%d.f32", n_mels);
        size_t len = 0;
        float *raw = read_file(test_data(name), &len);
        if (!raw || len != (size_t)n_mels * N_BINS * sizeof(float)) {
            free(raw);
            return NULL;
        }
        for (int i = 0; i < n_mels * N_BINS; i++)
            dst[i] = raw[i];
        free(raw);
        *have = 1;
    }
    return dst;
}

/* np.pad(x, 200, mode="reflect") index map: even reflection about the end
 * samples, repeated as often as needed (period 2(n-1)). */
static size_t reflect_index(long long i, size_t n)
{
    if (n == 1)
        return 0;
    long long period = 2 * (long long)(n - 1);
    long long j = i % period;
    if (j < 0)
        j += period;
    if (j >= (long long)n)
        j = period - j;
    return (size_t)j;
}

double *oracle_log_mel(const double *x, size_t n, int n_mels, int *n_frames)
{
    const double *filt = oracle_filters(n_mels);
    if (!filt || n == 0)
        return NULL;
    const int nf = (int)(n / HOP); /* 1 + n/hop frames, the last dropped */
    double *out = calloc((size_t)n_mels * (nf > 0 ? nf : 1), sizeof *out);
    double cosv[N_FFT], sinv[N_FFT], win[N_FFT], frame[N_FFT], power[N_BINS];
    for (int i = 0; i < N_FFT; i++) {
        cosv[i] = cos(2.0 * M_PI * i / N_FFT);
        sinv[i] = sin(2.0 * M_PI * i / N_FFT);
        win[i] = 0.5 - 0.5 * cos(2.0 * M_PI * i / N_FFT); /* periodic Hann */
    }
    double gmax = -INFINITY;
    for (int t = 0; t < nf; t++) {
        for (int i = 0; i < N_FFT; i++)
            frame[i] = win[i] * x[reflect_index((long long)t * HOP + i - N_FFT / 2, n)];
        for (int f = 0; f < N_BINS; f++) {
            double re = 0, im = 0;
            for (int i = 0; i < N_FFT; i++) {
                int idx = (int)(((long long)f * i) % N_FFT);
                re += frame[i] * cosv[idx];
                im -= frame[i] * sinv[idx];
            }
            power[f] = re * re + im * im;
        }
        for (int m = 0; m < n_mels; m++) {
            double s = 0;
            for (int f = 0; f < N_BINS; f++)
                s += filt[m * N_BINS + f] * power[f];
            double l = log10(s > 1e-10 ? s : 1e-10);
            out[(size_t)m * nf + t] = l;
            if (l > gmax)
                gmax = l;
        }
    }
    for (size_t i = 0; i < (size_t)n_mels * nf; i++) {
        double l = out[i] < gmax - 8.0 ? gmax - 8.0 : out[i];
        out[i] = (l + 4.0) / 4.0;
    }
    *n_frames = nf;
    return out;
}

double oracle_gelu(double x)
{
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

int oracle_conv1d(const double *x, int in_ch, int t_in, const float *w, const float *b, int out_ch,
                  int k, int stride, int pad, int gelu, double *y)
{
    int t_out = (t_in + 2 * pad - (k - 1) - 1) / stride + 1;
    for (int o = 0; o < out_ch; o++) {
        for (int t = 0; t < t_out; t++) {
            double s = b ? b[o] : 0.0;
            for (int i = 0; i < in_ch; i++) {
                for (int j = 0; j < k; j++) {
                    int src = t * stride + j - pad;
                    if (src < 0 || src >= t_in)
                        continue;
                    s += (double)w[((size_t)o * in_ch + i) * k + j] * x[(size_t)i * t_in + src];
                }
            }
            y[(size_t)o * t_out + t] = gelu ? oracle_gelu(s) : s;
        }
    }
    return t_out;
}

double *oracle_stem(const float *mel, int n_mels, int n_frames, const float *w1, const float *b1,
                    const float *w2, const float *b2, int d, const float *pos, int *t_out)
{
    double *x = malloc((size_t)n_mels * n_frames * sizeof *x);
    double *h = malloc((size_t)d * n_frames * sizeof *h);
    int t2 = (n_frames - 1) / 2 + 1;
    double *y = malloc((size_t)d * t2 * sizeof *y);
    double *out = malloc((size_t)d * t2 * sizeof *out);
    for (size_t i = 0; i < (size_t)n_mels * n_frames; i++)
        x[i] = mel[i];
    oracle_conv1d(x, n_mels, n_frames, w1, b1, d, 3, 1, 1, 1, h);
    oracle_conv1d(h, d, n_frames, w2, b2, d, 3, 2, 1, 1, y);
    for (int t = 0; t < t2; t++)
        for (int o = 0; o < d; o++)
            out[(size_t)t * d + o] = y[(size_t)o * t2 + t] + (pos ? (double)pos[(size_t)t * d + o] : 0.0);
    free(x);
    free(h);
    free(y);
    *t_out = t2;
    return out;
}

/* --- the conv engine's math ------------------------------------------------ */

int oracle_conv_out_len(const oracle_conv_shape *p)
{
    if (p->n < 1 || p->c_in < 1 || p->c_out < 1 || p->groups < 1 || p->k < 1 || p->stride < 1 ||
        p->dilation < 1 || p->pad_l < 0 || p->pad_r < 0 || p->t_in < 1 ||
        p->c_in % p->groups || p->c_out % p->groups)
        return 0;
    long long span = (long long)p->t_in + p->pad_l + p->pad_r - (long long)p->dilation * (p->k - 1);
    if (span < 1)
        return 0;
    return (int)((span - 1) / p->stride + 1);
}

double oracle_act(int act, double z)
{
    switch (act) {
    case ORACLE_ACT_RELU: return z > 0 ? z : 0.0;
    case ORACLE_ACT_GELU: return oracle_gelu(z);
    case ORACLE_ACT_SILU: return z / (1.0 + exp(-z));
    default: return z;
    }
}

double oracle_act_grad(int act, double z)
{
    switch (act) {
    case ORACLE_ACT_RELU: return z > 0 ? 1.0 : 0.0;
    case ORACLE_ACT_GELU: {
        double cdf = 0.5 * (1.0 + erf(z / sqrt(2.0)));
        double pdf = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
        return cdf + z * pdf;
    }
    case ORACLE_ACT_SILU: {
        double s = 1.0 / (1.0 + exp(-z));
        return s + z * s * (1.0 - s);
    }
    default: return 1.0;
    }
}

static size_t lay_index(int layout, int n, int c, int t, int C, int T)
{
    return layout == ORACLE_NLC ? ((size_t)n * T + t) * C + c : ((size_t)n * C + c) * T + t;
}

/* The pre-activation z[n,o,t] (bias included, before act). */
static double conv_z(const oracle_conv_shape *p, const double *x, const double *w, const double *b,
                     int n, int o, int t)
{
    const int cg = p->c_in / p->groups, g = o / (p->c_out / p->groups);
    double s = b ? b[o] : 0.0;
    for (int j = 0; j < cg; j++)
        for (int kk = 0; kk < p->k; kk++) {
            long long u = (long long)p->stride * t + (long long)p->dilation * kk - p->pad_l;
            if (u < 0 || u >= p->t_in)
                continue;
            double xv = x[lay_index(p->x_layout, n, g * cg + j, (int)u, p->c_in, p->t_in)];
            s += w[((size_t)o * cg + j) * p->k + kk] * oracle_act(p->pre, xv);
        }
    return s;
}

int oracle_conv1d_fwd(const oracle_conv_shape *p, const double *x, const double *w,
                      const double *b, const double *add, long long add_batch_stride, double *y)
{
    const int t_out = oracle_conv_out_len(p);
    if (t_out < 1)
        return -1;
    for (int n = 0; n < p->n; n++)
        for (int o = 0; o < p->c_out; o++)
            for (int t = 0; t < t_out; t++) {
                double v = oracle_act(p->act, conv_z(p, x, w, b, n, o, t));
                if (add)
                    v += add[n * add_batch_stride + (long long)lay_index(p->y_layout, 0, o, t,
                                                                       p->c_out, t_out)];
                y[lay_index(p->y_layout, n, o, t, p->c_out, t_out)] = v;
            }
    return t_out;
}

int oracle_conv1d_bwd(const oracle_conv_shape *p, const double *x, const double *w,
                      const double *b, const double *dy, double *dx, double *dw, double *db)
{
    const int t_out = oracle_conv_out_len(p);
    if (t_out < 1 || p->pre != ORACLE_ACT_NONE)
        return -1;
    const int cg = p->c_in / p->groups;
    if (dx)
        memset(dx, 0, sizeof *dx * (size_t)p->n * p->c_in * p->t_in);
    if (dw)
        memset(dw, 0, sizeof *dw * (size_t)p->c_out * cg * p->k);
    if (db)
        memset(db, 0, sizeof *db * (size_t)p->c_out);
    for (int n = 0; n < p->n; n++)
        for (int o = 0; o < p->c_out; o++) {
            const int g = o / (p->c_out / p->groups);
            for (int t = 0; t < t_out; t++) {
                /* dL/dz = dy * act'(z), z recomputed from x, w, b */
                double z = conv_z(p, x, w, b, n, o, t);
                double gz = dy[lay_index(p->y_layout, n, o, t, p->c_out, t_out)] *
                            oracle_act_grad(p->act, z);
                if (db)
                    db[o] += gz;
                for (int j = 0; j < cg; j++)
                    for (int kk = 0; kk < p->k; kk++) {
                        long long u = (long long)p->stride * t + (long long)p->dilation * kk - p->pad_l;
                        if (u < 0 || u >= p->t_in)
                            continue;
                        size_t xi = lay_index(p->x_layout, n, g * cg + j, (int)u, p->c_in, p->t_in);
                        size_t wi = ((size_t)o * cg + j) * p->k + kk;
                        if (dw)
                            dw[wi] += gz * x[xi];
                        if (dx)
                            dx[xi] += gz * w[wi];
                    }
            }
        }
    return t_out;
}

/* --- packed sequences and carried state ------------------------------------ */

static int dw_causal_shape(const oracle_conv_shape *p, int has_state)
{
    return oracle_conv_out_len(p) == p->t_in && p->groups == p->c_in && p->c_in == p->c_out &&
           p->stride == 1 && p->pad_r == 0 &&
           (long long)p->pad_l == (long long)p->dilation * (p->k - 1) &&
           (!has_state || p->dilation == 1);
}

/* What tap kk of output t of row (n, c) sees, before pre; *where: the x index it read, -1 - j
 * for state j, or 0 for nothing (the value is then 0). */
static double dw_tap(const oracle_conv_shape *p, const double *x, const int32_t *seq,
                     const double *init, int n, int c, int t, int kk, long long *where)
{
    const long long u = (long long)t + (long long)p->dilation * kk - p->pad_l;
    const int k1 = p->k - 1;
    if (u >= 0) {
        if (seq && seq[(size_t)n * p->t_in + (size_t)u] != seq[(size_t)n * p->t_in + t]) {
            *where = 0;
            return 0.0;
        }
        size_t i = lay_index(p->x_layout, n, c, (int)u, p->c_in, p->t_in);
        *where = (long long)i + 1;
        return x[i];
    }
    if (u < -k1) { /* before any state (dilation > 1): 0 */
        *where = 0;
        return 0.0;
    }
    size_t j = ((size_t)n * p->c_in + c) * k1 + (size_t)(u + k1);
    *where = -1 - (long long)j;
    return init ? init[j] : 0.0;
}

int oracle_dw_causal_fwd(const oracle_conv_shape *p, const double *x, const double *w,
                         const double *b, const double *add, long long add_batch_stride,
                         const int32_t *seq_idx, const double *init, double *y, double *final)
{
    if (!dw_causal_shape(p, init || final))
        return -1;
    const int T = p->t_in, C = p->c_in, K = p->k;
    for (int n = 0; n < p->n; n++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < T; t++) {
                size_t yi = lay_index(p->y_layout, n, c, t, C, T);
                if (seq_idx && seq_idx[(size_t)n * T + t] < 0) {
                    y[yi] = 0.0;
                    continue;
                }
                double z = b ? b[c] : 0.0;
                for (int kk = 0; kk < K; kk++) {
                    long long where;
                    double v = dw_tap(p, x, seq_idx, init, n, c, t, kk, &where);
                    if (where)
                        z += w[(size_t)c * K + kk] * oracle_act(p->pre, v);
                }
                double v = oracle_act(p->act, z);
                if (add)
                    v += add[n * add_batch_stride + (long long)lay_index(p->y_layout, 0, c, t, C, T)];
                y[yi] = v;
            }
    if (final)
        for (int n = 0; n < p->n; n++)
            for (int c = 0; c < C; c++)
                for (int j = 0; j < K - 1; j++) {
                    long long u = (long long)T - (K - 1) + j;
                    size_t s = ((size_t)n * C + c) * (K - 1);
                    final[s + j] = u >= 0 ? x[lay_index(p->x_layout, n, c, (int)u, C, T)]
                                   : init ? init[s + (size_t)(u + K - 1)]
                                          : 0.0;
                }
    return T;
}

int oracle_dw_causal_bwd(const oracle_conv_shape *p, const double *x, const double *w,
                         const double *b, const int32_t *seq_idx, const double *init,
                         const double *dy, double *dx, double *dw, double *db, double *dinit)
{
    if (!dw_causal_shape(p, init || dinit) || p->pre != ORACLE_ACT_NONE)
        return -1;
    const int T = p->t_in, C = p->c_in, K = p->k;
    if (dx)
        memset(dx, 0, sizeof *dx * (size_t)p->n * C * T);
    if (dw)
        memset(dw, 0, sizeof *dw * (size_t)C * K);
    if (db)
        memset(db, 0, sizeof *db * (size_t)C);
    if (dinit)
        memset(dinit, 0, sizeof *dinit * (size_t)p->n * C * (K - 1));
    for (int n = 0; n < p->n; n++)
        for (int c = 0; c < C; c++)
            for (int t = 0; t < T; t++) {
                if (seq_idx && seq_idx[(size_t)n * T + t] < 0)
                    continue;
                double z = b ? b[c] : 0.0;
                for (int kk = 0; kk < K; kk++) {
                    long long where;
                    double v = dw_tap(p, x, seq_idx, init, n, c, t, kk, &where);
                    if (where)
                        z += w[(size_t)c * K + kk] * v;
                }
                double gz = dy[lay_index(p->y_layout, n, c, t, C, T)] * oracle_act_grad(p->act, z);
                if (db)
                    db[c] += gz;
                for (int kk = 0; kk < K; kk++) {
                    long long where;
                    double v = dw_tap(p, x, seq_idx, init, n, c, t, kk, &where);
                    if (!where)
                        continue;
                    if (dw)
                        dw[(size_t)c * K + kk] += gz * v;
                    if (where > 0 && dx)
                        dx[where - 1] += gz * w[(size_t)c * K + kk];
                    if (where < 0 && dinit)
                        dinit[-1 - where] += gz * w[(size_t)c * K + kk];
                }
            }
    return T;
}

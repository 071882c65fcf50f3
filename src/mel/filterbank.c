/* filterbank.c - Slaney-scale, Slaney-normalised triangular mel filters,
 * as librosa 0.10 makes them (openai-whisper's mel_filters.npz was saved
 * from librosa.filters.mel(sr=16000, n_fft=400, n_mels=80|128)).
 *
 * Slaney scale: linear below 1 kHz (mel = hz / (200/3)), logarithmic above
 * (mel = 15 + ln(hz / 1000) / (ln(6.4) / 27)).
 * Filter m has corners at mel_f[m], mel_f[m+1], mel_f[m+2], where mel_f are
 * n_mels + 2 points evenly spaced in mel from 0 Hz to 8000 Hz; bin f sits
 * at f * 40 Hz. Weight = max(0, min(rising, falling)) * 2 / (mel_f[m+2] - mel_f[m])
 * (the "slaney" area normalisation).
 * Validated by tests/test_mel.c (filters_equal_openai_npz_*).
 */
#include "filterbank.h"

#include <math.h>

#include "mel.h"

#define SR 16000.0
#define F_SP (200.0 / 3.0)  /* Hz per mel below the break */
#define MIN_LOG_HZ 1000.0   /* the break between linear and log parts */
#define MIN_LOG_MEL (MIN_LOG_HZ / F_SP)
#define LOGSTEP (log(6.4) / 27.0)

double ws_hz_to_mel(double hz)
{
    if (hz >= MIN_LOG_HZ)
        return MIN_LOG_MEL + log(hz / MIN_LOG_HZ) / LOGSTEP;
    return hz / F_SP;
}

double ws_mel_to_hz(double mel)
{
    if (mel >= MIN_LOG_MEL)
        return MIN_LOG_HZ * exp(LOGSTEP * (mel - MIN_LOG_MEL));
    return F_SP * mel;
}

void ws_mel_filterbank(int n_mels, double *out)
{
    enum { MAX_POINTS = 1024 };
    double mel_f[MAX_POINTS];
    const int n_pts = n_mels + 2;
    const double mel_lo = ws_hz_to_mel(0.0), mel_hi = ws_hz_to_mel(SR / 2.0);
    for (int i = 0; i < n_pts && i < MAX_POINTS; i++) {
        /* np.linspace: i * step + lo, the last point exactly hi */
        const double step = (mel_hi - mel_lo) / (double)(n_pts - 1);
        double m = i == n_pts - 1 ? mel_hi : (double)i * step + mel_lo;
        mel_f[i] = ws_mel_to_hz(m);
    }
    for (int m = 0; m < n_mels; m++) {
        const double fdiff_lo = mel_f[m + 1] - mel_f[m];
        const double fdiff_hi = mel_f[m + 2] - mel_f[m + 1];
        const double enorm = 2.0 / (mel_f[m + 2] - mel_f[m]);
        for (int f = 0; f < WS_N_BINS; f++) {
            /* np.fft.rfftfreq(400, d=1/16000): f * (1 / (400 * d)) */
            const double hz = (double)f * (1.0 / (WS_N_FFT * (1.0 / SR)));
            const double lower = -(mel_f[m] - hz) / fdiff_lo;
            const double upper = (mel_f[m + 2] - hz) / fdiff_hi;
            double w = lower < upper ? lower : upper;
            out[m * WS_N_BINS + f] = (w > 0.0 ? w : 0.0) * enorm;
        }
    }
}

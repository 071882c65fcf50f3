/* filterbank.h - librosa.filters.mel(sr=16000, n_fft=400, n_mels, fmin=0,
 * fmax=8000, htk=False, norm="slaney"), computed in double.
 * Validated by tests/test_mel.c against openai's mel_filters.npz. */
#ifndef WS_MEL_FILTERBANK_H
#define WS_MEL_FILTERBANK_H

/* Fills out[n_mels][201]. */
void ws_mel_filterbank(int n_mels, double *out);

/* Slaney mel scale (librosa hz_to_mel / mel_to_hz with htk=False). */
double ws_hz_to_mel(double hz);
double ws_mel_to_hz(double mel);

#endif

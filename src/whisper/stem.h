/* stem.h - Whisper's encoder stem on the CPU:
 *   x = gelu(conv1(mel)); x = gelu(conv2(x)); [x += pos]; out = x^T
 * conv1: n_mels -> d, k 3, s 1, pad 1.  conv2: d -> d, k 3, s 2, pad 1.
 *   mel [n_mels][n_frames]   channel-major, as log_mel_spectrogram returns it
 *   out [t_out][d]           time-major (x.permute(0, 2, 1)),
 *                            t_out = (n_frames - 1) / 2 + 1   (1500 for 3000)
 * Validated by tests/test_stem.c against the double-precision oracle.
 */
#ifndef WS_STEM_H
#define WS_STEM_H

#include "common.h"
#include "model.h"

typedef struct ws_stem ws_stem;

/* Packs m's weights (m must outlive the stem only for m->pos). */
ws_stem *ws_stem_new(const ws_model *m, int n_threads, ws_err *err);
void ws_stem_free(ws_stem *s);

static inline int ws_stem_out_len(int n_frames) { return n_frames < 1 ? 0 : (n_frames - 1) / 2 + 1; }

/* One window. add_pos adds the positional embedding (m->pos, else
 * sinusoids(t_out, d)); fails if t_out exceeds the model's table. */
int ws_stem_run(ws_stem *s, const float *mel, int n_frames, int add_pos, float *out, ws_err *err);

/* openai-whisper's sinusoids(length, channels), max_timescale 10000, in double:
 *   inc = ln(10000) / (channels/2 - 1); t_j = exp(-inc * j)
 *   out[p][j] = sin(p * t_j), out[p][channels/2 + j] = cos(p * t_j)
 * channels must be even and >= 4. */
void ws_sinusoids(int length, int channels, float *out);

/* Positional rows for t_out outputs of model m: m->pos when the model has
 * one (error if t_out > n_pos), else a sinusoids table (malloc'd, kept in
 * *owned for the caller to free). NULL with err on failure. */
const float *ws_pos_table(const ws_model *m, int t_out, float **owned, ws_err *err);

#endif

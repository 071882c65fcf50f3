/* stem.h - Whisper's encoder stem, a client of the conv engine:
 *   x = gelu(conv1(mel)); x = gelu(conv2(x)); [x += pos]; out = x^T
 * conv1: n_mels -> d, k 3, s 1, pad 1.  conv2: d -> d, k 3, s 2, pad 1.
 *   mel [n_win][n_mels][n_frames]  channel-major, as log_mel_spectrogram returns it
 *   out [n_win][t_out][d]          time-major (x.permute(0, 2, 1)),
 *                                  t_out = (n_frames - 1) / 2 + 1   (1500 for 3000)
 * The two convolutions are written once, as engine descriptors (ws_stem_descs); the CPU
 * runs them as engine plans (src/conv/), the GPU as plans of the engine's GPU backend
 * (src/cuda/gpu_stem.c). Both take all windows of an input in one call.
 * Validated by tests/test_conv.c (CPU) and tests/test_gpu.c (GPU) against the
 * double-precision oracle.
 */
#ifndef WS_STEM_H
#define WS_STEM_H

#include "common.h"
#include "cuda/gpu.h"
#include "whisper/model.h"
#include "ws_conv.h"

/* The stem's two descriptors: conv1 (x the log-Mel, NCL float32; y time-major) and
 * conv2 (x, y time-major; y float32; the positional table as `add`, batch stride 0).
 * Precision p sets the math; the intermediate (conv1's y, conv2's x) is stored in its
 * element type (f32 for fp32 and tf32, f16, bf16). The CPU takes WS_PREC_FP32. */
void ws_stem_descs(int n_mels, int d, ws_precision p, ws_conv_desc pair[2]);

static inline int ws_stem_out_len(int n_frames) { return n_frames < 1 ? 0 : (n_frames - 1) / 2 + 1; }

typedef struct ws_stem ws_stem;

/* The stem on the CPU (n_threads >= 1) or on GPU number ordinal in precision p. The weights
 * are copied (packed); m's positional table is read at each run, so m must outlive the
 * stem. NULL + err on failure (for the GPU: no driver, no device, ...). */
ws_stem *ws_stem_new_cpu(const ws_model *m, int n_threads, ws_err *err);
ws_stem *ws_stem_new_gpu(const ws_model *m, ws_precision p, int ordinal, ws_err *err);
void ws_stem_free(ws_stem *s);

/* n_win windows of n_frames frames each. add_pos adds the positional embedding (m->pos,
 * else sinusoids(t_out, d)); fails if t_out exceeds the model's table. */
int ws_stem_run(ws_stem *s, const float *mel, int n_win, int n_frames, int add_pos, float *out,
                ws_err *err);

/* GPU stem: makes the device's add table cover t_out(n_frames) rows of the positional
 * table (the model's, or sinusoids), for launches that do not go through ws_stem_run
 * (batches of many inputs, cuda/gpu_batch.h). 0 or -1 with err. */
int ws_stem_gpu_prepare_add(ws_stem *s, int n_frames, ws_err *err);

/* The GPU backend of a GPU stem (device name, tests, benchmarks), else NULL. */
ws_gpu_pair *ws_stem_gpu(ws_stem *s);

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

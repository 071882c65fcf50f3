/* gpu.h - the conv stem on an NVIDIA GPU through the CUDA driver API.
 *
 * libcuda.so.1 is opened at run time, so a binary built anywhere runs on a
 * machine with no driver (ws_gpu_new then fails with a clear message and the
 * caller falls back to the CPU). Kernels are PTX emitted by whisper-stem for
 * the model's shape and the chosen precision.
 *
 * Data layouts match the CPU stem (whisper/stem.h):
 *   mel  [n_win][n_mels][n_frames]  channel-major log-Mel, as --mel writes it
 *   out  [n_win][t_out][d]          time-major, t_out = (n_frames - 1) / 2 + 1
 */
#ifndef WS_CUDA_GPU_H
#define WS_CUDA_GPU_H

#include "common.h"
#include "whisper/model.h"

typedef enum { WS_PREC_FP32 = 0, WS_PREC_TF32, WS_PREC_BF16, WS_PREC_FP16 } ws_precision;

const char *ws_precision_name(ws_precision p);
int ws_precision_parse(const char *s, ws_precision *p); /* 0, or -1 if unknown */

typedef struct ws_gpu ws_gpu;

/* Opens the driver, the first device and its primary context, emits and
 * loads the kernels for m's shape and precision p, and uploads the weights.
 * Returns NULL with err set when there is no driver, no device, or a call
 * fails (err names the call and the driver's error string). */
/* 0 when a CUDA driver and a device of compute capability 8.0 or later are
 * there (name gets "NAME, sm_XY"), else -1 with the reason; loads no kernels. */
int ws_gpu_probe(char *name, size_t cap, ws_err *err);

ws_gpu *ws_gpu_new(const ws_model *m, ws_precision p, ws_err *err);

/* Runs the stem on n_win windows of n_frames frames each (any n_frames >= 1),
 * writing out [n_win][t_out][d]. Adds pos[t] when add_pos (m->pos, or the
 * sinusoids table). Returns 0, or -1 with err set. */
int ws_gpu_stem(ws_gpu *g, const float *mel, int n_win, int n_frames, int add_pos, float *out,
                ws_err *err);

/* One line naming the device (e.g. "NVIDIA H100 80GB HBM3, sm_90"). */
const char *ws_gpu_device_name(const ws_gpu *g);

/* Frees device memory, module and context reference. NULL-safe. */
void ws_gpu_free(ws_gpu *g);

/* Writes every kernel emitted for (n_mels, d, p) into dir as .ptx files;
 * needs no GPU. Returns 0 or -1. */
int ws_gpu_dump_ptx(int n_mels, int d, ws_precision p, const char *dir, ws_err *err);

#endif

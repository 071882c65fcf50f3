/* gpu_internal.h - hooks of the GPU stem for tests and benchmarks (not part
 * of the product's contract, gpu.h). */
#ifndef WS_CUDA_GPU_INTERNAL_H
#define WS_CUDA_GPU_INTERNAL_H

#include "gpu.h"

/* Poisons the device intermediates and output with NaN before every
 * ws_gpu_stem, so that an element no kernel writes shows up (tests). */
void ws_gpu_set_poison(ws_gpu_pair *g, int on);

/* Forces the tile variant: -1 automatic (default), 0 large, 1 small. */
void ws_gpu_force_tile(ws_gpu_pair *g, int small);

/* y[i] = gelu(x[i]) through the PTX GELU (ws_gelu_grid). */
int ws_gpu_gelu(ws_gpu_pair *g, const float *x, float *y, int n, ws_err *err);

/* Kernel-only time of the stem (mel_t + conv1 + conv2) on device-resident
 * inputs: n_bufs input buffers of random log-Mel rotated, `warmup` untimed
 * runs, then `iters` runs each between two CUDA events. Fills the median and
 * minimum in microseconds per launch (all n_win windows). With stage_us,
 * every other run also records events between the stages (those runs are
 * left out of the median) and stage_us gets the medians of mel_t, conv1 and
 * conv2 (conv2 includes the end event's own gap). */
int ws_gpu_bench(ws_gpu_pair *g, int n_win, int n_frames, int add_pos, int n_bufs, int warmup,
                 int iters, double *median_us, double *min_us, double stage_us[3], ws_err *err);

/* One line per kernel: name, threads, registers, local (stack) bytes,
 * dynamic shared memory. Static storage of g. */
const char *ws_gpu_kernel_report(ws_gpu_pair *g);

/* --- for gpu_batch.c ---------------------------------------------------------------- */
#include "gpu_runtime.h"

/* Enqueues the pair on stream s: mel [n_win][n_mels][n_frames] f32 (device) -> out
 * [n_win][T2][d] f32 through the intermediates xt and h1 (sizes: ws_gpu_stem_bytes), with
 * the large tile and no split of K whatever n_win is, so that each window's bits do not
 * depend on the other windows of the launch. add_pos: + the table of ws_gpu_set_add. */
int ws_gpu_enqueue_fixed(ws_gpu_pair *g, wscu_stream s, wscu_devptr mel, wscu_devptr xt,
                         wscu_devptr h1, wscu_devptr out, int n_win, int n_frames, int add_pos,
                         ws_err *err);
void ws_gpu_stem_bytes(const ws_gpu_pair *g, int n_win, int n_frames, size_t *xt, size_t *h1,
                       size_t *out);
/* The pair's ws_gpu (gpu_runtime.h: its driver, context, capability), for work beside the
 * pair's on the same device; it stays the pair's (ws_gpu_free closes it). */
ws_gpu *ws_gpu_pair_gpu(ws_gpu_pair *g);
/* n_mels; *d: the width. */
int ws_gpu_pair_dims(const ws_gpu_pair *g, int *d);

#endif

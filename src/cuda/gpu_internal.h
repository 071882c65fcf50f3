/* gpu_internal.h - hooks of the GPU stem for tests and benchmarks (not part
 * of the product's contract, gpu.h). */
#ifndef WS_CUDA_GPU_INTERNAL_H
#define WS_CUDA_GPU_INTERNAL_H

#include "gpu.h"

/* 0 when pair is what the GPU stem takes (the stem's two descriptors as ws_stem_descs
 * writes them: FWD, dense, K 3, pad 1, GELU, conv1 NCL float32 x, conv2 stride 2 reading
 * conv1's NLC y in the math's storage type, float32 y, w float32, one math) and *prec its
 * precision; else -1 with a line naming the conv and the field. */
int ws_gpu_check_pair(const ws_conv_desc pair[2], ws_precision *prec, ws_err *err);

/* Poisons the device intermediate and output with NaN before every
 * ws_gpu_stem, so that an element no kernel writes shows up (tests). */
void ws_gpu_set_poison(ws_gpu_pair *g, int on);

/* y[i] = gelu(x[i]) on the GPU: an engine plan of a 1 x 1 conv (k 1, weight 1, no bias,
 * act GELU, float32), made at the first call and kept; the GELU is every engine kernel's
 * (ptx_act.h, gelu_ptx.h). */
int ws_gpu_gelu(ws_gpu_pair *g, const float *x, float *y, int n, ws_err *err);

/* Kernel-only time of the stem (conv1 + conv2, the pair's own plans) on device-resident
 * inputs: n_bufs input buffers of random log-Mel rotated, `warmup` untimed
 * runs, then `iters` runs each between two CUDA events. Fills the median and
 * minimum in microseconds per launch (all n_win windows). With stage_us,
 * every other run also records an event between the convs (those runs are
 * left out of the median) and stage_us gets the medians of the stages: [0] 0 (the
 * log-Mel is read as it is: no stage before conv1), [1] conv1 and [2] conv2 (conv2
 * includes the end event's own gap). */
int ws_gpu_bench(ws_gpu_pair *g, int n_win, int n_frames, int add_pos, int n_bufs, int warmup,
                 int iters, double *median_us, double *min_us, double stage_us[3], ws_err *err);

/* The kernels of the pair's own plans, as ws_gpu_conv_report lists them (name, threads,
 * registers, local bytes), under a line naming each conv. Static storage of g. */
const char *ws_gpu_kernel_report(ws_gpu_pair *g);

/* Plan k (0 conv1, 1 conv2) of lane `lane` (0: the pair's own; 1..: made by
 * ws_gpu_enqueue_fixed), or NULL where that lane has not been made (tests read the
 * engine's counters and dispatch through it). */
ws_gpu_conv *ws_gpu_pair_plan(ws_gpu_pair *g, int lane, int k);

/* --- for gpu_batch.c ---------------------------------------------------------------- */
#include "gpu_runtime.h"

/* Lanes a pair holds at most: lane 0 its own, the others ws_gpu_enqueue_fixed's. */
#define WS_GPU_LANES 64

/* Enqueues the pair on stream s: mel [n_win][n_mels][n_frames] f32 (device) -> out
 * [n_win][T2][d] f32 through the intermediate h1 (sizes: ws_gpu_stem_bytes), on the plans
 * of lane `lane` (1 .. WS_GPU_LANES - 1; clones of the pair's plans, made at its first use).
 * A plan's scratch is its own and calls of one plan on two streams would race: a caller
 * with several streams at once gives each its own lane (gpu_batch.c: slot + 1), and the
 * calls of one lane must be ordered (one stream, or waited for); so one batcher at a time
 * a pair (the command and the library make one). The lanes' scratch (conv1's staged
 * log-Mel on the Hopper GEMM, the parts of a sum) grows inside the call and is not counted
 * in the batcher's memory bounds: running out there fails the batch. Lanes compute every sum
 * whole (ws_gpu_set_fixed), so that each window's bits do not depend on the other windows
 * of the launch. add_pos: + the table of ws_gpu_set_add. 0, or -1 with err. */
int ws_gpu_enqueue_fixed(ws_gpu_pair *g, int lane, wscu_stream s, wscu_devptr mel, wscu_devptr h1,
                         wscu_devptr out, int n_win, int n_frames, int add_pos, ws_err *err);
void ws_gpu_stem_bytes(const ws_gpu_pair *g, int n_win, int n_frames, size_t *h1, size_t *out);
/* The pair's ws_gpu (gpu_runtime.h: its driver, context, capability), for work beside the
 * pair's on the same device; it stays the pair's (ws_gpu_free closes it). */
ws_gpu *ws_gpu_pair_gpu(ws_gpu_pair *g);
/* n_mels; *d: the width. */
int ws_gpu_pair_dims(const ws_gpu_pair *g, int *d);

#endif

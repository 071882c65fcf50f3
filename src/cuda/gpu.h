/* gpu.h - Whisper's stem on the GPU: its pair of convolutions (ws_stem_descs) as two plans
 * of the conv engine's GPU backend (include/ws_conv.h, gpu_conv.c), gpu_stem.c.
 *
 * libcuda.so.1 is opened at run time, so a binary built anywhere runs on a
 * machine with no driver (ws_gpu_new then fails with a clear message and the
 * caller falls back to the CPU). Kernels are the engine's PTX, emitted for
 * the descriptors and the device found.
 *
 * Data layouts (the pair c1 -> c2; C = c1's c_in, D = its c_out):
 *   x    [n_win][C][T]        channel-major (c1's NCL x: the log-Mel), float32
 *   out  [n_win][T2][D]       time-major (c2's NLC y), float32, T2 = ws_conv_out_len(c2, T)
 *   add  [rows][D]            float32, added to every item (batch stride 0)
 */
#ifndef WS_CUDA_GPU_H
#define WS_CUDA_GPU_H

#include "common.h"
#include "precision.h"
#include "ws_conv.h"

typedef struct ws_gpu_pair ws_gpu_pair;

/* 0 when a CUDA driver and device number `ordinal` (0: the first that CUDA_VISIBLE_DEVICES
 * leaves) of compute capability 8.0 or later are there (name gets "NAME, sm_XY"), else -1
 * with the reason; loads no kernels, retains no context (gpu.c). */
int ws_gpu_probe(int ordinal, char *name, size_t cap, ws_err *err);

/* 1 when the driver library (libcuda.so.1, or $WHISPER_STEM_LIBCUDA) loads, whether or not
 * a device works: tells "no driver installed" from "a driver, but no usable GPU" (gpu.c). */
int ws_gpu_driver_present(void);

/* 1 when device `ordinal` is open in this process and in the default compute mode (other
 * processes may make contexts on it while this one holds its own); 0 otherwise
 * (exclusive or prohibited modes, or not open). */
int ws_gpu_device_shared(int ordinal);

/* Opens device number `ordinal` on the device runtime (gpu.c: the driver, the device's
 * primary context, a stream), checks the pair (the stem's two descriptors as ws_stem_descs
 * writes them, one math; anything else is refused naming the field) and makes an engine plan
 * of each on that device (ws_gpu_conv_new: its kernels emitted and loaded, the weights
 * uploaded) from w1 [D][C][3], b1 [D], w2 [D][D][3], b2 [D] (float32, all four required;
 * copied). Returns NULL with err set when there is no driver, no device, the pair is
 * refused, or a call fails (err names the call and the driver's error string). */
ws_gpu_pair *ws_gpu_new(int ordinal, const ws_conv_desc pair[2], const float *w1, const float *b1,
                   const float *w2, const float *b2, ws_err *err);

/* c2's add operand: rows x D float32, copied to the device (replacing the previous one,
 * which stays when this fails). ws_gpu_add_rows: the rows of the one there (0: none). */
int ws_gpu_set_add(ws_gpu_pair *g, const float *add, int rows, ws_err *err);
int ws_gpu_add_rows(const ws_gpu_pair *g);

/* Runs the pair on n_win items of n_frames frames each (any n_frames >= 1), writing
 * out [n_win][T2][D]; with_add: + the add set by ws_gpu_set_add, which must have at least
 * T2 rows. Returns 0, or -1 with err set. */
int ws_gpu_stem(ws_gpu_pair *g, const float *x, int n_win, int n_frames, int with_add, float *out,
                ws_err *err);

/* on: every float32 sum is computed whole (the engine's FFMA GEMM cuts the sums of a call
 * too small to fill the GPU, and those of a call's last wave of blocks, into parts, a
 * choice that depends on the number of windows), so
 * that a window gets the same bits in any launch (the batches of gpu_batch.h do so);
 * off (default): the engine's choice for the call. Nothing else the engine picks depends
 * on the number of windows. */
void ws_gpu_set_fixed(ws_gpu_pair *g, int on);

/* One line naming the device (e.g. "NVIDIA H100 80GB HBM3, sm_90"). */
const char *ws_gpu_device_name(const ws_gpu_pair *g);

/* Frees the plans, device memory and events and closes the pair's ws_gpu (its stream and
 * its reference to the context; the kernels' modules stay in the runtime's cache while the
 * device is open). NULL-safe. */
void ws_gpu_free(ws_gpu_pair *g);

/* Writes the modules the pair's two plans load on a device of compute capability 9.0 into
 * dir as .ptx files (ws_conv_dump_ptx of each descriptor); needs no GPU. Returns 0 or -1
 * (the pair refused as ws_gpu_new refuses it, or a file not written). */
int ws_gpu_dump_ptx(const ws_conv_desc pair[2], const char *dir, ws_err *err);

#endif

/* ptx_mel.h - the GPU log-Mel's kernels (gpu_mel.h) as PTX text, and the host tables they
 * read. One module per n_mels with three entries:
 *
 * ws_mel_frames  block b: WS_MEL_FB consecutive frames g0 = b*FB .. of the batch's frame
 *   numbering, WS_MEL_THREADS threads, WS_MEL_FRAMES_SMEM bytes of dynamic shared memory.
 *   1. threads f < FB: frame g0+f's input by binary search over items' frame_off (the last
 *      item with frame_off <= g), its start t*160 - 200 and sample pointer.
 *   2. gather, in float64: y_i = hann[i] * xpad(start + i) (mel.h's reflect of the zero-padded
 *      signal: i mod 2(n_total-1), folded; zero past n), folded for the DFT,
 *        ae[m] = y_2m + y_(400-2m)   be[m] = y_2m - y_(400-2m)    (partner 0 for m = 0, 100)
 *        ao[m] = y_2m+1 + y_399-2m   bo[m] = y_2m+1 - y_399-2m    (m < 100)
 *      stored [m][4][FB] doubles, m < WS_MEL_M (rows 101.. zero).
 *   3. four small GEMMs in float64 over m (K = 102), for k < WS_MEL_K (0..100 used):
 *        E_k = sum ae[m] cos(2 pi k 2m / 400)      O_k = sum ao[m] cos(2 pi k (2m+1) / 400)
 *        Es_k = sum be[m] sin(2 pi k 2m / 400)     Os_k = sum bo[m] sin(2 pi k (2m+1) / 400)
 *      then |X_k|^2 = (E+O)^2 + (Es+Os)^2 and |X_(200-k)|^2 = (E-O)^2 + (Es-Os)^2
 *      (cos and sin of (200-k) n are (-1)^n cos and -(-1)^n sin of k n): 4*102*112 FMAs a
 *      frame instead of 201*400. A warp owns 16 k x 16 frames, a thread 4 k x 2 frames
 *      (32 accumulators); seven warps cover k < 112. The twiddles come from the table
 *      ws_mel_twiddles (global, read through L1), the folded frames from shared memory.
 *   4. power [FB][201] doubles in shared memory; mel M = sum over the band's nonzero bins
 *      (band table: lo, len, off into the packed weights, float64);
 *      L = M > 1e-10 ? log10(M) : -10 with M rounded to float and log10 = lg2.approx * log10(2)
 *      (error ~1e-7); L to scratch [g][n_mels]; its order-preserving integer image
 *      (u ^ 0x80000000 for u >= 0, ~u below) max'ed per frame in shared memory, then per item
 *      into keys[item] with atom.global.max.u32 by thread 0: a max, so the result is the same
 *      whatever the order or the batch.
 *   Parameters (ptx_params.h's WS_PARAMS_MEL_FRAMES): .u64 p_x, p_items; .u32 p_n_items;
 *   .u64 p_total, p_tw, p_hann, p_band, p_wts, p_L, p_keys.
 *
 * ws_mel_write  block b: 32 frames g0 = 32b.. x all bands, 256 threads: floor = max(L of the
 *   item) - 8, out = (max(L, floor) + 4) / 4 (float32, as the CPU), 0 for frames >= content,
 *   into window w = t / win_frames, frame j = t % win_frames of the item's windows; frames
 *   past n_win*win_frames are not written. A transpose through shared memory: loads along
 *   bands, stores along frames.
 *   Parameters (WS_PARAMS_MEL_WRITE): .u64 p_items; .u32 p_n_items; .u64 p_total, p_L,
 *   p_keys, p_out.
 *
 * ws_mel_f16  dst[i] = cvt.rn.f16.f32(src[i]), i < count (u64), a grid-stride loop, 256 threads.
 *   Parameters (WS_PARAMS_MEL_F16): .u64 p_src, p_dst, p_count.
 *
 * ptxas (sm_80, sm_90): ws_mel_frames 128 registers (two blocks a multiprocessor), no spills.
 * H100: 34.6 us a 3000-frame window with 80 bands, 36.0 with 128 (bench/gpu_mel.c); max |err|
 * vs the float64 oracle 2.9e-7.
 * Tested by tests/test_gpu_mel.c (ptxas for sm_80 and sm_90 without spills; a host model of the
 * fold and the tables against the float64 oracle; on a GPU against the CPU and the oracle).
 */
#ifndef WS_CUDA_PTX_MEL_H
#define WS_CUDA_PTX_MEL_H

#include <stddef.h>

#include "common.h"

#define WS_MEL_FB 16        /* frames a block of ws_mel_frames */
#define WS_MEL_THREADS 224  /* its threads: 7 warps */
#define WS_MEL_M 102        /* rows m of the folded frames and the twiddles (101 used) */
#define WS_MEL_K 112        /* columns k of the twiddles (101 used) */
#define WS_MEL_WFRAMES 32   /* frames a block of ws_mel_write */
#define WS_MEL_WTHREADS 256
#define WS_MEL_F16_THREADS 256
#define WS_MEL_ITEM_BYTES 56 /* sizeof(ws_gpu_mel_item) */

/* dynamic shared memory of ws_mel_frames */
#define WS_MEL_FRAMES_SMEM (WS_MEL_M * 4 * WS_MEL_FB * 8 + WS_MEL_FB * 201 * 8 + WS_MEL_FB * 48)

/* tw[(m*4 + c)*WS_MEL_K + k], c = 0 cos(2 pi k 2m/400), 1 cos(.. (2m+1) ..), 2 sin(.. 2m ..),
 * 3 sin(.. (2m+1) ..); zero for k > 100 or n > 200; exact at multiples of pi/2. */
void ws_mel_twiddles(double *tw);
/* periodic Hann, w[i] = 0.5 - 0.5 cos(2 pi i / 400), i < 400 */
void ws_mel_hann(double *w);

/* The module for n_mels (80 or 128) and a compute capability (8.0 or later): malloc'd text,
 * or NULL with err. */
char *ws_mel_emit(int n_mels, int cc_major, int cc_minor, ws_err *err);

#endif

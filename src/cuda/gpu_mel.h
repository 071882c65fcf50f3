/* gpu_mel.h - the log-Mel spectrogram on the GPU, for a batch of inputs at once,
 * as PTX emitted here (ptx_mel.c) and run on a stream the caller owns.
 *
 * The math is mel.h's (openai-whisper's log_mel_spectrogram): STFT n_fft 400, hop 160,
 * periodic Hann, centred with reflect padding of the zero-padded signal, power,
 * the filterbank, log10(max(M, 1e-10)), each input's own floor max(L) - 8 over all the
 * frames it computes, (L + 4) / 4, frames from `content` on written as 0.0.
 * The caller states the geometry of each input (mel.h's rules, filled by the caller
 * from ws_mel_geometry): the GPU code knows nothing of padding modes.
 *
 * Numbers: the DFT, power and mel sums in float64 (an even/odd fold of the 400 samples
 * and a k <-> 200-k fold of the bins: four GEMMs of 102 x 112 a frame, ptx_mel.h), the log
 * as lg2.approx of M rounded to float32 (~1e-7); within 1e-4 max abs of the float64
 * oracle (docs/spec.md). Every frame is computed alone and the floor is a max, so an
 * input gives the same bits whatever else is in its batch and wherever it sits.
 * Kernels (ptx_mel.h): ws_mel_frames (16 frames a block: gather, DFT, power, mel, log10
 * to scratch, each item's max by an atomic max of its order-preserving integer image),
 * ws_mel_write (floor, scale, transpose into the windows), ws_mel_f16.
 *
 * Device buffers (all the caller's):
 *   x       the batch's 16 kHz samples, float32, input i at x + items[i].x_off
 *   items   ws_gpu_mel_item[n_items] in device memory (uploaded by the caller)
 *   scratch ws_gpu_mel_scratch_bytes(...) bytes: log10 mel [total_frames][n_mels] float32,
 *           then at a 256-byte boundary one u32 max image per item (set by the enqueue)
 *   out     input i's windows at out + items[i].out_off floats:
 *           [n_win][n_mels][win_frames] float32, channel-major (what the stem reads)
 */
#ifndef WS_CUDA_GPU_MEL_H
#define WS_CUDA_GPU_MEL_H

#include <stdint.h>

#include "common.h"
#include "gpu_runtime.h"

/* One input of a batch; the layout is the kernels' parameter table (8-byte fields). */
typedef struct {
    uint64_t x_off;      /* its first sample in x */
    uint64_t n;          /* real samples (the rest of n_total is zeros) */
    uint64_t n_total;    /* length of the zero-padded signal the STFT reflects */
    uint64_t frame_off;  /* its first frame in the batch's frame numbering (sum of earlier
                            n_frames) */
    uint64_t out_off;    /* its first float in out */
    uint32_t n_frames;   /* frames computed: n_total / 160 (the max is over all of them) */
    uint32_t content;    /* frames written to windows; frames past it are 0.0 */
    uint32_t n_win;      /* windows written */
    uint32_t win_frames; /* frames per window */
} ws_gpu_mel_item;

typedef struct ws_gpu_mel ws_gpu_mel;

/* Emits the kernels for n_mels (80 or 128) bands for g's compute capability and loads them
 * on g's device (the runtime's module cache: once per process); filters [n_mels][201]
 * float64 (ws_mel_filters) are uploaded. NULL with err on failure. */
ws_gpu_mel *ws_gpu_mel_new(ws_gpu *g, int n_mels, const double *filters, ws_err *err);
void ws_gpu_mel_free(ws_gpu_mel *m); /* NULL-safe; before g is closed */

/* Scratch bytes for a batch of n_items inputs with total_frames frames in all. */
size_t ws_gpu_mel_scratch_bytes(int n_mels, uint64_t total_frames, int n_items);

/* Enqueues the log-Mel of the batch on stream s: a memset of the max images and two
 * kernels. total_frames = sum of items' n_frames; items sorted by frame_off (as the sum
 * makes them), each with n_frames >= 1. 0 (nothing for no items or no frames), or -1 with
 * err (a launch failed). */
int ws_gpu_mel_enqueue(ws_gpu_mel *m, wscu_stream s, wscu_devptr x, wscu_devptr items,
                       int n_items, uint64_t total_frames, wscu_devptr scratch, wscu_devptr out,
                       ws_err *err);

/* Enqueues dst[i] = (half)src[i], i < count, round to nearest even (cvt.rn.f16.f32),
 * on stream s: the --out-dtype f16 conversion before a download. */
int ws_gpu_mel_to_f16(ws_gpu_mel *m, wscu_stream s, wscu_devptr src, wscu_devptr dst,
                      uint64_t count, ws_err *err);

/* Writes the module's PTX for n_mels and sm_90 into dir (needs no GPU). 0 or -1. */
int ws_gpu_mel_dump_ptx(int n_mels, const char *dir, ws_err *err);

#endif

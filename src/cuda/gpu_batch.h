/* gpu_batch.h - many inputs per launch on the GPU, overlapped with the host: the
 * command's GPU path (src/cli/run.c drives it).
 *
 * A batcher owns S slots. A slot is one batch in flight: its own stream, device buffers
 * and pinned host buffers for the results. The caller fills a slot with inputs
 * (ws_gpu_batch_add: whole inputs, up to the slot's capacity in windows, samples and
 * frames, all of one window length), submits it (ws_gpu_batch_submit: uploads, the
 * log-Mel on the GPU or not, the stem or not, the float16 conversion or not, the
 * download; returns at once) and later waits for it (ws_gpu_batch_wait). The results
 * then lie in the slot's pinned memory (ws_gpu_batch_output) until the caller reuses the
 * slot. With two or more slots the upload of one batch, the kernels of another and the
 * download of a third overlap (each slot is a stream; the copy engines and the SMs
 * work at once).
 *
 * Inputs come as 16 kHz samples (the log-Mel on the GPU: gpu_mel.h) or as log-Mel
 * windows (the log-Mel on the CPU). Either can be staged beforehand, by any thread, in
 * pinned slabs of the batcher (ws_gpu_stage): it is then uploaded from there by DMA;
 * otherwise the submitting thread copies it into the slot's pinned buffer first.
 *
 * Numbers: every window's bits are independent of the batch it is in (the log-Mel
 * frames are computed alone and the floor is a max; the stem's plans sum every output
 * whole, in an order the descriptor alone sets: ws_gpu_enqueue_fixed), so a run gives the
 * same bytes however its inputs were grouped.
 * Memory: pinned host memory stays under opts.pinned_bytes (slots' result and input
 * buffers, sized to the largest batch so far) plus opts.stage_bytes (slabs). A device
 * allocation that fails shrinks the capacity (ws_gpu_batch_submit returns
 * WS_BATCH_SHRUNK and the caller refills the slot with fewer inputs).
 */
#ifndef WS_CUDA_GPU_BATCH_H
#define WS_CUDA_GPU_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "cuda_abi.h"
#include "gpu.h"

typedef struct {
    int mel_on_gpu;        /* inputs are samples: the log-Mel on the GPU (needs filters) */
    int stem;              /* run the stem (needs the pair); else the result is the log-Mel */
    int add_pos;           /* stem: + the pair's add table (ws_gpu_set_add, >= 1500 rows) */
    int out_f16;           /* results as float16 (round to nearest even) */
    int n_mels;            /* 80 or 128 */
    const double *filters; /* [n_mels][201], with mel_on_gpu */
    int max_windows;       /* windows a slot holds at most (>= 1) */
    int slots;             /* S >= 1 */
    size_t stage_bytes;    /* pinned slabs for ws_gpu_stage, at most */
} ws_gpu_batch_opts;

/* One input. With mel_on_gpu: x/n and the geometry (mel.h's ws_mel_geometry); else mel. */
typedef struct {
    const float *x;          /* samples, or NULL when staged */
    const float *mel;        /* [n_win][n_mels][win_frames], or NULL when staged */
    void *const *slabs;      /* staged copy (ws_gpu_stage), or NULL */
    uint64_t n, n_total, n_frames, content;
    int n_win, win_frames;
} ws_gpu_input;

typedef struct ws_gpu_batcher ws_gpu_batcher;

/* With a pair (the stem's GPU backend, whose context it shares; NULL with stem 0: the
 * batcher opens GPU number ordinal itself). NULL + err on failure. */
ws_gpu_batcher *ws_gpu_batcher_new(ws_gpu_pair *g, int ordinal, const ws_gpu_batch_opts *o,
                                   ws_err *err);
void ws_gpu_batcher_free(ws_gpu_batcher *b);
const char *ws_gpu_batcher_device(const ws_gpu_batcher *b);

/* Whether in fits an empty slot at all; one that does not goes alone (ws_gpu_mel_alone). */
int ws_gpu_batch_fits(const ws_gpu_batcher *b, const ws_gpu_input *in);

/* Staging: pinned slabs holding `bytes`, from any thread. NULL when the slabs are all
 * taken or pinning fails (the input is then copied at submission). *n_slabs: how many;
 * ws_gpu_stage_copy copies into them; ws_gpu_unstage gives them back. Thread-safe. */
void **ws_gpu_stage(ws_gpu_batcher *b, size_t bytes, int *n_slabs);
void ws_gpu_stage_copy(const ws_gpu_batcher *b, void *const *slabs, const void *src, size_t bytes);
void ws_gpu_unstage(ws_gpu_batcher *b, void **slabs, int n_slabs);
/* The staged bytes back out into dst. */
void ws_gpu_stage_read(const ws_gpu_batcher *b, void *const *slabs, void *dst, size_t bytes);

int ws_gpu_batch_slots(const ws_gpu_batcher *b);
/* Windows a slot holds at most now (smaller after WS_BATCH_SHRUNK). */
int ws_gpu_batch_max_windows(const ws_gpu_batcher *b);
/* Empties slot s (no batch of it may be in flight). */
void ws_gpu_batch_clear(ws_gpu_batcher *b, int s);
/* Adds in to slot s: 1, or 0 when it does not fit beside what is there (full, or another
 * window length). The input's memory must stay until the slot's batch completes. */
int ws_gpu_batch_add(ws_gpu_batcher *b, int s, const ws_gpu_input *in);
int ws_gpu_batch_count(const ws_gpu_batcher *b, int s, int *windows);

#define WS_BATCH_SHRUNK 1
/* Enqueues slot s's batch; 0, WS_BATCH_SHRUNK (out of device memory: the capacity is
 * smaller now; the slot is emptied, nothing ran), or -1 with err. label names the batch
 * in profiles. */
int ws_gpu_batch_submit(ws_gpu_batcher *b, int s, const char *label, ws_err *err);
/* The same, on `stream` (NULL: the slot's own), and with dst input i's result copied into
 * the device buffer dst[i], or with host into the host memory host[i] (pageable: the call
 * then returns once the results are there), instead of the slot's pinned buffer. The
 * slot's earlier batch must have completed (ws_gpu_batch_wait) before it is filled again. */
int ws_gpu_batch_submit_to(ws_gpu_batcher *b, int s, const char *label, wscu_stream stream,
                           const wscu_devptr *dst, void *const *host, ws_err *err);
/* 1 when slot s's batch has completed, 0 not yet, -1 with err. */
int ws_gpu_batch_done(ws_gpu_batcher *b, int s, ws_err *err);
/* Waits (yielding the CPU) for slot s's batch; 0 or -1 with err. */
int ws_gpu_batch_wait(ws_gpu_batcher *b, int s, ws_err *err);
/* Input i's result in slot s, after the wait: stem [n_win][T2][d], else the log-Mel
 * [n_win][n_mels][win_frames], float32 or float16. *bytes: its size. */
const void *ws_gpu_batch_output(const ws_gpu_batcher *b, int s, int i, size_t *bytes);
/* Where the submissions' time went, summed: allocating (device and pinned buffers), copying
 * inputs that were not staged, enqueueing (copies and launches), in ms. */
void ws_gpu_batch_times(const ws_gpu_batcher *b, double *alloc_ms, double *copy_ms,
                        double *enqueue_ms);
/* Milliseconds of GPU time of slot s's last batch (upload to download). */
double ws_gpu_batch_ms(const ws_gpu_batcher *b, int s);

/* The log-Mel of one input that fits no batch, on the GPU, synchronously, into mel
 * [n_win][n_mels][win_frames] float32 (host). 0 or -1 with err. Its device buffers are
 * kept for the next such call (one at a time: the caller's lock). */
int ws_gpu_mel_alone(ws_gpu_batcher *b, const ws_gpu_input *in, float *mel, ws_err *err);

/* The stem's result of one input of any length (samples: mel_on_gpu), its log-Mel whole on
 * the GPU, then the stem a slot's windows at a time on a lane of its own, into host (then
 * synchronously) or, with host NULL, into the device buffer dev, on `stream` (NULL: the
 * batcher's own). One call at a time; a call waits for the last one's work. 0 or -1. */
int ws_gpu_embed_alone(ws_gpu_batcher *b, const ws_gpu_input *in, wscu_stream stream, float *host,
                       wscu_devptr dev, ws_err *err);

/* bytes of host memory src (any: the driver has them when the call returns) to the device
 * at dst, on stream (NULL: the batcher's own, and then synchronously). 0 or -1 with err. */
int ws_gpu_copy_up(ws_gpu_batcher *b, wscu_stream stream, wscu_devptr dst, const void *src,
                   size_t bytes, ws_err *err);

#endif

/* kernels.h - the PTX kernels of the GPU stem, emitted per shape and
 * precision. Every kernel is a standalone PTX module (one .entry).
 *
 * The stem on the GPU (n_win windows, T = n_frames, C = n_mels, D = d):
 *   ws_mel_t   mel [n_win][C][T] f32  ->  xt [n_win][T][C] elem
 *              (elem: f32 rounded to tf32 (cvt.rna); bf16; f16). fp32 has
 *              no transpose: its conv1 reads the channel-major mel directly.
 *   ws_conv1   xt -> h1 [n_win][T][D] elem      gelu(conv1), stride 1
 *   ws_conv2   h1 -> out [n_win][T2][D] f32     gelu(conv2) (+ pos), stride 2
 * Both convs are one kernel emitter: an implicit GEMM, time-major,
 *   Y[t][o] = act(b[o] + sum_{k<3} sum_{i<Cin} X[s*t + k - 1][i] * W[o][i][k])
 *   A[t][k*Cin + i] = X[s*t + k - 1][i]  (zero outside [0, T_in): padding 1)
 *   B[k*Cin + i][o] = W[o][i][k]         packed on the host (ws_pack_weights)
 * Grid: x = D / BN tiles of outputs, y = ceil(T_out / BM) tiles of time,
 * z = windows. Precision fp32: FFMA with shared-memory tiles and register
 * blocking (kernels_ffma.c); when the tiles would leave multiprocessors idle
 * (few windows) K is split into parts (grid z = windows x parts) whose sums
 * ws_splitk_finish adds up in order before the bias, GELU and pos;
 * tf32/bf16/fp16: mma.sync with f32 accumulation (kernels_mma.c).
 * Parameters: ptx_params.h's tables WS_PARAMS_STEM_MEL_T, _CONV_FFMA, _CONV_MMA, _FINISH and
 * _GELU, which the emitters declare and load from and gpu_stem.c fills its launches by.
 * Tested by tests/test_ptx.c (ptxas, no spills) and
 * tests/test_gpu.c (against the float64 oracle).
 */
#ifndef WS_CUDA_KERNELS_H
#define WS_CUDA_KERNELS_H

#include "common.h"
#include "precision.h"
#include "ptx_emit.h"
#include "ws_conv.h"

/* Kernel slots, in the order ws_gpu_lower returns them. Each conv comes in
 * a large tile (many windows) and a small tile (few windows, more blocks). */
enum {
    WS_K_MEL_T = 0, WS_K_CONV1_L, WS_K_CONV1_S, WS_K_CONV2_L, WS_K_CONV2_S, WS_K_FINISH, WS_K_GELU,
    WS_K_COUNT
};

typedef struct {
    char name[48];   /* entry name, also the file name in --dump-ptx */
    char *ptx;       /* standalone module text (malloc'd) */
    int threads;     /* block size (x) */
    int smem;        /* dynamic shared memory bytes (0: static only) */
    int bm, bn;      /* output tile: time rows x channels (convs only) */
    int bk;          /* K depth of a tile (FFMA convs; split-K granularity) */
} ws_kernel_src;

/* What a conv kernel computes. */
typedef struct {
    int cin, cout, stride;     /* kernel 3, padding 1 */
    ws_precision prec;
    int last;                  /* conv2: f32 output, + pos when pos != 0 */
    int small;                 /* small-tile variant */
    int cc_major;              /* target compute capability (major) */
    int chan_major;            /* input x [n_win][cin][T_in] (the log-Mel itself), not
                                  time-major; fp32 conv1 only: no transpose kernel */
} ws_conv_spec;

/* lower.c: the pair of descriptors the GPU lowers (see lower.c: c1 -> c2, K 3, pad 1,
 * GELU, Whisper's stem) checked, with its precision; 0 or -1 with the field named. */
int ws_gpu_check_pair(const ws_conv_desc pair[2], ws_precision *prec, ws_err *err);

/* Emits all WS_K_COUNT kernels for the pair and a compute capability.
 * *out is a malloc'd array of WS_K_COUNT entries; free with ws_gpu_kernels_free. */
int ws_gpu_lower(const ws_conv_desc pair[2], int cc_major, int cc_minor, ws_kernel_src **out,
                 ws_err *err);
void ws_gpu_kernels_free(ws_kernel_src *k);

/* The precision of a math (0), and the element type the intermediate is stored in. */
int ws_gpu_math_precision(ws_math m, ws_precision *p);
ws_dtype ws_gpu_elem_type(ws_precision p);

/* Element size in bytes of the activations/weights a precision computes with. */
int ws_prec_elem_bytes(ws_precision p);

/* Packs w [cout][cin][3] for the conv kernels of precision p into dst:
 *   fp32:            B[k*cin + i][o] f32           (K-major rows, FFMA tiles)
 *   tf32/bf16/fp16:  Bt[o][k*cin + i] elem         (o-major rows for ldmatrix)
 * tf32 values are rounded to nearest, ties away (cvt.rna). dst holds
 * 3*cin*cout elements of ws_prec_elem_bytes(p) bytes. */
void ws_pack_weights(const float *w, int cin, int cout, ws_precision p, void *dst);

/* Per-kind emitters (kernels_ffma.c, kernels_mma.c, kernels_misc.c). Each
 * appends one .entry to mod and fills name/threads/smem/bm/bn. Return 0 or -1
 * with err when the shape is unsupported. */
int ws_emit_conv_ffma(ptx_buf *mod, const ws_conv_spec *s, ws_kernel_src *info, ws_err *err);
int ws_emit_conv_mma(ptx_buf *mod, const ws_conv_spec *s, ws_kernel_src *info, ws_err *err);
void ws_emit_mel_t(ptx_buf *mod, int cin, ws_precision p, ws_kernel_src *info);
void ws_emit_gelu_grid(ptx_buf *mod, ws_kernel_src *info);
void ws_emit_splitk_finish(ptx_buf *mod, int n_out, ws_kernel_src *info);

#endif

/* test_gpu_conv.c - the conv engine's GPU backend (include/ws_conv.h, src/cuda/gpu_conv.c,
 * src/cuda/ptx/ptx_direct.c, ptx_dw.c, ptx_gemm.c).
 *
 * Three kernel families, each with its tables here: the direct kernels (every descriptor;
 * the tables `cases` and `bcases` below), the depthwise kernels (`dcases`: forward and, with
 * pre and add cleared, backward; each call must take them (ws_gpu_conv_kernel), give the
 * direct kernels' forward values and dx, repeat its bits, and match the CPU engine; rows
 * whose T or C the vectors cannot take must go direct) and the dense forward GEMM
 * (`gcases_gemm`: FFMA, and mma.sync for TF32 / BF16 / F16 math within that type's rounding; a C
 * model of the FFMA kernel's tile and thread mapping runs without a GPU).
 *
 * Needs no GPU: every FWD descriptor of the table below (the FWD rows of
 * tests/test_engine.c's table, plus a K 31 row for the looped taps and a grouped NLC row)
 * and every BWD descriptor of the second table (the BWD rows of tests/test_engine.c's
 * table, plus depthwise causal NLC SILU, dense NCL GELU with bias, grouped, stride 2
 * dilation 2, K 1, K 31 and f16 / bf16 x and dy rows) emits PTX that ptxas (WS_PTXAS)
 * assembles for sm_90 and sm_80 with no stack and no spills in any entry; ws_conv_dump_ptx
 * writes the file (BWD: one module, entries gz, dx, dw, db); bad descriptors are refused by
 * name; the gz kernel's GELU derivative, as a C model, is within its stated bound.
 * On a GPU (skipped, saying so, without a driver or device): every row runs on the GPU
 * against the CPU engine (ws_conv_new/run) on the same inputs, with outputs NaN-poisoned
 * before each run so an unwritten element shows, and twice for the same bits. BWD rows also
 * run dx only, dw only and db only: each gives the full run's bits and leaves the other two
 * buffers as they were.
 *
 * Tolerances, GPU against CPU:
 * - float32 y: rel L2 <= 1e-5 and max |err| <= 1e-4 of the largest |value|: both sum at
 *   most Cg*K = 512 products in float32 (the GPU with fma, the CPU as its paths do), and
 *   GELU / SILU differ by their approximations (gelu_ptx.h: 5e-7 + 2.4e-7 |x|; ex2.approx
 *   ~2 ulp in SILU).
 * - f16 / bf16 y: both sides round a float32 that agrees to ~1e-6 relative, so the stored
 *   values differ by at most 1 ulp of the type at that magnitude; near zero, where the ulp
 *   is smaller than the float32 difference, 1e-4 of the largest |value| is allowed too.
 * - BWD: dx (f32), dw and db each rel L2 <= 1e-5 and max |err| <= 1e-4 of the largest
 *   |value|: gz = dy * act'(z) differs by the act' approximations only (z is summed in the
 *   CPU's order and roundings, so RELU's mask agrees), and the GPU sums dw / db over
 *   N*T_out <= 1100 terms in one float32 accumulator where the CPU uses lanes and double
 *   (~1e-6 relative). f16 / bf16 dx as f16 / bf16 y above.
 * Set WS_TEST_VERBOSE=1 to print ptxas's register counts and the errors seen.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ws_conv.h>

#include "common.h"
#include "conv/engine.h"
#include "cuda/gpu_conv_internal.h"
#include "cuda/gpu_runtime.h"
#include "cuda/ptx/ptx_direct.h"
#include "cuda/ptx/ptx_dw.h"
#include "cuda/ptx/ptx_gemm.h"
#include "cuda/ptx/ptx_hbwd.h"
#include "cuda/ptx/ptx_hcol.h"
#include "cuda/ptx/ptx_hgemm.h"
#include "cuda/ptx/ptx_wprep.h"
#include "helpers.h"

typedef struct {
    const char *name;
    int n, c_in, c_out, groups, k, stride, dilation, pad_l, pad_r, t_in;
    ws_layout xl, yl;
    ws_dtype xt, wt, yt;
    ws_act pre, act;
    int bias;
    int add; /* ADD_* */
} gcase;

enum { ADD_NONE, ADD_BROADCAST, ADD_PER_ITEM, ADD_INPUT };

#define F32 WS_F32, WS_F32, WS_F32
static const gcase cases[] = {
    {"whisper_conv1", 2, 8, 12, 1, 3, 1, 1, 1, 1, 30, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"whisper_conv2_pos", 2, 12, 12, 1, 3, 2, 1, 1, 1, 30, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, ADD_BROADCAST},
    {"wav2vec2_k10_s5", 3, 1, 16, 1, 10, 5, 1, 0, 0, 203, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0},
    {"wav2vec2_k3_s2", 2, 16, 16, 1, 3, 2, 1, 0, 0, 41, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0},
    {"dac_k16_s8_p4", 2, 8, 16, 1, 16, 8, 1, 4, 4, 96, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0},
    {"mamba_nlc_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"mamba_ncl_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0},
    {"mamba_nlc_none", 3, 20, 20, 20, 4, 1, 1, 3, 0, 33, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 0, 0},
    {"mamba_k2_nlc_silu", 1, 9, 9, 9, 2, 1, 1, 1, 0, 17, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"vqvae_d3_relu", 2, 16, 16, 1, 3, 1, 3, 3, 3, 40, WS_NCL, WS_NCL, F32, WS_ACT_RELU, WS_ACT_RELU, 1, 0},
    {"vqvae_d9_relu", 2, 16, 16, 1, 3, 1, 9, 9, 9, 40, WS_NCL, WS_NCL, F32, WS_ACT_RELU, WS_ACT_RELU, 1, 0},
    {"vqvae_d9_relu_add", 2, 16, 16, 1, 3, 1, 9, 9, 9, 40, WS_NCL, WS_NCL, F32, WS_ACT_RELU, WS_ACT_RELU, 1, ADD_PER_ITEM},
    {"vqvae_k1_add_input", 2, 16, 16, 1, 1, 1, 1, 0, 0, 40, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, ADD_INPUT},
    {"vqvae_k1_add_input_nlc", 3, 10, 10, 1, 1, 1, 1, 0, 0, 21, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 1, ADD_INPUT},
    {"t_out_1", 2, 5, 3, 1, 5, 1, 1, 0, 0, 5, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"t_out_1_stride", 1, 4, 6, 2, 3, 4, 2, 1, 0, 4, WS_NLC, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0},
    {"k1_dense", 2, 7, 5, 1, 1, 1, 1, 0, 0, 19, WS_NCL, WS_NLC, F32, 0, WS_ACT_SILU, 1, ADD_PER_ITEM},
    {"k16_same_length", 2, 5, 6, 1, 16, 1, 1, 7, 8, 29, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"k31_looped_taps", 2, 3, 4, 1, 31, 2, 1, 15, 15, 70, WS_NLC, WS_NCL, F32, 0, WS_ACT_SILU, 1, ADD_PER_ITEM},
    {"odd_channels_nlc_to_ncl", 2, 7, 9, 1, 3, 1, 1, 1, 1, 23, WS_NLC, WS_NCL, F32, 0, WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"stride_5_over_k2", 2, 6, 4, 1, 2, 5, 1, 0, 0, 31, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0},
    {"groups2", 2, 8, 6, 2, 3, 1, 1, 1, 1, 25, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"groups4_s2_d2_asym", 2, 12, 8, 4, 5, 2, 2, 2, 3, 27, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"groups4_out_mult2", 2, 4, 8, 4, 3, 1, 1, 1, 1, 15, WS_NCL, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_NONE, 1, 0},
    {"groups2_c32_sgemm_blocks", 1, 32, 48, 2, 3, 1, 2, 2, 1, 600, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"groups3_nlc_pre_gelu", 2, 9, 6, 3, 3, 1, 1, 2, 0, 20, WS_NLC, WS_NLC, F32, WS_ACT_GELU, WS_ACT_NONE, 1, ADD_BROADCAST},
    {"asym_pad_0_4", 2, 6, 5, 1, 4, 3, 1, 0, 4, 26, WS_NLC, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"asym_pad_5_1", 1, 3, 4, 1, 3, 2, 2, 5, 1, 14, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 0, 0},
    {"dilation_larger_than_input", 1, 4, 4, 1, 3, 1, 7, 7, 7, 6, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0},
    {"long_t_depthwise_nlc", 1, 8, 8, 8, 4, 1, 1, 3, 0, 1100, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"long_t_dense_ncl", 1, 4, 8, 1, 3, 1, 1, 1, 1, 1100, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"mamba_c520_k8_nlc", 1, 520, 520, 520, 8, 1, 1, 7, 0, 130, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"dw_nlc_s2_d2_pre_gelu_add_bf16", 2, 33, 33, 33, 3, 2, 2, 4, 1, 150, WS_NLC, WS_NLC, WS_BF16, WS_F32,
     WS_BF16, WS_ACT_GELU, WS_ACT_RELU, 1, ADD_PER_ITEM},
    {"dw_nlc_causal_pre_silu_f16", 2, 40, 40, 40, 4, 1, 1, 3, 0, 90, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16,
     WS_ACT_SILU, WS_ACT_GELU, 1, ADD_BROADCAST},
    {"dw_nlc_stride3_f32", 3, 17, 17, 17, 5, 3, 1, 2, 2, 200, WS_NLC, WS_NLC, F32, WS_ACT_RELU, WS_ACT_NONE, 0,
     ADD_PER_ITEM},
    {"f16_whisper_conv2_pos", 2, 12, 12, 1, 3, 2, 1, 1, 1, 30, WS_NCL, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_GELU, 1, ADD_BROADCAST},
    {"bf16_whisper_conv2_pos", 2, 12, 12, 1, 3, 2, 1, 1, 1, 30, WS_NCL, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     0, WS_ACT_GELU, 1, ADD_BROADCAST},
    {"f16_mamba_nlc_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_SILU, 1, 0},
    {"bf16_mamba_ncl_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_SILU, 1, 0},
    {"mixed_bf16_x_f32_w_f16_y", 2, 8, 6, 2, 3, 2, 1, 1, 2, 21, WS_NLC, WS_NCL, WS_BF16, WS_F32, WS_F16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"f16_vqvae_k1_add_input", 2, 16, 16, 1, 1, 1, 1, 0, 0, 40, WS_NCL, WS_NCL, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_NONE, 1, ADD_INPUT},
    {"bf16_vqvae_d3_relu", 2, 16, 16, 1, 3, 1, 3, 3, 3, 40, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     WS_ACT_RELU, WS_ACT_RELU, 1, 0},
};

/* BWD: the BWD rows of tests/test_engine.c's table (pre NONE, no add), then more */
static const gcase bcases[] = {
    {"whisper_conv1", 2, 8, 12, 1, 3, 1, 1, 1, 1, 30, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"wav2vec2_k10_s5", 3, 1, 16, 1, 10, 5, 1, 0, 0, 203, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0},
    {"wav2vec2_k3_s2", 2, 16, 16, 1, 3, 2, 1, 0, 0, 41, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0},
    {"dac_k16_s8_p4", 2, 8, 16, 1, 16, 8, 1, 4, 4, 96, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0},
    {"mamba_nlc_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"mamba_ncl_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0},
    {"mamba_nlc_none", 3, 20, 20, 20, 4, 1, 1, 3, 0, 33, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 0, 0},
    {"mamba_k2_nlc_silu", 1, 9, 9, 9, 2, 1, 1, 1, 0, 17, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"vqvae_d9_relu_bwd", 2, 16, 16, 1, 3, 1, 9, 9, 9, 40, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0},
    {"t_out_1", 2, 5, 3, 1, 5, 1, 1, 0, 0, 5, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"t_out_1_stride", 1, 4, 6, 2, 3, 4, 2, 1, 0, 4, WS_NLC, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0},
    {"k1_bwd", 2, 7, 5, 1, 1, 1, 1, 0, 0, 19, WS_NLC, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0},
    {"k16_same_length", 2, 5, 6, 1, 16, 1, 1, 7, 8, 29, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"odd_channels_bwd", 3, 7, 9, 1, 3, 1, 1, 1, 1, 23, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0},
    {"stride_5_over_k2", 2, 6, 4, 1, 2, 5, 1, 0, 0, 31, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0},
    {"groups2", 2, 8, 6, 2, 3, 1, 1, 1, 1, 25, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"groups4_s2_d2_asym", 2, 12, 8, 4, 5, 2, 2, 2, 3, 27, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"groups4_out_mult2", 2, 4, 8, 4, 3, 1, 1, 1, 1, 15, WS_NCL, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_NONE, 1, 0},
    {"asym_pad_0_4", 2, 6, 5, 1, 4, 3, 1, 0, 4, 26, WS_NLC, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"asym_pad_5_1", 1, 3, 4, 1, 3, 2, 2, 5, 1, 14, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 0, 0},
    {"dilation_larger_than_input", 1, 4, 4, 1, 3, 1, 7, 7, 7, 6, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0},
    {"long_t_depthwise_nlc", 1, 8, 8, 8, 4, 1, 1, 3, 0, 1100, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"long_t_dense_ncl", 1, 4, 8, 1, 3, 1, 1, 1, 1, 1100, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"mamba_c520_k8_nlc", 1, 520, 520, 520, 8, 1, 1, 7, 0, 130, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"f16_mamba_nlc_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_SILU, 1, 0},
    {"bf16_mamba_ncl_silu", 2, 24, 24, 24, 4, 1, 1, 3, 0, 37, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_SILU, 1, 0},
    {"mixed_f32_x_bf16_w_f32_y_bwd", 2, 8, 6, 2, 3, 2, 1, 1, 2, 21, WS_NCL, WS_NLC, WS_F32, WS_BF16, WS_F32,
     0, WS_ACT_GELU, 1, 0},
    /* more */
    {"dw_causal_nlc_silu_c64_k4", 3, 64, 64, 64, 4, 1, 1, 3, 0, 300, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"dense_ncl_gelu_bias", 2, 16, 24, 1, 3, 1, 1, 1, 1, 64, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"grouped3_nlc_relu", 2, 9, 12, 3, 3, 1, 1, 2, 0, 33, WS_NLC, WS_NLC, F32, 0, WS_ACT_RELU, 1, 0},
    {"s2_d2_dense_gelu", 2, 6, 10, 1, 4, 2, 2, 3, 3, 45, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0},
    {"s3_d2_dw_ncl_silu", 2, 12, 12, 12, 5, 3, 2, 4, 2, 61, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 0, 0},
    {"k1_ncl_none", 2, 11, 7, 1, 1, 1, 1, 0, 0, 50, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0},
    {"k31_looped_taps_bwd", 2, 3, 4, 1, 31, 2, 1, 15, 15, 70, WS_NLC, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"f16_dense_ncl_gelu", 2, 12, 12, 1, 3, 1, 1, 1, 1, 40, WS_NCL, WS_NCL, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_GELU, 1, 0},
    {"bf16_dw_causal_nlc_silu", 2, 40, 40, 40, 4, 1, 1, 3, 0, 90, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     0, WS_ACT_SILU, 1, 0},
    {"f16_x_bf16_dy_grouped_s2", 2, 8, 6, 2, 3, 2, 2, 2, 1, 29, WS_NLC, WS_NCL, WS_F16, WS_F32, WS_BF16, 0,
     WS_ACT_RELU, 1, 0},
    {"bf16_k1_nlc_none", 3, 10, 10, 1, 1, 1, 1, 0, 0, 21, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 0, 0},
};
/* the depthwise kernels (ptx_dw.h): T_in and T_out multiples of 8 so that NCL calls fit;
 * causal, "same", anti-causal and longer / shorter outputs; H = D*(K-1) up to 14 */
static const gcase dcases[] = {
    {"dw_nlc_causal_silu_f32", 2, 64, 64, 64, 4, 1, 1, 3, 0, 200, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"dw_nlc_causal_silu_bf16", 2, 64, 64, 64, 4, 1, 1, 3, 0, 136, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     0, WS_ACT_SILU, 1, 0},
    {"dw_nlc_causal_none_f16", 3, 40, 40, 40, 4, 1, 1, 3, 0, 72, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_NONE, 0, 0},
    {"dw_nlc_k8_d2_gelu_f32", 1, 32, 32, 32, 8, 1, 2, 14, 0, 130, WS_NLC, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0},
    {"dw_nlc_same_k3_pre_relu_add_bf16", 2, 48, 48, 48, 3, 1, 1, 1, 1, 64, WS_NLC, WS_NLC, WS_BF16, WS_BF16,
     WS_BF16, WS_ACT_RELU, WS_ACT_RELU, 1, ADD_PER_ITEM},
    {"dw_nlc_k2_add_broadcast_f32", 2, 12, 12, 12, 2, 1, 1, 1, 0, 50, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 1,
     ADD_BROADCAST},
    {"dw_nlc_longer_out_k3_p5", 2, 16, 16, 16, 3, 1, 1, 5, 5, 40, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"dw_nlc_shorter_out_k5_p0", 2, 16, 16, 16, 5, 1, 1, 0, 0, 44, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_GELU, 1, 0},
    {"dw_nlc_long_t_f32", 1, 8, 8, 8, 4, 1, 1, 3, 0, 2000, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"dw_nlc_x_bf16_y_f32", 2, 16, 16, 16, 4, 1, 1, 3, 0, 64, WS_NLC, WS_NLC, WS_BF16, WS_F32, WS_F32, 0,
     WS_ACT_SILU, 1, 0},
    {"dw_ncl_causal_silu_f32", 2, 24, 24, 24, 4, 1, 1, 3, 0, 200, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0},
    {"dw_ncl_causal_silu_bf16", 2, 24, 24, 24, 4, 1, 1, 3, 0, 256, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16,
     0, WS_ACT_SILU, 1, 0},
    {"dw_ncl_k5_d3_same_gelu_add_f16", 2, 10, 10, 10, 5, 1, 3, 6, 6, 64, WS_NCL, WS_NCL, WS_F16, WS_F16,
     WS_F16, 0, WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"dw_ncl_k1_f32", 2, 8, 8, 8, 1, 1, 1, 0, 0, 40, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0},
    {"dw_ncl_k1_pad4_f32", 2, 8, 8, 8, 1, 1, 1, 4, 4, 40, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0},
    {"dw_ncl_anticausal_relu_bf16", 1, 16, 16, 16, 4, 1, 1, 0, 3, 96, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_RELU, 1, 0},
    {"dw_ncl_shorter_out_k5_p0_f32", 2, 6, 6, 6, 5, 1, 1, 0, 0, 64, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0},
    {"dw_ncl_long_t_f32", 2, 4, 4, 4, 4, 1, 1, 3, 0, 2048, WS_NCL, WS_NCL, F32, 0, WS_ACT_SILU, 1, 0},
    {"dw_nlc_mamba_c256_bf16", 2, 256, 256, 256, 4, 1, 1, 3, 0, 1024, WS_NLC, WS_NLC, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_SILU, 1, 0},
    {"dw_ncl_mamba_c256_bf16", 2, 256, 256, 256, 4, 1, 1, 3, 0, 1024, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_SILU, 1, 0},
};
#undef F32
enum { N_CASES = sizeof cases / sizeof cases[0], N_BCASES = sizeof bcases / sizeof bcases[0],
       N_DCASES = sizeof dcases / sizeof dcases[0] };

static ws_conv_desc desc_of(const gcase *c)
{
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = c->c_in, .c_out = c->c_out, .groups = c->groups,
                      .k = c->k, .stride = c->stride, .dilation = c->dilation, .pad_l = c->pad_l,
                      .pad_r = c->pad_r, .x_layout = c->xl, .y_layout = c->yl, .x_type = c->xt,
                      .w_type = c->wt, .y_type = c->yt, .math = WS_MATH_F32, .pre = c->pre,
                      .act = c->act};
    return d;
}

static ws_conv_desc bdesc_of(const gcase *c)
{
    ws_conv_desc d = desc_of(c);
    d.op = WS_CONV_BWD;
    return d;
}

static int verbose(void)
{
    const char *v = getenv("WS_TEST_VERBOSE");
    return v && *v && strcmp(v, "0");
}

/* --- no GPU: PTX through ptxas, the dump, refusals ------------------------------ */

/* ptxas -v on path for sm_<cc>: asserts success and, for every entry of the module (at
 * least `entries`), no stack and no spills; returns the most registers an entry uses */
static int assemble(const char *ptxas, const char *path, int cc, const char *what, int entries)
{
    char cmd[4096], log[16384];
    /* a module for sm_90a (the wgmma GEMM) assembles for that architecture */
    FILE *mf = fopen(path, "r");
    cr_assert_not_null(mf, "%s", path);
    size_t mn = fread(log, 1, 512, mf);
    fclose(mf);
    log[mn] = '\0';
    const char *arch = strstr(log, ".target sm_90a") ? "a" : "";
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%d%s -v '%s' -o /dev/null 2>&1", ptxas, cc, arch, path);
    FILE *pp = popen(cmd, "r");
    cr_assert_not_null(pp);
    size_t n = fread(log, 1, sizeof log - 1, pp);
    log[n] = '\0';
    int st = pclose(pp);
    cr_assert_eq(st, 0, "ptxas failed on %s (sm_%d):\n%s", what, cc, log);
    /* e.g. wgmma serialized by a branch inside a group (C7520) */
    cr_assert(!strstr(log, "Potential Performance Loss"), "%s (sm_%d):\n%s", what, cc, log);
    int seen = 0, most = -1;
    for (const char *sf = strstr(log, "bytes stack frame"); sf; sf = strstr(sf + 1, "bytes stack frame")) {
        const char *line = sf;
        while (line > log && line[-1] != '\n')
            line--;
        int stack = -1, sst = -1, sld = -1, regs = -1;
        cr_assert_eq(sscanf(line, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                            &stack, &sst, &sld), 3, "%s", line);
        cr_assert(stack == 0 && sst == 0 && sld == 0, "%s (sm_%d) uses stack %d, spills %d/%d:\n%s",
                  what, cc, stack, sst, sld, log);
        const char *ur = strstr(sf, "Used ");
        cr_assert(ur && sscanf(ur, "Used %d registers", &regs) == 1, "no register count for %s:\n%s",
                  what, log);
        most = regs > most ? regs : most;
        seen++;
    }
    cr_assert_geq(seen, entries, "%s: %d resource reports for %d entries:\n%s", what, seen, entries, log);
    return most;
}

/* ws_conv_dump_ptx(d) into sub, then ptxas on the module `module` it wrote there (assemble):
 * the most registers an entry uses */
static int dump_and_assemble(const char *ptxas, const char *sub, const ws_conv_desc *d,
                             const int cc[2], const char *module, const char *what, int entries)
{
    ws_err e = {""};
    char path[2048];
    cr_assert_eq(ws_conv_dump_ptx(d, cc[0], cc[1], sub, &e), 0, "%s: %s", what, e.msg);
    snprintf(path, sizeof path, "%s/%s.ptx", sub, module);
    return assemble(ptxas, path, cc[0] * 10 + cc[1], what, entries);
}

Test(gpu_conv_ptx, every_fwd_descriptor_assembles_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    const int ccs[][2] = {{9, 0}, {8, 0}};
    int lo = 1 << 30, hi = 0;
    for (int i = 0; i < N_CASES; i++)
        for (int c = 0; c < 2; c++) {
            ws_conv_desc d = desc_of(&cases[i]);
            char sub[1024], name[WS_DIRECT_NAME_MAX];
            snprintf(sub, sizeof sub, "%s/sm%d", dir, ccs[c][0] * 10 + ccs[c][1]);
            if (i == 0)
                cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
            ws_direct_name(&d, name);
            int regs = dump_and_assemble(ptxas, sub, &d, ccs[c], name, cases[i].name, 1);
            lo = regs < lo ? regs : lo;
            hi = regs > hi ? regs : hi;
            if (verbose())
                fprintf(stderr, "gpu_conv_ptx %-32s sm_%d%d: %d registers\n", cases[i].name,
                        ccs[c][0], ccs[c][1], regs);
        }
    if (verbose())
        fprintf(stderr, "gpu_conv_ptx: %d descriptors x 2 targets, %d to %d registers\n", N_CASES, lo,
                hi);
}

Test(gpu_conv_ptx, every_depthwise_module_assembles_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    const int ccs[][2] = {{9, 0}, {8, 0}};
    for (int i = 0; i < N_DCASES; i++)
        for (int op = 0; op < 2; op++)
            for (int c = 0; c < 2; c++) {
                gcase gc = dcases[i];
                if (op) {
                    gc.pre = WS_ACT_NONE;
                    gc.add = ADD_NONE;
                }
                ws_conv_desc d = op ? bdesc_of(&gc) : desc_of(&gc);
                cr_assert(ws_dw_fits(&d), "%s: not a depthwise descriptor", gc.name);
                char sub[1024], name[WS_DW_NAME_MAX];
                snprintf(sub, sizeof sub, "%s/dw%d_%d", dir, ccs[c][0] * 10 + ccs[c][1], op);
                if (i == 0)
                    cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
                ws_dw_name(&d, name);
                int regs = dump_and_assemble(ptxas, sub, &d, ccs[c], name, gc.name, op ? 2 : 1);
                if (verbose())
                    fprintf(stderr, "gpu_conv_ptx dw %s %-34s sm_%d%d: at most %d registers\n",
                            op ? "bwd" : "fwd", gc.name, ccs[c][0], ccs[c][1], regs);
            }
}

/* padding past WS_DW_MAX_HALO goes to the direct kernels (the NCL depthwise kernels hold
 * V + P_L + H elements in registers); the dump of such a descriptor writes the direct module */
Test(gpu_conv_ptx, depthwise_with_large_padding_goes_direct)
{
    const char *dir = test_tmpdir();
    for (int op = 0; op < 2; op++)
        for (int lay = 0; lay < 2; lay++)
            for (int pad = 14; pad <= 121; pad += 107) {
                ws_conv_desc d = {.op = op, .c_in = 64, .c_out = 64, .groups = 64, .k = 4,
                                  .stride = 1, .dilation = 1, .pad_l = pad, .pad_r = 0,
                                  .x_layout = lay, .y_layout = lay, .x_type = WS_BF16,
                                  .w_type = WS_BF16, .y_type = WS_BF16, .act = WS_ACT_SILU};
                ws_err e = {""};
                cr_assert_eq(ws_dw_fits(&d), pad <= WS_DW_MAX_HALO, "pad_l %d", pad);
                cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, dir, &e), 0, "pad_l %d: %s", pad, e.msg);
                d.pad_l = 0;
                d.pad_r = pad;
                cr_assert_eq(ws_dw_fits(&d), pad <= WS_DW_MAX_HALO, "pad_r %d", pad);
                cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, dir, &e), 0, "pad_r %d: %s", pad, e.msg);
            }
}

Test(gpu_conv_ptx, dump_writes_the_kernel_and_is_deterministic)
{
    const char *dir = test_tmpdir();
    ws_conv_desc d = desc_of(&cases[1]);
    ws_err e = {""};
    cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, dir, &e), 0, "%s", e.msg);
    char name[WS_DIRECT_NAME_MAX], path[2048];
    ws_direct_name(&d, name);
    snprintf(path, sizeof path, "%s/%s.ptx", dir, name);
    size_t len = 0;
    char *text = read_file(path, &len);
    cr_assert_not_null(text, "%s not written", path);
    char entry[WS_DIRECT_NAME_MAX + 32];
    snprintf(entry, sizeof entry, ".visible .entry %s(", name);
    cr_assert(strstr(text, entry), "%s lacks %s", path, entry);
    cr_assert(strstr(text, ".target sm_90"), "%s", path);
    char *again = ws_direct_emit(&d, 9, 0, &e);
    cr_assert_not_null(again, "%s", e.msg);
    cr_assert(strlen(again) == len && !memcmp(again, text, len), "the same descriptor, other bytes");
    free(again);
    free(text);
    /* sm_80 gets its own target */
    char *t80 = ws_direct_emit(&d, 8, 0, &e);
    cr_assert_not_null(t80, "%s", e.msg);
    cr_assert(strstr(t80, ".target sm_80"));
    free(t80);
}

Test(gpu_conv_ptx, every_bwd_descriptor_assembles_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    const int ccs[][2] = {{9, 0}, {8, 0}};
    int lo = 1 << 30, hi = 0;
    for (int i = 0; i < N_BCASES; i++)
        for (int c = 0; c < 2; c++) {
            ws_conv_desc d = bdesc_of(&bcases[i]);
            char sub[1024], name[WS_DIRECT_NAME_MAX];
            snprintf(sub, sizeof sub, "%s/sm%d", dir, ccs[c][0] * 10 + ccs[c][1]);
            if (i == 0)
                cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
            ws_direct_name(&d, name);
            int regs = dump_and_assemble(ptxas, sub, &d, ccs[c], name, bcases[i].name,
                                         WS_DIRECT_NPARTS);
            lo = regs < lo ? regs : lo;
            hi = regs > hi ? regs : hi;
            if (verbose())
                fprintf(stderr, "gpu_conv_ptx bwd %-28s sm_%d%d: at most %d registers (4 entries)\n",
                        bcases[i].name, ccs[c][0], ccs[c][1], regs);
        }
    if (verbose())
        fprintf(stderr, "gpu_conv_ptx bwd: %d descriptors x 2 targets, %d to %d registers\n", N_BCASES,
                lo, hi);
}

Test(gpu_conv_ptx, bwd_dump_holds_four_entries_and_is_deterministic)
{
    const char *dir = test_tmpdir();
    ws_conv_desc d = bdesc_of(&bcases[0]);
    ws_err e = {""};
    cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, dir, &e), 0, "%s", e.msg);
    char name[WS_DIRECT_NAME_MAX], path[2048];
    ws_direct_name(&d, name);
    cr_assert(!strncmp(name, "ws_direct_bwd_", 14), "%s", name);
    snprintf(path, sizeof path, "%s/%s.ptx", dir, name);
    size_t len = 0;
    char *text = read_file(path, &len);
    cr_assert_not_null(text, "%s not written", path);
    static const char *const parts[] = {"gz", "dx", "dw", "db"};
    for (int p = 0; p < WS_DIRECT_NPARTS; p++) {
        char entry[WS_DIRECT_NAME_MAX], want[WS_DIRECT_NAME_MAX + 32];
        ws_direct_bwd_entry(&d, (ws_direct_part)p, entry);
        snprintf(want, sizeof want, "%s_%s", name, parts[p]);
        cr_assert_str_eq(entry, want);
        snprintf(want, sizeof want, ".visible .entry %s(", entry);
        cr_assert(strstr(text, want), "%s lacks %s", path, want);
    }
    cr_assert(!strstr(text, "atom."), "%s: an atomic", path);
    char *again = ws_direct_emit(&d, 9, 0, &e);
    cr_assert_not_null(again, "%s", e.msg);
    cr_assert(strlen(again) == len && !memcmp(again, text, len), "the same descriptor, other bytes");
    free(again);
    free(text);
    /* the FWD module of the same shape is another one */
    ws_conv_desc f = desc_of(&bcases[0]);
    char fname[WS_DIRECT_NAME_MAX];
    ws_direct_name(&f, fname);
    cr_assert(strcmp(fname, name), "FWD and BWD share the name %s", name);
    /* BWD with pre is refused as ws_conv_check refuses it */
    d.pre = WS_ACT_RELU;
    cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, dir, &e), -1);
    cr_assert(strstr(e.msg, "pre"), "%s", e.msg);
}

/* gelu'(z) = Phi(z) + z phi(z), double */
static double gelu_grad_ref(double z)
{
    return 0.5 * erfc(-z / sqrt(2.0)) + z * exp(-0.5 * z * z) / sqrt(2.0 * 3.14159265358979323846);
}

Test(gpu_conv_ptx, gelu_grad_model_within_bound)
{
    double worst = 0, wz = 0;
    for (long i = -1400000; i <= 1400000; i++) {
        const float z = (float)((double)i * 1e-5);
        const double err = fabs((double)ws_direct_gelu_grad_model(z) - gelu_grad_ref(z));
        if (err > worst)
            worst = err, wz = z;
    }
    static const float edge[] = {0.0f, -0.0f, 1e-40f, -1e-40f, 1e-30f, -1e-30f, 0x1p-60f, -0x1p-60f,
                                 0x1p-59f, -0x1p-59f, 1e-10f, -1e-10f, 30.0f, -30.0f, 1e20f, -1e20f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        const double z = edge[i];
        const double ref = fabs(z) > 1e10 ? (z > 0 ? 1.0 : 0.0) : gelu_grad_ref(z);
        const double err = fabs((double)ws_direct_gelu_grad_model(edge[i]) - ref);
        if (err > worst)
            worst = err, wz = z;
    }
    if (verbose())
        fprintf(stderr, "gelu' model: max |err| %.3g at z = %.6g\n", worst, wz);
    cr_assert_leq(worst, WS_DIRECT_GELU_GRAD_MAX_ABS, "gelu' model: |err| %.3g at z = %.9g", worst, wz);
}

Test(gpu_conv_ptx, dump_refuses_bad_descriptors)
{
    const char *dir = test_tmpdir();
    ws_conv_desc d = desc_of(&cases[0]);
    ws_err e = {""};
    d.groups = 3;
    cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, dir, &e), -1);
    cr_assert(strstr(e.msg, "groups 3"), "%s", e.msg);
    d = desc_of(&cases[0]);
    d.k = 0;
    cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, dir, &e), -1);
    cr_assert(strstr(e.msg, "k 0"), "%s", e.msg);
    d = desc_of(&cases[0]);
    cr_assert_eq(ws_conv_dump_ptx(&d, 7, 5, dir, &e), -1, "sm_75 is below the minimum");
    cr_assert(strstr(e.msg, "8.0"), "%s", e.msg);
    cr_assert_eq(ws_conv_dump_ptx(&d, 9, 0, NULL, &e), -1);
    cr_assert(strstr(e.msg, "dir"), "%s", e.msg);
}

/* --- on the GPU ---------------------------------------------------------------- */

static ws_gpu *gpu_or_skip(void)
{
    ws_err e = {""};
    ws_gpu *g = ws_gpu_open(0, &e);
    if (!g && (strstr(e.msg, "no CUDA driver") || strstr(e.msg, "no CUDA device") ||
               strstr(e.msg, "CUDA_ERROR_NO_DEVICE")))
        cr_skip_test("no CUDA driver/device: %s", e.msg);
    cr_assert_not_null(g, "ws_gpu_open: %s", e.msg);
    return g;
}

static size_t tsize(ws_dtype t) { return t == WS_F32 ? 4 : 2; }

static double get(const void *p, ws_dtype t, size_t i)
{
    if (t == WS_F32)
        return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return t == WS_F16 ? ws_f16_to_f32(h) : ws_bf16_to_f32(h);
}

static void *random_buf(size_t n, ws_dtype t, ws_rng *r)
{
    void *p = malloc(n * tsize(t) + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        float v = (float)(ws_rng_uniform(r) * 2.0 - 1.0);
        if (t == WS_F32)
            ((float *)p)[i] = v;
        else
            ((uint16_t *)p)[i] = t == WS_F16 ? ws_f32_to_f16(v) : ws_f32_to_bf16(v);
    }
    return p;
}

/* one unit in the last place of type t at |v| (f16: 10 stored bits, bf16: 7) */
static double ulp_of(ws_dtype t, double v)
{
    int e;
    frexp(fabs(v), &e);
    if (t == WS_F16)
        return ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    return ldexp(1.0, e - 1 - 7);
}

static uint64_t dev_alloc(ws_gpu *g, size_t bytes)
{
    uint64_t p = 0;
    ws_err e = {""};
    cr_assert_eq(ws_gpu_alloc(g, bytes, &p, &e), 0, "%s", e.msg);
    return p;
}

static void *as_ptr(uint64_t p) { return (void *)(uintptr_t)p; }

/* expect_dw: 1 the call must take the depthwise kernels, and give the direct kernels' values;
 * 2 the gemm kernel, and give the direct kernels' values within float32 rounding (1e-5 of
 * the largest |value|, f16 / bf16 plus 1 ulp); 0 neither; -1 any */
static int gemm_split_cases; /* gemm rows whose FFMA sum run_case saw cut into parts */
static int gemm_tail_cases;  /* of those, rows whose last tiles alone were (gemm_tail) */
static int gemm_slice_cases; /* gemm rows whose FFMA sum run_case saw in slices (_slice) */
static int run_tail_parts;   /* ws_gpu_conv_tail_parts for run_case's plans: 0 automatic */
static size_t run_y_skew;    /* bytes past an aligned allocation where run_case's y starts */
static int run_keep_y;       /* run_case keeps a copy of the GPU's y in run_kept_y (the caller frees it) */
static void *run_kept_y;
static size_t run_kept_bytes;

static void run_case(ws_gpu *g, const gcase *c, int expect_dw)
{
    const ws_conv_desc d = desc_of(c);
    ws_err e = {""};
    const int t_out = ws_conv_out_len(&d, c->t_in), cg = c->c_in / c->groups;
    const size_t nx = (size_t)c->n * c->c_in * c->t_in, per = (size_t)c->c_out * t_out;
    const size_t ny = per * c->n, nw = (size_t)c->c_out * cg * c->k;
    ws_rng r = {0x5eed0000u + (uint64_t)c->n * 131 + (uint64_t)c->c_in * 7 + (uint64_t)c->k};
    void *x = random_buf(nx, c->xt, &r), *w = random_buf(nw, c->wt, &r);
    float *b = c->bias ? random_buf((size_t)c->c_out, WS_F32, &r) : NULL;
    size_t nadd = c->add == ADD_BROADCAST ? per : c->add == ADD_PER_ITEM ? ny : 0;
    void *add = nadd ? random_buf(nadd, c->yt, &r) : NULL;
    long long abs = c->add == ADD_PER_ITEM ? (long long)per : 0;
    if (c->add == ADD_INPUT) { /* K1 S1 P0, same shape, layout and type as x */
        add = x;
        abs = (long long)per;
    }
    const size_t ybytes = ny * tsize(c->yt);
    void *ycpu = malloc(ybytes), *ygpu = malloc(ybytes), *ygpu2 = malloc(ybytes);
    void *poison = malloc(ybytes + 16), *whole = malloc(ybytes + 16);
    cr_assert(ycpu && ygpu && ygpu2 && poison && whole);
    memset(poison, 0xff, ybytes + 16); /* NaN in f32, f16 and bf16 */

    ws_conv *cpu = ws_conv_new(&d, w, b, 1, &e);
    cr_assert_not_null(cpu, "%s: %s", c->name, e.msg);
    ws_conv_args ac = {.n = c->n, .t_in = c->t_in, .x = x, .add = add, .add_batch_stride = abs,
                       .y = ycpu};
    cr_assert_eq(ws_conv_run(cpu, &ac, &e), 0, "%s: %s", c->name, e.msg);
    ws_conv_free(cpu);

    uint64_t dx = dev_alloc(g, nx * tsize(c->xt)), dy = dev_alloc(g, ybytes + 16), dadd = 0;
    const uint64_t dyo = dy + run_y_skew; /* y where the call writes it */
    cr_assert_eq(ws_gpu_upload(g, dx, x, nx * tsize(c->xt), &e), 0, "%s", e.msg);
    if (c->add == ADD_INPUT) {
        dadd = dx;
    } else if (add) {
        dadd = dev_alloc(g, nadd * tsize(c->yt));
        cr_assert_eq(ws_gpu_upload(g, dadd, add, nadd * tsize(c->yt), &e), 0, "%s", e.msg);
    }
    ws_gpu_conv *gc = ws_gpu_conv_new(g, &d, w, b, &e);
    cr_assert_not_null(gc, "%s: %s", c->name, e.msg);
    ws_gpu_conv_tail_parts(gc, run_tail_parts);
    ws_conv_args ag = {.n = c->n, .t_in = c->t_in, .x = as_ptr(dx), .add = dadd ? as_ptr(dadd) : NULL,
                       .add_batch_stride = abs, .y = as_ptr(dyo)};
    void *outs[2] = {ygpu, ygpu2};
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes + 16, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s run %d: %s", c->name, run, e.msg);
        cr_assert_eq(ws_gpu_download(g, whole, dy, ybytes + 16, &e), 0, "%s", e.msg);
        memcpy(outs[run], (char *)whole + run_y_skew, ybytes);
        for (size_t i = 0; i < ybytes + 16; i++) /* nothing written around y */
            cr_assert(i - run_y_skew < ybytes || ((unsigned char *)whole)[i] == 0xff,
                      "%s: byte %zu of the allocation written, y at %zu .. %zu", c->name, i, run_y_skew,
                      run_y_skew + ybytes);
    }
    if (run_keep_y) {
        run_kept_y = malloc(ybytes);
        cr_assert(run_kept_y);
        memcpy(run_kept_y, ygpu, ybytes);
        run_kept_bytes = ybytes;
    }
    cr_assert(!memcmp(ygpu, ygpu2, ybytes), "%s: two runs, different bits", c->name);
    if (expect_dw >= 0)
        cr_assert_eq(ws_gpu_conv_kernel(gc, &ag), expect_dw, "%s: %s kernels expected", c->name,
                     expect_dw == 2 ? "gemm" : expect_dw ? "depthwise" : "direct");
    if (expect_dw == 2) { /* the direct kernels: the same products, zero taps skipped */
        ws_gpu_conv_force_direct(gc, 1);
        cr_assert_eq(ws_gpu_conv_kernel(gc, &ag), 0);
        cr_assert_eq(ws_gpu_upload(g, dyo, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s direct: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dyo, ybytes, &e), 0, "%s", e.msg);
        double dscale = 0;
        size_t differ = 0;
        for (size_t i = 0; i < ny; i++)
            dscale = fmax(dscale, fabs(get(ygpu2, c->yt, i)));
        for (size_t i = 0; i < ny; i++) {
            const double gv = get(ygpu, c->yt, i), dv = get(ygpu2, c->yt, i);
            const double lim = 1e-5 * dscale + (c->yt == WS_F32 ? 0 : ulp_of(c->yt, fmax(fabs(gv), fabs(dv))));
            cr_assert(fabs(gv - dv) <= lim, "%s: y[%zu] gemm %.9g, direct %.9g", c->name, i, gv, dv);
            differ += gv != dv;
        }
        if (verbose())
            fprintf(stderr, "gpu_conv gemm %-36s %zu of %zu values differ from the direct kernel's\n",
                    c->name, differ, ny);
        ws_gpu_conv_force_direct(gc, 0);
        if (ws_gpu_conv_split_calls(gc) > 0 || ws_gpu_conv_slice_calls(gc) > 0) {
            /* the FFMA sum in parts or in slices: the one-part sum agrees; a row in slices
             * also runs in parts (ws_gpu_conv_no_slice), which agree too */
            const int sliced = ws_gpu_conv_slice_calls(gc) > 0;
            gemm_slice_cases += sliced;
            gemm_split_cases++;
            gemm_tail_cases += ws_gpu_conv_tail_calls(gc) > 0;
            for (int way = 0; way < 1 + sliced; way++) {
                if (way == 0)
                    ws_gpu_conv_no_split(gc, 1);
                else
                    ws_gpu_conv_no_slice(gc, 1);
                const unsigned long before = ws_gpu_conv_split_calls(gc), sbefore = ws_gpu_conv_slice_calls(gc);
                cr_assert_eq(ws_gpu_upload(g, dyo, poison, ybytes, &e), 0, "%s", e.msg);
                cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s %s: %s", c->name, way ? "parts" : "one part",
                             e.msg);
                cr_assert_eq(ws_gpu_download(g, ygpu2, dyo, ybytes, &e), 0, "%s", e.msg);
                cr_assert_eq(ws_gpu_conv_slice_calls(gc), sbefore, "%s: slices with no_%s", c->name,
                             way ? "slice" : "split");
                if (way == 0)
                    cr_assert_eq(ws_gpu_conv_split_calls(gc), before, "%s: split with no_split", c->name);
                else
                    cr_assert_gt(ws_gpu_conv_split_calls(gc), before, "%s: no parts with no_slice", c->name);
                for (size_t i = 0; i < ny; i++) {
                    const double gv = get(ygpu, c->yt, i), sv = get(ygpu2, c->yt, i);
                    const double lim = 1e-5 * dscale + (c->yt == WS_F32 ? 0 : ulp_of(c->yt, fmax(fabs(gv), fabs(sv))));
                    cr_assert(fabs(gv - sv) <= lim, "%s: y[%zu] %s %.9g, %s %.9g", c->name, i,
                              sliced ? "slices" : "parts", gv, way ? "parts" : "one part", sv);
                }
                ws_gpu_conv_no_split(gc, 0);
                ws_gpu_conv_no_slice(gc, 0);
            }
        }
    }
    if (expect_dw == 1) { /* the direct kernels: the same sums in the same order */
        ws_gpu_conv_force_direct(gc, 1);
        cr_assert_eq(ws_gpu_conv_kernel(gc, &ag), 0);
        cr_assert_eq(ws_gpu_upload(g, dyo, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s direct: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dyo, ybytes, &e), 0, "%s", e.msg);
        for (size_t i = 0; i < ny; i++)
            cr_assert(get(ygpu, c->yt, i) == get(ygpu2, c->yt, i),
                      "%s: y[%zu] depthwise %.9g, direct %.9g", c->name, i, get(ygpu, c->yt, i),
                      get(ygpu2, c->yt, i));
        ws_gpu_conv_force_direct(gc, 0);
    }

    double scale = 0, se = 0, sr = 0, worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < ny; i++)
        scale = fmax(scale, fabs(get(ycpu, c->yt, i)));
    for (size_t i = 0; i < ny; i++) {
        const double gv = get(ygpu, c->yt, i), cv = get(ycpu, c->yt, i);
        cr_assert(!isnan(gv), "%s: y[%zu] is NaN (not written?)", c->name, i);
        const double err = fabs(gv - cv);
        se += err * err;
        sr += cv * cv;
        const double lim = c->yt == WS_F32 ? 1e-4 * scale
                                           : ulp_of(c->yt, fmax(fabs(gv), fabs(cv))) + 1e-4 * scale;
        if (err - lim > worst) {
            worst = err - lim;
            worst_i = i;
        }
    }
    const double rl2 = sr > 0 ? sqrt(se / sr) : sqrt(se);
    if (verbose())
        fprintf(stderr, "gpu_conv %-32s rel L2 %.3g (scale %.3g)\n", c->name, rl2, scale);
    cr_assert_eq(worst, 0, "%s: y[%zu] GPU %.9g vs CPU %.9g, over the bound by %.3g", c->name, worst_i,
                 get(ygpu, c->yt, worst_i), get(ycpu, c->yt, worst_i), worst);
    if (c->yt == WS_F32)
        cr_assert_leq(rl2, 1e-5, "%s: rel L2 %.3g", c->name, rl2);

    ws_gpu_conv_free(gc);
    ws_gpu_release(g, dx);
    ws_gpu_release(g, dy);
    if (dadd && dadd != dx)
        ws_gpu_release(g, dadd);
    if (add != x)
        free(add);
    free(x), free(w), free(b), free(ycpu), free(ygpu), free(ygpu2), free(poison), free(whole);
}

Test(gpu_conv, every_fwd_descriptor_matches_the_cpu_engine, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    for (int i = 0; i < N_CASES; i++)
        run_case(g, &cases[i], -1);
    ws_gpu_close(g);
}

/* GPU against CPU over n values stored in type t: asserts no NaN, max |err| <= 1e-4 of the
 * largest |value| (f16 / bf16: plus 1 ulp of the type), f32 rel L2 <= 1e-5 */
static void compare(const char *name, const char *what, const void *gpu, const void *cpu, ws_dtype t,
                    size_t n)
{
    double scale = 0, se = 0, sr = 0, worst = 0;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(get(cpu, t, i)));
    for (size_t i = 0; i < n; i++) {
        const double gv = get(gpu, t, i), cv = get(cpu, t, i);
        cr_assert(!isnan(gv), "%s: %s[%zu] is NaN (not written?)", name, what, i);
        const double err = fabs(gv - cv);
        se += err * err;
        sr += cv * cv;
        const double lim = t == WS_F32 ? 1e-4 * scale : ulp_of(t, fmax(fabs(gv), fabs(cv))) + 1e-4 * scale;
        if (err - lim > worst) {
            worst = err - lim;
            worst_i = i;
        }
    }
    const double rl2 = sr > 0 ? sqrt(se / sr) : sqrt(se);
    if (verbose())
        fprintf(stderr, "gpu_conv bwd %-28s %s rel L2 %.3g (scale %.3g)\n", name, what, rl2, scale);
    cr_assert_eq(worst, 0, "%s: %s[%zu] GPU %.9g vs CPU %.9g, over the bound by %.3g", name, what,
                 worst_i, get(gpu, t, worst_i), get(cpu, t, worst_i), worst);
    if (t == WS_F32)
        cr_assert_leq(rl2, 1e-5, "%s: %s rel L2 %.3g", name, what, rl2);
}

enum { WANT_DX = 1, WANT_DW = 2, WANT_DB = 4, WANT_ALL = 7 };

/* expect_dw as run_case's; with 1, dx must equal the direct kernels' */
/* rel L2 of the GPU's n values against the CPU's <= bound; none NaN */
static void compare_rel(const char *name, const char *what, const void *gpu, const void *cpu, ws_dtype t,
                        size_t n, double bound)
{
    double se = 0, sr = 0;
    for (size_t i = 0; i < n; i++) {
        const double gv = get(gpu, t, i), cv = get(cpu, t, i);
        cr_assert(!isnan(gv), "%s: %s[%zu] is NaN (not written?)", name, what, i);
        se += (gv - cv) * (gv - cv);
        sr += cv * cv;
    }
    const double rl2 = sr > 0 ? sqrt(se / sr) : sqrt(se);
    if (verbose())
        fprintf(stderr, "gpu_conv gemm bwd %-28s %s rel L2 %.3g\n", name, what, rl2);
    cr_assert_leq(rl2, bound, "%s: %s rel L2 %.3g over %.3g", name, what, rl2, bound);
}

/* a BWD row on the GPU against the CPU engine, in math m: bound 0, the float32 bounds of
 * compare(); else rel L2 <= bound for each of dx, dw, db. Returns the calls of the plan that
 * took the GEMM passes (ws_gpu_conv_gbwd_calls) */
static unsigned long last_phased; /* the last run_bwd_case_math's calls with dx in the phased form */

static unsigned long run_bwd_case_math(ws_gpu *g, const gcase *c, int expect_dw, ws_math m, double bound)
{
    ws_conv_desc d = bdesc_of(c);
    d.math = m;
    ws_err e = {""};
    const int t_out = ws_conv_out_len(&d, c->t_in), cg = c->c_in / c->groups;
    const size_t nx = (size_t)c->n * c->c_in * c->t_in, ny = (size_t)c->n * c->c_out * t_out;
    const size_t nw = (size_t)c->c_out * cg * c->k, nb = (size_t)c->c_out;
    ws_rng r = {0xb5d0000u + (uint64_t)c->n * 131 + (uint64_t)c->c_in * 7 + (uint64_t)c->k};
    void *x = random_buf(nx, c->xt, &r), *w = random_buf(nw, c->wt, &r);
    float *b = c->bias ? random_buf(nb, WS_F32, &r) : NULL;
    void *dy = random_buf(ny, c->yt, &r);
    const size_t xbytes = nx * tsize(c->xt), ybytes = ny * tsize(c->yt);
    const size_t bytes[3] = {xbytes, nw * sizeof(float), nb * sizeof(float)};
    unsigned long gb_extra = 0;

    /* host copies: [0] CPU, [1] GPU run 1, [2] GPU run 2, [3] GPU subset run; of dx, dw, db */
    void *h[4][3];
    for (int v = 0; v < 4; v++)
        for (int o = 0; o < 3; o++)
            cr_assert_not_null(h[v][o] = malloc(bytes[o]));
    void *poison[3];
    for (int o = 0; o < 3; o++) {
        cr_assert_not_null(poison[o] = malloc(bytes[o]));
        memset(poison[o], 0xff, bytes[o]); /* NaN in f32, f16 and bf16 */
    }

    ws_conv *cpu = ws_conv_new(&d, w, b, 1, &e);
    cr_assert_not_null(cpu, "%s: %s", c->name, e.msg);
    ws_conv_args ac = {.n = c->n, .t_in = c->t_in, .x = x, .dy = dy, .dx = h[0][0], .dw = h[0][1],
                       .db = h[0][2]};
    cr_assert_eq(ws_conv_run(cpu, &ac, &e), 0, "%s: %s", c->name, e.msg);
    ws_conv_free(cpu);

    uint64_t dxin = dev_alloc(g, xbytes), ddy = dev_alloc(g, ybytes), dout[3];
    for (int o = 0; o < 3; o++)
        dout[o] = dev_alloc(g, bytes[o]);
    cr_assert_eq(ws_gpu_upload(g, dxin, x, xbytes, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_gpu_upload(g, ddy, dy, ybytes, &e), 0, "%s", e.msg);
    ws_gpu_conv *gc = ws_gpu_conv_new(g, &d, w, b, &e);
    cr_assert_not_null(gc, "%s: %s", c->name, e.msg);

    /* want: WANT_* bits; outputs poisoned first, all three downloaded into h[v] */
    for (int run = 0; run < 5; run++) {
        const int want = run < 2 ? WANT_ALL : 1 << (run - 2), v = run < 2 ? 1 + run : 3;
        for (int o = 0; o < 3; o++)
            cr_assert_eq(ws_gpu_upload(g, dout[o], poison[o], bytes[o], &e), 0, "%s", e.msg);
        ws_conv_args ag = {.n = c->n, .t_in = c->t_in, .x = as_ptr(dxin), .dy = as_ptr(ddy),
                           .dx = want & WANT_DX ? as_ptr(dout[0]) : NULL,
                           .dw = want & WANT_DW ? as_ptr(dout[1]) : NULL,
                           .db = want & WANT_DB ? as_ptr(dout[2]) : NULL};
        cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s run %d: %s", c->name, run, e.msg);
        for (int o = 0; o < 3; o++)
            cr_assert_eq(ws_gpu_download(g, h[v][o], dout[o], bytes[o], &e), 0, "%s", e.msg);
        if (run < 2)
            continue;
        static const char *const out_name[3] = {"dx", "dw", "db"};
        for (int o = 0; o < 3; o++) {
            if (want & (1 << o))
                cr_assert(!memcmp(h[3][o], h[1][o], bytes[o]), "%s: %s alone, other bits than with all three",
                          c->name, out_name[o]);
            else
                cr_assert(!memcmp(h[3][o], poison[o], bytes[o]), "%s: %s written when only %s was asked for",
                          c->name, out_name[o], out_name[run - 2]);
        }
    }
    cr_assert(!memcmp(h[1][0], h[2][0], xbytes) && !memcmp(h[1][1], h[2][1], bytes[1]) &&
              !memcmp(h[1][2], h[2][2], bytes[2]), "%s: two runs, different bits", c->name);
    ws_conv_args all = {.n = c->n, .t_in = c->t_in, .x = as_ptr(dxin), .dy = as_ptr(ddy),
                        .dx = as_ptr(dout[0]), .dw = as_ptr(dout[1]), .db = as_ptr(dout[2])};
    if (expect_dw >= 0)
        cr_assert_eq(ws_gpu_conv_kernel(gc, &all), expect_dw, "%s: %s kernels expected", c->name,
                     expect_dw ? "depthwise" : "direct");
    if (expect_dw == 1) { /* dx: the direct kernels' sums in the same order */
        ws_gpu_conv_force_direct(gc, 1);
        cr_assert_eq(ws_gpu_conv_run(gc, &all, &e), 0, "%s direct: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, h[3][0], dout[0], xbytes, &e), 0, "%s", e.msg);
        for (size_t i = 0; i < nx; i++)
            cr_assert(get(h[1][0], c->xt, i) == get(h[3][0], c->xt, i),
                      "%s: dx[%zu] depthwise %.9g, direct %.9g", c->name, i, get(h[1][0], c->xt, i),
                      get(h[3][0], c->xt, i));
        ws_gpu_conv_force_direct(gc, 0);
    }

    if (bound > 0) {
        /* a plan without weights, given w and b per call: the same bits */
        const size_t wbytes = nw * tsize(c->wt);
        uint64_t dwin = dev_alloc(g, wbytes), dbin = b ? dev_alloc(g, nb * sizeof(float)) : 0;
        cr_assert_eq(ws_gpu_upload(g, dwin, w, wbytes, &e), 0, "%s", e.msg);
        if (b)
            cr_assert_eq(ws_gpu_upload(g, dbin, b, nb * sizeof(float), &e), 0, "%s", e.msg);
        ws_gpu_conv *pc = ws_gpu_conv_new(g, &d, NULL, NULL, &e);
        cr_assert_not_null(pc, "%s: %s", c->name, e.msg);
        for (int o = 0; o < 3; o++)
            cr_assert_eq(ws_gpu_upload(g, dout[o], poison[o], bytes[o], &e), 0, "%s", e.msg);
        ws_conv_args ap = all;
        ap.w = as_ptr(dwin), ap.b = b ? (const float *)as_ptr(dbin) : NULL;
        cr_assert_eq(ws_gpu_conv_run(pc, &ap, &e), 0, "%s per call: %s", c->name, e.msg);
        for (int o = 0; o < 3; o++) {
            cr_assert_eq(ws_gpu_download(g, h[3][o], dout[o], bytes[o], &e), 0, "%s", e.msg);
            cr_assert(!memcmp(h[3][o], h[1][o], bytes[o]), "%s: weights per call, other bits (output %d)",
                      c->name, o);
        }
        ws_gpu_conv_free(pc);
        const unsigned long gb0 = ws_gpu_conv_gbwd_calls(gc);
        /* the plan with its own weights, given -w for one call, then its own again: dx
         * exactly negated (act NONE), then the first run's bits (dx's weights, made from the plan's own
         * w once and kept, are made again for a call's w and after it) */
        void *wn = malloc(wbytes);
        cr_assert_not_null(wn);
        memcpy(wn, w, wbytes);
        for (size_t q = 0; q < nw; q++)
            c->wt == WS_F32 ? (void)(((uint32_t *)wn)[q] ^= 0x80000000u) : (void)(((uint16_t *)wn)[q] ^= 0x8000u);
        cr_assert_eq(ws_gpu_upload(g, dwin, wn, wbytes, &e), 0, "%s", e.msg);
        free(wn);
        for (int v = 0; v < 2; v++) {
            ws_conv_args an = all;
            an.w = v ? NULL : as_ptr(dwin), an.b = v || !b ? NULL : (const float *)as_ptr(dbin);
            cr_assert_eq(ws_gpu_conv_run(gc, &an, &e), 0, "%s: %s", c->name, e.msg);
            cr_assert_eq(ws_gpu_download(g, h[3][0], dout[0], xbytes, &e), 0, "%s", e.msg);
            for (size_t q = 0; q < nx && !v && c->act == WS_ACT_NONE; q++) /* an act's z depends on w */
                cr_assert(get(h[3][0], c->xt, q) == -get(h[1][0], c->xt, q), "%s: dx[%zu] with -w %.9g, with w %.9g",
                          c->name, q, get(h[3][0], c->xt, q), get(h[1][0], c->xt, q));
            cr_assert(!v || !memcmp(h[3][0], h[1][0], xbytes), "%s: the plan's own w after a call's -w, other dx bits",
                      c->name);
        }
        cr_assert_eq(ws_gpu_conv_gbwd_calls(gc) - gb0, gb0 ? 2ul : 0ul, "%s: the two calls' passes", c->name);
        gb_extra = ws_gpu_conv_gbwd_calls(gc) - gb0;
        ws_gpu_release(g, dwin);
        ws_gpu_release(g, dbin);
        /* operands exact in the math type (x, w and g already of that type): the float32
         * bounds; else the math's rounding bound. db sums g unrounded: float32 always */
        const ws_dtype mt = m == WS_MATH_BF16 ? WS_BF16 : m == WS_MATH_F16 ? WS_F16 : WS_F32;
        const int exact = m != WS_MATH_TF32 && c->xt == mt && c->wt == mt && c->yt == mt && c->act == WS_ACT_NONE;
        if (exact) {
            /* |err| <= 1e-4 of the sum of the terms' magnitudes (the CPU engine on |x|, |w|,
             * |dy|: act NONE, so g = dy), plus one unit in the last place of dx's type */
            void *ax = malloc(xbytes), *aw = malloc(nw * tsize(c->wt)), *ady = malloc(ybytes);
            void *adx = malloc(xbytes);
            float *adw = malloc(nw * sizeof(float)), *adb = malloc(nb * sizeof(float));
            cr_assert(ax && aw && ady && adx && adw && adb);
            memcpy(ax, x, xbytes), memcpy(aw, w, nw * tsize(c->wt)), memcpy(ady, dy, ybytes);
            for (size_t q = 0; q < nx; q++) /* clear the sign bit: |v| in any of the types */
                c->xt == WS_F32 ? (void)(((uint32_t *)ax)[q] &= 0x7fffffffu) : (void)(((uint16_t *)ax)[q] &= 0x7fffu);
            for (size_t q = 0; q < nw; q++)
                c->wt == WS_F32 ? (void)(((uint32_t *)aw)[q] &= 0x7fffffffu) : (void)(((uint16_t *)aw)[q] &= 0x7fffu);
            for (size_t q = 0; q < ny; q++)
                c->yt == WS_F32 ? (void)(((uint32_t *)ady)[q] &= 0x7fffffffu) : (void)(((uint16_t *)ady)[q] &= 0x7fffu);
            ws_conv *abs_cpu = ws_conv_new(&d, aw, NULL, 1, &e);
            cr_assert_not_null(abs_cpu, "%s: %s", c->name, e.msg);
            ws_conv_args aa = {.n = c->n, .t_in = c->t_in, .x = ax, .dy = ady, .dx = adx, .dw = adw, .db = adb};
            cr_assert_eq(ws_conv_run(abs_cpu, &aa, &e), 0, "%s: %s", c->name, e.msg);
            ws_conv_free(abs_cpu);
            for (size_t q = 0; q < nx; q++) {
                const double gv = get(h[1][0], c->xt, q), cv = get(h[0][0], c->xt, q);
                const double lim = 1e-4 * get(adx, c->xt, q) + ulp_of(c->xt, fmax(fabs(gv), fabs(cv)));
                cr_assert(fabs(gv - cv) <= lim, "%s: dx[%zu] GPU %.9g CPU %.9g, bound %.3g", c->name, q, gv, cv, lim);
            }
            for (size_t q = 0; q < nw; q++) {
                const double gv = ((float *)h[1][1])[q], cv = ((float *)h[0][1])[q];
                const double lim = 1e-4 * adw[q] + 1e-30;
                cr_assert(fabs(gv - cv) <= lim, "%s: dw[%zu] GPU %.9g CPU %.9g, bound %.3g", c->name, q, gv, cv, lim);
            }
            free(ax), free(aw), free(ady), free(adx), free(adw), free(adb);
        } else {
            compare_rel(c->name, "dx", h[1][0], h[0][0], c->xt, nx, bound);
            compare_rel(c->name, "dw", h[1][1], h[0][1], WS_F32, nw, bound);
        }
        compare(c->name, "db", h[1][2], h[0][2], WS_F32, nb);
    } else {
        compare(c->name, "dx", h[1][0], h[0][0], c->xt, nx);
        compare(c->name, "dw", h[1][1], h[0][1], WS_F32, nw);
        compare(c->name, "db", h[1][2], h[0][2], WS_F32, nb);
    }
    const unsigned long gb = ws_gpu_conv_gbwd_calls(gc) - gb_extra; /* the 5 runs' */
    last_phased = ws_gpu_conv_phased_calls(gc);
    if (last_phased) { /* dx's Hopper GEMM, its tile loop: its tiles on two blocks, the same bits */
        ws_gpu_conv_hgemm_blocks(gc, 2);
        cr_assert_eq(ws_gpu_upload(g, dout[0], poison[0], xbytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &all, &e), 0, "%s on two blocks: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, h[3][0], dout[0], xbytes, &e), 0, "%s", e.msg);
        cr_assert(!memcmp(h[3][0], h[1][0], xbytes), "%s: dx's tiles on two blocks, other bits", c->name);
    }
    ws_gpu_conv_free(gc);
    ws_gpu_release(g, dxin);
    ws_gpu_release(g, ddy);
    for (int o = 0; o < 3; o++) {
        ws_gpu_release(g, dout[o]);
        free(poison[o]);
        for (int v = 0; v < 4; v++)
            free(h[v][o]);
    }
    free(x), free(w), free(b), free(dy);
    return gb;
}

static void run_bwd_case(ws_gpu *g, const gcase *c, int expect_dw)
{
    run_bwd_case_math(g, c, expect_dw, WS_MATH_F32, 0);
}

Test(gpu_conv, every_bwd_descriptor_matches_the_cpu_engine, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    for (int i = 0; i < N_BCASES; i++)
        run_bwd_case(g, &bcases[i], -1);
    ws_gpu_close(g);
}

/* a BWD case from a depthwise FWD row: pre NONE, no add */
static gcase bwd_of(const gcase *c)
{
    gcase b = *c;
    b.pre = WS_ACT_NONE;
    b.add = ADD_NONE;
    return b;
}

Test(gpu_conv, depthwise_fwd_matches_the_cpu_engine_and_the_direct_kernels, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    for (int i = 0; i < N_DCASES; i++)
        run_case(g, &dcases[i], 1);
    /* T not a multiple of the vector (NCL) or odd channels (NLC): the direct kernels */
    gcase odd = dcases[10];
    odd.t_in = 203;
    run_case(g, &odd, 0);
    odd = dcases[0];
    odd.c_in = odd.c_out = odd.groups = 66;
    run_case(g, &odd, 0);
    ws_gpu_close(g);
}

Test(gpu_conv, depthwise_bwd_matches_the_cpu_engine_and_repeats, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    for (int i = 0; i < N_DCASES; i++) {
        const gcase b = bwd_of(&dcases[i]);
        run_bwd_case(g, &b, 1);
    }
    gcase odd = bwd_of(&dcases[10]);
    odd.t_in = 203;
    run_bwd_case(g, &odd, 0);
    ws_gpu_close(g);
}

/* One BWD plan serves calls of several sizes: the first large call grows the partials,
 * later ones reuse them (a small call after a large one reads only its own part); the
 * large calls start more blocks than the GPU holds at once. Every call matches the CPU
 * engine, and a repeated call gives the same bits. */
Test(gpu_conv, depthwise_bwd_one_plan_serves_calls_of_every_size, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    static const struct { int n, t; } calls[] = { {1, 64}, {8, 4096}, {2, 200}, {8, 4096}, {1, 64} };
    for (int layout = 0; layout < 2; layout++) {
        gcase c = {layout ? "dw_ncl_bf16_c1024" : "dw_nlc_bf16_c1024", 1, 1024, 1024, 1024, 4, 1, 1, 3, 0, 64,
                   layout ? WS_NCL : WS_NLC, layout ? WS_NCL : WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
                   WS_ACT_SILU, 1, 0};
        const ws_conv_desc d = bdesc_of(&c);
        ws_err e = {""};
        const size_t nw = (size_t)c.c_out * c.k, nb = (size_t)c.c_out;
        ws_rng r = {0x0e1a0000u + (uint64_t)layout};
        void *w = random_buf(nw, WS_BF16, &r);
        float *b = random_buf(nb, WS_F32, &r);
        ws_gpu_conv *gc = ws_gpu_conv_new(g, &d, w, b, &e);
        cr_assert_not_null(gc, "%s: %s", c.name, e.msg);
        ws_conv *cpu = ws_conv_new(&d, w, b, 1, &e);
        cr_assert_not_null(cpu, "%s: %s", c.name, e.msg);
        float *first_dw = NULL;
        for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
            const size_t nx = (size_t)calls[k].n * c.c_in * calls[k].t, xbytes = nx * 2;
            ws_rng rx = {0x0e1b0000u + (uint64_t)calls[k].t};
            void *x = random_buf(nx, WS_BF16, &rx), *dy = random_buf(nx, WS_BF16, &rx);
            void *hdx[2] = {malloc(xbytes), malloc(xbytes)};
            float *hdw[2] = {malloc(nw * 4), malloc(nw * 4)}, *hdb[2] = {malloc(nb * 4), malloc(nb * 4)};
            cr_assert(hdx[0] && hdx[1] && hdw[0] && hdw[1] && hdb[0] && hdb[1]);
            ws_conv_args ac = {.n = calls[k].n, .t_in = calls[k].t, .x = x, .dy = dy, .dx = hdx[0],
                               .dw = hdw[0], .db = hdb[0]};
            cr_assert_eq(ws_conv_run(cpu, &ac, &e), 0, "%s: %s", c.name, e.msg);
            uint64_t dx_in = dev_alloc(g, xbytes), ddy = dev_alloc(g, xbytes), ddx = dev_alloc(g, xbytes);
            uint64_t ddw = dev_alloc(g, nw * 4), ddb = dev_alloc(g, nb * 4);
            cr_assert_eq(ws_gpu_upload(g, dx_in, x, xbytes, &e), 0, "%s", e.msg);
            cr_assert_eq(ws_gpu_upload(g, ddy, dy, xbytes, &e), 0, "%s", e.msg);
            ws_conv_args ag = {.n = calls[k].n, .t_in = calls[k].t, .x = as_ptr(dx_in), .dy = as_ptr(ddy),
                               .dx = as_ptr(ddx), .dw = as_ptr(ddw), .db = as_ptr(ddb)};
            cr_assert_eq(ws_gpu_conv_kernel(gc, &ag), 1, "%s: depthwise kernels expected", c.name);
            cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s call %zu: %s", c.name, k, e.msg);
            cr_assert_eq(ws_gpu_download(g, hdx[1], ddx, xbytes, &e), 0, "%s", e.msg);
            cr_assert_eq(ws_gpu_download(g, hdw[1], ddw, nw * 4, &e), 0, "%s", e.msg);
            cr_assert_eq(ws_gpu_download(g, hdb[1], ddb, nb * 4, &e), 0, "%s", e.msg);
            char what[96];
            snprintf(what, sizeof what, "%s n %d t %d", c.name, calls[k].n, calls[k].t);
            compare(what, "dx", hdx[1], hdx[0], WS_BF16, nx);
            compare(what, "dw", hdw[1], hdw[0], WS_F32, nw);
            compare(what, "db", hdb[1], hdb[0], WS_F32, nb);
            if (calls[k].t == 4096) {
                if (!first_dw) {
                    cr_assert_not_null(first_dw = malloc(nw * 4));
                    memcpy(first_dw, hdw[1], nw * 4);
                } else {
                    cr_assert(!memcmp(first_dw, hdw[1], nw * 4), "%s: the same call twice, other dw bits", what);
                }
            }
            ws_gpu_release(g, dx_in), ws_gpu_release(g, ddy), ws_gpu_release(g, ddx);
            ws_gpu_release(g, ddw), ws_gpu_release(g, ddb);
            free(x), free(dy), free(hdx[0]), free(hdx[1]), free(hdw[0]), free(hdw[1]), free(hdb[0]), free(hdb[1]);
        }
        free(first_dw);
        ws_conv_free(cpu);
        ws_gpu_conv_free(gc);
        free(w), free(b);
    }
    ws_gpu_close(g);
}

Test(gpu_conv, bad_calls_are_refused)
{
    ws_gpu *g = gpu_or_skip();
    ws_err e = {""};
    ws_conv_desc d = desc_of(&cases[0]);
    const size_t nw = (size_t)d.c_out * d.c_in * d.k;
    float *w = calloc(nw, sizeof *w);
    d.op = WS_CONV_BWD;
    d.pre = WS_ACT_RELU;
    cr_assert_null(ws_gpu_conv_new(g, &d, w, NULL, &e));
    cr_assert(strstr(e.msg, "pre"), "%s", e.msg);
    d = desc_of(&cases[0]);
    d.groups = 5;
    cr_assert_null(ws_gpu_conv_new(g, &d, w, NULL, &e));
    cr_assert(strstr(e.msg, "groups 5"), "%s", e.msg);
    d = desc_of(&cases[0]);

    ws_gpu_conv *c = ws_gpu_conv_new(g, &d, w, NULL, &e);
    cr_assert_not_null(c, "%s", e.msg);
    const int T = 30, N = 2;
    uint64_t dx = dev_alloc(g, (size_t)N * d.c_in * T * 4), dy = dev_alloc(g, (size_t)N * d.c_out * T * 4);
    const struct { const char *what, *want; ws_conv_args a; } bad[] = {
        {"n 0", "n 0", {.n = 0, .t_in = T, .x = as_ptr(dx), .y = as_ptr(dy)}},
        {"t_in 0", "t_in 0", {.n = N, .t_in = 0, .x = as_ptr(dx), .y = as_ptr(dy)}},
        {"NULL x", "x is NULL", {.n = N, .t_in = T, .y = as_ptr(dy)}},
        {"NULL y", "y is NULL", {.n = N, .t_in = T, .x = as_ptr(dx)}},
        {"negative add stride", "add_batch_stride -1",
         {.n = N, .t_in = T, .x = as_ptr(dx), .add = as_ptr(dy), .add_batch_stride = -1, .y = as_ptr(dy)}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = '\0';
        cr_assert_eq(ws_gpu_conv_run(c, &bad[i].a, &e), -1, "%s accepted", bad[i].what);
        cr_assert(strstr(e.msg, bad[i].want) && !strncmp(e.msg, "ws_gpu_conv_run: ", 17),
                  "%s: %s", bad[i].what, e.msg);
    }
    ws_gpu_conv_free(c);

    /* BWD: dy, x and one output required; add refused; nothing written */
    d.op = WS_CONV_BWD;
    c = ws_gpu_conv_new(g, &d, w, NULL, &e);
    cr_assert_not_null(c, "%s", e.msg);
    uint64_t ddx = dev_alloc(g, (size_t)N * d.c_in * T * 4), ddw = dev_alloc(g, nw * 4);
    const struct { const char *what, *want; ws_conv_args a; } bbad[] = {
        {"nothing asked", "are all NULL", {.n = N, .t_in = T, .x = as_ptr(dx), .dy = as_ptr(dy)}},
        {"NULL dy", "dy is NULL", {.n = N, .t_in = T, .x = as_ptr(dx), .dx = as_ptr(ddx)}},
        {"NULL x", "x is NULL", {.n = N, .t_in = T, .dy = as_ptr(dy), .dw = as_ptr(ddw)}},
        {"add", "add", {.n = N, .t_in = T, .x = as_ptr(dx), .dy = as_ptr(dy), .add = as_ptr(dy),
                        .dx = as_ptr(ddx)}},
        {"n 0", "n 0", {.n = 0, .t_in = T, .x = as_ptr(dx), .dy = as_ptr(dy), .dx = as_ptr(ddx)}},
    };
    for (size_t i = 0; i < sizeof bbad / sizeof bbad[0]; i++) {
        e.msg[0] = '\0';
        cr_assert_eq(ws_gpu_conv_run(c, &bbad[i].a, &e), -1, "BWD %s accepted", bbad[i].what);
        cr_assert(strstr(e.msg, bbad[i].want) && !strncmp(e.msg, "ws_gpu_conv_run: ", 17),
                  "BWD %s: %s", bbad[i].what, e.msg);
    }
    ws_gpu_conv_free(c);
    ws_gpu_release(g, ddx);
    ws_gpu_release(g, ddw);
    ws_gpu_release(g, dx);
    ws_gpu_release(g, dy);
    free(w);
    ws_gpu_close(g);
}

/* --- the dense implicit-GEMM kernel (ptx_gemm.h) --------------------------------- */

/* dense FWD rows: layouts mixed, K 1..16, S 1..8, D 1..27, asymmetric pads, pre and act,
 * bias or not, add per item / broadcast / the input, f32 / f16 / bf16 and mixed storage,
 * C_in*K not a multiple of 4, C_out and N*T_out not multiples of the tile, T_out 1, two
 * of the bench's shapes scaled down; C_in a multiple of 16 or not, NCL at stride 1, 2 and 4
 * (the mma kernel's two orders of r), bf16 storage without pre in NCL and NLC (its raw
 * pairs) */
#define F32 WS_F32, WS_F32, WS_F32
static const gcase gcases_gemm[] = {
    {"g_dilated_k3_d9_relu_relu", 3, 40, 70, 1, 3, 1, 9, 9, 9, 45, WS_NCL, WS_NCL, F32, WS_ACT_RELU, WS_ACT_RELU, 1, 0},
    {"g_nlc_nlc_gelu_s2_add", 2, 33, 20, 1, 3, 2, 1, 1, 1, 50, WS_NLC, WS_NLC, F32, 0, WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"g_ncl_to_nlc_silu_k2_s2", 3, 24, 136, 1, 2, 2, 1, 0, 0, 91, WS_NCL, WS_NLC, F32, 0, WS_ACT_SILU, 0, 0},
    {"g_nlc_to_ncl_d3_asym_5_0_bcast", 2, 19, 31, 1, 3, 1, 3, 5, 0, 60, WS_NLC, WS_NCL, F32, 0, WS_ACT_NONE, 0,
     ADD_BROADCAST},
    {"g_resconv_k1_add_input", 2, 64, 64, 1, 1, 1, 1, 0, 0, 100, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, ADD_INPUT},
    {"g_resconv_k1_add_input_nlc", 3, 20, 20, 1, 1, 1, 1, 0, 0, 70, WS_NLC, WS_NLC, F32, 0, WS_ACT_NONE, 1,
     ADD_INPUT},
    {"g_wav2vec2_conv0_k10_s5_t3200", 2, 1, 512, 1, 10, 5, 1, 0, 0, 3200, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0},
    {"g_wav2vec2_k3_s2", 2, 40, 48, 1, 3, 2, 1, 0, 0, 121, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 0, 0},
    {"g_dac_k16_s8_p4", 2, 24, 40, 1, 16, 8, 1, 4, 4, 200, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1, 0},
    {"g_jukebox_d27_relu_relu", 1, 16, 16, 1, 3, 1, 27, 27, 27, 300, WS_NCL, WS_NCL, F32, WS_ACT_RELU,
     WS_ACT_RELU, 1, 0},
    {"g_t_out_1", 3, 7, 9, 1, 5, 1, 1, 0, 0, 5, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"g_t_out_1_stride4_c130", 5, 6, 130, 1, 3, 4, 2, 1, 0, 4, WS_NLC, WS_NCL, F32, 0, WS_ACT_NONE, 1, ADD_PER_ITEM},
    {"g_k16_same_p7_8_nlc", 2, 5, 6, 1, 16, 1, 1, 7, 8, 29, WS_NLC, WS_NLC, F32, 0, WS_ACT_SILU, 1, 0},
    {"g_k2_s5_relu", 2, 6, 4, 1, 2, 5, 1, 0, 0, 131, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0},
    {"g_pre_gelu_bcast_nlc", 2, 9, 300, 1, 3, 1, 1, 2, 0, 20, WS_NLC, WS_NLC, F32, WS_ACT_GELU, WS_ACT_NONE, 1,
     ADD_BROADCAST},
    {"g_pre_silu_d2_s3_asym", 2, 12, 17, 1, 5, 3, 2, 0, 6, 77, WS_NCL, WS_NLC, F32, WS_ACT_SILU, WS_ACT_GELU, 1, 0},
    {"g_long_t_ncl", 1, 8, 24, 1, 3, 1, 1, 1, 1, 1000, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1, 0},
    {"g_dilation_over_input", 1, 4, 4, 1, 3, 1, 7, 7, 7, 6, WS_NCL, WS_NLC, F32, 0, WS_ACT_GELU, 1, 0},
    {"g_f16_ncl_to_nlc_gelu_add", 2, 48, 64, 1, 3, 1, 1, 1, 1, 77, WS_NCL, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"g_bf16_nlc_d3_relu_relu", 2, 16, 16, 1, 3, 1, 3, 3, 3, 40, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     WS_ACT_RELU, WS_ACT_RELU, 1, 0},
    {"g_bf16_x_f16_w_f32_y_k2_s2", 2, 10, 12, 1, 2, 2, 1, 1, 0, 63, WS_NLC, WS_NCL, WS_BF16, WS_F16, WS_F32, 0,
     WS_ACT_SILU, 1, 0},
    {"g_f32_x_bf16_y_k2_s5", 2, 24, 36, 1, 2, 5, 1, 0, 0, 100, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_BF16, 0,
     WS_ACT_GELU, 0, ADD_PER_ITEM},
    {"g_f16_k1_add_input", 2, 16, 16, 1, 1, 1, 1, 0, 0, 40, WS_NCL, WS_NCL, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_NONE, 1, ADD_INPUT},
    {"g_bench_dilated_c512_t32_n16", 16, 512, 512, 1, 3, 1, 9, 9, 9, 32, WS_NCL, WS_NCL, F32, WS_ACT_RELU,
     WS_ACT_RELU, 1, 0},
    {"g_bench_resconv_k1_c512_n16", 16, 512, 512, 1, 1, 1, 1, 0, 0, 32, WS_NCL, WS_NCL, F32, 0, WS_ACT_NONE, 1,
     ADD_INPUT},
    {"g_bf16_dilated_c64_d9_relu", 4, 64, 96, 1, 3, 1, 9, 9, 9, 40, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_RELU, 1, 0},
    {"g_bf16_nlc_c32_k2_s2_gelu_add", 2, 32, 48, 1, 2, 2, 1, 0, 0, 70, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"g_bf16_c32_k3_s2_gelu", 3, 32, 72, 1, 3, 2, 1, 1, 0, 61, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 0, 0},
    /* NLC x with C_in a multiple of 16: the mma kernel's 16-byte loads of x (f32, f16, bf16
     * storage; raw and converted) */
    {"g_nlc_f32_c32_pre_silu_d2", 2, 32, 40, 1, 3, 1, 2, 2, 1, 57, WS_NLC, WS_NCL, F32, WS_ACT_SILU, WS_ACT_NONE, 1,
     ADD_PER_ITEM},
    {"g_nlc_f16_c16_k2_gelu", 3, 16, 24, 1, 2, 1, 1, 1, 0, 45, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_GELU, 1, 0},
    /* float32 NLC x, C_in a multiple of 16, pre NONE: the FFMA kernel's channel-lane gather
     * (ws_gemm_ffma_cl), at stride 2 with a partial position tile and an add into NLC y, and
     * with dilation, padding past the taps' reach and NCL y over two row tiles */
    {"g_nlc_f32_c48_o72_k3_s2_cl_add", 3, 48, 72, 1, 3, 2, 1, 1, 1, 91, WS_NLC, WS_NLC, F32, 0, WS_ACT_GELU, 1,
     ADD_PER_ITEM},
    {"g_nlc_f32_c32_o136_k5_d2_cl_ncl", 2, 32, 136, 1, 5, 1, 2, 4, 4, 70, WS_NLC, WS_NCL, F32, 0, WS_ACT_RELU, 1, 0},
    /* C_out 300 and 272: several 128-row tiles and a partial last one (NLC and NCL y) */
    {"g_wide_nlc_c24_o300_d2_add", 3, 24, 300, 1, 3, 1, 2, 2, 2, 45, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"g_wide_ncl_c32_o272_k4_s2_bcast", 2, 32, 272, 1, 4, 2, 1, 1, 2, 131, WS_NCL, WS_NCL, WS_BF16, WS_F32, WS_F32,
     WS_ACT_RELU, WS_ACT_SILU, 1, ADD_BROADCAST},
    {"g_bf16_c32_k8_s4_p2", 2, 32, 40, 1, 8, 4, 1, 2, 2, 90, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    /* the Hopper GEMM's tiles (ptx_hgemm.h): two channel blocks and several time tiles at
     * stride 2; a partial channel block (80 = 64 + 16) with staged f32 NCL x, pre and a
     * partial row tile; stride 8 (32-time tiles of 8 items, items past N); short items (TB 8,
     * 32 items a tile); the residual add of the input, NLC; NCL at stride 2 with f32 y */
    {"h_nlc_c128_k3_s2_t601", 2, 128, 96, 1, 3, 2, 1, 1, 1, 601, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"h_ncl_f32_c80_o200_k5_d2_pre", 3, 80, 200, 1, 5, 1, 2, 4, 4, 250, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32,
     WS_ACT_RELU, WS_ACT_SILU, 1, ADD_PER_ITEM},
    {"h_nlc_c64_k16_s8_p4_n5", 5, 64, 100, 1, 16, 8, 1, 4, 4, 333, WS_NLC, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    {"h_nlc_c48_k7_t5_n37", 37, 48, 130, 1, 7, 1, 1, 3, 3, 5, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0, WS_ACT_RELU,
     1, ADD_BROADCAST},
    {"h_nlc_c96_k6_d3_add_input", 3, 96, 96, 1, 6, 1, 3, 7, 8, 150, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 1, ADD_INPUT},
    {"h_ncl_c160_o136_k3_s2_add", 2, 160, 136, 1, 3, 2, 1, 1, 1, 517, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_F32, 0,
     WS_ACT_NONE, 0, ADD_PER_ITEM},
    /* sums over WS_HGEMM_SMALL_KT stages: the large tile, with an add, NLC and NCL y and a
     * last row tile whose second consumer has no rows (C_out 192, 320) */
    {"h_large_nlc_c256_o192_k7_add", 2, 256, 192, 1, 7, 1, 1, 3, 3, 150, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16,
     0, WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"h_large_ncl_c192_o320_k9_s2_bcast", 3, 192, 320, 1, 9, 2, 1, 4, 4, 301, WS_NCL, WS_NCL, WS_F16, WS_F16, WS_F16,
     0, WS_ACT_SILU, 0, ADD_BROADCAST},
    /* NCL y with T_out % 4 == 0: the epilogue's vector stores, a partial last row tile (C_out
     * 200), the small tile with an add per item and the large one with float32 y */
    {"h_ncl_c128_o200_k3_t256_vec", 3, 128, 200, 1, 3, 1, 1, 1, 1, 256, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    /* the small tile's SILU into 16-bit y (NLC and NCL): the element form, no spills */
    {"h_small_nlc_c64_o96_k3_silu", 2, 64, 96, 1, 3, 1, 1, 1, 1, 120, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_SILU, 1, ADD_PER_ITEM},
    {"h_small_ncl_c64_o96_k3_silu", 2, 64, 96, 1, 3, 1, 1, 1, 1, 120, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_SILU, 1, 0},
    {"h_large_ncl_c256_o136_k7_t400_vec", 2, 256, 136, 1, 7, 1, 1, 3, 3, 400, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_F32,
     0, WS_ACT_SILU, 1, ADD_BROADCAST},
    /* channel-first x read in place (ptx_hgemm.h, CHANNEL-FIRST X; x of the math type, taps
     * at multiples of 8 times): 64-time tiles of two items with an item past N and taps
     * reaching past both ends; K1 over a partial channel block (208) into NLC y with
     * 128-time tiles; the large tile (KT 25, 27) at TB 64 (four items a tile, three past N)
     * and at TB 256; the residual add of x itself; T_in % 8 != 0, T_out <= 32 and taps at
     * 5-time steps, which stage x (the last by "_prep8": T_in >= 128) */
    {"h_mn_ncl_c64_o72_k3_d8_t64_n3", 3, 64, 72, 1, 3, 1, 8, 8, 8, 64, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"h_mn_ncl_f16_c208_o136_k1_nlc", 2, 208, 136, 1, 1, 1, 1, 0, 0, 200, WS_NCL, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
     WS_ACT_RELU, 1, ADD_PER_ITEM},
    {"h_mn_large_ncl_c320_o130_k5_d8_t56_n5", 5, 320, 130, 1, 5, 1, 8, 16, 16, 56, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_F32, 0, WS_ACT_NONE, 1, ADD_BROADCAST},
    {"h_mn_large_ncl_f16_c576_o64_k3_d8_t200", 2, 576, 64, 1, 3, 1, 8, 8, 8, 200, WS_NCL, WS_NCL, WS_F16, WS_F16,
     WS_F16, 0, WS_ACT_GELU, 0, 0},
    {"h_mn_ncl_c64_k3_d8_add_input", 2, 64, 64, 1, 3, 1, 8, 8, 8, 96, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_RELU, 1, ADD_INPUT},
    {"h_mn_ncl_c64_k3_d8_t101_staged", 2, 64, 96, 1, 3, 1, 8, 8, 8, 101, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    {"h_mn_ncl_c192_k1_t32_staged", 9, 192, 96, 1, 1, 1, 1, 0, 0, 32, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, ADD_PER_ITEM},
    /* float32 NCL x under TF32 math read in place (taps at multiples of 4 times; the consumers
     * transpose B): 128-time tiles of the small tile with taps past both ends and an add; K1
     * into NLC y with a last row tile half idle (C_out 160); 32-time tiles (four items a tile,
     * three past N); the large tile (KT 27) with a last row tile whose second consumer has no
     * rows, two items a tile and one past N */
    {"h_mt_ncl_f32_c64_o96_k3_d4_p4_t200", 3, 64, 96, 1, 3, 1, 4, 4, 4, 200, WS_NCL, WS_NCL, F32, 0, WS_ACT_GELU, 1,
     ADD_PER_ITEM},
    {"h_mt_ncl_f32_c192_o160_k1_t100_nlc", 2, 192, 160, 1, 1, 1, 1, 0, 0, 100, WS_NCL, WS_NLC, F32, 0, WS_ACT_NONE,
     1, 0},
    {"h_mt_ncl_f32_c192_o96_k1_t32_n9", 9, 192, 96, 1, 1, 1, 1, 0, 0, 32, WS_NCL, WS_NCL, F32, 0, WS_ACT_RELU, 0,
     ADD_PER_ITEM},
    {"h_mt_large_ncl_f32_c288_o136_k3_d4_t96_n3", 3, 288, 136, 1, 3, 1, 4, 4, 4, 96, WS_NCL, WS_NCL, F32, 0,
     WS_ACT_SILU, 1, ADD_BROADCAST},
    /* float32 NCL x under TF32 math, staged by "_prep8" (64-time blocks, the last partial; a
     * partial 64-channel block) */
    {"h_ncl_f32_c96_o96_k3_t204", 2, 96, 96, 1, 3, 1, 1, 1, 1, 204, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"h_ncl_c64_k3_d5_t136_staged", 3, 64, 72, 1, 3, 1, 5, 5, 5, 136, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_GELU, 1, ADD_PER_ITEM},
    /* the narrow tile (C_out <= 64 on the small tile's sums: 64 rows, one consumer): Jukebox's
     * taps in NLC (the vector epilogue, x in place); NCL x by "_prep8" into NCL y in vectors with
     * rows past C_out (40) and an add; C_out 33 (the element form) at stride 2, two items a
     * tile and one past N, SILU, a broadcast add; float32 NCL x staged element-wise into NCL y
     * with T_out % 4 != 0 */
    {"h_narrow_nlc_c64_o64_k3_d27_relu", 3, 64, 64, 1, 3, 1, 27, 27, 27, 300, WS_NLC, WS_NLC, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_RELU, 1, 0},
    {"h_narrow_ncl_c64_o40_k3_d27_t256_add", 2, 64, 40, 1, 3, 1, 27, 27, 27, 256, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_GELU, 1, ADD_PER_ITEM},
    {"h_narrow_nlc_f16_c32_o33_k5_s2_bcast", 3, 32, 33, 1, 5, 2, 1, 2, 2, 99, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16,
     0, WS_ACT_SILU, 1, ADD_BROADCAST},
    {"h_narrow_ncl_f32_c48_o64_k3_t101", 2, 48, 64, 1, 3, 1, 1, 1, 1, 101, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, 0,
     WS_ACT_GELU, 1, 0},
};
#undef F32
enum { N_GCASES = sizeof gcases_gemm / sizeof gcases_gemm[0] };

/* the gemm row called name (the table grows: rows are named, not counted from its end) */
static const gcase *gcase_named(const char *name)
{
    for (int i = 0; i < N_GCASES; i++)
        if (!strcmp(gcases_gemm[i].name, name))
            return &gcases_gemm[i];
    cr_assert_fail("no gemm row %s", name);
    return NULL;
}

Test(gpu_conv_ptx, every_gemm_module_assembles_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    const int ccs[][2] = {{9, 0}, {8, 0}};
    int lo = 1 << 30, hi = 0;
    /* the gemm table, then the FWD rows of the first table that the gemm kernel takes */
    for (int i = 0; i < N_GCASES + N_CASES; i++) {
        const gcase *gc = i < N_GCASES ? &gcases_gemm[i] : &cases[i - N_GCASES];
        ws_conv_desc d = desc_of(gc);
        if (!ws_gemm_fits(&d)) {
            cr_assert(i >= N_GCASES, "%s: not a gemm descriptor", gc->name);
            cr_assert_neq(d.groups, 1, "%s: dense, and no gemm kernel", gc->name);
            continue;
        }
        for (int c = 0; c < 2; c++) {
            char sub[1024], name[WS_GEMM_NAME_MAX];
            snprintf(sub, sizeof sub, "%s/gemm%d", dir, ccs[c][0] * 10 + ccs[c][1]);
            if (i == 0)
                cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
            ws_gemm_name(&d, name);
            const int regs = dump_and_assemble(ptxas, sub, &d, ccs[c], name, gc->name, 1);
            lo = regs < lo ? regs : lo;
            hi = regs > hi ? regs : hi;
            if (verbose())
                fprintf(stderr, "gpu_conv_ptx gemm %-36s sm_%d%d: %d registers\n", gc->name, ccs[c][0],
                        ccs[c][1], regs);
        }
    }
    if (verbose())
        fprintf(stderr, "gpu_conv_ptx gemm: %d to %d registers\n", lo, hi);
}

Test(gpu_conv_ptx, gemm_module_is_deterministic_and_refuses_what_it_does_not_take)
{
    ws_conv_desc d = desc_of(&gcases_gemm[0]);
    ws_err e = {""};
    char *a = ws_gemm_emit(&d, 9, 0, &e), *b = ws_gemm_emit(&d, 9, 0, &e);
    cr_assert(a && b, "%s", e.msg);
    cr_assert_str_eq(a, b);
    char name[WS_GEMM_NAME_MAX], entry[WS_GEMM_NAME_MAX + 32];
    ws_gemm_name(&d, name);
    snprintf(entry, sizeof entry, ".visible .entry %s(", name);
    cr_assert(strstr(a, entry), "no entry %s", name);
    cr_assert(!strstr(a, "atom."), "an atomic in the gemm kernel");
    free(a);
    free(b);
    d.op = WS_CONV_BWD;
    d.pre = WS_ACT_NONE;
    cr_assert(!ws_gemm_fits(&d), "BWD taken");
    cr_assert_null(ws_gemm_emit(&d, 9, 0, &e));
    d = desc_of(&cases[21]); /* groups2 */
    cr_assert_eq(d.groups, 2);
    cr_assert(!ws_gemm_fits(&d), "grouped taken");
    d = desc_of(&gcases_gemm[0]);
    cr_assert(ws_gemm_call_fits(&d, 3, 45));
    cr_assert(!ws_gemm_call_fits(&d, 1 << 16, 1 << 15), "2^31 positions taken");
    d.c_out = 65536 * WS_GEMM_BM;
    cr_assert(!ws_gemm_call_fits(&d, 1, 10), "grid y over 65535 taken");
    /* the channel-lane gather works u = S*t - P_L + D*k out in s32: calls where S*T_out +
     * D*K + P_L passes INT_MAX are not its (they fit in positions: T_out under 2^31 - 128) */
    d = desc_of(&gcases_gemm[0]);
    d.x_layout = d.y_layout = WS_NLC, d.c_in = 32, d.stride = 2, d.pre = WS_ACT_NONE;
    d.x_type = d.w_type = d.y_type = WS_F32, d.math = WS_MATH_F32;
    cr_assert(ws_gemm_ffma_cl(&d));
    const int big = INT_MAX / 2 + 100; /* 2*big > INT_MAX, big positions < 2^31 - BN */
    cr_assert(ws_gemm_call_fits(&d, 1, 1000));
    cr_assert(!ws_gemm_call_fits(&d, 1, big), "T_out %d at stride 2 taken by the channel lanes", big);
    d.x_layout = WS_NCL; /* no channel lanes: only the positions' bound */
    cr_assert(!ws_gemm_ffma_cl(&d));
    cr_assert(ws_gemm_call_fits(&d, 1, big));
}

/* The gemm kernel's mapping (ptx_gemm.h), run in C: every block and thread as the PTX
 * computes them, its loads into a two-stage shared memory model (As[BK][BM+4], Bs[BK][BN]),
 * the multiply's reads and the epilogue's stores. Asserts that every load inside the tile
 * is x's or w's element by its index formula (checked independently from (n, j, u) and
 * (o, j, k)), that each shared cell a stage multiplies was stored for that stage, that every
 * output element is written exactly once at y's index of its (n, o, t), and that the sums
 * equal the CPU engine's within float32 rounding. */
#define GM_BN WS_GEMM_BN
#define GM_BK WS_GEMM_BK
static void gemm_model_case(const gcase *c)
{
    const ws_conv_desc d = desc_of(c);
    cr_assert(ws_gemm_fits(&d), "%s", c->name);
    const int GM_BM = ws_gemm_bm(&d), GM_AS = GM_BM + 4, TM = GM_BM / 16, km = ws_gemm_ffma_kmajor(&d);
    const int sw = c->yl == WS_NLC; /* the thread mapping of NLC y (ptx_gemm.h) */
    const int cl = ws_gemm_ffma_cl(&d); /* x by channel lanes */
    float *wp = NULL; /* the packed weights the kernel reads where ws_gemm_ffma_wpack */
    cr_assert(GM_BM == (c->c_out <= WS_GEMM_BM_SMALL ? WS_GEMM_BM_SMALL : WS_GEMM_BM));
    const int t_out = ws_conv_out_len(&d, c->t_in);
    cr_assert(ws_gemm_call_fits(&d, c->n, t_out), "%s", c->name);
    const long long R = (long long)c->c_in * c->k, P = (long long)c->n * t_out, KT = (R + GM_BK - 1) / GM_BK;
    const long long T_in = c->t_in, C_in = c->c_in, C_out = c->c_out, K = c->k;
    const size_t nx = (size_t)c->n * c->c_in * c->t_in, ny = (size_t)P * c->c_out, nw = (size_t)(C_out * R);
    ws_rng rng = {0x6e6d0000u + (uint64_t)c->c_in * 7 + (uint64_t)c->k};
    float *x = random_buf(nx, WS_F32, &rng), *w = random_buf(nw, WS_F32, &rng);
    if (ws_gemm_ffma_wpack(&d)) {
        cr_assert(km && d.c_out % 4 == 0, "%s", c->name);
        wp = malloc(nw * sizeof *wp);
        cr_assert(wp);
        ws_gemm_ffma_weights(&d, w, wp);
    }
    float *b = c->bias ? random_buf((size_t)C_out, WS_F32, &rng) : NULL;
    float *y = malloc(ny * sizeof *y), *ycpu = malloc(ny * sizeof *ycpu);
    int *written = calloc(ny, sizeof *written);
    /* shared memory: the values and the stage index each cell was stored for */
    float *As = malloc(sizeof(float) * 2 * GM_BK * GM_AS), *Bs = malloc(sizeof(float) * 2 * GM_BK * GM_BN);
    long long *Ast = malloc(sizeof(long long) * 2 * GM_BK * GM_AS), *Bst = malloc(sizeof(long long) * 2 * GM_BK * GM_BN);
    float *acc = malloc(sizeof(float) * WS_GEMM_THREADS * 64);
    /* the _split entry's raw sums in the tile's order (ws_gemm_split_groups float4 groups a
     * thread, a tile of floats a block), and what the _fin entry writes from them */
    const int G = ws_gemm_split_groups(&d);
    const long long gx0 = (P + GM_BN - 1) / GM_BN, gy0 = (C_out + GM_BM - 1) / GM_BM;
    cr_assert_eq(G * WS_GEMM_THREADS * 4, GM_BM * GM_BN);
    float *parts = malloc(sizeof(float) * (size_t)(gx0 * gy0) * GM_BM * GM_BN);
    float *tparts = malloc(sizeof(float) * (size_t)(gx0 * gy0) * GM_BM * GM_BN); /* a launch's */
    int *fin_written = calloc(ny, sizeof *fin_written);
    cr_assert(y && ycpu && written && As && Bs && Ast && Bst && acc && parts && tparts && fin_written);
    memset(Ast, 0xff, sizeof(long long) * 2 * GM_BK * GM_AS); /* -1: never stored */
    memset(Bst, 0xff, sizeof(long long) * 2 * GM_BK * GM_BN);
    const long long gx = (P + GM_BN - 1) / GM_BN, gy = (C_out + GM_BM - 1) / GM_BM;
    for (long long by = 0; by < gy; by++)
        for (long long bx = 0; bx < gx; bx++) {
            const long long o0 = by * GM_BM, p0 = bx * GM_BN;
            memset(acc, 0, sizeof(float) * WS_GEMM_THREADS * 64);
            for (long long kt = 0; kt < KT; kt++) {
                const int st = (int)(kt & 1);
                for (int tid = 0; tid < WS_GEMM_THREADS; tid++) {
                    const long long r0 = kt * GM_BK;
                    /* A, packed W (ws_gemm_ffma_wpack): 16-byte chunk tid + 256e of the stage,
                     * row kk = chunk / (BM/4), channels o0 + 4(chunk % (BM/4)) .. + 3, from
                     * wp[(r0 + kk)*C_out + o], zeros past C_out */
                    for (int e = 0; wp && e < GM_BM * GM_BK / 4 / 256; e++) {
                        const int ch = tid + 256 * e, kk = ch / (GM_BM / 4), oc = 4 * (ch % (GM_BM / 4));
                        for (int q = 0; q < 4; q++) {
                            const long long o = o0 + oc + q, r = r0 + kk;
                            float v = 0;
                            if (o < C_out) {
                                const long long k = r / C_in, j = r % C_in;
                                cr_assert_eq(wp[r * C_out + o], w[(o * C_in + j) * K + k], "%s: packed w", c->name);
                                v = wp[r * C_out + o];
                            }
                            const int cell = st * GM_BK * GM_AS + kk * GM_AS + oc + q;
                            As[cell] = v;
                            Ast[cell] = kt;
                        }
                    }
                    /* A: W[o0 + tid/8 + 32e][r0 + tid%8] -> As[tid%8][tid/8 + 32e] */
                    for (int e = 0; !wp && e < GM_BM * GM_BK / 256; e++) {
                        const long long o = o0 + tid / GM_BK + 256 / GM_BK * e, r = r0 + tid % GM_BK;
                        float v = 0;
                        if (o < C_out && r < R) {
                            /* the kernel's &W[o][0] + 4r, or k-major (r = k*C_in + j, a stage one
                             * tap): + 4((j0 + tid%BK)*K + k) with r0 = k*C_in + j0 */
                            long long wi = o * R + r, j = r / K, k = r % K;
                            if (km) {
                                const long long k0 = r0 / C_in, j0 = r0 - k0 * C_in;
                                wi = o * R + (j0 + tid % GM_BK) * K + k0;
                                j = r % C_in, k = r / C_in;
                            }
                            cr_assert_eq(wi, (o * C_in + j) * K + k, "%s: w index", c->name);
                            v = w[wi];
                        }
                        const int cell = st * GM_BK * GM_AS + (tid % GM_BK) * GM_AS + tid / GM_BK + 256 / GM_BK * e;
                        As[cell] = v;
                        Ast[cell] = kt;
                    }
                    /* B: X[r0 + tid/128 + 2e][p0 + tid%128] -> Bs[tid/128 + 2e][tid%128]; k-major
                     * rows (tid/128)*nb + e; channel lanes (cl) rows 4(tid%4) + e%4 of positions
                     * tid/4 + 64(e/4) (the cells as the multiply reads them: the swizzle of the
                     * stores is undone by the reads) */
                    const int nb = GM_BK * GM_BN / 256;
                    for (int e = 0; e < nb; e++) {
                        const long long p = p0 + (cl ? tid / 4 + 64 * (e / 4) : tid % 128);
                        const unsigned pn = (unsigned)p / (unsigned)t_out, pt = (unsigned)p - pn * (unsigned)t_out;
                        const long long ub = (long long)pt * c->stride - c->pad_l;
                        const long long xn = (long long)pn * T_in * C_in;
                        const long long rr = cl ? 4 * (tid % 4) + e % 4 : km ? (tid / 128) * nb + e : tid / 128 + 2 * e;
                        const long long r = r0 + rr;
                        float v = 0;
                        if (r < R && p < P) {
                            unsigned j = (unsigned)r / (unsigned)K, k = (unsigned)r - j * (unsigned)K;
                            if (km)
                                k = (unsigned)r / (unsigned)C_in, j = (unsigned)r - k * (unsigned)C_in;
                            const long long u = (long long)((unsigned long long)k * (unsigned)c->dilation) + ub;
                            if ((unsigned long long)u < (unsigned long long)T_in) {
                                const long long off = c->xl == WS_NCL ? (long long)j * T_in + u : u * C_in + j;
                                const long long xi = xn + off;
                                /* the formula from (n, j, u), u = S*t + D*k - P_L */
                                const long long n = p / t_out, t = p % t_out;
                                const long long kk = km ? r / C_in : r % K;
                                const long long uu = c->stride * t + c->dilation * kk - c->pad_l;
                                cr_assert_eq(u, uu, "%s: u", c->name);
                                cr_assert_eq(j, km ? r % C_in : r / K);
                                const long long ref = c->xl == WS_NCL ? (n * C_in + j) * T_in + uu
                                                                      : (n * T_in + uu) * C_in + j;
                                cr_assert_eq(xi, ref, "%s: x index of r %lld p %lld", c->name, r, p);
                                cr_assert(xi >= 0 && (size_t)xi < nx);
                                v = x[xi];
                                if (c->pre == WS_ACT_RELU)
                                    v = v > 0 ? v : 0;
                            }
                        }
                        const int cell = st * GM_BK * GM_BN + (int)rr * GM_BN + (int)(p - p0);
                        Bs[cell] = v;
                        Bst[cell] = kt;
                    }
                }
                /* the multiply of stage st */
                for (int tid = 0; tid < WS_GEMM_THREADS; tid++) {
                    /* NLC y: ty along channels, from tid % 16 */
                    const int ty = sw ? tid % 16 : tid / 16, tx = sw ? tid / 16 : tid % 16;
                    for (int kk = 0; kk < GM_BK; kk++)
                        for (int i = 0; i < TM; i++)
                            for (int j = 0; j < 8; j++) {
                                const int ac = st * GM_BK * GM_AS + kk * GM_AS + 4 * ty + 64 * (i / 4) + i % 4;
                                const int bc = st * GM_BK * GM_BN + kk * GM_BN + 4 * tx + 64 * (j / 4) + j % 4;
                                cr_assert(Ast[ac] == kt && Bst[bc] == kt, "%s: stale shared cell", c->name);
                                acc[tid * 64 + i * 8 + j] = fmaf(As[ac], Bs[bc], acc[tid * 64 + i * 8 + j]);
                            }
                }
            }
            /* the _split entry's store: group g of thread tid is 4 consecutive elements of
             * y, NLC acc[4(g/8) + c][g%8], NCL acc[g/2][4(g%2) + c] */
            for (int tid = 0; tid < WS_GEMM_THREADS; tid++)
                for (int g = 0; g < G; g++)
                    for (int q = 0; q < 4; q++) {
                        const int ai = sw ? (4 * (g / 8) + q) * 8 + g % 8 : (g / 2) * 8 + 4 * (g % 2) + q;
                        parts[(((by * gx + bx) * G + g) * WS_GEMM_THREADS + tid) * 4 + q] = acc[tid * 64 + ai];
                    }
            /* the epilogue */
            for (int tid = 0; tid < WS_GEMM_THREADS; tid++) {
                const int ty = sw ? tid % 16 : tid / 16, tx = sw ? tid / 16 : tid % 16;
                for (int j = 0; j < 8; j++) {
                    const long long p = p0 + 4 * tx + 64 * (j / 4) + j % 4;
                    if (p >= P)
                        continue;
                    const long long n = p / t_out, t = p - n * t_out;
                    for (int i = 0; i < TM; i++) {
                        const long long o = o0 + 4 * ty + 64 * (i / 4) + i % 4;
                        if (o >= C_out)
                            continue;
                        const long long off = c->yl == WS_NCL ? o * t_out + t : t * C_out + o;
                        const long long yi = n * C_out * t_out + off;
                        const long long ref = c->yl == WS_NCL ? (n * C_out + o) * t_out + t
                                                              : (n * t_out + t) * C_out + o;
                        cr_assert_eq(yi, ref, "%s: y index", c->name);
                        written[yi]++;
                        y[yi] = acc[tid * 64 + i * 8 + j] + (b ? b[o] : 0.0f);
                    }
                }
            }
        }
    for (size_t i = 0; i < ny; i++)
        cr_assert_eq(written[i], 1, "%s: y[%zu] written %d times", c->name, i, written[i]);
    /* the _fin entry (one part): block f = tile*G + g, thread tid, its group's first (o, p) as
     * the PTX works them out, then 4 channels (NLC) or 4 positions (NCL): each output once,
     * the value the whole sum's epilogue wrote. The launch's tiles along p from xoff on (the
     * tail of a call, gemm_tail: xoff > 0), the whole kernel's before them: between them each
     * output once */
    const long long xoffs[3] = { 0, gx0 / 2, gx0 - 1 };
    for (int xi = 0; xi < 3; xi++) {
        const long long xoff = xoffs[xi], tx0 = gx0 - xoff;
        if (xi && (xoff == 0 || xoff == xoffs[xi - 1]))
            continue;
        memset(fin_written, 0, ny * sizeof *fin_written);
        for (long long by = 0; by < gy0; by++) /* the whole kernel's tiles, bx < xoff */
            for (long long o = by * GM_BM; o < (by + 1) * GM_BM && o < C_out; o++)
                for (long long pc = 0; pc < xoff * GM_BN && pc < P; pc++) {
                    const long long n = pc / t_out, t = pc - n * t_out;
                    fin_written[c->yl == WS_NCL ? (n * C_out + o) * t_out + t : (n * t_out + t) * C_out + o]++;
                }
        /* the _split launch, grid (tx0, gy0): block (cx, cy) sums the tile at p0 = (cx + xoff)*BN,
         * o0 = cy*BM (the whole grid's tile (cx + xoff, cy), whose sums `parts` holds), and
         * stores group g of thread tid at float4 ((cy*tx0 + cx)*G + g)*256 + tid */
        for (long long cy = 0; cy < gy0; cy++)
            for (long long cx = 0; cx < tx0; cx++) {
                const long long p0 = (cx + xoff) * GM_BN, src = (cy * gx0 + p0 / GM_BN) * G;
                const long long dst = (cy * tx0 + cx) * G;
                memcpy(tparts + dst * WS_GEMM_THREADS * 4, parts + src * WS_GEMM_THREADS * 4,
                       sizeof(float) * (size_t)G * WS_GEMM_THREADS * 4);
            }
        for (long long f = 0; f < tx0 * gy0 * G; f++)
            for (int tid = 0; tid < WS_GEMM_THREADS; tid++) {
                const long long tile = f / G, g = f % G, fy = tile / tx0, fx = tile % tx0 + xoff;
                const int ty = sw ? tid & 15 : tid >> 4, tx = sw ? tid >> 4 : tid & 15;
                long long o = fy * GM_BM + 4 * ty + 64 * (g >> 3), q = fx * GM_BN + 4 * tx;
                if (sw)
                    q += 16 * (g & 4) + (g & 3);
                else
                    o += (g >> 1) & 3, q += 64 * (g & 1);
                for (int e = 0; e < 4; e++) {
                    const long long oc = o + (sw ? e : 0), pc = q + (sw ? 0 : e);
                    if (oc >= C_out || pc >= P)
                        continue;
                    const long long n = pc / t_out, t = pc - n * t_out;
                    const long long yi = c->yl == WS_NCL ? (n * C_out + oc) * t_out + t : (n * t_out + t) * C_out + oc;
                    const float v = tparts[(f * WS_GEMM_THREADS + tid) * 4 + e] + (b ? b[oc] : 0.0f);
                    cr_assert_eq(v, y[yi], "%s: _fin's y[%lld] %.9g, the epilogue's %.9g", c->name, yi, v, y[yi]);
                    fin_written[yi]++;
                }
            }
        for (size_t i = 0; i < ny; i++)
            cr_assert_eq(fin_written[i], 1, "%s: _fin from tile %lld writes y[%zu] %d times", c->name, xoff, i,
                         fin_written[i]);
    }
    /* the sums: the CPU engine with act NONE and no add (the model's epilogue stops at + b) */
    ws_conv_desc dc = d;
    dc.x_type = dc.w_type = dc.y_type = WS_F32;
    dc.act = WS_ACT_NONE;
    dc.pre = c->pre == WS_ACT_RELU ? WS_ACT_RELU : WS_ACT_NONE;
    ws_err e = {""};
    ws_conv *cpu = ws_conv_new(&dc, w, b, 1, &e);
    cr_assert_not_null(cpu, "%s: %s", c->name, e.msg);
    ws_conv_args a = {.n = c->n, .t_in = c->t_in, .x = x, .y = ycpu};
    cr_assert_eq(ws_conv_run(cpu, &a, &e), 0, "%s: %s", c->name, e.msg);
    ws_conv_free(cpu);
    double scale = 0;
    for (size_t i = 0; i < ny; i++)
        scale = fmax(scale, fabs(ycpu[i]));
    for (size_t i = 0; i < ny; i++)
        cr_assert(fabs(y[i] - ycpu[i]) <= 1e-5 * scale, "%s: y[%zu] model %.9g, CPU %.9g", c->name, i, y[i],
                  ycpu[i]);
    free(x), free(w), free(wp), free(b), free(y), free(ycpu), free(written);
    free(As), free(Bs), free(Ast), free(Bst), free(acc), free(parts), free(fin_written);
}

Test(gpu_conv_ptx, gemm_mapping_model_writes_every_output_once_from_the_right_elements, .timeout = 300)
{
    for (int i = 0; i < N_GCASES; i++)
        gemm_model_case(&gcases_gemm[i]);
}

Test(gpu_conv, gemm_matches_the_cpu_engine_and_the_direct_kernel, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    gemm_split_cases = 0;
    for (int i = 0; i < N_GCASES; i++)
        run_case(g, &gcases_gemm[i], 2);
    /* small calls leave multiprocessors idle: the FFMA kernel's sum in parts (_split, _fin) */
    cr_assert_geq(gemm_split_cases, 5, "only %d gemm rows summed in parts", gemm_split_cases);
    ws_gpu_close(g);
}

/* The FFMA GEMM's last tiles in parts (gemm_tail in gpu_conv.c): calls of more blocks than
 * the device's slots (two a multiprocessor) whose last wave is short run their last tiles
 * along positions through the _split and _fin entries (a launch from tile p_xoff on), the
 * others through the kernel. Three rows sized from the device's multiprocessors, each with
 * a short last wave, the tail forced into 3 parts: NCL with 96 channels (one row of 128-row
 * tiles), NLC at stride 2 with 200 (two rows of tiles, an add per item), and the 64-row tile
 * (C_out 48, K 5) into NLC; run_case holds each to the CPU engine, the direct kernel, the
 * whole sum (ws_gpu_conv_no_split) and its own bits run again. A fourth row, the first
 * at the automatic choice, runs the same checks whichever way gemm_tail takes it. */
Test(gpu_conv, gemm_tail_in_parts_matches_the_whole_sum_and_the_cpu_engine, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    const int slots = 2 * (g->sms > 0 ? g->sms : 1), extra = slots / 8 + 1;
    gcase rows[4] = {
        {"tail_ncl_c80_o96_k3_gelu", 2, 80, 96, 1, 3, 1, 1, 1, 1, 0, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, WS_ACT_NONE, WS_ACT_GELU, 1, ADD_NONE},
        {"tail_nlc_c96_o200_k3_s2_silu", 3, 96, 200, 1, 3, 2, 1, 1, 1, 0, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, WS_ACT_NONE, WS_ACT_SILU, 1, ADD_PER_ITEM},
        {"tail_ncl_nlc_c64_o48_k5_relu", 1, 64, 48, 1, 5, 1, 1, 2, 2, 0, WS_NCL, WS_NLC, WS_F32, WS_F32, WS_F32, WS_ACT_NONE, WS_ACT_RELU, 0, ADD_BROADCAST},
        {"tail_ncl_c80_o96_k3_gelu_auto", 2, 80, 96, 1, 3, 1, 1, 1, 1, 0, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, WS_ACT_NONE, WS_ACT_GELU, 1, ADD_NONE},
    };
    /* positions P = N*T_out for the blocks wanted: gx = ceil(P / BN) tiles along p */
    rows[0].t_in = rows[3].t_in = (WS_GEMM_BN * (slots + extra) - 10) / 2; /* gx = slots + extra */
    rows[1].t_in = 2 * ((WS_GEMM_BN * (slots / 2 + (extra + 1) / 2) - 50) / 3); /* 2 (slots/2 + ..) */
    rows[2].t_in = WS_GEMM_BN * (slots + extra) - 3;
    gemm_split_cases = gemm_tail_cases = 0;
    run_tail_parts = 3;
    for (int i = 0; i < 3; i++) {
        const ws_conv_desc d = desc_of(&rows[i]);
        const int t_out = ws_conv_out_len(&d, rows[i].t_in);
        const long long gx = ((long long)rows[i].n * t_out + WS_GEMM_BN - 1) / WS_GEMM_BN;
        const long long blocks = gx * ((rows[i].c_out + ws_gemm_bm(&d) - 1) / ws_gemm_bm(&d));
        cr_assert(blocks > slots && blocks % slots != 0 && blocks % slots <= slots / 4, "%s: %lld blocks, %d slots",
                  rows[i].name, blocks, slots);
        run_case(g, &rows[i], 2);
    }
    cr_assert_eq(gemm_tail_cases, 3, "%d of 3 rows ran their last tiles in parts", gemm_tail_cases);
    run_tail_parts = 0;
    run_case(g, &rows[3], 2);
    ws_gpu_close(g);
}

/* The FFMA GEMM's sum in slices inside each block (the _slice entry, ws_gemm_slice_fits: a
 * call whose 128 x 128 tiles fill at most half the block slots, cut into 96 x 48 tiles whose
 * blocks sum four runs of the stages of r, or 96 x 96 in two, and add them in order): the
 * Whisper tiny stem's two
 * convs at one window (channel-major log-Mel into NLC, NLC at stride 2 with an add), NCL at
 * stride 2 with dilation, asymmetric padding and C_out 100 (a partial row of tiles, items
 * across tiles), NLC into NCL y with a broadcast add, and four more NLC y: C_out 200 with a
 * broadcast add over three items, f16 y with an add per item, C_out 36 on the 96 x 96 tile,
 * and 700 items of 7 positions. Each NLC y row runs again with y 4 (f16: 2) bytes off an
 * aligned allocation, which the groups' vector stores do not take: the same bits, and no
 * byte written around y.
 * run_case holds each to the CPU
 * engine, the direct kernel, the whole sum, the sum in parts and its own bits run again;
 * each row takes the slices where the device's multiprocessors make it a small call. */
Test(gpu_conv, gemm_slices_match_the_whole_sum_and_the_cpu_engine, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    const int sms = g->sms > 0 ? g->sms : 1;
    const gcase rows[] = {
        {"slice_tiny_conv1_ncl_nlc_gelu", 1, 80, 384, 1, 3, 1, 1, 1, 1, 3000, WS_NCL, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_GELU, 1, ADD_NONE},
        {"slice_tiny_conv2_nlc_s2_gelu_add", 1, 384, 384, 1, 3, 2, 1, 1, 1, 3000, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_GELU, 1,
         ADD_PER_ITEM},
        {"slice_ncl_c32_o100_k5_s2_d2_asym", 3, 32, 100, 1, 5, 2, 2, 4, 3, 1100, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, 0, WS_ACT_SILU, 1,
         ADD_NONE},
        {"slice_nlc_ncl_c64_o64_k3_bcast", 2, 64, 64, 1, 3, 1, 1, 1, 1, 2500, WS_NLC, WS_NCL, WS_F32, WS_F32, WS_F32, 0, WS_ACT_RELU, 0,
         ADD_BROADCAST},
        /* NLC y in vectors: C_out 200 (a block's last channels out of range), three items of
         * 700 positions (a block's positions cross items; the broadcast add's t wraps) */
        {"slice_nlc_nlc_c64_o200_k3_bcast_n3", 3, 64, 200, 1, 3, 1, 1, 1, 1, 700, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_GELU, 1,
         ADD_BROADCAST},
        /* f16 y, an add per item across two items */
        {"slice_nlc_nlc_c64_o100_k3_s2_f16_item_n2", 2, 64, 100, 1, 3, 2, 1, 1, 1, 2100, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F16, 0, WS_ACT_GELU,
         1, ADD_PER_ITEM},
        /* the 96 x 96 tile (2 slices of 128 threads) with NLC x and y: C_out 36, an add per item */
        {"slice_nlc_nlc_c64_o36_k3_item_n2", 2, 64, 36, 1, 3, 1, 1, 1, 1, 4000, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_GELU, 1,
         ADD_PER_ITEM},
        /* 700 items of T_out 7: a thread's step of 10 positions wraps t more than once */
        {"slice_nlc_nlc_c64_o96_k3_t7_bcast", 700, 64, 96, 1, 3, 1, 1, 1, 1, 7, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_GELU, 1,
         ADD_BROADCAST},
    };
    const int nrows = (int)(sizeof rows / sizeof rows[0]);
    int expect = 0;
    gemm_slice_cases = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const ws_conv_desc d = desc_of(&rows[i]);
        cr_assert(ws_gemm_slice_fits(&d), "%s: no _slice entry", rows[i].name);
        const long long p = (long long)rows[i].n * ws_conv_out_len(&d, rows[i].t_in);
        const long long big = (p + WS_GEMM_BN - 1) / WS_GEMM_BN * ((d.c_out + ws_gemm_bm(&d) - 1) / ws_gemm_bm(&d));
        int fills = 0; /* a variant's grid one wave at least half full */
        for (int v = 0; v < WS_GEMM_SLICE_VARIANTS; v++) {
            const long long blocks = (p + ws_gemm_slice_bn(v) - 1) / ws_gemm_slice_bn(v) *
                                     ((d.c_out + WS_GEMM_SLICE_BM - 1) / WS_GEMM_SLICE_BM);
            fills |= blocks <= sms && 2 * blocks >= sms;
        }
        expect += big <= sms && fills; /* gemm_parts cuts it, gemm_slice takes it */
        run_keep_y = 1;
        run_case(g, &rows[i], 2);
        if (d.y_layout == WS_NLC) { /* y off the vectors' alignment: the groups element by element */
            void *aligned_y = run_kept_y;
            run_kept_y = NULL;
            expect += big <= sms && fills;
            run_y_skew = tsize(rows[i].yt);
            run_case(g, &rows[i], 2);
            run_y_skew = 0;
            cr_assert(!memcmp(aligned_y, run_kept_y, run_kept_bytes), "%s: y off alignment, other bits", rows[i].name);
            free(aligned_y);
        }
        run_keep_y = 0;
        free(run_kept_y);
        run_kept_y = NULL;
    }
    /* on compute capability 9.0 (227 KiB of shared memory a block: both variants load) the
     * rows that gemm_slice takes by their size, at least one; elsewhere a variant may not
     * load (99 KiB a block on 8.6 / 8.9), and the rows run in parts, checked all the same */
    if (g->cc_major == 9) {
        cr_assert_geq(expect, 1, "no row in slices on %d multiprocessors", sms);
        cr_assert_eq(gemm_slice_cases, expect, "%d of %d rows summed in slices", gemm_slice_cases, expect);
    }
    cr_log_info("%d runs in slices (%d rows) on %d multiprocessors (%d by their size)", gemm_slice_cases, nrows, sms,
                expect);
    ws_gpu_close(g);
}

/* --- the gemm kernel on tensor cores (ptx_gemm.h, TENSOR CORES) ------------------- */

#define N_MMA_MATHS 3
static const ws_math mma_maths[N_MMA_MATHS] = {WS_MATH_BF16, WS_MATH_F16, WS_MATH_TF32};
static const char *const mma_math_names[N_MMA_MATHS] = {"bf16", "f16", "tf32"};
/* the contract's bounds: rel L2 <= 1e-2 for f16 / bf16 math, 2e-3 for tf32 */
static const double mma_bounds[N_MMA_MATHS] = {1e-2, 1e-2, 2e-3};

Test(gpu_conv_ptx, every_mma_gemm_module_assembles_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    if (!WS_GEMM_MMA)
        cr_skip_test("the tensor-core gemm kernel is off (WS_GEMM_MMA 0)");
    const char *dir = test_tmpdir();
    const int ccs[][2] = {{9, 0}, {8, 0}};
    int lo = 1 << 30, hi = 0;
    for (int c = 0; c < 2; c++) {
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/mma%d", dir, ccs[c][0] * 10 + ccs[c][1]);
        cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
        for (int m = 0; m < N_MMA_MATHS; m++)
            for (int i = 0; i < N_GCASES; i++) {
                const gcase *gc = &gcases_gemm[i];
                ws_conv_desc d = desc_of(gc);
                d.math = mma_maths[m];
                cr_assert(ws_gemm_mma(&d), "%s: no mma kernel", gc->name);
                char name[WS_GEMM_NAME_MAX], want[16];
                ws_gemm_name(&d, name);
                snprintf(want, sizeof want, "_mma_%s_", mma_math_names[m]);
                cr_assert(strstr(name, want), "%s", name);
                const int regs = dump_and_assemble(ptxas, sub, &d, ccs[c], name, gc->name, 1);
                lo = regs < lo ? regs : lo;
                hi = regs > hi ? regs : hi;
                if (verbose())
                    fprintf(stderr, "gpu_conv_ptx mma %s %-36s sm_%d%d: %d registers\n", mma_math_names[m],
                            gc->name, ccs[c][0], ccs[c][1], regs);
            }
    }
    if (verbose())
        fprintf(stderr, "gpu_conv_ptx mma gemm: %d to %d registers\n", lo, hi);
}

/* the Hopper GEMM's modules (its kernel and staging entry) for every row it takes, on
 * sm_90a: no stack, no spills; it takes rows of each layout, type and the 64-channel blocks'
 * edges */
Test(gpu_conv_ptx, every_hopper_gemm_module_assembles_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/hgemm", dir);
    cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
    const int cc[2] = {9, 0};
    int n = 0, ncl = 0, staged = 0, partial = 0, small = 0, narrow = 0, cols = 0, pads = 0;
    for (int m = 0; m < N_MMA_MATHS; m++)
        for (int i = 0; i < N_GCASES; i++) {
            ws_conv_desc d = desc_of(&gcases_gemm[i]);
            d.math = mma_maths[m];
            const int fits = ws_hgemm_fits(&d, 9, 0);
            const int bkc = d.math == WS_MATH_TF32 ? 32 : 64;
            cr_assert_eq(ws_hgemm_bkc(&d), bkc);
            const int kt = d.k * ((d.c_in + bkc - 1) / bkc);
            const int tf32_ncl_short = d.math == WS_MATH_TF32 && d.x_layout == WS_NCL && (kt < 6 || d.c_out <= 64);
            cr_assert_eq(fits, WS_HGEMM && d.c_in % 16 == 0 && ws_gemm_mma_kmajor(&d) && d.stride <= 8 &&
                               kt >= WS_HGEMM_MIN_STAGES && d.c_out >= WS_HGEMM_MIN_COUT && !tf32_ncl_short,
                         "%s", gcases_gemm[i].name);
            cr_assert(!ws_hgemm_fits(&d, 8, 0) && !ws_hgemm_fits(&d, 10, 0), "%s", gcases_gemm[i].name);
            /* a short conv through its columns (ptx_hcol.h): the columns' module and the inner
             * conv's Hopper GEMM, whose sum may be a stage or two */
            const int col = ws_hcol_fits(&d, 9, 0);
            const int base = WS_HGEMM && d.c_in % 16 != 0 && d.c_out >= WS_HGEMM_MIN_COUT && d.stride <= 8;
            cr_assert(d.c_in * d.k <= WS_HCOL_R_MAX ? col == base : col <= base, "%s", gcases_gemm[i].name);
            pads += col && ws_hcol_pad(&d);
            cr_assert(!(col && fits) && !ws_hcol_fits(&d, 8, 0), "%s", gcases_gemm[i].name);
            if (col) {
                char cname[WS_HCOL_NAME_MAX], iname[WS_HGEMM_NAME_MAX], path[2048];
                ws_hcol_name(&d, cname);
                dump_and_assemble(ptxas, sub, &d, cc, cname, gcases_gemm[i].name, 2);
                ws_conv_desc in;
                ws_hcol_inner(&d, &in);
                cr_assert(ws_hgemm_emits(&in) &&
                              (ws_hcol_pad(&d) ? in.k == d.k && in.c_in == (d.c_in + 15) / 16 * 16 && ws_hgemm_fits(&in, 9, 0)
                                               : in.k == 1 && in.c_in == (d.c_in * d.k + 15) / 16 * 16),
                          "%s", gcases_gemm[i].name);
                ws_hgemm_name(&in, iname);
                snprintf(path, sizeof path, "%s/%s.ptx", sub, iname);
                const int regs = assemble(ptxas, path, 90, gcases_gemm[i].name, 2);
                if (verbose())
                    fprintf(stderr, "gpu_conv_ptx hgemm %s %-36s: columns, inner C_in %d, %d registers\n",
                            mma_math_names[m], gcases_gemm[i].name, in.c_in, regs);
                cols++;
            }
            if (!fits)
                continue;
            char name[WS_HGEMM_NAME_MAX];
            ws_hgemm_name(&d, name);
            const int regs = dump_and_assemble(ptxas, sub, &d, cc, name, gcases_gemm[i].name, 2);
            ws_hgemm_cfg q;
            ws_hgemm_cfg_of(&d, &q);
            cr_assert_eq(ws_hgemm_small(&d), kt <= WS_HGEMM_SMALL_KT, "%s", gcases_gemm[i].name);
            cr_assert_eq(q.bn, ws_hgemm_small(&d) ? WS_HGEMM_BN_S : WS_HGEMM_BN);
            /* the tile's launch bounds (two blocks of the small tile an SM) */
            char *text = ws_hgemm_emit(&d, &(ws_err){""}), want[64];
            snprintf(want, sizeof want, ".maxntid %d, 1, 1\n.minnctapersm %d\n.maxnreg %d", q.threads, q.minb,
                     q.maxnreg);
            cr_assert(text && strstr(text, want), "%s: no \"%s\"", gcases_gemm[i].name, want);
            free(text);
            small += ws_hgemm_small(&d);
            /* the narrow tile exactly where the small tile's sums have C_out <= 64 */
            cr_assert_eq(q.bm, ws_hgemm_small(&d) && d.c_out <= 64 ? 64 : 128, "%s", gcases_gemm[i].name);
            narrow += q.bm == 64;
            if (verbose())
                fprintf(stderr, "gpu_conv_ptx hgemm %s %-36s: %d registers, tile %dx%d\n", mma_math_names[m],
                        gcases_gemm[i].name, regs, q.bm, q.bn);
            n++;
            ncl += d.x_layout == WS_NCL;
            staged += ws_hgemm_staged(&d);
            partial += d.c_in % bkc != 0;
        }
    cr_assert(WS_HGEMM == 0 || (n >= 15 && ncl >= 6 && staged >= 10 && partial >= 6 && small >= 6 && n - small >= 8 &&
                                narrow >= 8),
              "%d modules (%d NCL, %d staged, %d with a partial channel block, %d on the small tile, %d narrow)", n,
              ncl, staged, partial, small, narrow);
    cr_assert(WS_HGEMM == 0 || (cols >= 24 && pads >= 9), "%d rows through their columns (%d padded channels)",
              cols, pads);
}

/* Xc on the host (ptx_hcol.h, THE COLUMNS; PADDED CHANNELS): the "_col" entry's values for
 * one item (x the item's, in x_type and x_layout; xc [T_out][RP], or [T_in][CP], float32,
 * rounded to the math type) */
static void host_columns(const ws_conv_desc *d, const void *x, int t_in, int t_out, float *xc)
{
    const int pad = ws_hcol_pad(d), K = pad ? 1 : d->k, C = d->c_in, R = C * K;
    const int RP = pad ? ws_hcol_cp(d) : ws_hcol_rp(d), P = pad ? t_in : t_out;
    for (int t = 0; t < P; t++)
        for (int r = 0; r < RP; r++) {
            float v = 0.0f;
            if (r < R) {
                const int j = r / K, k = r % K;
                const long long u = pad ? t : (long long)d->stride * t + (long long)d->dilation * k - d->pad_l;
                if (u >= 0 && u < t_in) {
                    const size_t i = d->x_layout == WS_NCL ? (size_t)j * (size_t)t_in + (size_t)u
                                                           : (size_t)u * (size_t)C + (size_t)j;
                    v = (float)get(x, d->x_type, i);
                    ws_act_row(&v, 1, NULL, d->pre);
                }
            }
            xc[(size_t)t * RP + r] = d->math == WS_MATH_TF32   ? ws_f32_to_tf32(v)
                                     : d->math == WS_MATH_BF16 ? ws_bf16_to_f32(ws_f32_to_bf16(v))
                                                               : ws_f16_to_f32(ws_f32_to_f16(v));
        }
}

/* n values of type t, each a multiple of 1/den in [-8/den, 8/den]: exact in every storage and
 * math type, so that sums of up to 64 such products are exact in float32 */
static void *exact_buf(size_t n, ws_dtype t, double den, ws_rng *r)
{
    void *p = malloc(n * tsize(t) + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        const float v = (float)((double)((int)(ws_rng_uniform(r) * 17.0) - 8) / den);
        if (t == WS_F32)
            ((float *)p)[i] = v;
        else
            ((uint16_t *)p)[i] = t == WS_F16 ? ws_f32_to_f16(v) : ws_f32_to_bf16(v);
    }
    return p;
}

/* the columns (ptx_hcol.h) on the CPU engine: the inner conv (K 1 over host_columns' Xc
 * with ws_hcol_weights' W') gives the conv's own y. With values exact in every type and pre
 * NONE or RELU the two are the same bits (their sums are exact, in any order); with another
 * pre, Xc holds the math type's rounding of pre(x), within that type's bound. Every gemm row
 * the columns or padded channels take, every math: the layout the "_col" and "_wpad" entries
 * are to write (the GPU tests hold the kernels themselves to the CPU engine) */
Test(gpu_conv_ptx, a_short_convs_columns_give_its_output_on_the_cpu_engine)
{
    int rows = 0, exact = 0, pads = 0;
    for (int m = 0; m < N_MMA_MATHS; m++)
        for (int i = 0; i < N_GCASES; i++) {
            const gcase *c = &gcases_gemm[i];
            ws_conv_desc d = desc_of(c);
            d.math = mma_maths[m];
            if (!ws_hcol_fits(&d, 9, 0) || c->add == ADD_INPUT) /* the columns take no ADD_INPUT row */
                continue;
            ws_err e = {""};
            const int pad = ws_hcol_pad(&d), t_out = ws_conv_out_len(&d, c->t_in);
            const int RP = pad ? ws_hcol_cp(&d) : ws_hcol_rp(&d), P = pad ? c->t_in : t_out; /* Xc: [P][RP] */
            const size_t nx = (size_t)c->n * c->c_in * c->t_in, per = (size_t)c->c_out * t_out;
            const size_t ny = per * c->n, nw = (size_t)c->c_out * c->c_in * c->k;
            ws_rng r = {0x51c0000u + (uint64_t)i * 17 + (uint64_t)m};
            void *x = exact_buf(nx, c->xt, 4.0, &r), *w = exact_buf(nw, c->wt, 16.0, &r);
            float *b = c->bias ? exact_buf((size_t)c->c_out, WS_F32, 4.0, &r) : NULL;
            const size_t nadd = c->add == ADD_BROADCAST ? per : c->add == ADD_PER_ITEM ? ny : 0;
            void *add = nadd ? exact_buf(nadd, c->yt, 4.0, &r) : NULL;
            long long abs = c->add == ADD_PER_ITEM ? (long long)per : 0;
            void *y1 = malloc(ny * tsize(c->yt)), *y2 = malloc(ny * tsize(c->yt));
            cr_assert(y1 && y2);
            ws_conv *p1 = ws_conv_new(&d, w, b, 1, &e);
            cr_assert_not_null(p1, "%s: %s", c->name, e.msg);
            ws_conv_args a1 = {.n = c->n, .t_in = c->t_in, .x = x, .add = add, .add_batch_stride = abs, .y = y1};
            cr_assert_eq(ws_conv_run(p1, &a1, &e), 0, "%s: %s", c->name, e.msg);
            ws_conv_free(p1);
            /* Xc in the inner x_type, item by item; W' in float32 */
            ws_conv_desc in;
            ws_hcol_inner(&d, &in);
            const int span = pad ? c->c_in : c->c_in * c->k; /* the real part of a row of RP */
            cr_assert((pad ? in.k == d.k && in.stride == d.stride && in.pad_l == d.pad_l
                           : in.k == 1 && in.stride == 1 && in.pad_l == 0) &&
                          in.c_in == RP && RP % 16 == 0 && RP >= span && RP < span + 16 && in.x_layout == WS_NLC &&
                          in.pre == WS_ACT_NONE && in.y_layout == d.y_layout && in.act == d.act,
                      "%s: inner descriptor", c->name);
            const size_t nwp = (size_t)c->c_out * RP * (pad ? c->k : 1);
            float *xf = malloc((size_t)P * RP * sizeof *xf), *wf = malloc(nw * sizeof *wf);
            float *wp = malloc(nwp * sizeof *wp);
            void *xc = malloc((size_t)c->n * P * RP * tsize(in.x_type));
            cr_assert(xf && wf && wp && xc);
            const size_t xi = (size_t)c->c_in * c->t_in * tsize(c->xt);
            for (int n = 0; n < c->n; n++) {
                host_columns(&d, (const char *)x + (size_t)n * xi, c->t_in, t_out, xf);
                for (size_t k = 0, at = (size_t)n * P * RP; k < (size_t)P * RP; k++, at++) {
                    if (in.x_type == WS_F32)
                        ((float *)xc)[at] = xf[k];
                    else
                        ((uint16_t *)xc)[at] = in.x_type == WS_F16 ? ws_f32_to_f16(xf[k]) : ws_f32_to_bf16(xf[k]);
                }
            }
            for (size_t k = 0; k < nw; k++)
                wf[k] = (float)get(w, c->wt, k);
            ws_hcol_weights(&d, wf, wp);
            for (int o = 0; o < c->c_out; o++)
                for (int q = span; q < RP; q++)
                    for (int k = 0; k < (pad ? c->k : 1); k++)
                        cr_assert(wp[((size_t)o * RP + q) * (pad ? c->k : 1) + k] == 0.0f, "%s: W' not zero past R",
                                  c->name);
            in.w_type = WS_F32;
            ws_conv *p2 = ws_conv_new(&in, wp, b, 1, &e);
            cr_assert_not_null(p2, "%s: %s", c->name, e.msg);
            ws_conv_args a2 = {.n = c->n, .t_in = P, .x = xc, .add = add, .add_batch_stride = abs, .y = y2};
            cr_assert_eq(ws_conv_run(p2, &a2, &e), 0, "%s: %s", c->name, e.msg);
            ws_conv_free(p2);
            if (d.pre == WS_ACT_NONE || d.pre == WS_ACT_RELU) {
                cr_assert(!memcmp(y1, y2, ny * tsize(c->yt)), "%s (%s): the columns' y differs", c->name,
                          mma_math_names[m]);
                exact++;
            } else {
                double se = 0, sr = 0;
                for (size_t k = 0; k < ny; k++) {
                    const double u = get(y1, c->yt, k), v = get(y2, c->yt, k);
                    se += (u - v) * (u - v), sr += u * u;
                }
                cr_assert_leq(sqrt(se / (sr > 0 ? sr : 1)), mma_bounds[m], "%s (%s)", c->name, mma_math_names[m]);
            }
            rows++;
            pads += pad;
            free(xf), free(wf), free(wp), free(xc), free(y1), free(y2), free(x), free(w), free(b), free(add);
        }
    cr_assert(rows >= 24 && exact >= 18 && pads >= 9, "%d rows through their columns (%d exact, %d padded channels)",
              rows, exact, pads);
}

/* deterministic sums: the only atomic is the tile loop's integer counter (the tiles the blocks
 * ask for), never a sum's */
Test(gpu_conv_ptx, hopper_gemm_module_is_deterministic_and_sums_without_atomics)
{
    ws_conv_desc d = desc_of(gcase_named("h_large_nlc_c256_o192_k7_add"));
    d.math = WS_MATH_BF16;
    ws_err e = {""};
    cr_assert(ws_hgemm_fits(&d, 9, 0));
    char *a = ws_hgemm_emit(&d, &e), *b = ws_hgemm_emit(&d, &e);
    cr_assert(a && b, "%s", e.msg);
    cr_assert_str_eq(a, b);
    char wins[80];
    ws_hgemm_cfg q;
    ws_hgemm_cfg_of(&d, &q);
    snprintf(wins, sizeof wins, "wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16", q.bn);
    cr_assert(strstr(a, ".target sm_90a") && strstr(a, "cp.async.bulk.tensor.3d") && strstr(a, wins) &&
              (strstr(a, "setmaxnreg.dec") == NULL) == ws_hgemm_small(&d) && strstr(a, "_prep("),
              "the Hopper GEMM's instructions");
    int atoms = 0;
    for (const char *p = strstr(a, "atom."); p; p = strstr(p + 1, "atom.")) {
        cr_assert(!strncmp(p, "atom.global.relaxed.gpu.add.u32", 31),
                  "an atomic in the Hopper GEMM other than its tile counter's: %.60s", p);
        atoms++;
    }
    cr_assert_eq(atoms, 0, "a block a tile: atomics %d", atoms); /* the large tile */
    cr_assert(!strstr(a, "\tred."), "a reduction in the Hopper GEMM");
    { /* the narrow tile's loop: one atomic, the next tile a block asks for */
        ws_conv_desc dn = desc_of(gcase_named("h_narrow_nlc_c64_o64_k3_d27_relu"));
        dn.math = WS_MATH_BF16;
        ws_hgemm_cfg qn;
        ws_hgemm_cfg_of(&dn, &qn);
        char *tn = ws_hgemm_emit(&dn, &e);
        cr_assert(tn && qn.loop && !q.loop, "%s", e.msg);
        const char *p = strstr(tn, "\tatom.");
        cr_assert(p && !strncmp(p + 1, "atom.global.relaxed.gpu.add.u32", 31) && !strstr(p + 1, "\tatom.") &&
                      !strstr(tn, "\tred."), "the narrow tile's atomics");
        free(tn);
    }
    free(a), free(b);
    d.math = WS_MATH_TF32;
    char *t = ws_hgemm_emit(&d, &e);
    ws_hgemm_cfg_of(&d, &q);
    snprintf(wins, sizeof wins, "m64n%dk8.f32.tf32.tf32", q.bn);
    cr_assert(t && strstr(t, wins) && strstr(t, "cvt.rna.tf32.f32"), "%s", e.msg);
    free(t);
    d.math = WS_MATH_F32;
    cr_assert(!ws_hgemm_fits(&d, 9, 0) && !ws_hgemm_emit(&d, &e) && strstr(e.msg, "Hopper GEMM"), "%s", e.msg);
}

Test(gpu_conv_ptx, mma_module_is_deterministic_and_not_for_f32_math)
{
    ws_conv_desc d = desc_of(&gcases_gemm[0]);
    ws_err e = {""};
    cr_assert(!ws_gemm_mma(&d), "f32 math on tensor cores");
    char *f = ws_gemm_emit(&d, 9, 0, &e);
    cr_assert(f && !strstr(f, "mma.sync"), "f32: %s", e.msg);
    free(f);
    if (!WS_GEMM_MMA)
        return;
    for (int m = 0; m < N_MMA_MATHS; m++) {
        d.math = mma_maths[m];
        cr_assert(ws_gemm_mma(&d));
        char *a = ws_gemm_emit(&d, 9, 0, &e), *b = ws_gemm_emit(&d, 8, 0, &e), *c = ws_gemm_emit(&d, 9, 0, &e);
        cr_assert(a && b && c, "%s", e.msg);
        cr_assert_str_eq(a, c);
        char name[WS_GEMM_NAME_MAX], entry[WS_GEMM_NAME_MAX + 32], ins[64], wins[80];
        ws_gemm_name(&d, name);
        snprintf(entry, sizeof entry, ".visible .entry %s(", name);
        cr_assert(strstr(a, entry) && strstr(b, entry), "no entry %s", name);
        snprintf(ins, sizeof ins, "mma.sync.aligned.%s.row.col.f32.%s.%s.f32",
                 mma_maths[m] == WS_MATH_TF32 ? "m16n8k8" : "m16n8k16", mma_math_names[m], mma_math_names[m]);
        snprintf(wins, sizeof wins, "wgmma.mma_async.sync.aligned.%s.f32.%s.%s",
                 mma_maths[m] == WS_MATH_TF32 ? "m64n128k8" : "m64n128k16", mma_math_names[m], mma_math_names[m]);
        cr_assert(strstr(b, ins) && !strstr(b, "wgmma"), "sm_80: no %s", ins);
        cr_assert(ws_gemm_wgmma(&d, 9, 0) && !ws_gemm_wgmma(&d, 8, 0) && !ws_gemm_wgmma(&d, 10, 0));
        cr_assert(strstr(a, wins) && strstr(a, ".target sm_90a") && !strstr(a, "mma.sync"), "sm_90: no %s", wins);
        cr_assert(!strstr(a, "atom.") && !strstr(b, "atom."), "an atomic in the mma gemm kernel");
        free(a), free(b), free(c);
    }
}

/* which modules load x 16 bytes at a time (ws_gemm_x_align 16): NLC x and C_in a multiple of
 * 16 (the mma kernel's and the FFMA kernel's k-major gather), and only those; their PTX has
 * the 16-byte x loads */
Test(gpu_conv_ptx, only_nlc_x_with_c_in_a_multiple_of_16_needs_16_byte_alignment)
{
    int vec = 0;
    for (int i = 0; i < N_GCASES; i++)
        for (int m = -1; m < N_MMA_MATHS; m++) {
            ws_conv_desc d = desc_of(&gcases_gemm[i]);
            d.math = m < 0 ? WS_MATH_F32 : mma_maths[m];
            const int want = (m < 0 || WS_GEMM_MMA) && d.x_layout == WS_NLC && d.c_in % 16 == 0;
            cr_assert_eq(ws_gemm_x_align(&d), want ? 16 : 1, "%s math %d", gcases_gemm[i].name, m);
            if (!want)
                continue;
            ws_err e = {""};
            char *t = ws_gemm_emit(&d, 8, 0, &e);
            cr_assert(t, "%s", e.msg);
            cr_assert(strstr(t, "16 at a time") && strstr(t, "ld.global.nc.v4."), "%s: no 16-byte x loads",
                      gcases_gemm[i].name);
            free(t);
            vec++;
        }
    cr_assert_geq(vec, 16, "only %d modules with 16-byte x loads", vec);
}

static int mma_hgemm_calls; /* calls run_mma_case saw go to the Hopper GEMM */
static int mma_mn_calls;    /* of them, with channel-first x read in place (the "_mn" entry) */
static int mma_p8_calls;    /* of them, with x staged by the 16-byte transpose (the "_prep8" entry) */
static int mma_col_calls;   /* of them, through the columns (ptx_hcol.h) */
static void *mma_last_y;    /* the GPU's y of run_mma_case's last call (malloc'd, replaced by the next) */

/* a gemm row with math mma_maths[m] on the GPU against the CPU engine (float32 products):
 * no NaN, rel L2 within the contract's bound for the math (float32 storage with bf16 math is
 * the hardest), two runs the same bits, the gemm kernel taken; with x_off, x starts that
 * many elements into its buffer, and a kernel that needs x aligned (ws_gemm_x_align) must
 * leave the call to the direct kernel */
static double run_mma_case(ws_gpu *g, const gcase *c, int m, int x_off, int y_off)
{
    ws_conv_desc d = desc_of(c);
    d.math = mma_maths[m];
    ws_err e = {""};
    const int t_out = ws_conv_out_len(&d, c->t_in);
    const size_t nx = (size_t)c->n * c->c_in * c->t_in, per = (size_t)c->c_out * t_out;
    const size_t ny = per * c->n, nw = (size_t)c->c_out * c->c_in * c->k;
    ws_rng r = {0x3a3a0000u + (uint64_t)c->n * 131 + (uint64_t)c->c_in * 7 + (uint64_t)c->k};
    void *x = random_buf(nx, c->xt, &r), *w = random_buf(nw, c->wt, &r);
    float *b = c->bias ? random_buf((size_t)c->c_out, WS_F32, &r) : NULL;
    size_t nadd = c->add == ADD_BROADCAST ? per : c->add == ADD_PER_ITEM ? ny : 0;
    void *add = nadd ? random_buf(nadd, c->yt, &r) : NULL;
    long long abs = c->add == ADD_PER_ITEM ? (long long)per : 0;
    if (c->add == ADD_INPUT) {
        add = x;
        abs = (long long)per;
    }
    const size_t ybytes = ny * tsize(c->yt);
    void *ycpu = malloc(ybytes), *ygpu = malloc(ybytes), *ygpu2 = malloc(ybytes), *poison = malloc(ybytes);
    cr_assert(ycpu && ygpu && ygpu2 && poison);
    memset(poison, 0xff, ybytes);

    ws_conv *cpu = ws_conv_new(&d, w, b, 1, &e);
    cr_assert_not_null(cpu, "%s: %s", c->name, e.msg);
    ws_conv_args ac = {.n = c->n, .t_in = c->t_in, .x = x, .add = add, .add_batch_stride = abs, .y = ycpu};
    cr_assert_eq(ws_conv_run(cpu, &ac, &e), 0, "%s: %s", c->name, e.msg);
    ws_conv_free(cpu);

    const uint64_t dxbuf = dev_alloc(g, (nx + (size_t)x_off) * tsize(c->xt));
    const uint64_t dybuf = dev_alloc(g, ybytes + (size_t)y_off * tsize(c->yt));
    const uint64_t dx = dxbuf + (uint64_t)x_off * tsize(c->xt), dy = dybuf + (uint64_t)y_off * tsize(c->yt);
    uint64_t dadd = 0, daddbuf = 0;
    cr_assert_eq(ws_gpu_upload(g, dx, x, nx * tsize(c->xt), &e), 0, "%s", e.msg);
    if (c->add == ADD_INPUT) {
        dadd = dx;
    } else if (add) { /* y_off elements into its buffer, as y */
        daddbuf = dev_alloc(g, (nadd + (size_t)y_off) * tsize(c->yt));
        dadd = daddbuf + (uint64_t)y_off * tsize(c->yt);
        cr_assert_eq(ws_gpu_upload(g, dadd, add, nadd * tsize(c->yt), &e), 0, "%s", e.msg);
    }
    ws_gpu_conv *gc = ws_gpu_conv_new(g, &d, w, b, &e);
    cr_assert_not_null(gc, "%s: %s", c->name, e.msg);
    ws_conv_args ag = {.n = c->n, .t_in = c->t_in, .x = as_ptr(dx), .add = dadd ? as_ptr(dadd) : NULL,
                       .add_batch_stride = abs, .y = as_ptr(dy)};
    /* the Hopper GEMM stages an x off 16-byte alignment and takes the call itself */
    const int hg = ws_gpu_conv_hgemm(gc, &ag);
    cr_assert_geq(hg, 0, "%s", c->name);
    const int want = hg || dx % (uint64_t)ws_gemm_x_align(&d) == 0 ? 2 : 0;
    const unsigned long hg_before = ws_gpu_conv_hgemm_calls(gc), mn_before = ws_gpu_conv_hgemm_mn_calls(gc);
    const unsigned long col_before = ws_gpu_conv_hgemm_col_calls(gc);
    /* a short conv on 9.0 runs through its columns, on the inner plan's Hopper GEMM */
    const int col = hg && !ws_hgemm_fits(&d, 9, 0) && ws_hcol_fits(&d, 9, 0);
    const unsigned long p8_before = ws_gpu_conv_hgemm_prep8_calls(gc);
    /* NCL x of the math type at stride 1 is read in place where the call allows it; else, where
     * it is staged, the 16-byte transpose takes it when its rows start 16-byte aligned */
    const int mn = hg && !col && ws_hgemm_mn_call(&d, ws_hgemm_lgtb(&d, t_out), c->t_in, dx);
    const int p8 = hg && !col && !mn && ws_hgemm_prep8_call(&d, c->t_in, dx);
    cr_assert_eq(ws_gpu_conv_kernel(gc, &ag), want, "%s: %s kernel expected", c->name, want ? "gemm" : "direct");
    void *outs[2] = {ygpu, ygpu2};
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s run %d: %s", c->name, run, e.msg);
        cr_assert_eq(ws_gpu_download(g, outs[run], dy, ybytes, &e), 0, "%s", e.msg);
    }
    cr_assert(!memcmp(ygpu, ygpu2, ybytes), "%s: two runs, different bits", c->name);
    if (hg) { /* the tile loop (the narrow tile; the others ignore the cap): every tile on one
               * block, and on three, the bits of the default grid */
        for (unsigned nb = 1; nb <= 3; nb += 2) {
            ws_gpu_conv_hgemm_blocks(gc, nb);
            cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
            cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s on %u blocks: %s", c->name, nb, e.msg);
            cr_assert_eq(ws_gpu_download(g, ygpu2, dy, ybytes, &e), 0, "%s", e.msg);
            cr_assert(!memcmp(ygpu, ygpu2, ybytes), "%s: its tiles on %u blocks, other bits", c->name, nb);
        }
        ws_gpu_conv_hgemm_blocks(gc, 0);
    }
    /* the runs launched the Hopper GEMM exactly when the plan said they would */
    const unsigned long hg_ran = ws_gpu_conv_hgemm_calls(gc) - hg_before;
    cr_assert_eq(hg_ran, hg && !col ? 4ul : 0ul, "%s: %lu of 4 runs on the Hopper GEMM, expected %d", c->name,
                 hg_ran, hg && !col ? 4 : 0);
    const unsigned long col_ran = ws_gpu_conv_hgemm_col_calls(gc) - col_before;
    cr_assert_eq(col_ran, col ? 4ul : 0ul, "%s: %lu of 4 runs through the columns, expected %d", c->name, col_ran,
                 col ? 4 : 0);
    mma_hgemm_calls += hg;
    mma_col_calls += col;
    const unsigned long mn_ran = ws_gpu_conv_hgemm_mn_calls(gc) - mn_before;
    cr_assert_eq(mn_ran, mn ? 4ul : 0ul, "%s: %lu of 4 runs read x in place, expected %d", c->name, mn_ran, mn ? 4 : 0);
    mma_mn_calls += mn;
    const unsigned long p8_ran = ws_gpu_conv_hgemm_prep8_calls(gc) - p8_before;
    cr_assert_eq(p8_ran, p8 ? 4ul : 0ul, "%s: %lu of 4 runs staged by _prep8, expected %d", c->name, p8_ran,
                 p8 ? 4 : 0);
    mma_p8_calls += p8;
    if (col) { /* the columns with other weights given per call, and through a clone of the plan */
        void *w2 = random_buf(nw, c->wt, &r);
        const uint64_t dw2 = dev_alloc(g, nw * tsize(c->wt));
        cr_assert_eq(ws_gpu_upload(g, dw2, w2, nw * tsize(c->wt), &e), 0, "%s", e.msg);
        ws_gpu_conv *g2 = ws_gpu_conv_new(g, &d, w2, b, &e); /* w2 padded on the host */
        cr_assert_not_null(g2, "%s: %s", c->name, e.msg);
        void *y3 = malloc(ybytes);
        cr_assert(y3);
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(g2, &ag, &e), 0, "%s (w2 at plan time): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, y3, dy, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_hgemm_col_calls(g2), 1ul, "%s: w2's plan not through its columns", c->name);
        ws_conv_args aw = ag; /* the first plan, w2 given per call (padded on the device, "_wpad") */
        aw.w = as_ptr(dw2);
        const unsigned long cb = ws_gpu_conv_hgemm_col_calls(gc);
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &aw, &e), 0, "%s (w2 per call): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dy, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_hgemm_col_calls(gc), cb + 1, "%s: w2 per call not through the columns", c->name);
        cr_assert(!memcmp(y3, ygpu2, ybytes), "%s: w2 per call, other bits than w2 at plan time", c->name);
        cr_assert(memcmp(ygpu, ygpu2, ybytes), "%s: w2 per call gave w's output", c->name);
        /* the next call without weights: the plan's own again */
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s (own w again): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dy, ybytes, &e), 0, "%s", e.msg);
        cr_assert(!memcmp(ygpu, ygpu2, ybytes), "%s: the plan's weights after a call's, other bits", c->name);
        ws_gpu_conv *cl = ws_gpu_conv_clone(gc, &e); /* its own inner plan and scratch */
        cr_assert_not_null(cl, "%s: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(cl, &ag, &e), 0, "%s (clone): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dy, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_hgemm_col_calls(cl), 1ul, "%s: the clone not through its columns", c->name);
        cr_assert(!memcmp(ygpu, ygpu2, ybytes), "%s: the clone's bits differ", c->name);
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(cl, &aw, &e), 0, "%s (clone, w2 per call): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dy, ybytes, &e), 0, "%s", e.msg);
        cr_assert(!memcmp(y3, ygpu2, ybytes), "%s: the clone with w2 per call, other bits", c->name);
        cr_assert_eq(ws_gpu_conv_hgemm_col_calls(cl), 2ul, "%s: the clone's call with w2 not through its columns",
                     c->name);
        ws_gpu_conv_free(cl);
        /* the plan after its clone is gone: its own W' buffer and inner plan still there */
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &aw, &e), 0, "%s (w2 per call, clone freed): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dy, ybytes, &e), 0, "%s", e.msg);
        cr_assert(!memcmp(y3, ygpu2, ybytes), "%s: w2 per call after the clone's free, other bits", c->name);
        cr_assert_eq(ws_gpu_upload(g, dy, poison, ybytes, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_conv_run(gc, &ag, &e), 0, "%s (own w, clone freed): %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_download(g, ygpu2, dy, ybytes, &e), 0, "%s", e.msg);
        cr_assert(!memcmp(ygpu, ygpu2, ybytes), "%s: own weights after the clone's free, other bits", c->name);
        ws_gpu_conv_free(g2);
        ws_gpu_release(g, dw2);
        free(w2), free(y3);
    }
    if (hg && !col) { /* the tile's blocks an SM (launch bounds and carveout): narrow 3, small 2, large 1 */
        const int bps = ws_gpu_conv_hgemm_blocks_per_sm(gc);
        ws_hgemm_cfg q;
        ws_hgemm_cfg_of(&d, &q);
        cr_assert(bps < 0 || bps == q.minb, "%s: %d blocks an SM, expected %d", c->name, bps, q.minb);
    }
    double se = 0, sr = 0;
    for (size_t i = 0; i < ny; i++) {
        const double gv = get(ygpu, c->yt, i), cv = get(ycpu, c->yt, i);
        cr_assert(!isnan(gv), "%s: y[%zu] is NaN (not written?)", c->name, i);
        se += (gv - cv) * (gv - cv);
        sr += cv * cv;
    }
    const double rl2 = sr > 0 ? sqrt(se / sr) : sqrt(se);
    if (verbose())
        fprintf(stderr, "gpu_conv mma %-4s %-36s rel L2 %.3g\n", mma_math_names[m], c->name, rl2);
    cr_assert_leq(rl2, mma_bounds[m], "%s (%s math): rel L2 %.3g", c->name, mma_math_names[m], rl2);

    ws_gpu_conv_free(gc);
    ws_gpu_release(g, dxbuf);
    ws_gpu_release(g, dybuf);
    if (daddbuf)
        ws_gpu_release(g, daddbuf);
    if (add != x)
        free(add);
    free(mma_last_y);
    mma_last_y = ygpu;
    free(x), free(w), free(b), free(ycpu), free(ygpu2), free(poison);
    return rl2;
}

/* on the device's own PTX (wgmma on compute capability 9.0), then, on a device above 8.0, on
 * PTX for 8.0 (the mma.sync kernel every other GPU runs) */
Test(gpu_conv, mma_gemm_matches_the_cpu_engine_within_the_math_types_rounding, .timeout = 600)
{
    ws_gpu *g = gpu_or_skip();
    mma_hgemm_calls = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && ws_gpu_emit_cc(g, 8, 0))
            break;
        double most[N_MMA_MATHS] = {0, 0, 0};
        for (int m = 0; m < N_MMA_MATHS; m++)
            for (int i = 0; i < N_GCASES; i++) {
                const double rl2 = run_mma_case(g, &gcases_gemm[i], m, 0, 0);
                most[m] = rl2 > most[m] ? rl2 : most[m];
            }
        if (verbose())
            fprintf(stderr, "gpu_conv mma (%s): rel L2 at most %.3g (bf16), %.3g (f16), %.3g (tf32); "
                            "%d calls on the Hopper GEMM\n",
                    pass ? "PTX for 8.0" : "the device's PTX", most[0], most[1], most[2], mma_hgemm_calls);
        /* on an H100 (9.0) with a driver that encodes tensor maps, every row ws_hgemm_fits
         * takes the Hopper GEMM; on PTX for 8.0 none does */
        int fits = 0;
        for (int m = 0; m < N_MMA_MATHS; m++)
            for (int i = 0; i < N_GCASES; i++) {
                ws_conv_desc d = desc_of(&gcases_gemm[i]);
                d.math = mma_maths[m];
                fits += ws_hgemm_fits(&d, 9, 0) || ws_hcol_fits(&d, 9, 0);
            }
        if (pass == 1)
            cr_assert_eq(mma_hgemm_calls, 0, "PTX for 8.0: %d calls on the Hopper GEMM", mma_hgemm_calls);
        else if (ws_gpu_hgemm_available(g)) {
            cr_assert_eq(mma_hgemm_calls, fits, "%d of %d rows on the Hopper GEMM", mma_hgemm_calls, fits);
            cr_assert_geq(mma_mn_calls, 5, "only %d rows read channel-first x in place", mma_mn_calls);
            cr_assert_geq(mma_p8_calls, 3, "only %d rows staged by the 16-byte transpose", mma_p8_calls);
            cr_assert_geq(mma_col_calls, 12, "only %d rows through their columns", mma_col_calls);
        }
        mma_hgemm_calls = mma_mn_calls = mma_p8_calls = mma_col_calls = 0;
    }
    free(mma_last_y);
    mma_last_y = NULL;
    ws_gpu_close(g);
}

/* the rows whose mma kernel loads NLC x 16 bytes at a time, with x one element off that
 * alignment: the direct kernel takes the call, or on 9.0 the Hopper GEMM where it takes the
 * row (it stages such an x), within the same bounds; with x 16 bytes into its buffer
 * (aligned, but not as the allocator aligns): a gemm kernel */
Test(gpu_conv, mma_gemm_gives_a_misaligned_nlc_x_to_the_direct_kernel_or_stages_it, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    int rows = 0;
    for (int m = 0; m < N_MMA_MATHS; m++)
        for (int i = 0; i < N_GCASES; i++) {
            ws_conv_desc d = desc_of(&gcases_gemm[i]);
            d.math = mma_maths[m];
            if (ws_gemm_x_align(&d) == 16 && gcases_gemm[i].add != ADD_INPUT) {
                run_mma_case(g, &gcases_gemm[i], m, 1, 0);
                run_mma_case(g, &gcases_gemm[i], m, (int)(16 / tsize(gcases_gemm[i].xt)), 0);
                rows++;
            }
        }
    cr_assert_geq(rows, 9, "only %d rows with 16-byte NLC loads", rows);
    free(mma_last_y);
    mma_last_y = NULL;
    ws_gpu_close(g);
}

/* the rows whose x is NCL of the math type (the "_prep8" entry, and the "_mn" one where the
 * taps are at multiples of 16 bytes of times: 8 16-bit, 4 float32), with x one element off
 * 16-byte alignment (staged by the element-wise "_prep") and 16 bytes into its buffer (read in
 * place where ws_hgemm_mn_call, else staged by "_prep8" where ws_hgemm_prep8_call): within the
 * same bounds, the dispatch as the predicates say (run_mma_case holds it to that); in TF32, x
 * read in place gives the bits of x staged */
Test(gpu_conv, hopper_gemm_reads_channel_first_x_in_place_or_stages_it, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    if (!ws_gpu_hgemm_available(g)) {
        ws_gpu_close(g);
        cr_skip_test("no Hopper GEMM on this device");
    }
    mma_hgemm_calls = mma_mn_calls = mma_p8_calls = 0;
    int rows = 0, tf32_mn = 0;
    for (int m = 0; m < N_MMA_MATHS; m++)
        for (int i = 0; i < N_GCASES; i++) {
            const gcase *c = &gcases_gemm[i];
            ws_conv_desc d = desc_of(c);
            d.math = mma_maths[m];
            if (ws_hgemm_fits(&d, 9, 0) && ws_hgemm_prep8(&d) && c->add != ADD_INPUT) {
                run_mma_case(g, c, m, 1, 0); /* it asserts: neither entry for an x off alignment */
                void *staged = mma_last_y;
                mma_last_y = NULL;
                const int mn0 = mma_mn_calls;
                run_mma_case(g, c, m, (int)(16 / tsize(c->xt)), 0);
                /* TF32: the consumers' transpose writes the bytes the staging pass writes, so
                 * x read in place gives the staged call's bits */
                if (d.math == WS_MATH_TF32 && mma_mn_calls > mn0) {
                    const int t_out = ws_conv_out_len(&d, c->t_in);
                    const size_t ybytes = (size_t)c->n * c->c_out * t_out * tsize(c->yt);
                    cr_assert(!memcmp(staged, mma_last_y, ybytes), "%s (tf32): x in place, not the staged bits",
                              c->name);
                    tf32_mn++;
                }
                free(staged);
                rows++;
            }
        }
    cr_assert_geq(rows, 10, "only %d rows with the _prep8 entry", rows);
    cr_assert_geq(tf32_mn, 4, "only %d TF32 rows read x in place", tf32_mn);
    free(mma_last_y);
    mma_last_y = NULL;
    cr_assert_geq(mma_mn_calls, 4, "only %d of them read x in place", mma_mn_calls);
    cr_assert_geq(mma_p8_calls, 3, "only %d of them staged by _prep8", mma_p8_calls);
    mma_mn_calls = mma_p8_calls = 0;
    ws_gpu_close(g);
}

/* The Hopper GEMM's epilogue stores 4 channels (NLC y, C_out % 4 == 0) or 4 positions (NCL
 * y, T_out % 4 == 0) at a time where y and the add are aligned to 4 elements (ptx_hgemm.h): its
 * rows, with y (and the add) one element into their buffers, take the element-by-element form
 * within the same bounds, over NaN-poisoned y */
Test(gpu_conv, hopper_gemm_writes_a_misaligned_y_element_by_element, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    if (!ws_gpu_hgemm_available(g)) {
        ws_gpu_close(g);
        cr_skip_test("no Hopper GEMM on this device");
    }
    int rows = 0, vec = 0;
    for (int m = 0; m < N_MMA_MATHS; m++)
        for (int i = 0; i < N_GCASES; i++) {
            const gcase *c = &gcases_gemm[i];
            ws_conv_desc d = desc_of(c);
            d.math = mma_maths[m];
            if (ws_hgemm_fits(&d, 9, 0) && c->add != ADD_INPUT) {
                run_mma_case(g, c, m, 0, 1);
                rows++;
                vec += d.y_layout == WS_NLC ? d.c_out % 4 == 0 : ws_conv_out_len(&d, c->t_in) % 4 == 0;
            }
        }
    cr_assert_geq(rows, 16, "only %d Hopper rows", rows);
    cr_assert_geq(vec, 8, "only %d of them with vector stores when aligned", vec);
    free(mma_last_y);
    mma_last_y = NULL;
    ws_gpu_close(g);
}

/* --- weights per call, the caller's stream ------------------------------------- */

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(text, 1, len, f), len, "%s", path);
    cr_assert_eq(fclose(f), 0, "%s", path);
}

/* Plans made without weights, given w and b per call (device buffers) and enqueued on a
 * stream of the caller's, against plans made with the same weights and run: the same bits,
 * FWD y and BWD dx, dw, db, on the same kernels; the second of two weight sets gives its own
 * plan's bits (the weights are read at each call, nothing of the first is kept). math m
 * (mma GEMM rows), op FWD or BWD (then pre and add are dropped from the row). */
static void per_call_case(ws_gpu *g, const gcase *c0, ws_conv_op op, ws_math m, uint64_t stream)
{
    gcase cc = *c0;
    if (op == WS_CONV_BWD)
        cc.pre = WS_ACT_NONE, cc.add = ADD_NONE;
    const gcase *c = &cc;
    ws_conv_desc d = op == WS_CONV_BWD ? bdesc_of(c) : desc_of(c);
    d.math = m;
    ws_err e = {""};
    const int t_out = ws_conv_out_len(&d, c->t_in), cg = c->c_in / c->groups;
    const size_t nx = (size_t)c->n * c->c_in * c->t_in, per = (size_t)c->c_out * t_out;
    const size_t ny = per * c->n, nw = (size_t)c->c_out * cg * c->k, nb = (size_t)c->c_out;
    ws_rng r = {0x9e3779b9u + (uint64_t)c->n * 131 + (uint64_t)c->c_in * 7 + (uint64_t)c->k};
    void *x = random_buf(nx, c->xt, &r), *w[2] = {random_buf(nw, c->wt, &r), random_buf(nw, c->wt, &r)};
    float *b[2] = {c->bias ? random_buf(nb, WS_F32, &r) : NULL, c->bias ? random_buf(nb, WS_F32, &r) : NULL};
    void *dyh = op == WS_CONV_BWD ? random_buf(ny, c->yt, &r) : NULL;
    size_t nadd = c->add == ADD_BROADCAST ? per : c->add == ADD_PER_ITEM ? ny : 0;
    void *add = nadd ? random_buf(nadd, c->yt, &r) : NULL;
    long long abs = c->add == ADD_PER_ITEM ? (long long)per : 0;
    const size_t xbytes = nx * tsize(c->xt), ybytes = ny * tsize(c->yt), wbytes = nw * tsize(c->wt);
    /* outputs: FWD y; BWD dx, dw, db */
    const int nout = op == WS_CONV_BWD ? 3 : 1;
    const size_t obytes[3] = {op == WS_CONV_BWD ? xbytes : ybytes, nw * sizeof(float), nb * sizeof(float)};
    uint64_t dxin = dev_alloc(g, xbytes), ddy = op == WS_CONV_BWD ? dev_alloc(g, ybytes) : 0;
    uint64_t dadd = 0, dw = dev_alloc(g, wbytes), db = c->bias ? dev_alloc(g, nb * sizeof(float)) : 0;
    uint64_t dout[3] = {0, 0, 0};
    void *ref[3], *got[3];
    for (int o = 0; o < nout; o++) {
        dout[o] = dev_alloc(g, obytes[o]);
        cr_assert_not_null(ref[o] = malloc(obytes[o]));
        cr_assert_not_null(got[o] = malloc(obytes[o]));
    }
    cr_assert_eq(ws_gpu_upload(g, dxin, x, xbytes, &e), 0, "%s", e.msg);
    if (ddy)
        cr_assert_eq(ws_gpu_upload(g, ddy, dyh, ybytes, &e), 0, "%s", e.msg);
    if (c->add == ADD_INPUT) {
        dadd = dxin;
        abs = (long long)per;
    } else if (add) {
        dadd = dev_alloc(g, nadd * tsize(c->yt));
        cr_assert_eq(ws_gpu_upload(g, dadd, add, nadd * tsize(c->yt), &e), 0, "%s", e.msg);
    }
    ws_gpu_conv *q = ws_gpu_conv_new(g, &d, NULL, NULL, &e);
    cr_assert_not_null(q, "%s: plan without weights: %s", c->name, e.msg);
    for (int s = 0; s < 2; s++) {
        ws_conv_args a = {.n = c->n, .t_in = c->t_in, .x = as_ptr(dxin),
                          .add = dadd ? as_ptr(dadd) : NULL, .add_batch_stride = abs};
        if (op == WS_CONV_BWD)
            a.dy = as_ptr(ddy), a.dx = as_ptr(dout[0]), a.dw = as_ptr(dout[1]), a.db = as_ptr(dout[2]);
        else
            a.y = as_ptr(dout[0]);
        ws_gpu_conv *p = ws_gpu_conv_new(g, &d, w[s], b[s], &e);
        cr_assert_not_null(p, "%s: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_conv_run(p, &a, &e), 0, "%s: %s", c->name, e.msg);
        for (int o = 0; o < nout; o++)
            cr_assert_eq(ws_gpu_download(g, ref[o], dout[o], obytes[o], &e), 0, "%s", e.msg);
        const int kp = ws_gpu_conv_kernel(p, &a);
        ws_gpu_conv_free(p);
        /* the same call, weights per call, on the caller's stream */
        for (int o = 0; o < nout; o++) {
            void *poison = malloc(obytes[o]);
            cr_assert_not_null(poison);
            memset(poison, 0xff, obytes[o]);
            cr_assert_eq(ws_gpu_upload(g, dout[o], poison, obytes[o], &e), 0, "%s", e.msg);
            free(poison);
        }
        cr_assert_eq(ws_gpu_upload(g, dw, w[s], wbytes, &e), 0, "%s", e.msg);
        if (db)
            cr_assert_eq(ws_gpu_upload(g, db, b[s], nb * sizeof(float), &e), 0, "%s", e.msg);
        a.w = as_ptr(dw), a.b = db ? as_ptr(db) : NULL;
        cr_assert_eq(ws_gpu_conv_kernel(q, &a), kp, "%s: per-call weights take other kernels", c->name);
        cr_assert_eq(ws_gpu_conv_enqueue(q, &a, stream, &e), 0, "%s: %s", c->name, e.msg);
        cr_assert_eq(ws_gpu_user_stream_wait(g, stream, &e), 0, "%s", e.msg);
        for (int o = 0; o < nout; o++) {
            cr_assert_eq(ws_gpu_download(g, got[o], dout[o], obytes[o], &e), 0, "%s", e.msg);
            cr_assert(!memcmp(got[o], ref[o], obytes[o]),
                      "%s (%s, math %d, weights %d): output %d per call differs from the plan's", c->name,
                      op == WS_CONV_BWD ? "BWD" : "FWD", (int)m, s, o);
        }
        if (verbose())
            fprintf(stderr, "gpu_conv per-call %-36s %s math %d kernel %d: same bits\n", c->name,
                    op == WS_CONV_BWD ? "BWD" : "FWD", (int)m, kp);
    }
    ws_gpu_conv_free(q);
    for (int o = 0; o < nout; o++) {
        ws_gpu_release(g, dout[o]);
        free(ref[o]), free(got[o]);
    }
    ws_gpu_release(g, dxin), ws_gpu_release(g, ddy), ws_gpu_release(g, dw), ws_gpu_release(g, db);
    if (dadd && dadd != dxin)
        ws_gpu_release(g, dadd);
    free(x), free(w[0]), free(w[1]), free(b[0]), free(b[1]), free(dyh), free(add);
}

Test(gpu_conv, weights_per_call_on_the_callers_stream_give_the_plan_weights_bits, .timeout = 600)
{
    ws_gpu *g = gpu_or_skip();
    ws_err e = {""};
    uint64_t st = 0;
    cr_assert_eq(ws_gpu_user_stream_new(g, &st, &e), 0, "%s", e.msg);
    for (int i = 0; i < N_CASES; i++)
        per_call_case(g, &cases[i], WS_CONV_FWD, WS_MATH_F32, st);
    for (int i = 0; i < N_BCASES; i++)
        per_call_case(g, &bcases[i], WS_CONV_BWD, WS_MATH_F32, st);
    for (int i = 0; i < N_DCASES; i++) {
        per_call_case(g, &dcases[i], WS_CONV_FWD, WS_MATH_F32, st);
        per_call_case(g, &dcases[i], WS_CONV_BWD, WS_MATH_F32, 0); /* 0: g's own stream */
    }
    for (int i = 0; i < N_GCASES; i++)
        for (int m = 0; m < N_MMA_MATHS; m++)
            per_call_case(g, &gcases_gemm[i], WS_CONV_FWD, mma_maths[m], st);
    ws_gpu_user_stream_free(g, st);
    ws_gpu_close(g);
}

Test(gpu_conv, a_plan_without_weights_refuses_a_call_without_w)
{
    ws_gpu *g = gpu_or_skip();
    ws_err e = {""};
    const ws_conv_desc d = desc_of(&dcases[0]);
    ws_gpu_conv *q = ws_gpu_conv_new(g, &d, NULL, NULL, &e);
    cr_assert_not_null(q, "%s", e.msg);
    uint64_t dx = dev_alloc(g, 4096), dy = dev_alloc(g, 4096);
    ws_conv_args a = {.n = 1, .t_in = 8, .x = as_ptr(dx), .y = as_ptr(dy)};
    cr_assert_eq(ws_gpu_conv_enqueue(q, &a, 0, &e), -1);
    cr_assert(strstr(e.msg, "ws_gpu_conv_enqueue") && strstr(e.msg, "w is NULL"), "%s", e.msg);
    float bias[64] = {0};
    cr_assert_null(ws_gpu_conv_new(g, &d, NULL, bias, &e));
    cr_assert(strstr(e.msg, "b is given without w"), "%s", e.msg);
    ws_gpu_conv_free(q);
    ws_gpu_release(g, dx), ws_gpu_release(g, dy);
    ws_gpu_close(g);
}

/* the modules plans without weights load beside the others: the depthwise kernels reading
 * 16-bit w (ws_dw_emit_w) and the preparation module (ptx_wprep.h) */
Test(gpu_conv_ptx, per_call_weight_modules_assemble_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    const int ccs[][2] = {{9, 0}, {8, 0}};
    int n_dw = 0, n_prep = 0;
    for (int c = 0; c < 2; c++) {
        const int cc = ccs[c][0] * 10 + ccs[c][1];
        for (int i = 0; i < N_DCASES; i++)
            for (int op = 0; op < 2; op++) {
                if (dcases[i].wt == WS_F32)
                    continue;
                gcase gc = dcases[i];
                if (op)
                    gc.pre = WS_ACT_NONE, gc.add = ADD_NONE;
                const ws_conv_desc d = op ? bdesc_of(&gc) : desc_of(&gc);
                ws_err e = {""};
                char *t = ws_dw_emit_w(&d, d.w_type, ccs[c][0], ccs[c][1], &e);
                cr_assert_not_null(t, "%s: %s", gc.name, e.msg);
                char *plain = ws_dw_emit(&d, ccs[c][0], ccs[c][1], &e);
                cr_assert(plain && strcmp(t, plain), "%s: the 16-bit w module is the float32 one", gc.name);
                free(plain);
                char name[WS_DW_NAME_MAX], path[2048];
                ws_dw_name_w(&d, d.w_type, name);
                cr_assert(strstr(name, "_wbf16") || strstr(name, "_wf16"), "%s", name);
                snprintf(path, sizeof path, "%s/%s_%d.ptx", dir, name, cc);
                write_file(path, t, strlen(t));
                free(t);
                assemble(ptxas, path, cc, gc.name, op ? 2 : 1);
                n_dw++;
            }
        const gcase *rows[] = {&cases[0], &gcases_gemm[0], gcase_named("h_large_ncl_c256_o136_k7_t400_vec"),
                               &dcases[1]};
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            for (int m = 0; m < N_MMA_MATHS + 1; m++) {
                ws_conv_desc d = desc_of(rows[i]);
                d.math = m < N_MMA_MATHS ? mma_maths[m] : WS_MATH_F32;
                for (int wt = 0; wt < 3; wt++) {
                    d.w_type = (ws_dtype)wt;
                    ws_err e = {""};
                    char *t = ws_wprep_emit(&d, ccs[c][0], ccs[c][1], &e);
                    cr_assert_not_null(t, "%s: %s", rows[i]->name, e.msg);
                    char name[WS_WPREP_NAME_MAX], path[2048];
                    ws_wprep_name(&d, name);
                    snprintf(path, sizeof path, "%s/%s_%d.ptx", dir, name, cc);
                    write_file(path, t, strlen(t));
                    free(t);
                    assemble(ptxas, path, cc, name, 1 + ws_wprep_packs(&d));
                    n_prep++;
                }
            }
    }
    if (verbose())
        fprintf(stderr, "gpu_conv_ptx per-call: %d depthwise and %d preparation modules assembled\n", n_dw,
                n_prep);
}

/* --- packed sequences and carried states through plans ------------------------- */

/* max |a - b| / (max |b| + 1e-30) over n elements of type t */
static double rel_max(const void *a, const void *b, ws_dtype t, size_t n)
{
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(get(b, t, i)));
    for (size_t i = 0; i < n; i++) {
        const double d = fabs(get(a, t, i) - get(b, t, i));
        cr_assert(!isnan(d), "NaN at %zu", i);
        worst = fmax(worst, d);
    }
    return worst / (scale + 1e-30);
}

/* One depthwise causal row with seq_idx (mode 1) or states (mode 2), weights per call, FWD
 * then BWD, on a GPU plan against the CPU engine: y and final_states, dx, dw, db and
 * dinitial_states within the storage type's rounding; and, for states, the sequence in
 * two chunks (the second starting from the first's final_states) gives the one run's y bits. */
static void states_case(ws_gpu *g, const gcase *c0, int mode)
{
    gcase cc = *c0;
    cc.pre = WS_ACT_NONE, cc.add = ADD_NONE;
    const gcase *c = &cc;
    const ws_conv_desc d = desc_of(c), db_ = bdesc_of(c);
    ws_err e = {""};
    const int N = c->n, C = c->c_in, T = c->t_in, K = c->k, S = K - 1;
    const size_t nx = (size_t)N * C * T, nw = (size_t)C * K, ns = (size_t)N * C * (size_t)(S > 0 ? S : 1);
    const size_t xs = tsize(c->xt), ys = tsize(c->yt), ws = tsize(c->wt);
    ws_rng r = {0x51a7e5u + (uint64_t)C * 3 + (uint64_t)mode};
    void *x = random_buf(nx, c->xt, &r), *w = random_buf(nw, c->wt, &r), *dy = random_buf(nx, c->yt, &r);
    void *init = random_buf(ns, c->xt, &r);
    float *b = random_buf((size_t)C, WS_F32, &r);
    int32_t *seq = malloc((size_t)N * T * sizeof *seq);
    cr_assert_not_null(seq);
    for (int n = 0; n < N; n++) /* sequences of 1..T/3 positions, a padding run, repeated */
        for (int t = 0, s = 0, left = 0; t < T; t++) {
            if (!left) {
                s++;
                left = 1 + (int)(ws_rng_uniform(&r) * (T / 3 + 1));
            }
            seq[(size_t)n * T + t] = s % 4 == 3 ? -1 : s;
            left--;
        }
    const int use_seq = mode == 1, use_st = mode == 2;
    /* CPU */
    void *y_c = malloc(nx * ys), *fin_c = malloc(ns * xs), *dx_c = malloc(nx * xs), *din_c = malloc(ns * xs);
    float *dw_c = malloc(nw * 4), *db_c = malloc((size_t)C * 4);
    ws_conv *cf = ws_conv_new(&d, NULL, NULL, 1, &e), *cb = ws_conv_new(&db_, NULL, NULL, 1, &e);
    cr_assert(cf && cb, "%s: %s", c->name, e.msg);
    ws_conv_args a = {.n = N, .t_in = T, .x = x, .w = w, .b = b, .y = y_c};
    if (use_seq)
        a.seq_idx = seq;
    if (use_st)
        a.initial_states = init, a.final_states = fin_c;
    cr_assert_eq(ws_conv_run(cf, &a, &e), 0, "%s: %s", c->name, e.msg);
    ws_conv_args ab = {.n = N, .t_in = T, .x = x, .w = w, .b = b, .dy = dy, .dx = dx_c, .dw = dw_c, .db = db_c};
    if (use_seq)
        ab.seq_idx = seq;
    if (use_st)
        ab.initial_states = init, ab.dinitial_states = din_c;
    cr_assert_eq(ws_conv_run(cb, &ab, &e), 0, "%s: %s", c->name, e.msg);
    ws_conv_free(cf), ws_conv_free(cb);
    /* GPU */
    uint64_t gx = dev_alloc(g, nx * xs), gw = dev_alloc(g, nw * ws), gb = dev_alloc(g, (size_t)C * 4);
    uint64_t gdy = dev_alloc(g, nx * ys), gy = dev_alloc(g, nx * ys), ginit = dev_alloc(g, ns * xs);
    uint64_t gfin = dev_alloc(g, ns * xs), gseq = dev_alloc(g, (size_t)N * T * 4), gdx = dev_alloc(g, nx * xs);
    uint64_t gdw = dev_alloc(g, nw * 4), gdb = dev_alloc(g, (size_t)C * 4), gdin = dev_alloc(g, ns * xs);
    cr_assert(!ws_gpu_upload(g, gx, x, nx * xs, &e) && !ws_gpu_upload(g, gw, w, nw * ws, &e) &&
              !ws_gpu_upload(g, gb, b, (size_t)C * 4, &e) && !ws_gpu_upload(g, gdy, dy, nx * ys, &e) &&
              !ws_gpu_upload(g, ginit, init, ns * xs, &e) &&
              !ws_gpu_upload(g, gseq, seq, (size_t)N * T * 4, &e), "%s", e.msg);
    ws_gpu_conv *pf = ws_gpu_conv_new(g, &d, NULL, NULL, &e), *pb = ws_gpu_conv_new(g, &db_, NULL, NULL, &e);
    cr_assert(pf && pb, "%s: %s", c->name, e.msg);
    ws_conv_args ga = {.n = N, .t_in = T, .x = as_ptr(gx), .w = as_ptr(gw), .b = (float *)as_ptr(gb),
                       .y = as_ptr(gy)};
    if (use_seq)
        ga.seq_idx = as_ptr(gseq);
    if (use_st)
        ga.initial_states = as_ptr(ginit), ga.final_states = as_ptr(gfin);
    cr_assert_eq(ws_gpu_conv_kernel(pf, &ga), 3, "%s: not the packed-sequence kernels", c->name);
    cr_assert_eq(ws_gpu_conv_run(pf, &ga, &e), 0, "%s: %s", c->name, e.msg);
    ws_conv_args gab = {.n = N, .t_in = T, .x = as_ptr(gx), .w = as_ptr(gw), .b = (float *)as_ptr(gb),
                        .dy = as_ptr(gdy), .dx = as_ptr(gdx), .dw = (float *)as_ptr(gdw),
                        .db = (float *)as_ptr(gdb)};
    if (use_seq)
        gab.seq_idx = as_ptr(gseq);
    if (use_st)
        gab.initial_states = as_ptr(ginit), gab.dinitial_states = as_ptr(gdin);
    cr_assert_eq(ws_gpu_conv_run(pb, &gab, &e), 0, "%s: %s", c->name, e.msg);
    void *y_g = malloc(nx * ys), *fin_g = malloc(ns * xs), *dx_g = malloc(nx * xs), *din_g = malloc(ns * xs);
    float *dw_g = malloc(nw * 4), *db_g = malloc((size_t)C * 4);
    cr_assert(!ws_gpu_download(g, y_g, gy, nx * ys, &e) && !ws_gpu_download(g, dx_g, gdx, nx * xs, &e) &&
              !ws_gpu_download(g, dw_g, gdw, nw * 4, &e) && !ws_gpu_download(g, db_g, gdb, (size_t)C * 4, &e),
              "%s", e.msg);
    const double tol16 = 1e-2, tol = c->yt == WS_F32 && c->xt == WS_F32 ? 1e-5 : tol16;
    const double ry = rel_max(y_g, y_c, c->yt, nx), rdx = rel_max(dx_g, dx_c, c->xt, nx);
    const double rdw = rel_max(dw_g, dw_c, WS_F32, nw), rdb = rel_max(db_g, db_c, WS_F32, (size_t)C);
    cr_assert(ry <= tol && rdx <= tol && rdw <= 1e-4 && rdb <= 1e-4,
              "%s mode %d: GPU vs CPU y %.3g dx %.3g dw %.3g db %.3g", c->name, mode, ry, rdx, rdw, rdb);
    if (use_seq)
        for (size_t i = 0; i < nx; i++) { /* padding: exactly 0 */
            const size_t n = c->xl == WS_NLC ? i / ((size_t)T * C) : i / ((size_t)C * T);
            const size_t t = c->xl == WS_NLC ? (i / C) % T : i % T;
            if (seq[n * T + t] < 0)
                cr_assert(get(y_g, c->yt, i) == 0, "%s: y[%zu] at padding is %g", c->name, i, get(y_g, c->yt, i));
        }
    if (use_st) {
        cr_assert(!ws_gpu_download(g, fin_g, gfin, ns * xs, &e) && !ws_gpu_download(g, din_g, gdin, ns * xs, &e),
                  "%s", e.msg);
        cr_assert(!memcmp(fin_g, fin_c, ns * xs), "%s: final_states differ from the CPU's (copies)", c->name);
        const double rdi = rel_max(din_g, din_c, c->xt, ns);
        cr_assert(rdi <= tol, "%s: dinitial_states GPU vs CPU %.3g", c->name, rdi);
    }
    if (verbose())
        fprintf(stderr, "gpu_conv states %-32s mode %d: y %.2g dx %.2g dw %.2g db %.2g\n", c->name, mode, ry, rdx,
                rdw, rdb);
    if (use_st && c->xl == WS_NLC && T > 8) { /* two chunks from the initial states: the one run's bits */
        const int T1 = T / 2 - 1, T2 = T - T1;
        uint64_t gy2 = dev_alloc(g, nx * ys), gmid = dev_alloc(g, ns * xs);
        ws_conv_args c1 = ga, c2 = ga;
        c1.t_in = T1, c1.n = N, c1.y = as_ptr(gy2), c1.final_states = as_ptr(gmid);
        c2.t_in = T2, c2.x = as_ptr(gx + (uint64_t)T1 * C * xs), c2.y = as_ptr(gy2 + (uint64_t)T1 * C * ys);
        c2.initial_states = as_ptr(gmid), c2.final_states = as_ptr(gmid);
        if (N == 1) {
            cr_assert_eq(ws_gpu_conv_run(pf, &c1, &e), 0, "%s: %s", c->name, e.msg);
            cr_assert_eq(ws_gpu_conv_run(pf, &c2, &e), 0, "%s: %s", c->name, e.msg);
            void *y2 = malloc(nx * ys), *f2 = malloc(ns * xs);
            cr_assert(!ws_gpu_download(g, y2, gy2, nx * ys, &e) && !ws_gpu_download(g, f2, gmid, ns * xs, &e),
                      "%s", e.msg);
            cr_assert(!memcmp(y2, y_g, nx * ys), "%s: two chunks, other y bits than one run", c->name);
            cr_assert(!memcmp(f2, fin_g, ns * xs), "%s: two chunks, other final_states", c->name);
            free(y2), free(f2);
        }
        ws_gpu_release(g, gy2), ws_gpu_release(g, gmid);
    }
    ws_gpu_conv_free(pf), ws_gpu_conv_free(pb);
    uint64_t bufs[] = {gx, gw, gb, gdy, gy, ginit, gfin, gseq, gdx, gdw, gdb, gdin};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        ws_gpu_release(g, bufs[i]);
    free(x), free(w), free(dy), free(init), free(b), free(seq), free(y_c), free(fin_c), free(dx_c), free(din_c);
    free(dw_c), free(db_c), free(y_g), free(fin_g), free(dx_g), free(din_g), free(dw_g), free(db_g);
}

Test(gpu_conv, packed_sequences_and_states_match_the_cpu_engine, .timeout = 300)
{
    ws_gpu *g = gpu_or_skip();
    static const gcase rows[] = {
        {"st_nlc_silu_f32_n1", 1, 64, 64, 64, 4, 1, 1, 3, 0, 200, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0,
         WS_ACT_SILU, 1, 0},
        {"st_nlc_silu_bf16_n1", 1, 256, 256, 256, 4, 1, 1, 3, 0, 300, WS_NLC, WS_NLC, WS_BF16, WS_BF16,
         WS_BF16, 0, WS_ACT_SILU, 1, 0},
        {"st_nlc_gelu_f16_n2_k2", 2, 40, 40, 40, 2, 1, 1, 1, 0, 72, WS_NLC, WS_NLC, WS_F16, WS_F16, WS_F16, 0,
         WS_ACT_GELU, 1, 0},
        {"st_ncl_silu_f32_n3", 3, 24, 24, 24, 4, 1, 1, 3, 0, 130, WS_NCL, WS_NCL, WS_F32, WS_F32, WS_F32, 0,
         WS_ACT_SILU, 1, 0},
        {"st_ncl_none_bf16_k8", 2, 16, 16, 16, 8, 1, 1, 7, 0, 5, WS_NCL, WS_NCL, WS_BF16, WS_F32, WS_BF16, 0,
         WS_ACT_NONE, 1, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int mode = 1; mode <= 2; mode++)
            states_case(g, &rows[i], mode);
    ws_gpu_close(g);
}

/* --- the dense backward as GEMMs (ptx_hbwd.h; the weight gradient of ptx_hgemm.h) ----- */

/* dense BWD rows for the GEMM passes: dilated NCL with G read in place (T 32) and staged
 * (T 40), wav2vec2's stride 2 in NLC float32 through gz (GELU; S divides T_in, so X' is dx
 * itself), DAC's K16 S8 P4 with a partial row tile, a stride-2 dilation-2 row whose phase 0
 * has no taps (mixed types; NLC x, X' copied item by item), K1 over two column tiles, a long
 * T that the weight gradient cuts into many splits, a 512 x 512 row whose splits cross items
 * and wrap the ring, an odd K7 S2 D3 row, a float32 NLC row whose dy and x the float32
 * weight gradient reads in place (C_out 260, C_in 132: partial tiles both ways; S3 K4), and
 * an NCL row at stride 2 with odd T_in whose x and dy are staged by row gathers */
static const gcase gbcases[] = {
    {"gb_dil_k3_d9_t32_in_place", 3, 128, 80, 1, 3, 1, 9, 9, 9, 32, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    {"gb_dil_k3_d9_t40_staged", 4, 64, 96, 1, 3, 1, 9, 9, 9, 40, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    {"gb_w2v_k3_s2_nlc_gelu", 2, 96, 64, 1, 3, 2, 1, 0, 0, 300, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_GELU, 0, 0},
    {"gb_dac_k16_s8_p4_o300", 2, 32, 300, 1, 16, 8, 1, 4, 4, 333, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    /* dx's conv with C_in' = C_out off multiples of 16 and C_out * K <= 64 (the columns would
     * take it as a forward): a decoder's last conv 512 -> 1 K7, and 64 -> 24 K2 */
    {"gb_o1_k7_dx_off_16", 2, 512, 1, 1, 7, 1, 1, 3, 3, 90, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0, WS_ACT_NONE,
     1, 0},
    {"gb_c64_o24_k2_dx_off_16", 2, 64, 24, 1, 2, 1, 1, 0, 1, 70, WS_NLC, WS_NLC, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    {"gb_s2_d2_p5_1_mixed_relu", 2, 40, 24, 1, 3, 2, 2, 5, 1, 57, WS_NLC, WS_NCL, WS_F16, WS_F32, WS_BF16, 0,
     WS_ACT_RELU, 1, 0},
    {"gb_k1_c300_ncl_to_nlc", 3, 300, 70, 1, 1, 1, 1, 0, 0, 77, WS_NCL, WS_NLC, WS_F32, WS_F32, WS_F32, 0, WS_ACT_NONE, 1, 0},
    {"gb_long_t_silu", 1, 16, 16, 1, 5, 1, 1, 2, 2, 5000, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0, WS_ACT_SILU,
     1, 0},
    {"gb_c512_t3000_n3_ring", 3, 512, 512, 1, 3, 1, 1, 1, 1, 3000, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    {"gb_c80_o200_k7_s2_d3_t4001", 4, 80, 200, 1, 7, 2, 3, 5, 4, 4001, WS_NLC, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    {"gb_nlc_f32_in_place_s3_k4", 3, 132, 260, 1, 4, 3, 1, 2, 1, 517, WS_NLC, WS_NLC, WS_F32, WS_F32, WS_F32, 0,
     WS_ACT_NONE, 1, 0},
    {"gb_ncl_s2_k3_rows_t203", 2, 64, 96, 1, 3, 2, 1, 1, 1, 203, WS_NCL, WS_NCL, WS_BF16, WS_BF16, WS_BF16, 0,
     WS_ACT_NONE, 1, 0},
    /* float32 NCL at stride 1 with taps at multiples of 4 times: under TF32, dx's conv (over
     * NCL dy, C 96 -> 128, P 4) reads dy in place (the consumers' transpose) */
    {"gb_ncl_f32_k3_d4_p4_t200_tf32_in_place", 2, 128, 96, 1, 3, 1, 4, 4, 4, 200, WS_NCL, WS_NCL, WS_F32, WS_F32,
     WS_F32, 0, WS_ACT_NONE, 1, 0},
    /* NCL at stride > 1 where dx's conv takes the Hopper GEMM: its phased form writes dx
     * (odd T: the last row's phase 1 is dropped; S 4 over C_in 48: tiles of mixed phases, and
     * 192 rows, so the last tile's second consumer is idle) */
    {"gb_ncl_s2_k3_o192_t1001_phased", 3, 64, 192, 1, 3, 2, 1, 1, 1, 1001, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_NONE, 1, 0},
    /* C_in 32 at S 2: dx's conv has 64 rows (2 phases x 32 channels), the narrow tile */
    {"gb_ncl_s2_k6_c32_o64_t501_narrow", 3, 32, 64, 1, 6, 2, 1, 2, 2, 501, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_NONE, 1, 0},
    {"gb_ncl_s4_k8_c48_o256_t777_phased", 2, 48, 256, 1, 8, 4, 1, 2, 2, 777, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_NONE, 1, 0},
    /* C_in 128: every row tile of dx's conv is one phase, which runs only its own taps
     * (phase 0 one tap of two; at S 4, taps 0..1 and 1..2 of three) */
    {"gb_ncl_s2_k3_c128_o192_t999_taps", 2, 128, 192, 1, 3, 2, 1, 1, 1, 999, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_NONE, 1, 0},
    {"gb_ncl_s4_k8_c128_o128_t777_taps", 2, 128, 128, 1, 8, 4, 1, 2, 2, 777, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_NONE, 1, 0},
    /* the large tile (dx's conv sums 3 taps x 640 channels: 30 stages), with taps; dilation 2
     * at S 2, where phase 1 has no tap at all (its rows of dx are zeros) */
    {"gb_ncl_s4_k8_c128_o640_t777_large", 2, 128, 640, 1, 8, 4, 1, 2, 2, 777, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_NONE, 1, 0},
    {"gb_ncl_s2_k3_d2_c128_o192_t999_notap", 2, 128, 192, 1, 3, 2, 2, 2, 2, 999, WS_NCL, WS_NCL, WS_BF16, WS_BF16,
     WS_BF16, 0, WS_ACT_NONE, 1, 0},
};
#define N_GBCASES ((int)(sizeof gbcases / sizeof gbcases[0]))

/* dx as a conv over g (ptx_hbwd.h): the descriptor the rows get, checked by hand */
Test(gpu_conv_ptx, gemm_bwd_dx_is_the_conv_the_header_describes)
{
    ws_gbwd_dx x;
    ws_conv_desc d = bdesc_of(&gbcases[0]); /* S 1, K3 D9 P9/9 */
    cr_assert(ws_gbwd_dx_of(&d, &x));
    cr_assert(x.phases == 1 && x.sub.op == WS_CONV_FWD && x.sub.c_in == 80 && x.sub.c_out == 128 && x.sub.k == 3 &&
              x.sub.dilation == 9 && x.sub.pad_l == 9 && x.sub.pad_r == 9 && x.sub.x_layout == WS_NCL &&
              x.sub.y_layout == WS_NCL && x.sub.w_type == WS_F32);
    d = bdesc_of(&gbcases[3]); /* K16 S8 P4: phases 8, m in -1..1 */
    cr_assert(ws_gbwd_dx_of(&d, &x));
    cr_assert(x.phases == 8 && x.m0 == -1 && x.sub.k == 3 && x.sub.c_out == 8 * 32 && x.sub.c_in == 300 &&
              x.sub.pad_l == 1 && x.sub.y_layout == WS_NLC && x.sub.stride == 1 && x.sub.dilation == 1);
    for (int t = 100; t < 140; t++) /* rows of X' cover ceil(T_in / 8) for any T_in */
        cr_assert_geq(ws_gbwd_dx_rows(&x, ws_conv_out_len(&d, t), t), (t + 7) / 8, "T_in %d", t);
    {
        int lo[8], hi[8];
        ws_conv_desc t = bdesc_of(&gbcases[N_GBCASES - 4]); /* K3 S2 P1: m in 0..1 */
        cr_assert(ws_gbwd_dx_of(&t, &x) && x.phases == 2 && x.m0 == 0 && x.sub.k == 2);
        ws_gbwd_dx_taps(&t, &x, lo, hi);
        cr_assert(lo[0] == 0 && hi[0] == 0 && lo[1] == 0 && hi[1] == 1, "taps %d..%d, %d..%d", lo[0], hi[0], lo[1],
                  hi[1]);
        t = bdesc_of(&gbcases[N_GBCASES - 3]); /* K8 S4 P2: m in -1..1 */
        cr_assert(ws_gbwd_dx_of(&t, &x) && x.phases == 4 && x.m0 == -1 && x.sub.k == 3);
        ws_gbwd_dx_taps(&t, &x, lo, hi);
        cr_assert(lo[0] == 0 && hi[0] == 1 && lo[1] == 0 && hi[1] == 1 && lo[2] == 1 && hi[2] == 2 && lo[3] == 1 &&
                  hi[3] == 2);
        char name[WS_HGEMM_NAME_MAX];
        ws_hgemm_phased_name(&x.sub, x.phases, lo, hi, name);
        cr_assert(strstr(name, "_ph4_t0_1_0_1_1_2_1_2_"), "%s", name);
        t = bdesc_of(&gbcases[N_GBCASES - 1]); /* D2 S2: phase 1 has no tap, 0..0 */
        cr_assert(ws_gbwd_dx_of(&t, &x) && x.phases == 2 && x.sub.k == 3);
        ws_gbwd_dx_taps(&t, &x, lo, hi);
        cr_assert(lo[0] == 0 && hi[0] == 2 && lo[1] == 0 && hi[1] == 0, "taps %d..%d, %d..%d", lo[0], hi[0], lo[1],
                  hi[1]);
        t = bdesc_of(&gbcases[N_GBCASES - 2]); /* the large tile */
        cr_assert(ws_gbwd_dx_of(&t, &x) && !ws_hgemm_small(&x.sub));
        t = bdesc_of(&gbcases[N_GBCASES - 5]); /* C_in 48: tiles of mixed phases, every tap */
        cr_assert(ws_gbwd_dx_of(&t, &x));
        ws_gbwd_dx_taps(&t, &x, lo, hi);
        ws_hgemm_phased_name(&x.sub, x.phases, lo, hi, name);
        cr_assert(strstr(name, "_ph4") && !strstr(name, "_ph4_t"), "%s", name);
        t = bdesc_of(&gbcases[N_GBCASES - 6]); /* C_in 32 at S 2: the phased form on the narrow tile */
        t.math = WS_MATH_BF16;
        cr_assert(ws_gbwd_dx_of(&t, &x) && x.phases == 2 && x.sub.c_out == 64 && ws_hgemm_fits(&x.sub, 9, 0) &&
                  ws_hgemm_phased_fits(&x.sub, x.phases));
        ws_hgemm_cfg q;
        ws_hgemm_cfg_of(&x.sub, &q);
        cr_assert(q.bm == 64 && q.nc == 1, "dx's conv on the %d-row tile", q.bm);
    }
    d = bdesc_of(&gbcases[2]); /* act GELU: the conv reads gz, float32 NCL */
    cr_assert(ws_gbwd_dx_of(&d, &x) && x.sub.x_layout == WS_NCL && x.sub.x_type == WS_F32 && x.phases == 2 &&
              x.sub.k == 2 && x.m0 == -1);
    d.groups = 2, d.c_out = 64;
    cr_assert(!ws_gbwd_dx_of(&d, &x), "grouped taken");
    d = bdesc_of(&gbcases[0]);
    d.pad_l = 19; /* more than D*(K-1): the transposed conv would need a negative pad */
    cr_assert(!ws_gbwd_dx_of(&d, &x));
    int found = 0;
    for (int i = 0; i < N_GBCASES; i++) /* float32 NCL under TF32: dx's conv reads dy in place */
        if (!strcmp(gbcases[i].name, "gb_ncl_f32_k3_d4_p4_t200_tf32_in_place")) {
            d = bdesc_of(&gbcases[i]);
            d.math = WS_MATH_TF32;
            cr_assert(ws_gbwd_dx_of(&d, &x) && x.phases == 1 && x.sub.x_layout == WS_NCL && x.sub.x_type == WS_F32 &&
                      x.sub.pad_l == 4 && ws_hgemm_fits(&x.sub, 9, 0) && ws_hgemm_mn(&x.sub) &&
                      ws_hgemm_mn_call(&x.sub, ws_hgemm_lgtb(&x.sub, gbcases[i].t_in), gbcases[i].t_in, 0),
                      "dx's conv does not read dy in place");
            found = 1;
        }
    cr_assert(found, "no TF32 in-place row");
}

/* the passes' module (any capability from 8.0) and the weight-gradient kernel (sm_90a) for
 * every row and math: no stack, no spills; deterministic, no atomics */
Test(gpu_conv_ptx, every_gemm_bwd_module_assembles_without_spills, .timeout = 300)
{
    if (!WS_GBWD)
        return;
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/gbwd", dir);
    cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
    int nwg = 0, nwant = 0, nph = 0;
    for (int i = 0; i < N_GBCASES; i++)
        for (int m = -1; m < N_MMA_MATHS; m++) {
            ws_conv_desc d = bdesc_of(&gbcases[i]);
            d.math = m < 0 ? WS_MATH_F32 : mma_maths[m];
            cr_assert_eq(ws_gbwd_used(&d), m < 0 || gbcases[i].act == WS_ACT_NONE, "%s", gbcases[i].name);
            if (!ws_gbwd_used(&d))
                continue;
            nwant += m >= 0;
            ws_gbwd_dx x;
            const int has_dx = ws_gbwd_dx_of(&d, &x);
            cr_assert(has_dx, "%s: no dx conv", gbcases[i].name);
            char name[WS_GBWD_NAME_MAX + 16];
            ws_gbwd_name(&d, name);
            const int ccs[2][2] = {{8, 0}, {9, 0}};
            /* dw's passes in every math; the FFMA weight gradient (_m) beside them in float32
             * math, and in every math on PTX for 8.0 (no Hopper weight gradient there) */
            cr_assert(ws_gbwd_has_dw(&d), "%s math %d: no dw passes", gbcases[i].name, m);
            cr_assert_eq(ws_gbwd_ffma_dw(&d), m < 0, "%s math %d", gbcases[i].name, m);
            cr_assert_eq(ws_gbwd_ffma_dw_cc(&d, 9, 0), m < 0, "%s math %d", gbcases[i].name, m);
            cr_assert(ws_gbwd_ffma_dw_cc(&d, 8, 0), "%s math %d: 8.0 without the FFMA dw", gbcases[i].name, m);
            for (int c = 0; c < 2; c++) {
                const int entries = 4 + ws_gbwd_ffma_dw_cc(&d, ccs[c][0], ccs[c][1]) + 2 + (x.phases > 1) +
                                    ws_gemm_packs(&x.sub);
                const int regs = dump_and_assemble(ptxas, sub, &d, ccs[c], name, gbcases[i].name, entries);
                if (m < 0 && verbose())
                    fprintf(stderr, "gpu_conv_ptx gbwd f32 %-30s sm_%d0: at most %d registers an entry\n",
                            gbcases[i].name, ccs[c][0], regs);
            }
            if (d.x_layout == WS_NCL && m >= 0 && ws_hgemm_fits(&x.sub, 9, 0) &&
                ws_hgemm_phased_fits(&x.sub, x.phases)) { /* dx's conv in its phased form */
                int lo[WS_HGEMM_PHASES_MAX], hi[WS_HGEMM_PHASES_MAX];
                cr_assert_leq(x.phases, WS_HGEMM_PHASES_MAX);
                ws_gbwd_dx_taps(&d, &x, lo, hi);
                ws_hgemm_phased_name(&x.sub, x.phases, lo, hi, name);
                const int regs = dump_and_assemble(ptxas, sub, &d, ccs[1], name, gbcases[i].name, 1);
                if (verbose())
                    fprintf(stderr, "gpu_conv_ptx phased %-4s %-30s: %d registers\n", mma_math_names[m],
                            gbcases[i].name, regs);
                nph++;
            }
            const int wg = ws_hgemm_wgrad_fits(&d, 9, 0);
            cr_assert_eq(wg, m >= 0, "%s math %d", gbcases[i].name, m);
            if (!wg)
                continue;
            ws_hgemm_wgrad_name(&d, name);
            const int regs = dump_and_assemble(ptxas, sub, &d, ccs[1], name, gbcases[i].name, 1);
            if (verbose())
                fprintf(stderr, "gpu_conv_ptx wgrad %-4s %-30s: %d registers\n", mma_math_names[m],
                        gbcases[i].name, regs);
            nwg++;
        }
    cr_assert(nwg == nwant && nwg >= 12, "%d weight-gradient modules, %d expected", nwg, nwant);
    cr_assert_geq(nph, 6, "%d phased dx modules", nph); /* two rows in three maths */
    ws_conv_desc d = bdesc_of(&gbcases[3]);
    d.math = WS_MATH_BF16;
    ws_err e = {""};
    char *a = ws_hgemm_wgrad_emit(&d, &e), *b = ws_hgemm_wgrad_emit(&d, &e);
    char *p = ws_gbwd_emit(&d, 9, 0, &e), *q = ws_gbwd_emit(&d, 9, 0, &e);
    cr_assert(a && b && p && q, "%s", e.msg);
    cr_assert_str_eq(a, b);
    cr_assert_str_eq(p, q);
    cr_assert(strstr(a, "cp.async.bulk.tensor.3d") && strstr(a, "wgmma.mma_async") && strstr(a, ".target sm_90a"));
    cr_assert(!strstr(a, "atom.") && !strstr(p, "atom."), "an atomic in the dense backward");
    free(a), free(b), free(p), free(q);
}

/* On the GPU: every row in every tensor-core math against the CPU engine (rel L2 within the
 * math's bound for dx, dw and db), two runs the same bits, each output alone the same bits
 * as all three; every call takes the GEMM passes (dx on any GPU; dw and db on 9.0) */
Test(gpu_conv, gemm_bwd_matches_the_cpu_engine_in_every_math, .timeout = 600)
{
    ws_gpu *g = gpu_or_skip();
    for (int m = 0; m < N_MMA_MATHS; m++)
        for (int i = 0; i < N_GBCASES; i++) {
            /* dx on any GPU; dw, db (the runs with only them) on 9.0; rows with an act stay
             * direct in tensor-core math (ws_gbwd_used) */
            const unsigned long gb = run_bwd_case_math(g, &gbcases[i], -1, mma_maths[m], mma_bounds[m]);
            ws_conv_desc d = bdesc_of(&gbcases[i]);
            d.math = mma_maths[m];
            const unsigned long want = !ws_gbwd_used(&d) ? 0ul : ws_gpu_hgemm_available(g) ? 5ul : 3ul;
            cr_assert_eq(gb, want, "%s: %lu of 5 calls took the GEMM passes, expected %lu", gbcases[i].name, gb,
                         want);
            /* dx straight into NCL dx where its conv is on the Hopper GEMM at stride > 1: the
             * plan's 5 calls with dx (3 of the 5 runs, then the -w call and the own-w call) */
            ws_gbwd_dx x;
            const int ph = ws_gpu_hgemm_available(g) && ws_gbwd_used(&d) && ws_gbwd_dx_of(&d, &x) &&
                           d.x_layout == WS_NCL && ws_hgemm_fits(&x.sub, 9, 0) &&
                           ws_hgemm_phased_fits(&x.sub, x.phases);
            if (verbose())
                fprintf(stderr, "gpu_conv gbwd %-36s math %d: %lu calls with dx in the phased form\n",
                        gbcases[i].name, m, last_phased);
            cr_assert_eq(last_phased, ph ? 5ul : 0ul, "%s math %d: %lu calls with dx in the phased form",
                         gbcases[i].name, m, last_phased);
        }
    /* float32 math: dx on the forward conv's FFMA kernels, dw on the passes' FFMA kernel, db
     * on theirs: every call takes the GEMM passes, on any GPU */
    for (int i = 0; i < N_GBCASES; i++) {
        const unsigned long gb = run_bwd_case_math(g, &gbcases[i], -1, WS_MATH_F32, 0);
        cr_assert_eq(gb, 5ul, "%s float32: %lu of 5 calls took the GEMM passes", gbcases[i].name, gb);
    }
    /* on PTX for 8.0 (a device above it) the tensor-core maths' dw is the FFMA kernel's: every
     * call takes the GEMM passes there too, within the math's bounds */
    if (!ws_gpu_emit_cc(g, 8, 0))
        for (int m = 0; m < N_MMA_MATHS; m++)
            for (int i = 0; i < N_GBCASES; i++) {
                ws_conv_desc d = bdesc_of(&gbcases[i]);
                d.math = mma_maths[m];
                const unsigned long gb = run_bwd_case_math(g, &gbcases[i], -1, mma_maths[m], mma_bounds[m]);
                const unsigned long want = ws_gbwd_used(&d) ? 5ul : 0ul;
                cr_assert_eq(gb, want, "%s on PTX for 8.0: %lu of 5 calls took the GEMM passes, expected %lu",
                             gbcases[i].name, gb, want);
            }
    ws_gpu_close(g);
}

/* test_ptx_golden.c - golden hashes of every PTX module whisper-stem emits; needs no GPU.
 *
 * A restructuring of the PTX emitters (or of the runtime around them) has to keep these
 * bytes: each module's text is hashed (64-bit FNV-1a) and held to a table recorded here.
 * One table a test (the Whisper stem's two convs are engine descriptors, rows of the engine's
 * table):
 *
 * - the conv engine (ptx_golden/engine_modules_emit_the_recorded_bytes): for every row of
 *   the descriptor table `shapes_eng` below and the targets 8.0 and 9.0, one row of eight
 *   module hashes, 0 where the family does not take the descriptor (ws_dw_fits,
 *   ws_gemm_fits):
 *     direct FWD        ws_direct_emit, math F32
 *     depthwise FWD     ws_dw_emit (NLC and NCL rows)
 *     gemm F32          ws_gemm_emit, the FFMA kernel
 *     gemm TF32, F16, BF16   the tensor-core kernels: mma.sync for 8.0; for 9.0 the wgmma
 *                       kernel (sm_90a) where the tile is 128 rows (C_out > 64), else
 *                       mma.sync
 *     direct BWD        the row with op BWD and pre NONE: gz, dx, dw, db in one module
 *     depthwise BWD     the same, ws_dw_emit: _bwd and _fin
 *   The direct and depthwise kernels compute every math in float32 FFMA: the test also
 *   checks that their modules for TF32, F16 and BF16 math are the F32 math's bytes, so the
 *   table holds one of each. The descriptor table: the acceptance tables of
 *   tests/test_gpu_conv.c (forward, backward, depthwise and gemm rows, with the fields
 *   that shape the code: n, t_in, bias and add are arguments of a call, not of the
 *   module), bench/conv_gpu.c's rows (NCL and NLC, float32 and bfloat16 storage: Mamba's
 *   depthwise C 5120 and 12288, the dilated and ResConv1D blocks, Jukebox, wav2vec2's
 *   feature encoder, DAC's downsampler), the stem's two descriptors as engine descriptors
 *   (tiny and large-v3, each storage type of the intermediate), and two matrices of every
 *   pre x act pair (16 dense rows across layouts, storage types, K, strides, dilations and
 *   C_out on both sides of the 64-row tile; 16 depthwise rows, NLC and NCL, K 1 to 8).
 *   Every row is a distinct descriptor (checked). 182 descriptors x 2 targets: 364 rows,
 *   1872 modules (direct FWD and BWD 364 each, depthwise FWD and BWD 100 each, gemm 236 per
 *   math). The test also checks what the table reaches, so that a row taken out does not
 *   silently narrow it: for every kind of module every pre x act pair (BWD: every act),
 *   every x / y layout pair (depthwise: NCL/NCL and NLC/NLC), every x type and y type;
 *   and wgmma and mma.sync modules among the tensor-core ones.
 *
 * - the log-Mel (ptx_golden/mel_modules_emit_the_recorded_bytes): ws_mel_emit's module
 *   (ws_mel_frames, ws_mel_write, ws_mel_f16) for n_mels 80 and 128 and the targets 8.0 and
 *   9.0. The module has no precision parameter (the DFT and the mel sums are float64 for
 *   every precision, the float16 output is its third entry).
 *
 * - the Hopper GEMM (ptx_golden/hopper_gemm_modules_emit_the_recorded_bytes): for every row
 *   of shapes_eng, ws_hgemm_emit's module (the kernel, its x staging entries and the "_mn"
 *   entry, sm_90a) for BF16, F16 and TF32 math, 0 where ws_hgemm_fits refuses; the table is
 *   tests/ptx_golden_hopper.inc.
 *
 * - the phased dx (ptx_golden/phased_dx_modules_emit_the_recorded_bytes): the Hopper GEMM's
 *   phased form (ws_hgemm_emit_phased, with each phase's taps) of dx's conv for the GPU
 *   suite's strided NCL backward rows; the table is golden_phased, at the end of this file.
 *
 * A deliberate kernel change re-runs the GPU suite on an H100 (scripts/gpu-node.sh) and
 * updates the table it changes, which each test prints itself, in C syntax, when
 * WS_GOLDEN_PRINT=1 (and then skips the comparison):
 *
 *   WS_GOLDEN_PRINT=1 build/test_runner --filter ptx_golden/engine_modules_emit_the_recorded_bytes
 *   WS_GOLDEN_PRINT=1 build/test_runner --filter ptx_golden/mel_modules_emit_the_recorded_bytes
 *   WS_GOLDEN_PRINT=1 build/test_runner --filter ptx_golden/hopper_gemm_modules_emit_the_recorded_bytes
 *   WS_GOLDEN_PRINT=1 build/test_runner --filter ptx_golden/phased_dx_modules_emit_the_recorded_bytes
 *
 * and paste the printed table over the old one (golden_eng, golden_mel, golden_phased, or the
 * .inc file).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu.h"
#include "cuda/ptx/ptx_direct.h"
#include "cuda/ptx/ptx_dw.h"
#include "cuda/ptx/ptx_dws.h"
#include "cuda/ptx/ptx_gemm.h"
#include "cuda/ptx/ptx_hbwd.h"
#include "cuda/ptx/ptx_hgemm.h"
#include "cuda/ptx/ptx_wprep.h"
#include "cuda/ptx/ptx_mel.h"
#include "whisper/stem.h"

/* 64-bit FNV-1a over a NUL-terminated text. */
static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* the .entry count of a module's text */
static int count_entries(const char *ptx)
{
    int n = 0;
    for (const char *p = ptx; (p = strstr(p, ".entry")) != NULL; p += 6)
        n++;
    return n;
}

/* --- the conv engine's modules ------------------------------------------------------- */

/* a descriptor's fields that shape the code (op, math: the test's loops) */
typedef struct {
    const char *name;
    int c_in, c_out, groups, k, stride, dilation, pad_l, pad_r;
    ws_layout xl, yl;
    ws_dtype xt, wt, yt;
    ws_act pre, act;
} eng_shape;

#define NCL WS_NCL
#define NLC WS_NLC
#define F32 WS_F32
#define F16 WS_F16
#define BF16 WS_BF16
#define NONE WS_ACT_NONE
#define RELU WS_ACT_RELU
#define GELU WS_ACT_GELU
#define SILU WS_ACT_SILU
/* bench/conv_gpu.c's rows at layout L (x and y) and storage T (x, w, y) */
#define BENCH(tag, L, T)                                                                          \
    {"bench_dw_c5120_" tag, 5120, 5120, 5120, 4, 1, 1, 3, 0, L, L, T, T, T, NONE, SILU},          \
    {"bench_dw_c12288_" tag, 12288, 12288, 12288, 4, 1, 1, 3, 0, L, L, T, T, T, NONE, SILU},      \
    {"bench_dil_relu_" tag, 512, 512, 1, 3, 1, 9, 9, 9, L, L, T, T, T, NONE, RELU},               \
    {"bench_resblock_1_" tag, 512, 512, 1, 3, 1, 9, 9, 9, L, L, T, T, T, RELU, RELU},             \
    {"bench_resblock_2_" tag, 512, 512, 1, 1, 1, 1, 0, 0, L, L, T, T, T, NONE, NONE},             \
    {"bench_jukebox_" tag, 64, 64, 1, 3, 1, 27, 27, 27, L, L, T, T, T, NONE, RELU},               \
    {"bench_wav2vec2_0_" tag, 1, 512, 1, 10, 5, 1, 0, 0, L, L, T, T, T, NONE, GELU},              \
    {"bench_wav2vec2_1_" tag, 512, 512, 1, 3, 2, 1, 0, 0, L, L, T, T, T, NONE, GELU},             \
    {"bench_wav2vec2_5_" tag, 512, 512, 1, 2, 2, 1, 0, 0, L, L, T, T, T, NONE, GELU},             \
    {"bench_dac_down_" tag, 512, 1024, 1, 16, 8, 1, 4, 4, L, L, T, T, T, NONE, NONE}

/* clang-format off */
static const eng_shape shapes_eng[] = {
    /* tests/test_gpu_conv.c, cases */
    {"whisper_conv1", 8, 12, 1, 3, 1, 1, 1, 1, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"whisper_conv2_pos", 12, 12, 1, 3, 2, 1, 1, 1, NCL, NLC, F32, F32, F32, NONE, GELU},
    {"wav2vec2_k10_s5", 1, 16, 1, 10, 5, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"wav2vec2_k3_s2", 16, 16, 1, 3, 2, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"dac_k16_s8_p4", 8, 16, 1, 16, 8, 1, 4, 4, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"mamba_nlc_silu", 24, 24, 24, 4, 1, 1, 3, 0, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"mamba_ncl_silu", 24, 24, 24, 4, 1, 1, 3, 0, NCL, NCL, F32, F32, F32, NONE, SILU},
    {"mamba_nlc_none", 20, 20, 20, 4, 1, 1, 3, 0, NLC, NLC, F32, F32, F32, NONE, NONE},
    {"mamba_k2_nlc_silu", 9, 9, 9, 2, 1, 1, 1, 0, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"vqvae_d3_relu", 16, 16, 1, 3, 1, 3, 3, 3, NCL, NCL, F32, F32, F32, RELU, RELU},
    {"vqvae_d9_relu", 16, 16, 1, 3, 1, 9, 9, 9, NCL, NCL, F32, F32, F32, RELU, RELU},
    {"vqvae_k1_add_input", 16, 16, 1, 1, 1, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"vqvae_k1_add_input_nlc", 10, 10, 1, 1, 1, 1, 0, 0, NLC, NLC, F32, F32, F32, NONE, NONE},
    {"t_out_1", 5, 3, 1, 5, 1, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"t_out_1_stride", 4, 6, 2, 3, 4, 2, 1, 0, NLC, NCL, F32, F32, F32, NONE, NONE},
    {"k1_dense", 7, 5, 1, 1, 1, 1, 0, 0, NCL, NLC, F32, F32, F32, NONE, SILU},
    {"k16_same_length", 5, 6, 1, 16, 1, 1, 7, 8, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"k31_looped_taps", 3, 4, 1, 31, 2, 1, 15, 15, NLC, NCL, F32, F32, F32, NONE, SILU},
    {"odd_channels_nlc_to_ncl", 7, 9, 1, 3, 1, 1, 1, 1, NLC, NCL, F32, F32, F32, NONE, GELU},
    {"stride_5_over_k2", 6, 4, 1, 2, 5, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, RELU},
    {"groups2", 8, 6, 2, 3, 1, 1, 1, 1, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"groups4_s2_d2_asym", 12, 8, 4, 5, 2, 2, 2, 3, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"groups4_out_mult2", 4, 8, 4, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, F32, NONE, NONE},
    {"groups2_c32_sgemm_blocks", 32, 48, 2, 3, 1, 2, 2, 1, NCL, NLC, F32, F32, F32, NONE, GELU},
    {"groups3_nlc_pre_gelu", 9, 6, 3, 3, 1, 1, 2, 0, NLC, NLC, F32, F32, F32, GELU, NONE},
    {"asym_pad_0_4", 6, 5, 1, 4, 3, 1, 0, 4, NLC, NCL, F32, F32, F32, NONE, GELU},
    {"asym_pad_5_1", 3, 4, 1, 3, 2, 2, 5, 1, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"dilation_larger_than_input", 4, 4, 1, 3, 1, 7, 7, 7, NCL, NLC, F32, F32, F32, NONE, GELU},
    {"long_t_depthwise_nlc", 8, 8, 8, 4, 1, 1, 3, 0, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"long_t_dense_ncl", 4, 8, 1, 3, 1, 1, 1, 1, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"mamba_c520_k8_nlc", 520, 520, 520, 8, 1, 1, 7, 0, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"dw_nlc_s2_d2_pre_gelu_add_bf16", 33, 33, 33, 3, 2, 2, 4, 1, NLC, NLC, BF16, F32, BF16, GELU, RELU},
    {"dw_nlc_causal_pre_silu_f16", 40, 40, 40, 4, 1, 1, 3, 0, NLC, NLC, F16, F16, F16, SILU, GELU},
    {"dw_nlc_stride3_f32", 17, 17, 17, 5, 3, 1, 2, 2, NLC, NLC, F32, F32, F32, RELU, NONE},
    {"f16_whisper_conv2_pos", 12, 12, 1, 3, 2, 1, 1, 1, NCL, NLC, F16, F16, F16, NONE, GELU},
    {"bf16_whisper_conv2_pos", 12, 12, 1, 3, 2, 1, 1, 1, NCL, NLC, BF16, BF16, BF16, NONE, GELU},
    {"f16_mamba_nlc_silu", 24, 24, 24, 4, 1, 1, 3, 0, NLC, NLC, F16, F16, F16, NONE, SILU},
    {"bf16_mamba_ncl_silu", 24, 24, 24, 4, 1, 1, 3, 0, NCL, NCL, BF16, BF16, BF16, NONE, SILU},
    {"mixed_bf16_x_f32_w_f16_y", 8, 6, 2, 3, 2, 1, 1, 2, NLC, NCL, BF16, F32, F16, NONE, GELU},
    {"f16_vqvae_k1_add_input", 16, 16, 1, 1, 1, 1, 0, 0, NCL, NCL, F16, F16, F16, NONE, NONE},
    {"bf16_vqvae_d3_relu", 16, 16, 1, 3, 1, 3, 3, 3, NLC, NLC, BF16, BF16, BF16, RELU, RELU},
    /* tests/test_gpu_conv.c, bcases */
    {"vqvae_d9_relu_bwd", 16, 16, 1, 3, 1, 9, 9, 9, NCL, NCL, F32, F32, F32, NONE, RELU},
    {"k1_bwd", 7, 5, 1, 1, 1, 1, 0, 0, NLC, NCL, F32, F32, F32, NONE, SILU},
    {"odd_channels_bwd", 7, 9, 1, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, F32, NONE, GELU},
    {"mixed_f32_x_bf16_w_f32_y_bwd", 8, 6, 2, 3, 2, 1, 1, 2, NCL, NLC, F32, BF16, F32, NONE, GELU},
    {"dw_causal_nlc_silu_c64_k4", 64, 64, 64, 4, 1, 1, 3, 0, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"dense_ncl_gelu_bias", 16, 24, 1, 3, 1, 1, 1, 1, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"grouped3_nlc_relu", 9, 12, 3, 3, 1, 1, 2, 0, NLC, NLC, F32, F32, F32, NONE, RELU},
    {"s2_d2_dense_gelu", 6, 10, 1, 4, 2, 2, 3, 3, NCL, NLC, F32, F32, F32, NONE, GELU},
    {"s3_d2_dw_ncl_silu", 12, 12, 12, 5, 3, 2, 4, 2, NCL, NCL, F32, F32, F32, NONE, SILU},
    {"k1_ncl_none", 11, 7, 1, 1, 1, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"k31_looped_taps_bwd", 3, 4, 1, 31, 2, 1, 15, 15, NLC, NCL, F32, F32, F32, NONE, GELU},
    {"f16_dense_ncl_gelu", 12, 12, 1, 3, 1, 1, 1, 1, NCL, NCL, F16, F16, F16, NONE, GELU},
    {"bf16_dw_causal_nlc_silu", 40, 40, 40, 4, 1, 1, 3, 0, NLC, NLC, BF16, BF16, BF16, NONE, SILU},
    {"f16_x_bf16_dy_grouped_s2", 8, 6, 2, 3, 2, 2, 2, 1, NLC, NCL, F16, F32, BF16, NONE, RELU},
    {"bf16_k1_nlc_none", 10, 10, 1, 1, 1, 1, 0, 0, NLC, NLC, BF16, BF16, BF16, NONE, NONE},
    /* tests/test_gpu_conv.c, dcases */
    {"dw_nlc_causal_silu_bf16", 64, 64, 64, 4, 1, 1, 3, 0, NLC, NLC, BF16, BF16, BF16, NONE, SILU},
    {"dw_nlc_causal_none_f16", 40, 40, 40, 4, 1, 1, 3, 0, NLC, NLC, F16, F16, F16, NONE, NONE},
    {"dw_nlc_k8_d2_gelu_f32", 32, 32, 32, 8, 1, 2, 14, 0, NLC, NLC, F32, F32, F32, NONE, GELU},
    {"dw_nlc_same_k3_pre_relu_add_bf16", 48, 48, 48, 3, 1, 1, 1, 1, NLC, NLC, BF16, BF16, BF16, RELU, RELU},
    {"dw_nlc_k2_add_broadcast_f32", 12, 12, 12, 2, 1, 1, 1, 0, NLC, NLC, F32, F32, F32, NONE, NONE},
    {"dw_nlc_longer_out_k3_p5", 16, 16, 16, 3, 1, 1, 5, 5, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"dw_nlc_shorter_out_k5_p0", 16, 16, 16, 5, 1, 1, 0, 0, NLC, NLC, F16, F16, F16, NONE, GELU},
    {"dw_nlc_x_bf16_y_f32", 16, 16, 16, 4, 1, 1, 3, 0, NLC, NLC, BF16, F32, F32, NONE, SILU},
    {"dw_ncl_k5_d3_same_gelu_add_f16", 10, 10, 10, 5, 1, 3, 6, 6, NCL, NCL, F16, F16, F16, NONE, GELU},
    {"dw_ncl_k1_f32", 8, 8, 8, 1, 1, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"dw_ncl_k1_pad4_f32", 8, 8, 8, 1, 1, 1, 4, 4, NCL, NCL, F32, F32, F32, NONE, RELU},
    {"dw_ncl_anticausal_relu_bf16", 16, 16, 16, 4, 1, 1, 0, 3, NCL, NCL, BF16, BF16, BF16, NONE, RELU},
    {"dw_ncl_shorter_out_k5_p0_f32", 6, 6, 6, 5, 1, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, SILU},
    {"dw_ncl_long_t_f32", 4, 4, 4, 4, 1, 1, 3, 0, NCL, NCL, F32, F32, F32, NONE, SILU},
    {"dw_nlc_mamba_c256_bf16", 256, 256, 256, 4, 1, 1, 3, 0, NLC, NLC, BF16, BF16, BF16, NONE, SILU},
    {"dw_ncl_mamba_c256_bf16", 256, 256, 256, 4, 1, 1, 3, 0, NCL, NCL, BF16, BF16, BF16, NONE, SILU},
    /* tests/test_gpu_conv.c, gcases_gemm */
    {"g_dilated_k3_d9_relu_relu", 40, 70, 1, 3, 1, 9, 9, 9, NCL, NCL, F32, F32, F32, RELU, RELU},
    {"g_nlc_nlc_gelu_s2_add", 33, 20, 1, 3, 2, 1, 1, 1, NLC, NLC, F32, F32, F32, NONE, GELU},
    {"g_ncl_to_nlc_silu_k2_s2", 24, 136, 1, 2, 2, 1, 0, 0, NCL, NLC, F32, F32, F32, NONE, SILU},
    {"g_nlc_to_ncl_d3_asym_5_0_bcast", 19, 31, 1, 3, 1, 3, 5, 0, NLC, NCL, F32, F32, F32, NONE, NONE},
    {"g_resconv_k1_add_input", 64, 64, 1, 1, 1, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"g_resconv_k1_add_input_nlc", 20, 20, 1, 1, 1, 1, 0, 0, NLC, NLC, F32, F32, F32, NONE, NONE},
    {"g_wav2vec2_k3_s2", 40, 48, 1, 3, 2, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"g_dac_k16_s8_p4", 24, 40, 1, 16, 8, 1, 4, 4, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"g_jukebox_d27_relu_relu", 16, 16, 1, 3, 1, 27, 27, 27, NCL, NCL, F32, F32, F32, RELU, RELU},
    {"g_t_out_1", 7, 9, 1, 5, 1, 1, 0, 0, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"g_t_out_1_stride4_c130", 6, 130, 1, 3, 4, 2, 1, 0, NLC, NCL, F32, F32, F32, NONE, NONE},
    {"g_k16_same_p7_8_nlc", 5, 6, 1, 16, 1, 1, 7, 8, NLC, NLC, F32, F32, F32, NONE, SILU},
    {"g_pre_gelu_bcast_nlc", 9, 300, 1, 3, 1, 1, 2, 0, NLC, NLC, F32, F32, F32, GELU, NONE},
    {"g_pre_silu_d2_s3_asym", 12, 17, 1, 5, 3, 2, 0, 6, NCL, NLC, F32, F32, F32, SILU, GELU},
    {"g_long_t_ncl", 8, 24, 1, 3, 1, 1, 1, 1, NCL, NCL, F32, F32, F32, NONE, GELU},
    {"g_f16_ncl_to_nlc_gelu_add", 48, 64, 1, 3, 1, 1, 1, 1, NCL, NLC, F16, F16, F16, NONE, GELU},
    {"g_bf16_x_f16_w_f32_y_k2_s2", 10, 12, 1, 2, 2, 1, 1, 0, NLC, NCL, BF16, F16, F32, NONE, SILU},
    {"g_f32_x_bf16_y_k2_s5", 24, 36, 1, 2, 5, 1, 0, 0, NCL, NCL, F32, F32, BF16, NONE, GELU},
    {"g_bf16_dilated_c64_d9_relu", 64, 96, 1, 3, 1, 9, 9, 9, NCL, NCL, BF16, BF16, BF16, NONE, RELU},
    {"g_bf16_nlc_c32_k2_s2_gelu_add", 32, 48, 1, 2, 2, 1, 0, 0, NLC, NLC, BF16, BF16, BF16, NONE, GELU},
    {"g_bf16_c32_k3_s2_gelu", 32, 72, 1, 3, 2, 1, 1, 0, NCL, NCL, BF16, BF16, BF16, NONE, GELU},
    {"g_nlc_f32_c32_pre_silu_d2", 32, 40, 1, 3, 1, 2, 2, 1, NLC, NCL, F32, F32, F32, SILU, NONE},
    {"g_nlc_f16_c16_k2_gelu", 16, 24, 1, 2, 1, 1, 1, 0, NLC, NLC, F16, F16, F16, NONE, GELU},
    {"g_wide_nlc_c24_o300_d2_add", 24, 300, 1, 3, 1, 2, 2, 2, NLC, NLC, BF16, BF16, BF16, NONE, GELU},
    {"g_wide_ncl_c32_o272_k4_s2_bcast", 32, 272, 1, 4, 2, 1, 1, 2, NCL, NCL, BF16, F32, F32, RELU, SILU},
    {"g_bf16_c32_k8_s4_p2", 32, 40, 1, 8, 4, 1, 2, 2, NCL, NCL, BF16, BF16, BF16, NONE, NONE},
    /* bench/conv_gpu.c */
    BENCH("ncl_f32", NCL, F32), BENCH("nlc_f32", NLC, F32),
    BENCH("ncl_bf16", NCL, BF16), BENCH("nlc_bf16", NLC, BF16),
    /* the stem's descriptors (ws_stem_descs) as engine descriptors: the intermediate in
     * float32, float16, bfloat16 */
    {"stem_tiny_c1_f32", 80, 384, 1, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, F32, NONE, GELU},
    {"stem_tiny_c1_f16", 80, 384, 1, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, F16, NONE, GELU},
    {"stem_tiny_c1_bf16", 80, 384, 1, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, BF16, NONE, GELU},
    {"stem_tiny_c2_f32", 384, 384, 1, 3, 2, 1, 1, 1, NLC, NLC, F32, F32, F32, NONE, GELU},
    {"stem_tiny_c2_f16", 384, 384, 1, 3, 2, 1, 1, 1, NLC, NLC, F16, F32, F32, NONE, GELU},
    {"stem_tiny_c2_bf16", 384, 384, 1, 3, 2, 1, 1, 1, NLC, NLC, BF16, F32, F32, NONE, GELU},
    {"stem_large_v3_c1_f32", 128, 1280, 1, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, F32, NONE, GELU},
    {"stem_large_v3_c1_f16", 128, 1280, 1, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, F16, NONE, GELU},
    {"stem_large_v3_c1_bf16", 128, 1280, 1, 3, 1, 1, 1, 1, NCL, NLC, F32, F32, BF16, NONE, GELU},
    {"stem_large_v3_c2_f32", 1280, 1280, 1, 3, 2, 1, 1, 1, NLC, NLC, F32, F32, F32, NONE, GELU},
    {"stem_large_v3_c2_f16", 1280, 1280, 1, 3, 2, 1, 1, 1, NLC, NLC, F16, F32, F32, NONE, GELU},
    {"stem_large_v3_c2_bf16", 1280, 1280, 1, 3, 2, 1, 1, 1, NLC, NLC, BF16, F32, F32, NONE, GELU},
    /* every pre x act, dense: layouts, storage (all nine x / y pairs), K, S, D, pads, C_in a
     * multiple of 16 or not, C_out both sides of 64 */
    {"m_dense_none_none", 16, 24, 1, 3, 1, 1, 1, 1, NCL, NCL, F32, F32, F32, NONE, NONE},
    {"m_dense_none_relu", 12, 130, 1, 1, 1, 1, 0, 0, NCL, NLC, F16, F16, F32, NONE, RELU},
    {"m_dense_none_gelu", 32, 8, 1, 5, 2, 2, 4, 3, NLC, NCL, BF16, BF16, F32, NONE, GELU},
    {"m_dense_none_silu", 7, 96, 1, 2, 3, 1, 1, 0, NLC, NLC, F32, F32, F16, NONE, SILU},
    {"m_dense_relu_none", 48, 64, 1, 4, 1, 3, 5, 4, NCL, NCL, F16, F32, F16, RELU, NONE},
    {"m_dense_relu_relu", 5, 65, 1, 7, 2, 1, 3, 3, NCL, NLC, BF16, BF16, F16, RELU, RELU},
    {"m_dense_relu_gelu", 16, 200, 1, 3, 4, 2, 2, 2, NLC, NCL, F32, F16, BF16, RELU, GELU},
    {"m_dense_relu_silu", 64, 40, 1, 1, 1, 1, 0, 0, NLC, NLC, F16, F16, BF16, RELU, SILU},
    {"m_dense_gelu_none", 9, 128, 1, 3, 1, 5, 5, 5, NCL, NCL, BF16, F32, BF16, GELU, NONE},
    {"m_dense_gelu_relu", 24, 16, 1, 8, 4, 1, 2, 1, NCL, NLC, F32, F32, F32, GELU, RELU},
    {"m_dense_gelu_gelu", 33, 72, 1, 3, 2, 1, 1, 1, NLC, NCL, F16, BF16, F32, GELU, GELU},
    {"m_dense_gelu_silu", 16, 4, 1, 2, 1, 2, 0, 2, NLC, NLC, BF16, BF16, F32, GELU, SILU},
    {"m_dense_silu_none", 3, 257, 1, 11, 1, 1, 5, 5, NCL, NCL, F32, F32, F16, SILU, NONE},
    {"m_dense_silu_relu", 80, 48, 1, 3, 2, 2, 2, 2, NCL, NLC, F16, F16, F16, SILU, RELU},
    {"m_dense_silu_gelu", 128, 136, 1, 3, 1, 1, 1, 1, NLC, NCL, BF16, F32, F16, SILU, GELU},
    {"m_dense_silu_silu", 20, 33, 1, 6, 3, 2, 0, 0, NLC, NLC, F32, BF16, BF16, SILU, SILU},
    /* every pre x act, depthwise (NLC where pre + act is even, NCL where odd), K 1 to 8,
     * causal, "same" and anti-causal pads */
    {"m_dw_none_none", 32, 32, 32, 4, 1, 1, 3, 0, NLC, NLC, F32, F32, F32, NONE, NONE},
    {"m_dw_none_relu", 16, 16, 16, 3, 1, 1, 1, 1, NCL, NCL, F16, F16, F16, NONE, RELU},
    {"m_dw_none_gelu", 24, 24, 24, 8, 1, 2, 14, 0, NLC, NLC, BF16, BF16, BF16, NONE, GELU},
    {"m_dw_none_silu", 8, 8, 8, 1, 1, 1, 0, 0, NCL, NCL, F32, F32, BF16, NONE, SILU},
    {"m_dw_relu_none", 40, 40, 40, 2, 1, 1, 1, 0, NCL, NCL, BF16, F32, F32, RELU, NONE},
    {"m_dw_relu_relu", 64, 64, 64, 5, 1, 3, 6, 6, NLC, NLC, F16, F16, F32, RELU, RELU},
    {"m_dw_relu_gelu", 12, 12, 12, 4, 1, 1, 0, 3, NCL, NCL, F32, BF16, F16, RELU, GELU},
    {"m_dw_relu_silu", 48, 48, 48, 7, 1, 2, 12, 0, NLC, NLC, BF16, BF16, F16, RELU, SILU},
    {"m_dw_gelu_none", 20, 20, 20, 3, 1, 1, 2, 0, NLC, NLC, F16, F16, BF16, GELU, NONE},
    {"m_dw_gelu_relu", 10, 10, 10, 6, 1, 2, 10, 0, NCL, NCL, F32, F32, F32, GELU, RELU},
    {"m_dw_gelu_gelu", 128, 128, 128, 4, 1, 1, 3, 0, NLC, NLC, BF16, BF16, BF16, GELU, GELU},
    {"m_dw_gelu_silu", 6, 6, 6, 4, 1, 1, 3, 0, NCL, NCL, F16, F16, F16, GELU, SILU},
    {"m_dw_silu_none", 4, 4, 4, 8, 1, 1, 7, 0, NCL, NCL, BF16, F32, F32, SILU, NONE},
    {"m_dw_silu_relu", 56, 56, 56, 2, 1, 1, 0, 1, NLC, NLC, F32, F32, F16, SILU, RELU},
    {"m_dw_silu_gelu", 36, 36, 36, 3, 1, 4, 8, 0, NCL, NCL, F16, BF16, BF16, SILU, GELU},
    {"m_dw_silu_silu", 256, 256, 256, 4, 1, 1, 3, 0, NLC, NLC, BF16, BF16, BF16, SILU, SILU},
};
/* clang-format on */
#undef BENCH
#undef NCL
#undef NLC
#undef F32
#undef F16
#undef BF16
#undef NONE
#undef RELU
#undef GELU
#undef SILU

#define N_SHAPES_ENG ((int)(sizeof shapes_eng / sizeof shapes_eng[0]))

/* the modules of one row, in this order */
enum { ENG_DIRECT_FWD, ENG_DW_FWD, ENG_GEMM_F32, ENG_GEMM_TF32, ENG_GEMM_F16, ENG_GEMM_BF16,
       ENG_DIRECT_BWD, ENG_DW_BWD, ENG_NMOD };
static const char *const eng_mod_name[ENG_NMOD] = {
    "direct fwd", "depthwise fwd", "gemm f32", "gemm tf32", "gemm f16", "gemm bf16",
    "direct bwd", "depthwise bwd",
};

typedef struct {
    const char *shape; /* shapes_eng's name */
    int sm;            /* target, cc_major * 10 + cc_minor */
    uint64_t hash[ENG_NMOD]; /* fnv1a64 of each module's text, 0: not emitted */
} golden_eng_row;

static ws_conv_desc eng_desc(const eng_shape *s, ws_conv_op op, ws_math math)
{
    ws_conv_desc d;
    memset(&d, 0, sizeof d);
    d.op = op;
    d.c_in = s->c_in, d.c_out = s->c_out, d.groups = s->groups, d.k = s->k;
    d.stride = s->stride, d.dilation = s->dilation, d.pad_l = s->pad_l, d.pad_r = s->pad_r;
    d.x_layout = s->xl, d.y_layout = s->yl;
    d.x_type = s->xt, d.w_type = s->wt, d.y_type = s->yt;
    d.math = math;
    d.pre = op == WS_CONV_BWD ? WS_ACT_NONE : s->pre;
    d.act = s->act;
    return d;
}

/* module m of shape s for target sm: its text (malloc'd), or NULL when the family does not
 * take the descriptor; a family that takes it and fails to emit fails the test */
static char *eng_emit(const eng_shape *s, int m, int sm, ws_math math, char *name, size_t cap)
{
    static const ws_math gemm_math[] = { WS_MATH_F32, WS_MATH_TF32, WS_MATH_F16, WS_MATH_BF16 };
    const int bwd = m == ENG_DIRECT_BWD || m == ENG_DW_BWD;
    if (m >= ENG_GEMM_F32 && m <= ENG_GEMM_BF16)
        math = gemm_math[m - ENG_GEMM_F32];
    const ws_conv_desc d = eng_desc(s, bwd ? WS_CONV_BWD : WS_CONV_FWD, math);
    ws_err err = { "" };
    if (ws_conv_check(&d, &err))
        return NULL;
    char *text = NULL;
    char mod[256] = "";
    if (m == ENG_DIRECT_FWD || m == ENG_DIRECT_BWD) {
        ws_direct_name(&d, mod);
        text = ws_direct_emit(&d, sm / 10, sm % 10, &err);
    } else if (m == ENG_DW_FWD || m == ENG_DW_BWD) {
        if (!ws_dw_fits(&d))
            return NULL;
        ws_dw_name(&d, mod);
        text = ws_dw_emit(&d, sm / 10, sm % 10, &err);
    } else {
        if (!ws_gemm_fits(&d))
            return NULL;
        ws_gemm_name(&d, mod);
        text = ws_gemm_emit(&d, sm / 10, sm % 10, &err);
    }
    cr_assert_not_null(text, "%s sm_%d %s: %s", s->name, sm, eng_mod_name[m], err.msg);
    snprintf(name, cap, "%s", mod);
    return text;
}

/* clang-format off */
static const golden_eng_row golden_eng[] = {
    { "whisper_conv1", 80,
      { 0xc88ea068074d1f93ULL, 0, 0xa917ba85bc9afc49ULL, 0x9f623c6b8f4e0637ULL,
        0x23d22903b6401ba0ULL, 0x0256174c4e4bc7a2ULL, 0x33f0d9c8278e824dULL, 0 } },
    { "whisper_conv1", 90,
      { 0x4d06ba7bcf8713bdULL, 0, 0x56929906b1c34e47ULL, 0xeedfbf8f0ceebc3dULL,
        0xee247090431f86b6ULL, 0x9ea089c0822b45a8ULL, 0xe75ba384854dfb97ULL, 0 } },
    { "whisper_conv2_pos", 80,
      { 0x22a749a8e143eb3fULL, 0, 0x84c9587904fe2fd4ULL, 0x91c6caecf8b6f16fULL,
        0x3deb91d2f2d54f87ULL, 0x8d5fe8b18002d383ULL, 0x1c63e9dc62e90a0fULL, 0 } },
    { "whisper_conv2_pos", 90,
      { 0x865884841a633f8dULL, 0, 0x34924941d4fd6cd6ULL, 0x3b84a432b5c55385ULL,
        0x15f4f8d89484a3ddULL, 0x47004e2ef9b44969ULL, 0xda1bfa1b13fe0185ULL, 0 } },
    { "wav2vec2_k10_s5", 80,
      { 0x3e363278bf628abdULL, 0, 0x11b52a5d01c3e614ULL, 0x88c26bf93c6d0c57ULL,
        0xb1d808a2d03afa7aULL, 0x5bf41ac8cba84b7eULL, 0x1d295bee8d851ed9ULL, 0 } },
    { "wav2vec2_k10_s5", 90,
      { 0xcd65f6abe48b66f3ULL, 0, 0xce410bebc5e2d5e6ULL, 0x4a25df3b323d9391ULL,
        0x67e0eaa97159ce28ULL, 0xf0eba74c5b9e04fcULL, 0x2292275810e7c20fULL, 0 } },
    { "wav2vec2_k3_s2", 80,
      { 0x1529c31318d30d53ULL, 0, 0x7a3bbc34bd0093a4ULL, 0x60d89377521f6b6cULL,
        0x2248e64ec5516a1fULL, 0xa36d1bc46029a233ULL, 0xbee6c3ce82994816ULL, 0 } },
    { "wav2vec2_k3_s2", 90,
      { 0x33e11e5b20b94bbdULL, 0, 0x305b3ca1c62a273cULL, 0xb7b2e2b1adb59226ULL,
        0x1a07b48abfc0df59ULL, 0x9ec42d642e6b908dULL, 0xb048264b2ddc9410ULL, 0 } },
    { "dac_k16_s8_p4", 80,
      { 0x2f5158cafe6d9adcULL, 0, 0x91735293b617a487ULL, 0x7265a2638d74b49dULL,
        0x52bd71cc45d28663ULL, 0xafbafb0229b09e05ULL, 0x87edd07cc7d3a83fULL, 0 } },
    { "dac_k16_s8_p4", 90,
      { 0x0c6cdaef5b057d8aULL, 0, 0xc64016f1e56df10dULL, 0xfa8c373b704df633ULL,
        0xc445bac93233b99dULL, 0xd2dc3d3fadc09297ULL, 0x391590bf7248a775ULL, 0 } },
    { "mamba_nlc_silu", 80,
      { 0x64ee67b20cf919a4ULL, 0x408b50cc8d2b9335ULL, 0, 0,
        0, 0, 0xd23fd64879966fa3ULL, 0xbbe833d7ab10b2faULL } },
    { "mamba_nlc_silu", 90,
      { 0x18393236cf3d336aULL, 0xca94270ea86a6837ULL, 0, 0,
        0, 0, 0xe3a3412d7fbf60c9ULL, 0x7f72ed52406dfca4ULL } },
    { "mamba_ncl_silu", 80,
      { 0x864b9a3c13cd8d21ULL, 0x7328dc73396bd2b3ULL, 0, 0,
        0, 0, 0xb17c8890e1ebc957ULL, 0x074388cdf9f8ba38ULL } },
    { "mamba_ncl_silu", 90,
      { 0x416391b6ce851dcbULL, 0x31d2fdb9f427ce1dULL, 0, 0,
        0, 0, 0xe4bbebe5870157a5ULL, 0xbe31ef8600f16b6eULL } },
    { "mamba_nlc_none", 80,
      { 0x2c154cd1517a9f33ULL, 0x3bdb665ea5d54cedULL, 0, 0,
        0, 0, 0xc8930387ee559166ULL, 0x8fb280713f84336bULL } },
    { "mamba_nlc_none", 90,
      { 0xae10c6c935e8ef35ULL, 0x0d7fb43cb9b8e573ULL, 0, 0,
        0, 0, 0xb5574e9128891438ULL, 0xced78c3fd958ff01ULL } },
    { "mamba_k2_nlc_silu", 80,
      { 0x0adb84f64d58b28aULL, 0, 0, 0,
        0, 0, 0xde7f758efbec38faULL, 0 } },
    { "mamba_k2_nlc_silu", 90,
      { 0xf51d76bb24adc8e4ULL, 0, 0, 0,
        0, 0, 0xb5fef44fe6d1d8c4ULL, 0 } },
    { "vqvae_d3_relu", 80,
      { 0xc8247c79707d1a94ULL, 0, 0x0c974af774e7d342ULL, 0x9f050b970db69355ULL,
        0x7dd94b9347ec8655ULL, 0xe765fd49726ded6bULL, 0xdcbd6ed5c8d62a12ULL, 0 } },
    { "vqvae_d3_relu", 90,
      { 0x3d930aeb012e5b66ULL, 0, 0xa7ff1be4a4366f90ULL, 0x09ca137923c74547ULL,
        0xde9f4629c9fe4f9bULL, 0xf560e12e37d50699ULL, 0x54b15f34ff2aeb70ULL, 0 } },
    { "vqvae_d9_relu", 80,
      { 0xb5203b22bba92c93ULL, 0, 0x2af289fcc7144f2eULL, 0xbd8749b5dbd262bbULL,
        0x43382b477a1be8dbULL, 0xe46e4ed36a4a0c2dULL, 0xbf2719504853bb20ULL, 0 } },
    { "vqvae_d9_relu", 90,
      { 0xf39080bab61d0d05ULL, 0, 0xee559cd83f778034ULL, 0x2fd91ebe077ebfa1ULL,
        0xc5ec0bd971d98bd5ULL, 0x9cf2b048d7244237ULL, 0x73066c4d9233e77eULL, 0 } },
    { "vqvae_k1_add_input", 80,
      { 0xa053c064a2559916ULL, 0, 0x2164a9df03034615ULL, 0xd885e441d6dbc79fULL,
        0xf76f42ac85b356c3ULL, 0xce16673db361f9e5ULL, 0x983048501cb54fb8ULL, 0 } },
    { "vqvae_k1_add_input", 90,
      { 0xbe9c67958393b5ecULL, 0, 0x6e55beed02303ad1ULL, 0x7958dd2dc21753adULL,
        0x14f5a65bb300769dULL, 0x2060077f7962e03fULL, 0x920f83f887a14152ULL, 0 } },
    { "vqvae_k1_add_input_nlc", 80,
      { 0x8a5aba35de7c7de2ULL, 0, 0xb6a10b62cac3563eULL, 0x57253b7784881b09ULL,
        0xff6fa35f77f939d8ULL, 0xa439e8b30a5eb6a8ULL, 0xa0cf08520eebe095ULL, 0 } },
    { "vqvae_k1_add_input_nlc", 90,
      { 0x45654a3a6a2dcdc0ULL, 0, 0xf7d6026fc729ca78ULL, 0x1492337ec809a947ULL,
        0x050e89d922c02b5eULL, 0x65d6fbd4454231c6ULL, 0xe4b058195a11b0a7ULL, 0 } },
    { "t_out_1", 80,
      { 0x1b245bfcf366eb0cULL, 0, 0xfce92b74623c5031ULL, 0x40d7ebab33e47e2aULL,
        0x20fd80f327dc4415ULL, 0x2be8bb0042b03885ULL, 0x8b41fed7be8a8bf4ULL, 0 } },
    { "t_out_1", 90,
      { 0x5b5dc11f79a68416ULL, 0, 0x4838b78ca5ae4edfULL, 0x926bd8c22a18d694ULL,
        0xd6d667a14597a5cbULL, 0xe43657277809725bULL, 0x1169256a30ad288aULL, 0 } },
    { "t_out_1_stride", 80,
      { 0x9b157afbabbacc53ULL, 0, 0, 0,
        0, 0, 0x3156edf9f42d7c2eULL, 0 } },
    { "t_out_1_stride", 90,
      { 0x08033fdc52a56201ULL, 0, 0, 0,
        0, 0, 0x094e64e3b80ebd04ULL, 0 } },
    { "k1_dense", 80,
      { 0xd4fe9078b9960eeaULL, 0, 0x57c13096a966a2e1ULL, 0x8ac7080aec9efba0ULL,
        0xb2fa75c1491fbf0aULL, 0x033a7379bb206326ULL, 0xe828e60bcccda423ULL, 0 } },
    { "k1_dense", 90,
      { 0x1f43e35b066adda4ULL, 0, 0x7db9f91f6ca90337ULL, 0x5f23fcd004f0c91eULL,
        0xcdf1a43363ea1700ULL, 0x1103ab141d64d1c4ULL, 0x4ee51f876c9d74edULL, 0 } },
    { "k16_same_length", 80,
      { 0xdb98da74d5403cc0ULL, 0, 0x52cffae57d25d4d4ULL, 0xc5b5c0232f0462beULL,
        0x1d9791ec3ae525a2ULL, 0x87fc6db37dee55acULL, 0x1ba654a3597681abULL, 0 } },
    { "k16_same_length", 90,
      { 0xc276b90320de3e5eULL, 0, 0x422209674b923c16ULL, 0x6580eb37ee7ae8f8ULL,
        0xb7c761cf423d773cULL, 0x4ddd5a8351a36b86ULL, 0x384a62fe6bb38175ULL, 0 } },
    { "k31_looped_taps", 80,
      { 0x7e2271ec24320196ULL, 0, 0x0e9290d554eec332ULL, 0x9d59ebae98abafb9ULL,
        0x4335349f877463edULL, 0x3c8305c89735fbd5ULL, 0xc69206d9f758d7aaULL, 0 } },
    { "k31_looped_taps", 90,
      { 0xe2b8189f205a47a4ULL, 0, 0xb84bf7133d943100ULL, 0xbbd45ef0e48224dfULL,
        0x84836178a715496fULL, 0x185591f5121f7527ULL, 0x070c4ae187397024ULL, 0 } },
    { "odd_channels_nlc_to_ncl", 80,
      { 0xcc6c42c6a619badbULL, 0, 0x5413823cedc915dfULL, 0x18ed96ef4f8b9eb1ULL,
        0x491338aa92a193cfULL, 0x2a85295243bb1d65ULL, 0x1e99e6334869177cULL, 0 } },
    { "odd_channels_nlc_to_ncl", 90,
      { 0x17a11c0bd3f3e979ULL, 0, 0x51b00a55333f1641ULL, 0xb56c33baae90b727ULL,
        0x01f1c84ae6ce5eb9ULL, 0x73cd863ca048a9f7ULL, 0xce9312d9d248dd66ULL, 0 } },
    { "stride_5_over_k2", 80,
      { 0xd9c83a34b5b251ccULL, 0, 0x31971ea7b4eb4788ULL, 0x5158ccb690a128c9ULL,
        0x4e7345cafa4efab6ULL, 0x9a6e690368b7dac6ULL, 0x5d1e5b38ff5c779dULL, 0 } },
    { "stride_5_over_k2", 90,
      { 0x5d1ae15cfed6ae4eULL, 0, 0xe90bc60b402749aeULL, 0x4744748b3764f3f7ULL,
        0x0afe9bb51ff7547cULL, 0x88668131129bf59cULL, 0xbc3d4509addbd82bULL, 0 } },
    { "groups2", 80,
      { 0xcd3ef6b3c12a026eULL, 0, 0, 0,
        0, 0, 0x125930c88ba8171cULL, 0 } },
    { "groups2", 90,
      { 0x41ef0d555fdd47c0ULL, 0, 0, 0,
        0, 0, 0x9b74c7d8f6d062f6ULL, 0 } },
    { "groups4_s2_d2_asym", 80,
      { 0x967ee0d6439085b8ULL, 0, 0, 0,
        0, 0, 0x15edaf67aa943316ULL, 0 } },
    { "groups4_s2_d2_asym", 90,
      { 0x5297211d167cbbaaULL, 0, 0, 0,
        0, 0, 0xfca1f46c87e1aa14ULL, 0 } },
    { "groups4_out_mult2", 80,
      { 0x3c2174c72e8b2defULL, 0, 0, 0,
        0, 0, 0x62ff531684c03d98ULL, 0 } },
    { "groups4_out_mult2", 90,
      { 0x0fe63987e190a045ULL, 0, 0, 0,
        0, 0, 0xb0c30298e6fc39baULL, 0 } },
    { "groups2_c32_sgemm_blocks", 80,
      { 0x07f2161a198fff6cULL, 0, 0, 0,
        0, 0, 0xe3c4203299ac7bbeULL, 0 } },
    { "groups2_c32_sgemm_blocks", 90,
      { 0x5bcc17f6a1ed085aULL, 0, 0, 0,
        0, 0, 0x1bfe844c8de80f58ULL, 0 } },
    { "groups3_nlc_pre_gelu", 80,
      { 0xa46da1e33b69a108ULL, 0, 0, 0,
        0, 0, 0x07221e17671bc45aULL, 0 } },
    { "groups3_nlc_pre_gelu", 90,
      { 0x10b9a81abd192246ULL, 0, 0, 0,
        0, 0, 0x271e0d99e263db88ULL, 0 } },
    { "asym_pad_0_4", 80,
      { 0xc12bd0335ca05a95ULL, 0, 0xaf7e9e1fcfd8f381ULL, 0x60e2e58725bfbad3ULL,
        0xed35d941c8f361faULL, 0xf936a2b1dbcdca32ULL, 0x221c4cf86fe90b37ULL, 0 } },
    { "asym_pad_0_4", 90,
      { 0xb9d79a96be353b9fULL, 0, 0xa1e1ec855569118bULL, 0x01e67fa3834dda21ULL,
        0x2e046133853ad7ecULL, 0x3879f6e30f180554ULL, 0xf4aa727957b3a4adULL, 0 } },
    { "asym_pad_5_1", 80,
      { 0x493384f4ce2fa458ULL, 0, 0xa967702562d9be98ULL, 0xd94d88eb6595fbe4ULL,
        0x53890c809d052716ULL, 0x656b8f1ab5359436ULL, 0xc865542b6b13f2c5ULL, 0 } },
    { "asym_pad_5_1", 90,
      { 0x2865c92a0031bd5aULL, 0, 0xfeb14bbc031e10feULL, 0xb2383a5a0e15951eULL,
        0x0713d18f317915acULL, 0x4a0e631b98816114ULL, 0x06f51f6fd3b8fa8fULL, 0 } },
    { "dilation_larger_than_input", 80,
      { 0x49f3f048a2e099c0ULL, 0, 0x8d9b31040ca5a373ULL, 0x6235ff012f4df9b9ULL,
        0x7825b2b9ba70b37fULL, 0xfe072db4ad542093ULL, 0x0195f7dfb5b540fbULL, 0 } },
    { "dilation_larger_than_input", 90,
      { 0x61ae877b5e7b1d06ULL, 0, 0x81c881938f0d76d1ULL, 0xe5080bf36882b37bULL,
        0xcc7f52bfd897fd49ULL, 0x24f48e35003255b5ULL, 0xab024db291a1c0d1ULL, 0 } },
    { "long_t_depthwise_nlc", 80,
      { 0xec3c5e0c41453242ULL, 0x8b88f51c754019cbULL, 0, 0,
        0, 0, 0xa1f5807861baa4dfULL, 0x1bd286b71fbb3befULL } },
    { "long_t_depthwise_nlc", 90,
      { 0xcd9c15ced77f94e4ULL, 0xe38c5f26eb3b52c1ULL, 0, 0,
        0, 0, 0xe641984cad69e23dULL, 0x5d39cadd0516dbf5ULL } },
    { "long_t_dense_ncl", 80,
      { 0xd33076ed5933ff8bULL, 0, 0x61a4dbfeb17653e6ULL, 0xbea5abf802b762d3ULL,
        0x4464be12367fe068ULL, 0x0c8934fc5e9b2ae8ULL, 0x42734c10c9ebc73eULL, 0 } },
    { "long_t_dense_ncl", 90,
      { 0xf16125d4157778e1ULL, 0, 0x3ae4c4cefea832b0ULL, 0xb397829c5595ef91ULL,
        0x7111fc0ef8ce1b6aULL, 0x955a96cfbe268e22ULL, 0xe57a3f69fb25ad58ULL, 0 } },
    { "mamba_c520_k8_nlc", 80,
      { 0xfaa7fc0feb8bbfe5ULL, 0x5c9cbf05f10c093eULL, 0, 0,
        0, 0, 0x407fe9f2f76ebf42ULL, 0x7dd206b3ff6e2265ULL } },
    { "mamba_c520_k8_nlc", 90,
      { 0x5a5a12b0fc147b8fULL, 0xfadb5b9da6a36f44ULL, 0, 0,
        0, 0, 0x3566a86470f379b4ULL, 0xf91fa509c0cad327ULL } },
    { "dw_nlc_s2_d2_pre_gelu_add_bf16", 80,
      { 0x963e73bd2ffe6fcfULL, 0, 0, 0,
        0, 0, 0xa36b6e25b0e12d81ULL, 0 } },
    { "dw_nlc_s2_d2_pre_gelu_add_bf16", 90,
      { 0xc64a12842c6a4d81ULL, 0, 0, 0,
        0, 0, 0x3f152fa87ee3caa3ULL, 0 } },
    { "dw_nlc_causal_pre_silu_f16", 80,
      { 0xd868334b12312079ULL, 0x1d063157fe4a13d9ULL, 0, 0,
        0, 0, 0xb1334bcd909a5148ULL, 0x83a71dd4c4227608ULL } },
    { "dw_nlc_causal_pre_silu_f16", 90,
      { 0xd55703ef117e9e8bULL, 0xd482ad1067bd6bdfULL, 0, 0,
        0, 0, 0x964ea42745f1964aULL, 0xf4c268bab7431de2ULL } },
    { "dw_nlc_stride3_f32", 80,
      { 0x462b7ee34085cacbULL, 0, 0, 0,
        0, 0, 0x5915ec1971d4c158ULL, 0 } },
    { "dw_nlc_stride3_f32", 90,
      { 0x68621cd9c667482dULL, 0, 0, 0,
        0, 0, 0x087a12d244878e12ULL, 0 } },
    { "f16_whisper_conv2_pos", 80,
      { 0x38e30c4fbe56a45fULL, 0, 0x27cb362c4512165dULL, 0x41223754fb36a63fULL,
        0xa57b03d2b3583367ULL, 0x64f40858781481aeULL, 0x47e2fd12c05381b7ULL, 0 } },
    { "f16_whisper_conv2_pos", 90,
      { 0x71007ebe11505cf1ULL, 0, 0x614542012fa34b4bULL, 0x1c68b730d9f31255ULL,
        0x601936ba3be3da0dULL, 0xfe5590568e9daaecULL, 0x45770db94c152f45ULL, 0 } },
    { "bf16_whisper_conv2_pos", 80,
      { 0x3027177cbc95469bULL, 0, 0x1af0cee2b6ff5bc9ULL, 0x87f3904882c2daf5ULL,
        0x435934a63cb90147ULL, 0x9f28d63cce6d27c0ULL, 0xc69dae17142946cfULL, 0 } },
    { "bf16_whisper_conv2_pos", 90,
      { 0x0bff645571a11035ULL, 0, 0xcee8900f12e879c7ULL, 0x133a4d1e6fc76353ULL,
        0xd96b92172037ea65ULL, 0xbeb0155064b2b6caULL, 0xc3d6c5c765206971ULL, 0 } },
    { "f16_mamba_nlc_silu", 80,
      { 0x1f36c2c4c6b0e777ULL, 0xfca2e3166cf774f7ULL, 0, 0,
        0, 0, 0x82e8f06ebab31a4cULL, 0xa0569d3f2b2a606cULL } },
    { "f16_mamba_nlc_silu", 90,
      { 0x9644fb87fd148a95ULL, 0xa40d00c86e7b7891ULL, 0, 0,
        0, 0, 0xae674b54fe89521aULL, 0xad604d491437c6b6ULL } },
    { "bf16_mamba_ncl_silu", 80,
      { 0x8067429072b4caadULL, 0x110460c31839146aULL, 0, 0,
        0, 0, 0xde5da2888a95a8f8ULL, 0x83a3ab8dc773c531ULL } },
    { "bf16_mamba_ncl_silu", 90,
      { 0x187aab5ab1ad8d17ULL, 0x5ca6cc62e9b443e0ULL, 0, 0,
        0, 0, 0x964a26492e752a06ULL, 0xd0591806367e5b47ULL } },
    { "mixed_bf16_x_f32_w_f16_y", 80,
      { 0xd16c45f6fad8d17bULL, 0, 0, 0,
        0, 0, 0x246ed55409f6cb97ULL, 0 } },
    { "mixed_bf16_x_f32_w_f16_y", 90,
      { 0x0562138e80069489ULL, 0, 0, 0,
        0, 0, 0x98d8b9dd32685b29ULL, 0 } },
    { "f16_vqvae_k1_add_input", 80,
      { 0xae5c1e24a0ae25baULL, 0, 0x16fc8676f92d9568ULL, 0x0669611f3d8fa436ULL,
        0x622981a6ad6e9557ULL, 0x1b1dbf9a5f55d19cULL, 0x58bb5142ab05baffULL, 0 } },
    { "f16_vqvae_k1_add_input", 90,
      { 0x43b81fc1f4d667c8ULL, 0, 0x60836beb6fff9152ULL, 0x6b5a634f224649f4ULL,
        0xe06514ee95d85131ULL, 0xc52772f0819daccaULL, 0x60406f8e7dcd6361ULL, 0 } },
    { "bf16_vqvae_d3_relu", 80,
      { 0x935596945419f522ULL, 0, 0x10d6d19bd9dad5deULL, 0x3a86c122b3ce405bULL,
        0x7b78cf783d3ef70dULL, 0xd12251369b0971edULL, 0xb5301d699a0d837cULL, 0 } },
    { "bf16_vqvae_d3_relu", 90,
      { 0x974c9a9b6d44df6cULL, 0, 0x5333ba89e7aca3d0ULL, 0xbf7a7f84af47b7b5ULL,
        0xb570716fd8d7b9a7ULL, 0x4cbef041e054ca87ULL, 0xb2ad2f5be962323eULL, 0 } },
    { "vqvae_d9_relu_bwd", 80,
      { 0x8f19f314656598f6ULL, 0, 0x0514c2311f8108fbULL, 0x2cf34778701a4211ULL,
        0x6d7b934df54cd61bULL, 0x4b6e2f8aa4fae235ULL, 0xbf2719504853bb20ULL, 0 } },
    { "vqvae_d9_relu_bwd", 90,
      { 0xa7ef5236aaa5ab18ULL, 0, 0xd0fa06c51462da4bULL, 0x70617a173505388fULL,
        0x37cbef8e2b1f28edULL, 0xc476328bcb5aa15fULL, 0x73066c4d9233e77eULL, 0 } },
    { "k1_bwd", 80,
      { 0x4828e223f8030164ULL, 0, 0x5dd9e043a23726c5ULL, 0x4dc43ad4e8e32a06ULL,
        0xc775bed75c2d79d8ULL, 0x84f39c4bcbe9f2dcULL, 0x4306b84ded92fda3ULL, 0 } },
    { "k1_bwd", 90,
      { 0x4c1bece6bbf6a08aULL, 0, 0xf878a08651400a57ULL, 0x7eb60735d172d444ULL,
        0xa825e36bcbfb62deULL, 0x7d1b1988943fefeaULL, 0x3d06a9af74e25cd5ULL, 0 } },
    { "odd_channels_bwd", 80,
      { 0xa9a126a2b4681cabULL, 0, 0x88c6edfcc420ce8dULL, 0xd39a7891dc0ee67bULL,
        0xba385a19269bf615ULL, 0x7c69891a7e819271ULL, 0x0e01be86dcdd9a6aULL, 0 } },
    { "odd_channels_bwd", 90,
      { 0x6daf9ab80b82c9a5ULL, 0, 0x22401a0d83ca32bfULL, 0xd4d8b8d74566e82dULL,
        0x11b170cc0938a1e3ULL, 0x3decea2c599e0537ULL, 0x184514eacbc8a604ULL, 0 } },
    { "mixed_f32_x_bf16_w_f32_y_bwd", 80,
      { 0x752e1c832638fc67ULL, 0, 0, 0,
        0, 0, 0x9c7b87905f1a1614ULL, 0 } },
    { "mixed_f32_x_bf16_w_f32_y_bwd", 90,
      { 0xf78b35d5704ce07dULL, 0, 0, 0,
        0, 0, 0xf90a852ce3a74d76ULL, 0 } },
    { "dw_causal_nlc_silu_c64_k4", 80,
      { 0xec8d998b73f40694ULL, 0xe40cb81f3bd00accULL, 0, 0,
        0, 0, 0x3bd4295bb9459f5bULL, 0x1d27c95ba6b478afULL } },
    { "dw_causal_nlc_silu_c64_k4", 90,
      { 0x018932360322e442ULL, 0xf37e278c1a88940aULL, 0, 0,
        0, 0, 0x299ce66bde3c52e1ULL, 0xccc59fdf78cef3e1ULL } },
    { "dense_ncl_gelu_bias", 80,
      { 0xce137b540b9255ceULL, 0, 0xf28da807ca8d595cULL, 0x98b72859c69b531cULL,
        0x3b87c60acfa038b5ULL, 0x1c5b0aa09ad81239ULL, 0x113b920a5fe88703ULL, 0 } },
    { "dense_ncl_gelu_bias", 90,
      { 0x17258015b0512fd4ULL, 0, 0x9993eb18dc124ef0ULL, 0x5b15a99424a78fd2ULL,
        0xcf9231e93d30b453ULL, 0xd609658224423567ULL, 0xc1d17b8fb5a0b6b5ULL, 0 } },
    { "grouped3_nlc_relu", 80,
      { 0x83e1902bf80afb1aULL, 0, 0, 0,
        0, 0, 0x929da1d3eb91d847ULL, 0 } },
    { "grouped3_nlc_relu", 90,
      { 0x56366f8ec3d075d4ULL, 0, 0, 0,
        0, 0, 0xc379bfac761b9569ULL, 0 } },
    { "s2_d2_dense_gelu", 80,
      { 0x184e0ce28c86d5dbULL, 0, 0xff4855eece2f559dULL, 0x9dc3bc962243e754ULL,
        0x63fd563e87cf8806ULL, 0x6f069fcb0c29c9f0ULL, 0x55dec73005d37044ULL, 0 } },
    { "s2_d2_dense_gelu", 90,
      { 0xe973d65079874731ULL, 0, 0x2d2493422a2e5573ULL, 0xc5a3c1a7e149305aULL,
        0x283020b231168cacULL, 0xcdac2e48f7054546ULL, 0xb022dcc21e8c6e7aULL, 0 } },
    { "s3_d2_dw_ncl_silu", 80,
      { 0x4298afb89c16ae55ULL, 0, 0, 0,
        0, 0, 0xa872190948c1e26eULL, 0 } },
    { "s3_d2_dw_ncl_silu", 90,
      { 0x6d02e18b915db04fULL, 0, 0, 0,
        0, 0, 0x694f5bea2224aa04ULL, 0 } },
    { "k1_ncl_none", 80,
      { 0xb2c4c22e0ece38afULL, 0, 0xe1984d606bc288b4ULL, 0xeac45f636e815993ULL,
        0x85532ef5e475c577ULL, 0x4716447518329e1fULL, 0x31918952576e74f2ULL, 0 } },
    { "k1_ncl_none", 90,
      { 0x70bb47d067a4ddf1ULL, 0, 0xa41f3fc33bd9856aULL, 0x166f9ea6d347c939ULL,
        0x81f8865706a1f5a9ULL, 0x06df0a1b18c2a071ULL, 0x00dd909bd2bc6498ULL, 0 } },
    { "k31_looped_taps_bwd", 80,
      { 0x08aa5b66f352ae48ULL, 0, 0xb37ca52ca12e82e3ULL, 0x4fbd2bd1e9f8acbdULL,
        0x0390cfaf7612467cULL, 0xcca9cf3c4bfb76b6ULL, 0xe2d528ca408874d9ULL, 0 } },
    { "k31_looped_taps_bwd", 90,
      { 0x2c17e16dd89b6abaULL, 0, 0x8b791030116ac945ULL, 0x3021f22c2718586bULL,
        0xb2994cf0daaa5b42ULL, 0x91e49b161e31ddb4ULL, 0x6325a726be27a31bULL, 0 } },
    { "f16_dense_ncl_gelu", 80,
      { 0x10bbe35da84a8168ULL, 0, 0x98ca170329848cb6ULL, 0x0397d44e9bdad00eULL,
        0x921030ea968f5095ULL, 0xbdc9c39833f4294cULL, 0x34946fb42e9f4e75ULL, 0 } },
    { "f16_dense_ncl_gelu", 90,
      { 0x7714ae54ac41bb9eULL, 0, 0x66e0a4c312dd6158ULL, 0x8b0bd3b3789251d8ULL,
        0x4fc84761cd421767ULL, 0xf2ba9e488197b37eULL, 0x9f57ae0fdad13963ULL, 0 } },
    { "bf16_dw_causal_nlc_silu", 80,
      { 0x0cc31180b96e8efbULL, 0x157b8c7b62175654ULL, 0, 0,
        0, 0, 0x77898a36526ef8baULL, 0xf9e238f67ad5cdebULL } },
    { "bf16_dw_causal_nlc_silu", 90,
      { 0x7c715530ef40ee0dULL, 0x489c06d52a04f4c6ULL, 0, 0,
        0, 0, 0xf1c0c474b5ed8d1cULL, 0x7a7cf7a9c262db6dULL } },
    { "f16_x_bf16_dy_grouped_s2", 80,
      { 0x56ad6b7bdb3baf8dULL, 0, 0, 0,
        0, 0, 0x861a1ef5f896ecbaULL, 0 } },
    { "f16_x_bf16_dy_grouped_s2", 90,
      { 0x3bdf54ac9c0cde13ULL, 0, 0, 0,
        0, 0, 0xf3d3553b8e904d10ULL, 0 } },
    { "bf16_k1_nlc_none", 80,
      { 0xc6f710ae8865d7f8ULL, 0, 0x8112b3b2c460904cULL, 0x0b4b59436c94cf90ULL,
        0x7280959b835e1826ULL, 0xa94bcc2639ff0d40ULL, 0x0e15747a8d8f3283ULL, 0 } },
    { "bf16_k1_nlc_none", 90,
      { 0xf3946082b904777eULL, 0, 0xa636a49e3a4d38aeULL, 0xbb7f5ba900a7bcdeULL,
        0xc2465be0ec87727cULL, 0x3bafbe009a93f72aULL, 0xcb5c36230c3560edULL, 0 } },
    { "dw_nlc_causal_silu_bf16", 80,
      { 0xaf7b54720a98a038ULL, 0xdcb06af8b810b3e1ULL, 0, 0,
        0, 0, 0x1abbbc54121bc92dULL, 0x8305a39f3ce9ad0eULL } },
    { "dw_nlc_causal_silu_bf16", 90,
      { 0x5141b0fb23096afeULL, 0x28a36c742ced6db7ULL, 0, 0,
        0, 0, 0xcf6367f1bf22c5d3ULL, 0x5dbeb3c71f7bfe3cULL } },
    { "dw_nlc_causal_none_f16", 80,
      { 0x05c929c8d66b6b91ULL, 0xa7a0d4455dab92c1ULL, 0, 0,
        0, 0, 0x830078e1af7917d5ULL, 0x51135aefdf4293b4ULL } },
    { "dw_nlc_causal_none_f16", 90,
      { 0x084656dafcefd8abULL, 0xe94ab13d57732d97ULL, 0, 0,
        0, 0, 0x5edbfe7eab46aa2bULL, 0xfe102d8e9475b582ULL } },
    { "dw_nlc_k8_d2_gelu_f32", 80,
      { 0x76fa4fd3bd4eff04ULL, 0x6f61409aa73a6fe0ULL, 0, 0,
        0, 0, 0x92fc4f8cc78f09d9ULL, 0x0a1763b20a8a79b5ULL } },
    { "dw_nlc_k8_d2_gelu_f32", 90,
      { 0xf7f0527bda257f52ULL, 0x1c73be124092e836ULL, 0, 0,
        0, 0, 0x5a598ec2e793aa83ULL, 0x5d7e516082c16233ULL } },
    { "dw_nlc_same_k3_pre_relu_add_bf16", 80,
      { 0x62b0fa57fbabecdcULL, 0x60f58d9217d68375ULL, 0, 0,
        0, 0, 0x9b5d9e9ea4ec5c08ULL, 0x3cf8fc65a9002e3dULL } },
    { "dw_nlc_same_k3_pre_relu_add_bf16", 90,
      { 0xeaa72b138c963962ULL, 0x8f0c732ab6ad9b23ULL, 0, 0,
        0, 0, 0x6e6026f6f3dc5ec2ULL, 0x09b446eff7290777ULL } },
    { "dw_nlc_k2_add_broadcast_f32", 80,
      { 0x01ec41b1d7f4ace7ULL, 0x2e738fb761543bd1ULL, 0, 0,
        0, 0, 0x71c6f74f52788eb0ULL, 0xcf3f33fcff087317ULL } },
    { "dw_nlc_k2_add_broadcast_f32", 90,
      { 0x77790931fd388ce1ULL, 0x6e39c6fe4d4250c7ULL, 0, 0,
        0, 0, 0x5c8e378a0f5a8016ULL, 0x9b4e936d0cbbc2bdULL } },
    { "dw_nlc_longer_out_k3_p5", 80,
      { 0xa8d03884a710b0a0ULL, 0x68d42117789a4eb4ULL, 0, 0,
        0, 0, 0x659bd2ac6eb4b250ULL, 0x21c81170bfe21421ULL } },
    { "dw_nlc_longer_out_k3_p5", 90,
      { 0xc89d6d3af43a764eULL, 0x311185a52d49fb1aULL, 0, 0,
        0, 0, 0x57d8808dc83a0716ULL, 0xb6ce405e9eda223fULL } },
    { "dw_nlc_shorter_out_k5_p0", 80,
      { 0x0de0136dbd6f276cULL, 0xc5db5ced2ecbcc68ULL, 0, 0,
        0, 0, 0x8c11773c2b3eb43aULL, 0x64577cb23c831c3aULL } },
    { "dw_nlc_shorter_out_k5_p0", 90,
      { 0xfe25a0f46496a39aULL, 0x34e1121a6b66ac62ULL, 0, 0,
        0, 0, 0xcbfd185f88719428ULL, 0x20dbd3a1e8b37568ULL } },
    { "dw_nlc_x_bf16_y_f32", 80,
      { 0xa87fea3836995d2dULL, 0x3008b9bf4bb102ddULL, 0, 0,
        0, 0, 0xf791fe57be493ed6ULL, 0x777fb1dfbee4a1ecULL } },
    { "dw_nlc_x_bf16_y_f32", 90,
      { 0xac6777194592d92bULL, 0x6cdf2d99562ea8f7ULL, 0, 0,
        0, 0, 0x0774d814627a8160ULL, 0xdd25875fcbca7f12ULL } },
    { "dw_ncl_k5_d3_same_gelu_add_f16", 80,
      { 0xe39fd9d08cfc5597ULL, 0x1f80cdb9edb8957bULL, 0, 0,
        0, 0, 0x89e7c901a9442ffbULL, 0x49dfc32c357a04c2ULL } },
    { "dw_ncl_k5_d3_same_gelu_add_f16", 90,
      { 0xbf88c5322dbcf151ULL, 0x2c5bb475a4f81c95ULL, 0, 0,
        0, 0, 0x3bcb6ecc565105edULL, 0x095eff8575da42c8ULL } },
    { "dw_ncl_k1_f32", 80,
      { 0xd2a08b923bb27016ULL, 0xcad0a9ae7184b955ULL, 0, 0,
        0, 0, 0x9a15da2c5879519aULL, 0xb1ed65c88582be7aULL } },
    { "dw_ncl_k1_f32", 90,
      { 0xe1bfb362d51b32b0ULL, 0xad601e9b6c489733ULL, 0, 0,
        0, 0, 0xb78ebd6319da9228ULL, 0xff2ee26b4f77fa34ULL } },
    { "dw_ncl_k1_pad4_f32", 80,
      { 0x64a14565fdf939a1ULL, 0xaa5e831d04769eabULL, 0, 0,
        0, 0, 0x5017e29b77b24d36ULL, 0x8d4835d804837927ULL } },
    { "dw_ncl_k1_pad4_f32", 90,
      { 0x896528d63affbf63ULL, 0x1063a7652c820d45ULL, 0, 0,
        0, 0, 0x42206c0912099cb8ULL, 0xadf213b6a1d8a5c5ULL } },
    { "dw_ncl_anticausal_relu_bf16", 80,
      { 0xd55c2e1887024df8ULL, 0xb3140d919d095fdfULL, 0, 0,
        0, 0, 0x231cbb038b755bbfULL, 0xa8ef502f4008af37ULL } },
    { "dw_ncl_anticausal_relu_bf16", 90,
      { 0x65bd248cfca8dcc6ULL, 0x48ab9e4f8014450dULL, 0, 0,
        0, 0, 0x6e02d30496e64ed5ULL, 0x5546de4b190b192dULL } },
    { "dw_ncl_shorter_out_k5_p0_f32", 80,
      { 0xc13c4222231639acULL, 0x92002b29ef4facfdULL, 0, 0,
        0, 0, 0xe13f26b66d2a6d8aULL, 0x7086c69a953c79d8ULL } },
    { "dw_ncl_shorter_out_k5_p0_f32", 90,
      { 0x5382004ca3fca0c6ULL, 0x7f2e97863f679553ULL, 0, 0,
        0, 0, 0x472d79169125e3ecULL, 0x4a6901516832ee62ULL } },
    { "dw_ncl_long_t_f32", 80,
      { 0x538080105dde1319ULL, 0x2d2e8132fa09ee4bULL, 0, 0,
        0, 0, 0xae678dcd8a7d7147ULL, 0xfd7ef4aa8526d116ULL } },
    { "dw_ncl_long_t_f32", 90,
      { 0xab01c438192dbdabULL, 0x8ac31811384e2ee5ULL, 0, 0,
        0, 0, 0xbc51acb1b033fc1dULL, 0x5e33b6452dda8968ULL } },
    { "dw_nlc_mamba_c256_bf16", 80,
      { 0x3171afbdef5e4640ULL, 0x501e37df2536242dULL, 0, 0,
        0, 0, 0x2abb60fdf3b9e222ULL, 0x8ca33b2064b6a6dfULL } },
    { "dw_nlc_mamba_c256_bf16", 90,
      { 0xb86badb70054228eULL, 0x2ee291c9326205f3ULL, 0, 0,
        0, 0, 0x3f687657a181f2d8ULL, 0xd0f6d6e7705da5bdULL } },
    { "dw_ncl_mamba_c256_bf16", 80,
      { 0x3c39bb29248b0980ULL, 0x28a69bf40f163827ULL, 0, 0,
        0, 0, 0x64627f2db18f07a0ULL, 0xbd06819f71c3f70fULL } },
    { "dw_ncl_mamba_c256_bf16", 90,
      { 0xac64fcf2292dff1aULL, 0x2c7a9f518d4f1455ULL, 0, 0,
        0, 0, 0x8e989605920c2476ULL, 0x88b38ba32749b889ULL } },
    { "g_dilated_k3_d9_relu_relu", 80,
      { 0x1a819fecf80f0246ULL, 0, 0xa82e222e7a7f1abcULL, 0x0b4fadbcd64287dcULL,
        0xefcb61d49bce75f7ULL, 0x464adbf4493194d5ULL, 0xc6bda5d647fcf9feULL, 0 } },
    { "g_dilated_k3_d9_relu_relu", 90,
      { 0x2e0135dfd77a93a8ULL, 0, 0x081bfec6ca15f6d6ULL, 0x8313369ac11be264ULL,
        0xc61db72992665180ULL, 0xaff1ecd0a69f3644ULL, 0xc1b75fa35456883cULL, 0 } },
    { "g_nlc_nlc_gelu_s2_add", 80,
      { 0x3a680a8ea7a82218ULL, 0, 0x873da21c265d8472ULL, 0x9a5d5dda0e7fc657ULL,
        0x77ea279d05101befULL, 0xd65728a8e873399dULL, 0x23e38db26121c266ULL, 0 } },
    { "g_nlc_nlc_gelu_s2_add", 90,
      { 0xb3c17c96afa11e5eULL, 0, 0x87083416010a8c34ULL, 0xe02d44a59f17e109ULL,
        0x69fa76d78d2896e1ULL, 0x9b628c42d2a9dc3fULL, 0xceaf990a92ac8a54ULL, 0 } },
    { "g_ncl_to_nlc_silu_k2_s2", 80,
      { 0x6c4e580e65aebb28ULL, 0, 0x04aa3960ed334e11ULL, 0xfaa496fd61255798ULL,
        0x77ecddc8e97e101fULL, 0x688f6bbb75c6f02dULL, 0x33fedd30c5caf997ULL, 0 } },
    { "g_ncl_to_nlc_silu_k2_s2", 90,
      { 0xd73afa95bb240582ULL, 0, 0xfce8c6fb5a7ea363ULL, 0x40540cde220f6ed0ULL,
        0x61bbc8642f0a52f2ULL, 0x39fd38d13a570eb6ULL, 0x06c8c3f0caa791e5ULL, 0 } },
    { "g_nlc_to_ncl_d3_asym_5_0_bcast", 80,
      { 0x5fc80cd592f13386ULL, 0, 0x9f536c3685c79575ULL, 0x1864fb9599171f90ULL,
        0x31d31f5219621dcbULL, 0x94a8ddd6b5cd8159ULL, 0x70843458a374d552ULL, 0 } },
    { "g_nlc_to_ncl_d3_asym_5_0_bcast", 90,
      { 0xb88f3821b69be1e8ULL, 0, 0xb4fa2c906fddca37ULL, 0xb9c30df2cea4f76eULL,
        0x4b113d55ac37f615ULL, 0x23083b16bdd4192bULL, 0xec7529017d4b38f8ULL, 0 } },
    { "g_resconv_k1_add_input", 80,
      { 0x42f9b9bdec8672c9ULL, 0, 0xaffad115bc9b536eULL, 0xb9d36772d0297b90ULL,
        0x87e3c93764f0ffddULL, 0x2495f1a3108f81ebULL, 0xa11c360de04dfccaULL, 0 } },
    { "g_resconv_k1_add_input", 90,
      { 0xb34751277750ab17ULL, 0, 0x0b37ebcc31de4752ULL, 0xfc16177f467e07ceULL,
        0x2852f1c3f0ef95dfULL, 0xef3d258d0ca245fdULL, 0x2876da2405f52f84ULL, 0 } },
    { "g_resconv_k1_add_input_nlc", 80,
      { 0x4479d50d4ce4b482ULL, 0, 0xc210bc0fb0bd176aULL, 0x0ff3e8e79bb3a192ULL,
        0xb5a427bfffe385e8ULL, 0x2c2f04c4c8276908ULL, 0xeff4cfb9355d1d4aULL, 0 } },
    { "g_resconv_k1_add_input_nlc", 90,
      { 0x3f499172c0edf600ULL, 0, 0x6a90999b96438bd4ULL, 0x95b4ba562405a1acULL,
        0xb2bc58cd4432b2baULL, 0xd6176bc84099a042ULL, 0x8c612cc54c1ae634ULL, 0 } },
    { "g_wav2vec2_k3_s2", 80,
      { 0xb2939ca4bf62154fULL, 0, 0x795b404f5032606fULL, 0xf3c7bab06a40cb4dULL,
        0x7e60a5b1b9685043ULL, 0xccec9f9049fed8bfULL, 0x254a94ea9d37092eULL, 0 } },
    { "g_wav2vec2_k3_s2", 90,
      { 0x54ac787d48fb250dULL, 0, 0x3db035638440d1b9ULL, 0x75936be2ee821f9bULL,
        0x39e115ef9aed2661ULL, 0xb8946f0d107340d5ULL, 0x52b89c1ea836ad40ULL, 0 } },
    { "g_dac_k16_s8_p4", 80,
      { 0xe51f8bb7f8914340ULL, 0, 0x4ffe4a437840211dULL, 0x193fce32f33066b8ULL,
        0xde849d02216a70cdULL, 0x440716a010f1e0c3ULL, 0x8a21f5246e33b930ULL, 0 } },
    { "g_dac_k16_s8_p4", 90,
      { 0x70495bb47c3fadcaULL, 0, 0xcf8b2392b695e0e3ULL, 0xc8af38f72c72faaaULL,
        0xb174608da0fde1b3ULL, 0xec0a3af86ccc5df1ULL, 0xbdca2bbd422e73b6ULL, 0 } },
    { "g_jukebox_d27_relu_relu", 80,
      { 0x237c18d41330dca1ULL, 0, 0xbb01049ecbf87aeeULL, 0x2384cc51cdb89f3dULL,
        0xfb84426be9c5df31ULL, 0x3ed36e611e58adffULL, 0x708605526efe3b96ULL, 0 } },
    { "g_jukebox_d27_relu_relu", 90,
      { 0x52d31cd1903bb723ULL, 0, 0x3577f90abfaf7604ULL, 0xee2598027a64e3d7ULL,
        0xb1cdee47d0f56267ULL, 0x4b3efaaebe49cf25ULL, 0xdc59521b3b7ed274ULL, 0 } },
    { "g_t_out_1", 80,
      { 0xb5e982513d55c9fcULL, 0, 0xfe915efeb463a7eeULL, 0xebc80f3bf9346033ULL,
        0xc9f2e8221b651f4eULL, 0xc53c22e6f39ad942ULL, 0xbfd0d0c8adcee08dULL, 0 } },
    { "g_t_out_1", 90,
      { 0x59eaee2f8f236aaeULL, 0, 0xcd662b7b80a346ccULL, 0x4b134375dfec2d0dULL,
        0x7abe96c77f4fb880ULL, 0x5cebfb5436707774ULL, 0x4a511ecf2ae9cc0fULL, 0 } },
    { "g_t_out_1_stride4_c130", 80,
      { 0x214551de2f4aff5fULL, 0, 0x625414474049ba82ULL, 0xc4038b3bd7107a99ULL,
        0xb501dcf90dcec5f6ULL, 0xd13fc5e7cf0a1d96ULL, 0x063c23e2f5312c90ULL, 0 } },
    { "g_t_out_1_stride4_c130", 90,
      { 0x5b671eeda21c6ce5ULL, 0, 0x0eee18700015a970ULL, 0x042e0c994b7530d3ULL,
        0x9aaf9149f2f208b7ULL, 0x38cdf3e1aa4de9a1ULL, 0x20e1c79c1028478eULL, 0 } },
    { "g_k16_same_p7_8_nlc", 80,
      { 0xdeb9e65afab73a47ULL, 0, 0x0d91dd8321319811ULL, 0x3de25b07a88d62bcULL,
        0xd0578f929c70508bULL, 0x7069d0d18d0e813bULL, 0xfb670313cc655b90ULL, 0 } },
    { "g_k16_same_p7_8_nlc", 90,
      { 0xc15948b89abbee25ULL, 0, 0x17225834d57e251bULL, 0x8e780aaadb6440baULL,
        0x3657ea863287ed95ULL, 0xcb64b2ed797b6f25ULL, 0x9ffdfffc13768236ULL, 0 } },
    { "g_pre_gelu_bcast_nlc", 80,
      { 0xfeb95dfb0f670c4fULL, 0, 0x0ef2bb0bf95e9419ULL, 0xcc12f35f9754ea67ULL,
        0x3433a5d7c2e34ddaULL, 0xecc07b08110c90d6ULL, 0x4df42a4499e9d5edULL, 0 } },
    { "g_pre_gelu_bcast_nlc", 90,
      { 0x84a1ba99f7154f71ULL, 0, 0x3750281f8ff57b53ULL, 0x0a504edc78552da3ULL,
        0xa74492e0624e56d1ULL, 0x4ccedad3de5d8e87ULL, 0x8b905dd8bfd6667fULL, 0 } },
    { "g_pre_silu_d2_s3_asym", 80,
      { 0xe7f2f3050ea247f6ULL, 0, 0xc5d894abd48e9f8fULL, 0x2259140d35dd08daULL,
        0x5adb42fee280a3dbULL, 0xcfd10291cfe94e57ULL, 0x5eec5b57a02da7bcULL, 0 } },
    { "g_pre_silu_d2_s3_asym", 90,
      { 0x3295430a3321438cULL, 0, 0xd5be6e7e9f82ba71ULL, 0x42bbc04e96c66b68ULL,
        0x8d8ff0439c944e21ULL, 0xd8d8cf57131090c5ULL, 0x4c4b7094cdfee8e6ULL, 0 } },
    { "g_long_t_ncl", 80,
      { 0x9df0703ac905072aULL, 0, 0x11e160829335a2afULL, 0x14057c95eaa267efULL,
        0xd8dc622fd8262c9aULL, 0xd1c2c3924ec444ecULL, 0x4eeac5077e66dd3dULL, 0 } },
    { "g_long_t_ncl", 90,
      { 0xb917c79c5a8f3f6cULL, 0, 0x88d1785bdaf3d1fdULL, 0x6fd0689010e9e9e5ULL,
        0xb92e389894504018ULL, 0x7e682d9ee146b3b2ULL, 0x3511094a3a834a2bULL, 0 } },
    { "g_f16_ncl_to_nlc_gelu_add", 80,
      { 0x51367c5293e04f61ULL, 0, 0x76cea7018e212b66ULL, 0xd9fae30cd29d5809ULL,
        0xc07e34852434c298ULL, 0xd69a36b6267ec4afULL, 0xf16a7969ed7fdb8bULL, 0 } },
    { "g_f16_ncl_to_nlc_gelu_add", 90,
      { 0xef9c83b80d92e253ULL, 0, 0xec23d81c2384bc80ULL, 0x921826fb7c65413fULL,
        0x41d55cd3427e1fdeULL, 0x98955caff351267dULL, 0xed9abd4300c65b85ULL, 0 } },
    { "g_bf16_x_f16_w_f32_y_k2_s2", 80,
      { 0x30e12003d2a866d7ULL, 0, 0x31af260ba42837b1ULL, 0x641513f114ff547bULL,
        0x445d5b9ddb31f9acULL, 0xa67a1ca1c0d4b056ULL, 0xf66ddba3e6f2039cULL, 0 } },
    { "g_bf16_x_f16_w_f32_y_k2_s2", 90,
      { 0x1007e50a1094e0b1ULL, 0, 0xe6e40999bdc68b4bULL, 0x1e666ac81edafeb1ULL,
        0x90a7fec4b178a272ULL, 0x56b5ec6db9a654ccULL, 0x47e3f8e8f9418e2eULL, 0 } },
    { "g_f32_x_bf16_y_k2_s5", 80,
      { 0xf903e475d1b4c346ULL, 0, 0x309f596350b19259ULL, 0x2aeba946905cf855ULL,
        0xaf64394eaf7e4762ULL, 0xea8e8cc9ced6d94cULL, 0x54f8d3ed384a41c1ULL, 0 } },
    { "g_f32_x_bf16_y_k2_s5", 90,
      { 0xd9cf2c57d511783cULL, 0, 0x9ec7dd0efdcb814fULL, 0x2d95c817cccf556fULL,
        0x89f82aa8d7a625e0ULL, 0x0bda0fe21ef56732ULL, 0x97fede97606bae3bULL, 0 } },
    { "g_bf16_dilated_c64_d9_relu", 80,
      { 0x49cfc7fa8440635aULL, 0, 0xe93fd6cc47e93cf5ULL, 0xa8812e002cafc6e8ULL,
        0x917d3d9db3237743ULL, 0xef45c498c8676709ULL, 0x864880874c9604eeULL, 0 } },
    { "g_bf16_dilated_c64_d9_relu", 90,
      { 0xf0290129634c1244ULL, 0, 0x64231eef47885ea7ULL, 0x9ddc355be196eaabULL,
        0xbc7c000f7ebd6cadULL, 0xed75b9eabe07ba5dULL, 0x3d51f9f232d61538ULL, 0 } },
    { "g_bf16_nlc_c32_k2_s2_gelu_add", 80,
      { 0x62957e7cef19b712ULL, 0, 0xd4971b3719d9b3ecULL, 0x86432da4d011ff72ULL,
        0x0f38d4e4a18e38e6ULL, 0x7ef5ba24b60d21d6ULL, 0x8c22a7991fd575a8ULL, 0 } },
    { "g_bf16_nlc_c32_k2_s2_gelu_add", 90,
      { 0xff5aa694aec2e690ULL, 0, 0xb6335fe4ab535836ULL, 0xe27147bf61a05ba8ULL,
        0xcc3372f96b2e8278ULL, 0x268203973f135030ULL, 0x794ea38f213708aaULL, 0 } },
    { "g_bf16_c32_k3_s2_gelu", 80,
      { 0xec6ee41af4a1ee89ULL, 0, 0x601aace1ac536aeeULL, 0x2c24a4989ea2b493ULL,
        0x5dba1db9c106f851ULL, 0xab0893250b44993cULL, 0xc79d455fd1202468ULL, 0 } },
    { "g_bf16_c32_k3_s2_gelu", 90,
      { 0xf9a829f1eae6db27ULL, 0, 0xbf7caee8f1ddaaf0ULL, 0x31700619bbbb50d0ULL,
        0x776f22881fc8d29fULL, 0x62e54e8649fae8f4ULL, 0x91adc58d3ffa0db6ULL, 0 } },
    { "g_nlc_f32_c32_pre_silu_d2", 80,
      { 0x47c3e066989d64b3ULL, 0, 0x1f9f255a71b459c7ULL, 0xf5f2ae0b6ea3b7f3ULL,
        0x1a307c861f31f1c9ULL, 0xf35dc4db4d4a24e9ULL, 0x370a8c741cf3fcdeULL, 0 } },
    { "g_nlc_f32_c32_pre_silu_d2", 90,
      { 0x04104ebaa536b795ULL, 0, 0x00ea8ae36d801c51ULL, 0x8a80f0c3f1c4a209ULL,
        0x91034f51a5fb6b57ULL, 0x3471636b160d4e1fULL, 0x8e02f25861c7e868ULL, 0 } },
    { "g_nlc_f16_c16_k2_gelu", 80,
      { 0x79c8c5ca29361cd1ULL, 0, 0x02cb105b4e565864ULL, 0x421729653d9f1c56ULL,
        0x5892c0afc458e8baULL, 0x5b4a1edb4b1e93f1ULL, 0xf620f4208c353deeULL, 0 } },
    { "g_nlc_f16_c16_k2_gelu", 90,
      { 0xbeb2d1bdad941d47ULL, 0, 0x4575b9ffd3aa85b6ULL, 0x4468d32ec1c44ba4ULL,
        0x0229e3a77d9d9dc4ULL, 0xebc4ef28718c01f7ULL, 0x2195521ff5927254ULL, 0 } },
    { "g_wide_nlc_c24_o300_d2_add", 80,
      { 0xd01fecf6bbc07a04ULL, 0, 0x85e85d765be84545ULL, 0x43da489c133541d0ULL,
        0x43d176eae1a34feeULL, 0x75b5f72884c320bcULL, 0x4000108df9322603ULL, 0 } },
    { "g_wide_nlc_c24_o300_d2_add", 90,
      { 0xe21ce966e5fe8d9aULL, 0, 0x388be85d766f97e3ULL, 0x3c166a5db3d166c0ULL,
        0xc115c282c70b1be9ULL, 0x69cefd5f803cd269ULL, 0x1ca933286a8e5fd1ULL, 0 } },
    { "g_wide_ncl_c32_o272_k4_s2_bcast", 80,
      { 0x103118962b0b6650ULL, 0, 0x31618021a7bad99aULL, 0xe2cd349734136dd3ULL,
        0x4ae432c181bf8f85ULL, 0x5e0dd031f270ba77ULL, 0xb78d8bd4341e27edULL, 0 } },
    { "g_wide_ncl_c32_o272_k4_s2_bcast", 90,
      { 0x4a2409e874574db6ULL, 0, 0x78c5c7ae7e0c0b98ULL, 0xaf3918ecdef3ad84ULL,
        0x30e8e997e098b981ULL, 0x46cbd6088c561b93ULL, 0x391897ca40fa2b67ULL, 0 } },
    { "g_bf16_c32_k8_s4_p2", 80,
      { 0xdc5a592da7652d4eULL, 0, 0xb54da9fb36fba6aaULL, 0xe26ce426c3ac2777ULL,
        0xcd8d1de291ec3071ULL, 0xd50846c0f7a6f302ULL, 0x69f71fd41addd228ULL, 0 } },
    { "g_bf16_c32_k8_s4_p2", 90,
      { 0xe6d7576801c3a0e4ULL, 0, 0xdf483bb2a0f88f6cULL, 0x83d14645f73ae43dULL,
        0xff6b4e16bf19090bULL, 0x0e8963d458215644ULL, 0x6f59eaeafefbefa6ULL, 0 } },
    { "bench_dw_c5120_ncl_f32", 80,
      { 0x698c189ccb00a20fULL, 0xaebcdabbfb63964dULL, 0, 0,
        0, 0, 0xa44d8da45c4cebb3ULL, 0x38becb80cdcee09dULL } },
    { "bench_dw_c5120_ncl_f32", 90,
      { 0x0fe5da5ec5d570a1ULL, 0x6367cfb18b597c97ULL, 0, 0,
        0, 0, 0x0bf9b254f4b56779ULL, 0x4f5a4bd309b68ddfULL } },
    { "bench_dw_c12288_ncl_f32", 80,
      { 0x63e92fac83e32190ULL, 0x1d2bbb52a0af0ff0ULL, 0, 0,
        0, 0, 0xb0baaadeabc09eedULL, 0x924949b565091f6eULL } },
    { "bench_dw_c12288_ncl_f32", 90,
      { 0xba057b049606eee2ULL, 0x17682980f4bfe372ULL, 0, 0,
        0, 0, 0x22845e76936c49d3ULL, 0x66e92381477ddc3cULL } },
    { "bench_dil_relu_ncl_f32", 80,
      { 0x793772b42ea96e51ULL, 0, 0x9586b9c906e8527cULL, 0x90221bfe48095c9fULL,
        0x235cdf9f539f1e89ULL, 0xfca222f94c0e44bbULL, 0xc3aeb0ff75792163ULL, 0 } },
    { "bench_dil_relu_ncl_f32", 90,
      { 0xfef5a36d3fbed417ULL, 0, 0x6809ba594403c894ULL, 0x596049216bac1f22ULL,
        0x2ea51e9ec6d68aeaULL, 0x72442d32d91489feULL, 0x5e4fa73b9c496d2dULL, 0 } },
    { "bench_resblock_1_ncl_f32", 80,
      { 0x26ce2228e7db1c3eULL, 0, 0x0a150b2295406961ULL, 0x390b1fa777aab865ULL,
        0x2939623fbb87ed19ULL, 0x328ef3a41d1e684bULL, 0xc3aeb0ff75792163ULL, 0 } },
    { "bench_resblock_1_ncl_f32", 90,
      { 0x85266f0a386fb1bcULL, 0, 0x2cb0c7e4dea1ed8fULL, 0xb3a89394910bfef8ULL,
        0xf8701d2d299e8202ULL, 0xea882110dfb6a486ULL, 0x5e4fa73b9c496d2dULL, 0 } },
    { "bench_resblock_2_ncl_f32", 80,
      { 0xbda8ed76cd1e471cULL, 0, 0xd58d31b076c451a0ULL, 0xd13f5308e32ab89cULL,
        0x501374fa6eba6cfcULL, 0x14d9e4aa92e8fcb4ULL, 0x4a7809d16e2d7bbeULL, 0 } },
    { "bench_resblock_2_ncl_f32", 90,
      { 0xc35748e28ac6d07aULL, 0, 0xbc450ce7678e7b1cULL, 0xd1654dbab2606871ULL,
        0xf8d7a25de624676fULL, 0x1c8a70b34ff0ba7dULL, 0xb60904e32a19fac0ULL, 0 } },
    { "bench_jukebox_ncl_f32", 80,
      { 0x31bbce7c107b09a7ULL, 0, 0xed3236549e289937ULL, 0x7904f89f24c74dfbULL,
        0x6e5661db12cd4d0cULL, 0x69f81bc6d0cd9d0aULL, 0x4358d26206273c55ULL, 0 } },
    { "bench_jukebox_ncl_f32", 90,
      { 0x595e482f849bbafdULL, 0, 0x43c2a9f114b41753ULL, 0x8387b8f7a201e219ULL,
        0xe10737a3a25876feULL, 0xb5b2a7dfb0392934ULL, 0xd770d864757eb1c3ULL, 0 } },
    { "bench_wav2vec2_0_ncl_f32", 80,
      { 0x38bb7f80c5608796ULL, 0, 0xb74cf181b0693ca2ULL, 0x3d1f66f1daa701d0ULL,
        0x7df6ce03d503e801ULL, 0x125024e868a23655ULL, 0xa8c19ea42f3da33aULL, 0 } },
    { "bench_wav2vec2_0_ncl_f32", 90,
      { 0xa607c19da8d06310ULL, 0, 0x018ead41c8759b00ULL, 0x9332f076870888e2ULL,
        0xf916ff6b91ff115bULL, 0xb9b0562091d87435ULL, 0x6e7a4e9e35106cfcULL, 0 } },
    { "bench_wav2vec2_1_ncl_f32", 80,
      { 0x74a8ed8ae4c2421eULL, 0, 0x452365b866950f7cULL, 0xceed4a170e0bb6cfULL,
        0xd2e4f5a6152f6419ULL, 0x556c6d08b0284963ULL, 0xd4d55c3b7486f3cfULL, 0 } },
    { "bench_wav2vec2_1_ncl_f32", 90,
      { 0x9c110334a1de10a4ULL, 0, 0xf48d252a6a95fa14ULL, 0x588204008588defeULL,
        0x7a4b40ab468c1166ULL, 0x9385dd7f97215c2aULL, 0x99171046b3ecae45ULL, 0 } },
    { "bench_wav2vec2_5_ncl_f32", 80,
      { 0x889a58f0271dc26bULL, 0, 0x53b90adb158aebcfULL, 0xf9da7e2988a95997ULL,
        0x08268f7faab88467ULL, 0x53d2c5e12b9dc7e9ULL, 0xac93be63f1f83e1fULL, 0 } },
    { "bench_wav2vec2_5_ncl_f32", 90,
      { 0x95117b4cda0032f1ULL, 0, 0x4ecfc1b7273d2a2fULL, 0x917a7c88250d4d3eULL,
        0x01522f8186914030ULL, 0x21fe82435709c728ULL, 0x6b2a61f428fbd621ULL, 0 } },
    { "bench_dac_down_ncl_f32", 80,
      { 0x9165427d59374750ULL, 0, 0x0773ab5816537e3dULL, 0x82bcf732d141f851ULL,
        0x63fa04b0206076dcULL, 0x372d36500f953180ULL, 0xf18bc0bc1c692d19ULL, 0 } },
    { "bench_dac_down_ncl_f32", 90,
      { 0x2599da2e34e77e66ULL, 0, 0xfe0bd1588608f43bULL, 0xb3e6fdcd8b1587f0ULL,
        0x2ae113df80851d43ULL, 0x33b2e2c29705d551ULL, 0x63ae79d0da65784bULL, 0 } },
    { "bench_dw_c5120_nlc_f32", 80,
      { 0x6b6852bdcf876ee1ULL, 0xbbc0675105b31b5dULL, 0, 0,
        0, 0, 0xaae1e80af7405f87ULL, 0xd8e0ca1149038fbeULL } },
    { "bench_dw_c5120_nlc_f32", 90,
      { 0x083a7605d92f01cbULL, 0x172225930f6df6c7ULL, 0, 0,
        0, 0, 0x455432ba6d4b3dd5ULL, 0xb97dcc6c12dd6424ULL } },
    { "bench_dw_c12288_nlc_f32", 80,
      { 0xf919b613a419fbafULL, 0xaa30bf76dd19bf7dULL, 0, 0,
        0, 0, 0x396f3fd029f91c8fULL, 0x7fcd2a5b4a41eef9ULL } },
    { "bench_dw_c12288_nlc_f32", 90,
      { 0x091565bbd419be31ULL, 0xb0c8b22df4a13867ULL, 0, 0,
        0, 0, 0x0e030dfa0ca4f68dULL, 0x4d1a3045a2f24af7ULL } },
    { "bench_dil_relu_nlc_f32", 80,
      { 0xdbfdeb53c84b3a19ULL, 0, 0xabf41573307da1f0ULL, 0x9ca6c8f78977cc3eULL,
        0x6d18d91d08916151ULL, 0x8117a9e2174f44ffULL, 0x0a013ecbb8911ef9ULL, 0 } },
    { "bench_dil_relu_nlc_f32", 90,
      { 0x6148d0cde952f973ULL, 0, 0x8225c9b1b7179948ULL, 0x3eea8d6bf428c9c3ULL,
        0x8052bdc9bac98d5bULL, 0xeecb7851ff57ddbbULL, 0xb2c24c31749d55d3ULL, 0 } },
    { "bench_resblock_1_nlc_f32", 80,
      { 0x902e11447b271fd0ULL, 0, 0x230161858a72ee6fULL, 0x66d0955c46a0b2f4ULL,
        0x68eed2b0dbd82dedULL, 0x00ebed7b6979e0ebULL, 0x0a013ecbb8911ef9ULL, 0 } },
    { "bench_resblock_1_nlc_f32", 90,
      { 0xa603d79827bd606aULL, 0, 0x51a918827143c37dULL, 0x017c21a750ab862dULL,
        0x6e08527ff05692afULL, 0x5a429d2fd6941cdfULL, 0xb2c24c31749d55d3ULL, 0 } },
    { "bench_resblock_2_nlc_f32", 80,
      { 0xb70d18db5a4bcfbeULL, 0, 0xaeb5da199b186ff4ULL, 0xefcf130935e4f899ULL,
        0xee5d0b8c92c79a92ULL, 0xeec8aeb066e0696eULL, 0xb463f529d96e2f81ULL, 0 } },
    { "bench_resblock_2_nlc_f32", 90,
      { 0x4b4715d190a69968ULL, 0, 0x1a8b0eba238e1dc0ULL, 0x6e8176d91ef1f0e4ULL,
        0xec8607dcb2a6192cULL, 0x9b5ad84010c628aaULL, 0xad2b7fc102d0006fULL, 0 } },
    { "bench_jukebox_nlc_f32", 80,
      { 0x83e3e9110e619f0dULL, 0, 0x7e4558a6a707a1b0ULL, 0x310cd43fa6b58d95ULL,
        0xd04a39957a36696bULL, 0x0448df1716c3e3cbULL, 0x927cd1adf2d4fc76ULL, 0 } },
    { "bench_jukebox_nlc_f32", 90,
      { 0xad796f330b6e9defULL, 0, 0x0f2e79b96cfb5ab0ULL, 0xf13ca0efa481b3b3ULL,
        0xfa1a2047aa2839a1ULL, 0xc37dbdc798a15749ULL, 0x5f03a4d0aa8a88ccULL, 0 } },
    { "bench_wav2vec2_0_nlc_f32", 80,
      { 0x250d1361c68dcf14ULL, 0, 0x21b5ef310ec4c5e2ULL, 0xd19cbc0f02fa0613ULL,
        0xeb105b244e6cf55fULL, 0xd173a5b152a617edULL, 0x2dccf048d6b25ee6ULL, 0 } },
    { "bench_wav2vec2_0_nlc_f32", 90,
      { 0x3359e670d3c10172ULL, 0, 0x7dcf9bee70bf0404ULL, 0x1dd0ed143768207eULL,
        0x04b0bfb250153fe5ULL, 0xee1b059ca0a5340bULL, 0x016990025ab24890ULL, 0 } },
    { "bench_wav2vec2_1_nlc_f32", 80,
      { 0xcbd2f721674f38d0ULL, 0, 0xe6db1d4c00d8a2adULL, 0xda6a23132651603cULL,
        0xbc1c48b2e166c0eeULL, 0x33cad63900555896ULL, 0xb037ecf172ee8629ULL, 0 } },
    { "bench_wav2vec2_1_nlc_f32", 90,
      { 0x04d0024a093fe61aULL, 0, 0x06caa03ee0ecd30dULL, 0x3a945c2bb30c5dbaULL,
        0xa6eabe6667004484ULL, 0x088d0211e9e6f00eULL, 0x0101e819b5eb30cfULL, 0 } },
    { "bench_wav2vec2_5_nlc_f32", 80,
      { 0xae05f00961799179ULL, 0, 0x5db481301875129eULL, 0x731d37dd336960ecULL,
        0xa3ca03b2991070c0ULL, 0x1b36633b939864d0ULL, 0x0f61587065507645ULL, 0 } },
    { "bench_wav2vec2_5_nlc_f32", 90,
      { 0x14e76fee81b0e0fbULL, 0, 0x3058cc682e07cf1aULL, 0x289f95aec45d899eULL,
        0x51d70ddb25e0c11aULL, 0x354bc232f409fec8ULL, 0x3b6078e333365d57ULL, 0 } },
    { "bench_dac_down_nlc_f32", 80,
      { 0x919198645ab1adbcULL, 0, 0x7db611cdcb40b37aULL, 0x22ef7fa32107d095ULL,
        0x045c5286fc259d7bULL, 0x61472a9d2ee519c7ULL, 0x528698ff1ab8114cULL, 0 } },
    { "bench_dac_down_nlc_f32", 90,
      { 0x59fdf881b7ac2ebeULL, 0, 0xaedce6ef6aa0146aULL, 0x33f06eda9d2f1a54ULL,
        0x64083de8bc593b79ULL, 0x709a173a51f66827ULL, 0x3322db1723fc2ea2ULL, 0 } },
    { "bench_dw_c5120_ncl_bf16", 80,
      { 0x9a2cad126586a85bULL, 0x1a1fd0bff1b3cb78ULL, 0, 0,
        0, 0, 0xc149b59135b0c17aULL, 0xa95d7df4ef9a9742ULL } },
    { "bench_dw_c5120_ncl_bf16", 90,
      { 0xc7a12cd418401da5ULL, 0x81176b111252b296ULL, 0, 0,
        0, 0, 0x72ab0085908bdff4ULL, 0x4b6a1086df4e86ecULL } },
    { "bench_dw_c12288_ncl_bf16", 80,
      { 0x395357dcc0dd64f6ULL, 0x894ade2de8501481ULL, 0, 0,
        0, 0, 0x32ce591c0dc7eac4ULL, 0x1c34963f0c63577fULL } },
    { "bench_dw_c12288_ncl_bf16", 90,
      { 0xdc691873aba100f0ULL, 0xb472bb59110aa7cfULL, 0, 0,
        0, 0, 0x55d5ebd3fcdb8c36ULL, 0x69f39864a2cd9fbdULL } },
    { "bench_dil_relu_ncl_bf16", 80,
      { 0x60643d8d22203e17ULL, 0, 0x10a0ed7daebe988eULL, 0xf5e0302a5c9cb87dULL,
        0xd7987577a19f9627ULL, 0x23bbaaab233260bdULL, 0x96d604034546601eULL, 0 } },
    { "bench_dil_relu_ncl_bf16", 90,
      { 0x0034204cddaf5bd9ULL, 0, 0xb65bf86b2d945a00ULL, 0xb8490c0eabb1042cULL,
        0xe3cbacc68fd8123bULL, 0xcfe633aacc96e9afULL, 0xbeafc3a70a613288ULL, 0 } },
    { "bench_resblock_1_ncl_bf16", 80,
      { 0x99dcfddbc0e3d894ULL, 0, 0x632844f8a04ef1eaULL, 0xf0e49fae42b0df15ULL,
        0x33a86eeff7d4bc1fULL, 0x56682a689dbc9331ULL, 0x96d604034546601eULL, 0 } },
    { "bench_resblock_1_ncl_bf16", 90,
      { 0x1a8a58a5b1af9746ULL, 0, 0x1c8453baa99045bcULL, 0x9a20ae95c8511b02ULL,
        0x4984cfaee11e199bULL, 0x83c48b8b1efcffa1ULL, 0xbeafc3a70a613288ULL, 0 } },
    { "bench_resblock_2_ncl_bf16", 80,
      { 0xcae9a3c16f342cdeULL, 0, 0xb44094640cc3f5feULL, 0x751d5976cfc2a3e4ULL,
        0x98cb8ebfa5156900ULL, 0x8e4e4cb8fb6ec940ULL, 0x7936dfd7245c7e15ULL, 0 } },
    { "bench_resblock_2_ncl_bf16", 90,
      { 0x4b9870389b72c6ccULL, 0, 0xf442a62ec655ad1cULL, 0x325cf5f4205024cfULL,
        0x2271f32f2c53c796ULL, 0x8cb3ea3e7c5ba64eULL, 0x726f8b1348e31dcbULL, 0 } },
    { "bench_jukebox_ncl_bf16", 80,
      { 0xce7b3fc205d00065ULL, 0, 0x56b4fc1ac0ec741eULL, 0x5e5949d936f9eb9dULL,
        0x7273ed6abf68eaaaULL, 0x864468bae0e5ce1bULL, 0x11f8e759b43ad29dULL, 0 } },
    { "bench_jukebox_ncl_bf16", 90,
      { 0x903a7d0724fabe87ULL, 0, 0xde697e0fd314e3c8ULL, 0x0a89bc3451ec22b3ULL,
        0x1b961031ef7c802cULL, 0x5692335b3ff160fdULL, 0x16f55f669af51b0fULL, 0 } },
    { "bench_wav2vec2_0_ncl_bf16", 80,
      { 0x6d18484f7b769367ULL, 0, 0x8b70cc682387ea45ULL, 0x2da76eb32305c3b5ULL,
        0x744bcb8af6ca2cf1ULL, 0xc81bb233db459246ULL, 0x2a23aaae11b1deefULL, 0 } },
    { "bench_wav2vec2_0_ncl_bf16", 90,
      { 0x155ff872277c14c5ULL, 0, 0x526571c774eef957ULL, 0x188940ac621718d7ULL,
        0x0c4b229e2dc9be0aULL, 0xfaf96da023f52ae0ULL, 0x1f79d590dc4f4955ULL, 0 } },
    { "bench_wav2vec2_1_ncl_bf16", 80,
      { 0x03efde82b58125eeULL, 0, 0x0f4d906d5d494470ULL, 0xea8375223a580225ULL,
        0x53541e996e277591ULL, 0xf87ae190f960ab0aULL, 0xe1a35f438dd5eb08ULL, 0 } },
    { "bench_wav2vec2_1_ncl_bf16", 90,
      { 0x35a0192e00fcd3f0ULL, 0, 0x254412c266ce4236ULL, 0xec6c9d6d7d50b108ULL,
        0x12e73a6cd0840997ULL, 0x6a70bfaaf62764b2ULL, 0xfa69c858a5da0fc6ULL, 0 } },
    { "bench_wav2vec2_5_ncl_bf16", 80,
      { 0x0b951aa52e06329fULL, 0, 0xdd7511b8e03110b3ULL, 0x714c3bc97eecbe77ULL,
        0xba8922390f7fb555ULL, 0xea9858456738430aULL, 0x759f9dc15bb6234aULL, 0 } },
    { "bench_wav2vec2_5_ncl_bf16", 90,
      { 0x7fb98dc3eb04ac25ULL, 0, 0x8208c6d3849ff829ULL, 0xe42b0a2a2552df42ULL,
        0x4aca427196d655fbULL, 0xb6c7ab78b6151e26ULL, 0xfb9212052b1ccc28ULL, 0 } },
    { "bench_dac_down_ncl_bf16", 80,
      { 0x390192799ece5376ULL, 0, 0x809f0fd59eb4f9b7ULL, 0x8fa5a5a5702e3afbULL,
        0x525e70981cf9f318ULL, 0x6b19754ed7f39c3cULL, 0xe216773e872d4ceaULL, 0 } },
    { "bench_dac_down_ncl_bf16", 90,
      { 0xb77926c09c742d20ULL, 0, 0x015a1bd463adf1f5ULL, 0x8e996022b121189cULL,
        0x96c7bc84ec3b7b1aULL, 0x3c9d8121fce17bb4ULL, 0x67055d36f05e3ef0ULL, 0 } },
    { "bench_dw_c5120_nlc_bf16", 80,
      { 0xb085c33d8eadd16aULL, 0x4b164b1dfe9df6e1ULL, 0, 0,
        0, 0, 0x3728d0f5e6ea8492ULL, 0x0daccd1a05d37ea8ULL } },
    { "bench_dw_c5120_nlc_bf16", 90,
      { 0x14ca8ef2f02ba058ULL, 0x6b1f1b51cb511277ULL, 0, 0,
        0, 0, 0x5ae00a34b7583454ULL, 0xf2b3ea96001949b6ULL } },
    { "bench_dw_c12288_nlc_bf16", 80,
      { 0xa9ccc5c4e13c81d2ULL, 0x40b09709bfd80cb5ULL, 0, 0,
        0, 0, 0xfbc106cd00620e88ULL, 0x7898a35059e422e7ULL } },
    { "bench_dw_c12288_nlc_bf16", 90,
      { 0x90337b4bd88a2a38ULL, 0x50edeb63ea307edbULL, 0, 0,
        0, 0, 0xa4b8b73e7b7d06d2ULL, 0xf4f437e8fc4386b5ULL } },
    { "bench_dil_relu_nlc_bf16", 80,
      { 0x9aa218034c9f0a75ULL, 0, 0x850e7960163a248bULL, 0x08ded113d4f16a44ULL,
        0xcd91999a53b117c7ULL, 0x9dd9fb8a85c84e4dULL, 0x42c9dd98b45a2b55ULL, 0 } },
    { "bench_dil_relu_nlc_bf16", 90,
      { 0xe993ea6af1ce30fbULL, 0, 0xf7b28e0619c93cf9ULL, 0xd0005444fcda2698ULL,
        0x324cd2cf534f41b6ULL, 0xff11f559160948e1ULL, 0xc2cfead9d186f04bULL, 0 } },
    { "bench_resblock_1_nlc_bf16", 80,
      { 0x8bafaf928c5d0f3eULL, 0, 0x5fbcf05bf41bc647ULL, 0x9ac9328411e668b8ULL,
        0x88224ead350b055bULL, 0xc020ffb712db4c77ULL, 0x42c9dd98b45a2b55ULL, 0 } },
    { "bench_resblock_1_nlc_bf16", 90,
      { 0x58571509b1a080dcULL, 0, 0xb4989318d8b12c85ULL, 0xa14d0996876fba22ULL,
        0x886df2b4f8d03972ULL, 0xaeac5451a7a77896ULL, 0xc2cfead9d186f04bULL, 0 } },
    { "bench_resblock_2_nlc_bf16", 80,
      { 0x28063315ee103a4aULL, 0, 0x9d188c1775292bbdULL, 0x32996c01f9f4473dULL,
        0xf820b9abbb2ccf0eULL, 0x4c0ea21b2dd225c0ULL, 0x92e5f8975c962a95ULL, 0 } },
    { "bench_resblock_2_nlc_bf16", 90,
      { 0x484eb840900dfe84ULL, 0, 0x07c07dff8a72f007ULL, 0xd520e80de5f5e33bULL,
        0x91d0590bb27a1c25ULL, 0xb146dbb48840a51aULL, 0xa49a53f50d20f1cbULL, 0 } },
    { "bench_jukebox_nlc_bf16", 80,
      { 0x83dca5ed4fd8d2c3ULL, 0, 0x20441e939d163f5bULL, 0xa1ad453fc7d021d3ULL,
        0x850bab12854f3faeULL, 0xe9d8959868159ca2ULL, 0x207a3070b6a96868ULL, 0 } },
    { "bench_jukebox_nlc_bf16", 90,
      { 0x772a7a5471f740f1ULL, 0, 0x00bcd214b01c3469ULL, 0xa80ebe1c6bda4931ULL,
        0xf3ff6944378af514ULL, 0xf275d905f968d030ULL, 0x94b55014baca259aULL, 0 } },
    { "bench_wav2vec2_0_nlc_bf16", 80,
      { 0x04feb18f637a99d5ULL, 0, 0x46394a83ca3bd257ULL, 0x94905c18e7fc58fbULL,
        0x01a9f6443c651d2aULL, 0xada46c43fc80320eULL, 0x8bbe1d517da0142dULL, 0 } },
    { "bench_wav2vec2_0_nlc_bf16", 90,
      { 0xf7e133b4fb09b037ULL, 0, 0x37e49e6f5d9a61d1ULL, 0xad7210cf981ad631ULL,
        0x6b714ca94ebe0cdcULL, 0x54bcf42f0945d492ULL, 0x9276f6d66510f8f3ULL, 0 } },
    { "bench_wav2vec2_1_nlc_bf16", 80,
      { 0x161977d198cd791cULL, 0, 0x211d2c75c755f06eULL, 0xa5f096e601c0a2c9ULL,
        0xee752d48ee3872f4ULL, 0x541ee62074fe7416ULL, 0x27e2824e24b192c1ULL, 0 } },
    { "bench_wav2vec2_1_nlc_bf16", 90,
      { 0x45a6907f144c7022ULL, 0, 0xf408d5b04cbefcb0ULL, 0x8dbe0d01d8e5dd1dULL,
        0x1cf17c94e61fecc2ULL, 0x7f861575c249ab58ULL, 0x8c860ca98b565053ULL, 0 } },
    { "bench_wav2vec2_5_nlc_bf16", 80,
      { 0xb8cbfaa07f1d904eULL, 0, 0x091e9a2b17dd8895ULL, 0x7d144418cc95656bULL,
        0xb8191dc478735d58ULL, 0x1c4a0d016395c5f2ULL, 0x8d196ac77fac0186ULL, 0 } },
    { "bench_wav2vec2_5_nlc_bf16", 90,
      { 0x721fc9dbb755bfa4ULL, 0, 0xe93e5686eb4cf637ULL, 0xd2acf2a15c4fc413ULL,
        0xc085237c80a99232ULL, 0xba5d43bfa2010a9cULL, 0x383da3d302caaf44ULL, 0 } },
    { "bench_dac_down_nlc_bf16", 80,
      { 0x1801079ad16cb2b3ULL, 0, 0x4c9cf572080e6f13ULL, 0x8e87e233f628e1a7ULL,
        0x34bf4036e76cd5b7ULL, 0x44e096075d0b6dc7ULL, 0x9aca54b888437e1eULL, 0 } },
    { "bench_dac_down_nlc_bf16", 90,
      { 0x7650f68384b010fdULL, 0, 0xf03820f161511989ULL, 0x25e545ae07c9fb19ULL,
        0xebcddc76db5c28feULL, 0x90f06588acc9be37ULL, 0x1678e19656a230e4ULL, 0 } },
    { "stem_tiny_c1_f32", 80,
      { 0x00793c99946fa5fbULL, 0, 0x08dd304cc49c4f19ULL, 0x76cc614bdfe1d7fcULL,
        0xa7c2510d5bf0e33aULL, 0x462d6c4b9609a718ULL, 0xf87b3e9a5c2ede89ULL, 0 } },
    { "stem_tiny_c1_f32", 90,
      { 0x4649f1bcb7a85c79ULL, 0, 0x83a26710bfb5f2c9ULL, 0x0eeded0d68c1d67dULL,
        0xd878283b8c875c72ULL, 0x3dc1b8f5f628545eULL, 0x567e55edcaeb19e3ULL, 0 } },
    { "stem_tiny_c1_f16", 80,
      { 0xcc5f9edfe7aa24fbULL, 0, 0x80b6ca96c6e92d62ULL, 0xa01fe56a3d193769ULL,
        0x63f17a6b36311a03ULL, 0x1e12860ec97b1b67ULL, 0xa144065ef5271bdfULL, 0 } },
    { "stem_tiny_c1_f16", 90,
      { 0x82fa239364af8579ULL, 0, 0x737c24948f291556ULL, 0x886e3b858f85762aULL,
        0xf29adea613eea6c1ULL, 0x231620609321b8cfULL, 0xd73673ef90a10a1dULL, 0 } },
    { "stem_tiny_c1_bf16", 80,
      { 0x874366b4ef1e500bULL, 0, 0x92699bcca01bd35bULL, 0x34a8e87998cdf04bULL,
        0x796114b8fc567539ULL, 0x7052d002ea8caeffULL, 0xddc2f94b7adb9a9fULL, 0 } },
    { "stem_tiny_c1_bf16", 90,
      { 0x3bc64753c8e6102dULL, 0, 0x2f37826b04b2bf37ULL, 0x27a29f41fe9b3d46ULL,
        0x3e7b008f424e8249ULL, 0x2ac1570027829d2bULL, 0x1647a02107e36451ULL, 0 } },
    { "stem_tiny_c2_f32", 80,
      { 0xbb43633bb1083f32ULL, 0, 0x23de10bdd813f0abULL, 0x3ff0da4b3d4419a4ULL,
        0xd9ec97f6604e0b16ULL, 0xe567cf3a7f893090ULL, 0x7e2a0208544a38efULL, 0 } },
    { "stem_tiny_c2_f32", 90,
      { 0x0106f071951114acULL, 0, 0x5755489283c7b66bULL, 0x2b2bbc56bf972cbaULL,
        0x547a13ab35176198ULL, 0xdb3feda9643f35c4ULL, 0x14d537fa3d8ecd31ULL, 0 } },
    { "stem_tiny_c2_f16", 80,
      { 0xc09478c270f56320ULL, 0, 0xd1e00449b232ad3aULL, 0x38a38df5e710777cULL,
        0xd9dd27a094b71687ULL, 0x545968e8f476d207ULL, 0xb84e4bf09fb987adULL, 0 } },
    { "stem_tiny_c2_f16", 90,
      { 0x5af9e4c47931f25aULL, 0, 0xbb141508ba698cd0ULL, 0xb3d2f4eb64f061b1ULL,
        0x1bbce2d4110db15aULL, 0xea806b2952170962ULL, 0xc84c4eb44a923143ULL, 0 } },
    { "stem_tiny_c2_bf16", 80,
      { 0x494bbdb0eece9ffeULL, 0, 0x4c8c6d348d500f90ULL, 0x83e7b3335c1efe7dULL,
        0x856c225a23b5c2eaULL, 0x6ee3bd7f62c2da8bULL, 0x14ab3f83123905bdULL, 0 } },
    { "stem_tiny_c2_bf16", 90,
      { 0x301da58958f914acULL, 0, 0x63f54c5c8942ff76ULL, 0xd50939d871386b54ULL,
        0x1b6de6f1d7fa3213ULL, 0x58efeaadd2e98f26ULL, 0xb9c5498503de54afULL, 0 } },
    { "stem_large_v3_c1_f32", 80,
      { 0xc5768fee9351dc24ULL, 0, 0x732f587fb051f5d7ULL, 0xe0dbce58bf58a848ULL,
        0x383872f993c343cfULL, 0x3d23759688241203ULL, 0xf51a63553eb5a30fULL, 0 } },
    { "stem_large_v3_c1_f32", 90,
      { 0x3649a1d0ede1e5c6ULL, 0, 0x68f70a54acab675bULL, 0x93ad35dd9da60e1fULL,
        0x7492e7e25f37818dULL, 0xe417b28ffd73810bULL, 0x39aece599f78d5b5ULL, 0 } },
    { "stem_large_v3_c1_f16", 80,
      { 0x34775b790d80aa9eULL, 0, 0x730febaeb70afb90ULL, 0xd6af72a103d2b6afULL,
        0x13dc0b879513b2c4ULL, 0xeaa992113f3f24faULL, 0x15de055ef8e27b0bULL, 0 } },
    { "stem_large_v3_c1_f16", 90,
      { 0x7e1eb5cd719f2e38ULL, 0, 0xab4ad1d2388d45ccULL, 0x90272c99b7c673daULL,
        0x8b9d9ac64eb6561cULL, 0xc03c0bcc35c03460ULL, 0x2930da928f333dedULL, 0 } },
    { "stem_large_v3_c1_bf16", 80,
      { 0x76e007f2c6d09c98ULL, 0, 0x6e18f50976d5f57bULL, 0xe7c485aad3c1ebfdULL,
        0x908c0b2abe74d2dcULL, 0xdcc961ea235ac3a8ULL, 0xfb0e11a670518549ULL, 0 } },
    { "stem_large_v3_c1_bf16", 90,
      { 0x53abe285ede6fc4eULL, 0, 0x3b67672c82c9996fULL, 0xd253c5d5fa77848cULL,
        0x30696a6aaa059a8aULL, 0x94c86dc9cbe98e2eULL, 0x3d238f3bda260ccfULL, 0 } },
    { "stem_large_v3_c2_f32", 80,
      { 0x8a5b5132bc6e4c01ULL, 0, 0x5912b7e2c7c71c16ULL, 0xceffe9f44bbee594ULL,
        0xc3b68fc146aaae4bULL, 0x782939547d633a39ULL, 0x84c1f57bbd4c4985ULL, 0 } },
    { "stem_large_v3_c2_f32", 90,
      { 0x87c37ff191faff4bULL, 0, 0x78daa5d45835c11eULL, 0x824a357ed6a12da8ULL,
        0x57b6ce7682df5a63ULL, 0xe99019c53f144153ULL, 0xf7ef4c7f3bdf1a9bULL, 0 } },
    { "stem_large_v3_c2_f16", 80,
      { 0xb0c99fa6624b8f3bULL, 0, 0x289156a09b1eabedULL, 0xdf05787a0f7858ebULL,
        0x968e897e1edba8fbULL, 0xd294722818b1644dULL, 0x6af257a0bab6c3e9ULL, 0 } },
    { "stem_large_v3_c2_f16", 90,
      { 0xb165e2ccf2fb24f5ULL, 0, 0x597c02272742a567ULL, 0x23d621364ef6a5f6ULL,
        0x5fb1a9d2a0aa7b1cULL, 0xcb574a5470140f98ULL, 0x9b1f3192f4178ef3ULL, 0 } },
    { "stem_large_v3_c2_bf16", 80,
      { 0xdf27268536f01fb3ULL, 0, 0x6756f3ad533ea0edULL, 0x643e1ce017e50514ULL,
        0x8adb88ced19c3b10ULL, 0x46299209561506bbULL, 0x25a588f26868d345ULL, 0 } },
    { "stem_large_v3_c2_bf16", 90,
      { 0x0c7f6e20098fff61ULL, 0, 0x342911aeeddd232fULL, 0x812df389fc77e8d7ULL,
        0x99f1e8d4f43fa831ULL, 0x0d7aa9e731cdf46cULL, 0x92b7d5f75f8b2ae3ULL, 0 } },
    { "m_dense_none_none", 80,
      { 0x9f92909ec47cadb5ULL, 0, 0xac8342c61ca736cfULL, 0x3d67d829fd2469e7ULL,
        0x6d514e488fafe365ULL, 0x43a9436db3495373ULL, 0x13db2b0ecc362916ULL, 0 } },
    { "m_dense_none_none", 90,
      { 0x83ffbe19de4f0197ULL, 0, 0x8afaa5afdbc763fbULL, 0xbbe8f677481d963dULL,
        0x1ae0e4487b589c6fULL, 0x39f6fe9394dfaa95ULL, 0x2ff734fc25081958ULL, 0 } },
    { "m_dense_none_relu", 80,
      { 0xbe440f6e01d64358ULL, 0, 0xd2d6fb930f2f21ccULL, 0xa730b5d1d1341015ULL,
        0x52b09e41c5a60d15ULL, 0x3bd318622ad8b9aeULL, 0x94013b3c3243056bULL, 0 } },
    { "m_dense_none_relu", 90,
      { 0x73cbfa79ef2344f2ULL, 0, 0x47459a16eab5a536ULL, 0x5bbacf39cee90c74ULL,
        0x6452286571962bc6ULL, 0x67eb0ddc0397641eULL, 0x6e9ec7961b766d5dULL, 0 } },
    { "m_dense_none_gelu", 80,
      { 0xa0d8ba3a7efd9a6cULL, 0, 0xe441dd55c468e7abULL, 0x200095d8b8c4a503ULL,
        0x987e495bc8fc0c54ULL, 0x0c8edcc1374a72efULL, 0x7aa5e26357ade797ULL, 0 } },
    { "m_dense_none_gelu", 90,
      { 0x7fb3fa2066b8feb2ULL, 0, 0x6ed6c62686d35c89ULL, 0x504042013bb312c9ULL,
        0x73eef98bfff0687aULL, 0xb886d5f5b98f0c19ULL, 0x41f0e6148fc75de1ULL, 0 } },
    { "m_dense_none_silu", 80,
      { 0xb2e28908971e02fbULL, 0, 0xa45b119728034da5ULL, 0xb69f3c4dd402247cULL,
        0xb508b9825747566dULL, 0xac479133cc5ddcbdULL, 0x158bf008aa699a3aULL, 0 } },
    { "m_dense_none_silu", 90,
      { 0xc766ed217204ed69ULL, 0, 0x11b59b173cf650dfULL, 0xdf10800894576bfbULL,
        0x6101a3bb0e931362ULL, 0x6495833a62afb7a8ULL, 0x9c8bb44c63256518ULL, 0 } },
    { "m_dense_relu_none", 80,
      { 0x9133b83e6d3e3a1cULL, 0, 0x2d15987c701540c6ULL, 0xfeae1008c64f82c9ULL,
        0x1fc76921c14d7a60ULL, 0x36a6c0ae73b1ff52ULL, 0x1dfa41e2277c8778ULL, 0 } },
    { "m_dense_relu_none", 90,
      { 0x804fb401cf6c391eULL, 0, 0xfcd15b0bce0cab00ULL, 0xf56819b67c17d7f7ULL,
        0x80d6e8a4f3ab17d6ULL, 0x697885ec1c563188ULL, 0xb5aa967318e7a5f6ULL, 0 } },
    { "m_dense_relu_relu", 80,
      { 0x419cbdf51c1916f0ULL, 0, 0x81765d695a8bc383ULL, 0xa834c599bb819b28ULL,
        0x20032ad5b198e7a5ULL, 0xa1a2e59f0cc6263bULL, 0x6a74b9c59ce5c43cULL, 0 } },
    { "m_dense_relu_relu", 90,
      { 0xbcf678369f092c32ULL, 0, 0x6389b51e02f3660dULL, 0xf35b8f498c9233e1ULL,
        0xc2c5eb514306624dULL, 0x5e5a3d60585f7b2dULL, 0xb5f9bb4a2ac08d5eULL, 0 } },
    { "m_dense_relu_gelu", 80,
      { 0x469314d8c586882aULL, 0, 0x29fc9542de16d532ULL, 0x6842befe9232281dULL,
        0xe4cb5133332b487aULL, 0x2f3c7f1d2c53f430ULL, 0x61427722d5bce171ULL, 0 } },
    { "m_dense_relu_gelu", 90,
      { 0xc75d4921dbf395f8ULL, 0, 0x2f87d0053dbb2b48ULL, 0xf15e61d3ef630fe3ULL,
        0x1632d9cedf1edc56ULL, 0x1f9a1713298701aaULL, 0x712a2b0aa6deabdbULL, 0 } },
    { "m_dense_relu_silu", 80,
      { 0x9274edffe2e686aaULL, 0, 0xf23c3129d920aa93ULL, 0x01cd1394282474bfULL,
        0x4af9cb52cad43185ULL, 0x29ed33a25154a2dbULL, 0xdbaf02e87358aca4ULL, 0 } },
    { "m_dense_relu_silu", 90,
      { 0xebef987cc1f5cf20ULL, 0, 0xcc4c61924e42b45dULL, 0x4de97556773775f1ULL,
        0x5df2dfe0a026b5d7ULL, 0xd212580777157c25ULL, 0x8bb8155b40d9db92ULL, 0 } },
    { "m_dense_gelu_none", 80,
      { 0xd3bc3d9aba6cff21ULL, 0, 0x478a0aacbc135fa2ULL, 0x276484a780318a62ULL,
        0x99bac422d9780dc7ULL, 0xc7cf11e1bcbdce4dULL, 0xd0dc867b7b586d7bULL, 0 } },
    { "m_dense_gelu_none", 90,
      { 0x79d26144db102637ULL, 0, 0xed18fa5ac7e3ffdcULL, 0xc34d9e3e16622066ULL,
        0xb901aaeeff0248e1ULL, 0x363579918ba4c309ULL, 0x7cb53d1624b917e9ULL, 0 } },
    { "m_dense_gelu_relu", 80,
      { 0x6f23d497a530d5dcULL, 0, 0x1e526caca28aea72ULL, 0xd5898497279dcb08ULL,
        0xaf563b1917c74cd3ULL, 0x9213b18437a07685ULL, 0x35d8109bb5386eb1ULL, 0 } },
    { "m_dense_gelu_relu", 90,
      { 0x6ce17c08a866f7e2ULL, 0, 0x9817b4f09567a33cULL, 0x4c206b41ca2beeeaULL,
        0xf7a2aa9e0356b981ULL, 0xddb7da476f78c09bULL, 0x65eca406f1297ca3ULL, 0 } },
    { "m_dense_gelu_gelu", 80,
      { 0x6a7bd5165729bb3bULL, 0, 0x8225eb266d45e6d1ULL, 0x5aab30c242bc3429ULL,
        0x944e7da0e1203b16ULL, 0x8f18e2bd2b61abdcULL, 0x3631100c1fe9c4e8ULL, 0 } },
    { "m_dense_gelu_gelu", 90,
      { 0x3634152d587987a5ULL, 0, 0x7a2b6d7472bb21f3ULL, 0xf719312b34c7103aULL,
        0x5f2de9f0161c04caULL, 0xf10f75027b2033eeULL, 0x36525f3a12c9fa8aULL, 0 } },
    { "m_dense_gelu_silu", 80,
      { 0x6b8b8ff66fb3d007ULL, 0, 0xdb8e25a01a16a1e2ULL, 0xef02602096e226b2ULL,
        0x0cbccfaefd04637bULL, 0x5224bbcfa51377ddULL, 0xdf1c555f8ef463e3ULL, 0 } },
    { "m_dense_gelu_silu", 90,
      { 0xc0e0e03338eb6769ULL, 0, 0x1e5075a35a34e028ULL, 0xa57f375bca67aa84ULL,
        0x81a2af2ffeb65285ULL, 0xe97d39ce842f5a2fULL, 0xae569b4e282c9051ULL, 0 } },
    { "m_dense_silu_none", 80,
      { 0x9b0cf7af928f6434ULL, 0, 0xace8e06a373e3994ULL, 0xe1df3a041cafc9a4ULL,
        0x95dfd6d670596b05ULL, 0x0142f828179da0f3ULL, 0x02b033a03ad29677ULL, 0 } },
    { "m_dense_silu_none", 90,
      { 0xe5b3674743f28186ULL, 0, 0x8b4962a6d9a8f516ULL, 0x64aeb0b3369ab325ULL,
        0x1980f00f7b20948aULL, 0xfd4b895880bc09deULL, 0x3b39b943ad5279d9ULL, 0 } },
    { "m_dense_silu_relu", 80,
      { 0x19ba9aee80e4c11cULL, 0, 0x2d08d5c2ff3052cfULL, 0xb1d972f7cc278aacULL,
        0x32d25e26097c7305ULL, 0x4980329e0aa12ebfULL, 0x873b32991bbc537fULL, 0 } },
    { "m_dense_silu_relu", 90,
      { 0xe322c0d6e8e7270aULL, 0, 0xe9cd3aa55a295099ULL, 0xd942759c7325061eULL,
        0xbbd833fb86e4e2e3ULL, 0x48f85a826c0734d5ULL, 0x201f7785c1998609ULL, 0 } },
    { "m_dense_silu_gelu", 80,
      { 0x3b6f0f41136ada3aULL, 0, 0x64b471c51e464aa0ULL, 0x81053a92c14238eaULL,
        0xcbff88da90c5d085ULL, 0x2c224f3629b1467bULL, 0x83526f4422a80b77ULL, 0 } },
    { "m_dense_silu_gelu", 90,
      { 0xbd2f9324710a5ce8ULL, 0, 0xab331a336e224942ULL, 0xe8139f11c4928aa2ULL,
        0x1d727b972f990e1eULL, 0x04dc86a4daaf42f4ULL, 0x55c229ddcfb7e471ULL, 0 } },
    { "m_dense_silu_silu", 80,
      { 0xa4e947773e1fe1a2ULL, 0, 0x578f8bf9c9b8e436ULL, 0x18f14007db39c0e2ULL,
        0xef8b348f1a324314ULL, 0x51bd6ce7c455561aULL, 0xe7a28a45360d3c0bULL, 0 } },
    { "m_dense_silu_silu", 90,
      { 0x102893a2e1180bc8ULL, 0, 0x3f5b331aeba9e644ULL, 0xabd3b805dca8c674ULL,
        0xb7bc8714736c43a6ULL, 0x90e034411be86db4ULL, 0x819ed7a85ec070d1ULL, 0 } },
    { "m_dw_none_none", 80,
      { 0xd660fc226f839cffULL, 0xff3d0f2f8af2ed31ULL, 0, 0,
        0, 0, 0x13a4f34765ce512eULL, 0x3711e0f556d38f18ULL } },
    { "m_dw_none_none", 90,
      { 0xb5c1a7bb6d3d63e5ULL, 0x7fbe74ce474d5a67ULL, 0, 0,
        0, 0, 0x1e8b513ab664344cULL, 0x8be79ead37ff6612ULL } },
    { "m_dw_none_relu", 80,
      { 0xfe86fa379608deb0ULL, 0x542798d1363c5198ULL, 0, 0,
        0, 0, 0x1c9051395c110572ULL, 0x8357e2a0753a7000ULL } },
    { "m_dw_none_relu", 90,
      { 0xaebcc5ff56766d76ULL, 0xf363e2c98a61fc46ULL, 0, 0,
        0, 0, 0xa909a23d5d63dd64ULL, 0xbf63afb90f33ea3eULL } },
    { "m_dw_none_gelu", 80,
      { 0xe88a3945a5c8ec71ULL, 0x97c84a322be3c3f8ULL, 0, 0,
        0, 0, 0x8cf8aaa42a2d2eb2ULL, 0x146c9bd4dcec482bULL } },
    { "m_dw_none_gelu", 90,
      { 0xb6c293fd880785cfULL, 0x5d674575ff541ac2ULL, 0, 0,
        0, 0, 0x26b70b5237f1a31cULL, 0x91efe9f9e8ccc539ULL } },
    { "m_dw_none_silu", 80,
      { 0xace6fc106b84e9b6ULL, 0x8043b708ac2ddae2ULL, 0, 0,
        0, 0, 0xfd2302342c6b4c7bULL, 0x05c9980bc6cfbf66ULL } },
    { "m_dw_none_silu", 90,
      { 0xa85d2eb63edfe868ULL, 0xf6c277d1ac773488ULL, 0, 0,
        0, 0, 0x87c3261b11cb2261ULL, 0xb9843837c5891698ULL } },
    { "m_dw_relu_none", 80,
      { 0x9ebccee6412fbd14ULL, 0x16ae761df21a9d72ULL, 0, 0,
        0, 0, 0x2ae69fc838d34fb4ULL, 0x514c899a260fafe5ULL } },
    { "m_dw_relu_none", 90,
      { 0x032d3ec61762d116ULL, 0xbb2c77b5c7c75d90ULL, 0, 0,
        0, 0, 0xc839a22e5af6fa7aULL, 0xe70bf0dd26bb2ef7ULL } },
    { "m_dw_relu_relu", 80,
      { 0xb342a35292564bdbULL, 0x426be9ac6a05c470ULL, 0, 0,
        0, 0, 0x83f7874302a5586fULL, 0xeb1cd4b757b33235ULL } },
    { "m_dw_relu_relu", 90,
      { 0x75dbe049e09f60cdULL, 0x30bbdeb5f5dea772ULL, 0, 0,
        0, 0, 0xf583d283672d2ee1ULL, 0x1e1c1fcd3386eba7ULL } },
    { "m_dw_relu_gelu", 80,
      { 0x4b46312665b41543ULL, 0x45f06a1483fbf84eULL, 0, 0,
        0, 0, 0x6795b749f4bd4462ULL, 0x9509ac668edbe22bULL } },
    { "m_dw_relu_gelu", 90,
      { 0x511be44a80007fb9ULL, 0xf5ebec6967b8b678ULL, 0, 0,
        0, 0, 0xfff04f25cdce8c58ULL, 0xb3368fdf620a72c9ULL } },
    { "m_dw_relu_silu", 80,
      { 0x53ed62a6e0a4b954ULL, 0x46968e6cefd78367ULL, 0, 0,
        0, 0, 0x5fcda10894330b83ULL, 0x850e062ce364c717ULL } },
    { "m_dw_relu_silu", 90,
      { 0xc21791c4beabb176ULL, 0xcebb882b60e8cd35ULL, 0, 0,
        0, 0, 0xe9416ac363c0af99ULL, 0x057b5ebb7ad85e11ULL } },
    { "m_dw_gelu_none", 80,
      { 0x5e0d117e8f96490aULL, 0x76541ac3d0b32956ULL, 0, 0,
        0, 0, 0x42b8ffb6867938afULL, 0xa78a502b80b61e45ULL } },
    { "m_dw_gelu_none", 90,
      { 0x9f02b7643fdbc464ULL, 0xe6077388ebcac104ULL, 0, 0,
        0, 0, 0x0742e4882269be01ULL, 0xe4686f13fca5eebbULL } },
    { "m_dw_gelu_relu", 80,
      { 0x74d825f4d051a5abULL, 0x5beb3026c4760bdfULL, 0, 0,
        0, 0, 0x8fd4a506f6fce14bULL, 0x7330d20c046cb9c1ULL } },
    { "m_dw_gelu_relu", 90,
      { 0x1dca15ce1cc36c0dULL, 0xb2239563ac82db69ULL, 0, 0,
        0, 0, 0xe8c1bff930f668cdULL, 0xeb4973797188cb53ULL } },
    { "m_dw_gelu_gelu", 80,
      { 0x4a0f73db0d33583cULL, 0x9754ef1cb9ce1f05ULL, 0, 0,
        0, 0, 0x9ef2c9187b8db098ULL, 0xe9f9b6f6a1acd4deULL } },
    { "m_dw_gelu_gelu", 90,
      { 0x0ca73d540e1409deULL, 0x628a739fce292bd3ULL, 0, 0,
        0, 0, 0xfb6c0c711a0e1c56ULL, 0xc66072d9519ba784ULL } },
    { "m_dw_gelu_silu", 80,
      { 0x2bc70922f2e0aff9ULL, 0x2e6e015893b375c0ULL, 0, 0,
        0, 0, 0x03e592d6d1c43b64ULL, 0x64ee735fe082e13aULL } },
    { "m_dw_gelu_silu", 90,
      { 0x418e216f398f0b5fULL, 0xebf5aece6c1ade06ULL, 0, 0,
        0, 0, 0xa68ca7f50782560eULL, 0x5e9806b333846598ULL } },
    { "m_dw_silu_none", 80,
      { 0x2448d063c7d2ca2bULL, 0x9b8cf9e83b34d666ULL, 0, 0,
        0, 0, 0x62efa27ca0a5d77dULL, 0x4c15f44d2151f692ULL } },
    { "m_dw_silu_none", 90,
      { 0x254ecc95c28eeea5ULL, 0xd24b93daf361e4f0ULL, 0, 0,
        0, 0, 0x6aad663c6421608fULL, 0xf2e93b13fdc9cba4ULL } },
    { "m_dw_silu_relu", 80,
      { 0xd3069c770f7787f4ULL, 0xa02e68a000c01e02ULL, 0, 0,
        0, 0, 0xb2cb9d836031ecfaULL, 0xfbf336f29956bc7eULL } },
    { "m_dw_silu_relu", 90,
      { 0x3e71ed841ea0c67eULL, 0xee22466e9d8f6ef4ULL, 0, 0,
        0, 0, 0xce4fe95c9e3a0144ULL, 0xbe81d27e6a44a32cULL } },
    { "m_dw_silu_gelu", 80,
      { 0x6fb9794b8bf539a3ULL, 0x08d9c9d4f6f6aef1ULL, 0, 0,
        0, 0, 0xb8563aa0740e4b7aULL, 0xbe0775dcd2365423ULL } },
    { "m_dw_silu_gelu", 90,
      { 0xebf6f472a8b5ecb5ULL, 0x47d01f353108cc77ULL, 0, 0,
        0, 0, 0x6505e290ca105d74ULL, 0x8cac285bdb7270c5ULL } },
    { "m_dw_silu_silu", 80,
      { 0x4794628f023396ebULL, 0x79ee3b3fb9ac130eULL, 0, 0,
        0, 0, 0x2abb60fdf3b9e222ULL, 0x8ca33b2064b6a6dfULL } },
    { "m_dw_silu_silu", 90,
      { 0x381ccc74c5ec0169ULL, 0xb1c5afa4f5c89decULL, 0, 0,
        0, 0, 0x3f687657a181f2d8ULL, 0xd0f6d6e7705da5bdULL } },
};
/* clang-format on */

#define N_GOLDEN_ENG ((int)(sizeof golden_eng / sizeof golden_eng[0]))

static int same_shape(const eng_shape *a, const eng_shape *b)
{
    return a->c_in == b->c_in && a->c_out == b->c_out && a->groups == b->groups && a->k == b->k &&
           a->stride == b->stride && a->dilation == b->dilation && a->pad_l == b->pad_l &&
           a->pad_r == b->pad_r && a->xl == b->xl && a->yl == b->yl && a->xt == b->xt &&
           a->wt == b->wt && a->yt == b->yt && a->pre == b->pre && a->act == b->act;
}

Test(ptx_golden, engine_modules_emit_the_recorded_bytes, .timeout = 600)
{
    static const char *update =
        "the emitted PTX changed: if deliberate, re-run the GPU suite on an H100 "
        "(scripts/gpu-node.sh) and update golden_eng (WS_GOLDEN_PRINT=1 prints it)";
    static const int eng_sms[] = { 80, 90 };
    static const ws_math other_maths[] = { WS_MATH_TF32, WS_MATH_F16, WS_MATH_BF16 };
    const char *pr = getenv("WS_GOLDEN_PRINT");
    const int print = pr && *pr && strcmp(pr, "0") != 0;
    for (int i = 0; i < N_SHAPES_ENG; i++)
        for (int j = 0; j < i; j++) {
            cr_assert_str_neq(shapes_eng[i].name, shapes_eng[j].name, "shape %s named twice",
                              shapes_eng[i].name);
            cr_assert(!same_shape(&shapes_eng[i], &shapes_eng[j]), "shapes %s and %s are the same",
                      shapes_eng[j].name, shapes_eng[i].name);
        }
    if (print)
        printf("static const golden_eng_row golden_eng[] = {\n");
    int row = 0, modules = 0, per_mod[ENG_NMOD] = { 0 };
    /* what the table reaches, per module kind: bit pre*4 + act of pairs; bit x_layout*2 +
     * y_layout; bits of x types, of y types; and the tensor-core instructions seen */
    unsigned acts[ENG_NMOD] = { 0 }, lays[ENG_NMOD] = { 0 }, xts[ENG_NMOD] = { 0 },
             yts[ENG_NMOD] = { 0 };
    int wgmma = 0, mma_sync = 0;
    for (int i = 0; i < N_SHAPES_ENG; i++)
        for (size_t ti = 0; ti < sizeof eng_sms / sizeof eng_sms[0]; ti++, row++) {
            const eng_shape *s = &shapes_eng[i];
            const int sm = eng_sms[ti];
            uint64_t h[ENG_NMOD] = { 0 };
            char names[ENG_NMOD][256];
            for (int m = 0; m < ENG_NMOD; m++) {
                names[m][0] = '\0';
                char *text = eng_emit(s, m, sm, WS_MATH_F32, names[m], sizeof names[m]);
                if (!text)
                    continue;
                h[m] = fnv1a64(text);
                modules++;
                per_mod[m]++;
                const int bwd = m == ENG_DIRECT_BWD || m == ENG_DW_BWD;
                acts[m] |= 1u << ((bwd ? 0 : (int)s->pre) * 4 + (int)s->act);
                lays[m] |= 1u << ((int)s->xl * 2 + (int)s->yl);
                xts[m] |= 1u << (int)s->xt;
                yts[m] |= 1u << (int)s->yt;
                wgmma += m > ENG_GEMM_F32 && m <= ENG_GEMM_BF16 && strstr(text, "wgmma.mma_async");
                mma_sync += m > ENG_GEMM_F32 && m <= ENG_GEMM_BF16 && strstr(text, "mma.sync");
                /* the direct and depthwise kernels do not depend on the math */
                if (m == ENG_DIRECT_FWD || m == ENG_DW_FWD || m == ENG_DIRECT_BWD || m == ENG_DW_BWD)
                    for (size_t k = 0; k < sizeof other_maths / sizeof other_maths[0]; k++) {
                        char other[256];
                        char *t2 = eng_emit(s, m, sm, other_maths[k], other, sizeof other);
                        cr_assert(t2 && !strcmp(t2, text),
                                  "%s sm_%d %s: math %d emits other bytes than math F32", s->name,
                                  sm, eng_mod_name[m], (int)other_maths[k]);
                        free(t2);
                    }
                free(text);
            }
            if (print) {
                printf("    { \"%s\", %d,\n      {", s->name, sm);
                for (int m = 0; m < ENG_NMOD; m++) {
                    if (h[m])
                        printf(" 0x%016" PRIx64 "ULL", h[m]);
                    else
                        printf(" 0");
                    printf("%s", m + 1 < ENG_NMOD ? (m == 3 ? ",\n       " : ",") : " } },\n");
                }
                continue;
            }
            cr_assert_lt(row, N_GOLDEN_ENG, "%s sm_%d: not in the table (%d rows recorded): %s",
                         s->name, sm, N_GOLDEN_ENG, update);
            const golden_eng_row *g = &golden_eng[row];
            cr_assert(!strcmp(g->shape, s->name) && g->sm == sm,
                      "row %d is %s sm_%d, recorded %s sm_%d: %s", row, s->name, sm, g->shape,
                      g->sm, update);
            for (int m = 0; m < ENG_NMOD; m++)
                cr_assert_eq(h[m], g->hash[m],
                             "%s sm_%d %s (%s) hashes 0x%016" PRIx64 ", recorded 0x%016" PRIx64
                             " (0: not emitted): %s",
                             s->name, sm, eng_mod_name[m], names[m][0] ? names[m] : "none", h[m],
                             g->hash[m], update);
        }
    for (int m = 0; m < ENG_NMOD; m++) {
        const int bwd = m == ENG_DIRECT_BWD || m == ENG_DW_BWD;
        const int dw = m == ENG_DW_FWD || m == ENG_DW_BWD;
        cr_assert_eq(acts[m], bwd ? 0xfu : 0xffffu, "%s: pre x act pairs reached 0x%x",
                     eng_mod_name[m], acts[m]);
        cr_assert_eq(lays[m], dw ? 0x9u : 0xfu, "%s: layouts reached 0x%x", eng_mod_name[m],
                     lays[m]);
        cr_assert(xts[m] == 7 && yts[m] == 7, "%s: x types 0x%x, y types 0x%x reached",
                  eng_mod_name[m], xts[m], yts[m]);
    }
    cr_assert(wgmma && mma_sync, "tensor-core gemm modules: %d wgmma, %d mma.sync", wgmma,
              mma_sync);
    if (print) {
        printf("};\n");
        fprintf(stderr, "golden_eng: %d rows, %d modules:", row, modules);
        for (int m = 0; m < ENG_NMOD; m++)
            fprintf(stderr, " %s %d%s", eng_mod_name[m], per_mod[m], m + 1 < ENG_NMOD ? "," : "\n");
        fflush(stdout);
        cr_skip_test("WS_GOLDEN_PRINT set: table printed, not compared");
    }
    cr_assert_eq(row, N_GOLDEN_ENG, "%d rows recorded, %d emitted: %s", N_GOLDEN_ENG, row, update);
}

/* --- the log-Mel's module ------------------------------------------------------------ */

typedef struct {
    int n_mels;
    int sm;
    uint64_t hash;
} golden_mel_row;

/* clang-format off */
static const golden_mel_row golden_mel[] = {
    { 80, 80, 0x835303c35496341aULL },
    { 80, 90, 0x444c0b092f4a2dccULL },
    { 128, 80, 0xd4e952d916cb5f03ULL },
    { 128, 90, 0x6d45002c5e944d5dULL },
};
/* clang-format on */

#define N_GOLDEN_MEL ((int)(sizeof golden_mel / sizeof golden_mel[0]))

Test(ptx_golden, mel_modules_emit_the_recorded_bytes)
{
    static const char *update =
        "the emitted PTX changed: if deliberate, re-run the GPU suite on an H100 "
        "(scripts/gpu-node.sh) and update golden_mel (WS_GOLDEN_PRINT=1 prints it)";
    static const int mels[] = { 80, 128 }, mel_sms[] = { 80, 90 };
    const char *pr = getenv("WS_GOLDEN_PRINT");
    const int print = pr && *pr && strcmp(pr, "0") != 0;
    if (print)
        printf("static const golden_mel_row golden_mel[] = {\n");
    int row = 0;
    for (size_t mi = 0; mi < sizeof mels / sizeof mels[0]; mi++)
        for (size_t ti = 0; ti < sizeof mel_sms / sizeof mel_sms[0]; ti++, row++) {
            const int nm = mels[mi], sm = mel_sms[ti];
            ws_err err = { "" };
            char *text = ws_mel_emit(nm, sm / 10, sm % 10, &err);
            cr_assert_not_null(text, "n_mels %d sm_%d: %s", nm, sm, err.msg);
            cr_assert_eq(count_entries(text), 3, "n_mels %d sm_%d: %d entries, want 3", nm, sm,
                         count_entries(text));
            const uint64_t h = fnv1a64(text);
            free(text);
            if (print) {
                printf("    { %d, %d, 0x%016" PRIx64 "ULL },\n", nm, sm, h);
                continue;
            }
            cr_assert_lt(row, N_GOLDEN_MEL, "n_mels %d sm_%d: not in the table: %s", nm, sm, update);
            const golden_mel_row *g = &golden_mel[row];
            cr_assert(g->n_mels == nm && g->sm == sm, "row %d is n_mels %d sm_%d, recorded %d sm_%d: %s",
                      row, nm, sm, g->n_mels, g->sm, update);
            cr_assert_eq(h, g->hash, "n_mels %d sm_%d hashes 0x%016" PRIx64 ", recorded 0x%016" PRIx64
                         ": %s", nm, sm, h, g->hash, update);
        }
    if (print) {
        printf("};\n");
        fflush(stdout);
        cr_skip_test("WS_GOLDEN_PRINT set: table printed, not compared");
    }
    cr_assert_eq(row, N_GOLDEN_MEL, "%d rows recorded, %d emitted: %s", N_GOLDEN_MEL, row, update);
}

/* --- the modules of training calls --------------------------------------------------- */

/* For every row of shapes_eng and the targets 8.0 and 9.0, the modules a plan adds for
 * weights given per call and for packed sequences and carried states, 0 where the
 * descriptor has none:
 *   wprep f32, wprep bf16  ws_wprep_emit with math F32 (the cast entry) and BF16 (cast, and
 *                          pack where the tensor-core GEMM takes the descriptor)
 *   dw 16-bit w fwd, bwd   ws_dw_emit_w(d, w_type) where w_type is 16-bit (else it is the
 *                          depthwise module of golden_eng)
 *   dws fwd, bwd           ws_dws_emit (depthwise causal rows)
 * Printed with WS_GOLDEN_PRINT=1 as golden_train. */
enum { TR_WPREP_F32, TR_WPREP_BF16, TR_DW16_FWD, TR_DW16_BWD, TR_DWS_FWD, TR_DWS_BWD, TR_NMOD };
static const char *const tr_mod_name[TR_NMOD] = {
    "wprep f32", "wprep bf16", "dw 16-bit w fwd", "dw 16-bit w bwd", "dws fwd", "dws bwd",
};

typedef struct {
    const char *shape;
    int sm;
    uint64_t hash[TR_NMOD];
} golden_train_row;

/* module m of shape s for target sm (malloc'd), or NULL where the descriptor has none */
static char *train_emit(const eng_shape *s, int m, int sm)
{
    const int bwd = m == TR_DW16_BWD || m == TR_DWS_BWD;
    const ws_conv_desc d = eng_desc(s, bwd ? WS_CONV_BWD : WS_CONV_FWD,
                                    m == TR_WPREP_BF16 ? WS_MATH_BF16 : WS_MATH_F32);
    ws_err err = { "" };
    if (ws_conv_check(&d, &err))
        return NULL;
    char *text = NULL;
    if (m == TR_WPREP_F32 || m == TR_WPREP_BF16) {
        text = ws_wprep_emit(&d, sm / 10, sm % 10, &err);
    } else if (m == TR_DW16_FWD || m == TR_DW16_BWD) {
        if (d.w_type == WS_F32 || !ws_dw_fits(&d))
            return NULL;
        text = ws_dw_emit_w(&d, d.w_type, sm / 10, sm % 10, &err);
    } else {
        if (!ws_dws_fits(&d))
            return NULL;
        text = ws_dws_emit(&d, sm / 10, sm % 10, &err);
    }
    cr_assert_not_null(text, "%s sm_%d %s: %s", s->name, sm, tr_mod_name[m], err.msg);
    return text;
}

/* clang-format off */
static const golden_train_row golden_train[] = {
#include "ptx_golden_train.inc"
};
/* clang-format on */

#define N_GOLDEN_TRAIN ((int)(sizeof golden_train / sizeof golden_train[0]))

Test(ptx_golden, training_modules_emit_the_recorded_bytes, .timeout = 600)
{
    static const char *update =
        "the emitted PTX changed: if deliberate, re-run the GPU suite on an H100 "
        "(scripts/gpu-node.sh) and update tests/ptx_golden_train.inc (WS_GOLDEN_PRINT=1 prints it)";
    static const int sms_tr[] = { 80, 90 };
    const char *pr = getenv("WS_GOLDEN_PRINT");
    const int print = pr && *pr && strcmp(pr, "0") != 0;
    int row = 0, per_mod[TR_NMOD] = { 0 };
    for (int i = 0; i < N_SHAPES_ENG; i++)
        for (size_t ti = 0; ti < sizeof sms_tr / sizeof sms_tr[0]; ti++, row++) {
            const eng_shape *s = &shapes_eng[i];
            const int sm = sms_tr[ti];
            uint64_t h[TR_NMOD] = { 0 };
            for (int m = 0; m < TR_NMOD; m++) {
                char *text = train_emit(s, m, sm);
                if (!text)
                    continue;
                h[m] = fnv1a64(text);
                per_mod[m]++;
                free(text);
            }
            if (print) {
                printf("{ \"%s\", %d, {", s->name, sm);
                for (int m = 0; m < TR_NMOD; m++) {
                    if (h[m])
                        printf(" 0x%016" PRIx64 "ULL", h[m]);
                    else
                        printf(" 0");
                    printf("%s", m + 1 < TR_NMOD ? "," : "");
                }
                printf(" } },\n");
                continue;
            }
            cr_assert_lt(row, N_GOLDEN_TRAIN, "row %d (%s sm_%d) is not in the table: %s", row, s->name, sm,
                         update);
            const golden_train_row *g = &golden_train[row];
            cr_assert_str_eq(g->shape, s->name, "row %d: %s", row, update);
            cr_assert_eq(g->sm, sm, "row %d: %s", row, update);
            for (int m = 0; m < TR_NMOD; m++)
                cr_assert_eq(h[m], g->hash[m], "%s sm_%d %s: hash %016" PRIx64 ", recorded %016" PRIx64 ": %s",
                             s->name, sm, tr_mod_name[m], h[m], g->hash[m], update);
        }
    if (print)
        cr_skip_test("WS_GOLDEN_PRINT set: table printed, not compared");
    cr_assert_eq(row, N_GOLDEN_TRAIN, "the table has %d rows, the shapes %d: %s", N_GOLDEN_TRAIN, row, update);
    /* the table reaches each kind of module */
    for (int m = 0; m < TR_NMOD; m++)
        cr_assert_gt(per_mod[m], 0, "no %s module in the table", tr_mod_name[m]);
}

/* --- the Hopper GEMM (ptx_hgemm.h) ------------------------------------------------------ */

enum { HG_BF16, HG_F16, HG_TF32, HG_NMATH };
static const ws_math hg_math[HG_NMATH] = { WS_MATH_BF16, WS_MATH_F16, WS_MATH_TF32 };
static const char *hg_math_name[HG_NMATH] = { "bf16", "f16", "tf32" };

typedef struct {
    const char *shape;
    uint64_t hash[HG_NMATH];
} golden_hopper_row;

/* clang-format off */
static const golden_hopper_row golden_hopper[] = {
#include "ptx_golden_hopper.inc"
};
/* clang-format on */

#define N_GOLDEN_HOPPER ((int)(sizeof golden_hopper / sizeof golden_hopper[0]))

/* one row of a golden_hopper_row table as C, for WS_GOLDEN_PRINT */
static void print_hopper_row(const char *indent, const char *name, const uint64_t h[HG_NMATH])
{
    printf("%s{ \"%s\", {", indent, name);
    for (int m = 0; m < HG_NMATH; m++) {
        if (h[m])
            printf(" 0x%016" PRIx64 "ULL", h[m]);
        else
            printf(" 0");
        printf("%s", m + 1 < HG_NMATH ? "," : "");
    }
    printf(" } },\n");
}

Test(ptx_golden, hopper_gemm_modules_emit_the_recorded_bytes, .timeout = 600)
{
    static const char *update =
        "the emitted PTX changed: if deliberate, re-run the GPU suite on an H100 "
        "(scripts/gpu-node.sh) and update tests/ptx_golden_hopper.inc (WS_GOLDEN_PRINT=1 prints it)";
    const char *pr = getenv("WS_GOLDEN_PRINT");
    const int print = pr && *pr && strcmp(pr, "0") != 0;
    int per_math[HG_NMATH] = { 0 }, ncl = 0, staged = 0;
    for (int i = 0; i < N_SHAPES_ENG; i++) {
        const eng_shape *s = &shapes_eng[i];
        uint64_t h[HG_NMATH] = { 0 };
        for (int m = 0; m < HG_NMATH; m++) {
            const ws_conv_desc d = eng_desc(s, WS_CONV_FWD, hg_math[m]);
            ws_err err = { "" };
            if (ws_conv_check(&d, &err) || !ws_hgemm_fits(&d, 9, 0))
                continue;
            char *text = ws_hgemm_emit(&d, &err);
            cr_assert_not_null(text, "%s %s: %s", s->name, hg_math_name[m], err.msg);
            h[m] = fnv1a64(text);
            free(text);
            per_math[m]++;
            ncl += d.x_layout == WS_NCL;
            staged += ws_hgemm_staged(&d);
        }
        if (print) {
            print_hopper_row("", s->name, h);
            continue;
        }
        cr_assert_lt(i, N_GOLDEN_HOPPER, "row %d (%s) is not in the table: %s", i, s->name, update);
        const golden_hopper_row *g = &golden_hopper[i];
        cr_assert_str_eq(g->shape, s->name, "row %d: %s", i, update);
        for (int m = 0; m < HG_NMATH; m++)
            cr_assert_eq(h[m], g->hash[m], "%s %s: hash %016" PRIx64 ", recorded %016" PRIx64 ": %s", s->name,
                         hg_math_name[m], h[m], g->hash[m], update);
    }
    if (print)
        cr_skip_test("WS_GOLDEN_PRINT set: table printed, not compared");
    cr_assert_eq(N_SHAPES_ENG, N_GOLDEN_HOPPER, "the table has %d rows, the shapes %d: %s", N_GOLDEN_HOPPER,
                 N_SHAPES_ENG, update);
    /* the table reaches every math, NCL and NLC x, staged and read in place */
    for (int m = 0; m < HG_NMATH; m++)
        cr_assert_gt(per_math[m], 0, "no %s module in the table", hg_math_name[m]);
    cr_assert(ncl > 0 && staged > 0 && staged < per_math[0] + per_math[1] + per_math[2],
              "the table's modules: %d NCL, %d staged", ncl, staged);
}

/* - the phased dx (ptx_golden/phased_dx_modules_emit_the_recorded_bytes): for the dense
 *   backward rows whose dx runs in the Hopper GEMM's phased form (NCL x, stride > 1),
 *   ws_hgemm_emit_phased's module with the rows' tap ranges, for BF16, F16 and TF32 math (0
 *   where the phased form does not take the row in that math): the GPU suite's strided NCL
 *   rows (tests/test_gpu_conv.c gbcases), each run there in every math. */
typedef struct {
    const char *name;
    int c_in, c_out, k, s, d, pl, pr;
} phased_shape;
static const phased_shape shapes_phased[] = {
    { "gb_ncl_s2_k3_o192_t1001", 64, 192, 3, 2, 1, 1, 1 },
    { "gb_ncl_s4_k8_c48_o256_t777", 48, 256, 8, 4, 1, 2, 2 },
    { "gb_ncl_s2_k3_c128_o192_t999_taps", 128, 192, 3, 2, 1, 1, 1 },
    { "gb_ncl_s4_k8_c128_o128_t777_taps", 128, 128, 8, 4, 1, 2, 2 },
    { "gb_ncl_s4_k8_c128_o640_t777_large", 128, 640, 8, 4, 1, 2, 2 },
    { "gb_ncl_s2_k3_d2_c128_o192_t999_notap", 128, 192, 3, 2, 2, 2, 2 },
};
#define N_SHAPES_PHASED ((int)(sizeof shapes_phased / sizeof shapes_phased[0]))
/* clang-format off */
static const golden_hopper_row golden_phased[] = {
    { "gb_ncl_s2_k3_o192_t1001", { 0x17c889a39dbdf96bULL, 0xdb46f618cb7ade0bULL, 0x1680e5f753a085f9ULL } },
    { "gb_ncl_s4_k8_c48_o256_t777", { 0x75954fcaf22530eeULL, 0xf39cb9bd3b24384eULL, 0x7e1bcd4583bb7ff0ULL } },
    { "gb_ncl_s2_k3_c128_o192_t999_taps", { 0xf4b172ce844b647eULL, 0x7702db85e55d2442ULL, 0x49a18392384f6e68ULL } },
    { "gb_ncl_s4_k8_c128_o128_t777_taps", { 0x4fb5ad3d3e8acb9dULL, 0x9dcb7b5e3477259bULL, 0x64fb5f5b95fb68b4ULL } },
    { "gb_ncl_s4_k8_c128_o640_t777_large", { 0x3135d15eb2d494eaULL, 0xb50b267b87de0db2ULL, 0xdd1d91f463849f94ULL } },
    { "gb_ncl_s2_k3_d2_c128_o192_t999_notap", { 0x1837b471fa1d5d1eULL, 0x6cf23cd78f83177cULL, 0x4b085e9fb25a5eecULL } },
};
/* clang-format on */
#define N_GOLDEN_PHASED ((int)(sizeof golden_phased / sizeof golden_phased[0]))

Test(ptx_golden, phased_dx_modules_emit_the_recorded_bytes)
{
    static const char *update = "the emitted PTX changed: if deliberate, re-run the GPU suite on a Hopper GPU "
                                "(scripts/gpu-node.sh) and update golden_phased (WS_GOLDEN_PRINT=1 prints it)";
    const char *pr = getenv("WS_GOLDEN_PRINT");
    const int print = pr && *pr && strcmp(pr, "0") != 0;
    int taken = 0, ranged = 0;
    for (int i = 0; i < N_SHAPES_PHASED; i++) {
        const phased_shape *s = &shapes_phased[i];
        uint64_t h[HG_NMATH] = { 0 };
        for (int m = 0; m < HG_NMATH; m++) {
            const ws_conv_desc d = { .op = WS_CONV_BWD, .c_in = s->c_in, .c_out = s->c_out, .groups = 1, .k = s->k,
                                     .stride = s->s, .dilation = s->d, .pad_l = s->pl, .pad_r = s->pr,
                                     .x_layout = WS_NCL, .y_layout = WS_NCL, .x_type = WS_BF16,
                                     .w_type = WS_BF16, .y_type = WS_BF16, .math = hg_math[m] };
            ws_gbwd_dx x;
            if (!ws_gbwd_dx_of(&d, &x) || !ws_hgemm_fits(&x.sub, 9, 0) || !ws_hgemm_phased_fits(&x.sub, x.phases))
                continue;
            int lo[WS_HGEMM_PHASES_MAX], hi[WS_HGEMM_PHASES_MAX];
            cr_assert_leq(x.phases, WS_HGEMM_PHASES_MAX, "%s", s->name);
            ws_gbwd_dx_taps(&d, &x, lo, hi);
            ws_err err = { "" };
            char *text = ws_hgemm_emit_phased(&x.sub, x.phases, lo, hi, &err);
            cr_assert_not_null(text, "%s %s: %s", s->name, hg_math_name[m], err.msg);
            h[m] = fnv1a64(text);
            ranged += strstr(text, "taps lo_r..hi_r") != NULL;
            free(text);
            taken++;
        }
        if (print) {
            print_hopper_row("    ", s->name, h);
            continue;
        }
        cr_assert_lt(i, N_GOLDEN_PHASED, "row %d (%s) is not in the table: %s", i, s->name, update);
        cr_assert_str_eq(golden_phased[i].shape, s->name, "row %d: %s", i, update);
        for (int m = 0; m < HG_NMATH; m++)
            cr_assert_eq(h[m], golden_phased[i].hash[m], "%s %s: hash %016" PRIx64 ", recorded %016" PRIx64 ": %s",
                         s->name, hg_math_name[m], h[m], golden_phased[i].hash[m], update);
    }
    if (print)
        cr_skip_test("WS_GOLDEN_PRINT set: table printed, not compared");
    cr_assert_eq(N_SHAPES_PHASED, N_GOLDEN_PHASED, "the table has %d rows, the shapes %d: %s", N_GOLDEN_PHASED,
                 N_SHAPES_PHASED, update);
    cr_assert(taken >= 18 && ranged >= 12, "%d phased modules, %d with tap ranges", taken, ranged);
}

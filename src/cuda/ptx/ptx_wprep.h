/* ptx_wprep.h - the weight-preparation kernels of plans whose weights come per call: what
 * ws_gpu_conv_new does on the host to weights given at plan time, done on the device, in
 * the call's stream, before the conv kernels read them.
 *
 *   cast  out[i] = (float)w[i], i < p_n                 w in w_type, out float32 [C_out][Cg][K]
 *         (the direct kernels, the FFMA GEMM and the packed-sequence kernels read float32)
 *   pack  out[i] = round(w[src(i)]), i < p_n = C_out*R  the GEMM's packed weights
 *         (ws_gemm_pack_weights): for tensor-core math (ws_gemm_mma_weights) R = C_in*K, row
 *         o in the GEMM's r order (k-major: r = k*C_in + j, else j*K + k), rounded to the
 *         math type: tf32 to nearest with ties away (cvt.rna.tf32.f32, as ws_f32_to_tf32),
 *         bf16 and f16 to nearest even; for the FFMA kernel (ws_gemm_ffma_weights) float32
 *         [R][C_out], r = k*C_in + j
 *
 * Both take the parameter table WS_PARAMS_WPREP (.u64 p_w, p_out; .u32 p_n) and one thread
 * per output element in blocks of WS_WPREP_THREADS. A 16-bit value converts to float32
 * exactly, so the kernels read the values the host conversion gives.
 * Tested by tests/test_ptx.c (ptxas) and tests/test_gpu_conv.c (per-call weights against
 * the same plan with weights given at plan time: the same bits).
 */
#ifndef WS_CUDA_PTX_WPREP_H
#define WS_CUDA_PTX_WPREP_H

#include "common.h"
#include "ws_conv.h"

#define WS_WPREP_THREADS 256
#define WS_WPREP_NAME_MAX 128

/* the module's name, and its two entries' (name + "_cast", name + "_pack") */
void ws_wprep_name(const ws_conv_desc *d, char name[WS_WPREP_NAME_MAX]);
void ws_wprep_entry(const ws_conv_desc *d, int pack, char name[WS_WPREP_NAME_MAX]);

/* 1 when d's plans have a pack entry (ws_gemm_packs: the GEMM on tensor cores, or the FFMA
 * GEMM where ws_gemm_ffma_wpack) */
int ws_wprep_packs(const ws_conv_desc *d);

/* The module for d (checked): the cast entry, and the pack entry where ws_wprep_packs.
 * malloc'd text, or NULL with err. */
char *ws_wprep_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err);

#endif

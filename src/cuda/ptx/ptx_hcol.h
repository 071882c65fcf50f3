/* ptx_hcol.h - dense forward convs whose C_in is not a multiple of 16 on the Hopper GEMM
 * (ptx_hgemm.h), which reads x in rows of a multiple of 16 channels: through their columns
 * where the sum over (j, k) is short (the first convs of audio encoders: wav2vec2's 1 -> 512
 * K10 S5, DAC's and EnCodec's 1 -> C K7), else through x with its channels padded.
 *
 * THE COLUMNS: R = C_in * K products an output, in the order r = j*K + k (the packed weights'
 *   order where C_in % 16 != 0, ws_gemm_mma_weights; w's own [C_out][C_in][K] flattened), padded
 *   to RP = R rounded up to 16 (ws_hcol_rp). The "_col" entry writes, for every item n and
 *   output time t < T_out,
 *     Xc[n][t][r] = round(pre(x[n, j, S*t + D*k - P_L]))  for r < R (zero outside [0, T_in)),
 *     Xc[n][t][r] = 0                                       for R <= r < RP,
 *   in the math type (bf16 / f16, or float32 rounded to TF32 with cvt.rna as the staging
 *   pass rounds it): NLC, RP channels, one 16-byte store per 16 bytes of a position. Then
 *   y = act(b + W' Xc) + add is the forward of the inner descriptor (ws_hcol_inner): K 1,
 *   stride 1, no padding, C_in RP, x NLC in the math type, pre NONE, everything of y (type,
 *   layout, act, bias, add) as d; W'[o][r] = w[o][r] (r < R), 0 past R. The plan runs it
 *   as a plan of its own on the Hopper GEMM (gpu_conv.c: the inner plan, its sum
 *   ceil(RP / BK) stages, one for wav2vec2's R 10, which ws_hgemm_fits would leave on the
 *   gemm kernel for being short: the inner plan takes any count of stages).
 * PADDED CHANNELS (C_in * K > WS_HCOL_R_MAX, ws_hcol_pad; C_in <= WS_HCOL_C_MAX): the "_col"
 *   entry writes, for every
 *   item n and input time t < T_in,
 *     Xp[n][t][c] = round(pre(x[n, c, t])) for c < C_in, 0 for C_in <= c < CP,
 *   CP = C_in rounded up to 16 (ws_hcol_cp), a thread a time; the inner descriptor is d with
 *   C_in CP, x NLC in the math type and pre NONE (taps, stride, dilation and padding d's: the
 *   GEMM's copies read them from Xp), W'[o][k][c] = w[o][c][k] for c < C_in, 0 past it. Taken
 *   where ws_hgemm_fits takes that padded conv (at least 3 stages; TF32 with NCL x on its
 *   terms for NCL x: 6 stages, C_out over 64); other such convs stay on the mma.sync GEMM.
 * THE WEIGHTS: "_wpad" (parameter table WS_PARAMS_WPREP, p_n = C_out * RP, padded channels
 *   C_out * K * CP, one thread an
 *   element) writes W' rounded to the math type from w given per call (w_type, [C_out][R]):
 *   out[o*RP + r] = round(w[o*R + r]) for r < R, else 0 - the inner plan's packed weights,
 *   the same values ws_gemm_pack_weights gives from W' in float32 at plan time; padded
 *   channels: out[(o*K + k)*CP + c] = round(w[(o*C_in + c)*K + k]) for c < C_in, else 0 (the
 *   inner plan's k-major packing).
 * Grid of "_col": (ceil(T_out / WS_HCOL_THREADS), N) (padded channels: T_in), WS_HCOL_THREADS
 *   threads, a thread a position (its loads predicated, no branch but the bound on t); parameters
 *   WS_PARAMS_HCOL (.u64 p_x, p_xc; .u32 p_n, p_t_in, p_t_out).
 * Why: the gemm kernel of ptx_gemm.h gathers such x through registers (wav2vec2's first conv,
 *   N8 T160000, bf16 NCL on an H200: 357-425 us for 262 MB of y).
 * Tested by tests/test_ptx.c (parameter tables) and tests/test_gpu_conv.c: ptxas on both
 * modules, the columns' conv on the CPU engine against the conv itself (the same bits where
 * the values are exact), and on an H100 against the CPU engine with plan and per-call weights
 * giving the same bits.
 */
#ifndef WS_CUDA_PTX_HCOL_H
#define WS_CUDA_PTX_HCOL_H

#include "common.h"
#include "ws_conv.h"

#define WS_HCOL_THREADS 128
#define WS_HCOL_R_MAX 64  /* the most products an output (C_in * K) the columns take */
#define WS_HCOL_C_MAX 256 /* the most input channels the padded channels take (their "_col"
                             entry loads a time's channels one by one, unrolled) */
#define WS_HCOL_NAME_MAX 160

/* 1 when d runs through its columns or padded channels on compute capability cc: 9.0, a
 * dense FWD with BF16, F16 or TF32 math, C_in % 16 != 0, at least WS_HGEMM_MIN_COUT output
 * channels, stride <= 8 and D*(K-1) + P_L <= INT_MAX / 2; with C_in * K > WS_HCOL_R_MAX
 * (padded channels) also where PADDED CHANNELS above says */
int ws_hcol_fits(const ws_conv_desc *d, int cc_major, int cc_minor);

/* 1: padded channels (C_in * K > WS_HCOL_R_MAX), 0: columns */
int ws_hcol_pad(const ws_conv_desc *d);

/* RP: C_in * K rounded up to 16; CP: C_in rounded up to 16 */
int ws_hcol_rp(const ws_conv_desc *d);
int ws_hcol_cp(const ws_conv_desc *d);

/* the inner descriptor (THE COLUMNS above) of d */
void ws_hcol_inner(const ws_conv_desc *d, ws_conv_desc *in);

/* W' in float32 from w (float32 [C_out][C_in][K]), in the inner descriptor's own layout:
 * columns [C_out][RP], zeros past R; padded channels [C_out][CP][K], zeros past C_in */
void ws_hcol_weights(const ws_conv_desc *d, const float *w, float *out);

/* the module's name; its entries name + "_col", name + "_wpad" */
void ws_hcol_name(const ws_conv_desc *d, char name[WS_HCOL_NAME_MAX]);

/* the module for a descriptor ws_hcol_fits (9.0): malloc'd text, or NULL with err */
char *ws_hcol_emit(const ws_conv_desc *d, ws_err *err);

#endif

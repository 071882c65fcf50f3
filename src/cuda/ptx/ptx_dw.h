/* ptx_dw.h - the conv engine's depthwise kernels for the GPU (Mamba's causal conv and any
 * other stride-1 depthwise conv), as PTX text: vector loads and stores along the
 * contiguous dimension, forward with bias, act and add fused, and one fused backward that
 * reads x and dy once and writes dx and per-block dw / db partials, summed by a finishing
 * kernel in a fixed order (no atomics: the same bits run after run).
 *
 * WHEN (ws_dw_fits): groups = C_in = C_out (one filter row per channel), stride 1,
 * x_layout = y_layout, K <= WS_DW_MAX_K, H = D*(K-1), P_L and P_R <= WS_DW_MAX_HALO (the
 * NCL kernels hold V + P_L + H elements in registers), C a multiple of the vector width V
 * (NLC). Per call the plan also needs (dw_call_fits in gpu_conv.c) every pointer
 * aligned to V elements, and for NCL T_in and T_out multiples of V, add's batch stride a
 * multiple of V; other calls go to the direct kernels (ptx_direct.h), which give the same
 * forward bits (below).
 *
 * V (ws_dw_vec): NCL 16 bytes of the wider of x_type and y_type (4 when either is float32,
 * else 8); NLC forward 4, NLC backward 2 (its four rings of registers; and more threads).
 * P = P_L. w is float32 [C][K], b float32 [C] or none.
 *
 * FORWARD  y[n,c,t] = act(b[c] + sum_k w[c,k] * pre(x[n, c, t - P + D*k])) + add[n,c,t]
 *   products by fma in the order k, then + b, act, + add: the direct kernel's sequence,
 *   so the two give the same bits (ptx_epi.h's epilogue, over a vector of V elements: the
 *   bias added under p_b != 0, the add read and y written by one vector access each).
 *   NLC: a thread owns V channels (one vector of every row) and a chunk of WS_DW_CHUNK
 *        output times, and streams through it: rows of x go through a ring of registers,
 *        loaded WS_DW_PREFETCH steps ahead; i = ((n*nch + ch)*C/V + cv), nch = ceil(T_out
 *        / WS_DW_CHUNK).
 *   NCL: a thread owns one vector of V output times of one row and loads the aligned x
 *        vectors that cover its taps; i = (n*C + c)*(T_out/V) + j.
 *   Parameters (ptx_params.h's WS_PARAMS_FWD, as the direct forward kernel): .u64 p_x,
 *   p_w, p_b, p_add, p_y; .u32 p_n, p_t_in, p_t_out; .u64 p_add_bs. Block WS_DW_THREADS.
 *
 * BACKWARD (pre NONE, no add) entry "_bwd", then "_fin" when dw or db is wanted:
 *   gz[t] = dy[t] * act'(z[t]), z = b + sum_k w[k] x[t - P + D*k] by fma (RELU: mul.rn
 *   then add.rn; the direct gz's rounding); dx[u] = sum_k w[k] * gz[u + P - D*k] (fma,
 *   order k: the direct dx's); dw[k] = sum_t gz[t] x[t - P + D*k], db = sum_t gz[t] (fma).
 *   NLC: a thread owns V channels and WS_DW_BWD_CHUNK output times [t0, t0 + L): it
 *        computes gz over [t0 - H, t0 + L), writes dx for u = t - P, t in [t0, t0 + L), and
 *        sums dw, db over its own t in order; one partial per thread. nch = ceil(max(T_in +
 *        P, T_out) / L) chunks per item.
 *   NCL: a thread owns V times j*V.. of one row: dx of those u, gz, dw, db of those t,
 *        its partial summed across the warp's 32 lanes (shfl.down 16, 8, 4, 2, 1: a fixed
 *        tree); rows are padded to a multiple of 32 vectors (nch = that count), one
 *        partial per warp.
 *   part: float32 [np][K + 1][C] (k' = K is db), np = N * parts per item, scratch the plan
 *   owns; _fin: dw[c,k] = sum_p part[p][k][c], db[c] = sum_p part[p][K][c] in the order p.
 *   Parameters (ptx_params.h's WS_PARAMS_DW_BWD and WS_PARAMS_DW_FIN):
 *     _bwd .u64 p_x, p_w, p_b, p_dy, p_dx, p_part; .u32 p_n, p_t_in, p_t_out, p_nch
 *          (p_dx 0: no dx; p_part 0: no partials; p_b 0: no bias)
 *     _fin .u64 p_part, p_dw, p_db; .u32 p_np          (p_dw / p_db 0: not wanted)
 *   Grids: _bwd NLC N*nch*C/V threads, NCL N*C*nch; _fin C*(K+1); blocks of WS_DW_THREADS.
 *
 * Tested by tests/test_gpu_conv.c (ptxas for sm_80 and sm_90, no spills; on a GPU against
 * the CPU engine and the direct kernels, bits repeatable).
 */
#ifndef WS_CUDA_PTX_DW_H
#define WS_CUDA_PTX_DW_H

#include "common.h"
#include "ws_conv.h"

#define WS_DW_THREADS 128
#define WS_DW_MAX_K 8
#define WS_DW_MAX_HALO 14
/* NLC output times per thread, rounded up to whole loop bodies (H100, N4 C5120 T2048 K4
 * bf16: forward 16 -> 70 us, 32 -> 75, 64 -> 72 (more threads fill the last wave); backward
 * 32 -> 144, 64 -> 129, 128 -> 128 (fewer dw/db partials)) */
#define WS_DW_CHUNK 16
#define WS_DW_CHUNK_F32 64 /* float32 x: 64 -> 133 us, 16 -> 141 (less halo re-read) */
#define WS_DW_BWD_CHUNK 128
#define WS_DW_NAME_MAX 160

/* 1 when the depthwise kernels can run descriptor d (checked) at all; 0: direct only */
int ws_dw_fits(const ws_conv_desc *d);

/* the vector width V of d's kernels (4 or 8) */
int ws_dw_vec(const ws_conv_desc *d);

/* The module's name ("ws_dw_fwd_..." / "ws_dw_bwd_...") and an entry's: FWD the module's
 * name; BWD the name + "_bwd" or "_fin". */
void ws_dw_name(const ws_conv_desc *d, char name[WS_DW_NAME_MAX]);
void ws_dw_entry(const ws_conv_desc *d, int fin, char name[WS_DW_NAME_MAX]);

/* chunks (NLC) or padded vectors (NCL) per item, and partials per item, of a call */
long long ws_dw_nch(const ws_conv_desc *d, int t_in, int t_out);
long long ws_dw_parts(const ws_conv_desc *d, int t_in, int t_out);

/* The PTX module for a descriptor ws_dw_fits, for a compute capability (8.0 or later).
 * malloc'd text, or NULL with err. */
char *ws_dw_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err);

/* The same kernels reading w ([C][K]) in type wt instead of float32: wt = d->w_type serves
 * weights given per call in a 16-bit type without a conversion pass (the values are those
 * of the float32 kernels: a 16-bit value converts to float32 exactly). wt WS_F32 is
 * ws_dw_emit. Names and entries get "_w<type>" after the module name. */
char *ws_dw_emit_w(const ws_conv_desc *d, ws_dtype wt, int cc_major, int cc_minor, ws_err *err);
void ws_dw_name_w(const ws_conv_desc *d, ws_dtype wt, char name[WS_DW_NAME_MAX]);
void ws_dw_entry_w(const ws_conv_desc *d, ws_dtype wt, int fin, char name[WS_DW_NAME_MAX]);

#endif

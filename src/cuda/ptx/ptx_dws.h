/* ptx_dws.h - the conv engine's depthwise causal kernels for calls that carry packed
 * sequences (seq_idx) or states (initial_states, final_states, dinitial_states), as PTX
 * text: one thread per output element, every sum in a fixed order (no atomics). Calls
 * without them take the depthwise (ptx_dw.h) or direct (ptx_direct.h) kernels; these are the
 * exception, written for correctness first, loads kept coalesced along the contiguous
 * dimension where the mapping allows.
 *
 * WHEN (ws_dws_fits): a valid descriptor (ws_conv_check) with groups = C_in = C_out (C),
 * stride 1, P_L = D*(K-1), P_R = 0: then T_out = T_in (T below). Any K (taps unrolled up to
 * 16, a loop beyond), any dilation D, x_layout and y_layout each its own (x, dx by x_layout;
 * y, add, dy and the scratch gz by y_layout), x_type and y_type each of F32, F16, BF16.
 * w is device float32 [C][K], b float32 [C] or none; seq_idx int32 [N][T]; states
 * [N][C][K-1] in x_type whatever the layouts.
 *
 * The input a tap reads, x_at(n, c, t, p) for output t and position p = t + D*k - P_L:
 *   p >= 0   x[n,c,p] when seq_idx is not given or seq_idx[n][p] == seq_idx[n][t], else 0
 *   p < 0    initial_states[n][c][p + K-1] when given and p + K-1 >= 0, else 0
 * (states need D = 1, where every p < 0 a tap reaches is a state; seq_idx and states in one
 * call are refused by the runtime: the kernels check seq_idx at p >= 0 only).
 * A position whose seq_idx is negative is padding: its y is 0 exactly (no bias, act or add),
 * its gz 0 and its dx 0; it feeds no tap of another position (its seq_idx matches none that
 * is not padding).
 *
 * FORWARD module "ws_dws_fwd_...", entries in this order:
 *   _fwd    y[n,c,t] = act(b[c] + sum_k w[c,k] * pre(x_at(n, c, t, t + D*k - P_L))) + add
 *           one thread per y element i (y_layout's index: NCL (n*C + c)*T + t, NLC
 *           (n*T + t)*C + c); fma.rn.f32 from 0 in the order k, every tap, a tap that reads 0
 *           included (fma with pre(0), as the depthwise kernels do with padding); then
 *           ptx_epi.h's epilogue (+ b[c] under p_b != 0, act, + add under p_add != 0,
 *           stored in y_type). Outputs that read no state and cross no sequence boundary
 *           get the depthwise and direct forward kernels' bits, so a run in chunks (each
 *           chunk's initial_states the previous one's final_states) gives one run's bits.
 *   _final  final_states[n][c][j] = raw input at q = T - (K-1) + j, j < K-1: x[n,c,q]
 *           for q >= 0, else initial_states[n][c][T + j] (0 when not given): bits copied,
 *           pre not applied. One thread per (n, c) = i = n*C + c, j in increasing order,
 *           so final_states may be the same buffer as initial_states (launched after _fwd).
 * BACKWARD module "ws_dws_bwd_..." (pre NONE, no add), entries in the order they run:
 *   _gz     gz[i] = dy[i] * act'(z), z = b[c] + sum_k w[c,k] * x_at(...) (fma in the order k,
 *           every tap; RELU by mul.rn then add.rn, the direct gz's rounding; the bias by
 *           add.rn under p_b != 0); act NONE: gz = dy (z not formed); 0 at padding.
 *           One thread per y element i (y_layout's index); gz is the float32 scratch
 *           [N][C][T] in y_layout (N*C*T floats: ws_dws_scratch_bytes).
 *   _dx     dx[n,c,p] = sum_k w[c,k] * gz[n,c,t], t = p + P_L - D*k < T with seq_idx[n][t]
 *           == seq_idx[n][p] (when given), fma in the order k over every tap (0 for the
 *           others); 0 at padding; stored in x_type. One thread per x element (x_layout's
 *           index).
 *   _dinit  dinitial_states[n][c][j] = sum_k w[c,k] * gz[n,c,t], t = j - (K-1) + P_L - D*k
 *           in [0, T) (the same fma order); stored in x_type. One thread per state element
 *           i = (n*C + c)*(K-1) + j.
 *   _dw     dw[c*K + k] = sum_n sum_t gz[n,c,t] * x_at(n, c, t, t + D*k - P_L), n then t,
 *           fma; one thread per (c, k), i = k*C + c (consecutive threads, consecutive
 *           channels).
 *   _db     db[c] = sum_n sum_t gz[n,c,t], n then t, add.rn; one thread per c.
 * Pointers p_seq, p_init, p_b, p_add 0: not given (tested in the kernel, one uniform branch
 * or predicate each); the others must be valid. N >= 1 and T >= 1.
 *
 * Parameters (ptx_params.h's tables WS_PARAMS_DWS_FWD + part, in ws_dws_part's order; T is
 * p_t, which is T_in and T_out):
 *   _fwd    .u64 p_x, p_w, p_b, p_add, p_y, p_seq, p_init; .u32 p_n, p_t; .u64 p_add_bs
 *   _final  .u64 p_x, p_init, p_final; .u32 p_n, p_t
 *   _gz     .u64 p_x, p_w, p_b, p_dy, p_seq, p_init, p_gz; .u32 p_n, p_t
 *   _dx     .u64 p_w, p_gz, p_seq, p_dx; .u32 p_n, p_t
 *   _dinit  .u64 p_w, p_gz, p_dinit; .u32 p_n, p_t
 *   _dw     .u64 p_x, p_gz, p_seq, p_init, p_dw; .u32 p_n, p_t
 *   _db     .u64 p_gz, p_db; .u32 p_n, p_t
 * Grids (ws_dws_elements): ceil(elements / WS_DWS_THREADS) blocks of WS_DWS_THREADS,
 * elements N*C*T (_fwd, _gz, _dx), N*C (_final), N*C*(K-1) (_dinit), C*K (_dw), C (_db).
 *
 * Tested by tests/test_ptx.c (ptx_dws/...: every entry of a set of descriptors through
 * ptxas for sm_80 and sm_90 without stack or spills; ptx_params/...: each entry's
 * parameters against its table) and tests/test_gpu_dws.c (on a GPU, against a float64
 * reference: chunked runs, padding, states).
 */
#ifndef WS_CUDA_PTX_DWS_H
#define WS_CUDA_PTX_DWS_H

#include "common.h"
#include "ws_conv.h"

#define WS_DWS_THREADS 256
#define WS_DWS_NAME_MAX 160

/* The entries, FWD's then BWD's, in the order they run; part p's parameter table is
 * WS_PARAMS_DWS_FWD + p (ptx_params.h). */
typedef enum {
    WS_DWS_FWD = 0, WS_DWS_FINAL,                                  /* the FWD module */
    WS_DWS_GZ, WS_DWS_DX, WS_DWS_DINIT, WS_DWS_DW, WS_DWS_DB,      /* the BWD module */
    WS_DWS_NPARTS
} ws_dws_part;

/* 1 when d is a valid depthwise causal descriptor (above), else 0 */
int ws_dws_fits(const ws_conv_desc *d);

/* 1 when d's module holds entry part (FWD: _fwd, _final; BWD: _gz .. _db) */
int ws_dws_has_part(const ws_conv_desc *d, ws_dws_part part);

/* The module's name: "ws_dws_<fwd|bwd>_c<C>_k<K>_d<D>_<layout>_<x_type>_<y_type>_<pre>_<act>",
 * <layout> "ncl" or "nlc", or "<x>_<y>" when the layouts differ. */
void ws_dws_name(const ws_conv_desc *d, char name[WS_DWS_NAME_MAX]);

/* An entry's name: the module's + "_fwd", "_final", "_gz", "_dx", "_dinit", "_dw" or "_db". */
void ws_dws_entry(const ws_conv_desc *d, ws_dws_part part, char name[WS_DWS_NAME_MAX]);

/* Threads entry part launches for a call of n items of t positions (0 when the module has
 * no such entry) */
unsigned long long ws_dws_elements(const ws_conv_desc *d, ws_dws_part part, int n, int t);

/* The PTX module of a descriptor ws_dws_fits, for compute capability cc_major.cc_minor
 * (8.0 or later): FWD _fwd and _final, BWD _gz, _dx, _dinit, _dw, _db. Emission is a pure
 * function of d and the capability. malloc'd text, or NULL with err. */
char *ws_dws_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err);

#endif

/* ptx_direct.h - the conv engine's direct forward kernel for the GPU, as PTX text.
 *
 *   y[n,o,t] = act( b[o] + sum_{j<Cg} sum_{k<K} w[o,j,k] * pre(x[n, g*Cg+j, S*t + D*k - P_L]) )
 *              + add[n*add_batch_stride + (o,t) in y_layout]          g = o / Cog
 *
 * One thread per output element: i = blockIdx.x * 256 + threadIdx.x over N*C_out*T_out
 * (64-bit), i is y's own element index, so consecutive threads write consecutive
 * addresses in either y_layout:
 *   NCL  i = (n*C_out + o)*T_out + t        NLC  i = (n*T_out + t)*C_out + o
 * Taps with u = S*t + D*k - P_L outside [0, T_in) are skipped (x is zero there).
 * x is read in x_type and x_layout, pre applied as read; w is float32 [C_out][Cg][K]
 * (the plan converts it); products by fma in float32, summed in the order j then k
 * (cpu_direct.c's order); then + b[o], act, + add (read in y_type), stored in y_type
 * (f16: cvt.rn.f16.f32, bf16: cvt.rn.bf16.f32). GELU is gelu_ptx.h's exact-erf
 * sequence; SILU = z / (1 + 2^(-z log2 e)) with ex2.approx.ftz and div.rn.
 * Every math mode is computed this way (FFMA in float32), as on the CPU.
 *
 * The shapes (C_in, C_out, G, K, S, D, P_L, layouts, types, pre, act) are immediates;
 * parameters, in this order:
 *   .u64 p_x, p_w, p_b, p_add, p_y     device pointers; p_b / p_add 0: no bias / no add
 *   .u32 p_n, p_t_in, p_t_out
 *   .u64 p_add_bs                      add_batch_stride in elements
 * b and add are tested in the kernel (one uniform branch each) rather than emitted as
 * variants: one module per descriptor, and a plan serves calls with and without add.
 * Block WS_DIRECT_THREADS threads, grid ceil(N*C_out*T_out / WS_DIRECT_THREADS).
 *
 * Tested by tests/test_gpu_conv.c: ptxas for sm_80 and sm_90 (no spills, no stack) over
 * a descriptor table, and on the GPU against the CPU engine.
 */
#ifndef WS_CUDA_PTX_DIRECT_H
#define WS_CUDA_PTX_DIRECT_H

#include <stddef.h>

#include "common.h"
#include "ws_conv.h"

#define WS_DIRECT_THREADS 256
#define WS_DIRECT_NAME_MAX 160

/* The kernel's name for a descriptor: "ws_direct_fwd_" and the fields that shape the code. */
void ws_direct_name(const ws_conv_desc *d, char name[WS_DIRECT_NAME_MAX]);

/* The PTX module (one kernel, named by ws_direct_name) for a checked FWD descriptor and a
 * compute capability (8.0 or later). Returns malloc'd text, or NULL with err. */
char *ws_direct_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err);

#endif

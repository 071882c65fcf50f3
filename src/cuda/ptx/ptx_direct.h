/* ptx_direct.h - the conv engine's direct kernels for the GPU, as PTX text: one forward
 * kernel, and four backward kernels in one module.
 *
 * FORWARD
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
 * (f16: cvt.rn.f16.f32, bf16: cvt.rn.bf16.f32): ptx_epi.h's epilogue, b[o] read under a
 * branch on p_b != 0, add under a branch on p_add != 0. GELU is gelu_ptx.h's exact-erf
 * sequence; SILU = z * rcp(1 + 2^(-z log2 e)) with ex2.approx.ftz and rcp.approx.ftz
 * (ptx_act.h).
 * Every math mode is computed this way (FFMA in float32), as on the CPU.
 *
 * The shapes (C_in, C_out, G, K, S, D, P_L, layouts, types, pre, act) are immediates;
 * parameters, in this order (ptx_params.h's table WS_PARAMS_FWD, which the emitter and
 * gpu_conv.c's launch both read):
 *   .u64 p_x, p_w, p_b, p_add, p_y     device pointers; p_b / p_add 0: no bias / no add
 *   .u32 p_n, p_t_in, p_t_out
 *   .u64 p_add_bs                      add_batch_stride in elements
 * b and add are tested in the kernel (one uniform branch each) rather than emitted as
 * variants: one module per descriptor, and a plan serves calls with and without add.
 * Block WS_DIRECT_THREADS threads, grid ceil(N*C_out*T_out / WS_DIRECT_THREADS).
 *
 * BACKWARD (pre NONE, no add): one module "ws_direct_bwd_..." with four entries, named
 * ws_direct_bwd_entry(d, part) = module name + "_gz" / "_dx" / "_dw" / "_db", run in that
 * order on one stream (gz first; the others only when wanted). gz is a float32 scratch
 * [N][C_out][T_out] (NCL whatever y_layout) that the plan owns. One module rather than
 * four: one JIT and load per plan, one dump file per descriptor, and a plan serves calls
 * asking for any subset of dx, dw, db. Every sum is one thread's, in a fixed order: no
 * atomics, the same bits run after run.
 *   gz  one thread per y element, i = y's index (as FORWARD):
 *         z = b[o] + sum_j sum_k w[o,j,k] * x[n, g*Cg+j, S*t + D*k - P_L]   (j then k)
 *         gz[(n*C_out + o)*T_out + t] = dy[i] * act'(z)
 *       z by fma; for RELU by mul.rn then add.rn, the CPU's rounding sequence (a += w * x),
 *       so the mask z > 0 agrees with the CPU engine's. act' NONE 1 (z not computed); RELU
 *       [z > 0]; GELU Phi(z) + z phi(z) with Phi = gelu(z) / z from gelu_ptx.h's exact-erf
 *       sequence (0.5 for |z| < 2^-60) and phi = 2^(-z^2 log2(e)/2) / sqrt(2 pi)
 *       (ex2.approx): |error| <= WS_DIRECT_GELU_GRAD_MAX_ABS against erf in double (the C
 *       model ws_direct_gelu_grad_model, grid of tests/test_gpu_conv.c); SILU s + z s (1-s)
 *       with s, 1-s from e = 2^(-|z| log2 e) and r = 1/(1+e) (rcp.approx), no cancellation.
 *   dx  one thread per x element, i = x's index (x_layout), c = channel, g = c / Cg:
 *         dx[i] = sum_{o = g*Cog .. g*Cog+Cog-1} sum_{k<K} w[o, c - g*Cg, k] * gz[n, o, t],
 *         t = (u + P_L - D*k) / S when S divides it and 0 <= t < T_out   (o then k,
 *         fma), stored in x_type
 *   dw  one thread per w element i = (o*Cg + j)*K + k:
 *         dw[i] = sum_n sum_t gz[n,o,t] * x[n, g*Cg+j, S*t + D*k - P_L]  (n then t, fma;
 *         taps outside [0, T_in) skipped), float32
 *   db  one thread per o: db[o] = sum_n sum_t gz[n,o,t] (n then t), float32
 * Parameters (ptx_params.h's tables WS_PARAMS_BWD_GZ, _DX, _DW, _DB):
 *   gz  .u64 p_x, p_w, p_b, p_dy, p_gz; .u32 p_n, p_t_in, p_t_out   (p_b 0: no bias)
 *   dx  .u64 p_w, p_gz, p_dx; .u32 p_n, p_t_in, p_t_out
 *   dw  .u64 p_x, p_gz, p_dw; .u32 p_n, p_t_in, p_t_out
 *   db  .u64 p_gz, p_db; .u32 p_n, p_t_out
 * Grids: ceil(elements / WS_DIRECT_THREADS) blocks of WS_DIRECT_THREADS, elements N*C_out*T_out,
 * N*C_in*T_in, C_out*Cg*K and C_out.
 *
 * Tested by tests/test_gpu_conv.c: ptxas for sm_80 and sm_90 (no spills, no stack) over
 * a descriptor table (FWD and BWD), and on the GPU against the CPU engine.
 */
#ifndef WS_CUDA_PTX_DIRECT_H
#define WS_CUDA_PTX_DIRECT_H

#include <stddef.h>

#include "common.h"
#include "ws_conv.h"

#define WS_DIRECT_THREADS 256
#define WS_DIRECT_NAME_MAX 160

/* The module's name for a descriptor: "ws_direct_fwd_" or "ws_direct_bwd_" and the fields
 * that shape the code; the FWD kernel's name too. */
void ws_direct_name(const ws_conv_desc *d, char name[WS_DIRECT_NAME_MAX]);

/* The backward entries, in the order they run. */
typedef enum { WS_DIRECT_GZ = 0, WS_DIRECT_DX, WS_DIRECT_DW, WS_DIRECT_DB, WS_DIRECT_NPARTS } ws_direct_part;

/* A BWD module's entry name: ws_direct_name + "_gz", "_dx", "_dw" or "_db". */
void ws_direct_bwd_entry(const ws_conv_desc *d, ws_direct_part part, char name[WS_DIRECT_NAME_MAX]);

/* The PTX module for a checked descriptor and a compute capability (8.0 or later): FWD one
 * kernel named by ws_direct_name, BWD the four entries above. Returns malloc'd text, or
 * NULL with err. */
char *ws_direct_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err);

/* gelu'(z) as the gz kernel computes it, in C float arithmetic (exp2f standing in for
 * ex2.approx): for the error bound's test. */
float ws_direct_gelu_grad_model(float z);
/* the model against erfc / exp in double on a grid of step 1e-5 over [-14, 14] and at
 * tiny, huge and signed-zero z: measured 1.94e-7 (z = 1.666); on the GPU ex2.approx adds
 * about 2 ulp of t/2 and of phi, so about 5e-7 there (the CPU's act.c: ~1.5e-7) */
#define WS_DIRECT_GELU_GRAD_MAX_ABS 2.5e-7

#endif

/* blas.h - single-precision GEMM, row-major, the engine's own (sgemm.c).
 *
 *   C[M x N] = alpha * A[M x K] * B[K x N] + beta * C     (no transposes)
 *
 * AVX-512F, AVX2 + FMA or plain C, chosen once per process from CPUID and the state the OS
 * saves (XCR0); WS_CPU_ISA=avx512|avx2|scalar asks for one. No BLAS library: the bits do not
 * depend on which one a machine has or how it guesses the processor. Every entry is
 * thread-safe; none starts threads (callers split the work over their own).
 */
#ifndef WS_BLAS_H
#define WS_BLAS_H

#include <stddef.h>

#include "ws_conv.h" /* ws_act */

enum { WS_ISA_SCALAR = 0, WS_ISA_AVX2 = 1, WS_ISA_AVX512 = 2 };

/* the path in use (WS_ISA_*), and the best one this CPU and OS have */
int ws_cpu_isa(void);
int ws_cpu_isa_have(void);

void ws_sgemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

/* ws_sgemm on path isa (WS_ISA_*; one the CPU lacks: the best it has), for tests */
void ws_sgemm_isa(int isa, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc);

/* B [K x N] (row stride ldb) packed once for ws_sgemm_conv: ws_sgemm_packed_floats(K, N)
 * floats at out, 64-byte aligned */
size_t ws_sgemm_packed_floats(int K, int N);
void ws_sgemm_pack(int K, int N, const float *B, int ldb, float *out);

/* The packed B of columns [c0, N) (c0 a multiple of WS_SGEMM_COL_ALIGN): what
 * ws_sgemm_conv takes to compute those columns alone, with the same bits. */
enum { WS_SGEMM_COL_ALIGN = 32 };
const float *ws_sgemm_packed_col(int K, const float *Bpk, int c0);

/* The epilogue of a product: C = act(C + bias) + add, applied to each tile of C while it
 * is in registers (bias [N] or NULL; add row i at add + i*ldadd, or NULL). GELU and RELU
 * run in the AVX-512 and AVX2 kernels (GELU: ws_gelu_fma's arithmetic, bit for bit); SILU
 * and the plain-C path run ws_bias_act_rows on the tile right after it is stored. */
typedef struct {
    const float *bias;
    ws_act act;
    const float *add;
    long ldadd;
} ws_sgemm_epi;

/* A conv's taps as one product: C = sum_t A_t * B_t (+ beta*C), A_t[i][c] = A[i*lda + t*tap + c]
 * (c < ic), B the taps' [ic x N] blocks stacked ([taps*ic x N]) and packed by ws_sgemm_pack
 * (K = taps*ic); alpha 1. Summed in the order of (t, c); then the epilogue e (or none: NULL). */
void ws_sgemm_conv(int M, int N, int taps, int ic, const float *A, long lda, long tap, const float *Bpk,
                   float beta, float *C, int ldc, const ws_sgemm_epi *e);

#endif

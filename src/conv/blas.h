/* blas.h - single-precision GEMM, row-major, from a BLAS opened at run time.
 *
 *   C[M x N] = alpha * A[M x K] * B[K x N] + beta * C     (no transposes)
 *
 * OpenBLAS (libopenblas.so.0) is preferred, then any CBLAS (libblas.so.3),
 * then built-in loops. It is opened at run time so that OPENBLAS_CORETYPE
 * can be set first, from the CPU's features: OpenBLAS 0.3.21 goes by the CPU
 * model and falls back to slower kernels on models it does not know (AVX2
 * ones on AMD Zen 4/5, 1.9x slower than its SkylakeX ones there;
 * SSE3 "Prescott" ones on a GPU host whose hypervisor hides the model).
 * OpenBLAS is kept to one thread:
 * callers split the work over their own threads (no busy-waiting pools
 * fighting over two cores).
 */
#ifndef WS_BLAS_H
#define WS_BLAS_H

/* Thread-safe after the first call (which loads the library; call it once
 * from one thread first, e.g. via ws_blas_name()). */
void ws_sgemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

#endif

/* gelu_ptx.h - exact (erf) GELU for PTX, which has no erf instruction.
 *
 *   gelu(x) = x * Phi(x),  Phi(x) = (1 + erf(z)) / 2,  z = x / sqrt(2)
 *
 * One piece, no branch: t = erfc(|z|) = 2^(zc * R(zc)), zc = min(|z|, 4),
 * R a degree-9 polynomial (least squares for log2(erfc(z)) / z on [0, 4],
 * fitted in double, rounded to float, Horner with fma in z itself), 2^ by
 * ex2.approx.ftz, t = 0 beyond |z| = 4 (erfc(4) = 1.5e-8). Then
 *   Phi = 1 - t/2 (x > 0),  t/2 (x <= 0);  gelu = x * Phi
 * so the negative side has no cancellation. 21 instructions (1 MUFU).
 *
 * Error, measured on a grid of step 1e-5 over [-14, 14] against erf/erfc in
 * double (tests/test_ptx.c gelu_model_error_within_bound; the same grid runs
 * through the PTX on the GPU in tests/test_gpu.c gelu_ptx_matches_double):
 *   Phi(x) max abs error 7.5e-8 (1.3 ulp of 0.58), so erf(z) = 2 Phi - 1
 *   within 1.5e-7 (2.5 ulp near 1); gelu(x) max abs error 3.9e-7 for
 *   |x| <= 5.66 (under 1 ulp of x near 4.9); beyond, gelu = x for x > 5.66
 *   (true value within 1e-8 relative) and 0 for x < -5.66 (true > -4.4e-8).
 *   Bound tested: |err| <= WS_GELU_MAX_ABS + 1.2e-7 * |x|.
 */
#ifndef WS_CUDA_GELU_PTX_H
#define WS_CUDA_GELU_PTX_H

#include "ptx_emit.h"

#define WS_GELU_ERF_MAX_ABS 1.5e-7  /* CPU model of the PTX sequence, grid above */
#define WS_GELU_MAX_ABS 4e-7        /* gelu model, plus 1.2e-7 * |x| */
#define WS_GELU_PTX_MAX_ABS 5e-7    /* on the GPU, plus 2.4e-7 * |x|: ex2.approx adds ~2 ulp of t */

/* The PTX sequence in C float arithmetic (fmaf, exp2f for ex2.approx): for
 * tests and as documentation of what the kernels compute. */
float ws_gelu_model(float x);
float ws_erf_model(float z);

/* Emits y = gelu(x) (both .f32 register names) into b. */
void ws_gelu_emit(ptx_buf *b, const char *y, const char *x);

#endif

/* gelu_ptx.h - exact (erf) GELU for PTX, which has no erf instruction.
 *
 *   gelu(x) = x/2 * (1 + erf(z)),  z = x / sqrt(2)
 *
 * Two pieces, both evaluated and one selected (no divergent branch):
 *   |z| < 0.9:  erf(z) = z * P(s),  s = z^2 * (2/0.81) - 1,  P of degree 6;
 *               gelu = fma(x/2, erf(z), x/2)
 *   |z| >= 0.9: erfc(|z|) = t = 2^Q(s'),  s' = |z| * a + b mapping
 *               [0.9, 4] to [-1, 1], Q of degree 10, 2^ by ex2.approx.ftz;
 *               t = 0 beyond |z| = 4 (erfc(4) = 1.5e-8);
 *               gelu = x * (1 - t/2) for x > 0, x/2 * t for x < 0
 *               (no cancellation on the negative side).
 * P and Q are Chebyshev interpolants of erf(z)/z in z^2 and of log2(erfc(z)),
 * computed in double and rounded to float; Horner with fma.
 *
 * Error, measured on a grid of step 1e-5 over [-14, 14] against erf/erfc in
 * double (tests/test_ptx.c gelu_model_error_within_bound; the same grid is
 * run through the PTX on the GPU by tests/test_gpu.c gelu_ptx_matches_double):
 *   erf(z) max abs error 1.4e-7 (about 2.3 float ulp near 0.93)
 *   gelu(x) max abs error 3.9e-7 for |x| <= 5.66 (under 1 ulp of x near 4.9);
 *   beyond, gelu = x for x > 5.66 (true value within 1e-8 relative) and 0
 *   for x < -5.66 (true value above -4.4e-8).
 *   Bound tested: |err| <= WS_GELU_MAX_ABS + 1.2e-7 * |x|.
 */
#ifndef WS_CUDA_GELU_PTX_H
#define WS_CUDA_GELU_PTX_H

#include "ptx_emit.h"

#define WS_GELU_ERF_MAX_ABS 1.5e-7  /* CPU model of the PTX sequence, grid above */
#define WS_GELU_MAX_ABS 4e-7        /* gelu model, plus 1.2e-7 * |x| */
#define WS_GELU_PTX_MAX_ABS 5e-7    /* on the GPU: ex2.approx adds ~2 ulp of t <= 0.21 */

/* The PTX sequence in C float arithmetic (fmaf, exp2f for ex2.approx): for
 * tests and as documentation of what the kernels compute. */
float ws_gelu_model(float x);
float ws_erf_model(float z);

/* Emits y = gelu(x) (both .f32 register names) into b. */
void ws_gelu_emit(ptx_buf *b, const char *y, const char *x);

#endif

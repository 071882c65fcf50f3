/* conv.h - one 1-D convolution, time-major, on the CPU.
 *
 * Math (PyTorch Conv1d, then the activation):
 *   y[t, o] = act( b[o] + sum_i sum_k w[o, i, k] * x[s*t + dil*k - pad, i] )
 *   T_out   = (T_in + 2*pad - dil*(K-1) - 1) / s + 1
 * x outside [0, T_in) is zero.
 *
 * Layouts:
 *   w  PyTorch [OC][IC][K]: w[o,i,k] = w[(o*IC + i)*K + k]  (GGUF ne = [K, IC, OC])
 *   x  time-major [T_in][IC], passed PADDED: xp points at row -pad of a buffer of
 *      T_in + 2*pad rows whose first and last pad rows are zero. A shifted-row
 *      view then reads every tap with no im2col copy:
 *        tap k of output row t is row s*t + dil*k of xp
 *   y  time-major [T_out][OC], leading dimension ldy >= OC
 *
 * Method: per tap k, one GEMM  Y[T_out x OC] += Xk[T_out x IC] * Wk^T  where
 * Xk = xp + dil*k*IC with row stride s*IC, and Wk[o][i] = w[o,i,k] packed at
 * creation (for the engine's sgemm, blas.h: AVX-512, AVX2 + FMA or C); the
 * time axis is split across the caller's threads, each calling a
 * single-threaded sgemm. Accumulation: float32, in the order of K (blas.h).
 * Validated by tests/test_conv.c against the double-precision oracle.
 */
#ifndef WS_CONV_ROWS_H
#define WS_CONV_ROWS_H

#include "common.h"
#include "ws_conv.h" /* ws_act */

typedef struct {
    int in_ch, out_ch;
    int kernel, stride, pad, dilation;
    ws_act act;
    int minfilt; /* 1: also pack the weights for minimal filtering where the shape allows
                  * (ws_rowconv_group_rows) */
} ws_rowconv_desc;

/* T_out for a given T_in, or 0 when the input is too short. */
int ws_rowconv_out_len(const ws_rowconv_desc *c, int t_in);

typedef struct ws_rowconv ws_rowconv;

/* Packs w [OC][IC][K] and copies b [OC] (b may be NULL). NULL + err on failure. */
ws_rowconv *ws_rowconv_new(const ws_rowconv_desc *c, const float *w, const float *b, ws_err *err);
void ws_rowconv_free(ws_rowconv *cv);

/* y[t_out][ldy] = act(conv(xp)) + add, on n_threads threads. add is
 * [t_out][OC] (added after the activation: the positional embedding) or NULL. */
void ws_rowconv_run(const ws_rowconv *cv, const float *xp, int t_in, float *y, int ldy, const float *add,
                 int n_threads);

/* The same for output rows [row0, row0 + n_rows) only (y and add still
 * indexed from output row 0; xp as above). */
void ws_rowconv_run_rows(const ws_rowconv *cv, const float *xp, int row0, int n_rows, float *y, int ldy,
                      const float *add, int n_threads);

/* Output rows [row0, row0 + n_rows) and columns [col0, col0 + n_cols) only, on the calling
 * thread (col0 a multiple of WS_SGEMM_COL_ALIGN; y, add and the bias still indexed from row
 * 0, column 0): the bits of the whole run's elements. */
void ws_rowconv_run_block(const ws_rowconv *cv, const float *xp, int row0, int n_rows, int col0,
                          int n_cols, float *y, int ldy, const float *add);

/* Minimal filtering (conv.c: asked for by minfilt; K 3, dilation 1, stride 1 or 2, IC and
 * OC >= 32, unless WS_CPU_WINOGRAD=0): output rows in groups of R = 2 (0: the plan has no
 * such form), 4 (stride 1) or 5 (stride 2) products of IC per pair instead of 6. */
int ws_rowconv_group_rows(const ws_rowconv *cv);

/* floats of scratch ws_rowconv_run_groups takes for ngroups groups of n_cols columns */
size_t ws_rowconv_group_scratch(const ws_rowconv *cv, int ngroups, int n_cols);

/* Output rows [0, R*ngroups) (from xp as above), columns [col0, col0 + n_cols), by minimal
 * filtering, on the calling thread; y and add indexed from the first row and column 0 as in
 * ws_rowconv_run_block. A row's bits depend on its place in its group (r = row % R), the
 * inputs and the weights, not on the other groups or the columns. */
void ws_rowconv_run_groups(const ws_rowconv *cv, const float *xp, int ngroups, int col0, int n_cols,
                           float *y, int ldy, const float *add, float *scratch);

/* Exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), as PyTorch's F.gelu default,
 * in float32: max |error| <= 1.5e-7 * max(1, |x|) against erf in double
 * (measured 1.0e-7 at x = 1.19, about one float32 ulp)
 * (tests/test_conv.c: gelu_matches_erf_on_dense_grid). */
float ws_gelu(float x);

/* The same GELU with its multiply-adds fused (fmaf), in the order the AVX-512 and AVX2
 * conv epilogues (sgemm.c) compute it lane by lane: their bits, and the same bound. */
float ws_gelu_fma(float x);

/* In place over rows [0, n_rows) of y (row stride ldy, n columns):
 * y = act(y + bias) + add (bias [n] or NULL; add [n_rows][n] or NULL). */
void ws_bias_act_rows(float *y, int n_rows, int ldy, int n, const float *bias, ws_act act,
                      const float *add);

/* Which sgemm path is in use ("whisper-stem sgemm (AVX-512)", "(AVX2+FMA)", "(C)"). */
const char *ws_blas_name(void);

#endif

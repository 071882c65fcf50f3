/* ws_conv.h - whisper-stem's conv engine: 1-D convolution, forward and backward.
 *
 * Usage (a depthwise causal conv, Mamba's, forward then backward):
 *
 *   ws_err err;
 *   ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = C, .c_out = C, .groups = C, .k = 4,
 *                     .stride = 1, .dilation = 1, .pad_l = 3, .pad_r = 0,
 *                     .x_layout = WS_NLC, .y_layout = WS_NLC, .act = WS_ACT_SILU};
 *   ws_conv *fwd = ws_conv_new(&d, w, b, 0, &err);       // w [C][1][4], b [C]; 0: all cores
 *   if (!fwd) { fprintf(stderr, "%s\n", err.msg); ... }
 *   ws_conv_args a = {.n = N, .t_in = T, .x = x, .y = y};  // x, y [N][T][C]
 *   if (ws_conv_run(fwd, &a, &err)) ...
 *   ws_conv_free(fwd);
 *
 *   d.op = WS_CONV_BWD;
 *   ws_conv *bwd = ws_conv_new(&d, w, b, 0, &err);
 *   ws_conv_args g = {.n = N, .t_in = T, .x = x, .dy = dy, .dx = dx, .dw = dw, .db = db};
 *   ws_conv_run(bwd, &g, &err);                            // dx [N][T][C], dw [C][1][4], db [C]
 *
 * Dims: N batch, C_in, C_out, G groups (Cg = C_in / G; C_out divisible by G), K taps,
 * S stride, D dilation, P_L / P_R zero padding left / right, T_in, and
 *   T_out = (T_in + P_L + P_R - D*(K-1) - 1) / S + 1     (ws_conv_out_len; 0: T_in too short)
 * x is zero outside [0, T_in). Output channel o belongs to group g = o / (C_out / G).
 *
 * Math:
 *   FWD  y[n,o,t] = act( b[o] + sum_{j<Cg} sum_{k<K} w[o,j,k] * pre(x[n, g*Cg+j, S*t + D*k - P_L]) )
 *                   + add[n,o,t]
 *   BWD  given dy (shape of y) and the same x, w, b, act, any of dx = dL/dx, dw = dL/dw,
 *        db = dL/db with L = sum(y * dy); the gradient flows through act, recomputed from
 *        x, w, b. pre must be NONE and add NULL.
 *   act, pre: NONE, RELU, GELU (exact erf form, PyTorch's default), SILU (x * sigmoid(x)).
 *   Causal (Mamba): P_L = D*(K-1), P_R = 0. Depthwise: G = C_in = C_out.
 *   Sums in float32 or better, in an order fixed by the shapes alone: the same inputs give
 *   the same bits, run after run and for any thread count.
 *
 * Layouts, with index formulas:
 *   WS_NCL  x[n][c][t] = x[(n*C + c)*T + t]   (PyTorch)
 *   WS_NLC  x[n][t][c] = x[(n*T + t)*C + c]   (time-major, channel-last)
 *   x and dx use x_layout (C = C_in, T = T_in); y, dy and add use y_layout (C_out, T_out).
 *   w is PyTorch's [C_out][Cg][K]: w[(o*Cg + j)*K + k] (GGUF ne = [K, Cg, C_out]).
 *   add: item n at add + n * add_batch_stride elements (0: one add for every n).
 *
 * Types: x, w, y, add, dy, dx are stored as WS_F32, WS_F16 or WS_BF16 (x_type, w_type,
 * y_type; dx has x_type, dy and add have y_type); b, dw and db are float32. math says how
 * products are formed on the GPU; the CPU computes every mode in float32.
 *
 * Ownership: ws_conv_new copies w and b (NULL: given per call in ws_conv_args); the caller
 * keeps every buffer it passes. Outputs are written whole: y, or each of dx, dw, db asked for.
 *
 * Errors: functions return 0 (or a plan) on success; on failure -1 (or NULL) and one line
 * in err->msg naming the field and its value ("groups 3 does not divide c_in 8"). Nothing
 * is written on failure.
 *
 * Threads: a plan is immutable after ws_conv_new; ws_conv_run may be called on one plan
 * from several threads at once with different buffers. n_threads 0 = all online CPUs.
 * Limits: t_in and T_out at most INT_MAX - 8192.
 *
 * Tested by tests/test_engine.c (every descriptor of its table against the float64
 * oracle, backward by finite differences and the adjoint identity) and
 * tests/client/client.c (a program built from include/ alone).
 */
#ifndef WS_CONV_PUBLIC_H
#define WS_CONV_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WS_ERR_DEFINED
#define WS_ERR_DEFINED
typedef struct ws_err {
    char msg[512]; /* one line, no newline; "" when unset */
} ws_err;
#endif

typedef enum { WS_CONV_FWD = 0, WS_CONV_BWD } ws_conv_op;
typedef enum { WS_NCL = 0, WS_NLC } ws_layout;
typedef enum { WS_F32 = 0, WS_F16, WS_BF16 } ws_dtype;
typedef enum { WS_MATH_F32 = 0, WS_MATH_TF32, WS_MATH_F16, WS_MATH_BF16 } ws_math;
typedef enum { WS_ACT_NONE = 0, WS_ACT_RELU, WS_ACT_GELU, WS_ACT_SILU } ws_act;

typedef struct {
    ws_conv_op op;
    int c_in, c_out, groups, k, stride, dilation, pad_l, pad_r;
    ws_layout x_layout, y_layout;
    ws_dtype x_type, w_type, y_type;
    ws_math math;
    ws_act pre, act;
} ws_conv_desc;

typedef struct {                /* one call; host pointers on the CPU */
    int n, t_in;
    const void *x, *w;          /* w NULL: the plan's own weights */
    const float *b;             /* NULL: the plan's bias, or none */
    const void *add;            /* FWD, or NULL */
    long long add_batch_stride; /* elements between batch items of add; 0 = one add for all n */
    void *y;                    /* FWD */
    const void *dy;             /* BWD */
    void *dx;                   /* BWD: NULL = not wanted */
    float *dw, *db;             /* BWD: NULL = not wanted */
} ws_conv_args;

/* 0 when the descriptor is valid, or -1 with a message naming the field. */
int ws_conv_check(const ws_conv_desc *d, ws_err *err);

/* T_out for t_in, or 0 when t_in is too short (or the descriptor invalid). */
int ws_conv_out_len(const ws_conv_desc *d, int t_in);

/* The CPU backend. w ([C_out][Cg][K] in w_type) and b may be NULL: then given per call. */
typedef struct ws_conv ws_conv;
ws_conv *ws_conv_new(const ws_conv_desc *d, const void *w, const float *b, int n_threads,
                     ws_err *err);
int ws_conv_run(ws_conv *c, const ws_conv_args *a, ws_err *err); /* 0 or -1 */
void ws_conv_free(ws_conv *c);                                   /* NULL-safe */

/* The GPU half of the engine (ws_gpu_open, ws_gpu_conv_new/run/free, ...) is not public yet:
 * the Whisper stem's GPU path is internal to whisper-stem for now. */

#ifdef __cplusplus
}
#endif

#endif

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
 * oracle, backward by finite differences and the adjoint identity),
 * tests/test_engine_states.c (packed sequences and carried state: the oracle, chunked runs
 * against whole ones bit for bit, packed against separate, refusals),
 * tests/test_gpu_conv.c (the GPU backend: PTX through ptxas, and on a GPU against the CPU
 * engine) and tests/client/client.c (a program built from include/ alone).
 */
#ifndef WS_CONV_PUBLIC_H
#define WS_CONV_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WS_API /* what the shared library exports; everything else in it is hidden */
#if defined(__GNUC__) && __GNUC__ >= 4
#define WS_API __attribute__((visibility("default")))
#else
#define WS_API
#endif
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

typedef struct {                /* one call; host pointers on the CPU, device pointers on the GPU */
    int n, t_in;
    const void *x, *w;          /* w NULL: the plan's own weights */
    const float *b;             /* NULL: the plan's bias, or none */
    const void *add;            /* FWD, or NULL */
    long long add_batch_stride; /* elements between batch items of add; 0 = one add for all n */
    void *y;                    /* FWD */
    const void *dy;             /* BWD */
    void *dx;                   /* BWD: NULL = not wanted */
    float *dw, *db;             /* BWD: NULL = not wanted */
    /* Packed sequences and carried state: depthwise causal descriptors only (groups = c_in =
     * c_out, stride 1, pad_l = dilation*(k-1), pad_r 0); NULL = not used. States are
     * [N][C][K-1] in x_type whatever x_layout is, and need dilation 1; seq_idx cannot be
     * combined with any state (a call with both is refused naming the fields). */
    const int32_t *seq_idx;     /* [N][T_in]: a tap reads only positions of its output's
                                   sequence; a negative value marks padding: its output is 0
                                   (no bias, act or add) and it feeds no tap */
    const void *initial_states; /* the K-1 inputs before t = 0 (NULL: zeros); pre applies */
    void *final_states;         /* FWD: the last K-1 inputs (initial ones where T_in < K-1) */
    void *dinitial_states;      /* BWD: dL/d initial_states (initial_states NULL: at zeros) */
} ws_conv_args;

/* 0 when the descriptor is valid, or -1 with a message naming the field. */
WS_API int ws_conv_check(const ws_conv_desc *d, ws_err *err);

/* T_out for t_in, or 0 when t_in is too short (or the descriptor invalid). */
WS_API int ws_conv_out_len(const ws_conv_desc *d, int t_in);

/* The CPU backend. w ([C_out][Cg][K] in w_type) and b may be NULL: then given per call. */
typedef struct ws_conv ws_conv;
WS_API ws_conv *ws_conv_new(const ws_conv_desc *d, const void *w, const float *b, int n_threads,
                            ws_err *err);
WS_API int ws_conv_run(ws_conv *c, const ws_conv_args *a, ws_err *err); /* 0 or -1 */
WS_API void ws_conv_free(ws_conv *c);                                   /* NULL-safe */

/* The GPU backend, through the CUDA driver API: libcuda.so.1 is opened at run time (no
 * toolkit needed), so without a driver or a device ws_gpu_open fails with a message
 * ("no CUDA driver: ...", "no CUDA device ...") and the caller can use the CPU.
 *
 *   ws_gpu *g = ws_gpu_open(0, &err);                     // NULL: see err.msg
 *   uint64_t dx, dy;                                      // device pointers
 *   ws_gpu_alloc(g, x_bytes, &dx, &err); ws_gpu_alloc(g, y_bytes, &dy, &err);
 *   ws_gpu_upload(g, dx, x, x_bytes, &err);
 *   ws_gpu_conv *c = ws_gpu_conv_new(g, &d, w, b, &err);  // emits and loads its kernel
 *   ws_conv_args a = {.n = N, .t_in = T, .x = (void *)(uintptr_t)dx, .y = (void *)(uintptr_t)dy};
 *   ws_gpu_conv_run(c, &a, &err);                         // returns when y is written
 *   ws_gpu_download(g, y, dy, y_bytes, &err);
 *   ws_gpu_conv_free(c); ws_gpu_release(g, dx); ws_gpu_release(g, dy); ws_gpu_close(g);
 *
 * Kernels (every math mode is float32 FFMA but the GEMM's TF32 / BF16 / F16):
 * - Depthwise, stride 1 (groups = C_in = C_out, x_layout = y_layout, K <= 8, D*(K-1),
 *   pad_l and pad_r <= 14;
 *   Mamba's causal conv): vector loads along the contiguous dimension. FWD: the direct
 *   kernel's sums in its order (the same values). BWD: one fused kernel reads x and dy
 *   once and writes dx (the direct kernel's values) and per-block dw / db partials, which a
 *   second kernel adds in a fixed order. A call takes them when its pointers are aligned
 *   to the vector (2 to 8 elements), add_batch_stride is a multiple of it, and for NCL
 *   T_in and T_out are too (N and C <= 65535); any other call of the plan goes direct.
 * - Dense forward (groups = 1): an implicit GEMM, y[o, (n,t)] = sum over r = (j,k) of
 *   w[o, r] * x[n, j, S*t + D*k - P_L], in tiles of 128 (or 64) output channels x 128
 *   positions through shared memory. WS_MATH_F32: float32 fma per output in an order of r
 *   fixed by the descriptor (and, for a call too small to fill the GPU, a sum in parts added
 *   in a fixed order): the direct kernel's values within float32 rounding, the same bits
 *   every run. WS_MATH_TF32, BF16 and F16:
 *   tensor cores (mma.sync m16n8k8 / m16n8k16; on compute capability 9.0 wgmma) on w and x
 *   rounded to that type (tf32: to nearest, ties away), float32 accumulation (rel L2 against float32 about 3e-4 for tf32,
 *   2e-3 for bf16). NLC x with C_in a multiple of 16 is read 16 bytes at a time (any math):
 *   such a call needs x 16-byte aligned, else it goes direct. Calls over 2^31 - 129
 *   positions or 65535 channel tiles go direct.
 * - Dense backward (groups = 1; act NONE, or float32 math: with an act, tensor-core math
 *   would round gz = dy * act'(z) to the math type, so those plans stay direct) as GEMMs.
 *   dx is a forward conv of the engine over the gradient g (dy where act is NONE, else gz
 *   below): at stride 1 the transposed conv
 *   (taps flipped, channels swapped), at stride S > 1 the S phases of dx as S * C_in output
 *   channels of one stride-1 conv, moved into dx after; that conv is a plan of its own
 *   (the Hopper GEMM, the mma GEMM or FFMA by the math), so dx has the math's rounding of
 *   g and w. On compute capability 9.0 with TF32, BF16 or F16 math, dw is a GEMM over
 *   (n, t) on the Hopper GEMM's weight-gradient kernel: the (n, t) cut into ranges whose
 *   float32 partials a second pass adds in a fixed order (no atomics: the same bits every
 *   run), g and x rounded to the math type; db sums g in float32 (a block per channel, a
 *   tree of fixed shape). Elsewhere dw and db stay direct (below). (H100, bf16, NCL: the
 *   dilated K3 D9 row 189.6 us against PyTorch + cuDNN's 254.9.)
 * - Direct, every descriptor. FWD: one thread per output element, float32 fma in the
 *   order j then k. BWD: gz = dy * act'(z) (z = b + conv recomputed from x, w, b; one
 *   thread per y element) into a float32 scratch [N][C_out][T_out] that the plan owns and
 *   grows, then as asked dx (one thread per x element, summing o then k), dw (one per w
 *   element, n then t) and db (one per output channel, n then t).
 * All sums are float32 in fixed orders, without atomics: the same inputs give the same
 * bits. Kernels need compute capability 8.0 or later.
 *
 * Weights per call (training: w changes every step): a plan made with w = NULL (and b =
 * NULL) takes a->w (device, [C_out][Cg][K] in w_type) and a->b (device float32 [C_out], or
 * NULL for no bias) at every call; a call without a->w is refused. What the kernels need
 * done to w happens on the device inside the call, on its stream: the depthwise kernels
 * read w in w_type as it is, the direct kernels and the FFMA GEMM read a float32 w as it is
 * (another type is converted into a buffer of the plan's first), the tensor-core GEMM's
 * weights are rounded and packed into a buffer of the plan's. The values are those of a
 * plan made with the same weights: the same bits. A plan made with weights uses a->w /
 * a->b where a call gives them (its buffers for that are made at the first such call).
 *
 * Streams: ws_gpu_conv_run enqueues on g's stream and waits; ws_gpu_conv_enqueue takes the
 * caller's CUstream (PyTorch's current stream, say) and returns at once. g uses the
 * device's primary context, the one PyTorch, CuPy and JAX use, so their device pointers are
 * valid arguments.
 *
 * Threads: a ws_gpu and its plans are used from one thread at a time (calls make the
 * device's primary context current on the calling thread; ws_gpu_conv_enqueue puts the
 * thread's current context back as it found it, so that a framework's current device
 * does not move). */
typedef struct ws_gpu ws_gpu;

/* Opens the driver and device number `ordinal` (0: the first that CUDA_VISIBLE_DEVICES
 * leaves): retains its primary context and creates one stream. The driver and the context
 * are the process's: opened once and shared by every ws_gpu of the device (and whisper-stem's
 * own GPU code), let go after the last ws_gpu_close. Any thread may open and close. NULL
 * with err on failure. */
WS_API ws_gpu *ws_gpu_open(int ordinal, ws_err *err);
WS_API void ws_gpu_close(ws_gpu *g); /* waits for the stream, releases the context; NULL-safe */

/* Device memory: *dptr gets the address (bytes >= 1). 0, or -1 with err (*dptr = 0). */
WS_API int ws_gpu_alloc(ws_gpu *g, size_t bytes, uint64_t *dptr, ws_err *err);
WS_API void ws_gpu_release(ws_gpu *g, uint64_t dptr); /* dptr 0: nothing */

/* Copies between host and device on g's stream; both wait until the copy is done, so the
 * host buffer may be reused on return. 0, or -1 with err. */
WS_API int ws_gpu_upload(ws_gpu *g, uint64_t dst, const void *src, size_t bytes, ws_err *err);
WS_API int ws_gpu_download(ws_gpu *g, void *dst, uint64_t src, size_t bytes, ws_err *err);

/* A GPU plan: checks d (ws_conv_check), emits its PTX for g's
 * compute capability and loads it, converts w (host, [C_out][Cg][K] in w_type) to float32
 * and uploads it with b (host, float32 [C_out], or NULL). w NULL (b NULL too): a plan
 * whose calls give w and b (device pointers, above). The plan keeps no host pointer.
 * NULL with err on failure. The plan must be freed before its ws_gpu is closed. */
typedef struct ws_gpu_conv ws_gpu_conv;
WS_API ws_gpu_conv *ws_gpu_conv_new(ws_gpu *g, const ws_conv_desc *d, const void *w, const float *b,
                                    ws_err *err);

/* Runs the plan: a holds device pointers cast as (void *)(uintptr_t)dptr (FWD x, y, add;
 * BWD x, dy and any of dx, dw, db; w and b per call, or NULL for the plan's). The call is checked as
 * ws_conv_run checks it (n, t_in, pointers, sizes); the kernels run on g's stream and the
 * call returns when they have finished. BWD writes only the outputs asked for. 0, or -1
 * with err (nothing launched when the arguments are refused). */
WS_API int ws_gpu_conv_run(ws_gpu_conv *c, const ws_conv_args *a, ws_err *err);

/* Enqueues the call on `stream` (a CUstream as an integer, e.g. PyTorch's
 * torch.cuda.current_stream().cuda_stream; 0: g's own stream) and returns without waiting:
 * the arguments are checked on the host as ws_gpu_conv_run checks them, nothing is
 * launched when they are refused. No device allocation once the plan has served the
 * largest call it must (a BWD plan grows its scratch to the largest n * t_in seen, the dense
 * backward's staged operands, partials and transformed weights among it; so does a
 * dense FWD plan on the Hopper GEMM whose x is staged: NCL, another type than the math,
 * a pre-activation, TF32 math, or x off 16-byte alignment; NCL x of a 16-bit math type read
 * in place, where the taps and the call allow it, stages nothing, so a later call of the
 * same plan that is staged may still grow the scratch), so a call can be captured in a
 * CUDA graph after one like it has run. A plan's scratch is its
 * own: calls of one plan on different streams must be ordered by the caller (one plan per
 * stream otherwise). 0, or -1 with err. */
WS_API int ws_gpu_conv_enqueue(ws_gpu_conv *c, const ws_conv_args *a, uint64_t stream,
                               ws_err *err);
WS_API void ws_gpu_conv_free(ws_gpu_conv *c); /* NULL-safe */

/* A pair of forward convs as one block: h = conv1(x) (d1), y = conv2(h) + add (d2), h never
 * handed to the caller. The ResConv1D block of VQ-VAE decoders (Jukebox, DAC, EnCodec),
 * y = x + conv_k1(relu(conv_k3_dil(relu(x)))), is d1 = K3 with dilation, pre and act RELU,
 * d2 = K1 with no activation, and add = x:
 *
 *   ws_conv_desc d1 = {.op = WS_CONV_FWD, .c_in = C, .c_out = C, .groups = 1, .k = 3,
 *                      .stride = 1, .dilation = 9, .pad_l = 9, .pad_r = 9, .pre = WS_ACT_RELU,
 *                      .act = WS_ACT_RELU, ...};
 *   ws_conv_desc d2 = d1; d2.k = 1; d2.dilation = 1; d2.pad_l = d2.pad_r = 0;
 *   d2.pre = d2.act = WS_ACT_NONE;
 *   ws_gpu_conv_pair *p = ws_gpu_conv_pair_new(g, &d1, w1, b1, &d2, w2, b2, &err);
 *   ws_conv_pair_args a = {.n = N, .t_in = T, .x = x, .add = x, .add_batch_stride = C * T, .y = y};
 *   ws_gpu_conv_pair_run(p, &a, &err);
 *
 * The pair (ws_conv_pair_check): both FWD and valid, d2.c_in = d1.c_out, d2.x_layout =
 * d1.y_layout and d2.x_type = d1.y_type (h is stored, where it is stored, in d1's y_type and
 * layout). The values are the two calls' (conv1 into h, conv2 over h with add): on the CPU
 * exactly those calls; on the GPU, where the pair fits one kernel (compute capability 9.0,
 * BF16 or F16 math in both, d1 dense at stride 1 with C_in % 16 == 0, d1.c_out a multiple
 * of 64 up to 512, d2 dense K 1 S 1 D 1 without padding, d2.c_out a multiple of 16 from 32 to
 * 512, d1.y_type float32 or the math type), h stays in shared memory, rounded to the math type
 * where the two calls round it: the same values but for the order of the float32 sums.
 * Other pairs, and calls whose y overlaps x or whose NLC x is not 16-byte aligned, run as the
 * two calls over a device buffer of the plan's.
 * The arguments: x (d1's layout and type), add and y (d2's), w1 / w2 and b1 / b2 per call as
 * ws_conv_args's w and b for each conv (NULL: the plan's; a conv made without weights needs
 * them every call), add NULL for none. */
typedef struct {
    int n, t_in;
    const void *x;
    const void *w1, *w2;
    const float *b1, *b2;
    const void *add;
    long long add_batch_stride;
    void *y;
} ws_conv_pair_args;

/* 0 when d1 then d2 make a pair (above), or -1 naming the field */
WS_API int ws_conv_pair_check(const ws_conv_desc *d1, const ws_conv_desc *d2, ws_err *err);

/* The CPU pair: the two plans (ws_conv_new with n_threads) and a buffer for h per call */
typedef struct ws_conv_pair ws_conv_pair;
WS_API ws_conv_pair *ws_conv_pair_new(const ws_conv_desc *d1, const void *w1, const float *b1,
                                      const ws_conv_desc *d2, const void *w2, const float *b2,
                                      int n_threads, ws_err *err);
WS_API int ws_conv_pair_run(ws_conv_pair *p, const ws_conv_pair_args *a, ws_err *err);
WS_API void ws_conv_pair_free(ws_conv_pair *p); /* NULL-safe */

/* The GPU pair: run waits for the result, enqueue takes the caller's stream (as
 * ws_gpu_conv_run / ws_gpu_conv_enqueue). 0, or -1 with err (nothing launched). */
typedef struct ws_gpu_conv_pair ws_gpu_conv_pair;
WS_API ws_gpu_conv_pair *ws_gpu_conv_pair_new(ws_gpu *g, const ws_conv_desc *d1, const void *w1,
                                              const float *b1, const ws_conv_desc *d2,
                                              const void *w2, const float *b2, ws_err *err);
WS_API int ws_gpu_conv_pair_run(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, ws_err *err);
WS_API int ws_gpu_conv_pair_enqueue(ws_gpu_conv_pair *p, const ws_conv_pair_args *a,
                                    uint64_t stream, ws_err *err);
WS_API void ws_gpu_conv_pair_free(ws_gpu_conv_pair *p); /* NULL-safe */

/* Writes the PTX that a plan of d would load on a device of compute capability
 * cc_major.cc_minor to dir/<module name>.ptx: the direct module (FWD: the kernel's name;
 * BWD: one module holding the four backward entries) and, where d has them, the depthwise
 * ("ws_dw_...") or the dense forward ("ws_gemm_...") module, on 9.0 the Hopper GEMM's
 * ("ws_hgemm_...") where it takes d, for a dense BWD d the backward's passes ("ws_gbwd_..."),
 * on 9.0 its weight-gradient kernel ("ws_hgemm_wg_...") and the modules of dx's conv, and for
 * a depthwise causal d the module of calls with seq_idx or states ("ws_dws_..."); needs no
 * GPU. 0, or -1 with err. */
WS_API int ws_conv_dump_ptx(const ws_conv_desc *d, int cc_major, int cc_minor, const char *dir,
                            ws_err *err);

#ifdef __cplusplus
}
#endif

#endif

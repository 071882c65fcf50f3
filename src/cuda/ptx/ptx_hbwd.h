/* ptx_hbwd.h - the dense backward as GEMMs: dx as a forward conv of the engine over the
 * gradient, dw and db on the Hopper GEMM's weight-gradient kernel (ptx_hgemm.h; tensor-core
 * math) or the module's own FFMA kernel (float32 math), and the passes around them, as PTX
 * text.
 *
 * THE GRADIENT g: dy where act is NONE (y_layout, y_type), else the direct kernels' gz, float32
 * NCL [N][C_out][T_out] (ptx_direct.h: gz = dy * act'(z)). A plan uses these passes where
 * ws_gbwd_used: with an act and tensor-core math the GEMMs would read gz rounded to the math
 * type (2^-9 of each term in bf16, over whisper_stem.torch's bounds against float64 on
 * dense GELU / ReLU / SiLU rows), so such plans keep the direct kernels.
 *
 * dx IS A FORWARD CONV OVER g (u + P_L = S*t + D*k, u = S*q + r):
 *   S = 1: dx[n, c, u] = sum_o sum_k' W'[c, o, k'] g[n, o, u - (D*(K-1) - P_L) + D*k'],
 *          W'[c, o, k'] = w[o, c, K-1-k']: a conv C_out -> C_in, K taps, dilation D, padding
 *          D*(K-1) - P_L / D*(K-1) - P_R (both >= 0), which writes dx in x_layout and x_type.
 *   S > 1: the S phases r of dx are S*C_in output channels of one stride-1 conv over g:
 *          X'[n, q, r*C_in + c] = dx[n, c, S*q + r] = sum_o sum_m W'[r*C_in + c, o, m - m0]
 *          g[n, o, q + m], m0 <= m <= m1 over the (r, k) with D*k = r + P_L - S*m, and
 *          W'[r*C_in + c, o, m - m0] = w[o, c, (r + P_L - S*m) / D] where that is a tap, else 0:
 *          K' = m1 - m0 + 1 taps, padding -m0 left and enough right for ceil(T_in / S) rows,
 *          written NLC in x_type into the plan's scratch, then moved into dx (x_layout) by
 *          the "_u" entry (skipped where x is NLC and S divides T_in: X' is then dx itself;
 *          and where x is NCL and the conv takes the Hopper GEMM: its phased form,
 *          ptx_hgemm.h, writes X' straight into NCL dx, with only each phase's taps
 *          (ws_gbwd_dx_taps) where C_in % 128 == 0).
 *   The conv is an engine plan of its own (w float32 given per call, so it rounds and packs
 *   W' as any plan does): the Hopper GEMM, the mma GEMM or FFMA by its descriptor, so dx
 *   has the forward's speed and the math's rounding of g and w.
 *
 * dw AND db (ptx_hgemm.h's weight-gradient kernel; math TF32, BF16, F16 on 9.0):
 *   dw[o, j, k] = sum_n sum_t g[n, o, t] x[n, j, S*t + D*k - P_L]: for each tap k a GEMM
 *   C_out x C_in over the (n, t). Its operands time-major in rows of the math type:
 *     G[n][o][pitch]        g rounded ("_g"; g itself where it is NCL in the math type and
 *                           its rows are 16-byte multiples)
 *     Xs[n][c][j][pitch]    x by class ("_x"): tap k has D*k - P_L = S*q + r (0 <= r < S)
 *                           and q = A*e + m (A = 16 bytes of the math type, 0 <= m < A);
 *                           its class c is its (r, m) (ws_gbwd_cls, in the order the taps
 *                           first have them) and Xs[n, c, j, q'] = x[n, j, S*(q' - A + m) + r]
 *                           rounded, zero outside [0, T_in), q' < pitch
 *   so that tap k reads class c at q' = t + off[k], off[k] = q - m + A, a box of the tensor
 *   copy engine whose first time is a multiple of 16 bytes (the engine faults on others;
 *   the + A keeps q' >= 0 wherever x is). The (n, t) are cut into `splits` ranges; each writes its
 *   float32 partial part[s][k][o][j], and "_f" adds them in order s = 0, 1, ...:
 *   dw[o, j, k] = part[0][k][o][j] + part[1][k][o][j] + ... (the same bits every run).
 *   FLOAT32 MATH, AND TENSOR-CORE MATH BELOW 9.0 (ws_gbwd_ffma_dw_cc): dw on the FFMA kernel
 *   "_m" over time-major operands of another form, rows of channels:
 *     A[n][t][o]  (pitch ap)  dy itself where act is NONE, y is NLC float32, C_out % 4 == 0
 *                             and dy is 16-byte aligned; else g staged by "_g" (ap =
 *                             C_out rounded up to 4, zeros past C_out)
 *     B[n][u][j]  (pitch bp)  x itself where x is NLC float32, C_in % 4 == 0 and 16-byte
 *                             aligned; else x staged by "_x" (bp = C_in rounded up to 4)
 *   so that tap k reads row u = S*t + D*k - P_L of B for row t of A, with no classes: a
 *   block is a tile of WS_GBWD_FWG_BM o x WS_GBWD_FWG_BN j of one tap, a stage WS_GBWD_FWG_BK
 *   times of both (cp.async, 16 bytes a copy; a copy whose time is >= T_out, whose u is
 *   outside [0, T_in) or whose column is past the pitch is zeros), WS_GBWD_FWG_STAGES stages
 *   in a ring, a thread 8 o x 8 j in float32 FMAs in the order of (n, t). Its splits
 *   and their partials are the ones above: part[s][k][o][j], "_f" adds them in order.
 *   db[o] = sum of g[n, o, t] in float32: "_b", a block per o, thread i summing the
 *   elements e = i, i + 256, ... (e = n*T_out + t) of g as given (not rounded), then a tree
 *   of fixed shape.
 *
 * MODULE "ws_gbwd_..." (any compute capability from 8.0), entries name + suffix:
 *   _t  wT[c*K + k][o] = w[o][c][k] from the call's float32 w (WS_PARAMS_GBS: p_src w,
 *       p_dst wT, p_t = p_pitch = C_out): the transposing tile below, w read as NLC over
 *       C_out times, grid (ceil(C_out / 32), ceil(C_in*K / 32), 1)
 *   _w  W' float32 [oc][o][m] from wT, _p W' packed as the conv's GEMM reads it
 *       (ws_gemm_pack_weights: rounded to the math type, k-major or not as the conv's
 *       descriptor says; or the FFMA kernel's float32 [r][oc]; only where that conv's GEMM
 *       packs, ws_gemm_packs) (WS_PARAMS_WPREP: p_w wT,
 *       p_out, p_n = elements of W'), a thread an element, o fastest; the plan of the conv
 *       is handed W' as its own weights for the call (packed where ws_gpu_conv_kernel says
 *       the call takes a GEMM, else float32)
 *   _u  dx from X' (S > 1; WS_PARAMS_GBS): NLC dx item by item (p_t T_in, p_pitch rows of X'
 *       an item times S; grid (ceil(T_in*C_in / 256), 1, N)), NCL dx the transposing tile
 *       over X' read as NLC (p_t rows*S, p_pitch T_in; grid (ceil(T_in / 32), ceil(C_in / 32),
 *       N))
 *   _g  G from g, _x Xs from x (WS_PARAMS_GBS: p_src, p_dst, p_t the source's T, p_pitch);
 *       in float32 math A from g and B from x, dst[n][t][c] (row pitch p_pitch) = src[n, c,
 *       t] through 32 x 32 tiles, grid (ceil(T / 32), ceil(pitch / 32), N)
 *   _m  float32 math: dw's partials (WS_PARAMS_FWG: p_a A, p_b B, p_part; p_n, p_t_out,
 *       p_t_in, p_ap, p_bp, p_kts stages a split), grid (ceil(C_out / BM) * ceil(C_in / BN)
 *       * K, splits): ctaid.x = (k*ceil(C_in / BN) + j0 / BN)*ceil(C_out / BM) + o0 / BM
 *   tensor-core math, _g and _x: from an NCL source (time-major already; for x at stride
 *       <= 2: ws_gbwd_g_rows, ws_gbwd_x_rows) a row gather, a thread the 16 bytes of dst's
 *       consecutive q (V = 8 of 16-bit, 4 of TF32), V loads and one vector store, thread i of
 *       item ctaid.z taking row i / nv (= j*classes + c) and vector i % nv, nv = pitch / V,
 *       grid (ceil(rows * classes * nv / 256), 1, N); else the transposing tile, a block 32
 *       times x 32 rows of one class through shared memory, reads along the source's
 *       contiguous axis and writes along time; grid (ceil(pitch / 32), ceil(rows / 32) *
 *       classes, N). Either way the classes of one row are neighbours in launch order.
 *       (H100, bf16, us: wav2vec2's x 394 -> 251 and dy 122 -> 89 by rows; DAC's x at stride
 *       8 142 by tiles, 232 by rows)
 *   _f  dw from the partials (WS_PARAMS_GBF: p_part, p_dw, p_splits): a block WS_GBWD_FIN_PAIRS
 *       consecutive (o, j) and their K taps, summed along j into shared memory, then written
 *       in dw's order
 *   _b  db (WS_PARAMS_BWD_DB: p_gz = g, p_db, p_n, p_t_out), C_out blocks, 8 loads in flight
 *       a thread
 * Blocks of WS_GBWD_THREADS.
 *
 * SPEED (H100, bench-conv_gpu, us per call; PyTorch 2.11 + cuDNN 9.19 autograd in the same
 *   call, 2026-11-27 17:30 UTC, bench/RESULTS-gpu.md): bf16 NCL, the dilated K3 D9 row 146
 *   (228-439 between calls), DAC's downsampler 848 (868), a wav2vec2 512 -> 512 K3 S2 layer
 *   1622 (1515-1628); NLC 210 (320), 906 (1223), 2261 (3163); float32 (dw on _m, cuDNN
 *   without TF32) NCL 665 (995), 6802 (7119), 11835 (13175). In bf16 NCL the time of
 *   wav2vec2's and DAC's goes to dx's conv over zero taps (DAC: K' = 3 where each phase has 2),
 *   to moving X' into NCL dx (_u, 260 us of wav2vec2's) and to the staging passes (x by
 *   class 250, dy to G 89, dy to NLC for dx's conv 94).
 */
#ifndef WS_CUDA_PTX_HBWD_H
#define WS_CUDA_PTX_HBWD_H

#include "common.h"
#include "ws_conv.h"

#define WS_GBWD 1 /* 0: the dense backward stays on the direct kernels */
#define WS_GBWD_THREADS 256
#define WS_GBWD_FIN_PAIRS 64 /* (o, j) pairs a block of _f finishes */
#define WS_GBWD_NAME_MAX 160
#define WS_GBWD_KMAX 64 /* the most taps the weight gradient takes */
/* the float32 weight gradient's tile: o, j, times a stage, stages (48 KiB of shared memory) */
#define WS_GBWD_FWG_BM 128
#define WS_GBWD_FWG_BN 128
#define WS_GBWD_FWG_BK 16
#define WS_GBWD_FWG_STAGES 3

/* the classes of Xs: tap k reads class cls[k] at q' = t + off[k]; class i is phase r[i],
 * shift m[i]; n classes; align = A, the elements of 16 bytes */
typedef struct {
    int n, align;
    int cls[WS_GBWD_KMAX], off[WS_GBWD_KMAX], r[WS_GBWD_KMAX], m[WS_GBWD_KMAX];
} ws_gbwd_cls;

/* dx as a forward conv: the descriptor of the conv over g (sub), its phases S (sub->c_out =
 * S * C_in) and m0; 1 when d (a dense BWD) has one: groups 1, for S = 1 pads at most
 * D*(K-1), for S > 1 at most 4*ceil(K / S) + 2 taps; else 0 */
typedef struct {
    ws_conv_desc sub;
    int phases, m0;
} ws_gbwd_dx;
int ws_gbwd_dx_of(const ws_conv_desc *d, ws_gbwd_dx *out);
/* the taps of dx's conv each phase r reads (x from ws_gbwd_dx_of(d), phases > 1): lo[r]..hi[r]
 * over the sub's K' taps, W'[r*C_in + c, o, i] = 0 for i outside (a phase with no tap gets
 * 0..0: its rows are zeros); lo and hi hold x->phases entries */
void ws_gbwd_dx_taps(const ws_conv_desc *d, const ws_gbwd_dx *x, int *lo, int *hi);

/* 1 when a plan of d uses the GEMM backward at all: a dense BWD (groups 1, pre NONE) whose
 * act is NONE or whose math is float32. With an act and tensor-core math, gz = dy * act'(z)
 * would be rounded to the math type before the GEMMs, where PyTorch's float32 reference (and
 * whisper_stem.torch's bounds) keep it: such plans stay on the direct kernels */
int ws_gbwd_used(const ws_conv_desc *d);

/* 1 when the module has dw's passes (_g, _x, _f, _b; and _m, ws_gbwd_ffma_dw_cc) for d: a
 * dense BWD with K <= WS_GBWD_KMAX, C_in*K and C_out <= 65535 */
int ws_gbwd_has_dw(const ws_conv_desc *d);

/* 1 when dw runs on the module's own FFMA kernel (_m): ws_gbwd_has_dw in float32 math */
int ws_gbwd_ffma_dw(const ws_conv_desc *d);

/* the same for a module emitted for compute capability cc: also tensor-core math where the
 * Hopper weight gradient does not run (below 9.0), whose dw is then the FFMA kernel's over the
 * operands as given (float32 products, no rounding to the math type: within its bounds) */
int ws_gbwd_ffma_dw_cc(const ws_conv_desc *d, int cc_major, int cc_minor);

/* tensor-core math: 1 when _g (g NCL) / _x (x NCL at stride <= 2) is the row gather, else
 * the transposing tile (ptx_hbwd.h) */
int ws_gbwd_g_rows(const ws_conv_desc *d);
int ws_gbwd_x_rows(const ws_conv_desc *d);

/* rows of X' an item (T_out of the conv over g) for T_in; and ceil(T_in / S) */
int ws_gbwd_dx_rows(const ws_gbwd_dx *x, int t_out, int t_in);

/* the type G and Xs hold: the math type, TF32 kept in float32 */
ws_dtype ws_gbwd_math_type(const ws_conv_desc *d);

/* "ws_gbwd_" and the fields that shape the code */
void ws_gbwd_name(const ws_conv_desc *d, char name[WS_GBWD_NAME_MAX]);

/* The module above for a dense BWD descriptor, for compute capability cc; malloc'd text or
 * NULL with err. dw's entries (_g, _x, _f, _b) are there where ws_gbwd_has_dw, with _m where
 * ws_gbwd_ffma_dw_cc (float32 math, or below 9.0); else the Hopper weight gradient (9.0)
 * reads G and Xs. */
char *ws_gbwd_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err);

#endif

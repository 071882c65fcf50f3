/* ptx_hpair.h - a pair of dense forward convs as one Hopper kernel (sm_90a): the first
 * conv's output h stays in shared memory and feeds the second, a pointwise (K 1) conv. The
 * ResConv1D block of VQ-VAE decoders (Jukebox, DAC, EnCodec) is such a pair:
 *   y = x + conv_k1(relu(conv_k3_dil(relu(x))))
 * d1 = K3 D9 with pre RELU and act RELU, d2 = K1 with the block's input as add.
 *
 * THE MATH (ws_conv.h's FWD, twice): h[p, m] = pre2(act1(b1[m] + sum_k sum_j W1[m, k, j] *
 *   pre1(x[n, t + D*k - P_L, j]))) rounded to the math type (bf16 / f16), p = (n, t);
 *   y[p, o] = act2(b2[o] + sum_m W2[o, m] * h[p, m]) + add[p, o]. h is what the two-call
 *   chain stores (d1.y_type float32 or the math type) and the second call rounds; only the
 *   order of the float32 sums differs from the chain's.
 *
 * TILES: a block owns 64 positions, all C_mid = d1.c_out channels of h and all C_out =
 *   d2.c_out channels of y: NB = 64 / TB items n0.. times TB consecutive outputs t0.. (TB =
 *   2^lgtb, chosen per call: the smallest power of two >= T_out, at least the plan's tbmin,
 *   at most 64). ctaid.x = (n0 / NB) * ntt + t0 / TB. Variants (ws_hpair_emit's cl, bk): with
 *   cl 2, two blocks form a cluster and each loads half of every weight tile and multicasts
 *   it to both (cp.async.bulk.tensor ... .multicast::cluster), so the weights cross L2 once
 *   for 128 positions; the grid is rounded up to whole clusters, and a block past the last
 *   item computes and stores nothing but still loads its half. The default, cl 1 and bk 64
 *   (WS_HPAIR_CL, WS_HPAIR_BK), was the fastest on the H100 (bench/RESULTS-gpu.md).
 * THREADS (384): warpgroup 0 produces (setmaxnreg 72): thread 0 issues the weight copies,
 *   warps 1-3 stage x; warpgroups 1 and 2 consume (setmaxnreg 216): consumer g owns
 *   channels g*C/2 .. of each GEMM (wgmma m64nNk16, N = C/2, A = 64 positions from
 *   registers, B = the weight rows from shared memory, N/2 float32 accumulators a thread).
 * GEMM 1 walks KT1 = ceil(C_in / 64) * K * (64 / bk) stages (chunk of 64 input channels, tap,
 *   half where bk is 32), GEMM 2 KT2 = C_mid / bk; weight stages of bk channels, rows of 2*bk
 *   bytes with that swizzle (the tensor map (C_in, K, C_mid) box (bk, 1, rows), zeros past
 *   C_in), in wst slots of max(C_mid, C_out) rows (bk 64: 2, bk 32: 4). GEMM 1 also uses h's
 *   region, free until its epilogue, as more slots (ws1 in all: bk 64 at C 512, 3): stage it
 *   of GEMM 1 in slot it % ws1, use it / ws1; stage j of GEMM 2 in slot j % wst. A slot's full
 *   barrier takes the producer's arrival with the slot's bytes (both halves); its empty
 *   barrier 8 * cl consumer warps' releases, plain arrivals on its own block's and (cl 2) the
 *   peer's: a release at cluster scope is a memory barrier of the whole GPU at every stage.
 * X: warps 1-3 write chunk c (input channels 64c..) of the block's items into a ring of
 *   WS_HPAIR_XST chunks: rows r = nb * RX + i, RX = TB + D*(K-1), input time t0 - P_L + i
 *   of item n0 + nb, 64 channels in the math type, pre1 applied in float32, zeros outside
 *   [0, T_in), past N and past C_in; 16-byte chunk q of row r at q ^ (r % 8). NLC x is read
 *   16 bytes (8 channels) at a time, 4 rows in flight; NCL x 16 bytes (8 times) at a time
 *   where T_in % 8 == 0 and x is 16-byte aligned, else a time at a time, 8 loads in flight.
 *   Tap k of position p = (nb, t) reads row nb * RX + t + D*k: the taps are row offsets, so x
 *   is read from memory once (NCL and NLC alike, no staging kernel). A consumer lane's A
 *   fragment is ldmatrix.x4 of its rows (16-byte aligned; any offset), double-buffered
 *   across stages. A chunk is released once its last stage's fragments are in registers.
 * H: after both consumers' GEMM 1 (their last slots are in h's region), the GEMM 1 epilogue
 *   writes h (bias, act1, pre2, rounded) as C_mid / 64 tiles of 64 rows x 128 bytes, swizzled
 *   alike; GEMM 2 reads its A fragments from there by ldmatrix.
 * EPILOGUE 2: the accumulators go to Ys[C_out][65] float32 (NCL y: Ys[C_out][68], 16-byte
 *   aligned rows, the stores still on 32 banks) over the weight ring and h (both drained),
 *   then each element + b2, act2, + add, stored in y_type (ptx_epi.h): NCL in vectors of 4
 *   positions where C_out % 64 == 0 and, per call, T_out % 4 == 0 and y and the add are
 *   aligned to 4 elements (a thread positions 4(c % 16).., channels c/16 + 16m: one 16-byte Ys
 *   read, one vector add read and one vector store each; H200, the block in NCL 54.6-54.8 ->
 *   51.2-52.4 us, 2026-11-28), else by position (a thread a position, channels c/64 + 4m, up
 *   to 32 add reads in flight); NLC where C_out % 4 == 0 position-major, Ys[64][C_out + 4]
 *   (the accumulators stored in pairs), in vectors of 4 channels where y and the add are
 *   aligned (vector k = c + 256j: position k / (C_out/4), channels 4(k % (C_out/4)).., one
 *   16-byte read of Ys and of Bs, one vector add read and one vector store; H200, the block in
 *   NLC 52.7 -> 45.0-46.5 us, 2026-11-28), else by channel, element by element (and by quarter
 *   or half of the positions where C_out <= 128).
 * Speed (H100, bf16, the ResConv1D block N256 C512 T32 with its residual, us per call,
 *   2026-11-27 20:46 UTC): NCL 54.0-54.6, NLC 52.7-53.3, against 62.4-62.8 / 57.5-59.3 as
 *   two calls and 139 / 192 at best for PyTorch + cuDNN; tensor pipe 38 %. Each block's chain of 32 weight stages (2
 *   MB) bounds it: at half the batch it takes the same time.
 * A call where x is not 16-byte aligned (NLC) or the grid or the coordinates do not fit runs
 * as the two-call chain. Parameters WS_PARAMS_HPAIR. Tested by tests/test_gpu_pair.c.
 */
#ifndef WS_CUDA_PTX_HPAIR_H
#define WS_CUDA_PTX_HPAIR_H

#include "common.h"
#include "ws_conv.h"

#define WS_HPAIR_P 64 /* positions a block */
/* the fewest channels of h for which a call runs fused by default: H100, bf16, the ResConv1D
 * block at C 512 fused 54.0-54.6 / 52.7-53.3 us NCL / NLC against 62.4-62.8 / 57.5-59.3 as two
 * calls; at Jukebox's C 64 (wgmma n32, 4 stages a block) 368.5 / 482.4 against 452.1 / 312.2 */
#define WS_HPAIR_MIN_MID 256
#define WS_HPAIR_CL 1 /* the default cluster (bench/RESULTS-gpu.md: 2 was slower) */
#define WS_HPAIR_BK 64 /* the default channels of a weight stage (32: 4 slots; 64: 2 slots) */
#define WS_HPAIR_XST 2
#define WS_HPAIR_THREADS 384
#define WS_HPAIR_PREG 72
#define WS_HPAIR_CREG 216
#define WS_HPAIR_SMEM_MAX 232448 /* 227 KiB: an SM's most dynamic shared memory for a block */
#define WS_HPAIR_NAME_MAX 224
#define WS_HPAIR_YS_ROW 65
#define WS_HPAIR_YS_ROW_NCL 68

/* a pair's layout: bytes from the 1024-aligned base: the weight ring, the x ring, h, the
 * mbarriers; tbmin the smallest TB whose x chunk fits; xr the chunk's rows at tbmin */
typedef struct {
    int m1, m2, n1, n2; /* C_mid, C_out; each consumer's wgmma N */
    int halo, tbmin, xr;
    int wsb, xcb, xoff, hoff, boff, smem;
    int nc1, kt1, kt2;
    int cl; /* blocks a cluster: 2 (the weights multicast) or 1 */
    int bk, wst; /* channels of a weight stage (32 or 64: rows of 64 / 128 bytes, that swizzle), slots */
    int ws1;     /* GEMM 1's slots: wst and h's region, free until GEMM 1's epilogue */
} ws_hpair_geom;

/* 1 when the pair (d1 then d2) runs as one kernel on compute capability cc (9.0 alone) */
int ws_hpair_fits(const ws_conv_desc *d1, const ws_conv_desc *d2, int cc_major, int cc_minor);
/* the pair's layout, cluster cl, weight stages of bk channels; 0, or -1 when it does not fit */
int ws_hpair_geom_of(const ws_conv_desc *d1, const ws_conv_desc *d2, int cl, int bk, ws_hpair_geom *q);
/* log2 TB for a call of T_out outputs */
int ws_hpair_lgtb(const ws_hpair_geom *q, int t_out);
void ws_hpair_name(const ws_conv_desc *d1, const ws_conv_desc *d2, int cl, int bk, char name[WS_HPAIR_NAME_MAX]);
/* the module (one entry, the name above); NULL with err */
char *ws_hpair_emit(const ws_conv_desc *d1, const ws_conv_desc *d2, int cl, int bk, ws_err *err);

#endif

/* ptx_hgemm.h - the conv engine's Hopper implicit GEMM (sm_90a) for dense forward
 * convolutions with 16-bit math: both operands brought into shared memory by the tensor
 * copy engine (cp.async.bulk.tensor), products on wgmma, one producer thread feeding two
 * consumer warpgroups (one on the narrow tile) through a ring of stages guarded by mbarriers.
 *
 * THE GEMM VIEW (as ptx_gemm.h, r = k*C_in + j): y[o, (n, t)] = act(b[o] +
 *   sum_k sum_j W[o, k, j] * X[n, S*t + D*k - P_L, j]) + add[n, o, t], X zero outside
 *   [0, T_in). X is read time-major (NLC) in the math type: x itself where it already is
 *   that (NLC, x_type the math type, pre NONE, 16-byte aligned), else the staging kernel
 *   "<name>_prep" writes it first (pre applied in float32, rounded to nearest even) into
 *   the plan's scratch, [N][T_in][C_in]; a block of it takes 32 times x 64 channels through
 *   shared memory (reads along x's contiguous axis, 16-byte writes); "<name>_prep8" does the
 *   same 16 bytes at a time where it can (ws_hgemm_prep8_call). The "_mn" entry reads NCL x
 *   in place instead (CHANNEL-FIRST X below: its own copies and B descriptors; the rest of
 *   this text holds for it too).
 *   W is ws_gemm_mma_weights' k-major [C_out][K][C_in] (so C_in % 16 == 0 and
 *   ws_gemm_mma_kmajor hold), rounded to the math type. Forward plans of other C_in run this
 *   kernel over their columns or their channels padded where ws_hcol_fits (ptx_hcol.h: 9.0,
 *   C_out >= 32, stride <= 8, padded only on ws_hgemm_fits' terms; never the dense backward's
 *   dx conv, whose weights come from its BWD plan); the others stay on the mma.sync GEMM.
 *
 * TILES: a block computes BM output channels o0.. (128; 64 on the narrow tile) x BN
 *   positions: NB = BN / TB items
 *   n0.. times TB consecutive outputs t0.. (TB = 2^lgtb, 8..BN, chosen per call by
 *   ws_hgemm_lgtb: the smallest power of two >= T_out, at most BN and at most 256 / S).
 *   Three tiles (ws_hgemm_cfg_of), by the sum's stages KT below and C_out:
 *     large (KT > WS_HGEMM_SMALL_KT): BN = 256, 4 stages of 48 KiB, one block an SM;
 *     small (KT <= WS_HGEMM_SMALL_KT): BN = 128, 3 stages of 32 KiB, 288 threads, two blocks
 *       an SM, so that one block's epilogue runs beside the other's products. H100, bf16, us
 *       per call, small / large: the tiny stem's conv1 (KT 6, bias + exact GELU) 283 / 339,
 *       its conv2 (KT 18) 326 / 347; large-v3's conv1 (KT 6) 857 / 1042; the ResConv1D
 *       block's K1 conv (KT 8) 30.8 / 33.7; wav2vec2's K2 S2 convs (KT 16) 39.3 / 46.4 and
 *       26.7 / 34.5; its K3 S2 convs and the dilated K3 D9 conv (KT 24) within 3 % either
 *       way; large-v3's conv2 (KT 60) 2194 / 1862, the tiny stem's conv2 in TF32 (KT 36)
 *       610 / 598, DAC's K16 (KT 128) 241 / 219: the large tile from 25 stages on.
 *     narrow (the small tile's sums with C_out <= 64): BM = 64 rows x BN = 128, 3 stages of
 *       24 KiB, 160 threads (one consumer warpgroup, one producer warp), three blocks an SM.
 *       On the 128-row tile such a call left half the rows, half of A's copies and one of the
 *       two consumers idle, two blocks an SM, and its blocks waited on their copies (ncu,
 *       Jukebox bf16 NLC: the tensor pipe 18 %, DRAM 32 %, most stalls on the long
 *       scoreboard). H200, us per call, 128-row / narrow, same call: Jukebox's K3 D27 C64
 *       bf16 NLC 80.8-80.9 / 55.4-57.2, NCL (with the "_prep8" staging) 118.8-120.5 /
 *       94.8-96.0, tf32 NLC 221.8-223.3 / 184.0-184.7.
 *   Tile i = ((n0 / NB) * ntt + t0 / TB) * rows + o0 / BM, ntt = ceil(T_out / TB), rows =
 *   ceil(C_out / BM), of ntiles = ceil(N / NB) * ntt * rows: the row tiles of one position
 *   tile are neighbours in launch order, so they run together and its x comes from memory
 *   once (H100, wav2vec2's 512 -> 512 K3 S2 over 8 x 31999, x 262 MB: 865 -> 645 us).
 *   The small and large tiles run a block a tile, tile ctaid.x.
 * THE TILE LOOP (the narrow tile, cfg.loop): the grid is at most the blocks that fit the GPU
 *   at once (SMs x 3; ws_gpu_conv_hgemm_blocks caps it for tests and benchmarks), and a block
 *   runs tile ctaid.x, then the tiles it asks for: G + p_ctr[0]++ (G = nctaid.x, an integer
 *   atomic on the plan's counter p_ctr, asked for at a tile's start and read after its
 *   stages), while below ntiles. So tiles start in order, as the hardware would start blocks,
 *   and a block's next tile is loaded while it finishes the last. A call's counter takes
 *   ntiles increments in all (the ntiles - G tiles asked for, and each block's last ask, past
 *   the end); the block whose ask read ntiles - 1 sets it back to 0, so no call clears it
 *   (the CUDA-graph contract). A tile's sums are the same whichever block runs it: the same
 *   bits on any grid.
 *   The producer hands each tile to the consumers through a queue of WS_HGEMM_TQ slots in
 *   shared memory (tile j in slot j % TQ, tfull[j % TQ] arrived on by the producer, tempty
 *   released by every consumer once it has read the tile again after its products); every
 *   tile's ring starts at stage 0 (slot s's k-th use waits the phase of parity k: bit s of a
 *   mask each side keeps). The epilogue's Ys lies past stage 0 (EPILOGUE): while it runs, the
 *   producer loads the next tile's stage 0, and waits the mbarrier epi (every consumer arrives
 *   once done with Ys, after fence.proxy.async) before it loads a stage past slot 0. H200,
 *   bf16, us per call, a block a tile / the loop, alternated in one call: Jukebox's C64 K3 D27
 *   conv NLC 54.5-55.8 / 46.3-49.2, NCL 93.7-96.0 / 83.7-85.9, tf32 NLC 180.7-183.0 /
 *   174.7-176.6. On the small tile the loop saved 1-7 % on the pointwise K1 conv (8 stages)
 *   but cost wav2vec2's encoder 4-5 % with the tiles asked for, and with them assigned as
 *   ctaid.x + i * nctaid.x 2-3 % on its NCL calls and 10 % on its layer's backward (the phased
 *   dx, whose phases differ in stages), so the small and large tiles keep a block a tile
 *   (bench/RESULTS-gpu.md).
 *   r walks KT = K * ceil(C_in / BK) stages, BK = 64 channels (32 in TF32): tap k, channels
 *   c0 .. c0 + BK - 1. Stage s holds, from the 1024-byte aligned base + s * (BM * 128 + BN *
 *   128 bytes) (large: 48 KiB, small: 32 KiB, narrow: 24 KiB):
 *     A  BM * 128 bytes: BM rows (o) of BK channels (128 bytes), the 128-byte swizzle (16-byte
 *        chunk c of row r at chunk c ^ (r % 8)): the tensor map p_ta over W as
 *        (C_in, K, C_out), box (BK, 1, BM) at (c0, k, o0);
 *     B  BN rows (positions, row i = item n0 + i / TB, time t0 + i % TB) of BK channels,
 *        swizzled alike: the map p_tb over X as (C_in, T_in, N), box (BK, TB * S, NB),
 *        element strides (1, S, 1), at (c0, S*t0 + D*k - P_L, n0).
 *   Out-of-range elements (channels past C_in, times outside [0, T_in), items past N,
 *   rows past C_out) are filled with zeros by the copy engine.
 * CHANNEL-FIRST X (the "_mn" entry, where ws_hgemm_mn: BF16/F16 math with NCL x of the math
 *   type, or TF32 math with NCL float32 x; pre NONE, stride 1, and every tap's offset D*k -
 *   P_L a multiple of 16 bytes of elements, 8 16-bit or 4 float32 (P_L and, for K > 1, D
 *   multiples of that: the copy engine refuses, with an illegal-instruction fault, a box whose
 *   innermost start is not 16-byte aligned, so a tap shifted by a part of 16 bytes cannot be
 *   read this way; H200, Jukebox's K3 D27 P27); taken by a call where ws_hgemm_mn_call: TB >=
 *   BK, x 16-byte aligned, T_in a multiple of 16 bytes): x is read in place, without the
 *   staging pass. B is BN / BK blocks of BK * 128 bytes, block j = BK positions (item n0 +
 *   (BK j >> lgtb), times t0 + (BK j & (TB - 1))) x BK channels, a channel's BK times one
 *   128-byte row, swizzled as A: the map p_tb over x as (T_in, C_in, N), box (BK, BK, 1), one
 *   copy a block at (t0 + (BK j & (TB - 1)) + D*k - P_L, c0, item).
 *   16-bit math: wgmma reads it MN-major (imm-trans-b 1) through descriptors with leading byte
 *   offset 8192 (the next block's positions) and stride byte offset 1024 (the next 8
 *   channels), a k16 step 2048 bytes further.
 *   TF32 (wgmma reads TF32 only K-major): once full[s] has completed, the consumers turn each
 *   4 KiB block in place into the K-major rows the staged kernel reads (a position's 32
 *   channels one 128-byte row), rounding to TF32 with cvt.rna as the staging pass does, so
 *   the products, and the bits, are the staged call's. A block's 64 groups of 4 x 4 elements
 *   (16-byte chunks of 4 rows) go to 64 consumer threads, 2 BN / (consumer threads) groups a
 *   thread: the thread of group (a, b = a ^ m) (eight lanes a = 0..7 of one m) reads rows 4a +
 *   i at chunk b ^ (4(a & 1) + i) and writes the transposed group at rows 4b + i, chunk a ^
 *   (4(b & 1) + i), so each eight lanes hit eight different chunks both ways (no bank
 *   conflicts); the group a thread overwrites is read by a lane of its own eight, so the
 *   warp's reads precede its writes (bar.warp.sync; a barrier of every consumer measured the
 *   same), and the writes reach the async proxy (fence.proxy.async) before named barrier 1 of
 *   every consumer, after which wgmma reads the slot as it reads a staged one. The transpose runs while the stage before is
 *   still in the tensor pipe (wgmma.wait_group 1). H200, the K1 conv N8 C512 T16384, NCL,
 *   2026-11-29, alternated with the staged kernel in one call: 318.2-323.6 us against
 *   386.5-389.2 (the staging pass alone took 128 us); PyTorch 465.3.
 *   Everything else is the kernel's.
 * THREADS (large: 384; small: 288; narrow: 160): the producer is warpgroup 0 (large:
 *   setmaxnreg 40, thread 0 alone issues the copies), warp 8 (small: thread 256; no
 *   setmaxnreg, 112 registers a thread so that two blocks fit the register file) or warp 4
 *   (narrow: thread 128; 128 registers, three blocks); that thread initialises
 *   the mbarriers, and for stage use u of slot s it waits empty[s] (phase u - 1, after the
 *   first round), arms full[s] with the stage's bytes (mbarrier.arrive.expect_tx) and issues
 *   the two copies, which complete on full[s]. The consumers are warpgroups 1 and 2 (large:
 *   setmaxnreg 232) or 0 and 1 (small), or warpgroup 0 alone (narrow): consumer g owns rows
 *   64g.. of the tile and all BN
 *   positions (BN / 2 float32 accumulators a thread); per stage it waits full[s], issues four
 *   wgmma.mma_async m64nBNk16 (A and B from shared memory through K-major descriptors with
 *   the 128-byte swizzle, stride byte offset 1024, a k16 step 32 bytes further), commits,
 *   waits for the group before (wgmma.wait_group 1) and releases that group's slot:
 *   every consumer thread arrives on its empty[] (count 256, narrow 128). A consumer whose 64
 *   rows are all past C_out (the last 128-row tile where C_out % 128 <= 64) waits and releases
 *   the stages but issues no products.
 *   A tile of BM rows: A's box and stage part are BM rows, ctaid.x's row tiles ceil(C_out /
 *   BM), the epilogue's Ys BM rows (NCL) or BM + 4 floats a position (NLC) and Bs BM floats,
 *   its loops over the consumers' 128 * (consumer warpgroups) threads.
 * EPILOGUE (the NC = 128 * consumer warpgroups consumer threads, named barrier 1 of NC; the
 *   numbers below are the 128-row tiles', NC 256; the narrow tile's follow from BM 64, NC
 *   128): the accumulators go to shared memory (the stages' memory, from the ring's base, every
 *   copy having been consumed; in the tile loop from base + cfg.yoff, past stage 0, to yend)
 *   as Ys[BM][BN + 4] float32 for NCL y, Ys[BN][BM + 4] (position-major: a warp's
 *   stores of one accumulator, 8 rows x 4 positions, hit 32 banks) for NLC y, and the bias as
 *   Bs[BM] after it; then, c the thread's index among the consumers:
 *   NLC y in vectors (not the SILU of the small and narrow tiles), where C_out % 4 == 0 and,
 *   per call, y and the add (and add_bs) are aligned to 4 elements: rows 4(c % 32) .. + 3
 *   (LP = BM / 4 threads a position; their b[o] one 16-byte read of Bs) at positions c / 32
 *   + 8m; a position's four values are one 16-byte read of Ys, one vector add read and one
 *   vector store (a warp's 32 stores one run of 128 channels), in groups of 4 vectors whose
 *   reads come first. H200, bf16, us per call, before / after (2026-11-28,
 *   same call): the tiny stem's conv1 (exact GELU, no add) 258 / 187 (ncu: 120 / 85 million
 *   warp instructions), its conv2 (f32 y, the positional add) 241 / 174; wav2vec2's 7 NLC
 *   convs 1243-1258 / 1135-1142; large-v3's two convs 2189-2192 / 1983-2011; DAC 179 / 170.
 *   NCL y in vectors, where T_out % 4 == 0 and y and the add are aligned to 4 elements (not
 *   the SILU of the small and narrow tiles, whose vectors spill on the small one): positions
 *   4(c % (BN/4)) .. + 3 (n, t once; TB >= 8 keeps them in one item) of rows c/(BN/4) +
 *   (4 NC / BN)m, each a 16-byte read
 *   of Ys (rows of BN + 4 floats), one vector add read and one vector store; H200, bf16, same
 *   call: the tiny stem's two convs in NCL 528 -> 469-472 us, wav2vec2's 7 NCL convs
 *   1471-1475 -> 1451-1459, its 512->512 K3 S2 backward 1217-1220 -> 1188-1192.
 *   Otherwise (the element form), NCL y: position c % BN and rows c / BN + (NC / BN) m; NLC
 *   y: row c % BM and positions c / BM + 2m; each element + b[o], act, + add, stored
 *   in y_type (ptx_epi.h), without branches, in groups of 16 whose reads (Ys, Bs, add) are
 *   issued before any of their stores (a store may alias a later add read, so the reads of
 *   an element after a store wait for it: one element at a time, the K1 add of the ResConv1D
 *   block took 75 us, in groups 34 us). The loops are emitted twice, with and without the
 *   add, and a call without one branches once to the second (no add reads and no add
 *   address arithmetic: 31 instructions an element of the tiny stem's conv1 instead of 41).
 *   The NCL element form runs its groups as a loop (BM / (NC / BN) / 16 of them), not
 *   unrolled: run once a tile, the unrolled code (about 2100 instructions) waited on
 *   instruction fetch (H200, wav2vec2's K2 S2 layer, bf16 NCL, one wave: 26.4-27.5 ->
 *   20.2-20.5 us, a third of its stall samples "no instruction" before).
 *   add[n, o, t] is read at add + n*add_bs + (o*T_out + t) (NCL y) or (t*C_out + o) (NLC y),
 *   as every forward kernel reads it.
 * Dynamic shared memory cfg.smem, at most WS_HGEMM_SMEM, small WS_HGEMM_SMEM_S (1 KiB of
 *   alignment slack, the stages and Ys to yend, 2 * stages + 1 mbarriers, the tile queue's);
 *   .maxnreg 168 (384 threads x 168 registers fit the file
 *   before the producer gives its registers to the consumers), small 112 with .minnctapersm 2
 *   and the largest shared-memory carveout (two blocks need 200 KiB); narrow WS_HGEMM_SMEM_N,
 *   128 registers, .minnctapersm 3, the same carveout (three blocks need 222 KiB).
 * Parameters: WS_PARAMS_HGEMM (.tmap p_ta, p_tb; .u64 p_b, p_add, p_y; .u32 p_n, p_t_out,
 *   p_ntt, p_lgtb; .u64 p_add_bs, p_ctr: the plan's tile counter, a u32 that is 0 between
 *   calls, read by the tile loop only); the staging kernel WS_PARAMS_HPREP (.u64 p_x, p_xp;
 *   .u32 p_n, p_t_in), grid (ceil(T_in / 32), ceil(C_in / 64), N), WS_HPREP_THREADS.
 * Speed (H100, bench-conv_gpu, us per call, NCL / NLC, 2026-11-27): bf16 dilated K3 D9 N256
 *   C512 T32 34.3 / 28.8, the ResConv1D block's two calls 68.2 / 60.2, wav2vec2's 7 calls
 *   1580 / 1281, DAC C512->1024 K16 S8 218.2 / 179.6, the tiny stem's two convs over 64
 *   windows 561.9 / 478.3, large-v3's 2590 / 2358; tf32 NCL 61.7, 107.4, 2597, 425.6 (the
 *   kernels of ptx_gemm.h: bf16 67.1, 109.8, 3031, 1163). Tensor pipe (ncu): 62 % on the
 *   dilated row NLC, 89 % on DAC's; 24-27 % on the tiny stem's conv1, whose sum is 6 stages
 *   (80 channels: the second 64-channel block of each tap is 3/4 zeros) and whose exact GELU
 *   epilogue is most of its instructions.
 * Tested by tests/test_ptx.c (ptxas sm_90a, parameter tables), tests/test_ptx_golden.c (the
 *   modules' hashes) and tests/test_gpu_conv.c (on an H100 against the CPU engine, every
 *   math, two runs the same bits, misaligned x staged, weights per call).
 */
#ifndef WS_CUDA_PTX_HGEMM_H
#define WS_CUDA_PTX_HGEMM_H

#include "common.h"
#include "ptx_act.h"
#include "ptx_emit.h"
#include "ptx_hbwd.h"
#include "ws_conv.h"

#define WS_HGEMM 1 /* 0: the Hopper GEMM is never chosen */
#define WS_HGEMM_BM 128
#define WS_HGEMM_BN 256
#define WS_HGEMM_LGBN 8
#define WS_HGEMM_STAGES 4
#define WS_HGEMM_STAGE_BYTES (WS_HGEMM_BM * 128 + WS_HGEMM_BN * 128)
#define WS_HGEMM_THREADS 384
/* the epilogue's Ys and Bs (EPILOGUE below), the larger of the NCL and NLC forms, of a tile of
 * bm rows x bn positions; they end at the ring's end or, where the ring is shorter, past it, and
 * never touch stage 0 (the persistent loop, TILES below) */
#define WS_HGEMM_YS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define WS_HGEMM_YS(bm, bn) (WS_HGEMM_YS_MAX((bm) * ((bn) + 4) * 4, (bn) * ((bm) + 4) * 4) + (bm) * 4)
#define WS_HGEMM_YEND(st, sb, bm, bn) WS_HGEMM_YS_MAX((st) * (sb), (sb) + WS_HGEMM_YS(bm, bn))
/* the tile queue's slots (the producer's fetched tiles, handed to the consumers) */
#define WS_HGEMM_TQ 4
/* the dynamic shared memory: 1 KiB of alignment slack, the stages and Ys, then the mbarriers
 * (full[st], empty[st], the epilogue's, the queue's tfull[TQ] and tempty[TQ]) and the queue's
 * tiles */
#define WS_HGEMM_SMEM_OF(st, sb, bm, bn) \
    (1024 + WS_HGEMM_YEND(st, sb, bm, bn) + 8 * (2 * (st) + 1) + 16 * WS_HGEMM_TQ + 4 * WS_HGEMM_TQ)
#define WS_HGEMM_SMEM WS_HGEMM_SMEM_OF(WS_HGEMM_STAGES, WS_HGEMM_STAGE_BYTES, WS_HGEMM_BM, WS_HGEMM_BN)
/* 1: weights of NCL descriptors at stride > 2 are k-major too (ws_gemm_mma_kmajor), so that
 * the Hopper GEMM takes them */
#define WS_HGEMM_KMAJOR_NCL 1
#define WS_HGEMM_MIN_STAGES 3 /* the fewest stages (K * ceil(C_in / 64)) it takes */
#define WS_HGEMM_MIN_COUT 32  /* the fewest output channels it takes */
/* THE SMALL TILE: BM = 128 x BN = 128 positions, 3 stages of 32 KiB, two blocks an SM (one's
 * epilogue runs beside the other's products), for sums of at most WS_HGEMM_SMALL_KT stages */
#define WS_HGEMM_BN_S 128
#define WS_HGEMM_LGBN_S 7
#define WS_HGEMM_STAGES_S 3
#define WS_HGEMM_STAGE_BYTES_S (WS_HGEMM_BM * 128 + WS_HGEMM_BN_S * 128)
#define WS_HGEMM_SMEM_S WS_HGEMM_SMEM_OF(WS_HGEMM_STAGES_S, WS_HGEMM_STAGE_BYTES_S, WS_HGEMM_BM, WS_HGEMM_BN_S)
/* 288 threads: warpgroups 0 and 1 consume, warp 8 produces (no setmaxnreg); 2 x 288 x 112
 * registers fit the file */
#define WS_HGEMM_THREADS_S 288
#define WS_HGEMM_MAXNREG_S 112
#ifndef WS_HGEMM_SMALL_KT
#define WS_HGEMM_SMALL_KT 24
#endif
/* THE NARROW TILE: the small tile's sums with C_out <= 64: BM = 64 rows x BN = 128 positions,
 * one consumer warpgroup and a producer warp (160 threads, 128 registers), 3 stages of 24 KiB,
 * three blocks an SM (the 128-row tile left half its rows, half its A copies and one of its two
 * consumers idle there, two blocks an SM) */
#define WS_HGEMM_BM_N 64
#define WS_HGEMM_STAGE_BYTES_N (WS_HGEMM_BM_N * 128 + WS_HGEMM_BN_S * 128)
#define WS_HGEMM_SMEM_N WS_HGEMM_SMEM_OF(WS_HGEMM_STAGES_S, WS_HGEMM_STAGE_BYTES_N, WS_HGEMM_BM_N, WS_HGEMM_BN_S)
#define WS_HGEMM_THREADS_N 160
#define WS_HGEMM_MAXNREG_N 128
#define WS_HPREP_THREADS 256
#define WS_HGEMM_NAME_MAX 160

/* a kernel's tile: positions (bn = 2^lgbn), stages of sb bytes, dynamic shared memory, blocks
 * an SM (minb), registers at launch (maxnreg) and after setmaxnreg (preg: the producer,
 * creg: the consumers; 0: no setmaxnreg) */
typedef struct {
    int bn, lgbn, st, sb, smem, minb, maxnreg, preg, creg;
    int threads, pwg; /* threads a block; the producer's warpgroup (the consumers' are the others) */
    int mn;           /* 1: the "_mn" kernel's B, channel-first x read in place (ws_hgemm_mn) */
    int bm, nc;       /* rows (128, or 64: the narrow tile) and consumer warpgroups (2, or 1) */
    int yoff, yend;   /* the epilogue's Ys and Bs at the ring's base + yoff .. yend; the mbarriers after */
    int loop;         /* 1: the tile loop (the narrow tile; TILES below), 0: a block a tile */
} ws_hgemm_cfg;
/* the forward's tile for d: the small one where ws_hgemm_small(d) (the narrow one where also
 * C_out <= 64), else the large one (the weight gradient's always) */
int ws_hgemm_small(const ws_conv_desc *d);
void ws_hgemm_cfg_of(const ws_conv_desc *d, ws_hgemm_cfg *q);
void ws_hgemm_cfg_large(ws_hgemm_cfg *q);

/* emission helpers ptx_hpair.c shares:
 * - ws_hgemm_wait: while (!mbarrier.try_wait.parity(bar, parity)) ; with acquire at cluster
 *   scope where cluster (a peer's release is waited for);
 * - ws_hgemm_desc: desc = the K-major descriptor of the swizzled tile at shared address addr,
 *   rows of row_bytes (128: the 128-byte swizzle, layout 1; 64: the 64-byte swizzle, layout 2):
 *   start >> 4 (bits 0-13), leading byte offset 1 (unused with a swizzle, bits 16-29), stride
 *   byte offset of 8 rows >> 4 (bits 32-45), the layout (bits 62-63). */
void ws_hgemm_wait(ptx_buf *b, preg bar, preg parity, int cluster);
void ws_hgemm_desc(ptx_buf *b, preg desc, preg addr, int row_bytes);
/* the forward epilogue's element helpers (ptx_hpair.c shares them): the add's raw element,
 * *(y_type *)(abase + off*ys) into r where p holds (zero elsewhere); one output element, v +
 * bias, act, + that add (raw r, where p holds; p unnamed: no add), stored at ybase + off*ys
 * in y_type where `in` holds, without a branch */
void ws_hgemm_add_read(ptx_buf *b, const ws_conv_desc *d, preg r, preg p, preg off, preg abase, int ys);
void ws_hgemm_elem(ptx_buf *b, const ws_conv_desc *d, preg v, preg bias, preg p, preg r, preg in,
                   preg off, preg ybase, int ys);

/* the vector epilogues' helpers (ptx_hpair.c shares them): ws_hgemm_vec_or branches to scalar
 * unless y, and with an add (hasa) the add and add_bs, are aligned to 4 elements of ys bytes
 * (and, tout named, T_out % 4 == 0); ws_hgemm_vec_add zeroes a's registers, loads its 4
 * elements at addr where p holds (a coherent load: the add may be y) and gives them as
 * float32 in af */
void ws_hgemm_vec_or(ptx_buf *b, preg py, preg pa, preg abs, preg hasa, preg tout, int ys, plabel scalar);
void ws_hgemm_vec_add(ptx_buf *b, const ws_ptx_vec *a, preg p, preg addr, preg af[4]);

/* 1 when the Hopper GEMM runs descriptor d on compute capability cc: 9.0, a dense FWD the
 * gemm kernel takes (ptx_gemm.h), BF16, F16 or TF32 math, C_in % 16 == 0 with k-major weights,
 * stride <= 8, at least WS_HGEMM_MIN_STAGES stages and WS_HGEMM_MIN_COUT output channels (TF32
 * math with NCL x: at least 6 stages and C_out over 64) */
int ws_hgemm_fits(const ws_conv_desc *d, int cc_major, int cc_minor);
/* 1 when the kernel can run d at all (ws_hgemm_emit takes it): what ws_hgemm_fits asks but the
 * compute capability and the bounds on the stages, C_out and TF32 NCL, which choose the kernel
 * for speed; any count of stages from one on runs. The inner plan of a conv through its
 * columns (ptx_hcol.h) takes it on this */
int ws_hgemm_emits(const ws_conv_desc *d);

/* channels of one tap per stage (128 bytes: 64 of 16-bit math, 32 of TF32), and the bytes of
 * an element of the kernel's operands (2, or 4 for TF32 kept in float32) */
int ws_hgemm_bkc(const ws_conv_desc *d);
int ws_hgemm_xbytes(const ws_conv_desc *d);

/* 1 when the kernel's own entry needs d's x staged: TF32 math (rounded there), NCL, or
 * x_type other than the math type, or a pre activation (an NLC call's x off 16-byte alignment
 * is staged too). A call that takes the "_mn" entry (ws_hgemm_mn_call) is not staged */
int ws_hgemm_staged(const ws_conv_desc *d);

/* 1 when d's module has the staging kernel's "_prep8" entry: NCL x of the math type (16-bit,
 * or float32 for TF32), pre NONE; ws_hgemm_prep8_call: a call it runs, x 16-byte aligned,
 * T_in a multiple of 16 bytes and at least ws_hgemm_prep8_t(d) times (128 16-bit, 64 float32:
 * shorter items leave its blocks idle; "_prep" takes them). X = x transposed (TF32 rounded
 * as "_prep" rounds it), a block ws_hgemm_prep8_t(d) times x 64 channels, grid
 * (ceil(T_in / that), ceil(C_in / 64), N), WS_HPREP_THREADS; 16-byte loads and stores (the
 * element-wise "_prep" moved Jukebox's 67 MB at 52-54 % of the H200's DRAM bandwidth, 44-45 us) */
int ws_hgemm_prep8(const ws_conv_desc *d);
int ws_hgemm_prep8_t(const ws_conv_desc *d);
int ws_hgemm_prep8_call(const ws_conv_desc *d, long long t_in, uint64_t x);

/* 1 when d's module has the "_mn" entry (CHANNEL-FIRST X above): NCL x of the math type
 * (16-bit, or float32 under TF32), pre NONE, stride 1, taps at multiples of 16 bytes of times
 * (8 16-bit, 4 float32); ws_hgemm_mn_call: a call of d with log2 TB lgtb, t_in and x's
 * address that it takes (TB >= BK: 64, or 32 in TF32; x 16-byte aligned; T_in a multiple of
 * 16 bytes) */
int ws_hgemm_mn(const ws_conv_desc *d);
int ws_hgemm_mn_call(const ws_conv_desc *d, int lgtb, long long t_in, uint64_t x);

/* log2 of the tile's time extent TB for a call with t_out outputs (TILES above) */
int ws_hgemm_lgtb(const ws_conv_desc *d, int t_out);

/* "ws_hgemm_" and the fields that shape the code; the staging entry is name + "_prep" */
void ws_hgemm_name(const ws_conv_desc *d, char name[WS_HGEMM_NAME_MAX]);

/* The module (the kernel and its staging entry) for a descriptor ws_hgemm_emits (sm_90a).
 * malloc'd text, or NULL with err. */
char *ws_hgemm_emit(const ws_conv_desc *d, ws_err *err);

/* THE PHASED FORM (the dense backward's dx at stride S > 1 into NCL dx, ptx_hbwd.h): d is
 * dx's conv over g (ws_gbwd_dx's sub: y NLC, C_out = S*C_in, no act), and the kernel is d's
 * but for the epilogue, which writes row o = r*C_in + c (phase r, channel c) of position t
 * straight into dx[n, c, S*t + r], dx [N][C_in][T] with T = p_add_bs (no add), dropping
 * S*t + r >= T: the NCL epilogue's loops, a store every S elements of a row, the other phases'
 * stores filling the gaps in L2. So X' and the "_u" pass are skipped. Same parameters, tile
 * and staging entry (the plain module's _prep) as d's kernel; entry ws_hgemm_phased_name.
 * TAPS: where lo and hi are given (ws_gbwd_dx_taps) and every row tile is one phase (C_in a
 * multiple of 128, at most WS_HGEMM_PHASES_MAX phases), a tile of phase r = o0 / C_in runs only
 * the taps lo[r]..hi[r] of W' (its rows are zero at the others: at K 3, stride 2 and no
 * padding, phase 1 has one tap of two): ceil(C_in' / BK) stages a tap. The name then ends
 * in _t and the ranges. */
#define WS_HGEMM_PHASES_MAX 8
int ws_hgemm_phased_fits(const ws_conv_desc *d, int phases);
void ws_hgemm_phased_name(const ws_conv_desc *d, int phases, const int *lo, const int *hi,
                          char name[WS_HGEMM_NAME_MAX]);
char *ws_hgemm_emit_phased(const ws_conv_desc *d, int phases, const int *lo, const int *hi, ws_err *err);

/* THE WEIGHT GRADIENT (ptx_hbwd.h; a dense BWD descriptor, pre NONE, TF32 / BF16 / F16 math):
 *   part[s][k][o][j] = sum over split s's stages of G[n][o][t] Xs[n][j][rk][t + qk] with
 *   D*k - P_L = S*qk + rk: the forward's ring, threads and wgmma, the reduction along time.
 *   A stage is (item n, times t .. t + BK - 1, BK = ws_hgemm_bkc): A 128 rows o of BK times
 *   from the map p_ta over G (T_out, C_out, N), box (BK, 128, 1) at (t, o0, n); B 256 rows j
 *   from the map p_tb over Xs (Q, classes*C_in, N), box (BK, 256, 1) at (t + off[k],
 *   cls[k]*C_in + j0, n) (ws_hgemm_wgrad_classes; rows past C_in of a class are the next
 *   class's: they feed only columns j >= C_in, which the epilogue drops); out-of-range
 *   times, rows and items are zeros (split s's stages past the last item too). Every
 *   copy's first time is a multiple of 16 bytes: the copy engine faults on others. Split s takes stages s*p_kts .. s*p_kts + p_kts - 1 of the p_n * p_tch (items x
 *   time chunks), in order. The epilogue is the forward's for NCL float32 y without bias,
 *   act or add over items s*K + k (p_nsk = splits * K) and positions j < C_in.
 *   Block ctaid.x = ((s*K + k)*ceil(C_in / 256) + j0 / 256)*ceil(C_out / 128) + o0 / 128.
 *   Parameters WS_PARAMS_HWG (.tmap p_ta, p_tb; .u64 p_y; .u32 p_n, p_tch, p_kts, p_nsk). */
int ws_hgemm_wgrad_fits(const ws_conv_desc *d, int cc_major, int cc_minor);
/* the classes of Xs a descriptor's taps read (ptx_hbwd.h) */
void ws_hgemm_wgrad_classes(const ws_conv_desc *d, ws_gbwd_cls *c);
void ws_hgemm_wgrad_name(const ws_conv_desc *d, char name[WS_HGEMM_NAME_MAX]);
char *ws_hgemm_wgrad_emit(const ws_conv_desc *d, ws_err *err);

#endif

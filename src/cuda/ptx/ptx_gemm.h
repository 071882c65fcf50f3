/* ptx_gemm.h - the conv engine's implicit-GEMM forward kernel for dense convolutions
 * (groups 1) on the GPU, as PTX text: tiled FFMA in float32, shared memory double-buffered.
 *
 * THE GEMM VIEW (R = C_in*K, P = N*T_out positions p = n*T_out + t):
 *   y[o, p] = act( b[o] + sum_{r<R} W[o, r] * X[r, p] ) + add[n, o, t]
 *   W[o, r] = w[o, j, k] (the plan's float32 [C_out][C_in][K]: row o, r = j*K + k, contiguous)
 *   X[r, p] = pre(x[n, j, S*t + D*k - P_L]), zero outside [0, T_in)
 * Each output's sum runs over r = 0, 1, .. R-1 in the kernel's order of r, one fma each. With
 * r = j*K + k that is the direct kernel's order (j then k); it skips the zero taps, and an fma
 * with a zero product leaves a nonzero sum as it is, so the two agree bit for bit but for the
 * sign of a zero sum. In the k-major order (below: k then j, the CPU engine's) and for a sum
 * in parts they agree within float32 rounding, which is what the tests allow.
 *
 * TILING: a block of WS_GEMM_THREADS threads computes BM output channels x BN positions
 * (BM = WS_GEMM_BM, or WS_GEMM_BM_SMALL when C_out <= WS_GEMM_BM_SMALL: ws_gemm_bm)
 * (o0 = ctaid.y*BM, p0 = ctaid.x*BN), walking r in steps of BK through two shared-memory
 * stages (one barrier per step): the next step's A and B elements are loaded into
 * registers while this step's are multiplied, then stored to the other stage.
 * The order of r: k-major (r = k*C_in + j, ws_gemm_ffma_kmajor: C_in % 16 == 0, NLC x or
 * NCL at stride <= 2), so that a stage is one tap k and 16 channels j0 .., with one u and
 * one test for all of a position's elements; else r = j*K + k.
 *   A (W) stage As[BK][BM+4]: element e < BM*BK/256 of thread tid is
 *     W[o0 + tid/BK + (256/BK)e, r0 + tid%BK] (a warp reads 32/BK rows x BK consecutive r;
 *     k-major: w[o][j0 + tid%BK][k], the plan's weights as they are), stored transposed at
 *     As[tid%BK][tid/BK + (256/BK)e]. Where k-major and C_out % 4 == 0 (ws_gemm_ffma_wpack)
 *     the kernel reads W packed [R][C_out] instead (ws_gemm_ffma_weights: the plan's wh, or
 *     the call's packed by the preparation module): 16-byte chunk tid + 256e (e < BM/64) of a
 *     stage is row kk = chunk / (BM/4), channels o0 + 4(chunk % (BM/4)) .., copied by
 *     cp.async (zeros past C_out) straight into As, no registers; the copies are waited for
 *     before the stage's barrier.
 *   B (X) stage Bs[BK][BN], the x of the stage's r at its positions:
 *     j-major: element e < BK/2 of thread tid is X[r0 + tid/128 + 2e, p0 + tid%128] (a warp
 *     walks 32 consecutive positions: consecutive t of one row, coalesced in NCL at stride
 *     1); per element j = r / K, k = r - j*K (u32 by an immediate), u = S*t - P_L + D*k
 *     (64-bit), valid when r < R, p < P and u < T_in (unsigned).
 *     k-major: thread tid takes rows (tid/128)*8 + e of position p0 + tid%128: NCL a load
 *     each, T_in apart; NLC (16-bit x, or float32 x with a pre) the 8 channels as 16-byte
 *     loads (one, or two for float32).
 *     k-major NLC float32 x without pre (ws_gemm_ffma_cl, "channel lanes"): thread tid
 *     loads channels j0 + 4(tid%4) .. + 3 of positions p0 + tid/4 and p0 + tid/4 + 64, 16
 *     bytes each, so that a warp's load is 8 positions of 64 bytes (not 32 positions of
 *     32); stored at Bs[4q + c][(p - p0) ^ 8q] (q = tid%4: the XOR spreads a warp's stores
 *     over the 32 banks; the multiply reads rows 4m .. 4m+3 at its column ^ 8m, 16-byte
 *     groups intact; smem 128-byte aligned so that the XOR of the byte address is the
 *     column's). u = S*t - P_L + D*k is s32 there (ws_gemm_call_fits checks
 *     S*T_out + D*K + P_L < 2^31).
 *     Raw loads by predicated loads (zero out of range), converted (+ pre) when stored.
 *   Multiply: thread (tx, ty) owns rows (i/4)*64 + 4ty + i%4 and positions
 *     (j/4)*64 + 4tx + j%4 (i < TM = BM/16, j < 8): TMx8 accumulators, 16-byte shared loads;
 *     tx = tid%16, ty = tid/16, and for NLC y the other way round (tx = tid/16, ty =
 *     tid%16), so that a warp's store of one accumulator is 16 runs of 4 channels of 2
 *     positions (NLC) or of 4 positions of 2 channels (NCL), not 16 positions.
 *   Epilogue, emitted twice (a call without add branches once to the copy with no add
 *     loads or add address arithmetic): per owned (o, p) inside the tile (o < C_out,
 *     p < P): + b[o] (b[o] loaded once per row of the thread, 0 without bias), act, + add
 *     (read in y_type), stored in y_type and y_layout (ptx_epi.h's epilogue), each
 *     element's add read and store under that predicate with no branch, so that the
 *     assembler schedules the elements of a position together. FFMA, NCL y: a thread's
 *     positions 64g + 4tx .. + 3 are one item's consecutive times where T_out % 4 == 0, so
 *     where also y (and add, add_bs) are aligned to 4 elements a call takes a third form,
 *     each row's four values one vector store (and add load): H200, float32 NCL, Jukebox
 *     425.3 -> 370.2 us, the dilated K3 D9 conv 308.2 -> 291.2, the ResConv1D block's two
 *     calls 425.9 -> 410.4; wav2vec2's first conv (T_out 31999) keeps the scalar stores.
 * Registers (ptxas, no .maxnreg): 128 on sm_90 for the 128-row tile (two blocks per
 * multiprocessor; k-major and channel lanes included), 80-90 for the 64-row tile; no spills.
 * Not so for 16-bit NLC y with GELU (float32 math storing bf16 / f16): 139-144 registers, one
 * block a multiprocessor (the branch-free epilogue schedules a position's GELUs and
 * conversions together); not yet measured on a GPU.
 * Speed (H100, fp32 storage, bench/conv_gpu.c, ours / cuDNN 9.19 in the same run, 2026-11-27
 * 11:06 UTC): dilated K3 D9 N256 C512 T32 308 / 362 us NCL, 293 / 431 NLC; ResConv1D block
 * 433 / 524, 444 / 591; Jukebox 429 / 593, 358 / 1049; wav2vec2's 7 convs 9.98 / 10.51 ms NCL,
 * 9.05 / 11.82 NLC; DAC 3.61 / 4.28 ms, 2.95 / 4.30; the Whisper tiny stem's two convs over 64
 * windows 2.93 / 3.82 ms NCL, 2.81 / 4.26 NLC (the stem's own FFMA kernels: 2.80 ms). Before
 * the k-major order, channel lanes, the NLC-y mapping, the branch-free epilogue and packed W
 * (07:32 UTC): 351, 472; 504, 674; 471, 881; 11.4, 16.1 ms; 3.61, 4.75 ms; 3.36, 4.71 ms.
 * Not yet: NCL y stores through shared memory (wav2vec2's first conv, C_in 1 into 512
 * channels of NCL y, takes 1.0 ms there against 0.38 NLC; a staged epilogue tried took the
 * kernel to 147-153 registers, one block a multiprocessor).
 * SUM IN PARTS (FFMA): the module has two more entries (ws_gemm_entry). A call whose blocks fill
 * at most half of the device's block slots (two a multiprocessor) is cut into Z parts along
 * the stages of r (as many as keep one wave, each at least 5 stages; gpu_conv.c gemm_parts);
 * a call of a wave or more whose last wave is short, its last tiles along p alone (from tile
 * p_xoff on, every tile along o; the kernel takes the tiles before: gpu_conv.c gemm_tail).
 * "_split", grid (gx - p_xoff, gy, Z), p0 = (ctaid.x + p_xoff)*BN, sums stages [z*KT/Z,
 * (z+1)*KT/Z) and stores them raw (float32, no bias, act or add) in the plan's scratch in the
 * tile's order: a thread's accumulators as 2*TM float4 groups of 4 consecutive elements of y
 * (NLC: 4 channels of a position, NCL: 4 positions of a channel), group g of thread tid in
 * block blk of part z at float4 ((z*nblk + blk)*2TM + g)*256 + tid (blk and nblk of the
 * launch's grid), so that a warp's store is 512 contiguous bytes;
 * "_fin", a block of 256 threads per (tile, group) of the _split launch, reads a thread's
 * group of each part as one 16-byte load (four parts' loads in flight), adds them in order
 * z = 0, 1, .. (p_t_in = Z), then + b, act, + add and stores the 4 elements: one vector
 * store (and one vector add load) where they are in range, in one item and aligned, else one
 * by one. The same call shape gives the same bits every run; a split call's bits differ from
 * the whole sum's within float32 rounding (the GPU tests run each split row both ways; the C
 * model checks that _fin writes every element once with the value the whole sum's epilogue
 * would, and that with the kernel's tiles before p_xoff every element is written once). H100, one window
 * of the Whisper tiny stem, NLC, per call: conv2 (36 blocks, 72 stages) in 7 parts 55.8 us,
 * whole 127.5; conv1 (72 blocks, 15 stages) in 3 parts 36.7, whole 40.1. ncu, conv1 in 3
 * parts: _split 22.1 us, _fin 8.9 (29.9 MB through L2); before the tile order (parts stored
 * element by element in y's layout, _fin a thread an element): 24.7 and 10.2 (64.8 and 29.4
 * MB). The stem's own kernels in the same run: 19.9 and 9.4.
 * Parameters: the conv forward table (ptx_params.h, WS_PARAMS_FWD, as the direct forward
 * kernel): .u64 p_x, p_w, p_b, p_add, p_y; .u32 p_n, p_t_in, p_t_out; .u64 p_add_bs; the
 * _split and _fin entries WS_PARAMS_FWD_PARTS: those, then .u32 p_xoff.
 * Grid (ceil(P / BN), ceil(C_out / BM)), block WS_GEMM_THREADS; ws_gemm_call_fits says which
 * calls it takes (P < 2^31, grid y within 65535) and the plan also checks x against
 * ws_gemm_x_align (gpu_conv.c); the direct kernel takes the others.
 *
 * SLICES (FFMA, ws_gemm_slice_fits: packed W, float32 x without pre): two more entries,
 * "_slice" and "_slice2" (ws_gemm_entry 3 and 4), take a call that gemm_parts would sum in
 * parts when a variant's blocks make one wave at least half full (gpu_conv.c gemm_slice
 * picks it), so that the sum's parts never leave the multiprocessor. A block of 256 threads
 * computes a tile of 96 channels x BN positions (BN 48: 4 slices of 64 threads, 8 x 8; BN 96:
 * 2 slices of 128 threads, 8 x 16), each thread 12 channels x 6 positions (channels 4ty + 32g
 * + c, positions tx + TX*j). Slice s sums the stages [s*KT/S, (s+1)*KT/S) of r (k-major, 16
 * a stage) through its own ring of WS_GEMM_SLICE_STAGES stages in dynamic shared memory,
 * filled by cp.async (no registers): A as As[16][96] (16-byte chunks of the packed W: thread
 * lt copies rows lt/8 + (T/8)b, columns lt%8 + 8a, at fixed offsets from one pointer; chunks
 * of channels past C_out are not copied: their slots reach only those channels' sums, which
 * are never stored to y), B position-major Bs[BN][16 + 4] with zeros where x is out of range
 * (NLC x: 16-byte chunks of 4 channels, each from a base per chunk plus the stage's offset;
 * NCL x: threads lt < BN copy position lt's 16 rows 4 bytes each). The copies follow a cursor (D*k, j0 and the W pointer
 * of the next stage to copy, moved on by each stage: no division in the loop) and are issued
 * after the stage's first shared reads; one named barrier per stage for the slice's threads.
 * Per 4 rows of r a thread reads its 6 positions'
 * 4 r as 16-byte loads and per row 12 channels as three, then 72 fma. Then every slice stores
 * its sums position-major (rows of 100 floats) over the rings, and the block's threads add
 * the slices in the order s = 0, 1, .. a group of 4 elements at a time. NLC y, where y, add
 * and add_bs allow vectors: thread tid < 240 keeps channels o0 + 4(tid%24) .. (bias read
 * once) at positions tid/24 + 10i, t stepped without division, the add read before the sum;
 * one vector add read and one vector store a group (threads 240 .. 255 store none). Else (NCL y, or y off the vectors'
 * alignment) groups g = tid + 256i (NLC y: 4 channels of a position; NCL y: 4 positions of a
 * channel) through the _fin entry's group store (+ b, act, + add, one vector store where
 * aligned). The same call gives the same bits every run; they
 * differ from the whole sum's and the parts' within float32 rounding. Compute capability 9.0
 * (sm_90 PTX): griddepcontrol.launch_dependents at the start, griddepcontrol.wait before the
 * first global read, and gpu_conv.c launches the entries with programmatic stream
 * serialization (cuLaunchKernelEx, where the driver has it): the blocks may be placed while
 * the stream's previous kernel ends. Registers (ptxas sm_90) 200-220, one block a
 * multiprocessor. H200, the Whisper tiny stem at one window in float32 (bench-gpu_stem, the
 * two convs, three rounds in one call): 64.7-66.0 us against 76.4-78.3 in parts and 66.4-67.5
 * launched plainly; with the cursor and the NLC column, 57.2-59.3 against 64.3-65.9 (four
 * calls); ncu: conv1 (128 blocks of 96 x 96) 20.6 us, FMA pipe 54.0 %, against 22.2 + 7.4
 * (_split, _fin); conv2 (128 blocks of 96 x 48) 38.3 us, FMA pipe 61.8 %, issue slots 70.8 %
 * busy, against 39.6 + 7.7. Tried (bench/RESULTS-gpu.md, 2026-11-30 03:20): 8 slices of
 * 64 threads (128 registers, spills); 4 slices at 128 registers, two blocks a multiprocessor;
 * 6 and 3 slices (384 threads, 168 registers); the epilogue's bias and add prefetched into L1:
 * all slower.
 * TENSOR CORES (math WS_MATH_BF16 / WS_MATH_F16 / WS_MATH_TF32, ws_gemm_mma; WS_MATH_F32 runs
 * the FFMA kernel above): the same grid, block, tile (BM x BN), parameters and epilogue,
 * products on mma.sync.m16n8k16 (bf16, f16) or m16n8k8 (tf32), f32 accumulation, on inputs
 * rounded to the math type (cvt.rn.bf16x2 / f16x2, cvt.rna.tf32).
 * Element widths in the text below are for the 16-bit types; tf32 keeps every byte offset
 * (a stage row is 64 bytes of r either way: 32 halves or 16 tf32, each k step 32 bytes) and
 * halves the counts: 16 r per stage, NA = BM/16 W elements and 8 x elements per thread.
 * ldmatrix's 8x8 b16 matrices of 4-byte elements are exactly m16n8k8's tf32 fragments, so
 * the fragment loads are the same instructions.
 * p_w is then the plan's W rounded to the math type (ws_gemm_mma_weights, at plan time),
 * [C_out][R] in the kernel's order of r: r = k*C_in + j when C_in % 16 == 0, NLC or
 * stride <= 2 (ws_gemm_mma_kmajor: a thread's 16 consecutive r of a stage are one tap k and 16
 * channels, so one u and one validity test serve all 16, and the addresses step by T_in
 * (NCL) or 1 (NLC)), else r = j*K + k as above. r walks WS_GEMM_MMA_BK = 32 per stage (two
 * k16 steps), two stages, gathered into registers while the other stage is multiplied.
 *   A stage As[BM][32 halves + 16 bytes] (r contiguous, rows of 80 bytes: ldmatrix's 8 row
 *     addresses fall on 8 distinct 16-byte bank groups): thread tid loads
 *     W[o0 + tid/tpr][r0 + (tid%tpr)*NA + e], e < NA = BM/8, tpr = 32/NA (16-byte loads when
 *     R % 8 == 0, else 2-byte loads packed in pairs).
 *   B stage Bs[BN][32 halves + 16 bytes] (X transposed: r contiguous per position): thread
 *     tid gathers X[r0 + (tid/128)*16 + e][p0 + tid%128], e < 16 (a warp: 32 consecutive
 *     positions of one r), pre applied in float32, rounded and stored as 8 pairs (x already
 *     in the math type without pre: paired as loaded). NLC x with r = k*C_in + j (C_in a
 *     multiple of 16): a thread's 16 channels of one position are one run of 16*xs bytes,
 *     loaded 16 bytes at a time (ws_gemm_x_align: the call's x must be 16-byte aligned) and
 *     unpacked from the words.
 *   Warps 2 (channels, BM/2 each) x 4 (positions, 32 each); per k16 step a warp loads
 *     BM/32 A fragments and 2 x4 B fragments by ldmatrix and issues (BM/32)*4 mma.
 *   Epilogue: accumulator c[2h + e] of fragment (mi, ni) is output channel
 *     o0 + wm*BM/2 + 16mi + 8h + lane/4, position p0 + 32wn + 8ni + 2(lane%4) + e. NLC y:
 *     stored from there (emit_epi_store, an element at a time). NCL y: through shared memory, 64 rows
 *     a pass, Ys[64][BN + 4] f32 (the stages' memory): then thread tid takes position
 *     p0 + tid%128 (n and t once) and rows tid/128 + 2i, so a warp's bias, act, add and
 *     store (ptx_epi.h's epilogue; b[o] loaded per element, 0 without bias) run over 32
 *     consecutive positions (one run of t within an item).
 * Registers (ptxas sm_90): 124-128 for the 128-row tile, 88-98 for the 64-row tile; sm_80 up
 * to 157; no spills. Speed (H100, bf16 storage and math, bench/conv_gpu.c; the FFMA kernel's
 * fp32 before): dilated K3 D9 N256 C512 T32 74.5 us (350), ResConv1D block 116 us (496),
 * Jukebox 166 us (468), wav2vec2's 7 convs 3.06 ms (11.3), DAC 1.00 ms (3.61): 77-173
 * TFLOP/s, short of the targets (30, 40, 60, 1200 us, 300 us); tf32: 120 us, 203, 218,
 * 5.18 ms, 1.74 ms (2.1-3.1x FFMA). What bounds it (ncu, dilated row): the L1/TEX data path
 * at 84.5 % (the per-element gather of x, its shared stores, the fragment loads), DRAM 4 %.
 * Tried: a 256-row tile (warps 4 x 2 of 64 x 64, 238 registers, one block of 8 warps per
 * multiprocessor, two 30 KB stages in dynamic shared memory) to halve ldmatrix traffic per
 * mma: slower on every bf16 row (dilated 73 -> 94 us, block 119 -> 159, wav2vec2 3.04 ->
 * 3.38 ms, DAC 1.00 -> 1.08 ms): with 8 warps the register-staged gather's latency is no
 * longer covered. Not yet: the input brought into shared memory in bulk (TMA im2col, or
 * 16-byte row copies read at shifted offsets), more stages in flight, NLC stores through
 * shared memory.
 *
 * On compute capability 9.0 most tensor-core calls run the Hopper GEMM of ptx_hgemm.h
 * instead (operands brought in by the tensor copy engine); this kernel takes the rest there.
 * WGMMA (compute capability 9.0 exactly, ws_gemm_wgmma; the module targets sm_90a, PTX 8.0):
 * the 128-row tensor-core tile with the same gather, parameters and epilogues, the products
 * on wgmma.mma_async m64n128k16 (bf16, f16) or m64n128k8 (tf32), both operands read by the
 * tensor cores from shared memory (no ldmatrix). Two warpgroups: warpgroup g = tid/128 owns
 * rows 64g.. of the tile and all 128 positions (64 f32 accumulators a thread: warp w's rows
 * 16w + 8h + lane/4, positions 8i + 2(lane%4) + e, register 4i + 2h + e). A stage is A then
 * B, each in rows of 64 bytes (one row per output channel or position, r contiguous), the
 * 16-byte chunk c of row r stored at chunk c ^ (r/2 % 4) (the 64-byte swizzle; descriptors:
 * K-major, stride byte offset 512, a k16 step 32 bytes further). Per stage: the next stage's
 * gather is issued, then wgmma on this stage (fence, two k steps, commit); before the next
 * stage's shared stores, wgmma.wait_group 1 and a barrier (the group that read that stage
 * is done in both warpgroups); the stores end with fence.proxy.async. Registers (ptxas
 * sm_90a) 115-125, no spills. Speed (H100, bf16, against mma.sync in the same call):
 * dilated 66.8 us (74.9), block 112.8 (123.4), Jukebox, wav2vec2 and DAC the same within
 * 1 %: on the strided rows the gather bounds both. Without the swizzle (core matrices 8
 * rows x 16 bytes, 128 bytes apart) it ran no faster than mma.sync.
 *
 * Tested by tests/test_gpu_conv.c: ptxas sm_80 / sm_90 with no spills on every module of
 * its gemm table (and on every row's TF32, BF16 and F16 mma module); calls with NLC x off
 * 16-byte alignment go direct; a C model of the FFMA tile
 * and thread mapping (every output produced once, every gather address x's formula; the
 * channel-lane cells as the multiply reads them, the swizzle not modelled) on
 * every row; on a GPU each row against the CPU engine
 * and against the direct kernels; on a GPU every row with BF16, F16 and TF32 math against
 * the CPU engine (rel L2 <= 1e-2, TF32 <= 2e-3: 2e-3..3e-3 bf16, <= 8e-4 f16 seen on the
 * H100), two runs the same bits.
 */
#ifndef WS_CUDA_PTX_GEMM_H
#define WS_CUDA_PTX_GEMM_H

#include "common.h"
#include "ws_conv.h"

#define WS_GEMM_THREADS 256
#define WS_GEMM_BM 128 /* output channels per block */
#define WS_GEMM_BM_SMALL 64 /* ... when C_out is at most this: 4x8 per thread */
#define WS_GEMM_BN 128 /* output positions (n, t) per block */
/* r = (j, k) per shared-memory stage (H100 fp32, BK 8 -> 16: dilated K3 D9 N256 C512 T32
 * 404 -> 350 us, wav2vec2's 7 convs N8 14.6 -> 11.4 ms, DAC 4.24 -> 3.61 ms) */
#define WS_GEMM_BK 16
#define WS_GEMM_NAME_MAX 160
/* the tensor-core kernel (TENSOR CORES above): r per stage (two m16n8k16 steps); 1: plans
 * with math BF16 / F16 run it, 0: every math runs the FFMA kernel */
#define WS_GEMM_MMA_BK 32
#define WS_GEMM_MMA 1
/* 1: on compute capability 9.0 the 128-row tensor-core modules are the wgmma kernel (WGMMA
 * above) */
#define WS_GEMM_WGMMA 1

/* 1 when the gemm kernel can run descriptor d (checked): FWD, groups 1 */
int ws_gemm_fits(const ws_conv_desc *d);

/* BM of d's kernel: WS_GEMM_BM, or WS_GEMM_BM_SMALL for C_out <= WS_GEMM_BM_SMALL (H100,
 * N4 C64 T131072 K3 D27: 924 us with 128, half the rows idle) */
int ws_gemm_bm(const ws_conv_desc *d);

/* 1 when d's gemm module is the tensor-core kernel (math TF32, BF16 or F16, WS_GEMM_MMA on) */
int ws_gemm_mma(const ws_conv_desc *d);

/* 1 when d's gemm module for compute capability cc is the wgmma kernel (sm_90a: cc 9.0,
 * a tensor-core math, the 128-row tile) */
int ws_gemm_wgmma(const ws_conv_desc *d, int cc_major, int cc_minor);

/* 1 when d's mma kernel walks r = k*C_in + j (C_in % 16 == 0: a thread's 16 consecutive r of
 * a stage share one tap k; NLC, or NCL at stride <= 2), else r = j*K + k */
int ws_gemm_mma_kmajor(const ws_conv_desc *d);

/* 1 when d's FFMA kernel walks r = k*C_in + j (float32 math, C_in % 16 == 0: a stage is one
 * tap k and 16 channels; NLC, or NCL at stride <= 2), else r = j*K + k */
int ws_gemm_ffma_kmajor(const ws_conv_desc *d);

/* 1 when d's FFMA kernel gathers x by channel lanes (k-major, NLC float32 x, pre NONE: a
 * thread loads 4 channels of two positions, 16 bytes each) */
int ws_gemm_ffma_cl(const ws_conv_desc *d);

/* 1 when d's FFMA kernel reads packed weights by cp.async (k-major and C_out % 4 == 0):
 * ws_gemm_ffma_weights' [R][C_out] */
int ws_gemm_ffma_wpack(const ws_conv_desc *d);

/* 1 when d's gemm kernel reads weights packed for it (the plan's wh, ws_gemm_pack_weights):
 * the mma kernel always, the FFMA kernel where ws_gemm_ffma_wpack; else it reads the plan's
 * float32 [C_out][C_in][K] */
int ws_gemm_packs(const ws_conv_desc *d);

/* bytes of the packed weights where ws_gemm_packs: C_out * C_in * K elements of
 * ws_gemm_mma_wbytes (mma) or 4 (FFMA) */
size_t ws_gemm_packed_bytes(const ws_conv_desc *d);

/* the FFMA kernel's packed weights: out[(k*C_in + j)*C_out + o] = w[o][j][k] (float32, the
 * stage's rows of As are then runs of C_out, 16 bytes a copy) */
void ws_gemm_ffma_weights(const ws_conv_desc *d, const float *w, float *out);

/* the packed weights of d's gemm kernel (ws_gemm_packs): ws_gemm_mma_weights or
 * ws_gemm_ffma_weights */
void ws_gemm_pack_weights(const ws_conv_desc *d, const float *w, void *out);

/* the FFMA module's entries: which 0 the kernel (ws_gemm_name), 1 "_split" (the same GEMM
 * over part ctaid.z of the sum's stages, raw float32 sums into p_y in the tile's order: a
 * thread's accumulators as ws_gemm_split_groups float4 groups, a part of nblk tiles taking
 * nblk*BM*BN floats), 2 "_fin" (adds the p_t_in parts at p_x in order, + bias, act, + add,
 * y; ws_gemm_split_groups blocks of WS_GEMM_FIN_THREADS threads a tile, a thread a group of
 * 4 elements) */
#define WS_GEMM_FIN_THREADS WS_GEMM_THREADS
void ws_gemm_entry(const ws_conv_desc *d, int which, char name[WS_GEMM_NAME_MAX]);
/* the _slice entries (which 3 and 4, "_slice" and "_slice2"; only where ws_gemm_slice_fits):
 * the sum of a call of few blocks inside each block, in slices (ptx_gemm.h, SLICES); variant
 * v = which - 3: grid (ceil(P / ws_gemm_slice_bn(v)), ceil(C_out / WS_GEMM_SLICE_BM)),
 * WS_GEMM_SLICE_THREADS threads, ws_gemm_slice_smem(v) bytes of dynamic shared memory, the
 * forward table's parameters */
#define WS_GEMM_SLICE_VARIANTS 2
#define WS_GEMM_SLICE_NS0 4 /* slices of 64 threads, variant 0 */
#define WS_GEMM_SLICE_NS1 2 /* slices of 128 threads, variant 1 */
int ws_gemm_slice_threads(int v); /* 256 */
#define WS_GEMM_SLICE_BM 96
#define WS_GEMM_SLICE_STAGES 4
int ws_gemm_slice_bn(int v);
int ws_gemm_slice_smem(int v);
/* 1 when d's FFMA module has the _slice entries: float32 math, packed weights
 * (ws_gemm_ffma_wpack), float32 x without pre */
int ws_gemm_slice_fits(const ws_conv_desc *d);
/* float4 groups of a thread's accumulators in the _split entry's order: 2 * BM / 16 */
int ws_gemm_split_groups(const ws_conv_desc *d);

/* bytes per weight of the mma kernel: 2 (bf16, f16), 4 (tf32) */
int ws_gemm_mma_wbytes(const ws_conv_desc *d);

/* the alignment in bytes that d's gemm kernel needs of x (checked per call; a call with
 * an x off it runs the direct kernel): 16 where the mma or the FFMA kernel loads NLC x 16
 * bytes at a time (k-major), else 1 */
int ws_gemm_x_align(const ws_conv_desc *d);

/* the mma kernel's weights (its p_w): w (float32 [C_out][C_in][K]) rounded to the math type
 * (bf16 / f16 to nearest even, tf32 to nearest with ties away as cvt.rna, kept as float32),
 * out [C_out][R] elements of ws_gemm_mma_wbytes(d) bytes in the kernel's order of r */
void ws_gemm_mma_weights(const ws_conv_desc *d, const float *w, void *out);

/* 1 when a call of n items with t_out outputs fits the kernel's grid and 32-bit position
 * arithmetic */
int ws_gemm_call_fits(const ws_conv_desc *d, int n, int t_out);

/* The module's (and kernel's) name: "ws_gemm_fwd_" and the fields that shape the code. */
void ws_gemm_name(const ws_conv_desc *d, char name[WS_GEMM_NAME_MAX]);

/* The PTX module for a descriptor ws_gemm_fits, for a compute capability (8.0 or later).
 * malloc'd text, or NULL with err. */
char *ws_gemm_emit(const ws_conv_desc *d, int cc_major, int cc_minor, ws_err *err);

#endif

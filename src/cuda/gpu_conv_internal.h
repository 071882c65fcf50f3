/* gpu_conv_internal.h - hooks of the conv engine's GPU backend for benchmarks and tests
 * (not part of include/ws_conv.h). */
#ifndef WS_CUDA_GPU_CONV_INTERNAL_H
#define WS_CUDA_GPU_CONV_INTERNAL_H

#include "ws_conv.h"

/* Kernel-only time of one call of plan c: the call is checked once as ws_gpu_conv_run
 * checks it, run `warmup` times untimed, then `iters` times, each between two CUDA events
 * on the plan's stream (no host work between the events). Fills the median and minimum,
 * microseconds per call. 0, or -1 with err. */
int ws_gpu_conv_bench(ws_gpu_conv *c, const ws_conv_args *a, int warmup, int iters,
                      double *median_us, double *min_us, ws_err *err);
/* The same timing for any call: enq(ctx, stream, err) enqueues one call on `stream` (g's
 * own), warmup times untimed, then iters times between two CUDA events; median and minimum,
 * microseconds. 0, or -1 with err. */
int ws_gpu_time_calls(ws_gpu *g, int (*enq)(void *ctx, uint64_t stream, ws_err *err), void *ctx,
                      int warmup, int iters, double *median_us, double *min_us, ws_err *err);

/* on: every call of c goes to the direct kernels (ptx_direct.h), also those the depthwise
 * kernels (ptx_dw.h) or the gemm kernel (ptx_gemm.h) would take; off (the default): they
 * take what they can. */
void ws_gpu_conv_force_direct(ws_gpu_conv *c, int on);

/* on: calls of c that the Hopper GEMM (ptx_hgemm.h) would take go to the gemm kernel of
 * ptx_gemm.h instead (benchmarks compare the two in one run); off (the default) */
void ws_gpu_conv_no_hgemm(ws_gpu_conv *c, int on);
/* the Hopper GEMM's grid where it runs its tile loop (the narrow tile, ptx_hgemm.h): at most
 * blocks blocks, each running tile ctaid.x and then the tiles it asks for; 0 (the default):
 * the blocks that fit the GPU at once (SMs x blocks an SM). The other tiles run a block a tile
 * whatever this says. Tests run a call's tiles on a few blocks against the default's bits;
 * benchmarks compare with a block a tile (a large value). dx's conv too */
void ws_gpu_conv_hgemm_blocks(ws_gpu_conv *c, unsigned blocks);
/* tests: 1 keeps the FFMA GEMM's sum in one part (no _split / _fin); the calls that split it */
void ws_gpu_conv_no_split(ws_gpu_conv *c, int on);
unsigned long ws_gpu_conv_split_calls(const ws_gpu_conv *c);
/* tests and benchmarks: 1 sends the calls that would take the FFMA GEMM's _slice entry (a
 * call of few blocks, gemm_slice in gpu_conv.c) to the sum in parts instead; the calls that
 * took it (ws_gpu_conv_no_split turns it off too: its sums are in slices) */
void ws_gpu_conv_no_slice(ws_gpu_conv *c, int on);
unsigned long ws_gpu_conv_slice_calls(const ws_gpu_conv *c);
/* benchmarks: 1 launches c's _slice entries plainly, not as programmatic dependent launches
 * (compute capability 9.0 and a driver with cuLaunchKernelEx: the blocks placed while the
 * stream's previous kernel ends) */
void ws_gpu_conv_no_pdl(ws_gpu_conv *c, int on);
/* benchmarks: the FFMA GEMM's sum of every call of c in z parts, whatever the call's size
 * (z 1: whole; at most one part a stage of r, within the parts' 256 MiB of scratch); 0 (the
 * default): gemm_parts' choice */
void ws_gpu_conv_parts(ws_gpu_conv *c, int z);
/* the FFMA GEMM's last tiles, past the call's last whole wave of blocks, summed in z parts
 * (gemm_tail in gpu_conv.c): 0 (the default) gemm_tail's choice, 1 never, z > 1 that many
 * (within its bounds) wherever gemm_tail would cut a tail; ws_gpu_conv_no_split turns it off
 * too. The calls that took it (also counted by ws_gpu_conv_split_calls). */
void ws_gpu_conv_tail_parts(ws_gpu_conv *c, int z);
unsigned long ws_gpu_conv_tail_calls(const ws_gpu_conv *c);

/* A plan of the same descriptor, kernels and weights as src, with scratch of its own (so
 * that the two can run on two streams at once), made without emitting, loading or uploading
 * anything (where src runs the Hopper GEMM's tile loop it allocates its own tile counter, 8
 * bytes, and zeroes it on the runtime's stream, waiting for it: not while that stream is
 * captured): the weights stay src's (read only), so src must outlive it. Forward plans made
 * with weights (not depthwise causal ones). NULL with err. */
ws_gpu_conv *ws_gpu_conv_clone(const ws_gpu_conv *src, ws_err *err);

/* 1 when a call of c runs the Hopper GEMM, 0 when not, -1 for a call ws_gpu_conv_run
 * would refuse */
int ws_gpu_conv_hgemm(const ws_gpu_conv *c, const ws_conv_args *a);

/* how many calls of c have launched the Hopper GEMM on c's own descriptor (what the tests hold
 * the dispatch to; calls through the columns are counted apart, below) */
unsigned long ws_gpu_conv_hgemm_calls(const ws_gpu_conv *c);
/* how many calls of c ran through the columns or padded channels (ptx_hcol.h: the inner plan's
 * Hopper GEMM) */
unsigned long ws_gpu_conv_hgemm_col_calls(const ws_gpu_conv *c);
/* how many of them read channel-first x in place (the "_mn" entry, ws_hgemm_mn_call) */
unsigned long ws_gpu_conv_hgemm_mn_calls(const ws_gpu_conv *c);
/* how many of them staged x by the "_prep8" entry (where ws_hgemm_prep8_call) */
unsigned long ws_gpu_conv_hgemm_prep8_calls(const ws_gpu_conv *c);
/* how many blocks of c's Hopper GEMM kernel an SM holds at once (the driver's occupancy),
 * or -1 without that kernel or that driver entry */
int ws_gpu_conv_hgemm_blocks_per_sm(const ws_gpu_conv *c);
/* BWD calls whose dx, dw or db took the GEMM passes (ptx_hbwd.h) */
unsigned long ws_gpu_conv_gbwd_calls(const ws_gpu_conv *c);
/* BWD calls whose dx went straight into NCL dx by the phased Hopper GEMM
 * (ws_hgemm_emit_phased: stride > 1, no X' and no "_u" pass) */
unsigned long ws_gpu_conv_phased_calls(const ws_gpu_conv *c);
/* on: a BWD plan's dx at stride > 1 goes through X' and "_u" even where the phased form
 * would take it (benchmarks compare the two in one run); off (the default) */
void ws_gpu_conv_no_phased(ws_gpu_conv *c, int on);

/* 1 when plans made on g now can take the Hopper GEMM: they emit for 9.0 and the driver
 * encodes tensor maps */
int ws_gpu_hgemm_available(const ws_gpu *g);

/* which kernels a call of c would run: 1 the depthwise ones, 2 a gemm one (ptx_gemm.h or
 * the Hopper GEMM), 3 the
 * depthwise causal ones of packed sequences and carried states (ptx_dws.h), 0 the direct
 * ones, -1 a call ws_gpu_conv_run would refuse */
int ws_gpu_conv_kernel(const ws_gpu_conv *c, const ws_conv_args *a);

/* Plans made on g from now on emit their PTX for compute capability major.minor instead of
 * the device's (at most the device's: the driver compiles older PTX forward), e.g. 8.0 on
 * an H100 to run the mma.sync GEMM that the device itself would replace by wgmma. 0, or -1
 * for a capability above the device's or below 8.0. */
int ws_gpu_emit_cc(ws_gpu *g, int major, int minor);

/* A stream of g's context for tests and benchmarks (ws_gpu_conv_enqueue's `stream`, as a
 * caller's library would make one): non-blocking; wait: returns when everything enqueued on
 * it has finished. 0, or -1 with err. */
int ws_gpu_user_stream_new(ws_gpu *g, uint64_t *stream, ws_err *err);
int ws_gpu_user_stream_wait(ws_gpu *g, uint64_t stream, ws_err *err);
void ws_gpu_user_stream_free(ws_gpu *g, uint64_t stream);

/* The kernels plan c loaded, one line each: entry name, block threads ("-" where the call
 * picks them), registers and local (stack, spill) bytes as the driver reports them; then
 * the columns' "_col" and "_wpad" entries and the kernels of their inner plan (a conv through
 * its columns, ptx_hcol.h), and those of its dx plan (a dense BWD plan's). The depthwise causal module's entries
 * (gpu_dws.c) are not listed. Writes at most cap bytes into buf (NUL-terminated, cut short
 * when full); returns the number of lines. */
int ws_gpu_conv_report(const ws_gpu_conv *c, char *buf, size_t cap);

/* For the fused pair (gpu_pair.c): the packed weights (ws_gemm_pack_weights) a call of c with
 * w and b would read (w NULL: the plan's; else w prepared on `stream`, 0 for g's own), and
 * its bias (0: none). 0, or -1 with err. */
int ws_gpu_conv_packed(ws_gpu_conv *c, const void *w, const float *b, uint64_t stream, uint64_t *pw,
                       uint64_t *pb, ws_err *err);
/* A device buffer (*buf of *cap bytes) grown to at least `bytes`, g's context current: the
 * old one freed after `stream` (a CUstream) has finished with it. 0, or -1 with err. */
int ws_gpu_scratch(ws_gpu *g, uint64_t *buf, size_t *cap, size_t bytes, uint64_t stream, ws_err *err);
/* a 3-D tensor map (128 bytes at map) over addr of the driver's dtype: dims, byte strides of
 * dims 1 and 2, box, the 64- or 128-byte swizzle (swizzle 64 or 128), zeros out of range.
 * 0, or -1 with err */
int ws_gpu_tmap3(ws_gpu *g, void *map, int dtype, uint64_t addr, const uint64_t dim[3],
                 const uint64_t stride[2], const uint32_t box[3], int swizzle, ws_err *err);

/* The fused pair's hooks: which calls run fused (mode 0, the default: those the fused kernel
 * fits where C_mid >= WS_HPAIR_MIN_MID, where it was measured to pay; 1: every call it fits;
 * -1: none, the two calls); how many calls ran fused; its kernel's variant (cluster 1 or 2, weight stages of 32 or 64
 * channels; reloads the module; 0, or -1 with err); kernel-only time as ws_gpu_conv_bench */
void ws_gpu_conv_pair_fuse(ws_gpu_conv_pair *p, int mode);
unsigned long ws_gpu_conv_pair_fused_calls(const ws_gpu_conv_pair *p);
int ws_gpu_conv_pair_variant(ws_gpu_conv_pair *p, int cl, int bk, ws_err *err);
int ws_gpu_conv_pair_bench(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, int warmup, int iters,
                           double *median_us, double *min_us, ws_err *err);

#endif

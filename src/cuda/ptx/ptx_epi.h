/* ptx_epi.h - the conv engine's forward epilogue as one PTX emit helper, used by every
 * forward kernel (direct, depthwise, the GEMM's FFMA and mma kernels).
 *
 * For n values v[i] (float32 accumulators) of consecutive elements of y, at channels whose
 * bias is bias[i * bias_stride], ws_ptx_epi_emit writes (pseudo-C):
 *
 *   for (i < n) {
 *       v[i] = src[i] + bias[i * bias_stride];      when bias (under bias_if when named)
 *       v[0] = src[0] + *(float *)bias_at;           or when bias_at (n 1): loaded and added
 *                                                    under a branch on bias_if
 *       v[i] = act(v[i]);                            ptx_act.h's table
 *   }
 *   if (add_if) v[i] += (float)add[i], i < n;        read in y_type at add.at
 *   y[i] = (y_type)v[i], i < n;                      stored at y.at, rounded to nearest even
 *
 * n 1: one element, ws_ptx_load / ws_ptx_store (the caller branches around an element out
 * of range); or, with the predicate in named, branch-free: the add read (into a zeroed
 * register) under in && add_if and the store under in, so that a run of elements is one
 * block the assembler can schedule (the Hopper GEMM's epilogue). n 2, 4 or 8: one vector access each for add and y (ws_ptx_vec_load /
 * ws_ptx_vec_store), both under the predicate in (the depthwise kernels).
 * An address is a register at, or formed where it is used as
 *   at = base + index * scale                        (mad.lo.u64; when index is named)
 * in a fresh register when at is not named: the add's inside the add_if branch (no address
 * arithmetic without an add).
 * Tested through the kernels that use it (tests/test_gpu_conv.c: ptxas for every module,
 * on the GPU against the CPU engine).
 */
#ifndef WS_CUDA_PTX_EPI_H
#define WS_CUDA_PTX_EPI_H

#include "ptx_act.h"
#include "ptx_emit.h"
#include "ws_conv.h"

/* an address: at, or at = base + index * scale formed at its use (index named) */
typedef struct {
    preg at, index, base;
    long long scale;
} ws_ptx_addr;

typedef struct {
    ws_act act;
    ws_dtype y_type;
    int n;              /* values: 1, or a vector of 2, 4, 8 */
    preg *v;            /* v[0..n-1], float32: the values stored */
    const preg *src;    /* float32 sums, src[i] + bias -> v[i]; NULL: v itself */
    const preg *bias;   /* float32 bias[i * bias_stride] (0 where absent, or bias_if);
                         * NULL: none, or bias_at */
    int bias_stride;
    ws_ptx_addr bias_at; /* n 1, bias NULL: b[o]'s address (at or index named), the float32
                          * read and added under a branch on bias_if (which it needs) */
    preg bias_if;       /* named: the bias added only where it holds */
    preg add_if;        /* named: add given */
    const preg *add_v;  /* the add's n values already read (float32), added where add_if holds
                         * (no branch; n 1 with in); NULL: read at add */
    ws_ptx_addr add, y;
    preg in;            /* n > 1: the vector's add load and y store under it; n 1: the
                         * element's, with no branch */
} ws_ptx_epi;

/* the epilogue above into b: bias, act, add, store; a misuse (n, or bias_at with bias
 * registers or without bias_if) fails b (ptx_emit.h's sticky error) */
void ws_ptx_epi_emit(ptx_buf *b, const ws_ptx_epi *e);

#endif

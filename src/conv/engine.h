/* engine.h - internals of the conv engine's CPU backend (include/ws_conv.h is the contract).
 *
 * Dims as in ws_conv.h: N, C_in, C_out, G, Cg = C_in / G, Cog = C_out / G, K, S, D,
 * P_L, P_R, T_in, T_out. Weights inside a plan are float32 [C_out][Cg][K]:
 *   w[(o*Cg + j)*K + k]
 * Files: desc.c (validation, T_out), act.c (activations and their derivatives),
 * cpu.c (plans), cpu_direct.c (the direct kernels, every descriptor), cpu_dw_states.c
 * (packed sequences and carried state).
 * Tested by tests/test_engine.c and tests/test_engine_states.c.
 */
#ifndef WS_CONV_ENGINE_H
#define WS_CONV_ENGINE_H

#include "common.h"
#include "ws_conv.h"

struct ws_conv {
    ws_conv_desc d;
    float *w;      /* [C_out][Cg][K] float32, or NULL: given per call */
    float *b;      /* [C_out] or NULL */
    int n_threads; /* >= 1 */
    struct ws_rowconv *rc; /* dense FWD with the plan's w and b (cpu_dense.c), or NULL */
    struct ws_gpack *gp;   /* grouped FWD with the plan's w and b (cpu_dense.c), or NULL */
};

/* T_out in long long (no overflow), or 0 when t_in is too short. */
long long ws_conv_out_len_ll(const ws_conv_desc *d, long long t_in);

/* Validates a call against a checked descriptor; has_w / has_b: the plan holds them.
 * Fills *t_out. 0, or -1 with one line naming the argument. */
int ws_conv_check_args(const ws_conv_desc *d, const ws_conv_args *a, int has_w, int *t_out,
                       ws_err *err);

/* pair.c: a pair call a split into its two calls (ws_conv_pair_args): a1 (x into h) and a2
 * (h into y), both checked (has_w1 / has_w2: the plans hold weights), h a placeholder the
 * caller replaces; *t_mid, *t_out. 0, or -1 with err "<fn>: conv N: ..." */
int ws_conv_pair_split(const ws_conv_desc *d1, const ws_conv_desc *d2, int has_w1, int has_w2,
                       const ws_conv_pair_args *a, void *h, ws_conv_args *a1, ws_conv_args *a2,
                       int *t_mid, int *t_out, const char *fn, ws_err *err);

/* act.c: v[i] = f(v[i] + *bias) (bias NULL: none). */
void ws_act_row(float *v, int n, const float *bias, ws_act act);

/* gelu.c: g[j] *= f'(z[j]) for j < n (NONE: unchanged), vectorised; g and z must not
 * overlap. A NaN that GELU's or SILU's gradient gives is the quiet NaN 0x7fc00000. */
void ws_act_grad_rows(float *g, const float *z, int n, ws_act act);

/* Element loads and stores in a storage type (f16/bf16 stores round to nearest even). */
static inline float ws_ld(const void *p, ws_dtype t, size_t i)
{
    if (t == WS_F32)
        return ((const float *)p)[i];
    if (t == WS_F16)
        return ws_f16_to_f32(((const uint16_t *)p)[i]);
    return ws_bf16_to_f32(((const uint16_t *)p)[i]);
}

static inline void ws_st(void *p, ws_dtype t, size_t i, float v)
{
    if (t == WS_F32)
        ((float *)p)[i] = v;
    else if (t == WS_F16)
        ((uint16_t *)p)[i] = ws_f32_to_f16(v);
    else
        ((uint16_t *)p)[i] = ws_f32_to_bf16(v);
}

static inline size_t ws_dtype_size(ws_dtype t)
{
    return t == WS_F32 ? 4 : 2;
}

/* dst[i] = src[base + i*stride] (i < n) converted from t; and the store, rounding to nearest even */
void ws_conv_ld_row(float *dst, const void *src, ws_dtype t, size_t base, size_t stride, long long n);
void ws_conv_st_row(void *dst, ws_dtype t, size_t base, size_t stride, const float *v, long long n);

/* cpu_dense.c, cpu_dense_bwd.c: groups 1 as shifted-row sgemm (conv.c). ws_conv_dense_ok:
 * the descriptor takes this path; ws_conv_dense_new: the packed weights (w float32
 * [C_out][C_in][K], b or NULL; act for FWD, NONE for BWD: z), NULL when out of memory;
 * ws_conv_dense_fwd / _bwd: 0, -1 (out of memory), or 1 (too large a padded copy: use the
 * direct kernel); nothing written unless 0. ws_conv_dense_fill_xp: item n of x, pre
 * applied, into rows [P_L, P_L + T_in) of the time-major xp[R][C_in] (other rows untouched);
 * tmp holds T_in floats. */
struct ws_rowconv;
int ws_conv_dense_ok(const ws_conv_desc *d);
struct ws_rowconv *ws_conv_dense_new(const ws_conv_desc *d, const float *w, const float *b);
int ws_conv_dense_fwd(const ws_conv_desc *d, const struct ws_rowconv *rc, const ws_conv_args *a,
                      int t_out, int n_threads, ws_err *err);
int ws_conv_dense_bwd(const ws_conv_desc *d, const struct ws_rowconv *rc, const ws_conv_args *a,
                      int t_out, const float *w, int n_threads, ws_err *err);
int ws_conv_dense_fwd_rows(const ws_conv_desc *d, const struct ws_rowconv *rc,
                           const ws_conv_args *a, int t_out, int t0, int nt, int n_threads,
                           ws_err *err);
/* y[t][ldy] for t < t_out by rowconv over fixed row blocks (bits independent of threads) */
void ws_conv_dense_rows(const struct ws_rowconv *rc, const float *xp, int t_out, float *y, int ldy,
                        const float *add, int n_threads);
void ws_conv_dense_fill_xp(const ws_conv_desc *d, const ws_conv_args *a, int n, long long R,
                           float *xp, float *tmp);

/* cpu_dense.c: grouped FWD (1 < G, not depthwise, Cg and Cog >= 16) as one sgemm
 * per group and tap over the dense path's staged blocks. ws_conv_grouped_new packs w
 * (float32 [C_out][Cg][K]) and b (or NULL), NULL when out of memory; ws_conv_grouped_fwd
 * returns as ws_conv_dense_fwd (1: use the direct kernel). */
struct ws_gpack;
int ws_conv_grouped_ok(const ws_conv_desc *d);
struct ws_gpack *ws_conv_grouped_new(const ws_conv_desc *d, const float *w, const float *b);
void ws_conv_grouped_free(struct ws_gpack *p);
int ws_conv_grouped_fwd(const ws_conv_desc *d, const struct ws_gpack *gp, const ws_conv_args *a,
                        int t_out, int n_threads, ws_err *err);

/* cpu_dw.c: depthwise FWD and BWD with x and y NLC, vectorised over channels. */
int ws_conv_dw_nlc_ok(const ws_conv_desc *d);
int ws_conv_dw_nlc_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err);
int ws_conv_dw_nlc_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err);

/* cpu_dw_ncl.c: depthwise FWD and BWD with x and y NCL, stride 1, K <= 8: one pass per row. */
int ws_conv_dw_ncl_ok(const ws_conv_desc *d);
int ws_conv_dw_ncl_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err);
int ws_conv_dw_ncl_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err);

/* cpu_dw_states.c: calls with seq_idx, initial_states, final_states or dinitial_states
 * (depthwise causal descriptors; the arguments already checked by ws_conv_check_args), FWD
 * and BWD, any layouts and types. 0, or -1 (out of memory: nothing written). */
int ws_conv_dw_states_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                          const float *b, int n_threads, ws_err *err);
int ws_conv_dw_states_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                          const float *b, int n_threads, ws_err *err);

/* cpu_direct.c: the direct kernels. w float32 [C_out][Cg][K], b [C_out] or NULL; the
 * arguments already checked. 0, or -1 (out of memory: nothing written). */
int ws_conv_direct_fwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err);
int ws_conv_direct_bwd(const ws_conv_desc *d, const ws_conv_args *a, int t_out, const float *w,
                       const float *b, int n_threads, ws_err *err);


/* cpu.c: output times [t0, t0 + nt) of a dense FWD plan (groups 1, its own w and b) only:
 * y and add indexed as for the whole output, y's other times untouched. A row's bits are
 * those ws_conv_run gives it, for any thread count (with minimal filtering a group of rows the range cuts is computed
 * whole, ws_conv_row_group). For clients that know parts of an
 * output are copies (whisper/stem.c: the equal rows of a padded window). 0; 1 when this
 * plan cannot compute part of an output (not the dense FWD path with the plan's w and b, or
 * too large a staged block: run it whole with ws_conv_run); -1 with a message (a range
 * outside [0, T_out), out of memory). Nothing written unless 0. */
int ws_conv_run_rows(ws_conv *c, const ws_conv_args *a, int t0, int nt, ws_err *err);
/* the same on n_threads threads instead of the plan's (1: the calling thread alone, so that
 * several threads can each run their own rows of one plan at once); the same bits */
int ws_conv_run_rows_threads(ws_conv *c, const ws_conv_args *a, int t0, int nt, int n_threads,
                             ws_err *err);

/* R, the rows of a group where the plan computes output rows by minimal filtering (conv.h:
 * rows [R*j, R*j + R) for the whole groups below T_out - T_out % R); 1 where it does not.
 * A row's bits depend on its place in its group: rows whose inputs are equal have equal
 * bits where their groups' inputs are all equal. */
int ws_conv_row_group(const ws_conv *c);

/* t_in and T_out stay this far below INT_MAX, so that block ends (t0 + block, blocks
 * of at most 4096 times) never overflow int. */
#define WS_CONV_T_MARGIN 8192

#endif

/* ptx_act.h - the conv engine's one activation table and element conversions, as PTX
 * emit helpers shared by every GPU conv kernel (direct, depthwise).
 *
 *   ws_ptx_load      v = (float)*(type *)addr          f32, f16 (cvt), bf16 (the top half)
 *   ws_ptx_store     *(type *)addr = v                 rounded to nearest even
 *   ws_ptx_vec_*     the same for vectors of V (2, 4, 8) elements: one v2 / v4 access, 16-bit
 *                    types as f16x2 / bf16x2 pairs in b32 registers (the depthwise kernels)
 *   ws_ptx_act       v = act(v)                        NONE, RELU, GELU (exact erf,
 *                                                      gelu_ptx.h), SILU
 *   ws_ptx_act_grad  g *= act'(z)                      the backward's gradient through act
 * and the type and act names every kernel's name uses (parameters: ptx_params.h).
 *
 * The forms (pseudo-C; e = ex2.approx.ftz):
 *   RELU  max(v, 0);                 grad  z > 0 ? g : 0
 *   GELU  v * Phi(v) (gelu_ptx.h);   grad  Phi(z) + z phi(z), Phi = gelu(z) / z (0.5 for
 *         |z| < 2^-60), phi = e(-z^2 log2(e) / 2) / sqrt(2 pi)
 *   SILU  v * rcp(1 + e(-v log2 e));  grad  s + z s (1 - s) with s, 1 - s from
 *         e = e(-|z| log2 e), r = rcp(1 + e): r, e*r or e*r, r by the sign of z (no
 *         cancellation; act.c's form). rcp is rcp.approx.ftz (1 ulp; IEEE division costs
 *         ~10 instructions more per element, which the memory-bound depthwise kernels
 *         feel); with ex2.approx's 2 ulp, SILU and its grad are within ~4 ulp of float32.
 * Tested through the kernels that use them (tests/test_gpu_conv.c).
 */
#ifndef WS_CUDA_PTX_ACT_H
#define WS_CUDA_PTX_ACT_H

#include "ptx_emit.h"
#include "ws_conv.h"

#define WS_NEG_LOG2E (-1.44269504088896341f)
#define WS_LOG2E_HALF_NEG (-0.72134752044448170f) /* -log2(e) / 2 */
#define WS_INV_SQRT_2PI 0.39894228040143268f
#define WS_GELU_TINY_Z 0x1p-60f /* below, Phi(z) = 0.5 in float32 and gelu(z)/z loses bits */

/* names in kernel names: "f32" / "f16" / "bf16"; "none" / "relu" / "gelu" / "silu" */
const char *ws_ptx_type_name(ws_dtype t);
const char *ws_ptx_act_name(ws_act a);

/* nc: through the read-only (non-coherent) path */
void ws_ptx_load(ptx_buf *b, preg v, preg addr, ws_dtype t, int nc);
/* v = the element of type t at addr as float32 where p holds, else 0 (through the read-only path) */
void ws_ptx_load_pred(ptx_buf *b, preg v, preg addr, preg p, ws_dtype t);
void ws_ptx_store(ptx_buf *b, preg addr, preg v, ws_dtype t);
void ws_ptx_act(ptx_buf *b, preg v, ws_act a);

/* one vector of V elements as loaded: float32 registers, or 16-bit pairs in b32 registers */
typedef struct {
    preg r[8];
    int nr;
    ws_dtype t;
} ws_ptx_vec;

/* V fresh elements of type t (V registers, or V / 2 pairs) */
ws_ptx_vec ws_ptx_vec_new(ptx_buf *b, ws_dtype t, int V);
/* "{r0, r1, ...}" into out */
void ws_ptx_vec_list(const ws_ptx_vec *v, char *out, size_t cap);
/* v = pred ? *(vector *)addr : 0  (read-only path) */
void ws_ptx_vec_load(ptx_buf *b, const ws_ptx_vec *v, preg addr, preg pred);
/* element e of v as float32: a register of v itself (f32) or a fresh one */
preg ws_ptx_vec_elem(ptx_buf *b, const ws_ptx_vec *v, int e);
/* if (pred) *(vector of type t *)addr = f[0..V-1], rounded to nearest even */
void ws_ptx_vec_store(ptx_buf *b, preg addr, const preg *f, int V, ws_dtype t, preg pred);
void ws_ptx_act_grad(ptx_buf *b, ws_act a, preg g, preg z);

#endif

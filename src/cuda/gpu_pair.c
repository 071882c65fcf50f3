/* gpu_pair.c - the fused pair on the GPU (include/ws_conv.h, ws_gpu_conv_pair_*): two plans
 * (gpu_conv.c), which give the packed weights and run the calls the fused kernel does not
 * take, and the fused kernel (ptx_hpair.h) where ws_hpair_fits admits the pair.
 * Tested by tests/test_gpu_pair.c against the CPU pair and the two calls.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv/engine.h"
#include "driver.h"
#include "gpu_conv_internal.h"
#include "gpu_runtime.h"
#include "ptx/ptx_hpair.h"
#include "ptx/ptx_params.h"

struct ws_gpu_conv_pair {
    ws_gpu *g;
    ws_conv_desc d1, d2;
    ws_gpu_conv *c1, *c2;
    int has_w1, has_w2;
    wscu_module mod;
    wscu_function fn; /* the fused kernel, or 0 */
    ws_hpair_geom q;
    int fuse; /* ws_gpu_conv_pair_fuse: 0 where it pays (WS_HPAIR_MIN_MID), 1 wherever it fits, -1 never */
    unsigned long fused_calls;
    wscu_devptr h; /* the two calls' h */
    size_t h_bytes;
};

void ws_gpu_conv_pair_free(ws_gpu_conv_pair *p)
{
    if (!p)
        return;
    ws_gpu_conv_free(p->c1);
    ws_gpu_conv_free(p->c2);
    if (p->h) {
        p->g->cu.CtxSetCurrent(p->g->ctx);
        p->g->cu.MemFree(p->h);
    }
    free(p);
}

/* the fused kernel of cluster size cl and weight stages of bk channels, loaded */
static int load(ws_gpu_conv_pair *p, int cl, int bk, ws_err *err)
{
    ws_gpu *g = p->g;
    ws_cu *cu = &g->cu;
    char name[WS_HPAIR_NAME_MAX];
    ws_hpair_name(&p->d1, &p->d2, cl, bk, name);
    char *ptx = ws_hpair_emit(&p->d1, &p->d2, cl, bk, err);
    if (!ptx)
        return -1;
    wscu_module mod = NULL;
    const int rc = ws_gpu_module(g, name, ptx, &mod, err);
    free(ptx);
    if (rc)
        return -1;
    ws_hpair_geom q;
    wscu_function fn = 0;
    if (ws_hpair_geom_of(&p->d1, &p->d2, cl, bk, &q))
        return ws_errf(err, "ws_gpu_conv_pair_new: %s does not fit", name);
    CU_TRY(cu, ModuleGetFunction(&fn, mod, name), err);
    CU_TRY(cu, FuncSetAttribute(fn, WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, q.smem), err);
    p->mod = mod, p->fn = fn, p->q = q;
    return 0;
cleanup:
    return -1;
}

ws_gpu_conv_pair *ws_gpu_conv_pair_new(ws_gpu *g, const ws_conv_desc *d1, const void *w1,
                                       const float *b1, const ws_conv_desc *d2, const void *w2,
                                       const float *b2, ws_err *err)
{
    if (!g)
        return ws_errf(err, "ws_gpu_conv_pair_new: g is NULL"), NULL;
    if (ws_conv_pair_check(d1, d2, err))
        return NULL;
    ws_gpu_conv_pair *p = calloc(1, sizeof *p);
    if (!p)
        return ws_errf(err, "ws_gpu_conv_pair_new: out of memory"), NULL;
    p->g = g, p->d1 = *d1, p->d2 = *d2, p->has_w1 = w1 != NULL, p->has_w2 = w2 != NULL;
    if (!(p->c1 = ws_gpu_conv_new(g, d1, w1, b1, err)) || !(p->c2 = ws_gpu_conv_new(g, d2, w2, b2, err)))
        goto fail;
    if (g->cu.TensorMapEncodeTiled && ws_hpair_fits(d1, d2, g->emit_major, g->emit_minor) &&
        load(p, WS_HPAIR_CL, WS_HPAIR_BK, err))
        goto fail;
    return p;
fail:
    ws_gpu_conv_pair_free(p);
    return NULL;
}

void ws_gpu_conv_pair_fuse(ws_gpu_conv_pair *p, int mode)
{
    if (p)
        p->fuse = mode;
}

unsigned long ws_gpu_conv_pair_fused_calls(const ws_gpu_conv_pair *p)
{
    return p ? p->fused_calls : 0;
}

int ws_gpu_conv_pair_variant(ws_gpu_conv_pair *p, int cl, int bk, ws_err *err)
{
    if (!p || !p->fn || (cl != 1 && cl != 2) || (bk != 32 && bk != 64))
        return ws_errf(err, "ws_gpu_conv_pair_variant: no fused kernel, or cluster %d / stage %d not 1, 2 / 32, 64",
                       cl, bk);
    if (p->q.cl == cl && p->q.bk == bk)
        return 0;
    CU_TRY(&p->g->cu, CtxSetCurrent(p->g->ctx), err);
    return load(p, cl, bk, err);
cleanup:
    return -1;
}

/* the fused kernel's launch for a checked call, or 1 when the call does not fit it */
static int launch_fused(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, int t_out, wscu_stream st, ws_err *err)
{
    const ws_conv_desc *d1 = &p->d1;
    const ws_hpair_geom *q = &p->q;
    if (!p->fn || p->fuse < 0 || (p->fuse == 0 && q->m1 < WS_HPAIR_MIN_MID))
        return 1;
    if (d1->x_layout == WS_NLC && (uintptr_t)a->x % 16)
        return 1;
    {   /* y over x (an in-place residual): blocks read their neighbours' x while others write
         * y; the two calls read x whole before writing y */
        const uintptr_t x0 = (uintptr_t)a->x, y0 = (uintptr_t)a->y;
        const uintptr_t xe = x0 + (uintptr_t)a->n * (uintptr_t)d1->c_in * (uintptr_t)a->t_in *
                                      (uintptr_t)(d1->x_type == WS_F32 ? 4 : 2);
        const uintptr_t ye = y0 + (uintptr_t)a->n * (uintptr_t)p->d2.c_out * (uintptr_t)t_out *
                                      (uintptr_t)(p->d2.y_type == WS_F32 ? 4 : 2);
        if (x0 < ye && y0 < xe)
            return 1;
    }
    if ((long long)t_out + d1->pad_l + q->halo + 64 > INT_MAX / 2 || (long long)a->t_in > INT_MAX / 2)
        return 1;
    const int lgtb = ws_hpair_lgtb(q, t_out), nb = WS_HPAIR_P >> lgtb;
    const long long ntt = ((long long)t_out + (1 << lgtb) - 1) >> lgtb, ng = ((long long)a->n + nb - 1) / nb;
    long long blocks = ntt * ng;
    blocks = (blocks + q->cl - 1) / q->cl * q->cl;
    if (blocks > INT_MAX || ng * nb > INT_MAX)
        return 1;
    uint64_t pw1 = 0, pb1 = 0, pw2 = 0, pb2 = 0;
    if (ws_gpu_conv_packed(p->c1, a->w1, a->b1, (uint64_t)(uintptr_t)st, &pw1, &pb1, err) ||
        ws_gpu_conv_packed(p->c2, a->w2, a->b2, (uint64_t)(uintptr_t)st, &pw2, &pb2, err))
        return -1;
    const int dt = d1->math == WS_MATH_BF16 ? WS_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                            : WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    wscu_tensor_map t1, t2;
    {
        const uint64_t C = (uint64_t)d1->c_in, K = (uint64_t)d1->k;
        const uint64_t dim[3] = { C, K, (uint64_t)q->m1 }, str[2] = { C * 2, C * K * 2 };
        const int nbx = q->m1 / q->cl > 256 ? 2 : 1;
        const uint32_t box[3] = { (uint32_t)q->bk, 1, (uint32_t)(q->m1 / (q->cl * nbx)) };
        if (ws_gpu_tmap3(p->g, &t1, dt, pw1, dim, str, box, 2 * q->bk, err))
            return -1;
    }
    {
        const uint64_t C = (uint64_t)q->m1;
        const uint64_t dim[3] = { C, 1, (uint64_t)q->m2 }, str[2] = { C * 2, C * 2 };
        const int nbx = q->m2 / q->cl > 256 ? 2 : 1;
        const uint32_t box[3] = { (uint32_t)q->bk, 1, (uint32_t)(q->m2 / (q->cl * nbx)) };
        if (ws_gpu_tmap3(p->g, &t2, dt, pw2, dim, str, box, 2 * q->bk, err))
            return -1;
    }
    uint64_t px = (uint64_t)(uintptr_t)a->x, padd = (uint64_t)(uintptr_t)a->add, py = (uint64_t)(uintptr_t)a->y;
    uint64_t abs = a->add ? (uint64_t)a->add_batch_stride : 0;
    uint32_t n32 = (uint32_t)a->n, tin = (uint32_t)a->t_in, tout = (uint32_t)t_out, ntt32 = (uint32_t)ntt;
    uint32_t lg = (uint32_t)lgtb;
    ws_kargs k;
    ws_kargs_init(&k, WS_PARAMS_HPAIR);
    WS_KARG(&k, WS_PR_T1, t1), WS_KARG(&k, WS_PR_T2, t2), WS_KARG(&k, WS_PR_X, px);
    WS_KARG(&k, WS_PR_B1, pb1), WS_KARG(&k, WS_PR_B2, pb2), WS_KARG(&k, WS_PR_ADD, padd);
    WS_KARG(&k, WS_PR_Y, py), WS_KARG(&k, WS_PR_N, n32), WS_KARG(&k, WS_PR_T_IN, tin);
    WS_KARG(&k, WS_PR_T_OUT, tout), WS_KARG(&k, WS_PR_NTT, ntt32), WS_KARG(&k, WS_PR_LGTB, lg);
    WS_KARG(&k, WS_PR_ADD_BS, abs);
    if (ws_kargs_check(&k, "ws_gpu_conv_pair_run", err))
        return -1;
    ws_cu *cu = &p->g->cu;
    CU_TRY(cu, LaunchKernel(p->fn, (unsigned)blocks, 1, 1, WS_HPAIR_THREADS, 1, 1, (unsigned)q->smem, st, k.v, NULL),
           err);
    p->fused_calls++;
    return 0;
cleanup:
    return -1;
}

/* the call, checked, enqueued on st with the context current */
static int launch(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, wscu_stream st, const char *fn, ws_err *err)
{
    ws_conv_args a1, a2;
    int t_mid = 0, t_out = 0;
    static char placeholder;
    if (!p)
        return ws_errf(err, "%s: plan is NULL", fn);
    if (ws_conv_pair_split(&p->d1, &p->d2, p->has_w1, p->has_w2, a, &placeholder, &a1, &a2, &t_mid, &t_out, fn,
                           err))
        return -1;
    const int rc = launch_fused(p, a, t_out, st, err);
    if (rc <= 0)
        return rc;
    const size_t es = p->d1.y_type == WS_F32 ? 4 : 2;
    const size_t bytes = (size_t)a->n * (size_t)p->d1.c_out * (size_t)t_mid * es;
    if (ws_gpu_scratch(p->g, &p->h, &p->h_bytes, bytes, (uint64_t)(uintptr_t)st, err))
        return -1;
    a1.y = (void *)(uintptr_t)p->h, a2.x = (const void *)(uintptr_t)p->h;
    if (ws_gpu_conv_enqueue(p->c1, &a1, (uint64_t)(uintptr_t)st, err) ||
        ws_gpu_conv_enqueue(p->c2, &a2, (uint64_t)(uintptr_t)st, err))
        return -1;
    return 0;
}

int ws_gpu_conv_pair_run(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, ws_err *err)
{
    if (!p)
        return ws_errf(err, "ws_gpu_conv_pair_run: plan is NULL");
    ws_cu *cu = &p->g->cu;
    CU_TRY(cu, CtxSetCurrent(p->g->ctx), err);
    if (launch(p, a, p->g->stream, "ws_gpu_conv_pair_run", err))
        return -1;
    CU_TRY(cu, StreamSynchronize(p->g->stream), err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_conv_pair_enqueue(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, uint64_t stream, ws_err *err)
{
    if (!p)
        return ws_errf(err, "ws_gpu_conv_pair_enqueue: plan is NULL");
    ws_cu *cu = &p->g->cu;
    wscu_context was = NULL;
    if (cu->CtxGetCurrent(&was) != 0 || was != p->g->ctx) {
        if (cu->CtxSetCurrent(p->g->ctx) != 0)
            return ws_errf(err, "ws_gpu_conv_pair_enqueue: cuCtxSetCurrent failed");
    }
    const int rc = launch(p, a, stream ? (wscu_stream)(uintptr_t)stream : p->g->stream, "ws_gpu_conv_pair_enqueue",
                          err);
    if (was != p->g->ctx)
        cu->CtxSetCurrent(was);
    return rc;
}

typedef struct {
    ws_gpu_conv_pair *p;
    const ws_conv_pair_args *a;
} bench_call;

static int bench_launch(void *ctx, uint64_t stream, ws_err *err)
{
    const bench_call *b = ctx;
    return launch(b->p, b->a, (wscu_stream)(uintptr_t)stream, "ws_gpu_conv_pair_bench", err);
}

int ws_gpu_conv_pair_bench(ws_gpu_conv_pair *p, const ws_conv_pair_args *a, int warmup, int iters,
                           double *median_us, double *min_us, ws_err *err)
{
    if (!p)
        return ws_errf(err, "ws_gpu_conv_pair_bench: plan is NULL");
    bench_call b = { p, a };
    return ws_gpu_time_calls(p->g, bench_launch, &b, warmup, iters, median_us, min_us, err);
}

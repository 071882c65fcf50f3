/* cpu.c - the conv engine's CPU plans: ws_conv_new / ws_conv_run / ws_conv_free.
 *
 * A plan holds the checked descriptor, w converted to float32 [C_out][Cg][K]
 * (w[(o*Cg + j)*K + k]) and b [C_out], both copies, and the thread count. It is never
 * written after ws_conv_new: a run allocates its own scratch, so runs on one plan may
 * overlap. Dense (groups 1, C_in*K >= 8, C_out >= 4) FWD and BWD run as shifted-row
 * sgemm (cpu_dense.c, cpu_dense_bwd.c, weights packed here); grouped FWD (1 < G, not
 * depthwise) as one sgemm per group and tap (cpu_dense.c, packed here too); depthwise FWD and BWD with NLC x and y
 * vectorised over channels (cpu_dw.c), with NCL x and y, stride 1 and K <= 8 one pass per
 * row (cpu_dw_ncl.c); every other descriptor ws_conv_check accepts runs on
 * the direct kernels (cpu_direct.c). A call with packed sequences or carried state
 * (seq_idx, initial_states, final_states, dinitial_states; depthwise causal only) runs on
 * cpu_dw_states.c, which forms each output with the depthwise kernels' float32
 * operations. The CPU forms products in float32 whatever d->math says.
 * Tested by tests/test_engine.c and tests/test_engine_states.c.
 */
#include <stdlib.h>
#include <string.h>

#include "conv.h"
#include "engine.h"

/* w [C_out][Cg][K] in type t -> float32; NULL when out of memory */
static float *weights_f32(const ws_conv_desc *d, const void *w)
{
    size_t nw = (size_t)d->c_out * (size_t)(d->c_in / d->groups) * (size_t)d->k;
    float *f = malloc(nw * sizeof(float));
    if (!f)
        return NULL;
    for (size_t i = 0; i < nw; i++)
        f[i] = ws_ld(w, d->w_type, i);
    return f;
}

ws_conv *ws_conv_new(const ws_conv_desc *d, const void *w, const float *b, int n_threads,
                     ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    if (n_threads < 0)
        return ws_errf(err, "ws_conv_new: n_threads %d must be >= 0 (0: all CPUs)", n_threads),
               NULL;
    ws_conv *c = calloc(1, sizeof *c);
    if (!c)
        return ws_errf(err, "ws_conv_new: out of memory"), NULL;
    c->d = *d;
    c->n_threads = n_threads ? n_threads : ws_ncpu();
    if ((w && !(c->w = weights_f32(d, w))) ||
        (b && !(c->b = malloc((size_t)d->c_out * sizeof(float))))) {
        ws_conv_free(c);
        return ws_errf(err, "ws_conv_new: out of memory for weights (c_out %d, c_in %d, k %d)",
                       d->c_out, d->c_in, d->k),
               NULL;
    }
    if (b)
        memcpy(c->b, b, (size_t)d->c_out * sizeof(float));
    if (c->w && ws_conv_dense_ok(d) && !(c->rc = ws_conv_dense_new(d, c->w, c->b))) {
        ws_conv_free(c);
        return ws_errf(err, "ws_conv_new: out of memory for packed weights (c_out %d, c_in %d, k %d)",
                       d->c_out, d->c_in, d->k),
               NULL;
    }
    if (c->w && ws_conv_grouped_ok(d) && !(c->gp = ws_conv_grouped_new(d, c->w, c->b))) {
        ws_conv_free(c);
        return ws_errf(err, "ws_conv_new: out of memory for packed weights (c_out %d, c_in %d, k %d)",
                       d->c_out, d->c_in, d->k),
               NULL;
    }
    return c;
}

int ws_conv_run(ws_conv *c, const ws_conv_args *a, ws_err *err)
{
    if (!c)
        return ws_errf(err, "ws_conv_run: plan is NULL");
    const ws_conv_desc *d = &c->d;
    int t_out;
    if (ws_conv_check_args(d, a, c->w != NULL, &t_out, err))
        return -1;
    float *wtmp = NULL;
    const float *w = c->w;
    if (a->w) {
        if (!(wtmp = weights_f32(d, a->w)))
            return ws_errf(err, "ws_conv_run: out of memory for weights");
        w = wtmp;
    }
    const float *b = a->b ? a->b : c->b;
    if (a->seq_idx || a->initial_states || a->final_states || a->dinitial_states) {
        /* packed sequences and carried state: desc.c let them through for depthwise causal
         * descriptors only; one test per call, none in the kernels below */
        int r = d->op == WS_CONV_FWD ? ws_conv_dw_states_fwd(d, a, t_out, w, b, c->n_threads, err)
                                     : ws_conv_dw_states_bwd(d, a, t_out, w, b, c->n_threads, err);
        free(wtmp);
        return r;
    }
    if (ws_conv_dense_ok(d)) {
        /* the plan's packed weights, or this call's w / b packed now */
        ws_rowconv *tmp = NULL;
        const ws_rowconv *rc = c->rc;
        if (a->w || a->b || !rc) {
            if (!(tmp = ws_conv_dense_new(d, w, b))) {
                free(wtmp);
                return ws_errf(err, "ws_conv_run: out of memory for packed weights");
            }
            rc = tmp;
        }
        int r = d->op == WS_CONV_FWD ? ws_conv_dense_fwd(d, rc, a, t_out, c->n_threads, err)
                                     : ws_conv_dense_bwd(d, rc, a, t_out, w, c->n_threads, err);
        ws_rowconv_free(tmp);
        if (r <= 0) {
            free(wtmp);
            return r;
        }
        /* r > 0: too large for the padded copy; the direct kernel below */
    }
    if (ws_conv_grouped_ok(d)) {
        /* the plan's packed weights, or this call's w / b packed now */
        struct ws_gpack *tmp = NULL;
        const struct ws_gpack *gp = c->gp;
        if (a->w || a->b || !gp) {
            if (!(tmp = ws_conv_grouped_new(d, w, b))) {
                free(wtmp);
                return ws_errf(err, "ws_conv_run: out of memory for packed weights");
            }
            gp = tmp;
        }
        int r = ws_conv_grouped_fwd(d, gp, a, t_out, c->n_threads, err);
        ws_conv_grouped_free(tmp);
        if (r <= 0) {
            free(wtmp);
            return r;
        }
        /* r > 0: too large for the staged block; the direct kernel below */
    }
    if (ws_conv_dw_ncl_ok(d)) {
        int r = d->op == WS_CONV_FWD ? ws_conv_dw_ncl_fwd(d, a, t_out, w, b, c->n_threads, err)
                                     : ws_conv_dw_ncl_bwd(d, a, t_out, w, b, c->n_threads, err);
        free(wtmp);
        return r;
    }
    if (ws_conv_dw_nlc_ok(d)) {
        int r = d->op == WS_CONV_FWD ? ws_conv_dw_nlc_fwd(d, a, t_out, w, b, c->n_threads, err)
                                     : ws_conv_dw_nlc_bwd(d, a, t_out, w, b, c->n_threads, err);
        free(wtmp);
        return r;
    }
    int rc = d->op == WS_CONV_FWD ? ws_conv_direct_fwd(d, a, t_out, w, b, c->n_threads, err)
                                  : ws_conv_direct_bwd(d, a, t_out, w, b, c->n_threads, err);
    free(wtmp);
    return rc;
}

int ws_conv_run_rows(ws_conv *c, const ws_conv_args *a, int t0, int nt, ws_err *err)
{
    return ws_conv_run_rows_threads(c, a, t0, nt, c ? c->n_threads : 1, err);
}

int ws_conv_run_rows_threads(ws_conv *c, const ws_conv_args *a, int t0, int nt, int n_threads,
                             ws_err *err)
{
    if (!c)
        return ws_errf(err, "ws_conv_run_rows: plan is NULL");
    const ws_conv_desc *d = &c->d;
    int t_out;
    if (ws_conv_check_args(d, a, c->w != NULL, &t_out, err))
        return -1;
    if (t0 < 0 || nt < 0 || nt > t_out - t0)
        return ws_errf(err, "ws_conv_run_rows: rows [%d, %d + %d) outside [0, %d)", t0, t0, nt,
                       t_out);
    if (d->op != WS_CONV_FWD || !c->rc || a->w || a->b)
        return 1; /* not the dense path with the plan's weights: the caller runs it whole */
    return ws_conv_dense_fwd_rows(d, c->rc, a, t_out, t0, nt, n_threads < 1 ? 1 : n_threads,
                                  err); /* 1: too large a staged block, the same */
}

int ws_conv_row_group(const ws_conv *c)
{
    const int r = c && c->rc ? ws_rowconv_group_rows(c->rc) : 0;
    return r > 1 ? r : 1;
}

void ws_conv_free(ws_conv *c)
{
    if (!c)
        return;
    ws_rowconv_free(c->rc);
    ws_conv_grouped_free(c->gp);
    free(c->w);
    free(c->b);
    free(c);
}

/* pair.c - a pair of forward convs on the CPU (include/ws_conv.h, ws_conv_pair_*): the two
 * plans, h in a buffer of the call's. The check is shared with the GPU pair (gpu_pair.c).
 * Tested by tests/test_gpu_pair.c (against the two plans' calls, refusals; the GPU pair
 * against it).
 */
#include <stdint.h>
#include <stdlib.h>

#include "engine.h"

struct ws_conv_pair {
    ws_conv_desc d1, d2;
    ws_conv *c1, *c2;
};

int ws_conv_pair_check(const ws_conv_desc *d1, const ws_conv_desc *d2, ws_err *err)
{
    if (!d1 || !d2)
        return ws_errf(err, "ws_conv_pair: d1 or d2 is NULL");
    ws_err e = { "" };
    if (ws_conv_check(d1, &e))
        return ws_errf(err, "ws_conv_pair: d1: %s", e.msg);
    if (ws_conv_check(d2, &e))
        return ws_errf(err, "ws_conv_pair: d2: %s", e.msg);
    if (d1->op != WS_CONV_FWD || d2->op != WS_CONV_FWD)
        return ws_errf(err, "ws_conv_pair: op of d%d must be WS_CONV_FWD", d1->op != WS_CONV_FWD ? 1 : 2);
    if (d2->c_in != d1->c_out)
        return ws_errf(err, "ws_conv_pair: d2.c_in %d must equal d1.c_out %d", d2->c_in, d1->c_out);
    if (d2->x_layout != d1->y_layout)
        return ws_errf(err, "ws_conv_pair: d2.x_layout %d must equal d1.y_layout %d", (int)d2->x_layout,
                       (int)d1->y_layout);
    if (d2->x_type != d1->y_type)
        return ws_errf(err, "ws_conv_pair: d2.x_type %d must equal d1.y_type %d", (int)d2->x_type,
                       (int)d1->y_type);
    return 0;
}

void ws_conv_pair_free(ws_conv_pair *p)
{
    if (!p)
        return;
    ws_conv_free(p->c1);
    ws_conv_free(p->c2);
    free(p);
}

ws_conv_pair *ws_conv_pair_new(const ws_conv_desc *d1, const void *w1, const float *b1,
                               const ws_conv_desc *d2, const void *w2, const float *b2,
                               int n_threads, ws_err *err)
{
    if (ws_conv_pair_check(d1, d2, err))
        return NULL;
    ws_conv_pair *p = calloc(1, sizeof *p);
    if (!p)
        return ws_errf(err, "ws_conv_pair_new: out of memory"), NULL;
    p->d1 = *d1, p->d2 = *d2;
    if (!(p->c1 = ws_conv_new(d1, w1, b1, n_threads, err)) ||
        !(p->c2 = ws_conv_new(d2, w2, b2, n_threads, err))) {
        ws_conv_pair_free(p);
        return NULL;
    }
    return p;
}

/* the two calls of a: a1 (x into h) and a2 (h into y); *t_mid, *t_out. The checks of both,
 * h given as a placeholder. 0, or -1 with err naming the call */
int ws_conv_pair_split(const ws_conv_desc *d1, const ws_conv_desc *d2, int has_w1, int has_w2,
                       const ws_conv_pair_args *a, void *h, ws_conv_args *a1, ws_conv_args *a2,
                       int *t_mid, int *t_out, const char *fn, ws_err *err)
{
    if (!a)
        return ws_errf(err, "%s: args is NULL", fn);
    *a1 = (ws_conv_args){ .n = a->n, .t_in = a->t_in, .x = a->x, .w = a->w1, .b = a->b1, .y = h };
    ws_err e = { "" };
    if (ws_conv_check_args(d1, a1, has_w1, t_mid, &e))
        return ws_errf(err, "%s: conv 1: %s", fn, e.msg);
    *a2 = (ws_conv_args){ .n = a->n, .t_in = *t_mid, .x = h, .w = a->w2, .b = a->b2, .add = a->add,
                          .add_batch_stride = a->add_batch_stride, .y = a->y };
    if (ws_conv_check_args(d2, a2, has_w2, t_out, &e))
        return ws_errf(err, "%s: conv 2: %s", fn, e.msg);
    return 0;
}

int ws_conv_pair_run(ws_conv_pair *p, const ws_conv_pair_args *a, ws_err *err)
{
    if (!p)
        return ws_errf(err, "ws_conv_pair_run: plan is NULL");
    ws_conv_args a1, a2;
    int t_mid = 0, t_out = 0;
    static char placeholder;
    if (ws_conv_pair_split(&p->d1, &p->d2, p->c1->w != NULL, p->c2->w != NULL, a, &placeholder, &a1,
                           &a2, &t_mid, &t_out, "ws_conv_pair_run", err))
        return -1;
    const size_t es = p->d1.y_type == WS_F32 ? 4 : 2;
    const size_t nh = (size_t)a->n * (size_t)p->d1.c_out * (size_t)t_mid;
    if (nh > SIZE_MAX / es)
        return ws_errf(err, "ws_conv_pair_run: h of n %d x %d x %d overflows", a->n, p->d1.c_out, t_mid);
    void *h = malloc(nh * es);
    if (!h)
        return ws_errf(err, "ws_conv_pair_run: out of memory (h, %zu bytes)", nh * es);
    a1.y = h, a2.x = h;
    const int rc = ws_conv_run(p->c1, &a1, err) || ws_conv_run(p->c2, &a2, err) ? -1 : 0;
    free(h);
    return rc;
}

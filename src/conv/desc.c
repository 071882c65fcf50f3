/* desc.c - the conv engine's descriptor and argument checks, and T_out.
 *
 *   T_out = (T_in + P_L + P_R - D*(K-1) - 1) / S + 1     (0 when the numerator is < 0)
 * computed in long long: every int field can be INT_MAX without overflow.
 * Every size an engine run touches (N*C*T of x, y, dx, dy, add; C_out*Cg*K of w; N*T of
 * seq_idx and N*C*(K-1) of the states) is checked to fit in size_t and int64 bytes before
 * anything is read or written.
 * Messages name the field and its value ("groups 3 does not divide c_in 8").
 * Tested by tests/test_engine.c (the rejection table) and tests/test_engine_states.c (the
 * refusals of packed sequences and carried state).
 */
#include <limits.h>

#include "engine.h"

int ws_conv_check(const ws_conv_desc *d, ws_err *err)
{
    if (!d)
        return ws_errf(err, "ws_conv_check: descriptor is NULL");
#define POS(f)                                                                                 \
    if (d->f < 1)                                                                              \
        return ws_errf(err, "ws_conv_check: " #f " %d must be >= 1", d->f);
#define ENUM(f, hi)                                                                            \
    if ((int)d->f < 0 || (int)d->f > (hi))                                                     \
        return ws_errf(err, "ws_conv_check: " #f " %d is not a valid value (0..%d)", (int)d->f, \
                       (hi));
    ENUM(op, WS_CONV_BWD)
    POS(c_in)
    POS(c_out)
    POS(groups)
    POS(k)
    POS(stride)
    POS(dilation)
    if (d->pad_l < 0)
        return ws_errf(err, "ws_conv_check: pad_l %d must be >= 0", d->pad_l);
    if (d->pad_r < 0)
        return ws_errf(err, "ws_conv_check: pad_r %d must be >= 0", d->pad_r);
    if (d->c_in % d->groups)
        return ws_errf(err, "ws_conv_check: groups %d does not divide c_in %d", d->groups,
                       d->c_in);
    if (d->c_out % d->groups)
        return ws_errf(err, "ws_conv_check: groups %d does not divide c_out %d", d->groups,
                       d->c_out);
    ENUM(x_layout, WS_NLC)
    ENUM(y_layout, WS_NLC)
    ENUM(x_type, WS_BF16)
    ENUM(w_type, WS_BF16)
    ENUM(y_type, WS_BF16)
    ENUM(math, WS_MATH_BF16)
    ENUM(pre, WS_ACT_SILU)
    ENUM(act, WS_ACT_SILU)
#undef POS
#undef ENUM
    if (d->op == WS_CONV_BWD && d->pre != WS_ACT_NONE)
        return ws_errf(err, "ws_conv_check: pre %d must be NONE (0) for BWD", (int)d->pre);
    /* the weight count C_out*Cg*K fits: each factor < 2^31, so check the product */
    unsigned long long nw = (unsigned long long)d->c_out * (unsigned long long)(d->c_in / d->groups);
    if (nw > (unsigned long long)LLONG_MAX / (unsigned long long)d->k / 4 ||
        nw * (unsigned long long)d->k * 4 > (unsigned long long)SIZE_MAX)
        return ws_errf(err, "ws_conv_check: weights c_out %d x c_in/groups %d x k %d overflow",
                       d->c_out, d->c_in / d->groups, d->k);
    return 0;
}

long long ws_conv_out_len_ll(const ws_conv_desc *d, long long t_in)
{
    long long span = (long long)d->dilation * (d->k - 1) + 1;
    long long num = t_in + d->pad_l + d->pad_r - span;
    if (t_in < 1 || num < 0)
        return 0;
    return num / d->stride + 1;
}

int ws_conv_out_len(const ws_conv_desc *d, int t_in)
{
    if (ws_conv_check(d, NULL))
        return 0;
    long long t = ws_conv_out_len_ll(d, t_in);
    return t > INT_MAX ? 0 : (int)t;
}

/* a*b*c*elem fits in size_t and in int64 bytes; a, b, c >= 0 */
static unsigned long long size_limit(void)
{
    return (unsigned long long)LLONG_MAX < (unsigned long long)SIZE_MAX ? (unsigned long long)LLONG_MAX
                                                                         : (unsigned long long)SIZE_MAX;
}

static int fits(long long a, long long b, long long c, long long elem)
{
    const unsigned long long lim = size_limit();
    unsigned long long v = (unsigned long long)a;
    const long long f[3] = {b, c, elem};
    for (int i = 0; i < 3; i++) {
        if (f[i] != 0 && v > lim / (unsigned long long)f[i])
            return 0;
        v *= (unsigned long long)f[i];
    }
    return 1;
}

/* Packed sequences and carried state (seq_idx, initial_states, final_states,
 * dinitial_states; cpu_dw_states.c computes them) are defined for depthwise causal
 * descriptors only: groups = c_in = c_out, stride 1, pad_l = dilation*(k-1), pad_r 0.
 * The states ([N][C][K-1] in x_type) need dilation 1: state j is the input at position
 * j - (K-1), so the K-1 positions before t = 0 are exactly the ones a causal tap can reach
 * only when D is 1. seq_idx and a state in one call are refused (a packed batch starts each
 * of its sequences from zeros); final_states belongs to FWD, dinitial_states to BWD. Every
 * refusal names the field(s); the GPU backend runs this same check before it launches. */
static int check_seq_states(const ws_conv_desc *d, const ws_conv_args *a, ws_err *err)
{
    const char *state = a->initial_states ? "initial_states"
                        : a->final_states ? "final_states"
                        : a->dinitial_states ? "dinitial_states"
                                             : NULL;
    const char *first = a->seq_idx ? "seq_idx" : state;
    if (a->final_states && d->op != WS_CONV_FWD)
        return ws_errf(err, "ws_conv_run: final_states is an output of FWD only (this plan is BWD)");
    if (a->dinitial_states && d->op != WS_CONV_BWD)
        return ws_errf(err, "ws_conv_run: dinitial_states is an output of BWD only (this plan is FWD)");
    if (d->groups != d->c_in || d->c_in != d->c_out || d->stride != 1 || d->pad_r != 0 ||
        (long long)d->pad_l != (long long)d->dilation * (d->k - 1))
        return ws_errf(err,
                       "ws_conv_run: %s given, but packed sequences and carried states need a "
                       "depthwise causal descriptor (groups = c_in = c_out, stride 1, pad_l = "
                       "dilation*(k-1), pad_r 0); this one has groups %d, c_in %d, c_out %d, "
                       "stride %d, pad_l %d, dilation %d, k %d, pad_r %d",
                       first, d->groups, d->c_in, d->c_out, d->stride, d->pad_l, d->dilation,
                       d->k, d->pad_r);
    if (state && d->dilation != 1)
        return ws_errf(err, "ws_conv_run: %s needs dilation 1 (dilation %d): the states hold "
                            "the K-1 inputs before t = 0",
                       state, d->dilation);
    if (a->seq_idx && state)
        return ws_errf(err, "ws_conv_run: seq_idx and %s cannot be given together (packed "
                            "sequences start from zero states)",
                       state);
    if (a->seq_idx && !fits(a->n, a->t_in, 1, 4))
        return ws_errf(err, "ws_conv_run: seq_idx size n %d x t_in %d overflows", a->n, a->t_in);
    if (state && !fits(a->n, d->c_in, d->k - 1, (long long)ws_dtype_size(d->x_type)))
        return ws_errf(err, "ws_conv_run: %s size n %d x c_in %d x (k-1) %d overflows", state,
                       a->n, d->c_in, d->k - 1);
    return 0;
}

int ws_conv_check_args(const ws_conv_desc *d, const ws_conv_args *a, int has_w, int *t_out,
                       ws_err *err)
{
    if (!a)
        return ws_errf(err, "ws_conv_run: args is NULL");
    if (a->n < 1)
        return ws_errf(err, "ws_conv_run: n %d must be >= 1", a->n);
    if (a->t_in < 1)
        return ws_errf(err, "ws_conv_run: t_in %d must be >= 1", a->t_in);
    long long to = ws_conv_out_len_ll(d, a->t_in);
    if (to < 1)
        return ws_errf(err,
                       "ws_conv_run: t_in %d is too short: T_out would be 0 (k %d, dilation %d, "
                       "pads %d+%d)",
                       a->t_in, d->k, d->dilation, d->pad_l, d->pad_r);
    /* The kernels walk times in blocks of up to 4096 in int: keep every block end in range. */
    if (to > INT_MAX - WS_CONV_T_MARGIN || a->t_in > INT_MAX - WS_CONV_T_MARGIN)
        return ws_errf(err,
                       "ws_conv_run: t_in %d / T_out %lld is over the limit of %d (INT_MAX - %d)",
                       a->t_in, to, INT_MAX - WS_CONV_T_MARGIN, WS_CONV_T_MARGIN);
    if (!a->x)
        return ws_errf(err, "ws_conv_run: x is NULL");
    if (!a->w && !has_w)
        return ws_errf(err, "ws_conv_run: w is NULL and the plan has no weights");
    if (d->op == WS_CONV_FWD) {
        if (!a->y)
            return ws_errf(err, "ws_conv_run: y is NULL (FWD)");
    } else {
        if (!a->dy)
            return ws_errf(err, "ws_conv_run: dy is NULL (BWD)");
        if (!a->dx && !a->dw && !a->db && !a->dinitial_states)
            return ws_errf(err, "ws_conv_run: dx, dw, db and dinitial_states are all NULL (BWD: "
                                "nothing to compute)");
        if (a->add)
            return ws_errf(err, "ws_conv_run: add must be NULL for BWD");
    }
    if ((a->seq_idx || a->initial_states || a->final_states || a->dinitial_states) &&
        check_seq_states(d, a, err))
        return -1;
    if (a->add && a->add_batch_stride < 0)
        return ws_errf(err, "ws_conv_run: add_batch_stride %lld must be >= 0", a->add_batch_stride);
    const long long xs = ws_dtype_size(d->x_type), ys = ws_dtype_size(d->y_type);
    if (!fits(a->n, d->c_in, a->t_in, xs > 4 ? xs : 4))
        return ws_errf(err, "ws_conv_run: x size n %d x c_in %d x t_in %d overflows", a->n, d->c_in,
                       a->t_in);
    if (!fits(a->n, d->c_out, to, 4))
        return ws_errf(err, "ws_conv_run: y size n %d x c_out %d x T_out %lld overflows", a->n,
                       d->c_out, to);
    if (a->add && a->add_batch_stride > 0) {
        /* the last item ends at (n-1)*stride + C_out*T_out elements; both terms fit */
        unsigned long long end = (unsigned long long)(a->n - 1) * (unsigned long long)a->add_batch_stride +
                                 (unsigned long long)d->c_out * (unsigned long long)to;
        if (!fits(a->n, a->add_batch_stride, 1, ys) || end > size_limit() / (unsigned long long)ys)
            return ws_errf(err, "ws_conv_run: add size n %d x add_batch_stride %lld overflows", a->n,
                           a->add_batch_stride);
    }
    *t_out = (int)to;
    return 0;
}

/* tensors.c - the stem's tensor table and its checks (see tensors.h for the
 * table, the shape rule and the decisions behind them).
 *
 * A shape check is a small unification: each table shape lists its
 * dimensions as constants (1, 3) or named sizes (n_mels, d, n_pos); a named
 * size already known must equal the file's, one not yet known is taken from
 * the file when it lies in 1..WS_STEM_MAX_DIM. conv1.weight comes first in
 * the table, so it fixes n_mels and d for the rest.
 * Tested by tests/test_convert.c and tests/test_model.c.
 */
#include "tensors.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"

#define SHAPE1(a) {1, {a}}
#define SHAPE2(a, b) {2, {a, b}}
#define SHAPE3(a, b, c) {3, {a, b, c}}
/* ne [d]; [1, d] (PyTorch [d, 1], as whisper.cpp and llama.cpp store it); [d, 1] */
#define BIAS_SHAPES SHAPE1(WS_DIM_D), SHAPE2(WS_DIM_1, WS_DIM_D), SHAPE2(WS_DIM_D, WS_DIM_1)

const ws_stem_tensor_info WS_STEM_TENSORS[WS_STEM_N_TENSORS] = {
    [WS_STEM_CONV1_W] = {{"encoder.conv1.weight", "model.encoder.conv1.weight",
                          "a.conv1d.1.weight"},
                         1, 1, {SHAPE3(WS_DIM_3, WS_DIM_N_MELS, WS_DIM_D)}},
    [WS_STEM_CONV1_B] = {{"encoder.conv1.bias", "model.encoder.conv1.bias", "a.conv1d.1.bias"},
                         1, 3, {BIAS_SHAPES}},
    [WS_STEM_CONV2_W] = {{"encoder.conv2.weight", "model.encoder.conv2.weight",
                          "a.conv1d.2.weight"},
                         1, 1, {SHAPE3(WS_DIM_3, WS_DIM_D, WS_DIM_D)}},
    [WS_STEM_CONV2_B] = {{"encoder.conv2.bias", "model.encoder.conv2.bias", "a.conv1d.2.bias"},
                         1, 3, {BIAS_SHAPES}},
    [WS_STEM_POS] = {{"encoder.positional_embedding", "model.encoder.embed_positions.weight",
                      "a.position_embd.weight"},
                     0, 1, {SHAPE2(WS_DIM_D, WS_DIM_N_POS)}},
};

/* The slot of a named size in dims, or NULL for a constant. */
static uint64_t *size_slot(ws_stem_dims *dims, int dim)
{
    switch (dim) {
    case WS_DIM_N_MELS: return &dims->n_mels;
    case WS_DIM_D: return &dims->d;
    case WS_DIM_N_POS: return &dims->n_pos;
    }
    return NULL;
}

static const char *size_name(int dim)
{
    return dim == WS_DIM_N_MELS ? "n_mels" : dim == WS_DIM_D ? "d" : "n_pos";
}

static uint64_t const_value(int dim) { return dim == WS_DIM_3 ? 3 : 1; }

uint32_t ws_stem_tensor_ne(ws_stem_role r, int v, const ws_stem_dims *dims, uint64_t *ne)
{
    const ws_stem_shape *s = &WS_STEM_TENSORS[r].shape[v];
    ws_stem_dims k = *dims; /* size_slot's copy */
    for (int j = 0; j < s->rank; j++) {
        const uint64_t *slot = size_slot(&k, s->dim[j]);
        ne[j] = slot ? *slot : const_value(s->dim[j]);
    }
    for (int j = s->rank; j < WS_STEM_MAX_RANK; j++)
        ne[j] = 1;
    return s->rank;
}

int ws_stem_check_type(const ws_stem_view *t, ws_err *err)
{
    if (t->type == WS_GGML_F32 || t->type == WS_GGML_F16 || t->type == WS_GGML_BF16)
        return 0;
    const char *n = t->type_name ? t->type_name : ws_ggml_type_name(t->type);
    if (n)
        return ws_errf(err, "%s: tensor '%s': type %s is not supported (F32, F16 or BF16)",
                       t->file, t->name, n);
    return ws_errf(err, "%s: tensor '%s': type %" PRIu32 " is not supported (F32, F16 or BF16)",
                   t->file, t->name, t->type);
}

/* Whether t has shape s, padded with 1s; *dims gets the sizes it fixes. */
static int shape_matches(const ws_stem_shape *s, const ws_stem_view *t, ws_stem_dims *dims)
{
    ws_stem_dims k = *dims;
    const uint32_t n = t->n_dims > s->rank ? t->n_dims : s->rank;
    for (uint32_t j = 0; j < n; j++) {
        const uint64_t got = j < t->n_dims ? t->ne[j] : 1;
        const int dim = j < s->rank ? s->dim[j] : WS_DIM_1;
        uint64_t *slot = size_slot(&k, dim);
        if (!slot) {
            if (got != const_value(dim))
                return 0;
        } else if (*slot) {
            if (got != *slot)
                return 0;
        } else {
            if (got < 1 || got > WS_STEM_MAX_DIM)
                return 0;
            *slot = got;
        }
    }
    *dims = k;
    return 1;
}

/* Appends to buf[*k..cap) like snprintf, never past cap. */
static void put(char *buf, size_t cap, size_t *k, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *k, const char *fmt, ...)
{
    if (*k >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *k, cap - *k, fmt, ap);
    va_end(ap);
    *k = n < 0 ? cap : *k + (size_t)n;
}

/* "[6] (or [1,6] or [6,1])", "[3,n_mels,d] with n_mels and d in 1..65536". */
static void fmt_expected(char *buf, size_t cap, ws_stem_role r, const ws_stem_dims *dims)
{
    const ws_stem_tensor_info *info = &WS_STEM_TENSORS[r];
    ws_stem_dims k = *dims;
    int unknown[3], n_unknown = 0;
    size_t at = 0;
    buf[0] = 0;
    for (int v = 0; v < info->n_shapes; v++) {
        const ws_stem_shape *s = &info->shape[v];
        put(buf, cap, &at, "%s[", v == 0 ? "" : v == 1 ? " (or " : " or ");
        for (int j = 0; j < s->rank; j++) {
            const int dim = s->dim[j];
            uint64_t *slot = size_slot(&k, dim);
            const char *sep = j ? "," : "";
            if (!slot) {
                put(buf, cap, &at, "%s%" PRIu64, sep, const_value(dim));
            } else if (*slot) {
                put(buf, cap, &at, "%s%" PRIu64, sep, *slot);
            } else {
                put(buf, cap, &at, "%s%s", sep, size_name(dim));
                int seen = 0;
                for (int u = 0; u < n_unknown; u++)
                    seen |= unknown[u] == dim;
                if (!seen && n_unknown < 3)
                    unknown[n_unknown++] = dim;
            }
        }
        put(buf, cap, &at, "]");
    }
    if (info->n_shapes > 1)
        put(buf, cap, &at, ")");
    for (int u = 0; u < n_unknown; u++)
        put(buf, cap, &at, "%s%s", u == 0 ? " with " : u == n_unknown - 1 ? " and " : ", ",
            size_name(unknown[u]));
    if (n_unknown)
        put(buf, cap, &at, " in 1..%d", WS_STEM_MAX_DIM);
}

int ws_stem_check_shape(ws_stem_role r, const ws_stem_view *t, ws_stem_dims *dims, ws_err *err)
{
    const ws_stem_tensor_info *info = &WS_STEM_TENSORS[r];
    for (int v = 0; v < info->n_shapes; v++)
        if (shape_matches(&info->shape[v], t, dims))
            return 0;
    char got[256], want[160];
    size_t at = 0;
    put(got, sizeof got, &at, "[");
    for (uint32_t j = 0; j < t->n_dims; j++)
        put(got, sizeof got, &at, "%s%" PRIu64, j ? "," : "", t->ne[j]);
    put(got, sizeof got, &at, "]");
    fmt_expected(want, sizeof want, r, dims);
    return ws_errf(err, "%s: %s: got ne=%s, expected %s", t->file, t->name, got, want);
}

int ws_stem_find_tensors(ws_stem_find_fn find, void *ctx, const char *path,
                         ws_stem_view out[WS_STEM_N_TENSORS], ws_stem_dims *dims, ws_err *err)
{
    memset(out, 0, WS_STEM_N_TENSORS * sizeof *out);
    memset(dims, 0, sizeof *dims);
    for (int r = 0; r < WS_STEM_N_TENSORS; r++) {
        const ws_stem_tensor_info *info = &WS_STEM_TENSORS[r];
        int found = 0;
        for (int k = 0; k < WS_N_NAMINGS && !found; k++)
            found = find(ctx, info->name[k], &out[r]);
        if (!found) {
            memset(&out[r], 0, sizeof out[r]);
            if (!info->required)
                continue;
            return ws_errf(err, "%s: no tensor '%s' (nor '%s', '%s')", path, info->name[0],
                           info->name[1], info->name[2]);
        }
        if (ws_stem_check_type(&out[r], err) ||
            ws_stem_check_shape((ws_stem_role)r, &out[r], dims, err))
            return -1;
    }
    return 0;
}

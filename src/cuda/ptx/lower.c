/* lower.c - conv descriptors -> the PTX kernels that compute them on a target.
 *
 * The GPU lowers one shape of the engine today: a pair of descriptors c1 -> c2
 * where c2 reads c1's output, both FWD, dense (groups 1), K 3, dilation 1, padding
 * 1 | 1, act GELU, no pre, y time-major (NLC), w float32:
 *   c1  stride 1, x channel-major (NCL) float32      (Whisper's conv1 on the log-Mel)
 *   c2  stride 2, x = c1's y, y float32, + add        (conv2 + the positional table)
 * c1's y (the intermediate) is stored in the math's element type: f32 for F32 and TF32,
 * f16 for F16, bf16 for BF16. Both descriptors have the same math, which picks the
 * kernels: F32 FFMA tiles with split-K (kernels_ffma.c), else mma.sync (kernels_mma.c);
 * c1's NCL input is read as it is by F32 and transposed and converted first
 * (ws_mel_t, kernels_misc.c) by the others. Every other descriptor is refused with a
 * line naming the field: the direct, depthwise and generalised GEMM kernels come next.
 *
 * The kernel list, in slot order (kernels.h): mel_t, c1 large tile, c1 small, c2 large,
 * c2 small, split-K finish, and the GELU test kernel. Its bytes for Whisper's shapes are
 * held by tests/test_ptx_golden.c; assembly without spills by tests/test_ptx.c.
 * Also the precisions' names (precision.h). Pure text, as every emitter: no device here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

const char *ws_precision_name(ws_precision p)
{
    switch (p) {
    case WS_PREC_FP32: return "fp32";
    case WS_PREC_TF32: return "tf32";
    case WS_PREC_BF16: return "bf16";
    case WS_PREC_FP16: return "fp16";
    }
    return "?";
}

int ws_precision_parse(const char *s, ws_precision *p)
{
    static const ws_precision all[] = { WS_PREC_FP32, WS_PREC_TF32, WS_PREC_BF16, WS_PREC_FP16 };
    for (int i = 0; i < 4; i++)
        if (s && !strcmp(s, ws_precision_name(all[i]))) {
            *p = all[i];
            return 0;
        }
    return -1;
}

int ws_gpu_math_precision(ws_math m, ws_precision *p)
{
    switch (m) {
    case WS_MATH_F32: *p = WS_PREC_FP32; return 0;
    case WS_MATH_TF32: *p = WS_PREC_TF32; return 0;
    case WS_MATH_F16: *p = WS_PREC_FP16; return 0;
    case WS_MATH_BF16: *p = WS_PREC_BF16; return 0;
    }
    return -1;
}

ws_dtype ws_gpu_elem_type(ws_precision p)
{
    return p == WS_PREC_FP16 ? WS_F16 : p == WS_PREC_BF16 ? WS_BF16 : WS_F32;
}

static const char *dtype_name(ws_dtype t)
{
    return t == WS_F32 ? "f32" : t == WS_F16 ? "f16" : t == WS_BF16 ? "bf16" : "?";
}

static const char *act_name(int a)
{
    static const char *const n[] = {"NONE", "RELU", "GELU", "SILU"};
    return a >= 0 && a < 4 ? n[a] : "?";
}

/* one field against the value the kernels take: 0, or -1 with the message */
static int want(int got, int need, int which, const char *field, ws_err *err)
{
    if (got == need)
        return 0;
    return ws_errf(err, "the GPU does not lower conv %d with %s %d yet (it takes %d)", which + 1,
                   field, got, need);
}

/* the same for a field with names (op, layout, act) */
static int want_named(int got, int need, const char *got_name, const char *need_name, int which,
                      const char *field, ws_err *err)
{
    if (got == need)
        return 0;
    return ws_errf(err, "the GPU does not lower conv %d with %s %s yet (it takes %s)", which + 1,
                   field, got_name, need_name);
}

static int want_type(ws_dtype got, ws_dtype need, int which, const char *field, ws_err *err)
{
    if (got == need)
        return 0;
    return ws_errf(err, "the GPU does not lower conv %d with %s %s yet (it takes %s here)",
                   which + 1, field, dtype_name(got), dtype_name(need));
}

int ws_gpu_check_pair(const ws_conv_desc pair[2], ws_precision *prec, ws_err *err)
{
    for (int i = 0; i < 2; i++)
        if (ws_conv_check(&pair[i], err))
            return -1;
    const ws_conv_desc *c1 = &pair[0], *c2 = &pair[1];
    if (c1->math != c2->math)
        return ws_errf(err, "the GPU lowers a pair of one math only (conv 1 math %d, conv 2 math %d)",
                       (int)c1->math, (int)c2->math);
    if (ws_gpu_math_precision(c1->math, prec))
        return ws_errf(err, "unknown math %d", (int)c1->math);
    const ws_dtype elem = ws_gpu_elem_type(*prec);
    for (int i = 0; i < 2; i++) {
        const ws_conv_desc *c = &pair[i];
        if (want_named((int)c->op, WS_CONV_FWD, c->op == WS_CONV_FWD ? "FWD" : "BWD", "FWD", i,
                       "op", err) ||
            want(c->groups, 1, i, "groups", err) || want(c->k, 3, i, "k", err) ||
            want(c->dilation, 1, i, "dilation", err) || want(c->pad_l, 1, i, "pad_l", err) ||
            want(c->pad_r, 1, i, "pad_r", err) || want(c->stride, i ? 2 : 1, i, "stride", err) ||
            want_named((int)c->pre, WS_ACT_NONE, act_name((int)c->pre), "NONE", i, "pre", err) ||
            want_named((int)c->act, WS_ACT_GELU, act_name((int)c->act), "GELU", i, "act", err) ||
            want_named((int)c->y_layout, WS_NLC, c->y_layout == WS_NCL ? "NCL" : "NLC", "NLC", i,
                       "y_layout", err) ||
            want_type(c->w_type, WS_F32, i, "w_type", err))
            return -1;
    }
    if (want_named((int)c1->x_layout, WS_NCL, c1->x_layout == WS_NCL ? "NCL" : "NLC", "NCL", 0,
                   "x_layout", err) ||
        want_named((int)c2->x_layout, WS_NLC, c2->x_layout == WS_NCL ? "NCL" : "NLC", "NLC", 1,
                   "x_layout", err) ||
        want_type(c1->x_type, WS_F32, 0, "x_type", err) ||
        want_type(c1->y_type, elem, 0, "y_type", err) ||
        want_type(c2->x_type, elem, 1, "x_type", err) ||
        want_type(c2->y_type, WS_F32, 1, "y_type", err))
        return -1;
    if (c2->c_in != c1->c_out || c2->c_out != c1->c_out)
        return ws_errf(err, "the GPU lowers conv 2 reading conv 1's output: c_in %d and c_out %d "
                            "must be conv 1's c_out %d", c2->c_in, c2->c_out, c1->c_out);
    return 0;
}

void ws_gpu_kernels_free(ws_kernel_src *k)
{
    if (!k)
        return;
    for (int i = 0; i < WS_K_COUNT; i++)
        free(k[i].ptx);
    free(k);
}

int ws_gpu_lower(const ws_conv_desc pair[2], int cc_major, int cc_minor, ws_kernel_src **out,
                 ws_err *err)
{
    *out = NULL;
    ws_precision p;
    if (ws_gpu_check_pair(pair, &p, err))
        return -1;
    const int n_mels = pair[0].c_in, d = pair[0].c_out;
    ws_kernel_src *k = calloc(WS_K_COUNT, sizeof *k);
    if (!k)
        return ws_errf(err, "out of memory");
    for (int i = 0; i < WS_K_COUNT; i++) {
        ptx_buf mod;
        ws_ptx_init(&mod);
        ws_ptx_module_begin(&mod, cc_major, cc_minor, "whisper-stem conv stem kernel");
        int rc = 0;
        if (i == WS_K_MEL_T) {
            ws_emit_mel_t(&mod, n_mels, p, &k[i]);
        } else if (i == WS_K_GELU) {
            ws_emit_gelu_grid(&mod, &k[i]);
        } else if (i == WS_K_FINISH) {
            ws_emit_splitk_finish(&mod, d, &k[i]);
        } else {
            const int second = i == WS_K_CONV2_L || i == WS_K_CONV2_S;
            const ws_conv_desc *c = &pair[second];
            ws_conv_spec s = { 0 };
            s.last = second;
            s.small = i == WS_K_CONV1_S || i == WS_K_CONV2_S;
            s.cin = c->c_in;
            s.cout = c->c_out;
            s.stride = c->stride;
            s.prec = p;
            s.chan_major = p == WS_PREC_FP32 && c->x_layout == WS_NCL;
            s.cc_major = cc_major;
            rc = p == WS_PREC_FP32 ? ws_emit_conv_ffma(&mod, &s, &k[i], err)
                                   : ws_emit_conv_mma(&mod, &s, &k[i], err);
        }
        char why[160];
        k[i].ptx = ws_ptx_take(&mod, why, sizeof why);
        if (rc || !k[i].ptx) {
            if (!rc)
                ws_errf(err, "PTX emission of kernel %d failed: %s", i, why);
            ws_gpu_kernels_free(k);
            return -1;
        }
    }
    *out = k;
    return 0;
}

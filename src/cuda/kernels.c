/* kernels.c - the kernel list of the GPU stem for (n_mels, d, precision),
 * and the host-side weight packing that matches it. Layouts: kernels.h.
 * Tested by tests/test_ptx.c (ptx_kernels::*_assemble_without_spills,
 * emitter_is_deterministic) and tests/test_gpu.c. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

int ws_prec_elem_bytes(ws_precision p)
{
    return p == WS_PREC_BF16 || p == WS_PREC_FP16 ? 2 : 4;
}

/* float -> tf32 bit pattern, round to nearest, ties away from zero (as
 * cvt.rna.tf32.f32): keep the top 19 bits. Inf/NaN are left alone. */
static float round_tf32(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&v, &u, sizeof v);
    return v;
}

void ws_pack_weights(const float *w, int cin, int cout, ws_precision p, void *dst)
{
    const size_t K = (size_t)3 * cin;
    for (int o = 0; o < cout; o++)
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < cin; i++) {
                float v = w[((size_t)o * cin + i) * 3 + k];
                size_t kk = (size_t)k * cin + i;
                switch (p) {
                case WS_PREC_FP32: ((float *)dst)[kk * cout + o] = v; break;
                case WS_PREC_TF32: ((float *)dst)[(size_t)o * K + kk] = round_tf32(v); break;
                case WS_PREC_BF16: ((uint16_t *)dst)[(size_t)o * K + kk] = ws_f32_to_bf16(v); break;
                case WS_PREC_FP16: ((uint16_t *)dst)[(size_t)o * K + kk] = ws_f32_to_f16(v); break;
                }
            }
}

void ws_stem_kernels_free(ws_kernel_src *k)
{
    if (!k)
        return;
    for (int i = 0; i < WS_K_COUNT; i++)
        free(k[i].ptx);
    free(k);
}

int ws_stem_kernels(int n_mels, int d, ws_precision p, int cc_major, int cc_minor,
                    ws_kernel_src **out, ws_err *err)
{
    *out = NULL;
    if (n_mels < 1 || d < 1)
        return ws_errf(err, "bad stem shape n_mels %d d %d", n_mels, d);
    ws_kernel_src *k = calloc(WS_K_COUNT, sizeof *k);
    if (!k)
        return ws_errf(err, "out of memory");
    for (int i = 0; i < WS_K_COUNT; i++) {
        ptx_buf mod;
        ptx_init(&mod);
        ptx_module_begin(&mod, cc_major, cc_minor, "whisper-stem conv stem kernel");
        int rc = 0;
        if (i == WS_K_MEL_T) {
            ws_emit_mel_t(&mod, n_mels, p, &k[i]);
        } else if (i == WS_K_GELU) {
            ws_emit_gelu_grid(&mod, &k[i]);
        } else if (i == WS_K_FINISH) {
            ws_emit_splitk_finish(&mod, d, &k[i]);
        } else {
            ws_conv_spec s = { 0 };
            s.last = i == WS_K_CONV2_L || i == WS_K_CONV2_S;
            s.small = i == WS_K_CONV1_S || i == WS_K_CONV2_S;
            s.cin = s.last ? d : n_mels;
            s.cout = d;
            s.stride = s.last ? 2 : 1;
            s.prec = p;
            s.chan_major = p == WS_PREC_FP32 && !s.last;
            s.cc_major = cc_major;
            rc = p == WS_PREC_FP32 ? ws_emit_conv_ffma(&mod, &s, &k[i], err)
                                   : ws_emit_conv_mma(&mod, &s, &k[i], err);
        }
        char why[160];
        k[i].ptx = ptx_take(&mod, why, sizeof why);
        if (rc || !k[i].ptx) {
            if (!rc)
                ws_errf(err, "PTX emission of kernel %d failed: %s", i, why);
            ws_stem_kernels_free(k);
            return -1;
        }
    }
    *out = k;
    return 0;
}

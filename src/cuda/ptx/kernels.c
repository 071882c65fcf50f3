/* kernels.c - the host-side weight packing that matches the conv kernels
 * (layouts: kernels.h); the kernel list itself is lower.c's.
 * Tested by tests/test_gpu.c. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

int ws_prec_elem_bytes(ws_precision p)
{
    return p == WS_PREC_BF16 || p == WS_PREC_FP16 ? 2 : 4;
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
                case WS_PREC_TF32: ((float *)dst)[(size_t)o * K + kk] = ws_f32_to_tf32(v); break;
                case WS_PREC_BF16: ((uint16_t *)dst)[(size_t)o * K + kk] = ws_f32_to_bf16(v); break;
                case WS_PREC_FP16: ((uint16_t *)dst)[(size_t)o * K + kk] = ws_f32_to_f16(v); break;
                }
            }
}

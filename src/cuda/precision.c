/* precision.c - the names of the GPU stem's precisions (precision.h), as the command's
 * --precision and the library's options spell them. */
#include "precision.h"

#include <string.h>

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

/* frontend.c - the device policy (frontend.h). */
#include "whisper/frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ws_device_parse(const char *s, ws_device_kind *kind, int *ordinal)
{
    *ordinal = 0;
    if (!s || !strcmp(s, "auto"))
        *kind = WS_DEVICE_AUTO;
    else if (!strcmp(s, "cpu"))
        *kind = WS_DEVICE_CPU;
    else if (!strcmp(s, "cuda"))
        *kind = WS_DEVICE_CUDA;
    else if (!strncmp(s, "cuda:", 5) && s[5] >= '0' && s[5] <= '9') {
        char *end;
        long v = strtol(s + 5, &end, 10);
        if (*end || v > 1023)
            return -1;
        *kind = WS_DEVICE_CUDA;
        *ordinal = (int)v;
    } else
        return -1;
    return 0;
}

int ws_frontend_stem(const ws_model *m, ws_device_kind kind, int ordinal, ws_precision prec,
                     int threads, ws_stem_choice *c, ws_err *err)
{
    memset(c, 0, sizeof *c);
    if (kind != WS_DEVICE_CPU) {
        ws_err ge = {{0}};
        if ((c->stem = ws_stem_new_gpu(m, prec, ordinal, &ge))) {
            c->on_gpu = 1;
            return 0;
        }
        if (kind == WS_DEVICE_CUDA) {
            *err = ge;
            return 1;
        }
        c->fallback = ws_gpu_driver_present() ? WS_NOTE_SHOW : WS_NOTE_VERBOSE;
        snprintf(c->fallback_note, sizeof c->fallback_note,
                 "no usable GPU (%s); running on the CPU", ge.msg);
    }
    c->precision_note = prec != WS_PREC_FP32;
    return (c->stem = ws_stem_new_cpu(m, threads, err)) ? 0 : -1;
}

int ws_frontend_require_gpu(ws_device_kind kind, int ordinal, char *name, size_t cap,
                            ws_err *err)
{
    if (kind != WS_DEVICE_CUDA)
        return 0;
    return ws_gpu_probe(ordinal, name, cap, err);
}

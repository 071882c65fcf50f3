/* gpu_mel.c - kernel time of the GPU log-Mel (src/cuda/gpu_mel.h) on a batch of W inputs of
 * 30 s each (480000 samples, --pad audio: one 3000-frame window each), 80 and 128 bands; and
 * of the f16 conversion of the batch's output.
 *
 * Inputs and outputs live on the device; the time is between CUDA events around one
 * ws_gpu_mel_enqueue (the keys memset and both kernels), the median of N runs after 3
 * warm-up runs.
 *
 *   bench-gpu_mel [--iters N] [--win W]        (defaults 50 and 64)
 * Prints per band count: median us per batch, us per 3000-frame window, windows per second.
 *
 * H100 80GB HBM3 (driver 580), 64 windows a batch: 80 bands 2215 us (34.6 us a window,
 * 28 900 windows/s), 128 bands 2302 us (36.0 us); 256 windows: 34.3 and 35.5 us a window.
 * f16 conversion 0.8 (80 bands) and 1.2 us (128) a window. The frames kernel's float64 FMAs
 * (4 x 102 x 112 a frame, 137 M a window) run at ~4 TFMA/s, ~1/4 of the FP64 peak.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/driver.h"
#include "cuda/gpu_mel.h"
#include "cuda/gpu_runtime.h"
#include "mel/mel.h"

#define CK(call)                                                                  \
    do {                                                                          \
        wscu_result r_ = cu.call;                                                 \
        if (r_) {                                                                 \
            ws_cu_fail(&cu, r_, "cu" #call, __FILE__, __LINE__, &e);              \
            fprintf(stderr, "bench-gpu_mel: %s\n", e.msg);                        \
            return 1;                                                             \
        }                                                                         \
    } while (0)

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int iters = 50, W = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--win") && i + 1 < argc)
            W = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--iters N] [--win W]\n", argv[0]);
            return 2;
        }
    }
    if (iters < 1 || W < 1) {
        fprintf(stderr, "bench-gpu_mel: --iters and --win must be >= 1\n");
        return 2;
    }
    ws_err e = {""};
    wscu_stream s;
    wscu_event ev0, ev1;
    ws_gpu *gpu = ws_gpu_open(0, &e); /* the driver, device 0 and its primary context */
    if (!gpu || ws_gpu_stream_new(gpu, &s, &e) ||
        ws_gpu_event_new(gpu, WS_CU_EVENT_DEFAULT, &ev0, &e) ||
        ws_gpu_event_new(gpu, WS_CU_EVENT_DEFAULT, &ev1, &e)) {
        fprintf(stderr, "bench-gpu_mel: %s\n", e.msg);
        return 1;
    }
    ws_cu cu = gpu->cu;
    printf("# device %s, sm_%d%d; %d inputs of 30 s a batch, median of %d runs\n", gpu->name,
           gpu->cc_major, gpu->cc_minor, W, iters);
    printf("| bands | us per batch | us per window | windows/s |\n|---|---|---|---|\n");

    const size_t n = WS_CHUNK_SAMPLES, nx = n * (size_t)W;
    float *x = malloc(sizeof(float) * nx);
    ws_gpu_mel_item *items = calloc((size_t)W, sizeof *items);
    float *ms = malloc(sizeof(float) * (size_t)iters);
    if (!x || !items || !ms)
        return 1;
    uint64_t seed = 1;
    for (size_t i = 0; i < nx; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double t = (double)(i % n) / 16000.0;
        x[i] = (float)(0.3 * sin(2 * M_PI * (200 + 40 * (i / n)) * t) +
                       ((double)(seed >> 11) / 9007199254740992.0 - 0.5) * 0.1);
    }
    for (int i = 0; i < W; i++)
        items[i] = (ws_gpu_mel_item){.x_off = n * (size_t)i, .n = n, .n_total = n,
                                     .frame_off = (uint64_t)WS_CHUNK_FRAMES * (uint64_t)i,
                                     .out_off = 0, .n_frames = WS_CHUNK_FRAMES,
                                     .content = WS_CHUNK_FRAMES, .n_win = 1,
                                     .win_frames = WS_CHUNK_FRAMES};
    wscu_devptr dx, ditems, dscr, dout, dh;
    const uint64_t frames = (uint64_t)WS_CHUNK_FRAMES * (uint64_t)W;
    CK(MemAlloc(&dx, sizeof(float) * nx));
    CK(MemAlloc(&ditems, sizeof *items * (size_t)W));
    CK(MemAlloc(&dscr, ws_gpu_mel_scratch_bytes(128, frames, W)));
    CK(MemAlloc(&dout, sizeof(float) * 128 * frames));
    CK(MemAlloc(&dh, 2 * 128 * frames));
    CK(MemcpyHtoDAsync(dx, x, sizeof(float) * nx, s));
    for (int b = 0; b < 2; b++) {
        const int nm = b ? 128 : 80;
        ws_mel *cpu = ws_mel_new(nm, 1, &e);
        ws_gpu_mel *g = cpu ? ws_gpu_mel_new(gpu, nm, ws_mel_filters(cpu), &e) : NULL;
        if (!g) {
            fprintf(stderr, "bench-gpu_mel: %s\n", e.msg);
            return 1;
        }
        for (int i = 0; i < W; i++)
            items[i].out_off = (uint64_t)nm * WS_CHUNK_FRAMES * (uint64_t)i;
        CK(MemcpyHtoDAsync(ditems, items, sizeof *items * (size_t)W, s));
        for (int it = -3; it < iters; it++) {
            CK(EventRecord(ev0, s));
            if (ws_gpu_mel_enqueue(g, s, dx, ditems, W, frames, dscr, dout, &e)) {
                fprintf(stderr, "bench-gpu_mel: %s\n", e.msg);
                return 1;
            }
            CK(EventRecord(ev1, s));
            CK(EventSynchronize(ev1));
            if (it >= 0)
                CK(EventElapsedTime(&ms[it], ev0, ev1));
        }
        qsort(ms, (size_t)iters, sizeof *ms, cmp_float);
        double us = ms[iters / 2] * 1000.0;
        printf("| %d | %.1f | %.2f | %.0f |\n", nm, us, us / W, W / us * 1e6);
        for (int it = -3; it < iters; it++) {
            CK(EventRecord(ev0, s));
            if (ws_gpu_mel_to_f16(g, s, dout, dh, (uint64_t)nm * frames, &e)) {
                fprintf(stderr, "bench-gpu_mel: %s\n", e.msg);
                return 1;
            }
            CK(EventRecord(ev1, s));
            CK(EventSynchronize(ev1));
            if (it >= 0)
                CK(EventElapsedTime(&ms[it], ev0, ev1));
        }
        qsort(ms, (size_t)iters, sizeof *ms, cmp_float);
        printf("# f16 conversion of the %d-band output: %.1f us (%.2f us per window)\n", nm,
               ms[iters / 2] * 1000.0, ms[iters / 2] * 1000.0 / W);
        ws_gpu_mel_free(g);
        ws_mel_free(cpu);
    }
    cu.MemFree(dx);
    cu.MemFree(ditems);
    cu.MemFree(dscr);
    cu.MemFree(dout);
    cu.MemFree(dh);
    ws_gpu_event_free(gpu, ev0);
    ws_gpu_event_free(gpu, ev1);
    ws_gpu_stream_free(gpu, s);
    ws_gpu_close(gpu);
    free(x);
    free(items);
    free(ms);
    return 0;
}

/* gpu_stem.c - kernel-only time of the GPU stem (conv1 + conv2, the stem's two plans of the
 * conv engine, GELU and positional add fused in their epilogues), per shape, precision and
 * windows per launch.
 *
 * Inputs live on the device (several buffers of random log-Mel, rotated),
 * timing is between CUDA events around each launch sequence, the median of
 * many runs after warm-up (ws_gpu_bench). 3000 frames per window (30 s).
 * FLOPs: 2 * (3000 * d * 3*n_mels + 1500 * d * 3*d) per window (tiny 1.88 G).
 *
 *   bench-gpu_stem [--iters N] [--only SHAPE] [--prec P] [--win N] [--fixed] [--no-slice] [--no-pdl]
 *   (SHAPE: tiny | large-v3; P: fp32 | tf32 | bf16 | fp16; N: windows a launch, any N >= 1, default 1, 16 and 64;
 *   --fixed: every float32 sum whole, as the batches run it (ws_gpu_set_fixed), not in
 *   parts where the engine would cut it; --no-slice: a call of few blocks sums in parts
 *   (the _split and _fin entries) instead of slices inside its blocks (the _slice entry);
 *   --no-pdl: the _slice entries launched plainly, not as programmatic dependent launches)
 * Prints one table row per case (median us per launch and per window, the
 * rate, and the medians of the two convs from separately marked runs) and
 * the kernels' resource report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu_internal.h"
#include "cuda/gpu_conv_internal.h"
#include "whisper/model.h"
#include "whisper/stem.h"

typedef struct {
    const char *name;
    int n_mels, d;
    int windows[3];
} shape;

int main(int argc, char **argv)
{
    int iters = 50;
    const char *only = NULL, *only_prec = NULL;
    int only_win = 0, fixed = 0, no_slice = 0, no_pdl = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--prec") && i + 1 < argc)
            only_prec = argv[++i];
        else if (!strcmp(argv[i], "--win") && i + 1 < argc) {
            only_win = atoi(argv[++i]);
            if (only_win < 1) {
                fprintf(stderr, "bench-gpu_stem: --win %s: a window count of 1 or more\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--no-slice"))
            no_slice = 1;
        else if (!strcmp(argv[i], "--no-pdl"))
            no_pdl = 1;
        else if (!strcmp(argv[i], "--fixed"))
            fixed = 1;
        else {
            fprintf(stderr, "usage: %s [--iters N] [--only tiny|large-v3] [--prec P] [--win N] [--fixed] [--no-slice] [--no-pdl]\n",
                    argv[0]);
            return 2;
        }
    }
    const shape shapes[] = { { "tiny", 80, 384, { 1, 16, 64 } }, { "large-v3", 128, 1280, { 1, 64, 0 } } };
    const ws_precision precs[] = { WS_PREC_FP32, WS_PREC_TF32, WS_PREC_BF16, WS_PREC_FP16 };
    const int T = 3000;
    int printed_dev = 0, rc = 0;
    printf("%-9s %-5s %4s %12s %12s %10s %9s %9s\n", "shape", "prec", "win", "us/launch",
           "us/window", "TFLOP/s", "conv1", "conv2");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const shape *sh = &shapes[s];
        if (only && strcmp(only, sh->name))
            continue;
        ws_model m;
        ws_err e;
        if (ws_model_init_random(&m, sh->n_mels, sh->d, 42, 0, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        const double flop = 2.0 * ((double)T * sh->d * 3 * sh->n_mels + 1500.0 * sh->d * 3 * sh->d);
        for (size_t p = 0; p < 4; p++) {
            if (only_prec && strcmp(only_prec, ws_precision_name(precs[p])))
                continue;
            ws_stem *gs = ws_stem_new_gpu(&m, precs[p], 0, &e);
            ws_gpu_pair *g = ws_stem_gpu(gs);
            float *pos = malloc((size_t)1500 * sh->d * sizeof *pos);
            if (pos)
                ws_sinusoids(1500, sh->d, pos);
            if (!g || !pos || ws_gpu_set_add(g, pos, 1500, &e)) {
                fprintf(stderr, "bench-gpu_stem: %s\n", pos ? e.msg : "out of memory");
                free(pos);
                ws_stem_free(gs);
                ws_model_free(&m);
                return 1;
            }
            free(pos);
            ws_gpu_set_fixed(g, fixed);
            for (int k = 0; k < 2; k++) {
                ws_gpu_conv_no_slice(ws_gpu_pair_plan(g, 0, k), no_slice);
                ws_gpu_conv_no_pdl(ws_gpu_pair_plan(g, 0, k), no_pdl);
            }
            if (!printed_dev++)
                printf("# device: %s\n", ws_gpu_device_name(g));
            /* --win N: that count alone (any N >= 1), else the shape's three */
            const int one[3] = { only_win, 0, 0 };
            const int *wins = only_win > 0 ? one : sh->windows;
            for (int w = 0; w < 3 && wins[w]; w++) {
                int nw = wins[w];
                double med = 0, mn = 0, st[3] = { 0, 0, 0 };
                if (ws_gpu_bench(g, nw, T, 1, 4, 5, 2 * iters, &med, &mn, st, &e)) {
                    fprintf(stderr, "bench %s %s %d: %s\n", sh->name,
                            ws_precision_name(precs[p]), nw, e.msg);
                    rc = 1;
                    continue;
                }
                printf("%-9s %-5s %4d %12.1f %12.2f %10.1f %9.1f %9.1f\n", sh->name,
                       ws_precision_name(precs[p]), nw, med, med / nw,
                       flop * nw / (med * 1e-6) / 1e12, st[1], st[2]);
                fflush(stdout);
            }
            fprintf(stderr, "%s", ws_gpu_kernel_report(g));
            ws_stem_free(gs);
        }
        ws_model_free(&m);
    }
    return rc;
}

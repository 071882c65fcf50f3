/* check.c - --check: the conv stem on the GPU against the CPU, per precision, on random
 * log-Mel-like input for the model's shape (docs/spec.md "Command line"). Tested by
 * tests/test_cli.c and, on a GPU, tests/test_gpu.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "conv/conv.h"
#include "cuda/gpu.h"
#include "mel/mel.h"
#include "whisper/stem.h"

/* --check: GPU vs CPU on random log-Mel-like input for the model's shape. 0: every
 * precision within its bound; 1: a mismatch or a GPU failure; WS_CLI_EXIT_NO_GPU: no
 * usable GPU, nothing compared ("skipped"). */
int ws_cli_run_check(const options *o, ws_model *m)
{
    static const double bound[] = {1e-5, 2e-3, 1e-2, 1e-2}; /* docs/spec.md rel L2, by precision */
    const int n_win = 2, T = WS_CHUNK_FRAMES, t_out = ws_stem_out_len(T);
    ws_err err;
    char name[160];
    if (ws_gpu_probe(o->gpu_ordinal, name, sizeof name, &err)) { /* no driver, no device */
        printf("skipped: no usable GPU (%s); nothing to compare\n", err.msg);
        return WS_CLI_EXIT_NO_GPU;
    }
    ws_stem *cpu = ws_stem_new_cpu(m, o->threads, &err);
    if (!cpu) {
        ws_eprintf(PROG ": --check: %s", err.msg);
        return 1;
    }
    size_t nmel = (size_t)n_win * m->n_mels * T, nout = (size_t)n_win * t_out * m->d;
    float *mel = malloc(nmel * sizeof *mel), *ref = malloc(nout * sizeof *ref),
          *got = malloc(nout * sizeof *got);
    if (!mel || !ref || !got) {
        ws_eprintf(PROG ": --check: out of memory for %d windows of the model's shape", n_win);
        free(mel);
        free(ref);
        free(got);
        ws_stem_free(cpu);
        return 1;
    }
    ws_rng rng = {12345};
    for (size_t i = 0; i < nmel; i++)
        mel[i] = (float)(ws_rng_uniform(&rng) * 3.0 - 1.5);
    if (ws_stem_run(cpu, mel, n_win, T, 0, ref, &err)) {
        ws_eprintf(PROG ": --check: the CPU reference failed: %s", err.msg);
        free(mel);
        free(ref);
        free(got);
        ws_stem_free(cpu);
        return 1;
    }
    printf("model %s: n_mels %d, d %d; %d windows of %d frames; CPU reference (%s)\n",
           *m->name ? m->name : "(unnamed)", m->n_mels, m->d, n_win, T, ws_blas_name());
    int failed = 0;
    for (int p = WS_PREC_FP32; p <= WS_PREC_FP16; p++) {
        ws_stem *g = ws_stem_new_gpu(m, (ws_precision)p, o->gpu_ordinal, &err);
        if (!g) {
            printf("%-5s FAIL  %s\n", ws_precision_name((ws_precision)p), err.msg);
            failed = 1;
            continue;
        }
        if (p == WS_PREC_FP32)
            printf("device: %s\n", ws_gpu_device_name(ws_stem_gpu(g)));
        for (size_t i = 0; i < nout; i++)
            got[i] = NAN;
        if (ws_stem_run(g, mel, n_win, T, 0, got, &err)) {
            printf("%-5s FAIL  %s\n", ws_precision_name((ws_precision)p), err.msg);
            failed = 1;
        } else {
            double num = 0, den = 0, mx = 0;
            for (size_t i = 0; i < nout; i++) {
                double e = (double)got[i] - ref[i];
                num += e * e;
                den += (double)ref[i] * ref[i];
                if (!(fabs(e) <= mx))
                    mx = fabs(e);
            }
            double rl2 = sqrt(num / den);
            int ok = rl2 <= bound[p] && !isnan(rl2) && !isnan(mx);
            printf("%-5s %s  rel-L2 %.2e (bound %.0e)  max|err| %.2e\n",
                   ws_precision_name((ws_precision)p), ok ? "pass" : "FAIL", rl2, bound[p], mx);
            failed |= !ok;
        }
        ws_stem_free(g);
    }
    free(mel);
    free(ref);
    free(got);
    ws_stem_free(cpu);
    return failed;
}

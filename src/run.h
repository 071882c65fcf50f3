/* run.h - inputs to outputs: decode -> log-Mel -> stem -> write, for many files.
 *
 * Usage (main.c):
 *   ws_run_ctx c = {.mel = mel, .model = &m, .cpu = stem, .gpu = NULL, .pad = WS_PAD_AUDIO, ...};
 *   ws_job *jobs = ws_jobs_new(n, inputs, outputs);
 *   int failed = ws_run(&c, jobs, n);     // prints one stderr line per failed input
 *   ... jobs[i].ok, .shape, .ms ...       // for the report
 *   ws_jobs_free(jobs, n);
 *
 * With more than one input the stages overlap: worker threads decode and
 * compute the log-Mel of the next inputs and write finished outputs, while
 * the calling thread runs the stem (GPU or CPU) on each input in order. At
 * most `ahead` inputs are held in memory beyond the one in the stem.
 * Outputs are the same bytes as one input per run (tests/test_cli.c).
 */
#ifndef WS_RUN_H
#define WS_RUN_H

#include <stdint.h>

#include "audio.h"
#include "common.h"
#include "conv/stem.h"
#include "cuda/gpu.h"
#include "mel/mel.h"
#include "model.h"

typedef struct {
    double decode, mel, stem, write; /* milliseconds */
} ws_stage_ms;

typedef struct {
    const char *input;
    const char *output;
    /* filled by ws_run */
    int ok;
    char error[WS_ERR_LEN + 4096]; /* "input: message" */
    int src_rate, src_channels, decoded;
    size_t samples;
    int windows;
    int64_t shape[3];
    int ndim;
    ws_stage_ms ms;
    /* private to run.c */
    int state;
    ws_audio audio;
    ws_mel_out mel;
    float *result;
} ws_job;

typedef struct {
    const ws_mel *mel;
    const ws_model *model; /* NULL with mel_only */
    ws_stem *cpu;          /* the stem on the CPU, or NULL */
    ws_gpu *gpu;           /* the stem on the GPU, or NULL */
    ws_pad pad;
    int mel_only, add_pos, verbose;
    int threads;           /* CPU threads in all */
} ws_run_ctx;

/* jobs[i].input / .output point into the caller's strings (kept alive). */
ws_job *ws_jobs_new(int n, char *const *inputs, char *const *outputs);
void ws_jobs_free(ws_job *jobs, int n);

/* Runs every job; returns the number that failed. */
int ws_run(const ws_run_ctx *c, ws_job *jobs, int n);

#endif

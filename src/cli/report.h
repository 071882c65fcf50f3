/* report.h - the --json report: the run's settings, each input's manifest line with its
 * timings, the totals (docs/spec.md "--json").
 *
 *   ws_report_info info = {.device = "cpu", ...};
 *   cJSON *root = ws_report_new(&info);          // before the run
 *   ... ws_run ...
 *   if (ws_report_finish(root, path, &ctx, jobs, n, failed, &times)) ...  // written atomically
 *   cJSON_Delete(root);
 */
#ifndef WS_REPORT_H
#define WS_REPORT_H

#include "run.h"

typedef struct {
    const char *device, *device_name; /* "cpu"|"cuda", the GPU's name or "cpu" */
    int mel_on_gpu, batch_windows;    /* batch_windows: 0 without GPU batches */
    const char *precision;            /* effective */
    int threads, pos, n_mels, mel_only;
    ws_pad pad;
    const char *model_path;           /* NULL: no model */
    const ws_model *model;            /* loaded, or NULL (--mel -m: probe_* from the header) */
    int probe_n_mels, probe_d;
} ws_report_info;

typedef struct {
    double model_ms, init_ms, total_ms;
} ws_report_times;

struct cJSON *ws_report_new(const ws_report_info *info);

/* Adds the inputs, "failed", the timings and the GPU batches' numbers (c->stats), and
 * writes root to path atomically. 0, or -1 (said on stderr). */
int ws_report_finish(struct cJSON *root, const char *path, const ws_run_ctx *c, const ws_job *jobs,
                     int n, int failed, const ws_report_times *t);

#endif

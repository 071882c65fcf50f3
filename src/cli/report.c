/* report.c - the --json report (report.h). */
#include "report.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "conv/conv.h"
#include "output.h"

cJSON *ws_report_new(const ws_report_info *in)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "version", WS_VERSION);
    cJSON_AddStringToObject(root, "output_kind", in->mel_only ? "log_mel" : "embeddings");
    cJSON_AddStringToObject(root, "device", in->device);
    cJSON_AddStringToObject(root, "device_name", in->device_name);
    cJSON_AddStringToObject(root, "mel_device", in->mel_on_gpu ? "cuda" : "cpu");
    if (in->batch_windows)
        cJSON_AddNumberToObject(root, "batch_windows", in->batch_windows);
    cJSON_AddStringToObject(root, "precision", in->precision);
    cJSON_AddNumberToObject(root, "threads", in->threads);
    cJSON_AddStringToObject(root, "sgemm", ws_blas_name());
    cJSON_AddStringToObject(root, "pad", in->pad == WS_PAD_AUDIO  ? "audio"
                                         : in->pad == WS_PAD_MEL0 ? "mel0"
                                                                  : "none");
    cJSON_AddBoolToObject(root, "pos", in->pos);
    cJSON_AddNumberToObject(root, "n_mels", in->n_mels);
    if (in->model) {
        const ws_model *model = in->model;
        cJSON *m = cJSON_AddObjectToObject(root, "model");
        cJSON_AddStringToObject(m, "path", in->model_path);
        cJSON_AddStringToObject(m, "name", model->name);
        cJSON_AddNumberToObject(m, "n_mels", model->n_mels);
        cJSON_AddNumberToObject(m, "d", model->d);
        cJSON_AddStringToObject(m, "conv1_type", ws_tensor_type_name(model->conv1_type));
        cJSON_AddStringToObject(m, "conv2_type", ws_tensor_type_name(model->conv2_type));
        cJSON_AddBoolToObject(m, "positional_embedding", model->pos != NULL);
    } else if (in->probe_n_mels) { /* --mel -m: only the header was read */
        cJSON *m = cJSON_AddObjectToObject(root, "model");
        cJSON_AddStringToObject(m, "path", in->model_path);
        cJSON_AddNumberToObject(m, "n_mels", in->probe_n_mels);
        cJSON_AddNumberToObject(m, "d", in->probe_d);
    } else {
        cJSON_AddNullToObject(root, "model");
    }
    return root;
}

/* --json's per-input object: the manifest line (run.h), "ok", and the stage timings. */
static void report_job(cJSON *inputs, const ws_run_ctx *c, const ws_job *j)
{
    cJSON *o = ws_job_json(c, j);
    if (!o)
        return;
    cJSON_AddBoolToObject(o, "ok", j->ok);
    cJSON *t = cJSON_AddObjectToObject(o, "timings_ms");
    cJSON_AddNumberToObject(t, "decode", j->ms.decode);
    cJSON_AddNumberToObject(t, "mel", j->ms.mel);
    cJSON_AddNumberToObject(t, "stem", j->ms.stem);
    cJSON_AddNumberToObject(t, "write", j->ms.write);
    cJSON_AddNumberToObject(t, "stage", j->ms.stage);
    cJSON_AddItemToArray(inputs, o);
}

static int write_json(const char *path, cJSON *root)
{
    char *text = cJSON_Print(root);
    ws_err err;
    int rc = 0;
    if (!text || ws_write_file_atomic(path, text, strlen(text), &err)) {
        ws_eprintf("whisper-stem: --json: %s", text ? err.msg : "out of memory");
        rc = -1;
    }
    free(text);
    return rc;
}

int ws_report_finish(cJSON *root, const char *path, const ws_run_ctx *c, const ws_job *jobs,
                     int n, int failed, const ws_report_times *tm)
{
    cJSON *inputs = cJSON_AddArrayToObject(root, "inputs");
    for (int i = 0; i < n; i++)
        report_job(inputs, c, &jobs[i]);
    cJSON_AddNumberToObject(root, "failed", failed);
    cJSON *t = cJSON_AddObjectToObject(root, "timings_ms");
    cJSON_AddNumberToObject(t, "model_load", tm->model_ms);
    cJSON_AddNumberToObject(t, "init", tm->init_ms);
    cJSON_AddNumberToObject(t, "total", tm->total_ms);
    if (c->batcher && c->stats) {
        ws_run_stats *stats = c->stats;
        cJSON *g = cJSON_AddObjectToObject(root, "gpu_batches");
        cJSON_AddNumberToObject(g, "batches", (double)stats->batches);
        cJSON_AddNumberToObject(g, "windows", (double)stats->windows);
        cJSON_AddNumberToObject(g, "inputs", (double)stats->inputs);
        cJSON_AddNumberToObject(g, "inputs_alone", (double)stats->alone);
        cJSON_AddNumberToObject(g, "inputs_staged", stats->staged);
        cJSON_AddNumberToObject(g, "submit_ms", stats->submit_ms);
        cJSON_AddNumberToObject(g, "wait_ms", stats->wait_ms);
        cJSON_AddNumberToObject(g, "gpu_ms", stats->gpu_ms);
        cJSON_AddNumberToObject(g, "workers_idle_ms", stats->workers_idle_ms);
        ws_gpu_batch_times(c->batcher, &stats->alloc_ms, &stats->copy_ms, &stats->enqueue_ms);
        cJSON_AddNumberToObject(g, "submit_alloc_ms", stats->alloc_ms);
        cJSON_AddNumberToObject(g, "submit_copy_ms", stats->copy_ms);
        cJSON_AddNumberToObject(g, "submit_enqueue_ms", stats->enqueue_ms);
    }
    return write_json(path, root);
}

/* manifest.c - the JSON line of a finished job (manifest, sidecar, tar member, shard
 * index), its strings' escaping, and the manifest file. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"
#include "progress.h"
#include "run_int.h"
#include "signals.h"
#include "strmap.h"
#include "tar.h"
#include "trace.h"

cJSON *ws_job_json(const ws_run_ctx *c, const ws_job *j)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "input", j->input);
    if (j->output)
        cJSON_AddStringToObject(o, "output", j->output);
    else
        cJSON_AddNullToObject(o, "output");
    if (j->member) {
        char m[WS_TAR_NAME_MAX + 8];
        snprintf(m, sizeof m, "%s.npy", j->member);
        cJSON_AddStringToObject(o, "member", m);
    }
    cJSON_AddStringToObject(o, "status", j->ok ? "ok" : j->skipped ? "skipped" : "failed");
    if (j->ok || j->skipped)
        cJSON_AddNullToObject(o, "error");
    else
        cJSON_AddStringToObject(o, "error", j->error ? j->error : "(no message: out of memory)");
    if (j->ok) {
        cJSON *a = cJSON_AddArrayToObject(o, "shape");
        for (int i = 0; i < j->ndim; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)j->shape[i]));
        cJSON_AddStringToObject(o, "dtype", c->out_dtype == WS_OUT_F16 ? "float16" : "float32");
    }
    if (j->decoded) {
        cJSON_AddNumberToObject(o, "sample_rate", j->src_rate);
        cJSON_AddNumberToObject(o, "channels", j->src_channels);
        cJSON_AddNumberToObject(o, "samples", (double)j->samples);
        cJSON_AddNumberToObject(o, "duration_s", j->samples / (double)WS_SAMPLE_RATE);
    }
    if (j->ok) {
        cJSON_AddNumberToObject(o, "windows", j->windows);
        cJSON_AddNumberToObject(o, "content_frames", j->content_frames);
        if (!c->mel_only)
            cJSON_AddNumberToObject(o, "valid_ctx", j->valid_ctx);
    }
    return o;
}

static int g_manifest_lost; /* lines not written (under the pipeline's lock) */

int ws_run_manifest_lost(void)
{
    return g_manifest_lost;
}

typedef struct {
    int fd;
    const char *line;
    size_t n;
    int err; /* errno, or -1 for a short write */
} line_write;

static int write_line(void *ctx)
{
    line_write *w = ctx;
    size_t off = 0;
    while (off < w->n) {
        ssize_t k = write(w->fd, w->line + off, w->n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->err = k < 0 ? errno : -1;
            return -1;
        }
        off += (size_t)k;
    }
    return 0;
}

/* One line to the manifest, in one write(2) under the signal lock (a terminating signal
 * waits for it): a kill leaves whole lines only. */
static void manifest_line(const ws_run_ctx *c, const ws_job *j)
{
    cJSON *o = ws_job_json(c, j);
    char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    size_t n = txt ? strlen(txt) : 0;
    char *line = txt ? realloc(txt, n + 2) : NULL;
    if (!line) {
        free(txt);
        g_manifest_lost++;
        ws_eprintf("whisper-stem: --manifest %s: out of memory for the line of %s", c->manifest,
                   j->input);
        return;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    line_write w = {c->manifest_fd, line, n + 1, 0};
    if (ws_temp_locked(write_line, &w)) {
        g_manifest_lost++;
        ws_eprintf("whisper-stem: --manifest %s: the line of %s: %s", c->manifest, j->input,
                   w.err > 0 ? strerror(w.err) : "short write");
    }
    free(line);
}

void ws_run_report_one(const ws_run_ctx *c, const ws_job *j)
{
    if (j->skipped)
        ws_progress_skipped();
    else
        ws_progress_done(j->ok);
    ws_progress_job(j->ok ? WS_PROGRESS_OK : j->skipped ? WS_PROGRESS_SKIPPED : WS_PROGRESS_FAILED,
                    j->ok ? j->samples / (double)WS_SAMPLE_RATE : 0);
    ws_progress_hold(); /* the terminal's progress line cleared, kept off until release */
    if (c->manifest_fd >= 0)
        manifest_line(c, j);
    if (!j->ok && !j->skipped)
        ws_eprintf("whisper-stem: %s", j->error ? j->error : "(no message: out of memory)");
    else if (c->verbose && j->ok)
        ws_eprintf("whisper-stem: %s -> %s: %.2f s of audio, %d window%s; decode %.1f ms, "
                   "mel %.1f ms, stem %.1f ms, write %.1f ms",
                   j->input, j->output, j->samples / (double)WS_SAMPLE_RATE, j->windows,
                   j->windows == 1 ? "" : "s", j->ms.decode, j->ms.mel, j->ms.stem, j->ms.write);
    ws_progress_release();
}

/* Called once per job, with the pipeline's lock held (one at a time). A job of a tar
 * shard is reported when the shard is complete: after its commit, so "ok" in the manifest
 * means the shard is in place; if the commit fails, its written inputs fail with it. */

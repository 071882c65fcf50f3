/* outputs.c - writing one output (a file, a streamed file's commit, a tar member), its
 * sidecar, and the --skip-existing decisions for files. */
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

int ws_run_decide(const ws_run_ctx *c, ws_job *j)
{
    struct stat st;
    const int exists = strcmp(j->output, "-") && stat(j->output, &st) == 0;
    if (j->shard >= 0) { /* decided for the whole shard, by what its file holds */
        const int r = ws_shard_decide(c, j);
        if (r)
            return r;
    } else if (c->skip_existing && exists && S_ISREG(st.st_mode)) {
        j->skipped = 1; /* outputs appear whole or not at all: this one is complete */
        return 1;
    }
    /* a FIFO or device, or a tar member: held whole, never streamed */
    j->special = (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) || j->shard >= 0;
    return 0;
}

int ws_run_write_out(const ws_run_ctx *c, ws_job *j)
{
    ws_err e = {{0}};
    double t0 = ws_now();
    WS_RANGE_PUSH("write");
    int rc;
    if (j->out) { /* streamed by the stem: flush and name it */
        rc = ws_out_commit(j->out, &e);
        j->out = NULL;
    } else if (j->shard >= 0) {
        rc = ws_shard_write_member(c, j, &e);
    } else {
        size_t count = 1;
        for (int i = 0; i < j->ndim; i++)
            count *= (size_t)j->shape[i];
        if (c->out_dtype == WS_OUT_F16 && !j->result_f16)
            ws_f32_to_f16_inplace(j->result, count);
        rc = (c->root && ws_mkdir_parents(j->output, &e)) ||
             ws_write_array_dtype(j->output, j->result, c->out_dtype, j->shape, j->ndim, &e);
    }
    WS_RANGE_POP();
    j->ms.write += 1e3 * (ws_now() - t0);
    if (rc)
        return ws_run_fail(j, "%s: %s", j->input, e.msg);
    j->ok = 1;
    ws_run_release(j);
    return 0;
}


/* gpu_runtime.h - the device runtime (gpu.c): the one place that opens the CUDA driver, and
 * what every GPU part of whisper-stem runs on (the conv engine's plans, gpu_conv.c; the
 * Whisper stem, gpu_stem.c; the log-Mel, gpu_mel.c; the batches, gpu_batch.c).
 *
 * Per process (gpu.c's tables, behind one mutex, so any thread may open and close):
 *   the driver   libcuda.so.1 opened (ws_cu_open: dlopen, entry points, cuInit) by the first
 *                ws_gpu_open and closed after the last ws_gpu_close: one reference per ws_gpu
 *                (and per ws_gpu_probe while it runs);
 *   a device     per ordinal, its handle, name, capability, multiprocessor count and its
 *                primary context, retained (cuDevicePrimaryCtxRetain) when its first ws_gpu
 *                opens and released with its last;
 *   modules      ws_gpu_module: loaded once per device for a module name and PTX text, kept
 *                until the device's last ws_gpu closes (then unloaded, before the context
 *                is released). A caller never unloads a module it got from here.
 * Per ws_gpu (one thread at a time, as include/ws_conv.h says): a copy of the driver table
 * (cu), the device's context (made current by each call that needs it), one non-blocking
 * stream, and a pinned staging buffer (ws_gpu_staging). Streams, events and pinned memory
 * beyond those come from the calls below, and go back through them.
 *
 * struct ws_gpu's first fields are what the engine's plans (gpu_conv.c) read by name: cu,
 * dev, ctx, stream, cc_major, cc_minor, emit_major, emit_minor, name.
 * Tested without a GPU against a stand-in driver library (tests/test_gpu_runtime.c:
 * one context retain and one load per module for many ws_gpu on many threads, everything
 * given back); on a GPU by every GPU suite.
 */
#ifndef WS_CUDA_GPU_RUNTIME_H
#define WS_CUDA_GPU_RUNTIME_H

#include <stddef.h>

#include "common.h"
#include "driver.h"
#include "ws_conv.h"

struct ws_gpu_device; /* gpu.c's record of a device */

struct ws_gpu {
    ws_cu cu;             /* the process's driver table (gpu.c keeps the library open) */
    wscu_device dev;
    wscu_context ctx;     /* the device's primary context (retained by gpu.c) */
    wscu_stream stream;   /* this ws_gpu's own, non-blocking */
    int cc_major, cc_minor;
    int emit_major, emit_minor; /* the capability plans emit PTX for (ws_gpu_emit_cc) */
    char name[128];       /* the device's name, e.g. "NVIDIA H100 80GB HBM3" */
    int sms;              /* multiprocessors */
    int ordinal;
    struct ws_gpu_device *device;
    void *staging;        /* ws_gpu_staging: pinned, staging_cap bytes */
    size_t staging_cap;
};

/* Makes g's context current on the calling thread. 0, or -1 with err. */
int ws_gpu_current(ws_gpu *g, ws_err *err);

/* A new non-blocking stream of g's context; ws_gpu_stream_free destroys it (NULL-safe; work
 * enqueued on it still completes). 0, or -1 with err. */
int ws_gpu_stream_new(ws_gpu *g, wscu_stream *s, ws_err *err);
void ws_gpu_stream_free(ws_gpu *g, wscu_stream s);

/* A new event (WS_CU_EVENT_* flags) of g's context; ws_gpu_event_free destroys it
 * (NULL-safe). 0, or -1 with err. */
int ws_gpu_event_new(ws_gpu *g, unsigned flags, wscu_event *e, ws_err *err);
void ws_gpu_event_free(ws_gpu *g, wscu_event e);

/* The module `name` of this PTX text on g's device: loaded (ws_cu_load_module) the first
 * time, the same module for every later call with the same name and text, from any ws_gpu
 * of the device and any thread. The caller does not unload it. 0, or -1 with err (the
 * loader's message). */
int ws_gpu_module(ws_gpu *g, const char *name, const char *ptx, wscu_module *mod, ws_err *err);

/* Pinned (page-locked) host memory of g's context: *p gets `bytes` (>= 1), or NULL with
 * -1 and err. Any thread may call these (they touch nothing of g but its context). */
int ws_gpu_pinned_alloc(ws_gpu *g, size_t bytes, void **p, ws_err *err);
void ws_gpu_pinned_free(ws_gpu *g, void *p); /* NULL-safe */

/* g's pinned staging buffer, grown to at least `bytes` (the old one is freed first: its
 * contents are not kept); freed by ws_gpu_close. NULL with err when pinning fails (g then
 * has none). */
void *ws_gpu_staging(ws_gpu *g, size_t bytes, ws_err *err);

#endif

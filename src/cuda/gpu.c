/* gpu.c - the device runtime (gpu_runtime.h): the driver, opened once per process and
 * reference-counted; per device its primary context, retained once, and the module cache;
 * the public ws_gpu of include/ws_conv.h (open, close, device memory, copies) with its
 * stream and pinned staging; streams, events and pinned memory for the GPU code; and the
 * device probe of gpu.h (ws_gpu_probe, ws_gpu_driver_present).
 *
 * The process's tables (the driver, its reference count, the devices) are behind one
 * mutex; a device's module cache behind its own, so that loading a module does not hold
 * up other devices' opens. A ws_gpu's copy of the driver table stays valid while it is
 * open: the library is closed only after the last ws_gpu (or probe) lets it go.
 * Tested by tests/test_gpu_runtime.c against a stand-in driver library (no GPU), and by
 * every GPU suite on a GPU.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "gpu.h"
#include "gpu_runtime.h"

/* one module of the cache: its name and text, and the loaded module */
typedef struct cached_module {
    struct cached_module *next;
    char *name, *ptx;
    uint64_t hash; /* FNV-1a of ptx */
    wscu_module mod;
} cached_module;

struct ws_gpu_device {
    struct ws_gpu_device *next;
    int ordinal, refs;
    wscu_device dev;
    wscu_context ctx;     /* retained while refs > 0 */
    int cc_major, cc_minor, sms;
    char name[128];
    pthread_mutex_t mu;   /* the modules */
    cached_module *modules;
};

static struct {
    pthread_mutex_t mu;
    ws_cu cu;                     /* valid while refs > 0 */
    int refs;
    struct ws_gpu_device *devices;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* --- the driver --------------------------------------------------------------------- */

/* A reference to the driver, opening it for the first (R.mu held). 0, or -1 with err (no
 * library, a missing entry point, cuInit failed: ws_cu_open's messages). */
static int driver_ref_locked(ws_err *err)
{
    if (R.refs == 0 && ws_cu_open(&R.cu, err))
        return -1;
    R.refs++;
    return 0;
}

/* Lets a reference go, closing the library after the last (R.mu held). */
static void driver_unref_locked(void)
{
    if (R.refs > 0 && --R.refs == 0)
        ws_cu_close(&R.cu);
}

int ws_gpu_driver_present(void)
{
    return ws_cu_driver_present();
}

int ws_gpu_device_shared(int ordinal)
{
    int shared = 0;
    pthread_mutex_lock(&R.mu);
    for (struct ws_gpu_device *d = R.devices; d; d = d->next) {
        int mode = -1;
        if (d->ordinal == ordinal &&
            R.cu.DeviceGetAttribute(&mode, WS_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, d->dev) ==
                WS_CUDA_SUCCESS)
            shared = mode == 0;
    }
    pthread_mutex_unlock(&R.mu);
    return shared;
}

int ws_gpu_probe(int ordinal, char *name, size_t cap, ws_err *err)
{
    wscu_device dev = 0;
    int major = 0, minor = 0;
    char dn[128] = "";
    pthread_mutex_lock(&R.mu);
    if (driver_ref_locked(err)) {
        pthread_mutex_unlock(&R.mu);
        return -1;
    }
    int rc = ws_cu_device(&R.cu, ordinal, &dev, dn, sizeof dn, &major, &minor, err);
    driver_unref_locked();
    pthread_mutex_unlock(&R.mu);
    if (!rc && cap)
        snprintf(name, cap, "%s, sm_%d%d", dn, major, minor);
    return rc;
}

/* --- devices -------------------------------------------------------------------------- */

/* Unloads the device's modules (its context current) and forgets them. */
static void drop_modules(const ws_cu *cu, struct ws_gpu_device *d)
{
    cached_module *m = d->modules;
    d->modules = NULL;
    while (m) {
        cached_module *next = m->next;
        if (m->mod)
            cu->ModuleUnload(m->mod);
        free(m->name);
        free(m->ptx);
        free(m);
        m = next;
    }
}

/* Device `ordinal` with one more reference: found, or opened (its primary context
 * retained). R.mu held, the driver referenced. NULL with err. */
static struct ws_gpu_device *device_ref_locked(int ordinal, ws_err *err)
{
    ws_cu *cu = &R.cu;
    for (struct ws_gpu_device *d = R.devices; d; d = d->next)
        if (d->ordinal == ordinal) {
            d->refs++;
            return d;
        }
    struct ws_gpu_device *d = calloc(1, sizeof *d);
    if (!d) {
        ws_errf(err, "ws_gpu_open: out of memory");
        return NULL;
    }
    d->ordinal = ordinal;
    if (ws_cu_device(cu, ordinal, &d->dev, d->name, sizeof d->name, &d->cc_major, &d->cc_minor,
                     err))
        goto fail;
    CU_TRY(cu, DeviceGetAttribute(&d->sms, WS_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev),
           err);
    CU_TRY(cu, DevicePrimaryCtxRetain(&d->ctx, d->dev), err);
    pthread_mutex_init(&d->mu, NULL);
    d->refs = 1;
    d->next = R.devices;
    R.devices = d;
    return d;
cleanup: /* CU_TRY */
fail:
    free(d);
    return NULL;
}

/* Lets a reference of d go; after the last its modules are unloaded and its primary
 * context released (R.mu held). */
static void device_unref_locked(struct ws_gpu_device *d)
{
    if (--d->refs > 0)
        return;
    ws_cu *cu = &R.cu;
    cu->CtxSetCurrent(d->ctx);
    pthread_mutex_lock(&d->mu);
    drop_modules(cu, d);
    pthread_mutex_unlock(&d->mu);
    cu->DevicePrimaryCtxRelease(d->dev);
    pthread_mutex_destroy(&d->mu);
    for (struct ws_gpu_device **p = &R.devices; *p; p = &(*p)->next)
        if (*p == d) {
            *p = d->next;
            break;
        }
    free(d);
}

/* --- ws_gpu (include/ws_conv.h) ----------------------------------------------------- */

void ws_gpu_close(ws_gpu *g)
{
    if (!g)
        return;
    ws_cu *cu = &g->cu;
    if (g->device) {
        cu->CtxSetCurrent(g->ctx);
        if (g->stream) {
            cu->StreamSynchronize(g->stream);
            cu->StreamDestroy(g->stream);
        }
        if (g->staging)
            cu->MemFreeHost(g->staging);
        pthread_mutex_lock(&R.mu);
        device_unref_locked(g->device);
        driver_unref_locked();
        pthread_mutex_unlock(&R.mu);
    }
    free(g);
}

ws_gpu *ws_gpu_open(int ordinal, ws_err *err)
{
    ws_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        ws_errf(err, "ws_gpu_open: out of memory");
        return NULL;
    }
    pthread_mutex_lock(&R.mu);
    if (driver_ref_locked(err)) {
        pthread_mutex_unlock(&R.mu);
        free(g);
        return NULL;
    }
    struct ws_gpu_device *d = device_ref_locked(ordinal, err);
    if (!d) {
        driver_unref_locked();
        pthread_mutex_unlock(&R.mu);
        free(g);
        return NULL;
    }
    g->cu = R.cu;
    pthread_mutex_unlock(&R.mu);
    g->device = d;
    g->ordinal = ordinal;
    g->dev = d->dev;
    g->ctx = d->ctx;
    g->cc_major = d->cc_major;
    g->cc_minor = d->cc_minor;
    g->emit_major = g->cc_major;
    g->emit_minor = g->cc_minor;
    g->sms = d->sms;
    snprintf(g->name, sizeof g->name, "%s", d->name);
    ws_cu *cu = &g->cu;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, StreamCreate(&g->stream, WS_CU_STREAM_NON_BLOCKING), err);
    return g;
cleanup:
    ws_gpu_close(g);
    return NULL;
}

int ws_gpu_alloc(ws_gpu *g, size_t bytes, uint64_t *dptr, ws_err *err)
{
    if (!g || !dptr)
        return ws_errf(err, "ws_gpu_alloc: %s is NULL", g ? "dptr" : "g");
    *dptr = 0;
    if (bytes == 0)
        return ws_errf(err, "ws_gpu_alloc: bytes 0 must be >= 1");
    ws_cu *cu = &g->cu;
    wscu_devptr p = 0;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, MemAlloc(&p, bytes), err);
    *dptr = p;
    return 0;
cleanup:
    return -1;
}

void ws_gpu_release(ws_gpu *g, uint64_t dptr)
{
    if (!g || !dptr)
        return;
    g->cu.CtxSetCurrent(g->ctx);
    g->cu.MemFree(dptr);
}

int ws_gpu_upload(ws_gpu *g, uint64_t dst, const void *src, size_t bytes, ws_err *err)
{
    if (!g || !dst || (!src && bytes))
        return ws_errf(err, "ws_gpu_upload: %s is NULL", !g ? "g" : !dst ? "dst" : "src");
    if (!bytes)
        return 0;
    ws_cu *cu = &g->cu;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, MemcpyHtoDAsync(dst, src, bytes, g->stream), err);
    CU_TRY(cu, StreamSynchronize(g->stream), err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_download(ws_gpu *g, void *dst, uint64_t src, size_t bytes, ws_err *err)
{
    if (!g || !src || (!dst && bytes))
        return ws_errf(err, "ws_gpu_download: %s is NULL", !g ? "g" : !src ? "src" : "dst");
    if (!bytes)
        return 0;
    ws_cu *cu = &g->cu;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, MemcpyDtoHAsync(dst, src, bytes, g->stream), err);
    CU_TRY(cu, StreamSynchronize(g->stream), err);
    return 0;
cleanup:
    return -1;
}

/* --- the runtime's calls (gpu_runtime.h) -------------------------------------------- */

int ws_gpu_current(ws_gpu *g, ws_err *err)
{
    ws_cu *cu = &g->cu;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_stream_new(ws_gpu *g, wscu_stream *s, ws_err *err)
{
    ws_cu *cu = &g->cu;
    *s = NULL;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, StreamCreate(s, WS_CU_STREAM_NON_BLOCKING), err);
    return 0;
cleanup:
    return -1;
}

void ws_gpu_stream_free(ws_gpu *g, wscu_stream s)
{
    if (g && s)
        g->cu.StreamDestroy(s);
}

int ws_gpu_event_new(ws_gpu *g, unsigned flags, wscu_event *e, ws_err *err)
{
    ws_cu *cu = &g->cu;
    *e = NULL;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, EventCreate(e, flags), err);
    return 0;
cleanup:
    return -1;
}

void ws_gpu_event_free(ws_gpu *g, wscu_event e)
{
    if (g && e)
        g->cu.EventDestroy(e);
}

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static char *dup_text(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *t = malloc(n);
    if (t)
        memcpy(t, s, n);
    return t;
}

int ws_gpu_module(ws_gpu *g, const char *name, const char *ptx, wscu_module *mod, ws_err *err)
{
    struct ws_gpu_device *d = g->device;
    const uint64_t h = fnv1a64(ptx);
    *mod = NULL;
    if (ws_gpu_current(g, err))
        return -1;
    pthread_mutex_lock(&d->mu);
    for (cached_module *m = d->modules; m; m = m->next)
        if (m->hash == h && !strcmp(m->name, name) && !strcmp(m->ptx, ptx)) {
            *mod = m->mod;
            pthread_mutex_unlock(&d->mu);
            return 0;
        }
    cached_module *m = calloc(1, sizeof *m);
    if (!m || !(m->name = dup_text(name)) || !(m->ptx = dup_text(ptx))) {
        if (m) {
            free(m->name);
            free(m);
        }
        pthread_mutex_unlock(&d->mu);
        return ws_errf(err, "ws_gpu_module(%s): out of memory", name);
    }
    if (ws_cu_load_module(&g->cu, ptx, name, &m->mod, NULL, 0, err)) {
        free(m->name);
        free(m->ptx);
        free(m);
        pthread_mutex_unlock(&d->mu);
        return -1;
    }
    m->hash = h;
    m->next = d->modules;
    d->modules = m;
    *mod = m->mod;
    pthread_mutex_unlock(&d->mu);
    return 0;
}

int ws_gpu_pinned_alloc(ws_gpu *g, size_t bytes, void **p, ws_err *err)
{
    ws_cu *cu = &g->cu;
    *p = NULL;
    CU_TRY(cu, CtxSetCurrent(g->ctx), err);
    CU_TRY(cu, MemAllocHost(p, bytes), err);
    return 0;
cleanup:
    *p = NULL;
    return -1;
}

void ws_gpu_pinned_free(ws_gpu *g, void *p)
{
    if (g && p)
        g->cu.MemFreeHost(p);
}

void *ws_gpu_staging(ws_gpu *g, size_t bytes, ws_err *err)
{
    if (g->staging_cap >= bytes && g->staging)
        return g->staging;
    ws_cu *cu = &g->cu;
    if (g->staging)
        CU_TRY(cu, MemFreeHost(g->staging), err);
    g->staging = NULL;
    g->staging_cap = 0;
    if (ws_gpu_pinned_alloc(g, bytes, &g->staging, err))
        return NULL;
    g->staging_cap = bytes;
    return g->staging;
cleanup:
    return NULL;
}

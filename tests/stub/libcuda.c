/* libcuda.c - a stand-in for the CUDA driver library, for tests of the device runtime
 * without a GPU (tests/test_gpu_runtime.c builds it with ${CC:-cc} -shared and points
 * WHISPER_STEM_LIBCUDA at it).
 *
 * Every entry point whisper-stem resolves (src/cuda/driver.c) is here, with the ABI of
 * src/cuda/cuda_abi.h. Devices: $STUB_CUDA_DEVICES (default 1), compute capability
 * $STUB_CUDA_CC (default 90), 132 multiprocessors. Device memory is host memory (copies are
 * memcpy, so uploads and downloads round-trip), kernels do nothing, streams and events are
 * done at once. What it counts (stub_cuda.h) is in stub_cuda_state: calls, and the objects
 * alive now, so a test can see that everything was given back. Creating a stream, an event,
 * memory or a module with no context current (on the calling thread) fails, as it does with
 * the driver, and is counted.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stub_cuda.h"

#define MAX_DEV 4
#define ADD(field, v) __atomic_add_fetch(&stub_cuda_state.field, (v), __ATOMIC_SEQ_CST)

stub_cuda_counts stub_cuda_state;

static char contexts[MAX_DEV];      /* a context's handle: &contexts[device] */
static int ctx_refs[MAX_DEV];
static int dev_modules[MAX_DEV];    /* modules loaded in each device's context */
/* the calling thread's current context: a pthread key, not __thread (LeakSanitizer
 * misreads the dynamic TLS of a dlopen'd library in threads that outlive its use) */
static pthread_key_t current_key;
static pthread_once_t current_once = PTHREAD_ONCE_INIT;
static void current_init(void) { pthread_key_create(&current_key, NULL); }
static void *get_current(void) { pthread_once(&current_once, current_init); return pthread_getspecific(current_key); }
static void set_current(void *c) { pthread_once(&current_once, current_init); pthread_setspecific(current_key, c); }

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_CONTEXT = 201, NOT_FOUND = 500 };

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

/* 0 when a context is current and retained, else counted and INVALID_CONTEXT */
static int need_context(void)
{
    void *current = get_current();
    if (current) {
        const int d = (int)((char *)current - contexts);
        if (__atomic_load_n(&ctx_refs[d], __ATOMIC_SEQ_CST) > 0)
            return OK;
    }
    ADD(no_context, 1);
    return INVALID_CONTEXT;
}

int cuInit(unsigned flags)
{
    (void)flags;
    ADD(inits, 1);
    return OK;
}

int cuDriverGetVersion(int *v)
{
    *v = 12080;
    return OK;
}

int cuGetErrorName(int e, const char **s)
{
    *s = e == OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
         : e == INVALID_CONTEXT ? "CUDA_ERROR_INVALID_CONTEXT"
                                : "CUDA_ERROR_INVALID_VALUE";
    return OK;
}

int cuGetErrorString(int e, const char **s)
{
    *s = e == OUT_OF_MEMORY ? "out of memory" : e == INVALID_CONTEXT ? "invalid device context"
                                                                      : "invalid argument";
    return OK;
}

int cuDeviceGetCount(int *n)
{
    *n = env_int("STUB_CUDA_DEVICES", 1);
    return OK;
}

int cuDeviceGet(int *d, int ordinal)
{
    if (ordinal < 0 || ordinal >= env_int("STUB_CUDA_DEVICES", 1) || ordinal >= MAX_DEV)
        return INVALID_VALUE;
    *d = ordinal;
    return OK;
}

int cuDeviceGetName(char *name, int len, int d)
{
    if (len > 0) {
        strncpy(name, "Stand-in GPU", (size_t)len - 1);
        name[len - 1] = '\0';
    }
    (void)d;
    return OK;
}

int cuDeviceGetAttribute(int *v, int attr, int d)
{
    (void)d;
    const int cc = env_int("STUB_CUDA_CC", 90);
    switch (attr) {
    case 16: *v = 132; return OK;      /* multiprocessors */
    case 75: *v = cc / 10; return OK;  /* capability major */
    case 76: *v = cc % 10; return OK;
    case 97: *v = env_int("STUB_CUDA_SMEM_OPTIN", 232448); return OK; /* shared memory per block, opt-in */
    case 20: *v = env_int("STUB_CUDA_COMPUTE_MODE", 0); return OK; /* 0 default, 3 exclusive */
    }
    *v = 0;
    return OK;
}

int cuDevicePrimaryCtxRetain(void **ctx, int d)
{
    if (d < 0 || d >= MAX_DEV)
        return INVALID_VALUE;
    ADD(retains, 1);
    ADD(ctx_refs, 1);
    __atomic_add_fetch(&ctx_refs[d], 1, __ATOMIC_SEQ_CST);
    *ctx = &contexts[d];
    return OK;
}

int cuDevicePrimaryCtxRelease_v2(int d)
{
    if (d < 0 || d >= MAX_DEV || __atomic_load_n(&ctx_refs[d], __ATOMIC_SEQ_CST) < 1)
        return INVALID_CONTEXT;
    ADD(releases, 1);
    ADD(ctx_refs, -1);
    if (__atomic_sub_fetch(&ctx_refs[d], 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&dev_modules[d], __ATOMIC_SEQ_CST) > 0)
        ADD(modules_at_reset, __atomic_load_n(&dev_modules[d], __ATOMIC_SEQ_CST));
    return OK;
}

int cuCtxSetCurrent(void *ctx)
{
    set_current(ctx);
    return OK;
}

int cuCtxGetCurrent(void **ctx)
{
    *ctx = get_current();
    return OK;
}

int cuStreamCreate(void **s, unsigned flags)
{
    (void)flags;
    if (need_context())
        return INVALID_CONTEXT;
    *s = malloc(1);
    ADD(streams, 1);
    return OK;
}

int cuStreamDestroy_v2(void *s)
{
    free(s);
    ADD(streams, -1);
    return OK;
}

int cuStreamSynchronize(void *s)
{
    (void)s;
    return OK;
}

int cuEventCreate(void **e, unsigned flags)
{
    (void)flags;
    if (need_context())
        return INVALID_CONTEXT;
    *e = malloc(1);
    ADD(events, 1);
    return OK;
}

int cuEventDestroy_v2(void *e)
{
    free(e);
    ADD(events, -1);
    return OK;
}

int cuEventRecord(void *e, void *s)
{
    (void)e, (void)s;
    return OK;
}

int cuEventSynchronize(void *e)
{
    (void)e;
    return OK;
}

int cuEventQuery(void *e)
{
    (void)e;
    return OK;
}

int cuEventElapsedTime_v2(float *ms, void *a, void *b)
{
    (void)a, (void)b;
    *ms = 0.001f;
    return OK;
}

int cuMemAlloc_v2(uint64_t *p, size_t bytes)
{
    if (need_context())
        return INVALID_CONTEXT;
    if (bytes == 0 || bytes > ((size_t)1 << 34))
        return bytes ? OUT_OF_MEMORY : INVALID_VALUE;
    void *m = calloc(1, bytes);
    if (!m)
        return OUT_OF_MEMORY;
    *p = (uint64_t)(uintptr_t)m;
    ADD(dev_allocs, 1);
    ADD(alloc_calls, 1);
    return OK;
}

int cuMemFree_v2(uint64_t p)
{
    if (!p)
        return OK;
    free((void *)(uintptr_t)p);
    ADD(dev_allocs, -1);
    return OK;
}

int cuMemAllocHost_v2(void **p, size_t bytes)
{
    if (need_context())
        return INVALID_CONTEXT;
    if (!(*p = malloc(bytes ? bytes : 1)))
        return OUT_OF_MEMORY;
    ADD(host_allocs, 1);
    return OK;
}

int cuMemFreeHost(void *p)
{
    free(p);
    ADD(host_allocs, -1);
    return OK;
}

int cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t bytes, void *s)
{
    (void)s;
    memcpy((void *)(uintptr_t)dst, src, bytes);
    return OK;
}

int cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t bytes, void *s)
{
    (void)s;
    memcpy(dst, (const void *)(uintptr_t)src, bytes);
    return OK;
}

int cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, void *s)
{
    (void)s;
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, bytes);
    return OK;
}

int cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void *s)
{
    (void)s;
    uint32_t *p = (uint32_t *)(uintptr_t)dst;
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return OK;
}

/* a module: any text that starts as whisper-stem's modules do (a comment, then .version) */
int cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *opt, void **val)
{
    (void)n, (void)opt, (void)val;
    if (need_context())
        return INVALID_CONTEXT;
    if (!strstr((const char *)image, ".version") || !strstr((const char *)image, ".entry"))
        return 218; /* CUDA_ERROR_INVALID_PTX */
    int *dm = malloc(sizeof *dm); /* the module: its device */
    *dm = (int)((char *)get_current() - contexts);
    *m = dm;
    __atomic_add_fetch(&dev_modules[*dm], 1, __ATOMIC_SEQ_CST);
    ADD(loads, 1);
    ADD(modules, 1);
    return OK;
}

int cuModuleUnload(void *m)
{
    __atomic_sub_fetch(&dev_modules[*(int *)m], 1, __ATOMIC_SEQ_CST);
    free(m);
    ADD(unloads, 1);
    ADD(modules, -1);
    return OK;
}

int cuModuleGetFunction(void **f, void *m, const char *name)
{
    (void)name;
    *f = m;
    return OK;
}

int cuFuncGetAttribute(int *v, int attr, void *f)
{
    (void)attr, (void)f;
    *v = 0;
    return OK;
}

int cuFuncSetAttribute(void *f, int attr, int v)
{
    (void)f;
    if (attr == 8 && v > env_int("STUB_CUDA_SMEM_OPTIN", 232448)) /* dynamic shared memory past the opt-in */
        return INVALID_VALUE;
    return OK;
}

int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *s, void **params, void **extra)
{
    (void)f, (void)bx, (void)by, (void)bz, (void)shared, (void)s;
    (void)params, (void)extra;
    if (!gx || !gy || !gz) /* as the driver: a grid of no blocks is refused */
        return INVALID_VALUE;
    ADD(launches, 1);
    return OK;
}

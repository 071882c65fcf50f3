/* driver.c - dlopen of libcuda.so.1, entry points, error text, module
 * loading with JIT logs. See driver.h. Tested by tests/test_gpu.c
 * (gpu_driver::module_load_error_names_call_and_writes_ptx) and, with a
 * stand-in for the driver, tests/test_output.c (the PTX dump's file). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "output.h"

#define JIT_LOG_BYTES 16384

int ws_cu_fail(const ws_cu *cu, wscu_result r, const char *call, const char *file, int line,
               ws_err *err)
{
    const char *name = NULL, *str = NULL;
    if (cu && cu->GetErrorName && cu->GetErrorName(r, &name) != WS_CUDA_SUCCESS)
        name = NULL;
    if (cu && cu->GetErrorString && cu->GetErrorString(r, &str) != WS_CUDA_SUCCESS)
        str = NULL;
    return ws_errf(err, "%s failed: %s (%s) [wscu_result %d] at %s:%d", call,
                   name ? name : "unknown error", str ? str : "no description", r, file, line);
}

void ws_cu_close(ws_cu *cu)
{
    if (!cu)
        return;
    if (cu->lib)
        dlclose(cu->lib);
    memset(cu, 0, sizeof *cu);
}

/* Resolves the first of two names that the library exports. */
static void *sym2(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    if (!p && b)
        p = dlsym(lib, b);
    return p;
}

/* WHISPER_STEM_LIBCUDA names another driver library (a non-standard
 * install, or a path that does not exist to test the CPU fallback). */
static const char *driver_name(void)
{
    const char *name = getenv("WHISPER_STEM_LIBCUDA");
    return name && *name ? name : "libcuda.so.1";
}

int ws_cu_driver_present(void)
{
    void *lib = dlopen(driver_name(), RTLD_LAZY | RTLD_LOCAL);
    if (lib)
        dlclose(lib);
    return lib != NULL;
}

int ws_cu_open(ws_cu *cu, ws_err *err)
{
    memset(cu, 0, sizeof *cu);
    const char *name = driver_name();
    cu->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!cu->lib) {
        const char *why = dlerror();
        return ws_errf(err, "no CUDA driver: dlopen(\"%s\") failed: %s", name,
                       why ? why : "unknown reason");
    }
    /* name in cuda.h -> symbol it maps to (versioned where cuda.h says so) */
    struct { void **slot; const char *sym, *alt; } tab[] = {
#define E(field, sym, alt) { (void **)&cu->field, sym, alt }
        E(Init, "cuInit", NULL),
        E(DriverGetVersion, "cuDriverGetVersion", NULL),
        E(GetErrorName, "cuGetErrorName", NULL),
        E(GetErrorString, "cuGetErrorString", NULL),
        E(DeviceGetCount, "cuDeviceGetCount", NULL),
        E(DeviceGet, "cuDeviceGet", NULL),
        E(DeviceGetName, "cuDeviceGetName", NULL),
        E(DeviceGetAttribute, "cuDeviceGetAttribute", NULL),
        E(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
        E(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
        E(CtxSetCurrent, "cuCtxSetCurrent", NULL),
        E(CtxGetCurrent, "cuCtxGetCurrent", NULL),
        E(StreamCreate, "cuStreamCreate", NULL),
        E(StreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy"),
        E(StreamSynchronize, "cuStreamSynchronize", NULL),
        E(EventCreate, "cuEventCreate", NULL),
        E(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
        E(EventRecord, "cuEventRecord", NULL),
        E(EventSynchronize, "cuEventSynchronize", NULL),
        E(EventQuery, "cuEventQuery", NULL),
        E(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
        E(MemAlloc, "cuMemAlloc_v2", NULL),
        E(MemFree, "cuMemFree_v2", NULL),
        E(MemAllocHost, "cuMemAllocHost_v2", NULL),
        E(MemFreeHost, "cuMemFreeHost", NULL),
        E(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL),
        E(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL),
        E(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL),
        E(MemsetD32Async, "cuMemsetD32Async", NULL),
        E(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL),
        E(ModuleUnload, "cuModuleUnload", NULL),
        E(ModuleGetFunction, "cuModuleGetFunction", NULL),
        E(FuncGetAttribute, "cuFuncGetAttribute", NULL),
        E(FuncSetAttribute, "cuFuncSetAttribute", NULL),
        E(LaunchKernel, "cuLaunchKernel", NULL),
#undef E
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        *tab[i].slot = sym2(cu->lib, tab[i].sym, tab[i].alt);
        if (!*tab[i].slot) {
            ws_errf(err, "CUDA driver too old: libcuda.so.1 lacks %s", tab[i].sym);
            ws_cu_close(cu);
            return -1;
        }
    }
    cu->TensorMapEncodeTiled = (PFN_cuTensorMapEncodeTiled)sym2(cu->lib, "cuTensorMapEncodeTiled", NULL);
    cu->LaunchKernelEx = (PFN_cuLaunchKernelEx)sym2(cu->lib, "cuLaunchKernelEx", NULL);
    cu->OccupancyMaxActiveBlocksPerMultiprocessor = (PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor)sym2(
        cu->lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL);
    CU_TRY(cu, Init(0), err);
    CU_TRY(cu, DriverGetVersion(&cu->version), err);
    return 0;
cleanup:
    ws_cu_close(cu);
    return -1;
}

int ws_dump_temp(const char *prefix, const char *header, const char *text, char *path_out,
                 size_t cap, ws_err *err)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    if (cap)
        snprintf(path_out, cap, "%s/%sXXXXXX.ptx", dir, prefix);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return ws_errf(err, "%s: cannot open the directory: %s", dir, strerror(errno));
    char name[256];
    int fd = ws_create_unique(dfd, prefix, ".ptx", 0600, name, sizeof name);
    int e = errno;
    if (fd < 0) {
        close(dfd);
        return ws_errf(err, "%s/%sXXXXXX.ptx: cannot create: %s", dir, prefix, strerror(e));
    }
    if (cap && (size_t)snprintf(path_out, cap, "%s/%s", dir, name) >= cap)
        snprintf(path_out, cap, "%s", name); /* at least the file's own name */
    FILE *f = fdopen(fd, "w");
    if (!f) {
        e = errno;
        close(fd);
        unlinkat(dfd, name, 0); /* no empty file left behind */
        close(dfd);
        return ws_errf(err, "%s/%s: cannot write: %s", dir, name, strerror(e));
    }
    if (header)
        fputs(header, f);
    int line = 1;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "%5d  %.*s\n", line++, (int)n, p);
        p += n + (nl ? 1 : 0);
    }
    int bad = ferror(f);
    e = errno;
    if (fclose(f) && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        unlinkat(dfd, name, 0); /* no partial file left behind */
    close(dfd);
    if (bad)
        return ws_errf(err, "%s/%s: cannot write: %s", dir, name, strerror(e));
    return 0;
}

int ws_cu_load_module(const ws_cu *cu, const char *ptx, const char *name, wscu_module *mod,
                      char *info_log, size_t info_len, ws_err *err)
{
    char *ib = malloc(JIT_LOG_BYTES), *eb = malloc(JIT_LOG_BYTES);
    if (!ib || !eb) {
        free(ib);
        free(eb);
        return ws_errf(err, "out of memory for JIT logs");
    }
    ib[0] = eb[0] = '\0';
    wscu_jit_option opt[] = { WS_CU_JIT_INFO_LOG_BUFFER, WS_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                           WS_CU_JIT_ERROR_LOG_BUFFER, WS_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                           WS_CU_JIT_LOG_VERBOSE };
    void *val[] = { ib, (void *)(uintptr_t)JIT_LOG_BYTES, eb, (void *)(uintptr_t)JIT_LOG_BYTES,
                    (void *)(uintptr_t)1 };
    *mod = NULL;
    wscu_result r = cu->ModuleLoadDataEx(mod, ptx, 5, opt, val);
    if (info_log && info_len) {
        snprintf(info_log, info_len, "%s", ib);
    }
    if (r != WS_CUDA_SUCCESS) {
        char path[512], prefix[128];
        snprintf(prefix, sizeof prefix, "whisper-stem-%.64s-", name);
        size_t hl = strlen(eb) + strlen(ib) + 256;
        char *hdr = malloc(hl);
        if (hdr)
            snprintf(hdr, hl, "// cuModuleLoadDataEx failed\n// JIT error log:\n%s\n// JIT info log:\n%s\n// PTX:\n",
                     eb, ib);
        ws_err dump_err;
        int wrote = ws_dump_temp(prefix, hdr, ptx, path, sizeof path, &dump_err);
        free(hdr);
        char first[200];
        const char *nl = strchr(eb, '\n');
        snprintf(first, sizeof first, "%.*s", nl ? (int)(nl - eb) : (int)strlen(eb), eb);
        char call[64];
        snprintf(call, sizeof call, "cuModuleLoadDataEx(%s)", name);
        ws_err e0;
        ws_cu_fail(cu, r, call, __FILE__, __LINE__, &e0);
        if (wrote == 0)
            ws_errf(err, "%s; JIT log: %s; PTX and logs in %s", e0.msg, first[0] ? first : "(empty)",
                    path);
        else
            ws_errf(err, "%s; JIT log: %s; PTX and logs not written: %s", e0.msg,
                    first[0] ? first : "(empty)", dump_err.msg);
        free(ib);
        free(eb);
        return -1;
    }
    free(ib);
    free(eb);
    return 0;
}

int ws_cu_device(ws_cu *cu, int ordinal, wscu_device *dev, char *name, size_t cap, int *major,
                 int *minor, ws_err *err)
{
    int n = 0;
    char dn[128] = "";
    CU_TRY(cu, DeviceGetCount(&n), err);
    if (n < 1)
        return ws_errf(err, "no CUDA device: the driver reports 0 devices");
    if (ordinal < 0 || ordinal >= n)
        return ws_errf(err, "no CUDA device %d: the driver reports %d (0 to %d; "
                            "CUDA_VISIBLE_DEVICES chooses which)", ordinal, n, n - 1);
    CU_TRY(cu, DeviceGet(dev, ordinal), err);
    CU_TRY(cu, DeviceGetName(dn, (int)sizeof dn, *dev), err);
    CU_TRY(cu, DeviceGetAttribute(major, WS_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, *dev), err);
    CU_TRY(cu, DeviceGetAttribute(minor, WS_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, *dev), err);
    if (cap)
        snprintf(name, cap, "%s", dn);
    if (*major < 8)
        return ws_errf(err, "%s: compute capability %d.%d is below 8.0, which the kernels need", dn,
                       *major, *minor);
    return 0;
cleanup:
    return -1;
}

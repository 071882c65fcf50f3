/* driver.h - the CUDA driver API, opened at run time.
 *
 * libcuda.so.1 is loaded with dlopen and its entry points resolved with
 * dlsym (versioned _v2 names where cuda.h maps a call to one), so binaries
 * carry no link-time dependency on the driver: without it ws_cu_open fails
 * with a message and the caller falls back to the CPU.
 *
 * Errors: every call goes through CU_TRY, which on failure writes
 *   "cuMemAlloc(&p, bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at src/cuda/x.c:12"
 * into the caller's ws_err and jumps to the function's `cleanup:` label.
 *
 * Module loading passes both JIT log buffers; on failure the error log, the
 * info log and a line-numbered copy of the PTX go to a file whose path is in
 * the error message. Tested by tests/test_gpu.c (gpu_driver::module_load_error_names_call_and_writes_ptx).
 *
 * ws_cu_open, ws_cu_close and ws_cu_device are the device runtime's (gpu.c, gpu_runtime.h),
 * which opens the driver once per process; the rest of whisper-stem takes a ws_gpu.
 */
#ifndef WS_CUDA_DRIVER_H
#define WS_CUDA_DRIVER_H

#include "common.h"
#include "cuda_abi.h"

typedef struct {
    void *lib; /* dlopen handle of libcuda.so.1 */
    int version; /* cuDriverGetVersion, e.g. 13000 */
    PFN_cuInit Init;
    PFN_cuDriverGetVersion DriverGetVersion;
    PFN_cuGetErrorName GetErrorName;
    PFN_cuGetErrorString GetErrorString;
    PFN_cuDeviceGetCount DeviceGetCount;
    PFN_cuDeviceGet DeviceGet;
    PFN_cuDeviceGetName DeviceGetName;
    PFN_cuDeviceGetAttribute DeviceGetAttribute;
    PFN_cuDevicePrimaryCtxRetain DevicePrimaryCtxRetain;
    PFN_cuDevicePrimaryCtxRelease DevicePrimaryCtxRelease;
    PFN_cuCtxSetCurrent CtxSetCurrent;
    PFN_cuCtxGetCurrent CtxGetCurrent;
    PFN_cuStreamCreate StreamCreate;
    PFN_cuStreamDestroy StreamDestroy;
    PFN_cuStreamSynchronize StreamSynchronize;
    PFN_cuEventCreate EventCreate;
    PFN_cuEventDestroy EventDestroy;
    PFN_cuEventRecord EventRecord;
    PFN_cuEventSynchronize EventSynchronize;
    PFN_cuEventQuery EventQuery;
    PFN_cuEventElapsedTime EventElapsedTime;
    PFN_cuMemAlloc MemAlloc;
    PFN_cuMemFree MemFree;
    PFN_cuMemAllocHost MemAllocHost;
    PFN_cuMemFreeHost MemFreeHost;
    PFN_cuMemcpyHtoDAsync MemcpyHtoDAsync;
    PFN_cuMemcpyDtoHAsync MemcpyDtoHAsync;
    PFN_cuMemcpyDtoDAsync MemcpyDtoDAsync;
    PFN_cuMemsetD32Async MemsetD32Async;
    PFN_cuModuleLoadDataEx ModuleLoadDataEx;
    PFN_cuModuleUnload ModuleUnload;
    PFN_cuModuleGetFunction ModuleGetFunction;
    PFN_cuFuncGetAttribute FuncGetAttribute;
    PFN_cuFuncSetAttribute FuncSetAttribute;
    PFN_cuLaunchKernel LaunchKernel;
    /* optional (CUDA 12 drivers on): NULL where the driver lacks it, and the kernels that
     * read tensor maps are then not used */
    PFN_cuTensorMapEncodeTiled TensorMapEncodeTiled;
    /* optional (CUDA 12 drivers on): launches that may begin before the stream's previous
     * kernel ends (programmatic dependent launch); NULL: plain launches */
    PFN_cuLaunchKernelEx LaunchKernelEx;
    /* optional: what the tests hold the Hopper GEMM's launch bounds to */
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor OccupancyMaxActiveBlocksPerMultiprocessor;
} ws_cu;

/* dlopen("libcuda.so.1"), resolve every entry point, cuInit(0).
 * Returns 0, or -1 with err saying what is missing. On failure *cu is closed. */
int ws_cu_open(ws_cu *cu, ws_err *err);

/* dlclose; NULL-safe and idempotent. */
void ws_cu_close(ws_cu *cu);

/* 1 when the driver library (libcuda.so.1, or $WHISPER_STEM_LIBCUDA) loads, whether or
 * not a device works: tells "no driver installed" from "a driver, but no usable GPU". */
int ws_cu_driver_present(void);

/* Formats a failed call into err (name and string of r, call text,
 * file:line) and returns -1. */
int ws_cu_fail(const ws_cu *cu, wscu_result r, const char *call, const char *file, int line,
               ws_err *err);

/* CU_TRY(cu, MemAlloc(&p, n), err): calls cu->MemAlloc(&p, n); on failure
 * records "cuMemAlloc(&p, n)" with file:line and does `goto cleanup`. */
#define CU_TRY(cu, call, err)                                                   \
    do {                                                                        \
        wscu_result ws_cu_r_ = (cu)->call;                                         \
        if (ws_cu_r_ != WS_CUDA_SUCCESS) {                                      \
            ws_cu_fail((cu), ws_cu_r_, "cu" #call, __FILE__, __LINE__, (err));  \
            goto cleanup;                                                       \
        }                                                                       \
    } while (0)

/* cuModuleLoadDataEx(ptx) with the info and error logs. On failure err holds
 * the call, the first line of the JIT error log and the path of a file with
 * both logs and the PTX numbered line by line. `name` labels that file.
 * If info_log is not NULL it receives the info log (info_len bytes). */
/* Device number `ordinal` of an opened driver (0: the first CUDA_VISIBLE_DEVICES leaves):
 * its handle, name and compute capability. Refuses, with one line, no device, an ordinal
 * past the last, and a capability below 8.0 (what the kernels need). 0 or -1. */
int ws_cu_device(ws_cu *cu, int ordinal, wscu_device *dev, char *name, size_t cap, int *major,
                 int *minor, ws_err *err);

int ws_cu_load_module(const ws_cu *cu, const char *ptx, const char *name, wscu_module *mod,
                      char *info_log, size_t info_len, ws_err *err);

/* Writes header, then text with "%5d  " line numbers, to a new file
 * $TMPDIR/<prefix>XXXXXX.ptx (default /tmp; X random), created exclusively
 * (O_EXCL|O_NOFOLLOW, mode 0600) so that a planted name or symbolic link is
 * never followed. Its path goes to path_out (cap bytes). 0, or -1 with err. */
int ws_dump_temp(const char *prefix, const char *header, const char *text, char *path_out,
                 size_t cap, ws_err *err);

#endif

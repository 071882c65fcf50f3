/* cuda_abi.h - the few CUDA driver API types, constants and function types
 * whisper-stem uses, declared here so that the build needs no CUDA toolkit.
 *
 * The values are the driver API's stable ABI (cuda.h of every toolkit since
 * CUDA 4 carries the same numbers; enums are int-sized, handles are opaque
 * pointers, CUdeviceptr is an unsigned 64-bit integer). Our names carry a
 * wscu_ / WS_ prefix (wscu_result for CUresult, WS_CU_JIT_INFO_LOG_BUFFER for
 * CU_JIT_INFO_LOG_BUFFER, ...) so that they can sit beside cuda.h:
 * tests/test_ptx.c checks every constant and size against it when the
 * toolkit header is visible (`#if __has_include(<cuda.h>)`).
 *
 * Symbol names: where cuda.h #defines a call to a versioned symbol
 * (cuMemAlloc -> cuMemAlloc_v2, ...) the runtime resolves that versioned name
 * with dlsym; the function types below are those of the versioned symbols.
 */
#ifndef WS_CUDA_ABI_H
#define WS_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int wscu_result;              /* CUresult: enum cudaError_enum */
typedef int wscu_device;              /* device ordinal */
typedef uint64_t wscu_devptr;         /* CUdeviceptr_v2 */
typedef struct CUctx_st *wscu_context;
typedef struct CUmod_st *wscu_module;
typedef struct CUfunc_st *wscu_function;
typedef struct CUstream_st *wscu_stream;
typedef struct CUevent_st *wscu_event;
typedef int wscu_jit_option;          /* enum CUjit_option_enum */
typedef int wscu_dev_attr;            /* enum CUdevice_attribute_enum */
typedef int wscu_func_attr;           /* enum CUfunction_attribute_enum */
/* CUtensorMap: 128 opaque bytes, 128-byte aligned (the driver needs 64) */
typedef struct { _Alignas(128) uint64_t opaque[16]; } wscu_tensor_map;

enum {
    WS_CUDA_SUCCESS = 0,
    WS_CUDA_ERROR_NO_DEVICE = 100,
    WS_CUDA_ERROR_NOT_READY = 600,

    WS_CU_JIT_WALL_TIME = 2,
    WS_CU_JIT_INFO_LOG_BUFFER = 3,
    WS_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
    WS_CU_JIT_ERROR_LOG_BUFFER = 5,
    WS_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
    WS_CU_JIT_LOG_VERBOSE = 12,

    WS_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    WS_CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20, /* 0: default, shared by processes */
    WS_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    WS_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    WS_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,

    WS_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    WS_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    WS_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,

    /* cuTensorMapEncodeTiled's enums (CUtensorMapDataType, ...Interleave, ...Swizzle,
     * ...L2promotion, ...FloatOOBfill) */
    WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    WS_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
    WS_CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    WS_CU_TENSOR_MAP_SWIZZLE_64B = 2,
    WS_CU_TENSOR_MAP_SWIZZLE_128B = 3,
    WS_CU_TENSOR_MAP_L2_PROMOTION_L2_128B = 2,
    WS_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0,

    WS_CU_STREAM_NON_BLOCKING = 1,
    WS_CU_EVENT_DEFAULT = 0,
    WS_CU_EVENT_BLOCKING_SYNC = 1,
    WS_CU_EVENT_DISABLE_TIMING = 2,
};

typedef wscu_result (*PFN_cuInit)(unsigned int flags);
typedef wscu_result (*PFN_cuDriverGetVersion)(int *version);
typedef wscu_result (*PFN_cuGetErrorName)(wscu_result e, const char **s);
typedef wscu_result (*PFN_cuGetErrorString)(wscu_result e, const char **s);
typedef wscu_result (*PFN_cuDeviceGetCount)(int *n);
typedef wscu_result (*PFN_cuDeviceGet)(wscu_device *d, int ordinal);
typedef wscu_result (*PFN_cuDeviceGetName)(char *name, int len, wscu_device d);
typedef wscu_result (*PFN_cuDeviceGetAttribute)(int *v, wscu_dev_attr a, wscu_device d);
typedef wscu_result (*PFN_cuDevicePrimaryCtxRetain)(wscu_context *c, wscu_device d);
typedef wscu_result (*PFN_cuDevicePrimaryCtxRelease)(wscu_device d);
typedef wscu_result (*PFN_cuCtxSetCurrent)(wscu_context c);
typedef wscu_result (*PFN_cuCtxGetCurrent)(wscu_context *c);
typedef wscu_result (*PFN_cuStreamCreate)(wscu_stream *s, unsigned int flags);
typedef wscu_result (*PFN_cuStreamDestroy)(wscu_stream s);
typedef wscu_result (*PFN_cuStreamSynchronize)(wscu_stream s);
typedef wscu_result (*PFN_cuEventCreate)(wscu_event *e, unsigned int flags);
typedef wscu_result (*PFN_cuEventDestroy)(wscu_event e);
typedef wscu_result (*PFN_cuEventRecord)(wscu_event e, wscu_stream s);
typedef wscu_result (*PFN_cuEventSynchronize)(wscu_event e);
typedef wscu_result (*PFN_cuEventQuery)(wscu_event e);
typedef wscu_result (*PFN_cuEventElapsedTime)(float *ms, wscu_event start, wscu_event end);
typedef wscu_result (*PFN_cuMemAlloc)(wscu_devptr *p, size_t bytes);
typedef wscu_result (*PFN_cuMemFree)(wscu_devptr p);
typedef wscu_result (*PFN_cuMemAllocHost)(void **p, size_t bytes);
typedef wscu_result (*PFN_cuMemFreeHost)(void *p);
typedef wscu_result (*PFN_cuMemcpyHtoDAsync)(wscu_devptr dst, const void *src, size_t bytes, wscu_stream s);
typedef wscu_result (*PFN_cuMemcpyDtoHAsync)(void *dst, wscu_devptr src, size_t bytes, wscu_stream s);
typedef wscu_result (*PFN_cuMemcpyDtoDAsync)(wscu_devptr dst, wscu_devptr src, size_t bytes, wscu_stream s);
typedef wscu_result (*PFN_cuMemsetD32Async)(wscu_devptr dst, unsigned int v, size_t n, wscu_stream s);
typedef wscu_result (*PFN_cuModuleLoadDataEx)(wscu_module *m, const void *image, unsigned int n_opt,
                                           wscu_jit_option *opt, void **values);
typedef wscu_result (*PFN_cuModuleUnload)(wscu_module m);
typedef wscu_result (*PFN_cuModuleGetFunction)(wscu_function *f, wscu_module m, const char *name);
typedef wscu_result (*PFN_cuFuncGetAttribute)(int *v, wscu_func_attr a, wscu_function f);
typedef wscu_result (*PFN_cuFuncSetAttribute)(wscu_function f, wscu_func_attr a, int v);
typedef wscu_result (*PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, wscu_function f, int threads,
                                                                       size_t dyn_smem);
typedef wscu_result (*PFN_cuLaunchKernel)(wscu_function f, unsigned int gx, unsigned int gy,
                                       unsigned int gz, unsigned int bx, unsigned int by,
                                       unsigned int bz, unsigned int shared, wscu_stream s,
                                       void **params, void **extra);
/* CUlaunchAttribute (an id, padding to 8 bytes, a 64-byte value union) and CUlaunchConfig,
 * for cuLaunchKernelEx (CUDA 12.0 on); the attribute used: programmatic stream
 * serialization (value an int, 1: the launch may begin before the stream's previous kernel
 * ends, its griddepcontrol.wait holding its reads until that kernel is done) */
#define WSCU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
typedef struct {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int i;
        uint64_t align;
    } value;
} wscu_launch_attr;
typedef struct {
    unsigned int gx, gy, gz, bx, by, bz, shared;
    wscu_stream stream;
    wscu_launch_attr *attrs;
    unsigned int n_attrs;
} wscu_launch_config;
_Static_assert(sizeof(wscu_launch_attr) == 72 && offsetof(wscu_launch_attr, value) == 8 &&
                   offsetof(wscu_launch_config, stream) == 32 && offsetof(wscu_launch_config, attrs) == 40 &&
                   offsetof(wscu_launch_config, n_attrs) == 48 && sizeof(wscu_launch_config) == 56,
               "CUlaunchAttribute and CUlaunchConfig as cuda.h lays them out on 64-bit targets");
typedef wscu_result (*PFN_cuLaunchKernelEx)(const wscu_launch_config *config, wscu_function f, void **params,
                                         void **extra);
typedef wscu_result (*PFN_cuTensorMapEncodeTiled)(wscu_tensor_map *m, int data_type, uint32_t rank,
                                                   void *addr, const uint64_t *dim,
                                                   const uint64_t *strides, const uint32_t *box,
                                                   const uint32_t *elem_strides, int interleave,
                                                   int swizzle, int l2_promotion, int oob_fill);

#endif

/* stub_cuda.h - what the stand-in driver library (tests/stub/libcuda.c) counts, read by
 * tests/test_gpu_runtime.c through dlsym("stub_cuda_state"). */
#ifndef WS_TESTS_STUB_CUDA_H
#define WS_TESTS_STUB_CUDA_H

typedef struct {
    int inits;             /* cuInit calls */
    int retains, releases; /* cuDevicePrimaryCtxRetain / Release calls */
    int ctx_refs;          /* primary context references held now, per device summed */
    int loads, unloads;    /* cuModuleLoadDataEx (successful) / cuModuleUnload calls */
    int modules;           /* modules loaded now */
    int modules_at_reset;  /* modules still loaded when a primary context went to 0 refs */
    int streams, events;   /* alive now */
    int dev_allocs;        /* cuMemAlloc blocks alive now */
    int host_allocs;       /* cuMemAllocHost blocks alive now */
    int launches;          /* cuLaunchKernel calls */
    int no_context;        /* calls that create an object with no context current */
    int alloc_calls;       /* cuMemAlloc calls that succeeded, ever */
} stub_cuda_counts;

#endif

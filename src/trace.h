/* trace.h - named ranges for profilers (NVTX), so that an nsys timeline reads
 * as the pipeline: decode, mel, upload, conv1, conv2, download, write.
 * Compiled in when the Makefile finds the header-only nvtx3 (CUDA toolkit);
 * otherwise the macros are empty. Without a profiler attached NVTX calls
 * cost a few nanoseconds. */
#ifndef WS_TRACE_H
#define WS_TRACE_H

#ifdef WS_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#define WS_RANGE_PUSH(name) nvtxRangePushA(name)
#define WS_RANGE_POP() nvtxRangePop()
#else
#define WS_RANGE_PUSH(name) ((void)0)
#define WS_RANGE_POP() ((void)0)
#endif

#endif

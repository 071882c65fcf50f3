/* common.h - errors as values, timing, threads, float conversions.
 *
 * Every fallible function in whisper-stem returns 0 on success and -1 on
 * failure, filling a caller-owned ws_err with one line of context (file,
 * offset, tensor, call). Only main() prints and exits.
 */
#ifndef WS_COMMON_H
#define WS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define WS_VERSION "0.1.0"
#define WS_ERR_LEN 512

#ifndef WS_ERR_DEFINED /* the same type as include/ws_conv.h's */
#define WS_ERR_DEFINED
typedef struct ws_err {
    char msg[WS_ERR_LEN]; /* one line, no trailing newline; "" when unset */
} ws_err;
#endif

/* Formats into e->msg (when e is not NULL) and returns -1, so that
 * `return ws_errf(err, "...")` reads as "fail with this message". A message
 * longer than WS_ERR_LEN keeps its first 160 bytes and its end (the reason),
 * with "..." between. */
int ws_errf(ws_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies src to dst (cap bytes, always terminated), escaping what a terminal
 * would act on: newline, tab and CR as \n \t \r, other control bytes and DEL
 * as \ooo, and the backslash as \\ (as `ls -b` does). Bytes >= 0x80 (UTF-8)
 * pass. Returns the length written. */
size_t ws_escape(char *dst, size_t cap, const char *src);

/* Prints one line to stderr: the formatted text with ws_escape applied and a
 * newline, in one write(2). Every message whisper-stem prints goes through it,
 * so a file name cannot forge a line or send escape codes to a terminal. */
void ws_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The directory part of path, as dirname(1) gives it for paths without a
 * trailing slash: "a/b" -> "a", "/b" -> "/", "b" -> ".". */
void ws_dirname(const char *path, char *dir, size_t cap);

/* Monotonic wall clock in seconds. */
double ws_now(void);

/* Runs fn(ctx, i, n) for i in [0, n) on up to n threads (the caller and n-1
 * workers of a pool kept for the process) and waits for all of them; the tasks
 * must not wait for one another. n <= 1 runs inline. Returns 0, or -1 if a
 * worker could not be started (the caller then does its share, so the result is
 * still complete). */
typedef void (*ws_task_fn)(void *ctx, int i, int n);
int ws_parallel(int n, ws_task_fn fn, void *ctx);
/* the most tasks ws_parallel runs (a larger n is cut to this) */
#define WS_PARALLEL_MAX 256

/* A scratch buffer of at least n bytes (64-byte aligned, contents undefined) for the calling
 * thread, kept between calls so that a call's staging costs no allocation and no page
 * faults; NULL when out of memory. Give it back with ws_scratch_give before taking another
 * one on the same thread (a nested take, or one above WS_SCRATCH_KEEP bytes, is a plain
 * allocation that ws_scratch_give frees). Kept buffers are freed when their thread ends. */
#define WS_SCRATCH_KEEP ((size_t)8 << 20)
void *ws_scratch_take(size_t n);
void ws_scratch_give(void *p);

/* The CPUs this process may use (>= 1), the default thread count: the least
 * of the online CPUs, the CPUs in its affinity mask (taskset, Slurm,
 * cpusets) and its cgroup CPU quota rounded up (docker --cpus, Kubernetes
 * limits; cgroup v2 cpu.max or v1 cpu.cfs_quota_us). Computed on the first
 * call (thread-safe) and cached: a later change of affinity is not seen. */
int ws_ncpu(void);

/* Test-visible parts of ws_ncpu (tests/test_common.c):
 * ws_ncpu_uncached computes the value afresh on every call.
 * ws_cgroup_cpu_limit reads proc_self_cgroup (a /proc/self/cgroup) and the
 * cgroup files under sysfs_root (a /sys/fs/cgroup): v2 cpu.max from
 * sysfs_root/PATH up to sysfs_root, v1 cpu.cfs_quota_us/cpu.cfs_period_us
 * from sysfs_root/cpu,cpuacct (or /cpu) + PATH upwards; the smallest limit
 * wins. Returns the limit in CPUs, rounded up, or 0 for none (files missing
 * or unparsable count as no limit). */
int ws_ncpu_uncached(void);
int ws_cgroup_cpu_limit(const char *proc_self_cgroup, const char *sysfs_root);

/* The default bound on the audio data held at once (--max-memory): the least of 4 GiB,
 * half the RAM and half the cgroup memory limit (v2 memory.max, v1
 * memory.limit_in_bytes, the smallest from our cgroup up), at least WS_MIN_MEMORY.
 * ws_cgroup_memory_limit reads them as ws_cgroup_cpu_limit does (bytes; 0: none);
 * ws_max_memory_for is the rule (ram, cgroup_limit 0: unknown / none). */
#define WS_MIN_MEMORY ((size_t)16 << 20)
#define WS_DEFAULT_MAX_MEMORY ((size_t)4 << 30)
size_t ws_default_max_memory(void);
size_t ws_cgroup_memory_limit(const char *proc_self_cgroup, const char *sysfs_root);
size_t ws_max_memory_for(size_t ram, size_t cgroup_limit);

/* IEEE binary16 / bfloat16 bit patterns to float32 (exact) and back
 * (round to nearest even; NaN stays NaN). */
float ws_f16_to_f32(uint16_t h);
float ws_bf16_to_f32(uint16_t b);
uint16_t ws_f32_to_f16(float f);
uint16_t ws_f32_to_bf16(float f);
/* float32 to tf32 (kept in float32's bits, the low 13 of the mantissa zero): to nearest, ties
 * away from zero, as cvt.rna.tf32.f32; infinities and NaN as they are. */
float ws_f32_to_tf32(float f);

/* Overflow-checked size arithmetic: return 0 on success, -1 on overflow. */
int ws_mul_size(size_t a, size_t b, size_t *out);
int ws_add_size(size_t a, size_t b, size_t *out);

/* Deterministic pseudo-random numbers (splitmix64), for test data and
 * generated models: the same seed gives the same stream on every machine. */
typedef struct { uint64_t s; } ws_rng;
uint64_t ws_rng_next(ws_rng *r);
double ws_rng_uniform(ws_rng *r);            /* [0, 1) */

#endif

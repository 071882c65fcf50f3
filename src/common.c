/* common.c - see common.h. */
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A message longer than the buffer keeps its start and its end: paths come
 * first and the reason last ("PATH: cannot open: No such file or directory"),
 * so a path near PATH_MAX loses its middle, never the reason. */
#define ERR_HEAD 160
#define ERR_ELLIPSIS "..."

static void shorten_into(char *dst, size_t cap, const char *src, size_t len)
{
    if (len < cap) {
        memcpy(dst, src, len + 1);
        return;
    }
    size_t tail = cap - 1 - ERR_HEAD - (sizeof ERR_ELLIPSIS - 1);
    memcpy(dst, src, ERR_HEAD);
    memcpy(dst + ERR_HEAD, ERR_ELLIPSIS, sizeof ERR_ELLIPSIS - 1);
    memcpy(dst + ERR_HEAD + sizeof ERR_ELLIPSIS - 1, src + len - tail, tail);
    dst[cap - 1] = 0;
}

int ws_errf(ws_err *e, const char *fmt, ...)
{
    if (!e)
        return -1;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    char first[WS_ERR_LEN];
    int n = vsnprintf(first, sizeof first, fmt, ap);
    va_end(ap);
    if (n < 0) {
        snprintf(e->msg, sizeof e->msg, "(unformattable message)");
    } else if ((size_t)n < sizeof first) {
        memcpy(e->msg, first, (size_t)n + 1);
    } else {
        char *big = malloc((size_t)n + 1);
        if (big && vsnprintf(big, (size_t)n + 1, fmt, ap2) == n)
            shorten_into(e->msg, sizeof e->msg, big, (size_t)n);
        else
            memcpy(e->msg, first, sizeof first); /* out of memory: the start at least */
        free(big);
    }
    va_end(ap2);
    return -1;
}

size_t ws_escape(char *dst, size_t cap, const char *src)
{
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && cap; p++) {
        char esc[8];
        const char *s = esc;
        switch (*p) {
        case '\n': s = "\\n"; break;
        case '\t': s = "\\t"; break;
        case '\r': s = "\\r"; break;
        case '\\': s = "\\\\"; break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                snprintf(esc, sizeof esc, "\\%03o", *p);
            else
                esc[0] = (char)*p, esc[1] = 0;
        }
        size_t n = strlen(s);
        if (k + n >= cap)
            break;
        memcpy(dst + k, s, n);
        k += n;
    }
    if (cap)
        dst[k < cap ? k : cap - 1] = 0;
    return k;
}

void ws_eprintf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    char small[1024], *line = small;
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (line = malloc((size_t)n + 1)))
        vsnprintf(line, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    if (!line)
        line = small; /* out of memory: the part that fitted */
    if (n < 0)
        return;
    size_t len = strlen(line), cap = 4 * len + 2; /* every byte may become \ooo; then '\n' */
    char *out = malloc(cap);
    if (out) {
        size_t k = ws_escape(out, cap - 1, line);
        out[k++] = '\n';
        /* one write: lines of different threads do not interleave */
        for (size_t off = 0; off < k;) {
            ssize_t w = write(STDERR_FILENO, out + off, k - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
    }
    free(out);
    if (line != small)
        free(line);
}

void ws_dirname(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (slash == path)
        snprintf(dir, cap, "/");
    else if (slash)
        snprintf(dir, cap, "%.*s", (int)(slash - path), path);
    else
        snprintf(dir, cap, ".");
}

double ws_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --- the CPUs this process may use ---------------------------------------
 *
 * The host's core count overstates what a process under taskset, Slurm,
 * Kubernetes or `docker --cpus` may use: the affinity mask and the cgroup
 * CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us)
 * both bound it. Every file that cannot be read or parsed is taken as "no
 * limit from here", never as an error. */

/* Reads up to cap-1 bytes of a small file (a /proc or /sys attribute) into
 * buf, terminated. Returns 0, or -1 when it cannot be opened or read. */
static int read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t k = 0;
    while (k < cap - 1) {
        ssize_t r = read(fd, buf + k, cap - 1 - k);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        k += (size_t)r;
    }
    close(fd);
    buf[k] = 0;
    return 0;
}

/* A decimal integer of digits only (no sign), then *end past it; -1 when s
 * does not start with a digit or the value overflows. */
static long long parse_count(const char *s, const char **end)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *e;
    long long v = strtoll(s, &e, 10);
    if (errno)
        return -1;
    *end = e;
    return v;
}

static int only_space(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == 0;
}

/* ceil(quota / period) as an int, or 0 unless both are positive. */
static int quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    long long n = quota / period + (quota % period != 0);
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* cgroup v2 cpu.max: "max PERIOD" (no limit) or "QUOTA PERIOD". */
static long long v2_level_limit(const char *dir)
{
    char path[PATH_MAX], buf[128];
    const char *p, *e;
    if ((size_t)snprintf(path, sizeof path, "%s/cpu.max", dir) >= sizeof path ||
        read_small(path, buf, sizeof buf))
        return 0;
    p = buf;
    if (!strncmp(p, "max", 3))
        return 0;
    long long quota = parse_count(p, &e);
    if (quota < 0 || (*e != ' ' && *e != '\t'))
        return 0;
    for (p = e; *p == ' ' || *p == '\t'; p++)
        ;
    long long period = parse_count(p, &e);
    if (period < 0 || !only_space(e))
        return 0;
    return quota_cpus(quota, period);
}

/* One v1 attribute holding a single integer (cfs_quota_us may be -1). */
static int v1_read_ll(const char *dir, const char *name, long long *out)
{
    char path[PATH_MAX], buf[64];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path ||
        read_small(path, buf, sizeof buf))
        return -1;
    const char *p = buf, *e;
    int neg = *p == '-';
    long long v = parse_count(p + neg, &e);
    if (v < 0 || !only_space(e))
        return -1;
    *out = neg ? -v : v;
    return 0;
}

/* cgroup v1: cpu.cfs_quota_us (-1 = no limit) over cpu.cfs_period_us. */
static long long v1_level_limit(const char *dir)
{
    long long quota, period;
    if (v1_read_ll(dir, "cpu.cfs_quota_us", &quota) || quota <= 0 ||
        v1_read_ll(dir, "cpu.cfs_period_us", &period))
        return 0;
    return quota_cpus(quota, period);
}

/* cgroup v2 memory.max: "max" (no limit) or bytes. */
static long long v2_level_memory(const char *dir)
{
    char path[PATH_MAX], buf[64];
    const char *e;
    if ((size_t)snprintf(path, sizeof path, "%s/memory.max", dir) >= sizeof path ||
        read_small(path, buf, sizeof buf))
        return 0;
    long long v = parse_count(buf, &e);
    return v > 0 && only_space(e) ? v : 0;
}

/* cgroup v1 memory.limit_in_bytes: bytes; "no limit" is a number near 2^63 (the largest
 * multiple of the page size), taken as none from 2^62 up. */
static long long v1_level_memory(const char *dir)
{
    long long v;
    if (v1_read_ll(dir, "memory.limit_in_bytes", &v) || v <= 0 || v >= (1LL << 62))
        return 0;
    return v;
}

/* The smallest limit from base+cgpath up to base itself (limits of every
 * ancestor apply). cgpath is the third field of a /proc/self/cgroup line.
 * The walk includes base: inside a container whose cgroup is mounted as the
 * root (no cgroup namespace), the path names the host's hierarchy, the
 * levels below base do not exist here, and base holds the container's own
 * limit. A path with a ".." component (our cgroup lies outside our cgroup
 * namespace) gives no limit: walking it would leave the mount. */
static long long walk_limit(const char *base, const char *cgpath,
                            long long (*level)(const char *dir))
{
    if (cgpath[0] != '/')
        return 0;
    for (const char *p = cgpath; (p = strstr(p, "..")); p += 2)
        if ((p == cgpath || p[-1] == '/') && (p[2] == '/' || p[2] == 0))
            return 0;
    size_t blen = strlen(base);
    while (blen > 1 && base[blen - 1] == '/')
        blen--;
    char dir[PATH_MAX];
    if ((size_t)snprintf(dir, sizeof dir, "%.*s%s", (int)blen, base, cgpath) >= sizeof dir)
        return 0;
    size_t len = strlen(dir);
    long long best = 0;
    for (;;) {
        while (len > blen && dir[len - 1] == '/') /* "a/b/" and "a//b" */
            dir[--len] = 0;
        long long n = level(dir);
        if (n > 0 && (best == 0 || n < best))
            best = n;
        if (len <= blen)
            break;
        while (len > blen && dir[len - 1] != '/')
            len--;
        dir[len] = 0; /* now ends in '/' (trimmed above) or is base */
    }
    return best;
}

/* Whether the comma-separated list holds the controller ctl itself ("cpu": not
 * "cpuset" or "cpuacct"). */
static int lists_ctl(const char *list, size_t len, const char *ctl)
{
    const size_t cl = strlen(ctl);
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && list[j] != ',')
            j++;
        if (j - i == cl && !strncmp(list + i, ctl, cl))
            return 1;
        i = j + 1;
    }
    return 0;
}

/* A v1 controller's mount under sysfs_root: the directory named by the line's
 * controller list ("cpu,cpuacct"), else the usual combined name (cpu,cpuacct for
 * cpu), else the controller's own name. */
static int v1_mount(const char *sysfs_root, const char *list, size_t len, const char *ctl,
                    char *out, size_t cap)
{
    char names[3][256];
    snprintf(names[0], sizeof names[0], "%.*s", (int)(len < 255 ? len : 255), list);
    snprintf(names[1], sizeof names[1], "%s", strcmp(ctl, "cpu") ? ctl : "cpu,cpuacct");
    snprintf(names[2], sizeof names[2], "%s", ctl);
    for (int i = 0; i < 3; i++) {
        struct stat st;
        if ((size_t)snprintf(out, cap, "%s/%s", sysfs_root, names[i]) < cap && !stat(out, &st) &&
            S_ISDIR(st.st_mode))
            return 0;
    }
    return -1;
}

/* The smallest limit of controller ctl over the hierarchies /proc/self/cgroup lists. */
static long long cgroup_limit(const char *proc_self_cgroup, const char *sysfs_root,
                              const char *ctl, long long (*v2)(const char *),
                              long long (*v1)(const char *))
{
    FILE *f = fopen(proc_self_cgroup, "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    long long best = 0;
    /* "ID:CONTROLLERS:PATH" per hierarchy; v2 is "0::PATH". Hybrid systems
     * list both: each source with a limit counts and the smallest wins. */
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        const char *list = c1 + 1, *cgpath = c2 + 1;
        size_t list_len = (size_t)(c2 - list);
        long long n = 0;
        if (c1 - line == 1 && line[0] == '0' && list_len == 0) {
            n = walk_limit(sysfs_root, cgpath, v2);
        } else if (lists_ctl(list, list_len, ctl)) {
            char mount[PATH_MAX];
            if (!v1_mount(sysfs_root, list, list_len, ctl, mount, sizeof mount))
                n = walk_limit(mount, cgpath, v1);
        }
        if (n > 0 && (best == 0 || n < best))
            best = n;
    }
    free(line);
    fclose(f);
    return best;
}

int ws_cgroup_cpu_limit(const char *proc_self_cgroup, const char *sysfs_root)
{
    long long n = cgroup_limit(proc_self_cgroup, sysfs_root, "cpu", v2_level_limit,
                               v1_level_limit);
    return n > INT_MAX ? INT_MAX : (int)n;
}

size_t ws_cgroup_memory_limit(const char *proc_self_cgroup, const char *sysfs_root)
{
    long long n = cgroup_limit(proc_self_cgroup, sysfs_root, "memory", v2_level_memory,
                               v1_level_memory);
    return n > 0 && (unsigned long long)n <= SIZE_MAX ? (size_t)n : 0;
}

size_t ws_max_memory_for(size_t ram, size_t cgroup_limit)
{
    size_t m = WS_DEFAULT_MAX_MEMORY;
    if (ram && ram / 2 < m)
        m = ram / 2;
    if (cgroup_limit && cgroup_limit / 2 < m)
        m = cgroup_limit / 2;
    return m < WS_MIN_MEMORY ? WS_MIN_MEMORY : m;
}

size_t ws_default_max_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    size_t ram = pages > 0 && psz > 0 && (size_t)pages <= SIZE_MAX / (size_t)psz
                     ? (size_t)pages * (size_t)psz : 0;
    return ws_max_memory_for(ram, ws_cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup"));
}

/* The CPUs in this process's affinity mask, or 0 when it cannot be read.
 * The set grows until the kernel accepts its size, so hosts with more than
 * CPU_SETSIZE (1024) CPUs are counted whole. */
static int affinity_cpus(void)
{
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    int n = conf > 1024 && conf < (1 << 24) ? (int)conf : 1024;
    for (; n <= (1 << 24); n *= 2) {
        cpu_set_t *set = CPU_ALLOC(n);
        if (!set)
            return 0;
        size_t size = CPU_ALLOC_SIZE(n);
        CPU_ZERO_S(size, set);
        if (sched_getaffinity(0, size, set) == 0) {
            int count = CPU_COUNT_S(size, set);
            CPU_FREE(set);
            return count;
        }
        int e = errno;
        CPU_FREE(set);
        if (e != EINVAL) /* EINVAL: the set is smaller than the kernel's */
            return 0;
    }
    return 0;
}

int ws_ncpu_uncached(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = online < 1 ? 1 : online > INT_MAX ? INT_MAX : (int)online;
    int aff = affinity_cpus();
    if (aff > 0 && aff < n)
        n = aff;
    int quota = ws_cgroup_cpu_limit("/proc/self/cgroup", "/sys/fs/cgroup");
    if (quota > 0 && quota < n)
        n = quota;
    return n < 1 ? 1 : n;
}

static pthread_once_t ncpu_once = PTHREAD_ONCE_INIT;
static int ncpu_value;

static void ncpu_init(void)
{
    ncpu_value = ws_ncpu_uncached();
}

int ws_ncpu(void)
{
    pthread_once(&ncpu_once, ncpu_init);
    return ncpu_value;
}

/* ws_scratch_take: one kept buffer per thread, in a struct held by a pthread key (freed with
 * its buffer when the thread ends); busy while taken, so that a nested take allocates. */
typedef struct {
    void *p;
    size_t n;
    int busy;
} scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *v)
{
    scratch *s = v;
    free(s->p);
    free(s);
}

static void scratch_init(void)
{
    pthread_key_create(&scratch_key, scratch_free);
}

static void *aligned_bytes(size_t n)
{
    return aligned_alloc(64, (n + 63) / 64 * 64);
}

void *ws_scratch_take(size_t n)
{
    n = n ? n : 1;
    pthread_once(&scratch_once, scratch_init);
    scratch *s = pthread_getspecific(scratch_key);
    if (!s && (s = calloc(1, sizeof *s)) && pthread_setspecific(scratch_key, s) != 0) {
        free(s);
        s = NULL;
    }
    if (!s || s->busy || n > WS_SCRATCH_KEEP)
        return aligned_bytes(n);
    if (s->n < n) {
        void *p = aligned_bytes(n);
        if (!p)
            return NULL;
        free(s->p);
        s->p = p;
        s->n = n;
    }
    s->busy = 1;
    return s->p;
}

void ws_scratch_give(void *p)
{
    if (!p)
        return;
    scratch *s = pthread_getspecific(scratch_key);
    if (s && s->busy && p == s->p)
        s->busy = 0;
    else
        free(p);
}

/* ws_parallel's workers: threads started on first need and kept for the process, so that a
 * call costs no thread creation and each worker keeps its per-thread buffers (the sgemm's
 * packing blocks). A call queues a job of n tasks; the workers and the caller claim its task
 * indices one by one, so a job whose workers are busy elsewhere (other callers, nested calls)
 * is still finished by its caller alone. Task i gets (ctx, i, n) whoever runs it.
 *
 * Waiting spins for a while before it sleeps, on both sides: a worker out of tasks watches the
 * queue's count of jobs, the caller watches its job's count of finished tasks. Waking a
 * sleeping thread takes 15-80 us on a virtual machine (a halted virtual CPU), more than a
 * log-Mel's second pass or a small conv takes; a spin of 200 us catches the calls that come
 * back to back and costs an idle worker that much CPU time after its last task (a worker
 * woken for a job whose tasks others took sleeps again at once). WS_SPIN_US, read at the first
 * call, sets it in microseconds (0: sleep at once, as OpenMP's OMP_WAIT_POLICY=passive; at most
 * one second; not a number: the default). */
typedef struct pjob {
    ws_task_fn fn;
    void *ctx;
    int n, next;       /* tasks 1..n-1: next to claim */
    _Alignas(64) unsigned done; /* tasks 1..n-1 finished; written under pool_mu, read
                                   atomically by the spinning caller (a line of its own) */
    pthread_cond_t fin;
    struct pjob *link; /* the queue of jobs with tasks left to claim */
} pjob;

enum { POOL_MAX = WS_PARALLEL_MAX - 1 };
static double pool_spin_ns = 200000.0; /* how long a waiting thread spins before it sleeps */

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER;
static pjob *pool_head, *pool_tail;
static int pool_workers;
/* jobs queued so far; written under pool_mu, read atomically by spinning workers (a cache
 * line of its own, away from the mutex) */
static _Alignas(64) unsigned pool_jobs;
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_child(void)
{ /* after fork: the child has none of the parent's workers */
    pthread_mutex_init(&pool_mu, NULL);
    pthread_cond_init(&pool_work, NULL);
    pool_head = pool_tail = NULL;
    pool_workers = 0;
}

static void pool_init(void)
{
    pthread_atfork(NULL, NULL, pool_child);
    const char *e = getenv("WS_SPIN_US");
    char *end;
    double us = e ? strtod(e, &end) : -1.0;
    if (e && end != e && *end == '\0' && us >= 0.0) /* else (not a number) the default */
        pool_spin_ns = (us < 1e6 ? us : 1e6) * 1e3;
}

/* the next task of the queue's first job, dequeuing the job once all are claimed; pool_mu held */
static pjob *claim(int *i)
{
    pjob *j = pool_head;
    if (!j)
        return NULL;
    *i = j->next++;
    if (j->next >= j->n) {
        pool_head = j->link;
        if (!pool_head)
            pool_tail = NULL;
    }
    return j;
}

static void finish(pjob *j)
{ /* pool_mu held */
    if (__atomic_add_fetch(&j->done, 1, __ATOMIC_RELEASE) == (unsigned)(j->n - 1))
        pthread_cond_signal(&j->fin);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* spins until *word differs from seen (1) or pool_spin_ns have passed since t0 (0) */
static int spin_while(const unsigned *word, unsigned seen, double t0)
{
    for (;;) {
        for (int k = 0; k < 64; k++) {
            if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != seen)
                return 1;
            cpu_relax();
        }
        if ((ws_now() - t0) * 1e9 >= pool_spin_ns)
            return 0;
    }
}

static void *worker_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool_mu);
    int spun = 0; /* spun or slept since the last task: the next wait without work sleeps */
    for (;;) {
        int i;
        pjob *j = claim(&i);
        if (!j) {
            if (!spun && pool_spin_ns > 0) {
                const unsigned seen = __atomic_load_n(&pool_jobs, __ATOMIC_RELAXED);
                pthread_mutex_unlock(&pool_mu);
                spin_while(&pool_jobs, seen, ws_now());
                pthread_mutex_lock(&pool_mu);
                spun = 1;
                continue;
            }
            pthread_cond_wait(&pool_work, &pool_mu);
            spun = 1; /* woken for a job whose tasks others took: back to sleep, no spin */
            continue;
        }
        spun = 0;
        pthread_mutex_unlock(&pool_mu);
        j->fn(j->ctx, i, j->n);
        pthread_mutex_lock(&pool_mu);
        finish(j);
    }
    return NULL;
}

int ws_parallel(int n, ws_task_fn fn, void *ctx)
{
    if (n <= 1) {
        fn(ctx, 0, 1);
        return 0;
    }
    if (n > POOL_MAX + 1)
        n = POOL_MAX + 1;
    pthread_once(&pool_once, pool_init);
    pjob job = {.fn = fn, .ctx = ctx, .n = n, .next = 1, .done = 0};
    pthread_cond_init(&job.fin, NULL);
    int rc = 0;
    pthread_mutex_lock(&pool_mu);
    if (pool_tail)
        pool_tail->link = &job;
    else
        pool_head = &job;
    pool_tail = &job;
    __atomic_store_n(&pool_jobs, pool_jobs + 1, __ATOMIC_RELEASE);
    while (pool_workers < n - 1) { /* enough workers for this job's tasks at once */
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        const int ok = pthread_create(&t, &at, worker_main, NULL) == 0;
        pthread_attr_destroy(&at);
        if (!ok) {
            rc = -1; /* the caller and the workers there are do the work */
            break;
        }
        pool_workers++;
    }
    pthread_cond_broadcast(&pool_work);
    pthread_mutex_unlock(&pool_mu);
    fn(ctx, 0, n);
    pthread_mutex_lock(&pool_mu);
    while (job.next < n) { /* help: claim this job's tasks left */
        const int i = job.next++;
        if (job.next >= n) { /* unlink it from the queue */
            pjob **pp = &pool_head, *prev = NULL;
            while (*pp && *pp != &job)
                prev = *pp, pp = &(*pp)->link;
            if (*pp) {
                *pp = job.link;
                if (pool_tail == &job)
                    pool_tail = prev;
            }
        }
        pthread_mutex_unlock(&pool_mu);
        fn(ctx, i, n);
        pthread_mutex_lock(&pool_mu);
        finish(&job);
    }
    const unsigned all = (unsigned)(n - 1);
    if (job.done < all && pool_spin_ns > 0) { /* spin, then sleep */
        pthread_mutex_unlock(&pool_mu);
        const double t0 = ws_now();
        unsigned d;
        while ((d = __atomic_load_n(&job.done, __ATOMIC_ACQUIRE)) < all &&
               spin_while(&job.done, d, t0))
            ;
        pthread_mutex_lock(&pool_mu);
    }
    while (job.done < all)
        pthread_cond_wait(&job.fin, &pool_mu);
    pthread_mutex_unlock(&pool_mu);
    pthread_cond_destroy(&job.fin);
    return rc;
}

float ws_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: value = man * 2^-24 */
            float f = (float)man * 0x1p-24f;
            return sign ? -f : f;
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float ws_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t ws_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

float ws_f32_to_tf32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t ws_f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return sign | 0x7e00; /* NaN */
    if (a >= 0x477ff000u)     /* rounds to >= 65520: infinity */
        return sign | 0x7c00;
    if (a < 0x38800000u) {    /* below 2^-14: subnormal or zero */
        float af;
        memcpy(&af, &a, 4);
        /* af * 2^24 rounded to nearest even integer = subnormal mantissa */
        return sign | (uint16_t)lrintf(af * 0x1p24f);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1);
    return sign | (uint16_t)((r - 0x38000000u) >> 13);
}

int ws_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return -1;
    *out = a * b;
    return 0;
}

int ws_add_size(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a)
        return -1;
    *out = a + b;
    return 0;
}

uint64_t ws_rng_next(ws_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double ws_rng_uniform(ws_rng *r)
{
    return (double)(ws_rng_next(r) >> 11) * 0x1p-53;
}

/* common.c - see common.h. */
#include "common.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int ws_ncpu(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}

typedef struct {
    ws_task_fn fn;
    void *ctx;
    int i, n;
} task_arg;

static void *task_main(void *p)
{
    task_arg *a = p;
    a->fn(a->ctx, a->i, a->n);
    return NULL;
}

int ws_parallel(int n, ws_task_fn fn, void *ctx)
{
    if (n <= 1) {
        fn(ctx, 0, 1);
        return 0;
    }
    enum { MAX_THREADS = 256 };
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    pthread_t tid[MAX_THREADS];
    task_arg arg[MAX_THREADS];
    int started[MAX_THREADS] = {0};
    int rc = 0;
    for (int i = 1; i < n; i++) {
        arg[i] = (task_arg){fn, ctx, i, n};
        started[i] = pthread_create(&tid[i], NULL, task_main, &arg[i]) == 0;
    }
    fn(ctx, 0, n);
    for (int i = 1; i < n; i++) {
        if (started[i]) {
            pthread_join(tid[i], NULL);
        } else {
            fn(ctx, i, n); /* could not start: do its share here */
            rc = -1;
        }
    }
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

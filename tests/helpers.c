/* helpers.c - see helpers.h. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void assert_close(const char *name, const float *got, const double *want, size_t n, double atol,
                  double rtol)
{
    size_t bad = 0, worst = 0;
    double worst_excess = -1.0, max_abs = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        double e = fabs(g - w);
        double lim = atol + rtol * fabs(w);
        if (isnan(g) || isnan(e))
            e = INFINITY;
        if (e > max_abs)
            max_abs = e;
        if (e > lim) {
            bad++;
            if (e - lim > worst_excess) {
                worst_excess = e - lim;
                worst = i;
            }
        }
    }
    if (bad)
        cr_assert_fail("%s: %zu of %zu values off; worst at [%zu]: got %.9g, want %.9g "
                "(|err| %.3g > %.3g); max |err| %.3g",
                name, bad, n, worst, (double)got[worst], want[worst], fabs(got[worst] - want[worst]),
                atol + rtol * fabs(want[worst]), max_abs);
}

double rel_l2(const float *got, const double *want, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double e = (double)got[i] - want[i];
        num += e * e;
        den += want[i] * want[i];
    }
    if (isnan(num))
        return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double max_abs_err(const float *got, const double *want, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        if (isnan(e))
            return INFINITY;
        if (e > m)
            m = e;
    }
    return m;
}

/* the directories test_tmpdir made in this process, removed with their contents when it
 * exits (a child it forks that exits does not remove them) */
#define TMPDIRS_MAX 64
static char tmpdirs[TMPDIRS_MAX][512];
static int n_tmpdirs;
static pid_t tmpdirs_pid;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tmpdirs(void)
{
    if (getpid() != tmpdirs_pid || getenv("WS_KEEP_TEST_TMP"))
        return;
    for (int i = 0; i < n_tmpdirs; i++)
        nftw(tmpdirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    n_tmpdirs = 0;
}

const char *test_tmpdir(void)
{
    static char path[512];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/ws-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(path))
        cr_assert_fail("mkdtemp failed");
    if (tmpdirs_pid != getpid()) { /* the first in this process (a test's own, under fork) */
        tmpdirs_pid = getpid();
        n_tmpdirs = 0;
        atexit(remove_tmpdirs);
    }
    if (n_tmpdirs < TMPDIRS_MAX)
        snprintf(tmpdirs[n_tmpdirs++], sizeof tmpdirs[0], "%s", path);
    return path;
}

const char *test_data(const char *name)
{
    static char path[1024];
    const char *d = getenv("WS_TESTDATA");
    snprintf(path, sizeof path, "%s/%s", d && *d ? d : "tests/data", name);
    return path;
}

const char *test_sample(const char *name)
{
    static char path[1024];
    const char *d = getenv("WS_SAMPLES");
    snprintf(path, sizeof path, "%s/%s", d && *d ? d : "samples", name);
    return path;
}

int run_cmd(const char *cmdline, char *err_out, size_t err_len)
{
    char errpath[600];
    const char *base = getenv("TMPDIR");
    snprintf(errpath, sizeof errpath, "%s/ws-cmd-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(errpath))
        return -1;
    strcat(errpath, "/stderr.txt");
    size_t len = strlen(cmdline) + strlen(errpath) + 16;
    char *full = malloc(len);
    snprintf(full, len, "%s 2>%s", cmdline, errpath);
    int st = system(full);
    free(full);
    if (err_out && err_len) {
        err_out[0] = 0;
        FILE *f = fopen(errpath, "rb");
        if (f) {
            size_t r = fread(err_out, 1, err_len - 1, f);
            err_out[r] = 0;
            fclose(f);
        }
    }
    unlink(errpath);
    char *dir = strrchr(errpath, '/');
    if (dir) {
        *dir = 0;
        rmdir(errpath);
    }
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* $name, else the default resolved against the current directory. */
static const char *tool_path(const char *name, const char *dflt, char *buf, size_t cap)
{
    const char *b = getenv(name);
    if (b && *b)
        return b;
    if (!realpath(dflt, buf))
        snprintf(buf, cap, "%s", dflt);
    return buf;
}

const char *ws_bin(void)
{
    static char buf[4096];
    return tool_path("WS_BIN", "build/whisper-stem", buf, sizeof buf);
}

const char *ws_mkmodel(void)
{
    static char buf[4096];
    return tool_path("WS_MKMODEL", "build/ws-mkmodel", buf, sizeof buf);
}

const char *ws_convert(void)
{
    static char buf[4096];
    return tool_path("WS_CONVERT", "build/ws-convert", buf, sizeof buf);
}

const char *ws_python(void)
{
    const char *p = getenv("WS_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

void *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1); /* + 1: a NUL after the bytes, so text can be searched */
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *nb = realloc(buf, (cap *= 2) + 1);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* --- storage types, apart from the library ---------------------------------------------- */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* float -> IEEE binary16, round to nearest even, subnormals kept. */
static uint16_t to_f16(float f)
{
    uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000;
    x &= 0x7fffffff;
    if (x > 0x7f800000)
        return (uint16_t)(sign | 0x7e00);
    if (x >= 0x477ff000) /* 65520 and above round to infinity */
        return (uint16_t)(sign | 0x7c00);
    if (x < 0x38800000) /* below 2^-14: a multiple of 2^-24, rint is round-to-even */
        return (uint16_t)(sign | (uint32_t)nearbyint(fabs((double)f) * 0x1p24));
    x += 0xfff + ((x >> 13) & 1);
    return (uint16_t)(sign | ((x - 0x38000000) >> 13));
}

static double from_f16(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

size_t ref_tsize(ws_dtype t) { return t == WS_F32 ? 4 : 2; }

/* Stores v at element i of buf as type t; returns the value as stored. */
double ref_put(void *buf, ws_dtype t, size_t i, double v)
{
    float f = (float)v;
    if (t == WS_F32) {
        ((float *)buf)[i] = f;
        return f;
    }
    uint16_t h = t == WS_F16 ? to_f16(f) : to_bf16(f);
    ((uint16_t *)buf)[i] = h;
    return t == WS_F16 ? from_f16(h) : from_bf16(h);
}

double ref_get(const void *buf, ws_dtype t, size_t i)
{
    if (t == WS_F32)
        return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return t == WS_F16 ? from_f16(h) : from_bf16(h);
}

/* Element (n, c, t) of an [N][C][T] tensor stored in layout l. */
size_t ref_at(ws_layout l, int n, int c, int t, int C, int T)
{
    return l == WS_NLC ? ((size_t)n * T + t) * C + c : ((size_t)n * C + c) * T + t;
}

void *test_stub_driver(void)
{
    const char *src = test_data("../stub/libcuda.c");
    struct stat st;
    if (stat(src, &st))
        cr_skip_test("the stand-in driver's source %s is not here", src);
    char so[1100], cmd[4096], err[2048];
    snprintf(so, sizeof so, "%s/libcuda.so.1", test_tmpdir());
    snprintf(cmd, sizeof cmd, "${CC:-cc} -std=gnu11 -O1 -shared -fPIC -o '%s' '%s'", so, src);
    if (run_cmd(cmd, err, sizeof err) != 0)
        cr_skip_test("no C compiler to build the stand-in driver: %s", err);
    cr_assert_eq(setenv("WHISPER_STEM_LIBCUDA", so, 1), 0);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    return h;
}

/* helpers.c - see helpers.h. */
#include "helpers.h"

#include <criterion/criterion.h>
#include <math.h>
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

const char *test_tmpdir(void)
{
    static char path[512];
    const char *base = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/ws-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(path))
        cr_assert_fail("mkdtemp failed");
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

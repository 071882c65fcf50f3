/* helpers.h - shared test utilities: tolerance checks with an address,
 * temporary directories, running the CLI, reading files. */
#ifndef WS_TEST_HELPERS_H
#define WS_TEST_HELPERS_H

#include <stddef.h>

/* Compares got against want (n values): passes when every
 * |got - want| <= atol + rtol * |want|. On failure it fails the current
 * Criterion test, naming the worst index with both values, the max abs error
 * and the count of mismatches. NaN in got always fails. */
void assert_close(const char *name, const float *got, const double *want, size_t n, double atol,
                  double rtol);

/* Relative L2 error ||got - want|| / ||want|| and max |got - want|. */
double rel_l2(const float *got, const double *want, size_t n);
double max_abs_err(const float *got, const double *want, size_t n);

/* A fresh directory under $TMPDIR for this test; the path is static storage
 * valid until the next call. */
const char *test_tmpdir(void);

/* Path of a test resource: $WS_TESTDATA/name (tests/data). Static storage. */
const char *test_data(const char *name);

/* Path of a sample audio file: $WS_SAMPLES/name (samples/). Static storage. */
const char *test_sample(const char *name);

/* Runs a shell command line, capturing stderr into err_out (may be NULL,
 * truncated to err_len) and returning the exit status (or -1). */
int run_cmd(const char *cmdline, char *err_out, size_t err_len);

/* The CLI under test ($WS_BIN), the model generator ($WS_MKMODEL) and the
 * checkpoint converter ($WS_CONVERT, default build/ws-convert). */
const char *ws_bin(void);
const char *ws_mkmodel(void);
const char *ws_convert(void);

/* A Python 3 with numpy: $WS_PYTHON, else Debian's /usr/bin/python3. */
const char *ws_python(void);

/* Reads a whole file (malloc'd, *len set, a NUL after its bytes), NULL if it cannot. */
void *read_file(const char *path, size_t *len);
int file_exists(const char *path);

#endif

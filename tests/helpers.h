/* helpers.h - shared test utilities: tolerance checks with an address,
 * temporary directories, running the CLI, reading files. */
#ifndef WS_TEST_HELPERS_H
#define WS_TEST_HELPERS_H

#include <stddef.h>

#include "ws_conv.h"

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
 * valid until the next call. The directories a test process made are removed with their
 * contents when it exits (kept when WS_KEEP_TEST_TMP is set). */
const char *test_tmpdir(void);

/* Path of a test resource: $WS_TESTDATA/name (tests/data). Static storage. */
const char *test_data(const char *name);

/* Path of a sample audio file: $WS_SAMPLES/name (samples/). Static storage. */
const char *test_sample(const char *name);

/* Runs a shell command line, capturing stderr into err_out (may be NULL,
 * truncated to err_len) and returning the exit status (or -1). */
int run_cmd(const char *cmdline, char *err_out, size_t err_len);

/* Builds the stand-in driver (tests/stub/libcuda.c) into a fresh directory, points the
 * library at it ($WHISPER_STEM_LIBCUDA) and opens it here too, so that its counters
 * (dlsym "stub_cuda_state", tests/stub/stub_cuda.h) outlive the library's dlclose; the
 * handle. Skips the test without the source or a C compiler. */
void *test_stub_driver(void);

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

/* Values in a storage type, computed apart from the library (the engine tests' own
 * conversions: f16 and bf16 round to nearest even, f16 keeps subnormals). */
size_t ref_tsize(ws_dtype t);                                  /* bytes of one element */
double ref_put(void *buf, ws_dtype t, size_t i, double v);     /* stores v; returns it as stored */
double ref_get(const void *buf, ws_dtype t, size_t i);
/* element (n, c, t) of an [N][C][T] tensor stored in layout l */
size_t ref_at(ws_layout l, int n, int c, int t, int C, int T);

#endif

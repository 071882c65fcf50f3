/* output.h - arrays to files, never half-written.
 *
 * `.npy` paths get NumPy format 1.0 ('<f4', C order, header padded to a
 * multiple of 64 bytes); any other path gets the raw little-endian float32
 * bytes, row-major, no header; "-" writes raw bytes to standard output.
 * Files are written to a temporary name in the same directory, flushed to
 * disk, and renamed over the target only when complete: a crash or an error
 * leaves the old file or none, never a partial one.
 * Validated by tests/test_cli.c (npy header, raw bytes = npy payload).
 */
#ifndef WS_OUTPUT_H
#define WS_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* 1 when path ends in ".npy" (any case). */
int ws_path_is_npy(const char *path);

/* Writes data (float32, shape[0] x ... x shape[ndim-1]) to path as above.
 * Returns 0, or -1 with err naming the path and the failing call. */
int ws_write_array(const char *path, const float *data, const int64_t *shape, int ndim, ws_err *err);

/* The NumPy header for shape (into buf, returns its length, a multiple of 64). */
size_t ws_npy_header(char *buf, size_t cap, const int64_t *shape, int ndim);

/* Writes len bytes atomically to path (temporary name, fsync, rename). */
int ws_write_file_atomic(const char *path, const void *data, size_t len, ws_err *err);

#endif

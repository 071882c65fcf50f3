/* output.h - arrays to files, never half-written.
 *
 *   ws_err err;
 *   ws_out *o = ws_out_open("embed.npy", &err);       // nothing named yet
 *   if (!o || ws_out_write(o, header, hl, &err) || ws_out_write(o, data, n, &err))
 *       ...ws_out_abort(o)...                            // nothing left behind
 *   else if (ws_out_commit(o, &err))                    // embed.npy appears whole, or not at all
 *       ...
 *
 * `.npy` paths get NumPy format 1.0 ('<f4', or '<f2' for float16; C order, header
 * padded to a multiple of 64 bytes); any other path gets the raw little-endian
 * bytes, row-major, no header; "-" writes raw bytes to standard output.
 *
 * Where the bytes go, by what the path names:
 * - a regular file or nothing (in an existing directory): an unnamed file
 *   is created in that directory (O_TMPFILE), written, flushed to disk, given
 *   a short temporary name (".ws-XXXXXX.tmp") and renamed over the target,
 *   then the directory is flushed. An error, a crash, SIGKILL or a
 *   termination signal (signals.h) leaves the old file or none, never a
 *   partial one, and no temporary name. Where the file system has no
 *   O_TMPFILE (or /proc is not mounted) the temporary name is created first
 *   and registered with signals.h, so a termination signal removes it; only
 *   SIGKILL or a crash can then leave a ".ws-XXXXXX.tmp" behind. (The
 *   environment variable WHISPER_STEM_NO_TMPFILE=1 forces this path, for
 *   tests.)
 * - a symbolic link: the same, for the file the link resolves to (a missing
 *   one is created); the link stays a link.
 * - a character or block device, a FIFO: written directly, in order, as a
 *   stream (not atomic: a failure leaves what was written); the node stays
 *   what it was. Opening a FIFO waits for a reader, as any writer does.
 * - a directory: an error.
 * New files get mode 0666 & ~umask, as any Unix tool makes them (the
 * directory's default ACL applies where there is one).
 * Every error is one line naming the path (its tail, for very long paths)
 * and the real reason (strerror of the failing call, or what is wrong).
 * Validated by tests/test_cli.c (npy header, raw bytes = npy payload) and
 * tests/test_output.c (special files, symlinks, umask, long names,
 * signals, file size limit).
 */
#ifndef WS_OUTPUT_H
#define WS_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* 1 when path ends in ".npy" (any case). */
int ws_path_is_npy(const char *path);

/* A file being written. Not shared between threads (distinct ws_outs are
 * independent). */
typedef struct ws_out ws_out;

/* Opens path ("-" = standard output) for writing as described above.
 * Returns NULL with err naming the path and the reason. */
ws_out *ws_out_open(const char *path, ws_err *err);

/* Appends len bytes (each call is one or more write(2) calls: pass large
 * pieces). Returns 0, or -1 with err (e.g. "No space left on device",
 * "File too large"); after a failure only ws_out_abort is useful. */
int ws_out_write(ws_out *o, const void *p, size_t len, ws_err *err);

/* Flushes to disk, puts the file in place atomically, flushes the directory
 * (for a device or FIFO: closes it). Frees o, also on failure, in which case
 * nothing new is left under any name. Returns 0 or -1 with err. */
int ws_out_commit(ws_out *o, ws_err *err);

/* Discards what was written and frees o. NULL-safe. */
void ws_out_abort(ws_out *o);

/* Element types of written arrays: float32 ('<f4') or IEEE float16 ('<f2', rounded to
 * nearest even from float32 once). */
typedef enum { WS_OUT_F32 = 0, WS_OUT_F16 } ws_out_dtype;

/* Writes data (float32, shape[0] x ... x shape[ndim-1]) to path as above.
 * Returns 0, or -1 with err naming the path and the failing step. */
int ws_write_array(const char *path, const float *data, const int64_t *shape, int ndim, ws_err *err);

/* The same for data already in type t (float16: uint16_t bit patterns). */
int ws_write_array_dtype(const char *path, const void *data, ws_out_dtype t, const int64_t *shape,
                         int ndim, ws_err *err);

/* n float32 values at data become n float16 bit patterns at the start of the same buffer.
 * Float16 output saturates: a finite value beyond the float16 range (|x| >= 65520, which
 * rounds to infinity) becomes +-65504, never inf; returns how many did. Infinities and
 * NaN stay what they are. */
size_t ws_f32_to_f16_inplace(void *data, size_t n);

/* n float16 values at data (converted elsewhere, e.g. on the GPU, where the conversion
 * rounds to infinity beyond the range): each infinity becomes +-65504; returns how many.
 * (An infinity that was one before the conversion is clamped too: the stem's outputs of
 * finite inputs are finite.) */
size_t ws_f16_saturate(void *data, size_t n);

/* The NumPy header for shape (into buf, returns its length, a multiple of 64). */
size_t ws_npy_header(char *buf, size_t cap, const int64_t *shape, int ndim);
size_t ws_npy_header_dtype(char *buf, size_t cap, const int64_t *shape, int ndim, ws_out_dtype t);

/* Creates the missing directories above path (as mkdir -p; mode 0777 & ~umask).
 * 0, or -1 with err naming the directory. */
int ws_mkdir_parents(const char *path, ws_err *err);

/* The trust rule for symbolic links (the kernel's fs.protected_symlinks, applied whatever
 * the sysctl says): a link in a sticky world-writable directory (/tmp) is followed only
 * when we or the directory's owner own it. Checks every link on path (its directories,
 * its last name, and the links their targets pass through) without opening anything.
 * 0, or -1 with err naming the path and the refused link. ws_out_open and
 * ws_mkdir_parents apply it first. */
int ws_path_links_trusted(const char *path, ws_err *err);

/* Writes len bytes to path as above (ws_out_open, write, commit). */
int ws_write_file_atomic(const char *path, const void *data, size_t len, ws_err *err);

/* Creates a new file "<prefix>XXXXXX<suffix>" (X: random letters and digits)
 * in the directory dirfd (AT_FDCWD: the working directory), exclusively:
 * O_CREAT|O_EXCL|O_NOFOLLOW, so an existing name or a planted symbolic link
 * is never opened. mode is masked by the umask. The name goes to name (cap
 * bytes). Returns a write-only descriptor (close-on-exec), or -1 with errno
 * set (ENAMETOOLONG when the name does not fit in cap or NAME_MAX). */
int ws_create_unique(int dirfd, const char *prefix, const char *suffix, unsigned mode, char *name,
                     size_t cap);

#endif

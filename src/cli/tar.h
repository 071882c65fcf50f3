/* tar.h - WebDataset shards: one tar file of samples, written whole or not at all.
 *
 *   ws_err err;
 *   char key[4096], name[4100];
 *   ws_tar *t = ws_tar_open("shard-000000.tar", &err);   // nothing named yet
 *   if (!t) ...fail...
 *   if (ws_tar_key("spk1/a.b", key, sizeof key)) ...caller's bug or too long...
 *   snprintf(name, sizeof name, "%s.npy", key);           // "spk1/a%2Eb.npy"
 *   if (ws_tar_add(t, name, npy, npy_len, &err)) ...       // one member, whole
 *   // or, size known before the bytes are:
 *   //   ws_tar_begin(t, name, header_len + payload_len, &err);
 *   //   ws_tar_write(t, header, header_len, &err); ws_tar_write(t, payload, ..., &err);
 *   //   ws_tar_end(t, &err);                               // pads to 512
 *   if (failed) ws_tar_abort(t);                           // no file, no temp name
 *   else if (ws_tar_commit(t, &err)) ...                   // the shard appears whole
 *
 * The bytes (POSIX.1-2001 pax interchange format, ustar headers):
 * - Each member is a 512-byte ustar header, its bytes, and zeros up to the
 *   next multiple of 512. After the last member come two 512-byte zero
 *   blocks; nothing more (no padding to a 10240-byte record: GNU tar and
 *   Python's tarfile read shards without it, tests/test_tar.c).
 * - Header fields: name (100 bytes) and prefix (155 bytes, the path is
 *   prefix "/" name, split at a '/'); mode "0000644", uid and gid "0000000",
 *   size (11 octal digits), mtime (always 0, below), each numeric field in
 *   octal with a NUL terminator; typeflag '0' (regular file); magic "ustar\0",
 *   version "00"; uname, gname and linkname empty; devmajor and devminor
 *   "0000000". chksum is the sum of the 512 header bytes as unsigned
 *   numbers, counting the chksum field itself as 8 spaces, written as 6 octal
 *   digits, NUL, space.
 * - When the name does not fit ustar (longer than 255 bytes, or no '/' that
 *   leaves at most 100 bytes after it and 155 before), or the size does not
 *   fit 11 octal digits (>= 8 GiB), a pax extended header comes first: a
 *   ustar header of typeflag 'x' named "././@PaxHeader" whose data are
 *   records "<len> <key>=<value>\n" (len counts the whole record, its own
 *   digits included): "path=" with the whole name, then "size=" in decimal.
 *   The ustar header after it holds the name's first 100 bytes and a size
 *   field of 0 (as Python's tarfile writes them); pax readers use the
 *   records.
 * - A path record holds the name's bytes as they are. POSIX wants UTF-8
 *   there unless a "hdrcharset=BINARY" record says otherwise, but GNU tar
 *   1.34 warns "Ignoring unknown extended header keyword 'hdrcharset'"
 *   (Python's own pax output included), while without it GNU tar extracts
 *   and Python's tarfile (surrogateescape) reads back the exact bytes; so a
 *   name that is not UTF-8 goes in raw, with no hdrcharset record.
 * - mtime is 0 in every header: the same samples give the same shard, byte
 *   for byte, whenever and on however many threads they are written (a
 *   shard is then checked or deduplicated by its hash); when it was written
 *   is the shard file's own mtime. GNU tar warns only about negative or
 *   future times, not about 0.
 * Member names are relative paths of bytes: not empty, not starting with
 *   '/', no empty, "." or ".." component (no trailing '/'), at most
 *   WS_TAR_NAME_MAX bytes; no NUL, as C strings hold none. Other bytes pass
 *   as they are.
 *
 * Validated by tests/test_tar.c with tests/tar_read.py: Python's tarfile
 * reads names, sizes, contents (SHA-256), pax records and .npy members
 * back; GNU tar lists and extracts shards with nothing on stderr; a size
 * of 2^33 is read back from the pax record; a long name that is not UTF-8
 * comes back as its bytes; pax record lengths are right where their digit
 * count changes; the checksum and fields are recomputed from the spec;
 * ws_tar_add and begin/write/end give the same bytes; abort and failures
 * leave no file and no temporary name; a commit replaces an existing
 * shard; shards written on several threads at once equal shards written
 * alone; ws_tar_key round-trips, leaves no '.', and does not collide.
 * webdataset itself reads a shard there when it is installed (it is
 * skipped, visibly, where it is not).
 */
#ifndef WS_CLI_TAR_H
#define WS_CLI_TAR_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* Longest member name accepted, in bytes (PATH_MAX less the NUL: a longer
 * one could not be extracted anywhere on Linux). */
#define WS_TAR_NAME_MAX 4095

/* Most bytes ws_tar_header writes: a pax header for the longest name and a
 * size record, and the ustar header (12 blocks of 512). */
#define WS_TAR_HEADER_MAX (12 * 512)

/* A shard being written. Calls on one shard must be serialised by the caller;
 * different shards may be written from different threads at once (nothing
 * is shared between them). */
typedef struct ws_tar ws_tar;

/* Opens a shard to be written to path: bytes go through ws_out (output.h),
 * to an unnamed or hidden temporary file in path's directory, so an error,
 * a kill or a termination signal leaves the old file at path or none, never
 * a partial shard. "-" writes to standard output (as a stream: not atomic).
 * Returns NULL with err naming the path and the reason. */
ws_tar *ws_tar_open(const char *path, ws_err *err);

/* Adds one regular-file member: its header(s), the len bytes of data, zeros
 * to a multiple of 512. data may be NULL when len is 0. Returns 0 or -1 with
 * err (one line naming the shard and the member). */
int ws_tar_add(ws_tar *t, const char *name, const void *data, size_t len, ws_err *err);

/* The same in pieces, size known up front: ws_tar_begin writes the
 * header(s); ws_tar_write appends bytes (any number of calls, total exactly
 * size); ws_tar_end checks the total and pads. Writing past size, or ending
 * short of it, is an error naming the member, the size and the count. */
int ws_tar_begin(ws_tar *t, const char *name, uint64_t size, ws_err *err);
int ws_tar_write(ws_tar *t, const void *data, size_t len, ws_err *err);
int ws_tar_end(ws_tar *t, ws_err *err);

/* Errors. A misuse that writes nothing fails that call only: a name
 * rejected, NULL data with a length, a call out of order (begin or add with
 * a member open, write or end with none). Anything else fails the shard: an
 * I/O error (err as ws_out gives it, e.g. "No space left on device"), a
 * size mismatch; later calls then return -1 ("an earlier error") and only
 * ws_tar_abort is useful (ws_tar_commit fails and discards too). */

/* Writes the two zero end blocks, then puts the shard in place
 * (ws_out_commit: flushed to disk, renamed over path atomically). Frees t,
 * also on failure (a member still open is one), in which case nothing new
 * is left under any name. Returns 0 or -1 with err. */
int ws_tar_commit(ws_tar *t, ws_err *err);

/* Discards the shard and frees t: no file and no temporary name remain (an
 * existing file at path is untouched). NULL-safe. */
void ws_tar_abort(ws_tar *t);

/* Bytes of the shard so far (headers, data, padding; ws_tar_commit adds
 * the 1024 of the end blocks), and members begun so far: for callers that
 * start a new shard at a size or a count. */
uint64_t ws_tar_bytes(const ws_tar *t);
uint64_t ws_tar_members(const ws_tar *t);

/* The header block(s) of a member named name with size bytes, into buf
 * (WS_TAR_HEADER_MAX bytes), as ws_tar_begin writes them. Returns their
 * length (a multiple of 512: 512 for plain ustar, more with a pax header),
 * or 0 with err when the name is rejected ("member \"x\": ..."). */
size_t ws_tar_header(unsigned char *buf, const char *name, uint64_t size, ws_err *err);

/* The WebDataset key for rel, a relative output path without extension
 * ("spk1/001", "a.b/c.d"), into out (cap bytes, NUL-terminated).
 *
 * WebDataset splits a member name at the first '.' of its last path
 * component into key and extension, and groups members by key; so the key
 * must have no '.' in its last component, and different paths must give
 * different keys. The rule, per '/'-separated component:
 *   '%'                  -> "%25"
 *   '.'                  -> "%2E"
 *   bytes < 0x20, 0x7f   -> "%XX" (two uppercase hex digits)
 *   every other byte     -> itself (UTF-8 passes unchanged)
 * '/' stays the separator. This is percent-encoding (RFC 3986) of a few
 * bytes, so it is undone by percent-decoding, and two different paths never
 * give the same key: "a.b/c.d" -> "a%2Eb/c%2Ed", "a%2Eb" -> "a%252Eb".
 * An empty rel, an empty component (leading, trailing or doubled '/'), or a
 * "." or ".." component (anywhere: the path was not normalised) is the
 * caller's bug. Returns 0, or -1 for such a rel or when the key and its NUL
 * do not fit cap (then out is "" when cap > 0). */
int ws_tar_key(const char *rel, char *out, size_t cap);

/* Calls fn(ctx, name, size) for each regular-file member of the tar file at path, in
 * order (ustar names with their prefix, pax path= and size= records applied; other
 * member types skipped). Stops when fn returns non-zero and returns that. 0 at the end
 * blocks, -1 with err for a file that is not a complete tar (bad checksum, cut short, a
 * malformed pax record). */
int ws_tar_list(const char *path, int (*fn)(void *ctx, const char *name, uint64_t size),
                void *ctx, ws_err *err);

#endif

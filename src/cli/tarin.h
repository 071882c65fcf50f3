/* tarin.h - tar shards as inputs (docs/corpus.md "Tar shards as inputs").
 *
 * A shard's members are listed by walking its headers: a plain tar with pread of each
 * 512-byte header, its data passed over (its members are later decoded in place,
 * ws_audio_load_range); a gzip-compressed one (found by its magic bytes, whatever its
 * name) by one decompression pass, which tells each member's place in the decompressed
 * stream. Its members are then read by a second pass, in shard order, through the
 * shard's reader (ws_tarin_gz): the run's members of that shard take turns (their order
 * in the run); a member's turn passes when its bytes are read, or when its job needs
 * none (skipped, failed before its decode): the reader then passes over its bytes.
 *
 * Headers are hostile input: ustar (prefix + name), pax 'x' records (path, size), GNU
 * long names ('L'); a bad checksum, a size that is not a number, a member past the end of
 * the file, a shard that ends inside a member: one message naming the shard, the offset
 * and the member (when its name is known), and the walk stops there; the members before
 * it stand. Typeflags other than a regular file ('0', NUL, '7') are not inputs. */
#ifndef WS_TARIN_H
#define WS_TARIN_H

#include <stdint.h>

#include "common.h"

struct ws_tarin_gz;

/* One member of a listing, or (bad != NULL) where the walk stopped and why. off and size:
 * the member's data in the file (plain) or in the decompressed stream (gzip); for bad,
 * off is the header's offset. name is NULL for bad when it is not known. Return 0 to go
 * on, else that number ends the walk and is ws_tarin_list's result. */
typedef int (*ws_tarin_fn)(void *ctx, const char *name, uint64_t off, uint64_t size,
                           const char *bad);

/* Walks the shard at path, calling fn for every regular-file member (and once at a bad
 * header). *gz: 1 when the shard is gzip-compressed; *reader: for gzip, its reader (NULL
 * for plain), the caller's (ws_tarin_gz_free). 0; fn's nonzero result; or -1 with err
 * when the shard cannot be read at all (why, without the path). */
int ws_tarin_list(const char *path, ws_tarin_fn fn, void *ctx, struct ws_tarin_gz **reader,
                  ws_err *err);

/* Whether a member name is audio by its extension (the bytes after the last '.' of its
 * last component: wav, flac, mp3, ...; case-insensitive). */
int ws_tarin_is_audio(const char *name);

/* The WebDataset key of a member: its path up to the first '.' of its last component,
 * leading "./" parts dropped; with keep_ext the whole path. 0 with the key in out; -1
 * when it cannot name an output (empty, starting with '/', an empty, "." or ".." part). */
int ws_tarin_key(const char *name, int keep_ext, char *out, size_t cap);

/* The run's members of a gzip shard take turns 0, 1, ... (ws_tarin_gz_add_turn gives the
 * next). */
int ws_tarin_gz_add_turn(struct ws_tarin_gz *g);
/* Ready for the turns (after every ws_tarin_gz_add_turn): 0, or -1 out of memory. */
int ws_tarin_gz_ready(struct ws_tarin_gz *g);
/* Waits for turn t. Nothing is held meanwhile: call it holding no memory reservation. */
void ws_tarin_gz_wait(struct ws_tarin_gz *g, int t);
/* With turn t held: the size bytes at off of the decompressed stream into buf. 0, or -1
 * with err (the shard changed since it was listed, ends early, a read error: the members
 * after it then fail too). */
int ws_tarin_gz_read(struct ws_tarin_gz *g, uint64_t off, void *buf, uint64_t size,
                     ws_err *err);
/* Turn t is over (read, or not needed): the next member's turn comes once those before
 * it are over too. Exactly once per turn, whether waited for or not. */
void ws_tarin_gz_pass(struct ws_tarin_gz *g, int t);
void ws_tarin_gz_free(struct ws_tarin_gz *g);

#endif

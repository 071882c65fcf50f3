/* strmap.h - a map from byte strings to size_t, for near-linear duplicate checks.
 *
 * Open addressing with linear probing over FNV-1a hashes, kept at most half
 * full (the table doubles). Keys are copied into the map's own storage, so
 * the caller's strings may go away. Used for the -O output-name clash check,
 * output-vs-input identity (device:inode keys) and the checkpoint readers'
 * tensor names, where a linear search made 10^5 names take tens of seconds.
 *
 * Usage:
 *   ws_strmap *m = ws_strmap_new();
 *   size_t prev;
 *   if (ws_strmap_put(m, key, len, value, &prev) == 1) ... key was there: prev
 *   if (ws_strmap_get(m, key, len, &value)) ...
 *   ws_strmap_free(m);
 * Not thread-safe: one owner at a time. Tested by tests/test_strmap.c.
 */
#ifndef WS_STRMAP_H
#define WS_STRMAP_H

#include <stddef.h>

typedef struct ws_strmap ws_strmap;

ws_strmap *ws_strmap_new(void); /* NULL when out of memory */
void ws_strmap_free(ws_strmap *m); /* NULL-safe */

/* Inserts key -> value unless key is present. Returns 0 when inserted, 1 when
 * key was already there (its value in *prev when prev is not NULL; the map is
 * unchanged), -1 when out of memory. */
int ws_strmap_put(ws_strmap *m, const void *key, size_t len, size_t value, size_t *prev);

/* 1 and *value set when key is present, else 0. */
int ws_strmap_get(const ws_strmap *m, const void *key, size_t len, size_t *value);

/* Number of keys. */
size_t ws_strmap_size(const ws_strmap *m);

#endif

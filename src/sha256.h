/* sha256.h - SHA-256 (FIPS 180-4), incremental.
 *
 *   ws_sha256 s;
 *   ws_sha256_init(&s);
 *   ws_sha256_update(&s, data, len);   // any number of times
 *   char hex[65];
 *   ws_sha256_hex(&s, hex);            // 64 lowercase digits and a NUL
 *
 * Validated by tests/test_manifest.c (FIPS 180 vectors, sha256sum(1) of a file).
 */
#ifndef WS_SHA256_H
#define WS_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;          /* bytes so far */
    unsigned char buf[64]; /* the block being filled */
    size_t fill;
} ws_sha256;

void ws_sha256_init(ws_sha256 *s);
void ws_sha256_update(ws_sha256 *s, const void *data, size_t len);
/* The digest (32 bytes); s is finished (init again to reuse it). */
void ws_sha256_final(ws_sha256 *s, unsigned char out[32]);
/* The digest as 64 lowercase hex digits and a NUL. */
void ws_sha256_hex(ws_sha256 *s, char hex[65]);

#endif

/* fuzz_tarin.c - libFuzzer harness for tar shards as inputs (src/cli/tarin.c).
 *
 * The input is a shard: written to a memory file (memfd_create) and listed by
 * ws_tarin_list through /proc/self/fd/N, plain or gzip-compressed as its magic bytes
 * say. The listing's callback holds the walk to tarin.h's contract:
 *   - a member: a non-empty audio name (ws_tarin_is_audio), its data offset after a
 *     header (a multiple of 512, past the members before it), and for a plain shard
 *     its bytes inside the file; its key, when it has one, names no file outside the
 *     output directory (no leading '/', no empty, "." or ".." part);
 *   - a bad header: one non-empty line that names the header's (or its data's) offset
 *     (and not the descriptor zlib names a stream by), at a multiple of 512, with a
 *     member's name that is not empty (or none), and nothing listed after it (the walk
 *     stops there).
 * A gzip shard's members are then read back through its reader in shard order (every
 * third one passed over unread, so that the reader skips), and each must read whole
 * and be the bytes of the decompressed stream at its offset: the listing decompressed
 * past its end already. A member larger than FUZZ_MAX_READ is passed over, and the
 * listing stops after FUZZ_MAX_MEMBERS members (the callback's own result, which
 * ws_tarin_list must return); gzip's own ratio bounds the rest (at most ~1000:1).
 *
 * Built by `make fuzz` (clang, libFuzzer) and `make fuzz-replay` (tests/fuzz/replay.c).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "cli/tarin.h"

#define FUZZ_MAX_MEMBERS 1024
#define FUZZ_MAX_READ ((uint64_t)1 << 20)
#define FUZZ_STOP 7 /* the callback's result that ends the listing */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
    uint64_t off, size;
} member;

typedef struct {
    uint64_t fsize;
    int gz;
    member m[FUZZ_MAX_MEMBERS];
    int n;
    uint64_t end; /* the end of the last member's data */
    int bad;      /* a bad header was told */
} listing;

/* Whether msg holds "offset N" for N = a or b. */
static int names_offset(const char *msg, uint64_t a, uint64_t b)
{
    char s[64];
    snprintf(s, sizeof s, "offset %" PRIu64, a);
    for (const char *p = msg; (p = strstr(p, s)); p++)
        if (p[strlen(s)] < '0' || p[strlen(s)] > '9')
            return 1;
    snprintf(s, sizeof s, "offset %" PRIu64, b);
    for (const char *p = msg; (p = strstr(p, s)); p++)
        if (p[strlen(s)] < '0' || p[strlen(s)] > '9')
            return 1;
    return 0;
}

static void check_key(const char *name, int keep_ext)
{
    char key[8192];
    if (strlen(name) >= sizeof key || ws_tarin_key(name, keep_ext, key, sizeof key))
        return;
    if (!key[0] || key[0] == '/')
        __builtin_trap();
    for (const char *c = key;;) {
        size_t n = strcspn(c, "/");
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            __builtin_trap();
        if (!c[n])
            break;
        c += n + 1;
    }
}

static int on_member(void *ctx, const char *name, uint64_t off, uint64_t size, const char *bad)
{
    listing *l = ctx;
    if (l->bad)
        __builtin_trap(); /* the walk goes on after a bad header */
    if (bad) {
        l->bad = 1;
        if (!bad[0] || strchr(bad, '\n') || strchr(bad, '\r') || off % 512 || off < l->end ||
            !names_offset(bad, off, off + 512) || strstr(bad, "<fd:") || (name && !name[0]))
            __builtin_trap();
        return 0;
    }
    if (!name || !name[0] || !ws_tarin_is_audio(name))
        __builtin_trap();
    if (off < 512 || off % 512 || off < l->end + 512 || size >= UINT64_MAX - off)
        __builtin_trap();
    if (!l->gz && off + size > l->fsize)
        __builtin_trap();
    check_key(name, 0);
    check_key(name, 1);
    l->end = off + size;
    if (l->n == FUZZ_MAX_MEMBERS)
        return FUZZ_STOP;
    l->m[l->n++] = (member){off, size};
    return 0;
}

/* The decompressed stream's first n bytes (fewer at its end or a break) into *out
 * (malloc'd). As the reader does: zlib's buffer of 128 KiB, asked for 64 KiB at most, so
 * that its refills, and the bytes lost at a break, are the reader's. */
static size_t inflate_all(const char *path, uint64_t n, unsigned char **out)
{
    *out = malloc(n ? n : 1);
    gzFile z = gzopen(path, "rb");
    if (!*out || !z || gzbuffer(z, 1 << 17))
        abort();
    size_t got = 0;
    while (got < n) {
        const size_t k = n - got < ((size_t)1 << 16) ? n - got : (size_t)1 << 16;
        int r = gzread(z, *out + got, (unsigned)k);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    gzclose(z);
    return got;
}

/* Every listed member of a gzip shard through its reader, in shard order. */
static void read_back(const char *path, const listing *l, struct ws_tarin_gz *g)
{
    uint64_t need = 0;
    for (int i = 0; i < l->n; i++)
        if (l->m[i].size <= FUZZ_MAX_READ && l->m[i].off + l->m[i].size > need)
            need = l->m[i].off + l->m[i].size;
    unsigned char *ref;
    const size_t have = inflate_all(path, need, &ref);
    if (have != need)
        __builtin_trap(); /* a member the listing saw whole is not in the stream */
    int turn[FUZZ_MAX_MEMBERS];
    for (int i = 0; i < l->n; i++)
        turn[i] = ws_tarin_gz_add_turn(g);
    if (ws_tarin_gz_ready(g))
        abort();
    unsigned char *buf = malloc(FUZZ_MAX_READ);
    if (!buf)
        abort();
    for (int i = 0; i < l->n; i++) {
        const member *m = &l->m[i];
        ws_tarin_gz_wait(g, turn[i]);
        if (m->size <= FUZZ_MAX_READ && i % 3 != 1) {
            ws_err err = {{0}};
            if (ws_tarin_gz_read(g, m->off, buf, m->size, &err) ||
                memcmp(buf, ref + m->off, m->size))
                __builtin_trap();
        }
        ws_tarin_gz_pass(g, turn[i]);
    }
    free(buf);
    free(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    static listing l;
    if (fd < 0) {
        fd = memfd_create("fuzz.tar", MFD_CLOEXEC);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();

    l.fsize = size;
    l.gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    l.n = 0;
    l.end = 0;
    l.bad = 0;
    struct ws_tarin_gz *g = NULL;
    ws_err err = {{0}};
    const int rc = ws_tarin_list(path, on_member, &l, &g, &err);
    if (rc == FUZZ_STOP) {
        if (g)
            __builtin_trap(); /* the reader given back after a walk that did not end */
        return 0;
    }
    if (rc != 0 || (g != NULL) != l.gz)
        __builtin_trap(); /* a memory file can always be read; gzip by its magic */
    if (g)
        read_back(path, &l, g);
    ws_tarin_gz_free(g);
    return 0;
}

/* tar.c - WebDataset shards: pax/ustar members through ws_out (tar.h).
 *
 * Format, as POSIX.1-2001 "pax" (XCU pax, "ustar Interchange Format" and
 * "pax Interchange Format") describes it:
 *
 *   member  = [pax header] ustar header, data, zeros to a multiple of 512
 *   shard   = member*, 2 x 512 zero bytes
 *
 *   ustar header (512 bytes; offset: field[size])
 *     0 name[100]   100 mode[8]    108 uid[8]     116 gid[8]
 *   124 size[12]    136 mtime[12]  148 chksum[8]  156 typeflag[1]
 *   157 linkname[100]              257 magic[6]   263 version[2]
 *   265 uname[32]   297 gname[32]  329 devmajor[8] 337 devminor[8]
 *   345 prefix[155] 500 (zeros)[12]
 *   numbers: octal digits filling the field but its last byte, then NUL
 *   chksum: sum of the 512 bytes (unsigned), chksum counted as 8 spaces,
 *           as 6 octal digits, NUL, space
 *   path:   prefix "/" name when prefix is not empty, else name (a name of
 *           exactly 100 bytes has no NUL)
 *
 *   pax header = a ustar header of typeflag 'x' (size = length of its
 *   records) and the records, zero-padded to 512: "<len> <key>=<value>\n",
 *   len in decimal counting the whole record, its own digits included.
 *
 * Tests: tests/test_tar.c (tar.h lists what each holds).
 */
#include "cli/tar.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "output.h"

#define BLOCK 512
#define NAME_LEN 100             /* ustar name field */
#define PREFIX_LEN 155           /* ustar prefix field */
#define SIZE_MAX_OCTAL 077777777777ULL /* 11 octal digits: 8 GiB - 1 */
#define PAX_NAME "././@PaxHeader" /* the 'x' header's own name, as Python's tarfile writes it */
#define BUF_LEN (64 * 1024)      /* headers and small members gathered into one write(2) */
#define STR_(x) #x
#define STR(x) STR_(x)

struct ws_tar {
    ws_out *out;
    int failed;          /* sticky: an I/O error or a size mismatch */
    int open;            /* a member is begun and not ended */
    uint64_t size, done; /* the open member: declared bytes, bytes written */
    uint64_t bytes;      /* shard bytes so far, buffered ones included */
    uint64_t members;
    char shown[300];     /* the shard's path for messages: whole, or "..." and its tail */
    char member[WS_TAR_NAME_MAX + 1]; /* the open (or last) member's name */
    size_t fill;         /* bytes in buf */
    unsigned char buf[BUF_LEN];
};

static const unsigned char zeros[2 * BLOCK];

/* --- names ------------------------------------------------------------- */

/* NULL when name is a relative path tar and WebDataset take as it is, else
 * why not. */
static const char *name_problem(const char *name)
{
    size_t len = strlen(name);
    if (len == 0)
        return "empty name";
    if (len > WS_TAR_NAME_MAX)
        return "name longer than " STR(WS_TAR_NAME_MAX) " bytes";
    if (name[0] == '/')
        return "absolute name (members are relative paths)";
    for (const char *c = name; *c;) {
        size_t n = strcspn(c, "/");
        if (n == 0)
            return "empty path component (doubled or trailing '/')";
        if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return "'.' or '..' path component";
        c += n;
        if (*c == '/' && c[1] == 0)
            return "empty path component (doubled or trailing '/')";
        if (*c)
            c++;
    }
    return NULL;
}

/* Where name splits into ustar prefix and name: the index of the '/' (the
 * leftmost that leaves at most NAME_LEN bytes after it and PREFIX_LEN before),
 * 0 when it needs no split (len <= NAME_LEN), -1 when it does not fit. */
static long ustar_split(const char *name, size_t len)
{
    if (len <= NAME_LEN)
        return 0;
    size_t from = len - NAME_LEN - 1; /* name part = len - i - 1 <= NAME_LEN */
    for (size_t i = from ? from : 1; i <= PREFIX_LEN && i + 1 < len; i++)
        if (name[i] == '/')
            return (long)i;
    return -1;
}

/* --- headers ----------------------------------------------------------- */

/* v in octal, zero-padded to fill field[0 .. width-2], NUL at width-1.
 * The caller has checked that it fits. */
static void put_octal(unsigned char *field, size_t width, uint64_t v)
{
    field[width - 1] = 0;
    for (size_t i = width - 1; i-- > 0;) {
        field[i] = (unsigned char)('0' + (v & 7));
        v >>= 3;
    }
}

/* A ustar header for a regular file ('0') or a pax header ('x') into b. */
static void ustar_block(unsigned char *b, const char *name, size_t name_len, const char *prefix,
                        size_t prefix_len, uint64_t size, char type)
{
    memset(b, 0, BLOCK);
    memcpy(b, name, name_len);
    put_octal(b + 100, 8, 0644);
    put_octal(b + 108, 8, 0);   /* uid */
    put_octal(b + 116, 8, 0);   /* gid */
    put_octal(b + 124, 12, size);
    put_octal(b + 136, 12, 0);  /* mtime: fixed, for reproducible shards (tar.h) */
    memset(b + 148, ' ', 8);    /* chksum, counted as spaces */
    b[156] = (unsigned char)type;
    memcpy(b + 257, "ustar", 6); /* with its NUL */
    memcpy(b + 263, "00", 2);
    put_octal(b + 329, 8, 0);   /* devmajor */
    put_octal(b + 337, 8, 0);   /* devminor */
    memcpy(b + 345, prefix, prefix_len);
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++)
        sum += b[i];
    put_octal(b + 148, 7, sum); /* 6 digits, NUL; b[155] stays ' ' */
}

static size_t digits10(size_t v)
{
    size_t d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* Appends the record "<len> key=value\n" at dst; returns its length. */
static size_t pax_record(char *dst, const char *key, const char *val, size_t val_len)
{
    size_t body = 1 + strlen(key) + 1 + val_len + 1; /* " key=value\n" */
    size_t d = digits10(body);
    if (digits10(body + d) > d)
        d++;
    size_t total = body + d;
    int n = sprintf(dst, "%zu %s=", total, key);
    memcpy(dst + n, val, val_len);
    dst[n + val_len] = '\n';
    return total;
}

size_t ws_tar_header(unsigned char *buf, const char *name, uint64_t size, ws_err *err)
{
    const char *why = name_problem(name);
    if (why) {
        ws_errf(err, "member \"%s\": %s", name, why);
        return 0;
    }
    size_t len = strlen(name);
    long split = ustar_split(name, len);
    int need_path = split < 0, need_size = size > SIZE_MAX_OCTAL;
    size_t off = 0;
    if (need_path || need_size) {
        /* records go after the 'x' header's own block; at most
         * (4095 + 11) + 29 bytes: 9 blocks (tar.h's WS_TAR_HEADER_MAX) */
        char *rec = (char *)buf + BLOCK;
        size_t n = 0;
        if (need_path)
            n += pax_record(rec + n, "path", name, len);
        if (need_size) {
            char num[24];
            int k = snprintf(num, sizeof num, "%llu", (unsigned long long)size);
            n += pax_record(rec + n, "size", num, (size_t)k);
        }
        size_t padded = (n + BLOCK - 1) / BLOCK * BLOCK;
        memset(rec + n, 0, padded - n);
        ustar_block(buf, PAX_NAME, strlen(PAX_NAME), "", 0, n, 'x');
        off = BLOCK + padded;
    }
    if (split > 0)
        ustar_block(buf + off, name + split + 1, len - (size_t)split - 1, name, (size_t)split,
                    size, '0');
    else /* whole, or its first 100 bytes under a pax path record */
        ustar_block(buf + off, name, len < NAME_LEN ? len : NAME_LEN, "", 0,
                    need_size ? 0 : size, '0');
    return off + BLOCK;
}

/* --- writing ----------------------------------------------------------- */

static int flush(ws_tar *t, ws_err *err)
{
    if (t->fill && ws_out_write(t->out, t->buf, t->fill, err)) {
        t->failed = 1;
        return -1;
    }
    t->fill = 0;
    return 0;
}

/* Appends n bytes: gathered in buf, or written directly when they would not
 * fit in it. */
static int emit(ws_tar *t, const void *p, size_t n, ws_err *err)
{
    if (n == 0) /* p may be NULL then, which memcpy does not allow */
        return 0;
    if (n > BUF_LEN - t->fill) {
        if (flush(t, err))
            return -1;
        if (n >= BUF_LEN) {
            if (ws_out_write(t->out, p, n, err)) {
                t->failed = 1;
                return -1;
            }
            t->bytes += n;
            return 0;
        }
    }
    memcpy(t->buf + t->fill, p, n);
    t->fill += n;
    t->bytes += n;
    return 0;
}

static int failed_before(const ws_tar *t, ws_err *err)
{
    return ws_errf(err, "%s: not written: an earlier error failed this shard", t->shown);
}

ws_tar *ws_tar_open(const char *path, ws_err *err)
{
    ws_tar *t = calloc(1, sizeof *t);
    if (!t) {
        ws_errf(err, "%s: out of memory", path);
        return NULL;
    }
    t->out = ws_out_open(path, err);
    if (!t->out) {
        free(t);
        return NULL;
    }
    size_t n = strlen(path), keep = sizeof t->shown - 4;
    if (strcmp(path, "-") == 0)
        snprintf(t->shown, sizeof t->shown, "standard output");
    else if (n < sizeof t->shown)
        memcpy(t->shown, path, n + 1);
    else
        snprintf(t->shown, sizeof t->shown, "...%s", path + n - keep);
    return t;
}

int ws_tar_begin(ws_tar *t, const char *name, uint64_t size, ws_err *err)
{
    if (t->failed)
        return failed_before(t, err);
    if (t->open)
        return ws_errf(err, "%s: member \"%s\": cannot begin, member \"%s\" is not ended",
                       t->shown, name, t->member);
    unsigned char hdr[WS_TAR_HEADER_MAX];
    ws_err why;
    size_t n = ws_tar_header(hdr, name, size, &why);
    if (!n)
        return ws_errf(err, "%s: %s", t->shown, why.msg);
    memcpy(t->member, name, strlen(name) + 1);
    if (emit(t, hdr, n, err))
        return -1;
    t->open = 1;
    t->size = size;
    t->done = 0;
    t->members++;
    return 0;
}

int ws_tar_write(ws_tar *t, const void *data, size_t len, ws_err *err)
{
    if (t->failed)
        return failed_before(t, err);
    if (!t->open)
        return ws_errf(err, "%s: write with no member begun", t->shown);
    if (len && !data)
        return ws_errf(err, "%s: member \"%s\": %zu bytes from a NULL pointer", t->shown,
                       t->member, len);
    if (len > t->size - t->done) {
        t->failed = 1;
        return ws_errf(err, "%s: member \"%s\": %zu more bytes would pass its declared size %llu "
                       "(%llu written)", t->shown, t->member, len, (unsigned long long)t->size,
                       (unsigned long long)t->done);
    }
    if (emit(t, data, len, err))
        return -1;
    t->done += len;
    return 0;
}

int ws_tar_end(ws_tar *t, ws_err *err)
{
    if (t->failed)
        return failed_before(t, err);
    if (!t->open)
        return ws_errf(err, "%s: end with no member begun", t->shown);
    if (t->done != t->size) {
        t->failed = 1;
        return ws_errf(err, "%s: member \"%s\": ended after %llu of its declared %llu bytes",
                       t->shown, t->member, (unsigned long long)t->done,
                       (unsigned long long)t->size);
    }
    t->open = 0;
    size_t pad = (size_t)((BLOCK - t->size % BLOCK) % BLOCK);
    return emit(t, zeros, pad, err);
}

int ws_tar_add(ws_tar *t, const char *name, const void *data, size_t len, ws_err *err)
{
    if (len && !data && !t->failed)
        return ws_errf(err, "%s: member \"%s\": %zu bytes from a NULL pointer", t->shown, name,
                       len);
    if (ws_tar_begin(t, name, len, err) || ws_tar_write(t, data, len, err))
        return -1;
    return ws_tar_end(t, err);
}

int ws_tar_commit(ws_tar *t, ws_err *err)
{
    if (t->failed) {
        failed_before(t, err);
        ws_tar_abort(t);
        return -1;
    }
    if (t->open) {
        ws_errf(err, "%s: not written: member \"%s\" not ended (%llu of %llu bytes written)",
                t->shown, t->member, (unsigned long long)t->done, (unsigned long long)t->size);
        ws_tar_abort(t);
        return -1;
    }
    if (emit(t, zeros, sizeof zeros, err) || flush(t, err)) {
        ws_tar_abort(t);
        return -1;
    }
    int rc = ws_out_commit(t->out, err); /* frees the ws_out, also on failure */
    free(t);
    return rc;
}

void ws_tar_abort(ws_tar *t)
{
    if (!t)
        return;
    ws_out_abort(t->out);
    free(t);
}

uint64_t ws_tar_bytes(const ws_tar *t)
{
    return t->bytes;
}

uint64_t ws_tar_members(const ws_tar *t)
{
    return t->members;
}

/* --- keys -------------------------------------------------------------- */

int ws_tar_key(const char *rel, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    int bad = !*rel;
    for (const char *c = rel; *c && !bad;) {
        size_t n = strcspn(c, "/");
        bad = n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.');
        for (size_t i = 0; i < n && !bad; i++) {
            unsigned char b = (unsigned char)c[i];
            int esc = b == '%' || b == '.' || b < 0x20 || b == 0x7f;
            size_t need = esc ? 3 : 1;
            if (cap < need + 1 || o > cap - need - 1) { /* room for it and the NUL */
                bad = 1;
                break;
            }
            if (esc) {
                out[o++] = '%';
                out[o++] = hex[b >> 4];
                out[o++] = hex[b & 15];
            } else {
                out[o++] = (char)b;
            }
        }
        c += n;
        if (*c == '/' && !bad) {
            bad = c[1] == 0 || cap < 2 || o > cap - 2; /* a trailing '/'; room for '/' and NUL */
            if (!bad)
                out[o++] = '/';
            c++;
        }
    }
    if (bad) {
        if (cap)
            out[0] = 0;
        return -1;
    }
    out[o] = 0;
    return 0;
}

/* --- reading a shard's member list ----------------------------------------- */

/* an octal (or base-256, high bit set) number field */
static int parse_num(const unsigned char *f, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (f[0] & 0x80) {
        for (size_t i = 1; i < n; i++) {
            if (v >> 56)
                return -1;
            v = v << 8 | f[i];
        }
        *out = v;
        return 0;
    }
    size_t i = 0;
    while (i < n && f[i] == ' ')
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
        if (v >> 61)
            return -1;
        v = v * 8 + (uint64_t)(f[i] - '0');
    }
    if (i < n && f[i] != 0 && f[i] != ' ')
        return -1;
    *out = v;
    return 0;
}

/* A decimal number filling s[0..n): digits only (no sign, no space), at least one; -1
 * for anything else or a value past UINT64_MAX. s need not be NUL-terminated. */
static int parse_dec(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        const unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* "LEN key=value\n" records in r[0..n) (the bytes as read: no NUL after them), path=
 * and size= for the next member. Every byte read is inside r[0..n): LEN is digits
 * then a space, counts the whole record and ends it with '\n'; the key is not empty.
 * 0, or -1 for a record that breaks these rules (what GNU tar and Python's tarfile
 * refuse too). */
static int pax_records(const char *r, size_t n, char *path, size_t cap, int *has_path,
                       uint64_t *size, int *has_size)
{
    size_t off = 0;
    while (off < n) {
        const char *rec = r + off;
        const size_t left = n - off;
        size_t i = 0;
        uint64_t len;
        while (i < left && i < 20 && rec[i] >= '0' && rec[i] <= '9')
            i++;
        if (i == 0 || i >= left || rec[i] != ' ' || parse_dec(rec, i, &len) || len > left ||
            len < i + 4 || rec[len - 1] != '\n')
            return -1; /* "LEN k=\n" is the shortest: LEN, ' ', a key, '=', '\n' */
        const char *kv = rec + i + 1;
        const size_t kv_len = (size_t)len - i - 2; /* key=value, without the '\n' */
        const char *eq = memchr(kv, '=', kv_len);
        if (!eq || eq == kv)
            return -1;
        const char *val = eq + 1;
        const size_t key_len = (size_t)(eq - kv), val_len = kv_len - key_len - 1;
        if (key_len == 4 && !memcmp(kv, "path", 4) && val_len < cap) {
            memcpy(path, val, val_len);
            path[val_len] = 0;
            *has_path = 1;
        } else if (key_len == 4 && !memcmp(kv, "size", 4)) {
            if (parse_dec(val, val_len, size))
                return -1;
            *has_size = 1;
        }
        off += (size_t)len;
    }
    return 0;
}

int ws_tar_list(const char *path, int (*fn)(void *ctx, const char *name, uint64_t size),
                void *ctx, ws_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ws_errf(err, "%s: %s", path, strerror(errno));
    unsigned char h[BLOCK];
    char name[WS_TAR_NAME_MAX + 1], pax_path[WS_TAR_NAME_MAX + 1];
    int has_path = 0, has_size = 0, rc = 0;
    uint64_t pax_size = 0;
    for (;;) {
        if (fread(h, 1, BLOCK, f) != BLOCK) {
            rc = ws_errf(err, "%s: ends inside a header (not a complete tar file)", path);
            break;
        }
        if (!memcmp(h, zeros, BLOCK))
            break; /* the end blocks */
        unsigned sum = 0;
        for (int i = 0; i < BLOCK; i++)
            sum += i >= 148 && i < 156 ? ' ' : h[i];
        uint64_t want, size;
        if (parse_num(h + 148, 8, &want) || want != sum || parse_num(h + 124, 12, &size)) {
            rc = ws_errf(err, "%s: a header with a bad checksum or size (not a tar file?)", path);
            break;
        }
        if (has_size && h[156] != 'x' && h[156] != 'g')
            size = pax_size;
        const uint64_t padded = (size + BLOCK - 1) / BLOCK * BLOCK;
        if (h[156] == 'x') { /* records for the next member */
            char *r = size < (1 << 20) ? malloc(padded ? padded : 1) : NULL;
            if (!r || fread(r, 1, padded, f) != padded) {
                free(r);
                rc = ws_errf(err, "%s: a pax header cut short or too long", path);
                break;
            }
            int bad = pax_records(r, (size_t)size, pax_path, sizeof pax_path, &has_path,
                                  &pax_size, &has_size);
            free(r);
            if (bad) {
                rc = ws_errf(err, "%s: a pax header with a malformed record (not a tar file?)",
                             path);
                break;
            }
            continue;
        }
        if (h[156] == 'g') { /* global records (a comment, ...): skipped with their data */
            if (fseeko(f, (off_t)padded, SEEK_CUR)) {
                rc = ws_errf(err, "%s: %s", path, strerror(errno));
                break;
            }
            continue;
        }
        if (has_path) {
            snprintf(name, sizeof name, "%s", pax_path);
        } else if (!memcmp(h + 257, "ustar", 5) && h[345]) {
            snprintf(name, sizeof name, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
        } else {
            snprintf(name, sizeof name, "%.100s", (const char *)h);
        }
        has_path = has_size = 0;
        if ((h[156] == '0' || h[156] == 0) && fn && (rc = fn(ctx, name, size)) != 0)
            break;
        if (fseeko(f, (off_t)padded, SEEK_CUR)) {
            rc = ws_errf(err, "%s: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    return rc;
}

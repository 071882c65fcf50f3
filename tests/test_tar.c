/* test_tar.c - WebDataset shards (src/cli/tar.h), read back by other hands:
 * Python's tarfile (tests/tar_read.py: names, sizes, SHA-256 of contents,
 * pax records, .npy members), GNU tar (lists and extracts with nothing on
 * stderr) and, where installed, webdataset. Also: header fields and checksum
 * recomputed from the ustar spec, the pax size record for 8 GiB, add vs
 * begin/write/end, errors (names, sizes, order, I/O), abort, replacing a
 * shard, threads, and the sample-key rule.
 */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/tar.h"
#include "common.h"
#include "sha256.h"
#include "helpers.h"
#include "output.h"

#define PY ws_python()

/* --- SHA-256 of contents, for comparing with tar_read.py (src/sha256.c, held to the FIPS
 * 180-4 vectors and sha256sum(1) by tests/test_manifest.c) ----------------- */

static void sha256_hex(const void *data, size_t len, char hex[65])
{
    ws_sha256 s;
    ws_sha256_init(&s);
    ws_sha256_update(&s, data, len);
    ws_sha256_hex(&s, hex);
}

/* --- helpers ------------------------------------------------------------- */

typedef struct {
    char *name;
    unsigned char *data;
    size_t len;
    int pax;                  /* 1 when the name needs a pax path record */
    char npy_sha[65];         /* SHA-256 of the float payload (".npy" members) */
} member;

enum { MAX_MEMBERS = 32 };

static void random_bytes(unsigned char *p, size_t n, uint64_t seed)
{
    ws_rng r = {seed};
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(ws_rng_next(&r) >> 56);
}

/* Appends n copies of c to the NUL-terminated string s. */
static char *run_of(char *s, char c, size_t n)
{
    size_t l = strlen(s);
    memset(s + l, c, n);
    s[l + n] = 0;
    return s;
}

static void add_member(member *m, int *n, const char *name, size_t len, int pax)
{
    cr_assert_lt(*n, MAX_MEMBERS);
    member *x = &m[(*n)++];
    memset(x, 0, sizeof *x);
    x->name = strdup(name);
    x->len = len;
    x->data = malloc(len ? len : 1);
    random_bytes(x->data, len, 1000 + (uint64_t)*n);
    x->pax = pax;
}

/* The shard the tests write: sizes around one block, a large member, names
 * at each ustar limit, a dot-containing directory, UTF-8, an .npy array. */
static int make_members(member *m)
{
    int n = 0;
    char b[1024];
    add_member(m, &n, "small.txt", 5, 0);
    memcpy(m[n - 1].data, "hello", 5);
    add_member(m, &n, "empty.bin", 0, 0);
    add_member(m, &n, "b511.bin", 511, 0);
    add_member(m, &n, "b512.bin", 512, 0);
    add_member(m, &n, "b513.bin", 513, 0);
    add_member(m, &n, "big.bin", (1u << 20) + 7, 0); /* past tar.c's 64 KiB buffer */
    b[0] = 0; /* 100 bytes: fills the name field, no NUL */
    add_member(m, &n, strcat(run_of(b, 'n', 96), ".bin"), 100, 0);
    b[0] = 0; /* 101 bytes, no '/': pax */
    add_member(m, &n, strcat(run_of(b, 'n', 97), ".bin"), 101, 1);
    b[0] = 0; /* 150 bytes: prefix "ddd..." (80) and name (69) */
    run_of(b, 'd', 80);
    add_member(m, &n, strcat(run_of(strcat(b, "/"), 'f', 65), ".bin"), 150, 0);
    b[0] = 0; /* 256 bytes: prefix of 155 and name of 100, the largest ustar path */
    run_of(b, 'p', 155);
    add_member(m, &n, strcat(run_of(strcat(b, "/"), 'r', 96), ".bin"), 256, 0);
    b[0] = 0; /* 256 bytes, but the only '/' leaves a prefix of 156: pax */
    run_of(b, 'p', 156);
    add_member(m, &n, strcat(run_of(strcat(b, "/"), 'r', 95), ".bin"), 256, 1);
    b[0] = 0; /* 116 bytes whose last component (114) is too long for the name field: pax */
    add_member(m, &n, strcat(run_of(strcpy(b, "a/"), 'q', 110), ".bin"), 116, 1);
    b[0] = 0; /* 300 bytes in three components: pax */
    run_of(b, 'x', 120);
    run_of(strcat(b, "/"), 'y', 120);
    add_member(m, &n, strcat(run_of(strcat(b, "/"), 'z', 54), ".bin"), 300, 1);
    add_member(m, &n, "sp ace/\xc3\xbc" "tf-8 \xe2\x9c\x93.txt", 77, 0);

    /* "a.b/c.d.npy": a (2, 3) float32 array, as ws_write_array writes one */
    int64_t shape[2] = {2, 3};
    float v[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-3f, -7.0f};
    char hdr[256];
    size_t hl = ws_npy_header(hdr, sizeof hdr, shape, 2);
    cr_assert(hl);
    add_member(m, &n, "a.b/c.d.npy", hl + sizeof v, 0);
    memcpy(m[n - 1].data, hdr, hl);
    memcpy(m[n - 1].data + hl, v, sizeof v);
    sha256_hex(v, sizeof v, m[n - 1].npy_sha);
    return n;
}

static void free_members(member *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].data);
    }
}

/* Writes the members to path: with ws_tar_add (pieces = 0), or with
 * begin/write/end in pieces of random lengths, 0 included (pieces = seed). */
static void write_shard(const char *path, const member *m, int n, uint64_t pieces)
{
    ws_err err = {{0}};
    ws_tar *t = ws_tar_open(path, &err);
    cr_assert(t, "%s", err.msg);
    ws_rng r = {pieces};
    for (int i = 0; i < n; i++) {
        if (!pieces) {
            cr_assert_eq(ws_tar_add(t, m[i].name, m[i].data, m[i].len, &err), 0, "%s", err.msg);
            continue;
        }
        cr_assert_eq(ws_tar_begin(t, m[i].name, m[i].len, &err), 0, "%s", err.msg);
        for (size_t off = 0; off < m[i].len;) {
            size_t k = ws_rng_next(&r) % 700; /* crosses blocks; some 0 */
            if (k > m[i].len - off)
                k = m[i].len - off;
            cr_assert_eq(ws_tar_write(t, m[i].data + off, k, &err), 0, "%s", err.msg);
            off += k;
        }
        cr_assert_eq(ws_tar_end(t, &err), 0, "%s", err.msg);
    }
    cr_assert_eq(ws_tar_commit(t, &err), 0, "%s", err.msg);
}

static char *slurp(const char *path, size_t *len)
{
    size_t n;
    char *b = read_file(path, &n);
    char *t = b ? realloc(b, n + 1) : NULL;
    cr_assert(t, "cannot read %s", path);
    t[n] = 0;
    if (len)
        *len = n;
    return t;
}

/* Runs tar_read.py [mode] shard (mode "" or "--first-header" or
 * "--webdataset") and returns its JSON; the output goes through
 * "<shard>.json", removed before returning. */
static cJSON *py_read(const char *mode, const char *shard)
{
    char out[800], cmd[4096], err[4096];
    snprintf(out, sizeof out, "%s.json", shard);
    snprintf(cmd, sizeof cmd, "%s '%s' %s '%s' > '%s'", PY, test_data("../tar_read.py"), mode, shard,
             out);
    int rc = run_cmd(cmd, err, sizeof err);
    cr_assert_eq(rc, 0, "%s: exit %d: %s", cmd, rc, err);
    char *text = slurp(out, NULL);
    cJSON *j = cJSON_Parse(text);
    cr_assert(j, "tar_read.py printed no JSON: %s", text);
    free(text);
    unlink(out);
    return j;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsString(v), "JSON field %s is not a string", key);
    return v->valuestring;
}

static double jnum(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert(cJSON_IsNumber(v), "JSON field %s is not a number", key);
    return v->valuedouble;
}

static void to_hex(const char *s, char *hex)
{
    for (; *s; s++, hex += 2)
        sprintf(hex, "%02x", (unsigned char)*s);
    *hex = 0;
}

/* Checks tar_read.py's view of path against the members written. */
static void expect_python_sees(const char *path, const member *m, int n)
{
    cJSON *j = py_read("", path);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "members");
    cr_assert_eq(cJSON_GetArraySize(list), n, "members: got %d, wrote %d", cJSON_GetArraySize(list), n);
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(list, i);
        char hex[2 * 4096 + 1], sha[65];
        to_hex(m[i].name, hex);
        cr_assert_str_eq(jstr(e, "name_hex"), hex, "member %d: name %s, wrote %s", i,
                         jstr(e, "name"), m[i].name);
        cr_assert_str_eq(jstr(e, "type"), "file", "%s", m[i].name);
        cr_assert_eq(jnum(e, "size"), (double)m[i].len, "%s: size %.0f, wrote %zu", m[i].name,
                     jnum(e, "size"), m[i].len);
        sha256_hex(m[i].data, m[i].len, sha);
        cr_assert_str_eq(jstr(e, "sha256"), sha, "%s: contents differ", m[i].name);
        cr_assert_eq(jnum(e, "mtime"), 0, "%s", m[i].name);
        cr_assert_eq(jnum(e, "mode"), 0644, "%s", m[i].name);
        cr_assert_eq(jnum(e, "uid"), 0);
        cr_assert_eq(jnum(e, "gid"), 0);
        cr_assert_str_eq(jstr(e, "uname"), "");
        cr_assert_str_eq(jstr(e, "gname"), "");
        const cJSON *pax = cJSON_GetObjectItemCaseSensitive(e, "pax");
        if (m[i].pax) {
            cr_assert_geq(cJSON_GetArraySize(pax), 1, "%s: expected a pax path record", m[i].name);
            int has_path = 0;
            for (int k = 0; k < cJSON_GetArraySize(pax); k++)
                has_path |= !strcmp(cJSON_GetArrayItem(pax, k)->valuestring, "path");
            cr_assert(has_path, "%s: no pax path record", m[i].name);
        } else {
            cr_assert_eq(cJSON_GetArraySize(pax), 0, "%s (%zu bytes) fits ustar, got a pax header",
                         m[i].name, strlen(m[i].name));
        }
        if (m[i].npy_sha[0]) {
            const cJSON *npy = cJSON_GetObjectItemCaseSensitive(e, "npy");
            cr_assert(npy, "%s: not read as .npy", m[i].name);
            const cJSON *shape = cJSON_GetObjectItemCaseSensitive(npy, "shape");
            cr_assert_eq(cJSON_GetArraySize(shape), 2);
            cr_assert_eq(cJSON_GetArrayItem(shape, 0)->valuedouble, 2);
            cr_assert_eq(cJSON_GetArrayItem(shape, 1)->valuedouble, 3);
            cr_assert_str_eq(jstr(npy, "dtype"), "<f4");
            cr_assert_str_eq(jstr(npy, "sha256"), m[i].npy_sha);
        }
    }
    cJSON_Delete(j);
}

/* Entries of dir other than . and .., and how many start with prefix. */
static int count_entries(const char *dir, const char *prefix, int *with_prefix)
{
    DIR *d = opendir(dir);
    cr_assert(d, "opendir %s", dir);
    int n = 0, p = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        n++;
        p += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    }
    closedir(d);
    if (with_prefix)
        *with_prefix = p;
    return n;
}

static uint64_t padded(uint64_t n)
{
    return (n + 511) / 512 * 512;
}

/* --- what readers see ---------------------------------------------------- */

Test(tar, python_tarfile_reads_back_every_name_size_and_content)
{
    member m[MAX_MEMBERS];
    int n = make_members(m);
    char path[700];
    snprintf(path, sizeof path, "%s/shard.tar", test_tmpdir());
    write_shard(path, m, n, 0);
    expect_python_sees(path, m, n);
    free_members(m, n);
}

Test(tar, shard_is_headers_padded_data_and_two_zero_blocks)
{
    member m[MAX_MEMBERS];
    int n = make_members(m);
    char path[700];
    snprintf(path, sizeof path, "%s/shard.tar", test_tmpdir());
    ws_err err = {{0}};
    ws_tar *t = ws_tar_open(path, &err);
    cr_assert(t, "%s", err.msg);
    uint64_t want = 0;
    for (int i = 0; i < n; i++) {
        cr_assert_eq(ws_tar_add(t, m[i].name, m[i].data, m[i].len, &err), 0, "%s", err.msg);
        unsigned char hdr[WS_TAR_HEADER_MAX];
        size_t hl = ws_tar_header(hdr, m[i].name, m[i].len, &err);
        cr_assert_eq(hl, m[i].pax ? 3 * 512u : 512u, "%s: header of %zu bytes", m[i].name, hl);
        want += hl + padded(m[i].len);
        cr_assert_eq(ws_tar_bytes(t), want, "after %s", m[i].name);
        cr_assert_eq(ws_tar_members(t), (uint64_t)i + 1);
    }
    cr_assert_eq(ws_tar_commit(t, &err), 0, "%s", err.msg);
    size_t len;
    unsigned char *b = read_file(path, &len);
    cr_assert_eq(len, want + 1024, "file of %zu bytes, expected %llu", len,
                 (unsigned long long)(want + 1024));
    for (size_t i = len - 1024; i < len; i++)
        cr_assert_eq(b[i], 0, "end block byte %zu", i);
    free(b);
    free_members(m, n);
}

/* The fields of one header block, from the ustar table (tar.h), not from tar.c. */
static void expect_ustar_block(const unsigned char *b, const char *name, const char *prefix,
                               const char *size_octal, char type)
{
    char field[160];
    memcpy(field, b, 100);
    field[100] = 0;
    cr_assert_str_eq(field, name);
    cr_assert_eq(memcmp(b + 100, "0000644\0", 8), 0, "mode");
    cr_assert_eq(memcmp(b + 108, "0000000\0", 8), 0, "uid");
    cr_assert_eq(memcmp(b + 116, "0000000\0", 8), 0, "gid");
    cr_assert_eq(memcmp(b + 124, size_octal, 12), 0, "size %.12s, expected %s", b + 124, size_octal);
    cr_assert_eq(memcmp(b + 136, "00000000000\0", 12), 0, "mtime");
    cr_assert_eq(b[156], type);
    for (int i = 157; i < 257; i++)
        cr_assert_eq(b[i], 0, "linkname byte %d", i);
    cr_assert_eq(memcmp(b + 257, "ustar\0" "00", 8), 0, "magic and version");
    for (int i = 265; i < 329; i++)
        cr_assert_eq(b[i], 0, "uname/gname byte %d", i);
    cr_assert_eq(memcmp(b + 329, "0000000\0" "0000000\0", 16), 0, "devmajor/devminor");
    memcpy(field, b + 345, 155);
    field[155] = 0;
    cr_assert_str_eq(field, prefix);
    for (int i = 500; i < 512; i++)
        cr_assert_eq(b[i], 0, "pad byte %d", i);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += (i >= 148 && i < 156) ? ' ' : b[i];
    char want[8];
    snprintf(want, sizeof want, "%06o", sum);
    cr_assert_eq(memcmp(b + 148, want, 6), 0, "chksum %.6s, recomputed %s", b + 148, want);
    cr_assert_eq(b[154], 0);
    cr_assert_eq(b[155], ' ');
}

Test(tar, header_fields_and_checksum_follow_the_ustar_table)
{
    unsigned char b[WS_TAR_HEADER_MAX];
    ws_err err = {{0}};
    cr_assert_eq(ws_tar_header(b, "dir/name.bin", 1234, &err), 512, "%s", err.msg);
    expect_ustar_block(b, "dir/name.bin", "", "00000002322\0", '0');

    char name[300] = "";
    run_of(name, 'd', 80);
    run_of(strcat(name, "/"), 'f', 69);
    cr_assert_eq(ws_tar_header(b, name, 0, &err), 512, "%s", err.msg);
    char pre[100] = "";
    char nm[100] = "";
    expect_ustar_block(b, run_of(nm, 'f', 69), run_of(pre, 'd', 80), "00000000000\0", '0');

    /* the largest size in 11 octal digits: no pax header */
    cr_assert_eq(ws_tar_header(b, "x", 077777777777ULL, &err), 512);
    expect_ustar_block(b, "x", "", "77777777777\0", '0');

    /* a name of exactly 100 bytes fills the field without a NUL */
    name[0] = 0;
    run_of(name, 'n', 100);
    cr_assert_eq(ws_tar_header(b, name, 1, &err), 512);
    cr_assert_eq(memcmp(b, name, 100), 0);
    cr_assert_eq(b[100], '0', "mode follows at once");
}

Test(tar, sizes_of_8_gib_and_more_go_in_a_pax_size_record)
{
    unsigned char b[WS_TAR_HEADER_MAX];
    ws_err err = {{0}};
    uint64_t size = 1ULL << 33;
    size_t hl = ws_tar_header(b, "huge.bin", size, &err);
    cr_assert_eq(hl, 3 * 512u, "%s", err.msg);
    const char rec[] = "19 size=8589934592\n"; /* 19 = 2 + 1 + 4 + 1 + 10 + 1 */
    expect_ustar_block(b, "././@PaxHeader", "", "00000000023\0", 'x');
    cr_assert_eq(memcmp(b + 512, rec, sizeof rec - 1), 0, "record %.19s", b + 512);
    for (size_t i = 512 + sizeof rec - 1; i < 1024; i++)
        cr_assert_eq(b[i], 0, "record padding byte %zu", i);
    expect_ustar_block(b + 1024, "huge.bin", "", "00000000000\0", '0');

    /* Python reads the size from the record; only the headers are on disk */
    const char *dir = test_tmpdir();
    char path[700];
    snprintf(path, sizeof path, "%s/huge.tar", dir);
    cr_assert_eq(ws_write_file_atomic(path, b, hl, &err), 0, "%s", err.msg);
    cJSON *j = py_read("--first-header", path);
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(j, "first");
    cr_assert_str_eq(jstr(first, "name"), "huge.bin");
    cr_assert_eq(jnum(first, "size"), 8589934592.0);
    cJSON_Delete(j);

    /* and so does GNU tar (which then finds the data missing) */
    char cmd[1700], err_text[1024];
    snprintf(cmd, sizeof cmd, "tar -tvf '%s' > '%s.list'", path, path);
    run_cmd(cmd, err_text, sizeof err_text);
    snprintf(cmd, sizeof cmd, "%s.list", path);
    char *list = slurp(cmd, NULL);
    cr_assert(strstr(list, " 8589934592 ") && strstr(list, "huge.bin"), "tar -tv: %s (%s)", list,
              err_text);
    free(list);

    /* a long name and a large size: both records, path first */
    char name[400] = "";
    run_of(name, 'L', 300);
    hl = ws_tar_header(b, name, size + 1, &err);
    cr_assert_eq(hl, 3 * 512u);
    cr_assert_eq(memcmp(b + 512, "310 path=", 9), 0, "%.9s", b + 512); /* 3+1+4+1+300+1 */
    cr_assert_eq(memcmp(b + 512 + 309, "\n19 size=8589934593\n", 21), 0);
    expect_ustar_block(b + 1024, run_of((char[128]){0}, 'L', 100), "", "00000000000\0", '0');
}

Test(tar, gnu_tar_lists_and_extracts_the_shard_without_warnings)
{
    member m[MAX_MEMBERS];
    int n = make_members(m);
    const char *dir = test_tmpdir();
    char path[700], cmd[2400], err[2048], out[800];
    snprintf(path, sizeof path, "%s/shard.tar", dir);
    write_shard(path, m, n, 0);

    snprintf(out, sizeof out, "%s/list.txt", dir);
    snprintf(cmd, sizeof cmd, "LC_ALL=C tar -tvf '%s' > '%s'", path, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
    cr_assert_str_eq(err, "", "tar -tvf warned");
    char *list = slurp(out, NULL);
    char *line = list;
    for (int i = 0; i < n; i++) {
        cr_assert(line && *line, "tar -tv listed %d members, wrote %d", i, n);
        char *nl = strchr(line, '\n');
        cr_assert(nl);
        *nl = 0;
        char perm[16], owner[64], date[16], hm[16];
        unsigned long long size;
        int at = 0;
        cr_assert_eq(sscanf(line, "%15s %63s %llu %15s %15s %n", perm, owner, &size, date, hm, &at),
                     5, "line: %s", line);
        cr_assert_str_eq(perm, "-rw-r--r--", "%s", line);
        cr_assert_str_eq(owner, "0/0", "%s", line);
        cr_assert_eq(size, m[i].len, "%s", line);
        int printable = 1;
        for (const char *c = m[i].name; *c; c++)
            printable &= *c > ' ' && *c < 0x7f && *c != '\\';
        if (printable)
            cr_assert_str_eq(line + at, m[i].name);
        line = nl + 1;
    }
    cr_assert_str_eq(line, "", "tar -tv listed more than %d members", n);
    free(list);

    char x[720];
    snprintf(x, sizeof x, "%s/x", dir);
    cr_assert_eq(mkdir(x, 0755), 0);
    snprintf(cmd, sizeof cmd, "tar -xf '%s' -C '%s'", path, x);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
    cr_assert_str_eq(err, "", "tar -xf warned");
    for (int i = 0; i < n; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", x, m[i].name);
        size_t len;
        unsigned char *b = read_file(p, &len);
        cr_assert(b, "%s not extracted", m[i].name);
        cr_assert(len == m[i].len && memcmp(b, m[i].data, len) == 0, "%s: extracted bytes differ",
                  m[i].name);
        free(b);
    }
    free_members(m, n);
}

Test(tar, long_name_that_is_not_utf8_reads_back_as_its_bytes)
{
    char name[200] = "dir/";
    strcat(run_of(name, 'x', 120), "\xff\xfe.bin");
    member m[1] = {{.name = name, .data = (unsigned char *)"data\n", .len = 5, .pax = 1}};
    const char *dir = test_tmpdir();
    char path[700], cmd[1600], err[1024], x[720];
    snprintf(path, sizeof path, "%s/shard.tar", dir);
    write_shard(path, m, 1, 0);
    expect_python_sees(path, m, 1);

    unsigned char b[WS_TAR_HEADER_MAX];
    cr_assert_eq(ws_tar_header(b, name, 5, &(ws_err){{0}}), 3 * 512u);
    /* raw bytes in the path record, no hdrcharset record (tar.h says why) */
    cr_assert_eq(memcmp(b + 512, "140 path=dir/", 13), 0, "record %.13s", b + 512);
    cr_assert(b[512 + 139] == '\n' && b[512 + 140] == 0, "one record of 140 bytes");

    snprintf(x, sizeof x, "%s/x", dir);
    cr_assert_eq(mkdir(x, 0755), 0);
    snprintf(cmd, sizeof cmd, "tar -xf '%s' -C '%s'", path, x);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
    cr_assert_str_eq(err, "", "tar -xf warned");
    char p[1000];
    snprintf(p, sizeof p, "%s/%s", x, name);
    size_t len;
    char *got = read_file(p, &len);
    cr_assert(got && len == 5 && !memcmp(got, "data\n", 5), "not extracted under its bytes");
    free(got);
}

Test(tar, pax_record_lengths_are_right_across_digit_counts)
{
    /* a path record is name + 7 bytes plus its length's digits: lengths 990
     * to 996 put the record at 999 to 1006 bytes, where 3 digits become 4;
     * Python rejects a record whose length is off by one */
    enum { FIRST = 988, LAST = 998 };
    member m[LAST - FIRST + 2];
    int n = 0;
    for (int L = FIRST; L <= LAST; L++, n++) {
        char *name = calloc(1, (size_t)L + 1);
        for (int i = 0; i < L; i++) /* components of 199 bytes and a '/' */
            name[i] = (i % 200 == 199 && i < L - 1) ? '/' : (char)('a' + i % 26);
        m[n] = (member){.name = name, .data = (unsigned char *)"x", .len = 1, .pax = 1};
    }
    char *longest = calloc(1, WS_TAR_NAME_MAX + 1);
    for (int i = 0; i < WS_TAR_NAME_MAX; i++)
        longest[i] = (i % 200 == 199) ? '/' : 'k';
    m[n++] = (member){.name = longest, .data = (unsigned char *)"y", .len = 1, .pax = 1};
    char path[700];
    snprintf(path, sizeof path, "%s/shard.tar", test_tmpdir());
    write_shard(path, m, n, 0);
    expect_python_sees(path, m, n);
    for (int i = 0; i < n; i++)
        free(m[i].name);
}

Test(tar, webdataset_groups_members_by_key_when_installed)
{
    char probe[600];
    snprintf(probe, sizeof probe, "%s -c 'import webdataset'", PY);
    if (run_cmd(probe, NULL, 0) != 0)
        cr_skip_test("webdataset is not installed for %s", PY);
    char k1[64], k2[64], n1[80], n2[80], n3[80];
    cr_assert_eq(ws_tar_key("spk1/a.b", k1, sizeof k1), 0);
    cr_assert_eq(ws_tar_key("spk1/a%2Eb", k2, sizeof k2), 0);
    snprintf(n1, sizeof n1, "%s.npy", k1);
    snprintf(n2, sizeof n2, "%s.json", k1);
    snprintf(n3, sizeof n3, "%s.npy", k2);
    member m[3] = {{.name = n1, .data = (unsigned char *)"npy-1", .len = 5},
                   {.name = n2, .data = (unsigned char *)"{}", .len = 2},
                   {.name = n3, .data = (unsigned char *)"npy-2", .len = 5}};
    char path[700];
    snprintf(path, sizeof path, "%s/shard.tar", test_tmpdir());
    write_shard(path, m, 3, 0);
    cJSON *j = py_read("--webdataset", path);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "samples");
    cr_assert_eq(cJSON_GetArraySize(s), 2, "samples: %d", cJSON_GetArraySize(s));
    const cJSON *s0 = cJSON_GetArrayItem(s, 0), *s1 = cJSON_GetArrayItem(s, 1);
    cr_assert_str_eq(jstr(s0, "key"), "spk1/a%2Eb");
    cr_assert_str_eq(jstr(s1, "key"), "spk1/a%252Eb");
    char h[65];
    const cJSON *p0 = cJSON_GetObjectItemCaseSensitive(s0, "parts");
    cr_assert_eq(cJSON_GetArraySize(p0), 2);
    sha256_hex("npy-1", 5, h);
    cr_assert_str_eq(jstr(p0, "npy"), h);
    sha256_hex("{}", 2, h);
    cr_assert_str_eq(jstr(p0, "json"), h);
    sha256_hex("npy-2", 5, h);
    cr_assert_str_eq(jstr(cJSON_GetObjectItemCaseSensitive(s1, "parts"), "npy"), h);
    cJSON_Delete(j);
}

/* --- the same bytes ------------------------------------------------------ */

Test(tar, begin_write_end_in_pieces_gives_the_bytes_of_add)
{
    member m[MAX_MEMBERS];
    int n = make_members(m);
    const char *dir = test_tmpdir();
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/add.tar", dir);
    snprintf(b, sizeof b, "%s/pieces.tar", dir);
    write_shard(a, m, n, 0);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        write_shard(b, m, n, seed);
        size_t la, lb;
        unsigned char *x = read_file(a, &la), *y = read_file(b, &lb);
        cr_assert(la == lb && memcmp(x, y, la) == 0, "seed %llu: %zu vs %zu bytes or contents",
                  (unsigned long long)seed, la, lb);
        free(x);
        free(y);
    }
    free_members(m, n);
}

Test(tar, same_members_written_later_give_the_same_bytes)
{
    member m[MAX_MEMBERS];
    int n = make_members(m);
    const char *dir = test_tmpdir();
    char a[700], b[700];
    snprintf(a, sizeof a, "%s/first.tar", dir);
    snprintf(b, sizeof b, "%s/second.tar", dir);
    write_shard(a, m, n, 0);
    struct timespec pause = {1, 100000000}; /* past a whole second of mtime */
    nanosleep(&pause, NULL);
    write_shard(b, m, n, 0);
    size_t la, lb;
    unsigned char *x = read_file(a, &la), *y = read_file(b, &lb);
    cr_assert(la == lb && memcmp(x, y, la) == 0, "the shard's bytes depend on when it was written");
    free(x);
    free(y);
    free_members(m, n);
}

typedef struct {
    const char *dir;
    int failures[8];
    char msg[8][WS_ERR_LEN];
} thread_ctx;

/* Shard i: 400 members of 0 to 2999 bytes, every third one in pieces;
 * no Criterion assertions off the main thread, failures are recorded. */
static void write_numbered_shard(const char *path, int i, int *failed, char *msg)
{
    ws_err err = {{0}};
    ws_tar *t = ws_tar_open(path, &err);
    ws_rng r = {(uint64_t)i * 7919 + 1};
    unsigned char data[3000];
    for (int k = 0; t && k < 400; k++) {
        char name[64];
        size_t len = ws_rng_next(&r) % sizeof data;
        random_bytes(data, len, (uint64_t)(i * 1000 + k));
        snprintf(name, sizeof name, "s%d/%04d.bin", i, k);
        int rc = k % 3 ? ws_tar_add(t, name, data, len, &err)
                       : ws_tar_begin(t, name, len, &err) || ws_tar_write(t, data, len / 2, &err) ||
                             ws_tar_write(t, data + len / 2, len - len / 2, &err) ||
                             ws_tar_end(t, &err);
        if (rc) {
            ws_tar_abort(t);
            t = NULL;
        }
    }
    if (!t || ws_tar_commit(t, &err)) {
        *failed = 1;
        snprintf(msg, WS_ERR_LEN, "%s", err.msg);
    }
}

static void thread_task(void *ctx, int i, int n)
{
    thread_ctx *c = ctx;
    char path[700];
    snprintf(path, sizeof path, "%s/threaded-%d.tar", c->dir, i);
    write_numbered_shard(path, i, &c->failures[i], c->msg[i]);
}

Test(tar, shards_written_on_several_threads_at_once_equal_shards_written_alone)
{
    thread_ctx c = {.dir = test_tmpdir()};
    enum { N = 6 };
    cr_assert_eq(ws_parallel(N, thread_task, &c), 0);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(c.failures[i], 0, "shard %d: %s", i, c.msg[i]);
        char a[700], b[700];
        snprintf(a, sizeof a, "%s/threaded-%d.tar", c.dir, i);
        snprintf(b, sizeof b, "%s/alone-%d.tar", c.dir, i);
        int failed = 0;
        char msg[WS_ERR_LEN] = "";
        write_numbered_shard(b, i, &failed, msg);
        cr_assert_eq(failed, 0, "%s", msg);
        size_t la, lb;
        unsigned char *x = read_file(a, &la), *y = read_file(b, &lb);
        cr_assert(la == lb && memcmp(x, y, la) == 0, "shard %d differs when written alone", i);
        free(x);
        free(y);
    }
    char path[700];
    snprintf(path, sizeof path, "%s/threaded-%d.tar", c.dir, N - 1);
    cJSON *j = py_read("", path);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "members")), 400);
    cJSON_Delete(j);
}

/* --- errors, abort, replacing -------------------------------------------- */

Test(tar, rejected_names_fail_that_call_only_and_name_the_member)
{
    const char *dir = test_tmpdir();
    char path[700];
    snprintf(path, sizeof path, "%s/shard.tar", dir);
    ws_err err = {{0}};
    ws_tar *t = ws_tar_open(path, &err);
    cr_assert(t, "%s", err.msg);
    static char toolong[WS_TAR_NAME_MAX + 2];
    memset(toolong, 'l', WS_TAR_NAME_MAX + 1);
    const struct {
        const char *name, *why;
    } bad[] = {
        {"", "empty name"},
        {"/etc/x.npy", "absolute name"},
        {"a/../b.npy", "'.' or '..' path component"},
        {"../b.npy", "'.' or '..' path component"},
        {"./b.npy", "'.' or '..' path component"},
        {"a/.", "'.' or '..' path component"},
        {"a//b.npy", "empty path component"},
        {"dir/", "empty path component"},
        {toolong, "name longer than 4095 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err.msg[0] = 0;
        cr_assert_eq(ws_tar_add(t, bad[i].name, "x", 1, &err), -1, "\"%s\" accepted", bad[i].name);
        char want[1024];
        snprintf(want, sizeof want, "%s: member \"%.40s", path, bad[i].name);
        cr_assert(strncmp(err.msg, want, strlen(want)) == 0, "message: %s", err.msg);
        cr_assert(strstr(err.msg, bad[i].why), "message: %s (expected %s)", err.msg, bad[i].why);
        cr_assert(!strchr(err.msg, '\n'));
        cr_assert_eq(ws_tar_begin(t, bad[i].name, 1, &err), -1);
    }
    cr_assert_eq(ws_tar_add(t, "good.txt", "ok", 2, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_tar_commit(t, &err), 0, "%s", err.msg);
    member m[1] = {{.name = "good.txt", .data = (unsigned char *)"ok", .len = 2}};
    expect_python_sees(path, m, 1);
}

Test(tar, size_mismatch_fails_the_shard_and_leaves_nothing)
{
    const char *dir = test_tmpdir();
    char path[700];
    snprintf(path, sizeof path, "%s/shard.tar", dir);
    ws_err err = {{0}};

    ws_tar *t = ws_tar_open(path, &err);
    cr_assert(t);
    cr_assert_eq(ws_tar_add(t, "first.bin", "abc", 3, &err), 0);
    cr_assert_eq(ws_tar_begin(t, "short.bin", 10, &err), 0);
    cr_assert_eq(ws_tar_write(t, "abcd", 4, &err), 0);
    cr_assert_eq(ws_tar_end(t, &err), -1);
    char want[1024];
    snprintf(want, sizeof want, "%s: member \"short.bin\": ended after 4 of its declared 10 bytes", path);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(ws_tar_add(t, "later.bin", "x", 1, &err), -1);
    cr_assert(strstr(err.msg, "an earlier error failed this shard"), "%s", err.msg);
    cr_assert_eq(ws_tar_commit(t, &err), -1);
    cr_assert(strstr(err.msg, "not written"), "%s", err.msg);
    cr_assert_eq(count_entries(dir, "", NULL), 0, "a file was left");

    t = ws_tar_open(path, &err);
    cr_assert(t);
    cr_assert_eq(ws_tar_begin(t, "long.bin", 3, &err), 0);
    cr_assert_eq(ws_tar_write(t, "ab", 2, &err), 0);
    cr_assert_eq(ws_tar_write(t, "cd", 2, &err), -1);
    snprintf(want, sizeof want,
             "%s: member \"long.bin\": 2 more bytes would pass its declared size 3 (2 written)", path);
    cr_assert_str_eq(err.msg, want);
    cr_assert_eq(ws_tar_write(t, "c", 1, &err), -1, "the shard stays failed");
    ws_tar_abort(t);
    cr_assert_eq(count_entries(dir, "", NULL), 0, "a file was left");
}

Test(tar, calls_out_of_order_are_errors)
{
    const char *dir = test_tmpdir();
    char path[700];
    snprintf(path, sizeof path, "%s/shard.tar", dir);
    ws_err err = {{0}};
    ws_tar *t = ws_tar_open(path, &err);
    cr_assert(t);
    cr_assert_eq(ws_tar_write(t, "x", 1, &err), -1);
    cr_assert(strstr(err.msg, "write with no member begun"), "%s", err.msg);
    cr_assert_eq(ws_tar_end(t, &err), -1);
    cr_assert(strstr(err.msg, "end with no member begun"), "%s", err.msg);
    cr_assert_eq(ws_tar_add(t, "null.bin", NULL, 4, &err), -1);
    cr_assert(strstr(err.msg, "null.bin\": 4 bytes from a NULL pointer"), "%s", err.msg);
    cr_assert_eq(ws_tar_add(t, "empty.bin", NULL, 0, &err), 0, "%s", err.msg);

    /* a second begin fails, and the first member goes on */
    cr_assert_eq(ws_tar_begin(t, "one.bin", 2, &err), 0);
    cr_assert_eq(ws_tar_begin(t, "two.bin", 2, &err), -1);
    cr_assert(strstr(err.msg, "member \"two.bin\": cannot begin, member \"one.bin\" is not ended"),
              "%s", err.msg);
    cr_assert_eq(ws_tar_add(t, "three.bin", "zz", 2, &err), -1);
    cr_assert_eq(ws_tar_write(t, "ok", 2, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_tar_end(t, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_tar_commit(t, &err), 0, "%s", err.msg);
    member m[2] = {{.name = "empty.bin", .data = (unsigned char *)"", .len = 0},
                   {.name = "one.bin", .data = (unsigned char *)"ok", .len = 2}};
    expect_python_sees(path, m, 2);

    /* commit with a member open: an error, and nothing new */
    char other[720];
    snprintf(other, sizeof other, "%s/other.tar", dir);
    t = ws_tar_open(other, &err);
    cr_assert(t);
    cr_assert_eq(ws_tar_begin(t, "open.bin", 5, &err), 0);
    cr_assert_eq(ws_tar_write(t, "ab", 2, &err), 0);
    cr_assert_eq(ws_tar_commit(t, &err), -1);
    cr_assert(strstr(err.msg, "member \"open.bin\" not ended (2 of 5 bytes written)"), "%s", err.msg);
    cr_assert(!file_exists(other));
    cr_assert_eq(count_entries(dir, "", NULL), 1, "only shard.tar");
}

Test(tar, abort_leaves_no_file_and_no_temporary_name)
{
    ws_tar_abort(NULL);
    for (int named = 0; named <= 1; named++) {
        if (named) /* no O_TMPFILE: a ".ws-XXXXXX.tmp" name exists while writing */
            setenv("WHISPER_STEM_NO_TMPFILE", "1", 1);
        const char *dir = test_tmpdir();
        char path[700];
        snprintf(path, sizeof path, "%s/shard.tar", dir);
        ws_err err = {{0}};
        ws_tar *t = ws_tar_open(path, &err);
        cr_assert(t, "%s", err.msg);
        static unsigned char big[300000];
        cr_assert_eq(ws_tar_add(t, "big.bin", big, sizeof big, &err), 0, "%s", err.msg);
        int tmp;
        cr_assert_eq(count_entries(dir, ".ws-", &tmp), named, "entries while writing");
        cr_assert_eq(tmp, named);
        ws_tar_abort(t);
        cr_assert_eq(count_entries(dir, "", NULL), 0, "named=%d: something was left", named);
        rmdir(dir);
    }
}

Test(tar, commit_replaces_an_existing_shard_whole)
{
    member m[MAX_MEMBERS];
    int n = make_members(m);
    for (int named = 0; named <= 1; named++) {
        if (named)
            setenv("WHISPER_STEM_NO_TMPFILE", "1", 1);
        const char *dir = test_tmpdir();
        char path[700];
        snprintf(path, sizeof path, "%s/shard.tar", dir);
        write_shard(path, m, 3, 0); /* the old shard: 3 members */
        size_t old_len;
        unsigned char *old = read_file(path, &old_len);
        struct stat st0;
        cr_assert_eq(stat(path, &st0), 0);

        ws_err err = {{0}};
        ws_tar *t = ws_tar_open(path, &err);
        cr_assert(t, "%s", err.msg);
        for (int i = 0; i < n; i++) {
            cr_assert_eq(ws_tar_add(t, m[i].name, m[i].data, m[i].len, &err), 0, "%s", err.msg);
            size_t len;
            unsigned char *now = read_file(path, &len);
            cr_assert(len == old_len && memcmp(now, old, len) == 0,
                      "the old shard changed before the commit");
            free(now);
        }
        cr_assert_eq(ws_tar_commit(t, &err), 0, "%s", err.msg);
        struct stat st1;
        cr_assert_eq(stat(path, &st1), 0);
        cr_assert_neq(st1.st_ino, st0.st_ino, "replaced in place, not renamed over");
        expect_python_sees(path, m, n);
        int tmp;
        cr_assert_eq(count_entries(dir, ".ws-", &tmp), 1, "only the shard");
        cr_assert_eq(tmp, 0);
        free(old);
    }
    free_members(m, n);
}

Test(tar, write_errors_name_the_shard_and_fail_it)
{
    struct stat st;
    if (stat("/dev/full", &st) || !S_ISCHR(st.st_mode) || access("/dev/full", W_OK))
        cr_skip_test("no writable /dev/full");
    ws_err err = {{0}};
    ws_tar *t = ws_tar_open("/dev/full", &err);
    cr_assert(t, "%s", err.msg);
    static unsigned char big[200000];
    cr_assert_eq(ws_tar_add(t, "big.bin", big, sizeof big, &err), -1);
    cr_assert_str_eq(err.msg, "/dev/full: write failed: No space left on device");
    cr_assert_eq(ws_tar_add(t, "small.bin", "x", 1, &err), -1);
    cr_assert_str_eq(err.msg, "/dev/full: not written: an earlier error failed this shard");
    cr_assert_eq(ws_tar_commit(t, &err), -1);

    /* buffered members fail at the commit */
    t = ws_tar_open("/dev/full", &err);
    cr_assert(t);
    cr_assert_eq(ws_tar_add(t, "small.bin", "x", 1, &err), 0);
    cr_assert_eq(ws_tar_commit(t, &err), -1);
    cr_assert_str_eq(err.msg, "/dev/full: write failed: No space left on device");
}

/* --- keys ---------------------------------------------------------------- */

/* Percent-decoding: the inverse of ws_tar_key's rule (written here, not
 * shared with tar.c). -1 on a malformed escape. */
static int key_decode(const char *key, char *out)
{
    for (; *key; key++) {
        if (*key != '%') {
            *out++ = *key;
            continue;
        }
        unsigned v;
        if (!key[1] || !key[2] || sscanf(key + 1, "%2X", &v) != 1)
            return -1;
        *out++ = (char)v;
        key += 2;
    }
    *out = 0;
    return 0;
}

Test(tar, key_rule_examples)
{
    const struct {
        const char *rel, *key;
    } ok[] = {
        {"spk1/001", "spk1/001"},
        {"a.b/c.d", "a%2Eb/c%2Ed"},
        {"a.b", "a%2Eb"},
        {"a%2Eb", "a%252Eb"},
        {"100%", "100%25"},
        {"...x", "%2E%2E%2Ex"},
        {"a/..b", "a/%2E%2Eb"},
        {".hidden", "%2Ehidden"},
        {"tab\there\x7f", "tab%09here%7F"},
        {"line\nbreak", "line%0Abreak"},
        {"\xc3\xbc" "ber r\xc3\xa4um", "\xc3\xbc" "ber r\xc3\xa4um"}, /* UTF-8 and spaces pass */
        {"x", "x"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        cr_assert_eq(ws_tar_key(ok[i].rel, out, sizeof out), 0, "\"%s\" rejected", ok[i].rel);
        cr_assert_str_eq(out, ok[i].key, "rel \"%s\"", ok[i].rel);
    }
    const char *bad[] = {"", "/abs", "a/", "a//b", "./a", "../a", ".", "..", "a/./b", "a/../b", "a/."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        strcpy(out, "junk");
        cr_assert_eq(ws_tar_key(bad[i], out, sizeof out), -1, "\"%s\" accepted as %s", bad[i], out);
        cr_assert_str_eq(out, "", "\"%s\"", bad[i]);
    }
}

Test(tar, key_needs_room_for_itself_and_its_nul)
{
    char out[16];
    cr_assert_eq(ws_tar_key("a.b/c", out, 8), 0); /* "a%2Eb/c" is 7 bytes */
    cr_assert_str_eq(out, "a%2Eb/c");
    cr_assert_eq(ws_tar_key("a.b/c", out, 7), -1);
    cr_assert_str_eq(out, "");
    cr_assert_eq(ws_tar_key("a.b/c", out, 6), -1, "the '/' needs room");
    cr_assert_eq(ws_tar_key("a.b", out, 4), -1, "an escape is all or nothing");
    cr_assert_eq(ws_tar_key("a", out, 1), -1);
    cr_assert_eq(ws_tar_key("a", out, 0), -1);
}

Test(tar, keys_round_trip_have_no_dot_and_never_collide)
{
    /* random relative paths over an alphabet heavy in what the rule escapes */
    static const char alpha[] = "ab.%2E5/\x01\x7f\xc3";
    enum { N = 20000 };
    char(*keys)[64] = calloc(N, sizeof *keys);
    char(*rels)[32] = calloc(N, sizeof *rels);
    ws_rng r = {42};
    int n = 0;
    while (n < N) {
        size_t len = 1 + ws_rng_next(&r) % 10;
        char rel[32];
        for (size_t i = 0; i < len; i++)
            rel[i] = alpha[ws_rng_next(&r) % (sizeof alpha - 1)];
        rel[len] = 0;
        int valid = rel[0] != '/' && rel[len - 1] != '/' && !strstr(rel, "//");
        for (char *c = rel; valid && *c; c += strcspn(c, "/"), c += *c == '/') {
            size_t k = strcspn(c, "/");
            valid = !(k == 1 && c[0] == '.') && !(k == 2 && c[0] == '.' && c[1] == '.');
        }
        char key[64], back[64];
        int rc = ws_tar_key(rel, key, sizeof key);
        cr_assert_eq(rc, valid ? 0 : -1, "\"%s\": %d", rel, rc);
        if (!valid)
            continue;
        cr_assert(!strchr(key, '.'), "key %s of \"%s\" has a dot", key, rel);
        cr_assert_eq(key_decode(key, back), 0);
        cr_assert_str_eq(back, rel, "key %s does not decode to its path", key);
        for (const char *c = key; *c; c++)
            cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "key %s has a control byte", key);
        /* WebDataset's split: the first '.' of the last component */
        char name[80];
        snprintf(name, sizeof name, "%s.npy", key);
        const char *last = strrchr(name, '/');
        const char *dot = strchr(last ? last : name, '.');
        cr_assert_eq((size_t)(dot - name), strlen(key));
        strcpy(keys[n], key);
        strcpy(rels[n], rel);
        n++;
    }
    /* different paths, different keys (the decoder already implies it) */
    int (*cmp)(const void *, const void *) = (int (*)(const void *, const void *))strcmp;
    qsort(keys, N, sizeof *keys, cmp);
    qsort(rels, N, sizeof *rels, cmp);
    int dk = 1, dr = 1;
    for (int i = 1; i < N; i++) {
        dk += strcmp(keys[i], keys[i - 1]) != 0;
        dr += strcmp(rels[i], rels[i - 1]) != 0;
    }
    cr_assert_eq(dk, dr, "%d distinct paths gave %d distinct keys", dr, dk);
    free(keys);
    free(rels);
}

static int collect_names(void *ctx, const char *name, uint64_t size)
{
    char *buf = ctx;
    char line[WS_TAR_NAME_MAX + 32];
    snprintf(line, sizeof line, "%s %llu\n", name, (unsigned long long)size);
    if (strlen(buf) + strlen(line) < 65536)
        strcat(buf, line);
    return 0;
}

/* ws_tar_list reads the member names and sizes back: of our shards (pax long names
 * included) and of GNU tar's own archives (ustar and its pax format). */
Test(tar, list_reads_our_shards_and_gnu_tar_archives)
{
    const char *dir = test_tmpdir();
    char path[1024], cmd[4096], err[1024], longname[400];
    static char got[65536];
    snprintf(path, sizeof path, "%s/s.tar", dir);
    memset(longname, 'n', 300);
    strcpy(longname + 300, ".npy");
    ws_err e = {{0}};
    ws_tar *t = ws_tar_open(path, &e);
    cr_assert_not_null(t, "%s", e.msg);
    cr_assert_eq(ws_tar_add(t, "a%2Eb/c.npy", "xyz", 3, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_tar_add(t, longname, "", 0, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_tar_commit(t, &e), 0, "%s", e.msg);
    got[0] = 0;
    cr_assert_eq(ws_tar_list(path, collect_names, got, &e), 0, "%s", e.msg);
    char want[1024];
    snprintf(want, sizeof want, "a%%2Eb/c.npy 3\n%s 0\n", longname);
    cr_assert_str_eq(got, want);
    for (int fmt = 0; fmt < 2; fmt++) {
        snprintf(cmd, sizeof cmd,
                 "cd %s && mkdir -p g/dir && printf 12345 > g/dir/one.npy && printf '' > g/two && "
                 "tar --format=%s -cf g%d.tar g/dir/one.npy g/two",
                 dir, fmt ? "pax" : "ustar", fmt);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(path, sizeof path, "%s/g%d.tar", dir, fmt);
        got[0] = 0;
        cr_assert_eq(ws_tar_list(path, collect_names, got, &e), 0, "%s", e.msg);
        cr_assert_str_eq(got, "g/dir/one.npy 5\ng/two 0\n");
    }
    /* not a tar file */
    snprintf(path, sizeof path, "%s/not.tar", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 1024; i++)
        fputc('x', f);
    fclose(f);
    cr_assert_eq(ws_tar_list(path, collect_names, got, &e), -1);
    cr_assert(strstr(e.msg, "not.tar"), "%s", e.msg);
}

/* A ustar header block: name, size (octal), typeflag, checksum filled in. */
static void raw_header(unsigned char *b, const char *name, uint64_t size, char type)
{
    memset(b, 0, 512);
    snprintf((char *)b, 100, "%s", name);
    memcpy(b + 100, "0000644", 7);
    memcpy(b + 108, "0000000", 7);
    memcpy(b + 116, "0000000", 7);
    snprintf((char *)b + 124, 12, "%011llo", (unsigned long long)size);
    memcpy(b + 136, "00000000000", 11);
    b[156] = (unsigned char)type;
    memcpy(b + 257, "ustar", 6);
    memcpy(b + 263, "00", 2);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += i >= 148 && i < 156 ? ' ' : b[i];
    snprintf((char *)b + 148, 8, "%06o", sum);
    b[155] = ' ';
}

/* A tar file of one extended header (typeflag type, its records exactly as given,
 * zero-padded to 512) before the member "m.npy" of 3 bytes, then the end blocks. */
static void write_pax_tar(const char *path, char type, const char *records, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    unsigned char b[512];
    raw_header(b, "././@PaxHeader", n, type);
    fwrite(b, 1, 512, f);
    for (size_t at = 0; at < n; at += 512) {
        memset(b, 0, 512);
        memcpy(b, records + at, n - at < 512 ? n - at : 512);
        fwrite(b, 1, 512, f);
    }
    raw_header(b, "m.npy", 3, '0');
    fwrite(b, 1, 512, f);
    memset(b, 0, 512);
    memcpy(b, "xyz", 3);
    fwrite(b, 1, 512, f);
    memset(b, 0, 512);
    fwrite(b, 1, 512, f);
    fwrite(b, 1, 512, f);
    cr_assert_eq(fclose(f), 0);
}

/* Pax records are parsed within the bytes read: a header of 512 digits (no space, no
 * NUL after them: once read past its buffer) and every other malformed record make
 * the file "not a tar" with one message naming it, as GNU tar and Python refuse them;
 * well-formed records still apply. */
Test(tar, list_refuses_malformed_pax_records_reading_only_their_bytes)
{
    const char *dir = test_tmpdir();
    char path[1024], digits[1024];
    static char got[65536];
    snprintf(path, sizeof path, "%s/p.tar", dir);
    memset(digits, '7', sizeof digits);
    static const struct {
        const char *rec;
        size_t n;
    } bad[] = {
        {NULL, 512},                      /* digits filling the block */
        {NULL, 1024},                     /* ... and two blocks */
        {"13 path=a.npy", 13},            /* no '\n' */
        {"15 path=a.npy\n", 14},          /* LEN past the end */
        {"12 path=a.npy\n", 14},          /* LEN short of its '\n' */
        {" 14 path=a.npy\n", 15},         /* a space before LEN */
        {"+14 path=a.npy\n", 15},         /* a sign */
        {"14path=a.npy\n\n", 14},         /* no space after LEN */
        {"12 pathanpy\n", 12},            /* no '=' */
        {"9 =a.npy\n", 9},                /* an empty key */
        {"11 size=1x\n", 11},             /* a size that is not a number */
        {"29 size=99999999999999999999\n", 29}, /* past 2^64 */
        {"4 k\n", 4},                     /* too short for key=value */
        {"0 \n", 3},
    };
    ws_err e = {{0}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        write_pax_tar(path, 'x', bad[k].rec ? bad[k].rec : digits, bad[k].n);
        got[0] = 0;
        e.msg[0] = 0;
        cr_assert_eq(ws_tar_list(path, collect_names, got, &e), -1, "case %zu listed: %s", k,
                     got);
        cr_expect(strstr(e.msg, path) && strstr(e.msg, "malformed"), "case %zu: %s", k, e.msg);
    }
    /* well-formed: path= and size= apply, other keys are skipped */
    const char *good = "17 path=long.npy\n9 size=3\n21 mtime=1.500000000\n";
    write_pax_tar(path, 'x', good, strlen(good));
    got[0] = 0;
    cr_assert_eq(ws_tar_list(path, collect_names, got, &e), 0, "%s", e.msg);
    cr_assert_str_eq(got, "long.npy 3\n");
}

/* A global extended header ('g', as Python's tarfile writes for pax_headers=) is
 * skipped with its data, and the member after it is listed. */
Test(tar, list_skips_a_global_pax_header_and_its_records)
{
    const char *dir = test_tmpdir();
    char path[1024];
    static char got[65536];
    snprintf(path, sizeof path, "%s/g.tar", dir);
    const char *rec = "17 comment=hello\n";
    write_pax_tar(path, 'g', rec, strlen(rec));
    ws_err e = {{0}};
    got[0] = 0;
    cr_assert_eq(ws_tar_list(path, collect_names, got, &e), 0, "%s", e.msg);
    cr_assert_str_eq(got, "m.npy 3\n");
}

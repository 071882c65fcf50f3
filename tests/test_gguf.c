/* test_gguf.c - the GGUF reader and writer (src/gguf/read.c, src/gguf/write.c).
 *
 * The layout is checked independently of our writer by a file assembled here
 * byte by byte from the specification; the writer is then checked by reading
 * back. Bad files are the writer's output patched at known fields (located
 * through ws_gguf_tensor.info_offset or by searching for a key), and each
 * must fail with -1/NULL and a message that names the file and the problem.
 * The truncation test cuts a good file at every byte up to its data.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "gguf/gguf.h"
#include "helpers.h"

/* --- little tools -------------------------------------------------------- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void b_put(bytes *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void b_le(bytes *b, uint64_t v, int n)
{
    uint8_t x[8];
    for (int i = 0; i < n; i++)
        x[i] = (uint8_t)(v >> 8 * i);
    b_put(b, x, (size_t)n);
}

static void b_str(bytes *b, const char *s)
{
    b_le(b, strlen(s), 8);
    b_put(b, s, strlen(s));
}

static void b_pad(bytes *b, size_t a)
{
    while (b->n % a)
        b_le(b, 0, 1);
}

static void set_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> 8 * i);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Where needle first occurs in p[0..n), or fails the test. */
static size_t find(const uint8_t *p, size_t n, const char *needle)
{
    const uint8_t *hit = memmem(p, n, needle, strlen(needle));
    cr_assert_not_null(hit, "'%s' not in the file", needle);
    return (size_t)(hit - p);
}

/* t's bytes, read through ws_gguf_read into one of four static buffers (the
 * fixtures' tensors are small). */
static const uint8_t *tdata(const ws_gguf *g, const ws_gguf_tensor *t)
{
    static uint8_t buf[4][4096];
    static int k;
    k = (k + 1) % 4;
    ws_err err = {{0}};
    cr_assert_leq(t->nbytes, sizeof buf[k]);
    cr_assert_eq(ws_gguf_read(g, t, 0, buf[k], t->nbytes, &err), 0, "%s", err.msg);
    return buf[k];
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p) != 0)
                rmdir(p);
        }
    closedir(d);
    rmdir(dir);
}

/* Opening path must fail, with the path and needle in the message. */
static void expect_fail(const char *path, const char *needle)
{
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(path, &err);
    cr_assert_null(g, "%s opened; expected an error with '%s'", path, needle);
    cr_assert_not_null(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "expected '%s' in: %s", needle, err.msg);
}

/* The fixture most tests patch: two F32 tensors, three metadata pairs.
 *   a: ne [3, 2], values 0.5 * i      b: ne [4], values -i */
typedef struct {
    char dir[512], path[600];
    uint8_t *p;
    size_t n;
} fixture;

static fixture make_fixture(void)
{
    fixture f;
    snprintf(f.dir, sizeof f.dir, "%s", test_tmpdir());
    snprintf(f.path, sizeof f.path, "%s/good.gguf", f.dir);
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    float a[6], b[4];
    for (int i = 0; i < 6; i++)
        a[i] = 0.5f * (float)i;
    for (int i = 0; i < 4; i++)
        b[i] = -(float)i;
    int rc = ws_gguf_writer_set_str(w, "general.architecture", "whisper", &err) ||
             ws_gguf_writer_set_u32(w, "general.alignment", 32, &err) ||
             ws_gguf_writer_set_str(w, "test.k", "v", &err) ||
             ws_gguf_writer_add_tensor(w, "a", 2, (uint64_t[]){3, 2}, WS_GGML_F32, a, &err) ||
             ws_gguf_writer_add_tensor(w, "b", 1, (uint64_t[]){4}, WS_GGML_F32, b, &err) ||
             ws_gguf_writer_write(w, f.path, &err);
    ws_gguf_writer_free(w);
    cr_assert_eq(rc, 0, "%s", err.msg);
    f.p = read_file(f.path, &f.n);
    cr_assert_not_null(f.p);
    return f;
}

/* Offsets of tensor i's info fields (fixture names are one byte long). */
typedef struct {
    size_t n_dims, ne0, type, offset;
} info_at;

static info_at info_of(const fixture *f, size_t i)
{
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(f->path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const ws_gguf_tensor *t = ws_gguf_tensor_at(g, i);
    size_t at = t->info_offset + 8 + strlen(t->name);
    info_at r = {at, at + 4, at + 4 + 8 * t->n_dims, at + 4 + 8 * t->n_dims + 4};
    ws_gguf_close(g);
    return r;
}

/* Writes f's bytes with one little-endian field replaced, to dir/bad.gguf. */
static const char *patched(const fixture *f, size_t at, uint64_t v, int n)
{
    static char path[640];
    uint8_t *c = malloc(f->n);
    memcpy(c, f->p, f->n);
    set_le(c + at, v, n);
    snprintf(path, sizeof path, "%s/bad.gguf", f->dir);
    write_file(path, c, f->n);
    free(c);
    return path;
}

static void drop_fixture(fixture *f)
{
    free(f->p);
    rm_dir(f->dir);
}

/* --- the layout, checked against bytes written by hand ------------------- */

Test(gguf, reads_a_file_assembled_byte_by_byte)
{
    bytes b = {0};
    b_put(&b, "GGUF", 4);
    b_le(&b, 3, 4);
    b_le(&b, 2, 8); /* tensors */
    b_le(&b, 6, 8); /* metadata pairs */
    b_str(&b, "general.architecture"); b_le(&b, WS_GGUF_STRING, 4); b_str(&b, "whisper");
    b_str(&b, "t.u8"); b_le(&b, WS_GGUF_U8, 4); b_le(&b, 200, 1);
    b_str(&b, "t.words"); b_le(&b, WS_GGUF_ARRAY, 4); b_le(&b, WS_GGUF_STRING, 4); b_le(&b, 2, 8);
    b_str(&b, "a"); b_str(&b, "bc");
    b_str(&b, "t.i16s"); b_le(&b, WS_GGUF_ARRAY, 4); b_le(&b, WS_GGUF_I16, 4); b_le(&b, 3, 8);
    b_le(&b, 1, 2); b_le(&b, 2, 2); b_le(&b, 3, 2);
    b_str(&b, "t.i64"); b_le(&b, WS_GGUF_I64, 4); b_le(&b, (uint64_t)-5, 8);
    b_str(&b, "t.f64"); b_le(&b, WS_GGUF_F64, 4); b_le(&b, 0x3fd0000000000000ull, 8); /* 0.25 */
    /* x: F32 ne [2, 3] at 0 (24 bytes, padded to 32); y: F16 ne [4] at 32 */
    b_str(&b, "x"); b_le(&b, 2, 4); b_le(&b, 2, 8); b_le(&b, 3, 8); b_le(&b, 0, 4); b_le(&b, 0, 8);
    b_str(&b, "y"); b_le(&b, 1, 4); b_le(&b, 4, 8); b_le(&b, 1, 4); b_le(&b, 32, 8);
    b_pad(&b, 32);
    const size_t data_off = b.n;
    for (int i = 0; i < 6; i++) {
        float v = 1.5f * (float)i;
        uint32_t u;
        memcpy(&u, &v, 4);
        b_le(&b, u, 4);
    }
    b_pad(&b, 32);
    const uint16_t halves[4] = {0x3c00, 0xc000, 0x3800, 0x7bff}; /* 1, -2, 0.5, 65504 */
    for (int i = 0; i < 4; i++)
        b_le(&b, halves[i], 2);

    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[600];
    snprintf(path, sizeof path, "%s/hand.gguf", dir);
    write_file(path, b.p, b.n);
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq(ws_gguf_version(g), 3);
    cr_assert_eq(ws_gguf_n_tensors(g), 2);
    cr_assert_eq(ws_gguf_n_kv(g), 6);
    cr_assert_eq(ws_gguf_alignment(g), 32);
    cr_assert_eq(ws_gguf_data_offset(g), data_off);

    const ws_gguf_tensor *x = ws_gguf_find(g, "x");
    cr_assert_not_null(x);
    cr_assert_eq(x, ws_gguf_tensor_at(g, 0));
    cr_assert_eq(x->n_dims, 2);
    cr_assert(x->ne[0] == 2 && x->ne[1] == 3 && x->ne[2] == 1 && x->ne[3] == 1);
    cr_assert_eq(x->type, WS_GGML_F32);
    cr_assert_eq(x->n_elements, 6);
    cr_assert_eq(x->nbytes, 24);
    cr_assert_eq(x->file_offset, data_off);
    for (int i = 0; i < 6; i++) {
        float v;
        memcpy(&v, tdata(g, x) + 4 * i, 4);
        cr_assert_eq(v, 1.5f * (float)i, "x[%d] = %g", i, v);
    }
    const ws_gguf_tensor *y = ws_gguf_find(g, "y");
    cr_assert_not_null(y);
    cr_assert_eq(y->type, WS_GGML_F16);
    cr_assert_eq(y->nbytes, 8);
    cr_assert_eq(y->file_offset, data_off + 32);
    const float want[4] = {1.0f, -2.0f, 0.5f, 65504.0f};
    for (int i = 0; i < 4; i++) {
        const uint8_t *p = tdata(g, y) + 2 * i;
        cr_assert_eq(ws_f16_to_f32((uint16_t)(p[0] | p[1] << 8)), want[i]);
    }
    cr_assert_null(ws_gguf_find(g, "z"));

    char s[16];
    size_t len = 0;
    int64_t iv = 0;
    double fv = 0;
    cr_assert_eq(ws_gguf_get_str(g, "general.architecture", s, sizeof s, &len), 1);
    cr_assert_str_eq(s, "whisper");
    cr_assert_eq(len, 7);
    cr_assert_eq(ws_gguf_get_str(g, "general.architecture", s, 4, &len), 1);
    cr_assert_str_eq(s, "whi", "truncated to cap - 1 bytes");
    cr_assert_eq(ws_gguf_get_int(g, "t.u8", &iv), 1);
    cr_assert_eq(iv, 200);
    cr_assert_eq(ws_gguf_get_int(g, "t.i64", &iv), 1);
    cr_assert_eq(iv, -5);
    cr_assert_eq(ws_gguf_get_float(g, "t.f64", &fv), 1);
    cr_assert_eq(fv, 0.25);
    cr_assert_eq(ws_gguf_get_int(g, "general.architecture", &iv), -1, "a string is not an int");
    cr_assert_eq(ws_gguf_get_str(g, "t.words", s, sizeof s, NULL), -1, "an array is not a string");
    cr_assert_eq(ws_gguf_get_int(g, "absent", &iv), 0);
    ws_gguf_close(g);
    free(b.p);
    rm_dir(dir);
}

Test(gguf, reads_back_what_the_writer_wrote)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[600];
    snprintf(path, sizeof path, "%s/w.gguf", dir);
    float src[8] = {1.0f, -0.1f, 3.14159f, 1e-7f, -65504.0f, 0.0f, 1e30f, -2.5f};
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    cr_assert_eq(ws_gguf_writer_set_str(w, "general.name", "tiny test", &err), 0, "%s", err.msg);
    cr_assert_eq(ws_gguf_writer_set_u32(w, "t.n", 4000000000u, &err), 0);
    cr_assert_eq(ws_gguf_writer_set_f32(w, "t.eps", 1e-5f, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "f32", 2, (uint64_t[]){4, 2}, WS_GGML_F32, src, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "f16", 1, (uint64_t[]){7}, WS_GGML_F16, src, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "bf16", 3, (uint64_t[]){2, 2, 2}, WS_GGML_BF16, src,
                                           &err), 0);
    cr_assert_eq(ws_gguf_writer_write(w, path, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);

    ws_gguf *g = ws_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq(ws_gguf_version(g), 3);
    char s[32];
    int64_t n;
    double e;
    cr_assert_eq(ws_gguf_get_str(g, "general.name", s, sizeof s, NULL), 1);
    cr_assert_str_eq(s, "tiny test");
    cr_assert_eq(ws_gguf_get_int(g, "t.n", &n), 1);
    cr_assert_eq(n, 4000000000);
    cr_assert_eq(ws_gguf_get_float(g, "t.eps", &e), 1);
    cr_assert_eq((float)e, 1e-5f);

    const ws_gguf_tensor *t = ws_gguf_find(g, "f32");
    cr_assert(t && t->n_dims == 2 && t->ne[0] == 4 && t->ne[1] == 2 && t->nbytes == 32);
    cr_assert_eq(memcmp(tdata(g, t), src, 32), 0, "F32 bytes are the source's (little-endian host)");
    cr_assert_eq(t->file_offset % 32, 0);
    t = ws_gguf_find(g, "f16");
    cr_assert(t && t->type == WS_GGML_F16 && t->nbytes == 14);
    for (int i = 0; i < 7; i++) {
        const uint8_t *p = tdata(g, t) + 2 * i;
        cr_assert_eq(p[0] | p[1] << 8, ws_f32_to_f16(src[i]), "f16[%d]", i);
    }
    cr_assert_eq(t->file_offset % 32, 0);
    t = ws_gguf_find(g, "bf16");
    cr_assert(t && t->type == WS_GGML_BF16 && t->n_dims == 3 && t->n_elements == 8);
    for (int i = 0; i < 8; i++) {
        const uint8_t *p = tdata(g, t) + 2 * i;
        cr_assert_eq(p[0] | p[1] << 8, ws_f32_to_bf16(src[i]), "bf16[%d]", i);
    }
    ws_gguf_close(g);
    rm_dir(dir);
}

Test(gguf, honours_general_alignment)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[600];
    snprintf(path, sizeof path, "%s/a64.gguf", dir);
    float src[3] = {1, 2, 3};
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    cr_assert_eq(ws_gguf_writer_set_u32(w, "general.alignment", 64, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "p", 1, (uint64_t[]){3}, WS_GGML_F32, src, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "q", 1, (uint64_t[]){3}, WS_GGML_F32, src, &err), 0);
    cr_assert_eq(ws_gguf_writer_write(w, path, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);
    ws_gguf *g = ws_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq(ws_gguf_alignment(g), 64);
    cr_assert_eq(ws_gguf_data_offset(g) % 64, 0);
    const ws_gguf_tensor *q = ws_gguf_find(g, "q");
    cr_assert_eq(q->file_offset, ws_gguf_data_offset(g) + 64, "q follows p's 12 bytes padded to 64");
    cr_assert_eq(memcmp(tdata(g, q), src, 12), 0);
    ws_gguf_close(g);
    rm_dir(dir);
}

Test(gguf, accepts_version_2)
{
    fixture f = make_fixture();
    const char *p = patched(&f, 4, 2, 4);
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(p, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq(ws_gguf_version(g), 2);
    cr_assert_eq(ws_gguf_find(g, "b")->n_elements, 4);
    ws_gguf_close(g);
    drop_fixture(&f);
}

Test(gguf, lists_tensors_of_unknown_type_without_their_data)
{
    fixture f = make_fixture();
    info_at b = info_of(&f, 1);
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(patched(&f, b.type, 200, 4), &err);
    cr_assert_not_null(g, "%s", err.msg);
    const ws_gguf_tensor *t = ws_gguf_find(g, "b");
    cr_assert_eq(t->type, 200);
    cr_assert_eq(t->readable, 0);
    cr_assert_eq(t->nbytes, 0);
    uint8_t b1;
    cr_assert_eq(ws_gguf_read(g, t, 0, &b1, 1, &err), -1, "no data to read");
    cr_assert_not_null(strstr(err.msg, "its data cannot be read"), "%s", err.msg);
    ws_gguf_close(g);
    drop_fixture(&f);
}

/* --- bad files ----------------------------------------------------------- */

Test(gguf, rejects_empty_file)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[600];
    snprintf(path, sizeof path, "%s/empty.gguf", dir);
    write_file(path, "", 0);
    expect_fail(path, "empty file");
    rm_dir(dir);
}

Test(gguf, rejects_missing_file_and_directory)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[600];
    snprintf(path, sizeof path, "%s/nope.gguf", dir);
    expect_fail(path, "cannot open: No such file");
    expect_fail(dir, "is a directory");
    rm_dir(dir);
}

/* open() of a FIFO waits for a writer; a model given as one must fail at
 * once instead (the timeout turns a hang into a failure). */
Test(gguf, rejects_a_fifo_without_waiting_for_a_writer, .timeout = 10)
{
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(path, sizeof path, "%s/model.gguf", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    expect_fail(path, "not a regular file (a FIFO)");
    expect_fail("/dev/null", "not a regular file (a character device)");
    rm_dir(dir);
}

/* A file cut short after it was opened (rewritten in place, truncated by
 * another program) is an error for that file when its data is read. With a
 * mapping, touching the lost pages raised SIGBUS and killed the process. */
Test(gguf, a_file_that_shrinks_after_open_fails_to_read_with_a_message)
{
    fixture f = make_fixture();
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(f.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const ws_gguf_tensor *a = ws_gguf_find(g, "a"), *b = ws_gguf_find(g, "b");
    cr_assert_eq(truncate(f.path, (off_t)ws_gguf_data_offset(g)), 0);
    uint8_t buf[64];
    cr_assert_eq(ws_gguf_read(g, b, 0, buf, b->nbytes, &err), -1, "read past the new end");
    char want[800];
    snprintf(want, sizeof want, "%s: the file changed while being read (tensor 'b'): it shrank "
             "from %zu to %zu bytes", f.path, f.n, ws_gguf_data_offset(g));
    cr_assert_str_eq(err.msg, want);
    /* what still lies in the file is not trusted either: the file is not the one validated */
    cr_assert_eq(ws_gguf_read(g, a, 0, buf, a->nbytes, &err), -1);
    cr_assert_not_null(strstr(err.msg, "it shrank"), "%s", err.msg);
    ws_gguf_close(g);
    drop_fixture(&f);
}

/* The same file rewritten in place with its size unchanged: the
 * modification time tells. */
Test(gguf, a_file_modified_after_open_fails_to_read)
{
    fixture f = make_fixture();
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(f.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    struct timespec later[2] = {{0, UTIME_OMIT}, {1234567890, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, f.path, later, 0), 0);
    uint8_t buf[64];
    const ws_gguf_tensor *a = ws_gguf_find(g, "a");
    cr_assert_eq(ws_gguf_read(g, a, 0, buf, a->nbytes, &err), -1);
    cr_assert_not_null(strstr(err.msg, "the file changed while being read (tensor 'a'): "
                                       "modified after it was opened"), "%s", err.msg);
    ws_gguf_close(g);
    drop_fixture(&f);
}

Test(gguf, read_stays_inside_the_tensor)
{
    fixture f = make_fixture();
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(f.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const ws_gguf_tensor *a = ws_gguf_find(g, "a");
    uint8_t buf[64];
    cr_assert_eq(ws_gguf_read(g, a, 20, buf, 4, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_gguf_read(g, a, 20, buf, 5, &err), -1);
    cr_assert_not_null(strstr(err.msg, "outside its 24 bytes"), "%s", err.msg);
    ws_gguf_close(g);
    drop_fixture(&f);
}

Test(gguf, rejects_wrong_magic_showing_it)
{
    fixture f = make_fixture();
    expect_fail(patched(&f, 0, 0x4c4d4747, 4), "not a GGUF file: starts with 'GGML' (47 47 4d 4c)");
    expect_fail(patched(&f, 0, 0x46470a00, 4), "starts with '..GF' (00 0a 47 46)");
    drop_fixture(&f);
}

Test(gguf, rejects_version_1)
{
    fixture f = make_fixture();
    expect_fail(patched(&f, 4, 1, 4), "GGUF version 1 (32-bit counts) is not supported");
    drop_fixture(&f);
}

Test(gguf, rejects_version_99)
{
    fixture f = make_fixture();
    expect_fail(patched(&f, 4, 99, 4), "GGUF version 99 is not supported (2 or 3)");
    expect_fail(patched(&f, 4, 0, 4), "GGUF version 0 is not supported");
    expect_fail(patched(&f, 4, 0x100, 4), "GGUF version 256 is not supported");
    drop_fixture(&f);
}

Test(gguf, rejects_byte_swapped_version_as_big_endian)
{
    fixture f = make_fixture();
    expect_fail(patched(&f, 4, 0x03000000, 4), "big-endian");
    drop_fixture(&f);
}

/* Every prefix up to the data section, and a sample inside the data, must
 * fail cleanly (run under ASan by `make asan`). */
Test(gguf, rejects_every_truncation)
{
    fixture f = make_fixture();
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(f.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const size_t data_off = ws_gguf_data_offset(g);
    const ws_gguf_tensor *b = ws_gguf_find(g, "b");
    const size_t data_end = b->file_offset + b->nbytes; /* the padding after it is optional */
    ws_gguf_close(g);
    cr_assert_lt(data_end, f.n);
    char path[640];
    snprintf(path, sizeof path, "%s/cut.gguf", f.dir);
    size_t tried = 0;
    for (size_t k = 0; k < data_end; k += k < data_off ? 1 : 5) {
        write_file(path, f.p, k);
        g = ws_gguf_open(path, &err);
        cr_assert_null(g, "a file cut at %zu of %zu bytes opened", k, f.n);
        cr_assert_not_null(strstr(err.msg, path), "cut at %zu: %s", k, err.msg);
        cr_assert(strstr(err.msg, "truncated") || strstr(err.msg, "runs past the end") ||
                      strstr(err.msg, "empty file") || strstr(err.msg, "not a GGUF file"),
                  "cut at %zu: %s", k, err.msg);
        tried++;
    }
    cr_assert_gt(tried, data_off);
    /* a cut is reported where it happens: the third key, "test.k", starts
     * at 24 + (8 + 20 + 4 + 8 + 7) + (8 + 17 + 4 + 4) = 104; its type at 118 */
    write_file(path, f.p, 120);
    expect_fail(path, "truncated at offset 118: value type needs 4 bytes, 2 left");
    drop_fixture(&f);
}

Test(gguf, rejects_tensor_outside_file)
{
    fixture f = make_fixture();
    info_at b = info_of(&f, 1);
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(f.path, &err);
    size_t data_off = ws_gguf_data_offset(g);
    ws_gguf_close(g);
    char want[200];
    snprintf(want, sizeof want, "tensor 'b': data [offset %zu, 16 bytes) runs past the end of the "
             "file (%zu bytes)", data_off + 4096, f.n);
    expect_fail(patched(&f, b.offset, 4096, 8), want);
    /* one aligned step too far: the last tensor would end 16 bytes late */
    expect_fail(patched(&f, b.offset, f.n - data_off, 8), "runs past the end of the file");
    expect_fail(patched(&f, b.offset, UINT64_MAX - 31, 8), "tensor 'b': data offset");
    drop_fixture(&f);
}

Test(gguf, rejects_offset_not_a_multiple_of_the_alignment)
{
    fixture f = make_fixture();
    info_at b = info_of(&f, 1);
    expect_fail(patched(&f, b.offset, 36, 8), "tensor 'b': offset 36 is not a multiple of the alignment 32");
    drop_fixture(&f);
}

Test(gguf, rejects_five_dimensions)
{
    fixture f = make_fixture();
    info_at a = info_of(&f, 0);
    expect_fail(patched(&f, a.n_dims, 5, 4), "tensor 'a': n_dims 5");
    drop_fixture(&f);
}

Test(gguf, rejects_element_count_that_overflows_size_t)
{
    fixture f = make_fixture();
    info_at a = info_of(&f, 0);
    uint8_t *c = malloc(f.n);
    memcpy(c, f.p, f.n);
    set_le(c + a.ne0, 1ull << 40, 8);
    set_le(c + a.ne0 + 8, 1ull << 40, 8);
    char path[640];
    snprintf(path, sizeof path, "%s/big.gguf", f.dir);
    write_file(path, c, f.n);
    expect_fail(path, "tensor 'a': element count of ne=[1099511627776,1099511627776] overflows size_t");
    /* fits size_t, but not in bytes of F32 */
    set_le(c + a.ne0, 1ull << 62, 8);
    set_le(c + a.ne0 + 8, 1, 8);
    write_file(path, c, f.n);
    expect_fail(path, "overflow size_t");
    free(c);
    expect_fail(patched(&f, a.ne0, 1ull << 63, 8), "negative as int64");
    drop_fixture(&f);
}

Test(gguf, rejects_huge_string_length)
{
    fixture f = make_fixture();
    info_at a = info_of(&f, 0);
    size_t name_at = a.n_dims - 9; /* u64 length, then the one-byte name */
    expect_fail(patched(&f, name_at, 1ull << 40, 8), "length 1099511627776 exceeds the limit 65535");
    /* within the limit, past the end of the file */
    expect_fail(patched(&f, name_at, 60000, 8), "truncated");
    /* a key */
    expect_fail(patched(&f, 24, UINT64_MAX, 8), "key of metadata pair 0 at offset 24: length");
    /* a string value */
    size_t v = find(f.p, f.n, "whisper") - 8;
    expect_fail(patched(&f, v, 1ull << 30, 8),
                "string value of 'general.architecture' at offset 56: length 1073741824 exceeds "
                "the limit 16777216");
    drop_fixture(&f);
}

Test(gguf, rejects_huge_counts)
{
    fixture f = make_fixture();
    expect_fail(patched(&f, 16, 1ull << 40, 8), "metadata count 1099511627776 at offset 16 exceeds the limit 1048576");
    expect_fail(patched(&f, 8, UINT64_MAX, 8), "tensor count 18446744073709551615 at offset 8 exceeds");
    /* under the limit, but more than the file could hold */
    expect_fail(patched(&f, 16, 1000000, 8), "1000000 metadata pairs and 2 tensors cannot fit");
    drop_fixture(&f);
}

Test(gguf, rejects_alignment_not_a_power_of_two)
{
    fixture f = make_fixture();
    size_t v = find(f.p, f.n, "general.alignment") + strlen("general.alignment") + 4;
    expect_fail(patched(&f, v, 48, 4), "general.alignment 48 at offset");
    expect_fail(patched(&f, v, 48, 4), "is not a power of two");
    expect_fail(patched(&f, v, 0, 4), "general.alignment 0 at offset");
    expect_fail(patched(&f, v - 4, WS_GGUF_I32, 4), "general.alignment at offset");
    expect_fail(patched(&f, v - 4, WS_GGUF_I32, 4), "expected u32");
    drop_fixture(&f);
}

Test(gguf, rejects_duplicate_tensor_names)
{
    fixture f = make_fixture();
    info_at b = info_of(&f, 1);
    expect_fail(patched(&f, b.n_dims - 1, 'a', 1), "tensor name 'a' appears twice");
    drop_fixture(&f);
}

Test(gguf, rejects_duplicate_keys)
{
    fixture f = make_fixture();
    bytes b = {0};
    b_put(&b, "GGUF", 4);
    b_le(&b, 3, 4);
    b_le(&b, 0, 8);
    b_le(&b, 2, 8);
    b_str(&b, "dup.key"); b_le(&b, WS_GGUF_U8, 4); b_le(&b, 1, 1);
    b_str(&b, "dup.key"); b_le(&b, WS_GGUF_U8, 4); b_le(&b, 2, 1);
    char path[640];
    snprintf(path, sizeof path, "%s/dupkey.gguf", f.dir);
    write_file(path, b.p, b.n);
    expect_fail(path, "metadata key 'dup.key' appears twice");
    free(b.p);
    drop_fixture(&f);
}

Test(gguf, rejects_arrays_of_arrays_and_unknown_value_types)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[600];
    snprintf(path, sizeof path, "%s/nested.gguf", dir);
    bytes b = {0};
    b_put(&b, "GGUF", 4);
    b_le(&b, 3, 4);
    b_le(&b, 0, 8);
    b_le(&b, 1, 8);
    b_str(&b, "t.nested"); b_le(&b, WS_GGUF_ARRAY, 4); b_le(&b, WS_GGUF_ARRAY, 4); b_le(&b, 1, 8);
    b_le(&b, WS_GGUF_U8, 4); b_le(&b, 1, 8); b_le(&b, 7, 1);
    write_file(path, b.p, b.n);
    /* header 24, key length 8, key 8: the value type is at 40, the value at 44 */
    expect_fail(path, "key 't.nested' at offset 44: arrays of arrays are not supported");
    set_le(b.p + 40, 13, 4);
    write_file(path, b.p, b.n);
    expect_fail(path, "key 't.nested' at offset 40: unknown value type 13");
    free(b.p);
    rm_dir(dir);
}

Test(gguf, rejects_quantized_rows_that_are_not_whole_blocks)
{
    fixture f = make_fixture();
    info_at a = info_of(&f, 0);
    expect_fail(patched(&f, a.type, WS_GGML_Q8_0, 4),
                "tensor 'a': 6 elements of type Q8_0 are not whole blocks of 32");
    drop_fixture(&f);
}

Test(gguf, rejects_nul_in_a_tensor_name)
{
    fixture f = make_fixture();
    info_at a = info_of(&f, 0);
    expect_fail(patched(&f, a.n_dims - 1, 0, 1), "name contains a NUL byte");
    drop_fixture(&f);
}

/* --- the writer ---------------------------------------------------------- */

Test(gguf, writer_refuses_duplicates_bad_alignment_and_wrong_sizes)
{
    ws_err err = {{0}};
    float x[4] = {0};
    uint8_t q[68] = {0};
    ws_gguf_writer *w = ws_gguf_writer_new();
    cr_assert_eq(ws_gguf_writer_set_u32(w, "k", 1, &err), 0);
    cr_assert_eq(ws_gguf_writer_set_str(w, "k", "again", &err), -1);
    cr_assert_str_eq(err.msg, "metadata key 'k' set twice");
    cr_assert_eq(ws_gguf_writer_set_u32(w, "general.alignment", 24, &err), -1);
    cr_assert_not_null(strstr(err.msg, "power of two"));
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "t", 1, (uint64_t[]){4}, WS_GGML_F32, x, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "t", 1, (uint64_t[]){4}, WS_GGML_F32, x, &err), -1);
    cr_assert_str_eq(err.msg, "tensor 't' added twice");
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "u", 5, (uint64_t[]){1, 1, 1, 1, 1}, WS_GGML_F32, x,
                                           &err), -1);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "u", 1, (uint64_t[]){64}, WS_GGML_Q8_0, x, &err), -1);
    cr_assert_str_eq(err.msg, "u: cannot convert float32 to type Q8_0");
    cr_assert_eq(ws_gguf_writer_add_raw(w, "u", 1, (uint64_t[]){64}, WS_GGML_Q8_0, q, 60, &err), -1);
    cr_assert_str_eq(err.msg, "u: 60 bytes given, the shape and type need 68");
    cr_assert_eq(ws_gguf_writer_add_raw(w, "u", 1, (uint64_t[]){64}, WS_GGML_Q8_0, q, 68, &err), 0);
    ws_gguf_writer_free(w);
}

Test(gguf, writer_leaves_no_file_behind_on_failure)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char sub[600], path[640];
    snprintf(sub, sizeof sub, "%s/taken", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    float x[2] = {1, 2};
    ws_gguf_writer_add_tensor(w, "x", 1, (uint64_t[]){2}, WS_GGML_F32, x, &err);
    /* the target is a directory; the target's directory does not exist */
    cr_assert_eq(ws_gguf_writer_write(w, sub, &err), -1);
    cr_assert_not_null(strstr(err.msg, "taken: is a directory"), "%s", err.msg);
    snprintf(path, sizeof path, "%s/no/such/dir.gguf", dir);
    cr_assert_eq(ws_gguf_writer_write(w, path, &err), -1);
    cr_assert_not_null(strstr(err.msg, "cannot open its directory"), "%s", err.msg);
    /* nothing but the directory is left */
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            cr_assert_str_eq(e->d_name, "taken");
            n++;
        }
    closedir(d);
    cr_assert_eq(n, 1);
    /* and a good write replaces an existing file whole */
    snprintf(path, sizeof path, "%s/ok.gguf", dir);
    write_file(path, "old", 3);
    cr_assert_eq(ws_gguf_writer_write(w, path, &err), 0, "%s", err.msg);
    ws_gguf *g = ws_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    ws_gguf_close(g);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644);
    ws_gguf_writer_free(w);
    rm_dir(sub);
    rm_dir(dir);
}

Test(gguf, type_table_names_and_sizes)
{
    cr_assert_str_eq(ws_ggml_type_name(0), "F32");
    cr_assert_str_eq(ws_ggml_type_name(8), "Q8_0");
    cr_assert_str_eq(ws_ggml_type_name(30), "BF16");
    cr_assert_null(ws_ggml_type_name(4), "Q4_2 was retired");
    cr_assert_null(ws_ggml_type_name(1000));
    size_t n = 0;
    ws_err err = {{0}};
    cr_assert_eq(ws_ggml_nbytes(WS_GGML_Q8_0, 64, &n, &err), 0);
    cr_assert_eq(n, 68);
    cr_assert_eq(ws_ggml_nbytes(WS_GGML_BF16, 5, &n, &err), 0);
    cr_assert_eq(n, 10);
    cr_assert_eq(ws_ggml_nbytes(WS_GGML_Q8_0, 33, &n, &err), -1);
    cr_assert_eq(ws_ggml_nbytes(16, 256, &n, &err), -1);
    cr_assert_str_eq(err.msg, "size of tensor type IQ2_XXS is not known here");
}

Test(gguf, close_and_free_accept_null)
{
    ws_gguf_close(NULL);
    ws_gguf_writer_free(NULL);
}

/* A deterministic fuzz: random bytes of a good model file replaced by random
 * values (or by bytes that make big numbers), many times. Each open either
 * succeeds with every tensor inside the file, or fails naming the file; no
 * crash, no read out of bounds (ASan). */
Test(gguf, survives_random_corruption)
{
    char dir[512], good[600], bad[640];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(good, sizeof good, "%s/good.gguf", dir);
    snprintf(bad, sizeof bad, "%s/fuzz.gguf", dir);
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    float x[48];
    for (int i = 0; i < 48; i++)
        x[i] = (float)i;
    ws_gguf_writer_set_str(w, "general.name", "fuzz", &err);
    ws_gguf_writer_set_u32(w, "general.alignment", 16, &err);
    ws_gguf_writer_add_tensor(w, "w", 3, (uint64_t[]){3, 4, 2}, WS_GGML_F16, x, &err);
    ws_gguf_writer_add_tensor(w, "b", 1, (uint64_t[]){24}, WS_GGML_F32, x, &err);
    cr_assert_eq(ws_gguf_writer_write(w, good, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);
    size_t n;
    uint8_t *src = read_file(good, &n);
    uint8_t *buf = malloc(n);
    ws_rng r = {12345};
    int opened = 0;
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, src, n);
        int flips = 1 + (int)(ws_rng_next(&r) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(ws_rng_next(&r) % n);
            uint64_t v = ws_rng_next(&r);
            buf[at] = (v & 0x300) == 0 ? 0xff : (uint8_t)v;
        }
        size_t len = ws_rng_next(&r) % 8 == 0 ? (size_t)(ws_rng_next(&r) % n) : n;
        write_file(bad, buf, len);
        ws_gguf *g = ws_gguf_open(bad, &err);
        if (g) {
            opened++;
            for (size_t i = 0; i < ws_gguf_n_tensors(g); i++) {
                const ws_gguf_tensor *t = ws_gguf_tensor_at(g, i);
                cr_assert_leq(t->file_offset + t->nbytes, len, "iteration %d", iter);
                if (!t->readable)
                    continue;
                uint8_t *d = malloc(t->nbytes ? t->nbytes : 1); /* every byte can be read */
                cr_assert_eq(ws_gguf_read(g, t, 0, d, t->nbytes, &err), 0, "%d: %s", iter, err.msg);
                free(d);
            }
            ws_gguf_close(g);
        } else {
            cr_assert_not_null(strstr(err.msg, bad), "iteration %d: %s", iter, err.msg);
        }
    }
    cr_assert_gt(opened, 0, "some corruptions (in data or padding) leave a valid file");
    cr_assert_lt(opened, 3000);
    free(src);
    free(buf);
    rm_dir(dir);
}

/* test_convert.c - whisper-stem-convert (scripts/convert.c, src/convert/).
 *
 * Fixtures are assembled here byte by byte from each published layout, not
 * by our writer: safetensors (huggingface/safetensors README, "Format"), a
 * sharded index (model.safetensors.index.json), and whisper.cpp's ggml .bin
 * (models/convert-pt-to-ggml.py). Tiny shapes: n_mels 4, d 6, n_pos 8. Each
 * is converted by running the tool, then read back with ws_gguf_open and
 * compared tensor by tensor: bytes equal where no type change was asked,
 * ws_f32_to_f16 / ws_f32_to_bf16 of the source values where it was. Bad
 * inputs (cut at several points, mislabelled) must exit 1 with one line that
 * names the file and the problem, and leave no output file behind.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "convert/ckpt.h"
#include "common.h"
#include "gguf/gguf.h"
#include "helpers.h"
#include "whisper/model.h"
#include "whisper/tensors.h"

enum { N_MELS = 4, D = 6, N_POS = 8, N_FFT = 5 };

/* --- each test's directory, removed after it ------------------------------ */

static char g_dir[1024];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    return remove(path);
}

static void remove_dir(void)
{
    if (g_dir[0])
        nftw(g_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(convert, .fini = remove_dir);

static const char *tmpdir(void)
{
    snprintf(g_dir, sizeof g_dir, "%s", test_tmpdir());
    return g_dir;
}

/* --- bytes ---------------------------------------------------------------- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} bytes;

static void b_put(bytes *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        cr_assert_not_null(b->p);
    }
    if (n)
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

static void b_f32(bytes *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    b_le(b, u, 4);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* --- the stem a fixture holds --------------------------------------------- */

/* Values that F16 and BF16 cannot all hold exactly, so rounding shows. */
static float val(int salt, size_t i)
{
    return (float)((int)((i * 7919u + (unsigned)salt * 104729u) % 2001u) - 1000) / 337.0f;
}

typedef struct {
    const char *name;     /* as the source names it */
    const char *out;      /* as the converted file must name it */
    uint32_t type;        /* ggml type of the source data */
    uint32_t n_dims;      /* source shape, ne innermost first */
    uint64_t ne[4];
    uint32_t out_n_dims;  /* shape in the converted file */
    uint64_t out_ne[4];
    uint8_t data[1024];   /* little-endian source bytes */
    size_t nbytes, n;
} src_tensor;

static void fill(src_tensor *t, int salt)
{
    t->n = 1;
    for (uint32_t j = 0; j < t->n_dims; j++)
        t->n *= t->ne[j];
    size_t es = t->type == WS_GGML_F32 ? 4 : 2;
    t->nbytes = t->n * es;
    cr_assert_leq(t->nbytes, sizeof t->data);
    for (size_t i = 0; i < t->n; i++) {
        float f = val(salt, i);
        uint32_t u;
        if (t->type == WS_GGML_F32)
            memcpy(&u, &f, 4);
        else
            u = t->type == WS_GGML_F16 ? ws_f32_to_f16(f) : ws_f32_to_bf16(f);
        for (size_t k = 0; k < es; k++)
            t->data[i * es + k] = (uint8_t)(u >> 8 * k);
    }
}

static float src_value(const src_tensor *t, size_t i)
{
    if (t->type == WS_GGML_F32) {
        uint32_t u = (uint32_t)t->data[4 * i] | (uint32_t)t->data[4 * i + 1] << 8 |
                     (uint32_t)t->data[4 * i + 2] << 16 | (uint32_t)t->data[4 * i + 3] << 24;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    uint16_t h = (uint16_t)(t->data[2 * i] | t->data[2 * i + 1] << 8);
    return t->type == WS_GGML_F16 ? ws_f16_to_f32(h) : ws_bf16_to_f32(h);
}

enum { T_C1W, T_C1B, T_C2W, T_C2B, T_POS, N_STEM };

/* The stem under Hugging Face's names (hf) or openai's, with mixed types:
 * conv1.weight F16, conv2.weight BF16, biases and positions F32. The biases
 * are [d] (or [d, 1], whisper.cpp's way, when bias_2d). */
static void make_stem(src_tensor s[N_STEM], int hf, int bias_2d, uint32_t w_type2)
{
    memset(s, 0, N_STEM * sizeof *s);
    const char *pre = hf ? "model." : "";
    static char names[N_STEM][64];
    snprintf(names[T_C1W], 64, "%sencoder.conv1.weight", pre);
    snprintf(names[T_C1B], 64, "%sencoder.conv1.bias", pre);
    snprintf(names[T_C2W], 64, "%sencoder.conv2.weight", pre);
    snprintf(names[T_C2B], 64, "%sencoder.conv2.bias", pre);
    snprintf(names[T_POS], 64, "%s", hf ? "model.encoder.embed_positions.weight"
                                        : "encoder.positional_embedding");
    const char *outs[N_STEM] = {"encoder.conv1.weight", "encoder.conv1.bias",
                                "encoder.conv2.weight", "encoder.conv2.bias",
                                "encoder.positional_embedding"};
    uint32_t types[N_STEM] = {WS_GGML_F16, WS_GGML_F32, w_type2, WS_GGML_F32, WS_GGML_F32};
    for (int r = 0; r < N_STEM; r++) {
        s[r].name = names[r];
        s[r].out = outs[r];
        s[r].type = types[r];
    }
    s[T_C1W].n_dims = 3; memcpy(s[T_C1W].ne, (uint64_t[]){3, N_MELS, D}, 24);
    s[T_C2W].n_dims = 3; memcpy(s[T_C2W].ne, (uint64_t[]){3, D, D}, 24);
    s[T_POS].n_dims = 2; memcpy(s[T_POS].ne, (uint64_t[]){D, N_POS}, 16);
    for (int r = T_C1B; r <= T_C2B; r += 2) {
        s[r].n_dims = bias_2d ? 2 : 1;
        memcpy(s[r].ne, bias_2d ? (uint64_t[]){1, D} : (uint64_t[]){D, 1}, 16);
    }
    for (int r = 0; r < N_STEM; r++) {
        s[r].out_n_dims = r == T_C1B || r == T_C2B ? 1 : s[r].n_dims;
        memcpy(s[r].out_ne, s[r].ne, sizeof s[r].ne);
        if (r == T_C1B || r == T_C2B)
            s[r].out_ne[0] = D;
        fill(&s[r], r + 1);
    }
}

/* --- safetensors, by hand ------------------------------------------------- */

static const char *st_dtype(uint32_t type)
{
    return type == WS_GGML_F32 ? "F32" : type == WS_GGML_F16 ? "F16" : "BF16";
}

/* A safetensors file of n tensors (plus an unrelated I64 tensor when extra),
 * header padded with spaces to a multiple of 8 as the reference writer does. */
static bytes st_build(const src_tensor *t, int n, int extra)
{
    char hdr[8192];
    size_t k = 0, off = 0;
    k += (size_t)snprintf(hdr + k, sizeof hdr - k, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n; i++) {
        k += (size_t)snprintf(hdr + k, sizeof hdr - k, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                              t[i].name, st_dtype(t[i].type));
        for (uint32_t j = 0; j < t[i].n_dims; j++) /* PyTorch order: reverse ne */
            k += (size_t)snprintf(hdr + k, sizeof hdr - k, "%s%llu", j ? "," : "",
                                  (unsigned long long)t[i].ne[t[i].n_dims - 1 - j]);
        k += (size_t)snprintf(hdr + k, sizeof hdr - k, "],\"data_offsets\":[%zu,%zu]}", off,
                              off + t[i].nbytes);
        off += t[i].nbytes;
    }
    if (extra)
        k += (size_t)snprintf(hdr + k, sizeof hdr - k, ",\"model.decoder.step\":{\"dtype\":"
                              "\"I64\",\"shape\":[2],\"data_offsets\":[%zu,%zu]}", off, off + 16);
    k += (size_t)snprintf(hdr + k, sizeof hdr - k, "}");
    while ((8 + k) % 8)
        hdr[k++] = ' ';
    bytes b = {0};
    b_le(&b, k, 8);
    b_put(&b, hdr, k);
    for (int i = 0; i < n; i++)
        b_put(&b, t[i].data, t[i].nbytes);
    if (extra) {
        b_le(&b, 7, 8);
        b_le(&b, (uint64_t)-1, 8);
    }
    return b;
}

/* --- ggml .bin, by hand --------------------------------------------------- */

static void ggml_tensor(bytes *b, const char *name, uint32_t type, uint32_t n_dims,
                        const uint64_t *ne, const void *data, size_t nbytes)
{
    b_le(b, n_dims, 4);
    b_le(b, strlen(name), 4);
    b_le(b, type, 4);
    for (uint32_t j = 0; j < n_dims; j++)
        b_le(b, ne[j], 4);
    b_put(b, name, strlen(name));
    b_put(b, data, nbytes);
}

/* whisper.cpp's layout: hparams, mel filters [N_MELS][N_FFT], 3 tokens, then
 * the tensors as convert-pt-to-ggml.py writes them (biases ne [1, d]) and a
 * Q8_0 tensor (3 blocks of 34 bytes) to be skipped. n_audio_state is the
 * header's claim (D unless a test mislabels it). */
static bytes ggml_build(const src_tensor s[N_STEM], int n_audio_state)
{
    bytes b = {0};
    b_le(&b, 0x67676d6c, 4);
    const int hp[11] = {3, N_POS, n_audio_state, 1, 0, 4, D, 1, 0, N_MELS, 1};
    for (int i = 0; i < 11; i++)
        b_le(&b, (uint64_t)hp[i], 4);
    b_le(&b, N_MELS, 4);
    b_le(&b, N_FFT, 4);
    for (int i = 0; i < N_MELS * N_FFT; i++)
        b_f32(&b, val(9, (size_t)i));
    b_le(&b, 3, 4);
    const char *tok[3] = {"a", "", "<|endoftext|>"};
    for (int i = 0; i < 3; i++) {
        b_le(&b, strlen(tok[i]), 4);
        b_put(&b, tok[i], strlen(tok[i]));
    }
    const int order[N_STEM] = {T_POS, T_C1W, T_C1B, T_C2W, T_C2B};
    for (int k = 0; k < N_STEM; k++) {
        const src_tensor *t = &s[order[k]];
        ggml_tensor(&b, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    uint8_t q[3 * 34];
    for (size_t i = 0; i < sizeof q; i++)
        q[i] = (uint8_t)(i * 13);
    ggml_tensor(&b, "decoder.token_embedding.weight", WS_GGML_Q8_0, 2, (uint64_t[]){32, 3}, q,
                sizeof q);
    return b;
}

/* --- running the tool and checking what it wrote ------------------------- */

static int convert(const char *in, const char *out, const char *args, char *e, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' -o '%s' %s", ws_convert(), in, out, args ? args : "");
    return run_cmd(cmd, e, cap);
}

static void convert_ok(const char *in, const char *out, const char *args)
{
    char e[2048];
    int rc = convert(in, out, args, e, sizeof e);
    cr_assert_eq(rc, 0, "convert %s %s: exit %d: %s", in, args ? args : "", rc, e);
}

/* No temporary file of the writer is left in dir. */
static void assert_no_leftovers(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        cr_assert_null(strstr(e->d_name, ".tmp"), "left behind: %s/%s", dir, e->d_name);
    closedir(d);
}

/* Converting `in` must exit 1 with one line naming it and holding needle, and
 * write nothing. */
static void expect_fail(const char *in, const char *args, const char *needle)
{
    char out[2100], e[2048], dir[2100];
    snprintf(out, sizeof out, "%s.out.gguf", in);
    int rc = convert(in, out, args, e, sizeof e);
    cr_assert_eq(rc, 1, "%s: exit %d, expected 1 (stderr: %s)", in, rc, e);
    size_t len = strlen(e);
    cr_assert(len > 0 && e[len - 1] == '\n' && strchr(e, '\n') == e + len - 1,
              "%s: expected one line, got: %s", in, e);
    cr_assert_not_null(strstr(e, in), "message does not name the file: %s", e);
    cr_assert_not_null(strstr(e, needle), "expected '%s' in: %s", needle, e);
    cr_assert(!file_exists(out), "%s written despite the error", out);
    snprintf(dir, sizeof dir, "%s", in);
    *strrchr(dir, '/') = 0;
    assert_no_leftovers(dir);
}

static void expect_bytes(const ws_gguf *g, const char *name, uint32_t type, uint32_t n_dims,
                         const uint64_t *ne, const void *data, size_t nbytes)
{
    const ws_gguf_tensor *t = ws_gguf_find(g, name);
    cr_assert_not_null(t, "no tensor %s", name);
    cr_assert_eq(t->type, type, "%s: type %u, expected %u", name, t->type, type);
    cr_assert_eq(t->n_dims, n_dims, "%s: %u dims, expected %u", name, t->n_dims, n_dims);
    for (uint32_t j = 0; j < n_dims; j++)
        cr_assert_eq(t->ne[j], ne[j], "%s: ne[%u] = %llu, expected %llu", name, j,
                     (unsigned long long)t->ne[j], (unsigned long long)ne[j]);
    cr_assert_eq(t->nbytes, nbytes, "%s: %zu bytes, expected %zu", name, t->nbytes, nbytes);
    uint8_t *got = malloc(nbytes ? nbytes : 1);
    ws_err err = {{0}};
    cr_assert_eq(ws_gguf_read(g, t, 0, got, nbytes, &err), 0, "%s", err.msg);
    for (size_t i = 0; i < nbytes; i++)
        cr_assert_eq(got[i], ((const uint8_t *)data)[i], "%s: byte %zu differs", name, i);
    free(got);
}

/* The stem, with the source bytes (keep) or the source values in `to`. */
static void expect_stem(const ws_gguf *g, const src_tensor s[N_STEM], int with_pos, int to)
{
    for (int r = 0; r < N_STEM; r++) {
        if (r == T_POS && !with_pos) {
            cr_assert_null(ws_gguf_find(g, s[r].out));
            continue;
        }
        if (to < 0 || (uint32_t)to == s[r].type) {
            expect_bytes(g, s[r].out, s[r].type, s[r].out_n_dims, s[r].out_ne, s[r].data,
                         s[r].nbytes);
            continue;
        }
        size_t es = to == WS_GGML_F32 ? 4 : 2;
        uint8_t want[2048];
        for (size_t i = 0; i < s[r].n; i++) {
            float f = src_value(&s[r], i);
            uint32_t u;
            if (to == WS_GGML_F32)
                memcpy(&u, &f, 4);
            else
                u = to == WS_GGML_F16 ? ws_f32_to_f16(f) : ws_f32_to_bf16(f);
            for (size_t k = 0; k < es; k++)
                want[i * es + k] = (uint8_t)(u >> 8 * k);
        }
        expect_bytes(g, s[r].out, (uint32_t)to, s[r].out_n_dims, s[r].out_ne, want,
                     s[r].n * es);
    }
}

static void expect_str(const ws_gguf *g, const char *key, const char *want)
{
    char buf[256];
    cr_assert_eq(ws_gguf_get_str(g, key, buf, sizeof buf, NULL), 1, "no string %s", key);
    cr_assert_str_eq(buf, want, "%s", key);
}

static void expect_int(const ws_gguf *g, const char *key, int64_t want)
{
    int64_t v;
    cr_assert_eq(ws_gguf_get_int(g, key, &v), 1, "no integer %s", key);
    cr_assert_eq(v, want, "%s = %lld, expected %lld", key, (long long)v, (long long)want);
}

static ws_gguf *open_ok(const char *path)
{
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    return g;
}

/* A fixture directory with path = dir/name. */
static const char *in_dir(const char *dir, const char *name)
{
    static char p[4][2048];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static const char *write_st(const char *dir, const char *name, int hf)
{
    src_tensor s[N_STEM];
    make_stem(s, hf, 0, WS_GGML_BF16);
    bytes b = st_build(s, N_STEM, 1);
    const char *p = in_dir(dir, name);
    write_file(p, b.p, b.n);
    free(b.p);
    return p;
}

/* --- safetensors ---------------------------------------------------------- */

Test(convert, safetensors_keeps_every_stem_tensor_bit_for_bit)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    const char *in = write_st(dir, "model.safetensors", 1);
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in, out, NULL);
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, -1);
    cr_assert_eq(ws_gguf_n_tensors(g), 5, "only the stem and the positions are kept");
    expect_str(g, "general.architecture", "whisper");
    expect_str(g, "general.name", "model");
    expect_str(g, "whisper.source.file", "model.safetensors");
    expect_str(g, "whisper.source.format", "safetensors");
    expect_int(g, "whisper.n_mels", N_MELS);
    expect_int(g, "whisper.d", D);
    ws_gguf_close(g);

    ws_model m;
    ws_err err = {{0}};
    cr_assert_eq(ws_model_load(&m, out, &err), 0, "%s", err.msg);
    cr_assert_eq(m.n_mels, N_MELS);
    cr_assert_eq(m.d, D);
    cr_assert_eq(m.n_pos, N_POS);
    cr_assert_eq(m.conv1_b[5], src_value(&s[T_C1B], 5));
    ws_model_free(&m);
}

Test(convert, safetensors_with_openai_names_and_a_chosen_name)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 0, WS_GGML_BF16);
    const char *in = write_st(dir, "w.safetensors", 0);
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in, out, "--name 'tiny test'");
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, -1);
    expect_str(g, "general.name", "tiny test");
    ws_gguf_close(g);
}

static void converts_to(const char *type_arg, int to)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    const char *in = write_st(dir, "model.safetensors", 1);
    const char *out = in_dir(dir, "stem.gguf");
    char args[64];
    snprintf(args, sizeof args, "--type %s", type_arg);
    convert_ok(in, out, args);
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, to);
    ws_gguf_close(g);
}

Test(convert, type_f16_rounds_each_source_value_like_ws_f32_to_f16)
{
    converts_to("f16", WS_GGML_F16);
}

Test(convert, type_bf16_rounds_each_source_value_like_ws_f32_to_bf16)
{
    converts_to("bf16", WS_GGML_BF16);
}

Test(convert, type_f32_widens_exactly)
{
    converts_to("f32", WS_GGML_F32);
}

Test(convert, type_keep_is_the_default)
{
    converts_to("keep", -1);
}

/* The fixture with the first `from` in its header replaced by `to` (any
 * length: the header length is rewritten; data offsets are relative to the
 * data section, so they stay right). */
static const char *st_patched(const char *dir, const char *from, const char *to)
{
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    bytes b = st_build(s, N_STEM, 1);
    size_t n = 0;
    for (int i = 0; i < 8; i++)
        n |= (size_t)b.p[i] << 8 * i;
    uint8_t *hit = memmem(b.p + 8, n, from, strlen(from));
    cr_assert_not_null(hit, "'%s' not in the header", from);
    size_t at = (size_t)(hit - b.p), nf = strlen(from), nt = strlen(to);
    bytes c = {0};
    b_le(&c, n - nf + nt, 8);
    b_put(&c, b.p + 8, at - 8);
    b_put(&c, to, nt);
    b_put(&c, b.p + at + nf, b.n - at - nf);
    const char *p = in_dir(dir, "bad.safetensors");
    write_file(p, c.p, c.n);
    free(b.p);
    free(c.p);
    return p;
}

Test(convert, safetensors_rejects_an_unknown_dtype)
{
    const char *dir = tmpdir();
    expect_fail(st_patched(dir, "\"BF16\"", "\"BF17\""), NULL, "unknown dtype \"BF17\"");
}

Test(convert, safetensors_rejects_a_dtype_that_does_not_match_the_byte_count)
{
    const char *dir = tmpdir();
    /* conv1.bias is F32 [6] = 24 bytes; as F16 it would be 12 */
    expect_fail(st_patched(dir, "\"F32\",\"shape\":[6]", "\"F16\",\"shape\":[6]"), NULL,
                "data_offsets span 24 bytes, but F16 x 6 elements is 12");
}

Test(convert, safetensors_rejects_offsets_past_the_data)
{
    const char *dir = tmpdir();
    /* the I64 tensor's end, 16 bytes past the others, pushed further out */
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    size_t total = 0;
    for (int i = 0; i < N_STEM; i++)
        total += s[i].nbytes;
    char from[64], to[64];
    snprintf(from, sizeof from, "[%zu,%zu]", total, total + 16);
    snprintf(to, sizeof to, "[%zu,%zu]", total, total + 96);
    expect_fail(st_patched(dir, from, to), NULL, "outside the");
}

Test(convert, safetensors_rejects_overlapping_tensors)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    size_t total = 0;
    for (int i = 0; i < N_STEM; i++)
        total += s[i].nbytes;
    char from[64], to[64];
    snprintf(from, sizeof from, "[%zu,%zu]", total, total + 16);
    snprintf(to, sizeof to, "[%zu,%zu]", total - 8, total + 8); /* over its neighbour */
    expect_fail(st_patched(dir, from, to), NULL, "overlaps");
    snprintf(to, sizeof to, "[%zu,%zu]", total + 8, total + 24); /* a hole, and past the end */
    expect_fail(st_patched(dir, from, to), NULL, "outside the");
}

Test(convert, safetensors_rejects_malformed_json)
{
    const char *dir = tmpdir();
    expect_fail(st_patched(dir, "\"shape\":[6]", "\"shape\":[6,"), NULL,
                "not well-formed JSON");
}

Test(convert, safetensors_rejects_a_negative_or_fractional_shape)
{
    const char *dir = tmpdir();
    expect_fail(st_patched(dir, "\"shape\":[8,6]", "\"shape\":[8,-6]"), NULL,
                "shape[1] is not a non-negative integer");
    expect_fail(st_patched(dir, "\"shape\":[8,6]", "\"shape\":[8.5,6]"), NULL,
                "shape[0] is not a non-negative integer");
    expect_fail(st_patched(dir, "\"data_offsets\":[0,", "\"data_offsets\":[-0.5,"), NULL,
                "data_offsets is not two non-negative integers");
}

Test(convert, safetensors_rejects_every_kind_of_truncation)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    bytes b = st_build(s, N_STEM, 1);
    uint64_t n = 0;
    for (int i = 0; i < 8; i++)
        n |= (uint64_t)b.p[i] << 8 * i;
    const size_t cuts[] = {1, 7, 8, 9, 8 + (size_t)n / 2, 8 + (size_t)n, 8 + (size_t)n + 30,
                           b.n - 1};
    const char *needles[] = {"truncated", "truncated", "exceeds", "exceeds", "exceeds",
                             "outside the 0-byte", "outside", "outside"};
    const char *p = in_dir(dir, "cut.safetensors");
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        write_file(p, b.p, cuts[k]);
        expect_fail(p, "--from safetensors", needles[k]);
    }
    free(b.p);
}

Test(convert, safetensors_rejects_a_header_length_past_the_end)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    bytes b = st_build(s, N_STEM, 1);
    b.p[7] = 0x40; /* 2^62-ish */
    const char *p = in_dir(dir, "long.safetensors");
    write_file(p, b.p, b.n);
    expect_fail(p, "--from safetensors", "header length");
    free(b.p);
}

Test(convert, safetensors_without_a_stem_says_what_is_missing)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    bytes b = st_build(s + 1, N_STEM - 1, 0); /* no conv1.weight */
    const char *p = in_dir(dir, "nostem.safetensors");
    write_file(p, b.p, b.n);
    expect_fail(p, NULL, "no tensor 'encoder.conv1.weight'");
    free(b.p);
}

Test(convert, a_ggml_bin_fed_as_safetensors_is_refused)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    bytes b = ggml_build(s, D);
    const char *p = in_dir(dir, "ggml-tiny.safetensors");
    write_file(p, b.p, b.n);
    expect_fail(p, "--from safetensors", "not safetensors");
    free(b.p);
}

/* --- sharded index -------------------------------------------------------- */

static void write_index(const char *dir, const char *body)
{
    const char *p = in_dir(dir, "model.safetensors.index.json");
    write_file(p, body, strlen(body));
}

/* conv1.* and the positions in shard 1, conv2.* in shard 2 (in a subfolder). */
static void write_shards(const char *dir, src_tensor s[N_STEM])
{
    make_stem(s, 1, 0, WS_GGML_BF16);
    src_tensor a[3] = {s[T_C1W], s[T_C1B], s[T_POS]}, b2[2] = {s[T_C2W], s[T_C2B]};
    bytes b = st_build(a, 3, 0);
    write_file(in_dir(dir, "model-00001-of-00002.safetensors"), b.p, b.n);
    free(b.p);
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/part", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    b = st_build(b2, 2, 0);
    write_file(in_dir(dir, "part/model-00002-of-00002.safetensors"), b.p, b.n);
    free(b.p);
}

#define INDEX_HEAD "{\"metadata\":{\"total_size\":1000},\"weight_map\":{"
#define SHARD1 "\"model-00001-of-00002.safetensors\""
#define SHARD2 "\"part/model-00002-of-00002.safetensors\""

Test(convert, index_gathers_the_stem_from_its_shards)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    write_shards(dir, s);
    write_index(dir, INDEX_HEAD
                "\"model.encoder.conv1.weight\":" SHARD1 ",\"model.encoder.conv1.bias\":" SHARD1
                ",\"model.encoder.embed_positions.weight\":" SHARD1
                ",\"model.encoder.conv2.weight\":" SHARD2 ",\"model.encoder.conv2.bias\":" SHARD2
                "}}\n");
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in_dir(dir, "model.safetensors.index.json"), out, NULL);
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, -1);
    expect_str(g, "whisper.source.format", "safetensors-index");
    expect_str(g, "general.name", "model");
    ws_gguf_close(g);
}

Test(convert, index_rejects_a_map_that_disagrees_with_the_shards)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    write_shards(dir, s);
    write_index(dir, INDEX_HEAD "\"model.encoder.conv1.weight\":" SHARD2
                ",\"model.encoder.conv2.weight\":" SHARD1 "}}");
    expect_fail(in_dir(dir, "model.safetensors.index.json"), NULL, "which does not hold it");
}

Test(convert, index_rejects_a_missing_shard_and_paths_outside_its_folder)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    write_shards(dir, s);
    const char *idx = in_dir(dir, "model.safetensors.index.json");
    write_index(dir, INDEX_HEAD "\"model.encoder.conv1.weight\":\"gone.safetensors\"}}");
    expect_fail(idx, NULL, "gone.safetensors: cannot open");
    write_index(dir, INDEX_HEAD "\"model.encoder.conv1.weight\":\"../x.safetensors\"}}");
    expect_fail(idx, NULL, "not a file name under the index's directory");
    write_index(dir, INDEX_HEAD "\"model.encoder.conv1.weight\":\"/etc/passwd\"}}");
    expect_fail(idx, NULL, "not a file name under the index's directory");
    write_index(dir, "{\"metadata\":{}}");
    expect_fail(idx, NULL, "no \"weight_map\"");
    write_index(dir, "{\"weight_map\":{\"a\":");
    expect_fail(idx, NULL, "not well-formed JSON");
}

Test(convert, index_reports_a_truncated_shard_by_its_own_name)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    write_shards(dir, s);
    const char *sh = in_dir(dir, "model-00001-of-00002.safetensors");
    size_t n;
    uint8_t *p = read_file(sh, &n);
    write_file(sh, p, n - 3);
    free(p);
    write_index(dir, INDEX_HEAD "\"model.encoder.conv1.weight\":" SHARD1 "}}");
    expect_fail(in_dir(dir, "model.safetensors.index.json"), NULL,
                "model-00001-of-00002.safetensors: tensor");
}

/* --- whisper.cpp ggml .bin ------------------------------------------------ */

Test(convert, ggml_bin_keeps_the_stem_filters_and_hyper_parameters)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    bytes b = ggml_build(s, D);
    const char *in = in_dir(dir, "ggml-tiny.en.bin");
    write_file(in, b.p, b.n);
    free(b.p);
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in, out, NULL);
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, -1);
    bytes mel = {0};
    for (int i = 0; i < N_MELS * N_FFT; i++)
        b_f32(&mel, val(9, (size_t)i));
    expect_bytes(g, "mel_filters", WS_GGML_F32, 2, (uint64_t[]){N_FFT, N_MELS}, mel.p, mel.n);
    free(mel.p);
    cr_assert_eq(ws_gguf_n_tensors(g), 6);
    expect_str(g, "general.name", "ggml-tiny.en");
    expect_str(g, "whisper.source.format", "ggml");
    expect_int(g, "whisper.n_mels", N_MELS);
    expect_int(g, "whisper.d", D);
    expect_int(g, "whisper.n_audio_state", D);
    expect_int(g, "whisper.n_audio_ctx", N_POS);
    expect_int(g, "whisper.n_vocab", 3);
    expect_int(g, "whisper.n_text_ctx", 4);
    expect_int(g, "whisper.ftype", 1);
    ws_gguf_close(g);
}

Test(convert, ggml_bin_to_f32_and_bf16)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    bytes b = ggml_build(s, D);
    const char *in = in_dir(dir, "ggml-tiny.bin");
    write_file(in, b.p, b.n);
    free(b.p);
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in, out, "--type f32");
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, WS_GGML_F32);
    ws_gguf_close(g);
    convert_ok(in, out, "--type bf16");
    g = open_ok(out);
    expect_stem(g, s, 1, WS_GGML_BF16);
    ws_gguf_close(g);
}

Test(convert, ggml_bin_rejects_truncation_at_every_section)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    bytes b = ggml_build(s, D);
    const size_t mel_end = 4 + 44 + 8 + 4 * N_MELS * N_FFT;
    const size_t cuts[] = {2, 4, 20, 48, 52, 60, mel_end - 1, mel_end + 2, mel_end + 9,
                           b.n - 102 - 30, b.n - 1};
    const char *p = in_dir(dir, "cut.bin");
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        write_file(p, b.p, cuts[k]);
        expect_fail(p, "--from ggml", "truncated");
    }
    free(b.p);
}

Test(convert, ggml_bin_rejects_wrong_magic_and_mislabelled_headers)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    bytes b = ggml_build(s, D);
    const char *p = in_dir(dir, "bad.bin");
    b.p[0] = 'x';
    write_file(p, b.p, b.n);
    expect_fail(p, "--from ggml", "not a ggml model: magic 0x67676d78");
    expect_fail(p, NULL, "not a checkpoint this tool reads");
    free(b.p);

    b = ggml_build(s, D + 2); /* the header's width disagrees with the tensors */
    write_file(p, b.p, b.n);
    expect_fail(p, NULL, "header says whisper.n_audio_state = 8, but");
    free(b.p);

    b = ggml_build(s, D);
    b.p[4 + 44 + 3] = 0x80; /* n_mel negative */
    write_file(p, b.p, b.n);
    expect_fail(p, NULL, "mel filter n_mel = ");
    free(b.p);
}

Test(convert, ggml_bin_rejects_an_unknown_tensor_type)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    bytes b = ggml_build(s, D);
    /* the first tensor record follows the vocabulary; its type field is +8 */
    const size_t first = 4 + 44 + 8 + 4 * N_MELS * N_FFT + 4 + (4 + 1) + 4 + (4 + 13);
    b.p[first + 8] = 99;
    const char *p = in_dir(dir, "bad.bin");
    write_file(p, b.p, b.n);
    expect_fail(p, NULL, "unknown ggml type 99");
    free(b.p);
}

Test(convert, safetensors_fed_as_ggml_is_refused)
{
    const char *dir = tmpdir();
    expect_fail(write_st(dir, "model.safetensors", 1), "--from ggml", "not a ggml model");
}

/* --- GGUF from other tools ------------------------------------------------ */

Test(convert, gguf_with_llama_cpp_mmproj_names_becomes_our_stem)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    const char *names[N_STEM] = {"a.conv1d.1.weight", "a.conv1d.1.bias", "a.conv1d.2.weight",
                                 "a.conv1d.2.bias", "a.position_embd.weight"};
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    int rc = ws_gguf_writer_set_str(w, "general.architecture", "clip", &err);
    for (int r = 0; r < N_STEM && !rc; r++)
        rc = ws_gguf_writer_add_raw(w, names[r], s[r].n_dims, s[r].ne, s[r].type, s[r].data,
                                    s[r].nbytes, &err);
    float extra[4] = {1, 2, 3, 4};
    const char *in = in_dir(dir, "mmproj.gguf");
    rc = rc || ws_gguf_writer_add_tensor(w, "a.blk.0.ln1.weight", 1, (uint64_t[]){4},
                                         WS_GGML_F32, extra, &err) ||
         ws_gguf_writer_write(w, in, &err);
    ws_gguf_writer_free(w);
    cr_assert_eq(rc, 0, "%s", err.msg);
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in, out, NULL);
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, -1);
    expect_str(g, "whisper.source.format", "gguf");
    ws_gguf_close(g);
}

Test(convert, gguf_written_by_mkmodel_round_trips)
{
    const char *dir = tmpdir();
    const char *a = in_dir(dir, "a.gguf"), *b = in_dir(dir, "b.gguf");
    char cmd[4096], e[1024];
    snprintf(cmd, sizeof cmd, "'%s' --n-mels 4 --d 6 --hf-names --bias-2d --type bf16 -o '%s'",
             ws_mkmodel(), a);
    cr_assert_eq(run_cmd(cmd, e, sizeof e), 0, "%s", e);
    convert_ok(a, b, NULL);
    ws_model ma, mb;
    ws_err err = {{0}};
    cr_assert_eq(ws_model_load(&ma, a, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_model_load(&mb, b, &err), 0, "%s", err.msg);
    cr_assert_eq(mb.conv1_type, WS_TT_BF16);
    cr_assert_eq(memcmp(ma.conv2_w, mb.conv2_w, 6 * 6 * 3 * sizeof(float)), 0);
    cr_assert_eq(memcmp(ma.conv1_b, mb.conv1_b, 6 * sizeof(float)), 0);
    ws_model_free(&ma);
    ws_model_free(&mb);
}

/* --- the command line ----------------------------------------------------- */

Test(convert, usage_errors_exit_2)
{
    const char *args[] = {"", "x.safetensors", "-o y.gguf", "x -o y --type f8", "x -o y --from pt",
                          "x -o y --bogus", "x y -o z", "x -o"};
    for (size_t k = 0; k < sizeof args / sizeof args[0]; k++) {
        char cmd[1024], e[1024];
        snprintf(cmd, sizeof cmd, "'%s' %s", ws_convert(), args[k]);
        cr_assert_eq(run_cmd(cmd, e, sizeof e), 2, "'%s': expected exit 2 (%s)", args[k], e);
        cr_assert_not_null(strstr(e, "whisper-stem-convert: "), "%s", e);
    }
}

Test(convert, missing_empty_and_zip_inputs_fail_clearly)
{
    const char *dir = tmpdir();
    expect_fail(in_dir(dir, "absent.safetensors"), NULL, "cannot open");
    const char *empty = in_dir(dir, "empty.bin");
    write_file(empty, "", 0);
    expect_fail(empty, NULL, "empty file");
    const char *zip = in_dir(dir, "tiny.pt");
    write_file(zip, "PK\3\4\0\0\0\0", 8);
    expect_fail(zip, NULL, "pt-to-gguf.py");
}

/* --- inputs that are not what they seem ---------------------------------- */

/* A FIFO as input: open() would wait for a writer forever. `timeout` keeps a
 * hanging converter from outliving the test. */
Test(convert, a_fifo_input_fails_at_once, .timeout = 10)
{
    const char *dir = tmpdir();
    const char *fifo = in_dir(dir, "model.safetensors");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    char cmd[4096], e[2048];
    const char *from[] = {"", "--from safetensors", "--from ggml", "--from gguf",
                          "--from safetensors-index"};
    for (size_t k = 0; k < sizeof from / sizeof from[0]; k++) {
        snprintf(cmd, sizeof cmd, "timeout 8 '%s' '%s' -o '%s/out.gguf' %s", ws_convert(), fifo,
                 dir, from[k]);
        int rc = run_cmd(cmd, e, sizeof e);
        cr_assert_eq(rc, 1, "%s: exit %d (124: it hung): %s", from[k], rc, e);
        cr_assert_not_null(strstr(e, "model.safetensors: not a regular file (a FIFO)"), "%s", e);
    }
    /* a FIFO among an index's shards */
    src_tensor s[N_STEM];
    write_shards(dir, s);
    cr_assert_eq(unlink(in_dir(dir, "model-00001-of-00002.safetensors")), 0);
    cr_assert_eq(mkfifo(in_dir(dir, "model-00001-of-00002.safetensors"), 0600), 0);
    write_index(dir, INDEX_HEAD "\"model.encoder.conv1.weight\":" SHARD1 "}}");
    snprintf(cmd, sizeof cmd, "timeout 8 '%s' '%s' -o '%s/out.gguf'", ws_convert(),
             in_dir(dir, "model.safetensors.index.json"), dir);
    int rc = run_cmd(cmd, e, sizeof e);
    cr_assert_eq(rc, 1, "exit %d (124: it hung): %s", rc, e);
    cr_assert_not_null(strstr(e, "model-00001-of-00002.safetensors: not a regular file (a FIFO)"),
                       "%s", e);
}

Test(convert, a_directory_input_is_called_a_directory)
{
    const char *dir = tmpdir();
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/ckpt", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    char cmd[4096], e[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' -o '%s/out.gguf'", ws_convert(), sub, dir);
    cr_assert_eq(run_cmd(cmd, e, sizeof e), 1, "%s", e);
    char want[1200];
    snprintf(want, sizeof want, "whisper-stem-convert: %s: is a directory\n", sub);
    cr_assert_str_eq(e, want);
}

/* A checkpoint cut short after it was opened: converting it is an error for
 * it, never SIGBUS. Through the library, so that the cut falls between
 * reading the headers and reading the tensors. */
static void shrinks_between_open_and_convert(const char *in, const char *needle)
{
    ws_err err = {{0}};
    ws_ckpt *c = ws_ckpt_open(in, WS_CKPT_AUTO, &err);
    cr_assert_not_null(c, "%s", err.msg);
    size_t n;
    uint8_t *p = read_file(in, &n);
    free(p);
    cr_assert_eq(truncate(in, (off_t)(n / 2)), 0);
    char out[2100];
    snprintf(out, sizeof out, "%s.out.gguf", in);
    const ws_convert_opts o = {WS_CONVERT_KEEP, NULL};
    cr_assert_eq(ws_ckpt_convert(c, out, &o, &err), -1, "%s converted after it shrank", in);
    ws_ckpt_close(c);
    cr_assert_not_null(strstr(err.msg, in), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "the file changed while being read"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "expected '%s' in %s", needle, err.msg);
    cr_assert(!file_exists(out), "%s written", out);
}

Test(convert, an_input_that_shrinks_before_its_tensors_are_read_is_an_error)
{
    const char *dir = tmpdir();
    /* Whisper tiny's shape (2 MB): the cut drops whole pages, which a mapping
     * turned into SIGBUS; the small fixtures below end inside a page. */
    const char *gg = in_dir(dir, "tiny.gguf");
    char cmd[4096], e[1024];
    snprintf(cmd, sizeof cmd, "'%s' --size tiny -o '%s'", ws_mkmodel(), gg);
    cr_assert_eq(run_cmd(cmd, e, sizeof e), 0, "%s", e);
    shrinks_between_open_and_convert(gg, "it shrank from");

    shrinks_between_open_and_convert(write_st(dir, "model.safetensors", 1), "it shrank from");

    src_tensor s[N_STEM];
    make_stem(s, 0, 1, WS_GGML_F16);
    bytes b = ggml_build(s, D);
    const char *bin = in_dir(dir, "ggml-tiny.bin");
    write_file(bin, b.p, b.n);
    free(b.p);
    shrinks_between_open_and_convert(bin, "it shrank from");
}

/* -o naming an input would rename the output over it: refused before
 * anything is written, under any name for the same file. */
static void refuses_output(const char *in, const char *out, const char *input_named)
{
    size_t n0, n1;
    uint8_t *before = read_file(input_named, &n0);
    cr_assert_not_null(before);
    char e[2048];
    int rc = convert(in, out, NULL, e, sizeof e);
    cr_assert_eq(rc, 1, "-o %s: exit %d: %s", out, rc, e);
    cr_assert_not_null(strstr(e, out), "%s", e);
    cr_assert_not_null(strstr(e, "refusing to overwrite it"), "%s", e);
    cr_assert_not_null(strstr(e, input_named), "%s", e);
    cr_assert(strchr(e, '\n') == e + strlen(e) - 1, "one line: %s", e);
    uint8_t *after = read_file(input_named, &n1);
    cr_assert(after && n0 == n1 && !memcmp(before, after, n0), "%s changed", input_named);
    free(before);
    free(after);
}

Test(convert, refuses_to_write_over_its_input_under_any_name)
{
    const char *dir = tmpdir();
    char in[2100]; /* in_dir's buffers are reused */
    snprintf(in, sizeof in, "%s", write_st(dir, "model.safetensors", 1));
    refuses_output(in, in, in);
    char other[2100], hard[2100];
    snprintf(other, sizeof other, "%s/./model.safetensors", dir);
    refuses_output(in, other, in);
    snprintf(hard, sizeof hard, "%s/hard.safetensors", dir);
    cr_assert_eq(link(in, hard), 0);
    refuses_output(in, hard, in);

    src_tensor s[N_STEM];
    write_shards(dir, s);
    write_index(dir, INDEX_HEAD
                "\"model.encoder.conv1.weight\":" SHARD1 ",\"model.encoder.conv1.bias\":" SHARD1
                ",\"model.encoder.conv2.weight\":" SHARD2 ",\"model.encoder.conv2.bias\":" SHARD2
                "}}");
    const char *idx = in_dir(dir, "model.safetensors.index.json");
    const char *shard2 = in_dir(dir, "part/model-00002-of-00002.safetensors");
    refuses_output(idx, shard2, shard2);
    refuses_output(idx, idx, idx);

    char gg[2100], cmd[4096], e[1024];
    snprintf(gg, sizeof gg, "%s/m.gguf", dir);
    snprintf(cmd, sizeof cmd, "'%s' --n-mels 4 --d 6 -o '%s'", ws_mkmodel(), gg);
    cr_assert_eq(run_cmd(cmd, e, sizeof e), 0, "%s", e);
    refuses_output(gg, gg, gg);
    /* an output that is another file is still written */
    convert_ok(in, in_dir(dir, "stem.gguf"), NULL);
}

/* A shard that is a symlink must resolve inside the index's directory: a
 * planted link must not make the converter read a file elsewhere. */
Test(convert, index_refuses_a_shard_that_links_out_of_its_folder)
{
    const char *dir = tmpdir();
    char in[1100], out[1100];
    snprintf(in, sizeof in, "%s/repo", dir);
    snprintf(out, sizeof out, "%s/elsewhere", dir);
    cr_assert_eq(mkdir(in, 0755), 0);
    cr_assert_eq(mkdir(out, 0755), 0);
    src_tensor s[N_STEM];
    write_shards(out, s); /* valid shards, outside the repository */
    cr_assert_eq(symlink("../elsewhere/model-00001-of-00002.safetensors",
                         in_dir(in, "model-00001-of-00002.safetensors")), 0);
    write_index(in, INDEX_HEAD "\"model.encoder.conv1.weight\":" SHARD1 "}}");
    const char *idx = in_dir(in, "model.safetensors.index.json");
    expect_fail(idx, NULL, "shard 'model-00001-of-00002.safetensors' resolves to ");
    expect_fail(idx, NULL, "elsewhere/model-00001-of-00002.safetensors, outside the index's "
                           "directory");
    /* a directory symlinked out of it */
    cr_assert_eq(symlink("../elsewhere/part", in_dir(in, "part")), 0);
    write_index(in, INDEX_HEAD "\"model.encoder.conv2.weight\":" SHARD2 "}}");
    expect_fail(idx, NULL, "outside the index's directory");
}

/* Hugging Face's cache: snapshots/REV holds symlinks to ../../blobs/HASH,
 * the index among them. The shards resolve beside the index's target, so
 * this layout converts. */
Test(convert, index_in_a_hugging_face_cache_snapshot_converts)
{
    const char *dir = tmpdir();
    char blobs[1100], snap[1100], p[1200];
    snprintf(blobs, sizeof blobs, "%s/blobs", dir);
    snprintf(p, sizeof p, "%s/snapshots", dir);
    snprintf(snap, sizeof snap, "%s/snapshots/abc123", dir);
    cr_assert(!mkdir(blobs, 0755) && !mkdir(p, 0755) && !mkdir(snap, 0755));
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    src_tensor a[3] = {s[T_C1W], s[T_C1B], s[T_POS]}, b2[2] = {s[T_C2W], s[T_C2B]};
    bytes b = st_build(a, 3, 0);
    write_file(in_dir(blobs, "1111"), b.p, b.n);
    free(b.p);
    b = st_build(b2, 2, 0);
    write_file(in_dir(blobs, "2222"), b.p, b.n);
    free(b.p);
    write_index(blobs, INDEX_HEAD
                "\"model.encoder.conv1.weight\":\"model-00001-of-00002.safetensors\","
                "\"model.encoder.conv1.bias\":\"model-00001-of-00002.safetensors\","
                "\"model.encoder.embed_positions.weight\":\"model-00001-of-00002.safetensors\","
                "\"model.encoder.conv2.weight\":\"model-00002-of-00002.safetensors\","
                "\"model.encoder.conv2.bias\":\"model-00002-of-00002.safetensors\"}}");
    cr_assert_eq(rename(in_dir(blobs, "model.safetensors.index.json"), in_dir(blobs, "3333")), 0);
    cr_assert_eq(symlink("../../blobs/1111", in_dir(snap, "model-00001-of-00002.safetensors")), 0);
    cr_assert_eq(symlink("../../blobs/2222", in_dir(snap, "model-00002-of-00002.safetensors")), 0);
    cr_assert_eq(symlink("../../blobs/3333", in_dir(snap, "model.safetensors.index.json")), 0);
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in_dir(snap, "model.safetensors.index.json"), out, NULL);
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, -1);
    ws_gguf_close(g);
}

/* --- many tensors --------------------------------------------------------- */

enum { MANY = 100000 };

/* A safetensors file with MANY one-value F32 tensors besides the stem; with
 * dup, the last of them takes the name of one in the middle. */
static const char *write_many(const char *dir, int dup)
{
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    size_t cap = (size_t)MANY * 96 + 8192, k = 0, off = 0;
    char *hdr = malloc(cap);
    cr_assert_not_null(hdr);
    k += (size_t)snprintf(hdr + k, cap - k, "{");
    for (int i = 0; i < MANY; i++) {
        k += (size_t)snprintf(hdr + k, cap - k, "%s\"model.decoder.layers.%d.w\":{\"dtype\":\"F32\","
                              "\"shape\":[1],\"data_offsets\":[%zu,%zu]}", i ? "," : "",
                              dup && i == MANY - 1 ? MANY / 2 : i, off, off + 4);
        off += 4;
    }
    for (int r = 0; r < N_STEM; r++) {
        k += (size_t)snprintf(hdr + k, cap - k, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", s[r].name,
                              st_dtype(s[r].type));
        for (uint32_t j = 0; j < s[r].n_dims; j++)
            k += (size_t)snprintf(hdr + k, cap - k, "%s%llu", j ? "," : "",
                                  (unsigned long long)s[r].ne[s[r].n_dims - 1 - j]);
        k += (size_t)snprintf(hdr + k, cap - k, "],\"data_offsets\":[%zu,%zu]}", off,
                              off + s[r].nbytes);
        off += s[r].nbytes;
    }
    k += (size_t)snprintf(hdr + k, cap - k, "}");
    cr_assert_lt(k, cap);
    bytes b = {0};
    b_le(&b, k, 8);
    b_put(&b, hdr, k);
    free(hdr);
    for (int i = 0; i < MANY; i++)
        b_f32(&b, (float)i);
    for (int r = 0; r < N_STEM; r++)
        b_put(&b, s[r].data, s[r].nbytes);
    const char *p = in_dir(dir, dup ? "dup.safetensors" : "many.safetensors");
    write_file(p, b.p, b.n);
    free(b.p);
    return p;
}

/* Names are looked up in a hash map: 10^5 tensors convert in well under a
 * second (a linear search per name made this take tens of seconds). */
Test(convert, a_checkpoint_of_a_hundred_thousand_tensors_converts)
{
    const char *dir = tmpdir();
    src_tensor s[N_STEM];
    make_stem(s, 1, 0, WS_GGML_BF16);
    const char *in = write_many(dir, 0);
    const char *out = in_dir(dir, "stem.gguf");
    convert_ok(in, out, NULL);
    ws_gguf *g = open_ok(out);
    expect_stem(g, s, 1, -1);
    ws_gguf_close(g);
}

Test(convert, a_duplicate_among_a_hundred_thousand_names_is_named)
{
    const char *dir = tmpdir();
    char want[128];
    snprintf(want, sizeof want, "tensor 'model.decoder.layers.%d.w' appears twice", MANY / 2);
    expect_fail(write_many(dir, 1), NULL, want);
}

/* --- the loader and the converter read one table (whisper/tensors.h) ------- */

/* Each file below is a GGUF, so both the loader (ws_model_load, _probe) and
 * the converter (ws_ckpt_open + ws_ckpt_convert, in process) read it; they
 * must both take it, with the same values, or both refuse it with the same
 * message. The names and messages expected are spelled here, not read from
 * the table, so a change to the table shows. */

/* The names a user's files use: openai-whisper, transformers, llama.cpp. */
static const char *const NAMES[N_STEM][3] = {
    {"encoder.conv1.weight", "model.encoder.conv1.weight", "a.conv1d.1.weight"},
    {"encoder.conv1.bias", "model.encoder.conv1.bias", "a.conv1d.1.bias"},
    {"encoder.conv2.weight", "model.encoder.conv2.weight", "a.conv1d.2.weight"},
    {"encoder.conv2.bias", "model.encoder.conv2.bias", "a.conv1d.2.bias"},
    {"encoder.positional_embedding", "model.encoder.embed_positions.weight",
     "a.position_embd.weight"},
};

typedef struct {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
} gt;

/* The valid stem (n_mels 4, d 6, n_pos 8) under openai names, F32. */
static void valid_stem(gt t[N_STEM])
{
    const gt v[N_STEM] = {
        {NAMES[T_C1W][0], WS_GGML_F32, 3, {3, N_MELS, D, 1}},
        {NAMES[T_C1B][0], WS_GGML_F32, 1, {D, 1, 1, 1}},
        {NAMES[T_C2W][0], WS_GGML_F32, 3, {3, D, D, 1}},
        {NAMES[T_C2B][0], WS_GGML_F32, 1, {D, 1, 1, 1}},
        {NAMES[T_POS][0], WS_GGML_F32, 2, {D, N_POS, 1, 1}},
    };
    memcpy(t, v, sizeof v);
}

/* Writes the n tensors (values val(i + 1, .), any type) that have a name. */
static void write_gt(const char *path, const gt *t, int n)
{
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    cr_assert_not_null(w);
    for (int i = 0; i < n; i++) {
        if (!t[i].name)
            continue;
        size_t cnt = 1;
        for (uint32_t j = 0; j < t[i].n_dims; j++)
            cnt *= t[i].ne[j];
        int rc;
        if (t[i].type == WS_GGML_F32 || t[i].type == WS_GGML_F16 || t[i].type == WS_GGML_BF16) {
            float *x = malloc(cnt * sizeof *x);
            cr_assert_not_null(x);
            for (size_t k = 0; k < cnt; k++)
                x[k] = val(i + 1, k);
            rc = ws_gguf_writer_add_tensor(w, t[i].name, t[i].n_dims, t[i].ne, t[i].type, x, &err);
            free(x);
        } else { /* F64: 8 bytes a value, contents irrelevant */
            uint8_t *x = calloc(cnt, 8);
            cr_assert_not_null(x);
            rc = ws_gguf_writer_add_raw(w, t[i].name, t[i].n_dims, t[i].ne, t[i].type, x, cnt * 8,
                                        &err);
            free(x);
        }
        cr_assert_eq(rc, 0, "%s: %s", t[i].name, err.msg);
    }
    cr_assert_eq(ws_gguf_writer_write(w, path, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);
}

static void assert_same_model(const ws_model *a, const ws_model *b, const char *what)
{
    cr_assert(a->n_mels == b->n_mels && a->d == b->d && a->n_pos == b->n_pos,
              "%s: shapes differ (%d,%d,%d vs %d,%d,%d)", what, a->n_mels, a->d, a->n_pos,
              b->n_mels, b->d, b->n_pos);
    const size_t n[5] = {(size_t)a->d * (size_t)a->n_mels * 3, (size_t)a->d,
                         (size_t)a->d * (size_t)a->d * 3, (size_t)a->d,
                         (size_t)a->n_pos * (size_t)a->d};
    const float *pa[5] = {a->conv1_w, a->conv1_b, a->conv2_w, a->conv2_b, a->pos};
    const float *pb[5] = {b->conv1_w, b->conv1_b, b->conv2_w, b->conv2_b, b->pos};
    for (int r = 0; r < 5; r++) {
        cr_assert_eq(pa[r] == NULL, pb[r] == NULL, "%s: tensor %d present in one only", what, r);
        if (pa[r])
            cr_assert_eq(memcmp(pa[r], pb[r], n[r] * sizeof(float)), 0, "%s: tensor %d differs",
                         what, r);
    }
}

/* Loader, probe and converter on path. On success (returns 0) the loaded
 * model is in *m (caller frees) and the converted file, loaded, equals it and
 * holds openai names with the table's first shapes. On failure (returns -1)
 * all three failed with one message, copied into msg. */
static int load_and_convert(const char *path, ws_model *m, char *msg, size_t cap)
{
    ws_err le = {{0}}, pe = {{0}}, ce = {{0}};
    const int lrc = ws_model_load(m, path, &le);
    int n_mels = 0, d = 0;
    const int prc = ws_model_probe(path, &n_mels, &d, &pe);
    ws_ckpt *c = ws_ckpt_open(path, WS_CKPT_AUTO, &ce);
    cr_assert_not_null(c, "the GGUF itself is valid: %s", ce.msg);
    char out[2100];
    snprintf(out, sizeof out, "%s.stem.gguf", path);
    const int crc = ws_ckpt_convert(c, out, &(ws_convert_opts){WS_CONVERT_KEEP, "t"}, &ce);
    ws_ckpt_close(c);
    cr_assert_eq(lrc, crc, "%s: loader %s, converter %s (loader: '%s', converter: '%s')", path,
                 lrc ? "refuses" : "accepts", crc ? "refuses" : "accepts", le.msg, ce.msg);
    cr_assert_eq(prc, lrc, "%s: probe and load disagree: '%s' / '%s'", path, pe.msg, le.msg);
    if (lrc) {
        cr_assert_str_eq(le.msg, ce.msg, "loader and converter word it differently");
        cr_assert_str_eq(pe.msg, le.msg, "probe and load word it differently");
        cr_assert(!file_exists(out), "%s written despite the error", out);
        snprintf(msg, cap, "%s", le.msg);
        return -1;
    }
    cr_assert(n_mels == m->n_mels && d == m->d, "probe gives the loaded shape");
    ws_model conv;
    ws_err err = {{0}};
    cr_assert_eq(ws_model_load(&conv, out, &err), 0, "the converted file loads: %s", err.msg);
    assert_same_model(&conv, m, path);
    ws_model_free(&conv);
    ws_gguf *g = open_ok(out);
    const uint32_t rank[N_STEM] = {3, 1, 3, 1, 2};
    for (int r = 0; r < N_STEM; r++) {
        const ws_gguf_tensor *t = ws_gguf_find(g, NAMES[r][0]);
        if (r == T_POS && !m->pos) {
            cr_assert_null(t);
            continue;
        }
        cr_assert_not_null(t, "converted: no %s", NAMES[r][0]);
        cr_assert_eq(t->n_dims, rank[r], "converted %s: %u dims", NAMES[r][0], t->n_dims);
    }
    ws_gguf_close(g);
    unlink(out);
    return 0;
}

/* The loaded values are the file's (F32, so exact): val(r + 1, i). */
static void assert_values(const ws_model *m, int has_pos)
{
    const size_t n[5] = {(size_t)D * N_MELS * 3, D, (size_t)D * D * 3, D, (size_t)N_POS * D};
    const float *p[5] = {m->conv1_w, m->conv1_b, m->conv2_w, m->conv2_b, m->pos};
    cr_assert(m->n_mels == N_MELS && m->d == D && m->n_pos == (has_pos ? N_POS : 0));
    for (int r = 0; r < (has_pos ? 5 : 4); r++)
        for (size_t i = 0; i < n[r]; i++)
            cr_assert_eq(p[r][i], val(r + 1, i), "tensor %d [%zu]", r, i);
}

Test(convert, the_table_holds_the_names_of_openai_hugging_face_and_llama_cpp)
{
    cr_assert_eq(WS_STEM_N_TENSORS, N_STEM);
    cr_assert_eq(WS_N_NAMINGS, 3);
    for (int r = 0; r < N_STEM; r++) {
        for (int k = 0; k < 3; k++)
            cr_assert_str_eq(WS_STEM_TENSORS[r].name[k], NAMES[r][k]);
        cr_assert_eq(WS_STEM_TENSORS[r].required, r != T_POS, "%s", NAMES[r][0]);
    }
}

Test(convert, loader_and_converter_accept_every_name_in_the_table)
{
    const char *dir = tmpdir();
    const char *p = in_dir(dir, "names.gguf");
    char msg[512];
    /* each tensor under each of its names, the others under openai's */
    for (int r = 0; r < N_STEM; r++)
        for (int k = 0; k < 3; k++) {
            gt t[N_STEM];
            valid_stem(t);
            t[r].name = NAMES[r][k];
            write_gt(p, t, N_STEM);
            ws_model m;
            cr_assert_eq(load_and_convert(p, &m, msg, sizeof msg), 0, "%s: %s", NAMES[r][k],
                         msg);
            assert_values(&m, 1);
            ws_model_free(&m);
        }
    /* every tensor under one naming, with and without the positions */
    for (int k = 0; k < 3; k++)
        for (int with_pos = 0; with_pos < 2; with_pos++) {
            gt t[N_STEM];
            valid_stem(t);
            for (int r = 0; r < N_STEM; r++)
                t[r].name = NAMES[r][k];
            write_gt(p, t, with_pos ? N_STEM : N_STEM - 1);
            ws_model m;
            cr_assert_eq(load_and_convert(p, &m, msg, sizeof msg), 0, "naming %d: %s", k, msg);
            assert_values(&m, with_pos);
            ws_model_free(&m);
        }
}

/* PyTorch [d], [d,1] (whisper.cpp, llama.cpp) and [1,d]; trailing ne of 1
 * (leading PyTorch dimensions of 1) anywhere; a one-row positional table. */
Test(convert, loader_and_converter_accept_every_shape_variant)
{
    const char *dir = tmpdir();
    const char *p = in_dir(dir, "shapes.gguf");
    static const struct {
        int role;
        uint32_t n_dims;
        uint64_t ne[4];
    } ok[] = {
        {T_C1B, 1, {D}},          {T_C1B, 2, {1, D}},       {T_C1B, 2, {D, 1}},
        {T_C1B, 3, {D, 1, 1}},    {T_C1B, 4, {1, D, 1, 1}}, {T_C2B, 2, {1, D}},
        {T_C2B, 2, {D, 1}},       {T_C1W, 4, {3, N_MELS, D, 1}},
        {T_C2W, 4, {3, D, D, 1}}, {T_POS, 3, {D, N_POS, 1}},
    };
    char msg[512];
    for (size_t c = 0; c < sizeof ok / sizeof ok[0]; c++) {
        gt t[N_STEM];
        valid_stem(t);
        t[ok[c].role].n_dims = ok[c].n_dims;
        memcpy(t[ok[c].role].ne, ok[c].ne, sizeof ok[c].ne);
        for (uint32_t j = ok[c].n_dims; j < 4; j++)
            t[ok[c].role].ne[j] = 1;
        write_gt(p, t, N_STEM);
        ws_model m;
        cr_assert_eq(load_and_convert(p, &m, msg, sizeof msg), 0, "case %zu: %s", c, msg);
        assert_values(&m, 1);
        ws_model_free(&m);
    }
    /* a positional table of one row, stored 1-D */
    gt t[N_STEM];
    valid_stem(t);
    t[T_POS].n_dims = 1;
    t[T_POS].ne[1] = 1;
    write_gt(p, t, N_STEM);
    ws_model m;
    cr_assert_eq(load_and_convert(p, &m, msg, sizeof msg), 0, "%s", msg);
    cr_assert_eq(m.n_pos, 1);
    ws_model_free(&m);
}

Test(convert, loader_and_converter_refuse_each_wrong_shape_with_one_message)
{
    const char *dir = tmpdir();
    const char *p = in_dir(dir, "wrong.gguf");
    static const char *const EXPECTED[N_STEM] = {
        "[3,n_mels,d] with n_mels and d in 1..65536", "[6] (or [1,6] or [6,1])", "[3,6,6]",
        "[6] (or [1,6] or [6,1])", "[6,n_pos] with n_pos in 1..65536"};
    static const struct {
        int role;
        uint32_t n_dims;
        uint64_t ne[4];
        const char *got;
    } bad[] = {
        {T_C1W, 3, {5, N_MELS, D}, "[5,4,6]"},      /* kernel 5 */
        {T_C1W, 3, {D, N_MELS, 3}, "[6,4,3]"},      /* PyTorch order, not ne */
        {T_C1W, 4, {3, N_MELS, D, 2}, "[3,4,6,2]"},
        {T_C1W, 3, {1, N_MELS, D}, "[1,4,6]"},      /* kernel 1 */
        {T_C1W, 3, {3, 65537, 1}, "[3,65537,1]"},  /* n_mels past the limit */
        {T_C1B, 1, {5}, "[5]"},
        {T_C1B, 2, {2, 3}, "[2,3]"},
        {T_C1B, 2, {D, D}, "[6,6]"},
        {T_C1B, 3, {1, 1, D}, "[1,1,6]"},
        {T_C2W, 3, {3, D, 5}, "[3,6,5]"},
        {T_C2W, 3, {3, N_MELS, D}, "[3,4,6]"},
        {T_C2W, 3, {D, D, 3}, "[6,6,3]"},
        {T_C2B, 1, {7}, "[7]"},
        {T_C2B, 2, {D, 2}, "[6,2]"},
        {T_POS, 2, {5, N_POS}, "[5,8]"},
        {T_POS, 2, {N_POS, D}, "[8,6]"},            /* PyTorch order */
        {T_POS, 3, {D, N_POS, 2}, "[6,8,2]"},
        {T_POS, 2, {D, 65537}, "[6,65537]"},        /* n_pos past the limit */
    };
    char msg[512], want[2600];
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        const int r = bad[c].role;
        gt t[N_STEM];
        valid_stem(t);
        t[r].name = NAMES[r][c % 3]; /* the message names the tensor as the file does */
        t[r].n_dims = bad[c].n_dims;
        memcpy(t[r].ne, bad[c].ne, sizeof bad[c].ne);
        for (uint32_t j = bad[c].n_dims; j < 4; j++)
            t[r].ne[j] = 1;
        write_gt(p, t, N_STEM);
        ws_model m;
        cr_assert_eq(load_and_convert(p, &m, msg, sizeof msg), -1, "case %zu accepted", c);
        snprintf(want, sizeof want, "%s: %s: got ne=%s, expected %s", p, NAMES[r][c % 3],
                 bad[c].got, EXPECTED[r]);
        cr_assert_str_eq(msg, want, "case %zu", c);
    }
}

Test(convert, loader_and_converter_refuse_each_missing_tensor_with_one_message)
{
    const char *dir = tmpdir();
    const char *p = in_dir(dir, "missing.gguf");
    char msg[512], want[2600];
    for (int r = 0; r < T_POS; r++) {
        gt t[N_STEM];
        valid_stem(t);
        t[r].name = NULL;
        write_gt(p, t, N_STEM);
        ws_model m;
        cr_assert_eq(load_and_convert(p, &m, msg, sizeof msg), -1, "%s missing, accepted",
                     NAMES[r][0]);
        snprintf(want, sizeof want, "%s: no tensor '%s' (nor '%s', '%s')", p, NAMES[r][0],
                 NAMES[r][1], NAMES[r][2]);
        cr_assert_str_eq(msg, want);
    }
}

Test(convert, loader_and_converter_refuse_each_unsupported_type_with_one_message)
{
    const char *dir = tmpdir();
    const char *p = in_dir(dir, "f64.gguf");
    char msg[512], want[2600];
    for (int r = 0; r < N_STEM; r++) {
        gt t[N_STEM];
        valid_stem(t);
        t[r].name = NAMES[r][(r + 1) % 3];
        t[r].type = 28; /* ggml F64 */
        write_gt(p, t, N_STEM);
        ws_model m;
        cr_assert_eq(load_and_convert(p, &m, msg, sizeof msg), -1, "%s F64, accepted",
                     NAMES[r][0]);
        snprintf(want, sizeof want,
                 "%s: tensor '%s': type F64 is not supported (F32, F16 or BF16)", p,
                 NAMES[r][(r + 1) % 3]);
        cr_assert_str_eq(msg, want);
    }
}

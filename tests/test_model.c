/* test_model.c - stem weights: ws_model_load / _save_gguf / _init_random
 * (src/whisper/model.c) and the ws-mkmodel tool (scripts/mkmodel.c).
 *
 * Round trips are exact: F32 bit for bit, F16 and BF16 equal to the
 * round-to-nearest-even conversion of the source (ws_f32_to_f16/bf16), since
 * widening back to float32 is exact. Odd files (other names, 2-D biases,
 * extra tensors, wrong shapes, other types) are made with the GGUF writer
 * directly; each failure is checked for its message and an empty model.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "whisper/stem.h"
#include "gguf/gguf.h"
#include "helpers.h"
#include "whisper/model.h"

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
            unlink(p);
        }
    closedir(d);
    rmdir(dir);
}

typedef struct {
    char dir[512], path[600];
} place;

static place new_place(const char *file)
{
    place p;
    snprintf(p.dir, sizeof p.dir, "%s", test_tmpdir());
    snprintf(p.path, sizeof p.path, "%s/%s", p.dir, file);
    return p;
}

static size_t n_w1(const ws_model *m) { return (size_t)m->d * (size_t)m->n_mels * 3; }
static size_t n_w2(const ws_model *m) { return (size_t)m->d * (size_t)m->d * 3; }

static void random_model(ws_model *m, int n_mels, int d, uint64_t seed, int pos)
{
    ws_err err = {{0}};
    cr_assert_eq(ws_model_init_random(m, n_mels, d, seed, pos, &err), 0, "%s", err.msg);
}

/* Loading must fail with needle (and the path) in the message, m left empty;
 * ws_model_probe must fail with the same message. */
static void expect_load_fail(const char *path, const char *needle)
{
    ws_model m;
    ws_err err = {{0}}, perr = {{0}};
    cr_assert_eq(ws_model_load(&m, path, &err), -1, "loaded; expected '%s'", needle);
    cr_assert_not_null(strstr(err.msg, path), "message does not name the file: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, needle), "expected '%s' in: %s", needle, err.msg);
    cr_assert(m.conv1_w == NULL && m.conv1_b == NULL && m.conv2_w == NULL && m.conv2_b == NULL &&
                  m.pos == NULL && m.d == 0 && m.n_mels == 0,
              "a failed load leaves the model empty");
    int n_mels = -1, d = -1;
    cr_assert_eq(ws_model_probe(path, &n_mels, &d, &perr), -1, "probed; expected '%s'", needle);
    cr_assert_str_eq(perr.msg, err.msg, "probe and load disagree");
}

/* Writes the stem of m with chosen names/shapes: a file made tensor by tensor. */
typedef struct {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[4];
    const float *data;
} tdesc;

static void write_tensors(const char *path, const tdesc *t, int n)
{
    ws_err err = {{0}};
    ws_gguf_writer *w = ws_gguf_writer_new();
    for (int i = 0; i < n; i++)
        cr_assert_eq(ws_gguf_writer_add_tensor(w, t[i].name, t[i].n_dims, t[i].ne, WS_GGML_F32,
                                               t[i].data, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_gguf_writer_write(w, path, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);
}

static void assert_same_floats(const char *what, const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, &got[i], 4);
        memcpy(&b, &want[i], 4);
        cr_assert_eq(a, b, "%s[%zu]: got %.9g, want %.9g", what, i, got[i], want[i]);
    }
}

static void assert_same_model(const ws_model *got, const ws_model *want)
{
    cr_assert_eq(got->n_mels, want->n_mels);
    cr_assert_eq(got->d, want->d);
    assert_same_floats("conv1_w", got->conv1_w, want->conv1_w, n_w1(want));
    assert_same_floats("conv1_b", got->conv1_b, want->conv1_b, (size_t)want->d);
    assert_same_floats("conv2_w", got->conv2_w, want->conv2_w, n_w2(want));
    assert_same_floats("conv2_b", got->conv2_b, want->conv2_b, (size_t)want->d);
    cr_assert_eq(got->n_pos, want->n_pos);
    if (want->pos)
        assert_same_floats("pos", got->pos, want->pos, (size_t)want->n_pos * (size_t)want->d);
    else
        cr_assert_null(got->pos);
}

/* --- round trips --------------------------------------------------------- */

Test(model, f32_round_trip_is_bit_exact)
{
    place p = new_place("m.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 80, 24, 5, 0);
    cr_assert_eq(ws_model_save_gguf(&src, p.path, WS_TT_F32, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    assert_same_model(&got, &src);
    cr_assert_eq(got.conv1_type, WS_TT_F32);
    cr_assert_eq(got.conv2_type, WS_TT_F32);
    cr_assert_str_eq(got.name, "random-80x24-seed5");
    cr_assert_str_eq(got.path, p.path);
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

/* Stored in type, loaded back: each value is the rounding of the source. */
static void half_round_trip(ws_tensor_type type)
{
    place p = new_place("h.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 8, 16, 11, 1);
    cr_assert_eq(ws_model_save_gguf(&src, p.path, type, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    cr_assert_eq(got.conv1_type, type);
    cr_assert_eq(got.conv2_type, type);
    const float *s[4] = {src.conv1_w, src.conv1_b, src.conv2_w, src.conv2_b};
    const float *g[4] = {got.conv1_w, got.conv1_b, got.conv2_w, got.conv2_b};
    const size_t n[4] = {n_w1(&src), 16, n_w2(&src), 16};
    size_t changed = 0;
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < n[k]; i++) {
            float want = type == WS_TT_F16 ? ws_f16_to_f32(ws_f32_to_f16(s[k][i]))
                                           : ws_bf16_to_f32(ws_f32_to_bf16(s[k][i]));
            cr_assert_eq(g[k][i], want, "tensor %d [%zu]: got %.9g, want %.9g", k, i, g[k][i], want);
            changed += g[k][i] != s[k][i];
        }
    cr_assert_gt(changed, n[0] / 2, "the values went through %s", ws_tensor_type_name(type));
    /* the positional table is always written as F32 */
    assert_same_floats("pos", got.pos, src.pos, (size_t)1500 * 16);
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, f16_round_trip_equals_f16_rounding_of_the_source) { half_round_trip(WS_TT_F16); }
Test(model, bf16_round_trip_equals_bf16_rounding_of_the_source) { half_round_trip(WS_TT_BF16); }

Test(model, reads_hugging_face_names)
{
    place p = new_place("hf.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 8, 12, 2, 1);
    const ws_model_save_opts o = {WS_TT_F32, 1, 0};
    cr_assert_eq(ws_model_save_gguf_opts(&src, p.path, &o, &err), 0, "%s", err.msg);
    ws_gguf *g = ws_gguf_open(p.path, &err);
    cr_assert_not_null(ws_gguf_find(g, "model.encoder.conv2.bias"));
    cr_assert_not_null(ws_gguf_find(g, "model.encoder.embed_positions.weight"));
    cr_assert_null(ws_gguf_find(g, "encoder.conv2.bias"));
    ws_gguf_close(g);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    assert_same_model(&got, &src);
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, reads_biases_stored_as_1_by_d_and_d_by_1)
{
    place p = new_place("b.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 4, 6, 3, 0);
    /* ne [1, d], as whisper.cpp writes them */
    const ws_model_save_opts o = {WS_TT_F16, 0, 1};
    cr_assert_eq(ws_model_save_gguf_opts(&src, p.path, &o, &err), 0, "%s", err.msg);
    ws_gguf *g = ws_gguf_open(p.path, &err);
    const ws_gguf_tensor *t = ws_gguf_find(g, "encoder.conv1.bias");
    cr_assert(t->n_dims == 2 && t->ne[0] == 1 && t->ne[1] == 6);
    ws_gguf_close(g);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(got.conv2_b[i], ws_f16_to_f32(ws_f32_to_f16(src.conv2_b[i])));
    ws_model_free(&got);
    /* ne [d, 1] */
    const tdesc t2[] = {
        {"encoder.conv1.weight", 3, {3, 4, 6}, src.conv1_w},
        {"encoder.conv1.bias", 2, {6, 1}, src.conv1_b},
        {"encoder.conv2.weight", 3, {3, 6, 6}, src.conv2_w},
        {"encoder.conv2.bias", 2, {6, 1}, src.conv2_b},
    };
    write_tensors(p.path, t2, 4);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    assert_same_model(&got, &src);
    cr_assert_str_eq(got.name, "", "no general.name in this file");
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, ignores_extra_tensors)
{
    place p = new_place("x.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 4, 8, 4, 0);
    float other[64] = {0};
    uint8_t q8[34 * 4] = {0};
    ws_gguf_writer *w = ws_gguf_writer_new();
    cr_assert_eq(ws_gguf_writer_set_str(w, "general.name", "whole model", &err), 0);
    cr_assert_eq(ws_gguf_writer_add_raw(w, "decoder.token_embedding.weight", 2,
                                        (uint64_t[]){32, 4}, WS_GGML_Q8_0, q8, sizeof q8, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "encoder.conv1.weight", 3, (uint64_t[]){3, 4, 8},
                                           WS_GGML_F32, src.conv1_w, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "encoder.ln_post.weight", 1, (uint64_t[]){64},
                                           WS_GGML_F32, other, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "encoder.conv1.bias", 1, (uint64_t[]){8}, WS_GGML_F32,
                                           src.conv1_b, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "encoder.conv2.weight", 3, (uint64_t[]){3, 8, 8},
                                           WS_GGML_BF16, src.conv2_w, &err), 0);
    cr_assert_eq(ws_gguf_writer_add_tensor(w, "encoder.conv2.bias", 1, (uint64_t[]){8}, WS_GGML_F32,
                                           src.conv2_b, &err), 0);
    cr_assert_eq(ws_gguf_writer_write(w, p.path, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    assert_same_floats("conv1_w", got.conv1_w, src.conv1_w, n_w1(&src));
    cr_assert_eq(got.conv1_type, WS_TT_F32);
    cr_assert_eq(got.conv2_type, WS_TT_BF16, "each conv keeps its own type");
    cr_assert_eq(got.conv2_w[5], ws_bf16_to_f32(ws_f32_to_bf16(src.conv2_w[5])));
    cr_assert_str_eq(got.name, "whole model");
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, reads_the_positional_embedding)
{
    place p = new_place("pos.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 4, 8, 9, 1);
    cr_assert_eq(src.n_pos, 1500);
    float *want = malloc((size_t)1500 * 8 * sizeof *want);
    ws_sinusoids(1500, 8, want);
    assert_same_floats("pos", src.pos, want, (size_t)1500 * 8);
    cr_assert_eq(ws_model_save_gguf(&src, p.path, WS_TT_BF16, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    cr_assert_eq(got.n_pos, 1500);
    assert_same_floats("pos", got.pos, want, (size_t)1500 * 8);
    /* row 1, column 0 is sin(1) */
    cr_assert_float_eq(got.pos[8], (float)sin(1.0), 1e-7);
    ws_model_free(&got);
    /* a table of the wrong width */
    const tdesc t[] = {
        {"encoder.conv1.weight", 3, {3, 4, 8}, src.conv1_w},
        {"encoder.conv1.bias", 1, {8}, src.conv1_b},
        {"encoder.conv2.weight", 3, {3, 8, 8}, src.conv2_w},
        {"encoder.conv2.bias", 1, {8}, src.conv2_b},
        {"encoder.positional_embedding", 2, {4, 10}, want},
    };
    write_tensors(p.path, t, 5);
    expect_load_fail(p.path, "encoder.positional_embedding: got ne=[4,10], expected [8,n_pos]");
    free(want);
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, keeps_a_long_general_name_truncated)
{
    place p = new_place("n.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 2, 4, 1, 0);
    ws_gguf_writer *w = ws_gguf_writer_new();
    char longname[301];
    memset(longname, 'n', 300);
    longname[300] = 0;
    ws_gguf_writer_set_str(w, "general.name", longname, &err);
    ws_gguf_writer_add_tensor(w, "encoder.conv1.weight", 3, (uint64_t[]){3, 2, 4}, WS_GGML_F32,
                              src.conv1_w, &err);
    ws_gguf_writer_add_tensor(w, "encoder.conv1.bias", 1, (uint64_t[]){4}, WS_GGML_F32, src.conv1_b,
                              &err);
    ws_gguf_writer_add_tensor(w, "encoder.conv2.weight", 3, (uint64_t[]){3, 4, 4}, WS_GGML_F32,
                              src.conv2_w, &err);
    ws_gguf_writer_add_tensor(w, "encoder.conv2.bias", 1, (uint64_t[]){4}, WS_GGML_F32, src.conv2_b,
                              &err);
    cr_assert_eq(ws_gguf_writer_write(w, p.path, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    cr_assert_eq(strlen(got.name), sizeof got.name - 1);
    cr_assert_eq(strspn(got.name, "n"), sizeof got.name - 1);
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

/* --- bad files ----------------------------------------------------------- */

Test(model, rejects_conv2_of_the_wrong_shape)
{
    place p = new_place("s.gguf");
    float *w1 = calloc((size_t)3 * 384 * 80, sizeof *w1);
    float *w2 = calloc((size_t)3 * 384 * 512, sizeof *w2);
    float *b = calloc(512, sizeof *b);
    const tdesc t[] = {
        {"encoder.conv1.weight", 3, {3, 80, 384}, w1},
        {"encoder.conv1.bias", 1, {384}, b},
        {"encoder.conv2.weight", 3, {3, 384, 512}, w2},
        {"encoder.conv2.bias", 1, {384}, b},
    };
    write_tensors(p.path, t, 4);
    expect_load_fail(p.path, "encoder.conv2.weight: got ne=[3,384,512], expected [3,384,384]");
    free(w1);
    free(w2);
    free(b);
    rm_dir(p.dir);
}

Test(model, rejects_conv1_whose_kernel_is_not_3)
{
    place p = new_place("k.gguf");
    float w[5 * 2 * 4] = {0};
    const tdesc t[] = {{"encoder.conv1.weight", 3, {5, 2, 4}, w}};
    write_tensors(p.path, t, 1);
    expect_load_fail(p.path, "encoder.conv1.weight: got ne=[5,2,4], expected [3,n_mels,d]");
    rm_dir(p.dir);
}

Test(model, rejects_a_bias_of_the_wrong_length)
{
    place p = new_place("bl.gguf");
    ws_model src;
    random_model(&src, 4, 6, 3, 0);
    const tdesc t[] = {
        {"encoder.conv1.weight", 3, {3, 4, 6}, src.conv1_w},
        {"encoder.conv1.bias", 1, {5}, src.conv1_b},
        {"encoder.conv2.weight", 3, {3, 6, 6}, src.conv2_w},
        {"encoder.conv2.bias", 1, {6}, src.conv2_b},
    };
    write_tensors(p.path, t, 4);
    expect_load_fail(p.path, "encoder.conv1.bias: got ne=[5], expected [6] (or [1,6] or [6,1])");
    const tdesc t2[] = {
        {"encoder.conv1.weight", 3, {3, 4, 6}, src.conv1_w},
        {"encoder.conv1.bias", 1, {6}, src.conv1_b},
        {"encoder.conv2.weight", 3, {3, 6, 6}, src.conv2_w},
        {"encoder.conv2.bias", 2, {2, 3}, src.conv2_b},
    };
    write_tensors(p.path, t2, 4);
    expect_load_fail(p.path, "encoder.conv2.bias: got ne=[2,3], expected [6]");
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, rejects_missing_tensors_naming_every_name)
{
    place p = new_place("miss.gguf");
    ws_model src;
    random_model(&src, 4, 6, 3, 0);
    const tdesc t[] = {
        {"model.encoder.conv1.weight", 3, {3, 4, 6}, src.conv1_w},
        {"model.encoder.conv1.bias", 1, {6}, src.conv1_b},
        {"model.encoder.conv2.weight", 3, {3, 6, 6}, src.conv2_w},
    };
    write_tensors(p.path, t, 3);
    expect_load_fail(p.path, ": no tensor 'encoder.conv2.bias' (nor 'model.encoder.conv2.bias', "
                             "'a.conv1d.2.bias')");
    write_tensors(p.path, t, 0);
    expect_load_fail(p.path, ": no tensor 'encoder.conv1.weight' (nor "
                             "'model.encoder.conv1.weight', 'a.conv1d.1.weight')");
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, reads_llama_cpp_mmproj_names)
{
    place p = new_place("mmproj.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 4, 6, 5, 1);
    /* llama.cpp stores the biases as PyTorch [d, 1]: ne [1, d] */
    const tdesc t[] = {
        {"a.conv1d.1.weight", 3, {3, 4, 6}, src.conv1_w},
        {"a.conv1d.1.bias", 2, {1, 6}, src.conv1_b},
        {"a.conv1d.2.weight", 3, {3, 6, 6}, src.conv2_w},
        {"a.conv1d.2.bias", 2, {1, 6}, src.conv2_b},
        {"a.position_embd.weight", 2, {6, 1500}, src.pos},
    };
    write_tensors(p.path, t, 5);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    assert_same_model(&got, &src);
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, reads_trailing_dimensions_of_1_as_absent)
{
    place p = new_place("t1.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 4, 6, 6, 0);
    const float pos[6] = {1, 2, 3, 4, 5, 6};
    const tdesc t[] = {
        {"encoder.conv1.weight", 4, {3, 4, 6, 1}, src.conv1_w},
        {"encoder.conv1.bias", 3, {6, 1, 1}, src.conv1_b},
        {"encoder.conv2.weight", 4, {3, 6, 6, 1}, src.conv2_w},
        {"encoder.conv2.bias", 3, {1, 6, 1}, src.conv2_b},
        {"encoder.positional_embedding", 1, {6}, pos}, /* one row: n_pos 1 */
    };
    write_tensors(p.path, t, 5);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    cr_assert_eq(got.n_pos, 1);
    assert_same_floats("pos", got.pos, pos, 6);
    got.n_pos = 0;
    free(got.pos);
    got.pos = NULL;
    assert_same_model(&got, &src);
    ws_model_free(&got);
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, rejects_a_positional_table_of_more_than_65536_rows)
{
    place p = new_place("long.gguf");
    ws_model src;
    random_model(&src, 2, 4, 7, 0);
    float *pos = calloc((size_t)4 * 65537, sizeof *pos);
    const tdesc t[] = {
        {"encoder.conv1.weight", 3, {3, 2, 4}, src.conv1_w},
        {"encoder.conv1.bias", 1, {4}, src.conv1_b},
        {"encoder.conv2.weight", 3, {3, 4, 4}, src.conv2_w},
        {"encoder.conv2.bias", 1, {4}, src.conv2_b},
        {"model.encoder.embed_positions.weight", 2, {4, 65537}, pos},
    };
    write_tensors(p.path, t, 5);
    expect_load_fail(p.path, ": model.encoder.embed_positions.weight: got ne=[4,65537], "
                             "expected [4,n_pos] with n_pos in 1..65536");
    free(pos);
    ws_model_free(&src);
    rm_dir(p.dir);
}

/* The writer spells the names and shapes the loader reads (whisper/tensors.h). */
Test(model, save_writes_every_naming_and_bias_layout)
{
    place p = new_place("opts.gguf");
    ws_model src, got;
    ws_err err = {{0}};
    random_model(&src, 4, 6, 8, 1);
    static const struct {
        int hf, bias_2d;
        const char *names[5];
        uint32_t bias_dims;
        uint64_t bias_ne0;
    } cases[] = {
        {0, 0, {"encoder.conv1.weight", "encoder.conv1.bias", "encoder.conv2.weight",
                "encoder.conv2.bias", "encoder.positional_embedding"}, 1, 6},
        {1, 1, {"model.encoder.conv1.weight", "model.encoder.conv1.bias",
                "model.encoder.conv2.weight", "model.encoder.conv2.bias",
                "model.encoder.embed_positions.weight"}, 2, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const ws_model_save_opts o = {WS_TT_F32, cases[c].hf, cases[c].bias_2d};
        cr_assert_eq(ws_model_save_gguf_opts(&src, p.path, &o, &err), 0, "%s", err.msg);
        ws_gguf *g = ws_gguf_open(p.path, &err);
        cr_assert_not_null(g, "%s", err.msg);
        cr_assert_eq(ws_gguf_n_tensors(g), 5);
        const uint64_t ne[5][3] = {{3, 4, 6}, {cases[c].bias_ne0, 6, 1}, {3, 6, 6},
                                   {cases[c].bias_ne0, 6, 1}, {6, 1500, 1}};
        const uint32_t n_dims[5] = {3, cases[c].bias_dims, 3, cases[c].bias_dims, 2};
        for (int r = 0; r < 5; r++) {
            const ws_gguf_tensor *t = ws_gguf_find(g, cases[c].names[r]);
            cr_assert_not_null(t, "case %zu: no %s", c, cases[c].names[r]);
            cr_assert_eq(t->n_dims, n_dims[r], "%s", cases[c].names[r]);
            for (uint32_t j = 0; j < n_dims[r]; j++)
                cr_assert_eq(t->ne[j], ne[r][j], "%s ne[%u]", cases[c].names[r], j);
        }
        ws_gguf_close(g);
        cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
        assert_same_model(&got, &src);
        ws_model_free(&got);
    }
    ws_model_free(&src);
    rm_dir(p.dir);
}

Test(model, rejects_unsupported_types_by_name_or_id)
{
    place p = new_place("q.gguf");
    ws_model src;
    ws_err err = {{0}};
    random_model(&src, 4, 64, 3, 0);
    uint8_t q8[68] = {0}; /* 64 values: two Q8_0 blocks of 34 bytes */
    ws_gguf_writer *w = ws_gguf_writer_new();
    ws_gguf_writer_add_tensor(w, "encoder.conv1.weight", 3, (uint64_t[]){3, 4, 64}, WS_GGML_F16,
                              src.conv1_w, &err);
    ws_gguf_writer_add_raw(w, "encoder.conv1.bias", 1, (uint64_t[]){64}, WS_GGML_Q8_0, q8, 68, &err);
    ws_gguf_writer_add_tensor(w, "encoder.conv2.weight", 3, (uint64_t[]){3, 64, 64}, WS_GGML_F16,
                              src.conv2_w, &err);
    ws_gguf_writer_add_tensor(w, "encoder.conv2.bias", 1, (uint64_t[]){64}, WS_GGML_F32,
                              src.conv2_b, &err);
    cr_assert_eq(ws_gguf_writer_write(w, p.path, &err), 0, "%s", err.msg);
    ws_gguf_writer_free(w);
    expect_load_fail(p.path,
                     "tensor 'encoder.conv1.bias': type Q8_0 is not supported (F32, F16 or BF16)");

    /* an id with no name: patch conv2.weight's type field to 200 */
    ws_model_save_gguf(&src, p.path, WS_TT_F32, &err);
    ws_gguf *g = ws_gguf_open(p.path, &err);
    const ws_gguf_tensor *t = ws_gguf_find(g, "encoder.conv2.weight");
    size_t at = t->info_offset + 8 + strlen(t->name) + 4 + 8 * 3;
    ws_gguf_close(g);
    size_t n;
    uint8_t *bytes = read_file(p.path, &n);
    cr_assert_eq(bytes[at], WS_GGML_F32);
    bytes[at] = 200;
    FILE *f = fopen(p.path, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    free(bytes);
    expect_load_fail(p.path, "tensor 'encoder.conv2.weight': type 200 is not supported");
    ws_model_free(&src);
    rm_dir(p.dir);
}

/* Every cut of a model file up to its data, and a sample of cuts inside the
 * data, must fail cleanly through the model loader (run under ASan too). */
Test(model, fails_cleanly_on_every_truncation)
{
    place p = new_place("full.gguf");
    ws_model src;
    ws_err err = {{0}};
    random_model(&src, 3, 4, 8, 1);
    cr_assert_eq(ws_model_save_gguf(&src, p.path, WS_TT_F16, &err), 0, "%s", err.msg);
    size_t n;
    uint8_t *bytes = read_file(p.path, &n);
    ws_gguf *g = ws_gguf_open(p.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const size_t data_off = ws_gguf_data_offset(g);
    size_t data_end = 0;
    for (size_t i = 0; i < ws_gguf_n_tensors(g); i++) {
        const ws_gguf_tensor *t = ws_gguf_tensor_at(g, i);
        if (t->file_offset + t->nbytes > data_end)
            data_end = t->file_offset + t->nbytes;
    }
    ws_gguf_close(g);
    char cut[640];
    snprintf(cut, sizeof cut, "%s/cut.gguf", p.dir);
    for (size_t k = 0; k < data_end; k += k < data_off ? 1 : 97) {
        FILE *f = fopen(cut, "wb");
        fwrite(bytes, 1, k, f);
        fclose(f);
        ws_model m;
        cr_assert_eq(ws_model_load(&m, cut, &err), -1, "a model cut at %zu of %zu bytes loaded", k, n);
        cr_assert_not_null(strstr(err.msg, cut), "cut at %zu: %s", k, err.msg);
        cr_assert_null(m.conv1_w);
        int n_mels, d;
        ws_err perr = {{0}};
        cr_assert_eq(ws_model_probe(cut, &n_mels, &d, &perr), -1, "probed a cut at %zu", k);
        cr_assert_str_eq(perr.msg, err.msg);
    }
    free(bytes);
    ws_model_free(&src);
    rm_dir(p.dir);
}

/* A model file cut short between opening it and reading its tensors fails
 * with a message; with the file mapped this was SIGBUS, no message. */
Test(model, a_file_that_shrinks_while_loading_fails_with_a_message)
{
    place p = new_place("shrinks.gguf");
    ws_model src;
    ws_err err = {{0}};
    random_model(&src, 5, 16, 3, 1);
    cr_assert_eq(ws_model_save_gguf(&src, p.path, WS_TT_F16, &err), 0, "%s", err.msg);
    ws_gguf *g = ws_gguf_open(p.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq(truncate(p.path, (off_t)ws_gguf_data_offset(g) + 10), 0);
    ws_model m;
    cr_assert_eq(ws_model_load_gguf(&m, g, &err), -1, "loaded a file that shrank");
    ws_gguf_close(g);
    cr_assert_not_null(strstr(err.msg, p.path), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "the file changed while being read (tensor "
                                       "'encoder.conv1.weight'): it shrank from"), "%s", err.msg);
    cr_assert(m.conv1_w == NULL && m.conv1_b == NULL && m.d == 0, "the model is left empty");
    ws_model_free(&src);
    rm_dir(p.dir);
}

/* -m naming a FIFO (or /dev/stdin on a pipe) must not wait for a writer. */
Test(model, refuses_a_fifo_or_a_directory_without_waiting, .timeout = 10)
{
    place p = new_place("fifo.gguf");
    cr_assert_eq(mkfifo(p.path, 0600), 0);
    expect_load_fail(p.path, "not a regular file (a FIFO)");
    rm_dir(p.dir);
    p = new_place("x");
    expect_load_fail(p.dir, "is a directory");
    rm_dir(p.dir);
}

Test(model, probe_gives_the_shape_that_load_gives)
{
    place p = new_place("m.gguf");
    ws_model src;
    ws_err err = {{0}};
    random_model(&src, 7, 12, 4, 1);
    const ws_model_save_opts o = {WS_TT_BF16, 1, 1}; /* Hugging Face names, [1,d] biases */
    cr_assert_eq(ws_model_save_gguf_opts(&src, p.path, &o, &err), 0, "%s", err.msg);
    int n_mels = 0, d = 0;
    cr_assert_eq(ws_model_probe(p.path, &n_mels, &d, &err), 0, "%s", err.msg);
    cr_assert_eq(n_mels, 7);
    cr_assert_eq(d, 12);
    ws_model m;
    cr_assert_eq(ws_model_load(&m, p.path, &err), 0, "%s", err.msg);
    cr_assert(m.n_mels == n_mels && m.d == d);
    ws_model_free(&m);
    ws_model_free(&src);
    rm_dir(p.dir);
}

/* --- random init --------------------------------------------------------- */

Test(model, random_init_is_deterministic_and_bounded_like_pytorch)
{
    ws_model a, b, c;
    random_model(&a, 80, 64, 7, 0);
    random_model(&b, 80, 64, 7, 0);
    random_model(&c, 80, 64, 8, 0);
    assert_same_model(&a, &b);
    cr_assert_neq(memcmp(a.conv2_w, c.conv2_w, n_w2(&a) * sizeof(float)), 0, "another seed differs");
    cr_assert_str_eq(a.name, "random-80x64-seed7");
    cr_assert_null(a.pos);
    /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_channels * 3 */
    const float *x[4] = {a.conv1_w, a.conv1_b, a.conv2_w, a.conv2_b};
    const size_t n[4] = {n_w1(&a), 64, n_w2(&a), 64};
    const double bound[4] = {1 / sqrt(240.0), 1 / sqrt(240.0), 1 / sqrt(192.0), 1 / sqrt(192.0)};
    for (int k = 0; k < 4; k++) {
        double lo = 0, hi = 0, sum = 0;
        for (size_t i = 0; i < n[k]; i++) {
            lo = fmin(lo, x[k][i]);
            hi = fmax(hi, x[k][i]);
            sum += x[k][i];
        }
        cr_assert(lo >= -bound[k] && hi <= bound[k], "tensor %d in [%g, %g]", k, lo, hi);
        cr_assert(lo < -0.9 * bound[k] && hi > 0.9 * bound[k], "tensor %d spans the range", k);
        cr_assert_lt(fabs(sum / (double)n[k]), 0.2 * bound[k], "tensor %d is centred", k);
    }
    ws_model_free(&a);
    ws_model_free(&b);
    ws_model_free(&c);
}

Test(model, random_init_rejects_bad_shapes)
{
    ws_model m;
    ws_err err = {{0}};
    cr_assert_eq(ws_model_init_random(&m, 0, 384, 1, 0, &err), -1);
    cr_assert_str_eq(err.msg, "model shape 0x384: n_mels and d must be in 1..65536");
    cr_assert_eq(ws_model_init_random(&m, 80, 65537, 1, 0, &err), -1);
    cr_assert_eq(ws_model_init_random(&m, 80, 7, 1, 1, &err), -1);
    cr_assert_str_eq(err.msg, "positional embedding needs an even width >= 4, got 7");
    cr_assert_null(m.conv1_w);
    ws_model_free(&m);
    ws_model_free(NULL);
    cr_assert_str_eq(ws_tensor_type_name(WS_TT_F32), "f32");
    cr_assert_str_eq(ws_tensor_type_name(WS_TT_F16), "f16");
    cr_assert_str_eq(ws_tensor_type_name(WS_TT_BF16), "bf16");
}

/* A NaN or an infinity anywhere in a stem tensor, of any stored type, refuses the
 * file with one message naming it, the tensor and the element; the model stays empty. */
Test(model, rejects_a_nan_or_infinite_weight_naming_file_tensor_and_element)
{
    place p = new_place("nan.gguf");
    static const ws_tensor_type types[] = {WS_TT_F32, WS_TT_F16, WS_TT_BF16};
    static const char *const names[] = {"encoder.conv1.weight", "encoder.conv1.bias",
                                        "encoder.conv2.weight", "encoder.conv2.bias",
                                        "encoder.positional_embedding"};
    const float bad[] = {NAN, INFINITY, -INFINITY};
    int k = 0;
    for (int ti = 0; ti < 3; ti++)
        for (int r = 0; r < 5; r++, k++) {
            ws_model src, got;
            ws_err err = {{0}};
            random_model(&src, 4, 8, 5, 1);
            float *x[] = {src.conv1_w, src.conv1_b, src.conv2_w, src.conv2_b, src.pos};
            size_t len[] = {n_w1(&src), 8, n_w2(&src), 8, (size_t)src.n_pos * 8};
            const size_t at = (size_t)(k * 7) % len[r];
            x[r][at] = bad[k % 3];
            cr_assert_eq(ws_model_save_gguf(&src, p.path, types[ti], &err), 0, "%s", err.msg);
            cr_assert_eq(ws_model_load(&got, p.path, &err), -1, "%s %s[%zu] = %g loaded",
                         ws_tensor_type_name(types[ti]), names[r], at, (double)bad[k % 3]);
            char want[1024];
            snprintf(want, sizeof want, "%s: tensor '%s': element %zu is not a finite number (",
                     p.path, names[r], at);
            cr_assert_eq(strncmp(err.msg, want, strlen(want)), 0, "got: %s\nwant: %s...",
                         err.msg, want);
            cr_assert_null(strchr(err.msg, '\n'), "one line: %s", err.msg);
            cr_assert(got.conv1_w == NULL && got.pos == NULL && got.d == 0,
                      "a failed load leaves the model empty");
            ws_model_free(&src);
        }
    rm_dir(p.dir);
}

/* --- ws-mkmodel ---------------------------------------------------------- */

Test(mkmodel, writes_the_named_size_with_the_given_type_and_seed)
{
    place p = new_place("tiny.gguf");
    char cmd[1200], err_out[512];
    snprintf(cmd, sizeof cmd, "%s --size tiny --type f16 --seed 3 -o %s", ws_mkmodel(), p.path);
    cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 0, "%s", err_out);
    ws_model got, src;
    ws_err err = {{0}};
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    cr_assert_eq(got.n_mels, 80);
    cr_assert_eq(got.d, 384);
    cr_assert_eq(got.conv1_type, WS_TT_F16);
    cr_assert_null(got.pos);
    cr_assert_str_eq(got.name, "random-80x384-seed3");
    random_model(&src, 80, 384, 3, 0);
    for (size_t i = 0; i < n_w2(&src); i += 101)
        cr_assert_eq(got.conv2_w[i], ws_f16_to_f32(ws_f32_to_f16(src.conv2_w[i])));
    ws_model_free(&got);
    ws_model_free(&src);

    snprintf(cmd, sizeof cmd, "%s --size large-v3 --type bf16 -o %s", ws_mkmodel(), p.path);
    cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 0, "%s", err_out);
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    cr_assert_eq(got.n_mels, 128);
    cr_assert_eq(got.d, 1280);
    cr_assert_str_eq(got.name, "random-128x1280-seed1");
    ws_model_free(&got);
    rm_dir(p.dir);
}

Test(mkmodel, writes_hugging_face_names_2d_biases_and_positions)
{
    place p = new_place("hf.gguf");
    char cmd[1200], err_out[512];
    snprintf(cmd, sizeof cmd, "%s --n-mels 8 --d 16 --hf-names --bias-2d --pos -o %s", ws_mkmodel(),
             p.path);
    cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 0, "%s", err_out);
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(p.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const ws_gguf_tensor *b = ws_gguf_find(g, "model.encoder.conv1.bias");
    cr_assert(b && b->n_dims == 2 && b->ne[0] == 1 && b->ne[1] == 16);
    const ws_gguf_tensor *pos = ws_gguf_find(g, "model.encoder.embed_positions.weight");
    cr_assert(pos && pos->ne[0] == 16 && pos->ne[1] == 1500);
    char arch[16];
    cr_assert_eq(ws_gguf_get_str(g, "general.architecture", arch, sizeof arch, NULL), 1);
    cr_assert_str_eq(arch, "whisper");
    ws_gguf_close(g);
    ws_model got;
    cr_assert_eq(ws_model_load(&got, p.path, &err), 0, "%s", err.msg);
    cr_assert(got.n_mels == 8 && got.d == 16 && got.n_pos == 1500);
    ws_model_free(&got);
    rm_dir(p.dir);
}

/* ws-mkmodel's output with one conv2.bias value patched to a NaN: the command refuses
 * the model with one line naming the file and the tensor, exits 1 and writes nothing. */
Test(mkmodel, a_nan_patched_into_its_output_is_refused_by_the_command)
{
    place p = new_place("m.gguf");
    char cmd[2400], err_out[1024], out[600];
    snprintf(cmd, sizeof cmd, "%s --n-mels 80 --d 16 -o %s", ws_mkmodel(), p.path);
    cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 0, "%s", err_out);
    ws_err err = {{0}};
    ws_gguf *g = ws_gguf_open(p.path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const ws_gguf_tensor *t = ws_gguf_find(g, "encoder.conv2.bias");
    cr_assert(t && t->type == WS_GGML_F32);
    const size_t at = t->file_offset + 4 * 5;
    ws_gguf_close(g);
    size_t n;
    uint8_t *bytes = read_file(p.path, &n);
    memcpy(bytes + at, "\x00\x00\xc0\x7f", 4); /* a quiet NaN, little-endian */
    FILE *f = fopen(p.path, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    free(bytes);
    snprintf(out, sizeof out, "%s/out.npy", p.dir);
    snprintf(cmd, sizeof cmd, "%s --device cpu -m %s %s -o %s", ws_bin(), p.path,
             test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 1, "%s", err_out);
    char want[1024];
    snprintf(want, sizeof want, "%s: tensor 'encoder.conv2.bias': element 5 is not a finite number",
             p.path);
    cr_assert_not_null(strstr(err_out, want), "%s", err_out);
    cr_assert_eq(strchr(err_out, '\n'), err_out + strlen(err_out) - 1, "one line: %s", err_out);
    cr_assert(!file_exists(out), "no output");
    rm_dir(p.dir);
}

Test(mkmodel, usage_errors_exit_2_and_failures_exit_1_with_one_line)
{
    char dir[512]; /* a copy: run_cmd reuses test_tmpdir's storage */
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {"--size tiny", "no output file"},
        {"--size huge -o X", "unknown --size"},
        {"--type q8 -o X", "--type wants f32, f16 or bf16"},
        {"--size tiny --d 64 -o X", "use --size or --n-mels/--d, not both"},
        {"--d 64 -o X", "--n-mels and --d go together"},
        {"--n-mels 0 --d 4 -o X", "--n-mels wants an integer in 1..65536"},
        {"--n-mels 8 --d 4x -o X", "--d wants an integer"},
        {"--seed -1 -o X", "--seed wants a non-negative integer"},
        {"--frobnicate -o X", "unknown argument: --frobnicate"},
        {"-o", "missing value after: -o"},
    };
    char cmd[1200], err_out[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s %s", dir, ws_mkmodel(), bad[i].args);
        cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 2, "%s: %s", bad[i].args, err_out);
        cr_assert_not_null(strstr(err_out, bad[i].msg), "%s: %s", bad[i].args, err_out);
        cr_assert_eq(strncmp(err_out, "ws-mkmodel: ", 12), 0, "%s", err_out);
        cr_assert_eq(strchr(err_out, '\n'), err_out + strlen(err_out) - 1, "one line: %s", err_out);
    }
    char x[600];
    snprintf(x, sizeof x, "%s/X", dir);
    cr_assert(!file_exists(x), "no output after a usage error");
    snprintf(cmd, sizeof cmd, "%s --n-mels 2 --d 5 --pos -o %s/m.gguf", ws_mkmodel(), dir);
    cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 1, "%s", err_out);
    cr_assert_not_null(strstr(err_out, "even width"), "%s", err_out);
    snprintf(cmd, sizeof cmd, "%s -o %s/no/such/m.gguf", ws_mkmodel(), dir);
    cr_assert_eq(run_cmd(cmd, err_out, sizeof err_out), 1, "%s", err_out);
    cr_assert_not_null(strstr(err_out, "cannot open its directory"), "%s", err_out);
    snprintf(cmd, sizeof cmd, "%s --help >/dev/null", ws_mkmodel());
    cr_assert_eq(run_cmd(cmd, NULL, 0), 0);
    rm_dir(dir);
}

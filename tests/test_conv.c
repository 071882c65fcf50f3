/* test_conv.c - GELU, one conv1d, and the stem on the CPU.
 *
 * Falsifiers that do not share the oracle's assumptions (a delta input, the
 * linearity before GELU, a shift by the stride) and the float64 oracle.
 * Tolerances: docs/spec.md fp32 embeddings, rel L2 <= 1e-5 and max |err| <= 1e-4;
 * GELU: the erfc approximation (< 1.2e-7 relative) plus float32 rounding.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "conv/blas.h"
#include "conv/conv.h"
#include "conv/engine.h"
#include "whisper/stem.h"
#include "helpers.h"
#include "oracle.h"

static float *rand_array(size_t n, double scale, uint64_t seed)
{
    ws_rng r = {seed};
    float *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        a[i] = (float)((ws_rng_uniform(&r) * 2 - 1) * scale);
    return a;
}

/* gelu against erf in double on a dense grid over [-10, 10], and its special values */
static void gelu_on_dense_grid(float (*gelu)(float), const char *name)
{
    double worst = 0, worst_x = 0;
    for (int i = -200000; i <= 200000; i++) {
        float x = (float)(i * 5e-5);
        double e = fabs((double)gelu(x) - oracle_gelu(x));
        double lim = 1.5e-7 * (fabs(x) > 1 ? fabs(x) : 1); /* ~1.3 ulp; measured 0.99e-7 */
        if (e / lim > worst) {
            worst = e / lim;
            worst_x = x;
        }
    }
    fprintf(stderr, "%s: worst error %.3f of the bound at x = %g\n", name, worst, worst_x);
    cr_assert_leq(worst, 1.0, "%s error %.3g x the bound at x = %.6g", name, worst, worst_x);
    cr_assert(isnan(gelu(NAN)), "%s(NaN)", name);
    cr_assert_eq(gelu(0.0f), 0.0f, "%s(0)", name);
    cr_assert_leq(fabsf(gelu(-30.0f)), 1e-30f, "%s(-30)", name); /* true value -1e-197 */
    cr_assert_eq(gelu(30.0f), 30.0f, "%s(30)", name);
    cr_assert_eq(gelu(INFINITY), INFINITY, "%s(inf)", name);
}

Test(conv, gelu_matches_erf_on_dense_grid)
{
    gelu_on_dense_grid(ws_gelu, "gelu");
}

Test(conv, fused_gelu_matches_erf_on_dense_grid)
{
    gelu_on_dense_grid(ws_gelu_fma, "gelu (fused)");
}

Test(conv, vectorised_epilogue_equals_scalar_gelu_bit_for_bit)
{
    enum { N = 1000 };
    float *y = rand_array(N, 12.0, 7), want[N];
    for (int i = 0; i < N; i++)
        want[i] = ws_gelu(y[i]);
    ws_bias_act_rows(y, 10, 100, 100, NULL, WS_ACT_GELU, NULL);
    cr_assert_eq(memcmp(y, want, sizeof want), 0);
    free(y);
}

/* The act rows (gelu.c) run in blocks of 64 values, then of 8, then one by one, and their
 * steps are vectorised differently in each block and each CPU clone: every value must get
 * the bits it gets alone, wherever it falls in a row, and every NaN result must be the one
 * quiet NaN (an AVX-512 clone once gave a NaN gradient the sign bit in its blocks of 8). */
static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

Test(conv, act_rows_give_each_value_the_bits_it_has_alone)
{
    enum { NV = 97, MAXN = 200 };
    float vals[NV];
    ws_rng r = {21};
    for (int i = 0; i < NV; i++)
        vals[i] = (float)((ws_rng_uniform(&r) * 2 - 1) * (i % 3 ? 8.0 : 40.0));
    const float special[] = { NAN, -NAN, bits_f(0x7fa00001u), bits_f(0xffc00123u), INFINITY, -INFINITY,
                              0.0f, -0.0f, 1e-40f, -1e-40f, 3e38f, -3e38f, -9.0f, -87.5f };
    for (size_t i = 0; i < sizeof special / sizeof *special; i++)
        vals[i * 7 % NV] = special[i];
    static const ws_act acts[] = { WS_ACT_GELU, WS_ACT_SILU, WS_ACT_RELU };
    static const int lens[] = { 1, 7, 8, 9, 17, 63, 64, 65, 71, 129, MAXN };
    float row[MAXN], g[MAXN], z[MAXN];
    for (size_t a = 0; a < sizeof acts / sizeof *acts; a++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++)
            for (int off = 0; off < NV; off += 13) {
                const int n = lens[li];
                for (int i = 0; i < n; i++) {
                    row[i] = z[i] = vals[(off + i) % NV];
                    g[i] = i % 5 == 4 ? vals[(off + 3 * i) % NV] : 1.0f + 0.01f * (float)i; /* NaN dy too */
                }
                ws_bias_act_rows(row, 1, n, n, NULL, acts[a], NULL);
                ws_act_grad_rows(g, z, n, acts[a]);
                for (int i = 0; i < n; i++) {
                    float y1 = z[i], g1 = i % 5 == 4 ? vals[(off + 3 * i) % NV] : 1.0f + 0.01f * (float)i;
                    ws_bias_act_rows(&y1, 1, 1, 1, NULL, acts[a], NULL);
                    ws_act_grad_rows(&g1, &z[i], 1, acts[a]);
                    uint32_t u[4];
                    memcpy(&u[0], &row[i], 4), memcpy(&u[1], &y1, 4), memcpy(&u[2], &g[i], 4), memcpy(&u[3], &g1, 4);
                    cr_assert(u[0] == u[1] && u[2] == u[3],
                              "act %d, row of %d, place %d, x %a: y %08x alone %08x, grad %08x alone %08x",
                              (int)acts[a], n, i, (double)z[i], u[0], u[1], u[2], u[3]);
                    if (acts[a] != WS_ACT_RELU) {
                        cr_assert(!isnan(y1) || u[1] == 0x7fc00000u, "act %d x %a: NaN %08x", (int)acts[a],
                                  (double)z[i], u[1]);
                        cr_assert(!isnan(g1) || u[3] == 0x7fc00000u, "act %d x %a: NaN grad %08x",
                                  (int)acts[a], (double)z[i], u[3]);
                    }
                }
            }
}

/* Runs one conv on time-major x [t][ic] through a padded buffer. */
static float *run_conv(const ws_rowconv_desc *c, const float *w, const float *b, const float *x,
                       int t_in, int threads, int *t_out)
{
    ws_err err;
    ws_rowconv *cv = ws_rowconv_new(c, w, b, &err);
    cr_assert(cv, "%s", err.msg);
    float *xp = calloc((size_t)(t_in + 2 * c->pad) * c->in_ch, sizeof *xp);
    memcpy(xp + (size_t)c->pad * c->in_ch, x, sizeof(float) * t_in * c->in_ch);
    *t_out = ws_rowconv_out_len(c, t_in);
    float *y = malloc(sizeof(float) * (*t_out) * c->out_ch);
    ws_rowconv_run(cv, xp, t_in, y, c->out_ch, NULL, threads);
    ws_rowconv_free(cv);
    free(xp);
    return y;
}

Test(conv, delta_input_reproduces_a_weight_column)
{
    ws_rowconv_desc c = {5, 7, 3, 1, 1, 1, WS_ACT_NONE, 0};
    float *w = rand_array(7 * 5 * 3, 1, 11), *b = rand_array(7, 1, 12);
    float x[9 * 5] = {0};
    const int ti = 4, ci = 2;
    x[ti * 5 + ci] = 1.0f;
    int t_out;
    float *y = run_conv(&c, w, b, x, 9, 1, &t_out);
    cr_assert_eq(t_out, 9);
    for (int t = 0; t < 9; t++)
        for (int o = 0; o < 7; o++) {
            int k = ti - t + 1; /* output t reads input t + k - 1 */
            float want = b[o] + (k >= 0 && k < 3 ? w[(o * 5 + ci) * 3 + k] : 0.0f);
            cr_assert_float_eq(y[t * 7 + o], want, 1e-6, "t %d o %d", t, o);
        }
    free(y);
    free(w);
    free(b);
}

Test(conv, is_linear_before_the_activation)
{
    ws_rowconv_desc c = {16, 24, 3, 1, 1, 1, WS_ACT_NONE, 0};
    float *w = rand_array(24 * 16 * 3, 0.2, 21);
    float *x1 = rand_array(50 * 16, 1, 22), *x2 = rand_array(50 * 16, 1, 23);
    float *x3 = malloc(sizeof(float) * 50 * 16);
    for (int i = 0; i < 50 * 16; i++)
        x3[i] = 2.0f * x1[i] - 3.0f * x2[i];
    int t;
    float *y1 = run_conv(&c, w, NULL, x1, 50, 2, &t), *y2 = run_conv(&c, w, NULL, x2, 50, 2, &t);
    float *y3 = run_conv(&c, w, NULL, x3, 50, 2, &t);
    for (int i = 0; i < t * 24; i++)
        cr_assert_float_eq(y3[i], 2.0f * y1[i] - 3.0f * y2[i], 1e-4, "at %d", i);
    free(w), free(x1), free(x2), free(x3), free(y1), free(y2), free(y3);
}

Test(conv, shifting_input_by_the_stride_shifts_output_by_one)
{
    ws_rowconv_desc c = {8, 8, 3, 2, 1, 1, WS_ACT_GELU, 0};
    float *w = rand_array(8 * 8 * 3, 0.3, 31), *b = rand_array(8, 0.3, 32);
    float *x = rand_array(40 * 8, 1, 33);
    float *xs = calloc(40 * 8, sizeof *xs);
    memcpy(xs + 2 * 8, x, sizeof(float) * 38 * 8); /* xs[t] = x[t - 2] */
    int t1, t2;
    float *y = run_conv(&c, w, b, x, 40, 1, &t1), *ys = run_conv(&c, w, b, xs, 40, 1, &t2);
    cr_assert_eq(t1, 20);
    for (int t = 1; t < 19; t++) /* away from the zero-filled start */
        for (int o = 0; o < 8; o++)
            cr_assert_float_eq(ys[(t + 1) * 8 + o], y[t * 8 + o], 1e-6, "t %d o %d", t, o);
    free(w), free(b), free(x), free(xs), free(y), free(ys);
}

static void conv_vs_oracle(int ic, int oc, int stride, int t_in, int threads)
{
    ws_rowconv_desc c = {ic, oc, 3, stride, 1, 1, WS_ACT_GELU, 0};
    float *w = rand_array((size_t)oc * ic * 3, 1.0 / sqrt(ic * 3), 41 + ic);
    float *b = rand_array(oc, 0.1, 42);
    float *x = rand_array((size_t)t_in * ic, 1.5, 43);
    int t_out;
    float *y = run_conv(&c, w, b, x, t_in, threads, &t_out);
    double *xc = malloc(sizeof(double) * t_in * ic); /* oracle wants channel-major */
    for (int t = 0; t < t_in; t++)
        for (int i = 0; i < ic; i++)
            xc[(size_t)i * t_in + t] = x[(size_t)t * ic + i];
    double *yc = malloc(sizeof(double) * t_out * oc), *want = malloc(sizeof(double) * t_out * oc);
    cr_assert_eq(oracle_conv1d(xc, ic, t_in, w, b, oc, 3, stride, 1, 1, yc), t_out);
    for (int t = 0; t < t_out; t++)
        for (int o = 0; o < oc; o++)
            want[(size_t)t * oc + o] = yc[(size_t)o * t_out + t];
    cr_assert_leq(rel_l2(y, want, (size_t)t_out * oc), 1e-5);
    assert_close("conv", y, want, (size_t)t_out * oc, 1e-4, 0);
    free(w), free(b), free(x), free(y), free(xc), free(yc), free(want);
}

Test(conv, matches_oracle_stride1_and_stride2_any_threads)
{
    conv_vs_oracle(80, 64, 1, 301, 1);
    conv_vs_oracle(80, 64, 1, 301, 3);
    conv_vs_oracle(64, 64, 2, 301, 2);
    conv_vs_oracle(64, 64, 2, 2, 2);
    conv_vs_oracle(33, 17, 2, 1, 1);
}

static void stem_vs_oracle(int n_mels, int d, int T, int threads, int add_pos)
{
    ws_model m = {0};
    m.n_mels = n_mels;
    m.d = d;
    m.conv1_w = rand_array((size_t)d * n_mels * 3, 1.0 / sqrt(n_mels * 3), 51);
    m.conv1_b = rand_array(d, 1.0 / sqrt(n_mels * 3), 52);
    m.conv2_w = rand_array((size_t)d * d * 3, 1.0 / sqrt(d * 3), 53);
    m.conv2_b = rand_array(d, 1.0 / sqrt(d * 3), 54);
    /* log-Mel-like input: values in [-1.5, 1.5] */
    float *mel = rand_array((size_t)n_mels * T, 1.5, 55);
    ws_err err;
    ws_stem *s = ws_stem_new_cpu(&m, threads, &err);
    cr_assert(s, "%s", err.msg);
    int t_out = ws_stem_out_len(T), t_ref;
    float *out = malloc(sizeof(float) * t_out * d);
    for (size_t i = 0; i < (size_t)t_out * d; i++)
        out[i] = NAN; /* poison: every element must be written */
    cr_assert_eq(ws_stem_run(s, mel, 1, T, add_pos, out, &err), 0, "%s", err.msg);
    float *pos = NULL;
    if (add_pos) {
        pos = malloc(sizeof(float) * t_out * d);
        ws_sinusoids(t_out, d, pos);
    }
    double *want = oracle_stem(mel, n_mels, T, m.conv1_w, m.conv1_b, m.conv2_w, m.conv2_b, d, pos,
                               &t_ref);
    cr_assert_eq(t_ref, t_out);
    double rl2 = rel_l2(out, want, (size_t)t_out * d);
    cr_assert_leq(rl2, 1e-5, "%dx%d T=%d: rel L2 %.3g", n_mels, d, T, rl2);
    assert_close("stem", out, want, (size_t)t_out * d, 1e-4, 0);
    free(want), free(out), free(mel), free(pos);
    ws_stem_free(s);
    free(m.conv1_w), free(m.conv1_b), free(m.conv2_w), free(m.conv2_b);
}

Test(stem, tiny_shape_full_window_matches_oracle, .timeout = 120) { stem_vs_oracle(80, 384, 3000, 2, 0); }
Test(stem, large_v3_shape_matches_oracle, .timeout = 120) { stem_vs_oracle(128, 1280, 300, 2, 0); }
Test(stem, positional_embedding_is_added, .timeout = 60) { stem_vs_oracle(80, 64, 3000, 1, 1); }
Test(stem, odd_and_tiny_frame_counts)
{
    int Ts[] = {1, 2, 3, 4, 5, 97};
    for (int i = 0; i < 6; i++)
        stem_vs_oracle(80, 32, Ts[i], 2, 0);
}

Test(stem, sinusoids_match_openai_formula_in_double)
{
    enum { L = 1500, C = 384 };
    float *t = malloc(sizeof(float) * L * C);
    ws_sinusoids(L, C, t);
    double inc = log(10000.0) / (C / 2 - 1);
    for (int p = 0; p < L; p += 7)
        for (int j = 0; j < C / 2; j++) {
            cr_assert_float_eq(t[p * C + j], sin(p * exp(-inc * j)), 1e-7);
            cr_assert_float_eq(t[p * C + C / 2 + j], cos(p * exp(-inc * j)), 1e-7);
        }
    free(t);
}

/* A window padded to 30 s ends in equal frames; the stem computes that run
 * once. Every place the run can start, odd and even, with and without pos. */
static void constant_tail_case(int T, int tc, int d, int add_pos)
{
    const int nm = 80;
    ws_model m = {0};
    m.n_mels = nm;
    m.d = d;
    m.conv1_w = rand_array((size_t)d * nm * 3, 1.0 / sqrt(nm * 3), 61);
    m.conv1_b = rand_array(d, 0.1, 62);
    m.conv2_w = rand_array((size_t)d * d * 3, 1.0 / sqrt(d * 3), 63);
    m.conv2_b = rand_array(d, 0.1, 64);
    float *mel = rand_array((size_t)nm * T, 1.5, 65 + tc);
    for (int i = 0; i < nm; i++)
        for (int t = tc; t < T; t++)
            mel[(size_t)i * T + t] = -0.75f; /* the floor column of a padded window */
    ws_err err;
    ws_stem *s = ws_stem_new_cpu(&m, 2, &err);
    int t_out = ws_stem_out_len(T), t_ref;
    float *out = malloc(sizeof(float) * t_out * d);
    for (size_t i = 0; i < (size_t)t_out * d; i++)
        out[i] = NAN;
    cr_assert_eq(ws_stem_run(s, mel, 1, T, add_pos, out, &err), 0, "%s", err.msg);
    float *pos = NULL;
    if (add_pos) {
        pos = malloc(sizeof(float) * t_out * d);
        ws_sinusoids(t_out, d, pos);
    }
    double *want = oracle_stem(mel, nm, T, m.conv1_w, m.conv1_b, m.conv2_w, m.conv2_b, d, pos, &t_ref);
    char name[64];
    snprintf(name, sizeof name, "T=%d tail from %d", T, tc);
    cr_assert_leq(rel_l2(out, want, (size_t)t_out * d), 1e-5, "%s", name);
    assert_close(name, out, want, (size_t)t_out * d, 1e-4, 0);
    free(want), free(out), free(mel), free(pos);
    ws_stem_free(s);
    free(m.conv1_w), free(m.conv1_b), free(m.conv2_w), free(m.conv2_b);
}

Test(stem, constant_tail_is_computed_once_and_matches_oracle, .timeout = 120)
{
    const int tcs[] = {0, 1, 2, 3, 4, 5, 1000, 1001, 2994, 2995, 2996, 2997, 2998, 2999};
    for (size_t i = 0; i < sizeof tcs / sizeof *tcs; i++)
        constant_tail_case(3000, tcs[i], 24, (int)(i & 1));
    for (int tc = 0; tc < 9; tc++)
        constant_tail_case(9, tc, 16, tc & 1);
    constant_tail_case(3000, 1100, 384, 1);
}

/* The stem's plans cut the time axis into blocks set by the shapes alone: the same
 * input gives the same bits on 1, 2, 3 or 5 threads, with and without a constant tail,
 * for several windows in one call (windows but the last in batches of up to the thread
 * count: one window at a time on 1 thread). */
Test(stem, same_bits_for_any_thread_count, .timeout = 120)
{
    const int nm = 80, d = 64, T = 777, n_win = 6, t_out = ws_stem_out_len(T);
    ws_model m = {0};
    m.n_mels = nm;
    m.d = d;
    m.conv1_w = rand_array((size_t)d * nm * 3, 1.0 / sqrt(nm * 3), 71);
    m.conv1_b = rand_array(d, 0.1, 72);
    m.conv2_w = rand_array((size_t)d * d * 3, 1.0 / sqrt(d * 3), 73);
    m.conv2_b = rand_array(d, 0.1, 74);
    float *mel = rand_array((size_t)n_win * nm * T, 1.5, 75);
    for (int i = 0; i < nm; i++) /* windows 1 and 5 end in a constant tail from frame 300 */
        for (int t = 300; t < T; t++)
            mel[(size_t)(nm + i) * T + t] = mel[(size_t)(5 * nm + i) * T + t] = -0.75f;
    const size_t n = (size_t)n_win * t_out * d;
    float *ref = malloc(n * sizeof *ref), *out = malloc(n * sizeof *out);
    for (int threads = 1; threads <= 5; threads += 1 + (threads == 3)) {
        ws_err err;
        ws_stem *s = ws_stem_new_cpu(&m, threads, &err);
        cr_assert(s, "%s", err.msg);
        cr_assert_eq(ws_stem_run(s, mel, n_win, T, 1, threads == 1 ? ref : out, &err), 0, "%s",
                     err.msg);
        if (threads > 1)
            cr_assert_eq(memcmp(ref, out, n * sizeof *out), 0, "%d threads differ from 1",
                         threads);
        ws_stem_free(s);
    }
    /* and each window equals the same window run alone */
    ws_err err;
    ws_stem *s = ws_stem_new_cpu(&m, 4, &err);
    cr_assert(s, "%s", err.msg);
    for (int w = 0; w < n_win; w++) {
        cr_assert_eq(ws_stem_run(s, mel + (size_t)w * nm * T, 1, T, 1, out, &err), 0, "%s", err.msg);
        cr_assert_eq(memcmp(ref + (size_t)w * t_out * d, out, (size_t)t_out * d * sizeof *out), 0,
                     "window %d of %d differs from window %d alone", w, n_win, w);
    }
    ws_stem_free(s);
    free(ref), free(out), free(mel);
    free(m.conv1_w), free(m.conv1_b), free(m.conv2_w), free(m.conv2_b);
}

/* Widths where the engine takes its direct kernel (d < 4): no rows in parts, the
 * whole window is computed; same values. */
Test(stem, small_widths_compute_padded_windows_whole, .timeout = 60)
{
    constant_tail_case(300, 100, 2, 0);
    constant_tail_case(300, 100, 3, 0);
    constant_tail_case(9, 3, 1, 0);
}

/* One stem, calls of different lengths, with the model's own positional table and with
 * sinusoids: each call equals a fresh stem's (the tables kept between calls are right). */
Test(stem, calls_of_different_lengths_equal_fresh_stems, .timeout = 120)
{
    const int nm = 80, d = 32, Ts[] = {100, 3000, 7, 3000, 2999};
    for (int own = 0; own < 2; own++) {
        ws_model m = {0};
        m.n_mels = nm;
        m.d = d;
        m.conv1_w = rand_array((size_t)d * nm * 3, 1.0 / sqrt(nm * 3), 81);
        m.conv1_b = rand_array(d, 0.1, 82);
        m.conv2_w = rand_array((size_t)d * d * 3, 1.0 / sqrt(d * 3), 83);
        m.conv2_b = rand_array(d, 0.1, 84);
        if (own) {
            m.n_pos = 1500;
            m.pos = rand_array((size_t)1500 * d, 1.0, 85);
        }
        ws_err err;
        ws_stem *s = ws_stem_new_cpu(&m, 2, &err);
        cr_assert(s, "%s", err.msg);
        for (size_t i = 0; i < sizeof Ts / sizeof *Ts; i++) {
            const int T = Ts[i], t_out = ws_stem_out_len(T);
            float *mel = rand_array((size_t)nm * T, 1.5, 86 + i);
            float *a = malloc(sizeof(float) * t_out * d), *b = malloc(sizeof(float) * t_out * d);
            cr_assert_eq(ws_stem_run(s, mel, 1, T, 1, a, &err), 0, "%s", err.msg);
            ws_stem *f = ws_stem_new_cpu(&m, 2, &err);
            cr_assert(f, "%s", err.msg);
            cr_assert_eq(ws_stem_run(f, mel, 1, T, 1, b, &err), 0, "%s", err.msg);
            cr_assert_eq(memcmp(a, b, sizeof(float) * t_out * d), 0, "%s table, T %d: differs",
                         own ? "model" : "sinusoid", T);
            if (own) { /* and the model's rows were added, not sinusoids */
                float *c = malloc(sizeof(float) * t_out * d);
                cr_assert_eq(ws_stem_run(f, mel, 1, T, 0, c, &err), 0, "%s", err.msg);
                for (size_t k = 0; k < (size_t)t_out * d; k += 97)
                    cr_assert_float_eq(a[k] - c[k], m.pos[k], 1e-5, "T %d at %zu", T, k);
                free(c);
            }
            ws_stem_free(f);
            free(mel), free(a), free(b);
        }
        ws_stem_free(s);
        free(m.conv1_w), free(m.conv1_b), free(m.conv2_w), free(m.conv2_b), free(m.pos);
    }
}

/* --- the engine's own sgemm (src/conv/sgemm.c): each path against a float64 product, its
 * bits independent of which rows a call covers, packed B the same as B, beta's rules --- */

static void sgemm_case(int isa, int M, int N, int K, unsigned seed)
{
    ws_rng r = {seed};
    const int lda = K + 3, ldb = N + 5, ldc = N + 2;
    float *A = malloc(sizeof(float) * (size_t)M * lda), *B = malloc(sizeof(float) * (size_t)K * ldb);
    float *C = malloc(sizeof(float) * (size_t)M * ldc), *C2 = malloc(sizeof(float) * (size_t)M * ldc);
    cr_assert(A && B && C && C2);
    for (size_t i = 0; i < (size_t)M * lda; i++)
        A[i] = (float)(2.0 * ws_rng_uniform(&r) - 1.0);
    for (size_t i = 0; i < (size_t)K * ldb; i++)
        B[i] = (float)(2.0 * ws_rng_uniform(&r) - 1.0);
    for (size_t i = 0; i < (size_t)M * ldc; i++)
        C[i] = NAN; /* beta 0: never read */
    ws_sgemm_isa(isa, M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                ref += (double)A[(size_t)i * lda + k] * B[(size_t)k * ldb + j];
                mag += fabs((double)A[(size_t)i * lda + k] * B[(size_t)k * ldb + j]);
            }
            const double e = fabs(C[(size_t)i * ldc + j] - ref) / (mag + 1e-30);
            worst = e > worst ? e : worst;
        }
    cr_assert_lt(worst, 4e-7 * sqrt((double)K) + 1e-7, "isa %d M %d N %d K %d: worst error %.3g of the sum of |terms|",
                 isa, M, N, K, worst);
    /* the rows one at a time and in odd groups: the same bits */
    for (int i0 = 0; i0 < M;) {
        const int m = 1 + (i0 * 7 + 3) % 13 < M - i0 ? 1 + (i0 * 7 + 3) % 13 : M - i0;
        ws_sgemm_isa(isa, m, N, K, 1.0f, A + (size_t)i0 * lda, lda, B, ldb, 0.0f, C2 + (size_t)i0 * ldc, ldc);
        i0 += m;
    }
    for (int i = 0; i < M; i++)
        cr_assert(!memcmp(C + (size_t)i * ldc, C2 + (size_t)i * ldc, sizeof(float) * (size_t)N),
                  "isa %d M %d N %d K %d: row %d differs when computed in other groups of rows", isa, M, N, K, i);
    /* beta 1 adds; alpha scales */
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++)
            C2[(size_t)i * ldc + j] = 1.0f;
    ws_sgemm_isa(isa, M, N, K, 1.0f, A, lda, B, ldb, 1.0f, C2, ldc);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const double want = (double)C[(size_t)i * ldc + j] + 1.0;
            cr_assert_leq(fabs(C2[(size_t)i * ldc + j] - want), 1e-4 * (fabs(want) + 1),
                          "isa %d: beta 1 at (%d, %d): %g, want %g", isa, i, j, C2[(size_t)i * ldc + j], want);
        }
    free(A), free(B), free(C), free(C2);
}

Test(sgemm, every_path_matches_a_float64_product_and_rows_do_not_change_the_bits, .timeout = 120)
{
    static const int shapes[][3] = {{1, 1, 1}, {13, 33, 7}, {12, 32, 256}, {25, 70, 257}, {37, 385, 600},
                                    {6, 16, 1}, {50, 17, 513}, {3, 600, 40}};
    for (int isa = WS_ISA_SCALAR; isa <= ws_cpu_isa_have(); isa++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            sgemm_case(isa, shapes[s][0], shapes[s][1], shapes[s][2], 0x5e3d0000u + (unsigned)s);
}

/* The epilogue in the product's last K block (fused in the AVX-512 and AVX2 kernels for GELU
 * and RELU): its bits against the product alone and then the epilogue on each element, with
 * tails of rows and columns, K over several blocks, bias, add (row stride past N), beta 1. */
Test(sgemm, the_epilogue_of_a_product_gives_the_bits_of_the_steps_after_it)
{
    const int M = 29, N = 75, taps = 3, ic = 100, K = taps * ic, lda = ic + 5, ldadd = N + 3;
    ws_rng r = {0x5e3f0000u};
    const int rows_a = M + taps; /* tap t reads rows i + t */
    float *A = malloc(sizeof(float) * rows_a * lda), *B = malloc(sizeof(float) * K * N);
    float *bias = malloc(sizeof(float) * N), *add = malloc(sizeof(float) * M * ldadd);
    float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N);
    float *pk = aligned_alloc(64, (ws_sgemm_packed_floats(K, N) + 15) / 16 * 16 * sizeof(float));
    cr_assert(A && B && bias && add && C1 && C2 && pk);
    for (int i = 0; i < rows_a * lda; i++)
        A[i] = (float)(2.0 * ws_rng_uniform(&r) - 1.0);
    for (int i = 0; i < K * N; i++)
        B[i] = (float)(0.4 * ws_rng_uniform(&r) - 0.2);
    for (int j = 0; j < N; j++)
        bias[j] = (float)(ws_rng_uniform(&r) - 0.5);
    for (int i = 0; i < M * ldadd; i++)
        add[i] = (float)(ws_rng_uniform(&r) - 0.5);
    ws_sgemm_pack(K, N, B, N, pk);
    const int fused_gelu = ws_cpu_isa() != WS_ISA_SCALAR;
    static const ws_act acts[] = {WS_ACT_GELU, WS_ACT_RELU, WS_ACT_SILU, WS_ACT_NONE};
    for (int beta = 0; beta <= 1; beta++)
        for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++)
            for (int with = 0; with < 4; with++) { /* bias and add: neither, one, the other, both */
                const ws_sgemm_epi e = {with & 1 ? bias : NULL, acts[ai], with & 2 ? add : NULL, ldadd};
                for (int i = 0; i < M * N; i++)
                    C1[i] = C2[i] = (float)(i % 7) - 3.0f;
                ws_sgemm_conv(M, N, taps, ic, A, lda, lda, pk, (float)beta, C1, N, NULL);
                ws_sgemm_conv(M, N, taps, ic, A, lda, lda, pk, (float)beta, C2, N, &e);
                for (int i = 0; i < M; i++) {
                    float *row = C1 + (size_t)i * N;
                    if (acts[ai] == WS_ACT_GELU && fused_gelu)
                        for (int j = 0; j < N; j++) {
                            row[j] = ws_gelu_fma(e.bias ? row[j] + bias[j] : row[j]);
                            if (e.add)
                                row[j] += add[(size_t)i * ldadd + j];
                        }
                    else
                        ws_bias_act_rows(row, 1, N, N, e.bias, acts[ai], e.add ? add + (size_t)i * ldadd : NULL);
                }
                for (int i = 0; i < M * N; i++)
                    cr_assert(!memcmp(&C1[i], &C2[i], sizeof(float)),
                              "%s, act %d, bias %d, add %d, beta %d: (%d, %d) is %.9g, want %.9g", ws_blas_name(),
                              (int)acts[ai], with & 1, with >> 1, beta, i / N, i % N, C2[i], C1[i]);
            }
    free(A), free(B), free(bias), free(add), free(C1), free(C2), free(pk);
}

Test(conv, the_vector_gelu_gives_the_bits_of_ws_gelu_fma)
{
    /* through the fused epilogue of a one-term product (x * 1 = x exactly), on any x */
    if (ws_cpu_isa() == WS_ISA_SCALAR)
        cr_skip_test("the plain-C path has no fused epilogue (WS_CPU_ISA=scalar)");
    enum { M = 64, N = 64 };
    float *x = rand_array(M, 1.0, 11), *one = malloc(sizeof(float) * N), *bias = rand_array(N, 12.0, 12);
    float *pk = aligned_alloc(64, (ws_sgemm_packed_floats(1, N) + 15) / 16 * 16 * sizeof(float));
    float *C = malloc(sizeof(float) * M * N);
    cr_assert(one && pk && C);
    x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = 0.0f, x[4] = -0.0f, x[5] = 1e-30f;
    for (int j = 0; j < N; j++)
        one[j] = 1.0f;
    bias[0] = 0.0f, bias[1] = 90.0f, bias[2] = -90.0f, bias[3] = -1e-38f;
    ws_sgemm_pack(1, N, one, N, pk);
    const ws_sgemm_epi e = {bias, WS_ACT_GELU, NULL, 0};
    ws_sgemm_conv(M, N, 1, 1, x, 1, 0, pk, 0.0f, C, N, &e);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            const float want = ws_gelu_fma(x[i] + bias[j]), got = C[(size_t)i * N + j];
            cr_assert(!memcmp(&want, &got, sizeof got) || (isnan(want) && isnan(got)),
                      "%s: gelu(%.9g) is %.9g, want %.9g", ws_blas_name(), x[i] + bias[j], got, want);
        }
    free(x), free(one), free(bias), free(pk), free(C);
}

Test(sgemm, packed_b_gives_the_bits_of_b)
{
    const int M = 29, N = 75, K = 300;
    ws_rng r = {0x5e3e0000u};
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N);
    float *C1 = malloc(sizeof(float) * M * N), *C2 = malloc(sizeof(float) * M * N);
    float *pk = aligned_alloc(64, (ws_sgemm_packed_floats(K, N) + 15) / 16 * 16 * sizeof(float));
    cr_assert(A && B && C1 && C2 && pk);
    for (int i = 0; i < M * K; i++)
        A[i] = (float)(2.0 * ws_rng_uniform(&r) - 1.0);
    for (int i = 0; i < K * N; i++)
        B[i] = (float)(2.0 * ws_rng_uniform(&r) - 1.0);
    ws_sgemm(M, N, K, 1.0f, A, K, B, N, 0.0f, C1, N);
    ws_sgemm_pack(K, N, B, N, pk);
    ws_sgemm_conv(M, N, 1, K, A, K, 0, pk, 0.0f, C2, N, NULL); /* one tap: the plain product */
    cr_assert(!memcmp(C1, C2, sizeof(float) * M * N), "packed B, other bits");
    free(A), free(B), free(C1), free(C2), free(pk);
}

/* --- minimal filtering (conv.c): K 3, stride 1 or 2, rows in groups ------------------ */

/* an engine plan (NCL f32 x, NLC f32 y, pad 1 each side, GELU, bias, add) */
static ws_conv *mf_plan(int ci, int co, int stride, int threads, const float *w, const float *b)
{
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = ci, .c_out = co, .groups = 1, .k = 3,
                      .stride = stride, .dilation = 1, .pad_l = 1, .pad_r = 1,
                      .x_layout = WS_NCL, .y_layout = WS_NLC, .act = WS_ACT_GELU};
    ws_err err;
    ws_conv *p = ws_conv_new(&d, w, b, threads, &err);
    cr_assert(p, "%s", err.msg);
    return p;
}

/* Both strides, channels past one K block (300: the sgemm's blocks of 256 cut the taps),
 * T_out with and without a last partial group: against the float64 oracle, and against
 * the same plan with the taps summed directly (WS_CPU_WINOGRAD=0). */
Test(minfilt, matches_the_oracle_and_the_direct_sums, .timeout = 120)
{
    static const int shapes[][4] = { /* c_in, c_out, stride, t_in */
        {32, 32, 1, 77}, {80, 96, 1, 300}, {300, 64, 1, 41}, {64, 48, 2, 300},
        {300, 40, 2, 58}, {384, 384, 2, 161}, {48, 33, 2, 7}, {40, 64, 1, 2}};
    double worst_g = 0, worst_d = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int ci = shapes[i][0], co = shapes[i][1], s = shapes[i][2], T = shapes[i][3];
        const int t_out = (T + 2 - 3) / s + 1;
        float *w = rand_array((size_t)co * ci * 3, 1.0 / sqrt(ci * 3), 101 + i);
        float *b = rand_array(co, 0.1, 111 + i), *x = rand_array((size_t)2 * ci * T, 1.5, 121 + i);
        float *add = rand_array((size_t)t_out * co, 0.5, 131 + i);
        float *y = malloc(sizeof(float) * 2 * t_out * co), *yd = malloc(sizeof(float) * 2 * t_out * co);
        ws_conv *p = mf_plan(ci, co, s, 2, w, b);
        cr_assert_eq(ws_conv_row_group(p), 2, "shape %zu: no groups", i);
        ws_conv_args a = {.n = 2, .t_in = T, .x = x, .y = y, .add = add, .add_batch_stride = 0};
        ws_err err;
        cr_assert_eq(ws_conv_run(p, &a, &err), 0, "%s", err.msg);
        setenv("WS_CPU_WINOGRAD", "0", 1);
        ws_conv *pd = mf_plan(ci, co, s, 2, w, b);
        unsetenv("WS_CPU_WINOGRAD");
        cr_assert_eq(ws_conv_row_group(pd), 1, "WS_CPU_WINOGRAD=0 kept the groups");
        a.y = yd;
        cr_assert_eq(ws_conv_run(pd, &a, &err), 0, "%s", err.msg);
        double *want = malloc(sizeof(double) * t_out * co), *xd = malloc(sizeof(double) * ci * T);
        double *col = malloc(sizeof(double) * co * t_out);
        for (int n = 0; n < 2; n++) {
            for (size_t k = 0; k < (size_t)ci * T; k++)
                xd[k] = x[(size_t)n * ci * T + k];
            oracle_conv1d(xd, ci, T, w, b, co, 3, s, 1, 1, col);
            for (int t = 0; t < t_out; t++)
                for (int o = 0; o < co; o++)
                    want[(size_t)t * co + o] = col[(size_t)o * t_out + t] + add[(size_t)t * co + o];
            char name[96];
            snprintf(name, sizeof name, "c_in %d c_out %d stride %d t_in %d item %d", ci, co, s, T, n);
            const float *got = y + (size_t)n * t_out * co, *direct = yd + (size_t)n * t_out * co;
            const double eg = rel_l2(got, want, (size_t)t_out * co), ed = rel_l2(direct, want, (size_t)t_out * co);
            worst_g = eg > worst_g ? eg : worst_g;
            worst_d = ed > worst_d ? ed : worst_d;
            cr_assert_leq(eg, 1e-5, "%s", name);
            assert_close(name, got, want, (size_t)t_out * co, 1e-4, 0);
            assert_close(name, direct, want, (size_t)t_out * co, 1e-4, 0);
            int same = 0; /* the groups' rows are not the direct sums' bits (the test would
                           * pass on a plan that never took them) */
            for (size_t k = 0; k < (size_t)(t_out - t_out % 2) * co; k++)
                same += got[k] == direct[k];
            if (t_out >= 6)
                cr_assert_lt(same, (t_out - t_out % 2) * co, "%s: direct bits", name);
        }
        ws_conv_free(p), ws_conv_free(pd);
        free(w), free(b), free(x), free(add), free(y), free(yd), free(want), free(xd), free(col);
    }    fprintf(stderr, "minimal filtering: worst rel L2 %.2e against float64 (direct sums %.2e)\n", worst_g,
            worst_d);
}

/* A row has the bits of its place in its group whatever rows a call covers (ranges that
 * cut groups at either end, one row, the rows past the last whole group), on 1 to 7
 * threads and with 1 or 5 items in a call (their blocks differ). */
Test(minfilt, a_row_has_the_same_bits_whatever_rows_a_call_covers, .timeout = 120)
{
    for (int s = 1; s <= 2; s++) {
        const int ci = 64, co = 96, T = 1201, t_out = (T - 1) / s + 1, N = 5;
        float *w = rand_array((size_t)co * ci * 3, 1.0 / sqrt(ci * 3), 141 + s);
        float *b = rand_array(co, 0.1, 143 + s), *x = rand_array((size_t)N * ci * T, 1.5, 145 + s);
        const size_t ny = (size_t)t_out * co;
        float *ref = malloc(sizeof(float) * N * ny), *got = malloc(sizeof(float) * N * ny);
        ws_conv *p1 = mf_plan(ci, co, s, 1, w, b);
        ws_err err;
        ws_conv_args a = {.n = N, .t_in = T, .x = x, .y = ref};
        cr_assert_eq(ws_conv_run(p1, &a, &err), 0, "%s", err.msg);
        static const int threads[] = {1, 2, 3, 7};
        for (size_t ti = 0; ti < 4; ti++) {
            ws_conv *p = mf_plan(ci, co, s, threads[ti], w, b);
            for (int n = 0; n < N; n++) { /* item n alone */
                ws_conv_args a1 = {.n = 1, .t_in = T, .x = x + (size_t)n * ci * T, .y = got};
                cr_assert_eq(ws_conv_run(p, &a1, &err), 0, "%s", err.msg);
                cr_assert(!memcmp(got, ref + n * ny, ny * sizeof(float)),
                          "stride %d, %d threads: item %d alone differs from 5 items", s, threads[ti], n);
            }
            const int ranges[][2] = {{0, 1}, {1, 1}, {2, 1}, {1, 500}, {0, 257}, {5, 600},
                                     {t_out - 1, 1}, {t_out - 2, 2}, {t_out - 5, 5},
                                     {254, 3}, {255, 1}, {100, t_out - 100}};
            for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
                const int t0 = ranges[r][0], nt = ranges[r][1] < t_out - t0 ? ranges[r][1] : t_out - t0;
                for (size_t k = 0; k < ny; k++)
                    got[k] = NAN;
                ws_conv_args a1 = {.n = 1, .t_in = T, .x = x, .y = got};
                cr_assert_eq(ws_conv_run_rows(p, &a1, t0, nt, &err), 0, "%s", err.msg);
                cr_assert(!memcmp(got + (size_t)t0 * co, ref + (size_t)t0 * co, (size_t)nt * co * sizeof(float)),
                          "stride %d, %d threads: rows [%d, %d) alone differ", s, threads[ti], t0, t0 + nt);
                for (size_t k = 0; k < ny; k++) /* and nothing else written */
                    cr_assert(isnan(got[k]) || (k >= (size_t)t0 * co && k < (size_t)(t0 + nt) * co),
                              "stride %d: rows [%d, %d) wrote element %zu", s, t0, t0 + nt, k);
            }
            ws_conv_free(p);
        }
        ws_conv_free(p1);
        free(w), free(b), free(x), free(ref), free(got);
    }
}

/* Rows whose groups read equal inputs (a constant run, as a padded window's tail) have
 * equal bits at every place in their groups: what the stem's copies rely on. c_in 300,
 * so the sums cross the sgemm's K blocks. */
Test(minfilt, rows_of_equal_inputs_have_equal_bits, .timeout = 60)
{
    for (int s = 1; s <= 2; s++) {
        const int ci = 300, co = 64, T = 400, t_out = (T - 1) / s + 1, tc = 100;
        float *w = rand_array((size_t)co * ci * 3, 1.0 / sqrt(ci * 3), 151 + s);
        float *b = rand_array(co, 0.1, 153 + s), *x = rand_array((size_t)ci * T, 1.5, 155 + s);
        for (int i = 0; i < ci; i++)
            for (int t = tc; t < T; t++)
                x[(size_t)i * T + t] = x[(size_t)i * T + tc];
        float *y = malloc(sizeof(float) * t_out * co);
        ws_conv *p = mf_plan(ci, co, s, 2, w, b);
        const int R = ws_conv_row_group(p);
        ws_conv_args a = {.n = 1, .t_in = T, .x = x, .y = y};
        ws_err err;
        cr_assert_eq(ws_conv_run(p, &a, &err), 0, "%s", err.msg);
        /* rows whose inputs s*t - 1 .. s*t + 1 are all >= tc and < T, cut to whole groups */
        const int lo = ((tc + 1 + s - 1) / s + R - 1) / R * R, hi = ((T - 2) / s + 1) / R * R - 1;
        cr_assert_gt(hi - lo, 2 * R);
        for (int t = lo + 1; t <= hi; t++)
            cr_assert(!memcmp(y + (size_t)t * co, y + (size_t)lo * co, sizeof(float) * co),
                      "stride %d: row %d (place %d of %d) differs from row %d", s, t, t % R, R, lo);
        ws_conv_free(p);
        free(w), free(b), free(x), free(y);
    }
}

/* An output is computed from its own input rows alone: a frame of Inf, NaN or 1e30 leaves
 * every output that does not read it finite and within the bounds of the float64 oracle
 * (minimal filtering's terms that cancel are a row's own inputs, never a neighbour's). */
Test(minfilt, an_input_row_reaches_only_the_outputs_that_read_it, .timeout = 60)
{
    const float bad[] = {INFINITY, -INFINITY, NAN, 1e30f, -3e37f};
    for (int s = 1; s <= 2; s++)
        for (size_t v = 0; v < sizeof bad / sizeof *bad; v++)
            for (int f = 6; f <= 9; f++) {
                const int ci = 32, co = 40, T = 40, t_out = (T - 1) / s + 1;
                float *w = rand_array((size_t)co * ci * 3, 1.0 / sqrt(ci * 3), 161 + s);
                float *b = rand_array(co, 0.1, 163 + s), *x = rand_array((size_t)ci * T, 1.5, 165 + s);
                for (int i = 0; i < ci; i++)
                    x[(size_t)i * T + f] = bad[v];
                float *y = malloc(sizeof(float) * t_out * co);
                ws_conv *p = mf_plan(ci, co, s, 1, w, b);
                cr_assert_eq(ws_conv_row_group(p), 2);
                ws_conv_args a = {.n = 1, .t_in = T, .x = x, .y = y};
                ws_err err;
                cr_assert_eq(ws_conv_run(p, &a, &err), 0, "%s", err.msg);
                double *xd = malloc(sizeof(double) * ci * T), *col = malloc(sizeof(double) * co * t_out);
                for (size_t k = 0; k < (size_t)ci * T; k++)
                    xd[k] = x[k];
                oracle_conv1d(xd, ci, T, w, b, co, 3, s, 1, 1, col);
                for (int t = 0; t < t_out; t++) {
                    if (s * t - 1 <= f && f <= s * t + 1)
                        continue; /* reads the frame */
                    for (int o = 0; o < co; o++) {
                        const double got = y[(size_t)t * co + o], want = col[(size_t)o * t_out + t];
                        cr_assert(isfinite(got) && fabs(got - want) <= 1e-4,
                                  "stride %d, frame %d = %g: output row %d (frames %d..%d), channel %d: "
                                  "%g, want %g", s, f, (double)bad[v], t, s * t - 1, s * t + 1, o, got,
                                  want);
                    }
                }
                ws_conv_free(p);
                free(w), free(b), free(x), free(y), free(xd), free(col);
            }
}

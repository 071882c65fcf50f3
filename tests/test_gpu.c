/* test_gpu.c - the GPU stem (src/cuda/gpu_stem.c: the stem's two convs as plans of the conv
 * engine) against the float64 oracle (tests/oracle.c) and against the CPU stem, for every
 * precision, on the tiny (80 -> 384) and large-v3 (128 -> 1280) shapes, odd lengths and 1
 * to 64 windows a launch; the float32 sums whole and in parts; a window's bits in any launch
 * with the sums whole (ws_gpu_set_fixed, what the batches run).
 *
 * Bounds (docs/spec.md, "Accuracy"): fp32 rel L2 <= 1e-5 and max |err| <= 1e-4;
 * tf32 rel L2 <= 2e-3; bf16 / fp16 rel L2 <= 1e-2 (inputs and weights
 * rounded to the type, products exact, float32 accumulation). Outputs are
 * poisoned with NaN on the host and on the device before each run, so an
 * element no kernel writes fails. Windows hold distinct data, so a mix-up of
 * windows fails too. Without a driver or device every test that needs one skips, saying
 * why (the check of which descriptor pairs the GPU stem takes needs none).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whisper/stem.h"
#include "cuda/driver.h"
#include "cuda/ptx/gelu_ptx.h"
#include "cuda/gpu_conv_internal.h"
#include "cuda/gpu_internal.h"
#include "cuda/gpu_runtime.h"
#include "helpers.h"
#include "whisper/model.h"
#include "oracle.h"

static const double REL_L2_BOUND[] = { 1e-5, 2e-3, 1e-2, 1e-2 }; /* by ws_precision */
#define FP32_MAX_ABS 1e-4

/* The stem on the GPU, or skip when this machine has no driver or no device. */
static ws_stem *gpu_or_skip(const ws_model *m, ws_precision p)
{
    ws_err e = { "" };
    ws_stem *g = ws_stem_new_gpu(m, p, 0, &e);
    if (!g && (strstr(e.msg, "no CUDA driver") || strstr(e.msg, "no CUDA device") ||
               strstr(e.msg, "CUDA_ERROR_NO_DEVICE")))
        cr_skip_test("no CUDA driver/device: %s", e.msg);
    cr_assert_not_null(g, "ws_stem_new_gpu(%s): %s", ws_precision_name(p), e.msg);
    ws_gpu_set_poison(ws_stem_gpu(g), 1);
    return g;
}

static float *random_mel(int n_win, int n_mels, int n_frames, uint64_t seed)
{
    size_t n = (size_t)n_win * n_mels * n_frames;
    float *m = malloc(n * sizeof *m);
    cr_assert_not_null(m);
    ws_rng r = { seed };
    for (size_t i = 0; i < n; i++)   /* the range of a normalised log-Mel */
        m[i] = (float)(ws_rng_uniform(&r) * 2.5 - 1.0);
    return m;
}

static float *nan_buffer(size_t n)
{
    float *p = malloc(n * sizeof *p);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

/* One case: n_win windows of n_frames through every precision; the oracle
 * checks the windows in `check` (first, middle, last), the CPU stem all. */
static void run_case(int n_mels, int d, int n_win, int n_frames, int add_pos, int oracle_all)
{
    ws_model m;
    ws_err e;
    cr_assert_eq(ws_model_init_random(&m, n_mels, d, 1234 + (uint64_t)d, 0, &e), 0, "%s", e.msg);
    const int T2 = ws_stem_out_len(n_frames);
    const size_t per_in = (size_t)n_mels * n_frames, per_out = (size_t)T2 * d;
    float *mel = random_mel(n_win, n_mels, n_frames, 99 + (uint64_t)n_frames);
    float *owned = NULL;
    const float *pos = NULL;
    if (add_pos) {
        pos = ws_pos_table(&m, T2, &owned, &e);
        cr_assert_not_null(pos, "%s", e.msg);
    }
    int check[3] = { 0, n_win / 2, n_win - 1 };
    double *want[3] = { NULL, NULL, NULL };
    for (int c = 0; c < 3; c++) {
        if (c && check[c] == check[c - 1])
            continue;
        if (!oracle_all && c == 1)
            continue;
        int t2 = 0;
        want[c] = oracle_stem(mel + check[c] * per_in, n_mels, n_frames, m.conv1_w, m.conv1_b,
                              m.conv2_w, m.conv2_b, d, pos, &t2);
        cr_assert_eq(t2, T2);
    }
    /* the CPU stem, every window */
    float *cpu = nan_buffer(per_out * n_win);
    ws_stem *st = ws_stem_new_cpu(&m, 1, &e);
    cr_assert_not_null(st, "%s", e.msg);
    cr_assert_eq(ws_stem_run(st, mel, n_win, n_frames, add_pos, cpu, &e), 0, "%s", e.msg);
    ws_stem_free(st);

    float *out = nan_buffer(per_out * n_win);
    for (int p = 0; p < 4; p++) {
        ws_stem *g = gpu_or_skip(&m, (ws_precision)p);
        for (size_t i = 0; i < per_out * n_win; i++)
            out[i] = NAN;
        cr_assert_eq(ws_stem_run(g, mel, n_win, n_frames, add_pos, out, &e), 0, "%s", e.msg);
        char name[160];
        for (int c = 0; c < 3; c++) {
            if (!want[c])
                continue;
            const float *got = out + check[c] * per_out;
            double rl2 = rel_l2(got, want[c], per_out), mx = max_abs_err(got, want[c], per_out);
            snprintf(name, sizeof name, "%s %d->%d, %d windows x %d frames%s, window %d vs oracle",
                     ws_precision_name((ws_precision)p), n_mels, d, n_win, n_frames,
                     add_pos ? " + pos" : "", check[c]);
            cr_assert(rl2 <= REL_L2_BOUND[p], "%s: rel L2 %.3g > %.3g (max |err| %.3g)", name, rl2,
                      REL_L2_BOUND[p], mx);
            if (p == WS_PREC_FP32)
                assert_close(name, got, want[c], per_out, FP32_MAX_ABS, 0);
        }
        /* every window against the CPU stem (as double) */
        double *cw = malloc(per_out * sizeof *cw);
        cr_assert_not_null(cw);
        for (int w = 0; w < n_win; w++) {
            for (size_t i = 0; i < per_out; i++)
                cw[i] = cpu[w * per_out + i];
            const float *got = out + w * per_out;
            double rl2 = rel_l2(got, cw, per_out);
            snprintf(name, sizeof name, "%s %d->%d, %d windows x %d frames, window %d vs CPU stem",
                     ws_precision_name((ws_precision)p), n_mels, d, n_win, n_frames, w);
            cr_assert(rl2 <= REL_L2_BOUND[p], "%s: rel L2 %.3g > %.3g", name, rl2, REL_L2_BOUND[p]);
            if (p == WS_PREC_FP32)
                assert_close(name, got, cw, per_out, FP32_MAX_ABS, 0);
        }
        free(cw);
        ws_stem_free(g);
    }
    for (int c = 0; c < 3; c++)
        free(want[c]);
    free(out);
    free(cpu);
    free(mel);
    free(owned);
    ws_model_free(&m);
}

Test(gpu_stem, tiny_one_frame, .timeout = 120) { run_case(80, 384, 1, 1, 0, 1); }
Test(gpu_stem, tiny_two_frames, .timeout = 120) { run_case(80, 384, 2, 2, 0, 1); }
Test(gpu_stem, tiny_three_frames_five_windows, .timeout = 120) { run_case(80, 384, 5, 3, 0, 1); }
Test(gpu_stem, tiny_four_frames_with_pos, .timeout = 120) { run_case(80, 384, 3, 4, 1, 1); }
Test(gpu_stem, tiny_4097_frames_three_windows, .timeout = 300) { run_case(80, 384, 3, 4097, 0, 0); }
Test(gpu_stem, tiny_3000_frames_one_window_with_pos, .timeout = 300) { run_case(80, 384, 1, 3000, 1, 1); }
Test(gpu_stem, tiny_3000_frames_64_windows_with_pos, .timeout = 600) { run_case(80, 384, 64, 3000, 1, 0); }
Test(gpu_stem, large_v3_one_frame, .timeout = 120) { run_case(128, 1280, 1, 1, 0, 1); }
Test(gpu_stem, large_v3_three_frames_with_pos, .timeout = 120) { run_case(128, 1280, 4, 3, 1, 1); }
Test(gpu_stem, large_v3_64_windows_of_65_frames, .timeout = 300) { run_case(128, 1280, 64, 65, 0, 1); }
Test(gpu_stem, large_v3_1001_frames_two_windows, .timeout = 600) { run_case(128, 1280, 2, 1001, 1, 0); }

/* The engine sums a float32 call too small to fill the GPU in parts (the FFMA GEMM's _split
 * and _fin entries); fixed keeps every sum whole. Both against the oracle, in every precision
 * (fixed changes nothing but float32's sums): with fixed no call may take the parts. */
Test(gpu_stem, whole_sums_and_sums_in_parts_agree, .timeout = 300)
{
    ws_model m;
    ws_err e;
    cr_assert_eq(ws_model_init_random(&m, 80, 384, 7, 0, &e), 0, "%s", e.msg);
    const int n_win = 4, T = 777, T2 = ws_stem_out_len(T);
    float *mel = random_mel(n_win, 80, T, 5);
    int t2 = 0;
    double *want = oracle_stem(mel + 3 * 80 * T, 80, T, m.conv1_w, m.conv1_b, m.conv2_w, m.conv2_b,
                               384, NULL, &t2);
    float *out = nan_buffer((size_t)n_win * T2 * 384);
    for (int p = 0; p < 4; p++)
        for (int fixed = 0; fixed < 2; fixed++) {
            ws_stem *g = gpu_or_skip(&m, (ws_precision)p);
            ws_gpu_pair *gp = ws_stem_gpu(g);
            ws_gpu_set_fixed(gp, fixed);
            cr_assert_eq(ws_stem_run(g, mel, n_win, T, 0, out, &e), 0, "%s", e.msg);
            const float *got = out + (size_t)3 * T2 * 384;
            double rl2 = rel_l2(got, want, (size_t)T2 * 384);
            const unsigned long parts = ws_gpu_conv_split_calls(ws_gpu_pair_plan(gp, 0, 0)) +
                                        ws_gpu_conv_split_calls(ws_gpu_pair_plan(gp, 0, 1));
            cr_assert(rl2 <= REL_L2_BOUND[p], "%s, sums %s: rel L2 %.3g",
                      ws_precision_name((ws_precision)p), fixed ? "whole" : "in parts", rl2);
            if (p == WS_PREC_FP32)
                assert_close("fp32 stem", got, want, (size_t)T2 * 384, FP32_MAX_ABS, 0);
            cr_assert(!fixed || parts == 0, "%s: %lu calls summed in parts with fixed on",
                      ws_precision_name((ws_precision)p), parts);
            cr_log_info("%s, fixed %d: %lu calls summed in parts", ws_precision_name((ws_precision)p),
                        fixed, parts);
            ws_stem_free(g);
        }
    free(want);
    free(out);
    free(mel);
    ws_model_free(&m);
}

/* With fixed on, a window gets the same bits alone and in a launch of five (the batches of
 * gpu_batch.h group inputs as they come); the windows hold distinct data. */
Test(gpu_stem, fixed_gives_a_window_the_same_bits_in_any_launch, .timeout = 300)
{
    ws_model m;
    ws_err e;
    cr_assert_eq(ws_model_init_random(&m, 80, 384, 9, 0, &e), 0, "%s", e.msg);
    const int n_win = 5, T = 3000, T2 = ws_stem_out_len(T);
    const size_t per_in = (size_t)80 * T, per_out = (size_t)T2 * 384;
    float *mel = random_mel(n_win, 80, T, 21);
    float *all = nan_buffer(per_out * n_win), *one = nan_buffer(per_out);
    for (int p = 0; p < 4; p++) {
        ws_stem *g = gpu_or_skip(&m, (ws_precision)p);
        ws_gpu_set_fixed(ws_stem_gpu(g), 1);
        cr_assert_eq(ws_stem_run(g, mel, n_win, T, 1, all, &e), 0, "%s", e.msg);
        for (int w = 0; w < n_win; w += 2) {
            cr_assert_eq(ws_stem_run(g, mel + w * per_in, 1, T, 1, one, &e), 0, "%s", e.msg);
            cr_assert_eq(memcmp(one, all + w * per_out, per_out * sizeof *one), 0,
                         "%s: window %d alone differs from window %d of %d",
                         ws_precision_name((ws_precision)p), w, w, n_win);
        }
        ws_stem_free(g);
    }
    free(all);
    free(one);
    free(mel);
    ws_model_free(&m);
}

/* Which pairs the GPU stem takes: the stem's own descriptors, every other is refused naming
 * the conv and the field (no GPU needed). */
Test(gpu_stem, other_descriptor_pairs_are_refused_naming_the_field)
{
    static const struct {
        int which;      /* 0: conv 1, 1: conv 2 */
        const char *field;
        int value;
        const char *want;
    } cases[] = {
        { 0, "k", 5, "conv 1 with k 5" },          { 1, "stride", 1, "conv 2 with stride 1" },
        { 0, "dilation", 2, "conv 1 with dilation 2" }, { 1, "pad_l", 2, "conv 2 with pad_l 2" },
        { 0, "act", WS_ACT_RELU, "conv 1 with act RELU" }, { 1, "pre", WS_ACT_RELU, "conv 2 with pre RELU" },
        { 0, "op", WS_CONV_BWD, "conv 1 with op BWD" }, { 0, "x_layout", WS_NLC, "conv 1 with x_layout NLC" },
        { 1, "y_type", WS_BF16, "conv 2 with y_type bf16" },
    };
    ws_precision p;
    ws_err e = { "" };
    for (int q = 0; q < 4; q++) {
        ws_conv_desc pair[2];
        ws_stem_descs(80, 384, (ws_precision)q, pair);
        cr_assert_eq(ws_gpu_check_pair(pair, &p, &e), 0, "%s", e.msg);
        cr_assert_eq((int)p, q);
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ws_conv_desc pair[2];
        ws_stem_descs(80, 384, WS_PREC_FP32, pair);
        ws_conv_desc *c = &pair[cases[i].which];
        const char *f = cases[i].field;
        int v = cases[i].value;
        if (!strcmp(f, "k")) { c->k = v; c->pad_l = c->pad_r = 2; } /* still a valid descriptor */
        else if (!strcmp(f, "stride")) c->stride = v;
        else if (!strcmp(f, "dilation")) c->dilation = v;
        else if (!strcmp(f, "pad_l")) c->pad_l = v;
        else if (!strcmp(f, "act")) c->act = (ws_act)v;
        else if (!strcmp(f, "pre")) c->pre = (ws_act)v;
        else if (!strcmp(f, "op")) c->op = (ws_conv_op)v;
        else if (!strcmp(f, "x_layout")) c->x_layout = (ws_layout)v;
        else if (!strcmp(f, "y_type")) c->y_type = (ws_dtype)v;
        e.msg[0] = '\0';
        cr_assert_eq(ws_gpu_check_pair(pair, &p, &e), -1, "%s %d was taken", f, v);
        cr_assert(strstr(e.msg, cases[i].want), "%s %d: \"%s\" does not say \"%s\"", f, v, e.msg,
                  cases[i].want);
        /* ws_gpu_new refuses it before it opens a device */
        cr_assert_null(ws_gpu_new(0, pair, NULL, NULL, NULL, NULL, &e));
        cr_assert(strstr(e.msg, cases[i].want), "ws_gpu_new: %s", e.msg);
    }
    /* conv 2 must read conv 1's output */
    ws_conv_desc pair[2];
    ws_stem_descs(80, 384, WS_PREC_BF16, pair);
    pair[1].c_in = 128;
    cr_assert_eq(ws_gpu_check_pair(pair, &p, &e), -1);
    cr_assert(strstr(e.msg, "c_in 128"), "%s", e.msg);
    /* an intermediate stored in another type than the math's */
    ws_stem_descs(80, 384, WS_PREC_BF16, pair);
    pair[0].y_type = pair[1].x_type = WS_F16;
    cr_assert_eq(ws_gpu_check_pair(pair, &p, &e), -1);
    cr_assert(strstr(e.msg, "conv 1 with y_type f16"), "%s", e.msg);
}

Test(gpu_gelu, gelu_ptx_matches_double)
{
    ws_model m;
    ws_err e;
    cr_assert_eq(ws_model_init_random(&m, 80, 384, 1, 0, &e), 0, "%s", e.msg);
    ws_stem *g = gpu_or_skip(&m, WS_PREC_FP32);
    const int n = 2000001 + 12;
    float *x = malloc((size_t)n * sizeof *x), *y = nan_buffer((size_t)n);
    cr_assert_not_null(x);
    for (int i = 0; i < 2000001; i++)
        x[i] = (float)((i - 1000000) * 1e-5);   /* [-10, 10], step 1e-5 */
    const float wide[12] = { -3e38f, -1e6f, -100.f, -20.f, -13.f, 13.f, 20.f, 100.f, 1e6f, 3e38f,
                             1e-30f, -1e-30f };
    memcpy(x + 2000001, wide, sizeof wide);
    cr_assert_eq(ws_gpu_gelu(ws_stem_gpu(g), x, y, n, &e), 0, "%s", e.msg);
    double worst = 0, wx = 0, maxe = 0;
    for (int i = 0; i < n; i++) {
        double want = oracle_gelu((double)x[i]);
        double err = fabs((double)y[i] - want);
        if (isnan(err))
            err = INFINITY;
        if (err > maxe && fabs(x[i]) <= 10)
            maxe = err;
        double lim = WS_GELU_PTX_MAX_ABS + 2.4e-7 * fabs((double)x[i]);
        if (err - lim > worst) {
            worst = err - lim;
            wx = x[i];
        }
    }
    cr_assert_eq(worst, 0, "PTX gelu exceeds its bound by %.3g at x = %.9g", worst, wx);
    cr_log_info("PTX gelu max |err| on [-10, 10]: %.3g", maxe);
    free(x);
    free(y);
    ws_stem_free(g);
    ws_model_free(&m);
}

Test(gpu_driver, module_load_error_names_call_and_writes_ptx)
{
    ws_err e = { "" };
    ws_gpu *g = ws_gpu_open(0, &e); /* the driver, device 0, its context made current */
    if (!g)
        cr_skip_test("no CUDA driver/device: %s", e.msg);
    ws_cu cu = g->cu;
    const char *bad = ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n"
                      "\tbogus.instruction %r0;\n\tret;\n}\n";
    wscu_module mod = NULL;
    int rc = ws_cu_load_module(&cu, bad, "bad_kernel", &mod, NULL, 0, &e);
    cr_assert_eq(rc, -1);
    cr_assert(strstr(e.msg, "cuModuleLoadDataEx(bad_kernel) failed"), "%s", e.msg);
    cr_assert(strstr(e.msg, "CUDA_ERROR_"), "%s", e.msg);
    const char *path = strstr(e.msg, "PTX and logs in ");
    cr_assert_not_null(path, "%s", e.msg);
    path += strlen("PTX and logs in ");
    size_t len = 0;
    char *t = read_file(path, &len);
    cr_assert_not_null(t, "cannot read %s", path);
    cr_assert(strstr(t, "    6  \tbogus.instruction"), "numbered PTX missing:\n%s", t);
    free(t);
    remove(path);
    /* a failing ordinary call names itself */
    wscu_devptr p = 0;
    wscu_result r = cu.MemAlloc(&p, (size_t)1 << 60);
    cr_assert_neq(r, 0);
    ws_cu_fail(&cu, r, "cuMemAlloc(&p, 1 << 60)", "x.c", 1, &e);
    cr_assert(strstr(e.msg, "cuMemAlloc(&p, 1 << 60) failed: CUDA_ERROR_OUT_OF_MEMORY"), "%s", e.msg);
    /* through the runtime's module cache: the same message, and nothing cached */
    rc = ws_gpu_module(g, "bad_kernel", bad, &mod, &e);
    cr_assert_eq(rc, -1);
    cr_assert(strstr(e.msg, "cuModuleLoadDataEx(bad_kernel) failed"), "%s", e.msg);
    path = strstr(e.msg, "PTX and logs in ");
    if (path)
        remove(path + strlen("PTX and logs in "));
    ws_gpu_close(g);
}

Test(gpu_driver, reports_device_and_kernels)
{
    ws_model m;
    ws_err e;
    cr_assert_eq(ws_model_init_random(&m, 80, 384, 1, 0, &e), 0, "%s", e.msg);
    ws_stem *g = gpu_or_skip(&m, WS_PREC_BF16);
    cr_assert(strstr(ws_gpu_device_name(ws_stem_gpu(g)), "sm_"), "%s", ws_gpu_device_name(ws_stem_gpu(g)));
    /* both plans' kernels, a direct and a GEMM module each, none with local memory (spills) */
    const char *rep = ws_gpu_kernel_report(ws_stem_gpu(g));
    cr_assert(strstr(rep, "conv1 (80 -> 384, stride 1):") && strstr(rep, "conv2 (384 -> 384, stride 2):"),
              "%s", rep);
    int kernels = 0, no_local = 0, gemm = 0;
    for (const char *l = rep; *l;) {
        const char *nl = strchr(l, '\n');
        const size_t len = nl ? (size_t)(nl - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), l);
        if (strstr(line, " local bytes")) {
            kernels++;
            no_local += strstr(line, "regs    0 local bytes") != NULL;
            gemm += strstr(line, "gemm") != NULL;
        }
        l += len + (nl != NULL);
    }
    cr_assert_geq(kernels, 4, "%s", rep);
    cr_assert_geq(gemm, 2, "no GEMM kernel:\n%s", rep);
    cr_assert_eq(no_local, kernels, "a kernel uses local memory:\n%s", rep);
    ws_stem_free(g);
    ws_model_free(&m);
}

/* One window leaves most multiprocessors idle, so the engine sums fp32 calls in parts and
 * adds the parts in a fixed order (gemm_parts in gpu_conv.c): repeated runs give the same
 * bits. */
Test(gpu_stem, split_k_fp32_is_bitwise_repeatable, .timeout = 120)
{
    ws_model m;
    ws_err e;
    cr_assert_eq(ws_model_init_random(&m, 80, 384, 3, 0, &e), 0, "%s", e.msg);
    ws_stem *g = gpu_or_skip(&m, WS_PREC_FP32);
    const int T = 3000, T2 = ws_stem_out_len(T);
    float *mel = random_mel(1, 80, T, 11);
    float *a = nan_buffer((size_t)T2 * 384), *b = nan_buffer((size_t)T2 * 384);
    for (int rep = 0; rep < 3; rep++) {
        cr_assert_eq(ws_stem_run(g, mel, 1, T, 1, rep ? b : a, &e), 0, "%s", e.msg);
        if (rep)
            cr_assert_eq(memcmp(a, b, (size_t)T2 * 384 * sizeof *a), 0, "run %d differs", rep);
    }
    free(a);
    free(b);
    free(mel);
    ws_stem_free(g);
    ws_model_free(&m);
}

/* --device cuda:N: a number past the devices there is one clear line, not a crash. */
Test(gpu_driver, a_device_number_past_the_last_is_refused_by_name)
{
    ws_model m;
    ws_err e = { "" };
    cr_assert_eq(ws_model_init_random(&m, 80, 384, 1, 0, &e), 0, "%s", e.msg);
    ws_stem_free(gpu_or_skip(&m, WS_PREC_FP32)); /* a device 0 is there */
    ws_stem *g = ws_stem_new_gpu(&m, WS_PREC_FP32, 1000, &e);
    cr_assert_null(g);
    cr_assert(strstr(e.msg, "no CUDA device 1000") && strstr(e.msg, "CUDA_VISIBLE_DEVICES"), "%s",
              e.msg);
    char name[200];
    cr_assert_eq(ws_gpu_probe(1000, name, sizeof name, &e), -1);
    cr_assert(strstr(e.msg, "no CUDA device 1000"), "%s", e.msg);
    cr_assert_eq(ws_gpu_probe(0, name, sizeof name, &e), 0, "%s", e.msg);
    ws_model_free(&m);
}

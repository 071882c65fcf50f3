/* test_ptx.c - the PTX emitter, the kernels it writes, the GELU model and
 * the driver ABI constants; needs no GPU.
 *
 * Kernels are assembled with ptxas (WS_PTXAS, set by `make test`) for sm_90
 * and sm_80; a kernel that spills or uses a stack frame fails. Without ptxas
 * those tests skip, saying so.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda/cuda_abi.h"
#include "cuda/gelu_ptx.h"
#include "cuda/kernels.h"
#include "cuda/ptx_emit.h"
#include "whisper/stem.h"
#include "helpers.h"
#include "oracle.h"

#if __has_include(<cuda.h>)
#include <cuda.h>
/* our ABI header against the toolkit's, where the toolkit is installed */
_Static_assert((int)WS_CUDA_SUCCESS == (int)CUDA_SUCCESS, "CUDA_SUCCESS");
_Static_assert((int)WS_CUDA_ERROR_NO_DEVICE == (int)CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE");
_Static_assert((int)WS_CU_JIT_WALL_TIME == (int)CU_JIT_WALL_TIME, "CU_JIT_WALL_TIME");
_Static_assert((int)WS_CU_JIT_INFO_LOG_BUFFER == (int)CU_JIT_INFO_LOG_BUFFER, "CU_JIT_INFO_LOG_BUFFER");
_Static_assert((int)WS_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES == (int)CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, "info size");
_Static_assert((int)WS_CU_JIT_ERROR_LOG_BUFFER == (int)CU_JIT_ERROR_LOG_BUFFER, "CU_JIT_ERROR_LOG_BUFFER");
_Static_assert((int)WS_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == (int)CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "error size");
_Static_assert((int)WS_CU_JIT_LOG_VERBOSE == (int)CU_JIT_LOG_VERBOSE, "CU_JIT_LOG_VERBOSE");
_Static_assert((int)WS_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT == (int)CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SMs");
_Static_assert((int)WS_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR == (int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc major");
_Static_assert((int)WS_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR == (int)CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc minor");
_Static_assert((int)WS_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN == (int)CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "smem optin");
_Static_assert((int)WS_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES == (int)CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "local size");
_Static_assert((int)WS_CU_FUNC_ATTRIBUTE_NUM_REGS == (int)CU_FUNC_ATTRIBUTE_NUM_REGS, "num regs");
_Static_assert((int)WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES == (int)CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "dyn smem");
_Static_assert((int)WS_CU_STREAM_NON_BLOCKING == (int)CU_STREAM_NON_BLOCKING, "stream flag");
_Static_assert((int)WS_CU_EVENT_DEFAULT == (int)CU_EVENT_DEFAULT, "event flag");
_Static_assert(sizeof(CUdeviceptr) == sizeof(wscu_devptr), "CUdeviceptr is 64-bit");
_Static_assert(sizeof(CUresult) == sizeof(wscu_result), "CUresult is int-sized");
#define HAVE_CUDA_H 1
#else
#define HAVE_CUDA_H 0
#endif

Test(ptx_abi, constants_checked_against_cuda_h_when_present)
{
    if (!HAVE_CUDA_H)
        cr_skip_test("cuda.h not visible to the build: ABI constants not cross-checked");
    cr_assert(1);
}

Test(ptx_emit, f32_constants_are_exact_bit_patterns)
{
    cr_assert_str_eq(ws_ptx_f32(1.0f).s, "0f3F800000");
    cr_assert_str_eq(ws_ptx_f32(-0.5f).s, "0fBF000000");
    cr_assert_str_eq(ws_ptx_f32(0x1.6a09e6p-1f).s, "0f3F3504F3");
    cr_assert_str_eq(ws_ptx_f32(0.0f).s, "0f00000000");
}

Test(ptx_emit, target_follows_compute_capability)
{
    char v[8], t[16];
    cr_assert_eq(ws_ptx_target_for(9, 0, v, t), 0);
    cr_assert_str_eq(t, "sm_90");
    cr_assert_str_eq(v, "7.8");
    cr_assert_eq(ws_ptx_target_for(8, 0, v, t), 0);
    cr_assert_str_eq(t, "sm_80");
    cr_assert_str_eq(v, "7.0");
    cr_assert_eq(ws_ptx_target_for(8, 6, v, t), 0);
    cr_assert_str_eq(t, "sm_86");
    cr_assert_eq(ws_ptx_target_for(12, 0, v, t), 0);
    cr_assert_str_eq(t, "sm_90", "newer chips get sm_90 PTX, JIT-compiled forward");
    cr_assert_eq(ws_ptx_target_for(7, 5, v, t), -1);
}

Test(ptx_emit, registers_and_labels_are_numbered_per_kernel)
{
    ptx_buf b;
    ws_ptx_init(&b);
    preg r0 = ws_ptx_reg(&b, PTX_F32), r1 = ws_ptx_reg(&b, PTX_F32), p0 = ws_ptx_reg(&b, PTX_PRED);
    plabel l0 = ws_ptx_label_new(&b, "loop");
    cr_assert_str_eq(r0.n, "%f0");
    cr_assert_str_eq(r1.n, "%f1");
    cr_assert_str_eq(p0.n, "%p0");
    cr_assert_str_eq(l0.n, "$Lloop_0");
    ws_ptx_ins(&b, "add.f32 %s, %s, %s", r0.n, r0.n, r1.n);
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin(&mod, 9, 0, "test");
    ws_ptx_kernel_end(&b, &mod, "k", "\t.param .u64 p", 32, 0);
    char why[160];
    char *t = ws_ptx_take(&mod, why, sizeof why);
    cr_assert_not_null(t);
    cr_assert(strstr(t, ".reg .f32 %f<2>;"), "%s", t);
    cr_assert(strstr(t, ".reg .pred %p<1>;"), "%s", t);
    cr_assert(strstr(t, "\tadd.f32 %f0, %f0, %f1;\n"), "%s", t);
    cr_assert(strstr(t, ".target sm_90"), "%s", t);
    free(t);
}

Test(ptx_emit, emitter_error_is_sticky)
{
    ptx_buf b;
    ws_ptx_init(&b);
    ws_ptx_ins(&b, "mov.u32 %%r0, 1");
    ws_ptx_fail(&b, "first reason");
    ws_ptx_fail(&b, "second reason");
    ws_ptx_ins(&b, "mov.u32 %%r0, 2");
    size_t len = b.len;
    ws_ptx_comment(&b, "more");
    cr_assert_eq(b.len, len, "nothing is appended after a failure");
    char why[160];
    cr_assert_null(ws_ptx_take(&b, why, sizeof why));
    cr_assert_str_eq(why, "first reason");
    /* a failed kernel fails its module */
    ptx_buf k, mod;
    ws_ptx_init(&k);
    ws_ptx_init(&mod);
    ws_ptx_module_begin(&mod, 9, 0, "t");
    ws_ptx_fail(&k, "kernel broke");
    ws_ptx_kernel_end(&k, &mod, "k", "", 32, 0);
    cr_assert_null(ws_ptx_take(&mod, why, sizeof why));
    cr_assert_str_eq(why, "kernel broke");
    /* below sm_80 is refused */
    ws_ptx_init(&mod);
    ws_ptx_module_begin(&mod, 7, 0, "t");
    cr_assert_null(ws_ptx_take(&mod, why, sizeof why));
}

static const ws_precision ALL_PREC[] = { WS_PREC_FP32, WS_PREC_TF32, WS_PREC_BF16, WS_PREC_FP16 };

/* The kernels the GPU lowers Whisper's stem descriptors to, for (n_mels, d, p). */
static int lower_stem(int n_mels, int d, ws_precision p, int cc_major, int cc_minor,
                      ws_kernel_src **k, ws_err *e)
{
    ws_conv_desc pair[2];
    ws_stem_descs(n_mels, d, p, pair);
    return ws_gpu_lower(pair, cc_major, cc_minor, k, e);
}
static const int SHAPES[][2] = { { 80, 384 }, { 128, 1280 } };

Test(ptx_emit, emitter_is_deterministic)
{
    for (int p = 0; p < 4; p++) {
        ws_kernel_src *a = NULL, *b = NULL;
        ws_err e;
        cr_assert_eq(lower_stem(80, 384, ALL_PREC[p], 9, 0, &a, &e), 0, "%s", e.msg);
        cr_assert_eq(lower_stem(80, 384, ALL_PREC[p], 9, 0, &b, &e), 0, "%s", e.msg);
        for (int i = 0; i < WS_K_COUNT; i++) {
            cr_assert_str_eq(a[i].name, b[i].name);
            cr_assert_str_eq(a[i].ptx, b[i].ptx, "kernel %s differs between two emissions", a[i].name);
            cr_assert(strstr(a[i].ptx, "// ----") || i == WS_K_GELU,
                      "%s has no section comments", a[i].name);
        }
        ws_gpu_kernels_free(a);
        ws_gpu_kernels_free(b);
    }
}

Test(ptx_emit, rejects_unsupported_widths)
{
    ws_kernel_src *k = NULL;
    ws_err e = { "" };
    cr_assert_eq(lower_stem(80, 100, WS_PREC_FP32, 9, 0, &k, &e), -1);
    cr_assert(strstr(e.msg, "unsupported shape"), "%s", e.msg);
    cr_assert_null(k);
}

/* The GPU lowers the stem's pair only: any other descriptor is refused with the field. */
Test(ptx_emit, lowering_refuses_other_descriptors_naming_the_field)
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
        ws_kernel_src *k = NULL;
        ws_err e = { "" };
        cr_assert_eq(ws_gpu_lower(pair, 9, 0, &k, &e), -1, "%s %d was lowered", f, v);
        cr_assert_null(k);
        cr_assert(strstr(e.msg, cases[i].want), "%s %d: \"%s\" does not say \"%s\"", f, v, e.msg,
                  cases[i].want);
    }
    /* conv 2 must read conv 1's output */
    ws_conv_desc pair[2];
    ws_stem_descs(80, 384, WS_PREC_BF16, pair);
    pair[1].c_in = 128;
    ws_kernel_src *k = NULL;
    ws_err e = { "" };
    cr_assert_eq(ws_gpu_lower(pair, 9, 0, &k, &e), -1);
    cr_assert(strstr(e.msg, "c_in 128"), "%s", e.msg);
    /* an intermediate stored in another type than the math's */
    ws_stem_descs(80, 384, WS_PREC_BF16, pair);
    pair[0].y_type = pair[1].x_type = WS_F16;
    cr_assert_eq(ws_gpu_lower(pair, 9, 0, &k, &e), -1);
    cr_assert(strstr(e.msg, "conv 1 with y_type f16"), "%s", e.msg);
}

Test(ptx_emit, dump_ptx_writes_every_kernel)
{
    const char *dir = test_tmpdir();
    ws_err e;
    ws_conv_desc pair[2];
    ws_stem_descs(80, 384, WS_PREC_BF16, pair);
    cr_assert_eq(ws_gpu_dump_ptx(pair, dir, &e), 0, "%s", e.msg);
    const char *names[] = { "ws_mel_t_bf16", "ws_conv1_bf16_l", "ws_conv1_bf16_s",
                            "ws_conv2_bf16_l", "ws_conv2_bf16_s", "ws_splitk_finish",
                            "ws_gelu_grid" };
    for (int i = 0; i < 7; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.ptx", dir, names[i]);
        size_t len = 0;
        char *t = read_file(path, &len);
        cr_assert_not_null(t, "%s missing", path);
        cr_assert(strstr(t, ".entry"), "%s has no entry", path);
        free(t);
    }
}

/* Assembles every kernel of precision p for both shapes and both targets;
 * fails on an assembler error, a stack frame or a spill. */
static void assemble_all(ws_precision p)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    const int ccs[][2] = { { 9, 0 }, { 8, 0 } };
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 2; c++) {
            ws_kernel_src *k = NULL;
            ws_err e;
            cr_assert_eq(lower_stem(SHAPES[s][0], SHAPES[s][1], p, ccs[c][0], ccs[c][1], &k, &e),
                         0, "%s", e.msg);
            for (int i = 0; i < WS_K_COUNT; i++) {
                char path[1024], cmd[4096], log[8192];
                snprintf(path, sizeof path, "%s/%s_%d.ptx", dir, k[i].name, ccs[c][0]);
                FILE *f = fopen(path, "w");
                cr_assert_not_null(f);
                fputs(k[i].ptx, f);
                fclose(f);
                snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%d%d -v '%s' -o /dev/null 2>&1", ptxas,
                         ccs[c][0], ccs[c][1], path);
                FILE *pp = popen(cmd, "r");
                cr_assert_not_null(pp);
                size_t n = fread(log, 1, sizeof log - 1, pp);
                log[n] = '\0';
                int st = pclose(pp);
                cr_assert_eq(st, 0, "ptxas failed on %s (%d->%d, sm_%d%d):\n%s", k[i].name,
                             SHAPES[s][0], SHAPES[s][1], ccs[c][0], ccs[c][1], log);
                const char *sf = strstr(log, "bytes stack frame");
                cr_assert_not_null(sf, "no resource report for %s:\n%s", k[i].name, log);
                int stack = -1, sst = -1, sld = -1;
                const char *line = sf;
                while (line > log && line[-1] != '\n')
                    line--;
                cr_assert_eq(sscanf(line, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                                    &stack, &sst, &sld), 3, "%s", line);
                cr_assert(stack == 0 && sst == 0 && sld == 0,
                          "%s (%d->%d, sm_%d%d) uses stack %d, spills %d/%d:\n%s", k[i].name,
                          SHAPES[s][0], SHAPES[s][1], ccs[c][0], ccs[c][1], stack, sst, sld, log);
            }
            ws_gpu_kernels_free(k);
        }
}

Test(ptx_kernels, fp32_kernels_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_FP32); }
Test(ptx_kernels, tf32_kernels_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_TF32); }
Test(ptx_kernels, bf16_kernels_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_BF16); }
Test(ptx_kernels, fp16_kernels_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_FP16); }

/* The GELU sequence as float arithmetic, against erf in double on a dense
 * grid over [-10, 10] and on the wider float range. */
Test(ptx_gelu, gelu_model_error_within_bound)
{
    double worst = 0, worst_x = 0, erf_worst = 0;
    for (int i = -1000000; i <= 1000000; i++) {
        float x = (float)(i * 1e-5);
        double want = oracle_gelu((double)x);
        double err = fabs((double)ws_gelu_model(x) - want);
        double lim = WS_GELU_MAX_ABS + 1.2e-7 * fabs((double)x);
        if (err - lim > worst) {
            worst = err - lim;
            worst_x = x;
        }
        float z = x * 0x1.6a09e6p-1f;
        double ee = fabs((double)ws_erf_model(z) - erf((double)z));
        if (ee > erf_worst)
            erf_worst = ee;
    }
    cr_assert_eq(worst, 0, "gelu model exceeds its bound by %.3g at x = %.9g", worst, worst_x);
    cr_assert_leq(erf_worst, WS_GELU_ERF_MAX_ABS, "erf model max error %.3g", erf_worst);
    const float wide[] = { -3e38f, -1e6f, -100.f, -20.f, -13.f, 13.f, 20.f, 100.f, 1e6f, 3e38f,
                           1e-30f, -1e-30f, 1e-40f, 0.0f, -0.0f };
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++) {
        double want = oracle_gelu((double)wide[i]);
        double got = ws_gelu_model(wide[i]);
        cr_assert(fabs(got - want) <= WS_GELU_MAX_ABS + 1.2e-7 * fabs(want),
                  "gelu(%g) = %.9g, want %.9g", (double)wide[i], got, want);
    }
    cr_assert(isnan(ws_gelu_model(NAN)));
}

Test(ptx_pack, weights_pack_as_the_kernels_read_them)
{
    const int cin = 8, cout = 4;
    float w[3 * 8 * 4];
    for (int i = 0; i < 3 * cin * cout; i++)
        w[i] = (float)i + 0.25f;
    float f32[3 * 8 * 4];
    ws_pack_weights(w, cin, cout, WS_PREC_FP32, f32);
    uint16_t bf[3 * 8 * 4];
    ws_pack_weights(w, cin, cout, WS_PREC_BF16, bf);
    for (int o = 0; o < cout; o++)
        for (int i = 0; i < cin; i++)
            for (int k = 0; k < 3; k++) {
                float v = w[(o * cin + i) * 3 + k];
                cr_assert_eq(f32[(k * cin + i) * cout + o], v);
                cr_assert_eq(ws_bf16_to_f32(bf[o * 3 * cin + k * cin + i]),
                             ws_bf16_to_f32(ws_f32_to_bf16(v)));
            }
    /* tf32: round to nearest, ties away, 10 mantissa bits */
    float one[3] = { 1.0f + 0x1p-11f, 1.0f + 0x1p-12f, -(1.0f + 3 * 0x1p-11f) };
    float t[3];
    ws_pack_weights(one, 1, 1, WS_PREC_TF32, t);
    cr_assert_eq(t[0], 1.0f + 0x1p-10f, "tie rounds away: %a", (double)t[0]);
    cr_assert_eq(t[1], 1.0f, "%a", (double)t[1]);
    cr_assert_eq(t[2], -(1.0f + 2 * 0x1p-10f), "%a", (double)t[2]);
}

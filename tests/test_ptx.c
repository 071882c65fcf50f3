/* test_ptx.c - the PTX emitter, the kernels it writes, the GELU model, the
 * driver ABI constants and the conv kernels' parameter tables; needs no GPU.
 *
 * Kernels are assembled with ptxas (WS_PTXAS, set by `make test`) for sm_90
 * and sm_80; a kernel that spills or uses a stack frame fails. Without ptxas
 * those tests skip, saying so. Here: the modules of the Whisper stem's two engine plans
 * (both shapes, every precision) and the stem's --dump-ptx.
 * Parameter tables (cuda/ptx/ptx_params.h): each table is held to at least one
 * emitted entry (direct, depthwise, gemm, weight preparation and depthwise causal
 * modules, FWD and BWD; the log-Mel's three entries for 80 and 128 bands) by parsing the
 * entry's .param list and every ld.param in its body; the runtime's argument check
 * refuses a missing value, a wrong size and an index outside the table.
 * The depthwise causal kernels with sequences and states (cuda/ptx/ptx_dws.h,
 * ptx_dws/...): every entry of a descriptor set (NLC, NCL and mixed layouts,
 * each storage type, K 1, 2, 4, 8, 20, dilation 1 to 3, act none, relu, silu,
 * gelu, pre relu / gelu / silu on FWD) assembles for sm_80 and sm_90 without
 * stack or spills and declares and loads its table's parameters; names are
 * unique and emission repeatable; only depthwise causal descriptors fit.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cuda/cuda_abi.h"
#include "cuda/ptx/gelu_ptx.h"
#include "cuda/gpu.h"
#include "cuda/ptx/ptx_direct.h"
#include "cuda/gpu_dws.h"
#include "cuda/ptx/ptx_dw.h"
#include "cuda/ptx/ptx_dws.h"
#include "cuda/ptx/ptx_emit.h"
#include "cuda/ptx/ptx_gemm.h"
#include "cuda/ptx/ptx_wprep.h"
#include "cuda/ptx/ptx_mel.h"
#include "cuda/ptx/ptx_params.h"
#include "cuda/ptx/ptx_hbwd.h"
#include "cuda/ptx/ptx_hcol.h"
#include "cuda/ptx/ptx_hgemm.h"
#include "cuda/ptx/ptx_hpair.h"
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
_Static_assert((int)WS_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT == (int)CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, "carveout");
_Static_assert((int)WS_CU_STREAM_NON_BLOCKING == (int)CU_STREAM_NON_BLOCKING, "stream flag");
_Static_assert((int)WS_CU_EVENT_DEFAULT == (int)CU_EVENT_DEFAULT, "event flag");
_Static_assert(sizeof(CUdeviceptr) == sizeof(wscu_devptr), "CUdeviceptr is 64-bit");
_Static_assert(sizeof(CUtensorMap) == sizeof(wscu_tensor_map) &&
               _Alignof(CUtensorMap) == _Alignof(wscu_tensor_map), "CUtensorMap");
_Static_assert((int)WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT16 == (int)CU_TENSOR_MAP_DATA_TYPE_FLOAT16 &&
               (int)WS_CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 == (int)CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 &&
               (int)WS_CU_TENSOR_MAP_DATA_TYPE_FLOAT32 == (int)CU_TENSOR_MAP_DATA_TYPE_FLOAT32 &&
               (int)WS_CU_TENSOR_MAP_INTERLEAVE_NONE == (int)CU_TENSOR_MAP_INTERLEAVE_NONE &&
               (int)WS_CU_TENSOR_MAP_SWIZZLE_128B == (int)CU_TENSOR_MAP_SWIZZLE_128B &&
               (int)WS_CU_TENSOR_MAP_L2_PROMOTION_L2_128B == (int)CU_TENSOR_MAP_L2_PROMOTION_L2_128B &&
               (int)WS_CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE == (int)CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
               "tensor map enums");
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

static const int SHAPES[][2] = { { 80, 384 }, { 128, 1280 } };

/* --dump-ptx (ws_gpu_dump_ptx): the modules of the stem's two plans for sm_90, named as
 * the engine names them: each conv's direct module, and its GEMM's (the Hopper GEMM's where
 * it takes the descriptor, else ptx_gemm.c's) */
Test(ptx_emit, stem_dump_ptx_writes_both_plans_modules)
{
    const char *dir = test_tmpdir();
    ws_err e = { "" };
    ws_conv_desc pair[2];
    ws_stem_descs(80, 384, WS_PREC_BF16, pair);
    cr_assert_eq(ws_gpu_dump_ptx(pair, dir, &e), 0, "%s", e.msg);
    for (int k = 0; k < 2; k++) {
        char names[2][WS_DIRECT_NAME_MAX + WS_HGEMM_NAME_MAX];
        ws_direct_name(&pair[k], names[0]);
        cr_assert(ws_gemm_fits(&pair[k]), "conv%d: no GEMM", k + 1);
        if (ws_hgemm_fits(&pair[k], 9, 0))
            ws_hgemm_name(&pair[k], names[1]);
        else
            ws_gemm_name(&pair[k], names[1]);
        for (int i = 0; i < 2; i++) {
            char path[2048];
            snprintf(path, sizeof path, "%s/%s.ptx", dir, names[i]);
            size_t len = 0;
            char *t = read_file(path, &len);
            cr_assert_not_null(t, "conv%d: %s missing", k + 1, path);
            cr_assert(strstr(t, ".entry") && strstr(t, ".target sm_90"), "%s", path);
            free(t);
        }
    }
    /* a pair the GPU stem does not take writes nothing */
    pair[1].stride = 1;
    cr_assert_eq(ws_gpu_dump_ptx(pair, dir, &e), -1);
    cr_assert(strstr(e.msg, "conv 2 with stride 1"), "%s", e.msg);
}

/* ptxas -v on the module at path for sm_<cc> (sm_<cc>a for a module that targets it): it
 * assembles, and no entry has a stack frame or spills; returns the entries reported */
static int ptxas_check(const char *ptxas, const char *path, int cc, const char *what)
{
    char cmd[4096], log[16384];
    size_t len = 0;
    char *t = read_file(path, &len);
    cr_assert_not_null(t, "%s", path);
    const char *arch = strstr(t, ".target sm_90a") ? "a" : "";
    free(t);
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%d%s -v '%s' -o /dev/null 2>&1", ptxas, cc, arch, path);
    FILE *pp = popen(cmd, "r");
    cr_assert_not_null(pp);
    size_t n = fread(log, 1, sizeof log - 1, pp);
    log[n] = '\0';
    const int st = pclose(pp);
    cr_assert_eq(st, 0, "ptxas failed on %s (%s, sm_%d):\n%s", path, what, cc, log);
    int entries = 0;
    for (const char *sf = strstr(log, "bytes stack frame"); sf;
         sf = strstr(sf + 1, "bytes stack frame"), entries++) {
        const char *line = sf;
        while (line > log && line[-1] != '\n')
            line--;
        int stack = -1, sst = -1, sld = -1;
        cr_assert_eq(sscanf(line, "%d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                            &stack, &sst, &sld), 3, "%s", line);
        cr_assert(stack == 0 && sst == 0 && sld == 0, "%s (%s, sm_%d) uses stack %d, spills %d/%d:\n%s",
                  path, what, cc, stack, sst, sld, log);
    }
    return entries;
}

/* ptxas_check on every .ptx file in dir, each with at least one entry; returns the modules
 * seen */
static int assemble_dir(const char *ptxas, const char *dir, int cc, const char *what)
{
    DIR *dd = opendir(dir);
    cr_assert_not_null(dd, "%s", dir);
    int modules = 0;
    struct dirent *de;
    while ((de = readdir(dd))) {
        const size_t nl = strlen(de->d_name);
        if (nl < 5 || strcmp(de->d_name + nl - 4, ".ptx"))
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        cr_assert_gt(ptxas_check(ptxas, path, cc, what), 0, "no resource report for %s", path);
        modules++;
    }
    closedir(dd);
    return modules;
}

/* The modules of the stem's two plans (ws_conv_dump_ptx of both descriptors, for tiny and
 * large-v3 and the targets sm_90 and sm_80) in precision p: every one assembles, without a
 * stack frame or spills in any entry. */
static void assemble_all(ws_precision p)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    const int ccs[][2] = { { 9, 0 }, { 8, 0 } };
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 2; c++) {
            char sub[1024], what[96];
            snprintf(sub, sizeof sub, "%s/%d_sm%d%d", dir, SHAPES[s][1], ccs[c][0], ccs[c][1]);
            cr_assert_eq(mkdir(sub, 0700), 0, "%s", sub);
            snprintf(what, sizeof what, "%s %d->%d", ws_precision_name(p), SHAPES[s][0], SHAPES[s][1]);
            ws_conv_desc pair[2];
            ws_stem_descs(SHAPES[s][0], SHAPES[s][1], p, pair);
            ws_err e = { "" };
            for (int k = 0; k < 2; k++)
                cr_assert_eq(ws_conv_dump_ptx(&pair[k], ccs[c][0], ccs[c][1], sub, &e), 0, "%s: %s",
                             what, e.msg);
            const int n = assemble_dir(ptxas, sub, ccs[c][0] * 10 + ccs[c][1], what);
            cr_assert_geq(n, 4, "%s sm_%d%d: %d modules (a direct and a GEMM module a conv)", what,
                          ccs[c][0], ccs[c][1], n);
        }
}

Test(ptx_kernels, fp32_stem_modules_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_FP32); }
Test(ptx_kernels, tf32_stem_modules_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_TF32); }
Test(ptx_kernels, bf16_stem_modules_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_BF16); }
Test(ptx_kernels, fp16_stem_modules_assemble_without_spills, .timeout = 300) { assemble_all(WS_PREC_FP16); }

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

/* --- the conv engine's kernel parameter tables (cuda/ptx/ptx_params.h) ------------------- */

/* one entry of an emitted module and the table it must declare */
typedef struct {
    const char *what;      /* for messages */
    const ws_conv_desc *d;
    int family;            /* 0 direct, 1 depthwise, 2 gemm, 3 weight preparation, 4 depthwise
                              reading 16-bit w, 5 depthwise causal with states */
    int entry;             /* direct BWD: ws_direct_part; depthwise BWD: 0 _bwd, 1 _fin;
                              weight preparation: 0 cast, 1 pack; depthwise causal with
                              states: ws_dws_part; the Hopper GEMM (family 6): 0 the
                              kernel, 1 _prep, 2 _prep8, 3 _mn; the dense backward's passes (family 7):
                              the suffix index of GB_SUFFIX; the weight gradient (8) */
    ws_params_id table;
} param_case;

/* the fused pair's second conv for d1 (family 9): pointwise, reading what d1 writes */
static ws_conv_desc pair_second(const ws_conv_desc *d1)
{
    ws_conv_desc d2 = *d1;
    d2.c_in = d1->c_out, d2.k = 1, d2.stride = 1, d2.dilation = 1, d2.pad_l = d2.pad_r = 0;
    d2.x_layout = d1->y_layout, d2.x_type = d1->y_type, d2.pre = WS_ACT_NONE;
    return d2;
}

static char *emit_family(const ws_conv_desc *d, int family, ws_err *e)
{
    if (family == 9) {
        const ws_conv_desc d2 = pair_second(d);
        return ws_hpair_emit(d, &d2, WS_HPAIR_CL, WS_HPAIR_BK, e);
    }
    if (family == 10)
        return ws_hcol_emit(d, e);
    return family == 0   ? ws_direct_emit(d, 9, 0, e)
           : family == 1 ? ws_dw_emit(d, 9, 0, e)
           : family == 2 ? ws_gemm_emit(d, 9, 0, e)
           : family == 3 ? ws_wprep_emit(d, 9, 0, e)
           : family == 4 ? ws_dw_emit_w(d, d->w_type, 9, 0, e)
           : family == 6 ? ws_hgemm_emit(d, e)
           : family == 7 ? ws_gbwd_emit(d, 9, 0, e)
           : family == 8 ? ws_hgemm_wgrad_emit(d, e)
                         : ws_dws_emit(d, 9, 0, e);
}

static const char *const GB_SUFFIX[] = {"_w", "_u", "_g", "_x", "_f", "_b", "_p", "_t", "_m"};

static void entry_name(const param_case *c, char *name)
{
    const int bwd = c->d->op == WS_CONV_BWD;
    if (c->family == 0) {
        if (bwd)
            ws_direct_bwd_entry(c->d, (ws_direct_part)c->entry, name);
        else
            ws_direct_name(c->d, name);
    } else if (c->family == 1) {
        if (bwd)
            ws_dw_entry(c->d, c->entry, name);
        else
            ws_dw_name(c->d, name);
    } else if (c->family == 3) {
        ws_wprep_entry(c->d, c->entry, name);
    } else if (c->family == 4) {
        if (bwd)
            ws_dw_entry_w(c->d, c->d->w_type, c->entry, name);
        else
            ws_dw_name_w(c->d, c->d->w_type, name);
    } else if (c->family == 2) {
        ws_gemm_entry(c->d, c->entry, name); /* 0 the kernel, 1 _split, 2 _fin */
    } else if (c->family == 6) {
        static const char *const hsuf[] = { "", "_prep", "_prep8", "_mn" };
        ws_hgemm_name(c->d, name);
        strcat(name, hsuf[c->entry]);
    } else if (c->family == 7) {
        ws_gbwd_name(c->d, name);
        strcat(name, GB_SUFFIX[c->entry]);
    } else if (c->family == 9) {
        const ws_conv_desc d2 = pair_second(c->d);
        ws_hpair_name(c->d, &d2, WS_HPAIR_CL, WS_HPAIR_BK, name);
    } else if (c->family == 8) {
        ws_hgemm_wgrad_name(c->d, name);
    } else if (c->family == 10) {
        ws_hcol_name(c->d, name);
        strcat(name, c->entry ? "_wpad" : "_col");
    } else {
        ws_dws_entry(c->d, (ws_dws_part)c->entry, name);
    }
}

/* Parses ".visible .entry <name>(" up to its ")" line: one "\t.param .<type> <name>" per
 * line, ","-separated, must be table t's entries in order; then every "ld.param.<type>
 * <reg>, [<name>]" of the entry's body (up to "\n}\n") must name one of t's parameters with
 * its type. Returns the number of ld.param checked. */
static int check_entry(const char *text, const char *entry, const ws_params *t, const char *what)
{
    char head[320];
    snprintf(head, sizeof head, ".visible .entry %s(\n", entry);
    const char *p = strstr(text, head);
    cr_assert_not_null(p, "%s: no entry %s", what, entry);
    p += strlen(head);
    int i = 0;
    for (;;) {
        const char *eol = strchr(p, '\n');
        cr_assert_not_null(eol, "%s: %s: parameter list not closed", what, entry);
        if (eol - p == 1 && *p == ')')
            break;
        char type[16] = "", name[64] = "", rest[8] = "";
        int got;
        if (!strncmp(p, "\t.param .align 64 .b8 ", 22)) { /* a tensor map: "<name>[128]" */
            strcpy(type, "tmap");
            got = 1 + sscanf(p + 22, "%63[A-Za-z0-9_][128]%7[^\n]", name, rest);
        } else {
            got = sscanf(p, "\t.param .%15[a-z0-9] %63[A-Za-z0-9_]%7[^\n]", type, name, rest);
        }
        cr_assert(got >= 2, "%s: %s: parameter line %d unreadable: %.*s", what, entry, i, (int)(eol - p), p);
        cr_assert(i < t->n, "%s: %s declares parameter %d (%s) past the table's %d", what, entry, i,
                  name, t->n);
        cr_assert_str_eq(name, t->p[i].name, "%s: %s parameter %d is %s, the table says %s", what, entry,
                         i, name, t->p[i].name);
        cr_assert_str_eq(type, ws_ptype_name(t->p[i].type), "%s: %s parameter %s is .%s, the table says .%s",
                         what, entry, name, type, ws_ptype_name(t->p[i].type));
        cr_assert_str_eq(got == 3 ? rest : "", i + 1 < t->n ? "," : "", "%s: %s: separator after %s", what,
                         entry, name);
        i++;
        p = eol + 1;
    }
    cr_assert_eq(i, t->n, "%s: %s declares %d parameters, the table (%s) %d", what, entry, i, t->kernel,
                 t->n);
    const char *end = strstr(p, "\n}\n");
    cr_assert_not_null(end, "%s: %s: body not closed", what, entry);
    int loads = 0;
    for (const char *q = strstr(p, "ld.param."); q && q < end; q = strstr(q + 1, "ld.param.")) {
        char type[16] = "", name[64] = "";
        cr_assert_eq(sscanf(q, "ld.param.%15[a-z0-9] %*[^,], [%63[^]]]", type, name), 2, "%s: %s: %.40s",
                     what, entry, q);
        int k = 0;
        while (k < t->n && strcmp(t->p[k].name, name))
            k++;
        cr_assert(k < t->n, "%s: %s loads %s, not a parameter of its table (%s)", what, entry, name,
                  t->kernel);
        cr_assert_str_eq(type, ws_ptype_name(t->p[k].type), "%s: %s loads %s as .%s, the table says .%s",
                         what, entry, name, type, ws_ptype_name(t->p[k].type));
        loads++;
    }
    return loads;
}

Test(ptx_params, every_conv_entry_declares_and_loads_its_tables_parameters)
{
    /* dense (direct, gemm FFMA and mma), depthwise NLC and NCL, FWD and BWD */
    const ws_conv_desc dense = {.op = WS_CONV_FWD, .c_in = 8, .c_out = 12, .groups = 1, .k = 3,
                                .stride = 1, .dilation = 1, .pad_l = 1, .pad_r = 1,
                                .x_layout = WS_NCL, .y_layout = WS_NLC, .x_type = WS_F32,
                                .w_type = WS_F32, .y_type = WS_F32, .act = WS_ACT_GELU};
    ws_conv_desc dense_mma = dense, dense_bwd = dense, dw_nlc = dense;
    dense_mma.math = WS_MATH_BF16;
    dense_bwd.op = WS_CONV_BWD;
    dw_nlc.c_in = dw_nlc.c_out = dw_nlc.groups = 64;
    dw_nlc.k = 4, dw_nlc.pad_l = 3, dw_nlc.pad_r = 0, dw_nlc.act = WS_ACT_SILU;
    dw_nlc.x_layout = dw_nlc.y_layout = WS_NLC;
    ws_conv_desc dw_ncl = dw_nlc, dw_nlc_bwd = dw_nlc, dw_ncl_bwd;
    dw_ncl.x_layout = dw_ncl.y_layout = WS_NCL;
    dw_nlc_bwd.op = WS_CONV_BWD;
    dw_ncl_bwd = dw_ncl;
    dw_ncl_bwd.op = WS_CONV_BWD;
    ws_conv_desc dense_mma_w16 = dense_mma, dw_nlc_w16 = dw_nlc, dw_ncl_bwd_w16 = dw_ncl_bwd;
    dense_mma_w16.w_type = WS_BF16;
    dw_nlc_w16.w_type = WS_BF16;
    dw_ncl_bwd_w16.w_type = WS_F16;
    ws_conv_desc dws_fwd = dw_ncl, dws_bwd = dw_nlc_bwd;
    dws_fwd.pre = WS_ACT_RELU, dws_fwd.x_type = WS_BF16;
    cr_assert(ws_gemm_fits(&dense) && ws_gemm_fits(&dense_mma) && ws_dw_fits(&dw_nlc) && ws_dw_fits(&dw_ncl));
    cr_assert(ws_dws_fits(&dws_fwd) && ws_dws_fits(&dws_bwd));
    ws_conv_desc dense_hg = dense_mma;
    dense_hg.c_in = 128, dense_hg.c_out = 96;
    cr_assert(ws_hgemm_fits(&dense_hg, 9, 0), "no Hopper GEMM descriptor");
    ws_conv_desc hg_mn = dense_hg, hg_tf = dense_hg; /* its _mn and _prep8 entries (bf16, tf32) */
    hg_mn.x_type = WS_BF16, hg_mn.dilation = 8, hg_mn.pad_l = hg_mn.pad_r = 8;
    hg_tf.math = WS_MATH_TF32;
    cr_assert(ws_hgemm_fits(&hg_mn, 9, 0) && ws_hgemm_mn(&hg_mn) && ws_hgemm_prep8(&hg_mn), "no _mn descriptor");
    cr_assert(ws_hgemm_fits(&hg_tf, 9, 0) && !ws_hgemm_mn(&hg_tf) && ws_hgemm_prep8(&hg_tf), "no tf32 _prep8");
    ws_conv_desc hg_tmn = hg_tf; /* TF32 with taps at multiples of 4 times: its _mn entry */
    hg_tmn.dilation = 4, hg_tmn.pad_l = hg_tmn.pad_r = 4;
    cr_assert(ws_hgemm_fits(&hg_tmn, 9, 0) && ws_hgemm_mn(&hg_tmn), "no tf32 _mn descriptor");
    ws_conv_desc gb = dense_hg; /* a dense BWD at stride 2: every pass of ptx_hbwd.h */
    gb.op = WS_CONV_BWD, gb.stride = 2, gb.pad_l = gb.pad_r = 0;
    cr_assert(ws_hgemm_wgrad_fits(&gb, 9, 0), "no weight-gradient descriptor");
    ws_conv_desc pair1 = dense_hg; /* the fused pair's first conv (ptx_hpair.h) */
    pair1.c_out = 128;
    {
        const ws_conv_desc p2 = pair_second(&pair1);
        cr_assert(ws_hpair_fits(&pair1, &p2, 9, 0), "no fused pair");
    }
    ws_conv_desc col = dense_mma; /* a short conv through its columns (ptx_hcol.h) */
    col.c_in = 1, col.c_out = 64, col.k = 10, col.stride = 5, col.pad_l = col.pad_r = 0;
    cr_assert(ws_hcol_fits(&col, 9, 0) && !ws_hgemm_fits(&col, 9, 0), "no columns descriptor");
    ws_conv_desc colpad = dense_mma; /* longer sums: padded channels */
    colpad.c_in = 40, colpad.c_out = 64;
    cr_assert(ws_hcol_fits(&colpad, 9, 0) && ws_hcol_pad(&colpad), "no padded-channels descriptor");
    ws_conv_desc gb32 = gb; /* float32 math: dw's FFMA kernel and its rows staging */
    gb32.math = WS_MATH_F32;
    cr_assert(ws_gbwd_ffma_dw(&gb32), "no float32 weight-gradient descriptor");
    const param_case cases[] = {
        {"direct fwd", &dense, 0, 0, WS_PARAMS_FWD},
        {"depthwise fwd nlc", &dw_nlc, 1, 0, WS_PARAMS_FWD},
        {"depthwise fwd ncl", &dw_ncl, 1, 0, WS_PARAMS_FWD},
        {"gemm fwd", &dense, 2, 0, WS_PARAMS_FWD},
        {"gemm fwd, the sum in parts", &dense, 2, 1, WS_PARAMS_FWD_PARTS},
        {"gemm fwd, the parts' finish", &dense, 2, 2, WS_PARAMS_FWD_PARTS},
        {"gemm fwd bf16 math", &dense_mma, 2, 0, WS_PARAMS_FWD},
        {"direct bwd gz", &dense_bwd, 0, WS_DIRECT_GZ, WS_PARAMS_BWD_GZ},
        {"direct bwd dx", &dense_bwd, 0, WS_DIRECT_DX, WS_PARAMS_BWD_DX},
        {"direct bwd dw", &dense_bwd, 0, WS_DIRECT_DW, WS_PARAMS_BWD_DW},
        {"direct bwd db", &dense_bwd, 0, WS_DIRECT_DB, WS_PARAMS_BWD_DB},
        {"depthwise bwd nlc", &dw_nlc_bwd, 1, 0, WS_PARAMS_DW_BWD},
        {"depthwise bwd ncl", &dw_ncl_bwd, 1, 0, WS_PARAMS_DW_BWD},
        {"depthwise bwd nlc finish", &dw_nlc_bwd, 1, 1, WS_PARAMS_DW_FIN},
        {"depthwise bwd ncl finish", &dw_ncl_bwd, 1, 1, WS_PARAMS_DW_FIN},
        {"direct bwd of a depthwise descriptor, gz", &dw_nlc_bwd, 0, WS_DIRECT_GZ, WS_PARAMS_BWD_GZ},
        {"weight preparation, cast", &dense_mma_w16, 3, 0, WS_PARAMS_WPREP},
        {"weight preparation, pack", &dense_mma_w16, 3, 1, WS_PARAMS_WPREP},
        {"depthwise fwd nlc, 16-bit w", &dw_nlc_w16, 4, 0, WS_PARAMS_FWD},
        {"depthwise bwd ncl, 16-bit w", &dw_ncl_bwd_w16, 4, 0, WS_PARAMS_DW_BWD},
        {"depthwise causal fwd", &dws_fwd, 5, WS_DWS_FWD, WS_PARAMS_DWS_FWD},
        {"depthwise causal final states", &dws_fwd, 5, WS_DWS_FINAL, WS_PARAMS_DWS_FINAL},
        {"depthwise causal bwd gz", &dws_bwd, 5, WS_DWS_GZ, WS_PARAMS_DWS_GZ},
        {"depthwise causal bwd dx", &dws_bwd, 5, WS_DWS_DX, WS_PARAMS_DWS_DX},
        {"depthwise causal bwd dinit", &dws_bwd, 5, WS_DWS_DINIT, WS_PARAMS_DWS_DINIT},
        {"depthwise causal bwd dw", &dws_bwd, 5, WS_DWS_DW, WS_PARAMS_DWS_DW},
        {"depthwise causal bwd db", &dws_bwd, 5, WS_DWS_DB, WS_PARAMS_DWS_DB},
        {"Hopper GEMM", &dense_hg, 6, 0, WS_PARAMS_HGEMM},
        {"Hopper GEMM x staging", &dense_hg, 6, 1, WS_PARAMS_HPREP},
        {"Hopper GEMM x staging, 16 bytes", &hg_mn, 6, 2, WS_PARAMS_HPREP},
        {"Hopper GEMM x staging, 16 bytes, tf32", &hg_tf, 6, 2, WS_PARAMS_HPREP},
        {"Hopper GEMM, channel-first x in place", &hg_mn, 6, 3, WS_PARAMS_HGEMM},
        {"Hopper GEMM, channel-first x in place, tf32", &hg_tmn, 6, 3, WS_PARAMS_HGEMM},
        {"dense backward W'", &gb, 7, 0, WS_PARAMS_WPREP},
        {"dense backward X' to dx", &gb, 7, 1, WS_PARAMS_GBS},
        {"dense backward G staging", &gb, 7, 2, WS_PARAMS_GBS},
        {"dense backward x staging", &gb, 7, 3, WS_PARAMS_GBS},
        {"dense backward dw finish", &gb, 7, 4, WS_PARAMS_GBF},
        {"dense backward db", &gb, 7, 5, WS_PARAMS_BWD_DB},
        {"dense backward W' packed", &gb, 7, 6, WS_PARAMS_WPREP},
        {"dense backward w transposed", &gb, 7, 7, WS_PARAMS_GBS},
        {"Hopper weight gradient", &gb, 8, 0, WS_PARAMS_HWG},
        {"dense backward float32 dw", &gb32, 7, 8, WS_PARAMS_FWG},
        {"dense backward float32 g rows", &gb32, 7, 2, WS_PARAMS_GBS},
        {"dense backward float32 x rows", &gb32, 7, 3, WS_PARAMS_GBS},
        {"fused pair", &pair1, 9, 0, WS_PARAMS_HPAIR},
        {"a short conv's columns", &col, 10, 0, WS_PARAMS_HCOL},
        {"a short conv's padded weights", &col, 10, 1, WS_PARAMS_WPREP},
        {"padded channels", &colpad, 10, 0, WS_PARAMS_HCOL},
        {"padded channels' weights", &colpad, 10, 1, WS_PARAMS_WPREP},
    };
    int covered[WS_PARAMS_COUNT] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const param_case *c = &cases[i];
        ws_err e = {""};
        char *text = emit_family(c->d, c->family, &e);
        cr_assert_not_null(text, "%s: %s", c->what, e.msg);
        char name[256];
        entry_name(c, name);
        const ws_params *t = ws_params_of(c->table);
        cr_assert_not_null(t);
        const int loads = check_entry(text, name, t, c->what);
        cr_assert_gt(loads, 0, "%s: no ld.param seen", c->what);
        covered[c->table]++;
        free(text);
    }
    for (int id = 0; id < WS_PARAMS_MEL_FRAMES; id++) /* the others: the test below */
        cr_assert(covered[id], "table %d (%s) is held to no emitted entry", id, ws_params_of(id)->kernel);
    cr_assert_null(ws_params_of(WS_PARAMS_COUNT));
}

/* the log-Mel's module (80 and 128 bands, both targets): each entry against its table */
Test(ptx_params, log_mel_entries_declare_and_load_their_tables_parameters)
{
    int covered[WS_PARAMS_COUNT] = {0};
    const int ccs[][2] = {{9, 0}, {8, 0}};
    for (int nm = 80; nm <= 128; nm += 48)
        for (int c = 0; c < 2; c++) {
            ws_err e = {""};
            char *text = ws_mel_emit(nm, ccs[c][0], ccs[c][1], &e);
            cr_assert_not_null(text, "%s", e.msg);
            static const struct { const char *entry; ws_params_id id; } mel[] = {
                {"ws_mel_frames", WS_PARAMS_MEL_FRAMES},
                {"ws_mel_write", WS_PARAMS_MEL_WRITE},
                {"ws_mel_f16", WS_PARAMS_MEL_F16},
            };
            for (int i = 0; i < 3; i++) {
                char what[96];
                snprintf(what, sizeof what, "log-Mel %d bands sm_%d%d", nm, ccs[c][0], ccs[c][1]);
                cr_assert_gt(check_entry(text, mel[i].entry, ws_params_of(mel[i].id), what), 0, "%s", what);
                covered[mel[i].id]++;
            }
            free(text);
        }
    for (int id = WS_PARAMS_MEL_FRAMES; id < WS_PARAMS_COUNT; id++)
        cr_assert(covered[id], "table %d (%s) is held to no emitted entry", id, ws_params_of(id)->kernel);
}

/* the FFMA GEMM's _split and _fin entries read p_xoff, the launch's first tile along
 * positions (a call's last tiles in parts, gpu_conv.c gemm_tail): _split adds it to ctaid.x,
 * _fin to the tile's x; the kernel itself has no such parameter */
Test(ptx_params, the_gemm_parts_entries_take_the_launchs_first_tile)
{
    const ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = 80, .c_out = 96, .groups = 1, .k = 3,
                            .stride = 1, .dilation = 1, .pad_l = 1, .pad_r = 1, .x_layout = WS_NCL,
                            .y_layout = WS_NLC, .x_type = WS_F32, .w_type = WS_F32, .y_type = WS_F32,
                            .act = WS_ACT_GELU};
    ws_err e = {""};
    char *text = ws_gemm_emit(&d, 9, 0, &e);
    cr_assert_not_null(text, "%s", e.msg);
    for (int which = 0; which < 3; which++) {
        char name[WS_GEMM_NAME_MAX], head[WS_GEMM_NAME_MAX + 16];
        ws_gemm_entry(&d, which, name);
        snprintf(head, sizeof head, ".entry %s(", name);
        const char *at = strstr(text, head);
        cr_assert_not_null(at, "no entry %s", name);
        const char *end = strstr(at, "\n}\n");
        cr_assert_not_null(end);
        const size_t len = (size_t)(end - at);
        char *body = malloc(len + 1);
        cr_assert_not_null(body);
        memcpy(body, at, len);
        body[len] = 0;
        const char *ld = strstr(body, "ld.param.u32 ");
        int loads = 0;
        for (; ld; ld = strstr(ld + 1, "ld.param.u32 "))
            loads += !strncmp(strchr(ld, '[') ? strchr(ld, '[') : ld, "[p_xoff]", 8);
        if (which == 0)
            cr_assert(!strstr(body, "p_xoff"), "%s: the kernel takes p_xoff", name);
        else
            cr_assert_eq(loads, 1, "%s: p_xoff loaded %d times", name, loads);
        free(body);
    }
    free(text);
}

Test(ptx_params, tables_have_distinct_names_and_fit_the_argument_array)
{
    for (int id = 0; id < WS_PARAMS_COUNT; id++) {
        const ws_params *t = ws_params_of(id);
        cr_assert(t->n > 0 && t->n <= WS_PARAMS_MAX, "%s: %d parameters", t->kernel, t->n);
        for (int i = 0; i < t->n; i++) {
            cr_assert(!strncmp(t->p[i].name, "p_", 2), "%s: %s", t->kernel, t->p[i].name);
            for (int j = 0; j < i; j++)
                cr_assert_str_neq(t->p[i].name, t->p[j].name, "%s: %s twice", t->kernel, t->p[i].name);
        }
    }
}

Test(ptx_params, launch_arguments_are_checked_against_the_table)
{
    uint64_t px = 1, pw = 2, pb = 0, pa = 0, py = 3, abs = 0;
    uint32_t n = 2, t_in = 30, t_out = 30;
    ws_kargs a;
    ws_kargs_init(&a, WS_PARAMS_FWD);
    WS_KARG(&a, WS_FWD_X, px), WS_KARG(&a, WS_FWD_W, pw), WS_KARG(&a, WS_FWD_B, pb);
    WS_KARG(&a, WS_FWD_ADD, pa), WS_KARG(&a, WS_FWD_Y, py), WS_KARG(&a, WS_FWD_N, n);
    WS_KARG(&a, WS_FWD_T_IN, t_in), WS_KARG(&a, WS_FWD_T_OUT, t_out);
    ws_err e = {""};
    cr_assert_eq(ws_kargs_check(&a, "launch", &e), -1, "p_add_bs missing, yet accepted");
    cr_assert(strstr(e.msg, "p_add_bs") && strstr(e.msg, "not given"), "%s", e.msg);
    WS_KARG(&a, WS_FWD_ADD_BS, abs);
    cr_assert_eq(ws_kargs_check(&a, "launch", &e), 0, "%s", e.msg);
    cr_assert_eq(a.v[WS_FWD_T_IN], &t_in);
    cr_assert_eq(a.v[WS_FWD_ADD_BS], &abs);
    /* a 64-bit value for a .u32 parameter */
    uint64_t wide = 30;
    WS_KARG(&a, WS_FWD_T_IN, wide);
    cr_assert_eq(ws_kargs_check(&a, "launch", &e), -1);
    cr_assert(strstr(e.msg, "p_t_in (.u32) given 8 bytes"), "%s", e.msg);
    /* an index outside the table */
    ws_kargs f;
    ws_kargs_init(&f, WS_PARAMS_DW_FIN);
    WS_KARG(&f, WS_DWFIN_NPARAMS, n);
    cr_assert_eq(ws_kargs_check(&f, "launch", &e), -1);
    cr_assert(strstr(e.msg, "outside"), "%s", e.msg);
    /* the log-Mel's tables */
    ws_kargs h;
    uint32_t count32 = 7;
    ws_kargs_init(&h, WS_PARAMS_MEL_F16);
    WS_KARG(&h, WS_MF16_SRC, px), WS_KARG(&h, WS_MF16_DST, py), WS_KARG(&h, WS_MF16_COUNT, count32);
    cr_assert_eq(ws_kargs_check(&h, "ws_gpu_mel_to_f16", &e), -1);
    cr_assert(strstr(e.msg, "ws_gpu_mel_to_f16: log-Mel f16 parameter p_count (.u64) given 4 bytes"), "%s",
              e.msg);
}

Test(ptx_params, loading_a_parameter_into_the_wrong_register_class_fails_the_kernel)
{
    const ws_params *t = ws_params_of(WS_PARAMS_FWD);
    ptx_buf b;
    ws_ptx_init(&b);
    preg r32 = ws_ptx_reg(&b, PTX_B32), r64 = ws_ptx_reg(&b, PTX_B64);
    ws_ptx_ld_param(&b, r32, t, WS_FWD_N);
    ws_ptx_ld_param(&b, r64, t, WS_FWD_X);
    cr_assert_eq(b.err, 0, "%s", b.why);
    cr_assert(strstr(b.text, "ld.param.u32 %r0, [p_n];") && strstr(b.text, "ld.param.u64 %rd0, [p_x];"),
              "%s", b.text);
    ws_ptx_ld_param(&b, r32, t, WS_FWD_ADD_BS);
    cr_assert(b.err && strstr(b.why, "p_add_bs is .u64, loaded into %r0"), "%s", b.why);
    ws_ptx_free(&b);
    ws_ptx_init(&b);
    ws_ptx_ld_param(&b, r64, t, WS_FWD_NPARAMS);
    cr_assert(b.err && strstr(b.why, "no parameter"), "%s", b.why);
    ws_ptx_free(&b);
}

/* --- the depthwise causal kernels with sequences and states (cuda/ptx/ptx_dws.h) ----------- */

/* The descriptor set of op: NLC and NCL x each storage type x K 2, 4, 8, with dilation 1
 * and 2, act none, silu and gelu in turn (pre relu on every other FWD row); then mixed
 * layouts and types, act relu (the gz's mul-then-add sums), K 1 (no states), K 20 (looped
 * taps) and an odd C with dilation 3. Returns the count (at most DWS_SET_MAX). */
#define DWS_SET_MAX 32
static int dws_set(ws_conv_desc *out, ws_conv_op op)
{
    static const ws_act acts[] = {WS_ACT_NONE, WS_ACT_SILU, WS_ACT_GELU};
    static const int ks[] = {2, 4, 8};
    int n = 0;
    for (int lay = 0; lay < 2; lay++)
        for (int ty = 0; ty < 3; ty++)
            for (int kk = 0; kk < 3; kk++) {
                const int v = lay + ty + kk;
                ws_conv_desc d = {.op = op, .c_in = 48, .c_out = 48, .groups = 48, .k = ks[kk],
                                  .stride = 1, .dilation = 1 + v % 2, .x_layout = (ws_layout)lay,
                                  .y_layout = (ws_layout)lay, .x_type = (ws_dtype)ty, .w_type = WS_F32,
                                  .y_type = (ws_dtype)ty, .act = acts[v % 3],
                                  .pre = op == WS_CONV_FWD && v % 2 == 0 ? WS_ACT_RELU : WS_ACT_NONE};
                d.pad_l = d.dilation * (d.k - 1);
                out[n++] = d;
            }
    const struct { ws_layout xl, yl; ws_dtype xt, yt; int c, k, dil; ws_act pre, act; } more[] = {
        {WS_NCL, WS_NLC, WS_BF16, WS_F32, 16, 4, 1, WS_ACT_GELU, WS_ACT_SILU},
        {WS_NLC, WS_NCL, WS_F32, WS_F16, 10, 3, 2, WS_ACT_NONE, WS_ACT_GELU},
        {WS_NLC, WS_NLC, WS_F32, WS_F32, 64, 4, 1, WS_ACT_NONE, WS_ACT_RELU},
        {WS_NCL, WS_NCL, WS_BF16, WS_BF16, 24, 1, 1, WS_ACT_SILU, WS_ACT_SILU},
        {WS_NLC, WS_NLC, WS_F16, WS_F16, 32, 20, 1, WS_ACT_NONE, WS_ACT_GELU},
        {WS_NCL, WS_NCL, WS_F32, WS_F32, 7, 4, 3, WS_ACT_RELU, WS_ACT_NONE},
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        ws_conv_desc d = {.op = op, .c_in = more[i].c, .c_out = more[i].c, .groups = more[i].c,
                          .k = more[i].k, .stride = 1, .dilation = more[i].dil,
                          .x_layout = more[i].xl, .y_layout = more[i].yl, .x_type = more[i].xt,
                          .w_type = WS_F32, .y_type = more[i].yt, .act = more[i].act,
                          .pre = op == WS_CONV_FWD ? more[i].pre : WS_ACT_NONE};
        d.pad_l = d.dilation * (d.k - 1);
        out[n++] = d;
    }
    cr_assert_leq(n, DWS_SET_MAX);
    return n;
}

/* ptxas -v for sm_<cc> on text: success, at least `entries` entries, none with a stack frame
 * or spills */
static void dws_assemble(const char *ptxas, const char *dir, const char *name, const char *text,
                         int cc, int entries)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s_%d.ptx", dir, name, cc);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
    const int seen = ptxas_check(ptxas, path, cc, name);
    cr_assert_eq(seen, entries, "%s (sm_%d): %d resource reports for %d entries", name, cc, seen,
                 entries);
}

Test(ptx_dws, every_entry_assembles_for_sm80_and_sm90_without_spills, .timeout = 300)
{
    const char *ptxas = getenv("WS_PTXAS");
    if (!ptxas || !*ptxas)
        cr_skip_test("ptxas not found (WS_PTXAS empty): emitted PTX not assembled");
    const char *dir = test_tmpdir();
    int modules = 0;
    for (int op = 0; op < 2; op++) {
        ws_conv_desc set[DWS_SET_MAX];
        const int n = dws_set(set, (ws_conv_op)op);
        for (int i = 0; i < n; i++)
            for (int cc = 80; cc <= 90; cc += 10) {
                ws_err e = {""};
                char *text = ws_dws_emit(&set[i], cc / 10, 0, &e);
                cr_assert_not_null(text, "%s", e.msg);
                char name[WS_DWS_NAME_MAX];
                ws_dws_name(&set[i], name);
                dws_assemble(ptxas, dir, name, text, cc, op ? 5 : 2);
                free(text);
                modules++;
            }
    }
    cr_log_info("ptx_dws: %d modules assembled", modules);
}

Test(ptx_dws, every_entry_declares_and_loads_its_tables_parameters)
{
    for (int op = 0; op < 2; op++) {
        ws_conv_desc set[DWS_SET_MAX];
        const int n = dws_set(set, (ws_conv_op)op);
        for (int i = 0; i < n; i++) {
            ws_err e = {""};
            char *text = ws_dws_emit(&set[i], 9, 0, &e);
            cr_assert_not_null(text, "%s", e.msg);
            int entries = 0;
            for (int p = 0; p < WS_DWS_NPARTS; p++) {
                char entry[WS_DWS_NAME_MAX], head[WS_DWS_NAME_MAX + 32];
                ws_dws_entry(&set[i], (ws_dws_part)p, entry);
                snprintf(head, sizeof head, ".visible .entry %s(", entry);
                if (!ws_dws_has_part(&set[i], (ws_dws_part)p)) {
                    cr_assert_null(strstr(text, head), "%s has %s", entry, op ? "a FWD entry" : "a BWD entry");
                    continue;
                }
                const ws_params *t = ws_params_of(WS_PARAMS_DWS_FWD + p);
                cr_assert_gt(check_entry(text, entry, t, entry), 0, "%s: no ld.param seen", entry);
                entries++;
            }
            cr_assert_eq(entries, op ? 5 : 2);
            cr_assert_null(strstr(text, "atom."), "an atomic in the depthwise causal module");
            free(text);
        }
    }
}

Test(ptx_dws, names_are_unique_and_emission_is_deterministic)
{
    char names[2 * DWS_SET_MAX][WS_DWS_NAME_MAX];
    int count = 0;
    for (int op = 0; op < 2; op++) {
        ws_conv_desc set[DWS_SET_MAX];
        const int n = dws_set(set, (ws_conv_op)op);
        for (int i = 0; i < n; i++) {
            ws_dws_name(&set[i], names[count]);
            cr_assert(!strncmp(names[count], op ? "ws_dws_bwd_" : "ws_dws_fwd_", 11), "%s", names[count]);
            for (int j = 0; j < count; j++)
                cr_assert_str_neq(names[j], names[count], "two descriptors named %s", names[j]);
            count++;
            ws_err e = {""};
            char *a = ws_dws_emit(&set[i], 9, 0, &e), *b = ws_dws_emit(&set[i], 9, 0, &e);
            char *c80 = ws_dws_emit(&set[i], 8, 0, &e);
            cr_assert(a && b && c80, "%s", e.msg);
            cr_assert_str_eq(a, b, "%s: the same descriptor, other bytes", names[count - 1]);
            cr_assert(strstr(a, ".target sm_90") && strstr(c80, ".target sm_80"));
            free(a), free(b), free(c80);
        }
    }
    /* the layouts are named apart when they differ */
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = 8, .c_out = 8, .groups = 8, .k = 4, .stride = 1,
                      .dilation = 1, .pad_l = 3, .x_layout = WS_NCL, .y_layout = WS_NLC};
    char name[WS_DWS_NAME_MAX];
    ws_dws_name(&d, name);
    cr_assert_str_eq(name, "ws_dws_fwd_c8_k4_d1_ncl_nlc_f32_f32_none_none");
    ws_dws_entry(&d, WS_DWS_FINAL, name);
    cr_assert_str_eq(name, "ws_dws_fwd_c8_k4_d1_ncl_nlc_f32_f32_none_none_final");
}

Test(ptx_dws, only_depthwise_causal_descriptors_fit)
{
    const ws_conv_desc base = {.op = WS_CONV_BWD, .c_in = 32, .c_out = 32, .groups = 32, .k = 4,
                               .stride = 1, .dilation = 2, .pad_l = 6, .pad_r = 0,
                               .x_layout = WS_NLC, .y_layout = WS_NLC, .x_type = WS_BF16,
                               .w_type = WS_BF16, .y_type = WS_BF16, .act = WS_ACT_SILU};
    cr_assert(ws_dws_fits(&base));
    ws_conv_desc d = base;
    d.x_layout = WS_NCL;
    cr_assert(ws_dws_fits(&d), "layouts may differ");
    for (int v = 0; v < 6; v++) {
        d = base;
        const char *what = "";
        switch (v) {
        case 0: d.groups = 1, what = "dense"; break;
        case 1: d.c_out = 64, what = "two outputs per channel"; break;
        case 2: d.stride = 2, what = "stride 2"; break;
        case 3: d.pad_l = 5, what = "pad_l other than dilation*(k-1)"; break;
        case 4: d.pad_r = 1, what = "pad_r 1"; break;
        case 5: d.k = 0, what = "an invalid descriptor"; break;
        }
        cr_assert_not(ws_dws_fits(&d), "%s fits", what);
        ws_err e = {""};
        cr_assert_null(ws_dws_emit(&d, 9, 0, &e), "%s emitted", what);
        cr_assert(strstr(e.msg, v == 5 ? "k 0" : "not a depthwise causal descriptor"), "%s: %s", what, e.msg);
    }
    /* threads per entry and the backward's scratch */
    const int n = 3, t = 10;
    cr_assert_eq(ws_dws_elements(&base, WS_DWS_GZ, n, t), 3ULL * 32 * 10);
    cr_assert_eq(ws_dws_elements(&base, WS_DWS_DX, n, t), 3ULL * 32 * 10);
    cr_assert_eq(ws_dws_elements(&base, WS_DWS_DINIT, n, t), 3ULL * 32 * 3);
    cr_assert_eq(ws_dws_elements(&base, WS_DWS_DW, n, t), 32ULL * 4);
    cr_assert_eq(ws_dws_elements(&base, WS_DWS_DB, n, t), 32ULL);
    cr_assert_eq(ws_dws_elements(&base, WS_DWS_FWD, n, t), 0, "a BWD module has no _fwd");
    cr_assert_eq(ws_dws_scratch_bytes(&base, n, t), 3ULL * 32 * 10 * 4);
    d = base;
    d.op = WS_CONV_FWD;
    cr_assert_eq(ws_dws_elements(&d, WS_DWS_FWD, n, t), 3ULL * 32 * 10);
    cr_assert_eq(ws_dws_elements(&d, WS_DWS_FINAL, n, t), 3ULL * 32);
    cr_assert_eq(ws_dws_scratch_bytes(&d, n, t), 0);
    d.k = 1, d.pad_l = 0;
    cr_assert_eq(ws_dws_elements(&d, WS_DWS_FWD, n, t), 3ULL * 32 * 10);
    d.op = WS_CONV_BWD;
    cr_assert_eq(ws_dws_elements(&d, WS_DWS_DINIT, n, t), 0, "K 1: no states");
}

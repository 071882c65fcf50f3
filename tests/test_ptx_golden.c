/* test_ptx_golden.c - golden hashes of every kernel the stem emits; needs
 * no GPU.
 *
 * For tiny (n_mels 80, d 384) and large-v3 (n_mels 128, d 1280), each
 * precision and the targets sm_80 and sm_90, the kernels ws_gpu_lower emits for
 * the stem's two descriptors (ws_stem_descs) must be the same kernels, in the
 * same order, with the same text (64-bit FNV-1a) as recorded in the table below. A restructuring of the PTX emitters has to
 * keep these bytes; a deliberate kernel change re-runs the GPU suite on an
 * H100 (scripts/gpu-node.sh) and updates the table, which the test prints
 * itself in C syntax when WS_GOLDEN_PRINT=1:
 *
 *   WS_GOLDEN_PRINT=1 build/test_runner \
 *       --filter ptx_golden/stem_kernels_emit_the_recorded_bytes
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gpu.h"
#include "cuda/kernels.h"
#include "whisper/stem.h"

/* 64-bit FNV-1a over a NUL-terminated text. */
static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ULL;
    }
    return h;
}

typedef struct {
    const char *shape; /* "tiny" or "large-v3" */
    const char *prec;  /* ws_precision_name */
    int sm;            /* target, cc_major * 10 + cc_minor */
    const char *kernel;
    uint64_t hash;     /* fnv1a64 of the module text */
} golden_row;

/* clang-format off */
static const golden_row golden[] = {
    { "tiny", "fp32", 80, "ws_mel_t_fp32", 0xbea65b272fa4dff6ULL },
    { "tiny", "fp32", 80, "ws_conv1_fp32_l", 0x7e899628fabb096fULL },
    { "tiny", "fp32", 80, "ws_conv1_fp32_s", 0xc9e9670289adcbe5ULL },
    { "tiny", "fp32", 80, "ws_conv2_fp32_l", 0x522b9b1751255880ULL },
    { "tiny", "fp32", 80, "ws_conv2_fp32_s", 0xe639415d0159ebbdULL },
    { "tiny", "fp32", 80, "ws_splitk_finish", 0x84edcc8aaf78411aULL },
    { "tiny", "fp32", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "tiny", "fp32", 90, "ws_mel_t_fp32", 0x95a66c28ff5f228cULL },
    { "tiny", "fp32", 90, "ws_conv1_fp32_l", 0xb2664764dec7e450ULL },
    { "tiny", "fp32", 90, "ws_conv1_fp32_s", 0x2a7683a4e8b179f8ULL },
    { "tiny", "fp32", 90, "ws_conv2_fp32_l", 0x3b6a31ee197b506bULL },
    { "tiny", "fp32", 90, "ws_conv2_fp32_s", 0x3a7e0cbf717bc9caULL },
    { "tiny", "fp32", 90, "ws_splitk_finish", 0xbbd4c2bed16f9eacULL },
    { "tiny", "fp32", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
    { "tiny", "tf32", 80, "ws_mel_t_tf32", 0x292934d040228084ULL },
    { "tiny", "tf32", 80, "ws_conv1_tf32_l", 0xaff20d3e8654ae95ULL },
    { "tiny", "tf32", 80, "ws_conv1_tf32_s", 0x3d3cfd37d4b2f151ULL },
    { "tiny", "tf32", 80, "ws_conv2_tf32_l", 0xfa9994b3d93db141ULL },
    { "tiny", "tf32", 80, "ws_conv2_tf32_s", 0xa6da40075ad66b3cULL },
    { "tiny", "tf32", 80, "ws_splitk_finish", 0x84edcc8aaf78411aULL },
    { "tiny", "tf32", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "tiny", "tf32", 90, "ws_mel_t_tf32", 0x651ab69640a9102aULL },
    { "tiny", "tf32", 90, "ws_conv1_tf32_l", 0x6f5449a59eb4cee3ULL },
    { "tiny", "tf32", 90, "ws_conv1_tf32_s", 0xfe08fe608c0857f3ULL },
    { "tiny", "tf32", 90, "ws_conv2_tf32_l", 0xd6aae9b0f1d696cfULL },
    { "tiny", "tf32", 90, "ws_conv2_tf32_s", 0xe312195e89bacf76ULL },
    { "tiny", "tf32", 90, "ws_splitk_finish", 0xbbd4c2bed16f9eacULL },
    { "tiny", "tf32", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
    { "tiny", "bf16", 80, "ws_mel_t_bf16", 0x1278ef86fc6485c5ULL },
    { "tiny", "bf16", 80, "ws_conv1_bf16_l", 0xa187633a5a719e5bULL },
    { "tiny", "bf16", 80, "ws_conv1_bf16_s", 0x666c3bcab40a941cULL },
    { "tiny", "bf16", 80, "ws_conv2_bf16_l", 0xbf48d31a5c1d8b5cULL },
    { "tiny", "bf16", 80, "ws_conv2_bf16_s", 0x37c1bcfb43b03685ULL },
    { "tiny", "bf16", 80, "ws_splitk_finish", 0x84edcc8aaf78411aULL },
    { "tiny", "bf16", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "tiny", "bf16", 90, "ws_mel_t_bf16", 0xb9d77340b0f4f5c3ULL },
    { "tiny", "bf16", 90, "ws_conv1_bf16_l", 0xdb1638b5ed871abdULL },
    { "tiny", "bf16", 90, "ws_conv1_bf16_s", 0xe235c872b2970952ULL },
    { "tiny", "bf16", 90, "ws_conv2_bf16_l", 0xcce754cb7cb24c92ULL },
    { "tiny", "bf16", 90, "ws_conv2_bf16_s", 0x73ef12dd40c0f3bfULL },
    { "tiny", "bf16", 90, "ws_splitk_finish", 0xbbd4c2bed16f9eacULL },
    { "tiny", "bf16", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
    { "tiny", "fp16", 80, "ws_mel_t_fp16", 0x337f8570d8ff2379ULL },
    { "tiny", "fp16", 80, "ws_conv1_fp16_l", 0xa9bd4c5ba12a87e5ULL },
    { "tiny", "fp16", 80, "ws_conv1_fp16_s", 0xb24b98d24b0b04f2ULL },
    { "tiny", "fp16", 80, "ws_conv2_fp16_l", 0x27d5c366ad1d5204ULL },
    { "tiny", "fp16", 80, "ws_conv2_fp16_s", 0x03973ab3d921e89dULL },
    { "tiny", "fp16", 80, "ws_splitk_finish", 0x84edcc8aaf78411aULL },
    { "tiny", "fp16", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "tiny", "fp16", 90, "ws_mel_t_fp16", 0xd51440bc144a0e3bULL },
    { "tiny", "fp16", 90, "ws_conv1_fp16_l", 0xf18f013baa02c593ULL },
    { "tiny", "fp16", 90, "ws_conv1_fp16_s", 0x41bc7440f656bcd4ULL },
    { "tiny", "fp16", 90, "ws_conv2_fp16_l", 0x1e6f003c9f55590eULL },
    { "tiny", "fp16", 90, "ws_conv2_fp16_s", 0x717c88176b44bf2bULL },
    { "tiny", "fp16", 90, "ws_splitk_finish", 0xbbd4c2bed16f9eacULL },
    { "tiny", "fp16", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
    { "large-v3", "fp32", 80, "ws_mel_t_fp32", 0x9610e026beccb8b9ULL },
    { "large-v3", "fp32", 80, "ws_conv1_fp32_l", 0x245be9c500f1b4d9ULL },
    { "large-v3", "fp32", 80, "ws_conv1_fp32_s", 0x76303a994777d973ULL },
    { "large-v3", "fp32", 80, "ws_conv2_fp32_l", 0x727a0f7db110e765ULL },
    { "large-v3", "fp32", 80, "ws_conv2_fp32_s", 0x99cca7afd58c2e12ULL },
    { "large-v3", "fp32", 80, "ws_splitk_finish", 0xf1e58918ac23e743ULL },
    { "large-v3", "fp32", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "large-v3", "fp32", 90, "ws_mel_t_fp32", 0xdf30d47cb563300fULL },
    { "large-v3", "fp32", 90, "ws_conv1_fp32_l", 0x12a89225961c956aULL },
    { "large-v3", "fp32", 90, "ws_conv1_fp32_s", 0xfbd89393fbfaae66ULL },
    { "large-v3", "fp32", 90, "ws_conv2_fp32_l", 0x97ad0f53cbd10812ULL },
    { "large-v3", "fp32", 90, "ws_conv2_fp32_s", 0xcb475abf23558cb1ULL },
    { "large-v3", "fp32", 90, "ws_splitk_finish", 0xfa1bdc4e84120bf5ULL },
    { "large-v3", "fp32", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
    { "large-v3", "tf32", 80, "ws_mel_t_tf32", 0x4a408d2b4f0eed81ULL },
    { "large-v3", "tf32", 80, "ws_conv1_tf32_l", 0x633a08ed133eba97ULL },
    { "large-v3", "tf32", 80, "ws_conv1_tf32_s", 0x14035f01c273434fULL },
    { "large-v3", "tf32", 80, "ws_conv2_tf32_l", 0x5c7d1e35ec151b15ULL },
    { "large-v3", "tf32", 80, "ws_conv2_tf32_s", 0xa357c49332377b32ULL },
    { "large-v3", "tf32", 80, "ws_splitk_finish", 0xf1e58918ac23e743ULL },
    { "large-v3", "tf32", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "large-v3", "tf32", 90, "ws_mel_t_tf32", 0xfa1d566cbde343d7ULL },
    { "large-v3", "tf32", 90, "ws_conv1_tf32_l", 0x41ff01cfc2597c05ULL },
    { "large-v3", "tf32", 90, "ws_conv1_tf32_s", 0xb2d16ad69163fb39ULL },
    { "large-v3", "tf32", 90, "ws_conv2_tf32_l", 0x1775b196e4e36373ULL },
    { "large-v3", "tf32", 90, "ws_conv2_tf32_s", 0x4e7b1f19c9c4ae24ULL },
    { "large-v3", "tf32", 90, "ws_splitk_finish", 0xfa1bdc4e84120bf5ULL },
    { "large-v3", "tf32", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
    { "large-v3", "bf16", 80, "ws_mel_t_bf16", 0x5a04b7c678f76ca8ULL },
    { "large-v3", "bf16", 80, "ws_conv1_bf16_l", 0xac81daccaf6392c9ULL },
    { "large-v3", "bf16", 80, "ws_conv1_bf16_s", 0x838a82901a4f6821ULL },
    { "large-v3", "bf16", 80, "ws_conv2_bf16_l", 0xde09feb9df0a7cabULL },
    { "large-v3", "bf16", 80, "ws_conv2_bf16_s", 0x2f03bbaf627c2892ULL },
    { "large-v3", "bf16", 80, "ws_splitk_finish", 0xf1e58918ac23e743ULL },
    { "large-v3", "bf16", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "large-v3", "bf16", 90, "ws_mel_t_bf16", 0x8957e999b66b5396ULL },
    { "large-v3", "bf16", 90, "ws_conv1_bf16_l", 0x96cbc35455c990fbULL },
    { "large-v3", "bf16", 90, "ws_conv1_bf16_s", 0x6022fa45cf9ebb87ULL },
    { "large-v3", "bf16", 90, "ws_conv2_bf16_l", 0xe11599a436ad5c39ULL },
    { "large-v3", "bf16", 90, "ws_conv2_bf16_s", 0xa7211c88c98effacULL },
    { "large-v3", "bf16", 90, "ws_splitk_finish", 0xfa1bdc4e84120bf5ULL },
    { "large-v3", "bf16", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
    { "large-v3", "fp16", 80, "ws_mel_t_fp16", 0x4c6ad6189d81b908ULL },
    { "large-v3", "fp16", 80, "ws_conv1_fp16_l", 0x92d74d9804d53723ULL },
    { "large-v3", "fp16", 80, "ws_conv1_fp16_s", 0x9b4c1238f3d38809ULL },
    { "large-v3", "fp16", 80, "ws_conv2_fp16_l", 0x33ad759fd7161343ULL },
    { "large-v3", "fp16", 80, "ws_conv2_fp16_s", 0xbed29858e98a2cbaULL },
    { "large-v3", "fp16", 80, "ws_splitk_finish", 0xf1e58918ac23e743ULL },
    { "large-v3", "fp16", 80, "ws_gelu_grid", 0x4c7d7b3ec5309e58ULL },
    { "large-v3", "fp16", 90, "ws_mel_t_fp16", 0x59431f8fd39fe18aULL },
    { "large-v3", "fp16", 90, "ws_conv1_fp16_l", 0x8ea94b6b40a33829ULL },
    { "large-v3", "fp16", 90, "ws_conv1_fp16_s", 0x0f6103c8d788a0c3ULL },
    { "large-v3", "fp16", 90, "ws_conv2_fp16_l", 0x823bb2ec16dcc475ULL },
    { "large-v3", "fp16", 90, "ws_conv2_fp16_s", 0xc1232b69f7b19418ULL },
    { "large-v3", "fp16", 90, "ws_splitk_finish", 0xfa1bdc4e84120bf5ULL },
    { "large-v3", "fp16", 90, "ws_gelu_grid", 0x7fd3efb2b5df12ceULL },
};
/* clang-format on */

static const struct {
    const char *name;
    int n_mels, d;
} shapes[] = { { "tiny", 80, 384 }, { "large-v3", 128, 1280 } };
static const ws_precision precs[] = { WS_PREC_FP32, WS_PREC_TF32, WS_PREC_BF16, WS_PREC_FP16 };
static const int sms[] = { 80, 90 };

#define N_GOLDEN ((int)(sizeof golden / sizeof golden[0]))

static int count_entries(const char *ptx)
{
    int n = 0;
    for (const char *p = ptx; (p = strstr(p, ".entry")) != NULL; p += 6)
        n++;
    return n;
}

Test(ptx_golden, stem_kernels_emit_the_recorded_bytes)
{
    static const char *update =
        "the emitted PTX changed: if deliberate, re-run the GPU suite on an H100 "
        "(scripts/gpu-node.sh) and update this table (WS_GOLDEN_PRINT=1 prints it)";
    const char *pr = getenv("WS_GOLDEN_PRINT");
    int print = pr && *pr && strcmp(pr, "0") != 0;
    if (print)
        printf("static const golden_row golden[] = {\n");

    int used = 0; /* golden rows matched so far, in table order */
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++)
            for (size_t ti = 0; ti < sizeof sms / sizeof sms[0]; ti++) {
                const char *shape = shapes[si].name, *prec = ws_precision_name(precs[pi]);
                int sm = sms[ti];
                ws_kernel_src *k = NULL;
                ws_err err = { 0 };
                ws_conv_desc pair[2];
                ws_stem_descs(shapes[si].n_mels, shapes[si].d, precs[pi], pair);
                int rc = ws_gpu_lower(pair, sm / 10, sm % 10, &k, &err);
                cr_assert_eq(rc, 0, "%s %s sm_%d: ws_gpu_lower failed: %s", shape, prec, sm,
                             err.msg);

                /* The recorded rows of this combination, in order. */
                int first = used, n_rec = 0;
                while (first + n_rec < N_GOLDEN && !strcmp(golden[first + n_rec].shape, shape) &&
                       !strcmp(golden[first + n_rec].prec, prec) && golden[first + n_rec].sm == sm)
                    n_rec++;

                for (int i = 0; i < WS_K_COUNT; i++) {
                    cr_assert(k[i].ptx && k[i].name[0], "%s %s sm_%d: kernel %d is empty", shape,
                              prec, sm, i);
                    cr_assert_eq(count_entries(k[i].ptx), 1,
                                 "%s %s sm_%d: kernel %s: %d .entry in its module, want 1", shape,
                                 prec, sm, k[i].name, count_entries(k[i].ptx));
                    uint64_t h = fnv1a64(k[i].ptx);
                    if (print)
                        printf("    { \"%s\", \"%s\", %d, \"%s\", 0x%016" PRIx64 "ULL },\n", shape,
                               prec, sm, k[i].name, h);
                    if (print)
                        continue;
                    cr_assert_lt(i, n_rec,
                                 "%s %s sm_%d: kernel %s (0x%016" PRIx64
                                 ") is not in the table (%d recorded): %s",
                                 shape, prec, sm, k[i].name, h, n_rec, update);
                    const golden_row *g = &golden[first + i];
                    cr_assert_str_eq(k[i].name, g->kernel,
                                     "%s %s sm_%d: kernel %d is %s, recorded %s: %s", shape, prec,
                                     sm, i, k[i].name, g->kernel, update);
                    cr_assert_eq(h, g->hash,
                                 "%s %s sm_%d: kernel %s hashes 0x%016" PRIx64
                                 ", recorded 0x%016" PRIx64 ": %s",
                                 shape, prec, sm, k[i].name, h, g->hash, update);
                }
                if (!print)
                    cr_assert_eq(n_rec, WS_K_COUNT,
                                 "%s %s sm_%d: %d kernels emitted, %d recorded: %s", shape, prec,
                                 sm, WS_K_COUNT, n_rec, update);
                used = first + n_rec;
                ws_gpu_kernels_free(k);
            }

    if (print) {
        printf("};\n");
        fflush(stdout);
        cr_skip_test("WS_GOLDEN_PRINT set: table printed, not compared");
    }
    cr_assert_eq(used, N_GOLDEN, "%d rows recorded, %d matched the 16 combinations: %s", N_GOLDEN,
                 used, update);
}

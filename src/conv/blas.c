/* blas.c - see blas.h. */
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv.h"

/* CBLAS's standard enum values (cblas.h: CblasRowMajor = 101, CblasNoTrans = 111). */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };

typedef void (*sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C,
                         int ldc);

static struct {
    pthread_once_t once;
    sgemm_fn sgemm;
    char name[96];
} g_blas = {PTHREAD_ONCE_INIT, NULL, "built-in loops"};

static void blas_load(void)
{
    int is_openblas = 0;
    /* Pick OpenBLAS's kernels by what the CPU can do, unless the user chose:
     * OpenBLAS 0.3.21 goes by the CPU model, and on models it does not know
     * (AMD Zen 4/5, CPUs behind a hypervisor that hides the model) it falls
     * back to AVX2 or even SSE3 ("Prescott") kernels. Its SkylakeX and Haswell
     * sgemm kernels need exactly these feature sets. */
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (!getenv("OPENBLAS_CORETYPE")) {
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
        else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            setenv("OPENBLAS_CORETYPE", "Haswell", 0);
    }
#endif
    void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h)
        is_openblas = 1;
    else
        h = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    g_blas.sgemm = (sgemm_fn)dlsym(h, "cblas_sgemm");
    if (!g_blas.sgemm)
        return;
    if (is_openblas) {
        void (*set_threads)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
        char *(*corename)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
        if (set_threads)
            set_threads(1);
        snprintf(g_blas.name, sizeof g_blas.name, "OpenBLAS (%s)", corename ? corename() : "?");
    } else {
        snprintf(g_blas.name, sizeof g_blas.name, "CBLAS (libblas.so.3)");
    }
}

const char *ws_blas_name(void)
{
    pthread_once(&g_blas.once, blas_load);
    return g_blas.name;
}

/* Fallback: row of C += a[i] * row of B, vectorisable inner loop. */
static void sgemm_loops(int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                        int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        for (int j = 0; j < N; j++)
            c[j] = beta == 0.0f ? 0.0f : beta * c[j];
        for (int k = 0; k < K; k++) {
            const float a = alpha * A[(size_t)i * lda + k];
            const float *b = B + (size_t)k * ldb;
            for (int j = 0; j < N; j++)
                c[j] += a * b[j];
        }
    }
}

void ws_sgemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    pthread_once(&g_blas.once, blas_load);
    if (M <= 0 || N <= 0)
        return;
    if (g_blas.sgemm)
        g_blas.sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, M, N, K, alpha, A, lda, B, ldb,
                     beta, C, ldc);
    else
        sgemm_loops(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

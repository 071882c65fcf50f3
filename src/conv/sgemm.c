/* sgemm.c - the engine's own single-precision GEMM (blas.h): register-blocked outer products
 * over packed B, for AVX-512F, AVX2 + FMA, or plain C, chosen once per process.
 *
 *   C[M x N] = alpha * A[M x K] * B[K x N] + beta * C        (row-major, no transposes)
 *
 * B is packed into panels of NR columns, [K][NR] each (zero past N), either once ahead
 * (ws_sgemm_pack: the conv engine's weights) or per call, KC rows by NC columns at a time
 * (ws_sgemm). A is read in place: row i at A + i*lda, broadcast one element at a time.
 * The micro-kernel keeps an MR x NR block of C in registers over KC steps of k:
 *   AVX-512  MR 12, NR 32 (24 zmm accumulators, 2 for B; A by embedded broadcast)
 *   AVX2     MR 6,  NR 16 (12 ymm accumulators, 2 for B, 1 for A)
 *   plain C  MR 4,  NR 16
 * Each element of C is summed in the order k = 0 .. K-1: fmas in k within a KC block, the
 * block's sum then added to C (the first block of a call: beta*C + alpha*sum, or alpha*sum
 * when beta is 0, C unread; later blocks: C + alpha*sum). The blocks are fixed by K alone,
 * so an element's bits depend on K, the path and its inputs, not on M, N, the element's
 * place or the caller's threads.
 *
 * The path: AVX-512F where CPUID has it and the OS saves the ZMM state (XCR0 bits 1, 2, 5,
 * 6, 7), else AVX2 + FMA where the OS saves the YMM state (bits 1, 2), else plain C.
 * WS_CPU_ISA=avx512|avx2|scalar asks for one (a path the CPU lacks falls to the next one it
 * has). Tested by tests/test_conv.c (every path against a float64 product; bits across
 * blockings) and by the engine's tests under each path.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blas.h"
#include "conv.h"

#if defined(__x86_64__) || defined(__i386__)
#define WS_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define WS_X86 0
#endif

/* blocks: KC steps of k (a B panel of KC x 32 floats in L1), NC columns of B and MC rows of
 * A (both in L2) */
enum { KC = 256, NC = 512, MC = 192 };

/* ---- the path ---- */

static int isa_pick = -1;
static pthread_once_t isa_once = PTHREAD_ONCE_INIT;

#if WS_X86
static uint64_t xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static int isa_have(void)
{
#if WS_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return WS_ISA_SCALAR;
    const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, fma = (c >> 12) & 1;
    if (!osxsave || !avx)
        return WS_ISA_SCALAR;
    const uint64_t x = xcr0();
    if ((x & 6) != 6)
        return WS_ISA_SCALAR;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return WS_ISA_SCALAR;
    const int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1;
    if (avx512f && fma && (x & 0xe6) == 0xe6)
        return WS_ISA_AVX512;
    if (avx2 && fma)
        return WS_ISA_AVX2;
#endif
    return WS_ISA_SCALAR;
}

static void isa_init(void)
{
    int have = isa_have(), want = have;
    const char *e = getenv("WS_CPU_ISA");
    if (e && !strcmp(e, "scalar"))
        want = WS_ISA_SCALAR;
    else if (e && !strcmp(e, "avx2"))
        want = WS_ISA_AVX2;
    else if (e && !strcmp(e, "avx512"))
        want = WS_ISA_AVX512;
    isa_pick = want < have ? want : have;
}

int ws_cpu_isa(void)
{
    pthread_once(&isa_once, isa_init);
    return isa_pick;
}

int ws_cpu_isa_have(void)
{
    return isa_have();
}

const char *ws_blas_name(void)
{
    static const char *const names[] = { "whisper-stem sgemm (C)", "whisper-stem sgemm (AVX2+FMA)",
                                         "whisper-stem sgemm (AVX-512)" };
    return names[ws_cpu_isa()];
}

/* ---- packing ---- */

/* panels [p][k][NR] of B's columns [n0, n0 + nb), rows [k0, k0 + kb): out row k of panel p
 * at out + (p*kb + k)*NR; columns past N zero */
static void pack_b(float *out, const float *B, int ldb, int k0, int kb, int n0, int nb, int NR)
{
    for (int p = 0; p * NR < nb; p++) {
        const int c0 = n0 + p * NR, w = nb - p * NR < NR ? nb - p * NR : NR;
        float *o = out + (size_t)p * kb * NR;
        for (int k = 0; k < kb; k++) {
            const float *b = B + (size_t)(k0 + k) * ldb + c0;
            memcpy(o + (size_t)k * NR, b, (size_t)w * sizeof(float));
            if (w < NR)
                memset(o + (size_t)k * NR + w, 0, (size_t)(NR - w) * sizeof(float));
        }
    }
}

/* A's view: element (i, k) at A + i*lda + (k / ic)*tap + k % ic (a plain matrix: ic = K, tap
 * unused; a conv: K = taps*ic, each tap's columns a shifted row view of the input) */
typedef struct {
    const float *A;
    long lda, tap;
    int ic;
} aview;

/* rows [m0, m0 + mb) and columns [k0, k0 + kb) of A as micro-panels of MR rows: row r
 * of panel q, column k at out + q*MR*kb + k*MR + r (rows past mb zero) */
static void pack_a(float *out, const aview *v, int m0, int mb, int k0, int kb, int MR)
{
    for (int q = 0; q * MR < mb; q++) {
        float *o = out + (size_t)q * MR * kb;
        const int rows = mb - q * MR < MR ? mb - q * MR : MR;
        for (int r = 0; r < rows; r++) {
            const float *row = v->A + (size_t)(m0 + q * MR + r) * v->lda;
            for (int k = 0; k < kb;) { /* one tap's run of columns at a time */
                const int kk = k0 + k, t = kk / v->ic, c = kk % v->ic;
                const int run = v->ic - c < kb - k ? v->ic - c : kb - k;
                const float *a = row + (size_t)t * v->tap + c;
                for (int j = 0; j < run; j++)
                    o[(size_t)(k + j) * MR + r] = a[j];
                k += run;
            }
        }
        for (int r = rows; r < MR; r++)
            for (int k = 0; k < kb; k++)
                o[(size_t)k * MR + r] = 0.0f;
    }
}

/* ---- micro-kernels: C[mr x nr] (+)= alpha * A[mr x kc] * Bp[kc x NR] ----
 * first: the first K block of the call (beta applies); nr <= NR columns stored */

typedef void (*ukernel_fn)(int mr, int nr, int kc, float alpha, const float *A, long lda, const float *Bp,
                           float beta, int first, float *C, long ldc);

static inline float out_scalar(float acc, float alpha, float beta, int first, const float *c)
{
    if (!first)
        return *c + alpha * acc;
    return beta == 0.0f ? alpha * acc : beta * *c + alpha * acc;
}

static void ukernel_c(int mr, int nr, int kc, float alpha, const float *A, long lda, const float *Bp,
                      float beta, int first, float *C, long ldc)
{
    enum { NR = 16, MR = 4 };
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (int k = 0; k < kc; k++) {
        const float *b = Bp + (size_t)k * NR;
        for (int r = 0; r < mr; r++) {
            const float a = A[(size_t)k * lda + r];
            for (int j = 0; j < NR; j++)
                acc[r][j] += a * b[j];
        }
    }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++)
            C[r * ldc + j] = out_scalar(acc[r][j], alpha, beta, first, &C[r * ldc + j]);
}

#if WS_X86
#define AVX512 __attribute__((target("avx512f,fma")))
#define AVX2 __attribute__((target("avx2,fma")))

/* MR_ rows (a constant at each call site, so the loops unroll into registers) */
static inline __attribute__((always_inline)) AVX512 void k512(const int MR_, int nr, int kc, float alpha,
                                                                const float *A, long lda, const float *Bp,
                                                                float beta, int first, float *C, long ldc)
{
    __m512 c0[12], c1[12];
#pragma GCC unroll 12
    for (int r = 0; r < MR_; r++)
        c0[r] = c1[r] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(Bp + (size_t)k * 32), b1 = _mm512_load_ps(Bp + (size_t)k * 32 + 16);
        const float *ak = A + (size_t)k * lda;
#pragma GCC unroll 12
        for (int r = 0; r < MR_; r++) {
            const __m512 av = _mm512_set1_ps(ak[r]);
            c0[r] = _mm512_fmadd_ps(av, b0, c0[r]);
            c1[r] = _mm512_fmadd_ps(av, b1, c1[r]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    const __mmask16 m0 = nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
#pragma GCC unroll 12
    for (int r = 0; r < MR_; r++) {
        float *c = C + r * ldc;
        __m512 o0 = _mm512_mul_ps(va, c0[r]), o1 = _mm512_mul_ps(va, c1[r]);
        if (!first) {
            o0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, c), o0);
            o1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, c + 16), o1);
        } else if (beta != 0.0f) {
            o0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c), o0);
            o1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + 16), o1);
        }
        _mm512_mask_storeu_ps(c, m0, o0);
        _mm512_mask_storeu_ps(c + 16, m1, o1);
    }
}

static AVX512 void ukernel_512(int mr, int nr, int kc, float alpha, const float *A, long lda,
                               const float *Bp, float beta, int first, float *C, long ldc)
{
    switch (mr) {
#define K512(m)                                                                                    \
    case m:                                                                                        \
        k512(m, nr, kc, alpha, A, lda, Bp, beta, first, C, ldc);                                   \
        break;
        K512(12) K512(11) K512(10) K512(9) K512(8) K512(7) K512(6) K512(5) K512(4) K512(3) K512(2)
        K512(1)
#undef K512
    default:
        break;
    }
}

static inline __attribute__((always_inline)) AVX2 void k256(const int MR_, int nr, int kc, float alpha,
                                                              const float *A, long lda, const float *Bp,
                                                              float beta, int first, float *C, long ldc)
{
    __m256 c0[6], c1[6];
#pragma GCC unroll 6
    for (int r = 0; r < MR_; r++)
        c0[r] = c1[r] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(Bp + (size_t)k * 16), b1 = _mm256_load_ps(Bp + (size_t)k * 16 + 8);
        const float *ak = A + (size_t)k * lda;
#pragma GCC unroll 6
        for (int r = 0; r < MR_; r++) {
            const __m256 av = _mm256_broadcast_ss(ak + r);
            c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
            c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
        }
    }
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    if (nr == 16) {
#pragma GCC unroll 6
        for (int r = 0; r < MR_; r++) {
            float *c = C + r * ldc;
            __m256 o0 = _mm256_mul_ps(va, c0[r]), o1 = _mm256_mul_ps(va, c1[r]);
            if (!first) {
                o0 = _mm256_add_ps(_mm256_loadu_ps(c), o0);
                o1 = _mm256_add_ps(_mm256_loadu_ps(c + 8), o1);
            } else if (beta != 0.0f) {
                o0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c), o0);
                o1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(c + 8), o1);
            }
            _mm256_storeu_ps(c, o0);
            _mm256_storeu_ps(c + 8, o1);
        }
        return;
    }
    /* a tail of columns: the same arithmetic, lane by lane through a buffer */
#pragma GCC unroll 6
    for (int r = 0; r < MR_; r++) {
        float t[16], *c = C + r * ldc;
        _mm256_storeu_ps(t, _mm256_mul_ps(va, c0[r]));
        _mm256_storeu_ps(t + 8, _mm256_mul_ps(va, c1[r]));
        for (int j = 0; j < nr; j++)
            c[j] = !first ? c[j] + t[j] : beta != 0.0f ? fmaf(beta, c[j], t[j]) : t[j];
    }
}

static AVX2 void ukernel_256(int mr, int nr, int kc, float alpha, const float *A, long lda,
                             const float *Bp, float beta, int first, float *C, long ldc)
{
    switch (mr) {
#define K256(m)                                                                                    \
    case m:                                                                                        \
        k256(m, nr, kc, alpha, A, lda, Bp, beta, first, C, ldc);                                   \
        break;
        K256(6) K256(5) K256(4) K256(3) K256(2) K256(1)
#undef K256
    default:
        break;
    }
}
#endif

/* ---- the driver ---- */

typedef struct {
    int MR, NR;
    ukernel_fn k;
} path;

static path path_of(int isa)
{
#if WS_X86
    if (isa == WS_ISA_AVX512)
        return (path){ 12, 32, ukernel_512 };
    if (isa == WS_ISA_AVX2)
        return (path){ 6, 16, ukernel_256 };
#else
    (void)isa;
#endif
    return (path){ 4, 16, ukernel_c };
}

/* the per-thread packing buffer, freed when the thread ends */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

static void buf_free(void *p)
{
    free(p);
}

static void buf_init(void)
{
    pthread_key_create(&buf_key, buf_free);
}

static float *pack_buffer(void)
{
    pthread_once(&buf_once, buf_init);
    float *p = pthread_getspecific(buf_key);
    if (!p) {
        p = aligned_alloc(64, (size_t)KC * (NC + MC + 16) * sizeof(float));
        if (p && pthread_setspecific(buf_key, p) != 0) {
            free(p);
            p = NULL;
        }
    }
    return p;
}

/* C = alpha*A*B + beta*C, B given as panels: bp(k0, n0) the panel of columns n0.. at row k0,
 * pstride floats from one panel to the next */
static void run(const path *P, int M, int N, int K, float alpha, const aview *A, const float *B,
                int ldb, const float *Bpk, float beta, float *C, int ldc)
{
    const int MR = P->MR, NR = P->NR;
    float *buf = pack_buffer();
    if (!buf) { /* no memory for the packing blocks: plain loops, the same order of k */
        for (int i = 0; i < M; i++)
            for (int jj = 0; jj < N; jj++) {
                float acc = 0.0f;
                for (int k = 0; k < K; k++) {
                    const float a = A->A[(size_t)i * A->lda + (size_t)(k / A->ic) * A->tap + k % A->ic];
                    const float b = Bpk ? Bpk[((size_t)(jj / NR) * K + k) * NR + jj % NR] : B[(size_t)k * ldb + jj];
                    acc += a * b;
                }
                float *c = C + (size_t)i * ldc + jj;
                *c = beta == 0.0f ? alpha * acc : beta * *c + alpha * acc;
            }
        return;
    }
    float *abuf = buf + (size_t)KC * NC;
    for (int n0 = 0; n0 < N; n0 += NC) {
        const int nb = N - n0 < NC ? N - n0 : NC;
        for (int k0 = 0; k0 < K; k0 += KC) {
            const int kb = K - k0 < KC ? K - k0 : KC;
            const float *panel0;
            size_t pstride;
            if (Bpk) { /* full-K panels: panel p at Bpk + p*K*NR */
                panel0 = Bpk + (size_t)(n0 / NR) * K * NR + (size_t)k0 * NR;
                pstride = (size_t)K * NR;
            } else {
                pack_b(buf, B, ldb, k0, kb, n0, nb, NR);
                panel0 = buf;
                pstride = (size_t)kb * NR;
            }
            /* rows in blocks of MC, packed as [MR rows][kb][MR] (in L2); then a panel of
             * B (in L1) against every MR rows of the block */
            for (int m0 = 0; m0 < M; m0 += MC) {
                const int mb = M - m0 < MC ? M - m0 : MC;
                pack_a(abuf, A, m0, mb, k0, kb, MR);
                for (int j = 0; j < nb; j += NR) {
                    const int nr = nb - j < NR ? nb - j : NR;
                    const float *bp = panel0 + (size_t)(j / NR) * pstride;
                    for (int i0 = 0; i0 < mb; i0 += MR) {
                        const int mr = mb - i0 < MR ? mb - i0 : MR;
                        P->k(mr, nr, kb, alpha, abuf + (size_t)i0 * kb, MR, bp, beta, k0 == 0,
                             C + (size_t)(m0 + i0) * ldc + n0 + j, ldc);
                    }
                }
            }
        }
    }
}

void ws_sgemm(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) { /* C = beta*C */
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++)
                C[(size_t)i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[(size_t)i * ldc + j];
        return;
    }
    const path P = path_of(ws_cpu_isa());
    const aview v = { A, lda, 0, K };
    run(&P, M, N, K, alpha, &v, B, ldb, NULL, beta, C, ldc);
}

void ws_sgemm_isa(int isa, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                  int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0 || K <= 0) {
        ws_sgemm(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const path P = path_of(isa < ws_cpu_isa_have() ? isa : ws_cpu_isa_have());
    const aview v = { A, lda, 0, K };
    run(&P, M, N, K, alpha, &v, B, ldb, NULL, beta, C, ldc);
}

size_t ws_sgemm_packed_floats(int K, int N)
{
    const int NR = path_of(ws_cpu_isa()).NR;
    return (size_t)((N + NR - 1) / NR) * NR * (size_t)K;
}

void ws_sgemm_pack(int K, int N, const float *B, int ldb, float *out)
{
    const int NR = path_of(ws_cpu_isa()).NR;
    pack_b(out, B, ldb, 0, K, 0, N, NR);
}

void ws_sgemm_conv(int M, int N, int taps, int ic, const float *A, long lda, long tap, const float *Bpk,
                   float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0 || taps <= 0 || ic <= 0)
        return;
    const path P = path_of(ws_cpu_isa());
    const aview v = { A, lda, tap, ic };
    run(&P, M, N, taps * ic, 1.0f, &v, NULL, 0, Bpk, beta, C, ldc);
}

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
#include <float.h>
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

#if WS_X86 && defined(__SSE__)
/* 4 rows (row stride lda) x n columns to o[k*MR + r], r < 4, four columns at a time through
 * 4 x 4 transposes in SSE registers (then the columns left one by one): the same floats */
static void pack_a4(float *o, const float *a, long lda, int n, int MR)
{
    int k = 0;
    for (; k + 4 <= n; k += 4) {
        __m128 r0 = _mm_loadu_ps(a + k), r1 = _mm_loadu_ps(a + lda + k);
        __m128 r2 = _mm_loadu_ps(a + 2 * lda + k), r3 = _mm_loadu_ps(a + 3 * lda + k);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(o + (size_t)k * MR, r0);
        _mm_storeu_ps(o + (size_t)(k + 1) * MR, r1);
        _mm_storeu_ps(o + (size_t)(k + 2) * MR, r2);
        _mm_storeu_ps(o + (size_t)(k + 3) * MR, r3);
    }
    for (; k < n; k++)
        for (int r = 0; r < 4; r++)
            o[(size_t)k * MR + r] = a[r * lda + k];
}
#endif

/* rows [m0, m0 + mb) and columns [k0, k0 + kb) of A as micro-panels of MR rows: row r
 * of panel q, column k at out + q*MR*kb + k*MR + r (rows past mb zero) */
static void pack_a(float *out, const aview *v, int m0, int mb, int k0, int kb, int MR)
{
    for (int q = 0; q * MR < mb; q++) {
        float *o = out + (size_t)q * MR * kb;
        const int rows = mb - q * MR < MR ? mb - q * MR : MR;
        int r = 0;
#if WS_X86 && defined(__SSE__)
        for (; r + 4 <= rows; r += 4) { /* four rows at a time, one tap's run of columns */
            const float *row = v->A + (size_t)(m0 + q * MR + r) * v->lda;
            for (int k = 0; k < kb;) {
                const int kk = k0 + k, t = kk / v->ic, c = kk % v->ic;
                const int run = v->ic - c < kb - k ? v->ic - c : kb - k;
                pack_a4(o + (size_t)k * MR + r, row + (size_t)t * v->tap + c, v->lda, run, MR);
                k += run;
            }
        }
#endif
        for (; r < rows; r++) {
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
        for (r = rows; r < MR; r++)
            for (int k = 0; k < kb; k++)
                o[(size_t)k * MR + r] = 0.0f;
    }
}

/* ---- micro-kernels: C[mr x nr] (+)= alpha * A[mr x kc] * Bp[kc x NR] ----
 * first: the first K block of the call (beta applies); nr <= NR columns stored */

/* pf: kc lines of 64 bytes to bring to L2 while the tile is computed (one per step of k),
 * or NULL */
typedef void (*ukernel_fn)(int mr, int nr, int kc, float alpha, const float *A, long lda, const float *Bp,
                           float beta, int first, float *C, long ldc, const ws_sgemm_epi *e,
                           const float *pf);

static inline float out_scalar(float acc, float alpha, float beta, int first, const float *c)
{
    if (!first)
        return *c + alpha * acc;
    return beta == 0.0f ? alpha * acc : beta * *c + alpha * acc;
}

static void ukernel_c(int mr, int nr, int kc, float alpha, const float *A, long lda, const float *Bp,
                      float beta, int first, float *C, long ldc, const ws_sgemm_epi *e, const float *pf)
{
    (void)e; /* never fused: run() applies the epilogue after the tile */
    (void)pf;
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

/* ws_gelu_fma lane by lane (gelu.c has the steps and the reasons), on G vectors at once:
 * each step is written for the G vectors in turn, so that their chains (about 35 dependent
 * operations each) run side by side. One vector at a time, the core's scheduler holds little
 * more than one chain, and the epilogue runs at the chain's latency (tiny conv1 on a Zen 3
 * core, AVX2: 8.1 ms with the GELU, 6.2 without; 7.7 with four chains side by side). */
enum { G = 4 }; /* the unroll count below is G */
#define EACH(stmt)                                                                                 \
    do {                                                                                           \
        _Pragma("GCC unroll 4") for (int j = 0; j < G; j++) { stmt; }                              \
    } while (0)
static inline __attribute__((always_inline)) AVX512 void gelu512x(__m512 *x)
{
#define S(v) _mm512_set1_ps(v)
    __m512 ax[G], z[G], t[G], q[G], k[G], fn[G], r[G], p[G];
    __m512i n[G];
    EACH(ax[j] = _mm512_abs_ps(x[j]));
    EACH(z[j] = _mm512_mul_ps(ax[j], S(0.70710678118654752f)));
    EACH(t[j] = _mm512_div_ps(S(1.0f), _mm512_fmadd_ps(S(0.5f), z[j], S(1.0f))));
    EACH(q[j] = _mm512_fmadd_ps(S(0.17087277f), t[j], S(-0.82215223f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(1.48851587f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(-1.13520398f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(0.27886807f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(-0.18628806f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(0.09678418f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(0.37409196f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(1.00002368f)));
    EACH(q[j] = _mm512_fmadd_ps(q[j], t[j], S(-1.26551223f)));
    EACH(q[j] = _mm512_max_ps(_mm512_fnmadd_ps(z[j], z[j], q[j]), S(-87.0f))); /* NaN: -87 */
    EACH(k[j] = _mm512_fmadd_ps(q[j], S(1.44269504088896341f), S(12582912.0f)));
    EACH(fn[j] = _mm512_sub_ps(k[j], S(12582912.0f)));
    EACH(n[j] = _mm512_sub_epi32(_mm512_castps_si512(k[j]), _mm512_set1_epi32(0x4B400000)));
    EACH(r[j] = _mm512_fnmadd_ps(fn[j], S(0.693359375f), q[j]));
    EACH(r[j] = _mm512_fmadd_ps(fn[j], S(2.12194440e-4f), r[j]));
    EACH(p[j] = _mm512_fmadd_ps(S(1.9875691500e-4f), r[j], S(1.3981999507e-3f)));
    EACH(p[j] = _mm512_fmadd_ps(p[j], r[j], S(8.3334519073e-3f)));
    EACH(p[j] = _mm512_fmadd_ps(p[j], r[j], S(4.1665795894e-2f)));
    EACH(p[j] = _mm512_fmadd_ps(p[j], r[j], S(1.6666665459e-1f)));
    EACH(p[j] = _mm512_fmadd_ps(p[j], r[j], S(5.0000001201e-1f)));
    EACH(p[j] = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p[j], r[j]), r[j], r[j]), S(1.0f)));
    EACH(p[j] = _mm512_mul_ps(t[j], _mm512_mul_ps(p[j], _mm512_castsi512_ps(_mm512_slli_epi32(
                                                          _mm512_add_epi32(n[j], _mm512_set1_epi32(127)), 23)))));
    EACH(x[j] = _mm512_fnmadd_ps(_mm512_mul_ps(S(0.5f), _mm512_min_ps(ax[j], S(FLT_MAX))), p[j], /* NaN: FLT_MAX */
                                 _mm512_max_ps(x[j], _mm512_setzero_ps())));
#undef S
}

/* the epilogue on a tile of final sums t[mr][32]: C = act(t + bias) + add, columns < nr
 * (e's pointers at the tile's first row and column) */
static AVX512 void epi512(const float *t, int mr, int nr, const ws_sgemm_epi *e, float *C, long ldc)
{
    const __mmask16 m[2] = { nr >= 16 ? 0xffff : (__mmask16)((1u << nr) - 1),
                             nr >= 32 ? 0xffff : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1) };
    const __m512 b[2] = { e->bias ? _mm512_maskz_loadu_ps(m[0], e->bias) : _mm512_setzero_ps(),
                          e->bias ? _mm512_maskz_loadu_ps(m[1], e->bias + 16) : _mm512_setzero_ps() };
    __m512 v[24 + G - 1];
    const int nv = 2 * mr;
    for (int i = 0; i < nv; i++) {
        v[i] = _mm512_load_ps(t + i * 16); /* row i >> 1, half i & 1 */
        if (e->bias)
            v[i] = _mm512_add_ps(v[i], b[i & 1]);
    }
    if (e->act == WS_ACT_GELU) {
        for (int i = nv; i < (nv + G - 1) / G * G; i++)
            v[i] = _mm512_setzero_ps();
        for (int i = 0; i < nv; i += G)
            gelu512x(v + i);
    } else if (e->act == WS_ACT_RELU)
        for (int i = 0; i < nv; i++)
            v[i] = _mm512_max_ps(v[i], _mm512_setzero_ps()); /* NaN and -0: +0, as the C loop */
    for (int i = 0; i < nv; i++) {
        const int r = i >> 1, h = i & 1;
        if (e->add)
            v[i] = _mm512_add_ps(v[i], _mm512_maskz_loadu_ps(m[h], e->add + r * e->ldadd + h * 16));
        _mm512_mask_storeu_ps(C + r * ldc + h * 16, m[h], v[i]);
    }
}

/* MR_ rows (a constant at each call site, so the loops unroll into registers) */
static inline __attribute__((always_inline)) AVX512 void k512(const int MR_, int nr, int kc, float alpha,
                                                                const float *A, long lda, const float *Bp,
                                                                float beta, int first, float *C, long ldc,
                                                                const ws_sgemm_epi *e, const float *pf)
{
    __m512 c0[12], c1[12];
#pragma GCC unroll 12
    for (int r = 0; r < MR_; r++) {
        c0[r] = c1[r] = _mm512_setzero_ps();
        if (!first || beta != 0.0f || e) { /* C's tile arrives while the products run */
            _mm_prefetch((const char *)(C + r * ldc), _MM_HINT_T0);
            _mm_prefetch((const char *)(C + r * ldc + 16), _MM_HINT_T0);
        }
    }
    for (int k = 0; k < kc; k++) {
        if (pf)
            _mm_prefetch((const char *)(pf + (size_t)k * 16), _MM_HINT_T1);
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
    float tile[12 * 32] __attribute__((aligned(64))); /* the final sums, for the epilogue */
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
        if (e) {
            _mm512_store_ps(tile + r * 32, o0);
            _mm512_store_ps(tile + r * 32 + 16, o1);
        } else {
            _mm512_mask_storeu_ps(c, m0, o0);
            _mm512_mask_storeu_ps(c + 16, m1, o1);
        }
    }
    if (e)
        epi512(tile, MR_, nr, e, C, ldc);
}

static AVX512 void ukernel_512(int mr, int nr, int kc, float alpha, const float *A, long lda,
                               const float *Bp, float beta, int first, float *C, long ldc,
                               const ws_sgemm_epi *e, const float *pf)
{
    switch (mr) {
#define K512(m)                                                                                    \
    case m:                                                                                        \
        k512(m, nr, kc, alpha, A, lda, Bp, beta, first, C, ldc, e, pf);                            \
        break;
        K512(12) K512(11) K512(10) K512(9) K512(8) K512(7) K512(6) K512(5) K512(4) K512(3) K512(2)
        K512(1)
#undef K512
    default:
        break;
    }
}

/* gelu512x for AVX2 vectors: the same steps, lane by lane */
static inline __attribute__((always_inline)) AVX2 void gelu256x(__m256 *x)
{
#define S(v) _mm256_set1_ps(v)
    __m256 ax[G], z[G], t[G], q[G], k[G], fn[G], r[G], p[G];
    __m256i n[G];
    EACH(ax[j] = _mm256_andnot_ps(S(-0.0f), x[j]));
    EACH(z[j] = _mm256_mul_ps(ax[j], S(0.70710678118654752f)));
    EACH(t[j] = _mm256_div_ps(S(1.0f), _mm256_fmadd_ps(S(0.5f), z[j], S(1.0f))));
    EACH(q[j] = _mm256_fmadd_ps(S(0.17087277f), t[j], S(-0.82215223f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(1.48851587f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(-1.13520398f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(0.27886807f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(-0.18628806f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(0.09678418f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(0.37409196f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(1.00002368f)));
    EACH(q[j] = _mm256_fmadd_ps(q[j], t[j], S(-1.26551223f)));
    EACH(q[j] = _mm256_max_ps(_mm256_fnmadd_ps(z[j], z[j], q[j]), S(-87.0f))); /* NaN: -87 */
    EACH(k[j] = _mm256_fmadd_ps(q[j], S(1.44269504088896341f), S(12582912.0f)));
    EACH(fn[j] = _mm256_sub_ps(k[j], S(12582912.0f)));
    EACH(n[j] = _mm256_sub_epi32(_mm256_castps_si256(k[j]), _mm256_set1_epi32(0x4B400000)));
    EACH(r[j] = _mm256_fnmadd_ps(fn[j], S(0.693359375f), q[j]));
    EACH(r[j] = _mm256_fmadd_ps(fn[j], S(2.12194440e-4f), r[j]));
    EACH(p[j] = _mm256_fmadd_ps(S(1.9875691500e-4f), r[j], S(1.3981999507e-3f)));
    EACH(p[j] = _mm256_fmadd_ps(p[j], r[j], S(8.3334519073e-3f)));
    EACH(p[j] = _mm256_fmadd_ps(p[j], r[j], S(4.1665795894e-2f)));
    EACH(p[j] = _mm256_fmadd_ps(p[j], r[j], S(1.6666665459e-1f)));
    EACH(p[j] = _mm256_fmadd_ps(p[j], r[j], S(5.0000001201e-1f)));
    EACH(p[j] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p[j], r[j]), r[j], r[j]), S(1.0f)));
    EACH(p[j] = _mm256_mul_ps(t[j], _mm256_mul_ps(p[j], _mm256_castsi256_ps(_mm256_slli_epi32(
                                                          _mm256_add_epi32(n[j], _mm256_set1_epi32(127)), 23)))));
    EACH(x[j] = _mm256_fnmadd_ps(_mm256_mul_ps(S(0.5f), _mm256_min_ps(ax[j], S(FLT_MAX))), p[j],
                                 _mm256_max_ps(x[j], _mm256_setzero_ps())));
#undef S
}

#undef EACH

/* epi512 for a tile t[mr][16]; a tail of columns (nr < 16) through zero-padded copies */
static AVX2 void epi256(const float *t, int mr, int nr, const ws_sgemm_epi *e, float *C, long ldc)
{
    float bias[16] __attribute__((aligned(32))) = { 0 }, row[16] __attribute__((aligned(32)));
    if (e->bias)
        memcpy(bias, e->bias, (size_t)nr * sizeof(float));
    __m256 v[12 + G - 1];
    const int nv = 2 * mr;
    for (int i = 0; i < nv; i++) {
        v[i] = _mm256_load_ps(t + i * 8); /* row i >> 1, half i & 1 */
        if (e->bias)
            v[i] = _mm256_add_ps(v[i], _mm256_load_ps(bias + (i & 1) * 8));
    }
    if (e->act == WS_ACT_GELU) {
        for (int i = nv; i < (nv + G - 1) / G * G; i++)
            v[i] = _mm256_setzero_ps();
        for (int i = 0; i < nv; i += G)
            gelu256x(v + i);
    } else if (e->act == WS_ACT_RELU)
        for (int i = 0; i < nv; i++)
            v[i] = _mm256_max_ps(v[i], _mm256_setzero_ps());
    for (int i = 0; i < nv; i++) {
        const int r = i >> 1, h = i & 1;
        const float *ad = e->add ? e->add + r * e->ldadd + h * 8 : NULL;
        float *c = C + r * ldc + h * 8;
        if (nr == 16) {
            _mm256_storeu_ps(c, ad ? _mm256_add_ps(v[i], _mm256_loadu_ps(ad)) : v[i]);
            continue;
        }
        const int w = nr - h * 8 < 8 ? nr - h * 8 : 8;
        if (w <= 0)
            continue;
        _mm256_store_ps(row, v[i]);
        for (int j = 0; j < w; j++)
            c[j] = ad ? row[j] + ad[j] : row[j];
    }
}

static inline __attribute__((always_inline)) AVX2 void k256(const int MR_, int nr, int kc, float alpha,
                                                              const float *A, long lda, const float *Bp,
                                                              float beta, int first, float *C, long ldc,
                                                              const ws_sgemm_epi *e, const float *pf)
{
    __m256 c0[6], c1[6];
#pragma GCC unroll 6
    for (int r = 0; r < MR_; r++)
        c0[r] = c1[r] = _mm256_setzero_ps();
    for (int k = 0; k < kc; k++) {
        if (pf)
            _mm_prefetch((const char *)(pf + (size_t)k * 16), _MM_HINT_T1);
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
    if (e) { /* the final sums to a tile, then the epilogue */
        float tile[6 * 16] __attribute__((aligned(32)));
#pragma GCC unroll 6
        for (int r = 0; r < MR_; r++) {
            __m256 o0 = _mm256_mul_ps(va, c0[r]), o1 = _mm256_mul_ps(va, c1[r]);
            if (!first || beta != 0.0f) { /* C as the tail path reads it: columns < nr */
                float old[16] = { 0 };
                memcpy(old, C + r * ldc, (size_t)nr * sizeof(float));
                if (!first) {
                    o0 = _mm256_add_ps(_mm256_loadu_ps(old), o0);
                    o1 = _mm256_add_ps(_mm256_loadu_ps(old + 8), o1);
                } else {
                    o0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(old), o0);
                    o1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(old + 8), o1);
                }
            }
            _mm256_store_ps(tile + r * 16, o0);
            _mm256_store_ps(tile + r * 16 + 8, o1);
        }
        epi256(tile, MR_, nr, e, C, ldc);
        return;
    }
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
                             const float *Bp, float beta, int first, float *C, long ldc,
                             const ws_sgemm_epi *e, const float *pf)
{
    switch (mr) {
#define K256(m)                                                                                    \
    case m:                                                                                        \
        k256(m, nr, kc, alpha, A, lda, Bp, beta, first, C, ldc, e, pf);                            \
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
    int fused; /* the kernel applies GELU and RELU epilogues itself */
} path;

static path path_of(int isa)
{
#if WS_X86
    if (isa == WS_ISA_AVX512)
        return (path){ 12, 32, ukernel_512, 1 };
    if (isa == WS_ISA_AVX2)
        return (path){ 6, 16, ukernel_256, 1 };
#else
    (void)isa;
#endif
    return (path){ 4, 16, ukernel_c, 0 };
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
/* the epilogue e on rows [i0, i0 + mr) and columns [j0, j0 + nr) of C, after they are stored */
static void epi_after(const ws_sgemm_epi *e, int i0, int mr, int j0, int nr, float *C, int ldc)
{
    for (int r = 0; r < mr; r++)
        ws_bias_act_rows(C + (size_t)(i0 + r) * ldc + j0, 1, ldc, nr, e->bias ? e->bias + j0 : NULL,
                         e->act, e->add ? e->add + (size_t)(i0 + r) * e->ldadd + j0 : NULL);
}

static void run(const path *P, int M, int N, int K, float alpha, const aview *A, const float *B,
                int ldb, const float *Bpk, float beta, float *C, int ldc, const ws_sgemm_epi *e)
{
    const int MR = P->MR, NR = P->NR;
    if (e && !e->bias && !e->add && e->act == WS_ACT_NONE)
        e = NULL;
    const int fused = e && P->fused && e->act != WS_ACT_SILU;
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
        if (e)
            epi_after(e, 0, M, 0, N, C, ldc);
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
                    const int last = e && k0 + kb == K; /* the tiles' final sums */
                    /* the next panel of B (this block's next one, else a packed B's first
                     * one of the next k block) goes to L2 during this panel's first tiles,
                     * one line per step of k: its first tile then does not wait for memory */
                    const float *next = j + NR < nb ? bp + pstride
                                        : Bpk && k0 + kb < K ? Bpk + (size_t)(n0 / NR) * K * NR + (size_t)(k0 + kb) * NR
                                                             : NULL;
                    for (int i0 = 0; i0 < mb; i0 += MR) {
                        const int mr = mb - i0 < MR ? mb - i0 : MR, i = m0 + i0, jc = n0 + j;
                        const int q = i0 / MR; /* tile q prefetches lines [q*kb, (q+1)*kb) */
                        const float *pf = next && q < NR / 16 ? next + (size_t)q * kb * 16 : NULL;
                        float *c = C + (size_t)i * ldc + jc;
                        if (last && fused) {
                            const ws_sgemm_epi te = { e->bias ? e->bias + jc : NULL, e->act,
                                                      e->add ? e->add + (size_t)i * e->ldadd + jc : NULL,
                                                      e->ldadd };
                            P->k(mr, nr, kb, alpha, abuf + (size_t)i0 * kb, MR, bp, beta, k0 == 0, c, ldc,
                                 &te, pf);
                            continue;
                        }
                        P->k(mr, nr, kb, alpha, abuf + (size_t)i0 * kb, MR, bp, beta, k0 == 0, c, ldc, NULL, pf);
                        if (last)
                            epi_after(e, i, mr, jc, nr, C, ldc);
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
    run(&P, M, N, K, alpha, &v, B, ldb, NULL, beta, C, ldc, NULL);
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
    run(&P, M, N, K, alpha, &v, B, ldb, NULL, beta, C, ldc, NULL);
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

const float *ws_sgemm_packed_col(int K, const float *Bpk, int c0)
{
    const int NR = path_of(ws_cpu_isa()).NR; /* divides WS_SGEMM_COL_ALIGN */
    return Bpk + (size_t)(c0 / NR) * K * NR;
}

void ws_sgemm_conv(int M, int N, int taps, int ic, const float *A, long lda, long tap, const float *Bpk,
                   float beta, float *C, int ldc, const ws_sgemm_epi *e)
{
    if (M <= 0 || N <= 0 || taps <= 0 || ic <= 0)
        return;
    const path P = path_of(ws_cpu_isa());
    const aview v = { A, lda, tap, ic };
    run(&P, M, N, taps * ic, 1.0f, &v, NULL, 0, Bpk, beta, C, ldc, e);
}

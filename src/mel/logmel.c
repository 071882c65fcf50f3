/* logmel.c - log-Mel spectrogram (see mel.h for the math and windowing).
 *
 * Pipeline per block of BLOCK frames (the threads claim blocks one at a time,
 * each with buffers of its own; a frame's values do not depend on which
 * thread computes it):
 *   gather   frame[b][i] = hann[i] * xpad[t*160 + i - 200]    [BLOCK][400]
 *            xpad = samples, then zeros up to the padded length N, then
 *            np.pad reflect at both ends (period 2(N-1), repeated for N < 201)
 *   FFT      one FFTW r2c plan of howmany = BLOCK, made once     [BLOCK][201]
 *   mel      sparse: band m sums bins [lo[m], hi[m]) only, the block's frames side by
 *            side in vector lanes
 *   log      log10(max(mel, 1e-10)), band-major, written straight into the
 *            output's channel-major windows [n_win][n_mels][win_frames]
 * A frame whose 400 samples are all zero (the padding) skips the FFT: its
 * mel energy is exactly 0, log -10. Then one pass over the output floors
 * at max - 8 and scales (x + 4) / 4 in place. (A [n_mels][F] buffer between
 * the two passes cost a megabyte of fresh pages a window; their faults were
 * a quarter of the log-Mel's time.)
 *
 * Precision: Hann and filters computed in double and rounded once (the
 * filters equal openai's float32 npz); FFT, power and mel sums in float32;
 * error vs the float64 oracle ~1e-5 (bound 1e-4, tests/test_mel.c).
 * Blocks of 32 frames keep the FFT working set in L1/L2; measured faster
 * than one plan over all frames (bench/RESULTS.md).
 */
#include <fftw3.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "filterbank.h"
#include "mel.h"

#define BLOCK 32
#define LOG_FLOOR_ENERGY 1e-10f /* audio.py: clamp(min=1e-10) before log10 */
#define DYN_RANGE 8.0f          /* audio.py: max - 8.0, i.e. 80 dB */

/* log10 for x >= 1e-10 (normal floats), branch-free so that it vectorises: x = m * 2^e with
 * m in [sqrt(1/2), sqrt(2)), then ln(m) by the Cephes logf polynomial (relative error ~1e-7),
 * ln(x) = ln(m) + e ln2 with ln2 in two parts, times log10(e). glibc's log10f is scalar and
 * was 2.3 ms of a 30 s window. Max |error| vs log10 in double: tests/test_mel.c
 * (fast_log10_is_within_2_ulp).
 * One value's log is a chain of about 25 dependent operations. log10_steps takes L values
 * (a constant where it is inlined) and does each step for all of them before the next, so that
 * L / 8 vectors' chains run side by side instead of one at a time; every value gets the same
 * operations in the same order whatever L is. x[i] is floored at 1e-10 first (audio.py's
 * clamp; a NaN becomes 1e-10). */
typedef union {
    int32_t i;
    float f;
} pun;

/* the Cephes logf polynomial's Horner steps after its first */
static const float LOG_P[] = {
    1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
    2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f,
};

static inline __attribute__((always_inline)) void log10_steps(float *restrict x, int L)
{
    float f[64], e[64], z[64], y[64]; /* L <= 64 */
    for (int i = 0; i < L; i++) {
        pun u = {.f = x[i] > LOG_FLOOR_ENERGY ? x[i] : LOG_FLOOR_ENERGY};
        const float ei = (float)(((u.i >> 23) & 0xff) - 126);
        u.i = (u.i & 0x007fffff) | 0x3f000000; /* m in [0.5, 1) */
        const int lo = u.f < 0.70710678118654752f;
        e[i] = lo ? ei - 1.0f : ei;
        f[i] = (lo ? u.f + u.f : u.f) - 1.0f;
    }
    for (int i = 0; i < L; i++)
        z[i] = f[i] * f[i];
    for (int i = 0; i < L; i++)
        y[i] = 7.0376836292e-2f * f[i] - 1.1514610310e-1f;
    for (int k = 0; k < (int)(sizeof LOG_P / sizeof LOG_P[0]); k++)
        for (int i = 0; i < L; i++)
            y[i] = y[i] * f[i] + LOG_P[k];
    for (int i = 0; i < L; i++)
        y[i] = y[i] * f[i] * z[i];
    for (int i = 0; i < L; i++)
        y[i] += -2.12194440e-4f * e[i];
    for (int i = 0; i < L; i++)
        y[i] += -0.5f * z[i];
    for (int i = 0; i < L; i++) {
        float ln = f[i] + y[i];
        ln += 0.693359375f * e[i];
        x[i] = ln * 0.43429448190325182f;
    }
}

float ws_log10_fast(float x)
{
    log10_steps(&x, 1);
    return x;
}

struct ws_mel {
    int n_mels;
    int n_threads;
    double *filt;     /* [n_mels][201] double */
    float *band_w;    /* packed nonzero weights, band by band */
    int *band_lo;     /* [n_mels] first nonzero bin */
    int *band_len;    /* [n_mels] number of bins */
    int *band_off;    /* [n_mels] offset into band_w */
    float hann[WS_N_FFT];
    fftwf_plan plan;  /* BLOCK r2c transforms of 400, in [BLOCK][400] -> [BLOCK][201] */
};

ws_mel *ws_mel_new(int n_mels, int n_threads, ws_err *err)
{
    if (n_mels != 80 && n_mels != 128)
        return ws_errf(err, "n_mels must be 80 or 128, got %d", n_mels), NULL;
    ws_mel *m = calloc(1, sizeof *m);
    if (!m)
        return ws_errf(err, "out of memory"), NULL;
    m->n_mels = n_mels;
    m->n_threads = n_threads < 1 ? 1 : n_threads;
    m->filt = malloc(sizeof(double) * n_mels * WS_N_BINS);
    m->band_w = malloc(sizeof(float) * n_mels * WS_N_BINS);
    m->band_lo = malloc(sizeof(int) * n_mels);
    m->band_len = malloc(sizeof(int) * n_mels);
    m->band_off = malloc(sizeof(int) * n_mels);
    if (!m->filt || !m->band_w || !m->band_lo || !m->band_len || !m->band_off) {
        ws_mel_free(m);
        return ws_errf(err, "out of memory"), NULL;
    }
    ws_mel_filterbank(n_mels, m->filt);
    int off = 0;
    for (int b = 0; b < n_mels; b++) {
        const double *row = m->filt + b * WS_N_BINS;
        int lo = 0, hi = WS_N_BINS;
        while (lo < WS_N_BINS && (float)row[lo] == 0.0f)
            lo++;
        while (hi > lo && (float)row[hi - 1] == 0.0f)
            hi--;
        m->band_lo[b] = lo;
        m->band_len[b] = hi - lo;
        m->band_off[b] = off;
        for (int f = lo; f < hi; f++)
            m->band_w[off++] = (float)row[f];
    }
    for (int i = 0; i < WS_N_FFT; i++) /* periodic Hann: torch.hann_window(400) */
        m->hann[i] = (float)(0.5 - 0.5 * cos(2.0 * M_PI * (double)i / WS_N_FFT));

    float *in = fftwf_malloc(sizeof(float) * BLOCK * WS_N_FFT);
    fftwf_complex *out = fftwf_malloc(sizeof(fftwf_complex) * BLOCK * WS_N_BINS);
    if (in && out) {
        int nfft = WS_N_FFT;
        /* FFTW_ESTIMATE: the same plan, hence the same rounding, on every run */
        m->plan = fftwf_plan_many_dft_r2c(1, &nfft, BLOCK, in, NULL, 1, WS_N_FFT, out, NULL, 1,
                                          WS_N_BINS, FFTW_ESTIMATE);
    }
    fftwf_free(in);
    fftwf_free(out);
    if (!m->plan) {
        ws_mel_free(m);
        return ws_errf(err, "FFTW could not make a plan for %d x %d-point r2c", BLOCK, WS_N_FFT), NULL;
    }
    return m;
}

void ws_mel_free(ws_mel *m)
{
    if (!m)
        return;
    if (m->plan)
        fftwf_destroy_plan(m->plan);
    free(m->filt);
    free(m->band_w);
    free(m->band_lo);
    free(m->band_len);
    free(m->band_off);
    free(m);
}

const double *ws_mel_filters(const ws_mel *m) { return m->filt; }

void ws_mel_out_free(ws_mel_out *o)
{
    if (!o)
        return;
    free(o->data);
    memset(o, 0, sizeof *o);
}

/* The signal the STFT sees: x[0..n), zeros to n_total, reflected at both ends. */
typedef struct {
    const float *x;
    size_t n;       /* real samples */
    size_t n_total; /* after zero padding */
} padded_signal;

static size_t reflect_index(long long i, size_t len)
{
    if (len == 1)
        return 0;
    long long period = 2 * (long long)(len - 1);
    long long j = i % period;
    if (j < 0)
        j += period;
    if (j >= (long long)len)
        j = period - j;
    return (size_t)j;
}

/* Windowed frame t into dst[400]; returns 0 when every sample is zero. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
window_mul(const float *restrict hann, const float *restrict src, float *restrict dst)
{
    for (int i = 0; i < WS_N_FFT; i++)
        dst[i] = hann[i] * src[i];
}

static int gather_frame(const padded_signal *s, const float *hann, long long t, float *dst)
{
    const long long start = t * WS_HOP - WS_N_FFT / 2;
    if (start >= 0 && (size_t)start + WS_N_FFT <= s->n) {
        window_mul(hann, s->x + start, dst);
        return 1;
    }
    int any = 0;
    for (int i = 0; i < WS_N_FFT; i++) {
        size_t j = reflect_index(start + i, s->n_total);
        float v = j < s->n ? s->x[j] : 0.0f;
        any |= v != 0.0f;
        dst[i] = hann[i] * v;
    }
    return any;
}


/* eight floats as one of GCC's vectors (two SSE registers in the plain clone), read and
 * written in place of the floats */
typedef float v8f __attribute__((vector_size(32), aligned(4), may_alias));

/* a block's BLOCK spectra X [BLOCK][201] to log-Mel mel[k][b] (band-major), vectorised over
 * the block's frames: pw[f][b] = |X[b][f]|^2, then band k's sum over its bins in order (the
 * same sums, in the same order, as one frame at a time), floored and log10'd; peak[b] is frame
 * b's largest. The frames of a short last block past the signal's end hold stale values: they
 * are computed with the rest, and their results are never used. */
__attribute__((target_clones("avx512f", "avx2", "default"))) static void
bands_block(const ws_mel *m, const fftwf_complex *X, float *restrict pw, float *restrict mel,
            float *restrict peak)
{
    int f0 = 0;
#if defined(__x86_64__)
    /* four frames by four bins at a time: each frame's four powers in a vector, then a 4 x 4
     * transpose into four bins' rows (the same products and sums as the loop below) */
    for (; f0 + 4 <= WS_N_BINS; f0 += 4)
        for (int b = 0; b < BLOCK; b += 4) {
            __m128 r[4];
            for (int q = 0; q < 4; q++) {
                const float *x = X[(size_t)(b + q) * WS_N_BINS + f0];
                const __m128 lo = _mm_loadu_ps(x), hi = _mm_loadu_ps(x + 4);
                const __m128 re = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
                const __m128 im = _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
                r[q] = _mm_add_ps(_mm_mul_ps(re, re), _mm_mul_ps(im, im));
            }
            _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]);
            for (int q = 0; q < 4; q++)
                _mm_storeu_ps(pw + (size_t)(f0 + q) * BLOCK + b, r[q]);
        }
#endif
    for (int b = 0; b < BLOCK; b++)
        for (int f = f0; f < WS_N_BINS; f++) {
            const float re = X[(size_t)b * WS_N_BINS + f][0], im = X[(size_t)b * WS_N_BINS + f][1];
            pw[(size_t)f * BLOCK + b] = re * re + im * im;
        }
    /* the bands' sums, the block's 32 frames in four vectors of eight kept in registers */
    for (int k = 0; k < m->n_mels; k++) {
        const float *w = m->band_w + m->band_off[k];
        const float *p = pw + (size_t)m->band_lo[k] * BLOCK;
        const int len = m->band_len[k];
        v8f s[BLOCK / 8];
        if (len == 0)
            memset(s, 0, sizeof s);
        else /* the first product is 0.0f + w p exactly: w >= 0, p >= 0 or NaN */
            for (int q = 0; q < BLOCK / 8; q++)
                s[q] = w[0] * *(const v8f *)(p + 8 * q);
        for (int j = 1; j < len; j++)
            for (int q = 0; q < BLOCK / 8; q++)
                s[q] += w[j] * *(const v8f *)(p + (size_t)j * BLOCK + 8 * q);
        for (int q = 0; q < BLOCK / 8; q++)
            *(v8f *)(mel + (size_t)k * BLOCK + 8 * q) = s[q];
    }
    /* then the floor and log10 over the whole block, every value independent of the others */
    const int nv = m->n_mels * BLOCK;
    int i = 0;
    for (; i + 64 <= nv; i += 64)
        log10_steps(mel + i, 64);
    for (; i < nv; i++) /* none for 80 or 128 bands */
        log10_steps(mel + i, 1);
    for (int b = 0; b < BLOCK; b++)
        peak[b] = mel[b];
    for (int k = 1; k < m->n_mels; k++)
        for (int b = 0; b < BLOCK; b++)
            peak[b] = mel[(size_t)k * BLOCK + b] > peak[b] ? mel[(size_t)k * BLOCK + b] : peak[b];
}

typedef struct {
    const ws_mel *m;
    padded_signal sig;
    long long n_frames; /* frames to compute */
    long long content;  /* frames with an output place: frame t goes to window t / win_frames */
    int win_frames;
    float *data;        /* [n_win][n_mels][win_frames]: the raw log10 before the floor */
    float *thread_max;  /* [n_threads] */
    int failed;
    long next_block;    /* the next block of BLOCK frames to claim */
} mel_job;

static void mel_worker(void *ctx, int ti, int nt)
{
    (void)nt;
    mel_job *job = ctx;
    const ws_mel *m = job->m;
    const int nm = m->n_mels;
    /* the block's buffers in the thread's kept scratch (no allocation a call), each at a
     * multiple of 64 bytes: FFTW's plan was made on arrays of that alignment */
    enum {
        IN_B = (sizeof(float) * BLOCK * WS_N_FFT + 63) / 64 * 64,
        OUT_B = (sizeof(fftwf_complex) * BLOCK * WS_N_BINS + 63) / 64 * 64,
        POW_B = (sizeof(float) * WS_N_BINS * BLOCK + 63) / 64 * 64
    };
    char *buf = ws_scratch_take(IN_B + OUT_B + POW_B + sizeof(float) * (size_t)nm * BLOCK);
    if (!buf) {
        job->failed = 1;
        job->thread_max[ti] = -INFINITY;
        return;
    }
    float vmax = -INFINITY;
    float *in = (float *)buf, *power = (float *)(buf + IN_B + OUT_B),
          *mel = (float *)(buf + IN_B + OUT_B + POW_B);
    fftwf_complex *out = (fftwf_complex *)(buf + IN_B);
    memset(in, 0, sizeof(float) * BLOCK * WS_N_FFT); /* a short tail block leaves rows unused */
    for (;;) { /* blocks claimed one at a time: a thread held up elsewhere does fewer */
        const long long tb =
            (long long)__atomic_fetch_add(&job->next_block, 1, __ATOMIC_RELAXED) * BLOCK;
        if (tb >= job->n_frames)
            break;
        const int nb = (int)(job->n_frames - tb < BLOCK ? job->n_frames - tb : BLOCK);
        int nonzero[BLOCK], any = 0;
        float peak[BLOCK];
        for (int b = 0; b < nb; b++)
            any |= nonzero[b] = gather_frame(&job->sig, m->hann, tb + b, in + b * WS_N_FFT);
        if (any) /* the plan is for BLOCK frames; a short tail block ignores the rest */
            fftwf_execute_dft_r2c(m->plan, in, out);
        if (any)
            bands_block(m, out, power, mel, peak);
        for (int b = 0; b < nb; b++) {
            if (!nonzero[b]) { /* an all-zero frame: log10(1e-10) in every band */
                for (int k = 0; k < nm; k++)
                    mel[(size_t)k * BLOCK + b] = -10.0f;
                peak[b] = -10.0f;
            }
            vmax = peak[b] > vmax ? peak[b] : vmax;
        }
        /* the frames with an output place go straight to their window's rows; a block may
         * straddle two windows */
        for (long long t = tb; t < tb + nb && t < job->content;) {
            const long long w = t / job->win_frames, j = t - w * job->win_frames;
            long long e = tb + nb < job->content ? tb + nb : job->content;
            if (e > t + (job->win_frames - j))
                e = t + (job->win_frames - j);
            float *dst = job->data + (size_t)w * nm * job->win_frames + (size_t)j;
            for (int k = 0; k < nm; k++)
                memcpy(dst + (size_t)k * job->win_frames, mel + (size_t)k * BLOCK + (t - tb),
                       sizeof(float) * (size_t)(e - t));
            t = e;
        }
    }
    job->thread_max[ti] = vmax;
    ws_scratch_give(buf);
}

typedef struct {
    float *data;
    float floor_v;
    long long content;
    int nm, win_frames;
    long long rows;
} out_job;

/* rows [(w, k)] of the output in place: the raw log10 of the frames with content floored and
 * scaled, the rest of the last window 0.0 */
static void out_worker(void *ctx, int ti, int nt)
{
    const out_job *J = ctx;
    const float fl = J->floor_v;
    for (long long r = J->rows * ti / nt; r < J->rows * (ti + 1) / nt; r++) {
        const int w = (int)(r / J->nm);
        float *dst = J->data + (size_t)r * J->win_frames;
        const long long t0 = (long long)w * J->win_frames, left = J->content - t0;
        const int m = left < 0 ? 0 : left < J->win_frames ? (int)left : J->win_frames;
        for (int j = 0; j < m; j++) /* * 0.25f: the same float as / 4.0f */
            dst[j] = ((dst[j] > fl ? dst[j] : fl) + 4.0f) * 0.25f;
        for (int j = m; j < J->win_frames; j++) /* --pad mel0: pad_or_trim fills with 0.0 */
            dst[j] = 0.0f;
    }
}

int ws_mel_compute(ws_mel *m, const float *x, size_t n, ws_pad pad, ws_mel_out *o, ws_err *err)
{
    return ws_mel_compute_nt(m, x, n, pad, m->n_threads, o, err);
}

int ws_mel_geometry(size_t n, ws_pad pad, ws_mel_geom *g, ws_err *err)
{
    memset(g, 0, sizeof *g);
    switch (pad) {
    case WS_PAD_AUDIO: {
        size_t chunks = n == 0 ? 1 : (n + WS_CHUNK_SAMPLES - 1) / WS_CHUNK_SAMPLES;
        g->n_total = chunks * WS_CHUNK_SAMPLES;
        g->content = (long long)(g->n_total / WS_HOP);
        break;
    }
    case WS_PAD_MEL0:
        g->n_total = n + WS_CHUNK_SAMPLES;
        g->content = (long long)(n / WS_HOP);
        break;
    case WS_PAD_NONE:
        if (n < WS_HOP)
            return ws_errf(err, "%zu samples is shorter than one hop (160 samples = 10 ms); "
                                "--no-pad needs at least 160", n);
        g->n_total = n;
        g->content = (long long)(n / WS_HOP);
        break;
    default:
        return ws_errf(err, "unknown padding mode %d", (int)pad);
    }
    if (g->n_total / WS_HOP > (size_t)1 << 31)
        return ws_errf(err, "audio too long: %zu samples", n);
    g->n_frames = (long long)(g->n_total / WS_HOP); /* 1 + N/hop, the last dropped */
    if (pad == WS_PAD_NONE) {
        g->n_win = 1;
        g->win_frames = (int)g->content;
    } else {
        g->n_win = g->content == 0 ? 1
                                   : (int)((g->content + WS_CHUNK_FRAMES - 1) / WS_CHUNK_FRAMES);
        g->win_frames = WS_CHUNK_FRAMES;
    }
    return 0;
}

int ws_mel_compute_nt(const ws_mel *m, const float *x, size_t n, ws_pad pad, int n_threads,
                      ws_mel_out *o, ws_err *err)
{
    memset(o, 0, sizeof *o);
    ws_mel_geom g;
    if (ws_mel_geometry(n, pad, &g, err))
        return -1;
    const size_t n_total = g.n_total;
    const long long content = g.content, n_frames = g.n_frames;
    const int nm = m->n_mels, n_win = g.n_win, win_frames = g.win_frames;

    float *data = malloc(sizeof(float) * (size_t)n_win * nm * win_frames);
    float tmax[256];
    if (!data)
        return ws_errf(err, "out of memory for a %lld-frame log-Mel", n_frames);
    int nt = n_threads < 1 ? 1 : n_threads;
    if (nt > 256)
        nt = 256;
    if ((long long)nt * BLOCK > n_frames)
        nt = (int)((n_frames + BLOCK - 1) / BLOCK);
    mel_job job = {m, {x, n, n_total}, n_frames, content, win_frames, data, tmax, 0, 0};
    ws_parallel(nt, mel_worker, &job);
    if (job.failed) {
        free(data);
        return ws_errf(err, "out of memory for FFT buffers");
    }
    float gmax = -INFINITY;
    for (int i = 0; i < nt; i++)
        if (tmax[i] > gmax)
            gmax = tmax[i];
    const float floor_v = gmax - DYN_RANGE;

    /* floor and scale in place, (window, band) rows split over the threads */
    const int rows = n_win * nm;
    out_job oj = {data, floor_v, content, nm, win_frames, rows};
    ws_parallel(n_threads < 1 ? 1 : n_threads < rows ? n_threads : rows, out_worker, &oj);
    o->data = data;
    o->n_windows = n_win;
    o->n_mels = nm;
    o->n_frames = win_frames;
    return 0;
}

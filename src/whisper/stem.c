/* stem.c - Whisper's conv stem as a client of the conv engine (see stem.h).
 *
 * CPU, per window (T = n_frames):
 *   h   [T][d]       gelu(conv1(mel)), conv1 a plan reading the NCL log-Mel as it is
 *   out [t_out][d]   gelu(conv2(h)) (+ pos as conv2's add, batch stride 0)
 * h grows to the largest T seen and is reused across calls.
 * Many windows on several threads: a window per thread, each thread with its own h, conv1's
 * rows in runs of FUSE_ROWS, each followed by the rows of out that read only rows of h done
 * so far (fused_window), so that h is read back from the core's own caches instead of
 * memory (64 tiny windows on 16 Xeon cores: 1.85-2.10 -> 1.56-1.78 ms a window; 32 large-v3
 * windows: 14.2-14.5 -> 11.2-11.8). Fewer windows than threads: G windows as one engine
 * call whose row blocks the threads share.
 * GPU: all windows in one ws_gpu_stem call; the positional table is uploaded when a
 * longer one is needed (ws_gpu_set_add).
 *
 * Constant tail (CPU): a window padded to 30 s ends in frames that are all the
 * same column (the floor value, or 0.0 with --pad mel0). If frames
 * [tc, T) are equal, conv1 rows t in [tc+1, T-2] read three equal frames
 * and are equal, and conv2 rows u with 2u-1 >= tc+1 and 2u+1 <= T-2 read
 * three equal rows of those. Where a plan computes rows in groups (minimal
 * filtering, ws_conv_row_group), the runs are cut to the rows whose whole group lies
 * inside: those rows have equal bits however they are computed. Each such run is
 * computed once (ws_conv_run_rows: only those output rows of the plan) and copied; only
 * the rows next to the audio and to the zero padding at the very end are computed. A
 * 5 s clip computes about a sixth of the window. The copied rows are the computed one's
 * value: the same products of the same inputs, summed in the same order. A row's bits
 * do not depend on the rows a call covers, so the output has the same bits for any
 * thread count and whether a window runs alone or in a batch.
 * Validated by tests/test_conv.c (stem.*: the oracle, constant tails, thread counts).
 */
#include "stem.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h" /* ws_parallel */
#include "conv/engine.h" /* ws_conv_run_rows */

struct ws_stem {
    const ws_model *m;   /* for its positional table: must outlive the stem */
    int n_mels, d;
    ws_conv *c1, *c2;    /* CPU plans, or NULL */
    ws_gpu_pair *gpu;         /* or the GPU backend */
    float *h;            /* CPU: conv1's output [cap_t][d] */
    size_t cap_t;
    int threads;         /* CPU: the plans' threads */
    float *pos;          /* sinusoids table when the model has none */
    int pos_len;
};

void ws_stem_descs(int n_mels, int d, ws_precision p, ws_conv_desc pair[2])
{
    const ws_math math = p == WS_PREC_TF32   ? WS_MATH_TF32
                         : p == WS_PREC_BF16 ? WS_MATH_BF16
                         : p == WS_PREC_FP16 ? WS_MATH_F16
                                             : WS_MATH_F32;
    const ws_dtype elem = p == WS_PREC_BF16 ? WS_BF16 : p == WS_PREC_FP16 ? WS_F16 : WS_F32;
    const ws_conv_desc c1 = {
        .op = WS_CONV_FWD, .c_in = n_mels, .c_out = d, .groups = 1, .k = 3, .stride = 1,
        .dilation = 1, .pad_l = 1, .pad_r = 1, .x_layout = WS_NCL, .y_layout = WS_NLC,
        .x_type = WS_F32, .w_type = WS_F32, .y_type = elem, .math = math,
        .pre = WS_ACT_NONE, .act = WS_ACT_GELU,
    };
    ws_conv_desc c2 = c1;
    c2.c_in = d;
    c2.stride = 2;
    c2.x_layout = WS_NLC;
    c2.x_type = elem;
    c2.y_type = WS_F32;
    pair[0] = c1;
    pair[1] = c2;
}

ws_stem *ws_stem_new_cpu(const ws_model *m, int n_threads, ws_err *err)
{
    ws_stem *s = calloc(1, sizeof *s);
    if (!s)
        return ws_errf(err, "out of memory"), NULL;
    s->m = m;
    s->n_mels = m->n_mels;
    s->d = m->d;
    ws_conv_desc pair[2];
    ws_stem_descs(m->n_mels, m->d, WS_PREC_FP32, pair);
    const int nt = n_threads < 1 ? 1 : n_threads;
    s->threads = nt;
    if (!(s->c1 = ws_conv_new(&pair[0], m->conv1_w, m->conv1_b, nt, err)) ||
        !(s->c2 = ws_conv_new(&pair[1], m->conv2_w, m->conv2_b, nt, err))) {
        ws_stem_free(s);
        return NULL;
    }
    return s;
}

ws_stem *ws_stem_new_gpu(const ws_model *m, ws_precision p, int ordinal, ws_err *err)
{
    ws_stem *s = calloc(1, sizeof *s);
    if (!s)
        return ws_errf(err, "out of memory"), NULL;
    s->m = m;
    s->n_mels = m->n_mels;
    s->d = m->d;
    ws_conv_desc pair[2];
    ws_stem_descs(m->n_mels, m->d, p, pair);
    if (!(s->gpu = ws_gpu_new(ordinal, pair, m->conv1_w, m->conv1_b, m->conv2_w, m->conv2_b, err))) {
        ws_stem_free(s);
        return NULL;
    }
    return s;
}

void ws_stem_free(ws_stem *s)
{
    if (!s)
        return;
    ws_conv_free(s->c1);
    ws_conv_free(s->c2);
    ws_gpu_free(s->gpu);
    free(s->h);
    free(s->pos);
    free(s);
}

ws_gpu_pair *ws_stem_gpu(ws_stem *s)
{
    return s ? s->gpu : NULL;
}

/* The positional rows for t_out outputs (the model's, or sinusoids kept in s); *rows:
 * how many rows the table has. NULL with err. */
static const float *pos_rows(ws_stem *s, int t_out, int *rows, ws_err *err)
{
    if (s->m->pos || t_out > s->pos_len) {
        float *owned = NULL;
        const float *pos = ws_pos_table(s->m, t_out, &owned, err);
        if (!pos)
            return NULL;
        if (owned) {
            free(s->pos);
            s->pos = owned;
            s->pos_len = t_out;
        }
        *rows = owned ? t_out : s->m->n_pos;
        return pos;
    }
    *rows = s->pos_len;
    return s->pos;
}

int ws_stem_gpu_prepare_add(ws_stem *s, int n_frames, ws_err *err)
{
    const int t_out = ws_stem_out_len(n_frames);
    int rows = 0;
    const float *pos;
    if (!s->gpu)
        return ws_errf(err, "ws_stem_gpu_prepare_add: not a GPU stem");
    if (ws_gpu_add_rows(s->gpu) >= t_out)
        return 0;
    if (!(pos = pos_rows(s, t_out, &rows, err)))
        return -1;
    return ws_gpu_set_add(s->gpu, pos, rows, err);
}

enum { BATCH_BYTES = 64 << 20 }; /* the most conv1 output a batch of windows holds */
/* the most conv1 output a thread holds to run windows fused: one 30 s window of every Whisper
 * size (large-v3: 3000 x 1280 floats, 15.4 MB); longer windows take the batches */
#define FUSED_BYTES (16LL << 20)

static int reserve(ws_stem *s, size_t T, ws_err *err)
{
    if (T <= s->cap_t)
        return 0;
    free(s->h);
    s->h = NULL;
    s->cap_t = 0;
    size_t bytes;
    if (ws_mul_size(T, (size_t)s->d * sizeof(float), &bytes) || !(s->h = malloc(bytes)))
        return ws_errf(err, "out of memory for the stem's %zu rows of conv1 output", T);
    s->cap_t = T;
    return 0;
}

/* One window on the CPU plans: mel [nm][T] -> out [t_out][d]. */
static int cpu_window(ws_stem *s, const float *mel, int T, const float *pos, float *out,
                      ws_err *err)
{
    const int nm = s->n_mels, d = s->d, t_out = ws_stem_out_len(T);
    /* first frame of the run of frames equal to the last one (bit for bit) */
    int tc = T - 1;
    for (; tc > 0; tc--) {
        int i = 0;
        while (i < nm && !memcmp(mel + (size_t)i * T + tc - 1, mel + (size_t)i * T + T - 1,
                                 sizeof(float)))
            i++;
        if (i < nm)
            break;
    }
    float *h = s->h;
    ws_conv_args a1 = {.n = 1, .t_in = T, .x = mel, .y = h};
    /* rows of h that read three equal frames: [tc + 1, T - 2]; of those, the rows whose
     * group (ws_conv_row_group) lies inside are equal, bit for bit: [h_lo, h_hi] */
    const int g1 = ws_conv_row_group(s->c1), g2 = ws_conv_row_group(s->c2);
    const int h_lo = (tc + 1 + g1 - 1) / g1 * g1, h_hi = (T - 1) / g1 * g1 - 1;
    int tail = h_hi - h_lo >= 2, r = 1;    /* r 1: not done in parts (ws_conv_run_rows) */
    if (tail && (r = ws_conv_run_rows(s->c1, &a1, 0, h_lo + 1, err)) == 0 &&
        (r = ws_conv_run_rows(s->c1, &a1, h_hi + 1, T - h_hi - 1, err)) == 0)
        for (int t = h_lo + 1; t <= h_hi; t++)
            memcpy(h + (size_t)t * d, h + (size_t)h_lo * d, sizeof(float) * d);
    if (r < 0 || (r > 0 && ws_conv_run(s->c1, &a1, err)))
        return -1;
    ws_conv_args a2 = {.n = 1, .t_in = T, .x = h, .y = out};
    /* rows of out that read three of h's equal rows, then those whose group lies inside */
    const int v_lo = (h_lo + 2) / 2, v_hi = (h_hi - 1) / 2;
    const int u_lo = (v_lo + g2 - 1) / g2 * g2, u_hi = (v_hi + 1) / g2 * g2 - 1;
    r = 1;
    if (tail && u_hi - u_lo >= 2 && (r = ws_conv_run_rows(s->c2, &a2, 0, u_lo + 1, err)) == 0 &&
        (r = ws_conv_run_rows(s->c2, &a2, u_hi + 1, t_out - u_hi - 1, err)) == 0) {
        for (int u = u_lo + 1; u <= u_hi; u++)
            memcpy(out + (size_t)u * d, out + (size_t)u_lo * d, sizeof(float) * d);
        if (pos) /* after the copies: the same float adds as the fused epilogue */
            for (size_t i = 0; i < (size_t)t_out * d; i++)
                out[i] += pos[i];
        return 0;
    }
    if (r < 0)
        return -1;
    a2.add = pos;
    return ws_conv_run(s->c2, &a2, err);
}

/* One window on the calling thread alone, conv1 and conv2 interleaved: FUSE_ROWS rows of h,
 * then the rows of out that read only rows of h done so far, so that h's rows are still in
 * this core's caches when conv2 reads them. h: this thread's [T][d]. */
enum { FUSE_ROWS = 480 };

static int fused_window(ws_stem *s, const float *mel, int T, const float *pos, float *out,
                        float *h, ws_err *err)
{
    const int t_out = ws_stem_out_len(T), g2 = ws_conv_row_group(s->c2);
    ws_conv_args a1 = {.n = 1, .t_in = T, .x = mel, .y = h};
    ws_conv_args a2 = {.n = 1, .t_in = T, .x = h, .y = out, .add = pos, .add_batch_stride = 0};
    int u0 = 0;
    for (int r0 = 0; r0 < T;) {
        const int r1 = T - r0 > FUSE_ROWS ? r0 + FUSE_ROWS : T;
        int r = ws_conv_run_rows_threads(s->c1, &a1, r0, r1 - r0, 1, err);
        if (r)
            return r;
        /* out's row u reads h's rows 2u - 1 .. 2u + 1: rows below r1 / 2 are ready; cut at
         * a whole group of conv2's rows */
        const int u1 = r1 == T ? t_out : r1 / 2 / g2 * g2;
        if (u1 > u0 && (r = ws_conv_run_rows_threads(s->c2, &a2, u0, u1 - u0, 1, err)))
            return r;
        u0 = u1 > u0 ? u1 : u0;
        r0 = r1;
    }
    return 0;
}

typedef struct {
    ws_stem *s;
    const float *mel, *pos;
    float *out;
    int T, n, next; /* windows [0, n); next: the first not yet claimed */
    int rc;         /* 0, 1 (a plan cannot run rows: the batch path instead) or -1 */
    ws_err err;     /* the first error */
    pthread_mutex_t mu;
} fused_job;

static void fused_task(void *ctx, int ti, int nt)
{
    (void)nt;
    fused_job *J = ctx;
    ws_stem *s = J->s;
    const int T = J->T, nm = s->n_mels, d = s->d, t_out = ws_stem_out_len(T);
    float *h = s->h + (size_t)ti * T * d;
    for (;;) {
        const int w = __atomic_fetch_add(&J->next, 1, __ATOMIC_RELAXED);
        if (w >= J->n || __atomic_load_n(&J->rc, __ATOMIC_RELAXED))
            return;
        ws_err e = {{0}};
        const int r = fused_window(s, J->mel + (size_t)w * nm * T, T, J->pos,
                                   J->out + (size_t)w * t_out * d, h, &e);
        if (r) {
            pthread_mutex_lock(&J->mu);
            if (!J->rc || (r < 0 && J->rc > 0)) {
                __atomic_store_n(&J->rc, r, __ATOMIC_RELAXED);
                J->err = e;
            }
            pthread_mutex_unlock(&J->mu);
            return;
        }
    }
}

int ws_stem_run(ws_stem *s, const float *mel, int n_win, int n_frames, int add_pos, float *out,
                ws_err *err)
{
    const int T = n_frames, nm = s->n_mels, d = s->d;
    if (T < 1 || n_win < 1)
        return ws_errf(err, "the stem needs at least one frame and one window (got %d frames, "
                            "%d windows)", T, n_win);
    const int t_out = ws_stem_out_len(T);
    const float *pos = NULL;
    int rows = 0;
    if (add_pos && !(pos = pos_rows(s, t_out, &rows, err)))
        return -1;
    if (s->gpu) {
        /* the device's table is a prefix of this one (or none): replace it when short */
        if (pos && ws_gpu_add_rows(s->gpu) < t_out && ws_gpu_set_add(s->gpu, pos, rows, err))
            return -1;
        return ws_gpu_stem(s->gpu, mel, n_win, T, add_pos, out, err);
    }
    /* Every window but the last, up to G at a time as one engine call of G items, so that
     * threads have G windows' blocks to share (one window gives each conv 6-12 blocks); G
     * from the threads, its conv1 output under BATCH_BYTES. The last window, the one a
     * padded tail can end, goes alone through cpu_window. The engine's bits do not depend
     * on the items of a call, so every window has the bits it has alone. */
    int G = n_win - 1 < s->threads ? n_win - 1 : s->threads;
    const long long per = (long long)T * d * (long long)sizeof(float);
    if (G > 1 && G * per > BATCH_BYTES)
        G = (int)(BATCH_BYTES / per) > 1 ? (int)(BATCH_BYTES / per) : 1;
    /* With at least as many windows as threads, rounds of them (a window per thread) run
     * fused, each on one thread with its own h (fused_window): all but the last window where
     * the threads are busy for 85 % of the rounds' time or more, else the whole rounds alone;
     * the rest as below. */
    const int nt = s->threads, nf = n_win - 1, rounds = (nf + nt - 1) / (nt > 0 ? nt : 1);
    const int F = nt < 2 || nf < nt || per > FUSED_BYTES ? 0
                  : 100LL * nf >= 85LL * rounds * nt ? nf
                                                     : nf / nt * nt;
    const int nw = nt < WS_PARALLEL_MAX ? nt : WS_PARALLEL_MAX;
    const int need = F > 0 && nw > G ? nw : G > 1 ? G : 1;
    if (reserve(s, (size_t)need * (size_t)T, err)) /* threads x FUSED_BYTES, G's bound or one window */
        return -1;
    int w = 0;
    if (F > 0) {
        fused_job J = {.s = s, .mel = mel, .pos = pos, .out = out, .T = T, .n = F};
        pthread_mutex_init(&J.mu, NULL);
        ws_parallel(nw, fused_task, &J);
        pthread_mutex_destroy(&J.mu);
        if (J.rc < 0) {
            if (err)
                *err = J.err;
            return -1;
        }
        if (J.rc == 0) /* else (a plan cannot run rows on its own) all on the batch path */
            w = F;
    }
    for (; G > 1 && w + 1 < n_win;) {
        const int g = n_win - 1 - w < G ? n_win - 1 - w : G;
        ws_conv_args a1 = {.n = g, .t_in = T, .x = mel + (size_t)w * nm * T, .y = s->h};
        ws_conv_args a2 = {.n = g, .t_in = T, .x = s->h, .y = out + (size_t)w * t_out * d,
                           .add = pos, .add_batch_stride = 0};
        if (ws_conv_run(s->c1, &a1, err) || ws_conv_run(s->c2, &a2, err))
            return -1;
        w += g;
    }
    for (; w < n_win; w++)
        if (cpu_window(s, mel + (size_t)w * nm * T, T, pos, out + (size_t)w * t_out * d, err))
            return -1;
    return 0;
}

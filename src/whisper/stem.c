/* stem.c - Whisper's conv stem on the CPU (see stem.h).
 *
 *   xp  [T + 2][n_mels]  mel transposed to time-major, zero rows at both ends
 *   hp  [T + 2][d]       gelu(conv1(mel)), zero rows at both ends
 *   out [t_out][d]       gelu(conv2(hp)) (+ pos)
 * The zero rows are conv padding 1, so both convs read shifted-row views
 * (conv.c) with no bounds checks. Buffers grow to the largest T seen and
 * are reused across calls.
 *
 * Constant tail: a window padded to 30 s ends in frames that are all the
 * same column (the floor value, or 0.0 with --pad mel0). If frames
 * [tc, T) are equal, conv1 rows t in [tc+1, T-2] read three equal frames
 * and are equal, and conv2 rows u with 2u-1 >= tc+1 and 2u+1 <= T-2 read
 * three equal rows of those. Each such run is computed once and copied;
 * only the rows next to the audio and to the zero padding at the very end
 * are computed. A 5 s clip computes about a sixth of the window. The copied
 * rows are the same arithmetic on the same inputs as the computed one.
 * Validated by tests/test_conv.c (stem.constant_tail_*) against the oracle.
 */
#include "stem.h"

#include <stdlib.h>
#include <string.h>

#include "conv/conv.h"

struct ws_stem {
    const ws_model *m;
    ws_rowconv *c1, *c2;
    int n_threads;
    float *xp, *hp;
    int cap_t;           /* frames the buffers hold */
    float *pos;          /* sinusoids table when the model has none */
    int pos_len;
};

ws_stem *ws_stem_new(const ws_model *m, int n_threads, ws_err *err)
{
    ws_stem *s = calloc(1, sizeof *s);
    if (!s)
        return ws_errf(err, "out of memory"), NULL;
    s->m = m;
    s->n_threads = n_threads < 1 ? 1 : n_threads;
    ws_rowconv_desc d1 = {m->n_mels, m->d, 3, 1, 1, 1, WS_ACT_GELU};
    ws_rowconv_desc d2 = {m->d, m->d, 3, 2, 1, 1, WS_ACT_GELU};
    if (!(s->c1 = ws_rowconv_new(&d1, m->conv1_w, m->conv1_b, err)) ||
        !(s->c2 = ws_rowconv_new(&d2, m->conv2_w, m->conv2_b, err))) {
        ws_stem_free(s);
        return NULL;
    }
    return s;
}

void ws_stem_free(ws_stem *s)
{
    if (!s)
        return;
    ws_rowconv_free(s->c1);
    ws_rowconv_free(s->c2);
    free(s->xp);
    free(s->hp);
    free(s->pos);
    free(s);
}

static int reserve(ws_stem *s, int T, ws_err *err)
{
    if (T <= s->cap_t)
        return 0;
    free(s->xp);
    free(s->hp);
    s->xp = calloc((size_t)(T + 2) * s->m->n_mels, sizeof(float));
    s->hp = calloc((size_t)(T + 2) * s->m->d, sizeof(float));
    s->cap_t = 0;
    if (!s->xp || !s->hp)
        return ws_errf(err, "out of memory for a %d-frame stem", T);
    s->cap_t = T;
    return 0;
}

int ws_stem_run(ws_stem *s, const float *mel, int n_frames, int add_pos, float *out, ws_err *err)
{
    const int T = n_frames, nm = s->m->n_mels, d = s->m->d;
    if (T < 1)
        return ws_errf(err, "the stem needs at least one frame");
    const int t_out = ws_stem_out_len(T);
    const float *pos = NULL;
    if (add_pos) {
        if (s->m->pos || t_out > s->pos_len) {
            float *owned = NULL;
            pos = ws_pos_table(s->m, t_out, &owned, err);
            if (!pos)
                return -1;
            if (owned) {
                free(s->pos);
                s->pos = owned;
                s->pos_len = t_out;
            }
        } else {
            pos = s->pos;
        }
    }
    if (reserve(s, T, err))
        return -1;
    /* Zero pad rows: row 0 and row T + 1 (T may be smaller than last time). */
    memset(s->xp, 0, sizeof(float) * nm);
    memset(s->xp + (size_t)(T + 1) * nm, 0, sizeof(float) * nm);
    memset(s->hp, 0, sizeof(float) * d);
    memset(s->hp + (size_t)(T + 1) * d, 0, sizeof(float) * d);
    /* Transpose mel [nm][T] into xp rows 1..T, in tiles for the cache. */
    enum { TILE = 32 };
    for (int t0 = 0; t0 < T; t0 += TILE)
        for (int i = 0; i < nm; i++)
            for (int t = t0; t < t0 + TILE && t < T; t++)
                s->xp[(size_t)(t + 1) * nm + i] = mel[(size_t)i * T + t];
    /* first frame of the run of frames equal to the last one (xp row t+1 = frame t) */
    int tc = T - 1;
    const size_t row_bytes = sizeof(float) * nm;
    while (tc > 0 && memcmp(s->xp + (size_t)tc * nm, s->xp + (size_t)T * nm, row_bytes) == 0)
        tc--;
    float *h = s->hp + d; /* conv1 output row 0 */
    const int h_lo = tc + 1, h_hi = T - 2; /* rows of h that are equal */
    if (h_hi - h_lo >= 2) {
        ws_rowconv_run_rows(s->c1, s->xp, 0, h_lo + 1, h, d, NULL, s->n_threads);
        ws_rowconv_run_rows(s->c1, s->xp, T - 1, 1, h, d, NULL, 1);
        for (int t = h_lo + 1; t <= h_hi; t++)
            memcpy(h + (size_t)t * d, h + (size_t)h_lo * d, sizeof(float) * d);
    } else {
        ws_rowconv_run(s->c1, s->xp, T, h, d, NULL, s->n_threads);
    }
    const int u_lo = (h_lo + 2) / 2, u_hi = (h_hi - 1) / 2; /* rows of out that are equal */
    if (h_hi - h_lo >= 2 && u_hi - u_lo >= 2) {
        ws_rowconv_run_rows(s->c2, s->hp, 0, u_lo + 1, out, d, NULL, s->n_threads);
        ws_rowconv_run_rows(s->c2, s->hp, u_hi + 1, t_out - u_hi - 1, out, d, NULL, s->n_threads);
        for (int u = u_lo + 1; u <= u_hi; u++)
            memcpy(out + (size_t)u * d, out + (size_t)u_lo * d, sizeof(float) * d);
        if (pos)
            for (size_t i = 0; i < (size_t)t_out * d; i++)
                out[i] += pos[i];
    } else {
        ws_rowconv_run(s->c2, s->hp, T, out, d, pos, s->n_threads);
    }
    return 0;
}

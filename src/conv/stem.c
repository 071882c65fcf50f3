/* stem.c - Whisper's conv stem on the CPU (see stem.h).
 *
 *   xp  [T + 2][n_mels]  mel transposed to time-major, zero rows at both ends
 *   hp  [T + 2][d]       gelu(conv1(mel)), zero rows at both ends
 *   out [t_out][d]       gelu(conv2(hp)) (+ pos)
 * The zero rows are conv padding 1, so both convs read shifted-row views
 * (conv.c) with no bounds checks. Buffers grow to the largest T seen and
 * are reused across calls.
 */
#include "stem.h"

#include <stdlib.h>
#include <string.h>

#include "conv.h"

struct ws_stem {
    const ws_model *m;
    ws_conv *c1, *c2;
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
    ws_conv_desc d1 = {m->n_mels, m->d, 3, 1, 1, 1, WS_ACT_GELU};
    ws_conv_desc d2 = {m->d, m->d, 3, 2, 1, 1, WS_ACT_GELU};
    if (!(s->c1 = ws_conv_new(&d1, m->conv1_w, m->conv1_b, err)) ||
        !(s->c2 = ws_conv_new(&d2, m->conv2_w, m->conv2_b, err))) {
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
    ws_conv_run(s->c1, s->xp, T, s->hp + d, d, NULL, s->n_threads);
    ws_conv_run(s->c2, s->hp, T, out, d, pos, s->n_threads);
    return 0;
}

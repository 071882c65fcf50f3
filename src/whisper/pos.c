/* pos.c - Whisper's sinusoidal positional embedding.
 *
 * openai-whisper model.py sinusoids(length, channels, max_timescale=10000):
 *   inc = log(10000) / (channels // 2 - 1)
 *   inv[j] = exp(-inc * j),            j in [0, channels/2)
 *   out[p] = [sin(p * inv), cos(p * inv)]
 * computed here in double and rounded once (openai's own float32 table is
 * off by about 1e-4 at large p). Validated by tests/test_stem.c.
 */
#include <math.h>
#include <stdlib.h>

#include "stem.h"

void ws_sinusoids(int length, int channels, float *out)
{
    const int half = channels / 2;
    const double inc = log(10000.0) / (double)(half - 1);
    for (int p = 0; p < length; p++) {
        for (int j = 0; j < half; j++) {
            double a = (double)p * exp(-inc * (double)j);
            out[(size_t)p * channels + j] = (float)sin(a);
            out[(size_t)p * channels + half + j] = (float)cos(a);
        }
    }
}

const float *ws_pos_table(const ws_model *m, int t_out, float **owned, ws_err *err)
{
    *owned = NULL;
    if (m->pos) {
        if (t_out > m->n_pos)
            return ws_errf(err, "positional embedding: %d output positions but the model's "
                                "table has %d rows", t_out, m->n_pos), NULL;
        return m->pos;
    }
    if (m->d < 4 || m->d % 2)
        return ws_errf(err, "positional embedding: the model has none and its width %d is too "
                            "small for sinusoids (an even width of at least 4)", m->d), NULL;
    float *t = malloc((size_t)t_out * (size_t)m->d * sizeof *t);
    if (!t)
        return ws_errf(err, "out of memory for the positional table"), NULL;
    ws_sinusoids(t_out, m->d, t);
    *owned = t;
    return t;
}

/* act.c - the conv engine's activations and their derivatives, in float32.
 *
 *   RELU  f = max(z, 0)                 f' = [z > 0]
 *   GELU  f = z * Phi(z)  (exact erf)   f' = Phi(z) + z * phi(z),
 *         Phi(z) = erfc(-z / sqrt2) / 2,  phi(z) = exp(-z^2 / 2) / sqrt(2 pi)
 *   SILU  f = z * s,  s = 1 / (1 + exp(-z))   f' = s + z * s * (1 - s)
 * f is gelu.c's vectorised epilogue (GELU: |error| <= 1.5e-7 * max(1, |z|) against erf in
 * double; SILU from its float exp); f' uses libm's erfcf and expf. Used by pre (on x as read), act (FWD epilogue) and the
 * gradient through act (BWD). Tested by tests/test_engine.c (oracle and finite differences).
 */
#include <math.h>

#include "conv.h"
#include "engine.h"

#define INV_SQRT2 0.70710678118654752f
#define INV_SQRT_2PI 0.39894228040143268f

float ws_act_df(ws_act act, float z)
{
    switch (act) {
    case WS_ACT_RELU:
        return z > 0.0f ? 1.0f : 0.0f;
    case WS_ACT_GELU:
        return 0.5f * erfcf(-z * INV_SQRT2) + z * INV_SQRT_2PI * expf(-0.5f * z * z);
    case WS_ACT_SILU: {
        const float s = 1.0f / (1.0f + expf(-z));
        return s + z * s * (1.0f - s);
    }
    default:
        return 1.0f;
    }
}

void ws_act_row(float *v, int n, const float *bias, ws_act act)
{
    if (bias)
        for (int i = 0; i < n; i++)
            v[i] += *bias;
    if (act != WS_ACT_NONE) /* the vectorised epilogue of gelu.c, as one row of n */
        ws_bias_act_rows(v, 1, n, n, NULL, act, NULL);
}

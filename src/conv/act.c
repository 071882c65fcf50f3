/* act.c - the conv engine's activations and their derivatives, in float32.
 *
 *   RELU  f = max(z, 0)                 f' = [z > 0]
 *   GELU  f = z * Phi(z)  (exact erf)   f' = Phi(z) + z * phi(z),
 *         Phi(z) = erfc(-z / sqrt2) / 2,  phi(z) = exp(-z^2 / 2) / sqrt(2 pi)
 *   SILU  f = z * s,  s = 1 / (1 + exp(-z))   f' = s + z * s * (1 - s)
 * Both are gelu.c's vectorised loops (ws_bias_act_rows, ws_act_grad_rows): GELU from the
 * erfc fit (|error| <= 1.5e-7 * max(1, |z|) against erf in double), SILU from its float
 * exp. Used by pre (on x as read), act (FWD epilogue) and the gradient through act (BWD).
 * Tested by tests/test_engine.c (oracle and finite differences).
 */
#include "conv.h"
#include "engine.h"

void ws_act_row(float *v, int n, const float *bias, ws_act act)
{
    if (bias)
        for (int i = 0; i < n; i++)
            v[i] += *bias;
    if (act != WS_ACT_NONE) /* the vectorised epilogue of gelu.c, as one row of n */
        ws_bias_act_rows(v, 1, n, n, NULL, act, NULL);
}

/* client.c - a program built from include/ws_conv.h alone (no src/ headers), as an
 * outside caller would build it: a depthwise causal conv (Mamba's), forward, on a
 * tiny input, against values worked out by hand. Exits 0 when they match, 1 if not.
 *
 *   y[n,t,c] = b[c] + sum_{k<3} w[c][k] * x[n, t + k - 2, c]     (K 3, P_L 2, P_R 0; NLC)
 *
 * The inputs are small integers, so every sum is exact in float32 and the
 * comparison is for equality. */
#include <stdio.h>

#include <ws_conv.h>

enum { N = 1, C = 2, K = 3, T = 5 };

int main(void)
{
    /* channel 0: w 1 2 3, b 0, x 1 2 3 4 5; channel 1: w 0 -1 1 (a difference), b 10,
     * x 1 4 9 16 25; x is time-major [t][c] */
    const float w[C * K] = {1, 2, 3, 0, -1, 1}, b[C] = {0, 10};
    const float x[T * C] = {1, 1, 2, 4, 3, 9, 4, 16, 5, 25};
    /* channel 0: y[t] = 1*x[t-2] + 2*x[t-1] + 3*x[t]: 3, 2+6, 1+4+9, 2+6+12, 3+8+15;
     * channel 1: y[t] = 10 + x[t] - x[t-1]: 11, 13, 15, 17, 19 */
    const float want[T * C] = {3, 11, 8, 13, 14, 15, 20, 17, 26, 19};

    ws_err err;
    ws_conv_desc d = {.op = WS_CONV_FWD, .c_in = C, .c_out = C, .groups = C, .k = K,
                      .stride = 1, .dilation = 1, .pad_l = K - 1, .pad_r = 0,
                      .x_layout = WS_NLC, .y_layout = WS_NLC, .act = WS_ACT_NONE};
    if (ws_conv_check(&d, &err) || ws_conv_out_len(&d, T) != T) {
        fprintf(stderr, "client: descriptor refused or T_out wrong: %s\n", err.msg);
        return 1;
    }
    ws_conv *c = ws_conv_new(&d, w, b, 1, &err);
    if (!c) {
        fprintf(stderr, "client: ws_conv_new: %s\n", err.msg);
        return 1;
    }
    float y[T * C];
    for (int i = 0; i < T * C; i++)
        y[i] = -1e30f;
    ws_conv_args a = {.n = N, .t_in = T, .x = x, .y = y};
    int rc = ws_conv_run(c, &a, &err);
    ws_conv_free(c);
    if (rc) {
        fprintf(stderr, "client: ws_conv_run: %s\n", err.msg);
        return 1;
    }
    int bad = 0;
    for (int t = 0; t < T; t++)
        for (int ch = 0; ch < C; ch++)
            if (y[t * C + ch] != want[t * C + ch]) {
                fprintf(stderr, "client: y[t %d][c %d] = %g, want %g\n", t, ch,
                        (double)y[t * C + ch], (double)want[t * C + ch]);
                bad = 1;
            }
    return bad;
}

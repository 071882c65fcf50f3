/* gpu_dws.h - the runtime of the depthwise causal kernels with packed sequences and carried
 * states (ptx_dws.h): one loaded module per descriptor, and a call enqueued on a stream.
 * It takes explicit parameters (device pointers, the caller's stream and scratch), so that a
 * plan (gpu_conv.c) can hold a ws_dws beside its other kernels.
 *
 *   if (ws_dws_fits(&d)) {
 *       ws_dws *m = ws_dws_load(g, &d, err);                         // the runtime's cache
 *       size_t sb = ws_dws_scratch_bytes(&d, a.n, a.t_in);          // BWD: gz, else 0
 *       ...
 *       ws_dws_enqueue(m, cu, &d, &a, t_out, w_f32, b_f32, scratch, stream, err);
 *       ws_dws_free(m);
 *   }
 *
 * ws_dws_enqueue takes a call that ws_conv_check_args accepted (pointers in a are device
 * pointers; a->w and a->b are not read: w_f32 is the float32 [C][K] weights, b_f32 the
 * float32 [C] bias or 0), and launches on st without waiting:
 *   FWD  _fwd (y), then _final when a->final_states (and K > 1)
 *   BWD  _gz into scratch (ws_dws_scratch_bytes bytes or more), then _dx when a->dx,
 *        _dinit when a->dinitial_states (and K > 1), _dw when a->dw, _db when a->db
 * Refused (-1, one line naming the fields, nothing launched): a descriptor other than the
 * module's, t_out != t_in, w_f32 0, BWD scratch 0, seq_idx together with a state, a state
 * with dilation other than 1, and a grid over the limit (the message names the entry and its
 * grid); every grid and argument array is checked before the first launch. final_states may
 * be initial_states itself (read and written by _final after _fwd has read it).
 * The caller makes the module's context current (cuCtxSetCurrent) before each call.
 * Tested by tests/test_gpu_dws.c on a GPU (skipped without one).
 */
#ifndef WS_CUDA_GPU_DWS_H
#define WS_CUDA_GPU_DWS_H

#include <stddef.h>
#include <stdint.h>

#include "driver.h"
#include "gpu_runtime.h"
#include "ptx/ptx_dws.h"
#include "ws_conv.h"

typedef struct ws_dws ws_dws;

/* ws_dws_fits(d) and ws_dws_emit(d, cc_major, cc_minor, err): ptx_dws.h */

/* Emits d's module for the capability g's plans emit for (emit_major.emit_minor) and gets it
 * from g's device's module cache (ws_gpu_module: loaded once per process), with every entry
 * of its op. NULL with err on failure. */
ws_dws *ws_dws_load(ws_gpu *g, const ws_conv_desc *d, ws_err *err);

/* float32 scratch a call of n items of t_in positions needs: BWD N*C*T_in*4 bytes (gz), FWD
 * 0 (and 0 for a descriptor ws_dws_fits refuses) */
size_t ws_dws_scratch_bytes(const ws_conv_desc *d, int n, int t_in);

/* Enqueues one call on st (above). 0, or -1 with err. */
int ws_dws_enqueue(ws_dws *m, ws_cu *cu, const ws_conv_desc *d, const ws_conv_args *a, int t_out,
                   uint64_t w_f32, uint64_t b_f32, uint64_t scratch, wscu_stream st, ws_err *err);

/* Frees m (its module stays in the runtime's cache); NULL-safe. */
void ws_dws_free(ws_dws *m);

#endif

/* frontend.h - where the stem runs: the one device policy of the command (src/cli/) and
 * the library (src/api/).
 *
 *   auto       the GPU when one is usable, else the CPU; the CPU fallback is noted, loudly
 *              when a CUDA driver is installed but gives no usable GPU, only for the
 *              verbose when there is no driver at all (a CPU-only machine is no surprise)
 *   cpu        the CPU
 *   cuda[:N]   GPU number N (default 0), or an error
 * On the CPU the stem computes in fp32 whatever precision was asked (noted).
 * Tested by tests/test_cli_names.c (the notes) and tests/test_api.c.
 */
#ifndef WS_FRONTEND_H
#define WS_FRONTEND_H

#include <stddef.h>

#include "common.h"
#include "cuda/gpu.h"
#include "whisper/model.h"
#include "whisper/stem.h"

typedef enum { WS_DEVICE_AUTO = 0, WS_DEVICE_CPU, WS_DEVICE_CUDA } ws_device_kind;

/* "auto" (or NULL), "cpu", "cuda", "cuda:N" (N a number, 0 to 1023). 0, or -1. */
int ws_device_parse(const char *s, ws_device_kind *kind, int *ordinal);

/* How loud a note is: not at all, for the verbose only, always (but not when quiet). */
typedef enum { WS_NOTE_NONE = 0, WS_NOTE_VERBOSE, WS_NOTE_SHOW } ws_note_level;

typedef struct {
    ws_stem *stem;
    int on_gpu;
    ws_note_level fallback;     /* auto fell back to the CPU: fallback_note says why */
    char fallback_note[WS_ERR_LEN + 64];
    int precision_note;         /* on the CPU, though a precision other than fp32 was asked */
} ws_stem_choice;

/* Makes the stem of m where the policy says (threads: the CPU's). 0 with c filled; 1 when
 * cuda was asked for and no GPU is usable (err: why); -1 on another failure (err). */
int ws_frontend_stem(const ws_model *m, ws_device_kind kind, int ordinal, ws_precision prec,
                     int threads, ws_stem_choice *c, ws_err *err);

/* Without a stem (the log-Mel alone, on the CPU): cuda asked for still needs the GPU to be
 * there. 0 (name: the GPU's, when cuda), or -1 with err. */
int ws_frontend_require_gpu(ws_device_kind kind, int ordinal, char *name, size_t cap,
                            ws_err *err);

#endif

/* internal.h - what api.c and batch.c share; not an API (that is include/whisper_stem.h).
 *
 * A context holds the model, the stem (CPU plans or the GPU's kernels), the log-Mel
 * plan and the options; the log-Mel plan is read-only after whisper_stem_new (any number
 * of threads may compute with it), the stem is used under stem_mu.
 */
#ifndef WS_API_INTERNAL_H
#define WS_API_INTERNAL_H

#include <pthread.h>

#include "whisper_stem.h"

#include "audio/audio.h"
#include "common.h"
#include "mel/mel.h"
#include "whisper/model.h"
#include "whisper/stem.h"

struct whisper_stem {
    ws_model model;   /* the weights, or zeroed without a model */
    int have_model;
    ws_stem *stem;    /* NULL without a model */
    int on_gpu;
    ws_mel *mel;
    int n_mels, threads, pos;
    ws_pad pad;
    pthread_mutex_t stem_mu; /* one stem call at a time */
    char device[16];  /* "cpu" or "cuda:N" */
};

/* Fills err (when not NULL) with e's message and returns -1. */
int ws_api_fail(whisper_stem_error *err, const ws_err *e);

/* The embeddings of a log-Mel in ws_mel_out's layout ([n_win][n_mels][n_frames]) into
 * out ([t_out][d], or [n_win][t_out][d]), the stem run under the context's lock. 0, or -1
 * with e (e's message without a file name). */
int ws_api_embed_windows(whisper_stem *ctx, const float *mel, int n_win, int n_frames,
                         whisper_stem_array *out, ws_err *e);

/* The log-Mel of 16 kHz samples on n_threads threads, with name in messages. */
int ws_api_mel(const whisper_stem *ctx, const ws_audio *a, int n_threads, const char *name,
               ws_mel_out *mo, ws_err *e);

#endif

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
#include "cuda/gpu_batch.h"
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
    int decode;       /* ws_audio_decode of its file calls (whisper_stem_set_decode) */
    ws_pad pad;
    pthread_mutex_t stem_mu; /* one stem call at a time */
    char device[16];  /* "cpu" or "cuda:N" */
    /* On a GPU (cuda/gpu_batch.h): inputs of up to a slot's windows go through the
     * batcher's slots, longer ones through its one-input path. Everything of it is used
     * under stem_mu; a slot is taken (ws_api_slot_take) by a call or a batch for as long
     * as it needs the slot's results, and given back after. */
    ws_gpu_batcher *batcher;
    int mel_gpu;        /* the log-Mel on the GPU (the batcher's samples path) */
    char mel_name[16];  /* "cuda:N", whisper_stem_mel_device's answer then */
    int ordinal;
    int *slot_owner;    /* per slot: 0 free, else taken */
    int *slot_used;     /* per slot: a batch was submitted (wait for it before refilling) */
    pthread_cond_t slot_cv;
};

/* A free slot of the batcher, taken; waits (stem_mu held, released while waiting) for one.
 * The slot's earlier batch has completed when it returns. The slot, or -1 with e. */
int ws_api_slot_take(whisper_stem *ctx, ws_err *e);
/* The same; with wait 0, -2 at once when every slot is taken. */
int ws_api_slot_get(whisper_stem *ctx, int wait, ws_err *e);
void ws_api_slot_give(whisper_stem *ctx, int s);

/* The embeddings of 16 kHz samples with the log-Mel on the GPU (any length) into out, a
 * host array; the context's lock taken inside. 0, or -1 with e. */
int ws_api_gpu_embed(whisper_stem *ctx, const ws_audio *a, whisper_stem_array *out, ws_err *e);
/* The same into the caller's device memory (alloc) on its stream, as
 * whisper_stem_embed_pcm_device; ctx->mel_gpu. out->data: alloc's block, also on failure */
int ws_api_gpu_embed_device(whisper_stem *ctx, const ws_audio *a, void *stream,
                            whisper_stem_device_alloc alloc, void *user,
                            whisper_stem_device_array *out, ws_err *e);
/* A caller's stream for the driver: NULL is the legacy default stream */
wscu_stream ws_api_stream(void *stream);

/* Samples to what a GPU batch takes of them (the log-Mel's geometry by ctx's pad). */
int ws_api_gpu_input(const whisper_stem *ctx, const ws_audio *a, ws_gpu_input *in,
                     ws_mel_geom *g, ws_err *e);

/* The info of samples a (their windows, content, valid rows; the source's rate). */
void ws_api_info(const whisper_stem *ctx, const ws_audio *a, whisper_stem_info *info);

/* A block of at least bytes for a result, a kept one when one fits (whisper_stem_array_free
 * keeps a few); a malloc block either way. NULL when out of memory. */
void *ws_api_buf_get(size_t bytes);

/* The shape of embed's result for n_win windows of n_frames (data NULL); its bytes, or 0
 * on overflow. */
size_t ws_api_emb_shape(const whisper_stem *ctx, int n_win, int n_frames, whisper_stem_array *out);

/* The same, allocated. 0, or -1 with e. */
int ws_api_emb_array(const whisper_stem *ctx, int n_win, int n_frames, whisper_stem_array *out,
                     ws_err *e);

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

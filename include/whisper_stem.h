/* whisper_stem.h - whisper-stem as a library: audio -> 16 kHz -> log-Mel -> Whisper's
 * conv stem, on the CPU or a CUDA GPU. The same computation as the whisper-stem
 * command, in process.
 *
 * Usage (build with `pkg-config --cflags --libs whisper-stem`):
 *
 *   whisper_stem_error err;
 *   whisper_stem_params p = whisper_stem_default_params();
 *   p.model = "ggml-tiny.gguf";                         // NULL: log-Mel only
 *   whisper_stem *ws = whisper_stem_new(&p, &err);
 *   if (!ws) { fprintf(stderr, "%s\n", err.msg); return 1; }
 *
 *   whisper_stem_array e = {0};
 *   if (whisper_stem_embed_file(ws, "clip.wav", &e, &err))  // e: [1500][d], one window
 *       fprintf(stderr, "%s\n", err.msg);
 *   whisper_stem_array_free(&e);
 *
 *   whisper_stem_array mel = {0};                       // PCM at any rate, interleaved
 *   whisper_stem_log_mel(ws, pcm, n_frames, 44100, 2, &mel, &err); // [n_mels][3000]
 *   whisper_stem_array_free(&mel);
 *
 *   const char *paths[] = {"a.flac", "b.mp3", "c.wav"};
 *   whisper_stem_batch *b = whisper_stem_batch_open(ws, paths, 3, &err);
 *   size_t i; int r;
 *   while ((r = whisper_stem_batch_next(b, &e, &i, &err)) != 0) {
 *       if (r < 0) { fprintf(stderr, "%s\n", err.msg); continue; }   // "b.mp3: ..."
 *       ... e is paths[i]'s result ...
 *       whisper_stem_array_free(&e);
 *   }
 *   whisper_stem_batch_close(b);
 *   whisper_stem_free(ws);
 *
 * Units. Audio is float32 samples in [-1, 1], 16000 Hz mono after load/resample (PCM
 * given at another rate or with several channels is averaged over the channels, then
 * resampled with libsoxr, as the command does with a decoded file). The log-Mel has
 * frames of hop 160 samples (10 ms): n_samples / 160 frames of n_mels bands (80, or 128
 * for large-v3). A window is 30 s: 480000 samples, 3000 frames, 1500 output rows of the
 * stem (conv2 has stride 2: t_out = (n_frames - 1) / 2 + 1). d is the model's width
 * (384 tiny ... 1280 large).
 *
 * Windowing (params.pad), as the command's --pad / --no-pad:
 *   WHISPER_STEM_PAD_AUDIO  (default) openai's: the samples are zero-padded to a whole
 *                           number of 30 s windows (at least one), the log-Mel of all of
 *                           it is taken (one global maximum), then cut into 3000-frame
 *                           windows. n_win = ceil((n_samples / 160) / 3000), at least 1.
 *   WHISPER_STEM_PAD_MEL0   log-Mel of the samples followed by 30 s of zeros; its
 *                           n_samples / 160 frames in 3000-frame windows, the last filled
 *                           with 0.0 (--pad mel0).
 *   WHISPER_STEM_PAD_NONE   one window of n_samples / 160 frames (--no-pad); fewer than
 *                           160 samples is an error.
 *
 * Results. An array owns its float32 data, row-major (C order), and the caller frees
 * it with whisper_stem_array_free. Shapes are the ones the command writes:
 *   log-Mel      [n_mels][n_frames]        n_frames = n_win * 3000 (window w is columns
 *                                          [3000 w, 3000 w + 3000)), or n_samples / 160
 *                                          with PAD_NONE. For one window these are the
 *                                          bytes `whisper-stem --mel` writes; for several
 *                                          the command writes the same windows stacked,
 *                                          [n_win][n_mels][3000].
 *   embeddings   [1500][d]                 one window (t_out rows with PAD_NONE)
 *                [n_win][1500][d]          more than one
 * Embeddings are the stem's output, gelu(conv2(gelu(conv1(mel)))) transposed to
 * time-major; with params.pos the positional embedding is added (the model's table, or
 * openai's sinusoids when the file has none): then they are what openai's encoder feeds
 * its first transformer block. On the CPU the numbers are the command's bit for bit
 * (same threads or not: the CPU's sums have a fixed order); on a GPU they are within the
 * precision's bounds (README, "Precision"), and bit for bit what the command writes on that
 * GPU: its default there computes the log-Mel on the GPU (within 1e-4 of the CPU's), as this
 * library does by default; whisper_stem_set_mel_device(ctx, "cpu") gives --mel-device cpu's.
 *
 * Errors. Every function that can fail returns -1 (or NULL) and writes one line, without
 * a newline, to err->msg naming the file, field or value at fault ("clip.wav: not audio
 * (...)", "params.n_mels 64: must be 80 or 128"); err may be NULL. On success the
 * functions return 0 (or non-NULL) and leave err alone. An output array is filled on
 * success only and zeroed on failure. Nothing prints, nothing exits.
 *
 * Threads. Any call may be made from any thread, and one context may be used from
 * several threads at once: log-Mels on the CPU run concurrently (each call on
 * params.threads threads), while the stem, and the log-Mel on a GPU, run one call at a
 * time per context (a lock; they already use every thread or the GPU). whisper_stem_new and whisper_stem_free take a process-wide
 * lock around FFTW's planner. A batch is used from one thread at a time; its workers
 * share the context, which must outlive it.
 *
 * GPU. No CUDA toolkit is needed: libcuda.so.1 is opened at run time. Devices need
 * compute capability 8.0 or later. "auto" uses GPU 0 when one is usable, else the CPU
 * (whisper_stem_device says which).
 *
 * Versions: WHISPER_STEM_VERSION_* are this header's; whisper_stem_version() is the
 * library's. The ABI (soname libwhisper-stem.so.0) changes only with the major number.
 *
 * Tested by tests/test_api.c (every call, the error paths, results against the
 * command's files) and tests/client/lib_client.c (a program built against an installed
 * prefix with pkg-config alone).
 */
#ifndef WHISPER_STEM_H
#define WHISPER_STEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef WS_API /* what the shared library exports; everything else in it is hidden */
#if defined(__GNUC__) && __GNUC__ >= 4
#define WS_API __attribute__((visibility("default")))
#else
#define WS_API
#endif
#endif

#define WHISPER_STEM_VERSION_MAJOR 0
#define WHISPER_STEM_VERSION_MINOR 1
#define WHISPER_STEM_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library linked, e.g. "0.1.0". */
WS_API const char *whisper_stem_version(void);

typedef struct whisper_stem whisper_stem; /* opaque: a model, its stem, the log-Mel plan */

typedef struct {
    char msg[512]; /* one line, no newline; every call taking an error may get NULL */
} whisper_stem_error;

enum {
    WHISPER_STEM_PAD_AUDIO = 0, /* openai's: whole 30 s windows of the padded audio (default) */
    WHISPER_STEM_PAD_NONE = 1,  /* one window of n_samples / 160 frames (--no-pad) */
    WHISPER_STEM_PAD_MEL0 = 2   /* windows of the log-Mel, the last zero-filled (--pad mel0) */
};

typedef struct {
    const char *model;     /* GGUF path; NULL: log-Mel only (embed calls then fail with a
                              message). Read whole by whisper_stem_new, not kept open. */
    const char *device;    /* NULL or "auto" (GPU 0 when usable, else the CPU), "cpu",
                              "cuda" (GPU 0, or fail), "cuda:N" (GPU N, or fail) */
    const char *precision; /* NULL or "fp32" (default), "tf32", "bf16", "fp16": the GPU's
                              arithmetic; the CPU computes fp32 whatever this says */
    int threads;           /* 0: the CPUs this process may use; else 1 .. 256 */
    int n_mels;            /* 0: the model's, or 80 without a model; else 80 or 128 */
    int pad;               /* WHISPER_STEM_PAD_* */
    int pos;               /* nonzero: add the positional embedding (the command's --pos) */
} whisper_stem_params;

typedef struct {
    float *data;      /* row-major; owned by the array: whisper_stem_array_free */
    int ndim;         /* 1, 2 or 3 */
    int64_t shape[3]; /* shape[i] for i < ndim; the rest 0 */
} whisper_stem_array;

/* model NULL, device "auto", precision "fp32", threads 0, n_mels 0, pad AUDIO, pos 0. */
WS_API whisper_stem_params whisper_stem_default_params(void);

/* Checks p (each field, by name), loads the model, builds the log-Mel plan and the stem
 * on the device asked for. NULL with err on failure. p and its strings are not kept. */
WS_API whisper_stem *whisper_stem_new(const whisper_stem_params *p, whisper_stem_error *err);
WS_API void whisper_stem_free(whisper_stem *ctx); /* NULL-safe */

WS_API int whisper_stem_n_mels(const whisper_stem *ctx);  /* 80 or 128 */
WS_API int whisper_stem_d_model(const whisper_stem *ctx); /* d; 0 without a model */
WS_API const char *whisper_stem_device(const whisper_stem *ctx); /* "cpu" or "cuda:N", where
                                                                    the stem runs */

/* A file (anything libsndfile, libmpg123 or FFmpeg's libraries decode; "-" is standard
 * input) to 16 kHz mono: out [n] float32. An empty file gives ndim 1, shape {0}, data
 * NULL. */
WS_API int whisper_stem_load_audio(const char *path, whisper_stem_array *out,
                                   whisper_stem_error *err);

/* Which audio of a file or buffer, and how it becomes 16 kHz samples. Zeroed: the whole
 * file, the context's decoder (the default one unless whisper_stem_set_decode said). */
typedef struct {
    const char *decode; /* NULL: the context's ("default" for whisper_stem_load_audio_*);
                           "default": libsndfile, libmpg123, FFmpeg's libraries for what
                           libsndfile cannot read (AAC/MP4, WebM, WMA, ...), libsoxr;
                           "openai": openai-whisper's load_audio bit for bit (what its
                           ffmpeg command writes, int16 / 32768): the command's --decode */
    double start;       /* a segment: from `start` seconds (>= 0), */
    double duration;    /* `duration` seconds long (0: to the end); cut at the file's own
                           rate, then averaged and resampled as a file of those frames
                           (docs/corpus.md, "Segments") */
} whisper_stem_audio_opts;

/* whisper_stem_load_audio with options (o NULL: as whisper_stem_load_audio). */
WS_API int whisper_stem_load_audio_opts(const char *path, const whisper_stem_audio_opts *o,
                                        whisper_stem_array *out, whisper_stem_error *err);

/* The same from the bytes of a file in memory (data[0 .. size), the caller's; not kept);
 * name (NULL: "(memory)") is what messages call it. */
WS_API int whisper_stem_load_audio_memory(const void *data, size_t size, const char *name,
                                          const whisper_stem_audio_opts *o,
                                          whisper_stem_array *out, whisper_stem_error *err);

/* pcm: n_samples frames of `channels` interleaved float32 samples at sample_rate Hz
 * (1 .. 1536000; 16000 and 1 channel pass through untouched). Non-finite samples are
 * an error. */

/* The log-Mel: out [n_mels][n_frames] (see Windowing and Results above). */
WS_API int whisper_stem_log_mel(whisper_stem *ctx, const float *pcm, size_t n_samples,
                                int sample_rate, int channels, whisper_stem_array *out,
                                whisper_stem_error *err);

/* The log-Mels of many clips of one window each (at most 30 s; the context's pad AUDIO or
 * MEL0) into out, [count][n_mels][3000] float32 (the caller's): item i is pcm[i],
 * n_samples[i] frames at sample_rate with `channels` interleaved channels, and its log-Mel
 * is whisper_stem_log_mel's for it. Items run side by side: up to 16 to a GPU launch on a
 * GPU context without a model (uploads and copies spread over the context's threads), one
 * clip at a time on a GPU context with a model, one per thread on the CPU. An item that is not one window, or not finite, fails the call
 * naming it ("pcm[3]: ..."). */
WS_API int whisper_stem_log_mel_batch(whisper_stem *ctx, const float *const *pcm,
                                      const size_t *n_samples, size_t count, int sample_rate,
                                      int channels, float *out, whisper_stem_error *err);

/* The embeddings of PCM: [1500][d] for one window, [n_win][1500][d] for more; exactly
 * what `whisper-stem -o out.npy` writes for the same samples (a file holding them). */
WS_API int whisper_stem_embed_pcm(whisper_stem *ctx, const float *pcm, size_t n_samples,
                                  int sample_rate, int channels, whisper_stem_array *out,
                                  whisper_stem_error *err);

/* The embeddings of a log-Mel laid out as whisper_stem_log_mel returns it: mel
 * [n_mels][n_frames], n_mels the context's. With PAD_AUDIO or PAD_MEL0, n_frames must be
 * a multiple of 3000 (whole windows); with PAD_NONE, any n_frames >= 1 is one window.
 * So embed_mel(log_mel(x)) is embed_pcm(x), bit for bit. The shape is embed_pcm's.
 * A NaN or infinite value is an error naming its place ("mel[7][1234] is NaN"). */
WS_API int whisper_stem_embed_mel(whisper_stem *ctx, const float *mel, int n_mels,
                                  int64_t n_frames, whisper_stem_array *out,
                                  whisper_stem_error *err);

/* load_audio then embed_pcm, in one call; errors name the path. */
WS_API int whisper_stem_embed_file(whisper_stem *ctx, const char *path, whisper_stem_array *out,
                                   whisper_stem_error *err);

/* The same with options: a segment, a decoder (o NULL: as whisper_stem_embed_file). */
WS_API int whisper_stem_embed_file_opts(whisper_stem *ctx, const char *path,
                                        const whisper_stem_audio_opts *o,
                                        whisper_stem_array *out, whisper_stem_error *err);

/* The same from the bytes of a file in memory (the caller's; not kept); name (NULL:
 * "(memory)") is what messages call it. */
WS_API int whisper_stem_embed_memory(whisper_stem *ctx, const void *data, size_t size,
                                     const char *name, const whisper_stem_audio_opts *o,
                                     whisper_stem_array *out, whisper_stem_error *err);

/* The decoder of the context's file calls (embed_file, batches, and _opts calls whose
 * decode is NULL): "default" (as made) or "openai", as the command's --decode. 0, or -1
 * with err for another name. A batch keeps the decoder it was opened with. */
WS_API int whisper_stem_set_decode(whisper_stem *ctx, const char *decode,
                                   whisper_stem_error *err);

/* Frees a->data and zeroes *a. NULL-safe; a zeroed array is a no-op. */
WS_API void whisper_stem_array_free(whisper_stem_array *a);

/* Where the log-Mel runs when the stem is on a GPU, as the command's --mel-device:
 *   "auto" or "cuda" (the default): on the GPU, inputs of up to 16 windows (6 for
 *           large) several to a launch, as the command runs them; its values are within
 *           1e-4 of the CPU's (README, "Precision"), and bit for bit the command's with
 *           its default --mel-device.
 *   "cpu":  the CPU's (the bits of the CPU log-Mel; the stem still on the GPU): the
 *           command's --mel-device cpu.
 * A context whose stem is on the CPU keeps the CPU's whatever this says ("cuda" is then
 * an error); a context without a model made with device "cuda" computes its log-Mel on
 * the GPU by default. Call it before other calls on ctx are in flight. 0 or -1 with err. */
WS_API int whisper_stem_set_mel_device(whisper_stem *ctx, const char *mel_device,
                                       whisper_stem_error *err);
/* "cpu" or "cuda:N": where the context's log-Mel runs now. */
WS_API const char *whisper_stem_mel_device(const whisper_stem *ctx);

/* --- results left on the GPU ---------------------------------------------------------
 *
 * The embeddings of PCM into GPU memory the caller provides, ordered on the caller's
 * CUDA stream: the work is enqueued on `stream` (a CUstream of the context's device, in
 * its primary context, as PyTorch's streams are; NULL is the legacy default stream),
 * after whatever the caller enqueued there before, and the call returns without waiting
 * for the GPU. Work the caller enqueues on `stream` afterwards sees the result.
 *
 * alloc(user, bytes) is called once, on the calling thread, with the result's size in
 * bytes (float32, the shape of embed_pcm's result, set in out->shape before the call):
 * it returns a device pointer to at least that many bytes, 16-byte aligned, usable on
 * `stream` (e.g. a torch.empty on the current stream), or NULL to fail the call. The
 * values are those of whisper_stem_embed_pcm on the same context, bit for bit.
 * Needs the stem on a GPU (an error on the CPU). out->data is the pointer alloc gave,
 * the caller's also when the call fails after alloc (NULL before).
 * pcm: pageable memory (malloc, NumPy) has been read when the call returns; page-locked
 * memory (cudaHostAlloc) of an input of more than 16 windows may be read later, in the
 * order of `stream`, so keep it unchanged until the stream has passed the call's work. */
typedef struct {
    void *data;       /* device pointer (the caller's, from alloc) */
    int ndim;         /* 2 or 3 */
    int64_t shape[3];
} whisper_stem_device_array;
typedef void *(*whisper_stem_device_alloc)(void *user, size_t bytes);
WS_API int whisper_stem_embed_pcm_device(whisper_stem *ctx, const float *pcm, size_t n_samples,
                                         int sample_rate, int channels, void *stream,
                                         whisper_stem_device_alloc alloc, void *user,
                                         whisper_stem_device_array *out, whisper_stem_error *err);

/* What is known of an input beside its embeddings (the command's manifest fields). */
typedef struct {
    int windows;        /* 30 s windows */
    int content_frames; /* log-Mel frames of audio in the last window (the rest padding) */
    int valid_ctx;      /* output rows of the last window that see audio: (content + 1) / 2 */
    double duration_s;  /* 16 kHz samples / 16000 */
    int src_rate;       /* the source's sample rate and channels */
    int src_channels;
} whisper_stem_info;

/* The info of n_samples frames of PCM at sample_rate with `channels` channels under the
 * context's pad (what embed_pcm's result covers): the 16 kHz length is
 * floor(n_samples * 16000 / sample_rate + 0.5), as the resampler makes it. 0 or -1. */
WS_API int whisper_stem_pcm_info(const whisper_stem *ctx, size_t n_samples, int sample_rate,
                                 int channels, whisper_stem_info *info, whisper_stem_error *err);

/* Many files, overlapped as the command runs them: worker threads decode and compute
 * the log-Mel of the inputs ahead while the calling thread runs the stem in
 * whisper_stem_batch_next. Results come in input order, one per call, pull-style.
 *
 * Memory: at most 2 x W + 2 inputs are held at once, the next one to return included
 * (W workers: the context's threads with a GPU stem, half of them with the CPU's, at
 * least 2 and at most n_paths), each holding its 16 kHz samples while its log-Mel is
 * made, then the log-Mel (n_mels x 3000 x 4 bytes a window: 0.96 MB at 80 bands); a
 * worker waits rather than take more. The arrays returned are the caller's.
 * On a GPU with its log-Mel there (the default), as the command runs a list: the workers
 * decode and stage the samples in pinned memory, the calling thread puts ready inputs
 * several to a GPU launch (two launches in flight), and the workers copy the results out;
 * then at most max(2 x W + 2, 3 x 16 + W) inputs are held (16: a launch's windows, 6 for
 * large). Each result is whisper_stem_embed_file's bytes for the path.
 *
 * paths are copied. Needs a model (NULL with err without one). */
typedef struct whisper_stem_batch whisper_stem_batch;
WS_API whisper_stem_batch *whisper_stem_batch_open(whisper_stem *ctx, const char *const *paths,
                                                   size_t n_paths, whisper_stem_error *err);

/* 1: *out holds the next input's embeddings, *index its position in paths; 0: no more
 * inputs (out zeroed); -1: that input failed, err holds its own message ("path:
 * problem"), *index its position, out zeroed; the batch goes on: the next call returns
 * the input after it. index may be NULL. */
WS_API int whisper_stem_batch_next(whisper_stem_batch *b, whisper_stem_array *out, size_t *index,
                                   whisper_stem_error *err);

/* The info of the input the last whisper_stem_batch_next returned (1 or -1; zeroed after
 * a failure before the input was decoded). 0, or -1 when nothing was returned yet. */
WS_API int whisper_stem_batch_info(const whisper_stem_batch *b, whisper_stem_info *info);

/* Results left on the GPU (needs the stem and the log-Mel there: a model on device cuda,
 * mel device auto or cuda). Called once, before the batch's first result: from then on
 * whisper_stem_batch_next_device gives each input's embeddings in device memory from
 * alloc (as whisper_stem_embed_pcm_device's: 16-byte aligned, usable on `stream`), and
 * whisper_stem_batch_next refuses. The GPU's work is ordered on `stream` (NULL: the legacy
 * default stream) and a result is there for work enqueued on `stream` after the call that
 * returns it. alloc is called on the thread that calls batch_next_device, for inputs of
 * launches being filled: blocks of inputs the batch fails or never returns (closed early)
 * are the caller's to free. The values are whisper_stem_batch_next's, bit for bit.
 * 0, or -1 (not on a GPU; called too late). */
WS_API int whisper_stem_batch_to_device(whisper_stem_batch *b, void *stream,
                                        whisper_stem_device_alloc alloc, void *user,
                                        whisper_stem_error *err);

/* whisper_stem_batch_next with the result in device memory: 1 (*out its block from alloc
 * and its shape), 0 (no more), -1 (that input failed: err says why; out->data is the
 * block alloc gave for it, or NULL). */
WS_API int whisper_stem_batch_next_device(whisper_stem_batch *b, whisper_stem_device_array *out,
                                          size_t *index, whisper_stem_error *err);

/* Stops the workers (each finishes the input it is decoding), joins them, frees what was
 * not returned. NULL-safe. */
WS_API void whisper_stem_batch_close(whisper_stem_batch *b);

#ifdef __cplusplus
}
#endif

#endif

/* audio.h - any audio file libsndfile decodes, to 16 kHz mono float32.
 *
 * Steps: decode (libsndfile: WAV, FLAC, OGG/Vorbis, Opus, AIFF, ...; MPEG
 * audio through libmpg123), convert to float in [-1, 1) (int16 / 32768 for
 * 16-bit PCM), average the channels, resample to 16000 Hz with a
 * high-quality resampler, chunk by chunk as the input is decoded. Input that
 * already is 16 kHz mono passes through bit-exact.
 *
 * Usage:
 *   ws_audio a; ws_err err;
 *   if (ws_audio_load(&a, "in.flac", &err)) { ... err.msg ... }
 *   ... a.x[0 .. a.n) at 16 kHz ...
 *   ws_audio_free(&a);
 *
 *   ws_audio_opts o = {.max_samples = 16000 * 600, .reserve = wait_for_memory, .reserve_ctx = pool};
 *   if (ws_audio_load_opts(&a, path, &o, &err)) ...
 */
#ifndef WS_AUDIO_H
#define WS_AUDIO_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define WS_SAMPLE_RATE 16000

/* Limits, checked before any large allocation. Output length is capped at
 * 2^31 - 1 samples (37.28 hours at 16 kHz) unless ws_audio_opts says less;
 * longer input is refused with a message, never truncated. Input that cannot
 * be seeked (standard input, a pipe or FIFO, a character device) is read into
 * memory before it is decoded, at most WS_AUDIO_MAX_STREAM_BYTES of it (1 GiB:
 * 9.3 h of 16 kHz 16-bit mono, 1.7 h of 44.1 kHz 16-bit stereo WAV); give a
 * longer recording as a regular file, which is read in place. Input rates
 * outside [WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE] Hz are refused (header
 * garbage, not audio). */
#define WS_AUDIO_MAX_SAMPLES ((size_t)2147483647)
#define WS_AUDIO_MAX_STREAM_BYTES ((size_t)1 << 30)
#define WS_AUDIO_MIN_RATE 1000
#define WS_AUDIO_MAX_RATE 1536000

typedef struct {
    float *x;         /* [n] samples at 16 kHz, mono; NULL when n == 0 */
    size_t n;
    int src_rate;     /* the file's sample rate */
    int src_channels; /* the file's channel count */
} ws_audio;

/* Options of one load. Zero-initialised means the defaults of ws_audio_load. */
typedef struct {
    size_t max_samples;      /* cap on 16 kHz output samples; 0 = WS_AUDIO_MAX_SAMPLES (also the most) */
    size_t max_stream_bytes; /* cap on the bytes buffered from a pipe, FIFO, device or
                                standard input; 0 = WS_AUDIO_MAX_STREAM_BYTES */
    /* Optional. Called before the decoder allocates for samples, with the peak
     * number of bytes the decoder itself will hold for this input (its buffer of a
     * stream's bytes, the 16 kHz output, read and resampler buffers) and the number
     * of 16 kHz samples the input will have. Each call gives new totals that
     * replace the previous call's:
     *   - while a stream is read into memory, every 4 MiB or more, with the bytes
     *     buffered so far and samples_16k = 0 (not known yet);
     *   - once the header is read: when it states the length, once, with that
     *     length (an MP3's estimate counts as stated);
     *   - as the output of a stream of unknown length grows (FLAC with no sample
     *     count, WAV/AIFF/W64 with placeholder sizes, an MP3 longer than its
     *     estimate), at most every 4 MiB of output, with growing numbers.
     * Returns 0 to go on, or -1 having filled err: the load then fails with err's
     * message as is. May block (the caller may wait for memory held by other
     * inputs); it runs on the thread that called the loader. */
    int (*reserve)(void *ctx, size_t decoder_bytes, size_t samples_16k, ws_err *err);
    void *reserve_ctx;
    /* Which samples (ws_audio_decode): WS_DECODE_DEFAULT (0) or WS_DECODE_OPENAI. */
    int decode;
    /* A segment: the audio from start_s seconds, duration_s seconds long (0: to the end).
     * Cut at the file's own rate (frames round(start_s * rate) on, round(duration_s *
     * rate) of them), then averaged and resampled as a whole file of those frames is
     * (with WS_DECODE_OPENAI: cut from ffmpeg's 16 kHz samples). A segment that starts
     * past the end fails; one that ends past it by at most WS_SEGMENT_SLACK_S is cut at
     * the end, by more fails. Where the format allows, the decoder seeks to the start. */
    double start_s, duration_s;
} ws_audio_opts;

/* ws_audio_opts.decode:
 *   WS_DECODE_DEFAULT  libsndfile (then libmpg123, then FFmpeg's libraries for what
 *                      libsndfile cannot read: AAC/MP4, WebM, ...), samples as decoded,
 *                      channels averaged, libsoxr to 16 kHz
 *   WS_DECODE_OPENAI   openai-whisper's load_audio bit for bit: what
 *                      `ffmpeg -nostdin -threads 0 -i FILE -f s16le -ac 1 -acodec pcm_s16le
 *                      -ar 16000 -` writes, / 32768, through FFmpeg's libraries */
enum ws_audio_decode { WS_DECODE_DEFAULT = 0, WS_DECODE_OPENAI = 1 };

/* How far past the end a segment may reach and be cut there (lhotse's tolerance). */
#define WS_SEGMENT_SLACK_S 0.025

/* Decodes path ("-" reads standard input, pipes included) to 16 kHz mono.
 * Returns 0, or -1 with err naming the path ("<stdin>" for "-") and the problem,
 * one line: unreadable, not audio (with libsndfile's or libmpg123's reason),
 * truncated (a data chunk longer than the file, fewer frames than the header
 * promises, an Ogg stream with no end), the file changed while being read,
 * non-finite samples, or over the limits above. A file with no samples gives
 * a->n == 0, a->x == NULL and returns 0.
 *
 * Regular files are read in place with pread (never mapped: a file that
 * shrinks while it is read is an error for that input, not SIGBUS). A FIFO is
 * opened without blocking; waiting for its writer happens in poll() and read(),
 * so this call blocks until the writer has written everything and closed it,
 * like reading a pipe does (it never returns if no writer ever comes). */
int ws_audio_load(ws_audio *a, const char *path, ws_err *err);
int ws_audio_load_opts(ws_audio *a, const char *path, const ws_audio_opts *o, ws_err *err);

/* The same from a buffer already in memory; name is used in messages. The
 * buffer is the caller's: it does not count in reserve's decoder_bytes. */
int ws_audio_load_memory(ws_audio *a, const void *data, size_t len, const char *name, ws_err *err);
int ws_audio_load_memory_opts(ws_audio *a, const void *data, size_t len, const char *name,
                              const ws_audio_opts *o, ws_err *err);

/* The bytes [off, off + len) of the regular file at path as one audio file (a member of
 * an uncompressed tar shard, read in place with pread); name is what messages call it
 * ("shard.tar:key.flac"). The file must hold those bytes and not change while they are
 * read. 0, or -1 with err naming name. */
int ws_audio_load_range(ws_audio *a, const char *path, uint64_t off, uint64_t len,
                        const char *name, const ws_audio_opts *o, ws_err *err);

/* Resamples mono float32 from in_rate to out_rate (high quality); *out is
 * malloc'd, *n_out set. in_rate == out_rate copies. Returns 0 or -1.
 * libsoxr SOXR_VHQ, flat passband to 0.913 x Nyquist; output sample 0 is input
 * time 0 and *n_out == round(n * out_rate / in_rate), halves up
 * (bench/RESULTS-audio.md; tests/test_audio.c). n == 0 gives *out == NULL.
 * The loaders feed the same resampler chunk by chunk; its output does not
 * depend on the chunking (test: audio.chunked_resampling_equals_one_shot). */
int ws_resample(const float *in, size_t n, double in_rate, double out_rate, float **out,
                size_t *n_out, ws_err *err);

/* Samples in memory to 16 kHz mono as a decoded file's: frames of `channels`
 * interleaved float32 samples at rate Hz (1 .. WS_AUDIO_MAX_RATE; channels 1 ..
 * WS_AUDIO_MAX_CHANNELS), averaged over the channels as the decoder averages them,
 * then resampled (ws_resample; 16 kHz passes through). pcm is the caller's. 0, or -1
 * with err naming name (non-finite samples, bad rate or channel count, memory). */
#define WS_AUDIO_MAX_CHANNELS 1024
int ws_audio_from_pcm(ws_audio *a, const float *pcm, size_t frames, int rate, int channels,
                      const char *name, ws_err *err);

/* round(n * out / in), halves up: the length soxr's flushed output has (the 16 kHz length
 * of n samples at in Hz). */
double ws_audio_out_len(double n, double in_rate, double out_rate);

/* PCM that needs no conversion (16 kHz, one channel, at least one frame) as *a without a
 * copy: a->x is pcm itself, to be read only and never freed (not ws_audio_free). 1 when
 * so (the samples checked finite, as ws_audio_from_pcm checks them), 0 when the PCM needs
 * ws_audio_from_pcm, -1 with err on a non-finite sample or too many. A long input is
 * checked on up to `threads` threads of the process's pool (ws_parallel). */
int ws_audio_pcm_view(ws_audio *a, const float *pcm, size_t frames, int rate, int channels,
                      int threads, const char *name, ws_err *err);

/* Frees a->x and zeroes *a. NULL-safe. */
void ws_audio_free(ws_audio *a);

#endif

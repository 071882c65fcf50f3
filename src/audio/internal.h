/* internal.h - what the files of src/audio/ share; not an API (that is audio.h).
 *
 * A load goes through the files in this order:
 *   load.c      paths, FIFOs, devices, standard input and memory buffers, each
 *               made a source; the public loaders and ws_audio_free
 *   decode.c    one source to 16 kHz mono: libsndfile or libmpg123, the channel
 *               average, the rate through resample.c (ws_audio_load_source)
 *   source.c    a source's bytes (memory, or pread of a regular file), the
 *               container size checks and the test for MPEG audio
 *   resample.c  libsoxr fed chunk by chunk; ws_resample
 *   outbuf.c    the 16 kHz output, grown under the caller's reservation
 * Calls point one way: load -> decode -> {source, resample} -> outbuf (load.c
 * also asks outbuf.c's reservation for a stream's bytes).
 *
 * Tests: tests/test_audio.c; fuzzed by tests/fuzz/fuzz_audio.c.
 */
#ifndef WS_AUDIO_INTERNAL_H
#define WS_AUDIO_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <soxr.h>

#include "audio.h"

/* Decided once for both files that depend on it: with libmpg123's header,
 * decode.c drives libmpg123 (and includes the header) and source.c reads the
 * Xing/Info frame count. */
#if defined(__has_include)
#if __has_include(<mpg123.h>)
#define WS_HAVE_MPG123 1
#endif
#endif

/* FFmpeg's libraries (libav.c) with their headers; opened at run time. */
#if defined(__has_include)
#if __has_include(<libavformat/avformat.h>) && __has_include(<libswresample/swresample.h>)
#define WS_HAVE_LIBAV 1
#endif
#endif

#define GROW_BYTES ((size_t)4 << 20)     /* buffers grow by at least this much */

/* --- byte sources: memory, or a regular file read with pread ------------- */

typedef struct {
    const unsigned char *mem; /* the bytes, or NULL to pread fd */
    int fd;
    uint64_t base;            /* the decoders' byte 0 (past ID3v2 tags before a container) */
    uint64_t len;             /* the bytes they see from there (st_size at open - base) */
    uint64_t pos;             /* the decoder's position */
    int read_errno;           /* first pread error */
    int shrunk;               /* pread found the end before len */
    int mpeg_data;            /* the view is the MP3 data of a WAV (format tag 0x0055) */
    uint64_t patch_off;       /* patch_len bytes shown instead of the file's there */
    size_t patch_len;
    unsigned char patch[8];
    /* read-ahead of a file read in order: [ra_off, ra_off + ra_len) of the file (base
     * included), ra NULL until a read follows the one before it (ws_audio_src_release);
     * ra_size the next refill's bytes (0: WS_SRC_READAHEAD_MIN) */
    unsigned char *ra;
    uint64_t ra_off, next;
    size_t ra_len, ra_size;
} source;

/* Bytes of a source's read-ahead window: it starts small (a header, or a segment's few
 * bytes past its end) and doubles while the file is read in order, up to the largest
 * (part of a decoder's memory). */
#define WS_SRC_READAHEAD_MIN ((size_t)16 << 10)
#define WS_SRC_READAHEAD ((size_t)256 << 10)

/* Frees s's read-ahead window. source.c */
void ws_audio_src_release(source *s);

/* Reads up to n bytes at off; returns how many (short only at len, or when the
 * file shrank or a read failed, which the source records). source.c */
size_t ws_audio_src_read(source *s, uint64_t off, void *dst, size_t n);

/* A position within [0, len] (whence SEEK_SET, SEEK_CUR or SEEK_END), or -1.
 * source.c */
int64_t ws_audio_src_seek(source *s, int64_t off, int whence);

/* Walks the chunks of a WAV (RIFF/RIFX), RF64/BW64, Wave64 or AIFF/AIFC file
 * and fails, naming name, when the audio chunk claims more bytes than follow it
 * or the file ends inside a chunk header. Other files, and headers too broken to
 * walk, give 0: libsndfile reports them itself. May set s's patch (an RF64 size
 * never filled in) or narrow s to the data chunk (s->mpeg_data: MP3 in a WAV).
 * source.c */
int ws_audio_container_check(source *s, const char *name, ws_err *err);

/* 1 when s holds MPEG audio for libmpg123, else 0; either way *at is the offset
 * past any ID3v2 tags (the first frame, for MPEG). source.c */
int ws_audio_is_mpeg(source *s, uint64_t *at);

/* 1 when s starts with the magic number of a container libsndfile reads whole (WAV,
 * AIFF, FLAC, ...): its refusal stands, FFmpeg's libraries are not asked. source.c */
int ws_audio_is_sndfile_container(source *s);

#ifdef WS_HAVE_MPG123
/* The frame count of a Xing or Info tag in the Layer III frame at off, or 0.
 * source.c */
uint32_t ws_audio_mpeg_xing_frames(source *s, uint64_t off);
#endif

/* --- the 16 kHz output, grown under the caller's reservation (outbuf.c) --- */

typedef struct {
    const char *name;
    size_t max_samples, max_stream_bytes;
    int (*reserve)(void *ctx, size_t decoder_bytes, size_t samples_16k, ws_err *err);
    void *reserve_ctx;
    int decode;              /* ws_audio_decode */
    double start_s, duration_s; /* a segment (ws_audio_opts) */
    int reserve_failed; /* err holds the callback's message: report it as is */
} load_opts;

typedef struct {
    load_opts *o;
    size_t held;      /* bytes held besides the output (a stream's buffer) */
    size_t overhead;  /* read, mono and resampler buffers */
    size_t reserved;  /* output samples the last reserve call covered */
    int sized;        /* want is the length the output will have (or an estimate) */
    int exact;        /* ... and it is exact: the output never grows past want + 1 */
    size_t want;
    float *y;
    size_t n, cap;
} outbuf;

/* Calls o->reserve, when there is one, with samples floats plus held and
 * overhead bytes (SIZE_MAX when that overflows) and samples_16k. -1 with the
 * callback's err, and o->reserve_failed set, when it refuses. outbuf.c */
int ws_audio_ask_reserve(load_opts *o, size_t held, size_t samples, size_t overhead,
                         size_t samples_16k, ws_err *err);

/* Makes room for `need` samples: 0, or -1 with err. outbuf.c */
int ws_audio_out_grow(outbuf *b, size_t need, ws_err *err);

/* --- resampling (resample.c) --------------------------------------------- */

typedef struct {
    soxr_t s;
    double ratio; /* out / in */
    size_t in;    /* samples consumed */
} resampler;

/* libsoxr from in_rate to out_rate, mono float32, SOXR_VHQ, no roll-off, one
 * thread. 0, or -1 with err naming name. */
int ws_audio_rs_open(resampler *r, double in_rate, double out_rate, const char *name,
                     ws_err *err);

/* Feeds n samples, appending what comes out to b. */
int ws_audio_rs_feed(resampler *r, outbuf *b, const float *x, size_t n, const char *name,
                     ws_err *err);

/* Flushes (in = NULL marks the end) and checks the length: round(in * ratio). */
int ws_audio_rs_finish(resampler *r, outbuf *b, size_t want, const char *name, ws_err *err);

/* Frees soxr's state; a zeroed or closed resampler is a no-op. */
void ws_audio_rs_close(resampler *r);


/* --- channels ------------------------------------------------------------- */

/* One frame of ch interleaved samples to mono: the mean, summed in double in channel
 * order and rounded once (so ch == 1 passes through, and decode.c and pcm.c agree bit
 * for bit: audio.six_channels_are_averaged_exactly). */
static inline float ws_audio_downmix(const float *fr, int ch)
{
    if (ch == 1)
        return fr[0];
    double s = 0;
    for (int c = 0; c < ch; c++)
        s += fr[c];
    return (float)(s / ch);
}

/* --- finiteness ----------------------------------------------------------- */

/* The index of the first NaN or infinity in x[0..n), or n: blocks tested without a
 * branch per sample (vectorised), the one that has one scanned again. pcm.c */
size_t ws_audio_first_nonfinite(const float *x, size_t n);

/* y[i] = x[i] / 32768, exactly libsndfile's normalised float of 16-bit PCM. pcm.c */
void ws_audio_s16_to_float(const short *x, float *y, size_t n);

/* --- FFmpeg's libraries (libav.c) ---------------------------------------- */

typedef struct ws_av ws_av;

/* NULL when FFmpeg's libraries are loaded (the first call loads them), else why not. */
const char *ws_av_unavailable(void);

#ifdef WS_HAVE_LIBAV
/* Opens s with libavformat: openai gives ffmpeg's 16 kHz int16 mono (as float / 32768),
 * else the first audio stream's frames in its own rate and channels. 0, or -1 with err
 * naming name. *known says whether libavformat recognised the format; when it did not,
 * err holds only "ffmpeg: REASON", for the caller's line. */
int ws_av_open(ws_av **h, source *s, int openai, int *known, const char *name, ws_err *err);

/* The rate and channels read gives, and the file's. */
void ws_av_info(const ws_av *h, int *rate, int *channels, int *src_rate, int *src_channels);

/* Up to frames interleaved float frames into buf: the count, 0 at the end, -1 with err
 * (have: frames read before, for messages). */
long ws_av_read(ws_av *h, float *buf, long frames, size_t have, const char *name, ws_err *err);

/* Goes to frame `at` (default mode; formats whose timestamps count frames): the frame the
 * next read starts at (<= at, a second or so before it so that the decoder's state is
 * right at `at`), 0 when it did not seek (the frames are read from where they are), or
 * -1 with err. */
int64_t ws_av_seek(ws_av *h, int64_t at, const char *name, ws_err *err);

/* Packets sent to the decoder so far (for tests: a seek decodes only what is near it). */
long ws_av_packets(const ws_av *h);

void ws_av_close(ws_av *h);
#endif

/* --- decoding (decode.c) -------------------------------------------------- */

/* Checks, opens and decodes one source into *a (zeroed first); held: bytes of
 * it we hold (a stream's), counted in o->reserve's decoder_bytes. 0, or -1 with
 * err; a read that failed or found the file shorter than at open is reported as
 * that, whatever the decoder made of it. */
int ws_audio_load_source(ws_audio *a, source *s, load_opts *o, size_t held, ws_err *err);

#endif

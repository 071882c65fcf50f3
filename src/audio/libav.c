/* libav.c - the second decoder: FFmpeg's libavformat, libavcodec and libswresample,
 * opened at run time, over a source (internal.h) like the other decoders.
 *
 * What it is for:
 *   - what libsndfile cannot read (decode.c tries libsndfile first): AAC in MP4/M4A or
 *     ADTS, Opus and Vorbis in WebM/Matroska, ALAC, WMA, AC-3, the first audio stream of
 *     a video file. Frames come out in the decoder's own rate and channels, converted to
 *     float as libsndfile converts PCM (int16 / 32768, int32 / 2^31, (u8 - 128) / 128),
 *     and decode.c averages and resamples them like any file.
 *   - --decode openai (ws_audio_opts.decode): the samples openai-whisper's load_audio
 *     takes from `ffmpeg -nostdin -threads 0 -i FILE -f s16le -ac 1 -acodec pcm_s16le
 *     -ar 16000 -`, bit for bit: the stream ffmpeg picks, decoded by the same libraries,
 *     then libswresample with the settings of the converter ffmpeg's filter graph
 *     inserts (its defaults: no options are passed), to int16 mono at 16 kHz, each
 *     divided by 32768. A frame whose rate or channel layout differs from the one before
 *     gets a new converter, as ffmpeg's graph is configured again then (the old one's
 *     buffered tail is dropped, as there). Test: audio.decode_openai_equals_ffmpeg_*,
 *     over every format and rate of the test corpus.
 *
 * Safety, the rules of the other decoders:
 *   - The bytes come from the source through our own AVIOContext (pread of a regular
 *     file, recorded short reads: source.c), never from a path libavformat opens, and a
 *     demuxer's attempt to open another file or URL (playlists, references in MP4,
 *     concat scripts) is refused (io_open).
 *   - In the default mode a format must be recognised by its content (probe score above
 *     what a file name alone gives), so that arbitrary bytes are not taken for raw audio.
 *   - A packet marked corrupt, or a demuxer error other than the end, fails the input:
 *     "truncated or damaged", with libav's own message.
 *   - libav's messages never reach stderr from our threads: a log callback installed
 *     when the libraries are first opened keeps the last error-level message of the
 *     decoder running on the calling thread, for the error line; messages from threads
 *     that are not decoding for us go to libav's default logger unchanged.
 *   - One decoding thread (the caller runs many inputs at once).
 *
 * The libraries are found by their sonames of the headers built against (Debian 12:
 * libavformat.so.59, libavcodec.so.59, libavutil.so.57, libswresample.so.4); where they
 * are missing, an input that needs them fails with one line that says so.
 */
#include "internal.h"

#ifdef WS_HAVE_LIBAV

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/log.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>

#define AV_SONAME_(lib, major) "lib" lib ".so." #major
#define AV_SONAME(lib, major) AV_SONAME_(lib, major)

#define IO_BUF_BYTES 65536
#define MSG_BYTES 200

/* --- the libraries' entry points ------------------------------------------- */

static struct {
    int ok;
    char why[160]; /* why not, when !ok */
    /* libavutil */
    AVFrame *(*frame_alloc)(void);
    void (*frame_free)(AVFrame **);
    void (*frame_unref)(AVFrame *);
    void *(*malloc_)(size_t);
    void (*freep)(void *);
    int (*strerror_)(int, char *, size_t);
    void (*log_set_callback)(void (*)(void *, int, const char *, va_list));
    void (*log_default_callback)(void *, int, const char *, va_list);
    void (*layout_default)(AVChannelLayout *, int);
    int (*layout_compare)(const AVChannelLayout *, const AVChannelLayout *);
    int (*layout_copy)(AVChannelLayout *, const AVChannelLayout *);
    void (*layout_uninit)(AVChannelLayout *);
    enum AVSampleFormat (*packed_fmt)(enum AVSampleFormat);
    int (*is_planar)(enum AVSampleFormat);
    /* libavcodec */
    const AVCodec *(*find_decoder)(enum AVCodecID);
    AVCodecContext *(*codec_alloc)(const AVCodec *);
    void (*codec_free)(AVCodecContext **);
    int (*params_to_context)(AVCodecContext *, const AVCodecParameters *);
    int (*codec_open)(AVCodecContext *, const AVCodec *, AVDictionary **);
    int (*send_packet)(AVCodecContext *, const AVPacket *);
    int (*receive_frame)(AVCodecContext *, AVFrame *);
    AVPacket *(*packet_alloc)(void);
    void (*packet_free)(AVPacket **);
    void (*packet_unref)(AVPacket *);
    uint8_t *(*packet_side_data)(const AVPacket *, enum AVPacketSideDataType, size_t *);
    void (*flush_buffers)(AVCodecContext *);
    /* libavformat */
    AVFormatContext *(*format_alloc)(void);
    void (*format_free)(AVFormatContext *);
    int (*open_input)(AVFormatContext **, const char *, const AVInputFormat *, AVDictionary **);
    void (*close_input)(AVFormatContext **);
    int (*find_stream_info)(AVFormatContext *, AVDictionary **);
    int (*read_frame)(AVFormatContext *, AVPacket *);
    int (*seek_frame)(AVFormatContext *, int, int64_t, int);
    AVIOContext *(*avio_alloc)(unsigned char *, int, int, void *,
                               int (*)(void *, uint8_t *, int),
                               int (*)(void *, uint8_t *, int),
                               int64_t (*)(void *, int64_t, int));
    void (*avio_free)(AVIOContext **);
    /* libswresample */
    int (*swr_alloc_opts2)(SwrContext **, const AVChannelLayout *, enum AVSampleFormat, int,
                           const AVChannelLayout *, enum AVSampleFormat, int, int, void *);
    int (*swr_init_)(SwrContext *);
    void (*swr_free_)(SwrContext **);
    int (*swr_convert_)(SwrContext *, uint8_t **, int, const uint8_t **, int);
    int (*swr_out_samples)(SwrContext *, int);
} av;

static pthread_once_t av_once = PTHREAD_ONCE_INIT;
static pthread_key_t av_msg_key; /* the decoder running on the calling thread */

static void *sym(void *lib, const char *name, int *missing)
{
    void *p = lib ? dlsym(lib, name) : NULL;
    if (!p)
        *missing = 1;
    return p;
}

static void av_log_cb(void *avcl, int level, const char *fmt, va_list vl);

static void av_load(void)
{
    static const char *const libs[] = {
        AV_SONAME("avutil", LIBAVUTIL_VERSION_MAJOR), AV_SONAME("avcodec", LIBAVCODEC_VERSION_MAJOR),
        AV_SONAME("avformat", LIBAVFORMAT_VERSION_MAJOR),
        AV_SONAME("swresample", LIBSWRESAMPLE_VERSION_MAJOR)};
    void *h[4];
    for (int i = 0; i < 4; i++) {
        if (!(h[i] = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL))) {
            snprintf(av.why, sizeof av.why, "FFmpeg's %s is not installed (Debian: %s)", libs[i],
                     i == 0 ? "libavutil57" : i == 1 ? "libavcodec59" : i == 2 ? "libavformat59"
                                                                        : "libswresample4");
            return;
        }
    }
    int m = 0;
    *(void **)&av.frame_alloc = sym(h[0], "av_frame_alloc", &m);
    *(void **)&av.frame_free = sym(h[0], "av_frame_free", &m);
    *(void **)&av.frame_unref = sym(h[0], "av_frame_unref", &m);
    *(void **)&av.malloc_ = sym(h[0], "av_malloc", &m);
    *(void **)&av.freep = sym(h[0], "av_freep", &m);
    *(void **)&av.strerror_ = sym(h[0], "av_strerror", &m);
    *(void **)&av.log_set_callback = sym(h[0], "av_log_set_callback", &m);
    *(void **)&av.log_default_callback = sym(h[0], "av_log_default_callback", &m);
    *(void **)&av.layout_default = sym(h[0], "av_channel_layout_default", &m);
    *(void **)&av.layout_compare = sym(h[0], "av_channel_layout_compare", &m);
    *(void **)&av.layout_copy = sym(h[0], "av_channel_layout_copy", &m);
    *(void **)&av.layout_uninit = sym(h[0], "av_channel_layout_uninit", &m);
    *(void **)&av.packed_fmt = sym(h[0], "av_get_packed_sample_fmt", &m);
    *(void **)&av.is_planar = sym(h[0], "av_sample_fmt_is_planar", &m);
    *(void **)&av.find_decoder = sym(h[1], "avcodec_find_decoder", &m);
    *(void **)&av.codec_alloc = sym(h[1], "avcodec_alloc_context3", &m);
    *(void **)&av.codec_free = sym(h[1], "avcodec_free_context", &m);
    *(void **)&av.params_to_context = sym(h[1], "avcodec_parameters_to_context", &m);
    *(void **)&av.codec_open = sym(h[1], "avcodec_open2", &m);
    *(void **)&av.send_packet = sym(h[1], "avcodec_send_packet", &m);
    *(void **)&av.receive_frame = sym(h[1], "avcodec_receive_frame", &m);
    *(void **)&av.packet_alloc = sym(h[1], "av_packet_alloc", &m);
    *(void **)&av.packet_free = sym(h[1], "av_packet_free", &m);
    *(void **)&av.packet_unref = sym(h[1], "av_packet_unref", &m);
    *(void **)&av.packet_side_data = sym(h[1], "av_packet_get_side_data", &m);
    *(void **)&av.format_alloc = sym(h[2], "avformat_alloc_context", &m);
    *(void **)&av.format_free = sym(h[2], "avformat_free_context", &m);
    *(void **)&av.open_input = sym(h[2], "avformat_open_input", &m);
    *(void **)&av.close_input = sym(h[2], "avformat_close_input", &m);
    *(void **)&av.find_stream_info = sym(h[2], "avformat_find_stream_info", &m);
    *(void **)&av.read_frame = sym(h[2], "av_read_frame", &m);
    *(void **)&av.avio_alloc = sym(h[2], "avio_alloc_context", &m);
    *(void **)&av.seek_frame = sym(h[2], "av_seek_frame", &m);
    *(void **)&av.flush_buffers = sym(h[1], "avcodec_flush_buffers", &m);
    *(void **)&av.avio_free = sym(h[2], "avio_context_free", &m);
    *(void **)&av.swr_alloc_opts2 = sym(h[3], "swr_alloc_set_opts2", &m);
    *(void **)&av.swr_init_ = sym(h[3], "swr_init", &m);
    *(void **)&av.swr_free_ = sym(h[3], "swr_free", &m);
    *(void **)&av.swr_convert_ = sym(h[3], "swr_convert", &m);
    *(void **)&av.swr_out_samples = sym(h[3], "swr_get_out_samples", &m);
    if (m || pthread_key_create(&av_msg_key, NULL)) {
        snprintf(av.why, sizeof av.why,
                 "FFmpeg's libraries lack entry points this build needs (another version?)");
        return;
    }
    av.log_set_callback(av_log_cb);
    av.ok = 1;
}

const char *ws_av_unavailable(void)
{
    pthread_once(&av_once, av_load);
    return av.ok ? NULL : av.why;
}

/* --- the source as libavformat's input ------------------------------------- */

static int io_read(void *u, uint8_t *dst, int n)
{
    source *s = u;
    if (n <= 0)
        return 0;
    size_t got = ws_audio_src_read(s, s->pos, dst, (size_t)n);
    s->pos += got;
    if (got)
        return (int)got;
    return s->read_errno ? AVERROR(EIO) : AVERROR_EOF;
}

static int64_t io_seek(void *u, int64_t off, int whence)
{
    source *s = u;
    if (whence & AVSEEK_SIZE)
        return (int64_t)s->len;
    whence &= ~AVSEEK_FORCE;
    int64_t r = ws_audio_src_seek(s, off, whence);
    return r < 0 ? AVERROR(EINVAL) : r;
}

/* A demuxer that asks to open another file or URL is refused: an input is its bytes. */
static int io_open_refused(AVFormatContext *f, AVIOContext **pb, const char *url, int flags,
                           AVDictionary **opts)
{
    (void)f, (void)pb, (void)url, (void)flags, (void)opts;
    return AVERROR(EPERM);
}

/* --- one decoder ----------------------------------------------------------- */

struct ws_av {
    char msg[MSG_BYTES]; /* libav's last error message on this thread */
    char damage[MSG_BYTES]; /* the demuxer's last warning or error while reading packets */
    int reading;         /* packets are being read (the header is done) */
    AVFormatContext *fmt;
    AVIOContext *io;
    AVCodecContext *cc;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
    int openai;
    int eof_sent, done;
    source *src;         /* the bytes */
    /* after a seek to a kept place (Opus in Matroska): packets before the one at skip_ts
     * are dropped undecoded (a seek in Matroska lands at the start of a cluster, seconds
     * before the place asked for); skip_missed when a later packet came first */
    int skipping, skip_missed;
    int64_t skip_ts;
    long packets;        /* packets sent to the decoder */
    /* the stream as decode.c reads it */
    int rate, channels;
    int src_rate, src_channels;
    /* openai: the converter and its int16 output */
    SwrContext *swr;
    AVChannelLayout swr_layout;
    int swr_fmt, swr_rate;
    int16_t *s16;
    int s16_cap;
    /* frames ready: float frames (default) or s16 (openai), [pos, n) */
    int pos, n;
};

/* libav's log: on a thread decoding for us, kept (the last error; the demuxer's warnings
 * while packets are read, which is how it says a file ended early) and never printed;
 * elsewhere, libav's default. */
static void av_log_cb(void *avcl, int level, const char *fmt, va_list vl)
{
    ws_av *h = pthread_getspecific(av_msg_key);
    if (!h) {
        av.log_default_callback(avcl, level, fmt, vl);
        return;
    }
    const int demux = h->reading && h->fmt && avcl == h->fmt;
    if (level > (demux ? AV_LOG_WARNING : AV_LOG_ERROR))
        return;
    char *msg = demux ? h->damage : h->msg;
    char line[MSG_BYTES];
    vsnprintf(line, sizeof line, fmt, vl);
    size_t n = strcspn(line, "\r\n");
    while (n && line[n - 1] == ' ')
        n--;
    if (!n)
        return;
    line[n] = 0;
    memcpy(msg, line, n + 1);
}

static const char *av_reason(ws_av *h, int rc, char *buf, size_t cap)
{
    if (h->msg[0])
        return h->msg;
    if (av.strerror_(rc, buf, cap) < 0)
        snprintf(buf, cap, "error %d", rc);
    return buf;
}

void ws_av_close(ws_av *h)
{
    if (!h)
        return;
    pthread_setspecific(av_msg_key, h);
    av.swr_free_(&h->swr);
    av.layout_uninit(&h->swr_layout);
    free(h->s16);
    av.frame_free(&h->frame);
    av.packet_free(&h->pkt);
    av.codec_free(&h->cc);
    if (h->fmt)
        av.close_input(&h->fmt);
    if (h->io) {
        av.freep(&h->io->buffer);
        av.avio_free(&h->io);
    }
    pthread_setspecific(av_msg_key, NULL);
    free(h);
}

/* The audio stream ffmpeg's command line picks (fftools, new_output_stream's rule for
 * an output with audio and no -map): the most channels, before that one that carried
 * packets while the streams were probed, before that a default one; the first of
 * equals. In the default mode, the first audio stream. */
static int pick_stream(const AVFormatContext *f, int openai)
{
    int best = -1;
    long long best_score = -1;
    for (unsigned i = 0; i < f->nb_streams; i++) {
        const AVStream *st = f->streams[i];
        if (st->codecpar->codec_type != AVMEDIA_TYPE_AUDIO)
            continue;
        if (!openai)
            return (int)i;
        long long score = st->codecpar->ch_layout.nb_channels +
                          100000000LL * !!(st->event_flags & AVSTREAM_EVENT_FLAG_NEW_PACKETS) +
                          5000000LL * !!(st->disposition & AV_DISPOSITION_DEFAULT);
        if (score > best_score) {
            best_score = score;
            best = (int)i;
        }
    }
    return best;
}

static int next_frame(ws_av *h, const char *name, size_t have, ws_err *err);
static int take_frame(ws_av *h, const char *name, size_t have, ws_err *err);

/* h->cc: the stream's decoder, opened afresh (a flush does not bring back what only an
 * open sets, such as Opus's pre-skip). 0, or -1 with err. */
static int open_codec(ws_av *h, const char *name, ws_err *err)
{
    const AVStream *st = h->fmt->streams[h->stream];
    const AVCodec *codec = av.find_decoder(st->codecpar->codec_id);
    char eb[128];
    int rc;
    av.codec_free(&h->cc);
    if (!codec)
        return ws_errf(err, "%s: no decoder for its audio (ffmpeg: %s, codec id %d)", name,
                       h->fmt->iformat->name, (int)st->codecpar->codec_id);
    if (!(h->cc = av.codec_alloc(codec)) || av.params_to_context(h->cc, st->codecpar) < 0)
        return ws_errf(err, "%s: out of memory", name);
    h->cc->thread_count = 1;
    h->cc->pkt_timebase = st->time_base;
    if ((rc = av.codec_open(h->cc, codec, NULL)) < 0)
        return ws_errf(err, "%s: cannot open the %s decoder (ffmpeg: %s)", name, codec->name,
                       av_reason(h, rc, eb, sizeof eb));
    return 0;
}

int ws_av_open(ws_av **out, source *s, int openai, int *known, const char *name, ws_err *err)
{
    *out = NULL;
    *known = 1; /* but for the two refusals below */
    const char *why = ws_av_unavailable();
    if (why)
        return ws_errf(err, "%s: %s", name, why);
    ws_av *h = calloc(1, sizeof *h);
    if (!h)
        return ws_errf(err, "%s: out of memory", name);
    h->openai = openai;
    /* again at every open: a host that set its own callback meanwhile (the process's
     * other users of these libraries) would otherwise hide a demuxer's warnings from us */
    av.log_set_callback(av_log_cb);
    pthread_setspecific(av_msg_key, h);
    char eb[128];
    int rc;
    unsigned char *buf = av.malloc_(IO_BUF_BYTES);
    s->pos = 0;
    if (!buf || !(h->io = av.avio_alloc(buf, IO_BUF_BYTES, 0, s, io_read, NULL, io_seek))) {
        if (!h->io && buf)
            av.freep(&buf);
        ws_av_close(h);
        return ws_errf(err, "%s: out of memory", name);
    }
    if (!(h->fmt = av.format_alloc())) {
        ws_av_close(h);
        return ws_errf(err, "%s: out of memory", name);
    }
    h->fmt->pb = h->io;
    h->fmt->io_open = io_open_refused;
    h->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    if ((rc = av.open_input(&h->fmt, name, NULL, NULL)) < 0) {
        /* avformat_open_input frees the context on failure */
        ws_errf(err, "ffmpeg: %s", av_reason(h, rc, eb, sizeof eb));
        *known = 0;
        ws_av_close(h);
        return -1;
    }
    if (!openai && h->fmt->probe_score <= AVPROBE_SCORE_EXTENSION) {
        ws_errf(err, "ffmpeg: only a guess, as %s", h->fmt->iformat->name);
        *known = 0;
        ws_av_close(h);
        return -1;
    }
    if ((rc = av.find_stream_info(h->fmt, NULL)) < 0) {
        ws_errf(err, "%s: cannot read the streams (ffmpeg, %s: %s)", name, h->fmt->iformat->name,
                av_reason(h, rc, eb, sizeof eb));
        ws_av_close(h);
        return -1;
    }
    if ((h->stream = pick_stream(h->fmt, openai)) < 0) {
        ws_errf(err, "%s: no audio stream (ffmpeg: %s)", name, h->fmt->iformat->name);
        ws_av_close(h);
        return -1;
    }
    for (unsigned i = 0; i < h->fmt->nb_streams; i++)
        h->fmt->streams[i]->discard = (int)i == h->stream ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
    h->src = s;
    if (!(h->pkt = av.packet_alloc()) || !(h->frame = av.frame_alloc())) {
        ws_av_close(h);
        return ws_errf(err, "%s: out of memory", name);
    }
    if (open_codec(h, name, err)) {
        ws_av_close(h);
        return -1;
    }
    h->src_rate = h->cc->sample_rate;
    h->src_channels = h->cc->ch_layout.nb_channels;
    h->rate = openai ? WS_SAMPLE_RATE : h->src_rate;
    h->channels = openai ? 1 : h->src_channels;
    if (!openai) { /* the rate and channels are the first frame's */
        rc = next_frame(h, name, 0, err);
        if (rc > 0) {
            h->rate = h->src_rate = h->frame->sample_rate;
            h->channels = h->src_channels = h->frame->ch_layout.nb_channels;
            rc = take_frame(h, name, 0, err);
        }
        if (rc < 0) {
            ws_av_close(h);
            return -1;
        }
    }
    pthread_setspecific(av_msg_key, NULL);
    *out = h;
    return 0;
}

void ws_av_info(const ws_av *h, int *rate, int *channels, int *src_rate, int *src_channels)
{
    *rate = h->rate;
    *channels = h->channels;
    *src_rate = h->src_rate;
    *src_channels = h->src_channels;
}

/* The next decoded frame into h->frame: 1, 0 at the end, -1 with err. */
static int next_frame(ws_av *h, const char *name, size_t have, ws_err *err)
{
    char eb[128];
    for (;;) {
        int rc = av.receive_frame(h->cc, h->frame);
        if (rc == 0)
            return 1;
        if (rc == AVERROR_EOF)
            return 0;
        if (rc != AVERROR(EAGAIN))
            return ws_errf(err, "%s: decoding failed after %zu frames (ffmpeg: %s)", name, have,
                           av_reason(h, rc, eb, sizeof eb));
        if (h->eof_sent)
            return 0;
        for (;;) { /* the next packet of our stream */
            h->reading = 1;
            rc = av.read_frame(h->fmt, h->pkt);
            if (rc == AVERROR_EOF && h->damage[0])
                return ws_errf(err, "%s: truncated or damaged after %zu frames (ffmpeg: %s)",
                               name, have, h->damage);
            if (rc == AVERROR_EOF) {
                h->eof_sent = 1;
                rc = av.send_packet(h->cc, NULL); /* drain */
                break;
            }
            if (rc < 0)
                return ws_errf(err, "%s: truncated or damaged after %zu frames (ffmpeg: %s)",
                               name, have, av_reason(h, rc, eb, sizeof eb));
            if (h->damage[0]) { /* the demuxer lost data and went on: frames are missing */
                av.packet_unref(h->pkt);
                return ws_errf(err, "%s: truncated or damaged after %zu frames (ffmpeg: %s)",
                               name, have, h->damage);
            }
            if (h->pkt->stream_index != h->stream) {
                av.packet_unref(h->pkt);
                continue;
            }
            if (h->skipping) {
                const int64_t pts = h->pkt->pts;
                if (pts == AV_NOPTS_VALUE || pts < h->skip_ts) {
                    av.packet_unref(h->pkt);
                    continue;
                }
                h->skip_missed = pts != h->skip_ts;
                h->skipping = 0; /* decoded from here on */
            }
            if (h->pkt->flags & AV_PKT_FLAG_CORRUPT) {
                av.packet_unref(h->pkt);
                return ws_errf(err, "%s: truncated or damaged after %zu frames (ffmpeg: a "
                               "corrupt packet%s%s)", name, have, h->msg[0] ? ": " : "", h->msg);
            }
            rc = av.send_packet(h->cc, h->pkt);
            av.packet_unref(h->pkt);
            h->packets++;
            break;
        }
        if (rc < 0 && rc != AVERROR(EAGAIN) && rc != AVERROR_EOF)
            return ws_errf(err, "%s: decoding failed after %zu frames (ffmpeg: %s)", name, have,
                           av_reason(h, rc, eb, sizeof eb));
    }
}

/* Frames [t0, t0 + k) of frame f (packed format fmt, planar or not, ch channels) as
 * interleaved float into out, the way libsndfile normalises PCM. */
static void frames_to_float(const AVFrame *f, int fmt, int planar, int ch, int t0, long k,
                            float *out)
{
    const size_t step = planar ? 1 : (size_t)ch; /* between one frame's sample and the next */
    for (int c = 0; c < (planar ? ch : 1); c++) {
        const uint8_t *p = f->extended_data[planar ? c : 0];
        const size_t first = (size_t)t0 * step;
        const size_t n = planar ? (size_t)k : (size_t)k * (size_t)ch; /* values to convert */
        float *o = out + (planar ? (size_t)c : 0);
        const size_t ostep = planar ? (size_t)ch : 1;
#define CONVERT(T, expr)                                                                       \
    do {                                                                                       \
        const T *x = (const T *)p + first;                                                     \
        for (size_t i = 0; i < n; i++)                                                         \
            o[i * ostep] = (expr);                                                             \
    } while (0)
        switch (fmt) {
        case AV_SAMPLE_FMT_U8:
            CONVERT(uint8_t, (float)((int)x[i] - 128) / 128.0f);
            break;
        case AV_SAMPLE_FMT_S16:
            CONVERT(int16_t, (float)x[i] / 32768.0f);
            break;
        case AV_SAMPLE_FMT_S32:
            CONVERT(int32_t, (float)((double)x[i] / 2147483648.0));
            break;
        case AV_SAMPLE_FMT_FLT:
            CONVERT(float, x[i]);
            break;
        case AV_SAMPLE_FMT_DBL:
            CONVERT(double, (float)x[i]);
            break;
        default: /* S64 (take_frame lets no other through) */
            CONVERT(int64_t, (float)((double)x[i] / 9223372036854775808.0));
            break;
        }
#undef CONVERT
    }
}

/* openai: h->frame through the converter into h->s16 (frames [0, h->n)). 0 or -1. */
static int convert_s16(ws_av *h, const AVFrame *f, const char *name, size_t have, ws_err *err)
{
    char eb[128];
    int rc;
    AVChannelLayout in;
    memset(&in, 0, sizeof in);
    if (f) {
        if (f->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || !f->ch_layout.nb_channels)
            av.layout_default(&in, f->ch_layout.nb_channels); /* ffmpeg's guess too */
        else if (av.layout_copy(&in, &f->ch_layout) < 0)
            return ws_errf(err, "%s: out of memory", name);
        if (in.nb_channels < 1 || in.nb_channels > WS_AUDIO_MAX_CHANNELS ||
            f->sample_rate < WS_AUDIO_MIN_RATE || f->sample_rate > WS_AUDIO_MAX_RATE) {
            av.layout_uninit(&in);
            return ws_errf(err, "%s: a frame of %d Hz, %d channels after %zu frames (the "
                           "supported: %d..%d Hz, 1..%d channels)", name, f->sample_rate,
                           in.nb_channels, have, WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE,
                           WS_AUDIO_MAX_CHANNELS);
        }
    }
    if (f && (!h->swr || h->swr_fmt != f->format || h->swr_rate != f->sample_rate ||
              av.layout_compare(&h->swr_layout, &in))) {
        av.swr_free_(&h->swr);
        av.layout_uninit(&h->swr_layout);
        AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
        rc = av.swr_alloc_opts2(&h->swr, &mono, AV_SAMPLE_FMT_S16, WS_SAMPLE_RATE, &in,
                                (enum AVSampleFormat)f->format, f->sample_rate, 0, NULL);
        if (rc >= 0)
            rc = av.swr_init_(h->swr);
        if (rc < 0) {
            av.layout_uninit(&in);
            return ws_errf(err, "%s: cannot convert %d Hz, %d channels to 16 kHz mono "
                           "(ffmpeg: %s)", name, f->sample_rate, f->ch_layout.nb_channels,
                           av_reason(h, rc, eb, sizeof eb));
        }
        h->swr_layout = in;
        memset(&in, 0, sizeof in);
        h->swr_fmt = f->format;
        h->swr_rate = f->sample_rate;
    }
    av.layout_uninit(&in);
    h->pos = h->n = 0;
    if (!h->swr)
        return 0;
    int want = av.swr_out_samples(h->swr, f ? f->nb_samples : 0);
    if (want < 0)
        return ws_errf(err, "%s: the converter failed after %zu frames", name, have);
    if (want > h->s16_cap) {
        int16_t *b = realloc(h->s16, (size_t)want * sizeof *b);
        if (!b)
            return ws_errf(err, "%s: out of memory", name);
        h->s16 = b;
        h->s16_cap = want;
    }
    uint8_t *o[1] = {(uint8_t *)h->s16};
    rc = av.swr_convert_(h->swr, o, want, f ? (const uint8_t **)f->extended_data : NULL,
                         f ? f->nb_samples : 0);
    if (rc < 0)
        return ws_errf(err, "%s: the converter failed after %zu frames (ffmpeg: %s)", name, have,
                       av_reason(h, rc, eb, sizeof eb));
    h->n = rc;
    return 0;
}

/* Default mode: h->frame as the frames ready, in h's rate and channels. 0 or -1. */
static int take_frame(ws_av *h, const char *name, size_t have, ws_err *err)
{
    const AVFrame *f = h->frame;
    if (f->sample_rate != h->rate || f->ch_layout.nb_channels != h->channels)
        return ws_errf(err, "%s: the stream changes from %d Hz, %d channels to %d Hz, %d "
                       "channels after %zu frames", name, h->rate, h->channels, f->sample_rate,
                       f->ch_layout.nb_channels, have);
    const int pf = av.packed_fmt((enum AVSampleFormat)f->format);
    if (pf != AV_SAMPLE_FMT_U8 && pf != AV_SAMPLE_FMT_S16 && pf != AV_SAMPLE_FMT_S32 &&
        pf != AV_SAMPLE_FMT_FLT && pf != AV_SAMPLE_FMT_DBL && pf != AV_SAMPLE_FMT_S64)
        return ws_errf(err, "%s: the decoder gives samples of an unknown format (%d)", name,
                       f->format);
    h->pos = 0;
    h->n = f->nb_samples;
    return 0;
}

/* Timestamps that count the stream's frames (MP4, Ogg: a time base of 1 / rate) name a
 * frame exactly after a seek. Not Opus's: whether a container's timestamps count its
 * pre-skip varies (MP4's edit list does, NUT does not). */
static int counts_frames(const ws_av *h)
{
    const AVStream *st = h->fmt->streams[h->stream];
    return st->time_base.num == 1 && st->time_base.den == h->rate &&
           st->codecpar->codec_id != AV_CODEC_ID_OPUS;
}

/* After the demuxer was moved: the decoder flushed and the first frame from there in
 * h->frame. 1, 0 at the end, -1 with err. */
static int decode_after_seek(ws_av *h, const char *name, ws_err *err)
{
    av.flush_buffers(h->cc);
    h->pos = h->n = 0;
    h->eof_sent = h->done = 0;
    int r = next_frame(h, name, 0, err);
    if (r > 0 && take_frame(h, name, 0, err))
        r = -1;
    return r;
}

/* --- Opus in Matroska and WebM: places kept per file ----------------------

   Matroska's timestamps are milliseconds and may jump (a recording that left out its
   silences), while a segment's frames are counted in the decoded samples. So the frame a
   packet starts at is learnt by walking the packets from the start, demuxed but not
   decoded, adding up the samples each one holds (its TOC byte, RFC 6716 3.1): about a
   microsecond a packet. The walk keeps a place every OPUS_MARK_EVERY frames (the packet's
   timestamp and the frame it starts at, of the encoded stream, pre-skip included) for the
   last OPUS_INDEX_FILES files, keyed like MP3's frame index (decode.c), so that later
   segments of the file seek straight to a kept place, and a walk goes on from the last
   place kept; bytes in memory are walked afresh each time. Timestamps must rise from
   packet to packet, else the file is decoded from its start. */
#define OPUS_MARK_EVERY 12000 /* a quarter of a second at 48 kHz */
#define OPUS_INDEX_FILES 16
typedef struct {
    int64_t pts, e;
} opus_mark;
typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec ctime;
    uint64_t base, len;
    int stream;
    opus_mark *marks; /* marks[0]: the first packet, at frame 0; NULL: an empty slot */
    size_t n, cap;
    int64_t end_e; /* frames walked: the frame after the last packet walked */
    int done;      /* walked to the end */
    unsigned long long used;
} opus_index;
static opus_index opus_idx[OPUS_INDEX_FILES];
static unsigned long long opus_idx_clock;
static pthread_mutex_t opus_idx_lock = PTHREAD_MUTEX_INITIALIZER;

/* The OpusHead's pre-skip (RFC 7845 5.1) of Opus at 48 kHz in Matroska or WebM, else -1. */
static int64_t opus_preskip(const ws_av *h)
{
    const AVCodecParameters *cp = h->fmt->streams[h->stream]->codecpar;
    if (cp->codec_id != AV_CODEC_ID_OPUS || h->rate != 48000 || cp->extradata_size < 19 ||
        memcmp(cp->extradata, "OpusHead", 8) || strncmp(h->fmt->iformat->name, "matroska", 8))
        return -1;
    return cp->extradata[10] | cp->extradata[11] << 8;
}

/* The frames (48 kHz) of an Opus packet from its TOC byte, or -1 (RFC 6716 3.1, 3.2.5). */
static int opus_packet_frames(const uint8_t *d, int n)
{
    if (n < 1)
        return -1;
    const int config = d[0] >> 3;
    int per; /* frames of one Opus frame at 48 kHz */
    static const int silk[4] = {480, 960, 1920, 2880}; /* SILK: 10, 20, 40, 60 ms */
    if (config < 12)
        per = silk[config & 3];
    else if (config < 16)
        per = 480 << (config & 1); /* hybrid: 10, 20 ms */
    else
        per = 120 << (config & 3); /* CELT: 2.5, 5, 10, 20 ms */
    int count;
    switch (d[0] & 3) {
    case 0: count = 1; break;
    case 1:
    case 2: count = 2; break;
    default:
        if (n < 2)
            return -1;
        count = d[1] & 0x3F;
    }
    const int frames = per * count;
    return count > 0 && frames <= 5760 ? frames : -1; /* at most 120 ms */
}

/* The slot of h's file (st its stat), or NULL; under opus_idx_lock. */
static opus_index *opus_index_find(const ws_av *h, const struct stat *st)
{
    for (int i = 0; i < OPUS_INDEX_FILES; i++) {
        opus_index *e = &opus_idx[i];
        if (e->marks && e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
            e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec &&
            e->base == h->src->base && e->len == h->src->len && e->stream == h->stream)
            return e;
    }
    return NULL;
}

/* The last place of x at or before encoded frame to_e (marks[0] is frame 0). */
static opus_mark opus_place(const opus_index *x, int64_t to_e)
{
    size_t lo = 0, hi = x->n; /* the first mark after to_e is in [lo, hi] */
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (x->marks[mid].e <= to_e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 ? x->marks[lo - 1] : (opus_mark){0, 0};
}

/* The place for encoded frame to_e from what is kept for h's file: 1 and *m when what is
 * kept reaches past to_e; else 0 with a copy of it in *x (x->marks NULL: none) to walk on
 * from, or -1 with *x empty when h's bytes are not a file the process can key (bytes in
 * memory, walked afresh). */
static int opus_index_get(const ws_av *h, int64_t to_e, opus_mark *m, opus_index *x,
                          struct stat *st)
{
    memset(x, 0, sizeof *x);
    if (h->src->mem || fstat(h->src->fd, st))
        return -1;
    int found = 0;
    pthread_mutex_lock(&opus_idx_lock);
    opus_index *e = opus_index_find(h, st);
    if (e) {
        e->used = ++opus_idx_clock;
        if (e->done || e->end_e > to_e) {
            *m = opus_place(e, to_e);
            found = 1;
        } else if ((x->marks = malloc(e->cap * sizeof *x->marks))) {
            memcpy(x->marks, e->marks, e->n * sizeof *x->marks);
            x->n = e->n, x->cap = e->cap, x->end_e = e->end_e;
        }
    }
    pthread_mutex_unlock(&opus_idx_lock);
    return found;
}

/* Keeps x (taken over) for h's file when it reaches further than what is kept. */
static void opus_index_put(const ws_av *h, opus_index *x, const struct stat *st)
{
    if (x->n == 0) { /* nothing learnt */
        free(x->marks);
        x->marks = NULL;
        return;
    }
    pthread_mutex_lock(&opus_idx_lock);
    opus_index *e = opus_index_find(h, st);
    if (!e) { /* an empty slot, or the least recently used */
        e = &opus_idx[0];
        for (int i = 1; i < OPUS_INDEX_FILES && e->marks; i++)
            if (!opus_idx[i].marks || opus_idx[i].used < e->used)
                e = &opus_idx[i];
        free(e->marks);
        memset(e, 0, sizeof *e);
    }
    if (!e->marks || x->end_e > e->end_e || (x->done && !e->done)) {
        free(e->marks);
        *e = *x;
        e->dev = st->st_dev, e->ino = st->st_ino, e->size = st->st_size;
        e->ctime = st->st_ctim, e->base = h->src->base, e->len = h->src->len;
        e->stream = h->stream;
        e->used = ++opus_idx_clock;
        x->marks = NULL;
    }
    pthread_mutex_unlock(&opus_idx_lock);
    free(x->marks);
    x->marks = NULL;
}

static int opus_mark_add(opus_index *x, int64_t pts, int64_t e)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 256;
        opus_mark *m = realloc(x->marks, cap * sizeof *m);
        if (!m)
            return -1;
        x->marks = m, x->cap = cap;
    }
    x->marks[x->n++] = (opus_mark){pts, e};
    return 0;
}

/* Demuxer at the packet of mark m: seeks a second before it and leaves the next packet to
 * be read the one at m.pts (skipping those before). A second early because Matroska's index
 * and its packets' timestamps differ by the codec delay, and a seek drops the whole laced
 * block (mkvmerge: 8 packets) that starts before the place asked for. 0, or -1. */
static int opus_go_to(ws_av *h, opus_mark m)
{
    const AVStream *st = h->fmt->streams[h->stream];
    const int64_t second = st->time_base.den / st->time_base.num;
    if (av.seek_frame(h->fmt, h->stream, m.pts > INT64_MIN + second ? m.pts - second : m.pts,
                      AVSEEK_FLAG_BACKWARD) < 0)
        return -1;
    h->skipping = 1, h->skip_missed = 0, h->skip_ts = m.pts;
    return 0;
}

/* Walks x on from its last place (or the start) until a frame past `upto` is known or
 * the stream ends. 0, or -1 when the packets cannot be counted (no timestamp, one not
 * after the one before, a TOC byte that is no Opus, damage); the demuxer is left
 * anywhere. */
static int opus_walk(ws_av *h, opus_index *x, int64_t upto)
{
    int64_t e = 0, last = INT64_MIN;
    if (x->n) {
        if (opus_go_to(h, x->marks[x->n - 1]))
            return -1;
        e = x->marks[x->n - 1].e;
    } else {
        const AVStream *st = h->fmt->streams[h->stream];
        if (av.seek_frame(h->fmt, h->stream, st->start_time != AV_NOPTS_VALUE ? st->start_time : 0,
                          AVSEEK_FLAG_BACKWARD) < 0)
            return -1;
        h->skipping = 0;
    }
    h->damage[0] = 0;
    for (;;) {
        h->reading = 1;
        int rc = av.read_frame(h->fmt, h->pkt);
        if (rc == AVERROR_EOF && !h->damage[0] && !h->skipping) {
            x->done = 1;
            x->end_e = e;
            return 0;
        }
        if (rc < 0)
            return -1;
        if (h->damage[0]) {
            av.packet_unref(h->pkt);
            return -1;
        }
        const AVPacket *p = h->pkt;
        if (p->stream_index != h->stream) {
            av.packet_unref(h->pkt);
            continue;
        }
        if (h->skipping) { /* to the last place kept: its packet must come, and be first */
            if (p->pts != AV_NOPTS_VALUE && p->pts < h->skip_ts) {
                av.packet_unref(h->pkt);
                continue;
            }
            h->skipping = 0;
            if (p->pts != h->skip_ts) {
                av.packet_unref(h->pkt);
                return -1;
            }
        }
        int k = opus_packet_frames(p->data, p->size);
        const int64_t pts = p->pts;
        /* samples the decoder drops from this packet (Matroska's DiscardPadding, which a
         * join of two files leaves in the middle): not counted, and no place kept here.
         * The first packet's pre-skip is the OpusHead's, counted in e. */
        size_t sz = 0;
        const uint8_t *sd = av.packet_side_data(p, AV_PKT_DATA_SKIP_SAMPLES, &sz);
        int64_t drop = 0;
        if (sd && sz >= 8 && x->n > 0)
            drop = (int64_t)(sd[0] | sd[1] << 8 | sd[2] << 16 | (uint32_t)sd[3] << 24) +
                   (int64_t)(sd[4] | sd[5] << 8 | sd[6] << 16 | (uint32_t)sd[7] << 24);
        av.packet_unref(h->pkt);
        if (k < 0 || pts == AV_NOPTS_VALUE || pts <= last || drop > k)
            return -1;
        if (x->n == 0 || (drop == 0 && pts != x->marks[x->n - 1].pts &&
                          e - x->marks[x->n - 1].e >= OPUS_MARK_EVERY))
            if (opus_mark_add(x, pts, e))
                return -1;
        k -= (int)drop;
        last = pts;
        e += k;
        x->end_e = e;
        if (e > upto)
            return 0;
    }
}

/* Places the demuxer and decoder at a kept place at or before encoded frame `to_e`, the
 * places walked as far as needed: the frame of the decoded stream the next read starts at
 * (> 0), 0 when it did not (the caller then reads from the start), -1 with err. */
static int64_t opus_seek(ws_av *h, int64_t to_e, int64_t preskip, const char *name, ws_err *err)
{
    opus_index x;
    struct stat st;
    opus_mark m;
    const int kept = opus_index_get(h, to_e, &m, &x, &st);
    if (kept != 1) { /* walk on to past to_e */
        if (opus_walk(h, &x, to_e)) {
            free(x.marks);
            return 0;
        }
        m = opus_place(&x, to_e);
        if (kept == 0)
            opus_index_put(h, &x, &st);
        else
            free(x.marks);
    }
    if (m.e <= preskip || opus_go_to(h, m))
        return 0;
    const int r = decode_after_seek(h, name, err);
    if (r < 0)
        return -1;
    /* the kept place's packet, decoded whole */
    if (r == 0 || h->skip_missed || h->frame->best_effort_timestamp != m.pts)
        return 0;
    return m.e - preskip;
}

/* Frames decoded before a segment's start after a seek, for codecs whose decoder state
 * such a pre-roll restores, so that a segment reached by seeking is the samples of the
 * whole decode (but for what is said of Opus and AAC); 0 for the others, which are decoded
 * from the start.
 * - Lossless codecs and PCM: no state across packets.
 * - Vorbis: the overlap of two blocks (8192 frames at most each).
 * - Opus: half a second. Its decoder's state settles to within about half a 16-bit step
 *   of the whole decode's (2.2e-5 at most over 60 segments of speech at 32 kb/s, whether
 *   after 0.5, 1 or 2 s; 80 ms, Matroska's SeekPreRoll, left 0.057 once), not bit for bit.
 * - AAC-LC: the overlap of one frame (1024), but for the bands its encoder filled with
 *   noise (perceptual noise substitution): their noise is drawn from a generator that
 *   starts afresh at the seek point, the same for the same segment every time and of the
 *   same energy in each band (tested bit for bit without noise substitution and bounded
 *   with it; docs/design.md gives its size).
 * - Not HE-AAC (its SBR state) or AAC Main (its predictors): from the start. */
static int64_t seek_preroll(const ws_av *h)
{
    const AVCodecParameters *cp = h->fmt->streams[h->stream]->codecpar;
    switch (cp->codec_id) {
    case AV_CODEC_ID_FLAC:
    case AV_CODEC_ID_ALAC:
    case AV_CODEC_ID_WAVPACK:
    case AV_CODEC_ID_TTA:
        return 1;
    case AV_CODEC_ID_VORBIS:
        return 2 * 8192;
    case AV_CODEC_ID_OPUS:
        return h->rate / 2;
    case AV_CODEC_ID_AAC:
        return cp->profile == FF_PROFILE_AAC_LOW ? 4 * 1024 : 0;
    default:
        return cp->codec_id >= AV_CODEC_ID_FIRST_AUDIO && cp->codec_id < AV_CODEC_ID_ADPCM_IMA_QT
                   ? 1 /* PCM */
                   : 0;
    }
}

/* The first sample of h->frame as a frame index of the stream from its start, or -1. */
static int64_t frame_index(const ws_av *h)
{
    const AVStream *st = h->fmt->streams[h->stream];
    const int64_t ts = h->frame->best_effort_timestamp;
    if (ts == AV_NOPTS_VALUE || !counts_frames(h))
        return -1;
    return st->start_time != AV_NOPTS_VALUE ? ts - st->start_time : ts;
}

/* Back to the stream's start, as if never seeked: the demuxer at its first packet and the
 * decoder opened afresh. 0, or -1 with err. */
static int rewind_stream(ws_av *h, const char *name, ws_err *err)
{
    const AVStream *st = h->fmt->streams[h->stream];
    const int64_t ts = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
    h->msg[0] = h->damage[0] = 0;
    if (av.seek_frame(h->fmt, h->stream, ts, AVSEEK_FLAG_BACKWARD) < 0)
        return ws_errf(err, "%s: cannot go back to the start after a seek (ffmpeg: %s)", name,
                       h->fmt->iformat->name);
    if (open_codec(h, name, err))
        return -1;
    h->pos = h->n = 0;
    h->eof_sent = h->done = h->skipping = h->skip_missed = 0;
    return 0;
}

int64_t ws_av_seek(ws_av *h, int64_t at, const char *name, ws_err *err)
{
    const int64_t preroll = seek_preroll(h);
    const int64_t to = at - preroll;
    const int64_t preskip = opus_preskip(h);
    if (h->openai || preroll == 0 || to <= 0 || (!counts_frames(h) && preskip < 0))
        return 0; /* decoded from the start, the frames before dropped */
    pthread_setspecific(av_msg_key, h);
    int64_t got = 0;
    int r;
    if (preskip >= 0) {
        got = opus_seek(h, to + preskip, preskip, name, err);
        r = got < 0 ? -1 : 1;
    } else {
        const AVStream *st = h->fmt->streams[h->stream];
        const int64_t ts = to + (st->start_time != AV_NOPTS_VALUE ? st->start_time : 0);
        r = av.seek_frame(h->fmt, h->stream, ts, AVSEEK_FLAG_BACKWARD) < 0
                ? -2
                : decode_after_seek(h, name, err);
        got = r > 0 ? frame_index(h) : 0;
    }
    /* The seek failed, found nothing, or a place that does not name its frame or lies
     * after `at`: from the start after all. */
    if (r != -1 && (got <= 0 || got > at)) {
        r = rewind_stream(h, name, err);
        got = 0;
    }
    pthread_setspecific(av_msg_key, NULL);
    return r < 0 ? -1 : got;
}

/* Packets sent to the decoder so far (for tests: a seek decodes what is near its place). */
long ws_av_packets(const ws_av *h)
{
    return h->packets;
}

long ws_av_read(ws_av *h, float *buf, long frames, size_t have, const char *name, ws_err *err)
{
    pthread_setspecific(av_msg_key, h);
    h->msg[0] = 0; /* an earlier, recovered message is not this read's reason */
    long got = 0;
    int rc = 0;
    while (got < frames) {
        if (h->pos < h->n) {
            long k = h->n - h->pos;
            if (k > frames - got)
                k = frames - got;
            if (h->openai) {
                for (long i = 0; i < k; i++)
                    buf[got + i] = (float)h->s16[h->pos + i] / 32768.0f;
            } else {
                const AVFrame *f = h->frame;
                const int fmt = av.packed_fmt((enum AVSampleFormat)f->format);
                const int planar = av.is_planar((enum AVSampleFormat)f->format);
                frames_to_float(f, fmt, planar, h->channels, h->pos, k,
                                buf + (size_t)got * (size_t)h->channels);
            }
            h->pos += (int)k;
            got += k;
            continue;
        }
        if (h->done)
            break;
        int r = next_frame(h, name, have + (size_t)got, err);
        if (r < 0) {
            rc = -1;
            break;
        }
        if (r == 0) {
            if (h->openai && h->swr) { /* the converter's tail */
                if (convert_s16(h, NULL, name, have + (size_t)got, err)) {
                    rc = -1;
                    break;
                }
                if (h->n > 0)
                    continue;
            }
            h->done = 1;
            break;
        }
        if (h->openai) {
            rc = convert_s16(h, h->frame, name, have + (size_t)got, err);
            av.frame_unref(h->frame);
        } else {
            rc = take_frame(h, name, have + (size_t)got, err);
        }
        if (rc)
            break;
    }
    pthread_setspecific(av_msg_key, NULL);
    return rc ? -1 : got;
}

#endif

#ifndef WS_HAVE_LIBAV
const char *ws_av_unavailable(void)
{
    return "this build has no FFmpeg support (built without libavformat-dev and "
           "libswresample-dev)";
}
#endif

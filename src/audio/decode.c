/* decode.c - one source to 16 kHz mono float32: libsndfile, or libmpg123 for
 * MPEG audio, then the channels averaged and the rate converted as each chunk
 * is decoded (ws_audio_load_source). The libraries' reader callbacks over a
 * source and libmpg123's table of entry points are here, not in source.c,
 * because only the decoders below use them.
 *
 * Decode: MPEG audio (MP3, MP2: ws_audio_is_mpeg, source.c) goes to libmpg123
 * directly; everything else to libsndfile over virtual I/O (sf_open_virtual),
 * read as float with normalisation on (SFC_SET_NORM_FLOAT): PCM of b bits maps
 * to x / 2^(b-1), so int16 -> x / 32768 exactly, as the reference does (test:
 * audio.jfk_passes_through_bit_exact, against our own parse of the data
 * chunk). Float files are read as stored. ID3v2 tags before a WAV, FLAC, ...
 * are skipped here (s->base), not by libsndfile, which misplaces a WAV's data
 * after them over virtual I/O.
 * Why not MP3 through libsndfile: libsndfile 1.2.0 leaves libmpg123's messages
 * on ("Note: Illegal Audio-MPEG-Header ...", "Warning: Xing stream size
 * off ..."), which libmpg123 prints straight to stderr, and gives no way to
 * reach the handle to set MPG123_QUIET; redirecting the process's stderr is not
 * an option with other threads printing. It also stops at mpg123_length's
 * estimate for an MP3 without a Xing/Info header (a VBR file lost 70 % of its
 * samples). Driving libmpg123 here with libsndfile's own settings (float
 * output, gapless, no "Frankenstein" streams, no resampling) plus MPG123_QUIET
 * gives the same samples (test: audio.mp3_decodes_like_libsndfile_bit_exact),
 * no output on stderr, and libmpg123's reason in our one line when it fails.
 * libmpg123 is opened at run time (it is always there when libsndfile has MP3
 * support, as its dependency); without it MPEG goes to libsndfile.
 * Every decoded sample must be finite. The frames decoded must match the frames
 * the header promised (FLAC, CAF, WAV, ...); an Ogg stream whose length
 * libsndfile cannot find has no end-of-stream page and is refused as
 * truncated. A FLAC stream with no sample count (what an encoder writing to a
 * pipe leaves) is read to its end. MPEG is the exception: with no Xing/Info
 * header its frame count is an estimate, so it is read to its end, and an MP3
 * cut short decodes to what it holds.
 *
 * Mono: y[t] = (sum_c x[t, c]) / C, summed and divided in double, rounded once
 * to float. One channel is copied unchanged (tests: audio.stereo_is_averaged_
 * exactly, audio.six_channels_are_averaged_exactly).
 *
 * Rate: 16000 Hz input passes through bit-exact (copied). Any other rate goes
 * through the resampler (resample.c), fed each decoded chunk as it comes, so
 * the source-rate signal is never held whole: the decoder's peak memory is the
 * 16 kHz output plus about 2.5 MB of read and resampler buffers (plus a
 * stream's bytes). When the header states the length, the reservation is asked
 * once for it before anything is read (outbuf.c); otherwise as the output grows.
 * At most o->max_samples output samples; input rates within
 * [WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE].
 *
 * Tests: tests/test_audio.c; fuzzed by tests/fuzz/fuzz_audio.c.
 */
#include "internal.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sndfile.h>

#ifdef WS_HAVE_MPG123
#include <mpg123.h>
#endif

#define READ_CHUNK_SAMPLES 65536         /* interleaved samples per decoder read */
#define SOXR_BYTES ((size_t)2 << 20)     /* soxr's own state at VHQ: 0.8 to 1.6 MB measured */
#define MPEG_MAX_EMPTY_READS 4096        /* libmpg123 reads giving nothing, in a row */
#define LIBAV_BYTES ((size_t)8 << 20)
static const char LIB_FFMPEG[] = "ffmpeg"; /* decoder.lib of FFmpeg's libraries */    /* FFmpeg's probe buffer (5 MB), packets, frames */

/* --- the source through libsndfile's virtual I/O ------------------------- */

static sf_count_t vio_len(void *u)
{
    return (sf_count_t)((source *)u)->len;
}

static sf_count_t vio_seek(sf_count_t off, int whence, void *u)
{
    return ws_audio_src_seek(u, off, whence);
}

static sf_count_t vio_read(void *dst, sf_count_t count, void *u)
{
    source *s = u;
    if (count <= 0)
        return 0;
    size_t got = ws_audio_src_read(s, s->pos, dst, (size_t)count);
    s->pos += got;
    return (sf_count_t)got;
}

static sf_count_t vio_write(const void *src, sf_count_t count, void *u)
{
    return 0; /* read-only */
}

static sf_count_t vio_tell(void *u)
{
    return (sf_count_t)((source *)u)->pos;
}

/* --- MPEG audio through libmpg123 ---------------------------------------- */

#ifdef WS_HAVE_MPG123
/* Entry points, by the names the header gives them (with _FILE_OFFSET_BITS=64 on
 * a 32-bit system those are the _64 variants, matching our off_t). */
#define MP_NAME(f) MP_NAME_(f)
#define MP_NAME_(f) #f

static struct {
    int ok;
    int (*init)(void);
    mpg123_handle *(*new_handle)(const char *, int *);
    void (*delete_handle)(mpg123_handle *);
    int (*param)(mpg123_handle *, enum mpg123_parms, long, double);
    int (*replace_reader_handle)(mpg123_handle *, mpg123_ssize_t (*)(void *, void *, size_t),
                                 off_t (*)(void *, off_t, int), void (*)(void *));
    int (*open_handle)(mpg123_handle *, void *);
    int (*getformat)(mpg123_handle *, long *, int *, int *);
    int (*format)(mpg123_handle *, long, int, int);
    int (*read)(mpg123_handle *, void *, size_t, size_t *);
    off_t (*length)(mpg123_handle *);
    off_t (*seek)(mpg123_handle *, off_t, int);
    int (*index)(mpg123_handle *, off_t **, off_t *, size_t *);
    int (*set_index)(mpg123_handle *, off_t *, off_t, size_t);
    const char *(*strerror)(mpg123_handle *);
    const char *(*plain_strerror)(int);
    int (*close)(mpg123_handle *);
} mp;
static pthread_once_t mp_once = PTHREAD_ONCE_INIT;

static void *mp_sym(void *lib, const char *name, int *missing)
{
    void *p = dlsym(lib, name);
    if (!p)
        *missing = 1;
    return p;
}

static void mp_load(void)
{
    void *lib = dlopen("libmpg123.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return; /* MPEG then goes to libsndfile */
    int miss = 0;
    *(void **)&mp.init = mp_sym(lib, MP_NAME(mpg123_init), &miss);
    *(void **)&mp.new_handle = mp_sym(lib, MP_NAME(mpg123_new), &miss);
    *(void **)&mp.delete_handle = mp_sym(lib, MP_NAME(mpg123_delete), &miss);
    *(void **)&mp.param = mp_sym(lib, MP_NAME(mpg123_param), &miss);
    *(void **)&mp.replace_reader_handle = mp_sym(lib, MP_NAME(mpg123_replace_reader_handle), &miss);
    *(void **)&mp.open_handle = mp_sym(lib, MP_NAME(mpg123_open_handle), &miss);
    *(void **)&mp.getformat = mp_sym(lib, MP_NAME(mpg123_getformat), &miss);
    *(void **)&mp.format = mp_sym(lib, MP_NAME(mpg123_format), &miss);
    *(void **)&mp.read = mp_sym(lib, MP_NAME(mpg123_read), &miss);
    *(void **)&mp.length = mp_sym(lib, MP_NAME(mpg123_length), &miss);
    *(void **)&mp.seek = mp_sym(lib, MP_NAME(mpg123_seek), &miss);
    *(void **)&mp.index = mp_sym(lib, MP_NAME(mpg123_index), &miss);
    *(void **)&mp.set_index = mp_sym(lib, MP_NAME(mpg123_set_index), &miss);
    *(void **)&mp.strerror = mp_sym(lib, MP_NAME(mpg123_strerror), &miss);
    *(void **)&mp.plain_strerror = mp_sym(lib, MP_NAME(mpg123_plain_strerror), &miss);
    *(void **)&mp.close = mp_sym(lib, MP_NAME(mpg123_close), &miss);
    /* mpg123_init is a no-op since 1.27 and thread-safe; older ones need it once. */
    mp.ok = !miss && mp.init() == MPG123_OK;
}

static mpg123_ssize_t mp_io_read(void *u, void *dst, size_t n)
{
    source *s = u;
    size_t got = ws_audio_src_read(s, s->pos, dst, n);
    s->pos += got;
    return got == 0 && s->read_errno ? -1 : (mpg123_ssize_t)got;
}

static off_t mp_io_seek(void *u, off_t off, int whence)
{
    return (off_t)ws_audio_src_seek(u, off, whence);
}

/* MPEG frames carry no time: to seek exactly, libmpg123 reads the header of every frame
 * before the place (a read through the file, not a decode: about 3.5 us per second of
 * 128 kb/s audio), keeping a frame index as it goes. The process keeps the index of the
 * last MP_INDEX_FILES files seeked in, keyed by the file (device, inode, size, the inode's
 * change time, which a copy that keeps times cannot set back, and the view's place in it)
 * and given to the next handle on the same file, so that the later segments of a long
 * file cost their own audio only. */
#define MP_INDEX_FILES 16
typedef struct {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec ctime; /* the inode's change time: no tool sets it back */
    uint64_t base, len;
    off_t step;
    size_t fill;
    off_t *offsets; /* NULL: an empty slot */
    unsigned long long used;
} mp_index;
static mp_index mp_idx[MP_INDEX_FILES];
static unsigned long long mp_idx_clock;
static pthread_mutex_t mp_idx_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of s's file (st: its stat), or NULL. */
static mp_index *mp_index_find(const source *s, const struct stat *st)
{
    for (int i = 0; i < MP_INDEX_FILES; i++) {
        mp_index *e = &mp_idx[i];
        if (e->offsets && e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
            e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec &&
            e->base == s->base && e->len == s->len)
            return e;
    }
    return NULL;
}

/* Gives mh the index kept for s's file, if any. */
static void mp_index_restore(mpg123_handle *mh, const source *s)
{
    struct stat st;
    if (s->mem || fstat(s->fd, &st)) /* bytes in memory: nothing kept */
        return;
    pthread_mutex_lock(&mp_idx_lock);
    mp_index *e = mp_index_find(s, &st);
    if (e) {
        e->used = ++mp_idx_clock;
        mp.set_index(mh, e->offsets, e->step, e->fill); /* copied by libmpg123 */
    }
    pthread_mutex_unlock(&mp_idx_lock);
}

/* Keeps mh's index for s's file when it reaches further than the one kept. */
static void mp_index_save(mpg123_handle *mh, const source *s)
{
    off_t *offsets = NULL, step = 0;
    size_t fill = 0;
    if (mp.index(mh, &offsets, &step, &fill) != MPG123_OK || !offsets || fill < 2 || step < 1)
        return;
    struct stat st;
    if (s->mem || fstat(s->fd, &st))
        return;
    pthread_mutex_lock(&mp_idx_lock);
    mp_index *e = mp_index_find(s, &st);
    if (!e) { /* an empty slot, or the least recently used */
        e = &mp_idx[0];
        for (int i = 1; i < MP_INDEX_FILES && e->offsets; i++)
            if (!mp_idx[i].offsets || mp_idx[i].used < e->used)
                e = &mp_idx[i];
        free(e->offsets);
        memset(e, 0, sizeof *e);
    }
    if (e && (off_t)fill * step > (off_t)e->fill * e->step) {
        off_t *copy = malloc(fill * sizeof *copy);
        if (copy) {
            memcpy(copy, offsets, fill * sizeof *copy);
            free(e->offsets);
            *e = (mp_index){.dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
                            .ctime = st.st_ctim, .base = s->base, .len = s->len, .step = step,
                            .fill = fill, .offsets = copy, .used = ++mp_idx_clock};
        }
    }
    pthread_mutex_unlock(&mp_idx_lock);
}
#endif

/* --- decoders ------------------------------------------------------------ */

typedef struct {
    SNDFILE *sf;
#ifdef WS_HAVE_MPG123
    mpg123_handle *mh;
    source *src; /* mh's bytes */
#endif
#ifdef WS_HAVE_LIBAV
    ws_av *av;
#endif
    const char *lib;  /* "libsndfile", "mpg123" or "ffmpeg", for messages */
    int rate, channels;   /* of the frames read */
    int src_rate, src_channels; /* the file's (other than the above with --decode openai) */
    int seekable;     /* dec_seek can go to a frame */
    int64_t frames;   /* the header's frame count; -1 when it does not say */
    int exact;        /* frames is a promise: fewer decoded means truncated */
    const char *promise; /* who promised, for messages */
    int unknown_bad;  /* an unknown length means a damaged stream (Ogg) */
    int empty_reads;
    int pcm16;        /* 16-bit PCM: read as libsndfile's shorts into s16, made float here */
    short *s16;
    size_t s16_cap;   /* its samples */
} decoder;

static void dec_close(decoder *d)
{
    free(d->s16);
#ifdef WS_HAVE_LIBAV
    ws_av_close(d->av);
#endif
    if (d->sf)
        sf_close(d->sf);
#ifdef WS_HAVE_MPG123
    if (d->mh) {
        mp.close(d->mh);
        mp.delete_handle(d->mh);
    }
#endif
    memset(d, 0, sizeof *d);
}

#ifdef WS_HAVE_MPG123
static int mpeg_open(decoder *d, source *s, uint64_t first_frame, const char *name, ws_err *err)
{
    int e = 0;
    long rate = 0;
    int ch = 0, enc = 0;
    d->lib = "mpg123";
    d->src = s;
    d->mh = mp.new_handle(NULL, &e);
    if (!d->mh)
        return ws_errf(err, "%s: cannot start the MPEG decoder (mpg123: %s)", name,
                       mp.plain_strerror(e));
    /* libsndfile 1.2.0's settings (mpeg_decode.c), and quiet. */
    mp.param(d->mh, MPG123_REMOVE_FLAGS, MPG123_AUTO_RESAMPLE, 1.0);
    mp.param(d->mh, MPG123_ADD_FLAGS, MPG123_FORCE_FLOAT | MPG123_GAPLESS | MPG123_QUIET, 1.0);
#if MPG123_API_VERSION >= 45
    mp.param(d->mh, MPG123_ADD_FLAGS, MPG123_NO_FRANKENSTEIN, 1.0);
#endif
    s->pos = 0;
    if (mp.replace_reader_handle(d->mh, mp_io_read, mp_io_seek, NULL) != MPG123_OK ||
        mp.open_handle(d->mh, s) != MPG123_OK || mp.getformat(d->mh, &rate, &ch, &enc) != MPG123_OK)
        return ws_errf(err, "%s: not a recognised audio file (mpg123: %s)", name,
                       mp.strerror(d->mh));
    if (enc != MPG123_ENC_FLOAT_32 && mp.format(d->mh, rate, ch, MPG123_ENC_FLOAT_32) != MPG123_OK)
        return ws_errf(err, "%s: the MPEG decoder cannot give float samples (mpg123: %s)", name,
                       mp.strerror(d->mh));
    off_t n = mp.length(d->mh);
    d->rate = d->src_rate = rate > 0 && rate < INT32_MAX ? (int)rate : 0;
    d->channels = d->src_channels = ch;
    d->frames = n > 0 ? (int64_t)n : -1;
    /* Only a Xing/Info frame count makes fewer frames a damaged file; otherwise
     * the length is libmpg123's estimate and the stream is read to its end. */
    d->exact = n > 0 && ws_audio_mpeg_xing_frames(s, first_frame) > 0;
    d->promise = "the Xing/Info header";
    d->seekable = 1;
    return 0;
}
#endif

#ifdef WS_HAVE_LIBAV
/* FFmpeg's libraries: --decode openai, or what libsndfile could not open (sf_why: its
 * reason, NULL with openai). */
static int av_open(decoder *d, source *s, int openai, const char *sf_why, const char *name,
                   ws_err *err)
{
    int known = 0;
    d->lib = LIB_FFMPEG;
    if (ws_av_open(&d->av, s, openai, &known, name, err)) {
        if (known)
            return -1;
        char av_why[sizeof err->msg];
        snprintf(av_why, sizeof av_why, "%s", err->msg);
        if (sf_why) /* neither knows it: both reasons */
            return ws_errf(err, "%s: not a recognised audio file (libsndfile: %s; %s)", name,
                           sf_why, av_why);
        return ws_errf(err, "%s: not a recognised audio file (%s)", name, av_why);
    }
    ws_av_info(d->av, &d->rate, &d->channels, &d->src_rate, &d->src_channels);
    d->frames = -1; /* read to the end of the stream */
    return 0;
}
#endif

/* libsndfile (1.2.0 here, and later releases as far as known) keeps the reason an
 * open failed in one process-wide variable, read by sf_strerror(NULL): no handle
 * exists to hold it, and every sf_open* that fails writes it. Two threads failing at
 * once read each other's reason (a data race; libsndfile issue 279). So opens are
 * serialised and the reason is copied before the lock is let go; the lock covers the
 * header parse only, the audio is read and resampled in parallel. Errors after the
 * open come from the handle (sf_strerror(d->sf)). Test: audio.failed_opens_on_many_
 * threads_each_give_their_own_reason. */
static pthread_mutex_t sf_open_lock = PTHREAD_MUTEX_INITIALIZER;

/* mpeg: ws_audio_is_mpeg's answer, with the offset of the first frame. */
static int dec_open(decoder *d, source *s, int mpeg, uint64_t first_frame, int decode,
                    const char *name, ws_err *err)
{
    memset(d, 0, sizeof *d);
    d->frames = -1;
    if (decode == WS_DECODE_OPENAI) {
        const char *no = ws_av_unavailable();
        if (no)
            return ws_errf(err, "%s: decoding as openai-whisper does needs FFmpeg's libraries: %s",
                           name, no);
#ifdef WS_HAVE_LIBAV
        return av_open(d, s, 1, NULL, name, err);
#endif
    }
#ifdef WS_HAVE_MPG123
    if (mpeg) {
        pthread_once(&mp_once, mp_load);
        if (mp.ok)
            return mpeg_open(d, s, first_frame, name, err);
    }
#endif
    SF_VIRTUAL_IO vio = {vio_len, vio_seek, vio_read, vio_write, vio_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    s->pos = 0;
    d->lib = "libsndfile";
    d->promise = "the header";
    char why[256] = "";
    pthread_mutex_lock(&sf_open_lock);
    d->sf = sf_open_virtual(&vio, SFM_READ, &info, s);
    if (!d->sf)
        snprintf(why, sizeof why, "%s", sf_strerror(NULL));
    pthread_mutex_unlock(&sf_open_lock);
    if (!d->sf) {
        if (s->len == 0)
            return ws_errf(err, "%s: empty file (0 bytes; libsndfile: %s)", name, why);
        /* A WAV, AIFF, FLAC, ... libsndfile refuses is damaged, not a format for FFmpeg,
         * which would decode what it can of it. */
        if (ws_audio_is_sndfile_container(s))
            return ws_errf(err, "%s: not a recognised audio file (libsndfile: %s)", name, why);
#ifdef WS_HAVE_LIBAV
        if (!ws_av_unavailable())
            return av_open(d, s, 0, why, name, err);
#endif
        return ws_errf(err, "%s: not a recognised audio file (libsndfile: %s; %s)", name, why,
                       ws_av_unavailable());
    }
    sf_command(d->sf, SFC_SET_NORM_FLOAT, NULL, SF_TRUE); /* int PCM -> x / 2^(bits-1) */
    int type = info.format & SF_FORMAT_TYPEMASK;
    int known = info.frames >= 0 && info.frames != SF_COUNT_MAX;
    d->rate = d->src_rate = info.samplerate;
    d->channels = d->src_channels = info.channels;
    d->seekable = info.seekable;
    d->frames = known ? (int64_t)info.frames : -1;
    d->exact = known && type != SF_FORMAT_MPEG;
    /* FLAC's STREAMINFO says 0 samples when the encoder could not seek back to
     * fill it in; an Ogg stream with no length has no end-of-stream page. */
    d->unknown_bad = !known && type != SF_FORMAT_MPEG && type != SF_FORMAT_FLAC;
    /* 16-bit PCM (the common WAV): libsndfile's own float conversion is a scalar loop
     * that takes most of a decode (0.7 of 1.0 ms for 30 s); its shorts come as stored
     * (byte-swapped where the file's order is not the host's), and x / 32768 here is the
     * same float (test: audio.pcm16_decodes_as_libsndfiles_floats). */
    if ((info.format & SF_FORMAT_SUBMASK) == SF_FORMAT_PCM_16 && info.channels > 0 &&
        info.channels <= WS_AUDIO_MAX_CHANNELS)
        d->pcm16 = 1;
    return 0;
}

/* Up to `frames` interleaved frames into buf: the count, 0 at the end, -1 with err. */
static sf_count_t dec_read(decoder *d, float *buf, sf_count_t frames, const char *name,
                           size_t have, ws_err *err)
{
#ifdef WS_HAVE_LIBAV
    if (d->av)
        return (sf_count_t)ws_av_read(d->av, buf, (long)frames, have, name, err);
#endif
    if (d->sf && d->pcm16) {
        const size_t need = (size_t)frames * (size_t)d->channels; /* <= a read chunk */
        if (need > d->s16_cap) {
            free(d->s16);
            d->s16_cap = 0;
            if (!(d->s16 = malloc(need * sizeof *d->s16)))
                return ws_errf(err, "%s: out of memory for a read buffer", name);
            d->s16_cap = need;
        }
        sf_count_t got = sf_readf_short(d->sf, d->s16, frames);
        if (got > 0) {
            ws_audio_s16_to_float(d->s16, buf, (size_t)got * (size_t)d->channels);
            return got;
        }
        if (sf_error(d->sf))
            return ws_errf(err, "%s: decoding failed after %zu frames (libsndfile: %s)", name,
                           have, sf_strerror(d->sf));
        return 0;
    }
    if (d->sf) {
        sf_count_t got = sf_readf_float(d->sf, buf, frames);
        if (got > 0)
            return got;
        if (sf_error(d->sf))
            return ws_errf(err, "%s: decoding failed after %zu frames (libsndfile: %s)", name,
                           have, sf_strerror(d->sf));
        return 0;
    }
#ifdef WS_HAVE_MPG123
    const size_t frame_bytes = (size_t)d->channels * sizeof(float);
    for (;;) {
        size_t done = 0;
        int rc = mp.read(d->mh, buf, (size_t)frames * frame_bytes, &done);
        if (rc == MPG123_NEW_FORMAT)
            return ws_errf(err, "%s: the MPEG stream changes its rate or channels after %zu frames",
                           name, have);
        if (rc != MPG123_OK && rc != MPG123_DONE)
            return ws_errf(err, "%s: decoding failed after %zu frames (mpg123: %s)", name, have,
                           mp.strerror(d->mh));
        if (done % frame_bytes)
            return ws_errf(err, "%s: the MPEG decoder returned a partial frame after %zu frames",
                           name, have);
        if (done) {
            d->empty_reads = 0;
            return (sf_count_t)(done / frame_bytes);
        }
        if (rc == MPG123_DONE)
            return 0;
        /* OK with nothing: it skipped something (a tag, junk). Bounded, so that a
         * decoder that stops moving cannot hold us here. */
        if (++d->empty_reads > MPEG_MAX_EMPTY_READS)
            return ws_errf(err, "%s: the MPEG decoder stopped making progress after %zu frames",
                           name, have);
    }
#else
    return 0;
#endif
}

/* --- decoding ------------------------------------------------------------ */

static int too_long(const load_opts *o, double frames, int rate, ws_err *err)
{
    return ws_errf(err,
                   "%s: too long: %.0f frames at %d Hz (%.1f h); the limit is %zu samples at "
                   "16 kHz (%.1f h)",
                   o->name, frames, rate, frames / rate / 3600.0, o->max_samples,
                   (double)o->max_samples / WS_SAMPLE_RATE / 3600.0);
}

/* Goes to frame `at` of d, or to a frame before it: the frame reached (> 0), 0 when d
 * did not seek (the frames before are decoded and dropped instead), -1 with err. */
static int64_t dec_seek(decoder *d, int64_t at, const char *name, ws_err *err)
{
#ifdef WS_HAVE_LIBAV
    if (d->av && at > 0)
        return ws_av_seek(d->av, at, name, err);
#endif
    if (!d->seekable || at <= 0)
        return 0;
    if (d->sf) {
        if (sf_seek(d->sf, (sf_count_t)at, SEEK_SET) == (sf_count_t)at)
            return at;
        return ws_errf(err, "%s: cannot seek to frame %lld (libsndfile: %s)", name,
                       (long long)at, sf_strerror(d->sf));
    }
#ifdef WS_HAVE_MPG123
    if (d->mh) {
        mp_index_restore(d->mh, d->src);
        if (mp.seek(d->mh, (off_t)at, SEEK_SET) == (off_t)at) {
            mp_index_save(d->mh, d->src);
            return at;
        }
        return ws_errf(err, "%s: cannot seek to frame %lld (mpg123: %s)", name, (long long)at,
                       mp.strerror(d->mh));
    }
#endif
    return 0;
}

/* The segment [s0, s1) of d's frames asked for (s1 INT64_MAX: to the end), from the
 * options in seconds at d's rate. */
static void segment_frames(const decoder *d, const load_opts *o, int64_t *s0, int64_t *s1)
{
    *s0 = o->start_s > 0 ? (int64_t)llround(o->start_s * d->rate) : 0;
    *s1 = o->duration_s > 0 ? *s0 + (int64_t)llround(o->duration_s * d->rate) : INT64_MAX;
}

/* Reads the frames of d (those of the segment, with one), averaging the channels and
 * resampling as it goes. */
static int decode(decoder *d, load_opts *o, size_t held, ws_audio *a, ws_err *err)
{
    const char *name = o->name;
    const int ch = d->channels, rate = d->rate;
    const int pass = rate == WS_SAMPLE_RATE;
    /* the largest input frame count whose output stays within the cap */
    const double max_in = floor((double)o->max_samples * rate / WS_SAMPLE_RATE);
    const sf_count_t chunk = READ_CHUNK_SAMPLES / ch > 0 ? READ_CHUNK_SAMPLES / ch : 1;
    const int seg = o->start_s > 0 || o->duration_s > 0;
    const int64_t slack = (int64_t)llround(WS_SEGMENT_SLACK_S * rate);
    int64_t s0, s1;
    segment_frames(d, o, &s0, &s1);
    outbuf b = {.o = o, .held = held};
    resampler r = {0};
    float *buf = NULL, *mono = NULL;
    size_t have = 0, kept = 0, bytes;
    int rc = -1, seeked_to_start = 0;

    b.overhead = ((size_t)chunk * (size_t)ch + (size_t)chunk) * sizeof(float) +
                 (d->pcm16 ? (size_t)chunk * (size_t)ch * sizeof(short) : 0) +
                 (pass ? 0 : SOXR_BYTES) + (d->lib == LIB_FFMPEG ? LIBAV_BYTES : 0);
    if (d->frames >= 0) {
        int64_t n = d->frames;
        if (seg && d->exact) {
            if (s0 > d->frames)
                return ws_errf(err, "%s: the segment starts at %.3f s, after the end of the "
                               "audio (%.3f s)", name, o->start_s, (double)d->frames / rate);
            if (s1 != INT64_MAX && s1 - d->frames > slack)
                return ws_errf(err, "%s: the segment ends at %.3f s, after the end of the "
                               "audio (%.3f s)", name, (double)s1 / rate,
                               (double)d->frames / rate);
        }
        if (seg)
            n = (s1 < n ? s1 : n) - (s0 < n ? s0 : n);
        if (d->exact && (double)n > max_in)
            return too_long(o, (double)n, rate, err);
        double w = ws_audio_out_len((double)n, rate, WS_SAMPLE_RATE);
        b.sized = 1;
        b.exact = d->exact;
        b.want = w < (double)o->max_samples ? (size_t)w : o->max_samples;
        if (ws_audio_ask_reserve(o, held, b.want + 1, b.overhead, b.want, err))
            return -1;
        b.reserved = b.want + 1;
    }
    if (ws_mul_size((size_t)chunk, (size_t)ch, &bytes) || ws_mul_size(bytes, sizeof *buf, &bytes) ||
        !(buf = malloc(bytes)) || !(mono = malloc((size_t)chunk * sizeof *mono))) {
        ws_errf(err, "%s: out of memory for a %d-channel read buffer", name, ch);
        goto done;
    }
    if (!pass && ws_audio_rs_open(&r, rate, WS_SAMPLE_RATE, name, err))
        goto done;
    if (seg) {
        int64_t sk = dec_seek(d, s0, name, err);
        if (sk < 0)
            goto done;
        have = (size_t)sk;
        seeked_to_start = sk == s0;
    }

    /* 16 kHz mono of a known length (or a segment of it the decoder went to): decoded
     * straight into the output, no copy */
    const int direct = pass && ch == 1 && b.sized && (!seg || (int64_t)have == s0);
    for (;;) {
        float *in = buf;
        sf_count_t ask = chunk;
        if (seg && s1 != INT64_MAX && (int64_t)have < s1 && s1 - (int64_t)have < ask)
            ask = (sf_count_t)(s1 - (int64_t)have); /* not past the segment's end */
        if (direct && b.n < b.want + 1) { /* the spare slot: a file with more than it says */
            if ((size_t)ask > b.want + 1 - b.n)
                ask = (sf_count_t)(b.want + 1 - b.n);
            if (ws_audio_out_grow(&b, b.n + (size_t)ask, err))
                goto done;
            in = b.y + b.n;
        }
        sf_count_t got = dec_read(d, in, ask, name, have, err);
        if (got < 0)
            goto done;
        if (got == 0)
            break;
        /* the frames of the segment among these: [lo, hi) */
        size_t lo = 0, hi = (size_t)got;
        if (seg) {
            const int64_t h0 = (int64_t)have, h1 = (int64_t)have + (int64_t)got;
            lo = s0 > h0 ? (size_t)((s0 < h1 ? s0 : h1) - h0) : 0;
            hi = s1 < h1 ? (s1 > h0 ? (size_t)(s1 - h0) : 0) : (size_t)got;
            if (hi < lo)
                hi = lo;
        }
        const size_t k = hi - lo;
        if ((double)kept + (double)k > max_in) {
            too_long(o, (double)kept + (double)k, rate, err);
            goto done;
        }
        float *at = in + lo * (size_t)ch;
        const float *src = at; /* one channel: used as it is */
        size_t bad = ch == 1 ? ws_audio_first_nonfinite(at, k) : k;
        if (ch > 1) {
            for (size_t t = 0; t < k; t++) {
                const float v = ws_audio_downmix(at + t * (size_t)ch, ch);
                if (!isfinite(v)) {
                    bad = t;
                    break;
                }
                mono[t] = v;
            }
            src = mono;
        }
        if (bad < k) {
            ws_errf(err, "%s: frame %zu is not a finite number (%g)", name, have + lo + bad,
                    (double)ws_audio_downmix(at + bad * (size_t)ch, ch));
            goto done;
        }
        if (in != buf) {
            b.n += k;
        } else if (!k) {
            /* before the segment */
        } else if (pass) {
            if (ws_audio_out_grow(&b, b.n + k, err))
                goto done;
            memcpy(b.y + b.n, src, k * sizeof *src);
            b.n += k;
        } else if (ws_audio_rs_feed(&r, &b, src, k, name, err)) {
            goto done;
        }
        have += (size_t)got;
        kept += k;
        if (seg && (int64_t)have >= s1)
            break; /* the segment is whole */
    }

    const int cut = seg && (int64_t)have >= s1; /* stopped at the segment's end */
    if (!cut && d->frames < 0 && d->unknown_bad) {
        ws_errf(err,
                "%s: truncated or damaged: %s cannot tell the stream's length "
                "(no end-of-stream marker); %zu frames decoded",
                name, d->lib, have);
        goto done;
    }
    if (!cut && d->exact && (int64_t)have < d->frames) {
        ws_errf(err, "%s: truncated%s: %s promises %lld frames, only %zu could be decoded", name,
                d->sf ? "" : " or damaged", d->promise, (long long)d->frames, have);
        goto done;
    }
    /* libmpg123 (a stream without a frame count) seeks past the end without a word:
     * nothing after the start is a start at or past the end */
    if (seg && ((int64_t)have < s0 || (seeked_to_start && have == (size_t)s0 && s0 > 0))) {
        ws_errf(err, "%s: the segment starts at %.3f s, after the end of the audio (%.3f s)",
                name, o->start_s, (double)have / rate);
        goto done;
    }
    if (seg && !cut && s1 != INT64_MAX && s1 - (int64_t)have > slack) {
        ws_errf(err, "%s: the segment ends at %.3f s, after the end of the audio (%.3f s)", name,
                (double)s1 / rate, (double)have / rate);
        goto done;
    }
    if (!pass && kept) {
        double w = ws_audio_out_len((double)kept, rate, WS_SAMPLE_RATE);
        if (!(w <= (double)o->max_samples)) {
            too_long(o, (double)kept, rate, err);
            goto done;
        }
        if (ws_audio_rs_finish(&r, &b, (size_t)w, name, err))
            goto done;
    }
    if (b.n == 0) {
        free(b.y);
        b.y = NULL;
    } else if (b.cap > b.n) {
        float *ny = realloc(b.y, b.n * sizeof *ny); /* give the spare back */
        if (ny)
            b.y = ny;
    }
    a->x = b.y;
    a->n = b.n;
    a->src_rate = d->src_rate;
    a->src_channels = d->src_channels;
    b.y = NULL;
    rc = 0;
done:
    ws_audio_rs_close(&r);
    free(b.y);
    free(buf);
    free(mono);
    return rc;
}

/* Checks, opens and decodes one source; held: bytes of it we hold (a stream's). */
int ws_audio_load_source(ws_audio *a, source *s, load_opts *o, size_t held, ws_err *err)
{
    decoder d;
    memset(a, 0, sizeof *a);
    memset(&d, 0, sizeof d);
    if (!(o->start_s >= 0 && o->start_s < 1e9) || !(o->duration_s >= 0 && o->duration_s < 1e9))
        return ws_errf(err, "%s: a segment needs a start and a duration of 0 or more seconds "
                       "(start %g, duration %g)", o->name, o->start_s, o->duration_s);
    int rc;
    if (o->decode == WS_DECODE_OPENAI) {
        /* ffmpeg sees the file's own bytes (it skips ID3v2 tags, reads MP3 in a WAV, ...);
         * a recording cut short is still refused, checked on a view of its own. */
        source view = *s;
        rc = ws_audio_container_check(&view, o->name, err);
        ws_audio_src_release(&view);
        s->read_errno = view.read_errno;
        s->shrunk = view.shrunk;
        if (!rc && (s->read_errno || s->shrunk))
            rc = -1; /* said below */
        else if (!rc)
            rc = dec_open(&d, s, 0, 0, o->decode, o->name, err);
    } else {
        uint64_t at = 0;
        int mpeg = ws_audio_is_mpeg(s, &at);
        if (!mpeg && at) {
            /* ID3v2 tags before a WAV, FLAC, ...: libsndfile skips them itself but then
             * misplaces a WAV's data over virtual I/O (an ID3-tagged WAV of 64 frames
             * decoded as 49 shifted ones); decoders and checks see what follows. */
            s->base += at;
            s->len -= at;
        }
        if (ws_audio_container_check(s, o->name, err))
            return -1;
        rc = s->mpeg_data ? dec_open(&d, s, 1, 0, o->decode, o->name, err)
                          : dec_open(&d, s, mpeg, at, o->decode, o->name, err);
    }
    if (!rc && d.channels < 1)
        rc = ws_errf(err, "%s: %d channels in the header", o->name, d.channels);
    if (!rc && (d.rate < WS_AUDIO_MIN_RATE || d.rate > WS_AUDIO_MAX_RATE))
        rc = ws_errf(err, "%s: sample rate %d Hz is outside the supported %d..%d Hz", o->name,
                     d.rate, WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE);
    if (!rc)
        rc = decode(&d, o, held + (s->mem ? 0 : WS_SRC_READAHEAD), a, err);
    dec_close(&d);
    /* A read that failed or found the file shorter explains whatever the decoder
     * made of it: say that instead ("truncated", "not audio", or even success). */
    if (!o->reserve_failed && (s->read_errno || s->shrunk)) {
        ws_audio_free(a);
        if (s->read_errno)
            return ws_errf(err, "%s: read failed: %s", o->name, strerror(s->read_errno));
        return ws_errf(err, "%s: the file changed while being read (it is shorter than the "
                       "%llu bytes it had at open)", o->name, (unsigned long long)(s->base + s->len));
    }
    return rc;
}

/* audio.c - any audio file libsndfile decodes, to 16 kHz mono float32.
 *
 * Steps (SPEC.md step 1):
 *   1. bytes   A regular file is read in place with pread (source, below): never
 *              mapped, because a mapped file that shrinks while it is read (rewritten
 *              in place, truncated by another program) kills the process with SIGBUS
 *              at the next touch of a page past its new end, while pread just comes
 *              back short. The file's size at open is the length the decoders see; a
 *              short read, a read error, or a size or mtime that changed by the end is
 *              an error for that input (test: audio.file_truncated_while_decoding_
 *              is_an_error). Standard input ("-"), pipes, FIFOs and devices cannot be
 *              seeked, and the decoders need to seek, so they are read into memory
 *              first, at most opts.max_stream_bytes of them. Paths are opened with
 *              O_NONBLOCK: open() of a FIFO with no writer would block forever; the
 *              wait happens in poll() instead (a FIFO opened for reading before any
 *              writer reports POLLIN or POLLHUP only once a writer has come).
 *   2. check   For WAV (RIFF/RIFX), RF64/BW64, Wave64 and AIFF/AIFC the header's data size is
 *              compared with the bytes the file holds (container_check): libsndfile
 *              silently shortens such files to what is there, and a cut-off recording
 *              must be an error. The walk reads only chunk headers, at most
 *              WALK_MAX_CHUNKS of them, in 64-bit arithmetic that cannot wrap, and every
 *              step moves forward or stops. Sizes that mean "to the end of the stream"
 *              are accepted: 0xFFFFFFFF and >= 0x7FFF0000 in RIFF-style headers (what
 *              writers leave when they stream to a pipe and cannot seek back), AIFF's
 *              >= 0x7EFF0000 (sox writes 0x7F000008 for 16-bit stereo), Wave64's
 *              >= 2^62 (ffmpeg writes 2^63 - 1), and RF64's ds64 data size 0 behind a
 *              data chunk of 0xFFFFFFFF (ffmpeg -rf64 to a pipe); libsndfile would read
 *              that last one as zero frames, so the decoders are shown the real size
 *              instead (source.patch).
 *   3. decode  MPEG audio (MP3, MP2: an MPEG frame sync at the start, after any ID3v2
 *              tags, the rule libsndfile uses) goes to libmpg123 directly; everything
 *              else to libsndfile over virtual I/O (sf_open_virtual), read as float with
 *              normalisation on (SFC_SET_NORM_FLOAT): PCM of b bits maps to
 *              x / 2^(b-1), so int16 -> x / 32768 exactly, as the reference does
 *              (test: audio.jfk_passes_through_bit_exact, against our own parse of
 *              the data chunk). Float files are read as stored.
 *              Why not MP3 through libsndfile: libsndfile 1.2.0 leaves libmpg123's
 *              messages on ("Note: Illegal Audio-MPEG-Header ...", "Warning: Xing
 *              stream size off ..."), which libmpg123 prints straight to stderr, and
 *              gives no way to reach the handle to set MPG123_QUIET; redirecting the
 *              process's stderr is not an option with other threads printing. It also
 *              stops at mpg123_length's estimate for an MP3 without a Xing/Info
 *              header (a VBR file lost 70 % of its samples). Driving libmpg123 here
 *              with libsndfile's own settings (float output, gapless, no
 *              "Frankenstein" streams, no resampling) plus MPG123_QUIET gives the same
 *              samples (test: audio.mp3_decodes_like_libsndfile_bit_exact), no output
 *              on stderr, and libmpg123's reason in our one line when it fails.
 *              libmpg123 is opened at run time (it is always there when libsndfile
 *              has MP3 support, as its dependency); without it MPEG goes to libsndfile.
 *              Every decoded sample must be finite. The frames decoded must match the
 *              frames the header promised (FLAC, CAF, WAV, ...); an Ogg stream whose
 *              length libsndfile cannot find has no end-of-stream page and is refused
 *              as truncated. A FLAC stream with no sample count (what an encoder
 *              writing to a pipe leaves) is read to its end. MPEG is the exception:
 *              with no Xing/Info header its frame count is an estimate, so it is read
 *              to its end, and an MP3 cut short decodes to what it holds.
 *   4. mono    y[t] = (sum_c x[t, c]) / C, summed and divided in double, rounded
 *              once to float. One channel is copied unchanged.
 *   5. rate    16000 Hz input passes through bit-exact (copied). Any other rate goes
 *              through libsoxr, SOXR_VHQ (28-bit precision, linear phase, passband to
 *              0.913 x Nyquist) with SOXR_ROLLOFF_NONE, single-threaded, fed each
 *              decoded chunk as it comes, so the source-rate signal is never held
 *              whole: the decoder's peak memory is the 16 kHz output plus about
 *              2.5 MB of read and resampler buffers (plus a stream's bytes).
 *              soxr's output does not depend on how its input is cut (test:
 *              audio.chunked_resampling_equals_one_shot, bit for bit).
 *
 * Why libsoxr, and why ROLLOFF_NONE (bench/RESULTS-audio.md, build/bench-resample):
 * multi-tone error against the analytic signal at 16 kHz, every tone below
 * 0.9 x the lower Nyquist, is -150 dB for 44.1/48/22.05/8 kHz input (float32's
 * own floor), aliasing below -154 dB, 30 s of 44.1 kHz in about 10 ms. SOXR_VHQ's
 * default "small" roll-off droops toward 7 kHz (-72 dB at 44.1 kHz);
 * libsamplerate's SINC_BEST reaches -135 dB, drops the last sample at 44.1 kHz
 * and is more than 100x slower.
 *
 * Alignment and length: soxr removes its filter delay itself, so output sample 0
 * is input time 0 (the analytic comparison would show a delay of 1/100 sample as
 * -50 dB). The stream is flushed (soxr_process with in = NULL) and the output
 * length is exactly round(n * 16000 / rate); anything else is an error
 * (test: audio.resampled_length_is_rounded_ratio).
 *
 * Memory: ws_audio_opts.reserve is asked before the output grows (see audio.h);
 * the output grows by at least GROW_BYTES at a time, so it is asked at most that
 * often. Limits: at most opts.max_samples output samples and opts.max_stream_bytes
 * of a stream; input rates within [WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE]; sizes
 * overflow-checked.
 *
 * Tests: tests/test_audio.c; fuzzed by tests/fuzz/fuzz_audio.c.
 */
#include "audio.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>
#include <soxr.h>

#if defined(__has_include)
#if __has_include(<mpg123.h>)
#include <mpg123.h>
#define WS_HAVE_MPG123 1
#endif
#endif

#define STDIN_NAME "<stdin>"
#define READ_CHUNK_SAMPLES 65536         /* interleaved samples per decoder read */
#define SOXR_PIECE 16384                 /* mono samples per soxr_process call */
#define GROW_BYTES ((size_t)4 << 20)     /* buffers grow by at least this much */
#define STREAM_FIRST ((size_t)1 << 20)   /* first buffer for a stream's bytes */
#define SOXR_BYTES ((size_t)2 << 20)     /* soxr's own state at VHQ: 0.8 to 1.6 MB measured */
#define RIFF_PLACEHOLDER 0x7FFF0000u     /* 32-bit data sizes >= this: "until EOF" */
#define AIFF_PLACEHOLDER 0x7EFF0000u     /* sox: 8 + floor(0x7F000000 / block) * block */
#define W64_PLACEHOLDER ((uint64_t)1 << 62)
#define WALK_MAX_CHUNKS 4096             /* chunk headers read before the audio chunk */
#define MPEG_MAX_EMPTY_READS 4096        /* libmpg123 reads giving nothing, in a row */

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
} source;

/* Reads up to n bytes at off; returns how many (short only at len, or when the
 * file shrank or a read failed, which the source records). */
static size_t src_read(source *s, uint64_t off, void *dst, size_t n)
{
    unsigned char *d = dst;
    size_t got = 0;
    if (off >= s->len)
        return 0;
    if (n > s->len - off)
        n = (size_t)(s->len - off);
    if (s->mem) {
        memcpy(d, s->mem + s->base + off, n);
        got = n;
    } else {
        while (got < n) {
            ssize_t r = pread(s->fd, d + got, n - got, (off_t)(s->base + off + got));
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                if (!s->read_errno)
                    s->read_errno = errno;
                break;
            }
            if (r == 0) {
                s->shrunk = 1;
                break;
            }
            got += (size_t)r;
        }
    }
    if (s->patch_len && got && off < s->patch_off + s->patch_len && s->patch_off < off + got) {
        uint64_t a = off > s->patch_off ? off : s->patch_off;
        uint64_t b = off + got < s->patch_off + s->patch_len ? off + got : s->patch_off + s->patch_len;
        for (uint64_t i = a; i < b; i++)
            d[i - off] = s->patch[i - s->patch_off];
    }
    return got;
}

/* A position within [0, len], or -1. */
static int64_t src_seek(source *s, int64_t off, int whence)
{
    int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)s->pos : (int64_t)s->len;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END)
        return -1;
    if (off < -base || off > (int64_t)s->len - base)
        return -1;
    s->pos = (uint64_t)(base + off);
    return (int64_t)s->pos;
}

static sf_count_t vio_len(void *u)
{
    return (sf_count_t)((source *)u)->len;
}

static sf_count_t vio_seek(sf_count_t off, int whence, void *u)
{
    return src_seek(u, off, whence);
}

static sf_count_t vio_read(void *dst, sf_count_t count, void *u)
{
    source *s = u;
    if (count <= 0)
        return 0;
    size_t got = src_read(s, s->pos, dst, (size_t)count);
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

/* --- container sizes (WAV, RF64, W64, AIFF) ----------------------------- */

static uint32_t rd32le(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t rd32be(const unsigned char *p)
{
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static uint64_t rd64le(const unsigned char *p)
{
    return (uint64_t)rd32le(p) | (uint64_t)rd32le(p + 4) << 32;
}

/* The walk ended before the audio chunk, inside a chunk header (fewer bytes
 * left than a header needs): the file was cut there (libsndfile would open it
 * as zero frames). Zero bytes left over (no audio chunk at all) and pad bytes
 * (all zero) are left to libsndfile. */
static int cut_chunk_header(source *s, uint64_t off, const char *name, ws_err *err)
{
    unsigned char rest[24];
    size_t n = src_read(s, off, rest, sizeof rest);
    for (size_t i = 0; i < n; i++)
        if (rest[i])
            return ws_errf(err,
                           "%s: truncated: the file ends inside a chunk header at byte %llu",
                           name, (unsigned long long)off);
    return 0;
}

/* Sony Wave64: GUID chunk ids, 64-bit little-endian sizes that include the 24-byte
 * chunk header, chunks 8-byte aligned. */
static const unsigned char W64_RIFF[16] = {'r',  'i',  'f',  'f',  0x2E, 0x91, 0xCF, 0x11,
                                           0xA5, 0xD6, 0x28, 0xDB, 0x04, 0xC1, 0x00, 0x00};
static const unsigned char W64_WAVE[16] = {'w',  'a',  'v',  'e',  0xF3, 0xAC, 0xD3, 0x11,
                                           0x8C, 0xD1, 0x00, 0xC0, 0x4F, 0x8E, 0xDB, 0x8A};
static const unsigned char W64_DATA[16] = {'d',  'a',  't',  'a',  0xF3, 0xAC, 0xD3, 0x11,
                                           0x8C, 0xD1, 0x00, 0xC0, 0x4F, 0x8E, 0xDB, 0x8A};
#define W64_CHUNK_HEADER 24
#define WAVE_FORMAT_MPEGLAYER3 0x0055

/* A WAV, RF64 or Wave64 whose format tag says MP3: libsndfile would hand its data
 * to a libmpg123 handle of its own, which prints (see step 3 above). The data
 * chunk becomes the whole view, for our quiet one. */
static void mpeg_window(source *s, uint64_t data_at, uint64_t data_len)
{
    s->base += data_at;
    s->len = data_len;
    s->patch_len = 0;
    s->mpeg_data = 1;
}

static int w64_check(source *s, const char *name, ws_err *err)
{
    const uint64_t len = s->len;
    uint64_t off = 16 + 8 + 16; /* riff GUID, file size, wave GUID */
    unsigned char h[W64_CHUNK_HEADER], tag[2];
    unsigned fmt_tag = 0;
    for (int k = 0; k < WALK_MAX_CHUNKS; k++) {
        if (len - off < W64_CHUNK_HEADER)
            return cut_chunk_header(s, off, name, err);
        if (src_read(s, off, h, sizeof h) != sizeof h)
            return 0; /* the file shrank: the decode reports it */
        uint64_t size = rd64le(h + 16), avail = len - off - W64_CHUNK_HEADER;
        if (!memcmp(h, "fmt ", 4) && !memcmp(h + 4, W64_DATA + 4, 12) &&
            src_read(s, off + W64_CHUNK_HEADER, tag, 2) == 2)
            fmt_tag = (unsigned)tag[0] | (unsigned)tag[1] << 8;
        if (!memcmp(h, W64_DATA, 16)) {
            if (size < W64_CHUNK_HEADER)
                return ws_errf(err,
                               "%s: malformed Wave64: the data chunk's size %llu is smaller "
                               "than its 24-byte header",
                               name, (unsigned long long)size);
            uint64_t data = size - W64_CHUNK_HEADER;
            if (size >= W64_PLACEHOLDER)
                data = avail; /* streamed: the data runs to the end of the file */
            else if (data > avail)
                return ws_errf(err,
                               "%s: truncated: the data chunk declares %llu bytes but the file "
                               "holds %llu after its header",
                               name, (unsigned long long)data, (unsigned long long)avail);
            if (fmt_tag == WAVE_FORMAT_MPEGLAYER3)
                mpeg_window(s, off + W64_CHUNK_HEADER, data);
            return 0;
        }
        /* Another chunk: it must lie inside the file for the walk to go on (a
         * size of 2^64 - 1 would wrap the 8-byte rounding to a step of 0). */
        if (size < W64_CHUNK_HEADER || size - W64_CHUNK_HEADER > avail)
            return 0; /* malformed: libsndfile's call */
        uint64_t step = size + (-size & 7); /* size <= len < 2^63: no wrap */
        if (step > len - off)
            return 0; /* the pad runs past the end: nothing follows */
        off += step;
    }
    return 0; /* too many chunks to walk: libsndfile's call */
}

/* Walks the chunks of a RIFF-like file and fails when the audio chunk claims more
 * bytes than follow it. Files of other kinds, and headers too broken to walk, are
 * left to libsndfile, which reports them itself. */
static int container_check(source *s, const char *name, ws_err *err)
{
    const uint64_t len = s->len;
    unsigned char p[40];
    size_t got = src_read(s, 0, p, sizeof p);
    if (got >= 40 && !memcmp(p, W64_RIFF, 16) && !memcmp(p + 24, W64_WAVE, 16))
        return w64_check(s, name, err);
    if (got < 12)
        return 0;
    int riff = !memcmp(p, "RIFF", 4), rifx = !memcmp(p, "RIFX", 4);
    int rf64 = !memcmp(p, "RF64", 4) || !memcmp(p, "BW64", 4);
    int aiff = !memcmp(p, "FORM", 4) && (!memcmp(p + 8, "AIFF", 4) || !memcmp(p + 8, "AIFC", 4));
    if (!((riff || rifx || rf64) && !memcmp(p + 8, "WAVE", 4)) && !aiff)
        return 0;
    const char *data_id = aiff ? "SSND" : "data";
    uint64_t ds64_data = 0, ds64_at = 0;
    int have_ds64 = 0;
    unsigned fmt_tag = 0;
    uint64_t off = 12;
    unsigned char c[8 + 16];
    for (int k = 0; k < WALK_MAX_CHUNKS; k++) {
        if (len - off < 8)
            return cut_chunk_header(s, off, name, err);
        if (src_read(s, off, c, 8) != 8)
            return 0; /* the file shrank: the decode reports it */
        uint32_t size = (aiff || rifx) ? rd32be(c + 4) : rd32le(c + 4);
        uint64_t avail = len - off - 8;
        if (rf64 && !memcmp(c, "ds64", 4) && size >= 16 && avail >= 16 &&
            src_read(s, off + 8, c + 8, 16) == 16) {
            ds64_data = rd64le(c + 8 + 8); /* riff size (8 bytes), then data size */
            ds64_at = off + 8 + 8;
            have_ds64 = 1;
        }
        if (!aiff && !memcmp(c, "fmt ", 4) && size >= 2 && avail >= 2 &&
            src_read(s, off + 8, c + 8, 2) == 2)
            fmt_tag = rifx ? (unsigned)c[8] << 8 | c[9] : (unsigned)c[8] | (unsigned)c[9] << 8;
        if (!memcmp(c, data_id, 4)) {
            uint64_t declared = size;
            int streamed = 0;
            if (rf64 && size == 0xFFFFFFFFu && have_ds64) {
                if ((ds64_data == 0 && avail > 0) || ds64_data >= W64_PLACEHOLDER) {
                    /* Never filled in: show the decoders the bytes that are there. */
                    s->patch_off = ds64_at;
                    s->patch_len = 8;
                    for (int i = 0; i < 8; i++)
                        s->patch[i] = (unsigned char)(avail >> (8 * i));
                    streamed = 1;
                } else {
                    declared = ds64_data;
                }
            } else if (size == 0xFFFFFFFFu || size >= RIFF_PLACEHOLDER ||
                       (aiff && size >= AIFF_PLACEHOLDER)) {
                streamed = 1; /* the data runs to the end of the file */
            }
            if (!streamed && declared > avail)
                return ws_errf(err,
                               "%s: truncated: the %.4s chunk declares %llu bytes but the file "
                               "holds %llu after its header",
                               name, data_id, (unsigned long long)declared,
                               (unsigned long long)avail);
            if (fmt_tag == WAVE_FORMAT_MPEGLAYER3)
                mpeg_window(s, off + 8, streamed ? avail : declared);
            return 0;
        }
        uint64_t next = off + 8 + size + (size & 1); /* 2-byte aligned; < 2^34 added: no wrap */
        if (next > len)
            return 0; /* a broken chunk before the audio: libsndfile's call */
        off = next;
    }
    return 0; /* too many chunks to walk: libsndfile's call */
}

/* --- MPEG audio through libmpg123 ---------------------------------------- */

/* libsndfile's test for an MPEG audio frame header (sndfile.c, identify_mpeg):
 * frame sync, a valid version, layer, bitrate and sample rate index. */
static int mpeg_sync(const unsigned char *b)
{
    return b[0] == 0xFF && (b[1] & 0xE0) == 0xE0 && (b[1] & 0x18) != 0x08 && (b[1] & 0x06) != 0 &&
           (b[2] & 0xF0) != 0xF0 && (b[2] & 0x0C) != 0x0C;
}

/* Container magic numbers libsndfile recognises (sndfile.c, guess_file_type),
 * for files that an ID3v2 tag precedes. */
static const char *const SNDFILE_MAGIC[] = {
    "RIFF", "RIFX", "RF64", "FORM", "riff", "fLaC", "OggS", "caff", ".snd", "dns.", "fap ",
    " paf", "NIST", "Crea", "2BIT", "MATL", "PVF1", "Exte", "ALaw", "Diam", "LM89", "CAT ",
};

/* MPEG audio for libmpg123, its first frame (or what follows the tags) at *at:
 * a frame header at the start (libsndfile's only test for MPEG there), or an
 * ID3v2 tag followed by anything but another container libsndfile knows.
 * After a tag libsndfile itself hands nearly anything to libmpg123, which
 * then prints; here that goes to our quiet handle instead. */
static int is_mpeg(source *s, uint64_t *at)
{
    uint64_t off = 0;
    unsigned char b[12];
    int tagged = 0;
    for (int k = 0; k < 64; k++) {
        size_t n = src_read(s, off, b, sizeof b);
        if (n >= 10 && b[0] == 'I' && b[1] == 'D' && b[2] == '3' && b[3] >= 2 && b[3] <= 4) {
            uint64_t tag = ((uint64_t)(b[6] & 0x7F) << 21 | (uint64_t)(b[7] & 0x7F) << 14 |
                            (uint64_t)(b[8] & 0x7F) << 7 | (uint64_t)(b[9] & 0x7F)) + 10;
            tagged = 1;
            if (tag >= s->len - off)
                break; /* the tag is all there is */
            off += tag;
            continue;
        }
        *at = off;
        if (!tagged)
            return n == sizeof b && mpeg_sync(b);
        for (size_t i = 0; n >= 4 && i < sizeof SNDFILE_MAGIC / sizeof *SNDFILE_MAGIC; i++)
            if (!memcmp(b, SNDFILE_MAGIC[i], 4))
                return 0;
        return 1;
    }
    *at = off;
    return tagged;
}

#ifdef WS_HAVE_MPG123
/* The frame count of a Xing or Info tag in the Layer III frame at off, or 0.
 * Encoders write it after encoding (LAME, ffmpeg when it can seek back); with it
 * libmpg123's length is exact, without it an estimate from the file size. The
 * tag follows the side information, whose size depends on the version and the
 * channel mode (and a CRC adds 2 bytes), as libmpg123 reads it. */
static uint32_t mpeg_xing_frames(source *s, uint64_t off)
{
    unsigned char h[4 + 2 + 32 + 12];
    if (src_read(s, off, h, sizeof h) != sizeof h || ((h[1] >> 1) & 3) != 1)
        return 0; /* not Layer III */
    int mpeg1 = ((h[1] >> 3) & 3) == 3, mono = (h[3] >> 6) == 3, crc = !(h[1] & 1);
    const unsigned char *t = h + 4 + (crc ? 2 : 0) + (mpeg1 ? (mono ? 17 : 32) : (mono ? 9 : 17));
    if (memcmp(t, "Xing", 4) && memcmp(t, "Info", 4))
        return 0;
    return (t[7] & 1) ? rd32be(t + 8) : 0; /* flags bit 0: the frame count is there */
}

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
    *(void **)&mp.strerror = mp_sym(lib, MP_NAME(mpg123_strerror), &miss);
    *(void **)&mp.plain_strerror = mp_sym(lib, MP_NAME(mpg123_plain_strerror), &miss);
    *(void **)&mp.close = mp_sym(lib, MP_NAME(mpg123_close), &miss);
    /* mpg123_init is a no-op since 1.27 and thread-safe; older ones need it once. */
    mp.ok = !miss && mp.init() == MPG123_OK;
}

static mpg123_ssize_t mp_io_read(void *u, void *dst, size_t n)
{
    source *s = u;
    size_t got = src_read(s, s->pos, dst, n);
    s->pos += got;
    return got == 0 && s->read_errno ? -1 : (mpg123_ssize_t)got;
}

static off_t mp_io_seek(void *u, off_t off, int whence)
{
    return (off_t)src_seek(u, off, whence);
}
#endif

/* --- decoders ------------------------------------------------------------ */

typedef struct {
    SNDFILE *sf;
#ifdef WS_HAVE_MPG123
    mpg123_handle *mh;
#endif
    const char *lib;  /* "libsndfile" or "mpg123", for messages */
    int rate, channels;
    int64_t frames;   /* the header's frame count; -1 when it does not say */
    int exact;        /* frames is a promise: fewer decoded means truncated */
    const char *promise; /* who promised, for messages */
    int unknown_bad;  /* an unknown length means a damaged stream (Ogg) */
    int empty_reads;
} decoder;

static void dec_close(decoder *d)
{
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
    d->rate = rate > 0 && rate < INT32_MAX ? (int)rate : 0;
    d->channels = ch;
    d->frames = n > 0 ? (int64_t)n : -1;
    /* Only a Xing/Info frame count makes fewer frames a damaged file; otherwise
     * the length is libmpg123's estimate and the stream is read to its end. */
    d->exact = n > 0 && mpeg_xing_frames(s, first_frame) > 0;
    d->promise = "the Xing/Info header";
    return 0;
}
#endif

/* mpeg: is_mpeg's answer, with the offset of the first frame. */
static int dec_open(decoder *d, source *s, int mpeg, uint64_t first_frame, const char *name,
                    ws_err *err)
{
    memset(d, 0, sizeof *d);
    d->frames = -1;
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
    d->sf = sf_open_virtual(&vio, SFM_READ, &info, s);
    if (!d->sf) {
        if (s->len == 0)
            return ws_errf(err, "%s: empty file (0 bytes; libsndfile: %s)", name,
                           sf_strerror(NULL));
        return ws_errf(err, "%s: not a recognised audio file (libsndfile: %s)", name,
                       sf_strerror(NULL));
    }
    sf_command(d->sf, SFC_SET_NORM_FLOAT, NULL, SF_TRUE); /* int PCM -> x / 2^(bits-1) */
    int type = info.format & SF_FORMAT_TYPEMASK;
    int known = info.frames >= 0 && info.frames != SF_COUNT_MAX;
    d->rate = info.samplerate;
    d->channels = info.channels;
    d->frames = known ? (int64_t)info.frames : -1;
    d->exact = known && type != SF_FORMAT_MPEG;
    /* FLAC's STREAMINFO says 0 samples when the encoder could not seek back to
     * fill it in; an Ogg stream with no length has no end-of-stream page. */
    d->unknown_bad = !known && type != SF_FORMAT_MPEG && type != SF_FORMAT_FLAC;
    return 0;
}

/* Up to `frames` interleaved frames into buf: the count, 0 at the end, -1 with err. */
static sf_count_t dec_read(decoder *d, float *buf, sf_count_t frames, const char *name,
                           size_t have, ws_err *err)
{
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

/* --- the 16 kHz output, grown under the caller's reservation -------------- */

typedef struct {
    const char *name;
    size_t max_samples, max_stream_bytes;
    int (*reserve)(void *ctx, size_t decoder_bytes, size_t samples_16k, ws_err *err);
    void *reserve_ctx;
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

static int ask_reserve(load_opts *o, size_t held, size_t samples, size_t overhead,
                       size_t samples_16k, ws_err *err)
{
    if (!o->reserve)
        return 0;
    size_t bytes;
    if (ws_mul_size(samples, sizeof(float), &bytes) || ws_add_size(bytes, held, &bytes) ||
        ws_add_size(bytes, overhead, &bytes))
        bytes = SIZE_MAX;
    if (o->reserve(o->reserve_ctx, bytes, samples_16k, err)) {
        o->reserve_failed = 1;
        return -1;
    }
    return 0;
}

/* Makes room for `need` samples. */
static int out_grow(outbuf *b, size_t need, ws_err *err)
{
    if (need <= b->cap)
        return 0;
    size_t step = b->cap / 2 > GROW_BYTES / sizeof(float) ? b->cap / 2 : GROW_BYTES / sizeof(float);
    size_t ncap = b->cap + step, bytes;
    if (b->sized && need <= b->want + 1 && ncap > b->want + 1)
        ncap = b->want + 1; /* the spare slot catches a resampler that gives too many */
    if (ncap < need)
        ncap = need;
    if (ncap > b->reserved) {
        if (ask_reserve(b->o, b->held, ncap, b->overhead, ncap, err))
            return -1;
        b->reserved = ncap;
    }
    float *ny;
    if (ws_mul_size(ncap, sizeof *ny, &bytes) || !(ny = realloc(b->y, bytes)))
        return ws_errf(err, "%s: out of memory for %zu samples", b->o->name, ncap);
    b->y = ny;
    b->cap = ncap;
    return 0;
}

/* --- resampling ---------------------------------------------------------- */

typedef struct {
    soxr_t s;
    double ratio; /* out / in */
    size_t in;    /* samples consumed */
} resampler;

static int rs_open(resampler *r, double in_rate, double out_rate, const char *name, ws_err *err)
{
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, SOXR_ROLLOFF_NONE);
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    r->ratio = out_rate / in_rate;
    r->in = 0;
    r->s = soxr_create(in_rate, out_rate, 1, &e, &io, &q, &rt);
    if (!r->s)
        return ws_errf(err, "%s: soxr_create(%g -> %g Hz) failed: %s", name, in_rate, out_rate,
                       soxr_strerror(e));
    return 0;
}

/* Feeds n samples, appending what comes out to b. */
static int rs_feed(resampler *r, outbuf *b, const float *x, size_t n, const char *name,
                   ws_err *err)
{
    size_t used = 0;
    int stalls = 0;
    while (used < n) {
        size_t piece = n - used < SOXR_PIECE ? n - used : SOXR_PIECE, idone = 0, odone = 0;
        size_t need = b->n + (size_t)((double)piece * r->ratio) + 64;
        if (b->exact && need > b->want + 1)
            need = b->want + 1 > b->n ? b->want + 1 : b->n; /* soxr keeps the rest */
        if (stalls)
            need = b->cap + GROW_BYTES / sizeof(float);
        if (out_grow(b, need, err))
            return -1;
        soxr_error_t e = soxr_process(r->s, x + used, piece, &idone, b->y + b->n, b->cap - b->n,
                                      &odone);
        if (e)
            return ws_errf(err, "%s: soxr failed: %s", name, soxr_strerror(e));
        used += idone;
        b->n += odone;
        if (idone == 0 && odone == 0 && ++stalls > 2)
            return ws_errf(err, "%s: soxr made no progress after %zu samples", name, r->in + used);
        if (idone || odone)
            stalls = 0;
    }
    r->in += n;
    return 0;
}

/* Flushes (in = NULL marks the end) and checks the length: round(in * ratio). */
static int rs_finish(resampler *r, outbuf *b, size_t want, const char *name, ws_err *err)
{
    for (;;) {
        size_t odone = 0;
        if (out_grow(b, want + 1 > b->n ? want + 1 : b->n + 1, err))
            return -1;
        soxr_error_t e = soxr_process(r->s, NULL, 0, NULL, b->y + b->n, b->cap - b->n, &odone);
        if (e)
            return ws_errf(err, "%s: soxr failed: %s", name, soxr_strerror(e));
        if (odone == 0)
            break;
        b->n += odone;
        if (b->n > want)
            break;
    }
    if (b->n != want)
        return ws_errf(err, "%s: soxr consumed %zu samples and produced %zu, expected %zu", name,
                       r->in, b->n, want);
    return 0;
}

static void rs_close(resampler *r)
{
    if (r->s)
        soxr_delete(r->s);
    r->s = NULL;
}

/* round(n * out / in), halves up: the length soxr's flushed output has. */
static double out_len(double n, double in_rate, double out_rate)
{
    return floor(n * out_rate / in_rate + 0.5);
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

/* Reads every frame of d, averaging the channels and resampling as it goes. */
static int decode(decoder *d, load_opts *o, size_t held, ws_audio *a, ws_err *err)
{
    const char *name = o->name;
    const int ch = d->channels, rate = d->rate;
    const int pass = rate == WS_SAMPLE_RATE;
    /* the largest input frame count whose output stays within the cap */
    const double max_in = floor((double)o->max_samples * rate / WS_SAMPLE_RATE);
    const sf_count_t chunk = READ_CHUNK_SAMPLES / ch > 0 ? READ_CHUNK_SAMPLES / ch : 1;
    outbuf b = {.o = o, .held = held};
    resampler r = {0};
    float *buf = NULL, *mono = NULL;
    size_t have = 0, bytes;
    int rc = -1;

    b.overhead = ((size_t)chunk * (size_t)ch + (size_t)chunk) * sizeof(float) +
                 (pass ? 0 : SOXR_BYTES);
    if (d->frames >= 0) {
        if (d->exact && (double)d->frames > max_in)
            return too_long(o, (double)d->frames, rate, err);
        double w = out_len((double)d->frames, rate, WS_SAMPLE_RATE);
        b.sized = 1;
        b.exact = d->exact;
        b.want = w < (double)o->max_samples ? (size_t)w : o->max_samples;
        if (ask_reserve(o, held, b.want + 1, b.overhead, b.want, err))
            return -1;
        b.reserved = b.want + 1;
    }
    if (ws_mul_size((size_t)chunk, (size_t)ch, &bytes) || ws_mul_size(bytes, sizeof *buf, &bytes) ||
        !(buf = malloc(bytes)) || !(mono = malloc((size_t)chunk * sizeof *mono))) {
        ws_errf(err, "%s: out of memory for a %d-channel read buffer", name, ch);
        goto done;
    }
    if (!pass && rs_open(&r, rate, WS_SAMPLE_RATE, name, err))
        goto done;

    for (;;) {
        sf_count_t got = dec_read(d, buf, chunk, name, have, err);
        if (got < 0)
            goto done;
        if (got == 0)
            break;
        if ((double)have + (double)got > max_in) {
            too_long(o, (double)have + (double)got, rate, err);
            goto done;
        }
        for (sf_count_t t = 0; t < got; t++) {
            const float *fr = buf + (size_t)t * (size_t)ch;
            float v;
            if (ch == 1) {
                v = fr[0];
            } else {
                double s = 0;
                for (int c = 0; c < ch; c++)
                    s += fr[c];
                v = (float)(s / ch);
            }
            if (!isfinite(v)) {
                ws_errf(err, "%s: frame %zu is not a finite number (%g)", name, have + (size_t)t,
                        (double)v);
                goto done;
            }
            mono[t] = v;
        }
        if (pass) {
            if (out_grow(&b, b.n + (size_t)got, err))
                goto done;
            memcpy(b.y + b.n, mono, (size_t)got * sizeof *mono);
            b.n += (size_t)got;
        } else if (rs_feed(&r, &b, mono, (size_t)got, name, err)) {
            goto done;
        }
        have += (size_t)got;
    }

    if (d->frames < 0 && d->unknown_bad) {
        ws_errf(err,
                "%s: truncated or damaged: %s cannot tell the stream's length "
                "(no end-of-stream marker); %zu frames decoded",
                name, d->lib, have);
        goto done;
    }
    if (d->exact && (int64_t)have < d->frames) {
        ws_errf(err, "%s: truncated%s: %s promises %lld frames, only %zu could be decoded", name,
                d->sf ? "" : " or damaged", d->promise, (long long)d->frames, have);
        goto done;
    }
    if (!pass && have) {
        double w = out_len((double)have, rate, WS_SAMPLE_RATE);
        if (!(w <= (double)o->max_samples)) {
            too_long(o, (double)have, rate, err);
            goto done;
        }
        if (rs_finish(&r, &b, (size_t)w, name, err))
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
    a->src_rate = rate;
    a->src_channels = ch;
    b.y = NULL;
    rc = 0;
done:
    rs_close(&r);
    free(b.y);
    free(buf);
    free(mono);
    return rc;
}

/* Checks, opens and decodes one source; held: bytes of it we hold (a stream's). */
static int load_source(ws_audio *a, source *s, load_opts *o, size_t held, ws_err *err)
{
    decoder d;
    memset(a, 0, sizeof *a);
    uint64_t at = 0;
    int mpeg = is_mpeg(s, &at);
    if (!mpeg && at) {
        /* ID3v2 tags before a WAV, FLAC, ...: libsndfile skips them itself but then
         * misplaces a WAV's data over virtual I/O (an ID3-tagged WAV of 64 frames
         * decoded as 49 shifted ones); decoders and checks see what follows. */
        s->base = at;
        s->len -= at;
    }
    if (container_check(s, o->name, err))
        return -1;
    int rc = s->mpeg_data ? dec_open(&d, s, 1, 0, o->name, err)
                          : dec_open(&d, s, mpeg, at, o->name, err);
    if (!rc && d.channels < 1)
        rc = ws_errf(err, "%s: %d channels in the header", o->name, d.channels);
    if (!rc && (d.rate < WS_AUDIO_MIN_RATE || d.rate > WS_AUDIO_MAX_RATE))
        rc = ws_errf(err, "%s: sample rate %d Hz is outside the supported %d..%d Hz", o->name,
                     d.rate, WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE);
    if (!rc)
        rc = decode(&d, o, held, a, err);
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

static load_opts resolve(const ws_audio_opts *o, const char *name)
{
    load_opts r = {.name = name};
    r.max_samples = o && o->max_samples && o->max_samples < WS_AUDIO_MAX_SAMPLES
                        ? o->max_samples
                        : WS_AUDIO_MAX_SAMPLES; /* the output's hard limit stays */
    r.max_stream_bytes = o && o->max_stream_bytes ? o->max_stream_bytes : WS_AUDIO_MAX_STREAM_BYTES;
    if (o) {
        r.reserve = o->reserve;
        r.reserve_ctx = o->reserve_ctx;
    }
    return r;
}

int ws_audio_load_memory_opts(ws_audio *a, const void *data, size_t len, const char *name,
                              const ws_audio_opts *opts, ws_err *err)
{
    memset(a, 0, sizeof *a);
    load_opts o = resolve(opts, name ? name : "(memory)");
    if ((uint64_t)len > (uint64_t)INT64_MAX)
        return ws_errf(err, "%s: %zu bytes is too large", o.name, len);
    source s = {.mem = data, .fd = -1, .len = len};
    return load_source(a, &s, &o, 0, err);
}

int ws_audio_load_memory(ws_audio *a, const void *data, size_t len, const char *name, ws_err *err)
{
    return ws_audio_load_memory_opts(a, data, len, name, NULL, err);
}

/* --- files, FIFOs, devices and standard input ---------------------------- */

/* Waits until fd has data or its writer has gone. */
static int wait_readable(int fd, const char *name, ws_err *err)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int r = poll(&p, 1, -1);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR && errno != EAGAIN)
            return ws_errf(err, "%s: poll failed: %s", name, strerror(errno));
    }
}

/* Reads fd to its end into a malloc'd buffer of at most o->max_stream_bytes. */
static int read_stream(int fd, load_opts *o, unsigned char **out, size_t *len, ws_err *err)
{
    const size_t limit = o->max_stream_bytes;
    size_t cap = 0, n = 0;
    unsigned char *buf = NULL;
    *out = NULL;
    *len = 0;
    for (;;) {
        if (n == cap) {
            size_t step = cap / 2 > GROW_BYTES ? cap / 2 : GROW_BYTES;
            size_t ncap = cap == 0 ? STREAM_FIRST : cap + step;
            if (ncap < cap || ncap - 1 > limit) /* room for one byte over the limit */
                ncap = limit < SIZE_MAX ? limit + 1 : SIZE_MAX;
            if (ask_reserve(o, ncap, 0, 0, 0, err)) {
                free(buf);
                return -1;
            }
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return ws_errf(err, "%s: out of memory after %zu bytes", o->name, n);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { /* a non-blocking stdin */
            if (wait_readable(fd, o->name, err)) {
                free(buf);
                return -1;
            }
            continue;
        }
        if (r < 0) {
            int e = errno;
            free(buf);
            return ws_errf(err, "%s: read failed after %zu bytes: %s", o->name, n, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > limit) {
            free(buf);
            return ws_errf(err,
                           "%s: more than %zu bytes from a pipe, FIFO or device, the limit for "
                           "input that cannot be seeked; give it as a regular file",
                           o->name, limit);
        }
    }
    if (n < cap) { /* give the spare back: held is what the decode will count */
        unsigned char *nb = n ? realloc(buf, n) : NULL;
        if (nb || !n) {
            if (!n)
                free(buf);
            buf = nb;
        }
    }
    *out = buf;
    *len = n;
    return 0;
}

static int load_stream(ws_audio *a, int fd, load_opts *o, ws_err *err)
{
    unsigned char *buf;
    size_t len;
    if (read_stream(fd, o, &buf, &len, err))
        return -1;
    source s = {.mem = buf, .fd = -1, .len = len};
    int rc = load_source(a, &s, o, len, err);
    free(buf);
    return rc;
}

/* A regular file of st->st_size bytes, read in place; it must not change meanwhile. */
static int load_regular(ws_audio *a, int fd, const struct stat *st, load_opts *o, ws_err *err)
{
    source s = {.fd = fd, .len = (uint64_t)st->st_size};
    int rc = load_source(a, &s, o, 0, err);
    struct stat now;
    if (!rc && (fstat(fd, &now) || now.st_size != st->st_size ||
                now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
                now.st_mtim.tv_nsec != st->st_mtim.tv_nsec)) {
        ws_audio_free(a);
        rc = ws_errf(err, "%s: the file changed while being read", o->name);
    }
    return rc;
}

int ws_audio_load_opts(ws_audio *a, const char *path, const ws_audio_opts *opts, ws_err *err)
{
    memset(a, 0, sizeof *a);
    if (!strcmp(path, "-")) {
        load_opts o = resolve(opts, STDIN_NAME);
        struct stat st;
        /* `< file.wav`: a regular file at offset 0 is read in place, as by path. */
        if (!fstat(STDIN_FILENO, &st) && S_ISREG(st.st_mode) && st.st_size > 0 &&
            lseek(STDIN_FILENO, 0, SEEK_CUR) == 0) {
            return load_regular(a, STDIN_FILENO, &st, &o, err);
        }
        return load_stream(a, STDIN_FILENO, &o, err);
    }
    load_opts o = resolve(opts, path);

    /* O_NONBLOCK: opening a FIFO that has no writer yet must not block here. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ws_errf(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return ws_errf(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return ws_errf(err, "%s: is a directory", path);
    }
    int rc;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        rc = load_regular(a, fd, &st, &o, err);
        close(fd);
        return rc;
    }
    /* A FIFO, a device, a socket, or a regular file whose size says nothing (procfs).
     * Blocking reads from here on; a FIFO with no writer yet reports neither POLLIN
     * nor POLLHUP until one comes, so poll() is where we wait for it. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return ws_errf(err, "%s: cannot make the descriptor blocking: %s", path, strerror(e));
    }
    rc = S_ISREG(st.st_mode) ? 0 : wait_readable(fd, path, err);
    if (!rc)
        rc = load_stream(a, fd, &o, err);
    close(fd);
    return rc;
}

int ws_audio_load(ws_audio *a, const char *path, ws_err *err)
{
    return ws_audio_load_opts(a, path, NULL, err);
}

/* --- ws_resample --------------------------------------------------------- */

int ws_resample(const float *in, size_t n, double in_rate, double out_rate, float **out,
                size_t *n_out, ws_err *err)
{
    *out = NULL;
    *n_out = 0;
    if (!(in_rate > 0) || !(out_rate > 0) || !isfinite(in_rate) || !isfinite(out_rate))
        return ws_errf(err, "resample: invalid rates %g -> %g Hz", in_rate, out_rate);
    if (n == 0)
        return 0;

    double want_d = out_len((double)n, in_rate, out_rate);
    if (!(want_d <= (double)WS_AUDIO_MAX_SAMPLES))
        return ws_errf(err,
                       "resample: %zu samples at %g Hz give %.0f at %g Hz, over the limit of %zu",
                       n, in_rate, want_d, out_rate, WS_AUDIO_MAX_SAMPLES);
    size_t want = (size_t)want_d, bytes;

    if (in_rate == out_rate) {
        if (ws_mul_size(n, sizeof **out, &bytes) || !(*out = malloc(bytes)))
            return ws_errf(err, "resample: out of memory for %zu samples", n);
        memcpy(*out, in, bytes);
        *n_out = n;
        return 0;
    }
    if (want == 0)
        return 0;

    load_opts o = {.name = "resample", .max_samples = WS_AUDIO_MAX_SAMPLES};
    outbuf b = {.o = &o, .sized = 1, .exact = 1, .want = want, .reserved = SIZE_MAX};
    resampler r = {0};
    int rc = rs_open(&r, in_rate, out_rate, "resample", err);
    if (!rc)
        rc = rs_feed(&r, &b, in, n, "resample", err);
    if (!rc)
        rc = rs_finish(&r, &b, want, "resample", err);
    rs_close(&r);
    if (rc) {
        free(b.y);
        return -1;
    }
    *out = b.y;
    *n_out = b.n;
    return 0;
}

void ws_audio_free(ws_audio *a)
{
    if (!a)
        return;
    free(a->x);
    memset(a, 0, sizeof *a);
}

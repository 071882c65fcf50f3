/* source.c - the bytes a decoder sees, and what they are: a byte source over
 * memory or a regular file read with pread, the container size checks, and the
 * test for MPEG audio. Nothing here calls libsndfile or libmpg123; their reader
 * callbacks over a source sit beside the one call that opens each (decode.c).
 *
 * Bytes: a regular file is read in place with pread, never mapped, because a
 * mapped file that shrinks while it is read (rewritten in place, truncated by
 * another program) kills the process with SIGBUS at the next touch of a page
 * past its new end, while pread just comes back short. The file's size at open
 * is the length the decoders see; a short read or a read error is recorded in
 * the source (shrunk, read_errno), and the load reports it as an error for that
 * input (tests: audio.file_truncated_after_open_is_an_error_not_sigbus,
 * audio.regular_file_is_not_mapped_while_decoding). base moves the decoders'
 * byte 0 past ID3v2 tags before a container; patch shows them 8 bytes other
 * than the file's (an RF64 size, below).
 *
 * Check: for WAV (RIFF/RIFX), RF64/BW64, Wave64 and AIFF/AIFC the header's data
 * size is compared with the bytes the file holds (ws_audio_container_check):
 * libsndfile silently shortens such files to what is there, and a cut-off
 * recording must be an error. The walk reads only chunk headers, at most
 * WALK_MAX_CHUNKS of them, in 64-bit arithmetic that cannot wrap, and every
 * step moves forward or stops. Sizes that mean "to the end of the stream" are
 * accepted: 0xFFFFFFFF and >= 0x7FFF0000 in RIFF-style headers (what writers
 * leave when they stream to a pipe and cannot seek back), AIFF's >= 0x7EFF0000
 * (sox writes 0x7F000008 for 16-bit stereo), Wave64's >= 2^62 (ffmpeg writes
 * 2^63 - 1), and RF64's ds64 data size 0 behind a data chunk of 0xFFFFFFFF
 * (ffmpeg -rf64 to a pipe); libsndfile would read that last one as zero frames,
 * so the decoders are shown the real size instead (source.patch). A WAV, RF64
 * or Wave64 whose format tag is MP3 (0x0055) is narrowed to its data chunk, for
 * libmpg123 (decode.c says why not libsndfile's).
 *
 * MPEG: an MPEG frame sync at the start, after any ID3v2 tags, the rule
 * libsndfile uses (ws_audio_is_mpeg); the Xing/Info frame count of the first
 * Layer III frame tells an exact length from libmpg123's estimate.
 *
 * Tests: tests/test_audio.c (audio.*_longer_than_file_is_refused,
 * audio.*_end_the_walk, audio.w64_data_size_placeholders_read_to_the_end,
 * audio.*_to_a_pipe_decodes_exactly, audio.id3_tagged_*,
 * audio.mp3_in_a_wav_decodes_quietly_like_the_mp3); fuzzed by
 * tests/fuzz/fuzz_audio.c.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RIFF_PLACEHOLDER 0x7FFF0000u     /* 32-bit data sizes >= this: "until EOF" */
#define AIFF_PLACEHOLDER 0x7EFF0000u     /* sox: 8 + floor(0x7F000000 / block) * block */
#define W64_PLACEHOLDER ((uint64_t)1 << 62)
#define WALK_MAX_CHUNKS 4096             /* chunk headers read before the audio chunk */

/* --- byte sources: memory, or a regular file read with pread ------------- */

/* pread of n bytes at the file's offset at; how many came. With record, a short read
 * is recorded in s (an error, or the file shorter than at open); without (a read-ahead
 * past what was asked for), the plain read of what was asked for records it. */
static size_t pread_all(source *s, uint64_t at, unsigned char *d, size_t n, int record)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(s->fd, d + got, n - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            if (record && !s->read_errno)
                s->read_errno = errno;
            break;
        }
        if (r == 0) {
            if (record)
                s->shrunk = 1;
            break;
        }
        got += (size_t)r;
    }
    return got;
}

void ws_audio_src_release(source *s)
{
    free(s->ra);
    s->ra = NULL;
    s->ra_len = 0;
}

/* Reads up to n bytes at off; returns how many (short only at len, or when the
 * file shrank or a read failed, which the source records). A decoder reads a file in
 * small pieces, one after the other (libsndfile: 8 KiB, libmpg123: a frame); once a
 * read starts where the one before ended, the file is read into a window the pieces are
 * copied from, WS_SRC_READAHEAD_MIN bytes at first and twice as many at each refill up to
 * WS_SRC_READAHEAD: a 30 s WAV takes a few preads, not 120, and a header or a segment of
 * a long file reads little more than it needs. Reads of half the window or more, and
 * reads that jump (a container's chunk walk, a seek), read what they ask for. */
size_t ws_audio_src_read(source *s, uint64_t off, void *dst, size_t n)
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
        const uint64_t at = s->base + off;
        const int in_order = at == s->next;
        const int in_window = s->ra && at >= s->ra_off && at < s->ra_off + s->ra_len;
        s->next = at + n;
        if (!in_order && !in_window)
            s->ra_size = 0; /* a jump: the next run in order starts small again */
        if (s->ra_size == 0)
            s->ra_size = WS_SRC_READAHEAD_MIN;
        if (in_window) {
            size_t k = (size_t)(s->ra_off + s->ra_len - at);
            if (k > n)
                k = n;
            memcpy(d, s->ra + (at - s->ra_off), k);
            got = k;
        }
        if (got < n && (in_order || in_window) && n - got < s->ra_size / 2) {
            if (!s->ra)
                s->ra = malloc(WS_SRC_READAHEAD); /* none: plain preads */
            const uint64_t p = at + got;
            const uint64_t left = s->base + s->len - p;
            const size_t want = left < s->ra_size ? (size_t)left : s->ra_size;
            if (s->ra) {
                s->ra_off = p;
                s->ra_len = pread_all(s, p, s->ra, want, 0);
                if (s->ra_len < want) /* an error or the end: the plain read says which */
                    s->ra_len = 0;
                if (s->ra_size < WS_SRC_READAHEAD)
                    s->ra_size *= 2;
                size_t k = s->ra_len < n - got ? s->ra_len : n - got;
                memcpy(d + got, s->ra, k);
                got += k;
            }
        }
        if (got < n)
            got += pread_all(s, at + got, d + got, n - got, 1);
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
int64_t ws_audio_src_seek(source *s, int64_t off, int whence)
{
    int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)s->pos : (int64_t)s->len;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END)
        return -1;
    if (off < -base || off > (int64_t)s->len - base)
        return -1;
    s->pos = (uint64_t)(base + off);
    return (int64_t)s->pos;
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
    size_t n = ws_audio_src_read(s, off, rest, sizeof rest);
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
 * to a libmpg123 handle of its own, which prints (see decode.c). The data
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
        if (ws_audio_src_read(s, off, h, sizeof h) != sizeof h)
            return 0; /* the file shrank: the decode reports it */
        uint64_t size = rd64le(h + 16), avail = len - off - W64_CHUNK_HEADER;
        if (!memcmp(h, "fmt ", 4) && !memcmp(h + 4, W64_DATA + 4, 12) &&
            ws_audio_src_read(s, off + W64_CHUNK_HEADER, tag, 2) == 2)
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
            return ws_errf(err, "%s: malformed or truncated Wave64: a chunk at byte %llu claims "
                           "%llu bytes, outside the file (%llu bytes), before the data chunk",
                           name, (unsigned long long)off, (unsigned long long)size,
                           (unsigned long long)(s->base + s->len));
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
int ws_audio_container_check(source *s, const char *name, ws_err *err)
{
    const uint64_t len = s->len;
    unsigned char p[40];
    size_t got = ws_audio_src_read(s, 0, p, sizeof p);
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
        if (ws_audio_src_read(s, off, c, 8) != 8)
            return 0; /* the file shrank: the decode reports it */
        uint32_t size = (aiff || rifx) ? rd32be(c + 4) : rd32le(c + 4);
        uint64_t avail = len - off - 8;
        if (rf64 && !memcmp(c, "ds64", 4) && size >= 16 && avail >= 16 &&
            ws_audio_src_read(s, off + 8, c + 8, 16) == 16) {
            ds64_data = rd64le(c + 8 + 8); /* riff size (8 bytes), then data size */
            ds64_at = off + 8 + 8;
            have_ds64 = 1;
        }
        if (!aiff && !memcmp(c, "fmt ", 4) && size >= 2 && avail >= 2 &&
            ws_audio_src_read(s, off + 8, c + 8, 2) == 2)
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
        /* A chunk before the audio that runs past the end: no audio chunk can follow, and
         * libsndfile 1.2.0 can loop forever in such a LIST chunk (a fuzzed WAV of 177
         * bytes), so the file is refused here. A missing pad byte at the end is no harm. */
        if (off + 8 + size > len)
            return ws_errf(err,
                           "%s: malformed or truncated: a chunk at byte %llu claims %u bytes, "
                           "past the end of the file (%llu bytes), before any %s chunk",
                           name, (unsigned long long)off, (unsigned)size,
                           (unsigned long long)(s->base + s->len), data_id);
        if (next > len)
            return 0; /* only its pad byte is missing: nothing follows */
        off = next;
    }
    return 0; /* too many chunks to walk: libsndfile's call */
}

/* --- MPEG audio: libsndfile's test, and the Xing/Info frame count --------- */

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
int ws_audio_is_mpeg(source *s, uint64_t *at)
{
    uint64_t off = 0;
    unsigned char b[12];
    int tagged = 0;
    for (int k = 0; k < 64; k++) {
        size_t n = ws_audio_src_read(s, off, b, sizeof b);
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

/* 1 when s starts with the magic number of a container libsndfile reads whole (WAV,
 * AIFF, FLAC, ...), whose refusal by libsndfile stands; 0 for Ogg and CAF, which may hold
 * codecs libsndfile lacks (Speex, AAC), and everything else. */
int ws_audio_is_sndfile_container(source *s)
{
    unsigned char b[4];
    if (ws_audio_src_read(s, 0, b, 4) != 4 || !memcmp(b, "OggS", 4) || !memcmp(b, "caff", 4))
        return 0;
    for (size_t i = 0; i < sizeof SNDFILE_MAGIC / sizeof *SNDFILE_MAGIC; i++)
        if (!memcmp(b, SNDFILE_MAGIC[i], 4))
            return 1;
    return 0;
}

#ifdef WS_HAVE_MPG123
/* The frame count of a Xing or Info tag in the Layer III frame at off, or 0.
 * Encoders write it after encoding (LAME, ffmpeg when it can seek back); with it
 * libmpg123's length is exact, without it an estimate from the file size. The
 * tag follows the side information, whose size depends on the version and the
 * channel mode (and a CRC adds 2 bytes), as libmpg123 reads it. */
uint32_t ws_audio_mpeg_xing_frames(source *s, uint64_t off)
{
    unsigned char h[4 + 2 + 32 + 12];
    if (ws_audio_src_read(s, off, h, sizeof h) != sizeof h || ((h[1] >> 1) & 3) != 1)
        return 0; /* not Layer III */
    int mpeg1 = ((h[1] >> 3) & 3) == 3, mono = (h[3] >> 6) == 3, crc = !(h[1] & 1);
    const unsigned char *t = h + 4 + (crc ? 2 : 0) + (mpeg1 ? (mono ? 17 : 32) : (mono ? 9 : 17));
    if (memcmp(t, "Xing", 4) && memcmp(t, "Info", 4))
        return 0;
    return (t[7] & 1) ? rd32be(t + 8) : 0; /* flags bit 0: the frame count is there */
}
#endif

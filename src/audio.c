/* audio.c - any audio file libsndfile decodes, to 16 kHz mono float32.
 *
 * Steps (SPEC.md step 1):
 *   1. bytes   A regular file is mapped read-only (mmap); standard input ("-"),
 *              pipes and other unseekable files are read whole into memory. Both go
 *              through ws_audio_load_memory, so every input is decoded the same way.
 *   2. check   For WAV (RIFF/RIFX), RF64/BW64, Wave64 and AIFF/AIFC the header's data size is
 *              compared with the bytes the file holds (container_check): libsndfile
 *              silently shortens such files to what is there, and a cut-off recording
 *              must be an error. Sizes 0xFFFFFFFF and >= 0x7FFF0000 are the
 *              placeholders writers leave when they stream to a pipe and cannot seek
 *              back; they mean "to the end of the file" and are accepted.
 *   3. decode  libsndfile over virtual I/O (sf_open_virtual), read as float with
 *              normalisation on (SFC_SET_NORM_FLOAT): PCM of b bits maps to
 *              x / 2^(b-1), so int16 -> x / 32768 exactly, as the reference does
 *              (test: audio.jfk_passes_through_bit_exact, against our own parse of
 *              the data chunk). Float files are read as stored.
 *              SFC_SET_SCALE_FLOAT_INT_READ only concerns float files read as
 *              integers, which we never do. Every decoded sample must be finite.
 *              The frames decoded must match the frames the header promised
 *              (FLAC, CAF, ...); an Ogg stream whose length libsndfile cannot find
 *              has no end-of-stream page and is refused as truncated. MPEG is the
 *              exception: with no Xing/Info header its frame count is an estimate,
 *              so a shortfall (or an unknown length) is accepted there, and an MP3
 *              cut short decodes to what it holds.
 *   4. mono    y[t] = (sum_c x[t, c]) / C, summed and divided in double, rounded
 *              once to float. One channel is copied unchanged.
 *   5. rate    16000 Hz input passes through bit-exact (memcpy). Any other rate goes
 *              through libsoxr, SOXR_VHQ (28-bit precision, linear phase, passband to
 *              0.913 x Nyquist) with SOXR_ROLLOFF_NONE, single-threaded.
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
 * Limits: at most WS_AUDIO_MAX_SAMPLES output samples; input rates within
 * [WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE]; sizes overflow-checked.
 *
 * Tests: tests/test_audio.c.
 */
#include "audio.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sndfile.h>
#include <soxr.h>

#define STDIN_NAME "<stdin>"
#define READ_CHUNK_SAMPLES 65536            /* interleaved samples per sf_readf_float */
#define READ_FD_FIRST ((size_t)1 << 20)     /* first buffer for unseekable input */
#define READ_FIRST_CAP ((size_t)1 << 24)    /* samples allocated before any are read */
#define STREAM_SIZE_PLACEHOLDER 0x7FFF0000u /* data sizes >= this: "until EOF" */

/* --- virtual I/O over a buffer ------------------------------------------- */

typedef struct {
    const unsigned char *p;
    sf_count_t len, pos;
} mem_file;

static sf_count_t vio_len(void *u)
{
    return ((mem_file *)u)->len;
}

static sf_count_t vio_seek(sf_count_t off, int whence, void *u)
{
    mem_file *m = u;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->len;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END)
        return -1;
    if ((off > 0 && base > m->len - off) || base + off < 0)
        return -1; /* past the end, or before the start */
    m->pos = base + off;
    return m->pos;
}

static sf_count_t vio_read(void *dst, sf_count_t count, void *u)
{
    mem_file *m = u;
    sf_count_t left = m->len - m->pos;
    if (count > left)
        count = left;
    if (count <= 0)
        return 0;
    memcpy(dst, m->p + m->pos, (size_t)count);
    m->pos += count;
    return count;
}

static sf_count_t vio_write(const void *src, sf_count_t count, void *u)
{
    return 0; /* read-only */
}

static sf_count_t vio_tell(void *u)
{
    return ((mem_file *)u)->pos;
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

/* The walk ended before the audio chunk, inside a chunk header: the file was
 * cut there (libsndfile would open it as zero frames). Zero bytes left over
 * (no audio chunk at all) and pad bytes (all zero) are left to libsndfile. */
static int cut_chunk_header(const unsigned char *p, size_t len, size_t off, const char *name,
                            ws_err *err)
{
    for (size_t i = off; i < len; i++)
        if (p[i])
            return ws_errf(err, "%s: truncated: the file ends inside a chunk header at byte %zu",
                           name, off);
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

static int w64_check(const unsigned char *p, size_t len, const char *name, ws_err *err)
{
    size_t off = 16 + 8 + 16; /* riff GUID, file size, wave GUID */
    while (len >= off && len - off >= W64_CHUNK_HEADER) {
        uint64_t size = rd64le(p + off + 16);
        if (size < W64_CHUNK_HEADER)
            return 0; /* malformed: libsndfile's call */
        if (!memcmp(p + off, W64_DATA, 16)) {
            uint64_t declared = size - W64_CHUNK_HEADER, avail = len - off - W64_CHUNK_HEADER;
            if (declared > avail)
                return ws_errf(err,
                               "%s: truncated: the data chunk declares %llu bytes but the file "
                               "holds %llu after its header",
                               name, (unsigned long long)declared, (unsigned long long)avail);
            return 0;
        }
        uint64_t next = (uint64_t)off + ((size + 7) & ~(uint64_t)7);
        if (next > len)
            return 0;
        off = (size_t)next;
    }
    return cut_chunk_header(p, len, off, name, err);
}

/* Walks the chunks of a RIFF-like file and fails when the audio chunk claims more
 * bytes than follow it. Files of other kinds, and headers too broken to walk, are
 * left to libsndfile, which reports them itself. */
static int container_check(const unsigned char *p, size_t len, const char *name, ws_err *err)
{
    if (len >= 40 && !memcmp(p, W64_RIFF, 16) && !memcmp(p + 24, W64_WAVE, 16))
        return w64_check(p, len, name, err);
    if (len < 12)
        return 0;
    int riff = !memcmp(p, "RIFF", 4), rifx = !memcmp(p, "RIFX", 4);
    int rf64 = !memcmp(p, "RF64", 4) || !memcmp(p, "BW64", 4);
    int aiff = !memcmp(p, "FORM", 4) && (!memcmp(p + 8, "AIFF", 4) || !memcmp(p + 8, "AIFC", 4));
    if (!((riff || rifx || rf64) && !memcmp(p + 8, "WAVE", 4)) && !aiff)
        return 0;
    const char *data_id = aiff ? "SSND" : "data";
    uint64_t ds64_data = 0;
    int have_ds64 = 0;
    size_t off = 12;
    while (len - off >= 8) {
        const unsigned char *c = p + off;
        uint32_t size = (aiff || rifx) ? rd32be(c + 4) : rd32le(c + 4);
        size_t avail = len - off - 8;
        if (rf64 && !memcmp(c, "ds64", 4) && size >= 16 && avail >= 16) {
            ds64_data = rd64le(c + 8 + 8); /* riff size (8 bytes), then data size */
            have_ds64 = 1;
        }
        if (!memcmp(c, data_id, 4)) {
            uint64_t declared = size;
            if (rf64 && size == 0xFFFFFFFFu && have_ds64)
                declared = ds64_data;
            else if (size == 0xFFFFFFFFu || size >= STREAM_SIZE_PLACEHOLDER)
                return 0; /* streamed: the data runs to the end of the file */
            if (declared > avail)
                return ws_errf(err,
                               "%s: truncated: the %.4s chunk declares %llu bytes but the file "
                               "holds %zu after its header",
                               name, data_id, (unsigned long long)declared, avail);
            return 0;
        }
        uint64_t next = (uint64_t)off + 8 + size + (size & 1); /* chunks are 2-byte aligned */
        if (next > len)
            return 0; /* a broken chunk before the audio: libsndfile's call */
        off = (size_t)next;
    }
    return cut_chunk_header(p, len, off, name, err);
}

/* --- decoding ------------------------------------------------------------ */

/* Largest input frame count whose 16 kHz output stays within the cap. */
static sf_count_t max_input_frames(int rate)
{
    double m = floor((double)WS_AUDIO_MAX_SAMPLES * rate / WS_SAMPLE_RATE);
    return (sf_count_t)m;
}

static int too_long(const char *name, double frames, int rate, ws_err *err)
{
    return ws_errf(err,
                   "%s: too long: %.0f frames at %d Hz (%.1f h); the limit is %zu samples at "
                   "16 kHz (%.1f h)",
                   name, frames, rate, frames / rate / 3600.0, WS_AUDIO_MAX_SAMPLES,
                   (double)WS_AUDIO_MAX_SAMPLES / WS_SAMPLE_RATE / 3600.0);
}

/* Reads every frame of f, averaging the channels into *mono (malloc'd, *n set). */
static int decode_mono(SNDFILE *f, const SF_INFO *info, const char *name, float **mono, size_t *n,
                       ws_err *err)
{
    const int ch = info->channels;
    const sf_count_t max_frames = max_input_frames(info->samplerate);
    const sf_count_t chunk = READ_CHUNK_SAMPLES / ch > 0 ? READ_CHUNK_SAMPLES / ch : 1;
    int known = info->frames >= 0 && info->frames != SF_COUNT_MAX;
    /* The header's count sizes the buffer, up to a bound: a lying header must not
     * make us allocate gigabytes for a small file; longer audio grows by doubling. */
    size_t cap = known && info->frames > 0 ? (size_t)info->frames : (size_t)chunk;
    if (cap > READ_FIRST_CAP)
        cap = READ_FIRST_CAP;
    float *buf = NULL, *y = NULL;
    size_t have = 0, bytes;

    *mono = NULL;
    *n = 0;
    if (known && info->frames > max_frames)
        return too_long(name, (double)info->frames, info->samplerate, err);
    if (ws_mul_size((size_t)chunk, (size_t)ch, &bytes) || ws_mul_size(bytes, sizeof *buf, &bytes) ||
        !(buf = malloc(bytes)))
        return ws_errf(err, "%s: out of memory for a %d-channel read buffer", name, ch);
    if (ws_mul_size(cap, sizeof *y, &bytes) || !(y = malloc(bytes))) {
        free(buf);
        return ws_errf(err, "%s: out of memory for %zu samples", name, cap);
    }

    for (;;) {
        sf_count_t got = sf_readf_float(f, buf, chunk);
        if (got <= 0)
            break;
        if ((sf_count_t)have > max_frames - got) {
            free(buf);
            free(y);
            return too_long(name, (double)have + (double)got, info->samplerate, err);
        }
        if (have + (size_t)got > cap) {
            size_t ncap = cap, nbytes;
            while (ncap < have + (size_t)got)
                if (ws_mul_size(ncap, 2, &ncap))
                    ncap = have + (size_t)got;
            float *ny = NULL;
            if (ws_mul_size(ncap, sizeof *y, &nbytes) || !(ny = realloc(y, nbytes))) {
                free(buf);
                free(y);
                return ws_errf(err, "%s: out of memory for %zu samples", name, ncap);
            }
            y = ny;
            cap = ncap;
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
                free(buf);
                free(y);
                return ws_errf(err, "%s: frame %zu is not a finite number (%g)", name,
                               have + (size_t)t, (double)v);
            }
            y[have + (size_t)t] = v;
        }
        have += (size_t)got;
    }
    free(buf);

    if (sf_error(f)) {
        free(y);
        return ws_errf(err, "%s: decoding failed after %zu frames (libsndfile: %s)", name, have,
                       sf_strerror(f));
    }
    int mpeg = (info->format & SF_FORMAT_TYPEMASK) == SF_FORMAT_MPEG;
    if (!known && !mpeg) {
        free(y);
        return ws_errf(err,
                       "%s: truncated or damaged: libsndfile cannot tell the stream's length "
                       "(no end-of-stream marker); %zu frames decoded",
                       name, have);
    }
    if ((sf_count_t)have < info->frames && !mpeg) {
        free(y);
        return ws_errf(err,
                       "%s: truncated: the header promises %lld frames, only %zu could be decoded",
                       name, (long long)info->frames, have);
    }
    if (have == 0) {
        free(y);
        y = NULL;
    }
    *mono = y;
    *n = have;
    return 0;
}

int ws_audio_load_memory(ws_audio *a, const void *data, size_t len, const char *name, ws_err *err)
{
    memset(a, 0, sizeof *a);
    if (!name)
        name = "(memory)";
    if (len > (size_t)INT64_MAX)
        return ws_errf(err, "%s: %zu bytes is too large", name, len);
    if (container_check(data, len, name, err))
        return -1;

    mem_file m = {.p = data, .len = (sf_count_t)len, .pos = 0};
    SF_VIRTUAL_IO vio = {vio_len, vio_seek, vio_read, vio_write, vio_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *f = sf_open_virtual(&vio, SFM_READ, &info, &m);
    if (!f) {
        if (len == 0)
            return ws_errf(err, "%s: empty file (0 bytes; libsndfile: %s)", name,
                           sf_strerror(NULL));
        return ws_errf(err, "%s: not a recognised audio file (libsndfile: %s)", name,
                       sf_strerror(NULL));
    }
    if (info.channels < 1) {
        sf_close(f);
        return ws_errf(err, "%s: %d channels in the header", name, info.channels);
    }
    if (info.samplerate < WS_AUDIO_MIN_RATE || info.samplerate > WS_AUDIO_MAX_RATE) {
        sf_close(f);
        return ws_errf(err, "%s: sample rate %d Hz is outside the supported %d..%d Hz", name,
                       info.samplerate, WS_AUDIO_MIN_RATE, WS_AUDIO_MAX_RATE);
    }
    sf_command(f, SFC_SET_NORM_FLOAT, NULL, SF_TRUE); /* int PCM -> x / 2^(bits-1) */

    float *mono;
    size_t n;
    int rc = decode_mono(f, &info, name, &mono, &n, err);
    sf_close(f);
    if (rc)
        return -1;

    a->src_rate = info.samplerate;
    a->src_channels = info.channels;
    if (info.samplerate == WS_SAMPLE_RATE || n == 0) {
        a->x = mono; /* bit-exact passthrough */
        a->n = n;
        return 0;
    }
    ws_err rerr;
    rc = ws_resample(mono, n, info.samplerate, WS_SAMPLE_RATE, &a->x, &a->n, &rerr);
    free(mono);
    if (rc) {
        a->src_rate = a->src_channels = 0;
        return ws_errf(err, "%s: %s", name, rerr.msg);
    }
    return 0;
}

/* --- files and standard input -------------------------------------------- */

/* Reads fd to its end into a malloc'd buffer. */
static int read_all(int fd, const char *name, unsigned char **out, size_t *len, ws_err *err)
{
    size_t cap = READ_FD_FIRST, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf)
        return ws_errf(err, "%s: out of memory", name);
    for (;;) {
        if (n == cap) {
            size_t ncap;
            unsigned char *nb = NULL;
            if (ws_mul_size(cap, 2, &ncap) || !(nb = realloc(buf, ncap))) {
                free(buf);
                return ws_errf(err, "%s: out of memory after %zu bytes", name, n);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            return ws_errf(err, "%s: read failed after %zu bytes: %s", name, n, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *out = buf;
    *len = n;
    return 0;
}

int ws_audio_load(ws_audio *a, const char *path, ws_err *err)
{
    memset(a, 0, sizeof *a);
    if (!strcmp(path, "-")) {
        unsigned char *buf;
        size_t len;
        if (read_all(STDIN_FILENO, STDIN_NAME, &buf, &len, err))
            return -1;
        int rc = ws_audio_load_memory(a, buf, len, STDIN_NAME, err);
        free(buf);
        return rc;
    }

    int fd = open(path, O_RDONLY | O_CLOEXEC);
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
    if (S_ISREG(st.st_mode) && st.st_size > 0 && (uintmax_t)st.st_size <= SIZE_MAX) {
        size_t len = (size_t)st.st_size;
        void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            close(fd);
            rc = ws_audio_load_memory(a, map, len, path, err);
            munmap(map, len);
            return rc;
        }
        /* Not mappable (some file systems): read it instead. */
    }
    unsigned char *buf;
    size_t len;
    rc = read_all(fd, path, &buf, &len, err);
    close(fd);
    if (rc)
        return -1;
    rc = ws_audio_load_memory(a, buf, len, path, err);
    free(buf);
    return rc;
}

/* --- resampling ---------------------------------------------------------- */

int ws_resample(const float *in, size_t n, double in_rate, double out_rate, float **out,
                size_t *n_out, ws_err *err)
{
    *out = NULL;
    *n_out = 0;
    if (!(in_rate > 0) || !(out_rate > 0) || !isfinite(in_rate) || !isfinite(out_rate))
        return ws_errf(err, "resample: invalid rates %g -> %g Hz", in_rate, out_rate);
    if (n == 0)
        return 0;

    /* round(n * out / in), halves up: the length soxr's flushed output has. */
    double want_d = floor((double)n * out_rate / in_rate + 0.5);
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

    /* One spare slot: soxr producing more than round(n * ratio) is detected. */
    size_t cap = want + 1;
    float *y;
    if (ws_mul_size(cap, sizeof *y, &bytes) || !(y = malloc(bytes)))
        return ws_errf(err, "resample: out of memory for %zu samples", cap);

    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, SOXR_ROLLOFF_NONE);
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    soxr_t s = soxr_create(in_rate, out_rate, 1, &e, &io, &q, &rt);
    if (!s) {
        free(y);
        return ws_errf(err, "resample: soxr_create(%g -> %g Hz) failed: %s", in_rate, out_rate,
                       soxr_strerror(e));
    }
    size_t used = 0, tot = 0, idone, odone;
    while (!e && used < n) {
        idone = odone = 0;
        e = soxr_process(s, in + used, n - used, &idone, y + tot, cap - tot, &odone);
        used += idone;
        tot += odone;
        if (!e && idone == 0 && odone == 0)
            break; /* no progress: output full, counted below */
    }
    while (!e && tot < cap) { /* flush: in == NULL marks the end of the input */
        odone = 0;
        e = soxr_process(s, NULL, 0, NULL, y + tot, cap - tot, &odone);
        if (odone == 0)
            break;
        tot += odone;
    }
    soxr_delete(s);
    if (e) {
        free(y);
        return ws_errf(err, "resample: soxr failed: %s", soxr_strerror(e));
    }
    if (used != n || tot != want) {
        free(y);
        return ws_errf(err,
                       "resample: soxr consumed %zu of %zu samples and produced %zu, expected %zu",
                       used, n, tot, want);
    }
    *out = y;
    *n_out = want;
    return 0;
}

void ws_audio_free(ws_audio *a)
{
    if (!a)
        return;
    free(a->x);
    memset(a, 0, sizeof *a);
}

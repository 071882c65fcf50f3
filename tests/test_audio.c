/* test_audio.c - src/audio/: decoding, sample formats, channel averaging,
 * resampling to 16 kHz, standard input, and hostile files.
 *
 * Every input is written here with libsndfile's writer into a fresh
 * test_tmpdir(). PCM files are written from integers (sf_writef_short/int), so
 * the expected floats are known exactly: x / 2^(bits-1). The bit-exact check of
 * samples/jfk.wav parses the WAV data chunk itself, independently of
 * libsndfile. Files the real tools write to pipes come from ffmpeg and sox,
 * run here when they are installed (the tests say so when they skip).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audio/audio.h"
#include "audio/internal.h"
#include "helpers.h"

/* --- helpers ------------------------------------------------------------- */

static char *tmp_path(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_tmpdir(), name);
    return path;
}

static const char *jfk_path(void)
{
    static char path[1024];
    const char *d = getenv("WS_SAMPLES");
    snprintf(path, sizeof path, "%s/jfk.wav", d && *d ? d : "samples");
    return path;
}

/* Opens path for writing; fails the test when libsndfile refuses the format. */
static SNDFILE *open_write(const char *path, int format, int rate, int channels)
{
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert_not_null(f, "cannot write %s (format 0x%x, %d Hz): %s", path, format, rate,
                       sf_strerror(NULL));
    return f;
}

static void write_float(const char *path, int format, int rate, int channels, const float *x,
                        sf_count_t frames)
{
    SNDFILE *f = open_write(path, format, rate, channels);
    cr_assert_eq(sf_writef_float(f, x, frames), frames);
    sf_close(f);
}

static void write_short(const char *path, int format, int rate, int channels, const short *x,
                        sf_count_t frames)
{
    SNDFILE *f = open_write(path, format, rate, channels);
    cr_assert_eq(sf_writef_short(f, x, frames), frames);
    sf_close(f);
}

static void write_int(const char *path, int format, int rate, int channels, const int *x,
                      sf_count_t frames)
{
    SNDFILE *f = open_write(path, format, rate, channels);
    cr_assert_eq(sf_writef_int(f, x, frames), frames);
    sf_close(f);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* Keeps the first `keep` bytes of path. */
static void truncate_to(const char *path, size_t keep)
{
    cr_assert_eq(truncate(path, (off_t)keep), 0, "truncate %s", path);
}

static size_t file_size(const char *path)
{
    size_t n = 0;
    free(read_file(path, &n));
    return n;
}

static short *random_shorts(size_t n, uint64_t seed)
{
    ws_rng r = {seed};
    short *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (short)(int)(ws_rng_next(&r) & 0xFFFF) /* full range, -32768 included */;
    return x;
}

/* Loads path, which must fail; the message must be one line starting with the path
 * and containing want. */
static void assert_load_fails(const char *path, const char *want)
{
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load(&a, path, &err), -1, "%s: loaded, expected an error", path);
    cr_assert_null(a.x);
    cr_assert_eq(a.n, 0);
    cr_assert_eq(strncmp(err.msg, path, strlen(path)), 0,
                 "message does not start with the path: %s", err.msg);
    cr_assert_not_null(strstr(err.msg, want), "message lacks \"%s\": %s", want, err.msg);
    cr_assert_null(strchr(err.msg, '\n'), "message is not one line: %s", err.msg);
}

static void load_ok(ws_audio *a, const char *path)
{
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load(a, path, &err), 0, "%s: %s", path, err.msg);
}

/* Sum of tones with incommensurate frequencies (no short period, so that a
 * delay cannot hide), evaluated in double. */
typedef struct {
    double f[8], a[8], p[8];
    int n;
} tones;

static double tone_at(const tones *t, double sec)
{
    double s = 0;
    for (int k = 0; k < t->n; k++)
        s += t->a[k] * sin(2 * M_PI * t->f[k] * sec + t->p[k]);
    return s;
}

/* Tones below 0.9 x the lower Nyquist of r and 16 kHz, peak <= 0.9. */
static tones band_tones(int rate)
{
    static const double f[] = {97.0, 441.7, 1003.0, 2011.3, 3307.0, 4999.0, 6007.0, 7100.0};
    tones t = {.n = 0};
    double fmax = 0.9 * fmin(rate, WS_SAMPLE_RATE) / 2;
    for (int k = 0; k < 8; k++)
        if (f[k] < fmax) {
            t.f[t.n] = f[k];
            t.p[t.n] = 0.7 * k + 0.1;
            t.n++;
        }
    for (int k = 0; k < t.n; k++)
        t.a[k] = 0.9 / t.n;
    return t;
}

static float *sample_tones(const tones *t, int rate, sf_count_t frames)
{
    float *x = malloc((size_t)frames * sizeof *x);
    for (sf_count_t i = 0; i < frames; i++)
        x[i] = (float)tone_at(t, (double)i / rate);
    return x;
}

/* Compares a.x (16 kHz) with t over [from, to) seconds; returns rel. L2 error. */
static double tone_error(const ws_audio *a, const tones *t, double from, double to, double *maxerr)
{
    size_t i0 = (size_t)(from * WS_SAMPLE_RATE), i1 = (size_t)(to * WS_SAMPLE_RATE);
    cr_assert_leq(i1, a->n);
    double *want = malloc((i1 - i0) * sizeof *want);
    for (size_t i = i0; i < i1; i++)
        want[i - i0] = tone_at(t, (double)i / WS_SAMPLE_RATE);
    double e = rel_l2(a->x + i0, want, i1 - i0);
    if (maxerr)
        *maxerr = max_abs_err(a->x + i0, want, i1 - i0);
    free(want);
    return e;
}

/* --- sample formats ------------------------------------------------------ */

#define PCM_FRAMES 4000

/* int16 x maps to x / 32768: exactly, so the comparison is equality. */
static void check_pcm16(const char *name, int format)
{
    short *s = random_shorts(PCM_FRAMES, 1);
    s[0] = -32768;
    s[1] = 32767;
    s[2] = 0;
    const char *path = tmp_path(name);
    write_short(path, format, WS_SAMPLE_RATE, 1, s, PCM_FRAMES);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.n, PCM_FRAMES);
    cr_assert_eq(a.src_rate, WS_SAMPLE_RATE);
    cr_assert_eq(a.src_channels, 1);
    for (size_t i = 0; i < a.n; i++)
        cr_assert_eq(a.x[i], (float)s[i] / 32768.0f, "%s[%zu]: got %.9g, want %d/32768", name, i,
                     (double)a.x[i], s[i]);
    cr_assert_eq(a.x[0], -1.0f);
    ws_audio_free(&a);
    free(s);
}

/* The read-ahead window: every pattern a decoder reads with (small pieces in order, large
 * reads, jumps, re-reads inside the window, a view that starts past byte 0) gives the
 * file's bytes, and a run in order starts with a small window that grows. */
Test(audio, source_reads_give_the_files_bytes_through_the_window)
{
    const size_t size = 3u << 20, base = 1000;
    unsigned char *file = malloc(size), *got = malloc(size);
    cr_assert(file && got);
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        file[i] = (unsigned char)x;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s", tmp_path("src_window.bin"));
    FILE *f = fopen(path, "wb");
    cr_assert(f && fwrite(file, 1, size, f) == size && fclose(f) == 0);
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0);
    source s = {.fd = fd, .base = base, .len = size - base, .next = base};

    /* a header's few bytes: the window is the smallest */
    cr_assert_eq(ws_audio_src_read(&s, 0, got, 12), 12);
    cr_assert_eq(memcmp(got, file + base, 12), 0);
    cr_assert_eq(s.ra_len, WS_SRC_READAHEAD_MIN);
    cr_assert_lt(s.ra_len, WS_SRC_READAHEAD);
    /* pieces in order grow it up to the largest */
    uint64_t off = 12;
    for (int i = 0; i < 400; i++) {
        size_t n = 1 + (size_t)(x % 4000);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        cr_assert_eq(ws_audio_src_read(&s, off, got, n), n);
        cr_assert_eq(memcmp(got, file + base + off, n), 0, "in order at %llu", (unsigned long long)off);
        off += n;
    }
    cr_assert_eq(s.ra_size, WS_SRC_READAHEAD);
    /* random reads: jumps, re-reads, large reads, reads past the end */
    for (int i = 0; i < 3000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const int kind = (int)(x % 4);
        const size_t n = kind == 0 ? (size_t)(x >> 8) % 300000 : 1 + (size_t)(x >> 8) % 9000;
        if (kind == 1)
            off = (x >> 24) % (size - base + 100); /* a jump, sometimes past the end */
        else if (kind == 2 && off > 5000)
            off -= (x >> 24) % 5000; /* back into the window */
        const size_t want = off >= size - base ? 0 : (n < size - base - off ? n : size - base - off);
        cr_assert_eq(ws_audio_src_read(&s, off, got, n), want, "read %zu at %llu", n, (unsigned long long)off);
        cr_assert_eq(memcmp(got, file + base + off, want), 0, "read %zu at %llu", n, (unsigned long long)off);
        off += want;
    }
    cr_assert(!s.read_errno && !s.shrunk);
    ws_audio_src_release(&s);
    close(fd);
    free(file);
    free(got);
}

Test(audio, wav_pcm16_decodes_to_int_over_32768_exactly)
{
    check_pcm16("a.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
}

Test(audio, flac_pcm16_decodes_losslessly)
{
    check_pcm16("a.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
}

Test(audio, aiff_pcm16_decodes_exactly)
{
    check_pcm16("a.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16);
}

/* 24- and 32-bit PCM: int32 written, libsndfile keeps the top `bits`; the float is
 * the kept value / 2^31, rounded to float once (exact for 24 bits). */
static void check_pcm32(const char *name, int format, int bits)
{
    ws_rng r = {2};
    int *v = malloc(PCM_FRAMES * sizeof *v);
    for (int i = 0; i < PCM_FRAMES; i++)
        v[i] = (int)(uint32_t)ws_rng_next(&r);
    v[0] = INT32_MIN;
    v[1] = INT32_MAX;
    const char *path = tmp_path(name);
    write_int(path, format, WS_SAMPLE_RATE, 1, v, PCM_FRAMES);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.n, PCM_FRAMES);
    int64_t mask = ~(((int64_t)1 << (32 - bits)) - 1);
    for (int i = 0; i < PCM_FRAMES; i++) {
        float want = (float)((double)((int64_t)v[i] & mask) / 2147483648.0);
        cr_assert_eq(a.x[i], want, "%s[%d]: got %.9g want %.9g", name, i, (double)a.x[i],
                     (double)want);
    }
    ws_audio_free(&a);
    free(v);
}

Test(audio, wav_pcm24_decodes_to_int_over_2_pow_23_exactly)
{
    check_pcm32("a24.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 24);
}

Test(audio, wav_pcm32_decodes_to_int_over_2_pow_31)
{
    check_pcm32("a32.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_32, 32);
}

Test(audio, flac_pcm24_decodes_losslessly)
{
    check_pcm32("a24.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 24);
}

Test(audio, aiff_pcm24_decodes_exactly)
{
    check_pcm32("a24.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_24, 24);
}

Test(audio, wav_float_passes_through_bit_exact)
{
    ws_rng r = {3};
    float x[PCM_FRAMES];
    for (int i = 0; i < PCM_FRAMES; i++)
        x[i] = (float)(2.5 * ws_rng_uniform(&r) - 1.25); /* beyond [-1, 1]: not clipped */
    const char *path = tmp_path("f.wav");
    write_float(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, WS_SAMPLE_RATE, 1, x, PCM_FRAMES);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.n, PCM_FRAMES);
    cr_assert_eq(memcmp(a.x, x, sizeof x), 0, "float samples changed");
    ws_audio_free(&a);
}

Test(audio, float_wav_with_nan_is_refused)
{
    float x[100] = {0};
    x[37] = NAN;
    const char *path = tmp_path("nan.wav");
    write_float(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, WS_SAMPLE_RATE, 1, x, 100);
    assert_load_fails(path, "frame 37 is not a finite number");
}

/* Lossy codecs: a two-tone signal at 16 kHz (or 48 kHz for Opus, which then is
 * resampled too). libsndfile 1.2.0's default encoder settings give -30.8 dB
 * (Vorbis), -32.0/-40.4 dB (Opus 16k/48k), -38.5 dB (MP3) against the analytic
 * signal; the bound, rel. L2 <= 0.1 (-20 dB), leaves room for other encoder
 * versions, while one sample of misalignment alone costs about -8 dB at 1 kHz. */
#define LOSSY_REL_L2 0.1

static void check_lossy(const char *name, int format, int rate)
{
    SF_INFO probe = {.samplerate = rate, .channels = 1, .format = format};
    if (!sf_format_check(&probe))
        cr_skip_test("this libsndfile cannot write %s (format 0x%x)", name, format);
    tones t = {.f = {437.1, 1009.3}, .a = {0.4, 0.3}, .p = {0.2, 1.0}, .n = 2};
    sf_count_t frames = 2 * (sf_count_t)rate;
    float *x = sample_tones(&t, rate, frames);
    const char *path = tmp_path(name);
    write_float(path, format, rate, 1, x, frames);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.src_rate, rate);
    cr_assert_eq(a.n, 2 * WS_SAMPLE_RATE, "%s: %zu samples, want 2 s", name, a.n);
    double e = tone_error(&a, &t, 0.25, 1.75, NULL);
    cr_assert_leq(e, LOSSY_REL_L2, "%s: rel. L2 error %.3g (%.1f dB)", name, e, 20 * log10(e));
    ws_audio_free(&a);
    free(x);
}

Test(audio, ogg_vorbis_decodes_aligned_and_close_to_source)
{
    check_lossy("a.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, WS_SAMPLE_RATE);
}

Test(audio, opus_at_48k_decodes_and_resamples_aligned)
{
    /* libsndfile writes Opus only at 8, 12, 16, 24 and 48 kHz. */
    check_lossy("a.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000);
}

Test(audio, mp3_decodes_aligned_and_close_to_source)
{
    check_lossy("a.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, WS_SAMPLE_RATE);
}

/* --- channels ------------------------------------------------------------ */

/* y = (sum_c x_c) / C in double, rounded once to float: the test does the same
 * arithmetic, so the comparison is equality. */
static void check_average(int channels)
{
    short *s = random_shorts((size_t)PCM_FRAMES * channels, 10 + (uint64_t)channels);
    const char *path = tmp_path("multi.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, channels, s, PCM_FRAMES);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.src_channels, channels);
    cr_assert_eq(a.n, PCM_FRAMES);
    for (int t = 0; t < PCM_FRAMES; t++) {
        double sum = 0;
        for (int c = 0; c < channels; c++)
            sum += s[t * channels + c] / 32768.0;
        float want = (float)(sum / channels);
        cr_assert_eq(a.x[t], want, "frame %d: got %.9g want %.9g", t, (double)a.x[t], (double)want);
    }
    ws_audio_free(&a);
    free(s);
}

Test(audio, stereo_is_averaged_exactly)
{
    check_average(2);
}

Test(audio, six_channels_are_averaged_exactly)
{
    check_average(6);
}

/* 2^24 + 1000 frames: the 16 kHz output grows many times (by half its capacity, at
 * least GROW_BYTES at a time: src/audio/outbuf.c). 8-bit PCM keeps the file at 17 MB;
 * values are multiples of 256, so x / 32768 stays exact. */
Test(audio, long_file_grows_its_buffer_past_the_first_allocation)
{
    const sf_count_t frames = ((sf_count_t)1 << 24) + 1000;
    const char *path = tmp_path("long.wav");
    SNDFILE *f = open_write(path, SF_FORMAT_WAV | SF_FORMAT_PCM_U8, WS_SAMPLE_RATE, 1);
    short blk[4096];
    for (sf_count_t t = 0; t < frames; t += 4096) {
        sf_count_t k = frames - t < 4096 ? frames - t : 4096;
        for (sf_count_t i = 0; i < k; i++)
            blk[i] = (short)((((t + i) * 7) % 255 - 127) * 256);
        cr_assert_eq(sf_writef_short(f, blk, k), k);
    }
    sf_close(f);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.n, (size_t)frames);
    for (size_t i = 0; i < a.n; i += 4099)
        cr_assert_eq(a.x[i], (float)((long long)(i * 7 % 255) - 127) / 128.0f, "[%zu]", i);
    cr_assert_eq(a.x[a.n - 1], (float)((long long)((a.n - 1) * 7 % 255) - 127) / 128.0f);
    ws_audio_free(&a);
}

Test(audio, opposite_stereo_channels_cancel_to_silence)
{
    short s[2 * 500];
    for (int i = 0; i < 500; i++) {
        s[2 * i] = (short)(i * 37 % 20000 - 10000);
        s[2 * i + 1] = (short)-s[2 * i];
    }
    const char *path = tmp_path("cancel.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 2, s, 500);
    ws_audio a;
    load_ok(&a, path);
    for (size_t i = 0; i < a.n; i++)
        cr_assert_eq(a.x[i], 0.0f);
    ws_audio_free(&a);
}

/* --- resampling ---------------------------------------------------------- */

/* A 3 s float WAV at `rate`, multi-tone below 0.9 x the lower Nyquist, through
 * the whole loader, against the analytic signal at 16 kHz over 0.5 .. 2.5 s.
 * bench-resample measures -149.7 .. -151.6 dB (max |err| <= 6.6e-8): float32
 * rounding of input and output. The bound, 1e-6 (-120 dB) relative and 1e-6
 * absolute, is 30x that and 1000x tighter than any misalignment or roll-off
 * (soxr's default roll-off alone gives -72 dB). */
#define RESAMPLE_REL_L2 1e-6
#define RESAMPLE_MAX_ABS 1e-6

static void check_resample(int rate)
{
    tones t = band_tones(rate);
    sf_count_t frames = 3 * (sf_count_t)rate;
    float *x = sample_tones(&t, rate, frames);
    const char *path = tmp_path("tones.wav");
    write_float(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, rate, 1, x, frames);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.src_rate, rate);
    cr_assert_eq(a.n, 3 * WS_SAMPLE_RATE, "%d Hz: %zu samples", rate, a.n);
    double maxerr, e = tone_error(&a, &t, 0.5, 2.5, &maxerr);
    cr_assert_leq(e, RESAMPLE_REL_L2, "%d Hz: rel. L2 %.3g (%.1f dB)", rate, e, 20 * log10(e));
    cr_assert_leq(maxerr, RESAMPLE_MAX_ABS, "%d Hz: max |err| %.3g", rate, maxerr);
    ws_audio_free(&a);
    free(x);
}

Test(audio, resamples_44100_to_16k_within_minus_120_db)
{
    check_resample(44100);
}

Test(audio, resamples_48000_to_16k_within_minus_120_db)
{
    check_resample(48000);
}

Test(audio, resamples_22050_to_16k_within_minus_120_db)
{
    check_resample(22050);
}

Test(audio, resamples_8000_to_16k_within_minus_120_db)
{
    check_resample(8000);
}

/* Downsampling removes what 16 kHz cannot hold: tones at 9, 12 and 15 kHz in
 * 44.1 kHz input leave < -100 dB (bench: -157 dB). */
Test(audio, resampling_removes_tones_above_8k)
{
    tones t = {.f = {9000, 12000, 15000}, .a = {0.3, 0.3, 0.3}, .p = {0, 1, 2}, .n = 3};
    float *x = sample_tones(&t, 44100, 3 * 44100);
    float *y;
    size_t ny;
    ws_err err;
    cr_assert_eq(ws_resample(x, 3 * 44100, 44100, 16000, &y, &ny, &err), 0, "%s", err.msg);
    double e2 = 0;
    for (size_t i = 8000; i < ny - 8000; i++)
        e2 += (double)y[i] * y[i];
    double db = 10 * log10(e2 / (double)(ny - 16000) / (3 * 0.3 * 0.3 / 2));
    cr_assert_lt(db, -100.0, "residual %.1f dB", db);
    free(y);
    free(x);
}

Test(audio, resampled_length_is_rounded_ratio)
{
    static const double rates[] = {44100, 48000, 22050, 8000, 32000, 11025, 96000, 12345};
    float x[3001];
    for (int i = 0; i < 3001; i++)
        x[i] = 0.25f;
    for (int r = 0; r < 8; r++)
        for (size_t n = 1; n <= 3001; n += (n < 64 ? 1 : 97)) {
            float *y;
            size_t ny;
            ws_err err;
            cr_assert_eq(ws_resample(x, n, rates[r], 16000, &y, &ny, &err), 0, "%s", err.msg);
            /* round half up; 32000 Hz with odd n hits the halves */
            size_t want = (size_t)floor((double)n * 16000 / rates[r] + 0.5);
            cr_assert_eq(ny, want, "%g Hz, n %zu: %zu samples, want %zu", rates[r], n, ny, want);
            free(y);
        }
}

Test(audio, resample_at_equal_rates_copies_bit_exact)
{
    float x[5] = {0.1f, -0.2f, 1e-30f, 3.5f, -1.0f}, *y;
    size_t ny;
    ws_err err;
    cr_assert_eq(ws_resample(x, 5, 16000, 16000, &y, &ny, &err), 0);
    cr_assert_eq(ny, 5);
    cr_assert_eq(memcmp(x, y, sizeof x), 0);
    free(y);
}

Test(audio, resample_of_nothing_is_nothing)
{
    float *y = (float *)&y;
    size_t ny = 7;
    ws_err err;
    cr_assert_eq(ws_resample(NULL, 0, 44100, 16000, &y, &ny, &err), 0);
    cr_assert_null(y);
    cr_assert_eq(ny, 0);
}

Test(audio, resample_refuses_invalid_rates)
{
    float x[4] = {0}, *y;
    size_t ny;
    ws_err err = {{0}};
    cr_assert_eq(ws_resample(x, 4, 0, 16000, &y, &ny, &err), -1);
    cr_assert_not_null(strstr(err.msg, "invalid rates"), "%s", err.msg);
    cr_assert_eq(ws_resample(x, 4, NAN, 16000, &y, &ny, &err), -1);
}

/* --- 16 kHz passthrough and standard input ------------------------------- */

/* Our own reading of a 16-bit mono WAV: the data chunk's int16 values. */
static short *parse_wav16(const char *path, size_t *n)
{
    size_t len;
    unsigned char *p = read_file(path, &len);
    cr_assert_not_null(p, "cannot read %s", path);
    cr_assert(len >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WAVE", 4));
    size_t off = 12;
    while (off + 8 <= len) {
        uint32_t size =
            p[off + 4] | p[off + 5] << 8 | p[off + 6] << 16 | (uint32_t)p[off + 7] << 24;
        if (!memcmp(p + off, "fmt ", 4)) {
            const unsigned char *f = p + off + 8;
            cr_assert_eq(f[0] | f[1] << 8, 1, "not PCM");
            cr_assert_eq(f[2] | f[3] << 8, 1, "not mono");
            cr_assert_eq(f[4] | f[5] << 8 | f[6] << 16, 16000, "not 16 kHz");
            cr_assert_eq(f[14] | f[15] << 8, 16, "not 16-bit");
        }
        if (!memcmp(p + off, "data", 4)) {
            cr_assert_leq(off + 8 + size, len);
            *n = size / 2;
            short *s = malloc(*n * sizeof *s);
            for (size_t i = 0; i < *n; i++)
                s[i] = (short)(p[off + 8 + 2 * i] | p[off + 9 + 2 * i] << 8);
            free(p);
            return s;
        }
        off += 8 + size + (size & 1);
    }
    cr_assert_fail("%s: no data chunk", path);
    return NULL;
}

Test(audio, jfk_passes_through_bit_exact)
{
    size_t n;
    short *s = parse_wav16(jfk_path(), &n);
    ws_audio a;
    load_ok(&a, jfk_path());
    cr_assert_eq(a.src_rate, 16000);
    cr_assert_eq(a.src_channels, 1);
    cr_assert_eq(a.n, n);
    cr_assert_eq(n, 176000, "jfk.wav is 11 s at 16 kHz");
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(a.x[i], s[i] / 32768.0f, "[%zu]: got %.9g want %d/32768", i, (double)a.x[i],
                     s[i]);
    ws_audio_free(&a);
    free(s);
}

/* 16-bit PCM is read as libsndfile's shorts and made float here: the same floats as
 * libsndfile's normalised float read, in every byte order and container, through the
 * channel mean and the resampler alike. */
Test(audio, pcm16_decodes_as_libsndfiles_floats)
{
    const struct { const char *name; int format, rate, channels; } kinds[] = {
        {"p16_le_mono.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1},
        {"p16_be_mono.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16 | SF_ENDIAN_BIG, 16000, 1},
        {"p16_stereo.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16, 16000, 2},
        {"p16_44k.w64", SF_FORMAT_W64 | SF_FORMAT_PCM_16, 44100, 2},
        {"p16_8k_3ch.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 8000, 3},
    };
    const sf_count_t frames = 100003; /* over a read chunk, and odd */
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const int ch = kinds[k].channels;
        short *x = random_shorts((size_t)frames * (size_t)ch, 40 + (unsigned)k);
        x[0] = -32768; /* both extremes */
        x[1] = 32767;
        const char *path = tmp_path(kinds[k].name);
        write_short(path, kinds[k].format, kinds[k].rate, ch, x, frames);
        /* libsndfile's floats, then the in-memory path (pcm.c: the file's bits) */
        SF_INFO info = {0};
        SNDFILE *f = sf_open(path, SFM_READ, &info);
        cr_assert_not_null(f, "%s: %s", path, sf_strerror(NULL));
        sf_command(f, SFC_SET_NORM_FLOAT, NULL, SF_TRUE);
        float *want = malloc((size_t)frames * (size_t)ch * sizeof *want);
        cr_assert_not_null(want);
        cr_assert_eq(sf_readf_float(f, want, frames), frames);
        sf_close(f);
        ws_audio a, b;
        ws_err err = {{0}};
        load_ok(&a, path);
        cr_assert_eq(ws_audio_from_pcm(&b, want, (size_t)frames, kinds[k].rate, ch, path, &err), 0,
                     "%s", err.msg);
        cr_assert_eq(a.n, b.n, "%s: %zu samples, %zu from libsndfile's floats", path, a.n, b.n);
        for (size_t i = 0; i < a.n; i++)
            cr_assert_eq(a.x[i], b.x[i], "%s [%zu]: %.9g, libsndfile's floats give %.9g", path, i,
                         (double)a.x[i], (double)b.x[i]);
        ws_audio_free(&a);
        ws_audio_free(&b);
        free(want);
        free(x);
    }
}

Test(audio, stdin_pipe_decodes_like_the_file)
{
    size_t len;
    unsigned char *bytes = read_file(jfk_path(), &len);
    cr_assert_not_null(bytes);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) { /* writer: more than a pipe buffer, so the reader really streams */
        close(p[0]);
        size_t off = 0;
        while (off < len) {
            ssize_t w = write(p[1], bytes + off, len - off);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(p[1]);
    int saved = dup(STDIN_FILENO);
    cr_assert_geq(saved, 0);
    cr_assert_eq(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
    close(p[0]);

    ws_audio a, b;
    ws_err err = {{0}};
    int rc = ws_audio_load(&a, "-", &err);

    dup2(saved, STDIN_FILENO);
    close(saved);
    int st;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pipe writer failed");
    cr_assert_eq(rc, 0, "stdin: %s", err.msg);

    load_ok(&b, jfk_path());
    cr_assert_eq(a.n, b.n);
    cr_assert_eq(memcmp(a.x, b.x, a.n * sizeof *a.x), 0, "stdin and file differ");
    ws_audio_free(&a);
    ws_audio_free(&b);
    free(bytes);
}

Test(audio, stdin_garbage_error_names_stdin)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "not audio at all", 16), 16);
    close(p[1]);
    int saved = dup(STDIN_FILENO);
    dup2(p[0], STDIN_FILENO);
    close(p[0]);
    ws_audio a;
    ws_err err = {{0}};
    int rc = ws_audio_load(&a, "-", &err);
    dup2(saved, STDIN_FILENO);
    close(saved);
    cr_assert_eq(rc, -1);
    cr_assert_eq(strncmp(err.msg, "<stdin>: ", 9), 0, "%s", err.msg);
}

Test(audio, memory_loader_names_its_buffer)
{
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_memory(&a, "RIFF", 4, "clip-7", &err), -1);
    cr_assert_eq(strncmp(err.msg, "clip-7: ", 8), 0, "%s", err.msg);
}

/* --- empty, hostile and truncated files ---------------------------------- */

Test(audio, zero_frame_wav_gives_no_samples)
{
    const char *path = tmp_path("empty.wav");
    short none[1];
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, 44100, 2, none, 0);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.n, 0);
    cr_assert_null(a.x);
    cr_assert_eq(a.src_rate, 44100);
    cr_assert_eq(a.src_channels, 2);
    ws_audio_free(&a);
}

Test(audio, empty_file_is_refused_with_libsndfile_reason)
{
    const char *path = tmp_path("zero.wav");
    write_bytes(path, "", 0);
    assert_load_fails(path, "libsndfile: ");
    assert_load_fails(path, "empty file");
}

Test(audio, garbage_is_refused_as_not_audio)
{
    unsigned char junk[4096];
    ws_rng r = {99};
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)ws_rng_next(&r);
    const char *path = tmp_path("junk.wav");
    write_bytes(path, junk, sizeof junk);
    assert_load_fails(path, "not a recognised audio file (libsndfile: ");
}

Test(audio, truncated_header_is_refused)
{
    short s[100] = {0};
    const char *path = tmp_path("hdr.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, 100);
    truncate_to(path, 20); /* inside the fmt chunk */
    assert_load_fails(path, "malformed or truncated: a chunk at byte 12 claims 16 bytes, past "
                            "the end of the file (20 bytes), before any data chunk");
}

/* A LIST chunk before the audio that claims more than the file holds: refused before
 * libsndfile sees it (libsndfile 1.2.0 loops forever on this 177-byte file, found by
 * fuzzing: tests/fuzz/corpus/audio_av/hang-libsndfile-list-chunk-past-the-end). */
Test(audio, a_chunk_past_the_end_before_the_audio_is_refused, .timeout = 10)
{
    static const unsigned char wav[] = {
        'R', 'I', 'F', 'F', 0xc6, 0x0c, 0, 0, 'W', 'A', 'V', 'E', 'f', 'm', 't', ' ', 16, 0, 0, 0,
        1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x40, 0x1f, 0, 0, 1, 0, 8, 0, 'L', 'I', 'S', 'T', 0x1a,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const char *path = tmp_path("list.wav");
    write_bytes(path, wav, sizeof wav);
    assert_load_fails(path, "malformed or truncated: a chunk at byte 36 claims 4294967066 bytes");
}

/* A WAV cut short keeps its header's data size: libsndfile alone would shorten
 * it silently. */
Test(audio, wav_data_chunk_longer_than_file_is_refused)
{
    short *s = random_shorts(16000, 5);
    const char *path = tmp_path("cut.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, 16000);
    truncate_to(path, file_size(path) * 6 / 10);
    assert_load_fails(path, "truncated: the data chunk declares 32000 bytes");
    free(s);
}

Test(audio, aiff_sound_chunk_longer_than_file_is_refused)
{
    short *s = random_shorts(16000, 6);
    const char *path = tmp_path("cut.aiff");
    write_short(path, SF_FORMAT_AIFF | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, 16000);
    truncate_to(path, file_size(path) / 2);
    assert_load_fails(path, "truncated: the SSND chunk");
    free(s);
}

Test(audio, rf64_data_longer_than_file_is_refused)
{
    short *s = random_shorts(16000, 7);
    const char *path = tmp_path("cut.rf64");
    write_short(path, SF_FORMAT_RF64 | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, 16000);
    truncate_to(path, file_size(path) / 2);
    assert_load_fails(path, "truncated: the data chunk declares 32000 bytes");
    free(s);
}

Test(audio, w64_data_longer_than_file_is_refused)
{
    float x[4000] = {0};
    const char *path = tmp_path("cut.w64");
    write_float(path, SF_FORMAT_W64 | SF_FORMAT_FLOAT, WS_SAMPLE_RATE, 1, x, 4000);
    truncate_to(path, file_size(path) / 2);
    assert_load_fails(path, "truncated: the data chunk declares 16000 bytes");
}

Test(audio, truncated_flac_is_refused)
{
    short *s = random_shorts(48000, 8);
    const char *path = tmp_path("cut.flac");
    write_short(path, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, 48000);
    truncate_to(path, file_size(path) * 6 / 10);
    assert_load_fails(path, "truncated: the header promises 48000 frames");
    free(s);
}

Test(audio, truncated_ogg_vorbis_is_refused)
{
    tones t = {.f = {437.1}, .a = {0.5}, .p = {0}, .n = 1};
    float *x = sample_tones(&t, WS_SAMPLE_RATE, 48000);
    const char *path = tmp_path("cut.ogg");
    write_float(path, SF_FORMAT_OGG | SF_FORMAT_VORBIS, WS_SAMPLE_RATE, 1, x, 48000);
    truncate_to(path, file_size(path) * 6 / 10);
    assert_load_fails(path, "truncated");
    free(x);
}

/* What a writer that streams to a pipe leaves (ffmpeg -f wav -): RIFF and data
 * sizes 0xFFFFFFFF, meaning "to the end of the file". */
Test(audio, streamed_wav_with_placeholder_sizes_is_accepted)
{
    short *s = random_shorts(1000, 9);
    const char *path = tmp_path("stream.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, 1000);
    size_t len;
    unsigned char *p = read_file(path, &len);
    cr_assert(len == 44 + 2000 && !memcmp(p + 36, "data", 4), "unexpected WAV layout");
    memset(p + 4, 0xFF, 4);
    memset(p + 40, 0xFF, 4);
    write_bytes(path, p, len);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.n, 1000);
    for (size_t i = 0; i < a.n; i++)
        cr_assert_eq(a.x[i], s[i] / 32768.0f);
    ws_audio_free(&a);
    free(p);
    free(s);
}

Test(audio, missing_file_is_refused_with_the_system_reason)
{
    assert_load_fails("/nonexistent/dir/in.wav", "cannot open: No such file or directory");
}

Test(audio, directory_is_refused)
{
    const char *dir = test_tmpdir();
    assert_load_fails(dir, "is a directory");
}

Test(audio, free_is_null_safe_and_zeroes)
{
    ws_audio_free(NULL);
    ws_audio a = {.x = malloc(4), .n = 1, .src_rate = 5, .src_channels = 2};
    ws_audio_free(&a);
    cr_assert_null(a.x);
    cr_assert_eq(a.n, 0);
    cr_assert_eq(a.src_rate, 0);
}

/* Hostile headers: every prefix of a WAV and FLAC file, and 300 random byte
 * mutations of their first 64 bytes, load or fail cleanly (run under ASan by
 * `make asan`). A prefix cut inside the audio data must fail. */
static void check_mangled(const char *name, int format)
{
    short *s = random_shorts(2000, 21);
    const char *path = tmp_path(name);
    write_short(path, format, WS_SAMPLE_RATE, 1, s, 2000);
    size_t len;
    unsigned char *p = read_file(path, &len);
    cr_assert_not_null(p);
    ws_audio a;
    ws_err err;
    for (size_t cut = 0; cut < len; cut += (cut < 256 ? 1 : 61)) {
        int rc = ws_audio_load_memory(&a, p, cut, name, &err);
        cr_assert_eq(rc, -1, "%s cut at %zu of %zu bytes loaded %zu samples", name, cut, len, a.n);
        cr_assert_eq(strncmp(err.msg, name, strlen(name)), 0, "%s", err.msg);
    }
    unsigned char *q = malloc(len);
    ws_rng r = {22};
    for (int k = 0; k < 300; k++) {
        memcpy(q, p, len);
        for (int j = 0; j < 4; j++)
            q[ws_rng_next(&r) % 64] = (unsigned char)ws_rng_next(&r);
        if (ws_audio_load_memory(&a, q, len, name, &err) == 0) {
            cr_assert(a.n == 0 || a.x != NULL);
            ws_audio_free(&a);
        } else {
            cr_assert_eq(strncmp(err.msg, name, strlen(name)), 0, "%s", err.msg);
        }
    }
    free(q);
    free(p);
    free(s);
}

Test(audio, mangled_wav_headers_fail_cleanly)
{
    check_mangled("m.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16);
}

Test(audio, mangled_flac_headers_fail_cleanly)
{
    check_mangled("m.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
}

/* --- container walks that must end (handcrafted headers) ------------------ */

/* A little byte builder for headers. */
typedef struct {
    unsigned char b[512];
    size_t n;
} bytes;

static void put(bytes *h, const void *p, size_t n)
{
    cr_assert_leq(h->n + n, sizeof h->b);
    memcpy(h->b + h->n, p, n);
    h->n += n;
}

static void put_le(bytes *h, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        h->b[h->n++] = i < 8 ? (unsigned char)(v >> (8 * i)) : 0;
}

static void put_be(bytes *h, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--)
        h->b[h->n++] = i < 8 ? (unsigned char)(v >> (8 * i)) : 0;
}

static const unsigned char W64_RIFF_ID[16] = {'r',  'i',  'f',  'f',  0x2E, 0x91, 0xCF, 0x11,
                                              0xA5, 0xD6, 0x28, 0xDB, 0x04, 0xC1, 0x00, 0x00};
static const unsigned char W64_WAVE_ID[16] = {'w',  'a',  'v',  'e',  0xF3, 0xAC, 0xD3, 0x11,
                                              0x8C, 0xD1, 0x00, 0xC0, 0x4F, 0x8E, 0xDB, 0x8A};
/* "fmt ", "data" and a chunk nobody knows share the GUID tail of "wave". */
static void put_w64_id(bytes *h, const char *fourcc)
{
    put(h, fourcc, 4);
    put(h, W64_WAVE_ID + 4, 12);
}

/* 16 kHz mono 16-bit PCM format bodies. */
static void put_fmt_body(bytes *h, int le)
{
    void (*w)(bytes *, uint64_t, int) = le ? put_le : put_be;
    w(h, 1, 2), w(h, 1, 2), w(h, 16000, 4), w(h, 32000, 4), w(h, 2, 2), w(h, 16, 2);
}

/* Wave64 up to and including its fmt chunk (80 bytes). */
static void put_w64_head(bytes *h, uint64_t riff_size)
{
    put(h, W64_RIFF_ID, 16);
    put_le(h, riff_size, 8);
    put(h, W64_WAVE_ID, 16);
    put_w64_id(h, "fmt ");
    put_le(h, 24 + 16, 8);
    put_fmt_body(h, 1);
}

/* Loads a file of these bytes; returns the load's status, the message in *err. */
static int load_bytes(const char *name, const bytes *h, ws_err *err)
{
    const char *path = tmp_path(name);
    write_bytes(path, h->b, h->n);
    ws_audio a;
    int rc = ws_audio_load(&a, path, err);
    if (rc == 0)
        ws_audio_free(&a);
    else
        cr_assert_eq(strncmp(err->msg, path, strlen(path)), 0, "%s", err->msg);
    return rc;
}

/* The audit's case: 142 bytes whose second chunk declares 2^64 - 1 bytes. Its
 * 8-byte rounding wrapped to a step of 0 and the walk spun forever. */
Test(audio, w64_chunk_of_size_2_pow_64_minus_1_does_not_hang, .timeout = 10)
{
    bytes h = {.n = 0};
    put_w64_head(&h, 142);
    put_w64_id(&h, "junk");
    put_le(&h, UINT64_MAX, 8);
    while (h.n < 142)
        h.b[h.n++] = 0;
    ws_err err = {{0}};
    cr_assert_eq(load_bytes("hang.w64", &h, &err), -1);
    cr_assert_not_null(strstr(err.msg, "malformed or truncated Wave64: a chunk at byte 80 "
                                       "claims 18446744073709551615 bytes"), "%s", err.msg);
}

/* Every size near 2^64 in a Wave64 chunk before the data ends the walk (what
 * libsndfile then makes of the file is its call). */
Test(audio, w64_sizes_near_2_pow_64_end_the_walk, .timeout = 10)
{
    static const uint64_t sizes[] = {UINT64_MAX - 6, UINT64_MAX - 7, UINT64_MAX - 8,
                                     (uint64_t)1 << 63, ((uint64_t)1 << 63) - 1, 23, 0};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        bytes h = {.n = 0};
        put_w64_head(&h, 200);
        put_w64_id(&h, "junk");
        put_le(&h, sizes[i], 8);
        put_w64_id(&h, "data");
        put_le(&h, 24 + 8, 8);
        put_le(&h, 0x0102030405060708u, 8);
        ws_err err = {{0}};
        load_bytes("big.w64", &h, &err); /* loaded or refused with a message: it returns */
    }
}

/* A data chunk of 2^64 - 1 bytes is the placeholder of a writer that could not
 * seek back (any size >= 2^62): the data runs to the end. One that is smaller
 * than its own header is malformed. */
Test(audio, w64_data_size_placeholders_read_to_the_end, .timeout = 10)
{
    bytes h = {.n = 0};
    put_w64_head(&h, UINT64_MAX);
    put_w64_id(&h, "data");
    put_le(&h, UINT64_MAX, 8);
    for (int i = 0; i < 8; i++)
        put_le(&h, (uint64_t)(1000 * i), 2);
    const char *path = tmp_path("stream.w64");
    write_bytes(path, h.b, h.n);
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(a.n, 8);
    cr_assert_eq(a.x[7], 7000 / 32768.0f);
    ws_audio_free(&a);

    h.n -= 8 * 2 + 8;
    put_le(&h, 23, 8);
    write_bytes(path, h.b, h.n);
    assert_load_fails(path, "malformed Wave64: the data chunk's size 23 is smaller than its");
}

/* RIFF, RIFX, RF64 and AIFF: a chunk of 0xFFFFFFFF bytes before the audio, and
 * the largest sizes in the audio chunk, give an answer (32-bit sizes cannot
 * stop the walk, but the RF64 data size is 64-bit). */
static void put_riff_head(bytes *h, const char *magic, int le)
{
    void (*w)(bytes *, uint64_t, int) = le ? put_le : put_be;
    put(h, magic, 4);
    w(h, 0xFFFFFFFFu, 4);
    put(h, "WAVE", 4);
    put(h, "fmt ", 4);
    w(h, 16, 4);
    put_fmt_body(h, le);
}

Test(audio, riff_rifx_and_aiff_huge_chunks_end_the_walk, .timeout = 10)
{
    ws_err err;
    for (int form = 0; form < 3; form++) {
        int le = form == 0;
        bytes h = {.n = 0};
        if (form < 2) {
            put_riff_head(&h, le ? "RIFF" : "RIFX", le);
        } else {
            put(&h, "FORM", 4), put_be(&h, 0xFFFFFFFFu, 4), put(&h, "AIFF", 4);
            put(&h, "COMM", 4), put_be(&h, 18, 4), put_be(&h, 1, 2), put_be(&h, 4, 4);
            put_be(&h, 16, 2), put_be(&h, 0x400CFA00, 4), put_be(&h, 0, 6); /* 16000.0 */
        }
        void (*w)(bytes *, uint64_t, int) = le ? put_le : put_be;
        size_t junk = h.n;
        put(&h, "junk", 4), w(&h, 0xFFFFFFFFu, 4);
        put(&h, form < 2 ? "data" : "SSND", 4), w(&h, 0xFFFFFFFFu, 4), put_le(&h, 0, 16);
        cr_assert_eq(load_bytes("big.wav", &h, &err), -1, "form %d: huge junk chunk loaded",
                     form);
        h.n = junk; /* the audio chunk with each size near 2^32 */
        static const uint32_t sizes[] = {0xFFFFFFFFu, 0xFFFFFFFEu, 0x80000000u, 0x7FFFFFFFu};
        for (size_t i = 0; i < 4; i++) {
            bytes g = h;
            put(&g, form < 2 ? "data" : "SSND", 4), w(&g, sizes[i], 4), put_le(&g, 0, 16);
            load_bytes("big.wav", &g, &err); /* either way, it returns */
        }
    }
}

static void put_rf64_head(bytes *h, uint64_t ds64_data)
{
    put(h, "RF64", 4), put_le(h, 0xFFFFFFFFu, 4), put(h, "WAVE", 4);
    put(h, "ds64", 4), put_le(h, 28, 4);
    put_le(h, 0, 8), put_le(h, ds64_data, 8), put_le(h, 0, 8), put_le(h, 0, 4);
    put(h, "fmt ", 4), put_le(h, 16, 4);
    put_fmt_body(h, 1);
}

Test(audio, rf64_huge_sizes_end_the_walk, .timeout = 10)
{
    static const uint64_t sizes[] = {UINT64_MAX, (uint64_t)1 << 62, ((uint64_t)1 << 62) - 1, 0,
                                     17};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        bytes h = {.n = 0};
        put_rf64_head(&h, sizes[i]);
        put(&h, "junk", 4), put_le(&h, 0xFFFFFFFFu, 4);
        ws_err err;
        cr_assert_eq(load_bytes("big.rf64", &h, &err), -1);
        h.n -= 8;
        put(&h, "data", 4), put_le(&h, 0xFFFFFFFFu, 4);
        for (int k = 0; k < 8; k++)
            put_le(&h, (uint64_t)(k + 1), 2);
        int rc = load_bytes("big.rf64", &h, &err);
        if (sizes[i] == ((uint64_t)1 << 62) - 1 || sizes[i] == 17)
            cr_assert(rc == -1 && strstr(err.msg, "truncated"), "ds64 %llu: %s",
                      (unsigned long long)sizes[i], rc ? err.msg : "loaded");
        else /* 0 and >= 2^62: never filled in, the data runs to the end */
            cr_assert_eq(rc, 0, "ds64 %llu: %s", (unsigned long long)sizes[i], err.msg);
    }
}

/* --- regular files are read, not mapped ------------------------------------ */

/* A seam: the loader's call into libsndfile comes here first, so that a test can
 * act between the loader's open of the file and the decode. Symbol
 * interposition: this definition, in the test program, wins over libsndfile's. */
static const char *g_shrink_path;  /* truncated to g_shrink_to bytes on the call */
static off_t g_shrink_to;
static const char *g_mapped_path;  /* is it in /proc/self/maps at the call? */
static int g_was_mapped = -1;

static int path_is_mapped(const char *path)
{
    char real[4096], line[8192];
    cr_assert_not_null(realpath(path, real));
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, real))
            found = 1;
    fclose(f);
    return found;
}

static int g_widen_failed_open; /* yields after an open that failed (set before threads start) */
static SNDFILE *(*g_real_open)(SF_VIRTUAL_IO *, int, SF_INFO *, void *);
static pthread_once_t g_real_open_once = PTHREAD_ONCE_INIT;

static void find_real_open(void)
{
    *(void **)&g_real_open = dlsym(RTLD_NEXT, "sf_open_virtual");
}

SNDFILE *sf_open_virtual(SF_VIRTUAL_IO *vio, int mode, SF_INFO *info, void *user)
{
    pthread_once(&g_real_open_once, find_real_open);
    if (g_shrink_path)
        cr_assert_eq(truncate(g_shrink_path, g_shrink_to), 0);
    if (g_mapped_path)
        g_was_mapped = path_is_mapped(g_mapped_path);
    SNDFILE *f = g_real_open(vio, mode, info, user);
    /* Other threads run between the failure and the caller's look at its reason, as a
     * busy machine would let them: their opens must not change that reason. */
    for (int i = 0; !f && i < g_widen_failed_open; i++)
        sched_yield();
    return f;
}

/* libsndfile keeps the reason an open failed in one process-wide variable: loads on
 * several threads at once must still each report their own file's reason. 8 threads
 * open 100 broken files each, two kinds alternating (not audio at all; a WAV whose
 * header says 0 channels), all at once; every message must name its file and give that
 * kind's reason. */
#define RACE_THREADS 8
#define RACE_FILES 100

typedef struct {
    int id;
    pthread_barrier_t *go;
    int wrong;
    char first_wrong[1200 + 32 + WS_ERR_LEN];
} race_job;

static const char *const RACE_REASON[2] = {"(libsndfile: Format not recognised.;",
                                           "(libsndfile: Channel count is zero.)"};

static char race_dir[600]; /* one directory for all of them */

static void race_path(char *out, size_t cap, int thread, int i)
{
    snprintf(out, cap, "%s/race-%d-%d.wav", race_dir, thread, i);
}

static void *race_loader(void *p)
{
    race_job *j = p;
    pthread_barrier_wait(j->go);
    for (int i = 0; i < RACE_FILES; i++) {
        char path[1200];
        race_path(path, sizeof path, j->id, i);
        ws_audio a;
        ws_err err = {{0}};
        int rc = ws_audio_load(&a, path, &err);
        if (rc != -1 || strncmp(err.msg, path, strlen(path)) ||
            !strstr(err.msg, RACE_REASON[(i + j->id) % 2])) {
            if (!j->wrong++)
                snprintf(j->first_wrong, sizeof j->first_wrong, "%s (rc %d): %s", path, rc,
                         err.msg);
            ws_audio_free(&a);
        }
    }
    return NULL;
}

Test(audio, failed_opens_on_many_threads_each_give_their_own_reason, .timeout = 60)
{
    unsigned char junk[512], wav[44 + 64] = {0};
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 37 + 11);
    /* RIFF/WAVE, a 16-byte fmt chunk of PCM, 0 channels, 16 kHz, 16 bits; 64 data bytes */
    memcpy(wav, "RIFF", 4);
    wav[4] = sizeof wav - 8;
    memcpy(wav + 8, "WAVEfmt ", 8);
    wav[16] = 16;
    wav[20] = 1;                                          /* PCM */
    wav[24] = 0x80, wav[25] = 0x3e;                       /* 16000 */
    wav[34] = 16;                                         /* bits */
    memcpy(wav + 36, "data", 4);
    wav[40] = 64;
    snprintf(race_dir, sizeof race_dir, "%s", test_tmpdir());
    for (int t = 0; t < RACE_THREADS; t++)
        for (int i = 0; i < RACE_FILES; i++) {
            char path[1200];
            race_path(path, sizeof path, t, i);
            if ((i + t) % 2)
                write_bytes(path, wav, sizeof wav);
            else
                write_bytes(path, junk, sizeof junk);
        }
    g_widen_failed_open = 20;
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, RACE_THREADS);
    race_job j[RACE_THREADS];
    pthread_t th[RACE_THREADS];
    for (int t = 0; t < RACE_THREADS; t++) {
        j[t] = (race_job){.id = t, .go = &go};
        cr_assert_eq(pthread_create(&th[t], NULL, race_loader, &j[t]), 0);
    }
    int wrong = 0;
    const char *first = NULL;
    for (int t = 0; t < RACE_THREADS; t++) {
        pthread_join(th[t], NULL);
        wrong += j[t].wrong;
        if (j[t].wrong && !first)
            first = j[t].first_wrong;
    }
    pthread_barrier_destroy(&go);
    g_widen_failed_open = 0;
    cr_assert_eq(wrong, 0, "%d of %d messages are not their file's; the first: %s", wrong,
                 RACE_THREADS * RACE_FILES, first ? first : "");
}

static const char *long_wav(const char *name, sf_count_t frames)
{
    short *s = random_shorts((size_t)frames, 31);
    const char *path = tmp_path(name);
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, frames);
    free(s);
    return path;
}

Test(audio, regular_file_is_not_mapped_while_decoding)
{
    const char *path = long_wav("mapped.wav", 200000);
    g_mapped_path = path;
    ws_audio a;
    load_ok(&a, path);
    cr_assert_eq(g_was_mapped, 0, "the input file is mapped while it is decoded");
    cr_assert_eq(a.n, 200000);
    ws_audio_free(&a);
}

/* A file cut to one page after the loader opened it: a mapping of the old size
 * turns the decode's first touch past that page into SIGBUS; read with pread,
 * it is an error for this input. */
Test(audio, file_truncated_after_open_is_an_error_not_sigbus, .timeout = 10)
{
    const char *path = long_wav("shrinks.wav", 1 << 20);
    g_shrink_path = path;
    g_shrink_to = 4096;
    assert_load_fails(path, "the file changed while being read");
}

/* A seam on pread, as on sf_open_virtual above: counts the loader's reads of a file
 * and can cut the file short between two of them. */
static int g_count_preads;          /* count while set */
static int g_preads;
static off_t g_cut_from;            /* at the first read from here on, truncate g_cut_path */
static const char *g_cut_path;
static off_t g_cut_to;
static ssize_t (*g_real_pread)(int, void *, size_t, off_t);
static pthread_once_t g_real_pread_once = PTHREAD_ONCE_INIT; /* loaders on many threads */

static void find_real_pread(void)
{
    *(void **)&g_real_pread = dlsym(RTLD_NEXT, "pread");
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    pthread_once(&g_real_pread_once, find_real_pread);
    if (__atomic_load_n(&g_count_preads, __ATOMIC_RELAXED)) {
        __atomic_add_fetch(&g_preads, 1, __ATOMIC_RELAXED);
        if (g_cut_path && off >= g_cut_from) {
            cr_assert_eq(truncate(g_cut_path, g_cut_to), 0);
            g_cut_path = NULL;
        }
    }
    return g_real_pread(fd, buf, n, off);
}

/* A 30 s WAV is read in a few large preads (the read-ahead window), not in the
 * decoder's 8 KiB pieces, and its samples are the file's. */
Test(audio, regular_file_is_read_in_large_pieces)
{
    const sf_count_t frames = 480000;
    short *x = random_shorts((size_t)frames, 5);
    const char *path = tmp_path("pieces.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, x, frames);
    ws_audio a;
    __atomic_store_n(&g_preads, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_count_preads, 1, __ATOMIC_RELAXED);
    load_ok(&a, path);
    __atomic_store_n(&g_count_preads, 0, __ATOMIC_RELAXED);
    const int reads = __atomic_load_n(&g_preads, __ATOMIC_RELAXED);
    /* 960 KB of samples: 4 windows of 256 KiB, and the header's few reads */
    cr_assert(reads >= 4 && reads <= 16, "%d preads for a 960 KB file", reads);
    cr_assert_eq(a.n, (size_t)frames);
    for (sf_count_t i = 0; i < frames; i++)
        cr_assert_eq(a.x[i], x[i] / 32768.0f, "sample %ld", (long)i);
    ws_audio_free(&a);
    free(x);
}

/* Cut short after the first window was read: an error for this input, not the old
 * window's bytes taken for the rest of the file. */
Test(audio, file_cut_between_readahead_windows_is_an_error, .timeout = 10)
{
    const char *path = long_wav("cut_between.wav", 480000);
    g_cut_to = 300000;  /* in the second window */
    g_cut_from = 200000; /* the read of the second window: the first is in hand */
    g_cut_path = path;
    __atomic_store_n(&g_count_preads, 1, __ATOMIC_RELAXED);
    ws_audio a;
    ws_err err = {{0}};
    int rc = ws_audio_load(&a, path, &err);
    __atomic_store_n(&g_count_preads, 0, __ATOMIC_RELAXED);
    g_cut_path = NULL;
    cr_assert_neq(rc, 0, "a file cut while read decoded (%zu samples)", rc ? 0 : a.n);
    cr_assert(strstr(err.msg, "cut_between.wav"), "%s", err.msg);
}

/* --- FIFOs: the wait is in poll(), not in open() --------------------------- */

typedef struct {
    const char *path;
    ws_audio a;
    ws_err err;
    int rc;
    pid_t tid;
} fifo_job;

static void *fifo_loader(void *p)
{
    fifo_job *j = p;
    __atomic_store_n(&j->tid, gettid(), __ATOMIC_RELEASE);
    j->rc = ws_audio_load(&j->a, j->path, &j->err);
    return NULL;
}

/* The syscall a thread of ours is blocked in (/proc/self/task/TID/syscall), or -1. */
static long blocked_in(pid_t tid)
{
    char path[64];
    long nr = -1;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%ld", &nr) != 1)
            nr = -1;
        fclose(f);
    }
    return nr;
}

static int in_poll(long nr)
{
#ifdef SYS_poll
    if (nr == SYS_poll)
        return 1;
#endif
    return nr == SYS_ppoll;
}

static void write_all_to(const char *path, const unsigned char *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0, "open %s for writing: %s", path, strerror(errno));
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, p + off, n - off);
        cr_assert_gt(w, 0);
        off += (size_t)w;
    }
    close(fd);
}

/* A FIFO whose writer comes late: open() returns at once, the loader waits in
 * poll() (an open() blocked there could not be given up on), and the samples are
 * the file's. The writer comes once the loader is seen waiting in poll(): an open()
 * blocked on the FIFO would stay there, and is reported after 5 s. */
Test(audio, fifo_with_a_late_writer_waits_in_poll_and_decodes, .timeout = 10)
{
    size_t len;
    unsigned char *wav = read_file(jfk_path(), &len);
    cr_assert_not_null(wav);
    fifo_job j = {.path = tmp_path("in.fifo")};
    cr_assert_eq(mkfifo(j.path, 0600), 0);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, fifo_loader, &j), 0);
    struct timespec ms1 = {0, 1000000};
    pid_t tid = 0;
    long nr = -1;
    for (int i = 0; i < 5000; i++) { /* until it waits in poll(), at most 5 s */
        if (!tid)
            tid = __atomic_load_n(&j.tid, __ATOMIC_ACQUIRE);
        nr = tid ? blocked_in(tid) : -1;
        if (in_poll(nr))
            break;
        nanosleep(&ms1, NULL);
    }
    cr_assert(in_poll(nr),
              "the loader is not waiting in poll() after 5 s (syscall %ld%s)", nr,
              nr == SYS_openat ? ": blocked in open()" : "");
    write_all_to(j.path, wav, len);
    pthread_join(t, NULL);
    cr_assert_eq(j.rc, 0, "%s", j.err.msg);
    ws_audio b;
    load_ok(&b, jfk_path());
    cr_assert_eq(j.a.n, b.n);
    cr_assert_eq(memcmp(j.a.x, b.x, b.n * sizeof *b.x), 0, "FIFO and file differ");
    ws_audio_free(&j.a);
    ws_audio_free(&b);
    free(wav);
}

/* --- bounded memory: stream cap, sample cap, reservations ------------------ */

Test(audio, endless_device_stops_at_the_stream_cap_naming_it, .timeout = 10)
{
    ws_audio_opts o = {.max_stream_bytes = 1 << 20};
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_opts(&a, "/dev/zero", &o, &err), -1);
    cr_assert_eq(strncmp(err.msg, "/dev/zero: more than 1048576 bytes", 34), 0, "%s", err.msg);
    cr_assert_null(strchr(err.msg, '\n'));
}

Test(audio, endless_pipe_on_stdin_stops_at_the_stream_cap, .timeout = 10)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) { /* zeros until the reader goes away */
        close(p[0]);
        static const char zeros[65536];
        while (write(p[1], zeros, sizeof zeros) > 0)
            ;
        _exit(0);
    }
    close(p[1]);
    int saved = dup(STDIN_FILENO);
    dup2(p[0], STDIN_FILENO);
    close(p[0]);
    ws_audio_opts o = {.max_stream_bytes = 1 << 20};
    ws_audio a;
    ws_err err = {{0}};
    int rc = ws_audio_load_opts(&a, "-", &o, &err);
    dup2(saved, STDIN_FILENO); /* closes the read end: the writer stops */
    close(saved);
    waitpid(pid, NULL, 0);
    cr_assert_eq(rc, -1);
    cr_assert_not_null(strstr(err.msg, "<stdin>: more than 1048576 bytes"), "%s", err.msg);
}

typedef struct {
    int calls;
    size_t bytes[64], samples[64];
    const char *fail_with; /* when set, the callback refuses with this message */
} reserve_log;

static int log_reserve(void *ctx, size_t decoder_bytes, size_t samples_16k, ws_err *err)
{
    reserve_log *l = ctx;
    if (l->calls < 64) {
        l->bytes[l->calls] = decoder_bytes;
        l->samples[l->calls] = samples_16k;
    }
    l->calls++;
    if (l->fail_with)
        return ws_errf(err, "%s", l->fail_with);
    return 0;
}

/* 144007 frames at 48 kHz give round(144007 / 3) = 48002 samples at 16 kHz. */
static const char *tones_48k(void)
{
    tones t = band_tones(48000);
    float *x = sample_tones(&t, 48000, 144007);
    const char *path = tmp_path("t48.wav");
    write_float(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 48000, 1, x, 144007);
    free(x);
    return path;
}

Test(audio, reserve_gets_the_16k_length_from_the_header_once)
{
    const char *path = tones_48k();
    reserve_log l = {.calls = 0};
    ws_audio_opts o = {.reserve = log_reserve, .reserve_ctx = &l};
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_opts(&a, path, &o, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, 48002);
    cr_assert_eq(l.calls, 1, "%d calls", l.calls);
    cr_assert_eq(l.samples[0], 48002);
    cr_assert_geq(l.bytes[0], 48002 * sizeof(float));
    cr_assert_lt(l.bytes[0], 48002 * sizeof(float) + (8u << 20), "%zu bytes", l.bytes[0]);
    ws_audio_free(&a);
}

Test(audio, reserve_refusal_fails_the_load_with_its_message)
{
    const char *path = tones_48k();
    reserve_log l = {.fail_with = "memory budget of 1 MB exhausted"};
    ws_audio_opts o = {.reserve = log_reserve, .reserve_ctx = &l};
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_opts(&a, path, &o, &err), -1);
    cr_assert_str_eq(err.msg, "memory budget of 1 MB exhausted");
    cr_assert_null(a.x);
}

/* FLAC whose STREAMINFO says 0 samples (an encoder writing to a pipe): the
 * length is unknown until the end, so the output is reserved as it grows. */
static const char *flac_without_length(const char *name, sf_count_t frames, short **samples)
{
    short *s = malloc((size_t)frames * sizeof *s);
    for (sf_count_t i = 0; i < frames; i++)
        s[i] = (short)(8000 * sin(0.01 * (double)i) + (double)(i % 7));
    const char *path = tmp_path(name);
    write_short(path, SF_FORMAT_FLAC | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, frames);
    size_t len;
    unsigned char *p = read_file(path, &len);
    cr_assert(len > 26 && !memcmp(p, "fLaC", 4), "unexpected FLAC layout");
    p[21] &= 0xF0; /* STREAMINFO's 36-bit sample count: bytes 21 (low nibble) .. 25 */
    memset(p + 22, 0, 4);
    write_bytes(path, p, len);
    free(p);
    if (samples)
        *samples = s;
    else
        free(s);
    return path;
}

Test(audio, unknown_length_reserves_growing_amounts_as_it_goes)
{
    const sf_count_t frames = 2600000; /* more than two 4 MiB steps of output */
    const char *path = flac_without_length("nolen.flac", frames, NULL);
    reserve_log l = {.calls = 0};
    ws_audio_opts o = {.reserve = log_reserve, .reserve_ctx = &l};
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_opts(&a, path, &o, &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, (size_t)frames);
    cr_assert_geq(l.calls, 3, "%d calls", l.calls);
    for (int i = 1; i < l.calls && i < 64; i++) {
        cr_assert_gt(l.samples[i], l.samples[i - 1], "call %d", i);
        cr_assert_gt(l.bytes[i], l.bytes[i - 1], "call %d", i);
        cr_assert_geq(l.samples[i] - l.samples[i - 1], (4u << 20) / sizeof(float), "call %d", i);
    }
    cr_assert_geq(l.samples[l.calls - 1], a.n);
    ws_audio_free(&a);
}

Test(audio, stream_bytes_are_reserved_as_they_are_buffered, .timeout = 10)
{
    reserve_log l = {.calls = 0};
    ws_audio_opts o = {.max_stream_bytes = 20 << 20, .reserve = log_reserve, .reserve_ctx = &l};
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_opts(&a, "/dev/zero", &o, &err), -1);
    cr_assert_geq(l.calls, 3);
    for (int i = 0; i < l.calls && i < 64; i++) {
        cr_assert_eq(l.samples[i], 0);
        cr_assert_leq(l.bytes[i], (20u << 20) + 1);
        if (i)
            cr_assert_geq(l.bytes[i] - l.bytes[i - 1], 4u << 20);
    }
}

Test(audio, over_max_samples_is_too_long_naming_the_limit)
{
    short s[32000] = {0};
    const char *path = tmp_path("2s.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 1, s, 32000);
    ws_audio_opts o = {.max_samples = 16000};
    ws_audio a;
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_opts(&a, path, &o, &err), -1);
    cr_assert_not_null(strstr(err.msg, "too long: 32000 frames at 16000 Hz"), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "the limit is 16000 samples at 16 kHz"), "%s", err.msg);
    /* a length found only at the end (no sample count) is caught as it grows */
    path = flac_without_length("nolen.flac", 40000, NULL);
    cr_assert_eq(ws_audio_load_opts(&a, path, &o, &err), -1);
    cr_assert_not_null(strstr(err.msg, "too long"), "%s", err.msg);
}

/* One soxr_process call over all of x, as the loader did before it resampled
 * while decoding: the reference the chunked path must equal bit for bit. */
static float *soxr_one_shot(const float *x, size_t n, double rate, size_t *ny)
{
    size_t cap = (size_t)floor((double)n * 16000 / rate + 0.5) + 1, idone = 0, odone = 0;
    float *y = malloc(cap * sizeof *y);
    soxr_error_t e = NULL;
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_VHQ, SOXR_ROLLOFF_NONE);
    soxr_runtime_spec_t rt = soxr_runtime_spec(1);
    soxr_t s = soxr_create(rate, 16000, 1, &e, &io, &q, &rt);
    cr_assert_not_null(s);
    cr_assert_null(soxr_process(s, x, n, &idone, y, cap, &odone));
    cr_assert_eq(idone, n);
    size_t tot = odone;
    while (tot < cap) {
        odone = 0;
        cr_assert_null(soxr_process(s, NULL, 0, NULL, y + tot, cap - tot, &odone));
        if (!odone)
            break;
        tot += odone;
    }
    soxr_delete(s);
    *ny = tot;
    return y;
}

Test(audio, chunked_resampling_equals_one_shot)
{
    static const int rates[] = {48000, 44100, 22050, 8000, 96000, 11025};
    for (int k = 0; k < 6; k++) {
        int rate = rates[k];
        size_t n = (size_t)rate * 5 + 13; /* several read chunks and soxr pieces */
        ws_rng r = {40 + (uint64_t)k};
        float *x = malloc(n * sizeof *x);
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(ws_rng_uniform(&r) - 0.5);
        size_t nref, ny;
        float *ref = soxr_one_shot(x, n, rate, &nref), *y;
        ws_err err;
        cr_assert_eq(ws_resample(x, n, rate, 16000, &y, &ny, &err), 0, "%s", err.msg);
        cr_assert_eq(ny, nref, "%d Hz", rate);
        cr_assert_eq(memcmp(y, ref, ny * sizeof *y), 0, "%d Hz: ws_resample differs", rate);
        free(y);
        const char *path = tmp_path("chunked.wav");
        write_float(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, rate, 1, x, (sf_count_t)n);
        ws_audio a;
        load_ok(&a, path);
        cr_assert_eq(a.n, nref, "%d Hz", rate);
        cr_assert_eq(memcmp(a.x, ref, a.n * sizeof *a.x), 0, "%d Hz: the loader differs", rate);
        ws_audio_free(&a);
        free(ref);
        free(x);
    }
}

/* --- MP3: libmpg123 quiet, its failures in our one line -------------------- */

static const char *write_mp3(const char *name, int rate, int channels, sf_count_t frames)
{
    SF_INFO probe = {.samplerate = rate, .channels = channels,
                     .format = SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III};
    if (!sf_format_check(&probe))
        cr_skip_test("this libsndfile cannot write MP3");
    tones t = {.f = {437.1, 1009.3}, .a = {0.4, 0.3}, .p = {0.2, 1.0}, .n = 2};
    float *x = sample_tones(&t, rate, frames * channels);
    const char *path = tmp_path(name);
    write_float(path, probe.format, rate, channels, x, frames);
    free(x);
    return path;
}

/* The same samples libsndfile gives (the settings it uses, plus quiet). */
Test(audio, mp3_decodes_like_libsndfile_bit_exact)
{
    for (int ch = 1; ch <= 2; ch++) {
        const char *path = write_mp3("same.mp3", WS_SAMPLE_RATE, ch, 3 * WS_SAMPLE_RATE);
        SF_INFO info = {0};
        SNDFILE *f = sf_open(path, SFM_READ, &info);
        cr_assert_not_null(f);
        sf_command(f, SFC_SET_NORM_FLOAT, NULL, SF_TRUE);
        float *x = malloc((size_t)info.frames * (size_t)ch * sizeof *x);
        sf_count_t got = sf_readf_float(f, x, info.frames);
        sf_close(f);
        ws_audio a;
        load_ok(&a, path);
        cr_assert_eq((sf_count_t)a.n, got, "%d channels: %zu vs libsndfile's %lld", ch, a.n,
                     (long long)got);
        for (size_t i = 0; i < a.n; i++) {
            float want = ch == 1 ? x[i] : (float)(((double)x[2 * i] + x[2 * i + 1]) / 2);
            cr_assert_eq(a.x[i], want, "%d channels, [%zu]", ch, i);
        }
        ws_audio_free(&a);
        free(x);
    }
}

/* Runs whisper-stem --mel on path; returns its status, its stderr in err. */
static int run_mel(const char *path, char *err, size_t cap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s.npy", ws_bin(), path, path);
    return run_cmd(cmd, err, cap);
}

/* stderr must be exactly one line, whisper-stem's, naming the input and want. */
static void assert_one_line_from_us(const char *path, const char *err, const char *want)
{
    char prefix[1200];
    snprintf(prefix, sizeof prefix, "whisper-stem: %s: ", path);
    cr_assert_eq(strncmp(err, prefix, strlen(prefix)), 0, "stderr is not ours: \"%s\"", err);
    const char *nl = strchr(err, '\n');
    cr_assert(nl && nl[1] == 0, "stderr is not one line: \"%s\"", err);
    cr_assert_not_null(strstr(err, want), "stderr lacks \"%s\": \"%s\"", want, err);
}

/* Finite samples near FLT_MAX at 8 kHz: the resampler's overshoot (a few per cent at
 * each jump between +-FLT_MAX) goes past the float range. Such a file is refused with one
 * line, by the loader, by the PCM entry point and by the command (no output, exit 1). */
static void flt_max_square(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (i / 4) % 2 ? -FLT_MAX : FLT_MAX;
}

Test(audio, samples_near_flt_max_that_resample_to_infinity_are_refused)
{
    enum { N = 800 };
    float x[N];
    flt_max_square(x, N);
    /* the samples themselves are finite: only resampling makes infinities */
    for (size_t i = 0; i < N; i++)
        cr_assert(isfinite(x[i]));
    ws_err err = {{0}};
    const char *path = tmp_path("flt_max_8k.wav");
    write_float(path, SF_FORMAT_WAV | SF_FORMAT_FLOAT, 8000, 1, x, N);
    assert_load_fails(path, "is not a finite number after resampling to 16 kHz");

    ws_audio a;
    cr_assert_eq(ws_audio_from_pcm(&a, x, N, 8000, 1, "pcm", &err), -1, "PCM loaded");
    cr_assert_null(a.x);
    cr_assert_eq(strncmp(err.msg, "pcm: ", 5), 0, "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, "is not a finite number after resampling to 16 kHz"), "%s",
                       err.msg);

    char out[1200], msg[4096];
    snprintf(out, sizeof out, "%s.npy", path);
    cr_assert_eq(run_mel(path, msg, sizeof msg), 1, "%s", msg);
    assert_one_line_from_us(path, msg, "is not a finite number after resampling to 16 kHz");
    struct stat st;
    cr_assert_neq(stat(out, &st), 0, "%s was written", out);
}

Test(audio, truncated_mp3_is_one_line_on_stderr_and_nothing_else)
{
    const char *path = write_mp3("cut.mp3", WS_SAMPLE_RATE, 1, 3 * WS_SAMPLE_RATE);
    truncate_to(path, file_size(path) * 6 / 10);
    char err[4096];
    cr_assert_eq(run_mel(path, err, sizeof err), 1, "%s", err);
    assert_one_line_from_us(path, err, "truncated or damaged: the Xing/Info header promises 48000");
}

Test(audio, damaged_mp3_is_one_line_on_stderr_and_nothing_else)
{
    const char *path = write_mp3("junk.mp3", WS_SAMPLE_RATE, 1, 3 * WS_SAMPLE_RATE);
    size_t len;
    unsigned char *p = read_file(path, &len);
    ws_rng r = {77};
    for (size_t i = len / 10; i < len * 9 / 10; i += 50) /* frame headers and data hit */
        p[i] = (unsigned char)ws_rng_next(&r);
    write_bytes(path, p, len);
    free(p);
    char err[4096];
    cr_assert_eq(run_mel(path, err, sizeof err), 1, "%s", err);
    assert_one_line_from_us(path, err, "truncated or damaged");
}

/* --- what ffmpeg and sox write to a pipe ----------------------------------- */

static int have_tool(const char *tool)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

/* 16 kHz stereo 16-bit PCM, random: the expected floats are exact. */
static const char *piped_source(short **s, size_t frames)
{
    *s = random_shorts(2 * frames, 55);
    const char *path = tmp_path("src.wav");
    write_short(path, SF_FORMAT_WAV | SF_FORMAT_PCM_16, WS_SAMPLE_RATE, 2, *s, (sf_count_t)frames);
    return path;
}

static void assert_is_source(const ws_audio *a, const short *s, size_t frames, const char *what)
{
    cr_assert_eq(a->n, frames, "%s: %zu samples, want %zu", what, a->n, frames);
    for (size_t t = 0; t < frames; t++) {
        float want = (float)((s[2 * t] / 32768.0 + s[2 * t + 1] / 32768.0) / 2);
        cr_assert_eq(a->x[t], want, "%s: [%zu]", what, t);
    }
}

/* Runs `tool args` with src.wav as input ({} in the format) into a pipe whose
 * reader writes the file; decodes the file. */
static void check_piped(const char *tool, const char *fmt, const char *name)
{
    if (!have_tool(tool))
        cr_skip_test("%s is not installed: what it writes to a pipe was not checked", tool);
    short *s;
    const size_t frames = 24011;
    const char *src = piped_source(&s, frames);
    char srcpath[1024], out[1024], args[1024], cmd[4096], err[4096];
    snprintf(srcpath, sizeof srcpath, "%s", src);
    snprintf(out, sizeof out, "%s", tmp_path(name));
    snprintf(args, sizeof args, fmt, srcpath);
    snprintf(cmd, sizeof cmd, "%s %s | cat > %s", tool, args, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
    ws_audio a;
    load_ok(&a, out);
    assert_is_source(&a, s, frames, cmd);
    ws_audio_free(&a);
    free(s);
}

Test(audio, ffmpeg_flac_to_a_pipe_has_no_length_and_decodes_exactly)
{
    check_piped("ffmpeg", "-nostdin -loglevel error -i %s -f flac -", "ff.flac");
}

Test(audio, ffmpeg_w64_to_a_pipe_decodes_exactly)
{
    check_piped("ffmpeg", "-nostdin -loglevel error -i %s -f w64 -", "ff.w64");
}

Test(audio, ffmpeg_wav_to_a_pipe_decodes_exactly)
{
    check_piped("ffmpeg", "-nostdin -loglevel error -i %s -f wav -", "ff.wav");
}

Test(audio, ffmpeg_rf64_to_a_pipe_decodes_exactly)
{
    check_piped("ffmpeg", "-nostdin -loglevel error -i %s -f wav -rf64 always -", "ff.rf64");
}

Test(audio, ffmpeg_aiff_to_a_pipe_decodes_exactly)
{
    check_piped("ffmpeg", "-nostdin -loglevel error -i %s -f aiff -", "ff.aiff");
}

Test(audio, sox_aiff_to_a_pipe_decodes_exactly)
{
    check_piped("sox", "%s -t aiff -", "sox.aiff");
}

Test(audio, sox_wav_to_a_pipe_decodes_exactly)
{
    check_piped("sox", "%s -t wav -", "sox.wav");
}

/* Straight from ffmpeg's pipe into standard input, as the README shows. */
Test(audio, ffmpeg_flac_through_stdin_decodes_exactly)
{
    if (!have_tool("ffmpeg"))
        cr_skip_test("ffmpeg is not installed: what it writes to a pipe was not checked");
    short *s;
    const size_t frames = 24011;
    const char *src = piped_source(&s, frames);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -i %s -f flac -", src);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int saved = dup(STDIN_FILENO);
    dup2(fileno(p), STDIN_FILENO);
    ws_audio a;
    ws_err err = {{0}};
    int rc = ws_audio_load(&a, "-", &err);
    dup2(saved, STDIN_FILENO);
    close(saved);
    cr_assert_eq(pclose(p), 0);
    cr_assert_eq(rc, 0, "%s", err.msg);
    assert_is_source(&a, s, frames, "ffmpeg | stdin");
    ws_audio_free(&a);
    free(s);
}

/* An MP3 with no Xing/Info header: the length is an estimate, so it is read to
 * its end (libsndfile 1.2.0 stopped at the estimate: 14241 of 48000 samples for
 * this VBR file). */
Test(audio, vbr_mp3_without_xing_header_decodes_to_its_end)
{
    if (!have_tool("ffmpeg"))
        cr_skip_test("ffmpeg is not installed: an MP3 without a Xing header was not checked");
    tones t = {.f = {437.1, 1009.3, 3001.7}, .a = {0.3, 0.3, 0.2}, .p = {0.2, 1.0, 2.0}, .n = 3};
    float *x = sample_tones(&t, WS_SAMPLE_RATE, 3 * WS_SAMPLE_RATE);
    const char *src = tmp_path("vbr-src.wav");
    write_float(src, SF_FORMAT_WAV | SF_FORMAT_FLOAT, WS_SAMPLE_RATE, 1, x, 3 * WS_SAMPLE_RATE);
    char mp3[1024], cmd[4096], err[4096];
    snprintf(mp3, sizeof mp3, "%s/vbr.mp3", test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -loglevel error -i %s -c:a libmp3lame -q:a 2 -write_xing 0 %s", src,
             mp3);
    if (run_cmd(cmd, err, sizeof err))
        cr_skip_test("this ffmpeg cannot write MP3: %s", err);
    ws_audio a;
    load_ok(&a, mp3);
    /* LAME adds its delay and pads the last frame: up to 2 frames of 1152 */
    cr_assert(a.n >= 3 * WS_SAMPLE_RATE && a.n <= 3 * WS_SAMPLE_RATE + 2 * 1152, "%zu samples",
              a.n);
    ws_audio_free(&a);
    free(x);
}

/* `whisper-stem - < file.wav`: a regular file on standard input is read in
 * place (the stream cap does not apply to it). */
Test(audio, regular_file_on_stdin_is_read_in_place)
{
    const char *path = long_wav("stdin.wav", 100000);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert_geq(fd, 0);
    int saved = dup(STDIN_FILENO);
    dup2(fd, STDIN_FILENO);
    close(fd);
    ws_audio_opts o = {.max_stream_bytes = 1000}; /* far below the file's 200 kB */
    ws_audio a, b;
    ws_err err = {{0}};
    int rc = ws_audio_load_opts(&a, "-", &o, &err);
    dup2(saved, STDIN_FILENO);
    close(saved);
    cr_assert_eq(rc, 0, "%s", err.msg);
    load_ok(&b, path);
    cr_assert_eq(a.n, b.n);
    cr_assert_eq(memcmp(a.x, b.x, a.n * sizeof *a.x), 0);
    ws_audio_free(&a);
    ws_audio_free(&b);
}

/* Found by fuzzing: after an ID3v2 tag libsndfile hands nearly anything to
 * libmpg123, which printed "Note: Illegal Audio-MPEG-Header ..." and
 * "[src/libmpg123/layer2.c:...] error: ..." (tests/fuzz/corpus/audio/stderr-*).
 * Standard error is a file here (each test runs in its own process). */
static const unsigned char ID3_THEN_JUNK[24] = {
    0x49, 0x44, 0x33, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xfd, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00};
static const unsigned char ID3_THEN_LAYER2[128] = {
    0x49, 0x44, 0x33, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xfd, 0x00,
    0x00, 0x00, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82, 0x00, 0xff, 0xff, 0xff, 0xff, 0x60, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x31, 0xff, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x69, 0x00, 0x0f, 0x00, 0x49, 0x44, 0x33, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff,
    0xff, 0xff, 0xfd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x00, 0x8f,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xff, 0x24, 0x20, 0x00, 0x00, 0x6b, 0x03, 0x73};

/* Loads p (named "tagged") with fd 2 sent to a file; fails when anything was
 * written there. Returns the load's status, the message in *out (may be NULL). */
static int load_quietly(const unsigned char *p, size_t n, ws_err *out)
{
    const char *path = tmp_path("stderr.txt");
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    ws_audio a;
    ws_err err = {{0}};
    int rc = ws_audio_load_memory(&a, p, n, "tagged", &err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    if (rc == 0)
        ws_audio_free(&a);
    else
        cr_assert_eq(strncmp(err.msg, "tagged: ", 8), 0, "%s", err.msg);
    size_t len = 0;
    char *said = read_file(path, &len);
    cr_assert_eq(len, 0, "the decoder wrote to stderr: %.*s", (int)len, said);
    free(said);
    if (out)
        *out = err;
    return rc;
}

static void assert_loads_quietly(const unsigned char *p, size_t n)
{
    load_quietly(p, n, NULL);
}

Test(audio, id3_tagged_junk_prints_nothing_on_stderr)
{
    assert_loads_quietly(ID3_THEN_JUNK, sizeof ID3_THEN_JUNK);
    assert_loads_quietly(ID3_THEN_LAYER2, sizeof ID3_THEN_LAYER2);
}

/* Some taggers put an ID3v2 tag before a WAV or FLAC file. What follows the tag
 * decodes as the file alone does (libsndfile over virtual I/O made 49 shifted
 * frames of a 64-frame WAV), and its data size is still checked. */
Test(audio, id3_tagged_wav_and_flac_decode_like_the_untagged_files)
{
    static const int formats[] = {SF_FORMAT_WAV | SF_FORMAT_PCM_16, SF_FORMAT_FLAC | SF_FORMAT_PCM_16};
    for (int k = 0; k < 2; k++) {
        short *s = random_shorts(64, 60);
        const char *path = tmp_path(k ? "plain.flac" : "plain.wav");
        write_short(path, formats[k], WS_SAMPLE_RATE, 1, s, 64);
        size_t len;
        unsigned char *p = read_file(path, &len);
        unsigned char *q = malloc(len + 30);
        memcpy(q, "ID3\3\0\0\0\0\0\24", 10); /* v2.3, 20 bytes of tag follow */
        memset(q + 10, 0, 20);
        memcpy(q + 30, p, len);
        ws_audio a;
        ws_err err = {{0}};
        cr_assert_eq(ws_audio_load_memory(&a, q, len + 30, "tagged", &err), 0, "%s", err.msg);
        cr_assert_eq(a.n, 64, "%s: %zu samples", path, a.n);
        for (size_t i = 0; i < 64; i++)
            cr_assert_eq(a.x[i], s[i] / 32768.0f, "%s [%zu]", path, i);
        ws_audio_free(&a);
        if (k == 0) {
            cr_assert_eq(ws_audio_load_memory(&a, q, len + 30 - 40, "tagged", &err), -1);
            cr_assert_not_null(strstr(err.msg, "truncated: the data chunk declares 128 bytes"),
                               "%s", err.msg);
        }
        free(q);
        free(p);
        free(s);
    }
}

/* A WAV whose format tag is 0x0055 holds MP3 data, which libsndfile decodes with
 * a libmpg123 handle of its own that prints; it goes to the quiet one instead,
 * with the same samples as the bare MP3. */
static unsigned char *mp3_in_wav(const unsigned char *mp3, size_t n, size_t *len)
{
    bytes h = {.n = 0};
    put(&h, "RIFF", 4), put_le(&h, 4 + 8 + 30 + 8 + n, 4), put(&h, "WAVE", 4);
    put(&h, "fmt ", 4), put_le(&h, 30, 4);
    put_le(&h, 0x55, 2), put_le(&h, 1, 2), put_le(&h, 16000, 4), put_le(&h, 8000, 4);
    put_le(&h, 1, 2), put_le(&h, 0, 2), put_le(&h, 12, 2), put_le(&h, 1, 2), put_le(&h, 2, 4);
    put_le(&h, 417, 2), put_le(&h, 1, 2), put_le(&h, 1393, 2);
    put(&h, "data", 4), put_le(&h, n, 4);
    unsigned char *w = malloc(h.n + n);
    memcpy(w, h.b, h.n);
    memcpy(w + h.n, mp3, n);
    *len = h.n + n;
    return w;
}

Test(audio, mp3_in_a_wav_decodes_quietly_like_the_mp3)
{
    const char *path = write_mp3("inner.mp3", WS_SAMPLE_RATE, 1, WS_SAMPLE_RATE);
    size_t n, len;
    unsigned char *mp3 = read_file(path, &n);
    ws_audio a, b;
    load_ok(&b, path);
    unsigned char *w = mp3_in_wav(mp3, n, &len);
    ws_err err = {{0}};
    cr_assert_eq(ws_audio_load_memory(&a, w, len, "mp3.wav", &err), 0, "%s", err.msg);
    cr_assert_eq(a.n, b.n);
    cr_assert_eq(memcmp(a.x, b.x, a.n * sizeof *a.x), 0);
    ws_audio_free(&a);
    ws_audio_free(&b);
    free(w);
    ws_rng r = {5};
    for (size_t i = n / 5; i < n - n / 10; i += 40) /* frame headers hit: libmpg123 resyncs */
        mp3[i] = (unsigned char)ws_rng_next(&r);
    w = mp3_in_wav(mp3, n, &len);
    cr_assert_eq(load_quietly(w, len, &err), -1);
    cr_assert_not_null(strstr(err.msg, "truncated or damaged"), "%s", err.msg);
    free(w);
    free(mp3);
}

/* test_audio.c - src/audio.c: decoding, sample formats, channel averaging,
 * resampling to 16 kHz, standard input, and hostile files.
 *
 * Every input is written here with libsndfile's writer into a fresh
 * test_tmpdir(). PCM files are written from integers (sf_writef_short/int), so
 * the expected floats are known exactly: x / 2^(bits-1). The bit-exact check of
 * samples/jfk.wav parses the WAV data chunk itself, independently of
 * libsndfile.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audio.h"
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

/* 2^24 + 1000 frames: more than audio.c allocates before reading (READ_FIRST_CAP,
 * 2^24 samples), so the buffer has to grow. 8-bit PCM keeps the file at 17 MB;
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
    assert_load_fails(path, "(libsndfile: ");
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

/* test_audio_av.c - src/audio/libav.c and segments: FFmpeg's libraries as the decoder of
 * what libsndfile cannot read, --decode openai against the ffmpeg command openai-whisper
 * runs, and segments (start, duration) of files.
 *
 * Every file is made here by Debian's ffmpeg from samples/jfk.wav (its first 4 s), in
 * the formats and rates corpora keep: PCM WAV of four sample types, FLAC, MP3, Vorbis,
 * Opus in WebM, AAC in MP4 and ADTS, ALAC, WMA, 5.1 AC-3, and a video file with sound.
 * The references are what ffmpeg itself writes: `ffmpeg -nostdin -threads 0 -i FILE -f
 * s16le -ac 1 -acodec pcm_s16le -ar 16000 -` (openai-whisper's load_audio), or the file's
 * own rate and channels as float32 (the default decoder, then averaged and resampled as
 * ws_audio_from_pcm does). Without ffmpeg the tests skip and say so.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio.h"
#include "audio/internal.h"
#include "helpers.h"

static int have_ffmpeg(void)
{
    return system("command -v ffmpeg >/dev/null 2>&1") == 0;
}

static const char *tmp(const char *dir, const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* Runs a command, failing the test with its stderr when it fails. */
static void must_run(const char *cmd)
{
    char err[4096] = "";
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
}

/* Reads a whole file; *n bytes. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    cr_assert_not_null(b);
    cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* A file made by ffmpeg from the first 4 s of jfk.wav: `ffmpeg -i jfk -t 4 ARGS out`. */
static void make(const char *dir, const char *name, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -i %s -t 4 %s %s",
             test_sample("jfk.wav"), args, tmp(dir, name));
    must_run(cmd);
}

/* openai-whisper's samples of path: its ffmpeg command's int16 / 32768. */
static float *openai_samples(const char *dir, const char *path, size_t *n)
{
    char out[1024], cmd[4096];
    snprintf(out, sizeof out, "%s", tmp(dir, "ref.s16"));
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -threads 0 -i %s -f s16le -ac 1 -acodec pcm_s16le -ar 16000 - "
             "2>/dev/null > %s", path, out);
    must_run(cmd);
    size_t bytes;
    unsigned char *b = slurp(out, &bytes);
    *n = bytes / 2;
    float *x = malloc((*n ? *n : 1) * sizeof *x);
    for (size_t i = 0; i < *n; i++)
        x[i] = (float)(int16_t)(b[2 * i] | b[2 * i + 1] << 8) / 32768.0f;
    free(b);
    return x;
}

static int load(ws_audio *a, const char *path, int decode, double start, double dur, ws_err *e)
{
    ws_audio_opts o = {.decode = decode, .start_s = start, .duration_s = dur};
    memset(e, 0, sizeof *e);
    return ws_audio_load_opts(a, path, &o, e);
}

static void assert_same(const float *got, size_t n, const float *want, size_t m, const char *what)
{
    cr_assert_eq(n, m, "%s: %zu samples, want %zu", what, n, m);
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof *got))
            cr_assert_fail("%s: sample %zu is %.9g, want %.9g", what, i, (double)got[i],
                           (double)want[i]);
}

/* name, ffmpeg's encoding arguments */
static const char *const CORPUS[][2] = {
    {"s16-16k.wav", "-ar 16000 -c:a pcm_s16le"},
    {"s16-44k-stereo.wav", "-ar 44100 -ac 2 -c:a pcm_s16le"},
    {"u8-8k.wav", "-ar 8000 -c:a pcm_u8"},
    {"f32-48k.wav", "-ar 48000 -c:a pcm_f32le"},
    {"s32-96k.wav", "-ar 96000 -c:a pcm_s32le"},
    {"flac-22k-stereo.flac", "-ar 22050 -ac 2"},
    {"mp3-44k.mp3", "-ar 44100 -c:a libmp3lame"},
    {"mp3-8k.mp3", "-ar 8000 -c:a libmp3lame"},
    {"vorbis-48k.ogg", "-ar 48000 -c:a libvorbis"},
    {"opus.webm", "-c:a libopus"},
    {"aac-44k-stereo.m4a", "-ar 44100 -ac 2 -c:a aac"},
    {"aac-22k.aac", "-ar 22050 -c:a aac -f adts"},
    {"alac.m4a", "-c:a alac"},
    {"wma-22k.wma", "-ar 22050 -c:a wmav2"},
    {"ac3-48k-5.1.ac3", "-ar 48000 -ac 6 -c:a ac3"},
};
#define N_CORPUS (sizeof CORPUS / sizeof *CORPUS)

/* --decode openai: every format and rate, bit for bit what openai-whisper's ffmpeg
 * command gives. */
Test(audio_av, decode_openai_equals_ffmpeg_over_formats_and_rates, .timeout = 300)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed: --decode openai was not compared with it");
    const char *dir = test_tmpdir();
    for (size_t k = 0; k < N_CORPUS; k++) {
        make(dir, CORPUS[k][0], CORPUS[k][1]);
        char path[1024];
        snprintf(path, sizeof path, "%s", tmp(dir, CORPUS[k][0]));
        size_t m;
        float *want = openai_samples(dir, path, &m);
        ws_audio a;
        ws_err e;
        cr_assert_eq(load(&a, path, WS_DECODE_OPENAI, 0, 0, &e), 0, "%s", e.msg);
        cr_assert_gt(m, 16000 * 3, "%s: ffmpeg gave %zu samples", CORPUS[k][0], m);
        assert_same(a.x, a.n, want, m, CORPUS[k][0]);
        ws_audio_free(&a);
        free(want);
    }
}

/* A video file: the sound of its audio stream, as ffmpeg takes it. */
Test(audio_av, decode_openai_equals_ffmpeg_on_a_video_file, .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char cmd[4096], path[1024];
    snprintf(path, sizeof path, "%s", tmp(dir, "video.mp4"));
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -loglevel error -y -f lavfi -i testsrc=size=64x48:rate=10 -i %s "
             "-t 4 -c:v mpeg4 -c:a aac -ar 44100 %s", test_sample("jfk.wav"), path);
    must_run(cmd);
    size_t m;
    float *want = openai_samples(dir, path, &m);
    ws_audio a;
    ws_err e;
    cr_assert_eq(load(&a, path, WS_DECODE_OPENAI, 0, 0, &e), 0, "%s", e.msg);
    assert_same(a.x, a.n, want, m, "video.mp4");
    ws_audio_free(&a);
    free(want);
    /* the default decoder takes the same stream */
    cr_assert_eq(load(&a, path, WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(a.src_rate, 44100);
    cr_assert_gt(a.n, 16000 * 3);
    ws_audio_free(&a);
    free(want = NULL);
}

/* The default decoder on what libsndfile cannot read: FFmpeg's frames at the file's own
 * rate and channels, averaged and resampled as any PCM is (ws_audio_from_pcm). The
 * reference frames are ffmpeg's float32 output of the same decode. */
Test(audio_av, aac_opus_alac_wma_ac3_decode_as_ffmpegs_frames, .timeout = 300)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    static const char *const names[] = {"opus.webm", "aac-44k-stereo.m4a", "aac-22k.aac",
                                        "alac.m4a", "wma-22k.wma", "ac3-48k-5.1.ac3"};
    static const int rates[] = {48000, 44100, 22050, 16000, 22050, 48000};
    static const int channels[] = {1, 2, 1, 1, 1, 6};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t k = 0;
        while (strcmp(CORPUS[k][0], names[i]))
            k++;
        make(dir, CORPUS[k][0], CORPUS[k][1]);
        char path[1024], out[1024], cmd[4096];
        snprintf(path, sizeof path, "%s", tmp(dir, names[i]));
        snprintf(out, sizeof out, "%s", tmp(dir, "ref.f32"));
        snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v error -i %s -f f32le -acodec pcm_f32le - > %s",
                 path, out);
        must_run(cmd);
        size_t bytes;
        float *pcm = (float *)slurp(out, &bytes);
        const size_t frames = bytes / sizeof(float) / (size_t)channels[i];
        ws_audio want, a;
        ws_err e = {{0}};
        cr_assert_eq(ws_audio_from_pcm(&want, pcm, frames, rates[i], channels[i], "ref", &e), 0,
                     "%s", e.msg);
        cr_assert_eq(load(&a, path, WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
        cr_assert_eq(a.src_rate, rates[i], "%s: %d Hz", names[i], a.src_rate);
        cr_assert_eq(a.src_channels, channels[i], "%s: %d channels", names[i], a.src_channels);
        assert_same(a.x, a.n, want.x, want.n, names[i]);
        ws_audio_free(&a);
        ws_audio_free(&want);
        free(pcm);
    }
}

static void assert_fails(const char *path, int decode, const char *want)
{
    ws_audio a;
    ws_err e;
    cr_assert_eq(load(&a, path, decode, 0, 0, &e), -1, "%s: loaded", path);
    cr_assert_null(a.x);
    cr_assert_eq(strncmp(e.msg, path, strlen(path)), 0, "not named: %s", e.msg);
    cr_assert_not_null(strstr(e.msg, want), "lacks \"%s\": %s", want, e.msg);
    cr_assert_null(strchr(e.msg, '\n'), "not one line: %s", e.msg);
}

static void cut_file(const char *from, const char *to, double keep)
{
    size_t n;
    unsigned char *b = slurp(from, &n);
    FILE *f = fopen(to, "wb");
    cr_assert_not_null(f);
    fwrite(b, 1, (size_t)(n * keep), f);
    fclose(f);
    free(b);
}

/* Files cut short, video without sound and bytes that are no audio fail with one line,
 * in both modes; a WAV libsndfile refuses is not handed to FFmpeg. */
Test(audio_av, damaged_files_fail_with_one_line, .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char p[1024], q[1024], cmd[4096];
    make(dir, "opus.webm", "-c:a libopus");
    make(dir, "fs.m4a", "-c:a aac -movflags +faststart");
    snprintf(p, sizeof p, "%s", tmp(dir, "opus.webm"));
    snprintf(q, sizeof q, "%s", tmp(dir, "cut.webm"));
    cut_file(p, q, 0.66);
    assert_fails(q, WS_DECODE_DEFAULT, "truncated or damaged");
    assert_fails(q, WS_DECODE_OPENAI, "truncated or damaged");
    snprintf(p, sizeof p, "%s", tmp(dir, "fs.m4a"));
    snprintf(q, sizeof q, "%s", tmp(dir, "cut.m4a"));
    cut_file(p, q, 0.66);
    assert_fails(q, WS_DECODE_DEFAULT, "truncated or damaged");
    assert_fails(q, WS_DECODE_OPENAI, "truncated or damaged");

    snprintf(p, sizeof p, "%s", tmp(dir, "silent-video.mp4"));
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -f lavfi -i "
             "testsrc=size=64x48:rate=10 -t 1 -c:v mpeg4 %s", p);
    must_run(cmd);
    assert_fails(p, WS_DECODE_DEFAULT, "no audio stream");
    assert_fails(p, WS_DECODE_OPENAI, "no audio stream");

    snprintf(p, sizeof p, "%s", tmp(dir, "noise.m4a"));
    FILE *f = fopen(p, "wb");
    for (int i = 0; i < 4096; i++)
        fputc((i * 7919 + 13) % 251, f);
    fclose(f);
    assert_fails(p, WS_DECODE_DEFAULT, "not a recognised audio file (libsndfile: ");
    assert_fails(p, WS_DECODE_DEFAULT, "; ffmpeg: ");
    assert_fails(p, WS_DECODE_OPENAI, "not a recognised audio file (ffmpeg: ");

    /* a WAV whose data chunk claims more than the file holds: refused by our check in
     * both modes (ffmpeg would decode what is there) */
    make(dir, "s16.wav", "-ar 16000 -c:a pcm_s16le");
    snprintf(p, sizeof p, "%s", tmp(dir, "s16.wav"));
    snprintf(q, sizeof q, "%s", tmp(dir, "cut.wav"));
    cut_file(p, q, 0.5);
    assert_fails(q, WS_DECODE_DEFAULT, "truncated");
    assert_fails(q, WS_DECODE_OPENAI, "truncated");
}

/* --- segments ------------------------------------------------------------- */

/* A 44.1 kHz stereo WAV of the first 4 s of jfk and its frames as float. */
static float *wav_44k(const char *dir, char *path, size_t cap, size_t *frames)
{
    snprintf(path, cap, "%s", tmp(dir, "s16-44k-stereo.wav"));
    char out[1024], cmd[4096];
    snprintf(out, sizeof out, "%s", tmp(dir, "ref.f32"));
    make(dir, "s16-44k-stereo.wav", "-ar 44100 -ac 2 -c:a pcm_s16le");
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -v error -i %s -f f32le -acodec pcm_f32le - > %s",
             path, out);
    must_run(cmd);
    size_t bytes;
    float *x = (float *)slurp(out, &bytes);
    *frames = bytes / 8;
    return x;
}

/* A segment is its frames cut at the file's rate, then averaged and resampled as a file
 * of those frames alone; read by seeking (WAV, FLAC) or not, the same samples. */
Test(audio_av, segments_are_their_frames_cut_at_the_files_rate, .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char wav[1024], flac[1024], cmd[4096];
    size_t frames;
    float *pcm = wav_44k(dir, wav, sizeof wav, &frames);
    snprintf(flac, sizeof flac, "%s", tmp(dir, "same.flac"));
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -i %s %s", wav, flac);
    must_run(cmd);
    static const double seg[][2] = {{0, 1}, {1.25, 0.5}, {2.0, 0}, {3.5, 0.49}, {0.0001, 2}};
    for (size_t i = 0; i < sizeof seg / sizeof *seg; i++) {
        const size_t s0 = (size_t)llround(seg[i][0] * 44100);
        const size_t n = seg[i][1] > 0 ? (size_t)llround(seg[i][1] * 44100) : frames - s0;
        ws_audio want, a, b;
        ws_err e = {{0}};
        cr_assert_eq(ws_audio_from_pcm(&want, pcm + 2 * s0, n, 44100, 2, "ref", &e), 0);
        cr_assert_eq(load(&a, wav, WS_DECODE_DEFAULT, seg[i][0], seg[i][1], &e), 0, "%s", e.msg);
        assert_same(a.x, a.n, want.x, want.n, "WAV segment");
        cr_assert_eq(load(&b, flac, WS_DECODE_DEFAULT, seg[i][0], seg[i][1], &e), 0, "%s", e.msg);
        assert_same(b.x, b.n, want.x, want.n, "FLAC segment");
        ws_audio_free(&a);
        ws_audio_free(&b);
        ws_audio_free(&want);
    }
    free(pcm);
}

/* With --decode openai a segment is cut from ffmpeg's 16 kHz samples. */
Test(audio_av, openai_segments_are_cut_from_ffmpegs_samples, .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    make(dir, "aac.m4a", "-ar 44100 -c:a aac");
    char path[1024];
    snprintf(path, sizeof path, "%s", tmp(dir, "aac.m4a"));
    size_t m;
    float *all = openai_samples(dir, path, &m);
    ws_audio a;
    ws_err e;
    cr_assert_eq(load(&a, path, WS_DECODE_OPENAI, 1.5, 1.25, &e), 0, "%s", e.msg);
    assert_same(a.x, a.n, all + 24000, 20000, "openai segment");
    ws_audio_free(&a);
    free(all);
}

/* Lossy files and FFmpeg's formats: the segment is the same audio as the matching part of
 * the whole file's decode (the resampler's edges aside). */
Test(audio_av, lossy_segments_match_the_whole_decode, .timeout = 180)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    static const char *const names[] = {"mp3-44k.mp3", "opus.webm", "aac-44k-stereo.m4a",
                                        "vorbis-48k.ogg"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        size_t k = 0;
        while (strcmp(CORPUS[k][0], names[i]))
            k++;
        make(dir, CORPUS[k][0], CORPUS[k][1]);
        char path[1024];
        snprintf(path, sizeof path, "%s", tmp(dir, names[i]));
        ws_audio whole, seg;
        ws_err e;
        cr_assert_eq(load(&whole, path, WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
        cr_assert_eq(load(&seg, path, WS_DECODE_DEFAULT, 2.0, 1.5, &e), 0, "%s", e.msg);
        cr_assert_eq(seg.n, 24000, "%s: %zu samples", names[i], seg.n);
        double worst = 0, energy = 0;
        for (size_t t = 400; t < seg.n - 400; t++) { /* away from the resampler's edges */
            double d = fabs((double)seg.x[t] - whole.x[32000 + t]);
            worst = d > worst ? d : worst;
            energy += (double)seg.x[t] * seg.x[t];
        }
        cr_assert_gt(energy, 1.0, "%s: a silent segment", names[i]);
        cr_assert_lt(worst, 2e-3, "%s: the segment differs from the whole by %g", names[i],
                     worst);
        ws_audio_free(&whole);
        ws_audio_free(&seg);
    }
}

/* 8 s of noise and a tone as 16 kHz mono AAC-LC at 32 kb/s (ARGS: more of ffmpeg's
 * encoder options) in DIR/NAME; 16 kHz mono, so a segment's samples are the decoder's. */
static void make_aac_noise(const char *dir, const char *name, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -filter_complex "
             "\"anoisesrc=d=8:a=0.3:seed=7[n];sine=f=440:d=8[s];[n][s]amix=inputs=2\" "
             "-ar 16000 -ac 1 -c:a aac -b:a 32k %s %s", args, tmp(dir, name));
    must_run(cmd);
}

/* AAC-LC segments are reached by seeking (a few frames before them decoded first): without
 * noise substitution they are the whole decode's samples bit for bit, and a segment after
 * damaged packets decodes, where the whole file fails there. */
Test(audio_av, aac_segments_are_reached_by_seeking, .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    make_aac_noise(dir, "clean.m4a", "-aac_pns 0 -movflags +faststart");
    char path[1024], bad[1024];
    snprintf(path, sizeof path, "%s", tmp(dir, "clean.m4a"));
    snprintf(bad, sizeof bad, "%s", tmp(dir, "bad.m4a"));
    ws_audio whole, seg;
    ws_err e;
    cr_assert_eq(load(&whole, path, WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
    static const double starts[] = {2.0, 4.3, 6.1};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(load(&seg, path, WS_DECODE_DEFAULT, starts[i], 1.5, &e), 0, "%s", e.msg);
        const size_t at = (size_t)llround(starts[i] * 16000);
        cr_assert_leq(at + seg.n, whole.n);
        assert_same(seg.x, seg.n, whole.x + at, 24000, "AAC segment");
        ws_audio_free(&seg);
    }
    /* packets around 0.3 s overwritten: decoding from the start fails there */
    size_t n;
    unsigned char *b = slurp(path, &n);
    const unsigned char *mdat = memmem(b, n, "mdat", 4);
    cr_assert_not_null(mdat);
    const size_t from = (size_t)(mdat - b) + 4 + (n - (size_t)(mdat - b)) * 6 / 100;
    for (size_t k = from; k < from + 1500 && k < n; k++)
        b[k] = (unsigned char)(k * 131 + 7);
    FILE *f = fopen(bad, "wb");
    cr_assert(f && fwrite(b, 1, n, f) == n && fclose(f) == 0);
    free(b);
    cr_assert_neq(load(&seg, bad, WS_DECODE_DEFAULT, 0, 0, &e), 0, "the damaged file decoded");
    cr_assert_neq(load(&seg, bad, WS_DECODE_DEFAULT, 0.1, 1.0, &e), 0);
    cr_assert_eq(load(&seg, bad, WS_DECODE_DEFAULT, 6.0, 1.5, &e), 0, "%s", e.msg);
    assert_same(seg.x, seg.n, whole.x + 96000, 24000, "AAC segment after damage");
    ws_audio_free(&seg);
    ws_audio_free(&whole);
}

/* With perceptual noise substitution (FFmpeg's encoder's default), a seeked segment's
 * noise bands hold noise of their own: the same on every read, of the same energy as the
 * whole decode's, while the tone's samples (below the bands with noise) stay put. */
Test(audio_av, aac_noise_substitution_segments_are_repeatable_and_of_the_same_energy,
     .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    make_aac_noise(dir, "pns.m4a", "");
    char path[1024];
    snprintf(path, sizeof path, "%s", tmp(dir, "pns.m4a"));
    ws_audio whole, seg, again;
    ws_err e;
    cr_assert_eq(load(&whole, path, WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
    for (double st = 2.0; st <= 6.0; st += 2.0) {
        cr_assert_eq(load(&seg, path, WS_DECODE_DEFAULT, st, 1.5, &e), 0, "%s", e.msg);
        cr_assert_eq(load(&again, path, WS_DECODE_DEFAULT, st, 1.5, &e), 0, "%s", e.msg);
        assert_same(seg.x, seg.n, again.x, again.n, "the same segment read twice");
        const size_t at = (size_t)llround(st * 16000);
        double es = 0, ew = 0, cs = 0, cw = 0, ss = 0, sw = 0;
        for (size_t t = 0; t < seg.n; t++) {
            const double ph = 2 * M_PI * 440.0 * (double)(at + t) / 16000;
            es += (double)seg.x[t] * seg.x[t];
            ew += (double)whole.x[at + t] * whole.x[at + t];
            cs += seg.x[t] * cos(ph), ss += seg.x[t] * sin(ph);
            cw += whole.x[at + t] * cos(ph), sw += whole.x[at + t] * sin(ph);
        }
        cr_assert_lt(fabs(es / ew - 1), 0.01, "energy from %.1f s: %g of the whole's", st, es / ew);
        const double tone = hypot(cs - cw, ss - sw) / hypot(cw, sw);
        cr_assert_lt(tone, 0.01, "the tone from %.1f s differs by %g", st, tone);
        ws_audio_free(&seg);
        ws_audio_free(&again);
    }
    ws_audio_free(&whole);
}

/* The largest |difference| of seg's samples from whole's at `at`, away from the
 * resampler's edges. */
static double interior_diff(const ws_audio *seg, const ws_audio *whole, size_t at)
{
    cr_assert_leq(at + seg->n, whole->n);
    double worst = 0;
    for (size_t t = 300; t + 300 < seg->n; t++) {
        const double d = fabs((double)seg->x[t] - whole->x[at + t]);
        worst = d > worst ? d : worst;
    }
    return worst;
}

#ifdef WS_HAVE_LIBAV
/* Frames [0, n) of path's first audio stream at its own rate through FFmpeg's decoder,
 * from the start, or, with at > 0, after ws_av_seek(at) (frames from `at` on); *packets:
 * the packets decoded. */
static float *av_frames(const char *path, int64_t at, size_t n, long *packets)
{
    int fd = open(path, O_RDONLY);
    cr_assert_geq(fd, 0);
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    source s = {.fd = fd, .len = (uint64_t)st.st_size};
    ws_av *h;
    int known, rate, ch, sr, sc;
    ws_err e = {{0}};
    cr_assert_eq(ws_av_open(&h, &s, 0, &known, path, &e), 0, "%s", e.msg);
    ws_av_info(h, &rate, &ch, &sr, &sc);
    cr_assert_eq(ch, 1);
    int64_t pos = 0;
    if (at > 0) {
        pos = ws_av_seek(h, at, path, &e);
        cr_assert(pos >= 0 && pos <= at, "seek to %lld: %lld (%s)", (long long)at, (long long)pos, e.msg);
    }
    float *x = malloc((n + (size_t)(at - pos)) * sizeof *x);
    size_t have = 0;
    while (have < n + (size_t)(at - pos)) {
        long k = ws_av_read(h, x + have, (long)(n + (size_t)(at - pos) - have), have, path, &e);
        cr_assert_gt(k, 0, "read: %s", e.msg);
        have += (size_t)k;
    }
    memmove(x, x + (at - pos), n * sizeof *x);
    *packets = ws_av_packets(h);
    ws_av_close(h);
    ws_audio_src_release(&s);
    close(fd);
    return x;
}
#endif

/* Opus in WebM (millisecond timestamps, which may jump) is reached by seeking to places
 * learnt by counting each packet's samples: a segment is the whole decode's to within half
 * a 16-bit step (the decoder's state after its pre-roll), also in a file whose timestamps
 * jump, and also for a start within a pre-roll of the beginning; a seek decodes only what
 * is near it. Lost data before a segment fails it: its place cannot be counted. */
Test(audio_av, opus_in_webm_segments_are_reached_by_seeking, .timeout = 180)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char path[1024], gap[1024], bad[1024], cmd[8192];
    snprintf(path, sizeof path, "%s", tmp(dir, "speech.webm"));
    snprintf(gap, sizeof gap, "%s", tmp(dir, "gap.webm"));
    snprintf(bad, sizeof bad, "%s", tmp(dir, "bad.webm"));
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -stream_loop 3 -i %s -t 40 "
             "-c:a libopus -b:a 32k %s", test_sample("jfk.wav"), path);
    must_run(cmd);
    /* the same packets, their timestamps 137 ms later from 10 s on */
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -i %s -c copy -bsf:a "
             "\"setts=ts=TS+if(gte(TS\\,10000)\\,137\\,0)\" %s", path, gap);
    must_run(cmd);
    /* SILK's 60 ms packets (low-rate voice) */
    char silk[1024], half[1024], joined[1024], list[1024];
    snprintf(silk, sizeof silk, "%s", tmp(dir, "silk60.webm"));
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -stream_loop 3 -i %s -t 40 "
             "-c:a libopus -b:a 12k -application voip -frame_duration 60 %s",
             test_sample("jfk.wav"), silk);
    must_run(cmd);
    /* two files joined by stream copy: the first one's last packet keeps its discard padding,
     * now in the middle */
    snprintf(half, sizeof half, "%s", tmp(dir, "half.webm"));
    snprintf(joined, sizeof joined, "%s", tmp(dir, "joined.webm"));
    snprintf(list, sizeof list, "%s", tmp(dir, "join.txt"));
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -i %s -t 17.3 -c:a libopus %s && "
             "printf \"file '%%s'\\nfile '%%s'\\n\" %s %s > %s && ffmpeg -nostdin -loglevel error "
             "-y -f concat -safe 0 -i %s -c copy %s", path, half, half, path, list, list, joined);
    must_run(cmd);
    ws_audio whole, seg;
    ws_err e;
    const char *files[] = {path, gap, silk, joined};
    static const double starts[] = {0.505, 1.0, 3.0, 7.77, 9.9, 12.3, 24.01, 36.5};
    for (int f = 0; f < 4; f++) {
        ws_audio w;
        cr_assert_eq(load(&w, files[f], WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
        for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
            cr_assert_eq(load(&seg, files[f], WS_DECODE_DEFAULT, starts[i], 2.0, &e), 0, "%s",
                         e.msg);
            cr_assert_eq(seg.n, 32000);
            const double d = interior_diff(&seg, &w, (size_t)llround(starts[i] * 16000));
            cr_assert_lt(d, 1e-4, "%s from %.3f s: %g from the whole decode", files[f],
                         starts[i], d);
            ws_audio_free(&seg);
        }
        if (f == 1) { /* the jump moves timestamps, not samples */
            assert_same(w.x, w.n, whole.x, whole.n, "the file with a timestamp jump");
        }
        if (f == 0)
            whole = w;
        else
            ws_audio_free(&w);
    }
#ifdef WS_HAVE_LIBAV
    /* at the decoder: the frames after a seek, against the whole decode's, and the packets
     * it took (1 s and a pre-roll of at most 0.75 s: under 100 of 20 ms; 1550 from the start) */
    long all, near;
    float *a = av_frames(path, 0, 31 * 48000, &all);
    float *b = av_frames(path, 30 * 48000, 48000, &near);
    double worst = 0;
    for (size_t t = 0; t < 48000; t++)
        worst = fmax(worst, fabs((double)b[t] - a[30 * 48000 + t]));
    cr_assert_lt(worst, 1e-4, "the frames after a seek: %g from the whole decode's", worst);
    cr_assert_lt(near, 100, "%ld packets decoded for 1 s at 30 s", near);
    cr_assert_gt(all, 1500);
    free(a);
    free(b);
#endif
    /* the file's bytes in memory (walked afresh, nothing kept): the same segment */
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    ws_audio mem, file;
    ws_audio_opts o = {.start_s = 24.01, .duration_s = 2.0};
    cr_assert_eq(ws_audio_load_memory_opts(&mem, bytes, n, "mem", &o, &e), 0, "%s", e.msg);
    cr_assert_eq(load(&file, path, WS_DECODE_DEFAULT, 24.01, 2.0, &e), 0, "%s", e.msg);
    assert_same(mem.x, mem.n, file.x, file.n, "a segment of the bytes in memory");
    ws_audio_free(&mem);
    ws_audio_free(&file);
    /* bytes a tenth of the way in overwritten: the demuxer skips what it cannot parse */
    for (size_t k = n / 10; k < n / 10 + 1500; k++)
        bytes[k] = (unsigned char)(k * 131 + 7);
    FILE *fp = fopen(bad, "wb");
    cr_assert(fp && fwrite(bytes, 1, n, fp) == n && fclose(fp) == 0);
    free(bytes);
    cr_assert_neq(load(&seg, bad, WS_DECODE_DEFAULT, 0, 0, &e), 0, "the damaged file decoded");
    cr_assert_neq(load(&seg, bad, WS_DECODE_DEFAULT, 2.0, 6.0, &e), 0, "a segment over damage");
    cr_assert(strstr(e.msg, "damaged"), "%s", e.msg);
    cr_assert_neq(load(&seg, bad, WS_DECODE_DEFAULT, 30.0, 2.0, &e), 0, "a segment after damage");
    cr_assert(strstr(e.msg, "damaged"), "%s", e.msg);
    ws_audio_free(&whole);
}

/* An MP3 of jfk.wav looped to 60 s at 16 kHz and `kbps`, in path. */
static void make_mp3_60s(const char *path, int kbps)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -stream_loop 5 -i %s -t 60 "
             "-ar 16000 -c:a libmp3lame -b:a %dk %s", test_sample("jfk.wav"), kbps, path);
    must_run(cmd);
}

/* MP3 segments: the frame index libmpg123 builds while seeking is kept for the file and
 * given to the next segment's handle. A segment read with it is the one read without it
 * bit for bit, and the whole decode's within a rounding step; a file replaced at the same
 * path (other frames) does not get the old index. */
Test(audio_av, mp3_segments_reuse_the_files_frame_index, .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char path[1024], other[1024];
    snprintf(path, sizeof path, "%s", tmp(dir, "long.mp3"));
    snprintf(other, sizeof other, "%s", tmp(dir, "other.mp3"));
    make_mp3_60s(path, 32);
    ws_audio whole, first, seg, again;
    ws_err e;
    cr_assert_eq(load(&whole, path, WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(load(&first, path, WS_DECODE_DEFAULT, 41.0, 2.0, &e), 0, "%s", e.msg);
    static const double starts[] = {58.0, 20.5, 41.0, 3.25};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(load(&seg, path, WS_DECODE_DEFAULT, starts[i], 2.0, &e), 0, "%s", e.msg);
        const size_t at = (size_t)llround(starts[i] * 16000);
        cr_assert_eq(seg.n, 32000);
        cr_assert_leq(at + seg.n, whole.n);
        for (size_t t = 0; t < seg.n; t++)
            cr_assert_leq(fabs((double)seg.x[t] - whole.x[at + t]), 1e-6,
                          "from %.2f s, sample %zu: %g, whole %g", starts[i], t, (double)seg.x[t],
                          (double)whole.x[at + t]);
        if (starts[i] == 41.0)
            assert_same(seg.x, seg.n, first.x, first.n, "the segment read again");
        ws_audio_free(&seg);
    }
    /* the same path, other frames (another bit rate), put in place by a rename */
    make_mp3_60s(other, 64);
    cr_assert_eq(load(&again, other, WS_DECODE_DEFAULT, 0, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(rename(other, path), 0);
    cr_assert_eq(load(&seg, path, WS_DECODE_DEFAULT, 41.0, 2.0, &e), 0, "%s", e.msg);
    for (size_t t = 0; t < seg.n; t++)
        cr_assert_leq(fabs((double)seg.x[t] - again.x[656000 + t]), 1e-6,
                      "the replaced file, sample %zu: %g, whole %g", t, (double)seg.x[t],
                      (double)again.x[656000 + t]);
    ws_audio_free(&seg);
    ws_audio_free(&again);
    ws_audio_free(&first);
    ws_audio_free(&whole);
}

typedef struct {
    const char *path;
    int first; /* the segment this thread starts at */
    int failed;
    float *out[8]; /* 8 segments of 1 s at 7 s steps, in order */
} seg_job;

static void *segments_job(void *u)
{
    seg_job *j = u;
    for (int k = 0; k < 8; k++) {
        const int i = (j->first + k * 3) % 8;
        ws_audio a;
        ws_err e;
        if (load(&a, j->path, WS_DECODE_DEFAULT, 1.5 + 7.0 * i, 1.0, &e) || a.n != 16000) {
            j->failed = 1;
            return NULL;
        }
        j->out[i] = a.x;
    }
    return NULL;
}

/* Segments of two 60 s files read by one thread, then by 8 at once, must match. */
static void segments_on_threads(char paths[2][1024])
{
    seg_job one[2] = {{.path = paths[0]}, {.path = paths[1]}};
    for (int f = 0; f < 2; f++) { /* alone: each segment in a fresh order, one thread */
        segments_job(&one[f]);
        cr_assert(!one[f].failed);
    }
    seg_job jobs[8];
    pthread_t th[8];
    for (int t = 0; t < 8; t++) {
        jobs[t] = (seg_job){.path = paths[t % 2], .first = t};
        cr_assert_eq(pthread_create(&th[t], NULL, segments_job, &jobs[t]), 0);
    }
    for (int t = 0; t < 8; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < 8; t++) {
        cr_assert(!jobs[t].failed, "thread %d failed", t);
        for (int i = 0; i < 8; i++) {
            cr_assert_eq(memcmp(jobs[t].out[i], one[t % 2].out[i], 16000 * sizeof(float)), 0,
                         "thread %d, segment %d", t, i);
            free(jobs[t].out[i]);
        }
    }
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < 8; i++)
            free(one[f].out[i]);
}

/* MP3 segments of several files read on several threads at once (the frame indexes kept
 * for the files are shared): the same samples as one thread's, each read alone. */
Test(audio_av, mp3_segments_on_several_threads_match_one_threads, .timeout = 180)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char paths[2][1024];
    for (int f = 0; f < 2; f++) {
        snprintf(paths[f], sizeof paths[f], "%s/t%d.mp3", dir, f);
        make_mp3_60s(paths[f], 32 + 16 * f);
    }
    segments_on_threads(paths);
}

/* The same for Opus in WebM (the places kept for the files are shared, and walked on by
 * whichever thread needs them first). */
Test(audio_av, opus_segments_on_several_threads_match_one_threads, .timeout = 180)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char paths[2][1024], cmd[4096];
    for (int f = 0; f < 2; f++) {
        snprintf(paths[f], sizeof paths[f], "%s/t%d.webm", dir, f);
        snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -stream_loop 5 -i %s -t 60 "
                 "-c:a libopus -b:a %dk %s", test_sample("jfk.wav"), 24 + 16 * f, paths[f]);
        must_run(cmd);
    }
    segments_on_threads(paths);
}

/* Starts past the end fail; an end past it by up to 25 ms is cut there, by more fails;
 * negative or non-finite values fail. */
Test(audio_av, segments_past_the_end, .timeout = 60)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    make(dir, "s16.wav", "-ar 16000 -c:a pcm_s16le");
    make(dir, "opus.webm", "-c:a libopus");
    const char *names[] = {"s16.wav", "opus.webm"};
    for (int i = 0; i < 2; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s", tmp(dir, names[i]));
        ws_audio a;
        ws_err e;
        cr_assert_eq(load(&a, path, WS_DECODE_DEFAULT, 4.5, 1, &e), -1);
        cr_assert_not_null(strstr(e.msg, "the segment starts at 4.500 s, after the end"), "%s",
                           e.msg);
        cr_assert_eq(load(&a, path, WS_DECODE_DEFAULT, 3.5, 0.6, &e), -1);
        cr_assert_not_null(strstr(e.msg, "the segment ends at 4.100 s, after the end"), "%s",
                           e.msg);
        cr_assert_eq(load(&a, path, WS_DECODE_DEFAULT, 3.5, 0.52, &e), 0, "%s", e.msg);
        cr_assert_eq(a.n, 8000, "%s: %zu samples", names[i], a.n);
        ws_audio_free(&a);
        cr_assert_eq(load(&a, path, WS_DECODE_DEFAULT, -1, 1, &e), -1);
        cr_assert_not_null(strstr(e.msg, "a segment needs"), "%s", e.msg);
        cr_assert_eq(load(&a, path, WS_DECODE_DEFAULT, 1, NAN, &e), -1);
    }
}

/* --- a file's bytes inside another (a member of a tar shard) --------------- */

/* Writes junk, then path's bytes, then junk into `into`; the offset of path's bytes. */
static uint64_t embed_bytes(const char *path, const char *into, size_t *len)
{
    unsigned char *b = slurp(path, len);
    FILE *f = fopen(into, "wb");
    cr_assert_not_null(f);
    for (int i = 0; i < 1536; i++)
        fputc(i * 31 % 256, f);
    fwrite(b, 1, *len, f);
    for (int i = 0; i < 700; i++)
        fputc(i * 17 % 256, f);
    fclose(f);
    free(b);
    return 1536;
}

/* A range of a file decodes as the file those bytes were: WAV, FLAC, an ID3-tagged MP3,
 * AAC in MP4 (FFmpeg), in both modes and with a segment; a range past the end fails. */
Test(audio_av, a_range_of_a_file_decodes_as_that_file, .timeout = 120)
{
    if (!have_ffmpeg())
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    static const char *const names[][2] = {
        {"a.wav", "-ar 22050 -ac 2 -c:a pcm_s16le"},
        {"a.flac", "-ar 16000"},
        {"a.mp3", "-ar 44100 -c:a libmp3lame -id3v2_version 3 -metadata title=x"},
        {"a.m4a", "-c:a aac"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        make(dir, names[i][0], names[i][1]);
        char path[1024], shard[1024];
        snprintf(path, sizeof path, "%s", tmp(dir, names[i][0]));
        snprintf(shard, sizeof shard, "%s", tmp(dir, "shard.bin"));
        size_t len;
        uint64_t off = embed_bytes(path, shard, &len);
        for (int mode = 0; mode < 2; mode++) {
            for (int seg = 0; seg < 2; seg++) {
                ws_audio_opts o = {.decode = mode, .start_s = seg ? 1.0 : 0,
                                   .duration_s = seg ? 2.0 : 0};
                ws_audio want, got;
                ws_err e = {{0}};
                cr_assert_eq(ws_audio_load_opts(&want, path, &o, &e), 0, "%s", e.msg);
                cr_assert_eq(ws_audio_load_range(&got, shard, off, len, "shard:a", &o, &e), 0,
                             "%s: %s", names[i][0], e.msg);
                assert_same(got.x, got.n, want.x, want.n, names[i][0]);
                cr_assert_eq(got.src_rate, want.src_rate);
                ws_audio_free(&want);
                ws_audio_free(&got);
            }
        }
        ws_audio a;
        ws_err e = {{0}};
        cr_assert_eq(ws_audio_load_range(&a, shard, off, len + 5000, "shard:a", NULL, &e), -1);
        cr_assert_not_null(strstr(e.msg, "shard:a: bytes 1536.."), "%s", e.msg);
        cr_assert_not_null(strstr(e.msg, "lie past the end"), "%s", e.msg);
    }
}

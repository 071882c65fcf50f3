/* test_api.c - include/whisper_stem.h: every call, its error paths and their messages,
 * and its results against the command's files for the same inputs.
 *
 * The claims held here: on the CPU the library's arrays are the bytes whisper-stem
 * writes (embeddings with and without --pos and --no-pad, --mel), for a file, for PCM
 * at 16 kHz, and for PCM at 44.1 kHz stereo against the same samples written as a float
 * WAV; embed_mel(log_mel(x)) is embed_pcm(x); a batch gives embed_file's bytes in input
 * order, a bad input in the middle failing alone with its own message; one context used
 * from several threads at once gives the same bytes as one at a time.
 * The models are tiny random ones from ws-mkmodel; the audio is samples/jfk.wav and
 * tones written here.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whisper_stem.h"

#include "common.h"
#include "cuda/driver.h"
#include "helpers.h"
#include "stub/stub_cuda.h"

typedef struct {
    float *data;
    int64_t shape[4];
    int ndim;
    size_t count;
} npy;

/* A '<f4' C-order .npy as whisper-stem writes it. */
static npy load_npy(const char *path)
{
    npy a = {0};
    size_t len;
    uint8_t *b = read_file(path, &len);
    cr_assert(b, "cannot read %s", path);
    cr_assert(len >= 10 && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0, "%s: not npy 1.0", path);
    size_t hl = 10 + (b[8] | (size_t)b[9] << 8);
    char *h = strndup((char *)b + 10, hl - 10);
    cr_assert(strstr(h, "'descr': '<f4'"), "%s: header %s", path, h);
    char *p = strstr(h, "'shape': (");
    cr_assert(p);
    p += 10;
    a.count = 1;
    while (*p && *p != ')') {
        long long v = strtoll(p, &p, 10);
        a.shape[a.ndim++] = v;
        a.count *= (size_t)v;
        while (*p == ',' || *p == ' ')
            p++;
    }
    free(h);
    cr_assert_eq(len - hl, a.count * 4, "%s: payload", path);
    a.data = malloc(a.count * 4 + 4);
    memcpy(a.data, b + hl, a.count * 4);
    free(b);
    return a;
}

/* got has want's shape and bytes. */
static void assert_same(const char *what, const whisper_stem_array *got, const npy *want)
{
    cr_assert_eq(got->ndim, want->ndim, "%s: ndim %d, the command's %d", what, got->ndim,
                 want->ndim);
    size_t count = 1;
    for (int i = 0; i < got->ndim; i++) {
        cr_assert_eq(got->shape[i], want->shape[i], "%s: shape[%d] %lld, the command's %lld",
                     what, i, (long long)got->shape[i], (long long)want->shape[i]);
        count *= (size_t)got->shape[i];
    }
    for (size_t i = 0; i < count; i++)
        if (memcmp(&got->data[i], &want->data[i], 4))
            cr_assert_fail("%s: element %zu is %.9g, the command wrote %.9g", what, i,
                           got->data[i], want->data[i]);
}

static void assert_arrays_equal(const char *what, const whisper_stem_array *a,
                                const whisper_stem_array *b)
{
    cr_assert_eq(a->ndim, b->ndim, "%s: ndim", what);
    size_t count = 1;
    for (int i = 0; i < a->ndim; i++) {
        cr_assert_eq(a->shape[i], b->shape[i], "%s: shape[%d]", what, i);
        count *= (size_t)a->shape[i];
    }
    cr_assert(count == 0 || memcmp(a->data, b->data, count * 4) == 0, "%s: the bytes differ",
              what);
}

static void mkmodel(const char *dir, const char *args, char *path, size_t cap)
{
    snprintf(path, cap, "%s/model.gguf", dir);
    char cmd[2048], err[1024];
    snprintf(cmd, sizeof cmd, "%s %s -o %s", ws_mkmodel(), args, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
}

/* whisper-stem ARGS IN -o OUT (with --threads 2: bytes do not depend on it). */
static npy cli(const char *args, const char *in, const char *out)
{
    char cmd[4096], err[1024];
    snprintf(cmd, sizeof cmd, "%s -q --device cpu --threads 2 %s '%s' -o '%s'", ws_bin(), args,
             in, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
    return load_npy(out);
}

static whisper_stem *new_ctx(const char *model, int pad, int pos)
{
    whisper_stem_params p = whisper_stem_default_params();
    p.model = model;
    p.device = "cpu";
    p.threads = 3;
    p.pad = pad;
    p.pos = pos;
    whisper_stem_error err = {""};
    whisper_stem *ws = whisper_stem_new(&p, &err);
    cr_assert(ws, "whisper_stem_new: %s", err.msg);
    return ws;
}

static void write_wav(const char *path, const float *x, size_t frames, int rate, int ch,
                      int format)
{
    SF_INFO info = {.samplerate = rate, .channels = ch, .format = format};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert(f, "sf_open %s: %s", path, sf_strerror(NULL));
    cr_assert_eq(sf_writef_float(f, x, (sf_count_t)frames), (sf_count_t)frames);
    sf_close(f);
}

/* frames of ch channels at rate: tones (a different one per channel) and a little noise. */
static float *tones(size_t frames, int rate, int ch, uint64_t seed)
{
    ws_rng r = {seed};
    float *x = malloc(sizeof(float) * frames * (size_t)ch + 4);
    for (size_t t = 0; t < frames; t++)
        for (int c = 0; c < ch; c++)
            x[t * ch + c] = (float)(0.3 * sin(2 * M_PI * (220.0 * (c + 1)) * t / rate) +
                                    0.05 * (ws_rng_uniform(&r) - 0.5));
    return x;
}

/* --- the basics ------------------------------------------------------------ */

Test(api, version_is_the_headers_and_the_commands)
{
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", WHISPER_STEM_VERSION_MAJOR, WHISPER_STEM_VERSION_MINOR,
             WHISPER_STEM_VERSION_PATCH);
    cr_assert_str_eq(whisper_stem_version(), v);
    cr_assert_str_eq(whisper_stem_version(), WS_VERSION);
}

Test(api, default_params_are_the_commands_defaults)
{
    whisper_stem_params p = whisper_stem_default_params();
    cr_assert_null(p.model);
    cr_assert_str_eq(p.device, "auto");
    cr_assert_str_eq(p.precision, "fp32");
    cr_assert_eq(p.threads, 0);
    cr_assert_eq(p.n_mels, 0);
    cr_assert_eq(p.pad, WHISPER_STEM_PAD_AUDIO);
    cr_assert_eq(p.pos, 0);
}

Test(api, a_context_without_a_model_computes_log_mel_only)
{
    whisper_stem *ws = whisper_stem_new(NULL, NULL); /* NULL params: the defaults */
    cr_assert(ws);
    cr_assert_eq(whisper_stem_n_mels(ws), 80);
    cr_assert_eq(whisper_stem_d_model(ws), 0);
    cr_assert_str_eq(whisper_stem_device(ws), "cpu");
    float pcm[1600] = {0};
    whisper_stem_array a = {0}, e = {.ndim = 9};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_log_mel(ws, pcm, 1600, 16000, 1, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 80);
    cr_assert_eq(a.shape[1], 3000);
    /* silence: every value is the floor, log10(1e-10) = -10 -> (-10 + 4) / 4 */
    for (size_t i = 0; i < 80 * 3000; i++)
        cr_assert_float_eq(a.data[i], -1.5f, 1e-6, "at %zu", i);
    whisper_stem_array_free(&a);
    cr_assert_null(a.data);
    cr_assert_eq(a.ndim, 0);

    cr_assert_eq(whisper_stem_embed_pcm(ws, pcm, 1600, 16000, 1, &e, &err), -1);
    cr_assert(strstr(err.msg, "no model"), "%s", err.msg);
    cr_assert_eq(e.ndim, 0, "out is zeroed on failure");
    cr_assert_eq(whisper_stem_embed_file(ws, test_sample("jfk.wav"), &e, &err), -1);
    cr_assert(strstr(err.msg, "no model"), "%s", err.msg);
    float mel[80 * 3000] = {0};
    cr_assert_eq(whisper_stem_embed_mel(ws, mel, 80, 3000, &e, &err), -1);
    cr_assert(strstr(err.msg, "no model"), "%s", err.msg);
    const char *paths[] = {test_sample("jfk.wav")};
    cr_assert_null(whisper_stem_batch_open(ws, paths, 1, &err));
    cr_assert(strstr(err.msg, "no model"), "%s", err.msg);
    whisper_stem_free(ws);

    whisper_stem_params p = whisper_stem_default_params();
    p.n_mels = 128;
    ws = whisper_stem_new(&p, &err);
    cr_assert(ws, "%s", err.msg);
    cr_assert_eq(whisper_stem_n_mels(ws), 128);
    cr_assert_eq(whisper_stem_log_mel(ws, pcm, 1600, 16000, 1, &a, NULL), 0);
    cr_assert_eq(a.shape[0], 128);
    whisper_stem_array_free(&a);
    whisper_stem_free(ws);
}

Test(api, bad_params_fail_naming_the_field)
{
    static const struct {
        const char *device, *precision;
        int threads, n_mels, pad;
        const char *want;
    } cases[] = {
        {"gpu", NULL, 0, 0, 0, "params.device 'gpu'"},
        {"cuda:x", NULL, 0, 0, 0, "params.device 'cuda:x'"},
        {"cuda:1024", NULL, 0, 0, 0, "params.device 'cuda:1024'"},
        {NULL, "fp64", 0, 0, 0, "params.precision 'fp64'"},
        {NULL, NULL, -1, 0, 0, "params.threads -1"},
        {NULL, NULL, 257, 0, 0, "params.threads 257"},
        {NULL, NULL, 0, 64, 0, "params.n_mels 64"},
        {NULL, NULL, 0, 0, 3, "params.pad 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        whisper_stem_params p = whisper_stem_default_params();
        p.device = cases[i].device;
        p.precision = cases[i].precision;
        p.threads = cases[i].threads;
        p.n_mels = cases[i].n_mels;
        p.pad = cases[i].pad;
        whisper_stem_error err = {""};
        cr_assert_null(whisper_stem_new(&p, &err), "case %zu was accepted", i);
        cr_assert(strstr(err.msg, cases[i].want), "case %zu: '%s' lacks '%s'", i, err.msg,
                  cases[i].want);
        cr_assert_null(strchr(err.msg, '\n'), "one line: %s", err.msg);
        cr_assert_null(whisper_stem_new(&p, NULL), "err may be NULL");
    }
}

Test(api, a_missing_or_mismatched_model_is_one_line_naming_it)
{
    whisper_stem_params p = whisper_stem_default_params();
    p.model = "/nonexistent/tiny.gguf";
    whisper_stem_error err = {""};
    cr_assert_null(whisper_stem_new(&p, &err));
    cr_assert(strstr(err.msg, "/nonexistent/tiny.gguf"), "%s", err.msg);

    char model[1024];
    mkmodel(test_tmpdir(), "--size tiny", model, sizeof model);
    p.model = model;
    p.n_mels = 128;
    cr_assert_null(whisper_stem_new(&p, &err));
    cr_assert(strstr(err.msg, "params.n_mels 128") && strstr(err.msg, "80 mel bands"), "%s",
              err.msg);
    p.n_mels = 80;
    p.device = "cpu";
    whisper_stem *ws = whisper_stem_new(&p, &err);
    cr_assert(ws, "%s", err.msg);
    cr_assert_eq(whisper_stem_d_model(ws), 384);
    cr_assert_eq(whisper_stem_n_mels(ws), 80);
    cr_assert_str_eq(whisper_stem_device(ws), "cpu");
    whisper_stem_free(ws);
    whisper_stem_free(NULL);
}

Test(api, null_arguments_are_errors_not_crashes)
{
    whisper_stem_error err = {""};
    whisper_stem_array a = {0};
    float x[4] = {0};
    cr_assert_eq(whisper_stem_load_audio(NULL, &a, &err), -1);
    cr_assert(strstr(err.msg, "path is NULL"), "%s", err.msg);
    cr_assert_eq(whisper_stem_load_audio(test_sample("jfk.wav"), NULL, &err), -1);
    cr_assert(strstr(err.msg, "out is NULL"), "%s", err.msg);
    cr_assert_eq(whisper_stem_log_mel(NULL, x, 4, 16000, 1, &a, &err), -1);
    cr_assert(strstr(err.msg, "ctx is NULL"), "%s", err.msg);
    cr_assert_eq(whisper_stem_embed_pcm(NULL, x, 4, 16000, 1, &a, &err), -1);
    cr_assert_eq(whisper_stem_embed_mel(NULL, x, 80, 3000, &a, &err), -1);
    cr_assert(strstr(err.msg, "ctx is NULL"), "%s", err.msg);
    cr_assert_eq(whisper_stem_embed_file(NULL, "x.wav", &a, &err), -1);
    cr_assert_null(whisper_stem_batch_open(NULL, NULL, 0, &err));
    cr_assert_eq(whisper_stem_batch_next(NULL, &a, NULL, &err), -1);
    cr_assert(strstr(err.msg, "batch is NULL"), "%s", err.msg);
    whisper_stem_batch_close(NULL);
    whisper_stem_array_free(NULL);
    whisper_stem_array_free(&a);

    whisper_stem *ws = whisper_stem_new(NULL, &err);
    cr_assert(ws);
    cr_assert_eq(whisper_stem_log_mel(ws, NULL, 4, 16000, 1, &a, &err), -1);
    cr_assert(strstr(err.msg, "pcm is NULL"), "%s", err.msg);
    cr_assert_eq(whisper_stem_log_mel(ws, x, 4, 16000, 1, NULL, &err), -1);
    cr_assert(strstr(err.msg, "out is NULL"), "%s", err.msg);
    whisper_stem_free(ws);
}

/* A long input is checked in parts on several threads: the first non-finite sample is
 * named, whichever part it is in, and one at the very end is found too. */
Test(api, long_pcm_names_its_first_non_finite_sample, .timeout = 60)
{
    whisper_stem *ws = whisper_stem_new(NULL, NULL);
    whisper_stem_error err = {""};
    whisper_stem_array a = {0};
    const size_t n = (size_t)9 << 20; /* 4 parts */
    float *x = calloc(n, sizeof *x);
    cr_assert_not_null(x);
    const size_t firsts[] = {7500000, (size_t)4 << 20, n - 1};
    for (size_t k = 0; k < sizeof firsts / sizeof *firsts; k++) {
        x[firsts[k]] = k == 1 ? -INFINITY : NAN;
        if (k == 0)
            x[n - 2] = INFINITY; /* a later one, in another part */
        char want[64];
        snprintf(want, sizeof want, "pcm: frame %zu is not a finite number", firsts[k]);
        cr_assert_eq(whisper_stem_log_mel(ws, x, n, 16000, 1, &a, &err), -1);
        cr_assert(strstr(err.msg, want), "want '%s': %s", want, err.msg);
        memset(x, 0, n * sizeof *x);
    }
    free(x);
    whisper_stem_free(ws);
}

Test(api, bad_pcm_fails_with_what_is_wrong)
{
    whisper_stem *ws = whisper_stem_new(NULL, NULL);
    whisper_stem_error err = {""};
    whisper_stem_array a = {0};
    float x[320] = {0};
    cr_assert_eq(whisper_stem_log_mel(ws, x, 160, 0, 1, &a, &err), -1);
    cr_assert(strstr(err.msg, "pcm: sample rate 0 Hz"), "%s", err.msg);
    cr_assert_eq(whisper_stem_log_mel(ws, x, 160, 16000, 0, &a, &err), -1);
    cr_assert(strstr(err.msg, "pcm: 0 channels"), "%s", err.msg);
    x[7] = NAN;
    cr_assert_eq(whisper_stem_log_mel(ws, x, 160, 16000, 2, &a, &err), -1);
    cr_assert(strstr(err.msg, "pcm: frame 3 is not a finite number"), "%s", err.msg);
    cr_assert_null(a.data);
    whisper_stem_free(ws);

    whisper_stem_params p = whisper_stem_default_params();
    p.pad = WHISPER_STEM_PAD_NONE;
    ws = whisper_stem_new(&p, &err);
    x[7] = 0;
    cr_assert_eq(whisper_stem_log_mel(ws, x, 100, 16000, 1, &a, &err), -1);
    cr_assert(strstr(err.msg, "pcm: 100 samples is shorter than one hop"), "%s", err.msg);
    cr_assert_eq(whisper_stem_log_mel(ws, x, 320, 16000, 1, &a, &err), 0, "%s", err.msg);
    cr_assert_eq(a.shape[0], 80);
    cr_assert_eq(a.shape[1], 2, "--no-pad: n / 160 frames");
    whisper_stem_array_free(&a);
    whisper_stem_free(ws);
}

Test(api, load_audio_gives_16k_mono_and_names_a_bad_file)
{
    whisper_stem_array a = {0};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_load_audio(test_sample("jfk.wav"), &a, &err), 0, "%s", err.msg);
    cr_assert_eq(a.ndim, 1);
    cr_assert_eq(a.shape[0], 176000, "jfk.wav: 11 s at 16 kHz");
    float peak = 0;
    for (int64_t i = 0; i < a.shape[0]; i++)
        peak = fabsf(a.data[i]) > peak ? fabsf(a.data[i]) : peak;
    cr_assert(peak > 0.1f && peak <= 1.0f, "peak %g", peak);
    whisper_stem_array_free(&a);

    const char *dir = test_tmpdir();
    char bad[1024];
    snprintf(bad, sizeof bad, "%s/not-audio.wav", dir);
    FILE *f = fopen(bad, "w");
    fputs("this is not a WAV file at all, only text\n", f);
    fclose(f);
    a.ndim = 5;
    cr_assert_eq(whisper_stem_load_audio(bad, &a, &err), -1);
    cr_assert(strncmp(err.msg, bad, strlen(bad)) == 0, "starts with the path: %s", err.msg);
    cr_assert_eq(a.ndim, 0);
    cr_assert_eq(whisper_stem_load_audio("/nonexistent.flac", &a, &err), -1);
    cr_assert(strstr(err.msg, "/nonexistent.flac"), "%s", err.msg);
}

/* Bytes in memory, segments and the decoder: the path's samples and embeddings. */
Test(api, memory_segments_and_decode_are_the_paths_results, .timeout = 120)
{
    const char *dir = test_tmpdir(), *wav = test_sample("jfk.wav");
    char model[1024];
    mkmodel(dir, "--size tiny", model, sizeof model);
    size_t len;
    uint8_t *bytes = read_file(wav, &len);
    cr_assert(bytes);
    whisper_stem_error err = {""};
    whisper_stem_array whole = {0}, mem = {0}, seg = {0}, mseg = {0};
    cr_assert_eq(whisper_stem_load_audio(wav, &whole, &err), 0, "%s", err.msg);
    cr_assert_eq(whisper_stem_load_audio_memory(bytes, len, "jfk", NULL, &mem, &err), 0, "%s",
                 err.msg);
    assert_arrays_equal("load_audio_memory vs load_audio", &mem, &whole);
    whisper_stem_audio_opts o = {.start = 2.5, .duration = 3.25};
    cr_assert_eq(whisper_stem_load_audio_opts(wav, &o, &seg, &err), 0, "%s", err.msg);
    cr_assert_eq(seg.shape[0], 52000);
    cr_assert(memcmp(seg.data, whole.data + 40000, 52000 * 4) == 0,
              "a 16 kHz segment is the samples it covers");
    cr_assert_eq(whisper_stem_load_audio_memory(bytes, len, NULL, &o, &mseg, &err), 0, "%s",
                 err.msg);
    assert_arrays_equal("memory segment vs path segment", &mseg, &seg);

    /* embeddings: of the bytes = of the path; of a segment = of its samples */
    whisper_stem *ws = new_ctx(model, WHISPER_STEM_PAD_AUDIO, 0);
    whisper_stem_array ef = {0}, em = {0}, es = {0}, ep = {0};
    cr_assert_eq(whisper_stem_embed_file(ws, wav, &ef, &err), 0, "%s", err.msg);
    cr_assert_eq(whisper_stem_embed_memory(ws, bytes, len, "jfk", NULL, &em, &err), 0, "%s",
                 err.msg);
    assert_arrays_equal("embed_memory vs embed_file", &em, &ef);
    cr_assert_eq(whisper_stem_embed_file_opts(ws, wav, &o, &es, &err), 0, "%s", err.msg);
    cr_assert_eq(whisper_stem_embed_pcm(ws, seg.data, 52000, 16000, 1, &ep, &err), 0, "%s",
                 err.msg);
    assert_arrays_equal("embed_file_opts(segment) vs embed_pcm(its samples)", &es, &ep);

    /* what fails, naming the call or the input */
    whisper_stem_array x = {0};
    whisper_stem_audio_opts bad = {.decode = "sox"};
    cr_assert_eq(whisper_stem_load_audio_opts(wav, &bad, &x, &err), -1);
    cr_assert(strstr(err.msg, "decode 'sox': must be default or openai"), "%s", err.msg);
    cr_assert_eq(whisper_stem_set_decode(ws, "sox", &err), -1);
    cr_assert(strstr(err.msg, "decode 'sox'"), "%s", err.msg);
    whisper_stem_audio_opts neg = {.start = -1};
    cr_assert_eq(whisper_stem_embed_file_opts(ws, wav, &neg, &x, &err), -1);
    cr_assert(strstr(err.msg, "a segment needs a start and a duration of 0 or more"), "%s",
              err.msg);
    whisper_stem_audio_opts late = {.start = 20, .duration = 1};
    cr_assert_eq(whisper_stem_embed_memory(ws, bytes, len, "clip-7", &late, &x, &err), -1);
    cr_assert(strncmp(err.msg, "clip-7: the segment starts at 20.000 s", 38) == 0, "%s",
              err.msg);
    cr_assert_eq(whisper_stem_load_audio_memory(NULL, 10, NULL, NULL, &x, &err), -1);
    cr_assert(strstr(err.msg, "data is NULL"), "%s", err.msg);
    cr_assert_eq(whisper_stem_load_audio_memory(bytes, 40, NULL, NULL, &x, &err), -1);
    cr_assert(strncmp(err.msg, "(memory): ", 10) == 0, "%s", err.msg);
    cr_assert_eq(x.ndim, 0);

    /* the decoder: openai's samples of a 16 kHz 16-bit mono WAV are its own */
    whisper_stem_array oa = {0};
    whisper_stem_audio_opts openai = {.decode = "openai"};
    if (whisper_stem_load_audio_opts(wav, &openai, &oa, &err) == 0) {
        assert_arrays_equal("--decode openai of 16 kHz int16 mono", &oa, &whole);
        whisper_stem_array eo = {0};
        cr_assert_eq(whisper_stem_set_decode(ws, "openai", &err), 0, "%s", err.msg);
        cr_assert_eq(whisper_stem_embed_file(ws, wav, &eo, &err), 0, "%s", err.msg);
        assert_arrays_equal("embed_file with decode openai", &eo, &ef);
        whisper_stem_array_free(&eo);
        whisper_stem_array_free(&oa);
    } else {
        cr_assert(strstr(err.msg, "needs FFmpeg's libraries"), "%s", err.msg);
    }
    whisper_stem_array *all[] = {&whole, &mem, &seg, &mseg, &ef, &em, &es, &ep};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        whisper_stem_array_free(all[i]);
    whisper_stem_free(ws);
    free(bytes);
}

/* --- against the command ----------------------------------------------------- */

Test(api, log_mel_is_the_commands_mel_bit_for_bit, .timeout = 60)
{
    const char *dir = test_tmpdir(), *wav = test_sample("jfk.wav");
    char out[1024];
    snprintf(out, sizeof out, "%s/mel.npy", dir);
    npy want = cli("--mel", wav, out);
    whisper_stem *ws = whisper_stem_new(NULL, NULL);
    whisper_stem_array pcm = {0}, got = {0};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_load_audio(wav, &pcm, &err), 0, "%s", err.msg);
    cr_assert_eq(whisper_stem_log_mel(ws, pcm.data, (size_t)pcm.shape[0], 16000, 1, &got, &err),
                 0, "%s", err.msg);
    assert_same("log_mel(jfk.wav)", &got, &want);
    whisper_stem_array_free(&got);
    whisper_stem_array_free(&pcm);
    whisper_stem_free(ws);
    free(want.data);
}

Test(api, embeddings_are_the_commands_bytes_with_and_without_pos_and_padding, .timeout = 120)
{
    const char *dir = test_tmpdir(), *wav = test_sample("jfk.wav");
    char model[1024], out[1024], args[1200];
    mkmodel(dir, "--size tiny", model, sizeof model);
    static const struct {
        const char *flags;
        int pad, pos;
    } modes[] = {
        {"", WHISPER_STEM_PAD_AUDIO, 0},
        {"--pos", WHISPER_STEM_PAD_AUDIO, 1},
        {"--no-pad", WHISPER_STEM_PAD_NONE, 0},
        {"--pad mel0 --pos", WHISPER_STEM_PAD_MEL0, 1},
    };
    whisper_stem_array pcm = {0};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_load_audio(wav, &pcm, &err), 0, "%s", err.msg);
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        snprintf(out, sizeof out, "%s/emb%zu.npy", dir, m);
        snprintf(args, sizeof args, "-m '%s' %s", model, modes[m].flags);
        npy want = cli(args, wav, out);
        whisper_stem *ws = new_ctx(model, modes[m].pad, modes[m].pos);
        whisper_stem_array f = {0}, p = {0}, mel = {0}, fm = {0};
        cr_assert_eq(whisper_stem_embed_file(ws, wav, &f, &err), 0, "%s", err.msg);
        assert_same(modes[m].flags, &f, &want);
        cr_assert_eq(whisper_stem_embed_pcm(ws, pcm.data, (size_t)pcm.shape[0], 16000, 1, &p,
                                            &err), 0, "%s", err.msg);
        assert_same(modes[m].flags, &p, &want);
        cr_assert_eq(whisper_stem_log_mel(ws, pcm.data, (size_t)pcm.shape[0], 16000, 1, &mel,
                                          &err), 0, "%s", err.msg);
        cr_assert_eq(whisper_stem_embed_mel(ws, mel.data, (int)mel.shape[0], mel.shape[1], &fm,
                                            &err), 0, "%s", err.msg);
        assert_arrays_equal("embed_mel(log_mel(x)) vs embed_pcm(x)", &fm, &p);
        if (modes[m].pad == WHISPER_STEM_PAD_NONE)
            cr_assert_eq(f.shape[0], (176000 / 160 - 1) / 2 + 1);
        else
            cr_assert_eq(f.shape[0], 1500);
        cr_assert_eq(f.shape[1], 384);
        whisper_stem_array_free(&f);
        whisper_stem_array_free(&p);
        whisper_stem_array_free(&mel);
        whisper_stem_array_free(&fm);
        whisper_stem_free(ws);
        free(want.data);
    }
    whisper_stem_array_free(&pcm);
}

Test(api, pcm_at_44k_stereo_equals_the_command_on_that_wav, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[1024], wav[1024], out[1024], args[1200];
    mkmodel(dir, "--size tiny", model, sizeof model);
    const size_t frames = 44100 * 7 + 123;
    float *x = tones(frames, 44100, 2, 7);
    snprintf(wav, sizeof wav, "%s/stereo44k.wav", dir);
    write_wav(wav, x, frames, 44100, 2, SF_FORMAT_WAV | SF_FORMAT_FLOAT);

    snprintf(out, sizeof out, "%s/emb.npy", dir);
    snprintf(args, sizeof args, "-m '%s'", model);
    npy want = cli(args, wav, out);
    whisper_stem *ws = new_ctx(model, WHISPER_STEM_PAD_AUDIO, 0);
    whisper_stem_array got = {0};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_embed_pcm(ws, x, frames, 44100, 2, &got, &err), 0, "%s", err.msg);
    assert_same("embed_pcm(44.1 kHz stereo)", &got, &want);
    whisper_stem_array_free(&got);
    free(want.data);

    snprintf(out, sizeof out, "%s/mel.npy", dir);
    want = cli("--mel", wav, out);
    cr_assert_eq(whisper_stem_log_mel(ws, x, frames, 44100, 2, &got, &err), 0, "%s", err.msg);
    assert_same("log_mel(44.1 kHz stereo)", &got, &want);
    whisper_stem_array_free(&got);
    free(want.data);
    whisper_stem_free(ws);
    free(x);
}

Test(api, long_audio_gives_the_commands_windows, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[1024], wav[1024], out[1024], args[1200];
    mkmodel(dir, "--size tiny", model, sizeof model);
    const size_t n = 16000 * 65; /* 3 windows */
    float *x = tones(n, 16000, 1, 3);
    snprintf(wav, sizeof wav, "%s/long.wav", dir);
    write_wav(wav, x, n, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);

    snprintf(out, sizeof out, "%s/emb.npy", dir);
    snprintf(args, sizeof args, "-m '%s'", model);
    npy want = cli(args, wav, out);
    cr_assert_eq(want.ndim, 3);
    cr_assert_eq(want.shape[0], 3);
    whisper_stem *ws = new_ctx(model, WHISPER_STEM_PAD_AUDIO, 0);
    whisper_stem_array got = {0}, mel = {0}, fm = {0};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_embed_pcm(ws, x, n, 16000, 1, &got, &err), 0, "%s", err.msg);
    assert_same("embed_pcm(65 s)", &got, &want);
    free(want.data);

    /* the log-Mel: [80][9000] here, the command's [3][80][3000] the same windows stacked */
    snprintf(out, sizeof out, "%s/mel.npy", dir);
    want = cli("--mel", wav, out);
    cr_assert_eq(whisper_stem_log_mel(ws, x, n, 16000, 1, &mel, &err), 0, "%s", err.msg);
    cr_assert_eq(mel.ndim, 2);
    cr_assert_eq(mel.shape[0], 80);
    cr_assert_eq(mel.shape[1], 9000);
    cr_assert_eq(want.ndim, 3);
    for (int w = 0; w < 3; w++)
        for (int m = 0; m < 80; m++)
            cr_assert(memcmp(mel.data + (size_t)m * 9000 + (size_t)w * 3000,
                             want.data + ((size_t)w * 80 + m) * 3000, 3000 * 4) == 0,
                      "window %d band %d differs from the command's", w, m);
    cr_assert_eq(whisper_stem_embed_mel(ws, mel.data, 80, 9000, &fm, &err), 0, "%s", err.msg);
    assert_arrays_equal("embed_mel(log_mel(65 s))", &fm, &got);

    /* whole windows only, and the context's band count */
    cr_assert_eq(whisper_stem_embed_mel(ws, mel.data, 80, 4000, &fm, &err), -1);
    cr_assert(strstr(err.msg, "n_frames 4000: must be a positive multiple of 3000"), "%s",
              err.msg);
    cr_assert_null(fm.data);
    cr_assert_eq(whisper_stem_embed_mel(ws, mel.data, 80, 0, &fm, &err), -1);
    cr_assert(strstr(err.msg, "n_frames 0"), "%s", err.msg);
    cr_assert_eq(whisper_stem_embed_mel(ws, mel.data, 128, 3000, &fm, &err), -1);
    cr_assert(strstr(err.msg, "n_mels 128, but the model takes 80"), "%s", err.msg);
    cr_assert_eq(whisper_stem_embed_mel(ws, NULL, 80, 3000, &fm, &err), -1);
    cr_assert(strstr(err.msg, "mel is NULL"), "%s", err.msg);
    whisper_stem_array_free(&got);
    whisper_stem_array_free(&mel);
    whisper_stem_free(ws);
    free(want.data);
    free(x);
}

Test(api, embed_mel_refuses_a_non_finite_log_mel_naming_its_place, .timeout = 60)
{
    char model[1024];
    mkmodel(test_tmpdir(), "--size tiny", model, sizeof model);
    whisper_stem *ws = new_ctx(model, WHISPER_STEM_PAD_AUDIO, 0);
    const size_t F = 6000; /* two windows: the place is counted in the caller's layout */
    float *mel = calloc(80 * F, sizeof *mel);
    whisper_stem_array out = {0};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_embed_mel(ws, mel, 80, (int64_t)F, &out, &err), 0, "%s", err.msg);
    whisper_stem_array_free(&out);
    const struct {
        float v;
        const char *msg;
    } bad[] = {{NAN, "mel[7][4321] is NaN: a log-Mel must be finite"},
               {INFINITY, "mel[7][4321] is infinite"},
               {-INFINITY, "mel[7][4321] is infinite"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mel[7 * F + 4321] = bad[i].v;
        out.data = (float *)&err; /* zeroed on failure */
        cr_assert_eq(whisper_stem_embed_mel(ws, mel, 80, (int64_t)F, &out, &err), -1,
                     "%g was taken", (double)bad[i].v);
        cr_assert(strstr(err.msg, bad[i].msg), "%s", err.msg);
        cr_assert(strncmp(err.msg, "whisper_stem_embed_mel: ", 24) == 0, "%s", err.msg);
        cr_assert_null(out.data);
    }
    free(mel);
    whisper_stem_free(ws);
}

/* --- the batch ---------------------------------------------------------------- */

Test(api, batch_gives_embed_files_bytes_in_order_and_a_bad_input_fails_alone, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[1024], wav2[1024], bad[1024];
    mkmodel(dir, "--size tiny", model, sizeof model);
    const size_t n = 16000 * 40;
    float *x = tones(n, 16000, 1, 11);
    snprintf(wav2, sizeof wav2, "%s/forty.wav", dir);
    write_wav(wav2, x, n, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    free(x);
    snprintf(bad, sizeof bad, "%s/missing.wav", dir);
    const char *jfk = test_sample("jfk.wav");
    const char *paths[] = {jfk, wav2, bad, jfk, wav2, jfk};
    const size_t np = sizeof paths / sizeof *paths;

    whisper_stem *ws = new_ctx(model, WHISPER_STEM_PAD_AUDIO, 1);
    whisper_stem_array want[2] = {{0}}, got = {0};
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_embed_file(ws, jfk, &want[0], &err), 0, "%s", err.msg);
    cr_assert_eq(whisper_stem_embed_file(ws, wav2, &want[1], &err), 0, "%s", err.msg);
    cr_assert_eq(want[1].ndim, 3, "40 s: two windows");

    whisper_stem_batch *b = whisper_stem_batch_open(ws, paths, np, &err);
    cr_assert(b, "%s", err.msg);
    for (size_t k = 0; k < np; k++) {
        size_t index = 999;
        int r = whisper_stem_batch_next(b, &got, &index, &err);
        cr_assert_eq(index, k, "results in input order: got %zu at %zu", index, k);
        if (paths[k] == bad) {
            cr_assert_eq(r, -1, "the missing file fails");
            cr_assert(strncmp(err.msg, bad, strlen(bad)) == 0, "its own message: %s", err.msg);
            cr_assert_null(got.data);
            continue;
        }
        cr_assert_eq(r, 1, "input %zu: %s", k, err.msg);
        assert_arrays_equal(paths[k], &got, &want[paths[k] == jfk ? 0 : 1]);
        whisper_stem_array_free(&got);
    }
    cr_assert_eq(whisper_stem_batch_next(b, &got, NULL, &err), 0, "then no more");
    cr_assert_eq(whisper_stem_batch_next(b, &got, NULL, &err), 0, "and still none");
    whisper_stem_batch_close(b);

    /* closed early, with inputs taken ahead: nothing leaks, nothing hangs */
    b = whisper_stem_batch_open(ws, paths, np, &err);
    cr_assert_eq(whisper_stem_batch_next(b, &got, NULL, &err), 1, "%s", err.msg);
    whisper_stem_array_free(&got);
    whisper_stem_batch_close(b);

    /* none at all */
    b = whisper_stem_batch_open(ws, paths, 0, &err);
    cr_assert(b, "%s", err.msg);
    cr_assert_eq(whisper_stem_batch_next(b, &got, NULL, &err), 0);
    whisper_stem_batch_close(b);
    const char *with_null[] = {jfk, NULL};
    cr_assert_null(whisper_stem_batch_open(ws, with_null, 2, &err));
    cr_assert(strstr(err.msg, "paths[1] is NULL"), "%s", err.msg);

    whisper_stem_array_free(&want[0]);
    whisper_stem_array_free(&want[1]);
    whisper_stem_free(ws);
}

/* Many clips' log-Mels in one call: each item the bytes of log_mel for it; an item of
 * more than one window, or with a NaN, fails the call naming it. */
static void check_mel_batch(whisper_stem *ws, int rate, int ch, const char *what)
{
    enum { N = 5 };
    const size_t lens[N] = {(size_t)rate * 11, (size_t)rate * 30, (size_t)rate / 2, 0, (size_t)rate * 29};
    float *x[N];
    const float *px[N];
    for (int i = 0; i < N; i++)
        px[i] = x[i] = tones(lens[i] ? lens[i] : 1, rate, ch, 90 + (uint64_t)i);
    const size_t per = 80 * 3000;
    float *out = malloc(N * per * sizeof(float));
    whisper_stem_error err = {""};
    cr_assert_eq(whisper_stem_log_mel_batch(ws, px, lens, N, rate, ch, out, &err), 0, "%s: %s", what, err.msg);
    for (int i = 0; i < N; i++) {
        whisper_stem_array one = {0};
        cr_assert_eq(whisper_stem_log_mel(ws, x[i], lens[i], rate, ch, &one, &err), 0, "%s", err.msg);
        cr_assert_eq(one.shape[1], 3000);
        cr_assert(memcmp(one.data, out + i * per, per * sizeof(float)) == 0, "%s: item %d is log_mel's bytes",
                  what, i);
        whisper_stem_array_free(&one);
    }
    cr_assert_eq(whisper_stem_log_mel_batch(ws, px, lens, 0, rate, ch, NULL, &err), 0, "no items: nothing");
    const size_t too_long[2] = {lens[0], (size_t)rate * 31};
    float *big = tones(too_long[1], rate, ch, 99);
    const float *pb[2] = {x[0], big};
    cr_assert_eq(whisper_stem_log_mel_batch(ws, pb, too_long, 2, rate, ch, out, &err), -1);
    cr_assert(strstr(err.msg, "pcm[1]") && strstr(err.msg, "2 windows"), "%s: %s", what, err.msg);
    x[2][7] = NAN;
    cr_assert_eq(whisper_stem_log_mel_batch(ws, px, lens, N, rate, ch, out, &err), -1);
    cr_assert(strstr(err.msg, "pcm[2]") && strstr(err.msg, "finite"), "%s: %s", what, err.msg);
    free(big);
    free(out);
    for (int i = 0; i < N; i++)
        free(x[i]);
}

Test(api, log_mel_batch_gives_each_clips_log_mel_bytes, .timeout = 120)
{
    whisper_stem_params p = whisper_stem_default_params();
    p.device = "cpu";
    p.threads = 3;
    whisper_stem_error err = {""};
    whisper_stem *ws = whisper_stem_new(&p, &err);
    cr_assert(ws, "%s", err.msg);
    check_mel_batch(ws, 16000, 1, "CPU, 16 kHz mono");
    check_mel_batch(ws, 44100, 2, "CPU, 44.1 kHz stereo");
    whisper_stem_free(ws);
    p.pad = WHISPER_STEM_PAD_NONE;
    ws = whisper_stem_new(&p, &err);
    const float *one[1] = {NULL};
    const size_t n1[1] = {0};
    float o;
    cr_assert_eq(whisper_stem_log_mel_batch(ws, one, n1, 1, 16000, 1, &o, &err), -1);
    cr_assert(strstr(err.msg, "pad is NONE"), "%s", err.msg);
    whisper_stem_free(ws);
}

/* --- threads ------------------------------------------------------------------ */

typedef struct {
    whisper_stem *ws;
    const float *pcm;
    size_t n;
    whisper_stem_array mel, emb;
    int rc;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    j->rc = whisper_stem_log_mel(j->ws, j->pcm, j->n, 16000, 1, &j->mel, NULL) ||
            whisper_stem_embed_pcm(j->ws, j->pcm, j->n, 16000, 1, &j->emb, NULL);
    return NULL;
}

Test(api, one_context_from_several_threads_gives_the_same_bytes, .timeout = 120)
{
    char model[1024];
    mkmodel(test_tmpdir(), "--size tiny", model, sizeof model);
    whisper_stem *ws = new_ctx(model, WHISPER_STEM_PAD_AUDIO, 0);
    enum { N = 4 };
    float *x[N];
    job jobs[N];
    pthread_t tid[N];
    for (int i = 0; i < N; i++) {
        x[i] = tones(16000 * (3 + i), 16000, 1, (uint64_t)i + 20);
        jobs[i] = (job){.ws = ws, .pcm = x[i], .n = 16000 * (size_t)(3 + i)};
        cr_assert_eq(pthread_create(&tid[i], NULL, run_job, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(jobs[i].rc, 0, "thread %d failed", i);
        job one = {.ws = ws, .pcm = x[i], .n = jobs[i].n};
        run_job(&one);
        cr_assert_eq(one.rc, 0);
        assert_arrays_equal("log_mel, threads vs alone", &jobs[i].mel, &one.mel);
        assert_arrays_equal("embed_pcm, threads vs alone", &jobs[i].emb, &one.emb);
        whisper_stem_array_free(&one.mel);
        whisper_stem_array_free(&one.emb);
        whisper_stem_array_free(&jobs[i].mel);
        whisper_stem_array_free(&jobs[i].emb);
        free(x[i]);
    }
    whisper_stem_free(ws);
}

/* --- on a GPU (skipped without one) ------------------------------------------- */

/* A context of model on cuda:0, bf16, --pos (p's other fields as they are; p keeps them). */
static whisper_stem *gpu_bf16_pos(whisper_stem_params *p, const char *model)
{
    whisper_stem_error err = {""};
    p->model = model;
    p->device = "cuda:0";
    p->precision = "bf16";
    p->pos = 1;
    whisper_stem *ws = whisper_stem_new(p, &err);
    cr_assert(ws, "%s", err.msg);
    return ws;
}

Test(api, gpu_embeddings_are_the_commands_and_the_same_from_threads, .timeout = 300)
{
    whisper_stem_params p = whisper_stem_default_params();
    whisper_stem_error err = {""};
    p.device = "cuda";
    whisper_stem *probe = whisper_stem_new(&p, &err); /* no model: the GPU is only probed */
    if (!probe)
        cr_skip_test("no CUDA driver/device: %s", err.msg);
    whisper_stem_free(probe);

    const char *dir = test_tmpdir(), *wav = test_sample("jfk.wav");
    char model[1024], out[1024], cmd[4096], cerr[1024];
    mkmodel(dir, "--size tiny", model, sizeof model);
    whisper_stem *ws = gpu_bf16_pos(&p, model);
    cr_assert_str_eq(whisper_stem_device(ws), "cuda:0");
    cr_assert_str_eq(whisper_stem_mel_device(ws), "cuda:0", "the GPU's log-Mel by default");
    cr_assert_eq(whisper_stem_set_mel_device(ws, "cpu", &err), 0, "%s", err.msg);
    cr_assert_str_eq(whisper_stem_mel_device(ws), "cpu");
    snprintf(out, sizeof out, "%s/gpu.npy", dir);
    snprintf(cmd, sizeof cmd, "%s -q --device cuda:0 --mel-device cpu --precision bf16 --pos -m '%s' '%s' -o '%s'",
             ws_bin(), model, wav, out);
    cr_assert_eq(run_cmd(cmd, cerr, sizeof cerr), 0, "%s: %s", cmd, cerr);
    npy want = load_npy(out);
    whisper_stem_array got = {0};
    cr_assert_eq(whisper_stem_embed_file(ws, wav, &got, &err), 0, "%s", err.msg);
    assert_same("embed_file on the GPU, bf16, --pos", &got, &want);
    whisper_stem_array_free(&got);
    free(want.data);

    const char *paths[] = {wav, "/nonexistent.wav", wav};
    whisper_stem_batch *b = whisper_stem_batch_open(ws, paths, 3, &err);
    cr_assert(b, "%s", err.msg);
    size_t index;
    cr_assert_eq(whisper_stem_batch_next(b, &got, &index, &err), 1, "%s", err.msg);
    whisper_stem_array_free(&got);
    cr_assert_eq(whisper_stem_batch_next(b, &got, &index, &err), -1);
    cr_assert_eq(index, 1);
    cr_assert_eq(whisper_stem_batch_next(b, &got, &index, &err), 1, "%s", err.msg);
    cr_assert_eq(index, 2);
    whisper_stem_array_free(&got);
    whisper_stem_batch_close(b);

    enum { N = 3 };
    float *x[N];
    job jobs[N];
    pthread_t tid[N];
    for (int i = 0; i < N; i++) {
        x[i] = tones(16000 * (40 + 5 * i), 16000, 1, (uint64_t)i + 40);
        jobs[i] = (job){.ws = ws, .pcm = x[i], .n = 16000 * (size_t)(40 + 5 * i)};
        cr_assert_eq(pthread_create(&tid[i], NULL, run_job, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(tid[i], NULL);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(jobs[i].rc, 0, "thread %d failed", i);
        job one = {.ws = ws, .pcm = x[i], .n = jobs[i].n};
        run_job(&one);
        cr_assert_eq(one.rc, 0);
        cr_assert_eq(one.emb.ndim, 3, "two windows");
        assert_arrays_equal("embed_pcm on the GPU, threads vs alone", &jobs[i].emb, &one.emb);
        whisper_stem_array_free(&one.mel);
        whisper_stem_array_free(&one.emb);
        whisper_stem_array_free(&jobs[i].mel);
        whisper_stem_array_free(&jobs[i].emb);
        free(x[i]);
    }
    whisper_stem_free(ws);
}

/* Device memory for whisper_stem_embed_pcm_device, from the driver the library uses. */
typedef struct {
    ws_cu cu;
    wscu_devptr p[16];
    int n;
} dev_allocs;

static void *dev_alloc(void *user, size_t bytes)
{
    dev_allocs *d = user;
    wscu_context c;
    wscu_device dev;
    if (d->n >= 16 || d->cu.DeviceGet(&dev, 0) || d->cu.DevicePrimaryCtxRetain(&c, dev) ||
        d->cu.CtxSetCurrent(c))
        return NULL;
    d->cu.DevicePrimaryCtxRelease(dev); /* the library holds it */
    return d->cu.MemAlloc(&d->p[d->n], bytes) ? NULL : (void *)(uintptr_t)d->p[d->n++];
}

/* The GPU's log-Mel (the default there): single calls, batches of files with a failing
 * one, a long input and info, and results left in device memory, each against the
 * command's bytes on the same GPU or the host call's. */
Test(api, gpu_log_mel_batches_and_device_results_are_the_commands_bytes, .timeout = 300)
{
    whisper_stem_params p = whisper_stem_default_params();
    whisper_stem_error err = {""};
    p.device = "cuda";
    whisper_stem *probe = whisper_stem_new(&p, &err);
    if (!probe)
        cr_skip_test("no CUDA driver/device: %s", err.msg);
    whisper_stem_free(probe);

    const char *dir = test_tmpdir(), *jfk = test_sample("jfk.wav");
    char model[1024], cmd[8192], cerr[1024], longwav[1024], st44[1024], bad[1024];
    mkmodel(dir, "--size tiny", model, sizeof model);
    /* 17 windows: longer than a slot (16), so it goes alone */
    const size_t nl = (size_t)16000 * 30 * 16 + 16000 * 7;
    float *xl = tones(nl, 16000, 1, 71);
    snprintf(longwav, sizeof longwav, "%s/long.wav", dir);
    write_wav(longwav, xl, nl, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    const size_t n44 = 44100 * 12;
    float *x44 = tones(n44, 44100, 2, 72);
    snprintf(st44, sizeof st44, "%s/st44.wav", dir);
    write_wav(st44, x44, n44, 44100, 2, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    snprintf(bad, sizeof bad, "%s/missing.wav", dir);
    const char *files[] = {jfk, st44, longwav, jfk};
    const char *paths[] = {jfk, st44, bad, longwav, jfk, st44, jfk};
    const size_t np = sizeof paths / sizeof *paths;

    /* the command, GPU log-Mel (its default), bf16, --pos: each file's bytes */
    npy want[4];
    for (int i = 0; i < 3; i++) {
        char out[1100];
        snprintf(out, sizeof out, "%s/want%d.npy", dir, i);
        snprintf(cmd, sizeof cmd, "%s -q --device cuda:0 --precision bf16 --pos -m '%s' '%s' -o '%s'",
                 ws_bin(), model, files[i], out);
        cr_assert_eq(run_cmd(cmd, cerr, sizeof cerr), 0, "%s: %s", cmd, cerr);
        want[i] = load_npy(out);
    }
    whisper_stem *ws = gpu_bf16_pos(&p, model);
    cr_assert_str_eq(whisper_stem_mel_device(ws), "cuda:0");
    whisper_stem_array got = {0};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(whisper_stem_embed_file(ws, files[i], &got, &err), 0, "%s", err.msg);
        assert_same(files[i], &got, &want[i]);
        whisper_stem_array_free(&got);
    }
    cr_assert_eq(want[2].ndim, 3);
    cr_assert_eq(want[2].shape[0], 17, "the long file: 17 windows");

    /* a batch: in order, the bad file alone fails, every result the command's */
    whisper_stem_batch *b = whisper_stem_batch_open(ws, paths, np, &err);
    cr_assert(b, "%s", err.msg);
    for (size_t k = 0; k < np; k++) {
        size_t index = 999;
        int r = whisper_stem_batch_next(b, &got, &index, &err);
        cr_assert_eq(index, k);
        whisper_stem_info info;
        cr_assert_eq(whisper_stem_batch_info(b, &info), 0);
        if (paths[k] == bad) {
            cr_assert_eq(r, -1);
            cr_assert(strstr(err.msg, "missing.wav"), "%s", err.msg);
            continue;
        }
        cr_assert_eq(r, 1, "input %zu: %s", k, err.msg);
        const int w = paths[k] == jfk ? 0 : paths[k] == st44 ? 1 : 2;
        assert_same(paths[k], &got, &want[w]);
        whisper_stem_array_free(&got);
        if (paths[k] == jfk) { /* 11.0 s: 1100 frames, 550 rows */
            cr_assert_eq(info.windows, 1);
            cr_assert_eq(info.content_frames, 1100);
            cr_assert_eq(info.valid_ctx, 550);
            cr_assert_float_eq(info.duration_s, 11.0, 1e-9);
        } else if (paths[k] == st44) {
            cr_assert_eq(info.src_rate, 44100);
            cr_assert_eq(info.src_channels, 2);
            cr_assert_float_eq(info.duration_s, 12.0, 1e-3);
        } else {
            cr_assert_eq(info.windows, 17);
            cr_assert_eq(info.content_frames, 700);
        }
    }
    cr_assert_eq(whisper_stem_batch_next(b, &got, NULL, &err), 0);
    whisper_stem_batch_close(b);
    /* two batches stepped in turn and a call between: a batch's GPU slots come back while
     * its caller is away (3 slots; each batch keeps up to 2 launches in flight) */
    {
        const char *many[12];
        for (int k = 0; k < 12; k++)
            many[k] = k % 3 == 1 ? st44 : jfk;
        whisper_stem_batch *x = whisper_stem_batch_open(ws, many, 12, &err);
        cr_assert_eq(whisper_stem_batch_next(x, &got, NULL, &err), 1, "%s", err.msg);
        whisper_stem_array_free(&got);
        whisper_stem_batch *y = whisper_stem_batch_open(ws, many, 12, &err);
        for (int k = 0; k < 12; k++) {
            cr_assert_eq(whisper_stem_batch_next(y, &got, NULL, &err), 1, "y %d: %s", k, err.msg);
            assert_same("interleaved batch", &got, &want[k % 3 == 1 ? 1 : 0]);
            whisper_stem_array_free(&got);
            if (k == 5) { /* a single call while both batches hold results */
                cr_assert_eq(whisper_stem_embed_file(ws, jfk, &got, &err), 0, "%s", err.msg);
                assert_same("a call between batches", &got, &want[0]);
                whisper_stem_array_free(&got);
            }
        }
        for (int k = 1; k < 12; k++) {
            cr_assert_eq(whisper_stem_batch_next(x, &got, NULL, &err), 1, "x %d: %s", k, err.msg);
            assert_same("the first batch, resumed", &got, &want[k % 3 == 1 ? 1 : 0]);
            whisper_stem_array_free(&got);
        }
        whisper_stem_batch_close(y);
        whisper_stem_batch_close(x);
    }
    /* closed with batches in flight */
    b = whisper_stem_batch_open(ws, paths, np, &err);
    cr_assert_eq(whisper_stem_batch_next(b, &got, NULL, &err), 1, "%s", err.msg);
    whisper_stem_array_free(&got);
    whisper_stem_batch_close(b);

    /* results on the device: the host call's bytes, one window and the long input */
    dev_allocs d = {0};
    ws_err ce;
    cr_assert_eq(ws_cu_open(&d.cu, &ce), 0, "%s", ce.msg);
    const float *pcms[2] = {xl, xl};
    const size_t ns[2] = {16000 * 20, nl};
    for (int i = 0; i < 2; i++) {
        whisper_stem_array host = {0};
        whisper_stem_device_array dv;
        cr_assert_eq(whisper_stem_embed_pcm(ws, pcms[i], ns[i], 16000, 1, &host, &err), 0, "%s", err.msg);
        cr_assert_eq(whisper_stem_embed_pcm_device(ws, pcms[i], ns[i], 16000, 1, NULL, dev_alloc, &d,
                                                   &dv, &err), 0, "%s", err.msg);
        cr_assert_eq(dv.ndim, host.ndim);
        size_t bytes = sizeof(float);
        for (int k = 0; k < dv.ndim; k++) {
            cr_assert_eq(dv.shape[k], host.shape[k]);
            bytes *= (size_t)dv.shape[k];
        }
        float *back = malloc(bytes);
        cr_assert_eq(d.cu.MemcpyDtoHAsync(back, (wscu_devptr)(uintptr_t)dv.data, bytes, (wscu_stream)(uintptr_t)1), 0);
        cr_assert_eq(d.cu.StreamSynchronize((wscu_stream)(uintptr_t)1), 0);
        cr_assert(memcmp(back, host.data, bytes) == 0, "device result %d: the host call's bytes", i);
        free(back);
        whisper_stem_array_free(&host);
    }
    /* a batch's results on the device: in order, the bad file alone failing, each the
     * command's bytes (the long file alone, the others several to a launch) */
    b = whisper_stem_batch_open(ws, paths, np, &err);
    cr_assert_eq(whisper_stem_batch_to_device(b, NULL, dev_alloc, &d, &err), 0, "%s", err.msg);
    for (size_t k = 0; k < np; k++) {
        size_t index = 999;
        whisper_stem_device_array dv;
        int r = whisper_stem_batch_next_device(b, &dv, &index, &err);
        cr_assert_eq(index, k);
        if (paths[k] == bad) {
            cr_assert_eq(r, -1);
            cr_assert(strstr(err.msg, "missing.wav"), "%s", err.msg);
            cr_assert_null(dv.data, "no block for a file that did not decode");
            continue;
        }
        cr_assert_eq(r, 1, "device batch input %zu: %s", k, err.msg);
        whisper_stem_array back = {.ndim = dv.ndim};
        size_t bytes = sizeof(float);
        for (int i = 0; i < dv.ndim; i++)
            bytes *= (size_t)(back.shape[i] = dv.shape[i]);
        back.data = malloc(bytes);
        cr_assert_eq(d.cu.MemcpyDtoHAsync(back.data, (wscu_devptr)(uintptr_t)dv.data, bytes,
                                          (wscu_stream)(uintptr_t)1), 0);
        cr_assert_eq(d.cu.StreamSynchronize((wscu_stream)(uintptr_t)1), 0);
        const int w = paths[k] == jfk ? 0 : paths[k] == st44 ? 1 : 2;
        assert_same("a device batch's result", &back, &want[w]);
        free(back.data);
    }
    {
        whisper_stem_device_array dv;
        cr_assert_eq(whisper_stem_batch_next_device(b, &dv, NULL, &err), 0);
    }
    whisper_stem_batch_close(b);

    /* with the CPU's log-Mel too */
    cr_assert_eq(whisper_stem_set_mel_device(ws, "cpu", &err), 0, "%s", err.msg);
    {
        whisper_stem_array host = {0};
        whisper_stem_device_array dv;
        cr_assert_eq(whisper_stem_embed_pcm(ws, xl, 16000 * 20, 16000, 1, &host, &err), 0, "%s", err.msg);
        cr_assert_eq(whisper_stem_embed_pcm_device(ws, xl, 16000 * 20, 16000, 1, NULL, dev_alloc, &d, &dv,
                                                   &err), 0, "%s", err.msg);
        const size_t bytes = (size_t)1500 * 384 * sizeof(float);
        float *back = malloc(bytes);
        cr_assert_eq(d.cu.MemcpyDtoHAsync(back, (wscu_devptr)(uintptr_t)dv.data, bytes, (wscu_stream)(uintptr_t)1), 0);
        cr_assert_eq(d.cu.StreamSynchronize((wscu_stream)(uintptr_t)1), 0);
        cr_assert(memcmp(back, host.data, bytes) == 0, "CPU log-Mel, device result: the host call's bytes");
        free(back);
        whisper_stem_array_free(&host);
    }
    /* --no-pad: an input of more than 30 s is one window of its own length, alone, in a
     * batch as in embed_file */
    {
        whisper_stem_params np_ = p;
        np_.pad = WHISPER_STEM_PAD_NONE;
        np_.pos = 0;
        whisper_stem *nws = whisper_stem_new(&np_, &err);
        cr_assert(nws, "%s", err.msg);
        char w200[1100];
        snprintf(w200, sizeof w200, "%s/w200.wav", dir);
        write_wav(w200, xl, 16000 * 200, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
        const char *np_paths[] = {jfk, w200, jfk};
        whisper_stem_array one[2] = {{0}};
        cr_assert_eq(whisper_stem_embed_file(nws, jfk, &one[0], &err), 0, "%s", err.msg);
        cr_assert_eq(whisper_stem_embed_file(nws, w200, &one[1], &err), 0, "%s", err.msg);
        cr_assert_eq(one[1].shape[0], 10000, "200 s, no pad: 20000 frames, 10000 rows");
        whisper_stem_batch *nb = whisper_stem_batch_open(nws, np_paths, 3, &err);
        for (int k = 0; k < 3; k++) {
            cr_assert_eq(whisper_stem_batch_next(nb, &got, NULL, &err), 1, "%s", err.msg);
            assert_arrays_equal("no pad, batch vs embed_file", &got, &one[k == 1]);
            whisper_stem_array_free(&got);
        }
        whisper_stem_batch_close(nb);
        whisper_stem_array_free(&one[0]);
        whisper_stem_array_free(&one[1]);
        whisper_stem_free(nws);
    }
    /* a context without a model on the GPU: log_mel there, and many clips a launch */
    {
        whisper_stem_params mp = whisper_stem_default_params();
        mp.device = "cuda:0";
        mp.threads = 4;
        whisper_stem *mws = whisper_stem_new(&mp, &err);
        cr_assert(mws, "%s", err.msg);
        cr_assert_str_eq(whisper_stem_mel_device(mws), "cuda:0");
        check_mel_batch(mws, 16000, 1, "GPU, 16 kHz mono");
        check_mel_batch(mws, 44100, 2, "GPU, 44.1 kHz stereo");
        /* 40 clips: three launches of up to 16, in flight together */
        enum { M = 40 };
        float *cx[M];
        const float *pc[M];
        size_t cn[M];
        float *all = malloc((size_t)M * 80 * 3000 * sizeof(float));
        for (int i = 0; i < M; i++) {
            cn[i] = (size_t)16000 * (1 + i % 30);
            pc[i] = cx[i] = tones(cn[i], 16000, 1, 200 + (uint64_t)i);
        }
        cr_assert_eq(whisper_stem_log_mel_batch(mws, pc, cn, M, 16000, 1, all, &err), 0, "%s", err.msg);
        whisper_stem_params cp = mp;
        cp.device = "cpu";
        whisper_stem *cws = whisper_stem_new(&cp, &err);
        double worst = 0;
        for (int i = 0; i < M; i++) {
            whisper_stem_array g = {0}, c = {0};
            cr_assert_eq(whisper_stem_log_mel(mws, cx[i], cn[i], 16000, 1, &g, &err), 0, "%s", err.msg);
            cr_assert(memcmp(g.data, all + (size_t)i * 80 * 3000, 80 * 3000 * sizeof(float)) == 0,
                      "batched clip %d: log_mel's bytes", i);
            cr_assert_eq(whisper_stem_log_mel(cws, cx[i], cn[i], 16000, 1, &c, &err), 0, "%s", err.msg);
            for (size_t k = 0; k < (size_t)80 * 3000; k++) {
                const double dd = fabs((double)g.data[k] - c.data[k]);
                worst = dd > worst ? dd : worst;
            }
            whisper_stem_array_free(&g);
            whisper_stem_array_free(&c);
            free(cx[i]);
        }
        cr_assert_leq(worst, 1e-4, "GPU log-Mel within 1e-4 of the CPU's: %g", worst);
        free(all);
        whisper_stem_free(cws);
        whisper_stem_free(mws);
    }
    for (int i = 0; i < d.n; i++)
        d.cu.MemFree(d.p[i]);
    ws_cu_close(&d.cu);
    for (int i = 0; i < 3; i++)
        free(want[i].data);
    free(xl);
    free(x44);
    whisper_stem_free(ws);
}

/* --- the GPU paths on a stand-in driver (no GPU needed) ------------------------------- */

typedef struct {
    whisper_stem *ws;
    const float *x;
    size_t n;
    int rc, calls;
} hammer;

static void *hammer_run(void *arg)
{
    hammer *h = arg;
    for (int k = 0; k < h->calls && !h->rc; k++) {
        whisper_stem_array e = {0};
        h->rc = whisper_stem_embed_pcm(h->ws, h->x, h->n, 16000, 1, &e, NULL);
        h->rc |= !(e.ndim == 2 && e.shape[0] == 1500 && e.shape[1] == 384);
        whisper_stem_array_free(&e);
    }
    return NULL;
}

static void *host_alloc(void *user, size_t bytes)
{
    (void)user;
    return aligned_alloc(64, (bytes + 63) / 64 * 64); /* the stand-in's device memory is host memory */
}

/* tests/stub/libcuda.c stands in for the driver: its device memory is host memory and its
 * kernels do nothing, so no value is checked here, only what the GPU paths do around them:
 * results in input order with their shapes, a bad file failing alone, two batches stepped in
 * turn while other threads make calls (the slots come back; nothing waits forever), long
 * inputs alone, many log-Mels, results into memory of the caller's, and every stream,
 * event, device and pinned block given back when the context is freed. Under
 * ThreadSanitizer too (make tsan runs api/batch_*). */
Test(api, batch_gpu_paths_on_a_stand_in_driver_keep_order_threads_and_memory, .timeout = 300)
{
    void *h = test_stub_driver();
    const char *dir = test_tmpdir(), *jfk = test_sample("jfk.wav");
    char model[1024], forty[1100], bad[1100];
    const stub_cuda_counts *S = dlsym(h, "stub_cuda_state");
    cr_assert_not_null(S);

    mkmodel(dir, "--size tiny", model, sizeof model);
    const size_t n40 = 16000 * 40, nl = (size_t)16000 * 30 * 17;
    float *x40 = tones(n40, 16000, 1, 301), *xl = tones(nl, 16000, 1, 302);
    snprintf(forty, sizeof forty, "%s/forty.wav", dir);
    write_wav(forty, x40, n40, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    snprintf(bad, sizeof bad, "%s/missing.wav", dir);

    whisper_stem_params p = whisper_stem_default_params();
    p.model = model;
    p.device = "cuda";
    p.threads = 4;
    whisper_stem_error err = {""};
    whisper_stem *ws = whisper_stem_new(&p, &err);
    cr_assert(ws, "the stand-in GPU: %s", err.msg);
    cr_assert_str_eq(whisper_stem_device(ws), "cuda:0");
    cr_assert_str_eq(whisper_stem_mel_device(ws), "cuda:0");

    enum { NP = 14 };
    const char *paths[NP];
    for (int k = 0; k < NP; k++)
        paths[k] = k == 5 ? bad : k % 4 == 1 ? forty : jfk;
    whisper_stem_batch *x = whisper_stem_batch_open(ws, paths, NP, &err);
    whisper_stem_array got = {0};
    cr_assert_eq(whisper_stem_batch_next(x, &got, NULL, &err), 1, "%s", err.msg);
    whisper_stem_array_free(&got);
    hammer hm[2] = {{ws, x40, 16000 * 20, 0, 6}, {ws, x40, 16000 * 25, 0, 6}};
    pthread_t tid[2];
    for (int t = 0; t < 2; t++)
        cr_assert_eq(pthread_create(&tid[t], NULL, hammer_run, &hm[t]), 0);
    whisper_stem_batch *y = whisper_stem_batch_open(ws, paths, NP, &err);
    for (int pass = 0; pass < 2; pass++) {
        whisper_stem_batch *b = pass ? x : y;
        for (int k = pass; k < NP; k++) {
            size_t index = 999;
            const int r = whisper_stem_batch_next(b, &got, &index, &err);
            cr_assert_eq(index, (size_t)k, "pass %d: in input order", pass);
            whisper_stem_info info;
            cr_assert_eq(whisper_stem_batch_info(b, &info), 0);
            if (paths[k] == bad) {
                cr_assert_eq(r, -1);
                cr_assert(strstr(err.msg, "missing.wav"), "%s", err.msg);
                continue;
            }
            cr_assert_eq(r, 1, "pass %d input %d: %s", pass, k, err.msg);
            const int two = paths[k] == forty;
            cr_assert_eq(got.ndim, two ? 3 : 2);
            cr_assert_eq(got.shape[got.ndim - 2], 1500);
            cr_assert_eq(got.shape[got.ndim - 1], 384);
            cr_assert_eq(info.windows, two ? 2 : 1);
            whisper_stem_array_free(&got);
        }
        cr_assert_eq(whisper_stem_batch_next(b, &got, NULL, &err), 0);
    }
    for (int t = 0; t < 2; t++) {
        pthread_join(tid[t], NULL);
        cr_assert_eq(hm[t].rc, 0, "the calls beside the batches");
    }
    whisper_stem_batch_close(y);
    whisper_stem_batch_close(x);
    /* closed at once, launches in flight */
    x = whisper_stem_batch_open(ws, paths, NP, &err);
    cr_assert_eq(whisper_stem_batch_next(x, &got, NULL, &err), 1, "%s", err.msg);
    whisper_stem_array_free(&got);
    whisper_stem_batch_close(x);

    /* results on the device: in order, shapes, the failed file without a block; the host
     * call refused on such a batch, and the switch refused once results came */
    x = whisper_stem_batch_open(ws, paths, NP, &err);
    cr_assert_eq(whisper_stem_batch_to_device(x, NULL, host_alloc, NULL, &err), 0, "%s", err.msg);
    cr_assert_eq(whisper_stem_batch_next(x, &got, NULL, &err), -1);
    cr_assert(strstr(err.msg, "whisper_stem_batch_next_device"), "%s", err.msg);
    for (int k = 0; k < NP; k++) {
        whisper_stem_device_array dv;
        size_t index = 999;
        const int r = whisper_stem_batch_next_device(x, &dv, &index, &err);
        cr_assert_eq(index, (size_t)k, "device results in input order");
        if (paths[k] == bad) {
            cr_assert_eq(r, -1);
            cr_assert_null(dv.data);
            continue;
        }
        cr_assert_eq(r, 1, "device input %d: %s", k, err.msg);
        const int two = paths[k] == forty;
        cr_assert_eq(dv.ndim, two ? 3 : 2);
        cr_assert_eq(dv.shape[dv.ndim - 2], 1500);
        cr_assert_eq(dv.shape[dv.ndim - 1], 384);
        free(dv.data);
        if (k == 0)
            cr_assert_eq(whisper_stem_batch_to_device(x, NULL, host_alloc, NULL, &err), -1);
    }
    whisper_stem_batch_close(x);
    { /* an input longer than a launch, alone, between two that share one */
        char lw[1100];
        snprintf(lw, sizeof lw, "%s/long17.wav", dir);
        write_wav(lw, xl, nl, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
        const char *three[] = {jfk, lw, jfk};
        x = whisper_stem_batch_open(ws, three, 3, &err);
        cr_assert_eq(whisper_stem_batch_to_device(x, NULL, host_alloc, NULL, &err), 0, "%s", err.msg);
        for (int k = 0; k < 3; k++) {
            whisper_stem_device_array dv;
            cr_assert_eq(whisper_stem_batch_next_device(x, &dv, NULL, &err), 1, "%d: %s", k, err.msg);
            cr_assert_eq(dv.ndim, k == 1 ? 3 : 2);
            if (k == 1)
                cr_assert_eq(dv.shape[0], 17);
            free(dv.data);
        }
        whisper_stem_batch_close(x);
    }
    /* a model on the CPU: no device results */
    {
        whisper_stem_params cp = whisper_stem_default_params();
        cp.model = model;
        cp.device = "cpu";
        whisper_stem *cws = whisper_stem_new(&cp, &err);
        cr_assert(cws, "%s", err.msg);
        whisper_stem_batch *c = whisper_stem_batch_open(cws, paths, 2, &err);
        cr_assert_eq(whisper_stem_batch_to_device(c, NULL, host_alloc, NULL, &err), -1);
        cr_assert(strstr(err.msg, "on a GPU"), "%s", err.msg);
        whisper_stem_batch_close(c);
        whisper_stem_free(cws);
    }

    /* a long input alone, host and caller's memory */
    cr_assert_eq(whisper_stem_embed_pcm(ws, xl, nl, 16000, 1, &got, &err), 0, "%s", err.msg);
    cr_assert_eq(got.ndim, 3);
    cr_assert_eq(got.shape[0], 17);
    whisper_stem_device_array dv;
    cr_assert_eq(whisper_stem_embed_pcm_device(ws, xl, nl, 16000, 1, NULL, host_alloc, NULL, &dv, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(dv.ndim, 3);
    cr_assert_eq(dv.shape[0], 17);
    free(dv.data);
    cr_assert_eq(whisper_stem_embed_pcm_device(ws, x40, 16000 * 9, 16000, 1, NULL, host_alloc, NULL, &dv, &err),
                 0, "%s", err.msg);
    cr_assert_eq(dv.ndim, 2);
    free(dv.data);
    whisper_stem_array_free(&got);
    whisper_stem_free(ws);

    /* a log-Mel context: many clips a launch */
    whisper_stem_params mp = whisper_stem_default_params();
    mp.device = "cuda";
    mp.threads = 3;
    whisper_stem *mws = whisper_stem_new(&mp, &err);
    cr_assert(mws, "%s", err.msg);
    enum { M = 37 };
    const float *pc[M];
    size_t cn[M];
    for (int i = 0; i < M; i++)
        pc[i] = x40, cn[i] = (size_t)16000 * (1 + i % 30);
    float *all = malloc((size_t)M * 80 * 3000 * sizeof(float));
    cr_assert_eq(whisper_stem_log_mel_batch(mws, pc, cn, M, 16000, 1, all, &err), 0, "%s", err.msg);
    free(all);
    whisper_stem_free(mws);

    cr_assert_eq(S->streams, 0, "streams left: %d", S->streams);
    cr_assert_eq(S->events, 0, "events left: %d", S->events);
    cr_assert_eq(S->dev_allocs, 0, "device blocks left: %d", S->dev_allocs);
    cr_assert_eq(S->host_allocs, 0, "pinned blocks left: %d", S->host_allocs);
    cr_assert_gt(S->launches, 0);
    free(x40);
    free(xl);
    unsetenv("WHISPER_STEM_LIBCUDA");
}

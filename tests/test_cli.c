/* test_cli.c - whisper-stem end to end, as a user runs it.
 *
 * Each test writes its inputs (libsndfile) and models (ws-mkmodel) into a
 * fresh temporary directory, runs the binary through the shell, and checks
 * exit status, stderr, and the arrays against the float64 oracle computed
 * from the same samples (parsed here) and the same weights.
 * Bounds: docs/spec.md (embeddings fp32: rel L2 <= 1e-5, max |err| <= 1e-4;
 * log-Mel max |err| <= 1e-4).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "whisper/stem.h"
#include "helpers.h"
#include "whisper/model.h"
#include "oracle.h"

typedef struct {
    float *data;
    int64_t shape[4];
    int ndim;
    size_t count;
    size_t header_len;
} npy;

/* Parses a '<f4' C-order .npy written by anyone. */
static npy load_npy(const char *path)
{
    npy a = {0};
    size_t len;
    uint8_t *b = read_file(path, &len);
    cr_assert(b, "cannot read %s", path);
    cr_assert(len >= 10 && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0, "%s: not npy 1.0", path);
    size_t hl = b[8] | (size_t)b[9] << 8;
    a.header_len = 10 + hl;
    cr_assert_eq(a.header_len % 64, 0, "header not 64-aligned");
    char *h = strndup((char *)b + 10, hl);
    cr_assert(strstr(h, "'descr': '<f4'") && strstr(h, "'fortran_order': False"), "header %s", h);
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
    cr_assert_eq(len - a.header_len, a.count * 4, "%s: payload %zu bytes for %zu floats", path,
                 len - a.header_len, a.count);
    a.data = malloc(a.count * 4 + 4);
    memcpy(a.data, b + a.header_len, a.count * 4);
    free(b);
    return a;
}

static void write_wav(const char *path, const float *x, size_t n, int rate, int format)
{
    SF_INFO info = {.samplerate = rate, .channels = 1, .format = format};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert(f, "sf_open %s: %s", path, sf_strerror(NULL));
    if (n)
        cr_assert_eq(sf_writef_float(f, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(f);
}

/* Reads a 16-bit mono WAV back as int16 / 32768 (what the reference starts from). */
static double *read_samples(const char *path, size_t *n)
{
    SF_INFO info = {0};
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    cr_assert(f);
    short *s = malloc(sizeof(short) * (size_t)(info.frames ? info.frames : 1));
    *n = (size_t)sf_readf_short(f, s, info.frames);
    sf_close(f);
    double *x = malloc(sizeof(double) * (*n ? *n : 1));
    for (size_t i = 0; i < *n; i++)
        x[i] = s[i] / 32768.0;
    free(s);
    return x;
}

static float *tone(size_t n, double f0, uint64_t seed)
{
    ws_rng r = {seed};
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(0.3 * sin(2 * M_PI * f0 * i / 16000.0) + 0.1 * sin(2 * M_PI * 2.7 * f0 * i / 16000.0) +
                       0.02 * (ws_rng_uniform(&r) - 0.5));
    return x;
}

static void mkmodel(const char *dir, const char *name, const char *args, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    char cmd[2048], err[1024];
    snprintf(cmd, sizeof cmd, "%s %s -o %s", ws_mkmodel(), args, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
}

/* Oracle embeddings for the samples in wav (pad audio), model at gguf. */
static double *oracle_embed(const char *wav, const char *gguf, int add_pos, int *t_out, int *d)
{
    size_t n;
    double *x = read_samples(wav, &n);
    size_t n_total = 480000;
    cr_assert_leq(n, n_total);
    double *xp = calloc(n_total, sizeof *xp);
    memcpy(xp, x, n * sizeof *x);
    ws_model m;
    ws_err err;
    cr_assert_eq(ws_model_load(&m, gguf, &err), 0, "%s", err.msg);
    int nf;
    double *mel = oracle_log_mel(xp, n_total, m.n_mels, &nf);
    float *melf = malloc(sizeof(float) * m.n_mels * nf);
    for (size_t i = 0; i < (size_t)m.n_mels * nf; i++)
        melf[i] = (float)mel[i];
    float *pos = NULL;
    if (add_pos) {
        pos = malloc(sizeof(float) * 1500 * m.d);
        ws_sinusoids(1500, m.d, pos);
    }
    double *y = oracle_stem(melf, m.n_mels, nf, m.conv1_w, m.conv1_b, m.conv2_w, m.conv2_b, m.d, pos, t_out);
    *d = m.d;
    free(pos), free(melf), free(mel), free(xp), free(x);
    ws_model_free(&m);
    return y;
}

static void check_embed_file(const char *out, const char *wav, const char *gguf, int add_pos)
{
    int t_out, d;
    double *want = oracle_embed(wav, gguf, add_pos, &t_out, &d);
    npy a = load_npy(out);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], t_out);
    cr_assert_eq(a.shape[1], d);
    double rl2 = rel_l2(a.data, want, a.count);
    cr_assert_leq(rl2, 1e-5, "rel L2 %.3g vs the float64 reference", rl2);
    assert_close("embeddings", a.data, want, a.count, 1e-4, 0);
    free(a.data);
    free(want);
}

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.' || strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

Test(cli, speech_to_embeddings_matches_float64_reference, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[1024], out[1024], cmd[8192], err[2048];
    mkmodel(dir, "tiny.gguf", "--size tiny --seed 3", model, sizeof model);
    snprintf(out, sizeof out, "%s/jfk.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --device cpu -m %s %s -o %s", ws_bin(), model, test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    check_embed_file(out, test_sample("jfk.wav"), model, 0);
}

Test(cli, f16_and_bf16_weights_and_large_v3_shape_within_bounds, .timeout = 300)
{
    const char *dir = test_tmpdir();
    char wav[1024], model[1024], out[1024], cmd[8192], err[2048];
    snprintf(wav, sizeof wav, "%s/a.wav", dir);
    float *x = tone(3 * 16000, 311.0, 5);
    write_wav(wav, x, 3 * 16000, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    free(x);
    const char *variants[][2] = {{"f16.gguf", "--size tiny --type f16 --seed 4"},
                                 {"bf16.gguf", "--size tiny --type bf16 --seed 5"},
                                 {"v3.gguf", "--n-mels 128 --d 256 --type f16 --seed 6"}};
    for (int i = 0; i < 3; i++) {
        mkmodel(dir, variants[i][0], variants[i][1], model, sizeof model);
        snprintf(out, sizeof out, "%s/out%d.npy", dir, i);
        snprintf(cmd, sizeof cmd, "%s --device cpu -m %s %s -o %s", ws_bin(), model, wav, out);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        check_embed_file(out, wav, model, 0);
    }
}

Test(cli, pos_adds_the_sinusoid_table, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[1024], a[1024], b[1024], cmd[8192], err[2048];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 64 --seed 7", model, sizeof model);
    snprintf(a, sizeof a, "%s/a.npy", dir);
    snprintf(b, sizeof b, "%s/b.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --device cpu -m %s %s -o %s && %s --device cpu --pos -m %s %s -o %s",
             ws_bin(), model, test_sample("jfk.wav"), a, ws_bin(), model, test_sample("jfk.wav"), b);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    npy x = load_npy(a), y = load_npy(b);
    float *pos = malloc(sizeof(float) * 1500 * 64);
    ws_sinusoids(1500, 64, pos);
    for (size_t i = 0; i < x.count; i++)
        cr_assert_float_eq(y.data[i] - x.data[i], pos[i], 2e-6, "at %zu", i);
    free(pos), free(x.data), free(y.data);
}

/* The log-Mel and the stem's plans split work in blocks set by the shapes alone, so
 * --threads changes the speed, never the bytes (speech, a padded tail, --pos). */
Test(cli, the_same_bytes_for_any_thread_count, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[1024], cmd[8192], err[2048], out[4][1024];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 256 --seed 9", model, sizeof model);
    const int threads[4] = {1, 2, 3, 7};
    for (int i = 0; i < 4; i++) {
        snprintf(out[i], sizeof out[i], "%s/t%d.npy", dir, threads[i]);
        snprintf(cmd, sizeof cmd, "%s --device cpu --pos --threads %d -m %s %s -o %s", ws_bin(),
                 threads[i], model, test_sample("jfk.wav"), out[i]);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    }
    size_t n0 = 0, n = 0;
    char *a = read_file(out[0], &n0);
    cr_assert_not_null(a);
    for (int i = 1; i < 4; i++) {
        char *b = read_file(out[i], &n);
        cr_assert_not_null(b);
        cr_assert(n == n0 && !memcmp(a, b, n), "--threads %d differs from --threads 1",
                  threads[i]);
        free(b);
    }
    free(a);
}

Test(cli, raw_output_is_the_npy_payload_and_stdout_the_same)
{
    const char *dir = test_tmpdir();
    char model[1024], cmd[8192], err[2048], p1[1024], p2[1024], p3[1024];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 32 --seed 8", model, sizeof model);
    snprintf(p1, sizeof p1, "%s/a.npy", dir);
    snprintf(p2, sizeof p2, "%s/a.f32", dir);
    snprintf(p3, sizeof p3, "%s/stdout.f32", dir);
    snprintf(cmd, sizeof cmd,
             "%s -m %s %s -o %s --device cpu && %s -m %s %s -o %s --device cpu && "
             "cat %s | %s -m %s - -o - --device cpu > %s",
             ws_bin(), model, test_sample("jfk.wav"), p1, ws_bin(), model, test_sample("jfk.wav"), p2,
             test_sample("jfk.wav"), ws_bin(), model, p3);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    size_t l1, l2, l3;
    char *a = read_file(p1, &l1), *b = read_file(p2, &l2), *c = read_file(p3, &l3);
    npy n = load_npy(p1);
    cr_assert_eq(l2, n.count * 4);
    cr_assert_eq(memcmp(a + n.header_len, b, l2), 0, "raw file differs from the npy payload");
    cr_assert_eq(l3, l2);
    cr_assert_eq(memcmp(b, c, l2), 0, "stdin -> stdout differs from file -> file");
    free(a), free(b), free(c), free(n.data);
}

Test(cli, mel_output_matches_float64_log_mel)
{
    const char *dir = test_tmpdir();
    char out[1024], cmd[8192], err[2048];
    snprintf(out, sizeof out, "%s/mel.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel --n-mels 128 %s -o %s", ws_bin(), test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    npy a = load_npy(out);
    cr_assert_eq(a.ndim, 2);
    cr_assert_eq(a.shape[0], 128);
    cr_assert_eq(a.shape[1], 3000);
    size_t n;
    double *x = read_samples(test_sample("jfk.wav"), &n);
    double *xp = calloc(480000, sizeof *xp);
    memcpy(xp, x, n * sizeof *x);
    int nf;
    double *want = oracle_log_mel(xp, 480000, 128, &nf);
    assert_close("log-Mel", a.data, want, a.count, 1e-4, 0);
    free(a.data), free(x), free(xp), free(want);
}

Test(cli, long_audio_gives_windows_and_no_pad_gives_one)
{
    const char *dir = test_tmpdir();
    char wav[1024], out[1024], out2[1024], cmd[8192], err[2048];
    size_t n = 65 * 16000 + 123;
    float *x = tone(n, 220, 9);
    snprintf(wav, sizeof wav, "%s/long.wav", dir);
    write_wav(wav, x, n, 16000, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    free(x);
    snprintf(out, sizeof out, "%s/long.npy", dir);
    snprintf(out2, sizeof out2, "%s/nopad.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s && %s --mel --no-pad %s -o %s", ws_bin(), wav, out,
             ws_bin(), wav, out2);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    npy a = load_npy(out), b = load_npy(out2);
    cr_assert_eq(a.ndim, 3);
    cr_assert_eq(a.shape[0], 3);
    cr_assert_eq(a.shape[1], 80);
    cr_assert_eq(a.shape[2], 3000);
    cr_assert_eq(b.ndim, 2);
    cr_assert_eq(b.shape[1], (int64_t)(n / 160));
    free(a.data), free(b.data);
}

Test(cli, empty_audio_is_silence_padded_and_an_error_without_padding)
{
    const char *dir = test_tmpdir();
    char wav[1024], out[1024], cmd[8192], err[2048];
    snprintf(wav, sizeof wav, "%s/empty.wav", dir);
    write_wav(wav, NULL, 0, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    snprintf(out, sizeof out, "%s/e.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), wav, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    npy a = load_npy(out);
    for (size_t i = 0; i < a.count; i++)
        cr_assert_eq(a.data[i], -1.5f);
    free(a.data);
    snprintf(out, sizeof out, "%s/f.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad %s -o %s", ws_bin(), wav, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1);
    cr_assert(strstr(err, "empty.wav"), "stderr: %s", err);
    cr_assert(!file_exists(out));
}

Test(cli, bad_inputs_fail_alone_with_one_line_and_no_output)
{
    const char *dir = test_tmpdir();
    char good[1024], garbage[1024], empty[1024], trunc[1024], hdr[1024], outdir[1024], cmd[8192], err[4096],
        p[1200];
    snprintf(good, sizeof good, "%s/good.wav", dir);
    snprintf(garbage, sizeof garbage, "%s/garbage.wav", dir);
    snprintf(empty, sizeof empty, "%s/zero.wav", dir);
    snprintf(trunc, sizeof trunc, "%s/trunc.wav", dir);
    snprintf(hdr, sizeof hdr, "%s/header.wav", dir);
    snprintf(outdir, sizeof outdir, "%s/out", dir);
    float *x = tone(32000, 440, 1);
    write_wav(hdr, x, 32000, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    write_wav(good, x, 32000, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    write_wav(trunc, x, 32000, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    free(x);
    FILE *f = fopen(garbage, "wb");
    for (int i = 0; i < 5000; i++)
        fputc((i * 7919) & 0xff, f);
    fclose(f);
    fclose(fopen(empty, "wb"));
    cr_assert_eq(truncate(trunc, 30000), 0); /* data chunk longer than the file */
    cr_assert_eq(truncate(hdr, 20), 0);      /* cut inside the fmt chunk */
    snprintf(cmd, sizeof cmd, "%s --mel -O %s %s %s %s %s %s", ws_bin(), outdir, garbage, good, empty, trunc,
             hdr);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "stderr: %s", err);
    int lines = 0;
    for (char *c = err; *c; c++)
        lines += *c == '\n';
    /* one line per bad input, then the summary */
    cr_assert_eq(lines, 5, "want one line per bad input and a summary, got:\n%s", err);
    cr_assert(strstr(err, "whisper-stem: 5 inputs in ") && strstr(err, ": 1 written, 4 failed, 0 skipped"),
              "%s", err);
    cr_assert(strstr(err, "garbage.wav") && strstr(err, "zero.wav") && strstr(err, "trunc.wav") &&
                  strstr(err, "header.wav"), "%s", err);
    snprintf(p, sizeof p, "%s/good.npy", outdir);
    cr_assert(file_exists(p), "the good input was not written");
    snprintf(p, sizeof p, "%s/good.json", outdir);
    cr_assert(file_exists(p), "the good input's sidecar was not written");
    cr_assert_eq(count_files(outdir), 2,
                 "only good.npy and its sidecar may exist (no partial or temporary files)");
}

Test(cli, failed_run_leaves_an_existing_output_untouched)
{
    const char *dir = test_tmpdir();
    char bad[1024], out[1024], cmd[8192], err[2048];
    snprintf(bad, sizeof bad, "%s/bad.wav", dir);
    snprintf(out, sizeof out, "%s/keep.npy", dir);
    FILE *f = fopen(bad, "wb");
    fputs("RIFF....WAVEfmt garbage", f);
    fclose(f);
    f = fopen(out, "wb");
    fputs("previous result", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), bad, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1);
    size_t len;
    char *c = read_file(out, &len);
    cr_assert(len == 15 && memcmp(c, "previous result", 15) == 0);
    free(c);
    cr_assert_eq(count_files(dir), 2);
}

Test(cli, usage_errors_exit_2)
{
    const char *dir = test_tmpdir();
    const char *cases[] = {"", "--mel", "--bogus --mel x.wav -o y.npy", "--mel a.wav b.wav -o y.npy",
                           "--mel --pad nope a.wav -o y.npy", "--threads 0 --mel a.wav -o y.npy",
                           "a.wav -o y.npy", "--mel -o y.npy -O d a.wav", "--mel --pad mel0 --no-pad a.wav -o y",
                           "--mel --device gpu a.wav -o y", "--mel --precision fp64 a.wav -o y"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[2048], err[2048];
        snprintf(cmd, sizeof cmd, "cd %s && env -u WHISPER_STEM_MODEL %s %s", dir, ws_bin(), cases[i]);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "'%s' should be a usage error; stderr: %s", cases[i], err);
        cr_assert(strstr(err, "whisper-stem: "), "'%s': no message: %s", cases[i], err);
    }
}

Test(cli, bad_model_is_one_line_and_exit_1)
{
    const char *dir = test_tmpdir();
    char model[1024], out[1024], cmd[8192], err[2048];
    snprintf(model, sizeof model, "%s/bad.gguf", dir);
    FILE *f = fopen(model, "wb");
    fputs("GGUF\x03", f);
    fclose(f);
    snprintf(out, sizeof out, "%s/o.npy", dir);
    snprintf(cmd, sizeof cmd, "%s -m %s %s -o %s", ws_bin(), model, test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "bad.gguf"), "%s", err);
    cr_assert(!file_exists(out));
}

Test(cli, device_auto_falls_back_and_says_so_json_reports)
{
    const char *dir = test_tmpdir();
    char model[1024], out[1024], js[1024], cmd[8192], err[4096];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 32 --seed 2", model, sizeof model);
    snprintf(out, sizeof out, "%s/o.npy", dir);
    snprintf(js, sizeof js, "%s/r.json", dir);
    /* -v: without a driver the fallback is said only to the verbose (test_cli_names.c) */
    snprintf(cmd, sizeof cmd, "%s -v -m %s %s -o %s --json %s --precision bf16", ws_bin(), model,
             test_sample("jfk.wav"), out, js);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    size_t len;
    char *text = read_file(js, &len);
    cJSON *root = cJSON_ParseWithLength(text, len);
    cr_assert(root, "report is not JSON");
    const char *dev = cJSON_GetStringValue(cJSON_GetObjectItem(root, "device"));
    cr_assert(dev);
    if (strcmp(dev, "cpu") == 0) {
        cr_assert(strstr(err, "running on the CPU"), "no fallback line: %s", err);
        cr_assert(strstr(err, "computes in fp32"), "no precision line: %s", err);
    }
    cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "inputs"), 0);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(in, "ok")));
    cJSON *shape = cJSON_GetObjectItem(in, "shape");
    cr_assert_eq(cJSON_GetArraySize(shape), 2);
    cr_assert_eq(cJSON_GetArrayItem(shape, 0)->valueint, 1500);
    cr_assert_eq(cJSON_GetArrayItem(shape, 1)->valueint, 32);
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(cJSON_GetObjectItem(in, "timings_ms"), "mel")));
    cJSON_Delete(root);
    free(text);
}

Test(cli, device_cuda_without_gpu_fails_clearly)
{
    const char *dir = test_tmpdir();
    char model[1024], out[1024], cmd[8192], err[2048];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 32 --seed 2", model, sizeof model);
    snprintf(out, sizeof out, "%s/o.npy", dir);
    /* hide any driver: the test is about the message when there is none */
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=/nonexistent/libcuda.so.1 %s -m %s %s -o %s --device cuda",
             ws_bin(), model, test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "--device cuda"), "%s", err);
    cr_assert(!file_exists(out));
}

/* docs/spec.md: resampled input is held to the spread between good resamplers:
 * within about 1e-2 of a float64 log-Mel of the same audio, in the bands
 * below 0.9 x the lower Nyquist (7.2 kHz). Here the reference is the exact
 * signal evaluated at 16 kHz in double (what an ideal resampler gives). */
static double multitone(double t)
{
    static const double f[] = {97, 441.7, 1003, 2011.3, 3307, 4999, 6007, 7100};
    double s = 0;
    for (int i = 0; i < 8; i++)
        s += 0.1 * sin(2 * M_PI * f[i] * t + i);
    double fade = t < 0.1 ? 0.5 - 0.5 * cos(M_PI * t / 0.1) : 1.0; /* no step at the start */
    return s * fade;
}

Test(cli, resampled_input_log_mel_within_1e_2_below_0_9_nyquist, .timeout = 60)
{
    const int rates[] = {44100, 48000, 22050};
    for (int r = 0; r < 3; r++) {
        const int rate = rates[r];
        const double dur = 4.0;
        size_t n_in = (size_t)(dur * rate);
        float *x = malloc(sizeof(float) * n_in);
        for (size_t i = 0; i < n_in; i++)
            x[i] = (float)multitone((double)i / rate);
        const char *dir = test_tmpdir();
        char wav[1024], out[1024], cmd[8192], err[2048];
        snprintf(wav, sizeof wav, "%s/in.wav", dir);
        write_wav(wav, x, n_in, rate, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
        free(x);
        snprintf(out, sizeof out, "%s/mel.npy", dir);
        snprintf(cmd, sizeof cmd, "%s --mel --no-pad %s -o %s", ws_bin(), wav, out);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        npy a = load_npy(out);
        size_t n16 = (size_t)(dur * 16000);
        double *ref_in = malloc(sizeof(double) * n16);
        for (size_t i = 0; i < n16; i++)
            ref_in[i] = multitone(i / 16000.0);
        int nf;
        double *ref = oracle_log_mel(ref_in, n16, 80, &nf);
        cr_assert_eq(a.shape[1], nf);
        const double *filt = oracle_filters(80);
        double worst = 0;
        for (int m = 0; m < 80; m++) {
            int top = 200;
            while (top > 0 && filt[m * 201 + top] == 0)
                top--;
            if (top * 40.0 > 0.9 * 8000)
                continue; /* band reaches above 0.9 x Nyquist */
            for (int t = 2; t < nf - 2; t++) /* the ends are reflect-padded differently */
                worst = fmax(worst, fabs(a.data[(size_t)m * nf + t] - ref[(size_t)m * nf + t]));
        }
        fprintf(stderr, "resampled %d Hz: max |log-Mel error| %.2e below 7.2 kHz\n", rate, worst);
        cr_assert_leq(worst, 1e-2, "%d Hz: max |log-Mel error| %.3g below 7.2 kHz", rate, worst);
        free(ref), free(ref_in), free(a.data);
    }
}

Test(cli, dump_ptx_writes_the_kernels_without_a_gpu)
{
    const char *dir = test_tmpdir();
    char model[1024], out[1100], cmd[8192], err[2048], path[1500];
    mkmodel(dir, "m.gguf", "--size tiny --seed 1", model, sizeof model);
    snprintf(out, sizeof out, "%s/ptx", dir); /* does not exist yet: created */
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=/nonexistent %s -m %s --dump-ptx %s --precision bf16",
             ws_bin(), model, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* the modules of the stem's two engine plans: conv1 (80 -> 384) and conv2 (384 -> 384,
     * stride 2), each its direct module and its GEMM's */
    const char *names[] = {"ws_direct_fwd_c80_384_", "ws_direct_fwd_c384_384_",
                           "ws_gemm_mma_bf16_c80_384_", "ws_gemm_mma_bf16_c384_384_"};
    for (int i = 0; i < 4; i++) {
        int found = 0;
        DIR *d = opendir(out);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (strncmp(e->d_name, names[i], strlen(names[i])) != 0)
                continue;
            snprintf(path, sizeof path, "%s/%s", out, e->d_name);
            size_t len;
            char *text = read_file(path, &len);
            cr_assert(text && strstr(text, ".visible .entry") && strstr(text, ".target sm_"), "%s", path);
            free(text);
            found = 1;
        }
        if (d)
            closedir(d);
        cr_assert(found, "no %s*.ptx in %s", names[i], out);
    }
}

/* With several inputs the stages of different files overlap on worker
 * threads; every output must be the bytes a run of that file alone gives. */
Test(cli, many_inputs_give_the_same_bytes_as_one_per_run, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[1024], cmd[16384], err[4096], outdir[1100], p[1300], q[1300];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 32 --seed 11", model, sizeof model);
    snprintf(outdir, sizeof outdir, "%s/many", dir);
    enum { N = 12 };
    int len = snprintf(cmd, sizeof cmd, "%s --device cpu --threads 3 -m %s -O %s", ws_bin(), model, outdir);
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof p, "%s/in%02d.wav", dir, i);
        if (i == 5) { /* one bad input among them */
            FILE *f = fopen(p, "wb");
            fputs("not audio at all", f);
            fclose(f);
        } else {
            size_t n = (size_t)(8000 + 37000 * i) + (i == 9 ? 480000 : 0); /* one of two windows */
            float *x = tone(n, 150.0 + 40 * i, (uint64_t)i);
            write_wav(p, x, n, i % 3 ? 16000 : 22050, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
            free(x);
        }
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %s", p);
    }
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "in05.wav"), "%s", err);
    for (int i = 0; i < N; i++) {
        snprintf(p, sizeof p, "%s/in%02d.npy", outdir, i);
        if (i == 5) {
            cr_assert(!file_exists(p));
            continue;
        }
        snprintf(q, sizeof q, "%s/one.npy", dir);
        /* the same --threads: the BLAS's row blocking follows the thread count,
         * so only equal thread counts promise equal bits (README, Performance) */
        snprintf(cmd, sizeof cmd, "%s --device cpu --threads 3 -m %s %s/in%02d.wav -o %s", ws_bin(), model, dir,
                 i, q);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        size_t la, lb;
        char *a = read_file(p, &la), *b = read_file(q, &lb);
        cr_assert(a && b && la == lb && memcmp(a, b, la) == 0, "input %d: batch and single runs differ", i);
        free(a), free(b);
    }
}

Test(cli, mel_takes_the_band_count_from_the_model)
{
    const char *dir = test_tmpdir();
    char model[1024], out[1100], cmd[8192], err[2048];
    mkmodel(dir, "v3.gguf", "--n-mels 128 --d 32 --seed 3", model, sizeof model);
    snprintf(out, sizeof out, "%s/mel.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel -m %s %s -o %s", ws_bin(), model, test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    npy a = load_npy(out);
    cr_assert_eq(a.shape[0], 128, "a 128-band model gives 128 bands, got %lld", (long long)a.shape[0]);
    free(a.data);
    snprintf(cmd, sizeof cmd, "%s --mel --n-mels 80 -m %s %s -o %s", ws_bin(), model, test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "--n-mels against the model is a usage error: %s", err);
}

/* --- hostile and unusual command lines ------------------------------------ */

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(cli, output_naming_an_input_is_refused_and_the_input_kept)
{
    const char *dir = test_tmpdir();
    char wav[1024], alias[1100], hard[1100], js[1100], cmd[8192], err[4096];
    snprintf(wav, sizeof wav, "%s/in.wav", dir);
    float *x = tone(16000, 300, 1);
    write_wav(wav, x, 16000, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    free(x);
    size_t len0, len;
    char *before = read_file(wav, &len0);
    snprintf(alias, sizeof alias, "%s/./sub/../in.wav", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/sub && ln %s %s/hard.wav", dir, wav, dir);
    cr_assert_eq(run_cmd(cmd, NULL, 0), 0);
    snprintf(hard, sizeof hard, "%s/hard.wav", dir);
    const char *outs[] = {wav, alias, hard};
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), wav, outs[i]);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "-o %s: %s", outs[i], err);
        cr_assert(strstr(err, "is the input"), "%s", err);
        cr_assert_eq(count_lines(err), 1, "%s", err);
    }
    /* -O: an input already in DIR with the output's name */
    char npyp[1100];
    snprintf(npyp, sizeof npyp, "%s/in.npy", dir);
    cr_assert_eq(link(wav, npyp), 0);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s %s", ws_bin(), dir, npyp);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    /* --json naming an input, or the -o file */
    snprintf(js, sizeof js, "%s/o.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s --json %s", ws_bin(), wav, js, wav);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s --json %s/./o.npy", ws_bin(), wav, js, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "--json") && strstr(err, "output"), "%s", err);
    cr_assert(!file_exists(js), "nothing runs after a usage error");
    char *after = read_file(wav, &len);
    cr_assert(len == len0 && !memcmp(before, after, len), "the input was changed");
    free(before);
    free(after);
}

Test(cli, file_names_are_escaped_in_messages)
{
    const char *dir = test_tmpdir();
    char bad[1024], cmd[8192], err[4096];
    snprintf(bad, sizeof bad, "%s/evil\nwhisper-stem: forged line\033[31m.wav", dir);
    FILE *f = fopen(bad, "wb");
    fputs("not audio", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s/out '%s'", ws_bin(), dir, bad);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_eq(count_lines(err), 1, "one line, not a forged second one:\n%s", err);
    cr_assert(strstr(err, "evil\\nwhisper-stem: forged line\\033[31m.wav"), "%s", err);
    cr_assert_null(strchr(err, '\033'), "no escape code reaches the terminal");
}

Test(cli, device_cuda_with_mel_fails_without_a_gpu)
{
    const char *dir = test_tmpdir();
    char out[1024], cmd[8192], err[2048];
    snprintf(out, sizeof out, "%s/o.npy", dir);
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=/nonexistent/libcuda.so.1 %s --mel %s -o %s --device cuda",
             ws_bin(), test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "--device cuda") && strstr(err, "no CUDA driver"), "%s", err);
    cr_assert_eq(count_lines(err), 1, "%s", err);
    cr_assert(!file_exists(out));
}

Test(cli, pos_on_a_too_narrow_model_says_why)
{
    const char *dir = test_tmpdir();
    char model[1024], out[1024], cmd[8192], err[2048];
    mkmodel(dir, "w2.gguf", "--n-mels 80 --d 2 --seed 2", model, sizeof model);
    snprintf(out, sizeof out, "%s/o.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --device cpu --pos -m %s %s -o %s", ws_bin(), model, test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "width 2") && strstr(err, "at least 4") && !strstr(err, "not even"), "%s", err);
}

Test(cli, clashing_outdir_names_are_found_among_many_inputs, .timeout = 60)
{
    /* 20000 names: the clash check is a hash set (bench/dupcheck.sh times it) */
    const char *dir = test_tmpdir();
    enum { N = 20000 };
    char list[1100], cmd[4096], err[4096];
    snprintf(list, sizeof list, "%s/list.txt", dir);
    FILE *f = fopen(list, "w");
    for (int i = 0; i < N; i++)
        fprintf(f, "d%d/f%05d.wav\n", i % 7, i);
    fprintf(f, "other/f12345.flac\n");
    fclose(f);
    snprintf(cmd, sizeof cmd, "cd %s && %s --mel -O out $(cat list.txt)", dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "'d4/f12345.wav' and 'other/f12345.flac' would both write out/f12345.npy"), "%s",
              err);
}

Test(cli, input_over_the_memory_bound_is_one_line, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char wav[1024], out[1100], cmd[8192], err[4096];
    snprintf(wav, sizeof wav, "%s/long.wav", dir);
    size_t n = 16000 * 300; /* 5 min: 19 MB of samples at 16 kHz */
    float *x = calloc(n, sizeof *x);
    write_wav(wav, x, n, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    free(x);
    snprintf(out, sizeof out, "%s/o.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel --max-memory 16M %s -o %s", ws_bin(), wav, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "long.wav") && strstr(err, "memory bound of 16 MiB") && strstr(err, "--max-memory"),
              "%s", err);
    cr_assert_eq(count_lines(err), 1, "%s", err);
    cr_assert(!file_exists(out));
    snprintf(cmd, sizeof cmd, "%s --mel --max-memory 256M %s -o %s", ws_bin(), wav, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd, "%s --mel --max-memory 1X %s -o %s", ws_bin(), wav, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
}

Test(cli, long_input_is_streamed_to_the_same_bytes, .timeout = 240)
{
    /* --max-memory 64M: embeddings go out 8 MiB (two windows of d 512) at a
     * time; five windows are then written piece by piece into the .npy */
    const char *dir = test_tmpdir();
    char model[1024], wav[1024], a[1100], b[1100], cmd[8192], err[4096];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 512 --seed 8", model, sizeof model);
    snprintf(wav, sizeof wav, "%s/long.wav", dir);
    size_t n = 16000 * 135;
    float *x = tone(n, 220, 3);
    write_wav(wav, x, n, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    free(x);
    snprintf(a, sizeof a, "%s/a.npy", dir);
    snprintf(b, sizeof b, "%s/b.f32", dir);
    snprintf(cmd, sizeof cmd, "%s --device cpu --threads 2 --max-memory 64M -m %s %s -o %s", ws_bin(), model, wav, a);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* the default bound sends the five windows whole (64 MiB at a time) */
    snprintf(cmd, sizeof cmd, "%s --device cpu --threads 2 -m %s %s -o %s", ws_bin(), model, wav, b);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    npy A = load_npy(a);
    cr_assert_eq(A.ndim, 3);
    cr_assert_eq(A.shape[0], 5);
    size_t lb;
    char *B = read_file(b, &lb);
    cr_assert(lb == A.count * 4 && !memcmp(A.data, B, lb), "streamed .npy payload differs from the whole-array write");
    free(A.data);
    free(B);
}

Test(cli, an_input_that_blocks_does_not_hold_up_the_others, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char fifo[1024], cmd[8192], err[4096], p[1200];
    snprintf(fifo, sizeof fifo, "%s/slow.wav", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int len = snprintf(cmd, sizeof cmd, "%s --mel --threads 2 -O %s/out %s", ws_bin(), dir, fifo);
    float *x = tone(16000, 300, 1);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/in%d.wav", dir, i);
        write_wav(p, x, 16000, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %s", p);
    }
    /* background run; the FIFO gets its writer only once the others are written */
    snprintf(cmd + len, sizeof cmd - (size_t)len, " & pid=$!; for i in $(seq 200); do "
             "[ -e %s/out/in0.npy ] && [ -e %s/out/in1.npy ] && [ -e %s/out/in2.npy ] && break; sleep 0.05; done; "
             "ls %s/out > %s/seen.txt; cat %s/in0.wav > %s; wait $pid",
             dir, dir, dir, dir, dir, dir, fifo);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/seen.txt", dir);
    size_t n;
    char *seen = read_file(p, &n);
    cr_assert(seen && strstr(seen, "in0.npy") && strstr(seen, "in1.npy") && strstr(seen, "in2.npy"),
              "the other inputs waited for the FIFO: %s", seen ? seen : "");
    free(seen);
    snprintf(p, sizeof p, "%s/out/slow.npy", dir);
    cr_assert(file_exists(p), "the FIFO's input was written once its writer came");
    free(x);
}

Test(cli, replaced_output_keeps_its_mode)
{
    const char *dir = test_tmpdir();
    char out[1024], cmd[8192], err[2048];
    snprintf(out, sizeof out, "%s/private.npy", dir);
    FILE *f = fopen(out, "wb");
    fputs("old", f);
    fclose(f);
    cr_assert_eq(chmod(out, 0600), 0);
    snprintf(cmd, sizeof cmd, "umask 022; %s --mel %s -o %s", ws_bin(), test_sample("jfk.wav"), out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    struct stat st;
    cr_assert_eq(stat(out, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "a private file became %o", st.st_mode & 0777);
    cr_assert_gt(st.st_size, 1000, "the content was replaced");
}

Test(cli, another_users_link_in_a_sticky_directory_is_not_followed)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to plant a link owned by another user");
    const char *dir = test_tmpdir();
    char sticky[1024], victim[1024], link_[1100], cmd[8192], err[2048];
    snprintf(sticky, sizeof sticky, "%s/tmp", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link_, sizeof link_, "%s/out.npy", sticky);
    cr_assert_eq(mkdir(sticky, 0777), 0);
    cr_assert_eq(chmod(sticky, 01777), 0);
    FILE *f = fopen(victim, "wb");
    fputs("precious", f);
    fclose(f);
    cr_assert_eq(symlink(victim, link_), 0);
    cr_assert_eq(lchown(link_, 65534, 65534), 0); /* nobody's link */
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), test_sample("jfk.wav"), link_);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "refusing to follow a symbolic link"), "%s", err);
    size_t len;
    char *v = read_file(victim, &len);
    cr_assert(len == 8 && !memcmp(v, "precious", 8), "the link's target was replaced");
    free(v);
    /* our own link there is followed */
    cr_assert_eq(lchown(link_, 0, 0), 0);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
}

/* The first line a command prints on standard output (its exit status in *rc). */
static void stdout_line(const char *cmd, char *line, size_t cap, int *rc)
{
    FILE *p = popen(cmd, "r");
    cr_assert(p, "popen %s", cmd);
    line[0] = 0;
    if (!fgets(line, (int)cap, p))
        line[0] = 0;
    while (fgetc(p) != EOF) /* the rest, so that the command is not killed by SIGPIPE */
        ;
    int st = pclose(p);
    *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(cli, every_tool_prints_its_name_and_version)
{
    const struct {
        const char *bin, *name;
    } tools[] = {{ws_bin(), "whisper-stem"},
                 {ws_convert(), "whisper-stem-convert"},
                 {ws_mkmodel(), "ws-mkmodel"}};
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
        char cmd[2048], line[256], want[128];
        int rc;
        snprintf(cmd, sizeof cmd, "'%s' --version", tools[i].bin);
        stdout_line(cmd, line, sizeof line, &rc);
        snprintf(want, sizeof want, "%s " WS_VERSION "\n", tools[i].name);
        cr_assert_eq(rc, 0, "%s: exit %d", cmd, rc);
        cr_assert_str_eq(line, want, "%s", cmd);
    }
}

Test(cli, help_shows_the_defaults)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' --help", ws_bin());
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, p);
    cr_assert_eq(pclose(p), 0);
    cr_assert(n > 0);
    /* every option with an argument that has a default says it on its line */
    const char *with_default[] = {"--model FILE", "--out-dtype", "--n-mels", "--pad audio",
                                  "--device", "--precision", "--threads", "--max-memory",
                                  "--shard", "--tar-size", "--progress"};
    for (size_t i = 0; i < sizeof with_default / sizeof *with_default; i++) {
        const char *at = strstr(text, with_default[i]);
        cr_assert(at, "--help lacks %s", with_default[i]);
        const char *eol = strchr(at, '\n');
        cr_assert(eol && memmem(at, (size_t)(eol - at), "default", 7),
                  "--help: the line of %s shows no default", with_default[i]);
    }
    cr_assert(strstr(text, "off unless given"), "flags' default stated");
    free(text);

    snprintf(cmd, sizeof cmd, "'%s' --help", ws_convert());
    char line[256];
    int rc;
    stdout_line(cmd, line, sizeof line, &rc);
    cr_assert_eq(rc, 0);
    cr_assert(strstr(line, "usage: whisper-stem-convert"), "%s", line);
}

/* --- a GPU run's two processes (detach.c), forced on the CPU ------------------------ */

/* The detached run writes what the plain run writes and exits with its status; an
 * input that fails still says so on stderr. */
Test(cli, detached_run_gives_the_same_outputs_and_status, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char cmd[4096], err[4096], in[1100], a[1100], b[1100];
    snprintf(in, sizeof in, "%s/in.wav", dir);
    float *x = tone(48000, 440, 3);
    write_wav(in, x, 48000, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    snprintf(cmd, sizeof cmd, "%s --device cpu --mel -q -O %s/plain %s", ws_bin(), dir, in);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd,
             "{ WHISPER_STEM_DETACH=1 %s --device cpu --mel -q -O %s/two %s %s/missing.wav; "
             "echo \"status $?\" >&2; }",
             ws_bin(), dir, in, dir);
    run_cmd(cmd, err, sizeof err);
    cr_assert(strstr(err, "missing.wav: cannot open"), "%s", err);
    cr_assert(strstr(err, "status 1"), "the missing input's status was not given: %s", err);
    snprintf(a, sizeof a, "%s/plain/in.npy", dir);
    snprintf(b, sizeof b, "%s/two/in.npy", dir);
    size_t na, nb;
    char *pa = read_file(a, &na), *pb = read_file(b, &nb);
    cr_assert(pa && pb && na == nb && !memcmp(pa, pb, na), "the detached run wrote other bytes");
    /* through a pipe: the reader gets the whole .npy and its end */
    snprintf(cmd, sizeof cmd,
             "%s --device cpu --mel -o - %s > %s/plain.raw && "
             "WHISPER_STEM_DETACH=1 %s --device cpu --mel -o - %s | cmp - %s/plain.raw",
             ws_bin(), in, dir, ws_bin(), in, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    free(pa);
    free(pb);
    free(x);
}

/* Starts a detached run on a FIFO; returns once the run has it open (a writer's
 * non-blocking open succeeds only then), with *wfd that writer, held open and silent so
 * that the run waits for samples. *errfd: the run's stderr. */
static pid_t start_blocked_run(const char *dir, int *errfd, int *wfd, char *fifo, size_t cap)
{
    snprintf(fifo, cap, "%s/wait.wav", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int e[2];
    cr_assert_eq(pipe(e), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        dup2(e[1], STDERR_FILENO);
        close(e[0]);
        close(e[1]);
        setenv("WHISPER_STEM_DETACH", "1", 1);
        char out[1100];
        snprintf(out, sizeof out, "%s/out.npy", dir);
        execl(ws_bin(), ws_bin(), "--device", "cpu", "--mel", "-o", out, fifo, (char *)NULL);
        _exit(127);
    }
    close(e[1]);
    *errfd = e[0];
    for (;;) { /* bounded by the test's timeout */
        int w = open(fifo, O_WRONLY | O_NONBLOCK);
        if (w >= 0) {
            *wfd = w;
            break;
        }
        cr_assert_eq(errno, ENXIO, "open %s: %s", fifo, strerror(errno));
        sched_yield();
    }
    return pid;
}

/* Everything written to fd until every holder closed it: the run's processes ended. */
static char *read_to_end(int fd)
{
    size_t n = 0, cap = 4096;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    for (;;) {
        ssize_t r = read(fd, s + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (cap - n < 2) {
            s = realloc(s, cap *= 2);
            cr_assert_not_null(s);
        }
    }
    s[n] = 0;
    close(fd);
    return s;
}

/* A blocked detached run, sig sent to the process started: its wait status, and what the
 * run wrote on stderr until both processes were gone (its end closes the pipe); no output
 * was left. */
static char *signalled_run(int sig, int *st)
{
    const char *dir = test_tmpdir();
    char fifo[1100], out[1100];
    int errfd, wfd;
    pid_t pid = start_blocked_run(dir, &errfd, &wfd, fifo, sizeof fifo);
    cr_assert_eq(kill(pid, sig), 0);
    cr_assert_eq(waitpid(pid, st, 0), pid);
    char *e = read_to_end(errfd);
    close(wfd);
    snprintf(out, sizeof out, "%s/out.npy", dir);
    cr_assert(!file_exists(out));
    return e;
}

/* A signal to the process the caller started reaches the run, which ends as it would
 * alone (one line, no output); the caller gets 128 + the signal. */
Test(cli, detached_run_is_interrupted_through_the_process_started, .timeout = 60)
{
    int st;
    char *e = signalled_run(SIGTERM, &st);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGTERM, "status %#x", st);
    cr_assert(strstr(e, "interrupted by SIGTERM") && strstr(e, "no partial output left"), "%s", e);
    free(e);
}

/* The process the caller started is killed: the run ends too, leaving nothing. */
Test(cli, detached_run_ends_when_the_process_started_is_killed, .timeout = 60)
{
    int st;
    char *e = signalled_run(SIGKILL, &st);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    cr_assert(strstr(e, "interrupted by SIGTERM"), "the run did not end with its caller: %s", e);
    free(e);
}

/* A GPU run of many inputs on the repository's stand-in driver (tests/stub/libcuda.c:
 * allocations, copies and events behave, kernels compute nothing): the GPU opened while
 * the inputs are named, batches, and the two processes: every output written, status 0
 * as soon as they are, the same again with the run in one process. */
Test(cli, gpu_run_on_a_stand_in_driver_writes_every_output, .timeout = 120)
{
    test_stub_driver();
    const char *dir = test_tmpdir();
    char model[1024], cmd[8192], err[4096], p[1100];
    mkmodel(dir, "tiny.gguf", "--size tiny", model, sizeof model);
    float *x = tone(16000 * 30, 220, 9);
    snprintf(p, sizeof p, "%s/a.wav", dir);
    write_wav(p, x, 16000 * 30, 16000, SF_FORMAT_WAV | SF_FORMAT_PCM_16);
    snprintf(cmd, sizeof cmd, "%s/list.txt", dir);
    FILE *f = fopen(cmd, "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 40; i++)
        fprintf(f, "%s/l%02d.wav\n", dir, i);
    fclose(f);
    for (int i = 0; i < 40; i++) {
        char q[1100];
        snprintf(q, sizeof q, "%s/l%02d.wav", dir, i);
        cr_assert_eq(symlink(p, q), 0);
    }
    /* 2: two processes; 1: the same on a GPU in exclusive mode (the first waits for the
     * second's whole end); 0: one process */
    for (int detach = 2; detach >= 0; detach--) {
        snprintf(cmd, sizeof cmd, "%s%s -q --device cuda -m %s --list %s/list.txt -O %s/out%d",
                 detach == 2 ? "" : detach ? "STUB_CUDA_COMPUTE_MODE=3 " : "WHISPER_STEM_NO_DETACH=1 ",
                 ws_bin(), model, dir, dir, detach);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
        cr_assert_eq(err[0], 0, "-q: nothing on stderr: %s", err);
        char out[1100];
        snprintf(out, sizeof out, "%s/out%d", dir, detach);
        cr_assert_eq(count_files(out), 80, "40 outputs and their sidecars");
    }
    free(x);
    unsetenv("WHISPER_STEM_LIBCUDA");
}

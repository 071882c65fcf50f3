/* test_gpu_node.c - the command's GPU path: inputs in batches of many (cuda/gpu_batch.h),
 * the log-Mel on the GPU, float16 converted there. Each test runs whisper-stem itself.
 *
 *   - one run over many inputs gives the same bytes as one run per input, and as a run
 *     whose batches are one window each (--max-memory 16M): a window's numbers do not
 *     depend on its batch; the same command twice gives the same bytes;
 *   - the GPU's embeddings against the CPU's: with --mel-device cpu (the same log-Mel) within
 *     SPEC's bounds for the precision; with the log-Mel on the GPU too, within the bound
 *     measured for the log-Mel's difference carried through the stem;
 *   - the GPU log-Mel (--mel) against the CPU log-Mel and the float64 oracle: speech, a
 *     tone, silence, 65 s whose loudest part is in the last window, --no-pad, --pad mel0,
 *     128 bands;
 *   - 200 inputs of 0.1 s to 5 min in one run under a small memory bound, against the CPU;
 *   - --out-dtype f16 is the float32 result rounded to nearest even, bit for bit.
 * Without a driver or device every test skips, saying why.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common.h"
#include "cuda/gpu.h"
#include "helpers.h"
#include "oracle.h"
#include "output.h"

static void need_gpu(void)
{
    char name[200];
    ws_err e = {{0}};
    if (ws_gpu_probe(0, name, sizeof name, &e))
        cr_skip_test("no usable GPU: %s", e.msg);
}

typedef struct {
    void *data; /* float32, or uint16 bits of float16 */
    int f16;
    int64_t shape[4];
    int ndim;
    size_t count;
} arr;

static arr load(const char *path)
{
    arr a = {0};
    size_t len;
    uint8_t *b = read_file(path, &len);
    cr_assert(b, "cannot read %s", path);
    cr_assert(len >= 10 && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0, "%s: not npy 1.0", path);
    size_t hl = 10 + (b[8] | (size_t)b[9] << 8);
    char *h = strndup((char *)b + 10, hl - 10);
    a.f16 = strstr(h, "'<f2'") != NULL;
    cr_assert(a.f16 || strstr(h, "'<f4'"), "%s: %s", path, h);
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
    const size_t es = a.f16 ? 2 : 4;
    cr_assert_eq(len - hl, a.count * es, "%s: payload", path);
    a.data = malloc(a.count * es + 4);
    memcpy(a.data, b + hl, a.count * es);
    free(b);
    return a;
}

static double *to_double(const arr *a)
{
    double *d = malloc(a->count * sizeof *d + 8);
    for (size_t i = 0; i < a->count; i++)
        d[i] = ((const float *)a->data)[i];
    return d;
}

static void same_shape(const arr *a, const arr *b, const char *what)
{
    cr_assert_eq(a->ndim, b->ndim, "%s: ndim %d vs %d", what, a->ndim, b->ndim);
    for (int i = 0; i < a->ndim; i++)
        cr_assert_eq(a->shape[i], b->shape[i], "%s: dim %d", what, i);
}

/* rel L2 and max abs of got against want (both float32 files). */
static void compare(const char *got, const char *want, double rel_bound, double abs_bound)
{
    arr a = load(got), b = load(want);
    same_shape(&a, &b, got);
    double *w = to_double(&b);
    double r = rel_l2(a.data, w, a.count), m = max_abs_err(a.data, w, a.count);
    cr_assert(r <= rel_bound && m <= abs_bound, "%s vs %s: rel L2 %.3g (bound %.3g), max abs %.3g "
              "(bound %.3g)", got, want, r, rel_bound, m, abs_bound);
    free(w);
    free(a.data);
    free(b.data);
}

static void same_bytes(const char *a, const char *b)
{
    size_t la, lb;
    char *x = read_file(a, &la), *y = read_file(b, &lb);
    cr_assert(x && y, "%s, %s", a, b);
    cr_assert(la == lb && !memcmp(x, y, la), "%s and %s differ", a, b);
    free(x);
    free(y);
}

static void write_wav(const char *path, const float *x, size_t n, int rate)
{
    SF_INFO info = {.samplerate = rate, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_FLOAT};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert(f, "sf_open %s: %s", path, sf_strerror(NULL));
    if (n)
        cr_assert_eq(sf_writef_float(f, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(f);
}

/* Two tones and a little noise; from loud_from on 4x louder (the global max late). */
static void tone_wav(const char *path, size_t n, double f0, uint64_t seed, size_t loud_from)
{
    ws_rng r = {seed};
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i >= loud_from ? 4.0 : 1.0) *
                       (0.05 * sin(2 * M_PI * f0 * i / 16000.0) +
                        0.02 * sin(2 * M_PI * 2.7 * f0 * i / 16000.0) + 0.005 * (ws_rng_uniform(&r) - 0.5)));
    write_wav(path, x, n, 16000);
    free(x);
}

static void run_ok(const char *cmd)
{
    char err[4096];
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
}

static void mkmodel(const char *dir, const char *name, const char *args, char *path, size_t cap)
{
    char cmd[2048];
    snprintf(path, cap, "%s/%s", dir, name);
    snprintf(cmd, sizeof cmd, "%s %s -o %s", ws_mkmodel(), args, path);
    run_ok(cmd);
}

/* Inputs of assorted lengths in dir/in, names listed in dir/list; returns how many. */
static int make_inputs(const char *dir)
{
    static const double secs[] = {0.3, 5.0, 29.99, 30.0, 31.0, 65.0, 12.5, 0.01, 90.0, 2.0};
    char path[1200], cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/in", dir);
    run_ok(cmd);
    snprintf(path, sizeof path, "%s/list", dir);
    FILE *l = fopen(path, "w");
    cr_assert(l);
    const int n = (int)(sizeof secs / sizeof *secs);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/in/t%02d.wav", dir, i);
        size_t len = (size_t)(secs[i] * 16000);
        tone_wav(path, len, 150.0 + 40 * i, (uint64_t)i + 1, len / 2);
        fprintf(l, "%s\n", path);
    }
    snprintf(path, sizeof path, "%s/in/jfk.wav", dir);
    snprintf(cmd, sizeof cmd, "cp %s %s && echo %s >> %s/list", test_sample("jfk.wav"), path, path, dir);
    fclose(l);
    run_ok(cmd);
    return n + 1;
}

static void out_path(char *buf, size_t cap, const char *dir, const char *run, int i, int n)
{
    if (i == n - 1)
        snprintf(buf, cap, "%s/%s/jfk.npy", dir, run);
    else
        snprintf(buf, cap, "%s/%s/t%02d.npy", dir, run, i);
}

Test(gpu_node, one_run_equals_one_run_per_input_and_any_batching, .timeout = 600)
{
    need_gpu();
    const char *dir = test_tmpdir();
    char model[1100], cmd[8192], a[1400], b[1400];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 384 --seed 5", model, sizeof model);
    const int n = make_inputs(dir);
    static const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++) {
        snprintf(cmd, sizeof cmd, "%s -q -m %s --device cuda --precision %s --pos --list %s/list -O %s/all_%s "
                 "&& %s -q -m %s --device cuda --precision %s --pos --list %s/list -O %s/again_%s "
                 "&& %s -q -m %s --device cuda --precision %s --pos --max-memory 16M --list %s/list -O %s/small_%s",
                 ws_bin(), model, precs[p], dir, dir, precs[p], ws_bin(), model, precs[p], dir, dir,
                 precs[p], ws_bin(), model, precs[p], dir, dir, precs[p]);
        run_ok(cmd);
        for (int i = 0; i < n; i++) {
            char one[64], run[64];
            snprintf(run, sizeof run, "all_%s", precs[p]);
            out_path(a, sizeof a, dir, run, i, n);
            snprintf(one, sizeof one, "one_%s", precs[p]);
            out_path(b, sizeof b, dir, one, i, n);
            const char *in = strrchr(b, '/') + 1;
            char src[1400];
            snprintf(src, sizeof src, "%s/in/%.*s.wav", dir, (int)(strlen(in) - 4), in);
            snprintf(cmd, sizeof cmd, "mkdir -p %s/%s && %s -q -m %s --device cuda --precision %s --pos %s -o %s",
                     dir, one, ws_bin(), model, precs[p], src, b);
            run_ok(cmd);
            same_bytes(a, b);
            snprintf(run, sizeof run, "again_%s", precs[p]);
            out_path(b, sizeof b, dir, run, i, n);
            same_bytes(a, b);
            snprintf(run, sizeof run, "small_%s", precs[p]);
            out_path(b, sizeof b, dir, run, i, n);
            same_bytes(a, b);
        }
    }
}

Test(gpu_node, embeddings_match_the_cpu, .timeout = 600)
{
    need_gpu();
    const char *dir = test_tmpdir();
    char model[1100], cmd[8192], a[1400], b[1400];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 384 --seed 6", model, sizeof model);
    const int n = make_inputs(dir);
    snprintf(cmd, sizeof cmd, "%s -q -m %s --device cpu --pos --list %s/list -O %s/cpu", ws_bin(), model,
             dir, dir);
    run_ok(cmd);
    /* SPEC's bounds for the stem alone (the same log-Mel): fp32 1e-5, tf32 2e-3, bf16 and
     * fp16 1e-2 (rel L2); fp32 also max abs 1e-4 */
    static const char *precs[] = {"fp32", "tf32", "bf16", "fp16"};
    static const double rel[] = {1e-5, 2e-3, 1e-2, 1e-2}, mabs[] = {1e-4, 1, 1, 1};
    for (int p = 0; p < 4; p++) {
        snprintf(cmd, sizeof cmd, "%s -q -m %s --device cuda --mel-device cpu --precision %s --pos --list %s/list "
                 "-O %s/g_%s", ws_bin(), model, precs[p], dir, dir, precs[p]);
        run_ok(cmd);
        for (int i = 0; i < n; i++) {
            char run[32];
            snprintf(run, sizeof run, "g_%s", precs[p]);
            out_path(a, sizeof a, dir, run, i, n);
            out_path(b, sizeof b, dir, "cpu", i, n);
            compare(a, b, rel[p], mabs[p]);
        }
    }
    /* everything on the GPU, fp32: the log-Mel's difference (<= 2e-4, below) carried
     * through the stem */
    snprintf(cmd, sizeof cmd, "%s -q -m %s --device cuda --pos --list %s/list -O %s/gg", ws_bin(), model,
             dir, dir);
    run_ok(cmd);
    for (int i = 0; i < n; i++) {
        out_path(a, sizeof a, dir, "gg", i, n);
        out_path(b, sizeof b, dir, "cpu", i, n);
        compare(a, b, 1e-4, 1e-3);
    }
}

/* --mel on the GPU and on the CPU for one input and flags; both within 1e-4 of the oracle
 * is checked where the oracle's input is at hand (speech, 30 s padding). */
static void mel_case(const char *dir, const char *wav, const char *flags, const char *tag)
{
    char cmd[8192], g[1200], c[1200];
    snprintf(g, sizeof g, "%s/%s_gpu.npy", dir, tag);
    snprintf(c, sizeof c, "%s/%s_cpu.npy", dir, tag);
    snprintf(cmd, sizeof cmd, "%s -q --mel %s --device cuda %s -o %s && %s -q --mel %s --device cpu %s -o %s",
             ws_bin(), flags, wav, g, ws_bin(), flags, wav, c);
    run_ok(cmd);
    compare(g, c, 1e-4, 2e-4);
}

Test(gpu_node, log_mel_on_the_gpu_matches_the_cpu_and_the_oracle, .timeout = 300)
{
    need_gpu();
    const char *dir = test_tmpdir();
    char wav[1200];
    mel_case(dir, test_sample("jfk.wav"), "", "jfk");
    mel_case(dir, test_sample("jfk.wav"), "--n-mels 128", "jfk128");
    mel_case(dir, test_sample("jfk.wav"), "--no-pad", "jfk_nopad");
    mel_case(dir, test_sample("jfk.wav"), "--pad mel0", "jfk_mel0");
    snprintf(wav, sizeof wav, "%s/tone.wav", dir);
    tone_wav(wav, 7 * 16000 + 77, 440, 3, (size_t)-1);
    mel_case(dir, wav, "", "tone");
    mel_case(dir, wav, "--no-pad", "tone_nopad");
    snprintf(wav, sizeof wav, "%s/long.wav", dir);
    tone_wav(wav, 65 * 16000 + 123, 220, 4, 62 * 16000); /* the max in the third window */
    mel_case(dir, wav, "", "long");
    mel_case(dir, wav, "--pad mel0 --n-mels 128", "long_mel0");
    /* silence: every value the floor of log10(1e-10), (-10 + 4) / 4 */
    snprintf(wav, sizeof wav, "%s/silence.wav", dir);
    float *z = calloc(16000, sizeof *z);
    write_wav(wav, z, 16000, 16000);
    free(z);
    mel_case(dir, wav, "", "silence");
    char g[1200];
    snprintf(g, sizeof g, "%s/silence_gpu.npy", dir);
    arr s = load(g);
    for (size_t i = 0; i < s.count; i++)
        cr_assert_eq(((float *)s.data)[i], -1.5f, "silence [%zu] = %.9g", i, ((float *)s.data)[i]);
    free(s.data);
    /* the oracle, speech padded to 30 s */
    SF_INFO info = {0};
    SNDFILE *f = sf_open(test_sample("jfk.wav"), SFM_READ, &info);
    cr_assert(f);
    double *x = calloc(480000, sizeof *x);
    short *sh = malloc(sizeof(short) * (size_t)info.frames);
    sf_count_t got = sf_readf_short(f, sh, info.frames);
    sf_close(f);
    for (sf_count_t i = 0; i < got && i < 480000; i++)
        x[i] = sh[i] / 32768.0;
    int nf;
    double *want = oracle_log_mel(x, 480000, 80, &nf);
    snprintf(g, sizeof g, "%s/jfk_gpu.npy", dir);
    arr m = load(g);
    assert_close("GPU log-Mel vs oracle", m.data, want, m.count, 1e-4, 0);
    free(m.data), free(want), free(x), free(sh);
}

Test(gpu_node, two_hundred_inputs_of_a_tenth_of_a_second_to_five_minutes, .timeout = 900)
{
    need_gpu();
    const char *dir = test_tmpdir();
    char model[1100], cmd[8192], path[1400], a[1400], b[1400];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 128 --seed 7", model, sizeof model);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/in", dir);
    run_ok(cmd);
    snprintf(path, sizeof path, "%s/list", dir);
    FILE *l = fopen(path, "w");
    cr_assert(l);
    /* 0.1 s to 300 s, spaced evenly in log(length): about 2 hours in all */
    for (int i = 0; i < 200; i++) {
        double s = 0.1 * pow(3000.0, i / 199.0);
        snprintf(path, sizeof path, "%s/in/f%03d.wav", dir, i);
        size_t len = (size_t)(s * 16000);
        tone_wav(path, len, 100.0 + 7 * i, (uint64_t)i + 11, len / 3);
        fprintf(l, "%s\n", path);
    }
    fclose(l);
    snprintf(cmd, sizeof cmd, "%s -q -m %s --device cpu --list %s/list -O %s/cpu && "
             "%s -q -m %s --device cuda --max-memory 64M --list %s/list -O %s/gpu --manifest %s/m.jsonl",
             ws_bin(), model, dir, dir, ws_bin(), model, dir, dir, dir);
    run_ok(cmd);
    for (int i = 0; i < 200; i++) {
        snprintf(a, sizeof a, "%s/gpu/f%03d.npy", dir, i);
        snprintf(b, sizeof b, "%s/cpu/f%03d.npy", dir, i);
        compare(a, b, 1e-4, 1e-3);
    }
}

Test(gpu_node, f16_output_is_the_f32_output_rounded_to_nearest_even, .timeout = 300)
{
    need_gpu();
    const char *dir = test_tmpdir();
    char model[1100], cmd[8192], a[1400], b[1400];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 384 --seed 8", model, sizeof model);
    const int n = make_inputs(dir);
    snprintf(cmd, sizeof cmd, "%s -q -m %s --device cuda --list %s/list -O %s/f32 && "
             "%s -q -m %s --device cuda --out-dtype f16 --list %s/list -O %s/f16 && "
             "%s -q --mel --device cuda --list %s/list -O %s/m32 && "
             "%s -q --mel --device cuda --out-dtype f16 --list %s/list -O %s/m16",
             ws_bin(), model, dir, dir, ws_bin(), model, dir, dir, ws_bin(), dir, dir, ws_bin(), dir, dir);
    run_ok(cmd);
    static const char *pairs[][2] = {{"f32", "f16"}, {"m32", "m16"}};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n; i++) {
            out_path(a, sizeof a, dir, pairs[k][0], i, n);
            out_path(b, sizeof b, dir, pairs[k][1], i, n);
            arr x = load(a), h = load(b);
            same_shape(&x, &h, b);
            cr_assert(h.f16 && !x.f16);
            ws_f32_to_f16_inplace(x.data, x.count);
            cr_assert(!memcmp(x.data, h.data, x.count * 2), "%s is not %s rounded", b, a);
            free(x.data);
            free(h.data);
        }
}

/* Outputs that are FIFOs whose readers come only after every other output is written: with
 * one-window batches (--max-memory 48M: a slot's pinned buffers get a twelfth, under one
 * window's 4.2 MB; the inputs in flight may hold 48 MB, so the four waiting ones, 3.3 MB
 * each, leave room for the others) the four land in four batches, more than the three
 * in flight; their writers wait for readers, and the other inputs must still go through
 * (a FIFO's result is copied out of its batch, which then holds nothing). The FIFOs carry
 * the bytes a file gets. */
Test(gpu_node, outputs_to_fifos_hold_no_batch, .timeout = 300)
{
    need_gpu();
    const char *dir = test_tmpdir();
    char model[1100], cmd[8192], path[1400], a[1400], b[1400];
    mkmodel(dir, "m.gguf", "--n-mels 80 --d 384 --seed 9", model, sizeof model);
    snprintf(cmd, sizeof cmd, "mkdir -p %s/in %s/out", dir, dir);
    run_ok(cmd);
    snprintf(path, sizeof path, "%s/list", dir);
    FILE *l = fopen(path, "w");
    cr_assert(l);
    for (int i = 0; i < 24; i++) {
        snprintf(path, sizeof path, "%s/in/f%02d.wav", dir, i);
        tone_wav(path, 2 * 16000, 200.0 + 9 * i, (uint64_t)i + 21, (size_t)-1);
        fprintf(l, "%s\n", path);
    }
    fclose(l);
    static const int fifo[] = {0, 7, 14, 21};
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/out/f%02d.npy", dir, fifo[k]);
        cr_assert_eq(mkfifo(path, 0600), 0);
    }
    snprintf(cmd, sizeof cmd,
             "cd %s && (%s -q -m %s --device cuda --max-memory 48M --list list -O out & pid=$!; "
             "n=0; for t in $(seq 1200); do n=$(find out -type f -name '*.npy' | wc -l); "
             "[ $n -ge 20 ] && break; sleep 0.1; done; "
             "for k in 00 07 14 21; do cat out/f$k.npy > got$k.npy & done; "
             "wait $pid; st=$?; wait; [ $n -ge 20 ] || exit 9; exit $st) && "
             "%s -q -m %s --device cuda --list list -O files",
             dir, ws_bin(), model, ws_bin(), model);
    char err[4096];
    int rc = run_cmd(cmd, err, sizeof err);
    cr_assert_eq(rc, 0, "%s (9: the other outputs did not all appear while the FIFOs waited)",
                 err);
    for (int k = 0; k < 4; k++) {
        snprintf(a, sizeof a, "%s/got%02d.npy", dir, fifo[k]);
        snprintf(b, sizeof b, "%s/files/f%02d.npy", dir, fifo[k]);
        same_bytes(a, b);
    }
}

/* mkmodel.c - ws-mkmodel: write a Whisper conv-stem GGUF with deterministic
 * random weights (ws_model_init_random), for tests and benchmarks when the
 * real weights are not at hand. Same seed, same file, on every machine.
 *
 *   ws-mkmodel [--size tiny|base|small|medium|large|large-v3] [--n-mels N --d D]
 *              [--type f32|f16|bf16] [--seed S] [--pos] [--hf-names] [--bias-2d]
 *              -o OUT.gguf
 *
 * Exit status: 0 written, 1 failed, 2 usage error; one line on stderr.
 * Tested by tests/test_model.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "whisper/model.h"
#include "signals.h"

static const struct {
    const char *name;
    int n_mels, d;
} SIZES[] = {
    {"tiny", 80, 384},    {"base", 80, 512},   {"small", 80, 768},
    {"medium", 80, 1024}, {"large", 80, 1280}, {"large-v3", 128, 1280},
};

static const char USAGE[] =
    "usage: ws-mkmodel [--size tiny|base|small|medium|large|large-v3] [--n-mels N --d D]\n"
    "                  [--type f32|f16|bf16] [--seed S] [--pos] [--hf-names] [--bias-2d]\n"
    "                  -o OUT.gguf | --version | --help\n"
    "Writes a Whisper conv-stem GGUF with deterministic random weights\n"
    "(default --size tiny --type f32 --seed 1).\n"
    "  --pos       add encoder.positional_embedding = sinusoids(1500, d)\n"
    "  --hf-names  Hugging Face tensor names (model.encoder.conv1.weight, ...)\n"
    "  --bias-2d   biases stored ne=[1,d], as whisper.cpp does\n"
    "(--pos, --hf-names and --bias-2d are off unless given)\n";

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "ws-mkmodel: %s%s%s (see --help)\n", msg, arg ? ": " : "", arg ? arg : "");
    return 2;
}

/* Whole-string decimal in [lo, hi]. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    ws_signals_init("ws-mkmodel");
    const char *size = NULL, *out = NULL;
    uint64_t n_mels = 0, d = 0, seed = 1;
    ws_tensor_type type = WS_TT_F32;
    int pos = 0;
    ws_model_save_opts o = {WS_TT_F32, 0, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("ws-mkmodel %s\n", WS_VERSION);
            return 0;
        } else if (!strcmp(a, "--pos")) {
            pos = 1;
        } else if (!strcmp(a, "--hf-names")) {
            o.hf_names = 1;
        } else if (!strcmp(a, "--bias-2d")) {
            o.bias_2d = 1;
        } else if (!strcmp(a, "--size") || !strcmp(a, "--n-mels") || !strcmp(a, "--d") ||
                   !strcmp(a, "--type") || !strcmp(a, "--seed") || !strcmp(a, "-o")) {
            if (!v)
                return usage_error("missing value after", a);
            i++;
            if (!strcmp(a, "--size")) {
                size = v;
            } else if (!strcmp(a, "--n-mels")) {
                if (parse_u64(v, 1, 65536, &n_mels))
                    return usage_error("--n-mels wants an integer in 1..65536", v);
            } else if (!strcmp(a, "--d")) {
                if (parse_u64(v, 1, 65536, &d))
                    return usage_error("--d wants an integer in 1..65536", v);
            } else if (!strcmp(a, "--seed")) {
                if (parse_u64(v, 0, UINT64_MAX, &seed))
                    return usage_error("--seed wants a non-negative integer", v);
            } else if (!strcmp(a, "--type")) {
                if (!strcmp(v, "f32"))
                    type = WS_TT_F32;
                else if (!strcmp(v, "f16"))
                    type = WS_TT_F16;
                else if (!strcmp(v, "bf16"))
                    type = WS_TT_BF16;
                else
                    return usage_error("--type wants f32, f16 or bf16", v);
            } else {
                out = v;
            }
        } else {
            return usage_error("unknown argument", a);
        }
    }
    if (!out)
        return usage_error("no output file (-o OUT.gguf)", NULL);
    if (size && (n_mels || d))
        return usage_error("use --size or --n-mels/--d, not both", NULL);
    if (!size && (!n_mels != !d))
        return usage_error("--n-mels and --d go together", NULL);
    if (!size && !n_mels)
        size = "tiny";
    if (size) {
        size_t k = 0, n = sizeof SIZES / sizeof SIZES[0];
        while (k < n && strcmp(SIZES[k].name, size))
            k++;
        if (k == n)
            return usage_error("unknown --size (tiny, base, small, medium, large, large-v3)", size);
        n_mels = (uint64_t)SIZES[k].n_mels;
        d = (uint64_t)SIZES[k].d;
    }

    ws_model m;
    ws_err err = {{0}};
    o.type = type;
    if (ws_model_init_random(&m, (int)n_mels, (int)d, seed, pos, &err) ||
        ws_model_save_gguf_opts(&m, out, &o, &err)) {
        fprintf(stderr, "ws-mkmodel: %s\n", err.msg);
        ws_model_free(&m);
        return 1;
    }
    ws_model_free(&m);
    return 0;
}

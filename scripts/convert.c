/* convert.c - ws-convert, installed as whisper-stem-convert: a user's Whisper
 * checkpoint to the conv-stem GGUF whisper-stem reads (src/convert/ckpt.h).
 *
 *   whisper-stem-convert IN -o OUT.gguf [--type keep|f32|f16|bf16]
 *                        [--from auto|safetensors|safetensors-index|ggml|gguf] [--name NAME]
 *
 * IN: Hugging Face model.safetensors, a sharded model.safetensors.index.json,
 * whisper.cpp ggml-*.bin, or a GGUF. PyTorch .pt files: scripts/pt-to-gguf.py.
 * Exit status: 0 written, 1 failed (one line on stderr naming the file and the
 * problem; no output file), 2 usage error. Tested by tests/test_convert.c.
 */
#include <stdio.h>
#include <string.h>

#include "convert/ckpt.h"
#include "signals.h"

#define PROG "whisper-stem-convert"

/* The one table behind both the parser and --help. */
enum { O_OUT, O_TYPE, O_FROM, O_NAME, O_HELP, O_VERSION, N_OPTS };
static const struct {
    const char *flag, *alt, *arg, *help;
} OPTS[N_OPTS] = {
    [O_OUT] = {"-o", "--output", "OUT.gguf", "file to write (required)"},
    [O_TYPE] = {"--type", NULL, "keep|f32|f16|bf16",
                "type of the written tensors (default keep: as stored)"},
    [O_FROM] = {"--from", NULL, "auto|safetensors|safetensors-index|ggml|gguf",
                "input format (default auto: from the first bytes)"},
    [O_NAME] = {"--name", NULL, "NAME", "general.name (default: IN's name less its extension)"},
    [O_HELP] = {"-h", "--help", NULL, "this help"},
    [O_VERSION] = {"--version", NULL, NULL, "print \"" PROG " VERSION\" and exit"},
};

static const struct {
    const char *name;
    ws_convert_type type;
} TYPES[] = {{"keep", WS_CONVERT_KEEP}, {"f32", WS_CONVERT_F32}, {"f16", WS_CONVERT_F16},
             {"bf16", WS_CONVERT_BF16}};

static void help(void)
{
    printf("usage: " PROG " IN -o OUT.gguf [--type keep|f32|f16|bf16] [--from FORMAT] "
           "[--name NAME]\n"
           "Writes the conv stem of a Whisper checkpoint (Hugging Face safetensors or its\n"
           "sharded index, whisper.cpp ggml .bin, GGUF) as whisper-stem's GGUF. For\n"
           "openai-whisper .pt files use scripts/pt-to-gguf.py (needs PyTorch).\n");
    for (int i = 0; i < N_OPTS; i++) {
        char lhs[96];
        snprintf(lhs, sizeof lhs, "%s%s%s%s%s", OPTS[i].flag, OPTS[i].alt ? ", " : "",
                 OPTS[i].alt ? OPTS[i].alt : "", OPTS[i].arg ? " " : "",
                 OPTS[i].arg ? OPTS[i].arg : "");
        if (strlen(lhs) > 24)
            printf("  %s\n  %-24s %s\n", lhs, "", OPTS[i].help);
        else
            printf("  %-24s %s\n", lhs, OPTS[i].help);
    }
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, PROG ": %s%s%s (see --help)\n", msg, arg ? ": " : "", arg ? arg : "");
    return 2;
}

static int find_opt(const char *a)
{
    for (int i = 0; i < N_OPTS; i++)
        if (!strcmp(a, OPTS[i].flag) || (OPTS[i].alt && !strcmp(a, OPTS[i].alt)))
            return i;
    return -1;
}

int main(int argc, char **argv)
{
    ws_signals_init(PROG);
    const char *in = NULL, *out = NULL;
    ws_convert_opts o = {WS_CONVERT_KEEP, NULL};
    ws_ckpt_format from = WS_CKPT_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int k = find_opt(a);
        if (k < 0) {
            if (a[0] == '-' && a[1])
                return usage_error("unknown option", a);
            if (in)
                return usage_error("more than one input", a);
            in = a;
            continue;
        }
        if (k == O_HELP) {
            help();
            return 0;
        }
        if (k == O_VERSION) {
            printf(PROG " %s\n", WS_VERSION);
            return 0;
        }
        if (i + 1 >= argc)
            return usage_error("missing value after", a);
        const char *v = argv[++i];
        switch (k) {
        case O_OUT: out = v; break;
        case O_NAME: o.name = v; break;
        case O_FROM: {
            int f = ws_ckpt_format_parse(v);
            if (f < 0)
                return usage_error("--from wants auto, safetensors, safetensors-index, ggml "
                                   "or gguf", v);
            from = (ws_ckpt_format)f;
            break;
        }
        case O_TYPE: {
            size_t t = 0, n = sizeof TYPES / sizeof TYPES[0];
            while (t < n && strcmp(TYPES[t].name, v))
                t++;
            if (t == n)
                return usage_error("--type wants keep, f32, f16 or bf16", v);
            o.type = TYPES[t].type;
            break;
        }
        }
    }
    if (!in)
        return usage_error("no input checkpoint", NULL);
    if (!out)
        return usage_error("no output file (-o OUT.gguf)", NULL);

    ws_err err = {{0}};
    ws_ckpt *c = ws_ckpt_open(in, from, &err);
    if (!c || ws_ckpt_convert(c, out, &o, &err)) {
        fprintf(stderr, PROG ": %s\n", err.msg);
        ws_ckpt_close(c);
        return 1;
    }
    ws_ckpt_close(c);
    return 0;
}

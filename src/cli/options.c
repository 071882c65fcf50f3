/* options.c - the command's options: one table (OPTS) drives both the parser and --help
 * (docs/spec.md "Command line"). Tested by tests/test_cli.c. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conv/conv.h"
#include "run.h"

enum {
    OPT_MEL = 256, OPT_N_MELS, OPT_PAD, OPT_NO_PAD, OPT_POS, OPT_DEVICE, OPT_PRECISION,
    OPT_THREADS, OPT_MAX_MEMORY, OPT_JSON, OPT_DUMP_PTX, OPT_CHECK, OPT_VERSION, OPT_LIST,
    OPT_ROOT, OPT_SHARD, OPT_SKIP_EXISTING, OPT_MANIFEST, OPT_OUT_DTYPE, OPT_PROGRESS,
    OPT_TAR_SIZE, OPT_MEL_DEVICE, OPT_KEEP_EXT, OPT_DECODE, OPT_TAR_IN
};

typedef struct {
    const char *lng;
    int id;          /* short option letter or OPT_* */
    int has_arg;
    const char *arg; /* argument name in --help */
    const char *help;
} opt_def;

static const opt_def OPTS[] = {
    {"model", 'm', 1, "FILE", "GGUF weights (default: $WHISPER_STEM_MODEL)"},
    {"output", 'o', 1, "FILE", "output of a single input: .npy, raw float32 otherwise, - for stdout"},
    {"outdir", 'O', 1, "DIR", "one DIR/<input name without extension>.npy per input, each with its .json sidecar "
     "(DIR and its parents created)"},
    {"keep-ext", OPT_KEEP_EXT, 0, NULL, "with -O: name outputs with their input's extension (x.wav -> x.wav.npy)"},
    {"list", OPT_LIST, 1, "FILE",
     "input paths from FILE, one a line of at most 64 KiB (- : stdin; blank and # lines skipped; "
     "a repeated line is done once); or segments, each written to DIR/<id>.npy: "
     "PATH<TAB>START<TAB>DURATION[<TAB>ID] lines (seconds), NeMo manifests or lhotse cut sets "
     "(.jsonl, .jsonl.gz); a bad line fails alone (docs/corpus.md, Segment lists)"},
    {"tar-in", OPT_TAR_IN, 1, "SHARD",
     "the audio members of a tar shard (plain or gzip; repeatable; an input or list line "
     "ending in .tar, .tar.gz or .tgz is one too), in shard order, each written to "
     "DIR/<key>.npy (key: its path up to the first '.' of its name); other members (.json, "
     ".txt, ...) are ignored (docs/corpus.md, Tar shards as inputs)"},
    {"root", OPT_ROOT, 1, "DIR",
     "with -O OUT: OUT/<path under DIR, without extension>.npy (a tree; an input is under DIR "
     "as written, else when a leading directory's real path is DIR's)"},
    {"shard", OPT_SHARD, 1, "I/N",
     "only inputs at list positions I, I+N, I+2N, ... (0-based; default: all); the output "
     "names of the whole list are checked in every task"},
    {"skip-existing", OPT_SKIP_EXISTING, 0, NULL, "skip an input whose output (or tar shard) exists and was made with "
     "these settings (its sidecar or shard index says so)"},
    {"manifest", OPT_MANIFEST, 1, "FILE", "append one JSON line per input as it finishes"},
    {"out-dtype", OPT_OUT_DTYPE, 1, "f32|f16", "element type of the outputs (default f32)"},
    {"tar-size", OPT_TAR_SIZE, 1, "N", "with -O: WebDataset tar shards of N inputs (DIR/shard-NNNNNN.tar, each with "
     "its index DIR/shard-NNNNNN.jsonl; default: none)"},
    {"decode", OPT_DECODE, 1, "default|openai",
     "how audio becomes 16 kHz samples: default (libsndfile, libmpg123, FFmpeg's libraries "
     "for AAC/MP4, WebM, ...; libsoxr) or openai (openai-whisper's load_audio bit for bit: "
     "ffmpeg's decoding and resampling to int16)"},
    {"mel", OPT_MEL, 0, NULL, "write the log-Mel instead of embeddings (needs no model)"},
    {"n-mels", OPT_N_MELS, 1, "80|128", "mel bands for --mel without a model (default 80)"},
    {"pad", OPT_PAD, 1, "audio|mel0", "30 s windowing: pad the audio (default) or the log-Mel"},
    {"no-pad", OPT_NO_PAD, 0, NULL, "no 30 s padding: one window of n_samples/160 frames"},
    {"pos", OPT_POS, 0, NULL, "add the positional embedding (default: the stem's output alone)"},
    {"device", OPT_DEVICE, 1, "auto|cpu|cuda[:N]", "where the conv stem runs (default auto; N: GPU number)"},
    {"mel-device", OPT_MEL_DEVICE, 1, "cpu|cuda",
     "where the log-Mel runs (default: on the GPU when the stem runs there, or with --mel when one is usable)"},
    {"precision", OPT_PRECISION, 1, "fp32|tf32|bf16|fp16", "GPU arithmetic (default fp32)"},
    {"threads", OPT_THREADS, 1, "N", "CPU threads (default: the CPUs this process may use)"},
    {"max-memory", OPT_MAX_MEMORY, 1, "SIZE",
     "bound on the audio data held at once, e.g. 512M, 8G (default: the least of 4G, half "
     "the RAM, half the cgroup memory limit)"},
    {"json", OPT_JSON, 1, "FILE", "write a report: inputs, shapes, device, timings"},
    {"dump-ptx", OPT_DUMP_PTX, 1, "DIR", "write the PTX kernels for the model's shape and exit"},
    {"check", OPT_CHECK, 0, NULL,
     "compare GPU and CPU on random data, per precision, and exit (1: a mismatch; 3: no usable "
     "GPU, skipped)"},
    {"progress", OPT_PROGRESS, 1, "SECONDS", "a progress line every SECONDS (on a terminal: redrawn; default: none)"},
    {"quiet", 'q', 0, NULL, "print errors only"},
    {"verbose", 'v', 0, NULL, "report the model, device and per-input timings on stderr"},
    {"help", 'h', 0, NULL, "show this help"},
    {"version", OPT_VERSION, 0, NULL, "print \"" PROG " VERSION\" and exit"},
};
#define N_OPTS (int)(sizeof OPTS / sizeof *OPTS)

static void usage(FILE *f)
{
    fprintf(f, "usage: " PROG " [options] INPUT...\n"
               "Audio (any format libsndfile reads, - for stdin) to the tensor Whisper's encoder\n"
               "feeds its first transformer block: [n_ctx, d] per 30 s window.\n\noptions:\n");
    for (int i = 0; i < N_OPTS; i++) {
        char left[64];
        int k = 0;
        if (OPTS[i].id < 256)
            k = snprintf(left, sizeof left, "-%c, ", OPTS[i].id);
        else
            k = snprintf(left, sizeof left, "    ");
        snprintf(left + k, sizeof left - (size_t)k, "--%s%s%s", OPTS[i].lng, OPTS[i].arg ? " " : "",
                 OPTS[i].arg ? OPTS[i].arg : "");
        fprintf(f, "  %-34s %s\n", left, OPTS[i].help);
    }
    fprintf(f, "\noptions without an argument are off unless given; those with one have the\n"
               "default in parentheses, or none (unset) when none is shown.\n");
    fprintf(f, "\nexit status: 0 every input written (or skipped), 1 some failed, 2 usage error,\n"
               "3 --check with no usable GPU (nothing compared), 128 + N stopped by signal N\n"
               "(130 SIGINT, 143 SIGTERM)\n");
}

int ws_cli_usage_error(const char *fmt, const char *a)
{
    char msg[WS_ERR_LEN];
    snprintf(msg, sizeof msg, fmt, a);
    ws_eprintf(PROG ": %s (see --help)", msg);
    return 2;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* "512M", "8G", "1048576": bytes, suffixes K M G T in powers of 1024. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    }
    if (*end == 'B' || (*end == 'i' && end[1] == 'B' && shift && (end++, 1)))
        end++;
    if (*end || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, options *o)
{
    struct option lopts[N_OPTS + 1];
    char shorts[64];
    int ns = 0;
    for (int i = 0; i < N_OPTS; i++) {
        lopts[i] = (struct option){OPTS[i].lng, OPTS[i].has_arg ? required_argument : no_argument,
                                   NULL, OPTS[i].id};
        if (OPTS[i].id < 256) {
            shorts[ns++] = (char)OPTS[i].id;
            if (OPTS[i].has_arg)
                shorts[ns++] = ':';
        }
    }
    lopts[N_OPTS] = (struct option){0, 0, 0, 0};
    shorts[ns] = 0;
    memset(o, 0, sizeof *o);
    o->device = WS_DEVICE_AUTO;
    o->mel_device = WS_DEVICE_AUTO;
    o->precision = WS_PREC_FP32;
    o->threads = ws_ncpu();
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shorts, lopts, NULL)) != -1) {
        switch (c) {
        case 'm': o->model_path = optarg; break;
        case 'o': o->output = optarg; break;
        case 'O': o->outdir = optarg; break;
        case 'v': o->verbose = 1; break;
        case 'q': o->quiet = 1; break;
        case OPT_LIST: o->list = optarg; break;
        case OPT_TAR_IN: {
            char **t = realloc(o->tar_in, ((size_t)o->n_tar_in + 1) * sizeof *t);
            if (!t)
                return ws_eprintf(PROG ": out of memory"), 1;
            o->tar_in = t;
            o->tar_in[o->n_tar_in++] = optarg;
            break;
        }
        case OPT_ROOT: o->root = optarg; break;
        case OPT_MANIFEST: o->manifest = optarg; break;
        case OPT_SKIP_EXISTING: o->skip_existing = 1; break;
        case OPT_KEEP_EXT: o->keep_ext = 1; break;
        case OPT_SHARD: {
            char *slash = strchr(optarg, '/');
            char num[32];
            size_t k = slash ? (size_t)(slash - optarg) : 0;
            if (!slash || k >= sizeof num)
                return ws_cli_usage_error("--shard must be I/N with 0 <= I < N, not '%s'", optarg);
            memcpy(num, optarg, k);
            num[k] = 0;
            if (parse_int(num, 0, INT_MAX - 1, &o->shard_i) ||
                parse_int(slash + 1, 1, INT_MAX, &o->shard_n) || o->shard_i >= o->shard_n)
                return ws_cli_usage_error("--shard must be I/N with 0 <= I < N, not '%s'", optarg);
            break;
        }
        case OPT_TAR_SIZE:
            if (parse_int(optarg, 1, INT_MAX, &o->tar_size))
                return ws_cli_usage_error("--tar-size must be a number of inputs from 1, not '%s'", optarg);
            break;
        case OPT_OUT_DTYPE:
            if (strcmp(optarg, "f32") == 0 || strcmp(optarg, "float32") == 0)
                o->out_dtype = WS_OUT_F32;
            else if (strcmp(optarg, "f16") == 0 || strcmp(optarg, "float16") == 0)
                o->out_dtype = WS_OUT_F16;
            else
                return ws_cli_usage_error("--out-dtype must be f32 or f16, not '%s'", optarg);
            break;
        case OPT_PROGRESS: {
            char *end;
            errno = 0;
            o->progress_s = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o->progress_s >= 0.1 && o->progress_s <= 1e6))
                return ws_cli_usage_error("--progress must be a number of seconds from 0.1, not '%s'",
                                   optarg);
            break;
        }
        case 'h': usage(stdout); return 0;
        case OPT_VERSION: printf(PROG " " WS_VERSION "\n"); return 0;
        case OPT_MEL: o->mel_only = 1; break;
        case OPT_N_MELS:
            if (parse_int(optarg, 1, 1024, &o->n_mels) || (o->n_mels != 80 && o->n_mels != 128))
                return ws_cli_usage_error("--n-mels must be 80 or 128, not '%s'", optarg);
            break;
        case OPT_PAD:
            if (strcmp(optarg, "audio") == 0)
                o->pad = WS_PAD_AUDIO;
            else if (strcmp(optarg, "mel0") == 0)
                o->pad = WS_PAD_MEL0;
            else
                return ws_cli_usage_error("--pad must be audio or mel0, not '%s'", optarg);
            if (o->pad_set == 2)
                return ws_cli_usage_error("--pad and --no-pad exclude each other%s", "");
            o->pad_set = 1;
            break;
        case OPT_NO_PAD:
            if (o->pad_set == 1)
                return ws_cli_usage_error("--pad and --no-pad exclude each other%s", "");
            o->pad = WS_PAD_NONE;
            o->pad_set = 2;
            break;
        case OPT_POS: o->pos = 1; break;
        case OPT_DEVICE:
            if (ws_device_parse(optarg, &o->device, &o->gpu_ordinal))
                return ws_cli_usage_error("--device must be auto, cpu, cuda or cuda:N, not '%s'", optarg);
            break;
        case OPT_DECODE:
            if (strcmp(optarg, "default") == 0)
                o->decode = WS_DECODE_DEFAULT;
            else if (strcmp(optarg, "openai") == 0)
                o->decode = WS_DECODE_OPENAI;
            else
                return ws_cli_usage_error("--decode must be default or openai, not '%s'", optarg);
            break;
        case OPT_MEL_DEVICE:
            if (strcmp(optarg, "cpu") == 0)
                o->mel_device = WS_DEVICE_CPU;
            else if (strcmp(optarg, "cuda") == 0)
                o->mel_device = WS_DEVICE_CUDA;
            else
                return ws_cli_usage_error("--mel-device must be cpu or cuda, not '%s'", optarg);
            break;
        case OPT_PRECISION:
            if (ws_precision_parse(optarg, &o->precision))
                return ws_cli_usage_error("--precision must be fp32, tf32, bf16 or fp16, not '%s'", optarg);
            break;
        case OPT_THREADS:
            if (parse_int(optarg, 1, 256, &o->threads))
                return ws_cli_usage_error("--threads must be an integer from 1 to 256, not '%s'", optarg);
            break;
        case OPT_MAX_MEMORY:
            if (parse_size(optarg, &o->max_memory) || o->max_memory < WS_MIN_MEMORY)
                return ws_cli_usage_error("--max-memory must be a size of at least 16M (K, M, G, T: "
                                   "powers of 1024), not '%s'", optarg);
            break;
        case OPT_JSON: o->json = optarg; break;
        case OPT_DUMP_PTX: o->dump_ptx = optarg; break;
        case OPT_CHECK: o->check = 1; break;
        case ':':
        case '?':
        default: {
            const char *bad = argv[optind - 1];
            if (optopt && optopt < 256 && c == '?')
                ws_eprintf(PROG ": unknown or incomplete option '-%c' (see --help)", optopt);
            else
                ws_eprintf(PROG ": unknown or incomplete option '%s' (see --help)", bad);
            return 2;
        }
        }
    }
    o->args = argv + optind;
    o->n_args = argc - optind;
    if (!o->model_path) {
        const char *env = getenv("WHISPER_STEM_MODEL");
        if (env && *env)
            o->model_path = env;
    }
    if (o->check || o->dump_ptx) {
        if (o->n_args || o->list || o->n_tar_in)
            return ws_cli_usage_error("--check and --dump-ptx take no inputs (got '%s')",
                               o->n_args ? o->args[0] : o->list ? o->list : o->tar_in[0]);
        return -1;
    }
    if (o->n_args == 0 && !o->list && !o->n_tar_in)
        return ws_cli_usage_error("no input files%s", "");
    if (!o->output && !o->outdir)
        return ws_cli_usage_error("say where outputs go: -o FILE (one input) or -O DIR%s", "");
    if (o->output && o->outdir)
        return ws_cli_usage_error("-o and -O exclude each other%s", "");
    if (o->root && !o->outdir)
        return ws_cli_usage_error("--root %s needs -O DIR (the tree is mirrored under DIR)", o->root);
    if (o->keep_ext && !o->outdir)
        return ws_cli_usage_error("--keep-ext names the outputs of -O DIR%s", "");
    if (o->tar_size && !o->outdir)
        return ws_cli_usage_error("--tar-size needs -O DIR (the shards are written there)%s", "");
    if (o->output && (o->n_args + o->n_tar_in > 1 || o->list))
        return ws_cli_usage_error("-o takes one input; use -O DIR for several%s", "");
    if (o->list && !strcmp(o->list, "-"))
        for (int i = 0; i < o->n_args; i++)
            if (!strcmp(o->args[i], "-"))
                return ws_cli_usage_error("--list - reads the list from standard input, so '-' cannot "
                                   "also be an audio input%s", "");
    if (!o->mel_only && !o->model_path)
        return ws_cli_usage_error("no model: pass -m FILE or set WHISPER_STEM_MODEL (or use --mel)%s", "");
    return -1;
}

int ws_cli_parse_args(int argc, char **argv, options *o)
{
    const int st = parse_args(argc, argv, o);
    if (st >= 0) { /* no run: nothing else frees it */
        free(o->tar_in);
        o->tar_in = NULL;
        o->n_tar_in = 0;
    }
    return st;
}

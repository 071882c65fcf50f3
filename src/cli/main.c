/* main.c - the whisper-stem command line (SPEC.md "Command line").
 *
 *   whisper-stem [options] INPUT...
 *
 * One table (OPTS) drives both the parser and --help. Per input:
 * decode -> 16 kHz mono -> log-Mel windows -> conv stem (GPU or CPU) ->
 * atomic write. A failing input prints one line and the others go on;
 * exit 0 when every input was written, 1 when some failed, 2 on usage.
 * Validated end to end by tests/test_cli.c.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio.h"
#include "common.h"
#include "conv/conv.h"
#include "whisper/stem.h"
#include "cuda/gpu.h"
#include "mel/mel.h"
#include "whisper/model.h"
#include "output.h"
#include "progress.h"
#include "run.h"
#include "signals.h"
#include "tar.h"
#include "strmap.h"
#include "trace.h"

#define PROG "whisper-stem"

enum {
    OPT_MEL = 256, OPT_N_MELS, OPT_PAD, OPT_NO_PAD, OPT_POS, OPT_DEVICE, OPT_PRECISION,
    OPT_THREADS, OPT_MAX_MEMORY, OPT_JSON, OPT_DUMP_PTX, OPT_CHECK, OPT_VERSION, OPT_LIST,
    OPT_ROOT, OPT_SHARD, OPT_SKIP_EXISTING, OPT_MANIFEST, OPT_OUT_DTYPE, OPT_PROGRESS,
    OPT_TAR_SIZE, OPT_MEL_DEVICE
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
    {"outdir", 'O', 1, "DIR", "one DIR/<input name>.npy per input"},
    {"list", OPT_LIST, 1, "FILE", "input paths from FILE, one a line (- : stdin; blank and # lines skipped)"},
    {"root", OPT_ROOT, 1, "DIR", "with -O: DIR/<path under DIR, without extension>.npy (a tree)"},
    {"shard", OPT_SHARD, 1, "I/N", "only inputs at list positions I, I+N, I+2N, ... (0-based; default: all)"},
    {"skip-existing", OPT_SKIP_EXISTING, 0, NULL, "skip an input whose output already exists"},
    {"manifest", OPT_MANIFEST, 1, "FILE", "append one JSON line per input as it finishes"},
    {"out-dtype", OPT_OUT_DTYPE, 1, "f32|f16", "element type of the outputs (default f32)"},
    {"tar-size", OPT_TAR_SIZE, 1, "N", "with -O: WebDataset tar shards of N inputs (DIR/shard-NNNNNN.tar; default: none)"},
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
     "bound on the audio data held at once, e.g. 512M, 8G (default: 4G or half the RAM)"},
    {"json", OPT_JSON, 1, "FILE", "write a report: inputs, shapes, device, timings"},
    {"dump-ptx", OPT_DUMP_PTX, 1, "DIR", "write the PTX kernels for the model's shape and exit"},
    {"check", OPT_CHECK, 0, NULL, "compare GPU and CPU on random data, per precision, and exit"},
    {"progress", OPT_PROGRESS, 1, "SECONDS", "a progress line every SECONDS (on a terminal: redrawn; default: none)"},
    {"quiet", 'q', 0, NULL, "print errors only"},
    {"verbose", 'v', 0, NULL, "report the model, device and per-input timings on stderr"},
    {"help", 'h', 0, NULL, "show this help"},
    {"version", OPT_VERSION, 0, NULL, "print \"" PROG " VERSION\" and exit"},
};
#define N_OPTS (int)(sizeof OPTS / sizeof *OPTS)

typedef enum { DEV_AUTO, DEV_CPU, DEV_CUDA } device_choice;

typedef struct {
    const char *model_path, *output, *outdir, *json, *dump_ptx;
    const char *list, *root, *manifest;
    int mel_only, n_mels, pos, threads, check, verbose, quiet, skip_existing;
    int shard_i, shard_n; /* shard_n 0: no --shard */
    int tar_size;         /* 0: files, not tar shards */
    double progress_s;    /* 0: no --progress */
    size_t max_memory;
    ws_pad pad;
    int pad_set;
    device_choice device;
    device_choice mel_device; /* DEV_AUTO: where the stem runs */
    int gpu_ordinal;
    ws_precision precision;
    ws_out_dtype out_dtype;
    char **args;          /* the positional inputs */
    int n_args;
    char **inputs;        /* positional, then --list, after --shard (malloc'd strings) */
    int n_inputs;
} options;

/* GPU batches: a slot holds at most 16 windows and 48 MiB of results (6 windows of
 * large-v3), fewer when the pinned buffers of its
 * results and inputs (3 slots) would pass a quarter of the memory bound; the staging
 * slabs (2 MiB, one per input of up to 30 s) enough for every input in flight, at most
 * another quarter. Pinned host memory thus stays under half of --max-memory, on
 * top of the bound on the inputs in flight. */
static void batch_size(ws_gpu_batch_opts *bo, int d, size_t max_memory, int threads)
{
    const size_t esz = bo->out_f16 ? 2 : 4;
    const size_t out = bo->stem ? (size_t)1500 * d * esz : (size_t)bo->n_mels * WS_CHUNK_FRAMES * esz;
    const size_t in = bo->mel_on_gpu ? (size_t)WS_CHUNK_SAMPLES * 4 : (size_t)bo->n_mels * WS_CHUNK_FRAMES * 4;
    size_t w = max_memory / 4 / (size_t)bo->slots / (out + in);
    if (w > ((size_t)48 << 20) / out) /* pinning the results' buffers is start-up time */
        w = ((size_t)48 << 20) / out;
    bo->max_windows = w < 1 ? 1 : w > 16 ? 16 : (int)w;
    /* one slab for each input that may be in flight (run.c: the slots, the next batch and
     * one an input being prepared per worker) */
    const size_t slabs = ((size_t)(bo->slots + 1) * bo->max_windows + (size_t)threads) *
                         ((size_t)2 << 20);
    bo->stage_bytes = slabs < max_memory / 4 ? slabs : max_memory / 4;
}

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
               "128 + N stopped by signal N (130 SIGINT, 143 SIGTERM)\n");
}

static int usage_error(const char *fmt, const char *a)
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
    o->device = DEV_AUTO;
    o->mel_device = DEV_AUTO;
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
        case OPT_ROOT: o->root = optarg; break;
        case OPT_MANIFEST: o->manifest = optarg; break;
        case OPT_SKIP_EXISTING: o->skip_existing = 1; break;
        case OPT_SHARD: {
            char *slash = strchr(optarg, '/');
            char num[32];
            size_t k = slash ? (size_t)(slash - optarg) : 0;
            if (!slash || k >= sizeof num)
                return usage_error("--shard must be I/N with 0 <= I < N, not '%s'", optarg);
            memcpy(num, optarg, k);
            num[k] = 0;
            if (parse_int(num, 0, INT_MAX - 1, &o->shard_i) ||
                parse_int(slash + 1, 1, INT_MAX, &o->shard_n) || o->shard_i >= o->shard_n)
                return usage_error("--shard must be I/N with 0 <= I < N, not '%s'", optarg);
            break;
        }
        case OPT_TAR_SIZE:
            if (parse_int(optarg, 1, INT_MAX, &o->tar_size))
                return usage_error("--tar-size must be a number of inputs from 1, not '%s'", optarg);
            break;
        case OPT_OUT_DTYPE:
            if (strcmp(optarg, "f32") == 0 || strcmp(optarg, "float32") == 0)
                o->out_dtype = WS_OUT_F32;
            else if (strcmp(optarg, "f16") == 0 || strcmp(optarg, "float16") == 0)
                o->out_dtype = WS_OUT_F16;
            else
                return usage_error("--out-dtype must be f32 or f16, not '%s'", optarg);
            break;
        case OPT_PROGRESS: {
            char *end;
            errno = 0;
            o->progress_s = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o->progress_s >= 0.1 && o->progress_s <= 1e6))
                return usage_error("--progress must be a number of seconds from 0.1, not '%s'",
                                   optarg);
            break;
        }
        case 'h': usage(stdout); return 0;
        case OPT_VERSION: printf(PROG " " WS_VERSION "\n"); return 0;
        case OPT_MEL: o->mel_only = 1; break;
        case OPT_N_MELS:
            if (parse_int(optarg, 1, 1024, &o->n_mels) || (o->n_mels != 80 && o->n_mels != 128))
                return usage_error("--n-mels must be 80 or 128, not '%s'", optarg);
            break;
        case OPT_PAD:
            if (strcmp(optarg, "audio") == 0)
                o->pad = WS_PAD_AUDIO;
            else if (strcmp(optarg, "mel0") == 0)
                o->pad = WS_PAD_MEL0;
            else
                return usage_error("--pad must be audio or mel0, not '%s'", optarg);
            if (o->pad_set == 2)
                return usage_error("--pad and --no-pad exclude each other%s", "");
            o->pad_set = 1;
            break;
        case OPT_NO_PAD:
            if (o->pad_set == 1)
                return usage_error("--pad and --no-pad exclude each other%s", "");
            o->pad = WS_PAD_NONE;
            o->pad_set = 2;
            break;
        case OPT_POS: o->pos = 1; break;
        case OPT_DEVICE:
            if (strcmp(optarg, "auto") == 0)
                o->device = DEV_AUTO;
            else if (strcmp(optarg, "cpu") == 0)
                o->device = DEV_CPU;
            else if (strcmp(optarg, "cuda") == 0)
                o->device = DEV_CUDA;
            else if (strncmp(optarg, "cuda:", 5) == 0 && !parse_int(optarg + 5, 0, 1023, &o->gpu_ordinal))
                o->device = DEV_CUDA;
            else
                return usage_error("--device must be auto, cpu, cuda or cuda:N, not '%s'", optarg);
            break;
        case OPT_MEL_DEVICE:
            if (strcmp(optarg, "cpu") == 0)
                o->mel_device = DEV_CPU;
            else if (strcmp(optarg, "cuda") == 0)
                o->mel_device = DEV_CUDA;
            else
                return usage_error("--mel-device must be cpu or cuda, not '%s'", optarg);
            break;
        case OPT_PRECISION:
            if (ws_precision_parse(optarg, &o->precision))
                return usage_error("--precision must be fp32, tf32, bf16 or fp16, not '%s'", optarg);
            break;
        case OPT_THREADS:
            if (parse_int(optarg, 1, 256, &o->threads))
                return usage_error("--threads must be an integer from 1 to 256, not '%s'", optarg);
            break;
        case OPT_MAX_MEMORY:
            if (parse_size(optarg, &o->max_memory) || o->max_memory < WS_MIN_MEMORY)
                return usage_error("--max-memory must be a size of at least 16M (K, M, G, T: "
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
        if (o->n_args || o->list)
            return usage_error("--check and --dump-ptx take no inputs (got '%s')",
                               o->n_args ? o->args[0] : o->list);
        return -1;
    }
    if (o->n_args == 0 && !o->list)
        return usage_error("no input files%s", "");
    if (!o->output && !o->outdir)
        return usage_error("say where outputs go: -o FILE (one input) or -O DIR%s", "");
    if (o->output && o->outdir)
        return usage_error("-o and -O exclude each other%s", "");
    if (o->root && !o->outdir)
        return usage_error("--root %s needs -O DIR (the tree is mirrored under DIR)", o->root);
    if (o->tar_size && !o->outdir)
        return usage_error("--tar-size needs -O DIR (the shards are written there)%s", "");
    if (o->output && (o->n_args > 1 || o->list))
        return usage_error("-o takes one input; use -O DIR for several%s", "");
    if (o->list && !strcmp(o->list, "-"))
        for (int i = 0; i < o->n_args; i++)
            if (!strcmp(o->args[i], "-"))
                return usage_error("--list - reads the list from standard input, so '-' cannot "
                                   "also be an audio input%s", "");
    if (!o->mel_only && !o->model_path)
        return usage_error("no model: pass -m FILE or set WHISPER_STEM_MODEL (or use --mel)%s", "");
    return -1;
}

/* Appends path (copied) to o->inputs when its list position is in this shard. */
static int add_input(options *o, long long *pos, size_t *cap, const char *path, size_t len)
{
    const long long p = (*pos)++;
    if (o->shard_n && p % o->shard_n != o->shard_i)
        return 0;
    if (o->n_inputs == INT_MAX - 1)
        return ws_eprintf(PROG ": more than %d inputs", INT_MAX - 1), -1;
    if ((size_t)o->n_inputs == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        char **t = realloc(o->inputs, nc * sizeof *t);
        if (!t)
            return ws_eprintf(PROG ": out of memory for the input list"), -1;
        o->inputs = t;
        *cap = nc;
    }
    char *s = malloc(len + 1);
    if (!s)
        return ws_eprintf(PROG ": out of memory for the input list"), -1;
    memcpy(s, path, len);
    s[len] = 0;
    o->inputs[o->n_inputs++] = s;
    return 0;
}

/* The inputs: the positional ones, then --list's lines (blank lines and lines starting
 * with '#' skipped, a trailing CR dropped); --shard keeps every shard_n-th. 0, or the exit
 * status. */
static int gather_inputs(options *o)
{
    long long pos = 0;
    size_t cap = 0;
    for (int i = 0; i < o->n_args; i++)
        if (add_input(o, &pos, &cap, o->args[i], strlen(o->args[i])))
            return 1;
    if (o->list) {
        FILE *f = strcmp(o->list, "-") ? fopen(o->list, "r") : stdin;
        if (!f) {
            ws_eprintf(PROG ": --list %s: %s", o->list, strerror(errno));
            return 1;
        }
        char *line = NULL;
        size_t lcap = 0;
        ssize_t n;
        long long lineno = 0;
        int rc = 0;
        while (!rc && (n = getline(&line, &lcap, f)) >= 0) {
            lineno++;
            size_t len = (size_t)n;
            if (len && line[len - 1] == '\n')
                len--;
            if (len && line[len - 1] == '\r')
                len--;
            if (len == 0 || line[0] == '#')
                continue;
            if (memchr(line, 0, len)) {
                ws_eprintf(PROG ": --list %s: line %lld holds a NUL byte", o->list, lineno);
                rc = 2;
                break;
            }
            if (f == stdin && len == 1 && line[0] == '-') {
                ws_eprintf(PROG ": --list -: line %lld is '-', but standard input is the list",
                           lineno);
                rc = 2;
                break;
            }
            if (add_input(o, &pos, &cap, line, len))
                rc = 1;
        }
        if (!rc && ferror(f)) {
            ws_eprintf(PROG ": --list %s: %s", o->list, strerror(errno));
            rc = 1;
        }
        free(line);
        if (f != stdin)
            fclose(f);
        if (rc)
            return rc;
    }
    return 0; /* an empty list (or shard) is a run with nothing to do */
}

/* path made absolute (the working directory in front) and normalised as text: "." and
 * empty components dropped, ".." takes one back (never above "/"); symbolic links are
 * not followed, so a tree of links mirrors as it is named. 0, or -1 if it does not fit. */
static int norm_path(const char *path, char *out, size_t cap)
{
    char buf[8192];
    if (path[0] == '/') {
        if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
            return -1;
    } else {
        /* the working directory as the shell names it ($PWD, through symbolic links) when
         * it is the same directory, as `pwd -L`: /data -> /mnt/data must not make inputs
         * named /data/... fall outside a relative --root */
        char cwd[4096];
        const char *pwd = getenv("PWD");
        struct stat a, b;
        if (pwd && pwd[0] == '/' && strlen(pwd) < sizeof cwd && stat(pwd, &a) == 0 &&
            stat(".", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            strcpy(cwd, pwd);
        else if (!getcwd(cwd, sizeof cwd))
            return -1;
        if (snprintf(buf, sizeof buf, "%s/%s", cwd, path) >= (int)sizeof buf)
            return -1;
    }
    size_t n = 0;
    out[0] = 0;
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
            out[n] = 0;
            continue;
        }
        size_t k = strlen(c);
        if (n + 1 + k + 1 > cap)
            return -1;
        out[n++] = '/';
        memcpy(out + n, c, k + 1);
        n += k;
    }
    if (n == 0) {
        if (cap < 2)
            return -1;
        strcpy(out, "/");
    }
    return 0;
}

/* --tar-size: each input's member key (its output name under -O without ".npy", made
 * safe for webdataset by ws_tar_key) and, in place of that name, its shard's path:
 * OUT/shard-NNNNNN.tar, numbered k * N + I for the k-th shard of --shard I/N (so shards of
 * different --shard runs never share a name). 0, or the exit status. */
static int tar_names(const options *o, char **outs, char ***members, char ***shard_paths,
                     const char **whys)
{
    const int n = o->n_inputs, per = o->tar_size, n_sh = (n + per - 1) / per;
    const size_t dl = strlen(o->outdir);
    *members = calloc((size_t)n, sizeof **members);
    *shard_paths = calloc((size_t)n_sh, sizeof **shard_paths);
    if (!*members || !*shard_paths)
        return ws_eprintf(PROG ": out of memory"), 1;
    for (int k = 0; k < n_sh; k++) {
        const long long num = (long long)k * (o->shard_n ? o->shard_n : 1) + o->shard_i;
        size_t cap = dl + 32;
        if (!((*shard_paths)[k] = malloc(cap)))
            return ws_eprintf(PROG ": out of memory"), 1;
        snprintf((*shard_paths)[k], cap, "%s/shard-%06lld.tar", o->outdir, num);
    }
    for (int i = 0; i < n; i++) {
        if (!outs[i]) /* outside --root: fails, no member */
            continue;
        /* outs[i] is OUT/<rel>.npy */
        const char *rel = outs[i] + dl + 1;
        const size_t rl = strlen(rel) - 4, cap = 3 * rl + 1;
        char *r = malloc(rl + 1), *key = malloc(cap);
        if (!r || !key) {
            free(r);
            free(key);
            return ws_eprintf(PROG ": out of memory"), 1;
        }
        memcpy(r, rel, rl);
        r[rl] = 0;
        int bad = ws_tar_key(r, key, cap) != 0 || strlen(key) + 5 > WS_TAR_NAME_MAX;
        free(r);
        free(outs[i]);
        outs[i] = NULL;
        if (bad) { /* that input fails alone */
            free(key);
            whys[i] = "no tar member name for it (empty, '.' or '..' parts, or longer than "
                      "4090 bytes once '.' and '%' are escaped)";
            continue;
        }
        (*members)[i] = key;
        if (!(outs[i] = strdup((*shard_paths)[i / per])))
            return ws_eprintf(PROG ": out of memory"), 1;
    }
    return 0;
}

/* -O OUT --root ROOT: OUT/<input's path under ROOT, extension dropped>.npy, or NULL
 * (malloc'd) when the input is not under ROOT (that input then fails). *oom on failure. */
static char *tree_path(const char *outdir, const char *root_norm, const char *input, int *oom,
                       const char **why)
{
    char in[8192];
    *why = "standard input has no path under --root";
    if (!strcmp(input, "-"))
        return NULL;
    *why = "the path is too long to place under --root";
    if (norm_path(input, in, sizeof in))
        return NULL;
    *why = NULL; /* not under the root: the caller's message */
    size_t rl = strlen(root_norm);
    const char *rel;
    if (!strcmp(root_norm, "/"))
        rel = in + 1;
    else if (!strncmp(in, root_norm, rl) && in[rl] == '/')
        rel = in + rl + 1;
    else
        return NULL;
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    const char *dot = strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - rel) : strlen(rel);
    size_t cap = strlen(outdir) + len + 8;
    char *out = malloc(cap);
    if (!out) {
        *oom = 1;
        return NULL;
    }
    snprintf(out, cap, "%s/%.*s.npy", outdir, (int)len, rel);
    return out;
}

/* "DIR/<basename without extension>.npy"; "-" is named "stdin". */
static void outdir_path(const char *dir, const char *input, char *buf, size_t cap)
{
    const char *base = strcmp(input, "-") == 0 ? "stdin" : input;
    const char *slash = strrchr(base, '/');
    if (slash)
        base = slash + 1;
    const char *dot = strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(buf, cap, "%s/%.*s.npy", dir, len, base);
}

/* The file a path names, as a key for identity checks: "i<dev>:<ino>" for
 * an existing regular file (symlinks followed), "d<dev>:<ino>/<name>" for a
 * name in an existing directory, else "p" and the path as written. Two
 * spellings of one file (./a.npy, a.npy, a hard link) get the same key. */
static void file_key(const char *path, char *key, size_t cap)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(key, cap, "i%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
        return;
    }
    const char *slash = strrchr(path, '/');
    char dir[4096];
    ws_dirname(path, dir, sizeof dir);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(key, cap, "d%ju:%ju/%s", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                 slash ? slash + 1 : path);
    else
        snprintf(key, cap, "p%s", path);
}

/* Output names, checked before anything runs: no two inputs write one file
 * (-O flattens directories), no output is an input, --json is none of them.
 * Near-linear in the number of inputs (hash maps). Returns -1 to go on, else
 * the exit status (2: usage error). */
static int check_outputs(const options *o, char *const *outs, int clash)
{
    int rc = -1;
    char key[8192];
    ws_strmap *names = ws_strmap_new(), *ins = ws_strmap_new(), *outk = ws_strmap_new();
    if (!names || !ins || !outk) {
        ws_eprintf(PROG ": out of memory");
        rc = 1;
        goto done;
    }
    for (int i = 0; i < o->n_inputs && rc < 0; i++) {
        size_t prev;
        if (clash && o->outdir && outs[i] &&
            ws_strmap_put(names, outs[i], strlen(outs[i]), (size_t)i, &prev) == 1) {
            ws_eprintf(PROG ": inputs '%s' and '%s' would both write %s", o->inputs[prev],
                       o->inputs[i], outs[i]);
            rc = 2;
        }
        struct stat st;
        if (strcmp(o->inputs[i], "-") && stat(o->inputs[i], &st) == 0 && S_ISREG(st.st_mode)) {
            file_key(o->inputs[i], key, sizeof key);
            if (ws_strmap_put(ins, key, strlen(key), (size_t)i, NULL) < 0)
                rc = 1;
        }
    }
    for (int i = 0; i < o->n_inputs && rc < 0; i++) {
        size_t at;
        if (!outs[i] || !strcmp(outs[i], "-"))
            continue;
        file_key(outs[i], key, sizeof key);
        if (ws_strmap_get(ins, key, strlen(key), &at)) {
            ws_eprintf(PROG ": the output %s is the input '%s'; refusing to overwrite an input",
                       outs[i], o->inputs[at]);
            rc = 2;
        } else if ((o->json || o->manifest) &&
                   ws_strmap_put(outk, key, strlen(key), (size_t)i, NULL) < 0) {
            rc = 1;
        }
    }
    const char *extra[2][2] = {{"--json", o->json}, {"--manifest", o->manifest}};
    for (int e = 0; e < 2 && rc < 0; e++) {
        size_t at;
        if (!extra[e][1])
            continue;
        file_key(extra[e][1], key, sizeof key);
        if (ws_strmap_get(ins, key, strlen(key), &at)) {
            ws_eprintf(PROG ": %s %s is the input '%s'; refusing to overwrite an input",
                       extra[e][0], extra[e][1], o->inputs[at]);
            rc = 2;
        } else if (ws_strmap_get(outk, key, strlen(key), &at)) {
            ws_eprintf(PROG ": %s %s is also the output of '%s'", extra[e][0], extra[e][1],
                       o->inputs[at]);
            rc = 2;
        }
    }
    if (o->json && o->manifest && rc < 0) {
        char k2[8192];
        file_key(o->json, key, sizeof key);
        file_key(o->manifest, k2, sizeof k2);
        if (!strcmp(key, k2)) {
            ws_eprintf(PROG ": --json and --manifest name one file, %s", o->json);
            rc = 2;
        }
    }
done:
    ws_strmap_free(names);
    ws_strmap_free(ins);
    ws_strmap_free(outk);
    return rc;
}

/* --json's per-input object: the manifest line (run.h), "ok", and the stage timings. */
static void report_job(cJSON *inputs, const ws_run_ctx *c, const ws_job *j)
{
    cJSON *o = ws_job_json(c, j);
    if (!o)
        return;
    cJSON_AddBoolToObject(o, "ok", j->ok);
    cJSON *t = cJSON_AddObjectToObject(o, "timings_ms");
    cJSON_AddNumberToObject(t, "decode", j->ms.decode);
    cJSON_AddNumberToObject(t, "mel", j->ms.mel);
    cJSON_AddNumberToObject(t, "stem", j->ms.stem);
    cJSON_AddNumberToObject(t, "write", j->ms.write);
    cJSON_AddNumberToObject(t, "stage", j->ms.stage);
    cJSON_AddItemToArray(inputs, o);
}

/* --check: GPU vs CPU on random log-Mel-like input for the model's shape. */
static int run_check(const options *o, ws_model *m)
{
    static const double bound[] = {1e-5, 2e-3, 1e-2, 1e-2}; /* SPEC.md rel L2, by precision */
    const int n_win = 2, T = WS_CHUNK_FRAMES, t_out = ws_stem_out_len(T);
    ws_err err;
    ws_stem *cpu = ws_stem_new_cpu(m, o->threads, &err);
    if (!cpu) {
        ws_eprintf(PROG ": --check: %s", err.msg);
        return 1;
    }
    size_t nmel = (size_t)n_win * m->n_mels * T, nout = (size_t)n_win * t_out * m->d;
    float *mel = malloc(nmel * sizeof *mel), *ref = malloc(nout * sizeof *ref),
          *got = malloc(nout * sizeof *got);
    if (!mel || !ref || !got) {
        ws_eprintf(PROG ": --check: out of memory for %d windows of the model's shape", n_win);
        free(mel);
        free(ref);
        free(got);
        ws_stem_free(cpu);
        return 1;
    }
    ws_rng rng = {12345};
    for (size_t i = 0; i < nmel; i++)
        mel[i] = (float)(ws_rng_uniform(&rng) * 3.0 - 1.5);
    if (ws_stem_run(cpu, mel, n_win, T, 0, ref, &err)) {
        ws_eprintf(PROG ": --check: the CPU reference failed: %s", err.msg);
        free(mel);
        free(ref);
        free(got);
        ws_stem_free(cpu);
        return 1;
    }
    printf("model %s: n_mels %d, d %d; %d windows of %d frames; CPU reference (%s)\n",
           *m->name ? m->name : "(unnamed)", m->n_mels, m->d, n_win, T, ws_blas_name());
    int failed = 0;
    for (int p = WS_PREC_FP32; p <= WS_PREC_FP16; p++) {
        ws_stem *g = ws_stem_new_gpu(m, (ws_precision)p, o->gpu_ordinal, &err);
        if (!g) {
            printf("%-5s FAIL  %s\n", ws_precision_name((ws_precision)p), err.msg);
            failed = 1;
            continue;
        }
        if (p == WS_PREC_FP32)
            printf("device: %s\n", ws_gpu_device_name(ws_stem_gpu(g)));
        for (size_t i = 0; i < nout; i++)
            got[i] = NAN;
        if (ws_stem_run(g, mel, n_win, T, 0, got, &err)) {
            printf("%-5s FAIL  %s\n", ws_precision_name((ws_precision)p), err.msg);
            failed = 1;
        } else {
            double num = 0, den = 0, mx = 0;
            for (size_t i = 0; i < nout; i++) {
                double e = (double)got[i] - ref[i];
                num += e * e;
                den += (double)ref[i] * ref[i];
                if (!(fabs(e) <= mx))
                    mx = fabs(e);
            }
            double rl2 = sqrt(num / den);
            int ok = rl2 <= bound[p] && !isnan(rl2) && !isnan(mx);
            printf("%-5s %s  rel-L2 %.2e (bound %.0e)  max|err| %.2e\n",
                   ws_precision_name((ws_precision)p), ok ? "pass" : "FAIL", rl2, bound[p], mx);
            failed |= !ok;
        }
        ws_stem_free(g);
    }
    free(mel);
    free(ref);
    free(got);
    ws_stem_free(cpu);
    return failed;
}

static int write_json(const char *path, cJSON *root)
{
    char *text = cJSON_Print(root);
    ws_err err;
    int rc = 0;
    if (!text || ws_write_file_atomic(path, text, strlen(text), &err)) {
        ws_eprintf(PROG ": --json: %s", text ? err.msg : "out of memory");
        rc = -1;
    }
    free(text);
    return rc;
}

int main(int argc, char **argv)
{
    ws_signals_init(PROG);
    const double t_start = ws_now();
    options o;
    int st = parse_args(argc, argv, &o);
    if (st >= 0)
        return st;
    ws_err err = {{0}};
    ws_model model = {0};
    int have_model = 0, status = 0, probe_n_mels = 0, probe_d = 0;
    ws_run_ctx r = {0};
    r.manifest_fd = -1;
    ws_mel *mel = NULL;
    ws_job *jobs = NULL;
    char **outs = NULL, **members = NULL, **shard_paths = NULL, *not_under = NULL;
    const char **whys = NULL;
    cJSON *root = NULL;

    if (!o.check && !o.dump_ptx) {
        if ((status = gather_inputs(&o)) != 0 || o.n_inputs == 0)
            goto out;
    }
    if (o.n_inputs) { /* output names first: a usage error costs no model load */
        char root_norm[8192];
        if (o.root && norm_path(o.root, root_norm, sizeof root_norm)) {
            ws_eprintf(PROG ": --root %s: path too long", o.root);
            status = 2;
            goto out;
        }
        outs = calloc((size_t)o.n_inputs, sizeof *outs);
        whys = calloc((size_t)o.n_inputs, sizeof *whys);
        if (o.root) {
            size_t cap = strlen(o.root) + 32;
            if ((not_under = malloc(cap)))
                snprintf(not_under, cap, "not under --root %s", o.root);
        }
        int oom = !outs || !whys || (o.root && !not_under);
        for (int i = 0; !oom && i < o.n_inputs; i++) {
            if (o.root) { /* NULL: not under the root, that input fails */
                outs[i] = tree_path(o.outdir, root_norm, o.inputs[i], &oom, &whys[i]);
                if (!outs[i] && !whys[i])
                    whys[i] = not_under;
                continue;
            }
            size_t cap = (o.outdir ? strlen(o.outdir) : 0) + strlen(o.inputs[i]) + 16;
            if (!(outs[i] = malloc(o.output ? strlen(o.output) + 1 : cap))) {
                oom = 1;
                break;
            }
            if (o.outdir)
                outdir_path(o.outdir, o.inputs[i], outs[i], cap);
            else
                strcpy(outs[i], o.output);
        }
        if (oom) {
            ws_eprintf(PROG ": out of memory for %d output names", o.n_inputs);
            status = 1;
            goto out;
        }
        if ((st = check_outputs(&o, outs, 1)) >= 0) {
            status = st;
            goto out;
        }
        if (o.tar_size) {
            if ((status = tar_names(&o, outs, &members, &shard_paths, whys)) != 0)
                goto out;
            if ((st = check_outputs(&o, outs, 0)) >= 0) { /* the shards' paths */
                status = st;
                goto out;
            }
        }
    }

    double t0 = ws_now();
    if (o.model_path && o.mel_only && !o.check && !o.dump_ptx) { /* the model says how many mel bands; no weights needed */
        if (ws_model_probe(o.model_path, &probe_n_mels, &probe_d, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
    } else if (o.model_path) {
        if (ws_model_load(&model, o.model_path, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
        have_model = 1;
    } else if (o.check || o.dump_ptx) { /* no model: Whisper tiny's shape with random weights */
        if (ws_model_init_random(&model, o.n_mels ? o.n_mels : 80, 384, 1, 0, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
        have_model = 1;
    }
    const double model_ms = 1e3 * (ws_now() - t0);
    if (have_model && o.verbose)
        ws_eprintf(PROG ": model %s: '%s', n_mels %d, d %d, conv1 %s, conv2 %s, %s",
                o.model_path ? o.model_path : "(random)", model.name, model.n_mels, model.d,
                ws_tensor_type_name(model.conv1_type), ws_tensor_type_name(model.conv2_type),
                model.pos ? "positional embedding in file" : "sinusoids for --pos");

    if (o.dump_ptx) {
        if (mkdir(o.dump_ptx, 0755) && errno != EEXIST) {
            ws_eprintf(PROG ": --dump-ptx %s: cannot create the directory: %s", o.dump_ptx,
                    strerror(errno));
            status = 1;
            goto out;
        }
        ws_conv_desc pair[2];
        ws_stem_descs(model.n_mels, model.d, o.precision, pair);
        if (ws_gpu_dump_ptx(pair, o.dump_ptx, &err)) {
            ws_eprintf(PROG ": --dump-ptx: %s", err.msg);
            status = 1;
        }
        goto out;
    }
    if (o.check) {
        status = run_check(&o, &model);
        goto out;
    }

    const int model_n_mels = have_model ? model.n_mels : probe_n_mels;
    int n_mels = model_n_mels ? model_n_mels : (o.n_mels ? o.n_mels : 80);
    if (model_n_mels && o.n_mels && o.n_mels != model_n_mels) {
        ws_eprintf(PROG ": --n-mels %d, but the model takes %d mel bands", o.n_mels, model_n_mels);
        status = 2;
        goto out;
    }
    if (o.outdir) {
        if (mkdir(o.outdir, 0755) && errno != EEXIST) {
            ws_eprintf(PROG ": -O %s: cannot create the directory: %s", o.outdir, strerror(errno));
            status = 1;
            goto out;
        }
    }

    t0 = ws_now();
    const char *device_used = "cpu";
    if (o.mel_device == DEV_CUDA && o.device == DEV_CPU) {
        ws_eprintf(PROG ": --mel-device cuda and --device cpu exclude each other");
        status = 2;
        goto out;
    }
    if (o.mel_only && o.device == DEV_CUDA && o.mel_device == DEV_CPU) {
        /* the log-Mel runs on the CPU; still, the user asked for CUDA */
        char name[160];
        if (ws_gpu_probe(o.gpu_ordinal, name, sizeof name, &err)) {
            ws_eprintf(PROG ": --device cuda: %s", err.msg);
            status = 1;
            goto out;
        }
        if (o.verbose)
            ws_eprintf(PROG ": GPU %s present; --mel computes on the CPU", name);
    }
    if (!o.mel_only) {
        if (o.device != DEV_CPU) {
            r.stem = ws_stem_new_gpu(&model, o.precision, o.gpu_ordinal, &err);
            r.on_gpu = r.stem != NULL;
            if (r.on_gpu) {
                device_used = "cuda";
            } else if (o.device == DEV_CUDA) {
                ws_eprintf(PROG ": --device cuda: %s", err.msg);
                status = 1;
                goto out;
            } else if (!o.quiet) {
                ws_eprintf(PROG ": no usable GPU (%s); running on the CPU", err.msg);
            }
        }
        if (!r.on_gpu) {
            if (o.precision != WS_PREC_FP32 && !o.quiet)
                ws_eprintf(PROG ": --precision %s applies to the GPU; the CPU computes in fp32",
                        ws_precision_name(o.precision));
            if (!(r.stem = ws_stem_new_cpu(&model, o.threads, &err))) {
                ws_eprintf(PROG ": %s", err.msg);
                status = 1;
                goto out;
            }
        }
        r.model = &model;
    }
    if (!(mel = ws_mel_new(n_mels, o.threads, &err))) {
        ws_eprintf(PROG ": %s", err.msg);
        status = 1;
        goto out;
    }
    r.max_memory = o.max_memory ? o.max_memory : ws_default_max_memory();
    if (r.on_gpu || (o.mel_only && o.device != DEV_CPU && o.mel_device != DEV_CPU)) {
        /* the GPU path: inputs in batches of many, the log-Mel there too unless told */
        const int mel_gpu = o.mel_device != DEV_CPU;
        ws_gpu_batch_opts bo = {.mel_on_gpu = mel_gpu, .stem = r.on_gpu, .add_pos = o.pos,
                                .out_f16 = o.out_dtype == WS_OUT_F16, .n_mels = n_mels,
                                .filters = ws_mel_filters(mel), .slots = 3};
        batch_size(&bo, r.on_gpu ? model.d : 0, r.max_memory, o.threads);
        if (o.pos && r.on_gpu && ws_stem_gpu_prepare_add(r.stem, WS_CHUNK_FRAMES, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
        r.batcher = ws_gpu_batcher_new(r.on_gpu ? ws_stem_gpu(r.stem) : NULL, o.gpu_ordinal, &bo,
                                       &err);
        if (r.on_gpu) /* inputs too long for a batch get the bits they would get in one */
            ws_gpu_set_fixed(ws_stem_gpu(r.stem), 1);
        if (!r.batcher && (r.on_gpu || o.device == DEV_CUDA || o.mel_device == DEV_CUDA)) {
            ws_eprintf(PROG ": --device cuda: %s", err.msg);
            status = 1;
            goto out;
        }
        if (r.batcher) {
            r.mel_on_gpu = mel_gpu;
            device_used = "cuda";
        }
    } else if (o.mel_device == DEV_CUDA) {
        ws_eprintf(PROG ": --mel-device cuda needs a GPU for the stem (--device cuda)");
        status = 1;
        goto out;
    }
    const char *device_name = r.batcher ? ws_gpu_batcher_device(r.batcher) : "cpu";
    const double init_ms = 1e3 * (ws_now() - t0);
    if (o.verbose)
        ws_eprintf(PROG ": device %s%s%s, %d threads, sgemm %s", device_used,
                r.batcher ? ": " : "", r.batcher ? device_name : "",
                o.threads, ws_blas_name());

    if (o.json) {
        root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "version", WS_VERSION);
        cJSON_AddStringToObject(root, "output_kind", o.mel_only ? "log_mel" : "embeddings");
        cJSON_AddStringToObject(root, "device", device_used);
        cJSON_AddStringToObject(root, "device_name",
                                device_name);
        cJSON_AddStringToObject(root, "mel_device", r.mel_on_gpu ? "cuda" : "cpu");
        if (r.batcher)
            cJSON_AddNumberToObject(root, "batch_windows", ws_gpu_batch_max_windows(r.batcher));
        cJSON_AddStringToObject(root, "precision", r.on_gpu ? ws_precision_name(o.precision) : "fp32");
        cJSON_AddNumberToObject(root, "threads", o.threads);
        cJSON_AddStringToObject(root, "sgemm", ws_blas_name());
        cJSON_AddStringToObject(root, "pad", o.pad == WS_PAD_AUDIO ? "audio" : o.pad == WS_PAD_MEL0 ? "mel0" : "none");
        cJSON_AddBoolToObject(root, "pos", o.pos);
        cJSON_AddNumberToObject(root, "n_mels", n_mels);
        if (have_model) {
            cJSON *m = cJSON_AddObjectToObject(root, "model");
            cJSON_AddStringToObject(m, "path", o.model_path);
            cJSON_AddStringToObject(m, "name", model.name);
            cJSON_AddNumberToObject(m, "n_mels", model.n_mels);
            cJSON_AddNumberToObject(m, "d", model.d);
            cJSON_AddStringToObject(m, "conv1_type", ws_tensor_type_name(model.conv1_type));
            cJSON_AddStringToObject(m, "conv2_type", ws_tensor_type_name(model.conv2_type));
            cJSON_AddBoolToObject(m, "positional_embedding", model.pos != NULL);
        } else if (probe_n_mels) { /* --mel -m: only the header was read */
            cJSON *m = cJSON_AddObjectToObject(root, "model");
            cJSON_AddStringToObject(m, "path", o.model_path);
            cJSON_AddNumberToObject(m, "n_mels", probe_n_mels);
            cJSON_AddNumberToObject(m, "d", probe_d);
        } else {
            cJSON_AddNullToObject(root, "model");
        }
    }

    if (!(jobs = ws_jobs_new(o.n_inputs, o.inputs, outs)) ||
        (o.tar_size && !(r.shards = ws_shards_new(shard_paths, jobs, o.n_inputs, o.tar_size)))) {
        ws_eprintf(PROG ": out of memory");
        status = 1;
        goto out;
    }
    for (int i = 0; i < o.n_inputs; i++) {
        jobs[i].member = members ? members[i] : NULL;
        jobs[i].why = whys[i];
    }
    r.mel = mel;
    r.pad = o.pad;
    r.mel_only = o.mel_only;
    r.add_pos = o.pos;
    r.verbose = o.verbose;
    r.threads = o.threads;
    r.n_mels = n_mels;
    r.out_dtype = o.out_dtype;
    r.skip_existing = o.skip_existing;
    r.root = o.root;
    r.manifest = o.manifest;
    r.manifest_fd = -1;
    if (o.manifest &&
        (r.manifest_fd = open(o.manifest, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666)) < 0) {
        ws_eprintf(PROG ": --manifest %s: %s", o.manifest, strerror(errno));
        status = 1;
        goto out;
    }
    ws_run_stats stats = {0};
    r.stats = &stats;
    ws_progress_total(o.n_inputs);
    ws_progress_start(o.n_inputs, o.progress_s, o.quiet);
    const int failed = ws_run(&r, jobs, o.n_inputs);
    ws_progress_stop();
    int manifest_bad = ws_run_manifest_lost() > 0;
    if (r.manifest_fd >= 0 && fsync(r.manifest_fd) != 0 && errno != EINVAL && errno != EROFS) {
        ws_eprintf(PROG ": --manifest %s: %s", o.manifest, strerror(errno));
        manifest_bad = 1;
    }
    status = failed || manifest_bad ? 1 : 0;
    if (root) {
        cJSON *inputs = cJSON_AddArrayToObject(root, "inputs");
        for (int i = 0; i < o.n_inputs; i++)
            report_job(inputs, &r, &jobs[i]);
        cJSON_AddNumberToObject(root, "failed", failed);
        cJSON *t = cJSON_AddObjectToObject(root, "timings_ms");
        cJSON_AddNumberToObject(t, "model_load", model_ms);
        cJSON_AddNumberToObject(t, "init", init_ms);
        cJSON_AddNumberToObject(t, "total", 1e3 * (ws_now() - t_start));
        if (r.batcher) {
            cJSON *g = cJSON_AddObjectToObject(root, "gpu_batches");
            cJSON_AddNumberToObject(g, "batches", (double)stats.batches);
            cJSON_AddNumberToObject(g, "windows", (double)stats.windows);
            cJSON_AddNumberToObject(g, "inputs", (double)stats.inputs);
            cJSON_AddNumberToObject(g, "inputs_alone", (double)stats.alone);
            cJSON_AddNumberToObject(g, "inputs_staged", stats.staged);
            cJSON_AddNumberToObject(g, "submit_ms", stats.submit_ms);
            cJSON_AddNumberToObject(g, "wait_ms", stats.wait_ms);
            cJSON_AddNumberToObject(g, "gpu_ms", stats.gpu_ms);
            cJSON_AddNumberToObject(g, "workers_idle_ms", stats.workers_idle_ms);
            ws_gpu_batch_times(r.batcher, &stats.alloc_ms, &stats.copy_ms, &stats.enqueue_ms);
            cJSON_AddNumberToObject(g, "submit_alloc_ms", stats.alloc_ms);
            cJSON_AddNumberToObject(g, "submit_copy_ms", stats.copy_ms);
            cJSON_AddNumberToObject(g, "submit_enqueue_ms", stats.enqueue_ms);
        }
        if (write_json(o.json, root))
            status = 1;
    }
out:
    cJSON_Delete(root);
    ws_shards_free(r.shards, o.n_inputs, o.tar_size ? o.tar_size : 1);
    ws_jobs_free(jobs, o.n_inputs);
    for (int i = 0; members && i < o.n_inputs; i++)
        free(members[i]);
    free(members);
    for (int i = 0; shard_paths && o.tar_size && i < (o.n_inputs + o.tar_size - 1) / o.tar_size; i++)
        free(shard_paths[i]);
    free(shard_paths);
    free(whys);
    free(not_under);
    for (int i = 0; outs && i < o.n_inputs; i++)
        free(outs[i]);
    free(outs);
    for (int i = 0; i < o.n_inputs; i++)
        free(o.inputs[i]);
    free(o.inputs);
    if (r.manifest_fd >= 0)
        close(r.manifest_fd);
    ws_mel_free(mel);
    const double t_free = ws_now();
    ws_gpu_batcher_free(r.batcher); /* before the stem: it shares the stem's context */
    const double t_stem = ws_now();
    ws_stem_free(r.stem);
    if (o.verbose && r.on_gpu)
        ws_eprintf(PROG ": GPU teardown %.0f ms (batches %.0f ms, stem and context %.0f ms)",
                   1e3 * (ws_now() - t_free), 1e3 * (t_stem - t_free), 1e3 * (ws_now() - t_stem));
    if (have_model)
        ws_model_free(&model);
    return status;
}

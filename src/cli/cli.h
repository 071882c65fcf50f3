/* cli.h - what the parts of the command share (main.c, options.c, names.c, check.c).
 * Not a library interface: only the whisper-stem binary (and tests/test_cli.c) use it. */
#ifndef WS_CLI_H
#define WS_CLI_H

#include <stddef.h>

#include "common.h"
#include "cuda/gpu.h"
#include "mel/mel.h"
#include "output.h"
#include "run.h"
#include "whisper/frontend.h"
#include "whisper/model.h"

#define PROG "whisper-stem"

typedef ws_device_kind device_choice;

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
    device_choice mel_device; /* WS_DEVICE_AUTO: where the stem runs */
    int gpu_ordinal;
    ws_precision precision;
    ws_out_dtype out_dtype;
    char **args;          /* the positional inputs */
    int n_args;
    char **inputs;        /* positional, then --list, duplicates dropped; after
                           * ws_cli_output_names, only --shard's part (malloc'd strings) */
    ws_segment **segs;    /* [n_inputs] beside inputs: a list line's segment, or a line that
                           * names no input (->bad; its input is "LIST:LINE"); NULL for a
                           * whole file, and NULL itself when the list has neither */
    ws_tar_src **srcs;    /* [n_inputs] beside inputs: a tar shard's member, or NULL; NULL
                           * itself when no input is one */
    char **tar_in;        /* --tar-in's shards, in order */
    int n_tar_in;
    struct tar_shard_in *shards_in; /* the shards listed (their paths, gzip readers) */
    int n_shards_in;
    int n_inputs;
    int n_listed;         /* the inputs of the whole list, before --shard selects */
    int keep_ext;         /* --keep-ext: x.wav -> x.wav.npy */
    int decode;           /* --decode: ws_audio_decode */
} options;

/* A run that may use the GPU goes on in a second process, while the first only waits for
 * its status: the second hands it over once every output is in place, so the caller
 * does not wait for the driver's teardown at exit (detach.c). Called before any thread
 * exists; returns in the process that runs. */
void ws_cli_detach(const options *o);

/* The run's outputs are in place: standard streams let go, the status sent to the
 * waiting process (nothing when not detached, or when gpu_shared is 0: a GPU in an
 * exclusive compute mode, which the first then waits to see released). */
void ws_cli_detach_done(int status, int gpu_shared);

/* Parses argv into o (options.c). Returns -1 to go on, else the exit status (--help and
 * --version: 0; a usage error: 2, said on stderr). */
int ws_cli_parse_args(int argc, char **argv, options *o);

/* "PROG: <fmt with a> (see --help)" on stderr; returns 2. */
int ws_cli_usage_error(const char *fmt, const char *a);

/* o->inputs: the positional inputs, then --list's lines (paths, segments: docs/corpus.md
 * "Segment lists"); --shard keeps its part (names.c). 0, or the exit status. */
int ws_cli_gather_inputs(options *o);
/* Frees o->inputs and o->segs. */
void ws_cli_inputs_free(options *o);

/* Each input's output: its path (or its tar shard's), the member key in tar mode, or why
 * it has none (that input then fails alone). */
typedef struct {
    char **outs;         /* [n_inputs]: NULL where whys[i] says why */
    const char **whys;   /* [n_inputs] */
    char **members;      /* [n_inputs] with --tar-size, else NULL */
    char **shard_paths;  /* [number of shards] with --tar-size, else NULL */
    char *not_under;     /* the text of whys[i] for inputs outside --root */
} ws_cli_names;

/* Names every input's output and checks them all before anything runs: clashes over the
 * whole list, then --shard selects its part of o->inputs (names.c). 0, or the exit
 * status (2: a usage error such as two inputs writing one file). */
int ws_cli_output_names(options *o, ws_cli_names *nm);
void ws_cli_names_free(const options *o, ws_cli_names *nm);

/* -O DIR: creates DIR and its missing parents (links on the way checked). 0, or the exit
 * status (said on stderr). */
int ws_cli_make_outdir(const options *o);

/* --check: the GPU against the CPU on random data, per precision (check.c). The exit
 * status: 0 all pass, 1 a mismatch (or a GPU call failed), WS_CLI_EXIT_NO_GPU when no GPU
 * is usable (no driver, no device): "skipped", nothing to compare. */
#define WS_CLI_EXIT_NO_GPU 3
int ws_cli_run_check(const options *o, ws_model *m);

#endif

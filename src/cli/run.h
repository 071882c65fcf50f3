/* run.h - inputs to outputs: decode -> log-Mel -> stem -> write, for many files.
 *
 * Usage (main.c):
 *   ws_run_ctx c = {.mel = mel, .model = &m, .cpu = stem, .gpu = NULL, .pad = WS_PAD_AUDIO, ...};
 *   ws_job *jobs = ws_jobs_new(n, inputs, outputs);
 *   int failed = ws_run(&c, jobs, n);     // prints one stderr line per failed input
 *   ... jobs[i].ok, .shape, .ms ...       // for the report
 *   ws_jobs_free(jobs, n);
 *
 * With more than one input the stages overlap: worker threads decode and
 * compute the log-Mel of the next inputs and write finished outputs, while
 * the calling thread runs the stem (GPU or CPU) on each prepared input,
 * lowest index first (an input that blocks, such as a FIFO whose writer has
 * not come, does not hold up the others). At most 2 x workers + 2 inputs are
 * in flight, and their bytes stay under max_memory (below). Outputs are the
 * same bytes as one input per run with the same --threads (tests/test_cli.c).
 *
 * On a GPU (ctx.batcher, cuda/gpu_batch.h), also for one input: the workers decode
 * (and compute the log-Mel unless mel_on_gpu) and copy each input's upload into pinned
 * slabs; the calling thread fills batches of many inputs, keeps up to one per slot in
 * flight, and hands each finished batch's results, which stay in the slot's pinned
 * memory, to the writers; the slot is reused when all of them are written. Enough
 * inputs may be in flight to fill every slot and one more batch. An input too long for
 * a batch goes alone (stem_alone). Outputs are the same bytes however the inputs were
 * batched (tests/test_gpu_node.c).
 *
 * What a run records (tests/test_manifest.c): each finished input's line (ws_job_json:
 * manifest, --json, and with -O a sidecar OUT/x.json written after OUT/x.npy, or with
 * --tar-size the member KEY.json and the shard's index OUT/shard-NNNNNN.jsonl) holds the
 * run's provenance (ctx.provenance) and the time. --skip-existing reads those records
 * back: an output made with other settings, or with none recorded, is made again (said
 * once at the end); a skipped input's line is its record's. The files of the pipeline are
 * listed in run_int.h.
 */
#ifndef WS_RUN_H
#define WS_RUN_H

#include <stdint.h>

#include "audio/audio.h"
#include "common.h"
#include "whisper/stem.h"
#include "cuda/gpu.h"
#include "cuda/gpu_batch.h"
#include "mel/mel.h"
#include "whisper/model.h"
#include "output.h"

typedef struct {
    double decode, mel, stem, write; /* milliseconds */
    double stage; /* copying the GPU's input into pinned slabs */
} ws_stage_ms;

/* A segment of an input (a --list line, names.c): the audio from start_s seconds on,
 * duration_s seconds long (0: to the end), its output named by id. */
typedef struct {
    double start_s, duration_s;
    char *id;
    char *bad;           /* a list line that names no input: its message (the job fails) */
} ws_segment;

/* An input that is a member of a tar shard (tarin.h; docs/corpus.md "Tar shards as
 * inputs"): its input is named "SHARD:MEMBER". */
typedef struct {
    const char *shard;   /* the shard's path */
    const char *name;    /* the member's path in the shard */
    const char *key;     /* its WebDataset key: its outputs are KEY.npy, KEY.json */
    uint64_t off, size;  /* its bytes: in the file (plain), in the decompressed stream (gzip) */
    struct ws_tarin_gz *gz; /* gzip: the shard's reader, shared; NULL: plain, read in place */
    int turn;            /* gzip: its turn at the reader */
} ws_tar_src;

typedef struct {
    const char *input;
    const ws_segment *seg; /* NULL: the whole input */
    const ws_tar_src *src; /* a tar shard's member, or NULL */
    const char *output;  /* NULL: the input has no output name (outside --root): it fails */
    const char *member;  /* --tar-size: its key in the shard (members KEY.npy, KEY.json) */
    const char *why;     /* with output NULL: why there is none (the job fails with it) */
    int shard;           /* --tar-size: index into ws_run_ctx.shards, else -1 */
    /* filled by ws_run */
    int ok, skipped;     /* written; skipped (--skip-existing); neither: failed */
    char *error;         /* "input: message" when failed (malloc'd; NULL if that failed too) */
    int src_rate, src_channels, decoded;
    size_t samples;
    int windows;
    int content_frames;  /* log-Mel frames of audio in the last window (the rest is padding) */
    int valid_ctx;       /* output rows of the last window that see audio */
    int64_t shape[3];
    int ndim;
    long long f16_clamped; /* --out-dtype f16: finite values beyond the range, saturated */
    struct cJSON *rec;   /* the recorded line (sidecar, shard index) it is reported from when
                            skipped, or failed again without being redone; or NULL */
    ws_stage_ms ms;
    /* private to the pipeline */
    int state;
    size_t reserved; /* bytes counted against max_memory */
    ws_out *out;     /* a long input's output, written piece by piece */
    int special;     /* the output is a FIFO or a device: never streamed */
    ws_audio audio;
    ws_mel_out mel;  /* with the log-Mel on the GPU: its shape only, until it runs alone */
    ws_mel_geom geom; /* with the log-Mel on the GPU */
    float *result;
    int result_pinned; /* result lies in a GPU batch's pinned buffer (not freed here) */
    int result_f16;    /* result is float16 already (converted on the GPU) */
    int slot;          /* the GPU batch slot holding result, or -1 */
    void **slabs;      /* its input staged in pinned slabs (gpu_batch.h), or NULL */
    int n_slabs;
    int gz_passed;     /* its turn at a gzip shard's reader is over */
} ws_job;

/* What the GPU batches did (the --json report). */
typedef struct {
    long batches, windows, inputs; /* in batches */
    long alone;                    /* inputs that went alone */
    double submit_ms, wait_ms;     /* the calling thread's time submitting, waiting */
    double gpu_ms;                 /* GPU time of the batches, upload to download */
    int staged;                    /* inputs uploaded from staging slabs */
    double workers_idle_ms;        /* the worker threads' time waiting for work, summed */
    double alloc_ms, copy_ms, enqueue_ms; /* inside the submissions (gpu_batch.h) */
} ws_run_stats;

typedef struct {
    const ws_mel *mel;
    const ws_model *model; /* NULL with mel_only */
    ws_stem *stem;         /* the stem (CPU or GPU), NULL with mel_only */
    int on_gpu;            /* the stem runs on the GPU */
    int mel_on_gpu;        /* the log-Mel runs on the GPU (the workers only decode) */
    ws_gpu_batcher *batcher; /* GPU: inputs go in batches of many (gpu_batch.h); NULL: one
                              by one through stem */
    ws_run_stats *stats;     /* filled by ws_run with batches, or NULL */
    ws_pad pad;
    int mel_only, add_pos, verbose;
    int threads;           /* CPU threads in all */
    int n_mels;            /* log-Mel bands */
    size_t max_memory;     /* bound on the bytes of inputs in flight (see below) */
    ws_out_dtype out_dtype; /* float32, or float16 converted once before the write */
    int skip_existing;     /* an input whose output is a regular file already is skipped */
    int decode;            /* --decode: ws_audio_decode */
    const char *root;      /* --root, for the message of an input outside it; or NULL */
    int manifest_fd;       /* JSON Lines, one line per finished input; -1: none */
    const char *manifest;  /* its path, for messages */
    struct ws_shard *shards; /* --tar-size: the run's tar shards (ws_shards_new), or NULL */
    int sidecars;          /* -O: OUT/x.json beside each OUT/x.npy (the line of its run) */
    const struct cJSON *provenance; /* this run's settings (ws_provenance_new), in every line */
} ws_run_ctx;

/* --tar-size: the n_jobs jobs in shards of per_shard, in order: shard i holds jobs
 * [i * per_shard, (i + 1) * per_shard) and is written to OUT/shard-NNNNNN.tar, numbered at
 * the start of ws_run (shards.c: I + N * (i + m * K), the first m free or holding exactly
 * its inputs; each job's output is set to it), with its index OUT/shard-NNNNNN.jsonl. A
 * shard is opened at its first member, gets the members in the order the inputs finish,
 * and is committed (renamed into place) when its last input has finished; then its index
 * is written and its inputs are reported (manifest lines, failures), so "ok" means the
 * shard is in place. A shard none of whose inputs was written is not made, and has no
 * index: its inputs are tried again by the next run. */
typedef struct {
    const char *outdir;
    int shard_i, shard_n;  /* --shard I/N; shard_n 0: none */
    long long n_listed;    /* inputs in the whole list, before --shard selects */
} ws_shard_names;
struct ws_shard *ws_shards_new(const ws_shard_names *names, ws_job *jobs, int n_jobs, int per_shard);
void ws_shards_free(struct ws_shard *s, int n_jobs, int per_shard);

/* The manifest line of a finished job (and the --json report's per-input object, the
 * sidecar, the tar member KEY.json, the shard index's line): input, segment ({start,
 * duration (null: to the end), id}, for a segment only), output, member and
 * shard (tar), status, error, shape, dtype, f16_clamped (f16), sample_rate, channels,
 * samples, duration_s, windows, content_frames, valid_ctx, provenance, time (docs/spec.md
 * "Manifest"). A skipped job's line is its recorded one with status "skipped" and this
 * time. Strings that are not UTF-8 carry \udcXX escapes (ws_json_quote): the objects hold
 * raw items; print them with cJSON_Print*. Caller frees (cJSON_Delete). */
struct cJSON;
struct cJSON *ws_job_json(const ws_run_ctx *c, const ws_job *j);
/* The same, printed on one line (malloc'd, no newline), or NULL when out of memory. */
char *ws_job_line(const ws_run_ctx *c, const ws_job *j);

/* s as a JSON string, quotes included (malloc'd, or NULL): '"', '\\' and control
 * characters escaped as JSON wants, valid UTF-8 as it is, and each byte that is not part
 * of valid UTF-8 as \udcXX (XX the byte: Python's surrogateescape, so os.fsencode of
 * json.loads gives the bytes back). The one writer of every string of a line. */
char *ws_json_quote(const char *s);
/* Parses a line written so: \udcXX become their bytes again. NULL if not JSON. */
struct cJSON *ws_json_parse(const char *text, size_t len);
/* A copy of x whose strings are raw items quoted by ws_json_quote. */
struct cJSON *ws_json_requote(const struct cJSON *x);

/* The provenance object of a run (docs/spec.md): version, output, model {name, sha256: of the
 * stem tensors as float32 little-endian, conv1.weight, conv1.bias, conv2.weight,
 * conv2.bias, then the file's positional embedding if any} or null with --mel, n_mels,
 * pad, pos, precision (effective), device, mel_device, out_dtype. Plain strings. */
typedef struct {
    const ws_model *model; /* NULL: --mel */
    int n_mels, pos;
    ws_pad pad;
    const char *precision, *device, *mel_device;
    ws_out_dtype out_dtype;
    int decode;            /* ws_audio_decode */
} ws_provenance_info;
struct cJSON *ws_provenance_new(const ws_provenance_info *p);
void ws_model_sha256(const ws_model *m, char hex[65]);

/* Why --skip-existing redoes an output: bit k of ws_provenance_diff names
 * ws_redo_reasons[k] ("no record", then each field that differs; "version" never counts);
 * ws_segment_diff's bit is WS_REDO_SEGMENT (the recorded segment's start or duration is
 * another). */
enum { WS_REDO_NO_RECORD = 0, WS_REDO_SEGMENT = 12, WS_REDO_N = 14 };
extern const char *const ws_redo_reasons[WS_REDO_N];
unsigned ws_provenance_diff(const struct cJSON *ours, const struct cJSON *recorded);
unsigned ws_segment_diff(const ws_segment *ours, const struct cJSON *recorded_line);
/* Whether the recorded line is of j: the same input and, for a segment, the same id (a
 * file has one record per segment). */
int ws_record_is_of(const struct cJSON *line, const ws_job *j);

/* Memory: every input reserves the bytes it will hold at its peak before it
 * allocates them (the decoder's buffers, the 16 kHz samples with the log-Mel
 * being made, then the log-Mel with the embeddings, of which a long input
 * holds at most 64 MiB: the rest is written as it is made). Inputs in flight
 * together stay under max_memory (one waits while others hold it); an input
 * that alone needs more fails with one line. */

/* jobs[i].input / .output point into the caller's strings (kept alive). */
ws_job *ws_jobs_new(int n, char *const *inputs, char *const *outputs);
void ws_jobs_free(ws_job *jobs, int n);

/* Manifest lines that could not be written (each said on stderr): the run then fails. */
int ws_run_manifest_lost(void);

/* Runs every job; returns the number that failed. Each finished job is reported:
 * one stderr line when it failed, a manifest line, the progress counts. */
int ws_run(const ws_run_ctx *c, ws_job *jobs, int n);

#endif

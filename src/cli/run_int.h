/* run_int.h - what the files of the pipeline share (run.h is the public side).
 *
 *   pipeline.c  the threads and the jobs' states (NEW .. DONE), ws_run
 *   stages.c    one job's stages: decode + log-Mel (prep), the stem, memory accounting
 *   outputs.c   writing one output, its sidecar, the --skip-existing decisions
 *   manifest.c  the JSON line of a job, string escaping, the manifest file
 *   shards.c    --tar-size shards: naming, probing, the index, members, commit
 *   report.c    the --json report
 */
#ifndef WS_RUN_INT_H
#define WS_RUN_INT_H

#include <pthread.h>

#include "run.h"

enum { NEW, PREP, PREPPED, STEM, STEMMED, WRITE, DONE };

typedef struct {
    pthread_mutex_t *mu; /* NULL: one job, nobody to wait for */
    pthread_cond_t *cv;
    size_t budget, held, held_waiting;
} mem_acct;

/* stages.c */
int ws_run_prep(const ws_run_ctx *c, mem_acct *mem, ws_job *j, int mel_threads);
int ws_run_stem(const ws_run_ctx *c, ws_job *j);
int ws_run_stem_alone(const ws_run_ctx *c, ws_job *j);
void ws_run_set_shape(const ws_run_ctx *c, ws_job *j);
ws_gpu_input ws_run_job_input(const ws_run_ctx *c, const ws_job *j);
void ws_run_unstage(const ws_run_ctx *c, ws_job *j);
void ws_run_unreserve(mem_acct *m, ws_job *j); /* with m->mu held (or no mutex) */
void ws_run_release(ws_job *j);                /* frees what j holds but its report */
/* j fails with the message fmt (two %s: a, b); returns -1. */
int ws_run_fail(ws_job *j, const char *fmt, const char *a, const char *b);

/* outputs.c */
/* Whether j is to be made (0), is skipped (1: --skip-existing) or has failed already (-1);
 * sets j->special. */
int ws_run_decide(const ws_run_ctx *c, ws_job *j);
/* --skip-existing's outputs redone: n more for the reasons diff; said once, at the end. */
void ws_run_redo_note(unsigned diff, long n);
void ws_run_redo_say(void);
/* A record (sidecar, or a line of a shard index) at most this long. */
#define WS_RECORD_MAX ((size_t)1 << 20)
/* A shard index at most this long. */
#define WS_INDEX_MAX ((size_t)1 << 30)
/* The records' reader: the lines of the regular file at path, each to fn (its bytes, its
 * length without the newline; a NUL is a byte of it), a last line without its newline too;
 * lines over WS_RECORD_MAX bytes are passed over and counted in *too_long. Links are not
 * followed, those on the way obey the trust rule (ws_path_links_trusted), a FIFO or device
 * is not waited on, at most max bytes. 0: read; 1: nothing there; -1: something there
 * that is not read (why: a line naming it, ending "no record"). */
typedef void (*ws_record_line_fn)(void *ctx, const char *line, size_t len);
int ws_record_lines(const char *path, size_t max, ws_record_line_fn fn, void *ctx,
                    long *too_long, ws_err *why);
/* Removes the record at path (a sidecar, a shard index) and flushes its directory, before
 * the output it describes is replaced. 0 (also when there is none), or -1 with e. */
int ws_record_remove(const char *path, ws_err *e);
/* The JSON object in the file at path (one line, at most max bytes, read as above), or
 * NULL; something there that is not read is said (a warning). */
struct cJSON *ws_read_record(const char *path, size_t max);
/* j's result (count values) to float16 when the output is f16, saturating (f16_clamped). */
void ws_run_to_f16(const ws_run_ctx *c, ws_job *j, size_t count);
int ws_run_write_out(const ws_run_ctx *c, ws_job *j);

/* shards.c */
/* Before the run: numbers the shards and decides, from earlier runs' records, which
 * inputs are skipped or failed already (shards.c's comment). */
int ws_shards_plan(const ws_run_ctx *c, ws_job *jobs, int n);
int ws_shard_write_member(const ws_run_ctx *c, ws_job *j, ws_err *e);
/* Once per job, with the pipeline's lock held: reports it (a shard's jobs when the
 * shard is committed). */
void ws_run_report(const ws_run_ctx *c, ws_job *j);

/* manifest.c */
void ws_run_report_one(const ws_run_ctx *c, const ws_job *j);

#endif

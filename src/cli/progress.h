/* progress.h - how far a run of many inputs is, on stderr.
 *
 *   on a terminal (and 2 or more inputs): one line redrawn twice a second
 *     whisper-stem: 1234/10000 inputs, 56.7/s, 312x real time, 3 failed, 10 skipped, ETA 2m35s
 *   elsewhere: nothing, unless interval_s > 0 asks for that line every interval_s
 *     seconds (Slurm logs: a line, not a redrawn bar)
 *   at the end (2 or more inputs, or interval_s > 0):
 *     whisper-stem: 10000 inputs in 3m2s: 9987 written, 3 failed, 10 skipped; 27.8 h of
 *     audio, 550x real time
 *   quiet: none of it.
 * "real time" is seconds of audio written per second of wall time.
 * Tested by tests/test_cli.c (cli::progress_*).
 */
#ifndef WS_PROGRESS_H
#define WS_PROGRESS_H

typedef enum { WS_PROGRESS_OK, WS_PROGRESS_FAILED, WS_PROGRESS_SKIPPED } ws_progress_kind;

/* Starts the clock (and the reporting thread when one is needed). */
void ws_progress_start(long total, double interval_s, int quiet);

/* One input finished; audio_s: seconds of audio it wrote. Thread-safe. */
void ws_progress_job(ws_progress_kind k, double audio_s);

/* Before another line goes to stderr: clears the terminal's progress line (it is
 * drawn again at the next tick). */
void ws_progress_clear(void);

/* The same, and no progress line is drawn until ws_progress_release: lines written in
 * between never share a line with it. */
void ws_progress_hold(void);
void ws_progress_release(void);

/* Stops the thread and prints the summary line. */
void ws_progress_stop(void);

#endif

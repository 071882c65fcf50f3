/* signals.h - termination signals, progress, and temporary names that must
 * not outlive the process.
 *
 * ws_signals_init blocks SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM, SIGUSR1,
 * SIGUSR2, SIGXCPU and SIGVTALRM in the calling thread (so in every thread
 * created after it) and starts one thread that sigwait()s for them. On one of
 * them that thread takes the temporary-name registry's lock (so no name is
 * created or renamed into place from then on), unlinks every registered
 * name, prints one line
 *   PROG: interrupted by SIGTERM: 12 of 100 inputs written, 3 skipped, 1 failed; no partial output left
 * (", 3 skipped" only when some were)
 * and ends the process with _exit(128 + signal). A signal that was ignored
 * when the process started (nohup) stays ignored. Threads that existed
 * before ws_signals_init (a BLAS library's pool started by its constructor)
 * forward a signal they receive to the waiting thread.
 * SIGPIPE and SIGXFSZ are ignored: a write to a closed pipe or past the file
 * size limit then fails with EPIPE / EFBIG, that input fails with one line
 * and the run goes on.
 * Tested by tests/test_output.c (CLI runs stopped by SIGTERM, SIGINT,
 * SIGKILL, ulimit -f).
 */
#ifndef WS_SIGNALS_H
#define WS_SIGNALS_H

/* Call first thing in main(), before any thread starts. prog: the program
 * name for the message. Returns 0, or -1 when the thread could not start
 * (the signals then keep their default actions). */
int ws_signals_init(const char *prog);

/* Progress for the message printed on a signal. */
void ws_progress_total(long n);
void ws_progress_done(int ok); /* one input finished: written (ok) or failed */
void ws_progress_skipped(void); /* one input skipped (its output was there) */

/* Names in the file system that must vanish on a signal. A name is
 * unlinkat(dirfd, name) on a signal; dirfd (AT_FDCWD for a path relative to
 * the working directory) must stay open while the name is registered.
 * Return a slot id, or -1 (out of memory; the name is then not covered). */
int ws_temp_register(const char *path);
int ws_temp_register_at(int dirfd, const char *name);
void ws_temp_unregister(int id); /* id < 0 is a no-op */

/* Runs fn(ctx) under the registry lock (recursive: fn may register and
 * unregister) and returns its result. A signal is handled either before fn
 * starts or after it returns, never halfway: creating a name and
 * registering it, or renaming it into place and unregistering it, are one
 * step for the signal thread. Once a signal is being handled this blocks
 * until the process ends. */
int ws_temp_locked(int (*fn)(void *ctx), void *ctx);

#endif

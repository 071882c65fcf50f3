/* detach.c - a GPU run's end without the driver's teardown (see cli.h).
 *
 * A process that used the GPU pays for its context at exit: the kernel driver frees the
 * context, its device memory and the pinned host memory (90-200 ms on an H100 host)
 * before the process's parent learns that it ended. The command has nothing left to do
 * by then: every output, sidecar, manifest line and report is written and synced.
 *
 * So a run that may use the GPU is two processes. The first (the one the shell, script
 * or job manager started and waits for) forks at once, before any thread exists, and
 * only waits: for one status byte on a pipe, which the second sends once its outputs are
 * in place, or for the second's end. The second does the run. Once done it points its
 * standard input, output and error at /dev/null (so that `$(...)`, pipes and
 * subprocess captures see their end now), sends the status, and ends; the first exits
 * with that status while the second's teardown goes on beside whatever runs next.
 *
 * - Signals the first receives (HUP, INT, QUIT, TERM, USR1, USR2, ALRM, XCPU, VTALRM:
 *   signals.c's) go to the second, which ends its run as it would alone (no partial
 *   output, one line on stderr); the first then exits as the second did, 128 + signal.
 *   They are blocked across the fork: one that comes before the first is ready to pass it
 *   on waits for it, and in the second for its signal thread (signals.c).
 * - Only where other processes may open the GPU while this context goes away: in an
 *   exclusive compute mode the next command's context would fail (or, with --device
 *   auto, fall back to the CPU) during the teardown, so there the second process ends
 *   whole before the first does.
 * - The second gets SIGTERM if the first dies (PR_SET_PDEATHSIG): a killed command
 *   leaves no run behind.
 * - Without the status byte (the second crashed, or was interrupted), the first waits
 *   for the second and gives its exit status, or 128 + the signal that ended it.
 * - Not done with -v (which reports the orderly teardown), --check and --dump-ptx,
 *   --device cpu, without a CUDA driver, under a CUDA profiler or checker (nsys, ncu,
 *   compute-sanitizer inject themselves through CUDA_INJECTION64_PATH and follow the
 *   process they started), or with WHISPER_STEM_NO_DETACH set.
 * - Descriptors other than the standard streams that the caller passed (a --list on
 *   /dev/fd/N) stay open in the second process until its teardown ends.
 *   WHISPER_STEM_DETACH=1 detaches any run, also on the CPU (tests).
 * Tests: tests/test_cli.c (cli.detached_*).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

static const int FORWARDED[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM,
                                SIGUSR1, SIGUSR2, SIGXCPU, SIGVTALRM};

static pid_t g_child = -1;
static int g_done_fd = -1; /* the second process's end of the pipe */

static void forward(int sig)
{
    int e = errno;
    if (g_child > 0)
        kill(g_child, sig);
    errno = e;
}

/* The first process: waits, then ends as the second said or did. Never returns. The
 * forwarded signals are blocked on entry (prev: the mask before). */
static void wait_for_run(int rfd, const sigset_t *prev)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sa.sa_flags = 0; /* the read below returns EINTR and goes again (a sanitizer's runtime
                      * acts on a signal only then) */
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof FORWARDED / sizeof *FORWARDED; i++) {
        struct sigaction old;
        if (sigaction(FORWARDED[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* ignored by whoever started us (nohup): the second ignores it too */
        sigaction(FORWARDED[i], &sa, NULL);
    }
    signal(SIGPIPE, SIG_IGN);
    sigprocmask(SIG_SETMASK, prev, NULL); /* those that came meanwhile go on now */
    unsigned char st;
    ssize_t r;
    do
        r = read(rfd, &st, 1);
    while (r < 0 && errno == EINTR);
    if (r == 1)
        _exit(st);
    int ws;
    pid_t w;
    do
        w = waitpid(g_child, &ws, 0);
    while (w < 0 && errno == EINTR);
    if (w == g_child && WIFEXITED(ws))
        _exit(WEXITSTATUS(ws));
    if (w == g_child && WIFSIGNALED(ws)) {
        const int sig = WTERMSIG(ws);
        const struct rlimit none = {0, 0}; /* its core, if any, is the second's */
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        sigprocmask(SIG_UNBLOCK, &one, NULL);
        raise(sig); /* as the run ended (a crash stays a crash for the caller) */
        _exit(128 + sig);
    }
    _exit(1);
}

void ws_cli_detach(const options *o)
{
    const char *force = getenv("WHISPER_STEM_DETACH");
    const int forced = force && !strcmp(force, "1");
    if (!forced && (o->device == WS_DEVICE_CPU || o->verbose || o->check || o->dump_ptx ||
                    getenv("WHISPER_STEM_NO_DETACH") || getenv("CUDA_INJECTION64_PATH") ||
                    !ws_gpu_driver_present()))
        return;
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        return; /* one process, as without a GPU */
    sigset_t fwd, prev;
    sigemptyset(&fwd);
    for (size_t i = 0; i < sizeof FORWARDED / sizeof *FORWARDED; i++)
        sigaddset(&fwd, FORWARDED[i]);
    sigprocmask(SIG_BLOCK, &fwd, &prev);
    signal(SIGCHLD, SIG_DFL); /* inherited SIG_IGN would reap the second unseen */
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
        sigprocmask(SIG_SETMASK, &prev, NULL);
        close(p[0]);
        close(p[1]);
        return;
    }
    if (pid > 0) {
        close(p[1]);
        g_child = pid;
        wait_for_run(p[0], &prev);
    }
    /* the second keeps them blocked: ws_signals_init's thread takes what is pending */
    close(p[0]);
    g_done_fd = p[1];
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* the first ended before the line above */
        _exit(128 + SIGTERM);
}

void ws_cli_detach_done(int status, int gpu_shared)
{
    if (g_done_fd < 0 || !gpu_shared)
        return; /* not detached; or the first waits for this process's whole end */
    prctl(PR_SET_PDEATHSIG, 0); /* the first goes now: that is no reason to stop */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        if (null > STDERR_FILENO)
            close(null);
    }
    const unsigned char st = (unsigned char)status;
    ssize_t w;
    do
        w = write(g_done_fd, &st, 1);
    while (w < 0 && errno == EINTR);
    close(g_done_fd);
    g_done_fd = -1;
}

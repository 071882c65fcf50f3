/* signals.c - see signals.h. */
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const int CAUGHT[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGALRM,
                             SIGUSR1, SIGUSR2, SIGXCPU, SIGVTALRM};
#define N_CAUGHT (int)(sizeof CAUGHT / sizeof *CAUGHT)

static const char *g_prog = "whisper-stem";
static sigset_t g_set;
static pthread_t g_thread;
static atomic_long g_total, g_ok, g_failed, g_skipped;

typedef struct {
    int used;
    int dirfd;
    char *name;
} slot;

static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static slot *g_slots;
static int g_nslots;

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGTERM: return "SIGTERM";
    case SIGALRM: return "SIGALRM";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGXCPU: return "SIGXCPU";
    case SIGVTALRM: return "SIGVTALRM";
    default: return "a signal";
    }
}

static void *signal_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int sig;
        if (sigwait(&g_set, &sig) != 0)
            continue;
        pthread_mutex_lock(&g_mu); /* held until _exit: no name appears or moves from now on */
        for (int i = 0; i < g_nslots; i++)
            if (g_slots[i].used)
                unlinkat(g_slots[i].dirfd, g_slots[i].name, 0);
        char line[256];
        long total = atomic_load(&g_total), ok = atomic_load(&g_ok), bad = atomic_load(&g_failed);
        long skip = atomic_load(&g_skipped);
        char skipped[48] = "";
        if (skip)
            snprintf(skipped, sizeof skipped, ", %ld skipped", skip);
        /* on a terminal, over the progress line */
        const char *cr = isatty(STDERR_FILENO) ? "\r\033[K" : "";
        int n;
        if (total > 0)
            n = snprintf(line, sizeof line,
                         "%s%s: interrupted by %s: %ld of %ld inputs written%s, %ld failed; no partial output left\n",
                         cr, g_prog, sig_name(sig), ok, total, skipped, bad);
        else
            n = snprintf(line, sizeof line, "%s%s: interrupted by %s; no partial output left\n", cr,
                         g_prog, sig_name(sig));
        if (n > 0) {
            size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
            ssize_t w = write(STDERR_FILENO, line, len);
            (void)w;
        }
        _exit(128 + sig);
    }
    return NULL;
}

/* Runs in threads that existed before ws_signals_init (they do not block the
 * signals): hands the signal to the waiting thread. */
static void forward(int sig)
{
    int e = errno;
    pthread_kill(g_thread, sig);
    errno = e;
}

int ws_signals_init(const char *prog)
{
    if (prog && *prog)
        g_prog = prog;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    sigemptyset(&g_set);
    for (int i = 0; i < N_CAUGHT; i++) {
        struct sigaction old;
        if (sigaction(CAUGHT[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue; /* ignored by whoever started us (nohup): stays ignored */
        sigaddset(&g_set, CAUGHT[i]);
    }
    sigset_t prev;
    if (pthread_sigmask(SIG_BLOCK, &g_set, &prev) != 0)
        return -1;
    if (pthread_create(&g_thread, NULL, signal_thread, NULL) != 0) {
        pthread_sigmask(SIG_SETMASK, &prev, NULL);
        return -1;
    }
    pthread_detach(g_thread);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sa.sa_flags = SA_RESTART;
    sigfillset(&sa.sa_mask);
    for (int i = 0; i < N_CAUGHT; i++)
        if (sigismember(&g_set, CAUGHT[i]))
            sigaction(CAUGHT[i], &sa, NULL);
    return 0;
}

void ws_progress_total(long n)
{
    atomic_store(&g_total, n);
}

void ws_progress_done(int ok)
{
    atomic_fetch_add(ok ? &g_ok : &g_failed, 1);
}

void ws_progress_skipped(void)
{
    atomic_fetch_add(&g_skipped, 1);
}

int ws_temp_register_at(int dirfd, const char *name)
{
    char *copy = strdup(name);
    if (!copy)
        return -1;
    pthread_mutex_lock(&g_mu);
    int id = -1;
    for (int i = 0; i < g_nslots && id < 0; i++)
        if (!g_slots[i].used)
            id = i;
    if (id < 0) {
        size_t had = (size_t)g_nslots, n = had ? 2 * had : 16;
        slot *s = n <= 65536 ? realloc(g_slots, n * sizeof *s) : NULL;
        if (s) {
            for (size_t i = had; i < n; i++)
                s[i] = (slot){0, -1, NULL};
            id = (int)had;
            g_slots = s;
            g_nslots = (int)n;
        }
    }
    if (id >= 0)
        g_slots[id] = (slot){1, dirfd, copy};
    pthread_mutex_unlock(&g_mu);
    if (id < 0)
        free(copy);
    return id;
}

int ws_temp_register(const char *path)
{
    return ws_temp_register_at(AT_FDCWD, path);
}

void ws_temp_unregister(int id)
{
    if (id < 0)
        return;
    pthread_mutex_lock(&g_mu);
    char *name = NULL;
    if (id < g_nslots && g_slots[id].used) {
        name = g_slots[id].name;
        g_slots[id] = (slot){0, -1, NULL};
    }
    pthread_mutex_unlock(&g_mu);
    free(name);
}

int ws_temp_locked(int (*fn)(void *ctx), void *ctx)
{
    pthread_mutex_lock(&g_mu);
    int rc = fn(ctx);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

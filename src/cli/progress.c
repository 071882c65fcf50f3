/* progress.c - see progress.h. One thread wakes every tick (0.5 s on a terminal,
 * interval_s otherwise) and prints the counts kept under a mutex. */
#include "progress.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running, stop, tty, quiet, drawn;
    long total, ok, failed, skipped;
    double audio_s, t0, interval;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* "2m35s", "1h02m", "12.3s" */
static void fmt_dur(char *b, size_t cap, double s)
{
    if (s < 60)
        snprintf(b, cap, "%.1fs", s);
    else if (s < 3600)
        snprintf(b, cap, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(b, cap, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

/* the progress line, with P.mu held */
static void line(char *b, size_t cap)
{
    const double el = ws_now() - P.t0;
    const long done = P.ok + P.failed + P.skipped;
    const double rate = el > 0 ? done / el : 0;
    char eta[32] = "?";
    if (rate > 0 && P.total >= done)
        fmt_dur(eta, sizeof eta, (P.total - done) / rate);
    snprintf(b, cap, "whisper-stem: %ld/%ld inputs, %.1f/s, %.0fx real time, %ld failed, %ld skipped, "
                     "ETA %s",
             done, P.total, rate, el > 0 ? P.audio_s / el : 0, P.failed, P.skipped, eta);
}

static void *ticker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&P.mu);
    while (!P.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        const double tick = P.tty ? 0.5 : P.interval;
        long ns = ts.tv_nsec + (long)((tick - (long)tick) * 1e9);
        ts.tv_sec += (time_t)tick + ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        int rc = 0;
        while (!P.stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&P.cv, &P.mu, &ts);
        if (P.stop)
            break;
        char b[256];
        line(b, sizeof b);
        if (P.tty) {
            fprintf(stderr, "\r%s\033[K", b);
            P.drawn = 1;
        } else {
            fprintf(stderr, "%s\n", b);
        }
        fflush(stderr);
    }
    pthread_mutex_unlock(&P.mu);
    return NULL;
}

void ws_progress_start(long total, double interval_s, int quiet)
{
    P.total = total;
    P.t0 = ws_now();
    P.quiet = quiet;
    P.tty = isatty(STDERR_FILENO) && total >= 2;
    P.interval = interval_s;
    if (quiet || (!P.tty && interval_s <= 0))
        return;
    P.running = pthread_create(&P.thread, NULL, ticker, NULL) == 0;
}

void ws_progress_job(ws_progress_kind k, double audio_s)
{
    pthread_mutex_lock(&P.mu);
    if (k == WS_PROGRESS_OK)
        P.ok++;
    else if (k == WS_PROGRESS_FAILED)
        P.failed++;
    else
        P.skipped++;
    P.audio_s += audio_s;
    pthread_mutex_unlock(&P.mu);
}

void ws_progress_clear(void)
{
    pthread_mutex_lock(&P.mu);
    if (P.drawn) {
        fputs("\r\033[K", stderr);
        P.drawn = 0;
    }
    pthread_mutex_unlock(&P.mu);
}

void ws_progress_hold(void)
{
    pthread_mutex_lock(&P.mu);
    if (P.drawn) {
        fputs("\r\033[K", stderr);
        P.drawn = 0;
    }
}

void ws_progress_release(void)
{
    pthread_mutex_unlock(&P.mu);
}

void ws_progress_stop(void)
{
    pthread_mutex_lock(&P.mu);
    P.stop = 1;
    pthread_cond_broadcast(&P.cv);
    pthread_mutex_unlock(&P.mu);
    if (P.running)
        pthread_join(P.thread, NULL);
    P.running = 0;
    ws_progress_clear();
    if (P.quiet || (P.total < 2 && P.interval <= 0))
        return;
    char el[32];
    const double t = ws_now() - P.t0;
    fmt_dur(el, sizeof el, t);
    fprintf(stderr, "whisper-stem: %ld input%s in %s: %ld written, %ld failed, %ld skipped; "
                    "%.1f h of audio, %.0fx real time\n",
            P.total, P.total == 1 ? "" : "s", el, P.ok, P.failed, P.skipped, P.audio_s / 3600,
            t > 0 ? P.audio_s / t : 0);
}

/* load.c - the public loaders: a path, standard input ("-"), a FIFO, a device
 * or a buffer in memory, each made a source (internal.h) for
 * ws_audio_load_source (decode.c); and ws_audio_free.
 *
 * A regular file is read in place with pread (source.c says why never mapped);
 * its size and mtime must be the same after the decode as at open, or the load
 * fails (the file changed while being read). Standard input ("-"), pipes, FIFOs
 * and devices cannot be seeked, and the decoders need to seek, so they are read
 * into memory first, at most opts.max_stream_bytes of them, the bytes buffered
 * reserved as they grow (outbuf.c). Standard input that is a regular file at
 * offset 0 (`< file.wav`) is read in place like a path. Paths are opened with
 * O_NONBLOCK: open() of a FIFO with no writer would block forever; the wait
 * happens in poll() instead (a FIFO opened for reading before any writer
 * reports POLLIN or POLLHUP only once a writer has come).
 *
 * Options: a zeroed or NULL ws_audio_opts means the defaults; max_samples is
 * capped at WS_AUDIO_MAX_SAMPLES, the output's hard limit (resolve).
 *
 * Tests: tests/test_audio.c (audio.stdin_*, audio.fifo_with_a_late_writer_waits_
 * in_poll_and_decodes, audio.endless_*, audio.regular_file_on_stdin_is_read_in_
 * place, audio.memory_loader_names_its_buffer, audio.missing_file_*,
 * audio.directory_is_refused); fuzzed by tests/fuzz/fuzz_audio.c.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STDIN_NAME "<stdin>"
#define STREAM_FIRST ((size_t)1 << 20)   /* first buffer for a stream's bytes */

/* --- options and memory buffers ------------------------------------------ */

static load_opts resolve(const ws_audio_opts *o, const char *name)
{
    load_opts r = {.name = name};
    r.max_samples = o && o->max_samples && o->max_samples < WS_AUDIO_MAX_SAMPLES
                        ? o->max_samples
                        : WS_AUDIO_MAX_SAMPLES; /* the output's hard limit stays */
    r.max_stream_bytes = o && o->max_stream_bytes ? o->max_stream_bytes : WS_AUDIO_MAX_STREAM_BYTES;
    if (o) {
        r.reserve = o->reserve;
        r.reserve_ctx = o->reserve_ctx;
        r.decode = o->decode;
        r.start_s = o->start_s;
        r.duration_s = o->duration_s;
    }
    return r;
}

int ws_audio_load_memory_opts(ws_audio *a, const void *data, size_t len, const char *name,
                              const ws_audio_opts *opts, ws_err *err)
{
    memset(a, 0, sizeof *a);
    load_opts o = resolve(opts, name ? name : "(memory)");
    if ((uint64_t)len > (uint64_t)INT64_MAX)
        return ws_errf(err, "%s: %zu bytes is too large", o.name, len);
    source s = {.mem = data, .fd = -1, .len = len};
    return ws_audio_load_source(a, &s, &o, 0, err);
}

int ws_audio_load_memory(ws_audio *a, const void *data, size_t len, const char *name, ws_err *err)
{
    return ws_audio_load_memory_opts(a, data, len, name, NULL, err);
}

/* --- files, FIFOs, devices and standard input ---------------------------- */

/* Waits until fd has data or its writer has gone. */
static int wait_readable(int fd, const char *name, ws_err *err)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    for (;;) {
        int r = poll(&p, 1, -1);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR && errno != EAGAIN)
            return ws_errf(err, "%s: poll failed: %s", name, strerror(errno));
    }
}

/* Reads fd to its end into a malloc'd buffer of at most o->max_stream_bytes. */
static int read_stream(int fd, load_opts *o, unsigned char **out, size_t *len, ws_err *err)
{
    const size_t limit = o->max_stream_bytes;
    size_t cap = 0, n = 0;
    unsigned char *buf = NULL;
    *out = NULL;
    *len = 0;
    for (;;) {
        if (n == cap) {
            size_t step = cap / 2 > GROW_BYTES ? cap / 2 : GROW_BYTES;
            size_t ncap = cap == 0 ? STREAM_FIRST : cap + step;
            if (ncap < cap || ncap - 1 > limit) /* room for one byte over the limit */
                ncap = limit < SIZE_MAX ? limit + 1 : SIZE_MAX;
            if (ws_audio_ask_reserve(o, ncap, 0, 0, 0, err)) {
                free(buf);
                return -1;
            }
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return ws_errf(err, "%s: out of memory after %zu bytes", o->name, n);
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { /* a non-blocking stdin */
            if (wait_readable(fd, o->name, err)) {
                free(buf);
                return -1;
            }
            continue;
        }
        if (r < 0) {
            int e = errno;
            free(buf);
            return ws_errf(err, "%s: read failed after %zu bytes: %s", o->name, n, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > limit) {
            free(buf);
            return ws_errf(err,
                           "%s: more than %zu bytes from a pipe, FIFO or device, the limit for "
                           "input that cannot be seeked; give it as a regular file",
                           o->name, limit);
        }
    }
    if (n < cap) { /* give the spare back: held is what the decode will count */
        unsigned char *nb = n ? realloc(buf, n) : NULL;
        if (nb || !n) {
            if (!n)
                free(buf);
            buf = nb;
        }
    }
    *out = buf;
    *len = n;
    return 0;
}

static int load_stream(ws_audio *a, int fd, load_opts *o, ws_err *err)
{
    unsigned char *buf;
    size_t len;
    if (read_stream(fd, o, &buf, &len, err))
        return -1;
    source s = {.mem = buf, .fd = -1, .len = len};
    int rc = ws_audio_load_source(a, &s, o, len, err);
    free(buf);
    return rc;
}

/* The bytes [off, off + len) of a regular file (st its stat at open), read in place; the
 * file must not change meanwhile. */
static int load_regular(ws_audio *a, int fd, const struct stat *st, uint64_t off, uint64_t len,
                        load_opts *o, ws_err *err)
{
    source s = {.fd = fd, .base = off, .len = len, .next = off};
    int rc = ws_audio_load_source(a, &s, o, 0, err);
    ws_audio_src_release(&s);
    struct stat now;
    if (!rc && (fstat(fd, &now) || now.st_size != st->st_size ||
                now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
                now.st_mtim.tv_nsec != st->st_mtim.tv_nsec)) {
        ws_audio_free(a);
        rc = ws_errf(err, "%s: the file changed while being read", o->name);
    }
    return rc;
}

int ws_audio_load_opts(ws_audio *a, const char *path, const ws_audio_opts *opts, ws_err *err)
{
    memset(a, 0, sizeof *a);
    if (!strcmp(path, "-")) {
        load_opts o = resolve(opts, STDIN_NAME);
        struct stat st;
        /* `< file.wav`: a regular file at offset 0 is read in place, as by path. */
        if (!fstat(STDIN_FILENO, &st) && S_ISREG(st.st_mode) && st.st_size > 0 &&
            lseek(STDIN_FILENO, 0, SEEK_CUR) == 0) {
            return load_regular(a, STDIN_FILENO, &st, 0, (uint64_t)st.st_size, &o, err);
        }
        return load_stream(a, STDIN_FILENO, &o, err);
    }
    load_opts o = resolve(opts, path);

    /* O_NONBLOCK: opening a FIFO that has no writer yet must not block here. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ws_errf(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) {
        int e = errno;
        close(fd);
        return ws_errf(err, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return ws_errf(err, "%s: is a directory", path);
    }
    int rc;
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        rc = load_regular(a, fd, &st, 0, (uint64_t)st.st_size, &o, err);
        close(fd);
        return rc;
    }
    /* A FIFO, a device, a socket, or a regular file whose size says nothing (procfs).
     * Blocking reads from here on; a FIFO with no writer yet reports neither POLLIN
     * nor POLLHUP until one comes, so poll() is where we wait for it. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(fd);
        return ws_errf(err, "%s: cannot make the descriptor blocking: %s", path, strerror(e));
    }
    rc = S_ISREG(st.st_mode) ? 0 : wait_readable(fd, path, err);
    if (!rc)
        rc = load_stream(a, fd, &o, err);
    close(fd);
    return rc;
}

int ws_audio_load_range(ws_audio *a, const char *path, uint64_t off, uint64_t len,
                        const char *name, const ws_audio_opts *opts, ws_err *err)
{
    memset(a, 0, sizeof *a);
    load_opts o = resolve(opts, name ? name : path);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ws_errf(err, "%s: cannot open %s: %s", o.name, path, strerror(errno));
    struct stat st;
    int rc;
    if (fstat(fd, &st))
        rc = ws_errf(err, "%s: cannot stat %s: %s", o.name, path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = ws_errf(err, "%s: %s is not a regular file", o.name, path);
    else if (off > (uint64_t)st.st_size || len > (uint64_t)st.st_size - off)
        rc = ws_errf(err, "%s: bytes %llu..%llu lie past the end of %s (%llu bytes)", o.name,
                     (unsigned long long)off, (unsigned long long)(off + len), path,
                     (unsigned long long)st.st_size);
    else if (len == 0)
        rc = ws_errf(err, "%s: empty file (0 bytes)", o.name);
    else
        rc = load_regular(a, fd, &st, off, len, &o, err);
    close(fd);
    return rc;
}

int ws_audio_load(ws_audio *a, const char *path, ws_err *err)
{
    return ws_audio_load_opts(a, path, NULL, err);
}

void ws_audio_free(ws_audio *a)
{
    if (!a)
        return;
    free(a->x);
    memset(a, 0, sizeof *a);
}

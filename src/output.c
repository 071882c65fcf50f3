/* output.c - see output.h. */
#include "output.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "outputs are written as the in-memory float32 bytes: little-endian hosts only");

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "signals.h"

int ws_path_is_npy(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && strcasecmp(path + n - 4, ".npy") == 0;
}

size_t ws_npy_header(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    return ws_npy_header_dtype(buf, cap, shape, ndim, WS_OUT_F32);
}

size_t ws_npy_header_dtype(char *buf, size_t cap, const int64_t *shape, int ndim, ws_out_dtype t)
{
    char dict[256];
    int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     t == WS_OUT_F16 ? "<f2" : "<f4");
    for (int i = 0; i < ndim; i++)
        k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld,%s", (long long)shape[i],
                      i + 1 < ndim ? " " : "");
    k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
    /* magic(6) + version(2) + len(2) + dict + spaces + '\n', total % 64 == 0 */
    size_t total = 10 + (size_t)k + 1;
    total = (total + 63) / 64 * 64;
    if (total > cap)
        return 0;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    uint16_t hl = (uint16_t)(total - 10);
    buf[8] = (char)(hl & 0xff);
    buf[9] = (char)(hl >> 8);
    memcpy(buf + 10, dict, (size_t)k);
    memset(buf + 10 + k, ' ', total - 10 - (size_t)k - 1);
    buf[total - 1] = '\n';
    return total;
}

/* --- unique names -------------------------------------------------------- */

static void random_chars(char *p, int n)
{
    static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static _Atomic uint64_t counter;
    uint8_t b[16];
    if (n > (int)sizeof b)
        n = (int)sizeof b;
    if (getrandom(b, (size_t)n, GRND_NONBLOCK) != n) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ws_rng r = {(uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 20 ^
                    atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15u};
        for (int i = 0; i < n; i++)
            b[i] = (uint8_t)ws_rng_next(&r);
    }
    for (int i = 0; i < n; i++)
        p[i] = set[b[i] % (sizeof set - 1)];
}

/* "<prefix>XXXXXX<suffix>" into name; -1 with ENAMETOOLONG when it does not fit. */
static int unique_name(const char *prefix, const char *suffix, char *name, size_t cap)
{
    size_t lp = strlen(prefix), ls = strlen(suffix);
    if (lp + 6 + ls >= cap || lp + 6 + ls > NAME_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(name, prefix, lp);
    random_chars(name + lp, 6);
    memcpy(name + lp + 6, suffix, ls + 1);
    return 0;
}

int ws_create_unique(int dirfd, const char *prefix, const char *suffix, unsigned mode, char *name,
                     size_t cap)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        if (unique_name(prefix, suffix, name, cap))
            return -1;
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, (mode_t)mode);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/* --- ws_out -------------------------------------------------------------- */

enum { OUT_STDOUT, OUT_STREAM, OUT_UNNAMED, OUT_NAMED };

struct ws_out {
    int kind;
    int fd;
    int dirfd;       /* the target's directory (OUT_UNNAMED, OUT_NAMED) */
    char *base;      /* the target's name in dirfd */
    char tmp[32];    /* the temporary name in dirfd, while there is one */
    int slot;        /* signals.h registry slot of tmp (OUT_NAMED) */
    int failed;      /* a write failed */
    char shown[300]; /* the path for messages: whole, or "..." and its tail */
};

#define TMP_PREFIX ".ws-"
#define TMP_SUFFIX ".tmp"

static void set_shown(ws_out *o, const char *path)
{
    size_t n = strlen(path), keep = sizeof o->shown - 4;
    if (strcmp(path, "-") == 0)
        snprintf(o->shown, sizeof o->shown, "standard output");
    else if (n < sizeof o->shown)
        memcpy(o->shown, path, n + 1);
    else
        snprintf(o->shown, sizeof o->shown, "...%s", path + n - keep);
}

static void out_free(ws_out *o)
{
    if (o->fd >= 0 && o->kind != OUT_STDOUT)
        close(o->fd);
    if (o->dirfd >= 0)
        close(o->dirfd);
    free(o->base);
    free(o);
}

/* "dir/name" with name relative to dir's directory unless absolute; malloc'd. */
static char *join_link(const char *from, const char *link)
{
    if (link[0] == '/')
        return strdup(link);
    const char *slash = strrchr(from, '/');
    size_t dl = slash ? (size_t)(slash - from + 1) : 0, ll = strlen(link);
    char *p = malloc(dl + ll + 1);
    if (p) {
        memcpy(p, from, dl);
        memcpy(p + dl, link, ll + 1);
    }
    return p;
}

/* The kernel's fs.protected_symlinks rule, applied whatever the sysctl says
 * (we follow links ourselves, so the kernel's check never runs): a link in a
 * sticky, world-writable directory such as /tmp is followed only when its
 * owner is us or the directory's owner. Otherwise another user's planted
 * link could make us replace a file of theirs choosing. */
static int link_is_trusted(const char *link, const struct stat *lst)
{
    if (lst->st_uid == geteuid())
        return 1;
    char dir[4096];
    ws_dirname(link, dir, sizeof dir);
    struct stat ds;
    if (stat(dir, &ds) != 0)
        return 0;
    if (!(ds.st_mode & S_ISVTX) || !(ds.st_mode & S_IWOTH))
        return 1;
    return lst->st_uid == ds.st_uid;
}

/* The name that the chain of symbolic links at path ends in (which need not
 * exist): the file to replace. malloc'd, or NULL with errno (EPERM: a link
 * link_is_trusted refuses). */
static char *resolve_links(const char *path)
{
    char *cur = strdup(path);
    for (int depth = 0; cur && depth < 40; depth++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur; /* missing (the directory decides) or not a link */
        if (!link_is_trusted(cur, &st)) {
            free(cur);
            errno = EPERM;
            return NULL;
        }
        size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
        char *link = malloc(cap);
        ssize_t n = link ? readlink(cur, link, cap) : -1;
        if (n < 0 || (size_t)n >= cap) { /* out of memory, or the link changed meanwhile */
            int e = !link ? ENOMEM : n < 0 ? errno : EAGAIN;
            free(link);
            free(cur);
            errno = e;
            return NULL;
        }
        link[n] = '\0';
        char *next = join_link(cur, link);
        free(link);
        free(cur);
        cur = next;
    }
    if (cur) {
        free(cur);
        errno = ELOOP;
    } else {
        errno = ENOMEM;
    }
    return NULL;
}

int ws_path_links_trusted(const char *path, ws_err *err)
{
    char *cur = strdup(path);
    int budget = 40; /* links followed, as the kernel's MAXSYMLINKS */
    size_t i = 1;
    while (cur) {
        size_t n = strlen(cur);
        for (; i <= n; i++) { /* each leading part of cur, the whole last */
            if ((i < n && cur[i] != '/') || cur[i - 1] == '/')
                continue;
            char c = cur[i];
            cur[i] = '\0';
            struct stat st;
            const int r = lstat(cur, &st);
            if (r != 0 || !S_ISLNK(st.st_mode)) {
                cur[i] = c;
                if (r != 0) /* nothing below it exists yet, so no link */
                    i = n;
                continue;
            }
            if (!link_is_trusted(cur, &st)) {
                if (strcmp(cur, path))
                    ws_errf(err, "%s: refusing to follow %s, a symbolic link that another user "
                                 "owns in a sticky world-writable directory", path, cur);
                else
                    ws_errf(err, "%s: refusing to follow a symbolic link that another user owns "
                                 "in a sticky world-writable directory", path);
                free(cur);
                return -1;
            }
            char link[PATH_MAX];
            ssize_t k = readlink(cur, link, sizeof link - 1);
            if (k < 0 || --budget < 0) { /* gone meanwhile, or a loop: the open says so */
                free(cur);
                return 0;
            }
            link[k] = '\0';
            char *to = join_link(cur, link);
            cur[i] = c;
            size_t tl = to ? strlen(to) : 0, rl = strlen(cur + i);
            char *next = to ? malloc(tl + rl + 1) : NULL;
            if (next) {
                memcpy(next, to, tl);
                memcpy(next + tl, cur + i, rl + 1);
            }
            free(to);
            free(cur);
            cur = next; /* the link's target and the rest: checked from its start */
            i = 1;
            break;
        }
        if (cur && i > n)
            break;
    }
    if (!cur)
        return ws_errf(err, "%s: out of memory", path);
    free(cur);
    return 0;
}

/* O_TMPFILE needs /proc/self/fd to be named later (linkat). Setting
 * WHISPER_STEM_NO_TMPFILE (tests) takes the named-temporary path as on a
 * file system without O_TMPFILE. */
static int tmpfile_usable(void)
{
    static atomic_int proc = -1; /* every thread computes the same answer */
    const char *off = getenv("WHISPER_STEM_NO_TMPFILE");
    if (off && *off)
        return 0;
    int u = atomic_load(&proc);
    if (u < 0) {
        u = access("/proc/self/fd", X_OK) == 0;
        atomic_store(&proc, u);
    }
    return u;
}

/* under the registry lock: create the temporary name and register it */
static int create_named(void *arg)
{
    ws_out *o = arg;
    o->fd = ws_create_unique(o->dirfd, TMP_PREFIX, TMP_SUFFIX, 0666, o->tmp, sizeof o->tmp);
    if (o->fd < 0)
        return errno;
    o->slot = ws_temp_register_at(o->dirfd, o->tmp);
    return 0;
}

ws_out *ws_out_open(const char *path, ws_err *err)
{
    ws_out *o = calloc(1, sizeof *o);
    if (!o) {
        ws_errf(err, "%s: out of memory", path);
        return NULL;
    }
    o->fd = o->dirfd = o->slot = -1;
    set_shown(o, path);
    if (strcmp(path, "-") == 0) {
        o->kind = OUT_STDOUT;
        o->fd = STDOUT_FILENO;
        return o;
    }
    if (!*path) {
        ws_errf(err, "empty output file name");
        goto fail;
    }
    /* before anything is opened: a planted link could name a device or FIFO */
    if (ws_path_links_trusted(path, err))
        goto fail;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            ws_errf(err, "%s: is a directory", o->shown);
            goto fail;
        }
        if (!S_ISREG(st.st_mode)) { /* device, FIFO: write into it, do not replace it */
            o->fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
            if (o->fd < 0) {
                ws_errf(err, "%s: cannot open for writing: %s", o->shown, strerror(errno));
                goto fail;
            }
            if (fstat(o->fd, &st) == 0 && !S_ISREG(st.st_mode)) {
                o->kind = OUT_STREAM;
                return o;
            }
            close(o->fd); /* replaced by a regular file meanwhile: replace that atomically */
            o->fd = -1;
        }
    } else if (errno != ENOENT) {
        ws_errf(err, "%s: %s", o->shown, strerror(errno));
        goto fail;
    }

    char *target = resolve_links(path);
    if (!target && errno == EPERM) {
        ws_errf(err, "%s: refusing to follow a symbolic link that another user owns in a sticky "
                     "world-writable directory", o->shown);
        goto fail;
    }
    if (!target) {
        ws_errf(err, "%s: cannot follow the symbolic link: %s", o->shown, strerror(errno));
        goto fail;
    }
    char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    if (!*base) {
        free(target);
        ws_errf(err, "%s: is a directory", o->shown);
        goto fail;
    }
    if (!(o->base = strdup(base))) {
        free(target);
        ws_errf(err, "%s: out of memory", o->shown);
        goto fail;
    }
    if (slash == target)
        o->dirfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else if (slash) {
        *slash = '\0';
        o->dirfd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } else
        o->dirfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    free(target);
    if (o->dirfd < 0) {
        ws_errf(err, "%s: cannot open its directory: %s", o->shown, strerror(e));
        goto fail;
    }
    if (tmpfile_usable()) {
        o->fd = openat(o->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
        if (o->fd >= 0) {
            o->kind = OUT_UNNAMED;
            return o;
        }
        e = errno;
        if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL && e != ENOENT) {
            ws_errf(err, "%s: cannot create a file in its directory: %s", o->shown, strerror(e));
            goto fail;
        }
    }
    o->kind = OUT_NAMED; /* no O_TMPFILE here: a registered temporary name */
    if ((e = ws_temp_locked(create_named, o)) != 0) {
        ws_errf(err, "%s: cannot create a file in its directory: %s", o->shown, strerror(e));
        goto fail;
    }
    return o;
fail:
    out_free(o);
    return NULL;
}

int ws_out_write(ws_out *o, const void *data, size_t len, ws_err *err)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(o->fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->failed = 1;
            return ws_errf(err, "%s: write failed: %s", o->shown, w < 0 ? strerror(errno) : "no progress");
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* under the registry lock: name the unnamed file as the target when there is
 * none, else under a temporary name renamed over the target */
static int link_and_rename(void *arg)
{
    ws_out *o = arg;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
    int rc = linkat(AT_FDCWD, proc, o->dirfd, o->base, AT_SYMLINK_FOLLOW);
    if (rc == 0 || errno != EEXIST)
        return rc;
    for (int attempt = 0; attempt < 100 && rc; attempt++) {
        if (unique_name(TMP_PREFIX, TMP_SUFFIX, o->tmp, sizeof o->tmp))
            return -1;
        rc = linkat(AT_FDCWD, proc, o->dirfd, o->tmp, AT_SYMLINK_FOLLOW);
        if (rc && errno != EEXIST)
            break;
    }
    if (rc)
        return -1;
    if (renameat(o->dirfd, o->tmp, o->dirfd, o->base)) {
        int e = errno;
        unlinkat(o->dirfd, o->tmp, 0);
        errno = e;
        return -2;
    }
    return 0;
}

/* under the registry lock: rename the registered temporary name over the target */
static int rename_named(void *arg)
{
    ws_out *o = arg;
    int rc = renameat(o->dirfd, o->tmp, o->dirfd, o->base);
    int e = errno;
    if (rc)
        unlinkat(o->dirfd, o->tmp, 0);
    ws_temp_unregister(o->slot);
    o->slot = -1;
    errno = e;
    return rc;
}

static int drop_named(void *arg)
{
    ws_out *o = arg;
    unlinkat(o->dirfd, o->tmp, 0);
    ws_temp_unregister(o->slot);
    o->slot = -1;
    return 0;
}

void ws_out_abort(ws_out *o)
{
    if (!o)
        return;
    if (o->kind == OUT_NAMED && o->fd >= 0)
        ws_temp_locked(drop_named, o);
    out_free(o);
}

/* A file that is replaced keeps its permissions (and, for root, its owner):
 * replacing a private 0600 file must not make it readable by all. */
static void keep_old_mode(const ws_out *o)
{
    struct stat st;
    if (fstatat(o->dirfd, o->base, &st, 0) != 0 || !S_ISREG(st.st_mode))
        return;
    if (geteuid() == 0 && fchown(o->fd, st.st_uid, st.st_gid) != 0)
        return; /* the new file stays ours, with the default mode */
    (void)fchmod(o->fd, st.st_mode & 07777);
}

int ws_out_commit(ws_out *o, ws_err *err)
{
    int rc = -1;
    if (o->failed) {
        ws_errf(err, "%s: not written: an earlier write failed", o->shown);
        ws_out_abort(o);
        return -1;
    }
    switch (o->kind) {
    case OUT_STDOUT:
        out_free(o);
        return 0;
    case OUT_STREAM:
        rc = close(o->fd);
        o->fd = -1;
        if (rc)
            ws_errf(err, "%s: write failed: %s", o->shown, strerror(errno));
        out_free(o);
        return rc ? -1 : 0;
    case OUT_UNNAMED:
        keep_old_mode(o);
        if (fsync(o->fd)) {
            ws_errf(err, "%s: could not flush to disk: %s", o->shown, strerror(errno));
            break;
        }
        rc = ws_temp_locked(link_and_rename, o);
        if (rc == -1)
            ws_errf(err, "%s: could not name the finished file in its directory: %s", o->shown,
                    strerror(errno));
        else if (rc)
            ws_errf(err, "%s: could not rename the finished file into place: %s", o->shown,
                    strerror(errno));
        break;
    case OUT_NAMED:
        keep_old_mode(o);
        rc = fsync(o->fd);
        if (close(o->fd) && !rc)
            rc = -1;
        o->fd = -1;
        if (rc) {
            ws_errf(err, "%s: could not flush to disk: %s", o->shown, strerror(errno));
            ws_temp_locked(drop_named, o);
            break;
        }
        rc = ws_temp_locked(rename_named, o);
        if (rc)
            ws_errf(err, "%s: could not rename the finished file into place: %s", o->shown,
                    strerror(errno));
        break;
    }
    if (rc == 0 && fsync(o->dirfd) && errno != EINVAL) {
        ws_errf(err, "%s: written, but its directory could not be flushed to disk: %s", o->shown,
                strerror(errno));
        rc = -1;
    }
    out_free(o);
    return rc ? -1 : 0;
}

/* --- whole arrays and files ---------------------------------------------- */

int ws_write_file_atomic(const char *path, const void *data, size_t len, ws_err *err)
{
    ws_out *o = ws_out_open(path, err);
    if (!o)
        return -1;
    if (ws_out_write(o, data, len, err)) {
        ws_out_abort(o);
        return -1;
    }
    return ws_out_commit(o, err);
}

int ws_write_array(const char *path, const float *data, const int64_t *shape, int ndim, ws_err *err)
{
    return ws_write_array_dtype(path, data, WS_OUT_F32, shape, ndim, err);
}

size_t ws_f32_to_f16_inplace(void *data, size_t n)
{
    size_t clamped = 0;
    /* through copies, a block at a time: block i0's halves land in bytes [2*i0, 2*(i0+m)),
     * below the floats of the blocks still to read, which start at byte 4*(i0+m) */
    unsigned char *p = data;
    for (size_t i0 = 0; i0 < n; i0 += 1024) {
        float f[1024];
        uint16_t h[1024];
        const size_t m = n - i0 < 1024 ? n - i0 : 1024;
        memcpy(f, p + i0 * sizeof(float), m * sizeof(float));
        for (size_t i = 0; i < m; i++) {
            h[i] = ws_f32_to_f16(f[i]);
            if ((h[i] & 0x7fff) == 0x7c00 && isfinite(f[i])) { /* beyond 65520: saturate */
                h[i] = (uint16_t)((h[i] & 0x8000) | 0x7bff);
                clamped++;
            }
        }
        memcpy(p + i0 * sizeof(uint16_t), h, m * sizeof(uint16_t));
    }
    return clamped;
}

size_t ws_f16_saturate(void *data, size_t n)
{
    size_t clamped = 0;
    unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        if ((h & 0x7fff) == 0x7c00) {
            h = (uint16_t)((h & 0x8000) | 0x7bff);
            memcpy(p + 2 * i, &h, 2);
            clamped++;
        }
    }
    return clamped;
}

int ws_write_array_dtype(const char *path, const void *data, ws_out_dtype t, const int64_t *shape,
                         int ndim, ws_err *err)
{
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || ws_mul_size(count, (size_t)shape[i], &count))
            return ws_errf(err, "%s: invalid array shape", path);
    size_t bytes;
    if (ws_mul_size(count, t == WS_OUT_F16 ? 2 : sizeof(float), &bytes))
        return ws_errf(err, "%s: array too large", path);
    char header[256];
    size_t hl = 0;
    if (strcmp(path, "-") != 0 && ws_path_is_npy(path)) {
        hl = ws_npy_header_dtype(header, sizeof header, shape, ndim, t);
        if (!hl)
            return ws_errf(err, "%s: shape too long for a .npy header", path);
    }
    ws_out *o = ws_out_open(path, err);
    if (!o)
        return -1;
    /* float32 little-endian: the in-memory layout on the little-endian hosts we build for */
    if ((hl && ws_out_write(o, header, hl, err)) || ws_out_write(o, data, bytes, err)) {
        ws_out_abort(o);
        return -1;
    }
    return ws_out_commit(o, err);
}

int ws_mkdir_parents(const char *path, ws_err *err)
{
    char dir[4096];
    ws_dirname(path, dir, sizeof dir);
    if (ws_path_links_trusted(dir, err))
        return -1;
    struct stat st;
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : ws_errf(err, "%s: not a directory", dir);
    size_t n = strlen(dir);
    if (n + 1 >= sizeof dir)
        return ws_errf(err, "%s: path too long", path);
    /* mkdir -p: every component from the top, an existing one (or one made at the same
     * time by another thread) is fine */
    for (size_t i = 1; i <= n; i++) {
        if (dir[i] != '/' && dir[i] != '\0')
            continue;
        char c = dir[i];
        dir[i] = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return ws_errf(err, "%s: cannot create the directory: %s", dir, strerror(errno));
        dir[i] = c;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ws_errf(err, "%s: not a directory", dir);
    return 0;
}

/* output.c - see output.h. */
#include "output.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "outputs are written as the in-memory float32 bytes: little-endian hosts only");

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

int ws_path_is_npy(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && strcasecmp(path + n - 4, ".npy") == 0;
}

size_t ws_npy_header(char *buf, size_t cap, const int64_t *shape, int ndim)
{
    char dict[256];
    int k = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (");
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

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Temporary file beside path: "<dir>/.<base>.tmp.XXXXXX". */
static int open_temp(const char *path, char *tmp, size_t cap)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if ((size_t)snprintf(tmp, cap, "%.*s.%s.tmp.XXXXXX", dirlen, path, slash ? slash + 1 : path) >= cap)
        return -1;
    int fd = mkstemp(tmp);
    if (fd >= 0)
        fchmod(fd, 0644); /* mkstemp makes 0600; outputs are ordinary files */
    return fd;
}

typedef struct {
    const void *p;
    size_t len;
} chunk;

static int write_chunks_atomic(const char *path, const chunk *c, int n, ws_err *err)
{
    if (strcmp(path, "-") == 0) {
        for (int i = 0; i < n; i++)
            if (write_all(STDOUT_FILENO, c[i].p, c[i].len))
                return ws_errf(err, "standard output: write failed: %s", strerror(errno));
        return 0;
    }
    char tmp[4096];
    int fd = open_temp(path, tmp, sizeof tmp);
    if (fd < 0)
        return ws_errf(err, "%s: cannot create a file there: %s", path, strerror(errno));
    for (int i = 0; i < n; i++) {
        if (write_all(fd, c[i].p, c[i].len)) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return ws_errf(err, "%s: write failed: %s", path, strerror(e));
        }
    }
    if (fsync(fd) || close(fd)) {
        int e = errno;
        unlink(tmp);
        return ws_errf(err, "%s: could not flush to disk: %s", path, strerror(e));
    }
    if (rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return ws_errf(err, "%s: could not rename the finished file into place: %s", path, strerror(e));
    }
    return 0;
}

int ws_write_file_atomic(const char *path, const void *data, size_t len, ws_err *err)
{
    chunk c = {data, len};
    return write_chunks_atomic(path, &c, 1, err);
}

int ws_write_array(const char *path, const float *data, const int64_t *shape, int ndim, ws_err *err)
{
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || ws_mul_size(count, (size_t)shape[i], &count))
            return ws_errf(err, "%s: invalid array shape", path);
    size_t bytes;
    if (ws_mul_size(count, sizeof(float), &bytes))
        return ws_errf(err, "%s: array too large", path);
    char header[256];
    chunk c[2];
    int n = 0;
    if (strcmp(path, "-") != 0 && ws_path_is_npy(path)) {
        size_t hl = ws_npy_header(header, sizeof header, shape, ndim);
        if (!hl)
            return ws_errf(err, "%s: shape too long for a .npy header", path);
        c[n++] = (chunk){header, hl};
    }
    /* float32 little-endian: the in-memory layout on the little-endian hosts we build for */
    c[n++] = (chunk){data, bytes};
    return write_chunks_atomic(path, c, n, err);
}

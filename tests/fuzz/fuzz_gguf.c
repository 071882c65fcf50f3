/* fuzz_gguf.c - libFuzzer harness for the GGUF reader (src/gguf/read.c).
 *
 * The reader opens a path, so each input is written to a memory file
 * (memfd_create) and opened as /proc/self/fd/N. When the header validates,
 * every readable tensor is read whole (up to FUZZ_MAX_READ bytes) and a few
 * metadata keys are looked up; ws_gguf_read must not fail on a tensor the
 * reader listed as readable and inside the file.
 *
 * Built by `make fuzz` (clang, libFuzzer) and `make fuzz-replay` (tests/fuzz/replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gguf/gguf.h"

#define FUZZ_MAX_READ ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.gguf", MFD_CLOEXEC);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();

    ws_err err;
    ws_gguf *g = ws_gguf_open(path, &err);
    if (!g)
        return 0;
    char s[256];
    int64_t i64;
    double f64;
    ws_gguf_get_str(g, "general.architecture", s, sizeof s, NULL);
    ws_gguf_get_int(g, "general.alignment", &i64);
    ws_gguf_get_float(g, "whisper.scale", &f64);
    static unsigned char buf[FUZZ_MAX_READ];
    for (size_t i = 0; i < ws_gguf_n_tensors(g); i++) {
        const ws_gguf_tensor *t = ws_gguf_tensor_at(g, i);
        if (ws_gguf_find(g, t->name) == NULL)
            __builtin_trap(); /* a listed name must be found */
        if (t->readable && t->nbytes <= sizeof buf &&
            ws_gguf_read(g, t, 0, buf, t->nbytes, &err))
            __builtin_trap(); /* validated at open, so readable */
    }
    ws_gguf_close(g);
    return 0;
}

/* fuzz_ckpt.c - libFuzzer harness for the checkpoint readers (src/convert/).
 *
 * Each input is written to a file in a private temporary directory and opened
 * with ws_ckpt_open once per format (detected, safetensors, its sharded index,
 * ggml .bin, GGUF). When one opens, every readable tensor of up to
 * FUZZ_MAX_READ bytes is read with ws_ckpt_read, which must succeed: the
 * reader checked at open that it lies inside its file, which has not changed.
 *
 * The index names its shards by path: an input can name any file on the
 * machine. Reading is all it does with them.
 *
 * Built by `make fuzz` (clang, libFuzzer) and `make fuzz-replay` (tests/fuzz/replay.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/ckpt.h"

#define FUZZ_MAX_READ ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *input_path(void)
{
    static char path[600];
    if (!path[0]) {
        char dir[512];
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/ws-fuzz-ckpt-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir))
            abort();
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    }
    return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const ws_ckpt_format formats[] = {WS_CKPT_AUTO, WS_CKPT_SAFETENSORS,
                                             WS_CKPT_SAFETENSORS_INDEX, WS_CKPT_GGML, WS_CKPT_GGUF};
    const char *path = input_path();
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
        abort();
    for (size_t k = 0; k < sizeof formats / sizeof *formats; k++) {
        ws_err err;
        ws_ckpt *c = ws_ckpt_open(path, formats[k], &err);
        if (!c)
            continue;
        static unsigned char buf[FUZZ_MAX_READ];
        const ws_ckpt_tensor *t;
        for (size_t i = 0; (t = ws_ckpt_tensor_at(c, i)) != NULL; i++) {
            if (ws_ckpt_find(c, t->name) == NULL)
                __builtin_trap(); /* a listed name must be found */
            if (t->readable && t->nbytes <= sizeof buf && ws_ckpt_read(t, buf, &err))
                __builtin_trap();
        }
        for (size_t i = 0; ws_ckpt_hparam_at(c, i) != NULL; i++)
            (void)ws_ckpt_hparam_at(c, i)->val;
        ws_ckpt_close(c);
    }
    return 0;
}

/* fuzz_audio.c - libFuzzer harness for the audio reader (src/audio/).
 *
 * Arbitrary bytes go through ws_audio_load_memory_opts, the path every input
 * takes after its bytes are read: container checks, libsndfile, libmpg123,
 * channel averaging and resampling. Small caps keep each run cheap, and a
 * reserve callback that refuses more than FUZZ_BUDGET bytes exercises the
 * refusal path. Beyond crashes, hangs and leaks (the sanitizers and libFuzzer's
 * -timeout), it traps when the loader breaks its contract: a message that is not
 * one line starting with the name, samples with no buffer, or a sample that is
 * not finite.
 *
 * Built by `make fuzz` (clang, libFuzzer) and `make fuzz-replay` (tests/fuzz/replay.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "audio/audio.h"

#define FUZZ_BUDGET ((size_t)64 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int budget(void *ctx, size_t decoder_bytes, size_t samples_16k, ws_err *err)
{
    if (decoder_bytes > FUZZ_BUDGET)
        return ws_errf(err, "fuzz: %zu bytes over the budget", decoder_bytes);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ws_audio_opts o = {.max_samples = (size_t)1 << 21, .max_stream_bytes = (size_t)1 << 20,
                       .reserve = budget};
    ws_audio a;
    ws_err err = {{0}};
    if (ws_audio_load_memory_opts(&a, data, size, "fuzz", &o, &err)) {
        if (strncmp(err.msg, "fuzz: ", 6) || strchr(err.msg, '\n') || a.x || a.n)
            __builtin_trap();
        return 0;
    }
    if ((a.n > 0) != (a.x != NULL) || a.n > o.max_samples)
        __builtin_trap();
    for (size_t i = 0; i < a.n; i++)
        if (!isfinite(a.x[i]))
            __builtin_trap();
    ws_audio_free(&a);
    return 0;
}

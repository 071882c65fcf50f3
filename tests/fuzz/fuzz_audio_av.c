/* fuzz_audio_av.c - libFuzzer harness for FFmpeg's decoder (src/audio/libav.c) and
 * segments.
 *
 * The first byte chooses how the rest is read: bit 0 --decode openai (every input goes
 * to FFmpeg's libraries), bit 1 a segment whose start (byte 1, in 1/16 s) and duration
 * (byte 2, in 1/32 s; 0: to the end) follow. The rest is the file, through
 * ws_audio_load_memory_opts with the caps and the refusing reserve callback of
 * fuzz_audio.c. (fuzz_audio.c's inputs reach FFmpeg too, in the default mode, when
 * libsndfile does not know them.) It traps when the loader breaks its contract: a
 * message that is not one line starting with the name, samples with no buffer, a sample
 * that is not finite, more samples than the cap or the segment allows.
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
    (void)ctx, (void)samples_16k;
    if (decoder_bytes > FUZZ_BUDGET)
        return ws_errf(err, "fuzz: %zu bytes over the budget", decoder_bytes);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ws_audio_opts o = {.max_samples = (size_t)1 << 21, .max_stream_bytes = (size_t)1 << 20,
                       .reserve = budget};
    const uint8_t mode = data[0];
    size_t skip = 1;
    o.decode = mode & 1 ? WS_DECODE_OPENAI : WS_DECODE_DEFAULT;
    if (mode & 2) {
        if (size < 3)
            return 0;
        o.start_s = data[1] / 16.0;
        o.duration_s = data[2] / 32.0;
        skip = 3;
    }
    ws_audio a;
    ws_err err = {{0}};
    if (ws_audio_load_memory_opts(&a, data + skip, size - skip, "fuzz", &o, &err)) {
        if (strncmp(err.msg, "fuzz: ", 6) || strchr(err.msg, '\n') || a.x || a.n)
            __builtin_trap();
        return 0;
    }
    if ((a.n > 0) != (a.x != NULL) || a.n > o.max_samples)
        __builtin_trap();
    /* a segment gives at most its duration (and one sample of rounding) */
    if (o.duration_s > 0 && (double)a.n > o.duration_s * WS_SAMPLE_RATE + 1)
        __builtin_trap();
    for (size_t i = 0; i < a.n; i++)
        if (!isfinite(a.x[i]))
            __builtin_trap();
    ws_audio_free(&a);
    return 0;
}

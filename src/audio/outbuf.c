/* outbuf.c - the 16 kHz output, grown under the caller's reservation.
 *
 * ws_audio_opts.reserve (audio.h) is asked before the output grows, with the
 * peak bytes the decoder will hold: the output's capacity x 4 bytes, plus the
 * bytes held besides it (a stream's buffer) and the read, mono and resampler
 * buffers (overhead); sums that overflow are given as SIZE_MAX. The output
 * grows by half its capacity, at least GROW_BYTES at a time, so the callback is
 * asked at most that often; a buffer sized from the header stops at its length
 * plus one spare slot. A refusal fails the load with the callback's message as
 * is (load_opts.reserve_failed).
 *
 * Tests: tests/test_audio.c (audio.reserve_*, audio.unknown_length_reserves_
 * growing_amounts_as_it_goes, audio.stream_bytes_are_reserved_as_they_are_
 * buffered, audio.long_file_grows_its_buffer_past_the_first_allocation);
 * fuzzed by tests/fuzz/fuzz_audio.c.
 */
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>

int ws_audio_ask_reserve(load_opts *o, size_t held, size_t samples, size_t overhead,
                         size_t samples_16k, ws_err *err)
{
    if (!o->reserve)
        return 0;
    size_t bytes;
    if (ws_mul_size(samples, sizeof(float), &bytes) || ws_add_size(bytes, held, &bytes) ||
        ws_add_size(bytes, overhead, &bytes))
        bytes = SIZE_MAX;
    if (o->reserve(o->reserve_ctx, bytes, samples_16k, err)) {
        o->reserve_failed = 1;
        return -1;
    }
    return 0;
}

/* Floats allocated past cap: libsoxr 0.1.3 may read a sample or two past the output length it
 * is given (valgrind: an 8-byte read 4 bytes past a 4-sample buffer, flushing an RF64 file of
 * 1.06 MHz to 16 kHz; at a page's end that read faults). The slack is never written. */
#define OUT_SLACK 8

/* Makes room for `need` samples (and OUT_SLACK more, unused). */
int ws_audio_out_grow(outbuf *b, size_t need, ws_err *err)
{
    if (need <= b->cap)
        return 0;
    size_t step = b->cap / 2 > GROW_BYTES / sizeof(float) ? b->cap / 2 : GROW_BYTES / sizeof(float);
    size_t ncap = b->cap + step, bytes;
    if (b->sized && need <= b->want + 1 && ncap > b->want + 1)
        ncap = b->want + 1; /* the spare slot catches a resampler that gives too many */
    if (ncap < need)
        ncap = need;
    if (ncap > b->reserved) {
        if (ws_audio_ask_reserve(b->o, b->held, ncap, b->overhead, ncap, err))
            return -1;
        b->reserved = ncap;
    }
    float *ny;
    if (ncap > SIZE_MAX - OUT_SLACK || ws_mul_size(ncap + OUT_SLACK, sizeof *ny, &bytes) ||
        !(ny = realloc(b->y, bytes)))
        return ws_errf(err, "%s: out of memory for %zu samples", b->o->name, ncap);
    b->y = ny;
    b->cap = ncap;
    return 0;
}

/* gpu_mel.c - the GPU log-Mel (gpu_mel.h): loads ptx_mel.c's module through the device
 * runtime (gpu.c's module cache), uploads its tables and enqueues its kernels on the
 * caller's stream.
 *
 * Tables (device, owned): twiddles [102][4][112] float64 (ws_mel_twiddles), Hann [400] float64,
 * bands [n_mels] of {lo, len, off} int32 (the nonzero bins of each filter row, from the first
 * to the last nonzero) and their weights packed band by band, float64.
 * Scratch (the caller's): L [total_frames][n_mels] float32, then at a 256-byte boundary one
 * u32 max image per item (zeroed by the enqueue).
 * Per enqueue: memset keys; ws_mel_frames over ceil(total/16) blocks; ws_mel_write over
 * ceil(total/32) blocks. Each launch's arguments are filled by the index enum of its
 * kernel's parameter table (ptx_params.h, the table ptx_mel.c declared the .entry from)
 * and checked against it (ws_kargs_check). Tested by tests/test_gpu_mel.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_mel.h"
#include "ptx/ptx_mel.h"
#include "ptx/ptx_params.h"

struct ws_gpu_mel {
    ws_gpu *g;
    const ws_cu *cu;      /* &g->cu */
    int n_mels;
    wscu_module mod;
    wscu_function frames, write, f16;
    wscu_devptr tw, hann, band, wts;
};

_Static_assert(sizeof(ws_gpu_mel_item) == WS_MEL_ITEM_BYTES, "the kernels' item layout");

void ws_gpu_mel_free(ws_gpu_mel *m)
{
    if (!m)
        return;
    const ws_cu *cu = m->cu;
    if (m->g) {
        cu->CtxSetCurrent(m->g->ctx);
        wscu_devptr bufs[] = { m->tw, m->hann, m->band, m->wts };
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            if (bufs[i])
                cu->MemFree(bufs[i]);
    }
    free(m);
}

/* *dst = a new device copy of n bytes at src, through stream s (waited for) */
static int upload(const ws_cu *cu, wscu_stream s, wscu_devptr *dst, const void *src, size_t n,
                  ws_err *err)
{
    CU_TRY(cu, MemAlloc(dst, n), err);
    CU_TRY(cu, MemcpyHtoDAsync(*dst, src, n, s), err);
    CU_TRY(cu, StreamSynchronize(s), err);
    return 0;
cleanup:
    return -1;
}

ws_gpu_mel *ws_gpu_mel_new(ws_gpu *g, int n_mels, const double *filters, ws_err *err)
{
    if (n_mels != 80 && n_mels != 128)
        return ws_errf(err, "the GPU log-Mel takes 80 or 128 bands, not %d", n_mels), NULL;
    if (!g || !filters)
        return ws_errf(err, "ws_gpu_mel_new: %s is NULL", g ? "filters" : "g"), NULL;
    const ws_cu *cu = &g->cu;
    ws_gpu_mel *m = calloc(1, sizeof *m);
    double *tw = malloc(sizeof(double) * WS_MEL_M * 4 * WS_MEL_K);
    double *wts = malloc(sizeof(double) * (size_t)n_mels * 201);
    int32_t *band = malloc(sizeof(int32_t) * 3 * (size_t)n_mels);
    double hann[400];
    char *ptx = NULL;
    wscu_stream s = NULL;
    if (!m || !tw || !wts || !band) {
        ws_errf(err, "out of memory");
        goto cleanup;
    }
    m->g = g;
    m->cu = cu;
    m->n_mels = n_mels;
    ptx = ws_mel_emit(n_mels, g->cc_major, g->cc_minor, err);
    if (!ptx)
        goto cleanup;
    char name[32];
    snprintf(name, sizeof name, "ws_mel_%d", n_mels);
    if (ws_gpu_module(g, name, ptx, &m->mod, err))
        goto cleanup;
    CU_TRY(cu, ModuleGetFunction(&m->frames, m->mod, "ws_mel_frames"), err);
    CU_TRY(cu, ModuleGetFunction(&m->write, m->mod, "ws_mel_write"), err);
    CU_TRY(cu, ModuleGetFunction(&m->f16, m->mod, "ws_mel_f16"), err);
    CU_TRY(cu, FuncSetAttribute(m->frames, WS_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                WS_MEL_FRAMES_SMEM), err);

    ws_mel_twiddles(tw);
    ws_mel_hann(hann);
    int off = 0;
    for (int b = 0; b < n_mels; b++) {
        const double *row = filters + (size_t)b * 201;
        int lo = 0, hi = 201;
        while (lo < 201 && row[lo] == 0.0)
            lo++;
        while (hi > lo && row[hi - 1] == 0.0)
            hi--;
        band[3 * b] = lo < 201 ? lo : 0;
        band[3 * b + 1] = hi - lo;
        band[3 * b + 2] = off;
        for (int f = lo; f < hi; f++)
            wts[off++] = row[f];
    }
    if (ws_gpu_stream_new(g, &s, err))
        goto cleanup;
    if (upload(cu, s, &m->tw, tw, sizeof(double) * WS_MEL_M * 4 * WS_MEL_K, err) ||
        upload(cu, s, &m->hann, hann, sizeof hann, err) ||
        upload(cu, s, &m->band, band, sizeof(int32_t) * 3 * (size_t)n_mels, err) ||
        upload(cu, s, &m->wts, wts, sizeof(double) * (size_t)(off ? off : 1), err))
        goto cleanup;
    ws_gpu_stream_free(g, s);
    free(ptx);
    free(tw);
    free(wts);
    free(band);
    return m;
cleanup:
    ws_gpu_stream_free(g, s);
    free(ptx);
    free(tw);
    free(wts);
    free(band);
    ws_gpu_mel_free(m);
    return NULL;
}

static size_t keys_offset(int n_mels, uint64_t total_frames)
{
    return ((size_t)total_frames * (size_t)n_mels * 4 + 255) / 256 * 256;
}

size_t ws_gpu_mel_scratch_bytes(int n_mels, uint64_t total_frames, int n_items)
{
    return keys_offset(n_mels, total_frames) + 4 * (size_t)(n_items > 0 ? n_items : 0);
}

int ws_gpu_mel_enqueue(ws_gpu_mel *m, wscu_stream s, wscu_devptr x, wscu_devptr items,
                       int n_items, uint64_t total_frames, wscu_devptr scratch, wscu_devptr out,
                       ws_err *err)
{
    const ws_cu *cu = m->cu;
    if (n_items < 1 || total_frames == 0)
        return n_items < 0 ? ws_errf(err, "ws_gpu_mel_enqueue: %d items", n_items) : 0;
    const uint64_t fblocks = (total_frames + WS_MEL_FB - 1) / WS_MEL_FB;
    const uint64_t wblocks = (total_frames + WS_MEL_WFRAMES - 1) / WS_MEL_WFRAMES;
    if (fblocks > 0x7fffffffu)
        return ws_errf(err, "ws_gpu_mel_enqueue: %llu frames are too many for one batch",
                       (unsigned long long)total_frames);
    wscu_devptr keys = scratch + keys_offset(m->n_mels, total_frames);
    uint32_t ni = (uint32_t)n_items;
    uint64_t total = total_frames;
    ws_kargs fa, wa;
    ws_kargs_init(&fa, WS_PARAMS_MEL_FRAMES);
    WS_KARG(&fa, WS_MFR_X, x), WS_KARG(&fa, WS_MFR_ITEMS, items), WS_KARG(&fa, WS_MFR_N_ITEMS, ni);
    WS_KARG(&fa, WS_MFR_TOTAL, total), WS_KARG(&fa, WS_MFR_TW, m->tw);
    WS_KARG(&fa, WS_MFR_HANN, m->hann), WS_KARG(&fa, WS_MFR_BAND, m->band);
    WS_KARG(&fa, WS_MFR_WTS, m->wts), WS_KARG(&fa, WS_MFR_L, scratch);
    WS_KARG(&fa, WS_MFR_KEYS, keys);
    ws_kargs_init(&wa, WS_PARAMS_MEL_WRITE);
    WS_KARG(&wa, WS_MWR_ITEMS, items), WS_KARG(&wa, WS_MWR_N_ITEMS, ni);
    WS_KARG(&wa, WS_MWR_TOTAL, total), WS_KARG(&wa, WS_MWR_L, scratch);
    WS_KARG(&wa, WS_MWR_KEYS, keys), WS_KARG(&wa, WS_MWR_OUT, out);
    if (ws_kargs_check(&fa, "ws_gpu_mel_enqueue", err) ||
        ws_kargs_check(&wa, "ws_gpu_mel_enqueue", err))
        return -1;
    CU_TRY(cu, MemsetD32Async(keys, 0, (size_t)n_items, s), err);
    CU_TRY(cu, LaunchKernel(m->frames, (unsigned)fblocks, 1, 1, WS_MEL_THREADS, 1, 1,
                            WS_MEL_FRAMES_SMEM, s, fa.v, NULL), err);
    CU_TRY(cu, LaunchKernel(m->write, (unsigned)wblocks, 1, 1, WS_MEL_WTHREADS, 1, 1, 0, s, wa.v,
                            NULL), err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_mel_to_f16(ws_gpu_mel *m, wscu_stream s, wscu_devptr src, wscu_devptr dst,
                      uint64_t count, ws_err *err)
{
    const ws_cu *cu = m->cu;
    if (count == 0)
        return 0;
    uint64_t blocks = (count + WS_MEL_F16_THREADS - 1) / WS_MEL_F16_THREADS;
    if (blocks > 65536) /* grid-stride beyond */
        blocks = 65536;
    ws_kargs a;
    ws_kargs_init(&a, WS_PARAMS_MEL_F16);
    WS_KARG(&a, WS_MF16_SRC, src), WS_KARG(&a, WS_MF16_DST, dst), WS_KARG(&a, WS_MF16_COUNT, count);
    if (ws_kargs_check(&a, "ws_gpu_mel_to_f16", err))
        return -1;
    CU_TRY(cu, LaunchKernel(m->f16, (unsigned)blocks, 1, 1, WS_MEL_F16_THREADS, 1, 1, 0, s, a.v,
                            NULL), err);
    return 0;
cleanup:
    return -1;
}

int ws_gpu_mel_dump_ptx(int n_mels, const char *dir, ws_err *err)
{
    if (!dir || !*dir)
        return ws_errf(err, "ws_gpu_mel_dump_ptx: dir is %s", dir ? "empty" : "NULL");
    char *ptx = ws_mel_emit(n_mels, 9, 0, err);
    if (!ptx)
        return -1;
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/ws_mel_%d.ptx", dir, n_mels);
    if (n < 0 || (size_t)n >= sizeof path) {
        free(ptx);
        return ws_errf(err, "ws_gpu_mel_dump_ptx: path under %s is too long", dir);
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        free(ptx);
        return ws_errf(err, "cannot write %s", path);
    }
    size_t len = strlen(ptx);
    int bad = fwrite(ptx, 1, len, f) != len;
    bad |= fclose(f) != 0;
    free(ptx);
    if (bad)
        return ws_errf(err, "cannot write %s", path);
    return 0;
}

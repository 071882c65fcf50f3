/* gpu_batch.c - many inputs per launch, overlapped (see gpu_batch.h).
 *
 * Per submitted slot, on the slot's stream:
 *   upload   the items table; each input from its staged slabs (DMA) or from the
 *            slot's pinned input buffer (copied there by the submitting thread)
 *   log-Mel  samples -> windows [W][n_mels][T] f32 (gpu_mel.h), with mel_on_gpu
 *   stem     windows -> [W][T2][d] f32 (ws_gpu_enqueue_fixed on the slot's own lane of
 *            the pair's plans: slot s is lane s + 1), with stem
 *   f16      the result converted (cvt.rn.f16.f32), with out_f16
 *   download the result into the slot's pinned result buffer, one copy
 *   event    recorded last: done/wait look at it
 * Device and pinned buffers grow to the largest batch a slot has held and stay.
 * Staging slabs are 2 MiB (a 30 s input's samples fit one), pinned 16 at a time.
 * Runs on a ws_gpu of the device runtime (gpu.c): the pair's, or one of its own; streams,
 * events and pinned memory come from the runtime.
 */
#include "gpu_batch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "gpu_internal.h"
#include "gpu_mel.h"
#include "gpu_runtime.h"
#include "trace.h"

#define SLAB_BYTES ((size_t)2 << 20)
#define UPLOAD_PIECE ((size_t)512 << 10)
#define SLABS_PER_CHUNK 16
#define MAX_WIN_FRAMES 3000 /* a window of 30 s; --no-pad inputs longer go alone */
#define HOP 160
#define CHUNK_SAMPLES 480000

typedef struct {
    ws_gpu_input in;
    size_t in_bytes;   /* its upload */
    size_t res_off;    /* bytes into the result */
    size_t res_bytes;
} slot_item;

typedef struct {
    wscu_devptr p;
    size_t cap;
} dbuf;

typedef struct {
    wscu_stream st;
    wscu_event ev0, ev1;
    slot_item *items;
    int n, cap_items;
    int windows, win_frames;
    dbuf in, tab, scratch, mel, h1, out, out16;
    void *h_in, *h_res;
    ws_gpu_mel_item *h_tab;
    size_t h_in_cap, h_res_cap, h_tab_cap;
    double ms;
    int used; /* a batch was enqueued: ev1 follows its last work */
} slot;

struct ws_gpu_batcher {
    ws_gpu_batch_opts o;
    ws_gpu_pair *g;
    ws_gpu *gpu;        /* the pair's, or (no pair) the batcher's own */
    int own_gpu;
    ws_cu *cu;          /* &gpu->cu */
    wscu_context ctx;   /* gpu->ctx */
    int d;
    ws_gpu_mel *mel;
    slot *slots;
    wscu_stream solo;   /* ws_gpu_mel_alone's own stream */
    /* one input alone (ws_gpu_mel_alone, ws_gpu_embed_alone): buffers kept from call to
     * call (a cuMemFree waits for the whole device), and the event after the last use */
    dbuf a_x, a_tab, a_scratch, a_mel, a_h1, a_out;
    wscu_event a_ev;
    int a_used;
    double alloc_ms, copy_ms, enqueue_ms; /* ws_gpu_batch_times */
    pthread_mutex_t mu; /* the slabs */
    void **free_slabs;
    int n_free, n_slabs, max_slabs;
    void **chunks;
    int n_chunks;
    char name[200];
};

static int elem_bytes(const ws_gpu_batcher *b)
{
    return b->o.out_f16 ? 2 : 4;
}

const char *ws_gpu_batcher_device(const ws_gpu_batcher *b)
{
    return b ? b->name : "";
}

int ws_gpu_batch_slots(const ws_gpu_batcher *b)
{
    return b->o.slots;
}

/* max_windows shrinks on the calling thread while workers read it (ws_gpu_batch_fits) */
int ws_gpu_batch_max_windows(const ws_gpu_batcher *b)
{
    return __atomic_load_n(&b->o.max_windows, __ATOMIC_RELAXED);
}

/* Bytes of the input the batch uploads (samples or log-Mel, float32). */
static size_t input_bytes(const ws_gpu_batcher *b, const ws_gpu_input *in)
{
    if (b->o.mel_on_gpu)
        return (size_t)in->n * sizeof(float);
    return (size_t)in->n_win * b->o.n_mels * in->win_frames * sizeof(float);
}

int ws_gpu_batch_fits(const ws_gpu_batcher *b, const ws_gpu_input *in)
{
    return in->n_win >= 1 && in->n_win <= ws_gpu_batch_max_windows(b) && in->win_frames >= 1 &&
           in->win_frames <= MAX_WIN_FRAMES;
}

static size_t result_bytes(const ws_gpu_batcher *b, int n_win, int T)
{
    const size_t per = b->o.stem ? (size_t)((T - 1) / 2 + 1) * b->d : (size_t)b->o.n_mels * T;
    return (size_t)n_win * per * elem_bytes(b);
}

/* --- staging slabs ------------------------------------------------------------------ */

void **ws_gpu_stage(ws_gpu_batcher *b, size_t bytes, int *n_slabs)
{
    const int k = (int)((bytes + SLAB_BYTES - 1) / SLAB_BYTES);
    void **out = NULL;
    pthread_mutex_lock(&b->mu);
    if (k < 1 || k > b->max_slabs) {
        pthread_mutex_unlock(&b->mu);
        return NULL;
    }
    /* Pinning takes long (page by page): done outside the lock, the chunk counted first. */
    while (b->n_free < k && b->n_slabs + SLABS_PER_CHUNK <= b->max_slabs) {
        void *chunk = NULL, **grown;
        b->n_slabs += SLABS_PER_CHUNK;
        pthread_mutex_unlock(&b->mu);
        int ok = !ws_gpu_pinned_alloc(b->gpu, SLAB_BYTES * SLABS_PER_CHUNK, &chunk, NULL);
        pthread_mutex_lock(&b->mu);
        grown = ok ? realloc(b->chunks, (size_t)(b->n_chunks + 1) * sizeof *grown) : NULL;
        if (!grown) {
            ws_gpu_pinned_free(b->gpu, chunk);
            b->n_slabs -= SLABS_PER_CHUNK;
            b->max_slabs = b->n_slabs; /* pinning fails: no more tries */
            break;
        }
        b->chunks = grown;
        b->chunks[b->n_chunks++] = chunk;
        for (int i = 0; i < SLABS_PER_CHUNK; i++)
            b->free_slabs[b->n_free++] = (char *)chunk + (size_t)i * SLAB_BYTES;
    }
    if (b->n_free >= k && (out = malloc((size_t)k * sizeof *out))) {
        for (int i = 0; i < k; i++)
            out[i] = b->free_slabs[--b->n_free];
        *n_slabs = k;
    }
    pthread_mutex_unlock(&b->mu);
    return out;
}

void ws_gpu_stage_copy(const ws_gpu_batcher *b, void *const *slabs, const void *src, size_t bytes)
{
    (void)b;
    for (size_t off = 0, i = 0; off < bytes; off += SLAB_BYTES, i++)
        memcpy(slabs[i], (const char *)src + off, bytes - off < SLAB_BYTES ? bytes - off : SLAB_BYTES);
}

void ws_gpu_stage_read(const ws_gpu_batcher *b, void *const *slabs, void *dst, size_t bytes)
{
    (void)b;
    for (size_t off = 0, i = 0; off < bytes; off += SLAB_BYTES, i++)
        memcpy((char *)dst + off, slabs[i], bytes - off < SLAB_BYTES ? bytes - off : SLAB_BYTES);
}

void ws_gpu_unstage(ws_gpu_batcher *b, void **slabs, int n_slabs)
{
    if (!slabs)
        return;
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < n_slabs; i++)
        b->free_slabs[b->n_free++] = slabs[i];
    pthread_mutex_unlock(&b->mu);
    free(slabs);
}

/* --- life ------------------------------------------------------------------------------ */

static void free_dbuf(ws_cu *cu, dbuf *d)
{
    if (d->p)
        cu->MemFree(d->p);
    d->p = 0;
    d->cap = 0;
}

static void free_slot_device(ws_gpu_batcher *b, slot *s)
{
    dbuf *all[] = { &s->in, &s->tab, &s->scratch, &s->mel, &s->h1, &s->out, &s->out16 };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free_dbuf(b->cu, all[i]);
}

void ws_gpu_batcher_free(ws_gpu_batcher *b)
{
    if (!b)
        return;
    if (b->gpu) {
        ws_gpu *g = b->gpu;
        ws_cu *cu = &g->cu;
        cu->CtxSetCurrent(g->ctx);
        for (int i = 0; b->slots && i < b->o.slots; i++) {
            slot *s = &b->slots[i];
            if (s->st) /* a submission that failed part-way left work here */
                cu->StreamSynchronize(s->st);
            if (s->used) /* its last batch may be on a caller's stream */
                cu->EventSynchronize(s->ev1);
            free_slot_device(b, s);
            ws_gpu_pinned_free(g, s->h_in);
            ws_gpu_pinned_free(g, s->h_res);
            ws_gpu_pinned_free(g, s->h_tab);
            ws_gpu_event_free(g, s->ev0);
            ws_gpu_event_free(g, s->ev1);
            ws_gpu_stream_free(g, s->st);
            free(s->items);
        }
        if (b->a_used)
            cu->EventSynchronize(b->a_ev);
        dbuf *alone[] = {&b->a_x, &b->a_tab, &b->a_scratch, &b->a_mel, &b->a_h1, &b->a_out};
        for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++)
            free_dbuf(cu, alone[i]);
        ws_gpu_event_free(g, b->a_ev);
        ws_gpu_stream_free(g, b->solo);
        for (int i = 0; i < b->n_chunks; i++)
            ws_gpu_pinned_free(g, b->chunks[i]);
        ws_gpu_mel_free(b->mel);
        if (b->own_gpu)
            ws_gpu_close(g);
    }
    free(b->slots);
    free(b->chunks);
    free(b->free_slabs);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

ws_gpu_batcher *ws_gpu_batcher_new(ws_gpu_pair *g, int ordinal, const ws_gpu_batch_opts *o,
                                   ws_err *err)
{
    if (o->slots < 1 || o->max_windows < 1 || (o->stem && !g) ||
        ((o->mel_on_gpu || o->out_f16) && !o->filters) || (o->n_mels != 80 && o->n_mels != 128))
        return ws_errf(err, "ws_gpu_batcher_new: bad options"), NULL;
    if (o->stem && o->slots > WS_GPU_LANES - 2) /* a lane of the pair's plans a slot, and one
                                                 * for ws_gpu_embed_alone */
        return ws_errf(err, "ws_gpu_batcher_new: %d slots, the stem has lanes for %d", o->slots,
                       WS_GPU_LANES - 2), NULL;
    ws_gpu_batcher *b = calloc(1, sizeof *b);
    if (!b)
        return ws_errf(err, "out of memory"), NULL;
    pthread_mutex_init(&b->mu, NULL);
    b->o = *o;
    b->g = g;
    if (g) {
        if (ws_gpu_pair_dims(g, &b->d) != o->n_mels) {
            ws_errf(err, "ws_gpu_batcher_new: the stem takes %d mel bands, not %d",
                    ws_gpu_pair_dims(g, &b->d), o->n_mels);
            goto fail;
        }
        b->gpu = ws_gpu_pair_gpu(g);
        snprintf(b->name, sizeof b->name, "%s", ws_gpu_device_name(g));
    } else {
        /* the driver, device `ordinal` and its primary context */
        if (!(b->gpu = ws_gpu_open(ordinal, err)))
            goto fail;
        b->own_gpu = 1;
        snprintf(b->name, sizeof b->name, "%s, sm_%d%d, driver %d.%d", b->gpu->name,
                 b->gpu->cc_major, b->gpu->cc_minor, b->gpu->cu.version / 1000,
                 b->gpu->cu.version % 1000 / 10);
    }
    ws_cu *cu = b->cu = &b->gpu->cu;
    b->ctx = b->gpu->ctx;
    CU_TRY(cu, CtxSetCurrent(b->ctx), err);
    if ((o->mel_on_gpu || o->out_f16) &&
        !(b->mel = ws_gpu_mel_new(b->gpu, o->n_mels, o->filters, err)))
        goto fail;
    b->slots = calloc((size_t)o->slots, sizeof *b->slots);
    b->max_slabs = (int)(o->stage_bytes / SLAB_BYTES);
    b->free_slabs = malloc(((size_t)b->max_slabs + 1) * sizeof *b->free_slabs);
    if (!b->slots || !b->free_slabs) {
        ws_errf(err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < o->slots; i++) {
        slot *s = &b->slots[i];
        if (ws_gpu_stream_new(b->gpu, &s->st, err) ||
            ws_gpu_event_new(b->gpu, WS_CU_EVENT_DEFAULT, &s->ev0, err) ||
            ws_gpu_event_new(b->gpu, WS_CU_EVENT_BLOCKING_SYNC, &s->ev1, err))
            goto fail;
    }
    if (ws_gpu_stream_new(b->gpu, &b->solo, err) ||
        ws_gpu_event_new(b->gpu, WS_CU_EVENT_BLOCKING_SYNC, &b->a_ev, err))
        goto fail;
    return b;
cleanup:
fail:
    ws_gpu_batcher_free(b);
    return NULL;
}

/* --- filling and running a slot -------------------------------------------------------- */

void ws_gpu_batch_clear(ws_gpu_batcher *b, int s)
{
    b->slots[s].n = 0;
    b->slots[s].windows = 0;
    b->slots[s].win_frames = 0;
}

int ws_gpu_batch_count(const ws_gpu_batcher *b, int s, int *windows)
{
    if (windows)
        *windows = b->slots[s].windows;
    return b->slots[s].n;
}

int ws_gpu_batch_add(ws_gpu_batcher *b, int s, const ws_gpu_input *in)
{
    slot *sl = &b->slots[s];
    if (!ws_gpu_batch_fits(b, in) || sl->windows + in->n_win > ws_gpu_batch_max_windows(b) ||
        (sl->n && in->win_frames != sl->win_frames))
        return 0;
    if (sl->n == sl->cap_items) {
        int cap = sl->cap_items ? 2 * sl->cap_items : 16;
        slot_item *grown = realloc(sl->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return 0;
        sl->items = grown;
        sl->cap_items = cap;
    }
    slot_item *it = &sl->items[sl->n++];
    it->in = *in;
    it->in_bytes = input_bytes(b, in);
    it->res_bytes = result_bytes(b, in->n_win, in->win_frames);
    sl->windows += in->n_win;
    sl->win_frames = in->win_frames;
    return 1;
}

/* Grows a device buffer; 1 when the device is out of memory, -1 on another failure. */
static int grow(ws_gpu_batcher *b, dbuf *d, size_t n, ws_err *err)
{
    if (d->cap >= n)
        return 0;
    free_dbuf(b->cu, d);
    wscu_result r = b->cu->MemAlloc(&d->p, n ? n : 4);
    if (r == 2 /* CUDA_ERROR_OUT_OF_MEMORY */)
        return 1;
    if (r != WS_CUDA_SUCCESS)
        return ws_cu_fail(b->cu, r, "cuMemAlloc", __FILE__, __LINE__, err);
    d->cap = n;
    return 0;
}

static int grow_host(ws_gpu_batcher *b, void **p, size_t *cap, size_t n, ws_err *err)
{
    if (*cap >= n)
        return 0;
    ws_gpu_pinned_free(b->gpu, *p);
    *p = NULL;
    *cap = 0;
    if (ws_gpu_pinned_alloc(b->gpu, n ? n : 4, p, err))
        return -1;
    *cap = n;
    return 0;
}

/* Input [k*SLAB, ...) of a staged input to dst on stream st. */
static int upload_input(ws_gpu_batcher *b, slot *sl, wscu_stream st, const slot_item *it,
                        wscu_devptr dst, size_t *h_off, ws_err *err)
{
    ws_cu *cu = b->cu;
    const size_t bytes = it->in_bytes;
    if (!bytes)
        return 0;
    if (it->in.slabs) {
        for (size_t off = 0, i = 0; off < bytes; off += SLAB_BYTES, i++) {
            size_t k = bytes - off < SLAB_BYTES ? bytes - off : SLAB_BYTES;
            CU_TRY(cu, MemcpyHtoDAsync(dst + off, it->in.slabs[i], k, st), err);
        }
        return 0;
    }
    const void *src = b->o.mel_on_gpu ? (const void *)it->in.x : (const void *)it->in.mel;
    double t0 = ws_now();
    /* into the pinned buffer a piece at a time, each piece's DMA started as soon as it is
     * there: the copy engine moves one piece while this thread copies the next */
    for (size_t off = 0; off < bytes; off += UPLOAD_PIECE) {
        const size_t k = bytes - off < UPLOAD_PIECE ? bytes - off : UPLOAD_PIECE;
        char *h = (char *)sl->h_in + *h_off + off;
        memcpy(h, (const char *)src + off, k);
        CU_TRY(cu, MemcpyHtoDAsync(dst + off, h, k, st), err);
    }
    b->copy_ms += 1e3 * (ws_now() - t0);
    *h_off += bytes;
    return 0;
cleanup:
    return -1;
}

int ws_gpu_batch_submit(ws_gpu_batcher *b, int s, const char *label, ws_err *err)
{
    return ws_gpu_batch_submit_to(b, s, label, NULL, NULL, NULL, err);
}

int ws_gpu_batch_submit_to(ws_gpu_batcher *b, int s, const char *label, wscu_stream stream,
                           const wscu_devptr *dst, void *const *host, ws_err *err)
{
    ws_cu *cu = b->cu;
    slot *sl = &b->slots[s];
    const wscu_stream st = stream ? stream : sl->st;
    if (sl->n < 1)
        return ws_errf(err, "ws_gpu_batch_submit: an empty batch");
    WS_RANGE_PUSH(label ? label : "batch");
    int rc = -1;
    const int W = sl->windows, T = sl->win_frames, nm = b->o.n_mels;
    size_t in_bytes = 0, copy_bytes = 0, res_bytes = 0;
    uint64_t frames = 0;
    for (int i = 0; i < sl->n; i++) {
        slot_item *it = &sl->items[i];
        it->res_off = res_bytes;
        res_bytes += it->res_bytes;
        in_bytes += it->in_bytes;
        copy_bytes += it->in.slabs ? 0 : it->in_bytes;
        frames += it->in.n_frames;
    }
    const size_t mel_bytes = (size_t)W * nm * T * 4;
    size_t h1 = 0, out = 0;
    if (b->o.stem)
        ws_gpu_stem_bytes(b->g, W, T, &h1, &out);
    /* A batch of two windows or more sizes the slot for a full one at once: growing step
     * by step costs a device synchronisation and a re-pinning per step. Bounds of a full
     * slot of Wc windows of 3000 frames: samples < 480160 a window, frames <= 2 x 3000
     * a window + 1 an input (--pad mel0 computes 3000 frames past the audio). */
    const size_t Wc = (size_t)ws_gpu_batch_max_windows(b), F = MAX_WIN_FRAMES;
    int full = W >= 2;
    size_t h1_f = 0, out_f = 0;
    if (b->o.stem && full)
        ws_gpu_stem_bytes(b->g, (int)Wc, (int)F, &h1_f, &out_f);
#define WANT(need, whole) (full && (whole) > (need) ? (whole) : (need))
    const size_t in_f = b->o.mel_on_gpu ? Wc * (CHUNK_SAMPLES + HOP) * 4 : Wc * nm * F * 4;
    const size_t res_f = result_bytes(b, (int)Wc, (int)F);
    double t0 = ws_now();
    CU_TRY(cu, CtxSetCurrent(b->ctx), err);
    int oom;
again:
    oom = grow(b, &sl->in, WANT(in_bytes, in_f), err);
    if (!oom && b->o.mel_on_gpu) {
        oom = grow(b, &sl->tab, WANT((size_t)sl->n, Wc) * sizeof(ws_gpu_mel_item), err);
        if (!oom)
            oom = grow(b, &sl->scratch,
                       WANT(ws_gpu_mel_scratch_bytes(nm, frames, sl->n),
                            ws_gpu_mel_scratch_bytes(nm, 2 * Wc * F + Wc, (int)Wc)), err);
        if (!oom)
            oom = grow(b, &sl->mel, WANT(mel_bytes, Wc * nm * F * 4), err);
    }
    if (!oom && b->o.stem) {
        oom = grow(b, &sl->h1, WANT(h1, h1_f), err);
        if (!oom)
            oom = grow(b, &sl->out, WANT(out, out_f), err);
    }
    if (!oom && b->o.out_f16)
        oom = grow(b, &sl->out16, WANT(res_bytes, res_f), err);
    if (oom < 0)
        goto cleanup;
    if (oom && full) { /* a whole slot did not fit: this batch's own size, then */
        free_slot_device(b, sl);
        full = 0;
        goto again;
    }
    if (oom) { /* smaller batches from now on: this one's windows, halved */
        if (W == 1) {
            ws_errf(err, "out of GPU memory for one window");
            goto cleanup;
        }
        free_slot_device(b, sl);
        __atomic_store_n(&b->o.max_windows, W / 2, __ATOMIC_RELAXED);
        ws_gpu_batch_clear(b, s);
        rc = WS_BATCH_SHRUNK;
        goto cleanup;
    }
    if (grow_host(b, &sl->h_in, &sl->h_in_cap, copy_bytes, err) ||
        (!dst && !host && grow_host(b, &sl->h_res, &sl->h_res_cap, WANT(res_bytes, res_f), err)) ||
        (b->o.mel_on_gpu && grow_host(b, (void **)&sl->h_tab, &sl->h_tab_cap,
                                      WANT((size_t)sl->n, Wc) * sizeof(ws_gpu_mel_item), err)))
        goto cleanup;
#undef WANT
    double t1 = ws_now();
    b->alloc_ms += 1e3 * (t1 - t0);

    CU_TRY(cu, EventRecord(sl->ev0, st), err);
    size_t off = 0, h_off = 0, win = 0;
    frames = 0;
    for (int i = 0; i < sl->n; i++) {
        const slot_item *it = &sl->items[i];
        if (b->o.mel_on_gpu)
            sl->h_tab[i] = (ws_gpu_mel_item){
                .x_off = off / sizeof(float), .n = it->in.n, .n_total = it->in.n_total,
                .frame_off = frames, .out_off = win * nm * T, .n_frames = (uint32_t)it->in.n_frames,
                .content = (uint32_t)it->in.content, .n_win = (uint32_t)it->in.n_win,
                .win_frames = (uint32_t)T};
        if (upload_input(b, sl, st, it, sl->in.p + off, &h_off, err))
            goto cleanup;
        off += it->in_bytes;
        frames += it->in.n_frames;
        win += (size_t)it->in.n_win;
    }
    wscu_devptr melp = sl->in.p, res;
    if (b->o.mel_on_gpu) {
        CU_TRY(cu, MemcpyHtoDAsync(sl->tab.p, sl->h_tab, (size_t)sl->n * sizeof(ws_gpu_mel_item),
                                   st), err);
        if (ws_gpu_mel_enqueue(b->mel, st, sl->in.p, sl->tab.p, sl->n, frames, sl->scratch.p,
                               sl->mel.p, err))
            goto cleanup;
        melp = sl->mel.p;
    }
    res = melp;
    if (b->o.stem) {
        /* the slot's own lane: a plan's scratch is its own, and the slots' streams run at
         * once */
        if (ws_gpu_enqueue_fixed(b->g, s + 1, st, melp, sl->h1.p, sl->out.p, W, T,
                                 b->o.add_pos, err))
            goto cleanup;
        res = sl->out.p;
    }
    if (b->o.out_f16) {
        if (ws_gpu_mel_to_f16(b->mel, st, res, sl->out16.p, res_bytes / 2, err))
            goto cleanup;
        res = sl->out16.p;
    }
    if (dst) /* each input's result into the caller's device buffer */
        for (int i = 0; i < sl->n; i++)
            CU_TRY(cu, MemcpyDtoDAsync(dst[i], res + sl->items[i].res_off, sl->items[i].res_bytes, st),
                   err);
    else if (host) /* or host memory of the caller's: the driver copies through its own
                    * staging in pieces, the DMA and the copy overlapped; into pageable
                    * memory this returns when the copy is done */
        for (int i = 0; i < sl->n; i++)
            CU_TRY(cu, MemcpyDtoHAsync(host[i], res + sl->items[i].res_off, sl->items[i].res_bytes, st),
                   err);
    else
        CU_TRY(cu, MemcpyDtoHAsync(sl->h_res, res, res_bytes, st), err);
    CU_TRY(cu, EventRecord(sl->ev1, st), err);
    sl->used = 1;
    b->enqueue_ms += 1e3 * (ws_now() - t1);
    rc = 0;
cleanup:
    WS_RANGE_POP();
    return rc;
}

int ws_gpu_batch_done(ws_gpu_batcher *b, int s, ws_err *err)
{
    wscu_result r = b->cu->EventQuery(b->slots[s].ev1);
    if (r == WS_CUDA_SUCCESS)
        return 1;
    if (r == WS_CUDA_ERROR_NOT_READY)
        return 0;
    return ws_cu_fail(b->cu, r, "cuEventQuery", __FILE__, __LINE__, err);
}

int ws_gpu_batch_wait(ws_gpu_batcher *b, int s, ws_err *err)
{
    ws_cu *cu = b->cu;
    slot *sl = &b->slots[s];
    float ms = 0;
    CU_TRY(cu, CtxSetCurrent(b->ctx), err);
    CU_TRY(cu, EventSynchronize(sl->ev1), err);
    /* after a submission that failed before its events were recorded there is no time */
    sl->ms = cu->EventElapsedTime(&ms, sl->ev0, sl->ev1) == WS_CUDA_SUCCESS ? ms : 0;
    return 0;
cleanup:
    return -1;
}

const void *ws_gpu_batch_output(const ws_gpu_batcher *b, int s, int i, size_t *bytes)
{
    const slot *sl = &b->slots[s];
    if (i < 0 || i >= sl->n)
        return NULL;
    if (bytes)
        *bytes = sl->items[i].res_bytes;
    return (const char *)sl->h_res + sl->items[i].res_off;
}

void ws_gpu_batch_times(const ws_gpu_batcher *b, double *alloc_ms, double *copy_ms,
                        double *enqueue_ms)
{
    *alloc_ms = b->alloc_ms;
    *copy_ms = b->copy_ms;
    *enqueue_ms = b->enqueue_ms;
}

double ws_gpu_batch_ms(const ws_gpu_batcher *b, int s)
{
    return b->slots[s].ms;
}

/* The log-Mel of one input into b->a_mel on stream st (the kept buffers, grown as needed),
 * after the last call's work on them. 0, or -1 with err. */
static int mel_alone_enqueue(ws_gpu_batcher *b, const ws_gpu_input *in, wscu_stream st, ws_err *err)
{
    ws_cu *cu = b->cu;
    const int nm = b->o.n_mels;
    if (!b->mel || (!in->x && in->n))
        return ws_errf(err, "the log-Mel on the GPU: no log-Mel kernels or no samples");
    const size_t out_bytes = (size_t)in->n_win * nm * in->win_frames * sizeof(float);
    ws_gpu_mel_item it = {.x_off = 0, .n = in->n, .n_total = in->n_total, .frame_off = 0,
                          .out_off = 0, .n_frames = (uint32_t)in->n_frames,
                          .content = (uint32_t)in->content, .n_win = (uint32_t)in->n_win,
                          .win_frames = (uint32_t)in->win_frames};
    CU_TRY(cu, CtxSetCurrent(b->ctx), err);
    if (b->a_used)
        CU_TRY(cu, EventSynchronize(b->a_ev), err);
    int oom = grow(b, &b->a_x, (size_t)in->n * sizeof(float), err);
    if (!oom)
        oom = grow(b, &b->a_tab, sizeof it, err);
    if (!oom)
        oom = grow(b, &b->a_scratch, ws_gpu_mel_scratch_bytes(nm, in->n_frames, 1), err);
    if (!oom)
        oom = grow(b, &b->a_mel, out_bytes, err);
    if (oom) {
        if (oom > 0)
            ws_errf(err, "out of GPU memory for the log-Mel of %llu samples",
                    (unsigned long long)in->n);
        return -1;
    }
    /* from pageable memory: the driver has taken the bytes when the call returns (CUDA's
     * "API synchronization behavior"), so the samples and `it` may go */
    if (in->n)
        CU_TRY(cu, MemcpyHtoDAsync(b->a_x.p, in->x, (size_t)in->n * sizeof(float), st), err);
    CU_TRY(cu, MemcpyHtoDAsync(b->a_tab.p, &it, sizeof it, st), err);
    if (ws_gpu_mel_enqueue(b->mel, st, b->a_x.p, b->a_tab.p, 1, in->n_frames, b->a_scratch.p,
                           b->a_mel.p, err))
        return -1;
    return 0;
cleanup:
    return -1;
}

/* After a synchronous one-input call: buffers past ALONE_KEEP bytes go back to the device
 * (an hour-long --no-pad input would otherwise hold gigabytes the slots then lack). */
#define ALONE_KEEP ((size_t)1 << 30)
static void alone_trim(ws_gpu_batcher *b)
{
    dbuf *all[] = {&b->a_x, &b->a_tab, &b->a_scratch, &b->a_mel, &b->a_h1, &b->a_out};
    size_t held = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        held += all[i]->cap;
    if (held <= ALONE_KEEP)
        return;
    if (b->a_used)
        b->cu->EventSynchronize(b->a_ev);
    b->cu->StreamSynchronize(b->solo);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free_dbuf(b->cu, all[i]);
}

int ws_gpu_mel_alone(ws_gpu_batcher *b, const ws_gpu_input *in, float *mel, ws_err *err)
{
    ws_cu *cu = b->cu;
    const size_t out_bytes = (size_t)in->n_win * b->o.n_mels * in->win_frames * sizeof(float);
    int rc = mel_alone_enqueue(b, in, b->solo, err);
    if (!rc) {
        CU_TRY(cu, MemcpyDtoHAsync(mel, b->a_mel.p, out_bytes, b->solo), err);
        CU_TRY(cu, StreamSynchronize(b->solo), err);
    }
    cu->StreamSynchronize(b->solo);
    alone_trim(b);
    return rc;
cleanup:
    cu->StreamSynchronize(b->solo);
    alone_trim(b);
    return -1;
}

int ws_gpu_embed_alone(ws_gpu_batcher *b, const ws_gpu_input *in, wscu_stream stream, float *host,
                       wscu_devptr dev, ws_err *err)
{
    ws_cu *cu = b->cu;
    const wscu_stream st = stream ? stream : b->solo;
    const int T = in->win_frames, nm = b->o.n_mels;
    if (!b->o.stem)
        return ws_errf(err, "ws_gpu_embed_alone: a batcher without the stem");
    if (mel_alone_enqueue(b, in, st, err))
        goto fail;
    /* the stem a chunk of windows at a time, on a lane of its own (the slots use 1 .. S) */
    const int Cmax = ws_gpu_batch_max_windows(b), C = in->n_win < Cmax ? in->n_win : Cmax;
    size_t h1 = 0, out = 0;
    ws_gpu_stem_bytes(b->g, C, T, &h1, &out);
    int oom = grow(b, &b->a_h1, h1, err);
    if (!oom)
        oom = grow(b, &b->a_out, out, err);
    if (oom) {
        if (oom > 0)
            ws_errf(err, "out of GPU memory for the stem of %d windows", C);
        goto fail;
    }
    const size_t per = result_bytes(b, 1, T);
    for (int w0 = 0; w0 < in->n_win; w0 += C) {
        const int nw = in->n_win - w0 < C ? in->n_win - w0 : C;
        const wscu_devptr mel = b->a_mel.p + (size_t)w0 * nm * T * sizeof(float);
        if (ws_gpu_enqueue_fixed(b->g, b->o.slots + 1, st, mel, b->a_h1.p, b->a_out.p, nw, T,
                                 b->o.add_pos, err))
            goto fail;
        if (b->o.out_f16) {
            if (ws_gpu_mel_to_f16(b->mel, st, b->a_out.p, b->a_h1.p, (size_t)nw * per / 2, err))
                goto fail;
        }
        const wscu_devptr res = b->o.out_f16 ? b->a_h1.p : b->a_out.p;
        if (host)
            CU_TRY(cu, MemcpyDtoHAsync((char *)host + (size_t)w0 * per, res, (size_t)nw * per, st), err);
        else
            CU_TRY(cu, MemcpyDtoDAsync(dev + (size_t)w0 * per, res, (size_t)nw * per, st), err);
    }
    CU_TRY(cu, EventRecord(b->a_ev, st), err);
    b->a_used = 1;
    if (host) {
        CU_TRY(cu, EventSynchronize(b->a_ev), err);
        alone_trim(b);
    }
    return 0;
cleanup:
fail:
    cu->StreamSynchronize(st);
    return -1;
}

int ws_gpu_copy_up(ws_gpu_batcher *b, wscu_stream stream, wscu_devptr dst, const void *src,
                   size_t bytes, ws_err *err)
{
    ws_cu *cu = b->cu;
    CU_TRY(cu, CtxSetCurrent(b->ctx), err);
    CU_TRY(cu, MemcpyHtoDAsync(dst, src, bytes, stream ? stream : b->solo), err);
    if (!stream)
        CU_TRY(cu, StreamSynchronize(b->solo), err);
    return 0;
cleanup:
    return -1;
}

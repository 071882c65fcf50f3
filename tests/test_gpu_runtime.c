/* test_gpu_runtime.c - the device runtime (src/cuda/gpu.c, gpu_runtime.h) against a
 * stand-in driver library; needs no GPU.
 *
 * tests/stub/libcuda.c is built here with ${CC:-cc} -shared (the test skips, saying so,
 * without a compiler or the source) and WHISPER_STEM_LIBCUDA points at it. It counts what
 * the runtime asks of the driver (tests/stub/stub_cuda.h), so the tests hold the runtime to:
 * the driver opened once while anything holds it (cuInit once) and again after the last
 * close; one primary-context retain per device whatever opens it (the engine's ws_gpu, the
 * Whisper stem, the GPU log-Mel, the batches; from many threads at once) and its release
 * after the last; each module loaded once per device for its name and text (two stems of
 * one shape, and a batch's lane of the stem's plans, load none again), and unloaded
 * before the context is released; every stream, event, device and pinned block given back;
 * no object created on a thread without a current context. Also: the messages for no
 * driver, a device number past the last and a capability below 8.0, as before.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ws_conv.h>

#include "cuda/gpu.h"
#include "cuda/gpu_batch.h"
#include "cuda/gpu_conv_internal.h"
#include "cuda/gpu_internal.h"
#include "cuda/gpu_runtime.h"
#include "helpers.h"
#include "mel/mel.h"
#include "stub/stub_cuda.h"
#include "whisper/stem.h"

static stub_cuda_counts *S; /* the stand-in's counters */
static int (*stub_set_current)(void *), (*stub_get_current)(void **); /* its cuCtx*Current */

/* The stand-in driver (test_stub_driver), its counters and its cuCtx*Current */
static void use_stub(void)
{
    void *h = test_stub_driver();
    S = dlsym(h, "stub_cuda_state");
    cr_assert_not_null(S);
    *(void **)&stub_set_current = dlsym(h, "cuCtxSetCurrent");
    *(void **)&stub_get_current = dlsym(h, "cuCtxGetCurrent");
    cr_assert(stub_set_current && stub_get_current);
}

/* nothing of the driver's is held: no context reference, stream, event, memory, module */
static void assert_all_given_back(const char *when)
{
    cr_assert_eq(S->ctx_refs, 0, "%s: %d context references held", when, S->ctx_refs);
    cr_assert_eq(S->modules, 0, "%s: %d modules loaded", when, S->modules);
    cr_assert_eq(S->modules_at_reset, 0, "%s: modules loaded when the context was released", when);
    cr_assert_eq(S->streams, 0, "%s: %d streams", when, S->streams);
    cr_assert_eq(S->events, 0, "%s: %d events", when, S->events);
    cr_assert_eq(S->dev_allocs, 0, "%s: %d device blocks", when, S->dev_allocs);
    cr_assert_eq(S->host_allocs, 0, "%s: %d pinned blocks", when, S->host_allocs);
    cr_assert_eq(S->no_context, 0, "%s: %d objects asked for with no context current", when,
                 S->no_context);
}

static const char *const MODULE_PTX = "// a module\n.version 7.8\n.target sm_90\n"
                                      ".address_size 64\n.visible .entry k()\n{\n\tret;\n}\n";

#define NT 8
static struct {
    pthread_barrier_t bar;
    wscu_module mod[NT];
    int bad[NT];
    char msg[NT][512];
} TH;

static void *worker(void *arg)
{
    const int i = (int)(intptr_t)arg;
    ws_err e = {""};
    uint64_t d = 0;
    unsigned char up[256], down[256];
    wscu_stream s = NULL;
    wscu_event ev = NULL;
    ws_gpu *g = ws_gpu_open(0, &e);
    pthread_barrier_wait(&TH.bar); /* all open at once */
    if (!g)
        goto fail;
    for (int k = 0; k < 256; k++)
        up[k] = (unsigned char)(k * 7 + i);
    if (ws_gpu_module(g, "ws_test_module", MODULE_PTX, &TH.mod[i], &e) ||
        ws_gpu_alloc(g, sizeof up, &d, &e) || ws_gpu_upload(g, d, up, sizeof up, &e) ||
        ws_gpu_download(g, down, d, sizeof down, &e) || !ws_gpu_staging(g, 1000, &e) ||
        !ws_gpu_staging(g, 5000, &e) || ws_gpu_stream_new(g, &s, &e) ||
        ws_gpu_event_new(g, WS_CU_EVENT_DEFAULT, &ev, &e))
        goto fail;
    if (memcmp(up, down, sizeof up)) {
        ws_errf(&e, "thread %d: the download is not the upload", i);
        goto fail;
    }
    pthread_barrier_wait(&TH.bar); /* all done before any closes */
    ws_gpu_event_free(g, ev);
    ws_gpu_stream_free(g, s);
    ws_gpu_release(g, d);
    ws_gpu_close(g);
    return NULL;
fail:
    TH.bad[i] = 1;
    snprintf(TH.msg[i], sizeof TH.msg[i], "%s", e.msg);
    if (g) {
        pthread_barrier_wait(&TH.bar);
        ws_gpu_close(g);
    } else {
        pthread_barrier_wait(&TH.bar);
    }
    return NULL;
}

Test(runtime, many_ws_gpu_on_many_threads_share_one_driver_context_and_module)
{
    use_stub();
    memset(&TH, 0, sizeof TH);
    pthread_barrier_init(&TH.bar, NULL, NT);
    pthread_t tid[NT];
    for (int i = 0; i < NT; i++)
        cr_assert_eq(pthread_create(&tid[i], NULL, worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < NT; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&TH.bar);
    for (int i = 0; i < NT; i++) {
        cr_assert(!TH.bad[i], "thread %d: %s", i, TH.msg[i]);
        cr_assert_eq(TH.mod[i], TH.mod[0], "thread %d got another module", i);
    }
    cr_assert_eq(S->inits, 1, "the driver was opened %d times", S->inits);
    cr_assert_eq(S->retains, 1, "the primary context was retained %d times", S->retains);
    cr_assert_eq(S->releases, 1, "released %d times", S->releases);
    cr_assert_eq(S->loads, 1, "the module was loaded %d times", S->loads);
    cr_assert_eq(S->unloads, 1, "unloaded %d times", S->unloads);
    assert_all_given_back("after the last close");
    /* after the last close the driver is let go: the next open opens it again */
    ws_err e = {""};
    ws_gpu *g = ws_gpu_open(0, &e);
    cr_assert_not_null(g, "%s", e.msg);
    cr_assert_eq(S->inits, 2);
    cr_assert_eq(S->retains, 2);
    wscu_module m = NULL;
    cr_assert_eq(ws_gpu_module(g, "ws_test_module", MODULE_PTX, &m, &e), 0, "%s", e.msg);
    cr_assert_eq(S->loads, 2, "a module of a released context is loaded again");
    ws_gpu_close(g);
    assert_all_given_back("after the second close");
}

/* random float32 in [-0.1, 0.1) */
static float *rnd(size_t n, uint64_t seed)
{
    float *p = malloc(n * sizeof *p);
    cr_assert_not_null(p);
    ws_rng r = {seed};
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(0.2 * ws_rng_uniform(&r) - 0.1);
    return p;
}

Test(runtime, the_stem_the_log_mel_the_batches_and_a_plan_share_one_context)
{
    use_stub();
    ws_err e = {""};
    const int nm = 80, d = 384;
    ws_conv_desc pair[2];
    ws_stem_descs(nm, d, WS_PREC_BF16, pair);
    float *w1 = rnd((size_t)d * nm * 3, 1), *b1 = rnd((size_t)d, 2);
    float *w2 = rnd((size_t)d * d * 3, 3), *b2 = rnd((size_t)d, 4);
    /* two pairs of one shape: one driver, one context, the modules loaded once. A pair is
     * two engine plans, each with its direct module and its GEMM's (the stand-in driver
     * encodes no tensor maps: no Hopper GEMM); the second pair's plans find them cached */
    enum { PAIR_MODULES = 4 };
    ws_gpu_pair *p1 = ws_gpu_new(0, pair, w1, b1, w2, b2, &e);
    cr_assert_not_null(p1, "%s", e.msg);
    cr_assert_eq(S->loads, PAIR_MODULES, "%d loads for a pair of %d modules", S->loads,
                 PAIR_MODULES);
    ws_gpu_pair *p2 = ws_gpu_new(0, pair, w1, b1, w2, b2, &e);
    cr_assert_not_null(p2, "%s", e.msg);
    cr_assert_eq(S->inits, 1);
    cr_assert_eq(S->retains, 1);
    cr_assert_eq(S->loads, PAIR_MODULES, "%d loads for two pairs of %d modules", S->loads,
                 PAIR_MODULES);
    for (int k = 0; k < 2; k++) { /* each conv takes its GEMM; lanes 1.. are not made yet */
        const ws_conv_args a = {.n = 2, .t_in = 100, .x = (void *)(uintptr_t)4096,
                                .y = (void *)(uintptr_t)8192};
        cr_assert_eq(ws_gpu_conv_kernel(ws_gpu_pair_plan(p1, 0, k), &a), 2, "conv%d", k + 1);
        cr_assert_null(ws_gpu_pair_plan(p1, 1, k));
    }
    /* the kernel report: each plan's direct and GEMM kernels, the driver's (stand-in) counts */
    const char *rep = ws_gpu_kernel_report(p1);
    cr_assert(strstr(rep, "conv1 (80 -> 384, stride 1):\n") && strstr(rep, "conv2 (384 -> 384, stride 2):\n"),
              "%s", rep);
    int lines = 0;
    for (const char *l = strstr(rep, "regs    0 local bytes\n"); l;
         l = strstr(l + 1, "regs    0 local bytes\n"))
        lines++;
    cr_assert_eq(lines, PAIR_MODULES, "%s", rep);
    cr_assert(strstr(ws_gpu_device_name(p1), "Stand-in GPU, sm_90, 132 SMs, driver 12.8"), "%s",
              ws_gpu_device_name(p1));
    /* the stem through the staging buffer */
    const int T = 100, T2 = ws_conv_out_len(&pair[1], T);
    float *mel = rnd((size_t)2 * nm * T, 5), *out = malloc(sizeof(float) * 2 * T2 * d);
    cr_assert_not_null(out);
    cr_assert_eq(ws_gpu_stem(p1, mel, 2, T, 0, out, &e), 0, "%s", e.msg);
    cr_assert_gt(S->launches, 0);
    /* batches on the pair (log-Mel, stem, f16) and a log-Mel batcher of its own */
    ws_mel *cpu = ws_mel_new(nm, 1, &e);
    cr_assert_not_null(cpu, "%s", e.msg);
    ws_gpu_batch_opts o = {.mel_on_gpu = 1, .stem = 1, .out_f16 = 1, .n_mels = nm,
                           .filters = ws_mel_filters(cpu), .max_windows = 4, .slots = 2,
                           .stage_bytes = (size_t)32 << 20};
    ws_gpu_batcher *b = ws_gpu_batcher_new(p1, 0, &o, &e);
    cr_assert_not_null(b, "%s", e.msg);
    ws_gpu_batch_opts om = o;
    om.stem = 0;
    ws_gpu_batcher *bm = ws_gpu_batcher_new(NULL, 0, &om, &e);
    cr_assert_not_null(bm, "%s", e.msg);
    cr_assert(strstr(ws_gpu_batcher_device(bm), "Stand-in GPU, sm_90, driver 12.8"), "%s",
              ws_gpu_batcher_device(bm));
    cr_assert_eq(S->retains, 1, "the batches retained the context again");
    cr_assert_eq(S->loads, PAIR_MODULES + 1, "the log-Mel's module loaded %d times",
                 S->loads - PAIR_MODULES);
    const size_t n = 16000;
    float *x = rnd(n, 6);
    int k = 0;
    void **slabs = ws_gpu_stage(b, n * sizeof(float), &k);
    cr_assert_not_null(slabs);
    ws_gpu_stage_copy(b, slabs, x, n * sizeof(float));
    ws_gpu_input in = {.x = x, .n = n, .n_total = n, .n_frames = 100, .content = 100, .n_win = 1,
                       .win_frames = 100};
    ws_gpu_input staged = in;
    staged.x = NULL;
    staged.slabs = slabs;
    for (int s = 0; s < 2; s++) {
        ws_gpu_batcher *bb = s ? bm : b;
        ws_gpu_batch_clear(bb, 0);
        cr_assert_eq(ws_gpu_batch_add(bb, 0, &in), 1);
        cr_assert_eq(ws_gpu_batch_add(bb, 0, &staged), 1);
        cr_assert_eq(ws_gpu_batch_submit(bb, 0, "test", &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_batch_wait(bb, 0, &e), 0, "%s", e.msg);
        size_t bytes = 0;
        cr_assert_not_null(ws_gpu_batch_output(bb, 0, 1, &bytes));
        cr_assert_gt(bytes, 0);
    }
    /* the stem batch ran on slot 0's own lane of p1's plans: new plans, the same modules */
    cr_assert_not_null(ws_gpu_pair_plan(p1, 1, 0));
    cr_assert_not_null(ws_gpu_pair_plan(p1, 1, 1));
    cr_assert_null(ws_gpu_pair_plan(p1, 2, 0));
    cr_assert_eq(S->loads, PAIR_MODULES + 1, "a lane's plans loaded %d modules again",
                 S->loads - PAIR_MODULES - 1);
    cr_assert_eq(ws_gpu_enqueue_fixed(p1, 0, NULL, 0, 0, 0, 1, 100, 0, &e), -1, "lane 0 taken");
    cr_assert_eq(ws_gpu_enqueue_fixed(p1, WS_GPU_LANES, NULL, 0, 0, 0, 1, 100, 0, &e), -1);
    cr_assert(strstr(e.msg, "lane 64"), "%s", e.msg);
    /* an fp32 pair: its plans' modules are its own (other descriptors: float32 storage and
     * the FFMA GEMM); one window of 100 frames on 132 SMs leaves both GEMMs short of
     * blocks, so each sums in parts (its _split and _fin entries; conv1's 15 stages of K in
     * 3 parts, a part taking 5 at least) */
    ws_conv_desc pair32[2];
    ws_stem_descs(nm, d, WS_PREC_FP32, pair32);
    ws_gpu_pair *p3 = ws_gpu_new(0, pair32, w1, b1, w2, b2, &e);
    cr_assert_not_null(p3, "%s", e.msg);
    cr_assert_eq(S->loads, 2 * PAIR_MODULES + 1, "%d loads", S->loads);
    const int launches = S->launches;
    cr_assert_eq(ws_gpu_stem(p3, mel, 1, T, 0, out, &e), 0, "%s", e.msg);
    cr_assert_eq(S->launches - launches, 4, "conv1, conv2 in parts, their finishes: %d launches",
                 S->launches - launches);
    cr_assert_eq(ws_gpu_conv_split_calls(ws_gpu_pair_plan(p3, 0, 0)), 1);
    cr_assert_eq(ws_gpu_conv_split_calls(ws_gpu_pair_plan(p3, 0, 1)), 1);
    ws_gpu_set_fixed(p3, 1); /* whole sums: one launch a conv */
    cr_assert_eq(ws_gpu_stem(p3, mel, 1, T, 0, out, &e), 0, "%s", e.msg);
    cr_assert_eq(S->launches - launches, 6, "%d launches", S->launches - launches);
    cr_assert_eq(ws_gpu_conv_split_calls(ws_gpu_pair_plan(p3, 0, 0)), 1);
    cr_assert_eq(ws_gpu_conv_split_calls(ws_gpu_pair_plan(p3, 0, 1)), 1);
    float gx[300], gy[300];
    for (int i = 0; i < 300; i++)
        gx[i] = (float)i / 30.0f - 5.0f;
    cr_assert_eq(ws_gpu_gelu(p3, gx, gy, 300, &e), 0, "%s", e.msg);
    ws_gpu_free(p3);
    float *alone = malloc(sizeof(float) * nm * 100);
    cr_assert_eq(ws_gpu_mel_alone(bm, &in, alone, &e), 0, "%s", e.msg);
    ws_gpu_unstage(b, slabs, k);
    /* an engine plan on a ws_gpu of its own */
    ws_gpu *g = ws_gpu_open(0, &e);
    cr_assert_not_null(g, "%s", e.msg);
    const ws_conv_desc cd = {.op = WS_CONV_FWD, .c_in = 8, .c_out = 12, .groups = 1, .k = 3,
                             .stride = 1, .dilation = 1, .pad_l = 1, .pad_r = 1, .x_layout = WS_NCL,
                             .y_layout = WS_NCL, .act = WS_ACT_GELU};
    float *cw = rnd(12 * 8 * 3, 7);
    ws_gpu_conv *c = ws_gpu_conv_new(g, &cd, cw, NULL, &e);
    cr_assert_not_null(c, "%s", e.msg);
    uint64_t dx = 0, dy = 0;
    cr_assert_eq(ws_gpu_alloc(g, 2 * 8 * 30 * 4, &dx, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_gpu_alloc(g, 2 * 12 * 30 * 4, &dy, &e), 0, "%s", e.msg);
    ws_conv_args a = {.n = 2, .t_in = 30, .x = (void *)(uintptr_t)dx, .y = (void *)(uintptr_t)dy};
    cr_assert_eq(ws_gpu_conv_run(c, &a, &e), 0, "%s", e.msg);
    /* an enqueue leaves the thread's current context as it found it (a framework's device) */
    void *was = NULL, *now = NULL, *other = &now;
    cr_assert_eq(stub_get_current(&was), 0);
    cr_assert_not_null(was, "no context current after a run");
    const int launched = S->launches;
    cr_assert_eq(stub_set_current(other), 0);
    cr_assert_eq(ws_gpu_conv_enqueue(c, &a, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(S->launches - launched, 1);
    cr_assert_eq(stub_get_current(&now), 0);
    cr_assert_eq(now, other, "the enqueue left its own context current");
    cr_assert_eq(stub_set_current(NULL), 0);
    cr_assert_eq(ws_gpu_conv_enqueue(c, &a, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(stub_get_current(&now), 0);
    cr_assert_null(now, "the enqueue left a context current where none was");
    cr_assert_eq(stub_set_current(was), 0);
    cr_assert_eq(S->retains, 1, "the plan's ws_gpu retained the context again");
    cr_assert_eq(S->ctx_refs, 1);
    ws_gpu_conv_free(c);
    ws_gpu_release(g, dx);
    ws_gpu_release(g, dy);
    ws_gpu_close(g);
    ws_gpu_batcher_free(bm);
    ws_gpu_batcher_free(b);
    ws_gpu_free(p2);
    cr_assert_eq(S->releases, 0, "released while the first pair is open");
    ws_gpu_free(p1);
    cr_assert_eq(S->releases, 1);
    cr_assert_eq(S->unloads, S->loads, "%d loads, %d unloads", S->loads, S->unloads);
    assert_all_given_back("after everything was freed");
    ws_mel_free(cpu);
    free(w1), free(b1), free(w2), free(b2), free(mel), free(out), free(x), free(alone), free(cw);
}

/* A float32 plan (the FFMA GEMM) keeps its scratch for sums in parts from its first call on:
 * after its largest call no call allocates device memory, whatever it is summed in (CUDA
 * graph capture, docs/conv-engine.md), and the launches say which: a call of whole waves (one
 * launch), a tail of 34 blocks past a wave (the kernel, _split and _fin: three), a call of
 * 100, 3 or 1 blocks in parts (two), one of 40 in slices (the _slice entry's 107 blocks of
 * 48 positions: one). Both tiles: 128 rows (C_out 96) and 64 (C_out 48). A plan whose
 * sum is too short to cut (C_in 1, K 10: one stage) allocates nothing for parts. The
 * stand-in driver has 132 multiprocessors: 264 block slots. */
static void no_alloc_after_the_largest(ws_gpu *g, int c_out)
{
    ws_err e = {""};
    const ws_conv_desc cd = {.op = WS_CONV_FWD, .c_in = 80, .c_out = c_out, .groups = 1, .k = 3,
                             .stride = 1, .dilation = 1, .pad_l = 1, .pad_r = 1, .x_layout = WS_NCL,
                             .y_layout = WS_NCL, .act = WS_ACT_GELU};
    float *cw = rnd((size_t)c_out * 80 * 3, 8);
    ws_gpu_conv *c = ws_gpu_conv_new(g, &cd, cw, NULL, &e);
    cr_assert_not_null(c, "%s", e.msg);
    const int big = 128 * 528; /* 528 tiles of 128 positions: two whole waves */
    uint64_t dx = 0, dy = 0;
    cr_assert_eq(ws_gpu_alloc(g, (size_t)80 * big * 4, &dx, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_gpu_alloc(g, (size_t)c_out * big * 4, &dy, &e), 0, "%s", e.msg);
    ws_conv_args a = {.n = 1, .t_in = big, .x = (void *)(uintptr_t)dx, .y = (void *)(uintptr_t)dy};
    int launched = S->launches;
    cr_assert_eq(ws_gpu_conv_run(c, &a, &e), 0, "%s", e.msg);
    cr_assert_eq(S->launches - launched, 1, "whole waves: %d launches", S->launches - launched);
    const int allocs = S->alloc_calls;
    static const struct { int tiles, launches; } calls[] = {
        {264 + 34, 3}, {100, 2}, {40, 1}, {3, 2}, {264, 1}, {1, 2}, {264 + 200, 1}, {528, 1},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        a.t_in = 128 * calls[i].tiles - 5;
        launched = S->launches;
        cr_assert_eq(ws_gpu_conv_enqueue(c, &a, 0, &e), 0, "%s", e.msg);
        cr_assert_eq(S->launches - launched, calls[i].launches, "C_out %d, %d tiles: %d launches", c_out,
                     calls[i].tiles, S->launches - launched);
        cr_assert_eq(S->alloc_calls, allocs, "C_out %d, %d tiles: a device allocation after the largest call",
                     c_out, calls[i].tiles);
    }
    cr_assert_eq(ws_gpu_conv_tail_calls(c), 1);
    cr_assert_eq(ws_gpu_conv_split_calls(c), 4);
    cr_assert_eq(ws_gpu_conv_slice_calls(c), 1);
    ws_gpu_conv_free(c);
    ws_gpu_release(g, dx);
    ws_gpu_release(g, dy);
    free(cw);
}

Test(runtime, a_float32_plan_allocates_nothing_after_its_largest_call)
{
    use_stub();
    ws_err e = {""};
    ws_gpu *g = ws_gpu_open(0, &e);
    cr_assert_not_null(g, "%s", e.msg);
    no_alloc_after_the_largest(g, 96);
    no_alloc_after_the_largest(g, 48);
    /* one stage of r: never in parts, no scratch for them */
    const ws_conv_desc cd = {.op = WS_CONV_FWD, .c_in = 1, .c_out = 96, .groups = 1, .k = 10,
                             .stride = 5, .dilation = 1, .x_layout = WS_NCL, .y_layout = WS_NCL,
                             .act = WS_ACT_GELU};
    float *cw = rnd(96 * 10, 9);
    ws_gpu_conv *c = ws_gpu_conv_new(g, &cd, cw, NULL, &e);
    cr_assert_not_null(c, "%s", e.msg);
    uint64_t dx = 0, dy = 0;
    cr_assert_eq(ws_gpu_alloc(g, 4000 * 4, &dx, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_gpu_alloc(g, (size_t)96 * 800 * 4, &dy, &e), 0, "%s", e.msg);
    ws_conv_args a = {.n = 1, .t_in = 4000, .x = (void *)(uintptr_t)dx, .y = (void *)(uintptr_t)dy};
    const int allocs = S->alloc_calls;
    cr_assert_eq(ws_gpu_conv_run(c, &a, &e), 0, "%s", e.msg);
    cr_assert_eq(S->alloc_calls, allocs, "a plan that never sums in parts allocated for them");
    ws_gpu_conv_free(c);
    ws_gpu_release(g, dx);
    ws_gpu_release(g, dy);
    free(cw);
    ws_gpu_close(g);
    assert_all_given_back("after the float32 plans");
}

/* A device whose blocks may take at most 99 KiB of shared memory (compute capability 8.9:
 * the slices' 108 and 156 KiB rings do not fit) still makes float32 plans, and a call of few
 * blocks sums in parts there (_split and _fin: two launches) where it would sum in slices */
Test(runtime, a_float32_plan_on_a_device_of_less_shared_memory_sums_in_parts)
{
    use_stub();
    ws_err e = {""};
    for (int small = 0; small < 2; small++) {
        cr_assert_eq(setenv("STUB_CUDA_SMEM_OPTIN", small ? "101376" : "232448", 1), 0);
        ws_gpu *g = ws_gpu_open(0, &e);
        cr_assert_not_null(g, "%s", e.msg);
        const ws_conv_desc cd = {.op = WS_CONV_FWD, .c_in = 80, .c_out = 96, .groups = 1, .k = 3,
                                 .stride = 1, .dilation = 1, .pad_l = 1, .pad_r = 1, .x_layout = WS_NCL,
                                 .y_layout = WS_NCL, .act = WS_ACT_GELU};
        float *cw = rnd((size_t)96 * 80 * 3, 8);
        ws_gpu_conv *c = ws_gpu_conv_new(g, &cd, cw, NULL, &e);
        cr_assert_not_null(c, "optin %s: %s", small ? "99 KiB" : "227 KiB", e.msg);
        const int t = 128 * 40 - 5; /* 40 tiles of 128 positions: 107 of 48 */
        uint64_t dx = 0, dy = 0;
        cr_assert_eq(ws_gpu_alloc(g, (size_t)80 * t * 4, &dx, &e), 0, "%s", e.msg);
        cr_assert_eq(ws_gpu_alloc(g, (size_t)96 * t * 4, &dy, &e), 0, "%s", e.msg);
        ws_conv_args a = {.n = 1, .t_in = t, .x = (void *)(uintptr_t)dx, .y = (void *)(uintptr_t)dy};
        const int launched = S->launches;
        cr_assert_eq(ws_gpu_conv_run(c, &a, &e), 0, "%s", e.msg);
        cr_assert_eq(S->launches - launched, small ? 2 : 1, "optin %s: %d launches", small ? "99 KiB" : "227 KiB",
                     S->launches - launched);
        cr_assert_eq(ws_gpu_conv_slice_calls(c), small ? 0u : 1u);
        cr_assert_eq(ws_gpu_conv_split_calls(c), small ? 1u : 0u);
        ws_gpu_conv_free(c);
        ws_gpu_release(g, dx);
        ws_gpu_release(g, dy);
        free(cw);
        ws_gpu_close(g);
    }
    cr_assert_eq(unsetenv("STUB_CUDA_SMEM_OPTIN"), 0);
    assert_all_given_back("after the float32 plans");
}

Test(runtime, two_devices_have_a_context_and_modules_each)
{
    use_stub();
    cr_assert_eq(setenv("STUB_CUDA_DEVICES", "2", 1), 0);
    ws_err e = {""};
    ws_gpu *a = ws_gpu_open(0, &e), *b = ws_gpu_open(1, &e), *c = ws_gpu_open(0, &e);
    cr_assert(a && b && c, "%s", e.msg);
    cr_assert_eq(S->retains, 2);
    cr_assert_eq(a->ctx, c->ctx);
    cr_assert_neq(a->ctx, b->ctx);
    wscu_module ma, mb, mc;
    cr_assert_eq(ws_gpu_module(a, "m", MODULE_PTX, &ma, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_gpu_module(b, "m", MODULE_PTX, &mb, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_gpu_module(c, "m", MODULE_PTX, &mc, &e), 0, "%s", e.msg);
    cr_assert_eq(ma, mc);
    cr_assert_neq(ma, mb);
    cr_assert_eq(S->loads, 2);
    /* another name or another text is another module */
    wscu_module m2, m3;
    cr_assert_eq(ws_gpu_module(a, "m2", MODULE_PTX, &m2, &e), 0, "%s", e.msg);
    char other[256];
    snprintf(other, sizeof other, "// another\n%s", MODULE_PTX);
    cr_assert_eq(ws_gpu_module(a, "m", other, &m3, &e), 0, "%s", e.msg);
    cr_assert(m2 != ma && m3 != ma && m2 != m3);
    cr_assert_eq(S->loads, 4);
    /* a module that does not load is not kept */
    cr_assert_eq(ws_gpu_module(a, "bad", "not ptx", &m3, &e), -1);
    cr_assert(strstr(e.msg, "cuModuleLoadDataEx(bad) failed"), "%s", e.msg);
    char *path = strstr(e.msg, "PTX and logs in ");
    if (path)
        remove(path + strlen("PTX and logs in "));
    cr_assert_eq(S->loads, 4);
    ws_gpu_close(b);
    cr_assert_eq(S->releases, 1);
    ws_gpu_close(a);
    cr_assert_eq(S->releases, 1);
    ws_gpu_close(c);
    cr_assert_eq(S->releases, 2);
    assert_all_given_back("after the three closes");
}

/* The lines the command and the library print when there is no usable GPU come from here:
 * the same words as before the runtime. */
Test(runtime, no_driver_no_device_and_an_old_device_say_so)
{
    ws_err e = {""};
    char name[200] = "";
    cr_assert_eq(setenv("WHISPER_STEM_LIBCUDA", "/nonexistent/libcuda.so.1", 1), 0);
    cr_assert_eq(ws_gpu_driver_present(), 0);
    for (int rep = 0; rep < 2; rep++) {
        cr_assert_null(ws_gpu_open(0, &e));
        cr_assert(strstr(e.msg, "no CUDA driver: dlopen(\"/nonexistent/libcuda.so.1\") failed"),
                  "%s", e.msg);
        cr_assert_eq(ws_gpu_probe(0, name, sizeof name, &e), -1);
        cr_assert(strstr(e.msg, "no CUDA driver: dlopen("), "%s", e.msg);
    }
    ws_conv_desc pair[2];
    ws_stem_descs(80, 384, WS_PREC_FP32, pair);
    float w = 0;
    cr_assert_null(ws_gpu_new(0, pair, &w, &w, &w, &w, &e));
    cr_assert(strstr(e.msg, "no CUDA driver: dlopen("), "%s", e.msg);

    use_stub();
    cr_assert_eq(ws_gpu_driver_present(), 1);
    cr_assert_eq(ws_gpu_probe(0, name, sizeof name, &e), 0, "%s", e.msg);
    cr_assert_str_eq(name, "Stand-in GPU, sm_90");
    cr_assert_eq(S->retains, 0, "the probe retained a context");
    cr_assert_null(ws_gpu_open(3, &e));
    cr_assert(strstr(e.msg, "no CUDA device 3: the driver reports 1 (0 to 0; CUDA_VISIBLE_DEVICES "
                            "chooses which)"), "%s", e.msg);
    cr_assert_eq(ws_gpu_probe(3, name, sizeof name, &e), -1);
    cr_assert(strstr(e.msg, "no CUDA device 3"), "%s", e.msg);
    cr_assert_eq(setenv("STUB_CUDA_DEVICES", "0", 1), 0);
    cr_assert_null(ws_gpu_open(0, &e));
    cr_assert(strstr(e.msg, "no CUDA device: the driver reports 0 devices"), "%s", e.msg);
    cr_assert_eq(setenv("STUB_CUDA_DEVICES", "1", 1), 0);
    cr_assert_eq(setenv("STUB_CUDA_CC", "75", 1), 0);
    cr_assert_null(ws_gpu_open(0, &e));
    cr_assert(strstr(e.msg, "Stand-in GPU: compute capability 7.5 is below 8.0"), "%s", e.msg);
    cr_assert_eq(S->retains, 0);
    /* each failed open let the driver go */
    const int inits = S->inits;
    cr_assert_eq(setenv("STUB_CUDA_CC", "80", 1), 0);
    ws_gpu *g = ws_gpu_open(0, &e);
    cr_assert_not_null(g, "%s", e.msg);
    cr_assert_eq(S->inits, inits + 1);
    cr_assert_eq(g->cc_major * 10 + g->cc_minor, 80);
    ws_gpu_close(g);
    assert_all_given_back("after the opens");
}

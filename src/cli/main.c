/* main.c - the whisper-stem command line (docs/spec.md "Command line").
 *
 *   whisper-stem [options] INPUT...
 *
 * main wires the parts: options.c (the options, --help), names.c (the inputs and their
 * output names), check.c (--check), run.c (the inputs' runs). Per input:
 * decode -> 16 kHz mono -> log-Mel windows -> conv stem (GPU or CPU) ->
 * atomic write. A failing input prints one line and the others go on;
 * exit 0 when every input was written, 1 when some failed, 2 on usage.
 * Validated end to end by tests/test_cli.c.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio.h"
#include "common.h"
#include "conv/conv.h"
#include "whisper/stem.h"
#include "cuda/gpu.h"
#include "mel/mel.h"
#include "whisper/model.h"
#include "output.h"
#include "progress.h"
#include "report.h"
#include "run.h"
#include "signals.h"
#include "tar.h"
#include "cli.h"
#include "trace.h"


/* GPU batches: a slot holds at most 16 windows and 48 MiB of results (6 windows of
 * large-v3), fewer when the pinned buffers of its
 * results and inputs (3 slots) would pass a quarter of the memory bound; the staging
 * slabs (2 MiB, one per input of up to 30 s) enough for every input in flight, at most
 * another quarter. Pinned host memory thus stays under half of --max-memory, on
 * top of the bound on the inputs in flight. */
static void batch_size(ws_gpu_batch_opts *bo, int d, size_t max_memory, int threads)
{
    const size_t esz = bo->out_f16 ? 2 : 4;
    const size_t out = bo->stem ? (size_t)1500 * d * esz : (size_t)bo->n_mels * WS_CHUNK_FRAMES * esz;
    const size_t in = bo->mel_on_gpu ? (size_t)WS_CHUNK_SAMPLES * 4 : (size_t)bo->n_mels * WS_CHUNK_FRAMES * 4;
    size_t w = max_memory / 4 / (size_t)bo->slots / (out + in);
    if (w > ((size_t)48 << 20) / out) /* pinning the results' buffers is start-up time */
        w = ((size_t)48 << 20) / out;
    bo->max_windows = w < 1 ? 1 : w > 16 ? 16 : (int)w;
    /* one slab for each input that may be in flight (run.c: the slots, the next batch and
     * one an input being prepared per worker) */
    const size_t slabs = ((size_t)(bo->slots + 1) * bo->max_windows + (size_t)threads) *
                         ((size_t)2 << 20);
    bo->stage_bytes = slabs < max_memory / 4 ? slabs : max_memory / 4;
}

/* The GPU's start (the driver's cuInit, the device's primary context: 0.2-0.3 s) on a
 * thread of its own, while this one lists the inputs, names the outputs and loads the
 * model. The stem's own open then finds both made (gpu.c counts references); the
 * thread's handle is let go once the stem and the batcher hold theirs. A failure here
 * is left for the stem's open to report. */
typedef struct {
    pthread_t t;
    int started, ordinal;
    ws_gpu *gpu;
} gpu_early;

static void *gpu_early_main(void *arg)
{
    gpu_early *ge = arg;
    ws_err e = {{0}};
    ge->gpu = ws_gpu_open(ge->ordinal, &e);
    return NULL;
}

static void gpu_early_end(gpu_early *ge)
{
    if (!ge->started)
        return;
    pthread_join(ge->t, NULL);
    ge->started = 0;
    ws_gpu_close(ge->gpu);
    ge->gpu = NULL;
}

int main(int argc, char **argv)
{
#ifdef __GLIBC__
    /* A corpus run allocates and frees the same few buffer sizes per input (samples,
     * log-Mel, embeddings; megabytes each). glibc would map each from the kernel afresh and
     * fault its pages in again, input after input; below 32 MiB keep them on the heaps
     * and reuse them. Memory stays bounded by what the inputs in flight hold at once. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
    const double t_start = ws_now();
    options o;
    int st = ws_cli_parse_args(argc, argv, &o);
    if (st >= 0)
        return st;
    ws_cli_detach(&o); /* before any thread: a GPU run's end does not wait for the driver */
    ws_signals_init(PROG);
    ws_err err = {{0}};
    gpu_early early = {.ordinal = o.gpu_ordinal};
    if (o.device != WS_DEVICE_CPU && !o.check && !o.dump_ptx &&
        !(o.mel_only && o.mel_device == WS_DEVICE_CPU))
        early.started = pthread_create(&early.t, NULL, gpu_early_main, &early) == 0;
    ws_model model = {0};
    int have_model = 0, status = 0, probe_n_mels = 0, probe_d = 0;
    ws_run_ctx r = {0};
    r.manifest_fd = -1;
    ws_mel *mel = NULL;
    ws_job *jobs = NULL;
    ws_cli_names nm = {0};
    cJSON *root = NULL, *provenance = NULL;

    if (!o.check && !o.dump_ptx) {
        if ((status = ws_cli_gather_inputs(&o)) != 0 || o.n_inputs == 0)
            goto out;
    }
    if (o.n_inputs && /* the names first: a usage error costs no model load */
        ((status = ws_cli_output_names(&o, &nm)) != 0 || o.n_inputs == 0))
        goto out;

    double t0 = ws_now();
    if (o.model_path && o.mel_only && !o.check && !o.dump_ptx) { /* the model says how many mel bands; no weights needed */
        if (ws_model_probe(o.model_path, &probe_n_mels, &probe_d, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
    } else if (o.model_path) {
        if (ws_model_load(&model, o.model_path, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
        have_model = 1;
    } else if (o.check || o.dump_ptx) { /* no model: Whisper tiny's shape with random weights */
        if (ws_model_init_random(&model, o.n_mels ? o.n_mels : 80, 384, 1, 0, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
        have_model = 1;
    }
    const double model_ms = 1e3 * (ws_now() - t0);
    if (have_model && o.verbose)
        ws_eprintf(PROG ": model %s: '%s', n_mels %d, d %d, conv1 %s, conv2 %s, %s",
                o.model_path ? o.model_path : "(random)", model.name, model.n_mels, model.d,
                ws_tensor_type_name(model.conv1_type), ws_tensor_type_name(model.conv2_type),
                model.pos ? "positional embedding in file" : "sinusoids for --pos");

    if (o.dump_ptx) {
        if (mkdir(o.dump_ptx, 0755) && errno != EEXIST) {
            ws_eprintf(PROG ": --dump-ptx %s: cannot create the directory: %s", o.dump_ptx,
                    strerror(errno));
            status = 1;
            goto out;
        }
        ws_conv_desc pair[2];
        ws_stem_descs(model.n_mels, model.d, o.precision, pair);
        if (ws_gpu_dump_ptx(pair, o.dump_ptx, &err)) {
            ws_eprintf(PROG ": --dump-ptx: %s", err.msg);
            status = 1;
        }
        goto out;
    }
    if (o.check) {
        status = ws_cli_run_check(&o, &model);
        goto out;
    }

    const int model_n_mels = have_model ? model.n_mels : probe_n_mels;
    int n_mels = model_n_mels ? model_n_mels : (o.n_mels ? o.n_mels : 80);
    if (model_n_mels && o.n_mels && o.n_mels != model_n_mels) {
        ws_eprintf(PROG ": --n-mels %d, but the model takes %d mel bands", o.n_mels, model_n_mels);
        status = 2;
        goto out;
    }
    if (o.outdir && (status = ws_cli_make_outdir(&o)) != 0)
        goto out;

    t0 = ws_now();
    const char *device_used = "cpu";
    if (o.mel_device == WS_DEVICE_CUDA && o.device == WS_DEVICE_CPU) {
        ws_eprintf(PROG ": --mel-device cuda and --device cpu exclude each other");
        status = 2;
        goto out;
    }
    if (o.mel_only && o.device == WS_DEVICE_CUDA && o.mel_device == WS_DEVICE_CPU) {
        /* the log-Mel runs on the CPU; still, the user asked for CUDA */
        char name[160];
        if (ws_frontend_require_gpu(o.device, o.gpu_ordinal, name, sizeof name, &err)) {
            ws_eprintf(PROG ": --device cuda: %s", err.msg);
            status = 1;
            goto out;
        }
        if (o.verbose)
            ws_eprintf(PROG ": GPU %s present; --mel computes on the CPU", name);
    }
    if (!o.mel_only) {
        ws_stem_choice sc;
        st = ws_frontend_stem(&model, o.device, o.gpu_ordinal, o.precision, o.threads, &sc, &err);
        if (st) {
            ws_eprintf(PROG ": %s%s", st > 0 ? "--device cuda: " : "", err.msg);
            status = 1;
            goto out;
        }
        r.stem = sc.stem;
        r.on_gpu = sc.on_gpu;
        if (r.on_gpu)
            device_used = "cuda";
        if (!o.quiet && (sc.fallback == WS_NOTE_SHOW || (sc.fallback && o.verbose)))
            ws_eprintf(PROG ": %s", sc.fallback_note);
        if (sc.precision_note && !o.quiet)
            ws_eprintf(PROG ": --precision %s applies to the GPU; the CPU computes in fp32",
                    ws_precision_name(o.precision));
        r.model = &model;
    }
    if (!(mel = ws_mel_new(n_mels, o.threads, &err))) {
        ws_eprintf(PROG ": %s", err.msg);
        status = 1;
        goto out;
    }
    r.max_memory = o.max_memory ? o.max_memory : ws_default_max_memory();
    if (r.on_gpu || (o.mel_only && o.device != WS_DEVICE_CPU && o.mel_device != WS_DEVICE_CPU)) {
        /* the GPU path: inputs in batches of many, the log-Mel there too unless told */
        const int mel_gpu = o.mel_device != WS_DEVICE_CPU;
        ws_gpu_batch_opts bo = {.mel_on_gpu = mel_gpu, .stem = r.on_gpu, .add_pos = o.pos,
                                .out_f16 = o.out_dtype == WS_OUT_F16, .n_mels = n_mels,
                                .filters = ws_mel_filters(mel), .slots = 3};
        batch_size(&bo, r.on_gpu ? model.d : 0, r.max_memory, o.threads);
        if (o.pos && r.on_gpu && ws_stem_gpu_prepare_add(r.stem, WS_CHUNK_FRAMES, &err)) {
            ws_eprintf(PROG ": %s", err.msg);
            status = 1;
            goto out;
        }
        r.batcher = ws_gpu_batcher_new(r.on_gpu ? ws_stem_gpu(r.stem) : NULL, o.gpu_ordinal, &bo,
                                       &err);
        if (r.on_gpu) /* inputs too long for a batch get the bits they would get in one */
            ws_gpu_set_fixed(ws_stem_gpu(r.stem), 1);
        if (!r.batcher && (r.on_gpu || o.device == WS_DEVICE_CUDA || o.mel_device == WS_DEVICE_CUDA)) {
            ws_eprintf(PROG ": --device cuda: %s", err.msg);
            status = 1;
            goto out;
        }
        if (r.batcher) {
            r.mel_on_gpu = mel_gpu;
            device_used = "cuda";
        }
    } else if (o.mel_device == WS_DEVICE_CUDA) {
        ws_eprintf(PROG ": --mel-device cuda needs a GPU for the stem (--device cuda)");
        status = 1;
        goto out;
    }
    gpu_early_end(&early);
    const char *device_name = r.batcher ? ws_gpu_batcher_device(r.batcher) : "cpu";
    const double init_ms = 1e3 * (ws_now() - t0);
    if (o.verbose)
        ws_eprintf(PROG ": device %s%s%s, %d threads, sgemm %s", device_used,
                r.batcher ? ": " : "", r.batcher ? device_name : "",
                o.threads, ws_blas_name());

    if (o.json) {
        ws_report_info ri = {
            .device = device_used, .device_name = device_name, .mel_on_gpu = r.mel_on_gpu,
            .batch_windows = r.batcher ? ws_gpu_batch_max_windows(r.batcher) : 0,
            .precision = r.on_gpu ? ws_precision_name(o.precision) : "fp32", .threads = o.threads,
            .pos = o.pos, .n_mels = n_mels, .mel_only = o.mel_only, .pad = o.pad,
            .model_path = o.model_path, .model = have_model ? &model : NULL,
            .probe_n_mels = probe_n_mels, .probe_d = probe_d};
        root = ws_report_new(&ri);
    }

    if (!(jobs = ws_jobs_new(o.n_inputs, o.inputs, nm.outs)) ||
        (o.tar_size && !(r.shards = ws_shards_new(&(ws_shard_names){o.outdir, o.shard_i, o.shard_n,
                                                                     o.n_listed},
                                                 jobs, o.n_inputs, o.tar_size)))) {
        ws_eprintf(PROG ": out of memory");
        status = 1;
        goto out;
    }
    for (int i = 0; i < o.n_inputs; i++) {
        jobs[i].member = nm.members ? nm.members[i] : NULL;
        jobs[i].why = nm.whys[i];
        if (o.segs && o.segs[i] && !o.segs[i]->bad)
            jobs[i].seg = o.segs[i];
        if (o.srcs)
            jobs[i].src = o.srcs[i];
    }
    r.mel = mel;
    r.pad = o.pad;
    r.mel_only = o.mel_only;
    r.add_pos = o.pos;
    r.verbose = o.verbose;
    r.threads = o.threads;
    r.n_mels = n_mels;
    r.out_dtype = o.out_dtype;
    r.skip_existing = o.skip_existing;
    r.decode = o.decode;
    r.sidecars = o.outdir && !o.tar_size;
    ws_provenance_info pi = {.model = o.mel_only ? NULL : &model, .n_mels = n_mels, .pos = o.pos,
                             .pad = o.pad, .precision = r.on_gpu ? ws_precision_name(o.precision) : "fp32",
                             .device = device_used, .mel_device = r.mel_on_gpu ? "cuda" : "cpu",
                             .out_dtype = o.out_dtype, .decode = o.decode};
    if (!(provenance = ws_provenance_new(&pi))) {
        ws_eprintf(PROG ": out of memory");
        status = 1;
        goto out;
    }
    r.provenance = provenance;
    r.root = o.root;
    r.manifest = o.manifest;
    r.manifest_fd = -1;
    if (o.manifest && ws_path_links_trusted(o.manifest, &err)) {
        ws_eprintf(PROG ": --manifest %s", err.msg);
        status = 1;
        goto out;
    }
    if (o.manifest &&
        (r.manifest_fd = open(o.manifest, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666)) < 0) {
        ws_eprintf(PROG ": --manifest %s: %s", o.manifest, strerror(errno));
        status = 1;
        goto out;
    }
    ws_run_stats stats = {0};
    r.stats = &stats;
    ws_progress_total(o.n_inputs);
    ws_progress_start(o.n_inputs, o.progress_s, o.quiet);
    const int failed = ws_run(&r, jobs, o.n_inputs);
    ws_progress_stop();
    int manifest_bad = ws_run_manifest_lost() > 0;
    if (r.manifest_fd >= 0 && fsync(r.manifest_fd) != 0 && errno != EINVAL && errno != EROFS) {
        ws_eprintf(PROG ": --manifest %s: %s", o.manifest, strerror(errno));
        manifest_bad = 1;
    }
    status = failed || manifest_bad ? 1 : 0;
    if (root) {
        ws_report_times tm = {model_ms, init_ms, 1e3 * (ws_now() - t_start)};
        if (ws_report_finish(root, o.json, &r, jobs, o.n_inputs, failed, &tm))
            status = 1;
    }
out:
    gpu_early_end(&early);
    cJSON_Delete(root);
    cJSON_Delete(provenance);
    ws_shards_free(r.shards, o.n_inputs, o.tar_size ? o.tar_size : 1);
    ws_jobs_free(jobs, o.n_inputs);
    ws_cli_names_free(&o, &nm);
    ws_cli_inputs_free(&o);
    if (r.manifest_fd >= 0)
        close(r.manifest_fd);
    ws_mel_free(mel);
    if ((r.batcher || r.on_gpu) && !o.verbose) {
        /* Every output, its sidecar and the manifest are written and synced by now. What is
         * left is memory: device buffers, pinned host memory, the modules and the context,
         * whose orderly release takes the driver 0.1-0.3 s at the end of a run. The kernel
         * reclaims all of it when the process ends, so end it here (-v keeps the orderly
         * teardown and reports its time). */
        fflush(NULL);
        ws_cli_detach_done(status, ws_gpu_device_shared(o.gpu_ordinal));
        _exit(status);
    }
    const double t_free = ws_now();
    ws_gpu_batcher_free(r.batcher); /* before the stem: it shares the stem's context */
    const double t_stem = ws_now();
    ws_stem_free(r.stem);
    if (o.verbose && r.on_gpu)
        ws_eprintf(PROG ": GPU teardown %.0f ms (batches %.0f ms, stem and context %.0f ms)",
                   1e3 * (ws_now() - t_free), 1e3 * (t_stem - t_free), 1e3 * (ws_now() - t_stem));
    if (have_model)
        ws_model_free(&model);
    fflush(NULL);
    ws_cli_detach_done(status, 1); /* the GPU (if any) let go above */
    return status;
}

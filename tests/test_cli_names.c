/* test_cli_names.c - whisper-stem end to end: the link trust rule for the paths written,
 * --check without a GPU and the CPU-fallback note.
 * Each test works in a fresh temporary directory and runs the binary through the shell.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

/* A short tone (0.5 s at 16 kHz) in format (SF_FORMAT_WAV | SF_FORMAT_PCM_16, FLAC...). */
static void put_audio(const char *path, int format)
{
    enum { N = 8000 };
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(0.3 * sin(2 * M_PI * 440.0 * i / 16000.0));
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = format};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert(f, "sf_open %s: %s", path, sf_strerror(NULL));
    cr_assert_eq(sf_writef_float(f, x, N), N);
    sf_close(f);
}
#define WAV (SF_FORMAT_WAV | SF_FORMAT_PCM_16)

/* ---- the link trust rule for every path written ----------------------------------- */

/* dir/tmp: sticky and world-writable, as /tmp. */
static void sticky_dir(const char *dir, char *out, size_t cap)
{
    snprintf(out, cap, "%s/tmp", dir);
    cr_assert_eq(mkdir(out, 0777), 0);
    cr_assert_eq(chmod(out, 01777), 0);
}

/* A link at `at` to `to`, owned by nobody. */
static void plant(const char *to, const char *at)
{
    cr_assert_eq(symlink(to, at), 0, "symlink %s", at);
    cr_assert_eq(lchown(at, 65534, 65534), 0);
}

Test(cli, planted_link_to_a_device_or_fifo_is_not_opened)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to plant a link owned by another user");
    const char *dir = test_tmpdir();
    char sticky[1024], link_[1200], fifo[1024], cmd[8192], err[4096];
    sticky_dir(dir, sticky, sizeof sticky);
    snprintf(link_, sizeof link_, "%s/dev.npy", sticky);
    plant("/dev/null", link_);
    snprintf(cmd, sizeof cmd, "timeout 60 %s --mel %s -o %s", ws_bin(), test_sample("jfk.wav"),
             link_);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "refusing to follow a symbolic link"), "%s", err);
    /* a FIFO: opening it would wait for a reader (before: the run hung) */
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    snprintf(link_, sizeof link_, "%s/fifo.npy", sticky);
    plant(fifo, link_);
    snprintf(cmd, sizeof cmd, "timeout 60 %s --mel %s -o %s", ws_bin(), test_sample("jfk.wav"),
             link_);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "refusing to follow a symbolic link"), "%s", err);
}

/* ---- --check and the CPU-fallback note ------------------------------------------- */

Test(cli, check_without_a_gpu_is_skipped_with_status_3)
{
    const char *dir = test_tmpdir();
    char cmd[4096], err[4096], outp[1024];
    snprintf(outp, sizeof outp, "%s/check.txt", dir);
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=/nonexistent/libcuda.so.1 %s --check >%s",
             ws_bin(), outp);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 3, "%s", err);
    size_t len;
    char *text = read_file(outp, &len);
    cr_assert(text);
    cr_assert(!strncmp(text, "skipped: no usable GPU (no CUDA driver", 38), "%s", text);
    cr_assert_null(strstr(text, "FAIL"), "%s", text);
    free(text);
}

Test(cli, fallback_note_needs_a_driver_or_verbose)
{
    const char *dir = test_tmpdir();
    char cmd[8192], err[8192], model[1024], p[1024];
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(cmd, sizeof cmd, "%s --n-mels 80 --d 64 --seed 7 -o %s", ws_mkmodel(), model);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/x.wav", dir);
    put_audio(p, WAV);
    /* no driver: a CPU machine, nothing to say */
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=/nonexistent/libcuda.so.1 %s -m %s %s -o %s/o.npy",
             ws_bin(), model, p, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert_null(strstr(err, "no usable GPU"), "%s", err);
    /* -v says it */
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=/nonexistent/libcuda.so.1 %s -v -m %s %s -o %s/o.npy",
             ws_bin(), model, p, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "no usable GPU (no CUDA driver"), "%s", err);
    /* a driver library that loads but has no device: said without -v (a stand-in
     * library whose cuInit reports CUDA_ERROR_NO_DEVICE) */
    char src[1024], so[1024];
    snprintf(src, sizeof src, "%s/cuda.c", dir);
    snprintf(so, sizeof so, "%s/libcuda.so.1", dir);
    static const char *syms[] = {
        "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
        "cuDeviceGetAttribute", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
        "cuCtxSetCurrent", "cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize",
        "cuEventCreate", "cuEventDestroy_v2", "cuEventRecord", "cuEventSynchronize",
        "cuEventQuery", "cuEventElapsedTime_v2", "cuMemAlloc_v2", "cuMemFree_v2",
        "cuMemAllocHost_v2", "cuMemFreeHost", "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2",
        "cuMemsetD32Async", "cuModuleLoadDataEx", "cuModuleUnload", "cuModuleGetFunction",
        "cuFuncGetAttribute", "cuFuncSetAttribute", "cuLaunchKernel"};
    FILE *f = fopen(src, "w");
    cr_assert(f);
    fprintf(f, "int cuInit(unsigned f) { (void)f; return 100; }\n"
               "int cuGetErrorName(int e, const char **s) { (void)e; *s = \"CUDA_ERROR_NO_DEVICE\"; return 0; }\n"
               "int cuGetErrorString(int e, const char **s) { (void)e; *s = \"no CUDA-capable device is detected\"; return 0; }\n");
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        fprintf(f, "int %s(void) { return 100; }\n", syms[i]);
    fclose(f);
    snprintf(cmd, sizeof cmd, "${CC:-cc} -shared -fPIC -o %s %s", so, src);
    if (run_cmd(cmd, err, sizeof err) != 0)
        cr_skip_test("no C compiler to build a stand-in driver: %s", err);
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=%s %s -m %s %s -o %s/o.npy", so, ws_bin(),
             model, p, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "no usable GPU (cuInit") && strstr(err, "running on the CPU"), "%s", err);
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=%s %s -q -m %s %s -o %s/o.npy", so, ws_bin(),
             model, p, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert_eq(err[0], 0, "-q: nothing: %s", err);
    /* --check with that driver: no usable GPU either, skipped */
    snprintf(cmd, sizeof cmd, "WHISPER_STEM_LIBCUDA=%s %s --check >/dev/null", so, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 3, "%s", err);
}

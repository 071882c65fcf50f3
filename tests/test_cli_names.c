/* test_cli_names.c - whisper-stem's inputs, output names and where it writes, end to end:
 * --list's bounds, duplicate lines, clashes (over the whole list, before --shard),
 * --keep-ext, -O's parents, --root through symbolic links, the link trust rule for every
 * path written, --check without a GPU and the CPU-fallback note.
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
#include "output.h"

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

static void put_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---- --list ------------------------------------------------------------------------- */

Test(cli, list_line_without_a_newline_is_refused_at_once)
{
    const char *dir = test_tmpdir();
    char cmd[4096], err[4096], bin[1024];
    /* /dev/zero: one endless line (before: read without end, gigabytes in seconds). The
     * address-space bound makes that a quick failure; AddressSanitizer's shadow memory
     * cannot start under one, so a sanitized build relies on the timeout alone. */
#if defined(__SANITIZE_ADDRESS__)
    const char *vlimit = "";
#else
    const char *vlimit = "ulimit -v 4000000; ";
#endif
    snprintf(cmd, sizeof cmd, "%stimeout 30 %s --mel --max-memory 64M -O %s/out "
             "--list /dev/zero", vlimit, ws_bin(), dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "--list /dev/zero: line 1 is longer than 65536 bytes"), "%s", err);
    cr_assert_eq(count(err, "\n"), 1, "one line: %s", err);
    /* a big binary file without NUL or newline bytes */
    snprintf(bin, sizeof bin, "%s/big.bin", dir);
    FILE *f = fopen(bin, "wb");
    cr_assert(f);
    for (int i = 0; i < (8 << 20); i++)
        fputc(0x80 + i % 100, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "timeout 60 %s --mel -O %s/out --list %s", ws_bin(), dir, bin);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "line 1 is longer than 65536 bytes"), "%s", err);
    /* a pipe */
    snprintf(cmd, sizeof cmd, "head -c 5000000 /dev/zero | tr '\\0' x | timeout 60 %s --mel -O %s/out --list -",
             ws_bin(), dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "--list -: line 1 is longer than 65536 bytes"), "%s", err);
    /* the line number of a long line after good ones */
    snprintf(cmd, sizeof cmd, "(printf 'a.wav\\nb.wav\\n'; head -c 70000 /dev/zero | tr '\\0' y) | "
             "timeout 60 %s --mel -O %s/out --list -", ws_bin(), dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "line 3 is longer"), "%s", err);
    struct stat st;
    cr_assert_neq(stat(bin, &st), -1);
    snprintf(cmd, sizeof cmd, "%s/out", dir);
    cr_assert_neq(stat(cmd, &st), 0, "nothing was made");
}

Test(cli, a_path_of_64k_bytes_is_one_input)
{
    const char *dir = test_tmpdir();
    char cmd[4096], err[4096];
    /* 65536 bytes and CR LF: read as a path (no such file: it fails alone, status 1) */
    snprintf(cmd, sizeof cmd, "(head -c 65536 /dev/zero | tr '\\0' z; printf '\\r\\n') | "
             "timeout 60 %s --mel -q -O %s/out --list -", ws_bin(), dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_null(strstr(err, "longer than"), "%s", err);
}

Test(cli, duplicate_inputs_are_done_once_with_one_warning)
{
    const char *dir = test_tmpdir();
    char a[1024], list[1024], man[1024], cmd[8192], err[4096], text[8192];
    snprintf(a, sizeof a, "%s/a.wav", dir);
    snprintf(list, sizeof list, "%s/list.txt", dir);
    snprintf(man, sizeof man, "%s/m.jsonl", dir);
    put_audio(a, WAV);
    snprintf(text, sizeof text, "%s\n%s\n# %s\n%s\r\n", a, a, a, a);
    put_text(list, text);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s/out --manifest %s %s --list %s", ws_bin(), dir, man,
             a, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "3 duplicate inputs dropped"), "%s", err);
    cr_assert_eq(count(err, "duplicate"), 1, "%s", err);
    size_t len;
    char *m = read_file(man, &len);
    cr_assert(m);
    cr_assert_eq(count(m, "\n"), 1, "one manifest line: %s", m);
    free(m);
}

/* ---- clashes ------------------------------------------------------------------------ */

Test(cli, every_clash_is_reported_in_one_pass)
{
    const char *dir = test_tmpdir();
    char list[1024], cmd[8192], err[8192], text[8192];
    snprintf(list, sizeof list, "%s/list.txt", dir);
    size_t k = 0;
    for (int i = 0; i < 12; i++) /* d0/a.wav .. d11/a.wav: 11 clashes */
        k += (size_t)snprintf(text + k, sizeof text - k, "%s/d%d/a.wav\n", dir, i);
    snprintf(text + k, sizeof text - k, "%s/x.wav\n%s/x.flac\n", dir, dir); /* and 1 */
    put_text(list, text);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s/out --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert_eq(count(err, "would both write"), 10, "ten pairs shown: %s", err);
    cr_assert(strstr(err, "12 clashes in all; --keep-ext names outputs with their extensions"),
              "%s", err);
    /* --keep-ext: x.wav and x.flac part; the d*\/a.wav still clash (-O flattens) */
    snprintf(cmd, sizeof cmd, "%s --mel --keep-ext -O %s/out --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "11 clashes in all; --root DIR keeps"), "%s", err);
}

/* Inputs whose last part is empty, "." or ".." name directories: under -O they would all write
 * OUT/.npy or OUT/..npy, a clash that stopped the run. Each fails alone; the others run. */
Test(cli, inputs_that_end_in_a_directory_fail_alone_under_outdir)
{
    const char *dir = test_tmpdir();
    char a[1024], sub[1024], list[1024], out[1024], cmd[8192], err[8192], text[8192];
    snprintf(a, sizeof a, "%s/x.wav", dir);
    snprintf(sub, sizeof sub, "%s/d", dir);
    snprintf(list, sizeof list, "%s/list.txt", dir);
    put_audio(a, WAV);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(text, sizeof text, "%s/\n%s/d/\n%s\n%s/.\n%s/d/..\n", dir, dir, a, dir, dir);
    put_text(list, text);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s/out --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_null(strstr(err, "would both write"), "%s", err);
    cr_assert_eq(count(err, "the path ends in a directory"), 4, "%s", err);
    cr_assert(strstr(err, "1 written, 4 failed"), "%s", err);
    snprintf(out, sizeof out, "%s/out/x.npy", dir);
    cr_assert_eq(access(out, F_OK), 0, "%s", err);
}

Test(cli, clashes_across_shards_are_found_by_every_task)
{
    const char *dir = test_tmpdir();
    char list[1024], cmd[8192], err[4096], text[4096], p[1024];
    snprintf(list, sizeof list, "%s/list.txt", dir);
    snprintf(p, sizeof p, "%s/x.wav", dir);
    put_audio(p, WAV);
    snprintf(p, sizeof p, "%s/x.flac", dir);
    put_audio(p, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
    snprintf(text, sizeof text, "%s/x.wav\n%s/x.flac\n", dir, dir);
    put_text(list, text);
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s --mel -O %s/out --shard %d/2 --list %s", ws_bin(), dir, i,
                 list);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "task %d: %s", i, err);
        cr_assert(strstr(err, "x.wav' and '") && strstr(err, "x.flac' would both write"),
                  "task %d: %s", i, err);
    }
    snprintf(p, sizeof p, "%s/out/x.npy", dir);
    cr_assert_not(file_exists(p), "nothing written");
}

Test(cli, keep_ext_names_outputs_with_their_extensions)
{
    const char *dir = test_tmpdir();
    char cmd[8192], err[4096], p[1024];
    snprintf(p, sizeof p, "%s/r", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/r/s", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/r/s/x.wav", dir);
    put_audio(p, WAV);
    snprintf(p, sizeof p, "%s/r/s/x.flac", dir);
    put_audio(p, SF_FORMAT_FLAC | SF_FORMAT_PCM_16);
    snprintf(cmd, sizeof cmd, "%s --mel --keep-ext -O %s/out %s/r/s/x.wav %s/r/s/x.flac", ws_bin(),
             dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    const char *want[] = {"out/x.wav.npy", "out/x.flac.npy"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, want[i]);
        cr_assert(file_exists(p), "%s", p);
    }
    snprintf(cmd, sizeof cmd, "%s --mel --keep-ext -O %s/tree --root %s/r %s/r/s/x.wav", ws_bin(),
             dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/tree/s/x.wav.npy", dir);
    cr_assert(file_exists(p), "%s", p);
    snprintf(cmd, sizeof cmd, "%s --mel --keep-ext -o %s/o.npy %s/r/s/x.wav", ws_bin(), dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "--keep-ext needs -O: %s", err);
}

/* ---- where outputs go ---------------------------------------------------------------- */

Test(cli, outdir_parents_are_created)
{
    const char *dir = test_tmpdir();
    char cmd[8192], err[4096], p[1024];
    snprintf(p, sizeof p, "%s/x.wav", dir);
    put_audio(p, WAV);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s/a/b/c %s", ws_bin(), dir, p);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/a/b/c/x.npy", dir);
    cr_assert(file_exists(p), "%s", p);
}

Test(cli, root_through_a_symbolic_link_mirrors_the_tree)
{
    const char *dir = test_tmpdir();
    char cmd[8192], err[4096], p[1024], q[1024];
    snprintf(p, sizeof p, "%s/real", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/real/sub", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/real/sub/a.wav", dir);
    put_audio(p, WAV);
    snprintf(p, sizeof p, "%s/other.wav", dir);
    put_audio(p, WAV);
    snprintf(q, sizeof q, "%s/link", dir);
    cr_assert_eq(symlink("real", q), 0);
    /* the root a link, the input by its real path; then the other way round */
    const char *cases[2][2] = {{"link", "real"}, {"real", "link"}};
    for (int i = 0; i < 2; i++) {
        snprintf(cmd, sizeof cmd, "%s --mel -O %s/out%d --root %s/%s %s/%s/sub/a.wav", ws_bin(),
                 dir, i, dir, cases[i][0], dir, cases[i][1]);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
        snprintf(p, sizeof p, "%s/out%d/sub/a.npy", dir, i);
        cr_assert(file_exists(p), "%s: %s", p, err);
    }
    /* outside the root still fails, alone */
    snprintf(cmd, sizeof cmd, "%s --mel -O %s/out9 --root %s/link %s/other.wav %s/link/sub/a.wav",
             ws_bin(), dir, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "not under --root"), "%s", err);
    snprintf(p, sizeof p, "%s/out9/sub/a.npy", dir);
    cr_assert(file_exists(p), "%s", p);
}

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

static void assert_precious(const char *victim)
{
    size_t len;
    char *v = read_file(victim, &len);
    cr_assert(v && len == 8 && !memcmp(v, "precious", 8), "%s was written", victim);
    free(v);
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

Test(cli, planted_links_for_manifest_and_json_are_refused_before_any_work)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to plant a link owned by another user");
    const char *dir = test_tmpdir();
    char sticky[1024], link_[1200], victim[1024], cmd[8192], err[4096], out[1024];
    sticky_dir(dir, sticky, sizeof sticky);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    put_text(victim, "precious");
    snprintf(out, sizeof out, "%s/out.npy", dir);
    const char *opts[] = {"--manifest", "--json"};
    for (int i = 0; i < 2; i++) {
        snprintf(link_, sizeof link_, "%s/report%d", sticky, i);
        plant(victim, link_);
        snprintf(cmd, sizeof cmd, "%s --mel %s -o %s %s %s", ws_bin(), test_sample("jfk.wav"), out,
                 opts[i], link_);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s: %s", opts[i], err);
        cr_assert(strstr(err, opts[i]) && strstr(err, "refusing to follow a symbolic link"),
                  "%s", err);
        assert_precious(victim);
        cr_assert_not(file_exists(out), "%s: the output was made before the refusal", opts[i]);
    }
}

Test(cli, planted_directory_links_in_the_output_tree_are_refused)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to plant a link owned by another user");
    const char *dir = test_tmpdir();
    char sticky[1024], p[1200], victim[1024], cmd[8192], err[4096];
    sticky_dir(dir, sticky, sizeof sticky); /* the output tree, writable by all */
    snprintf(victim, sizeof victim, "%s/victim", dir);
    cr_assert_eq(mkdir(victim, 0755), 0);
    snprintf(p, sizeof p, "%s/in", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/in/sub", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/in/sub/a.wav", dir);
    put_audio(p, WAV);
    snprintf(p, sizeof p, "%s/in/sub/deeper", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/in/sub/deeper/b.wav", dir);
    put_audio(p, WAV);
    /* OUT/sub planted: a.npy would land in victim/, deeper/ be made there */
    snprintf(p, sizeof p, "%s/sub", sticky);
    plant(victim, p);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s --root %s/in %s/in/sub/a.wav %s/in/sub/deeper/b.wav",
             ws_bin(), sticky, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_eq(count(err, "refusing to follow"), 2, "%s", err);
    snprintf(p, sizeof p, "%s/a.npy", victim);
    cr_assert_not(file_exists(p), "written through the planted link");
    snprintf(p, sizeof p, "%s/deeper", victim);
    cr_assert_not(file_exists(p), "a directory made through the planted link");
    /* -O itself a planted link: refused before anything */
    snprintf(p, sizeof p, "%s/out", sticky);
    plant(victim, p);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s %s/in/sub/a.wav", ws_bin(), p, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "-O ") && strstr(err, "refusing to follow"), "%s", err);
    snprintf(p, sizeof p, "%s/a.npy", victim);
    cr_assert_not(file_exists(p));
    /* a planted link at an output name in a flat -O */
    snprintf(p, sizeof p, "%s/a.npy", sticky);
    snprintf(victim, sizeof victim, "%s/victim-file", dir);
    put_text(victim, "precious");
    plant(victim, p);
    snprintf(cmd, sizeof cmd, "%s --mel -O %s %s/in/sub/a.wav", ws_bin(), sticky, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    assert_precious(victim);
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
        "cuMemcpyDtoDAsync_v2",
        "cuMemsetD32Async", "cuModuleLoadDataEx", "cuModuleUnload", "cuModuleGetFunction",
        "cuFuncGetAttribute", "cuFuncSetAttribute", "cuLaunchKernel", "cuCtxGetCurrent"};
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

Test(cli, every_link_on_an_output_path_is_checked)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to plant a link owned by another user");
    const char *dir = test_tmpdir();
    char sticky[1024], p[1200], q[1200], d[1024];
    ws_err err;
    sticky_dir(dir, sticky, sizeof sticky);
    snprintf(d, sizeof d, "%s/d", dir);
    cr_assert_eq(mkdir(d, 0755), 0);
    /* our link in the sticky directory, to a link of nobody's there: the chain is refused */
    snprintf(p, sizeof p, "%s/theirs", sticky);
    plant(d, p);
    snprintf(p, sizeof p, "%s/ours", sticky);
    cr_assert_eq(symlink("theirs", p), 0);
    snprintf(q, sizeof q, "%s/ours/sub/x.npy", sticky);
    cr_assert_eq(ws_path_links_trusted(q, &err), -1);
    cr_assert(strstr(err.msg, "/theirs, a symbolic link that another user owns"), "%s", err.msg);
    /* a link of ours to a directory of ours, a missing tail, a loop: nothing refused */
    snprintf(p, sizeof p, "%s/mine", dir);
    cr_assert_eq(symlink("d", p), 0);
    snprintf(q, sizeof q, "%s/mine/a/b/c.npy", dir);
    cr_assert_eq(ws_path_links_trusted(q, &err), 0, "%s", err.msg);
    snprintf(p, sizeof p, "%s/l1", dir);
    cr_assert_eq(symlink("l2", p), 0);
    snprintf(p, sizeof p, "%s/l2", dir);
    cr_assert_eq(symlink("l1", p), 0);
    snprintf(q, sizeof q, "%s/l1/x", dir);
    cr_assert_eq(ws_path_links_trusted(q, &err), 0, "a loop is for the open to report");
    cr_assert_eq(ws_path_links_trusted("", &err), 0);
    cr_assert_eq(ws_path_links_trusted("/", &err), 0);
    /* nobody's link outside a sticky directory follows the kernel's rule: trusted */
    snprintf(p, sizeof p, "%s/plain", dir);
    plant(d, p);
    snprintf(q, sizeof q, "%s/plain/x.npy", dir);
    cr_assert_eq(ws_path_links_trusted(q, &err), 0, "%s", err.msg);
}

Test(cli, planted_links_at_shard_records_are_no_record)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to plant a link owned by another user");
    const char *dir = test_tmpdir();
    char sticky[1024], p[1200], q[1200], cmd[8192], err[4096];
    sticky_dir(dir, sticky, sizeof sticky);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        put_audio(p, WAV);
    }
    snprintf(cmd, sizeof cmd, "timeout 60 %s --mel -O %s --tar-size 2 --skip-existing %s/a.wav "
             "%s/b.wav", ws_bin(), sticky, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* the tar, then the index, moved away and a link of nobody's put in its place */
    const char *ext[] = {"tar", "jsonl"};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/shard-00000%d.%s", sticky, k, ext[k]);
        snprintf(q, sizeof q, "%s/copy.%s", dir, ext[k]);
        cr_assert_eq(rename(p, q), 0, "%s", p);
        plant(q, p);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        cr_assert(strstr(err, "2 written, 0 failed, 0 skipped"), "%s: %s", ext[k], err);
        cr_assert(strstr(err, "no record"), "%s", err);
    }
}

/* The records beside the outputs (sidecars, shard indexes) are outputs too: --manifest,
 * --json and the inputs are none of them. */
Test(cli, manifest_json_and_inputs_are_no_record_path)
{
    const char *dir = test_tmpdir();
    char p[1200], cmd[8192], err[4096];
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        put_audio(p, WAV);
    }
    snprintf(p, sizeof p, "%s/o7", dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    snprintf(p, sizeof p, "%s/o7/a.wav.json", dir);
    put_audio(p, WAV);
    snprintf(cmd, sizeof cmd, "cd %s && timeout 60 %s --mel -O o8 --manifest o8/a.json a.wav b.wav",
             dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "--manifest o8/a.json is also the sidecar of 'a.wav'"), "%s", err);
    cr_assert_eq(count(err, "\n"), 1, "one line: %s", err);
    snprintf(cmd, sizeof cmd, "cd %s && timeout 60 %s --mel -O o9 --tar-size 2 --json "
             "o9/shard-000000.jsonl a.wav b.wav", dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "--json o9/shard-000000.jsonl is also the shard index of 'a.wav'"),
              "%s", err);
    snprintf(cmd, sizeof cmd, "cd %s && timeout 60 %s --mel -O o7 --keep-ext a.wav o7/a.wav.json",
             dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "the sidecar o7/a.wav.json is the input 'o7/a.wav.json'"), "%s", err);
    snprintf(p, sizeof p, "%s/o7/a.wav.json", dir);
    size_t len = 0;
    char *v = read_file(p, &len);
    cr_assert(v && len > 44 && !memcmp(v, "RIFF", 4), "the input was overwritten");
    free(v);
}

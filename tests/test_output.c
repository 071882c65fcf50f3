/* test_output.c - where outputs go and what is left behind (output.h,
 * signals.h): special files and symbolic links named by -o, the umask, long
 * names, termination signals, SIGKILL, the file size limit, and the PTX dump
 * on a JIT failure. CLI tests run the binary as a user does; inputs are
 * written with libsndfile, models with ws-mkmodel.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "cuda/driver.h"
#include "helpers.h"
#include "output.h"

/* --- helpers ------------------------------------------------------------- */

static void write_tone(const char *path, double seconds, double f0)
{
    size_t n = (size_t)(seconds * 16000);
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(0.3 * sin(2 * M_PI * f0 * (double)i / 16000.0));
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert(f, "sf_open %s: %s", path, sf_strerror(NULL));
    cr_assert_eq(sf_writef_float(f, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(f);
    free(x);
}

static void mkmodel(const char *dir, const char *name, const char *args, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    char cmd[2048], err[1024];
    snprintf(cmd, sizeof cmd, "%s %s -o %s", ws_mkmodel(), args, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", cmd, err);
}

/* 1 when path is a whole '<f4' .npy: magic, 64-aligned header, payload = shape. */
static int npy_complete(const char *path)
{
    size_t len;
    unsigned char *b = read_file(path, &len);
    if (!b)
        return 0;
    int ok = 0;
    if (len >= 10 && memcmp(b, "\x93NUMPY\x01\x00", 8) == 0) {
        size_t hl = 10 + (b[8] | (size_t)b[9] << 8);
        char *h = hl <= len ? strndup((char *)b + 10, hl - 10) : NULL;
        char *p = h ? strstr(h, "'shape': (") : NULL;
        if (p) {
            size_t count = 1;
            p += 10;
            while (*p && *p != ')') {
                count *= (size_t)strtoll(p, &p, 10);
                while (*p == ',' || *p == ' ')
                    p++;
            }
            ok = hl % 64 == 0 && len - hl == count * 4;
        }
        free(h);
    }
    free(b);
    return ok;
}

/* A sidecar x.json: one whole JSON line, and a complete x.npy beside it. */
static int sidecar_complete(const char *path)
{
    char npy[4096];
    size_t n = 0, l = strlen(path);
    snprintf(npy, sizeof npy, "%.*s.npy", (int)(l - 5), path);
    char *t = read_file(path, &n);
    int ok = t && n > 2 && t[0] == '{' && t[n - 2] == '}' && t[n - 1] == '\n' && npy_complete(npy);
    free(t);
    return ok;
}

/* Entries of dir other than ., .. and complete sidecars: how many, how many are complete
 * .npy files; the first other name goes to other (cap bytes). */
static int scan_dir(const char *dir, int *complete, char *other, size_t cap)
{
    DIR *d = opendir(dir);
    cr_assert(d, "opendir %s", dir);
    int n = 0;
    *complete = 0;
    if (cap)
        other[0] = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json") && e->d_name[0] != '.' &&
            sidecar_complete(p))
            continue; /* x.json beside a complete x.npy: the sidecar, written after it */
        n++;
        if (l > 4 && !strcmp(e->d_name + l - 4, ".npy") && e->d_name[0] != '.' && npy_complete(p))
            (*complete)++;
        else if (cap && !other[0])
            snprintf(other, cap, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

/* A whole file as a NUL-terminated string (malloc'd), NULL if unreadable. */
static char *read_text(const char *path, size_t *len)
{
    size_t n;
    char *b = read_file(path, &n);
    char *t = b ? realloc(b, n + 1) : NULL;
    if (!t) {
        free(b);
        return NULL;
    }
    t[n] = 0;
    if (len)
        *len = n;
    return t;
}

static int count_prefix(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    cr_assert(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Starts argv[0] with stderr to errpath, default signal dispositions and
 * nothing blocked (as a shell starts it). */
static pid_t spawn(char *const argv[], const char *errpath)
{
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        for (int s = 1; s < 32; s++)
            if (s != SIGKILL && s != SIGSTOP)
                signal(s, SIG_DFL);
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0)
            dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* waitpid with a deadline; kills the child with SIGKILL past it. */
static int wait_for(pid_t pid, double seconds)
{
    double t0 = now_s();
    int st = 0;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (now_s() - t0 > seconds) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            cr_assert_fail("child %d did not finish in %.0f s", (int)pid, seconds);
        }
        sleep_ms(5);
    }
}

/* A run that takes seconds on the CPU: the large-v3-sized stem (d 1280) on
 * n inputs of 90 s (3 windows each), one thread. */
typedef struct {
    char dir[512], model[600], out[600], err[600];
    char in[8][600];
    char *argv[24];
    int n;
} slow_run;

static void slow_run_init(slow_run *r, int n)
{
    const char *dir = test_tmpdir();
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    mkmodel(r->dir, "m.gguf", "--size large-v3", r->model, sizeof r->model);
    snprintf(r->out, sizeof r->out, "%s/out", r->dir);
    snprintf(r->err, sizeof r->err, "%s/stderr.txt", r->dir);
    cr_assert_eq(mkdir(r->out, 0755), 0);
    int k = 0;
    r->argv[k++] = (char *)ws_bin();
    r->argv[k++] = "-m";
    r->argv[k++] = r->model;
    r->argv[k++] = "--device";
    r->argv[k++] = "cpu";
    r->argv[k++] = "--threads";
    r->argv[k++] = "1";
    r->argv[k++] = "-O";
    r->argv[k++] = r->out;
    r->n = n;
    for (int i = 0; i < n; i++) {
        snprintf(r->in[i], sizeof r->in[i], "%.500s/in%d.wav", dir, i);
        if (i == 0)
            write_tone(r->in[i], 90.0, 440.0);
        else
            cr_assert_eq(link(r->in[0], r->in[i]), 0);
        r->argv[k++] = r->in[i];
    }
    r->argv[k] = NULL;
}

/* Starts the slow run and sends sig: as soon as a name other than a
 * finished .npy shows in the output directory (a temporary file being
 * written), else 300 ms after the first output is complete. Returns the wait
 * status. */
static int interrupt_slow_run(slow_run *r, int sig)
{
    pid_t pid = spawn(r->argv, r->err);
    double t0 = now_s(), first = 0;
    for (;;) {
        int complete;
        char other[256];
        int n = scan_dir(r->out, &complete, other, sizeof other);
        if (n > complete)
            break; /* something being written */
        if (complete && !first)
            first = now_s();
        if (first && now_s() - first > 0.3)
            break;
        if (now_s() - t0 > 60) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            cr_assert_fail("no output appeared in 60 s");
        }
        int st;
        cr_assert_eq(waitpid(pid, &st, WNOHANG), 0, "the run ended before it was interrupted");
        sleep_ms(1);
    }
    kill(pid, sig);
    return wait_for(pid, 60);
}

/* The signal test: exit status 128 + sig, one line with the counts, only
 * complete outputs left. */
static void check_interrupted(int sig, const char *name, int named_temp)
{
    slow_run r;
    slow_run_init(&r, 6);
    if (named_temp) /* no O_TMPFILE: the signal thread must remove the registered name */
        setenv("WHISPER_STEM_NO_TMPFILE", "1", 1);
    int st = interrupt_slow_run(&r, sig);
    cr_assert(WIFEXITED(st), "%s: the process died by signal %d instead of exiting",
              name, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    cr_assert_eq(WEXITSTATUS(st), 128 + sig, "%s: exit status %d", name, WEXITSTATUS(st));
    int complete;
    char other[256];
    int n = scan_dir(r.out, &complete, other, sizeof other);
    cr_assert_eq(n, complete, "%s: '%s' left in the output directory", name, other);
    cr_assert_lt(complete, 6, "%s: the run was not interrupted", name);
    size_t len;
    char *e = read_text(r.err, &len);
    cr_assert(e);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += e[i] == '\n';
    cr_assert_eq(lines, 1, "%s: stderr:\n%s", name, e);
    char want[128];
    snprintf(want, sizeof want, "whisper-stem: interrupted by %s: ", name);
    cr_assert(strstr(e, want), "stderr: %s", e);
    int written = -1, total = -1, failed = -1;
    cr_assert_eq(sscanf(strstr(e, want) + strlen(want), "%d of %d inputs written, %d failed", &written,
                        &total, &failed), 3, "stderr: %s", e);
    cr_assert(strstr(e, "; no partial output left\n"), "stderr: %s", e);
    cr_assert_eq(total, 6);
    cr_assert_eq(failed, 0);
    /* an output renamed into place an instant before the signal may not be counted yet */
    cr_assert(written <= complete && complete <= written + 1, "%d written said, %d files", written,
              complete);
    free(e);
}

/* --- special outputs (-o) ------------------------------------------------ */

Test(output, symlink_output_keeps_the_link_and_replaces_the_target)
{
    const char *dir = test_tmpdir();
    char in[600], target[600], link_path[600], cmd[2048], err[1024];
    snprintf(in, sizeof in, "%s/in.wav", dir);
    snprintf(target, sizeof target, "%s/target.npy", dir);
    snprintf(link_path, sizeof link_path, "%s/link.npy", dir);
    write_tone(in, 2.0, 440.0);
    FILE *f = fopen(target, "w");
    fputs("old", f);
    fclose(f);
    cr_assert_eq(symlink("target.npy", link_path), 0);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), in, link_path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    struct stat st;
    cr_assert_eq(lstat(link_path, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced by a file");
    cr_assert(npy_complete(target), "the link's target does not hold the output");
    /* a dangling link: its target is created */
    char dangling[600], made[600];
    snprintf(dangling, sizeof dangling, "%s/dangling.npy", dir);
    snprintf(made, sizeof made, "%s/made.npy", dir);
    cr_assert_eq(symlink("made.npy", dangling), 0);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), in, dangling);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert_eq(lstat(dangling, &st), 0);
    cr_assert(S_ISLNK(st.st_mode));
    cr_assert(npy_complete(made));
    /* a directory is an error */
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), in, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1);
    cr_assert(strstr(err, "is a directory"), "%s", err);
}

/* A null device of our own, made with mknod in the test directory (a
 * program that replaces it does no harm), then /dev/null itself. */
Test(output, device_output_stays_a_device_and_exits_0)
{
    const char *dir = test_tmpdir();
    char in[600], dev[600], cmd[2048], err[1024];
    snprintf(in, sizeof in, "%s/in.wav", dir);
    snprintf(dev, sizeof dev, "%s/null.npy", dir);
    write_tone(in, 2.0, 440.0);
    const char *node = dev;
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) != 0) {
        if (geteuid() == 0)
            cr_skip_test("root without CAP_MKNOD: not risking /dev/null");
        node = "/dev/null"; /* not root: it cannot be replaced whatever the program does */
    }
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), in, node);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    struct stat st;
    cr_assert_eq(lstat(node, &st), 0);
    cr_assert(S_ISCHR(st.st_mode), "%s is no longer a character device", node);
    cr_assert_eq(st.st_rdev, makedev(1, 3));
    cr_assert_eq(lstat("/dev/null", &st), 0);
    cr_assert(S_ISCHR(st.st_mode));
    if (node == dev) { /* the fixed program on the real one */
        snprintf(cmd, sizeof cmd, "%s --mel %s -o /dev/null", ws_bin(), in);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        cr_assert_eq(lstat("/dev/null", &st), 0);
        cr_assert(S_ISCHR(st.st_mode), "/dev/null is no longer a character device");
    }
}

Test(output, fifo_with_a_reader_receives_the_bytes_and_stays_a_fifo, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char in[600], fifo[600], got[600], ref[600], cmd[2048], err[1024];
    snprintf(in, sizeof in, "%s/in.wav", dir);
    snprintf(fifo, sizeof fifo, "%s/pipe.npy", dir);
    snprintf(got, sizeof got, "%s/got.bin", dir);
    snprintf(ref, sizeof ref, "%s/ref.npy", dir);
    write_tone(in, 2.0, 440.0);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    snprintf(cmd, sizeof cmd, "cat %s > %s", fifo, got);
    char *cat_argv[] = {"/bin/sh", "-c", cmd, NULL};
    pid_t reader = spawn(cat_argv, "/dev/null");
    char cli[2048];
    snprintf(cli, sizeof cli, "%s --mel %s -o %s", ws_bin(), in, fifo);
    int rc = run_cmd(cli, err, sizeof err);
    struct stat st;
    cr_assert_eq(lstat(fifo, &st), 0);
    int still_fifo = S_ISFIFO(st.st_mode);
    if (!still_fifo)
        kill(reader, SIGKILL); /* its FIFO is gone: it would wait forever */
    wait_for(reader, 30);
    cr_assert(still_fifo, "the FIFO was replaced by a regular file");
    cr_assert_eq(rc, 0, "%s", err);
    snprintf(cli, sizeof cli, "%s --mel %s -o %s", ws_bin(), in, ref);
    cr_assert_eq(run_cmd(cli, err, sizeof err), 0, "%s", err);
    size_t ng, nr;
    char *g = read_file(got, &ng), *r = read_file(ref, &nr);
    cr_assert(g && r);
    cr_assert_eq(ng, nr, "the reader got %zu bytes, a file gets %zu", ng, nr);
    cr_assert(memcmp(g, r, nr) == 0, "the reader got other bytes than a file gets");
    free(g);
    free(r);
}

/* --- the umask ----------------------------------------------------------- */

Test(output, outputs_honour_the_umask)
{
    const char *dir = test_tmpdir();
    char in[600], cmd[2048], err[1024], path[700];
    snprintf(in, sizeof in, "%s/in.wav", dir);
    write_tone(in, 2.0, 440.0);
    const struct { const char *mask, *env; unsigned mode; } cases[] = {
        {"027", "", 0640}, {"022", "", 0644}, {"077", "", 0600},
        {"027", "WHISPER_STEM_NO_TMPFILE=1", 0640}, /* through a named temporary file */
    };
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "umask %s; %s %s --mel %s -o %s/out%d.npy --json %s/report%d.json",
                 cases[i].mask, cases[i].env, ws_bin(), in, dir, i, dir, i);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(cmd, sizeof cmd, "umask %s; %s %s --size tiny -o %s/model%d.gguf", cases[i].mask,
                 cases[i].env, ws_mkmodel(), dir, i);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        const char *names[] = {"out%d.npy", "report%d.json", "model%d.gguf"};
        for (int k = 0; k < 3; k++) {
            char name[64];
            snprintf(name, sizeof name, names[k], i);
            snprintf(path, sizeof path, "%s/%s", dir, name);
            struct stat st;
            cr_assert_eq(stat(path, &st), 0, "%s", path);
            cr_assert_eq(st.st_mode & 07777, cases[i].mode, "umask %s: %s has mode %03o, want %03o",
                         cases[i].mask, name, st.st_mode & 07777, cases[i].mode);
        }
    }
}

/* --- long names ---------------------------------------------------------- */

Test(output, output_name_of_250_bytes_is_written)
{
    const char *dir = test_tmpdir();
    char in[600], name[300], cmd[2048], err[1024], path[900];
    snprintf(in, sizeof in, "%s/in.wav", dir);
    write_tone(in, 2.0, 440.0);
    memset(name, 'n', 246);
    strcpy(name + 246, ".npy");
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(cmd, sizeof cmd, "%s --mel %s -o %s", ws_bin(), in, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(npy_complete(path));
    int complete;
    char other[256];
    cr_assert_eq(scan_dir(dir, &complete, other, sizeof other), 2, "left: %s", other); /* in.wav */
}

/* base/ddd.../ddd... made with mkdir -p, leaving 249 to 251 bytes for "/NAME"
 * of a path total bytes long. */
static void deep_dir(char *buf, size_t cap, const char *base, size_t total)
{
    size_t k = (size_t)snprintf(buf, cap, "%s", base);
    cr_assert_lt(total, cap);
    while (total - k > 252) {
        size_t c = total - k - 252 > 200 ? 200 : total - k - 252;
        buf[k++] = '/';
        memset(buf + k, 'd', c);
        k += c;
        buf[k] = 0;
    }
    char *cmd = malloc(total + 64), err[512];
    snprintf(cmd, total + 64, "mkdir -p %s", buf);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "mkdir -p: %s", err);
    free(cmd);
}

Test(output, paths_near_path_max_work_and_failures_name_the_reason, .timeout = 60)
{
    const char *tmp = test_tmpdir();
    char in[600], err[2048];
    snprintf(in, sizeof in, "%s/in.wav", tmp);
    write_tone(in, 2.0, 440.0);
    char *dir = malloc(9000), *path = malloc(9000), *cmd = malloc(10000);
    /* existing directories, the whole path 4090 bytes (PATH_MAX is 4096) */
    deep_dir(dir, 9000, tmp, 4090);
    size_t dl = strlen(dir);
    memcpy(path, dir, dl);
    path[dl] = '/';
    memset(path + dl + 1, 'f', 4090 - dl - 1 - 4);
    strcpy(path + 4090 - 4, ".npy");
    cr_assert_eq(strlen(path), 4090);
    snprintf(cmd, 10000, "%s --mel %s -o %s", ws_bin(), in, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(npy_complete(path));
    /* the last directory missing: the reason is named, not a stale one */
    memcpy(path + dl - 3, "zzz", 3);
    snprintf(cmd, 10000, "%s --mel %s -o %s", ws_bin(), in, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "No such file or directory"), "%s", err);
    cr_assert_eq(strchr(err, '\n') - err + 1, (long)strlen(err), "not one line: %s", err);
    /* longer than PATH_MAX */
    deep_dir(dir, 9000, tmp, 4400);
    snprintf(path, 9000, "%s/out.npy", dir);
    snprintf(cmd, 10000, "%s --mel %s -o %s", ws_bin(), in, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "File name too long"), "%s", err);
    snprintf(cmd, 10000, "rm -rf %s/dd*", tmp);
    run_cmd(cmd, NULL, 0);
    free(dir);
    free(path);
    free(cmd);
}

/* --- signals, SIGKILL, the file size limit ------------------------------ */

Test(output, sigterm_leaves_only_complete_outputs_and_says_so, .timeout = 180)
{
    check_interrupted(SIGTERM, "SIGTERM", 0);
}

Test(output, sigterm_removes_registered_temporary_names, .timeout = 180)
{
    check_interrupted(SIGTERM, "SIGTERM", 1);
}

Test(output, sigint_leaves_only_complete_outputs_and_says_so, .timeout = 180)
{
    check_interrupted(SIGINT, "SIGINT", 0);
}

Test(output, sigkill_leaves_no_temporary_names, .timeout = 180)
{
    slow_run r;
    slow_run_init(&r, 6);
    int st = interrupt_slow_run(&r, SIGKILL);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    int complete;
    char other[256];
    int n = scan_dir(r.out, &complete, other, sizeof other);
    cr_assert_eq(n, complete, "'%s' left in the output directory", other);
}

Test(output, file_size_limit_fails_each_input_with_one_line, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char in1[600], in2[600], out[600], cmd[2048], err[2048];
    snprintf(in1, sizeof in1, "%s/a.wav", dir);
    snprintf(in2, sizeof in2, "%s/b.wav", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    write_tone(in1, 2.0, 440.0);
    write_tone(in2, 2.0, 660.0);
    cr_assert_eq(mkdir(out, 0755), 0);
    /* ulimit -f counts 1024-byte blocks; a log-Mel .npy is 960 kB. Both ways
     * of writing: unnamed (O_TMPFILE) and a named temporary file. */
    for (int named = 0; named < 2; named++) {
        snprintf(cmd, sizeof cmd, "%s bash -c 'ulimit -f 1; exec %s --mel -O %s %s %s'",
                 named ? "WHISPER_STEM_NO_TMPFILE=1" : "", ws_bin(), out, in1, in2);
        int rc = run_cmd(cmd, err, sizeof err);
        cr_assert_eq(rc, 1, "exit %d (-1: died by a signal); stderr: %s", rc, err);
        int lines = 0;
        for (const char *p = err; (p = strstr(p, "File too large")); p++)
            lines++;
        cr_assert_eq(lines, 2, "%s", err);
        cr_assert(strstr(err, "a.wav") && strstr(err, "b.wav"), "%s", err);
        int complete;
        char other[256];
        cr_assert_eq(scan_dir(out, &complete, other, sizeof other), 0, "'%s' left", other);
    }
}

/* --- the streaming writer ------------------------------------------------ */

Test(output, streamed_pieces_appear_whole_on_commit_and_not_at_all_on_abort)
{
    const char *dir = test_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/s.bin", dir);
    ws_err err = {{0}};
    ws_out *o = ws_out_open(path, &err);
    cr_assert(o, "%s", err.msg);
    cr_assert_eq(ws_out_write(o, "abc", 3, &err), 0, "%s", err.msg);
    cr_assert_not(file_exists(path), "the name appeared before the commit");
    cr_assert_eq(ws_out_write(o, "def", 3, &err), 0, "%s", err.msg);
    cr_assert_eq(ws_out_commit(o, &err), 0, "%s", err.msg);
    size_t len;
    char *b = read_file(path, &len);
    cr_assert(b && len == 6 && memcmp(b, "abcdef", 6) == 0);
    free(b);
    /* replace it, then abort a second writer: the first content stays */
    cr_assert_eq(ws_write_file_atomic(path, "xyz", 3, &err), 0, "%s", err.msg);
    o = ws_out_open(path, &err);
    cr_assert(o, "%s", err.msg);
    cr_assert_eq(ws_out_write(o, "0123456789", 10, &err), 0);
    ws_out_abort(o);
    ws_out_abort(NULL);
    b = read_file(path, &len);
    cr_assert(b && len == 3 && memcmp(b, "xyz", 3) == 0);
    free(b);
    int complete;
    char other[256];
    cr_assert_eq(scan_dir(dir, &complete, other, sizeof other), 1, "left: %s", other);
    /* the same through a named temporary file */
    setenv("WHISPER_STEM_NO_TMPFILE", "1", 1);
    snprintf(path, sizeof path, "%s/n.bin", dir);
    o = ws_out_open(path, &err);
    cr_assert(o, "%s", err.msg);
    cr_assert_eq(ws_out_write(o, "abc", 3, &err), 0, "%s", err.msg);
    cr_assert_eq(count_prefix(dir, ".ws-"), 1, "no temporary name while writing");
    cr_assert_eq(ws_out_commit(o, &err), 0, "%s", err.msg);
    cr_assert_eq(count_prefix(dir, ".ws-"), 0);
    cr_assert(file_exists(path));
    o = ws_out_open(path, &err);
    cr_assert(o, "%s", err.msg);
    ws_out_abort(o);
    cr_assert_eq(scan_dir(dir, &complete, other, sizeof other), 2, "left: %s", other);
}

/* --- the PTX dump on a JIT failure --------------------------------------- */

static wscu_result fake_load(wscu_module *m, const void *image, unsigned int n_opt,
                             wscu_jit_option *opt, void **values)
{
    for (unsigned i = 0; i < n_opt; i++)
        if (opt[i] == WS_CU_JIT_ERROR_LOG_BUFFER)
            strcpy(values[i], "ptxas fatal   : Unexpected instruction 'bogus'\nsecond line");
    (void)m;
    (void)image;
    return 218; /* CUDA_ERROR_INVALID_PTX */
}

static void plant(const char *dir, const char *name, const char *victim)
{
    char p[900];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_assert_eq(symlink(victim, p), 0, "%s", p);
}

Test(output, jit_failure_dump_is_a_new_private_file_not_a_planted_link)
{
    const char *dir = test_tmpdir();
    char victim[600], name[300];
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    FILE *f = fopen(victim, "w");
    fputs("precious", f);
    fclose(f);
    /* the old predictable name for this process, and neighbours */
    for (long pid = (long)getpid() - 2; pid <= (long)getpid() + 2; pid++) {
        snprintf(name, sizeof name, "whisper-stem-bad_kernel-%ld.ptx", pid);
        plant(dir, name, victim);
    }
    setenv("TMPDIR", dir, 1);
    ws_cu cu;
    memset(&cu, 0, sizeof cu);
    cu.ModuleLoadDataEx = fake_load;
    wscu_module mod = NULL;
    ws_err e = {{0}};
    const char *ptx = ".version 7.8\n.target sm_90\n\tbogus.instruction %r0;\n";
    cr_assert_eq(ws_cu_load_module(&cu, ptx, "bad_kernel", &mod, NULL, 0, &e), -1);
    size_t len;
    char *v = read_file(victim, &len);
    cr_assert(v && len == 8 && memcmp(v, "precious", 8) == 0, "the planted link's target was written");
    free(v);
    cr_assert(strstr(e.msg, "Unexpected instruction 'bogus'"), "%s", e.msg);
    const char *at = strstr(e.msg, "PTX and logs in ");
    cr_assert(at, "%s", e.msg);
    const char *path = at + strlen("PTX and logs in ");
    cr_assert(strncmp(path, dir, strlen(dir)) == 0, "not in $TMPDIR: %s", path);
    struct stat st;
    cr_assert_eq(lstat(path, &st), 0, "%s", path);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0600, "mode %03o", st.st_mode & 0777);
    char *t = read_text(path, &len);
    cr_assert(t && strstr(t, "    3  \tbogus.instruction %r0;"), "numbered PTX missing:\n%s", t);
    cr_assert(strstr(t, "second line"), "JIT log missing:\n%s", t);
    free(t);
}

Test(output, dump_temp_makes_distinct_private_files_and_names_failures)
{
    const char *dir = test_tmpdir();
    setenv("TMPDIR", dir, 1);
    char p1[600], p2[600];
    ws_err e = {{0}};
    cr_assert_eq(ws_dump_temp("x-", "// head\n", "a\nb", p1, sizeof p1, &e), 0, "%s", e.msg);
    cr_assert_eq(ws_dump_temp("x-", NULL, "c", p2, sizeof p2, &e), 0, "%s", e.msg);
    cr_assert_str_neq(p1, p2);
    size_t len;
    char *t = read_text(p1, &len);
    cr_assert(t);
    cr_assert_str_eq(t, "// head\n    1  a\n    2  b\n");
    free(t);
    struct stat st;
    cr_assert_eq(stat(p2, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/nope", dir);
    setenv("TMPDIR", missing, 1);
    cr_assert_eq(ws_dump_temp("x-", NULL, "c", p1, sizeof p1, &e), -1);
    cr_assert(strstr(e.msg, "nope") && strstr(e.msg, "No such file or directory"), "%s", e.msg);
}

/* test_common.c - error messages: long ones keep their reason, printed ones
 * cannot forge lines or reach the terminal as escape codes; the default
 * thread count follows the affinity mask and the cgroup CPU quota. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "helpers.h"

Test(common, overlong_error_keeps_its_start_and_its_reason)
{
    char path[5000];
    memset(path, 'd', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = 0;
    ws_err e;
    cr_assert_eq(ws_errf(&e, "%s: cannot open: %s", path, "No such file or directory"), -1);
    size_t n = strlen(e.msg);
    cr_assert_lt(n, sizeof e.msg);
    cr_assert(n > sizeof e.msg - 8, "the buffer is used, got %zu bytes", n);
    cr_assert(!strncmp(e.msg, "/ddd", 4), "%s", e.msg);
    cr_assert(strstr(e.msg, "..."), "the cut is marked");
    const char *tail = ": cannot open: No such file or directory";
    cr_assert(!strcmp(e.msg + n - strlen(tail), tail), "the reason survives: ...%s", e.msg + n - 60);
}

Test(common, short_error_is_kept_whole)
{
    ws_err e;
    ws_errf(&e, "%s: %d", "a.wav", 42);
    cr_assert_str_eq(e.msg, "a.wav: 42");
    cr_assert_eq(ws_errf(NULL, "x"), -1);
}

Test(common, escape_makes_control_bytes_visible_like_ls_b)
{
    char out[128];
    size_t n = ws_escape(out, sizeof out, "a\nb\tc\rd\033[31me\\f\x7fg\xc3\xa9");
    cr_assert_str_eq(out, "a\\nb\\tc\\rd\\033[31me\\\\f\\177g\xc3\xa9");
    cr_assert_eq(n, strlen(out));
    char small[6];
    ws_escape(small, sizeof small, "ab\ncd");
    cr_assert_str_eq(small, "ab\\nc", "cut at the buffer, never inside an escape: %s", small);
    ws_escape(small, 4, "ab\ncd");
    cr_assert_str_eq(small, "ab", "%s", small);
}

/* --- ws_ncpu: cgroup quota on fake trees, affinity in a child ------------ */

/* Writes root/rel (text), making the directories on the way. */
static void put(const char *root, const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* A fake /proc/self/cgroup (root/cgroup) and /sys/fs/cgroup (root/sys),
 * the limit read from them, and the tree removed. */
typedef struct {
    const char *rel, *text;
} fake_file;

static long long limit_of(const char *proc_cgroup, const fake_file *files, size_t n, int memory)
{
    const char *tmp = test_tmpdir();
    char root[600], sys[700], cg[700];
    snprintf(root, sizeof root, "%s", tmp);
    snprintf(sys, sizeof sys, "%s/sys", root);
    snprintf(cg, sizeof cg, "%s/cgroup", root);
    mkdir(sys, 0755);
    put(root, "cgroup", proc_cgroup);
    for (size_t i = 0; i < n; i++)
        put(sys, files[i].rel, files[i].text);
    long long lim = memory ? (long long)ws_cgroup_memory_limit(cg, sys) : ws_cgroup_cpu_limit(cg, sys);
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return lim;
}
#define LIMIT(cg, ...) limit_of(cg, (const fake_file[]){__VA_ARGS__}, \
        sizeof (const fake_file[]){__VA_ARGS__} / sizeof(fake_file), 0)
#define MEMLIMIT(cg, ...) limit_of(cg, (const fake_file[]){__VA_ARGS__}, \
        sizeof (const fake_file[]){__VA_ARGS__} / sizeof(fake_file), 1)

static const char *const V2 = "0::/kubepods/pod1/ctr\n";

Test(common, cgroup_v2_without_a_limit_gives_none)
{
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "max 100000\n"},
                       {"kubepods/pod1/cpu.max", "max 100000\n"},
                       {"kubepods/cpu.max", "max 100000\n"}), 0);
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cgroup.procs", "1\n"}), 0, "no cpu.max anywhere");
    cr_assert_eq(LIMIT("0::/\n", {"cgroup.procs", "1\n"}), 0, "the root cgroup");
}

Test(common, cgroup_v2_limit_at_the_leaf)
{
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "200000 100000\n"},
                       {"kubepods/pod1/cpu.max", "max 100000\n"}), 2);
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "400000 50000"}), 8, "no newline");
}

Test(common, cgroup_v2_smaller_limit_at_a_parent_wins)
{
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "800000 100000\n"},
                       {"kubepods/pod1/cpu.max", "300000 100000\n"},
                       {"kubepods/cpu.max", "max 100000\n"}), 3);
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "max 100000\n"},
                       {"kubepods/cpu.max", "100000 100000\n"}), 1, "two levels up");
    /* Docker without a cgroup namespace: the path is the host's, the mount
     * is the container's own cgroup, whose cpu.max is at the root. */
    cr_assert_eq(LIMIT("0::/system.slice/docker-abc.scope\n", {"cpu.max", "150000 100000\n"}), 2);
}

Test(common, cgroup_v2_fractional_quota_rounds_up)
{
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "150000 100000\n"}), 2);
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "50000 100000\n"}), 1, "half a CPU");
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "1 100000\n"}), 1);
}

Test(common, cgroup_garbage_gives_none)
{
    static const char *const bad[] = {
        "", "\n", "garbage\n", "200000\n", "200000 \n", "200000 0\n", "0 100000\n",
        "-200000 100000\n", "200000 -100000\n", "200000 100000 7\n", "2e5 1e5\n",
        "99999999999999999999999 100000\n", "200000x 100000\n", "max\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", bad[i]}), 0, "cpu.max '%s'", bad[i]);
    /* a garbage level does not hide a good one above it */
    cr_assert_eq(LIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "lots\n"},
                       {"kubepods/cpu.max", "400000 100000\n"}), 4);
    /* a garbage /proc/self/cgroup, or none */
    cr_assert_eq(LIMIT("nonsense\n\n::\n0:\n", {"cpu.max", "100000 100000\n"}), 0);
    cr_assert_eq(ws_cgroup_cpu_limit("/nonexistent/cgroup", "/nonexistent"), 0);
    /* a path outside our cgroup namespace is not walked out of the mount */
    cr_assert_eq(LIMIT("0::/../../x\n", {"cpu.max", "100000 100000\n"}), 0);
}

Test(common, cgroup_v1_cpu_controller)
{
    const char *cg = "12:pids:/docker/abc\n"
                     "5:cpuset:/docker/abc\n"
                     "4:cpu,cpuacct:/docker/abc\n"
                     "1:name=systemd:/docker/abc\n"
                     "0::/docker/abc\n";
    cr_assert_eq(LIMIT(cg, {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n"},
                       {"cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"}), 3);
    cr_assert_eq(LIMIT(cg, {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n"},
                       {"cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"},
                       {"cpu,cpuacct/cpu.cfs_quota_us", "-1\n"},
                       {"cpu,cpuacct/cpu.cfs_period_us", "100000\n"}), 0, "-1: none");
    cr_assert_eq(LIMIT(cg, {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n"},
                       {"cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"},
                       {"cpu,cpuacct/docker/cpu.cfs_quota_us", "100000\n"},
                       {"cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n"}), 1, "a parent's");
    cr_assert_eq(LIMIT(cg, {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n"}), 0,
                 "no period: none");
    cr_assert_eq(LIMIT(cg, {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "lots\n"},
                       {"cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"}), 0, "garbage");
    /* cpu mounted alone, its own hierarchy; cpuset and cpuacct lines ignored */
    const char *alone = "3:cpuset:/job\n2:cpuacct:/job\n1:cpu:/job\n";
    cr_assert_eq(LIMIT(alone, {"cpu/job/cpu.cfs_quota_us", "150000\n"},
                       {"cpu/job/cpu.cfs_period_us", "100000\n"},
                       {"cpuset/job/cpu.cfs_quota_us", "100000\n"},
                       {"cpuset/job/cpu.cfs_period_us", "100000\n"}), 2);
    /* listed as cpuacct,cpu but mounted at cpu,cpuacct */
    cr_assert_eq(LIMIT("4:cpuacct,cpu:/j\n", {"cpu,cpuacct/j/cpu.cfs_quota_us", "700000\n"},
                       {"cpu,cpuacct/j/cpu.cfs_period_us", "100000\n"}), 7);
    /* v1 and a v2 limit both present: the smaller */
    cr_assert_eq(LIMIT(cg, {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "500000\n"},
                       {"cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"},
                       {"docker/abc/cpu.max", "200000 100000\n"}), 2);
}

/* The first CPU this process may run on, or -1. */
static int first_allowed_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set))
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            return c;
    return -1;
}

/* In a forked child pinned to one CPU, ws_ncpu's computation (uncached: the
 * cached ws_ncpu may have run before the fork) gives 1. Exit 0 = pass, 2 =
 * could not pin, else the value seen + 10. */
Test(common, ncpu_follows_the_affinity_mask)
{
    int cpu = first_allowed_cpu();
    cr_assert_geq(cpu, 0, "sched_getaffinity");
    cr_assert_geq(ws_ncpu(), 1);
    cr_assert_leq(ws_ncpu(), (int)sysconf(_SC_NPROCESSORS_ONLN));
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork");
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one))
            _exit(2);
        int n = ws_ncpu_uncached();
        _exit(n == 1 ? 0 : n + 10 > 255 ? 255 : n + 10);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st), "the child died");
    cr_assert_neq(WEXITSTATUS(st), 2, "sched_setaffinity to CPU %d failed", cpu);
    cr_assert_eq(WEXITSTATUS(st), 0, "pinned to one CPU, ws_ncpu_uncached gave %d",
                 WEXITSTATUS(st) - 10);
}

/* The cached ws_ncpu in a process started pinned to one CPU (as under
 * `taskset -c N`): a forked child pins itself and execs this test runner
 * again, filtered to this test; there, with WS_NCPU_OUT set, the test only
 * writes ws_ncpu() to that file. A fresh exec, so nothing has filled the
 * cache before the pinning. */
Test(common, ncpu_cached_in_a_process_started_pinned_is_1)
{
    const char *child_out = getenv("WS_NCPU_OUT");
    if (child_out) { /* the re-executed runner */
        FILE *f = fopen(child_out, "w");
        cr_assert(f, "cannot write %s", child_out);
        fprintf(f, "%d\n", ws_ncpu());
        fclose(f);
        return;
    }
    int cpu = first_allowed_cpu();
    cr_assert_geq(cpu, 0, "sched_getaffinity");
    char tmp[600], outpath[700], logpath[700];
    snprintf(tmp, sizeof tmp, "%s", test_tmpdir());
    snprintf(outpath, sizeof outpath, "%s/ncpu.txt", tmp);
    snprintf(logpath, sizeof logpath, "%s/log.txt", tmp);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork");
    if (pid == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        /* BXFI_MAP marks a Criterion (BoxFort) worker: the runner we exec
         * must start as a runner */
        if (sched_setaffinity(0, sizeof one, &one) || setenv("WS_NCPU_OUT", outpath, 1) ||
            unsetenv("BXFI_MAP") ||
            !freopen(logpath, "w", stdout) || dup2(fileno(stdout), 2) < 0)
            _exit(126);
        execl("/proc/self/exe", "test_runner", "--filter",
              "common/ncpu_cached_in_a_process_started_pinned_is_1", (char *)NULL);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    size_t len = 0;
    char *log = read_file(logpath, &len), *got = read_file(outpath, &len);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the pinned runner: status %d\n%s", st,
              log ? log : "");
    cr_assert(got, "the pinned runner wrote no count\n%s", log ? log : "");
    cr_assert_eq(atoi(got), 1, "pinned to CPU %d, ws_ncpu gave %s", cpu, got);
    free(log);
    free(got);
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* --- the default --max-memory: the cgroup memory limit counts ------------ */

Test(common, cgroup_memory_limit_v2_and_v1)
{
    cr_assert_eq(MEMLIMIT(V2, {"kubepods/pod1/ctr/memory.max", "max\n"},
                          {"kubepods/memory.max", "max\n"}), 0, "no limit");
    cr_assert_eq(MEMLIMIT(V2, {"kubepods/pod1/ctr/memory.max", "2147483648\n"},
                          {"kubepods/pod1/memory.max", "max\n"}), 2147483648LL);
    cr_assert_eq(MEMLIMIT(V2, {"kubepods/pod1/ctr/memory.max", "8589934592\n"},
                          {"kubepods/memory.max", "1073741824"}), 1073741824LL, "a parent's is smaller");
    cr_assert_eq(MEMLIMIT(V2, {"kubepods/pod1/ctr/memory.max", "lots\n"}), 0, "unparsable: none");
    cr_assert_eq(MEMLIMIT(V2, {"kubepods/pod1/ctr/cpu.max", "200000 100000\n"}), 0,
                 "a CPU quota is no memory limit");
    const char *v1 = "12:memory:/slurm/job1\n11:cpu,cpuacct:/slurm/job1\n";
    cr_assert_eq(MEMLIMIT(v1, {"memory/slurm/job1/memory.limit_in_bytes", "536870912\n"},
                          {"memory/memory.limit_in_bytes", "9223372036854771712\n"}), 536870912LL);
    cr_assert_eq(MEMLIMIT(v1, {"memory/slurm/job1/memory.limit_in_bytes", "9223372036854771712\n"}),
                 0, "v1's 'no limit' is near 2^63");
}

Test(common, default_max_memory_is_the_least_of_4g_half_the_ram_and_half_the_cgroup_limit)
{
    const size_t G = (size_t)1 << 30, M = (size_t)1 << 20;
    cr_assert_eq(ws_max_memory_for(64 * G, 0), 4 * G, "a big host: 4G");
    cr_assert_eq(ws_max_memory_for(4 * G, 0), 2 * G, "half the RAM");
    cr_assert_eq(ws_max_memory_for(64 * G, 2 * G), 1 * G, "half the cgroup limit");
    cr_assert_eq(ws_max_memory_for(2 * G, 3 * G), 1 * G, "RAM below the cgroup limit");
    cr_assert_eq(ws_max_memory_for(64 * G, 20 * M), WS_MIN_MEMORY, "never below 16M");
    cr_assert_eq(ws_max_memory_for(0, 0), 4 * G, "nothing known: 4G");
    cr_assert_leq(ws_default_max_memory(), 4 * G);
}

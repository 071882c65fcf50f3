/* test_corpus.c - runs over many files (README "Corpus runs"): --list, --root, --shard,
 * --skip-existing, --manifest, --out-dtype, --progress, -q, a SIGTERM in the middle.
 *
 * The corpus: a tree root/spkNN/NNN.wav (repeated base names across speakers), short
 * tones of different rates and channel counts, with bad inputs mixed in (garbage bytes,
 * an empty file, a path that does not exist, a file outside --root). Outputs are checked
 * byte for byte against one-input runs; the manifest line by line. The Slurm and GNU
 * parallel recipes have their own checks (tests/corpus/).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "helpers.h"

static void write_tone_wav(const char *path, double seconds, int rate, int channels, double f0)
{
    const sf_count_t n = (sf_count_t)(seconds * rate);
    float *x = malloc(sizeof(float) * (size_t)n * (size_t)channels);
    cr_assert_not_null(x);
    for (sf_count_t i = 0; i < n; i++)
        for (int c = 0; c < channels; c++)
            x[i * channels + c] = (float)(0.3 * sin(2 * M_PI * f0 * (c + 1) * (double)i / rate));
    SF_INFO info = {.samplerate = rate, .channels = channels,
                    .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert_not_null(f, "%s: %s", path, sf_strerror(NULL));
    cr_assert_eq(sf_writef_float(f, x, n), n);
    sf_close(f);
    free(x);
}

static void mkdirs(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    cr_assert_eq(run_cmd(cmd, NULL, 0), 0, "%s", cmd);
}

/* The corpus under dir/root: n_spk speakers x n_per files, plus the bad inputs; writes
 * the list (a comment, blank lines, then one path a line) to dir/list. Returns how many
 * lines name inputs; *bad gets how many of them must fail. */
static int make_corpus(const char *dir, int n_spk, int n_per, double seconds, int *bad)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/list", dir);
    FILE *list = fopen(p, "w");
    cr_assert_not_null(list);
    fprintf(list, "# a corpus\n\n");
    int n = 0;
    for (int s = 0; s < n_spk; s++)
        for (int k = 0; k < n_per; k++) {
            snprintf(p, sizeof p, "%s/root/spk%02d", dir, s);
            mkdirs(p);
            snprintf(p, sizeof p, "%s/root/spk%02d/%03d.wav", dir, s, k);
            const int rate = (k % 3 == 0) ? 44100 : 16000, ch = 1 + (k % 2);
            write_tone_wav(p, seconds * (0.5 + 0.25 * (k % 4)), rate, ch, 200.0 + 37 * s + 11 * k);
            fprintf(list, "%s\n", p);
            n++;
            if (k == 1)
                fprintf(list, "\n# speaker %d\n", s);
        }
    /* the bad ones */
    snprintf(p, sizeof p, "%s/root/spk00/garbage.wav", dir);
    FILE *g = fopen(p, "wb");
    for (int i = 0; i < 3000; i++)
        fputc((i * 7919) & 0xff, g);
    fclose(g);
    fprintf(list, "%s\n", p);
    snprintf(p, sizeof p, "%s/root/spk01/empty.wav", dir);
    fclose(fopen(p, "wb"));
    fprintf(list, "%s\n", p);
    fprintf(list, "%s/root/spk02/missing.wav\n", dir);
    snprintf(p, sizeof p, "%s/outside.wav", dir);
    write_tone_wav(p, 0.5, 16000, 1, 300);
    fprintf(list, "%s\n", p);
    fclose(list);
    *bad = 4;
    return n + 4;
}

static void mkmodel(const char *dir, char *path, size_t cap)
{
    snprintf(path, cap, "%s/m.gguf", dir);
    char cmd[4200], err[1024];
    snprintf(cmd, sizeof cmd, "%s --n-mels 80 --d 64 --seed 5 -o %s", ws_mkmodel(), path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
}

typedef struct {
    cJSON **line;
    int n;
} manifest;

static manifest read_manifest(const char *path)
{
    manifest m = {NULL, 0};
    size_t len = 0;
    char *raw = read_file(path, &len), *t = malloc(len + 1);
    cr_assert(raw && t, "%s missing", path);
    memcpy(t, raw, len);
    t[len] = 0;
    free(raw);
    cr_assert_eq(strlen(t), len, "%s holds a NUL byte", path);
    cr_assert(len == 0 || t[len - 1] == '\n', "%s does not end in a newline", path);
    for (char *s = t, *e; *s; s = e + 1) {
        e = strchr(s, '\n');
        cr_assert_not_null(e);
        *e = 0;
        cJSON *o = cJSON_Parse(s);
        cr_assert_not_null(o, "not JSON: %s", s);
        m.line = realloc(m.line, sizeof *m.line * (size_t)(m.n + 1));
        m.line[m.n++] = o;
    }
    free(t);
    return m;
}

static void free_manifest(manifest *m)
{
    for (int i = 0; i < m->n; i++)
        cJSON_Delete(m->line[i]);
    free(m->line);
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = read_file(a, &na), *y = read_file(b, &nb);
    int same = x && y && na == nb && !memcmp(x, y, na);
    free(x);
    free(y);
    return same;
}

/* Every regular file under dir whose name starts with ".ws-" (a temporary name left). */
static int temp_names_under(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name '.ws-*')\"", dir);
    return run_cmd(cmd, NULL, 0) != 0;
}

Test(corpus, list_and_root_mirror_the_tree_and_match_single_runs, .timeout = 240)
{
    const char *dir = test_tmpdir();
    char model[4096], cmd[16384], err[16384], p[4096], q[4096];
    mkmodel(dir, model, sizeof model);
    int bad = 0;
    const int n = make_corpus(dir, 3, 6, 1.0, &bad);
    snprintf(cmd, sizeof cmd,
             "%s -m %s --device cpu --threads 2 --list %s/list --root %s/root -O %s/out "
             "--manifest %s/m.jsonl",
             ws_bin(), model, dir, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "exit status (some failed): %s", err);
    manifest m = read_manifest((snprintf(p, sizeof p, "%s/m.jsonl", dir), p));
    cr_assert_eq(m.n, n, "%d manifest lines for %d inputs", m.n, n);
    int ok = 0, failed = 0;
    for (int i = 0; i < m.n; i++) {
        const char *in = str(m.line[i], "input"), *st = str(m.line[i], "status");
        cr_assert(in && st, "line %d lacks input or status", i);
        if (!strcmp(st, "ok")) {
            ok++;
            const char *out = str(m.line[i], "output");
            /* root/spkNN/NNN.wav -> out/spkNN/NNN.npy */
            const char *rel = strstr(in, "/root/") + 6;
            snprintf(q, sizeof q, "%s/out/%.*s.npy", dir, (int)(strlen(rel) - 4), rel);
            cr_assert_str_eq(out, q);
            cr_assert(cJSON_IsArray(cJSON_GetObjectItem(m.line[i], "shape")));
            cr_assert_str_eq(str(m.line[i], "dtype"), "float32");
            const cJSON *cf = cJSON_GetObjectItem(m.line[i], "content_frames"),
                        *vc = cJSON_GetObjectItem(m.line[i], "valid_ctx"),
                        *sm = cJSON_GetObjectItem(m.line[i], "samples");
            cr_assert(cJSON_IsNumber(cf) && cJSON_IsNumber(vc) && cJSON_IsNumber(sm));
            cr_assert_eq(cf->valueint, (int)(sm->valuedouble / 160), "%s", in);
            cr_assert_eq(vc->valueint, (cf->valueint + 1) / 2, "%s", in);
            /* every third against a one-input run */
            if (ok % 3 == 1) {
                snprintf(cmd, sizeof cmd, "%s -m %s --device cpu --threads 2 %s -o %s/single.npy",
                         ws_bin(), model, in, dir);
                char e1[4096];
                cr_assert_eq(run_cmd(cmd, e1, sizeof e1), 0, "%s", e1);
                snprintf(p, sizeof p, "%s/single.npy", dir);
                cr_assert(same_file(out, p), "%s differs from its one-input run", out);
            }
        } else {
            cr_assert_str_eq(st, "failed", "%s: status %s", in, st);
            failed++;
            const char *e = str(m.line[i], "error");
            cr_assert(e && *e, "%s failed without an error", in);
            cr_assert(strstr(err, in), "stderr does not name %s:\n%s", in, err);
        }
    }
    cr_assert_eq(failed, bad);
    cr_assert_eq(ok, n - bad);
    snprintf(p, sizeof p, "%s/out", dir);
    cr_assert_not(temp_names_under(p));
    free_manifest(&m);
}

Test(corpus, shards_cover_the_list_exactly_once, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char cmd[16384], err[8192], p[4096];
    int bad = 0;
    const int n = make_corpus(dir, 2, 7, 0.5, &bad);
    const int N = 3;
    for (int i = 0; i < N; i++) {
        snprintf(cmd, sizeof cmd,
                 "%s --mel --list %s/list --root %s/root -O %s/out --shard %d/%d "
                 "--manifest %s/m%d.jsonl",
                 ws_bin(), dir, dir, dir, i, N, dir, i);
        int st = run_cmd(cmd, err, sizeof err);
        cr_assert(st == 0 || st == 1, "shard %d: exit %d: %s", i, st, err);
    }
    /* each list line in exactly one shard, at position p % N */
    char seen[64][4096];
    int count = 0;
    for (int i = 0; i < N; i++) {
        manifest m = read_manifest((snprintf(p, sizeof p, "%s/m%d.jsonl", dir, i), p));
        for (int k = 0; k < m.n; k++) {
            const char *in = str(m.line[k], "input");
            for (int j = 0; j < count; j++)
                cr_assert_str_neq(seen[j], in, "%s in two shards", in);
            cr_assert_lt(count, 64);
            snprintf(seen[count++], sizeof seen[0], "%s", in);
        }
        free_manifest(&m);
    }
    cr_assert_eq(count, n, "%d inputs over the shards, %d in the list", count, n);
}

/* The run is stopped by SIGTERM once it has written an output, and cannot have ended
 * before: the last input of its list is a FIFO that no one writes until the signal is
 * sent (the run waits for a writer), on any number of cores. The real file then takes
 * the FIFO's place and a --skip-existing run completes the set. */
Test(corpus, skip_existing_after_sigterm_completes_the_set, .timeout = 300)
{
    const char *dir = test_tmpdir();
    char cmd[16384], err[8192], p[4096], q[4096], late[4096], aside[4096];
    int bad = 0;
    int n = make_corpus(dir, 3, 4, 2.0, &bad);
    snprintf(late, sizeof late, "%s/root/spk02/late.wav", dir);
    write_tone_wav(late, 1.0, 16000, 1, 440);
    snprintf(p, sizeof p, "%s/list", dir);
    FILE *lf = fopen(p, "a");
    cr_assert_not_null(lf);
    fprintf(lf, "%s\n", late);
    fclose(lf);
    n++;
    /* the reference: everything in one run */
    snprintf(cmd, sizeof cmd, "%s --mel --threads 1 --list %s/list --root %s/root -O %s/ref",
             ws_bin(), dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    snprintf(aside, sizeof aside, "%s/late.wav", dir);
    cr_assert_eq(rename(late, aside), 0);
    cr_assert_eq(mkfifo(late, 0644), 0, "mkfifo %s: %s", late, strerror(errno));
    /* stopped by SIGTERM once an output is written */
    snprintf(p, sizeof p, "%s/m.jsonl", dir);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        snprintf(q, sizeof q, "%s/list", dir);
        char root[4096], out[4096];
        snprintf(root, sizeof root, "%s/root", dir);
        snprintf(out, sizeof out, "%s/out", dir);
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        execl(ws_bin(), ws_bin(), "--mel", "--threads", "1", "--list", q, "--root", root, "-O",
              out, "--manifest", p, (char *)NULL);
        _exit(127);
    }
    int written = 0;
    for (int i = 0; i < 12000 && !written; i++) { /* at most 120 s: a whole "ok" line */
        size_t len = 0;
        char *t = read_file(p, &len);
        for (size_t k = 0, start = 0; t && k < len && !written; k++)
            if (t[k] == '\n') {
                written = memmem(t + start, k - start, "\"status\":\"ok\"", 13) != NULL;
                start = k + 1;
            }
        free(t);
        if (!written)
            usleep(10000);
    }
    kill(pid, SIGTERM);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(written, "no \"ok\" line in the manifest in 120 s");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 143, "status %d", status);
    manifest m = read_manifest(p); /* whole lines only */
    cr_assert_lt(m.n, n, "%d lines for %d inputs: the FIFO's input cannot have ended", m.n, n);
    for (int i = 0; i < m.n; i++)
        cr_assert_str_neq(str(m.line[i], "input"), late, "the FIFO's input has a line");
    free_manifest(&m);
    cr_assert_eq(rename(aside, late), 0); /* the real file in the FIFO's place */
    snprintf(q, sizeof q, "%s/out", dir);
    cr_assert_not(temp_names_under(q), "a temporary name was left under %s", q);
    /* the rest */
    snprintf(cmd, sizeof cmd,
             "%s --mel --threads 2 --list %s/list --root %s/root -O %s/out --skip-existing "
             "--manifest %s",
             ws_bin(), dir, dir, dir, p);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    m = read_manifest(p);
    int skipped = 0, ok = 0;
    for (int i = 0; i < m.n; i++) {
        const char *st = str(m.line[i], "status"), *out = str(m.line[i], "output");
        skipped += !strcmp(st, "skipped");
        if (!strcmp(st, "ok") || !strcmp(st, "skipped")) {
            ok += !strcmp(st, "ok");
            char ref[4096];
            snprintf(ref, sizeof ref, "%s/ref/%s", dir, out + strlen(dir) + strlen("/out/"));
            cr_assert(same_file(out, ref), "%s differs from the one-run output", out);
        }
    }
    cr_assert_gt(skipped, 0, "nothing was skipped");
    cr_assert(strstr(err, " skipped"), "%s", err);
    free_manifest(&m);
    /* every good input has its output now */
    snprintf(cmd, sizeof cmd, "cd %s/ref && find . -name '*.npy' | while read f; do cmp -s \"$f\" ../out/\"$f\" || exit 1; done", dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "outputs differ or are missing: %s", err);
}

/* half-precision output: '<f2', within 1e-3 relative of float32 */
Test(corpus, f16_outputs_are_within_1e_3_of_f32, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[4096], cmd[20480], err[4096], a[4096], b[4096];
    mkmodel(dir, model, sizeof model);
    snprintf(a, sizeof a, "%s/a.npy", dir);
    snprintf(b, sizeof b, "%s/b.npy", dir);
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu --pos %s -o %s && %s -m %s --device cpu --pos "
                              "--out-dtype f16 %s -o %s",
             ws_bin(), model, test_sample("jfk.wav"), a, ws_bin(), model, test_sample("jfk.wav"), b);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    size_t na = 0, nb = 0;
    unsigned char *x = read_file(a, &na), *y = read_file(b, &nb);
    cr_assert(x && y);
    const size_t hx = (size_t)x[8] | (size_t)x[9] << 8, hy = (size_t)y[8] | (size_t)y[9] << 8;
    cr_assert(memmem(y, 10 + hy, "'descr': '<f2'", 14) != NULL, "dtype");
    cr_assert(memmem(y, 10 + hy, "'shape': (1500, 64", 18) != NULL, "shape");
    const size_t count = (na - 10 - hx) / 4;
    cr_assert_eq(nb - 10 - hy, count * 2, "f16 payload is not half the f32 one");
    double worst = 0;
    for (size_t i = 0; i < count; i++) {
        float f;
        uint16_t h;
        memcpy(&f, x + 10 + hx + 4 * i, 4);
        memcpy(&h, y + 10 + hy + 2 * i, 2);
        const double e = fabs((double)ws_f16_to_f32(h) - f) / (fabs(f) > 6.1e-5 ? fabs(f) : 6.1e-5);
        if (e > worst)
            worst = e;
    }
    cr_assert_leq(worst, 1e-3, "relative error %.3g", worst);
    free(x);
    free(y);
}

Test(corpus, progress_lines_on_request_and_quiet_is_quiet, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char cmd[16384], err[16384];
    int bad = 0;
    make_corpus(dir, 2, 6, 3.0, &bad);
    /* the good inputs from standard input, and a FIFO whose writer comes after 0.6 s, so
     * that the run lasts longer than a few ticks */
    snprintf(cmd, sizeof cmd,
             "(mkfifo %s/root/late.wav && (sleep 0.6; cat %s > %s/root/late.wav) & "
             "sleep 0.1; (grep -v -e garbage -e empty -e missing -e outside %s/list; "
             "echo %s/root/late.wav) | %s --mel --device cpu --threads 1 --list - --root %s/root -O %s/out "
             "--progress 0.1; st=$?; wait; exit $st)",
             dir, test_sample("jfk.wav"), dir, dir, dir, ws_bin(), dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "/13 inputs, "), "no progress line:\n%s", err);
    cr_assert(strstr(err, "13 inputs in ") && strstr(err, "13 written, 0 failed, 0 skipped"),
              "no summary:\n%s", err);
    snprintf(cmd, sizeof cmd,
             "grep -v -e garbage -e empty -e missing -e outside %s/list | %s --mel -q "
             "--list - --root %s/root -O %s/out2",
             dir, ws_bin(), dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(err, "", "-q printed: %s", err);
    /* with failures, -q prints the failures alone */
    snprintf(cmd, sizeof cmd, "%s --mel -q --list %s/list --root %s/root -O %s/out3", ws_bin(), dir,
             dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    int lines = 0;
    for (char *c = err; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, bad, "-q: want %d failure lines:\n%s", bad, err);
}

Test(corpus, usage_errors_of_the_corpus_options)
{
    const char *dir = test_tmpdir();
    char cmd[8192], err[4096];
    const char *bad[] = {"--shard 3/3", "--shard 1", "--shard -1/2", "--shard a/b",
                         "--out-dtype f64", "--progress 0", "--root /tmp -o x.npy",
                         "--device cuda:x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(cmd, sizeof cmd, "%s --mel %s %s -O %s/o", ws_bin(), bad[i],
                 test_sample("jfk.wav"), dir);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s: %s", bad[i], err);
        cr_assert(strchr(err, '\n') == err + strlen(err) - 1, "%s: not one line: %s", bad[i], err);
    }
    /* an empty list is nothing to do */
    snprintf(cmd, sizeof cmd, "printf '# none\\n\\n' | %s --mel --list - -O %s/o", ws_bin(), dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* a missing list file */
    snprintf(cmd, sizeof cmd, "%s --mel --list %s/nope -O %s/o", ws_bin(), dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "--list") && strstr(err, "nope") && strstr(err, "No such file"), "%s", err);
}

/* --tar-size: WebDataset shards read back by Python's tarfile and numpy; each .npy member
 * is the bytes of the one-input run's file, each .json member its manifest line; a
 * complete shard is skipped by --skip-existing; a shard none of whose inputs was written
 * is not made. */
Test(corpus, tar_shards_read_back_with_python_and_match_single_runs, .timeout = 240)
{
    const char *dir = test_tmpdir();
    char model[4096], cmd[16384], err[16384], p[4096];
    mkmodel(dir, model, sizeof model);
    int bad = 0;
    const int n = make_corpus(dir, 2, 5, 0.5, &bad); /* 10 good, then 4 bad at the end */
    snprintf(cmd, sizeof cmd,
             "%s -m %s --device cpu --list %s/list --root %s/root -O %s/tars --tar-size 4 "
             "--out-dtype f16 --manifest %s/m.jsonl",
             ws_bin(), model, dir, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    /* 14 inputs in shards of 4: shards 0-2 hold good ones; shard 3 holds 2 bad ones only */
    snprintf(p, sizeof p, "%s/tars/shard-000003.tar", dir);
    cr_assert_not(file_exists(p), "a shard with nothing written was made");
    /* one-input runs of the good inputs into a tree, then Python compares member bytes */
    snprintf(cmd, sizeof cmd,
             "%s -m %s --device cpu --out-dtype f16 --list %s/list --root %s/root -O %s/files",
             ws_bin(), model, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    snprintf(p, sizeof p, "%s/check.py", dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("import io, json, sys, tarfile, glob, urllib.parse\n"
          "import numpy as np\n"
          "d = sys.argv[1]; seen = 0\n"
          "for path in sorted(glob.glob(d + '/tars/shard-*.tar')):\n"
          "    with tarfile.open(path) as t:\n"
          "        names = t.getnames()\n"
          "        for m in t.getmembers():\n"
          "            b = t.extractfile(m).read()\n"
          "            key, ext = m.name.rsplit('/', 1)[-1].split('.', 1), None\n"
          "            stem = m.name[:-len('.npy')] if m.name.endswith('.npy') else m.name[:-len('.json')]\n"
          "            assert '.' not in stem.rsplit('/', 1)[-1], m.name\n"
          "            if m.name.endswith('.npy'):\n"
          "                a = np.load(io.BytesIO(b))\n"
          "                assert a.dtype == np.float16 and a.shape == (1500, 64), (m.name, a.dtype, a.shape)\n"
          "                ref = open(d + '/files/' + urllib.parse.unquote(stem) + '.npy', 'rb').read()\n"
          "                assert b == ref, m.name\n"
          "                assert stem + '.json' in names, m.name\n"
          "                seen += 1\n"
          "            else:\n"
          "                j = json.loads(b)\n"
          "                assert j['status'] == 'ok' and j['member'] == stem + '.npy', j\n"
          "                assert j['output'] == path, (j['output'], path)\n"
          "print(seen)\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s %s/check.py %s > %s/seen 2>&1", ws_python(), dir, dir, dir);
    int st = run_cmd(cmd, err, sizeof err);
    size_t len = 0;
    snprintf(p, sizeof p, "%s/seen", dir);
    char *seen = read_file(p, &len);
    cr_assert_eq(st, 0, "python: %.*s", (int)len, seen ? seen : "");
    cr_assert_eq(atoi(seen), n - bad, "%d .npy members, %d good inputs", atoi(seen), n - bad);
    free(seen);
    /* a second run skips what the shard indexes record: the good inputs of shards 0-2 are
     * skipped, the bad ones of shard 2 fail again with their recorded errors (nothing is
     * rewritten), those of shard 3 (no tar) are tried again */
    snprintf(cmd, sizeof cmd,
             "%s -m %s --device cpu --list %s/list --root %s/root -O %s/tars --tar-size 4 "
             "--out-dtype f16 --skip-existing --manifest %s/m2.jsonl",
             ws_bin(), model, dir, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    manifest m = read_manifest((snprintf(p, sizeof p, "%s/m2.jsonl", dir), p));
    int skipped = 0;
    for (int i = 0; i < m.n; i++)
        skipped += !strcmp(str(m.line[i], "status"), "skipped");
    cr_assert_eq(skipped, 10, "the 10 good inputs, not %d", skipped);
    free_manifest(&m);
    /* a list of the failures alone: shard number 0 holds other inputs, so it is kept; each
     * input fails with its own error, and a shard none of whose inputs was written leaves
     * no file (no tar, no index at the retry's number, 0 + 4: K = 4 shards in the list) */
    size_t n0 = 0, n1 = 0;
    snprintf(p, sizeof p, "%s/tars/shard-000000.tar", dir);
    char *before = read_file(p, &n0);
    snprintf(cmd, sizeof cmd,
             "grep -e garbage -e empty %s/list > %s/retry && %s -m %s --device cpu --list %s/retry "
             "--root %s/root -O %s/tars --tar-size 4 --out-dtype f16",
             dir, dir, ws_bin(), model, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_not(strstr(err, "not replaced") || strstr(err, "not from this shard"), "%s", err);
    cr_assert(strstr(err, "not a recognised audio file") && strstr(err, "empty"), "%s", err);
    snprintf(cmd, sizeof cmd, "%s/tars/shard-000004.jsonl", dir);
    cr_assert_not(file_exists(cmd), "an index of a shard with nothing in it");
    snprintf(cmd, sizeof cmd, "%s/tars/shard-000004.tar", dir);
    cr_assert_not(file_exists(cmd), "a tar with nothing in it");
    char *after = read_file(p, &n1);
    cr_assert(before && after && n0 == n1 && !memcmp(before, after, n0), "shard 0 changed");
    free(before);
    free(after);
}

/* test_manifest.c - what a corpus run records and how reruns use it (SPEC.md "Corpus
 * runs"): the manifest line's strings (\udcXX for bytes that are not UTF-8), provenance
 * (SHA-256 of the stem tensors, src/sha256.h), "time", sidecars beside file outputs,
 * shard indexes and shard numbering in tar mode, --skip-existing over them, f16
 * saturation, and a tar run in memory for one input at a time.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "helpers.h"
#include "output.h"
#include "sha256.h"

/* --- helpers ------------------------------------------------------------------ */

static void tone(const char *path, double seconds, double f0)
{
    const int rate = 16000;
    const sf_count_t n = (sf_count_t)(seconds * rate);
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    cr_assert_not_null(x);
    for (sf_count_t i = 0; i < n; i++)
        x[i] = (float)(0.3 * sin(2 * M_PI * f0 * (double)i / rate));
    SF_INFO info = {.samplerate = rate, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert_not_null(f, "%s: %s", path, sf_strerror(NULL));
    cr_assert_eq(sf_writef_float(f, x, n), n);
    sf_close(f);
    free(x);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void mkmodel(const char *dir, int seed, char *path, size_t cap)
{
    snprintf(path, cap, "%s/m%d.gguf", dir, seed);
    char cmd[4400], err[1024];
    snprintf(cmd, sizeof cmd, "%s --n-mels 80 --d 64 --seed %d -o %s", ws_mkmodel(), seed, path);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
}

typedef struct {
    cJSON **line;
    int n;
} lines;

/* Each line of a JSON Lines file, parsed by Python's json (which takes \udcXX) and
 * printed back with ensure_ascii, so that cJSON reads it. */
static lines read_lines(const char *path)
{
    char cmd[4400], out[4200], err[4096];
    snprintf(out, sizeof out, "%s.ascii", path);
    snprintf(cmd, sizeof cmd,
             "%s -c 'import json,sys\n"
             "for l in open(sys.argv[1], encoding=\"utf-8\"):\n"
             "    print(json.dumps(json.loads(l)))' %s > %s",
             ws_python(), path, out);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s: %s", path, err);
    size_t len = 0;
    char *t = read_file(out, &len);
    cr_assert_not_null(t);
    t = realloc(t, len + 1);
    t[len] = 0;
    lines m = {NULL, 0};
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

static void free_lines(lines *m)
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

/* The line whose input ends with tail. */
static const cJSON *line_of(const lines *m, const char *tail)
{
    for (int i = 0; i < m->n; i++) {
        const char *in = str(m->line[i], "input");
        size_t a = in ? strlen(in) : 0, b = strlen(tail);
        if (a >= b && !strcmp(in + a - b, tail))
            return m->line[i];
    }
    cr_assert_fail("no line for %s", tail);
    return NULL;
}

static int count_status(const lines *m, const char *status)
{
    int k = 0;
    for (int i = 0; i < m->n; i++)
        k += str(m->line[i], "status") && !strcmp(str(m->line[i], "status"), status);
    return k;
}

typedef struct {
    ino_t ino;
    struct timespec mtime;
    off_t size;
} file_id;

static file_id id_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s missing", path);
    file_id f = {st.st_ino, st.st_mtim, st.st_size};
    return f;
}

static int same_id(file_id a, file_id b)
{
    return a.ino == b.ino && a.mtime.tv_sec == b.mtime.tv_sec &&
           a.mtime.tv_nsec == b.mtime.tv_nsec && a.size == b.size;
}

/* --- SHA-256 ------------------------------------------------------------------ */

static void hex_of(const void *p, size_t n, char hex[65])
{
    ws_sha256 s;
    ws_sha256_init(&s);
    ws_sha256_update(&s, p, n);
    ws_sha256_hex(&s, hex);
}

Test(sha256, fips_180_vectors_and_sha256sum_of_a_file)
{
    char hex[65];
    hex_of("", 0, hex);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hex_of("abc", 3, hex);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two, strlen(two), hex);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* a million 'a' fed in pieces of odd sizes */
    ws_sha256 s;
    ws_sha256_init(&s);
    char a[997];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    for (size_t k = 1; left; k = k % 997 + 1) {
        size_t m = k < left ? k : left;
        ws_sha256_update(&s, a, m);
        left -= m;
    }
    ws_sha256_hex(&s, hex);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* every length across the block and padding boundaries, against sha256sum(1) */
    const char *dir = test_tmpdir();
    char p[4096], cmd[8400], err[256];
    unsigned char buf[200];
    for (int i = 0; i < 200; i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    for (size_t n = 50; n <= 140; n += 1) {
        snprintf(p, sizeof p, "%s/f", dir);
        FILE *f = fopen(p, "wb");
        fwrite(buf, 1, n, f);
        fclose(f);
        snprintf(cmd, sizeof cmd, "sha256sum %s | cut -c1-64 > %s.sum", p, p);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(cmd, sizeof cmd, "%s.sum", p);
        size_t len = 0;
        char *want = read_file(cmd, &len);
        cr_assert(want && len >= 64);
        hex_of(buf, n, hex);
        cr_assert(!memcmp(hex, want, 64), "length %zu: %s, sha256sum %.64s", n, hex, want);
        free(want);
    }
}

/* --- a tar run in memory for one input at a time ------------------------------------ */

Test(shards, tar_run_with_memory_for_one_input_finishes, .timeout = 240)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192], list[8192] = "";
    mkmodel(dir, 1, model, sizeof model);
    for (int i = 0; i < 4; i++) { /* 100 s each: about 13 MiB at its peak, 16 MiB allowed */
        snprintf(p, sizeof p, "%s/a%d.wav", dir, i);
        tone(p, 100, 300 + 50 * i);
        strcat(list, p);
        strcat(list, "\n");
    }
    snprintf(p, sizeof p, "%s/list", dir);
    write_text(p, list);
    snprintf(cmd, sizeof cmd,
             "timeout 60 %s -m %s --device cpu --threads 2 --max-memory 16M --list %s -O %s/out "
             "--tar-size 2",
             ws_bin(), model, p, dir);
    int st = run_cmd(cmd, err, sizeof err);
    cr_assert_neq(st, 124, "still running after 60 s (stalled): %s", err);
    cr_assert_eq(st, 0, "%s", err);
    snprintf(p, sizeof p, "%s/out/shard-000001.tar", dir);
    cr_assert(file_exists(p));
}

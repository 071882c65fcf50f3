/* test_manifest.c - what a corpus run records and how reruns use it (docs/spec.md "Corpus
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
#include "cli/run.h"
#include "sha256.h"
#include "whisper/model.h"

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

/* --- strings that are not UTF-8, provenance, time, f16 ---------------------------------- */

Test(manifest, quote_escapes_bytes_that_are_not_utf8_as_udcxx)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"plain", "\"plain\""},
        {"q\"b\\s", "\"q\\\"b\\\\s\""},
        {"\n\t\x01\x1f", "\"\\n\\t\\u0001\\u001f\""},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb5", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb5\""},
        {"n\xffq", "\"n\\udcffq\""},
        {"\xc3(", "\"\\udcc3(\""},             /* a lead byte without its continuation */
        {"\xc0\xaf", "\"\\udcc0\\udcaf\""},    /* overlong '/' */
        {"\xed\xa0\x80", "\"\\udced\\udca0\\udc80\""}, /* an encoded surrogate */
        {"\xf4\x90\x80\x80", "\"\\udcf4\\udc90\\udc80\\udc80\""}, /* past U+10FFFF */
        {"\xe2\x82", "\"\\udce2\\udc82\""},   /* cut short at the end */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *q = ws_json_quote(cases[i].in);
        cr_assert_str_eq(q, cases[i].want, "case %zu", i);
        /* and back: a line holding it parses to the same bytes */
        char line[256];
        snprintf(line, sizeof line, "{\"s\":%s}", q);
        cJSON *o = ws_json_parse(line, strlen(line));
        cr_assert_not_null(o, "%s", line);
        cr_assert_str_eq(cJSON_GetObjectItem(o, "s")->valuestring, cases[i].in, "case %zu", i);
        cJSON_Delete(o);
        free(q);
    }
    /* a surrogate pair written by another hand (Python's ensure_ascii) stays a character,
     * and an escaped backslash before "udc80" is text */
    const char *other = "{\"s\":\"\\ud83c\\udfb5 \\\\udc80\"}";
    cJSON *o = ws_json_parse(other, strlen(other));
    cr_assert_not_null(o);
    cr_assert_str_eq(cJSON_GetObjectItem(o, "s")->valuestring, "\xf0\x9f\x8e\xb5 \\udc80");
    cJSON_Delete(o);
}

Test(manifest, names_that_are_not_utf8_give_lines_python_reads_back_to_the_bytes, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    const char *names[] = {"n\xffq.wav", "caf\xc3\xa9.wav", "t\x01" "ab.wav", "l\xe9gal.wav"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        tone(p, 0.5, 440);
    }
    for (int tar = 0; tar < 2; tar++) {
        snprintf(cmd, sizeof cmd,
                 "cd %s && %s -m %s --device cpu -O out%d %s --manifest m%d.jsonl --json r%d.json "
                 "'%s' '%s' '%s' '%s'",
                 dir, ws_bin(), model, tar, tar ? "--tar-size 2" : "", tar, tar, names[0],
                 names[1], names[2], names[3]);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        /* Python reads the file as strict UTF-8 and gives back each input's bytes */
        snprintf(cmd, sizeof cmd,
                 "cd %s && %s -c 'import json, os, sys\n"
                 "for f in sys.argv[1:]:\n"
                 "    text = open(f, \"rb\").read().decode(\"utf-8\")\n"
                 "    objs = [json.loads(l) for l in text.splitlines()] if f.endswith(\"l\") else json.loads(text)[\"inputs\"]\n"
                 "    for o in objs:\n"
                 "        b = os.fsencode(o[\"input\"]); assert os.path.exists(b), b\n"
                 "        assert o[\"status\"] == \"ok\", o\n"
                 "        print(b.hex())' m%d.jsonl r%d.json > hex%d.txt",
                 dir, ws_python(), tar, tar, tar);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(p, sizeof p, "%s/hex%d.txt", dir, tar);
        size_t len = 0;
        char *hex = read_file(p, &len);
        cr_assert(hex && len > 0);
        cr_assert(strstr(hex, "6eff712e776176"), "n\\xffq.wav: %.*s", (int)len, hex); /* n ff q .wav */
        cr_assert(strstr(hex, "6ce967616c2e776176"), "%.*s", (int)len, hex);
        free(hex);
    }
    /* the sidecar and the shard index are written by the same function */
    snprintf(p, sizeof p, "%s/out0/n\xffq.json", dir);
    size_t len = 0;
    char *side = read_file(p, &len);
    cr_assert_not_null(side, "no sidecar %s", p);
    const char *want = "\"input\":\"n\\udcffq.wav\"";
    cr_assert(memmem(side, len, want, strlen(want)), "%.*s", (int)len, side);
    free(side);
    snprintf(p, sizeof p, "%s/out1/shard-000000.jsonl", dir);
    char *idx = read_file(p, &len);
    cr_assert_not_null(idx, "no index %s", p);
    cr_assert(memmem(idx, len, want, strlen(want)), "%.*s", (int)len, idx);
    free(idx);
}

Test(manifest, provenance_holds_the_sha256_of_the_stem_tensors_and_the_settings, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 3, model, sizeof model);
    snprintf(p, sizeof p, "%s/a.wav", dir);
    tone(p, 0.5, 440);
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/out --out-dtype f16 --pad mel0 "
             "--manifest %s/m.jsonl %s && date +%%s > %s/now",
             ws_bin(), model, dir, dir, p, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* the digest, computed here from the model's floats in the documented order */
    ws_model m = {0};
    ws_err e = {{0}};
    cr_assert_eq(ws_model_load(&m, model, &e), 0, "%s", e.msg);
    ws_sha256 s;
    ws_sha256_init(&s);
    const size_t d = (size_t)m.d;
    ws_sha256_update(&s, m.conv1_w, d * (size_t)m.n_mels * 3 * 4); /* x86: little-endian */
    ws_sha256_update(&s, m.conv1_b, d * 4);
    ws_sha256_update(&s, m.conv2_w, d * d * 3 * 4);
    ws_sha256_update(&s, m.conv2_b, d * 4);
    if (m.pos)
        ws_sha256_update(&s, m.pos, (size_t)m.n_pos * d * 4);
    char hex[65];
    ws_sha256_hex(&s, hex);
    snprintf(p, sizeof p, "%s/m.jsonl", dir);
    lines l = read_lines(p);
    cr_assert_eq(l.n, 1);
    const cJSON *pv = cJSON_GetObjectItem(l.line[0], "provenance");
    cr_assert_not_null(pv);
    const cJSON *mo = cJSON_GetObjectItem(pv, "model");
    cr_assert_str_eq(str(mo, "sha256"), hex);
    cr_assert_str_eq(str(mo, "name"), m.name);
    cr_assert_str_eq(str(pv, "version"), WS_VERSION);
    cr_assert_str_eq(str(pv, "output"), "embeddings");
    cr_assert_str_eq(str(pv, "pad"), "mel0");
    cr_assert_str_eq(str(pv, "precision"), "fp32");
    cr_assert_str_eq(str(pv, "device"), "cpu");
    cr_assert_str_eq(str(pv, "mel_device"), "cpu");
    cr_assert_str_eq(str(pv, "out_dtype"), "float16");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(pv, "pos")));
    cr_assert_eq(cJSON_GetObjectItem(pv, "n_mels")->valueint, 80);
    cr_assert_eq(cJSON_GetObjectItem(l.line[0], "f16_clamped")->valueint, 0);
    /* time: seconds since the epoch, milliseconds, at most a few seconds before `date` */
    const cJSON *t = cJSON_GetObjectItem(l.line[0], "time");
    cr_assert(cJSON_IsNumber(t));
    snprintf(p, sizeof p, "%s/now", dir);
    size_t len = 0;
    char *now = read_file(p, &len);
    const double tn = atof(now);
    free(now);
    cr_assert(t->valuedouble <= tn + 1 && t->valuedouble > tn - 60, "%f vs %f", t->valuedouble, tn);
    cr_assert_float_eq(t->valuedouble * 1000, round(t->valuedouble * 1000), 1e-3);
    free_lines(&l);
    ws_model_free(&m);
    /* --mel: no model */
    snprintf(cmd, sizeof cmd, "%s --mel -O %s/mel --manifest %s/mm.jsonl %s/a.wav", ws_bin(), dir,
             dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/mm.jsonl", dir);
    l = read_lines(p);
    pv = cJSON_GetObjectItem(l.line[0], "provenance");
    cr_assert(cJSON_IsNull(cJSON_GetObjectItem(pv, "model")));
    cr_assert_str_eq(str(pv, "output"), "log_mel");
    cr_assert_null(cJSON_GetObjectItem(l.line[0], "f16_clamped"));
    free_lines(&l);
}

Test(output, f16_saturates_finite_values_beyond_its_range_and_counts_them)
{
    const float in[] = {1.0f, 65504.0f, 65519.0f, 65520.0f, -70000.0f, 1e30f, INFINITY, -INFINITY,
                        NAN, -65519.9f};
    const uint16_t want[] = {0x3c00, 0x7bff, 0x7bff, 0x7bff, 0xfbff, 0x7bff, 0x7c00, 0xfc00, 0, 0xfbff};
    float buf[10];
    memcpy(buf, in, sizeof in);
    cr_assert_eq(ws_f32_to_f16_inplace(buf, 10), 3); /* 65520, -70000, 1e30 */
    uint16_t h[10];
    memcpy(h, buf, sizeof h);
    for (int i = 0; i < 10; i++)
        if (i != 8)
            cr_assert_eq(h[i], want[i], "%d: %04x, not %04x", i, h[i], want[i]);
    cr_assert((h[8] & 0x7c00) == 0x7c00 && (h[8] & 0x3ff), "NaN stays NaN");
    /* values converted elsewhere (the GPU): infinities saturate */
    uint16_t g[4] = {0x7c00, 0xfc00, 0x3c00, 0x7bff};
    cr_assert_eq(ws_f16_saturate(g, 4), 2);
    cr_assert(g[0] == 0x7bff && g[1] == 0xfbff && g[2] == 0x3c00 && g[3] == 0x7bff);
}

/* --- tar mode converges ------------------------------------------------------------------ */

/* dir/a.wav, dir/bad.wav (not audio), dir/b.wav, dir/c.wav, dir/d.wav; dir/list names them
 * in that order. */
static void tar_corpus(const char *dir)
{
    char p[4096];
    const char *good[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s.wav", dir, good[i]);
        tone(p, 0.5, 300 + 100 * i);
    }
    snprintf(p, sizeof p, "%s/bad.wav", dir);
    write_text(p, "this is not audio, not at all, and long enough to be looked at\n");
    char list[8192];
    snprintf(list, sizeof list, "%s/a.wav\n%s/bad.wav\n%s/b.wav\n%s/c.wav\n%s/d.wav\n", dir, dir,
             dir, dir, dir);
    snprintf(p, sizeof p, "%s/list", dir);
    write_text(p, list);
}

static int run_tar(const char *dir, const char *model, const char *list, const char *extra,
                   const char *manifest, char *err, size_t cap)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "%s -m %s --device cpu --list %s/%s -O %s/out --tar-size 3 --manifest %s/%s %s",
             ws_bin(), model, dir, list, dir, dir, manifest, extra);
    return run_cmd(cmd, err, cap);
}

Test(shards, rerun_with_a_broken_input_rewrites_nothing, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    tar_corpus(dir);
    cr_assert_eq(run_tar(dir, model, "list", "", "m1.jsonl", err, sizeof err), 1, "%s", err);
    const char *files[] = {"shard-000000.tar", "shard-000000.jsonl", "shard-000001.tar",
                           "shard-000001.jsonl"};
    file_id before[4];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/out/%s", dir, files[i]);
        before[i] = id_of(p);
    }
    /* the index: one line per input of the shard, in list order, with its status */
    snprintf(p, sizeof p, "%s/out/shard-000000.jsonl", dir);
    lines idx = read_lines(p);
    cr_assert_eq(idx.n, 3);
    cr_assert(strstr(str(idx.line[0], "input"), "/a.wav") && strstr(str(idx.line[1], "input"), "/bad.wav"));
    cr_assert_str_eq(str(idx.line[1], "status"), "failed");
    cr_assert_str_eq(str(idx.line[2], "shard"), str(idx.line[2], "output"));
    free_lines(&idx);
    cr_assert_eq(run_tar(dir, model, "list", "--skip-existing", "m2.jsonl", err, sizeof err), 1,
                 "%s", err);
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/out/%s", dir, files[i]);
        cr_assert(same_id(before[i], id_of(p)), "%s was written again", files[i]);
    }
    snprintf(p, sizeof p, "%s/out/shard-000002.jsonl", dir);
    cr_assert_not(file_exists(p), "a new shard was made");
    snprintf(p, sizeof p, "%s/m2.jsonl", dir);
    lines m = read_lines(p);
    cr_assert_eq(m.n, 5);
    cr_assert_eq(count_status(&m, "skipped"), 4);
    const cJSON *bad = line_of(&m, "/bad.wav");
    cr_assert_str_eq(str(bad, "status"), "failed");
    cr_assert(strstr(str(bad, "error"), "bad.wav"), "%s", str(bad, "error"));
    const cJSON *a = line_of(&m, "/a.wav"); /* the recorded metadata */
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(a, "shape")), 2);
    cr_assert_eq(cJSON_GetObjectItem(a, "valid_ctx")->valueint, 25);
    cr_assert_not_null(cJSON_GetObjectItem(a, "provenance"));
    cr_assert(strstr(str(a, "shard"), "/out/shard-000000.tar"));
    free_lines(&m);
    cr_assert(strstr(err, "bad.wav"), "the recorded failure is said again: %s", err);
}

Test(shards, retry_of_the_failures_takes_a_new_number_and_reports_the_real_error, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    tar_corpus(dir);
    cr_assert_eq(run_tar(dir, model, "list", "", "m1.jsonl", err, sizeof err), 1, "%s", err);
    snprintf(p, sizeof p, "%s/out/shard-000000.tar", dir);
    file_id before = id_of(p);
    /* the failure, and an input new to this directory (so that the retry's shard holds an
     * output: a shard none of whose inputs was written leaves no file) */
    char failed[8400];
    snprintf(p, sizeof p, "%s/e.wav", dir);
    tone(p, 0.5, 800);
    snprintf(failed, sizeof failed, "%s/bad.wav\n%s/e.wav\n", dir, dir);
    snprintf(p, sizeof p, "%s/failed.txt", dir);
    write_text(p, failed);
    for (int skip = 0; skip < 2; skip++) {
        cr_assert_eq(run_tar(dir, model, "failed.txt", skip ? "--skip-existing" : "", "m2.jsonl",
                             err, sizeof err), 1, "%s", err);
        cr_assert_not(strstr(err, "not from this shard"), "%s", err);
        cr_assert(strstr(err, "bad.wav: not a recognised audio file"), "%s", err);
        snprintf(p, sizeof p, "%s/out/shard-000000.tar", dir);
        cr_assert(same_id(before, id_of(p)), "shard 0 was replaced");
        /* numbers 0 and 1 hold the first list's shards: the retry's shard 0 is number 2 */
        snprintf(p, sizeof p, "%s/out/shard-000002.jsonl", dir);
        cr_assert(file_exists(p), "no index for the retry's shard");
        for (int k = 3; k < 5; k++) {
            snprintf(p, sizeof p, "%s/out/shard-%06d.jsonl", dir, k);
            cr_assert_not(file_exists(p), "the second retry found its own shard number");
        }
    }
    snprintf(p, sizeof p, "%s/m2.jsonl", dir);
    lines m = read_lines(p);
    cr_assert_eq(m.n, 4);
    cr_assert_eq(count_status(&m, "failed"), 2);
    cr_assert_eq(count_status(&m, "ok"), 1);
    cr_assert_eq(count_status(&m, "skipped"), 1);
    free_lines(&m);
}

Test(shards, list_with_the_broken_input_dropped_skips_the_rest, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], err[8192], list[8192];
    mkmodel(dir, 1, model, sizeof model);
    tar_corpus(dir);
    cr_assert_eq(run_tar(dir, model, "list", "", "m1.jsonl", err, sizeof err), 1, "%s", err);
    snprintf(list, sizeof list, "%s/a.wav\n%s/b.wav\n%s/c.wav\n%s/d.wav\n", dir, dir, dir, dir);
    snprintf(p, sizeof p, "%s/good", dir);
    write_text(p, list);
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(run_tar(dir, model, "good", "--skip-existing", "m2.jsonl", err, sizeof err),
                     0, "%s", err);
        cr_assert(strstr(err, "0 written, 0 failed, 4 skipped"), "%s", err);
    }
    snprintf(p, sizeof p, "%s/out/shard-000002.tar", dir);
    cr_assert_not(file_exists(p));
    snprintf(p, sizeof p, "%s/m2.jsonl", dir);
    lines m = read_lines(p);
    cr_assert_eq(m.n, 8);
    cr_assert_eq(count_status(&m, "skipped"), 8);
    cr_assert(strstr(str(line_of(&m, "/d.wav"), "shard"), "/out/shard-000001.tar"));
    free_lines(&m);
    /* a new input among them goes into a shard of its own number; the others stay skipped */
    snprintf(p, sizeof p, "%s/e.wav", dir);
    tone(p, 0.5, 900);
    snprintf(list, sizeof list, "%s/a.wav\n%s/b.wav\n%s/e.wav\n%s/d.wav\n", dir, dir, dir, dir);
    snprintf(p, sizeof p, "%s/good", dir);
    write_text(p, list);
    cr_assert_eq(run_tar(dir, model, "good", "--skip-existing", "m3.jsonl", err, sizeof err), 0,
                 "%s", err);
    cr_assert(strstr(err, "1 written, 0 failed, 3 skipped"), "%s", err);
    cr_assert_eq(run_tar(dir, model, "good", "--skip-existing", "m3.jsonl", err, sizeof err), 0,
                 "%s", err);
    cr_assert(strstr(err, "0 written, 0 failed, 4 skipped"), "%s", err);
}

/* --- sidecars and settings ---------------------------------------------------------------- */

Test(sidecar, skipped_lines_carry_the_recorded_metadata, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[32768], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    snprintf(p, sizeof p, "%s/a.wav", dir);
    tone(p, 45, 440); /* two windows */
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/out --manifest %s/m.jsonl %s "
             "&& %s -m %s --device cpu -O %s/out --manifest %s/m.jsonl --skip-existing %s",
             ws_bin(), model, dir, dir, p, ws_bin(), model, dir, dir, p);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/out/a.json", dir);
    lines side = read_lines(p);
    cr_assert_eq(side.n, 1);
    cr_assert_str_eq(str(side.line[0], "status"), "ok");
    snprintf(p, sizeof p, "%s/m.jsonl", dir);
    lines m = read_lines(p);
    cr_assert_eq(m.n, 2);
    cr_assert_str_eq(str(m.line[1], "status"), "skipped");
    const char *keys[] = {"shape", "dtype", "sample_rate", "channels", "samples", "duration_s",
                          "windows", "content_frames", "valid_ctx", "provenance", "output"};
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const cJSON *a = cJSON_GetObjectItem(m.line[0], keys[k]), *b = cJSON_GetObjectItem(m.line[1], keys[k]);
        cr_assert(a && b && cJSON_Compare(a, b, 1), "%s differs in the skipped line", keys[k]);
        cr_assert(cJSON_Compare(a, cJSON_GetObjectItem(side.line[0], keys[k]), 1), "%s", keys[k]);
    }
    cr_assert_eq(cJSON_GetObjectItem(m.line[1], "windows")->valueint, 2);
    cr_assert(cJSON_GetObjectItem(m.line[1], "time")->valuedouble >=
              cJSON_GetObjectItem(m.line[0], "time")->valuedouble);
    free_lines(&m);
    free_lines(&side);
}

Test(sidecar, other_model_or_dtype_or_no_record_is_redone_and_said_once, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char m1[4096], m2[4096], p[4096], cmd[16384], err[8192], ins[8400];
    mkmodel(dir, 1, m1, sizeof m1);
    mkmodel(dir, 2, m2, sizeof m2);
    snprintf(ins, sizeof ins, "%s/a.wav %s/b.wav", dir, dir);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        tone(p, 0.5, 440 + 200 * i);
    }
    const char *base = "%s -m %s --device cpu -O %s/out --skip-existing %s %s";
    snprintf(cmd, sizeof cmd, base, ws_bin(), m1, dir, "", ins);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert_null(strstr(err, "other settings"), "%s", err);
    /* the same settings: skipped */
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "0 written, 0 failed, 2 skipped"), "%s", err);
    /* another model (another seed: the same name pattern, other tensors) */
    snprintf(cmd, sizeof cmd, base, ws_bin(), m2, dir, "", ins);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "2 written, 0 failed, 0 skipped"), "%s", err);
    cr_assert(strstr(err, "whisper-stem: --skip-existing: 2 outputs made with other settings "
                          "(model name, model sha256) redone"), "%s", err);
    char *first = strstr(err, "other settings");
    cr_assert_null(strstr(first + 1, "other settings"), "said more than once: %s", err);
    /* another --out-dtype */
    snprintf(cmd, sizeof cmd, base, ws_bin(), m2, dir, "--out-dtype f16", ins);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "2 outputs made with other settings (out_dtype) redone"), "%s", err);
    /* an output without its sidecar (no record) */
    snprintf(p, sizeof p, "%s/out/a.json", dir);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "1 written, 0 failed, 1 skipped"), "%s", err);
    cr_assert(strstr(err, "1 output made with other settings (no record) redone"), "%s", err);
    cr_assert(file_exists(p), "the sidecar is back");
    /* tar shards made with another model are redone too */
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/tars --tar-size 2 --skip-existing %s",
             ws_bin(), m1, dir, ins);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/tars --tar-size 2 --skip-existing %s",
             ws_bin(), m2, dir, ins);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "2 written, 0 failed, 0 skipped"), "%s", err);
    cr_assert(strstr(err, "2 outputs made with other settings (model name, model sha256) redone"),
              "%s", err);
}

/* A model whose outputs pass the float16 range (conv2's weights scaled up): f16 outputs
 * saturate at +-65504 and the line counts them; on the GPU too when there is one (there
 * the conversion happens on the device and the host saturates its infinities). */
Test(manifest, f16_outputs_beyond_the_range_saturate_and_are_counted, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    ws_model m = {0};
    ws_err e = {{0}};
    cr_assert_eq(ws_model_init_random(&m, 80, 384, 7, 0, &e), 0, "%s", e.msg); /* GPU shapes */
    for (size_t i = 0; i < (size_t)384 * 384 * 3; i++)
        m.conv2_w[i] *= 3e5f;
    snprintf(model, sizeof model, "%s/big.gguf", dir);
    cr_assert_eq(ws_model_save_gguf(&m, model, WS_TT_F32, &e), 0, "%s", e.msg);
    ws_model_free(&m);
    snprintf(p, sizeof p, "%s/a.wav", dir);
    tone(p, 2, 440);
    snprintf(cmd, sizeof cmd, "%s --check > /dev/null 2>&1", ws_bin());
    const int gpu = run_cmd(cmd, NULL, 0) == 0;
    for (int dev = 0; dev <= gpu; dev++) {
        snprintf(cmd, sizeof cmd,
                 "%s -m %s --device %s -O %s/out%d --out-dtype f16 --manifest %s/m%d.jsonl %s",
                 ws_bin(), model, dev ? "cuda" : "cpu", dir, dev, dir, dev, p);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(p, sizeof p, "%s/out%d/a.npy", dir, dev);
        size_t len = 0;
        unsigned char *npy = read_file(p, &len);
        cr_assert(npy && len > 128 + 1500 * 384 * 2 - 1);
        const size_t hl = len - (size_t)1500 * 384 * 2;
        long sat = 0, inf = 0;
        for (size_t i = hl; i + 1 < len; i += 2) {
            const unsigned h = npy[i] | (unsigned)npy[i + 1] << 8;
            sat += (h & 0x7fff) == 0x7bff;
            inf += (h & 0x7fff) == 0x7c00;
        }
        free(npy);
        cr_assert_eq(inf, 0, "%s: %ld infinities", dev ? "cuda" : "cpu", inf);
        cr_assert_gt(sat, 100, "%s: the model should pass the range (%ld at 65504)",
                     dev ? "cuda" : "cpu", sat);
        snprintf(p, sizeof p, "%s/m%d.jsonl", dir, dev);
        lines l = read_lines(p);
        /* the clamped values are at +-65504, beside those that round to it (|x| < 65520) */
        const double clamped = cJSON_GetObjectItem(l.line[0], "f16_clamped")->valuedouble;
        cr_assert(clamped > 0.9 * sat && clamped <= sat, "%s: %.0f clamped, %ld at 65504",
                  dev ? "cuda" : "cpu", clamped, sat);
        free_lines(&l);
        snprintf(p, sizeof p, "%s/a.wav", dir);
    }
}

Test(shards, malformed_index_lines_are_left_out_with_a_warning, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    tar_corpus(dir);
    cr_assert_eq(run_tar(dir, model, "list", "", "m1.jsonl", err, sizeof err), 1, "%s", err);
    /* a line that is not JSON, one over 1 MiB, then a partial last line (a full disk) */
    snprintf(p, sizeof p, "%s/out/shard-000001.jsonl", dir);
    FILE *f = fopen(p, "a");
    cr_assert_not_null(f);
    fputs("not json\n{\"input\":\"", f);
    for (int i = 0; i < (1 << 20) + 10; i++)
        fputc('x', f);
    fputs("\"}\n{\"input\":\"y\",\"sta", f);
    fclose(f);
    cr_assert_eq(run_tar(dir, model, "list", "--skip-existing", "m2.jsonl", err, sizeof err), 1,
                 "%s", err);
    const char *w = strstr(err, "shard-000001.jsonl: 3 lines left out");
    cr_assert(w, "%s", err);
    cr_assert_null(strstr(w + 40, "lines left out"), "said once: %s", err);
    cr_assert(strstr(err, "0 written, 1 failed, 4 skipped"), "%s", err);
}

Test(shards, records_of_a_shard_whose_tar_is_gone_skip_nothing, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], err[8192], list[8192];
    mkmodel(dir, 1, model, sizeof model);
    tar_corpus(dir);
    cr_assert_eq(run_tar(dir, model, "list", "", "m1.jsonl", err, sizeof err), 1, "%s", err);
    snprintf(p, sizeof p, "%s/out/shard-000001.tar", dir); /* c and d */
    cr_assert_eq(unlink(p), 0);
    snprintf(list, sizeof list, "%s/a.wav\n%s/b.wav\n%s/c.wav\n%s/d.wav\n", dir, dir, dir, dir);
    snprintf(p, sizeof p, "%s/good", dir);
    write_text(p, list);
    cr_assert_eq(run_tar(dir, model, "good", "--skip-existing", "m2.jsonl", err, sizeof err), 0,
                 "%s", err);
    cr_assert(strstr(err, "2 written, 0 failed, 2 skipped"), "%s", err);
}

/* --- records that are not files: no hang, "no record" -------------------------------- */

Test(shards, index_that_is_a_fifo_or_a_link_to_dev_zero_is_no_record_and_no_hang, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        tone(p, 0.5, 440 + 200 * i);
    }
    snprintf(p, sizeof p, "%s/out", dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    /* a FIFO at the first shard number's index: probed even without --skip-existing */
    snprintf(p, sizeof p, "%s/out/shard-000000.jsonl", dir);
    cr_assert_eq(mkfifo(p, 0666), 0);
    snprintf(cmd, sizeof cmd, "timeout 30 %s -m %s --device cpu -O %s/out --tar-size 2 %s/a.wav "
             "%s/b.wav", ws_bin(), model, dir, dir, dir);
    int st = run_cmd(cmd, err, sizeof err);
    cr_assert_neq(st, 124, "hung: %s", err);
    cr_assert_eq(st, 0, "%s", err);
    cr_assert(strstr(err, "shard-000000.jsonl: not a regular file; no record"), "%s", err);
    snprintf(p, sizeof p, "%s/out/shard-000001.tar", dir);
    cr_assert(file_exists(p), "the shard took the next number: %s", err);
    /* an index elsewhere that is a link to /dev/zero: read by --skip-existing */
    snprintf(p, sizeof p, "%s/out/shard-000099.jsonl", dir);
    cr_assert_eq(symlink("/dev/zero", p), 0);
    snprintf(cmd, sizeof cmd, "timeout 30 %s -m %s --device cpu -O %s/out --tar-size 2 "
             "--skip-existing %s/a.wav %s/b.wav", ws_bin(), model, dir, dir, dir);
    st = run_cmd(cmd, err, sizeof err);
    cr_assert_neq(st, 124, "hung: %s", err);
    cr_assert_eq(st, 0, "%s", err);
    cr_assert(strstr(err, "shard-000099.jsonl: a symbolic link (not followed); no record"), "%s",
              err);
    cr_assert(strstr(err, "0 written, 0 failed, 2 skipped"), "%s", err);
}

Test(shards, a_nul_inside_an_index_line_leaves_the_next_line_read, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        tone(p, 0.5, 440 + 200 * i);
    }
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/out --tar-size 2 %s/a.wav %s/b.wav",
             ws_bin(), model, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* a line with a NUL in it before the index's lines */
    snprintf(p, sizeof p, "%s/out/shard-000000.jsonl", dir);
    size_t len = 0;
    char *idx = read_file(p, &len);
    cr_assert_not_null(idx);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fwrite("garbage\0garbage\n", 1, 16, f);
    fwrite(idx, 1, len, f);
    fclose(f);
    free(idx);
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/out --tar-size 2 --skip-existing "
             "%s/a.wav %s/b.wav", ws_bin(), model, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "shard-000000.jsonl: 1 line left out"), "%s", err);
    cr_assert(strstr(err, "0 written, 0 failed, 2 skipped"), "%s", err);
}

Test(sidecar, a_fifo_at_a_sidecar_is_no_record_and_no_hang, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        tone(p, 0.5, 440 + 200 * i);
    }
    snprintf(cmd, sizeof cmd, "timeout 30 %s -m %s --device cpu -O %s/out --skip-existing "
             "%s/a.wav %s/b.wav", ws_bin(), model, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/out/a.json", dir);
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(mkfifo(p, 0666), 0);
    int st = run_cmd(cmd, err, sizeof err);
    cr_assert_neq(st, 124, "hung: %s", err);
    cr_assert_eq(st, 0, "%s", err);
    cr_assert(strstr(err, "a.json: not a regular file; no record"), "%s", err);
    cr_assert(strstr(err, "1 written, 0 failed, 1 skipped"), "%s", err);
    struct stat sb;
    cr_assert(stat(p, &sb) == 0 && S_ISREG(sb.st_mode), "the sidecar is a file again");
}

/* The old record goes before the new output is put in place: a record that cannot be
 * removed (immutable, chattr +i) stops the write, so an output never sits beside a record
 * of another run (before: the new .npy or tar was named, then the record's write failed
 * and a run with the old settings skipped the new data as its own). */
Test(sidecar, an_old_record_is_removed_before_the_new_output_is_named, .timeout = 180)
{
    const char *dir = test_tmpdir();
    char m1[4096], m2[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, m1, sizeof m1);
    mkmodel(dir, 2, m2, sizeof m2);
    snprintf(p, sizeof p, "%s/a.wav", dir);
    tone(p, 0.5, 440);
    snprintf(p, sizeof p, "%s/probe", dir);
    write_text(p, "x");
    snprintf(cmd, sizeof cmd, "chattr +i %s/probe 2>/dev/null && chattr -i %s/probe", dir, dir);
    if (run_cmd(cmd, NULL, 0) != 0)
        cr_skip_test("chattr +i is not available here");
    for (int tar = 0; tar < 2; tar++) {
        const char *opt = tar ? "--tar-size 2" : "";
        const char *rec = tar ? "shard-000000.jsonl" : "a.json";
        const char *out = tar ? "shard-000000.tar" : "a.npy";
        const char *fmt = "%s -m %s --device cpu -O %s/out%d %s --skip-existing %s/a.wav";
        snprintf(cmd, sizeof cmd, fmt, ws_bin(), m1, dir, tar, opt, dir);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(p, sizeof p, "%s/out%d/%s", dir, tar, out);
        size_t n1 = 0;
        char *data1 = read_file(p, &n1);
        cr_assert_not_null(data1);
        /* another model, its record not removable */
        char m2cmd[16384];
        snprintf(m2cmd, sizeof m2cmd, fmt, ws_bin(), m2, dir, tar, opt, dir);
        snprintf(p, sizeof p, "chattr +i %s/out%d/%s", dir, tar, rec);
        cr_assert_eq(run_cmd(p, err, sizeof err), 0, "%s", err);
        run_cmd(m2cmd, err, sizeof err);
        snprintf(p, sizeof p, "chattr -i %s/out%d/%s", dir, tar, rec);
        cr_assert_eq(run_cmd(p, NULL, 0), 0);
        /* the first model again: it skips the output, which holds its own data */
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(p, sizeof p, "%s/out%d/%s", dir, tar, out);
        size_t n = 0;
        char *data = read_file(p, &n);
        cr_assert_not_null(data);
        cr_assert(n == n1 && !memcmp(data, data1, n), "%s holds the other model's data, "
                  "skipped as the first's: %s", out, err);
        free(data);
        free(data1);
    }
}

/* A shard whose tar cannot be written (ulimit -f) beside an earlier run's tar for the
 * same inputs leaves no index of failures there: the next run makes them (before: the
 * index said "failed" for all, the old tar made the shard complete, and the failure was
 * replayed by every --skip-existing). */
Test(shards, a_failed_tar_write_beside_an_old_tar_leaves_no_index_of_failures, .timeout = 180)
{
    const char *dir = test_tmpdir();
    char m1[4096], m2[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, m1, sizeof m1);
    mkmodel(dir, 2, m2, sizeof m2);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        tone(p, 0.5, 440 + 200 * i);
    }
    const char *fmt = "bash -c 'ulimit -f %d; exec %s -m %s --device cpu -O %s/out --tar-size 2 "
                      "--skip-existing %s/a.wav %s/b.wav'";
    snprintf(cmd, sizeof cmd, fmt, 1 << 20, ws_bin(), m1, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* 8 KiB: the index fits, the tar (two 384 kB members) does not */
    snprintf(cmd, sizeof cmd, fmt, 8, ws_bin(), m2, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "File too large"), "%s", err);
    snprintf(cmd, sizeof cmd, fmt, 1 << 20, ws_bin(), m2, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "the failure replayed: %s", err);
    cr_assert(strstr(err, "2 written, 0 failed, 0 skipped"), "%s", err);
}

/* In tar mode each input redone is counted once, where its newest record decides it. */
Test(shards, outputs_redone_are_counted_once_an_input, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char m1[4096], m2[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, m1, sizeof m1);
    mkmodel(dir, 2, m2, sizeof m2);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        tone(p, 0.5, 440 + 200 * i);
    }
    const char *fmt = "%s -m %s --device cpu -O %s/out --tar-size 2 --skip-existing %s/%s.wav "
                      "%s/%s.wav";
    snprintf(cmd, sizeof cmd, fmt, ws_bin(), m1, dir, dir, "a", dir, "b");
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* another model over the list in another order: another shard number, both redone */
    snprintf(cmd, sizeof cmd, fmt, ws_bin(), m2, dir, dir, "b", dir, "a");
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "2 written, 0 failed, 0 skipped"), "%s", err);
    cr_assert(strstr(err, "--skip-existing: 2 outputs made with other settings (model name, "
                          "model sha256) redone"), "%s", err);
    /* the first order again with the second model: the shard of the first model is there,
     * but the newer records skip both: nothing redone */
    snprintf(cmd, sizeof cmd, fmt, ws_bin(), m2, dir, dir, "a", dir, "b");
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "0 written, 0 failed, 2 skipped"), "%s", err);
    cr_assert_null(strstr(err, "other settings"), "%s", err);
}

/* A skipped input's line names this run's input and output, not the record's. */
Test(sidecar, skipped_lines_name_this_runs_input_and_output, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%c.wav", dir, 'a' + i);
        tone(p, 0.5, 440 + 200 * i);
    }
    snprintf(cmd, sizeof cmd, "cd %s && %s -m %s --device cpu -O o1 a.wav && %s -m %s --device cpu "
             "-O ./o1/ --skip-existing --manifest m1.jsonl %s/a.wav",
             dir, ws_bin(), model, ws_bin(), model, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/m1.jsonl", dir);
    lines m = read_lines(p);
    cr_assert_eq(m.n, 1);
    cr_assert_str_eq(str(m.line[0], "status"), "skipped");
    snprintf(p, sizeof p, "%s/a.wav", dir);
    cr_assert_str_eq(str(m.line[0], "input"), p);
    cr_assert_str_eq(str(m.line[0], "output"), "./o1//a.npy");
    free_lines(&m);
    /* tar mode: the shard as this run names it */
    snprintf(cmd, sizeof cmd, "cd %s && %s -m %s --device cpu -O o2 --tar-size 2 a.wav b.wav && "
             "%s -m %s --device cpu -O ./o2/ --tar-size 2 --skip-existing --manifest m2.jsonl "
             "a.wav b.wav", dir, ws_bin(), model, ws_bin(), model);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "0 written, 0 failed, 2 skipped"), "%s", err);
    snprintf(p, sizeof p, "%s/m2.jsonl", dir);
    m = read_lines(p);
    cr_assert_eq(m.n, 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_str_eq(str(m.line[i], "output"), "./o2//shard-000000.tar");
        cr_assert_str_eq(str(m.line[i], "shard"), "./o2//shard-000000.tar");
    }
    free_lines(&m);
}

/* A record's keys that are not UTF-8 (\udcXX in it) come out quoted as its strings are:
 * the skipped line stays UTF-8 (before: the bytes were written as they were). */
Test(sidecar, keys_of_a_record_that_are_not_utf8_stay_escaped, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char model[4096], p[4096], cmd[16384], err[8192];
    mkmodel(dir, 1, model, sizeof model);
    snprintf(p, sizeof p, "%s/a.wav", dir);
    tone(p, 0.5, 440);
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/out %s", ws_bin(), model, dir, p);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(p, sizeof p, "%s/out/a.json", dir);
    size_t len = 0;
    char *side = read_file(p, &len);
    cr_assert(side && len > 2 && side[0] == '{');
    char *more = malloc(len + 128);
    cr_assert_not_null(more);
    int k = snprintf(more, len + 128, "{\"x\\udcffy\":1,\"n\":{\"k\\udcfe\":[\"v\\udcfd\"]},");
    memcpy(more + k, side + 1, len - 1);
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f);
    fwrite(more, 1, (size_t)k + len - 1, f);
    fclose(f);
    free(more);
    free(side);
    snprintf(cmd, sizeof cmd, "%s -m %s --device cpu -O %s/out --skip-existing --manifest "
             "%s/m.jsonl %s/a.wav", ws_bin(), model, dir, dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd,
             "%s -c 'import json, sys\n"
             "l = json.loads(open(sys.argv[1], encoding=\"utf-8\").read())\n"
             "assert l[\"status\"] == \"skipped\", l\n"
             "assert l[\"n\"] == {\"k\\udcfe\": [\"v\\udcfd\"]}, l[\"n\"]' %s/m.jsonl",
             ws_python(), dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
}

/* test_tar_in.c - tar shards as inputs (docs/corpus.md "Tar shards as inputs"), end to end
 * through the binary: a shard of 200 FLACs with bad members mixed in (random bytes, empty,
 * a truncated FLAC, a .json sidecar, a "../" key, names longer than ustar holds: a pax path
 * and a GNU long name), written here byte by byte; every good member's output against the
 * same FLAC given as a loose file; the same shard gzipped; a truncated shard; --skip-existing
 * per member; the records' shard and member; a gzip member over --max-memory; GNU tar's own
 * shards (gnu and pax formats); and ws_tarin_list's messages at a bad header. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "cli/tarin.h"
#include "helpers.h"

#define N_GOOD 200

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A FLAC of n samples at rate (a tone and noise, different for each seed). */
static void write_flac(const char *path, size_t n, int rate, unsigned seed)
{
    short *x = malloc(sizeof *x * n);
    unsigned r = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        r = r * 1103515245u + 12345u;
        x[i] = (short)(8000 * sin(2 * M_PI * (200 + 7 * seed) * (double)i / rate) +
                       (int)(r >> 20) % 1024 - 512);
    }
    SF_INFO info = {.samplerate = rate, .channels = 1, .format = SF_FORMAT_FLAC | SF_FORMAT_PCM_16};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert(f, "sf_open %s: %s", path, sf_strerror(NULL));
    cr_assert_eq(sf_writef_short(f, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(f);
    free(x);
}

/* --- a tar writer of our own: ustar headers, pax 'x' and GNU 'L' headers for long names -- */

static void header(unsigned char h[512], const char *name, size_t size, char type, int gnu)
{
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%.99s", name);
    memcpy(h + 100, "0000644", 7);
    memcpy(h + 108, "0000000", 7);
    memcpy(h + 116, "0000000", 7);
    snprintf((char *)h + 124, 12, "%011zo", size);
    memcpy(h + 136, "00000000000", 11);
    h[156] = (unsigned char)type;
    if (gnu)
        memcpy(h + 257, "ustar  ", 8);
    else
        memcpy(h + 257, "ustar\0" "00", 8);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
}

static void put_block(FILE *f, const void *data, size_t len)
{
    static const char zero[512];
    cr_assert_eq(fwrite(data, 1, len, f), len);
    if (len % 512)
        cr_assert_eq(fwrite(zero, 1, 512 - len % 512, f), 512 - len % 512);
}

/* One member; a name longer than 99 bytes goes in a pax path record (or, with gnu, a GNU
 * 'L' long name). Returns the offset of the member's data. */
static long add_member(FILE *f, const char *name, const void *data, size_t len, int gnu)
{
    unsigned char h[512];
    if (strlen(name) > 99 && gnu) {
        header(h, "././@LongLink", strlen(name) + 1, 'L', 1);
        put_block(f, h, 512);
        put_block(f, name, strlen(name) + 1);
    } else if (strlen(name) > 99) {
        char rec[8192];
        const size_t body = strlen(" path=\n") + strlen(name);
        size_t n = body + 1;
        while (snprintf(NULL, 0, "%zu", n) + body != n)
            n++;
        snprintf(rec, sizeof rec, "%zu path=%s\n", n, name);
        header(h, "././@PaxHeader", strlen(rec), 'x', 0);
        put_block(f, h, 512);
        put_block(f, rec, strlen(rec));
    }
    header(h, name, len, '0', gnu);
    put_block(f, h, 512);
    long at = ftell(f);
    if (len)
        put_block(f, data, len);
    return at;
}

static void end_tar(FILE *f)
{
    static const char zero[1024];
    cr_assert_eq(fwrite(zero, 1, sizeof zero, f), sizeof zero);
    cr_assert_eq(fclose(f), 0);
}

/* --- the shard -------------------------------------------------------------------------- */

typedef struct {
    char dir[600], shard[700], loose_list[700];
    char name[N_GOOD + 2][300]; /* the good members' names */
    char key[N_GOOD + 2][300];
    char loose[N_GOOD + 2][700]; /* the same FLAC as a loose file */
    int n_good;
    long cut_at; /* an offset inside the data of member cut_member */
    int cut_member;
} shard_t;

static const char *const BAD[] = {"bad/random.flac", "bad/empty.flac", "bad/trunc.flac",
                                  "../evil.flac"};

static void make_shard(shard_t *s)
{
    snprintf(s->dir, sizeof s->dir, "%s", test_tmpdir());
    snprintf(s->shard, sizeof s->shard, "%s/shard.tar", s->dir);
    snprintf(s->loose_list, sizeof s->loose_list, "%s/loose.txt", s->dir);
    char p[800];
    snprintf(p, sizeof p, "%s/loose", s->dir);
    mkdir(p, 0755);
    FILE *f = fopen(s->shard, "wb"), *list = fopen(s->loose_list, "w");
    cr_assert(f && list);
    char longdir[200];
    memset(longdir, 'd', 120);
    longdir[120] = 0;
    for (int i = 0; i < N_GOOD + 2; i++) {
        /* 0.2 to 0.6 s, 16 kHz or 44.1 kHz (resampled) */
        const int rate = i % 3 ? 16000 : 44100;
        snprintf(s->loose[i], sizeof s->loose[i], "%s/loose/u%03d.flac", s->dir, i);
        write_flac(s->loose[i], (size_t)(rate * (0.2 + 0.002 * i)), rate, (unsigned)i);
        fprintf(list, "%s\n", s->loose[i]);
        int gnu = 0;
        if (i == N_GOOD) /* a pax path */
            snprintf(s->name[i], sizeof s->name[i], "%s/long.flac", longdir);
        else if (i == N_GOOD + 1) /* a GNU long name */
            gnu = 1, snprintf(s->name[i], sizeof s->name[i], "%s/gnu.long.flac", longdir);
        else
            snprintf(s->name[i], sizeof s->name[i], "%sspk%d/u%03d.flac", i % 2 ? "./" : "",
                     i % 4, i);
        snprintf(s->key[i], sizeof s->key[i], "%s", s->name[i] + (i < N_GOOD && i % 2 ? 2 : 0));
        *strchr(strrchr(s->key[i], '/'), '.') = 0;
        size_t len;
        char *b = read_file(s->loose[i], &len);
        cr_assert(b);
        long at = add_member(f, s->name[i], b, len, gnu);
        if (i == 100) {
            s->cut_at = at + (long)len / 2;
            s->cut_member = i;
        }
        if (i % 10 == 0) { /* a WebDataset sample's sidecar: not an input */
            char side[320], js[64];
            snprintf(side, sizeof side, "spk%d/u%03d.json", i % 4, i);
            snprintf(js, sizeof js, "{\"text\": \"utterance %d\"}", i);
            add_member(f, side, js, strlen(js), 0);
        }
        if (i == 50) { /* the bad ones among the good */
            char rnd[3000];
            for (size_t k = 0; k < sizeof rnd; k++)
                rnd[k] = (char)(k * 7919 % 251);
            add_member(f, BAD[0], rnd, sizeof rnd, 0);
            add_member(f, BAD[1], "", 0, 0);
            add_member(f, BAD[2], b, len / 3, 0);
            add_member(f, BAD[3], b, len, 0);
        }
        free(b);
    }
    s->n_good = N_GOOD + 2;
    end_tar(f);
    fclose(list);
}

/* Each good member's output under out is the loose FLAC's under loose_out, byte for byte. */
static void assert_outputs(const shard_t *s, const char *out, const char *loose_out, int upto)
{
    for (int i = 0; i < upto; i++) {
        char a[1000], b[1000];
        snprintf(a, sizeof a, "%s/%s.npy", out, s->key[i]);
        snprintf(b, sizeof b, "%s/u%03d.npy", loose_out, i);
        size_t la, lb;
        char *x = read_file(a, &la), *y = read_file(b, &lb);
        cr_assert(x, "no output %s", a);
        cr_assert(y, "no output %s", b);
        cr_assert(la == lb && !memcmp(x, y, la), "%s and %s differ", a, b);
        free(x);
        free(y);
    }
}

/* The loose FLACs' outputs under DIR/loose_out. */
static void run_loose(const shard_t *s)
{
    char cmd[4096], err[8192];
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s/loose_out --list %s",
             ws_bin(), s->dir, s->loose_list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
}

/* The bad members: one stderr line each, naming SHARD:MEMBER. */
static void assert_bad_lines(const char *err, const char *shard)
{
    for (size_t k = 0; k < sizeof BAD / sizeof *BAD; k++) {
        char w[1000];
        snprintf(w, sizeof w, "%s:%s: ", shard, BAD[k]);
        cr_assert_eq(count(err, w), 1, "'%s' in:\n%s", w, err);
    }
    cr_assert_eq(count(err, "\n"), 4, "%s", err); /* nothing else (-q) */
    cr_assert(!strstr(err, ".json"), "%s", err);
}

Test(tar_in, shard_members_are_the_loose_files_bit_for_bit, .timeout = 240)
{
    static shard_t s;
    make_shard(&s);
    run_loose(&s);
    char cmd[4096], err[65536], out[800], man[800];
    snprintf(out, sizeof out, "%s/out", s.dir);
    snprintf(man, sizeof man, "%s/m.jsonl", s.dir);
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s --manifest %s --tar-in %s",
             ws_bin(), out, man, s.shard);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    assert_bad_lines(err, s.shard);
    char lo[800];
    snprintf(lo, sizeof lo, "%s/loose_out", s.dir);
    assert_outputs(&s, out, lo, s.n_good);
    /* nothing written outside -O, no sidecar member an input */
    char evil[800];
    snprintf(evil, sizeof evil, "%s/evil.npy", s.dir);
    cr_assert(!file_exists(evil));
    /* the records: shard and member */
    size_t len;
    char *m = read_file(man, &len);
    cr_assert(m);
    int lines = 0, ok = 0;
    for (char *line = strtok(m, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        cJSON *o = cJSON_Parse(line);
        cr_assert(o, "%s", line);
        const char *in = cJSON_GetObjectItem(o, "input")->valuestring;
        const cJSON *sh = cJSON_GetObjectItem(o, "input_shard"),
                    *mb = cJSON_GetObjectItem(o, "input_member");
        if (!strcmp(cJSON_GetObjectItem(o, "status")->valuestring, "ok")) {
            ok++;
            cr_assert(cJSON_IsString(sh) && cJSON_IsString(mb), "%s", line);
            cr_assert_str_eq(sh->valuestring, s.shard);
            char want[1000];
            snprintf(want, sizeof want, "%s:%s", s.shard, mb->valuestring);
            cr_assert_str_eq(in, want);
        }
        cJSON_Delete(o);
    }
    free(m);
    cr_assert_eq(ok, s.n_good);
    cr_assert_eq(lines, s.n_good + 4);
    /* the sidecar says it too */
    char side[1200];
    snprintf(side, sizeof side, "%s/%s.json", out, s.key[N_GOOD]);
    char *sc = read_file(side, &len);
    cr_assert(sc, "%s", side);
    cr_assert(strstr(sc, "\"input_member\":\"") && strstr(sc, "/long.flac\""), "%s", sc);
    free(sc);

    /* --skip-existing: every member is skipped (the bad ones fail again) */
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s --skip-existing %s",
             ws_bin(), out, s.shard);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    assert_bad_lines(err, s.shard);
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -O %s --skip-existing %s",
             ws_bin(), out, s.shard);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    char want[128];
    snprintf(want, sizeof want, "0 written, 4 failed, %d skipped", s.n_good);
    cr_assert(strstr(err, want), "%s", err);

    /* the same shard gzipped: the same bytes */
    char gz[800], outz[800];
    snprintf(gz, sizeof gz, "%s/shard.tgz", s.dir);
    snprintf(outz, sizeof outz, "%s/outz", s.dir);
    char *t = read_file(s.shard, &len);
    gzFile z = gzopen(gz, "wb6");
    cr_assert(t && z);
    cr_assert_eq(gzwrite(z, t, (unsigned)len), (int)len);
    cr_assert_eq(gzclose(z), Z_OK);
    free(t);
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s %s", ws_bin(), outz, gz);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    assert_bad_lines(err, gz);
    assert_outputs(&s, outz, lo, s.n_good);
    /* --shard over the members, gzip: the parts make the whole */
    for (int k = 0; k < 3; k++) {
        snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s/parts --shard %d/3 %s",
                 ws_bin(), s.dir, k, gz);
        int rc = run_cmd(cmd, err, sizeof err);
        cr_assert(rc == 0 || rc == 1, "%s", err);
    }
    char parts[800];
    snprintf(parts, sizeof parts, "%s/parts", s.dir);
    assert_outputs(&s, parts, lo, s.n_good);

    /* --tar-size: the output shard's members are keyed by the input keys */
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s/tars --tar-size 1000 %s",
             ws_bin(), s.dir, s.shard);
    (void)run_cmd(cmd, err, sizeof err);
    char idx[800];
    snprintf(idx, sizeof idx, "%s/tars/shard-000000.jsonl", s.dir);
    char *ix = read_file(idx, &len);
    cr_assert(ix, "%s", err);
    cr_assert(strstr(ix, "\"member\":\"spk1/u001.npy\""), "%s", ix);
    cr_assert(strstr(ix, "\"input_member\":\"./spk1/u001.flac\""));
    free(ix);
}

Test(tar_in, a_truncated_shard_keeps_the_members_before_the_cut, .timeout = 240)
{
    static shard_t s;
    make_shard(&s);
    char cut[800], cmd[4096], err[65536];
    size_t len;
    char *t = read_file(s.shard, &len);
    cr_assert(t);
    for (int g = 0; g < 2; g++) {
        snprintf(cut, sizeof cut, "%s/cut%s", s.dir, g ? ".tar.gz" : ".tar");
        if (g) {
            gzFile z = gzopen(cut, "wb");
            cr_assert(z);
            cr_assert_eq(gzwrite(z, t, (unsigned)s.cut_at), (int)s.cut_at);
            cr_assert_eq(gzclose(z), Z_OK);
        } else {
            FILE *f = fopen(cut, "wb");
            cr_assert(f);
            cr_assert_eq(fwrite(t, 1, (size_t)s.cut_at, f), (size_t)s.cut_at);
            fclose(f);
        }
        snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s/cut%d %s", ws_bin(),
                 s.dir, g, cut);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
        char w[1000];
        snprintf(w, sizeof w, "%s:%s: ", cut, s.name[s.cut_member]);
        cr_assert_eq(count(err, w), 1, "%s", err);
        cr_assert(strstr(err, "truncated"), "%s", err);
        cr_assert_eq(count(err, "\n"), 5, "%s", err); /* the 4 bad members and the cut */
        for (int i = 0; i < N_GOOD; i++) {
            char o[1000];
            snprintf(o, sizeof o, "%s/cut%d/%s.npy", s.dir, g, s.key[i]);
            cr_assert_eq(file_exists(o), i < s.cut_member, "%s", o);
        }
    }
    free(t);
}

Test(tar_in, a_gzip_member_over_max_memory_fails_alone, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char big[600], small[600], shard[600], cmd[4096], err[8192];
    snprintf(big, sizeof big, "%s/big.wav", dir);
    snprintf(small, sizeof small, "%s/small.flac", dir);
    snprintf(shard, sizeof shard, "%s/s.tar.gz", dir);
    /* 18 MiB of WAV: quiet noise, a few bytes once gzipped */
    const size_t n = (size_t)9 << 20;
    short *x = calloc(n, sizeof *x);
    for (size_t i = 0; i < n; i += 997)
        x[i] = 3;
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *sf = sf_open(big, SFM_WRITE, &info);
    cr_assert(sf);
    cr_assert_eq(sf_writef_short(sf, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(sf);
    free(x);
    write_flac(small, 8000, 16000, 3);
    snprintf(cmd, sizeof cmd, "cd %s && tar czf s.tar.gz small.flac big.wav && cp small.flac "
                              "small2.flac && tar czf s2.tgz small2.flac", dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s --mel --no-pad --device cpu -q -O out --max-memory 16M "
                              "--tar-in s.tar.gz s2.tgz",
             dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_eq(count(err, "\n"), 1, "%s", err);
    cr_assert(strstr(err, "s.tar.gz:big.wav: ") && strstr(err, "--max-memory"), "%s", err);
    snprintf(cmd, sizeof cmd, "%s/out/small.npy", dir);
    cr_assert(file_exists(cmd));
    snprintf(cmd, sizeof cmd, "%s/out/small2.npy", dir);
    cr_assert(file_exists(cmd));
}

Test(tar_in, gnu_tar_shards_with_long_names, .timeout = 120)
{
    if (system("tar --version 2>/dev/null | grep -q GNU") != 0)
        cr_skip_test("GNU tar is not installed");
    const char *dir = test_tmpdir();
    char deep[1000], cmd[8192], err[8192];
    /* a path of 150 bytes: past ustar's 100-byte name, with a '/' too late for its prefix */
    char part[151];
    memset(part, 'p', 140);
    part[140] = 0;
    snprintf(deep, sizeof deep, "%s/src/%s", dir, part);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", deep);
    cr_assert_eq(system(cmd), 0);
    char f[1200];
    snprintf(f, sizeof f, "%s/a.b.flac", deep);
    write_flac(f, 12000, 16000, 9);
    const char *fmt[] = {"gnu", "pax", "ustar"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "cd %s/src && tar --format=%s -cf ../%s.tar %s", dir, fmt[k],
                 fmt[k], part);
        cr_assert_eq(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "cd %s && %s --mel --no-pad --device cpu -q -O out_%s %s.tar",
                 dir, ws_bin(), fmt[k], fmt[k]);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(cmd, sizeof cmd, "%s/out_%s/%s/a.npy", dir, fmt[k], part);
        cr_assert(file_exists(cmd), "%s", cmd);
    }
    /* -o with a shard of one member: that member; a directory member is not an input */
    snprintf(cmd, sizeof cmd, "cd %s && %s --mel --no-pad --device cpu -q -o one.npy --tar-in gnu.tar",
             dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    /* -o with several: a usage error */
    snprintf(f, sizeof f, "%s/b.flac", dir);
    write_flac(f, 12000, 16000, 10);
    snprintf(cmd, sizeof cmd, "cd %s && tar cf two.tar -C %s a.b.flac -C %s b.flac && %s --mel "
                              "--device cpu -o x.npy two.tar",
             dir, deep, dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
}

/* Several gzip shards given with --tar-in are taken in turn, a member of each, so that their
 * streams are read side by side: positions alternate between the shards (--shard 0/3 of
 * A = a0 a1 a2 and B = b0 b1 takes a0 and b1, the order a0 b0 a1 b1 a2), each shard's
 * members still in its order; every output is there over the three tasks. */
Test(tar_in, gzip_shards_of_tar_in_are_taken_in_turn, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char cmd[4096], err[4096], p[700];
    const char *names[] = {"a0", "a1", "a2", "b0", "b1"};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s.flac", dir, names[i]);
        write_flac(p, 4000, 16000, 20 + i);
    }
    snprintf(cmd, sizeof cmd, "cd %s && tar czf A.tar.gz a0.flac a1.flac a2.flac && "
             "tar czf B.tar.gz b0.flac b1.flac", dir);
    cr_assert_eq(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s --mel --device cpu -q -O out --shard 0/3 "
             "--tar-in A.tar.gz --tar-in B.tar.gz", dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    const int want[5] = {1, 0, 0, 0, 1}; /* a0, b1 */
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/out/%s.npy", dir, names[i]);
        cr_assert_eq(file_exists(p), want[i], "%s", names[i]);
    }
    for (int t = 1; t < 3; t++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s --mel --device cpu -q -O out --shard %d/3 "
                 "--tar-in A.tar.gz --tar-in B.tar.gz", dir, ws_bin(), t);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    }
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/out/%s.npy", dir, names[i]);
        cr_assert(file_exists(p), "%s", names[i]);
    }
}

/* --- the walk's messages (ws_tarin_list) ----------------------------------------------- */

typedef struct {
    int n;         /* members listed */
    int n_bad;     /* bad headers told */
    uint64_t bad_off;
    int bad_named; /* the bad header's name was not NULL */
    char bad_name[300], bad[1024];
} walked;

static int walk_member(void *ctx, const char *name, uint64_t off, uint64_t size, const char *bad)
{
    walked *w = ctx;
    if (!bad) {
        w->n++;
        return 0;
    }
    w->n_bad++;
    w->bad_off = off;
    w->bad_named = name != NULL;
    snprintf(w->bad_name, sizeof w->bad_name, "%s", name ? name : "");
    snprintf(w->bad, sizeof w->bad, "%s", bad);
    return 0;
}

static void walk_shard(const char *path, walked *w)
{
    memset(w, 0, sizeof *w);
    struct ws_tarin_gz *g = NULL;
    ws_err err = {{0}};
    cr_assert_eq(ws_tarin_list(path, walk_member, w, &g, &err), 0, "%s", err.msg);
    ws_tarin_gz_free(g);
}

/* a plain shard in the test directory: member ok.flac (its header at offset 0, so the next
 * header is at 1024), then what `bad` writes, then the end blocks; walked into *w */
static void walk_after_one_member(const char *file, void (*bad)(FILE *), walked *w)
{
    char shard[700];
    snprintf(shard, sizeof shard, "%s/%s", test_tmpdir(), file);
    FILE *f = fopen(shard, "wb");
    cr_assert(f);
    add_member(f, "ok.flac", "fLaC", 4, 0);
    bad(f);
    end_tar(f);
    walk_shard(shard, w);
}

static void bad_pax_record(FILE *f)
{
    unsigned char h[512];
    header(h, "././@PaxHeader", 14, 'x', 0);
    put_block(f, h, 512);
    put_block(f, "12 path=x.wav\n", 14); /* the record is 14 bytes, not 12 */
    add_member(f, "after.flac", "fLaC", 4, 0);
}

/* A pax header whose record's length is wrong stops the walk with one message that names
 * the header's offset (the member's name is not known yet). */
Test(tar_in, a_malformed_pax_record_names_its_offset)
{
    walked w;
    walk_after_one_member("pax.tar", bad_pax_record, &w);
    cr_assert_eq(w.n, 1);
    cr_assert_eq(w.n_bad, 1);
    cr_assert_eq(w.bad_off, 1024);
    cr_assert(strstr(w.bad, "offset 1024") && strstr(w.bad, "malformed"), "%s", w.bad);
}

/* A gzip shard that ends inside a member's data: one message naming the member and where
 * its data starts, as a plain shard's member past the end of the file does. */
Test(tar_in, a_gzip_shard_cut_inside_a_member_names_its_offset)
{
    const char *dir = test_tmpdir();
    char plain[700], cut[700];
    snprintf(plain, sizeof plain, "%s/whole.tar", dir);
    snprintf(cut, sizeof cut, "%s/cut.tar.gz", dir);
    FILE *f = fopen(plain, "wb");
    cr_assert(f);
    char data[3000];
    memset(data, 'x', sizeof data);
    add_member(f, "ok.flac", "fLaC", 4, 0);
    cr_assert_eq(add_member(f, "second.flac", data, sizeof data, 0), 1536);
    end_tar(f);
    size_t len;
    char *t = read_file(plain, &len);
    cr_assert(t);
    gzFile z = gzopen(cut, "wb");
    cr_assert(z);
    cr_assert_eq(gzwrite(z, t, 1536 + 100), 1536 + 100);
    cr_assert_eq(gzclose(z), Z_OK);
    free(t);
    walked w;
    walk_shard(cut, &w);
    cr_assert_eq(w.n, 1);
    cr_assert_eq(w.n_bad, 1);
    cr_assert_str_eq(w.bad_name, "second.flac");
    cr_assert(strstr(w.bad, "offset 1536") && strstr(w.bad, "truncated"), "%s", w.bad);
}

/* A gzip shard whose stream breaks after its members (a deflate block of the reserved
 * type): a.wav is large enough that a single read of it would be decompressed straight
 * into the caller's buffer, which moved where zlib's later refills fell; the refill that
 * read b.wav then ran into the break and lost b.wav, which the listing had seen whole.
 * Every listed member reads back, and the break's message is zlib's without the
 * "<fd:N>" zlib names a descriptor's stream by. */
Test(tar_in, a_gzip_member_listed_before_a_break_in_the_stream_reads_back)
{
    /* the break at 781 KiB: past the listing's refills' 768 KiB, before the 856.5 KiB where a
     * refill starting at a.wav's end (600.5 KiB) ends */
    const size_t a = 600 << 10, pad = 179 << 10;
    const size_t n = 512 + a + 1024 + 512 + pad;
    unsigned char *t = calloc(n, 1), *z = malloc(n + 4096), h[512];
    cr_assert(t && z);
    header(h, "a.wav", a, '0', 0);
    memcpy(t, h, 512);
    for (size_t i = 0; i < a; i++)
        t[512 + i] = (unsigned char)(i * 7 % 251);
    header(h, "b.wav", 20, '0', 0);
    memcpy(t + 512 + a, h, 512);
    memset(t + 1024 + a, 'b', 20);
    header(h, "pad.bin", pad, '0', 0);
    memcpy(t + 1536 + a, h, 512);
    z_stream s = {0};
    cr_assert_eq(deflateInit2(&s, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    s.next_in = t;
    s.avail_in = (uInt)n;
    s.next_out = z;
    s.avail_out = (uInt)(n + 4096 - 65);
    cr_assert_eq(deflate(&s, Z_SYNC_FLUSH), Z_OK); /* ends on a byte: the next block's */
    size_t zn = (size_t)(s.next_out - z);
    deflateEnd(&s);
    z[zn++] = 0x06; /* BFINAL 0, BTYPE 3: reserved */
    memset(z + zn, 0xAB, 64);
    zn += 64;
    char shard[700];
    snprintf(shard, sizeof shard, "%s/broken.tar.gz", test_tmpdir());
    FILE *f = fopen(shard, "wb");
    cr_assert(f);
    cr_assert_eq(fwrite(z, 1, zn, f), zn);
    cr_assert_eq(fclose(f), 0);

    walked w;
    walk_shard(shard, &w);
    cr_assert_eq(w.n, 2);
    cr_assert_eq(w.n_bad, 1);
    cr_assert(strstr(w.bad, "invalid block type") && !strstr(w.bad, "<fd:"), "%s", w.bad);

    struct ws_tarin_gz *g = NULL;
    ws_err err = {{0}};
    cr_assert_eq(ws_tarin_list(shard, walk_member, &w, &g, &err), 0);
    cr_assert(g);
    const uint64_t off[2] = {512, 1024 + a}, size[2] = {a, 20};
    int turn[2];
    for (int i = 0; i < 2; i++)
        turn[i] = ws_tarin_gz_add_turn(g);
    cr_assert_eq(ws_tarin_gz_ready(g), 0);
    unsigned char *buf = malloc(a);
    for (int i = 0; i < 2; i++) {
        ws_tarin_gz_wait(g, turn[i]);
        cr_assert_eq(ws_tarin_gz_read(g, off[i], buf, size[i], &err), 0, "member %d: %s", i,
                     err.msg);
        cr_assert(!memcmp(buf, t + off[i], size[i]), "member %d", i);
        ws_tarin_gz_pass(g, turn[i]);
    }
    ws_tarin_gz_free(g);
    free(buf);
    free(t);
    free(z);
}

static void bad_nameless_member(FILE *f)
{
    unsigned char h[512];
    header(h, "", 4096, '0', 0);
    put_block(f, h, 512);
}

/* A header with an empty name whose member runs past the end of the file: the message is
 * told with no name (the caller then fails the shard itself, not "SHARD:"). */
Test(tar_in, a_bad_header_with_an_empty_name_names_no_member)
{
    walked w;
    walk_after_one_member("noname.tar", bad_nameless_member, &w);
    cr_assert_eq(w.n, 1);
    cr_assert_eq(w.n_bad, 1);
    cr_assert_eq(w.bad_off, 1024);
    cr_assert(!w.bad_named, "named '%s'", w.bad_name);
    cr_assert(strstr(w.bad, "run past the end"), "%s", w.bad);
}

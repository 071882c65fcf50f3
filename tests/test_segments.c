/* test_segments.c - segments as inputs of --list (docs/corpus.md "Segment lists"), end to
 * end through the binary: TSV segment lines, NeMo manifests and lhotse cut sets (.jsonl.gz,
 * written by Python's standard library), their outputs against the same audio cut by hand,
 * bad lines failing alone, --skip-existing per segment, the segment in the records. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* n 16-bit samples of a tone with noise, the same for a seed. */
static short *pcm(size_t n, unsigned seed)
{
    short *x = malloc(sizeof *x * n);
    unsigned r = seed;
    for (size_t i = 0; i < n; i++) {
        r = r * 1103515245u + 12345u;
        x[i] = (short)(9000 * sin(2 * M_PI * 440 * (double)i / 16000) +
                       2000 * sin(2 * M_PI * 1234.5 * (double)i / 16000) + (int)(r >> 20) % 512 - 256);
    }
    return x;
}

static void write_pcm(const char *path, const short *x, size_t n)
{
    SF_INFO info = {.samplerate = 16000, .channels = 1, .format = SF_FORMAT_WAV | SF_FORMAT_PCM_16};
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    cr_assert(f, "sf_open %s: %s", path, sf_strerror(NULL));
    cr_assert_eq(sf_writef_short(f, x, (sf_count_t)n), (sf_count_t)n);
    sf_close(f);
}

/* The bytes of two files are the same. */
static void assert_same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = read_file(a, &la), *y = read_file(b, &lb);
    cr_assert(x, "cannot read %s", a);
    cr_assert(y, "cannot read %s", b);
    cr_assert(la == lb && !memcmp(x, y, la), "%s and %s differ (%zu and %zu bytes)", a, b, la, lb);
    free(x);
    free(y);
}

/* The frames of the log-Mel in the .npy at path (its shape's last number). */
static long npy_frames(const char *path)
{
    size_t len;
    char *b = read_file(path, &len);
    cr_assert(b, "cannot read %s", path);
    cr_assert(len > 10);
    char *s = strstr(b + 10, "'shape': ("); /* after the magic, which holds a NUL */
    cr_assert(s);
    long a = strtol(s + 10, &s, 10), f = strtol(s + 1, NULL, 10);
    cr_assert_eq(a, 80);
    free(b);
    return f;
}

static void need_python(void)
{
    if (system("command -v python3 >/dev/null 2>&1") != 0)
        cr_skip_test("python3 not found");
}

Test(segments, tsv_segments_are_the_audio_cut_by_hand_bit_for_bit, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char wav[1024], list[1024], man[1024], cmd[8192], err[4096];
    const size_t n = 16000 * 5;
    short *x = pcm(n, 7);
    snprintf(wav, sizeof wav, "%s/talk.wav", dir);
    write_pcm(wav, x, n);
    /* two with ids, one named by the rule: talk_1.250 */
    const double seg[3][2] = {{0.5, 1.0}, {1.25, 0.75}, {3.0, 1.5}};
    const char *ids[3] = {"first", NULL, "third"};
    snprintf(list, sizeof list, "%s/list.tsv", dir);
    FILE *f = fopen(list, "w");
    cr_assert(f);
    for (int i = 0; i < 3; i++)
        fprintf(f, "%s\t%g\t%g%s%s\n", wav, seg[i][0], seg[i][1], ids[i] ? "\t" : "",
                ids[i] ? ids[i] : "");
    fclose(f);
    snprintf(man, sizeof man, "%s/m.jsonl", dir);
    snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q -O %s/out --list %s --manifest %s",
             ws_bin(), dir, list, man);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 3; i++) {
        const size_t s0 = (size_t)lround(seg[i][0] * 16000), k = (size_t)lround(seg[i][1] * 16000);
        char cut[1024], want[1024], got[1024];
        snprintf(cut, sizeof cut, "%s/cut%d.wav", dir, i);
        write_pcm(cut, x + s0, k);
        snprintf(want, sizeof want, "%s/cut%d.npy", dir, i);
        snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -q %s -o %s", ws_bin(), cut, want);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(got, sizeof got, "%s/out/%s.npy", dir, ids[i] ? ids[i] : "talk_1.250");
        cr_assert_eq(npy_frames(got), lround(seg[i][1] * 100));
        assert_same_file(got, want);
    }
    /* the manifest: a line per segment with its start, duration and id */
    size_t len;
    char *m = read_file(man, &len);
    cr_assert(m);
    int lines = 0;
    for (char *line = strtok(m, "\n"); line; line = strtok(NULL, "\n"), lines++) {
        cJSON *o = cJSON_Parse(line);
        cr_assert(o, "%s", line);
        const cJSON *sg = cJSON_GetObjectItem(o, "segment");
        const char *id = cJSON_GetObjectItem(sg, "id")->valuestring;
        int i = !strcmp(id, "first") ? 0 : !strcmp(id, "talk_1.250") ? 1 : 2;
        cr_assert(i < 2 || !strcmp(id, "third"), "%s", id);
        cr_assert_str_eq(cJSON_GetObjectItem(o, "input")->valuestring, wav);
        cr_assert_eq(cJSON_GetObjectItem(sg, "start")->valuedouble, seg[i][0]);
        cr_assert_eq(cJSON_GetObjectItem(sg, "duration")->valuedouble, seg[i][1]);
        cr_assert_eq(cJSON_GetObjectItem(o, "samples")->valuedouble, seg[i][1] * 16000);
        cr_assert_str_eq(cJSON_GetObjectItem(o, "status")->valuestring, "ok");
        cJSON_Delete(o);
    }
    cr_assert_eq(lines, 3);
    free(m);
    free(x);
}

/* The Python script that writes the NeMo manifest and the lhotse cut set (standard library
 * only), with bad lines among good ones. */
static const char *const MAKE_LISTS =
    "import gzip, json, sys\n"
    "d = sys.argv[1]\n"
    "J = json.dumps\n"
    "nemo = [J({'audio_filepath': 'a.wav', 'offset': 0.5, 'duration': 1.0, 'text': 'x'}),\n"
    "        J({'audio_filepath': 'sub/b.wav', 'offset': 0.25}),\n"
    "        '{\"audio_filepath\": \"a.wav\", \"offset\": ',\n"  /* bad JSON */
    "        J({'offset': 1.0, 'duration': 1.0, 'text': 'y'}),\n" /* no audio_filepath */
    "        J({'audio_filepath': 'a.wav', 'offset': 1.0, 'duration': -1.0}),\n"
    "        J({'audio_filepath': 'a.wav', 'offset': 2.5, 'duration': 2.0})]\n" /* past the end */
    "open(d + '/lists/nemo.jsonl', 'w').write('\\n'.join(nemo) + '\\n')\n"
    "def cut(i, path, s, dur, kind='file'):\n"
    "    rec = {'id': 'rec-' + i, 'sources': [{'type': kind, 'channels': [0], 'source': path}],\n"
    "           'sampling_rate': 16000, 'num_samples': 48000, 'duration': 3.0}\n"
    "    return {'id': i, 'start': s, 'duration': dur, 'channel': 0, 'recording': rec,\n"
    "            'supervisions': [], 'type': 'MonoCut'}\n"
    "cuts = [J(cut('c1', d + '/a.wav', 0.0, 1.0)), J(cut('c2', 'sub/b.wav', 0.5, 1.0)),\n"
    "        J(cut('c3', 'http://example.com/a.wav', 0.0, 1.0, 'url')),\n"
    "        J(cut('c4', d + '/a.wav', 0.0, -2.0)), 'not json at all',\n"
    "        J(cut('c5', d + '/a.wav', 2.5, 2.0))]\n"
    "with gzip.open(d + '/lists/cuts.jsonl.gz', 'wt') as f:\n"
    "    f.write('\\n'.join(cuts) + '\\n')\n";

Test(segments, nemo_manifest_and_lhotse_cuts_with_bad_lines, .timeout = 60)
{
    need_python();
    const char *dir = test_tmpdir();
    char path[1024], cmd[8192], err[8192];
    short *a = pcm(16000 * 3, 1), *b = pcm(16000 * 2, 2);
    snprintf(path, sizeof path, "%s/lists/sub", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s %s/sub", path, dir);
    cr_assert_eq(system(cmd), 0);
    /* NeMo's paths are relative to the manifest (lists/), lhotse's to the working
     * directory (dir): each has its a.wav and sub/b.wav there */
    const char *where[4] = {"lists/a.wav", "lists/sub/b.wav", "a.wav", "sub/b.wav"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, where[i]);
        write_pcm(path, i % 2 ? b : a, i % 2 ? 16000 * 2 : 16000 * 3);
    }
    snprintf(path, sizeof path, "%s/make_lists.py", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(MAKE_LISTS, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "python3 %s %s", path, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);

    /* NeMo, run from another directory */
    snprintf(cmd, sizeof cmd, "cd / && %s --mel --no-pad --device cpu -q -O %s/nemo --list %s/lists/nemo.jsonl",
             ws_bin(), dir, dir);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_eq(count(err, "\n"), 4, "one line per bad line: %s", err);
    cr_assert(strstr(err, "nemo.jsonl:3: not a JSON object"), "%s", err);
    cr_assert(strstr(err, "nemo.jsonl:4: a NeMo manifest line with no 'audio_filepath'"), "%s", err);
    cr_assert(strstr(err, "nemo.jsonl:5: 'duration' is -1"), "%s", err);
    cr_assert(strstr(err, "segment a_2.500: ") && strstr(err, "after the end of the audio"), "%s", err);
    snprintf(path, sizeof path, "%s/nemo/a_0.500.npy", dir);
    cr_assert_eq(npy_frames(path), 100);
    snprintf(path, sizeof path, "%s/nemo/b_0.250.npy", dir);
    cr_assert_eq(npy_frames(path), 175); /* to the end: 1.75 s */
    snprintf(cmd, sizeof cmd, "LC_ALL=C ls %s/nemo | wc -l | grep -qx 4", dir); /* 2 outputs, 2 sidecars */
    cr_assert_eq(system(cmd), 0);

    /* lhotse, run from dir (its relative source) */
    snprintf(cmd, sizeof cmd, "cd %s && %s --mel --no-pad --device cpu -q -O lh --list lists/cuts.jsonl.gz",
             dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert_eq(count(err, "\n"), 4, "one line per bad line: %s", err);
    cr_assert(strstr(err, "cuts.jsonl.gz:3: recording source type 'url' is not supported"), "%s", err);
    cr_assert(strstr(err, "cuts.jsonl.gz:4: 'duration' is -2"), "%s", err);
    cr_assert(strstr(err, "cuts.jsonl.gz:5: not a JSON object"), "%s", err);
    cr_assert(strstr(err, "segment c5: ") && strstr(err, "after the end of the audio"), "%s", err);
    snprintf(path, sizeof path, "%s/lh/c1.npy", dir);
    cr_assert_eq(npy_frames(path), 100);
    snprintf(path, sizeof path, "%s/lh/c2.npy", dir);
    cr_assert_eq(npy_frames(path), 100);
    /* the same segments as TSV lines: the same bytes */
    snprintf(cmd, sizeof cmd, "cd %s && printf 'a.wav\\t0\\t1\\tc1\\nsub/b.wav\\t0.5\\t1\\tc2\\n"
             "lists/a.wav\\t0.5\\t1\\ta_0.500\\n' > t.tsv && %s --mel --no-pad --device cpu -q "
             "-O tsv --list t.tsv", dir, ws_bin());
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    const char *same[3][2] = {{"lh/c1", "tsv/c1"}, {"lh/c2", "tsv/c2"}, {"nemo/a_0.500", "tsv/a_0.500"}};
    for (int i = 0; i < 3; i++) {
        char x[1024], y[1024];
        snprintf(x, sizeof x, "%s/%s.npy", dir, same[i][0]);
        snprintf(y, sizeof y, "%s/%s.npy", dir, same[i][1]);
        assert_same_file(x, y);
    }
    free(a);
    free(b);
}

/* The status of each manifest line by its segment id, "id=status,..." in line order. */
static void statuses(const char *man, char *out, size_t cap)
{
    size_t len;
    char *m = read_file(man, &len);
    cr_assert(m);
    out[0] = 0;
    for (char *line = strtok(m, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        cr_assert(o);
        snprintf(out + strlen(out), cap - strlen(out), "%s=%s,",
                 cJSON_GetObjectItem(cJSON_GetObjectItem(o, "segment"), "id")->valuestring,
                 cJSON_GetObjectItem(o, "status")->valuestring);
        cJSON_Delete(o);
    }
    free(m);
}

static void skip_existing_per_segment(int tar)
{
    const char *dir = test_tmpdir();
    char wav[1024], list[1024], cmd[8192], err[4096], st[512];
    short *x = pcm(16000 * 4, 3);
    snprintf(wav, sizeof wav, "%s/x.wav", dir);
    write_pcm(wav, x, 16000 * 4);
    free(x);
    snprintf(list, sizeof list, "%s/list.tsv", dir);
    for (int run = 0; run < 3; run++) {
        FILE *f = fopen(list, "w");
        cr_assert(f);
        fprintf(f, "%s\t0\t1\tp\n%s\t1\t1\tq\n%s\t2\t%s\tr\n", wav, wav, wav, run < 2 ? "1" : "1.5");
        fclose(f);
        snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -O %s/out %s --skip-existing "
                 "--list %s --manifest %s/m%d.jsonl", ws_bin(), dir, tar ? "--tar-size 2" : "",
                 list, dir, run);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
        snprintf(cmd, sizeof cmd, "%s/m%d.jsonl", dir, run);
        statuses(cmd, st, sizeof st);
        /* the lines come in the order the inputs finish */
        const char *want[3][3] = {{"p=ok,", "q=ok,", "r=ok,"},
                                  {"p=skipped,", "q=skipped,", "r=skipped,"},
                                  {"p=skipped,", "q=skipped,", "r=ok,"}};
        for (int k = 0; k < 3; k++)
            cr_assert(strstr(st, want[run][k]), "run %d: %s", run, st);
        if (run == 2)
            cr_assert(strstr(err, "1 output made with other settings (segment) redone"), "%s", err);
    }
    if (!tar) {
        snprintf(cmd, sizeof cmd, "%s/out/r.npy", dir);
        cr_assert_eq(npy_frames(cmd), 150);
    }
}

Test(segments, skip_existing_redoes_only_a_changed_segment, .timeout = 60)
{
    skip_existing_per_segment(0);
}

Test(segments, skip_existing_redoes_only_a_changed_segment_in_tar_shards, .timeout = 60)
{
    skip_existing_per_segment(1);
}

Test(segments, ids_that_clash_or_name_no_file_and_shards_of_segments, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char wav[1024], list[1024], cmd[8192], err[4096];
    short *x = pcm(16000 * 3, 4);
    snprintf(wav, sizeof wav, "%s/y.wav", dir);
    write_pcm(wav, x, 16000 * 3);
    free(x);
    snprintf(list, sizeof list, "%s/list.tsv", dir);
    /* two segments named s: a clash, found before anything runs */
    FILE *f = fopen(list, "w");
    fprintf(f, "%s\t0\t1\ts\n%s\t1\t1\ts\n", wav, wav);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -O %s/out --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "(segment s from 0.000 s) and") && strstr(err, "(segment s from 1.000 s) would both write"),
              "%s", err);
    /* an id that names no file fails alone; a plain path, an exact duplicate dropped, a line
     * with a negative start is a path (no such file) */
    f = fopen(list, "w");
    fprintf(f, "%s\t0\t1\t..\n%s\n%s\t0\t1\n%s\t0\t1\n%s\t-1.5\t1\n", wav, wav, wav, wav, wav);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -O %s/out2 --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "list.tsv:1: the id '..' cannot name an output"), "%s", err);
    cr_assert(strstr(err, "1 duplicate input dropped"), "%s", err);
    cr_assert(strstr(err, "-1.5") && strstr(err, "cannot open"), "%s", err);
    cr_assert_eq(count(err, "\n"), 4, "three lines and the summary: %s", err);
    snprintf(cmd, sizeof cmd, "LC_ALL=C ls %s/out2 | tr '\\n' ' ' | grep -qx 'y.json y.npy y_0.000.json y_0.000.npy '", dir);
    cr_assert_eq(system(cmd), 0);
    /* --shard counts segments as list positions */
    f = fopen(list, "w");
    fprintf(f, "%s\t0\t1\ta\n%s\t1\t1\tb\n%s\t2\t1\tc\n", wav, wav, wav);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -q -O %s/out3 --shard 1/2 --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd, "LC_ALL=C ls %s/out3 | tr '\\n' ' ' | grep -qx 'b.json b.npy '", dir);
    cr_assert_eq(system(cmd), 0);
    /* --root: the id in the tree of the file's directory */
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -q -O %s/tree --root %s --list %s", ws_bin(), dir, dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd, "%s/tree/c.npy", dir);
    cr_assert(file_exists(cmd));
}

/* The command on FFmpeg's formats and with --decode openai: an AAC file and its WebM
 * sibling are inputs like any; --decode openai's log-Mel is that of openai-whisper's
 * samples (its ffmpeg command's output written as a 16 kHz WAV); the decoder is part of
 * what --skip-existing compares, and a record without one counts as the default. */
Test(segments, ffmpeg_formats_and_decode_openai_through_the_command, .timeout = 120)
{
    if (system("command -v ffmpeg >/dev/null 2>&1"))
        cr_skip_test("ffmpeg is not installed");
    const char *dir = test_tmpdir();
    char cmd[8192], err[4096], m4a[1024], ref[1024], a[1024], b[1024];
    snprintf(m4a, sizeof m4a, "%s/clip.m4a", dir);
    snprintf(ref, sizeof ref, "%s/ref.wav", dir);
    snprintf(cmd, sizeof cmd, "ffmpeg -nostdin -loglevel error -y -i %s -t 5 -ar 44100 -ac 2 "
             "-c:a aac %s && ffmpeg -nostdin -threads 0 -i %s -f s16le -ac 1 -acodec pcm_s16le "
             "-ar 16000 - 2>/dev/null | ffmpeg -nostdin -loglevel error -y -f s16le -ar 16000 "
             "-ac 1 -i - %s", test_sample("jfk.wav"), m4a, m4a, ref);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    snprintf(a, sizeof a, "%s/openai.npy", dir);
    snprintf(b, sizeof b, "%s/ref.npy", dir);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu --decode openai %s -o %s && %s --mel "
             "--device cpu %s -o %s", ws_bin(), m4a, a, ws_bin(), ref, b);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    assert_same_file(a, b);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu %s -o %s", ws_bin(), m4a, a);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "the default decoder takes AAC: %s", err);

    /* --skip-existing: the decoder is a setting */
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -O %s/o %s && %s --mel --device cpu -O "
             "%s/o --skip-existing --decode openai %s", ws_bin(), dir, m4a, ws_bin(), dir, m4a);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert(strstr(err, "made with other settings (decode) redone"), "%s", err);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -O %s/o --skip-existing --decode openai %s",
             ws_bin(), dir, m4a);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert_null(strstr(err, "redone"), "%s", err);
    /* a sidecar from before --decode existed: made with the default, so not redone */
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -O %s/p %s && sed -i "
             "'s/,\"decode\":\"default\"//' %s/p/clip.json && ! grep -q decode %s/p/clip.json && "
             "%s --mel --device cpu -O %s/p --skip-existing %s", ws_bin(), dir, m4a, dir, dir,
             ws_bin(), dir, m4a);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    cr_assert_null(strstr(err, "redone"), "%s", err);
    snprintf(cmd, sizeof cmd, "%s --decode sox %s -o %s", ws_bin(), m4a, a);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "a bad --decode is a usage error: %s", err);
}

/* A segment id whose output is there, now naming another file's audio, is redone, not
 * skipped; a NUL hidden behind an escaped backslash in a JSON line is refused; a list whose
 * first line is all blanks and too long is one error, read within its buffer. */
Test(segments, an_id_moved_to_another_file_and_hostile_lines, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char a[1024], b[1024], list[1024], cmd[8192], err[4096];
    short *x = pcm(16000 * 3, 5), *y = pcm(16000 * 3, 6);
    snprintf(a, sizeof a, "%s/a.wav", dir);
    snprintf(b, sizeof b, "%s/b.wav", dir);
    write_pcm(a, x, 16000 * 3);
    write_pcm(b, y, 16000 * 3);
    free(x);
    free(y);
    snprintf(list, sizeof list, "%s/l.tsv", dir);
    for (int run = 0; run < 2; run++) {
        FILE *f = fopen(list, "w");
        fprintf(f, "%s\t1\t1\tu\n", run ? b : a);
        fclose(f);
        snprintf(cmd, sizeof cmd, "%s --mel --no-pad --device cpu -O %s/out --skip-existing --list %s",
                 ws_bin(), dir, list);
        cr_assert_eq(run_cmd(cmd, err, sizeof err), 0, "%s", err);
    }
    cr_assert(strstr(err, "redone"), "the segment now of b.wav was skipped: %s", err);
    snprintf(cmd, sizeof cmd, "%s/out/u.json", dir);
    size_t n;
    char *rec = read_file(cmd, &n);
    cr_assert(rec && strstr(rec, "b.wav"), "%s", rec ? rec : "(none)");
    free(rec);

    snprintf(list, sizeof list, "%s/n.jsonl", dir);
    FILE *f = fopen(list, "w");
    fprintf(f, "{\"audio_filepath\": \"%s\\\\\\u0000evil\", \"duration\": 1}\n", a);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -O %s/o2 --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 1, "%s", err);
    cr_assert(strstr(err, "(a NUL byte)"), "%s", err);

    snprintf(list, sizeof list, "%s/blank.txt", dir);
    f = fopen(list, "w");
    for (int i = 0; i < (1 << 20) + 3; i++)
        fputc(' ', f);
    fputc('\n', f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s --mel --device cpu -O %s/o3 --list %s", ws_bin(), dir, list);
    cr_assert_eq(run_cmd(cmd, err, sizeof err), 2, "%s", err);
    cr_assert(strstr(err, "is longer than"), "%s", err);
}

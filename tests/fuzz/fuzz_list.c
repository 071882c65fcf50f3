/* fuzz_list.c - libFuzzer harness for the --list reader (src/cli/names.c): lists of
 * paths, TSV segment lines, NeMo manifests and lhotse cuts (JSON Lines), plain or
 * gzip-compressed (docs/corpus.md "Segment lists").
 *
 * The first byte picks how the list is named and what the run asks for (bits 0-1:
 * list.txt, list.jsonl, list.gz, list.jsonl.gz, which choose JSON Lines and zlib by
 * name; bit 2: --keep-ext; bit 3: --tar-size 2; bit 4: --shard 1/2); the rest is the
 * list, written to a file in a private temporary directory. ws_cli_gather_inputs reads
 * it, then ws_cli_output_names names every input's output under -O DIR (DIR not made).
 * Beyond crashes, hangs and leaks it traps when:
 *   - a status other than 0, 1 or 2;
 *   - an input is NULL; a bad line's message is empty; a segment's id is empty, "." or
 *     "..", or holds '/'; its start or duration is not a finite number >= 0;
 *   - a whole file is listed twice (exact duplicates are dropped);
 *   - with names made (file mode), an input has neither an output nor a reason, or an
 *     output is not DIR/NAME.npy with NAME a plain file name (a member's key may have
 *     directories, none empty, "." or "..").
 * A line naming a tar shard (".tar", ".tar.gz", ".tgz") lists that file: an input can
 * name any file on the machine. Reading is all it does with them.
 *
 * Built by `make fuzz` (clang, libFuzzer) and `make fuzz-replay` (tests/fuzz/replay.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *g_dir;

static char g_made[512];

static void remove_dir(void)
{
    rmdir(g_made);
}

static const char *make_dir(void)
{
    if (!g_made[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(g_made, sizeof g_made, "%s/ws-fuzz-list-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(g_made))
            abort();
        atexit(remove_dir);
    }
    return g_made;
}

static int id_ok(const char *id)
{
    return id && *id && strcmp(id, ".") && strcmp(id, "..") && !strchr(id, '/');
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* No whole file (not a segment, a bad line or a member) twice. */
static void check_no_duplicates(const options *o)
{
    char **whole = malloc(sizeof *whole * (size_t)(o->n_inputs + 1));
    if (!whole)
        abort();
    int n = 0;
    for (int i = 0; i < o->n_inputs; i++)
        if ((!o->segs || !o->segs[i]) && (!o->srcs || !o->srcs[i]))
            whole[n++] = o->inputs[i];
    qsort(whole, (size_t)n, sizeof *whole, cmp);
    for (int i = 1; i < n; i++)
        if (!strcmp(whole[i - 1], whole[i]))
            __builtin_trap();
    free(whole);
}

static void check_inputs(const options *o)
{
    for (int i = 0; i < o->n_inputs; i++) {
        if (!o->inputs[i])
            __builtin_trap();
        const ws_segment *s = o->segs ? o->segs[i] : NULL;
        if (s && s->bad && !s->bad[0])
            __builtin_trap();
        if (s && !s->bad &&
            (!id_ok(s->id) || !isfinite(s->start_s) || s->start_s < 0 ||
             !isfinite(s->duration_s) || s->duration_s < 0))
            __builtin_trap();
        const ws_tar_src *t = o->srcs ? o->srcs[i] : NULL;
        if (t && (!t->shard || !t->name || !t->key))
            __builtin_trap();
    }
    check_no_duplicates(o);
}

/* OUT/REL.npy with REL's parts neither empty, "." nor ".."; REL one part unless a member's
 * key (whose directories are its own). (An input whose name ends in '/' is OUT/.npy: a
 * plain name in OUT, which fails when it is read.) */
static void check_output(const char *out, const char *outdir, int member)
{
    const size_t dl = strlen(outdir), n = strlen(out);
    if (n < dl + 5 || memcmp(out, outdir, dl) || out[dl] != '/' || strcmp(out + n - 4, ".npy"))
        __builtin_trap();
    const char *rel = out + dl + 1;
    if (!member && memchr(rel, '/', (size_t)(out + n - 4 - rel)))
        __builtin_trap();
    for (const char *c = rel;;) {
        size_t k = strcspn(c, "/");
        if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
            __builtin_trap();
        if (!c[k])
            break;
        c += k + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[4] = {"list.txt", "list.jsonl", "list.gz", "list.jsonl.gz"};
    if (size < 1)
        return 0;
    const unsigned pick = data[0];
    g_dir = make_dir();
    char list[600], outdir[600];
    snprintf(list, sizeof list, "%s/%s", g_dir, names[pick & 3]);
    snprintf(outdir, sizeof outdir, "%s/out", g_dir);
    FILE *f = fopen(list, "wb");
    if (!f || (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1) || fclose(f))
        abort();

    options o;
    memset(&o, 0, sizeof o);
    o.list = list;
    o.outdir = outdir;
    o.threads = 1;
    o.quiet = 1;
    o.keep_ext = (pick >> 2) & 1;
    o.tar_size = (pick >> 3) & 1 ? 2 : 0;
    if ((pick >> 4) & 1)
        o.shard_i = 1, o.shard_n = 2;
    const int rc = ws_cli_gather_inputs(&o);
    if (rc != 0 && rc != 1 && rc != 2)
        __builtin_trap();
    check_inputs(&o);
    if (rc == 0) {
        ws_cli_names nm;
        memset(&nm, 0, sizeof nm);
        const int st = ws_cli_output_names(&o, &nm);
        if (st != 0 && st != 1 && st != 2)
            __builtin_trap();
        for (int i = 0; st == 0 && !o.tar_size && i < o.n_inputs; i++) {
            if (!nm.outs[i] && (!nm.whys[i] || !nm.whys[i][0]))
                __builtin_trap();
            if (nm.outs[i])
                check_output(nm.outs[i], outdir, o.srcs && o.srcs[i]);
        }
        ws_cli_names_free(&o, &nm);
    }
    remove(list);
    ws_cli_inputs_free(&o);
    return 0;
}

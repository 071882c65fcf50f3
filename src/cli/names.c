/* names.c - the inputs (positional, --list, --shard) and their outputs' names: -O's
 * flat names, --root's tree, tar shards and member keys, and the checks that run before
 * anything is read (no two inputs write one file, no output is an input). Tested by
 * tests/test_cli.c. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "cli.h"
#include "strmap.h"
#include "tar.h"

/* A line of --list holds at most this many bytes (a path, PATH_MAX is 4096): a longer one
 * means the file is no list (a binary file, /dev/zero), said at once. */
#define LIST_LINE_MAX 65536
/* The paths of the whole list are held at most to this many bytes, or --max-memory's
 * when larger. */
#define LIST_BYTES_MAX ((size_t)4 << 30)

typedef struct {
    options *o;
    ws_strmap *seen; /* every path kept: exact duplicates are dropped */
    size_t cap, bytes, max_bytes;
    long long dups;
} gather;

/* Appends path (copied) to o->inputs unless it is there already. 0, or the exit status. */
static int add_input(gather *g, const char *path, size_t len)
{
    options *o = g->o;
    int r = ws_strmap_put(g->seen, path, len, 0, NULL);
    if (r < 0)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    if (r == 1) {
        g->dups++;
        return 0;
    }
    if (o->n_inputs == INT_MAX - 1)
        return ws_eprintf(PROG ": more than %d inputs", INT_MAX - 1), 2;
    g->bytes += len + 1 + sizeof(char *);
    if (g->bytes > g->max_bytes)
        return ws_eprintf(PROG ": the input list holds more than %zu MiB of paths (the bound: "
                          "4 GiB, or --max-memory when larger)", g->max_bytes >> 20), 2;
    if ((size_t)o->n_inputs == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 64;
        char **t = realloc(o->inputs, nc * sizeof *t);
        if (!t)
            return ws_eprintf(PROG ": out of memory for the input list"), 1;
        o->inputs = t;
        g->cap = nc;
    }
    char *s = malloc(len + 1);
    if (!s)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    memcpy(s, path, len);
    s[len] = 0;
    o->inputs[o->n_inputs++] = s;
    return 0;
}

/* One line of f into buf (cap bytes) with its newline: its length, 0 at the end, or
 * cap + 1 when no newline comes within cap bytes (the rest is not read). */
static size_t read_line(FILE *f, char *buf, size_t cap)
{
    size_t n = 0;
    int c;
    while ((c = getc_unlocked(f)) != EOF) {
        if (n == cap)
            return cap + 1;
        buf[n++] = (char)c;
        if (c == '\n')
            break;
    }
    return n;
}

static int read_list(gather *g)
{
    options *o = g->o;
    FILE *f = strcmp(o->list, "-") ? fopen(o->list, "r") : stdin;
    if (!f) {
        ws_eprintf(PROG ": --list %s: %s", o->list, strerror(errno));
        return 1;
    }
    const size_t cap = LIST_LINE_MAX + 2; /* the path, CR, LF */
    char *line = malloc(cap);
    long long lineno = 0;
    size_t n;
    int rc = line ? 0 : (ws_eprintf(PROG ": out of memory for the input list"), 1);
    while (!rc && (n = read_line(f, line, cap)) > 0) {
        lineno++;
        size_t len = n;
        if (len <= cap && line[len - 1] == '\n')
            len--;
        if (len <= cap && len && line[len - 1] == '\r')
            len--;
        if (len > LIST_LINE_MAX) {
            ws_eprintf(PROG ": --list %s: line %lld is longer than %d bytes (a list holds one "
                       "path a line)", o->list, lineno, LIST_LINE_MAX);
            rc = 2;
            break;
        }
        if (len == 0 || line[0] == '#')
            continue;
        if (memchr(line, 0, len)) {
            ws_eprintf(PROG ": --list %s: line %lld holds a NUL byte", o->list, lineno);
            rc = 2;
            break;
        }
        if (f == stdin && len == 1 && line[0] == '-') {
            ws_eprintf(PROG ": --list -: line %lld is '-', but standard input is the list",
                       lineno);
            rc = 2;
            break;
        }
        rc = add_input(g, line, len);
    }
    if (!rc && ferror(f)) {
        ws_eprintf(PROG ": --list %s: %s", o->list, strerror(errno));
        rc = 1;
    }
    free(line);
    if (f != stdin)
        fclose(f);
    return rc;
}

/* The inputs: the positional ones, then --list's lines (blank lines and lines starting
 * with '#' skipped, a trailing CR dropped), exact duplicates dropped (one warning), the
 * whole list: --shard selects later (ws_cli_output_names), once every name is checked.
 * 0, or the exit status. */
int ws_cli_gather_inputs(options *o)
{
    gather g = {.o = o, .seen = ws_strmap_new(), .max_bytes = LIST_BYTES_MAX};
    if (o->max_memory > g.max_bytes)
        g.max_bytes = o->max_memory;
    if (!g.seen)
        return ws_eprintf(PROG ": out of memory for the input list"), 1;
    int rc = 0;
    for (int i = 0; !rc && i < o->n_args; i++)
        rc = add_input(&g, o->args[i], strlen(o->args[i]));
    if (!rc && o->list)
        rc = read_list(&g);
    ws_strmap_free(g.seen);
    if (!rc && g.dups && !o->quiet)
        ws_eprintf(PROG ": %lld duplicate input%s dropped (each input is done once)", g.dups,
                   g.dups == 1 ? "" : "s");
    o->n_listed = o->n_inputs;
    return rc; /* an empty list (or shard) is a run with nothing to do */
}

/* path made absolute (the working directory in front) and normalised as text: "." and
 * empty components dropped, ".." takes one back (never above "/"); symbolic links are
 * not followed, so a tree of links mirrors as it is named. 0, or -1 if it does not fit. */
static int norm_path(const char *path, char *out, size_t cap)
{
    char buf[8192];
    if (path[0] == '/') {
        if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
            return -1;
    } else {
        /* the working directory as the shell names it ($PWD, through symbolic links) when
         * it is the same directory, as `pwd -L`: /data -> /mnt/data must not make inputs
         * named /data/... fall outside a relative --root */
        char cwd[4096];
        const char *pwd = getenv("PWD");
        struct stat a, b;
        if (pwd && pwd[0] == '/' && strlen(pwd) < sizeof cwd && stat(pwd, &a) == 0 &&
            stat(".", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            strcpy(cwd, pwd);
        else if (!getcwd(cwd, sizeof cwd))
            return -1;
        if (snprintf(buf, sizeof buf, "%s/%s", cwd, path) >= (int)sizeof buf)
            return -1;
    }
    size_t n = 0;
    out[0] = 0;
    for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
            out[n] = 0;
            continue;
        }
        size_t k = strlen(c);
        if (n + 1 + k + 1 > cap)
            return -1;
        out[n++] = '/';
        memcpy(out + n, c, k + 1);
        n += k;
    }
    if (n == 0) {
        if (cap < 2)
            return -1;
        strcpy(out, "/");
    }
    return 0;
}

/* --tar-size: each input's member key (its output name under -O without ".npy", made
 * safe for webdataset by ws_tar_key) and, in place of that name, its shard's path:
 * OUT/shard-NNNNNN.tar, numbered k * N + I for the k-th shard of --shard I/N (so shards of
 * different --shard runs never share a name). 0, or the exit status. */
static int tar_names(const options *o, char **outs, char ***members, char ***shard_paths,
                     const char **whys)
{
    const int n = o->n_inputs, per = o->tar_size, n_sh = (n + per - 1) / per;
    const size_t dl = strlen(o->outdir);
    *members = calloc((size_t)n, sizeof **members);
    *shard_paths = calloc((size_t)n_sh, sizeof **shard_paths);
    if (!*members || !*shard_paths)
        return ws_eprintf(PROG ": out of memory"), 1;
    for (int k = 0; k < n_sh; k++) {
        const long long num = (long long)k * (o->shard_n ? o->shard_n : 1) + o->shard_i;
        size_t cap = dl + 32;
        if (!((*shard_paths)[k] = malloc(cap)))
            return ws_eprintf(PROG ": out of memory"), 1;
        snprintf((*shard_paths)[k], cap, "%s/shard-%06lld.tar", o->outdir, num);
    }
    for (int i = 0; i < n; i++) {
        if (!outs[i]) /* outside --root: fails, no member */
            continue;
        /* outs[i] is OUT/<rel>.npy */
        const char *rel = outs[i] + dl + 1;
        const size_t rl = strlen(rel) - 4, cap = 3 * rl + 1;
        char *r = malloc(rl + 1), *key = malloc(cap);
        if (!r || !key) {
            free(r);
            free(key);
            return ws_eprintf(PROG ": out of memory"), 1;
        }
        memcpy(r, rel, rl);
        r[rl] = 0;
        int bad = ws_tar_key(r, key, cap) != 0 || strlen(key) + 5 > WS_TAR_NAME_MAX;
        free(r);
        free(outs[i]);
        outs[i] = NULL;
        if (bad) { /* that input fails alone */
            free(key);
            whys[i] = "no tar member name for it (empty, '.' or '..' parts, or longer than "
                      "4090 bytes once '.' and '%' are escaped)";
            continue;
        }
        (*members)[i] = key;
        if (!(outs[i] = strdup((*shard_paths)[i / per])))
            return ws_eprintf(PROG ": out of memory"), 1;
    }
    return 0;
}

/* The part of in (normalised) under the directory whose resolved path is root_real: the
 * rest after the shortest leading directory of in that resolves to it, as in names it
 * (so /data/a/b.wav under --root /mnt/data, /data being a link to it, is a/b.wav), or
 * NULL. */
static const char *under_resolved(const char *in, const char *root_real)
{
    char prefix[8192], real[PATH_MAX];
    for (const char *p = strchr(in + 1, '/'); p; p = strchr(p + 1, '/')) {
        size_t k = (size_t)(p - in);
        memcpy(prefix, in, k);
        prefix[k] = 0;
        if (realpath(prefix, real) && !strcmp(real, root_real))
            return p + 1;
    }
    return NULL;
}

/* -O OUT --root ROOT: OUT/<input's path under ROOT, extension dropped>.npy, or NULL
 * (malloc'd) when the input is not under ROOT (that input then fails). Under ROOT: by the
 * paths as written (normalised, links not followed), else by the directories they
 * resolve to (root_real: ROOT resolved, NULL when it does not resolve). *oom on
 * failure. */
static char *tree_path(const char *outdir, const char *root_norm, const char *root_real,
                       const char *input, int keep_ext, int *oom, const char **why)
{
    char in[8192];
    *why = "standard input has no path under --root";
    if (!strcmp(input, "-"))
        return NULL;
    *why = "the path is too long to place under --root";
    if (norm_path(input, in, sizeof in))
        return NULL;
    *why = NULL; /* not under the root: the caller's message */
    size_t rl = strlen(root_norm);
    const char *rel;
    if (!strcmp(root_norm, "/"))
        rel = in + 1;
    else if (!strncmp(in, root_norm, rl) && in[rl] == '/')
        rel = in + rl + 1;
    else if (!root_real || !(rel = under_resolved(in, root_real)))
        return NULL;
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    const char *dot = keep_ext ? NULL : strrchr(base, '.');
    size_t len = dot && dot != base ? (size_t)(dot - rel) : strlen(rel);
    size_t cap = strlen(outdir) + len + 8;
    char *out = malloc(cap);
    if (!out) {
        *oom = 1;
        return NULL;
    }
    snprintf(out, cap, "%s/%.*s.npy", outdir, (int)len, rel);
    return out;
}

/* "DIR/<basename without extension>.npy" (with it: keep_ext); "-" is named "stdin". */
static void outdir_path(const char *dir, const char *input, int keep_ext, char *buf, size_t cap)
{
    const char *base = strcmp(input, "-") == 0 ? "stdin" : input;
    const char *slash = strrchr(base, '/');
    if (slash)
        base = slash + 1;
    const char *dot = keep_ext ? NULL : strrchr(base, '.');
    int len = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
    snprintf(buf, cap, "%s/%.*s.npy", dir, len, base);
}

/* The file a path names, as a key for identity checks: "i<dev>:<ino>" for
 * an existing regular file (symlinks followed), "d<dev>:<ino>/<name>" for a
 * name in an existing directory, else "p" and the path as written. Two
 * spellings of one file (./a.npy, a.npy, a hard link) get the same key. */
static void file_key(const char *path, char *key, size_t cap)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        snprintf(key, cap, "i%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
        return;
    }
    const char *slash = strrchr(path, '/');
    char dir[4096];
    ws_dirname(path, dir, sizeof dir);
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(key, cap, "d%ju:%ju/%s", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
                 slash ? slash + 1 : path);
    else
        snprintf(key, cap, "p%s", path);
}

enum { REC_NONE, REC_SIDECAR, REC_INDEX };

/* The record beside the output out (REC_SIDECAR: OUT/x.npy's OUT/x.json; REC_INDEX:
 * OUT/shard-N.tar's OUT/shard-N.jsonl) into buf; 0, or -1 when it does not fit. */
static int record_path(const char *out, int kind, char *buf, size_t cap)
{
    size_t n = strlen(out);
    if (kind == REC_SIDECAR && n > 4 && !strcasecmp(out + n - 4, ".npy"))
        n -= 4;
    else if (kind == REC_INDEX && n > 4 && !strcmp(out + n - 4, ".tar"))
        n -= 4;
    return snprintf(buf, cap, "%.*s%s", (int)n, out, kind == REC_INDEX ? ".jsonl" : ".json") <
                   (int)cap
               ? 0
               : -1;
}

/* Output names, checked before anything runs: no output (nor the record beside it:
 * records, a REC_* kind) is an input, --json and --manifest are none of them.
 * Near-linear in the number of inputs (hash maps). Returns -1 to go on, else the exit
 * status (2: usage error). */
static int check_outputs(const options *o, char *const *outs, int records)
{
    static const char *const rec_name[] = {"output", "sidecar", "shard index"};
    int rc = -1;
    char key[8192];
    ws_strmap *ins = ws_strmap_new(), *outk = ws_strmap_new();
    if (!ins || !outk) {
        ws_eprintf(PROG ": out of memory");
        rc = 1;
        goto done;
    }
    for (int i = 0; i < o->n_inputs && rc < 0; i++) {
        struct stat st;
        if (strcmp(o->inputs[i], "-") && stat(o->inputs[i], &st) == 0 && S_ISREG(st.st_mode)) {
            file_key(o->inputs[i], key, sizeof key);
            if (ws_strmap_put(ins, key, strlen(key), (size_t)i, NULL) < 0)
                rc = 1;
        }
    }
    for (int i = 0; i < o->n_inputs && rc < 0; i++) {
        size_t at;
        if (!outs[i] || !strcmp(outs[i], "-"))
            continue;
        char rp[8192];
        for (int r = 0; r < 2 && rc < 0; r++) { /* the output, then its record */
            const char *path = r ? rp : outs[i];
            if (r && (!records || record_path(outs[i], records, rp, sizeof rp)))
                break;
            file_key(path, key, sizeof key);
            if (ws_strmap_get(ins, key, strlen(key), &at)) {
                ws_eprintf(PROG ": the %s %s is the input '%s'; refusing to overwrite an input",
                           rec_name[r ? records : REC_NONE], path, o->inputs[at]);
                rc = 2;
            } else if ((o->json || o->manifest) &&
                       ws_strmap_put(outk, key, strlen(key), (size_t)i * 3 + (r ? records : 0),
                                     NULL) < 0) {
                rc = 1;
            }
        }
    }
    const char *extra[2][2] = {{"--json", o->json}, {"--manifest", o->manifest}};
    for (int e = 0; e < 2 && rc < 0; e++) {
        size_t at;
        if (!extra[e][1])
            continue;
        file_key(extra[e][1], key, sizeof key);
        if (ws_strmap_get(ins, key, strlen(key), &at)) {
            ws_eprintf(PROG ": %s %s is the input '%s'; refusing to overwrite an input",
                       extra[e][0], extra[e][1], o->inputs[at]);
            rc = 2;
        } else if (ws_strmap_get(outk, key, strlen(key), &at)) {
            ws_eprintf(PROG ": %s %s is also the %s of '%s'", extra[e][0], extra[e][1],
                       rec_name[at % 3], o->inputs[at / 3]);
            rc = 2;
        }
    }
    if (o->json && o->manifest && rc < 0) {
        char k2[8192];
        file_key(o->json, key, sizeof key);
        file_key(o->manifest, k2, sizeof k2);
        if (!strcmp(key, k2)) {
            ws_eprintf(PROG ": --json and --manifest name one file, %s", o->json);
            rc = 2;
        }
    }
done:
    ws_strmap_free(ins);
    ws_strmap_free(outk);
    return rc;
}

/* -O: no two inputs of the whole list write one file (-O flattens directories; without
 * --keep-ext, x.wav and x.flac are both x.npy). Every clash is found in one pass and the
 * first MAX_CLASHES shown. -1 to go on, else the exit status. */
#define MAX_CLASHES 10
static int report_clashes(const options *o, char *const *outs)
{
    ws_strmap *names = ws_strmap_new();
    if (!names)
        return ws_eprintf(PROG ": out of memory"), 1;
    long long clashes = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        size_t prev;
        int r = outs[i] ? ws_strmap_put(names, outs[i], strlen(outs[i]), (size_t)i, &prev) : 0;
        if (r < 0) {
            ws_strmap_free(names);
            return ws_eprintf(PROG ": out of memory"), 1;
        }
        if (r == 1 && ++clashes <= MAX_CLASHES)
            ws_eprintf(PROG ": inputs '%s' and '%s' would both write %s", o->inputs[prev],
                       o->inputs[i], outs[i]);
    }
    ws_strmap_free(names);
    if (!clashes)
        return -1;
    ws_eprintf(PROG ": %lld clash%s in all; %s", clashes, clashes == 1 ? "" : "es",
               !o->keep_ext ? "--keep-ext names outputs with their extensions"
               : !o->root   ? "--root DIR keeps the inputs' directories under -O"
                            : "two list lines name one file");
    return 2;
}

/* --shard I/N: keeps the inputs at list positions I, I+N, ... (with their names). */
static void select_shard(options *o, char **outs, const char **whys)
{
    int k = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        if (i % o->shard_n == o->shard_i) {
            o->inputs[k] = o->inputs[i];
            outs[k] = outs[i];
            whys[k] = whys[i];
            k++;
        } else {
            free(o->inputs[i]);
            free(outs[i]);
        }
    }
    o->n_inputs = k;
}

/* -o, -O, --manifest and --json: no link on their paths that the trust rule refuses
 * (output.h), before anything is opened or read. 0, or the exit status. */
static int check_links(const options *o)
{
    const char *paths[4][2] = {{"-o", o->output}, {"-O", o->outdir}, {"--manifest", o->manifest},
                               {"--json", o->json}};
    for (int i = 0; i < 4; i++) {
        ws_err err;
        if (paths[i][1] && strcmp(paths[i][1], "-") && ws_path_links_trusted(paths[i][1], &err)) {
            ws_eprintf(PROG ": %s %s", paths[i][0], err.msg);
            return 1;
        }
    }
    return 0;
}

int ws_cli_make_outdir(const options *o)
{
    ws_err err;
    size_t k = strlen(o->outdir);
    char *p = malloc(k + 3);
    if (p)
        snprintf(p, k + 3, "%s/.", o->outdir); /* the parents of DIR/. : DIR and above */
    const int oom = !p, bad = oom || ws_mkdir_parents(p, &err);
    free(p);
    if (bad) {
        ws_eprintf(PROG ": -O %s: %s", o->outdir, oom ? "out of memory" : err.msg);
        return 1;
    }
    return 0;
}

int ws_cli_output_names(options *o, ws_cli_names *nm)
{
    int st;
    if ((st = check_links(o)) != 0)
        return st;
    char root_norm[8192], root_real[PATH_MAX];
    if (o->root && norm_path(o->root, root_norm, sizeof root_norm)) {
        ws_eprintf(PROG ": --root %s: path too long", o->root);
        return 2;
    }
    const int root_ok = o->root && realpath(o->root, root_real);
    char **outs = nm->outs = calloc((size_t)o->n_inputs, sizeof *outs);
    const char **whys = nm->whys = calloc((size_t)o->n_inputs, sizeof *whys);
    if (o->root) {
        size_t cap = strlen(o->root) + 32;
        if ((nm->not_under = malloc(cap)))
            snprintf(nm->not_under, cap, "not under --root %s", o->root);
    }
    int oom = !outs || !whys || (o->root && !nm->not_under);
    for (int i = 0; !oom && i < o->n_inputs; i++) {
        if (o->root) { /* NULL: not under the root, that input fails */
            outs[i] = tree_path(o->outdir, root_norm, root_ok ? root_real : NULL, o->inputs[i],
                                o->keep_ext, &oom, &whys[i]);
            if (!outs[i] && !whys[i])
                whys[i] = nm->not_under;
            continue;
        }
        size_t cap = (o->outdir ? strlen(o->outdir) : 0) + strlen(o->inputs[i]) + 16;
        if (!(outs[i] = malloc(o->output ? strlen(o->output) + 1 : cap))) {
            oom = 1;
            break;
        }
        if (o->outdir)
            outdir_path(o->outdir, o->inputs[i], o->keep_ext, outs[i], cap);
        else
            strcpy(outs[i], o->output);
    }
    if (oom) {
        ws_eprintf(PROG ": out of memory for %d output names", o->n_inputs);
        return 1;
    }
    if (o->outdir && (st = report_clashes(o, outs)) >= 0)
        return st;
    if (o->shard_n)
        select_shard(o, outs, whys);
    if (o->n_inputs == 0) /* an empty shard: nothing to do */
        return 0;
    if ((st = check_outputs(o, outs, o->outdir && !o->tar_size ? REC_SIDECAR : REC_NONE)) >= 0)
        return st;
    if (o->tar_size) {
        if ((st = tar_names(o, outs, &nm->members, &nm->shard_paths, whys)) != 0)
            return st;
        if ((st = check_outputs(o, outs, REC_INDEX)) >= 0) /* the shards' paths */
            return st;
    }
    return 0;
}

void ws_cli_names_free(const options *o, ws_cli_names *nm)
{
    for (int i = 0; nm->members && i < o->n_inputs; i++)
        free(nm->members[i]);
    free(nm->members);
    for (int i = 0; nm->shard_paths && o->tar_size && i < (o->n_inputs + o->tar_size - 1) / o->tar_size; i++)
        free(nm->shard_paths[i]);
    free(nm->shard_paths);
    free(nm->whys);
    free(nm->not_under);
    for (int i = 0; nm->outs && i < o->n_inputs; i++)
        free(nm->outs[i]);
    free(nm->outs);
    memset(nm, 0, sizeof *nm);
}

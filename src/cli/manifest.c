/* manifest.c - the JSON line of a finished job (manifest, sidecar, tar member, shard
 * index), its strings' escaping, and the manifest file. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output.h"
#include "progress.h"
#include "run_int.h"
#include "sha256.h"
#include "signals.h"
#include "strmap.h"
#include "tar.h"
#include "trace.h"

/* --- strings ------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (n bytes left), or 0 (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF). */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t k = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4                               ? 4
                                                                            : 0;
    if (!k || k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return k;
}

char *ws_json_quote(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    const size_t n = strlen(s);
    char *q = malloc(6 * n + 3), *o = q; /* each byte gives at most 6 */
    if (!q)
        return NULL;
    *o++ = '"';
    for (size_t i = 0; i < n;) {
        const unsigned char b = p[i];
        size_t k = utf8_len(p + i, n - i);
        if (!k) { /* not UTF-8: Python's surrogateescape, U+DC80..U+DCFF */
            o += sprintf(o, "\\udc%02x", b);
            i++;
        } else if (b == '"' || b == '\\') {
            *o++ = '\\';
            *o++ = (char)b;
            i++;
        } else if (b < 0x20) {
            const char *e = b == '\n' ? "\\n" : b == '\t' ? "\\t" : b == '\r' ? "\\r"
                            : b == '\b' ? "\\b" : b == '\f' ? "\\f" : NULL;
            o += e ? sprintf(o, "%s", e) : sprintf(o, "\\u%04x", b);
            i++;
        } else {
            memcpy(o, p + i, k);
            o += k;
            i += k;
        }
    }
    *o++ = '"';
    *o = 0;
    return q;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The code unit of the escape \uXXXX at p (6 bytes there), or -1. */
static long u_escape(const char *p)
{
    if (p[0] != '\\' || p[1] != 'u')
        return -1;
    long v = 0;
    for (int i = 2; i < 6; i++) {
        int h = hexval((unsigned char)p[i]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

cJSON *ws_json_parse(const char *text, size_t len)
{
    /* \udc80..\udcff not after a high surrogate become the bytes they stand for (cJSON
     * refuses a lone low surrogate and copies other bytes as they are) */
    char *t = malloc(len + 1), *o = t;
    if (!t)
        return NULL;
    int high = 0; /* the last escape was a high surrogate */
    for (size_t i = 0; i < len;) {
        if (text[i] != '\\' || i + 1 >= len) {
            *o++ = text[i++];
            high = 0;
            continue;
        }
        long u = i + 6 <= len ? u_escape(text + i) : -1;
        if (u >= 0xdc80 && u <= 0xdcff && !high) {
            *o++ = (char)(unsigned char)(u - 0xdc00);
            i += 6;
            continue;
        }
        high = u >= 0xd800 && u <= 0xdbff;
        size_t k = u >= 0 ? 6 : 2; /* an escape is copied whole */
        memcpy(o, text + i, k);
        o += k;
        i += k;
    }
    cJSON *r = cJSON_ParseWithLength(t, (size_t)(o - t));
    free(t);
    return r;
}

/* Whether s is all UTF-8 (cJSON writes such a key as it should). */
static int utf8_all(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t n = strlen(s), i = 0, k; i < n; i += k)
        if (!(k = utf8_len(p + i, n - i)))
            return 0;
    return 1;
}

static int append(char **t, size_t *len, size_t *cap, const char *s)
{
    const size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        size_t nc = (*len + n + 1) * 2;
        char *r = realloc(*t, nc);
        if (!r)
            return -1;
        *t = r;
        *cap = nc;
    }
    memcpy(*t + *len, s, n + 1);
    *len += n;
    return 0;
}

/* x (an object with a key that is not UTF-8) written out as raw text, its keys quoted as
 * strings are (ws_json_quote: \udcXX for such bytes): cJSON copies a key's bytes as
 * they are. */
static cJSON *raw_object(const cJSON *x)
{
    size_t len = 0, cap = 0;
    char *t = NULL;
    int bad = append(&t, &len, &cap, "{");
    for (const cJSON *c = x->child; !bad && c; c = c->next) {
        char *k = ws_json_quote(c->string ? c->string : "");
        cJSON *d = ws_json_requote(c);
        char *v = d ? cJSON_PrintUnformatted(d) : NULL;
        bad = !k || !v || (c != x->child && append(&t, &len, &cap, ",")) ||
              append(&t, &len, &cap, k) || append(&t, &len, &cap, ":") ||
              append(&t, &len, &cap, v);
        free(k);
        free(v);
        cJSON_Delete(d);
    }
    cJSON *r = bad || append(&t, &len, &cap, "}") ? NULL : cJSON_CreateRaw(t);
    free(t);
    return r;
}

cJSON *ws_json_requote(const cJSON *x)
{
    if (cJSON_IsString(x)) {
        char *q = ws_json_quote(x->valuestring);
        cJSON *r = q ? cJSON_CreateRaw(q) : NULL;
        free(q);
        return r;
    }
    if (!cJSON_IsObject(x) && !cJSON_IsArray(x))
        return cJSON_Duplicate(x, 0);
    for (const cJSON *c = x->child; cJSON_IsObject(x) && c; c = c->next)
        if (c->string && !utf8_all(c->string))
            return raw_object(x);
    cJSON *r = cJSON_IsObject(x) ? cJSON_CreateObject() : cJSON_CreateArray();
    for (const cJSON *c = x->child; r && c; c = c->next) {
        cJSON *d = ws_json_requote(c);
        if (!d) {
            cJSON_Delete(r);
            return NULL;
        }
        if (cJSON_IsObject(x))
            cJSON_AddItemToObject(r, c->string, d);
        else
            cJSON_AddItemToArray(r, d);
    }
    return r;
}

static void add_str(cJSON *o, const char *key, const char *s)
{
    char *q = ws_json_quote(s);
    if (q)
        cJSON_AddRawToObject(o, key, q);
    free(q);
}

static void add_time(cJSON *o)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char buf[48];
    snprintf(buf, sizeof buf, "%lld.%03ld", (long long)ts.tv_sec, ts.tv_nsec / 1000000);
    cJSON_AddRawToObject(o, "time", buf);
}

/* --- provenance ------------------------------------------------------------------ */

static void sha_floats(ws_sha256 *s, const float *x, size_t n)
{
    unsigned char buf[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        for (int b = 0; b < 4; b++)
            buf[k++] = (unsigned char)(u >> (8 * b)); /* little-endian on any host */
        if (k == sizeof buf) {
            ws_sha256_update(s, buf, k);
            k = 0;
        }
    }
    ws_sha256_update(s, buf, k);
}

void ws_model_sha256(const ws_model *m, char hex[65])
{
    ws_sha256 s;
    const size_t d = (size_t)m->d;
    ws_sha256_init(&s);
    sha_floats(&s, m->conv1_w, d * (size_t)m->n_mels * 3);
    sha_floats(&s, m->conv1_b, d);
    sha_floats(&s, m->conv2_w, d * d * 3);
    sha_floats(&s, m->conv2_b, d);
    if (m->pos)
        sha_floats(&s, m->pos, (size_t)m->n_pos * d);
    ws_sha256_hex(&s, hex);
}

cJSON *ws_provenance_new(const ws_provenance_info *in)
{
    cJSON *p = cJSON_CreateObject();
    if (!p)
        return NULL;
    cJSON_AddStringToObject(p, "version", WS_VERSION);
    cJSON_AddStringToObject(p, "output", in->model ? "embeddings" : "log_mel");
    if (in->model) {
        char hex[65];
        ws_model_sha256(in->model, hex);
        cJSON *m = cJSON_AddObjectToObject(p, "model");
        cJSON_AddStringToObject(m, "name", in->model->name);
        cJSON_AddStringToObject(m, "sha256", hex);
    } else {
        cJSON_AddNullToObject(p, "model");
    }
    cJSON_AddNumberToObject(p, "n_mels", in->n_mels);
    cJSON_AddStringToObject(p, "pad", in->pad == WS_PAD_AUDIO ? "audio" : in->pad == WS_PAD_MEL0 ? "mel0" : "none");
    cJSON_AddBoolToObject(p, "pos", in->pos);
    cJSON_AddStringToObject(p, "precision", in->precision);
    cJSON_AddStringToObject(p, "device", in->device);
    cJSON_AddStringToObject(p, "mel_device", in->mel_device);
    cJSON_AddStringToObject(p, "out_dtype", in->out_dtype == WS_OUT_F16 ? "float16" : "float32");
    cJSON_AddStringToObject(p, "decode", in->decode == WS_DECODE_OPENAI ? "openai" : "default");
    if (!cJSON_GetObjectItem(p, "decode")) { /* out of memory somewhere */
        cJSON_Delete(p);
        return NULL;
    }
    return p;
}

const char *const ws_redo_reasons[WS_REDO_N] = {
    "no record", "output", "model name", "model sha256", "n_mels", "pad", "pos", "precision",
    "device", "mel_device", "out_dtype", "decode", "segment", "version"};

unsigned ws_provenance_diff(const cJSON *ours, const cJSON *rec)
{
    if (!cJSON_IsObject(rec))
        return 1u << WS_REDO_NO_RECORD;
    unsigned d = 0;
    for (int k = 1; k < WS_REDO_SEGMENT; k++) {
        const char *name = ws_redo_reasons[k];
        const cJSON *a, *b;
        if (!strncmp(name, "model ", 6)) {
            const cJSON *ma = cJSON_GetObjectItem(ours, "model"), *mb = cJSON_GetObjectItem(rec, "model");
            if (cJSON_IsNull(ma) || cJSON_IsNull(mb) || !ma || !mb) {
                if (!cJSON_Compare(ma, mb, 1) && !strcmp(name, "model sha256"))
                    d |= 1u << k;
                continue;
            }
            a = cJSON_GetObjectItem(ma, name + 6);
            b = cJSON_GetObjectItem(mb, name + 6);
        } else {
            a = cJSON_GetObjectItem(ours, name);
            b = cJSON_GetObjectItem(rec, name);
        }
        /* records from before --decode existed were made with the default */
        if (!b && !strcmp(name, "decode") && cJSON_IsString(a) && !strcmp(a->valuestring, "default"))
            continue;
        if (!a || !b || !cJSON_Compare(a, b, 1))
            d |= 1u << k;
    }
    return d;
}

/* --- segments ----------------------------------------------------------------------- */

/* A segment's duration as recorded: null when it runs to the end. */
static cJSON *seg_json(const ws_segment *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddNumberToObject(o, "start", s->start_s);
    if (s->duration_s > 0)
        cJSON_AddNumberToObject(o, "duration", s->duration_s);
    else
        cJSON_AddNullToObject(o, "duration");
    add_str(o, "id", s->id);
    return o;
}

unsigned ws_segment_diff(const ws_segment *ours, const cJSON *line)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(line, "segment");
    if (!ours) /* a whole file: its record has no segment */
        return r && !cJSON_IsNull(r) ? 1u << WS_REDO_SEGMENT : 0;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(r, "start"),
                *du = cJSON_GetObjectItemCaseSensitive(r, "duration");
    /* the numbers are written so that they read back exactly (cJSON: %.17g when %.15g
     * would not) */
    const int same = cJSON_IsNumber(st) && st->valuedouble == ours->start_s &&
                     (ours->duration_s > 0 ? cJSON_IsNumber(du) && du->valuedouble == ours->duration_s
                                           : (!du || cJSON_IsNull(du)));
    return same ? 0 : 1u << WS_REDO_SEGMENT;
}

int ws_record_is_of(const cJSON *line, const ws_job *j)
{
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(line, "input");
    if (!cJSON_IsString(in) || strcmp(in->valuestring, j->input))
        return 0;
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(line, "segment");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "id");
    if (!j->seg)
        return !s || cJSON_IsNull(s);
    return cJSON_IsString(id) && !strcmp(id->valuestring, j->seg->id);
}

/* --- the line ----------------------------------------------------------------------- */

/* o's key set to the string s (quoted as every string is), or null. */
static void put_str(cJSON *o, const char *key, const char *s)
{
    char *q = s ? ws_json_quote(s) : NULL;
    cJSON *v = q ? cJSON_CreateRaw(q) : cJSON_CreateNull();
    free(q);
    if (v && cJSON_GetObjectItemCaseSensitive(o, key))
        cJSON_ReplaceItemInObjectCaseSensitive(o, key, v);
    else if (v)
        cJSON_AddItemToObject(o, key, v);
}

/* A line from j's record (skipped, or failed again with the recorded error): the recorded
 * line with this job's input and output (and shard: the tar it is in, as this run names
 * it; its member stays the recorded one, the name the tar holds it under), this status and
 * time. */
static cJSON *from_record(const ws_run_ctx *c, const ws_job *j)
{
    /* a key that is not UTF-8 at the top (none of ours) is left out: the line stays an
     * object to set keys in; below, such keys are quoted (ws_json_requote) */
    cJSON *top = cJSON_Duplicate(j->rec, 0), *o = NULL;
    for (const cJSON *k = j->rec->child; top && k; k = k->next)
        if (!k->string || utf8_all(k->string))
            cJSON_AddItemReferenceToObject(top, k->string ? k->string : "", (cJSON *)k);
    o = top ? ws_json_requote(top) : NULL;
    cJSON_Delete(top);
    if (!o || !cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return NULL;
    }
    put_str(o, "input", j->input);
    put_str(o, "output", j->output);
    if (c->shards && j->output) {
        put_str(o, "shard", j->output);
    } else if (!c->shards) { /* a file's record has neither */
        cJSON_DeleteItemFromObjectCaseSensitive(o, "shard");
        cJSON_DeleteItemFromObjectCaseSensitive(o, "member");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(o, "time");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "ok");
    cJSON *st = cJSON_CreateString(j->skipped ? "skipped" : "failed");
    if (!st || (cJSON_GetObjectItemCaseSensitive(o, "status")
                    ? !cJSON_ReplaceItemInObjectCaseSensitive(o, "status", st)
                    : !cJSON_AddItemToObject(o, "status", st))) {
        cJSON_Delete(st);
        cJSON_Delete(o);
        return NULL;
    }
    if (j->skipped && cJSON_GetObjectItemCaseSensitive(o, "error"))
        cJSON_ReplaceItemInObjectCaseSensitive(o, "error", cJSON_CreateNull());
    add_time(o);
    return o;
}

cJSON *ws_job_json(const ws_run_ctx *c, const ws_job *j)
{
    if (j->rec && !j->ok)
        return from_record(c, j);
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    add_str(o, "input", j->input);
    if (j->src) { /* "input" is "SHARD:MEMBER": each part on its own, as they are */
        add_str(o, "input_shard", j->src->shard);
        add_str(o, "input_member", j->src->name);
    }
    if (j->seg) {
        cJSON *sg = seg_json(j->seg);
        if (sg)
            cJSON_AddItemToObject(o, "segment", sg);
    }
    if (j->output)
        add_str(o, "output", j->output);
    else
        cJSON_AddNullToObject(o, "output");
    if (j->member) {
        char m[WS_TAR_NAME_MAX + 8];
        snprintf(m, sizeof m, "%s.npy", j->member);
        add_str(o, "member", m);
    }
    if (j->shard >= 0 && j->output)
        add_str(o, "shard", j->output);
    cJSON_AddStringToObject(o, "status", j->ok ? "ok" : j->skipped ? "skipped" : "failed");
    if (j->ok || j->skipped)
        cJSON_AddNullToObject(o, "error");
    else
        add_str(o, "error", j->error ? j->error : "(no message: out of memory)");
    if (j->ok) {
        cJSON *a = cJSON_AddArrayToObject(o, "shape");
        for (int i = 0; i < j->ndim; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)j->shape[i]));
        cJSON_AddStringToObject(o, "dtype", c->out_dtype == WS_OUT_F16 ? "float16" : "float32");
        if (c->out_dtype == WS_OUT_F16)
            cJSON_AddNumberToObject(o, "f16_clamped", (double)j->f16_clamped);
    }
    if (j->decoded) {
        cJSON_AddNumberToObject(o, "sample_rate", j->src_rate);
        cJSON_AddNumberToObject(o, "channels", j->src_channels);
        cJSON_AddNumberToObject(o, "samples", (double)j->samples);
        cJSON_AddNumberToObject(o, "duration_s", j->samples / (double)WS_SAMPLE_RATE);
    }
    if (j->ok) {
        cJSON_AddNumberToObject(o, "windows", j->windows);
        cJSON_AddNumberToObject(o, "content_frames", j->content_frames);
        if (!c->mel_only)
            cJSON_AddNumberToObject(o, "valid_ctx", j->valid_ctx);
    }
    if (c->provenance) {
        cJSON *p = ws_json_requote(c->provenance);
        if (p)
            cJSON_AddItemToObject(o, "provenance", p);
    }
    add_time(o);
    return o;
}

char *ws_job_line(const ws_run_ctx *c, const ws_job *j)
{
    cJSON *o = ws_job_json(c, j);
    char *txt = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return txt;
}

static int g_manifest_lost; /* lines not written (under the pipeline's lock) */

int ws_run_manifest_lost(void)
{
    return g_manifest_lost;
}

typedef struct {
    int fd;
    const char *line;
    size_t n;
    int err; /* errno, or -1 for a short write */
} line_write;

static int write_line(void *ctx)
{
    line_write *w = ctx;
    size_t off = 0;
    while (off < w->n) {
        ssize_t k = write(w->fd, w->line + off, w->n - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->err = k < 0 ? errno : -1;
            return -1;
        }
        off += (size_t)k;
    }
    return 0;
}

/* One line to the manifest, in one write(2) under the signal lock (a terminating signal
 * waits for it): a kill leaves whole lines only. */
static void manifest_line(const ws_run_ctx *c, const ws_job *j)
{
    char *txt = ws_job_line(c, j);
    size_t n = txt ? strlen(txt) : 0;
    char *line = txt ? realloc(txt, n + 2) : NULL;
    if (!line) {
        free(txt);
        g_manifest_lost++;
        ws_eprintf("whisper-stem: --manifest %s: out of memory for the line of %s", c->manifest,
                   j->input);
        return;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    line_write w = {c->manifest_fd, line, n + 1, 0};
    if (ws_temp_locked(write_line, &w)) {
        g_manifest_lost++;
        ws_eprintf("whisper-stem: --manifest %s: the line of %s: %s", c->manifest, j->input,
                   w.err > 0 ? strerror(w.err) : "short write");
    }
    free(line);
}

void ws_run_report_one(const ws_run_ctx *c, const ws_job *j)
{
    if (j->skipped)
        ws_progress_skipped();
    else
        ws_progress_done(j->ok);
    ws_progress_job(j->ok ? WS_PROGRESS_OK : j->skipped ? WS_PROGRESS_SKIPPED : WS_PROGRESS_FAILED,
                    j->ok ? j->samples / (double)WS_SAMPLE_RATE : 0);
    ws_progress_hold(); /* the terminal's progress line cleared, kept off until release */
    if (c->manifest_fd >= 0)
        manifest_line(c, j);
    if (!j->ok && !j->skipped)
        ws_eprintf("whisper-stem: %s", j->error ? j->error : "(no message: out of memory)");
    else if (c->verbose && j->ok)
        ws_eprintf("whisper-stem: %s -> %s: %.2f s of audio, %d window%s; decode %.1f ms, "
                   "mel %.1f ms, stem %.1f ms, write %.1f ms",
                   j->input, j->output, j->samples / (double)WS_SAMPLE_RATE, j->windows,
                   j->windows == 1 ? "" : "s", j->ms.decode, j->ms.mel, j->ms.stem, j->ms.write);
    ws_progress_release();
}

/* Called once per job, with the pipeline's lock held (one at a time). A job of a tar
 * shard is reported when the shard is complete: after its commit, so "ok" in the manifest
 * means the shard is in place; if the commit fails, its written inputs fail with it. */

/* lib_client.c - a program that uses whisper-stem as an installed library: built with
 * `pkg-config --cflags --libs whisper-stem` alone (no -Isrc, nothing from the tree), run
 * against the installed libwhisper-stem.so (make install-check).
 *
 *   lib_client MODEL.gguf AUDIO EMB.npy MEL.npy
 *
 * EMB.npy and MEL.npy are what `whisper-stem --device cpu -m MODEL AUDIO -o EMB.npy` and
 * `whisper-stem --mel AUDIO -o MEL.npy` wrote: the library's embed_file, embed_pcm,
 * log_mel and a one-input batch must give the same bytes. Exit 0 and one line when they
 * do, 1 and the first difference when not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <whisper_stem.h>

/* The float32 payload and shape of a .npy file as whisper-stem writes it (v1.0, '<f4'). */
static float *read_npy(const char *path, int64_t shape[3], int *ndim, size_t *count)
{
    FILE *f = fopen(path, "rb");
    unsigned char pre[10];
    if (!f || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY\x01\x00", 8)) {
        fprintf(stderr, "lib_client: %s: not a .npy file\n", path);
        if (f)
            fclose(f);
        return NULL;
    }
    size_t hl = pre[8] | (size_t)pre[9] << 8;
    char *h = calloc(1, hl + 1);
    float *data = NULL;
    if (h && fread(h, 1, hl, f) == hl && strstr(h, "'<f4'")) {
        const char *p = strstr(h, "'shape': (");
        *ndim = 0;
        *count = 1;
        for (p = p ? p + 10 : ""; *p && *p != ')' && *ndim < 3;) {
            char *end;
            shape[(*ndim)++] = strtoll(p, &end, 10);
            *count *= (size_t)shape[*ndim - 1];
            for (p = end; *p == ',' || *p == ' '; p++)
                ;
        }
        data = malloc(*count * sizeof *data + 1);
        if (data && fread(data, sizeof *data, *count, f) != *count) {
            free(data);
            data = NULL;
        }
    }
    if (!data)
        fprintf(stderr, "lib_client: %s: cannot read its float32 payload\n", path);
    free(h);
    fclose(f);
    return data;
}

static int same(const char *what, const whisper_stem_array *a, const char *npy)
{
    int64_t shape[3];
    int ndim;
    size_t count;
    float *want = read_npy(npy, shape, &ndim, &count);
    if (!want)
        return 0;
    int ok = a->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = a->shape[i] == shape[i];
    if (!ok) {
        fprintf(stderr, "lib_client: %s: shape differs from %s's\n", what, npy);
    } else {
        for (size_t i = 0; i < count; i++)
            if (memcmp(&a->data[i], &want[i], sizeof *want)) {
                fprintf(stderr, "lib_client: %s: element %zu is %.9g, %s has %.9g\n", what, i,
                        a->data[i], npy, want[i]);
                ok = 0;
                break;
            }
    }
    free(want);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: lib_client MODEL.gguf AUDIO EMB.npy MEL.npy\n");
        return 2;
    }
    whisper_stem_error err;
    whisper_stem_params p = whisper_stem_default_params();
    p.model = argv[1];
    p.device = "cpu";
    whisper_stem *ws = whisper_stem_new(&p, &err);
    if (!ws) {
        fprintf(stderr, "lib_client: %s\n", err.msg);
        return 1;
    }
    whisper_stem_array pcm = {0}, emb = {0}, emb_pcm = {0}, mel = {0}, got = {0};
    int ok = whisper_stem_embed_file(ws, argv[2], &emb, &err) == 0 &&
             whisper_stem_load_audio(argv[2], &pcm, &err) == 0 &&
             whisper_stem_embed_pcm(ws, pcm.data, (size_t)pcm.shape[0], 16000, 1, &emb_pcm,
                                    &err) == 0 &&
             whisper_stem_log_mel(ws, pcm.data, (size_t)pcm.shape[0], 16000, 1, &mel, &err) == 0;
    if (!ok)
        fprintf(stderr, "lib_client: %s\n", err.msg);
    ok = ok && same("embed_file", &emb, argv[3]) && same("embed_pcm", &emb_pcm, argv[3]) &&
         same("log_mel", &mel, argv[4]);

    const char *paths[] = {argv[2]};
    whisper_stem_batch *b = ok ? whisper_stem_batch_open(ws, paths, 1, &err) : NULL;
    size_t index = 1;
    if (ok && (!b || whisper_stem_batch_next(b, &got, &index, &err) != 1 || index != 0)) {
        fprintf(stderr, "lib_client: batch: %s\n", err.msg);
        ok = 0;
    }
    ok = ok && same("batch", &got, argv[3]);
    whisper_stem_batch_close(b);
    if (ok)
        printf("lib_client: libwhisper-stem %s, %s: embed_file, embed_pcm, batch [%lld][%lld] "
               "and log_mel [%lld][%lld] are the command's bytes\n",
               whisper_stem_version(), whisper_stem_device(ws), (long long)emb.shape[0],
               (long long)emb.shape[1], (long long)mel.shape[0], (long long)mel.shape[1]);
    whisper_stem_array_free(&got);
    whisper_stem_array_free(&mel);
    whisper_stem_array_free(&emb_pcm);
    whisper_stem_array_free(&emb);
    whisper_stem_array_free(&pcm);
    whisper_stem_free(ws);
    return ok ? 0 : 1;
}

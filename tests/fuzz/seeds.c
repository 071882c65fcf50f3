/* seeds.c - writes the seed corpora of the fuzz harnesses:
 *   ws-fuzz-seeds DIR   ->  DIR/{audio,gguf,ckpt,tarin,list}/  (`make fuzz-seeds`)
 *
 * Valid small files of each kind the readers take, made with libsndfile and our
 * own GGUF writer, or assembled here byte by byte from the published layouts
 * (safetensors, whisper.cpp's ggml .bin, ustar/pax/GNU tar); then the handcrafted
 * headers that once hung or crashed a reader, that carry the sizes writers leave
 * when they stream to a pipe, or (tar shards) that each break one rule of the
 * walk. Findings of later fuzz runs are added to the corpora as files of their
 * own (crash-*, timeout-*), not made here.
 */
#include <math.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "gguf/gguf.h"

static const char *g_dir;

static const char *path_of(const char *sub, const char *name)
{
    static char p[4096];
    snprintf(p, sizeof p, "%s/%s", g_dir, sub);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s/%s", g_dir, sub, name);
    return p;
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "ws-fuzz-seeds: %s: %s\n", what, why);
    exit(1);
}

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f))
        die(path, "cannot write");
}

static unsigned char *read_whole(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, "cannot read");
    unsigned char *p = malloc(1 << 20);
    *n = fread(p, 1, 1 << 20, f);
    fclose(f);
    return p;
}

/* --- a byte builder -------------------------------------------------------- */

typedef struct {
    unsigned char b[32768]; /* the largest seed: a tar shard of several members */
    size_t n;
} bytes;

static void put(bytes *h, const void *p, size_t n)
{
    if (h->n + n > sizeof h->b)
        die("seed", "too large");
    memcpy(h->b + h->n, p, n);
    h->n += n;
}

static void le(bytes *h, uint64_t v, int n)
{
    for (int i = 0; i < n; i++) {
        unsigned char c = i < 8 ? (unsigned char)(v >> (8 * i)) : 0;
        put(h, &c, 1);
    }
}

static void be(bytes *h, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        unsigned char c = i < 8 ? (unsigned char)(v >> (8 * i)) : 0;
        put(h, &c, 1);
    }
}

static void str(bytes *h, const char *s)
{
    put(h, s, strlen(s));
}

/* --- audio ----------------------------------------------------------------- */

static void audio(const char *name, int format, int rate, int channels, int frames)
{
    const char *path = path_of("audio", name);
    SF_INFO info = {.samplerate = rate, .channels = channels, .format = format};
    if (!sf_format_check(&info)) {
        fprintf(stderr, "ws-fuzz-seeds: this libsndfile cannot write %s; skipped\n", name);
        return;
    }
    SNDFILE *f = sf_open(path, SFM_WRITE, &info);
    if (!f)
        die(path, sf_strerror(NULL));
    float *x = malloc((size_t)frames * (size_t)channels * sizeof *x);
    for (int i = 0; i < frames * channels; i++)
        x[i] = (float)(0.5 * sin(0.05 * i) + 0.1 * sin(0.31 * i));
    if (sf_writef_float(f, x, frames) != frames)
        die(path, sf_strerror(f));
    sf_close(f);
    free(x);
}

/* A copy of an audio seed with n bytes at off replaced. */
static void audio_patched(const char *from, const char *name, size_t off, const void *p, size_t n)
{
    size_t len;
    unsigned char *b = read_whole(path_of("audio", from), &len);
    if (off + n > len)
        die(name, "patch outside the file");
    memcpy(b + off, p, n);
    write_file(path_of("audio", name), b, len);
    free(b);
}

static const unsigned char W64_RIFF[16] = {'r',  'i',  'f',  'f',  0x2E, 0x91, 0xCF, 0x11,
                                           0xA5, 0xD6, 0x28, 0xDB, 0x04, 0xC1, 0x00, 0x00};
static const unsigned char W64_TAIL[12] = {0xF3, 0xAC, 0xD3, 0x11, 0x8C, 0xD1,
                                           0x00, 0xC0, 0x4F, 0x8E, 0xDB, 0x8A};

static void w64_id(bytes *h, const char *fourcc)
{
    put(h, fourcc, 4);
    put(h, W64_TAIL, 12);
}

static void fmt16k(bytes *h, int little)
{
    void (*w)(bytes *, uint64_t, int) = little ? le : be;
    w(h, 1, 2), w(h, 1, 2), w(h, 16000, 4), w(h, 32000, 4), w(h, 2, 2), w(h, 16, 2);
}

static void w64_head(bytes *h, uint64_t riff_size)
{
    put(h, W64_RIFF, 16), le(h, riff_size, 8), w64_id(h, "wave");
    w64_id(h, "fmt "), le(h, 40, 8), fmt16k(h, 1);
}

static void samples(bytes *h, int n)
{
    for (int i = 0; i < n; i++)
        le(h, (uint64_t)(uint16_t)(int16_t)(3000 * sin(0.2 * i)), 2);
}

static void audio_seeds(void)
{
    audio("pcm16-16k-mono.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 16000, 1, 64);
    audio("pcm24-44k-stereo.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 44100, 2, 32);
    audio("float-8k.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 8000, 1, 32);
    audio("wavex-6ch.wav", SF_FORMAT_WAVEX | SF_FORMAT_PCM_16, 48000, 6, 16);
    audio("ulaw.wav", SF_FORMAT_WAV | SF_FORMAT_ULAW, 8000, 1, 64);
    audio("pcm16.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 16000, 1, 300);
    audio("pcm16.aiff", SF_FORMAT_AIFF | SF_FORMAT_PCM_16, 16000, 1, 64);
    audio("float.aifc", SF_FORMAT_AIFF | SF_FORMAT_FLOAT, 22050, 2, 16);
    audio("pcm16.w64", SF_FORMAT_W64 | SF_FORMAT_PCM_16, 16000, 1, 64);
    audio("pcm16.rf64", SF_FORMAT_RF64 | SF_FORMAT_PCM_16, 16000, 1, 64);
    audio("pcm16.caf", SF_FORMAT_CAF | SF_FORMAT_PCM_16, 16000, 1, 64);
    audio("pcm16.au", SF_FORMAT_AU | SF_FORMAT_PCM_16, 11025, 1, 64);
    audio("vorbis.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, 16000, 1, 1600);
    audio("opus.opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, 48000, 1, 4800);
    audio("layer3.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, 16000, 1, 3200);

    /* What writers leave when they stream to a pipe. */
    static const unsigned char ff4[4] = {0xFF, 0xFF, 0xFF, 0xFF}, zero8[8] = {0};
    audio_patched("pcm16-16k-mono.wav", "pipe-ffffffff.wav", 4, ff4, 4);
    audio_patched("pipe-ffffffff.wav", "pipe-ffffffff.wav", 40, ff4, 4);
    static const unsigned char no_count[5] = {0};
    audio_patched("pcm16.flac", "pipe-no-sample-count.flac", 22, no_count, 4);
    /* MP3 without its Info tag: the length becomes an estimate */
    audio_patched("layer3.mp3", "no-info-tag.mp3", 4 + 9, "\0\0\0\0", 4);

    bytes h = {.n = 0};
    str(&h, "ID3"), le(&h, 3, 1), le(&h, 0, 2), be(&h, 10, 4), put(&h, zero8, 8), le(&h, 0, 2);
    size_t len;
    unsigned char *mp3 = read_whole(path_of("audio", "layer3.mp3"), &len);
    if (len > sizeof h.b - h.n)
        len = sizeof h.b - h.n;
    put(&h, mp3, len);
    free(mp3);
    write_file(path_of("audio", "id3v2-then-mp3.mp3"), h.b, h.n);

    h.n = 0; /* MP3 data in a WAV (format tag 0x0055, MPEGLAYER3WAVEFORMAT) */
    mp3 = read_whole(path_of("audio", "layer3.mp3"), &len);
    str(&h, "RIFF"), le(&h, 4 + 8 + 30 + 8 + len, 4), str(&h, "WAVE"), str(&h, "fmt "), le(&h, 30, 4);
    le(&h, 0x55, 2), le(&h, 1, 2), le(&h, 16000, 4), le(&h, 8000, 4), le(&h, 1, 2), le(&h, 0, 2);
    le(&h, 12, 2), le(&h, 1, 2), le(&h, 2, 4), le(&h, 417, 2), le(&h, 1, 2), le(&h, 1393, 2);
    str(&h, "data"), le(&h, len, 4), put(&h, mp3, len);
    free(mp3);
    write_file(path_of("audio", "mp3-in.wav"), h.b, h.n);

    h.n = 0; /* sox -t aiff - : sizes 0x7F0000xx */
    str(&h, "FORM"), be(&h, 0x7F000050, 4), str(&h, "AIFF");
    str(&h, "COMM"), be(&h, 18, 4), be(&h, 1, 2), be(&h, 0x3F800000, 4), be(&h, 16, 2);
    be(&h, 0x400CFA00, 4), be(&h, 0, 6);
    str(&h, "SSND"), be(&h, 0x7F000008, 4), be(&h, 0, 8), samples(&h, 48);
    write_file(path_of("audio", "pipe-sox.aiff"), h.b, h.n);

    h.n = 0; /* ffmpeg -f w64 - : data size 2^63 - 1 */
    w64_head(&h, UINT64_MAX), w64_id(&h, "data"), le(&h, INT64_MAX, 8), samples(&h, 48);
    write_file(path_of("audio", "pipe-ffmpeg.w64"), h.b, h.n);

    h.n = 0; /* ffmpeg -rf64 always to a pipe: ds64 all zero, data 0xFFFFFFFF */
    str(&h, "RF64"), le(&h, 0xFFFFFFFF, 4), str(&h, "WAVE");
    str(&h, "ds64"), le(&h, 28, 4), put(&h, zero8, 8), put(&h, zero8, 8), put(&h, zero8, 8);
    le(&h, 0, 4), str(&h, "fmt "), le(&h, 16, 4), fmt16k(&h, 1);
    str(&h, "data"), le(&h, 0xFFFFFFFF, 4), samples(&h, 48);
    write_file(path_of("audio", "pipe-ffmpeg-ds64-zero.rf64"), h.b, h.n);

    /* Chunk walks that once did not end, and the largest sizes of each format. */
    h.n = 0; /* 142 bytes: a chunk of 2^64 - 1 bytes; rounded up to 8 it was 0 */
    w64_head(&h, 142), w64_id(&h, "junk"), le(&h, UINT64_MAX, 8);
    while (h.n < 142)
        le(&h, 0, 1);
    write_file(path_of("audio", "hang-w64-chunk-2pow64-1.w64"), h.b, h.n);

    h.n = 0;
    w64_head(&h, 200), w64_id(&h, "junk"), le(&h, UINT64_MAX - 6, 8);
    w64_id(&h, "data"), le(&h, 24 + 16, 8), samples(&h, 8);
    write_file(path_of("audio", "hang-w64-chunk-2pow64-7.w64"), h.b, h.n);

    h.n = 0;
    str(&h, "RIFF"), le(&h, 0xFFFFFFFF, 4), str(&h, "WAVE"), str(&h, "fmt "), le(&h, 16, 4);
    fmt16k(&h, 1), str(&h, "junk"), le(&h, 0xFFFFFFFF, 4), str(&h, "data"), le(&h, 16, 4);
    samples(&h, 8);
    write_file(path_of("audio", "huge-riff-chunk.wav"), h.b, h.n);

    h.n = 0;
    str(&h, "RIFX"), be(&h, 0xFFFFFFFF, 4), str(&h, "WAVE"), str(&h, "fmt "), be(&h, 16, 4);
    fmt16k(&h, 0), str(&h, "data"), be(&h, 0xFFFFFFFE, 4), samples(&h, 8);
    write_file(path_of("audio", "huge-rifx-data.wav"), h.b, h.n);

    h.n = 0;
    str(&h, "FORM"), be(&h, 0xFFFFFFFF, 4), str(&h, "AIFF");
    str(&h, "COMM"), be(&h, 18, 4), be(&h, 1, 2), be(&h, 8, 4), be(&h, 16, 2);
    be(&h, 0x400CFA00, 4), be(&h, 0, 6), str(&h, "junk"), be(&h, 0xFFFFFFFF, 4);
    str(&h, "SSND"), be(&h, 24, 4), be(&h, 0, 8), samples(&h, 8);
    write_file(path_of("audio", "huge-aiff-chunk.aiff"), h.b, h.n);

    h.n = 0;
    str(&h, "RF64"), le(&h, 0xFFFFFFFF, 4), str(&h, "WAVE");
    str(&h, "ds64"), le(&h, 28, 4), le(&h, UINT64_MAX, 8), le(&h, UINT64_MAX, 8);
    le(&h, UINT64_MAX, 8), le(&h, 0, 4), str(&h, "fmt "), le(&h, 16, 4), fmt16k(&h, 1);
    str(&h, "data"), le(&h, 0xFFFFFFFF, 4), samples(&h, 8);
    write_file(path_of("audio", "huge-rf64-ds64.rf64"), h.b, h.n);
}

/* --- GGUF (our writer) ----------------------------------------------------- */

static void gguf_seed(const char *name, int type, uint32_t align, int n_mels, int d)
{
    ws_err err;
    ws_gguf_writer *w = ws_gguf_writer_new();
    float x[3 * 8 * 8];
    for (size_t i = 0; i < sizeof x / sizeof *x; i++)
        x[i] = (float)sin(0.37 * (double)i);
    const uint64_t ne1[3] = {3, (uint64_t)n_mels, (uint64_t)d}, ne2[3] = {3, (uint64_t)d, (uint64_t)d};
    const uint64_t nb[1] = {(uint64_t)d}, npos[2] = {(uint64_t)d, 4};
    if (!w || ws_gguf_writer_set_str(w, "general.architecture", "whisper", &err) ||
        ws_gguf_writer_set_u32(w, "whisper.n_mels", (uint32_t)n_mels, &err) ||
        ws_gguf_writer_set_f32(w, "whisper.scale", 0.5f, &err) ||
        (align && ws_gguf_writer_set_u32(w, "general.alignment", align, &err)) ||
        ws_gguf_writer_add_tensor(w, "encoder.conv1.weight", 3, ne1, (uint32_t)type, x, &err) ||
        ws_gguf_writer_add_tensor(w, "encoder.conv1.bias", 1, nb, WS_GGML_F32, x, &err) ||
        ws_gguf_writer_add_tensor(w, "encoder.conv2.weight", 3, ne2, (uint32_t)type, x, &err) ||
        ws_gguf_writer_add_tensor(w, "encoder.conv2.bias", 1, nb, WS_GGML_F32, x, &err) ||
        ws_gguf_writer_add_tensor(w, "encoder.positional_embedding", 2, npos, WS_GGML_F32, x,
                                  &err) ||
        ws_gguf_writer_write(w, path_of("gguf", name), &err))
        die(name, err.msg);
    ws_gguf_writer_free(w);
}

static void gguf_seeds(void)
{
    gguf_seed("stem-f32.gguf", WS_GGML_F32, 0, 4, 6);
    gguf_seed("stem-f16-align64.gguf", WS_GGML_F16, 64, 2, 8);
    gguf_seed("stem-bf16.gguf", WS_GGML_BF16, 0, 3, 4);
    ws_err err;
    ws_gguf_writer *w = ws_gguf_writer_new();
    if (!w || ws_gguf_writer_write(w, path_of("gguf", "empty.gguf"), &err))
        die("empty.gguf", "cannot write");
    ws_gguf_writer_free(w);
}

/* --- checkpoints ------------------------------------------------------------ */

/* safetensors: u64 header length, JSON header, data (offsets relative to it). */
static void safetensors_seed(void)
{
    static const char *const names[] = {"model.encoder.conv1.weight", "model.encoder.conv1.bias",
                                        "model.encoder.conv2.weight", "model.encoder.conv2.bias",
                                        "model.encoder.embed_positions.weight"};
    static const char *const shapes[] = {"[6,4,3]", "[6]", "[6,6,3]", "[6]", "[8,6]"};
    static const int counts[] = {72, 6, 108, 6, 48};
    char json[2048];
    size_t n = (size_t)snprintf(json, sizeof json, "{\"__metadata__\":{\"format\":\"pt\"}");
    size_t off = 0;
    for (int i = 0; i < 5; i++) {
        n += (size_t)snprintf(json + n, sizeof json - n,
                              ",\"%s\":{\"dtype\":\"F16\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
                              names[i], shapes[i], off, off + 2 * (size_t)counts[i]);
        off += 2 * (size_t)counts[i];
    }
    n += (size_t)snprintf(json + n, sizeof json - n, "}");
    while (n % 8) /* the header is padded with spaces to 8 bytes */
        json[n++] = ' ';
    bytes h = {.n = 0};
    le(&h, n, 8), put(&h, json, n);
    for (size_t i = 0; i < off / 2; i++)
        le(&h, ws_f32_to_f16((float)sin(0.1 * (double)i)), 2);
    write_file(path_of("ckpt", "model.safetensors"), h.b, h.n);

    const char *idx = "{\"metadata\":{\"total_size\":492},\"weight_map\":{"
                      "\"model.encoder.conv1.weight\":\"model-00001-of-00001.safetensors\"}}";
    write_file(path_of("ckpt", "model.safetensors.index.json"), idx, strlen(idx));
}

/* whisper.cpp's ggml .bin (src/convert/ggml.c): magic, 11 hyper-parameters, the
 * filterbank, the vocabulary, then tensor records. */
static void ggml_tensor(bytes *h, const char *name, int type, int n_dims, const int *ne)
{
    int n = 1;
    le(h, (uint64_t)n_dims, 4), le(h, strlen(name), 4), le(h, (uint64_t)type, 4);
    for (int i = 0; i < n_dims; i++)
        le(h, (uint64_t)ne[i], 4), n *= ne[i];
    str(h, name);
    for (int i = 0; i < n; i++)
        le(h, type == 1 ? ws_f32_to_f16(0.25f) : 0x3E800000u, type == 1 ? 2 : 4);
}

static void ggml_seed(void)
{
    bytes h = {.n = 0};
    static const int hp[11] = {3, 8, 6, 1, 1, 8, 6, 1, 1, 4, 1};
    le(&h, 0x67676d6c, 4);
    for (int i = 0; i < 11; i++)
        le(&h, (uint64_t)hp[i], 4);
    le(&h, 2, 4), le(&h, 3, 4); /* filterbank 2 x 3 */
    for (int i = 0; i < 6; i++)
        le(&h, 0x3F000000u, 4);
    le(&h, 2, 4), le(&h, 1, 4), str(&h, "a"), le(&h, 2, 4), str(&h, "bc");
    ggml_tensor(&h, "encoder.conv1.weight", 1, 3, (const int[]){3, 4, 6});
    ggml_tensor(&h, "encoder.conv1.bias", 0, 2, (const int[]){1, 6});
    ggml_tensor(&h, "encoder.conv2.weight", 1, 3, (const int[]){3, 6, 6});
    ggml_tensor(&h, "encoder.conv2.bias", 0, 2, (const int[]){1, 6});
    ggml_tensor(&h, "encoder.positional_embedding", 0, 2, (const int[]){6, 8});
    write_file(path_of("ckpt", "ggml-tiny.bin"), h.b, h.n);
}

/* --- tar shards (src/cli/tarin.c) ------------------------------------------- */

/* A shard being built in a byte builder: 512-byte blocks (POSIX.1-2001 ustar, pax 'x'
 * records, GNU 'L' long names). */

static void tar_pad(bytes *t)
{
    static const unsigned char zero[512];
    put(t, zero, (512 - t->n % 512) % 512);
}

/* A header: name (and ustar's prefix), size (octal in 11 digits, else GNU's base-256),
 * typeflag, link name; gnu: GNU's magic "ustar  " instead of POSIX's "ustar\0" "00". */
static void tar_header(bytes *t, const char *prefix, const char *name, uint64_t size, char type,
                       const char *link, int gnu)
{
    unsigned char h[512] = {0};
    memcpy(h, name, strnlen(name, 100));
    memcpy(h + 100, "0000644", 8), memcpy(h + 108, "0001750", 8), memcpy(h + 116, "0001750", 8);
    if (size < (uint64_t)1 << 33) {
        snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    } else {
        h[124] = 0x80;
        for (int i = 0; i < 8; i++)
            h[135 - i] = (unsigned char)(size >> (8 * i));
    }
    memcpy(h + 136, "14707165400", 12);
    h[156] = (unsigned char)type;
    if (link)
        memcpy(h + 157, link, strnlen(link, 100));
    memcpy(h + 257, gnu ? "ustar  " : "ustar\0" "00", 8);
    memcpy(h + 265, "user", 4), memcpy(h + 297, "user", 4);
    if (prefix)
        memcpy(h + 345, prefix, strnlen(prefix, 155));
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum); /* six digits, NUL, then the space left */
    put(t, h, 512);
}

static void tar_data(bytes *t, const void *p, size_t n)
{
    put(t, p, n);
    tar_pad(t);
}

static void tar_file(bytes *t, const char *name, const char *data)
{
    tar_header(t, NULL, name, strlen(data), '0', NULL, 0);
    tar_data(t, data, strlen(data));
}

static void tar_end(bytes *t)
{
    static const unsigned char zero[1024];
    put(t, zero, sizeof zero);
}

/* One pax record "LEN KEY=VALUE\n" appended to rec (LEN counts the whole record). */
static void pax_record(char *rec, size_t cap, const char *key, const char *value)
{
    const size_t body = strlen(key) + strlen(value) + 3; /* ' ', '=', '\n' */
    size_t n = body + 1;
    while ((size_t)snprintf(NULL, 0, "%zu", n) + body != n)
        n++;
    const size_t at = strlen(rec);
    snprintf(rec + at, cap - at, "%zu %s=%s\n", n, key, value);
}

static void tar_pax(bytes *t, const char *rec)
{
    tar_header(t, NULL, "./PaxHeaders/x", strlen(rec), 'x', NULL, 0);
    tar_data(t, rec, strlen(rec));
}

static void tar_longname(bytes *t, const char *name)
{
    tar_header(t, NULL, "././@LongLink", strlen(name) + 1, 'L', NULL, 1);
    tar_data(t, name, strlen(name) + 1);
}

static void tar_write(const char *name, const bytes *t, size_t n)
{
    write_file(path_of("tarin", name), t->b, n);
}

/* The first n bytes of t, gzip-compressed (zlib's gzip header: no name, mtime 0). */
static void tar_write_gz(const char *name, const bytes *t, size_t n, const char *mode)
{
    gzFile z = gzopen(path_of("tarin", name), mode);
    if (!z || gzwrite(z, t->b, (unsigned)n) != (int)n || gzclose(z) != Z_OK)
        die(name, "cannot write");
}

static const char WAV[] = "RIFF\x24\x01\x02\x03WAVEfmt data"; /* a member: not decoded here */

static void tarin_seeds(void)
{
    char longdir[201], rec[2048], name[400];
    memset(longdir, 'd', 200);
    longdir[200] = 0;
    bytes t = {.n = 0};

    tar_file(&t, "a.wav", WAV), tar_file(&t, "spk1/u001.flac", "fLaC"),
        tar_file(&t, "spk1/u001.json", "{\"text\": \"a\"}"), tar_end(&t);
    tar_write("ustar-names.tar", &t, t.n);

    t.n = 0;
    tar_header(&t, "corpus/speaker-0001/session-02", "utt.seg.mp3", 3, '0', NULL, 0);
    tar_data(&t, "ID3", 3), tar_end(&t);
    tar_write("ustar-prefix-name.tar", &t, t.n);

    t.n = 0; /* a pax path and size; the ustar size field says 0 */
    rec[0] = 0;
    snprintf(name, sizeof name, "%s/long.opus", longdir);
    pax_record(rec, sizeof rec, "mtime", "1700000000.5"), pax_record(rec, sizeof rec, "path", name);
    pax_record(rec, sizeof rec, "size", "4");
    tar_pax(&t, rec);
    tar_header(&t, NULL, "PaxHeaders/long.opus", 0, '0', NULL, 0), tar_data(&t, "OggS", 4);
    tar_end(&t);
    tar_write("pax-path-size.tar", &t, t.n);

    t.n = 0; /* a global pax header first, then a member */
    rec[0] = 0;
    pax_record(rec, sizeof rec, "comment", "made by hand");
    tar_header(&t, NULL, "./PaxHeaders/global", strlen(rec), 'g', NULL, 0);
    tar_data(&t, rec, strlen(rec)), tar_file(&t, "b.ogg", "OggS"), tar_end(&t);
    tar_write("pax-global.tar", &t, t.n);

    t.n = 0;
    snprintf(name, sizeof name, "%s/gnu.long.wav", longdir);
    tar_longname(&t, name);
    tar_header(&t, NULL, "dddd/gnu.long.wav", 4, '0', NULL, 1), tar_data(&t, "RIFF", 4);
    tar_end(&t);
    tar_write("gnu-long-name.tar", &t, t.n);

    t.n = 0; /* an empty member; a directory, links, a contiguous file, a FIFO */
    tar_header(&t, NULL, "empty.wav", 0, '0', NULL, 0);
    tar_header(&t, NULL, "dir/", 0, '5', NULL, 0);
    tar_header(&t, NULL, "dir/link.wav", 0, '2', "../empty.wav", 0);
    tar_header(&t, NULL, "dir/hard.wav", 0, '1', "empty.wav", 0);
    tar_header(&t, NULL, "fifo.wav", 0, '6', NULL, 0);
    tar_header(&t, NULL, "contig.aiff", 4, '7', NULL, 0), tar_data(&t, "FORM", 4);
    tar_header(&t, NULL, "old.au", 4, '\0', NULL, 0), tar_data(&t, ".snd", 4);
    tar_end(&t);
    tar_write("empty-dir-links.tar", &t, t.n);

    t.n = 0; /* GNU base-256 size; keys that name no output */
    tar_header(&t, NULL, "b256.wav", 4, '0', NULL, 1);
    memset(t.b + t.n - 512 + 124, 0, 12);
    t.b[t.n - 512 + 124] = 0x80, t.b[t.n - 512 + 135] = 4;
    {
        unsigned char *h = t.b + t.n - 512;
        memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (int i = 0; i < 512; i++)
            sum += h[i];
        snprintf((char *)h + 148, 8, "%06o", sum);
    }
    tar_data(&t, "RIFF", 4);
    tar_file(&t, "../evil.wav", "RIFF"), tar_file(&t, "/abs.wav", "RIFF");
    tar_file(&t, "./././spk/./x.wav", "RIFF"), tar_file(&t, "a//b.flac", "fLaC");
    tar_end(&t);
    tar_write("base256-bad-keys.tar", &t, t.n);

    t.n = 0; /* no end blocks: the file's end ends the walk */
    tar_file(&t, "c.wav", WAV);
    tar_write("no-end-blocks.tar", &t, t.n);

    /* the same members gzipped; two gzip members one after the other */
    t.n = 0;
    tar_file(&t, "a.wav", WAV), tar_file(&t, "a.txt", "text");
    tar_header(&t, NULL, "empty.flac", 0, '0', NULL, 0);
    rec[0] = 0;
    snprintf(name, sizeof name, "%s/pax.m4a", longdir);
    pax_record(rec, sizeof rec, "path", name), pax_record(rec, sizeof rec, "size", "8");
    tar_pax(&t, rec), tar_header(&t, NULL, "pax.m4a", 0, '0', NULL, 0), tar_data(&t, "ftypM4A ", 8);
    snprintf(name, sizeof name, "%s/gnu.mp3", longdir);
    tar_longname(&t, name), tar_header(&t, NULL, "gnu.mp3", 3, '0', NULL, 1);
    tar_data(&t, "ID3", 3);
    tar_file(&t, "z.wav", WAV);
    const size_t half = t.n / 1024 * 512;
    tar_end(&t);
    tar_write_gz("members.tar.gz", &t, t.n, "wb9");
    tar_write("members.tar", &t, t.n);
    {
        char p[4096];
        snprintf(p, sizeof p, "%s", path_of("tarin", "two-gzip-members.tgz"));
        gzFile z = gzopen(p, "wb");
        if (!z || gzwrite(z, t.b, (unsigned)half) != (int)half || gzclose(z) != Z_OK)
            die(p, "cannot write");
        z = gzopen(p, "ab1");
        if (!z || gzwrite(z, t.b + half, (unsigned)(t.n - half)) != (int)(t.n - half) ||
            gzclose(z) != Z_OK)
            die(p, "cannot write");
    }

    /* each breaks one rule: the walk stops there with one message */
    t.n = 0;
    tar_file(&t, "ok.wav", WAV), tar_file(&t, "sum.wav", WAV), tar_end(&t);
    bytes bad = t;
    bad.b[1024 + 148] ^= 1; /* the second header's checksum */
    tar_write("bad-checksum.tar", &bad, bad.n);
    bad = t;
    memcpy(bad.b + 1024 + 124, "00000000x24", 11); /* not octal (and the sum redone) */
    {
        unsigned char *h = bad.b + 1024;
        memset(h + 148, ' ', 8);
        unsigned sum = 0;
        for (int i = 0; i < 512; i++)
            sum += h[i];
        snprintf((char *)h + 148, 8, "%06o", sum);
    }
    tar_write("bad-size-not-octal.tar", &bad, bad.n);
    tar_write("bad-member-past-eof.tar", &t, 1024 + 512 + 8);
    tar_write("bad-ends-inside-header.tar", &t, 1024 + 300);
    tar_write_gz("bad-truncated-member.tar.gz", &t, 1024 + 512 + 8, "wb");
    {
        size_t n; /* the gzip stream itself cut short */
        unsigned char *gz = read_whole(path_of("tarin", "members.tar.gz"), &n);
        write_file(path_of("tarin", "bad-truncated-gzip.tar.gz"), gz, n / 2);
        free(gz);
    }

    t.n = 0;
    tar_file(&t, "ok.wav", WAV);
    tar_pax(&t, "12 path=x.wav\n"); /* the length says 12, the record is 14 */
    tar_file(&t, "after.wav", WAV), tar_end(&t);
    tar_write("bad-pax-record-length.tar", &t, t.n);

    t.n = 0;
    tar_file(&t, "ok.wav", WAV);
    tar_header(&t, NULL, "././@LongLink", 1, 'L', NULL, 1), tar_data(&t, "", 1);
    tar_file(&t, "after.wav", WAV), tar_end(&t);
    tar_write("bad-empty-long-name.tar", &t, t.n);

    { /* a gzip stream that breaks after its members: a.wav (600 KiB), x.wav, b.wav, then
       * pad.bin up to 782 KiB and a deflate block of the reserved type. The listing's refills
       * of zlib's 128 KiB buffer (256 KiB of output) end at 768 KiB, before the break; a
       * reader that decompressed a.wav straight into its buffer refilled from a.wav's end
       * (600.5 KiB) and lost b.wav at the break (src/cli/tarin.c, GZ_CHUNK). */
        const size_t a = 600 << 10, pad = 179 << 10, n = 512 + a + 3 * 1024 + 512 + pad;
        unsigned char *big = calloc(n, 1), *z = malloc(n + 4096);
        if (!big || !z)
            die("tar seed", "out of memory");
        bytes hb = {.n = 0};
        tar_header(&hb, NULL, "a.wav", a, '0', NULL, 0);
        memcpy(big, hb.b, 512);
        for (size_t i = 0; i < a; i++)
            big[512 + i] = (unsigned char)(i * 7 % 251);
        hb.n = 0;
        tar_file(&hb, "x.wav", WAV), tar_file(&hb, "b.wav", WAV);
        tar_header(&hb, NULL, "pad.bin", pad, '0', NULL, 0);
        memcpy(big + 512 + a, hb.b, hb.n);
        z_stream s = {0};
        if (deflateInit2(&s, 9, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            die("tar seed", "deflateInit2");
        s.next_in = big, s.avail_in = (uInt)n, s.next_out = z, s.avail_out = (uInt)(n + 4000);
        if (deflate(&s, Z_SYNC_FLUSH) != Z_OK) /* ends on a byte boundary */
            die("tar seed", "deflate");
        size_t zn = (size_t)(s.next_out - z);
        deflateEnd(&s);
        z[zn++] = 0x06; /* BFINAL 0, BTYPE 3 (reserved): "invalid block type" */
        memset(z + zn, 0xAB, 32);
        write_file(path_of("tarin", "gzip-breaks-after-a-large-member.tar.gz"), z, zn + 32);
        free(big);
        free(z);
    }

    t.n = 0; /* an extended header over 1 MiB (gzip: the file's size is not known) */
    tar_file(&t, "ok.wav", WAV);
    tar_header(&t, NULL, "./PaxHeaders/huge", (uint64_t)2 << 20, 'x', NULL, 0), tar_end(&t);
    tar_write_gz("bad-pax-over-1mib.tar.gz", &t, t.n, "wb");
}

/* --- --list files (src/cli/names.c) ----------------------------------------- */

/* A list seed: the harness's first byte (pick: the list's name and the run's options,
 * tests/fuzz/fuzz_list.c), then the list; gz: the list gzip-compressed. */
static void list_seed(const char *name, unsigned char pick, const char *text, int gz)
{
    bytes h = {.n = 0};
    put(&h, &pick, 1);
    if (!gz) {
        str(&h, text);
    } else {
        const char *tmp = path_of("list", ".gz.tmp");
        gzFile z = gzopen(tmp, "wb9");
        if (!z || gzwrite(z, text, (unsigned)strlen(text)) != (int)strlen(text) ||
            gzclose(z) != Z_OK)
            die(name, "cannot write");
        size_t n;
        unsigned char *b = read_whole(tmp, &n);
        put(&h, b, n);
        free(b);
        remove(tmp);
    }
    write_file(path_of("list", name), h.b, h.n);
}

#define LIST_TXT 0
#define LIST_JSONL 1
#define LIST_GZ 2
#define LIST_JSONL_GZ 3
#define LIST_KEEP_EXT 4
#define LIST_TAR_SIZE 8
#define LIST_SHARD 16

static const char LHOTSE_CUT[] =
    "{\"id\": \"cut-1\", \"start\": 0.5, \"duration\": 2.0, \"channel\": 0, \"supervisions\": [], "
    "\"recording\": {\"id\": \"rec\", \"sources\": [{\"type\": \"file\", \"channels\": [0], "
    "\"source\": \"audio/rec.flac\"}], \"sampling_rate\": 16000, \"num_samples\": 48000, "
    "\"duration\": 3.0}, \"type\": \"MonoCut\"}\n";

static void list_seeds(void)
{
    list_seed("paths.txt", LIST_TXT, "a.wav\nb/c.flac\n# a comment\n\nd.mp3\r\na.wav\n", 0);
    list_seed("path-ending-in-slash.txt", LIST_TXT, "dir/\nother.wav\n", 0); /* OUT/.npy */
    list_seed("paths-clash-keep-ext.txt", LIST_KEEP_EXT,
              "x/a.wav\ny/a.wav\nz/a.flac\n.hidden\ndir/\n", 0);
    list_seed("tsv-segments.txt", LIST_TXT,
              "clip.wav\t0\t1.5\nclip.wav\t1.5\t0\tmy-id\nclip.wav\t2\t1\t\nx.wav\t-1\t2\n"
              "y.wav\t1e1\t0x1p2\n\t1\t2\nname\twith\ttabs\tand more\ttabs\n", 0);
    list_seed("tsv-bad-ids.txt", LIST_TXT,
              "a.wav\t0\t1\t..\na.wav\t0\t1\tx/y\na.wav\t0\t1\t.\n", 0);
    list_seed("tsv-segments-tar-size.txt", LIST_TAR_SIZE,
              "clip.wav\t0\t1\tone\nclip.wav\t1\t1\ttwo\nclip.wav\t2\t1\tthree\nloose.wav\n", 0);
    list_seed("shards-missing.txt", LIST_SHARD, "missing.tar\nalso.TGZ\nnot/there.tar.gz\n", 0);
    /* the tar seeds, by their place in the tree (the fuzz runs start at the top) */
    list_seed("shards-of-the-corpus.txt", LIST_TXT,
              "tests/fuzz/corpus/tarin/members.tar\ntests/fuzz/corpus/tarin/bad-checksum.tar\n", 0);
    list_seed("shards-of-the-corpus-tar-size.txt", LIST_TAR_SIZE,
              "tests/fuzz/corpus/tarin/members.tar.gz\n"
              "tests/fuzz/corpus/tarin/ustar-prefix-name.tar\n", 0);
    list_seed("nemo.jsonl", LIST_JSONL,
              "{\"audio_filepath\": \"a.wav\", \"offset\": 1.0, \"duration\": 2.0, "
              "\"text\": \"hi\"}\n"
              "{\"audio_filepath\": \"/abs/b.wav\"}\n"
              "{\"audio_filepath\": \"c.wav\", \"duration\": null, \"offset\": null}\n"
              "{\"audio_filepath\": \"\"}\n{\"audio_filepath\": 3}\n"
              "{\"audio_filepath\": \"d.wav\", \"offset\": -1}\n"
              "{\"audio_filepath\": \"d.wav\", \"duration\": \"2\"}\n{\"text\": \"no path\"}\n"
              "[1, 2]\nnot json\n   \n", 0);
    list_seed("nemo-by-first-line.txt", LIST_TXT,
              "# a comment first\n\n  {\"audio_filepath\": \"a.wav\"}\n", 0);
    list_seed("lhotse.jsonl", LIST_JSONL, LHOTSE_CUT, 0);
    list_seed("lhotse-refused.jsonl", LIST_JSONL,
              "{\"id\": \"u\", \"start\": 0, \"duration\": 1, \"recording\": {\"sources\": "
              "[{\"type\": \"url\", \"channels\": [0], \"source\": \"http://x/a.wav\"}]}}\n"
              "{\"id\": \"t\", \"start\": 0, \"duration\": 1, \"recording\": {\"transforms\": "
              "[{\"name\": \"Speed\"}], \"sources\": [{\"type\": \"file\", "
              "\"source\": \"a.wav\"}]}}\n"
              "{\"id\": \"m\", \"start\": 0, \"duration\": 1, \"channel\": 1, \"recording\": "
              "{\"sources\": [{\"type\": \"file\", \"channels\": [0, 1], "
              "\"source\": \"a.wav\"}]}}\n"
              "{\"id\": \"c\", \"start\": 0, \"duration\": 1, \"channel\": 2, \"recording\": "
              "{\"sources\": [{\"type\": \"file\", \"channels\": [0], \"source\": \"a.wav\"}]}}\n"
              "{\"id\": \"..\", \"start\": 0, \"duration\": 1, \"recording\": {\"sources\": "
              "[{\"type\": \"file\", \"source\": \"a.wav\"}]}}\n"
              "{\"type\": \"MixedCut\", \"id\": \"x\"}\n{\"id\": 1, \"recording\": {}}\n"
              "{\"id\": \"s\", \"start\": 0}\n{\"start\": 0}\n", 0);
    list_seed("json-escapes.jsonl", LIST_JSONL,
              "{\"audio_filepath\": \"\\udcff\\udc80.wav\"}\n"
              "{\"audio_filepath\": \"\\ud83d\\ude00.wav\"}\n"
              "{\"audio_filepath\": \"a\\u0000.wav\"}\n"
              "{\"audio_filepath\": \"a\\\\u0000.wav\"}\n"
              "{\"audio_filepath\": \"line\\nbreak.wav\"}\n", 0);
    bytes h = {.n = 0}; /* a NUL byte: no list */
    le(&h, LIST_TXT, 1), put(&h, "a.wav\nb\0.wav\n", 13);
    write_file(path_of("list", "nul-byte.txt"), h.b, h.n);
    list_seed("paths.gz", LIST_GZ, "a.wav\nb.flac\nclip.wav\t0\t1\n", 1);
    list_seed("paths-not-gzip.gz", LIST_GZ, "a.wav\nb.flac\n", 0);
    list_seed("lhotse.jsonl.gz", LIST_JSONL_GZ | LIST_SHARD, LHOTSE_CUT, 1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ws-fuzz-seeds DIR\n");
        return 2;
    }
    g_dir = argv[1];
    audio_seeds();
    gguf_seeds();
    safetensors_seed();
    ggml_seed();
    tarin_seeds();
    list_seeds();
    size_t n;
    unsigned char *g = read_whole(path_of("gguf", "stem-f16-align64.gguf"), &n);
    write_file(path_of("ckpt", "stem.gguf"), g, n);
    free(g);
    return 0;
}

/* model.h - the conv-stem weights of a Whisper encoder, as float32.
 *
 * Layouts are PyTorch's (the GGUF file lists the same dimensions innermost
 * first, ne = [3, n_mels, d] for conv1.weight):
 *   conv1_w [d][n_mels][3]   w1[o][i][k] = conv1_w[(o*n_mels + i)*3 + k]
 *   conv1_b [d]
 *   conv2_w [d][d][3]        w2[o][i][k] = conv2_w[(o*d + i)*3 + k]
 *   conv2_b [d]
 *   pos     [n_pos][d]       encoder.positional_embedding, or NULL
 * Sizes always come from the weight file, never from the code.
 *
 * Usage:
 *   ws_model m; ws_err err;
 *   if (ws_model_load(&m, "tiny.gguf", &err)) { fprintf(stderr, "%s\n", err.msg); ... }
 *   ... m.n_mels, m.d, m.conv1_w ...
 *   ws_model_free(&m);
 */
#ifndef WS_MODEL_H
#define WS_MODEL_H

#include <stdint.h>

#include "common.h"
#include "gguf/gguf.h"

typedef enum { WS_TT_F32 = 0, WS_TT_F16 = 1, WS_TT_BF16 = 30 } ws_tensor_type; /* GGUF type ids */

const char *ws_tensor_type_name(ws_tensor_type t);

typedef struct {
    int n_mels;          /* conv1 input channels: 80 or 128 */
    int d;               /* model width: 384 .. 1280 */
    float *conv1_w;      /* [d][n_mels][3] */
    float *conv1_b;      /* [d] */
    float *conv2_w;      /* [d][d][3] */
    float *conv2_b;      /* [d] */
    float *pos;          /* [n_pos][d] or NULL */
    int n_pos;
    ws_tensor_type conv1_type; /* type the weights had in the file */
    ws_tensor_type conv2_type;
    char name[128];      /* general.name, or "" */
    char path[1024];     /* file it was loaded from, or "" */
} ws_model;

/* Reads the stem tensors from a GGUF file (v2 or v3). Accepts the names,
 * shapes and types of the table in whisper/tensors.h: openai-whisper names
 * (encoder.conv1.weight, ...), Hugging Face names (model.encoder.conv1.weight,
 * ...) and llama.cpp mmproj names (a.conv1d.1.weight, ...); a bias stored
 * [d], [d,1] or [1,d]; F32, F16 and BF16. Returns 0, or -1 with err naming the file and problem
 * (a file that changes while it is read is one: "the file changed while
 * being read"). On failure *m is left empty (safe to ws_model_free).
 * Reads the header and the stem's tensors only; memory is the float arrays. */
int ws_model_load(ws_model *m, const char *path, ws_err *err);

/* ws_model_load from a file already opened with ws_gguf_open (g stays open;
 * the caller closes it). */
int ws_model_load_gguf(ws_model *m, ws_gguf *g, ws_err *err);

/* The model's n_mels and d, from the header alone: the stem's names, types
 * and shapes are checked as ws_model_load checks them (the same messages),
 * but no tensor data is read or converted. For callers that need only the
 * shape (--mel takes the model's band count). 0, or -1 with err. */
int ws_model_probe(const char *path, int *n_mels, int *d, ws_err *err);

/* Fills *m with deterministic pseudo-random weights for the given shape,
 * drawn like PyTorch's default Conv1d init: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
 * with fan_in = in_channels * 3. with_pos adds sinusoids(1500, d). */
int ws_model_init_random(ws_model *m, int n_mels, int d, uint64_t seed, int with_pos, ws_err *err);

/* Writes *m as GGUF v3 with the stem tensors in the given type (and the
 * positional embedding as F32 when present), metadata
 * general.architecture = "whisper" and general.name = m->name.
 * The file is written to a temporary name and renamed when complete. */
int ws_model_save_gguf(const ws_model *m, const char *path, ws_tensor_type type, ws_err *err);

/* Variants of the file ws_model_save_gguf writes, for tools and tests. */
typedef struct {
    ws_tensor_type type;  /* of the stem tensors */
    int hf_names;   /* Hugging Face names (model.encoder.conv1.weight, ...,
                       model.encoder.embed_positions.weight) */
    int bias_2d;    /* biases stored ne = [1, d] (PyTorch [d, 1]), as whisper.cpp does */
} ws_model_save_opts;

/* ws_model_save_gguf with options; ws_model_save_gguf(m, p, t, e) is
 * ws_model_save_gguf_opts(m, p, &(ws_model_save_opts){t, 0, 0}, e). */
int ws_model_save_gguf_opts(const ws_model *m, const char *path, const ws_model_save_opts *o,
                            ws_err *err);

/* Frees the arrays and zeroes *m. NULL-safe. */
void ws_model_free(ws_model *m);

#endif

/* tensors.h - the conv stem's tensors, written once: the names a weight file
 * may give them, their shapes in terms of n_mels, d and n_pos, which are
 * optional, and the checks. The GGUF loader (whisper/model.c: load, probe,
 * save) and the checkpoint converter (convert/convert.c) both read this
 * table and call these checks, so that they accept and refuse the same
 * tensors with the same messages. Layering: this file needs gguf/ (type ids)
 * and common.h only; convert/ includes it, never the other way.
 *
 * The table (ne as GGUF and ggml list it, innermost first: PyTorch's shape
 * reversed). Names: openai-whisper's, Hugging Face's, llama.cpp mmproj's.
 *   conv1.weight  ne [3, n_mels, d]
 *       encoder.conv1.weight, model.encoder.conv1.weight, a.conv1d.1.weight
 *   conv1.bias    ne [d], or [1, d] or [d, 1]
 *       encoder.conv1.bias, model.encoder.conv1.bias, a.conv1d.1.bias
 *   conv2.weight  ne [3, d, d]
 *       encoder.conv2.weight, model.encoder.conv2.weight, a.conv1d.2.weight
 *   conv2.bias    ne [d], or [1, d] or [d, 1]
 *       encoder.conv2.bias, model.encoder.conv2.bias, a.conv1d.2.bias
 *   positional    ne [d, n_pos], optional
 *       encoder.positional_embedding, model.encoder.embed_positions.weight,
 *       a.position_embd.weight
 * Names are tried in that order; the first present is the tensor. The
 * openai name and the first shape are what we write (ws_model_save_gguf,
 * ws_ckpt_convert); a bias ne [1, d] is PyTorch [d, 1], as whisper.cpp and
 * llama.cpp store it. n_mels and d come from conv1.weight, n_pos from the
 * positional table, each in 1..WS_STEM_MAX_DIM; every other shape must
 * agree with them. Types: F32, F16 or BF16.
 *
 * Shape rule (ggml's): dimensions past a tensor's n_dims are 1, and a
 * shape matches when ne and the wanted shape agree with both padded by 1s,
 * so [3, n_mels, d, 1] is conv1.weight and [d, 1] is [d] (PyTorch: leading
 * dimensions of 1 are ignored; the bytes are the same).
 *
 * Checks run per tensor in table order: found (required ones), type, shape.
 * Messages, each naming the file and the tensor as the file names it:
 *   FILE: no tensor 'encoder.conv1.weight' (nor 'model.encoder.conv1.weight', 'a.conv1d.1.weight')
 *   FILE: tensor 'encoder.conv1.bias': type Q8_0 is not supported (F32, F16 or BF16)
 *   FILE: encoder.conv2.weight: got ne=[3,384,512], expected [3,384,384]
 *   FILE: encoder.conv1.weight: got ne=[5,2,4], expected [3,n_mels,d] with n_mels and d in 1..65536
 *
 * Decisions where the loader and the converter had drifted (each spelled
 * the names, shapes and messages itself before this table):
 *   - Names: the converter also took llama.cpp mmproj names, the loader did
 *     not. Both take them now: a user of a Whisper-encoder mmproj (Ultravox,
 *     Qwen2-Audio) can load it directly, as a whole-model file loads, and
 *     what converts also loads.
 *   - Trailing 1s: the loader matched ne padded with 1s (a 4-D GGUF
 *     [3, n_mels, d, 1] loaded; [d, 1, 1] was a bias; a 1-D positional
 *     table [d] was n_pos 1); the converter wanted the exact rank. Both use
 *     the padded rule now (ggml treats such shapes as equal; PyTorch bytes
 *     are the same), so nothing the loader took is refused; the converter
 *     writes the first shape of the table (canonical rank).
 *   - n_pos: the loader capped it at 65536, the converter did not, so it
 *     could write a file its loader refuses: a bug; both cap it now.
 *   - Messages: the converter said "expected [d] (or [1,d])" for a bias
 *     (omitting [d,1], which it accepted) and "[3, n_mels, d]" without the
 *     range; the missing-tensor line named two names in one, three in the
 *     other. One wording now, the loader's, with all three names.
 *   - Order: the loader checked conv1.w, conv2.w, pos, biases; the
 *     converter every name and type before any shape. Both follow the
 *     table now (a file with two faults names the same one in both).
 * Not here: mel_filters (a converter-only extra from ggml .bin files) and
 * scripts/pt-to-gguf.py (Python; it spells openai and HF names itself).
 *
 * Tested by tests/test_convert.c (convert/loader_and_converter_*: every
 * name, shape variant and wrong shape through both) and tests/test_model.c.
 */
#ifndef WS_WHISPER_TENSORS_H
#define WS_WHISPER_TENSORS_H

#include <stdint.h>

#include "common.h"

#define WS_STEM_MAX_DIM 65536  /* sanity limit on n_mels, d and n_pos */
#define WS_STEM_MAX_RANK 3     /* of a table shape */
#define WS_STEM_MAX_SHAPES 3   /* accepted variants of one tensor */

typedef enum {
    WS_STEM_CONV1_W,
    WS_STEM_CONV1_B,
    WS_STEM_CONV2_W,
    WS_STEM_CONV2_B,
    WS_STEM_POS,
    WS_STEM_N_TENSORS
} ws_stem_role;

typedef enum {
    WS_NAMES_OPENAI,  /* openai-whisper's state_dict: the names we write */
    WS_NAMES_HF,      /* Hugging Face transformers' WhisperModel */
    WS_NAMES_MMPROJ,  /* llama.cpp's mmproj GGUF of a Whisper encoder */
    WS_N_NAMINGS
} ws_stem_naming;

/* One dimension of a table shape: a constant or a named size. */
typedef enum { WS_DIM_1, WS_DIM_3, WS_DIM_N_MELS, WS_DIM_D, WS_DIM_N_POS } ws_stem_dim;

typedef struct {
    uint8_t rank;
    uint8_t dim[WS_STEM_MAX_RANK]; /* ws_stem_dim, innermost first (ne order) */
} ws_stem_shape;

typedef struct {
    const char *name[WS_N_NAMINGS];
    int required;
    int n_shapes;
    ws_stem_shape shape[WS_STEM_MAX_SHAPES]; /* [0]: the one written */
} ws_stem_tensor_info;

extern const ws_stem_tensor_info WS_STEM_TENSORS[WS_STEM_N_TENSORS];

/* The named sizes; 0 while not yet known. */
typedef struct {
    uint64_t n_mels, d, n_pos;
} ws_stem_dims;

/* What the checks read of a tensor, from either a GGUF or a checkpoint. */
typedef struct {
    const char *file;       /* the file holding it, for messages */
    const char *name;       /* as that file names it */
    uint32_t type;          /* ggml type id (or any other value: refused) */
    const char *type_name;  /* for messages; NULL: ggml's name of type, else its number */
    uint32_t n_dims;
    const uint64_t *ne;     /* n_dims values, innermost first */
    const void *ref;        /* the caller's tensor; NULL: not found */
} ws_stem_view;

/* Looks name up in ctx: 1 and *out filled, or 0 when absent. */
typedef int (*ws_stem_find_fn)(void *ctx, const char *name, ws_stem_view *out);

/* ne of shape variant v of role r with dims (all of its sizes known), into
 * ne[0..WS_STEM_MAX_RANK); returns the rank. */
uint32_t ws_stem_tensor_ne(ws_stem_role r, int v, const ws_stem_dims *dims, uint64_t *ne);

/* 0 when t is F32, F16 or BF16; else -1 with
 * "FILE: tensor 'NAME': type X is not supported (F32, F16 or BF16)". */
int ws_stem_check_type(const ws_stem_view *t, ws_err *err);

/* 0 when t has one of role r's shapes under *dims (padded with 1s); sizes
 * still 0 in *dims are taken from t (in 1..WS_STEM_MAX_DIM). Else -1 with
 * "FILE: NAME: got ne=[..], expected ..." and *dims unchanged. */
int ws_stem_check_shape(ws_stem_role r, const ws_stem_view *t, ws_stem_dims *dims, ws_err *err);

/* Every stem tensor of a file, checked in table order (found, type,
 * shape): out[r] for each role (out[r].ref NULL for an absent optional
 * one), *dims filled. path names the file in "no tensor" messages.
 * 0, or -1 with err. */
int ws_stem_find_tensors(ws_stem_find_fn find, void *ctx, const char *path,
                         ws_stem_view out[WS_STEM_N_TENSORS], ws_stem_dims *dims, ws_err *err);

#endif

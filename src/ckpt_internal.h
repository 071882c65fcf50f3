/* ckpt_internal.h - what the checkpoint readers share (not a public API):
 * the ws_ckpt they fill, the file mapping and the tensor list. See ckpt.h. */
#ifndef WS_CKPT_INTERNAL_H
#define WS_CKPT_INTERNAL_H

#include "ckpt.h"
#include "gguf.h"

typedef struct {
    char *path;
    uint8_t *base;
    size_t size;
} ckpt_map;

struct ws_ckpt {
    ws_ckpt_format format;
    char *path;
    ws_ckpt_tensor *t;
    size_t n_t, cap_t;
    ws_ckpt_hparam hp[WS_CKPT_MAX_HPARAMS];
    size_t n_hp;
    ckpt_map *maps;
    size_t n_maps, cap_maps;
    ws_gguf *gguf; /* the GGUF reader's own mapping, for WS_CKPT_GGUF */
};

/* Maps path read-only (an empty file is an error) and keeps the mapping until
 * ws_ckpt_close. *m is valid until the next call (the table may move); the
 * bytes and m->path stay valid until ws_ckpt_close. */
int ckpt_map_file(ws_ckpt *c, const char *path, const ckpt_map **m, ws_err *err);

/* Appends a copy of *t (its name is copied; data must lie in a mapping of c;
 * file must live as long as c, e.g. a ckpt_map's path). A name already
 * present is an error naming file. */
int ckpt_add_tensor(ws_ckpt *c, const ws_ckpt_tensor *t, const char *file, ws_err *err);

/* Records a hyper-parameter (at most WS_CKPT_MAX_HPARAMS). */
int ckpt_set_hparam(ws_ckpt *c, const char *key, uint32_t val, ws_err *err);

/* "[3,80,384]" into buf. */
void ckpt_fmt_ne(char *buf, size_t cap, const uint64_t *ne, uint32_t n_dims);

int ckpt_read_safetensors(ws_ckpt *c, const char *path, ws_err *err);
int ckpt_read_safetensors_index(ws_ckpt *c, const char *path, ws_err *err);
int ckpt_read_ggml(ws_ckpt *c, const char *path, ws_err *err);
int ckpt_read_gguf(ws_ckpt *c, const char *path, ws_err *err);

#endif

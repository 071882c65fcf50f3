/* ckpt_internal.h - what the checkpoint readers share (not a public API):
 * the ws_ckpt they fill, its open files and the tensor list. See ckpt.h. */
#ifndef WS_CKPT_INTERNAL_H
#define WS_CKPT_INTERNAL_H

#include "ckpt.h"
#include "gguf/gguf.h"
#include "strmap.h"

struct ws_ckpt {
    ws_ckpt_format format;
    char *path;
    ws_ckpt_tensor *t;
    size_t n_t, cap_t;
    ws_strmap *names;   /* tensor name -> index in t: lookups and duplicates in O(1) */
    ws_ckpt_hparam hp[WS_CKPT_MAX_HPARAMS];
    size_t n_hp;
    ws_rfile **files;   /* each allocated alone, so pointers to it stay valid */
    size_t n_files, cap_files;
    ws_strmap *opened;  /* path as opened -> index in files */
    ws_gguf *gguf;      /* the GGUF reader's own file, for WS_CKPT_GGUF */
};

/* Opens path (a regular, non-empty file) and keeps it open until
 * ws_ckpt_close; *f stays valid until then. A path opened before gives the
 * same file again. */
int ws_ckpt_open_file(ws_ckpt *c, const char *path, const ws_rfile **f, ws_err *err);

/* Appends a copy of *t (its name is copied; t->src must be a file of c;
 * file must live as long as c, e.g. a ws_rfile's path). A name already
 * present is an error naming file. */
int ws_ckpt_add_tensor(ws_ckpt *c, const ws_ckpt_tensor *t, const char *file, ws_err *err);

/* Records a hyper-parameter (at most WS_CKPT_MAX_HPARAMS). */
int ws_ckpt_set_hparam(ws_ckpt *c, const char *key, uint32_t val, ws_err *err);

int ws_ckpt_read_safetensors(ws_ckpt *c, const char *path, ws_err *err);
int ws_ckpt_read_safetensors_index(ws_ckpt *c, const char *path, ws_err *err);
int ws_ckpt_read_ggml(ws_ckpt *c, const char *path, ws_err *err);
int ws_ckpt_read_gguf(ws_ckpt *c, const char *path, ws_err *err);

#endif

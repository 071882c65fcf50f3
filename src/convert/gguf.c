/* gguf.c - a GGUF file as a checkpoint (layout in gguf.h), so that
 * another tool's GGUF (llama.cpp's mmproj names a.conv1d.1.weight, ...,
 * whisper.cpp-style [1, d] biases, a whole model) can be cut down to our stem
 * file, renamed and re-typed. The GGUF reader does all the validation; this
 * file only lists its tensors. Tensors of a type without a known size are
 * listed without data (a stem tensor of such a type is refused by the
 * converter). Tested by tests/test_convert.c (convert/gguf_*).
 */
#include "internal.h"

int ws_ckpt_read_gguf(ws_ckpt *c, const char *path, ws_err *err)
{
    c->gguf = ws_gguf_open(path, err);
    if (!c->gguf)
        return -1;
    const char *file = ws_gguf_path(c->gguf);
    for (size_t i = 0; i < ws_gguf_n_tensors(c->gguf); i++) {
        const ws_gguf_tensor *g = ws_gguf_tensor_at(c->gguf, i);
        ws_ckpt_tensor t = {0};
        t.name = (char *)g->name;
        t.type = g->type;
        t.dtype = ws_ggml_type_name(g->type);
        if (!t.dtype)
            t.dtype = "unknown";
        t.n_dims = g->n_dims;
        for (int j = 0; j < WS_CKPT_MAX_DIMS; j++)
            t.ne[j] = j < WS_GGUF_MAX_DIMS ? g->ne[j] : 1;
        t.n_elements = g->n_elements;
        t.readable = g->readable;
        t.nbytes = g->nbytes;
        t.offset = g->file_offset;
        t.src = ws_gguf_file(c->gguf);
        if (ws_ckpt_add_tensor(c, &t, file, err))
            return -1;
    }
    return 0;
}

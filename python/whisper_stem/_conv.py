"""The conv engine of libwhisper-stem.so.0 (include/ws_conv.h) through ctypes: its enums,
ws_conv_desc and ws_conv_args as ctypes structures, and the C prototypes.

No PyTorch here: whisper_stem.torch builds on it, and so can other callers (bench/
torch_ops.py times bare ws_gpu_conv_enqueue calls through it). The structures follow the
header field for field (enums are C ints, every pointer a void pointer of the same size);
python/tests/test_torch.py compiles a C program against include/ws_conv.h and checks each
field's offset and each structure's size against these.
"""

import ctypes

from whisper_stem import _lib

# enums of ws_conv.h (C enums: int)
FWD, BWD = 0, 1                                   # ws_conv_op
NCL, NLC = 0, 1                                   # ws_layout
F32, F16, BF16 = 0, 1, 2                          # ws_dtype
MATH_F32, MATH_TF32, MATH_F16, MATH_BF16 = 0, 1, 2, 3  # ws_math
ACT_NONE, ACT_RELU, ACT_GELU, ACT_SILU = 0, 1, 2, 3     # ws_act

_I = ctypes.c_int
_P = ctypes.c_void_p


class Desc(ctypes.Structure):
    """ws_conv_desc."""
    _fields_ = [
        ("op", _I),
        ("c_in", _I), ("c_out", _I), ("groups", _I), ("k", _I), ("stride", _I),
        ("dilation", _I), ("pad_l", _I), ("pad_r", _I),
        ("x_layout", _I), ("y_layout", _I),
        ("x_type", _I), ("w_type", _I), ("y_type", _I),
        ("math", _I),
        ("pre", _I), ("act", _I),
    ]


#: the field names of Desc in order: a descriptor as a tuple of these ints is a plan's key
DESC_FIELDS = tuple(name for name, _ in Desc._fields_)


class Args(ctypes.Structure):
    """ws_conv_args: host pointers for the CPU, device pointers for the GPU."""
    _fields_ = [
        ("n", _I), ("t_in", _I),
        ("x", _P), ("w", _P),
        ("b", _P),                                # const float *
        ("add", _P),
        ("add_batch_stride", ctypes.c_longlong),
        ("y", _P),
        ("dy", _P),
        ("dx", _P),
        ("dw", _P), ("db", _P),                   # float *
        ("seq_idx", _P),                          # const int32_t *
        ("initial_states", _P),
        ("final_states", _P),
        ("dinitial_states", _P),
    ]


#: the field names of Args in order
ARGS_FIELDS = tuple(name for name, _ in Args._fields_)

Error = _lib.Error
CError = _lib._CError  # ws_err: char msg[512]
_ERR = ctypes.POINTER(CError)
_DESC = ctypes.POINTER(Desc)
_ARGS = ctypes.POINTER(Args)


def _proto(name, restype, *argtypes):
    f = getattr(_lib.lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


conv_check = _proto("ws_conv_check", _I, _DESC, _ERR)
conv_out_len = _proto("ws_conv_out_len", _I, _DESC, _I)
conv_new = _proto("ws_conv_new", _P, _DESC, _P, _P, _I, _ERR)
conv_run = _proto("ws_conv_run", _I, _P, _ARGS, _ERR)
conv_free = _proto("ws_conv_free", None, _P)

gpu_open = _proto("ws_gpu_open", _P, _I, _ERR)
gpu_close = _proto("ws_gpu_close", None, _P)
gpu_conv_new = _proto("ws_gpu_conv_new", _P, _P, _DESC, _P, _P, _ERR)
gpu_conv_run = _proto("ws_gpu_conv_run", _I, _P, _ARGS, _ERR)
gpu_conv_enqueue = _proto("ws_gpu_conv_enqueue", _I, _P, _ARGS, ctypes.c_uint64, _ERR)
gpu_conv_free = _proto("ws_gpu_conv_free", None, _P)


def desc(key):
    """A Desc from a tuple of DESC_FIELDS' ints."""
    return Desc(*key)


def check(key):
    """None when the descriptor is valid, else the engine's message (ws_conv_check)."""
    err = CError()
    if conv_check(ctypes.byref(desc(key)), ctypes.byref(err)) != 0:
        return err.msg.decode("utf-8", "replace")
    return None

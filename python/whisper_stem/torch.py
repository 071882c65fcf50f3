"""whisper_stem.torch: the conv engine of libwhisper-stem (include/ws_conv.h) as PyTorch
operators with autograd, on CPU and CUDA tensors::

    import torch
    import whisper_stem.torch as wst

    y = wst.conv1d(x, w, b, padding=1, act="gelu")                 # x [N][C_in][T], w [C_out][C_in/groups][K]
    y = wst.causal_conv1d(x, w, b, activation="silu")              # x [N][C][T], w [C][K] (Mamba's)
    y, last = wst.causal_conv1d(x, w, b, initial_states=prev, return_final_states=True)

conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, act=None, pre=None,
add=None, math=None) computes ``act(F.conv1d(pre(F.pad(x, (l, r))), w, b, stride,
dilation=dilation, groups=groups)) + add``: padding is an int (both sides), a pair
(left, right), "causal" (left = dilation*(K-1), right 0), "valid" or "same" (stride 1;
the extra pad on the right, as PyTorch pads); act and pre are None, "relu", "gelu" (the
exact erf form) or "silu"; add is [N][C_out][T_out], [1][C_out][T_out] or
[C_out][T_out] (one add for every batch item), in x's dtype.

causal_conv1d(x, w, b=None, activation=None, seq_idx=None, initial_states=None,
return_final_states=False) takes Dao-AILab/causal-conv1d's arguments and shapes: x
[N][C][T], w [C][K] (or [C][1][K]), b [C], activation None / "silu" / "swish" / True (=
"silu"), and also "relu" / "gelu"; seq_idx int32 [N][T] marks packed sequences (a tap
never reads another sequence's position; negative values are padding, whose outputs are
0); initial_states [N][C][K-1] are the K-1 inputs before t = 0 (None: zeros);
return_final_states=True returns (y, final_states), final_states [N][C][K-1] the last K-1
inputs (the initial ones included where T < K-1), ready to be the next chunk's
initial_states. seq_idx cannot be combined with initial_states or return_final_states (as
in causal-conv1d).

Both are torch.autograd.Function's (Conv1dFunction, CausalConv1dFunction): the backward
is one run of the engine's BWD plan of the same descriptor, computing only the gradients
autograd asks for (dx, dw, db, dinitial_states). The gradient of add is the output's
gradient itself (summed over the batch when add is shared). pre has no backward in the
engine: a backward through a conv1d with pre to x, w or b raises RuntimeError (apply pre in
torch instead, conv1d(F.relu(x), ...), when training). The gradient of final_states flows:
it is added to dx[..., T-(K-1):] (and, for the part before t = 0 when T < K-1, to
dinitial_states) in torch. Without autograd (torch.no_grad(), or no input requiring grad)
the engine's forward is called directly.

Devices: CPU tensors run the CPU engine on the calling thread with
torch.get_num_threads() threads. CUDA tensors run the GPU engine on the tensor's device,
enqueued on PyTorch's current stream of that device (torch.cuda.current_stream(device)),
without waiting: results are ordered like any PyTorch kernel on that stream. One ws_gpu
per device is opened on first use and kept for the process (it shares the device's
primary context with PyTorch); a call on another device than the current one leaves
PyTorch's current device as it was. PyTorch's default stream (the legacy NULL stream) is
given to the engine as CU_STREAM_LEGACY, since a stream of 0 means the engine's own. x, w,
b and the other tensors must be on one device.

Memory layouts, and what is copied:
- x as a contiguous [N][C][T] tensor runs as the engine's NCL layout; x as a channel-last
  view (x.stride() == (T*C, 1, C), e.g. ``h.transpose(1, 2)`` of a contiguous [N][T][C]
  tensor h) runs as NLC. Both are passed by data_ptr(): no copy. Any other strides are
  made contiguous first (a copy of x). The output has x's layout: [N][C][T] contiguous,
  or channel-last ([N][C][T] with strides (T*C, 1, C): its memory is a contiguous
  [N][T][C] tensor, and y.transpose(1, 2) is that tensor, contiguous). dx has x's layout
  too. An output gradient in another layout than y's is copied into y's.
- w is used in place when contiguous ([C_out][C_in/groups][K]; [C][K] is read as
  [C][1][K]); otherwise copied. The engine writes dw in float32; a float16 / bfloat16 w
  gets it converted to its dtype (a copy of w's size).
- b: the engine's bias is float32: a float16 / bfloat16 b is converted (a copy of C_out
  elements), db likewise returned in b's dtype. When both dw and db are asked for and w
  and b share a float16 / bfloat16 dtype, the engine writes them into one float32 buffer
  converted by one cast; dw and db are views of its two parts (the same values as when
  each is converted alone).
- add is used in place when each batch item is laid out as y is (any batch stride, or one
  shared item); otherwise copied. seq_idx and the states are used in place when
  contiguous, else copied.

Types: float32, float16 and bfloat16 tensors are the engine's storage types (F32, F16,
BF16); w may have another of them than x; y, dx, add, states have x's. math says how the
GPU forms products: it defaults to x's dtype (float32: exact float32 FFMA; bfloat16 /
float16: tensor cores on inputs rounded to that type, float32 accumulation); "tf32" asks
for TF32 tensor cores on float32 tensors. torch.backends.cuda.matmul.allow_tf32 does not
change it. The CPU computes every math mode in float32. Sums are in float32, in an order
fixed by the shapes: the same inputs give the same bits on the same device.

Plans (an engine descriptor made ready to run, weights given per call) are made on first
use and cached: on the CPU per descriptor and thread count, on a GPU per descriptor,
device and stream (the engine's plans own scratch memory that calls on different streams
would share). A training step that changes w and b runs the same plans again.

Signatures: the first call of each signature (the types, shapes, strides, dtypes and
devices of its tensors and the values and types of its other arguments) runs the full
argument checks and derives from them what every later call of that signature reuses: the
descriptor, layouts, output shapes and strides, which copies and casts are needed, and the
plans found. What belongs to one call is read each time: data pointers, requires_grad and
grad mode, and the tensors autograd saves (with their versions). A call whose signature
differs in anything the checks read is checked again, so a bad argument raises the same
exception on every call. At most 1024 signatures are kept (then they are forgotten and
found again).

Errors: bad arguments raise TypeError or ValueError naming the argument before the engine
is called; what the engine refuses raises whisper_stem.Error with its message.

Tested by python/tests/test_torch.py (CPU; make test-python) and
python/tests/test_torch_gpu.py (CUDA, skipped without it): forward and gradients against
torch.nn.functional.conv1d in float64 and against causal-conv1d's reference semantics.
Timed by bench/torch_ops.py.
"""

import threading

import torch

from whisper_stem import _conv, _lib
from whisper_stem._lib import Error

__all__ = ["conv1d", "causal_conv1d", "Conv1dFunction", "CausalConv1dFunction", "Error"]

_STORAGE = {torch.float32: _conv.F32, torch.float16: _conv.F16, torch.bfloat16: _conv.BF16}
_MATH_OF = {torch.float32: _conv.MATH_F32, torch.float16: _conv.MATH_F16,
            torch.bfloat16: _conv.MATH_BF16}
_MATHS = {
    "f32": _conv.MATH_F32, "fp32": _conv.MATH_F32, "float32": _conv.MATH_F32,
    "tf32": _conv.MATH_TF32,
    "f16": _conv.MATH_F16, "fp16": _conv.MATH_F16, "float16": _conv.MATH_F16, "half": _conv.MATH_F16,
    "bf16": _conv.MATH_BF16, "bfloat16": _conv.MATH_BF16,
}
_ACTS = {None: _conv.ACT_NONE, "relu": _conv.ACT_RELU, "gelu": _conv.ACT_GELU, "silu": _conv.ACT_SILU}

# PyTorch's default stream is CUDA's legacy NULL stream (cuda_stream == 0); to the engine
# a stream of 0 means its own stream, so it is named by its explicit handle instead.
_CU_STREAM_LEGACY = 0x1


# ---------------------------------------------------------------- argument checks

def _tensor(name, t, dims=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s must be a torch.Tensor, got %s" % (name, type(t).__name__))
    if dims is not None and t.dim() not in dims:
        raise ValueError("%s must be %s, got shape %s" % (
            name, " or ".join("%d-D" % d for d in dims), tuple(t.shape)))
    return t


def _storage(name, t):
    try:
        return _STORAGE[t.dtype]
    except KeyError:
        raise TypeError("%s has dtype %s: the engine stores float32, float16 or bfloat16" % (name, t.dtype)) from None


def _same_device(name, t, device):
    if t.device != device:
        raise ValueError("%s is on %s but x is on %s: every tensor must be on x's device" % (name, t.device, device))


def _int(name, v, lo):
    if isinstance(v, bool):
        raise TypeError("%s must be an integer, got %r" % (name, v))
    return _lib.c_int(v, name, lo)


def _act(name, act):
    if act is not None and not isinstance(act, str):
        raise TypeError("%s must be None, 'relu', 'gelu' or 'silu', got %r" % (name, act))
    try:
        return _ACTS[act]
    except KeyError:
        raise ValueError("%s must be None, 'relu', 'gelu' or 'silu', got %r" % (name, act)) from None


def _math(math, dtype):
    if math is None:
        return _MATH_OF[dtype]
    if isinstance(math, torch.dtype):
        if math not in _MATH_OF:
            raise ValueError("math %s: must be float32, float16, bfloat16 or 'tf32'" % (math,))
        return _MATH_OF[math]
    if not isinstance(math, str) or math.lower() not in _MATHS:
        raise ValueError("math must be None, 'f32', 'tf32', 'bf16' or 'f16', got %r" % (math,))
    return _MATHS[math.lower()]


def _padding(padding, k, dilation, stride):
    if isinstance(padding, str):
        if padding == "causal":
            return dilation * (k - 1), 0
        if padding == "valid":
            return 0, 0
        if padding == "same":
            if stride != 1:
                raise ValueError("padding='same' needs stride 1, got stride %d" % stride)
            total = dilation * (k - 1)
            return total // 2, total - total // 2
        raise ValueError("padding must be an int, a pair (left, right), 'causal', 'valid' or 'same', got %r" % padding)
    if isinstance(padding, (tuple, list)):
        if len(padding) != 2:
            raise ValueError("padding as a sequence must be (left, right), got %r" % (padding,))
        return _int("padding left", padding[0], 0), _int("padding right", padding[1], 0)
    p = _int("padding", padding, 0)
    return p, p


def _out_len(t, k, stride, dilation, pad_l, pad_r):
    num = t + pad_l + pad_r - dilation * (k - 1) - 1
    return num // stride + 1 if num >= 0 else 0


# ---------------------------------------------------------------- layouts

def _layout(shape, strides):
    """The layout of a [N][C][T] tensor of these strides: NCL, NLC, or None for others.
    A dimension of size 1 is never stepped: its stride does not count."""
    n, c, t = shape
    s0, s1, s2 = strides
    if n > 1 and s0 != c * t:
        return None
    if (t == 1 or s2 == 1) and (c == 1 or s1 == t):
        return _conv.NCL
    if (c == 1 or s1 == 1) and (t == 1 or s2 == c):
        return _conv.NLC
    return None


def _layout_of(x):
    return _layout(x.shape, x.stride())


def _strides(c, t, layout):
    """The strides of a new [N][C][T] tensor in the layout: contiguous, or channel-last."""
    return (c * t, t, 1) if layout == _conv.NCL else (t * c, 1, c)


def _in_layout(t, layout):
    """t [N][C][T] as it is when its strides are the layout's, else a copy in it."""
    if _layout_of(t) == layout:
        return t
    if layout == _conv.NCL:
        return t.contiguous()
    return t.transpose(1, 2).contiguous().transpose(1, 2)


def _new(like, shape, strides, nlc):
    """A new tensor of like's dtype and device: contiguous, or of these strides when nlc."""
    return like.new_empty_strided(shape, strides) if nlc else like.new_empty(shape)


# ---------------------------------------------------------------- the engine

_Args = _conv.Args
_empty_like = torch.empty_like
_conv_run = _conv.conv_run
_gpu_enqueue = _conv.gpu_conv_enqueue
_tls = threading.local()  # .err: this thread's ws_err, reused call after call
_get_ident = threading.get_ident


def _raise(err, what):
    """Raise Error with the engine's message in err (or `what`), and clear err for the
    thread's next call."""
    msg = err.msg.decode("utf-8", "replace")
    err.msg = b""
    raise Error(msg or what)


class _Gpu:
    """One device's ws_gpu and its plans; the engine's calls on it are made one at a time."""

    def __init__(self, index):
        err = _conv.CError()
        h = _conv.gpu_open(index, err)
        if not h:
            _lib.raise_error(err, "ws_gpu_open(%d) failed" % index)
        self.handle = h
        self.index = index
        self.lock = threading.Lock()
        self.plans = {}


_gpus = {}
_gpus_lock = threading.Lock()
_cpu_plans = {}
_cpu_lock = threading.Lock()


def _gpu(index):
    g = _gpus.get(index)
    if g is None:
        with _gpus_lock:
            g = _gpus.get(index)
            if g is None:
                g = _gpus[index] = _Gpu(index)
    return g


def _cpu_plan(key, n_threads):
    k = (key, n_threads)
    plan = _cpu_plans.get(k)
    if plan is None:
        with _cpu_lock:
            plan = _cpu_plans.get(k)
            if plan is None:
                err = _conv.CError()
                plan = _conv.conv_new(_conv.desc(key), None, None, n_threads, err)
                if not plan:
                    _lib.raise_error(err, "ws_conv_new failed")
                _cpu_plans[k] = plan
    return plan


def _gpu_plan(g, key, stream):
    """g's plan of `key` for `stream`, made on first use; the caller holds g.lock."""
    plan = g.plans.get((key, stream))
    if plan is None:
        err = _conv.CError()
        plan = _conv.gpu_conv_new(g.handle, _conv.desc(key), None, None, err)
        if not plan:
            _lib.raise_error(err, "ws_gpu_conv_new failed")
        g.plans[(key, stream)] = plan
    return plan


# the current stream's CUstream without making a torch.cuda.Stream object (PyTorch 2.x has
# it; torch.cuda.current_stream(device).cuda_stream is the same number)
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
# PyTorch's current device without torch.cuda.current_device()'s initialisation check (the
# tensors given are CUDA tensors: CUDA is initialised)
_cuda_device = getattr(torch._C, "_cuda_getDevice", None) or (lambda: torch.cuda.current_device())


def _stream_handle(device):
    """PyTorch's current stream on `device` as the CUstream the engine takes."""
    if _raw_stream is not None:
        s = _raw_stream(device.index)
    else:
        s = torch.cuda.current_stream(device).cuda_stream
    return s if s else _CU_STREAM_LEGACY


class _Key(tuple):
    """A plan's descriptor (the tuple _key makes: ws_conv_desc's fields in order) on one
    device, with the plans it has run: on the CPU per thread count, on a GPU per stream.
    The plans are made and owned by _cpu_plan / _gpu_plan (once per descriptor, device and
    stream or thread count); a signature's entry holds its _Keys, so that a call finds its
    plan without hashing the descriptor."""

    def __new__(cls, fields, device):
        k = tuple.__new__(cls, fields)
        k.desc = tuple(fields)
        k.cpu = device.type == "cpu"
        k.index = None if k.cpu else (device.index if device.index is not None else torch.cuda.current_device())
        k.gpu = None  # the device's _Gpu, once run there
        k.plans = {}
        return k


def _engine_call(device, key, args):
    """One run of the plan of `key` with `args` (a _conv.Args of data_ptr()s): on the CPU
    on this thread, or on device's GPU enqueued on its current stream. key is a descriptor
    tuple (_key's), or a _Key of it made for this device."""
    if type(key) is not _Key:
        key = _Key(key, device)
    try:
        err = _tls.err
    except AttributeError:
        err = _tls.err = _conv.CError()
    if key.cpu:
        nt = torch.get_num_threads()
        plan = key.plans.get(nt)
        if plan is None:
            plan = key.plans[nt] = _cpu_plan(key.desc, max(1, nt))
        if _conv_run(plan, args, err) != 0:
            _raise(err, "ws_conv_run failed")
        return
    # ws_gpu_conv_enqueue puts the thread's current context (PyTorch's current device) back
    # as it found it; ws_gpu_open and ws_gpu_conv_new make the device's primary context
    # current, so around those, where that is not PyTorch's current device, PyTorch's is
    # made current again.
    index = key.index
    g = key.gpu
    s = _raw_stream(index) if _raw_stream is not None else torch.cuda.current_stream(index).cuda_stream
    stream = s if s else _CU_STREAM_LEGACY
    plan = key.plans.get(stream)
    if g is None or plan is None:
        current = _cuda_device()
        try:
            if g is None:
                g = key.gpu = _gpu(index)
            with g.lock:
                plan = key.plans.get(stream)
                if plan is None:
                    plan = key.plans[stream] = _gpu_plan(g, key.desc, stream)
        finally:
            if current != index:
                torch.cuda.set_device(current)
    with g.lock:
        rc = _gpu_enqueue(plan, args, stream, err)
    if rc != 0:
        _raise(err, "ws_gpu_conv_enqueue failed")


def _check_device(x):
    device = x.device
    if device.type not in ("cpu", "cuda"):
        raise ValueError("x is on %s: the engine runs CPU and CUDA tensors" % (device,))
    return device


# A call's shape: (c_in, c_out, groups, k, stride, dilation, pad_l, pad_r, x_type, w_type,
# math, pre, act); the layout comes from x.
def _key(op, spec, layout):
    c_in, c_out, groups, k, stride, dilation, pad_l, pad_r, xt, wt, math, pre, act = spec
    return (op, c_in, c_out, groups, k, stride, dilation, pad_l, pad_r, layout, layout,
            xt, wt, xt, math, _conv.ACT_NONE if op == _conv.BWD else pre, act)


# ---------------------------------------------------------------- signatures

_SIGNATURES_MAX = 1024
_conv1d_sigs = {}
_causal_sigs = {}


def _remember(sigs, sig, entry):
    if len(sigs) >= _SIGNATURES_MAX:
        sigs.clear()
    sigs[sig] = entry


def _tsig(t):
    """The part of a signature an optional tensor argument gives."""
    return None if t is None else (type(t), t.shape, t.stride(), t.dtype, t.device)


class _Entry:
    """What the checks of a signature found, and what follows from it for every call of that
    signature: the spec, the plans' _Keys, the layout, shapes and strides of the outputs and
    gradients, and which copies and casts a call needs. Nothing of one call's data."""

    __slots__ = (
        "spec", "fkey", "bkey", "device", "dtype", "n", "t", "c_in", "c_out", "k", "t_out",
        "layout", "nlc", "x_copy", "w_copy", "b_cast", "b_copy",
        "y_shape", "y_strides", "dx_shape", "dx_strides", "y_like", "dx_like", "dw_like", "db_like",
        "w_shape", "w_dtype", "b_dtype", "joint", "w_strides", "db_at",
        "pre", "add_shape", "add_bstride", "add_copy",
        "rfs", "has_init", "final_shape", "seq_copy", "init_copy", "fargs",
    )


def _entry(x, w, b, spec):
    """The entry of a call of these tensors (checked) and spec."""
    e = _Entry()
    c_in, c_out, groups, k, stride, dilation, pad_l, pad_r = spec[:8]
    n, _, t = x.shape
    layout = _layout(x.shape, x.stride())
    e.x_copy = layout is None
    if layout is None:
        layout = _conv.NCL  # x is made contiguous
    t_out = _out_len(t, k, stride, dilation, pad_l, pad_r)
    e.spec, e.layout, e.nlc = spec, layout, layout == _conv.NLC
    e.device, e.dtype = x.device, x.dtype
    e.fkey = _Key(_key(_conv.FWD, spec, layout), e.device)
    e.bkey = _Key(_key(_conv.BWD, spec, layout), e.device)
    e.n, e.t, e.c_in, e.c_out, e.k, e.t_out = n, t, c_in, c_out, k, t_out
    e.y_shape, e.y_strides = (n, c_out, t_out), _strides(c_out, t_out, layout)
    e.dx_shape, e.dx_strides = (n, c_in, t), _strides(c_in, t, layout)
    e.w_copy = not w.is_contiguous()
    e.w_shape, e.w_dtype = w.shape, w.dtype
    e.b_dtype = b.dtype if b is not None else None
    e.b_cast = b is not None and b.dtype != torch.float32
    e.b_copy = b is not None and not b.is_contiguous()
    # dw and db converted to one float16 / bfloat16 dtype: written into one float32 buffer
    # (db at a multiple of 64 elements after dw), converted by one cast, viewed as the two
    m = w.numel()
    e.joint = b is not None and w.dtype == b.dtype and w.dtype != torch.float32
    e.w_strides = tuple(_contiguous_strides(tuple(w.shape)))
    # outputs and gradients made by empty_like (cheaper than new_empty) where the tensor
    # they are made like has their shape and strides
    e.y_like = not e.x_copy and x.shape == e.y_shape and x.stride() == e.y_strides
    e.dx_like = e.x_copy or x.stride() == e.dx_strides  # like x as the engine read it
    e.dw_like = e.w_copy or w.stride() == e.w_strides  # like w as the engine read it
    e.db_like = b is not None and b.stride() == (1,)
    e.db_at = (m + 63) // 64 * 64
    e.pre = spec[11]
    e.add_shape = e.add_bstride = None
    e.add_copy = False
    e.rfs = e.has_init = e.seq_copy = e.init_copy = False
    e.final_shape = (n, c_in, k - 1)
    e.fargs = None
    return e


def _contiguous_strides(shape):
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return reversed(out)


def _add_arg(add, n, c_out, t_out, layout):
    """add as the engine reads it: (tensor whose data_ptr is item 0, batch stride in elements)."""
    a = add if add.dim() == 3 else add.unsqueeze(0)
    if a.shape[0] == 1 or n == 1 or a.stride(0) == 0:
        item, bstride = a[:1], 0
    else:
        item, bstride = a, a.stride(0)
    # each item laid out as y is: only the strides of C and T count
    if _layout((1,) + tuple(item.shape[1:]), (0,) + tuple(item.stride()[1:])) != layout:
        item = _in_layout(item, layout)
        bstride = item.stride(0) if item.shape[0] > 1 else 0
    return item, bstride


def _add_entry(e, add):
    """add's part of the entry: its batch stride when the engine reads it in place (its data
    pointer is item 0's), else add_copy (_add_arg copies it per call)."""
    e.add_shape = add.shape
    shape, strides = tuple(add.shape), tuple(add.stride())
    if len(shape) == 2:
        shape, strides = (1,) + shape, (0,) + strides
    bstride = 0 if shape[0] == 1 or e.n == 1 or strides[0] == 0 else strides[0]
    if _layout((1,) + shape[1:], (0,) + strides[1:]) != e.layout:
        e.add_copy = True
    else:
        e.add_bstride = bstride


def _run_fwd(e, x, w, b, add=None, seq_idx=None, initial_states=None):
    """The engine's forward for a call of e's signature: y (and final_states), and the x,
    w, b it read. w is used by its memory ([C_out][Cg][K] contiguous; [C][K] is the same
    memory as [C][1][K]); b as float32."""
    if e.x_copy:
        x = x.contiguous()
    if e.w_copy:
        w = w.contiguous()
    if b is not None:
        if e.b_cast:
            b = b.float()
        if e.b_copy:
            b = b.contiguous()
    if e.y_like:
        y = _empty_like(x)
    else:
        y = x.new_empty_strided(e.y_shape, e.y_strides) if e.nlc else x.new_empty(e.y_shape)
    final = x.new_empty(e.final_shape) if e.rfs else None
    if e.n == 0:
        return y, final, x, w, b
    # the forward's _conv.Args, kept per entry for the thread that made it: a call of the
    # signature sets the same fields every time (which of b, add, seq_idx, initial_states,
    # final_states it has is part of the signature), so only the pointers are set again
    fa = e.fargs
    me = _get_ident()
    if fa is not None and fa[0] == me:
        a = fa[1]
    else:
        a = _Args()
        a.n = e.n
        a.t_in = e.t
        e.fargs = (me, a)
    a.x = x.data_ptr()
    a.w = w.data_ptr()
    a.y = y.data_ptr()
    if b is not None:
        a.b = b.data_ptr()
    keep = None
    if add is not None:
        if e.add_copy:
            keep, a.add_batch_stride = _add_arg(add, e.n, e.c_out, e.t_out, e.layout)
            a.add = keep.data_ptr()
        else:
            a.add = add.data_ptr()  # item 0's: add[:1] and add.unsqueeze(0) start there
            a.add_batch_stride = e.add_bstride
    if seq_idx is not None:
        a.seq_idx = seq_idx.data_ptr()
    if initial_states is not None:
        a.initial_states = initial_states.data_ptr()
    if final is not None:
        a.final_states = final.data_ptr()
    _engine_call(e.device, e.fkey, a)
    del keep  # held until the engine has read it on the CPU; on a GPU the stream orders reuse
    return y, final, x, w, b


def _run_bwd(e, x, w, b32, gy, need_x, need_w, need_b, seq_idx=None, initial_states=None, need_init=False):
    """The engine's backward for a call of e's signature: dx (x's layout and dtype), dw and
    db in w's and b's dtypes, dinitial_states (x's dtype). x, w, b32 are those _run_fwd read."""
    f32 = torch.float32
    if e.n == 0 or gy is None:
        dx = _new(x, e.dx_shape, e.dx_strides, e.nlc).zero_() if need_x else None
        dw = x.new_zeros(e.w_shape, dtype=e.w_dtype) if need_w else None
        db = x.new_zeros((e.c_out,), dtype=e.b_dtype) if need_b else None
        dinit = x.new_zeros(e.final_shape) if need_init else None
        return dx, dw, db, dinit
    dx = None
    if need_x:
        if e.dx_like:
            dx = _empty_like(x)
        else:
            dx = x.new_empty_strided(e.dx_shape, e.dx_strides) if e.nlc else x.new_empty(e.dx_shape)
    dw = db = buf = None
    if need_w and need_b and e.joint:
        buf = x.new_empty((e.db_at + e.c_out,), dtype=f32)
    else:
        if need_w:
            dw = _empty_like(w, dtype=f32) if e.dw_like else x.new_empty(e.w_shape, dtype=f32)
        if need_b:
            db = _empty_like(b32, dtype=f32) if e.db_like else x.new_empty((e.c_out,), dtype=f32)
        elif not (need_x or need_w):
            # (only dinitial_states: the engine computes at least one of dx, dw, db)
            db = x.new_empty((e.c_out,), dtype=f32)
    dinit = x.new_empty(e.final_shape) if need_init else None
    dy = gy if gy.dtype == e.dtype else gy.to(e.dtype)
    if dy.stride() != e.y_strides:
        dy = _in_layout(dy, e.layout)
    a = _Args()
    a.n = e.n
    a.t_in = e.t
    a.x = x.data_ptr()
    a.w = w.data_ptr()
    if b32 is not None:
        a.b = b32.data_ptr()
    a.dy = dy.data_ptr()
    if dx is not None:
        a.dx = dx.data_ptr()
    if buf is not None:
        p = buf.data_ptr()
        a.dw = p
        a.db = p + 4 * e.db_at
    else:
        if dw is not None:
            a.dw = dw.data_ptr()
        if db is not None:
            a.db = db.data_ptr()
    if seq_idx is not None:
        a.seq_idx = seq_idx.data_ptr()
    if initial_states is not None:
        a.initial_states = initial_states.data_ptr()
    if dinit is not None:
        a.dinitial_states = dinit.data_ptr()
    _engine_call(e.device, e.bkey, a)
    if buf is not None:
        buf = buf.to(e.w_dtype)
        dw = buf.as_strided(e.w_shape, e.w_strides, 0)
        db = buf.as_strided((e.c_out,), (1,), e.db_at)
        return dx, dw, db, dinit
    if need_w and e.w_dtype != f32:
        dw = dw.to(e.w_dtype)
    if not need_b:
        db = None
    elif e.b_dtype != f32:
        db = db.to(e.b_dtype)
    return dx, dw, db, dinit


# ---------------------------------------------------------------- conv1d

def _conv1d_entry(x, w, b, add, spec):
    e = _entry(x, w, b, spec)
    if add is not None:
        _add_entry(e, add)
    return e


class Conv1dFunction(torch.autograd.Function):
    """conv1d as an autograd Function: apply(x, w, b, add, spec), spec from conv1d's checks."""

    @staticmethod
    def forward(ctx, x, w, b, add, spec):
        e = spec if type(spec) is _Entry else _conv1d_entry(x, w, b, add, spec)
        y, _, xe, we, b32 = _run_fwd(e, x, w, b, add)
        ctx.e = e
        ctx.save_for_backward(xe, we, b32)
        return y

    @staticmethod
    def backward(ctx, gy):
        xe, we, b32 = ctx.saved_tensors
        e = ctx.e
        need_x, need_w, need_b, need_add = ctx.needs_input_grad[:4]
        dx = dw = db = dadd = None
        if need_x or need_w or need_b:
            if e.pre != _conv.ACT_NONE:
                raise RuntimeError(
                    "whisper_stem.torch.conv1d: pre=%r has no backward in the engine; for gradients "
                    "apply it in torch (conv1d(F.relu(x), ...)), or run under torch.no_grad()" % (
                        {v: k for k, v in _ACTS.items()}[e.pre],))
            dx, dw, db, _ = _run_bwd(e, xe, we, b32, gy, need_x, need_w, need_b)
        if need_add:
            dadd = gy.sum_to_size(e.add_shape)
        return dx, dw, db, dadd, None


def _conv1d_checked(x, w, b, stride, padding, dilation, groups, act, pre, add, math):
    """conv1d's checks: the entry of a call of these arguments, or TypeError / ValueError
    naming the argument at fault."""
    _tensor("x", x, (3,))
    device = _check_device(x)
    xt = _storage("x", x)
    _tensor("w", w, (3,))
    wt = _storage("w", w)
    _same_device("w", w, device)
    n, c_in, t = x.shape
    c_out, cg, k = w.shape
    groups = _int("groups", groups, 1)
    stride = _int("stride", stride, 1)
    dilation = _int("dilation", dilation, 1)
    if c_in < 1 or c_out < 1 or k < 1:
        raise ValueError("x %s and w %s need channels and taps >= 1" % (tuple(x.shape), tuple(w.shape)))
    if c_in % groups:
        raise ValueError("groups %d does not divide x's %d channels" % (groups, c_in))
    if c_out % groups:
        raise ValueError("groups %d does not divide w's %d output channels" % (groups, c_out))
    if cg * groups != c_in:
        raise ValueError("w has shape %s: with groups %d, x's %d channels need w.shape[1] == %d" % (
            tuple(w.shape), groups, c_in, c_in // groups))
    pad_l, pad_r = _padding(padding, k, dilation, stride)
    if b is not None:
        _tensor("b", b, (1,))
        _storage("b", b)
        _same_device("b", b, device)
        if b.shape[0] != c_out:
            raise ValueError("b has shape %s, w has %d output channels" % (tuple(b.shape), c_out))
    actv, prev = _act("act", act), _act("pre", pre)
    mathv = _math(math, x.dtype)
    t_out = _out_len(t, k, stride, dilation, pad_l, pad_r)
    if t < 1 or t_out < 1:
        raise ValueError("x has %d time steps: too short for k %d, dilation %d, padding (%d, %d) (no output)" % (
            t, k, dilation, pad_l, pad_r))
    if add is not None:
        _tensor("add", add, (2, 3))
        _same_device("add", add, device)
        if add.dtype != x.dtype:
            raise TypeError("add has dtype %s: it must be x's, %s" % (add.dtype, x.dtype))
        if tuple(add.shape[-2:]) != (c_out, t_out) or (add.dim() == 3 and add.shape[0] not in (1, n)):
            raise ValueError("add has shape %s: must be [%d or 1][%d][%d] or [%d][%d] (the output's)" % (
                tuple(add.shape), n, c_out, t_out, c_out, t_out))
    spec = (c_in, c_out, groups, k, stride, dilation, pad_l, pad_r, xt, wt, mathv, prev, actv)
    return _conv1d_entry(x, w, b, add, spec)


def conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, act=None, pre=None, add=None, math=None):
    """act(F.conv1d(pre(F.pad(x, pads)), w, b, stride, 0, dilation, groups)) + add on the
    engine, differentiable (see the module's doc). x [N][C_in][T] (contiguous or a
    channel-last view), w [C_out][C_in/groups][K], b [C_out]; padding an int, (left,
    right), "causal", "valid" or "same"; act / pre None, "relu", "gelu", "silu"; add
    [N or 1][C_out][T_out] or [C_out][T_out] in x's dtype; math None (x's dtype), "f32",
    "tf32", "bf16" or "f16". Returns y [N][C_out][T_out] in x's dtype and layout."""
    try:
        tp = type(padding)
        sig = (type(x), x.shape, x.stride(), x.dtype, x.device, type(w), w.shape, w.stride(), w.dtype, w.device,
               None if b is None else (type(b), b.shape, b.stride(), b.dtype, b.device), _tsig(add),
               type(stride), stride, type(dilation), dilation, type(groups), groups,
               tp, (tuple(padding), tuple(map(type, padding))) if tp is tuple or tp is list else padding,
               type(act), act, type(pre), pre, type(math), math)
        e = _conv1d_sigs.get(sig)
    except Exception:  # not tensors, unhashable arguments: the checks say what is wrong
        sig = e = None
    if e is None:
        e = _conv1d_checked(x, w, b, stride, padding, dilation, groups, act, pre, add, math)
        if sig is not None:
            _remember(_conv1d_sigs, sig, e)
    if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (b is not None and b.requires_grad)
                                    or (add is not None and add.requires_grad)):
        return Conv1dFunction.apply(x, w, b, add, e)
    return _run_fwd(e, x, w, b, add)[0]


# ---------------------------------------------------------------- causal_conv1d

def _causal_entry(x, w, b, seq_idx, initial_states, spec, rfs):
    e = _entry(x, w, b, spec)
    e.rfs = rfs
    e.has_init = initial_states is not None
    e.seq_copy = seq_idx is not None and not seq_idx.is_contiguous()
    e.init_copy = initial_states is not None and not initial_states.is_contiguous()
    return e


class CausalConv1dFunction(torch.autograd.Function):
    """causal_conv1d as an autograd Function: apply(x, w, b, seq_idx, initial_states, spec,
    return_final_states), spec from causal_conv1d's checks; w [C][1][K] or [C][K]."""

    @staticmethod
    def forward(ctx, x, w, b, seq_idx, initial_states, spec, return_final_states):
        if type(spec) is _Entry:
            e = spec
        else:
            e = _causal_entry(x, w, b, seq_idx, initial_states, spec, bool(return_final_states))
        y, final, xe, we, b32 = _run_fwd(e, x, w, b, None, seq_idx, initial_states)
        ctx.e = e
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(xe, we, b32, seq_idx, initial_states)
        if e.rfs:
            return y, final
        return y

    @staticmethod
    def backward(ctx, gy, gfinal=None):
        xe, we, b32, seq_idx, init = ctx.saved_tensors
        e = ctx.e
        need_x, need_w, need_b, _, need_init = ctx.needs_input_grad[:5]
        need_init = need_init and e.has_init
        if not (need_x or need_w or need_b or need_init):
            return None, None, None, None, None, None, None
        if gy is not None:
            dx, dw, db, dinit = _run_bwd(e, xe, we, b32, gy, need_x, need_w, need_b, seq_idx, init, need_init)
        else:
            dx, dw, db, dinit = _run_bwd(e, xe, we, b32, None, need_x, need_w, need_b, None, None, need_init)
        if gfinal is not None and (need_x or need_init):
            # final_states = the last K-1 of [initial_states, x] along time
            t, m = e.t, e.k - 1
            s = t - m
            if need_x:
                if s >= 0:
                    dx[..., s:] += gfinal.to(dx.dtype)
                else:
                    dx += gfinal[..., -s:].to(dx.dtype)
            if need_init and s < 0:
                dinit[..., t:] += gfinal[..., :-s].to(dinit.dtype)
        return dx, dw, db, None, dinit, None, None


def _causal_checked(x, w, b, activation, seq_idx, initial_states, return_final_states):
    """causal_conv1d's checks: the entry of a call of these arguments, or TypeError /
    ValueError naming the argument at fault."""
    _tensor("x", x, (3,))
    device = _check_device(x)
    xt = _storage("x", x)
    _tensor("w", w, (2, 3))
    wt = _storage("w", w)
    _same_device("w", w, device)
    n, c, t = x.shape
    wshape = w.shape
    if len(wshape) == 3 and wshape[1] != 1:
        raise ValueError("w has shape %s: a depthwise weight is [C][K] or [C][1][K]" % (tuple(wshape),))
    if wshape[0] != c:
        raise ValueError("w has shape %s: x has %d channels" % (tuple(wshape), c))
    k = wshape[-1]
    if c < 1 or k < 1:
        raise ValueError("x %s and w %s need channels and taps >= 1" % (tuple(x.shape), tuple(wshape)))
    if t < 1:
        raise ValueError("x has %d time steps: needs at least 1" % t)
    if b is not None:
        _tensor("b", b, (1,))
        _storage("b", b)
        _same_device("b", b, device)
        if b.shape[0] != c:
            raise ValueError("b has shape %s: x has %d channels" % (tuple(b.shape), c))
    if activation is True or activation == "swish":
        activation = "silu"
    elif activation is False:
        activation = None
    actv = _act("activation", activation)
    if seq_idx is not None:
        _tensor("seq_idx", seq_idx, (2,))
        _same_device("seq_idx", seq_idx, device)
        if seq_idx.dtype != torch.int32:
            raise TypeError("seq_idx has dtype %s: it must be torch.int32" % (seq_idx.dtype,))
        if tuple(seq_idx.shape) != (n, t):
            raise ValueError("seq_idx has shape %s: must be [N][T] = [%d][%d]" % (tuple(seq_idx.shape), n, t))
        if initial_states is not None or return_final_states:
            raise ValueError("seq_idx cannot be combined with initial_states or return_final_states "
                             "(as in causal-conv1d)")
    if (initial_states is not None or return_final_states) and k < 2:
        raise ValueError("initial_states / final_states need K >= 2 (they hold K-1 = %d steps)" % (k - 1))
    if initial_states is not None:
        _tensor("initial_states", initial_states, (3,))
        _same_device("initial_states", initial_states, device)
        if initial_states.dtype != x.dtype:
            raise TypeError("initial_states has dtype %s: it must be x's, %s" % (initial_states.dtype, x.dtype))
        if tuple(initial_states.shape) != (n, c, k - 1):
            raise ValueError("initial_states has shape %s: must be [N][C][K-1] = [%d][%d][%d]" % (
                tuple(initial_states.shape), n, c, k - 1))
    spec = (c, c, c, k, 1, 1, k - 1, 0, xt, wt, _MATH_OF[x.dtype], _conv.ACT_NONE, actv)
    return _causal_entry(x, w, b, seq_idx, initial_states, spec, bool(return_final_states))


def causal_conv1d(x, w, b=None, activation=None, seq_idx=None, initial_states=None, return_final_states=False):
    """Dao-AILab/causal-conv1d's causal_conv1d_fn on the engine, differentiable: the
    depthwise causal conv act(F.conv1d(F.pad(x, (K-1, 0)), w.unsqueeze(1), b, groups=C))
    with x [N][C][T] (contiguous, or a channel-last view), w [C][K] or [C][1][K], b [C];
    activation None, "silu" / "swish" / True, "relu" or "gelu"; seq_idx int32 [N][T];
    initial_states [N][C][K-1] in x's dtype. Returns y [N][C][T] in x's dtype and layout,
    or (y, final_states [N][C][K-1]) with return_final_states."""
    try:
        sig = (type(x), x.shape, x.stride(), x.dtype, x.device, type(w), w.shape, w.stride(), w.dtype, w.device,
               None if b is None else (type(b), b.shape, b.stride(), b.dtype, b.device),
               type(activation), activation, _tsig(seq_idx), _tsig(initial_states),
               type(return_final_states), return_final_states)
        e = _causal_sigs.get(sig)
    except Exception:  # not tensors, unhashable arguments: the checks say what is wrong
        sig = e = None
    if e is None:
        e = _causal_checked(x, w, b, activation, seq_idx, initial_states, return_final_states)
        if sig is not None:
            _remember(_causal_sigs, sig, e)
    if e.seq_copy:
        seq_idx = seq_idx.contiguous()
    if e.init_copy:
        initial_states = initial_states.contiguous()
    if torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (b is not None and b.requires_grad)
                                    or (initial_states is not None and initial_states.requires_grad)):
        return CausalConv1dFunction.apply(x, w, b, seq_idx, initial_states, e, e.rfs)
    y, final, _, _, _ = _run_fwd(e, x, w, b, None, seq_idx, initial_states)
    return (y, final) if e.rfs else y

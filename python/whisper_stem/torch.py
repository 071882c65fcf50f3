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
  elements), db likewise returned in b's dtype.
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


def _needs_graph(x, w, b, t):
    return torch.is_grad_enabled() and (x.requires_grad or w.requires_grad or (b is not None and b.requires_grad)
                                        or (t is not None and t.requires_grad))


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


def _nlc_strides(c, t):
    return (t * c, 1, c)


def _in_layout(t, layout):
    """t [N][C][T] as it is when its strides are the layout's, else a copy in it."""
    if _layout_of(t) == layout:
        return t
    if layout == _conv.NCL:
        return t.contiguous()
    return t.transpose(1, 2).contiguous().transpose(1, 2)


def _empty(n, c, t, layout, dtype, device):
    """A new [N][C][T] tensor in the layout: contiguous, or channel-last strides."""
    if layout == _conv.NCL:
        return torch.empty((n, c, t), dtype=dtype, device=device)
    return torch.empty_strided((n, c, t), _nlc_strides(c, t), dtype=dtype, device=device)


def _dense(t):
    return t if t.is_contiguous() else t.contiguous()


def _ptr(t):
    return t.data_ptr() if t is not None else None


# ---------------------------------------------------------------- the engine

# The prototypes take structures by pointer (POINTER argtypes): ctypes passes an instance
# by reference itself, cheaper than a byref() per argument.
_conv_run = _conv.conv_run
_gpu_enqueue = _conv.gpu_conv_enqueue
_tls = threading.local()  # .err: this thread's ws_err, reused call after call


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


# the current stream's CUstream without making a torch.cuda.Stream object (PyTorch 2.x has
# it; torch.cuda.current_stream(device).cuda_stream is the same number)
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream_handle(device):
    """PyTorch's current stream on `device` as the CUstream the engine takes."""
    if _raw_stream is not None:
        s = _raw_stream(device.index)
    else:
        s = torch.cuda.current_stream(device).cuda_stream
    return s if s else _CU_STREAM_LEGACY


def _engine_call(device, key, args):
    """One run of the plan of `key` with `args` (a _conv.Args of data_ptr()s): on the CPU
    on this thread, or on device's GPU enqueued on its current stream."""
    try:
        err = _tls.err
    except AttributeError:
        err = _tls.err = _conv.CError()
    if device.type == "cpu":
        plan = _cpu_plan(key, max(1, torch.get_num_threads()))
        if _conv_run(plan, args, err) != 0:
            _raise(err, "ws_conv_run failed")
        return
    # The engine (ws_gpu_open too) makes its device's primary context current on this
    # thread: where that is not PyTorch's current device, PyTorch's is made current again.
    current = torch.cuda.current_device()
    index = device.index if device.index is not None else current
    try:
        g = _gpu(index)
        stream = _stream_handle(device)
        with g.lock:
            plan = g.plans.get((key, stream))
            if plan is None:
                plan = _conv.gpu_conv_new(g.handle, _conv.desc(key), None, None, err)
                if not plan:
                    _raise(err, "ws_gpu_conv_new failed")
                g.plans[(key, stream)] = plan
            rc = _gpu_enqueue(plan, args, stream, err)
    finally:
        if current != index:
            torch.cuda.set_device(current)
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


def _bias32(b):
    if b is None:
        return None
    if b.dtype != torch.float32:
        b = b.float()
    return b if b.is_contiguous() else b.contiguous()


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


def _fwd(x, w, b, add, spec, seq_idx=None, initial_states=None, want_final=False):
    """The engine's forward: y (and final_states), and the x, w, b it read. w is used by
    its memory ([C_out][Cg][K] contiguous; [C][K] is the same memory as [C][1][K])."""
    c_in, c_out, groups, k, stride, dilation, pad_l, pad_r = spec[:8]
    shape = x.shape
    n, t = shape[0], shape[2]
    layout = _layout(shape, x.stride())
    if layout is None:
        x, layout = x.contiguous(), _conv.NCL
    if not w.is_contiguous():
        w = w.contiguous()
    b32 = _bias32(b)
    t_out = _out_len(t, k, stride, dilation, pad_l, pad_r)
    dtype, device = x.dtype, x.device
    if layout == _conv.NCL:
        y = torch.empty((n, c_out, t_out), dtype=dtype, device=device)
    else:
        y = torch.empty_strided((n, c_out, t_out), (t_out * c_out, 1, c_out), dtype=dtype, device=device)
    final = torch.empty((n, c_in, k - 1), dtype=dtype, device=device) if want_final else None
    if n == 0:
        return y, final, x, w, b32
    a = _conv.Args()
    a.n, a.t_in = n, t
    a.x, a.w, a.y = x.data_ptr(), w.data_ptr(), y.data_ptr()
    if b32 is not None:
        a.b = b32.data_ptr()
    keep = None
    if add is not None:
        keep, a.add_batch_stride = _add_arg(add, n, c_out, t_out, layout)
        a.add = keep.data_ptr()
    if seq_idx is not None:
        a.seq_idx = seq_idx.data_ptr()
    if initial_states is not None:
        a.initial_states = initial_states.data_ptr()
    if final is not None:
        a.final_states = final.data_ptr()
    _engine_call(x.device, _key(_conv.FWD, spec, layout), a)
    del keep  # held until the engine has read it on the CPU; on a GPU the stream orders reuse
    return y, final, x, w, b32


def _bwd(x, w, b32, gy, spec, need_x, need_w, need_b, seq_idx=None, initial_states=None,
         need_init=False):
    """The engine's backward: dx (x's layout and dtype), dw and db (float32), dinitial_states."""
    c_in, c_out, groups, k, stride, dilation, pad_l, pad_r = spec[:8]
    n, _, t = x.shape
    layout = _layout_of(x)  # x is as _fwd ran it: NCL or NLC
    dx = _empty(n, c_in, t, layout, x.dtype, x.device) if need_x else None
    dw = torch.empty(w.shape, dtype=torch.float32, device=x.device) if need_w else None
    db = torch.empty((c_out,), dtype=torch.float32, device=x.device) if need_b else None
    dinit = torch.empty((n, c_in, k - 1), dtype=x.dtype, device=x.device) if need_init else None
    if n == 0 or gy is None:
        for g in (dx, dw, db, dinit):
            if g is not None:
                g.zero_()
        return dx, dw, db, dinit
    if not (need_x or need_w or need_b):
        # only dinitial_states: the engine computes at least one of dx, dw, db
        db = torch.empty((c_out,), dtype=torch.float32, device=x.device)
    dy = _in_layout(gy if gy.dtype == x.dtype else gy.to(x.dtype), layout)
    a = _conv.Args()
    a.n, a.t_in = n, t
    a.x, a.w, a.b, a.dy = x.data_ptr(), w.data_ptr(), _ptr(b32), dy.data_ptr()
    a.dx, a.dw, a.db = _ptr(dx), _ptr(dw), _ptr(db)
    if seq_idx is not None:
        a.seq_idx = seq_idx.data_ptr()
    if initial_states is not None:
        a.initial_states = initial_states.data_ptr()
    if dinit is not None:
        a.dinitial_states = dinit.data_ptr()
    _engine_call(x.device, _key(_conv.BWD, spec, layout), a)
    return dx, dw, (db if need_b else None), dinit


def _as_dtype(g, like):
    return g if g is None or g.dtype == like.dtype else g.to(like.dtype)


# ---------------------------------------------------------------- conv1d

class Conv1dFunction(torch.autograd.Function):
    """conv1d as an autograd Function: apply(x, w, b, add, spec), spec from conv1d's checks."""

    @staticmethod
    def forward(ctx, x, w, b, add, spec):
        y, _, xe, we, b32 = _fwd(x, w, b, add, spec)
        ctx.spec = spec
        ctx.w_meta = (w.shape, w.dtype)
        ctx.b_dtype = b.dtype if b is not None else None
        ctx.add_shape = add.shape if add is not None else None
        ctx.save_for_backward(xe, we, b32)
        return y

    @staticmethod
    def backward(ctx, gy):
        xe, we, b32 = ctx.saved_tensors
        need_x, need_w, need_b, need_add = ctx.needs_input_grad[:4]
        dx = dw = db = dadd = None
        if need_x or need_w or need_b:
            pre = ctx.spec[11]
            if pre != _conv.ACT_NONE:
                raise RuntimeError(
                    "whisper_stem.torch.conv1d: pre=%r has no backward in the engine; for gradients "
                    "apply it in torch (conv1d(F.relu(x), ...)), or run under torch.no_grad()" % (
                        {v: k for k, v in _ACTS.items()}[pre],))
            dx, dw, db, _ = _bwd(xe, we, b32, gy, ctx.spec, need_x, need_w, need_b)
            if dw is not None:
                dw = dw.reshape(ctx.w_meta[0]).to(ctx.w_meta[1])
            if db is not None and ctx.b_dtype != torch.float32:
                db = db.to(ctx.b_dtype)
        if need_add:
            dadd = gy.sum_to_size(ctx.add_shape)
        return dx, dw, db, dadd, None


def conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1, act=None, pre=None, add=None, math=None):
    """act(F.conv1d(pre(F.pad(x, pads)), w, b, stride, 0, dilation, groups)) + add on the
    engine, differentiable (see the module's doc). x [N][C_in][T] (contiguous or a
    channel-last view), w [C_out][C_in/groups][K], b [C_out]; padding an int, (left,
    right), "causal", "valid" or "same"; act / pre None, "relu", "gelu", "silu"; add
    [N or 1][C_out][T_out] or [C_out][T_out] in x's dtype; math None (x's dtype), "f32",
    "tf32", "bf16" or "f16". Returns y [N][C_out][T_out] in x's dtype and layout."""
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
    if _needs_graph(x, w, b, add):
        return Conv1dFunction.apply(x, w, b, add, spec)
    return _fwd(x, w, b, add, spec)[0]


# ---------------------------------------------------------------- causal_conv1d

class CausalConv1dFunction(torch.autograd.Function):
    """causal_conv1d as an autograd Function: apply(x, w, b, seq_idx, initial_states, spec,
    return_final_states), spec from causal_conv1d's checks; w [C][1][K] or [C][K]."""

    @staticmethod
    def forward(ctx, x, w, b, seq_idx, initial_states, spec, return_final_states):
        y, final, xe, we, b32 = _fwd(x, w, b, None, spec, seq_idx, initial_states, return_final_states)
        ctx.spec = spec
        ctx.w_meta = (w.shape, w.dtype)
        ctx.b_dtype = b.dtype if b is not None else None
        ctx.has_init = initial_states is not None
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(xe, we, b32, seq_idx, initial_states)
        if return_final_states:
            return y, final
        return y

    @staticmethod
    def backward(ctx, gy, gfinal=None):
        xe, we, b32, seq_idx, init = ctx.saved_tensors
        need_x, need_w, need_b, _, need_init = ctx.needs_input_grad[:5]
        need_init = need_init and ctx.has_init
        if not (need_x or need_w or need_b or need_init):
            return None, None, None, None, None, None, None
        dx, dw, db, dinit = None, None, None, None
        if gy is not None:
            dx, dw, db, dinit = _bwd(xe, we, b32, gy, ctx.spec, need_x, need_w, need_b, seq_idx, init, need_init)
        else:
            n, c, t = xe.shape
            if need_x:
                dx = torch.zeros_like(xe)
            if need_w:
                dw = torch.zeros(we.shape, dtype=torch.float32, device=xe.device)
            if need_b:
                db = torch.zeros((c,), dtype=torch.float32, device=xe.device)
            if need_init:
                dinit = torch.zeros_like(init)
        if gfinal is not None and (need_x or need_init):
            # final_states = the last K-1 of [initial_states, x] along time
            t, m = xe.shape[2], ctx.spec[3] - 1
            s = t - m
            if need_x:
                if s >= 0:
                    dx[..., s:] += gfinal.to(dx.dtype)
                else:
                    dx += gfinal[..., -s:].to(dx.dtype)
            if need_init and s < 0:
                dinit[..., t:] += gfinal[..., :-s].to(dinit.dtype)
        if dw is not None:
            dw = dw.reshape(ctx.w_meta[0]).to(ctx.w_meta[1])
        if db is not None and ctx.b_dtype != torch.float32:
            db = db.to(ctx.b_dtype)
        return dx, dw, db, None, dinit, None, None


def causal_conv1d(x, w, b=None, activation=None, seq_idx=None, initial_states=None, return_final_states=False):
    """Dao-AILab/causal-conv1d's causal_conv1d_fn on the engine, differentiable: the
    depthwise causal conv act(F.conv1d(F.pad(x, (K-1, 0)), w.unsqueeze(1), b, groups=C))
    with x [N][C][T] (contiguous, or a channel-last view), w [C][K] or [C][1][K], b [C];
    activation None, "silu" / "swish" / True, "relu" or "gelu"; seq_idx int32 [N][T];
    initial_states [N][C][K-1] in x's dtype. Returns y [N][C][T] in x's dtype and layout,
    or (y, final_states [N][C][K-1]) with return_final_states."""
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
        seq_idx = _dense(seq_idx)
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
        initial_states = _dense(initial_states)
    spec = (c, c, c, k, 1, 1, k - 1, 0, xt, wt, _MATH_OF[x.dtype], _conv.ACT_NONE, actv)
    rfs = bool(return_final_states)
    if _needs_graph(x, w, b, initial_states):
        return CausalConv1dFunction.apply(x, w, b, seq_idx, initial_states, spec, rfs)
    y, final, _, _, _ = _fwd(x, w, b, None, spec, seq_idx, initial_states, rfs)
    return (y, final) if rfs else y

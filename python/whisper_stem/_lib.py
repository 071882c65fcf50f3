"""The shared library libwhisper-stem.so.0 through ctypes: finding it, the C
prototypes of include/whisper_stem.h, errors, and arrays handed back to Python.

Every call goes through ctypes.CDLL, which releases the GIL for the duration of
the foreign call: other Python threads run while the library computes.

Arrays: the library returns a whisper_stem_array whose float32 buffer it
allocated; ``take`` wraps that buffer as a NumPy array without copying it and
frees it (whisper_stem_array_free) when the NumPy array is garbage collected.
"""

import ctypes
import ctypes.util
import operator
import os
import threading
import weakref

import numpy as np

#: the library's file name, as its soname
LIB_NAME = "libwhisper-stem.so.0"

# enum in whisper_stem.h
PAD_AUDIO = 0
PAD_NONE = 1
PAD_MEL0 = 2


class Error(RuntimeError):
    """A failure reported by libwhisper-stem; ``str(e)`` is the library's message
    (the input's path and the problem, e.g. ``no.wav: No such file or directory``)."""


class _CError(ctypes.Structure):
    _fields_ = [("msg", ctypes.c_char * 512)]


class _CParams(ctypes.Structure):
    _fields_ = [
        ("model", ctypes.c_char_p),
        ("device", ctypes.c_char_p),
        ("precision", ctypes.c_char_p),
        ("threads", ctypes.c_int),
        ("n_mels", ctypes.c_int),
        ("pad", ctypes.c_int),
        ("pos", ctypes.c_int),
    ]


class _CAudioOpts(ctypes.Structure):
    _fields_ = [
        ("decode", ctypes.c_char_p),
        ("start", ctypes.c_double),
        ("duration", ctypes.c_double),
    ]


class _CArray(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * 3),
    ]


class _CDeviceArray(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * 3),
    ]


class _CInfo(ctypes.Structure):
    _fields_ = [
        ("windows", ctypes.c_int),
        ("content_frames", ctypes.c_int),
        ("valid_ctx", ctypes.c_int),
        ("duration_s", ctypes.c_double),
        ("src_rate", ctypes.c_int),
        ("src_channels", ctypes.c_int),
    ]

    def as_dict(self):
        return {
            "windows": self.windows,
            "valid_ctx": self.valid_ctx,
            "content_frames": self.content_frames,
            "duration_s": self.duration_s,
            "src_rate": self.src_rate,
            "src_channels": self.src_channels,
        }


#: whisper_stem_device_alloc: (user, bytes) -> device pointer
DEVICE_ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def _candidates():
    """(description, path or name) in the order they are tried."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    shipped = os.path.join(here, LIB_NAME)
    if os.path.exists(shipped):
        out.append(("a copy inside the package", shipped))
    try:
        from . import _config  # written by `make install-python`
        libdir = getattr(_config, "LIBDIR", None)
        if libdir:
            out.append(("the library directory of the install", os.path.join(libdir, LIB_NAME)))
    except ImportError:
        pass
    found = ctypes.util.find_library("whisper-stem")
    if found:
        out.append(("ctypes.util.find_library('whisper-stem')", found))
    out.append(("the dynamic loader's search path", LIB_NAME))
    return out


def _open():
    env = os.environ.get("WHISPER_STEM_LIB")
    if env:
        # The user named one library: that one or nothing.
        try:
            return ctypes.CDLL(env), env
        except OSError as e:
            raise ImportError(
                "whisper_stem: cannot load the library named by WHISPER_STEM_LIB=%s: %s" % (env, e)
            ) from e
    tried = []
    for what, path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("  %s: %s" % (what, e))
    raise ImportError(
        "whisper_stem: cannot find %s (build it with `make`, install it with `make install`, "
        "or set WHISPER_STEM_LIB to its path). Tried:\n%s" % (LIB_NAME, "\n".join(tried))
    )


lib, path = _open()

_P = ctypes.c_void_p
_ARR = ctypes.POINTER(_CArray)
_ERR = ctypes.POINTER(_CError)
_SIZE = ctypes.c_size_t
_SIZE_P = ctypes.POINTER(ctypes.c_size_t)


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


version = _proto("whisper_stem_version", ctypes.c_char_p)
default_params = _proto("whisper_stem_default_params", _CParams)
new = _proto("whisper_stem_new", _P, ctypes.POINTER(_CParams), _ERR)
free = _proto("whisper_stem_free", None, _P)
n_mels = _proto("whisper_stem_n_mels", ctypes.c_int, _P)
d_model = _proto("whisper_stem_d_model", ctypes.c_int, _P)
device = _proto("whisper_stem_device", ctypes.c_char_p, _P)
load_audio = _proto("whisper_stem_load_audio", ctypes.c_int, ctypes.c_char_p, _ARR, _ERR)
log_mel = _proto("whisper_stem_log_mel", ctypes.c_int, _P, _P, _SIZE, ctypes.c_int, ctypes.c_int, _ARR, _ERR)
embed_pcm = _proto("whisper_stem_embed_pcm", ctypes.c_int, _P, _P, _SIZE, ctypes.c_int, ctypes.c_int, _ARR, _ERR)
embed_mel = _proto("whisper_stem_embed_mel", ctypes.c_int, _P, _P, ctypes.c_int, ctypes.c_int64, _ARR, _ERR)
embed_file = _proto("whisper_stem_embed_file", ctypes.c_int, _P, ctypes.c_char_p, _ARR, _ERR)
_OPTS = ctypes.POINTER(_CAudioOpts)
load_audio_opts = _proto("whisper_stem_load_audio_opts", ctypes.c_int, ctypes.c_char_p, _OPTS, _ARR, _ERR)
load_audio_memory = _proto("whisper_stem_load_audio_memory", ctypes.c_int, _P, _SIZE, ctypes.c_char_p, _OPTS,
                           _ARR, _ERR)
embed_file_opts = _proto("whisper_stem_embed_file_opts", ctypes.c_int, _P, ctypes.c_char_p, _OPTS, _ARR, _ERR)
embed_memory = _proto("whisper_stem_embed_memory", ctypes.c_int, _P, _P, _SIZE, ctypes.c_char_p, _OPTS, _ARR,
                      _ERR)
set_decode = _proto("whisper_stem_set_decode", ctypes.c_int, _P, ctypes.c_char_p, _ERR)
array_free = _proto("whisper_stem_array_free", None, _ARR)
batch_open = _proto("whisper_stem_batch_open", _P, _P, ctypes.POINTER(ctypes.c_char_p), _SIZE, _ERR)
batch_next = _proto("whisper_stem_batch_next", ctypes.c_int, _P, _ARR, ctypes.POINTER(_SIZE), _ERR)
batch_close = _proto("whisper_stem_batch_close", None, _P)
batch_info = _proto("whisper_stem_batch_info", ctypes.c_int, _P, ctypes.POINTER(_CInfo))
batch_to_device = _proto("whisper_stem_batch_to_device", ctypes.c_int, _P, _P, DEVICE_ALLOC, _P, _ERR)
batch_next_device = _proto("whisper_stem_batch_next_device", ctypes.c_int, _P, ctypes.POINTER(_CDeviceArray),
                           ctypes.POINTER(_SIZE), _ERR)
pcm_info = _proto("whisper_stem_pcm_info", ctypes.c_int, _P, _SIZE, ctypes.c_int, ctypes.c_int,
                  ctypes.POINTER(_CInfo), _ERR)
log_mel_batch = _proto("whisper_stem_log_mel_batch", ctypes.c_int, _P, ctypes.POINTER(ctypes.c_void_p), _SIZE_P,
                       _SIZE, ctypes.c_int, ctypes.c_int, _P, _ERR)
set_mel_device = _proto("whisper_stem_set_mel_device", ctypes.c_int, _P, ctypes.c_char_p, _ERR)
mel_device = _proto("whisper_stem_mel_device", ctypes.c_char_p, _P)
embed_pcm_device = _proto("whisper_stem_embed_pcm_device", ctypes.c_int, _P, _P, _SIZE, ctypes.c_int,
                          ctypes.c_int, _P, DEVICE_ALLOC, _P, ctypes.POINTER(_CDeviceArray), _ERR)


def new_error():
    """A zeroed error buffer for one call (one per call: calls may run in many threads)."""
    return _CError()


def raise_error(err, what):
    """Raise Error with the library's message, or `what` when it left none."""
    msg = err.msg.decode("utf-8", "replace")
    raise Error(msg or what)


def fspath(path, what="path"):
    """A path (str, bytes, os.PathLike) as the bytes the C library opens.

    ValueError naming `what` when it holds a NUL byte: C would read the path only up to
    it, and open another file."""
    b = os.fsencode(os.fspath(path))
    if b"\0" in b:
        raise ValueError("%s %r holds a NUL byte (no file name can)" % (what, path))
    return b


DECODES = ("default", "openai")


def audio_opts(start, duration, decode):
    """The library's whisper_stem_audio_opts for a segment and a decoder (decode None: the
    context's). ValueError naming the argument for a bad one."""
    o = _CAudioOpts()
    if decode is not None:
        if decode not in DECODES:
            raise ValueError("decode must be 'default' or 'openai', got %r" % (decode,))
        o.decode = decode.encode()
    for name, v in (("start", start), ("duration", duration)):
        if v is None:
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise TypeError("%s must be a number of seconds, got %r" % (name, v)) from None
        if not (f >= 0 and f < 1e9):
            raise ValueError("%s must be 0 or more seconds, got %r" % (name, v))
        setattr(o, name, f)
    return o


def audio_source(source, what="source"):
    """What load_audio and embed_file take, as ("path", the path's bytes, None) or
    ("memory", a bytes-like object, its name for messages):
    - a path: str or os.PathLike;
    - the contents of a file: bytes, bytearray or memoryview (read in place, not copied);
    - a binary file-like object: anything with read(), read to its end."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return "memory", source, "(memory)"
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError("%s: read() gave %s, not bytes (open the file in binary mode)"
                            % (what, type(data).__name__))
        name = getattr(source, "name", None)
        return "memory", data, name if isinstance(name, str) else "(file object)"
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError("%s must be a path, the bytes of a file or a binary file object, got %s"
                        % (what, type(source).__name__))
    return "path", fspath(source, "path"), None


def memory_view(data):
    """(pointer, size, keepalive) of a bytes-like object for the library to read in place
    (C-contiguous; a copy otherwise)."""
    mv = memoryview(data)
    if not mv.c_contiguous:
        mv = memoryview(mv.tobytes())
    mv = mv.cast("B")
    if mv.nbytes == 0:
        return None, 0, mv
    if mv.readonly:  # bytes, or a read-only buffer: ctypes reads it through a char array view
        obj = mv.obj if isinstance(mv.obj, bytes) and len(mv.obj) == mv.nbytes else mv.tobytes()
        return ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p), mv.nbytes, obj
    buf = (ctypes.c_char * mv.nbytes).from_buffer(mv)
    return ctypes.cast(buf, ctypes.c_void_p), mv.nbytes, (buf, mv)


def c_str(s, what):
    """A str option (device, precision) as the C string the library reads; ValueError
    naming `what` on a NUL byte."""
    b = s.encode()
    if b"\0" in b:
        raise ValueError("%s %r holds a NUL byte" % (what, s))
    return b


INT_MIN = -(2 ** 31)
INT_MAX = 2 ** 31 - 1


def c_int(value, what, lo=INT_MIN, hi=INT_MAX):
    """value (an integer: int, NumPy integer, anything with __index__) checked to lie in
    lo .. hi (at most a C int's range) before ctypes sees it: ctypes would keep the low
    32 bits of a larger one (2**32 + 44100 would be 44100). TypeError for a non-integer,
    OverflowError beyond a C int, ValueError outside lo .. hi; each names `what`."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, got %r" % (what, value)) from None
    if not INT_MIN <= v <= INT_MAX:
        raise OverflowError("%s %d does not fit the library's int (%d .. %d)" % (what, v, INT_MIN, INT_MAX))
    if not lo <= v <= hi:
        raise ValueError("%s %d: must be %d .. %d" % (what, v, lo, hi))
    return v


def _release(carr):
    array_free(ctypes.byref(carr))


def take(carr):
    """The library's array as a NumPy float32 array of its shape, without a copy.

    The NumPy array wraps the library's buffer; the buffer is freed by
    whisper_stem_array_free once nothing refers to the array (or to views of it).
    """
    shape = tuple(int(carr.shape[i]) for i in range(carr.ndim))
    n = 1
    for s in shape:
        n *= s
    if n == 0 or not carr.data:
        _release(carr)
        return np.zeros(shape, dtype=np.float32)
    buf = (ctypes.c_float * n).from_address(carr.data)
    # `carr` (the pointer's owner) lives as long as `buf`, which the NumPy array
    # keeps as its base; the finalizer frees the C buffer when `buf` goes.
    weakref.finalize(buf, _release, carr)
    return np.frombuffer(buf, dtype=np.float32).reshape(shape)


class Context:
    """One whisper_stem context: owns the C pointer and frees it once.

    The library lets several threads use one context at once (log-Mels run
    concurrently, the stem one call at a time under the library's own lock), so
    calls take no Python lock; they only count themselves in and out (acquire /
    release), so that close() waits for calls in flight instead of freeing the
    context under them, and closes the batches still open on it first.
    """

    def __init__(self, model=None, device=None, precision=None, threads=0, n_mels=0, pad=PAD_AUDIO, pos=False):
        p = default_params()
        p.model = fspath(model, "model") if model is not None else None
        p.device = c_str(device, "device") if device is not None else None
        p.precision = c_str(precision, "precision") if precision is not None else None
        p.threads = c_int(threads, "threads")
        p.n_mels = c_int(n_mels, "n_mels")
        p.pad = c_int(pad, "pad")
        p.pos = 1 if pos else 0
        err = new_error()
        h = new(ctypes.byref(p), ctypes.byref(err))
        if not h:
            raise_error(err, "whisper_stem_new failed")
        self.handle = h
        self.pad = p.pad
        self._cv = threading.Condition()
        self._busy = 0
        self.batches = weakref.WeakSet()

    def acquire(self):
        """The C handle, counted as in use until release(); ValueError once closed."""
        with self._cv:
            if self.handle is None:
                raise ValueError("the Frontend is closed")
            self._busy += 1
            return self.handle

    def release(self):
        with self._cv:
            self._busy -= 1
            if self._busy == 0:
                self._cv.notify_all()

    def close(self):
        """Close open batches, wait for calls in flight, free the context. Idempotent."""
        for b in list(self.batches):
            b.close()
        with self._cv:
            h, self.handle = self.handle, None
            while self._busy:
                self._cv.wait()
        if h:
            free(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

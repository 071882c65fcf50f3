"""whisper_stem: Whisper's audio frontend (16 kHz audio -> log-Mel -> conv stem) from Python.

A thin layer over the C library ``libwhisper-stem.so.0`` (ctypes, no compiler needed),
NumPy arrays in and out::

    import whisper_stem as ws

    audio = ws.load_audio("talk.flac")             # float32 [n], 16 kHz mono
    mel = ws.log_mel(audio)                        # float32 [80, 3000]: openai's log_mel_spectrogram(pad_or_trim(audio))
    feats = ws.features([a1, a2])                  # float32 [2, 80, 3000]: as WhisperFeatureExtractor(...).input_features

    with ws.Frontend("tiny.gguf", device="cpu") as fe:
        emb = fe.embed(audio)                      # float32 [1500, 384]: the encoder stem's output
        for emb in fe.embed_files(paths):          # the library's pipeline over many files, in order
            ...

PyTorch operators over the library's 1-D convolution engine, differentiable, on CPU and
CUDA tensors: ``import whisper_stem.torch`` (conv1d, causal_conv1d; see its doc). Importing
whisper_stem alone does not import torch.

Threads: every call into the library releases the GIL (ctypes), so Python threads
(DataLoader workers, ``datasets.map(num_proc=...)`` threads, a ThreadPoolExecutor)
compute in parallel: log-Mels of one context run concurrently, while one context runs
its conv stem one call at a time (it already uses every CPU thread, or the GPU).

The library is found, in this order: the path in ``$WHISPER_STEM_LIB``; a copy inside this
package; the library directory recorded by ``make install-python``;
``ctypes.util.find_library("whisper-stem")``; ``libwhisper-stem.so.0`` through the dynamic
loader. Failing all of them, importing this module raises ImportError naming each one tried.

Tested by python/tests/test_whisper_stem.py (make test-python): the command's bytes for
log_mel and embed (test_log_mel_is_the_commands_bytes, test_embed_file_is_the_commands_bytes,
...), openai's math in float64 and in torch within docs/spec.md's 1e-4 (2e-4 between two float32
computations), HF's extractor math (test_matches_hf_extractor_math, and transformers itself
where it imports), four threads giving the same bytes, the GIL released, embed_files' order
and errors, the offline pip install and make install-python; python/tests/
test_lifetime_and_inputs.py: close() from another thread during a step, an iterator keeping
its Frontend, and the argument checks (NUL bytes, ints beyond a C int, [channels, n], []).
"""

import concurrent.futures
import ctypes
import operator
import os
import threading

import numpy as np

from . import _lib
from ._lib import Error

__all__ = [
    "Error",
    "Frontend",
    "features",
    "library_version",
    "load_audio",
    "log_mel",
    "N_SAMPLES",
    "N_FRAMES",
    "SAMPLE_RATE",
]

__version__ = "0.1.0"

#: the rate every function works at, in Hz (Whisper's)
SAMPLE_RATE = 16000
#: samples in one 30 s window at 16 kHz (openai's N_SAMPLES, HF's n_samples)
N_SAMPLES = 480000
#: log-Mel frames (hop 160) in one 30 s window
N_FRAMES = 3000

_PADS = {"audio": _lib.PAD_AUDIO, "none": _lib.PAD_NONE, "mel0": _lib.PAD_MEL0}

# Integer PCM -> float as the library decodes files: x / 2^(bits-1) (int16 / 32768), not requantised.
_INT_SCALE = {
    np.dtype(np.int8): (0.0, 1.0 / 128),
    np.dtype(np.uint8): (128.0, 1.0 / 128),  # 8-bit WAV is unsigned, silence at 128
    np.dtype(np.int16): (0.0, 1.0 / 32768),
    np.dtype(np.int32): (0.0, 1.0 / 2147483648),
}


def library_version():
    """The version string of the loaded C library (``whisper_stem_version()``), e.g. "0.4.0"."""
    return _lib.version().decode()


def library_path():
    """The path or name the C library was loaded from."""
    return _lib.path


def _pad_mode(pad):
    try:
        return _PADS[pad]
    except (KeyError, TypeError):
        raise ValueError("pad must be 'audio', 'mel0' or 'none', got %r" % (pad,)) from None


def _rate(sample_rate):
    """sample_rate as the C int the library takes: a whole number of Hz (TypeError
    otherwise), within a C int (OverflowError: never wrapped); the library checks the rest."""
    if isinstance(sample_rate, float) and sample_rate.is_integer():
        sample_rate = int(sample_rate)
    try:
        operator.index(sample_rate)
    except TypeError:
        raise TypeError("sample_rate must be a whole number of Hz, got %r" % (sample_rate,)) from None
    return _lib.c_int(sample_rate, "sample_rate")


def _as_pcm(audio):
    """audio as a C-contiguous float32 array [n] or [n, channels] and its channel count.

    float32 is used as is (no copy when contiguous); other float types are converted to
    float32; int8, int16, int32 are scaled by 1 / 2^(bits-1) and uint8 (8-bit WAV) as
    (x - 128) / 128, the way the library decodes integer PCM files. Other types: TypeError.
    """
    a = np.asarray(audio)
    if a.ndim not in (1, 2):
        raise ValueError("audio must be 1-D [n] or 2-D [n, channels], got shape %s" % (a.shape,))
    if a.ndim == 2 and a.shape[1] > a.shape[0] > 0:
        # more channels than frames: a [channels, n] array (torchaudio's, librosa's layout)
        raise ValueError(
            "audio of shape %s looks like [channels, n] (torchaudio's, librosa's layout) or a batch of clips: "
            "expected mono samples [n] or [n, channels], one row per frame; pass x.T for [n, channels], "
            "x.mean(axis=0) for mono, or for a batch call features(x) (log-Mels) or Frontend.embed_batch(list(x))"
            % (a.shape,))
    if a.dtype != np.float32:
        if a.dtype.kind == "f":
            a = a.astype(np.float32)
        elif a.dtype in _INT_SCALE:
            offset, scale = _INT_SCALE[a.dtype]
            f = a.astype(np.float32)
            if offset:
                f -= np.float32(offset)
            f *= np.float32(scale)
            a = f
        else:
            raise TypeError("audio must be a float, int8, uint8, int16 or int32 array, got %s" % a.dtype)
    a = np.ascontiguousarray(a)
    channels = 1 if a.ndim == 1 else a.shape[1]
    if channels < 1:
        raise ValueError("audio has no channels (shape %s)" % (a.shape,))
    return a, _lib.c_int(channels, "channels")


def _call_pcm(fn, ctx, audio, sample_rate, what):
    pcm, channels = _as_pcm(audio)
    rate = _rate(sample_rate)
    out = _lib._CArray()
    err = _lib.new_error()
    h = ctx.acquire()
    try:
        r = fn(h, pcm.ctypes.data, pcm.shape[0], rate, channels, ctypes.byref(out), ctypes.byref(err))
    finally:
        ctx.release()
    if r != 0:
        _lib.raise_error(err, what + " failed")
    return _lib.take(out)


def load_audio(source, start=None, duration=None, decode="default"):
    """Decode audio to float32 [n] samples at 16 kHz, mono.

    source: a path (str, os.PathLike), the contents of a file (bytes, bytearray,
    memoryview: read in place), or a binary file object (read to its end).

    Any format libsndfile reads (WAV, FLAC, Ogg, Opus, MP3, ...), and through FFmpeg's
    libraries what it cannot (AAC/M4A/MP4, WebM, WMA, ALAC, a video file's sound); any rate
    (resampled with libsoxr), any channel count (averaged); integer PCM becomes
    x / 2^(bits-1). The same samples the ``whisper-stem`` command computes from.

    start, duration: a segment, in seconds (duration None or 0: to the end), cut at the
    file's own rate and then resampled, as the command's segment lists (docs/corpus.md).
    decode="openai": the samples openai-whisper's ``whisper.load_audio`` returns, bit for
    bit (its ffmpeg command's int16 / 32768), as the command's ``--decode openai``.

    Raises Error with the library's message (naming the path, or "(memory)" or the file
    object's name) when the audio cannot be read. Releases the GIL.
    """
    opts = _lib.audio_opts(start, duration, decode)
    kind, src, name = _lib.audio_source(source)
    out = _lib._CArray()
    err = _lib.new_error()
    if kind == "path":
        r = _lib.load_audio_opts(src, ctypes.byref(opts), ctypes.byref(out), ctypes.byref(err))
    else:
        p, n, keep = _lib.memory_view(src)
        r = _lib.load_audio_memory(p, n, name.encode("utf-8", "replace"), ctypes.byref(opts),
                                   ctypes.byref(out), ctypes.byref(err))
        del keep
    if r != 0:
        _lib.raise_error(err, "load_audio failed")
    return _lib.take(out)


_contexts = {}
_contexts_lock = threading.Lock()


def _mel_device(device):
    if device == "cpu" or device is None:
        return None
    if isinstance(device, str) and (device == "cuda" or device.startswith("cuda:")):
        return device
    raise ValueError("device must be 'cpu', 'cuda' or 'cuda:N', got %r" % (device,))


def _mel_context(n_mels, pad, threads=0, device=None):
    """The module's log-Mel-only context for (n_mels, pad, threads, device), made on first use
    and kept.

    One context serves every thread: the library runs log-Mels of one context
    concurrently (on a GPU one at a time). threads 0: each call on all the CPUs this
    process may use.
    """
    key = (_lib.c_int(n_mels, "n_mels"), pad, threads, device)
    ctx = _contexts.get(key)
    if ctx is None:
        with _contexts_lock:
            ctx = _contexts.get(key)
            if ctx is None:
                ctx = _contexts[key] = _lib.Context(n_mels=key[0], pad=pad, threads=threads, device=device)
    return ctx


def log_mel(audio, sample_rate=16000, n_mels=80, pad="audio", device="cpu"):
    """Whisper's log-Mel spectrogram of `audio`: float32 [n_mels, n_frames].

    audio: 1-D [n] samples, or 2-D [n, channels] (one row per sample frame, channels
    interleaved as soundfile returns them; averaged to mono; more channels than frames is
    taken for a [channels, n] array and refused with ValueError). float32 is used without a
    copy; float64/float16 are converted to float32; int16 / int32 / int8 are divided by
    2^(bits-1) and uint8 becomes (x - 128) / 128, as the library decodes integer files.
    sample_rate: Hz, a whole number; other rates than 16000 are resampled (libsoxr).
    Integers beyond a C int (sample_rate, n_mels) raise OverflowError, never wrap.
    n_mels: 80 or 128 bands.
    pad: "audio" (default): zero-pad the samples to a whole number of 30 s windows (at
    least one), one log-Mel over all of it, n_frames = 3000 per window; up to 30 s this
    is openai's ``log_mel_spectrogram(pad_or_trim(audio))``, bit-identical to
    ``whisper-stem --mel``. "none": no padding, n_frames = n // 160 (openai's
    ``log_mel_spectrogram(audio)``; fewer than 160 samples is an error). "mel0": openai
    ``transcribe()``'s and faster-whisper's windows: the log-Mel of the samples followed by
    30 s of zeros, its n // 160 frames in 3000-frame windows, the last filled with 0.0.

    The math is openai-whisper's (n_fft 400, periodic Hann, hop 160, centred reflect-padded
    STFT, last frame dropped, Slaney mel filters, log10 of max(x, 1e-10), floor at max - 8,
    (x + 4) / 4), within 1e-4 of a float64 reference. One context per (n_mels, pad) is made
    on first use and kept; the GIL is released during the computation, and calls from
    several Python threads run in parallel.
    device: "cpu" (default), or "cuda" / "cuda:N": the GPU's log-Mel (the command's default
    there), within 1e-4 of the CPU's; the samples are resampled on the CPU first. On a GPU
    the calls of several threads take turns.
    Raises Error with the library's message on failure.
    """
    ctx = _mel_context(n_mels, _pad_mode(pad), device=_mel_device(device))
    return _call_pcm(_lib.log_mel, ctx, audio, sample_rate, "log_mel")


def _batch_list(raw_speech):
    """HF's rule: a 2-D array, or a list/tuple whose first item is a sequence, is a batch."""
    if isinstance(raw_speech, np.ndarray):
        if raw_speech.ndim > 2:
            raise ValueError("Only mono-channel audio is supported for input to features()")
        return list(raw_speech) if raw_speech.ndim == 2 else [raw_speech]
    if isinstance(raw_speech, (list, tuple)) and (len(raw_speech) == 0 or np.ndim(raw_speech[0]) >= 1):
        return list(raw_speech)  # [] is an empty batch, not one empty example
    if hasattr(raw_speech, "__array__") and np.ndim(raw_speech) == 2:  # a torch tensor [B, n]
        return list(np.asarray(raw_speech))
    return [raw_speech]


def features(raw_speech, sampling_rate=16000, n_mels=80, device="cpu"):
    """Whisper input features for a batch: float32 [B, n_mels, 3000].

    A drop-in for Hugging Face's
    ``WhisperFeatureExtractor(feature_size=n_mels)(raw_speech, sampling_rate=16000,
    return_tensors="np").input_features``:

    - raw_speech: one 1-D array (B = 1), a 2-D array [B, n], or a list of 1-D arrays
      or lists of floats (each its own length), as HF accepts them. An empty batch
      ([], (), or a [0, n] array) gives an empty float32 array [0, n_mels, 3000] (so
      np.concatenate of batches works); one empty example ([[]]) is 30 s of silence.
    - each example is cut to its first 480000 samples (30 s) or zero-padded to 480000,
      as HF's extractor pads (``padding="max_length"``, truncation on);
    - sampling_rate must be 16000 (or None, taken as 16000): other values raise
      ValueError, as HF does; resample first (or use log_mel, which resamples).

    The numbers: HF computes, per example, the STFT (periodic Hann 400, hop 160,
    centred, reflect padding) in float64, rounds it to complex64, then power, its own
    Slaney filterbank in float64, log10 of max(x, 1e-10), drops the last frame, floors
    at the example's max - 8 and maps (x + 4) / 4. That is openai's math, which this
    computes through ``log_mel(example[:480000], pad="audio")``: float32 FFTW and
    openai's filterbank (equal to HF's to 1e-7). The two agree within 1e-4 (the tests
    hold them to it; typically a few 1e-6), not bit for bit.

    Differences on purpose: integer arrays are scaled as log_mel documents (int16 / 32768),
    where HF would take the raw integer values; HF's optional ``do_normalize`` is not
    offered.

    Threads: a batch is spread over one Python thread per CPU this process may use
    (os.sched_getaffinity), each example on one library thread, the GIL released; one
    example uses the library's threads instead. The bytes are the same either way.

    device="cuda" (or "cuda:N"): the log-Mels on the GPU, up to 16 examples to a launch
    (within 1e-4 of the CPU's); the result is still a NumPy array.
    """
    if sampling_rate is not None and sampling_rate != SAMPLE_RATE:
        raise ValueError(
            "features() expects audio sampled at 16000 Hz (Whisper's rate); got sampling_rate=%r. "
            "Resample it first, or call log_mel(audio, sample_rate=...), which resamples." % (sampling_rate,)
        )
    batch = [np.asarray(x) for x in _batch_list(raw_speech)]
    for i, x in enumerate(batch):
        if x.ndim != 1:
            raise ValueError("features(): example %d must be 1-D (mono), got shape %s" % (i, x.shape))
    out = np.empty((len(batch), _lib.c_int(n_mels, "n_mels"), N_FRAMES), dtype=np.float32)
    dev = _mel_device(device)
    if dev:  # one library call: the clips several to a GPU launch
        clips = [_as_pcm(x[:N_SAMPLES])[0] for x in batch]
        ctx = _mel_context(n_mels, _lib.PAD_AUDIO, 0, dev)
        ptrs = (ctypes.c_void_p * max(1, len(clips)))(*[c.ctypes.data for c in clips])
        ns = (ctypes.c_size_t * max(1, len(clips)))(*[c.shape[0] for c in clips])
        err = _lib.new_error()
        h = ctx.acquire()
        try:
            r = _lib.log_mel_batch(h, ptrs, ns, len(clips), SAMPLE_RATE, 1, out.ctypes.data, ctypes.byref(err))
        finally:
            ctx.release()
        if r != 0:
            _lib.raise_error(err, "features failed")
        return out
    workers = min(len(batch), len(os.sched_getaffinity(0)))
    ctx = _mel_context(n_mels, _lib.PAD_AUDIO, 1 if workers > 1 else 0, dev)

    def one(i):
        out[i] = _call_pcm(_lib.log_mel, ctx, batch[i][:N_SAMPLES], SAMPLE_RATE, "features")

    if workers > 1:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            for _ in pool.map(one, range(len(batch))):
                pass
    else:
        for i in range(len(batch)):
            one(i)
    return out


from ._frontend import Frontend  # noqa: E402  (needs the helpers above)

"""Frontend: a context of the C library with a model (or none), as a Python object."""

import ctypes
import threading

import numpy as np

from . import _lib
from ._lib import Error

_SIZE_MAX = ctypes.c_size_t(-1).value


class Frontend:
    """Whisper's frontend with a model: log-Mel and the encoder's conv stem.

    Frontend(model=None, device="auto", precision="fp32", threads=None, n_mels=None,
    pad="audio", pos=False, mel_device="auto", output="numpy")

    - model: path of a GGUF file with the stem's weights (any Whisper size; see the
      README's "Weights"); None: log-Mel only (embed raises Error).
    - device: "auto" (a GPU when there is a CUDA driver and device, else the CPU, saying
      so once on stderr), "cpu", "cuda" or "cuda:N".
    - precision: GPU arithmetic, "fp32", "tf32", "bf16" or "fp16" (the CPU computes fp32).
    - threads: CPU threads; None: all CPUs this process may use.
    - n_mels: None: the model's (80 without a model); else 80 or 128.
    - pad: "audio" (zero-pad to whole 30 s windows, as openai's pad_or_trim), "mel0"
      (transcribe()'s windows of the log-Mel, the last filled with 0.0) or "none" (one
      window of n // 160 frames); see whisper_stem.log_mel.
    - pos: add Whisper's positional embedding (the output is then what the first
      transformer block receives).
    - mel_device: where the log-Mel runs when the stem is on a GPU, as the command's
      --mel-device: "auto" (the GPU's, as the command's default: within 1e-4 of the CPU's,
      and the command's bytes) or "cpu" (the CPU's log-Mel, bit for bit; the stem still on
      the GPU). Without a model and with device="cuda", log_mel runs on the GPU by default.
    - output: "numpy" (default) or "torch": with the stem on a GPU, embed, embed_audio and
      embed_file return CUDA tensors (torch.float32 on this Frontend's GPU) computed into
      memory PyTorch allocates, on torch.cuda.current_stream(), without a host round trip
      (the call returns without waiting for the GPU; later work on that stream sees the
      result). embed_mel, embed_files and embed_batch give CUDA tensors too, uploaded from
      the host result. ValueError when the stem is on the CPU.

    Raises Error with the library's message when the model cannot be loaded or the device
    cannot be opened; ValueError for a path or string holding a NUL byte, OverflowError for
    an int beyond a C int (never passed on wrapped). Use it as a context manager, or call close(); it is closed when
    garbage collected too.

    Threads: a Frontend may be used from several threads at once; each call releases the
    GIL; log-Mels run concurrently, the stem one call at a time (it uses every thread of
    `threads`, or the GPU). close() waits for calls in flight.

    Processes: a CUDA context does not survive fork(), so with a GPU make the Frontend in
    each worker process (a DataLoader's worker_init_fn, datasets.map's function), not in
    the parent before the workers start. The module-level log_mel and features work in
    forked workers as they are.
    """

    def __init__(self, model=None, device="auto", precision="fp32", threads=None, n_mels=None, pad="audio", pos=False,
                 mel_device="auto", output="numpy", decode="default"):
        from . import _pad_mode

        if threads is not None and _lib.c_int(threads, "threads") < 1:
            raise ValueError("threads must be None or >= 1, got %r" % (threads,))
        if output not in ("numpy", "torch"):
            raise ValueError("output must be 'numpy' or 'torch', got %r" % (output,))
        if mel_device not in ("auto", "cpu", "cuda"):
            raise ValueError("mel_device must be 'auto', 'cpu' or 'cuda', got %r" % (mel_device,))
        if decode not in _lib.DECODES:
            raise ValueError("decode must be 'default' or 'openai', got %r" % (decode,))
        self._ctx = _lib.Context(
            model=model,
            device=device,
            precision=precision,
            threads=0 if threads is None else threads,
            n_mels=0 if n_mels is None else n_mels,
            pad=_pad_mode(pad),
            pos=pos,
        )
        self.model = model
        self.output = output
        self.decode = decode
        if decode != "default":
            err = _lib.new_error()
            if _lib.set_decode(self._ctx.handle, decode.encode(), ctypes.byref(err)) != 0:
                self._ctx.close()
                _lib.raise_error(err, "decode %r failed" % (decode,))
        self._torch_device = None
        if mel_device != "auto":
            err = _lib.new_error()
            if _lib.set_mel_device(self._ctx.handle, mel_device.encode(), ctypes.byref(err)) != 0:
                self._ctx.close()
                _lib.raise_error(err, "mel_device %r failed" % (mel_device,))
        if output == "torch":
            dev = self.device
            if not dev.startswith("cuda"):
                self._ctx.close()
                raise ValueError("output='torch' needs the stem on a GPU (device='cuda'); this Frontend's is on %s"
                                 % dev)
            import torch

            self._torch_device = torch.device("cuda", int(dev.split(":")[1]))

    # -- lifetime ---------------------------------------------------------------
    def close(self):
        """Free the library's context (model weights, GPU memory): closes the iterators of
        embed_files still open (one in a step on another thread is closed by that thread when
        its call returns), waits for calls in flight, then frees. Safe from any thread.
        Idempotent; later calls raise ValueError."""
        ctx = getattr(self, "_ctx", None)
        if ctx is not None:
            ctx.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        h = self._ctx.handle
        if h is None:
            raise ValueError("the Frontend is closed")
        return h

    def _call(self, fn, *args):
        """fn(handle, *args, out, err) with the context held; the array, or Error."""
        out = _lib._CArray()
        err = _lib.new_error()
        ctx = self._ctx
        h = ctx.acquire()
        try:
            r = fn(h, *args, ctypes.byref(out), ctypes.byref(err))
        finally:
            ctx.release()
        if r != 0:
            _lib.raise_error(err, fn.__name__ + " failed")
        return _lib.take(out)

    # -- properties ---------------------------------------------------------------
    @property
    def n_mels(self):
        """Mel bands of the log-Mel (80 or 128): the model's, or the n_mels asked for."""
        return _lib.n_mels(self._handle())

    @property
    def d_model(self):
        """Width of the embeddings (384 for tiny ... 1280 for large); 0 without a model."""
        return _lib.d_model(self._handle())

    @property
    def device(self):
        """Where the stem runs: "cpu" or "cuda:N" (what "auto" resolved to)."""
        return _lib.device(self._handle()).decode()

    @property
    def mel_device(self):
        """Where the log-Mel runs: "cpu" or "cuda:N"."""
        return _lib.mel_device(self._handle()).decode()

    def _out(self, arr):
        """A result as this Frontend's output type (a host array uploaded for torch)."""
        if self.output != "torch" or isinstance(arr, Error):
            return arr
        import torch

        return torch.from_numpy(arr).to(self._torch_device, non_blocking=False)

    def _embed_device(self, audio, sample_rate):
        """embed_audio into a CUDA tensor PyTorch allocates, on its current stream."""
        import torch

        from . import _as_pcm, _rate

        pcm, channels = _as_pcm(audio)
        rate = _rate(sample_rate)
        dev = self._torch_device
        stream = torch.cuda.current_stream(dev).cuda_stream
        keep, failed = [], []

        def alloc(user, nbytes):
            # an exception must not escape: ctypes would hand C an arbitrary pointer
            try:
                t = torch.empty(nbytes // 4, dtype=torch.float32, device=dev)
                keep.append(t)
                return t.data_ptr()
            except BaseException as e:  # noqa: BLE001 (re-raised after the call)
                failed.append(e)
                return None

        cb = _lib.DEVICE_ALLOC(alloc)
        out = _lib._CDeviceArray()
        err = _lib.new_error()
        h = self._ctx.acquire()
        try:
            with torch.cuda.device(dev):
                r = _lib.embed_pcm_device(h, pcm.ctypes.data, pcm.shape[0], rate, channels, stream or None, cb, None,
                                          ctypes.byref(out), ctypes.byref(err))
        finally:
            self._ctx.release()
        if failed:
            raise failed[0]
        if r != 0:
            _lib.raise_error(err, "embed failed")
        shape = tuple(int(out.shape[i]) for i in range(out.ndim))
        return keep[0].view(shape)

    def __repr__(self):
        if self._ctx.handle is None:
            return "<whisper_stem.Frontend closed>"
        return "<whisper_stem.Frontend model=%r device=%s n_mels=%d d_model=%d>" % (
            self.model, self.device, self.n_mels, self.d_model)

    # -- calls ------------------------------------------------------------------------
    def log_mel(self, audio, sample_rate=16000):
        """The log-Mel of `audio` with this Frontend's n_mels and pad: float32 [n_mels, n_frames].

        audio and sample_rate as whisper_stem.log_mel takes them (1-D [n] or 2-D
        [n, channels]; float, int16, int32, int8, uint8; any rate, resampled).
        Releases the GIL. Raises Error with the library's message.
        """
        from . import _call_pcm

        return _call_pcm(_lib.log_mel, self._ctx, audio, sample_rate, "log_mel")

    def embed_audio(self, audio, sample_rate=16000):
        """Embeddings of audio samples: float32 [1500, d] for one 30 s window, [n_win, 1500, d] for more.

        The samples go through log_mel (this Frontend's pad) and the conv stem, exactly
        what ``whisper-stem -m MODEL`` writes for a file of these samples. audio as in
        log_mel. Releases the GIL. Raises Error (e.g. without a model).
        """
        from . import _call_pcm

        if self.output == "torch":
            return self._embed_device(audio, sample_rate)
        return _call_pcm(_lib.embed_pcm, self._ctx, audio, sample_rate, "embed")

    def embed_mel(self, mel):
        """Embeddings of a log-Mel: [n_mels, n_frames] (n_frames a multiple of 3000) or
        [n_win, n_mels, 3000] (the CLI's --mel layout for several windows).

        Returns float32 [1500, d] for one window, [n_win, 1500, d] for more. float32
        C-contiguous 2-D input is passed without a copy. Releases the GIL. Raises Error
        (also for a NaN or infinite value, naming its position).
        """
        m = np.asarray(mel, dtype=np.float32)
        if m.ndim == 3:
            m = np.concatenate(list(m), axis=1)  # [n_win, n_mels, 3000] -> [n_mels, n_win * 3000]
        if m.ndim != 2:
            raise ValueError("mel must be [n_mels, n_frames] or [n_win, n_mels, 3000], got shape %s" % (m.shape,))
        m = np.ascontiguousarray(m)
        return self._out(self._call(_lib.embed_mel, m.ctypes.data, _lib.c_int(m.shape[0], "mel's n_mels"), m.shape[1]))

    def embed(self, audio_or_mel, sample_rate=16000):
        """Embeddings of audio or of a log-Mel, told apart by shape.

        The rule, with n_mels = self.n_mels:
        - 3-D [n_win, n_mels, 3000]: a log-Mel (the command's --mel layout);
        - 2-D [n_mels, n_frames] with n_frames a positive multiple of 3000, or with any
          n_frames when this Frontend's pad is "none": a log-Mel (embed_mel);
        - 2-D [n_mels, n_frames] with more frames than bands otherwise: ValueError (a
          log-Mel of a length this pad mode cannot take, or audio laid out [channels, n]:
          call embed_mel or embed_audio to say which);
        - anything else: audio, 1-D [n] or 2-D [n, channels] (embed_audio, at sample_rate);
        - the contents of a file (bytes, bytearray, memoryview) or a binary file object:
          decoded as embed_file decodes it.

        Returns float32 [1500, d] for one window, [n_win, 1500, d] for more: the conv
        stem's output (plus the positional embedding with pos=True), bit-identical to the
        ``whisper-stem`` command on the CPU. Releases the GIL. Raises Error.
        """
        if isinstance(audio_or_mel, (bytes, bytearray, memoryview)) or hasattr(audio_or_mel, "read"):
            return self.embed_file(audio_or_mel)
        a = np.asarray(audio_or_mel)
        nm = self.n_mels
        if a.ndim == 3 and a.shape[1:] == (nm, 3000):
            return self.embed_mel(a)
        if a.ndim == 2 and a.shape[0] == nm and a.shape[1] > 0:
            if a.shape[1] % 3000 == 0 or self._ctx.pad == _lib.PAD_NONE:
                return self.embed_mel(a)
            if a.shape[1] > nm:
                raise ValueError(
                    "embed: a [%d, %d] array is a log-Mel whose %d frames are not whole 30 s windows "
                    "(pad=\"none\" takes any length), or audio as [channels, n]; call embed_mel, or "
                    "embed_audio with [n, channels]" % (a.shape[0], a.shape[1], a.shape[1]))
        return self.embed_audio(a, sample_rate)

    def embed_file(self, source, start=None, duration=None):
        """Embeddings of audio in a file (decoded, 16 kHz mono, log-Mel, stem), as the command writes them.

        source: a path (str, os.PathLike), the contents of a file (bytes, bytearray,
        memoryview), or a binary file object (read to its end). start, duration: a segment
        in seconds (duration None or 0: to the end), as load_audio takes them. Decoded
        with this Frontend's decode ("default" or "openai").

        Releases the GIL. Raises Error with the library's message (naming the path).
        """
        opts = _lib.audio_opts(start, duration, None)
        if self.output == "torch":
            from . import load_audio

            return self._embed_device(load_audio(source, start, duration, self.decode), 16000)
        kind, src, name = _lib.audio_source(source)
        if kind == "path":
            return self._call(_lib.embed_file_opts, src, ctypes.byref(opts))
        p, n, keep = _lib.memory_view(src)
        try:
            return self._call(_lib.embed_memory, p, n, name.encode("utf-8", "replace"), ctypes.byref(opts))
        finally:
            del keep

    def embed_files(self, paths, errors="raise", info=False):
        """Embeddings of many files through the library's pipeline: an iterator of arrays, in the order of `paths`.

        The library decodes, computes log-Mels and runs the stem of several files at once
        (as the command does over a list; on a GPU several inputs to a launch); results
        are yielded in input order, each the array embed_file would return, so
        ``zip(paths, fe.embed_files(paths))`` pairs them.

        info=True: each item is ``(array, info)``, info a dict of what the command's
        manifest says of the input: windows, valid_ctx (output rows of the last window
        that see audio), content_frames, duration_s, src_rate, src_channels (None for a
        file that failed).

        A file that fails:
        - errors="return" (what a corpus run wants): the Error instance is yielded in the
          array's place (``isinstance(x, whisper_stem.Error)``) and the others go on.
        - errors="raise" (default): Error (the library's message, naming the file) is
          raised at that file's turn, after every earlier file was yielded. The iterator
          goes on: the next next() gives the file after it (a for loop ends at the
          exception; catch it around next() to go on).

        The iterator holds the batch until exhausted or closed: use it in a for loop, or
        call .close() (or a ``with`` block) when stopping early; Frontend.close() closes it
        too. It keeps this Frontend alive (``for e in Frontend(m).embed_files(paths)``
        works). Each step releases the GIL; one thread steps at a time (next() from another
        thread during a step raises ValueError). close() and Frontend.close() may come from
        any thread: a step in flight finishes first, its result is dropped and the iterator
        ends. paths: str, bytes or os.PathLike (ValueError for one holding a NUL byte).
        With output="torch" the arrays are CUDA tensors computed into memory PyTorch
        allocates (on the current stream when the iterator was made), without a trip
        through the host when the log-Mel runs on the GPU (mel_device "auto" or "cuda");
        with mel_device="cpu" the host results are uploaded.
        """
        if errors not in ("raise", "return"):
            raise ValueError("errors must be 'raise' or 'return', got %r" % (errors,))
        return _BatchIter(self, list(paths), errors == "raise", bool(info))

    def pcm_info(self, audio, sample_rate=16000):
        """What embed_audio's result covers, as embed_files(info=True) gives it for a file:
        a dict of windows, valid_ctx, content_frames, duration_s, src_rate, src_channels."""
        from . import _as_pcm, _rate

        pcm, channels = _as_pcm(audio)
        info = _lib._CInfo()
        err = _lib.new_error()
        if _lib.pcm_info(self._handle(), pcm.shape[0], _rate(sample_rate), channels, ctypes.byref(info),
                         ctypes.byref(err)) != 0:
            _lib.raise_error(err, "pcm_info failed")
        return info.as_dict()

    def embed_batch(self, items, sample_rate=16000, errors="raise"):
        """Embeddings of a batch: audio arrays (at sample_rate) and file paths, mixed.

        Returns ``(embeddings, info)``:
        - embeddings: one array (a tensor with output="torch") [B, n_win, 1500, d] when
          every item has the same number of windows, else a list of the items' results
          ([1500, d] or [n_win, 1500, d], as embed gives them);
        - info: a list of B dicts (see embed_files(info=True)): windows, valid_ctx,
          content_frames, duration_s, src_rate, src_channels.

        Files go through embed_files (the library's pipeline, several to a GPU launch),
        arrays through embed_audio. errors="raise" (default): the first item that fails
        raises its Error (after all were tried); errors="return": its Error takes its
        place in the list (embeddings is then always a list) and its info is None.
        """
        import os as _os

        if errors not in ("raise", "return"):
            raise ValueError("errors must be 'raise' or 'return', got %r" % (errors,))
        items = list(items)
        out = [None] * len(items)
        infos = [None] * len(items)
        files = [i for i, x in enumerate(items) if isinstance(x, (str, bytes, _os.PathLike))]
        if files:
            it = self.embed_files([items[i] for i in files], errors="return", info=True)
            for i, (r, inf) in zip(files, it):
                out[i], infos[i] = r, inf
        for i, x in enumerate(items):
            if i in files:
                continue
            try:
                infos[i] = self.pcm_info(x, sample_rate)
                out[i] = self.embed_audio(x, sample_rate)
            except Error as e:
                out[i], infos[i] = e, None
        bad = [r for r in out if isinstance(r, Error)]
        if bad and errors == "raise":
            raise bad[0]
        if bad or not out:
            return out, infos
        shapes = {tuple(r.shape[-2:]) for r in out}
        wins = {inf["windows"] for inf in infos}
        if len(shapes) != 1 or len(wins) != 1 or self._ctx.pad == _lib.PAD_NONE:
            return out, infos
        full = [r if r.ndim == 3 else r[None] for r in out]
        if self.output == "torch":
            import torch

            return torch.stack(full), infos
        return np.stack(full), infos


class _BatchIter:
    """The iterator Frontend.embed_files returns (see there).

    Lifetime: the iterator holds its Frontend (so ``Frontend(m).embed_files(paths)``
    runs to the end) and one use of its context, from batch_open to batch_close.
    Threads: a step (one whisper_stem_batch_next, the GIL released) runs in one thread at
    a time (another thread's next() meanwhile is a ValueError, as a running generator's
    is); close() from another thread during a step only marks the iterator closed, and
    the stepping thread closes the batch when its call returns (its result dropped), so
    the batch is never freed under a call. _mu guards _b, _closed and _stepping.

    The library returns results in input order; the index it gives with each is
    checked all the same (a result for another position waits in _pending).
    """

    def __init__(self, fe, paths, raise_errors, info=False):
        self._fe = fe
        self._info = info
        self._ctx = fe._ctx
        self.paths = paths
        self._raise = raise_errors
        self._pending = {}
        self._next = 0
        self._b = None
        self._mu = threading.Lock()
        self._closed = False
        self._stepping = False
        encoded = [_lib.fspath(p, "paths[%d]" % i) for i, p in enumerate(paths)]
        cpaths = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)  # the library copies them
        if not paths:
            self._closed = True
            return
        err = _lib.new_error()
        h = self._ctx.acquire()  # held until the batch is closed: its workers use the context
        b = _lib.batch_open(h, cpaths, len(encoded), ctypes.byref(err))
        if not b:
            self._ctx.release()
            _lib.raise_error(err, "embed_files: whisper_stem_batch_open failed")
        self._b = b
        self._ctx.batches.add(self)
        self._dev = None
        if fe.output == "torch":
            self._to_device(fe)

    def _to_device(self, fe):
        """Results into CUDA tensors allocated on the current stream (when the library's
        batch runs on the GPU; else the host results are uploaded, _fe._out)."""
        import torch

        dev = fe._torch_device
        blocks = {}  # data_ptr -> tensor, until its input's turn (or the batch's end)
        failed = []
        # the library's work goes on this stream: the blocks are allocated on it too,
        # whatever stream is current at a later step, so PyTorch reuses a dropped block
        # only after the work queued there
        cur = torch.cuda.current_stream(dev)

        def alloc(user, nbytes):
            # an exception must not escape: ctypes would hand C an arbitrary pointer
            try:
                with torch.cuda.stream(cur):
                    t = torch.empty(nbytes // 4, dtype=torch.float32, device=dev)
                blocks[t.data_ptr()] = t
                return t.data_ptr()
            except BaseException as e:  # noqa: BLE001 (the cause of the inputs' errors)
                failed.append(e)
                return None

        cb = _lib.DEVICE_ALLOC(alloc)
        stream = cur.cuda_stream
        err = _lib.new_error()
        if _lib.batch_to_device(self._b, stream or None, cb, None, ctypes.byref(err)) == 0:
            self._dev = (cb, blocks, failed, dev)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.paths)

    def _pull(self):
        """One result from the library into _pending."""
        idx = ctypes.c_size_t(_SIZE_MAX)
        err = _lib.new_error()
        if self._dev:
            import torch

            _, blocks, failed, dev = self._dev
            out = _lib._CDeviceArray()
            with torch.cuda.device(dev):
                r = _lib.batch_next_device(self._b, ctypes.byref(out), ctypes.byref(idx), ctypes.byref(err))
            t = blocks.pop(out.data, None) if out.data else None
        else:
            out = _lib._CArray()
            r = _lib.batch_next(self._b, ctypes.byref(out), ctypes.byref(idx), ctypes.byref(err))
        i = idx.value
        inf = None
        if self._info and r in (1, -1):
            ci = _lib._CInfo()
            if _lib.batch_info(self._b, ctypes.byref(ci)) == 0 and ci.windows > 0:
                inf = ci.as_dict()
        if r == 1 and i < len(self.paths) and self._dev:
            self._pending[i] = (t.view(tuple(int(out.shape[k]) for k in range(out.ndim))), inf)
        elif r == 1 and i < len(self.paths):
            self._pending[i] = (self._fe._out(_lib.take(out)), inf)
        elif r == -1 and i < len(self.paths):
            msg = err.msg.decode("utf-8", "replace")
            e = Error(msg or "%s: failed" % (self.paths[i],))
            if self._dev and self._dev[2] and "device allocator" in msg:
                e.__cause__ = self._dev[2][-1]  # what PyTorch raised (its launch's inputs fail)
            self._pending[i] = (e, None)
        else:
            self.close()
            raise Error("embed_files: the library's batch ended after %d of %d inputs%s" % (
                len(self._pending) + self._next, len(self.paths),
                ": " + err.msg.decode("utf-8", "replace") if r == -1 else ""))

    def _step(self):
        if self._closed or self._next >= len(self.paths):
            self.close()
            raise StopIteration
        while self._next not in self._pending:
            self._pull()
            if self._closed:  # closed by another thread during the call
                raise StopIteration
        item, inf = self._pending.pop(self._next)
        self._next += 1
        if self._next >= len(self.paths):
            self.close()
        if isinstance(item, Error) and self._raise:
            raise item  # the iterator goes on: the next call gives the next file
        return (item, inf) if self._info else item

    def __next__(self):
        with self._mu:
            if self._stepping:
                raise ValueError("embed_files: the iterator is running in another thread "
                                 "(use one iterator from one thread at a time)")
            self._stepping = True
        try:
            return self._step()
        finally:
            with self._mu:
                self._stepping = False
                b = self._b if self._closed else None
                if b:
                    self._b = None
            if b:
                self._free(b)

    def _free(self, b):
        self._pending.clear()
        self._next = len(self.paths)
        _lib.batch_close(b)
        if self._dev:
            self._dev[1].clear()  # blocks of inputs never returned (their work is done)
        self._ctx.batches.discard(self)
        self._ctx.release()

    def close(self):
        """Stop early: the library's batch is closed (inputs in flight are dropped). Idempotent.

        From another thread while a step runs: marks the iterator closed; the step's call
        finishes, its result is dropped, and that thread closes the batch."""
        with self._mu:
            self._closed = True
            if self._stepping:
                return
            b, self._b = self._b, None
        if b:
            self._free(b)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

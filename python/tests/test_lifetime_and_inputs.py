"""whisper_stem: the lifetime of Frontends and their iterators across threads, and the
checks made on Python arguments before they reach the C library.

Run with the rest (make test-python). The race of close() against a running iterator is
run in a child process (a use after free can crash or hang it): freed memory is filled
with a byte pattern (glibc.malloc.perturb), so a step reading a freed batch goes wrong
visibly, and the child's exit, output and bytes are checked.
"""

import gc
import os
import subprocess
import sys
import textwrap
import unittest

import numpy as np

import whisper_stem as ws

from .test_whisper_stem import JFK, Fixture, assert_same_bits

# The child: a batch whose second input is a FIFO nobody writes yet, so the step that
# waits for it is in the library when another thread closes the Frontend (mode "close");
# mode "second" first tries next() from a third thread during that step.
_CLOSE_RACE = textwrap.dedent("""
    import os, sys, threading
    import numpy as np
    import whisper_stem as ws
    from whisper_stem import _lib

    model, fifo, jfk, mode = sys.argv[1:5]
    fe = ws.Frontend(model, device="cpu", threads=2)
    want = fe.embed_file(jfk)
    it = fe.embed_files([jfk, fifo, jfk])
    first = next(it)
    print("first", np.array_equal(first.view(np.uint32), want.view(np.uint32)))

    in_step = threading.Event()
    real_next = _lib.batch_next
    def batch_next(*args):
        in_step.set()
        return real_next(*args)
    _lib.batch_next = batch_next

    out = {}
    def step():
        try:
            out["step"] = "item %s" % (next(it).shape,)
        except StopIteration:
            out["step"] = "stop"
        except Exception as e:
            out["step"] = "error %s: %s" % (type(e).__name__, e)
    closing = threading.Event()
    def close():
        closing.set()
        fe.close()
        out["close"] = "closed"
    a = threading.Thread(target=step)
    a.start()
    in_step.wait()
    def second():  # a second thread's step meanwhile is refused (a running generator's rule)
        try:
            next(it)
            out["second"] = "ran"
        except ValueError as e:
            out["second"] = "another thread" in str(e)
    if mode == "second":
        c = threading.Thread(target=second, daemon=True)
        c.start()
        c.join(60)  # refused at once; a step would wait for the FIFO, not written till then
        if c.is_alive():
            print("second step waits in the library", flush=True)
            os._exit(4)
        print("second", out["second"])
    b = threading.Thread(target=close)
    b.start()
    closing.wait()
    with open(fifo, "wb") as f, open(jfk, "rb") as src:   # now the input arrives
        f.write(src.read())
    a.join(60)
    b.join(60)
    if a.is_alive() or b.is_alive():
        print("hung: step alive %s, close alive %s" % (a.is_alive(), b.is_alive()), flush=True)
        os._exit(3)
    print("step", out.get("step"))
    print("close", out.get("close"))
    print("after", list(it))
    with ws.Frontend(model, device="cpu") as fe2:
        again = fe2.embed_file(jfk)
    print("again", np.array_equal(again.view(np.uint32), want.view(np.uint32)))
""")


class LifetimeTest(Fixture):
    def run_child(self, mode):
        """The child's output lines (it must exit 0)."""
        fifo = os.path.join(self.tmp, "late-%s.wav" % mode)
        os.mkfifo(fifo)
        try:
            env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.perturb=165")
            try:
                r = subprocess.run([sys.executable, "-c", _CLOSE_RACE, self.model, fifo, JFK, mode], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            except subprocess.TimeoutExpired as e:
                self.fail("the child hung:\n%s" % (e.stdout or b"").decode(errors="replace"))
        finally:
            os.unlink(fifo)
        out = r.stdout.decode(errors="replace")
        self.assertEqual(r.returncode, 0, "the child died or hung (exit %d):\n%s" % (r.returncode, out))
        return out.splitlines()

    def test_close_from_another_thread_while_a_step_runs(self):
        # Before: Frontend.close() freed the batch under the step (a crash or a hang).
        # Now the step in flight finishes, its result dropped, the batch closed by its
        # thread: the iterator of a closed Frontend ends; the library is left sound.
        self.assertEqual(self.run_child("close"),
                         ["first True", "step stop", "close closed", "after []", "again True"])

    def test_a_second_thread_cannot_step_a_running_iterator(self):
        # Before: a second batch_next ran beside the first on the same batch.
        self.assertEqual(self.run_child("second"),
                         ["first True", "second True", "step stop", "close closed", "after []", "again True"])

    def test_an_iterator_keeps_its_temporary_frontend(self):
        with ws.Frontend(self.model, device="cpu") as fe:
            want = fe.embed_file(JFK)
        got = list(ws.Frontend(self.model, device="cpu").embed_files([JFK, JFK]))
        self.assertEqual(len(got), 2, "for e in Frontend(m).embed_files(paths): every input")
        for i, g in enumerate(got):
            assert_same_bits(self, "item %d of a temporary Frontend's iterator" % i, g, want)

        fe = ws.Frontend(self.model, device="cpu")
        it = fe.embed_files([JFK] * 3)
        assert_same_bits(self, "item 0", next(it), want)
        del fe
        gc.collect()
        rest = list(it)
        self.assertEqual(len(rest), 2, "the Frontend dropped midway: the iterator goes on")
        for g in rest:
            assert_same_bits(self, "after the Frontend was dropped", g, want)


class InputChecksTest(Fixture):
    def test_a_nul_in_a_path_is_refused_naming_the_argument(self):
        with self.assertRaises(ValueError) as cm:
            ws.load_audio(JFK + "\0.flac")
        self.assertIn("path", str(cm.exception))
        self.assertIn("NUL", str(cm.exception))
        with ws.Frontend(self.model, device="cpu") as fe:
            with self.assertRaises(ValueError) as cm:
                fe.embed_file(JFK + "\0x")
            self.assertIn("path", str(cm.exception))
            with self.assertRaises(ValueError) as cm:
                fe.embed_files([JFK, os.fsencode(JFK) + b"\0x"])
            self.assertIn("paths[1]", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            ws.Frontend(self.model + "\0x", device="cpu")
        self.assertIn("model", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            ws.Frontend(device="cpu\0cuda")
        self.assertIn("device", str(cm.exception))

    def test_ints_beyond_c_int_are_refused_not_wrapped(self):
        x = self.jfk[:16000]
        for bad in (2 ** 32 + 44100, 2 ** 31, -(2 ** 31) - 1):
            with self.assertRaises((ValueError, OverflowError)) as cm:
                ws.log_mel(x, sample_rate=bad)
            self.assertIn("sample_rate", str(cm.exception))
        with self.assertRaises((ValueError, OverflowError)) as cm:
            ws.log_mel(x, n_mels=2 ** 32 + 80)
        self.assertIn("n_mels", str(cm.exception))
        with self.assertRaises((ValueError, OverflowError)) as cm:
            ws.features([x], n_mels=2 ** 32 + 80)
        self.assertIn("n_mels", str(cm.exception))
        for bad in (2 ** 40, 2 ** 32 + 1):
            with self.assertRaises((ValueError, OverflowError)) as cm:
                ws.Frontend(device="cpu", threads=bad)
            self.assertIn("threads", str(cm.exception))
        with self.assertRaises((ValueError, OverflowError)) as cm:
            ws.Frontend(device="cpu", n_mels=2 ** 32 + 80)
        self.assertIn("n_mels", str(cm.exception))
        with ws.Frontend(self.model, device="cpu") as fe:
            with self.assertRaises((ValueError, OverflowError)) as cm:
                fe.embed_audio(x, sample_rate=2 ** 32 + 16000)
            self.assertIn("sample_rate", str(cm.exception))
        # in range, the library's own checks speak
        with self.assertRaises(ws.Error):
            ws.Frontend(device="cpu", threads=1000)

    def test_an_empty_batch_gives_an_empty_array(self):
        for empty in ([], (), np.zeros((0, 16000), np.float32)):
            f = ws.features(empty)
            self.assertEqual(f.shape, (0, 80, 3000), "features(%r)" % (empty,))
            self.assertEqual(f.dtype, np.float32)
        self.assertEqual(ws.features([], n_mels=128).shape, (0, 128, 3000))
        # an empty example in a batch is still 30 s of silence, as HF pads it
        self.assertEqual(ws.features([[]]).shape, (1, 80, 3000))

    def test_channels_first_audio_gets_a_clear_error(self):
        stereo = np.stack([self.jfk, self.jfk])  # [2, n]
        for call in (ws.log_mel, ws.Frontend(device="cpu").log_mel):
            with self.assertRaises(ValueError) as cm:
                call(stereo)
            msg = str(cm.exception)
            self.assertIn("x.mean(axis=0)", msg)
            self.assertIn("(2, 176000)", msg)
        with ws.Frontend(self.model, device="cpu") as fe:
            with self.assertRaises(ValueError) as cm:
                fe.embed_audio(stereo)
            self.assertIn("x.mean(axis=0)", str(cm.exception))
            # [n, channels] stays accepted
            assert_same_bits(self, "[n, 2]", fe.embed_audio(stereo.T), fe.embed_audio(self.jfk))

    def test_a_non_finite_log_mel_is_refused(self):
        with ws.Frontend(self.model, device="cpu") as fe:
            mel = fe.log_mel(self.jfk)
            for bad in (np.nan, np.inf, -np.inf):
                m = mel.copy()
                m[7, 1234] = bad
                with self.assertRaises(ws.Error) as cm:
                    fe.embed_mel(m)
                self.assertIn("finite", str(cm.exception))
                self.assertIn("[7][1234]", str(cm.exception))


if __name__ == "__main__":
    unittest.main()

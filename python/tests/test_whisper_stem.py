"""whisper_stem (python/) against the command, openai's math and Hugging Face's.

Run: make test-python (sets WHISPER_STEM_LIB, WS_BUILD and PYTHONPATH), or
  WHISPER_STEM_LIB=build/libwhisper-stem.so.0 WS_BUILD=build PYTHONPATH=python \\
      /usr/bin/python3 -m unittest discover -s python/tests -t python -v
Needs numpy; torch (Debian's python3-torch) for the torch comparisons and transformers
for the extractor comparison, each skipped with a reason when missing.
"""

import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import wave

import numpy as np

import whisper_stem as ws

from . import reference as ref

ROOT = ref.ROOT
BUILD = os.environ.get("WS_BUILD", os.path.join(ROOT, "build"))
CLI = os.path.join(BUILD, "whisper-stem")
MKMODEL = os.path.join(BUILD, "ws-mkmodel")
JFK = os.path.join(ROOT, "samples", "jfk.wav")

# docs/spec.md: the log-Mel within 1e-4 (max abs) of a float64 reference on 16 kHz input.
MEL_ATOL = 1e-4
# Two float32 computations each within MEL_ATOL of float64 are within twice that of
# each other (triangle inequality): torch's float32 STFT vs ours, HF's vs ours.
MEL_PAIR_ATOL = 2 * MEL_ATOL

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def assert_close(tc, name, got, want, atol):
    """Fails with the worst index, both values and the max abs error."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    tc.assertEqual(got.shape, want.shape, "%s: shape" % name)
    err = np.abs(got - want)
    i = np.unravel_index(int(np.argmax(err)), err.shape)
    tc.assertLessEqual(float(err[i]), atol, "%s: max abs error %.3g at %s (got %.9g, want %.9g), bound %.3g" % (
        name, float(err[i]), i, got[i], want[i], atol))


def assert_same_bits(tc, name, got, want):
    tc.assertEqual(got.shape, want.shape, "%s: shape" % name)
    tc.assertEqual(got.dtype, want.dtype, "%s: dtype" % name)
    if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
        d = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
        i = tuple(d[0])
        tc.fail("%s: %d elements differ, first at %s: %r vs %r" % (name, len(d), i, got[i], want[i]))


def _lib_path():
    return os.environ.get("WHISPER_STEM_LIB") or os.path.join(BUILD, "libwhisper-stem.so.0")


def run_cli(*args):
    r = subprocess.run([CLI, "-q"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise AssertionError("whisper-stem %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.decode()))
    return r


def write_wav16(path, pcm16, rate=16000, channels=1):
    with wave.open(path, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.ascontiguousarray(pcm16, dtype="<i2").tobytes())


def speechlike(n, seed):
    """Deterministic test audio: a few tones and noise, int16."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / 16000.0
    x = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.2 * np.sin(2 * np.pi * 1234.5 * t) + 0.05 * rng.standard_normal(n)
    return np.clip(np.round(x * 32767), -32768, 32767).astype(np.int16)


class Fixture(unittest.TestCase):
    """A temporary directory, jfk's samples, a 40 s WAV and a tiny random model, made once."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ws-py-")
        cls.jfk = ws.load_audio(JFK)
        cls.long16 = speechlike(40 * 16000 + 123, seed=1)
        cls.long_wav = os.path.join(cls.tmp, "long.wav")
        write_wav16(cls.long_wav, cls.long16)
        cls.model = os.path.join(cls.tmp, "tiny.gguf")
        subprocess.run([MKMODEL, "--size", "tiny", "-o", cls.model], check=True, stdout=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def cli_npy(self, name, *args):
        out = os.path.join(self.tmp, name)
        run_cli(*(list(args) + ["-o", out]))
        return np.load(out)


class LogMelTest(Fixture):
    def test_load_audio_is_16k_mono_float32(self):
        self.assertEqual(self.jfk.dtype, np.float32)
        self.assertEqual(self.jfk.ndim, 1)
        self.assertEqual(self.jfk.shape[0], 176000)  # jfk.wav: 11 s at 16 kHz

    def test_log_mel_is_the_commands_bytes(self):
        got = ws.log_mel(self.jfk)
        assert_same_bits(self, "log_mel(jfk) vs whisper-stem --mel", got, self.cli_npy("jfk-mel.npy", "--mel", "--device", "cpu", JFK))

    def test_log_mel_of_40s_is_the_commands_two_windows(self):
        got = ws.log_mel(self.long16)  # int16: / 32768 as the file is decoded
        cli = self.cli_npy("long-mel.npy", "--mel", "--device", "cpu", self.long_wav)  # [2, 80, 3000]
        self.assertEqual(got.shape, (80, 6000))
        assert_same_bits(self, "log_mel(40 s int16) vs --mel", got, np.concatenate(list(cli), axis=1))

    def test_128_bands_are_the_commands(self):
        got = ws.log_mel(self.jfk, n_mels=128)
        assert_same_bits(self, "log_mel 128", got, self.cli_npy("jfk-mel128.npy", "--mel", "--device", "cpu", "--n-mels", "128", JFK))

    def test_pad_none_and_mel0_are_the_commands(self):
        assert_same_bits(self, "pad none", ws.log_mel(self.jfk, pad="none"),
                         self.cli_npy("jfk-nopad.npy", "--mel", "--device", "cpu", "--no-pad", JFK))
        assert_same_bits(self, "pad mel0", ws.log_mel(self.jfk, pad="mel0"),
                         self.cli_npy("jfk-mel0.npy", "--mel", "--device", "cpu", "--pad", "mel0", JFK))

    def test_log_mel_within_1e4_of_openai_math_in_float64(self):
        for n_mels in (80, 128):
            want = ref.log_mel_f64(ref.pad_or_trim(self.jfk), n_mels)
            assert_close(self, "jfk %d bands vs float64" % n_mels, ws.log_mel(self.jfk, n_mels=n_mels), want, MEL_ATOL)
        x = self.long16.astype(np.float64) / 32768
        assert_close(self, "40 s, no pad, vs float64", ws.log_mel(self.long16, pad="none"), ref.log_mel_f64(x), MEL_ATOL)

    @unittest.skipIf(torch is None, "torch is not importable (Debian: python3-torch)")
    def test_log_mel_within_bounds_of_openai_torch(self):
        want = ref.log_mel_torch(torch.from_numpy(ref.pad_or_trim(self.jfk))).numpy()
        assert_close(self, "jfk vs openai's torch log_mel", ws.log_mel(self.jfk), want, MEL_PAIR_ATOL)
        want = ref.log_mel_torch(torch.from_numpy(ref.pad_or_trim(self.jfk)), n_mels=128).numpy()
        assert_close(self, "jfk 128 vs openai's torch log_mel", ws.log_mel(self.jfk, n_mels=128), want, MEL_PAIR_ATOL)

    def test_float64_int16_and_float32_inputs_agree(self):
        f32 = self.long16.astype(np.float32) / 32768
        a = ws.log_mel(f32)
        assert_same_bits(self, "int16 vs float32", ws.log_mel(self.long16), a)
        assert_same_bits(self, "float64 vs float32", ws.log_mel(f32.astype(np.float64)), a)
        assert_same_bits(self, "strided vs contiguous", ws.log_mel(np.repeat(f32, 2)[::2]), a)

    def test_two_channels_are_averaged(self):
        stereo = np.stack([self.jfk, self.jfk], axis=1)  # [n, 2], identical channels
        assert_same_bits(self, "stereo of one signal vs mono", ws.log_mel(stereo), ws.log_mel(self.jfk))

    def test_44k_input_is_resampled_close_to_16k(self):
        t = np.arange(44100 * 2) / 44100.0
        x44 = (0.5 * np.sin(2 * np.pi * 1000.0 * t)).astype(np.float32)
        t16 = np.arange(32000) / 16000.0
        x16 = (0.5 * np.sin(2 * np.pi * 1000.0 * t16)).astype(np.float32)
        got = ws.log_mel(x44, sample_rate=44100)
        # docs/spec.md: resampled input within about 1e-2 in the bands below 7.2 kHz (all 80 here
        # stop at 8 kHz; band 75 starts above 7.2 kHz); the edges of the clip are excluded.
        assert_close(self, "1 kHz tone at 44.1 kHz vs 16 kHz", got[:75, 5:190], ws.log_mel(x16)[:75, 5:190], 1e-2)

    def test_silence_is_the_floor(self):
        m = ws.log_mel(np.zeros(16000, np.float32))
        # log10(1e-10) = -10 everywhere, so the max - 8 floor does not bite: (-10 + 4) / 4
        self.assertTrue(np.all(m == -1.5), "silence: %r .. %r" % (m.min(), m.max()))

    def test_log_mel_from_four_threads_equals_one_thread(self):
        signals = [speechlike(16000 * (5 + 3 * i), seed=10 + i) for i in range(8)]
        want = [ws.log_mel(s) for s in signals]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            for rnd in range(3):
                got = list(pool.map(ws.log_mel, signals))
                for i, (g, w) in enumerate(zip(got, want)):
                    assert_same_bits(self, "round %d, signal %d from a thread" % (rnd, i), g, w)

    def test_the_gil_is_released_during_a_call(self):
        # While a thread is inside a long log_mel, the main thread goes on running Python.
        # Were the GIL held, the main thread could run only in the switch interval (5 ms)
        # around the call: its count during the call would be at most ~10 ms worth.
        import threading
        import time
        # 10 min of audio, float32 (no conversion in the call): about 0.2-0.5 s of log-Mel
        x = speechlike(480000 * 20, seed=3).astype(np.float32) / 32768
        state = {"in": False, "dt": 0.0}

        def spin(th):
            # the main thread's loop, the same while measuring its rate and during the call
            n = 0
            while th.is_alive():
                if state["in"]:
                    n += 1
            return n

        def sleeper():
            state["in"] = True
            t = time.perf_counter()
            time.sleep(0.1)
            state["dt"] = time.perf_counter() - t
            state["in"] = False

        def attempt(fe):
            th = threading.Thread(target=sleeper)
            th.start()
            rate = spin(th) / state["dt"]    # iterations per second, alone
            th.join()

            def work():
                state["in"] = True
                t = time.perf_counter()
                fe.log_mel(x)
                state["dt"] = time.perf_counter() - t
                state["in"] = False

            th = threading.Thread(target=work)
            th.start()
            during = spin(th)
            th.join()
            return during, rate, state["dt"]

        # Up to 3 tries: a busy machine can starve this thread once; a held GIL fails every time.
        with ws.Frontend(threads=1) as fe:   # one library thread: a CPU left for this one
            fe.log_mel(x[:480000])
            for _ in range(3):
                during, rate, dt = attempt(fe)
                if during > 0.15 * rate * dt:
                    break
        self.assertGreater(during, 0.15 * rate * dt,
                           "main thread ran %d iterations during a %.3f s call, alone %.0f/s: the GIL held?" % (
                               during, dt, rate))

class FeaturesTest(Fixture):
    def test_shape_and_dtype(self):
        f = ws.features([self.jfk, self.jfk[:1000], np.zeros(0, np.float32), self.long16.astype(np.float32) / 32768])
        self.assertEqual(f.shape, (4, 80, 3000))
        self.assertEqual(f.dtype, np.float32)
        self.assertEqual(ws.features(self.jfk).shape, (1, 80, 3000))
        assert_same_bits(self, "a 2-D batch vs a list", ws.features(np.stack([self.jfk, self.jfk])),
                         ws.features([self.jfk, self.jfk]))
        self.assertEqual(ws.features([self.jfk], n_mels=128).shape, (1, 128, 3000))

    def test_each_example_is_log_mel_of_30s(self):
        long32 = self.long16.astype(np.float32) / 32768
        f = ws.features([self.jfk, long32, []])
        assert_same_bits(self, "example 0 vs log_mel", f[0], ws.log_mel(self.jfk))
        assert_same_bits(self, "example 1 (40 s) vs log_mel of its first 30 s", f[1], ws.log_mel(long32[:480000]))
        self.assertTrue(np.all(f[2] == -1.5), "an empty example is 30 s of silence, as HF pads it")

    def test_matches_hf_extractor_math(self):
        long32 = self.long16.astype(np.float32) / 32768
        batch = [self.jfk, long32, self.jfk[:12345] * 0.01]
        for n_mels in (80, 128):
            assert_close(self, "features vs HF's math, %d bands" % n_mels, ws.features(batch, n_mels=n_mels),
                         ref.hf_features(batch, n_mels), MEL_PAIR_ATOL)

    def test_hf_filter_bank_is_openais(self):
        # the reference's own check: HF's float64 bank vs openai's npz (float32 values)
        for n in (80, 128):
            assert_close(self, "HF bank %d" % n, ref.hf_mel_filter_bank(n).T, ref.mel_filters(n), 1e-7)

    def test_matches_transformers_extractor(self):
        try:
            from transformers import WhisperFeatureExtractor
        except Exception as e:  # noqa: BLE001 - any import failure means: not here
            self.skipTest("transformers is not importable: %s" % e)
        long32 = self.long16.astype(np.float32) / 32768
        batch = [self.jfk, long32, self.jfk[:12345]]
        for n_mels in (80, 128):
            fe = WhisperFeatureExtractor(feature_size=n_mels)
            want = fe(batch, sampling_rate=16000, return_tensors="np").input_features
            assert_close(self, "features vs transformers %d" % n_mels, ws.features(batch, n_mels=n_mels), want,
                         MEL_PAIR_ATOL)

    def test_other_rates_raise_value_error_as_hf(self):
        with self.assertRaises(ValueError) as cm:
            ws.features(self.jfk, sampling_rate=44100)
        self.assertIn("16000", str(cm.exception))
        self.assertEqual(ws.features(self.jfk, sampling_rate=None).shape, (1, 80, 3000))


class EmbedTest(Fixture):
    def test_embed_file_is_the_commands_bytes(self):
        with ws.Frontend(self.model, device="cpu") as fe:
            self.assertEqual((fe.n_mels, fe.d_model, fe.device), (80, 384, "cpu"))
            want = self.cli_npy("jfk-emb.npy", "-m", self.model, "--device", "cpu", JFK)
            self.assertEqual(want.shape, (1500, 384))
            assert_same_bits(self, "embed_file", fe.embed_file(JFK), want)
            assert_same_bits(self, "embed(audio)", fe.embed(self.jfk), want)
            assert_same_bits(self, "embed(log_mel)", fe.embed(fe.log_mel(self.jfk)), want)
            assert_same_bits(self, "embed_audio", fe.embed_audio(self.jfk), want)
            assert_same_bits(self, "embed_mel", fe.embed_mel(ws.log_mel(self.jfk)), want)

    def test_two_windows_and_pos_are_the_commands(self):
        want = self.cli_npy("long-emb.npy", "-m", self.model, "--device", "cpu", self.long_wav)
        self.assertEqual(want.shape, (2, 1500, 384))
        with ws.Frontend(self.model, device="cpu") as fe:
            assert_same_bits(self, "embed 40 s", fe.embed(self.long16), want)
            mel3 = self.cli_npy("long-mel3.npy", "--mel", "--device", "cpu", self.long_wav)  # [2, 80, 3000]
            assert_same_bits(self, "embed of the command's [2, 80, 3000] mel", fe.embed(mel3), want)
        want = self.cli_npy("jfk-pos.npy", "-m", self.model, "--device", "cpu", "--pos", JFK)
        with ws.Frontend(self.model, device="cpu", pos=True, threads=1) as fe:
            assert_same_bits(self, "embed with pos", fe.embed_file(JFK), want)

    def test_embed_tells_a_log_mel_from_audio_by_shape(self):
        with ws.Frontend(self.model, device="cpu", pad="none") as fe:
            mel = fe.log_mel(self.jfk)  # [80, 1100]: any length is one window without padding
            self.assertEqual(mel.shape, (80, 1100))
            want = self.cli_npy("jfk-nopad-emb.npy", "-m", self.model, "--device", "cpu", "--no-pad", JFK)
            assert_same_bits(self, "pad none: embed(mel)", fe.embed(mel), want)
            assert_same_bits(self, "pad none: embed(audio)", fe.embed(self.jfk), want)
        with ws.Frontend(self.model, device="cpu") as fe:
            with self.assertRaises(ValueError) as cm:
                fe.embed(np.zeros((80, 1100), np.float32))  # a log-Mel pad "audio" cannot take
            self.assertIn("embed_mel", str(cm.exception))
            with self.assertRaises(ws.Error):
                fe.embed_mel(np.zeros((80, 1100), np.float32))  # said explicitly: the library refuses it
            stereo = np.stack([self.jfk, self.jfk], axis=1)  # [n, 2] audio stays audio
            assert_same_bits(self, "stereo audio", fe.embed(stereo), fe.embed(self.jfk))

    def test_embed_files_in_order_with_a_bad_file_in_the_middle(self):
        bad = os.path.join(self.tmp, "not-audio.wav")
        with open(bad, "w") as f:
            f.write("not audio at all\n")
        paths = [JFK, bad, self.long_wav, os.path.join(self.tmp, "missing.flac"), JFK]
        with ws.Frontend(self.model, device="cpu") as fe:
            want_jfk = fe.embed_file(JFK)
            want_long = fe.embed_file(self.long_wav)
            got = list(fe.embed_files(paths, errors="return"))
            self.assertEqual(len(got), 5)
            assert_same_bits(self, "item 0", got[0], want_jfk)
            self.assertIsInstance(got[1], ws.Error)
            self.assertIn("not-audio.wav", str(got[1]))
            assert_same_bits(self, "item 2", got[2], want_long)
            self.assertIsInstance(got[3], ws.Error)
            self.assertIn("missing.flac", str(got[3]))
            assert_same_bits(self, "item 4", got[4], want_jfk)

            it = fe.embed_files(paths)  # errors="raise"
            assert_same_bits(self, "raise: item 0", next(it), want_jfk)
            with self.assertRaises(ws.Error) as cm:
                next(it)
            self.assertIn("not-audio.wav", str(cm.exception))
            assert_same_bits(self, "raise: the iterator goes on", next(it), want_long)
            with self.assertRaises(ws.Error) as cm:
                next(it)
            self.assertIn("missing.flac", str(cm.exception))
            assert_same_bits(self, "raise: and on", next(it), want_jfk)
            self.assertEqual(list(it), [], "then it ends")

            # info=True: (array, info) with the manifest's fields; None for a file not decoded
            got = list(fe.embed_files(paths, errors="return", info=True))
            self.assertEqual(len(got), 5)
            arr, inf = got[0]
            assert_same_bits(self, "info: item 0", arr, want_jfk)
            self.assertEqual((inf["windows"], inf["content_frames"], inf["valid_ctx"]), (1, 1100, 550))
            self.assertAlmostEqual(inf["duration_s"], 11.0)
            self.assertEqual((inf["src_rate"], inf["src_channels"]), (16000, 1))
            self.assertIsInstance(got[1][0], ws.Error)
            self.assertIsNone(got[1][1])
            self.assertEqual(got[2][1]["windows"], want_long.shape[0])

            it = fe.embed_files([JFK] * 6)
            next(it)
            it.close()  # stopping early frees the batch
            self.assertEqual(list(fe.embed_files([])), [])
            open_it = fe.embed_files([JFK] * 3)
            next(open_it)
        # closing the Frontend closed the iterator left open
        self.assertEqual(list(open_it), [])

    def test_embed_batch_stacks_items_with_their_info(self):
        with ws.Frontend(self.model, device="cpu") as fe:
            want = fe.embed(self.jfk)
            x44 = np.repeat(self.jfk[:, None], 2, axis=1)  # [n, 2] stereo
            emb, info = fe.embed_batch([self.jfk, JFK, x44])
            self.assertEqual(emb.shape, (3, 1, 1500, fe.d_model))
            assert_same_bits(self, "array item", emb[0, 0], want)
            assert_same_bits(self, "path item", emb[1, 0], fe.embed_file(JFK))
            assert_same_bits(self, "stereo item", emb[2, 0], fe.embed(x44))
            self.assertEqual([i["windows"] for i in info], [1, 1, 1])
            self.assertEqual(info[0]["content_frames"], len(self.jfk) // 160)
            self.assertEqual(info[0]["valid_ctx"], (len(self.jfk) // 160 + 1) // 2)
            self.assertEqual(info[2]["src_channels"], 2)
            self.assertEqual(info[1], fe.pcm_info(self.jfk) | {"src_rate": 16000, "src_channels": 1})
            # different window counts: a list; a failing item raises, or takes its place
            emb, info = fe.embed_batch([self.jfk, self.long_wav])
            self.assertIsInstance(emb, list)
            self.assertEqual(emb[1].shape[0], info[1]["windows"])
            with self.assertRaises(ws.Error):
                fe.embed_batch([self.jfk, os.path.join(self.tmp, "missing.wav")])
            emb, info = fe.embed_batch([self.jfk, os.path.join(self.tmp, "missing.wav")], errors="return")
            self.assertIsInstance(emb[1], ws.Error)
            self.assertIsNone(info[1])
            emb, info = fe.embed_batch([])
            self.assertEqual((emb, info), ([], []))
            with self.assertRaises(ValueError):
                fe.embed_batch([self.jfk], errors="skip")
            with self.assertRaises(ValueError):
                ws.Frontend(self.model, device="cpu", output="torch")
            with self.assertRaises(ValueError):
                ws.Frontend(self.model, device="cpu", output="jax")
            with self.assertRaises(ws.Error):
                ws.Frontend(self.model, device="cpu", mel_device="cuda")
            self.assertEqual(ws.Frontend(self.model, device="cpu", mel_device="cpu").mel_device, "cpu")

    def test_errors_carry_the_librarys_message(self):
        with self.assertRaises(ws.Error) as cm:
            ws.load_audio(os.path.join(self.tmp, "no-such-file.wav"))
        self.assertIn("no-such-file.wav", str(cm.exception))
        self.assertIsInstance(cm.exception, RuntimeError)
        with self.assertRaises(ws.Error) as cm:
            ws.Frontend(os.path.join(self.tmp, "no-model.gguf"))
        self.assertIn("no-model.gguf", str(cm.exception))
        with ws.Frontend() as fe:  # no model: log-Mel only
            self.assertEqual(fe.d_model, 0)
            with self.assertRaises(ws.Error) as cm:
                fe.embed(self.jfk)
            self.assertTrue(str(cm.exception), "a message")
            with self.assertRaises(ws.Error):
                fe.embed_files([JFK])
        with self.assertRaises(ws.Error) as cm:
            ws.log_mel(self.jfk, sample_rate=0)  # the library refuses the rate
        self.assertIn("0", str(cm.exception))
        with self.assertRaises(ws.Error) as cm:
            ws.log_mel(self.jfk, n_mels=64)
        self.assertIn("64", str(cm.exception))
        with self.assertRaises(ws.Error):
            ws.log_mel(np.array([0.0, np.nan, 0.0], np.float32))
        with self.assertRaises(TypeError):
            ws.log_mel(self.jfk, sample_rate="16k")
        with self.assertRaises(TypeError):
            ws.log_mel(self.jfk, sample_rate=16000.5)
        with self.assertRaises(ValueError):
            ws.log_mel(self.jfk, pad="reflect")
        with self.assertRaises(TypeError):
            ws.log_mel(self.jfk.astype(np.int64))
        with self.assertRaises(ValueError):
            ws.log_mel(np.zeros((2, 2, 2), np.float32))
        with self.assertRaises(ws.Error):
            ws.Frontend(device="tpu")
        fe = ws.Frontend()
        fe.close()
        fe.close()
        with self.assertRaises(ValueError):
            fe.log_mel(self.jfk)


class AudioSourcesTest(Fixture):
    """load_audio and embed_file take paths, a file's bytes and file objects, segments and
    the decoder: each the path's samples and embeddings."""

    def test_bytes_and_file_objects_give_the_paths_samples(self):
        import io

        with open(JFK, "rb") as f:
            data = f.read()
        for src in (data, bytearray(data), memoryview(data), io.BytesIO(data)):
            assert_same_bits(self, type(src).__name__, ws.load_audio(src), self.jfk)
        with open(JFK, "rb") as f:
            assert_same_bits(self, "open file", ws.load_audio(f), self.jfk)
        with self.assertRaises(ws.Error) as cm:
            ws.load_audio(b"not audio at all, a few bytes of text")
        self.assertTrue(str(cm.exception).startswith("(memory): "), str(cm.exception))
        bad = os.path.join(self.tmp, "bad.wav")
        with open(bad, "wb") as f:
            f.write(b"RIFF\x00\x00\x00\x00WAVE nothing else")
        with open(bad, "rb") as f, self.assertRaises(ws.Error) as cm:
            ws.load_audio(f)
        self.assertTrue(str(cm.exception).startswith(bad + ": "), str(cm.exception))
        with open(JFK, "r", errors="replace") as f, self.assertRaises(TypeError):
            ws.load_audio(f)
        with self.assertRaises(TypeError):
            ws.load_audio(12)

    def test_segments_and_decode(self):
        seg = ws.load_audio(JFK, start=2.5, duration=3.25)
        assert_same_bits(self, "a 16 kHz segment", seg, self.jfk[40000:92000])
        assert_same_bits(self, "to the end", ws.load_audio(JFK, start=10), self.jfk[160000:])
        with open(JFK, "rb") as f:
            assert_same_bits(self, "a segment of bytes", ws.load_audio(f.read(), 2.5, 3.25), seg)
        for bad in (dict(start=-1), dict(duration=float("nan")), dict(decode="sox")):
            with self.assertRaises(ValueError):
                ws.load_audio(JFK, **bad)
        with self.assertRaises(ws.Error) as cm:
            ws.load_audio(JFK, start=20, duration=1)
        self.assertIn("the segment starts at 20.000 s, after the end", str(cm.exception))
        try:
            openai = ws.load_audio(JFK, decode="openai")
        except ws.Error as e:
            self.assertIn("needs FFmpeg's libraries", str(e))
            return
        # a 16 kHz int16 mono WAV: openai's samples are its own
        assert_same_bits(self, "decode openai of 16 kHz int16", openai, self.jfk)

    @unittest.skipIf(shutil.which("ffmpeg") is None, "ffmpeg is not installed")
    def test_decode_openai_is_openai_whispers_ffmpeg_samples(self):
        m4a = os.path.join(self.tmp, "jfk44.m4a")
        subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", "-i", JFK, "-ar", "44100", "-ac", "2",
                        "-c:a", "aac", m4a], check=True)
        # whisper.audio.load_audio's command and conversion
        out = subprocess.run(["ffmpeg", "-nostdin", "-threads", "0", "-i", m4a, "-f", "s16le", "-ac", "1",
                              "-acodec", "pcm_s16le", "-ar", "16000", "-"], capture_output=True, check=True).stdout
        want = np.frombuffer(out, np.int16).flatten().astype(np.float32) / 32768.0
        assert_same_bits(self, "decode openai of AAC 44.1 kHz stereo", ws.load_audio(m4a, decode="openai"), want)
        with open(m4a, "rb") as f:
            assert_same_bits(self, "the same from a file object", ws.load_audio(f, decode="openai"), want)
        with ws.Frontend(self.model, device="cpu", decode="openai") as fe:
            assert_same_bits(self, "Frontend(decode='openai').embed_file", fe.embed_file(m4a), fe.embed_audio(want))
        default = ws.load_audio(m4a)
        self.assertEqual(default.shape, want.shape)
        self.assertFalse(np.array_equal(default, want), "the default decoder resamples in float")

    def test_embed_file_and_embed_take_bytes_and_segments(self):
        with open(JFK, "rb") as f:
            data = f.read()
        with ws.Frontend(self.model, device="cpu") as fe:
            whole = fe.embed_file(JFK)
            assert_same_bits(self, "embed_file(bytes)", fe.embed_file(data), whole)
            assert_same_bits(self, "embed(bytes)", fe.embed(data), whole)
            with open(JFK, "rb") as f:
                assert_same_bits(self, "embed(file object)", fe.embed(f), whole)
            assert_same_bits(self, "embed_file(path, segment)", fe.embed_file(JFK, start=2.5, duration=3.25),
                             fe.embed_audio(self.jfk[40000:92000]))
            with self.assertRaises(ws.Error) as cm:
                fe.embed_file(b"\x00" * 100)
            self.assertTrue(str(cm.exception).startswith("(memory): "), str(cm.exception))
        with self.assertRaises(ValueError):
            ws.Frontend(self.model, device="cpu", decode="sox")


class PackageTest(unittest.TestCase):
    def test_versions(self):
        self.assertEqual(ws.library_version(), ws.__version__)

    def test_missing_library_is_a_clear_import_error(self):
        env = dict(os.environ, WHISPER_STEM_LIB="/nonexistent/libwhisper-stem.so.0")
        r = subprocess.run([sys.executable, "-c", "import whisper_stem"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(b"ImportError", r.stderr)
        self.assertIn(b"WHISPER_STEM_LIB=/nonexistent/libwhisper-stem.so.0", r.stderr)
        env = {k: v for k, v in os.environ.items() if k not in ("WHISPER_STEM_LIB", "LD_LIBRARY_PATH")}
        r = subprocess.run([sys.executable, "-c", "import whisper_stem; print(whisper_stem.library_path())"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode == 0:
            self.skipTest("a libwhisper-stem.so.0 is installed here: %s" % r.stdout.decode().strip())
        self.assertIn(b"Tried:", r.stderr)
        self.assertIn(b"libwhisper-stem.so.0", r.stderr)

    def test_make_install_python_finds_the_prefixs_library(self):
        tmp = tempfile.mkdtemp(prefix="ws-inst-")
        try:
            r = subprocess.run(["make", "-s", "-C", ROOT, "install-python", "PREFIX=" + tmp, "WS_PYTHON=" + sys.executable],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode != 0 and b"missing packages" in r.stdout:
                self.skipTest("the Makefile lacks its build packages here: %s" % r.stdout.decode().strip()[-200:])
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            site = subprocess.run([sys.executable, os.path.join(ROOT, "python", "site-dir.py"), tmp],
                                  stdout=subprocess.PIPE, check=True).stdout.decode().strip()
            self.assertTrue(os.path.exists(os.path.join(site, "whisper_stem", "__init__.py")), r.stdout.decode())
            os.makedirs(os.path.join(tmp, "lib"), exist_ok=True)
            lib = os.path.join(tmp, "lib", "libwhisper-stem.so.0")
            os.symlink(os.path.abspath(_lib_path()), lib)  # as `make install PREFIX=tmp` would put it
            env = {k: v for k, v in os.environ.items() if k not in ("WHISPER_STEM_LIB", "LD_LIBRARY_PATH")}
            env["PYTHONPATH"] = site
            r = subprocess.run([sys.executable, "-c", "import whisper_stem as ws; print(ws.library_path())"],
                               env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            self.assertEqual(r.stdout.decode().strip(), lib)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_installed_copy_loads_its_own_library(self):
        # scripts/test-wheel.sh: the suite runs against the wheel installed in a venv
        venv = os.environ.get("WS_EXPECT_INSTALLED")
        if not venv:
            self.skipTest("not run from an installed wheel (make test-wheel)")
        pkg = os.path.dirname(os.path.realpath(ws.__file__))
        self.assertTrue(pkg.startswith(os.path.realpath(venv)), "imported from %s" % pkg)
        self.assertEqual(os.path.realpath(ws.library_path()), os.path.join(pkg, "libwhisper-stem.so.0"))
        with open("/proc/self/maps") as f:
            maps = f.read()
        for name in ("libsndfile.so", "libfftw3f.so", "libsoxr.so"):
            paths = {l.split()[-1] for l in maps.splitlines() if name in l}
            self.assertTrue(paths, "%s is loaded" % name)
            for p in paths:
                self.assertTrue(p.startswith(os.path.join(pkg, "lib")), "%s from the wheel's lib/, not %s" % (name, p))
        self.assertEqual(ws.log_mel(np.zeros(16000, np.float32)).shape, (80, 3000))

    def test_offline_pip_install_in_a_venv(self):
        # The README's install command, with no network: a venv seeing Debian's numpy,
        # setuptools from the system, nothing fetched.
        tmp = tempfile.mkdtemp(prefix="ws-pip-")
        try:
            src = os.path.join(tmp, "python")
            shutil.copytree(os.path.join(ROOT, "python"), src,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
            venv = os.path.join(tmp, "venv")
            r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                self.skipTest("no venv module (Debian: python3-venv): %s" % r.stdout.decode()[-300:])
            r = subprocess.run([os.path.join(venv, "bin", "python"), "-c", "import numpy, setuptools, wheel"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                self.skipTest("the venv sees no system numpy, setuptools or wheel (Debian: python3-numpy, "
                              "python3-wheel): %s" % r.stdout.decode().strip().splitlines()[-1])
            pip = [os.path.join(venv, "bin", "pip"), "install", "-q", "--no-build-isolation", "--no-index", src]
            r = subprocess.run(pip, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            code = "import whisper_stem as ws, numpy as np; print(ws.__file__); print(ws.log_mel(np.zeros(1600, np.float32)).shape)"
            r = subprocess.run([os.path.join(venv, "bin", "python"), "-c", code], cwd=tmp,
                               env=dict(os.environ, PYTHONPATH=""), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(r.returncode, 0, r.stdout.decode())
            out = r.stdout.decode()
            self.assertIn(os.path.join(venv, "lib"), out)
            self.assertIn("(80, 3000)", out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()

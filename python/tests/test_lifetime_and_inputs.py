"""whisper_stem: the checks made on Python arguments before they reach the C library.

Run with the rest (make test-python).
"""

import os
import unittest

import numpy as np

import whisper_stem as ws

from .test_whisper_stem import JFK, Fixture, assert_same_bits

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

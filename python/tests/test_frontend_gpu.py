"""Frontend on a GPU: output="torch" (CUDA tensors computed into PyTorch's memory on its
current stream) against output="numpy" bit for bit, the GPU's log-Mel against the command,
a non-default stream, a long input, embed_batch and embed_files' info, embed_files into CUDA
tensors without a device-to-host copy.

Skipped unless torch.cuda.is_available() and the library opens the GPU. CI has no GPU: run
it on a machine with one, e.g.
  WHISPER_STEM_LIB=build/libwhisper-stem.so.0 WS_BUILD=build PYTHONPATH=python \\
      python3 -m unittest tests.test_frontend_gpu -v      (from python/)
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover
    raise unittest.SkipTest("torch is not installed (Debian: python3-torch)")

import whisper_stem as ws

from .test_whisper_stem import CLI, JFK, MKMODEL, assert_same_bits, speechlike, write_wav16


def setUpModule():
    if not torch.cuda.is_available():
        raise unittest.SkipTest("no CUDA device (torch.cuda.is_available() is False)")
    try:
        ws.Frontend(device="cuda").close()
    except ws.Error as e:
        raise unittest.SkipTest("the library opens no GPU: %s" % e)


class FrontendGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ws-pygpu-")
        cls.model = os.path.join(cls.tmp, "tiny.gguf")
        subprocess.run([MKMODEL, "--size", "tiny", "-o", cls.model], check=True, stdout=subprocess.DEVNULL)
        cls.jfk = ws.load_audio(JFK)
        cls.long16 = speechlike(17 * 480000 + 4321, seed=5)  # 18 windows: more than a GPU slot's 16
        cls.long_wav = os.path.join(cls.tmp, "long.wav")
        write_wav16(cls.long_wav, cls.long16)
        kw = dict(device="cuda", precision="bf16", pos=True)
        cls.fe_np = ws.Frontend(cls.model, **kw)
        cls.fe_t = ws.Frontend(cls.model, output="torch", **kw)

    @classmethod
    def tearDownClass(cls):
        cls.fe_np.close()
        cls.fe_t.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_gpu_log_mel_is_the_default_and_gives_the_commands_bytes(self):
        self.assertEqual(self.fe_np.mel_device, "cuda:0")
        out = os.path.join(self.tmp, "cmd.npy")
        subprocess.run([CLI, "-q", "--device", "cuda:0", "--precision", "bf16", "--pos", "-m", self.model, JFK,
                        "-o", out], check=True)
        assert_same_bits(self, "embed_file, GPU log-Mel", self.fe_np.embed_file(JFK), np.load(out))

    def test_torch_output_is_the_numpy_outputs_bits(self):
        for name, x in (("jfk", self.jfk), ("long", self.long16)):
            want = self.fe_np.embed(x)
            got = self.fe_t.embed(x)
            self.assertIsInstance(got, torch.Tensor)
            self.assertTrue(got.is_cuda)
            self.assertEqual(got.dtype, torch.float32)
            self.assertEqual(tuple(got.shape), want.shape)
            assert_same_bits(self, name, got.cpu().numpy(), want)
        got = self.fe_t.embed_file(self.long_wav)
        assert_same_bits(self, "embed_file", got.cpu().numpy(), self.fe_np.embed_file(self.long_wav))

    def test_torch_output_on_a_side_stream_and_used_there(self):
        want = self.fe_np.embed(self.jfk)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            # a buffer the caching allocator frees on s and hands to the result again: the
            # result must be written after this kernel, not beside it
            junk = torch.full((1500 * 384 * 4,), 7.0, device="cuda")
            del junk
            got = self.fe_t.embed(self.jfk)
            twice = got * 2  # on s, after the result
        s.synchronize()
        assert_same_bits(self, "side stream", got.cpu().numpy(), want)
        assert_same_bits(self, "used on the stream", twice.cpu().numpy(), want * 2)

    def test_an_allocator_failure_is_raised_not_written_through(self):
        real = torch.empty

        def failing(*a, **k):
            raise torch.cuda.OutOfMemoryError("no memory (test)")

        torch.empty = failing
        try:
            with self.assertRaises(torch.cuda.OutOfMemoryError):
                self.fe_t.embed(self.jfk)
        finally:
            torch.empty = real
        assert_same_bits(self, "after it", self.fe_t.embed(self.jfk).cpu().numpy(), self.fe_np.embed(self.jfk))

    def test_cpu_log_mel_with_torch_output(self):
        fe = ws.Frontend(self.model, device="cuda", precision="bf16", pos=True, mel_device="cpu", output="torch")
        fe_np = ws.Frontend(self.model, device="cuda", precision="bf16", pos=True, mel_device="cpu")
        self.assertEqual(fe.mel_device, "cpu")
        assert_same_bits(self, "CPU log-Mel", fe.embed(self.jfk).cpu().numpy(), fe_np.embed(self.jfk))
        out = os.path.join(self.tmp, "cmdcpu.npy")
        subprocess.run([CLI, "-q", "--device", "cuda:0", "--mel-device", "cpu", "--precision", "bf16", "--pos",
                        "-m", self.model, JFK, "-o", out], check=True)
        assert_same_bits(self, "CPU log-Mel, the command's", fe_np.embed_file(JFK), np.load(out))
        fe.close()
        fe_np.close()

    def test_embed_batch_and_files_on_the_gpu(self):
        emb, info = self.fe_t.embed_batch([self.jfk, JFK, self.jfk[:16000]])
        self.assertTrue(emb.is_cuda)
        self.assertEqual(tuple(emb.shape), (3, 1, 1500, 384))
        want = self.fe_np.embed(self.jfk)
        assert_same_bits(self, "batch item 0", emb[0, 0].cpu().numpy(), want)
        assert_same_bits(self, "batch item 1", emb[1, 0].cpu().numpy(), self.fe_np.embed_file(JFK))
        self.assertEqual(info[2]["content_frames"], 100)
        paths = [JFK, self.long_wav, os.path.join(self.tmp, "missing.wav")] + [JFK] * 20
        got = list(self.fe_np.embed_files(paths, errors="return", info=True))
        assert_same_bits(self, "files: long", got[1][0], self.fe_np.embed_file(self.long_wav))
        self.assertEqual(got[1][1]["windows"], 18)
        self.assertIsInstance(got[2][0], ws.Error)
        for k in (0, 3, 22):
            assert_same_bits(self, "files: jfk %d" % k, got[k][0], self.fe_np.embed_file(JFK))
        # torch output: computed into tensors on the GPU (no host copy), the numpy bits
        dev = list(self.fe_t.embed_files(paths, errors="return", info=True))
        for k in (0, 1, 3, 22):
            self.assertTrue(dev[k][0].is_cuda)
            assert_same_bits(self, "torch files %d" % k, dev[k][0].cpu().numpy(), got[k][0])
            self.assertEqual(dev[k][1], got[k][1])
        self.assertIsInstance(dev[2][0], ws.Error)
        it = self.fe_t.embed_files(paths)  # closed early with launches in flight
        next(it)
        it.close()

    def test_torch_output_files_make_no_device_to_host_copy(self):
        from torch.profiler import ProfilerActivity, profile

        paths = [JFK] * 12
        list(self.fe_t.embed_files(paths))  # warm
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            out = list(self.fe_t.embed_files(paths))
            torch.cuda.synchronize()
        names = [e.name for e in prof.events()]
        if not any(n.startswith("ws_") for n in names):
            self.skipTest("the CUDA profiler saw none of the library's kernels here")
        dtoh = [n for n in names if "DtoH" in n or "Device -> Pageable" in n or "Device -> Pinned" in n]
        self.assertEqual(dtoh, [], "embed_files with torch output copied to the host")
        assert_same_bits(self, "profiled", out[5].cpu().numpy(), self.fe_np.embed_file(JFK))

    def test_features_and_log_mel_on_the_gpu(self):
        cpu = ws.features([self.jfk, self.long16[:480000]])
        gpu = ws.features([self.jfk, self.long16[:480000]], device="cuda")
        self.assertEqual(gpu.shape, cpu.shape)
        self.assertLessEqual(float(np.abs(gpu - cpu).max()), 1e-4)
        m = ws.log_mel(self.jfk, device="cuda")
        self.assertLessEqual(float(np.abs(m - ws.log_mel(self.jfk)).max()), 1e-4)


if __name__ == "__main__":
    unittest.main()

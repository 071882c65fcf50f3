"""whisper_stem.torch on CUDA tensors: the checks of test_torch.py (forward values and
gradients against F.conv1d in float64 and causal-conv1d's reference semantics, channel-last
inputs without copies, packed sequences and carried states, the SGD loop) run on the GPU
engine, plus what only a GPU has: a non-default stream, shapes that take the fast kernels
(the depthwise vector kernels, the dense implicit GEMM on tensor cores), the math modes, and
torch.backends.cuda.matmul.allow_tf32 leaving float32 exact.

Skipped unless torch.cuda.is_available(); skipped too while the GPU engine refuses plans
without weights (ws_gpu_conv_new's "GPU plans take their weights here"), and, for the
packed-sequence and state tests, while it refuses those with "packed sequences and carried
states are not implemented". CI has no GPU: run it on a machine with one, e.g.
  WHISPER_STEM_LIB=build/libwhisper-stem.so.0 PYTHONPATH=python \\
      python3 -m unittest tests.test_torch_gpu -v      (from python/)
"""

import unittest

try:
    import torch
except ImportError:  # pragma: no cover
    raise unittest.SkipTest("torch is not installed (Debian: python3-torch)")

import whisper_stem
import whisper_stem.torch as wst

from . import test_torch as T
from . import torch_ref as R

# what ws_gpu_conv_new says while it takes weights only when the plan is made
GPU_WEIGHTS_REFUSED = "GPU plans take their weights here"

_reason = {}


def gpu_skip_reason():
    """Why the GPU tests cannot run here, or None."""
    if "r" not in _reason:
        r = None
        if not torch.cuda.is_available():
            r = "no CUDA device (torch.cuda.is_available() is False)"
        else:
            try:
                wst.conv1d(torch.zeros(1, 1, 4, device="cuda"), torch.zeros(1, 1, 2, device="cuda"))
                torch.cuda.synchronize()
            except whisper_stem.Error as e:
                if GPU_WEIGHTS_REFUSED not in str(e):
                    raise
                r = "the GPU engine refuses plans without weights: %s" % e
        _reason["r"] = r
    return _reason["r"]


class OnGpu:
    dev = "cuda"
    bitwise = False  # kernels may differ between a chunk and the whole: bounds instead

    @classmethod
    def setUpClass(cls):
        r = gpu_skip_reason()
        if r:
            raise unittest.SkipTest(r)


class GpuConv1dTest(OnGpu, T.Conv1dTest):
    pass


class GpuCausalConv1dTest(OnGpu, T.CausalConv1dTest):
    pass


class GpuTrainingTest(OnGpu, T.TrainingTest):
    pass


class GpuSignatureCacheTest(OnGpu, T.SignatureCacheTest):
    pass


def check_bound(tc, name, got, want, scale, c):
    """|got - want| <= c * scale (scale: the sum of the terms' magnitudes)."""
    err = (got.detach().double().cpu() - want.detach().double().cpu()).abs()
    ratio = err / (c * scale.detach().double().cpu() + 1e-30)
    tc.assertLessEqual(float(ratio.max()), 1.0, "%s: error %.3g over %.3g x the magnitude sum" % (
        name, float(err.reshape(-1)[int(ratio.argmax())]), c))


class GpuOnlyTest(OnGpu, T.OnDevice):

    def test_runs_on_a_non_default_stream(self):
        """Forward and backward under torch.cuda.stream(s): the engine's kernels are ordered
        after s's pending work (x is written on s behind a spin of ~0.1 s) and before the use
        of y on s; nothing is synchronised in between."""
        gen = torch.Generator().manual_seed(31)
        src = T.randn(4, 64, 300, dtype=torch.float32, gen=gen)
        w0 = T.randn(64, 4, dtype=torch.float32, gen=gen) / 2
        b0 = T.randn(64, dtype=torch.float32, gen=gen)
        g0 = T.randn(4, 64, 300, dtype=torch.float32, gen=gen)
        src_d, g_d = src.cuda(), g0.cuda()
        x = torch.zeros_like(src_d)
        w, b = w0.cuda().requires_grad_(), b0.cuda().requires_grad_()
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        self.assertNotEqual(s.cuda_stream, torch.cuda.current_stream().cuda_stream)
        with torch.cuda.stream(s):
            torch.cuda._sleep(200_000_000)
            x.copy_(src_d)
            xg = x.requires_grad_()
            y = wst.causal_conv1d(xg, w, b, activation="silu")
            y2 = y * 2  # used on s
            dx, dw, db = torch.autograd.grad(y2, [xg, w, b], g_d)
            out = [v.clone() for v in (y2, dx, dw, db)]
        s.synchronize()
        xd, wd, bd = (v.double().requires_grad_() for v in (src, w0, b0))
        want = R.ref_causal(xd, wd, bd, activation="silu") * 2
        ref = torch.autograd.grad(want, [xd, wd, bd], g0.double())
        sc = R.causal_scales(src, w0, b0, g0)
        R.assert_close(self, "y on stream", out[0], want, sc["y"] * 2, torch.float32)
        for nm, a, r in zip("xwb", out[1:], ref):
            R.assert_close(self, "d%s on stream" % nm, a, r, sc[nm] * 2, torch.float32)

    def test_captured_in_a_cuda_graph(self):
        """A causal_conv1d forward and a conv1d forward (weights per call) captured in a CUDA
        graph on the stream they were warmed up on: replays with new x and new weights (copied
        into the captured tensors) give the eager results bit for bit. Capture fails if a call
        allocates device memory or synchronises."""
        gen = torch.Generator().manual_seed(47)
        C, T_, K = 64, 256, 4
        x = T.randn(2, C, T_, dtype=torch.float32, gen=gen).cuda()
        w = (T.randn(C, K, dtype=torch.float32, gen=gen) / 2).cuda()
        b = T.randn(C, dtype=torch.float32, gen=gen).cuda()
        w2 = (T.randn(C, C, 3, dtype=torch.float32, gen=gen) / 8).cuda()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):  # plans made, scratch at its size, on s
                wst.conv1d(wst.causal_conv1d(x, w, b, activation="silu"), w2, padding=1, act="gelu")
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=s):
            y = wst.conv1d(wst.causal_conv1d(x, w, b, activation="silu"), w2, padding=1, act="gelu")
        for step in range(3):
            x.copy_(T.randn(2, C, T_, dtype=torch.float32, gen=gen).cuda())
            w.copy_((T.randn(C, K, dtype=torch.float32, gen=gen) / 2).cuda())
            w2.copy_((T.randn(C, C, 3, dtype=torch.float32, gen=gen) / 8).cuda())
            graph.replay()
            eager = wst.conv1d(wst.causal_conv1d(x, w, b, activation="silu"), w2, padding=1, act="gelu")
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(y, eager), "replay %d differs from the eager call" % step)

    def test_fast_kernel_shapes(self):
        """Shapes that take the depthwise vector kernels (aligned, T a multiple of the
        vector) and the dense implicit GEMM, forward and backward, f32 and bf16."""
        for dtype in (torch.float32, torch.bfloat16):
            for chlast in (False, True):
                with self.subTest(what="depthwise", dtype=dtype, chlast=chlast):
                    T.CausalConv1dTest.check_plain(self, 2, 256, 512, 4, dtype, True, "silu", chlast)
                with self.subTest(what="dense", dtype=dtype, chlast=chlast):
                    case = ("dense_big", 2, 128, 128, 256, 3, dict(padding=1, act="gelu"), True, None, chlast)
                    T.Conv1dTest.run_case(self, case, dtype)
                with self.subTest(what="strided", dtype=dtype, chlast=chlast):
                    case = ("dac", 2, 64, 96, 333, 16, dict(stride=8, padding=4), True, None, chlast)
                    T.Conv1dTest.run_case(self, case, dtype)

    def test_math_modes_and_allow_tf32(self):
        """float32 tensors: the default is exact float32 (allow_tf32 on or off); "tf32" and
        "bf16" round the inputs (errors of ~2^-11 and ~2^-8 of the magnitude sum)."""
        gen = torch.Generator().manual_seed(33)
        x0 = T.randn(2, 192, 200, dtype=torch.float32, gen=gen)
        w0 = T.randn(160, 192, 3, dtype=torch.float32, gen=gen) / 24
        b0 = T.randn(160, dtype=torch.float32, gen=gen)
        want = R.ref_conv1d(x0.double(), w0.double(), b0.double(), pads=(1, 1))
        scale = R.conv1d_scales(x0, w0, b0, torch.ones(2, 160, 200), pads=(1, 1))[0]
        x, w, b = x0.cuda(), w0.cuda(), b0.cuda()
        old = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        try:
            for flag in (False, True):
                torch.backends.cuda.matmul.allow_tf32 = flag
                torch.backends.cudnn.allow_tf32 = flag
                R.assert_close(self, "f32 allow_tf32=%s" % flag, wst.conv1d(x, w, b, padding=1), want, scale,
                               torch.float32)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old
        check_bound(self, "tf32", wst.conv1d(x, w, b, padding=1, math="tf32"), want, scale, 2.0 ** -10)
        check_bound(self, "bf16 math", wst.conv1d(x, w, b, padding=1, math="bf16"), want, scale, 2.0 ** -7)

    def test_plans_are_kept_per_descriptor_and_stream(self):
        x = torch.randn(1, 8, 16, device="cuda")
        w = torch.randn(8, 8, 3, device="cuda")
        g = wst._gpu(torch.cuda.current_device())
        wst.conv1d(x, w, padding=1)
        n = len(g.plans)
        wst.conv1d(x, w * 2, padding=1)  # new weights, same descriptor: no new plan
        self.assertEqual(len(g.plans), n)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            wst.conv1d(x, w, padding=1)
        self.assertEqual(len(g.plans), n + 1)
        torch.cuda.synchronize()

    def test_stream_handles(self):
        """The stream the engine is given: the current stream's CUstream; PyTorch's default
        stream (0, CUDA's legacy stream) as CU_STREAM_LEGACY (1), since 0 would be the
        ws_gpu's own stream to the engine."""
        dev = torch.device("cuda", torch.cuda.current_device())
        self.assertEqual(torch.cuda.default_stream(dev).cuda_stream, 0)
        self.assertEqual(wst._stream_handle(dev), 1)
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            self.assertEqual(wst._stream_handle(dev), s.cuda_stream)
            self.assertNotIn(wst._stream_handle(dev), (0, 1))

    @unittest.skipUnless(torch.cuda.device_count() >= 2, "needs two CUDA devices")
    def test_a_second_device_leaves_the_current_one(self):
        """Tensors on cuda:1 while cuda:0 is current: the result is right, PyTorch's current
        device is still 0 afterwards, and work on it goes on there."""
        gen = torch.Generator().manual_seed(34)
        x0 = T.randn(2, 32, 64, dtype=torch.float32, gen=gen)
        w0, b0 = T.randn(32, 4, dtype=torch.float32, gen=gen), T.randn(32, dtype=torch.float32, gen=gen)
        torch.cuda.set_device(0)
        x, w, b = (v.to("cuda:1") for v in (x0, w0, b0))
        x.requires_grad_()
        y = wst.causal_conv1d(x, w, b, activation="silu")
        self.assertEqual(torch.cuda.current_device(), 0)
        self.assertEqual(y.device, torch.device("cuda:1"))
        (dx,) = torch.autograd.grad(y, [x], torch.ones_like(y))
        self.assertEqual(torch.cuda.current_device(), 0)
        z = torch.ones(4, device="cuda") * 3  # on cuda:0
        self.assertEqual(z.device, torch.device("cuda:0"))
        torch.cuda.synchronize(1)
        xd = x0.double().requires_grad_()
        want = R.ref_causal(xd, w0.double(), b0.double(), activation="silu")
        sc = R.causal_scales(x0, w0, b0, torch.ones(2, 32, 64))
        R.assert_close(self, "y on cuda:1", y, want, sc["y"], torch.float32)
        (rx,) = torch.autograd.grad(want, [xd], torch.ones_like(want))
        R.assert_close(self, "dx on cuda:1", dx, rx, sc["x"], torch.float32)
        self.assertEqual(float(z.sum()), 12.0)

    def test_device_mismatch_raises(self):
        x = torch.randn(1, 4, 8, device="cuda")
        with self.assertRaisesRegex(ValueError, "w is on cpu but x is on cuda"):
            wst.conv1d(x, torch.randn(4, 4, 3))
        with self.assertRaisesRegex(ValueError, "b is on cpu"):
            wst.causal_conv1d(x, torch.randn(4, 3, device="cuda"), torch.randn(4))


if __name__ == "__main__":
    unittest.main()

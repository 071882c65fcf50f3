"""whisper_stem.torch on CPU tensors: conv1d and causal_conv1d, forward and autograd,
against torch.nn.functional.conv1d in float64 and causal-conv1d's reference semantics
(python/tests/torch_ref.py).

Run with the rest (make test-python; Debian's python3-torch, CPU only). Tests of packed
sequences (seq_idx) and carried states (initial_states, final_states) skip while the
engine refuses them with "packed sequences and carried states are not implemented", and
run once it computes them.
"""

import ctypes
import os
import shutil
import subprocess
import tempfile
import unittest

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover
    raise unittest.SkipTest("torch is not installed (Debian: python3-torch)")

import whisper_stem
import whisper_stem.torch as wst
from whisper_stem import _conv

from . import torch_ref as R

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
STATES_REFUSED = "packed sequences and carried states are not implemented"

_states = {}


def states_refused(dev="cpu"):
    """The engine's refusal message when it refuses seq_idx / states on `dev`, else None."""
    if dev not in _states:
        msg = None
        try:
            wst.causal_conv1d(torch.zeros(1, 1, 4, device=dev), torch.zeros(1, 2, device=dev),
                              return_final_states=True)
        except whisper_stem.Error as e:
            if STATES_REFUSED in str(e):
                msg = str(e)
        _states[dev] = msg
    return _states[dev]


class OnDevice(unittest.TestCase):
    """Tests whose tensors live on self.dev (CPU here; test_torch_gpu.py subclasses them
    with "cuda"); random values are drawn on the CPU, references computed there."""
    dev = "cpu"
    bitwise = True  # chunked runs equal a whole run bit for bit (asked of the CPU engine)

    def on(self, t):
        return t.to(self.dev) if t is not None else None


class Recorder:
    """Replaces whisper_stem.torch's engine call for a block, recording (key, args) of each."""

    def __init__(self):
        self.calls = []

    def __enter__(self):
        self.real = wst._engine_call

        def call(device, key, args):
            rec = {f: getattr(args, f) for f in _conv.ARGS_FIELDS}
            self.calls.append((dict(zip(_conv.DESC_FIELDS, key)), rec))
            return self.real(device, key, args)

        wst._engine_call = call
        return self

    def __exit__(self, *exc):
        wst._engine_call = self.real
        return False


def randn(*shape, dtype=None, gen=None):
    t = torch.randn(*shape, generator=gen, dtype=torch.float64)
    return t.to(dtype) if dtype is not None else t


# conv1d cases: name, n, c_in, c_out, t, k, kwargs (stride, padding, dilation, groups, act,
# pre), bias, add ("full", "shared" or None), channel-last x
CONV_CASES = [
    ("dense", 2, 8, 6, 20, 3, dict(padding=1), True, None, False),
    ("dense_nlc", 2, 8, 6, 20, 3, dict(padding=1, act="gelu"), True, None, True),
    ("dense_nobias", 3, 5, 7, 17, 5, dict(padding=(3, 1)), False, None, False),
    ("strided", 2, 4, 8, 23, 4, dict(stride=2, padding=(1, 2), act="relu"), True, None, False),
    ("strided_nlc", 2, 4, 8, 23, 4, dict(stride=3, padding=2), True, None, True),
    ("dilated", 2, 6, 6, 30, 3, dict(dilation=3, padding=3, act="gelu"), True, None, False),
    ("dilated_same", 1, 6, 4, 19, 4, dict(dilation=2, padding="same", act="silu"), True, None, False),
    ("valid", 2, 3, 5, 12, 3, dict(padding="valid"), True, None, True),
    ("grouped", 2, 8, 12, 16, 3, dict(groups=4, padding=1, act="silu"), True, None, False),
    ("grouped_nlc", 2, 8, 4, 16, 3, dict(groups=2, padding=1), True, None, True),
    ("depthwise_causal", 3, 16, 16, 24, 4, dict(groups=16, padding="causal", act="silu"), True, None, False),
    ("depthwise_causal_nlc", 3, 16, 16, 24, 4, dict(groups=16, padding="causal", act="silu"), True, None, True),
    ("depthwise_dilated", 2, 8, 8, 24, 3, dict(groups=8, padding="causal", dilation=2), False, None, True),
    ("add_full", 2, 8, 8, 16, 1, dict(act="relu"), True, "full", False),
    ("add_shared_nlc", 2, 8, 8, 16, 3, dict(padding=1, act="gelu"), True, "shared", True),
]


class Conv1dTest(OnDevice):

    def run_case(self, case, dtype):
        name, n, c_in, c_out, t, k, kw, bias, add_kind, chlast = case
        gen = torch.Generator().manual_seed(sum(map(ord, name)))
        groups = kw.get("groups", 1)
        stride, dilation = kw.get("stride", 1), kw.get("dilation", 1)
        pads = R.pads_of(kw.get("padding", 0), k, dilation)
        x0 = randn(n, c_in, t, dtype=dtype, gen=gen)
        w0 = (randn(c_out, c_in // groups, k, dtype=torch.float64, gen=gen) / (c_in // groups * k) ** 0.5).to(dtype)
        b0 = randn(c_out, dtype=dtype, gen=gen) if bias else None
        t_out = (t + pads[0] + pads[1] - dilation * (k - 1) - 1) // stride + 1
        add0 = None
        if add_kind == "full":
            add0 = randn(n, c_out, t_out, dtype=dtype, gen=gen)
        elif add_kind == "shared":
            add0 = randn(c_out, t_out, dtype=dtype, gen=gen)
        x = (R.nlc(self.on(x0)) if chlast else self.on(x0).clone()).requires_grad_()
        w = self.on(w0).clone().requires_grad_()
        b = self.on(b0).clone().requires_grad_() if bias else None
        add = self.on(add0).clone().requires_grad_() if add0 is not None else None
        with Recorder() as rec:
            y = wst.conv1d(x, w, b, add=add, **kw)
        self.assertEqual(y.dtype, dtype)
        self.assertEqual(tuple(y.shape), (n, c_out, t_out))
        if chlast:
            self.assertEqual(y.stride(), (t_out * c_out, 1, c_out), "%s: y is channel-last" % name)
            self.assertEqual(rec.calls[0][0]["x_layout"], _conv.NLC)
        else:
            self.assertTrue(y.is_contiguous())
        self.assertEqual(rec.calls[0][1]["x"], x.data_ptr(), "%s: x passed without a copy" % name)
        self.assertEqual(rec.calls[0][1]["y"], y.data_ptr())

        xd, wd = x0.double().requires_grad_(), w0.double().requires_grad_()
        bd = b0.double().requires_grad_() if bias else None
        ad = add0.double().requires_grad_() if add0 is not None else None
        ref_kw = dict(stride=stride, pads=pads, dilation=dilation, groups=groups, act=kw.get("act"))
        want = R.ref_conv1d(xd, wd, bd, add=ad, **ref_kw)
        g = randn(*want.shape, dtype=dtype, gen=gen)
        sy, sx, sw, sb = R.conv1d_scales(x0, w0, b0, g, stride=stride, pads=pads, dilation=dilation,
                                         groups=groups, add=add0)
        R.assert_close(self, name + " y", y, want, sy, dtype)

        grads = [("dx", x, xd, sx), ("dw", w, wd, sw)]
        if bias:
            grads.append(("db", b, bd, sb))
        if add is not None:
            grads.append(("dadd", add, ad, g.double().abs().sum_to_size(add.shape)))
        got = torch.autograd.grad(y, [v[1] for v in grads], self.on(g))
        ref = torch.autograd.grad(want, [v[2] for v in grads], g.double())
        for (nm, i, _, s), a, r in zip(grads, got, ref):
            self.assertEqual(a.dtype, i.dtype, "%s %s dtype" % (name, nm))
            R.assert_close(self, "%s %s" % (name, nm), a, r, s, dtype)

    def test_cases_float32(self):
        for case in CONV_CASES:
            with self.subTest(case=case[0]):
                self.run_case(case, torch.float32)

    def test_cases_bfloat16(self):
        for case in CONV_CASES:
            with self.subTest(case=case[0]):
                self.run_case(case, torch.bfloat16)

    def test_cases_float16(self):
        for case in CONV_CASES[:4]:
            with self.subTest(case=case[0]):
                self.run_case(case, torch.float16)

    def test_pre_forward(self):
        """pre (ResConv1D's relu(x) before the conv) and act, forward, without autograd."""
        gen = torch.Generator().manual_seed(3)
        for dtype in (torch.float32, torch.bfloat16):
            for pre in ("relu", "gelu", "silu"):
                x = randn(2, 8, 32, dtype=dtype, gen=gen)
                w = (randn(8, 8, 3, gen=gen) / 5).to(dtype)
                b = randn(8, dtype=dtype, gen=gen)
                add = randn(2, 8, 32, dtype=dtype, gen=gen)
                y = wst.conv1d(self.on(x), self.on(w), self.on(b), padding=9, dilation=9, act="relu", pre=pre,
                               add=self.on(add))
                want = R.ref_conv1d(x.double(), w.double(), b.double(), pads=(9, 9), dilation=9, act="relu",
                                    pre=pre, add=add.double())
                sy = R.conv1d_scales(x, w, b, torch.ones(2, 8, 32), pads=(9, 9), dilation=9, pre=pre, add=add)[0]
                # bf16 / f16 math on a GPU multiplies pre(x) rounded to the type: 2^-8 of the
                # magnitudes' sum more (gelu and silu; relu of a bf16 value is one)
                R.assert_close(self, "pre %s %s" % (pre, dtype), y, want, sy, dtype,
                               rounded=sy if dtype != torch.float32 else None)

    def test_pre_refuses_gradient_but_add_gets_one(self):
        x = self.on(torch.randn(2, 4, 10)).requires_grad_()
        w = self.on(torch.randn(4, 4, 3))
        add = self.on(torch.randn(2, 4, 10)).requires_grad_()
        y = wst.conv1d(x, w, padding=1, pre="relu", add=add)
        with self.assertRaisesRegex(RuntimeError, "pre='relu' has no backward"):
            y.sum().backward()
        # only add requiring grad: its gradient is the output's
        x.requires_grad_(False)
        y = wst.conv1d(x, w, padding=1, pre="relu", add=add)
        g = torch.randn_like(y)
        (da,) = torch.autograd.grad(y, [add], g)
        self.assertTrue(torch.equal(da, g))
        # a shared add gets the sum over the batch
        shared = self.on(torch.randn(4, 10)).requires_grad_()
        y = wst.conv1d(x, w, padding=1, pre="relu", add=shared)
        (ds,) = torch.autograd.grad(y, [shared], g)
        self.assertTrue(torch.allclose(ds, g.sum(0)))

    def test_no_grad_path_is_the_same_bits(self):
        x = self.on(torch.randn(2, 8, 33)).requires_grad_()
        w = self.on(torch.randn(6, 8, 3)).requires_grad_()
        b = self.on(torch.randn(6)).requires_grad_()
        y1 = wst.conv1d(x, w, b, stride=2, padding=1, act="gelu")
        with torch.no_grad():
            y2 = wst.conv1d(x, w, b, stride=2, padding=1, act="gelu")
        y3 = wst.conv1d(x.detach(), w.detach(), b.detach(), stride=2, padding=1, act="gelu")
        self.assertIsNotNone(y1.grad_fn)
        self.assertIsNone(y2.grad_fn)
        self.assertTrue(torch.equal(y1.detach(), y2) and torch.equal(y2, y3))

    def test_other_strides_are_copied(self):
        base = self.on(torch.randn(2, 8, 40))
        x = base[:, :, ::2]  # strides (320, 40, 2): neither layout
        w = self.on(torch.randn(4, 8, 3))
        with Recorder() as rec:
            y = wst.conv1d(x, w, padding=1)
        self.assertNotEqual(rec.calls[0][1]["x"], x.data_ptr())
        self.assertTrue(y.is_contiguous())
        x, w = x.cpu(), w.cpu()
        want = F.conv1d(x.double(), w.double(), padding=1)
        R.assert_close(self, "strided view", y, want, R.conv1d_scales(x, w, None, y.cpu(), pads=(1, 1))[0],
                       torch.float32)

    def test_channel_last_backward_passes_gradients_in_place(self):
        """A channel-last x and a channel-last output gradient reach the engine as they are;
        dx comes back channel-last, and the leaf [N][T][C] gets a contiguous gradient."""
        h = self.on(torch.randn(2, 24, 16)).requires_grad_()  # [N][T][C]
        x = h.transpose(1, 2)
        w = self.on(torch.randn(16, 1, 4)).requires_grad_()
        y = wst.conv1d(x, w, groups=16, padding="causal", act="silu")
        gy = self.on(torch.randn(2, 24, 16)).transpose(1, 2)
        with Recorder() as rec:
            y.backward(gy)
        key, args = rec.calls[0]
        self.assertEqual(key["op"], _conv.BWD)
        self.assertEqual(key["x_layout"], _conv.NLC)
        self.assertEqual(args["x"], h.data_ptr())
        self.assertEqual(args["dy"], gy.data_ptr())
        self.assertTrue(h.grad.is_contiguous())
        xd = h.detach().cpu().double().transpose(1, 2).requires_grad_()
        wd = w.detach().cpu().double().requires_grad_()
        r = F.silu(F.conv1d(F.pad(xd, (3, 0)), wd, groups=16))
        rx, rw = torch.autograd.grad(r, [xd, wd], gy.cpu().double())
        R.assert_close(self, "dx", h.grad.transpose(1, 2), rx, rx.abs() + 1, torch.float32)
        R.assert_close(self, "dw", w.grad, rw, rw.abs() + 10, torch.float32)

    def test_math_defaults_to_the_type_and_tf32_flag_does_not_change_it(self):
        old = torch.backends.cuda.matmul.allow_tf32
        try:
            torch.backends.cuda.matmul.allow_tf32 = True
            w = self.on(torch.randn(4, 4, 3))
            for dtype, math in ((torch.float32, _conv.MATH_F32), (torch.bfloat16, _conv.MATH_BF16),
                                (torch.float16, _conv.MATH_F16)):
                with Recorder() as rec:
                    wst.conv1d(self.on(torch.randn(1, 4, 8, dtype=dtype)), w.to(dtype))
                self.assertEqual(rec.calls[0][0]["math"], math, dtype)
            with Recorder() as rec:
                wst.conv1d(self.on(torch.randn(1, 4, 8)), w, math="tf32")
                wst.conv1d(self.on(torch.randn(1, 4, 8)), w, math="bf16")
            self.assertEqual([c[0]["math"] for c in rec.calls], [_conv.MATH_TF32, _conv.MATH_BF16])
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old

    def test_weight_and_bias_in_other_dtypes(self):
        """x float32 with w bfloat16 (the engine's w_type), b bfloat16 (cast to float32):
        dw and db come back in their parameters' dtypes."""
        x = self.on(torch.randn(2, 6, 20)).requires_grad_()
        w = self.on((torch.randn(4, 6, 3) / 4).bfloat16()).requires_grad_()
        b = self.on(torch.randn(4).bfloat16()).requires_grad_()
        with Recorder() as rec:
            y = wst.conv1d(x, w, b, padding=1, act="gelu")
        self.assertEqual(rec.calls[0][0]["w_type"], _conv.BF16)
        self.assertEqual(rec.calls[0][0]["x_type"], _conv.F32)
        self.assertEqual(y.dtype, torch.float32)
        g = torch.randn_like(y)
        dx, dw, db = torch.autograd.grad(y, [x, w, b], g)
        self.assertEqual((dx.dtype, dw.dtype, db.dtype), (torch.float32, torch.bfloat16, torch.bfloat16))
        xd, wd, bd = (v.detach().cpu().double().requires_grad_() for v in (x, w, b))
        r = F.gelu(F.conv1d(xd, wd, bd, padding=1))
        rx, rw, rb = torch.autograd.grad(r, [xd, wd, bd], g.cpu().double())
        sy, sx, sw, sb = R.conv1d_scales(xd, wd, bd, g.cpu(), pads=(1, 1))
        R.assert_close(self, "y", y, r, sy, torch.float32)
        R.assert_close(self, "dx", dx, rx, sx, torch.float32)
        R.assert_close(self, "dw", dw, rw, sw, torch.bfloat16)
        R.assert_close(self, "db", db, rb, sb, torch.bfloat16)

    def test_empty_batch(self):
        x = self.on(torch.randn(0, 4, 10)).requires_grad_()
        w = self.on(torch.randn(5, 4, 3)).requires_grad_()
        b = self.on(torch.randn(5)).requires_grad_()
        y = wst.conv1d(x, w, b, padding=1)
        self.assertEqual(tuple(y.shape), (0, 5, 10))
        y.sum().backward()
        self.assertTrue(torch.equal(w.grad, torch.zeros_like(w)) and torch.equal(b.grad, torch.zeros_like(b)))


class CausalConv1dTest(OnDevice):

    def need_states(self):
        msg = states_refused(self.dev)
        if msg:
            self.skipTest("the engine refuses seq_idx / states: %s" % msg)

    def check_plain(self, n, c, t, k, dtype, bias, act, chlast, w3=False):
        gen = torch.Generator().manual_seed(n * 1000 + c * 10 + k)
        x0 = randn(n, c, t, dtype=dtype, gen=gen)
        w0 = (randn(c, k, gen=gen) / k ** 0.5).to(dtype)
        b0 = randn(c, dtype=dtype, gen=gen) if bias else None
        x = (R.nlc(self.on(x0)) if chlast else self.on(x0).clone()).requires_grad_()
        w = self.on(w0.reshape(c, 1, k) if w3 else w0).clone().requires_grad_()
        b = self.on(b0).clone().requires_grad_() if bias else None
        y = wst.causal_conv1d(x, w, b, activation=act)
        if chlast:
            self.assertEqual(y.stride(), (t * c, 1, c))
        xd, wd = x0.double().requires_grad_(), w0.double().requires_grad_()
        bd = b0.double().requires_grad_() if bias else None
        act_name = "silu" if act is True else act
        want = R.ref_causal(xd, wd, bd, activation=act_name)
        g = randn(n, c, t, dtype=dtype, gen=gen)
        s = R.causal_scales(x0, w0, b0, g)
        what = "N%d C%d T%d K%d %s bias=%s act=%s chlast=%s" % (n, c, t, k, dtype, bias, act, chlast)
        R.assert_close(self, what + " y", y, want, s["y"], dtype)
        ins, rins = [x, w] + ([b] if bias else []), [xd, wd] + ([bd] if bias else [])
        got = torch.autograd.grad(y, ins, self.on(g))
        ref = torch.autograd.grad(want, rins, g.double())
        self.assertEqual(tuple(got[1].shape), tuple(w.shape))
        for nm, a, r in zip(["x", "w", "b"], got, ref):
            R.assert_close(self, "%s d%s" % (what, nm), a.reshape(r.shape), r, s[nm], dtype)

    def test_against_reference(self):
        for dtype in (torch.float32, torch.bfloat16):
            for k in (2, 3, 4):
                for chlast in (False, True):
                    for bias, act in ((True, "silu"), (False, None), (True, True), (True, "gelu")):
                        with self.subTest(dtype=dtype, k=k, chlast=chlast, bias=bias, act=act):
                            self.check_plain(2, 24, 37, k, dtype, bias, act, chlast)
        self.check_plain(1, 8, 3, 4, torch.float32, True, "silu", False, w3=True)  # T < K, w [C][1][K]

    def test_channel_last_is_not_copied(self):
        h = self.on(torch.randn(3, 50, 32))  # [N][T][C]
        x = h.transpose(1, 2)
        w, b = self.on(torch.randn(32, 4)), self.on(torch.randn(32))
        with Recorder() as rec:
            y = wst.causal_conv1d(x, w, b, activation="silu")
        key, args = rec.calls[0]
        self.assertEqual((key["x_layout"], key["y_layout"]), (_conv.NLC, _conv.NLC))
        self.assertEqual(args["x"], h.data_ptr())
        self.assertEqual(args["w"], w.data_ptr())
        self.assertEqual(args["b"], b.data_ptr())
        self.assertEqual(y.stride(), (50 * 32, 1, 32))
        self.assertEqual(args["y"], y.data_ptr())
        self.assertTrue(y.transpose(1, 2).is_contiguous())
        yc = wst.causal_conv1d(x.contiguous(), w, b, activation="silu")
        self.assertTrue(yc.is_contiguous())
        R.assert_close(self, "NLC vs NCL", y, yc.cpu().double(), yc.abs() + 1, torch.float32)

    def test_activation_names(self):
        x, w = self.on(torch.randn(1, 4, 9)), self.on(torch.randn(4, 3))
        silu = wst.causal_conv1d(x, w, activation="silu")
        for a in (True, "swish"):
            self.assertTrue(torch.equal(wst.causal_conv1d(x, w, activation=a), silu))
        self.assertTrue(torch.equal(wst.causal_conv1d(x, w, activation=False), wst.causal_conv1d(x, w)))

    def test_seq_idx_packed_equals_separate_runs(self):
        self.need_states()
        gen = torch.Generator().manual_seed(11)
        for dtype in (torch.float32, torch.bfloat16):
            for chlast in (False, True):
                n, c, k = 2, 16, 4
                lens = [[5, 2, 9, 1], [3, 14]]  # sequence lengths per batch item, T = 17
                t = 17
                seq = torch.empty(n, t, dtype=torch.int32)
                for i, ls in enumerate(lens):
                    seq[i] = torch.cat([torch.full((m,), j, dtype=torch.int32) for j, m in enumerate(ls)])
                x0 = randn(n, c, t, dtype=dtype, gen=gen)
                w0, b0 = (randn(c, k, gen=gen) / 2).to(dtype), randn(c, dtype=dtype, gen=gen)
                x = R.nlc(self.on(x0)) if chlast else self.on(x0)
                y = wst.causal_conv1d(x, self.on(w0), self.on(b0), activation="silu", seq_idx=self.on(seq))
                for i, ls in enumerate(lens):
                    s = 0
                    for m in ls:
                        alone = wst.causal_conv1d(self.on(x0[i:i + 1, :, s:s + m]), self.on(w0), self.on(b0),
                                                  activation="silu").cpu()
                        R.assert_close(self, "item %d [%d, %d)" % (i, s, s + m), y[i:i + 1, :, s:s + m], alone,
                                       alone.abs().double() + 1e-3, dtype)
                        s += m
                want = R.ref_causal_packed(x0.double(), w0.double(), b0.double(), seq, "silu")
                sy = R.causal_scales(x0, w0, b0, torch.ones(n, c, t))["y"]
                R.assert_close(self, "packed vs reference", y, want, sy, dtype)

    def test_seq_idx_negative_positions_give_zero_and_gradients(self):
        self.need_states()
        gen = torch.Generator().manual_seed(12)
        n, c, t, k = 2, 8, 20, 3
        seq = torch.tensor([[0] * 6 + [-1] * 3 + [1] * 8 + [-1] * 3,
                            [-1] * 2 + [0] * 10 + [2] * 8], dtype=torch.int32)
        for dtype in (torch.float32, torch.bfloat16):
            x0 = randn(n, c, t, dtype=dtype, gen=gen)
            w0, b0 = (randn(c, k, gen=gen) / 2).to(dtype), randn(c, dtype=dtype, gen=gen)
            x, w, b = (self.on(v).clone().requires_grad_() for v in (x0, w0, b0))
            y = wst.causal_conv1d(x, w, b, activation="silu", seq_idx=self.on(seq))
            pad = (seq < 0).unsqueeze(1).expand(n, c, t)
            self.assertTrue(torch.all(y.detach().cpu()[pad] == 0), "outputs at negative seq_idx are 0")
            xd, wd, bd = (v.double().requires_grad_() for v in (x0, w0, b0))
            want = R.ref_causal_packed(xd, wd, bd, seq, "silu")
            g = randn(n, c, t, dtype=dtype, gen=gen)
            s = R.causal_scales(x0, w0, b0, g)
            R.assert_close(self, "y", y, want, s["y"], dtype)
            got = torch.autograd.grad(y, [x, w, b], self.on(g))
            ref = torch.autograd.grad(want, [xd, wd, bd], g.double())
            for nm, a, r in zip("xwb", got, ref):
                R.assert_close(self, "d" + nm, a, r, s[nm], dtype)

    def test_states_forward_and_chunks_equal_the_whole_bitwise(self):
        self.need_states()
        gen = torch.Generator().manual_seed(13)
        for dtype in (torch.float32, torch.bfloat16):
            for chlast in (False, True):
                for k in (2, 4):
                    n, c, t = 2, 16, 29
                    x0 = randn(n, c, t, dtype=dtype, gen=gen)
                    w, b = (randn(c, k, gen=gen) / 2).to(dtype), randn(c, dtype=dtype, gen=gen)
                    init = randn(n, c, k - 1, dtype=dtype, gen=gen)
                    want, wfin = R.ref_causal(x0.double(), w.double(), b.double(), init.double(), True, "silu")
                    sy = R.causal_scales(x0, w, b, torch.ones(n, c, t), init)["y"]
                    x0, w, b, init = (self.on(v) for v in (x0, w, b, init))
                    x = R.nlc(x0) if chlast else x0
                    y, fin = wst.causal_conv1d(x, w, b, activation="silu", initial_states=init,
                                               return_final_states=True)
                    R.assert_close(self, "y", y, want, sy, dtype)
                    self.assertTrue(torch.equal(fin.cpu(), wfin.to(dtype)), "final_states are the last inputs")
                    self.assertEqual(fin.dtype, dtype)
                    # whole (no initial states) vs chunks of 1, 2 (< K-1 for K 4), 11, 15
                    whole, wfin = wst.causal_conv1d(x, w, b, activation="silu", return_final_states=True)
                    ys, state, s = [], None, 0
                    for m in (1, 2, 11, 15):
                        xc = x[:, :, s:s + m]
                        yc, state = wst.causal_conv1d(xc, w, b, activation="silu", initial_states=state,
                                                      return_final_states=True)
                        ys.append(yc)
                        s += m
                    if self.bitwise:
                        self.assertTrue(torch.equal(torch.cat(ys, dim=2), whole), "chunked y == whole y, bitwise")
                    else:  # each within the bounds of the whole's reference
                        ref_whole = R.ref_causal(x0.cpu().double(), w.cpu().double(), b.cpu().double(),
                                                 activation="silu")
                        R.assert_close(self, "chunked y", torch.cat(ys, dim=2), ref_whole, sy, dtype)
                    self.assertTrue(torch.equal(state, wfin), "chunked final_states == whole, bitwise")

    def test_gradients_through_initial_and_final_states(self):
        self.need_states()
        gen = torch.Generator().manual_seed(14)
        for dtype in (torch.float32, torch.bfloat16):
            for t in (13, 2):  # 2 < K-1: the final states hold initial ones
                for chlast in (False, True):
                    n, c, k = 2, 8, 4
                    x0 = randn(n, c, t, dtype=dtype, gen=gen)
                    w0, b0 = (randn(c, k, gen=gen) / 2).to(dtype), randn(c, dtype=dtype, gen=gen)
                    i0 = randn(n, c, k - 1, dtype=dtype, gen=gen)
                    x = (R.nlc(self.on(x0)) if chlast else self.on(x0).clone()).requires_grad_()
                    w, b, init = (self.on(v).clone().requires_grad_() for v in (w0, b0, i0))
                    y, fin = wst.causal_conv1d(x, w, b, activation="silu", initial_states=init,
                                               return_final_states=True)
                    gy = randn(n, c, t, dtype=dtype, gen=gen)
                    gf = randn(n, c, k - 1, dtype=dtype, gen=gen)
                    got = torch.autograd.grad([y, fin], [x, w, b, init], [self.on(gy), self.on(gf)])
                    xd, wd, bd, idd = (v.double().requires_grad_() for v in (x0, w0, b0, i0))
                    ry, rf = R.ref_causal(xd, wd, bd, idd, True, "silu")
                    ref = torch.autograd.grad([ry, rf], [xd, wd, bd, idd], [gy.double(), gf.double()],
                                               retain_graph=True)
                    # dx and dinit: the engine's (rounded to dtype) plus dfinal, rounded again
                    via_y = torch.autograd.grad(ry, [xd, idd], gy.double(), retain_graph=True)
                    s = R.causal_scales(x0, w0, b0, gy, i0)
                    what = "%s T%d chlast=%s" % (dtype, t, chlast)
                    for nm, a, r, sc, rnd in zip(["dx", "dw", "db", "dinit"], got, ref,
                                                 [s["x"], s["w"], s["b"], s["init"]],
                                                 [via_y[0], None, None, via_y[1]]):
                        R.assert_close(self, "%s %s" % (what, nm), a, r, sc, dtype, rnd)
                    # only final_states in the loss: dx is dfinal where it lands
                    y, fin = wst.causal_conv1d(x, w, b, initial_states=init, return_final_states=True)
                    dx, dinit = torch.autograd.grad(fin, [x, init], self.on(gf))
                    xp = torch.cat([torch.zeros_like(i0), torch.zeros_like(x0)], dim=2)
                    xp[..., xp.shape[2] - (k - 1):] = gf
                    self.assertTrue(torch.equal(dx.cpu(), xp[..., k - 1:]) and torch.equal(dinit.cpu(), xp[..., :k - 1]))

    def test_chunked_training_gradients_equal_the_whole(self):
        """Two chunks chained by their states, a loss over both: the gradients of x, w, b are
        those of one call over the whole sequence."""
        self.need_states()
        gen = torch.Generator().manual_seed(15)
        n, c, t, k = 2, 16, 30, 4
        x0 = randn(n, c, t, dtype=torch.float32, gen=gen)
        w0, b0 = randn(c, k, dtype=torch.float32, gen=gen) / 2, randn(c, dtype=torch.float32, gen=gen)
        g = randn(n, c, t, dtype=torch.float32, gen=gen)
        x, w, b = (self.on(v).clone().requires_grad_() for v in (x0, w0, b0))
        y1, s1 = wst.causal_conv1d(x[..., :12], w, b, activation="silu", return_final_states=True)
        y2 = wst.causal_conv1d(x[..., 12:], w, b, activation="silu", initial_states=s1)
        got = torch.autograd.grad(torch.cat([y1, y2], 2), [x, w, b], self.on(g))
        xd, wd, bd = (v.double().requires_grad_() for v in (x0, w0, b0))
        ref = torch.autograd.grad(R.ref_causal(xd, wd, bd, activation="silu"), [xd, wd, bd], g.double())
        s = R.causal_scales(x0, w0, b0, g)
        for nm, a, r in zip("xwb", got, ref):
            R.assert_close(self, "chunked d" + nm, a, r, s[nm] * 2, torch.float32)


class TrainingTest(OnDevice):

    def test_sgd_steps_match_autograd_of_f_conv1d(self):
        """A depthwise causal conv (SiLU) then a dense K3 conv, fitted to targets with SGD: the
        weights change every step, the loss falls, and each step's gradients are those of
        F.conv1d's autograd in float64 at the same weights."""
        gen = torch.Generator().manual_seed(21)
        n, c, c2, t, k = 4, 16, 8, 40, 4
        h = self.on(randn(n, t, c, dtype=torch.float32, gen=gen))
        x = h.transpose(1, 2)  # channel-last, as a Mamba block holds it
        w1 = self.on((randn(c, k, gen=gen) / 2).float()).requires_grad_()
        b1 = self.on(torch.zeros(c)).requires_grad_()
        w2 = self.on((randn(c2, c, 3, gen=gen) / 8).float()).requires_grad_()
        b2 = self.on(torch.zeros(c2)).requires_grad_()
        # targets from other weights, so that the loss can fall
        with torch.no_grad():
            tw1, tw2 = self.on(randn(c, k, gen=gen).float() / 2), self.on(randn(c2, c, 3, gen=gen).float() / 8)
            target = F.conv1d(F.silu(F.conv1d(F.pad(x, (k - 1, 0)), tw1.unsqueeze(1), groups=c)), tw2, padding=1)
        params = [w1, b1, w2, b2]
        opt = torch.optim.SGD(params, lr=0.5)
        losses = []
        prev = [p.detach().clone() for p in params]
        for step in range(20):
            opt.zero_grad()
            y = wst.conv1d(wst.causal_conv1d(x, w1, b1, activation="silu"), w2, b2, padding=1)
            loss = ((y - target) ** 2).mean()
            loss.backward()
            pd = [p.detach().double().requires_grad_() for p in params]
            yr = F.conv1d(F.silu(F.conv1d(F.pad(x.double(), (k - 1, 0)), pd[0].unsqueeze(1), pd[1], groups=c)),
                          pd[2], pd[3], padding=1)
            lr = ((yr - target.double()) ** 2).mean()
            ref = torch.autograd.grad(lr, pd)
            self.assertAlmostEqual(loss.item(), lr.item(), delta=1e-5 * lr.item() + 1e-7)
            for i, (p, r) in enumerate(zip(params, ref)):
                scale = float(r.abs().max()) + 1e-6
                err = float((p.grad.double() - r).abs().max())
                self.assertLess(err, 1e-4 * scale, "step %d param %d: gradient error %.3g (max %.3g)" % (
                    step, i, err, scale))
            losses.append(loss.item())
            opt.step()
            for i, p in enumerate(params):
                self.assertFalse(torch.equal(p.detach(), prev[i]), "step %d changed param %d" % (step, i))
                prev[i] = p.detach().clone()
        self.assertLess(losses[-1], 0.5 * losses[0], "loss %s" % losses)
        for a, b in zip(losses, losses[1:]):
            self.assertLess(b, a, "loss falls every step: %s" % losses)


class SignatureCacheTest(OnDevice):
    """whisper_stem.torch keeps, per signature of a call (the types, shapes, strides, dtypes
    and devices of its tensors, its other arguments with their types), what the checks found
    and what follows from it. A call differing from a kept signature in anything the checks
    read is checked again; a call through a kept entry gives the bits of freshly checked one;
    what belongs to one call (requires_grad, grad mode, tensor versions) is read each time."""

    def forget(self):
        wst._conv1d_sigs.clear()
        wst._causal_sigs.clear()

    def other_device(self):
        return "meta" if self.dev == "cpu" else "cpu"

    def test_a_bad_value_after_a_kept_signature_still_raises(self):
        gen = torch.Generator().manual_seed(41)
        x, w, b = (self.on(randn(*s, dtype=torch.float32, gen=gen)) for s in ((2, 4, 10), (4, 3), (4,)))
        seq = self.on(torch.zeros(2, 10, dtype=torch.int32))
        init = self.on(torch.zeros(2, 4, 2))
        other = self.other_device()
        wd, bd = self.on(randn(6, 4, 3, dtype=torch.float32, gen=gen)), self.on(randn(6, dtype=torch.float32, gen=gen))
        add = self.on(torch.zeros(2, 6, 10))
        w_nc = self.on(randn(4, 6, dtype=torch.float32, gen=gen))[:, ::2]  # [4][3], strides (6, 2)
        causal, conv = wst.causal_conv1d, wst.conv1d

        class Fake:  # x's shape, strides, dtype and device, but not a tensor
            shape, dtype, device = x.shape, x.dtype, x.device

            def stride(self):
                return x.stride()

        # (a call that is kept, a bad call of the same signature but for one value, its exception)
        cases = [
            (lambda: causal(x, w, b), lambda: causal(x, w.double(), b), TypeError, "w has dtype torch.float64"),
            (lambda: causal(x, w, b), lambda: causal(x.double(), w, b), TypeError, "x has dtype torch.float64"),
            (lambda: causal(x, w, b), lambda: causal(x, torch.empty(4, 3, device=other), b), ValueError,
             "w is on %s but x is on" % other),
            (lambda: causal(x, w, b), lambda: causal(x, w, torch.empty(4, device=other)), ValueError,
             "b is on %s but x is on" % other),
            (lambda: causal(x, w, b), lambda: causal(x, w, b.to(torch.int32)), TypeError, "b has dtype torch.int32"),
            (lambda: causal(x, w, b), lambda: causal(x.tolist(), w, b), TypeError, "x must be a torch.Tensor"),
            (lambda: causal(x, w, b), lambda: causal(Fake(), w, b), TypeError, "x must be a torch.Tensor"),
            (lambda: causal(x, w, b), lambda: causal(x, w[:2], b), ValueError, "w has shape .*: x has 4 channels"),
            (lambda: causal(x, w, b, activation=True), lambda: causal(x, w, b, activation=1), TypeError,
             "activation must be None"),
            (lambda: causal(x, w, b, activation="silu"), lambda: causal(x, w, b, activation="SiLU"), ValueError,
             "activation must be None"),
            (lambda: causal(x, w, b, seq_idx=seq), lambda: causal(x, w, b, seq_idx=seq.long()), TypeError,
             "seq_idx has dtype torch.int64"),
            (lambda: causal(x, w, b, seq_idx=seq), lambda: causal(x, w, b, seq_idx=seq[:, :9]), ValueError,
             "seq_idx has shape"),
            (lambda: causal(x, w, b, seq_idx=seq),
             lambda: causal(x, w, b, seq_idx=torch.zeros(2, 10, dtype=torch.int32, device=other)), ValueError,
             "seq_idx is on %s" % other),
            (lambda: causal(x, w, b, initial_states=init), lambda: causal(x, w, b, initial_states=init.bfloat16()),
             TypeError, "initial_states has dtype torch.bfloat16"),
            (lambda: causal(x, w, b, return_final_states=True),
             lambda: causal(x, w, b, seq_idx=seq, return_final_states=True), ValueError, "seq_idx cannot be combined"),
            (lambda: conv(x, wd, bd, padding=1), lambda: conv(x, wd, bd, padding=(True, 1)), TypeError,
             "padding left must be an integer"),
            (lambda: conv(x, wd, bd, padding=[1, 1]), lambda: conv(x, wd, bd, padding=[1, 1.0]), TypeError,
             "padding right must be an integer"),
            (lambda: conv(x, wd, bd, padding=1, stride=1), lambda: conv(x, wd, bd, padding=1, stride=True), TypeError,
             "stride must be an integer"),
            (lambda: conv(x, wd, bd, padding=1, groups=1), lambda: conv(x, wd, bd, padding=1, groups=1.0), TypeError,
             "groups must be an integer"),
            (lambda: conv(x, wd, bd, padding=1), lambda: conv(x, wd, bd.double(), padding=1), TypeError,
             "b has dtype torch.float64"),
            (lambda: conv(x, wd, bd, padding=1, add=add), lambda: conv(x, wd, bd, padding=1, add=add.bfloat16()),
             TypeError, "add has dtype torch.bfloat16"),
            (lambda: conv(x, wd, bd, padding=1, add=add), lambda: conv(x, wd, bd, padding=1, add=add[:1, :5]),
             ValueError, "add has shape"),
            (lambda: conv(x, wd, bd, padding=1, math="bf16"), lambda: conv(x, wd, bd, padding=1, math="int8"),
             ValueError, "math must be"),
            (lambda: conv(x, wd, bd, padding=1, act="relu"), lambda: conv(x, wd, bd, padding=1, act=True), TypeError,
             "act must be None"),
        ]
        if states_refused(self.dev):  # the kept calls need seq_idx and states
            cases = [c for c in cases if "seq_idx" not in c[3] and "initial" not in c[3] and "combined" not in c[3]]
        for keep, bad, exc, pattern in cases:
            with self.subTest(pattern=pattern):
                self.forget()
                keep()
                keep()
                self.assertEqual(len(wst._conv1d_sigs) + len(wst._causal_sigs), 1)
                with self.assertRaisesRegex(exc, pattern):
                    bad()
                with self.assertRaisesRegex(exc, pattern):
                    bad()  # not kept either
        # a non-contiguous w is another signature: copied, the same values as a contiguous one
        self.forget()
        y1 = causal(x, w_nc.contiguous(), b)
        y2 = causal(x, w_nc, b)
        self.assertTrue(torch.equal(y1, y2))
        with Recorder() as rec:
            causal(x, w_nc, b)
        self.assertNotEqual(rec.calls[0][1]["w"], w_nc.data_ptr())

    def run_twice(self, call, inputs):
        """call() under no_grad, then with autograd (y and the gradients of inputs that
        require grad): once with no signature kept, twice more through the kept entry."""
        outs = []
        for fresh in (True, False, False):
            if fresh:
                self.forget()
            with torch.no_grad():
                plain = call()
            y = call()
            ys = list(y) if isinstance(y, tuple) else [y]
            gen = torch.Generator().manual_seed(7)
            gs = [self.on(randn(*v.shape, dtype=v.dtype, gen=gen)) for v in ys]
            grads = torch.autograd.grad(ys, [v for v in inputs if v.requires_grad], gs)
            plain = list(plain) if isinstance(plain, tuple) else [plain]
            outs.append(plain + ys + list(grads))
        return outs

    def test_kept_entries_give_the_bits_of_freshly_checked_calls(self):
        gen = torch.Generator().manual_seed(42)
        bf = torch.bfloat16

        def leaf(*shape, dtype=torch.float32):
            return self.on(randn(*shape, dtype=dtype, gen=gen)).requires_grad_()

        h = leaf(2, 20, 12)
        xl = h.transpose(1, 2)  # channel-last [2][12][20]
        hb = leaf(2, 20, 12, dtype=bf)
        xb = hb.transpose(1, 2)
        x = leaf(2, 12, 20)
        xs = self.on(randn(2, 12, 40, dtype=torch.float32, gen=gen))[:, :, ::2].requires_grad_()  # copied
        wc, bc = leaf(12, 4), leaf(12)
        wcb, bcb = leaf(12, 4, dtype=bf), leaf(12, dtype=bf)
        w_nc = self.on(randn(12, 8, dtype=torch.float32, gen=gen))[:, ::2].requires_grad_()
        wd, bd, add = leaf(6, 12, 3), leaf(6), leaf(6, 20)
        wdb, bdb = leaf(12, 4, 3, dtype=bf), leaf(12, dtype=bf)
        cases = [
            ("causal f32", lambda: wst.causal_conv1d(x, wc, bc, activation="silu"), [x, wc, bc]),
            ("causal f32 chlast", lambda: wst.causal_conv1d(xl, wc, bc, activation="silu"), [h, wc, bc]),
            ("causal bf16 chlast, bf16 w and b", lambda: wst.causal_conv1d(xb, wcb, bcb, activation="silu"),
             [hb, wcb, bcb]),
            ("causal f32 x, bf16 w, f32 b", lambda: wst.causal_conv1d(x, wcb, bc, activation="gelu"), [x, wcb, bc]),
            ("causal f32, bf16 b", lambda: wst.causal_conv1d(x, wc, bcb), [x, wc, bcb]),
            ("causal x and w copied", lambda: wst.causal_conv1d(xs, w_nc, bc, activation=True), [xs, w_nc, bc]),
            ("conv1d add shared", lambda: wst.conv1d(x, wd, bd, padding=1, act="gelu", add=add), [x, wd, bd, add]),
            ("conv1d chlast strided", lambda: wst.conv1d(xl, wd, bd, stride=2, padding=(2, 1)), [h, wd, bd]),
            ("conv1d grouped, bf16 w and b", lambda: wst.conv1d(x, wdb, bdb, groups=3, padding="same", act="relu"),
             [x, wdb, bdb]),
            ("conv1d x copied", lambda: wst.conv1d(xs, wd, None, padding="causal"), [xs, wd]),
        ]
        if not states_refused(self.dev):
            init = leaf(2, 12, 3)
            seq = self.on(torch.tensor([[0] * 7 + [1] * 13, [-1] * 4 + [0] * 16], dtype=torch.int32))
            seq_nc = self.on(torch.zeros(20, 2, dtype=torch.int32))
            seq_nc.copy_(seq.t())
            cases += [
                ("causal states", lambda: wst.causal_conv1d(xl, wc, bc, initial_states=init, return_final_states=True),
                 [h, wc, bc, init]),
                ("causal seq_idx copied", lambda: wst.causal_conv1d(x, wc, bc, seq_idx=seq_nc.t()), [x, wc, bc]),
            ]
        for name, call, inputs in cases:
            with self.subTest(case=name):
                fresh, kept, again = self.run_twice(call, inputs)
                self.assertEqual(len(wst._conv1d_sigs) + len(wst._causal_sigs), 1, name)
                for i, (a, k, g) in enumerate(zip(fresh, kept, again)):
                    self.assertEqual((a.dtype, a.shape, a.stride()), (k.dtype, k.shape, k.stride()), (name, i))
                    self.assertTrue(torch.equal(a, k) and torch.equal(a, g), "%s: output %d" % (name, i))
                # gradients in their inputs' dtypes and shapes
                for v, gv in zip([v for v in inputs if v.requires_grad], kept[-len(inputs):]):
                    self.assertEqual((gv.dtype, gv.shape), (v.dtype, v.shape), name)

    def test_dw_and_db_by_one_cast_are_those_cast_one_by_one(self):
        """float16 / bfloat16 w and b: both gradients come from one float32 buffer and one
        cast, with the bits of two buffers cast one by one (the entry's joint off) and, on
        the CPU, of each gradient asked alone; dw is laid out as w, db as b."""
        gen = torch.Generator().manual_seed(43)
        for dtype in (torch.bfloat16, torch.float16):
            for chlast in (False, True):
                for w3 in (False, True):
                    x = self.on(randn(2, 24, 17, dtype=dtype, gen=gen))
                    x = R.nlc(x) if chlast else x
                    w = self.on(randn(24, 4, dtype=dtype, gen=gen))
                    w = (w.unsqueeze(1) if w3 else w).requires_grad_()
                    b = self.on(randn(24, dtype=dtype, gen=gen)).requires_grad_()
                    g = self.on(randn(2, 24, 17, dtype=dtype, gen=gen))
                    what = (dtype, chlast, w3)

                    def both():
                        return torch.autograd.grad(wst.causal_conv1d(x, w, b, activation="silu"), [w, b], g)
                    self.forget()
                    with Recorder() as rec:
                        dw, db = both()
                    bwd = rec.calls[1][1]
                    self.assertEqual(bwd["db"] - bwd["dw"], 4 * 128, "db after dw's 96 floats %s" % (what,))
                    self.assertTrue(dw._base is not None and dw._base is db._base, "views of one cast")
                    (entry,) = wst._causal_sigs.values()
                    entry.joint = False
                    dw2, db2 = both()
                    self.assertTrue(dw2._base is None and db2._base is None, "cast one by one")
                    self.assertTrue(torch.equal(dw, dw2) and torch.equal(db, db2), what)
                    if self.dev == "cpu":
                        (dw1,) = torch.autograd.grad(wst.causal_conv1d(x, w, b, activation="silu"), [w], g)
                        (db1,) = torch.autograd.grad(wst.causal_conv1d(x, w, b, activation="silu"), [b], g)
                        self.assertTrue(torch.equal(dw, dw1) and torch.equal(db, db1), what)
                    self.assertEqual((dw.dtype, dw.shape, dw.stride()), (dtype, w.shape, w.stride()))
                    self.assertEqual((db.dtype, db.shape, db.stride()), (dtype, b.shape, (1,)))

    def test_what_belongs_to_a_call_is_read_each_time(self):
        """requires_grad and grad mode change from call to call under one kept signature; an
        in-place change of a saved input is caught in every call's backward."""
        self.forget()
        w, b = self.on(torch.randn(4, 3)), self.on(torch.randn(4))
        h = self.on(torch.randn(2, 4, 10))
        self.assertIsNone(wst.causal_conv1d(h, w, b).grad_fn)
        hg = h.clone().requires_grad_()
        self.assertIsNotNone(wst.causal_conv1d(hg, w, b).grad_fn)
        with torch.no_grad():
            self.assertIsNone(wst.causal_conv1d(hg, w, b).grad_fn)
        self.assertEqual(len(wst._causal_sigs), 1)
        for _ in range(2):
            x = hg * 1
            y = wst.causal_conv1d(x, w, b, activation="silu")
            with torch.no_grad():
                x.add_(1)
            with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
                y.sum().backward()

    def test_kept_signatures_are_bounded(self):
        old = wst._SIGNATURES_MAX
        try:
            wst._SIGNATURES_MAX = 4
            self.forget()
            w = self.on(torch.randn(4, 3))
            for t in range(1, 12):
                wst.causal_conv1d(self.on(torch.randn(1, 4, t)), w)
                self.assertLessEqual(len(wst._causal_sigs), 4)
        finally:
            wst._SIGNATURES_MAX = old


    def test_threads_sharing_a_signature_get_their_own_results(self):
        """Threads calling with one signature at once (the engine runs without the GIL) each
        get the outputs of their own inputs: what a kept entry holds for a call's arguments
        is the calling thread's."""
        import threading
        self.forget()
        gen = torch.Generator().manual_seed(43)
        f32 = torch.float32
        w, b = self.on(randn(64, 4, dtype=f32, gen=gen)), self.on(randn(64, dtype=f32, gen=gen))
        xs = [self.on(randn(2, 64, 512, dtype=f32, gen=gen)) for _ in range(4)]
        want = [wst.causal_conv1d(x, w, b, activation="silu") for x in xs]
        if self.dev != "cpu":
            torch.cuda.synchronize()
        bad = []

        def work(i):
            for _ in range(40):
                y = wst.causal_conv1d(xs[i], w, b, activation="silu")
                if self.dev != "cpu":
                    torch.cuda.current_stream().synchronize()
                if not torch.equal(y, want[i]):
                    bad.append(i)
                    return

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(bad, [], "threads got other threads' outputs")

class ErrorsTest(unittest.TestCase):

    def test_bad_inputs_raise(self):
        x, w, b = torch.randn(2, 4, 10), torch.randn(6, 4, 3), torch.randn(6)
        cases = [
            (TypeError, "x must be a torch.Tensor", lambda: wst.conv1d(x.numpy(), w)),
            (ValueError, "x must be 3-D", lambda: wst.conv1d(x[0], w)),
            (TypeError, "x has dtype torch.float64", lambda: wst.conv1d(x.double(), w)),
            (TypeError, "x has dtype torch.int32", lambda: wst.conv1d(x.int(), w)),
            (ValueError, "w must be 3-D", lambda: wst.conv1d(x, w[0])),
            (TypeError, "w has dtype torch.float64", lambda: wst.conv1d(x, w.double())),
            (ValueError, "w is on meta", lambda: wst.conv1d(x, torch.empty(6, 4, 3, device="meta"))),
            (ValueError, "x is on meta", lambda: wst.conv1d(torch.empty(2, 4, 10, device="meta"), w)),
            (ValueError, "w.shape\\[1\\] == 4", lambda: wst.conv1d(x, torch.randn(6, 3, 3))),
            (ValueError, "groups 3 does not divide x's 4", lambda: wst.conv1d(x, w, groups=3)),
            (ValueError, "groups 4 does not divide w's 6", lambda: wst.conv1d(x, torch.randn(6, 1, 3), groups=4)),
            (ValueError, "groups 0", lambda: wst.conv1d(x, w, groups=0)),
            (ValueError, "stride 0", lambda: wst.conv1d(x, w, stride=0)),
            (ValueError, "dilation -1", lambda: wst.conv1d(x, w, dilation=-1)),
            (TypeError, "stride must be an integer", lambda: wst.conv1d(x, w, stride=1.5)),
            (ValueError, "padding -1", lambda: wst.conv1d(x, w, padding=-1)),
            (ValueError, "padding as a sequence", lambda: wst.conv1d(x, w, padding=(1, 2, 3))),
            (ValueError, "padding must be", lambda: wst.conv1d(x, w, padding="left")),
            (ValueError, "padding='same' needs stride 1", lambda: wst.conv1d(x, w, padding="same", stride=2)),
            (ValueError, "too short", lambda: wst.conv1d(x[:, :, :2], w)),
            (ValueError, "b has shape \\(5,\\)", lambda: wst.conv1d(x, w, torch.randn(5))),
            (ValueError, "b must be 1-D", lambda: wst.conv1d(x, w, torch.randn(6, 1))),
            (TypeError, "b has dtype torch.float64", lambda: wst.conv1d(x, w, b.double())),
            (ValueError, "act must be None, 'relu', 'gelu' or 'silu', got 'tanh'", lambda: wst.conv1d(x, w, act="tanh")),
            (TypeError, "pre must be None", lambda: wst.conv1d(x, w, pre=True)),
            (ValueError, "math must be", lambda: wst.conv1d(x, w, math="int8")),
            (ValueError, "add has shape \\(2, 6, 7\\)", lambda: wst.conv1d(x, w, add=torch.randn(2, 6, 7))),
            (ValueError, "add has shape \\(3, 6, 8\\)", lambda: wst.conv1d(x, w, add=torch.randn(3, 6, 8))),
            (TypeError, "add has dtype torch.bfloat16", lambda: wst.conv1d(x, w, add=torch.randn(2, 6, 8).bfloat16())),
            (ValueError, "add must be 2-D or 3-D", lambda: wst.conv1d(x, w, add=torch.randn(8))),
        ]
        xc, wc = torch.randn(2, 4, 10), torch.randn(4, 3)
        seq = torch.zeros(2, 10, dtype=torch.int32)
        cases += [
            (ValueError, "w must be 2-D or 3-D", lambda: wst.causal_conv1d(xc, wc[0])),
            (ValueError, "a depthwise weight is \\[C\\]\\[K\\] or \\[C\\]\\[1\\]\\[K\\]",
             lambda: wst.causal_conv1d(xc, torch.randn(4, 2, 3))),
            (ValueError, "x has 4 channels", lambda: wst.causal_conv1d(xc, torch.randn(5, 3))),
            (ValueError, "b has shape \\(3,\\): x has 4", lambda: wst.causal_conv1d(xc, wc, torch.randn(3))),
            (ValueError, "activation must be", lambda: wst.causal_conv1d(xc, wc, activation="tanh")),
            (TypeError, "seq_idx has dtype torch.int64", lambda: wst.causal_conv1d(xc, wc, seq_idx=seq.long())),
            (ValueError, "seq_idx has shape \\(2, 9\\)", lambda: wst.causal_conv1d(xc, wc, seq_idx=seq[:, :9])),
            (ValueError, "seq_idx must be 2-D", lambda: wst.causal_conv1d(xc, wc, seq_idx=seq[0])),
            (ValueError, "seq_idx cannot be combined",
             lambda: wst.causal_conv1d(xc, wc, seq_idx=seq, initial_states=torch.zeros(2, 4, 2))),
            (ValueError, "seq_idx cannot be combined",
             lambda: wst.causal_conv1d(xc, wc, seq_idx=seq, return_final_states=True)),
            (ValueError, "initial_states has shape \\(2, 4, 3\\)",
             lambda: wst.causal_conv1d(xc, wc, initial_states=torch.zeros(2, 4, 3))),
            (TypeError, "initial_states has dtype torch.bfloat16",
             lambda: wst.causal_conv1d(xc, wc, initial_states=torch.zeros(2, 4, 2).bfloat16())),
            (ValueError, "need K >= 2", lambda: wst.causal_conv1d(xc, torch.randn(4, 1), return_final_states=True)),
            (ValueError, "seq_idx is on meta",
             lambda: wst.causal_conv1d(xc, wc, seq_idx=torch.empty(2, 10, dtype=torch.int32, device="meta"))),
        ]
        for exc, pattern, fn in cases:
            with self.subTest(pattern=pattern):
                with self.assertRaisesRegex(exc, pattern):
                    fn()

    def test_engine_refusals_are_whisper_stem_errors(self):
        """What the engine refuses comes back as whisper_stem.Error with its message."""
        key = wst._key(_conv.FWD, (4, 4, 1, 3, 1, 1, 1, 1, _conv.F32, _conv.F32, _conv.MATH_F32,
                                   _conv.ACT_NONE, _conv.ACT_NONE), _conv.NCL)
        y = torch.empty(1, 4, 8)
        a = _conv.Args(n=1, t_in=8, x=None, w=torch.zeros(4, 4, 3).data_ptr(), y=y.data_ptr())
        with self.assertRaisesRegex(whisper_stem.Error, "x is NULL"):
            wst._engine_call(torch.device("cpu"), key, a)
        self.assertIsNone(_conv.check(key))
        bad = key[:3] + (3,) + key[4:]
        self.assertIn("groups 3 does not divide c_in 4", _conv.check(bad))
        with self.assertRaisesRegex(whisper_stem.Error, "groups 3 does not divide c_in 4"):
            wst._engine_call(torch.device("cpu"), bad, a)


class ModuleTest(unittest.TestCase):

    def test_the_package_does_not_shadow_torch(self):
        import importlib
        real = importlib.import_module("torch")
        self.assertEqual(real.__name__, "torch")
        self.assertIs(wst.torch, real)
        self.assertEqual(wst.__name__, "whisper_stem.torch")
        self.assertTrue(hasattr(real, "nn"))

    def test_ctypes_structures_match_the_header(self):
        """ws_conv_desc, ws_conv_args and ws_err: each field's offset and each size, as a C
        compiler lays them out from include/ws_conv.h."""
        cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc or not shutil.which(cc.split()[0]):
            self.skipTest("no C compiler")
        lines = ['#include <stdio.h>', '#include <stddef.h>', '#include "ws_conv.h"', "int main(void) {"]
        for st, fields in (("ws_conv_desc", _conv.DESC_FIELDS), ("ws_conv_args", _conv.ARGS_FIELDS)):
            lines.append('printf("%s size %%zu\\n", sizeof(%s));' % (st, st))
            for f in fields:
                lines.append('printf("%s.%s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));' % (
                    st, f, st, f, st, f))
        lines.append('printf("ws_err size %zu\\n", sizeof(ws_err));')
        lines.append("return 0; }")
        with tempfile.TemporaryDirectory() as d:
            src, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
            with open(src, "w") as f:
                f.write("\n".join(lines))
            subprocess.run(cc.split() + ["-std=c11", "-I", os.path.join(ROOT, "include"), src, "-o", exe], check=True)
            out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout.split("\n")
        got = {}
        for line in filter(None, out):
            parts = line.split()
            got[parts[0]] = tuple(int(v) for v in parts[1:] if v != "size")
        for st, cls in (("ws_conv_desc", _conv.Desc), ("ws_conv_args", _conv.Args)):
            self.assertEqual(got["%s" % st], (ctypes.sizeof(cls),), st)
            for name, _ in cls._fields_:
                fd = getattr(cls, name)
                self.assertEqual(got["%s.%s" % (st, name)], (fd.offset, fd.size), "%s.%s" % (st, name))
        self.assertEqual(got["ws_err"], (ctypes.sizeof(_conv.CError),))
        self.assertEqual(len(_conv.ARGS_FIELDS), 16)


if __name__ == "__main__":
    unittest.main()

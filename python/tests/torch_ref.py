"""References and checks for the whisper_stem.torch tests (test_torch.py on the CPU,
test_torch_gpu.py on CUDA), written apart from the engine:

- ref_conv1d: act(F.conv1d(pre(F.pad(x, pads)), w, b, stride, dilation, groups)) + add, in
  float64 through torch.nn.functional;
- ref_causal: causal-conv1d's reference semantics (its causal_conv1d_ref, transcribed from
  the documented behaviour): x padded on the left with initial_states (or zeros),
  F.conv1d with groups=C, an optional activation, final_states = the last K-1 steps of
  the padded sequence;
- ref_causal_packed: the same with seq_idx: a tap reads only positions of its output's
  sequence, and a position whose seq_idx is negative outputs 0;
- bounds: |got - want| <= rtol * |want| + atol * S, where S is the same computation on
  absolute values (the sum of the magnitudes of the terms, which bounds float32's
  accumulation error), for forward values and each gradient.
"""

import torch
import torch.nn.functional as F

ACT_F = {None: lambda v: v, "relu": F.relu, "gelu": F.gelu, "silu": F.silu}

# (rtol, atol) per storage type: float32 holds a float32 sum; bfloat16 / float16 add one
# rounding of the stored result (half an ulp: 2^-8 and 2^-11 relative).
TOL = {
    torch.float32: (2e-6, 2e-6),
    torch.bfloat16: (2.0 ** -8 * 1.01, 2e-5),
    torch.float16: (2.0 ** -11 * 1.01, 2e-5),
}


def pads_of(padding, k, dilation):
    if padding == "causal":
        return (dilation * (k - 1), 0)
    if padding == "valid":
        return (0, 0)
    if padding == "same":
        t = dilation * (k - 1)
        return (t // 2, t - t // 2)
    if isinstance(padding, int):
        return (padding, padding)
    return tuple(padding)


def ref_conv1d(x, w, b=None, stride=1, pads=(0, 0), dilation=1, groups=1, act=None, pre=None, add=None):
    h = F.pad(ACT_F[pre](x), pads)
    y = ACT_F[act](F.conv1d(h, w, b, stride=stride, dilation=dilation, groups=groups))
    return y + add if add is not None else y


def conv1d_scales(x, w, b, g, stride=1, pads=(0, 0), dilation=1, groups=1, pre=None, add=None):
    """S for y and for dx, dw, db: the conv of magnitudes, forward and back (act' <= 1.2)."""
    xa = ACT_F[pre](x.detach().double()).abs().requires_grad_()
    wa = w.detach().double().abs().requires_grad_()
    ba = b.detach().double().abs().requires_grad_() if b is not None else None
    ya = F.conv1d(F.pad(xa, pads), wa, ba, stride=stride, dilation=dilation, groups=groups)
    ins = [xa, wa] + ([ba] if ba is not None else [])
    gs = torch.autograd.grad(ya, ins, g.detach().double().abs() * 1.2)
    sy = ya.detach() * 1.2
    if add is not None:
        sy = sy + add.detach().double().abs()
    return sy, gs[0], gs[1], (gs[2] if ba is not None else None)


def ref_causal(x, w, b=None, initial_states=None, return_final_states=False, activation=None):
    """x [N][C][T], w [C][K] (or [C][1][K]), initial_states [N][C][K-1]."""
    c, k = x.shape[1], w.shape[-1]
    if initial_states is None:
        xp = F.pad(x, (k - 1, 0))
    else:
        xp = torch.cat([initial_states, x], dim=-1)
    y = ACT_F[activation](F.conv1d(xp, w.reshape(c, 1, k), b, groups=c))
    if not return_final_states:
        return y
    return y, xp[..., xp.shape[-1] - (k - 1):]


def ref_causal_packed(x, w, b, seq_idx, activation=None):
    """causal conv over packed sequences: seq_idx [N][T] (int), negative = padding."""
    n, c, t = x.shape
    k = w.shape[-1]
    w2 = w.reshape(c, k)
    xp = F.pad(x, (k - 1, 0))
    sp = F.pad(seq_idx.long(), (k - 1, 0), value=-1)
    own = seq_idx.long()
    z = torch.zeros_like(x) if b is None else b.reshape(1, c, 1).expand(n, c, t).clone()
    for j in range(k):
        same = ((sp[:, j:j + t] == own) & (own >= 0)).to(x.dtype)
        z = z + w2[:, j].reshape(1, c, 1) * xp[..., j:j + t] * same.unsqueeze(1)
    return ACT_F[activation](z) * (own >= 0).to(x.dtype).unsqueeze(1)


def causal_scales(x, w, b, g, initial_states=None):
    """S for y, dx, dw, db (and d initial_states) of the causal conv."""
    xa = x.detach().double().abs().requires_grad_()
    wa = w.detach().double().abs().requires_grad_()
    ba = b.detach().double().abs().requires_grad_() if b is not None else None
    ia = initial_states.detach().double().abs().requires_grad_() if initial_states is not None else None
    ya = ref_causal(xa, wa, ba, ia)
    ins = [xa, wa] + ([ba] if ba is not None else []) + ([ia] if ia is not None else [])
    gs = list(torch.autograd.grad(ya, ins, g.detach().double().abs() * 1.2))
    out = {"y": ya.detach() * 1.2, "x": gs.pop(0), "w": gs.pop(0)}
    out["b"] = gs.pop(0) if ba is not None else None
    out["init"] = gs.pop(0) if ia is not None else None
    return out


def assert_close(tc, name, got, want, scale, dtype, rounded=None):
    """|got - want| <= rtol * |want| + atol * scale, elementwise; fails naming the worst.
    rounded: the magnitude of an intermediate result that was rounded to dtype too (adds
    rtol * |rounded| to the bound)."""
    rtol, atol = TOL[dtype]
    tc.assertEqual(tuple(got.shape), tuple(want.shape), "%s: shape" % name)
    got = got.detach().double().cpu()
    want = want.detach().double().cpu()
    if not torch.is_tensor(scale):
        scale = torch.full_like(want, float(scale))
    scale = scale.detach().double().cpu()
    err = (got - want).abs()
    bound = rtol * want.abs() + atol * scale + 1e-30
    if rounded is not None:
        bound = bound + rtol * rounded.detach().double().abs().cpu()
    ratio = err / bound
    i = int(torch.argmax(ratio.reshape(-1)))
    if ratio.reshape(-1)[i] > 1:
        idx = tuple(int(v) for v in torch.unravel_index(torch.tensor(i), want.shape)) \
            if hasattr(torch, "unravel_index") else i
        tc.fail("%s: error %.3g at %s (got %.9g, want %.9g), bound %.3g; %d elements over" % (
            name, float(err.reshape(-1)[i]), idx, float(got.reshape(-1)[i]), float(want.reshape(-1)[i]),
            float(bound.reshape(-1)[i]), int((ratio > 1).sum())))


def nlc(x):
    """x [N][C][T] as a channel-last view: the transpose of a contiguous [N][T][C] copy."""
    return x.transpose(1, 2).contiguous().transpose(1, 2)

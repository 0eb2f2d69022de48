"""Every ATen converter against eager PyTorch, on the op alone.

Each case is a small function of tensors (forward ops, and their backward
ops through torch.autograd.grad); all cases are exported into one module,
compiled once with gradcomm-compile --emit=shared, called through the
ctypes runner and compared with the eager result: bit-exact for int64 and
bool outputs, within 1e-5 of the largest magnitude for float32 ones. The
test also fails when a registered converter is exercised by no case. On
torch >= 2.0 the cases run again in bfloat16 (BF16_INEXACT below).

Run: pytest test/Python/test_converters.py (gradcomm-compile: $GRADCOMM_BIN,
else the package's build).
"""

import os
import subprocess

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runner import CompiledStep  # noqa: E402
from gradcomm.torch.export import (export_function, from_numpy,  # noqa
                                   to_numpy)
from gradcomm.torch.graph import DTYPES, aten_name, trace  # noqa: E402
from gradcomm.torch.ops import CONVERTERS  # noqa: E402

TOLERANCE = 1e-5

# The same cases again in bfloat16 (on torch >= 2.0): every float input
# converted, compared with eager PyTorch in bfloat16. Each node computes in
# float32 and rounds once, as PyTorch's CPU kernels do, so most cases give
# PyTorch's bits exactly; these round inside the op differently (a sum's
# order, PyTorch's own intermediate rounding) and are held to four bf16
# units in the last place of the output's largest magnitude.
BF16_TOLERANCE = 2.0 ** -6
BF16_INEXACT = {
    "adaptive_avg_pool", "avg_pool_ceil_exclude_pad", "conv_depthwise",
    "conv_dilation_im2col", "conv_groups_dilation", "conv_long_sums",
    "conv_pad1",
    "conv_stride2_ragged", "layer_norm", "layer_norm_2d_no_affine",
    "log_softmax_nll", "math", "max_pool_ceil", "batch_norm_stats",
}

# Converters for names that only torch 2.x traces (or that no model of
# ours reaches on 1.13); each shares its body with a tested converter.
UNTESTED_ALIASES = {
    "_native_batch_norm_legit": "native_batch_norm",
    "_batch_norm_with_update": "native_batch_norm",
    "batch_norm_backward": "native_batch_norm_backward",
    "reshape": "view", "to": "_to_copy", "lift_fresh": "lift_fresh_copy",
    "copy": "copy_", "fill": "fill_", "relu_": "relu",
    "add_": "add", "sub_": "sub", "mul_": "mul", "div_": "div",
    "masked_fill_": "masked_fill", "addcmul_": "addcmul",
    "addcdiv_": "addcdiv", "alias": "clone", "contiguous": "clone",
    "flatten": "view",
    # CPU dropout on torch 1.13 is empty_like + bernoulli_ (tested through
    # the dropout case); torch 2.x traces native_dropout.
    "bernoulli": "bernoulli_",
}

generator = torch.Generator().manual_seed(7)


def randn(*shape, grad=False):
    return torch.randn(*shape, generator=generator).requires_grad_(grad)


def randint(high, *shape):
    return torch.randint(0, high, shape, generator=generator)


def grad_of(outputs_fn, inputs, seed):
    """(outputs..., d outputs / d inputs with `seed` as output gradient).
    seed None: the function returns a tuple, and the gradient is that of
    the sum of its outputs' sums."""
    def fn(*args):
        tensors = args[:len(inputs)]
        out = outputs_fn(*tensors)
        if seed is None:
            total = sum(o.sum() for o in out)
            grads = torch.autograd.grad(total, [t for t in tensors
                                                if t.requires_grad])
            return tuple(out) + tuple(grads)
        grads = torch.autograd.grad(out, [t for t in tensors
                                          if t.requires_grad], args[-1])
        return (out,) + tuple(grads)
    return fn, tuple(inputs) + ((seed,) if seed is not None else ())


def cases():
    c = {}
    x23 = randn(2, 3, grad=True)
    c["addmm_mm_t"] = grad_of(lambda x, w, b: F.linear(x, w, b),
                              [randn(4, 5, grad=True), randn(3, 5, grad=True),
                               randn(3, grad=True)], randn(4, 3))
    c["relu_threshold_backward"] = grad_of(F.relu, [x23], randn(2, 3))
    c["log_softmax_nll"] = grad_of(
        lambda x: F.cross_entropy(x, torch.tensor([1, 0, 3, 3])),
        [randn(4, 5, grad=True)], torch.tensor(1.5))
    c["nll_ignore_index_sum"] = grad_of(
        lambda x: F.nll_loss(x, torch.tensor([1, -100, 2]), reduction="sum"),
        [randn(3, 4, grad=True)], torch.tensor(0.5))
    c["nll_none"] = grad_of(
        lambda x: F.nll_loss(x, torch.tensor([1, 0, 2]), reduction="none"),
        [randn(3, 4, grad=True)], randn(3))
    c["sum_view_mean"] = (lambda x: (x.view(6, 4).sum(0),
                                     x.sum([0, 2], keepdim=True),
                                     x.mean(1), x.sum()),
                          (randn(2, 3, 4),))
    c["conv_pad1"] = grad_of(lambda x, w, b: F.conv2d(x, w, b, padding=1),
                             [randn(2, 3, 6, 6, grad=True),
                              randn(4, 3, 3, 3, grad=True),
                              randn(4, grad=True)], randn(2, 4, 6, 6))
    c["conv_stride2_ragged"] = grad_of(
        lambda x, w: F.conv2d(x, w, stride=2),
        [randn(2, 3, 8, 7, grad=True), randn(4, 3, 3, 2, grad=True)],
        randn(2, 4, 3, 3))
    c["max_pool_2x2"] = grad_of(lambda x: F.max_pool2d(x, 2),
                                [randn(2, 3, 6, 6, grad=True)],
                                randn(2, 3, 3, 3))
    ties = torch.tensor([[[[1., 1., 2.], [1., 1., 0.], [3., -1., 3.]]]])
    c["max_pool_overlap_pad_ties"] = grad_of(
        lambda x: F.max_pool2d(x, 3, stride=2, padding=1),
        [ties.clone().requires_grad_(True)], randn(1, 1, 2, 2))
    c["max_pool_indices"] = (lambda x: F.max_pool2d(
        x, 2, stride=1, return_indices=True), (randn(1, 2, 4, 5),))
    c["batch_norm_train"] = grad_of(
        lambda x, w, b: F.batch_norm(x, torch.zeros(3), torch.ones(3), w, b,
                                     training=True, momentum=0.1, eps=1e-5),
        [randn(4, 3, 2, 2, grad=True), randn(3, grad=True),
         randn(3, grad=True)], randn(4, 3, 2, 2))
    c["batch_norm_stats"] = (lambda x, rm, rv: (F.batch_norm(
        x, rm, rv, training=True, momentum=0.2), rm, rv),
        (randn(5, 2, 3), randn(2), randn(2).abs() + 0.5))
    c["layer_norm"] = grad_of(
        lambda x, w, b: F.layer_norm(x, (4,), w, b, 1e-5),
        [randn(2, 3, 4, grad=True), randn(4, grad=True),
         randn(4, grad=True)], randn(2, 3, 4))
    c["layer_norm_2d_no_affine"] = grad_of(
        lambda x: F.layer_norm(x, (3, 4)), [randn(2, 3, 4, grad=True)],
        randn(2, 3, 4))
    c["embedding"] = grad_of(
        lambda w: F.embedding(torch.tensor([[1, 3, 1], [0, 3, 5]]), w),
        [randn(6, 4, grad=True)], randn(2, 3, 4))
    c["embedding_padding_idx"] = grad_of(
        lambda w: F.embedding(torch.tensor([2, 1, 2]), w, padding_idx=2),
        [randn(4, 3, grad=True)], randn(3, 3))
    c["bmm_softmax"] = grad_of(
        lambda a, b: torch.softmax(torch.bmm(a, b), dim=-1),
        [randn(2, 3, 4, grad=True), randn(2, 4, 5, grad=True)],
        randn(2, 3, 5))
    c["gelu"] = grad_of(F.gelu, [randn(3, 4, grad=True)], randn(3, 4))
    c["shapes"] = (lambda x: (x.transpose(0, 2).clone(),
                              x.permute(1, 2, 0).reshape(12, 2),
                              x[:, 1:3, ::2], x.select(1, 2), x.unsqueeze(1),
                              x[:, :1].squeeze(1), x.expand(3, 2, 3, 4)[2]),
                   (randn(2, 3, 4),))
    c["cat_split"] = (lambda a, b: (torch.cat([a, b], 1),) + tuple(
        torch.cat([a, b], 0).split(1, 0)) + tuple(a.split([1, 2], 1)),
        (randn(1, 3), randn(1, 3)))
    c["masked_fill_where"] = (lambda x, m: (
        x.masked_fill(m, float("-inf")), torch.where(m, x, x * 2.0),
        x.masked_fill(m, 0.5) > 0, x.eq(0.25), x.lt(0.0), x.ge(x * 0.5), x.ne(x)),
        (randn(3, 4), torch.rand(3, 4, generator=generator) > 0.5))
    c["arithmetic"] = (lambda a, b: (
        a + b, a - 2.0 * b, torch.add(a, b, alpha=0.5), a * b, a / b, -a,
        a / 3.0, 1.0 - a, torch.sub(a, b, alpha=2), a * 0.5, b.reciprocal(),
        torch.addcmul(a, a, b, value=0.1), torch.addcdiv(a, a, b, value=0.2)),
        (randn(3, 4), randn(4).abs() + 0.5))
    c["math"] = (lambda a: (
        torch.exp(a), torch.log(a.abs() + 1), torch.sqrt(a.abs()),
        torch.rsqrt(a.abs() + 1), torch.tanh(a), torch.sigmoid(a),
        torch.expm1(a * 1e-4), torch.log1p(a.abs() * 1e-3), a ** 2,
        torch.pow(0.9, a), torch.erf(a), a.amax(1), a.amin(0)),
        (randn(3, 5),))
    c["constants_int_bool"] = (lambda a, i: (
        torch.ones_like(a), torch.zeros_like(a), torch.full_like(a, 3.0),
        i + 1, i * 2, a.new_ones(()) + a.sum(), (i > 1).logical_not(),
        a.to(torch.float32) + torch.full((2,), 2.0), a.detach() + 1,
        torch.zeros(2, 1) + torch.ones(2, 1), torch.scalar_tensor(1.5) + a),
        (randn(2), torch.tensor([1, 2, 3])))
    c["copy_fill"] = (lambda a: (torch.zeros(2, 3).copy_(a).add_(1.0),
                                 torch.zeros(2).fill_(a.sum()),
                                 a.new_zeros((2,)), a.new_full((2,), 3.0)),
                      (randn(3),))
    c["select_slice_backward"] = grad_of(
        lambda a: a[1] * 2.0 + a[:, 1:4:2].sum(), [randn(3, 5, grad=True)],
        randn(5))
    c["conversions_stack"] = (lambda a, i: (
        i.to(torch.float32) * a, a.le(0.0), torch.stack([a, a * 2], 1),
        torch.unbind(a.view(3, 1), 0)[1]), (randn(3), torch.tensor([1, 2, 3])))
    c["matmul_baddbmm"] = grad_of(
        lambda a, b, c: torch.baddbmm(c, a, b, alpha=0.5, beta=2.0) +
        torch.matmul(a, b[0]), [randn(2, 3, 4, grad=True),
                                randn(2, 4, 5, grad=True),
                                randn(2, 3, 5, grad=True)], randn(2, 3, 5))
    c["dropout_eval_p0"] = (lambda a: F.dropout(a, 0.0, training=True),
                            (randn(3),))
    return c


def stock_model_cases():
    """The ops the torchvision and torch.nn zoo needs (examples/pytorch/
    zoo.py). Appended after cases(): inputs drawn here do not change the
    ones drawn before (all cases share one generator, in order)."""
    c = {}
    c["conv_groups_dilation"] = grad_of(
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=2, dilation=2,
                                 groups=2),
        [randn(2, 4, 9, 8, grad=True), randn(6, 2, 3, 3, grad=True),
         randn(6, grad=True)], randn(2, 6, 5, 4))
    c["conv_depthwise"] = grad_of(
        lambda x, w: F.conv2d(x, w, padding=1, groups=3),
        [randn(2, 3, 6, 6, grad=True), randn(3, 1, 3, 3, grad=True)],
        randn(2, 3, 6, 6))
    c["avg_pool_ceil_exclude_pad"] = grad_of(
        lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                               count_include_pad=False),
        [randn(2, 3, 8, 7, grad=True)], randn(2, 3, 5, 4))
    c["avg_pool_include_pad_override"] = grad_of(
        lambda x: (F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, 2, 1),
                   F.avg_pool2d(x, 2, divisor_override=3)),
        [randn(1, 2, 6, 6, grad=True)], None)
    c["max_pool_ceil"] = grad_of(
        lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True),
        [randn(2, 2, 8, 7, grad=True)], randn(2, 2, 4, 3))
    c["adaptive_avg_pool"] = grad_of(
        lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
        [randn(2, 2, 7, 5, grad=True)], randn(2, 2, 3, 2))
    c["activations"] = grad_of(
        lambda x: F.gelu(x, approximate="tanh") + F.relu6(x * 4) +
        F.hardtanh(x, -0.5, 0.5) + F.hardswish(x * 4) +
        F.hardsigmoid(x * 4) + F.silu(x) + torch.sigmoid(x) * 2,
        [randn(3, 5, grad=True)], randn(3, 5))
    c["clamp_logical"] = (lambda a, m, n: (
        a.clamp(min=-0.5), a.clamp(max=0.25), a.clamp(-0.1, 0.1),
        m.logical_and(n), m.logical_or(n), m & n, m | n),
        (randn(3, 4), torch.rand(3, 4, generator=generator) > 0.5,
         torch.rand(3, 4, generator=generator) > 0.5))
    masked = randn(2, 4, 4)
    masked[0, 1] = float("-inf")  # a fully masked row: zeros, not NaN
    c["tril_triu"] = (lambda a, m: (a.tril(), a.triu(1), m.tril(-1)),
                      (masked, torch.ones(4, 4, dtype=torch.bool)))
    if hasattr(torch.ops.aten, "_safe_softmax"):  # torch >= 2.5
        c["safe_softmax"] = (lambda a: torch.ops.aten._safe_softmax(a, -1),
                             (masked,))
    c["as_strided"] = (lambda a, b: (
        a.as_strided((2, 3), (3, 1), 1),
        a.as_strided((2, 1, 2), (2, 7, 1), 0),
        torch.ops.aten.as_strided_scatter(a, b, (2, 3), (3, 1), 2)),
        (randn(8), randn(2, 3)))
    # Sums of 256+ terms accumulate in f64: forward (32 x 3 x 3 = 288),
    # input gradient (288) and weight gradient (2 x 12 x 12 = 288).
    c["conv_long_sums"] = grad_of(
        lambda x, w: F.conv2d(x, w, padding=1),
        [randn(2, 32, 12, 12, grad=True), randn(32, 32, 3, 3, grad=True)],
        randn(2, 32, 12, 12))
    # Swin's ops: a gather with a repeated and a negative index (its
    # backward accumulates with index_put), roll, constant padding and a
    # strided slice_scatter.
    rows = torch.tensor([[2, 0], [-1, 2]])
    c["index_roll_pad"] = grad_of(
        lambda x: (x[rows] * 1.0, x[:, rows[0]] * 1.0,
                   torch.roll(x, (1, -2), (0, 1)),
                   F.pad(x, (1, 2, 0, 1), value=0.5)),
        [randn(4, 5, grad=True)], None)
    c["slice_scatter"] = (lambda a, b: torch.slice_scatter(
        a, b, 1, 1, 5, 2), (randn(3, 6), randn(3, 2)))
    c["empty_then_filled"] = (lambda a: (
        torch.empty(2, 3).fill_(2.0) + a,
        a.new_empty((2, 3)).fill_(1.0) * a), (randn(2, 3),))
    # An ungrouped dilated, strided, padded convolution with a ragged edge:
    # the im2col path (conv_groups_dilation takes the grouped loop nest).
    c["conv_dilation_im2col"] = grad_of(
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=2, dilation=2),
        [randn(2, 3, 9, 8, grad=True), randn(5, 3, 3, 2, grad=True),
         randn(5, grad=True)], randn(2, 5, 5, 5))
    return c


DROPOUT_P = 0.3


def dropout_case():
    return grad_of(lambda x: F.dropout(x, DROPOUT_P, training=True),
                   [torch.ones(100, 100, requires_grad=True) * 1.0],
                   randn(100, 100))


def native_dropout_case():
    """torch 2.x traces dropout as native_dropout: call it directly."""
    def fn(x, g):
        out, mask = torch.ops.aten.native_dropout(x, DROPOUT_P, True)
        scale = 1.0 / (1.0 - DROPOUT_P)
        return out, torch.ops.aten.native_dropout_backward(g, mask, scale)
    return fn, (torch.ones(100, 100), randn(100, 100))


def check_dropout(step, args):
    """Dropout cannot match PyTorch's generator: check its definition
    instead. A kept element is x / (1 - p), a dropped one 0, with the drop
    rate p within 4 sigma; the backward uses the same mask; the same seed
    gives the same mask, another seed another one."""
    x, g = (a.detach().numpy() for a in args)
    runs = {seed: step({"in0": x, "in1": g, "dropout_seed": np.int64(seed)})
            for seed in (1, 1, 2)}
    out, grad = runs[1]["out0"], runs[1]["out1"]
    kept = out != 0
    rate = 1.0 - kept.mean()
    sigma = (DROPOUT_P * (1 - DROPOUT_P) / out.size) ** 0.5
    scale = np.float32(1.0 / (1.0 - DROPOUT_P))
    problems = []
    if abs(rate - DROPOUT_P) > 4 * sigma:
        problems.append("drop rate %.4f, expected %.2f" % (rate, DROPOUT_P))
    if not np.array_equal(out[kept], (x * scale)[kept]):
        problems.append("kept elements are not x / (1 - p)")
    if not np.array_equal(grad, np.where(kept, g * scale, 0)):
        problems.append("the backward does not use the forward's mask")
    again = step({"in0": x, "in1": g, "dropout_seed": np.int64(1)})
    if not np.array_equal(again["out0"], out):
        problems.append("the same seed gave another mask")
    if np.array_equal(runs[2]["out0"] != 0, kept):
        problems.append("another seed gave the same mask")
    return problems


def fresh(args):
    """Copies of the case's inputs: tracing runs the ops for real, and
    in-place ops (batch-norm running statistics) would change them."""
    return tuple(a.detach().clone().requires_grad_(a.requires_grad)
                 for a in args)


def compile_module(compile_tool, work, name, functions):
    """One module of the cases' functions, compiled dense; its library."""
    module = os.path.join(work, name + ".mlir")
    with open(module, "w") as f:
        f.write("module {\n" + "\n".join(functions) + "\n}\n")
    library = os.path.join(work, "lib%s.so" % name)
    subprocess.run([compile_tool, module, "-o", library, "--emit=shared",
                    "--strategy=dense"], check=True)
    return library


def bfloat16(args):
    """fresh(args) with every float tensor in bfloat16."""
    return tuple(a.detach().to(torch.bfloat16).requires_grad_(
        a.requires_grad) if a.is_floating_point() else a
        for a in fresh(args))


def check_bfloat16(compile_tool, work, all_cases):
    """The bf16 pass (BF16_INEXACT above); returns the failure count."""
    texts, manifests, expected = [], {}, {}
    for name, (fn, args) in sorted(all_cases.items()):
        if name in ("dropout", "native_dropout") or not any(
                a.is_floating_point() for a in args):
            continue  # dropout's masks: check_dropout, float32 only
        try:
            out = fn(*bfloat16(args))
        except RuntimeError:  # eager PyTorch has no bf16 kernel for it
            continue
        text, manifest = export_function(fn, bfloat16(args), name)
        texts.append(text)
        manifests[name] = manifest
        expected[name] = out if isinstance(out, tuple) else (out,)
    library = compile_module(compile_tool, work, "converters-bf16", texts)
    failures = 0
    for name in sorted(manifests):
        step = CompiledStep(library, manifests[name])
        inputs = {e["name"]: to_numpy(a) for e, a in zip(
            manifests[name]["inputs"], bfloat16(all_cases[name][1]))}
        got = step(inputs)
        for i, (want, entry) in enumerate(zip(expected[name],
                                              manifests[name]["outputs"])):
            have = from_numpy(got["out%d" % i], entry["dtype"])
            if entry["dtype"] != DTYPES.get(want.dtype):
                failures += 1
                print("FAIL %s (bf16) output %d: %s, PyTorch gives %s" % (
                    name, i, entry["dtype"], want.dtype))
                continue
            want = want.detach().double().numpy()
            finite = np.isfinite(want)
            error = float(np.max(np.abs(have[finite] - want[finite]))) / max(
                float(np.max(np.abs(want[finite]))), 1e-30) \
                if finite.any() else 0.0
            limit = BF16_TOLERANCE if name in BF16_INEXACT else 0.0
            if not np.array_equal(np.isfinite(have), finite) or \
                    error > limit:
                failures += 1
                print("FAIL %s (bf16) output %d: relative error %.3g (limit "
                      "%.3g)" % (name, i, error, limit))
    print("%d cases in bfloat16: %s" % (
        len(manifests), "FAILED" if failures else "all match PyTorch"))
    return failures


def test_trace_computes_no_values():
    """On torch 2 the export traces fake tensors: the traced function sees
    tensors with shapes and types but no data (computing real values took
    most of an export's time, graph.trace)."""
    if not hasattr(torch, "func"):
        return  # torch 1.13 traces real tensors
    from torch._subclasses.fake_tensor import FakeTensor
    seen = []

    def fn(t):
        seen.append(type(t))
        return torch.autograd.grad((t * t).sum(), [t])

    trace(fn, [torch.randn(4, 3, requires_grad=True)])
    assert seen and all(issubclass(kind, FakeTensor) for kind in seen), seen


def test_every_converter_matches_eager_pytorch(tools, work):
    assert check_all(tools("gradcomm-compile"), work) == 0


def check_all(compile_tool, work):
    """The number of failures; each is printed."""
    texts, manifests, expected = [], {}, {}
    exercised = set()
    all_cases = cases()
    all_cases.update(stock_model_cases())
    all_cases["dropout"] = dropout_case()
    all_cases["native_dropout"] = native_dropout_case()
    for name, (fn, args) in sorted(all_cases.items()):
        text, manifest = export_function(fn, fresh(args), name)
        texts.append(text)
        manifests[name] = manifest
        out = fn(*fresh(args))
        out = out if isinstance(out, tuple) else (out,)
        expected[name] = [o.detach().numpy() for o in out]
        for node in trace(fn, fresh(args)).graph.nodes:
            if node.op == "call_function":
                exercised.add(aten_name(node.target))
    library = compile_module(compile_tool, work, "converters", texts)
    failures = 0
    for name in sorted(manifests):
        step = CompiledStep(library, manifests[name])
        if name in ("dropout", "native_dropout"):
            problems = check_dropout(step, all_cases[name][1])
            failures += len(problems)
            for problem in problems:
                print("FAIL %s: %s" % (name, problem))
            continue
        inputs = {e["name"]: a.detach().numpy() for e, a in zip(
            manifests[name]["inputs"], all_cases[name][1])}
        try:
            got = step(inputs)
        except Exception as error:
            failures += 1
            print("FAIL %s: %s" % (name, error))
            continue
        for i, want in enumerate(expected[name]):
            have = got["out%d" % i]
            if want.dtype in (np.float32, np.float64):
                scale = max(float(np.max(np.abs(want))) if want.size else 0,
                            1e-30)
                finite = np.isfinite(want)
                same_inf = np.array_equal(np.isfinite(have), finite) and \
                    np.array_equal(have[~finite], want[~finite],
                                   equal_nan=True)
                error = float(np.max(np.abs(have[finite] - want[finite]))) \
                    / scale if finite.any() else 0.0
                ok = same_inf and error <= TOLERANCE
                detail = "relative error %.3g" % error
            else:
                ok = np.array_equal(have, want)
                detail = "exact"
            if not ok:
                failures += 1
                print("FAIL %s output %d: %s\n  got  %s\n  want %s" % (
                    name, i, detail, have.ravel()[:8], want.ravel()[:8]))
    # A converter function counts as exercised when any of its names is: a
    # torch version traces one name of a pair (copy_ on 1.13, copy after
    # torch 2.x's functionalization), in-place forms share the body.
    tested_functions = {CONVERTERS[n] for n in exercised if n in CONVERTERS}
    # Ops the installed torch does not have cannot be traced.
    untested = sorted(n for n in set(CONVERTERS) - exercised -
                      set(UNTESTED_ALIASES)
                      if CONVERTERS[n] not in tested_functions and
                      hasattr(torch.ops.aten, n))
    if untested:
        failures += 1
        print("converters no case exercises: %s" % ", ".join(untested))
    if int(torch.__version__.split(".")[0]) >= 2:
        failures += check_bfloat16(compile_tool, work, all_cases)
    print("%d cases, %d ATen ops exercised, %d converters registered: %s" % (
        len(manifests), len(exercised & set(CONVERTERS)), len(CONVERTERS),
        "FAILED" if failures else "all match PyTorch"))
    return failures

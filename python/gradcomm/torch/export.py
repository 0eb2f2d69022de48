"""Export one data-parallel training step of a torch.nn.Module to GradComm
MLIR: forward, loss, torch.autograd.grad through functional_call, one
shard.all_reduce per parameter gradient (and the loss), and the optimizer
update, all on tensors (linalg/tensor/arith/math). See docs/export.md."""

import contextlib
import json
import re

import numpy as np
import torch
import torch.nn.functional as F

from gradcomm.mlir import Builder, ExportError, Tensor
from gradcomm.torch.graph import (HALF_DTYPES, GraphConverter,
                                  check_half_supported, element_type, trace)

try:  # torch >= 2.0
    from torch.func import functional_call
except ImportError:  # torch 1.13
    from torch.nn.utils.stateless import functional_call


class StepSpec:
    """What a model factory returns: the model, the shape of one sample
    (without the batch dimension) and of its target, and the loss."""

    def __init__(self, model, input_shape, input_dtype=torch.float32,
                 target_shape=(), target_dtype=torch.int64, loss_fn=None):
        self.model = model
        self.input_shape = tuple(input_shape)
        self.input_dtype = input_dtype
        self.target_shape = tuple(target_shape)
        self.target_dtype = target_dtype
        self.loss_fn = loss_fn or F.cross_entropy


class ExportedStep:
    """The MLIR text and its manifest (argument and result order, names,
    roles, shapes, element types) that gradcomm.torch.runner reads."""

    def __init__(self, text, manifest):
        self.text = text
        self.manifest = manifest

    def write(self, path):
        with open(path, "w") as f:
            f.write(self.text)
        with open(manifest_path(path), "w") as f:
            json.dump(self.manifest, f, indent=1, sort_keys=True)
            f.write("\n")


def manifest_path(mlir_path):
    return re.sub(r"\.mlir$", "", mlir_path) + ".json"


def ssa_name(name):
    return "%arg." + re.sub(r"[^A-Za-z0-9_.$-]", "_", name)


class _Signature:
    """Function arguments and results with their manifest entries."""

    def __init__(self):
        self.args = []
        self.results = []

    def add_arg(self, name, role, shape, dtype, attrs=""):
        taken = {a[0].name for a in self.args}
        ssa = ssa_name(name)
        while ssa in taken:
            ssa += "_"
        value = Tensor(ssa, shape, dtype)
        self.args.append((value, name, role, attrs))
        return value

    def add_result(self, value, name, role):
        self.results.append((value, name, role))

    def manifest_entries(self, items):
        """Manifest entries. A result that is an argument itself is
        returned by no compiled function (gradcomm-drop-in-place-results
        removes it from the C signature): its entry names that argument."""
        arg_names = {a[0].name: a[1] for a in self.args}
        entries = []
        for value, name, role in items:
            entry = {"name": name, "role": role, "shape": list(value.shape),
                     "dtype": value.dtype}
            if items is self.results and value.name in arg_names:
                entry["aliases_input"] = arg_names[value.name]
            entries.append(entry)
        return entries


def _all_reduce(builder, value, reduction, runtime_name=None):
    name = builder.fresh("r")
    attrs = ' {gradcomm.runtime_name = "%s"}' % runtime_name \
        if runtime_name else ""
    builder.emit("%s = shard.all_reduce %s on @grid grid_axes = [0] "
                 "reduction = %s%s : %s -> %s" % (name, value.name, reduction,
                                                  attrs, value.type,
                                                  value.type))
    return Tensor(name, value.shape, value.dtype)


AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def export_step(spec, batch, ranks, optimizer, lr=0.01, lr_input=False,
                reduction="average", function="step", local_loss=False,
                autocast=None):
    """Exports the per-rank step for `ranks` ranks of `batch` samples each.

    reduction: 'average' all-reduces the local mean-loss gradients with
    `average`; 'sum' scales the local loss by 1/ranks and all-reduces with
    `sum`. Both give the gradient of the global-batch mean loss, and the
    returned loss is the mean of the ranks' losses, or with local_loss this
    rank's own mean loss (no all-reduce: the asynchronous strategies'
    steps then never wait for another rank).

    Parameters, buffers and the input keep their dtypes (float32, bfloat16
    or float16). autocast ('bf16' or 'f16') runs the forward pass under
    torch.autocast('cpu'): matrix products and convolutions in that type,
    master weights and their gradients in float32."""
    if reduction not in ("average", "sum"):
        raise ExportError("reduction must be 'average' or 'sum'")
    if local_loss and reduction != "average":
        raise ExportError("local_loss returns the rank's own mean loss: it "
                          "needs reduction 'average' (with 'sum' the "
                          "objective is scaled by 1/ranks)")
    if batch < 1 or ranks < 1:
        raise ExportError("batch and ranks must be positive")
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", function):
        raise ExportError("function name %r is not a C identifier" %
                          (function,))
    if autocast is not None and autocast not in AUTOCAST_DTYPES:
        raise ExportError("autocast must be one of %s, got %r" % (
            ", ".join(sorted(AUTOCAST_DTYPES)), autocast))
    model = spec.model
    model.train()
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not params:
        raise ExportError("the model has no trainable parameters")
    buffers = list(model.named_buffers())
    for name, value in params + buffers:
        element_type(value.dtype, "'%s'" % name)
    if autocast is not None or spec.input_dtype in HALF_DTYPES or any(
            v.dtype in HALF_DTYPES for _, v in params + buffers):
        check_half_supported("mixed precision")
    param_names = [n for n, _ in params]
    buffer_names = [n for n, _ in buffers]
    scale = 1.0 / ranks if reduction == "sum" else 1.0

    def forward_backward(param_values, buffer_values, x, y):
        state = dict(zip(param_names, param_values))
        state.update(zip(buffer_names, buffer_values))
        with autocasting(autocast):
            loss = spec.loss_fn(functional_call(model, state, (x,)), y)
        if loss.dim() != 0:
            raise ExportError("the loss must be a scalar, got shape %s" %
                              list(loss.shape))
        objective = loss * scale if scale != 1.0 else loss
        grads = torch.autograd.grad(objective, param_values,
                                    allow_unused=True)
        for name, grad in zip(param_names, grads):
            if grad is None:
                raise ExportError("parameter '%s' does not affect the loss "
                                  "(freeze it: requires_grad_(False))" % name)
        return [objective] + list(grads) + list(buffer_values)

    x = torch.zeros((batch,) + spec.input_shape, dtype=spec.input_dtype)
    y = torch.zeros((batch,) + spec.target_shape, dtype=spec.target_dtype)
    traced_params = [p.detach().clone().requires_grad_(True)
                     for _, p in params]
    traced_buffers = [b.detach().clone() for _, b in buffers]
    backward_graph = trace(forward_backward,
                           (traced_params, traced_buffers, x, y), model)

    state_names = optimizer.state_names()
    states = [s for _, p in params for s in optimizer.initial_state(p)]

    def update(param_values, grad_values, state_values, lr_value):
        new_params, new_states = [], []
        k = len(state_names)
        for i, (param, grad) in enumerate(zip(param_values, grad_values)):
            new_param, new_state = optimizer.update(
                param, grad, state_values[i * k:(i + 1) * k], lr_value)
            new_params.append(new_param)
            new_states.extend(new_state)
        return new_params + new_states

    lr_example = torch.tensor(float(lr)) if lr_input else float(lr)
    if lr_input:
        update_graph = trace(lambda p, g, s, r: update(p, g, s, r),
                             ([p.detach() for _, p in params],
                              [p.detach() for _, p in params], states,
                              lr_example))
    else:
        update_graph = trace(lambda p, g, s: update(p, g, s, float(lr)),
                             ([p.detach() for _, p in params],
                              [p.detach() for _, p in params], states))

    sig = _Signature()
    builder = Builder()
    param_args = [
        sig.add_arg(n, "parameter", p.shape, element_type(p.dtype, n),
                    ' {gradcomm.name = "%s"}' % n) for n, p in params]
    buffer_args = [sig.add_arg(n, "buffer", b.shape,
                               element_type(b.dtype, n)) for n, b in buffers]
    state_args = []
    for (n, p) in params:
        for state_name, value in zip(state_names, optimizer.initial_state(p)):
            state_args.append(sig.add_arg(
                "%s.%s" % (n, state_name), "optimizer_state", value.shape,
                element_type(value.dtype, "%s.%s" % (n, state_name))))
    x_arg = sig.add_arg("input", "input", x.shape,
                        element_type(x.dtype, "the input"))
    y_arg = sig.add_arg("target", "target", y.shape,
                        element_type(y.dtype, "the target"))
    lr_arg = sig.add_arg("lr", "lr", (), "f32") if lr_input else None
    seed = []

    def seed_provider():
        if not seed:
            seed.append(sig.add_arg("dropout_seed", "seed", (), "i64"))
        return seed[0]

    converter = GraphConverter(builder, seed_provider)
    builder.lines.append("  // Forward and backward (per-rank batch).")
    outputs = converter.run(backward_graph,
                            param_args + buffer_args + [x_arg, y_arg])
    loss = outputs[0]
    grads = outputs[1:1 + len(params)]
    new_buffers = outputs[1 + len(params):]
    op = "average" if reduction == "average" else "sum"
    builder.lines.append("  // Gradient all-reduces over the data-parallel "
                         "axis, and the loss (a metric).")
    reduced = [_all_reduce(builder, g, op) for g in grads]
    loss_vector = builder.reshape(loss, (1,))
    if local_loss:
        reduced_loss = loss_vector
    else:
        reduced_loss = _all_reduce(builder, loss_vector, op, "loss")
    builder.lines.append("  // Optimizer update (%s)." % optimizer.name)
    update_inputs = param_args + reduced + state_args
    if lr_input:
        update_inputs.append(lr_arg)
    updated = converter.run(update_graph, update_inputs)
    converter.check()
    for (n, _), value in zip(params, updated[:len(params)]):
        sig.add_result(value, n, "parameter")
    for (n, _), arg, value in zip(buffers, buffer_args, new_buffers):
        if value is not arg:
            sig.add_result(value, n, "buffer")
    for arg_entry, value in zip(sig.args[len(params) + len(buffers):],
                                updated[len(params):]):
        sig.add_result(value, arg_entry[1], "optimizer_state")
    sig.add_result(reduced_loss, "loss", "loss")

    manifest = {
        "function": function, "ranks": ranks, "batch": batch,
        "autocast": autocast,
        "reduction": reduction, "local_loss": bool(local_loss),
        "optimizer": optimizer.name,
        "lr": None if lr_input else float(lr),
        "inputs": sig.manifest_entries([(a[0], a[1], a[2])
                                        for a in sig.args]),
        "outputs": sig.manifest_entries(sig.results),
    }
    return ExportedStep(render(sig, builder, ranks, function, model),
                        manifest)


def render(sig, builder, ranks, function, model):
    header = [
        "// Exported by gradcomm-export from %s: one data-parallel training"
        % type(model).__name__,
        "// step in SPMD form for %d ranks (per-rank batch; gradients "
        "all-reduced)." % ranks,
        "",
        "shard.grid @grid(shape = %d)" % ranks,
        "",
    ]
    args = ",\n    ".join("%s: %s%s" % (value.name, value.type, attrs)
                          for value, _, _, attrs in sig.args)
    results = ", ".join(value.type for value, _, _ in sig.results)
    lines = header + ["func.func @%s(\n    %s)\n    -> (%s) {" %
                      (function, args, results)]
    lines += builder.lines
    lines.append("  return %s : %s" % (
        ", ".join(value.name for value, _, _ in sig.results), results))
    lines.append("}")
    return "\n".join(lines) + "\n"


def autocasting(dtype):
    """torch.autocast on the CPU in `dtype` ('bf16', 'f16'), or nothing."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast("cpu", dtype=AUTOCAST_DTYPES[dtype])


def to_numpy(tensor):
    """A tensor as the numpy array gradcomm.runner takes: bfloat16, which
    numpy lacks, as its raw bits (uint16)."""
    tensor = tensor.detach()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(np.uint16).copy()
    return tensor.numpy().copy()


def from_numpy(array, dtype):
    """gradcomm.runner's array of element type `dtype` as float64."""
    if dtype == "bf16":
        bits = np.asarray(array, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).astype(np.float64)
    return np.asarray(array, dtype=np.float64)


def initial_values(model, optimizer):
    """The first step's parameters, buffers and optimizer state as numpy
    arrays, keyed by the names export_step gives its arguments."""
    values = {n: to_numpy(p) for n, p in model.named_parameters()}
    values.update({n: to_numpy(b) for n, b in model.named_buffers()})
    for n, p in model.named_parameters():
        for state, value in zip(optimizer.state_names(),
                                optimizer.initial_state(p)):
            values["%s.%s" % (n, state)] = to_numpy(value)
    return values


def export_function(fn, args, function="fn", model=None):
    """Exports fn(*args) (tensors in, a tensor or a tuple of tensors out) as
    one func.func without a grid: the ops alone, for tests and for graphs
    that are not training steps. Tensors that require grad may be
    differentiated inside fn; dropout adds a last argument `dropout_seed`
    (tensor<i64>). Returns (text, manifest)."""
    if any(isinstance(a, torch.Tensor) and a.dtype in HALF_DTYPES
           for a in args):
        check_half_supported("mixed precision")
    gm = trace(fn, args, model)
    sig = _Signature()
    builder = Builder()
    inputs = [sig.add_arg("in%d" % i, "input", a.shape,
                          element_type(a.dtype, "argument %d" % i))
              for i, a in enumerate(args)]
    seed = []

    def seed_provider():
        if not seed:
            seed.append(sig.add_arg("dropout_seed", "seed", (), "i64"))
        return seed[0]

    converter = GraphConverter(builder, seed_provider)
    outputs = converter.run(gm, inputs)
    converter.check()
    for i, value in enumerate(outputs):
        if not isinstance(value, Tensor):
            raise ExportError("output %d is not a tensor" % i)
        sig.add_result(value, "out%d" % i, "output")
    body = [line.replace("  ", "    ", 1) for line in builder.lines]
    args_text = ", ".join("%s: %s" % (value.name, value.type)
                          for value, _, _, _ in sig.args)
    results = ", ".join(value.type for value, _, _ in sig.results)
    text = "\n".join(
        ["  func.func @%s(%s) -> (%s) {" % (function, args_text, results)] +
        body + ["    return %s : %s" % (", ".join(
            value.name for value, _, _ in sig.results), results), "  }"])
    manifest = {"function": function,
                "inputs": sig.manifest_entries([(a[0], a[1], a[2])
                                                for a in sig.args]),
                "outputs": sig.manifest_entries(sig.results)}
    return text, manifest

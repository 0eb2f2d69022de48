"""Communication hooks for PyTorch FSDP's sharded strategies: the
gradient reduce-scatter, dense or compressed with ScaleCom's CLT-k
(docs/pytorch.md, "Sharded training (FSDP)").

    from gradcomm.torch import fsdp
    model = FSDP(net, device_id=torch.device("cpu"))
    state = fsdp.ScaleComShardedState(ratio=100)
    model.register_comm_hook(state, fsdp.scalecom_reduce_scatter_hook)

FSDP calls the hook once per flat parameter in the backward pass with the
padded, unsharded gradient and this rank's shard to fill (the flat
parameter is padded to a multiple of the world size, so rank r's shard is
the r-th equal part, as gradcomm_shard_range cuts it). ScaleCom's error
feedback memory is one runtime state per flat parameter on every rank, of
the unsharded length: the leader's selection is over the whole local
gradient, as CLT-k needs.

Under FSDP's `MixedPrecision(reduce_dtype=torch.bfloat16)` (or float16)
the hooks receive 16-bit gradients: they work on a float32 copy and the
values travel in the gradient's own 16 bits (the runtime's wire), so a
value crosses half the bytes; the error-feedback memory stays float32.
"""

import ctypes
import dataclasses
import math

import torch
import torch.distributed as dist

from gradcomm.runtime import REDUCTIONS, WIRES, GradCommError, RecipeOptions
from gradcomm.torch.ddp import (check_saved_state, initialize_runtime,
                                restore_runtime_state, runtime_state)
from gradcomm.torch.recipe import (FixedOptions, Plan, ScaleComOptions,
                                   check_optimizer, dense_reasons,
                                   for_group, unsupported_when_sharded)

# The wire a gradient's values travel in.
_WIRE_OF_DTYPE = {torch.float32: "f32", torch.bfloat16: "bf16",
                  torch.float16: "f16"}


def _predivide_factor(world_size):
    """FSDP's own split of the average into a division before the sum and
    one after it (torch.distributed.fsdp's _get_gradient_predivide_factor),
    so the dense hook gives its bits."""
    factor = 1
    while world_size % factor == 0 and world_size / factor > factor:
        factor *= 2
    return factor


class ShardedState:
    """What both hooks share: the runtime (initialized for this job as the
    DDP hooks do), the world size, a name per flat parameter and the count
    of backward passes (`steps`)."""

    def __init__(self, prefix="fsdp", process_group=None):
        self.rt = initialize_runtime()
        self.size = self.rt.size()
        if dist.is_available() and dist.is_initialized():
            group = (dist.get_rank(process_group),
                     dist.get_world_size(process_group))
            if group != (self.rt.rank(), self.size):
                raise GradCommError(
                    -1, "gradcomm: the runtime's group (rank %d of %d) is not "
                    "the process group (rank %d of %d)" % (
                        (self.rt.rank(), self.size) + group))
        if self.rt.backend() != "cpu":
            raise GradCommError(-1, "gradcomm: the sharded hooks run on the "
                                "runtime's CPU backend only")
        self.prefix = prefix
        self.steps = 0
        self._calls = {}
        self._end_queued = False
        # Every state name the hook used (for counters: rt.stats(name)).
        self.names = set()

    def name_of(self, grad):
        """The flat parameter's state name: its length and its place among
        the flat parameters of that length in this backward pass (FSDP
        reduces them in the same order on every step and rank)."""
        if not self._end_queued:
            # Runs once the whole backward pass is done.
            torch.autograd.Variable._execution_engine.queue_callback(
                self._end_of_backward)
            self._end_queued = True
        length = grad.numel()
        index = self._calls.get(length, 0)
        self._calls[length] = index + 1
        name = ("%s.%d.%d" % (self.prefix, length, index)).encode()
        self.names.add(name)
        return name

    def _end_of_backward(self):
        self._calls.clear()
        self._end_queued = False
        self.steps += 1

    def state_dict(self):
        """This rank's state as a torch.save-able dict: the runtime's
        (every named memory, velocity and step counter of the process)
        and the count of backward passes. Save it per rank next to the
        model's and optimizer's checkpoint; a job that loads it into a
        state made as this one was, on the same rank of a job of the same
        size, continues with the bits of the run that never stopped."""
        return {"format": "gradcomm-fsdp-state", "rank": self.rt.rank(),
                "size": self.size, "runtime": runtime_state(self.rt),
                "steps": self.steps}

    def load_state_dict(self, state):
        """Restores state_dict's answer (between backward passes)."""
        check_saved_state(state, "gradcomm-fsdp-state", "FSDP", self.rt)
        restore_runtime_state(self.rt, state["runtime"])
        self.steps = state["steps"]
        self._calls.clear()

    def check(self, grad, output):
        """The wire of `grad`'s type (check_shard_buffers)."""
        return check_shard_buffers(grad, output, self.size,
                                   "the sharded hooks")


def check_shard_buffers(grad, output, size, who):
    """The wire of `grad`'s type; TypeError or ValueError for what a
    sharded reduce-scatter (`who`, for the message) cannot take."""
    for tensor, what in ((grad, "gradient"), (output, "shard")):
        if tensor.dtype not in _WIRE_OF_DTYPE or \
                tensor.device.type != "cpu" or not tensor.is_contiguous():
            raise TypeError(
                "gradcomm: the %s is %s on %s%s; %s take contiguous "
                "float32, bfloat16 or float16 CPU tensors" % (
                    what, tensor.dtype, tensor.device,
                    "" if tensor.is_contiguous() else ", not contiguous",
                    who))
    if grad.dtype != output.dtype:
        raise TypeError("gradcomm: the gradient is %s, the shard %s"
                        % (grad.dtype, output.dtype))
    if grad.numel() != output.numel() * size:
        raise ValueError(
            "gradcomm: a gradient of %d elements does not split into %d "
            "shards of %d" % (grad.numel(), size, output.numel()))
    return _WIRE_OF_DTYPE[grad.dtype]


def runtime_recipe_options(rt, options, k, wire, recipe_in_runtime):
    """The runtime's gradcomm_scalecom_options for `options` (a
    ScaleComOptions) sending k values in all as `wire`; the warm-up is the
    runtime's only when it keeps the velocity (recipe_in_runtime), else
    the caller runs it dense."""
    c = RecipeOptions()
    rt.library.gradcomm_scalecom_options_init(ctypes.byref(c), k)
    c.beta = options.beta
    c.warmup_steps = options.warmup_steps if recipe_in_runtime else 0
    c.momentum = options.momentum
    c.nesterov = int(options.nesterov)
    c.keep_velocity = int(options.keep_velocity)
    c.clip = options.clip or 0.0
    c.wire = WIRES[wire]
    return c


class DenseShardedState(ShardedState):
    """For reduce_scatter_hook: no options."""


def reduce_scatter_hook(state, grad, output):
    """The dense reduce-scatter (gradcomm_reduce_scatter_f32): `output`
    receives this rank's shard of the mean of `grad` over the ranks, with
    the bits of FSDP's own reduce-scatter at 2 ranks (it divides as FSDP
    does: part before the sum, the rest after). A 16-bit gradient's values
    travel in its 16 bits (gradcomm_reduce_scatter_wire_f32)."""
    wire = state.check(grad, output)
    name = state.name_of(grad)
    _dense_shard(state, name, grad, output, wire)


def float32_buffers(grad, output, wire):
    """What the runtime reads and writes: `grad` and `output` themselves
    (float32), or a float32 copy of a 16-bit gradient and a float32 shard
    to copy into `output` afterwards."""
    if wire == "f32":
        return grad, output
    return grad.float(), torch.zeros(output.shape)


def _dense_shard(state, name, grad, output, wire):
    before = _predivide_factor(state.size)
    after = state.size / before
    work, shard = float32_buffers(grad, output, wire)
    if before > 1:
        work.div_(before)
    state.rt.call("gradcomm_reduce_scatter_wire_f32", name, work.data_ptr(),
                  shard.data_ptr(), work.numel(), WIRES[wire],
                  REDUCTIONS["sum"])
    if after > 1:
        shard.div_(after)
    if shard is not output:
        output.copy_(shard)


class ScaleComShardedState(ShardedState):
    """ScaleCom's reduce-scatter with the training recipe of `options` (a
    ScaleComOptions; keyword arguments replace its fields, as for
    ddp.ScaleComState: ScaleComShardedState(ratio=400, momentum=0.9)):
    beta, the dense warm-up, momentum correction (the optimizer then runs
    without momentum: check_optimizer), clipping of each flat parameter's
    local gradient, and with `module` the layer policy. The defaults are
    the recipe's (docs/scalecom.md, "The recipe").

    Without `module`, one selection per flat parameter: k = ceil(length /
    ratio) over the whole of it. With `module` (the FSDP-wrapped model),
    the selection is per original tensor inside each flat parameter, as
    the DDP hook's recipe selects per parameter: a tensor of fewer than
    `min_elements` values, or one that the `dense` presets or `overrides`
    keep dense (names as in the unwrapped model), is sent whole, each
    other tensor sends ceil(numel / ratio) values (an override's ratio
    where one matches), FSDP's padding none
    (gradcomm_scalecom_reduce_scatter_segments_f32)."""

    options = FixedOptions()

    def __init__(self, options=None, module=None, prefix="fsdp",
                 process_group=None, **fields):
        options = dataclasses.replace(options or ScaleComOptions(), **fields)
        unsupported = unsupported_when_sharded(options)
        if unsupported:
            raise ValueError("gradcomm: the sharded ScaleCom hook does not "
                             "take %s" % ", ".join(unsupported))
        if module is None and (options.dense or options.overrides):
            raise ValueError("gradcomm: dense presets and overrides choose "
                             "tensors inside the flat parameters: pass "
                             "module= (the FSDP-wrapped model)")
        super().__init__(prefix, process_group)
        options = for_group(options, self.size)
        self.options = options
        self.module = module
        # Warm-up steps through the runtime's recipe (which keeps the
        # velocity) with momentum correction or clipping; else the dense
        # hook's, FSDP's own bits.
        self.recipe_in_runtime = bool(options.momentum or options.clip)
        # Flat parameter length -> its segments, as segments_of returns
        # them.
        self._segments = {}
        # (length, wire) -> the runtime's options, as recipe_options
        # makes them.
        self._options = {}
        # Flat parameter length -> the (ends, k's) of the flat parameters
        # of that length in `module`, read at the first compressed call
        # (FSDP makes its flat parameters when it wraps the model).
        self._layouts = None

    def check_optimizer(self, optimizer):
        """Raises ValueError when `optimizer` would apply momentum a second
        time (recipe.check_optimizer)."""
        check_optimizer(self.options, optimizer)

    def recipe_options(self, length, wire):
        """The runtime's gradcomm_scalecom_options for the flat parameter
        of `length` elements travelling as `wire`, made once: k is its
        segments' sum, and the warm-up the runtime's only when it keeps the
        velocity (else the dense hook ran it)."""
        key = (length, wire)
        if key not in self._options:
            self._options[key] = runtime_recipe_options(
                self.rt, self.options, self.segments_of(length)[3], wire,
                self.recipe_in_runtime)
        return self._options[key]

    def segments_of(self, length):
        """The segment ends and k's (ctypes int64 arrays), their number and
        k's sum for the flat parameter of `length` elements (the padded
        gradient the hook gets): one segment without `module`, else its
        tensors."""
        if length not in self._segments:
            ends, ks = self._layout(length)
            self._segments[length] = ((ctypes.c_int64 * len(ends))(*ends),
                                      (ctypes.c_int64 * len(ks))(*ks),
                                      len(ends), sum(ks))
        return self._segments[length]

    def _layout(self, length):
        if self.module is None:
            return (length,), (max(1, math.ceil(length /
                                                self.options.ratio)),)
        if self._layouts is None:
            self._layouts = self._read_layouts()
        layouts = self._layouts.get(length)
        if not layouts:
            raise ValueError(
                "gradcomm: no flat parameter of %d elements in the module "
                "given to ScaleComShardedState (pass the FSDP-wrapped model)"
                % length)
        if len(layouts) > 1:
            raise ValueError(
                "gradcomm: flat parameters of %d elements with different "
                "tensors inside: the hook cannot tell them apart; wrap the "
                "model so that they differ in length, or drop `module`"
                % length)
        return next(iter(layouts))

    def _read_layouts(self):
        flats, entries = _flat_parameters(self.module)
        plan = Plan(None, self.options,
                    reasons=dense_reasons(entries, self.options))
        layouts = {}
        for flat, tensors in flats:
            ends, ks, end = [], [], 0
            tensors = iter(tensors)
            for numel, padding in zip(flat._numels_with_padding,
                                      flat._is_padding_mask):
                if numel == 0:
                    continue
                end += numel
                ends.append(end)
                if padding:
                    ks.append(0)
                    continue
                selected = plan.k_and_chunk(next(tensors)[0], numel)
                ks.append(numel if selected is None else selected[0])
            # FSDP pads the gradient to a multiple of the world size.
            length = end + (-end) % self.size
            if length > end:
                ends.append(length)
                ks.append(0)
            layouts.setdefault(length, set()).add((tuple(ends), tuple(ks)))
        return layouts


def _flat_parameters(model):
    """The flat parameters of the FSDP-wrapped `model`, as [(flat
    parameter, [(name, dimensions, owning module, name in the owner) of
    each tensor in it, in order])], and all those tensors in the unwrapped
    model's module order (as recipe.dense_reasons takes them). The names
    are the unwrapped model's."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp._common_utils import clean_tensor_name
    order, names = {}, {}
    for index, (name, module) in enumerate(model.named_modules()):
        order.setdefault(id(module), index)
        names.setdefault(id(module), name)
    flats = []
    for unit in FSDP.fsdp_modules(model):
        handle = getattr(unit, "_handle", None)
        if handle is None:
            continue
        flat = handle.flat_param
        tensors = []
        for info, shape in zip(flat._param_infos, flat._shapes):
            prefix = names.get(id(info.module), "")
            tensors.append((clean_tensor_name(
                (prefix + "." if prefix else "") + info.param_name),
                len(shape), info.module, info.param_name))
        flats.append((flat, tensors))
    entries = sorted((entry for _, tensors in flats for entry in tensors),
                     key=lambda entry: order.get(id(entry[2]), 0))
    return flats, entries


def scalecom_reduce_scatter_hook(state, grad, output):
    """ScaleCom's compressed reduce-scatter
    (gradcomm_scalecom_reduce_scatter_segments_f32): the leader's top-k of
    m + g over the whole local gradient (or, with the state's `module`,
    per tensor inside it), the same indices on every rank; `output`
    receives zeros and, at the selected indices of this rank's shard, the
    mean of every rank's values; the memory is updated as in ScaleCom.
    With momentum correction, g is first the velocity (masked where it was
    sent, a tensor sent whole excepted). During the warm-up, the dense
    hook's shard (through the runtime's recipe with momentum correction or
    clipping). A 16-bit gradient's selected values travel in its 16 bits;
    its memory is float32."""
    wire = state.check(grad, output)
    name = state.name_of(grad)
    if state.steps < state.options.warmup_steps and \
            not state.recipe_in_runtime:
        state.names.add(b"dense." + name)
        _dense_shard(state, b"dense." + name, grad, output, wire)
        return
    # One segment (the whole flat parameter) is
    # gradcomm_scalecom_reduce_scatter_recipe_f32's step.
    ends, ks, count, _ = state.segments_of(grad.numel())
    options = state.recipe_options(grad.numel(), wire)
    work, shard = float32_buffers(grad, output, wire)
    state.rt.call("gradcomm_scalecom_reduce_scatter_segments_f32", name,
                  work.data_ptr(), shard.data_ptr(), work.numel(), ends, ks,
                  count, ctypes.byref(options), REDUCTIONS["average"])
    if shard is not output:
        output.copy_(shard)

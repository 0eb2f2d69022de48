"""GradComm's reduce-scatter for FSDP2 (`torch.distributed.fsdp.fully_shard`):
every FSDP module of the model gets a custom reduce-scatter
(`FSDPModule.set_custom_reduce_scatter`), dense or compressed with
ScaleCom's CLT-k and its recipe (docs/pytorch.md, "FSDP2").

    from torch.distributed.fsdp import fully_shard
    from gradcomm.torch import fsdp2
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    state = fsdp2.scalecom(model, ratio=100, momentum=0.9)  # or dense(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)  # momentum 0
    state.check_optimizer(optimizer)

FSDP2 calls a module's reduce-scatter once per backward pass with the
gradients of the parameters that module manages laid out as the world's
shards one after another (rank r's shard is the r-th equal part; each
parameter padded in its first dimension to a multiple of the world size):
the runtime's reduce-scatter takes exactly that layout. ScaleCom's error
feedback memory is one runtime state per module, named after the module
(`<prefix><module name>`), so it follows its module whatever the order
FSDP reduces in. Its selection is per parameter shard: a parameter the
recipe's layer policy compresses sends ceil(k / ranks) values of each of
its ranks' shards (k = ceil(numel / ratio)), one it keeps dense (a
tensor under min_elements, those the dense presets or overrides name)
sends all of them.

Under `MixedPrecisionPolicy(reduce_dtype=torch.bfloat16)` (or float16) the
gradients arrive in 16 bits: the runtime works on a float32 copy and the
values travel in the gradient's 16 bits; the memory stays float32.
"""

import ctypes
import dataclasses
import math

import torch
import torch.distributed as dist

from gradcomm.runtime import REDUCTIONS, WIRES, GradCommError
from gradcomm.torch.ddp import (check_saved_state, initialize_runtime,
                                restore_runtime_state, runtime_state)
from gradcomm.torch.fsdp import (check_shard_buffers, float32_buffers,
                                 runtime_recipe_options)
from gradcomm.torch.recipe import (FixedOptions, Plan, ScaleComOptions,
                                   check_optimizer, for_group,
                                   unsupported_when_sharded)

try:
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.fsdp._fully_shard._fsdp_api import ReduceScatter
except ImportError:  # torch without FSDP2 (1.13)
    FSDPModule = ReduceScatter = None

def dense(model, prefix="fsdp2/"):
    """The dense reduce-scatter on every FSDP module of `model`: FSDP2's
    own result (the mean of every rank's gradient, this rank's shard)."""
    return State(model, None, prefix)


def scalecom(model, options=None, prefix="fsdp2/", **fields):
    """ScaleCom's compressed reduce-scatter on every FSDP module of
    `model`, with the recipe of `options` (a ScaleComOptions; keyword
    arguments replace its fields: scalecom(model, ratio=400,
    momentum=0.9)): the dense warm-up, beta, momentum correction (the
    optimizer then runs without momentum: check_optimizer), clipping, and
    the layer policy (dense presets, overrides, min_elements)."""
    options = dataclasses.replace(options or ScaleComOptions(), **fields)
    unsupported = unsupported_when_sharded(options)
    if unsupported:
        raise ValueError("gradcomm: the FSDP2 reduce-scatter does not take "
                         "%s" % ", ".join(unsupported))
    return State(model, options, prefix)


class State:
    """The runtime, the options and one reduce-scatter per FSDP module
    (`comms`, by module name)."""

    options = FixedOptions()

    def __init__(self, model, options, prefix):
        if FSDPModule is None:
            raise GradCommError(-1, "gradcomm: FSDP2 (fully_shard) needs "
                                "torch >= 2.6; torch %s has none"
                                % torch.__version__)
        self.rt = initialize_runtime()
        self.size = self.rt.size()
        if self.rt.backend() != "cpu":
            raise GradCommError(-1, "gradcomm: the FSDP2 reduce-scatter "
                                "runs on the runtime's CPU backend only")
        if options is not None:
            options = for_group(options, self.size)
            self.options = options
        self.compressed = options is not None
        self.plan = Plan(model, options, ranks=self.size) \
            if self.compressed else None
        # Warm-up steps through the runtime's recipe (which keeps the
        # velocity) with momentum correction or clipping; else dense.
        self.recipe_in_runtime = self.compressed and bool(
            options.momentum or options.clip)
        names = {id(p): name for name, p in model.named_parameters()}
        self.comms = {}
        for name, module in model.named_modules():
            if not isinstance(module, FSDPModule):
                continue
            comm = _ReduceScatter(self, (prefix + (name or "root")).encode(),
                                  names)
            module.set_custom_reduce_scatter(comm)
            comm.module = module
            self.comms[name] = comm
        if not self.comms:
            raise ValueError("gradcomm: the model has no FSDP module "
                             "(call fully_shard on it first)")

    def check_optimizer(self, optimizer):
        """Raises ValueError when `optimizer` would apply momentum a second
        time (recipe.check_optimizer)."""
        if self.compressed:
            check_optimizer(self.options, optimizer)

    def state_dict(self):
        """This rank's state as a torch.save-able dict: the runtime's
        (every named memory, velocity and step counter of the process)
        and each module's step count. Save it per rank next to the
        model's and optimizer's checkpoint."""
        return {"format": "gradcomm-fsdp2-state", "rank": self.rt.rank(),
                "size": self.size, "runtime": runtime_state(self.rt),
                "steps": {name: comm.steps
                          for name, comm in self.comms.items()}}

    def load_state_dict(self, state):
        """Restores state_dict's answer on the same rank of a job of the
        same size and the same FSDP modules."""
        check_saved_state(state, "gradcomm-fsdp2-state", "FSDP2", self.rt)
        if set(state["steps"]) != set(self.comms):
            raise ValueError("gradcomm: the state's FSDP modules %s are not "
                             "this model's %s" % (sorted(state["steps"]),
                                                  sorted(self.comms)))
        restore_runtime_state(self.rt, state["runtime"])
        for name, steps in state["steps"].items():
            self.comms[name].steps = steps

    def runtime_options(self, k, wire):
        return runtime_recipe_options(self.rt, self.options, k, wire,
                                      self.recipe_in_runtime)


def _reduction(op):
    if op == dist.ReduceOp.AVG:
        return REDUCTIONS["average"]
    if op == dist.ReduceOp.SUM:
        return REDUCTIONS["sum"]
    raise ValueError("gradcomm: FSDP2 asked for the reduction %r; the "
                     "reduce-scatter takes AVG and SUM (a gradient divide "
                     "factor other than the world size is not supported)"
                     % (op,))


class _ReduceScatter(ReduceScatter or object):
    """One FSDP module's reduce-scatter (FSDP2's ReduceScatter interface)."""

    def __init__(self, state, name, parameter_names):
        self.state = state
        self.name = name
        self.parameter_names = parameter_names
        self.module = None
        self.steps = 0
        self._segments = {}  # wire -> (ends, ks, count, options)

    def allocate(self, size, *, dtype, device):
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(self, output_tensor, input_tensor, group, op,
                 async_op=False):
        state = self.state
        if group.size() != state.size or group.rank() != state.rt.rank():
            raise GradCommError(
                -1, "gradcomm: %s: the reduce-scatter group (rank %d of %d) "
                "is not the runtime's (rank %d of %d)" % (
                    self.name.decode(), group.rank(), group.size(),
                    state.rt.rank(), state.size))
        wire = check_shard_buffers(input_tensor, output_tensor, state.size,
                                   "the FSDP2 reduce-scatter")
        reduction = _reduction(op)
        step, self.steps = self.steps, self.steps + 1
        work, shard = float32_buffers(input_tensor, output_tensor, wire)
        if not state.compressed or (step < state.options.warmup_steps and
                                    not state.recipe_in_runtime):
            name = self.name if not state.compressed else b"dense." + \
                self.name
            state.rt.call("gradcomm_reduce_scatter_wire_f32", name,
                          work.data_ptr(), shard.data_ptr(), work.numel(),
                          WIRES[wire], reduction)
        else:
            ends, ks, count, options = self._layout(work.numel(), wire)
            state.rt.call("gradcomm_scalecom_reduce_scatter_segments_f32",
                          self.name, work.data_ptr(), shard.data_ptr(),
                          work.numel(), ends, ks, count,
                          ctypes.byref(options), reduction)
        if shard is not output_tensor:
            output_tensor.copy_(shard)
        return None

    def _layout(self, length, wire):
        """The segments (every parameter's piece of every rank's shard, in
        the input's order), their k's and the runtime's options."""
        if wire in self._segments:
            return self._segments[wire]
        state = self.state
        group = self.module._get_fsdp_state()._fsdp_param_group
        pieces = []
        for fsdp_param in group.fsdp_params:
            parameter = fsdp_param.sharded_param
            name = self.parameter_names.get(id(parameter), "")
            piece = fsdp_param.padded_sharded_param_size.numel()
            selected = state.plan.k_and_chunk(name, parameter.numel())
            k = piece if selected is None else max(
                1, math.ceil(selected[0] / state.size))
            pieces.append((piece, min(k, piece)))
        ends, ks, end = [], [], 0
        for _ in range(state.size):
            for piece, k in pieces:
                end += piece
                ends.append(end)
                ks.append(k)
        if end != length:
            raise GradCommError(
                -1, "gradcomm: %s: FSDP2's reduce-scatter input has %d "
                "elements, its parameters' shards %d" % (
                    self.name.decode(), length, end))
        self._segments[wire] = (
            (ctypes.c_int64 * len(ends))(*ends),
            (ctypes.c_int64 * len(ks))(*ks), len(ends),
            state.runtime_options(sum(ks), wire))
        return self._segments[wire]


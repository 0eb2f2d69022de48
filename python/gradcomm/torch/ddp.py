"""GradComm for PyTorch trainers without rewriting them: DDP communication
hooks over libgradcomm_runtime, and a gossip averager for parameters.

    state = ScaleComState(model, ratio=100)
    ddp_model.register_comm_hook(state, scalecom_hook)

Run under mpiexec.mpich: the runtime's MPI group must be the DDP process
group (same size, same rank order), which every state checks when it is
created. State (error-feedback memories, step counters) is keyed by the
parameter's name, never by bucket index, so DDP's bucket rebuild after the
first iteration neither resets nor mixes memories. See docs/pytorch.md.
"""

import os
import tempfile

import torch
import torch.distributed as dist

from gradcomm.runtime import (REDUCTIONS, SCHEDULES, SELECTIONS,
                              GradCommError, runtime)


def _parameter_names(model):
    module = getattr(model, "module", model)  # a DDP wrapper or the model
    return {id(p): name for name, p in module.named_parameters()}


def _check_tensor(tensor, what):
    if tensor.dtype != torch.float32:
        raise TypeError("gradcomm: %s is %s; GradComm communicates float32 "
                        "(no fp16/bf16 buckets)" % (what, tensor.dtype))
    if not tensor.is_contiguous():
        raise TypeError("gradcomm: %s is not contiguous" % what)
    if tensor.device.type != "cpu":
        raise TypeError("gradcomm: %s is on %s; the Python hooks pass host "
                        "buffers (CPU backend)" % (what, tensor.device))


class _State:
    """What every hook and averager shares: the runtime, the names of the
    model's parameters, a step count, and checkpoints of the runtime's
    state (the runtime's own format, with its checksum)."""

    def __init__(self, model, prefix, process_group=None):
        self.rt = runtime()
        self.rt.call("gradcomm_init")
        self.names = _parameter_names(model)
        self.prefix = prefix
        self.steps = 0
        size, rank = self.rt.size(), self.rt.rank()
        if dist.is_available() and dist.is_initialized():
            group_size = dist.get_world_size(process_group)
            group_rank = dist.get_rank(process_group)
            if (size, rank) != (group_size, group_rank):
                raise GradCommError(
                    -1, "gradcomm: the runtime's MPI group (rank %d of %d) "
                    "is not the process group (rank %d of %d): launch the "
                    "trainer with mpiexec.mpich -n %d and initialize the "
                    "process group with rank = PMI_RANK" % (
                        rank, size, group_rank, group_size, group_size))
        self.size = size

    def state_name(self, parameter):
        name = self.names.get(id(parameter))
        if name is None:
            raise GradCommError(-1, "gradcomm: a bucket holds a parameter "
                                "that is not in the model the state was "
                                "made for")
        return (self.prefix + name).encode()

    def state_dict(self):
        """This rank's runtime state (every named state of the process) and
        the hook's step, as bytes: torch.save-able."""
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "state")
            self.rt.call("gradcomm_state_save", path.encode())
            with open("%s.rank%d" % (path, self.rt.rank()), "rb") as f:
                data = f.read()
        return {"format": "gradcomm-runtime-state", "rank": self.rt.rank(),
                "size": self.size, "step": self.steps, "runtime": data}

    def load_state_dict(self, state):
        if state.get("format") != "gradcomm-runtime-state":
            raise ValueError("not a GradComm hook state")
        if (state["rank"], state["size"]) != (self.rt.rank(), self.size):
            raise ValueError("state of rank %d of %d loaded on rank %d of %d"
                             % (state["rank"], state["size"], self.rt.rank(),
                                self.size))
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "state")
            with open("%s.rank%d" % (path, self.rt.rank()), "wb") as f:
                f.write(state["runtime"])
            self.rt.call("gradcomm_state_restore", path.encode())
        self.steps = state["step"]


def _slices(bucket):
    """(parameter, its gradient as a slice of the bucket's flat buffer)."""
    buffer = bucket.buffer()
    _check_tensor(buffer, "bucket %d" % bucket.index())
    offset = 0
    for parameter in bucket.parameters():
        count = parameter.numel()
        yield parameter, buffer[offset:offset + count]
        offset += count
    if offset != buffer.numel():
        raise GradCommError(-1, "gradcomm: bucket %d holds %d values, its "
                            "parameters %d" % (bucket.index(),
                                               buffer.numel(), offset))


def _done(state, bucket):
    if bucket.is_last():
        state.steps += 1
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def _dense_average(rt, name, gradient, size):
    # As DDP's own hook: divide first, then sum (the same bits on 2 ranks).
    gradient.div_(size)
    rt.call("gradcomm_dense_all_reduce_f32", name, gradient.data_ptr(),
            gradient.numel(), REDUCTIONS["sum"])


class DenseState(_State):
    """Dense all-reduce of each bucket over the runtime (average)."""

    def __init__(self, model, prefix="", process_group=None):
        super().__init__(model, prefix, process_group)


def dense_hook(state, bucket):
    buffer = bucket.buffer()
    _check_tensor(buffer, "bucket %d" % bucket.index())
    _dense_average(state.rt, b"ddp.dense", buffer, state.size)
    return _done(state, bucket)


class ScaleComState(_State):
    """ScaleCom per parameter: CLT-k with k = ceil(numel / ratio) (or a fixed
    k), exact or chunk selection, low-pass beta; parameters with fewer than
    min_elements values, and every parameter during the first warmup_steps
    steps, are averaged densely."""

    def __init__(self, model, ratio=100.0, k=None, beta=1.0,
                 selection="exact", chunk_size=0, min_elements=1024,
                 warmup_steps=0, prefix="", process_group=None):
        if selection not in SELECTIONS:
            raise ValueError("selection must be 'exact' or 'chunk'")
        if not 0 < beta <= 1:
            raise ValueError("beta must be in (0, 1]")
        if k is None and ratio < 1:
            raise ValueError("ratio must be >= 1")
        super().__init__(model, prefix, process_group)
        self.ratio, self.fixed_k, self.beta = ratio, k, beta
        self.selection, self.chunk_size = selection, chunk_size
        self.min_elements, self.warmup_steps = min_elements, warmup_steps

    def k_and_chunk(self, count):
        if self.selection == "chunk":
            chunk = self.chunk_size or max(1, round(self.ratio))
            return -(-count // chunk), chunk
        k = self.fixed_k or -(-count // max(1, int(round(self.ratio))))
        return min(max(1, k), count), 0


def _compress_per_parameter(state, bucket, compress):
    """Runs compress(name, gradient, out, count) on each parameter's slice
    of the bucket and copies `out` back; small parameters, and all of them
    during warm-up, are averaged densely instead."""
    for parameter, gradient in _slices(bucket):
        name = state.state_name(parameter)
        count = gradient.numel()
        if state.steps < state.warmup_steps or count < state.min_elements:
            _dense_average(state.rt, name, gradient, state.size)
            continue
        out = torch.empty_like(gradient)
        compress(name, gradient, out, count)
        gradient.copy_(out)
    return _done(state, bucket)


def scalecom_hook(state, bucket):
    def compress(name, gradient, out, count):
        k, chunk = state.k_and_chunk(count)
        state.rt.call("gradcomm_scalecom_f32", name, gradient.data_ptr(),
                      out.data_ptr(), count, k, SELECTIONS[state.selection],
                      chunk, state.beta, REDUCTIONS["average"])

    return _compress_per_parameter(state, bucket, compress)


class LocalTopkState(ScaleComState):
    """The local top-k + all-gather baseline (each rank its own top-k)."""


def local_topk_hook(state, bucket):
    def compress(name, gradient, out, count):
        k, _ = state.k_and_chunk(count)
        state.rt.call("gradcomm_local_topk_all_gather_f32", name,
                      gradient.data_ptr(), out.data_ptr(), count, k,
                      REDUCTIONS["average"], None)

    return _compress_per_parameter(state, bucket, compress)


class GossipAverager(_State):
    """Gossiping SGD for a model trained without gradient all-reduce: call
    step() after optimizer.step(); every parameter becomes
    (1 - mixing) x + mixing x_peer with the schedule's peer (every
    `period`-th call)."""

    def __init__(self, model, schedule="matching", mixing=0.5, seed=0,
                 period=1, prefix="gossip/", process_group=None):
        if schedule not in SCHEDULES:
            raise ValueError("schedule must be one of %s" % sorted(SCHEDULES))
        if not 0 < mixing < 1:
            raise ValueError("mixing must be in (0, 1)")
        super().__init__(model, prefix, process_group)
        self.parameters = [p for p in getattr(model, "module", model)
                           .parameters()]
        self.schedule, self.mixing = schedule, mixing
        self.seed, self.period = seed, period

    def step(self):
        with torch.no_grad():
            for parameter in self.parameters:
                _check_tensor(parameter.data, "parameter '%s'" %
                              self.names[id(parameter)])
                self.rt.call("gradcomm_gossip_exchange_f32",
                             self.state_name(parameter),
                             parameter.data.data_ptr(), parameter.numel(),
                             SCHEDULES[self.schedule], self.mixing, self.seed,
                             self.period)
        self.steps += 1


class ElasticAverager(_State):
    """Elastic averaging SGD (EASGD) for a model trained without gradient
    all-reduce: call step() after optimizer.step(); every `period`-th call
    pulls each parameter toward its center variable by alpha (x - c) and
    moves the center by the sum of those pulls (docs/gossip.md). alpha
    defaults to moving_rate / n. asynchronous=True keeps the center on rank
    0 and never waits for the other ranks (MPI-3 one-sided; launch with
    MPI_THREAD_MULTIPLE, which the runtime asks for when it starts MPI).
    The centers are runtime state: state_dict() saves them."""

    def __init__(self, model, alpha=None, moving_rate=0.9, period=1,
                 asynchronous=False, prefix="easgd/", process_group=None):
        super().__init__(model, prefix, process_group)
        if alpha is None:
            if not 0 < moving_rate <= 1:
                raise ValueError("moving_rate must be in (0, 1]")
            alpha = moving_rate / self.size
        if not 0 < alpha * self.size <= 1 + 1e-6:
            raise ValueError("alpha must be in (0, 1/n] (n alpha is the "
                             "center's moving rate)")
        if period < 1:
            raise ValueError("period must be >= 1")
        self.parameters = [p for p in getattr(model, "module", model)
                           .parameters()]
        self.alpha, self.period = float(alpha), int(period)
        self.function = ("gradcomm_elastic_average_async_f32" if asynchronous
                         else "gradcomm_elastic_average_f32")

    def step(self):
        with torch.no_grad():
            for parameter in self.parameters:
                _check_tensor(parameter.data, "parameter '%s'" %
                              self.names[id(parameter)])
                self.rt.call(self.function, self.state_name(parameter),
                             parameter.data.data_ptr(), parameter.numel(),
                             self.alpha, self.period)
        self.steps += 1

    def center(self, parameter):
        """The center of `parameter` as this rank sees it (a new tensor)."""
        out = torch.empty_like(parameter.data)
        self.rt.call("gradcomm_state_read", self.state_name(parameter),
                     out.data_ptr(), out.numel())
        return out

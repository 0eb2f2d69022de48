"""GradComm for PyTorch trainers without rewriting them: DDP communication
hooks over libgradcomm_runtime, and a gossip averager for parameters.

    state = ScaleComState(model, ratio=100)
    ddp_model.register_comm_hook(state, scalecom_hook)

Launch with torchrun (the runtime's MPI then starts through the process
group's store) or with mpiexec.mpich: the runtime's MPI group must be the
DDP process group (same size, same rank order), which every state checks
when it is created. State (error-feedback memories, step counters) is
keyed by the parameter's name, never by bucket index, so DDP's bucket
rebuild after the first iteration neither resets nor mixes memories. See
docs/pytorch.md.
"""

import atexit
import collections
import ctypes
import dataclasses
import functools
import os
import queue
import tempfile
import threading
import time

import torch
import torch.distributed as dist

from gradcomm.runtime import (ASYNC_SCHEDULES, REDUCTIONS, SCHEDULES,
                              SELECTIONS, WARMUPS, WIRES,
                              GradCommError, RecipeOptions, runtime)
from gradcomm.torch.recipe import (FixedOptions, Plan, ScaleComOptions,
                                   check_optimizer, dense_in_runtime,
                                   for_group)


def _parameter_names(model):
    module = getattr(model, "module", model)  # a DDP wrapper or the model
    return {id(p): name for name, p in module.named_parameters()}


# A bucket's type and the wire its values travel in by default.
_WIRE_OF_DTYPE = {torch.float32: "f32", torch.bfloat16: "bf16",
                  torch.float16: "f16"}


def _check_tensor(tensor, what, backend="cpu", sixteen_bits=False):
    """Raises TypeError unless `tensor` is float32 (or, with
    `sixteen_bits`, bfloat16 or float16), contiguous and on the runtime's
    backend."""
    if tensor.dtype not in _WIRE_OF_DTYPE or (
            tensor.dtype != torch.float32 and not sixteen_bits):
        raise TypeError("gradcomm: %s is %s; GradComm takes float32, "
                        "bfloat16 and float16 tensors" % (what, tensor.dtype))
    if not tensor.is_contiguous():
        raise TypeError("gradcomm: %s is not contiguous" % what)
    if tensor.device.type != backend:
        hint = ("call gradcomm.torch.ddp.use_cuda() before making the state"
                if tensor.device.type == "cuda" else
                "the runtime runs the CUDA backend: pass CUDA tensors")
        raise TypeError("gradcomm: %s is on %s but the runtime's backend is "
                        "%s; %s" % (what, tensor.device, backend, hint))


# What mpiexec (MPICH's Hydra, or Open MPI's launcher) puts in a rank's
# environment: MPI then starts by itself.
_MPI_LAUNCH_VARIABLES = ("PMI_FD", "PMI_PORT", "PMI_RANK",
                         "OMPI_COMM_WORLD_RANK")


_runtime_initialized = False


def initialize_runtime():
    """The process's runtime, initialized once for this job: under mpiexec
    on MPI_COMM_WORLD as MPI starts it; under any other launcher (torchrun,
    a test harness) with a torch.distributed process group initialized, MPI
    comes up for the same ranks through the group's store
    (gradcomm_init_with_rendezvous): MPI's start-up exchange goes through
    the store, its traffic does not. Every state calls this; call it
    yourself only to use the runtime before making one."""
    global _runtime_initialized
    rt = runtime()
    if _runtime_initialized:
        return rt
    launched_by_mpi = any(name in os.environ
                          for name in _MPI_LAUNCH_VARIABLES)
    if (not launched_by_mpi and dist.is_available() and dist.is_initialized()
            and dist.get_world_size() > 1):
        store = dist.distributed_c10d._get_default_store()
        rt.init_with_rendezvous(dist.get_rank(), dist.get_world_size(),
                                store.set, store.get)
    else:
        rt.call("gradcomm_init")
    _runtime_initialized = True
    return rt


# CUDA's cudaStreamLegacy and cudaStreamPerThread (driver_types.h).
_CUDA_STREAM_LEGACY = 0x1
_CUDA_STREAM_PER_THREAD = 0x2


def use_cuda(stream=None):
    """Runs the runtime on the CUDA backend (NCCL) with PyTorch's stream:
    the hooks then take CUDA buckets and enqueue their work on `stream`
    (default: torch.cuda.current_stream()), so what PyTorch enqueues after
    the hook's future completes is ordered after the communication. Call
    once, on every rank, before making a state; CPU buckets are refused
    afterwards. Checked against the CPU hooks on a GPU by
    test/Python/ddp_cuda.py (docs/pytorch.md)."""
    if not torch.cuda.is_available():
        raise GradCommError(-1, "gradcomm: use_cuda: this PyTorch has no "
                            "CUDA device (torch.cuda.is_available() is "
                            "False)")
    stream = stream or torch.cuda.current_stream()
    handle = stream.cuda_stream
    if handle == _CUDA_STREAM_PER_THREAD:
        raise GradCommError(-1, "gradcomm: use_cuda: the stream is CUDA's "
                            "per-thread default stream, which differs on the "
                            "hooks' communication thread; pass a stream made "
                            "with torch.cuda.Stream()")
    if handle == 0:
        # PyTorch's default stream is CUDA's legacy default stream, handle
        # NULL, which the runtime takes for "no stream given" and answers
        # with a stream of its own, unordered with the trainer's work (its
        # hooks then read buckets not yet written: the first run on a GPU
        # found non-finite gradients that way). cudaStreamLegacy names it.
        handle = _CUDA_STREAM_LEGACY
    rt = initialize_runtime()
    rt.call("gradcomm_cuda_use_handles", None, handle)
    rt.call("gradcomm_set_backend", 1)


# Where the hooks' time goes, in seconds since the process started (or the
# last reset): communication_profile() reads it.
_profile = collections.Counter()


def communication_profile(reset=False):
    """Seconds the hooks spent, by part, on this rank: "hook" (the hooks'
    own Python on the autograd thread: slicing buckets, plans, submitting),
    "start" (the communication thread in the runtime's started calls: the
    agreement, selection, memory update, narrowing to the wire, posting
    the transfers), "wait" (waiting for transfers on the wire, then
    widening and scattering), "run" (blocking calls), "idle" (waiting for
    the next bucket), and "jobs" (buckets). Cheap enough to be always on
    (two clock reads per part)."""
    profile = dict(_profile)
    if reset:
        _profile.clear()
    return profile


class _timed:
    """Adds the wall time of a `with` block to _profile[part]."""

    def __init__(self, part):
        self.part = part

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        _profile[self.part] += time.perf_counter() - self.start


def _timed_hook(hook):
    """`hook` with its own time (on the autograd thread) in the profile."""
    @functools.wraps(hook)
    def timed(state, bucket):
        with _timed("hook"):
            return hook(state, bucket)
    return timed


class _Job:
    """One bucket's communication: `run()` (blocking runtime calls), or
    `start()` (started runtime calls) returning the function that waits for
    them, which the communication thread calls later; `future` completes
    with `result` or the failure."""

    def __init__(self, future, result, run=None, start=None):
        self.future, self.result = future, result
        self.run, self.start = run, start
        self.wait = None


class _CommunicationThread:
    """The hooks' runtime calls, on one thread per process, in the order
    the hooks were called. DDP calls the hooks of a step in bucket order on
    every rank, so every rank issues its collectives in the same order,
    while the autograd thread goes on computing the next buckets' gradients
    (overlap). Started jobs (dense, ScaleCom, local top-k) stay in flight
    until the queue is empty or a blocking job comes, so neighbouring
    buckets overlap each other too: the next bucket's selection runs while
    this one's values are reduced. The runtime is entered from this thread
    only while jobs are queued or in flight; synchronize() waits for
    that."""

    def __init__(self):
        self.queue = queue.Queue()
        self.rt = runtime()
        self.thread = threading.Thread(target=self._loop, daemon=True,
                                       name="gradcomm-communication")
        self.thread.start()
        # Before the runtime's own atexit finalize (atexit runs last
        # registered first): nothing may be in flight when MPI finalizes.
        atexit.register(self.synchronize)

    def submit(self, job):
        """The future DDP waits for. A failure reaches DDP through a
        callback that raises it: PyTorch 1.13's DDP would otherwise try to
        cast the exception object to a tensor and say only that."""
        self.queue.put(job)
        return job.future.then(lambda done: done.value())

    def synchronize(self):
        """Returns when every submitted job has finished."""
        if self.thread.is_alive():
            self.submit(_Job(torch.futures.Future(), None,
                             run=lambda: None)).wait()

    def _complete(self, job, body):
        try:
            body()
        except BaseException as error:  # the future carries it to DDP
            job.future.set_exception(error)
            return
        job.future.set_result(job.result)

    def _wait(self, job):
        with _timed("wait"):
            self._complete(job, job.wait)

    def _loop(self):
        in_flight = collections.deque()
        while True:
            if in_flight and self.queue.empty():
                self._wait(in_flight.popleft())
                continue
            with _timed("idle"):
                job = self.queue.get()
            _profile["jobs"] += 1
            if job.start is None:
                while in_flight:
                    self._wait(in_flight.popleft())
                with _timed("run"):
                    self._complete(job, job.run)
                continue
            try:
                with _timed("start"):
                    job.wait = job.start()
            except BaseException as error:
                job.future.set_exception(error)
                continue
            in_flight.append(job)


_communication = None


def _communication_thread():
    global _communication
    if _communication is None:
        _communication = _CommunicationThread()
    return _communication


class _State:
    """What every hook and averager shares: the runtime, the names of the
    model's parameters, a step count, and checkpoints of the runtime's
    state (the runtime's own format, with its checksum)."""

    def __init__(self, model, prefix, process_group=None, overlap=True):
        self.rt = initialize_runtime()
        self.backend = self.rt.backend()
        self.overlap = overlap
        self.names = _parameter_names(model)
        # For checkpoints: the type each parameter trains in.
        self.model_parameters = list(getattr(model, "module", model)
                                     .named_parameters())
        self.prefix = prefix
        self.steps = 0
        # Bucket index -> the float32 tensor its results go to
        # (result_bucket).
        self.result_buckets = {}
        # The wire values travel in; None: the bucket's type.
        self.wire = None
        size, rank = self.rt.size(), self.rt.rank()
        if dist.is_available() and dist.is_initialized():
            group_size = dist.get_world_size(process_group)
            group_rank = dist.get_rank(process_group)
            if (size, rank) != (group_size, group_rank):
                raise GradCommError(
                    -1, "gradcomm: the runtime's MPI group (rank %d of %d) "
                    "is not the process group (rank %d of %d): launch with "
                    "torchrun, or with mpiexec.mpich -n %d and the process "
                    "group's rank = PMI_RANK" % (
                        rank, size, group_rank, group_size, group_size))
        self.size = size

    def synchronize(self):
        """Waits for every bucket's communication the hooks started."""
        if _communication is not None:
            _communication.synchronize()

    def submit(self, bucket, run, start=None, result=None):
        """The hook's future: `run()` on the communication thread (overlap)
        or now, completed with `result` (default the bucket's buffer); with
        overlap, `start()` (started runtime calls; returns the function
        that waits for them) is used instead when given. The step it
        belongs to is counted here, when the hook is called, not when it
        runs."""
        if bucket.is_last():
            self.steps += 1
        result = bucket.buffer() if result is None else result
        if self.overlap:
            return _communication_thread().submit(_Job(
                torch.futures.Future(), result,
                run=None if start else run, start=start))
        run()
        future = torch.futures.Future()
        future.set_result(result)
        return future

    def result_bucket(self, bucket, like):
        """A float32 tensor shaped as `like` (the bucket's float32
        buffer), kept per bucket index across steps, for the hook to write
        its results into and hand to DDP as the future's value: DDP copies
        that value into the gradients in any case, so the hook copies
        nothing back itself. Made anew when DDP rebuilds its buckets (the
        size changes) and never in use across steps: DDP has copied a
        step's result out before the next step's hook runs."""
        kept = self.result_buckets.get(bucket.index())
        if (kept is None or kept.numel() != like.numel()
                or kept.device != like.device):
            kept = self.result_buckets[bucket.index()] = torch.empty_like(
                like, dtype=torch.float32)
        return kept

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
        self.synchronize()
        return {"format": "gradcomm-runtime-state", "rank": self.rt.rank(),
                "size": self.size, "step": self.steps,
                "runtime": runtime_state(self.rt), "dtypes": self._dtypes()}

    def _dtypes(self):
        return {name: str(p.dtype).replace("torch.", "")
                for name, p in self.model_parameters}

    def load_state_dict(self, state):
        check_saved_state(state, "gradcomm-runtime-state", "hook", self.rt)
        self.synchronize()
        # The memories are float32 whatever the model's type, but a state
        # saved for a bf16 model and restored into a float32 one (or back)
        # is a change of recipe, not a resume: refused, with the parameter.
        saved, now = state.get("dtypes"), self._dtypes()
        for name, dtype in sorted((saved or {}).items()):
            if name in now and now[name] != dtype:
                raise ValueError(
                    "state saved for parameter '%s' in %s, restored into a "
                    "model where it is %s: convert the model back to %s, or "
                    "start a fresh state" % (name, dtype, now[name], dtype))
        restore_runtime_state(self.rt, state["runtime"])
        self.steps = state["step"]


def runtime_state(rt):
    """Every named state of this process's runtime (memories, velocities,
    step counters), in the runtime's checksummed format, as bytes."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "state")
        rt.call("gradcomm_state_save", path.encode())
        with open("%s.rank%d" % (path, rt.rank()), "rb") as f:
            return f.read()


def check_saved_state(state, format_name, what, rt):
    """Raises ValueError unless `state` is a state_dict of `format_name`
    saved on this rank of a group of this size (`what` names the kind of
    state in the message)."""
    if not isinstance(state, dict) or state.get("format") != format_name:
        raise ValueError("gradcomm: not a GradComm %s state" % what)
    if (state["rank"], state["size"]) != (rt.rank(), rt.size()):
        raise ValueError("gradcomm: %s state of rank %d of %d loaded on rank "
                         "%d of %d" % (what, state["rank"], state["size"],
                                       rt.rank(), rt.size()))


def restore_runtime_state(rt, data):
    """Restores runtime_state's bytes (the runtime checks the checksum,
    the rank and the group size)."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "state")
        with open("%s.rank%d" % (path, rt.rank()), "wb") as f:
            f.write(data)
        rt.call("gradcomm_state_restore", path.encode())


def _bucket_buffer(state, bucket):
    """The bucket's flat buffer, checked, the wire its values travel in
    (the state's, else the buffer's type), and the float32 buffer the
    runtime works on: the bucket's own, or a float32 copy of a 16-bit one
    (copied back by the hook)."""
    buffer = bucket.buffer()
    _check_tensor(buffer, "bucket %d" % bucket.index(), state.backend,
                  sixteen_bits=True)
    wire = state.wire or _WIRE_OF_DTYPE[buffer.dtype]
    return buffer, wire, buffer.float()  # .float() of float32 is itself


def _slices(state, bucket, buffer):
    """[(parameter, its gradient as a slice of the flat `buffer`)],
    checked before anything is submitted."""
    slices, offset = [], 0
    for parameter in bucket.parameters():
        count = parameter.numel()
        slices.append((parameter, buffer[offset:offset + count]))
        offset += count
    if offset != buffer.numel():
        raise GradCommError(-1, "gradcomm: bucket %d holds %d values, its "
                            "parameters %d" % (bucket.index(),
                                               buffer.numel(), offset))
    return slices


def _dense_average(rt, name, gradient, size, wire="f32"):
    # As DDP's own hook: divide first, then sum (the same bits on 2 ranks).
    gradient.div_(size)
    if wire == "f32":
        rt.call("gradcomm_dense_all_reduce_f32", name, gradient.data_ptr(),
                gradient.numel(), REDUCTIONS["sum"])
    else:
        rt.call("gradcomm_dense_all_reduce_wire_f32", name,
                gradient.data_ptr(), gradient.numel(), WIRES[wire],
                REDUCTIONS["sum"])


def _start_dense_average(rt, name, gradient, size, wire="f32"):
    """_dense_average started: returns the runtime's request."""
    gradient.div_(size)
    request = ctypes.c_void_p()
    if wire == "f32":
        rt.call("gradcomm_dense_all_reduce_start_f32", name,
                gradient.data_ptr(), gradient.numel(), REDUCTIONS["sum"],
                ctypes.byref(request))
    else:
        rt.call("gradcomm_dense_all_reduce_wire_start_f32", name,
                gradient.data_ptr(), gradient.numel(), WIRES[wire],
                REDUCTIONS["sum"], ctypes.byref(request))
    return request


def _narrowing(wait, work, buffer):
    """`wait`, then the float32 working copy back into a 16-bit bucket."""
    if work is buffer:
        return wait

    def wait_and_narrow():
        wait()
        buffer.copy_(work)
    return wait_and_narrow


def _waiter(rt, started):
    """The function that waits for `started` [(request, [(destination,
    source), ...])] in order and, after each request, copies each source
    into its destination; every request is waited for even after a
    failure, which it raises at the end."""
    def wait():
        failure = None
        for request, copies in started:
            try:
                rt.call("gradcomm_wait", ctypes.byref(request))
            except BaseException as error:
                failure = failure or error
                continue
            for destination, source in copies:
                destination.copy_(source)
        if failure is not None:
            raise failure
    return wait


class DenseState(_State):
    """Dense all-reduce of each bucket over the runtime (average). `wire`:
    the type values travel in ("f32", "bf16", "f16"; default the bucket's
    own)."""

    def __init__(self, model, prefix="", process_group=None, overlap=True,
                 wire=None):
        if wire not in (None,) + tuple(WIRES):
            raise ValueError("wire must be one of %s or None, got %r" % (
                sorted(WIRES), wire))
        super().__init__(model, prefix, process_group, overlap)
        self.wire = wire


@_timed_hook
def dense_hook(state, bucket):
    # A 16-bit bucket is averaged as a float32 copy (`work`), narrowed back
    # at the end; its values travel in `wire`.
    buffer, wire, work = _bucket_buffer(state, bucket)

    def start():
        # The runtime's started form: the all-reduce stays in flight while
        # the communication thread starts the next buckets.
        return _narrowing(_waiter(state.rt, [(_start_dense_average(
            state.rt, b"ddp.dense", work, state.size, wire), [])]),
            work, buffer)

    def run():
        _dense_average(state.rt, b"ddp.dense", work, state.size, wire)
        if work is not buffer:
            buffer.copy_(work)

    # Started on the CPU backend only: on CUDA the runtime's started form
    # runs in its own stream's order, which PyTorch's stream does not follow.
    return state.submit(bucket, run,
                        start=start if state.backend == "cpu" else None)


def recipe_options(rt, options, k, chunk, wire):
    """The runtime's gradcomm_scalecom_options for `options` (a
    ScaleComOptions) on a tensor sending k values (None: a tensor the layer
    policy keeps dense) with chunk selection's `chunk` (None: exact) on
    `wire`."""
    c = RecipeOptions()
    rt.library.gradcomm_scalecom_options_init(ctypes.byref(c), k or 1)
    c.selection = SELECTIONS[options.selection]
    c.chunk_size = chunk or 0
    c.beta = options.beta
    c.warmup_steps = options.warmup_steps
    c.warmup = WARMUPS[options.warmup]
    c.warmup_start_ratio = options.warmup_start_ratio
    c.momentum = options.momentum
    c.nesterov = int(options.nesterov)
    c.keep_velocity = int(options.keep_velocity)
    c.clip = options.clip or 0.0
    c.dense = int(k is None)
    c.wire = WIRES[wire]
    return c


class ScaleComState(_State):
    """ScaleCom per parameter, with the recipe of `options` (a
    ScaleComOptions; keyword arguments replace its fields:
    ScaleComState(net, ratio=400, momentum=0.9)). See
    gradcomm.torch.recipe and docs/pytorch.md."""

    options = FixedOptions()

    def __init__(self, model, options=None, prefix="", process_group=None,
                 overlap=True, **fields):
        options = dataclasses.replace(options or ScaleComOptions(), **fields)
        super().__init__(model, prefix, process_group, overlap)
        options = for_group(options, self.size)
        self.options = options
        self.wire = options.wire
        self.plan = Plan(model, options, ranks=self.size)
        # The runtime's name (counters, agreement) of each bucket's small
        # dense tensors, averaged together.
        self.packed_name = (prefix + "ddp.small").encode()
        # (k, chunk, wire) -> the runtime's options, as recipe_options
        # makes them.
        self._recipe_options = {}
        # Warm-up, momentum correction and clipping run in the runtime
        # (gradcomm_scalecom_recipe_f32, on either backend); without them
        # the plain ScaleCom entry points serve.
        self.recipe_in_runtime = bool(
            options.warmup_steps or options.momentum or options.clip)

    def recipe_options(self, k, chunk, wire):
        """The runtime's gradcomm_scalecom_options for a tensor sending k
        values (None: a tensor the layer policy keeps dense) with chunk
        selection's `chunk` (None: exact) on `wire`, made once per
        combination."""
        key = (k, chunk, wire)
        if key not in self._recipe_options:
            self._recipe_options[key] = recipe_options(
                self.rt, self.options, k, chunk, wire)
        return self._recipe_options[key]

    def check_optimizer(self, optimizer):
        """Raises ValueError when `optimizer` would apply momentum a second
        time (recipe.check_optimizer)."""
        check_optimizer(self.options, optimizer)


# Tensors below this many values that a compressing hook averages itself
# are averaged together, one call per bucket (_compress_per_parameter).
_PACK_BELOW = 65536


def _compress_per_parameter(state, bucket, buffers, compress,
                            start_compress=None):
    """Runs compress(name, gradient, out, k, chunk) on each parameter's
    slice of the bucket and copies `out` back. A parameter the layer policy
    keeps dense is averaged here, unless momentum correction or clipping
    applies to it (then compress gets k = chunk = None: the runtime's dense
    recipe step). With `start_compress` (the same, started: returns the
    runtime's request), the bucket's calls are started one after the other
    and waited for later (CPU backend). `buffers`: _bucket_buffer's (a
    16-bit bucket is worked on as a float32 copy; `wire` is what the dense
    parameters' values travel in)."""
    buffer, wire, work = buffers
    jobs = []
    for parameter, gradient in _slices(state, bucket, work):
        plan = state.plan.k_and_chunk(state.names[id(parameter)],
                                      gradient.numel())
        jobs.append((state.state_name(parameter), gradient, plan))
    in_runtime = dense_in_runtime(state.options)

    def averaged_here(plan):
        return plan is None and not in_runtime

    # Where the results go: the runtime writes a parameter's result into a
    # tensor other than its gradient. Copying every result back into the
    # bucket cost a pass over the bucket per step (the ResNet-18 step's
    # largest cost after the selection itself); instead the compressed
    # parameters write straight into a bucket kept for the purpose
    # (result_bucket) that becomes the hook's value, and only the
    # parameters averaged here, in place, are copied there. Where those
    # are most of the bucket (policy="auto" keeping large tensors dense),
    # the compressed results are copied into the bucket instead: the
    # fewer values copied either way.
    averaged = sum(g.numel() for _, g, plan in jobs if averaged_here(plan))
    result = (state.result_bucket(bucket, work)
              if 2 * averaged < work.numel() else work)
    # A float32 bucket hands DDP the results where they are; a 16-bit one
    # gets them narrowed into its own buffer.
    narrowed = buffer.dtype != torch.float32
    offsets, offset = [], 0
    for _, gradient, _ in jobs:
        offsets.append(offset)
        offset += gradient.numel()

    def result_slice(index):
        begin = offsets[index]
        return result[begin:begin + jobs[index][1].numel()]

    def output(index, gradient):
        """(where the runtime writes, [(destination, source)] to copy after
        the wait)."""
        if result is work:
            out = torch.empty_like(gradient)
            return out, [(gradient, out)]
        return result_slice(index), []

    def average_copies(index, gradient):
        return [] if result is work else [(result_slice(index), gradient)]

    # The small tensors averaged here travel together: one all-reduce of
    # their concatenation per bucket instead of one call (and one agreement
    # across ranks, a round trip each) per tensor; the language model's 54
    # biases and norms made 54 calls per step. Averaged in the same order
    # and with the same division first, so the same bits on two ranks.
    small = [index for index, (_, gradient, plan) in enumerate(jobs)
             if averaged_here(plan) and gradient.numel() < _PACK_BELOW]
    packed = set(small) if len(small) > 1 else set()

    def unpack(staging):
        """[(where each packed tensor's average goes, its part of
        `staging`)]."""
        copies, begin = [], 0
        for index in small:
            gradient = jobs[index][1]
            destination = gradient if result is work else result_slice(index)
            copies.append((destination,
                           staging[begin:begin + gradient.numel()]))
            begin += gradient.numel()
        return copies

    def pack():
        return torch.cat([jobs[index][1] for index in small])

    def run():
        if packed:
            staging = pack()
            _dense_average(state.rt, state.packed_name, staging, state.size,
                           wire)
            for destination, source in unpack(staging):
                destination.copy_(source)
        for index, (name, gradient, plan) in enumerate(jobs):
            if index in packed:
                continue
            if averaged_here(plan):
                _dense_average(state.rt, name, gradient, state.size, wire)
                copies = average_copies(index, gradient)
            else:
                out, copies = output(index, gradient)
                compress(name, gradient, out, *(plan or (None, None)))
            for destination, source in copies:
                destination.copy_(source)
        if narrowed:
            buffer.copy_(result)

    def start():
        started = []
        try:
            if packed:
                staging = pack()
                started.append((_start_dense_average(
                    state.rt, state.packed_name, staging, state.size, wire),
                    unpack(staging)))
            for index, (name, gradient, plan) in enumerate(jobs):
                if index in packed:
                    continue
                if averaged_here(plan):
                    request = _start_dense_average(state.rt, name, gradient,
                                                   state.size, wire)
                    copies = average_copies(index, gradient)
                else:
                    out, copies = output(index, gradient)
                    request = start_compress(name, gradient, out,
                                             *(plan or (None, None)))
                started.append((request, copies))
        except BaseException:
            _waiter(state.rt, started)()  # what was started still ends
            raise
        wait = _waiter(state.rt, started)
        return _narrowing(wait, result, buffer) if narrowed else wait

    use_start = start_compress is not None and state.backend == "cpu"
    return state.submit(bucket, run, start=start if use_start else None,
                        result=buffer if narrowed else result)


@_timed_hook
def scalecom_hook(state, bucket):
    options = state.options
    buffers = _bucket_buffer(state, bucket)
    wire = buffers[1]
    if state.recipe_in_runtime or wire != "f32":
        # Warm-up, momentum correction or clipping: the runtime's recipe
        # entry, which keeps the velocity with the memory (checkpointed).
        def compress(name, gradient, out, k, chunk):
            state.rt.call("gradcomm_scalecom_recipe_f32", name,
                          gradient.data_ptr(), out.data_ptr(),
                          gradient.numel(),
                          ctypes.byref(state.recipe_options(k, chunk, wire)),
                          REDUCTIONS["average"])

        def start_compress(name, gradient, out, k, chunk):
            request = ctypes.c_void_p()
            state.rt.call("gradcomm_scalecom_recipe_start_f32", name,
                          gradient.data_ptr(), out.data_ptr(),
                          gradient.numel(),
                          ctypes.byref(state.recipe_options(k, chunk, wire)),
                          REDUCTIONS["average"], ctypes.byref(request))
            return request

        return _compress_per_parameter(state, bucket, buffers, compress,
                                       start_compress)

    def arguments(name, gradient, out, k, chunk):
        return (name, gradient.data_ptr(), out.data_ptr(), gradient.numel(),
                k, SELECTIONS[options.selection], chunk, options.beta,
                REDUCTIONS["average"])

    def compress(name, gradient, out, k, chunk):
        state.rt.call("gradcomm_scalecom_f32",
                      *arguments(name, gradient, out, k, chunk))

    def start_compress(name, gradient, out, k, chunk):
        request = ctypes.c_void_p()
        state.rt.call("gradcomm_scalecom_start_f32",
                      *arguments(name, gradient, out, k, chunk),
                      ctypes.byref(request))
        return request

    return _compress_per_parameter(state, bucket, buffers, compress,
                                   start_compress)


class LocalTopkState(ScaleComState):
    """The local top-k + all-gather baseline (each rank its own top-k);
    options as ScaleComState's, where momentum correction, beta and
    selection do not apply (refused)."""

    def __init__(self, model, options=None, **fields):
        options = options or local_topk_defaults()
        # Refused before the state is made (policy="auto" would run the
        # cost model): the options as ScaleComState will make them.
        names = {f.name for f in dataclasses.fields(ScaleComOptions)}
        check_local_topk(dataclasses.replace(
            options, **{k: v for k, v in fields.items() if k in names}))
        super().__init__(model, options, **fields)


def local_topk_defaults():
    """Local top-k's options when none are given: ScaleCom's beta and
    warm-up defaults do not apply to it."""
    return ScaleComOptions(beta=1.0, warmup_steps=0)


def check_local_topk(options):
    """Raises ValueError for the options that are ScaleCom's alone."""
    if options.policy != "fixed":
        raise ValueError("local_topk_hook: policy='auto' chooses "
                         "ScaleCom's ratios; local top-k takes a fixed "
                         "ratio")
    if (options.momentum or options.beta != 1 or options.selection != "exact"
            or options.clip or options.warmup_steps):
        raise ValueError("local_topk_hook: momentum correction, beta, "
                         "chunk selection, clipping and warm-up are "
                         "ScaleCom's options")


@_timed_hook
def local_topk_hook(state, bucket):
    """Each rank's k values travel in the wire (the bucket's type, or
    `wire`), as the dense parameters' do; indices as int64."""
    buffers = _bucket_buffer(state, bucket)
    wire = buffers[1]

    def compress(name, gradient, out, k, chunk):
        if wire == "f32":
            state.rt.call("gradcomm_local_topk_all_gather_f32", name,
                          gradient.data_ptr(), out.data_ptr(),
                          gradient.numel(), k, REDUCTIONS["average"], None)
        else:
            state.rt.call("gradcomm_local_topk_all_gather_wire_f32", name,
                          gradient.data_ptr(), out.data_ptr(),
                          gradient.numel(), k, WIRES[wire],
                          REDUCTIONS["average"], None)

    def start_compress(name, gradient, out, k, chunk):
        request = ctypes.c_void_p()
        if wire == "f32":
            state.rt.call("gradcomm_local_topk_all_gather_start_f32", name,
                          gradient.data_ptr(), out.data_ptr(),
                          gradient.numel(), k, REDUCTIONS["average"],
                          ctypes.byref(request))
        else:
            state.rt.call("gradcomm_local_topk_all_gather_wire_start_f32",
                          name, gradient.data_ptr(), out.data_ptr(),
                          gradient.numel(), k, WIRES[wire],
                          REDUCTIONS["average"], ctypes.byref(request))
        return request

    return _compress_per_parameter(state, bucket, buffers, compress,
                                   start_compress)


class GossipAverager(_State):
    """Gossiping SGD for a model trained without gradient all-reduce: call
    step() after optimizer.step(); every parameter becomes
    (1 - mixing) x + mixing x_peer with the schedule's peer (every
    `period`-th call). asynchronous=True is the paper's asynchronous form
    (gradcomm_gossip_async_f32): each call puts this replica into the
    peer's mailbox and mixes in the last copy that arrived in its own,
    never waiting for another rank (MPI-3 one-sided, CPU backend; schedule
    "random" is the paper's peer choice, and its default there)."""

    def __init__(self, model, schedule=None, mixing=0.5, seed=0,
                 period=1, asynchronous=False, prefix="gossip/",
                 process_group=None):
        schedules = ASYNC_SCHEDULES if asynchronous else SCHEDULES
        schedule = schedule or ("random" if asynchronous else "matching")
        if schedule not in schedules:
            raise ValueError("schedule must be one of %s%s" % (
                sorted(schedules), "" if asynchronous else
                " ('random' is for asynchronous=True)"))
        if not 0 < mixing < 1:
            raise ValueError("mixing must be in (0, 1)")
        if period < 1:
            raise ValueError("period must be >= 1")
        super().__init__(model, prefix, process_group)
        if asynchronous and self.backend != "cpu":
            raise GradCommError(
                -1, "gradcomm: GossipAverager: asynchronous gossip runs on "
                "the runtime's CPU backend only (MPI one-sided windows); "
                "this runtime runs %s" % self.backend)
        self.parameters = [p for p in getattr(model, "module", model)
                           .parameters()]
        self.schedule, self.mixing = schedule, mixing
        self.seed, self.period = seed, period
        self.asynchronous = asynchronous
        self.replicas = {}  # float32 copies of 16-bit parameters

    def step(self):
        self.synchronize()  # no hook's communication may still run
        with torch.no_grad():
            arguments = []
            for parameter in self.parameters:
                work, wire = _float32_replica(self, parameter)
                arguments.append(((
                    self.state_name(parameter), work.data_ptr(),
                    parameter.numel(), ASYNC_SCHEDULES[self.schedule],
                    self.mixing, self.seed, self.period), wire, parameter,
                    work))
            if self.asynchronous:
                # The one-sided mailboxes hold float32 replicas.
                for call, _, parameter, work in arguments:
                    self.rt.call("gradcomm_gossip_async_f32", *call)
                    _narrow_back(parameter, work)
            elif self.backend != "cpu":
                for call, _, _, _ in arguments:
                    self.rt.call("gradcomm_gossip_exchange_f32", *call)
            else:
                # Every parameter's exchange in flight at once: one
                # latency per step, not one per parameter.
                started = []
                try:
                    for call, wire, parameter, work in arguments:
                        request = ctypes.c_void_p()
                        self.rt.call("gradcomm_gossip_exchange_wire_start_f32",
                                     *call, WIRES[wire],
                                     ctypes.byref(request))
                        started.append((request, [] if work is
                                        parameter.data else
                                        [(parameter.data, work)]))
                finally:
                    _waiter(self.rt, started)()
        self.steps += 1


def _float32_replica(averager, parameter):
    """(the float32 tensor the runtime averages, the wire its values travel
    in): a float32 parameter itself on its own wire; a bfloat16 or float16
    one as a float32 copy (kept per parameter) on the wire of its type,
    which carries its values exactly and costs half the bytes."""
    data = parameter.data
    _check_tensor(data, "parameter '%s'" % averager.names[id(parameter)],
                  averager.backend, sixteen_bits=True)
    if data.dtype == torch.float32:
        return data, "f32"
    work = averager.replicas.get(id(parameter))
    if work is None:  # where the parameter is: the runtime's backend
        work = averager.replicas[id(parameter)] = torch.empty(
            data.shape, dtype=torch.float32, device=data.device)
    work.copy_(data)
    return work, _WIRE_OF_DTYPE[data.dtype]


def _narrow_back(parameter, work):
    """The averaged float32 copy back into a 16-bit parameter (nearest
    even)."""
    if work is not parameter.data:
        parameter.data.copy_(work)


class ElasticAverager(_State):
    """Elastic averaging SGD (EASGD) for a model trained without gradient
    all-reduce: call step() after optimizer.step(); every `period`-th call
    pulls each parameter toward its center variable by alpha (x - c) and
    moves the center by the sum of those pulls (docs/gossip.md). alpha
    defaults to moving_rate / n. asynchronous=True keeps the center on rank
    0 and never waits for the other ranks (MPI-3 one-sided; launch with
    MPI_THREAD_MULTIPLE, which the runtime asks for when it starts MPI);
    center="sharded" with it splits each center over every rank instead.
    The centers are runtime state: state_dict() saves them."""

    def __init__(self, model, alpha=None, moving_rate=0.9, period=1,
                 asynchronous=False, center="rank0", prefix="easgd/",
                 process_group=None):
        if center not in ("rank0", "sharded"):
            raise ValueError("center must be 'rank0' or 'sharded'")
        if center == "sharded" and not asynchronous:
            raise ValueError("center='sharded' needs asynchronous=True (the "
                             "synchronous center is replicated)")
        super().__init__(model, prefix, process_group)
        if asynchronous and self.backend != "cpu":
            raise GradCommError(
                -1, "gradcomm: ElasticAverager: asynchronous EASGD runs on "
                "the runtime's CPU backend only (MPI one-sided windows); "
                "this runtime runs %s" % self.backend)
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
        self.replicas = {}  # float32 copies of 16-bit parameters
        self.function = {
            (False, "rank0"): "gradcomm_elastic_average_f32",
            (True, "rank0"): "gradcomm_elastic_average_async_f32",
            (True, "sharded"): "gradcomm_elastic_average_sharded_f32",
        }[(bool(asynchronous), center)]

    def step(self):
        self.synchronize()  # no hook's communication may still run
        with torch.no_grad():
            for parameter in self.parameters:
                work, wire = _float32_replica(self, parameter)
                arguments = (self.state_name(parameter), work.data_ptr(),
                             parameter.numel(), self.alpha, self.period)
                if self.function == "gradcomm_elastic_average_f32":
                    # The differences travel in the parameter's own type.
                    self.rt.call("gradcomm_elastic_average_wire_f32",
                                 *arguments, WIRES[wire])
                else:  # one-sided: the centers' windows are float32
                    self.rt.call(self.function, *arguments)
                _narrow_back(parameter, work)
        self.steps += 1

    def center(self, parameter):
        """The center of `parameter` as this rank sees it (a new float32
        tensor: the center stays float32 for 16-bit parameters too)."""
        out = torch.empty(parameter.shape, dtype=torch.float32,
                          device=parameter.device)
        self.rt.call("gradcomm_state_read", self.state_name(parameter),
                     out.data_ptr(), out.numel())
        return out

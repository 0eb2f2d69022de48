"""gradcomm.torch.ddp under mpiexec.mpich (DDP on gloo, communication by
the GradComm runtime over MPICH in the same process).

  ddp_hook.py dense     dense_hook == DDP's built-in all-reduce (bit for bit
                        on 1-2 ranks; within 1e-6 on more, where MPICH and
                        gloo add the ranks' gradients in another order)
  ddp_hook.py scalecom  scalecom_hook == a pure-PyTorch CLT-k reference
                        written here, after every step (within 1e-6: the
                        runtime's sum of n values runs in MPI's order);
                        replicas bit-identical; one-parameter buckets give
                        the same bits as DDP's default buckets (state is
                        keyed by parameter, not by bucket)
  ddp_hook.py recipe    each part of ScaleComOptions (beta, dense and ramp
                        warm-up, momentum correction with and without
                        Nesterov, dense presets, overrides, clipping, Adam)
                        == a reference written here, and each changes the
                        result
  ddp_hook.py save DIR / resume DIR
                        save the hook (momentum correction and warm-up: the
                        velocities are runtime state), model and optimizer
                        at step 10 and run on to 20; a fresh job restores
                        and runs 10..20: the same bits
  ddp_hook.py gossip    GossipAverager keeps the replicas' mean; its
                        asynchronous form mixes peers' copies
  ddp_hook.py easgd     ElasticAverager (synchronous and asynchronous)
                        keeps the sum of the replicas and the center, and
                        its centers are the same on every rank
  ddp_hook.py overlap   the hooks return before their communication ends
                        (a rank that arrives 1 s late holds up the future,
                        not the hook); overlapped and blocking hooks give
                        the same bits, with many buckets in flight;
                        use_cuda() without a CUDA device raises; the
                        stream handle use_cuda() passes (stood-in CUDA)
  ddp_hook.py sixteen-bits  bf16 and fp16 buckets: dense_hook gives DDP's
                        own bits, scalecom_hook keeps replicas identical,
                        wire="bf16" halves the value bytes within bf16
                        rounding of float32's wire (scalecom_hook and
                        local_topk_hook)
  ddp_hook.py compile   DDP with dense_hook and scalecom_hook under
                        torch.compile: eager's parameters within 1e-5
                        (skipped on a torch without torch.compile)
  ddp_hook.py bad       mismatched configurations and bad buckets raise a
                        clear exception on every rank
  ddp_hook.py no-mpiexec (started without mpiexec, TEST_RANK/TEST_SIZE
                        set, as torchrun starts ranks) MPI comes up through
                        the process group's store; dense, ScaleCom and
                        gossip (synchronous and one-sided) as above
"""

import copy
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runtime import GradCommError  # noqa: E402
from gradcomm.torch import ddp  # noqa: E402

BATCH, RATIO, MIN_ELEMENTS, LR = 8, 10, 16, 0.1
# Plain ScaleCom (the references below): the recipe's defaults off.
PLAIN = dict(beta=1.0, warmup_steps=0)


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10))


def batch(step, rank, ranks):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(BATCH * ranks, 20, generator=g)
    y = torch.randint(0, 10, (BATCH * ranks,), generator=g)
    return x[rank * BATCH:(rank + 1) * BATCH], y[rank * BATCH:(rank + 1) *
                                                  BATCH]


def setup():
    # Under mpiexec.mpich: PMI_RANK/PMI_SIZE; the `no-mpiexec` case starts its
    # processes itself and says who is who in TEST_RANK/TEST_SIZE.
    rank = int(os.environ.get("PMI_RANK", os.environ.get("TEST_RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("TEST_SIZE", "1")))
    dist.init_process_group("gloo", init_method="file://" + os.environ[
        "GRADCOMM_TEST_RENDEZVOUS"], rank=rank, world_size=size)
    return rank, size


def run(model, state, hook, steps, start=0, bucket_cap_mb=25, optimizer=None,
        compiled=False):
    # compiled: as nanoGPT and PyTorch's DDP tutorial do, the model
    # compiled and then wrapped (torch.compile of the DDP object leaves
    # the module's forward to eager mode in torch 2.15: Dynamo skips
    # DDP's _inside_ddp_forward).
    net = DDP(torch.compile(model) if compiled else model,
              bucket_cap_mb=bucket_cap_mb)
    if hook is not None:
        net.register_comm_hook(state, hook)
    optimizer = optimizer or torch.optim.SGD(net.parameters(), lr=LR,
                                             momentum=0.9)
    rank, size = dist.get_rank(), dist.get_world_size()
    history = []
    dtype = next(model.parameters()).dtype
    for step in range(start, steps):
        x, y = batch(step, rank, size)
        optimizer.zero_grad()
        F.cross_entropy(net(x.to(dtype)).float(), y).backward()
        optimizer.step()
        history.append([p.detach().clone() for p in model.parameters()])
    return history, optimizer


def relative(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def same_bits(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def report(ok, message):
    print("rank %d: %s %s" % (dist.get_rank(), "ok" if ok else "FAIL",
                              message), flush=True)
    return 0 if ok else 1


def replicas_identical(params):
    failures = 0
    for p in params:
        gathered = [torch.empty_like(p) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, p)
        failures += sum(not torch.equal(g, gathered[0]) for g in gathered)
    return failures == 0


def test_dense():
    size = dist.get_world_size()
    builtin, _ = run(make_model(), None, None, 5)
    model = make_model()
    hooked, _ = run(model, ddp.DenseState(model), ddp.dense_hook, 5)
    exact = same_bits(builtin[-1], hooked[-1])
    worst = max(relative(a, b) for a, b in zip(hooked[-1], builtin[-1]))
    if size <= 2:
        return report(exact, "dense_hook vs DDP all-reduce: bit-identical=%s"
                      % exact)
    return report(worst <= 1e-6, "dense_hook vs DDP all-reduce: worst "
                  "relative %.2g (bit-identical=%s; %d ranks are added in "
                  "another order by MPICH than by gloo)" % (worst, exact,
                                                          size))


def test_compile():
    """DDP with GradComm's hooks under torch.compile: the hooks run in
    DDP's reducer as in eager mode (Dynamo splits the graph at DDP's
    buckets), so the same communication; the compiled kernels fuse and
    round otherwise, so the parameters match eager's within 1e-5 relative
    (the ScaleCom replicas bit for bit among themselves)."""
    if not hasattr(torch, "compile"):
        print("rank %d: compile: skipped (torch %s has no torch.compile)"
              % (dist.get_rank(), torch.__version__), flush=True)
        return 0
    from torch._dynamo.utils import counters

    def scalecom_state(model, compiled):
        return ddp.ScaleComState(model, ratio=RATIO,
                                 min_elements=MIN_ELEMENTS,
                                 prefix="compile-%d/" % compiled, **PLAIN)

    failures = 0
    for name, make_state, hook in (
            ("dense_hook", lambda model, _: ddp.DenseState(model),
             ddp.dense_hook),
            ("scalecom_hook", scalecom_state, ddp.scalecom_hook)):
        results = []
        for compiled in (False, True):
            torch._dynamo.reset()  # compile afresh: count this run's graphs
            counters.clear()
            model = make_model()
            history, _ = run(model, make_state(model, compiled), hook, 5,
                             compiled=compiled)
            results.append(history[-1])
        graphs = counters["stats"]["unique_graphs"]
        worst = max(relative(a, b) for a, b in zip(results[1], results[0]))
        failures += report(
            graphs >= 1 and worst <= 1e-5 and replicas_identical(results[1]),
            "%s under torch.compile (%d graphs) vs eager: worst relative "
            "%.2g" % (name, graphs, worst))
    torch._dynamo.reset()
    return failures


def reference_scalecom(steps, size):
    """CLT-k with beta = 1, per parameter, n ranks simulated in one process:
    p_i = m_i + g_i; the leader l = t mod n picks the top-k of |p_l|; the
    update is the average of the p_i at those indices; m_i = p_i with the
    picked entries cleared. Small parameters: dense average. (The recipe's
    reference below without any of its parts.)"""
    return reference_recipe(steps, size, {}, sgd(0.9))


def test_scalecom():
    size = dist.get_world_size()
    model = make_model()
    state = ddp.ScaleComState(model, ratio=RATIO, min_elements=MIN_ELEMENTS,
                              prefix="default/", **PLAIN)
    hooked, _ = run(model, state, ddp.scalecom_hook, 5)
    expected = reference_scalecom(5, size)
    worst = max(relative(a, b) for step_a, step_b in zip(hooked, expected)
                for a, b in zip(step_a, step_b))
    failures = report(worst <= 1e-6, "scalecom_hook vs PyTorch CLT-k "
                      "reference, every step: worst relative %.2g" % worst)
    failures += report(replicas_identical(hooked[-1]),
                       "replicas bit-identical")
    small = make_model()
    small_state = ddp.ScaleComState(small, ratio=RATIO,
                                    min_elements=MIN_ELEMENTS,
                                    prefix="one-per-bucket/", **PLAIN)
    rebuilt, _ = run(small, small_state, ddp.scalecom_hook, 5,
                     bucket_cap_mb=0.0001)
    failures += report(same_bits(rebuilt[-1], hooked[-1]),
                       "one-parameter buckets give the same bits")
    return failures


def reference_recipe(steps, size, options, make_optimizer):
    """The recipe (ALGORITHMS.md), n ranks simulated in one process, written
    from the algorithm's text and not from gradcomm.torch.recipe: local
    clipping, then momentum correction (u = mu u + g, sending u or
    g + mu u), then dense or CLT-k with the low-pass memory
    m = (1 - beta) m + beta (p - c) and momentum factor masking. Dense:
    small parameters, the presets, overrides, a dense warm-up. A ramp
    warm-up compresses at start * (target / start) ** (t / warmup), target
    = N / k. The leader is t mod n: the runtime's step counts every call,
    dense warm-up ones too."""
    model = make_model()
    named = list(model.named_parameters())
    params = [p for _, p in named]
    optimizer = make_optimizer(params)
    memories = [[torch.zeros(p.numel()) for _ in range(size)] for p in params]
    velocities = [[torch.zeros(p.numel()) for _ in range(size)]
                  for p in params]
    linear_names = [n for n, _ in named if n.endswith("weight")]
    first, last = linear_names[0][:-len("weight")], linear_names[-1][
        :-len("weight")]
    overrides = dict(options.get("overrides", {}))
    history = []
    for step in range(steps):
        grads = []
        for r in range(size):
            x, y = batch(step, r, size)
            loss = F.cross_entropy(model(x), y)
            grads.append(torch.autograd.grad(loss, params))
        for j, (name, p) in enumerate(named):
            count = p.numel()
            local = [grads[r][j].reshape(-1).clone() for r in range(size)]
            clip = options.get("clip")
            if clip is not None:
                local = [g * min(1.0, clip / float(g.norm())) for g in local]
            mu = options.get("momentum", 0.0)
            if mu:
                for r in range(size):
                    velocities[j][r] = mu * velocities[j][r] + local[r]
                if options.get("nesterov"):
                    sent = [local[r] + mu * velocities[j][r]
                            for r in range(size)]
                else:
                    sent = [velocities[j][r].clone() for r in range(size)]
            else:
                sent = local
            presets = options.get("dense", ())
            ratio = options.get("ratio", RATIO)
            dense = (count < MIN_ELEMENTS or
                     ("vectors" in presets and p.dim() == 1) or
                     ("first" in presets and name.startswith(first)) or
                     ("last" in presets and name.startswith(last)))
            for pattern, value in overrides.items():
                if name == pattern or (pattern.endswith("*") and
                                       name.startswith(pattern[:-1])):
                    dense, ratio = value == "dense", value
                    break
            warmup = options.get("warmup_steps", 0)
            if step < warmup and options.get("warmup") != "ramp":
                dense = True
            if dense:
                update = sum(g / size for g in sent)
            else:
                k = -(-count // round(ratio))
                if step < warmup:  # ramp: r_t = s (R / s)^(t / W), R = N / k
                    target = count / k
                    start = min(options["warmup_start_ratio"], target)
                    ramp = start * (target / start) ** (step / warmup)
                    k = min(max(math.ceil(count / ramp), k), count)
                with_memory = [memories[j][r] + sent[r] for r in range(size)]
                leader = with_memory[step % size]
                chosen = leader.abs().topk(k).indices
                update = torch.zeros(count)
                update[chosen] = sum(w[chosen] for w in with_memory) / size
                beta = options.get("beta", 1.0)
                for r in range(size):
                    rest = with_memory[r].clone()
                    rest[chosen] = 0
                    memories[j][r] = (1 - beta) * memories[j][r] + beta * rest
                    if mu:
                        velocities[j][r][chosen] = 0
            p.grad = update.reshape(p.shape)
        optimizer.step()
        history.append([p.detach().clone() for p in params])
    return history


def sgd(momentum):
    return lambda params: torch.optim.SGD(params, lr=LR, momentum=momentum)


def test_recipe():
    """Each part of the recipe against the reference, and each part changes
    the reference's result (so a hook that ignored it would fail)."""
    size, steps = dist.get_world_size(), 6
    cases = [
        ("beta 0.5", dict(beta=0.5), sgd(0.9)),
        ("dense warm-up", dict(warmup_steps=3), sgd(0.9)),
        ("ramp warm-up", dict(warmup_steps=4, warmup="ramp",
                              warmup_start_ratio=2), sgd(0.9)),
        ("momentum correction", dict(momentum=0.9), sgd(0.0)),
        ("momentum correction + beta 0.5 + dense warm-up",
         dict(momentum=0.9, beta=0.5, warmup_steps=2), sgd(0.0)),
        ("nesterov momentum correction", dict(momentum=0.9, nesterov=True),
         sgd(0.0)),
        ("dense vectors", dict(dense=("vectors",)), sgd(0.9)),
        ("dense first and last", dict(dense=("first", "last")), sgd(0.9)),
        ("dense vectors with momentum correction",
         dict(dense=("vectors",), momentum=0.9), sgd(0.0)),
        ("overrides", dict(overrides={"0.weight": 4, "2.*": "dense"}),
         sgd(0.9)),
        ("local clipping", dict(clip=0.05), sgd(0.9)),
        ("Adam (plain error feedback)", dict(),
         lambda params: torch.optim.Adam(params, lr=0.01)),
    ]
    baseline = {}
    failures = 0
    for number, (what, options, make_optimizer) in enumerate(cases):
        model = make_model()
        state = ddp.ScaleComState(model, ratio=RATIO,
                                  min_elements=MIN_ELEMENTS,
                                  prefix="recipe%d/" % number,
                                  **dict(PLAIN, **options))
        state.check_optimizer(make_optimizer([torch.zeros(1)]))
        hooked, _ = run(model, state, ddp.scalecom_hook, steps,
                        optimizer=make_optimizer(model.parameters()))
        expected = reference_recipe(steps, size, options, make_optimizer)
        worst = max(relative(a, b) for step_a, step_b in zip(hooked, expected)
                    for a, b in zip(step_a, step_b))
        key = make_optimizer([torch.zeros(1)]).__class__.__name__ + str(
            make_optimizer([torch.zeros(1)]).defaults.get("momentum"))
        if key not in baseline:
            baseline[key] = reference_recipe(steps, size, {}, make_optimizer)
        effect = max(relative(a, b) for a, b in zip(expected[-1],
                                                    baseline[key][-1]))
        failures += report(worst <= 1e-5 and (effect > 1e-3 or not options),
                           "%s: hook vs reference worst relative %.2g; "
                           "effect on the result %.2g" % (what, worst,
                                                          effect))
    state = ddp.ScaleComState(make_model(), momentum=0.9, prefix="check/")
    failures += expect_error(ValueError, lambda: state.check_optimizer(
        torch.optim.SGD(make_model().parameters(), lr=LR, momentum=0.9)),
        "momentum correction with a momentum optimizer")
    failures += expect_error(ValueError, lambda: ddp.ScaleComState(
        make_model(), dense=("bias",)), "an unknown dense preset")

    def replace_options():
        state.options = ddp.ScaleComOptions(ratio=RATIO)
    # The plan and the runtime's options were made from the first ones.
    failures += expect_error(AttributeError, replace_options,
                             "options replaced after the state was made")
    failures += expect_error(ValueError, lambda: ddp.LocalTopkState(
        make_model(), momentum=0.9), "momentum correction for local top-k")
    return failures


# save/resume: the runtime's recipe, whose velocities are runtime state
# too (dense warm-up to step 3, then momentum-corrected ScaleCom).
RECIPE = dict(ratio=RATIO, min_elements=MIN_ELEMENTS, momentum=0.9,
              warmup_steps=3)


def checkpoint_path(directory):
    return os.path.join(directory, "rank%d.pt" % dist.get_rank())


def test_save(directory):
    model = make_model()
    state = ddp.ScaleComState(model, **RECIPE)
    _, optimizer = run(model, state, ddp.scalecom_hook, 10,
                       optimizer=sgd(0.0)(model.parameters()))
    torch.save({"hook": state.state_dict(), "model": model.state_dict(),
                "optimizer": optimizer.state_dict()},
               checkpoint_path(directory))
    history, _ = run(model, state, ddp.scalecom_hook, 20, start=10,
                     optimizer=optimizer)
    torch.save(history[-1], checkpoint_path(directory) + ".final")
    return report(True, "saved at step 10, ran to 20")


def test_resume(directory):
    saved = torch.load(checkpoint_path(directory))
    model = make_model()
    model.load_state_dict(saved["model"])
    state = ddp.ScaleComState(model, **RECIPE)
    state.load_state_dict(saved["hook"])
    optimizer = sgd(0.0)(model.parameters())
    optimizer.load_state_dict(saved["optimizer"])
    history, _ = run(model, state, ddp.scalecom_hook, 20, start=10,
                     optimizer=optimizer)
    final = torch.load(checkpoint_path(directory) + ".final")
    return report(same_bits(history[-1], final),
                  "restored at 10 and run to 20 = uninterrupted run")


class FakeBucket:
    def __init__(self, buffer, parameters):
        self._buffer, self._parameters = buffer, parameters

    def buffer(self):
        return self._buffer

    def parameters(self):
        return self._parameters

    def index(self):
        return 0

    def is_last(self):
        return True


def expect_error(kinds, fn, what):
    try:
        fn()
    except kinds as error:
        return report(True, "%s -> %s: %s" % (what, type(error).__name__,
                                              str(error).splitlines()[0]))
    return report(False, "%s raised nothing" % what)


def test_bad():
    rank = dist.get_rank()
    model = make_model()
    state = ddp.ScaleComState(model, ratio=RATIO, min_elements=MIN_ELEMENTS,
                              prefix="bad/")
    weight = next(model.parameters())
    failures = expect_error(TypeError, lambda: ddp.scalecom_hook(
        state, FakeBucket(torch.zeros(weight.numel(), dtype=torch.float64),
                          [weight])), "a float64 bucket")
    failures += expect_error(TypeError, lambda: ddp.scalecom_hook(
        state, FakeBucket(torch.zeros(2, weight.numel())[:, 0], [weight])),
        "a non-contiguous bucket")
    # A configuration that differs across ranks: every rank raises.
    mismatched = make_model()
    other = ddp.ScaleComState(mismatched, ratio=RATIO + rank,
                              min_elements=MIN_ELEMENTS, prefix="mismatch/")
    if dist.get_world_size() > 1:
        failures += expect_error(
            (GradCommError, RuntimeError),
            lambda: run(mismatched, other, ddp.scalecom_hook, 1),
            "ratio %d on rank %d" % (RATIO + rank, rank))
    return failures


def test_overlap():
    import time
    rank, size = dist.get_rank(), dist.get_world_size()
    failures = 0
    model = make_model()
    state = ddp.DenseState(model, prefix="late/")
    weight = next(model.parameters())
    buffer = torch.full((weight.numel(),), float(rank + 1))
    dist.barrier()
    if rank == size - 1 and size > 1:
        time.sleep(1.0)
    began = time.monotonic()
    future = ddp.dense_hook(state, FakeBucket(buffer, [weight]))
    returned = time.monotonic() - began
    future.wait()
    waited = time.monotonic() - began
    expected = sum(r + 1 for r in range(size)) / size
    if rank == 0:
        # The hook only queues the bucket; the wait holds while the last
        # rank sleeps (1 s) before it joins.
        late = size == 1 or waited >= 0.5
        failures += report(returned < 0.5 and late, "the hook returned "
                           "after %.3f s, its future after %.3f s"
                           % (returned, waited))
    failures += report(bool((buffer == expected).all()),
                       "the late rank's bucket averaged (%g)" % expected)
    for name, hook, make_state in (
            ("dense_hook", ddp.dense_hook,
             lambda m, overlap: ddp.DenseState(m, overlap=overlap)),
            ("scalecom_hook", ddp.scalecom_hook,
             lambda m, overlap: ddp.ScaleComState(
                 m, ratio=RATIO, min_elements=MIN_ELEMENTS,
                 prefix="overlap%d/" % overlap, overlap=overlap, **PLAIN)),
            ("scalecom_hook (recipe)", ddp.scalecom_hook,
             lambda m, overlap: ddp.ScaleComState(
                 m, ratio=RATIO, min_elements=MIN_ELEMENTS, warmup_steps=2,
                 momentum=0.9, prefix="recipe-overlap%d/" % overlap,
                 overlap=overlap)),
            ("local_topk_hook", ddp.local_topk_hook,
             lambda m, overlap: ddp.LocalTopkState(
                 m, ratio=RATIO, min_elements=MIN_ELEMENTS,
                 prefix="topk%d/" % overlap, overlap=overlap))):
        finals = []
        for overlap in (False, True):
            model = make_model()
            history, _ = run(model, make_state(model, overlap), hook, 5,
                             bucket_cap_mb=0.0001)
            finals.append(history[-1])
        failures += report(same_bits(*finals), "%s: overlapped = blocking, "
                           "bit for bit, one bucket per parameter" % name)
    if not torch.cuda.is_available():
        failures += expect_error(GradCommError, ddp.use_cuda,
                                 "use_cuda() without a CUDA device")
    return failures + use_cuda_stream_handles()


def use_cuda_stream_handles():
    """The stream handle use_cuda() gives the runtime, with torch.cuda and
    the runtime stood in for (no GPU needed): PyTorch's default stream
    (handle 0, CUDA's legacy default stream) goes as cudaStreamLegacy (1),
    which the runtime orders after, not as NULL, for which it would make a
    stream of its own; a stream of the trainer's goes as it is; the
    per-thread default stream is refused."""
    calls = []

    class Runtime:
        def call(self, name, *args):
            calls.append((name,) + args)

    class Stream:
        def __init__(self, handle):
            self.cuda_stream = handle

    saved = torch.cuda.is_available, ddp.initialize_runtime
    torch.cuda.is_available, ddp.initialize_runtime = (lambda: True,
                                                       Runtime)
    try:
        ddp.use_cuda(Stream(0))
        ddp.use_cuda(Stream(0x7f00))
        failures = expect_error(GradCommError, lambda: ddp.use_cuda(
            Stream(2)), "use_cuda() on the per-thread default stream")
    finally:
        torch.cuda.is_available, ddp.initialize_runtime = saved
    handles = [call[2] for call in calls
               if call[0] == "gradcomm_cuda_use_handles"]
    return failures + report(
        handles == [1, 0x7f00], "use_cuda() hands the runtime PyTorch's "
        "default stream as cudaStreamLegacy, a trainer's stream as it is "
        "(got %s)" % handles)


def test_gossip():
    """GossipAverager after a local SGD step (no DDP): mixing keeps the mean
    of the replicas (within 1e-6: the mean is taken in another order) and
    moves every replica when there are several."""
    rank, size = dist.get_rank(), dist.get_world_size()
    model = make_model()
    averager = ddp.GossipAverager(model, schedule="ring", mixing=0.5)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = batch(0, rank, size)
    F.cross_entropy(model(x), y).backward()
    optimizer.step()
    before = [p.detach().clone() for p in model.parameters()]
    averager.step()
    failures = 0
    worst, moved = 0.0, False
    for old, new in zip(before, model.parameters()):
        means = []
        for value in (old, new.detach()):
            total = value.clone()
            dist.all_reduce(total)
            means.append(total / size)
        worst = max(worst, relative(means[1], means[0]))
        moved = moved or not torch.equal(old, new.detach())
    failures += report(worst <= 1e-6, "gossip keeps the replica mean "
                       "(worst relative %.2g)" % worst)
    if size > 1:
        everyone = torch.tensor([float(moved)])
        dist.all_reduce(everyone)
        failures += report(everyone.item() > 0, "gossip mixed the replicas")
    # The runtime's counters, read through gradcomm.runtime: one call per
    # parameter, and its bytes when this rank had a peer.
    counted = [averager.rt.stats(averager.state_name(p))
               for p in model.parameters()]
    bytes_expected = [4 * p.numel() if c.messages else 0
                      for p, c in zip(model.parameters(), counted)]
    failures += report(
        all(c.calls == 1 for c in counted) and
        [c.value_bytes_sent for c in counted] == bytes_expected,
        "the runtime counted one gossip call per parameter (stats: %s)" %
        [(c.calls, c.messages, c.value_bytes_sent) for c in counted])
    return failures + test_gossip_async()


def test_gossip_async():
    """GossipAverager(asynchronous=True), random peers: every call counts,
    and with a barrier after each call a copy has arrived by the second, so
    some rank's replica moves toward a peer's; a copy is never torn, so the
    replicas stay finite. The synchronous form refuses 'random'."""
    rank, size = dist.get_rank(), dist.get_world_size()
    failures = 0
    model = make_model()
    averager = ddp.GossipAverager(model, mixing=0.5, asynchronous=True,
                                  prefix="gossip-async/")
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    moved = False
    for step in range(3):
        x, y = batch(step, rank, size)
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        before = [p.detach().clone() for p in model.parameters()]
        averager.step()
        dist.barrier()
        if step > 0:
            moved = moved or any(not torch.equal(old, new.detach()) for
                                 old, new in zip(before, model.parameters()))
    counted = [averager.rt.stats(averager.state_name(p)).calls
               for p in model.parameters()]
    failures += report(counted == [3] * len(counted),
                       "asynchronous gossip: 3 calls per parameter counted "
                       "(%s)" % counted)
    failures += report(all(torch.isfinite(p).all() for p in
                           model.parameters()),
                       "asynchronous gossip: the replicas stay finite")
    if size > 1:
        everyone = torch.tensor([float(moved)])
        dist.all_reduce(everyone)
        failures += report(everyone.item() > 0, "asynchronous gossip mixed "
                           "a peer's copy in")
    try:
        ddp.GossipAverager(make_model(), schedule="random")
        failures += report(False, "the synchronous form took 'random'")
    except ValueError as error:
        failures += report("asynchronous=True" in str(error),
                           "the synchronous form refuses 'random': %s" % error)
    return failures


def test_easgd():
    """ElasticAverager after local SGD steps (no DDP), both forms: the
    exchange moves mass between replicas and center and keeps their sum
    (within 1e-5 of its scale), and every rank sees the same center."""
    rank, size = dist.get_rank(), dist.get_world_size()
    failures = 0
    for asynchronous, placement in ((False, "rank0"), (True, "rank0"),
                                    (True, "sharded")):
        model = make_model()
        averager = ddp.ElasticAverager(model, period=1,
                                       asynchronous=asynchronous,
                                       center=placement,
                                       prefix="easgd%d%s/" % (asynchronous,
                                                              placement))
        optimizer = torch.optim.SGD(model.parameters(), lr=LR)
        worst, identical = 0.0, True
        for step in range(3):
            x, y = batch(step, rank, size)
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            replicas = [p.detach().clone() for p in model.parameters()]
            if step == 0:  # the first call sets the center to the mean
                centers = []
                for value in replicas:
                    total = value.clone()
                    dist.all_reduce(total)
                    centers.append(total / size)
            else:
                centers = [averager.center(p) for p in model.parameters()]
            dist.barrier()
            averager.step()
            dist.barrier()
            for old, center, new in zip(replicas, centers,
                                        model.parameters()):
                before, after = old.clone(), new.detach().clone()
                dist.all_reduce(before)
                dist.all_reduce(after)
                after_center = averager.center(new)
                worst = max(worst, relative(after + after_center,
                                            before + center))
                highest = after_center.clone()
                dist.all_reduce(highest, op=dist.ReduceOp.MAX)
                identical = identical and torch.equal(highest, after_center)
        form = ("asynchronous, center %s" % placement if asynchronous
                else "synchronous")
        failures += report(worst <= 1e-5, "%s EASGD keeps replicas + center "
                           "(worst relative %.2g)" % (form, worst))
        failures += report(identical, "%s EASGD: every rank sees the same "
                           "center" % form)
    return failures


def test_sixteen_bits():
    """bf16 and fp16 buckets (a 16-bit model) through dense_hook and
    scalecom_hook: the values travel in 16 bits (half the value bytes of
    float32's), the result stays within 16-bit rounding of DDP's own
    all-reduce of the same model, and the replicas stay identical;
    wire="bf16" on a float32 model is within bf16 rounding of float32's
    wire. Averagers and bad wires are refused."""
    size, failures = dist.get_world_size(), 0
    for dtype in (torch.bfloat16, torch.float16):
        try:  # DDP broadcasts the model over gloo first
            dist.broadcast(torch.zeros(1, dtype=dtype), 0)
            make_model().to(dtype)(torch.zeros(1, 20, dtype=dtype))
        except RuntimeError as error:
            # torch 1.13: gloo has no bfloat16, the CPU no float16 matmul.
            report(True, "skipped: a %s model (this torch: %s)" % (
                dtype, error))
            continue
        builtin, _ = run(make_model().to(dtype), None, None, 3)
        model = make_model().to(dtype)
        state = ddp.DenseState(model, prefix="%s/" % dtype)
        hooked, _ = run(model, state, ddp.dense_hook, 3)
        worst = max(relative(a.float(), b.float())
                    for a, b in zip(hooked[-1], builtin[-1]))
        failures += report(worst <= 0.02, "dense_hook, %s model vs DDP's "
                           "all-reduce after 3 steps: worst relative %.2g, "
                           "bit-identical=%s" % (
                               dtype, worst, same_bits(hooked[-1],
                                                       builtin[-1])))
        model = make_model().to(dtype)
        state = ddp.ScaleComState(model, ratio=RATIO,
                                  min_elements=MIN_ELEMENTS,
                                  prefix="sc-%s/" % dtype, **PLAIN)
        hooked, _ = run(model, state, ddp.scalecom_hook, 3)
        finite = all(torch.isfinite(p.float()).all() for p in hooked[-1])
        failures += report(finite and replicas_identical(hooked[-1]),
                           "scalecom_hook, %s model: finite, replicas "
                           "identical" % dtype)
    # wire="bf16" on a float32 model against the float32 wire.
    results, stats = {}, {}
    for wire in ("f32", "bf16"):
        model = make_model()
        state = ddp.ScaleComState(model, ratio=RATIO,
                                  min_elements=MIN_ELEMENTS,
                                  prefix="wire-%s/" % wire, wire=wire,
                                  **PLAIN)
        results[wire], _ = run(model, state, ddp.scalecom_hook, 3)
        first = next(model.parameters())
        stats[wire] = state.rt.stats(state.state_name(first)).value_bytes_sent
    worst = max(relative(a, b) for a, b in zip(results["bf16"][-1],
                                               results["f32"][-1]))
    failures += report(worst <= 0.02, "scalecom_hook wire='bf16' vs 'f32': "
                       "worst relative %.2g" % worst)
    if size > 1:
        failures += report(2 * stats["bf16"] == stats["f32"],
                           "wire='bf16' sends half the value bytes (%d vs "
                           "%d)" % (stats["bf16"], stats["f32"]))
    # local_topk_hook's all-gather in the wire too.
    for wire in ("f32", "bf16"):
        model = make_model()
        state = ddp.LocalTopkState(model, ratio=RATIO,
                                   min_elements=MIN_ELEMENTS,
                                   prefix="topk-wire-%s/" % wire, wire=wire)
        results[wire], _ = run(model, state, ddp.local_topk_hook, 3)
        first = next(model.parameters())
        stats[wire] = state.rt.stats(state.state_name(first)).value_bytes_sent
    worst = max(relative(a, b) for a, b in zip(results["bf16"][-1],
                                               results["f32"][-1]))
    failures += report(worst <= 0.02 and replicas_identical(
        results["bf16"][-1]), "local_topk_hook wire='bf16' vs 'f32': worst "
        "relative %.2g, replicas identical" % worst)
    if size > 1:
        failures += report(2 * stats["bf16"] == stats["f32"] > 0,
                           "local_topk_hook wire='bf16' sends half the value "
                           "bytes (%d vs %d)" % (stats["bf16"], stats["f32"]))
    failures += expect_error(ValueError, lambda: ddp.ScaleComState(
        make_model(), wire="f8"), "an unknown wire")
    return failures + test_sixteen_bit_averagers()


def perturbed_model(rank):
    """make_model() moved by a rank-dependent step (what a local SGD step
    does), so the replicas differ."""
    model = make_model()
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.add_(torch.sin(torch.arange(p.numel(), dtype=torch.float32)
                             .reshape(p.shape) + 3 * rank + i) * 0.01)
    return model


def test_sixteen_bit_averagers():
    """GossipAverager and ElasticAverager on bf16 and fp16 models, one step:
    a replica travels in its own type. Gossip's mix is float32's on the
    same values, rounded once, so it equals the float32 averager on a
    float32 copy of the model, narrowed, bit for bit, with half the value
    bytes. EASGD's differences are rounded to 16 bits before the sum:
    within 16-bit rounding of float32's, its center float32."""
    rank, size, failures = dist.get_rank(), dist.get_world_size(), 0
    for dtype in (torch.bfloat16, torch.float16):
        base = perturbed_model(rank).to(dtype)
        reference = copy.deepcopy(base).float()
        for label, make in (
                ("gossip", lambda model, prefix: ddp.GossipAverager(
                    model, schedule="ring", mixing=0.5, prefix=prefix)),
                ("easgd", lambda model, prefix: ddp.ElasticAverager(
                    model, prefix=prefix))):
            model, wide = copy.deepcopy(base), copy.deepcopy(reference)
            narrow = make(model, "%s-%s/" % (label, dtype))
            full = make(wide, "%s-%s-f32/" % (label, dtype))
            narrow.step()  # gossip's exchange, EASGD's center and exchange
            full.step()
            got = [p.detach() for p in model.parameters()]
            want = [p.detach().to(dtype) for p in wide.parameters()]
            first = next(model.parameters())
            sent = narrow.rt.stats(narrow.state_name(first)).value_bytes_sent
            wide_sent = full.rt.stats(
                full.state_name(next(wide.parameters()))).value_bytes_sent
            types = all(p.dtype == dtype for p in got)
            if label == "gossip":
                ok = types and same_bits(got, want)
                detail = "bit-identical to float32's, narrowed"
            else:
                worst = max(relative(a.float(), b.float())
                            for a, b in zip(got, want))
                center = narrow.center(first)
                ok = types and worst <= 0.02 and \
                    center.dtype == torch.float32
                detail = "worst relative %.2g to float32's, float32 " \
                    "center" % worst
            failures += report(ok, "%s averager, %s model: %s" % (
                label, dtype, detail))
            if size > 1:
                # EASGD's first call also sets the center to the replicas'
                # mean, in float32: E + E / 2 against 2 E.
                ok = 0 < 2 * sent == wide_sent if label == "gossip" else \
                    0 < 4 * sent == 3 * wide_sent
                failures += report(ok or sent == wide_sent == 0,
                                   "%s averager, %s model: the exchange "
                                   "sends half the value bytes (%d vs %d)"
                                   % (label, dtype, sent, wide_sent))
    # The one-sided forms keep float32 mailboxes and centers.
    model = perturbed_model(rank).to(torch.bfloat16)
    averager = ddp.GossipAverager(model, mixing=0.5, asynchronous=True,
                                  prefix="async-bf16/")
    for _ in range(2):
        averager.step()
        dist.barrier()
    failures += report(all(p.dtype == torch.bfloat16 and
                           torch.isfinite(p.float()).all()
                           for p in model.parameters()),
                       "asynchronous gossip on a bf16 model")
    # Checkpoints record each parameter's type: a bf16 model's state
    # restores into a bf16 model, not into a float32 one.
    saved = ddp.ScaleComState(make_model().to(torch.bfloat16),
                              prefix="ckpt/").state_dict()
    ddp.ScaleComState(make_model().to(torch.bfloat16),
                      prefix="ckpt/").load_state_dict(saved)
    failures += report(saved["dtypes"]["0.weight"] == "bfloat16",
                       "a checkpoint records the parameters' types")
    failures += expect_error(ValueError, lambda: ddp.ScaleComState(
        make_model(), prefix="ckpt/").load_state_dict(saved),
        "a bf16 model's state restored into a float32 model")
    return failures


def test_no_mpiexec():
    """Started without mpiexec (as torchrun starts ranks): the first state
    brings the runtime's MPI up through the process group's store, and the
    hooks and averagers then give what they give under mpiexec."""
    failures = test_dense() + test_scalecom() + test_gossip()
    print("rank %d: %s no-mpiexec: the runtime is rank %d of %d" % (
        dist.get_rank(), "FAIL" if failures else "ok",
        ddp.initialize_runtime().rank(), ddp.initialize_runtime().size()))
    return failures


def main():
    """ddp_hook.py CASE [CASE ...] runs the cases one after another in one
    job (one Python start-up per rank for all of them); save and resume
    take a directory instead: ddp_hook.py save|resume DIR."""
    tests = {"dense": test_dense, "scalecom": test_scalecom, "bad": test_bad,
             "no-mpiexec": test_no_mpiexec,
             "sixteen-bits": test_sixteen_bits, "gossip": test_gossip,
             "overlap": test_overlap,
             "easgd": test_easgd, "recipe": test_recipe,
             "compile": test_compile}
    if sys.argv[1:2] in (["save"], ["resume"]) and len(sys.argv) == 3:
        test = {"save": test_save, "resume": test_resume}[sys.argv[1]]
        runs = [(sys.argv[1], lambda: test(sys.argv[2]))]
    else:
        unknown = [n for n in sys.argv[1:] if n not in tests]
        if len(sys.argv) < 2 or unknown:
            print("usage: ddp_hook.py CASE [CASE ...] | save DIR | resume "
                  "DIR; cases: %s (unknown: %s)" % (", ".join(tests),
                                                    ", ".join(unknown)))
            return 2
        runs = [(n, tests[n]) for n in sys.argv[1:]]
    rank, _ = setup()
    failed = [name for name, run in runs if run()]
    dist.destroy_process_group()
    if failed:
        print("rank %d: failed cases: %s" % (rank, ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""FSDP's sharded strategy with GradComm's reduce-scatter hooks
(gradcomm.torch.fsdp), 2 ranks under torchrun, CPU and gloo:

* the dense hook gives FSDP's own sharded gradients bit for bit;
* the ScaleCom hook's shard is the shard of gradcomm_scalecom_f32's output
  for the same gradient, bit for bit, on every flat parameter and step
  (several FSDP units, two of the same length);
* its warm-up steps are the dense hook's, its bytes are k values, and
  its loss follows dense's;
* under MixedPrecision(reduce_dtype=bfloat16 or float16) the hooks get
  16-bit gradients: the dense hook gives FSDP's own 16-bit reduce-scatter
  bit for bit, the ScaleCom hook's shard is the shard of the runtime's
  all-reduce recipe with the same 16-bit wire, each value in 2 bytes;
* with `module` (selection per tensor inside each flat parameter) its
  shard is the shard of every tensor's own gradcomm_scalecom_f32 step put
  together (small tensors whole, FSDP's padding none), bit for bit;
* with momentum correction, the dense presets and overrides, its shard
  is the shard of every tensor's own gradcomm_scalecom_recipe_f32 step;
* a tensor or option it cannot take is refused with a message.

Usage: torchrun --standalone --nproc-per-node=2 fsdp_hook.py
"""

import ctypes
import math
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
from torch.distributed.fsdp.wrap import ModuleWrapPolicy

from gradcomm.runtime import (REDUCTIONS, SELECTIONS, WIRES,  # noqa: E402
                              RecipeOptions)
from gradcomm.torch import fsdp  # noqa: E402

STEPS = 12
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("rank %d: FAIL %s" % (dist.get_rank(), what), flush=True)


def network():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(20, 48), torch.nn.ReLU(), torch.nn.Linear(48, 48),
        torch.nn.ReLU(), torch.nn.Linear(48, 48), torch.nn.ReLU(),
        torch.nn.Linear(48, 4))


def wrapped(reduce_dtype=None):
    # One FSDP unit per Linear: the hook sees four flat parameters, two of
    # the same length.
    precision = None if reduce_dtype is None else MixedPrecision(
        param_dtype=reduce_dtype, reduce_dtype=reduce_dtype)
    return FSDP(network(), device_id=torch.device("cpu"),
                sharding_strategy=ShardingStrategy.FULL_SHARD,
                auto_wrap_policy=ModuleWrapPolicy({torch.nn.Linear}),
                mixed_precision=precision)


def batch(step):
    generator = torch.Generator().manual_seed(1000 * dist.get_rank() + step)
    x = torch.randn(32, 20, generator=generator)
    target = torch.stack([x[:, :5].sum(1), x[:, 5:10].sum(1),
                          x[:, 10:15].sum(1), x[:, 15:].sum(1)], dim=1)
    return x, target


def train(model, state=None, hook=None, steps=STEPS, lr=0.05, start=0):
    if hook is not None:
        model.register_comm_hook(state, hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses, grads = [], []
    for step in range(start, steps):
        optimizer.zero_grad()
        x, target = batch(step)
        loss = torch.nn.functional.mse_loss(model(x).float(), target)
        loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        optimizer.step()
        losses.append(loss.item())
    return losses, grads


def same(a, b):
    return len(a) == len(b) and all(
        all(torch.equal(x, y) for x, y in zip(p, q)) for p, q in zip(a, b))


def per_tensor_checker(tag, rank, size, own_step):
    """The hook, checking: each shard is the shard of own_step(memory name,
    tensor's gradient, out, k) on every tensor of the flat parameter (each
    segment with k > 0) put together; and the count of its calls."""
    compared = [0]

    def checking_hook(state, grad, output):
        reference = grad.clone()
        place = state._calls.get(grad.numel(), 0)
        ends, ks, count, _ = state.segments_of(grad.numel())
        fsdp.scalecom_reduce_scatter_hook(state, grad, output)
        full = torch.zeros_like(reference)
        begin = 0
        for s in range(count):
            end, k = ends[s], ks[s]
            if k > 0:
                memory = ("reference.%s.%d.%d.%d" % (
                    tag, grad.numel(), place, s)).encode()
                part = reference[begin:end].clone()
                out = torch.empty_like(part)
                own_step(memory, part, out, k)
                full[begin:end] = out
            begin = end
        check(torch.equal(output, full.chunk(size)[rank]),
              "%s: the shard = the tensors' own steps' shard" % tag)
        compared[0] += 1

    return checking_hook, compared


def per_tensor(rt, rank, size):
    """ScaleComShardedState(module=...): the per-tensor selection's shard
    against every tensor's own all-reduce step."""
    model = wrapped()
    state = fsdp.ScaleComShardedState(ratio=10, warmup_steps=0,
                                      prefix="tensor", module=model,
                                      min_elements=200)

    def own_step(memory, part, out, k):
        rt.call("gradcomm_scalecom_f32", memory, part.data_ptr(),
                out.data_ptr(), part.numel(), k, SELECTIONS["exact"], 0,
                ctypes.c_float(state.options.beta), REDUCTIONS["average"])

    checking_hook, compared = per_tensor_checker("tensor", rank, size,
                                                 own_step)
    losses, _ = train(model, state, checking_hook)
    check(compared[0] == 4 * STEPS, "four flat parameters per step")
    # Layer 2 (48 x 48 + 48): its weight gets ceil(2304 / 10) values, its
    # bias (under min_elements) all 48, and FSDP pads nothing at 2 ranks.
    ends, ks, count, _ = state.segments_of(48 * 48 + 48)
    check(list(ks[:count]) in ([231, 48], [231, 48, 0]),
          "segments of a 48x48 layer: %s" % list(ks[:count]))
    stats = rt.stats(b"tensor.%d.0" % (48 * 48 + 48))
    check(stats.value_bytes_sent == STEPS * (4 * 279 * (size - 1) // size),
          "k = 231 + 48 values: %d" % stats.value_bytes_sent)
    try:
        state.segments_of(12345)
        check(False, "a length no flat parameter has is refused")
    except ValueError as error:
        check("no flat parameter of 12345 elements" in str(error),
              "the message names the length")


def recipe(rt, rank, size):
    """The recipe in the sharded hook: momentum correction, a dense
    warm-up through the runtime, the dense presets and an override (names
    as in the unwrapped model); the shard is the shard of every tensor's
    own gradcomm_scalecom_recipe_f32 step put together (a tensor kept
    dense with `dense`, so its velocity stays unmasked), bit for bit."""
    model = wrapped()
    state = fsdp.ScaleComShardedState(
        ratio=10, warmup_steps=2, momentum=0.9, dense=("vectors", "last"),
        overrides=(("0.weight", 5),), min_elements=10, prefix="recipe",
        module=model)
    try:
        state.check_optimizer(torch.optim.SGD(model.parameters(), lr=0.1,
                                              momentum=0.9))
        check(False, "an optimizer with momentum is refused")
    except ValueError as error:
        check("momentum correction (momentum=0.9)" in str(error),
              "the message names momentum correction")

    def own_recipe_step(memory, part, out, k):
        options = RecipeOptions()
        rt.library.gradcomm_scalecom_options_init(ctypes.byref(options), k)
        options.warmup_steps = 2
        options.momentum = 0.9
        options.dense = int(k == part.numel())
        rt.call("gradcomm_scalecom_recipe_f32", memory, part.data_ptr(),
                out.data_ptr(), part.numel(), ctypes.byref(options),
                REDUCTIONS["average"])

    checking_hook, compared = per_tensor_checker("recipe", rank, size,
                                                 own_recipe_step)
    losses, _ = train(model, state, checking_hook)
    check(compared[0] == 4 * STEPS, "four flat parameters per step")
    # The first layer's weight at the override's ratio 5, the biases whole
    # (vectors), the last layer whole (last), though its weight is over
    # min_elements.
    layouts = {length: list(state.segments_of(length)[1][:2])
               for length in (48 * 48 + 48, 48 * 4 + 4, 20 * 48 + 48)}
    check(layouts == {48 * 48 + 48: [231, 48], 48 * 4 + 4: [192, 4],
                      20 * 48 + 48: [192, 48]},
          "the recipe's k per tensor: %s" % layouts)
    for bad, message in (({"dense": ("vectors",)}, "pass module="),
                         ({"k": 5}, "does not take k"),
                         ({"wire": "bf16"}, "does not take wire")):
        try:
            fsdp.ScaleComShardedState(**bad)
            check(False, "%s is refused" % bad)
        except ValueError as error:
            check(message in str(error), "%s: %s" % (bad, error))
    state = fsdp.ScaleComShardedState(ratio=10)
    try:
        state.options = fsdp.ScaleComOptions(ratio=400)
        check(False, "options replaced after the state was made are refused")
    except AttributeError as error:
        check("make a new state" in str(error), str(error))


def mixed_precision(rt, rank, size, dtype, wire):
    """FSDP with MixedPrecision(reduce_dtype=dtype): the hooks' checks."""
    seen = set()

    def spying(hook):
        def spy(state, grad, output):
            seen.add((grad.dtype, output.dtype))
            hook(state, grad, output)
        return spy

    own_losses, own_grads = train(wrapped(dtype))
    dense = fsdp.DenseShardedState(prefix="dense." + wire)
    _, dense_grads = train(wrapped(dtype), dense,
                           spying(fsdp.reduce_scatter_hook))
    check(seen == {(dtype, dtype)}, "%s gradients reach the hook: %s"
          % (wire, seen))
    check(same(own_grads, dense_grads),
          "dense hook = FSDP's own %s gradients" % wire)
    stats = rt.stats(b"dense.%s.%d.0" % (wire.encode(), 48 * 48 + 48))
    length = 48 * 48 + 48
    check(stats.value_bytes_sent == STEPS * (2 * length * (size - 1) // size),
          "%s: 2 bytes a value on the wire: %d" % (wire,
                                                     stats.value_bytes_sent))

    state = fsdp.ScaleComShardedState(ratio=10, warmup_steps=0,
                                      prefix="cltk." + wire)
    compared = [0]

    def checking_hook(state, grad, output):
        reference = grad.float()
        place = state._calls.get(grad.numel(), 0)
        memory = ("reference.%s.%d.%d" % (wire, grad.numel(),
                                          place)).encode()
        fsdp.scalecom_reduce_scatter_hook(state, grad, output)
        options = RecipeOptions()
        rt.library.gradcomm_scalecom_options_init(
            ctypes.byref(options), max(1, math.ceil(grad.numel() / 10)))
        options.warmup_steps = 0
        options.wire = WIRES[wire]
        full = torch.empty_like(reference)
        rt.call("gradcomm_scalecom_recipe_f32", memory, reference.data_ptr(),
                full.data_ptr(), reference.numel(), ctypes.byref(options),
                REDUCTIONS["average"])
        check(torch.equal(output, full.chunk(size)[rank].to(dtype)),
              "%s ScaleCom shard = the all-reduce recipe's shard" % wire)
        compared[0] += 1

    losses, _ = train(wrapped(dtype), state, checking_hook)
    check(compared[0] == 4 * STEPS, "four flat parameters per step")
    tail, own_tail = sum(losses[-4:]) / 4, sum(own_losses[-4:]) / 4
    check(abs(tail - own_tail) < 0.03 * own_tail,
          "%s ScaleCom follows dense: %.4f vs %.4f" % (wire, tail, own_tail))
    k = math.ceil(length / 10)
    stats = rt.stats(b"cltk.%s.%d.0" % (wire.encode(), length))
    check(stats.value_bytes_sent == STEPS * (2 * k * (size - 1) // size),
          "%s: k values of 2 bytes: %d" % (wire, stats.value_bytes_sent))


def resume():
    """Saved at step 3 (the hook's state through torch.save, the model's
    flat shards), resumed in a fresh model and state: the uninterrupted
    run's gradients at steps 3 to 5. The recipe keeps velocities (momentum
    correction) and a warm-up, so the restore has something to get
    wrong; without it the gradients differ (checked)."""
    import io

    recipe = dict(ratio=10, warmup_steps=2, momentum=0.9)
    hook = fsdp.scalecom_reduce_scatter_hook
    whole = fsdp.ScaleComShardedState(prefix="whole", **recipe)
    _, uninterrupted = train(wrapped(), whole, hook, steps=6)

    net = wrapped()
    state = fsdp.ScaleComShardedState(prefix="resumed", **recipe)
    train(net, state, hook, steps=3)
    saved = io.BytesIO()
    torch.save({"gradcomm": state.state_dict(),
                "shards": [p.detach().clone() for p in net.parameters()]},
               saved)
    train(net, steps=5, start=3)  # the state moves on (hook registered)

    def resumed(load):
        saved.seek(0)
        checkpoint = torch.load(saved)
        fresh = wrapped()
        with torch.no_grad():
            for parameter, shard in zip(fresh.parameters(),
                                        checkpoint["shards"]):
                parameter.copy_(shard)
        restored = fsdp.ScaleComShardedState(prefix="resumed", **recipe)
        if load:
            restored.load_state_dict(checkpoint["gradcomm"])
        _, grads = train(fresh, restored, hook, steps=6, start=3)
        return restored, grads

    restored, grads = resumed(load=True)
    check(same(grads, uninterrupted[3:]),
          "FSDP hook resumed at step 3 = the uninterrupted run")
    check(restored.steps == 6, "the step count resumes: %d" % restored.steps)
    _, unrestored = resumed(load=False)
    check(not same(unrestored, uninterrupted[3:]),
          "without the restore the run differs")
    for foreign, message in (({"format": "something else"},
                              "not a GradComm FSDP state"),
                             (dict(state.state_dict(), size=99),
                              "FSDP state of rank")):
        try:
            restored.load_state_dict(foreign)
            check(False, "a foreign state accepted: %s" % message)
        except ValueError as error:
            check(message in str(error), str(error))


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()

    # Dense: FSDP's own reduce-scatter, bit for bit.
    own_losses, own_grads = train(wrapped())
    dense = fsdp.DenseShardedState(prefix="dense")
    dense_losses, dense_grads = train(wrapped(), dense,
                                      fsdp.reduce_scatter_hook)
    check(same(own_grads, dense_grads), "dense hook = FSDP's gradients")
    check(own_losses == dense_losses, "dense hook = FSDP's losses")
    check(dense.steps == STEPS, "one step per backward pass")

    # ScaleCom: every shard is the shard of the all-reduce step's output.
    state = fsdp.ScaleComShardedState(ratio=10, warmup_steps=0,
                                      prefix="cltk")
    rt = state.rt
    compared = [0]

    def checking_hook(state, grad, output):
        name = "reference.%d.%d" % (state.steps, compared[0])
        reference = grad.clone()
        # The reference state must see the same memory: one per flat
        # parameter, named by its place in the backward pass.
        place = state._calls.get(grad.numel(), 0)
        memory = ("reference.%d.%d" % (grad.numel(), place)).encode()
        fsdp.scalecom_reduce_scatter_hook(state, grad, output)
        k = max(1, math.ceil(reference.numel() / state.options.ratio))
        full = torch.empty_like(reference)
        rt.call("gradcomm_scalecom_f32", memory, reference.data_ptr(),
                full.data_ptr(), reference.numel(), k, SELECTIONS["exact"],
                0, ctypes.c_float(state.options.beta), REDUCTIONS["average"])
        shard = full.chunk(size)[rank]
        check(torch.equal(output, shard),
              "ScaleCom shard = the all-reduce step's shard (%s)" % name)
        compared[0] += 1

    losses, _ = train(wrapped(), state, checking_hook)
    check(compared[0] == 4 * STEPS, "four flat parameters per step")
    # Ratio 10 on this small net follows dense's loss curve closely.
    tail = sum(losses[-4:]) / 4
    dense_tail = sum(own_losses[-4:]) / 4
    check(abs(tail - dense_tail) < 0.02 * dense_tail,
          "ScaleCom follows dense: last 4 steps %.4f vs %.4f" % (
              tail, dense_tail))
    stats = rt.stats(b"cltk.%d.0" % (48 * 48 + 48))
    k = math.ceil((48 * 48 + 48) / 10)
    # FSDP pads the flat parameter to a multiple of the world size.
    check(stats.calls == STEPS, "one call per step: %d" % stats.calls)
    check(stats.value_bytes_sent == stats.calls * (4 * k * (size - 1) // size),
          "k values on the wire: %d" % stats.value_bytes_sent)

    # The warm-up is the dense hook.
    warm = fsdp.ScaleComShardedState(ratio=10, warmup_steps=3,
                                     prefix="warm")
    _, warm_grads = train(wrapped(), warm, fsdp.scalecom_reduce_scatter_hook,
                          steps=4)
    check(same(warm_grads[:3], dense_grads[:3]), "warm-up = dense")
    check(not same(warm_grads[3:], dense_grads[3:4]), "compressed after it")

    # Per tensor: each tensor inside a flat parameter its own selection.
    per_tensor(rt, rank, size)

    # The recipe: momentum correction, presets, overrides.
    recipe(rt, rank, size)

    # Mixed precision: 16-bit gradients, their values in 16 bits.
    for dtype, wire in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
        mixed_precision(rt, rank, size, dtype, wire)

    # Checkpoints: resume = the uninterrupted run.
    resume()

    # Refusals.
    try:
        fsdp.scalecom_reduce_scatter_hook(
            state, torch.zeros(8), torch.zeros(4, dtype=torch.bfloat16))
        check(False, "a bfloat16 shard of a float32 gradient is refused")
    except TypeError as error:
        check("the gradient is torch.float32, the shard torch.bfloat16"
              in str(error), "the message names both types")
    try:
        fsdp.scalecom_reduce_scatter_hook(
            state, torch.zeros(8, dtype=torch.int32),
            torch.zeros(4, dtype=torch.int32))
        check(False, "an int32 gradient is refused")
    except TypeError as error:
        check("float32, bfloat16 or float16" in str(error),
              "the message names the types")
    try:
        fsdp.reduce_scatter_hook(dense, torch.zeros(8),
                                 torch.zeros(4, dtype=torch.float64))
        check(False, "a float64 shard is refused")
    except TypeError as error:
        check("float64" in str(error), "the message names float64")
    try:
        fsdp.ScaleComShardedState(ratio=0.5)
        check(False, "ratio < 1 is refused")
    except ValueError:
        pass

    failed = torch.tensor([len(failures)])
    dist.all_reduce(failed)
    if rank == 0:
        print("fsdp hooks: %s" % ("ok" if failed.item() == 0 else
                                  "%d failures" % failed.item()))
    dist.destroy_process_group()
    sys.exit(0 if failed.item() == 0 else 1)


if __name__ == "__main__":
    main()

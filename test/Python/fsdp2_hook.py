"""FSDP2 (fully_shard) with GradComm's reduce-scatter (gradcomm.torch.fsdp2),
2 ranks under torchrun, CPU and gloo:

* dense: FSDP2's own reduce-scatter, bit for bit (float32, and under
  MixedPrecisionPolicy(reduce_dtype=bfloat16));
* ScaleCom: every module's shard is the runtime's segmented ScaleCom
  reduce-scatter of the same input with the layout derived here from the
  module's parameter shapes (each parameter's piece of each rank's shard;
  dense presets and small tensors whole), bit for bit, every step;
* its memory is one state per module, named after it: two modules of the
  same shape keep their own;
* the warm-up steps are the dense reduce-scatter's; ScaleCom's loss
  follows dense's; options and models it cannot take are refused;
* a run saved at step 3 (the model through torch.distributed.checkpoint,
  GradComm's state per rank) and resumed in a fresh model gives the bits
  of the run that never stopped (momentum correction and a warm-up, so
  velocities, memories and step counts all matter).

Usage: torchrun --standalone --nproc-per-node=2 fsdp2_hook.py
"""

import ctypes
import math
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

from gradcomm.runtime import REDUCTIONS
from gradcomm.torch import fsdp2

STEPS = 8
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("rank %d: FAIL %s" % (dist.get_rank(), what), flush=True)


def network(reduce_dtype=None):
    """An MLP with two hidden layers of the same shape, each Linear its
    own FSDP module, and the root."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(20, 48), torch.nn.ReLU(), torch.nn.Linear(48, 48),
        torch.nn.ReLU(), torch.nn.Linear(48, 48), torch.nn.ReLU(),
        torch.nn.Linear(48, 5))
    policy = MixedPrecisionPolicy(reduce_dtype=reduce_dtype)
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mp_policy=policy)
    fully_shard(net, mp_policy=policy)
    return net


def batch(step):
    generator = torch.Generator().manual_seed(100 + step)
    x = torch.randn(16, 20, generator=generator)
    y = torch.randint(0, 5, (16,), generator=generator)
    rank = dist.get_rank()
    return x[rank * 8:(rank + 1) * 8], y[rank * 8:(rank + 1) * 8]


def train(net, steps=STEPS, start=0):
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    losses = []
    for step in range(start, steps):
        x, y = batch(step)
        optimizer.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.detach().full_tensor() for p in net.parameters()]


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b))


def layout(module, size, ratio, min_elements):
    """The segments the compressed reduce-scatter must use, derived from
    the shapes of the parameters `module` itself manages (FSDP2 pads each
    in its first dimension to a multiple of `size`): every parameter's
    piece of every rank's shard; a tensor under min_elements, or a vector
    (the "vectors" preset), whole; others ceil(k / size) values."""
    pieces = []
    for name, parameter in module.named_parameters(recurse=False):
        rows = math.ceil(parameter.shape[0] / size)
        piece = rows * int(math.prod(parameter.shape[1:]))
        dense = parameter.numel() < min_elements or parameter.dim() == 1
        k = piece if dense else max(1, math.ceil(
            math.ceil(parameter.numel() / ratio) / size))
        pieces.append((piece, k))
    ends, ks, end = [], [], 0
    for _ in range(size):
        for piece, k in pieces:
            end += piece
            ends.append(end)
            ks.append(k)
    return ends, ks


def mirrored(state, size, ratio, min_elements):
    """Wraps every module's reduce-scatter: the same input also goes
    through the runtime's segmented ScaleCom reduce-scatter on a mirror
    state with the layout above, and the shards must be equal. Returns
    the count of comparisons (a one-element list)."""
    compared = [0]
    rt = state.rt
    for name, comm in state.comms.items():
        ends, ks = layout(comm.module, size, ratio, min_elements)

        class Mirrored(type(comm)):
            def __call__(self, output_tensor, input_tensor, group, op,
                         async_op=False, ends=ends, ks=ks, name=name):
                reference = input_tensor.clone()
                result = super().__call__(output_tensor, input_tensor,
                                          group, op, async_op)
                options = state.runtime_options(sum(ks), "f32")
                shard = torch.empty_like(output_tensor)
                rt.call("gradcomm_scalecom_reduce_scatter_segments_f32",
                        ("mirror/" + name).encode(), reference.data_ptr(),
                        shard.data_ptr(), reference.numel(),
                        (ctypes.c_int64 * len(ends))(*ends),
                        (ctypes.c_int64 * len(ks))(*ks), len(ends),
                        ctypes.byref(options), REDUCTIONS["average"])
                check(torch.equal(shard, output_tensor),
                      "module '%s': shard = the segmented reduce-scatter's"
                      % name)
                compared[0] += 1
                return result

        comm.__class__ = Mirrored
    return compared


def resume(rank):
    """Saved at step 3, resumed in a fresh model: the uninterrupted run's
    bits at step 6."""
    import shutil
    import tempfile

    import torch.distributed.checkpoint as dcp

    recipe = dict(ratio=10, min_elements=16, warmup_steps=2, momentum=0.9)
    net = network()
    fsdp2.scalecom(net, prefix="whole/", **recipe)
    _, whole = train(net, steps=6)

    net = network()
    state = fsdp2.scalecom(net, prefix="resumed/", **recipe)
    train(net, steps=3)
    directory = tempfile.mkdtemp() if rank == 0 else None
    shared = [directory]
    dist.broadcast_object_list(shared)
    directory = shared[0]
    dcp.save({"model": net.state_dict()}, checkpoint_id=directory)
    torch.save(state.state_dict(), "%s/gradcomm.rank%d" % (directory, rank))
    train(net, steps=5, start=3)  # the states move on past the checkpoint

    fresh = network()
    restored = fsdp2.scalecom(fresh, prefix="resumed/", **recipe)
    saved = {"model": fresh.state_dict()}
    dcp.load(saved, checkpoint_id=directory)
    fresh.load_state_dict(saved["model"])
    restored.load_state_dict(torch.load("%s/gradcomm.rank%d" % (
        directory, rank)))
    _, resumed = train(fresh, steps=6, start=3)
    check(same(whole, resumed), "resumed at step 3 = the uninterrupted run")
    try:
        restored.load_state_dict({"format": "something else"})
        check(False, "a foreign state accepted")
    except ValueError as error:
        check("not a GradComm FSDP2 state" in str(error), str(error))
    dist.barrier()
    if rank == 0:
        shutil.rmtree(directory)


def main():
    dist.init_process_group("gloo")
    rank, size = dist.get_rank(), dist.get_world_size()

    # Dense: FSDP2's own reduce-scatter, bit for bit.
    own_losses, own = train(network())
    net = network()
    dense = fsdp2.dense(net, prefix="dense/")
    dense_losses, mine = train(net)
    check(same(own, mine) and own_losses == dense_losses,
          "dense = FSDP2's own reduce-scatter")
    check(sorted(dense.comms) == ["", "0", "2", "4", "6"],
          "one reduce-scatter per FSDP module: %s" % sorted(dense.comms))
    _, own16 = train(network(torch.bfloat16))
    net = network(torch.bfloat16)
    fsdp2.dense(net, prefix="dense16/")
    _, mine16 = train(net)
    check(same(own16, mine16), "dense in bf16 = FSDP2's own")
    stats = dense.rt.stats(b"dense16/2")
    check(stats.value_bytes_sent == STEPS * 2 * (48 * 48 + 48) // size,
          "bf16: 2 bytes a value: %d" % stats.value_bytes_sent)

    # ScaleCom: each module's shard is the segmented reduce-scatter's.
    ratio, min_elements = 10, 16
    net = network()
    state = fsdp2.scalecom(net, ratio=ratio, min_elements=min_elements,
                           warmup_steps=0, dense=("vectors",),
                           prefix="cltk/")
    compared = mirrored(state, size, ratio, min_elements)
    losses, _ = train(net)
    # The root manages no parameter of its own: FSDP2 reduces four.
    check(compared[0] == 4 * STEPS, "four modules a step: %d" % compared[0])
    # Two modules of the same shape: their own memories, named after them.
    for name in ("cltk/2", "cltk/4"):
        calls = state.rt.stats(name.encode()).calls
        check(calls == STEPS, "%s: one call a step: %d" % (name, calls))
    tail, dense_tail = sum(losses[-3:]) / 3, sum(own_losses[-3:]) / 3
    check(abs(tail - dense_tail) < 0.05 * dense_tail,
          "ScaleCom follows dense: last 3 steps %.4f vs %.4f"
          % (tail, dense_tail))

    # The warm-up is the dense reduce-scatter: the same bits for its steps.
    net = network()
    fsdp2.scalecom(net, ratio=ratio, min_elements=min_elements,
                   warmup_steps=3, prefix="warm/")
    _, warm = train(net, steps=3)
    _, own3 = train(network(), steps=3)
    check(same(warm, own3), "warm-up steps = FSDP2's own")

    resume(rank)

    # Refusals, on every rank the same.
    for fields, what in ((dict(k=5), "k"), (dict(selection="chunk"),
                                            "chunk selection"),
                         (dict(wire="bf16"), "wire")):
        try:
            fsdp2.scalecom(network(), prefix="bad/", **fields)
            check(False, "%s accepted" % what)
        except ValueError as error:
            check(what in str(error), "refused %s: %s" % (what, error))
    try:
        fsdp2.dense(torch.nn.Linear(3, 3))
        check(False, "a model without fully_shard accepted")
    except ValueError as error:
        check("fully_shard" in str(error), "no FSDP module: %s" % error)

    dist.barrier()
    dist.destroy_process_group()
    print("rank %d: %s" % (rank, "FAIL %d" % len(failures) if failures
                           else "ok"), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

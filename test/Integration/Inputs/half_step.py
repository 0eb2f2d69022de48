"""A mixed-precision step (Inputs/half-step.mlir) on 2 ranks (half-step.sh).

f32 master weights, a bf16 or f16 gradient. Checks, bit for bit, over 4
steps:
  - dense: the update is the gradients' 16-bit values summed in float32,
    rounded once to the 16-bit type (what a 2-rank sum on the 16-bit wire
    gives) and halved, from a numpy reference written here;
  - scalecom (k = 40 of 2048, one dense warm-up step): the update and the
    f32 error-feedback memory equal those of the runtime's own
    gradcomm_scalecom_recipe_f32 with the same options and wire, run beside
    it on the widened gradient; and the compressed steps differ from dense;
  - local-topk (k = 40): the same against the runtime's own
    gradcomm_local_topk_all_gather_wire_f32 (update and f32 memory).
A 16-bit model's step (Inputs/half-replica-step.mlir: bf16 or f16 weight
and gradient), compiled with gossip (matching, mixing 1/2) or EASGD (alpha
1/4): the weight after each step, and the center, equal those of the
runtime's own gradcomm_gossip_exchange_wire_f32 or
gradcomm_elastic_average_wire_f32 run beside it on the widened local
update, bit for bit, with as many value bytes sent (16 bits each); and
the exchange changed the weight, over the same 4 steps.
A sharded mixed-precision step (Inputs/half-sharded-step.mlir: f32 master
shards, a bf16 or f16 gradient reduce-scattered in its 16 bits, the 16-bit
copy of the parameter all-gathered), compiled dense or with ScaleCom
(sharded-dense, sharded-scalecom): the master shard equals the numpy
reference (dense) or the runtime's own
gradcomm_scalecom_reduce_scatter_recipe_f32 with the same options and wire
(with the f32 memory), and the all-gathered parameter is the reference
rounded to the 16-bit type, bit for bit, over the same 4 steps.
Usage: half_step.py dense|scalecom|local-topk|gossip|easgd|sharded-dense|
                    sharded-scalecom bf16|f16 <libstep.so>
"""

import ctypes
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runner import CompiledStep  # noqa: E402
from gradcomm.runtime import WIRES, OpStats, RecipeOptions  # noqa: E402

STEPS = 4
SHAPE = (64, 32)
N = SHAPE[0] * SHAPE[1]


def fail(rank, message):
    print("rank %d: FAIL: %s" % (rank, message), flush=True)
    sys.exit(1)


def to_bf16(x):
    """float32 -> bf16 bits, rounding to nearest even."""
    bits = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & 1)
    return (rounded >> np.uint32(16)).astype(np.uint16)


def from_bf16(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def narrow(x, kind):
    return to_bf16(x) if kind == "bf16" else x.astype(np.float16)


def widen(x, kind):
    return from_bf16(x) if kind == "bf16" else x.astype(np.float32)


def gradient(rank, step, kind):
    rng = np.random.default_rng(100 * step + rank)
    return narrow(rng.standard_normal(SHAPE).astype(np.float32), kind)


def same_state(lib, rank, name):
    """Whether the step's f32 state `name` (N values) equals the reference
    state's, bit for bit."""
    values = []
    for state in (name, b"reference"):
        value = np.zeros(N, np.float32)
        if lib.gradcomm_state_read(state,
                                   value.ctypes.data_as(ctypes.c_void_p),
                                   ctypes.c_int64(N)) != 0:
            fail(rank, "no state %s" % state.decode())
        values.append(value)
    return np.array_equal(values[0], values[1])


def recipe_options(lib, kind):
    """The options the ScaleCom steps are compiled with: k = 40, one dense
    warm-up step, the values in the gradient's 16 bits."""
    options = RecipeOptions()
    lib.gradcomm_scalecom_options_init(ctypes.byref(options),
                                       ctypes.c_int64(40))
    options.warmup_steps = 1
    options.wire = WIRES[kind]
    return options


def exchange_reference(lib, mode, kind, x):
    """The runtime's own 16-bit-wire exchange of x (float32, in place) on
    the reference state, with the options the step was compiled with."""
    pointer = x.ctypes.data_as(ctypes.c_void_p)
    if mode == "gossip":  # GRADCOMM_SCHEDULE_MATCHING = 0, seed 0
        return lib.gradcomm_gossip_exchange_wire_f32(
            b"reference", pointer, ctypes.c_int64(N), 0, ctypes.c_float(0.5),
            ctypes.c_uint64(0), ctypes.c_int64(1), WIRES[kind])
    return lib.gradcomm_elastic_average_wire_f32(
        b"reference", pointer, ctypes.c_int64(N), ctypes.c_float(0.25),
        ctypes.c_int64(1), WIRES[kind])


def replica_step(mode, kind, library):
    """gossip or easgd on a 16-bit weight (half-replica-step.mlir)."""
    manifest = {
        "function": "step",
        "inputs": [{"name": "w", "shape": list(SHAPE), "dtype": kind},
                   {"name": "g", "shape": list(SHAPE), "dtype": kind}],
        # A new buffer: the 16-bit update is not written over w.
        "outputs": [{"name": "w", "shape": list(SHAPE), "dtype": kind}],
    }
    step = CompiledStep(library, manifest)
    rank = step.rank()
    lib = step.library
    w = narrow(np.linspace(-1, 1, N, dtype=np.float32).reshape(SHAPE), kind)
    reference = w.copy()
    for t in range(STEPS):
        g = gradient(rank, t, kind)
        w = step({"w": w, "g": g})["w"]
        local = narrow(widen(reference, kind) - widen(g, kind), kind)
        x = np.ascontiguousarray(widen(local, kind))
        if exchange_reference(lib, mode, kind, x) != 0:
            fail(rank, "the runtime's %s call failed" % mode)
        reference = narrow(x, kind)
        if not np.array_equal(w, reference):
            fail(rank, "step %d: the weights differ from the runtime's %s"
                 % (t, mode))
        if np.array_equal(w, local):
            fail(rank, "step %d: the %s exchange changed nothing" % (t, mode))
    # The same bytes as the reference's 16-bit wire: the step's values
    # travelled in 16 bits too.
    sent = []
    for name in (b"w_" + mode.encode(), b"reference"):
        stats = OpStats()
        if lib.gradcomm_stats_get(name, ctypes.byref(stats)) != 0:
            fail(rank, "no counters for %s" % name.decode())
        sent.append(stats.value_bytes_sent)
    if sent[0] != sent[1] or sent[0] == 0:
        fail(rank, "the step sent %d value bytes, the 16-bit reference %d"
             % tuple(sent))
    if mode == "easgd" and not same_state(lib, rank, b"w_easgd"):
        fail(rank, "the f32 center differs from the runtime's")
    step.close()
    print("rank %d: %s %s ok" % (rank, mode, kind), flush=True)


def sharded_step(mode, kind, library):
    """sharded-dense or sharded-scalecom (half-sharded-step.mlir)."""
    rows = SHAPE[0] // 2
    manifest = {
        "function": "step",
        "inputs": [{"name": "w", "shape": [rows, SHAPE[1]], "dtype": "f32"},
                   {"name": "g", "shape": list(SHAPE), "dtype": kind}],
        "outputs": [{"name": "w", "shape": [rows, SHAPE[1]], "dtype": "f32",
                     "aliases_input": "w"},
                    {"name": "whole", "shape": list(SHAPE), "dtype": kind}],
    }
    step = CompiledStep(library, manifest)
    rank = step.rank()
    lib = step.library
    mine = slice(rank * rows, (rank + 1) * rows)
    full = np.linspace(-1, 1, N, dtype=np.float32).reshape(SHAPE)
    w = full[mine].copy()
    options = recipe_options(lib, kind)
    dense_differs = False
    for t in range(STEPS):
        out = step({"w": w, "g": gradient(rank, t, kind)})
        w = out["w"]
        total = widen(gradient(0, t, kind), kind) + \
            widen(gradient(1, t, kind), kind)
        dense = widen(narrow(total, kind), kind) / np.float32(2)
        if mode == "sharded-dense":
            update = dense
        else:
            # The runtime's own compressed reduce-scatter, every rank's
            # shard gathered here to update the whole reference.
            wide = np.ascontiguousarray(widen(gradient(rank, t, kind), kind))
            shard = np.zeros((rows, SHAPE[1]), np.float32)
            if lib.gradcomm_scalecom_reduce_scatter_recipe_f32(
                    b"reference", wide.ctypes.data_as(ctypes.c_void_p),
                    shard.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(N),
                    ctypes.byref(options), 1) != 0:
                fail(rank, "the runtime's compressed reduce-scatter failed")
            update = np.zeros(SHAPE, np.float32)
            update[mine] = widen(narrow(shard, kind), kind)
            others = np.zeros(SHAPE, np.float32)
            if lib.gradcomm_all_gather_f32(
                    b"reference.gather",
                    update[mine].copy().ctypes.data_as(ctypes.c_void_p),
                    others.ctypes.data_as(ctypes.c_void_p),
                    ctypes.c_int64(N)) != 0:
                fail(rank, "the reference's all-gather failed")
            update = others
            dense_differs |= not np.array_equal(update, dense)
        full = full - update
        if not np.array_equal(w, full[mine]):
            fail(rank, "step %d: the master shard differs from the reference "
                 "by %g" % (t, np.abs(w - full[mine]).max()))
        if not np.array_equal(out["whole"], narrow(full, kind)):
            fail(rank, "step %d: the all-gathered %s parameter differs"
                 % (t, kind))
        if mode != "sharded-dense" and not same_state(lib, rank, b"w_grad"):
            fail(rank, "step %d: the memory differs from the runtime's" % t)
    if mode != "sharded-dense" and not dense_differs:
        fail(rank, "%s with k = 40 of 2048 gave the dense result" % mode)
    # The values travelled in 16 bits: half of the 2 N bytes of each
    # 16-bit buffer leave each of the 2 ranks per dense call, and the
    # compressed step sends what the reference's 16-bit wire sends.
    def sent(name):
        stats = OpStats()
        if lib.gradcomm_stats_get(name, ctypes.byref(stats)) != 0:
            fail(rank, "no counters for %s" % name.decode())
        return stats.value_bytes_sent
    if mode == "sharded-dense":
        expected = {b"w_grad": STEPS * N, b"step_all_gather_1": STEPS * N}
    else:
        expected = {b"w_grad": sent(b"reference"),
                    b"step_all_gather_2": STEPS * N}
    for name, value in expected.items():
        if sent(name) != value:
            fail(rank, "%s sent %d value bytes, not %d"
                 % (name.decode(), sent(name), value))
    step.close()
    print("rank %d: %s %s ok" % (rank, mode, kind), flush=True)


def main():
    mode, kind, library = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode in ("gossip", "easgd"):
        return replica_step(mode, kind, library)
    if mode.startswith("sharded-"):
        return sharded_step(mode, kind, library)
    manifest = {
        "function": "step",
        "inputs": [{"name": "w", "shape": list(SHAPE), "dtype": "f32"},
                   {"name": "g", "shape": list(SHAPE), "dtype": kind}],
        "outputs": [{"name": "w", "shape": list(SHAPE), "dtype": "f32",
                     "aliases_input": "w"}],
    }
    step = CompiledStep(library, manifest)
    rank = step.rank()
    lib = step.library
    w = np.linspace(-1, 1, N, dtype=np.float32).reshape(SHAPE)
    reference = w.copy()
    options = recipe_options(lib, kind)
    dense_differs = False
    for t in range(STEPS):
        g = gradient(rank, t, kind)
        w = step({"w": w, "g": g})["w"]
        if mode == "dense":
            total = widen(gradient(0, t, kind), kind) + \
                widen(gradient(1, t, kind), kind)
            update = widen(narrow(total, kind), kind) / np.float32(2)
        else:
            wide = np.ascontiguousarray(widen(g, kind))
            out = np.zeros(SHAPE, np.float32)
            if mode == "scalecom":
                status = lib.gradcomm_scalecom_recipe_f32(
                    b"reference", wide.ctypes.data_as(ctypes.c_void_p),
                    out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(N),
                    ctypes.byref(options), 1)
            else:  # local top-k, k = 40, average, the 16-bit wire
                status = lib.gradcomm_local_topk_all_gather_wire_f32(
                    b"reference", wide.ctypes.data_as(ctypes.c_void_p),
                    out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(N),
                    ctypes.c_int64(40), WIRES[kind], 1, None)
            if status != 0:
                fail(rank, "the runtime's recipe call failed: %d" % status)
            update = widen(narrow(out, kind), kind)
            total = widen(gradient(0, t, kind), kind) + \
                widen(gradient(1, t, kind), kind)
            dense = widen(narrow(total, kind), kind) / np.float32(2)
            dense_differs |= not np.array_equal(update, dense)
        reference = reference - update
        if not np.array_equal(w, reference):
            fail(rank, "step %d: the weights differ from the reference by %g"
                 % (t, np.abs(w - reference).max()))
        if mode != "dense" and not same_state(lib, rank, b"w_grad"):
            fail(rank, "step %d: the memory differs from the runtime's" % t)
    if mode != "dense" and not dense_differs:
        fail(rank, "%s with k = 40 of 2048 gave the dense result" % mode)
    step.close()
    print("rank %d: %s %s ok" % (rank, mode, kind), flush=True)


if __name__ == "__main__":
    main()

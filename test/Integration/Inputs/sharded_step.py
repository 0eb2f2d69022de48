"""A sharded step (Inputs/sharded-step.mlir) run on n ranks (sharded-step.sh).

Each rank holds rows [r * 8 / n, (r + 1) * 8 / n) of an 8x32 parameter and
its whole local gradient. The gradients are small integers and the
reductions average over 2 or 4 ranks with beta 1/2, so every value is exact
in float32 whatever order the runtime adds in: the checks are bit for bit
against a numpy reference written here, independent of the runtime.
  - dense: each shard equals the shard of the averaged gradient step;
  - scalecom: two dense warm-up steps (memory untouched), then CLT-k with
    k = 24 (the cyclic leader's exact top-k of m + g, ties to the lower
    index) and the low-pass memory update. Each rank's shard equals the
    reference's shard, each rank's memory the reference's memory of that
    rank, and the shards put together (the step's own all-gather) equal
    the replicated step a ScaleCom all-reduce would give every replica (the
    shards stay consistent).
  - momentum: scalecom with momentum correction 0.5 (compiled with
    --momentum=0.5): each rank's velocity u = 0.5 u + g is what is
    communicated (dense warm-up steps included) and is zeroed at the sent
    indices after a compressed step; the velocity state is checked too.
In every mode the step all-gathers the updated parameter: on every rank it
must be the whole reference parameter.
Usage: sharded_step.py dense|scalecom|momentum <libstep.so> <ranks>
"""

import ctypes
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runner import CompiledStep  # noqa: E402

STEPS = 6
WARMUP = 2
K = 24
BETA = np.float32(0.5)
ROWS, COLUMNS = 8, 32


def fail(rank, message):
    print("rank %d: FAIL: %s" % (rank, message), flush=True)
    sys.exit(1)


def gradient(rank, step):
    rng = np.random.default_rng(1000 * step + rank)
    return rng.integers(-30, 31, size=(ROWS, COLUMNS)).astype(np.float32)


def scalecom_reference(ranks, momentum=None):
    """Per step: the averaged (compressed) gradient every replica would
    apply, each rank's memory and each rank's velocity (with momentum
    correction; else zeros) after the step."""
    memory = [np.zeros(ROWS * COLUMNS, dtype=np.float32) for _ in range(ranks)]
    velocity = [np.zeros(ROWS * COLUMNS, dtype=np.float32)
                for _ in range(ranks)]
    for t in range(STEPS):
        grads = [gradient(r, t).reshape(-1) for r in range(ranks)]
        if momentum is not None:
            # u' = momentum u + g is communicated (0.5: exact in float32).
            velocity = [momentum * u + g for u, g in zip(velocity, grads)]
            grads = [u.copy() for u in velocity]
        if t < WARMUP:
            total = np.zeros(ROWS * COLUMNS, dtype=np.float32)
            for g in grads:
                total = total + g
            yield (total / np.float32(ranks), [m.copy() for m in memory],
                   [u.copy() for u in velocity])
            continue
        leader = t % ranks
        p_leader = memory[leader] + grads[leader]
        order = np.argsort(-np.abs(p_leader), kind="stable")
        indices = np.sort(order[:K])
        total = np.zeros(ROWS * COLUMNS, dtype=np.float32)
        for r in range(ranks):
            p = memory[r] + grads[r]
            total[indices] += p[indices]
            sent = np.zeros_like(p)
            sent[indices] = p[indices]
            memory[r] = ((np.float32(1) - BETA) * memory[r]
                         + BETA * (p - sent))
            velocity[r][indices] = 0  # factor masking
        yield (total / np.float32(ranks), [m.copy() for m in memory],
               [u.copy() for u in velocity])


def read_state(step, rank, name):
    values = np.zeros(ROWS * COLUMNS, dtype=np.float32)
    if step.library.gradcomm_state_read(
            ctypes.create_string_buffer(name),
            values.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_int64(values.size)) != 0:
        fail(rank, "no state '%s'" % name.decode())
    return values


def main():
    mode, library, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    shard_rows = ROWS // ranks
    manifest = {
        "function": "step",
        "inputs": [{"name": "w", "shape": [shard_rows, COLUMNS],
                    "dtype": "f32"},
                   {"name": "g", "shape": [ROWS, COLUMNS], "dtype": "f32"}],
        "outputs": [{"name": "w", "shape": [shard_rows, COLUMNS],
                     "dtype": "f32", "aliases_input": "w"},
                    {"name": "whole", "shape": [ROWS, COLUMNS],
                     "dtype": "f32"}],
    }
    step = CompiledStep(library, manifest)
    rank = step.rank()
    rows = slice(rank * shard_rows, (rank + 1) * shard_rows)
    full = np.arange(ROWS * COLUMNS, dtype=np.float32).reshape(ROWS, COLUMNS)
    w = full[rows].copy()
    ref_full = full.copy()
    if mode == "dense":
        for t in range(STEPS):
            out = step({"w": w, "g": gradient(rank, t)})
            w = out["w"]
            total = np.zeros((ROWS, COLUMNS), dtype=np.float32)
            for r in range(ranks):
                total = total + gradient(r, t)
            ref_full = ref_full - total / np.float32(ranks)
            if not np.array_equal(w, ref_full[rows]):
                fail(rank, "step %d: the shard differs from the reference "
                     "by %g" % (t, np.abs(w - ref_full[rows]).max()))
            if not np.array_equal(out["whole"], ref_full):
                fail(rank, "step %d: the all-gathered parameter differs"
                     % t)
    else:
        momentum = np.float32(0.5) if mode == "momentum" else None
        for t, (update, memories, velocities) in enumerate(
                scalecom_reference(ranks, momentum)):
            out = step({"w": w, "g": gradient(rank, t)})
            w = out["w"]
            ref_full = ref_full - update.reshape(ROWS, COLUMNS)
            if not np.array_equal(w, ref_full[rows]):
                fail(rank, "step %d: the shard differs from the reference "
                     "by %g" % (t, np.abs(w - ref_full[rows]).max()))
            memory = read_state(step, rank, b"w_grad")
            if not np.array_equal(memory, memories[rank]):
                fail(rank, "step %d: the memory differs from the reference "
                     "by %g" % (t, np.abs(memory - memories[rank]).max()))
            if momentum is not None and not np.array_equal(
                    read_state(step, rank, b"w_grad.velocity"),
                    velocities[rank]):
                fail(rank, "step %d: the velocity differs from the "
                     "reference" % t)
            if t < WARMUP and memory.any():
                fail(rank, "step %d: a warm-up step wrote the memory" % t)
            # The shards put together (the step's all-gather): the
            # replicated step.
            if not np.array_equal(out["whole"], ref_full):
                fail(rank, "step %d: the shards put together differ from the "
                     "replicated step" % t)
        if np.array_equal(ref_full, full - sum(
                sum(gradient(r, t) for r in range(ranks)) / np.float32(ranks)
                for t in range(STEPS))):
            fail(rank, "ScaleCom with k = 24 of 256 gave the dense result")
    step.close()
    print("rank %d: %s ok" % (rank, mode), flush=True)


if __name__ == "__main__":
    main()

"""Momentum correction in a compiled step (momentum-step.sh), 2 ranks.

Two checks over 6 steps, for a 64x32 weight (compressed by the policy) and
a 16-element bias (kept dense by it):
  - dense: Inputs/plain-step.mlir compiled with `--momentum=0.9` and a
    warm-up longer than the run computes momentum SGD in the runtime. Its
    weights are held against Inputs/momentum-step.mlir (the momentum buffer
    in the graph, compiled dense) and both against a float64 reference: the
    runtime's error may be at most twice the in-graph step's (plus 2^-20),
    the project's numerics criterion. A runtime that ignored momentum is
    off by the whole velocity.
  - compressed: the same plain step compiled with `--momentum=0.9
    --warmup-steps=2` equals, bit for bit, the runtime's own
    gradcomm_scalecom_recipe_f32 with momentum 0.9 (k = 21, two dense
    warm-up steps; the bias with `dense`) run beside it; and the compressed
    steps differ from dense momentum SGD.
Usage: momentum_step.py dense <libplain.so> <libmomentum.so>
       momentum_step.py compressed <libplain.so>
"""

import ctypes
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runner import CompiledStep  # noqa: E402
from gradcomm.runtime import RecipeOptions  # noqa: E402

STEPS = 6
MOMENTUM = 0.9
SHAPES = {"w": (64, 32), "b": (16,)}


def fail(rank, message):
    print("rank %d: FAIL: %s" % (rank, message), flush=True)
    sys.exit(1)


def entry(name, shape, alias=False):
    e = {"name": name, "shape": list(shape), "dtype": "f32"}
    if alias:
        e["aliases_input"] = name
    return e


def plain_manifest():
    inputs, outputs = [], []
    for p, shape in SHAPES.items():
        inputs += [entry(p, shape), entry("g" + p, shape)]
        outputs.append(entry(p, shape, alias=True))
    return {"function": "step", "inputs": inputs, "outputs": outputs}


def momentum_manifest():
    inputs, outputs = [], []
    for p, shape in SHAPES.items():
        inputs += [entry(p, shape), entry(p + "buf", shape),
                   entry("g" + p, shape)]
        outputs += [entry(p, shape, alias=True),
                    entry(p + "buf", shape, alias=True)]
    return {"function": "step", "inputs": inputs, "outputs": outputs}


def gradient(rank, step, p):
    rng = np.random.default_rng(1000 * step + 10 * rank + len(p))
    return rng.standard_normal(SHAPES[p]).astype(np.float32) * 0.1


def initial(p):
    n = int(np.prod(SHAPES[p]))
    return np.linspace(-1, 1, n, dtype=np.float32).reshape(SHAPES[p])


def dense(plain_library, momentum_library):
    plain = CompiledStep(plain_library, plain_manifest())
    graph = CompiledStep(momentum_library, momentum_manifest())
    rank = plain.rank()
    x = {p: initial(p) for p in SHAPES}
    y = dict(x)
    ybuf = {p: np.zeros(SHAPES[p], np.float32) for p in SHAPES}
    exact = {p: initial(p).astype(np.float64) for p in SHAPES}
    velocity = {p: np.zeros(SHAPES[p]) for p in SHAPES}
    for t in range(STEPS):
        x = plain({**x, **{"g" + p: gradient(rank, t, p) for p in SHAPES}})
        out = graph({**y, **{p + "buf": ybuf[p] for p in SHAPES},
                     **{"g" + p: gradient(rank, t, p) for p in SHAPES}})
        y = {p: out[p] for p in SHAPES}
        ybuf = {p: out[p + "buf"] for p in SHAPES}
        for p in SHAPES:
            mean = (gradient(0, t, p).astype(np.float64) +
                    gradient(1, t, p).astype(np.float64)) / 2
            velocity[p] = MOMENTUM * velocity[p] + mean
            exact[p] = exact[p] - velocity[p]
            runtime_error = np.abs(x[p] - exact[p]).max()
            graph_error = np.abs(y[p] - exact[p]).max()
            if runtime_error > 2 * graph_error + 2.0 ** -20:
                fail(rank, "step %d, %s: the runtime's momentum is %g from "
                     "float64, the in-graph step's %g"
                     % (t, p, runtime_error, graph_error))
    print("rank %d: dense momentum within %g of float64 (in-graph %g)"
          % (rank, max(np.abs(x[p] - exact[p]).max() for p in SHAPES),
             max(np.abs(y[p] - exact[p]).max() for p in SHAPES)), flush=True)
    plain.close()
    graph.close()


def compressed(plain_library):
    step = CompiledStep(plain_library, plain_manifest())
    rank = step.rank()
    lib = step.library
    options = {}
    for p, k in (("w", 21), ("b", 16)):
        o = RecipeOptions()
        lib.gradcomm_scalecom_options_init(ctypes.byref(o), ctypes.c_int64(k))
        o.warmup_steps = 2 if p == "w" else 0
        o.momentum = MOMENTUM
        o.dense = 1 if p == "b" else 0
        options[p] = o
    x = {p: initial(p) for p in SHAPES}
    reference = dict(x)
    dense_weight = initial("w")
    dense_velocity = np.zeros(SHAPES["w"], np.float32)
    for t in range(STEPS):
        grads = {p: gradient(rank, t, p) for p in SHAPES}
        x = step({**x, **{"g" + p: grads[p] for p in SHAPES}})
        for p in SHAPES:
            out = np.zeros(SHAPES[p], np.float32)
            status = lib.gradcomm_scalecom_recipe_f32(
                ("reference_" + p).encode(),
                grads[p].ctypes.data_as(ctypes.c_void_p),
                out.ctypes.data_as(ctypes.c_void_p),
                ctypes.c_int64(grads[p].size), ctypes.byref(options[p]), 1)
            if status != 0:
                fail(rank, "the runtime's recipe call failed: %d" % status)
            reference[p] = reference[p] - out
            if not np.array_equal(x[p], reference[p]):
                fail(rank, "step %d, %s: differs from the runtime's recipe "
                     "by %g" % (t, p, np.abs(x[p] - reference[p]).max()))
        mean = (gradient(0, t, "w") + gradient(1, t, "w")) / np.float32(2)
        dense_velocity = np.float32(MOMENTUM) * dense_velocity + mean
        dense_weight = dense_weight - dense_velocity
    # After the warm-up the weight's update sends 21 of 2048 values: it is
    # no longer dense momentum SGD's.
    if np.allclose(x["w"], dense_weight, rtol=0, atol=1e-3):
        fail(rank, "the compressed weight follows dense momentum SGD")
    step.close()
    print("rank %d: compressed momentum equals the runtime's recipe"
          % rank, flush=True)


def main():
    if sys.argv[1] == "dense":
        dense(sys.argv[2], sys.argv[3])
    else:
        compressed(sys.argv[2])


if __name__ == "__main__":
    main()

"""A mixed-precision step (Inputs/half-step.mlir) on 2 ranks (half-step.sh).

f32 master weights, a bf16 or f16 gradient. Checks, bit for bit, over 4
steps:
  - dense: the update is the gradients' 16-bit values summed in float32,
    rounded once to the 16-bit type (what a 2-rank sum on the 16-bit wire
    gives) and halved, from a numpy reference written here;
  - scalecom (k = 40 of 2048, one dense warm-up step): the update and the
    f32 error-feedback memory equal those of the runtime's own
    gradcomm_scalecom_recipe_f32 with the same options and wire, run beside
    it on the widened gradient; and the compressed steps differ from dense.
Usage: half_step.py dense|scalecom bf16|f16 <libstep.so>
"""

import ctypes
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "..", "python"))

from gradcomm.runner import CompiledStep  # noqa: E402
from gradcomm.runtime import WIRES, RecipeOptions  # noqa: E402

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


def main():
    mode, kind, library = sys.argv[1], sys.argv[2], sys.argv[3]
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
    options = RecipeOptions()
    lib.gradcomm_scalecom_options_init(ctypes.byref(options),
                                       ctypes.c_int64(40))
    options.warmup_steps = 1
    options.wire = WIRES[kind]
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
            status = lib.gradcomm_scalecom_recipe_f32(
                b"reference", wide.ctypes.data_as(ctypes.c_void_p),
                out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(N),
                ctypes.byref(options), 1)
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
        if mode == "scalecom":
            memories = []
            for name in (b"w_grad", b"reference"):
                memory = np.zeros(N, np.float32)
                if lib.gradcomm_state_read(
                        name, memory.ctypes.data_as(ctypes.c_void_p),
                        ctypes.c_int64(N)) != 0:
                    fail(rank, "no state %s" % name.decode())
                memories.append(memory)
            if not np.array_equal(memories[0], memories[1]):
                fail(rank, "step %d: the memory differs from the runtime's"
                     % t)
    if mode == "scalecom" and not dense_differs:
        fail(rank, "ScaleCom with k = 40 of 2048 gave the dense result")
    step.close()
    print("rank %d: %s %s ok" % (rank, mode, kind), flush=True)


if __name__ == "__main__":
    main()

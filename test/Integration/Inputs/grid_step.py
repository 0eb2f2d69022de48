"""A step compiled for a 2x2 grid, run on 4 ranks (grid-step.sh).

Rank r sits at row r // 2, column r % 2. The weight gradient is averaged
along axis 0 (the two ranks of a column), the bias gradient summed along
axis 1 (the two ranks of a row) and over both axes (every rank). Checks:
  - dense: 5 steps equal a numpy reference of the three groups bit for bit
    (float32, sums in rank order, as the runtime's two-rank sums are);
  - scalecom (k < N for the weight): the two ranks of a column end with the
    same weights and the columns differ (each column compresses its own
    gradients), the error-feedback state counts every step, and the bias
    still equals the reference.
Usage: grid_step.py dense|scalecom <libstep.so>
"""

import ctypes
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runner import CompiledStep  # noqa: E402

STEPS = 5
MANIFEST = {
    "function": "step",
    "inputs": [{"name": "w", "shape": [256], "dtype": "f32"},
               {"name": "b", "shape": [16], "dtype": "f32"},
               {"name": "gw", "shape": [256], "dtype": "f32"},
               {"name": "gb", "shape": [16], "dtype": "f32"}],
    # gradcomm-compile updates every result in place
    # (gradcomm-drop-in-place-results): the sum over every rank lands in
    # the bias gradient's buffer.
    "outputs": [{"name": "w", "shape": [256], "dtype": "f32",
                 "aliases_input": "w"},
                {"name": "b", "shape": [16], "dtype": "f32",
                 "aliases_input": "b"},
                {"name": "total", "shape": [16], "dtype": "f32",
                 "aliases_input": "gb"}],
}


def fail(rank, message):
    print("rank %d: FAIL: %s" % (rank, message), flush=True)
    sys.exit(1)


def gradients(rank, step):
    rng = np.random.default_rng(1000 * step + rank)
    return (rng.standard_normal(256).astype(np.float32),
            rng.standard_normal(16).astype(np.float32))


def main():
    mode, library = sys.argv[1], sys.argv[2]
    step = CompiledStep(library, MANIFEST)
    rank = step.rank()
    row, column = rank // 2, rank % 2
    w = np.linspace(-1, 1, 256, dtype=np.float32)
    b = np.zeros(16, dtype=np.float32)
    ref_w, ref_b = w.copy(), b.copy()
    for t in range(STEPS):
        gw, gb = gradients(rank, t)
        out = step({"w": w, "b": b, "gw": gw, "gb": gb})
        w, b = out["w"], out["b"]
        # The groups' members, in the order of their coordinates.
        in_column = [gradients(r, t) for r in (column, 2 + column)]
        in_row = [gradients(r, t) for r in (2 * row, 2 * row + 1)]
        everyone = [gradients(r, t) for r in range(4)]
        ref_w = ref_w - (in_column[0][0] + in_column[1][0]) / np.float32(2)
        ref_b = ref_b - (in_row[0][1] + in_row[1][1])
        total = np.zeros(16, dtype=np.float32)
        for _, g in everyone:
            total = total + g
        if not np.allclose(out["total"], total, rtol=1e-6, atol=1e-6):
            fail(rank, "step %d: the sum over every rank is off by %g"
                 % (t, np.abs(out["total"] - total).max()))
        if not np.array_equal(b, ref_b):
            fail(rank, "step %d: the row sum differs from the reference by "
                 "%g" % (t, np.abs(b - ref_b).max()))
        if mode == "dense" and not np.array_equal(w, ref_w):
            fail(rank, "step %d: the column average differs from the "
                 "reference by %g" % (t, np.abs(w - ref_w).max()))
    if mode == "scalecom":
        counter = ctypes.c_uint64()
        if step.library.gradcomm_state_step(b"w_grad",
                                            ctypes.byref(counter)) != 0:
            fail(rank, "no state 'w_grad'")
        if counter.value != STEPS:
            fail(rank, "the state counted %d steps, not %d"
                 % (counter.value, STEPS))
        # Compare the weights across the job: equal in a column, different
        # across columns.
        everyone = np.zeros((4, 256), dtype=np.float32)
        everyone[rank] = w
        step.sum_over_ranks(everyone.reshape(-1), name=b"gather_weights")
        same = np.array_equal(everyone[column], everyone[2 + column])
        other = np.array_equal(everyone[column], everyone[1 - column])
        if not same or other:
            fail(rank, "column %d: members equal %s, equal to the other "
                 "column %s" % (column, same, other))
        if np.array_equal(w, ref_w):
            fail(rank, "ScaleCom with k = 64 of 256 gave the dense result")
    step.close()
    print("rank %d: %s ok" % (rank, mode), flush=True)


if __name__ == "__main__":
    main()

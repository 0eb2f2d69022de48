"""A compiled step whose runtime calls fail, run on 2 ranks
(failing-step.sh). Checks, on every rank:
  - on-error=return: a NaN gradient on rank 1 under the `error` policy
    raises GradCommError(NON_FINITE) on both ranks with the same message,
    the ScaleCom state's step counter does not move, and the parameters the
    step updates in place keep their values (the writes after the failed
    call are guarded); the next finite step runs normally;
  - the `skip` policy: the step returns OK; the operation whose input is
    not finite reduces to zeros (its parameter keeps its value, the
    ScaleCom state its step), the other operations run; counted in
    skipped_non_finite;
  - a finite gradient too large for the sum of 2 ranks counts as
    non-finite (FLT_MAX / 4 < |g|);
  - the `propagate` policy: NaN reaches the parameters of every rank.
Usage: failing_step.py <libstep.so>
"""

import ctypes
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))

from gradcomm.runner import CompiledStep, describe  # noqa: E402
from gradcomm.runtime import GradCommError, NON_FINITE, OpStats  # noqa: E402

MANIFEST = {
    "function": "step",
    "inputs": [{"name": "w", "shape": [64], "dtype": "f32"},
               {"name": "b", "shape": [4], "dtype": "f32"},
               {"name": "gw", "shape": [64], "dtype": "f32"},
               {"name": "gb", "shape": [4], "dtype": "f32"}],
    "outputs": [{"name": "w", "shape": [64], "dtype": "f32",
                 "aliases_input": "w"},
                {"name": "b", "shape": [4], "dtype": "f32",
                 "aliases_input": "b"}],
}


def fail(rank, message):
    print("rank %d: FAIL: %s" % (rank, message), flush=True)
    sys.exit(1)


def main():
    step = CompiledStep(sys.argv[1], MANIFEST)
    lib = step.library
    rank = step.rank()
    rng = np.random.default_rng(7 + rank)

    def gradients():
        return (rng.standard_normal(64).astype(np.float32),
                rng.standard_normal(4).astype(np.float32))

    def state_step():
        value = ctypes.c_uint64()
        if lib.gradcomm_state_step(b"w_grad", ctypes.byref(value)) != 0:
            fail(rank, "gradcomm_state_step('w_grad') failed")
        return value.value

    def call_in_place(w, b, gw, gb):
        """Calls the C entry point on our own buffers, as a C trainer would:
        w and b are updated in place. Returns the step's status."""
        descriptors = [describe(a, "f32") for a in (w, b, gw, gb)]
        step.function(*[ctypes.byref(d) for d in descriptors])
        return lib.gradcomm_take_step_status()

    w = np.linspace(-1, 1, 64).astype(np.float32)
    b = np.ones(4, np.float32)
    gw, gb = gradients()
    if call_in_place(w, b, gw, gb) != 0:
        fail(rank, "a finite step failed")
    if state_step() != 1:
        fail(rank, "state step %d after one step" % state_step())

    # error policy (the default): NaN on rank 1 only.
    gw, gb = gradients()
    if rank == 1:
        gw[5] = np.nan
    before_w, before_b = w.copy(), b.copy()
    status = call_in_place(w, b, gw, gb)
    if status != NON_FINITE:
        fail(rank, "status %d for a NaN gradient, expected %d"
             % (status, NON_FINITE))
    message = lib.gradcomm_last_error().decode()
    if "non-finite input on rank 1" not in message:
        fail(rank, "message %r does not name rank 1" % message)
    if not (np.array_equal(w, before_w) and np.array_equal(b, before_b)):
        fail(rank, "a failed step changed the parameters in place")
    if state_step() != 1:
        fail(rank, "a failed step advanced the ScaleCom state")
    # The same through the Python runner: an exception on every rank.
    try:
        step({"w": w, "b": b, "gw": gw, "gb": gb})
        fail(rank, "the runner returned for a NaN gradient")
    except GradCommError as error:
        if error.status != NON_FINITE:
            fail(rank, "runner raised status %d" % error.status)
    # The status was taken: the next finite step runs.
    gw, gb = gradients()
    if call_in_place(w, b, gw, gb) != 0:
        fail(rank, "the step after a failed one failed: "
             + lib.gradcomm_last_error().decode())
    if state_step() != 2 or np.array_equal(w, before_w):
        fail(rank, "the step after a failed one did not run")

    # A finite gradient whose 2-rank sum could overflow.
    gw, gb = gradients()
    if rank == 0:
        gb[0] = 2e38
    before_b = b.copy()
    if call_in_place(w, b, gw, gb) != NON_FINITE or \
            not np.array_equal(b, before_b):
        fail(rank, "a gradient of 2e38 was reduced")

    # skip: each operation with a non-finite input reduces to zeros and
    # changes no state; the others run.
    step.set_nonfinite_policy("skip")
    gw, gb = gradients()
    if rank == 1:
        gb[2] = np.inf
    before_w, before_b = w.copy(), b.copy()
    if call_in_place(w, b, gw, gb) != 0:
        fail(rank, "skip policy: status not OK")
    if not np.array_equal(b, before_b) or np.array_equal(w, before_w):
        fail(rank, "skip policy: b moved or w did not")
    gw, gb = gradients()
    if rank == 1:
        gw[9] = np.nan
    before_w, before_b = w.copy(), b.copy()
    if call_in_place(w, b, gw, gb) != 0:
        fail(rank, "skip policy: status not OK")
    if not np.array_equal(w, before_w) or np.array_equal(b, before_b):
        fail(rank, "skip policy: w moved or b did not")
    stats = OpStats()
    lib.gradcomm_stats_get(b"w_grad", ctypes.byref(stats))
    # Steps that advanced it: the first, the one after the failure, the
    # 2e38 one (ScaleCom runs before the dense call refuses) and the first
    # skip step.
    if stats.skipped_non_finite != 1 or state_step() != 4:
        fail(rank, "skip policy: %d skipped, state step %d"
             % (stats.skipped_non_finite, state_step()))

    # propagate: no scan, NaN reaches every rank's parameters.
    step.set_nonfinite_policy("propagate")
    gw, gb = gradients()
    if rank == 1:
        gb[3] = np.nan
    if call_in_place(w, b, gw, gb) != 0 or not np.isnan(b[3]):
        fail(rank, "propagate policy: NaN did not propagate")
    print("rank %d: ok" % rank, flush=True)
    step.close()


if __name__ == "__main__":
    main()

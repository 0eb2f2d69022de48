"""The simulated learners (gradcomm/runtime_learners.h) against the
runtime's multi-rank ops, bit for bit. Run under mpiexec with n ranks:
every rank makes every rank's gradients from one seed, calls the real op
with its own row, runs the n simulated learners on all the rows, and
compares what it received and its error-feedback memory with what the
simulation gives learner `rank`, step after step.

The ops are the ones the compiled path and the hooks call:
gradcomm_scalecom_f32 (compiled steps), gradcomm_scalecom_recipe_f32 (the
hook's recipe: dense warm-up, momentum correction, clipping; exact and
chunk selection), gradcomm_local_topk_all_gather_f32 and the dense
all-reduce, on a tensor small enough that the indices ride in the
agreement and one large enough for MPICH's long-vector all-reduce.
"""

import ctypes
import sys

import numpy as np

from gradcomm.runtime import REDUCTIONS, SELECTIONS, RecipeOptions, runtime

STEPS = 6


def pointer(array):
    return array.ctypes.data_as(ctypes.c_void_p)


def gradients(size, count, step, salt):
    """Every rank's gradient of `step`: (size, count) float32, wide-ranged
    so the selection has work to do."""
    rng = np.random.default_rng([salt, step, count])
    scale = np.exp(rng.normal(size=(size, 1)).astype(np.float32))
    return (rng.standard_normal((size, count), dtype=np.float32) * scale)


def options(rt, k, **fields):
    c = RecipeOptions()
    rt.library.gradcomm_scalecom_options_init(ctypes.byref(c), k)
    for name, value in fields.items():
        setattr(c, name, value)
    return c


class Check:
    def __init__(self, rt, rank, size):
        self.rt, self.rank, self.size = rt, rank, size
        self.group = ctypes.c_void_p()
        rt.call("gradcomm_learners_create", size, ctypes.byref(self.group))
        self.failures = 0

    def same(self, what, real, simulated):
        if real.tobytes() != simulated.tobytes():
            worst = np.max(np.abs(real.astype(np.float64) - simulated))
            print("FAIL rank %d: %s differs (max |diff| %g)"
                  % (self.rank, what, worst), file=sys.stderr)
            self.failures += 1

    def memories(self, name, count):
        real = np.empty(count, np.float32)
        simulated = np.empty(count, np.float32)
        self.rt.call("gradcomm_state_read", name, pointer(real), count)
        self.rt.call("gradcomm_learners_state_read", self.group, name,
                     self.rank, pointer(simulated), count)
        self.same(name.decode() + " memory", real, simulated)

    def scalecom(self, tag, count, k, recipe=None, plain_beta=None,
                 selection="exact"):
        name = ("%s.%d" % (tag, count)).encode()
        chunk = -(-count // k) if selection == "chunk" else 0
        if selection == "chunk":
            k = -(-count // chunk)
        c = recipe or options(self.rt, k, warmup_steps=0, beta=plain_beta)
        c.selection, c.chunk_size = SELECTIONS[selection], chunk
        for step in range(STEPS):
            rows = gradients(self.size, count, step, sum(tag.encode()))
            real = np.empty(count, np.float32)
            simulated = np.empty(count, np.float32)
            mine = np.ascontiguousarray(rows[self.rank])
            if plain_beta is not None:  # the compiled path's fused op
                self.rt.call("gradcomm_scalecom_f32", name, pointer(mine),
                             pointer(real), count, k, SELECTIONS[selection],
                             chunk, plain_beta, REDUCTIONS["average"])
            else:
                self.rt.call("gradcomm_scalecom_recipe_f32", name,
                             pointer(mine), pointer(real), count,
                             ctypes.byref(c), REDUCTIONS["average"])
            self.rt.call("gradcomm_learners_scalecom_recipe_f32", self.group,
                         name, pointer(rows), pointer(simulated), count,
                         ctypes.byref(c), REDUCTIONS["average"])
            self.same("%s step %d out" % (name.decode(), step), real,
                      simulated)
        self.memories(name, count)

    def local_topk(self, count, k):
        name = ("topk.%d" % count).encode()
        for step in range(STEPS):
            rows = gradients(self.size, count, step, 7)
            real = np.empty(count, np.float32)
            simulated = np.empty(count, np.float32)
            mine = np.ascontiguousarray(rows[self.rank])
            real_union, simulated_union = ctypes.c_int64(), ctypes.c_int64()
            self.rt.call("gradcomm_local_topk_all_gather_f32", name,
                         pointer(mine), pointer(real), count, k,
                         REDUCTIONS["average"], ctypes.byref(real_union))
            self.rt.call("gradcomm_learners_local_topk_f32", self.group,
                         name, pointer(rows), pointer(simulated), count, k,
                         REDUCTIONS["average"],
                         ctypes.byref(simulated_union))
            self.same("%s step %d out" % (name.decode(), step), real,
                      simulated)
            if real_union.value != simulated_union.value:
                print("FAIL rank %d: union %d != %d" % (
                    self.rank, real_union.value, simulated_union.value),
                    file=sys.stderr)
                self.failures += 1
        self.memories(name, count)

    def dense(self, count):
        name = ("dense.%d" % count).encode()
        rows = gradients(self.size, count, 0, 11) / np.float32(self.size)
        real = rows[self.rank].copy()  # reduced in place
        simulated = np.empty(count, np.float32)
        self.rt.call("gradcomm_dense_all_reduce_f32", name, pointer(real),
                     count, REDUCTIONS["sum"])
        self.rt.call("gradcomm_learners_dense_f32", self.group, name,
                     pointer(rows), pointer(simulated), count,
                     REDUCTIONS["sum"])
        self.same(name.decode(), real, simulated)


def main():
    rt = runtime()
    rt.call("gradcomm_init")
    rank, size = rt.rank(), rt.size()
    check = Check(rt, rank, size)
    # 1000: the indices fold into the agreement; 300000: MPICH's
    # long-vector all-reduce, the index broadcast of its own.
    for count in (1000, 300000):
        k = max(1, count // 100)
        check.dense(count)
        check.scalecom("plain", count, k, plain_beta=0.5)
        check.scalecom("plain-chunk", count, k, plain_beta=0.5,
                       selection="chunk")
        check.scalecom("recipe", count, k, recipe=options(
            rt, k, warmup_steps=2, momentum=0.9, clip=50.0))
        check.scalecom("recipe-ramp", count, k, recipe=options(
            rt, k, warmup_steps=4, warmup=1, warmup_start_ratio=4.0))
        check.scalecom("recipe-dense", count, k, recipe=options(
            rt, k, momentum=0.9, dense=1))
        check.local_topk(count, k)
    # Bad input is refused with the runtime's message, not a crash.
    try:
        rt.call("gradcomm_learners_create", 1, ctypes.byref(ctypes.c_void_p()))
        check.failures += 1
        print("FAIL: one learner accepted", file=sys.stderr)
    except Exception as error:  # GradCommError
        if "learners" not in str(error):
            check.failures += 1
            print("FAIL: unclear refusal: %s" % error, file=sys.stderr)
    rt.library.gradcomm_learners_destroy(check.group)
    if check.failures:
        sys.exit("learners_ops: %d mismatches on rank %d of %d"
                 % (check.failures, rank, size))
    print("rank %d of %d: ok: the simulated learners give the multi-rank "
          "ops' bits" % (rank, size), flush=True)


if __name__ == "__main__":
    main()

"""The runtime's side of the CUDA backend, on a machine without a GPU.

Loads a copy of libgradcomm_runtime.so that has the host-memory stand-in
(FakeCudaBackend.cpp) beside it as libgradcomm_runtime_cuda.so, runs every
operation on the CPU backend and then on the "CUDA" one, and checks the
same bits: outputs, memory read back through the backend, checkpoints
crossing backends, started forms polled to their end, skips under the
non-finite policy, refusals of what the backend does not run. The stand-in
aborts at shutdown if a buffer or completion leaked.

Usage: fake_cuda_backend.py <dir with libgradcomm_runtime.so> <work dir>
"""

import ctypes
import threading
import os
import sys

import numpy as np

from gradcomm.runtime import OpStats, RecipeOptions  # noqa: E402

OK, ERR_STATE, ERR_UNSUPPORTED = 0, 9, 10
CPU, CUDA = 0, 1
SUM, AVERAGE = 0, 1
EXACT, CHUNK = 0, 1
BF16, F16 = 1, 2  # gradcomm_wire
SKIP, ERROR = 1, 0

lib = ctypes.CDLL(os.path.join(sys.argv[1], "libgradcomm_runtime.so"))
work = sys.argv[2]
# MPI is this script's (MPICH, the runtime's dependency), so the runtime
# can be finalized and started again on either backend.
lib.MPI_Init(None, None)
lib.gradcomm_last_error.restype = ctypes.c_char_p
lib.gradcomm_memref_alloc.restype = ctypes.c_void_p
lib.gradcomm_memref_alloc.argtypes = [ctypes.c_size_t]
lib.gradcomm_free_buffer.argtypes = [ctypes.c_void_p]
lib.gradcomm_set_nonfinite_policy.argtypes = [ctypes.c_int]
i64, f32 = ctypes.c_int64, ctypes.c_float
Request = ctypes.c_void_p


def ptr(array):
    return array.ctypes.data_as(ctypes.c_void_p)


def check(status, what):
    if status != OK:
        raise AssertionError("%s: status %d: %s" %
                             (what, status, lib.gradcomm_last_error().decode()))


def expect(status, expected, what):
    if status != expected:
        raise AssertionError("%s: status %d, expected %d: %s" %
                             (what, status, expected,
                              lib.gradcomm_last_error().decode()))


def restart(backend):
    check(lib.gradcomm_finalize(), "finalize")
    check(lib.gradcomm_set_backend(backend), "set_backend %d" % backend)


def gradient(seed, n):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


def read_state(name, n):
    memory = np.zeros(n, np.float32)
    check(lib.gradcomm_state_read(name, ptr(memory), i64(n)), "state_read")
    return memory


def scalecom_steps(name, selection, started, n=20000, chunk=40, steps=3):
    """Fused ScaleCom steps on a new state; outputs, then the memory."""
    k = -(-n // chunk) if selection == CHUNK else 200
    results = []
    for step in range(steps):
        grad, out = gradient(step, n), np.full(n, 5.0, np.float32)
        args = (name, ptr(grad), ptr(out), i64(n), i64(k), selection,
                i64(chunk), f32(0.5), AVERAGE)
        if started:
            request = Request()
            check(lib.gradcomm_scalecom_start_f32(*args, ctypes.byref(request)),
                  "scalecom_start")
            # Held until the wait.
            expect(lib.gradcomm_scalecom_f32(*args), ERR_STATE,
                   "scalecom while held")
            check(lib.gradcomm_wait(ctypes.byref(request)), "wait")
        else:
            check(lib.gradcomm_scalecom_f32(*args), "scalecom")
        results.append(out)
    results.append(read_state(name, n))
    return results


def recipe_options(**fields):
    options = RecipeOptions()
    lib.gradcomm_scalecom_options_init(ctypes.byref(options), i64(200))
    for name, value in fields.items():
        setattr(options, name, value)
    return options


def recipe_steps(name, started, n=20000, steps=4, wire=0, ramp=False,
                 **fields):
    """The recipe with its dense warm-up (2 steps here), then compressed
    steps with beta 0.5: what the compiler's defaults run on a device.
    Outputs, then the memory (and the velocity with momentum correction).
    A 16-bit `wire` rounds what is summed; the ramp sends more values
    during its warm-up instead of all; `fields` set more options (momentum,
    nesterov, clip)."""
    options = recipe_options(warmup_steps=2, wire=wire, warmup=int(ramp),
                             **fields)
    transformed = bool(fields)  # what is sent is not the gradient
    results = []
    for step in range(steps):
        grad, out = gradient(10 + step, n), np.full(n, 5.0, np.float32)
        args = (name, ptr(grad), ptr(out), i64(n), ctypes.byref(options),
                AVERAGE)
        if started:
            request = Request()
            check(lib.gradcomm_scalecom_recipe_start_f32(
                *args, ctypes.byref(request)), "recipe_start")
            check(lib.gradcomm_wait(ctypes.byref(request)), "wait")
        else:
            check(lib.gradcomm_scalecom_recipe_f32(*args), "recipe")
        # One rank: a dense step's mean is the gradient (rounded to the
        # wire); a compressed one (every step of the ramp) differs from it.
        dense = step < 2 and not ramp
        if not transformed:
            assert np.array_equal(out, rounded(grad, wire)) == dense, \
                (name, step)
        # The ramp's k: n / 4 at step 0, the target 200 after the warm-up.
        sent = np.count_nonzero(out)
        assert not (ramp and step == 0) or sent > 1000, (name, sent)
        assert not (ramp and step >= 2) or sent <= 200, (name, sent)
        results.append(out)
    results.append(read_state(name, n))
    if fields.get("momentum"):
        results.append(read_state(name + b".velocity", n))
    return results


def rounded(values, wire):
    """`values` through a 16-bit wire: rounded to nearest even and back."""
    if wire == BF16:
        bits = values.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32)
    if wire == F16:
        return values.astype(np.float16).astype(np.float32)
    return values


def dense_wire(n=5000):
    """The dense all-reduce on a 16-bit wire, blocking and started: one
    rank's sum is each value rounded to the wire's type."""
    results = []
    for wire in (BF16, F16):
        data, started = gradient(30 + wire, n), gradient(40 + wire, n)
        expected = [rounded(data, wire), rounded(started, wire)]
        assert not np.array_equal(expected[0], data), "nothing rounded"
        check(lib.gradcomm_dense_all_reduce_wire_f32(
            b"dw", ptr(data), i64(n), wire, AVERAGE), "dense wire")
        request = Request()
        check(lib.gradcomm_dense_all_reduce_wire_start_f32(
            b"dw", ptr(started), i64(n), wire, AVERAGE,
            ctypes.byref(request)), "dense wire start")
        check(lib.gradcomm_wait(ctypes.byref(request)), "wait (dense wire)")
        assert same([data, started], expected), "wire %d: not rounded" % wire
        results += [data, started]
    return results


def topk_wire(n=5000, k=50):
    """The local top-k on a 16-bit wire, blocking and started: one rank's
    sum is its k values rounded; the memory keeps float32's error."""
    results = []
    for wire in (BF16, F16):
        for step in range(2):
            grad = gradient(60 + step, n)
            out, started = np.zeros(n, np.float32), np.zeros(n, np.float32)
            union = i64(-1)
            check(lib.gradcomm_local_topk_all_gather_wire_f32(
                b"tw%d" % wire, ptr(grad), ptr(out), i64(n), i64(k), wire,
                AVERAGE, ctypes.byref(union)), "local_topk wire")
            request = Request()
            check(lib.gradcomm_local_topk_all_gather_wire_start_f32(
                b"tws%d" % wire, ptr(grad), ptr(started), i64(n), i64(k),
                wire, AVERAGE, ctypes.byref(request)), "local_topk wire start")
            check(lib.gradcomm_wait(ctypes.byref(request)), "wait (top-k)")
            sent = out[out != 0]
            assert np.array_equal(sent, rounded(sent, wire)), "not rounded"
            results += [out, started, np.array([union.value])]
        results.append(read_state(b"tw%d" % wire, n))
    return results


def unfused_steps(n=12000, k=120):
    """Compress, sparse all-reduce (started), memory update."""
    results = []
    for step in range(3):
        grad = gradient(100 + step, n)
        values = np.zeros(k, np.float32)
        indices = np.zeros(k, np.int64)
        out = np.full(n, 3.0, np.float32)
        check(lib.gradcomm_cltk_compress_f32(
            b"u", ptr(grad), i64(n), i64(k), EXACT, i64(0), ptr(values),
            ptr(indices)), "cltk_compress")
        request = Request()
        check(lib.gradcomm_sparse_all_reduce_start_f32(
            b"sar", ptr(values), ptr(indices), i64(k), ptr(out), i64(n),
            AVERAGE, ctypes.byref(request)), "sparse_all_reduce_start")
        check(lib.gradcomm_wait(ctypes.byref(request)), "wait (sparse)")
        check(lib.gradcomm_memory_update_f32(
            b"u", ptr(grad), i64(n), ptr(indices), i64(k), f32(0.25)),
            "memory_update")
        results += [indices.copy(), values.copy(), out]
    results.append(read_state(b"u", n))
    return results


def reduce_scatters(n=6000, wire=0):
    """The dense and the compressed reduce-scatter (one rank: the shard is
    the whole buffer), and the recipe's form with a dense warm-up of 2; on
    a 16-bit `wire`, the dense one's and the recipe's values travel
    rounded."""
    data, shard = gradient(20, n), np.full(n, 5.0, np.float32)
    check(lib.gradcomm_reduce_scatter_wire_f32(
        b"rsd%d" % wire, ptr(data), ptr(shard), i64(n), wire, AVERAGE),
        "reduce_scatter")
    assert np.array_equal(shard, rounded(data, wire)), "dense shard"
    results = [shard]
    options = recipe_options(warmup_steps=2, wire=wire)
    # States of their own per wire: a warm-up counts its state's steps.
    compressed, recipe_state = b"rsc%d" % wire, b"rsr%d" % wire
    for step in range(4):
        grad = gradient(30 + step, n)
        shard = np.full(n, 5.0, np.float32)
        check(lib.gradcomm_scalecom_reduce_scatter_f32(
            compressed, ptr(grad), ptr(shard), i64(n), i64(60), EXACT,
            i64(0), f32(0.5), SUM), "scalecom_reduce_scatter")
        recipe = np.full(n, 5.0, np.float32)
        check(lib.gradcomm_scalecom_reduce_scatter_recipe_f32(
            recipe_state, ptr(grad), ptr(recipe), i64(n),
            ctypes.byref(options), AVERAGE), "scalecom_reduce_scatter_recipe")
        assert np.array_equal(recipe, rounded(grad, wire)) == (step < 2), step
        results += [shard, recipe]
    results += [read_state(compressed, n), read_state(recipe_state, n)]
    return results


def dense_and_topk(n=5000):
    data = gradient(7, n)
    check(lib.gradcomm_dense_all_reduce_f32(b"d", ptr(data), i64(n), AVERAGE),
          "dense")
    started = gradient(8, n)
    request = Request()
    check(lib.gradcomm_dense_all_reduce_start_f32(
        b"d", ptr(started), i64(n), AVERAGE, ctypes.byref(request)),
        "dense_start")
    check(lib.gradcomm_wait(ctypes.byref(request)), "wait (dense)")
    results = [data, started]
    for step in range(2):
        grad, out = gradient(200 + step, n), np.zeros(n, np.float32)
        union = i64(-1)
        check(lib.gradcomm_local_topk_all_gather_f32(
            b"t", ptr(grad), ptr(out), i64(n), i64(50), AVERAGE,
            ctypes.byref(union)), "local_topk")
        results += [out, np.array([union.value])]
    results.append(read_state(b"t", n))
    return results


def started_topk(n=5000):
    """The started local top-k, the blocking form's gradients: its outputs,
    memory and union size (counted at the wait) must be those bits."""
    results = []
    for step in range(2):
        grad, out = gradient(200 + step, n), np.zeros(n, np.float32)
        request = Request()
        check(lib.gradcomm_local_topk_all_gather_start_f32(
            b"ts", ptr(grad), ptr(out), i64(n), i64(50), AVERAGE,
            ctypes.byref(request)), "local_topk_start")
        check(lib.gradcomm_wait(ctypes.byref(request)), "wait (local top-k)")
        stats = OpStats()
        check(lib.gradcomm_stats_get(b"ts", ctypes.byref(stats)), "stats")
        assert stats.calls == step + 1, stats.calls
        results += [out, np.array([stats.last_union_size])]
    results.append(read_state(b"ts", n))
    return results


def skipped_step(n=4000):
    """Under skip, a gradient whose m + g is not finite: zeros out, memory
    and step unchanged (the memory is the scan's other half)."""
    check(lib.gradcomm_set_nonfinite_policy(SKIP), "policy skip")
    grad = gradient(9, n)
    out = np.zeros(n, np.float32)
    check(lib.gradcomm_scalecom_f32(b"s", ptr(grad), ptr(out), i64(n), i64(40),
                                    EXACT, i64(0), f32(1.0), SUM), "scalecom")
    before = read_state(b"s", n)
    grad[17] = np.inf
    out[:] = 1.0
    check(lib.gradcomm_scalecom_f32(b"s", ptr(grad), ptr(out), i64(n), i64(40),
                                    EXACT, i64(0), f32(1.0), SUM),
          "skipped scalecom")
    assert not out.any(), "a skipped step's output is not zeros"
    assert np.array_equal(read_state(b"s", n), before), "memory changed"
    check(lib.gradcomm_set_nonfinite_policy(ERROR), "policy error")
    return [before]


def logged_values(n=3000):
    """What comes to the host for logs and checks: the consensus distance
    (a copy of the replica) and indices validated before a scatter."""
    x = gradient(300, n)
    distance = ctypes.c_double(-1.0)
    check(lib.gradcomm_consensus_distance_f32(ptr(x), i64(n),
                                              ctypes.byref(distance)),
          "consensus_distance")
    values = np.ones(2, np.float32)
    out = np.zeros(n, np.float32)
    bad = np.array([5, n], np.int64)
    expect(lib.gradcomm_sparse_all_reduce_f32(
        b"bad", ptr(values), ptr(bad), i64(2), ptr(out), i64(n), SUM), 1,
        "an index out of range")
    message = lib.gradcomm_last_error().decode()
    assert "outside [0, %d)" % n in message, message
    return [np.array([distance.value])]


def elastic_steps(name, wire, n=3000, steps=5):
    """Elastic averaging (blocking) between local steps that move x: the
    first call's center (x's mean), exchanges every second call with the
    differences on the wire; x and the center after each call."""
    x = gradient(400, n)
    results = []
    for step in range(steps):
        x -= np.float32(0.1) * gradient(410 + step, n)
        check(lib.gradcomm_elastic_average_wire_f32(
            name, ptr(x), i64(n), f32(0.3), i64(2), wire),
            "elastic average %d" % step)
        results += [x.copy(), read_state(name, n)]
    return results


class Memref1(ctypes.Structure):
    """MLIR's descriptor of a rank-1 memref."""
    _fields_ = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                ("offset", ctypes.c_int64), ("size", ctypes.c_int64),
                ("stride", ctypes.c_int64)]


class Unranked(ctypes.Structure):
    _fields_ = [("rank", ctypes.c_int64), ("descriptor", ctypes.c_void_p)]


def unranked(array):
    """(the unranked memref of a 1-D array, what keeps it alive)."""
    descriptor = Memref1(array.ctypes.data, array.ctypes.data, 0, array.size,
                         1)
    return Unranked(1, ctypes.addressof(descriptor)), descriptor


def compiled_sixteen_bits(n=4000, k=40):
    """Compiled code's 16-bit entry points (bf16 and f16 tensors: widened,
    communicated on their own wire, narrowed back): a dense all-reduce and
    a local top-k step, on each backend's memory (the CUDA backend converts
    on the device)."""
    results = []
    for suffix, half in (("bf16", False), ("f16", True)):
        values = gradient(500 + half, n)
        bits = (values.astype(np.float16).view(np.uint16) if half else
                (values.view(np.uint32) >> 16).astype(np.uint16))
        dense, grad, out = bits.copy(), bits.copy(), np.zeros(n, np.uint16)
        keep = [unranked(a) for a in (dense, grad, out)]
        dense_ref, grad_ref, out_ref = (ctypes.byref(u) for u, _ in keep)
        check(getattr(lib, "_mlir_ciface_gradcomm_rt_dense_all_reduce_" +
                      suffix)(b"cd" + suffix.encode(), dense_ref, AVERAGE),
              "compiled dense all-reduce " + suffix)
        check(getattr(lib, "_mlir_ciface_gradcomm_rt_local_topk_all_gather_" +
                      suffix)(b"ct" + suffix.encode(), grad_ref, out_ref,
                              i64(k), AVERAGE),
              "compiled local top-k " + suffix)
        assert np.count_nonzero(out) == k, "local top-k sent %d values" % (
            np.count_nonzero(out))
        results += [dense, out]
    return results


def run_all():
    return {
        "scalecom exact": scalecom_steps(b"w", EXACT, started=False),
        "scalecom chunk": scalecom_steps(b"c", CHUNK, started=False),
        "scalecom exact started": scalecom_steps(b"ws", EXACT, started=True),
        "recipe": recipe_steps(b"r", started=False),
        "recipe started": recipe_steps(b"rs", started=True),
        "recipe bf16": recipe_steps(b"rb", started=False, wire=BF16),
        "recipe bf16 started": recipe_steps(b"rbs", started=True, wire=BF16),
        "recipe f16": recipe_steps(b"rh", started=False, wire=F16),
        "recipe ramp": recipe_steps(b"rr", started=False, ramp=True),
        "recipe momentum": recipe_steps(b"rm", started=False, momentum=0.9),
        "recipe momentum started": recipe_steps(b"rms", started=True,
                                                momentum=0.9),
        "recipe momentum kept": recipe_steps(b"rk", started=False,
                                             momentum=0.9, keep_velocity=1),
        "recipe nesterov clip": recipe_steps(b"rn", started=False,
                                             momentum=0.9, nesterov=1,
                                             clip=0.5),
        "recipe clip": recipe_steps(b"rc", started=False, clip=0.5),
        "recipe ramp started": recipe_steps(b"rrs", started=True, ramp=True),
        "dense wire": dense_wire(),
        "local top-k wire": topk_wire(),
        "unfused": unfused_steps(),
        "reduce-scatters": reduce_scatters(),
        "reduce-scatters bf16": reduce_scatters(wire=BF16),
        "reduce-scatters f16": reduce_scatters(wire=F16),
        "dense and local top-k": dense_and_topk(),
        "started local top-k": started_topk(),
        "skip": skipped_step(),
        "logged values": logged_values(),
        "elastic average": elastic_steps(b"e", 0),
        "elastic average bf16": elastic_steps(b"eb", BF16),
        "elastic average f16": elastic_steps(b"eh", F16),
        "compiled 16-bit": compiled_sixteen_bits(),
    }


def same(a, b):
    return all(x.dtype == y.dtype and np.array_equal(x.view(np.uint8),
                                                     y.view(np.uint8))
               for x, y in zip(a, b)) and len(a) == len(b)


restart(CPU)
cpu = run_all()
restart(CUDA)
cuda = run_all()
for name in cpu:
    assert same(cpu[name], cuda[name]), "%s: the fake CUDA backend differs" % name
# The started forms give the blocking bits on both backends.
assert same(cpu["scalecom exact"], cuda["scalecom exact started"])
assert same(cpu["recipe"], cuda["recipe started"])
assert same(cpu["recipe bf16"], cuda["recipe bf16 started"])
# The wire is not ignored: its compressed steps differ from float32's.
assert not same(cpu["recipe"][2:4], cpu["recipe bf16"][2:4])
assert same(cpu["dense and local top-k"][2:], cuda["started local top-k"])

# Checkpoints cross backends through the host staging.
path = os.path.join(work, "checkpoint").encode()
check(lib.gradcomm_state_save(path), "save on cuda")
memory = read_state(b"w", 20000)
restart(CPU)
check(lib.gradcomm_state_restore(path), "restore on cpu")
assert np.array_equal(read_state(b"w", 20000), memory), "checkpoint differs"
restart(CUDA)
check(lib.gradcomm_state_restore(path), "restore on cuda")
assert np.array_equal(read_state(b"w", 20000), memory), "restore differs"

# Compiled code's buffers come from the backend and go back to it.
buffer = lib.gradcomm_memref_alloc(4096)
assert buffer, "no buffer for compiled code"
lib.gradcomm_free_buffer(buffer)


# On several threads at once (ctypes releases the GIL, as trainers' threads
# and the runner do): the runtime's record of backend buffers stays whole.
def churn(errors):
    try:
        for _ in range(20000):
            pointers = [lib.gradcomm_memref_alloc(256) for _ in range(4)]
            assert all(pointers), "no buffer for compiled code"
            for pointer in pointers:
                lib.gradcomm_free_buffer(pointer)
    except Exception as error:  # reported below, on the main thread
        errors.append(error)


errors = []
threads = [threading.Thread(target=churn, args=(errors,)) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
assert not errors, "concurrent allocations: %s" % errors

# The exchanges moved the center away from the first call's x, and the
# wire is not ignored.
assert not same(cpu["elastic average"][1:2], cpu["elastic average"][9:10])
assert not same(cpu["elastic average"], cpu["elastic average bf16"])

# What the CUDA backend does not run is refused.
x = gradient(3, 100)
request = Request()
expect(lib.gradcomm_elastic_average_start_f32(
    b"es", ptr(x), i64(100), f32(0.5), i64(1), ctypes.byref(request)),
    ERR_UNSUPPORTED, "the started elastic average")
data, shard = gradient(5, 1000), np.zeros(1000, np.float32)
request = Request()
expect(lib.gradcomm_reduce_scatter_start_f32(
    b"rs", ptr(data), ptr(shard), i64(1000), SUM, ctypes.byref(request)),
    ERR_UNSUPPORTED, "the started reduce-scatter")
for refused in (dict(clip=1.0), dict(momentum=0.9)):
    options = recipe_options(**refused)
    expect(lib.gradcomm_scalecom_reduce_scatter_recipe_f32(
        b"rsclip", ptr(data), ptr(shard), i64(1000), ctypes.byref(options),
        SUM), ERR_UNSUPPORTED, "the reduce-scatter recipe with %s" % refused)
# Gossip takes a 16-bit wire on the device (one rank: no peer, x as it was).
x = gradient(3, 100)
kept = x.copy()
check(lib.gradcomm_gossip_exchange_wire_f32(b"gw", ptr(x), i64(100), 0,
                                            f32(0.5), ctypes.c_uint64(0),
                                            i64(1), BF16), "gossip wire")
assert np.array_equal(x, kept), "one rank's gossip changed x"

# The stand-in aborts here if a buffer or completion leaked.
check(lib.gradcomm_finalize(), "finalize")
lib.MPI_Finalize()
print("fake cuda backend: %d groups of results identical to the cpu "
      "backend's" % len(cpu))

"""ctypes bindings of libgradcomm_runtime's C API (runtime/include/gradcomm/
runtime.h) for host float32 buffers: collectives, named state, checkpoints.

The library is found, in this order, at $GRADCOMM_RUNTIME_LIBRARY, in the
pip package (gradcomm/_libs, or an editable install's build tree), next to
a `cmake --install` prefix's package, in the source tree's build/lib, or by
the dynamic loader's search path (gradcomm._paths). Every failing call
raises GradCommError with the runtime's message (operation, rank, cause)."""

import atexit
import ctypes

from gradcomm._paths import runtime_library_candidates

STATUS_NAMES = {
    0: "ok", 1: "invalid argument", 2: "MPI error", 3: "not initialized",
    4: "mismatch across ranks", 5: "out of memory", 6: "internal error",
    7: "non-finite input", 8: "I/O error", 9: "state error",
    10: "unsupported", 11: "timeout",
}
NON_FINITE = 7
REDUCTIONS = {"sum": 0, "average": 1}
SELECTIONS = {"exact": 0, "chunk": 1}
WARMUPS = {"dense": 0, "ramp": 1}
SCHEDULES = {"matching": 0, "ring": 1, "hypercube": 2}
# Asynchronous gossip also takes the paper's random peers.
ASYNC_SCHEDULES = dict(SCHEDULES, random=3)
NONFINITE_POLICIES = {"error": 0, "skip": 1, "propagate": 2}
WIRES = {"f32": 0, "bf16": 1, "f16": 2}


class GradCommError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _load():
    errors = []
    for path in runtime_library_candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as error:
            errors.append(str(error))
    raise GradCommError(-1, "cannot load libgradcomm_runtime.so (set "
                        "GRADCOMM_RUNTIME_LIBRARY): " + "; ".join(errors))


_SET_KEY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                            ctypes.c_char_p)
_GET_KEY = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                            ctypes.c_void_p, ctypes.c_size_t)


class Rendezvous(ctypes.Structure):
    """gradcomm_rendezvous (runtime.h)."""
    _fields_ = [("set", _SET_KEY), ("get", _GET_KEY),
                ("user", ctypes.c_void_p)]


_SIGNATURES = {
    "gradcomm_init": [],
    "gradcomm_init_with_rendezvous": [ctypes.c_int, ctypes.c_int,
                                      ctypes.POINTER(Rendezvous)],
    "gradcomm_finalize": [],
    "gradcomm_rank": [ctypes.POINTER(ctypes.c_int)],
    "gradcomm_size": [ctypes.POINTER(ctypes.c_int)],
    "gradcomm_dense_all_reduce_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                      ctypes.c_int64, ctypes.c_int],
    "gradcomm_dense_all_reduce_wire_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                           ctypes.c_int64, ctypes.c_int,
                                           ctypes.c_int],
    "gradcomm_scalecom_f32": [ctypes.c_char_p, ctypes.c_void_p,
                              ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                              ctypes.c_int, ctypes.c_int64, ctypes.c_float,
                              ctypes.c_int],
    "gradcomm_cltk_compress_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                   ctypes.c_int64, ctypes.c_int64,
                                   ctypes.c_int, ctypes.c_int64,
                                   ctypes.c_void_p, ctypes.c_void_p],
    "gradcomm_sparse_all_reduce_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_int64,
                                       ctypes.c_void_p, ctypes.c_int64,
                                       ctypes.c_int],
    "gradcomm_memory_update_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                   ctypes.c_int64, ctypes.c_void_p,
                                   ctypes.c_int64, ctypes.c_float],
    "gradcomm_local_topk_all_gather_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_int64)],
    "gradcomm_gossip_exchange_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_int,
                                     ctypes.c_float, ctypes.c_uint64,
                                     ctypes.c_int64],
    "gradcomm_gossip_async_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                  ctypes.c_int64, ctypes.c_int,
                                  ctypes.c_float, ctypes.c_uint64,
                                  ctypes.c_int64],
    "gradcomm_elastic_average_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                     ctypes.c_int64, ctypes.c_float,
                                     ctypes.c_int64],
    "gradcomm_elastic_average_wire_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                          ctypes.c_int64, ctypes.c_float,
                                          ctypes.c_int64, ctypes.c_int],
    "gradcomm_elastic_average_async_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                           ctypes.c_int64, ctypes.c_float,
                                           ctypes.c_int64],
    "gradcomm_elastic_average_sharded_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                             ctypes.c_int64, ctypes.c_float,
                                             ctypes.c_int64],
    "gradcomm_state_declare": [ctypes.c_char_p, ctypes.c_int64],
    "gradcomm_state_step": [ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)],
    "gradcomm_state_save": [ctypes.c_char_p],
    "gradcomm_state_restore": [ctypes.c_char_p],
    "gradcomm_state_reset": [ctypes.c_char_p],
    "gradcomm_set_nonfinite_policy": [ctypes.c_int],
    "gradcomm_dense_all_reduce_wire_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
        ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_dense_all_reduce_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_scalecom_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int, ctypes.c_int64, ctypes.c_float,
        ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_gossip_exchange_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
        ctypes.c_float, ctypes.c_uint64, ctypes.c_int64,
        ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_gossip_exchange_wire_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
        ctypes.c_float, ctypes.c_uint64, ctypes.c_int64, ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_local_topk_all_gather_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_local_topk_all_gather_wire_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int, ctypes.c_int,
        ctypes.POINTER(ctypes.c_int64)],
    "gradcomm_local_topk_all_gather_wire_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int, ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_all_gather_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                ctypes.c_void_p, ctypes.c_int64],
    "gradcomm_scalecom_recipe_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_void_p, ctypes.c_int],
    "gradcomm_scalecom_recipe_start_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_shard_range": [ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                             ctypes.POINTER(ctypes.c_int64),
                             ctypes.POINTER(ctypes.c_int64)],
    "gradcomm_reduce_scatter_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                    ctypes.c_void_p, ctypes.c_int64,
                                    ctypes.c_int],
    "gradcomm_reduce_scatter_wire_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                         ctypes.c_void_p, ctypes.c_int64,
                                         ctypes.c_int, ctypes.c_int],
    "gradcomm_all_gather_wire_f32": [ctypes.c_char_p, ctypes.c_void_p,
                                     ctypes.c_void_p, ctypes.c_int64,
                                     ctypes.c_int],
    "gradcomm_scalecom_reduce_scatter_recipe_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_void_p, ctypes.c_int],
    "gradcomm_scalecom_reduce_scatter_segments_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64),
        ctypes.c_int64, ctypes.c_void_p, ctypes.c_int],
    "gradcomm_scalecom_reduce_scatter_f32": [
        ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
        ctypes.c_int64, ctypes.c_int, ctypes.c_int64, ctypes.c_float,
        ctypes.c_int],
    "gradcomm_wait": [ctypes.POINTER(ctypes.c_void_p)],
    # Simulated learners (gradcomm/runtime_learners.h).
    "gradcomm_learners_create": [ctypes.c_int32,
                                 ctypes.POINTER(ctypes.c_void_p)],
    "gradcomm_learners_dense_f32": [ctypes.c_void_p, ctypes.c_char_p,
                                    ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64, ctypes.c_int],
    "gradcomm_learners_scalecom_recipe_f32": [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
        ctypes.c_int64, ctypes.c_void_p, ctypes.c_int],
    "gradcomm_learners_local_topk_f32": [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
        ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_void_p],
    "gradcomm_learners_state_read": [ctypes.c_void_p, ctypes.c_char_p,
                                     ctypes.c_int32, ctypes.c_void_p,
                                     ctypes.c_int64],
    "gradcomm_learners_stats_get": [ctypes.c_void_p, ctypes.c_char_p,
                                    ctypes.c_void_p],
    "gradcomm_stats_get": [ctypes.c_char_p, ctypes.c_void_p],
    "gradcomm_set_backend": [ctypes.c_int],
    "gradcomm_get_backend": [ctypes.POINTER(ctypes.c_int)],
    "gradcomm_cuda_use_handles": [ctypes.c_void_p, ctypes.c_void_p],
}
BACKENDS = {"cpu": 0, "cuda": 1}


class RecipeOptions(ctypes.Structure):
    """gradcomm_scalecom_options (runtime.h)."""
    _fields_ = [("k", ctypes.c_int64), ("selection", ctypes.c_int),
                ("chunk_size", ctypes.c_int64), ("beta", ctypes.c_float),
                ("warmup_steps", ctypes.c_int64), ("warmup", ctypes.c_int),
                ("warmup_start_ratio", ctypes.c_float),
                ("momentum", ctypes.c_float), ("nesterov", ctypes.c_int32),
                ("clip", ctypes.c_float), ("dense", ctypes.c_int32),
                ("wire", ctypes.c_int), ("keep_velocity", ctypes.c_int32)]


class OpStats(ctypes.Structure):
    """gradcomm_op_stats (runtime.h): one named op's counters on this
    rank."""
    _fields_ = [("calls", ctypes.c_uint64), ("messages", ctypes.c_uint64),
                ("value_bytes_sent", ctypes.c_uint64),
                ("value_bytes_received", ctypes.c_uint64),
                ("index_bytes_sent", ctypes.c_uint64),
                ("index_bytes_received", ctypes.c_uint64),
                ("seconds", ctypes.c_double),
                ("last_union_size", ctypes.c_int64),
                ("skipped_non_finite", ctypes.c_uint64)]


class Runtime:
    """The process's runtime (one per process, as the C library is)."""

    def __init__(self):
        self.library = _load()
        self.library.gradcomm_last_error.restype = ctypes.c_char_p
        for name, argtypes in _SIGNATURES.items():
            function = getattr(self.library, name)
            function.argtypes = argtypes
            function.restype = ctypes.c_int
        init = self.library.gradcomm_scalecom_options_init
        init.argtypes, init.restype = [ctypes.c_void_p, ctypes.c_int64], None
        destroy = self.library.gradcomm_learners_destroy
        destroy.argtypes, destroy.restype = [ctypes.c_void_p], None
        # A rank that leaves without MPI_Finalize is an abnormal exit to
        # mpiexec, which then kills the others: finalize (what the runtime
        # initialized) when the interpreter exits.
        atexit.register(self.library.gradcomm_finalize)

    def call(self, name, *args):
        """Calls `name` (ctypes releases the GIL meanwhile); raises
        GradCommError unless it returns GRADCOMM_OK."""
        status = getattr(self.library, name)(*args)
        if status != 0:
            message = (self.library.gradcomm_last_error() or b"").decode()
            raise GradCommError(status, message or "%s: %s" % (
                name, STATUS_NAMES.get(status, "status %d" % status)))

    def init_with_rendezvous(self, rank, size, set_key, get_key):
        """gradcomm_init_with_rendezvous: MPI for `size` processes that
        mpiexec did not start, with its start-up exchange run through
        `set_key(key, value)` and `get_key(key)` (str key, bytes value;
        `get_key` waits until the key is set, within its own timeout, and
        raises if it never is): a torch.distributed store's set and get.
        Idempotent for the same rank and size."""

        def set_callback(user, key, value):
            try:
                set_key(key.decode(), value)
                return 0
            except Exception as error:  # the runtime reports the key
                print("gradcomm: rendezvous set: %s" % error)
                return 1

        def get_callback(user, key, buffer, capacity):
            try:
                value = bytes(get_key(key.decode()))
            except Exception as error:
                print("gradcomm: rendezvous get: %s" % error)
                return 1
            if len(value) + 1 > capacity:
                return 1
            ctypes.memmove(buffer, value + b"\0", len(value) + 1)
            return 0

        rendezvous = Rendezvous(_SET_KEY(set_callback),
                                _GET_KEY(get_callback), None)
        # The runtime calls these until MPI finalizes: keep them alive.
        self._rendezvous = rendezvous
        self.call("gradcomm_init_with_rendezvous", rank, size,
                  ctypes.byref(rendezvous))

    def rank(self):
        value = ctypes.c_int()
        self.call("gradcomm_rank", ctypes.byref(value))
        return value.value

    def size(self):
        value = ctypes.c_int()
        self.call("gradcomm_size", ctypes.byref(value))
        return value.value

    def backend(self):
        """'cpu' or 'cuda': where the runtime expects buffers."""
        value = ctypes.c_int()
        self.call("gradcomm_get_backend", ctypes.byref(value))
        return {number: name for name, number in BACKENDS.items()}[
            value.value]

    def set_nonfinite_policy(self, policy):
        """'error', 'skip' or 'propagate' (docs/runtime.md); every rank
        must set the same."""
        if policy not in NONFINITE_POLICIES:
            raise ValueError("non-finite policy must be one of %s, got %r"
                             % (sorted(NONFINITE_POLICIES), policy))
        self.call("gradcomm_set_nonfinite_policy",
                  NONFINITE_POLICIES[policy])

    def stats(self, name):
        """The counters of the op or state `name` (str or bytes; an
        OpStats, zeros if it never ran)."""
        value = OpStats()
        if isinstance(name, str):
            name = name.encode()
        self.call("gradcomm_stats_get", name, ctypes.byref(value))
        return value

    def state_step(self, name):
        value = ctypes.c_uint64()
        self.call("gradcomm_state_step", name.encode(), ctypes.byref(value))
        return value.value


_runtime = None


def runtime():
    global _runtime
    if _runtime is None:
        _runtime = Runtime()
    return _runtime

"""Many data-parallel learners in one process (docs/learners.md).

`Learners(model, n, comm)` trains `model` as n synchronous data-parallel
learners would: each learner's gradient is computed on its own batch by the
one model (the replicas of synchronous data parallelism are equal), and the
learners' gradients are combined by the runtime's simulated group
(gradcomm/runtime_learners.h), with the DDP hooks' per-parameter plan:

- "dense": every parameter averaged (gradcomm_dense_all_reduce_f32);
- "scalecom": gradcomm.torch.ddp.scalecom_hook's steps (the recipe, the
  layer policy, small tensors averaged densely);
- "local_topk": gradcomm.torch.ddp.local_topk_hook's.

At 2 and 4 learners the parameters after every step have the bits of the
same trainer under mpiexec with the hooks (test/Python/test_learners.py). Batch
norm's buffers follow DDP's rule: learner 0's after each step (DDP
broadcasts rank 0's at every forward).
"""

import ctypes
import dataclasses

import torch

from gradcomm.runtime import REDUCTIONS, GradCommError, OpStats, runtime
from gradcomm.torch.ddp import (check_local_topk, local_topk_defaults,
                                recipe_options)
from gradcomm.torch.recipe import (Plan, ScaleComOptions, check_optimizer,
                                   dense_in_runtime, for_group)

COMMS = ("dense", "scalecom", "local_topk")


class Learners:
    """n learners of `model` combining their gradients as `comm` does;
    `options` (a ScaleComOptions) and keyword fields as ScaleComState's
    and LocalTopkState's."""

    def __init__(self, model, learners, comm="scalecom", options=None,
                 **fields):
        if comm not in COMMS:
            raise ValueError("gradcomm: Learners: comm must be one of %s, "
                             "got %r" % (", ".join(COMMS), comm))
        self.rt = runtime()
        self.size = learners
        self.comm = comm
        self.group = ctypes.c_void_p()
        self.rt.call("gradcomm_learners_create", learners,
                     ctypes.byref(self.group))
        self.parameters = [(name, p) for name, p in model.named_parameters()
                           if p.requires_grad]
        self.buffers = list(model.buffers())
        defaults = (local_topk_defaults() if comm == "local_topk"
                    else ScaleComOptions())
        self.options = for_group(
            dataclasses.replace(options or defaults, **fields), learners)
        o = self.options
        if o.wire not in (None, "f32"):
            raise ValueError("gradcomm: Learners send float32 values only")
        if comm == "local_topk":
            check_local_topk(o)
        self.plan = Plan(model, o, ranks=learners)
        # As _compress_per_parameter.
        self.dense_in_runtime = dense_in_runtime(o)
        # As scalecom_hook: the recipe entry unless nothing of it is on
        # (then gradcomm_scalecom_f32, which the recipe with no warm-up,
        # momentum or clipping equals bit for bit).
        self._options = {}

    def __del__(self):
        if getattr(self, "group", None) and self.group.value:
            self.rt.library.gradcomm_learners_destroy(self.group)
            self.group = None

    def check_optimizer(self, optimizer):
        if self.comm == "scalecom":
            check_optimizer(self.options, optimizer)

    def gradients(self, model, batches, loss_of):
        """Each learner's gradient of loss_of(model(x), y) on its (x, y) of
        `batches`: per parameter, a (learners, numel) float32 tensor.
        Returns (rows, learner 0's loss)."""
        if len(batches) != self.size:
            raise ValueError("gradcomm: %d batches for %d learners"
                             % (len(batches), self.size))
        start = [b.detach().clone() for b in self.buffers]
        kept = None
        rows = [torch.empty(self.size, p.numel()) for _, p in
                self.parameters]
        first_loss = None
        params = [p for _, p in self.parameters]
        for r, (x, y) in enumerate(batches):
            if r:
                with torch.no_grad():
                    for buffer, value in zip(self.buffers, start):
                        buffer.copy_(value)
            loss = loss_of(model(x), y)
            grads = torch.autograd.grad(loss, params, allow_unused=True)
            for row, grad in zip(rows, grads):
                if grad is None:
                    row[r].zero_()
                else:
                    row[r].copy_(grad.reshape(-1))
            if r == 0:
                first_loss = loss.detach()
                kept = [b.detach().clone() for b in self.buffers]
        with torch.no_grad():
            for buffer, value in zip(self.buffers, kept):
                buffer.copy_(value)
        return rows, first_loss

    def reduce(self, rows):
        """Combines the learners' rows per parameter as `comm` does and
        sets each parameter's .grad to what every learner receives.
        `last_step` then holds the step's bytes per learner (traffic()'s
        keys) and "selected": the values the compressed parameters
        combined (ScaleCom: the k they share; local top-k: the union of
        the learners' selections)."""
        before = self.traffic()
        selected = 0
        for (name, p), row in zip(self.parameters, rows):
            out = torch.empty(p.numel())
            selected += self._reduce_one(name.encode(), name, row, out)
            p.grad = out.view_as(p)
        after = self.traffic()
        self.last_step = {key: after[key] - before[key] for key in after}
        self.last_step["selected"] = selected

    def step(self, model, batches, loss_of):
        """gradients() then reduce(); returns learner 0's loss."""
        rows, loss = self.gradients(model, batches, loss_of)
        self.reduce(rows)
        return loss

    def _reduce_one(self, key, name, row, out):
        count = row.shape[1]
        plan = (None if self.comm == "dense"
                else self.plan.k_and_chunk(name, count))
        args = (self.group, key, row.data_ptr(), out.data_ptr(), count)
        if plan is None and not self.dense_in_runtime:
            # _dense_average: divided first, then summed.
            row.div_(self.size)
            self.rt.call("gradcomm_learners_dense_f32", *args,
                         REDUCTIONS["sum"])
            return 0
        if self.comm == "local_topk":
            union = ctypes.c_int64()
            self.rt.call("gradcomm_learners_local_topk_f32", *args, plan[0],
                         REDUCTIONS["average"], ctypes.byref(union))
            return union.value
        k, chunk = plan or (None, None)
        if (k, chunk) not in self._options:
            self._options[(k, chunk)] = recipe_options(
                self.rt, self.options, k, chunk, "f32")
        self.rt.call("gradcomm_learners_scalecom_recipe_f32", *args,
                     ctypes.byref(self._options[(k, chunk)]),
                     REDUCTIONS["average"])
        return k or 0

    def traffic(self):
        """{"values": bytes, "indices": bytes}: what one learner sent so
        far in an n-rank job, by the runtime's cost model, summed over the
        parameters."""
        total = {"values": 0, "indices": 0}
        for name, p in self.parameters:
            stats = OpStats()
            self.rt.call("gradcomm_learners_stats_get", self.group,
                         name.encode(), ctypes.byref(stats))
            total["values"] += stats.value_bytes_sent
            total["indices"] += stats.index_bytes_sent
        return total


__all__ = ["COMMS", "GradCommError", "Learners"]

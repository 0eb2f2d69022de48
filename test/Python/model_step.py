"""Runs exported, gradcomm-compiled steps of an example model on this MPI
rank and checks them against eager PyTorch.

  run (under mpiexec, every rank):
    model_step.py run --model M --job NAME STEPS MANIFEST OPTIONS ...
                      [--check NAME ...]
  Each job runs STEPS steps of ./libNAME.so (manifest MANIFEST, optimizer
  options OPTIONS as JSON) and writes this rank's parameters to out-NAME;
  the jobs run one after another in one process. --check NAME: compare
  that job's parameters, buffers and loss with PyTorch's data-parallel
  step (the global batch split over the ranks, per-rank gradients
  averaged, torch.optim updating), within --tolerance relative to the
  largest magnitude of each tensor.

  compare (after mpiexec, one process):
    model_step.py replicas --out DIR       every rank's parameters equal, bit
                                           for bit (ScaleCom)
    model_step.py identical --out DIR --other DIR
                                           two runs' parameters equal, bit for
                                           bit, rank by rank
    model_step.py mean --model M --manifest step.json --out DIR
                                           the mean of the replicas equals the
                                           PyTorch step (gossip, one step)
"""

import argparse
import atexit
import ctypes
import ctypes.util
import glob
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

import models  # noqa: E402
from gradcomm.runner import CompiledStep  # noqa: E402
from gradcomm.torch import optim  # noqa: E402
from gradcomm.torch.export import functional_call, initial_values  # noqa


def hold_mpi():
    """Initializes MPI in this process, so that a CompiledStep's close()
    (gradcomm_finalize) leaves MPI up and the next compiled step
    initializes the runtime again, from fresh state (runtime.h: a program
    that initialized MPI keeps it). Several steps then run in one process:
    one Python start-up per rank (about 3 s of CPU with torch) for all."""
    mpi = ctypes.CDLL(ctypes.util.find_library("mpich") or "libmpich.so.12",
                      mode=ctypes.RTLD_GLOBAL)
    if mpi.MPI_Init(None, None) != 0:
        raise SystemExit("MPI_Init failed")
    atexit.register(mpi.MPI_Finalize)


def global_batch(spec, manifest, step):
    """Deterministic data for `step`: the global batch of all ranks."""
    generator = torch.Generator().manual_seed(1000 + step)
    total = manifest["batch"] * manifest["ranks"]
    if spec.input_dtype == torch.int64:
        vocab = spec.model.vocab
        x = torch.randint(0, vocab, (total,) + spec.input_shape,
                          generator=generator)
        y = torch.randint(0, vocab, (total,) + spec.target_shape,
                          generator=generator)
    else:
        x = torch.randn((total,) + spec.input_shape, generator=generator)
        y = torch.randint(0, 10, (total,) + spec.target_shape,
                          generator=generator)
    return x, y


def rank_slice(tensor, manifest, rank):
    b = manifest["batch"]
    return tensor[rank * b:(rank + 1) * b]


def make_optimizer(manifest):
    options = manifest["test_optimizer"]
    return optim.make(manifest["optimizer"], **options)


def initial_inputs(spec, manifest):
    """Parameters, buffers and optimizer state by manifest name."""
    return initial_values(spec.model, make_optimizer(manifest))


def reference(spec, manifest, steps):
    """Eager PyTorch: per-rank gradients averaged, torch.optim steps.
    Returns (parameters, per-rank buffers, last mean loss)."""
    model = spec.model
    ranks = manifest["ranks"]
    params = {n: p.detach().clone().requires_grad_(True)
              for n, p in model.named_parameters()}
    buffers = [{n: b.detach().clone() for n, b in model.named_buffers()}
               for _ in range(ranks)]
    optimizer = optim.torch_optimizer(make_optimizer(manifest),
                                      list(params.values()), manifest["lr"])
    loss_mean = None
    for step in range(steps):
        x, y = global_batch(spec, manifest, step)
        grads = [torch.zeros_like(p) for p in params.values()]
        losses = []
        for r in range(ranks):
            state = dict(params)
            state.update(buffers[r])
            loss = spec.loss_fn(functional_call(
                model, state, (rank_slice(x, manifest, r),)),
                rank_slice(y, manifest, r))
            for acc, g in zip(grads, torch.autograd.grad(
                    loss, list(params.values()))):
                acc += g
            losses.append(loss.item())
        for p, g in zip(params.values(), grads):
            p.grad = g / ranks
        optimizer.step()
        loss_mean = sum(losses) / ranks
    return ({n: p.detach().numpy() for n, p in params.items()},
            [{n: b.numpy() for n, b in rb.items()} for rb in buffers],
            loss_mean)


def relative_error(actual, expected):
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(np.max(np.abs(expected)) if expected.size else 0.0, 1e-30)
    return float(np.max(np.abs(actual - expected)) / scale) \
        if expected.size else 0.0


def load_manifest(path, options):
    with open(path) as f:
        manifest = json.load(f)
    manifest["test_optimizer"] = json.loads(options)
    return manifest


def run(args):
    """Every --job in turn, in this one process (hold_mpi)."""
    hold_mpi()
    failures = 0
    for name, steps, manifest, options in args.job:
        failures += run_job(args.model, "lib%s.so" % name,
                            load_manifest(manifest, options), int(steps),
                            "out-" + name, name in args.check, args.tolerance)
    return 1 if failures else 0


def run_job(model, library, manifest, steps, out, check, tolerance):
    spec = getattr(models, model)()
    step = CompiledStep(os.path.join(os.curdir, library), manifest)
    rank = step.rank()
    values = initial_inputs(spec, manifest)
    loss = None
    for s in range(steps):
        x, y = global_batch(spec, manifest, s)
        values["input"] = rank_slice(x, manifest, rank).numpy()
        values["target"] = rank_slice(y, manifest, rank).numpy()
        outputs = step(values)
        loss = float(outputs.pop("loss")[0])
        values.update(outputs)
    step.close()
    os.makedirs(out, exist_ok=True)
    params = {n: values[n] for n, _ in spec.model.named_parameters()}
    np.savez(os.path.join(out, "rank%d.npz" % rank), **params)
    if not check:
        return 0
    expected, buffers, expected_loss = reference(
        getattr(models, model)(), manifest, steps)
    worst, worst_name = 0.0, None
    failures = []
    checked = list(expected.items()) + [
        (n, b) for n, b in buffers[rank].items()
        if b.dtype == np.float32 and n in values and any(
            e["name"] == n for e in manifest["outputs"])]
    for name, want in checked:
        error = relative_error(values[name], want)
        if error >= worst:
            worst, worst_name = error, name
        if error > tolerance:
            failures.append("%s: relative error %.3g" % (name, error))
    loss_error = abs(loss - expected_loss) / max(abs(expected_loss), 1e-30)
    if loss_error > tolerance:
        failures.append("loss %.9g, PyTorch %.9g" % (loss, expected_loss))
    print("rank %d: %s: %d tensors after %d steps, worst relative error "
          "%.3g (%s), loss %.6f (PyTorch %.6f)" % (
              rank, library, len(checked), steps, worst, worst_name, loss,
              expected_loss))
    for failure in failures:
        print("rank %d: %s: MISMATCH %s" % (rank, library, failure))
    return 1 if failures else 0


def rank_files(out):
    files = sorted(glob.glob(os.path.join(out, "rank*.npz")))
    if len(files) < 2:
        raise SystemExit("expected the files of several ranks in " + out)
    return [dict(np.load(f)) for f in files]


def replicas(args):
    ranks = rank_files(args.out)
    for name, value in ranks[0].items():
        for r, other in enumerate(ranks[1:], 1):
            if value.tobytes() != other[name].tobytes():
                print("replica %d differs from replica 0 in %s" % (r, name))
                return 1
    print("%d replicas bit-identical (%d tensors)" % (len(ranks),
                                                      len(ranks[0])))
    return 0


def identical(args):
    """The outputs in --out equal those in --other bit for bit, rank by
    rank (two compilations of one step)."""
    mine, other = rank_files(args.out), rank_files(args.other)
    if len(mine) != len(other):
        print("%d ranks in %s, %d in %s" % (len(mine), args.out, len(other),
                                            args.other))
        return 1
    for r, (a, b) in enumerate(zip(mine, other)):
        for name, value in a.items():
            if name not in b or value.tobytes() != b[name].tobytes():
                print("rank %d: %s differs between %s and %s"
                      % (r, name, args.out, args.other))
                return 1
    print("%s and %s bit-identical (%d ranks, %d tensors)"
          % (args.out, args.other, len(mine), len(mine[0])))
    return 0


def mean(args):
    manifest = load_manifest(args.manifest, args.optimizer_options)
    ranks = rank_files(args.out)
    expected, _, _ = reference(getattr(models, args.model)(), manifest, 1)
    worst = 0.0
    for name, want in expected.items():
        average = np.mean([np.asarray(r[name], np.float64) for r in ranks],
                          axis=0)
        worst = max(worst, relative_error(average, want))
    distinct = any(ranks[0][n].tobytes() != ranks[1][n].tobytes()
                   for n in expected)
    print("mean of %d replicas vs PyTorch step: worst relative error %.3g "
          "(replicas distinct: %s)" % (len(ranks), worst, distinct))
    return 0 if worst <= args.tolerance and distinct else 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["run", "replicas", "mean",
                                         "identical"])
    parser.add_argument("--model")
    parser.add_argument("--job", nargs=4, action="append", default=[],
                        metavar=("NAME", "STEPS", "MANIFEST", "OPTIONS"),
                        help="run: STEPS steps of ./libNAME.so into out-NAME"
                        "; OPTIONS: JSON keyword arguments of "
                        "gradcomm.torch.optim.make (must match the export)")
    parser.add_argument("--check", action="append", default=[],
                        metavar="NAME", help="run: compare job NAME with "
                        "PyTorch")
    parser.add_argument("--manifest")
    parser.add_argument("--out")
    parser.add_argument("--other", help="identical: the other outputs")
    parser.add_argument("--tolerance", type=float, default=1e-5)
    parser.add_argument("--optimizer-options", default="{}",
                        help="mean: JSON keyword arguments of "
                        "gradcomm.torch.optim.make (must match the export)")
    args = parser.parse_args()
    return {"run": run, "replicas": replicas, "mean": mean,
            "identical": identical}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())

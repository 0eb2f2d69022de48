"""The model zoo (examples/pytorch/zoo.py) through gradcomm-export and
gradcomm-compile, and the numerics of a compiled dense step.

  zoo_step.py build --bin BIN --work DIR [--strategy S] MODEL...
      exports and compiles every MODEL (a shared library each); fails
      naming each model that does not export or compile.

  zoo_step.py numerics --bin BIN --mpiexec MPIEXEC --work DIR --ranks R
                       --steps S [--optimized MODEL...] MODEL...
      compiles MODEL's dense step for R ranks, runs S steps under mpiexec
      and compares rank 0's parameters and buffers with eager PyTorch in
      float64 (the reference) and in float32. The criterion (docs/export.md):
      the compiled step's worst error relative to each tensor's largest
      magnitude is at most 2x eager float32's, against the same reference.
      The steps are compiled with LLVM at -O0: the generated code carries
      no fast-math flags, so LLVM's optimizer may not change its
      arithmetic, and -O0 compiles 3x faster. --optimized checks that
      claim: those models are compiled a second time at the default level
      and must give the same bits on every rank.
      --precision bf16|f16 converts the model (and a float input) to that
      type first, autocast-bf16|autocast-f16 exports and runs the forward
      pass under torch.autocast; eager PyTorch then runs in that precision
      and the float64 reference starts from the same rounded weights.
      Dropout and stochastic depth are set to 0 first: their masks come
      from another generator than PyTorch's (docs/export.md).

  zoo_step.py drift --image SIZE --steps S --batch B MODEL...
      eager float32 against eager float64 alone (one rank), at SIZExSIZE
      inputs: how far PyTorch itself drifts, which bounds what `numerics`
      can tell (a measurement; no criterion).

  zoo_step.py run --work DIR --steps S [--optimized MODEL...] MODEL...
      (internal: one rank of `numerics`, under mpiexec; every MODEL's
      library and manifest from DIR, in one process)
"""

import argparse
import copy
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

import zoo  # noqa: E402
from model_step import global_batch, hold_mpi  # noqa: E402
from gradcomm.mlir import ExportError  # noqa: E402
from gradcomm.torch import optim  # noqa: E402
from gradcomm.torch.export import (autocasting, export_step,  # noqa
                                   from_numpy, functional_call,
                                   initial_values, to_numpy)

LR = 0.05
MOMENTUM = 0.9


def optimizer():
    return optim.make("sgd", momentum=MOMENTUM)


def deterministic(spec):
    """The spec with dropout and stochastic depth off (p = 0)."""
    for module in spec.model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
        if type(module).__name__ == "StochasticDepth":
            module.p = 0.0
        if hasattr(module, "dropout") and isinstance(module.dropout, float):
            module.dropout = 0.0  # nn.MultiheadAttention
    return spec


# --precision: the model's own dtype, or float32 master weights under
# torch.autocast (docs/export.md, "Mixed precision").
MODEL_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16,
                "f16": torch.float16}
AUTOCAST = {"autocast-bf16": "bf16", "autocast-f16": "f16"}
PRECISIONS = list(MODEL_DTYPES) + list(AUTOCAST)


def make_spec(name, precision="f32", numerics=True):
    """The zoo's spec, deterministic for numerics, in `precision`."""
    spec = getattr(zoo, name)()
    if numerics:
        spec = deterministic(spec)
    dtype = MODEL_DTYPES.get(precision, torch.float32)
    if dtype != torch.float32:
        spec.model.to(dtype)
        if spec.input_dtype.is_floating_point:
            spec.input_dtype = dtype
    return spec


def export_and_compile(name, work, bin_dir, batch_size, ranks, strategy,
                       extra=(), precision="f32"):
    """(manifest path, library path, export s, compile s)."""
    numerics = strategy == "dense-numerics"
    spec = make_spec(name, precision, numerics)
    if numerics:
        strategy = "dense"
    start = time.time()
    exported = export_step(spec, batch_size, ranks, optimizer(), lr=LR,
                           autocast=AUTOCAST.get(precision))
    mlir = os.path.join(work, name + ".mlir")
    exported.write(mlir)
    exported_at = time.time()
    library = os.path.join(work, "lib%s.so" % name)
    compile_library(bin_dir, mlir, library, strategy, extra)
    return (mlir[:-5] + ".json", library, exported_at - start,
            time.time() - exported_at)


def compile_library(bin_dir, mlir, library, strategy, extra=()):
    """gradcomm-compile's shared library of the step in `mlir`."""
    subprocess.run([os.path.join(bin_dir, "gradcomm-compile"), mlir, "-o",
                    library, "--emit=shared", "--strategy=" + strategy] +
                   list(extra), check=True)


def build(args):
    os.makedirs(args.work, exist_ok=True)
    failed = []
    # LLVM's optimizer is not what this checks (the numerics tests compile
    # at the default level): -O0 halves the compile time.
    extra = ["--opt-level=0"]
    if args.strategy == "scalecom":
        extra.append("--ratio=100")
    for name in args.models:
        try:
            _, _, export_s, compile_s = export_and_compile(
                name, args.work, args.bin, 2, 2, args.strategy, extra)
            print("%-20s export %5.1f s, compile (%s) %5.1f s" % (
                name, export_s, args.strategy, compile_s), flush=True)
        except (ExportError, subprocess.CalledProcessError) as error:
            print("%-20s FAILED: %s" % (name, error), flush=True)
            failed.append(name)
    if failed:
        print("not built: " + ", ".join(failed))
        return 1
    return 0


def run(args):
    """One rank: S compiled steps of each model on this rank's slice of
    each batch, the models one after another in this one process; the
    --optimized models' second library (lib<model>-optimized.so) too."""
    hold_mpi()
    for name in args.models:
        run_library(args, name, name)
    for name in args.optimized:
        run_library(args, name, name + "-optimized")
    return 0


def run_library(args, name, stem):
    """S steps of model `name` through lib<stem>.so; rank R's parameters
    and floating-point buffers afterwards to <stem>.rankR.npz."""
    from gradcomm.runner import CompiledStep

    with open(os.path.join(args.work, name + ".json")) as f:
        manifest = json.load(f)
    spec = make_spec(name, args.precision)
    step = CompiledStep(os.path.join(args.work, "lib%s.so" % stem), manifest)
    rank, b = step.rank(), manifest["batch"]
    values = initial_values(spec.model, optimizer())
    for s in range(args.steps):
        x, y = global_batch(spec, manifest, s)
        values["input"] = to_numpy(x[rank * b:(rank + 1) * b].to(
            spec.input_dtype))
        values["target"] = y[rank * b:(rank + 1) * b].numpy()
        outputs = step(values)
        outputs.pop("loss")
        values.update(outputs)
    step.close()
    names = [n for n, _ in spec.model.named_parameters()] + [
        n for n, v in spec.model.named_buffers() if v.is_floating_point()]
    types = {e["name"]: e["dtype"] for e in manifest["inputs"]}
    np.savez(os.path.join(args.work, "%s.rank%d.npz" % (stem, rank)),
             **{n: from_numpy(values[n], types[n]) for n in names})


def eager(spec, dtype, ranks, batch_size, steps, autocast=None):
    """Data-parallel eager steps in `dtype` (under torch.autocast in
    `autocast`, 'bf16' or 'f16', if given): rank gradients averaged,
    torch.optim.SGD; returns rank 0's parameters and buffers."""
    model = copy.deepcopy(spec.model).to(dtype)
    params = {n: p.detach().clone().requires_grad_(True)
              for n, p in model.named_parameters()}
    buffers = [{n: v.detach().clone() for n, v in model.named_buffers()}
               for _ in range(ranks)]
    sgd = torch.optim.SGD(list(params.values()), lr=LR, momentum=MOMENTUM)
    for s in range(steps):
        x, y = global_batch(spec, {"batch": batch_size, "ranks": ranks}, s)
        if x.is_floating_point():
            x = x.to(dtype)
        grads = [torch.zeros_like(p) for p in params.values()]
        for r in range(ranks):
            state = dict(params)
            state.update(buffers[r])
            part = slice(r * batch_size, (r + 1) * batch_size)
            with autocasting(autocast):
                loss = spec.loss_fn(functional_call(model, state,
                                                    (x[part],)), y[part])
            for acc, g in zip(grads, torch.autograd.grad(
                    loss, list(params.values()))):
                acc += g
        for p, g in zip(params.values(), grads):
            p.grad = g / ranks
        sgd.step()
    result = {n: p.detach().double().numpy() for n, p in params.items()}
    result.update({n: v.double().numpy() for n, v in buffers[0].items()
                   if v.is_floating_point()})
    return result


# Tensors whose reference is near zero everywhere (a running mean after a
# normalized 1x1 map is zero up to rounding) are judged against this
# absolute scale instead of their own magnitude.
SCALE_FLOOR = 1e-4


def worst_error(actual, reference):
    """(largest error relative to the tensor's largest finite magnitude,
    name). Non-finite values (an attention mask's -inf) must sit at the
    same places with the same values, else the error is infinite."""
    worst, worst_name = 0.0, None
    for name, want in reference.items():
        got = np.asarray(actual[name], dtype=np.float64)
        finite = np.isfinite(want)
        if not (np.array_equal(np.isfinite(got), finite) and np.array_equal(
                got[~finite], want[~finite], equal_nan=True)):
            error = float("inf")
        elif finite.any():
            scale = max(float(np.max(np.abs(want[finite]))), SCALE_FLOOR)
            error = float(np.max(np.abs(got[finite] - want[finite]))) / scale
        else:
            error = 0.0
        if error >= worst:
            worst, worst_name = error, name
    return worst, worst_name


def numerics(args):
    os.makedirs(args.work, exist_ok=True)
    failed = []
    unknown = sorted(set(args.optimized) - set(args.models))
    if unknown:
        raise SystemExit("--optimized names models not checked: " +
                         ", ".join(unknown))
    for name in args.models:
        export_and_compile(name, args.work, args.bin, args.batch, args.ranks,
                           "dense-numerics", ["--opt-level=0"],
                           args.precision)
        if name in args.optimized:
            compile_library(args.bin, os.path.join(args.work, name + ".mlir"),
                            os.path.join(args.work,
                                         "lib%s-optimized.so" % name),
                            "dense")
    # One job runs every model's steps: a Python start-up per rank, not per
    # model and rank.
    subprocess.run(["timeout", "600", args.mpiexec, "-n", str(args.ranks),
                    sys.executable, __file__, "run", "--steps",
                    str(args.steps), "--work", args.work, "--precision",
                    args.precision, "--optimized", *args.optimized, "--"] +
                   args.models, check=True)
    for name in args.optimized:
        differ = []
        for rank in range(args.ranks):
            at_o0 = np.load(os.path.join(args.work, "%s.rank%d.npz" % (
                name, rank)))
            at_default = np.load(os.path.join(
                args.work, "%s-optimized.rank%d.npz" % (name, rank)))
            differ += ["rank %d %s" % (rank, key) for key in at_o0.files
                       if at_o0[key].tobytes() != at_default[key].tobytes()]
        print("%-20s %s, -O0 against the default level: %s" % (
            name, args.precision, "the same bits" if not differ else
            "FAIL, %d tensors differ (%s%s)" % (
                len(differ), ", ".join(differ[:4]),
                ", ..." if len(differ) > 4 else "")), flush=True)
        if differ:
            failed.append(name + " (optimized)")
    for name in args.models:
        compiled = dict(np.load(os.path.join(args.work,
                                             "%s.rank0.npz" % name)))
        # The reference is float64 from the same (rounded) initial values;
        # eager PyTorch runs in the precision the step was exported in.
        spec = make_spec(name, args.precision)
        reference = eager(spec, torch.float64, args.ranks, args.batch,
                          args.steps)
        dtype = MODEL_DTYPES.get(args.precision, torch.float32)
        eager_values = eager(spec, dtype, args.ranks, args.batch,
                             args.steps, AUTOCAST.get(args.precision))
        ours, ours_at = worst_error(compiled, reference)
        theirs, theirs_at = worst_error(eager_values, reference)
        ratio = ours / max(theirs, 1e-30)
        ok = ours <= 2.0 * theirs + 1e-7
        print("%-20s %s, %d ranks, %d steps: compiled %.3g (%s), eager "
              "%.3g (%s), ratio %.2f %s" % (
                  name, args.precision, args.ranks, args.steps, ours,
                  ours_at, theirs, theirs_at, ratio,
                  "ok" if ok else "FAIL"), flush=True)
        if not ok:
            failed.append(name)
    if failed:
        print("numerics criterion missed: " + ", ".join(failed))
        return 1
    return 0


def drift(args):
    zoo.IMAGE = (3, args.image, args.image)
    for name in args.models:
        spec = deterministic(getattr(zoo, name)())
        reference = eager(spec, torch.float64, 1, args.batch, args.steps)
        error, where = worst_error(
            eager(spec, torch.float32, 1, args.batch, args.steps), reference)
        print("%-20s %dx%d, batch %d, %d steps: eager float32 %.3g (%s)" % (
            name, args.image, args.image, args.batch, args.steps, error,
            where), flush=True)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build")
    p.add_argument("--bin", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--strategy", default="scalecom")
    p.add_argument("models", nargs="*", default=zoo.ZOO)
    p = sub.add_parser("numerics")
    p.add_argument("--bin", required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--precision", choices=PRECISIONS, default="f32")
    p.add_argument("--optimized", nargs="*", default=[])
    p.add_argument("models", nargs="+")
    p = sub.add_parser("drift")
    p.add_argument("--image", type=int, default=32)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("models", nargs="+")
    p = sub.add_parser("run")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--precision", choices=PRECISIONS, default="f32")
    p.add_argument("--optimized", nargs="*", default=[])
    p.add_argument("models", nargs="+")
    args = parser.parse_args()
    return {"build": build, "numerics": numerics, "drift": drift,
            "run": run}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())

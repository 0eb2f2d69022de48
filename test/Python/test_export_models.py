"""An example model (examples/pytorch/models.py) exported with
gradcomm-export and compiled with gradcomm-compile (model_step.py runs and
checks the steps):
  - dense on 1 and on 4 ranks: the parameters after 5 steps equal
    PyTorch's data-parallel step within 1e-5 (relative to each tensor's
    largest magnitude) on every rank;
  - dense on 4 ranks compiled with --overlap (reductions hoisted to their
    gradients, waits at their uses): the same bits as without;
  - ScaleCom on 4 ranks: the replicas stay bit-identical (3 steps);
  - ScaleCom on 4 ranks with a 5-step dense warm-up (the recipe, lowered to
    the runtime's recipe call): the same bits as dense for 5 steps;
  - gossip on 4 ranks, plain SGD: the replicas differ and their mean
    equals PyTorch's step (1 step from identical replicas; mixing keeps the
    mean, and plain SGD is linear in the gradient, so the mean of the local
    steps is the averaged-gradient step; with Adam it is not).
Each model exercises another optimizer and reduction."""

import argparse
import os

import pytest

import model_step

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples",
                      "pytorch", "models.py")
STEP = os.path.join(HERE, "model_step.py")
O0 = "--opt-level=0"
# model: (gradcomm-export flags, model_step.py's optimizer options)
FLAGS = {
    "mlp": (["--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
             "--weight-decay", "1e-4", "--reduction", "sum"],
            '{"momentum": 0.9, "weight_decay": 1e-4}'),
    "cnn": (["--optimizer", "adam", "--lr", "0.002", "--weight-decay",
             "0.01"], '{"weight_decay": 0.01}'),
    "transformer": (["--optimizer", "sgd", "--lr", "0.1", "--momentum",
                     "0.9", "--nesterov"], '{"momentum": 0.9, "nesterov": '
                    'true}'),
}


@pytest.mark.parametrize("model", sorted(FLAGS))
def test_exported_steps(tools, ranks, model):
    flags, options = FLAGS[model]
    export, compile_ = tools("gradcomm-export"), tools("gradcomm-compile")
    for n in (1, 4):
        ranks.command(export, "%s:%s" % (MODELS, model), "--batch", 4,
                      "--ranks", n, *flags, "-o", "np%d.mlir" % n)
    # The 1-rank step at the default level, the others at -O0 (a third of
    # the compile time; the generated code has no fast-math flags, so the
    # level changes no bits: python.zoo.numerics.* check that).
    for source, library, extra in (
            ("np1.mlir", "libdense1.so", ["--strategy=dense"]),
            ("np4.mlir", "libdense4.so", ["--strategy=dense", O0]),
            ("np4.mlir", "libdense4-overlap.so",
             ["--strategy=dense", "--overlap", O0]),
            ("np4.mlir", "libscalecom4.so",
             ["--strategy=scalecom", "--ratio=10", "--min-elements=64",
              "--warmup-steps=0", O0]),
            ("np4.mlir", "libscalecom4-warmup.so",
             ["--strategy=scalecom", "--ratio=10", "--min-elements=64",
              "--warmup-steps=5", O0])):
        ranks.command(compile_, source, "-o", library, "--emit=shared",
                      *extra)
    ranks.command(export, "%s:%s" % (MODELS, model), "--batch", 4, "--ranks",
                  4, "--optimizer", "sgd", "--lr", "0.05", "-o",
                  "np4-sgd.mlir")
    ranks.command(compile_, "np4-sgd.mlir", "-o", "libgossip4.so",
                  "--emit=shared", "--strategy=gossip",
                  "--schedule=matching", "--mixing=0.5", O0)

    ranks.mpiexec(1, STEP, "run", "--model", model, "--job", "dense1", 5,
                  "np1.json", options, "--check", "dense1", expect_ok=False)
    # The 4-rank steps one after another in one job (a Python start-up per
    # rank is about 3 s of CPU: one job per step made much of the time).
    ranks.mpiexec(4, STEP, "run", "--model", model,
                  "--job", "dense4", 5, "np4.json", options,
                  "--check", "dense4",
                  "--job", "dense4-overlap", 5, "np4.json", options,
                  "--job", "scalecom4", 3, "np4.json", options,
                  "--job", "scalecom4-warmup", 5, "np4.json", options,
                  "--job", "gossip4", 1, "np4-sgd.json", "{}",
                  expect_ok=False)
    # The checks of the outputs, in this process: a Python start-up with
    # torch costs more than all of them.
    _check(ranks.work, "identical", out="out-dense4-overlap",
           other="out-dense4")
    _check(ranks.work, "identical", out="out-scalecom4-warmup",
           other="out-dense4")
    _check(ranks.work, "replicas", out="out-scalecom4")
    _check(ranks.work, "mean", model=model, manifest="np4-sgd.json",
           out="out-gossip4", optimizer_options="{}", tolerance=1e-5)


def _check(work, mode, **arguments):
    """model_step.py's check `mode` on the outputs under `work` (the file
    arguments are relative to it); it must pass."""
    for name in ("out", "other", "manifest"):
        if name in arguments:
            arguments[name] = os.path.join(work, arguments[name])
    assert getattr(model_step, mode)(argparse.Namespace(**arguments)) == 0

"""The simulated learners (docs/learners.md) against real ranks, bit for
bit: the runtime's ops (learners_ops.py) on 2 and 4 ranks; the trainer
(examples/pytorch/train_fmnist.py --learners N) against the same trainer
under mpiexec -n N with the hooks, whose parameters after the last step
must be equal (the MLP, and the CNN whose batch norm follows DDP's buffer
rule; ScaleCom with the recipe, local top-k, dense); the refusals."""

import os
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TRAINER = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples",
                       "pytorch", "train_fmnist.py")
COMMON = ["--steps", 12, "--evaluations", 1, "--eval-subset", 200,
          "--ratio", 100, "--lr-warmup-steps", 3, "--lr-schedule", "cosine"]
RECIPE = ["--comm", "scalecom", "--warmup-steps", 3,
          "--momentum-correction", 1, "--clip", 5]


@pytest.mark.parametrize("n", [2, 4], ids=lambda n: "np%d" % n)
def test_ops_equal_real_ranks(ranks, n):
    ranks.mpiexec(n, os.path.join(HERE, "learners_ops.py"))


def _trained(ranks, work, n, real_arguments, simulated_arguments):
    """The parameters the trainer saves under mpiexec -n `n` and with
    --learners `n`: (real, simulated)."""
    real = os.path.join(work, "real.pt")
    simulated = os.path.join(work, "simulated.pt")
    ranks.mpiexec(n, TRAINER, *real_arguments, "--save", real,
                  expect_ok=False)
    ranks.python(TRAINER, *simulated_arguments, "--learners", n, "--save",
                 simulated)
    return torch.load(real), torch.load(simulated)


# The MLP with the recipe on 2 and 4 ranks is in the two tests below it
# (the velocity kept on 2, beta "auto" on 4).
# Local top-k and dense at 2 learners: their sums and the buffer rule are
# the same code at any n, which the 4-learner ScaleCom case and
# test_auto_beta_is_one_over_n cover (a 4-rank job is 4 Python start-ups
# on CI's 2 cores).
@pytest.mark.parametrize("model,n,comm", [
    ("cnn", 4, RECIPE + ["--selection", "chunk"]),
    ("cnn", 2, ["--comm", "local-topk"]),
    ("cnn", 2, ["--comm", "dense"]),
], ids=["cnn-scalecom-chunk-4", "cnn-local-topk-2", "cnn-dense-2"])
def test_trainer_equals_real_ranks(ranks, work, model, n, comm):
    arguments = ["--model", model] + COMMON + comm
    real, simulated = _trained(ranks, work, n, arguments, arguments)
    assert real.keys() == simulated.keys()
    differ = [key for key in real if not torch.equal(real[key],
                                                      simulated[key])]
    assert not differ, "differ from the real ranks': " + ", ".join(differ)


def test_auto_beta_is_one_over_n(ranks, work):
    """The MLP with the recipe: beta="auto" on 4 real ranks is 4 learners
    with beta 0.25, bit for bit (the learners' own resolution is
    for_group's, test_recipe.py)."""
    arguments = ["--model", "mlp"] + COMMON + RECIPE
    real, simulated = _trained(ranks, work, 4, arguments + ["--beta", "auto"],
                               arguments + ["--beta", 0.25])
    assert all(torch.equal(real[key], simulated[key]) for key in real)


def test_kept_velocity_equals_real_ranks(ranks, work):
    """The MLP with the recipe and --keep-velocity 1 on 2 real ranks is 2
    learners, bit for bit: the option reaches the runtime through the hook
    and the learners alike; and it changes the run (the masked one
    differs)."""
    arguments = ["--model", "mlp"] + COMMON + RECIPE
    kept = arguments + ["--keep-velocity", 1]
    real, simulated = _trained(ranks, work, 2, kept, kept)
    assert all(torch.equal(real[key], simulated[key]) for key in real)
    masked = os.path.join(work, "masked.pt")
    ranks.python(TRAINER, *arguments, "--keep-velocity", 0, "--learners", 2,
                 "--save", masked)
    masked = torch.load(masked)
    assert not all(torch.equal(masked[key], simulated[key]) for key in masked)


def test_refusals(ranks):
    ranks.refused("at least 2", [sys.executable, TRAINER, "--learners", "1",
                                 "--steps", "1"])
    ranks.refused("not under a multi-process launcher",
                  [ranks.mpiexec_path, "-n", "2", sys.executable, TRAINER,
                   "--learners", "2", "--steps", "1"])
    ranks.refused("takes --comm dense, scalecom or local-topk",
                  [sys.executable, TRAINER, "--learners", "2", "--comm",
                   "gossip", "--steps", "1"])

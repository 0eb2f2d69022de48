"""examples/pytorch/train_fmnist.py launched by torchrun (no mpiexec: the
runtime's MPI starts through the process group's store) trains as it does
under mpiexec: for dense, ScaleCom (compressing from the first step) and
FSDP with the sharded ScaleCom hook (per tensor, the embeddings and the
output layer kept dense by the presets), the same seed gives the same
training loss, test accuracy and bytes sent at every evaluation. (Local
top-k and gossip come up through the same store; test_ddp_hooks.py's
start without mpiexec runs the gossip averager that way.)"""

import json
import os

import pytest

TRAINER = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples", "pytorch", "train_fmnist.py")
# The transformer on the GPL's text: no dataset package needed.
COMMON = ["--model", "transformer", "--optimizer", "adam", "--lr", 0.003,
          "--epochs", 0.015, "--evaluations", 2, "--seed", 3]
RUNS = {
    "dense": ["--comm", "dense"],
    "scalecom": ["--comm", "scalecom", "--warmup-epochs", 0],
    "sharded": ["--comm", "scalecom", "--sharded", "--warmup-epochs", 0,
                "--fsdp-selection", "tensor", "--dense", "embeddings,last"],
}


def curve(path):
    with open(path) as file:
        run = json.load(file)
    return [(point["step"], point["train_loss"], point["test_accuracy"],
             point["bytes"]) for point in run["curve"]]


@pytest.mark.parametrize("run", sorted(RUNS))
def test_torchrun_equals_mpiexec(ranks, work, run):
    arguments = RUNS[run] + COMMON
    by_torchrun = os.path.join(work, "torchrun.json")
    by_mpiexec = os.path.join(work, "mpiexec.json")
    # --json, not --log: torchrun takes --log as its own --log-dir.
    ranks.torchrun(2, TRAINER, *arguments, "--json", by_torchrun,
                   expect_ok=False)
    ranks.mpiexec(2, TRAINER, *arguments, "--json", by_mpiexec,
                  expect_ok=False)
    assert len(curve(by_torchrun)) == 2
    assert curve(by_torchrun) == curve(by_mpiexec)

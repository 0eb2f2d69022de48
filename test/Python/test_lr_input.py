"""A step exported with --lr-input takes its learning rate from
examples/pytorch/train.py each step: without --lr it refuses to start,
lr 0 learns nothing, and the cosine schedule changes the run."""

import os
import re
import sys

TRAIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples", "pytorch")


def test_the_learning_rate_reaches_the_step(tools, ranks):
    # The transformer's dense step for 2 ranks with an lr input (on the
    # GPL's text: no dataset package needed).
    ranks.command(tools("gradcomm-export"),
                  os.path.join(TRAIN, "models.py") + ":transformer",
                  "--batch", 32, "--ranks", 2, "--optimizer", "adam",
                  "--lr", "0.003", "--lr-input", "-o", "step.mlir")
    ranks.command(tools("gradcomm-compile"), "step.mlir", "--emit=shared",
                  "-o", "libdense.so", "--strategy=dense")
    common = ["--model", "transformer", "--library", "./libdense.so",
              "--manifest", "step.json", "--epochs", "0.02",
              "--optimizer-options", "", "--seed", "1"]
    script = os.path.join(TRAIN, "train.py")
    ranks.refused("the step takes its learning rate as an input",
                  [ranks.mpiexec_path, "-n", "2", sys.executable, script]
                  + common, timeout=300)

    def final_test_loss(*extra):
        output = ranks.mpiexec(2, script, *common, *extra, expect_ok=False)
        found = re.findall(r"test loss ([0-9.]+)", output)
        assert found, output[-2000:]
        return float(found[-1])

    frozen = final_test_loss("--lr", "0")
    constant = final_test_loss("--lr", "0.003")
    cosine = final_test_loss("--lr", "0.003", "--lr-schedule", "cosine")
    print("test loss: lr 0 %s, lr 0.003 %s, cosine %s"
          % (frozen, constant, cosine))
    assert constant < frozen - 0.1, "the lr input did not reach the update"
    assert cosine != constant, "the schedule did not reach the step"

"""The peer comparison's harness (bench/peers): examples/pytorch/
train_fmnist.py runs PyTorch's own hooks (bf16_compress_hook,
fp16_compress_hook, powerSGD_hook with its warm-up) beside GradComm's in
the same trainer, records per step its wall and CPU time and phases, and
for GradComm's hooks where their time went; bench/peers/summarize.py turns
the runs into the table. Checks the records' shape and meaning, not speed:
every row runs its steps, the hooks' parts cover their buckets after the
warm-up, PowerSGD really compresses after its start iteration (its
gradients differ from DDP's), and the table has a row and ratios per run;
the curves evaluated on a subset (--eval-subset) priced by
bench/peers/time_to_accuracy.py give DDP its own target."""

import json
import os
import re
import shutil

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TRAINER = os.path.join(ROOT, "examples", "pytorch", "train_fmnist.py")
PEERS = os.path.join(ROOT, "bench", "peers")
ROWS = ("ddp", "bf16", "fp16", "powersgd", "scalecom")
# The small transformer on the GPL's text: no dataset package needed; one
# DDP bucket, so PowerSGD's two-thread race over gloo cannot arise.
COMMON = ["--model", "transformer", "--batch", 8, "--steps", 6,
          "--warmup-steps", 2, "--evaluations", 3, "--eval-subset", 300,
          "--seed", 2]


@pytest.fixture(scope="module")
def runs(module_ranks):
    """Every row's run under torchrun at 2 ranks, once for the module's
    tests: {row: its JSON}."""
    paths = {}
    for row in ROWS:
        extra = ["--powersgd-rank", 1] if row == "powersgd" else []
        paths[row] = os.path.join(module_ranks.work, row + ".json")
        module_ranks.torchrun(2, TRAINER, "--comm", row, *COMMON, *extra, "--label",
                       row, "--json", paths[row], expect_ok=False)
    return paths


def test_records(runs):
    loaded = {}
    for row, path in runs.items():
        with open(path) as file:
            loaded[row] = json.load(file)
    for row, run in loaded.items():
        for phase in ("wall", "cpu", "forward", "backward", "optimizer"):
            values = run["timeline"][phase]
            assert len(values) == 6 and min(values) > 0, (row, phase, values)
    hooks = loaded["scalecom"]["timeline"]["hooks"]
    assert len(hooks) == 6 and all(h.get("jobs", 0) >= 1 for h in hooks), \
        "scalecom: no hook jobs recorded per step: %r" % hooks
    assert not any(h.get("jobs") for h in loaded["bf16"]["timeline"]["hooks"]),\
        "bf16: GradComm's profile counted PyTorch's hook"
    # The same data and seed: the warm-up steps are DDP's all-reduce, then
    # PowerSGD's low-rank gradients train differently.
    loss = {row: run["curve"][-1]["train_loss"] for row, run in loaded.items()}
    assert loss["powersgd"] != loss["ddp"], loss
    assert loaded["powersgd"]["powersgd_rank"] == 1
    # --eval-subset: every point on the subset, the last on the whole set.
    for row, run in loaded.items():
        curve = run["curve"]
        assert [p["step"] for p in curve] == [2, 4, 6], (row, curve)
        assert all("subset_accuracy" in p for p in curve), (row, curve)
        assert not any("test_accuracy" in p for p in curve[:-1]), (row, curve)
        assert 0 < curve[-1]["test_accuracy"] < 1, (row, curve)


def test_table(runs, ranks):
    table = ranks.python(os.path.join(PEERS, "summarize.py"), "--warmup", 2,
                         *runs.values())
    lines = table.splitlines()
    assert sum(bool(re.match(r"\| (%s) \|" % "|".join(ROWS), line))
               for line in lines) == 5, table
    # The ratio to DDP fp32 is 1.00 on DDP's own row.
    assert any(re.match(r"\| ddp \|.*\| 1\.00 \| - \|", line)
               for line in lines), table


def test_time_to_accuracy(runs, ranks):
    # The runs as their own curves and their own prices.
    curves = []
    for row, path in runs.items():
        curve = os.path.join(ranks.work,
                             "accuracy-transformer-shm-%s-s2.json" % row)
        shutil.copy(path, curve)
        shutil.copy(path, os.path.join(ranks.work,
                                       "transformer-test-%s.json" % row))
        curves.append(curve)
    table = ranks.python(os.path.join(PEERS, "time_to_accuracy.py"),
                         "--run-warmup", 2, "--price", "test=" + ranks.work,
                         *curves)
    lines = table.splitlines()
    # DDP reaches its own final accuracy minus 0.5 point by its last point,
    # and its final accuracy is its own reference.
    assert any(re.match(r"\| ddp \| [0-9]* / [0-9]* \| 1/1 \| [246] \| "
                        r"[0-9]* \| [0-9]* \| [-0-9.]* \| [0-9.]* \| "
                        r"\+0\.00 \|", line) for line in lines), table
    assert sum(bool(re.match(r"\| (bf16|fp16|powersgd|scalecom) \|", line))
               for line in lines) == 4, table

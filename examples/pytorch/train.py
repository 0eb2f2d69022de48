"""Trains an exported, gradcomm-compiled step under mpiexec: the MLP, CNN
or ResNet-18 on Fashion-MNIST, or the transformer language model on a text
(--text, default GPL-3 from Debian's base-files). Every rank loads the compiled
library through gradcomm.runner and takes its slice of each global batch;
rank 0 evaluates the trained model in eager PyTorch (its own batch-norm
statistics) on the test set (the last 10 % of the text).

  gradcomm-export examples/pytorch/models.py:cnn --batch 32 --ranks 4 \\
      --momentum 0.9 --lr 0.05 -o cnn.mlir
  gradcomm-compile cnn.mlir -o libcnn.so --emit=shared --strategy=scalecom
  mpiexec.mpich -n 4 .venv/bin/python examples/pytorch/train.py \\
      --model cnn --library ./libcnn.so --manifest cnn.json --epochs 1

For the gossip study (scripts/gossip_study.sh MODEL=cnn), as the C++
Fashion-MNIST trainer: --time-budget S trains S seconds of training time
(evaluations are not counted) and evaluates --eval-times times, evenly
spaced, on --eval-samples test images, writing --log CSV; --straggler
RANK:FACTOR makes that rank sleep (FACTOR - 1) times its fastest step so
far before each step (plus --compute-ms on every rank); --stop-alone lets
every rank keep its own clock (asynchronous strategies).
"""

import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))

import models  # noqa: E402
from gradcomm.runner import CompiledStep  # noqa: E402
from gradcomm.torch import optim  # noqa: E402
from gradcomm.torch.export import functional_call, initial_values  # noqa


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(directory, prefix):
    images = read_idx(os.path.join(directory, prefix +
                                   "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(directory, prefix +
                                   "-labels-idx1-ubyte.gz"))
    images = images.astype(np.float32)[:, None] / np.float32(255.0)
    return images, labels.astype(np.int64)


# The transformer's 64 token ids: these 63 characters (text lower-cased)
# and one for every other character.
ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 \n.,;:'\"()-!?/&%$#*+=<>[]_"


def load_text(path, context):
    """(train, test) windows of context + 1 token ids."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read().lower()
    lookup = {c: i for i, c in enumerate(ALPHABET)}
    ids = np.array([lookup.get(c, len(ALPHABET)) for c in text], np.int64)
    split = int(len(ids) * 0.9)
    windows = np.lib.stride_tricks.sliding_window_view(ids, context + 1)
    return windows[:split - context], windows[split:]


class BatchSchedule:
    """This rank's sample indices for each step: the data is shuffled once
    per epoch (seeded), each global batch of batch * ranks samples is split
    in rank order. Iterating yields one index array per step."""

    def __init__(self, count, batch, ranks, rank, epochs, seed):
        self.count, self.batch, self.rank = count, batch, rank
        self.global_batch = batch * ranks
        self.steps_per_epoch = count // self.global_batch
        self.steps = max(1, int(epochs * self.steps_per_epoch))
        self.seed = seed

    def __iter__(self):
        rng = np.random.RandomState(self.seed)
        order = rng.permutation(self.count)
        for step in range(self.steps):
            if step and step % self.steps_per_epoch == 0:
                order = rng.permutation(self.count)
            first = ((step % self.steps_per_epoch) * self.global_batch +
                     self.rank * self.batch)
            yield order[first:first + self.batch]


def evaluate(spec, values, images, labels):
    model = spec.model
    model.eval()
    state = {n: torch.from_numpy(values[n]) for n, _ in
             list(model.named_parameters()) + list(model.named_buffers())
             if n in values}
    correct, loss = 0, 0.0
    with torch.no_grad():
        for start in range(0, len(labels), 1000):
            x = torch.from_numpy(images[start:start + 1000])
            y = torch.from_numpy(labels[start:start + 1000])
            out = functional_call(model, state, (x,))
            if out.dim() == 3:  # language model: per-token loss, accuracy
                loss += float(spec.loss_fn(out, y)) * len(y)
                correct += float((out.argmax(2) == y).float().mean()) * len(y)
            else:
                loss += float(spec.loss_fn(out, y, reduction="sum"))
                correct += int((out.argmax(1) == y).sum())
    return loss / len(labels), correct / len(labels)


class TimeBudget:
    """--time-budget: when to evaluate and stop, stragglers, the CSV log."""

    def __init__(self, args, step, rank, ranks):
        self.args, self.step, self.rank, self.ranks = args, step, rank, ranks
        self.evaluations = max(1, args.eval_times)
        self.next = 1
        self.straggler = args.straggler  # (rank, factor), parsed by main
        # This rank's fastest step so far: a lower bound of its compute that
        # time spent waiting for peers or locks cannot inflate.
        self.compute = float("inf")
        self.start = time.perf_counter()
        self.log = None
        if rank == 0 and args.log:
            self.log = open(args.log, "w")
            self.log.write("label,seed,ranks,step,epoch,wall_s,test_loss,"
                           "test_acc,replica_acc_mean,replica_acc_min,"
                           "replica_acc_max,elapsed_s\n")

    def elapsed(self):
        return time.perf_counter() - self.start

    def due(self):
        """Whether to evaluate now; synchronous strategies decide together
        (their collectives need every rank at the same step)."""
        due = np.array([float(self.elapsed() >= self.args.time_budget *
                              self.next / self.evaluations)], np.float32)
        if not self.args.stop_alone:
            self.step.sum_over_ranks(due, b"train.due")
        return due[0] > 0

    def slow_down(self):
        seconds = self.args.compute_ms * 1e-3
        if self.rank == self.straggler[0]:
            compute = self.args.compute_ms * 1e-3 or (
                self.compute if self.compute < float("inf") else 0.0)
            seconds += (self.straggler[1] - 1.0) * compute
        if seconds > 0:
            time.sleep(seconds)

    def measured(self, seconds):
        self.compute = min(self.compute, seconds)

    def per_rank(self, value):
        """Every rank's `value`, on every rank."""
        slots = np.zeros(self.ranks, np.float32)
        slots[self.rank] = value
        return self.step.sum_over_ranks(slots, b"train.gather")

    def record(self, spec, values, images, labels, steps, epoch, wall):
        """Evaluates the averaged model (rank 0) and every replica on the
        first --eval-samples test images; the clock stops meanwhile."""
        began = time.perf_counter()
        elapsed_here = self.elapsed()
        samples = slice(0, self.args.eval_samples)
        images, labels = images[samples], labels[samples]
        _, replica = evaluate(spec, values, images, labels)
        # The model's parameters and buffers (not the optimizer's state).
        model_names = {n for n, _ in list(spec.model.named_parameters()) +
                       list(spec.model.named_buffers())}
        averaged = {}
        for name, value in values.items():
            if name not in model_names or value.dtype != np.float32:
                continue
            averaged[name] = self.step.sum_over_ranks(
                np.ascontiguousarray(value, np.float32).copy(),
                b"train.average") / np.float32(self.ranks)
        replicas = self.per_rank(replica)
        elapsed = float(self.per_rank(elapsed_here).max())
        if self.rank == 0:
            loss, accuracy = evaluate(spec, averaged, images, labels)
            if self.log:
                self.log.write("%s,%d,%d,%d,%.4f,%.4f,%.6f,%.6f,%.6f,%.6f,"
                               "%.6f,%.4f\n" % (
                                   self.args.label, self.args.seed,
                                   self.ranks, steps, epoch, wall, loss,
                                   accuracy, replicas.mean(), replicas.min(),
                                   replicas.max(), elapsed))
                self.log.flush()
            print("eval %s: step %d, %.2f s, averaged model accuracy %.4f, "
                  "replicas %.4f-%.4f" % (self.args.label, steps, elapsed,
                                          accuracy, replicas.min(),
                                          replicas.max()), flush=True)
        # Leave together, so no rank's clock holds rank 0's evaluation of
        # the averaged model.
        self.per_rank(0.0)
        self.start += time.perf_counter() - began
        self.next += 1
        return self.next > self.evaluations


def learning_rate(args, taken, steps):
    """The lr of step `taken` (from 0) of `steps`: --lr, or under cosine
    lr (1 + cos(pi taken / steps)) / 2, CosineAnnealingLR's value."""
    if args.lr_schedule == "cosine":
        return args.lr * (1 + math.cos(math.pi * taken / steps)) / 2
    return args.lr


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--library", required=True)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3",
                        help="the language model's text")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--label", default="exported")
    parser.add_argument("--optimizer-options", default="momentum=0.9",
                        help="comma-separated k=v of the export's optimizer "
                        "(initial state only)")
    parser.add_argument("--time-budget", type=float, default=0.0,
                        help="train this many seconds (not --epochs)")
    parser.add_argument("--eval-times", type=int, default=8)
    parser.add_argument("--eval-samples", type=int, default=2000)
    parser.add_argument("--compute-ms", type=float, default=0.0)
    parser.add_argument("--straggler", default="",
                        help="RANK:FACTOR, that rank computes FACTOR times "
                        "slower")
    parser.add_argument("--stop-alone", action="store_true")
    parser.add_argument("--log", default="")
    parser.add_argument("--json", default="",
                        help="(--epochs runs) write the run as JSON in the "
                        "ScaleCom study's format (scripts/lib/study_report.py"
                        "), with the bytes the runtime counted on rank 0")
    parser.add_argument("--comm", default="",
                        help="--json: the strategy compiled in (dense, "
                        "scalecom, ...)")
    parser.add_argument("--ratio", type=float, default=0.0,
                        help="--json: the compression ratio compiled in")
    parser.add_argument("--warmup-steps", type=int, default=0,
                        help="--json: the dense warm-up compiled in")
    parser.add_argument("--lr", type=float, default=None,
                        help="the learning rate fed to a step exported with "
                        "--lr-input (its base value under --lr-schedule)")
    parser.add_argument("--lr-schedule", default="constant",
                        choices=["constant", "cosine"],
                        help="with --lr: cosine decays it to 0 over the run, "
                        "step by step, as torch's CosineAnnealingLR")
    args = parser.parse_args()
    straggler = (-1, 1.0)
    if args.straggler:
        try:
            who, factor = args.straggler.split(":")
            straggler = (int(who), float(factor))
        except ValueError:
            straggler = (-1, 0.0)
        if straggler[0] < 0 or straggler[1] < 1:
            parser.error("--straggler takes RANK:FACTOR with FACTOR >= 1, "
                         "got '%s'" % args.straggler)
    args.straggler = straggler
    if args.time_budget and args.model == "transformer":
        parser.error("--time-budget evaluates image classifiers only")

    step = CompiledStep(args.library, args.manifest)
    manifest = step.manifest
    rank, ranks, batch = step.rank(), manifest["ranks"], manifest["batch"]
    spec = getattr(models, args.model)()
    if args.model == "transformer":
        context = spec.input_shape[0]
        train_windows, test_windows = load_text(args.text, context)
        images, labels = train_windows[:, :-1], train_windows[:, 1:]
    else:
        images, labels = load(args.data, "train")
    takes_lr = any(entry["name"] == "lr" for entry in manifest["inputs"])
    if takes_lr and args.lr is None:
        parser.error("the step takes its learning rate as an input (exported "
                     "with --lr-input): give --lr")
    if not takes_lr and (args.lr is not None or
                         args.lr_schedule != "constant"):
        parser.error("--lr and --lr-schedule need a step exported with "
                     "--lr-input; this one has lr %s built in"
                     % manifest.get("lr"))
    if args.time_budget and args.lr_schedule != "constant":
        parser.error("--lr-schedule needs --epochs (a time budget has no "
                     "known length)")
    options = dict(kv.split("=") for kv in args.optimizer_options.split(",")
                   if kv)
    optimizer = optim.make(manifest["optimizer"],
                           **{k: float(v) for k, v in options.items()})
    values = initial_values(spec.model, optimizer)

    # A time budget runs until it is spent: the schedule only has to be
    # long enough.
    epochs = 1e6 if args.time_budget else args.epochs
    schedule = BatchSchedule(len(labels), batch, ranks, rank, epochs,
                             args.seed)
    budget = None
    if args.time_budget:
        budget = TimeBudget(args, step, rank, ranks)
        test_images, test_labels = load(args.data, "t10k")
    wall, cpu, losses, taken = 0.0, 0.0, [], 0
    for chosen in schedule:
        if budget and budget.due() and budget.record(
                spec, values, test_images, test_labels, taken,
                taken / schedule.steps_per_epoch, wall):
            break
        if budget:
            budget.slow_down()
        values["input"], values["target"] = images[chosen], labels[chosen]
        if takes_lr:
            values["lr"] = np.array(learning_rate(args, taken, schedule.steps),
                                    np.float32)
        start, start_cpu = time.perf_counter(), time.process_time()
        outputs = step(values)
        seconds = time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        wall += seconds
        if budget:
            budget.measured(seconds)
        losses.append(float(outputs.pop("loss")[0]))
        values.update(outputs)
        taken += 1
    if budget:
        step.close()
        if rank == 0:
            print("summary %s: %d steps on rank 0 in a %.1f s budget"
                  % (args.label, taken, args.time_budget), flush=True)
        return 0
    sent = runtime_bytes(step, args.json + ".stats") if args.json else None
    step.close()
    if rank == 0:
        if args.model == "transformer":
            test_images = np.ascontiguousarray(test_windows[::7, :-1])
            test_labels = np.ascontiguousarray(test_windows[::7, 1:])
        else:
            test_images, test_labels = load(args.data, "t10k")
        test_loss, accuracy = evaluate(spec, values, test_images, test_labels)
        tail = losses[-50:]
        print("summary %s: %d ranks, %d steps (%.2f epochs), train loss "
              "(last 50) %.4f, test loss %.4f, test accuracy %.4f, "
              "%.1f ms per step" % (
                  args.label, ranks, schedule.steps,
                  schedule.steps / schedule.steps_per_epoch,
                  sum(tail) / len(tail), test_loss, accuracy,
                  1000 * wall / schedule.steps))
        if args.json:
            write_json(args, schedule, ranks, sent, (wall, cpu), sum(tail) /
                       len(tail), accuracy)
    return 0


def runtime_bytes(step, path):
    """(value, index) bytes rank 0 sent through the runtime so far, every
    op together (collective: gradcomm_stats_dump)."""
    status = step.library.gradcomm_stats_dump(path.encode())
    if status != 0:
        raise RuntimeError("gradcomm_stats_dump: status %d" % status)
    if step.rank() != 0:
        return None
    with open(path) as f:
        ops = json.load(f)["ranks"][0]["ops"].values()
    os.remove(path)
    return (sum(op["value_bytes_sent"] for op in ops),
            sum(op["index_bytes_sent"] for op in ops))


def write_json(args, schedule, ranks, sent, times, train_loss, accuracy):
    """The run in the format of train_fmnist.py --log: one point, the
    end (the compiled step is evaluated once). `times`: (wall, CPU)
    seconds of rank 0's steps."""
    warmup = ({"warmup": "dense", "warmup_steps": args.warmup_steps}
              if args.warmup_steps else {})
    with open(args.json, "w") as f:
        json.dump({
            "label": args.label, "model": args.model + " (compiled)",
            "comm": args.comm, "seed": args.seed, "ranks": ranks,
            "steps": schedule.steps, "epochs": args.epochs,
            "lr_schedule": args.lr_schedule,
            "options": dict(ratio=args.ratio, **warmup) if args.ratio
            else None,
            "value_bytes_per_step": sent[0] / schedule.steps,
            "index_bytes_per_step": sent[1] / schedule.steps,
            "ms_per_step": 1000 * times[0] / schedule.steps,
            "cpu_ms_per_step": 1000 * times[1] / schedule.steps,
            "curve": [{"step": schedule.steps, "epoch": schedule.steps /
                       schedule.steps_per_epoch, "bytes": sum(sent),
                       "test_accuracy": accuracy,
                       "train_loss": train_loss}]}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())

"""The compiled step of an exported example model against eager PyTorch
doing the same step (forward, loss, backward, SGD with momentum), one rank,
one thread each, alternating in one process: CPU time and wall time per
step, minimum and median over REPEAT rounds. A benchmark, never a test.

Usage: model_vs_torch.py <bin dir> <work dir> [--model cnn] [--batch 32]
  --model: a factory of examples/pytorch/models.py (mlp, cnn), or
  MODULE:FACTORY as gradcomm-export takes it (examples/pytorch/zoo.py:
  resnet18). The compiled step is dense, one rank.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

from gradcomm.runner import CompiledStep  # noqa: E402
from gradcomm.torch.cli import load_factory  # noqa: E402
from gradcomm.torch import optim  # noqa: E402
from gradcomm.torch.export import initial_values  # noqa: E402


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("work")
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(1)
    factory = args.model if ":" in args.model else os.path.join(
        ROOT, "examples", "pytorch", "models.py:" + args.model)
    name = factory.rsplit(":", 1)[1]
    mlir = os.path.join(args.work, name + ".mlir")
    library = os.path.join(args.work, "lib" + name + ".so")
    subprocess.run([os.path.join(args.bin, "gradcomm-export"), factory,
                    "--batch", str(args.batch), "--ranks", "1",
                    "--momentum", "0.9", "--lr", "0.01", "-o", mlir],
                   check=True)
    subprocess.run([os.path.join(args.bin, "gradcomm-compile"), mlir, "-o",
                    library, "--emit=shared", "--strategy=dense"], check=True)
    step = CompiledStep(library, mlir[:-5] + ".json")

    spec = load_factory(factory)()
    model = spec.model
    values = initial_values(model, optim.SGD(momentum=0.9))
    x = torch.randn((args.batch,) + spec.input_shape)
    y = torch.randint(0, 10, (args.batch,))
    values["input"], values["target"] = x.numpy(), y.numpy()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def compiled():
        values.update(step(values))

    def eager():
        optimizer.zero_grad()
        spec.loss_fn(model(x), y).backward()
        optimizer.step()

    for _ in range(3):  # warm-up
        compiled()
        eager()
    rounds = {"compiled": [], "eager": []}
    for _ in range(args.repeat):
        rounds["compiled"].append(timed(compiled))
        rounds["eager"].append(timed(eager))
    step.close()
    print("%s, batch %d, one rank, one thread; torch %s" % (
        args.model, args.batch, torch.__version__))
    print("%-9s %10s %10s %10s %10s" % ("", "cpu_min_ms", "cpu_med_ms",
                                        "wall_min_ms", "wall_med_ms"))
    result = {}
    for name, times in rounds.items():
        walls = [w for w, _ in times]
        cpus = [c for _, c in times]
        result[name] = statistics.median(cpus)
        print("%-9s %10.2f %10.2f %10.2f %10.2f" % (
            name, 1000 * min(cpus), 1000 * statistics.median(cpus),
            1000 * min(walls), 1000 * statistics.median(walls)))
    print("compiled / eager (median CPU time): %.2f" % (
        result["compiled"] / result["eager"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

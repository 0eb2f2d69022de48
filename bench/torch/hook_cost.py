#!/usr/bin/env python3
"""What GradComm's DDP hooks cost against DDP's own gloo all-reduce, on the
Fashion-MNIST MLP and CNN (examples/pytorch/models.py), measured in one run
as BENCHMARKS.md asks: every configuration keeps its own DDP model, and the
configurations take turns, a block of --steps steps each, for --rounds
rounds, so drift of the machine hits all of them alike. Per configuration:
the median step's wall and CPU time (this process, all threads) on the
slowest rank, and the wall ratio to DDP's.

  PYTHONPATH=examples/pytorch mpiexec.mpich -n 2 .venv/bin/python \\
      bench/torch/hook_cost.py [--model cnn] [--rounds 7] [--steps 30]

(gradcomm is the package installed in .venv; the models come from the
examples' folder.)

ScaleCom and local top-k run at steady state (no warm-up). Prints a table
on rank 0 (docs/performance.md, "DDP hooks against DDP").
"""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
import models  # noqa: E402
from gradcomm.torch import ddp  # noqa: E402

MODELS = {"mlp": (models.MLP, (784,)), "cnn": (models.CNN, (1, 28, 28))}


class Configuration:
    """One DDP model with its hook, the optimizer and the measured steps."""

    def __init__(self, name, args, hook=None, make_state=None):
        build, self.shape = MODELS[args.model]
        torch.manual_seed(0)
        model = build()
        self.name = name
        self.net = DDP(model)
        if hook is not None:
            self.net.register_comm_hook(make_state(model), hook)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=0.01)
        self.generator = torch.Generator().manual_seed(dist.get_rank())
        self.batch = args.batch
        self.walls, self.cpus = [], []

    def run(self, steps, record=True):
        for _ in range(steps):
            x = torch.randn(self.batch, *self.shape, generator=self.generator)
            y = torch.randint(0, 10, (self.batch,), generator=self.generator)
            dist.barrier()
            wall, cpu = time.perf_counter(), time.process_time()
            self.optimizer.zero_grad()
            F.cross_entropy(self.net(x), y).backward()
            self.optimizer.step()
            if record:
                self.walls.append(time.perf_counter() - wall)
                self.cpus.append(time.process_time() - cpu)

    def medians(self):
        """(wall, cpu) medians of the slowest rank."""
        result = torch.tensor([statistics.median(self.walls),
                               statistics.median(self.cpus)])
        dist.all_reduce(result, op=dist.ReduceOp.MAX)
        return result.tolist()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="cnn", choices=sorted(MODELS))
    parser.add_argument("--batch", type=int, default=32, help="per rank")
    parser.add_argument("--ratio", type=float, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=30,
                        help="steps per configuration and round")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rank = int(os.environ.get("PMI_RANK", "0"))
    size = int(os.environ.get("PMI_SIZE", "1"))
    dist.init_process_group("gloo", init_method=os.environ.get(
        "RENDEZVOUS", "tcp://127.0.0.1:%d" % (29500 + os.getppid() % 20000)),
        rank=rank, world_size=size)
    steady = dict(ratio=args.ratio, warmup_steps=0)
    configurations = [
        Configuration("ddp (gloo all-reduce)", args),
        Configuration("dense_hook", args, ddp.dense_hook,
                      lambda m: ddp.DenseState(m)),
        Configuration("scalecom_hook r%g" % args.ratio, args,
                      ddp.scalecom_hook,
                      lambda m: ddp.ScaleComState(m, prefix="sc/", **steady)),
        Configuration("scalecom_hook r%g + momentum corr." % args.ratio,
                      args, ddp.scalecom_hook,
                      lambda m: ddp.ScaleComState(m, prefix="mc/",
                                                  momentum=0.9, **steady)),
        Configuration("local_topk_hook r%g" % args.ratio, args,
                      ddp.local_topk_hook,
                      lambda m: ddp.LocalTopkState(m, prefix="lt/",
                                                   ratio=args.ratio)),
    ]
    for configuration in configurations:
        configuration.run(args.warmup, record=False)
    for round_ in range(args.rounds):
        # Rotated each round: no configuration always runs first.
        shift = round_ % len(configurations)
        for configuration in configurations[shift:] + configurations[:shift]:
            configuration.run(args.steps)
    results = [(c.name, *c.medians()) for c in configurations]
    if rank == 0:
        parameters = sum(p.numel() for p in MODELS[args.model][0]()
                         .parameters())
        print("%s (%d parameters), %d ranks, batch %d per rank, torch "
              "threads 1; median of %d rounds x %d steps, slowest rank"
              % (args.model, parameters, size, args.batch, args.rounds,
                 args.steps))
        print("%-38s %9s %9s %8s" % ("configuration", "wall ms", "cpu ms",
                                     "/ ddp"))
        baseline = results[0][1]
        for name, wall, cpu in results:
            print("%-38s %9.2f %9.2f %8.2f" % (name, wall * 1e3, cpu * 1e3,
                                               wall / baseline), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

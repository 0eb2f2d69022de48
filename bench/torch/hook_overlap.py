#!/usr/bin/env python3
"""Step time of a DDP trainer with GradComm's hooks, blocking against
overlapped (the hook's communication on GradComm's communication thread
while autograd computes the next buckets), as ratios to DDP's own gloo
all-reduce measured in the same run. Wall and CPU time (this process, all
threads) per step, median of --steps after --warmup.

  mpiexec.mpich -n 2 .venv/bin/python bench/torch/hook_overlap.py \\
      [--width 1024] [--layers 6] [--batch 64] [--steps 20]

Prints one line per configuration on rank 0 (docs/performance.md).
"""

import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from gradcomm.torch import ddp  # noqa: E402


def make_model(width, layers):
    torch.manual_seed(0)
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*blocks, nn.Linear(width, 10))


def measure(args, hook, make_state):
    model = make_model(args.width, args.layers)
    net = DDP(model, bucket_cap_mb=args.bucket_mb)
    if hook is not None:
        net.register_comm_hook(make_state(model), hook)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(dist.get_rank())
    walls, cpus = [], []
    for step in range(args.warmup + args.steps):
        x = torch.randn(args.batch, args.width, generator=generator)
        y = torch.randint(0, 10, (args.batch,), generator=generator)
        dist.barrier()
        wall, cpu = time.perf_counter(), time.process_time()
        optimizer.zero_grad()
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
        if step >= args.warmup:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    # The slowest rank's median: a step ends when every rank's does.
    result = torch.tensor([statistics.median(walls),
                           statistics.median(cpus)])
    dist.all_reduce(result, op=dist.ReduceOp.MAX)
    return result.tolist()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--bucket-mb", type=float, default=4)
    parser.add_argument("--ratio", type=float, default=100)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rank = int(os.environ.get("PMI_RANK", "0"))
    size = int(os.environ.get("PMI_SIZE", "1"))
    dist.init_process_group("gloo", init_method=os.environ.get(
        "RENDEZVOUS", "tcp://127.0.0.1:29511"), rank=rank, world_size=size)
    configurations = [("ddp gloo all-reduce", None, None)]
    for overlap in (False, True):
        word = "overlapped" if overlap else "blocking"
        configurations.append((
            "dense_hook, %s" % word, ddp.dense_hook,
            lambda m, o=overlap: ddp.DenseState(m, overlap=o)))
        configurations.append((
            "scalecom_hook r%g, %s" % (args.ratio, word), ddp.scalecom_hook,
            # Steady state: past the recipe's warm-up from the first step.
            lambda m, o=overlap: ddp.ScaleComState(
                m, ratio=args.ratio, prefix="o%d/" % o, overlap=o,
                warmup_steps=0)))
    parameters = sum(p.numel() for p in make_model(args.width,
                                                   args.layers).parameters())
    if rank == 0:
        print("ranks %d, %d parameters (%d x %d, %d layers), batch %d, "
              "buckets %g MB, torch threads 1, median of %d steps"
              % (size, parameters, args.width, args.width, args.layers,
                 args.batch, args.bucket_mb, args.steps))
        print("%-32s %10s %10s %8s" % ("configuration", "wall ms", "cpu ms",
                                       "/ ddp"))
    baseline = None
    for name, hook, make_state in configurations:
        wall, cpu = measure(args, hook, make_state)
        baseline = baseline or wall
        if rank == 0:
            print("%-32s %10.2f %10.2f %8.2f" % (name, wall * 1e3, cpu * 1e3,
                                                 wall / baseline), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the DDP hooks cost on a GPU trainer's step: a ResNet-18 training
step (torchvision, random weights, batch 128 of 3x224x224) at one rank,
with DDP's own all-reduce, gradcomm's dense hook and ScaleCom's hook (ratio
100 and 400, float32 and bf16 wire) on the CUDA backend (use_cuda), in
float32 and under bf16 autocast. At one rank nothing crosses a wire: the
difference to DDP's own step is the hooks' work on the device (selection,
gather, error-feedback update) and the host's (Python, the runtime's
agreement, launches).

    python3 bench/gpu/hook_step.py OUT    # writes OUT/hook_step.csv

Wall time per step (median of 20 after 5 warm-up steps, each step ending
in torch.cuda.synchronize) beside the process's CPU time per step. Exit 77
without a CUDA device. Run by bench/gpu/run.sh.
"""
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP

from gradcomm.torch import ddp  # noqa: E402

BATCH, WARMUP, TIMED = 128, 5, 20

VARIANTS = {
    "ddp-builtin": None,
    "gradcomm-dense": lambda m, p: (ddp.DenseState(m, prefix=p),
                                    ddp.dense_hook),
    "scalecom-r100": lambda m, p: (ddp.ScaleComState(
        m, prefix=p, ratio=100, warmup_steps=0), ddp.scalecom_hook),
    "scalecom-r400": lambda m, p: (ddp.ScaleComState(
        m, prefix=p, ratio=400, warmup_steps=0), ddp.scalecom_hook),
    "scalecom-r400-bf16wire": lambda m, p: (ddp.ScaleComState(
        m, prefix=p, ratio=400, warmup_steps=0, wire="bf16"),
        ddp.scalecom_hook),
}


def time_variant(name, make, autocast):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=1000).cuda()
    net = DDP(model, device_ids=[0])
    if make:
        state, hook = make(model, "%s-%s/" % (name, autocast))
        net.register_comm_hook(state, hook)
    # lr 0: the same work every step, and random data cannot drive the
    # weights to overflow (bf16 autocast did at lr 0.01 after some steps).
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    x = torch.randn(BATCH, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (BATCH,), device="cuda")
    walls, cpus = [], []
    for step in range(WARMUP + TIMED):
        torch.cuda.synchronize()
        wall, cpu = time.perf_counter(), time.process_time()
        with torch.autocast("cuda", dtype=torch.bfloat16,
                            enabled=autocast == "bf16-autocast"):
            loss = torch.nn.functional.cross_entropy(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        if step >= WARMUP:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    return statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3


def main():
    if not torch.cuda.is_available():
        print("no CUDA device for PyTorch: hook step benchmark skipped")
        return 77
    out = sys.argv[1]
    store = tempfile.mktemp(prefix="gradcomm-hook-step-store-")
    dist.init_process_group("nccl", init_method="file://" + store, rank=0,
                            world_size=1)
    torch.cuda.set_device(0)
    ddp.use_cuda()
    torch.backends.cudnn.benchmark = True
    rows = []
    for autocast in ("float32", "bf16-autocast"):
        for name, make in VARIANTS.items():
            wall, cpu = time_variant(name, make, autocast)
            rows.append((autocast, name, wall, cpu))
            print("%-14s %-24s %8.2f ms/step wall %8.2f ms/step CPU"
                  % (autocast, name, wall, cpu), flush=True)
    with open(os.path.join(out, "hook_step.csv"), "w") as f:
        f.write("precision,variant,wall_ms_per_step,cpu_ms_per_step\n")
        for row in rows:
            f.write("%s,%s,%.3f,%.3f\n" % row)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

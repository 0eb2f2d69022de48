#!/usr/bin/env python3
"""The CPU cost of one ScaleCom recipe step on one rank, without a network:
every parameter of a model that the DDP hook compresses goes through
gradcomm_scalecom_recipe_f32 (the hook's call, blocking here) with the
recipe the peer comparison runs (ratio 100, chunk selection, momentum
correction 0.9), on fixed random gradients; the rest (what the hook sends
dense) is left out. Prints the median over --steps steps of the wall and
CPU time per step, after --skip steps (first touches, the state's
allocation). Run it with the library to measure in GRADCOMM_RUNTIME_LIBRARY
and compare two libraries by running it twice in one session:

  GRADCOMM_RUNTIME_LIBRARY=A/libgradcomm_runtime.so \\
      .venv/bin/python bench/cpu/recipe_step.py [--model resnet18|lm]

(examples/pytorch on PYTHONPATH for the models; docs/performance.md,
"Against PyTorch's own compression"). A benchmark, never a test.
"""

import argparse
import ctypes
import statistics
import time

import torch

import models
from gradcomm import runtime
from gradcomm.torch.recipe import Plan, ScaleComOptions
from gradcomm.torch.ddp import recipe_options

# The peer comparison's models (examples/pytorch/train_fmnist.py --model).
MODELS = {"resnet18": models.resnet18_module,
          "lm": lambda: models.TransformerLM(context=32)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="resnet18")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--skip", type=int, default=3)
    parser.add_argument("--ratio", type=float, default=100)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = MODELS[args.model]()
    options = ScaleComOptions(ratio=args.ratio, selection="chunk",
                              momentum=0.9, warmup_steps=0)
    plan = Plan(model, options, ranks=1)
    rt = runtime.Runtime()
    rt.call("gradcomm_init")
    calls = []
    for name, parameter in model.named_parameters():
        count = parameter.numel()
        k_and_chunk = plan.k_and_chunk(name, count)
        if k_and_chunk is None:
            continue
        k, chunk = k_and_chunk
        grad = torch.randn(count) * 1e-3
        out = torch.empty(count)
        calls.append((name.encode(), grad, out, count,
                      recipe_options(rt, options, k, chunk, "f32")))
    elements = sum(call[3] for call in calls)

    walls, cpus = [], []
    for step in range(args.skip + args.steps):
        wall, cpu = time.perf_counter(), time.process_time()
        for name, grad, out, count, recipe in calls:
            rt.call("gradcomm_scalecom_recipe_f32", name, grad.data_ptr(),
                    out.data_ptr(), count, ctypes.byref(recipe),
                    runtime.REDUCTIONS["average"])
        if step >= args.skip:
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
    print("%s: %d compressed tensors, %.1fM elements, ratio %g: "
          "%.2f ms per step (CPU %.2f ms), median of %d" % (
              args.model, len(calls), elements / 1e6, args.ratio,
              1e3 * statistics.median(walls), 1e3 * statistics.median(cpus),
              args.steps))


if __name__ == "__main__":
    main()

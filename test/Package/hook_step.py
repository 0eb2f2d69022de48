"""Training steps with GradComm's ScaleCom from an installed package: DDP
with the comm hook, or FSDP2 (fully_shard) with GradComm's reduce-scatter
(--fsdp2). Run by test/Python/test_package.py from outside the repository, and
by hand in a fresh environment (docs/pytorch.md, "Install").

It checks that `gradcomm` and libgradcomm_runtime.so come from the
environment it runs in (never from a source tree), that ScaleCom
compresses (DDP: the largest tensor sends at most a tenth of its bytes;
FSDP2: the whole model's reduce-scatters at most a tenth of a dense one's
bytes) and, under DDP, that every rank holds the same parameters after the
steps.

    torchrun --standalone --nproc-per-node=2 hook_step.py \
        [--model resnet18] [--fsdp2]
    mpiexec.mpich -n 2 python hook_step.py

(Debian's torch 1.13 under Python 3.11 fails inside torchrun itself, so
test_package.py launches it with mpiexec; the process group then meets through a
file in the working folder.)
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import gradcomm
from gradcomm import _paths
from gradcomm.torch import ddp


def small_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))


def make_model(name):
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=10)
    return small_cnn()


def fail(message):
    print("FAIL rank %d: %s" % (dist.get_rank(), message), flush=True)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["cnn", "resnet18"], default="cnn")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--fsdp2", action="store_true",
                        help="fully_shard every block and the model, with "
                        "gradcomm.torch.fsdp2.scalecom's reduce-scatter")
    args = parser.parse_args()
    if "RANK" in os.environ:  # torchrun
        dist.init_process_group("gloo")
    else:  # mpiexec.mpich
        dist.init_process_group(
            "gloo", init_method="file://" + os.path.abspath("rendezvous"),
            rank=int(os.environ["PMI_RANK"]),
            world_size=int(os.environ["PMI_SIZE"]))
    rank = dist.get_rank()

    prefix = os.path.realpath(sys.prefix)
    library = os.path.realpath(_paths.runtime_library_candidates()[0])
    package = os.path.realpath(gradcomm.__file__)
    for what, path in (("the package", package), ("the runtime", library)):
        if not path.startswith(prefix + os.sep):
            fail("%s is %s, not in this environment (%s)"
                 % (what, path, prefix))

    torch.manual_seed(0)
    if args.fsdp2:
        model, state = fully_sharded(make_model(args.model))
    else:
        model = DDP(make_model(args.model))
        state = ddp.ScaleComState(model, ratio=100, warmup_steps=0)
        model.register_comm_hook(state, ddp.scalecom_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(1 + rank)
    for _ in range(args.steps):
        inputs = torch.randn(4, 3, 32, 32, generator=generator)
        labels = torch.randint(0, 10, (4,), generator=generator)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        loss.backward()
        optimizer.step()
        if not torch.isfinite(loss):
            fail("loss %s" % loss.item())

    if args.fsdp2:
        check_fsdp2(model, state, args)
    else:
        check_ddp(model, state, args)
    # Every rank leaves together, and the model with its hook's state goes
    # before the process group (as examples/pytorch/train_fmnist.py does):
    # a DDP reducer that outlived its group deadlocks torch 1.13's exit one
    # time in a few, with or without GradComm (docs/pytorch.md, "Install
    # and launch"; bench/torch/teardown_order.py).
    dist.barrier()
    del model, optimizer, state
    dist.destroy_process_group()


def fully_sharded(model):
    from torch.distributed.fsdp import fully_shard
    from gradcomm.torch import fsdp2
    # Innermost first: fully_shard takes a module whose submodules are
    # already sharded, never the other way round.
    for module in reversed(list(model.modules())):
        if module is not model and len(list(module.children())) > 0:
            fully_shard(module)
    fully_shard(model)
    return model, fsdp2.scalecom(model, ratio=100, warmup_steps=0)


def check_fsdp2(model, state, args):
    sent = sum(state.rt.stats(comm.name).value_bytes_sent
               for comm in state.comms.values())
    # A dense reduce-scatter sends (ranks - 1) / ranks of the model's
    # float32 bytes (numel of a sharded parameter is the whole tensor's).
    numel = sum(p.numel() for p in model.parameters())
    dense_bytes = numel * 4 * args.steps * (dist.get_world_size() - 1) // \
        dist.get_world_size()
    if not 0 < sent <= dense_bytes / 10:
        fail("the FSDP2 reduce-scatters sent %d bytes in %d steps; dense "
             "sends about %d" % (sent, args.steps, dense_bytes))
    if dist.get_rank() == 0:
        print("ok: %s under FSDP2, %d modules, %d steps, torch %s; sent %d "
              "bytes, dense about %d; gradcomm from %s"
              % (args.model, len(state.comms), args.steps, torch.__version__,
                 sent, dense_bytes, os.path.dirname(gradcomm.__file__)),
              flush=True)


def check_ddp(model, state, args):
    rank = dist.get_rank()
    largest = max(model.module.parameters(), key=lambda p: p.numel())
    sent = state.rt.stats(state.state_name(largest)).value_bytes_sent
    dense_bytes = largest.numel() * 4 * args.steps
    if not 0 < sent <= dense_bytes / 10:
        fail("the largest tensor (%d values) sent %d bytes in %d steps; "
             "dense sends %d" % (largest.numel(), sent, args.steps,
                                 dense_bytes))
    flat = torch.cat([p.detach().reshape(-1)
                      for p in model.module.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    if not all(torch.equal(gathered[0], other) for other in gathered):
        fail("the ranks' parameters differ after %d steps" % args.steps)
    if rank == 0:
        print("ok: %s under DDP, %d steps, torch %s; largest tensor sent %d "
              "of %d bytes; gradcomm from %s, runtime %s"
              % (args.model, args.steps, torch.__version__, sent,
                 dense_bytes, os.path.dirname(gradcomm.__file__),
                 _paths.runtime_library_candidates()[0]), flush=True)


if __name__ == "__main__":
    main()

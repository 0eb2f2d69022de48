"""Tears a 2-rank DDP job down in one of two orders, to count exits that hang.

docs/pytorch.md ("Install and launch") tells trainers to drop the DDP model
before destroying the process group. This program shows why, with or without
GradComm's hook: run it many times under a time limit and count the kills.

    for i in $(seq 20); do rm -f rendezvous
      timeout -s KILL 30 mpiexec.mpich -n 2 python bench/torch/teardown_order.py \
          --order group-first || echo "run $i: rc $?"; done

`--order group-first` destroys the process group while the model is alive,
so the DDP reducer drops the group's last reference when main() returns;
`--order model-first` is the documented order (barrier, del model,
destroy). `--gradcomm` registers GradComm's ScaleCom hook as well.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def init_group():
    if "RANK" in os.environ:  # torchrun
        dist.init_process_group("gloo")
    else:  # mpiexec.mpich: meet through a file in the working folder
        dist.init_process_group(
            "gloo", init_method="file://" + os.path.abspath("rendezvous"),
            rank=int(os.environ["PMI_RANK"]),
            world_size=int(os.environ["PMI_SIZE"]))


def compare_replicas(model):
    # The last collective's tensors are temporaries: Python drops them as
    # soon as the call returns, while gloo's worker may still hold the work.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    if not all(torch.equal(gathered[0], other) for other in gathered):
        raise SystemExit("rank %d: the replicas differ" % dist.get_rank())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", choices=["group-first", "model-first"],
                        required=True)
    parser.add_argument("--gradcomm", action="store_true",
                        help="register gradcomm.torch.ddp.scalecom_hook")
    args = parser.parse_args()
    init_group()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
                              nn.Flatten(), nn.Linear(16 * 32 * 32, 10)))
    state = None
    if args.gradcomm:
        from gradcomm.torch import ddp
        state = ddp.ScaleComState(model, ratio=100, warmup_steps=0)
        model.register_comm_hook(state, ddp.scalecom_hook)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(1 + dist.get_rank())
    for _ in range(3):
        optimizer.zero_grad()
        inputs = torch.randn(4, 3, 32, 32, generator=generator)
        labels = torch.randint(0, 10, (4,), generator=generator)
        nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
    compare_replicas(model.module)
    if args.order == "model-first":
        dist.barrier()
        del model, optimizer, state
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Fashion-MNIST CNN in plain PyTorch DDP (gloo), with its gradient
communication by GradComm: one line, `register_comm_hook`.

  mpiexec.mpich -n 4 .venv/bin/python examples/pytorch/train_fmnist.py \\
      --comm scalecom --ratio 100

--comm: ddp (DDP's own all-reduce), dense, scalecom, local-topk (hooks), or
gossip (no gradient all-reduce; GossipAverager after each optimizer step).
The process group uses TCP on this host (MASTER_ADDR/MASTER_PORT when set),
rank and size from mpiexec (PMI_RANK, PMI_SIZE).
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(HERE)),
                             "python"), HERE]

import models  # noqa: E402
from gradcomm.torch import ddp  # noqa: E402
from train import BatchSchedule, load  # noqa: E402


def init_process_group():
    rank = int(os.environ.get("PMI_RANK", "0"))
    size = int(os.environ.get("PMI_SIZE", "1"))
    address = os.environ.get("MASTER_ADDR", "127.0.0.1")
    # The ranks of one mpiexec on one host share their parent (the hydra
    # proxy): a port of their own without any exchange.
    port = os.environ.get("MASTER_PORT", str(29500 + os.getppid() % 20000))
    dist.init_process_group("gloo", init_method="tcp://%s:%s" % (address,
                                                                  port),
                            rank=rank, world_size=size)
    return rank, size


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comm", default="scalecom",
                        choices=["ddp", "dense", "scalecom", "local-topk",
                                 "gossip"])
    parser.add_argument("--ratio", type=float, default=100)
    parser.add_argument("--beta", type=float, default=1.0)
    parser.add_argument("--selection", default="exact",
                        choices=["exact", "chunk"])
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()

    torch.set_num_threads(1)
    rank, size = init_process_group()
    torch.manual_seed(0)
    model = models.CNN()
    averager = None
    if args.comm == "gossip":
        net = model
        averager = ddp.GossipAverager(model, schedule="matching", mixing=0.5)
    else:
        net = DDP(model)
        if args.comm == "dense":
            net.register_comm_hook(ddp.DenseState(net), ddp.dense_hook)
        elif args.comm == "scalecom":
            net.register_comm_hook(ddp.ScaleComState(
                net, ratio=args.ratio, beta=args.beta,
                selection=args.selection), ddp.scalecom_hook)
        elif args.comm == "local-topk":
            net.register_comm_hook(ddp.LocalTopkState(net, ratio=args.ratio),
                                   ddp.local_topk_hook)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)

    images, labels = load(args.data, "train")
    schedule = BatchSchedule(len(labels), args.batch, size, rank, args.epochs,
                             args.seed)
    wall, losses = 0.0, []
    for chosen in schedule:
        x = torch.from_numpy(images[chosen])
        y = torch.from_numpy(labels[chosen])
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        if averager is not None:
            averager.step()
        wall += time.perf_counter() - start
        losses.append(loss.item())

    if rank == 0:
        test_images, test_labels = load(args.data, "t10k")
        model.eval()
        with torch.no_grad():
            out = model(torch.from_numpy(test_images))
            accuracy = float((out.argmax(1) == torch.from_numpy(
                test_labels)).float().mean())
        tail = losses[-50:]
        print("summary ddp-%s: %d ranks, %d steps (%.2f epochs), train loss "
              "(last 50, rank 0) %.4f, test accuracy %.4f, %.1f ms per step"
              % (args.comm, size, schedule.steps,
                 schedule.steps / schedule.steps_per_epoch,
                 sum(tail) / len(tail), accuracy,
                 1000 * wall / schedule.steps))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Fashion-MNIST CNN in plain PyTorch DDP (gloo), with its gradient
communication by GradComm: one line, `register_comm_hook`.

  mpiexec.mpich -n 4 .venv/bin/python examples/pytorch/train_fmnist.py \\
      --comm scalecom --ratio 100
  .venv/bin/torchrun --standalone --nproc-per-node=4 \\
      examples/pytorch/train_fmnist.py --comm scalecom --ratio 100

--comm: ddp (DDP's own all-reduce), dense, scalecom, local-topk (hooks);
bf16, fp16, powersgd (PyTorch's own bf16_compress_hook, fp16_compress_hook
and powerSGD_hook as they ship, for comparison: bench/peers); or gossip,
gossip-async (random peers), easgd, easgd-async (no gradient
all-reduce: GossipAverager or ElasticAverager after each optimizer step;
rank 0's replica is evaluated).
--sharded: FSDP (FULL_SHARD) instead of DDP, with --comm ddp (FSDP's own
reduce-scatter), dense or scalecom (gradcomm.torch.fsdp's reduce-scatter
hooks; with --fsdp-version 2, fully_shard and gradcomm.torch.fsdp2's
reduce-scatter); --wire bf16 or f16 there is FSDP's reduce dtype: the
gradients are reduce-scattered in 16 bits.
--model: the MLP, the CNN (default), ResNet-18 adapted to 28x28, the
2-layer character transformer language model on Debian's GPL-3 text (its
accuracy: next-character accuracy on the held-out last 10 %), or lm: the
same task with a 10.7M-parameter nn.TransformerEncoder. The
ScaleCom recipe's options (gradcomm.torch.recipe) are flags; --log writes
the run's curve, bytes and times as JSON (scripts/scalecom_study.sh).
Rank 0 prints a "progress" line on stderr at each evaluation and one
"summary" line on stdout at the end.
Under torchrun the process group is torchrun's (env://); under mpiexec it
uses TCP on this host (MASTER_ADDR/MASTER_PORT when set), rank and size
from mpiexec (PMI_RANK, PMI_SIZE).
--learners N: N data-parallel learners simulated in this one process
(gradcomm.torch.learners, docs/learners.md), with --comm dense, scalecom
or local-topk: the hooks' steps over the runtime's own kernels, the bits
of N ranks under mpiexec; for N beyond the machine's cores.
--device cuda: each process on its node-local GPU, the process group NCCL,
the hooks and averagers on the runtime's CUDA backend (ddp.use_cuda;
docs/pytorch.md, "CUDA tensors"); the asynchronous averagers and FSDP's
GradComm hooks stay on the CPU (refused with the reason).
"""

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))

import models  # noqa: E402
from gradcomm.torch import ddp, fsdp  # noqa: E402
from gradcomm.torch.learners import Learners  # noqa: E402
from train import BatchSchedule, load, load_text  # noqa: E402


def init_process_group(backend="gloo"):
    if "TORCHELASTIC_RUN_ID" in os.environ or (
            "RANK" in os.environ and "WORLD_SIZE" in os.environ):
        # torchrun (or any env:// launcher): rank, size, address and port
        # are in the environment; the hooks start the runtime's MPI
        # through this group's store.
        dist.init_process_group(backend)
        return dist.get_rank(), dist.get_world_size()
    rank = int(os.environ.get("PMI_RANK", "0"))
    size = int(os.environ.get("PMI_SIZE", "1"))
    address = os.environ.get("MASTER_ADDR", "127.0.0.1")
    # The ranks of one mpiexec on one host share their parent (the hydra
    # proxy): a port of their own without any exchange.
    port = os.environ.get("MASTER_PORT", str(29500 + os.getppid() % 20000))
    dist.init_process_group(backend, init_method="tcp://%s:%s" % (address,
                                                                   port),
                            rank=rank, world_size=size)
    return rank, size


def local_cuda_device():
    """This process's GPU: its rank on the node (torchrun's LOCAL_RANK,
    MPICH's MPI_LOCALRANKID) modulo the GPUs it sees."""
    local = os.environ.get("LOCAL_RANK", os.environ.get("MPI_LOCALRANKID",
                                                        "0"))
    return torch.device("cuda", int(local) % torch.cuda.device_count())


CONTEXT = 16  # the transformer's tokens per window
LM_CONTEXT = 32  # the 10.7M-parameter LM's
MODELS = {"mlp": models.MLP, "cnn": models.CNN,
          "resnet18": models.resnet18_module,
          "resnet18-narrow": models.resnet18_narrow_module,
          "transformer": lambda: models.TinyLM(context=CONTEXT),
          "lm": lambda: models.TransformerLM(context=LM_CONTEXT)}
LANGUAGE_MODELS = ("transformer", "lm")
# PyTorch's own communication hooks (torch.distributed.algorithms.
# ddp_comm_hooks), registered as they ship.
TORCH_HOOKS = ("bf16", "fp16", "powersgd")
# --sharded --wire: FSDP's reduce dtype.
REDUCE_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def load_data(args):
    """(train inputs, train targets, test inputs, test targets) as numpy
    arrays: Fashion-MNIST images and labels, or for the transformer token
    windows and the same windows shifted by one."""
    if args.model in LANGUAGE_MODELS:
        train, test = load_text(args.text, LM_CONTEXT if args.model == "lm"
                                else CONTEXT)
        # Copies: the windows are read-only views of one array.
        return tuple(np.ascontiguousarray(a) for a in (
            train[:, :-1], train[:, 1:], test[:, :-1], test[:, 1:]))
    images, labels = load(args.data, "train")
    test_images, test_labels = load(args.data, "t10k")
    return images, labels, test_images, test_labels


def loss_of(args, output, target):
    if args.model in LANGUAGE_MODELS:
        return models.lm_loss(output, target)
    return F.cross_entropy(output, target)


def beta_argument(text):
    """--beta: a number, or "auto" (gradcomm.torch.recipe.beta_for_group)."""
    return text if text == "auto" else float(text)


def recipe_fields(args, steps_per_epoch):
    """The recipe's options given on the command line (unset ones keep
    ScaleComOptions' defaults)."""
    fields = {"ratio": args.ratio}
    for option in ("beta", "selection", "min_elements", "warmup",
                   "warmup_start_ratio", "clip", "policy", "wire"):
        if getattr(args, option) is not None:
            fields[option] = getattr(args, option)
    if args.warmup_epochs is not None:
        fields["warmup_steps"] = int(args.warmup_epochs * steps_per_epoch)
    if args.warmup_steps is not None:
        fields["warmup_steps"] = args.warmup_steps
    if args.momentum_correction is not None:
        fields["momentum"] = args.momentum if args.momentum_correction else 0
    if args.keep_velocity is not None:
        fields["keep_velocity"] = bool(args.keep_velocity)
    if args.cluster:
        fields["cluster"] = dict(kv.split("=", 1) for kv in
                                 args.cluster.split(",") if kv)
    if args.dense is not None:
        fields["dense"] = tuple(p for p in args.dense.split(",") if p)
    return fields


def compress_fields(args, steps_per_epoch):
    """recipe_fields for --comm scalecom or local-topk (without the
    momentum correction and beta that local top-k does not take)."""
    fields = recipe_fields(args, steps_per_epoch)
    if args.comm == "local-topk":
        fields.pop("momentum", None)
        fields.pop("keep_velocity", None)
        fields.pop("beta", None)
    return fields


def make_hook_state(net, args, steps_per_epoch):
    """The hook and its state for --comm, with the recipe's options from
    the command line."""
    if args.comm == "dense":
        return ddp.dense_hook, ddp.DenseState(net, wire=args.wire)
    fields = compress_fields(args, steps_per_epoch)
    if args.comm == "scalecom":
        return ddp.scalecom_hook, ddp.ScaleComState(net, **fields)
    return ddp.local_topk_hook, ddp.LocalTopkState(net, **fields)


def register_torch_hook(net, args, steps_per_epoch):
    """--comm bf16, fp16 or powersgd: PyTorch's own hook, registered as it
    ships. PowerSGD keeps its error feedback and warm start; it runs DDP's
    all-reduce for its first start_powerSGD_iter steps, set to GradComm's
    warm-up (--warmup-steps or --warmup-epochs; at least 2, PowerSGD's own
    minimum)."""
    from torch.distributed.algorithms.ddp_comm_hooks import (
        default_hooks, powerSGD_hook)
    if args.comm == "bf16":
        net.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif args.comm == "fp16":
        net.register_comm_hook(None, default_hooks.fp16_compress_hook)
    else:
        warmup = recipe_fields(args, steps_per_epoch).get(
            "warmup_steps", ddp.ScaleComOptions().warmup_steps)
        state = powerSGD_hook.PowerSGDState(
            process_group=None,
            matrix_approximation_rank=args.powersgd_rank,
            start_powerSGD_iter=max(2, warmup), use_error_feedback=True,
            warm_start=True, random_seed=args.seed)
        net.register_comm_hook(state, powerSGD_hook.powerSGD_hook)


def make_sharded_hook_state(args, steps_per_epoch, net):
    """--sharded: the FSDP hook and its state for --comm (dense or
    scalecom), with the recipe's options from the command line; with
    --fsdp-selection tensor the selection is per tensor of `net`'s flat
    parameters (tensors under --min-elements, default 1024, and those the
    --dense presets name, whole). --wire is FSDP's reduce_dtype here."""
    if args.comm == "dense":
        return fsdp.reduce_scatter_hook, fsdp.DenseShardedState()
    fields = recipe_fields(args, steps_per_epoch)
    fields.pop("wire", None)
    if args.fsdp_selection == "tensor":
        fields["module"] = net
    return fsdp.scalecom_reduce_scatter_hook, fsdp.ScaleComShardedState(
        **fields)


def sharded(model, args, steps_per_epoch, device):
    """--sharded --fsdp-version 1: `model` under FSDP (FULL_SHARD; each
    Linear and Conv2d its own unit with --fsdp-wrap layer), its
    reduce-scatter FSDP's own (--comm ddp) or GradComm's hook. Returns
    (model, the hook's state or None)."""
    # Imported here, as in fully_sharded: torch.distributed.fsdp (which
    # gradcomm.torch.fsdp2 imports) costs every process 1.5-2 s of CPU at
    # start, and DDP runs need none of it.
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy
    wrap = (ModuleWrapPolicy({torch.nn.Linear, torch.nn.Conv2d})
            if args.fsdp_wrap == "layer" else None)
    # A 16-bit wire: FSDP reduce-scatters 16-bit gradients (its own
    # collective, or the hooks, which send them in 16 bits).
    reduce_dtype = REDUCE_DTYPES.get(args.wire)
    precision = (MixedPrecision(reduce_dtype=reduce_dtype)
                 if reduce_dtype else None)
    net = FSDP(model, device_id=device, auto_wrap_policy=wrap,
               mixed_precision=precision)
    state = None
    if args.comm != "ddp":
        hook, state = make_sharded_hook_state(args, steps_per_epoch, net)
        net.register_comm_hook(state, hook)
    return net, state


def fully_sharded(model, args, steps_per_epoch):
    """--sharded --fsdp-version 2: `model` under fully_shard (each Linear
    and Conv2d its own FSDP module with --fsdp-wrap layer, then the
    model), its reduce-scatter FSDP2's own (--comm ddp) or
    gradcomm.torch.fsdp2's; --wire bf16 or f16 the reduce dtype. Returns
    (model, GradComm's state or None)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    from gradcomm.torch import fsdp2
    policy = MixedPrecisionPolicy(reduce_dtype=REDUCE_DTYPES.get(args.wire))
    if args.fsdp_wrap == "layer":
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Conv2d)):
                fully_shard(module, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    if args.comm == "dense":
        return model, fsdp2.dense(model)
    if args.comm == "scalecom":
        fields = recipe_fields(args, steps_per_epoch)
        fields.pop("wire", None)
        return model, fsdp2.scalecom(model, **fields)
    return model, None


def evaluate(args, model, inputs, targets, device="cpu", stop=None):
    """(correct predictions, predictions, summed loss) over the first
    `stop` examples (all when None): classes, or next characters (the
    argmax over the last dimension, every position of every window)."""
    stop = len(targets) if stop is None else min(stop, len(targets))
    model.eval()
    correct, loss = 0, 0.0
    with torch.no_grad():
        for first in range(0, stop, 1000):
            last = min(first + 1000, stop)
            out = model(torch.from_numpy(inputs[first:last]).to(device))
            target = torch.from_numpy(targets[first:last])
            correct += int((out.argmax(-1).cpu() == target).sum())
            loss += loss_of(args, out.cpu(), target).item() * target.numel()
    model.train()
    return correct, targets[:stop].size, loss


def evaluate_point(args, model, inputs, targets, device, last):
    """One point of the curve: test_accuracy and test_loss over the whole
    test set; with --eval-subset N, subset_accuracy and subset_loss over
    its first N examples, and the whole set only at the last step (one
    pass for both)."""
    if not args.eval_subset:
        correct, count, loss = evaluate(args, model, inputs, targets, device)
        return {"test_accuracy": correct / count, "test_loss": loss / count}
    correct, count, loss = evaluate(args, model, inputs, targets, device,
                                    stop=args.eval_subset)
    point = {"subset_accuracy": correct / count,
             "subset_loss": loss / count}
    if last:
        rest = evaluate(args, model, inputs[args.eval_subset:],
                        targets[args.eval_subset:], device)
        count += rest[1]
        point.update(test_accuracy=(correct + rest[0]) / count,
                     test_loss=(loss + rest[2]) / count)
    return point


def is_fsdp2_state(state):
    """Whether `state` is gradcomm.torch.fsdp2's: that module is imported
    by --fsdp-version 2 runs only (see sharded)."""
    fsdp2 = sys.modules.get("gradcomm.torch.fsdp2")
    return fsdp2 is not None and isinstance(state, fsdp2.State)


def bytes_sent(state, model):
    """Bytes this rank sent through the runtime so far (values, indices)."""
    if state is None:
        return 0, 0
    if isinstance(state, Learners):
        traffic = state.traffic()
        return traffic["values"], traffic["indices"]
    if isinstance(state, fsdp.ShardedState):
        names = sorted(state.names)
    elif is_fsdp2_state(state):
        names = [name for comm in state.comms.values()
                 for name in (comm.name, b"dense." + comm.name)]
    else:
        # The dense hook counts every bucket under one name; the others per
        # parameter, and a bucket's small dense tensors under one name.
        names = (["ddp.dense"] if isinstance(state, ddp.DenseState) else
                 [state.prefix + name for name, _ in
                  model.named_parameters()])
        if isinstance(state, ddp.ScaleComState):
            names.append(state.packed_name.decode())
    values = indices = 0
    for name in names:
        stats = state.rt.stats(name)
        values += stats.value_bytes_sent
        indices += stats.index_bytes_sent
    return values, indices


def cpu_capability():
    """The vector code PyTorch's CPU kernels run ("AVX512", "AVX2", ...);
    None where this PyTorch does not say (1.13)."""
    backend = getattr(torch.backends, "cpu", None)
    query = getattr(backend, "get_cpu_capability", None)
    return query() if query else None


def lr_scheduler(args, optimizer, steps):
    """--lr-schedule with --lr-warmup-steps W: lr * t / W for the steps
    t = 1..W, then constant or a cosine over the remaining steps; None for
    a constant rate without warm-up."""
    warmup = args.lr_warmup_steps
    if warmup == 0:
        if args.lr_schedule == "cosine":
            return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer,
                                                              steps)
        return None

    def factor(done):  # `done` steps taken, so the next is done + 1
        if done < warmup:
            return (done + 1) / warmup
        if args.lr_schedule == "constant":
            return 1.0
        rest = max(1, steps - warmup)
        return 0.5 * (1 + math.cos(math.pi * (done - warmup) / rest))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comm", default="scalecom",
                        choices=["ddp", "dense", "scalecom", "local-topk",
                                 *TORCH_HOOKS, "gossip", "gossip-async",
                                 "easgd", "easgd-async"])
    parser.add_argument("--powersgd-rank", type=int, default=2,
                        help="--comm powersgd: matrix_approximation_rank")
    parser.add_argument("--model", default="cnn", choices=sorted(MODELS))
    parser.add_argument("--ratio", type=float, default=100)
    parser.add_argument("--sharded", action="store_true",
                        help="FSDP (FULL_SHARD) instead of DDP: --comm ddp, "
                        "dense or scalecom")
    parser.add_argument("--fsdp-wrap", default="model",
                        choices=["layer", "model"],
                        help="--sharded: one FSDP unit (one flat parameter, "
                        "so one ScaleCom selection) for the whole model, or "
                        "one per Linear and Conv2d layer (on the MLP: 1.0 "
                        "point lower at ratio 100, docs/results.md)")
    parser.add_argument("--fsdp-version", type=int, default=1,
                        choices=[1, 2],
                        help="--sharded: 1, FullyShardedDataParallel and "
                        "its comm hooks; 2, fully_shard (one FSDP module "
                        "per --fsdp-wrap unit and the model) with "
                        "gradcomm.torch.fsdp2 (ScaleCom's selection per "
                        "parameter)")
    parser.add_argument("--fsdp-selection", default="flat",
                        choices=["flat", "tensor"],
                        help="--sharded --comm scalecom: one selection per "
                        "flat parameter, or per tensor inside it")
    recipe = parser.add_argument_group(
        "ScaleCom recipe (gradcomm.torch.recipe.ScaleComOptions; unset: "
        "its defaults)")
    recipe.add_argument("--beta", type=beta_argument,
                        help="the low-pass coefficient, or 'auto': 1/n on "
                        "n ranks or learners, at least 0.1")
    recipe.add_argument("--selection", choices=["exact", "chunk"])
    recipe.add_argument("--min-elements", type=int)
    warmup_length = recipe.add_mutually_exclusive_group()
    warmup_length.add_argument("--warmup-epochs", type=float)
    warmup_length.add_argument("--warmup-steps", type=int)
    recipe.add_argument("--warmup", choices=["dense", "ramp"])
    recipe.add_argument("--warmup-start-ratio", type=float)
    recipe.add_argument("--momentum-correction", type=int, choices=[0, 1],
                        help="1: the hook applies --momentum (the optimizer "
                        "runs without)")
    recipe.add_argument("--keep-velocity", type=int, choices=[0, 1],
                        help="with --momentum-correction 1: 1 keeps the "
                        "velocity where it was sent (no factor masking)")
    recipe.add_argument("--dense", help="presets that stay dense, comma "
                        "separated (vectors, embeddings, first, last); '' "
                        "for none")
    recipe.add_argument("--clip", type=float)
    recipe.add_argument("--wire", choices=["f32", "bf16", "f16"],
                        help="the type values travel in (dense and "
                        "ScaleCom; default float32); with --sharded, "
                        "FSDP's reduce_dtype")
    recipe.add_argument("--policy", choices=["fixed", "auto"],
                        help="auto: gradcomm-plan's cost model picks dense "
                        "or a ratio per parameter on --cluster")
    recipe.add_argument("--cluster", help="policy=auto's cluster, e.g. "
                        "bandwidth=1Gbit,latency=50us (or calibration=FILE)")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--steps", type=int,
                        help="stop after this many steps (step-time "
                        "benchmarks: the JSON then holds where the hooks' "
                        "time went in each step); the data order is "
                        "--epochs' own")
    parser.add_argument("--batch", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--optimizer", default="sgd", choices=["sgd", "adam"],
                        help="adam: torch.optim.Adam at --lr (momentum "
                        "correction does not apply)")
    parser.add_argument("--lr-schedule", default="constant",
                        choices=["constant", "cosine"])
    parser.add_argument("--lr-warmup-steps", type=int, default=0,
                        help="the learning rate rises linearly from "
                        "lr / W to lr over the first W steps (the linear "
                        "scaling rule's warm-up), then follows "
                        "--lr-schedule over the remaining steps")
    parser.add_argument("--learners", type=int, metavar="N",
                        help="simulate N data-parallel learners in this "
                        "one process (--comm dense, scalecom or local-topk)")
    parser.add_argument("--evaluations", type=int, default=1,
                        help="test-set evaluations, evenly spaced")
    parser.add_argument("--bucket-cap-mb", type=float,
                        help="DDP's bucket_cap_mb (default: DDP's own, 25 "
                        "MB after a 1 MB first bucket); a value above the "
                        "model's size makes one bucket")
    parser.add_argument("--eval-subset", type=int, metavar="N",
                        help="evaluate on the test set's first N examples "
                        "(subset_accuracy, subset_loss in the curve) and on "
                        "the whole set only at the last step: a dense curve "
                        "at a fraction of the cost (bench/peers/accuracy.sh)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="cuda: the model, the batches and the hooks' "
                        "buckets on this process's GPU, the process group "
                        "NCCL, the runtime's CUDA backend (ddp.use_cuda)")
    parser.add_argument("--label", help="the run's name in --log")
    parser.add_argument("--save", metavar="PATH",
                        help="rank 0's model state_dict at the end "
                        "(torch.save)")
    parser.add_argument("--link-counter", metavar="DEVICE",
                        help="record the bytes this node's network DEVICE "
                        "sent in each step (its kernel counter, "
                        "/sys/class/net/DEVICE/statistics/tx_bytes; "
                        "bench/peers)")
    # --json, not --log, under torchrun: torchrun reads an abbreviation of
    # its own --log-dir in any --log it is given.
    parser.add_argument("--json", "--log", dest="log",
                        help="a JSON file with the run's curve, bytes and "
                        "times (rank 0)")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--text", default="/usr/share/common-licenses/GPL-3",
                        help="the transformer's text")
    args = parser.parse_args()
    if args.eval_subset is not None and args.eval_subset < 1:
        parser.error("--eval-subset must be at least 1")
    if args.optimizer == "adam" and args.momentum_correction:
        parser.error("--momentum-correction 1 is for SGD with momentum; "
                     "with --optimizer adam the hook runs plain error "
                     "feedback (docs/pytorch.md)")

    if args.comm in TORCH_HOOKS and args.sharded:
        parser.error("--comm %s is a DDP hook: not with --sharded"
                     % args.comm)
    if args.sharded and args.comm not in ("ddp", "dense", "scalecom"):
        parser.error("--sharded takes --comm ddp, dense or scalecom")
    if args.fsdp_version == 2 and args.fsdp_selection != "flat":
        parser.error("--fsdp-version 2 selects per parameter always; "
                     "--fsdp-selection is FSDP1's")

    if args.learners is not None:
        if args.learners < 2:
            parser.error("--learners: at least 2")
        if args.comm not in ("dense", "scalecom", "local-topk"):
            parser.error("--learners takes --comm dense, scalecom or "
                         "local-topk")
        if args.sharded or args.device != "cpu":
            parser.error("--learners: DDP's hooks on the CPU only (no "
                         "--sharded, no --device cuda)")
        if int(os.environ.get("PMI_SIZE", os.environ.get("WORLD_SIZE",
                                                         "1"))) > 1:
            parser.error("--learners runs in one process: not under a "
                         "multi-process launcher")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: this PyTorch sees no CUDA device")
    if args.device == "cuda" and args.comm in ("gossip-async", "easgd-async"):
        parser.error("--device cuda: %s needs MPI's one-sided windows (CPU "
                     "backend)" % args.comm)
    torch.set_num_threads(1)
    if args.learners:
        rank, size = 0, args.learners
    else:
        rank, size = init_process_group("nccl" if args.device == "cuda" else
                                        "gloo")
    device = torch.device("cpu")
    if args.device == "cuda":
        device = local_cuda_device()
        torch.cuda.set_device(device)
        if args.comm not in ("ddp",) + TORCH_HOOKS:
            ddp.use_cuda()  # before any state: the runtime's CUDA backend
    torch.manual_seed(args.seed)
    model = MODELS[args.model]().to(device)
    # Counted before FSDP replaces the parameters by flat shards.
    parameter_count = sum(p.numel() for p in model.parameters())
    images, labels, test_images, test_labels = load_data(args)
    # One schedule per simulated learner, else this rank's.
    schedules = [BatchSchedule(len(labels), args.batch, size, r, args.epochs,
                               args.seed)
                 for r in (range(size) if args.learners else [rank])]
    schedule = schedules[0]
    averager = state = None
    momentum = args.momentum
    if args.comm.startswith("gossip"):
        net = model
        asynchronous = args.comm == "gossip-async"
        averager = ddp.GossipAverager(
            model, schedule="random" if asynchronous else "matching",
            mixing=0.5, asynchronous=asynchronous)
        state = averager
    elif args.comm.startswith("easgd"):
        net = model
        averager = ddp.ElasticAverager(
            model, moving_rate=0.9, asynchronous=args.comm == "easgd-async")
        state = averager
    elif args.learners:
        net = model
        fields = ({} if args.comm == "dense" else
                  compress_fields(args, schedule.steps_per_epoch))
        state = Learners(model, size, args.comm.replace("-", "_"), **fields)
    elif args.sharded and args.fsdp_version == 2:
        net, state = fully_sharded(model, args, schedule.steps_per_epoch)
    elif args.sharded:
        net, state = sharded(model, args, schedule.steps_per_epoch, device)
    else:
        buckets = ({"bucket_cap_mb": args.bucket_cap_mb}
                   if args.bucket_cap_mb else {})
        net = DDP(model, device_ids=[device] if device.type == "cuda" else
                  None, **buckets)
        if args.comm in TORCH_HOOKS:
            register_torch_hook(net, args, schedule.steps_per_epoch)
        elif args.comm != "ddp":
            hook, state = make_hook_state(net, args, schedule.steps_per_epoch)
            net.register_comm_hook(state, hook)
    if getattr(state, "options", None) and state.options.momentum:
        momentum = 0.0  # the hook applies it (momentum correction)
    if args.optimizer == "adam":
        optimizer = torch.optim.Adam(net.parameters(), lr=args.lr)
    else:
        optimizer = torch.optim.SGD(net.parameters(), lr=args.lr,
                                    momentum=momentum)
    if hasattr(state, "check_optimizer"):
        state.check_optimizer(optimizer)
    scheduler = lr_scheduler(args, optimizer, schedule.steps)

    steps = min(schedule.steps, args.steps or schedule.steps)
    evaluate_at = {round(steps * (i + 1) / args.evaluations)
                   for i in range(args.evaluations)}
    curve, wall, cpu, losses = [], 0.0, 0.0, []
    # Per step: wall and CPU (all threads) milliseconds, and the wall time
    # of its phases; backward includes DDP's wait for the last bucket's
    # communication.
    timeline = {"wall": [], "cpu": [], "forward": [], "backward": [],
                "optimizer": [], "link_tx": []}
    counter = None
    if args.link_counter:
        counter = open("/sys/class/net/%s/statistics/tx_bytes"
                       % args.link_counter)

    def link_sent():
        counter.seek(0)
        return int(counter.read())
    sent_before = link_sent() if counter else 0
    for step, chosen in enumerate(zip(*schedules), 1):
        if step > steps:
            break
        batches = [(torch.from_numpy(images[c]).to(device),
                    torch.from_numpy(labels[c]).to(device)) for c in chosen]
        start, start_cpu = time.perf_counter(), time.process_time()
        optimizer.zero_grad()
        if args.learners:
            # Forward and backward of every learner, then the combine.
            loss = state.step(model, batches,
                              lambda output, y: loss_of(args, output, y))
            forward_end = backward_end = time.perf_counter()
        else:
            x, y = batches[0]
            loss = loss_of(args, net(x), y)
            forward_end = time.perf_counter()
            loss.backward()
            backward_end = time.perf_counter()
        optimizer.step()
        if averager is not None:
            averager.step()
        if scheduler is not None:
            scheduler.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        end = time.perf_counter()
        wall += end - start
        cpu += time.process_time() - start_cpu
        for phase, seconds in (("wall", end - start),
                               ("cpu", time.process_time() - start_cpu),
                               ("forward", forward_end - start),
                               ("backward", backward_end - forward_end),
                               ("optimizer", end - backward_end)):
            timeline[phase].append(round(1000 * seconds, 3))
        if counter:
            sent_now = link_sent()
            timeline["link_tx"].append(sent_now - sent_before)
            sent_before = sent_now
        if args.steps:  # a benchmark (bounded): the hooks' parts per step
            timeline.setdefault("hooks", []).append({
                part: round(1000 * value, 3) if part != "jobs" else value
                for part, value in ddp.communication_profile(
                    reset=True).items()})
        losses.append(loss.item())
        if step in evaluate_at and (rank == 0 or args.sharded):
            # FSDP's forward is collective (it gathers each unit's
            # parameters): every rank evaluates the sharded model.
            point = evaluate_point(args, net if args.sharded else model,
                                   test_images, test_labels, device,
                                   last=step == steps)
            accuracy = point.get("test_accuracy", point.get(
                "subset_accuracy"))
            if rank == 0:
                tail = losses[-50:]
                curve.append({"step": step,
                              "epoch": step / schedule.steps_per_epoch,
                              "bytes": sum(bytes_sent(state, model)),
                              **point,
                              "train_loss": sum(tail) / len(tail)})
                # Long runs (ResNet-18: about 10 minutes an epoch here)
                # say where they are; on stderr, so stdout keeps the one
                # summary line that scripts read.
                print("progress %s %s seed %d: step %d/%d (epoch %.2f), "
                      "test accuracy %.4f, train loss %.4f, %.1f ms per step"
                      % (args.model, args.label or args.comm, args.seed,
                         step, steps, curve[-1]["epoch"], accuracy,
                         curve[-1]["train_loss"], 1000 * wall / step),
                      file=sys.stderr, flush=True)

    if rank == 0:
        values, indices = bytes_sent(state, model)
        if args.comm in ("ddp", "bf16", "fp16"):
            # gloo's traffic is not counted: nominal.
            width = 4 if args.comm == "ddp" and not (
                args.sharded and args.wire in ("bf16", "f16")) else 2
            values = width * steps * parameter_count
            if args.sharded:  # a reduce-scatter: half an all-reduce
                values //= 2
        final = curve[-1]
        print("summary %s-%s: %d %s, %d steps (%.2f epochs), train loss "
              "(last 50, rank 0) %.4f, test accuracy %.4f, %.1f ms per step"
              % ("fsdp" if args.sharded else "ddp", args.comm, size,
                 "simulated learners" if args.learners else "ranks",
                 steps, steps / schedule.steps_per_epoch,
                 final["train_loss"], final["test_accuracy"],
                 1000 * wall / steps), flush=True)
        if args.log:
            options = getattr(state, "options", None)
            with open(args.log, "w") as f:
                json.dump({
                    "label": args.label or args.comm, "model": args.model,
                    "comm": args.comm, "sharded": args.sharded,
                    "wire": args.wire or "f32",
                    "fsdp_wrap": args.fsdp_wrap if args.sharded else None,
                    "fsdp_version": (args.fsdp_version if args.sharded
                                     else None),
                    "fsdp_selection": (args.fsdp_selection if args.sharded
                                       else None),
                    "seed": args.seed, "ranks": size,
                    "learners": args.learners,
                    # The last step's bytes per learner and the values
                    # its compressed parameters combined.
                    "learners_last_step": getattr(state, "last_step", None),
                    "lr_warmup_steps": args.lr_warmup_steps,
                    "device": args.device,
                    "steps": steps,
                    "epochs": steps / schedule.steps_per_epoch,
                    "parameters": parameter_count,
                    "warmup_steps": args.warmup_steps,
                    "powersgd_rank": (args.powersgd_rank
                                      if args.comm == "powersgd" else None),
                    "lr": args.lr, "momentum": args.momentum,
                    "optimizer": args.optimizer,
                    "lr_schedule": args.lr_schedule,
                    "options": (dataclasses.asdict(options) if options
                                else None),
                    "value_bytes_per_step": values / steps,
                    "index_bytes_per_step": indices / steps,
                    "ms_per_step": 1000 * wall / steps,
                    "cpu_ms_per_step": 1000 * cpu / steps,
                    "timeline": timeline,
                    "communication": ddp.communication_profile(),
                    # PyTorch's CPU kernels pick vector code by CPU
                    # (AVX2, AVX-512): the same run on another machine
                    # can round differently (docs/results.md).
                    "torch": torch.__version__,
                    "cpu_capability": cpu_capability(),
                    "curve": curve}, f, indent=1)
    if args.learners:
        if args.save:
            torch.save(model.state_dict(), args.save)
        return 0
    if args.save and rank == 0:
        torch.save(model.state_dict(), args.save)
    # Every rank leaves together, and DDP (with its hook's state) goes
    # before the process group: PowerSGD's state holds the group's work
    # objects, and a rank that destroyed the group under them while
    # another still evaluated aborted at exit ("Resource deadlock
    # avoided", "terminate called without an active exception").
    dist.barrier()
    del net, optimizer
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

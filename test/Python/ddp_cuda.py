"""The DDP hooks on CUDA tensors (gradcomm.torch.ddp.use_cuda: the runtime's
CUDA backend on PyTorch's stream) against the same hooks on CPU tensors (the
CPU backend), bit for bit, in float32, bfloat16 and float16 buckets and
16-bit wires: dense, ScaleCom (plain and with the training recipe's warm-up,
momentum correction and clipping) and local top-k; and the synchronous
averagers (EASGD, gossip) on float32 and 16-bit parameters.

One GPU, one rank. The model's loss is sum(p * c) over its parameters, so
each gradient is its coefficient tensor c exactly, on either device, and the
hooks see the same bits on both; what comes back must be the same bits too.
On the GPU each gradient is held back on PyTorch's stream by a spin, so a
runtime that does not wait for that stream reads stale buckets.
Each device runs in its own process (a runtime takes one backend per job).

    python ddp_cuda.py            # exit 77 (skipped) without a CUDA device
    python ddp_cuda.py --device cpu|cuda --out FILE   # one side (internal)

Run by ctest (python.ddp.cuda, skipped without a GPU) and by
bench/gpu/run.sh on a GPU machine.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from gradcomm.torch import ddp  # noqa: E402

STEPS = 6
SIZES = (3000, 50, 5000)  # two compressed tensors and one dense (small)
COMPRESS = dict(ratio=10, min_elements=1024)

# name -> (parameter type, state factory, hook). Warm-up off unless the case
# is about it, so the compressed path runs from the first step.
CASES = {
    "dense-f32": (torch.float32, lambda m, p: ddp.DenseState(m, prefix=p),
                  ddp.dense_hook),
    "dense-f32-bf16wire": (torch.float32, lambda m, p: ddp.DenseState(
        m, prefix=p, wire="bf16"), ddp.dense_hook),
    "dense-bf16": (torch.bfloat16, lambda m, p: ddp.DenseState(m, prefix=p),
                   ddp.dense_hook),
    "scalecom-f32": (torch.float32, lambda m, p: ddp.ScaleComState(
        m, prefix=p, warmup_steps=0, **COMPRESS), ddp.scalecom_hook),
    "scalecom-f32-f16wire": (torch.float32, lambda m, p: ddp.ScaleComState(
        m, prefix=p, warmup_steps=0, wire="f16", **COMPRESS),
        ddp.scalecom_hook),
    "scalecom-bf16": (torch.bfloat16, lambda m, p: ddp.ScaleComState(
        m, prefix=p, warmup_steps=0, **COMPRESS), ddp.scalecom_hook),
    "scalecom-f16": (torch.float16, lambda m, p: ddp.ScaleComState(
        m, prefix=p, warmup_steps=0, **COMPRESS), ddp.scalecom_hook),
    "scalecom-recipe": (torch.float32, lambda m, p: ddp.ScaleComState(
        m, prefix=p, warmup_steps=2, momentum=0.9, clip=20.0, **COMPRESS),
        ddp.scalecom_hook),
    "local-topk-f32": (torch.float32, lambda m, p: ddp.LocalTopkState(
        m, prefix=p, **COMPRESS), ddp.local_topk_hook),
    "local-topk-bf16": (torch.bfloat16, lambda m, p: ddp.LocalTopkState(
        m, prefix=p, **COMPRESS), ddp.local_topk_hook),
}


# The averagers (no DDP): name -> (parameter type, averager factory). The
# model's step subtracts the coefficients (one rounding, the same on either
# device); the averager then pulls the replica and moves its center.
AVERAGERS = {
    "easgd-f32": (torch.float32, lambda m, p: ddp.ElasticAverager(
        m, moving_rate=0.5, period=2, prefix=p)),
    "easgd-bf16": (torch.bfloat16, lambda m, p: ddp.ElasticAverager(
        m, moving_rate=0.5, period=2, prefix=p)),
    "gossip-f16": (torch.float16, lambda m, p: ddp.GossipAverager(
        m, prefix=p)),
}


class Weighted(torch.nn.Module):
    """loss = sum_i sum(p_i * c_i): d loss / d p_i = c_i, exactly."""

    def __init__(self, dtype):
        super().__init__()
        self.weights = torch.nn.ParameterList(
            torch.nn.Parameter(torch.zeros(n, dtype=dtype)) for n in SIZES)

    def forward(self, coefficients):
        return sum((p * c).sum() for p, c in zip(self.weights, coefficients))


def coefficients(step, dtype, device):
    """The step's gradients: seeded, of several magnitudes, made on the CPU
    (the same bits for either device)."""
    generator = torch.Generator().manual_seed(1000 + step)
    out = []
    for n in SIZES:
        c = torch.randn(n, generator=generator)
        c *= torch.pow(2.0, torch.randint(-6, 6, (n,), generator=generator))
        out.append(c.to(dtype).to(device))
    return out


def run_side(device, out):
    """Every case on one device; saves {case: [[grad of each parameter] per
    step]} (on the CPU) and the number of hook calls per case."""
    store = tempfile.mktemp(prefix="gradcomm-ddp-cuda-store-")
    dist.init_process_group("nccl" if device == "cuda" else "gloo",
                            init_method="file://" + store, rank=0,
                            world_size=1)
    if device == "cuda":
        torch.cuda.set_device(0)
        ddp.use_cuda()
    results, calls = {}, {}
    for case, (dtype, make_state, hook) in CASES.items():
        model = Weighted(dtype).to(device)
        state = make_state(model, case + "/")
        net = DDP(model, device_ids=[0] if device == "cuda" else None,
                  bucket_cap_mb=0.01)
        calls[case] = 0

        def counted(state, bucket, hook=hook, case=case):
            calls[case] += 1
            return hook(state, bucket)

        net.register_comm_hook(state, counted)
        if device == "cuda":
            # Each gradient arrives late on PyTorch's stream: a spin of about
            # 10 ms there before it is written. A runtime not ordered after
            # that stream reads the bucket before DDP fills it.
            for p in model.weights:
                p.register_hook(
                    lambda g: (torch.cuda._sleep(20_000_000), g)[1])
        history = []
        for step in range(STEPS):
            net.zero_grad(set_to_none=False)
            net(coefficients(step, dtype, device)).backward()
            history.append([p.grad.detach().cpu().clone()
                            for p in model.weights])
        results[case] = history
    for case, (dtype, make_averager) in AVERAGERS.items():
        model = Weighted(dtype).to(device)
        averager = make_averager(model, case + "/")
        calls[case] = 0
        history = []
        with torch.no_grad():
            for step in range(STEPS):
                for p, c in zip(model.weights,
                                coefficients(step, dtype, device)):
                    p.sub_(c)
                averager.step()
                calls[case] += 1
                saved = [p.detach().cpu().clone() for p in model.weights]
                if isinstance(averager, ddp.ElasticAverager):
                    saved += [averager.center(p).cpu()
                              for p in model.weights]
                history.append(saved)
        results[case] = history
    if device == "cuda":
        torch.cuda.synchronize()
    torch.save({"results": results, "calls": calls}, out)
    dist.destroy_process_group()


def bits(tensor):
    return tensor.view({4: torch.int32, 2: torch.int16}[tensor.element_size()])


def compare(cpu, cuda):
    failures = []
    for case in list(CASES) + list(AVERAGERS):
        if cpu["calls"][case] == 0 or cuda["calls"][case] == 0:
            failures.append("%s: the hook never ran (cpu %d, cuda %d calls)"
                            % (case, cpu["calls"][case], cuda["calls"][case]))
        if case in AVERAGERS:
            raw = None
        else:
            raw = coefficients(STEPS - 1, CASES[case][0], "cpu")[0]
        if case.startswith(("scalecom", "local-topk")) and torch.equal(
                cpu["results"][case][-1][0], raw):
            failures.append("%s: the gradient came back uncompressed" % case)
        for step, (a, b) in enumerate(zip(cpu["results"][case],
                                          cuda["results"][case])):
            for index, (x, y) in enumerate(zip(a, b)):
                if not torch.equal(bits(x), bits(y)):
                    where = (bits(x) != bits(y)).nonzero()[0].item()
                    failures.append(
                        "%s: step %d, parameter %d differs first at [%d]: "
                        "cpu %r, cuda %r" % (case, step, index, where,
                                             x[where].item(),
                                             y[where].item()))
                    break
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"))
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.device:
        run_side(args.device, args.out)
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device for PyTorch: the DDP hooks' CUDA path is "
              "skipped")
        return 77
    with tempfile.TemporaryDirectory() as work:
        sides = {}
        for device in ("cpu", "cuda"):
            out = os.path.join(work, device + ".pt")
            subprocess.run([sys.executable, __file__, "--device", device,
                            "--out", out], check=True)
            sides[device] = torch.load(out)
    failures = compare(sides["cpu"], sides["cuda"])
    for failure in failures:
        print("FAIL " + failure)
    print("%d cases, %d steps each: %s" % (
        len(CASES) + len(AVERAGERS), STEPS,
        "the CUDA hooks and averagers give the CPU's bits"
        if not failures else "%d differences" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

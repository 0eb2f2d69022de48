"""ATen op converters: one small function per op family, registered in
CONVERTERS by ATen op name (the overload packet: `addmm`, `add_` is the
in-place form of `add`).

A converter is called as fn(ctx, *args, **kwargs) where every fx node in
the arguments is replaced by its value (a gradcomm.mlir.Tensor, or a tuple
of them), and returns a Tensor or a tuple (None for outputs it does not
compute). ctx.b is the Builder, ctx.fail(message) raises an ExportError
naming the op, its place in the model and its argument shapes.
"""

from gradcomm.mlir import Tensor

CONVERTERS = {}


def converter(*names):
    """Registers fn for every ATen op name in `names`."""

    def register(fn):
        for name in names:
            if name in CONVERTERS:
                raise RuntimeError("two converters for aten." + name)
            CONVERTERS[name] = fn
        return fn

    return register


def is_tensor(value):
    return isinstance(value, Tensor)


def normalize_dim(ctx, d, rank):
    if not -max(rank, 1) <= d < max(rank, 1):
        ctx.fail("dimension %d out of range for rank %d" % (d, rank))
    return d % max(rank, 1)


# Importing the families fills CONVERTERS.
from gradcomm.torch.ops import (  # noqa: E402,F401
    elementwise, linalg, loss, nn, normalization, reduction, shape)

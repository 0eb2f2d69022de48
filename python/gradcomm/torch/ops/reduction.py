"""Reductions: sum, mean, amax, amin over a list of dims (all when empty)."""

from gradcomm.torch.ops import converter, normalize_dim
from gradcomm.torch.ops.elementwise import element_type


def reduced_dims(ctx, a, dims):
    if dims is None or (isinstance(dims, (list, tuple)) and not dims):
        return list(range(a.rank))
    if isinstance(dims, int):
        dims = [dims]
    return [normalize_dim(ctx, d, a.rank) for d in dims]


def float_input(ctx, a, what):
    if a.dtype != "f32":
        ctx.fail("%s of a %s tensor is not supported" % (what, a.dtype))


# Sums of at least this many terms accumulate in f64, rounded once at the
# end. A float accumulator's error grows with the count, where PyTorch's
# CPU sum (cascade summation) stays near one rounding; in double ours
# stays below PyTorch's for any count a step sees. Shorter sums keep f32
# (their error is PyTorch's own order).
WIDE_SUM_TERMS = 256


def accurate_sum(ctx, a, dims, keepdim=False):
    """sum(a, dims) within about one f32 rounding of the exact sum."""
    terms = 1
    for d in dims:
        terms *= a.shape[d]
    if terms < WIDE_SUM_TERMS:
        return ctx.b.sum(a, dims, keepdim)
    return ctx.b.narrow(ctx.b.wide_sum([a], dims, keepdim=keepdim))


@converter("sum")
def sum_(ctx, a, dims=None, keepdim=False, dtype=None):
    float_input(ctx, a, "sum")
    element_type(ctx, dtype, "f32")
    if a.rank == 0:
        return a
    return accurate_sum(ctx, a, reduced_dims(ctx, a, dims), keepdim)


@converter("mean")
def mean(ctx, a, dims=None, keepdim=False, dtype=None):
    total = sum_(ctx, a, dims, keepdim, dtype)
    count = max(a.numel(), 1) // max(total.numel(), 1)
    return ctx.b.map(total.shape, [total], lambda b, v: b.binary(
        "arith.divf", v[0], b.const(float(count))))


def extremum(opname, init):
    def convert(ctx, a, dims=(), keepdim=False):
        float_input(ctx, a, opname)
        if a.rank == 0:
            return a
        return ctx.b.reduce(a, reduced_dims(ctx, a, dims), keepdim, init,
                            lambda b, acc, x: b.binary(opname, acc, x))

    return convert


converter("amax")(extremum("arith.maximumf", float("-inf")))
converter("amin")(extremum("arith.minimumf", float("inf")))

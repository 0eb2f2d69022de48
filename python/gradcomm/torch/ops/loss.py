"""Softmax, log-softmax and the negative log-likelihood loss, forward and
backward, in the order of operations PyTorch's CPU kernels use."""

from gradcomm.torch.ops import converter, normalize_dim
from gradcomm.torch.ops.elementwise import pointwise


def amax_keepdim(ctx, a, d):
    return ctx.b.reduce(a, [d], True, float("-inf"),
                        lambda b, acc, x: b.binary("arith.maximumf", acc, x))


def softmax_input(ctx, a, d):
    if a.dtype != "f32":
        ctx.fail("softmax of a %s tensor" % a.dtype)
    return normalize_dim(ctx, d, a.rank)


@converter("_log_softmax")
def log_softmax(ctx, a, d, half_to_float=False):
    d = softmax_input(ctx, a, d)
    shifted = pointwise(ctx, [a, amax_keepdim(ctx, a, d)], lambda b, v: b.binary(
        "arith.subf", v[0], v[1]))
    exps = pointwise(ctx, [shifted], lambda b, v: b.unary("math.exp", v[0]))
    total = ctx.b.sum(exps, [d], keepdim=True)
    return pointwise(ctx, [shifted, total], lambda b, v: b.binary(
        "arith.subf", v[0], b.unary("math.log", v[1])))


@converter("_log_softmax_backward_data")
def log_softmax_backward(ctx, grad, output, d, input_dtype=None):
    d = softmax_input(ctx, output, d)
    total = ctx.b.sum(grad, [d], keepdim=True)

    def body(b, v):
        g, out, s = v
        return b.binary("arith.subf", g, b.binary(
            "arith.mulf", b.unary("math.exp", out), s))

    return pointwise(ctx, [grad, output, total], body)


@converter("_softmax")
def softmax(ctx, a, d, half_to_float=False):
    d = softmax_input(ctx, a, d)
    exps = pointwise(ctx, [a, amax_keepdim(ctx, a, d)], lambda b, v: b.unary(
        "math.exp", b.binary("arith.subf", v[0], v[1])))
    total = ctx.b.sum(exps, [d], keepdim=True)
    return pointwise(ctx, [exps, total], lambda b, v: b.binary(
        "arith.divf", v[0], v[1]))


@converter("_safe_softmax")
def safe_softmax(ctx, a, d, dtype=None):
    """Softmax whose rows of only -inf give zeros instead of NaN (PyTorch's
    attention with a fully masked row)."""
    if dtype is not None:
        ctx.fail("a dtype argument is not supported")
    d = softmax_input(ctx, a, d)
    peak = amax_keepdim(ctx, a, d)
    exps = pointwise(ctx, [a, peak], lambda b, v: b.unary(
        "math.exp", b.binary("arith.subf", v[0], v[1])))
    total = ctx.b.sum(exps, [d], keepdim=True)

    def body(b, v):
        masked = b.cmpf("oeq", v[2], b.const(float("-inf")))
        return b.select(masked, b.const(0.0), b.binary("arith.divf", v[0],
                                                       v[1]))

    return pointwise(ctx, [exps, total, peak], body)


@converter("_softmax_backward_data")
def softmax_backward(ctx, grad, output, d, input_dtype=None):
    d = softmax_input(ctx, output, d)
    products = pointwise(ctx, [grad, output], lambda b, v: b.binary(
        "arith.mulf", v[0], v[1]))
    total = ctx.b.sum(products, [d], keepdim=True)

    def body(b, v):
        g, out, s = v
        return b.binary("arith.mulf", out, b.binary("arith.subf", g, s))

    return pointwise(ctx, [grad, output, total], body)


REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def nll_inputs(ctx, a, target, weight, reduction):
    if weight is not None:
        ctx.fail("nll_loss with class weights is not supported")
    if reduction not in REDUCTIONS:
        ctx.fail("unknown reduction %r" % (reduction,))
    if a.rank != 2 or target.rank != 1 or target.dtype != "i64" or \
            target.shape[0] != a.shape[0]:
        ctx.fail("nll_loss expects (N, C) log-probabilities and (N,) int64 "
                 "targets")


def valid_target(b, t, ignore_index):
    """(valid, class index): a target equal to ignore_index or outside
    [0, C) reads class 0 and counts as invalid (contributes nothing)."""
    valid = b.cmpi("ne", t, b.const(ignore_index, "i64"), "i64")
    return valid, b.cast("arith.index_cast", t, "i64", "index")


@converter("nll_loss_forward")
def nll_loss_forward(ctx, a, target, weight, reduction, ignore_index):
    nll_inputs(ctx, a, target, weight, reduction)
    classes = a.shape[1]

    def body(b, ins, outs):
        t = ins[0]
        in_range = b.binary("arith.andi", b.cmpi(
            "sge", t, b.const(0, "i64"), "i64"), b.cmpi(
                "slt", t, b.const(classes, "i64"), "i64"), "i1")
        valid, index = valid_target(b, t, ignore_index)
        valid = b.binary("arith.andi", valid, in_range, "i1")
        zero_index = b.op("arith.constant 0", "index")
        safe = b.select(valid, index, zero_index, "index")
        value = b.extract(a, [b.index(0), safe])
        picked = b.select(valid, b.unary("arith.negf", value), b.const(0.0))
        count = b.select(valid, b.const(1.0), b.const(0.0))
        return [picked, count]

    n = a.shape[0]
    picked, counts = ctx.b.generic(
        1, ["parallel"], [(target, ["d0"])],
        [(ctx.b.empty((n,)), ["d0"]), (ctx.b.empty((n,)), ["d0"])], body)
    total_weight = ctx.b.sum(counts, [0])
    if REDUCTIONS[reduction] == "none":
        return picked, total_weight
    total = ctx.b.sum(picked, [0])
    if REDUCTIONS[reduction] == "sum":
        return total, total_weight
    return pointwise(ctx, [total, total_weight], lambda b, v: b.binary(
        "arith.divf", v[0], v[1])), total_weight


@converter("nll_loss_backward")
def nll_loss_backward(ctx, grad, a, target, weight, reduction, ignore_index,
                      total_weight):
    nll_inputs(ctx, a, target, weight, reduction)
    mean = REDUCTIONS[reduction] == "mean"
    grad_map = ["d0"] if grad.rank == 1 else []

    def body(b, ins, outs):
        t, g, tw = ins
        valid, _ = valid_target(b, t, ignore_index)
        j = b.cast("arith.index_cast", b.index(1), "index", "i64")
        hit = b.binary("arith.andi", valid, b.cmpi("eq", t, j, "i64"), "i1")
        value = b.unary("arith.negf", g)
        if mean:
            value = b.binary("arith.divf", value, tw)
        return [b.select(hit, value, b.const(0.0))]

    return ctx.b.generic(
        2, ["parallel", "parallel"],
        [(target, ["d0"]), (grad, grad_map), (total_weight, [])],
        [(ctx.b.empty(a.shape), ["d0", "d1"])], body)[0]

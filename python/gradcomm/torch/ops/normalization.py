"""Batch norm (train-mode statistics, running-stat updates) and layer norm,
forward and backward, with PyTorch's CPU formulas."""

from gradcomm.torch.ops import converter
from gradcomm.torch.ops.elementwise import pointwise
from gradcomm.torch.ops.nn import channel_view


def divide(ctx, a, count):
    return pointwise(ctx, [a], lambda b, v: b.binary(
        "arith.divf", v[0], b.const(float(count))))


def batch_statistics(ctx, x, eps):
    """(mean, biased variance sum, invstd, count): mean and invstd f32,
    the variance sum f64. As PyTorch's CPU kernel: the sums, the mean and
    invstd in double (two passes), rounded to float at the end."""
    dims = [0] + list(range(2, x.rank))
    count = x.numel() // x.shape[1]
    mean = pointwise(ctx, [ctx.b.wide_sum([x], dims)], lambda b, v: b.binary(
        "arith.divf", v[0], b.const(float(count), "f64"), "f64"), "f64")
    var_sum = ctx.b.wide_sum(
        [x, channel_view(ctx, mean, x.rank)], dims, lambda b, v: b.binary(
            "arith.mulf", b.binary("arith.subf", v[0], v[1], "f64"),
            b.binary("arith.subf", v[0], v[1], "f64"), "f64"))

    def invstd(b, v):
        var = b.binary("arith.divf", v[0], b.const(float(count), "f64"),
                       "f64")
        root = b.unary("math.sqrt", b.binary("arith.addf", var, b.const(
            eps, "f64"), "f64"), "f64")
        return b.binary("arith.divf", b.const(1.0, "f64"), root, "f64")

    return (ctx.b.narrow(mean), var_sum,
            pointwise(ctx, [var_sum], invstd, "f64", "f32"), count)


def affine_normalized(b, v, has_weight, has_bias):
    """(x - mean) * invstd [* weight] [+ bias] from scalars v = [x, mean,
    invstd, weight?, bias?]."""
    out = b.binary("arith.mulf", b.binary("arith.subf", v[0], v[1]), v[2])
    rest = list(v[3:])
    if has_weight:
        out = b.binary("arith.mulf", out, rest.pop(0))
    if has_bias:
        out = b.binary("arith.addf", out, rest.pop(0))
    return out


def normalize(ctx, x, mean, invstd, weight, bias):
    rank = x.rank
    operands = [x, channel_view(ctx, mean, rank),
                channel_view(ctx, invstd, rank)]
    operands += [channel_view(ctx, t, rank) for t in (weight, bias)
                 if t is not None]
    return pointwise(ctx, operands, lambda b, v: affine_normalized(
        b, v, weight is not None, bias is not None))


def moving_average(ctx, running, value, momentum, scale=1.0):
    """momentum * value * scale + (1 - momentum) * running; value may be
    f64 (the variance sum), the result is f32."""
    if value.dtype == "f64":
        value = pointwise(ctx, [value], lambda b, v: b.binary(
            "arith.mulf", v[0], b.const(scale, "f64"), "f64"), "f64", "f32")
        scale = 1.0

    def body(b, v):
        new = b.binary("arith.mulf", b.const(momentum), v[1])
        if scale != 1.0:
            new = b.binary("arith.mulf", new, b.const(scale))
        old = b.binary("arith.mulf", b.const(1.0 - momentum), v[0])
        return b.binary("arith.addf", new, old)

    return pointwise(ctx, [running, value], body)


def check_batch_norm(ctx, x):
    if x.rank < 2 or x.dtype != "f32":
        ctx.fail("batch norm expects an f32 (N, C, ...) input")


def batch_norm_train(ctx, x, weight, bias, running_mean, running_var,
                     momentum, eps, mean_position):
    """Train-mode forward; the running statistics (arguments at
    mean_position and mean_position + 1) are updated in place."""
    mean, var_sum, invstd, count = batch_statistics(ctx, x, eps)
    out = normalize(ctx, x, mean, invstd, weight, bias)
    if running_mean is not None:
        ctx.mutate(mean_position, moving_average(ctx, running_mean, mean,
                                                 momentum))
    if running_var is not None:
        unbiased = 1.0 / max(count - 1, 1)
        ctx.mutate(mean_position + 1, moving_average(
            ctx, running_var, var_sum, momentum, unbiased))
    return out, mean, invstd


@converter("native_batch_norm", "_native_batch_norm_legit")
def native_batch_norm(ctx, x, weight, bias, *rest):
    check_batch_norm(ctx, x)
    if len(rest) == 3:  # _native_batch_norm_legit.no_stats
        running_mean = running_var = None
        training, momentum, eps = rest
    else:
        running_mean, running_var, training, momentum, eps = rest
    if training:
        return batch_norm_train(ctx, x, weight, bias, running_mean,
                                running_var, momentum, eps, 3)
    if running_mean is None:
        ctx.fail("eval-mode batch norm needs running statistics")

    def invstd(b, v):
        return b.binary("arith.divf", b.const(1.0), b.unary(
            "math.sqrt", b.binary("arith.addf", v[0], b.const(eps))))

    inv = pointwise(ctx, [running_var], invstd)
    empty = ctx.b.empty((0,))
    return normalize(ctx, x, running_mean, inv, weight, bias), empty, empty


@converter("_batch_norm_with_update")
def batch_norm_with_update(ctx, x, weight, bias, running_mean, running_var,
                           momentum, eps):
    check_batch_norm(ctx, x)
    out, mean, invstd = batch_norm_train(ctx, x, weight, bias, running_mean,
                                         running_var, momentum, eps, 3)
    return out, mean, invstd, ctx.b.empty((0,), "i1")


@converter("native_batch_norm_backward", "batch_norm_backward")
def native_batch_norm_backward(ctx, grad, x, weight, running_mean,
                               running_var, save_mean, save_invstd, train,
                               eps, output_mask, *reserve):
    if not train:
        ctx.fail("batch norm backward in eval mode is not supported")
    rank = x.rank
    dims = [0] + list(range(2, rank))
    count = x.numel() // x.shape[1]
    mean_v = channel_view(ctx, save_mean, rank)
    invstd_v = channel_view(ctx, save_invstd, rank)
    # The two channel sums in double, as PyTorch's CPU kernel.
    grad_sum = ctx.b.wide_sum([grad], dims)
    dot = ctx.b.wide_sum([grad, x, mean_v], dims, lambda b, v: b.binary(
        "arith.mulf", v[0], b.binary("arith.subf", v[1], v[2], "f64"), "f64"))
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        n = float(count)

        def k_body(b, v):  # dot * invstd^2 / N, in double
            inv = v[1]
            return b.binary("arith.divf", b.binary("arith.mulf", b.binary(
                "arith.mulf", v[0], inv, "f64"), inv, "f64"),
                b.const(n, "f64"), "f64")

        k = pointwise(ctx, [dot, save_invstd], k_body, "f64", "f32")
        mean_g = pointwise(ctx, [grad_sum], lambda b, v: b.binary(
            "arith.divf", v[0], b.const(n, "f64"), "f64"), "f64", "f32")
        operands = [grad, x, mean_v, invstd_v,
                    channel_view(ctx, mean_g, rank),
                    channel_view(ctx, k, rank)]
        if weight is not None:
            operands.append(channel_view(ctx, weight, rank))

        def body(b, v):
            g, xv, m, inv, mg, kv = v[:6]
            centered = b.binary("arith.subf", xv, m)
            out = b.binary("arith.subf", b.binary("arith.subf", g, mg),
                           b.binary("arith.mulf", centered, kv))
            out = b.binary("arith.mulf", out, inv)
            if weight is not None:
                out = b.binary("arith.mulf", out, v[6])
            return out

        grad_input = pointwise(ctx, operands, body)
    if output_mask[1]:
        grad_weight = pointwise(ctx, [dot, save_invstd], lambda b, v: b.binary(
            "arith.mulf", v[0], v[1], "f64"), "f64", "f32")
    if output_mask[2]:
        grad_bias = ctx.b.narrow(grad_sum)
    return grad_input, grad_weight, grad_bias


def layer_norm_dims(ctx, x, normalized_shape):
    k = len(normalized_shape)
    if tuple(x.shape[x.rank - k:]) != tuple(normalized_shape):
        ctx.fail("normalized_shape %s does not end input shape %s" %
                 (list(normalized_shape), list(x.shape)))
    count = 1
    for s in normalized_shape:
        count *= s
    return list(range(x.rank - k, x.rank)), list(range(x.rank - k)), count


@converter("native_layer_norm")
def native_layer_norm(ctx, x, normalized_shape, weight, bias, eps):
    dims, _, count = layer_norm_dims(ctx, x, normalized_shape)
    mean = divide(ctx, ctx.b.sum(x, dims, keepdim=True), count)
    squares = pointwise(ctx, [x, mean], lambda b, v: b.binary(
        "arith.mulf", b.binary("arith.subf", v[0], v[1]),
        b.binary("arith.subf", v[0], v[1])))
    var = divide(ctx, ctx.b.sum(squares, dims, keepdim=True), count)
    rstd = pointwise(ctx, [var], lambda b, v: b.binary(
        "arith.divf", b.const(1.0), b.unary(
            "math.sqrt", b.binary("arith.addf", v[0], b.const(eps)))))
    operands = [x, mean, rstd] + [t for t in (weight, bias) if t is not None]

    def body(b, v):
        return affine_normalized(b, v, weight is not None, bias is not None)

    return pointwise(ctx, operands, body), mean, rstd


@converter("native_layer_norm_backward")
def native_layer_norm_backward(ctx, grad, x, normalized_shape, mean, rstd,
                               weight, bias, output_mask):
    dims, batch_dims, count = layer_norm_dims(ctx, x, normalized_shape)
    xhat = pointwise(ctx, [x, mean, rstd], lambda b, v: b.binary(
        "arith.mulf", b.binary("arith.subf", v[0], v[1]), v[2]))
    scaled = grad if weight is None else pointwise(
        ctx, [grad, weight], lambda b, v: b.binary("arith.mulf", v[0], v[1]))
    grad_input = grad_weight = grad_bias = None
    if output_mask[0]:
        sum_g = ctx.b.sum(scaled, dims, keepdim=True)
        sum_gx = ctx.b.sum(pointwise(ctx, [scaled, xhat], lambda b, v: b.binary(
            "arith.mulf", v[0], v[1])), dims, keepdim=True)

        def body(b, v):
            g, xh, r, sg, sgx = v
            n = b.const(float(count))
            inner = b.binary("arith.subf", b.binary(
                "arith.subf", b.binary("arith.mulf", n, g), sg),
                b.binary("arith.mulf", xh, sgx))
            return b.binary("arith.mulf", b.binary("arith.divf", r, n), inner)

        grad_input = pointwise(ctx, [scaled, xhat, rstd, sum_g, sum_gx], body)
    if output_mask[1] and weight is not None:
        grad_weight = ctx.b.sum(pointwise(ctx, [grad, xhat], lambda b, v:
                                          b.binary("arith.mulf", v[0], v[1])),
                                batch_dims) if batch_dims else pointwise(
                                    ctx, [grad, xhat], lambda b, v: b.binary(
                                        "arith.mulf", v[0], v[1]))
    if output_mask[2] and bias is not None:
        grad_bias = ctx.b.sum(grad, batch_dims) if batch_dims else grad
    return grad_input, grad_weight, grad_bias

"""Convolution, max pooling, embedding and dropout, forward and backward.

Loops whose extent no operand gives by itself (a pooling window) get a
`window` operand: an empty tensor of the window's shape that only fixes the
loop range, as upstream's linalg.pooling_* ops do."""

from gradcomm.torch.ops import converter
from gradcomm.torch.ops.elementwise import pointwise


def pair(ctx, value, name):
    if isinstance(value, int):
        return [value, value]
    value = list(value)
    if len(value) == 1:
        return value * 2
    if len(value) != 2:
        ctx.fail("%s %s: 2-D only" % (name, value))
    return value


def check_conv(ctx, x, w, stride, padding, dilation, transposed, groups):
    if x.rank != 4 or w.rank != 4:
        ctx.fail("only 2-D convolutions (NCHW input, FCHW weight)")
    if transposed:
        ctx.fail("transposed convolutions are not supported")
    if groups != 1:
        ctx.fail("groups=%d is not supported (groups=1 only)" % groups)
    if pair(ctx, dilation, "dilation") != [1, 1]:
        ctx.fail("dilation %s is not supported (1 only)" % list(dilation))
    if x.shape[1] != w.shape[1]:
        ctx.fail("input has %d channels, weight expects %d" % (x.shape[1],
                                                               w.shape[1]))
    s = pair(ctx, stride, "stride")
    p = pair(ctx, padding, "padding")
    out = [(x.shape[2 + i] + 2 * p[i] - w.shape[2 + i]) // s[i] + 1
           for i in range(2)]
    if min(out) < 1:
        ctx.fail("the kernel does not fit the padded input")
    return s, p, out


def window_expr(out_dim, stride, kernel_dim):
    return "d%d * %d + d%d" % (out_dim, stride, kernel_dim)


def channel_view(ctx, vector, rank):
    """(C,) -> (1, C, 1, ...) so it broadcasts over NC...-shaped tensors."""
    return ctx.b.reshape(vector, (1, vector.shape[0]) + (1,) * (rank - 2))


@converter("convolution")
def convolution(ctx, x, w, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    s, p, (oh, ow) = check_conv(ctx, x, w, stride, padding, dilation,
                                transposed, groups)
    n, f = x.shape[0], w.shape[0]
    xp = ctx.b.pad(x, [0, 0, p[0], p[1]], [0, 0, p[0], p[1]], 0.0)
    # loops (n, f, oh, ow, c, kh, kw)
    out = ctx.b.contract(
        xp, ["d0", "d4", window_expr(2, s[0], 5), window_expr(3, s[1], 6)],
        w, ["d1", "d4", "d5", "d6"], (n, f, oh, ow),
        ["d0", "d1", "d2", "d3"], 7, ["parallel"] * 4 + ["reduction"] * 3)
    if bias is None:
        return out
    return pointwise(ctx, [out, channel_view(ctx, bias, 4)], lambda b, v:
                     b.binary("arith.addf", v[0], v[1]))


@converter("convolution_backward")
def convolution_backward(ctx, grad, x, w, bias_sizes, stride, padding,
                         dilation, transposed, output_padding, groups,
                         output_mask):
    s, p, (oh, ow) = check_conv(ctx, x, w, stride, padding, dilation,
                                transposed, groups)
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    grad_input = grad_weight = grad_bias = None
    if output_mask[2]:
        grad_bias = ctx.b.sum(grad, [0, 2, 3])
    if output_mask[1]:
        xp = ctx.b.pad(x, [0, 0, p[0], p[1]], [0, 0, p[0], p[1]], 0.0)
        # loops (f, c, kh, kw, n, oh, ow)
        grad_weight = ctx.b.contract(
            grad, ["d4", "d0", "d5", "d6"], xp,
            ["d4", "d1", window_expr(5, s[0], 2), window_expr(6, s[1], 3)],
            (f, c, kh, kw), ["d0", "d1", "d2", "d3"], 7,
            ["parallel"] * 4 + ["reduction"] * 3)
    if output_mask[0]:
        grad_input = convolution_input_grad(ctx, grad, x, w, s, p, (oh, ow))
    return grad_input, grad_weight, grad_bias


def convolution_input_grad(ctx, grad, x, w, s, p, out):
    """The gradient of the padded input is a stride-1 correlation of the
    zero-dilated, (K-1)-padded output gradient with the flipped kernel;
    the padding is then cut off."""
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    kernel = (kh, kw)
    rest = [(x.shape[2 + i] + 2 * p[i] - kernel[i]) % s[i] for i in range(2)]
    spread = [(out[i] - 1) * s[i] + 1 + 2 * (kernel[i] - 1) + rest[i]
              for i in range(2)]
    zeros = ctx.b.full((n, f, spread[0], spread[1]), 0.0)
    dilated = ctx.b.insert_slice(grad, zeros, [0, 0, kh - 1, kw - 1],
                                 [1, 1, s[0], s[1]])
    flipped = ctx.b.generic(
        4, ["parallel"] * 4,
        [(w, ["d0", "d1", "%d - d2" % (kh - 1), "%d - d3" % (kw - 1)])],
        [(ctx.b.empty(w.shape), ["d0", "d1", "d2", "d3"])],
        lambda b, ins, outs: [ins[0]])[0]
    padded_shape = (n, c, h + 2 * p[0], wd + 2 * p[1])
    # loops (n, c, i, j, f, kh, kw)
    padded = ctx.b.contract(
        dilated, ["d0", "d4", "d2 + d5", "d3 + d6"], flipped,
        ["d4", "d1", "d5", "d6"], padded_shape, ["d0", "d1", "d2", "d3"], 7,
        ["parallel"] * 4 + ["reduction"] * 3)
    if p == [0, 0]:
        return padded
    return ctx.b.extract_slice(padded, [0, 0, p[0], p[1]], [n, c, h, wd])


def check_pool(ctx, x, kernel, stride, padding, dilation, ceil_mode):
    if x.rank != 4:
        ctx.fail("max_pool2d expects an NCHW input")
    k = pair(ctx, kernel, "kernel_size")
    s = pair(ctx, stride, "stride") if stride else list(k)
    p = pair(ctx, padding, "padding")
    if pair(ctx, dilation, "dilation") != [1, 1]:
        ctx.fail("dilation %s is not supported (1 only)" % list(dilation))
    if ceil_mode:
        ctx.fail("ceil_mode=True is not supported")
    if p[0] * 2 > k[0] or p[1] * 2 > k[1]:
        ctx.fail("padding must be at most half the kernel size")
    out = [(x.shape[2 + i] + 2 * p[i] - k[i]) // s[i] + 1 for i in range(2)]
    return k, s, p, out


def index_expr(b, loop, scale, offset, minus=None):
    """loop * scale + offset (- minus) on index values."""
    value = b.index(loop)
    if scale != 1:
        value = b.binary("arith.muli", value, b.const(scale, "index"),
                         "index")
    if minus is not None:
        value = b.binary("arith.subi", value, b.index(minus), "index")
    if offset:
        value = b.binary("arith.addi", value, b.const(offset, "index"),
                         "index")
    return value


def in_range(b, value, size):
    low = b.cmpi("sge", value, b.const(0, "index"), "index")
    high = b.cmpi("slt", value, b.const(size, "index"), "index")
    return b.binary("arith.andi", low, high, "i1")


def flat_position(b, row, col, width):
    flat = b.binary("arith.addi", b.binary(
        "arith.muli", row, b.const(width, "index"), "index"), col, "index")
    return b.cast("arith.index_cast", flat, "index", "i64")


@converter("max_pool2d_with_indices")
def max_pool2d_with_indices(ctx, x, kernel_size, stride=(), padding=0,
                            dilation=1, ceil_mode=False):
    k, s, p, (oh, ow) = check_pool(ctx, x, kernel_size, stride, padding,
                                   dilation, ceil_mode)
    n, c, h, w = x.shape
    xp = ctx.b.pad(x, [0, 0, p[0], p[1]], [0, 0, p[0], p[1]], float("-inf"))
    window = ctx.b.empty(tuple(k))

    def body(b, ins, outs):
        # Position in the unpadded input; the first in-bounds element
        # starts the window, later ones win when greater or NaN (as
        # PyTorch's kernel scans).
        row = index_expr(b, 2, s[0], -p[0])
        row = b.binary("arith.addi", row, b.index(4), "index")
        col = index_expr(b, 3, s[1], -p[1])
        col = b.binary("arith.addi", col, b.index(5), "index")
        inside = b.binary("arith.andi", in_range(b, row, h),
                          in_range(b, col, w), "i1")
        value, best, best_index = ins[0], outs[0], outs[1]
        first = b.cmpi("eq", best_index, b.const(-1, "i64"), "i64")
        greater = b.cmpf("ugt", value, best)
        better = b.binary("arith.andi", inside, b.binary(
            "arith.ori", first, greater, "i1"), "i1")
        return [b.select(better, value, best),
                b.select(better, flat_position(b, row, col, w), best_index,
                         "i64")]

    values, indices = ctx.b.generic(
        6, ["parallel"] * 4 + ["reduction"] * 2,
        [(xp, ["d0", "d1", window_expr(2, s[0], 4), window_expr(3, s[1], 5)]),
         (window, ["d4", "d5"])],
        [(ctx.b.full((n, c, oh, ow), float("-inf")), ["d0", "d1", "d2", "d3"]),
         (ctx.b.full((n, c, oh, ow), -1, "i64"), ["d0", "d1", "d2", "d3"])],
        body)
    return values, indices


@converter("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward(ctx, grad, x, kernel_size, stride,
                                     padding, dilation, ceil_mode, indices):
    k, s, p, (oh, ow) = check_pool(ctx, x, kernel_size, stride, padding,
                                   dilation, ceil_mode)
    n, c, h, w = x.shape
    window = ctx.b.empty(tuple(k))

    def output_position(b, loop, kernel_loop, stride_, pad, size):
        """(valid, o) with o * stride + kernel - pad == position."""
        shifted = index_expr(b, loop, 1, pad, minus=kernel_loop)
        zero = b.const(0, "index")
        stride_c = b.const(stride_, "index")
        exact = b.cmpi("eq", b.binary("arith.remsi", shifted, stride_c,
                                      "index"), zero, "index")
        o = b.binary("arith.divsi", shifted, stride_c, "index")
        valid = b.binary("arith.andi", exact, in_range(b, o, size), "i1")
        valid = b.binary("arith.andi", valid, b.cmpi(
            "sge", shifted, zero, "index"), "i1")
        return valid, b.select(valid, o, zero, "index")

    def body(b, ins, outs):
        valid_r, o_r = output_position(b, 2, 4, s[0], p[0], oh)
        valid_c, o_c = output_position(b, 3, 5, s[1], p[1], ow)
        valid = b.binary("arith.andi", valid_r, valid_c, "i1")
        at = [b.index(0), b.index(1), o_r, o_c]
        chosen = b.extract(indices, at)
        here = flat_position(b, b.index(2), b.index(3), w)
        hit = b.binary("arith.andi", valid, b.cmpi("eq", chosen, here, "i64"),
                       "i1")
        g = b.extract(grad, at)
        return [b.binary("arith.addf", outs[0], b.select(hit, g,
                                                         b.const(0.0)))]

    return ctx.b.generic(
        6, ["parallel"] * 4 + ["reduction"] * 2, [(window, ["d4", "d5"])],
        [(ctx.b.full(x.shape, 0.0), ["d0", "d1", "d2", "d3"])], body)[0]


def clamped_row(b, value, rows):
    """An int64 index clamped into [0, rows): out-of-range indices read a
    valid row instead of memory outside the table (PyTorch raises)."""
    index = b.cast("arith.index_cast", value, "i64", "index")
    index = b.binary("arith.maxsi", index, b.const(0, "index"), "index")
    return b.binary("arith.minsi", index, b.const(rows - 1, "index"), "index")


@converter("embedding")
def embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False,
              sparse=False):
    if weight.rank != 2 or indices.dtype != "i64":
        ctx.fail("embedding expects a (V, D) weight and int64 indices")
    r = indices.rank
    shape = indices.shape + (weight.shape[1],)

    def body(b, ins, outs):
        row = clamped_row(b, ins[0], weight.shape[0])
        return [b.extract(weight, [row, b.index(r)])]

    return ctx.b.generic(
        r + 1, ["parallel"] * (r + 1),
        [(indices, ["d%d" % i for i in range(r)])],
        [(ctx.b.empty(shape), ["d%d" % i for i in range(r + 1)])], body)[0]


@converter("embedding_dense_backward")
def embedding_dense_backward(ctx, grad, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    if scale_grad_by_freq:
        ctx.fail("scale_grad_by_freq=True is not supported")
    r = indices.rank
    d = grad.shape[-1]
    positions = ["d%d" % (2 + i) for i in range(r)]

    def body(b, ins, outs):
        row = b.cast("arith.index_cast", b.index(0), "index", "i64")
        hit = b.cmpi("eq", ins[0], row, "i64")
        if padding_idx >= 0:
            hit = b.binary("arith.andi", hit, b.cmpi(
                "ne", row, b.const(padding_idx, "i64"), "i64"), "i1")
        return [b.binary("arith.addf", outs[0], b.select(hit, ins[1],
                                                         b.const(0.0)))]

    # loops (v, d, positions...): every row sums the gradients of the
    # positions that looked it up, in position order (deterministic).
    return ctx.b.generic(
        2 + r, ["parallel", "parallel"] + ["reduction"] * r,
        [(indices, positions), (grad, positions + ["d1"])],
        [(ctx.b.full((num_weights, d), 0.0), ["d0", "d1"])], body)[0]


def signed64(value):
    return value - (1 << 64) if value >= 1 << 63 else value


def uniform(b, seed, salt, flat):
    """A uniform float in [0, 1) from splitmix64(seed, salt, position)."""
    def mix(x, shift, multiplier):
        shifted = b.binary("arith.shrui", x, b.const(shift, "i64"), "i64")
        x = b.binary("arith.xori", x, shifted, "i64")
        if multiplier is None:
            return x
        return b.binary("arith.muli", x, b.const(signed64(multiplier), "i64"),
                        "i64")

    golden = b.const(signed64(0x9E3779B97F4A7C15), "i64")
    x = b.binary("arith.addi", seed, b.binary(
        "arith.muli", b.const(salt, "i64"), golden, "i64"), "i64")
    x = b.binary("arith.addi", x, b.binary(
        "arith.muli", b.binary("arith.addi", flat, b.const(1, "i64"), "i64"),
        golden, "i64"), "i64")
    x = mix(x, 30, 0xBF58476D1CE4E5B9)
    x = mix(x, 27, 0x94D049BB133111EB)
    x = mix(x, 31, None)
    top = b.binary("arith.shrui", x, b.const(40, "i64"), "i64")
    as_float = b.cast("arith.uitofp", top, "i64", "f32")
    return b.binary("arith.mulf", as_float, b.const(1.0 / (1 << 24)))


def uniform_tensor(ctx, shape):
    """A tensor of uniforms in [0, 1) from the step's dropout seed, a salt
    per random op and each element's position: the same seed gives the
    same bits on every run and rank."""
    seed, salt = ctx.dropout_seed()
    rank = len(shape)
    loops = ["d%d" % i for i in range(rank)]

    def body(b, ins, outs):
        flat = b.const(0, "index")
        for i, size in enumerate(shape):
            flat = b.binary("arith.addi", b.binary(
                "arith.muli", flat, b.const(size, "index"), "index"),
                b.index(i), "index")
        flat = b.cast("arith.index_cast", flat, "index", "i64")
        return [uniform(b, ins[0], salt, flat)]

    return ctx.b.generic(rank, ["parallel"] * rank, [(seed, [])],
                         [(ctx.b.empty(tuple(shape)), loops)], body)[0]


@converter("native_dropout")
def native_dropout(ctx, x, p, train):
    if not train or p == 0:
        return x, ctx.b.full(x.shape, True, "i1")
    if not 0 <= p < 1:
        ctx.fail("dropout probability %r is not in [0, 1)" % (p,))
    scale = 1.0 / (1.0 - p)

    def body(b, v):
        keep = b.cmpf("oge", v[1], b.const(p))
        kept = b.binary("arith.mulf", v[0], b.const(scale))
        return b.select(keep, kept, b.const(0.0))

    u = uniform_tensor(ctx, x.shape)
    out = ctx.b.map(x.shape, [x, u], body)
    mask = ctx.b.map(x.shape, [u], lambda b, v: b.cmpf(
        "oge", v[0], b.const(p)), "i1")
    return out, mask


@converter("bernoulli", "bernoulli_")
def bernoulli(ctx, x, p=None, generator=None):
    """1.0 with probability p (a float), else 0.0: PyTorch's CPU dropout
    is empty_like(x).bernoulli_(1 - p), then a division and a product."""
    if not isinstance(p, float) or generator is not None:
        ctx.fail("bernoulli with a float probability only")
    if not 0 <= p <= 1:
        ctx.fail("probability %r is not in [0, 1]" % (p,))
    u = uniform_tensor(ctx, x.shape)
    return ctx.b.map(x.shape, [u], lambda b, v: b.select(
        b.cmpf("olt", v[0], b.const(p)), b.const(1.0), b.const(0.0)))


@converter("empty_like")
def empty_like(ctx, x, dtype=None, **kwargs):
    from gradcomm.torch.ops.elementwise import element_type
    return ctx.b.empty(x.shape, element_type(ctx, dtype, x.dtype))


@converter("native_dropout_backward")
def native_dropout_backward(ctx, grad, mask, scale):
    def body(b, v):
        return b.select(v[1], b.binary("arith.mulf", v[0], b.const(scale)),
                        b.const(0.0))

    return ctx.b.map(grad.shape, [grad, mask], body)

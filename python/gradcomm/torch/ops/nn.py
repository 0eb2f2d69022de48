"""Convolution, max pooling, embedding and dropout, forward and backward.

Loops whose extent no operand gives by itself (a pooling window) get a
`window` operand: an empty tensor of the window's shape that only fixes the
loop range, as upstream's linalg.pooling_* ops do."""

from gradcomm.torch.ops import converter
from gradcomm.torch.ops.elementwise import pointwise
from gradcomm.torch.ops.reduction import WIDE_SUM_TERMS, accurate_sum
from gradcomm.torch.ops.shape import fresh_copy


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
    """(stride, padding, dilation, output size) of a grouped 2-D conv."""
    if x.rank != 4 or w.rank != 4:
        ctx.fail("only 2-D convolutions (NCHW input, FCHW weight)")
    if transposed:
        ctx.fail("transposed convolutions are not supported")
    if groups < 1 or x.shape[1] % groups or w.shape[0] % groups:
        ctx.fail("groups=%d does not divide %d input and %d output channels"
                 % (groups, x.shape[1], w.shape[0]))
    if x.shape[1] != w.shape[1] * groups:
        ctx.fail("input has %d channels, weight expects %d (groups=%d)" % (
            x.shape[1], w.shape[1] * groups, groups))
    s = pair(ctx, stride, "stride")
    p = pair(ctx, padding, "padding")
    dl = pair(ctx, dilation, "dilation")
    out = [(x.shape[2 + i] + 2 * p[i] - dl[i] * (w.shape[2 + i] - 1) - 1)
           // s[i] + 1 for i in range(2)]
    if min(out) < 1:
        ctx.fail("the kernel does not fit the padded input")
    return s, p, dl, out


def window_expr(out_dim, stride, kernel_dim, dilation=1):
    if dilation == 1:
        return "d%d * %d + d%d" % (out_dim, stride, kernel_dim)
    return "d%d * %d + d%d * %d" % (out_dim, stride, kernel_dim, dilation)


def channel_view(ctx, vector, rank):
    """(C,) -> (1, C, 1, ...) so it broadcasts over NC...-shaped tensors."""
    return ctx.b.reshape(vector, (1, vector.shape[0]) + (1,) * (rank - 2))


def long_chain(terms):
    """Whether a convolution's sums are long enough to accumulate in f64
    (as accurate_sum; PyTorch's blocked kernels keep their float chains
    short, a linalg.generic sums each output in one chain). The forward
    and the input gradient use it; the weight gradient stays f32: in f64
    it changed no zoo figure (resnet18 at 2 ranks: 1.64e-5 either way)
    and cost the example CNN's step 15-25 % (docs/performance.md)."""
    return terms >= WIDE_SUM_TERMS


def grouped(ctx, value, groups, dim=1):
    """Splits dim `dim` into (groups, size / groups)."""
    shape = list(value.shape)
    shape[dim:dim + 1] = [groups, shape[dim] // groups]
    return ctx.b.reshape(value, shape)


def ungrouped(ctx, value, dim=1):
    """Merges dims (dim, dim + 1) back into one."""
    shape = list(value.shape)
    shape[dim:dim + 2] = [shape[dim] * shape[dim + 1]]
    return ctx.b.reshape(value, shape)


def im2col(ctx, xp, kernel, s, dl, out):
    """cols[c, kh, kw, n, oh, ow] = xp[n, c, oh * s + kh * dl, ...] of the
    padded input, as a (c * kh * kw, n * oh * ow) matrix: a convolution's
    sums become one matrix product (convert-linalg-to-blas gives those to
    BLAS, whose blocked float sums are as accurate as PyTorch's own
    kernels'; a convolution loop nest streams its operands per output row
    and needs double sums to be)."""
    n, c = xp.shape[:2]
    kh, kw = kernel
    # loops (c, kh, kw, n, oh, ow)
    cols = ctx.b.generic(
        6, ["parallel"] * 6,
        [(xp, ["d3", "d0", window_expr(4, s[0], 1, dl[0]),
               window_expr(5, s[1], 2, dl[1])])],
        [(ctx.b.empty((c, kh, kw, n, out[0], out[1])),
          ["d%d" % i for i in range(6)])],
        lambda b, ins, outs: [ins[0]])[0]
    return ctx.b.reshape(cols, (c * kh * kw, n * out[0] * out[1]))


def conv_by_matmul(ctx, xp, w, s, dl, out):
    """The ungrouped convolution of the padded input xp (n, c, H, W) with
    w (f, c, kh, kw): w as (f, c * kh * kw) times im2col(xp), the product
    (f, n * oh * ow) put back into (n, f, oh, ow)."""
    n = xp.shape[0]
    f, c, kh, kw = w.shape
    cols = im2col(ctx, xp, (kh, kw), s, dl, out)
    product = ctx.b.matmul(ctx.b.reshape(w, (f, c * kh * kw)), cols)
    product = ctx.b.reshape(product, (f, n, out[0] * out[1]))
    return ctx.b.reshape(ctx.b.permute(product, [1, 0, 2]),
                         (n, f, out[0], out[1]))


@converter("convolution")
def convolution(ctx, x, w, bias, stride, padding, dilation, transposed,
                output_padding, groups):
    s, p, dl, (oh, ow) = check_conv(ctx, x, w, stride, padding, dilation,
                                    transposed, groups)
    n, f = x.shape[0], w.shape[0]
    xp = ctx.b.pad(x, [0, 0, p[0], p[1]], [0, 0, p[0], p[1]], 0.0)
    if groups == 1:
        out = conv_by_matmul(ctx, xp, w, s, dl, (oh, ow))
    else:
        # Grouped (depthwise) convolutions: a product per group would be a
        # sliver (a depthwise 3x3 sums 9 terms); they stay one loop nest,
        # loops (n, g, f, oh, ow, c, kh, kw), c within the group.
        out = ungrouped(ctx, ctx.b.contract(
            grouped(ctx, xp, groups),
            ["d0", "d1", "d5", window_expr(3, s[0], 6, dl[0]),
             window_expr(4, s[1], 7, dl[1])],
            grouped(ctx, w, groups, 0), ["d1", "d2", "d5", "d6", "d7"],
            (n, groups, f // groups, oh, ow), ["d0", "d1", "d2", "d3", "d4"],
            8, ["parallel"] * 5 + ["reduction"] * 3,
            wide=long_chain(w.shape[1] * w.shape[2] * w.shape[3])))
    if bias is None:
        return out
    return pointwise(ctx, [out, channel_view(ctx, bias, 4)], lambda b, v:
                     b.binary("arith.addf", v[0], v[1]))


@converter("convolution_backward")
def convolution_backward(ctx, grad, x, w, bias_sizes, stride, padding,
                         dilation, transposed, output_padding, groups,
                         output_mask):
    s, p, dl, (oh, ow) = check_conv(ctx, x, w, stride, padding, dilation,
                                    transposed, groups)
    f, cg, kh, kw = w.shape
    grad_input = grad_weight = grad_bias = None
    if output_mask[2]:
        grad_bias = accurate_sum(ctx, grad, [0, 2, 3])
    if groups == 1 and (output_mask[0] or output_mask[1]):
        rows = output_rows(ctx, grad)
        return (conv_input_grad_by_matmul(ctx, rows, x, w, s, p, dl,
                                          (oh, ow))
                if output_mask[0] else None,
                conv_weight_grad_by_matmul(ctx, rows, x, w, s, p, dl,
                                           (oh, ow))
                if output_mask[1] else None, grad_bias)
    if output_mask[1]:
        xp = grouped(ctx, ctx.b.pad(x, [0, 0, p[0], p[1]],
                                    [0, 0, p[0], p[1]], 0.0), groups)
        # loops (g, f, c, kh, kw, n, oh, ow)
        grad_weight = ungrouped(ctx, ctx.b.contract(
            grouped(ctx, grad, groups), ["d5", "d0", "d1", "d6", "d7"], xp,
            ["d5", "d0", "d2", window_expr(6, s[0], 3, dl[0]),
             window_expr(7, s[1], 4, dl[1])],
            (groups, f // groups, cg, kh, kw), ["d0", "d1", "d2", "d3", "d4"],
            8, ["parallel"] * 5 + ["reduction"] * 3), 0)
    if output_mask[0]:
        grad_input = grouped_input_grad(ctx, grad, x, w, s, p, dl, (oh, ow),
                                        groups)
    return grad_input, grad_weight, grad_bias


def output_rows(ctx, grad):
    """The output gradient (n, f, oh, ow) as the matrix (f, n * oh * ow)."""
    n, f, oh, ow = grad.shape
    return ctx.b.reshape(ctx.b.permute(grad, [1, 0, 2, 3]), (f, n * oh * ow))


def conv_weight_grad_by_matmul(ctx, rows, x, w, s, p, dl, out):
    """G im2col(x)^T, G the output gradient's rows (f, n * oh * ow)."""
    f, c, kh, kw = w.shape
    cols = im2col(ctx, ctx.b.pad(x, [0, 0, p[0], p[1]], [0, 0, p[0], p[1]],
                                 0.0), (kh, kw), s, dl, out)
    return ctx.b.reshape(ctx.b.contract(
        rows, ["d0", "d2"], cols, ["d1", "d2"],
        (f, c * kh * kw), ["d0", "d1"], 3,
        ["parallel", "parallel", "reduction"]), w.shape)


def conv_input_grad_by_matmul(ctx, rows, x, w, s, p, dl, out):
    """The columns' gradient W^T G (w as (f, c * kh * kw), G the output
    gradient's rows), folded back onto the input by col2im."""
    n = x.shape[0]
    f, c, kh, kw = w.shape
    columns = ctx.b.contract(
        ctx.b.reshape(w, (f, c * kh * kw)), ["d2", "d0"], rows,
        ["d2", "d1"], (c * kh * kw, n * out[0] * out[1]), ["d0", "d1"], 3,
        ["parallel", "parallel", "reduction"])
    return col2im(ctx, ctx.b.reshape(columns, (c, kh, kw, n) + tuple(out)),
                  x.shape, s, p, dl)


def grouped_input_grad(ctx, grad, x, w, s, p, dl, out, groups):
    """The gradient of the padded input is a stride-1 correlation, dilated
    like the forward, of the zero-dilated, (K'-1)-padded output gradient
    (K' = the dilated kernel extent) with the flipped kernel; the padding
    is then cut off."""
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    kernel = (kh, kw)
    extent = [dl[i] * (kernel[i] - 1) + 1 for i in range(2)]
    rest = [(x.shape[2 + i] + 2 * p[i] - extent[i]) % s[i] for i in range(2)]
    spread = [(out[i] - 1) * s[i] + 1 + 2 * (extent[i] - 1) + rest[i]
              for i in range(2)]
    zeros = ctx.b.full((n, f, spread[0], spread[1]), 0.0)
    dilated = ctx.b.insert_slice(grad, zeros,
                                 [0, 0, extent[0] - 1, extent[1] - 1],
                                 [1, 1, s[0], s[1]])
    hp, wp = h + 2 * p[0], wd + 2 * p[1]
    flipped = ctx.b.generic(
        4, ["parallel"] * 4,
        [(w, ["d0", "d1", "%d - d2" % (kh - 1), "%d - d3" % (kw - 1)])],
        [(ctx.b.empty(w.shape), ["d0", "d1", "d2", "d3"])],
        lambda b, ins, outs: [ins[0]])[0]
    # loops (n, g, c, i, j, f, kh, kw)
    padded = ungrouped(ctx, ctx.b.contract(
        grouped(ctx, dilated, groups),
        ["d0", "d1", "d5", window_expr(6, dl[0], 3), window_expr(
            7, dl[1], 4)], grouped(ctx, flipped, groups, 0),
        ["d1", "d5", "d2", "d6", "d7"], (n, groups, cg, hp, wp),
        ["d0", "d1", "d2", "d3", "d4"], 8,
        ["parallel"] * 5 + ["reduction"] * 3,
        wide=long_chain(f // groups * kh * kw)))
    if p == [0, 0]:
        return padded
    return ctx.b.extract_slice(padded, [0, 0, p[0], p[1]], [n, c, h, wd])


def col2im(ctx, columns, shape, s, p, dl):
    """The input gradient from the columns' gradient (c, kh, kw, n, oh, ow):
    each input position sums, over the taps (kh, kw) in order, the column
    entry of the output position whose window puts that tap on it (none
    when the stride skips it or the window falls outside)."""
    c, kh, kw, n, oh, ow = columns.shape

    def body(b, ins, outs):
        valid_r, o_r = window_origin(b, 2, 4, s[0], p[0], oh, dl[0])
        valid_c, o_c = window_origin(b, 3, 5, s[1], p[1], ow, dl[1])
        valid = b.binary("arith.andi", valid_r, valid_c, "i1")
        g = b.extract(columns, [b.index(1), b.index(4), b.index(5),
                                b.index(0), o_r, o_c])
        return [b.binary("arith.addf", outs[0],
                         b.select(valid, g, b.const(0.0)))]

    # loops (n, c, i, j, kh, kw)
    return ctx.b.generic(
        6, ["parallel"] * 4 + ["reduction"] * 2,
        [(ctx.b.empty((kh, kw)), ["d4", "d5"])],
        [(ctx.b.full(shape, 0.0), ["d0", "d1", "d2", "d3"])], body)[0]


def pool_output_size(size, kernel, stride, pad, ceil_mode):
    """PyTorch's pooling output size: with ceil_mode a last window may
    start in the right padding, never past it."""
    span = size + 2 * pad - kernel
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def check_pool(ctx, x, kernel, stride, padding, dilation, ceil_mode):
    """(kernel, stride, padding, output size, extra right padding) of a
    2-D pooling; the extra padding keeps ceil-mode windows in bounds."""
    if x.rank != 4:
        ctx.fail("2-D pooling expects an NCHW input")
    k = pair(ctx, kernel, "kernel_size")
    s = pair(ctx, stride, "stride") if stride else list(k)
    p = pair(ctx, padding, "padding")
    if pair(ctx, dilation, "dilation") != [1, 1]:
        ctx.fail("dilation %s is not supported (1 only)" % list(dilation))
    if p[0] * 2 > k[0] or p[1] * 2 > k[1]:
        ctx.fail("padding must be at most half the kernel size")
    out = [pool_output_size(x.shape[2 + i], k[i], s[i], p[i], ceil_mode)
           for i in range(2)]
    if min(out) < 1:
        ctx.fail("the window does not fit the padded input")
    extra = [max(0, (out[i] - 1) * s[i] + k[i] - x.shape[2 + i] - 2 * p[i])
             for i in range(2)]
    return k, s, p, out, extra


def index_expr(b, loop, scale, offset):
    """loop * scale + offset on index values."""
    value = b.index(loop)
    if scale != 1:
        value = b.binary("arith.muli", value, b.const(scale, "index"),
                         "index")
    if offset:
        value = b.binary("arith.addi", value, b.const(offset, "index"),
                         "index")
    return value


def in_range(b, value, size):
    low = b.cmpi("sge", value, b.const(0, "index"), "index")
    high = b.cmpi("slt", value, b.const(size, "index"), "index")
    return b.binary("arith.andi", low, high, "i1")


def window_origin(b, loop, kernel_loop, stride, pad, size, dilation=1):
    """(valid, o): the output position o whose window's tap `kernel_loop`
    lands on input position `loop` (o * stride + tap * dilation - pad ==
    position), valid when there is one inside [0, size); o is 0 when not
    valid, so it always indexes in bounds."""
    shifted = index_expr(b, loop, 1, pad)
    tap = index_expr(b, kernel_loop, dilation, 0)
    shifted = b.binary("arith.subi", shifted, tap, "index")
    zero = b.const(0, "index")
    stride_c = b.const(stride, "index")
    exact = b.cmpi("eq", b.binary("arith.remsi", shifted, stride_c,
                                  "index"), zero, "index")
    o = b.binary("arith.divsi", shifted, stride_c, "index")
    valid = b.binary("arith.andi", exact, in_range(b, o, size), "i1")
    valid = b.binary("arith.andi", valid, b.cmpi(
        "sge", shifted, zero, "index"), "i1")
    return valid, b.select(valid, o, zero, "index")


def flat_position(b, row, col, width):
    flat = b.binary("arith.addi", b.binary(
        "arith.muli", row, b.const(width, "index"), "index"), col, "index")
    return b.cast("arith.index_cast", flat, "index", "i64")


@converter("max_pool2d_with_indices")
def max_pool2d_with_indices(ctx, x, kernel_size, stride=(), padding=0,
                            dilation=1, ceil_mode=False):
    k, s, p, (oh, ow), extra = check_pool(ctx, x, kernel_size, stride,
                                          padding, dilation, ceil_mode)
    n, c, h, w = x.shape
    xp = ctx.b.pad(x, [0, 0, p[0], p[1]],
                   [0, 0, p[0] + extra[0], p[1] + extra[1]], float("-inf"))
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
    k, s, p, (oh, ow), _ = check_pool(ctx, x, kernel_size, stride, padding,
                                      dilation, ceil_mode)
    n, c, h, w = x.shape
    window = ctx.b.empty(tuple(k))

    def body(b, ins, outs):
        valid_r, o_r = window_origin(b, 2, 4, s[0], p[0], oh)
        valid_c, o_c = window_origin(b, 3, 5, s[1], p[1], ow)
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


def pooling_matrix(ctx, windows, size, divisors):
    """(len(windows), size) constant: row i is 1 / divisors[i] over the
    input positions [start, end) of window i (positions outside the input
    are padding and contribute nothing)."""
    values = []
    for (start, end), divisor in zip(windows, divisors):
        values += [1.0 / divisor if start <= j < end else 0.0
                   for j in range(size)]
    return ctx.b.dense_constant(values, (len(windows), size))


def separable_pool(ctx, x, rows, cols):
    """out[n, c, i, j] = sum_h sum_w rows[i, h] x[n, c, h, w] cols[j, w]:
    an average pool whose divisor is a product of a row and a column
    factor (every avg_pool2d and adaptive_avg_pool2d divisor is)."""
    n, c, h, w = x.shape
    oh, ow = rows.shape[0], cols.shape[0]
    # loops (n, c, i, w, h), then (n, c, i, j, w)
    by_rows = ctx.b.contract(rows, ["d2", "d4"], x, ["d0", "d1", "d4", "d3"],
                             (n, c, oh, w), ["d0", "d1", "d2", "d3"], 5,
                             ["parallel"] * 4 + ["reduction"])
    return ctx.b.contract(by_rows, ["d0", "d1", "d2", "d4"], cols,
                          ["d3", "d4"], (n, c, oh, ow),
                          ["d0", "d1", "d2", "d3"], 5,
                          ["parallel"] * 4 + ["reduction"])


def transposed_pool(ctx, grad, rows, cols):
    """The adjoint of separable_pool: grad_x = rows^T grad cols."""
    n, c, oh, ow = grad.shape
    h, w = rows.shape[1], cols.shape[1]
    # loops (n, c, h, j, i), then (n, c, h, w, j)
    by_rows = ctx.b.contract(rows, ["d4", "d2"], grad,
                             ["d0", "d1", "d4", "d3"], (n, c, h, ow),
                             ["d0", "d1", "d2", "d3"], 5,
                             ["parallel"] * 4 + ["reduction"])
    return ctx.b.contract(by_rows, ["d0", "d1", "d2", "d4"], cols,
                          ["d4", "d3"], (n, c, h, w),
                          ["d0", "d1", "d2", "d3"], 5,
                          ["parallel"] * 4 + ["reduction"])


def avg_pool_factors(ctx, x, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override):
    """The row and column pooling matrices of avg_pool2d, with PyTorch's
    divisor: the window clipped to the padded input (count_include_pad)
    or to the input, or divisor_override split as override * 1."""
    k, s, p, out, _ = check_pool(ctx, x, kernel_size, stride, padding, 1,
                                 ceil_mode)
    if divisor_override is not None and divisor_override <= 0:
        ctx.fail("divisor_override must be positive")
    factors = []
    for axis in range(2):
        size = x.shape[2 + axis]
        windows, divisors = [], []
        for i in range(out[axis]):
            start = i * s[axis] - p[axis]
            end = min(start + k[axis], size + p[axis])
            padded_length = end - start
            start, end = max(start, 0), min(end, size)
            windows.append((start, end))
            if divisor_override is not None:
                divisors.append(divisor_override if axis == 0 else 1)
            elif count_include_pad:
                divisors.append(padded_length)
            else:
                divisors.append(end - start)
        factors.append(pooling_matrix(ctx, windows, size, divisors))
    return factors


@converter("avg_pool2d")
def avg_pool2d(ctx, x, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    rows, cols = avg_pool_factors(ctx, x, kernel_size, stride, padding,
                                  ceil_mode, count_include_pad,
                                  divisor_override)
    return separable_pool(ctx, x, rows, cols)


@converter("avg_pool2d_backward")
def avg_pool2d_backward(ctx, grad, x, kernel_size, stride, padding,
                        ceil_mode, count_include_pad, divisor_override):
    rows, cols = avg_pool_factors(ctx, x, kernel_size, stride, padding,
                                  ceil_mode, count_include_pad,
                                  divisor_override)
    return transposed_pool(ctx, grad, rows, cols)


def adaptive_factors(ctx, x, output_size):
    """Window i of an adaptive pool covers [floor(i * H / O),
    ceil((i + 1) * H / O)), as in PyTorch."""
    if x.rank != 4:
        ctx.fail("adaptive 2-D pooling expects an NCHW input")
    out = pair(ctx, output_size, "output_size")
    factors = []
    for axis in range(2):
        size, o = x.shape[2 + axis], out[axis]
        if o is None:
            o = size
        windows = [(i * size // o, -(-(i + 1) * size // o))
                   for i in range(o)]
        factors.append(pooling_matrix(ctx, windows, size,
                                      [end - start for start, end in windows]))
    return factors


@converter("_adaptive_avg_pool2d", "adaptive_avg_pool2d")
def adaptive_avg_pool2d(ctx, x, output_size):
    rows, cols = adaptive_factors(ctx, x, output_size)
    return separable_pool(ctx, x, rows, cols)


@converter("_adaptive_avg_pool2d_backward")
def adaptive_avg_pool2d_backward(ctx, grad, x):
    rows, cols = adaptive_factors(ctx, x, grad.shape[2:])
    return transposed_pool(ctx, grad, rows, cols)


@converter("empty", "empty_strided")
def empty(ctx, size, *stride, dtype=None, **kwargs):
    from gradcomm.torch.ops.elementwise import element_type
    return ctx.b.empty(tuple(size), element_type(ctx, dtype, "f32"))


@converter("new_empty", "new_empty_strided")
def new_empty(ctx, x, size, *stride, dtype=None, **kwargs):
    from gradcomm.torch.ops.elementwise import element_type
    return ctx.b.empty(tuple(size), element_type(ctx, dtype, x.dtype))


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


def index_position(ctx, x, indices):
    """(k, index tensor) of an advanced index with one int64 tensor at
    position k (None before it: x[:, idx]); other forms are refused."""
    tensors = [(k, t) for k, t in enumerate(indices) if t is not None]
    if len(tensors) != 1 or tensors[0][1].dtype != "i64":
        ctx.fail("only one int64 index tensor is supported")
    k, idx = tensors[0]
    if k >= x.rank:
        ctx.fail("index at dim %d of a rank-%d tensor" % (k, x.rank))
    return k, idx


def wrapped_row(b, value, rows):
    """An int64 index as PyTorch reads it (negative counts from the end),
    clamped into [0, rows) as embedding's (PyTorch raises out of range)."""
    negative = b.cmpi("slt", value, b.const(0, "i64"), "i64")
    value = b.select(negative, b.binary("arith.addi", value, b.const(
        rows, "i64"), "i64"), value, "i64")
    return clamped_row(b, value, rows)


@converter("index", "_unsafe_index")
def index(ctx, x, indices):
    """x[..., idx, ...]: the result has idx's shape in place of dim k."""
    k, idx = index_position(ctx, x, indices)
    shape = x.shape[:k] + idx.shape + x.shape[k + 1:]
    rank, r = len(shape), idx.rank
    loops = ["d%d" % i for i in range(rank)]

    def body(b, ins, outs):
        row = wrapped_row(b, ins[0], x.shape[k])
        at = [b.index(i) for i in range(k)] + [row] + [
            b.index(k + r + i) for i in range(x.rank - k - 1)]
        return [b.extract(x, at)]

    return ctx.b.generic(rank, ["parallel"] * rank,
                         [(idx, loops[k:k + r])],
                         [(ctx.b.empty(shape, x.dtype), loops)], body)[0]


@converter("index_put", "index_put_", "_unsafe_index_put")
def index_put(ctx, x, indices, values, accumulate=False):
    """x with values added at the indexed rows (accumulate=True: every
    position's value, in position order, deterministic). Without accumulate
    duplicate indices have no defined winner in PyTorch: refused."""
    if not accumulate:
        ctx.fail("index_put without accumulate is not supported")
    if x.dtype != "f32" or values.dtype != "f32":
        ctx.fail("index_put of float32 tensors only")
    k, idx = index_position(ctx, x, indices)
    r = idx.rank
    shape = x.shape[:k] + idx.shape + x.shape[k + 1:]
    if tuple(values.shape) != tuple(shape):
        ctx.fail("values of shape %s, expected %s" % (list(values.shape),
                                                      list(shape)))
    # loops (x's dims..., index positions...): row d_k gathers every
    # position whose index names it.
    outer = ["d%d" % i for i in range(x.rank)]
    positions = ["d%d" % (x.rank + i) for i in range(r)]
    value_map = outer[:k] + positions + outer[k + 1:]

    def body(b, ins, outs):
        hit = b.cmpi("eq", wrapped_row(b, ins[0], x.shape[k]), b.index(k),
                     "index")
        return [b.binary("arith.addf", outs[0], b.select(hit, ins[1],
                                                         b.const(0.0)))]

    return ctx.b.generic(
        x.rank + r, ["parallel"] * x.rank + ["reduction"] * r,
        [(idx, positions), (values, value_map)],
        [(fresh_copy(ctx, x), outer)], body)[0]


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

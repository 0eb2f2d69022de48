"""Shape ATen ops: views and reshapes, transposes, broadcasts, slices,
concatenation and splits. Views are value copies here: the exported graph
is functional (in-place ops rebind their target in the exporter)."""

from gradcomm.mlir import broadcast_results
from gradcomm.torch.ops import converter, normalize_dim


def resolve_shape(ctx, a, shape):
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        ctx.fail("more than one -1 in %s" % shape)
    if -1 in shape:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known == 0 or a.numel() % known:
            ctx.fail("cannot view %s as %s" % (list(a.shape), shape))
        shape[shape.index(-1)] = a.numel() // known
    return shape


@converter("view", "_unsafe_view", "reshape", "_reshape_alias")
def view(ctx, a, shape, *strides):
    return ctx.b.reshape(a, resolve_shape(ctx, a, shape))


@converter("flatten")
def flatten(ctx, a, start_dim=0, end_dim=-1):
    if a.rank == 0:
        return ctx.b.reshape(a, [1])
    start = normalize_dim(ctx, start_dim, a.rank)
    end = normalize_dim(ctx, end_dim, a.rank)
    size = 1
    for s in a.shape[start:end + 1]:
        size *= s
    return ctx.b.reshape(a, list(a.shape[:start]) + [size] +
                         list(a.shape[end + 1:]))


@converter("unsqueeze")
def unsqueeze(ctx, a, d):
    d = normalize_dim(ctx, d, a.rank + 1)
    return ctx.b.reshape(a, list(a.shape[:d]) + [1] + list(a.shape[d:]))


@converter("squeeze")
def squeeze(ctx, a, d=None):
    if d is None:
        dims = [i for i, s in enumerate(a.shape) if s == 1]
    else:
        dims = [normalize_dim(ctx, x, a.rank)
                for x in (d if isinstance(d, (list, tuple)) else [d])]
    return ctx.b.reshape(a, [s for i, s in enumerate(a.shape)
                             if not (i in dims and s == 1)])


@converter("t")
def t(ctx, a):
    if a.rank < 2:
        return a
    return ctx.b.permute(a, [1, 0])


@converter("transpose")
def transpose(ctx, a, d0, d1):
    d0, d1 = normalize_dim(ctx, d0, a.rank), normalize_dim(ctx, d1, a.rank)
    perm = list(range(a.rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return a if d0 == d1 else ctx.b.permute(a, perm)


@converter("permute")
def permute(ctx, a, dims):
    perm = [normalize_dim(ctx, d, a.rank) for d in dims]
    if sorted(perm) != list(range(a.rank)):
        ctx.fail("%s is not a permutation" % list(dims))
    return a if perm == list(range(a.rank)) else ctx.b.permute(a, perm)


@converter("expand")
def expand(ctx, a, sizes, implicit=False):
    lead = len(sizes) - a.rank
    shape = [a.shape[i - lead] if s == -1 else int(s)
             for i, s in enumerate(sizes)]
    if tuple(shape) == a.shape:
        return a
    try:
        broadcast_results(a.shape, shape)
    except Exception:
        ctx.fail("cannot expand %s to %s" % (list(a.shape), list(sizes)))
    return ctx.b.map(shape, [a], lambda b, v: v[0], a.dtype)


@converter("cat")
def cat(ctx, tensors, d=0):
    tensors = [x for x in tensors if x.numel() > 0 or x.rank > 1]
    first = tensors[0]
    d = normalize_dim(ctx, d, first.rank)
    for x in tensors:
        if x.rank != first.rank or x.dtype != first.dtype or any(
                x.shape[i] != first.shape[i] for i in range(x.rank) if i != d):
            ctx.fail("cat of mismatched tensors")
    shape = list(first.shape)
    shape[d] = sum(x.shape[d] for x in tensors)
    result = ctx.b.empty(shape, first.dtype)
    offset = 0
    for x in tensors:
        offsets = [0] * len(shape)
        offsets[d] = offset
        result = ctx.b.insert_slice(x, result, offsets)
        offset += x.shape[d]
    return result


def slice_along(ctx, a, d, start, length, step=1):
    offsets, sizes, strides = [0] * a.rank, list(a.shape), [1] * a.rank
    offsets[d], sizes[d], strides[d] = start, length, step
    return ctx.b.extract_slice(a, offsets, sizes, strides)


@converter("split_with_sizes")
def split_with_sizes(ctx, a, sizes, d=0):
    d = normalize_dim(ctx, d, a.rank)
    if sum(sizes) != a.shape[d]:
        ctx.fail("split sizes %s do not add up to %d" % (list(sizes),
                                                          a.shape[d]))
    pieces, start = [], 0
    for size in sizes:
        pieces.append(slice_along(ctx, a, d, start, size))
        start += size
    return tuple(pieces)


@converter("split")
def split(ctx, a, split_size, d=0):
    if isinstance(split_size, (list, tuple)):
        return split_with_sizes(ctx, a, split_size, d)
    d = normalize_dim(ctx, d, a.rank)
    sizes, left = [], a.shape[d]
    while left > 0:
        sizes.append(min(split_size, left))
        left -= split_size
    return split_with_sizes(ctx, a, sizes or [0], d)


def slice_bounds(size, start, end, step):
    """(start, length) of Python's slice start:end:step over `size`."""
    start = 0 if start is None else start
    end = size if end is None else end
    start = max(0, min(size, start + size if start < 0 else start))
    end = max(start, min(size, end + size if end < 0 else end))
    return start, (end - start + step - 1) // step


@converter("slice")
def slice_(ctx, a, d=0, start=None, end=None, step=1):
    d = normalize_dim(ctx, d, a.rank)
    start, length = slice_bounds(a.shape[d], start, end, step)
    if start == 0 and length == a.shape[d] and step == 1:
        return a
    return slice_along(ctx, a, d, start, length, step)


def fresh_copy(ctx, value):
    """A copy of `value` to insert into: an insert_slice into an argument
    itself could be bufferized in place into the caller's buffer."""
    return ctx.b.map(value.shape, [value], lambda b, v: v[0], value.dtype)


@converter("slice_scatter")
def slice_scatter(ctx, base, src, d=0, start=None, end=None, step=1):
    d = normalize_dim(ctx, d, base.rank)
    start, length = slice_bounds(base.shape[d], start, end, step)
    if src.shape[d] != length:
        ctx.fail("source has %d elements along dim %d, the slice %d" % (
            src.shape[d], d, length))
    offsets, strides = [0] * base.rank, [1] * base.rank
    offsets[d], strides[d] = start, step
    return ctx.b.insert_slice(src, fresh_copy(ctx, base), offsets, strides)


@converter("constant_pad_nd")
def constant_pad_nd(ctx, a, pad, value=0):
    """pad = (before, after) pairs from the last dim backwards; a negative
    amount crops (the backward of a pad is the pad negated)."""
    if len(pad) % 2 or len(pad) // 2 > a.rank:
        ctx.fail("pad %s does not fit rank %d" % (list(pad), a.rank))
    low, high = [0] * a.rank, [0] * a.rank
    for i in range(len(pad) // 2):
        low[a.rank - 1 - i], high[a.rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    offsets = [max(-lo, 0) for lo in low]
    sizes = [size - max(-lo, 0) - max(-hi, 0)
             for size, lo, hi in zip(a.shape, low, high)]
    if min(sizes, default=1) < 0:
        ctx.fail("cropping %s removes more than %s" % (list(pad),
                                                       list(a.shape)))
    if offsets != [0] * a.rank or sizes != list(a.shape):
        a = ctx.b.extract_slice(a, offsets, sizes)
    return ctx.b.pad(a, [max(lo, 0) for lo in low],
                     [max(hi, 0) for hi in high], value)


@converter("roll")
def roll(ctx, a, shifts, dims=()):
    """Rolls along each dim in turn: the last `shift` elements move to the
    front (a concatenation of two slices)."""
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(dims) != len(shifts):
        ctx.fail("roll without dims (over the flattened tensor) is not "
                 "supported")
    for shift, d in zip(shifts, dims):
        d = normalize_dim(ctx, d, a.rank)
        size = a.shape[d]
        s = shift % size if size else 0
        if s:
            a = cat(ctx, [slice_along(ctx, a, d, size - s, s),
                          slice_along(ctx, a, d, 0, size - s)], d)
    return a


@converter("select")
def select(ctx, a, d, index):
    d = normalize_dim(ctx, d, a.rank)
    index = normalize_dim(ctx, index, a.shape[d])
    piece = slice_along(ctx, a, d, index, 1)
    return ctx.b.reshape(piece, a.shape[:d] + a.shape[d + 1:])


@converter("unbind")
def unbind(ctx, a, d=0):
    d = normalize_dim(ctx, d, a.rank)
    return tuple(select(ctx, a, d, i) for i in range(a.shape[d]))


@converter("stack")
def stack(ctx, tensors, d=0):
    d = normalize_dim(ctx, d, tensors[0].rank + 1)
    return cat(ctx, [unsqueeze(ctx, x, d) for x in tensors], d)


def scatter_into_zeros(ctx, grad, input_sizes, offsets, strides):
    zeros = ctx.b.full(tuple(input_sizes), 0.0, grad.dtype)
    return ctx.b.insert_slice(grad, zeros, offsets, strides)


@converter("select_backward")
def select_backward(ctx, grad, input_sizes, d, index):
    d = normalize_dim(ctx, d, len(input_sizes))
    index = normalize_dim(ctx, index, input_sizes[d])
    shape = list(input_sizes)
    shape[d] = 1
    offsets = [0] * len(shape)
    offsets[d] = index
    return scatter_into_zeros(ctx, ctx.b.reshape(grad, shape), input_sizes,
                              offsets, None)


@converter("slice_backward")
def slice_backward(ctx, grad, input_sizes, d, start, end, step):
    d = normalize_dim(ctx, d, len(input_sizes))
    size = input_sizes[d]
    start = max(0, min(size, start + size if start < 0 else start))
    offsets = [0] * len(input_sizes)
    offsets[d] = start
    strides = [1] * len(input_sizes)
    strides[d] = step
    return scatter_into_zeros(ctx, grad, input_sizes, offsets, strides)


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return strides


def check_dense_view(ctx, base, size, stride, offset):
    """as_strided views the exporter supports: a contiguous window of the
    base's elements (what functionalization and reductions with keepdim
    produce); a dimension of size 1 may have any stride."""
    offset = offset or 0
    wanted = contiguous_strides(size)
    if any(sz != 1 and st != want for sz, st, want in zip(size, stride,
                                                          wanted)):
        ctx.fail("as_strided with strides %s over size %s is not a "
                 "contiguous view (only those are supported)" %
                 (list(stride), list(size)))
    count = 1
    for sz in size:
        count *= sz
    if offset < 0 or offset + count > base.numel():
        ctx.fail("as_strided reads outside its base")
    return offset, count


@converter("as_strided")
def as_strided(ctx, base, size, stride, storage_offset=None):
    offset, count = check_dense_view(ctx, base, size, stride, storage_offset)
    flat = ctx.b.reshape(base, (base.numel(),))
    if count != base.numel():
        flat = ctx.b.extract_slice(flat, [offset], [count])
    return ctx.b.reshape(flat, tuple(size))


@converter("as_strided_scatter")
def as_strided_scatter(ctx, base, src, size, stride, storage_offset=None):
    offset, count = check_dense_view(ctx, base, size, stride, storage_offset)
    flat_src = ctx.b.reshape(src, (count,))
    if count == base.numel():
        return ctx.b.reshape(flat_src, base.shape)
    flat = fresh_copy(ctx, ctx.b.reshape(base, (base.numel(),)))
    return ctx.b.reshape(ctx.b.insert_slice(flat_src, flat, [offset]),
                         base.shape)

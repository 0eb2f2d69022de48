"""A small builder for MLIR text on tensors: linalg.generic with broadcasting
maps, reductions, shape ops and arith/math scalar bodies.

Every value the builder returns is a `Tensor` (an SSA name, a static shape,
an element type). Names are numbered in emission order, so the same
sequence of calls always gives the same text.
"""

import struct


class ExportError(Exception):
    """Input the exporter cannot turn into correct MLIR (said plainly)."""


# f64 appears only inside a step (wide accumulators, see
# Builder.wide_sum), never as an argument or result. bf16 and f16 are
# storage types: values are widened to f32 to compute and rounded back
# (Builder.widen_half, Builder.round_to_half; docs/export.md, "Mixed precision").
ELEMENT_TYPES = ("f32", "i64", "i1", "f64", "bf16", "f16")
HALF_TYPES = ("bf16", "f16")


class Tensor:
    """An SSA value of type tensor<shape x dtype>."""

    def __init__(self, name, shape, dtype):
        if dtype not in ELEMENT_TYPES:
            raise ExportError("unsupported element type " + str(dtype))
        self.name = name
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype

    @property
    def rank(self):
        return len(self.shape)

    @property
    def type(self):
        return tensor_type(self.shape, self.dtype)

    def numel(self):
        count = 1
        for size in self.shape:
            count *= size
        return count

    def __repr__(self):
        return "%s : %s" % (self.name, self.type)


def tensor_type(shape, dtype):
    return "tensor<" + "".join("%dx" % d for d in shape) + dtype + ">"


def float_literal(value):
    """An exact f32 literal (hex bits: round-trips NaN, inf and -0.0)."""
    bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    return "0x%08X" % bits


def constant_literal(value, dtype):
    """The literal of a scalar `arith.constant ... : dtype`. i1 is written
    0/1: `arith.constant true` takes no type suffix."""
    if dtype == "f32":
        return float_literal(value)
    if dtype == "f64":
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d",
                                                           float(value)))[0]
    if dtype == "i1":
        return str(int(bool(value)))
    return str(int(value))


def affine_map(rank, results):
    dims = ", ".join("d%d" % i for i in range(rank))
    return "affine_map<(%s) -> (%s)>" % (dims, ", ".join(results))


def dim(i):
    return "d%d" % i


def broadcast_results(shape, out_shape):
    """Map results that read an operand of `shape` broadcast (numpy rules)
    to `out_shape`: missing leading dims dropped, size-1 dims read at 0."""
    lead = len(out_shape) - len(shape)
    if lead < 0:
        raise ExportError("cannot broadcast %s to %s" % (shape, out_shape))
    results = []
    for j, size in enumerate(shape):
        target = out_shape[lead + j]
        if size == target:
            results.append(dim(lead + j))
        elif size == 1:
            results.append("0")
        else:
            raise ExportError("cannot broadcast %s to %s" % (shape, out_shape))
    return results


def reduction_loops(shape, dims, keepdim):
    """(result shape, result map, iterator types) of a reduction of a
    tensor of `shape` over `dims`, keeping them as size 1 with keepdim."""
    rank = len(shape)
    dims = sorted(set(d % max(rank, 1) for d in dims))
    if keepdim:
        out_shape = tuple(1 if i in dims else shape[i] for i in range(rank))
        out_map = ["0" if i in dims else dim(i) for i in range(rank)]
    else:
        out_shape = tuple(shape[i] for i in range(rank) if i not in dims)
        out_map = [dim(i) for i in range(rank) if i not in dims]
    iterators = ["reduction" if i in dims else "parallel"
                 for i in range(rank)]
    return out_shape, out_map, iterators


def broadcast_shape(*shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        sizes = set()
        for s in shapes:
            j = i - (rank - len(s))
            if j >= 0 and s[j] != 1:
                sizes.add(s[j])
        if len(sizes) > 1:
            raise ExportError("shapes %s do not broadcast" % (list(shapes),))
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


class Body:
    """Emits the scalar ops of a linalg.generic region."""

    def __init__(self, builder, indent):
        self.builder = builder
        self.indent = indent

    def op(self, text, dtype):
        name = self.builder.fresh("v")
        self.builder.lines.append("%s%s = %s : %s" % (self.indent, name, text,
                                                      dtype))
        return name

    def const(self, value, dtype="f32"):
        return self.op("arith.constant " + constant_literal(value, dtype),
                       dtype)

    def binary(self, opname, a, b, dtype="f32"):
        return self.op("%s %s, %s" % (opname, a, b), dtype)

    def unary(self, opname, a, dtype="f32"):
        return self.op("%s %s" % (opname, a), dtype)

    def cmpf(self, predicate, a, b):  # f32 operands
        name = self.builder.fresh("v")
        self.builder.lines.append("%s%s = arith.cmpf %s, %s, %s : f32" %
                                  (self.indent, name, predicate, a, b))
        return name

    def cmpi(self, predicate, a, b, dtype):
        name = self.builder.fresh("v")
        self.builder.lines.append("%s%s = arith.cmpi %s, %s, %s : %s" %
                                  (self.indent, name, predicate, a, b, dtype))
        return name

    def select(self, cond, a, b, dtype="f32"):
        name = self.builder.fresh("v")
        self.builder.lines.append("%s%s = arith.select %s, %s, %s : %s" %
                                  (self.indent, name, cond, a, b, dtype))
        return name

    def index(self, d):
        name = self.builder.fresh("v")
        self.builder.lines.append("%s%s = linalg.index %d : index" %
                                  (self.indent, name, d))
        return name

    def cast(self, opname, value, from_type, to_type):
        name = self.builder.fresh("v")
        self.builder.lines.append("%s%s = %s %s : %s to %s" %
                                  (self.indent, name, opname, value, from_type,
                                   to_type))
        return name

    def extract(self, tensor, indices):
        name = self.builder.fresh("v")
        self.builder.lines.append(
            "%s%s = tensor.extract %s[%s] : %s" %
            (self.indent, name, tensor.name, ", ".join(indices), tensor.type))
        return name


class Builder:
    """Accumulates the body of one func.func."""

    def __init__(self):
        self.lines = []
        self.counter = 0
        self.indent = "  "

    def fresh(self, prefix):
        self.counter += 1
        return "%%%s%d" % (prefix, self.counter)

    def emit(self, text):
        self.lines.append(self.indent + text)

    # -- values --------------------------------------------------------------
    def empty(self, shape, dtype="f32"):
        name = self.fresh("e")
        self.emit("%s = tensor.empty() : %s" % (name,
                                                 tensor_type(shape, dtype)))
        return Tensor(name, shape, dtype)

    def scalar_const(self, value, dtype="f32"):
        name = self.fresh("c")
        self.emit("%s = arith.constant %s : %s" %
                  (name, constant_literal(value, dtype), dtype))
        return name

    def full(self, shape, value, dtype="f32"):
        init = self.empty(shape, dtype)
        scalar = self.scalar_const(value, dtype)
        name = self.fresh("t")
        self.emit("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s" %
                  (name, scalar, dtype, init.name, init.type, init.type))
        return Tensor(name, shape, dtype)

    def dense_constant(self, values, shape, dtype="f32"):
        """A constant tensor from a flat list of Python numbers."""
        if dtype == "f32":
            # Hex of the little-endian f32 bytes: exact and compact.
            text = 'dense<"0x%s">' % "".join(
                struct.pack("<f", float(v)).hex().upper() for v in values)
        elif shape:
            text = "dense<%s>" % nested(values, shape, dtype)
        else:
            text = "dense<%s>" % scalar_text(values[0], dtype)
        name = self.fresh("k")
        self.emit("%s = arith.constant %s : %s" %
                  (name, text, tensor_type(shape, dtype)))
        return Tensor(name, shape, dtype)

    # -- linalg.generic ------------------------------------------------------
    def generic(self, loops, iterators, inputs, outputs, body_fn,
                result_dtypes=None):
        """linalg.generic over `loops` dims.

        inputs: list of (Tensor, [map results]); outputs: list of
        (Tensor init, [map results]). body_fn(body, input_args, output_args)
        returns the list of yielded scalar names. Returns result Tensors.
        """
        maps = [affine_map(loops, r) for _, r in inputs + outputs]
        iters = ", ".join('"%s"' % it for it in iterators)
        base = self.fresh("t")
        if len(outputs) == 1:
            names, lhs = [base], base
        else:
            names = ["%s#%d" % (base, i) for i in range(len(outputs))]
            lhs = "%s:%d" % (base, len(outputs))
        ins = ""
        if inputs:
            ins = " ins(%s : %s)" % (", ".join(t.name for t, _ in inputs),
                                     ", ".join(t.type for t, _ in inputs))
        outs = " outs(%s : %s)" % (", ".join(t.name for t, _ in outputs),
                                   ", ".join(t.type for t, _ in outputs))
        result_types = ", ".join(t.type for t, _ in outputs)
        if len(outputs) > 1:
            result_types = "(" + result_types + ")"
        self.emit("%s = linalg.generic {indexing_maps = [%s], "
                  "iterator_types = [%s]}%s%s {" %
                  (lhs, ", ".join(maps), iters, ins, outs))
        args = [self.fresh("a") for _ in inputs + outputs]
        arg_text = ", ".join("%s: %s" % (a, t.dtype)
                             for a, (t, _) in zip(args, inputs + outputs))
        self.lines.append(self.indent + "^bb0(%s):" % arg_text)
        body = Body(self, self.indent + "  ")
        yielded = body_fn(body, args[:len(inputs)], args[len(inputs):])
        self.lines.append(self.indent + "  linalg.yield %s : %s" %
                          (", ".join(yielded), ", ".join(
                              t.dtype for t, _ in outputs)))
        self.emit("} -> " + result_types)
        return [Tensor(n, t.shape, t.dtype) for n, (t, _) in zip(names,
                                                                 outputs)]

    def map(self, out_shape, operands, body_fn, dtype="f32"):
        """Elementwise op with broadcasting: body_fn(body, scalars) -> yield.
        operands are Tensors broadcast to out_shape."""
        out_shape = tuple(out_shape)
        rank = len(out_shape)
        inputs = [(t, broadcast_results(t.shape, out_shape)) for t in operands]
        init = self.empty(out_shape, dtype)
        identity = [dim(i) for i in range(rank)]
        return self.generic(
            rank, ["parallel"] * rank, inputs, [(init, identity)],
            lambda b, ins, outs: [body_fn(b, ins)])[0]

    def reduce(self, value, dims, keepdim, init_value, combine, dtype=None):
        """Reduces `value` over `dims` with combine(body, acc, x)."""
        dtype = dtype or value.dtype
        rank = value.rank
        out_shape, out_map, iterators = reduction_loops(value.shape, dims,
                                                        keepdim)
        init = self.full(out_shape, init_value, dtype)
        return self.generic(
            rank, iterators, [(value, [dim(i) for i in range(rank)])],
            [(init, out_map)],
            lambda b, ins, outs: [combine(b, outs[0], ins[0])])[0]

    def widen_half(self, value):
        """A bf16 or f16 tensor as f32 (exact)."""
        return self.map(value.shape, [value], lambda b, v: b.cast(
            "arith.extf", v[0], value.dtype, "f32"), "f32")

    def round_to_half(self, value, dtype):
        """An f32 tensor rounded to bf16 or f16 (nearest even)."""
        return self.map(value.shape, [value], lambda b, v: b.cast(
            "arith.truncf", v[0], value.dtype, dtype), dtype)

    def sum(self, value, dims, keepdim=False):
        return self.reduce(value, dims, keepdim, 0.0,
                           lambda b, acc, x: b.binary("arith.addf", acc, x))

    def wide_sum(self, operands, dims, term=None, keepdim=False):
        """The f64 sum over `dims` of term(body, f64 scalars) (default: the
        one operand), the operands (f32 or f64, broadcast to the first
        one's shape) widened first: PyTorch's CPU kernels accumulate
        float in double where a long reduction decides the result (batch
        norm's statistics and gradients), and so must we to match them."""
        shape = operands[0].shape
        rank = len(shape)
        out_shape, out_map, iterators = reduction_loops(shape, dims, keepdim)
        init = self.full(out_shape, 0.0, "f64")
        inputs = [(t, broadcast_results(t.shape, shape)) for t in operands]

        def body(b, ins, outs):
            wide = [v if t.dtype == "f64" else b.cast("arith.extf", v,
                                                      "f32", "f64")
                    for v, (t, _) in zip(ins, inputs)]
            value = term(b, wide) if term else wide[0]
            return [b.binary("arith.addf", outs[0], value, "f64")]

        return self.generic(rank, iterators, inputs, [(init, out_map)],
                            body)[0]

    def narrow(self, value):
        """An f64 tensor rounded to f32."""
        return self.map(value.shape, [value], lambda b, v: b.cast(
            "arith.truncf", v[0], "f64", "f32"))

    def permute(self, value, perm):
        """result[i0..] = value[...] with result dim k = value dim perm[k]."""
        rank = value.rank
        out_shape = tuple(value.shape[p] for p in perm)
        # Loop dims follow the result; the input dim perm[k] is loop k.
        in_map = [None] * rank
        for k, p in enumerate(perm):
            in_map[p] = dim(k)
        init = self.empty(out_shape, value.dtype)
        return self.generic(rank, ["parallel"] * rank, [(value, in_map)],
                            [(init, [dim(i) for i in range(rank)])],
                            lambda b, ins, outs: [ins[0]])[0]

    def contract(self, lhs, lhs_map, rhs, rhs_map, out_shape, out_map, loops,
                 iterators, wide=False):
        """out = sum over reduction loops of lhs * rhs (f32; with wide, the
        products and their sum in f64, rounded once at the end)."""
        acc = "f64" if wide else "f32"
        init = self.full(out_shape, 0.0, acc)

        def body(b, ins, outs):
            x, y = ins
            if wide:
                x = b.cast("arith.extf", x, "f32", "f64")
                y = b.cast("arith.extf", y, "f32", "f64")
            product = b.binary("arith.mulf", x, y, acc)
            return [b.binary("arith.addf", outs[0], product, acc)]

        out = self.generic(loops, iterators, [(lhs, lhs_map),
                                              (rhs, rhs_map)],
                           [(init, out_map)], body)[0]
        return self.narrow(out) if wide else out

    def matmul(self, a, b):
        """(m, k) x (k, n) with batch dims in front (bmm)."""
        batch = a.shape[:-2]
        m, k = a.shape[-2:]
        k2, n = b.shape[-2:]
        if k != k2 or tuple(b.shape[:-2]) != tuple(batch):
            raise ExportError("matmul shapes %s x %s" % (a.shape, b.shape))
        nb = len(batch)
        bd = [dim(i) for i in range(nb)]
        M, N, K = dim(nb), dim(nb + 1), dim(nb + 2)
        return self.contract(a, bd + [M, K], b, bd + [K, N],
                             tuple(batch) + (m, n), bd + [M, N], nb + 3,
                             ["parallel"] * (nb + 2) + ["reduction"])

    # -- shapes --------------------------------------------------------------
    def reshape(self, value, shape):
        shape = tuple(int(s) for s in shape)
        if shape == value.shape:
            return value
        numel = 1
        for s in shape:
            numel *= s
        if numel != value.numel():
            raise ExportError("cannot reshape %s to %s" % (value.shape, shape))
        flat = value
        if value.rank != 1:
            flat = self.collapse(value, [list(range(value.rank))]
                                 if value.rank else [])
        if len(shape) == 1:
            return flat
        name = self.fresh("t")
        reassociation = "[%s]" % ", ".join(str(i) for i in range(len(shape)))
        if not shape:
            self.emit("%s = tensor.collapse_shape %s [] : %s into %s" %
                      (name, flat.name, flat.type, tensor_type(shape,
                                                                value.dtype)))
            return Tensor(name, shape, value.dtype)
        self.emit("%s = tensor.expand_shape %s [%s] output_shape [%s] : "
                  "%s into %s" % (name, flat.name, reassociation, ", ".join(
                      str(s) for s in shape), flat.type,
                                  tensor_type(shape, value.dtype)))
        return Tensor(name, shape, value.dtype)

    def collapse(self, value, groups):
        if value.rank == 0:
            name = self.fresh("t")
            self.emit("%s = tensor.expand_shape %s [] output_shape [1] : "
                      "%s into %s" % (name, value.name, value.type,
                                      tensor_type((1,), value.dtype)))
            return Tensor(name, (1,), value.dtype)
        shape = []
        for group in groups:
            size = 1
            for i in group:
                size *= value.shape[i]
            shape.append(size)
        name = self.fresh("t")
        text = ", ".join("[%s]" % ", ".join(str(i) for i in g)
                         for g in groups)
        self.emit("%s = tensor.collapse_shape %s [%s] : %s into %s" %
                  (name, value.name, text, value.type,
                   tensor_type(shape, value.dtype)))
        return Tensor(name, shape, value.dtype)

    def extract_slice(self, value, offsets, sizes, strides=None):
        strides = strides or [1] * value.rank
        name = self.fresh("t")
        result = Tensor(name, sizes, value.dtype)
        self.emit("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s" %
                  (name, value.name, ints(offsets), ints(sizes), ints(strides),
                   value.type, result.type))
        return result

    def insert_slice(self, source, dest, offsets, strides=None):
        strides = strides or [1] * dest.rank
        name = self.fresh("t")
        self.emit("%s = tensor.insert_slice %s into %s[%s] [%s] [%s] : "
                  "%s into %s" % (name, source.name, dest.name, ints(offsets),
                                  ints(source.shape), ints(strides),
                                  source.type, dest.type))
        return Tensor(name, dest.shape, dest.dtype)

    def pad(self, value, low, high, pad_value):
        if not any(low) and not any(high):
            return value
        shape = [s + lo + hi for s, lo, hi in zip(value.shape, low, high)]
        dest = self.full(shape, pad_value, value.dtype)
        return self.insert_slice(value, dest, low)


def ints(values):
    return ", ".join(str(int(v)) for v in values)


def scalar_text(value, dtype):
    if dtype == "i1":
        return "true" if value else "false"
    return str(int(value))


def nested(values, shape, dtype):
    if len(shape) == 1:
        return "[%s]" % ", ".join(scalar_text(v, dtype) for v in values)
    step = len(values) // shape[0]
    return "[%s]" % ", ".join(
        nested(values[i * step:(i + 1) * step], shape[1:], dtype)
        for i in range(shape[0]))

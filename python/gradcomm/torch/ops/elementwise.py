"""Pointwise ATen ops with numpy broadcasting: arithmetic, activations and
their backward, comparisons, selects, constants and copies."""

import math

from gradcomm.mlir import broadcast_shape
from gradcomm.torch.ops import converter, is_tensor


def compute_dtype(operands):
    """f32 if any operand is a float (tensor or Python float), else i64,
    else i1 (bool tensors and Python bools)."""
    kinds = set()
    for o in operands:
        if is_tensor(o):
            kinds.add(o.dtype)
        elif isinstance(o, bool):
            kinds.add("i1")
        elif isinstance(o, int):
            kinds.add("i64")
        elif isinstance(o, float):
            kinds.add("f32")
    for kind in ("f32", "i64", "i1"):
        if kind in kinds:
            return kind
    return "f32"


def convert_scalar(b, value, from_type, to_type):
    if from_type == to_type:
        return value
    if (from_type, to_type) == ("f32", "f64"):
        return b.cast("arith.extf", value, from_type, to_type)
    if (from_type, to_type) == ("f64", "f32"):
        return b.cast("arith.truncf", value, from_type, to_type)
    if to_type == "f32":
        op = "arith.uitofp" if from_type == "i1" else "arith.sitofp"
        return b.cast(op, value, from_type, to_type)
    if to_type == "i64" and from_type == "i1":
        return b.cast("arith.extui", value, from_type, to_type)
    raise ValueError("no conversion from %s to %s" % (from_type, to_type))


def pointwise(ctx, operands, fn, dtype=None, result_dtype=None,
              operand_dtypes=None):
    """Maps fn(body, scalars) over the broadcast of the tensor operands.

    Every operand (tensor element or Python number) reaches fn converted to
    `dtype` (default: compute_dtype), or to its entry of operand_dtypes;
    the result has `result_dtype` (default: dtype); an f64 computation with
    an f32 result is rounded at the end."""
    dtype = dtype or compute_dtype(operands)
    result_dtype = result_dtype or dtype
    wanted = operand_dtypes or [dtype] * len(operands)
    tensors = [o for o in operands if is_tensor(o)]
    shape = broadcast_shape(*[t.shape for t in tensors]) if tensors else ()

    def body(b, scalars):
        it = iter(scalars)
        values = []
        for o, want in zip(operands, wanted):
            if is_tensor(o):
                values.append(convert_scalar(b, next(it), o.dtype, want))
            else:
                values.append(b.const(o, want))
        result = fn(b, values)
        if (dtype, result_dtype) == ("f64", "f32"):  # a wide computation
            result = convert_scalar(b, result, dtype, result_dtype)
        return result

    return ctx.b.map(shape, tensors, body, result_dtype)


def arith(dtype, float_op, int_op):
    return float_op if dtype == "f32" else int_op


def scaled(b, value, alpha, dtype):
    """alpha * value (value itself when alpha == 1)."""
    if alpha == 1:
        return value
    return b.binary(arith(dtype, "arith.mulf", "arith.muli"),
                    b.const(alpha, dtype), value, dtype)


def additive(float_op, int_op):
    """a <op> alpha * other, for add and sub (float or int)."""
    def convert(ctx, a, other, alpha=1):
        dtype = compute_dtype([a, other, alpha])
        return pointwise(ctx, [a, other], lambda b, v: b.binary(
            arith(dtype, float_op, int_op), v[0],
            scaled(b, v[1], alpha, dtype), dtype), dtype)

    return convert


add = converter("add", "add_")(additive("arith.addf", "arith.addi"))
sub = converter("sub", "sub_")(additive("arith.subf", "arith.subi"))


@converter("rsub")
def rsub(ctx, a, other, alpha=1):
    return sub(ctx, other, a, alpha) if is_tensor(other) else pointwise(
        ctx, [a, other], lambda b, v: b.binary(
            "arith.subf", v[1], scaled(b, v[0], alpha, "f32")), "f32")


@converter("mul", "mul_")
def mul(ctx, a, other):
    dtype = compute_dtype([a, other])
    return pointwise(ctx, [a, other], lambda b, v: b.binary(
        arith(dtype, "arith.mulf", "arith.muli"), v[0], v[1], dtype), dtype)


@converter("div", "div_")
def div(ctx, a, other, rounding_mode=None):
    if rounding_mode is not None:
        ctx.fail("rounding_mode=%r is not supported" % (rounding_mode,))
    return pointwise(ctx, [a, other],
                     lambda b, v: b.binary("arith.divf", v[0], v[1]), "f32")


@converter("neg")
def neg(ctx, a):
    return pointwise(ctx, [a], lambda b, v: b.unary("arith.negf", v[0]),
                     "f32")


def unary_math(opname):
    def convert(ctx, a):
        return pointwise(ctx, [a], lambda b, v: b.unary(opname, v[0]), "f32")

    return convert


for _name, _op in (("exp", "math.exp"), ("log", "math.log"),
                   ("sqrt", "math.sqrt"), ("tanh", "math.tanh"),
                   ("erf", "math.erf"), ("expm1", "math.expm1"),
                   ("log1p", "math.log1p"), ("abs", "math.absf")):
    converter(_name)(unary_math(_op))


@converter("rsqrt")
def rsqrt(ctx, a):
    def body(b, v):
        return b.binary("arith.divf", b.const(1.0), b.unary("math.sqrt", v[0]))

    return pointwise(ctx, [a], body, "f32")


@converter("reciprocal")
def reciprocal(ctx, a):
    return pointwise(ctx, [a], lambda b, v: b.binary(
        "arith.divf", b.const(1.0), v[0]), "f32")


@converter("sigmoid")
def sigmoid(ctx, a):
    def body(b, v):
        e = b.unary("math.exp", b.unary("arith.negf", v[0]))
        return b.binary("arith.divf", b.const(1.0),
                        b.binary("arith.addf", b.const(1.0), e))

    return pointwise(ctx, [a], body, "f32")


@converter("pow")
def pow_(ctx, a, exponent):
    if is_tensor(a) and not is_tensor(exponent) and exponent == 2:
        return pointwise(ctx, [a], lambda b, v: b.binary(
            "arith.mulf", v[0], v[0]), "f32")
    return pointwise(ctx, [a, exponent],
                     lambda b, v: b.binary("math.powf", v[0], v[1]), "f32")


@converter("relu", "relu_")
def relu(ctx, a):
    # max(x, 0) that keeps NaN, as torch.relu does.
    def body(b, v):
        positive = b.cmpf("ugt", v[0], b.const(0.0))
        return b.select(positive, v[0], b.const(0.0))

    return pointwise(ctx, [a], body, "f32")


@converter("threshold_backward")
def threshold_backward(ctx, grad, a, threshold):
    def body(b, v):
        below = b.cmpf("ole", v[1], b.const(threshold))
        return b.select(below, b.const(0.0), v[0])

    return pointwise(ctx, [grad, a], body, "f32")


SQRT1_2 = 1.0 / math.sqrt(2.0)
GELU_PDF_SCALE = 1.0 / math.sqrt(2.0 * math.pi)


def gelu_cdf(b, x):
    scaled_x = b.binary("arith.mulf", x, b.const(SQRT1_2))
    one_plus = b.binary("arith.addf", b.const(1.0), b.unary("math.erf",
                                                            scaled_x))
    return b.binary("arith.mulf", b.const(0.5), one_plus)


GELU_TANH_K = math.sqrt(2.0 / math.pi)
GELU_TANH_C = 0.044715


def check_gelu(ctx, approximate):
    if approximate not in ("none", "tanh"):
        ctx.fail("gelu approximate=%r is not supported ('none' or 'tanh')"
                 % (approximate,))


def gelu_tanh_inner(b, x):
    """tanh(sqrt(2/pi) * (x + 0.044715 x^3)), PyTorch's order."""
    cube = b.binary("arith.mulf", b.binary("arith.mulf", x, x), x)
    inner = b.binary("arith.mulf", b.const(GELU_TANH_K), b.binary(
        "arith.addf", x, b.binary("arith.mulf", b.const(GELU_TANH_C), cube)))
    return b.unary("math.tanh", inner)


@converter("gelu", "gelu_")
def gelu(ctx, a, approximate="none"):
    check_gelu(ctx, approximate)
    if approximate == "tanh":
        return pointwise(ctx, [a], lambda b, v: b.binary(
            "arith.mulf", b.binary("arith.mulf", b.const(0.5), v[0]),
            b.binary("arith.addf", b.const(1.0), gelu_tanh_inner(b, v[0]))),
            "f32")
    return pointwise(ctx, [a], lambda b, v: b.binary(
        "arith.mulf", v[0], gelu_cdf(b, v[0])), "f32")


def gelu_tanh_slope(b, x):
    """d/dx of 0.5 x (1 + tanh(u)), u = k (x + c x^3)."""
    t = gelu_tanh_inner(b, x)
    square = b.binary("arith.mulf", x, x)
    du = b.binary("arith.mulf", b.const(GELU_TANH_K), b.binary(
        "arith.addf", b.const(1.0), b.binary(
            "arith.mulf", b.const(3.0 * GELU_TANH_C), square)))
    sech2 = b.binary("arith.subf", b.const(1.0), b.binary("arith.mulf", t, t))
    left = b.binary("arith.mulf", b.const(0.5), b.binary(
        "arith.addf", b.const(1.0), t))
    right = b.binary("arith.mulf", b.binary(
        "arith.mulf", b.binary("arith.mulf", b.const(0.5), x), sech2), du)
    return b.binary("arith.addf", left, right)


@converter("gelu_backward")
def gelu_backward(ctx, grad, a, approximate="none"):
    check_gelu(ctx, approximate)

    def body(b, v):
        g, x = v
        if approximate == "tanh":
            return b.binary("arith.mulf", g, gelu_tanh_slope(b, x))
        square = b.binary("arith.mulf", x, x)
        exponent = b.binary("arith.mulf", b.const(-0.5), square)
        pdf = b.binary("arith.mulf", b.unary("math.exp", exponent),
                       b.const(GELU_PDF_SCALE))
        slope = b.binary("arith.addf", gelu_cdf(b, x),
                         b.binary("arith.mulf", x, pdf))
        return b.binary("arith.mulf", g, slope)

    return pointwise(ctx, [grad, a], body, "f32")


@converter("clamp", "clamp_")
def clamp(ctx, a, min=None, max=None):
    """Clamps to [min, max] (either may be absent) keeping NaN, in
    PyTorch's order: max(x, min) first, then min(., max)."""
    if (min is not None and is_tensor(min)) or (max is not None and
                                                 is_tensor(max)):
        ctx.fail("clamp with tensor bounds is not supported")
    dtype = compute_dtype([a])

    def body(b, v):
        out = v[0]
        less, greater = ("olt", "ogt") if dtype == "f32" else ("slt", "sgt")
        compare = (lambda p, x, y: b.cmpf(p, x, y)) if dtype == "f32" else \
            (lambda p, x, y: b.cmpi(p, x, y, dtype))
        if min is not None:
            low = b.const(min, dtype)
            out = b.select(compare(less, out, low), low, out, dtype)
        if max is not None:
            high = b.const(max, dtype)
            out = b.select(compare(greater, out, high), high, out, dtype)
        return out

    return pointwise(ctx, [a], body, dtype)


@converter("sigmoid_backward")
def sigmoid_backward(ctx, grad, output):
    """grad * (1 - y) * y, PyTorch's CPU order."""
    return pointwise(ctx, [grad, output], lambda b, v: b.binary(
        "arith.mulf", b.binary("arith.mulf", v[0], b.binary(
            "arith.subf", b.const(1.0), v[1])), v[1]), "f32")


@converter("hardtanh", "hardtanh_")
def hardtanh(ctx, a, min_val=-1.0, max_val=1.0):
    """min(max(x, min_val), max_val) that keeps NaN (ReLU6 is
    hardtanh(0, 6)); the backward is PyTorch's decomposition."""
    def body(b, v):
        low = b.select(b.cmpf("olt", v[0], b.const(min_val)),
                       b.const(min_val), v[0])
        return b.select(b.cmpf("ogt", low, b.const(max_val)),
                        b.const(max_val), low)

    return pointwise(ctx, [a], body, "f32")


def select_of(ctx, cond, a, other):
    """cond ? a : other, cond kept as i1 and the values as their type."""
    dtype = compute_dtype([a, other])
    return pointwise(ctx, [cond, a, other], lambda b, v: b.select(
        v[0], v[1], v[2], dtype), dtype, operand_dtypes=["i1", dtype, dtype])


@converter("masked_fill", "masked_fill_")
def masked_fill(ctx, a, mask, value):
    if mask.dtype != "i1":
        ctx.fail("masked_fill needs a bool mask, got %s" % mask.dtype)
    return select_of(ctx, mask, value, a)


@converter("where")
def where(ctx, cond, a, other):
    return select_of(ctx, cond, a, other)


COMPARISONS = {
    "eq": ("oeq", "eq"), "ne": ("une", "ne"), "lt": ("olt", "slt"),
    "le": ("ole", "sle"), "gt": ("ogt", "sgt"), "ge": ("oge", "sge"),
}


def comparison(name):
    float_pred, int_pred = COMPARISONS[name]

    def convert(ctx, a, other):
        dtype = compute_dtype([a, other])

        def body(b, v):
            if dtype == "f32":
                return b.cmpf(float_pred, v[0], v[1])
            return b.cmpi(int_pred, v[0], v[1], dtype)

        return pointwise(ctx, [a, other], body, dtype, "i1")

    return convert


for _name in COMPARISONS:
    converter(_name)(comparison(_name))


@converter("logical_not")
def logical_not(ctx, a):
    return pointwise(ctx, [a], lambda b, v: b.binary(
        "arith.xori", v[0], b.const(True, "i1"), "i1"), "i1")


def logical(opname):
    def convert(ctx, a, other):
        for value in (a, other):
            if is_tensor(value) and value.dtype != "i1":
                ctx.fail("%s of a %s tensor (bool only)" % (
                    opname, value.dtype))
        return pointwise(ctx, [a, other], lambda b, v: b.binary(
            opname, v[0], v[1], "i1"), "i1")

    return convert


converter("logical_and", "bitwise_and")(logical("arith.andi"))
converter("logical_or", "bitwise_or")(logical("arith.ori"))


@converter("tril", "triu")
def triangle(ctx, a, diagonal=0):
    """Keeps element (i, j) of the last two dims where j - i <= diagonal
    (tril) or >= diagonal (triu); zero (false) elsewhere."""
    if a.rank < 2:
        ctx.fail("needs a tensor of rank 2 or more")
    rank = a.rank
    lower = ctx.node.target.overloadpacket.__name__ == "tril"

    def body(b, ins, outs):
        column = b.binary("arith.subi", b.index(rank - 1), b.index(rank - 2),
                          "index")
        keep = b.cmpi("sle" if lower else "sge", column,
                      b.const(diagonal, "index"), "index")
        return [b.select(keep, ins[0], b.const(0, a.dtype), a.dtype)]

    loops = ["d%d" % i for i in range(rank)]
    return ctx.b.generic(rank, ["parallel"] * rank, [(a, loops)],
                         [(ctx.b.empty(a.shape, a.dtype), loops)], body)[0]


@converter("clone", "detach", "alias", "lift_fresh_copy", "contiguous",
           "lift_fresh")
def identity(ctx, a, *args, **kwargs):
    return a


DTYPES = {"torch.float32": "f32", "torch.int64": "i64", "torch.bool": "i1"}


def element_type(ctx, dtype, default):
    if dtype is None:
        return default
    if str(dtype) not in DTYPES:
        ctx.fail("dtype %s is not supported (float32, int64, bool)" % dtype)
    return DTYPES[str(dtype)]


@converter("_to_copy", "to")
def to_copy(ctx, a, *args, dtype=None, **kwargs):
    want = element_type(ctx, dtype, a.dtype)
    if want == a.dtype:
        return a
    return pointwise(ctx, [a], lambda b, v: v[0], want)


def filled(ctx, shape, value, dtype):
    return ctx.b.full(tuple(shape), value, dtype)


@converter("ones_like")
def ones_like(ctx, a, dtype=None, **kwargs):
    return filled(ctx, a.shape, 1, element_type(ctx, dtype, a.dtype))


@converter("zeros_like")
def zeros_like(ctx, a, dtype=None, **kwargs):
    return filled(ctx, a.shape, 0, element_type(ctx, dtype, a.dtype))


@converter("full_like")
def full_like(ctx, a, value, dtype=None, **kwargs):
    return filled(ctx, a.shape, value, element_type(ctx, dtype, a.dtype))


@converter("new_ones")
def new_ones(ctx, a, size, dtype=None, **kwargs):
    return filled(ctx, size, 1, element_type(ctx, dtype, a.dtype))


@converter("new_zeros")
def new_zeros(ctx, a, size, dtype=None, **kwargs):
    return filled(ctx, size, 0, element_type(ctx, dtype, a.dtype))


@converter("new_full")
def new_full(ctx, a, size, value, dtype=None, **kwargs):
    return filled(ctx, size, value, element_type(ctx, dtype, a.dtype))


@converter("full")
def full(ctx, size, value, dtype=None, **kwargs):
    default = "f32" if isinstance(value, float) else "i64"
    return filled(ctx, size, value, element_type(ctx, dtype, default))


@converter("zeros")
def zeros(ctx, size, dtype=None, **kwargs):
    return filled(ctx, size, 0, element_type(ctx, dtype, "f32"))


@converter("ones")
def ones(ctx, size, dtype=None, **kwargs):
    return filled(ctx, size, 1, element_type(ctx, dtype, "f32"))


@converter("scalar_tensor")
def scalar_tensor(ctx, value, dtype=None, **kwargs):
    return filled(ctx, (), value, element_type(ctx, dtype, "f32"))


@converter("copy_", "copy")
def copy_(ctx, dest, source, non_blocking=False):
    if not is_tensor(source):
        return filled(ctx, dest.shape, source, dest.dtype)
    return ctx.b.map(dest.shape, [source], lambda b, v: convert_scalar(
        b, v[0], source.dtype, dest.dtype), dest.dtype)


@converter("fill_", "fill")
def fill_(ctx, dest, value):
    if is_tensor(value):
        return copy_(ctx, dest, value)
    return filled(ctx, dest.shape, value, dest.dtype)


def add_scaled_combination(opname):
    """a + value * (t1 <op> t2): addcmul (mulf) and addcdiv (divf)."""
    def convert(ctx, a, t1, t2, value=1):
        def body(b, v):
            combined = scaled(b, b.binary(opname, v[1], v[2]), value, "f32")
            return b.binary("arith.addf", v[0], combined)

        return pointwise(ctx, [a, t1, t2], body, "f32")

    return convert


converter("addcmul", "addcmul_")(add_scaled_combination("arith.mulf"))
converter("addcdiv", "addcdiv_")(add_scaled_combination("arith.divf"))

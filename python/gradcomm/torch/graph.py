"""Walks an ATen fx graph (from make_fx) and emits each node through its
converter (gradcomm.torch.ops) into a gradcomm.mlir.Builder."""

import contextlib
import os
import operator
import re
import traceback

import torch
from torch.fx.experimental.proxy_tensor import make_fx

from gradcomm.mlir import HALF_TYPES, ExportError, Tensor
from gradcomm.torch.ops import CONVERTERS

# Ops whose result shares storage with an argument: an in-place update of
# such a result would have to reach the base too, which a functional graph
# cannot express, so it is refused.
VIEW_OPS = {
    "view", "_reshape_alias", "_unsafe_view", "reshape", "t", "transpose",
    "permute", "expand", "slice", "select", "split", "split_with_sizes",
    "unsqueeze", "squeeze", "alias", "detach", "unbind", "as_strided",
    "diagonal", "narrow",
}

DTYPES = {torch.float32: "f32", torch.int64: "i64", torch.bool: "i1",
          torch.bfloat16: "bf16", torch.float16: "f16"}
HALF_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}


def element_type(dtype, what):
    if dtype not in DTYPES:
        raise ExportError("%s has dtype %s; GradComm exports float32, "
                          "bfloat16, float16, int64 and bool tensors" %
                          (what, dtype))
    return DTYPES[dtype]


def check_half_supported(what):
    """16-bit export needs each node's traced output types, which torch
    1.13's make_fx does not record."""
    if int(torch.__version__.split(".")[0]) < 2:
        raise ExportError("%s: exporting bfloat16 or float16 needs torch >= "
                          "2.0 (torch %s records no traced types)" %
                          (what, torch.__version__))


def traced_dtypes(node):
    """The element types of a node's flattened traced outputs (None where
    an output is not a tensor), or None when the trace recorded none."""
    meta = node.meta.get("val", node.meta.get("tensor_meta"))
    if meta is None:
        return None
    flat, _ = torch.utils._pytree.tree_flatten(meta)
    return [DTYPES.get(m.dtype) if hasattr(m, "dtype") else None
            for m in flat]


def _has_half(value):
    if isinstance(value, Tensor):
        return value.dtype in HALF_TYPES
    if isinstance(value, (list, tuple)):
        return any(_has_half(v) for v in value)
    return isinstance(value, torch.dtype) and value in HALF_DTYPES


class _ModuleStack:
    """Forward hooks that keep the qualified name of the module running, so
    every traced node can say where in the model it came from."""

    def __init__(self):
        self.names = []

    def current(self):
        return self.names[-1] if self.names else None

    @contextlib.contextmanager
    def attached(self, model):
        handles = []
        for name, module in model.named_modules():
            label = name or type(module).__name__

            def enter(_module, _inputs, label=label):
                self.names.append(label)

            def leave(_module, _inputs, _outputs):
                self.names.pop()

            handles.append(module.register_forward_pre_hook(enter))
            handles.append(module.register_forward_hook(leave))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()


# Ops traced through PyTorch's own decompositions (torch._decomp, torch 2.x)
# instead of a converter each: simple composites whose decomposition uses
# ops that have converters and computes what the eager kernel computes.
DECOMPOSED = [
    "hardswish", "hardswish_backward", "hardsigmoid", "hardsigmoid_backward",
    "silu", "silu_backward", "mish", "mish_backward", "hardtanh_backward",
    "leaky_relu", "leaky_relu_backward", "elu", "elu_backward", "softplus",
    "softplus_backward", "clamp_min", "clamp_max",
]


def decompositions():
    """The decomposition table of DECOMPOSED for make_fx."""
    from torch._decomp import get_decompositions

    aten = torch.ops.aten
    return get_decompositions([getattr(aten, name) for name in DECOMPOSED
                               if hasattr(aten, name)])


@contextlib.contextmanager
def math_attention():
    """scaled_dot_product_attention as its math composite (matmuls and a
    softmax, which have converters) rather than a fused CPU kernel."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # torch < 2.3: no fused kernel choice to make
        yield
        return
    with sdpa_kernel([SDPBackend.MATH]):
        yield


@contextlib.contextmanager
def masks_as_given():
    """Attention masks applied as given, never compared with a causal one.

    nn.TransformerEncoder, nn.TransformerDecoder and nn.Transformer called
    with a mask but no is_causal (as PyTorch's tutorials call them) compare
    the mask's values with a causal mask (_detect_is_causal_mask) to pass
    attention the hint is_causal=True. Tracing cannot read values; without
    the hint attention adds the mask itself, which computes the same
    thing."""
    from torch.nn.modules import transformer

    original = getattr(transformer, "_detect_is_causal_mask", None)
    if original is None:  # torch 1.13: no detection
        yield
        return

    def given_hint(mask, is_causal=None, size=None):
        return is_causal is True

    transformer._detect_is_causal_mask = given_hint
    try:
        yield
    finally:
        transformer._detect_is_causal_mask = original


# Where the step's own code runs, as opposed to tracing machinery: frames
# under torch/ count only in torch/nn/ (the modules' own forward code).
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_GRADCOMM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))) + os.sep


def _model_frame(error):
    """The innermost traceback frame of the model's or PyTorch module's
    own code where `error` was raised: (file, line, source text)."""
    chosen = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = os.path.abspath(frame.filename)
        if path.startswith(_GRADCOMM_DIR):
            continue
        if path.startswith(_TORCH_DIR) and not path.startswith(
                os.path.join(_TORCH_DIR, "nn") + os.sep):
            continue
        chosen = frame
    if chosen is None:
        return None
    return chosen.filename, chosen.lineno, (chosen.line or "").strip()


def _data_dependent(error):
    """Whether `error` is tracing refusing to read a tensor's value."""
    names = {type(e).__name__ for e in (error, error.__cause__) if e}
    text = str(error)
    return bool(names & {"GuardOnDataDependentSymNode",
                         "DataDependentOutputException"}) or (
        "data-dependent" in text or "_local_scalar_dense" in text
        or "data dependent" in text)


def data_dependent_error(error, module, model):
    """An ExportError for data-dependent control flow: the module, the op
    and the source line that read a tensor's value."""
    kind = None
    if model is not None and module is not None:
        # The labels _ModuleStack gives (the root: its class name).
        labels = {name or type(m).__name__: m
                  for name, m in model.named_modules()}
        found = labels.get(module)
        kind = type(found).__name__ if found is not None else None
    ops = re.findall(r"aten\.[A-Za-z_.]+", str(error))
    op = ops[0].rstrip(".") if ops else "reading a value"
    where = _model_frame(error)
    place = ("%s:%d: %s" % where) if where else "unknown source line"
    return ExportError(
        "data-dependent control flow in module '%s'%s: %s at %s; a step "
        "must run the same ops for every input (branch on shapes or "
        "constants, or use torch.where); nothing written"
        % (module or "outside the model's modules",
           " (%s)" % kind if kind and kind != module else "", op, place))


def can_functionalize():
    func = getattr(torch, "func", None)
    return func is not None and hasattr(func, "functionalize")


class _Replay(torch.fx.Interpreter):
    """Runs a traced graph node by node with each node's module as the
    stack's current one, so that a re-trace's nodes get it too."""

    def __init__(self, gm, stack):
        super().__init__(gm)
        self.stack = stack

    def run_node(self, node):
        module = node.meta.get("gradcomm_module")
        self.stack.names[:] = [module] if module else []
        return super().run_node(node)


def _fake(args):
    """args (a pytree of tensors) as fake tensors of the same shapes,
    types and requires_grad. The mode has no shape environment, so reading
    a value (.item(), a branch on a tensor) raises as it does on real
    tensors (DataDependentOutputException naming
    aten._local_scalar_dense), where make_fx's own fake mode would trace
    it as an unbacked symbol. Tensors the model holds outside args
    (constants) stay real: the mode takes them as they are."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    return torch.utils._pytree.tree_map(
        lambda a: mode.from_tensor(a) if isinstance(a, torch.Tensor) else a,
        args)


def trace(fn, args, model=None):
    """make_fx of fn(*args), with each node's module (meta
    'gradcomm_module').

    On torch 2.x the graph is traced twice, as aot_autograd does: first
    with autograd (torch.autograd.grad inside fn), then that ATen graph
    again under torch.func.functionalize (in-place ops on views and inputs
    become out-of-place ops). Both traces use the DECOMPOSED table and
    fake tensors (_fake): the graph depends on shapes and types only, and
    computing real values (a forward and backward pass per trace, through
    Python decompositions) cost a quarter of ResNet-50's export on an idle
    machine, most of it beside other work (docs/export.md). torch 1.13
    traces real tensors and keeps the first graph; the converter applies
    its in-place updates itself."""
    from torch.fx.experimental import proxy_tensor

    stack = _ModuleStack()
    table = decompositions()
    tracer_class = proxy_tensor.PythonKeyTracer
    original = tracer_class.create_node

    def create_node(self, *a, **k):
        node = original(self, *a, **k)
        node.meta["gradcomm_module"] = stack.current()
        return node

    tracer_class.create_node = create_node
    if can_functionalize():
        args = _fake(args)
    try:
        with stack.attached(model) if model is not None else \
                contextlib.nullcontext(), math_attention(), masks_as_given():
            gm = make_fx(fn, decomposition_table=table)(*args)
        if not can_functionalize():
            return gm
        replay = _Replay(gm, stack)
        flat, _ = torch.utils._pytree.tree_flatten(args)
        return make_fx(torch.func.functionalize(replay.run,
                                                remove="mutations"),
                       decomposition_table=table)(*flat)
    except RuntimeError as error:
        if not _data_dependent(error):
            raise
        raise data_dependent_error(error, stack.current(), model) from None
    finally:
        tracer_class.create_node = original


def stand_in(node):
    """Placeholder values of a refused node's traced shapes and types."""
    def value(meta):
        if isinstance(meta, torch.Tensor) or hasattr(meta, "shape"):
            return Tensor("%unsupported", tuple(meta.shape),
                          DTYPES.get(meta.dtype, "f32"))
        if isinstance(meta, (list, tuple)):
            return tuple(value(m) for m in meta)
        return meta

    # torch 2.x records the traced value, torch 1.13 its metadata.
    return value(node.meta.get("val", node.meta.get("tensor_meta")))


def aten_name(target):
    packet = getattr(target, "overloadpacket", None)
    return packet.__name__ if packet is not None else str(target)


def describe(value):
    if isinstance(value, Tensor):
        return "%s %s" % (value.dtype, list(value.shape))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    return repr(value)


class OpError(ExportError):
    """A converter's refusal of one node: the op, where it is and why, so
    that an export can report every unsupported use at once."""

    def __init__(self, op, node, place, cause, arguments):
        ExportError.__init__(self, "aten.%s (%s, %s): %s; arguments: %s" % (
            op, node, place, cause, arguments))
        self.op = op
        self.place = place
        self.cause = cause
        self.arguments = arguments


class Context:
    """What a converter sees: the builder, errors that name the node, and
    in-place updates of its arguments."""

    def __init__(self, converter, node, args):
        self.b = converter.builder
        self.node = node
        self.args = args
        self.mutations = {}
        self._converter = converter

    def fail(self, message):
        node = self.node
        where = node.meta.get("gradcomm_module")
        place = ("in module '%s'" % where) if where else \
            "outside the model's modules: backward pass or optimizer"
        raise OpError(aten_name(node.target), node.name, place, message,
                      ", ".join(describe(a) for a in self.args))

    def mutate(self, position, value):
        """Argument `position` (an fx node) now holds `value`."""
        self.mutations[position] = value

    def dropout_seed(self):
        return self._converter.dropout_seed()


class GraphConverter:
    """Converts fx graphs into one builder; values persist across graphs."""

    def __init__(self, builder, seed_provider=None):
        self.builder = builder
        self.seed_provider = seed_provider
        self.dropout_count = 0
        self.refused = []  # OpErrors, in graph order
        self.stand_ins = set()  # nodes whose value is a stand-in
        self.widened = {}  # SSA name of a 16-bit tensor -> its f32 copy

    def check(self):
        """Raises one ExportError listing every refused node, grouped by op
        and cause, with a count, the first place and its arguments."""
        if not self.refused:
            return
        if len(self.refused) == 1:
            raise ExportError(str(self.refused[0]))
        groups = {}
        for error in self.refused:
            key = (error.op, error.cause)
            if key not in groups:
                groups[key] = [error, 0]
            groups[key][1] += 1
        lines = ["%d unsupported op use(s) in %d group(s); nothing written:"
                 % (len(self.refused), len(groups))]
        for (op, cause), (first, count) in groups.items():
            lines.append("  aten.%s x%d (first %s): %s; arguments: %s" % (
                op, count, first.place, cause, first.arguments))
        raise ExportError("\n".join(lines))

    def dropout_seed(self):
        if self.seed_provider is None:
            raise ExportError("dropout needs a seed input")
        self.dropout_count += 1
        return self.seed_provider(), self.dropout_count

    def run(self, gm, inputs):
        """Binds the placeholders to `inputs` (Tensors, in order) and
        returns the flattened outputs."""
        env = {}
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(inputs):
            raise ExportError("graph has %d inputs, %d given" %
                              (len(placeholders), len(inputs)))
        for node, value in zip(placeholders, inputs):
            env[node] = value
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                flat, _ = torch.utils._pytree.tree_flatten(node.args[0])
                return [env[n] if isinstance(n, torch.fx.Node) else n
                        for n in flat]
            if node.op == "get_attr":
                env[node] = self.constant(getattr(gm, node.target), node)
                continue
            if node.op != "call_function":
                raise ExportError("unexpected fx node %s (%s)" %
                                  (node.name, node.op))
            if node.target is operator.getitem:
                env[node] = env[node.args[0]][node.args[1]]
                continue
            self.call(node, env)
        raise ExportError("graph has no output")

    def call(self, node, env):
        name = aten_name(node.target)
        inplace = name.endswith("_") and not name.endswith("__")
        if not node.users and not inplace:
            return  # dead (e.g. make_fx's scratch `empty`)
        args = torch.fx.node.map_arg(node.args, lambda n: env[n])
        kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n])
        kwargs = {k: v for k, v in kwargs.items()
                  if k not in ("layout", "device", "pin_memory",
                               "memory_format", "non_blocking")}
        # bf16 and f16 are storage types: a node that reads or makes one
        # computes in f32 and rounds each 16-bit output once, as PyTorch's
        # CPU kernels do (docs/export.md, "Mixed precision").
        half_outputs = None
        traced = traced_dtypes(node) or []
        if _has_half(list(args)) or _has_half(list(kwargs.values())) or \
                any(t in HALF_TYPES for t in traced):
            half_outputs = traced
            args = self._widened(args)
            kwargs = {k: self._widened(v) for k, v in kwargs.items()}
        ctx = Context(self, node, list(args))
        fn = CONVERTERS.get(name)
        try:
            try:
                if fn is None:
                    ctx.fail("no converter for this op (see docs/export.md, "
                             "'Adding an op')")
                result = fn(ctx, *args, **kwargs)
                if half_outputs is not None:
                    result = self._rounded(ctx, result, half_outputs)
            except OpError:
                raise
            except ExportError as error:  # from the builder: add the place
                ctx.fail(str(error))
            except TypeError as error:
                ctx.fail("unexpected arguments (%s)" % error)
            except Exception as error:  # a converter bug: say where, not how
                ctx.fail("the converter failed (%s: %s)" % (
                    type(error).__name__, error))
        except OpError as error:
            # Go on with a stand-in of the traced shape, so that one export
            # reports every unsupported op; check() then refuses the graph.
            # A converter that fails on a stand-in input (torch 1.13 records
            # no traced value to shape it) is a consequence, not a cause:
            # only a missing converter is reported then.
            if fn is None or not any(n in self.stand_ins
                                     for n in node.all_input_nodes):
                self.refused.append(error)
            self.stand_ins.add(node)
            env[node] = stand_in(node)
            return
        env[node] = result
        if inplace:
            ctx.mutate(0, result)
        for position, value in ctx.mutations.items():
            target = node.args[position]
            if not isinstance(target, torch.fx.Node):
                ctx.fail("in-place update of a non-tensor argument")
            if target.op == "call_function" and aten_name(
                    target.target) in VIEW_OPS:
                ctx.fail("in-place update of a view (%s) is not supported"
                         % target.name)
            before = env[target]
            if isinstance(before, Tensor) and before.dtype in HALF_TYPES \
                    and value.dtype == "f32":
                value = self.builder.round_to_half(value, before.dtype)
            env[target] = value

    def _widened(self, value):
        """`value` (an argument) with 16-bit tensors widened to f32 (once
        per tensor) and 16-bit dtype arguments replaced by float32."""
        if isinstance(value, Tensor):
            if value.dtype not in HALF_TYPES:
                return value
            if value.name not in self.widened:
                self.widened[value.name] = self.builder.widen_half(value)
            return self.widened[value.name]
        if isinstance(value, (list, tuple)):
            return type(value)(self._widened(v) for v in value)
        if isinstance(value, torch.dtype) and value in HALF_DTYPES:
            return torch.float32
        return value

    def _rounded(self, ctx, result, dtypes):
        """The converter's f32 outputs rounded to the traced 16-bit types."""
        flat = list(result) if isinstance(result, (list, tuple)) else \
            [result]
        if len(flat) != len(dtypes):
            ctx.fail("the converter returned %d outputs, the trace %d" %
                     (len(flat), len(dtypes)))
        rounded = []
        for value, dtype in zip(flat, dtypes):
            if dtype in HALF_TYPES and isinstance(value, Tensor):
                if value.dtype != "f32":
                    ctx.fail("a %s output computed as %s" % (dtype,
                                                             value.dtype))
                value = self.builder.round_to_half(value, dtype)
            rounded.append(value)
        if isinstance(result, (list, tuple)):
            return type(result)(rounded)
        return rounded[0]

    def constant(self, tensor, node):
        dtype = element_type(tensor.dtype, "constant " + node.name)
        if tensor.numel() > 1 << 20:
            raise ExportError("constant %s has %d elements; pass it as a "
                              "buffer instead" % (node.name, tensor.numel()))
        if dtype in HALF_TYPES:  # exact in f32, rounded back exactly
            values = tensor.detach().float().reshape(-1).tolist()
            return self.builder.round_to_half(self.builder.dense_constant(
                values, tuple(tensor.shape), "f32"), dtype)
        values = tensor.detach().reshape(-1).tolist()
        return self.builder.dense_constant(values, tuple(tensor.shape), dtype)

"""The ScaleCom training recipe of the DDP hooks (docs/scalecom.md, "The
recipe"): one option struct, and the per-parameter, per-step decision it
implies (dense or compressed, at which ratio), tested without a process
group (test/Python/test_recipe.py).

    options = ScaleComOptions(ratio=400, warmup_steps=500,
                              momentum=0.9, dense=("vectors",))
    state = ScaleComState(model, options)

Parts (ALGORITHMS.md, "Making sparsified training hold on real models"):
  warm-up      the first `warmup_steps` steps are dense (`warmup="dense"`)
               or compressed at a ratio rising geometrically from
               `warmup_start_ratio` to `ratio` (`warmup="ramp"`, as DGC;
               exact selection);
  beta         the low-pass coefficient of the memory update, or "auto":
               1/n on a group of n ranks, at least 0.1 (beta_for_group);
  momentum     momentum correction for momentum SGD: the hook keeps each
               parameter's velocity, compresses it with error feedback and
               masks it where it was sent (keep_velocity=True: does not);
               the optimizer must then run without momentum
               (ScaleComState.check_optimizer says so);
  dense        presets of parameters that stay dense, plus `overrides`
               (name pattern -> ratio or "dense", first match wins);
  clip         local clipping of each gradient's L2 norm before it enters
               the velocity or the memory.

policy="auto" lets gradcomm-plan's cost model choose, per parameter,
dense or ScaleCom at one of `auto_ratios` on the cluster `cluster`
describes (gradcomm.plan; the pass's policy=auto, docs/scaling.md):
compression only where it buys time. Presets and overrides still win.
"""

import dataclasses
import fnmatch
import math
import warnings

import torch

from gradcomm import plan as cost_model

# Named groups of parameters that stay dense (`ScaleComOptions.dense`).
DENSE_PRESETS = {
    "small": "parameters with fewer than min_elements values (always on)",
    "vectors": "parameters of at most one dimension: biases, normalization "
               "scales and shifts",
    "embeddings": "weights of nn.Embedding and nn.EmbeddingBag",
    "first": "the parameters of the first module (in registration order) "
             "that has a weight",
    "last": "the parameters of the last such module",
}
WARMUPS = ("dense", "ramp")
POLICIES = ("fixed", "auto")
# beta="auto": the low-pass filter narrows as the group grows, down to this.
BETA_FLOOR = 0.1


def beta_for_group(size):
    """The low-pass coefficient beta="auto" takes on a group of `size` ranks
    (or simulated learners): 1/size, at least BETA_FLOOR. 0.5 at 2 ranks, the
    recipe's default there; the learner study (docs/results.md, "From 2 to
    64 learners") found 0.5 best at 2 learners and 0.1 best from 8 to 32 on
    the MLP and the CNN, where 0.5 lost 2-6 points."""
    if size < 1:
        raise ValueError("beta_for_group: a group has at least one rank, "
                         "got %r" % (size,))
    return max(BETA_FLOOR, 1.0 / size)


def for_group(options, size):
    """`options` with beta="auto" resolved for a group of `size` ranks (every
    state calls this once it knows its group; other options unchanged)."""
    if options.beta != "auto":
        return options
    return dataclasses.replace(options, beta=beta_for_group(size))


@dataclasses.dataclass(frozen=True)
class ScaleComOptions:
    """Every option of scalecom_hook (and local_topk_hook, which uses
    ratio, k, min_elements, warm-up, dense and overrides). The defaults are
    the recipe the study in docs/results.md chose."""
    ratio: float = 100.0
    k: int = None
    selection: str = "exact"
    chunk_size: int = 0
    # A float in (0, 1], or "auto" (beta_for_group).
    beta: float = 0.5
    min_elements: int = 1024
    warmup_steps: int = 100
    warmup: str = "dense"
    warmup_start_ratio: float = 4.0
    momentum: float = 0.0
    nesterov: bool = False
    # With momentum: keep the velocity where it was sent (True) instead of
    # zeroing it there (deep gradient compression's factor masking).
    keep_velocity: bool = False
    dense: tuple = ()
    overrides: tuple = ()
    clip: float = None
    policy: str = "fixed"
    auto_ratios: tuple = (10, 100, 400)
    auto_tolerance: float = 0.05
    # policy="auto": gradcomm-plan's cluster, as {key: value} or pairs
    # (keys: bandwidth, latency, memory_bandwidth, calibration).
    cluster: tuple = ()
    # The type values travel in: "f32", "bf16" or "f16", or None for the
    # bucket's own (a bf16 or fp16 model's buckets travel in 16 bits).
    wire: str = None

    def __post_init__(self):
        if self.selection not in ("exact", "chunk"):
            raise ValueError("selection must be 'exact' or 'chunk'")
        if self.wire not in (None, "f32", "bf16", "f16"):
            raise ValueError("wire must be 'f32', 'bf16', 'f16' or None (the "
                             "bucket's type), got %r" % (self.wire,))
        if self.beta != "auto" and not (
                isinstance(self.beta, (int, float)) and 0 < self.beta <= 1):
            raise ValueError("beta must be in (0, 1] or 'auto', got %r"
                             % (self.beta,))
        if self.k is None and not self.ratio >= 1:
            raise ValueError("ratio must be >= 1")
        if self.k is not None and self.k < 1:
            raise ValueError("k must be >= 1")
        if self.warmup not in WARMUPS:
            raise ValueError("warmup must be one of %s" % (WARMUPS,))
        if self.warmup_steps < 0:
            raise ValueError("warmup_steps must be >= 0")
        if not self.warmup_start_ratio >= 1:
            raise ValueError("warmup_start_ratio must be >= 1")
        if self.warmup == "ramp" and self.selection != "exact":
            raise ValueError("a ramp warm-up needs exact selection")
        if not 0 <= self.momentum < 1:
            raise ValueError("momentum must be in [0, 1)")
        if self.nesterov and self.momentum == 0:
            raise ValueError("nesterov needs momentum > 0")
        if self.keep_velocity not in (False, True):
            raise ValueError("keep_velocity must be True or False, got %r"
                             % (self.keep_velocity,))
        if self.keep_velocity and self.momentum == 0:
            raise ValueError("keep_velocity needs momentum > 0")
        if self.clip is not None and not self.clip > 0:
            raise ValueError("clip must be > 0 (or None)")
        unknown = set(self.dense) - set(DENSE_PRESETS)
        if isinstance(self.dense, str) or unknown:
            raise ValueError("dense must be a tuple of presets from %s; got "
                             "%r" % (sorted(DENSE_PRESETS), self.dense))
        overrides = (self.overrides.items() if isinstance(self.overrides,
                                                          dict)
                     else self.overrides)
        checked = []
        for pattern, value in overrides:
            if value != "dense" and not (isinstance(value, (int, float))
                                         and value >= 1):
                raise ValueError("override %r: %r is neither 'dense' nor a "
                                 "ratio >= 1" % (pattern, value))
            checked.append((pattern, value))
        object.__setattr__(self, "overrides", tuple(checked))
        if self.policy not in POLICIES:
            raise ValueError("policy must be one of %s" % (POLICIES,))
        cluster = tuple(sorted(dict(self.cluster).items()))
        unknown = {key for key, _ in cluster} - set(cost_model.CLUSTER_FLAGS)
        if unknown:
            raise ValueError("cluster: unknown keys %s (known: %s)" % (
                sorted(unknown), sorted(cost_model.CLUSTER_FLAGS)))
        object.__setattr__(self, "cluster", cluster)
        object.__setattr__(self, "auto_ratios", tuple(self.auto_ratios))
        if self.policy == "auto":
            if self.k is not None or self.chunk_size:
                raise ValueError("policy='auto' chooses the ratio per "
                                 "parameter; drop k and chunk_size")
            if not self.auto_ratios or any(r < 2 for r in self.auto_ratios):
                raise ValueError("auto_ratios must be ratios >= 2")
            if not 0 <= self.auto_tolerance < 1:
                raise ValueError("auto_tolerance must be in [0, 1)")
        elif self.cluster:
            raise ValueError("cluster applies to policy='auto' only")
        object.__setattr__(self, "dense", tuple(self.dense))


class FixedOptions:
    """A state's `options`, set once when the state is made. The layer
    plan, the runtime's options and the choice of entry points are derived
    from them then, so options replaced afterwards would not take effect
    (a silent wrong answer); assigning them again raises instead."""

    def __set_name__(self, owner, name):
        self.slot = "_fixed_" + name

    def __get__(self, state, owner=None):
        if state is None:
            return self
        return getattr(state, self.slot)

    def __set__(self, state, options):
        if hasattr(state, self.slot):
            raise AttributeError(
                "gradcomm: %s.options are fixed when the state is made (its "
                "layer plan and the runtime's options come from them); make "
                "a new state with the new options" % type(state).__name__)
        setattr(state, self.slot, options)


def dense_parameters(model, options):
    """{parameter name: the preset or override that keeps it dense} for
    `model` (a module or its DDP wrapper) under `options`."""
    module = getattr(model, "module", model)
    # Module by module, so that a tied weight is listed under each module
    # that holds it: either may be the first or last module with a weight.
    entries = [((prefix + "." if prefix else "") + local, parameter.dim(),
                owner, local)
               for prefix, owner in module.named_modules()
               for local, parameter in owner.named_parameters(recurse=False)]
    return dense_reasons(entries, options)


def dense_reasons(entries, options):
    """dense_parameters on a list of parameters: (name, dimensions, owning
    module, name in the owner) in the model's module registration order,
    as FSDP's flat parameters list them too (gradcomm.torch.fsdp)."""
    reasons = {}
    presets = set(options.dense)
    for name, dim, _, _ in entries:
        if "vectors" in presets and dim <= 1:
            reasons.setdefault(name, "vectors")
    for name, _, owner, _ in entries:
        if "embeddings" in presets and type(owner).__name__ in (
                "Embedding", "EmbeddingBag"):
            reasons.setdefault(name, "embeddings")
    # The modules with a weight, in order.
    with_weight = [owner for _, _, owner, local in entries
                   if local == "weight"]
    for preset, index in (("first", 0), ("last", -1)):
        if preset in presets and with_weight:
            for name, _, owner, _ in entries:
                if owner is with_weight[index]:
                    reasons.setdefault(name, preset)
    return reasons


def unsupported_when_sharded(options):
    """The options the sharded reduce-scatters (FSDP1 and FSDP2) cannot
    take, named for the refusal."""
    return [what for what, used in (
        ("k", options.k is not None),
        ("chunk selection", options.selection != "exact"),
        ("a ramp warm-up", options.warmup == "ramp" and
         options.warmup_steps),
        ("policy='auto'", options.policy != "fixed"),
        ("wire (the gradient's type, FSDP's reduce dtype, sets it)",
         options.wire is not None)) if used]


def dense_in_runtime(options):
    """Momentum correction and clipping apply to the parameters the layer
    policy keeps dense too: those run through the runtime's recipe (a
    dense step) instead of a plain average."""
    return bool(options.momentum or options.clip)


def check_optimizer(options, optimizer):
    """Raises ValueError when `optimizer` would apply momentum a second
    time: with momentum correction (options.momentum > 0) the hook's
    output already carries the momentum, so the optimizer must be plain
    SGD (momentum 0). Warns (RuntimeWarning) when SGD's momentum runs over
    compressed gradients without momentum correction: ResNet-18 at ratio
    100 ended 200 steps 6-9 points behind the same runs with it
    (docs/results.md, "Against PyTorch's own compression")."""
    if options.momentum == 0:
        momenta = [group.get("momentum", 0) for group in
                   optimizer.param_groups] if isinstance(
                       optimizer, torch.optim.SGD) else []
        if any(momenta):
            warnings.warn(
                "gradcomm: SGD with momentum %g over compressed gradients "
                "without momentum correction trains markedly worse; give "
                "the hook momentum=%g and the optimizer momentum=0 "
                "(docs/pytorch.md, the recipe)" % (max(momenta),
                                                    max(momenta)),
                RuntimeWarning, stacklevel=3)
        return
    for group in optimizer.param_groups:
        if not isinstance(optimizer, torch.optim.SGD) or group.get(
                "momentum", 0):
            raise ValueError(
                "gradcomm: momentum correction (momentum=%g) applies the "
                "momentum in the hook; use torch.optim.SGD with momentum=0, "
                "got %s with momentum %s" % (
                    options.momentum, type(optimizer).__name__,
                    group.get("momentum", "-")))


class Plan:
    """The recipe's layer policy applied to one model: per parameter,
    dense or the k to send after the warm-up. Built once per state from
    the parameter names; warm-up, momentum correction and clipping are the
    runtime's (gradcomm_scalecom_recipe_f32)."""

    def __init__(self, model, options, ranks=1, reasons=None):
        """`reasons`: dense_reasons' answer where the parameters are not
        `model`'s own (FSDP's flat parameters); policy="auto" then needs
        `model`'s parameters and is refused."""
        self.options = options
        if reasons is not None and options.policy == "auto":
            raise ValueError("policy='auto' needs the model's parameters")
        self.dense_reasons = (dense_parameters(model, options)
                              if reasons is None else reasons)
        # policy="auto": {name: ratio, or 0 for dense} for the parameters
        # neither a preset nor an override decides.
        self.auto = {}
        if options.policy == "auto":
            module = getattr(model, "module", model)
            undecided = {name: p.numel() for name, p in
                         module.named_parameters()
                         if p.numel() >= options.min_elements and
                         name not in self.dense_reasons and
                         self.override(name) is None}
            self.auto = cost_model.choose(
                undecided, ranks, options.auto_ratios,
                options.auto_tolerance, dict(options.cluster),
                chunk=options.selection == "chunk")

    def override(self, name):
        for pattern, value in self.options.overrides:
            if fnmatch.fnmatchcase(name, pattern):
                return value
        return None

    def ratio(self, name):
        """The ratio `name` is compressed at, or None when the presets or
        an override keep it dense (overrides win over presets)."""
        value = self.override(name)
        if value == "dense":
            return None
        if value is None and name in self.dense_reasons:
            return None
        if value is None and name in self.auto:
            return float(self.auto[name]) if self.auto[name] else None
        return float(value) if value is not None else self.options.ratio

    def k_and_chunk(self, name, count):
        """(k, chunk size) for `count` values of `name` after the warm-up
        (which the runtime applies), or None when the parameter stays
        dense (or is smaller than min_elements)."""
        options = self.options
        if count < options.min_elements:
            return None
        ratio = self.ratio(name)
        if ratio is None:
            return None
        overridden = self.override(name) is not None
        if options.selection == "chunk":
            chunk = (options.chunk_size if options.chunk_size and
                     not overridden else max(1, round(ratio)))
            return -(-count // chunk), chunk
        if options.k is not None and not overridden:
            return min(options.k, count), 0
        return min(max(1, math.ceil(count / max(1, round(ratio)))),
                   count), 0

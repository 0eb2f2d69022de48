//===- GradCommOps.td - GradComm operations ----------------*- tablegen -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMOPS_TD
#define GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMOPS_TD

include "gradcomm/Dialect/GradComm/IR/GradCommBase.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/SymbolInterfaces.td"

class GradComm_Op<string mnemonic, list<Trait> traits = []>
    : Op<GradComm_Dialect, mnemonic, traits>;

/// Arguments every collective shares: the group is named like upstream
/// `shard` collectives, by a `shard.grid` symbol and a list of its axes.
defvar GradComm_GroupArgs = (ins
  FlatSymbolRefAttr:$grid,
  DenseI16ArrayAttr:$grid_axes
);

/// Effects of an op that communicates.
defvar GradComm_CommEffects = [MemRead<GradComm_CommResource>,
                               MemWrite<GradComm_CommResource>];

//===----------------------------------------------------------------------===//
// StateOp
//===----------------------------------------------------------------------===//

def GradComm_StateOp : GradComm_Op<"state", [
    Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "Declares persistent per-rank state: a step counter and, "
                "optionally, an error-feedback memory";
  let description = [{
    Declares a named piece of state that lives across training steps on every
    rank. Every state has a step counter (an unsigned 64-bit integer, zero at
    start). With a type, it also has a memory buffer of that tensor type,
    zero-initialized on first use; the memory holds gradient-scale quantities
    (the learning rate is applied later, by the parameter update).

    The runtime owns the storage, on the rank's device, looks it up by the
    symbol name and saves and restores it in checkpoints, so names should be
    stable and readable (the ScaleCom pass derives them from the gradient
    they serve).

    `gradcomm.cltk_compress`, `gradcomm.memory_update` and
    `gradcomm.local_topk_all_gather` need a state with a memory whose type
    equals their gradient type; `gradcomm.gossip_exchange` needs a
    counter-only state.

    Example:

    ```mlir
    // Memory + step counter for one compressed gradient.
    gradcomm.state @fc1_weight_grad : tensor<784x128xf32>
    // Step counter only (gossip schedule).
    gradcomm.state @fc1_weight_gossip
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    OptionalAttr<TypeAttrOf<AnyRankedTensor>>:$memory_type
  );
  let assemblyFormat = "$sym_name (`:` $memory_type^)? attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True when the state has a memory buffer besides its counter.
    bool hasMemory() { return getMemoryType().has_value(); }
    /// The memory type; only valid when hasMemory().
    ::mlir::RankedTensorType getMemoryTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(*getMemoryType());
    }
  }];
}

//===----------------------------------------------------------------------===//
// CltkCompressOp
//===----------------------------------------------------------------------===//

def GradComm_CltkCompressOp : GradComm_Op<"cltk_compress", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<!listconcat([MemRead<GradComm_StateResource>],
                              GradComm_CommEffects)>]> {
  let summary = "Cyclic local top-k compression: accumulate, select on the "
                "leader, broadcast the indices, gather k values";
  let description = [{
    One ScaleCom compression step on every rank i of the group:

    ```
    p_i = m_i + g_i                          # error-feedback accumulation
    l   = t mod n                            # cyclic leader
    I   = select(|p_l|, k) on rank l, broadcast to the group
    v_i = p_i[I]                             # this rank's own k values
    ```

    `m_i` and `t` are the memory and step counter of `state`, which this op
    reads but does not change (`gradcomm.memory_update` writes the memory and
    advances the counter). The indices are always the leader's, broadcast;
    no rank recomputes them.

    `selection = exact` takes the true top-k of `|p_l|`, ties going to the
    lower flat index. `selection = chunk` takes the top-1 of `|p_l|` in every
    chunk of `chunk_size` consecutive elements (row-major flat order), so `k`
    must be `ceil(N / chunk_size)`. Indices are flat row-major offsets into
    the gradient, as `i64`, in increasing order.

    The training recipe (docs/scalecom.md, "The recipe") rides on this op
    and applies to the compress, its `sparse_all_reduce` and its
    `memory_update` together, which then lower to one fused runtime call
    (`gradcomm_scalecom_recipe_f32`):

    * `clip = c`: g is first scaled to an L2 norm of at most c (local
      clipping);
    * `warmup_steps = W`: in the state's first W steps (every step counts)
      the three ops compute a dense all-reduce of g and leave the memory
      alone, or, with `warmup_ramp_from = s`, send k_t >= k values, with the
      ratio rising geometrically from s to N / k (exact selection);
    * `momentum = mu` (momentum correction, deep gradient compression's):
      the velocity u' = mu u + g (with `nesterov`, g + mu u' is sent) takes
      g's place in everything above, and u = u' is masked to zero at the
      sent indices. The velocity is a second runtime state,
      `<state>.velocity`. The step's optimizer must then be plain SGD: the
      result already carries the momentum;
    * `dense`: every step is a dense all-reduce (the memory is never used),
      so a gradient the policy keeps dense still gets its velocity under
      `momentum`.

    Example:

    ```mlir
    %v, %i = gradcomm.cltk_compress %g state @w_grad on @grid grid_axes = [0]
        k = 64 selection = chunk chunk_size = 16
        : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
    %v2, %i2 = gradcomm.cltk_compress %g state @w_grad on @grid
        grid_axes = [0] k = 64 selection = exact
        {warmup_steps = 100 : i64, clip = 1.0 : f32}
        : tensor<32x32xf32> -> tensor<64xf32>, tensor<64xi64>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$state),
    GradComm_GroupArgs, (ins
    I64Attr:$k,
    GradComm_Selection:$selection,
    OptionalAttr<I64Attr>:$chunk_size,
    OptionalAttr<I64Attr>:$warmup_steps,
    OptionalAttr<F32Attr>:$warmup_ramp_from,
    OptionalAttr<F32Attr>:$clip,
    OptionalAttr<F32Attr>:$momentum,
    UnitAttr:$nesterov,
    UnitAttr:$dense
  ));
  let extraClassDeclaration = [{
    /// Some part of the training recipe is set (it needs the fused call).
    bool hasRecipe() {
      return getWarmupStepsAttr() || getWarmupRampFromAttr() ||
             getClipAttr() || getMomentumAttr() || getDense();
    }
  }];
  let results = (outs
    AnyRankedTensor:$values,
    AnyRankedTensor:$indices
  );
  let assemblyFormat = [{
    $input `state` $state `on` $grid `grid_axes` `=` $grid_axes
    `k` `=` $k `selection` `=` $selection
    (`chunk_size` `=` $chunk_size^)?
    attr-dict `:` type($input) `->` type($values) `,` type($indices)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SparseAllReduceOp
//===----------------------------------------------------------------------===//

def GradComm_SparseAllReduceOp : GradComm_Op<"sparse_all_reduce", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<GradComm_CommEffects>]> {
  let summary = "Reduces k values at shared indices across the group and "
                "scatters them into the dense shape";
  let description = [{
    Every rank of the group contributes `values` at the same `indices` (the
    leader's, from `gradcomm.cltk_compress`), so one dense all-reduce of k
    values suffices. `reduction = average` divides the sum by the group size;
    `sum` does not. The result has the dense gradient shape: the reduced
    values at `indices` (flat row-major offsets), zero elsewhere.

    Example:

    ```mlir
    %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
        reduction = average
        : tensor<64xf32>, tensor<64xi64> -> tensor<32x32xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$values,
    AnyRankedTensor:$indices),
    GradComm_GroupArgs, (ins
    GradComm_Reduction:$reduction
  ));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $values `,` $indices `on` $grid `grid_axes` `=` $grid_axes
    `reduction` `=` $reduction
    attr-dict `:` type($values) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// SparseReduceScatterOp
//===----------------------------------------------------------------------===//

def GradComm_SparseReduceScatterOp : GradComm_Op<"sparse_reduce_scatter", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<GradComm_CommEffects>]> {
  let summary = "Reduces k values at shared indices across the group and "
                "keeps this rank's shard of the dense result";
  let description = [{
    The sharded counterpart of `gradcomm.sparse_all_reduce`, for gradients
    that `shard.reduce_scatter` would reduce (sharded data parallelism,
    ZeRO-2/3, FSDP). Every rank of the group contributes `values` at the
    same `indices` (the leader's, from `gradcomm.cltk_compress`: flat
    row-major offsets into the whole, unsharded gradient, ascending). The
    reduced dense gradient is cut along `scatter_axis` as
    `shard.reduce_scatter` cuts it, and this rank keeps its part: the
    reduced values at the indices that fall in it, zero elsewhere.
    `reduction = average` divides the sum by the group size.

    One index set for every rank is what makes this exact: the sum of the
    selected values commutes with cutting the result into shards, so each
    rank only receives the values of its own shard (about k / n of them).

    `scatter_axis` must be 0: a shard is then one contiguous run of the
    flat indices, which the runtime reduce-scatters in one call. The result
    is the dense gradient's type with dimension 0 divided by the group
    size.

    Example (a 32x32 gradient over 2 ranks):

    ```mlir
    %s = gradcomm.sparse_reduce_scatter %v, %i on @grid grid_axes = [0]
        reduction = sum scatter_axis = 0
        : tensor<64xf32>, tensor<64xi64> -> tensor<16x32xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$values,
    AnyRankedTensor:$indices),
    GradComm_GroupArgs, (ins
    GradComm_Reduction:$reduction,
    IndexAttr:$scatter_axis
  ));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $values `,` $indices `on` $grid `grid_axes` `=` $grid_axes
    `reduction` `=` $reduction `scatter_axis` `=` $scatter_axis
    attr-dict `:` type($values) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// MemoryUpdateOp
//===----------------------------------------------------------------------===//

def GradComm_MemoryUpdateOp : GradComm_Op<"memory_update", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<[MemRead<GradComm_StateResource>,
                   MemWrite<GradComm_StateResource>]>]> {
  let summary = "Low-pass-filtered error-feedback memory update; advances "
                "the step counter";
  let description = [{
    Updates the memory of `state` with the rank's own compressed values:

    ```
    p = m + g
    m = (1 - beta) * m + beta * (p - scatter(I, p[I]))
    t = t + 1
    ```

    Elementwise: outside the indices `m += beta * g`; at the indices
    `m = (1 - beta) * m`. `beta = 1` is plain error feedback (`m = p - c`);
    `beta` must lie in (0, 1]. It must follow the `gradcomm.cltk_compress`
    of the same step (which reads the memory before this op changes it).

    Example:

    ```mlir
    gradcomm.memory_update %g, %i state @w_grad beta = 0.5
        : tensor<32x32xf32>, tensor<64xi64>
    ```
  }];
  let arguments = (ins
    AnyRankedTensor:$input,
    AnyRankedTensor:$indices,
    FlatSymbolRefAttr:$state,
    F64Attr:$beta
  );
  let assemblyFormat = [{
    $input `,` $indices `state` $state `beta` `=` $beta
    attr-dict `:` type($input) `,` type($indices)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// LocalTopkAllGatherOp
//===----------------------------------------------------------------------===//

def GradComm_LocalTopkAllGatherOp : GradComm_Op<"local_topk_all_gather", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    MemoryEffects<!listconcat([MemRead<GradComm_StateResource>,
                               MemWrite<GradComm_StateResource>],
                              GradComm_CommEffects)>]> {
  let summary = "Baseline: local top-k with error feedback, all-gather of "
                "values and indices, summed";
  let description = [{
    The baseline ScaleCom improves on. Every rank selects its own exact top-k
    of `p_i = m_i + g_i`, keeps the rest in its memory (`m_i = p_i - c_i`,
    plain error feedback) and all-gathers its k values and k indices; the
    result is the sum (or, with `reduction = average`, the mean) of the n
    sparse vectors in the dense shape. Because the index sets differ, their
    union grows towards n * k ("gradient build-up") and so does the traffic.
    Advances the step counter of `state`.

    Example:

    ```mlir
    %r = gradcomm.local_topk_all_gather %g state @w_grad on @grid
        grid_axes = [0] k = 64 reduction = average
        : tensor<32x32xf32> -> tensor<32x32xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$state),
    GradComm_GroupArgs, (ins
    I64Attr:$k,
    GradComm_Reduction:$reduction
  ));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `state` $state `on` $grid `grid_axes` `=` $grid_axes
    `k` `=` $k `reduction` `=` $reduction
    attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// GossipExchangeOp
//===----------------------------------------------------------------------===//

def GradComm_GossipExchangeOp : GradComm_Op<"gossip_exchange", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    AllTypesMatch<["input", "result"]>,
    MemoryEffects<!listconcat([MemRead<GradComm_StateResource>,
                               MemWrite<GradComm_StateResource>],
                              GradComm_CommEffects)>]> {
  let summary = "Mixes a tensor with the peer a coordination-free schedule "
                "picks for this step";
  let description = [{
    Gossip averaging with one peer: on the steps where the exchange happens
    (every `period`-th value of the step counter of `state`), rank i and its
    peer j swap their tensors and each computes

    ```
    x_i = (1 - mixing) * x_i + mixing * x_j
    ```

    The peer comes from `schedule`, which every rank evaluates alone from the
    step counter: `matching` (random perfect matching drawn from `seed` and
    the step; with an odd group one rank sits out and keeps its tensor),
    `ring` (left/right neighbour, alternating) or `hypercube`
    (`i XOR 2^(t mod log2 n)`, group size a power of two). The pairing is
    symmetric, so the mixing is doubly stochastic and the mean of the
    replicas is preserved. The counter advances on every call.

    With `mode = async` (gossiping SGD as in Jin et al. 2016) nobody waits:
    the rank pushes its tensor into the peer's mailbox (MPI-3 one-sided)
    and mixes with the freshest copy that arrived in its own, if any; the
    peer may come from any schedule, `random` (an independent draw per rank
    and step) being the paper's. The mixing is then not symmetric.

    Example:

    ```mlir
    %x1 = gradcomm.gossip_exchange %x0 state @w_gossip on @grid
        grid_axes = [0] schedule = matching mixing = 0.5 seed = 7 period = 1
        : tensor<32x32xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$state),
    GradComm_GroupArgs, (ins
    GradComm_Schedule:$schedule,
    F64Attr:$mixing,
    DefaultValuedAttr<I64Attr, "0">:$seed,
    DefaultValuedAttr<I64Attr, "1">:$period,
    DefaultValuedAttr<GradComm_ExchangeMode,
                      "::mlir::gradcomm::ExchangeMode::Sync">:$mode
  ));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `state` $state `on` $grid `grid_axes` `=` $grid_axes
    `schedule` `=` $schedule `mixing` `=` $mixing
    `seed` `=` $seed `period` `=` $period (`mode` `=` $mode^)?
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// ElasticAverageOp
//===----------------------------------------------------------------------===//

def GradComm_ElasticAverageOp : GradComm_Op<"elastic_average", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    AllTypesMatch<["input", "result"]>,
    MemoryEffects<!listconcat([MemRead<GradComm_StateResource>,
                               MemWrite<GradComm_StateResource>],
                              GradComm_CommEffects)>]> {
  let summary = "Pulls a replica toward the center variable and moves the "
                "center toward the replicas (synchronous EASGD)";
  let description = [{
    Elastic averaging SGD (Zhang et al. 2015) with the center variable `c`
    replicated in `state`, a state of the input's type (checkpointed like
    any state). The state's first call sets `c` to the mean of the
    replicas. On every `period`-th value of the state's step counter (tau
    in the paper), with `d_i = x_i - c` on rank i:

    ```
    x_i = x_i - alpha * d_i
    c   = c + alpha * sum_i d_i      (one all-reduce of d)
    ```

    `n * alpha` is the center's moving rate (beta in the paper) and must be
    at most 1; `sum_i x_i + c` is unchanged by an exchange. The counter
    advances on every call.

    With `mode = async` the center lives in rank 0's memory (an MPI-3
    window): each rank reads it, moves by `e = alpha (x_i - c)` and adds `e`
    to it (an atomic accumulate), without waiting for the others. With
    `center = sharded` as well, rank r's memory holds elements
    `[r N / n, (r + 1) N / n)` of the center (N elements) and each exchange
    visits the parts one at a time, so rank 0's link does not carry every
    worker's traffic. `center = sharded` needs `mode = async`.

    Example:

    ```mlir
    %x1 = gradcomm.elastic_average %x0 state @w_easgd on @grid
        grid_axes = [0] alpha = 0.225 period = 4 : tensor<32x32xf32>
    ```
  }];
  let arguments = !con((ins
    AnyRankedTensor:$input,
    FlatSymbolRefAttr:$state),
    GradComm_GroupArgs, (ins
    F64Attr:$alpha,
    DefaultValuedAttr<I64Attr, "1">:$period,
    DefaultValuedAttr<GradComm_ExchangeMode,
                      "::mlir::gradcomm::ExchangeMode::Sync">:$mode,
    DefaultValuedAttr<GradComm_CenterPlacement,
                      "::mlir::gradcomm::CenterPlacement::Rank0">:$center
  ));
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `state` $state `on` $grid `grid_axes` `=` $grid_axes
    `alpha` `=` $alpha `period` `=` $period (`mode` `=` $mode^)?
    (`center` `=` $center^)? attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

#endif // GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMOPS_TD

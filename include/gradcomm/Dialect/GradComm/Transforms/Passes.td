//===- Passes.td - GradComm transformation passes ----------*- tablegen -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_PASSES_TD
#define GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def ScaleComRewritePass : Pass<"gradcomm-scalecom", "::mlir::ModuleOp"> {
  let summary = "Rewrite gradient shard.all_reduce ops into ScaleCom "
                "compressed communication";
  let description = [{
    Rewrites every eligible gradient `shard.all_reduce` into a
    `gradcomm.state` declaration (error-feedback memory + step counter),
    `gradcomm.cltk_compress`, `gradcomm.sparse_all_reduce` and
    `gradcomm.memory_update`. With k = N the replacement computes exactly
    what the all-reduce computed (a `sum` stays a sum, an `average` an
    average).

    With `momentum` (momentum correction, docs/scalecom.md "The recipe")
    the runtime keeps each gradient's velocity: compressed gradients get
    `momentum` on their `cltk_compress`, and every gradient all-reduce the
    policy leaves dense becomes the same three ops with `dense` and k = N,
    so it still gets its velocity. The exported step must be plain SGD.
    A gradient that cannot take that path (a reduce-scatter, an f64 or
    `max` all-reduce) is an error, never a silent loss of momentum.

    Gradient `shard.reduce_scatter` ops (sharded data parallelism) are
    rewritten the same way, with `gradcomm.sparse_reduce_scatter` in place
    of the sparse all-reduce: the selection runs over the whole local
    gradient, each rank keeps its shard. Only `scatter_axis = 0` over a grid
    axis of static size is compressed, with the cltk compressor and a dense
    warm-up (docs/scalecom.md, "Sharded training").

    An all-reduce is a gradient when its result reaches a parameter update
    (a returned value computed from a function argument of the same type)
    through elementwise ops, or when the user marks it with
    `gradcomm.policy = "scalecom"` (on the op or on the parameter's function
    argument). It must reduce a statically shaped f32 tensor with `sum` or
    `average` over exactly one grid axis, and have at least `min-elements`
    elements (unless marked). Everything else stays dense; with
    `report=true` the pass says, per all-reduce, what it did and why.

    Per-op overrides: attributes `gradcomm.ratio`, `gradcomm.k`,
    `gradcomm.beta`, `gradcomm.selection` ("exact" | "chunk"),
    `gradcomm.chunk_size` and `gradcomm.policy` ("dense" | "scalecom") on the
    all-reduce, or on the parameter's function argument; the op's win.
    `gradcomm.name` on the argument names the parameter (state names,
    `include`/`exclude`).

    `policy=auto` chooses per tensor between dense and ScaleCom at each of
    `auto-ratios`, from the predicted communication and kernel time of
    `lib/Analysis/CostModel` on the cluster the options describe (ranks
    from the grid axis). The least compressed choice within
    `auto-tolerance` of the fastest wins, so compression is used only where
    it buys time. Per-op and per-argument `gradcomm.ratio`, `gradcomm.k`,
    `gradcomm.chunk_size` and `gradcomm.policy` still win; `report=true`
    prints every prediction behind each choice (docs/scaling.md).

    Example:

    ```mlir
    %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
        : tensor<256x64xf32> -> tensor<256x64xf32>
    ```

    becomes, with `ratio=100` and the recipe's defaults (beta 0.5, 100
    dense warm-up steps; docs/scalecom.md):

    ```mlir
    gradcomm.state @step_arg0_grad : tensor<256x64xf32>
    ...
    %v, %i = gradcomm.cltk_compress %g state @step_arg0_grad on @grid
        grid_axes = [0] k = 164 selection = exact {warmup_steps = 100 : i64}
        : tensor<256x64xf32> -> tensor<164xf32>, tensor<164xi64>
    %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
        reduction = average
        : tensor<164xf32>, tensor<164xi64> -> tensor<256x64xf32>
    gradcomm.memory_update %g, %i state @step_arg0_grad beta = 0.5
        : tensor<256x64xf32>, tensor<164xi64>
    ```
  }];
  let dependentDialects = ["::mlir::gradcomm::GradCommDialect"];
  let options = [
    Option<"ratio", "ratio", "double", "100.0",
           "Compression ratio N / k; k = ceil(N / ratio)">,
    Option<"k", "k", "int64_t", "0",
           "Fixed k for every compressed tensor (0: use ratio)">,
    Option<"beta", "beta", "double", "0.5",
           "Low-pass coefficient of the memory update, in (0, 1] (default: "
           "the recipe's 0.5, docs/scalecom.md)">,
    Option<"selection", "selection", "::mlir::gradcomm::Selection",
           "::mlir::gradcomm::Selection::Exact",
           "Index selection on the leader",
           [{::llvm::cl::values(
             clEnumValN(::mlir::gradcomm::Selection::Exact, "exact",
                        "true top-k of |m + g|"),
             clEnumValN(::mlir::gradcomm::Selection::Chunk, "chunk",
                        "top-1 per chunk of chunk-size elements"))}]>,
    Option<"chunkSize", "chunk-size", "int64_t", "0",
           "Chunk length for selection=chunk (0: round(ratio))">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "-1",
           "The recipe's warm-up: the first N steps of each compressed "
           "gradient are dense (or ramp up, warmup=ramp); 0: none; -1 "
           "(default): the recipe's 100 with the cltk compressor, none with "
           "local-topk">,
    Option<"warmup", "warmup", "std::string", "\"dense\"",
           "dense (dense all-reduce, memory untouched) or ramp (the ratio "
           "rises geometrically from warmup-start-ratio; exact selection)">,
    Option<"warmupStartRatio", "warmup-start-ratio", "double", "4.0",
           "warmup=ramp: the first step's ratio (>= 1)">,
    Option<"clip", "clip", "double", "0.0",
           "The recipe's local clipping: each gradient is scaled to an L2 "
           "norm of at most this before compression (0: off)">,
    Option<"momentum", "momentum", "double", "0.0",
           "The recipe's momentum correction, in [0, 1) (0: off): the "
           "runtime keeps each gradient's velocity and compresses it; "
           "gradients left dense get theirs through a dense recipe call. "
           "Export the step with plain SGD">,
    Option<"nesterov", "nesterov", "bool", "false",
           "With momentum: send g + momentum u (Nesterov)">,
    Option<"minElements", "min-elements", "int64_t", "1024",
           "Tensors with fewer elements stay dense">,
    ListOption<"exclude", "exclude", "std::string",
               "Parameters (gradcomm.name or argN) whose gradients stay dense">,
    ListOption<"include", "include", "std::string",
               "When given, only these parameters' gradients are compressed">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per all-reduce saying what was done and why">,
    Option<"compressor", "compressor", "std::string", "\"cltk\"",
           "cltk (ScaleCom) or local-topk (the all-gather baseline, exact "
           "local top-k with plain error feedback: selection and beta do "
           "not apply)">,
    Option<"policy", "policy", "std::string", "\"fixed\"",
           "fixed (compress every accepted gradient at `ratio`) or auto "
           "(per tensor, dense or the ratio of `auto-ratios` the cost model "
           "predicts fastest on the cluster described below)">,
    ListOption<"autoRatios", "auto-ratios", "int64_t",
               "policy=auto: the candidate ratios (default 10,100,400)">,
    Option<"autoTolerance", "auto-tolerance", "double", "0.05",
           "policy=auto: the least compressed candidate within this "
           "fraction of the fastest wins">,
    Option<"ranks", "ranks", "int64_t", "0",
           "policy=auto: ranks, when the grid axis has no static size">,
    Option<"bandwidth", "bandwidth", "std::string", "\"\"",
           "policy=auto: link bandwidth, e.g. 1Gbit (default 10Gbit)">,
    Option<"latency", "latency", "std::string", "\"\"",
           "policy=auto: per-message latency, e.g. 5us (the default)">,
    Option<"memoryBandwidth", "memory-bandwidth", "std::string", "\"\"",
           "policy=auto: one rank's memory bandwidth (default 20GB)">,
    Option<"calibration", "calibration", "std::string", "\"\"",
           "policy=auto: a calibration file (gradcomm-calibrate); the "
           "options above win over it">
  ];
}

def GossipRewritePass : Pass<"gradcomm-gossip", "::mlir::ModuleOp"> {
  let summary = "Rewrite gradient all-reduce + parameter update into a local "
                "step followed by a gossip exchange (gossiping SGD)";
  let description = [{
    For each gradient `shard.all_reduce` (the same gradient test as
    `gradcomm-scalecom`: the result reaches a returned parameter update
    through elementwise ops, or the op or parameter is marked
    `gradcomm.policy = "gossip"`):

    * the all-reduce is replaced by its unbiased local estimate, so the
      expected update is unchanged: `average` of g_i becomes g_i, `sum`
      becomes n * g_i (n = the grid axis size, which must be static);
    * the updated parameter (the returned value) passes through
      `gradcomm.gossip_exchange` with a counter-only state
      `@<parameter>_gossip` before it is returned.

    Every other all-reduce stays dense, and `report=true` says why.
    Per-op/per-argument overrides: `gradcomm.policy` ("dense" | "gossip"),
    `gradcomm.schedule`, `gradcomm.mixing`, `gradcomm.period`.

    ```mlir
    %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
        : tensor<64xf32> -> tensor<64xf32>
    %u = arith.subf %w, %r : tensor<64xf32>
    return %u : tensor<64xf32>
    ```

    becomes

    ```mlir
    %u = arith.subf %w, %g : tensor<64xf32>
    %x = gradcomm.gossip_exchange %u state @step_arg0_gossip on @grid
        grid_axes = [0] schedule = matching mixing = 0.5 seed = 0 period = 1
        : tensor<64xf32>
    return %x : tensor<64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gradcomm::GradCommDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"schedule", "schedule", "::mlir::gradcomm::Schedule",
           "::mlir::gradcomm::Schedule::Matching", "Peer schedule",
           [{::llvm::cl::values(
             clEnumValN(::mlir::gradcomm::Schedule::Matching, "matching",
                        "shared-seed random perfect matching"),
             clEnumValN(::mlir::gradcomm::Schedule::Ring, "ring",
                        "alternating left/right neighbour"),
             clEnumValN(::mlir::gradcomm::Schedule::Hypercube, "hypercube",
                        "rank XOR 2^(step mod log2 n)"),
             clEnumValN(::mlir::gradcomm::Schedule::Random, "random",
                        "independent random peer per rank and step "
                        "(mode=async only)"))}]>,
    Option<"mixing", "mixing", "double", "0.5",
           "Mixing weight a in (0, 1): x = (1 - a) x + a x_peer">,
    Option<"seed", "seed", "int64_t", "0", "Shared seed of the matching">,
    Option<"mode", "mode", "::mlir::gradcomm::ExchangeMode",
           "::mlir::gradcomm::ExchangeMode::Sync",
           "sync: exchanges meet; async: MPI-3 one-sided, nobody waits",
           [{::llvm::cl::values(
             clEnumValN(::mlir::gradcomm::ExchangeMode::Sync, "sync",
                        "both sides meet"),
             clEnumValN(::mlir::gradcomm::ExchangeMode::Async, "async",
                        "one-sided, without waiting"))}]>,
    Option<"period", "period", "int64_t", "1", "Exchange every p steps">,
    Option<"minElements", "min-elements", "int64_t", "0",
           "Parameters with fewer elements keep their dense all-reduce">,
    ListOption<"exclude", "exclude", "std::string",
               "Parameters (gradcomm.name or argN) kept dense">,
    ListOption<"include", "include", "std::string",
               "When given, only these parameters are gossiped">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per all-reduce saying what was done and why">
  ];
}

def EasgdRewritePass : Pass<"gradcomm-easgd", "::mlir::ModuleOp"> {
  let summary = "Rewrite gradient all-reduce + parameter update into a local "
                "step followed by elastic averaging (synchronous EASGD)";
  let description = [{
    Elastic averaging SGD (Zhang et al. 2015; docs/gossip.md), with the
    same gradient test, local estimate and overrides as `gradcomm-gossip`:

    * the all-reduce is replaced by its unbiased local estimate (`average`
      of g_i becomes g_i, `sum` becomes n * g_i over a static grid axis);
    * the updated parameter passes through `gradcomm.elastic_average` with
      a state `@<parameter>_easgd` of its type, the replicated center
      variable, before it is returned.

    `alpha` is the elastic coefficient of one replica; when 0 it is
    `moving-rate / n` (the paper's beta / p), which needs a static group
    size. Every other all-reduce stays dense, and `report=true` says why.
    Per-op/per-argument overrides: `gradcomm.policy` ("dense" | "easgd"),
    `gradcomm.period`.

    ```mlir
    %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
        : tensor<64xf32> -> tensor<64xf32>
    %u = arith.subf %w, %r : tensor<64xf32>
    return %u : tensor<64xf32>
    ```

    becomes, on a group of 4 with the defaults,

    ```mlir
    %u = arith.subf %w, %g : tensor<64xf32>
    %x = gradcomm.elastic_average %u state @step_arg0_easgd on @grid
        grid_axes = [0] alpha = 0.225 period = 1 : tensor<64xf32>
    return %x : tensor<64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gradcomm::GradCommDialect",
                           "::mlir::arith::ArithDialect"];
  let options = [
    Option<"alpha", "alpha", "double", "0",
           "Elastic coefficient of one replica in (0, 1/n]; 0: moving-rate / n">,
    Option<"movingRate", "moving-rate", "double", "0.9",
           "The center's moving rate beta = n * alpha in (0, 1], used when "
           "alpha is 0">,
    Option<"period", "period", "int64_t", "1",
           "Exchange with the center every tau steps">,
    Option<"mode", "mode", "::mlir::gradcomm::ExchangeMode",
           "::mlir::gradcomm::ExchangeMode::Sync",
           "sync: exchanges meet; async: MPI-3 one-sided, nobody waits",
           [{::llvm::cl::values(
             clEnumValN(::mlir::gradcomm::ExchangeMode::Sync, "sync",
                        "both sides meet"),
             clEnumValN(::mlir::gradcomm::ExchangeMode::Async, "async",
                        "one-sided, without waiting"))}]>,
    Option<"center", "center", "::mlir::gradcomm::CenterPlacement",
           "::mlir::gradcomm::CenterPlacement::Rank0",
           "mode=async only: the center on rank 0, or sharded over the ranks",
           [{::llvm::cl::values(
             clEnumValN(::mlir::gradcomm::CenterPlacement::Rank0, "rank0",
                        "all of it in rank 0's window"),
             clEnumValN(::mlir::gradcomm::CenterPlacement::Sharded, "sharded",
                        "one shard per rank"))}]>,
    Option<"minElements", "min-elements", "int64_t", "0",
           "Parameters with fewer elements keep their dense all-reduce">,
    ListOption<"exclude", "exclude", "std::string",
               "Parameters (gradcomm.name or argN) kept dense">,
    ListOption<"include", "include", "std::string",
               "When given, only these parameters are averaged elastically">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per all-reduce saying what was done and why">
  ];
}

def BucketAllReducesPass
    : Pass<"gradcomm-bucket-all-reduces", "::mlir::ModuleOp"> {
  let summary = "Fuse neighbouring small all-reduces into one call on a "
                "flat buffer";
  let description = [{
    Every runtime call pays a collective's latency and the agreement
    whatever its size, so many small tensors (biases, norms) spend the
    step's communication in latency. This pass fuses, per block and in
    program order, the `shard.all_reduce` ops of one kind (grid, axes,
    reduction, element type) into buckets of at most `bucket-elements`
    elements, as DDP's gradient buckets do, but at compile time. An op
    joins the open bucket unless its input depends on a member's result;
    the fused call sits where the last member was, on the members'
    flattened inputs inserted into one tensor, and each member's result
    becomes its slice, reshaped back. Side-effect-free ops in between that
    use a member's result (the parameter updates) move below the fused
    call, in their order; one with side effects cannot move, so nothing
    after it joins the bucket. Ops with more elements than the
    limit, dynamic shapes or any `gradcomm.*` attribute (a user's override)
    are left alone. The fused all-reduce is marked `gradcomm.policy =
    "dense"`.

    Run it after the strategy rewrite: what the rewrite compressed or
    turned into gossip is no longer a `shard.all_reduce`, and what is left
    is dense. A bucket sums every element with the others of its message,
    so with 3 or more ranks the MPI algorithm (chosen by message size) may
    add in another order than the unbucketed calls: the same values up to
    rounding, and the same on every rank.

    ```mlir
    %a = shard.all_reduce %x on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
    %b = shard.all_reduce %y on @grid grid_axes = [0] : tensor<2x4xf32> -> tensor<2x4xf32>
    // becomes
    %e = tensor.empty() : tensor<16xf32>
    %0 = tensor.insert_slice %x into %e[0] [8] [1]
    %y1 = tensor.collapse_shape %y [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
    %1 = tensor.insert_slice %y1 into %0[8] [8] [1]
    %r = shard.all_reduce %1 on @grid grid_axes = [0] {gradcomm.policy = "dense"}
    %a = tensor.extract_slice %r[0] [8] [1]
    %b1 = tensor.extract_slice %r[8] [8] [1]
    %b = tensor.expand_shape %b1 [[0, 1]] output_shape [2, 4]
    ```
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
  let options = [
    Option<"bucketElements", "bucket-elements", "int64_t", "262144",
           "Most elements in one bucket (larger tensors stay alone)">,
    Option<"report", "report", "bool", "false",
           "Emit a remark per bucket">
  ];
}

def NameCollectivesPass
    : Pass<"gradcomm-name-collectives", "::mlir::ModuleOp"> {
  let summary = "Stamp the runtime name on every collective that has none";
  let description = [{
    The runtime names each communication op in its messages and counters
    (`gradcomm.runtime_name`). The rewrite passes stamp the ops they create;
    this pass names the rest, once, from the gradient analysis: a gradient
    all-reduce after its parameter (`<parameter>_grad`, the name the ScaleCom
    state of the same gradient gets, so counters line up whichever strategy
    ran), a `sparse_all_reduce` after its state (`<state>_reduce`), anything
    else by position (`<function>_all_reduce_<i>`). Names are unique in the
    module. `convert-gradcomm-to-runtime` reads the stamp and never repeats
    the analysis; the lowering pipeline runs this pass first.

    ```mlir
    %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
        : tensor<64xf32> -> tensor<64xf32>
    // becomes
    %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
        {gradcomm.runtime_name = "step_arg0_grad"}
        : tensor<64xf32> -> tensor<64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::gradcomm::GradCommDialect"];
}

def OutlineKernelsPass
    : Pass<"gradcomm-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Outline each structured op of a step into its own function";
  let description = [{
    Runs on memref IR (after bufferization). Every `linalg` structured op at
    the top level of a function definition moves into a private function
    `@<function>__kernel_<i>` that the step calls, so no function grows with
    the number of parameters: LLVM's optimization and instruction selection
    work per function, and a step with thousands of parameters compiles in
    time linear in their number. The kernels take statically shaped,
    identity-layout buffers as bare pointers (`llvm.bareptr`) and are never
    inlined back (`no_inline`). Constants the op reads are cloned into the
    kernel; other values it reads become arguments. Kernels that come out
    identical (same body and signature: repeated layers, the same optimizer
    update on parameters of one shape) are merged into the first, so LLVM
    compiles each distinct loop nest once. The `scf.if` guards of
    `gradcomm-guard-failed-steps` are looked into as well.

    A bare-pointer kernel's buffer arguments get `llvm.noalias` where every
    call proves it: a written buffer is disjoint from every other argument
    and a read-only one from every written one. Only fresh allocations
    (`memref.alloc`/`alloca`, seen through views) are known to be disjoint,
    from each other and from the caller's arguments; two arguments of the
    step may be one buffer, so an in-place update is never marked. Without
    it, LLVM vectorizes a kernel's loops only behind run-time overlap
    checks, or not at all.

    A bf16 or f16 scalar argument is passed as its bits (`i16`, with an
    `arith.bitcast` on each side): LLVM's x86 backend keeps a bf16 argument
    in a float register and rounds it with a call to `__truncsfbf2`, which
    GCC 12's libgcc does not have.

    ```mlir
    func.func @step(%a: memref<64xf32>, %b: memref<64xf32>) {
      linalg.generic ... ins(%a : memref<64xf32>) outs(%b : memref<64xf32>)
      return
    }
    // becomes
    func.func private @step__kernel_0(%a: memref<64xf32>, %b: memref<64xf32>)
        attributes {llvm.bareptr, no_inline} {
      linalg.generic ... ins(%a : memref<64xf32>) outs(%b : memref<64xf32>)
      return
    }
    func.func @step(%a: memref<64xf32>, %b: memref<64xf32>) {
      call @step__kernel_0(%a, %b) : (memref<64xf32>, memref<64xf32>) -> ()
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"minOps", "min-ops", "int64_t", "0",
           "Only outline from functions with at least this many structured "
           "ops (0: always)">
  ];
}

def FinalizeKernelsPass
    : Pass<"gradcomm-finalize-kernels", "::mlir::ModuleOp"> {
  let summary = "Give outlined kernels internal linkage and no inlining, in "
                "the LLVM dialect";
  let description = [{
    Runs after `convert-func-to-llvm`, which drops `func.func`'s `no_inline`
    and gives private functions external linkage. Every `llvm.func` marked
    `gradcomm.kernel` (by `gradcomm-outline-kernels`) gets internal linkage,
    so two steps linked into one program never clash on a kernel name, and
    `no_inline`, so LLVM keeps it out of line; the marker is removed.

    ```mlir
    llvm.func @step__kernel_0(%a: !llvm.ptr) attributes {gradcomm.kernel}
    // becomes
    llvm.func internal @step__kernel_0(%a: !llvm.ptr) attributes {no_inline}
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ScalarOperandsPass
    : Pass<"gradcomm-scalar-operands", "::mlir::func::FuncOp"> {
  let summary = "Read rank-0 tensor inputs of linalg.generic once, as "
                "scalars";
  let description = [{
    A step's shared scalars (the learning rate, momentum, weight decay)
    arrive as rank-0 tensors and are inputs of every parameter's update:
    with N parameters one tensor has N readers, and One-Shot Bufferize's
    conflict analysis, which walks a value's uses for each of its readers,
    takes time quadratic in N (6.9 s of the 12.5 s compile at 3000
    all-reduces; 0.75 s without the shared input).

    This pass reads each such tensor once, with a `tensor.extract` right
    after its definition (at the start of its block for a block argument),
    and turns every rank-0 input of a `linalg.generic` into that scalar,
    used directly in the body: the input, its indexing map and its block
    argument are removed. The arithmetic is unchanged (the same value
    enters the same operations), so results are bit-identical. Other
    attributes of the op are kept.

    ```mlir
    %u = linalg.generic {indexing_maps = [#id, #scalar, #id], ...}
        ins(%g, %lr : tensor<4xf32>, tensor<f32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %l: f32, %o: f32):
      %m = arith.mulf %a, %l : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    // becomes
    %lrs = tensor.extract %lr[] : tensor<f32>
    ...
    %u = linalg.generic {indexing_maps = [#id, #id], ...}
        ins(%g : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%a: f32, %o: f32):
      %m = arith.mulf %a, %lrs : f32
      linalg.yield %m : f32
    } -> tensor<4xf32>
    ```
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def FreeAfterLastUsePass
    : Pass<"gradcomm-free-after-last-use", "::mlir::func::FuncOp"> {
  let summary = "Free each step-local buffer right after its last use";
  let description = [{
    Runs between upstream's `ownership-based-buffer-deallocation` (and the
    canonicalizer after it) and `buffer-deallocation-simplification`. The
    ownership pass frees every buffer of a block in one
    `bufferization.dealloc` at the block's end: a step with N parameters
    holds all of its temporaries until it returns, and the simplification
    pass, which compares the entries of that one op pairwise, takes time
    quadratic in N (1.6 s at 1000 all-reduces, 12 s at 3000).

    This pass takes out of each `bufferization.dealloc` every entry that is
    provably freed unconditionally and used nowhere after its last use in
    the block, and frees it there with `memref.dealloc`:
    * the entry is a `memref.alloc` of the same block and its condition is
      the constant true;
    * no retained value is (a view of) it: each retained value's root,
      through view-like ops, is a known allocation (otherwise the op is
      left alone);
    * every use of it and of its views is in the block (or nested in an
      operation of the block), and none lets it escape: no terminator, no
      operation other than a view-like one that returns a memref from it,
      no call other than to the runtime (`gradcomm_rt_*`, which never keeps
      a pointer after it returns), no store of the memref itself, no other
      deallocation.

    The op keeps its other entries and its retained list, so its results
    (ownership of the retained values) do not change. Linear in the size of
    the function. Peak memory falls too: a temporary lives only as long as
    it is used.

    ```mlir
    %a = memref.alloc() : memref<4xf32>
    linalg.generic ... outs(%a : memref<4xf32>)
    call @gradcomm_rt_scalecom_f32(..., %cast_of_a, ...)
    ... // no more uses of %a
    %r = memref.alloc() : memref<4xf32>
    %o = bufferization.dealloc (%a, %r : ...) if (%true, %true) retain (%r : ...)
    return %r : memref<4xf32>
    // becomes
    %a = memref.alloc() : memref<4xf32>
    linalg.generic ... outs(%a : memref<4xf32>)
    call @gradcomm_rt_scalecom_f32(..., %cast_of_a, ...)
    memref.dealloc %a : memref<4xf32>
    ...
    %o = bufferization.dealloc (%r : ...) if (%true) retain (%r : ...)
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def GuardFailedStepsPass
    : Pass<"gradcomm-guard-failed-steps", "::mlir::ModuleOp"> {
  let summary = "Skip the rest of a step's writes once a runtime call failed";
  let description = [{
    For steps lowered with `convert-gradcomm-to-runtime{on-error=return}`,
    on buffers (after bufferization): in every function that records a
    runtime status (`gradcomm_rt_record`), each run of consecutive
    operations after the first runtime call that may write memory and
    produce no value (loop nests on buffers, copies, stores, calls without
    results) is wrapped in `scf.if` on `gradcomm_rt_step_ok()`. When a
    runtime call fails, no later write happens: arguments the step updates
    in place (parameters, optimizer state) keep their values, and the
    runtime calls after it return the failure without communicating. The
    function still returns normally (its outputs are undefined); the trainer
    reads the status with `gradcomm_take_step_status()`.

    The guards are flat, one level deep, one per run: the pass is linear in
    the size of the step, and `gradcomm-outline-kernels` outlines the loop
    nests inside them as it does at the top level. Operations that produce
    values (allocations, loads, views, the runtime calls) are not guarded:
    what they compute after a failure is never written anywhere that
    outlives the step. Operations inside loops or branches of the step are
    guarded as part of the loop or branch that holds them.

    ```mlir
    %s = call @gradcomm_rt_dense_all_reduce_f32(...)
    call @gradcomm_rt_record(%s) : (i32) -> ()
    linalg.generic ... outs(%w : memref<4xf32>)
    // becomes
    %s = call @gradcomm_rt_dense_all_reduce_f32(...)
    call @gradcomm_rt_record(%s) : (i32) -> ()
    %ok = call @gradcomm_rt_step_ok() : () -> i32
    %c0 = arith.constant 0 : i32
    %go = arith.cmpi ne, %ok, %c0 : i32
    scf.if %go {
      linalg.generic ... outs(%w : memref<4xf32>)
    } {gradcomm.step_guard}
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def HoistCollectivesPass
    : Pass<"gradcomm-hoist-collectives", "::mlir::ModuleOp"> {
  let summary = "Move each gradient all-reduce and ScaleCom compress up to "
                "where its input is ready";
  let description = [{
    On tensors, before `convert-gradcomm-to-runtime`: every `shard.all_reduce`
    and `gradcomm.cltk_compress` moves up its block past the operations
    without memory effects that do not compute its operands (the rest of the
    backward pass, other all-reduces), so it sits right after the operation
    that produces its gradient. An exported step reduces every gradient at
    the end of the backward pass; with `gradcomm-overlap-collectives` the
    reduction of the last layers' gradients then starts while the earlier
    layers' gradients are still being computed. Operations with memory
    effects (other ScaleCom ops, which read and write their state) are not
    crossed. The collectives' order changes the same way on every rank (one
    compiled program). `gradcomm-compile --overlap` runs it after
    `gradcomm-name-collectives`, so positional names do not change.

    ```mlir
    %g1 = linalg.generic ... // gradient of layer 1
    %h = linalg.generic ...  // the rest of the backward pass
    %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = sum
    // becomes
    %g1 = linalg.generic ...
    %r1 = shard.all_reduce %g1 on @grid grid_axes = [0] reduction = sum
    %h = linalg.generic ...
    ```
  }];
}

def OverlapCollectivesPass
    : Pass<"gradcomm-overlap-collectives", "::mlir::ModuleOp"> {
  let summary = "Start dense all-reduces, fused ScaleCom steps, gossip "
                "exchanges and elastic averages where they are, wait for "
                "them where their result is first needed";
  let description = [{
    On buffers (after bufferization), in every function: each
    `gradcomm_rt_dense_all_reduce_f32`, fused `gradcomm_rt_scalecom_f32`,
    `gradcomm_rt_gossip_exchange_f32` and `gradcomm_rt_elastic_average_f32`
    call becomes its started form
    (`gradcomm_rt_*_start_f32`, same arguments, at the same place) and a
    `gradcomm_rt_wait_f32(name, buffer)` as late as the block allows: just
    before the first operation that touches the buffer the call writes (the
    reduced data; ScaleCom's output; the gossiped or averaged replica), or
    that the pass
    cannot see into (a call of another function,
    a terminator). Each status goes to the same handler as the original
    call's (`gradcomm_rt_check` or `gradcomm_rt_record`). The computation in
    between (the rest of the backward pass, the next tensors' selection)
    then runs while the reduction is in flight, and several reductions are
    in flight together. Collectives are still started in program order, so
    every rank starts them in the same order.

    Two buffers are apart when both come from different allocations in the
    function (through casts, subviews and other views); function arguments
    and buffers of unknown origin may alias each other. The wait takes the
    written buffer as an operand, so deallocation passes keep it alive until
    then.

    ```mlir
    %s = call @gradcomm_rt_dense_all_reduce_f32(%name, %g, %c0)
    call @gradcomm_rt_check(%s) : (i32) -> ()
    linalg.generic ... outs(%other : memref<4xf32>)
    linalg.generic ins(%g_view ...) ...
    // becomes
    %s = call @gradcomm_rt_dense_all_reduce_start_f32(%name, %g, %c0)
    call @gradcomm_rt_check(%s) : (i32) -> ()
    linalg.generic ... outs(%other : memref<4xf32>)
    %w = call @gradcomm_rt_wait_f32(%name, %g)
    call @gradcomm_rt_check(%w) : (i32) -> ()
    linalg.generic ins(%g_view ...) ...
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // GRADCOMM_DIALECT_GRADCOMM_TRANSFORMS_PASSES_TD

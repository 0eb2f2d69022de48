//===- GradCommBase.td - GradComm dialect, enums, resources -*- tablegen -*-===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#ifndef GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMBASE_TD
#define GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def GradComm_Dialect : Dialect {
  let name = "gradcomm";
  let cppNamespace = "::mlir::gradcomm";
  let summary = "Communication-efficient gradient exchange for data-parallel training";
  let description = [{
    The `gradcomm` dialect models the gradient communication of a data-parallel
    training step in compressed or decentralized form:

    * **ScaleCom** (Chen et al., NeurIPS 2020): cyclic local top-k (CLT-k)
      compression with an error-feedback memory and a low-pass filter. It is
      decomposed into `gradcomm.cltk_compress` (accumulate, select on the
      cyclic leader, broadcast the indices, gather k values),
      `gradcomm.sparse_all_reduce` (one dense all-reduce of the k values,
      scattered back to the dense shape) and `gradcomm.memory_update` (the
      low-pass-filtered error-feedback update).
    * **Local top-k + all-gather**, the baseline whose traffic grows with the
      group size (`gradcomm.local_topk_all_gather`).
    * **Gossip** (Jin et al. 2016): `gradcomm.gossip_exchange` mixes a tensor
      with one peer chosen by a coordination-free schedule.

    Persistent per-rank state (error-feedback memories and step counters) is
    declared at module level with `gradcomm.state` and referred to by symbol;
    the runtime owns it, on the rank's device, and checkpoints it.

    Process groups are named like upstream `shard` collectives: a `shard.grid`
    symbol and a list of its axes.

    ### Discardable attributes

    Users (and exporters) steer the rewrites with `gradcomm.*` attributes on
    a `shard.all_reduce` or on the parameter's function argument; the passes
    stamp `gradcomm.runtime_name`. The dialect verifies each one: an unknown
    `gradcomm.*` name, a value of the wrong kind or range, or an attribute
    where it has no meaning is an error.

    | attribute | value | on |
    |---|---|---|
    | `gradcomm.policy` | `"dense"`, `"scalecom"`, `"gossip"` or `"easgd"` (force a policy) | all-reduce, argument |
    | `gradcomm.name` | non-empty string: the parameter's name | argument |
    | `gradcomm.ratio` | number > 0: ScaleCom ratio N / k | all-reduce, argument |
    | `gradcomm.k` | integer >= 1: ScaleCom fixed k | all-reduce, argument |
    | `gradcomm.beta` | number in (0, 1]: low-pass coefficient | all-reduce, argument |
    | `gradcomm.selection` | `"exact"` or `"chunk"` | all-reduce, argument |
    | `gradcomm.chunk_size` | integer >= 1 | all-reduce, argument |
    | `gradcomm.schedule` | `"matching"`, `"ring"` or `"hypercube"` | all-reduce, argument |
    | `gradcomm.mixing` | number in (0, 1): gossip mixing weight | all-reduce, argument |
    | `gradcomm.period` | integer >= 1: gossip period | all-reduce, argument |
    | `gradcomm.runtime_name` | non-empty string: the collective's name in runtime messages and counters | all-reduce, gradcomm ops |
    | `gradcomm.kernel` | unit: a function `gradcomm-outline-kernels` created | functions |

    ```mlir
    shard.grid @grid(shape = 4)
    gradcomm.state @fc1_weight_grad : tensor<784x128xf32>

    func.func @step(%g: tensor<784x128xf32>) -> tensor<784x128xf32> {
      %v, %i = gradcomm.cltk_compress %g state @fc1_weight_grad on @grid
          grid_axes = [0] k = 1004 selection = exact
          : tensor<784x128xf32> -> tensor<1004xf32>, tensor<1004xi64>
      %r = gradcomm.sparse_all_reduce %v, %i on @grid grid_axes = [0]
          reduction = average
          : tensor<1004xf32>, tensor<1004xi64> -> tensor<784x128xf32>
      gradcomm.memory_update %g, %i state @fc1_weight_grad beta = 1.0
          : tensor<784x128xf32>, tensor<1004xi64>
      return %r : tensor<784x128xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];

  // The `gradcomm.*` discardable attributes (policy overrides on
  // `shard.all_reduce` ops and parameter arguments, runtime names stamped by
  // the passes) are verified by the dialect: an unknown name or a value of
  // the wrong kind is an error, never silently ignored.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def GradComm_Selection : I32EnumAttr<"Selection",
    "How the leader selects the k indices from its accumulated vector", [
  // True top-k of |p|; ties go to the lower index.
  I32EnumAttrCase<"Exact", 0, "exact">,
  // Top-1 of |p| in every chunk of `chunk_size` consecutive elements.
  I32EnumAttrCase<"Chunk", 1, "chunk">
]> {
  let cppNamespace = "::mlir::gradcomm";
}

def GradComm_Reduction : I32EnumAttr<"Reduction",
    "Reduction of the k values across the group", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Average", 1, "average">
]> {
  let cppNamespace = "::mlir::gradcomm";
}

def GradComm_Schedule : I32EnumAttr<"Schedule",
    "Coordination-free peer schedule of a gossip exchange", [
  // Random perfect matching drawn from (seed, step); odd groups: one rank
  // sits out.
  I32EnumAttrCase<"Matching", 0, "matching">,
  // Left/right neighbour alternating by step and rank parity.
  I32EnumAttrCase<"Ring", 1, "ring">,
  // rank XOR 2^(step mod log2 n); the group size must be a power of two.
  I32EnumAttrCase<"Hypercube", 2, "hypercube">,
  // An independent random peer per rank and step (seed, rank, step); not a
  // pairing, so asynchronous exchanges only.
  I32EnumAttrCase<"Random", 3, "random">
]> {
  let cppNamespace = "::mlir::gradcomm";
}

def GradComm_ExchangeMode : I32EnumAttr<"ExchangeMode",
    "Whether a parameter exchange waits for its peers", [
  // Both sides of an exchange meet (a paired swap, an all-reduce).
  I32EnumAttrCase<"Sync", 0, "sync">,
  // MPI-3 one-sided: push and mix, or read and move the center, without
  // waiting for any other rank.
  I32EnumAttrCase<"Async", 1, "async">
]> {
  let cppNamespace = "::mlir::gradcomm";
}

def GradComm_CenterPlacement : I32EnumAttr<"CenterPlacement",
    "Where an asynchronous EASGD center lives", [
  // All of it in rank 0's window: every worker's traffic goes to rank 0.
  I32EnumAttrCase<"Rank0", 0, "rank0">,
  // One contiguous shard per rank: the traffic is spread over every link.
  I32EnumAttrCase<"Sharded", 1, "sharded">
]> {
  let cppNamespace = "::mlir::gradcomm";
}

def GradComm_Policy : I32EnumAttr<"Policy",
    "How one gradient all-reduce is communicated (gradcomm.policy)", [
  I32EnumAttrCase<"Dense", 0, "dense">,
  I32EnumAttrCase<"ScaleCom", 1, "scalecom">,
  I32EnumAttrCase<"Gossip", 2, "gossip">,
  I32EnumAttrCase<"Easgd", 3, "easgd">
]> {
  let cppNamespace = "::mlir::gradcomm";
}

//===----------------------------------------------------------------------===//
// Side-effect resources
//===----------------------------------------------------------------------===//

/// The persistent per-rank state (memories and counters) owned by the runtime.
def GradComm_StateResource : Resource<"::mlir::gradcomm::StateResource">;
/// The communicator: every collective reads and writes it, so no two
/// collectives are merged, reordered against each other or dropped.
def GradComm_CommResource : Resource<"::mlir::gradcomm::CommResource">;

#endif // GRADCOMM_DIALECT_GRADCOMM_IR_GRADCOMMBASE_TD

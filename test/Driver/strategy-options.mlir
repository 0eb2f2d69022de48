// The strategy flags of gradcomm-compile are the pipeline option structs'
// own options: they reach the rewrite, are refused for a strategy they do
// not belong to, and are validated by the options' parsers.

// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=scalecom --ratio=8 --selection chunk --min-elements=0 --report 2>&1 | FileCheck %s --check-prefix=SCALECOM
// SCALECOM: remark: gradcomm-scalecom: compressed 'tensor<64xf32>' with k = 8 of 64, selection = chunk, chunk_size = 8

// --bucket-elements runs gradcomm-bucket-all-reduces after the rewrite.
// RUN: not gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=dense --bucket-elements=-1 2>&1 | FileCheck %s --check-prefix=BUCKET
// BUCKET: gradcomm-compile: --bucket-elements must be >= 0 (0: off), got -1

// Gossip honours --min-elements (the old driver dropped it).
// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=gossip --min-elements=100 --report 2>&1 | FileCheck %s --check-prefix=GOSSIP
// GOSSIP: remark: gradcomm-gossip: left dense: 64 elements < min-elements (100)

// Elastic averaging: --period and --moving-rate reach gradcomm-easgd;
// --mixing is gossip's.
// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=easgd --period=4 --moving-rate=0.5 --report 2>&1 | FileCheck %s --check-prefix=EASGD
// EASGD: remark: gradcomm-easgd: elastically averaged parameter 'w': local gradient, alpha = 0.125, period = 4, center @w_easgd
// The asynchronous strategies: mode=async, random peers for gossip unless
// --schedule is given, and --mode is theirs to set.
// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=gossip-async --report 2>&1 | FileCheck %s --check-prefix=GOSSIP-ASYNC
// GOSSIP-ASYNC: gossiped parameter 'w': local gradient, schedule = random, mixing = 0.5, period = 1, mode = async
// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=gossip-async --schedule=ring --report 2>&1 | FileCheck %s --check-prefix=GOSSIP-RING
// GOSSIP-RING: schedule = ring, mixing = 0.5, period = 1, mode = async
// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=easgd-async --report 2>&1 | FileCheck %s --check-prefix=EASGD-ASYNC
// EASGD-ASYNC: alpha = 0.225, period = 1, mode = async, center @w_easgd
// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=easgd-async --center=sharded --report 2>&1 | FileCheck %s --check-prefix=EASGD-SHARDED
// EASGD-SHARDED: alpha = 0.225, period = 1, mode = async, center = sharded, center @w_easgd
// RUN: not gradcomm-compile %s -o %t.o --strategy=easgd-async --mode=sync 2>&1 | FileCheck %s --check-prefix=ASYNC-MODE
// ASYNC-MODE: gradcomm-compile: --strategy=easgd-async is asynchronous: leave out --mode
// RUN: not gradcomm-compile %s -o %t.o --strategy=easgd --mixing=0.5 2>&1 | FileCheck %s --check-prefix=EASGD-WRONG
// EASGD-WRONG: gradcomm-compile: --mixing does not apply to --strategy=easgd (not an option of gradcomm-easgd-pipeline)

// RUN: gradcomm-compile %s -o %t.mlir --emit=mlir --strategy=scalecom --exclude=w --report 2>&1 | FileCheck %s --check-prefix=EXCLUDE
// EXCLUDE: remark: gradcomm-scalecom: left dense: parameter 'w' is in 'exclude'

// RUN: not gradcomm-compile %s -o %t.o --strategy=gossip --ratio=8 2>&1 | FileCheck %s --check-prefix=WRONG
// WRONG: gradcomm-compile: --ratio does not apply to --strategy=gossip (not an option of gradcomm-gossip-pipeline)

// RUN: not gradcomm-compile %s -o %t.o --strategy=dense --mixing=0.3 2>&1 | FileCheck %s --check-prefix=DENSE
// DENSE: gradcomm-compile: --mixing does not apply to --strategy=dense (it communicates densely)

// RUN: not gradcomm-compile %s -o %t.o --schedule=star --strategy=gossip 2>&1 | FileCheck %s --check-prefix=BADVALUE
// BADVALUE: Cannot find option named 'star'
// BADVALUE: gradcomm-compile: invalid strategy option in 'schedule=star'

// RUN: not gradcomm-compile %s -o %t.o --compressor=local-topk 2>&1 | FileCheck %s --check-prefix=COMPRESSOR
// COMPRESSOR: choose the compressor with --strategy=scalecom|local-topk

// RUN: gradcomm-compile --help | FileCheck %s --check-prefix=HELP
// HELP: STRATEGY OPTIONS
// HELP: --ratio=<value> {{ *}}Compression ratio N / k
// HELP: --schedule=<value> {{ *}}Peer schedule: matching | ring | hypercube

shard.grid @grid(shape = 4)
func.func @step(%w: tensor<64xf32> {gradcomm.name = "w"}, %g: tensor<64xf32>) -> tensor<64xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<64xf32> -> tensor<64xf32>
  %u = arith.subf %w, %r : tensor<64xf32>
  return %u : tensor<64xf32>
}

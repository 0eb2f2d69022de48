// The CPU a step is compiled for is chosen with --target-cpu, set on every
// function and recorded in the object's .gradcomm.target section.

// RUN: gradcomm-compile %s -o - --emit=llvm --strategy=dense --target-cpu=x86-64-v3 --opt-level=1 | FileCheck %s
// CHECK: @__gradcomm_target = internal constant {{.*}} c"gradcomm-compile target-cpu=x86-64-v3 opt-level=1\00", section ".gradcomm.target"
// CHECK: define {{.*}}@_mlir_ciface_step({{.*}}) #[[ATTRS:[0-9]+]]
// CHECK: attributes #[[ATTRS]] = {{{.*}}"target-cpu"="x86-64-v3"

// RUN: not gradcomm-compile %s -o %t.o --strategy=dense --target-cpu=pentium9000 2>&1 | FileCheck %s --check-prefix=BADCPU
// BADCPU: gradcomm-compile: unknown --target-cpu 'pentium9000'

// RUN: not gradcomm-compile %s -o %t.o --strategy=dense --opt-level=7 2>&1 | FileCheck %s --check-prefix=BADLEVEL
// BADLEVEL: gradcomm-compile: --opt-level must be 0 to 3, got 7

shard.grid @grid(shape = 2)
func.func @step(%w: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %g on @grid grid_axes = [0] reduction = average
      : tensor<8xf32> -> tensor<8xf32>
  %u = arith.subf %w, %r : tensor<8xf32>
  return %u : tensor<8xf32>
}

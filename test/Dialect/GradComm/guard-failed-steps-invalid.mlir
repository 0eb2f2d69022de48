// RUN: gradcomm-opt %s --gradcomm-guard-failed-steps -verify-diagnostics

// A module symbol with the runtime's name and another type is refused.
func.func private @gradcomm_rt_record(i32)
// expected-error@+1 {{'gradcomm_rt_step_ok' is a GradComm runtime function of type}}
func.func private @gradcomm_rt_step_ok() -> i64
func.func @step(%s: i32, %w: memref<4xf32>, %lr: f32) {
  call @gradcomm_rt_record(%s) : (i32) -> ()
  linalg.fill ins(%lr : f32) outs(%w : memref<4xf32>)
  return
}

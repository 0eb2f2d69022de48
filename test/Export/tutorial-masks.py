# nn.TransformerEncoder and nn.Transformer called with a causal mask and no
# is_causal (as PyTorch's tutorials write them) export: the mask is applied
# as given (softmax after adding it) instead of compared with a causal one.
# The zoo's numerics test (test/Python/zoo_step.py) checks such steps
# against eager PyTorch.
# RUN: gradcomm-export %S/Inputs/tutorial.py:encoder_lm --batch 2 --ranks 2 -o %t-encoder.mlir 2>&1 | FileCheck %s --check-prefix=WROTE
# RUN: FileCheck %s --input-file %t-encoder.mlir
# RUN: gradcomm-export %S/Inputs/tutorial.py:seq2seq --batch 2 --ranks 2 -o %t-seq2seq.mlir 2>&1 | FileCheck %s --check-prefix=WROTE
# RUN: FileCheck %s --input-file %t-seq2seq.mlir
# WROTE: gradcomm-export: wrote {{.*}}.mlir
# WROTE-NOT: Traceback
# CHECK: func.func @step(
# CHECK: math.exp
# CHECK: shard.all_reduce

# Ops without a converter: one report of all of them (op, count, the first
# module it is in, the argument shapes), no traceback, nothing written.
# RUN: rm -f %t.mlir %t.json
# RUN: not gradcomm-export %S/Inputs/small.py:cumulative --batch 3 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=OP
# OP: gradcomm-export: error: 4 unsupported op use(s) in 2 group(s); nothing written:
# OP-NEXT: aten.cumsum x2 (first in module 'Cumulative'): no converter for this op (see docs/export.md, 'Adding an op'); arguments: f32 [3, 2], 1
# OP-NEXT: aten.flip x2 (first outside the model's modules: backward pass or optimizer): no converter for this op (see docs/export.md, 'Adding an op'); arguments: f32 [3, 2], [1]
# OP-NOT: Traceback
# RUN: not test -e %t.mlir
# RUN: not test -e %t.json


# RUN: not gradcomm-export %S/Inputs/small.py:unused --batch 2 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=UNUSED
# UNUSED: gradcomm-export: error: parameter 'spare.weight' does not affect the loss (freeze it: requires_grad_(False))

# RUN: not gradcomm-export %S/Inputs/small.py:missing --batch 2 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=FACTORY
# FACTORY: gradcomm-export: error: {{.*}}small.py has no function 'missing'

# RUN: not gradcomm-export %S/Inputs/nowhere.py:tiny --batch 2 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=FILE
# FILE: gradcomm-export: error: no such file: {{.*}}nowhere.py

# A model file is loaded on its own, not run as a script: a module beside it
# is found where the user puts it on the import path, and named when not.
# RUN: rm -f %t.mlir
# RUN: not gradcomm-export %S/Inputs/uses_neighbour.py:tiny --batch 2 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=NEIGHBOUR
# NEIGHBOUR: gradcomm-export: error: {{.*}}uses_neighbour.py imports 'small' from its own folder, which is not on the import path: run gradcomm-export with PYTHONPATH={{.*}}Inputs, or install the models
# NEIGHBOUR-NOT: Traceback
# RUN: not test -e %t.mlir
# RUN: env PYTHONPATH=%S/Inputs gradcomm-export %S/Inputs/uses_neighbour.py:tiny --batch 2 -o %t.mlir
# RUN: test -e %t.mlir

# RUN: not gradcomm-export %S/Inputs/small.py:not_a_spec --batch 2 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=SPEC
# SPEC: gradcomm-export: error: {{.*}}not_a_spec returned int, not a gradcomm.torch.export.StepSpec

# RUN: not gradcomm-export %S/Inputs/small.py:tiny --batch 0 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=BATCH
# BATCH: gradcomm-export: error: batch and ranks must be positive

# RUN: not gradcomm-export %S/Inputs/small.py:tiny --batch 2 --function 1step -o %t.mlir 2>&1 | FileCheck %s --check-prefix=NAME
# NAME: gradcomm-export: error: function name '1step' is not a C identifier

# Data-dependent control flow: the module, the op and the source line that
# read a value; no traceback, nothing written.
# RUN: rm -f %t.mlir %t.json
# RUN: not gradcomm-export %S/Inputs/small.py:branchy --batch 2 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=DATA
# DATA: gradcomm-export: error: data-dependent control flow in module 'gate' (Gate): aten._local_scalar_dense{{.*}} at {{.*}}small.py:{{[0-9]+}}: if h.sum() > 0:{{.*}}nothing written
# DATA-NOT: Traceback
# RUN: not test -e %t.mlir
# RUN: not test -e %t.json

# .item() with no branch on it is refused the same way (a trace of fake
# tensors must not turn the value into a symbol).
# RUN: not gradcomm-export %S/Inputs/small.py:itemized --batch 2 -o %t.mlir 2>&1 | FileCheck %s --check-prefix=ITEM
# ITEM: gradcomm-export: error: data-dependent control flow in module 'Normalized': aten._local_scalar_dense{{.*}} at {{.*}}small.py:{{[0-9]+}}: return h / h.abs().sum().item(){{.*}}nothing written
# RUN: not test -e %t.mlir

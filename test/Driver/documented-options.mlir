// Every flag gradcomm-compile --help prints (the strategy options come from
// the pipeline option structs, their one source) is in docs/compiling.md.
// RUN: gradcomm-compile --help > %t
// RUN: python3 %S/Inputs/check_documented.py %t %S/../../docs/compiling.md | FileCheck %s
// CHECK: documented: {{[0-9]+}} options

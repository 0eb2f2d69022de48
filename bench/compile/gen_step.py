#!/usr/bin/env python3
"""Writes an SPMD training step with N parameters for the compile-time
benchmark (bench/compile/run.sh): each parameter p_i (tensor<SIZExf32>) has
a gradient argument g_i, summed over the ranks by a shard.all_reduce and
applied as p_i - lr * r_i. With --matmul each gradient first comes from a
small matmul of per-rank activations (x_i^T d_i), as in a dense layer.

Usage: gen_step.py N [--size S] [--matmul] [--ranks R] > step.mlir
"""

import argparse
import sys


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("n", type=int)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--matmul", action="store_true")
    parser.add_argument("--ranks", type=int, default=4)
    args = parser.parse_args(argv)
    n, size = args.n, args.size
    out = sys.stdout
    out.write("#id = affine_map<(i) -> (i)>\n")
    out.write("#s = affine_map<(i) -> ()>\n")
    if args.matmul:
        out.write("#mk = affine_map<(m, n, k) -> (k, m)>\n"
                  "#kn = affine_map<(m, n, k) -> (k, n)>\n"
                  "#mn = affine_map<(m, n, k) -> (m, n)>\n")
    out.write("shard.grid @grid(shape = %d)\n" % args.ranks)
    params = []
    for i in range(n):
        params.append('%%p%d: tensor<%dxf32> {gradcomm.name = "layer%d.weight"}'
                      % (i, size, i))
        if args.matmul:
            params.append("%%x%d: tensor<8x64xf32>, %%d%d: tensor<8x64xf32>"
                          % (i, i))
        else:
            params.append("%%g%d: tensor<%dxf32>" % (i, size))
    params.append("%lr: tensor<f32>")
    results = ", ".join("tensor<%dxf32>" % size for _ in range(n))
    out.write("func.func @step(%s) -> (%s) {\n" % (", ".join(params), results))
    for i in range(n):
        if args.matmul:
            # g = reshape(x^T d): 64x64 = 4096 elements.
            out.write(
                "  %%z%d = arith.constant dense<0.0> : tensor<64x64xf32>\n"
                "  %%mm%d = linalg.generic {indexing_maps = [#mk, #kn, #mn], "
                "iterator_types = [\"parallel\", \"parallel\", \"reduction\"]}"
                " ins(%%x%d, %%d%d : tensor<8x64xf32>, tensor<8x64xf32>) "
                "outs(%%z%d : tensor<64x64xf32>) {\n"
                "  ^bb0(%%a: f32, %%b: f32, %%c: f32):\n"
                "    %%m = arith.mulf %%a, %%b : f32\n"
                "    %%s = arith.addf %%c, %%m : f32\n"
                "    linalg.yield %%s : f32\n"
                "  } -> tensor<64x64xf32>\n"
                "  %%g%d = tensor.collapse_shape %%mm%d [[0, 1]] : "
                "tensor<64x64xf32> into tensor<4096xf32>\n"
                % (i, i, i, i, i, i, i))
        out.write("  %%r%d = shard.all_reduce %%g%d on @grid grid_axes = [0] "
                  "reduction = sum : tensor<%dxf32> -> tensor<%dxf32>\n"
                  % (i, i, size, size))
        out.write(
            "  %%e%d = tensor.empty() : tensor<%dxf32>\n"
            "  %%u%d = linalg.generic {indexing_maps = [#id, #id, #s, #id], "
            "iterator_types = [\"parallel\"]} ins(%%p%d, %%r%d, %%lr : "
            "tensor<%dxf32>, tensor<%dxf32>, tensor<f32>) outs(%%e%d : "
            "tensor<%dxf32>) {\n"
            "  ^bb0(%%p: f32, %%g: f32, %%l: f32, %%o: f32):\n"
            "    %%m = arith.mulf %%g, %%l : f32\n"
            "    %%s = arith.subf %%p, %%m : f32\n"
            "    linalg.yield %%s : f32\n"
            "  } -> tensor<%dxf32>\n"
            % (i, size, i, i, i, size, size, i, size, size))
    out.write("  return %s : %s\n}\n" % (
        ", ".join("%%u%d" % i for i in range(n)), results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What torch-mlir's FX importer and TorchToLinalg lowering cover of the
model zoo's training steps, against gradcomm-export's own converters.
A measurement, never a test (bench/export/torch_mlir.sh runs it in an
environment with torch-mlir; docs/design/torch-mlir.md has the results).

For each zoo model: the joint forward-backward graph that gradcomm-export
traces (functionalized ATen, batch 2, one rank, SGD momentum 0.9), with
its buffer updates returned instead of copied into the inputs, decomposed
again with torch-mlir's own table (as its export_and_import does), is
imported with torch_mlir.fx.stateless_fx_import(output_type=
"linalg-on-tensors"). Printed per model: whether the lowering succeeded,
how many ops of torch-mlir's own TMTensor dialect remain, and whether
LLVM 22's mlir-opt (the toolchain GradComm builds with) parses the result.

Usage: torch_mlir_coverage.py <mlir-opt> <work dir> [MODEL...]
"""

import contextlib
import os
import subprocess
import sys
import tempfile
import time

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch_mlir import fx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

import zoo  # noqa: E402
from gradcomm.mlir import ExportError  # noqa: E402
from gradcomm.torch import graph, optim  # noqa: E402
from gradcomm.torch import export as gradcomm_export  # noqa: E402


def joint_graph(name):
    """The forward-backward graph gradcomm-export traces for `name`."""
    captured = []
    original = gradcomm_export.trace

    def capture(fn, args, model=None):
        gm = original(fn, args, model)
        captured.append(gm)
        return gm

    gradcomm_export.trace = capture
    try:
        gradcomm_export.export_step(getattr(zoo, name)(), 2, 1,
                                    optim.make("sgd", momentum=0.9), lr=0.05)
    except ExportError:
        pass  # the graph was traced; the converters refused it
    finally:
        gradcomm_export.trace = original
    return captured[0] if captured else None


def without_input_mutation(gm):
    """copy_(placeholder, value) nodes dropped, the value returned."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    for node in list(gm.graph.nodes):
        if (node.op == "call_function" and graph.aten_name(node.target) ==
                "copy_" and node.args[0].op == "placeholder"):
            old, new = node.args
            output.args = torch.fx.node.map_arg(
                output.args, lambda n, old=old, new=new: new if n is old
                else n)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


@contextlib.contextmanager
def captured_stderr(lines):
    """MLIR prints its diagnostics on file descriptor 2, not into the
    Python exception: collect them into `lines`."""
    with tempfile.TemporaryFile(mode="w+") as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            lines.extend(sink.read().splitlines())


def main():
    mlir_opt, work = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or zoo.ZOO + zoo.NOT_YET
    os.makedirs(work, exist_ok=True)
    print("%-20s %-10s %8s %10s %s" % ("model", "lowering", "seconds",
                                        "tm_tensor", "LLVM 22 parses"))
    for name in names:
        gm = joint_graph(name)
        if gm is None:
            print("%-20s %-10s" % (name, "not traced"))
            continue
        gm = without_input_mutation(gm)
        inputs = [torch.zeros(n.meta["val"].shape, dtype=n.meta["val"].dtype)
                  for n in gm.graph.nodes if n.op == "placeholder"]
        try:
            gm = make_fx(gm, decomposition_table=fx.get_decomposition_table())(
                *inputs)
        except RuntimeError as error:  # zeros as inputs may not trace
            print("%-20s %-10s %8s %10s %s" % (
                name, "no graph", "-", "-", str(error).splitlines()[0][:100]))
            continue
        start = time.time()
        diagnostics = []
        try:
            with captured_stderr(diagnostics):
                text = str(fx.stateless_fx_import(
                    gm, output_type="linalg-on-tensors", model_name="step"))
        except Exception as error:  # torch-mlir reports through exceptions
            lines = [line.strip() for line in diagnostics +
                     str(error).splitlines()]
            first = next((line[line.index("error:"):] for line in lines
                          if "error:" in line), lines[0] if lines else "")
            print("%-20s %-10s %8.1f %10s %s" % (
                name, "failed", time.time() - start, "-", first[:150]))
            continue
        seconds = time.time() - start
        path = os.path.join(work, name + ".mlir")
        with open(path, "w") as f:
            f.write(text)
        parse = subprocess.run([mlir_opt, path, "-o", os.devnull],
                               capture_output=True, text=True)
        verdict = "yes" if parse.returncode == 0 else \
            "no: " + parse.stderr.splitlines()[0].split("error: ")[-1][:70]
        print("%-20s %-10s %8.1f %10d %s" % (
            name, "ok", seconds, text.count("tm_tensor."), verdict))
    return 0


if __name__ == "__main__":
    sys.exit(main())

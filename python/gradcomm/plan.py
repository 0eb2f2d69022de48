"""policy=auto for code outside the compiler (the DDP hooks): per tensor,
dense or ScaleCom at one of the candidate ratios, as gradcomm-plan's cost
model chooses on a described cluster (docs/scaling.md). The model lives in
the compiler's C++ (lib/Analysis/CostModel); this module runs the
gradcomm-plan tool on a generated step with one all-reduce per tensor and
reads its `auto` column, so the hooks and the compiler choose alike.

    choose({"fc1.weight": 100352, "fc1.bias": 128}, ranks=4,
           cluster={"bandwidth": "1Gbit", "latency": "50us"})
    -> {"fc1.weight": 400, "fc1.bias": 0}        # 0: dense
"""

import subprocess
import tempfile

from gradcomm._paths import tool

# gradcomm-plan's cluster flags, by the keys `choose` takes.
CLUSTER_FLAGS = {"bandwidth": "--bandwidth", "latency": "--latency",
                 "memory_bandwidth": "--memory-bandwidth",
                 "calibration": "--calibration"}


class PlanError(RuntimeError):
    pass


def plan_tool():
    """The gradcomm-plan executable (gradcomm._paths.tool: $GRADCOMM_PLAN,
    the package's install, a cmake --install prefix, the source tree's
    build, or PATH)."""
    found = tool("gradcomm-plan", "GRADCOMM_PLAN")
    if not found:
        raise PlanError("policy='auto' needs the gradcomm-plan tool: build "
                        "GradComm, or set GRADCOMM_PLAN")
    return found


def step_mlir(sizes, ranks):
    """A step with one average all-reduce per tensor, located by name."""
    lines = ["shard.grid @grid(shape = %d)" % ranks]
    arguments = ", ".join("%%g%d: tensor<%dxf32>" % (i, n)
                          for i, n in enumerate(sizes.values()))
    results = ", ".join("tensor<%dxf32>" % n for n in sizes.values())
    lines.append("func.func @hook(%s) -> (%s) {" % (arguments, results))
    for i, (name, n) in enumerate(sizes.items()):
        if '"' in name or "\\" in name:
            raise PlanError("tensor name %r has a quote or backslash" % name)
        lines.append('  %%r%d = shard.all_reduce %%g%d on @grid grid_axes = '
                     '[0] reduction = average : tensor<%dxf32> -> '
                     'tensor<%dxf32> loc("%s")' % (i, i, n, n, name))
    lines.append("  return %s : %s" % (
        ", ".join("%%r%d" % i for i in range(len(sizes))), results))
    lines.append("}")
    return "\n".join(lines) + "\n"


def choose(sizes, ranks, ratios=(10, 100, 400), tolerance=0.05,
           cluster=None, chunk=False):
    """{name: the chosen ratio, or 0 for dense} for `sizes` ({name:
    elements}, in order) all-reduced over `ranks` ranks on `cluster`
    (CLUSTER_FLAGS' keys; unset ones: gradcomm-plan's defaults)."""
    if not sizes:
        return {}
    if ranks < 1:
        raise PlanError("ranks must be >= 1, got %r" % ranks)
    unknown = set(cluster or {}) - set(CLUSTER_FLAGS)
    if unknown:
        raise PlanError("unknown cluster keys %s (known: %s)" % (
            sorted(unknown), sorted(CLUSTER_FLAGS)))
    command = [plan_tool(), "--ranks=%d" % ranks,
               "--auto-ratios=%s" % ",".join(str(int(r)) for r in ratios),
               "--auto-tolerance=%r" % float(tolerance)]
    command += ["%s=%s" % (CLUSTER_FLAGS[key], value)
                for key, value in sorted((cluster or {}).items())]
    if chunk:
        command.append("--chunk")
    with tempfile.NamedTemporaryFile("w", suffix=".mlir") as step:
        step.write(step_mlir(sizes, ranks))
        step.flush()
        done = subprocess.run(command + [step.name], capture_output=True,
                              text=True)
    if done.returncode != 0:
        raise PlanError("gradcomm-plan failed: %s" % (
            done.stderr.strip() or done.stdout.strip()))
    choices = {}
    for line in done.stdout.splitlines():
        # A tensor's row: its name first, the choice last.
        fields = line.split()
        if (len(fields) > 2 and fields[0] in sizes and
                fields[0] not in choices and
                (fields[-1] == "dense" or fields[-1].startswith("scalecom-r"))):
            choices[fields[0]] = (0 if fields[-1] == "dense" else
                                  int(fields[-1][len("scalecom-r"):]))
    missing = [name for name in sizes if name not in choices]
    if missing:
        raise PlanError("gradcomm-plan gave no choice for %s:\n%s" % (
            missing, done.stdout))
    return choices

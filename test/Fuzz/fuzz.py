"""Mutation fuzzing of the compiler, sized for CI.

Takes the lit inputs (every test/**/*.mlir), mutates them (delete, duplicate
or swap lines, change numbers, types and names, truncate) with a fixed
seed, and runs each mutant through gradcomm-opt (the ScaleCom and gossip
pipelines, the rewrites, the lowering) and, for a tenth of them,
gradcomm-compile. Every run must end in success or a diagnostic (exit 1)
within a time bound; a signal, a crash report or a timeout fails the test,
and the mutant is kept in the work directory to reproduce it.

Usage: fuzz.py <bin dir> <test dir> <work dir> [--runs N] [--seed S]
"""

import argparse
import glob
import os
import random
import re
import subprocess
import sys

PIPELINES = [
    ["--gradcomm-scalecom-pipeline=ratio=8 report=true"],
    ["--gradcomm-gossip-pipeline"],
    ["--gradcomm-easgd-pipeline=alpha=0.1 report=true"],
    ["--gradcomm-scalecom=min-elements=1"],
    ["--gradcomm-name-collectives", "--convert-gradcomm-to-runtime"],
    ["--gradcomm-to-llvm-pipeline"],
]
COMPILE_FLAGS = [["--strategy=dense"], ["--strategy=scalecom", "--ratio=4"],
                 ["--strategy=gossip"], ["--strategy=local-topk"],
                 ["--strategy=easgd", "--period=2"],
                 ["--strategy=gossip-async"], ["--strategy=easgd-async"]]
TIME_LIMIT = 30


def mutate(text, rng):
    lines = text.split("\n")
    kind = rng.randrange(8)
    i = rng.randrange(len(lines))
    if kind == 0:  # delete a line
        del lines[i]
    elif kind == 1:  # duplicate a line
        lines.insert(i, lines[i])
    elif kind == 2:  # swap two lines
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 3:  # change a number
        numbers = list(re.finditer(r"\b\d+\b", lines[i]))
        if numbers:
            m = rng.choice(numbers)
            value = rng.choice(["0", "1", "2", "3", "7", "64", "-1",
                                "4294967296", "999999999999"])
            lines[i] = lines[i][:m.start()] + value + lines[i][m.end():]
    elif kind == 4:  # change an element type
        lines[i] = re.sub(r"f32|i64|f16|index",
                          lambda _: rng.choice(["f32", "f16", "i64", "i32",
                                                "index", "f64"]), lines[i],
                          count=1)
    elif kind == 5:  # change a reduction, selection or policy keyword
        lines[i] = re.sub(r"\b(sum|average|max|exact|chunk|dense|scalecom|"
                          r"gossip|easgd|matching|ring)\b",
                          lambda _: rng.choice(["sum", "average", "max",
                                                "exact", "chunk", "dense",
                                                "scalecom", "gossip", "easgd",
                                                "bogus"]),
                          lines[i], count=1)
    elif kind == 6:  # rename an SSA value
        names = re.findall(r"%[A-Za-z0-9_.]+", lines[i])
        if names:
            lines[i] = lines[i].replace(rng.choice(names), rng.choice(
                re.findall(r"%[A-Za-z0-9_.]+", text) or ["%x"]), 1)
    else:  # truncate the file
        lines = lines[:i]
    return "\n".join(lines)


def run(command, path):
    try:
        result = subprocess.run(command, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        return "timed out after %d s" % TIME_LIMIT
    stderr = result.stderr.decode(errors="replace")
    if result.returncode < 0 or result.returncode > 1:
        return "exit status %d" % result.returncode
    if "Stack dump" in stderr or "PLEASE submit a bug report" in stderr:
        return "crash report"
    if result.returncode == 1 and "error" not in stderr:
        return "failed without a diagnostic"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("tests")
    parser.add_argument("work")
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    inputs = sorted(p for p in glob.glob(os.path.join(args.tests, "**",
                                                      "*.mlir"),
                                         recursive=True)
                    if "/Fuzz/" not in p)
    sources = [open(p).read().split("// -----")[0] for p in inputs]
    rng = random.Random(args.seed)
    opt = os.path.join(args.bin, "gradcomm-opt")
    compile_tool = os.path.join(args.bin, "gradcomm-compile")
    failures, counts = [], {"opt": 0, "compile": 0}
    for n in range(args.runs):
        source = rng.randrange(len(sources))
        text = sources[source]
        for _ in range(rng.randrange(1, 4)):
            text = mutate(text, rng)
        path = os.path.join(args.work, "mutant.mlir")
        with open(path, "w") as f:
            f.write(text)
        if n % 10 == 9:
            command = [compile_tool, path, "-o",
                       os.path.join(args.work, "mutant.o")] + \
                rng.choice(COMPILE_FLAGS)
            counts["compile"] += 1
        else:
            command = [opt, path] + rng.choice(PIPELINES)
            counts["opt"] += 1
        problem = run(command, path)
        if problem:
            kept = os.path.join(args.work, "failure%d.mlir" % len(failures))
            os.replace(path, kept)
            failures.append("%s: %s (from %s; kept as %s)" % (
                " ".join(command[:1] + command[2:]), problem,
                os.path.relpath(inputs[source], args.tests), kept))
    print("%d mutants (%d through gradcomm-opt, %d through gradcomm-compile)"
          ", seed %d: %d ended in a signal, a crash report or a timeout" % (
              args.runs, counts["opt"], counts["compile"], args.seed,
              len(failures)))
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

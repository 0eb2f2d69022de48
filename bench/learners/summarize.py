"""The tables and plots of bench/learners/study.sh (docs/results.md, "From
2 to 64 learners"): per model, the final test accuracy (whole test set,
mean and sd over the seeds) of every strategy against the number of
learners and against dense at the same number; the values the last step's
compressed tensors combined (ScaleCom: the k every learner shares; local
top-k: the union of the learners' selections) and one learner's bytes in
that step, by the runtime's cost model; with --plan, gradcomm-plan's
predicted step time at 10 Gbit/s for the same learners.

    .venv/bin/python bench/learners/summarize.py [--plot DIR]
        [--plan MODEL=STEP.mlir] [--plan-bin build/bin/gradcomm-plan]
        bench-out/learners/*.json
"""

import argparse
import collections
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

RUN_NAME = re.compile(r"(?P<model>resnet18-narrow|[^-]+)-(?P<strategy>.+)"
                      r"-n(?P<n>\d+)"
                      r"-s(?P<seed>\d+)\.json$")
ORDER = ["dense", "r100-ramp", "r400-ramp", "r100-ramp-beta1",
         "r100-ramp-beta01", "r400-ramp-beta01", "r100-ramp4-beta01",
         "r400-ramp4-beta01", "r100-ramp4-beta1", "r100-ramp4-betaauto",
         "r400-ramp4-betaauto", "r100", "r400", "r100-beta1", "r400-beta1",
         "topk100"]
LABELS = {"dense": "dense", "r100": "ScaleCom r100, dense warm-up",
          "r400": "ScaleCom r400, dense warm-up",
          "r100-beta1": "r100, dense warm-up, beta = 1",
          "r400-beta1": "r400, dense warm-up, beta = 1",
          "r100-ramp": "ScaleCom r100", "r400-ramp": "ScaleCom r400",
          "r100-ramp-beta1": "ScaleCom r100, beta = 1",
          "r100-ramp-beta01": "ScaleCom r100, beta = 0.1",
          "r400-ramp-beta01": "ScaleCom r400, beta = 0.1",
          "r100-ramp4-beta01": "ScaleCom r100, beta = 0.1, 4-epoch ramp",
          "r400-ramp4-beta01": "ScaleCom r400, beta = 0.1, 4-epoch ramp",
          "r100-ramp4-beta1": "ScaleCom r100, beta = 1, 4-epoch ramp",
          "r100-ramp4-betaauto": "ScaleCom r100, beta auto, 4-epoch ramp",
          "r400-ramp4-betaauto": "ScaleCom r400, beta auto, 4-epoch ramp",
          "topk100": "local top-k r100"}
# gradcomm-plan --simulate's names of the strategies it prices.
PLAN_STRATEGIES = {"dense": "dense", "r100-ramp": "scalecom-r100-exact",
                   "r400-ramp": "scalecom-r400-exact",
                   "r100-ramp4-beta01": "scalecom-r100-exact",
                   "r400-ramp4-beta01": "scalecom-r400-exact",
                   "r100-ramp4-beta1": "scalecom-r100-exact",
                   "topk100": "local-topk-r100"}


def load(paths):
    """{model: {strategy: {n: [run]}}}."""
    runs = collections.defaultdict(lambda: collections.defaultdict(
        lambda: collections.defaultdict(list)))
    for path in paths:
        match = RUN_NAME.search(os.path.basename(path))
        if not match:
            raise SystemExit("summarize.py: %s is not named "
                             "MODEL-STRATEGY-nN-sSEED.json" % path)
        run = json.load(open(path))
        runs[match["model"]][match["strategy"]][int(match["n"])].append(run)
    return runs


def accuracy(run):
    return 100 * run["curve"][-1]["test_accuracy"]


# A run that ends at chance (10 classes) or below 15 % diverged: the
# tables say how many did, and take the traffic of the others.
DIVERGED = 15.0


def diverged(run):
    return accuracy(run) < DIVERGED


def converged(runs):
    """The runs that did not diverge, or all of them if none did."""
    kept = [r for r in runs if not diverged(r)]
    return kept or runs


def mean_sd(values):
    mean = statistics.mean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return mean, sd


def strategies_of(by_strategy):
    return [s for s in ORDER if s in by_strategy] + sorted(
        s for s in by_strategy if s not in ORDER)


def accuracy_table(model, by_strategy):
    ns = sorted({n for runs in by_strategy.values() for n in runs})
    dense = {n: mean_sd([accuracy(r) for r in by_strategy["dense"][n]])[0]
             for n in ns if by_strategy.get("dense", {}).get(n)}
    seeds = {len(runs) for s in by_strategy.values() for runs in s.values()}
    epochs = {round(r["epochs"], 2) for s in by_strategy.values()
              for runs in s.values() for r in runs}
    print("\n### %s: final test accuracy (%%), mean ± sd over %s seeds, "
          "%s epochs\n" % (model, "/".join(map(str, sorted(seeds))),
                           "/".join(map(str, sorted(epochs)))))
    print("| strategy | " + " | ".join("n = %d" % n for n in ns) + " |")
    print("|---" * (len(ns) + 1) + "|")
    for strategy in strategies_of(by_strategy):
        cells = []
        for n in ns:
            runs = by_strategy[strategy].get(n)
            if not runs:
                cells.append("")
                continue
            mean, sd = mean_sd([accuracy(r) for r in runs])
            cell = "%.2f ± %.2f" % (mean, sd)
            if strategy != "dense" and n in dense:
                cell += " (%+.2f)" % (mean - dense[n])
            failed = sum(diverged(r) for r in runs)
            if failed:
                cell += " [%d diverged]" % failed
            cells.append(cell)
        print("| %s | %s |" % (LABELS.get(strategy, strategy),
                               " | ".join(cells)))
    print("\n(ScaleCom and local top-k: points against dense at the same "
          "n in brackets; a run that ends below %g %% diverged.)" % DIVERGED)


def last_step(run):
    return run.get("learners_last_step")


def traffic_table(model, by_strategy):
    ns = sorted({n for runs in by_strategy.values() for n in runs})
    print("\n### %s: the last step, per learner (cost model; runs that "
          "did not diverge)\n" % model)
    print("| strategy | what | " + " | ".join("n = %d" % n for n in ns)
          + " |")
    print("|---" * (len(ns) + 2) + "|")
    for strategy in strategies_of(by_strategy):
        selected, kilobytes = [], []
        for n in ns:
            steps = [last_step(r) for r in
                     converged(by_strategy[strategy].get(n, []))
                     if last_step(r)]
            if not steps:
                selected.append("")
                kilobytes.append("")
                continue
            selected.append("%d" % statistics.mean(s["selected"]
                                                   for s in steps))
            kilobytes.append("%.1f" % (statistics.mean(
                s["values"] + s["indices"] for s in steps) / 1000))
        if strategy != "dense":
            print("| %s | values combined | %s |" % (
                LABELS.get(strategy, strategy), " | ".join(selected)))
        print("| %s | kB sent | %s |" % (LABELS.get(strategy, strategy),
                                         " | ".join(kilobytes)))


def plan_table(model, step, plan_bin, by_strategy, compute=None):
    """gradcomm-plan --simulate at 10 Gbit/s for the study's learners, the
    compute time per step `compute` (ms), else one learner's measured share
    of the n = 2 runs' step."""
    ns = sorted({n for runs in by_strategy.values() for n in runs})
    two = [r for runs in by_strategy.values() for r in runs.get(2, [])]
    if compute is None:
        if not two:
            sys.exit("summarize.py: no n = 2 runs of %s to take the compute "
                     "time from: give --compute-ms" % model)
        compute = statistics.median(r["ms_per_step"] for r in two) / 2
    strategies = [s for s in strategies_of(by_strategy)
                  if s in PLAN_STRATEGIES]
    with tempfile.TemporaryDirectory() as work:
        table = os.path.join(work, "plan.csv")
        subprocess.run([plan_bin, step, "--simulate", "--bandwidth=10Gbit",
                        "--sweep-ranks=" + ",".join(map(str, ns)),
                        "--strategies=" + ",".join(dict.fromkeys(
                            PLAN_STRATEGIES[s] for s in strategies)),
                        "--compute-ms=%g" % compute, "--steps=20",
                        "--csv", table], check=True,
                       stdout=subprocess.DEVNULL)
        rows = list(csv.DictReader(open(table)))
    print("\n### %s: gradcomm-plan's step at 10 Gbit/s (ms; compute %.1f "
          "ms per learner and step)\n" % (model, compute))
    print("| strategy | " + " | ".join("n = %d" % n for n in ns) + " |")
    print("|---" * (len(ns) + 1) + "|")
    for strategy in strategies:
        cells = {int(r["ranks"]): float(r["ms_per_step"]) for r in rows
                 if r["strategy"] == PLAN_STRATEGIES[strategy]}
        print("| %s | %s |" % (LABELS.get(strategy, strategy), " | ".join(
            "%.2f" % cells[n] if n in cells else "" for n in ns)))


def plot(model, by_strategy, directory):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    # The dense warm-up's rows are in the tables only: drawn, they hide
    # the others.
    for strategy in [s for s in strategies_of(by_strategy)
                     if s not in ("r100", "r400", "r100-beta1",
                                  "r400-beta1")]:
        ns = sorted(by_strategy[strategy])
        stats = [mean_sd([accuracy(r) for r in by_strategy[strategy][n]])
                 for n in ns]
        left.errorbar(ns, [m for m, _ in stats], yerr=[s for _, s in stats],
                      marker="o", capsize=3,
                      label=LABELS.get(strategy, strategy))
        sent = [(n, statistics.mean(last_step(r)["values"] +
                                    last_step(r)["indices"]
                                    for r in converged(
                                        by_strategy[strategy][n])
                                    if last_step(r)) / 1000)
                for n in ns if any(last_step(r) for r in converged(
                    by_strategy[strategy][n]))]
        if sent:
            right.plot([n for n, _ in sent], [kb for _, kb in sent],
                       marker="o", label=LABELS.get(strategy, strategy))
    for axis in (left, right):
        axis.set_xscale("log", base=2)
        ticks = sorted({n for runs in by_strategy.values() for n in runs})
        axis.set_xticks(ticks, [str(n) for n in ticks])
        axis.set_xlabel("learners")
        axis.grid(alpha=0.3)
    left.set_ylabel("final test accuracy (%)")
    left.set_title("%s: accuracy (mean ± sd)" % model)
    right.set_yscale("log")
    right.set_ylabel("kB one learner sends in a step")
    right.set_title("%s: traffic after the warm-up" % model)
    left.legend(fontsize=8)
    figure.tight_layout()
    path = os.path.join(directory, "learners-%s.png" % model)
    figure.savefig(path, dpi=110)
    print("\n![%s](%s)" % (model, path))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--plot", metavar="DIR")
    parser.add_argument("--plan", action="append", default=[],
                        metavar="MODEL=STEP.mlir")
    parser.add_argument("--plan-bin", default="build/bin/gradcomm-plan")
    parser.add_argument("--compute-ms", type=float,
                        help="one learner's compute per step for the plan "
                        "(default: from the n = 2 runs)")
    args = parser.parse_args()
    runs = load(args.runs)
    plans = dict(p.split("=", 1) for p in args.plan)
    for model in sorted(runs):
        accuracy_table(model, runs[model])
        traffic_table(model, runs[model])
        if model in plans:
            plan_table(model, plans[model], args.plan_bin, runs[model],
                       args.compute_ms)
        if args.plot:
            plot(model, runs[model], args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

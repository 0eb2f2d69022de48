#!/usr/bin/env python3
"""Tables and plots of scripts/gossip_study.sh's runs (docs/gossip.md).

Reads <out>/runs/np<ranks>-x<factor>-<strategy>-seed<seed>.csv (the
Fashion-MNIST trainer's evaluation log) and writes <out>/study.md (per
group size and straggler factor: final accuracy, elapsed time, time and
steps to a target accuracy, mean and spread over seeds) and
<out>/study_*.png (accuracy against elapsed time and against steps).
Needs matplotlib (Debian's python3-matplotlib).
"""

import argparse
import csv
import glob
import math
import os
import re
import statistics
from collections import OrderedDict, defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from report import mean_sd  # noqa: E402  (scripts/lib, beside this file)

NAME = re.compile(r"np(\d+)-x([\d.]+)-(.+)-seed(\d+)\.csv$")


def read(out):
    """{(ranks, factor): {strategy: {seed: rows}}} in discovery order."""
    runs = defaultdict(lambda: OrderedDict())
    for path in sorted(glob.glob(os.path.join(out, "runs", "*.csv"))):
        match = NAME.search(os.path.basename(path))
        if not match:
            continue
        ranks, factor, strategy, seed = match.groups()
        with open(path, newline="") as f:
            rows = [{k: (v if k == "label" else float(v)) for k, v in r.items()}
                    for r in csv.DictReader(f)]
        if rows:
            runs[(int(ranks), float(factor))].setdefault(
                strategy, OrderedDict())[int(seed)] = rows
    return OrderedDict(sorted(runs.items()))


def first_reaching(rows, target, key):
    """`key` (elapsed_s or step) of the first evaluation at `target`
    accuracy, or nan when the run never got there."""
    for row in rows:
        if row["test_acc"] >= target:
            return row[key]
    return float("nan")


def fmt(pair, digits=3):
    mean, sd = pair
    if math.isnan(mean):
        return "not reached"
    return "%.*f ± %.*f" % (digits, mean, digits, sd)


def table(runs, target):
    lines = []
    for (ranks, factor), strategies in runs.items():
        title = "no straggler" if factor == 1 else \
            "one rank %gx slower" % factor
        lines.append("\n### %d ranks, %s\n" % (ranks, title))
        lines.append("| strategy | seeds | test accuracy | elapsed (s) | "
                     "time to %.2f (s) | steps to %.2f | reached |"
                     % (target, target))
        lines.append("|---|---|---|---|---|---|---|")
        for strategy, seeds in strategies.items():
            finals = [rows[-1] for rows in seeds.values()]
            times = [first_reaching(r, target, "elapsed_s")
                     for r in seeds.values()]
            steps = [first_reaching(r, target, "step") for r in seeds.values()]
            reached = sum(not math.isnan(t) for t in times)
            lines.append("| %s | %d | %s | %s | %s | %s | %d/%d |" % (
                strategy, len(finals),
                fmt(mean_sd([f["test_acc"] for f in finals]), 4),
                fmt(mean_sd([f["elapsed_s"] for f in finals]), 2),
                fmt(mean_sd(times), 2), fmt(mean_sd(steps), 0),
                reached, len(finals)))
    return "\n".join(lines)


def curve(seeds, x_key):
    """Mean accuracy over seeds at each evaluation index (x: mean x)."""
    count = min(len(rows) for rows in seeds.values())
    xs = [statistics.mean(rows[i][x_key] for rows in seeds.values())
          for i in range(count)]
    ys = [statistics.mean(rows[i]["test_acc"] for rows in seeds.values())
          for i in range(count)]
    return xs, ys


def plot(runs, out, x_key, xlabel, filename):
    groups = list(runs.items())
    columns = len({factor for _, factor in runs})
    rows = math.ceil(len(groups) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows),
                             squeeze=False)
    for index, ((ranks, factor), strategies) in enumerate(groups):
        ax = axes[index // columns][index % columns]
        for strategy, seeds in strategies.items():
            xs, ys = curve(seeds, x_key)
            ax.plot(xs, ys, marker="o", markersize=3, label=strategy)
        ax.set_title("%d ranks, %s" % (
            ranks, "no straggler" if factor == 1 else
            "one rank %gx slower" % factor))
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test accuracy (averaged model)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, filename), dpi=90)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out")
    parser.add_argument("--target", type=float, default=0.75,
                        help="accuracy of time-to-accuracy (default 0.75)")
    parser.add_argument("--context", default="")
    args = parser.parse_args()
    runs = read(args.out)
    if not runs:
        raise SystemExit("gossip_study.py: no runs in %s/runs" % args.out)
    plot(runs, args.out, "elapsed_s", "elapsed wall time (s)",
         "study_accuracy_vs_time.png")
    plot(runs, args.out, "step", "step", "study_accuracy_vs_step.png")
    with open(os.path.join(args.out, "study.md"), "w") as f:
        f.write("## Gossip study\n\n%s\n" % args.context)
        f.write(table(runs, args.target) + "\n")
    print(open(os.path.join(args.out, "study.md")).read())


if __name__ == "__main__":
    main()

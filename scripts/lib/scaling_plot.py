"""Plots of gradcomm-plan --simulate's CSVs (scripts/scaling_curves.sh):
per setting, milliseconds per step and megabytes sent per rank per step
against the number of ranks, one line per strategy, log-log.

Usage: scaling_plot.py <dir with *.csv>
"""

import csv
import glob
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    series = {}
    with open(path) as f:
        for row in csv.DictReader(f):
            line = series.setdefault(row["strategy"], ([], [], []))
            line[0].append(int(row["ranks"]))
            line[1].append(float(row["ms_per_step"]))
            line[2].append(float(row["mb_per_step"]))
    return series


def main():
    directory = sys.argv[1]
    for path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        series = read(path)
        name = os.path.basename(path)[:-4]
        figure, (time_axis, bytes_axis) = plt.subplots(1, 2, figsize=(11, 4))
        for strategy, (ranks, ms, mb) in series.items():
            time_axis.plot(ranks, ms, marker="o", label=strategy)
            bytes_axis.plot(ranks, mb, marker="o", label=strategy)
        for axis, label in ((time_axis, "ms per step"),
                            (bytes_axis, "MB sent per rank per step")):
            axis.set_xscale("log", base=2)
            axis.set_yscale("log")
            axis.set_xlabel("ranks")
            axis.set_ylabel(label)
            axis.grid(True, which="both", alpha=0.3)
        time_axis.legend(fontsize=7)
        figure.suptitle("gradcomm-plan --simulate: " + name)
        figure.tight_layout()
        png = os.path.join(directory, name + ".png")
        figure.savefig(png, dpi=90)
        plt.close(figure)
        print("wrote", png)


if __name__ == "__main__":
    main()

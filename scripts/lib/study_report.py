#!/usr/bin/python3
"""Turns the ScaleCom study's JSON logs (examples/pytorch/train_fmnist.py
--log) into OUT/report.md with PNG plots: per model, a table of every
strategy (final test accuracy mean +- sd over seeds, gap to dense in
points, measured bytes per step and traffic vs dense, time per step wall
and CPU), the ablation rows, accuracy vs step, accuracy vs bytes and the
accuracy vs compression-ratio frontier.

Usage: study_report.py OUT --context TEXT [--full FULL.json...] RUN.json...

--full names the logs of a longer run of the same study (the one
docs/results.md publishes): each model's section then says, per strategy,
how far this run's accuracy and gap to dense are from that run's.

Every number is computed here from the logs given; nothing is typed in.
"""

import argparse
import collections
import json
import math
import os
import re
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def mean_sd(values):
    if len(values) == 1:
        return values[0], 0.0
    return statistics.mean(values), statistics.stdev(values)


def row_order(label, run):
    """Dense, ScaleCom by ratio, the baselines, then the ablations."""
    kind = ["dense", "scalecom", "local-topk", "gossip", "gossip-async",
            "easgd", "easgd-async"]
    comm = run["comm"] if run["comm"] in kind else "dense"
    ratio = (run["options"] or {}).get("ratio", 0)
    return (label.startswith("ablation"), kind.index(comm),
            "no-recipe" in label, ratio, label)


def read(paths):
    """{model: {label: [run, ...]}}: models in the order first seen, rows
    in row_order, seeds in order."""
    runs = collections.OrderedDict()
    for path in paths:
        with open(path) as f:
            run = json.load(f)
        runs.setdefault(run["model"], {}).setdefault(
            run["label"], []).append(run)
    for model, labels in runs.items():
        runs[model] = collections.OrderedDict(
            (label, sorted(labels[label], key=lambda r: r["seed"]))
            for label in sorted(labels, key=lambda label: row_order(
                label, labels[label][0])))
    return runs


def summarize(runs):
    """One row per label: mean +- sd of the final accuracy, bytes, times."""
    rows = collections.OrderedDict()
    for label, seeds in runs.items():
        accuracy = [r["curve"][-1]["test_accuracy"] for r in seeds]
        rows[label] = {
            "seeds": len(seeds), "steps": seeds[0]["steps"],
            "epochs": seeds[0]["epochs"],
            "accuracy": mean_sd(accuracy),
            "bytes": statistics.mean(r["value_bytes_per_step"] +
                                     r["index_bytes_per_step"]
                                     for r in seeds),
            "ms": statistics.median(r["ms_per_step"] for r in seeds),
            "cpu_ms": statistics.median(r["cpu_ms_per_step"] for r in seeds),
            "ratio": (seeds[0]["options"] or {}).get("ratio"),
            # Dense warm-up steps (a ramp's steps send less than dense).
            "warmup_steps": ((seeds[0]["options"] or {}).get(
                "warmup_steps", 0) if (seeds[0]["options"] or {}).get(
                    "warmup") == "dense" else 0),
            "comm": seeds[0]["comm"],
        }
    return rows


def gap_to_dense(rows, label, dense):
    """`label`'s mean final accuracy minus `dense`'s, in points."""
    base = rows.get(dense)
    return (100 * (rows[label]["accuracy"][0] - base["accuracy"][0])
            if base else float("nan"))


def table(rows, dense):
    """Bytes: the mean over all steps (warm-up included) and after the
    warm-up, whose steps send what a dense step sends."""
    lines = ["| strategy | seeds | steps | test accuracy | gap to dense (pt)"
             " | bytes/step, all steps | traffic vs dense | bytes/step after "
             "warm-up | traffic vs dense | ms/step (wall) | ms/step (CPU) |",
             "|" + "---|" * 11]
    base = rows.get(dense)

    def less(nbytes):
        if not base or not nbytes:
            return "-"
        return "%.1fx less" % (base["bytes"] / nbytes)

    for label, row in rows.items():
        mean, sd = row["accuracy"]
        gap = gap_to_dense(rows, label, dense)
        steady = row["bytes"]
        if base and row["warmup_steps"]:
            after = row["steps"] - row["warmup_steps"]
            steady = ((row["bytes"] * row["steps"] - row["warmup_steps"] *
                       base["bytes"]) / after if after > 0 else None)
        lines.append("| %s | %d | %d | %.4f +- %.4f | %+.2f | %.0f | %s | "
                     "%s | %s | %.1f | %.1f |" % (
                         label, row["seeds"], row["steps"], mean, sd, gap,
                         row["bytes"], less(row["bytes"]),
                         "%.0f" % steady if steady is not None else
                         "(all warm-up)", less(steady) if steady else "-",
                         row["ms"], row["cpu_ms"]))
    return "\n".join(lines)


def full_table(rows, full_rows, dense):
    """This run's accuracy and gap to dense beside a longer run's, for the
    strategies both ran; "" when they share none."""
    shared = [label for label in rows if label in full_rows]
    if not shared:
        return ""
    some = full_rows[shared[0]]
    lines = ["Against the full run (%d steps, %g epochs, %d seeds; mean over "
             "seeds of the final accuracy):" % (some["steps"], some["epochs"],
                                               some["seeds"]), "",
             "| strategy | accuracy here | gap to dense here (pt) | accuracy,"
             " full run | gap to dense, full run (pt) | accuracy: here - full"
             " (pt) |", "|" + "---|" * 6]
    for label in shared:
        here, full = rows[label]["accuracy"][0], full_rows[label]["accuracy"][0]
        lines.append("| %s | %.4f | %+.2f | %.4f | %+.2f | %+.2f |" % (
            label, here, gap_to_dense(rows, label, dense), full,
            gap_to_dense(full_rows, label, dense),
            100 * (here - full)))
    return "\n".join(lines)


def bytes_until(run, point, dense_bytes):
    """Bytes this rank sent up to `point`: as logged by the trainer, or
    from the run's mean with its dense warm-up steps (which send what a
    dense step sends) placed first."""
    if point.get("bytes"):
        return point["bytes"]
    mean = run["value_bytes_per_step"] + run["index_bytes_per_step"]
    options = run["options"] or {}
    warmup = (options.get("warmup_steps", 0) if options.get("warmup") ==
              "dense" and dense_bytes else 0)
    if not warmup:
        return point["step"] * mean or 1
    steady = (mean * run["steps"] - warmup * dense_bytes) / (run["steps"] -
                                                             warmup)
    early = min(point["step"], warmup)
    return early * dense_bytes + (point["step"] - early) * steady


def plot_curves(out, model, runs, x_of, xlabel, name):
    figure, axes = plt.subplots(figsize=(7, 4.2))
    for label, seeds in runs.items():
        points = collections.defaultdict(list)
        for r in seeds:
            for i, point in enumerate(r["curve"]):
                points[i].append((x_of(r, point), point["test_accuracy"]))
        xs = [statistics.mean(p[0] for p in points[i]) for i in
              sorted(points)]
        ys = [statistics.mean(p[1] for p in points[i]) for i in
              sorted(points)]
        axes.plot(xs, ys, marker="o", markersize=3, label=label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("test accuracy (mean over seeds)")
    axes.set_title(model)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7)
    if name.endswith("bytes.png"):
        axes.set_xscale("log")
    figure.tight_layout()
    path = os.path.join(out, "%s_%s" % (file_stem(model), name))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return os.path.basename(path)


def file_stem(model):
    """A model's name as a file name: "cnn (compiled)" -> "cnn-compiled".
    Markdown takes no spaces or parentheses in a link's target, so a plot
    named after the model as it is would not show in report.md."""
    return re.sub(r"[^A-Za-z0-9_.]+", "-", model).strip("-")


def plot_frontier(out, model, rows, dense):
    """Accuracy vs nominal ratio for the ScaleCom rows with the study's
    recipe (labels scalecom-r<ratio>), dense at ratio 1."""
    points = [(1.0, rows[dense]["accuracy"])] if dense in rows else []
    for label, row in rows.items():
        if label.startswith("scalecom-r") and label[10:].isdigit():
            points.append((row["ratio"], row["accuracy"]))
    if len(points) < 2:
        return None
    points.sort()
    figure, axes = plt.subplots(figsize=(6, 3.8))
    axes.errorbar([p[0] for p in points], [p[1][0] for p in points],
                  yerr=[p[1][1] for p in points], marker="o", capsize=3)
    axes.set_xscale("log")
    axes.set_xlabel("compression ratio (1 = dense)")
    axes.set_ylabel("final test accuracy (mean +- sd)")
    axes.set_title("%s: ScaleCom frontier" % model)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    path = os.path.join(out, "%s_frontier.png" % file_stem(model))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return os.path.basename(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--context", default="")
    parser.add_argument("--dense", default="dense",
                        help="the label the gaps are measured against")
    parser.add_argument("--full", nargs="+", default=[],
                        help="logs of a longer run of the same study: each "
                        "model's section says how far this run is from it")
    parser.add_argument("logs", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    runs = read(args.logs)
    full_runs = read(args.full) if args.full else {}
    sections = ["# ScaleCom study", "", args.context, ""]
    for model, model_runs in runs.items():
        rows = summarize(model_runs)
        main_runs = collections.OrderedDict(
            (label, seeds) for label, seeds in model_runs.items()
            if not label.startswith("ablation"))
        sections += ["## %s" % model, "", table(rows, args.dense), ""]
        if model in full_runs:
            against = full_table(rows, summarize(full_runs[model]), args.dense)
            if against:
                sections += [against, ""]
        step_plot = plot_curves(args.out, model, main_runs,
                                lambda r, p: p["epoch"], "epoch",
                                "accuracy_vs_epoch.png")
        dense = rows.get(args.dense)
        byte_plot = plot_curves(
            args.out, model, main_runs,
            lambda r, p: bytes_until(r, p, dense["bytes"] if dense else 0),
            "bytes sent per rank (log)", "accuracy_vs_bytes.png")
        sections += ["![%s accuracy vs epoch](%s)" % (model, step_plot), "",
                     "![%s accuracy vs bytes](%s)" % (model, byte_plot), ""]
        frontier = plot_frontier(args.out, model, rows, args.dense)
        if frontier:
            sections += ["![%s frontier](%s)" % (model, frontier), ""]
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(sections) + "\n")


if __name__ == "__main__":
    main()

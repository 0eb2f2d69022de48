#!/usr/bin/python3
"""Turns the Fashion-MNIST trainers' CSV logs into demo-out/report.md (and
report.html) with PNG plots: test accuracy vs step (mean and band over
seeds), test accuracy vs bytes sent, training loss vs step, and one table
per strategy (mean +- sd over seeds, gap to dense, measured traffic).

Usage: report.py OUT_DIR --context "k=v; ..." [--full FULL.csv...
                 --full-context "..."] -- RUN.csv...

--full names the logs of a longer run of the same strategies (the one
docs/results.md publishes): the report then says, per strategy, how far
this run's accuracy and gap to dense are from that run's.

Every number in the report is computed here from the logs given; nothing is
typed in. Needs matplotlib (Debian's python3-matplotlib).
"""

import argparse
import csv
import html
import math
import os
import statistics
import sys
from collections import OrderedDict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

FIELDS = [
    "label", "seed", "ranks", "step", "epoch", "wall_s", "comm_s",
    "value_bytes", "index_bytes", "train_loss", "test_loss", "test_acc",
    "replica_acc_mean", "replica_acc_min", "replica_acc_max", "consensus",
]


def read_runs(paths):
    """{label: {seed: [row, ...]}}, rows as dicts of floats (label: str)."""
    runs = OrderedDict()
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [k for k in FIELDS if k not in (reader.fieldnames or [])]
            if missing:
                raise SystemExit("report.py: %s lacks columns %s"
                                 % (path, ", ".join(missing)))
            rows = []
            for row in reader:
                parsed = {k: (row[k] if k == "label" else float(row[k]))
                          for k in FIELDS}
                rows.append(parsed)
        if not rows:
            raise SystemExit("report.py: %s has no evaluation rows" % path)
        label, seed = rows[0]["label"], int(rows[0]["seed"])
        runs.setdefault(label, OrderedDict())[seed] = rows
    return runs


def mean_sd(values):
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return float("nan"), float("nan")
    if len(values) == 1:
        return values[0], 0.0
    return statistics.mean(values), statistics.stdev(values)


def curves(seeds, key):
    """Steps common to every seed, and per step the mean, min and max."""
    steps = sorted(set.intersection(
        *[{r["step"] for r in rows} for rows in seeds.values()]))
    by_seed = [{r["step"]: r[key] for r in rows} for rows in seeds.values()]
    mean = [statistics.mean(s[t] for s in by_seed) for t in steps]
    low = [min(s[t] for s in by_seed) for t in steps]
    high = [max(s[t] for s in by_seed) for t in steps]
    return steps, mean, low, high


def summarize(runs):
    """One summary dict per label, from the last row of every seed."""
    table = OrderedDict()
    for label, seeds in runs.items():
        finals = [rows[-1] for rows in seeds.values()]
        steps = [f["step"] for f in finals]
        entry = {"seeds": len(finals), "steps": int(max(steps)),
                 "epochs": max(f["epoch"] for f in finals)}
        for key in ("test_acc", "test_loss", "replica_acc_mean",
                    "replica_acc_min", "consensus"):
            entry[key] = mean_sd([f[key] for f in finals])
        per_step = lambda key: mean_sd(
            [f[key] / max(1.0, f["step"]) for f in finals])
        entry["value_bps"] = per_step("value_bytes")[0]
        entry["index_bps"] = per_step("index_bytes")[0]
        entry["ms_step"] = mean_sd(
            [1e3 * f["wall_s"] / max(1.0, f["step"]) for f in finals])[0]
        entry["comm_ms_step"] = mean_sd(
            [1e3 * f["comm_s"] / max(1.0, f["step"]) for f in finals])[0]
        table[label] = entry
    return table


def plot(runs, out_dir, key, ylabel, filename, x_key="step", log_x=False):
    fig, ax = plt.subplots(figsize=(8, 5))
    cmap = plt.get_cmap("tab20")
    for i, (label, seeds) in enumerate(runs.items()):
        color = cmap(i % 20)
        if x_key == "step":
            steps, mean, low, high = curves(seeds, key)
            ax.plot(steps, mean, label=label, color=color, linewidth=1.4)
            if len(seeds) > 1:
                ax.fill_between(steps, low, high, color=color, alpha=0.15)
        else:
            xs_all, ys_all = [], []
            for rows in seeds.values():
                xs_all.append([r["value_bytes"] + r["index_bytes"]
                               for r in rows])
                ys_all.append([r[key] for r in rows])
            n = min(len(x) for x in xs_all)
            xs = [statistics.mean(x[j] for x in xs_all) for j in range(n)]
            ys = [statistics.mean(y[j] for y in ys_all) for j in range(n)]
            ax.plot(xs, ys, marker=".", label=label, color=color,
                    linewidth=1.2)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("bytes sent per rank (values + indices)"
                  if x_key != "step" else "step")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, filename), dpi=110)
    plt.close(fig)


def fmt(value, digits=4):
    if isinstance(value, tuple):
        mean, sd = value
        if math.isnan(mean):
            return "n/a"
        return "%.*f +- %.*f" % (digits, mean, digits, sd)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return "%.*f" % (digits, value)


def gap_to_dense(table, label):
    """`label`'s mean final accuracy minus dense's, in points."""
    dense = table.get("dense")
    return (100.0 * (table[label]["test_acc"][0] - dense["test_acc"][0])
            if dense else float("nan"))


def table_rows(table):
    dense = table.get("dense")
    dense_bytes = (dense["value_bps"] + dense["index_bps"]) if dense else None
    header = ["strategy", "seeds", "steps", "test acc (averaged)",
              "gap to dense (pp)", "test loss", "replica acc (mean)",
              "value B/step", "index B/step", "traffic vs dense",
              "ms/step", "comm ms/step", "consensus"]
    rows = []
    for label, e in table.items():
        total = e["value_bps"] + e["index_bps"]
        gap = gap_to_dense(table, label)
        ratio = (dense_bytes / total) if dense_bytes and total else None
        rows.append([
            label, str(e["seeds"]), str(e["steps"]), fmt(e["test_acc"]),
            fmt(gap, 2), fmt(e["test_loss"]), fmt(e["replica_acc_mean"]),
            "%.0f" % e["value_bps"], "%.0f" % e["index_bps"],
            ("%.1fx less" % ratio) if ratio else "n/a",
            fmt(e["ms_step"], 2), fmt(e["comm_ms_step"], 2),
            "%.3g" % e["consensus"][0],
        ])
    return header, rows


def full_run_rows(table, full_table):
    """This run's final accuracy and gap to dense beside a longer run's,
    for the strategies both ran."""
    header = ["strategy", "accuracy here", "gap to dense here (pp)",
              "accuracy, full run", "gap to dense, full run (pp)",
              "accuracy: here - full (pp)"]
    rows = []
    for label, e in table.items():
        full = full_table.get(label)
        if full is None:
            continue
        rows.append([
            label, fmt(e["test_acc"][0]), fmt(gap_to_dense(table, label), 2),
            fmt(full["test_acc"][0]), fmt(gap_to_dense(full_table, label), 2),
            fmt(100.0 * (e["test_acc"][0] - full["test_acc"][0]), 2),
        ])
    return header, rows


def plot_wall(runs, out_dir, filename):
    """Test accuracy against training wall time (first seed of each)."""
    fig, ax = plt.subplots(figsize=(8, 5))
    cmap = plt.get_cmap("tab10")
    for i, (label, seeds) in enumerate(runs.items()):
        rows = next(iter(seeds.values()))
        ax.plot([r["wall_s"] for r in rows], [r["test_acc"] for r in rows],
                marker=".", label=label, color=cmap(i % 10))
    ax.set_xlabel("training wall time (s)")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, filename), dpi=110)
    plt.close(fig)


def write_table(f, header, rows):
    f.write("| " + " | ".join(header) + " |\n")
    f.write("|" + "---|" * len(header) + "\n")
    for row in rows:
        f.write("| " + " | ".join(row) + " |\n")
    f.write("\n")


def write_markdown(path, context, header, rows, images, sections=()):
    """`sections`: (title, text, header, rows) tables after the main one
    (the full-run comparison, the cluster)."""
    with open(path, "w") as f:
        f.write("# GradComm main job: Fashion-MNIST MLP, strategies compared\n\n")
        f.write("Generated by `scripts/demo.sh` (scripts/lib/report.py) from "
                "the trainers' logs of this run; every number below was "
                "computed in it.\n\n")
        for key, value in context:
            f.write("* **%s:** %s\n" % (key, value))
        f.write("\nMean +- sample standard deviation over seeds of the final "
                "evaluation. *Traffic vs dense* compares measured bytes sent "
                "per rank and step, indices included (not the nominal "
                "ratio).\n\n")
        write_table(f, header, rows)
        for title, text, section_header, section_rows in sections:
            f.write("## %s\n\n%s\n\n" % (title, text))
            write_table(f, section_header, section_rows)
        for title, filename in images:
            f.write("## %s\n\n![%s](%s)\n\n" % (title, title, filename))


def write_html(path, context, header, rows, images, sections=()):
    """`sections` as in write_markdown."""

    def table(f, header, rows):
        f.write("<table><tr>%s</tr>\n" % "".join(
            "<th>%s</th>" % html.escape(h) for h in header))
        for row in rows:
            f.write("<tr>%s</tr>\n" % "".join(
                "<td>%s</td>" % html.escape(c) for c in row))
        f.write("</table>\n")

    with open(path, "w") as f:
        f.write("<!doctype html><meta charset=utf-8><title>GradComm report"
                "</title><style>body{font-family:sans-serif;max-width:1100px;"
                "margin:auto}table{border-collapse:collapse;font-size:13px}"
                "td,th{border:1px solid #ccc;padding:3px 6px}</style>\n")
        f.write("<h1>GradComm main job: Fashion-MNIST MLP</h1>\n<ul>")
        for key, value in context:
            f.write("<li><b>%s:</b> %s</li>" % (html.escape(key),
                                                html.escape(value)))
        f.write("</ul>\n")
        table(f, header, rows)
        for title, text, section_header, section_rows in sections:
            f.write("<h2>%s</h2><p>%s</p>\n" % (html.escape(title),
                                                html.escape(text)))
            table(f, section_header, section_rows)
        for title, filename in images:
            f.write("<h2>%s</h2><img src=\"%s\" width=800>\n"
                    % (html.escape(title), html.escape(filename)))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("logs", nargs="+")
    parser.add_argument("--context", default="",
                        help="'key=value; key=value' lines for the report")
    parser.add_argument("--cluster", nargs="*", default=[],
                        help="logs of runs on the emulated cluster: plotted "
                        "against training wall time")
    parser.add_argument("--cluster-context", default="",
                        help="one line saying what the cluster was")
    parser.add_argument("--full", nargs="*", default=[],
                        help="logs of a longer run of the same strategies: "
                        "the report says how far this run is from it")
    parser.add_argument("--full-context", default="",
                        help="one line saying what the longer run was")
    args = parser.parse_args(argv)
    runs = read_runs(args.logs)
    os.makedirs(args.out_dir, exist_ok=True)
    images = [
        ("Test accuracy vs step (averaged model; band: min-max over seeds)",
         "accuracy_vs_step.png"),
        ("Test accuracy vs bytes sent", "accuracy_vs_bytes.png"),
        ("Training loss vs step", "loss_vs_step.png"),
    ]
    plot(runs, args.out_dir, "test_acc", "test accuracy",
         images[0][1])
    plot(runs, args.out_dir, "test_acc", "test accuracy", images[1][1],
         x_key="bytes", log_x=True)
    plot(runs, args.out_dir, "train_loss", "training loss (mean since last "
         "evaluation)", images[2][1])
    context = []
    for part in args.context.split(";"):
        if "=" in part:
            key, value = part.split("=", 1)
            context.append((" ".join(key.split()), " ".join(value.split())))
    ranks = {int(rows[0]["ranks"]) for seeds in runs.values()
             for rows in seeds.values()}
    if ranks == {2} and any("gossip" in label for label in runs):
        context.append((
            "note on gossip",
            "with 2 ranks the matching schedule always pairs the same two "
            "replicas and mixing 0.5 replaces both by their mean after every "
            "local step, which is exactly synchronous SGD: gossip equals "
            "dense here by arithmetic (run RANKS=4 to see them differ)"))
    table = summarize(runs)
    header, rows = table_rows(table)
    sections = []
    if args.full:
        full_runs = read_runs(args.full)
        full_table = summarize(full_runs)
        full_header, full_rows = full_run_rows(table, full_table)
        if full_rows:
            steps = max(e["steps"] for e in full_table.values())
            epochs = max(e["epochs"] for e in full_table.values())
            seeds = sorted({seed for by_seed in full_runs.values()
                            for seed in by_seed})
            what = ("%s It ran %d steps (%.1f epochs) with seeds %s. Mean "
                    "over seeds of the final evaluation of each."
                    % (args.full_context, steps, epochs,
                       " ".join(str(s) for s in seeds))).strip()
            sections.append(("This run against the full run", what,
                             full_header, full_rows))
    if args.cluster:
        cluster_runs = read_runs(args.cluster)
        plot_wall(cluster_runs, args.out_dir, "accuracy_vs_wall_cluster.png")
        sections.append(("Emulated cluster", args.cluster_context) +
                        table_rows(summarize(cluster_runs)))
        images.append(("Test accuracy vs training wall time, emulated "
                       "cluster", "accuracy_vs_wall_cluster.png"))
    write_markdown(os.path.join(args.out_dir, "report.md"), context, header,
                   rows, images, sections)
    write_html(os.path.join(args.out_dir, "report.html"), context, header,
               rows, images, sections)
    print("report: %s (%d strategies, %d runs)" % (
        os.path.join(args.out_dir, "report.md"), len(runs),
        sum(len(s) for s in runs.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

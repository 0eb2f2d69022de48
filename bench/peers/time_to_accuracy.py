"""Time to accuracy for the peer comparison: prices the curves of
bench/peers/accuracy.sh with the step times bench/peers/run.sh measured on
a link, and prints per model and link the time each row takes to reach DDP
fp32's final accuracy (on the evaluation subset, mean of its seeds) minus
--tolerance points (default 0.5): for each seed, and on the mean of the
seeds' curves (which the speed-up over the best of PyTorch's hooks
compares); and the final accuracy on the whole test set at equal steps
(mean and sd over seeds). --plot draws the mean curves against time.

    .venv/bin/python bench/peers/time_to_accuracy.py \\
        --price 300mbit=bench-out/peers --price 1gbit=bench-out/peers \\
        [--plot DIR] bench-out/peers/accuracy-*-shm-*.json

A curve's step s costs the row's measured dense step while s is within
the curve's warm-up and its compressed step after it (run.sh's steps 2 to
--run-warmup and the steps after the one that follows it, medians:
summarize.py's reading); evaluations are not counted. A step computes the
same on any link (every collective here sums two ranks' values, exact in
any order), so a curve trained on shared memory priced with the link's
step times stands for the curve on that link, up to the step times'
spread. A curve trained on the link itself (accuracy.sh --rate) is also
given its own clock ("measured clocks").
"""

import argparse
import collections
import json
import os
import re
import statistics
import sys

# summarize.py beside this script (Python imports a script's neighbours).
from summarize import PEERS, measured

CURVE_NAME = re.compile(
    r"accuracy-(?P<model>[^-]+)-(?P<link>[^-]+)-(?P<row>.+)-s(?P<seed>\d+)"
    r"\.json$")
# The rows whose communication is GradComm's.
OURS_PREFIX = "gc-"


def load_curve(path):
    match = CURVE_NAME.search(os.path.basename(path))
    if not match:
        raise SystemExit("time_to_accuracy.py: %s is not named "
                         "accuracy-MODEL-LINK-ROW-sSEED.json" % path)
    run = json.load(open(path))
    curve = run["curve"]
    if not curve or "subset_accuracy" not in curve[0]:
        raise SystemExit("time_to_accuracy.py: %s has no subset curve "
                         "(accuracy.sh's --eval-subset)" % path)
    warmup = run.get("warmup_steps")
    if warmup is None:
        warmup = (run.get("options") or {}).get("warmup_steps", 0)
    if run["comm"] in ("ddp", "bf16", "fp16", "dense", "local-topk"):
        warmup = 0  # no dense phase of their own
    return {"model": match["model"], "link": match["link"],
            "row": match["row"], "warmup": warmup, "curve": curve,
            "wall": run["timeline"]["wall"]}


def step_prices(directory, model, rate, row, run_warmup):
    """(dense ms, compressed ms) of ROW's step on the link, from run.sh's
    <model>-<rate>-<row>.json."""
    path = os.path.join(directory, "%s-%s-%s.json" % (model, rate, row))
    if not os.path.exists(path):
        return None
    wall = json.load(open(path))["timeline"]["wall"]
    dense = wall[1:run_warmup] or wall
    return statistics.median(dense), statistics.median(
        measured(wall, run_warmup))


def priced_times(curve, prices):
    """Seconds from the start to each evaluation of the curve."""
    dense, compressed = prices
    times = []
    for point in curve["curve"]:
        step = point["step"]
        warm = min(step, curve["warmup"])
        times.append((warm * dense + (step - warm) * compressed) / 1000)
    return times


def measured_times(curve):
    return [sum(curve["wall"][:point["step"]]) / 1000
            for point in curve["curve"]]


def first_reaching(points, times, target):
    for point, seconds in zip(points, times):
        if point["subset_accuracy"] >= target:
            return point["step"], seconds
    return None, None


def mean_sd(values, digits=1):
    if not values:
        return "-"
    if len(values) == 1:
        return "%.*f" % (digits, values[0])
    return "%.*f ± %.*f" % (digits, statistics.mean(values), digits,
                            statistics.stdev(values))


def mean_curve(curves):
    """The seeds' mean curve (the same evaluation steps in every seed)."""
    return [{"step": points[0]["step"], "subset_accuracy": statistics.mean(
        p["subset_accuracy"] for p in points)}
        for points in zip(*(c["curve"] for c in curves))]


def table(model, link, rows, prices, target, tolerance, use_measured):
    """Prints one model x link table; returns {row: (seconds to target on
    the mean curve or None, reached)}."""
    print("\n%s, %s%s: target %.2f %% (DDP fp32's final subset accuracy, "
          "mean of its seeds, - %.1f pt)" % (
              model, link, " (measured clocks)" if use_measured
              else " (priced)", 100 * target, 100 * tolerance))
    print("| row | ms/step dense / compressed | seeds reaching | steps to "
          "target (each seed's) | time to target s (each seed's) | mean "
          "curve: time to target s | x best peer | final accuracy % (all "
          "test) | vs DDP pt |")
    print("|---|---|---|---|---|---|---|---|---|")
    results, lines = {}, []
    ddp_final = [c["curve"][-1]["test_accuracy"] for c in rows.get("ddp", [])]
    for row, curves in rows.items():
        if use_measured:
            price = None
        else:
            price = prices.get(row)
            if price is None:
                continue
        steps, seconds, all_times = [], [], []
        for curve in curves:
            times = (measured_times(curve) if use_measured
                     else priced_times(curve, price))
            all_times.append(times)
            step, second = first_reaching(curve["curve"], times, target)
            if step is not None:
                steps.append(step)
                seconds.append(second)
        # Its seeds evaluate at the same steps: priced, the same clock
        # (measured clocks: the first seed's).
        _, on_mean = first_reaching(mean_curve(curves), all_times[0],
                                    target)
        finals = [100 * c["curve"][-1]["test_accuracy"] for c in curves]
        results[row] = (on_mean, len(seconds))
        delta = ("%+.2f" % (statistics.mean(finals) -
                            100 * statistics.mean(ddp_final))
                 if ddp_final else "-")
        lines.append([row, "%.0f / %.0f" % price if price else "measured",
                      "%d/%d" % (len(seconds), len(curves)),
                      " ".join("%d" % s for s in steps) or "-",
                      " ".join("%.0f" % s for s in seconds) or "-",
                      "%.0f" % on_mean if on_mean is not None else
                      "not reached", None, mean_sd(finals, 2), delta])
    # The best of PyTorch's hooks: the fastest mean curve to the target.
    peers = [results[r][0] for r in PEERS
             if r in results and results[r][0] is not None]
    best = min(peers) if peers else None
    for line in lines:
        on_mean = results[line[0]][0]
        line[6] = ("%.2f" % (best / on_mean) if best and on_mean else "-")
        print("| " + " | ".join(line) + " |")
    return results


def plot(model, link, rows, prices, target, directory):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(figsize=(6.4, 4.2))
    for row, curves in rows.items():
        price = prices.get(row)
        if price is None:
            continue
        accuracy = [100 * p["subset_accuracy"] for p in mean_curve(curves)]
        style = "-" if row.startswith(OURS_PREFIX) else "--"
        axes.plot(priced_times(curves[0], price), accuracy, style,
                  marker=".", label=row)
    axes.axhline(100 * target, color="grey", linewidth=0.8)
    axes.set_xlabel("seconds of training on the %s link (priced)" % link)
    axes.set_ylabel("test accuracy, subset (%%), mean of %d seeds"
                    % len(next(iter(rows.values()))))
    axes.set_title("%s, 2 ranks, %s" % (model, link))
    axes.legend(fontsize=8)
    figure.tight_layout()
    path = os.path.join(directory, "time_to_accuracy-%s-%s.png"
                        % (model, link))
    figure.savefig(path, dpi=90)
    print("wrote %s" % path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--price", action="append", default=[],
                        metavar="RATE=DIR",
                        help="run.sh's JSON for RATE are in DIR")
    parser.add_argument("--run-warmup", type=int, default=4,
                        help="run.sh's --warmup (default 4)")
    parser.add_argument("--tolerance", type=float, default=0.5,
                        help="the target: DDP fp32's final accuracy minus "
                        "this many points (default 0.5)")
    parser.add_argument("--plot", metavar="DIR")
    parser.add_argument("curves", nargs="+")
    args = parser.parse_args()
    tolerance = args.tolerance / 100
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in sorted(args.curves):
        curve = load_curve(path)
        groups[(curve["model"], curve["link"])][curve["row"]].append(curve)
    for (model, link), rows in sorted(groups.items()):
        if "ddp" not in rows:
            raise SystemExit("time_to_accuracy.py: %s on %s has no ddp "
                             "row (the target)" % (model, link))
        target = statistics.mean(c["curve"][-1]["subset_accuracy"]
                                 for c in rows["ddp"]) - tolerance
        if link != "shm":
            table(model, link, rows, {}, target, tolerance,
                  use_measured=True)
        for price in args.price:
            rate, _, directory = price.partition("=")
            prices = {row: step_prices(directory, model, rate, row,
                                       args.run_warmup) for row in rows}
            prices = {row: p for row, p in prices.items() if p}
            if not prices:
                print("\n%s, %s: no step times in %s" % (model, rate,
                                                         directory))
                continue
            table(model, rate, rows, prices, target, tolerance,
                  use_measured=False)
            if args.plot:
                plot(model, rate, rows, prices, target, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())

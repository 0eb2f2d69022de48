"""Summarizes bench/peers/run.sh's rows: per row the median step after
its warm-up (wall and CPU milliseconds, every thread of the process), the
step's phases, the bytes node 0's link sent per step (the interface's
counter) and, for GradComm's hooks, where their time went; then each row's
step as a ratio to the best 16-bit peer, to DDP fp32 and to one rank
alone, measured in the same run.

    .venv/bin/python bench/peers/summarize.py [--warmup W] ROW.json...
"""

import argparse
import json
import statistics
import sys

PEERS = ("bf16", "fp16", "powersgd1", "powersgd2", "powersgd4")
HOOK_PARTS = ("hook", "start", "wait", "run", "idle")


def measured(values, warmup):
    """The steps after the warm-up and the one step after it (PowerSGD
    makes its matrices there; ScaleCom's leader starts rotating)."""
    return values[warmup + 1:] or values


def row_of(path, warmup):
    run = json.load(open(path))
    timeline = run["timeline"]
    median = {phase: statistics.median(measured(timeline[phase], warmup))
              for phase in ("wall", "cpu", "forward", "backward",
                            "optimizer")}
    row = {"label": run["label"], "model": run["model"],
           "steps": run["steps"], **median}
    sent = measured(timeline.get("link_tx", []), warmup)
    row["link_mb"] = statistics.median(sent) / 1e6 if sent else None
    hooks = measured(timeline.get("hooks", []), warmup)
    if hooks and any(h.get("jobs") for h in hooks):
        row["hooks"] = {part: statistics.median([h.get(part, 0.0)
                                                 for h in hooks])
                        for part in HOOK_PARTS}
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=int, default=4)
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args()
    rows = [row_of(path, args.warmup) for path in args.runs]
    by_label = {row["label"]: row for row in rows}
    peers = [by_label[p]["wall"] for p in PEERS if p in by_label]
    best_peer = min(peers) if peers else None
    references = (("best peer", best_peer),
                  ("ddp", by_label.get("ddp", {}).get("wall")),
                  ("solo", by_label.get("solo", {}).get("wall")))
    print("| row | ms/step | CPU ms | forward | backward | optimizer | "
          "link MB/step | x best peer | x DDP fp32 | x one rank | hooks: "
          "hook/start/wait/run/idle ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        ratios = ["%.2f" % (row["wall"] / ref) if ref else "-"
                  for _, ref in references]
        link = "%.2f" % row["link_mb"] if row["link_mb"] is not None else "-"
        hooks = row.get("hooks")
        parts = ("/".join("%.0f" % hooks[p] for p in HOOK_PARTS)
                 if hooks else "-")
        print("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %s | %s | "
              "%s | %s |" % (row["label"], row["wall"], row["cpu"],
                             row["forward"], row["backward"],
                             row["optimizer"], link, *ratios, parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The ScaleCom study's report generator (scripts/lib/study_report.py) on
made-up logs of two models, one of them compiled ("cnn (compiled)"):
checks the table's gaps and that every plot report.md shows is a PNG
under a name Markdown can link to (no spaces, no parentheses).

Usage: study_report.py <source root> <work dir>
"""

import json
import os
import re
import shutil
import subprocess
import sys

root, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(os.path.join(work, "runs"))
logs = []
for model in ("cnn", "cnn (compiled)"):
    for label, comm, ratio, accuracy in (("dense", "dense", None, 0.90),
                                         ("scalecom-r100", "scalecom", 100,
                                          0.89)):
        for seed in (1, 2):
            run = {
                "label": label, "model": model, "comm": comm, "seed": seed,
                "ranks": 2, "steps": 20, "epochs": 1.0,
                "options": {"ratio": ratio} if ratio else None,
                "value_bytes_per_step": 4000.0 if ratio is None else 40.0,
                "index_bytes_per_step": 0.0 if ratio is None else 8.0,
                "ms_per_step": 1.0, "cpu_ms_per_step": 1.0,
                "curve": [{"step": step, "epoch": step / 20,
                           "bytes": step * 4000,
                           "test_accuracy": accuracy - 0.01 * (20 - step) / 10
                           + 0.001 * seed, "train_loss": 1.0}
                          for step in (10, 20)]}
            path = os.path.join(work, "runs", "%s-%s-seed%d.json" % (
                model.replace(" ", "_"), label, seed))
            with open(path, "w") as f:
                json.dump(run, f)
            logs.append(path)

out = os.path.join(work, "report")
subprocess.run([sys.executable, os.path.join(root, "scripts", "lib",
                                             "study_report.py"), out,
                "--context", "test"] + logs, check=True)
report = open(os.path.join(out, "report.md")).read()
for model in ("cnn", "cnn (compiled)"):
    section = report.split("## %s\n" % model)[1].split("\n## ")[0]
    gap = [line for line in section.splitlines()
           if line.startswith("| scalecom-r100 ")][0].split("|")[5].strip()
    assert gap == "-1.00", (model, gap)
links = re.findall(r"!\[[^\]]*\]\(([^)]*)\)", report)
assert len(links) == 6, links  # per model: vs epoch, vs bytes, frontier
for target in links:
    assert re.fullmatch(r"[A-Za-z0-9_.-]+\.png", target), target
    with open(os.path.join(out, target), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", target
assert "cnn-compiled_accuracy_vs_epoch.png" in links, links
print("study report: %d plots, gaps -1.00 for both models" % len(links))

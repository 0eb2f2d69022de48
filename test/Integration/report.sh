#!/usr/bin/env bash
# The demo's report generator on a tiny run: two strategies x two seeds of
# the Fashion-MNIST trainer on a generated look-alike dataset, then
# scripts/lib/report.py; checks that the report, the HTML page and the
# plots exist, that the table's numbers parse, and that the plots are PNGs.
# Usage: report.sh <mpiexec> <fashion-mnist build dir> <source root> <work dir>
set -euo pipefail
mpiexec=$1 fm=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work/data" "$work/runs"
"${GRADCOMM_PYTHON:-/usr/bin/python3}" "$root/test/Integration/Inputs/make_tiny_fashion_mnist.py" \
  "$work/data"

logs=()
for strategy in dense scalecom-r100-exact gossip; do
  for seed in 1 2; do
    log="$work/runs/$strategy-seed$seed.csv"
    "$mpiexec" -n 2 "$fm/fashion-mnist-np2-$strategy" --data "$work/data" \
      --seed "$seed" --steps 12 --eval-every 4 --lr 0.05 \
      --label "$strategy" --log "$log" >/dev/null
    logs+=("$log")
  done
done
# Same seed, same bits: a rerun logs the same numbers (times aside).
"$mpiexec" -n 2 "$fm/fashion-mnist-np2-scalecom-r100-exact" --data \
  "$work/data" --seed 1 --steps 12 --eval-every 4 --lr 0.05 \
  --label scalecom-r100-exact --log "$work/rerun.csv" >/dev/null
strip_times() { cut -d, -f1-5,8-16 "$1"; } # wall_s, comm_s, elapsed_s out
diff <(strip_times "$work/runs/scalecom-r100-exact-seed1.csv") \
  <(strip_times "$work/rerun.csv") ||
  { echo "rerun with the same seed differs"; exit 1; }

# wall_s and comm_s are means over the same ranks, and each rank's
# communication happens inside its step: comm_s <= wall_s on every row
# (rank 0's wall_s against the mean comm_s could break it).
for log in "${logs[@]}"; do
  awk -F, 'NR > 1 && $7 > $6 { print FILENAME ": comm_s " $7 " > wall_s " $6;
    bad = 1 } END { exit bad }' "$log"
done

# The recipe's trainer (gradcomm-compile's defaults): dense for its 100
# warm-up steps, compressed after them.
"$mpiexec" -n 2 "$fm/fashion-mnist-np2-scalecom-r100-recipe" --data \
  "$work/data" --seed 1 --steps 104 --eval-every 100 --lr 0.05 \
  --label scalecom-r100-recipe --log "$work/recipe.csv" >/dev/null
"${GRADCOMM_PYTHON:-/usr/bin/python3}" - "$work" <<'PY'
import csv, os, sys
work = sys.argv[1]
def rows(name):
    return list(csv.DictReader(open(os.path.join(work, name))))
dense = rows("runs/dense-seed1.csv")[-1]
dense_step = int(dense["value_bytes"]) // int(dense["step"])
warm, last = rows("recipe.csv")[0], rows("recipe.csv")[-1]
assert warm["step"] == "100" and last["step"] == "104", (warm, last)
assert int(warm["index_bytes"]) == 0, warm
assert int(warm["value_bytes"]) == 100 * dense_step, (warm, dense_step)
after = int(last["value_bytes"]) - int(warm["value_bytes"])
assert int(last["index_bytes"]) > 0 and 0 < after < 4 * dense_step / 10, last
print("recipe trainer: 100 dense warm-up steps, then %d value bytes per "
      "step (dense %d)" % (after // 4, dense_step))
PY

# A "full run" to compare with: the same logs cut at step 8 (their second
# evaluation), as if the longer run were this one's first 8 steps.
mkdir -p "$work/full"
for log in "${logs[@]}"; do
  awk -F, 'NR == 1 || $4 <= 8' "$log" >"$work/full/$(basename "$log")"
done
"${GRADCOMM_PYTHON:-/usr/bin/python3}" "$root/scripts/lib/report.py" "$work/report" \
  --context "machine=test; ranks=2" --cluster "$work/runs/dense-seed1.csv" \
  "$work/runs/gossip-seed1.csv" --cluster-context "test cluster" \
  --full "$work/full"/*.csv --full-context "Cut at step 8." \
  -- "${logs[@]}"

"${GRADCOMM_PYTHON:-/usr/bin/python3}" - "$work/report" <<'PY'
import os, re, sys
out = sys.argv[1]
report = open(os.path.join(out, "report.md")).read()
main = report.split("## This run against the full run")[0]
rows = [l for l in main.splitlines() if l.startswith("| ") and
        not l.startswith("| strategy")]
assert [r.split("|")[1].strip() for r in rows] == \
    ["dense", "scalecom-r100-exact", "gossip"], rows
for row in rows:
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "2" and cells[2] == "12", cells
    mean, sd = (float(v) for v in cells[3].split("+-"))
    assert 0.0 <= mean <= 1.0 and sd >= 0.0, cells
    float(cells[4]); float(cells[5].split("+-")[0])
    int(cells[7]); int(cells[8]); float(cells[10]); float(cells[11])
dense = [c.strip() for c in rows[0].strip("|").split("|")]
scalecom = [c.strip() for c in rows[1].strip("|").split("|")]
assert float(dense[4]) == 0.0, dense
assert int(scalecom[8]) > 0 and int(dense[8]) == 0, (dense, scalecom)
assert re.match(r"[0-9.]+x less", scalecom[9]), scalecom
assert "## Emulated cluster" in report and "test cluster" in report
for name in ("accuracy_vs_step.png", "accuracy_vs_bytes.png",
             "loss_vs_step.png", "accuracy_vs_wall_cluster.png"):
    data = open(os.path.join(out, name), "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000, name
    assert name in report, name
# The comparison with the "full run" (the logs cut at step 8): per
# strategy, this run's mean final accuracy, the cut logs' mean accuracy
# at step 8, and the difference in points.
import csv, glob, statistics
section = report.split("## This run against the full run")[1].split("## ")[0]
assert "Cut at step 8. It ran 8 steps" in section and "seeds 1 2" in section
full_rows = [[c.strip() for c in l.strip("|").split("|")]
             for l in section.splitlines()
             if l.startswith("| ") and not l.startswith("| strategy")]
assert [r[0] for r in full_rows] == ["dense", "scalecom-r100-exact",
                                     "gossip"], full_rows
def mean_at(label, step):
    values = []
    for path in glob.glob(os.path.join(out, "..", "runs", label + "-seed*.csv")):
        values += [float(r["test_acc"]) for r in csv.DictReader(open(path))
                   if int(r["step"]) == step]
    assert len(values) == 2, (label, step, values)
    return statistics.mean(values)
for cells, main_row in zip(full_rows, rows):
    here, full = mean_at(cells[0], 12), mean_at(cells[0], 8)
    assert abs(float(cells[1]) - here) < 1e-4, (cells, here)
    assert cells[1] == main_row.strip("|").split("|")[3].split("+-")[0].strip()
    assert abs(float(cells[3]) - full) < 1e-4, (cells, full)
    assert abs(float(cells[5]) - 100 * (float(cells[1]) - float(cells[3]))) < 0.011, cells
assert float(full_rows[0][2]) == 0.0 and float(full_rows[0][4]) == 0.0
# The HTML page has the same three tables: main, full run, cluster.
page = open(os.path.join(out, "report.html")).read()
assert page.count("<table>") == 3 and "Cut at step 8." in page, page[:300]
print("report: ok (%d rows)" % len(rows))
PY

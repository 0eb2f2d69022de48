#!/usr/bin/env bash
# scripts/demo.sh - the GradComm main job, as far as it exists today.
#
# What this runs:
#   1. installs what is missing (Debian packages, the Fashion-MNIST dataset
#      and matplotlib included) and builds GradComm, as check.sh does;
#   2. shows the compiler: an annotated single-device SGD step through
#      --gradcomm-scalecom-pipeline, with the pass's report;
#   3. the main job (docs/design/architecture.md section 8): a 784-128-10 MLP
#      on Fashion-MNIST, its training step (examples/fashion-mnist/
#      step.mlir.in) compiled by gradcomm-compile once per strategy: dense
#      all-reduce; ScaleCom with the recipe (gradcomm-compile's defaults)
#      at ratio 100, 400 and 1000, and as the paper states it (no warm-up,
#      beta 1 or the low-pass 0.5, exact or chunk selection); local top-k +
#      all-gather (ratio 100); gossip (matching, mixing 0.5; and
#      asynchronous); EASGD (synchronous, asynchronous, and asynchronous with
#      the center sharded over the ranks). Every strategy
#      runs for EPOCHS epochs with each seed in SEEDS, same hyper-parameters,
#      evaluating every EVAL_EVERY steps; scripts/lib/report.py writes
#      demo-out/report.md and report.html with PNG plots (accuracy vs step
#      with a band over seeds, accuracy vs bytes sent, loss) and a table
#      (mean +- sd, gap to dense, measured traffic, time per step);
#   4. a correctness check: the compiled ScaleCom linear-regression step
#      equals a C++ reference of ScaleCom bit for bit on 4 ranks;
#   5. a real model from PyTorch: the CNN of examples/pytorch/models.py
#      (2 conv + batch norm + pool + fc) exported with gradcomm-export,
#      compiled dense and with ScaleCom (ratio 100, beta 0.5, 100 dense
#      warm-up steps), trained on 4 ranks for
#      CNN_EPOCHS epochs (default 1) with examples/pytorch/train.py;
#   6. the 2-layer transformer language model of the same file on Debian's
#      GPL-3 text, dense and ScaleCom, LM_EPOCHS epochs (default 0.5);
#   7. ScaleCom on real models, shortened: the CNN in plain PyTorch DDP
#      with GradComm's hooks (dense, ScaleCom 100x and 400x with the
#      recipe), scripts/scalecom_study.sh on one seed and CNN_EPOCHS epochs
#      (the full study: docs/results.md).
#
# Sizes (defaults sized for about 12 minutes on 2 cores):
#   RANKS=4 (2 is built too: one rank per core), EPOCHS=2, SEEDS="1 2 3",
#   LR=0.1, EVAL_EVERY=100, STRATEGIES=(11 of the 18; STRATEGIES=all runs
#   every one of the 18, as docs/results.md does). Global batch = 32 * RANKS.
#   Times are wall time per step over shared memory (MPICH ch4:ucx), not a
#   network; with 4 ranks on 2 cores two ranks share each core (the runtime
#   yields the core while it waits, so this costs time, not 100x), so
#   compare times between strategies, not with a cluster. Bytes are exact
#   counts.
set -euo pipefail

cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
ranks=${RANKS:-4}
epochs=${EPOCHS:-2}
seeds=${SEEDS:-"1 2 3"}
lr=${LR:-0.1}
eval_every=${EVAL_EVERY:-100}
# The default: the recipe at each ratio, the paper's plain ScaleCom at 100
# and its low-pass chunked form at 400, and every other strategy once.
default_strategies="dense scalecom-r100-recipe scalecom-r400-recipe
  scalecom-r1000-recipe scalecom-r100-exact scalecom-r400-chunk-lp
  local-topk-r100 gossip gossip-async easgd easgd-async"
all_strategies="dense scalecom-r100-recipe scalecom-r400-recipe
  scalecom-r1000-recipe scalecom-r100-exact scalecom-r100-exact-lp
  scalecom-r100-chunk scalecom-r100-chunk-lp scalecom-r400-exact
  scalecom-r400-exact-lp scalecom-r400-chunk scalecom-r400-chunk-lp
  local-topk-r100 gossip gossip-async easgd easgd-async easgd-sharded"
strategies=${STRATEGIES:-$default_strategies}
[ "$strategies" = all ] && strategies=$all_strategies
case "$ranks" in 2 | 4) ;; *) echo "demo.sh: RANKS must be 2 or 4" >&2; exit 2 ;; esac

# shellcheck source=scripts/lib/packages.sh
source scripts/lib/packages.sh
gradcomm_install_packages "${GRADCOMM_DEMO_PACKAGES[@]}"
# shellcheck source=scripts/lib/python-env.sh
source scripts/lib/python-env.sh
gradcomm_python_env
python=$GRADCOMM_PYTHON

echo "== build"
mkdir -p "$build"
# The plain compiler, also where check.sh built the instrumented one here
# (GRADCOMM_SANITIZE_COMPILER stays in the build's cache otherwise).
cmake -G Ninja -S . -B "$build" -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DGRADCOMM_SANITIZE_COMPILER=OFF \
  -DGRADCOMM_PYTHON="$python" -DCMAKE_BUILD_TYPE=Release >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log"; exit 1; }
ninja -C "$build" all fashion-mnist-examples >/dev/null
# The package, editable: the trainers import gradcomm from .venv.
gradcomm_install_package "$build"

echo
echo "== 1. the ScaleCom pipeline on an annotated single-device step"
"$build/bin/gradcomm-opt" examples/graphs/linear_step.mlir \
  --gradcomm-scalecom-pipeline="ratio=16 beta=0.5 report=true" \
  --mlir-print-op-on-diagnostic=false 2>&1 |
  grep -E "remark|gradcomm\.|shard\.all_reduce|func.func"

echo
echo "== 2. Fashion-MNIST MLP: $ranks ranks, $epochs epochs, seeds $seeds," \
  "lr $lr, global batch $((32 * ranks))"
out=demo-out
rm -rf "$out/runs" "$out/cluster" && mkdir -p "$out/runs"
fm="$build/examples/fashion-mnist"
start=$(date +%s)
logs=()
for strategy in $strategies; do
  exe="$fm/fashion-mnist-np$ranks-$strategy"
  [ -x "$exe" ] || { echo "demo.sh: no trainer $exe" >&2; exit 1; }
  for seed in $seeds; do
    log="$out/runs/$strategy-seed$seed.csv"
    /usr/bin/mpiexec.mpich -n "$ranks" "$exe" --seed "$seed" \
      --epochs "$epochs" --lr "$lr" --eval-every "$eval_every" \
      --label "$strategy" --log "$log" | grep '^summary' |
      sed 's/^summary /  /'
    logs+=("$log")
  done
done
elapsed=$(($(date +%s) - start))

# The same training on an emulated cluster (bench/cluster/netns.sh): one
# network namespace per rank, links shaped to 1 Gbit/s, MPI over TCP only.
# Needs root and network namespaces; skipped (and said so) otherwise.
cluster_logs=()
cluster_context=""
cluster_strategies=${CLUSTER_STRATEGIES:-"dense scalecom-r100-recipe
  scalecom-r400-recipe scalecom-r100-exact local-topk-r100 gossip
  gossip-async easgd"}
cluster_epochs=${CLUSTER_EPOCHS:-1}
if [ "${CLUSTER:-1}" = 1 ] && [ "$(id -u)" -eq 0 ] &&
  ip netns add gcprobe 2>/dev/null; then
  ip netns delete gcprobe
  echo
  echo "== 2b. emulated cluster: $ranks ranks in network namespaces, 1 Gbit/s" \
    "links, MPI over TCP, $cluster_epochs epoch(s), seed 1"
  trap 'bash bench/cluster/netns.sh down' EXIT
  bash bench/cluster/netns.sh up "$ranks" 1gbit
  mkdir -p "$out/cluster"
  for strategy in $cluster_strategies; do
    log="$out/cluster/$strategy.csv"
    # Bounded: a job that printed its summary but hangs in MPI_Finalize
    # (UCX 1.13 over tcp, openucx/ucx#8738) is ended by netns.sh.
    if DONE_PATTERN='^summary' timeout 600 bash bench/cluster/netns.sh run "$ranks" \
      "$fm/fashion-mnist-np$ranks-$strategy" --seed 1 \
      --epochs "$cluster_epochs" --lr "$lr" --eval-every "$eval_every" \
      --label "$strategy" --log "$log" >"$out/cluster/$strategy.out" 2>&1; then
      sed -n 's/^summary /  /p' "$out/cluster/$strategy.out"
    else
      echo "  $strategy: failed or timed out ($out/cluster/$strategy.out)"
    fi
    [ -s "$log" ] && cluster_logs+=("$log")
  done
  bash bench/cluster/netns.sh down
  trap - EXIT
  cluster_context="$ranks ranks, one network namespace each, veth links
    into a bridge shaped with tc tbf to 1 Gbit/s both ways, MPICH over UCX
    tcp only; $cluster_epochs epoch(s), seed 1. On this 2-core machine the
    ranks also share cores and the TCP stack's CPU time; wall time is the
    training loop's, evaluation excluded."
else
  echo "(emulated cluster skipped: it needs root and network namespaces)"
fi
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
context="machine=$(nproc) cores, $cpu; ranks=$ranks (MPICH $(
  /usr/bin/mpichversion 2>/dev/null | sed -n 's/MPICH Version:[[:space:]]*//p' ||
  true), $( [ "$ranks" -le "$(nproc)" ] && echo "one rank per core" ||
  echo "$ranks ranks share $(nproc) cores: times include waiting for a core"
  )); training=$epochs epochs per run,
  global batch $((32 * ranks)), lr $lr, plain SGD, seeds $seeds; evaluation=every
  $eval_every steps on the 10,000 test images; times=wall time per step
  (and time inside GradComm calls) over shared memory, not a network;
  wall time of all runs=${elapsed} s; command=RANKS=$ranks EPOCHS=$epochs
  SEEDS='$seeds'${STRATEGIES:+ STRATEGIES='$STRATEGIES'} scripts/demo.sh"
cluster_args=()
[ "${#cluster_logs[@]}" -gt 0 ] &&
  cluster_args=(--cluster "${cluster_logs[@]}" --cluster-context
    "$cluster_context")
# How far this shorter run is from the full one docs/results.md publishes
# (docs/results/runs/: the same trainers, 4 ranks, learning rate 0.1 and
# seeds, every strategy, more epochs). Other ranks or rates train another
# way, so there is nothing to compare with.
full_args=()
if [ "$ranks" = 4 ] && [ "$lr" = 0.1 ] &&
  compgen -G "docs/results/runs/*.csv" >/dev/null; then
  full_args=(--full docs/results/runs/*.csv --full-context "The full run is
    the one docs/results.md publishes (docs/results/runs/): the same
    trainers, ranks, learning rate and batch.")
fi
"$python" scripts/lib/report.py "$out" --context "$context" \
  "${cluster_args[@]}" "${full_args[@]}" -- "${logs[@]}"
echo
sed -n '/^| strategy/,/^$/p' "$out/report.md"
echo "(plots and the HTML page: $out/report.md, $out/report.html)"

echo
echo "== 3. correctness: compiled ScaleCom step vs C++ reference, 4 ranks"
/usr/bin/mpiexec.mpich -n 4 \
  "$build/examples/linear-regression/linear-regression-scalecom-exact-np4" \
  --steps 20 --reference scalecom --k 128 --quiet | tail -n 1

echo
# train_exported <model> <mlir> <epochs> <train.py options...>: compiles the
# exported step dense and with ScaleCom (ratio 100, beta 0.5, 100 dense
# warm-up steps) and trains each.
train_exported() {
  local model=$1 mlir=$2 epochs=$3 strategy
  shift 3
  for strategy in dense scalecom; do
    local options=(--strategy=$strategy)
    # gradcomm-compile's defaults are the recipe's compiled parts (beta
    # 0.5, 100 dense warm-up steps; docs/scalecom.md, "The recipe").
    [ "$strategy" = scalecom ] && options+=(--ratio=100)
    "$build/bin/gradcomm-compile" "$mlir" -o "${mlir%.mlir}-$strategy.so" \
      --emit=shared "${options[@]}"
    /usr/bin/mpiexec.mpich -n 4 "$python" examples/pytorch/train.py \
      --model "$model" --library "${mlir%.mlir}-$strategy.so" \
      --manifest "${mlir%.mlir}.json" --epochs "$epochs" \
      --label "$model-$strategy" "$@" | sed 's/^summary /  /'
  done
}

cnn_epochs=${CNN_EPOCHS:-1}
echo "== 4. a PyTorch model: the Fashion-MNIST CNN exported with" \
  "gradcomm-export, 4 ranks, $cnn_epochs epoch(s), SGD momentum 0.9, lr 0.05"
exported="$out/exported"
rm -rf "$exported" && mkdir -p "$exported"
"$build/bin/gradcomm-export" examples/pytorch/models.py:cnn --batch 32 \
  --ranks 4 --momentum 0.9 --lr 0.05 -o "$exported/cnn.mlir"
train_exported cnn "$exported/cnn.mlir" "$cnn_epochs"

echo
lm_epochs=${LM_EPOCHS:-0.5}
echo "== 5. the 2-layer transformer language model exported from PyTorch," \
  "on Debian's GPL-3 text, 4 ranks, $lm_epochs epoch(s), Adam lr 0.003"
"$build/bin/gradcomm-export" examples/pytorch/models.py:transformer \
  --batch 8 --ranks 4 --optimizer adam --lr 0.003 -o "$exported/lm.mlir"
train_exported transformer "$exported/lm.mlir" "$lm_epochs" \
  --optimizer-options ""

echo
echo "== 6. ScaleCom on real models, the short study: the CNN in plain" \
  "PyTorch DDP, 2 ranks, GradComm's hooks (dense, ScaleCom 100x and 400x with" \
  "the recipe), $cnn_epochs epoch(s), seed 1"
# The full study's CNN runs (docs/results.md, "ScaleCom on real models"):
# the report says how far this cut is from them.
full_study=$(compgen -G "docs/results/study/runs/cnn-dense-seed*.json"
  compgen -G "docs/results/study/runs/cnn-scalecom-r[14]00-seed*.json") || true
OUT="$out/study" MODELS=cnn SEEDS=1 EPOCHS="$cnn_epochs" ABLATION=0 \
  EVALUATIONS=2 LABELS="dense scalecom-r100 scalecom-r400" \
  FULL="$full_study" bash scripts/scalecom_study.sh | grep -v '^== python'
sed -n '/^| strategy/,/^$/p;/^Against the full run/p' "$out/study/report.md"
echo "This is the study of docs/results.md (\"ScaleCom on real models\") cut"
echo "to one model, one seed and $cnn_epochs of its 5 epochs (the second table:"
echo "how far it is from the full run); the learning rate decays to 0 over"
echo "the shorter run too, so its gaps are larger and noisier."

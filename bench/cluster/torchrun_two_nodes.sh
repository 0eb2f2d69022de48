#!/usr/bin/env bash
# bench/cluster/torchrun_two_nodes.sh - the Fashion-MNIST CNN trainer on
# two emulated nodes (bench/cluster/netns.sh: one network namespace each,
# 1 Gbit/s, UCX over tcp), launched the two ways a user launches it:
# torchrun on each node (the runtime's MPI starts through torchrun's store)
# and mpiexec. Prints, per launcher and communication, the step time, the
# test accuracy and the bytes node 0 sent on its link; the two launchers
# must give the same accuracy. Root; a benchmark, never a test.
#
#   bench/cluster/torchrun_two_nodes.sh [EPOCHS] [RATE]
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs=${1:-0.1} rate=${2:-1gbit}
netns=bench/cluster/netns.sh
python=$PWD/.venv/bin/python
export GRADCOMM_RUNTIME_LIBRARY=${GRADCOMM_RUNTIME_LIBRARY:-$PWD/build/lib/libgradcomm_runtime.so}
work=$(mktemp -d)
trap 'bash $netns down; rm -rf "$work"' EXIT
bash "$netns" up 2 "$rate"

sent() { ip -n gcr0 -s link show eth0 | awk '/TX:/ {getline; print $1}'; }

report() { # label comm json bytes
  "$python" - "$@" <<'PY'
import json, sys
label, comm, path, sent = sys.argv[1:]
run = json.load(open(path))
print("%-9s %-9s %7.1f ms/step  CPU %6.1f ms/step  accuracy %.4f  "
      "node 0 sent %6.2f MB" % (label, comm, run["ms_per_step"],
                                run["cpu_ms_per_step"],
                                run["curve"][-1]["test_accuracy"],
                                int(sent) / 1e6))
PY
}

args=(examples/pytorch/train_fmnist.py --model cnn --epochs "$epochs"
  --seed 1 --warmup-epochs 0)
echo "CNN, $epochs epochs, 2 nodes at $rate (ScaleCom ratio 100, no warm-up)"
for comm in dense scalecom; do
  before=$(sent)
  bash "$netns" torchrun 2 "${args[@]}" --comm "$comm" \
    --json "$work/torchrun-$comm.json" >"$work/torchrun-$comm.out" 2>&1 ||
    { cat "$work/torchrun-$comm.out"; exit 1; }
  report torchrun "$comm" "$work/torchrun-$comm.json" $(($(sent) - before))
  before=$(sent)
  DONE_PATTERN='^summary' bash "$netns" run 2 env MASTER_ADDR=10.77.0.1 \
    MASTER_PORT=29511 GLOO_SOCKET_IFNAME=eth0 "$python" "${args[@]}" \
    --comm "$comm" --json "$work/mpiexec-$comm.json" \
    >"$work/mpiexec-$comm.out" 2>&1 || { cat "$work/mpiexec-$comm.out"; exit 1; }
  report mpiexec "$comm" "$work/mpiexec-$comm.json" $(($(sent) - before))
done

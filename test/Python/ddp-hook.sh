#!/usr/bin/env bash
# gradcomm.torch.ddp end to end (test/Python/ddp_hook.py says what each
# case checks). Usage: ddp-hook.sh <ranks> <mpiexec> <runtime library> <work>
set -euo pipefail
ranks=$1 mpiexec=$2 library=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
export GRADCOMM_RUNTIME_LIBRARY=$library
rm -rf "$work" && mkdir -p "$work/checkpoint"
case_() { # <case> [args]: a fresh rendezvous file per job
  rm -f "$work/rendezvous"
  GRADCOMM_TEST_RENDEZVOUS=$work/rendezvous timeout 300 "$mpiexec" \
    -n "$ranks" "${GRADCOMM_PYTHON:-/usr/bin/python3}" "$here/ddp_hook.py" "$@"
}
# One job for the cases that need no fresh process (a Python start-up per
# rank is about 3 s of CPU: one per case made up most of this test's time).
cases=(dense scalecom recipe gossip easgd overlap sixteen-bits)
[ "$ranks" -gt 1 ] && cases+=(bad)
# torch.compile's compile time is paid once per rank: at 2 ranks only.
[ "$ranks" -eq 2 ] && cases+=(compile)
case_ "${cases[@]}"
if [ "$ranks" -gt 1 ]; then
  case_ save "$work/checkpoint"
  case_ resume "$work/checkpoint"
  # Started without mpiexec (as torchrun starts them): MPI comes up through
  # the process group's store, and the hooks work as under mpiexec.
  rm -f "$work/rendezvous"
  pids=()
  for ((rank = 0; rank < ranks; rank++)); do
    TEST_RANK=$rank TEST_SIZE=$ranks GRADCOMM_TEST_RENDEZVOUS=$work/rendezvous \
      timeout 300 "${GRADCOMM_PYTHON:-/usr/bin/python3}" "$here/ddp_hook.py" \
      no-mpiexec &
    pids+=($!)
  done
  status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  [ "$status" -eq 0 ] || { echo "no-mpiexec failed" >&2; exit 1; }
fi

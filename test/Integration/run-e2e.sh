#!/usr/bin/env bash
# End-to-end checks of compiled training steps under MPI (registered with
# ctest by test/Integration/CMakeLists.txt).
#
#   run-e2e.sh reference <mpiexec> <n> <trainer> <trainer args...>
#       the trainer's own check against its C++ reference (exit code)
#   run-e2e.sh same-weights <mpiexec> <n> <trainer-a> <trainer-b>
#       both train 20 steps to bit-identical weights
#   run-e2e.sh resume <mpiexec> <n> <trainer> <scratch-dir>
#       10 steps + checkpoint, a new process restores and runs to 20:
#       bit-identical to an uninterrupted 20-step run
#   run-e2e.sh bytes <mpiexec> <n> <trainer> <values> <indices> <args...>
#       the runtime's counters show the expected bytes per step
#   run-e2e.sh learns <mpiexec> <n> <async trainer> <sync trainer> <args...>
#       for the asynchronous steps, whose bits depend on timing: the run
#       ends, and its mean loss over the last 10 steps is below its first
#       and within 10 % of the synchronous form's
set -euo pipefail
mode=$1 mpiexec=$2 n=$3
shift 3
hash_of() { grep '^weights-hash' <<<"$1" | awk '{print $2}'; }
case "$mode" in
reference)
  exe=$1; shift
  "$mpiexec" -n "$n" "$exe" --quiet "$@"
  ;;
same-weights)
  a=$("$mpiexec" -n "$n" "$1" --steps 20 --quiet)
  b=$("$mpiexec" -n "$n" "$2" --steps 20 --quiet)
  echo "$a"; echo "$b"
  [ -n "$(hash_of "$a")" ] && [ "$(hash_of "$a")" = "$(hash_of "$b")" ]
  ;;
resume)
  exe=$1 dir=$2
  mkdir -p "$dir"
  rm -f "$dir"/ckpt*
  whole=$("$mpiexec" -n "$n" "$exe" --steps 20 --quiet)
  "$mpiexec" -n "$n" "$exe" --steps 10 --save-after 10 \
    --checkpoint "$dir/ckpt" --quiet >/dev/null
  resumed=$("$mpiexec" -n "$n" "$exe" --steps 20 --resume "$dir/ckpt" --quiet)
  echo "uninterrupted: $(hash_of "$whole")  resumed: $(hash_of "$resumed")"
  [ -n "$(hash_of "$whole")" ] && [ "$(hash_of "$whole")" = "$(hash_of "$resumed")" ]
  ;;
bytes)
  exe=$1 values=$2 indices=$3
  shift 3
  out=$("$mpiexec" -n "$n" "$exe" --quiet "$@")
  echo "$out"
  grep -q "bytes sent per step: values $values, indices $indices " <<<"$out"
  ;;
learns)
  async=$1 sync=$2
  shift 2
  # Mean loss of the last 10 logged steps; the first step's loss.
  tail_loss() { grep '^step .* loss' <<<"$1" | tail -n 10 | awk '{s += $4} END {print s / NR}'; }
  first_loss() { grep -m1 '^step .* loss' <<<"$1" | awk '{print $4}'; }
  a=$("$mpiexec" -n "$n" "$async" "$@")
  s=$("$mpiexec" -n "$n" "$sync" "$@")
  echo "first $(first_loss "$a"); last 10: async $(tail_loss "$a"), sync $(tail_loss "$s")"
  awk -v f="$(first_loss "$a")" -v a="$(tail_loss "$a")" -v s="$(tail_loss "$s")" \
    'BEGIN { exit !(a < f && a <= 1.1 * s) }'
  ;;
*)
  echo "run-e2e.sh: unknown mode $mode" >&2
  exit 2
  ;;
esac

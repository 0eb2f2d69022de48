#!/usr/bin/env bash
# A rank that never joins a collective: the others' watchdog
# (GRADCOMM_TIMEOUT=1) reports GRADCOMM_ERR_TIMEOUT and aborts the job in
# seconds instead of waiting forever (the test fails after 60 s).
# Usage: watchdog.sh <mpiexec> <watchdog test program>
set -uo pipefail
mpiexec=$1 program=$2
start=$(date +%s)
output=$(GRADCOMM_TIMEOUT=1 timeout 60 "$mpiexec" -n 2 "$program" 2>&1)
status=$?
elapsed=$(($(date +%s) - start))
echo "$output" | grep -v '^$' | head -n 5
echo "exit status $status after $elapsed s"
[ "$status" -ne 0 ] && [ "$status" -ne 124 ] ||
  { echo "FAIL: the job did not abort (124: timed out)"; exit 1; }
echo "$output" | grep -q "dense_all_reduce_f32 'watchdog' on rank 0 of 2: timed out after" ||
  { echo "FAIL: no timeout message"; exit 1; }
echo "$output" | grep -q "waiting for the other 1 rank(s) of the group" ||
  { echo "FAIL: the message does not name the peers"; exit 1; }
[ "$elapsed" -lt 30 ] || { echo "FAIL: took $elapsed s"; exit 1; }
echo "ok"

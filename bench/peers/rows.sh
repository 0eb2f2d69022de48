# shellcheck shell=bash
# bench/peers/rows.sh - the peer comparison's rows, shared by run.sh (step
# times on the link) and accuracy.sh (curves to accuracy): sourced, not run.

# The LM's recipe (docs/results.md, "Factor masking was the LM's momentum
# sink"): momentum correction with the velocity kept, the embeddings and
# the first and last modules dense; its rows train with --warmup 100.
LM_RECIPE="--momentum-correction 1 --keep-velocity 1 --dense vectors,embeddings,first,last"

# label -> the trainer's communication flags.
declare -A ROWS=(
  [ddp]="--comm ddp"
  [bf16]="--comm bf16"
  [fp16]="--comm fp16"
  [powersgd1]="--comm powersgd --powersgd-rank 1"
  [powersgd2]="--comm powersgd --powersgd-rank 2"
  [powersgd4]="--comm powersgd --powersgd-rank 4"
  [gc-dense]="--comm dense"
  [gc-dense-bf16]="--comm dense --wire bf16"
  # ScaleCom as the recipe recommends for momentum SGD: momentum
  # correction on (the hook keeps the velocity, docs/scalecom.md).
  [gc-r100]="--comm scalecom --ratio 100 --momentum-correction 1"
  [gc-r100-bf16]="--comm scalecom --ratio 100 --wire bf16 --momentum-correction 1"
  [gc-r400]="--comm scalecom --ratio 400 --momentum-correction 1"
  [gc-r400-bf16]="--comm scalecom --ratio 400 --wire bf16 --momentum-correction 1"
  # Momentum correction without factor masking (docs/scalecom.md, "The
  # recipe"): what the transformer LM needs.
  [gc-r100-keep]="--comm scalecom --ratio 100 --momentum-correction 1 --keep-velocity 1"
  [gc-r10-keep]="--comm scalecom --ratio 10 --momentum-correction 1 --keep-velocity 1"
  # The LM's rows (LM_RECIPE above) at ratio 10, then its variants
  # (docs/results.md, "Closing the LM's gap"): the low-pass coefficient
  # (1: none; 0.25; 0.1) and twice the values (ratio 5).
  [gc-r10-lm]="--comm scalecom --ratio 10 $LM_RECIPE"
  [gc-r10-lm-bf16]="--comm scalecom --ratio 10 --wire bf16 $LM_RECIPE"
  [gc-r10-lm-bf16-beta1]="--comm scalecom --ratio 10 --wire bf16 $LM_RECIPE --beta 1"
  [gc-r5-lm-bf16]="--comm scalecom --ratio 5 --wire bf16 $LM_RECIPE"
  [gc-r10-lm-bf16-beta025]="--comm scalecom --ratio 10 --wire bf16 $LM_RECIPE --beta 0.25"
  # gc-r5-lm-bf16-beta025 is the LM's best row (3 seeds).
  [gc-r5-lm-bf16-beta025]="--comm scalecom --ratio 5 --wire bf16 $LM_RECIPE --beta 0.25"
  [gc-r5-lm-bf16-beta01]="--comm scalecom --ratio 5 --wire bf16 $LM_RECIPE --beta 0.1"
  # A third of the values (docs/results.md, "Ratio 3").
  [gc-r3-lm-bf16-beta025]="--comm scalecom --ratio 3 --wire bf16 $LM_RECIPE --beta 0.25"
  # Local top-k has no warm-up of its own (the hook refuses one); the
  # table reads steps after the others' warm-up in any case.
  [gc-topk-r100]="--comm local-topk --ratio 100 --warmup-steps 0"
  [gc-auto]="--comm scalecom --policy auto --wire bf16 --momentum-correction 1"
)
ORDER=(ddp bf16 fp16 powersgd1 powersgd2 powersgd4 gc-dense gc-dense-bf16
  gc-r100 gc-r100-bf16 gc-r400 gc-r400-bf16 gc-r100-keep gc-r10-keep
  gc-r10-lm gc-r10-lm-bf16 gc-r10-lm-bf16-beta1 gc-r5-lm-bf16
  gc-r10-lm-bf16-beta025 gc-r5-lm-bf16-beta025 gc-r5-lm-bf16-beta01
  gc-r3-lm-bf16-beta025 gc-topk-r100 gc-auto)

# row_flags ROW OPTIMIZER: the trainer's flags for ROW. With Adam the
# ScaleCom rows run plain error feedback: momentum correction is for SGD's
# momentum (the trainer refuses the pair; docs/pytorch.md).
row_flags() {
  local flags=${ROWS[$1]}
  if [ "$2" != sgd ]; then
    flags=${flags/--momentum-correction 1/}
    flags=${flags/--keep-velocity 1/}
  fi
  echo "$flags"
}

# optimizer_flags OPTIMIZER [LR]: the shared hyper-parameters. SGD: lr
# 0.05, momentum 0.9 (the study's); Adam: lr 0.003 (the recipe study's
# transformer, docs/results.md).
optimizer_flags() {
  case "$1" in
  sgd) echo "--optimizer sgd --lr ${2:-0.05} --momentum 0.9" ;;
  adam) echo "--optimizer adam --lr ${2:-0.003}" ;;
  *) echo "${0##*/}: unknown optimizer '$1' (sgd or adam)" >&2; return 2 ;;
  esac
}

# with_optimizer TAG OPTIMIZER: the files' tag; SGD's (the studies' first
# protocol) keeps the plain one.
with_optimizer() {
  if [ "$2" = sgd ]; then echo "$1"; else echo "$1-$2"; fi
}

# check_rows ROW...: every ROW is in the table ("solo" too when
# SOLO_ALLOWED=1).
check_rows() {
  local row
  for row in "$@"; do
    { [ "$row" = solo ] && [ "${SOLO_ALLOWED:-0}" = 1 ]; } ||
      [ -n "${ROWS[$row]:-}" ] || {
      echo "${0##*/}: unknown row '$row' (rows: ${ORDER[*]})" >&2
      return 2
    }
  done
}

# run_row FAILURES LOG COMMAND...: runs COMMAND (stdout and stderr to
# LOG) up to 5 times until it succeeds; appends "<label>: N failed runs"
# to FAILURES (label: LOG's name). Returns 1 when it never succeeded.
# PowerSGD over gloo can fail: its hook and its futures' callbacks start
# all-reduces from two threads, and when their order differs between the
# ranks gloo aborts ("Received data size doesn't match expected size") or
# resets the connection.
run_row() {
  local failures=$1 log=$2 attempt=1 finished=1
  shift 2
  until "$@" >"$log" 2>&1; do
    grep -h "what()\|Connection reset" "$log" | head -n 1 >&2 || true
    if [ "$attempt" -ge 5 ]; then
      echo "${0##*/}: failed $attempt times; the output: $log" >&2
      finished=0
      break
    fi
    echo "${0##*/}: $(basename "$log") failed (attempt $attempt);" \
      "running it again" >&2
    attempt=$((attempt + 1))
  done
  echo "$(basename "$log" .out): $((attempt - finished)) failed runs" \
    >>"$failures"
  [ "$finished" = 1 ]
}

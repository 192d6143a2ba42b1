#!/usr/bin/env bash
# 2 and 3 ranks (and 2 ranks x 2 local devices) train the same model as one process with
# the same global batch: within 1e-5 (SGD with momentum); bitwise in deterministic mode.
source "$(dirname "$0")/common.sh"
common=(train --limit-train 1000 --limit-test 200 --epochs 2 --batch-size 100 --seed 3
        --layers 256,128 --verbose 0)
sgd=(--optimizer sgd --lr 0.05)

"$TANDEM" "${common[@]}" "${sgd[@]}" --threads 1 --save "$WORK/one.tandem" > /dev/null
for ranks in 2 3; do
  "${MPIRUN[@]}" -np $ranks "$TANDEM" "${common[@]}" "${sgd[@]}" --save "$WORK/r$ranks.tandem" \
    > "$WORK/r$ranks.out"
  "$WEIGHTS_DIFF" "$WORK/one.tandem" "$WORK/r$ranks.tandem" 1e-5 || fail "$ranks ranks differ"
  expect_in "$WORK/r$ranks.out" "fit:"
done
"${MPIRUN[@]}" -np 2 "$TANDEM" "${common[@]}" "${sgd[@]}" --devices 2 \
  --save "$WORK/r2x2.tandem" > /dev/null 2>&1
"$WEIGHTS_DIFF" "$WORK/one.tandem" "$WORK/r2x2.tandem" 1e-5 || fail "2 ranks x 2 devices differ"

# Deterministic: RMSprop (which magnifies any rounding difference) and Dropout-free, bitwise.
"$TANDEM" "${common[@]}" --deterministic --threads-per-device 1 --save "$WORK/d1.tandem" \
  > /dev/null
for setup in "-np 2" "-np 4" "-np 2 --devices 2"; do
  read -r np n devices d <<< "$setup"
  extra=()
  [ -n "${devices:-}" ] && extra=(--devices "$d")
  "${MPIRUN[@]}" $np $n "$TANDEM" "${common[@]}" --deterministic "${extra[@]}" \
    --save "$WORK/d.tandem" > /dev/null 2>&1
  "$WEIGHTS_DIFF" "$WORK/d1.tandem" "$WORK/d.tandem" 0 || fail "deterministic $setup not bitwise"
done

# bf16 compression: close to float32, not equal.
"${MPIRUN[@]}" -np 2 "$TANDEM" "${common[@]}" "${sgd[@]}" --grad-compression bf16 \
  --save "$WORK/bf16.tandem" > /dev/null
"$WEIGHTS_DIFF" "$WORK/one.tandem" "$WORK/bf16.tandem" 1e-2 || fail "bf16 run too far off"
if "$WEIGHTS_DIFF" "$WORK/one.tandem" "$WORK/bf16.tandem" 0 > /dev/null; then
  fail "bf16 compression changed nothing"
fi
echo "PASS"

#!/usr/bin/env bash
# The main job: installs what is missing, builds Release and the Python package (into .venv),
# and runs the report's program (the MLP 784-4096-2048-512-64-10, RMSprop, batch 128) through
# tandem.keras with only its imports changed: on 1 device, then with multi_gpu_model(model, 2),
# printing fit and predict seconds as the report did (5 epochs, Fashion-MNIST).
#   EPOCHS=1 scripts/run_main.sh   a short run
#   FULL=1 scripts/run_main.sh     adds the CLI's runs: 2 devices with multi_gpu_model's own
#                                  design (host strategy) and 2 MPI processes
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
scripts/python_env.sh
epochs="${EPOCHS:-5}"
devices="${DEVICES:-2}"
summary=()
record() {
  local label="$1" log="$2"
  summary+=("$(printf '%-34s %s | %s' "$label" "$(grep '^fit:' "$log")" "$(grep '^predict:' "$log")")")
}
python_run() {
  local label="$1" gpus="$2" log="$3"
  echo
  echo "== the report's program (Python, tandem.keras), ${label} =="
  .venv/bin/python examples/report_program.py "$gpus" "$epochs" | tee "$log"
  record "$label" "$log"
}
python_run "1 device" 1 build/main_1device.log
python_run "multi_gpu_model(model, $devices)" "$devices" build/main_mirrored.log

if [ "${FULL:-0}" = 1 ]; then
  cli_run() {
    local label="$1" log="$2"
    shift 2
    echo
    echo "== seed model on Fashion-MNIST (CLI), ${label} =="
    "${launcher[@]}" ./build/tandem train --dataset fashion-mnist --epochs "$epochs" \
      --batch-size 128 --seed 1 --verbose 2 "$@" | tee "$log"
    record "$label" "$log"
  }
  launcher=()
  cli_run "$devices devices, host (CLI)" build/main_host.log --devices "$devices" \
    --strategy host --metrics-json build/main_host.json
  if [ -x build/bench/mpi_bench ] && command -v mpirun > /dev/null; then
    launcher=(mpirun --allow-run-as-root --bind-to core -np 2)
    cli_run "2 MPI ranks (CLI)" build/main_mpi.log --metrics-json build/main_mpi.json
  fi
fi
echo
echo "== summary (seconds; the report measured 25 s on 1 GPU and 50 s on 4 GPUs) =="
printf '%s\n' "${summary[@]}"

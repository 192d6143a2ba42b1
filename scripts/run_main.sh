#!/usr/bin/env bash
# The main job: installs what is missing, builds Release, and runs the seed's model on
# Fashion-MNIST (5 epochs, batch 128) on 1 device, on 2 devices (mirrored) and on 2 devices
# with keras multi_gpu_model's design (host), and on 2 MPI processes, printing fit and
# predict times like the seed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
epochs="${EPOCHS:-5}"
devices="${DEVICES:-2}"
summary=()
run() {
  local label="$1" log="$2"
  shift 2
  echo
  echo "== seed model on Fashion-MNIST, ${label} =="
  "${launcher[@]}" ./build/tandem train --dataset fashion-mnist --epochs "$epochs" \
    --batch-size 128 --seed 1 --verbose 2 "$@" | tee "$log"
  summary+=("$(printf '%-28s %s | %s | %s' "$label" "$(grep '^fit:' "$log")" \
    "$(grep '^predict:' "$log")" "$(grep '^test loss' "$log")")")
}
launcher=()
run "1 device" build/main_1device.log --devices 1 --metrics-json build/main_1device.json
run "$devices devices (mirrored)" build/main_mirrored.log --devices "$devices" \
  --metrics-json build/main_mirrored.json
run "$devices devices (host)" build/main_host.log --devices "$devices" --strategy host \
  --metrics-json build/main_host.json
# The same across processes: 2 MPI ranks of one core each (when MPI was built).
if [ -x build/bench/mpi_bench ] && command -v mpirun > /dev/null; then
  launcher=(mpirun --allow-run-as-root --bind-to core -np 2)
  run "2 MPI ranks" build/main_mpi.log --metrics-json build/main_mpi.json
fi
echo
echo "== summary (seconds; the seed reported 25 s on 1 GPU and 50 s on 4 GPUs) =="
printf '%s\n' "${summary[@]}"

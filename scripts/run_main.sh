#!/usr/bin/env bash
# The main job: installs what is missing, builds Release, and runs the seed's model on
# Fashion-MNIST (5 epochs, batch 128), printing fit and predict times like the seed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build
epochs="${EPOCHS:-5}"
echo
echo "== seed model on Fashion-MNIST: 1 device =="
./build/tandem train --dataset fashion-mnist --epochs "$epochs" --batch-size 128 --seed 1 \
  --metrics-json build/main_1device.json

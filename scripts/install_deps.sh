#!/usr/bin/env bash
# Installs the Debian 12 packages tandem needs, only when one is missing (as root, or via sudo).
set -euo pipefail
packages=(g++ cmake ninja-build pkg-config libgtest-dev libgmock-dev libbenchmark-dev
          libdnnl-dev zlib1g-dev libcli11-dev libfmt-dev nlohmann-json3-dev
          libopenmpi-dev openmpi-bin dataset-fashion-mnist python3 python3-venv python3-dev
          iproute2 clang-14 libclang-rt-14-dev libzip-dev libhdf5-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update
"${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"

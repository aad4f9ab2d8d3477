#!/usr/bin/env bash
# Installs the Debian packages mpsim builds with. Idempotent: does nothing when all are present.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev libfmt-dev libboost-graph-dev libeigen3-dev libcli11-dev nlohmann-json3-dev
  libtomlplusplus-dev         # TorchTitan job configs (plan import --from torchtitan), header-only use
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  zlib1g-dev                  # gzip-compressed traces (--trace run.json.gz)
  jq                          # bench/closed_loop.sh
  qt6-base-dev
  clang libclang-rt-14-dev    # the sanitizer build and the libFuzzer harnesses (tests/fuzz)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

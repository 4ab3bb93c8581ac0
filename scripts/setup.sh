#!/usr/bin/env bash
# setup.sh — installs what EMO needs to build and test on Debian 12 (run as root).
set -euo pipefail
packages=(cmake ninja-build g++ clang clang-format libclang-rt-14-dev python3
          libsimdjson-dev libcli11-dev libfmt-dev nlohmann-json3-dev zlib1g-dev libsqlite3-dev
          libgtest-dev libgmock-dev libbenchmark-dev libfftw3-dev libcurl4-openssl-dev libxgboost-dev libisal-dev
          libglpk-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

#!/usr/bin/env bash
# setup.sh — installs what EMO needs to build and test on Debian 12 (run as root). With
# --build-only, what the emo executable needs (scripts/demo.sh): no clang, tests or benchmarks.
set -euo pipefail
packages=(cmake ninja-build g++ pkgconf libsimdjson-dev libcli11-dev libfmt-dev nlohmann-json3-dev zlib1g-dev
          libsqlite3-dev libfftw3-dev libcurl4-openssl-dev libxgboost-dev libisal-dev libglpk-dev)
if [ "${1:-}" != --build-only ]; then
  packages+=(clang clang-format libclang-rt-14-dev python3 libgtest-dev libgmock-dev libbenchmark-dev)
fi
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

#!/usr/bin/env bash
# demo.sh — sets up, builds, and runs EMO's main job on its default input: the execution-graph
# analysis of the real 8-rank DLRM training trace (until the simulator becomes the default device).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target emo
traces=${EMO_TRACES:-../shared/traces}
./build/emo analyze "$traces/param/dlrm_kineto"

#!/usr/bin/env bash
# demo.sh — sets up, builds, and runs EMO's main job on its default device, the simulator:
# a tensor-parallel training workload on two simulated A100s is run and traced, and its trace
# analysed (execution graph, replay, critical path, slack, packing); the workload is run again
# under GEEPAFS; then the same analysis of a real 8-rank training trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release --target emo
emo=build-release/emo
out=build-release/demo
mkdir -p "$out"
"$emo" sim --workload workloads/tp2-gpt3-6.7b-a100.json --iterations 5 --trace "$out/tp2-trace" \
  --measure "$out/tp2-measure.json"
"$emo" analyze "$out/tp2-trace"
# The same workload under an online baseline (GEEPAFS), measured after its first probe.
"$emo" sim --workload workloads/tp2-gpt3-6.7b-a100.json --iterations 12 --warmup 6 --controller geepafs \
  --measure "$out/tp2-geepafs-measure.json"
traces=${EMO_TRACES:-../shared/traces}
if [ -d "$traces/param/dlrm_kineto" ]; then "$emo" analyze "$traces/param/dlrm_kineto"; fi

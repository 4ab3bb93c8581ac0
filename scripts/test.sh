#!/usr/bin/env bash
# test.sh — sets up, builds and runs every test: a -Werror build, the same tests under
# AddressSanitizer + UndefinedBehaviorSanitizer, and a short libFuzzer run of the JSON importer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
traces=$(realpath -m "${EMO_TRACES:-../shared/traces}")

echo "== build and test (-Werror)"
cmake -S . -B build -G Ninja -DEMO_WERROR=ON -DEMO_TRACES="$traces" >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== build and test under ASan + UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEMO_WERROR=ON -DEMO_SANITIZE=ON -DEMO_BENCH=OFF \
  -DEMO_TRACES="$traces" >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan --output-on-failure -j "$jobs"

echo "== fuzz the Kineto JSON importer (${EMO_FUZZ_SECONDS:-60} s)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEMO_FUZZ=ON -DEMO_BENCH=OFF \
  -DEMO_TRACES="$traces" >/dev/null
cmake --build build-fuzz -j "$jobs" --target kineto_json_fuzz
corpus=build-fuzz/corpus
mkdir -p "$corpus"
for f in "$traces"/HolisticTraceAnalysis/critical_path/cuda_event_sync*/event_sync_trace.json.gz \
         "$traces"/HolisticTraceAnalysis/triton_example/triton_example.json.gz \
         "$traces"/HolisticTraceAnalysis/amd_trace/*.json.gz; do
  [ -f "$f" ] && gzip -dc "$f" >"$corpus/$(basename "$(dirname "$f")").json"
done
build-fuzz/kineto_json_fuzz -max_total_time="${EMO_FUZZ_SECONDS:-60}" -max_len=65536 -rss_limit_mb=4096 \
  -print_final_stats=1 "$corpus" 2>build-fuzz/fuzz.log || { tail -50 build-fuzz/fuzz.log; exit 1; }
tail -3 build-fuzz/fuzz.log
echo "fuzz: no crash"

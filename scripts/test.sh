#!/usr/bin/env bash
# test.sh — sets up, checks the formatting (.clang-format), builds and runs every test in one
# -Werror build under AddressSanitizer + UndefinedBehaviorSanitizer (clang, which compiles it in
# about half GCC's time; optimised, so that the end-to-end tests run at close to release speed;
# with the CUDA parts and the link checks), and
# short libFuzzer runs of the readers (Kineto traces, Nsight Systems exports, workload specs,
# frequency policies, device profiles, the pack profiler's files and the NCCL plugin's records).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
traces=$(realpath -m "${EMO_TRACES:-../shared/traces}")

echo "== formatting (.clang-format)"
find src tests bench fuzz \( -name '*.cc' -o -name '*.h' \) -print0 | xargs -0 clang-format --dry-run --Werror

echo "== build and test (-Werror, ASan + UBSan)"
# -g1: line tables for the sanitizers' reports, without a full debug build's compile time. A unity
# build, as scripts/demo.sh builds: faster, and it keeps the sources free of clashing file-local names.
cmake -S . -B build-check -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" \
  -DCMAKE_UNITY_BUILD=ON -DEMO_WERROR=ON -DEMO_SANITIZE=ON -DEMO_TRACES="$traces" >/dev/null
cmake --build build-check -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-check --output-on-failure -j "$jobs"

fuzz_s=${EMO_FUZZ_SECONDS:-80}  # 1/4 for the Kineto importer, 3/16 for each of the others
echo "== fuzz the Kineto JSON and Nsight Systems importers, workload specs, policies and device files (${fuzz_s} s)"
# -O1 -g1, as libFuzzer's documentation builds its targets (177 s against 192 s at -O2 -g in two CI runs).
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_UNITY_BUILD=ON -DEMO_FUZZ=ON -DEMO_BENCH=OFF \
  -DEMO_TRACES="$traces" >/dev/null
cmake --build build-fuzz -j "$jobs" --target kineto_json_fuzz workload_spec_fuzz policy_fuzz device_json_fuzz \
  nsys_sqlite_fuzz
corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/corpus-spec build-fuzz/corpus-policy build-fuzz/corpus-device build-fuzz/corpus-nsys
for f in "$traces"/HolisticTraceAnalysis/critical_path/cuda_event_sync*/event_sync_trace.json.gz \
         "$traces"/HolisticTraceAnalysis/triton_example/triton_example.json.gz \
         "$traces"/HolisticTraceAnalysis/amd_trace/*.json.gz; do
  [ -f "$f" ] && gzip -dc "$f" >"$corpus/$(basename "$(dirname "$f")").json"
done
# Counter events (each GPU's clock and power, as EMO's writer puts them) beside a kernel and its launch.
printf '{"traceEvents": [{"ph": "C", "name": "sm_clock", "pid": 0, "ts": 1.5, "args": {"MHz": 1410}},
  {"ph": "C", "name": "power", "pid": 0, "ts": 2, "args": {"W": 250.5}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 6, "dur": 4, "args": {"correlation": 1, "stream": 7}}]}' \
  >"$corpus/counters.json"
cp workloads/*.json build-fuzz/corpus-spec/
printf '{"gpus": [{"gpu": 0, "changes": [{"t_ms": 0, "mhz": 1410}, {"t_ms": 20, "mhz": 1065}]}]}' \
  >build-fuzz/corpus-policy/two-changes.json
# device_json_fuzz: the first byte picks the reader (0 profile, 1 ranges, 2 profiler result, 3 NCCL records,
# 4 pack metrics by hash, 5 an on-demand trace request).
{ printf '0'; cat profiles/h200-3clocks.json; } >build-fuzz/corpus-device/profile.json
printf '1{"ranges": [{"gpu": 0, "first": 3, "last": 9}, {"gpu": 1, "first": 0, "last": 0}]}' \
  >build-fuzz/corpus-device/ranges.json
printf '2{"gpu": 0, "kernels_seen": 12, "error": "", "ranges": [{"gpu": 0, "first": 3, "last": 9, "kernels": 7,
  "first_kernel": "gemm", "metrics": {"dram_read_bytes": 1e9, "warps_per_active_cycle": 16}}]}' \
  >build-fuzz/corpus-device/result.json
printf '3# emo-nccl-profiler 1\ncomm 00000000000000ab 0 2 1 world\nlaunch 4 00000000000000ab 0 1 77 10000 12000 7f00 0
coll 3 00000000000000ab 0 1 77 9000 90000 5 AllReduce 256 ncclFloat32 0 RING LL 2\n' >build-fuzz/corpus-device/nccl.txt
printf '4{"packs": [{"pack": 0, "hash": "bb7d413aa4b44d68", "kernels": 3, "metrics": {"sm_cycles_active": 5e8,
  "warps_per_active_cycle": 59.4, "dram_read_bytes": 4e7, "dram_write_bytes": 6.9e9, "l1_bytes": 1e9, "l2_bytes": 1e9,
  "inst_alu": 1e8, "inst_fma": 1e8, "inst_fp64": 0, "inst_lsu": 1e7, "inst_tensor": 0}}]}' >build-fuzz/corpus-device/packs.json
printf '5emo-trace-request 1 3 4 60\n' >build-fuzz/corpus-device/request.txt
cp fuzz/nsys_seed.sql build-fuzz/corpus-nsys/
# fuzz TARGET SECONDS MAX_LEN CORPUS: runs one target; on a crash shows its log and fails.
fuzz() {
  build-fuzz/"$1" -max_total_time="$2" -max_len="$3" -rss_limit_mb=4096 -print_final_stats=1 "$4" \
    2>"build-fuzz/$1.log" || { tail -50 "build-fuzz/$1.log"; exit 1; }
  tail -3 "build-fuzz/$1.log"
}
fuzz kineto_json_fuzz $((fuzz_s / 4)) 65536 "$corpus"
fuzz workload_spec_fuzz $((fuzz_s * 3 / 16)) 4096 build-fuzz/corpus-spec
fuzz policy_fuzz $((fuzz_s * 3 / 16)) 4096 build-fuzz/corpus-policy
fuzz device_json_fuzz $((fuzz_s * 3 / 16)) 16384 build-fuzz/corpus-device
fuzz nsys_sqlite_fuzz $((fuzz_s * 3 / 16)) 8192 build-fuzz/corpus-nsys
echo "fuzz: no crash"

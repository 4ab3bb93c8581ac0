#!/usr/bin/env bash
# gpu-check.sh — EMO's real-GPU paths on a machine with an NVIDIA GPU: the NVML back end (emo gpus),
# calibration (emo calibrate --device cuda:0), GPOEO's training (emo gpoeo train --device cuda:0),
# CUPTI tracing of an unmodified CUDA program and of a small PyTorch job (emo trace, also on
# demand), the replay of those traces (emo analyze), their packs' counters (emo profile), EMO's
# online loop (emo run --adapt), clock locking through a policy and the clocks' reset afterwards
# (also after a SIGKILL of EMO, by its watchdog), and GEEPAFS on real telemetry (emo run). Every
# step prints PASS, FAIL or SKIP and why.
# Usage: scripts/gpu-check.sh [BIN_DIR] [OUT_DIR]   (BIN_DIR holds emo and libemo_inject.so;
# it is built there with CMake when missing). Results for docs/hardware.md are in OUT_DIR.
set -u
cd "$(dirname "$0")/.."
bin=${1:-build-release}
out=${2:-gpu-check-out}
mkdir -p "$out"
emo=$bin/emo
if [ ! -x "$emo" ]; then
  cmake -S . -B "$bin" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMO_BENCH=OFF >/dev/null && cmake --build "$bin" --target emo emo_inject || exit 1
fi
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
skip() { echo "SKIP: $*"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv 2>&1 | head -5
"$emo" gpus && pass "emo gpus" || fail "emo gpus"
"$emo" gpus --json >"$out/gpus.json" || fail "emo gpus --json"
# The memory clocks NVML lists (one on HBM parts; several on GDDR ones, where gpoeo:memory=1 tunes them).
python3 -c "import json; print('memory clocks:', json.load(open('$out/gpus.json'))[0].get('supported_memory_clocks_mhz'))" || true

# Calibration on the GPU: the 12 CUDA microbenchmarks at three clocks through NVML, with their
# metric vectors from CUPTI range profiling, checked against the work the kernels were written to do.
if timeout 300 "$emo" calibrate --device cuda:0 --clocks 3 -o "$out/profile.json" 2>"$out/calibrate.err"; then
  python3 scripts/check_profile.py "$out/profile.json" && pass "calibration at three clocks" || fail "calibration at three clocks"
else
  cat "$out/calibrate.err"; fail "emo calibrate --device cuda:0"
fi
tail -3 "$out/calibrate.err"

# A CUDA program with two streams and an event dependency, traced through CUPTI injection.
if nvcc -O2 -arch=native -o "$out/two_streams" tests/gpu/two_streams.cu 2>"$out/nvcc.log"; then
  timeout 120 "$out/two_streams" 20 && pass "two_streams runs" || fail "two_streams runs"
  if timeout 180 "$emo" trace -o "$out/trace-cuda" -- "$out/two_streams" 20; then
    ls -l "$out/trace-cuda"
    if "$emo" analyze "$out/trace-cuda" --json >"$out/analyze-cuda.json"; then
      "$emo" analyze "$out/trace-cuda" | head -30
      python3 - "$out/analyze-cuda.json" <<'PY' && pass "CUDA trace replays within 3 %" || fail "CUDA trace replays within 3 %"
import json, sys
a = json.load(open(sys.argv[1]))
print("replay error", a["replay_error"], "observed_ms", a["observed_ms"], "nodes", a["nodes"])
sys.exit(0 if abs(a["replay_error"]) < 0.03 else 1)
PY
    else
      fail "emo analyze of the CUDA trace"
    fi
    # NVML's clock, power and energy counter beside the kernels, on CUPTI's clock: every sample
    # within 2 s of the kernels' span and some inside it, in plausible units.
    python3 - "$out/trace-cuda" <<'PY' && pass "counter tracks on the kernels' clock" || fail "counter tracks on the kernels' clock"
import glob, json, sys
d = json.load(open(sorted(glob.glob(sys.argv[1] + "/emo-trace-*.json"))[0]))
ev = d["traceEvents"]
k = [e for e in ev if e.get("cat") == "kernel"]
a, b = min(e["ts"] for e in k), max(e["ts"] + e["dur"] for e in k)
c = {}
for e in ev:
    if e.get("ph") == "C":
        c.setdefault(e["name"], []).append((e["ts"], list(e["args"].values())[0]))
for name, s in c.items():
    print(name, len(s), "samples", min(v for _, v in s), "-", max(v for _, v in s), "inside the kernels' span:",
          sum(a <= t <= b for t, _ in s))
ok = set(c) >= {"sm_clock", "power", "energy"} and all(a - 2e6 <= t <= b + 2e6 for s in c.values() for t, _ in s)
ok = ok and any(a <= t <= b for t, _ in c["power"]) and all(100 <= v <= 4000 for _, v in c["sm_clock"])
e = sorted(c["energy"])
w = (e[-1][1] - e[0][1]) / ((e[-1][0] - e[0][0]) * 1e-6) if e[-1][0] > e[0][0] else 0
print(f"energy counter: {w:.1f} W over {(e[-1][0] - e[0][0]) * 1e-6:.2f} s")
sys.exit(0 if ok and 10 < w < 2000 else 1)
PY
    # The pack profiler: the same program again under CUPTI range profiling of its unique packs
    # (one Fma kernel, one Scale kernel), checked against the work the kernels do.
    if timeout 180 "$emo" profile --trace "$out/trace-cuda" -o "$out/profile-cuda.json" -- "$out/two_streams" 20 \
        2>"$out/profile-cuda.err"; then
      cat "$out/profile-cuda.err"
      python3 - "$out/profile-cuda.json" <<'PY' && pass "emo profile of two_streams" || fail "emo profile of two_streams"
import json, sys
m = json.load(open(sys.argv[1]))
n = 1 << 24
ok = m["first_kernel_mismatches"] == 0 and len(m["packs"]) == 2
for p in m["packs"]:
    name, v = p["first_kernel"], p["metrics"]
    print(name, {k: f"{x:.4g}" for k, x in v.items() if x})
    if name.startswith("Fma"):  # one FFMA per round, 2000 rounds, one thread per element
        want = n / 32 * 2000
        print(f"  Fma inst_fma {v['inst_fma']:.4g}, designed {want:.4g} (x{v['inst_fma'] / want:.3f})")
        ok &= 0.95 < v["inst_fma"] / want < 1.1
    if name.startswith("Scale"):  # 64 MiB loaded and 64 MiB stored through L1
        want = 2 * 4 * n
        print(f"  Scale l1_bytes {v['l1_bytes']:.4g}, designed {want:.4g} (x{v['l1_bytes'] / want:.3f})")
        ok &= 0.95 < v["l1_bytes"] / want < 1.1
sys.exit(0 if ok else 1)
PY
    else
      cat "$out/profile-cuda.err"; fail "emo profile of two_streams"
    fi
    # The iteration window: 5 of the 20 steps after 3 warm-up ones, and the pack profiler on it.
    if timeout 180 "$emo" trace -o "$out/trace-window" --warmup 3 --iterations 5 -- "$out/two_streams" 20 &&
       "$emo" analyze "$out/trace-window" --json >"$out/analyze-window.json" &&
       timeout 180 "$emo" profile --trace "$out/trace-window" -o "$out/profile-window.json" -- "$out/two_streams" 20; then
      python3 - "$out/analyze-window.json" "$out/profile-window.json" <<'PY' && pass "windowed trace (5 of 20 steps)" || fail "windowed trace (5 of 20 steps)"
import json, sys
a, p = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("iterations", a["iterations"], "first-kernel mismatches", p["first_kernel_mismatches"])
sys.exit(0 if a["iterations"] == 5 and p["first_kernel_mismatches"] == 0 else 1)
PY
    else
      fail "windowed trace (5 of 20 steps)"
    fi
    # On demand: the job runs untraced until asked, then 5 of its steps are traced while it runs.
    "$emo" trace -o "$out/trace-od" --on-demand -- "$out/two_streams" 2000 >"$out/od.out" 2>"$out/od.err" &
    od=$!
    for _ in $(seq 300); do ls "$out/trace-od"/proc-* >/dev/null 2>&1 && break; sleep 0.1; done
    if timeout 60 "$emo" trace --request "$out/trace-od" --iterations 5 --timeout 30 >"$out/od-request.out" 2>&1 &&
       "$emo" analyze "$out/trace-od/window-1" --json >"$out/analyze-od.json"; then
      python3 - "$out/analyze-od.json" <<'PY' && pass "on-demand window (5 steps of a running job)" || fail "on-demand window (5 steps of a running job)"
import json, sys
a = json.load(open(sys.argv[1]))
print("iterations", a["iterations"], "replay error", a["replay_error"])
sys.exit(0 if a["iterations"] == 5 and abs(a["replay_error"]) < 0.03 else 1)
PY
    else
      cat "$out/od-request.out" "$out/od.err"; fail "on-demand window (5 steps of a running job)"
    fi
    wait "$od"
    # EMO's main job on hardware as one command: default run, trace, the run at a low clock (emo run
    # --lock-mhz around emo trace), pack profile, model, search, and one run under the policy, with
    # the profile calibrated above.
    if [ -f "$out/profile.json" ] && timeout 300 "$emo" optimize --profile "$out/profile.json" --budget 0.05 \
        -o "$out/opt-policy.json" --measure --json "$out/optimize-cuda.json" -- "$out/two_streams" 40; then
      python3 -c "import json; j = json.load(open('$out/optimize-cuda.json')); print('predicted', j['predicted'], 'measured', j['measured'])"
      pass "emo optimize -- two_streams"
    else
      fail "emo optimize -- two_streams"
    fi
    # EMO's online loop: windows traced on demand, packs' metrics from the profile above by hash.
    if [ -f "$out/profile.json" ] && timeout 120 "$emo" run --adapt 5 --packs "$out/profile-cuda.json" \
        --profile "$out/profile.json" --measure "$out/adapt.json" -- "$out/two_streams" 2000 2>"$out/adapt.err"; then
      grep "adapt:" "$out/adapt.err"
      python3 -c "import json, sys; p = json.load(open('$out/adapt.json'))['adapt']['plans']; print(p); sys.exit(0 if p and p[0]['ok'] else 1)" &&
        pass "emo run --adapt -- two_streams" || fail "emo run --adapt -- two_streams"
    else
      cat "$out/adapt.err"; fail "emo run --adapt -- two_streams"
    fi
  else
    fail "emo trace of two_streams"
  fi
else
  cat "$out/nvcc.log"; fail "nvcc two_streams.cu"
fi

# Clock locking through a policy: a middle clock for the whole iteration, reset afterwards.
mid=$(python3 -c "import json; c=json.load(open('$out/gpus.json'))[0]['supported_sm_clocks_mhz']; print(c[len(c)//2] if c else 0)" 2>/dev/null || echo 0)
if [ "$mid" -gt 0 ] && [ -x "$out/two_streams" ]; then
  echo "{\"gpus\": [{\"gpu\": 0, \"changes\": [{\"t_ms\": 0, \"mhz\": $mid}]}]}" >"$out/policy.json"
  timeout 120 "$emo" run --measure "$out/run-default.json" -- "$out/two_streams" 100 && pass "emo run (default clocks)" ||
    fail "emo run (default clocks)"
  if timeout 120 "$emo" run --policy "$out/policy.json" --measure "$out/run-policy.json" -- "$out/two_streams" 100 \
      2>"$out/run-policy.err"; then
    cat "$out/run-policy.err"
    if grep -qi "permission\|not permitted\|NoPermission" "$out/run-policy.err"; then
      skip "clock locking not permitted here: $(head -1 "$out/run-policy.err")"
    else
      pass "emo run --policy at $mid MHz"
    fi
  else
    cat "$out/run-policy.err"; fail "emo run --policy"
  fi
  "$emo" gpus --json >"$out/gpus-after.json" && python3 - "$out" <<'PY'
import json, sys
d = sys.argv[1]
for name in ("run-default", "run-policy"):
    try:
        m = json.load(open(f"{d}/{name}.json"))
        print(name, "window_s", round(m.get("window_s", 0), 3), "energy_j", round(m.get("energy_j", 0), 1),
              "iterations", m.get("iterations"), "iteration_ms", m.get("iteration_ms"))
    except Exception as e:
        print(name, "unreadable:", e)
print("after: SM clock", json.load(open(f"{d}/gpus-after.json"))[0]["sm_clock_mhz"], "MHz")
PY
  # Crash safety: SIGKILL of EMO while its policy holds the middle clock. Its watchdog process must
  # unlock the GPU, so that the next job's busy clock is the default run's, not the policy's.
  "$emo" run --policy "$out/policy.json" -- "$out/two_streams" 3000 >/dev/null 2>"$out/wd.err" &
  run_pid=$!
  sleep 3
  kill -KILL "$run_pid"
  wait "$run_pid" 2>/dev/null
  for _ in $(seq 100); do grep -q "emo watchdog:" "$out/wd.err" && break; sleep 0.1; done
  cat "$out/wd.err"
  sleep 2  # the orphaned two_streams runs on; let it end or be killed before the next job
  pkill -f "$out/two_streams" 2>/dev/null
  if timeout 120 "$emo" run --measure "$out/run-after-kill.json" -- "$out/two_streams" 100 >/dev/null; then
    python3 - "$out" "$mid" <<'PY' && pass "after SIGKILL of emo run --policy, the watchdog restored the clocks" ||
import json, sys
d, mid = sys.argv[1], float(sys.argv[2])
busy = lambda name: json.load(open(f"{d}/{name}.json"))["busy_clock_mhz"]
after, default, policy = busy("run-after-kill"), busy("run-default"), busy("run-policy")
print("busy SM clock: default run", default, "policy run", policy, f"(locked {mid:.0f})", "after the kill", after)
a, b = (x[0] if isinstance(x, list) else x for x in (after, default))
sys.exit(0 if a > 0.9 * b and a > mid + 50 else 1)
PY
      fail "after SIGKILL of emo run --policy, the watchdog restored the clocks"
  else
    fail "emo run after the SIGKILL"
  fi
else
  skip "no supported clock list or no two_streams binary"
fi

# A small PyTorch job: traced, and run under GEEPAFS.
if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  if timeout 180 "$emo" trace -o "$out/trace-torch" -- python3 tests/gpu/train_small.py 10 &&
     "$emo" analyze "$out/trace-torch" --json >"$out/analyze-torch.json"; then
    "$emo" analyze "$out/trace-torch" | head -20
    python3 -c "import json; a=json.load(open('$out/analyze-torch.json')); print('torch replay error', a['replay_error'])"
    pass "PyTorch job traced and analysed"
  else
    fail "PyTorch job traced and analysed"
  fi
  if timeout 240 "$emo" profile --trace "$out/trace-torch" -o "$out/profile-torch.json" -- \
      python3 tests/gpu/train_small.py 10 2>"$out/profile-torch.err"; then
    tail -3 "$out/profile-torch.err"
    python3 -c "import json; m=json.load(open('$out/profile-torch.json')); print(len(m['packs']), 'packs,', m['kernels_profiled'], 'of', m['kernels_in_run'], 'kernels profiled,', m['first_kernel_mismatches'], 'mismatches')"
    pass "emo profile of the PyTorch job"
  else
    tail -5 "$out/profile-torch.err"; fail "emo profile of the PyTorch job"
  fi
  timeout 180 "$emo" run --controller geepafs --measure "$out/run-geepafs.json" -- python3 tests/gpu/train_small.py 300 &&
    pass "emo run --controller geepafs" || fail "emo run --controller geepafs"
else
  skip "python3 has no CUDA-enabled torch"
fi
# GPOEO's models trained on the GPU: a few kernel-mix jobs at five clocks (a short corpus, last because it
# is the longest step: the check is that the path runs and the models predict, not their accuracy).
if timeout 420 "$emo" gpoeo train --device cuda:0 --workloads 6 --eval-workloads 3 --clocks 5 -o "$out/gpoeo-cuda" \
    >"$out/gpoeo-train.out" 2>&1; then
  tail -4 "$out/gpoeo-train.out"
  python3 -c "import json; m=json.load(open('$out/gpoeo-cuda/meta.json')); print('corpus', m['corpus'], 'features', len(m['features']), '(15: with GPM activity)', 'MAPE energy', m['eval_mape_energy_pct'], 'time', m['eval_mape_time_pct'])" &&
    pass "emo gpoeo train --device cuda:0" || fail "emo gpoeo train --device cuda:0"
else
  tail -5 "$out/gpoeo-train.out"; fail "emo gpoeo train --device cuda:0"
fi

echo "gpu-check: $fails failed"
[ $fails = 0 ]

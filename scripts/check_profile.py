#!/usr/bin/env python3
"""check_profile.py PROFILE.json — prints a device profile that `emo calibrate` measured on a real GPU
and checks it against what the microbenchmarks were written to do (device/microbench.h): FP32 FMA
time scales with the clock, and the range-profiled FMA instructions, DRAM bytes and tensor
instructions per launch match the kernels' designed work, and the kernel floor is a few
microseconds at every clock. Exit 1 when a check fails."""
import json, sys
p = json.load(open(sys.argv[1]))
clocks = p["clocks_mhz"]
try:
    import torch
    sms = torch.cuda.get_device_properties(0).multi_processor_count
except Exception:
    sms = 0
print(p["device"], "clocks", clocks, "SMs", sms or "?")
print(f"{'bench':<11}" + "".join(f"{'ms@' + str(c):>11}{'mJ@' + str(c):>11}" for c in clocks))
for name, b in p["benchmarks"].items():
    print(f"{name:<11}" + "".join(f"{t * 1e3:>11.4f}{e * 1e3:>11.2f}" for t, e in zip(b["time_s"], b["energy_j"])))
print("metrics per launch:")
for name, b in p["benchmarks"].items():
    print(f"  {name:<11}" + " ".join(f"{k}={v:.4g}" for k, v in b["metrics"].items() if v))
ok = True
fma = p["benchmarks"]["fp32_fma"]
ratio = fma["time_s"][0] / fma["time_s"][-1]
print(f"fp32_fma time {clocks[0]} vs {clocks[-1]} MHz: x{ratio:.2f} (clock ratio x{clocks[-1] / clocks[0]:.2f})")
ok &= abs(ratio / (clocks[-1] / clocks[0]) - 1) < 0.1
if sms:
    # Designed work per launch (device/microbench.h): warp instructions and bytes.
    warps = sms * 8 * 256 // 32
    expect = {("fp32_fma", "inst_fma"): warps * 1024 * 64, ("dram_read", "dram_read_bytes"): warps * 32 * 64 * 4 * 16,
              ("hmma", "inst_tensor"): warps * 512 * 8}
    for (bench, metric), want in expect.items():
        got = p["benchmarks"][bench]["metrics"][metric]
        print(f"{bench} {metric}: {got:.4g} per launch, designed {want:.4g} (x{got / want:.3f})")
        ok &= 0.9 < got / want < 1.3
# The kernel floor: an empty kernel's time at each clock, a few microseconds.
floor = p.get("kernel_floor_s", [])
print("kernel floor (us):", " ".join(f"{c}:{f * 1e6:.2f}" for c, f in zip(clocks, floor)) or "none")
ok &= len(floor) == len(clocks) and all(0.5e-6 < f < 20e-6 for f in floor)
sys.exit(0 if ok else 1)

#!/usr/bin/env python3
# gpoeo_alias_scan.py — GPOEO on iterations near two of the energy counter's 100 ms updates, where an
# iteration and its alias give the same readings: ten simulated A100 jobs of 0.16-0.23 s, four
# seeds each, every run against the default clocks' run of the same seed (iterations 350-699, after
# GPOEO's search). Prints each run and, per emo binary, the mean saving and slowdown, the worst
# slowdown and how often the detected period was within 2 % of the iteration.
# Run: python3 bench/gpoeo_alias_scan.py [EMO...]   (default build/emo; several binaries compare)
import copy
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

PP = {"cpu": {"launch_gap_us": 6}, "device": "A100-SXM4-80GB", "kind": "pp", "link": "pcie",
      "model": {"arch": "gpt", "batch": 1, "heads": 24, "hidden": 3072, "layers": 8, "seq": 1024, "vocab": 50304},
      "parallel": {"microbatches": 8, "pp": 2}}
DP = {"cpu": {"launch_gap_us": 60}, "device": "A100-SXM4-80GB", "kind": "dp", "link": "nvlink",
      "model": {"arch": "llama", "batch": 2, "heads": 32, "hidden": 4096, "layers": 2, "seq": 4096, "vocab": 32000},
      "parallel": {"bucket_mb": 50, "dp": 2}}


def specs():
    out = []
    for layers, mb in [(7, 8), (8, 7), (8, 8), (8, 9), (9, 8), (9, 9), (10, 8)]:
        s = copy.deepcopy(PP)
        s["model"]["layers"], s["parallel"]["microbatches"] = layers, mb
        s["name"] = f"pp2-gpt-h3072-l{layers}-m{mb}"
        out.append(s)
    for seq in [3584, 4096, 4608]:
        s = copy.deepcopy(DP)
        s["model"]["seq"] = seq
        s["name"] = f"dp2-llama-h4096-l2-s{seq}"
        out.append(s)
    return out


def main():
    emos = sys.argv[1:] or ["build/emo"]
    tmp = tempfile.mkdtemp(prefix="gpoeo-alias-")

    def run(emo, spec, seed, gpoeo):
        out = os.path.join(tmp, f"{len(emo)}-{abs(hash(emo))}-{spec}-{seed}-{int(gpoeo)}.json")
        cmd = [emo, "sim", "--workload", os.path.join(tmp, spec + ".json"), "--iterations", "700", "--warmup", "350",
               "--seed", str(seed), "--measure", out] + (["--controller", "gpoeo"] if gpoeo else [])
        subprocess.run(cmd, capture_output=True, check=True)
        return json.load(open(out))

    for s in specs():
        json.dump(s, open(os.path.join(tmp, s["name"] + ".json"), "w"))
    totals = {e: [0.0, 0.0, 0, 0, -1.0] for e in emos}  # saving, slowdown, period ok, runs, worst slowdown
    with ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        jobs = [(s["name"], seed, ex.submit(run, emos[0], s["name"], seed, False),
                 [ex.submit(run, e, s["name"], seed, True) for e in emos])
                for s in specs() for seed in (1, 2, 3, 4)]
        for name, seed, base, runs in jobs:
            d = base.result()
            line = f"{name:24} seed {seed} iteration {d['iteration_ms']:6.1f} ms"
            for emo, r in zip(emos, runs):
                r = r.result()
                g = r["gpoeo"]
                saving = 1 - r["energy_j"] / d["energy_j"]
                slowdown = r["iteration_ms"] / d["iteration_ms"] - 1
                ok = abs(g["period_s"] * 1e3 / d["iteration_ms"] - 1) <= 0.02
                t = totals[emo]
                t[0] += saving
                t[1] += slowdown
                t[2] += ok
                t[3] += 1
                t[4] = max(t[4], slowdown)
                line += f" | period {g['period_s'] * 1e3:6.1f} ms, {g['chosen_mhz']:4} MHz, {100 * saving:5.1f} % @ {100 * slowdown:+5.1f} %"
            print(line, flush=True)
    for emo, t in totals.items():
        print(f"{emo}: mean saving {100 * t[0] / t[3]:.2f} % at {100 * t[1] / t[3]:+.2f} %, worst {100 * t[4]:+.2f} %, "
              f"period within 2 % on {t[2]} of {t[3]}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# emo_corpus.py — EMO's main job on workloads it was not developed on: the held-out corpora that
# `emo gpoeo train` draws (tensor-, data- and pipeline-parallel GPT and Llama jobs of 0.1-4 s
# iterations on the four simulated devices; --seed picks the draw), each run through
# `emo optimize --measure` at each budget. Prints, per budget, EMO's mean measured saving and
# slowdown beside the best static clock's, the runs whose mean slowdown is over the budget + 0.5
# points, and the runs where EMO saves less than the best static clock.
# Run: python3 bench/emo_corpus.py [--emo build/emo] [--seeds 7 8] [--workloads 16] [--budgets 0.02 0.05]
#                                  [-j 2] [--out DIR]   (DIR keeps each run's JSON; a second run reuses them)
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

DEVICES = ["a100", "h100", "a40", "3080ti"]


def corpus(emo, device, seed, count, out):
    d = os.path.join(out, f"corpus-{device}-{seed}")
    if not os.path.exists(os.path.join(d, "corpus.json")):
        subprocess.run([emo, "gpoeo", "train", "--device", f"sim:{device}", "--seed", str(seed), "--workloads", "1",
                        "--eval-workloads", str(count), "--clocks", "2", "--controller-eval", "0", "-o", d],
                       check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(d, "corpus.json")) as f:
        return json.load(f)["eval"]


def run(emo, spec_path, budget, out_json):
    if not os.path.exists(out_json):
        p = subprocess.run([emo, "optimize", "--workload", spec_path, "--budget", str(budget), "--measure", "--json",
                            out_json], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            return {"spec": spec_path, "budget": budget, "error": p.stderr.strip().splitlines()[-1:]}
    with open(out_json) as f:
        d = json.load(f)
    m, s = d["measured"], d.get("best_static") or {}
    return {"spec": spec_path, "workload": d["workload"], "device": d["device"], "budget": budget,
            "slowdown": m["slowdown"], "slowdown_max": m["slowdown_spread"]["max"], "saving": m["energy_saving"],
            "static_saving": s.get("energy_saving", 0), "static_slowdown": s.get("slowdown", 0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--emo", default="build/emo")
    ap.add_argument("--seeds", type=int, nargs="+", default=[7, 8])
    ap.add_argument("--workloads", type=int, default=16, help="per device and seed")
    ap.add_argument("--budgets", type=float, nargs="+", default=[0.02, 0.05])
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="emo_corpus.")
    os.makedirs(out, exist_ok=True)
    jobs = []
    for seed in a.seeds:
        for device in DEVICES:
            for i, spec in enumerate(corpus(a.emo, device, seed, a.workloads, out)):
                path = os.path.join(out, f"{device}-s{seed}-{i:02d}.json")
                with open(path, "w") as f:
                    json.dump(spec, f)
                for b in a.budgets:
                    jobs.append((path, b, f"{path[:-5]}-b{b}.out.json"))
    with ThreadPoolExecutor(a.j) as ex:
        rows = list(ex.map(lambda j: run(a.emo, *j), jobs))
    failed = [r for r in rows if "error" in r]
    rows = [r for r in rows if "error" not in r]
    print(f"{len(rows)} runs ({len(failed)} failed) of {len(jobs)}, results in {out}")
    for r in failed:
        print(f"  FAILED {r['spec']} at {r['budget']}: {r['error']}")
    pct = lambda x: 100 * x
    for b in a.budgets:
        rs = [r for r in rows if r["budget"] == b]
        if not rs:
            continue
        n = len(rs)
        mean = lambda k: pct(sum(r[k] for r in rs) / n)
        over = [r for r in rs if r["slowdown"] > b + 0.005]
        below = sorted([r for r in rs if r["saving"] < r["static_saving"] - 0.003],
                       key=lambda r: r["saving"] - r["static_saving"])
        print(f"budget {pct(b):.0f} %: {n} runs; EMO {mean('saving'):.2f} % @ +{mean('slowdown'):.2f} %, best static "
              f"{mean('static_saving'):.2f} % @ +{mean('static_slowdown'):.2f} %; mean slowdown over budget + 0.5: "
              f"{len(over)}; a seed over it: {sum(r['slowdown_max'] > b + 0.005 for r in rs)}; EMO below the best "
              f"static by over 0.3 points: {len(below)}")
        for r in over:
            print(f"  over: {r['workload']} ({r['device']}) +{pct(r['slowdown']):.2f} %")
        for r in below:
            print(f"  below static: {r['workload']} ({r['device']}) {pct(r['saving']):.1f} % @ "
                  f"+{pct(r['slowdown']):.1f} %, static {pct(r['static_saving']):.1f} % @ "
                  f"+{pct(r['static_slowdown']):.1f} %")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

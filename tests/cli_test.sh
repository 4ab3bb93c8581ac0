#!/usr/bin/env bash
# cli_test.sh — end-to-end checks of the emo executable: help, JSON keys of `emo analyze`, and
# clear one-line errors with a non-zero exit on bad input.
# Usage: cli_test.sh EMO_BINARY TRACES_DIR WORKLOADS_DIR [FAKE_NVML_LIBRARY]
set -u
emo=$1
traces=$2
workloads=${3:-}
fake_nvml=${4:-}
source "$(dirname "$0")/cli_check.sh"

"$emo" --help >"$tmp/help" 2>&1
check "emo --help lists analyze" grep -q analyze "$tmp/help"
"$emo" analyze --help >"$tmp/ahelp" 2>&1
check "emo analyze --help mentions --json" grep -q -- --json "$tmp/ahelp"

if [ -d "$traces" ]; then
  "$emo" analyze --json "$traces/HolisticTraceAnalysis/critical_path/simple_add" >"$tmp/out.json" 2>"$tmp/err"
  check "analyze --json exits 0" test $? -eq 0
  for key in ranks nodes edges observed_ms replayed_ms replay_error critical_path slack packing; do
    check "JSON has key $key" python3 -c "import json,sys; d=json.load(open('$tmp/out.json')); sys.exit(0 if '$key' in d else 1)"
  done
  "$emo" analyze "$traces/param/dlrm_kineto" >"$tmp/out.txt" 2>&1
  check "analyze text over 8 ranks" grep -q "rank 7" "$tmp/out.txt"
  # The text and the JSON render one result: the total's slack line and the packing line carry
  # the JSON's numbers.
  "$emo" analyze --json "$traces/param/dlrm_kineto" >"$tmp/dlrm.json" 2>/dev/null
  check "analyze text and JSON agree on slack and packing" python3 -c "
import json, sys
d = json.load(open('$tmp/dlrm.json'))
s, p = d['slack'], d['packing']
text = open('$tmp/out.txt').read()
slack = ('total\n' in text and text.split('total\n')[1].count(
    'GPU kernel time {:.3f} ms: {:.1f} % off the critical path, {:.1f} % with slack >= 1 ms, {:.1f} % with slack >= 5 ms'
    .format(s['kernel_ms'], 100 * s['off_critical_share'], 100 * s['slack_ge_1ms_share'], 100 * s['slack_ge_5ms_share'])) == 1)
pack = '{} kernels in {} packs, {} unique; median span {:.3f} ms; {:.1f} % of kernel time'.format(
    p['kernels'], p['packs'], p['unique'], p['median_span_ms'], 100 * p['multi_kernel_time_share']) in text
sys.exit(0 if slack and pack else 1)"
fi

if [ -d "$workloads" ]; then
  # emo sim: measurement JSON, a trace emo analyze reads, and a policy that lowers the clock
  # saves energy at some cost in time.
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 3 --measure "$tmp/m.json" \
    --trace "$tmp/tr" >/dev/null 2>"$tmp/err"
  check "sim exits 0" test $? -eq 0
  for key in iteration_ms energy_j per_gpu; do
    check "measure has $key" python3 -c "import json,sys; d=json.load(open('$tmp/m.json')); sys.exit(0 if '$key' in d else 1)"
  done
  check "sim trace has one file per rank" test -f "$tmp/tr/rank-1.json"
  "$emo" analyze --json "$tmp/tr" >"$tmp/a.json" 2>/dev/null
  check "analyze of the sim trace replays within 1 %" python3 -c \
    "import json,sys; d=json.load(open('$tmp/a.json')); sys.exit(0 if abs(d['replay_error']) < 0.01 and len(d['ranks']) == 2 else 1)"
  check "analyze summarises each GPU's clock, power and energy counters of the sim trace" python3 -c "
import json, sys
d = json.load(open('$tmp/a.json'))
ok = True
for r, rank in enumerate(d['ranks']):
    c = {x['name']: x for x in rank['counters']}
    clock, power, energy = c['sm_clock'], c['power'], c['energy']
    ok &= clock['device'] == r and clock['unit'] == 'MHz' and 210 <= clock['min'] <= clock['mean'] <= clock['max'] <= 1410
    ok &= power['unit'] == 'W' and 0 < power['min'] <= power['mean'] <= power['max'] and power['samples'] >= 2
    ok &= energy['unit'] == 'J' and 0.8 * power['min'] < energy['rise_per_s'] < 1.25 * power['max']
    ok &= 'rise_per_s' not in power
sys.exit(0 if ok and len(d['ranks']) == 2 else 1)"
  printf '{"gpus": [{"gpu": 0, "changes": [{"t_ms": 0, "mhz": 1005}]}, {"gpu": 1, "changes": [{"t_ms": 0, "mhz": 1005}]}]}' >"$tmp/p.json"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 3 --policy "$tmp/p.json" --measure "$tmp/m2.json" >/dev/null 2>&1
  check "a 1005 MHz policy saves energy and costs time" python3 -c \
    "import json,sys; a=json.load(open('$tmp/m.json')); b=json.load(open('$tmp/m2.json')); sys.exit(0 if b['energy_j'] < a['energy_j'] and b['iteration_ms'] > a['iteration_ms'] else 1)"
  # --seeds: the first seed's run under the usual keys, each run under seeds, mean and spread;
  # a window shorter than the energy counter's resolution allows is warned about.
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 3 --seeds 4 --measure "$tmp/s.json" \
    >"$tmp/s.out" 2>"$tmp/s.err"
  check "sim --seeds exits 0" test $? -eq 0
  check "sim --seeds reports the spread" grep -q "4 seeds (1..4)" "$tmp/s.out"
  check "sim warns about a short measurement window" grep -q "energy-counter updates" "$tmp/s.err"
  check "measure with seeds: first run's keys, seeds and spread" python3 -c \
    "import json,sys; d=json.load(open('$tmp/s.json')); a=json.load(open('$tmp/m.json')); s=d['spread']['iteration_ms']; sys.exit(0 if d['iteration_ms'] == a['iteration_ms'] and len(d['seeds']) == 4 and d['seeds'][0]['seed'] == 1 and s['min'] <= s['mean'] <= s['max'] and 0 < s['rel_stdev'] < 0.05 else 1)"
  # --sweep-clocks: a row per clock after the default, the best clock per budget, bad clocks refused.
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 4 --seeds 2 --sweep-clocks 1410,1200,1005 \
    --budget 0,5,30 --measure "$tmp/sw.json" >"$tmp/sw.out" 2>/dev/null
  check "sim --sweep-clocks exits 0" test $? -eq 0
  check "sweep prints the best clock within each budget" grep -q "best static clock within 30 %" "$tmp/sw.out"
  check "sweep JSON: default first, slowdown grows, budgets answered" python3 -c \
    "import json,sys; d=json.load(open('$tmp/sw.json')); r=d['static_clocks']; b=d['best']; sys.exit(0 if [x['mhz'] for x in r] == [None, 1410, 1200, 1005] and r[3]['slowdown']['mean'] > r[2]['slowdown']['mean'] > 0.02 and [x['budget_pct'] for x in b] == [0, 5, 30] and b[2]['mhz'] in (1200, 1005) and len(d['seeds']) == 2 else 1)"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --sweep-clocks 1411 >/dev/null 2>"$tmp/err"; rc=$?
  check "sweep of an unsupported clock exits 1 naming it" bash -c "test $rc -eq 1 && grep -q '1411 MHz' '$tmp/err'"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 40 --warmup 38 \
    --controller zeus-power-limit:warmup=1,profile=1,step-w=100 --measure "$tmp/z.json" >/dev/null 2>&1
  # The A100-SXM4-80GB ships with a 400 W limit (its maximum) and allows 100 W: 400, 300, 200, 100.
  check "zeus-power-limit profiles 4 limits and reports its choice" python3 -c \
    "import json,sys; z=json.load(open('$tmp/z.json'))['zeus_power_limit']; sys.exit(0 if z['done'] and len(z['profiled']) == 4 and 100 <= z['optimum_w'] <= 400 else 1)"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --controller zeus-power-limit:eta=7 >/dev/null 2>"$tmp/err"; rc=$?
  check "bad controller option exits 1 naming it" bash -c "test $rc -eq 1 && grep -q 'eta=7' '$tmp/err'"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 6 --controller geepafs --measure "$tmp/g.json" >/dev/null 2>&1
  check "geepafs probes four clocks and chooses one" python3 -c \
    "import json,sys; g=json.load(open('$tmp/g.json'))['geepafs'][0]; sys.exit(0 if len(g['probes_mhz']) == 4 and len(g['choices_mhz']) == 1 else 1)"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 120 --controller gpoeo --measure "$tmp/go.json" >/dev/null 2>&1
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 10 --measure "$tmp/go-default.json" >/dev/null 2>&1
  check "gpoeo finds the period (the default run's iteration), chooses a clock under the default and reports both" python3 -c \
    "import json,sys; g=json.load(open('$tmp/go.json'))['gpoeo']; it=json.load(open('$tmp/go-default.json'))['iteration_ms']/1e3; sys.exit(0 if abs(g['period_s'] - it) < 0.02 * it and 0 < g['chosen_mhz'] < 1410 and g['measured_time_ratio'] <= 1.06 else 1)"
  "$emo" gpoeo train --device sim:a100 -o "$tmp/gm" --workloads 4 --eval-workloads 2 --clocks 6 --controller-eval 1 >/dev/null 2>&1
  check "emo gpoeo train writes the models" bash -c "test -s '$tmp/gm/energy.json' && test -s '$tmp/gm/time.json' && grep -q eval_mape_time_pct '$tmp/gm/meta.json'"
  # Counter features (the metrics table per period, as GPOEO profiles inside the job): the simulator
  # offers them, the controller reads them, and NVML, which watches from outside, does not.
  "$emo" gpoeo train --device sim:a100 --features counters -o "$tmp/gmc" --workloads 4 --eval-workloads 2 --clocks 6 \
    --controller-eval 1 >/dev/null 2>&1
  check "emo gpoeo train --features counters trains on the metrics table's ratios" python3 -c "
import json, sys
m = json.load(open('$tmp/gmc/meta.json'))
sys.exit(0 if 'inst_per_cycle' in m['features'] and 'tensor_share' in m['features'] and len(m['controller_eval']) == 1 else 1)"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 60 --controller "gpoeo:models=$tmp/gmc" \
    --measure "$tmp/goc.json" >/dev/null 2>&1
  check "gpoeo on counter models reads the counters" python3 -c "
import json, sys
f = json.load(open('$tmp/goc.json'))['gpoeo']['features']
sys.exit(0 if f.get('inst_per_cycle', 0) > 0 and 0 < f.get('warps_per_cycle_frac', 0) <= 1 else 1)"
  # The kernel-mix corpus, the one a GPU trains on, through the simulator's BenchDevice: periodic
  # jobs of microbenchmark kernels, swept and written as such, and the controller run on one.
  "$emo" gpoeo train --device sim:a100 --corpus mix -o "$tmp/gmix" --workloads 6 --eval-workloads 3 --clocks 6 \
    --controller-eval 1 >"$tmp/gmix.out" 2>&1
  check "emo gpoeo train --corpus mix trains on kernel-mix jobs" python3 -c "
import json, sys
m = json.load(open('$tmp/gmix/meta.json')); c = json.load(open('$tmp/gmix/corpus.json'))
jobs = c['train'] + c['eval']
sys.exit(0 if m['corpus'] == 'mix' and len(c['train']) == 6 and len(c['eval']) == 3
         and all(j['kind'] == 'kernel-mix' and j['launches'] for j in jobs)
         and not set(j['name'] for j in c['train']) & set(j['name'] for j in c['eval'])
         and len(m['controller_eval']) == 1 else 1)"
  # A GDDR card (several memory clocks): memory models too, from sweeps at the lower memory clocks
  # (here through the BenchDevice path a GPU takes); an HBM card's models have none.
  "$emo" gpoeo train --device sim:3080ti --corpus mix -o "$tmp/gmm" --workloads 4 --eval-workloads 2 --clocks 6 \
    --controller-eval 1 --controller-options memory=1 >/dev/null 2>&1
  check "emo gpoeo train adds memory models where the GPU lists several memory clocks" python3 -c "
import json, os, sys
m = json.load(open('$tmp/gmm/meta.json'))
sys.exit(0 if os.path.getsize('$tmp/gmm/energy_memory.json') > 0 and os.path.getsize('$tmp/gmm/time_memory.json') > 0
         and m['memory_clocks_mhz'] == [405, 810, 5001, 9251, 9501] and 'eval_mape_memory_time_pct' in m
         and not os.path.exists('$tmp/gm/energy_memory.json') else 1)"
  "$emo" gpoeo train --device cuda:0 --corpus workloads -o "$tmp/gm2" >/dev/null 2>"$tmp/err"; rc=$?
  check "emo gpoeo train on a GPU refuses the simulator's workloads" bash -c "test $rc -eq 1 && grep -q 'kernel-mix corpus' '$tmp/err'"
  "$emo" gpoeo train --device sim:a100 -o "$tmp/gm3" --controller-options memory=yes >/dev/null 2>"$tmp/err"; rc=$?
  check "emo gpoeo train names a bad --controller-options value" bash -c \
    "test $rc -eq 1 && grep -q 'controller-options: gpoeo: memory' '$tmp/err'"
  "$emo" sim --workload "$workloads/tp2-gpt3-1.3b-batch2-then-8-a100.json" --iterations 130 --adapt 5 \
    --measure "$tmp/ad.json" >"$tmp/ad.out" 2>&1
  check "sim --adapt plans twice across the phase change and says so" python3 -c \
    "import json,sys; p=json.load(open('$tmp/ad.json'))['adapt']['plans']; sys.exit(0 if len(p) == 2 and all(x['ok'] for x in p) and 100 < p[0]['drift_at_iteration'] <= 104 and p[1]['window_first_iteration'] > 100 else 1)"
  check "sim --adapt prints its plans" grep -q "planned from iterations" "$tmp/ad.out"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --adapt 5 --controller geepafs >/dev/null 2>"$tmp/err"; rc=$?
  check "sim --adapt with a controller exits 1" bash -c "test $rc -eq 1 && grep -q 'plays its own policies' '$tmp/err'"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --controller gpu-burner >/dev/null 2>"$tmp/err"; rc=$?
  check "unknown controller exits 1 naming it" bash -c "test $rc -eq 1 && grep -q 'gpu-burner' '$tmp/err'"
  printf '{"kind": "tp", "device": "a100", "model": {"layers": -1}}' >"$tmp/bad-spec.json"
  "$emo" sim --workload "$tmp/bad-spec.json" >/dev/null 2>"$tmp/err"; rc=$?
  check "bad spec exits 1" test $rc -eq 1
  check "bad spec error names the file" grep -q "bad-spec.json" "$tmp/err"
  printf '{"gpus": [{"gpu": 9, "changes": [{"t_ms": 0, "mhz": 1005}]}]}' >"$tmp/bad-policy.json"
  "$emo" sim --workload "$workloads/tp2-gpt3-6.7b-a100.json" --iterations 1 --policy "$tmp/bad-policy.json" >/dev/null 2>"$tmp/err"; rc=$?
  check "policy for a missing GPU exits 1" test $rc -eq 1
  # emo validate: a short run on a small workload; the JSON (on stdout) has the keys, the MAPEs are finite.
  "$emo" validate --workload "$workloads/tp2-llama2-0.5b-3080ti.json" --clocks 3 --random 2 --seeds 1 \
    --iterations 3 --json - >"$tmp/val.json" 2>"$tmp/val.txt"
  check "validate exits 0" test $? -eq 0
  check "validate prints its MAPEs" grep -q "static MAPE" "$tmp/val.txt"
  check "validate JSON has the keys, MAPEs finite" python3 -c "
import json, math, sys
d = json.load(open('$tmp/val.json'))
for k in ('kernels', 'packs', 'unique_packs', 'profiled_ranges', 'profiling', 'static', 'random'): assert k in d, k
for k in ('ranges', 'passes', 'kernels_profiled', 'overhead_s', 'reduction'): assert k in d['profiling'], k
for s in ('static', 'random'):
  for k in ('time_mape', 'energy_mape', 'abs_time_mape', 'abs_energy_mape'): assert math.isfinite(d[s][k]), (s, k)
assert len(d['random']['policies']) == 2 and len(d['static']['clocks']) >= 3"
  check "validate traces again at 70 % of the 3080 Ti's 2100 MHz" bash -c \
    "grep -q 'traced again at 1470 MHz' '$tmp/val.txt' && grep -q '\"low_clock_mhz\": 1470' '$tmp/val.json'"
  "$emo" validate --workload "$workloads/tp2-llama2-0.5b-3080ti.json" --clocks 3 --random 0 --seeds 1 \
    --iterations 3 --low-clock none --json "$tmp/val-none.json" >"$tmp/val-none.txt" 2>&1
  check "validate --low-clock none does not" bash -c \
    "! grep -q 'traced again' '$tmp/val-none.txt' && grep -q '\"low_clock_mhz\": 0' '$tmp/val-none.json'"
  "$emo" validate --workload "$workloads/tp2-llama2-0.5b-3080ti.json" --seeds 0 >/dev/null 2>"$tmp/err"
  check "validate --seeds 0 exits non-zero" test $? -ne 0
fi

# emo gpus through NVML: the fake driver's two GPUs; without a driver, one clear line and exit 1.
if [ -n "$fake_nvml" ]; then
  unset CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER  # the fake machine's GPUs, all of them, unless a test says
  EMO_NVML_LIBRARY="$fake_nvml" "$emo" gpus --json >"$tmp/gpus.json" 2>"$tmp/err"
  check "gpus lists the fake driver's GPUs with their UUIDs" python3 -c \
    "import json,sys; g=json.load(open('$tmp/gpus.json')); sys.exit(0 if len(g) == 2 and g[1]['power_limit_w'] == 400 and g[1]['uuid'] == 'GPU-fa4e0000-0000-0000-0000-000000000001' and g[1]['activity'] is False and g[0]['supported_memory_clocks_mhz'] == [1593] else 1)"
  # emo run: GEEPAFS probes and locks clocks while the command runs; every GPU ends reset.
  last_resets() { python3 -c "
import sys
last = {}
for line in open('$1'): what, gpu = line.split()[:2]; last[gpu] = what
locks = sum(1 for line in open('$1') if line.startswith('lock'))
sys.exit(0 if locks >= 8 and sorted(last.items()) == [('0', 'reset'), ('1', 'reset')] else 1)"; }
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --controller geepafs:period-ms=20 \
    --measure "$tmp/run.json" -- sleep 0.4 >/dev/null 2>&1
  check "run exits with the command's status" test $? -eq 0
  check "run locked clocks and reset every GPU after the command" last_resets "$tmp/nvml.log"
  check "run measures time and energy" python3 -c \
    "import json,sys; m=json.load(open('$tmp/run.json')); sys.exit(0 if m['window_s'] >= 0.4 and len(m['per_gpu']) == 2 else 1)"
  EMO_NVML_LIBRARY="$fake_nvml" "$emo" run -- sh -c 'exit 3' >/dev/null 2>&1
  check "run passes the command's exit status on" test $? -eq 3
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --controller geepafs:period-ms=20 -- sleep 30 \
    >/dev/null 2>&1 &
  run_pid=$!
  sleep 1
  kill -TERM "$run_pid"
  wait "$run_pid"
  check "SIGTERM ends the command, not EMO (status 143)" test $? -eq 143
  check "and the GPUs are reset after a signal" last_resets "$tmp/nvml.log"
  # Iteration-driven methods hear the command's steps through $EMO_STEP_SOCKET.
  cat >"$tmp/steps.py" <<'PY'
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[1])):
    s.sendto(b"step", os.environ["EMO_STEP_SOCKET"])
    time.sleep(0.01)
PY
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --measure "$tmp/zrun.json" \
    --controller zeus-power-limit:warmup=1,profile=1,step-w=100 -- python3 "$tmp/steps.py" 20 >/dev/null 2>&1
  check "zeus-power-limit on hardware profiles 5 limits from 20 steps" python3 -c \
    "import json,sys; m=json.load(open('$tmp/zrun.json')); sys.exit(0 if m['iterations'] == 20 and m['zeus_power_limit']['done'] and len(m['zeus_power_limit']['profiled']) == 5 else 1)"
  check "and leaves every GPU at its original 400 W" bash -c "grep '^limit 0' '$tmp/nvml.log' | tail -1 | grep -q ' 400000 ' && grep '^limit 1' '$tmp/nvml.log' | tail -1 | grep -q ' 400000 '"
  printf '{"gpus": [{"gpu": 1, "changes": [{"t_ms": 0, "mhz": 1005}]}]}' >"$tmp/p1.json"
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --policy "$tmp/p1.json" \
    -- python3 "$tmp/steps.py" 3 >/dev/null 2>&1
  check "a policy locks GPU 1 at each step and is reset at the end" bash -c \
    "test \$(grep -c '^lock 1 1005' '$tmp/nvml.log') -eq 3 && tail -1 '$tmp/nvml.log' | grep -q '^reset 1'"
  # GPU selection: policy indices count the job's GPUs. --gpus 1 makes NVML's GPU 1 the job's GPU 0
  # (and tells the job so through CUDA_VISIBLE_DEVICES); so does CUDA_VISIBLE_DEVICES=1 set by the user.
  printf '{"gpus": [{"gpu": 0, "changes": [{"t_ms": 0, "mhz": 1005}]}]}' >"$tmp/p0.json"
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --gpus 1 --policy "$tmp/p0.json" \
    --measure "$tmp/sel.json" -- sh -c "echo \$CUDA_VISIBLE_DEVICES >'$tmp/cvd'; python3 '$tmp/steps.py' 3" >/dev/null 2>&1
  check "--gpus 1: the job's GPU 0 is NVML's GPU 1, and the job sees only it" bash -c \
    "test \$(grep -c '^lock 1 1005' '$tmp/nvml.log') -eq 3 && ! grep -q '^lock 0' '$tmp/nvml.log' && grep -qx 'GPU-fa4e0000-0000-0000-0000-000000000001' '$tmp/cvd'"
  check "--gpus 1: the measurement covers that GPU only" python3 -c \
    "import json,sys; m=json.load(open('$tmp/sel.json')); sys.exit(0 if len(m['per_gpu']) == 1 and m['gpu_selection'] == {'source': '--gpus', 'backend_gpus': [1]} else 1)"
  rm -f "$tmp/nvml.log"
  CUDA_VISIBLE_DEVICES=GPU-fa4e0000-0000-0000-0000-000000000001 EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" \
    "$emo" run --policy "$tmp/p0.json" -- python3 "$tmp/steps.py" 3 >/dev/null 2>&1
  check "CUDA_VISIBLE_DEVICES by UUID: the policy's GPU 0 is NVML's GPU 1" bash -c \
    "test \$(grep -c '^lock 1 1005' '$tmp/nvml.log') -eq 3 && ! grep -q '^lock 0' '$tmp/nvml.log'"
  EMO_NVML_LIBRARY="$fake_nvml" "$emo" run --gpus 0,5 -- true >/dev/null 2>"$tmp/err"; rc=$?
  check "--gpus with an unknown index exits 1 naming it" bash -c "test $rc -eq 1 && grep -q -- '--gpus: no GPU 5 (there are 2: 0-1)' '$tmp/err'"
  CUDA_VISIBLE_DEVICES=GPU-0bad EMO_NVML_LIBRARY="$fake_nvml" "$emo" run -- true >/dev/null 2>"$tmp/err"; rc=$?
  check "an unknown UUID in CUDA_VISIBLE_DEVICES exits 1 naming it" bash -c \
    "test $rc -eq 1 && grep -q 'CUDA_VISIBLE_DEVICES: no GPU has UUID GPU-0bad' '$tmp/err'"
  CUDA_VISIBLE_DEVICES=1 EMO_NVML_LIBRARY="$fake_nvml" "$emo" run --policy "$tmp/p1.json" -- true >/dev/null 2>"$tmp/err"; rc=$?
  check "a policy for a GPU the job does not see exits 1 saying so" bash -c \
    "test $rc -eq 1 && grep -q 'no GPU 1 among the job.s 1 (from CUDA_VISIBLE_DEVICES)' '$tmp/err'"
  # The performance guard: a job that runs 4x slower while GPU 1 is locked (it reads the fake
  # driver's log) trips it after five slow iterations; a job within its budget keeps the policy.
  cat >"$tmp/slow.py" <<'PY'
import os, socket, sys, time
log, n, fast, slow = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
def locked():
    last = [l for l in open(log) if l.startswith(("lock 1", "reset 1"))] if os.path.exists(log) else []
    return bool(last) and last[-1].startswith("lock")
for _ in range(n):
    s.sendto(b"step", os.environ["EMO_STEP_SOCKET"])
    time.sleep(fast)  # the lock of this iteration is in the log by then
    if locked(): time.sleep(slow - fast)
PY
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --policy "$tmp/p1.json" --guard-budget 10 \
    --measure "$tmp/guard.json" -- python3 "$tmp/slow.py" "$tmp/nvml.log" 20 0.02 0.08 >/dev/null 2>"$tmp/guard.err"
  check "guard: exits with the job's status" test $? -eq 0
  check "guard: five slow iterations under the policy trip it, then GPU 1 stays at default clocks" python3 -c "
import json, sys
lines = [l.split() for l in open('$tmp/nvml.log') if l.startswith(('lock 1', 'reset 1'))]
kinds = [l[0] for l in lines]
g = json.load(open('$tmp/guard.json'))['guard']
sys.exit(0 if kinds[:6] == ['lock'] * 5 + ['reset'] and 'lock' not in kinds[6:] and g['state'] == 'tripped'
         and g['reference'] == 'measured' and g['tripped_at_iteration'] == 11 and len(g['slow_iterations_ms']) == 5 else 1)"
  check "guard: says so on stderr" grep -q "emo run: guard: 5 iterations in a row over the limit" "$tmp/guard.err"
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --policy "$tmp/p1.json" --guard-budget 100 \
    --measure "$tmp/guard.json" -- python3 "$tmp/slow.py" "$tmp/nvml.log" 16 0.05 0.05 >/dev/null 2>"$tmp/guard.err"
  check "guard: a job within its budget plays the policy from iteration 6 to the end" bash -c \
    "test \$(grep -c '^lock 1 1005' '$tmp/nvml.log') -eq 10 && python3 -c \"import json,sys; g=json.load(open('$tmp/guard.json'))['guard']; sys.exit(0 if g['state'] == 'watching' and 0.04 < g['reference_ms'] / 1000 < 0.2 else 1)\""
  "$emo" run --guard-budget 5 -- true >/dev/null 2>"$tmp/err"; rc=$?
  check "guard: --guard-budget without --policy exits 1 saying why" bash -c "test $rc -eq 1 && grep -q 'need --policy' '$tmp/err'"
  EMO_NVML_LIBRARY="$fake_nvml" "$emo" run --policy "$tmp/p1.json" --guard-reference policy -- true >/dev/null 2>"$tmp/err"; rc=$?
  check "guard: a policy without a budget, asked for its reference, exits 1 naming the file" bash -c \
    "test $rc -eq 1 && grep -q 'p1.json: records no budget' '$tmp/err'"
  # SIGKILL of EMO itself, after the policy locked GPU 1: its watchdog process unlocks it.
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" run --policy "$tmp/p1.json" \
    -- python3 "$tmp/steps.py" 300 >/dev/null 2>"$tmp/wd.err" &
  run_pid=$!
  for _ in $(seq 200); do grep -q '^lock 1' "$tmp/nvml.log" 2>/dev/null && break; sleep 0.05; done
  kill -KILL "$run_pid"
  wait "$run_pid" 2>/dev/null
  for _ in $(seq 200); do grep -q 'emo watchdog: EMO ended without restoring' "$tmp/wd.err" && break; sleep 0.05; done
  check "after SIGKILL of EMO, its watchdog unlocks the GPU EMO locked" bash -c \
    "grep -q '^lock 1' '$tmp/nvml.log' && tail -1 '$tmp/nvml.log' | grep -q '^reset 1'"
  check "and says so" grep -q "emo watchdog: EMO ended without restoring the GPUs" "$tmp/wd.err"
fi
EMO_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 "$emo" gpus >/dev/null 2>"$tmp/err"; rc=$?
check "gpus without a driver exits 1" test $rc -eq 1
check "gpus without a driver says so in one line" bash -c "grep -q 'is an NVIDIA driver installed' '$tmp/err' && test \$(wc -l <'$tmp/err') -eq 1"
# emo calibrate --device cuda:N: bad names, GPUs NVML does not list, and no CUDA driver (the fake
# NVML has none behind it) are each one clear error and exit 1, before any clock is locked.
if [ -n "$fake_nvml" ]; then
  "$emo" calibrate --device cuda:x -o "$tmp/cal.json" >/dev/null 2>"$tmp/err"
  check "calibrate --device cuda:x is refused" bash -c "test $? -eq 1 && grep -q 'expected cuda:N' '$tmp/err'"
  EMO_NVML_LIBRARY="$fake_nvml" "$emo" calibrate --device cuda:9 -o "$tmp/cal.json" >/dev/null 2>"$tmp/err"
  check "calibrate --device cuda:9 names the missing GPU" bash -c "test $? -eq 1 && grep -q 'no GPU 9 (NVML lists 2)' '$tmp/err'"
  CUDA_VISIBLE_DEVICES=1 EMO_NVML_LIBRARY="$fake_nvml" "$emo" calibrate --device cuda:1 -o "$tmp/cal.json" \
    >/dev/null 2>"$tmp/err"
  check "under CUDA_VISIBLE_DEVICES, cuda:N counts the GPUs it names" bash -c \
    "test $? -eq 1 && grep -q 'no GPU 1 (CUDA_VISIBLE_DEVICES names 1)' '$tmp/err'"
  CUDA_VISIBLE_DEVICES=1 EMO_NVML_LIBRARY="$fake_nvml" "$emo" calibrate --device cuda:0 -o "$tmp/cal.json" \
    >/dev/null 2>"$tmp/err"
  check "and cuda:0 is the machine's GPU it names first" bash -c "test $? -eq 1 && grep -q \"cuda:0 is the machine's GPU 1\" '$tmp/err'"
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" calibrate --device cuda:0 -o "$tmp/cal.json" \
    >/dev/null 2>"$tmp/err"
  check "calibrate without a CUDA driver exits 1 naming the library" bash -c \
    "test $? -eq 1 && grep -q 'libemo_cuda.so\|libcuda' '$tmp/err' && test \$(wc -l <'$tmp/err') -eq 1"
  check "and locks no clock" bash -c "! grep -q '^lock' '$tmp/nvml.log' 2>/dev/null"
  rm -f "$tmp/nvml.log"
  EMO_NVML_LIBRARY="$fake_nvml" FAKE_NVML_LOG="$tmp/nvml.log" "$emo" gpoeo train --device cuda:0 -o "$tmp/gcuda" \
    >/dev/null 2>"$tmp/err"
  check "gpoeo train on a GPU without a CUDA driver exits 1 naming the library, locking no clock" bash -c \
    "test $? -eq 1 && grep -q 'libemo_cuda.so\|libcuda' '$tmp/err' && ! grep -q '^lock' '$tmp/nvml.log' 2>/dev/null"
  check "and writes no profile" test ! -e "$tmp/cal.json"
fi
ZEUSD_SOCK_PATH=/nonexistent/zeusd.sock "$emo" gpus --backend zeusd >/dev/null 2>"$tmp/err"; rc=$?
check "gpus --backend zeusd without a daemon exits 1" test $rc -eq 1
check "and names the missing socket in one line" bash -c "grep -q 'no socket at /nonexistent/zeusd.sock' '$tmp/err' && test \$(wc -l <'$tmp/err') -eq 1"
"$emo" run --backend nope -- true >/dev/null 2>&1; rc=$?
check "run rejects an unknown back end" test $rc -ne 0

# emo trace: one clear line and exit 1 when it cannot trace; the command's status otherwise.
"$emo" trace -o "$tmp/traces" >/dev/null 2>"$tmp/err"; rc=$?
check "trace without a command exits 1" test $rc -eq 1
check "trace without a command says so in one line" test "$(wc -l <"$tmp/err")" -eq 1
EMO_INJECT_LIBRARY=/nonexistent/libemo_inject.so "$emo" trace -o "$tmp/traces" -- true >/dev/null 2>"$tmp/err"; rc=$?
check "trace with a missing library exits 1" test $rc -eq 1
check "trace with a missing library says so in one line" test "$(wc -l <"$tmp/err")" -eq 1
if [ -f "$(dirname "$emo")/libemo_inject.so" ]; then
  check "the missing library's error names it" grep -q "/nonexistent/libemo_inject.so not found" "$tmp/err"
  "$emo" trace -o "$tmp/traces" -- sh -c 'exit 3' >/dev/null 2>"$tmp/err"; rc=$?
  check "trace exits with the command's status" test $rc -eq 3
  check "trace reports that a non-CUDA command wrote no trace" grep -q "wrote no trace" "$tmp/err"
  "$emo" trace -o "$tmp/traces" --warmup 2 --iterations 3 -- \
    sh -c 'echo "$EMO_TRACE_WARMUP $EMO_TRACE_ITERATIONS" >"$0"' "$tmp/window" >/dev/null 2>&1
  check "trace hands --warmup and --iterations to the injection library" test "$(cat "$tmp/window")" = "2 3"
  "$emo" trace -o "$tmp/traces" -- sh -c 'echo "$EMO_TRACE_COUNTERS_MS" >"$0"' "$tmp/cms" >/dev/null 2>&1
  "$emo" trace -o "$tmp/traces" --counters-ms 0 -- sh -c 'echo "$EMO_TRACE_COUNTERS_MS" >>"$0"' "$tmp/cms" \
    >/dev/null 2>&1
  check "trace hands --counters-ms (20 by default, 0: none) to the injection library" \
    test "$(tr '\n' ' ' <"$tmp/cms")" = "20 0 "
  # NCCL's profiler plugin: EMO's, beside emo, unless the user named one (kept, with a note).
  env -u NCCL_PROFILER_PLUGIN "$emo" trace -o "$tmp/traces" -- sh -c 'echo "$NCCL_PROFILER_PLUGIN" >"$0"' \
    "$tmp/plugin" >/dev/null 2>&1
  check "trace points NCCL_PROFILER_PLUGIN at EMO's plugin" test "$(cat "$tmp/plugin")" = \
    "$(cd "$(dirname "$emo")" && pwd)/libemo_nccl_profiler.so"
  NCCL_PROFILER_PLUGIN=/opt/my-profiler.so "$emo" trace -o "$tmp/traces" -- \
    sh -c 'echo "$NCCL_PROFILER_PLUGIN" >"$0"' "$tmp/plugin" >/dev/null 2>"$tmp/err"
  check "trace keeps the user's NCCL_PROFILER_PLUGIN" test "$(cat "$tmp/plugin")" = /opt/my-profiler.so
  check "and says so" grep -q "NCCL_PROFILER_PLUGIN is set (/opt/my-profiler.so): keeping it" "$tmp/err"
  EMO_TRACE_CONTROL= "$emo" trace -o "$tmp/od" --on-demand -- sh -c 'echo "$EMO_TRACE_CONTROL" >"$0"' \
    "$tmp/control" >/dev/null 2>&1
  check "trace --on-demand hands the directory to the injection library" test "$(cat "$tmp/control")" = "$tmp/od"
else
  check "an emo without CUDA support says so" grep -q "without CUDA support" "$tmp/err"
fi
"$emo" trace -o "$tmp/od" --on-demand --iterations 3 -- true >/dev/null 2>"$tmp/err"; rc=$?
check "trace --on-demand takes no --iterations (they go with --request)" test $rc -eq 1

# emo trace --request: the on-demand protocol (trace/trace_control.h) against a stand-in for a
# traced process (libemo_inject.so needs a GPU): it registers, waits for the request and answers
# with a trace of the simulator's.
mkdir -p "$tmp/od"
"$emo" trace --request "$tmp/od" --iterations 2 --timeout 0.2 >/dev/null 2>"$tmp/err"; rc=$?
check "a request that no process takes exits 1" test $rc -eq 1
check "and says that no traced process registered" grep -q "no traced process registered" "$tmp/err"
"$emo" trace --request "$tmp/od" -- true >/dev/null 2>"$tmp/err"; rc=$?
check "a request takes no command" test $rc -eq 1
if [ -f "$tmp/tr/rank-0.json" ]; then
  cat >"$tmp/fake_traced.py" <<'PY'
import os, sys, time
control, trace = sys.argv[1], sys.argv[2]
name = "emo-trace-pid%d.json" % os.getpid()
proc = os.path.join(control, "proc-%d" % os.getpid())
def request():
    return open(os.path.join(control, "request")).read().split()
seen = int(request()[2])  # the request before this process began is not its to answer
with open(proc, "w") as f:
    f.write("%s %d\n" % (name, seen))
deadline = time.time() + 30
while time.time() < deadline:
    words = request()
    if words[:2] == ["emo-trace-request", "1"] and int(words[2]) > seen:
        window = os.path.join(control, "window-" + words[2])
        os.makedirs(window, exist_ok=True)
        with open(os.path.join(window, name + ".tmp"), "w") as f:
            f.write(open(trace).read())
        os.rename(os.path.join(window, name + ".tmp"), os.path.join(window, name))
        break
    time.sleep(0.02)
time.sleep(0.5)
os.remove(proc)
PY
  python3 "$tmp/fake_traced.py" "$tmp/od" "$tmp/tr/rank-0.json" &
  fake=$!
  for _ in $(seq 100); do [ -f "$tmp/od/proc-$fake" ] && break; sleep 0.1; done  # registered
  "$emo" trace --request "$tmp/od" --iterations 2 --timeout 10 >"$tmp/out" 2>"$tmp/err"; rc=$?
  wait $fake
  check "a request answered exits 0" test $rc -eq 0
  check "and prints the window's trace" grep -q "^$tmp/od/window-2/emo-trace-pid$fake.json\$" "$tmp/out"
  "$emo" analyze "$tmp/od/window-2" >/dev/null 2>&1
  check "the window's directory is a trace for emo analyze" test $? -eq 0
fi

"$emo" trace -o "$tmp/traces" --iterations 0 -- true >/dev/null 2>&1; rc=$?
check "trace rejects --iterations 0" test $rc -ne 0
"$emo" trace -o "$tmp/traces" --warmup 2 -- true >/dev/null 2>&1; rc=$?
check "trace rejects --warmup without --iterations" test $rc -ne 0

# Counters: each value held until the next sample, so 100 for 10 us, 200 for 30 us: a mean of 175.
printf '{"traceEvents": [{"ph": "C", "name": "sm_clock", "pid": 0, "ts": 0, "args": {"MHz": 100}},
  {"ph": "C", "name": "sm_clock", "pid": 0, "ts": 40, "args": {"MHz": 50}},
  {"ph": "C", "name": "sm_clock", "pid": 0, "ts": 10, "args": {"MHz": 200}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 3, "dur": 2, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 6, "dur": 4, "args": {"correlation": 1, "stream": 7}}]}' \
  >"$tmp/counters.json"
"$emo" analyze --json "$tmp/counters.json" >"$tmp/counters.out" 2>/dev/null
check "analyze: a counter's mean holds each sample until the next" python3 -c "
import json, sys
c = json.load(open('$tmp/counters.out'))['ranks'][0]['counters']
sys.exit(0 if len(c) == 1 and c[0]['mean'] == 175 and c[0]['min'] == 50 and c[0]['max'] == 200 and c[0]['samples'] == 3 else 1)"

# Bad input: one line on stderr naming the file, non-zero exit, no crash (exit code 1, not a signal).
printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 12' >"$tmp/truncated.json"
"$emo" analyze "$tmp/truncated.json" >/dev/null 2>"$tmp/err"; rc=$?
check "truncated JSON exits 1" test $rc -eq 1
check "truncated JSON error names the file" grep -q "truncated.json: byte" "$tmp/err"
check "error is one line" test "$(wc -l <"$tmp/err")" -eq 1
printf 'SQLite format 3\000garbage' >"$tmp/bad.sqlite"
"$emo" analyze "$tmp/bad.sqlite" >/dev/null 2>"$tmp/err"; rc=$?
check "corrupt SQLite exits 1" test $rc -eq 1
check "corrupt SQLite error names the file" grep -q "bad.sqlite" "$tmp/err"
"$emo" analyze "$tmp/missing.json" >/dev/null 2>"$tmp/err"; rc=$?
check "missing file exits 1" test $rc -eq 1
"$emo" analyze >/dev/null 2>&1; rc=$?
check "missing argument exits non-zero" test $rc -ne 0
# Budgets on the wrong scale are refused before anything runs, saying which scale: emo optimize and
# emo bench take fractions (5 there would allow a 500 % slowdown), the online options percentages.
"$emo" optimize --workload "$tmp/never-read.json" --budget 5 >/dev/null 2>"$tmp/err"; rc=$?
check "optimize refuses --budget 5, a fraction is asked for" bash -c \
  "test $rc -ne 0 && test $rc -ne 1 && grep -q \"'5' is not a fraction of the default iteration time\" '$tmp/err'"
"$emo" bench --budgets 0.02 -0.01 >/dev/null 2>"$tmp/err"; rc=$?
check "bench refuses a negative budget" bash -c "test $rc -ne 0 && grep -q \"'-0.01' is not a fraction\" '$tmp/err'"
"$emo" sim --workload "$tmp/never-read.json" --adapt 500 >/dev/null 2>"$tmp/err"; rc=$?
check "sim refuses --adapt 500, a percentage up to 100" bash -c "test $rc -ne 0 && grep -q 'is not a percentage' '$tmp/err'"
"$emo" sim --workload "$tmp/never-read.json" --iterations 0 >/dev/null 2>"$tmp/err"; rc=$?
check "a count of 0 is refused, saying what is asked for" bash -c "test $rc -ne 0 && grep -q \"'0' is not a number above 0\" '$tmp/err'"

# emo profile: the ranges of the unique packs go to the command through $EMO_PROFILE_RANGES and its
# results come back from $EMO_PROFILE_OUT. A stand-in for the injected profiler (a script that
# orders the trace's kernels by correlation itself, and "measures" 1000·(first+1) DRAM bytes for
# each range) checks the plumbing; a wrong kernel name at a range's start is an error.
trace_es="$traces/HolisticTraceAnalysis/critical_path/cuda_event_sync/event_sync_trace.json.gz"
if [ -f "$trace_es" ] && ! "$emo" profile --trace "$trace_es" -o "$tmp/m.json" -- true 2>&1 | grep -q "without CUDA"; then
  cat >"$tmp/fake_profiler.py" <<'PY'
import gzip, json, os, sys
ranges = json.load(open(os.environ["EMO_PROFILE_RANGES"]))["ranges"]
ev = json.load(gzip.open(sys.argv[1]))["traceEvents"]
names = [e["name"] for e in sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["args"]["correlation"])]
keys = ["sm_cycles_active", "warps_per_active_cycle", "dram_read_bytes", "dram_write_bytes", "l1_bytes", "l2_bytes",
        "inst_alu", "inst_fma", "inst_fp64", "inst_lsu", "inst_tensor"]
out = {"gpu": 0, "kernels_seen": len(names), "error": "", "ranges": []}
for r in ranges:
    m = {k: 0.0 for k in keys}
    m["dram_read_bytes"] = 1000.0 * (r["first"] + 1)
    name = sys.argv[2] if len(sys.argv) > 2 else names[r["first"]]
    out["ranges"].append(dict(r, kernels=r["last"] - r["first"] + 1, first_kernel=name, metrics=m))
json.dump(out, open(os.path.join(os.environ["EMO_PROFILE_OUT"], "profile-pid1.json"), "w"))
PY
  "$emo" profile --trace "$trace_es" -o "$tmp/m.json" -- python3 "$tmp/fake_profiler.py" "$trace_es" >/dev/null 2>"$tmp/err"
  check "profile hands the ranges over and reads the results back" bash -c "test $? -eq 0 && python3 -c \"
import json, sys
m = json.load(open('$tmp/m.json'))
dram = sorted(p['metrics']['dram_read_bytes'] for p in m['packs'])
sys.exit(0 if m['first_kernel_mismatches'] == 0 and m['kernels_profiled'] == 4 and dram == [1000, 2000, 3000, 4000] else 1)\""
  "$emo" profile --trace "$trace_es" -o "$tmp/m2.json" -- python3 "$tmp/fake_profiler.py" "$trace_es" other_kernel \
    >/dev/null 2>"$tmp/err"
  check "profile fails when the rerun launched other kernels" bash -c "test $? -eq 1 && grep -q 'began at other_kernel' '$tmp/err'"
  "$emo" profile --trace "$trace_es" -o "$tmp/m3.json" -- true >/dev/null 2>"$tmp/err"
  check "profile of a command without CUDA says so" bash -c "test $? -eq 1 && grep -q 'wrote no profile results' '$tmp/err'"
fi

exit $fail

// main.cc — the `emo` executable: one subcommand per pipeline job.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <functional>

#include "cli/analyze.h"
#include "cli/bench.h"
#include "cli/calibrate.h"
#include "cli/gpoeo_train.h"
#include "cli/gpu_backend.h"
#include "cli/gpus.h"
#include "cli/optimize.h"
#include "cli/predict.h"
#include "cli/profile.h"
#include "cli/run.h"
#include "cli/sim.h"
#include "cli/trace.h"
#include "cli/validate.h"
#include "online/registry.h"

namespace {

// --low-clock MHZ|auto|none: a second traced run at a lower locked clock (cli/model_pipeline.h's
// LowClockRun); auto (-1) takes LowClock of the device profile, none (0) runs none.
CLI::Option* AddLowClock(CLI::App* app, int* mhz, const std::string& what) {
  return app
      ->add_option_function<std::string>(
          "--low-clock",
          [mhz](const std::string& v) {
            if (v == "auto" || v == "none") {
              *mhz = v == "auto" ? -1 : 0;
              return;
            }
            size_t used = 0;
            int value = 0;
            try {
              value = std::stoi(v, &used);
            } catch (const std::exception&) {
              used = 0;
            }
            if (used != v.size() || value <= 0)
              throw CLI::ValidationError("--low-clock", "'" + v + "' is not a clock in MHz, auto or none");
            *mhz = value;
          },
          what)
      ->type_name("MHZ|auto|none");
}

// A check of a number option whose message says what the option takes (CLI11's own range checks
// print their upper limit, the largest double, in full). `name` is what --help shows.
CLI::Validator NumberIn(const std::string& name, const std::string& what, std::function<bool(double)> ok) {
  return CLI::Validator(
      [what, ok](std::string& v) -> std::string {
        size_t used = 0;
        double x = 0;
        try {
          x = std::stod(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used > 0 && used == v.size() && std::isfinite(x) && ok(x)) return {};
        return "'" + v + "' is not " + what;
      },
      name);
}
const CLI::Validator kPositive = NumberIn("POSITIVE", "a number above 0", [](double x) { return x > 0; });
const CLI::Validator kNonNegative = NumberIn("NONNEGATIVE", "a number of 0 or more", [](double x) { return x >= 0; });
// Slowdown budgets: `emo optimize` and `emo bench` take a fraction of the default iteration time,
// the online options a percentage; each refuses the other's scale beyond 100 % (a budget of 5
// meant as 5 % would otherwise allow 500 %).
const CLI::Validator kFraction =
    NumberIn("FRACTION", "a fraction of the default iteration time from 0 to 1 (0.05 = 5 %)",
             [](double x) { return x >= 0 && x <= 1; });
const CLI::Validator kPercent =
    NumberIn("PERCENT", "a percentage from 0 to 100 (5 = 5 %)", [](double x) { return x >= 0 && x <= 100; });

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"EMO: energy-efficiency modeling and optimization for GPU AI workloads"};
  app.require_subcommand(1);

  emo::AnalyzeOptions analyze;
  CLI::App* a =
      app.add_subcommand("analyze",
                         "Build the execution graph of traces (Kineto JSON[.gz], Nsight Systems SQLite, or a directory "
                         "of them; one file per rank) and report replay fidelity, critical path, slack and asynchrony");
  a->add_option("traces", analyze.inputs, "trace files or directories")->required();
  a->add_flag("--json", analyze.json, "print one JSON object instead of text");
  a->add_option("--pack-ms", analyze.pack_ms, "longest pack of kernels, ms (packing's Δmax)")->check(kPositive);

  emo::SimOptions sim;
  CLI::App* s = app.add_subcommand("sim",
                                   "Run a workload on simulated GPUs (the default device) and measure time and "
                                   "energy per iteration through the simulated energy counters");
  s->add_option("--workload", sim.workload, "workload spec JSON (see workloads/)")->required();
  s->add_option("--device", sim.device,
                "simulated GPU, overriding the spec's (A100-SXM4-80GB, H100-SXM, RTX3080Ti, A40)");
  s->add_option("--policy", sim.policy, "frequency policy JSON: per GPU, clock changes at offsets into each iteration");
  s->add_option("--controller", sim.controller, "an online method run beside the workload: " + emo::MethodUsage());
  s->add_option("--adapt", sim.adapt_pct,
                "EMO online: plan from a window of iterations at default clocks (trace, packs, model, search), play "
                "the policy, and plan again when the iteration time drifts (a phase change); the budget, %")
      ->check(kPercent);
  s->add_option("--iterations", sim.iterations, "iterations to run")->check(kPositive);
  s->add_option("--warmup", sim.warmup, "iterations left out of the measurement (default: 1 when there are several)")
      ->check(kNonNegative);
  s->add_option("--seed", sim.seed, "seed of the run-to-run noise (of the first run with --seeds)");
  s->add_option("--seeds", sim.seeds,
                "runs with seeds S, S+1, ...: mean and spread of iteration time and energy (text and --measure)")
      ->check(kPositive);
  s->add_option("--gpu-seed", sim.gpu_seed,
                "which simulated physical GPUs: seed of the per-GPU power and speed variation (default 0)");
  s->add_option("--kernel-seed", sim.kernel_seed,
                "which build of the kernels: seed of their hidden per-name speed and power factors (default 0)");
  CLI::Option* sweep =
      s->add_option("--sweep-clocks", sim.sweep_clocks,
                    "measure the workload at static SM clocks locked on every GPU (over --seeds) instead of one run: "
                    "all, a list of MHz, or without a value the boost clock and every 6th clock below it; prints "
                    "time, energy, slowdown and saving per clock and the best clock within each --budget")
          ->expected(0, 1);
  s->add_option("--budget", sim.budgets, "slowdown budgets, %, for --sweep-clocks' best static clock (default 0 2 5)")
      ->delimiter(',')
      ->check(kPercent);
  s->add_option("--trace", sim.trace_out, "write a Kineto JSON trace (a directory of rank-R.json for several GPUs)");
  s->add_option("--measure", sim.measure_out,
                "write the measurement JSON (src/apply/measurement.h: window_s, energy_j, iteration_ms, per_gpu, ...)");

  emo::GpusOptions gpus;
  CLI::App* gp = app.add_subcommand("gpus",
                                    "List this machine's NVIDIA GPUs as EMO's NVML (or zeusd) back end sees "
                                    "them: clocks, power, limits, energy counter, utilisation (read only)");
  gp->add_flag("--json", gpus.json, "print a JSON array instead of text");
  gp->add_flag("--reset", gpus.reset,
               "unlock every GPU's clocks and restore its default power limit (recovery; needs root; through "
               "zeusd, clocks only)");
  gp->add_option("--backend", gpus.backend, std::string("GPU back end: ") + emo::kGpuBackendUsage)
      ->check(CLI::IsMember({"nvml", "zeusd"}));

  emo::RunOptions run;
  CLI::App* r = app.add_subcommand("run",
                                   "Run a command on this machine's GPUs, optionally under an online method, "
                                   "and report its time and energy from the GPUs' counters; clocks are "
                                   "restored afterwards");
  r->add_option("--controller", run.controller,
                "online method: " + emo::MethodUsage() +
                    " (zeus-power-limit needs iteration starts: the command sends a datagram to the Unix socket "
                    "$EMO_STEP_SOCKET as each begins)");
  r->add_option("--policy", run.policy, "frequency policy JSON, played at every iteration start ($EMO_STEP_SOCKET)");
  r->add_option("--lock-mhz", run.lock_mhz, "lock every job GPU at this SM clock for the whole run, then restore it")
      ->check(kPositive);
  r->add_option("--gpus", run.gpus,
                "the job's GPUs: indices as `emo gpus` lists them or UUIDs (GPU-...), comma-separated; EMO sets "
                "CUDA_VISIBLE_DEVICES for the job to them (default: the GPUs $CUDA_VISIBLE_DEVICES names, else all). "
                "Policy GPU indices count the job's GPUs");
  r->add_option("--guard-budget", run.guard_budget_pct,
                "performance guard of --policy: the allowed slowdown, % (default: the budget the policy records); "
                "when 5 iterations in a row take longer than reference x (1 + budget + 2 %), the default clocks are "
                "restored and the policy stops")
      ->check(kPercent);
  r->add_option("--guard-reference", run.guard_reference,
                "the guard's reference iteration time: policy (the default_iteration_ms the policy records), "
                "measured (the median of iterations 1-5, run at default clocks before the policy starts) or auto "
                "(policy when it records one)")
      ->check(CLI::IsMember({"auto", "policy", "measured"}));
  r->add_flag("!--no-guard", run.guard, "play the policy without the performance guard");
  r->add_option("--measure", run.measure_out,
                "write the measurement JSON (src/apply/measurement.h: window_s, energy_j, iterations, per_gpu, "
                "guard, ...)");
  r->add_option("--backend", run.backend, std::string("GPU back end: ") + emo::kGpuBackendUsage)
      ->check(CLI::IsMember({"nvml", "zeusd"}));
  CLI::Option* run_adapt =
      r->add_option("--adapt", run.adapt_pct,
                    "EMO online: trace the job on demand (its iterations are NVTX ranges emo.step or ProfilerStep#N, "
                    "and it reports each start at $EMO_STEP_SOCKET), plan from a window at default clocks (pack "
                    "model, search), play the plan, plan again when the iteration time drifts; budget in %")
          ->check(kPercent);
  r->add_option("--packs", run.packs, "with --adapt: emo profile's pack metrics of the same program")->needs(run_adapt);
  r->add_option("--profile", run.profile, "with --adapt: the device profile (default: found for the job's GPU)")
      ->needs(run_adapt);
  r->add_option("command", run.command, "the command, after --")->required();

  emo::TraceOptions trace;
  CLI::App* t = app.add_subcommand("trace",
                                   "Trace an unmodified CUDA program with EMO's CUPTI injection library: one "
                                   "Kineto JSON per process in DIR, for emo analyze");
  t->add_option("-o,--output", trace.out_dir, "directory for the traces (emo-trace-rank<R>.json or -pid<P>.json)");
  CLI::Option* trace_iterations =
      t->add_option("--iterations", trace.iterations,
                    "keep only this many steps (NVTX ranges emo.step or ProfilerStep#N) after the warm-up ones, and "
                    "the work they issued; default: the whole run. With --request: the window's steps")
          ->check(kPositive);
  t->add_flag("--on-demand", trace.on_demand,
              "trace nothing until asked: windows of steps on request (emo trace --request DIR), into DIR/window-S/");
  t->add_option("--request", trace.request,
                "instead of a command: ask the job traced --on-demand into DIR for its next --iterations steps, "
                "and wait for them");
  t->add_option("--timeout", trace.timeout_s, "with --request: seconds the job has for the window (default 60)")
      ->check(kPositive);
  t->add_option("--warmup", trace.warmup, "with --iterations: steps left out first (default 0)")
      ->check(kNonNegative)
      ->needs(trace_iterations);
  t->add_option("--counters-ms", trace.counters_ms,
                "read each GPU's SM clock, power and energy counter from NVML this often into the trace, as "
                "counter tracks (Perfetto; emo optimize --trace takes power and clock from them); 0: never")
      ->check(kNonNegative);
  t->add_option("command", trace.command, "the command, after --");

  emo::ProfileOptions prof;
  CLI::App* prof_cmd = app.add_subcommand("profile",
                                          "Profile the unique packs of a traced CUDA program: run it again under CUPTI "
                                          "range profiling and write each pack's metric vector");
  prof_cmd->add_option("--trace", prof.traces, "the trace(s) of the same command (files or directories; repeatable)")
      ->required();
  prof_cmd->add_option("-o,--output", prof.out, "metrics JSON to write (the raw per-process results go to OUT.d/)")
      ->required();
  prof_cmd->add_option("--pack-ms", prof.pack_ms, "largest pack span in ms, as for emo analyze");
  prof_cmd->add_option("command", prof.command, "the command, after --");

  emo::CalibrateCliOptions cal;
  CLI::App* c = app.add_subcommand("calibrate",
                                   "Run the 12 microbenchmarks at a spread of SM clocks through the device "
                                   "interface and write the device profile the pack model needs");
  c->add_option(
      "--device", cal.device,
      "sim:a100, sim:h100, sim:a40, sim:3080ti, or cuda:N (GPU N through CUDA and NVML; needs root to lock clocks)");
  c->add_option("-o,--output", cal.out, "profile JSON to write (an unfinished run is continued from OUT.partial)")
      ->required();
  c->add_option("--clocks", cal.clocks,
                "'all', a count of clocks spread over the range (default 13), or MHz values "
                "'210,810,1410' (the default clock is always added)");
  c->add_option("--seed", cal.seed, "seed of the simulated run-to-run noise");

  emo::OptimizeOptions opt;
  CLI::App* o =
      app.add_subcommand("optimize",
                         "EMO's main job: on a simulated device, trace a workload at default clocks, pack, "
                         "profile, model and search the least-energy clock schedule within a slowdown budget; "
                         "or the same from a real job's trace, pack metrics and power (--trace), or from a job it "
                         "runs on this machine's GPUs (-- CMD ARGS)");
  o->add_option("--workload", opt.workload, "workload spec JSON (see workloads/)");
  o->add_option("--trace", opt.traces, "instead of --workload: a real job's trace(s) from emo trace (repeatable)");
  o->add_option("--packs", opt.packs, "with --trace: its packs' metrics from emo profile");
  o->add_option("--power-w", opt.power_w,
                "with --trace: each GPU's average power at default clocks, W (default: the traces' energy counter "
                "or power readings)")
      ->delimiter(',');
  o->add_option("--clock-mhz", opt.clock_mhz,
                "with --trace: each GPU's mean SM clock while the job ran at default clocks (below the default "
                "where the power limit held it; default: the traces' clock counters, else the profile's default "
                "clock)")
      ->delimiter(',');
  o->add_option("--save-trace", opt.save_trace,
                "write the traced run as Kineto JSON (a file, or a directory of ranks)");
  o->add_option("--save-packs", opt.save_packs, "write the profiled packs' metrics (the format of emo profile)");
  o->add_option("--budget", opt.budget, "slowdown budget, a fraction of the default iteration time (0.05 = 5 %)")
      ->check(kFraction);
  o->add_option("--device", opt.device, "simulated device (default: the workload's)");
  o->add_option("--profile", opt.profile, "device profile JSON (default: the shipped profiles/ one for the device)");
  o->add_option("-o,--output", opt.out, "write the policy JSON (emo sim --policy, emo run --policy)");
  o->add_flag("--measure", opt.measure,
              "measure the policy, the default clocks and every static clock on fresh seeds (with -- CMD: run "
              "the job under the policy once more)");
  o->add_option("--seeds", opt.seeds, "measurement seeds")->check(kPositive);
  o->add_option("--seed", opt.seed, "seed of the traced run (measurements use the seeds after seed+1000)");
  o->add_option("--iterations", opt.iterations,
                "iterations per measured run, the first left out (default: enough for an 8 s window)");
  o->add_option("--trace-iterations", opt.trace_iterations,
                "iterations traced at default clocks (with -- CMD: kept after --trace-warmup)");
  o->add_option("--trace-warmup", opt.trace_warmup,
                "with -- CMD: trace only --trace-iterations steps after this many (default: the whole run)")
      ->check(kNonNegative);
  o->add_option("--backend", opt.backend, "with -- CMD: how the runs reach the GPUs, nvml or zeusd")
      ->check(CLI::IsMember({"nvml", "zeusd"}));
  o->add_option("--gpus", opt.gpus, "with -- CMD: the GPUs of the runs, as emo run --gpus");
  o->add_option("command", opt.command, "with no --workload or --trace: the job to run, after --");
  o->add_flag("!--no-check", opt.check, "trust the model: no measured check run of the searched policy");
  o->add_option("--grid-ms", opt.grid_ms, "change points every this many ms of the iteration")->check(kPositive);
  o->add_option("--min-interval-ms", opt.min_interval_ms, "least time between two clock changes of a GPU")
      ->check(kNonNegative);
  o->add_option("--step-ms", opt.step_ms, "budget discretisation (0: min(1 ms, iteration/1000))")->check(kNonNegative);
  o->add_option("--dvfs-latency-ms", opt.dvfs_latency_ms, "time a clock change takes to land")->check(kNonNegative);
  o->add_option("--dvfs-jitter-ms", opt.dvfs_jitter_ms, "how much that time varies either way")->check(kNonNegative);
  o->add_option("--max-clocks", opt.max_clocks, "candidate clocks of the search, spread over the useful range")
      ->check(CLI::Range(2, 1000));
  o->add_option("--max-states", opt.max_states, "states the search keeps per change point")
      ->check(CLI::Range(1, 10000));
  o->add_flag("--local-search", opt.local_search,
              "after the search, try each change point at each clock (closer to the model's optimum; measured "
              "worse on the simulated bench, see docs/search.md)");
  o->add_flag("--pairs", opt.pairs,
              "after the search, try pairs of change points, one clock up and the other down (closer to the "
              "model's optimum; measured over budget on one simulated bench job, see docs/search.md)");
  o->add_flag("--no-backward-dp", opt.no_backward,
              "only the forward DP: no DP that decides the change points from the last (further from the "
              "model's optimum on small instances, see docs/search.md)");
  o->add_flag("--no-gpu-delay-states", opt.no_gpu_delays,
              "keep the search's states by the run's delay only, not also by each GPU's (half the search time "
              "on pipelines; further from the model's optimum on small instances, see docs/search.md)");
  o->add_flag("--gpu-delays-by-work", opt.gpu_delays_by_work,
              "file the search's states by the most any of each GPU's work finishes late, not by its latest "
              "finish (closer to the model's optimum on small instances, 1.7 times the search time on a pipeline; "
              "see docs/search.md)");
  o->add_flag("--above-held", opt.above_held,
              "let GPUs that ran below the default clock at default clocks (power limit) take clocks above the one "
              "they ran at, where the model cannot see the power controller raise them (see docs/results.md)");
  o->add_option("--search-threads", opt.search_threads,
                "threads predicting the search's candidate schedules (0: every core; the answer is the same)")
      ->check(kNonNegative);
  o->add_option("--pack-ms", opt.pack_ms, "longest pack of kernels, ms")->check(kPositive);
  AddLowClock(o, &opt.low_mhz,
              "simulated: trace the job a second time, and measure its power, with every GPU locked at this "
              "clock, so that the model learns how each pack's time and energy follow the clock (default auto: "
              "70 % of the default clock; none: the model alone; docs/validation.md); with -- CMD: the same, "
              "on the GPUs; with --trace: the clock of --low-trace's run");
  o->add_option("--low-trace", opt.low_traces,
                "with --trace: the same iterations traced with every GPU locked at --low-clock (repeatable)");
  o->add_option("--low-power-w", opt.low_power_w,
                "with --low-trace: each GPU's average power with the job locked at --low-clock, W (emo run --measure; "
                "default: its traces' energy counter or power readings)")
      ->delimiter(',');
  o->add_option("--json", opt.json, "write the results as JSON to a file ('-': stdout)");

  emo::ValidateOptions val;
  CLI::App* v = app.add_subcommand("validate",
                                   "The model's fidelity on a simulated device: predicted against measured time and "
                                   "energy of static clocks across the range and of random 20 ms policies, and the "
                                   "cost of the pack profiling");
  v->add_option("--workload", val.workload, "workload spec JSON (see workloads/)")->required();
  v->add_option("--device", val.device, "simulated device (default: the workload's)");
  v->add_option("--profile", val.profile, "device profile JSON (default: the shipped profiles/ one for the device)");
  v->add_option("--seeds", val.seeds, "measurement seeds (each policy's measurement is their mean)")->check(kPositive);
  v->add_option("--seed", val.seed, "seed of the traced run and of the random policies (measurements: seed+1000+i)");
  v->add_option("--iterations", val.iterations,
                "iterations per measured run (the first is left out; default: enough for 8 s of measurement, at "
                "least 6)")
      ->check(CLI::Range(2, 1000000));
  v->add_option("--trace-iterations", val.trace_iterations, "iterations traced at default clocks")
      ->check(CLI::Range(3, 1000000));
  v->add_option("--clocks", val.clocks, "static clocks spread over the profile's range (the default is added)")
      ->check(CLI::Range(2, 1000));
  v->add_option("--random", val.random_policies, "random policies")->check(kNonNegative);
  v->add_option("--change-ms", val.change_ms, "a random policy changes the clock every this many ms")->check(kPositive);
  v->add_option("--dvfs-latency-ms", val.dvfs_latency_ms, "time a clock change takes to land (predicted landings)")
      ->check(kNonNegative);
  v->add_option("--pack-ms", val.pack_ms, "longest pack of kernels, ms")->check(kPositive);
  AddLowClock(v, &val.low_mhz,
              "trace the job a second time, and measure its power, with every GPU locked at this clock (default "
              "auto: 70 % of the default clock; none: the model alone)");
  v->add_option("--json", val.json, "write the results as JSON to a file ('-': stdout, the text going to stderr)");

  emo::GpoeoTrainOptions gtrain;
  CLI::App* g = app.add_subcommand("gpoeo", "GPOEO, the online energy optimizer: its models");
  g->require_subcommand(1);
  CLI::App* gt = g->add_subcommand("train",
                                   "Train GPOEO's energy and time models on generated workloads run at a spread of "
                                   "SM clocks (and, where the GPU lists several memory clocks, memory models from a "
                                   "few SM clocks at each lower one), report their error and the gpoeo controller's "
                                   "result on a disjoint held-out corpus, and write MODEL_DIR (use with --controller "
                                   "gpoeo:models=DIR)");
  gt->add_option("--device", gtrain.device, "sim:a100, sim:h100, sim:a40, sim:3080ti or cuda:N (a GPU; root)");
  gt->add_option("--corpus", gtrain.corpus,
                 "workloads (generated workload specs, simulator only; the simulator's default) or mix (periodic "
                 "jobs of microbenchmark kernels, run through the device interface; a GPU's default)");
  gt->add_option("--eval-corpus", gtrain.eval_corpus,
                 "the held-out corpus's kind, workloads or mix (default: the training corpus's): models trained on "
                 "kernel-mix jobs can be judged on the simulator's workloads");
  gt->add_option("--features", gtrain.features,
                 "telemetry (power, utilisation, clock: every GPU back end but zeusd), activity (those and NVML's "
                 "GPM activity counters, Hopper and later) or counters (telemetry and the metrics table's counters per "
                 "period, as GPOEO profiles them inside the job: the simulator only); default: activity where the "
                 "device offers it")
      ->check(CLI::IsMember({"telemetry", "activity", "counters"}));
  gt->add_option("-o,--output", gtrain.out,
                 "MODEL_DIR to write (meta.json, energy.json, time.json, corpus.json; energy_memory.json "
                 "and time_memory.json where the GPU lists several memory clocks)")
      ->required();
  gt->add_option("--workloads", gtrain.train_workloads, "generated workloads in the training corpus")->check(kPositive);
  gt->add_option("--eval-workloads", gtrain.eval_workloads, "generated workloads in the held-out corpus")
      ->check(kPositive);
  gt->add_option("--clocks", gtrain.clocks, "SM clocks swept per workload, spread over the range")
      ->check(CLI::Range(2, 1000));
  gt->add_option("--controller-eval", gtrain.controller_eval,
                 "held-out workloads to run the gpoeo controller on (0: none)")
      ->check(kNonNegative);
  gt->add_option("--controller-options", gtrain.controller_options,
                 "the controller's options for that evaluation, as after gpoeo: (e.g. memory=1,slowdown=0.1)");
  gt->add_option("--seed", gtrain.seed, "seed of the corpus and of the simulated noise");

  emo::BenchOptions bench;
  CLI::App* b = app.add_subcommand(
      "bench",
      "EMO beside the best static clock, Zeus, GEEPAFS, GPOEO and (on pipelines) Perseus on simulated workloads: "
      "measured energy saving and slowdown per budget, with the spread over seeds");
  b->add_option("--workloads", bench.workloads, "workload specs (default: a set of six from workloads/)");
  b->add_option("--methods", bench.methods,
                "emo, static, zeus, geepafs, gpoeo, perseus (pipelines only) (default: all)");
  b->add_option("--budgets", bench.budgets, "slowdown budgets (default 0.02 0.05; 0 for pipelines and offload)")
      ->check(kFraction);
  AddLowClock(b, &bench.low_mhz, "EMO's second traced run of each job, as emo optimize's (default auto)");
  b->add_option("--seeds", bench.seeds, "measurement seeds")->check(kPositive);
  b->add_option("--json", bench.json, "write the rows as JSON");
  b->add_option("--md", bench.md, "write the table as markdown");

  emo::PredictOptions pred;
  CLI::App* pr = app.add_subcommand(
      "predict",
      "Predict a policy's iteration time and energy with the pack model, without running it: on a simulated "
      "workload, or on a real job's traces with their pack metrics (emo profile), power and clock (emo run "
      "--measure)");
  pr->add_option("--workload", pred.workload, "workload spec JSON (simulated)");
  pr->add_option("traces", pred.traces, "or a real job's traces (files or directories, as emo optimize --trace)");
  pr->add_option("--packs", pred.packs, "with traces: the packs' metrics (emo profile)");
  pr->add_option("--power-w", pred.power_w,
                 "with traces: each GPU's average power at default clocks, W (default: the traces' energy counter "
                 "or power readings)")
      ->delimiter(',');
  pr->add_option("--clock-mhz", pred.clock_mhz,
                 "with traces: each GPU's SM clock at default clocks, MHz (default: the traces' clock counters)")
      ->delimiter(',');
  pr->add_option("--pack-ms", pred.pack_ms, "with traces: longest pack, ms (as profiled)")->check(kPositive);
  AddLowClock(pr, &pred.low_mhz,
              "with traces: the clock of --low-trace's run; with --workload: as emo optimize's (default auto)");
  pr->add_option("--low-trace", pred.low_traces,
                 "with traces: the same iterations traced with every GPU locked at --low-clock (repeatable)");
  pr->add_option("--low-power-w", pred.low_power_w,
                 "with --low-trace: each GPU's average power with the job locked at --low-clock, W (default: "
                 "its traces' energy counter or power readings)")
      ->delimiter(',');
  pr->add_option("--policy", pred.policy, "frequency policy JSON (as emo optimize writes)")->required();
  pr->add_option("--device", pred.device, "simulated device (default: the workload's)");
  pr->add_option("--profile", pred.profile, "device profile JSON (default: the shipped one)");
  pr->add_option("--dvfs-latency-ms", pred.dvfs_latency_ms, "time a clock command takes to land")->check(kNonNegative);
  pr->add_flag("--json", pred.json, "print JSON");

  CLI11_PARSE(app, argc, argv);
  if (pr->parsed()) return emo::RunPredict(pred);
  if (b->parsed()) {
    bench.progress = isatty(STDERR_FILENO) != 0;
    return emo::RunBench(bench);
  }
  if (o->parsed()) return emo::RunOptimize(opt);
  if (v->parsed()) return emo::RunValidate(val);
  if (a->parsed()) {
    analyze.progress = isatty(STDERR_FILENO) != 0;
    return emo::RunAnalyze(analyze);
  }
  if (s->parsed()) {
    if (sweep->count() > 0 && sim.sweep_clocks.empty()) sim.sweep_clocks = "default";
    return emo::RunSim(sim);
  }
  if (gp->parsed()) return emo::RunGpus(gpus);
  if (c->parsed()) {
    cal.progress = isatty(STDERR_FILENO) != 0;
    cal.command = "emo";
    for (int i = 1; i < argc; ++i) cal.command += std::string(" ") + argv[i];
    return emo::RunCalibrate(cal);
  }
  if (r->parsed()) return emo::RunCommand(run);
  if (t->parsed()) return emo::RunTrace(trace);
  if (prof_cmd->parsed()) return emo::RunProfile(prof);
  if (gt->parsed()) {
    gtrain.command = "emo";
    for (int i = 1; i < argc; ++i) gtrain.command += std::string(" ") + argv[i];
    return emo::RunGpoeoTrain(gtrain);
  }
  return 0;
}

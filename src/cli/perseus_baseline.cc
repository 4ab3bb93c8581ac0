// perseus_baseline.cc — Perseus's profiling, planning and plan on the simulator (perseus_baseline.h).
#include "cli/perseus_baseline.h"

#include <algorithm>
#include <map>

#include "apply/policy_player.h"
#include "sim/engine.h"
#include "sim/sim_gpu_control.h"
#include "sim/static_sweep.h"

namespace emo {

namespace {

// The program with a device synchronisation before every range's open and close.
sim::Program Synchronised(const sim::Program& p) {
  sim::Program out = p;
  for (sim::RankProgram& r : out.ranks)
    for (sim::Thread& t : r.threads) {
      std::vector<sim::Instr> code;
      for (const sim::Instr& in : t.code) {
        if (in.op == sim::Op::kRangePush || in.op == sim::Op::kRangePop) {
          sim::Instr sync;
          sync.op = sim::Op::kDeviceSync;
          code.push_back(sync);
        }
        code.push_back(in);
      }
      t.code = std::move(code);
    }
  return out;
}

}  // namespace

bool PerseusClocks(const std::string& device, std::vector<int>* out, std::string* err) {
  if (!sim::SweepClockList(device, "all", out, err)) return false;
  std::erase_if(*out, [](int mhz) { return mhz < kPerseusMinMhz; });
  std::sort(out->rbegin(), out->rend());
  return true;
}

bool ProfilePerseus(const sim::Program& program, const std::vector<int>& clocks, int iterations, uint64_t seed,
                    PerseusProfile* out, std::string* err) {
  *out = PerseusProfile();
  const sim::Program prog = Synchronised(program);
  const int gpus = static_cast<int>(prog.ranks.size());
  for (int mhz : clocks) {
    sim::EngineOptions eo;
    eo.iterations = iterations;
    eo.seed = seed;
    eo.record_trace = false;
    sim::Engine engine(prog, eo);
    sim::SimGpuControl ctl(&engine);
    sim::SimHost host(&engine);
    FrequencyPolicy lock;
    for (int g = 0; g < gpus; ++g) lock.gpus.push_back({g, {{0, mhz}}});
    PolicyPlayer player(lock, &ctl);
    InstructionProfiler prof(&ctl, 1);
    host.Add(&player);
    host.Add(&prof);
    const bool ran = engine.Run(err);
    player.Finish();
    if (!ran) return false;
    if (!prof.error().empty()) {
      *err = prof.error();
      return false;
    }
    out->cost_s += engine.end_ns() * 1e-9;
    out->clocks.push_back(mhz);
    if (out->order.empty()) {
      out->order = prof.order();
      out->stages = gpus;
      int fwd = 0;
      for (const std::string& n : out->order.empty() ? std::vector<std::string>() : out->order[0])
        fwd += n == "forward";
      out->microbatches = fwd;
      if (static_cast<int>(out->order.size()) != gpus || fwd == 0) {
        *err = "the program marks no forward/backward ranges on every GPU (Perseus needs a pipeline's instructions)";
        return false;
      }
    }
    std::vector<std::map<std::string, InstructionProfiler::Stat>> stats;
    if (!prof.Estimate(&stats, err)) {
      *err = std::to_string(mhz) + " MHz: " + *err;
      return false;
    }
    stats.resize(std::max(stats.size(), static_cast<size_t>(gpus)));
    for (int s = 0; s < gpus; ++s)
      for (const char* name : {"forward", "backward"}) {
        const auto& st = stats[static_cast<size_t>(s)];
        const auto it = st.find(name);
        if (it == st.end() || it->second.count == 0) {
          *err = "GPU " + std::to_string(s) + ": no measured '" + name + "' range at " + std::to_string(mhz) + " MHz";
          return false;
        }
        perseus::ProfileRow r;
        r.stage = s;
        r.backward = std::string(name) == "backward";
        r.mhz = mhz;
        r.time_s = it->second.time_s;
        r.energy_j = it->second.energy_j();
        out->rows.push_back(r);
      }
  }
  return true;
}

bool PlanPerseus(const PerseusProfile& prof, const perseus::PerseusOptions& opt, double budget, PerseusPlan* out,
                 std::string* err) {
  *out = PerseusPlan();
  std::vector<perseus::OpSpec> specs(static_cast<size_t>(2 * prof.stages));
  for (int s = 0; s < prof.stages; ++s)
    for (int b = 0; b < 2; ++b) {
      std::vector<perseus::ProfileRow> rows;
      for (const perseus::ProfileRow& r : prof.rows)
        if (r.stage == s && r.backward == (b == 1)) rows.push_back(r);
      if (!perseus::BuildOpSpec(rows, opt, &specs[static_cast<size_t>(2 * s + b)], err)) {
        *err = "stage " + std::to_string(s) + (b ? " backward: " : " forward: ") + *err;
        return false;
      }
    }
  const perseus::Dag dag = perseus::OneFOneBDag(prof.stages, prof.microbatches);
  const std::vector<std::vector<int>> order = perseus::StageOrder(dag);
  for (int s = 0; s < prof.stages; ++s) {
    std::vector<std::string> want;
    for (int v : order[static_cast<size_t>(s)])
      want.push_back(dag.backward[static_cast<size_t>(v)] ? "backward" : "forward");
    if (want != prof.order[static_cast<size_t>(s)]) {
      *err = "stage " + std::to_string(s) + ": the measured instruction order is not synchronous 1F1B";
      return false;
    }
  }
  std::vector<perseus::PlanPoint> points;
  if (!perseus::SolveTradeoff(dag, specs, opt, &points, &out->t_min, err)) return false;
  out->points = static_cast<int>(points.size());
  const int pick = perseus::PickPlan(points, out->t_min, opt.unit_time_s, budget);
  perseus::PlanPoint chosen;
  if (pick >= 0) {
    chosen = points[static_cast<size_t>(pick)];
  } else {  // no iteration: every computation at its fastest option
    chosen.mhz.assign(static_cast<size_t>(dag.nodes()), 0);
    for (int v = 0; v < dag.nodes(); ++v)
      if (dag.spec[static_cast<size_t>(v)] >= 0)
        chosen.mhz[static_cast<size_t>(v)] =
            specs[static_cast<size_t>(dag.spec[static_cast<size_t>(v)])].options.back().mhz;
  }
  out->steps.resize(static_cast<size_t>(prof.stages));
  for (int s = 0; s < prof.stages; ++s)
    for (int v : order[static_cast<size_t>(s)])
      out->steps[static_cast<size_t>(s)].push_back(
          {dag.backward[static_cast<size_t>(v)] ? "backward" : "forward", chosen.mhz[static_cast<size_t>(v)]});
  out->chosen = std::move(chosen);
  return true;
}

}  // namespace emo

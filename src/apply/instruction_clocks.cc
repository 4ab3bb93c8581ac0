// instruction_clocks.cc — the per-instruction profiler and clock player (instruction_clocks.h).
#include "apply/instruction_clocks.h"

#include <algorithm>
#include <cmath>

namespace emo {

InstructionProfiler::PerGpu& InstructionProfiler::Gpu(int gpu) {
  if (per_gpu_.size() <= static_cast<size_t>(gpu)) per_gpu_.resize(static_cast<size_t>(gpu) + 1);
  return per_gpu_[static_cast<size_t>(gpu)];
}

void InstructionProfiler::OnIterationStart(int iteration, double now_ns) {
  iteration_ = iteration;
  if (iteration == warmup_) start_ns_ = now_ns;
}

void InstructionProfiler::Tick(double now_ns) {
  for (int g = 0; g < gpus_->Count(); ++g) {
    const std::optional<double> e = gpus_->EnergyJ(g);
    if (!e) {
      Fail("no energy counter on GPU " + std::to_string(g));
      return;
    }
    PerGpu& p = Gpu(g);
    if (*e == p.counter_j) continue;
    // A step: the energy since the previous step, spent between the two (each seen within 1 ms).
    if (p.counter_t >= 0 && start_ns_ >= 0 && p.counter_t >= start_ns_)
      p.steps.push_back({p.counter_t, now_ns, *e - p.counter_j});
    p.counter_j = *e;
    p.counter_t = now_ns;
  }
}

void InstructionProfiler::OnRange(int gpu, const std::string& name, bool push, double now_ns) {
  if (iteration_ < warmup_ || gpu < 0) return;
  PerGpu& p = Gpu(gpu);
  if (push) {
    if (iteration_ == warmup_) {
      if (order_.size() <= static_cast<size_t>(gpu)) order_.resize(static_cast<size_t>(gpu) + 1);
      order_[static_cast<size_t>(gpu)].push_back(name);
    }
    const auto it = std::find(names_.begin(), names_.end(), name);
    p.open_kind = static_cast<int>(it - names_.begin());
    if (it == names_.end()) names_.push_back(name);
    p.open_t = now_ns;
    return;
  }
  if (p.open_t < 0) return;  // opened before the measured window
  p.windows.push_back({p.open_t, now_ns, p.open_kind});
  p.open_t = -1;
}

namespace {

// Solves the n×n system a·x = b (row-major a) by Gaussian elimination with partial pivoting.
bool SolveLinear(std::vector<double> a, std::vector<double> b, size_t n, std::vector<double>* x) {
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r * n + c]) > std::fabs(a[p * n + c])) p = r;
    if (std::fabs(a[p * n + c]) < 1e-12 * std::max(1.0, std::fabs(a[c * n + c]))) return false;
    for (size_t j = 0; j < n; ++j) std::swap(a[c * n + j], a[p * n + j]);
    std::swap(b[c], b[p]);
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = a[r * n + c] / a[c * n + c];
      for (size_t j = c; j < n; ++j) a[r * n + j] -= f * a[c * n + j];
      b[r] -= f * b[c];
    }
  }
  x->resize(n);
  for (size_t i = 0; i < n; ++i) (*x)[i] = b[i] / a[i * n + i];
  return true;
}

}  // namespace

bool InstructionProfiler::Estimate(std::vector<std::map<std::string, Stat>>* out, std::string* err) const {
  out->assign(per_gpu_.size(), {});
  const size_t k = names_.size(), n = k + 1;  // one power per kind, and one outside any range
  for (size_t g = 0; g < per_gpu_.size(); ++g) {
    const PerGpu& p = per_gpu_[g];
    if (p.windows.empty()) continue;
    // Normal equations of step energy = Σ P_kind · (time of that kind within the step) + P_out · rest.
    std::vector<double> ata(n * n, 0), atb(n, 0), x(n);
    size_t first = 0;  // windows are in time order; skip those that closed before the step
    for (const Step& s : p.steps) {
      while (first < p.windows.size() && p.windows[first].t1 <= s.t0) ++first;
      std::fill(x.begin(), x.end(), 0.0);
      double inside = 0;
      for (size_t w = first; w < p.windows.size() && p.windows[w].t0 < s.t1; ++w) {
        const double o = std::min(s.t1, p.windows[w].t1) - std::max(s.t0, p.windows[w].t0);
        if (o > 0) x[static_cast<size_t>(p.windows[w].kind)] += o * 1e-9, inside += o * 1e-9;
      }
      x[k] = (s.t1 - s.t0) * 1e-9 - inside;
      for (size_t i = 0; i < n; ++i) {
        atb[i] += x[i] * s.energy_j;
        for (size_t j = 0; j < n; ++j) ata[i * n + j] += x[i] * x[j];
      }
    }
    std::vector<double> power;
    if (!SolveLinear(ata, atb, n, &power)) {
      *err = "GPU " + std::to_string(g) + ": " + std::to_string(p.steps.size()) +
             " energy-counter steps do not determine each range's power";
      return false;
    }
    for (size_t kind = 0; kind < k; ++kind) {
      Stat s;
      for (const Window& w : p.windows)
        if (static_cast<size_t>(w.kind) == kind) ++s.count, s.time_s += (w.t1 - w.t0) * 1e-9;
      if (s.count == 0) continue;
      s.time_s /= s.count;
      s.power_w = power[kind];
      (*out)[g][names_[kind]] = s;
    }
  }
  return true;
}

void InstructionClockPlayer::OnRange(int gpu, const std::string& name, bool push, double /*now_ns*/) {
  if (!push || gpu < 0 || static_cast<size_t>(gpu) >= plan_.size() || plan_[static_cast<size_t>(gpu)].empty()) return;
  const size_t g = static_cast<size_t>(gpu);
  if (next_.size() < plan_.size()) next_.resize(plan_.size(), 0), locked_.resize(plan_.size(), 0);
  const Step& s = plan_[g][next_[g]];
  next_[g] = (next_[g] + 1) % plan_[g].size();
  if (s.name != name) {
    Fail("GPU " + std::to_string(gpu) + ": the plan expects range '" + s.name + "' but '" + name + "' opened");
    return;
  }
  if (s.mhz == locked_[g]) return;
  std::string err;
  if (!gpus_->SetLockedClock(gpu, s.mhz, &err)) Fail(err);
  locked_[g] = s.mhz;
}

void InstructionClockPlayer::Finish() {
  for (size_t g = 0; g < locked_.size(); ++g) {
    if (locked_[g] == 0) continue;
    std::string err;
    if (!gpus_->ResetClock(static_cast<int>(g), &err)) Fail(err);
    locked_[g] = 0;
  }
}

}  // namespace emo

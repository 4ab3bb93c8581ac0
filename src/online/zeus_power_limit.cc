// zeus_power_limit.cc — the state machine and selectors of Zeus's GlobalPowerLimitOptimizer.
#include "online/zeus_power_limit.h"

#include <fmt/format.h>

namespace emo {

bool ParseZeusPowerLimitOptions(const MethodOptions& m, ZeusPowerLimitOptions* out, std::string* err) {
  using S = ZeusPowerLimitOptions::Selector;
  ZeusPowerLimitOptions o;
  for (const auto& item : m.items) {
    const std::string& key = item.first;
    double v = 0;
    if (key == "selector") {
      const std::string& s = item.second;
      if (s != "zeus-cost" && s != "energy" && s != "time" && s != "max-slowdown") {
        *err = m.name + ": selector=" + s + ": expected zeus-cost, energy, time or max-slowdown";
        return false;
      }
      o.selector = s == "zeus-cost" ? S::kZeusCost
                   : s == "energy"  ? S::kEnergy
                   : s == "time"    ? S::kTime
                                    : S::kMaxSlowdown;
    } else if (key == "eta") {
      if (!OptionNumber(m.name, item, 0, 1, false, &o.eta, err)) return false;
    } else if (key == "max-slowdown") {
      if (!OptionNumber(m.name, item, 1, 1e3, false, &o.max_slowdown, err)) return false;
      o.selector = S::kMaxSlowdown;
    } else if (key == "step-w") {
      if (!OptionNumber(m.name, item, 1, 1e4, false, &o.pl_step_w, err)) return false;
    } else if (key == "wait" || key == "warmup" || key == "profile") {
      if (!OptionNumber(m.name, item, key == "profile" ? 1 : 0, 1e6, true, &v, err)) return false;
      (key == "wait" ? o.wait_steps : key == "warmup" ? o.warmup_steps : o.profile_steps) = static_cast<int>(v);
    } else {
      *err = m.name + ": unknown option '" + key + "' (eta, max-slowdown, selector, wait, warmup, profile, step-w)";
      return false;
    }
  }
  *out = o;
  return true;
}

ZeusPowerLimitOptimizer::ZeusPowerLimitOptimizer(GpuControl* gpus, const ZeusPowerLimitOptions& options)
    : gpus_(gpus), o_(options) {
  double lo = 0, hi = 0;
  if (!gpus_->PowerLimitRange(0, &lo, &hi)) Fail("GPU 0: power-limit range unknown " + gpus_->error());
  for (int g = 1; g < gpus_->Count(); ++g) {
    double l = 0, h = 0;
    if (!gpus_->PowerLimitRange(g, &l, &h) || l != lo || h != hi)
      Fail("power-limit ranges differ across GPUs (GPU 0 and GPU " + std::to_string(g) + ")");
  }
  if (!error().empty()) return;
  // From the maximum down in steps while at least the minimum (with a little slack for rounding).
  for (double w = hi; w >= lo - 1e-9; w -= o_.pl_step_w) limits_.push_back(w);
  steps_ = o_.wait_steps + 1;
  SetLimit(hi);
}

double ZeusPowerLimitOptimizer::EnergyJ() {
  double e = 0;
  for (int g = 0; g < gpus_->Count(); ++g) {
    const std::optional<double> j = gpus_->EnergyJ(g);
    if (!j) Fail("GPU " + std::to_string(g) + ": no energy reading: " + gpus_->error());
    e += j.value_or(0);
  }
  return e;
}

void ZeusPowerLimitOptimizer::SetLimit(double watts) {
  if (watts == set_w_) return;
  for (int g = 0; g < gpus_->Count(); ++g) {
    std::string err;
    if (!gpus_->SetPowerLimit(g, watts, &err)) Fail(err);
  }
  set_w_ = watts;
}

void ZeusPowerLimitOptimizer::OnIterationStart(int /*iteration*/, double now_ns) {
  if (limits_.empty()) return;  // the back end could not tell the power-limit range
  auto start_profiling = [&] {
    state_ = State::kProfiling;
    steps_ = o_.profile_steps;
    window_e0_ = EnergyJ();
    window_t0_ = now_ns;
  };
  auto start_warmup = [&] {
    SetLimit(limits_[current_]);
    state_ = State::kWarmup;
    steps_ = o_.warmup_steps;
    if (steps_ == 0) start_profiling();  // no warm-up steps: this step is the window's first
  };
  switch (state_) {
    case State::kReady:
      if (--steps_ > 0) return;
      start_warmup();
      return;
    case State::kWarmup:
      if (--steps_ == 0) start_profiling();
      return;
    case State::kProfiling:
      if (--steps_ > 0) return;
      measurements_.push_back({limits_[current_], EnergyJ() - window_e0_, (now_ns - window_t0_) / 1e9});
      if (++current_ == limits_.size()) {
        state_ = State::kDone;
        optimum_w_ = Select();
        SetLimit(optimum_w_);
        return;
      }
      start_warmup();
      return;
    case State::kDone:
      return;
  }
}

// Over the measurements in descending-limit order, so ties go to the higher limit.
double ZeusPowerLimitOptimizer::Select() const {
  using S = ZeusPowerLimitOptions::Selector;
  const std::vector<Measurement>& m = measurements_;
  size_t best = 0;
  if (o_.selector == S::kMaxSlowdown) {
    for (size_t i = 0; i < m.size(); ++i)
      if (m[i].time_s <= o_.max_slowdown * m[0].time_s) best = i;  // the lowest limit that qualifies
    return m[best].limit_w;
  }
  const double p_max = m[0].limit_w * gpus_->Count();
  auto cost = [&](const Measurement& x) {
    switch (o_.selector) {
      case S::kEnergy:
        return x.energy_j;
      case S::kTime:
        return x.time_s;
      default:
        return o_.eta * x.energy_j + (1 - o_.eta) * p_max * x.time_s;
    }
  };
  for (size_t i = 1; i < m.size(); ++i)
    if (cost(m[i]) < cost(m[best])) best = i;
  return m[best].limit_w;
}

void ZeusPowerLimitOptimizer::Finish() {
  if (!limits_.empty()) SetLimit(limits_[0]);
}

void ZeusPowerLimitOptimizer::Report(std::vector<std::string>* lines, nlohmann::ordered_json* findings) const {
  nlohmann::ordered_json profiled = nlohmann::ordered_json::array();
  for (const Measurement& x : measurements_)
    profiled.push_back({{"limit_w", x.limit_w}, {"energy_j", x.energy_j}, {"time_s", x.time_s}});
  const bool done = state_ == State::kDone;
  *findings = {{"done", done},
               {"optimum_w", done ? nlohmann::ordered_json(optimum_w_) : nullptr},
               {"candidates", limits_.size()},
               {"profiled", profiled}};
  if (done)
    lines->push_back(fmt::format("zeus-power-limit: profiled {} limits, chose {:.0f} W", profiled.size(), optimum_w_));
  else
    lines->push_back(
        fmt::format("zeus-power-limit: profiled {} of {} limits before the run ended (each takes {} "
                    "iterations)",
                    profiled.size(), limits_.size(), o_.warmup_steps + o_.profile_steps));
}

}  // namespace emo

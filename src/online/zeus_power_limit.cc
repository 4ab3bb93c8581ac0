// zeus_power_limit.cc — the state machine and selectors of Zeus's GlobalPowerLimitOptimizer.
#include "online/zeus_power_limit.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace emo {

bool ParseZeusPowerLimitOptions(const std::string& spec, ZeusPowerLimitOptions* out, std::string* err) {
  const std::string name = "zeus-power-limit";
  if (spec.compare(0, name.size(), name) != 0 || (spec.size() > name.size() && spec[name.size()] != ':')) {
    *err = "'" + spec + "' is not " + name + "[:key=value,...]";
    return false;
  }
  ZeusPowerLimitOptions o;
  std::stringstream rest(spec.size() > name.size() ? spec.substr(name.size() + 1) : "");
  std::string item;
  while (std::getline(rest, item, ',')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    const bool number = !value.empty() && *end == '\0' && std::isfinite(v);
    auto bad = [&](const std::string& why) {
      *err = name + ": " + item + ": " + why;
      return false;
    };
    if (key == "selector") {
      if (value == "zeus-cost") o.selector = ZeusPowerLimitOptions::Selector::kZeusCost;
      else if (value == "energy") o.selector = ZeusPowerLimitOptions::Selector::kEnergy;
      else if (value == "time") o.selector = ZeusPowerLimitOptions::Selector::kTime;
      else if (value == "max-slowdown") o.selector = ZeusPowerLimitOptions::Selector::kMaxSlowdown;
      else return bad("expected zeus-cost, energy, time or max-slowdown");
      continue;
    }
    const bool count = key == "wait" || key == "warmup" || key == "profile";
    if (!count && key != "eta" && key != "max-slowdown" && key != "step-w")
      return bad("unknown key (eta, max-slowdown, selector, wait, warmup, profile, step-w)");
    if (!number) return bad("expected a number");
    if (key == "eta") {
      if (v < 0 || v > 1) return bad("eta must be in [0, 1]");
      o.eta = v;
    } else if (key == "max-slowdown") {
      if (v < 1) return bad("max-slowdown must be at least 1");
      o.max_slowdown = v;
      o.selector = ZeusPowerLimitOptions::Selector::kMaxSlowdown;
    } else if (key == "step-w") {
      if (v <= 0) return bad("step-w must be positive");
      o.pl_step_w = v;
    } else {
      const int least = key == "profile" ? 1 : 0;
      if (v != std::floor(v) || v < least || v > 1e6) return bad("expected an integer of at least " + std::to_string(least));
      (key == "wait" ? o.wait_steps : key == "warmup" ? o.warmup_steps : o.profile_steps) = static_cast<int>(v);
    }
  }
  *out = o;
  return true;
}

ZeusPowerLimitOptimizer::ZeusPowerLimitOptimizer(GpuControl* gpus, const ZeusPowerLimitOptions& options)
    : gpus_(gpus), o_(options) {
  double lo = 0, hi = 0;
  gpus_->PowerLimitRange(0, &lo, &hi);
  for (int g = 1; g < gpus_->Count(); ++g) {
    double l = 0, h = 0;
    gpus_->PowerLimitRange(g, &l, &h);
    if (l != lo || h != hi) Fail("power-limit ranges differ across GPUs (GPU 0 and GPU " + std::to_string(g) + ")");
  }
  // From the maximum down in steps while at least the minimum (with a little slack for rounding).
  for (double w = hi; w >= lo - 1e-9; w -= o_.pl_step_w) limits_.push_back(w);
  steps_ = o_.wait_steps + 1;
  SetLimit(hi);
}

double ZeusPowerLimitOptimizer::EnergyJ() const {
  double e = 0;
  for (int g = 0; g < gpus_->Count(); ++g) e += gpus_->EnergyJ(g);
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
  auto start_warmup = [&] {
    SetLimit(limits_[current_]);
    state_ = State::kWarmup;
    steps_ = o_.warmup_steps;
  };
  auto start_profiling = [&] {
    state_ = State::kProfiling;
    steps_ = o_.profile_steps;
    window_e0_ = EnergyJ();
    window_t0_ = now_ns;
  };
  switch (state_) {
    case State::kReady:
      if (--steps_ > 0) return;
      start_warmup();
      if (steps_ == 0) start_profiling();  // no warm-up steps: this step is the window's first
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
      if (steps_ == 0) start_profiling();
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
      case S::kEnergy: return x.energy_j;
      case S::kTime: return x.time_s;
      default: return o_.eta * x.energy_j + (1 - o_.eta) * p_max * x.time_s;
    }
  };
  for (size_t i = 1; i < m.size(); ++i)
    if (cost(m[i]) < cost(m[best])) best = i;
  return m[best].limit_w;
}

void ZeusPowerLimitOptimizer::Finish() {
  if (!limits_.empty()) SetLimit(limits_[0]);
}

}  // namespace emo

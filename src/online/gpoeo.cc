// gpoeo.cc — GPOEO's online loop: detect the period at the default clock, predict, search, hold
// and watch for phase changes (GPOEO.md §2-6).
#include "online/gpoeo.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#ifndef EMO_GPOEO_MODELS_DIR
#define EMO_GPOEO_MODELS_DIR "models"
#endif

namespace emo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kBroken = 1e9;        // the score of a clock over the slowdown cap, plus its time ratio
constexpr double kDetectEveryS = 1.0;  // how often detection looks at the growing trace
// The shortest trace it looks at: GPOEO's first wait (GPOEO.md §1: 25 s). A pipeline's iteration of
// a few seconds is made of micro-batches of a tenth of a second or so; a trace of a few seconds
// shows those repeating and barely one iteration, and the micro-batch was taken for the period.
constexpr double kMinDetectS = 25.0;
constexpr double kAperiodicRetryS = 60;
constexpr double kImplausiblySooner = 0.97;  // a probe's time ratio under this is a bad measurement
constexpr double kSkipS = 1.0;               // the start of a detection trace left out of the reference
constexpr double kMinReferenceS = 4.0;       // the shortest reference window at the default clock
constexpr double kMinProbeS = 4.0;           // the shortest probe window
constexpr double kIdleS = 2.0;               // the idle watchdog: this long without a kernel (GPOEO.md §6)
constexpr double kIdleUtil = 0.005;          // utilisation that NVML reports as 0 %
constexpr double kFoldRange = 0.05;          // the fold refines a spectral period within ±5 %
constexpr double kAliasTolerance = 1.02;     // a time ratio may exceed the clocks' ratio by this much
// A readings' period that shrank by more than this at a lower clock is an alias
// (GpoeoShrinkLooksAliased); one that then grew by more than this refutes it (GpoeoGrowthRefutesAlias).
// At the first probes, a few points slower, the alias of an iteration just under two readings
// shrinks by only 1-2 % (0.1865 s at +2.9 %: its 0.2128 s alias to 0.2088 s); at kImplausiblySooner,
// as until 2026-12-04, such jobs were read directly and held at the default clock.
constexpr double kAliasShrink = 0.99;
// A lower clock measured faster than a higher one by more than this contradicts it (the probes'
// time ratios are within about a point of the truth where the period is read right).
constexpr double kMonotoneSlack = 0.02;
// The guard (gpoeo.h): its window, at least kGuardS and kGuardPeriods periods of the held clock, and
// the share of time over the cap it lets pass, half of the point of tolerance (over its
// window the fold reads a period to about 0.1 % where a probe's 4 s read it to about 1 %).
constexpr double kGuardS = 20;
constexpr double kGuardPeriods = 6;
constexpr double kGuardMargin = 0.005;
// A held iteration the guard reads over this share away from its probe's is a phase change (a
// probe's time ratio is within about 2 points of the truth where the period is read right).
constexpr double kGuardRange = 0.03;

const char* ObjectiveName(GpoeoObjective o) {
  switch (o) {
    case GpoeoObjective::kEnergy:
      return "energy";
    case GpoeoObjective::kEdp:
      return "edp";
    case GpoeoObjective::kEd2p:
      return "ed2p";
  }
  return "?";
}

const char* StateName(Gpoeo::State s) {
  switch (s) {
    case Gpoeo::State::kDetect:
      return "detecting";
    case Gpoeo::State::kSearch:
      return "searching";
    case Gpoeo::State::kMemorySearch:
      return "searching the memory clock";
    case Gpoeo::State::kHold:
      return "holding";
    case Gpoeo::State::kAperiodic:
      return "aperiodic";
  }
  return "?";
}

// The number of samples in the last whole periods of `period_s` (all when under one period).
size_t WholePeriods(size_t n, double dt_s, double period_s) {
  if (period_s <= 0) return n;
  const double periods = std::floor(static_cast<double>(n) * dt_s / period_s);
  if (periods < 1) return n;
  return std::min(n, static_cast<size_t>(std::lround(periods * period_s / dt_s)));
}

double MeanTail(const std::vector<double>& v, size_t n) {
  double s = 0;
  for (size_t i = v.size() - n; i < v.size(); ++i) s += v[i];
  return n ? s / static_cast<double>(n) : 0;
}

// The shipped models' folder for a device name: "A100-SXM4-80GB" → gpoeo-sim-a100.
std::string DefaultModelsDir(const std::string& device) {
  std::string key;
  for (char c : device)
    if (std::isalnum(static_cast<unsigned char>(c)))
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* known : {"a100", "h100", "a40", "3080ti"})
    if (key.find(known) != std::string::npos) return std::string(EMO_GPOEO_MODELS_DIR) + "/gpoeo-sim-" + known;
  return std::string(EMO_GPOEO_MODELS_DIR) + "/gpoeo-sim-" + key;
}

}  // namespace

bool ParseGpoeoOptions(const MethodOptions& m, GpoeoOptions* out, std::string* err) {
  GpoeoOptions o;
  for (const auto& item : m.items) {
    const std::string& key = item.first;
    double v = 0;
    if (key == "objective") {
      if (item.second == "energy")
        o.objective = GpoeoObjective::kEnergy;
      else if (item.second == "edp")
        o.objective = GpoeoObjective::kEdp;
      else if (item.second == "ed2p")
        o.objective = GpoeoObjective::kEd2p;
      else {
        *err = m.name + ": objective=" + item.second + ": expected energy, edp or ed2p";
        return false;
      }
    } else if (key == "slowdown") {
      if (!OptionNumber(m.name, item, 0, 1, false, &o.max_slowdown, err)) return false;
    } else if (key == "models") {
      if (item.second.empty()) {
        *err = m.name + ": models= needs a directory";
        return false;
      }
      o.models_dir = item.second;
    } else if (key == "sample-ms") {
      if (!OptionNumber(m.name, item, 1, 1000, false, &o.sample_ms, err)) return false;
    } else if (key == "probes") {
      if (!OptionNumber(m.name, item, 1, 100, true, &v, err)) return false;
      o.max_probes = static_cast<int>(v);
    } else if (key == "step") {
      if (!OptionNumber(m.name, item, 1, 100, true, &v, err)) return false;
      o.step = static_cast<int>(v);
    } else if (key == "probe-periods") {
      if (!OptionNumber(m.name, item, 3, 100, false, &o.probe_periods, err)) return false;
    } else if (key == "drift") {
      if (!OptionNumber(m.name, item, 0.01, 10, false, &o.drift, err)) return false;
    } else if (key == "memory") {
      if (!OptionNumber(m.name, item, 0, 1, true, &v, err)) return false;
      o.memory = v > 0;
    } else if (key == "memory-probes") {
      if (!OptionNumber(m.name, item, 1, 100, true, &v, err)) return false;
      o.memory_probes = static_cast<int>(v);
    } else if (key == "guard") {
      if (!OptionNumber(m.name, item, 0, 1, true, &v, err)) return false;
      o.guard = v > 0;
    } else {
      *err = m.name + ": unknown option '" + key + "' (objective, slowdown, models, sample-ms, probes, step, " +
             "probe-periods, drift, memory, memory-probes, guard)";
      return false;
    }
  }
  *out = o;
  return true;
}

// ---- the local search ---------------------------------------------------------------------------

GpoeoSearch::GpoeoSearch(int clocks, int start, int step, int max_probes, GpoeoObjective objective, double max_slowdown,
                         bool reference_last)
    : n_(clocks),
      cur_(std::clamp(start, 0, clocks - 1)),
      step_(step),
      max_probes_(max_probes),
      objective_(objective),
      max_slowdown_(max_slowdown),
      reference_last_(reference_last) {}

double GpoeoSearch::Score(double e, double t) const {
  if (!std::isfinite(e) || !std::isfinite(t)) return kInf;
  switch (objective_) {
    case GpoeoObjective::kEnergy:
      // Over the cap: worse than any clock within it, and the less slowdown the better.
      return t > 1 + max_slowdown_ ? kBroken + t : e;
    case GpoeoObjective::kEdp:
      return e * t;
    case GpoeoObjective::kEd2p:
      return e * t * t;
  }
  return kInf;
}

double GpoeoSearch::ScoreOf(int clock) const {
  const auto it = measured_.find(clock);
  if (it != measured_.end()) return Score(probes_[it->second].energy_ratio, probes_[it->second].time_ratio);
  if (clock == n_ - 1 && reference_last_) return Score(1, 1);  // the default clock: the reference itself
  return kInf;
}

int GpoeoSearch::Next() {
  if (contradiction_.first >= 0) return -1;
  if (pending_ >= 0) return pending_;
  if (!recheck_.empty()) return pending_ = recheck_.front();
  if (static_cast<int>(probes_.size()) >= max_probes_) return -1;
  auto known = [this](int c) { return measured_.count(c) > 0 || (c == n_ - 1 && reference_last_); };
  if (!known(cur_)) return pending_ = cur_;
  for (;;) {
    if (queue_.empty()) {
      if (built_) {  // neither neighbour improved: a finer step
        step_ /= 2;
        built_ = false;
      }
      if (step_ < 1) return -1;
      // In the energy mode, a clock within the cap looks downward first (less energy), one over it
      // upward (less time).
      const bool down_first = objective_ != GpoeoObjective::kEnergy || ScoreOf(cur_) < kBroken;
      const int lo = cur_ - step_, hi = cur_ + step_;
      for (int c : down_first ? std::vector<int>{lo, hi} : std::vector<int>{hi, lo})
        if (c >= 0 && c < n_) queue_.push_back(c);
      built_ = true;
      if (queue_.empty()) continue;
    }
    const int c = queue_.front();
    queue_.erase(queue_.begin());
    if (!known(c)) return pending_ = c;
    if (ScoreOf(c) < ScoreOf(cur_)) {
      cur_ = c;
      queue_.clear();
      built_ = false;
    }
  }
}

void GpoeoSearch::Record(int clock, double energy_ratio, double time_ratio) {
  measured_[clock] = probes_.size();
  probes_.push_back({clock, energy_ratio, time_ratio});
  if (clock == pending_) pending_ = -1;
  if (!recheck_.empty() && recheck_.front() == clock) recheck_.erase(recheck_.begin());
  // The latest measurements of every two clocks (once a recheck has measured both again).
  for (auto lo = measured_.begin(); recheck_.empty() && contradiction_.first < 0 && lo != measured_.end(); ++lo)
    for (auto hi = std::next(lo); hi != measured_.end(); ++hi) {
      const double t_lo = probes_[lo->second].time_ratio, t_hi = probes_[hi->second].time_ratio;
      if (!std::isfinite(t_lo) || !std::isfinite(t_hi) || t_lo >= t_hi - kMonotoneSlack) continue;
      if (rechecked_) {
        contradiction_ = {lo->first, hi->first};
      } else {  // a transient (an evaluation step, a checkpoint) may have upset one: measure both again
        rechecked_ = true;
        recheck_ = {lo->first, hi->first};
      }
      break;
    }
  if (clock != cur_ && ScoreOf(clock) < ScoreOf(cur_)) {
    cur_ = clock;
    queue_.clear();
    built_ = false;
  }
}

int GpoeoSearch::Best() const {
  int best = n_ - 1;
  if (contradiction_.first >= 0) return best;
  for (const auto& [clock, i] : measured_)
    if (ScoreOf(clock) < kBroken && ScoreOf(clock) < ScoreOf(best)) best = clock;
  return best;
}

// ---- the controller -----------------------------------------------------------------------------

Gpoeo::Gpoeo(GpuControl* gpus, const GpoeoOptions& options) : gpus_(gpus), o_(options) {
  if (gpus_->Count() < 1) {
    Fail("no GPUs");
    return;
  }
  clocks_ = gpus_->SupportedClocks(0);
  std::sort(clocks_.begin(), clocks_.end());
  if (clocks_.empty()) {
    Fail("GPU 0 reports no supported clocks");
    return;
  }
  if (o_.memory) {  // where there is a choice (GDDR); HBM parts list one memory clock
    mem_clocks_ = gpus_->SupportedMemoryClocks(0);
    std::sort(mem_clocks_.begin(), mem_clocks_.end());
    if (mem_clocks_.size() < 2) mem_clocks_.clear();
  }
  for (int g = 0; g < gpus_->Count(); ++g) {
    const std::optional<double> limit = gpus_->PowerLimitW(g);
    if (!limit) {
      Fail("GPU " + std::to_string(g) + ": power limit read failed: " + gpus_->error());
      return;
    }
    limit_w_ += *limit;
  }
  const std::string dir = o_.models_dir.empty() ? DefaultModelsDir(gpus_->Name(0)) : o_.models_dir;
  std::string err;
  if (!models_.Load(dir, &err)) {
    Fail(err);
    return;
  }
  if (models_.device() != gpus_->Name(0)) {
    Fail(dir + ": models trained on " + models_.device() + ", GPU 0 is " + gpus_->Name(0) +
         " (train with `emo gpoeo train` and pass models=DIR)");
    return;
  }
  if (models_.feature_set != GpoeoFeatureSet::kTelemetry) {  // windows from now on, read as GpoeoWindows says
    const Reading needed = GpoeoFeatureReading(models_.feature_set);
    if (!gpus_->Offers(needed)) {
      Fail(dir + ": the models take " + GpoeoFeatureSetName(models_.feature_set) +
           " features, and this GPU back end offers no " + ReadingName(needed) +
           " reading (train models without: `emo gpoeo train --features telemetry`)");
      return;
    }
    windows_ = std::make_unique<GpoeoWindows>(gpus_, models_.feature_set, Dt());
    if (!windows_->Start(&err)) {
      Fail(err);
      return;
    }
  }
  Restart(0);
}

void Gpoeo::Lock(int mhz) {
  for (int g = 0; g < gpus_->Count(); ++g) LockGpu(g, mhz);
}

void Gpoeo::LockGpu(int gpu, int mhz) {
  std::string err;
  const bool ok = mhz == clocks_.back() ? gpus_->ResetClock(gpu, &err) : gpus_->SetLockedClock(gpu, mhz, &err);
  if (!ok) Fail(err);
}

void Gpoeo::LockMemory(int mhz) {
  for (int g = 0; g < gpus_->Count(); ++g) {
    std::string err;
    const bool ok =
        mhz == mem_clocks_.back() ? gpus_->ResetMemoryClock(g, &err) : gpus_->SetMemoryLockedClock(g, mhz, &err);
    if (!ok) Fail(err);
  }
}

void Gpoeo::Restart(double now_s) {
  Lock(clocks_.back());  // the default governor
  if (!mem_clocks_.empty()) LockMemory(mem_clocks_.back());
  state_ = State::kDetect;
  idle_since_s_.assign(static_cast<size_t>(gpus_->Count()), -1);
  idle_locked_.assign(static_cast<size_t>(gpus_->Count()), false);
  worked_.assign(static_cast<size_t>(gpus_->Count()), false);
  alias_ = false;
  alias_refuted_ = false;
  multiple_taken_ = false;
  vote_ = GpoeoVote();
  search_mem_ = -1;
  probed_.clear();
  guard_steps_.clear();
  guard_time_ = guard_energy_ = 0;
  ClearTrace();
  start_s_ = now_s;
}

void Gpoeo::Updates::Clear() {
  s.t_s.clear();
  s.v.clear();
  any = false;
}

void Gpoeo::Updates::DropBefore(double t_s) {
  const auto n = std::lower_bound(s.t_s.begin(), s.t_s.end(), t_s) - s.t_s.begin();
  s.t_s.erase(s.t_s.begin(), s.t_s.begin() + n);
  s.v.erase(s.v.begin(), s.v.begin() + n);
}

GpoeoSeries Gpoeo::Updates::Since(double from_s) const {
  GpoeoSeries out;
  for (size_t i = 0; i < s.t_s.size(); ++i)
    if (s.t_s[i] >= from_s) out.t_s.push_back(s.t_s[i]), out.v.push_back(s.v[i]);
  return out;
}

void Gpoeo::Updates::Add(double t_s, double x) {
  // The first poll shows a value from before the measurement, updated at an unknown time.
  if (any && x != last) {
    s.t_s.push_back(t_s);
    s.v.push_back(x);
  }
  last = x;
  any = true;
}

void Gpoeo::ClearTrace() {
  trace_.clear();
  ticks_ = 0;
  series_.resize(3 * static_cast<size_t>(gpus_->Count()));
  energy_.resize(static_cast<size_t>(gpus_->Count()));
  for (Updates& u : series_) u.Clear();
  for (Updates& u : energy_) u.Clear();
  held_from_s_ = -1;
}

double Gpoeo::FoldPeriod(double from_s, double period_s, double rel) const {
  std::vector<GpoeoSeries> series;
  for (const Updates& u : series_) series.push_back(u.Since(from_s));
  // The energy counters' mean power between consecutive updates, at the interval's middle.
  for (const Updates& u : energy_) {
    GpoeoSeries s;
    for (size_t i = 0; i + 1 < u.s.t_s.size(); ++i)
      if (u.s.t_s[i] >= from_s) {
        s.t_s.push_back(0.5 * (u.s.t_s[i] + u.s.t_s[i + 1]));
        s.v.push_back((u.s.v[i + 1] - u.s.v[i]) / (u.s.t_s[i + 1] - u.s.t_s[i]));
      }
    series.push_back(std::move(s));
  }
  return GpoeoFoldPeriod(series, period_s, rel);
}

double Gpoeo::MeanPower(double from_s, double period_s) const {
  double sum = 0;
  bool counters = gpus_->Offers(Reading::kEnergy);
  for (const Updates& u : energy_) {
    // From the first update since from_s to the later update whose span is nearest a whole number
    // of periods, among those spanning at least 3/4 of the longest: both ends are update instants,
    // so the counter's steps do not blur the window (its polls lag the updates by the same amount).
    const std::vector<double>& t = u.s.t_s;
    const size_t a = static_cast<size_t>(std::lower_bound(t.begin(), t.end(), from_s) - t.begin());
    if (t.size() < a + 2) {
      counters = false;
      break;
    }
    const double longest = t.back() - t[a];
    size_t b = t.size() - 1;
    double off_best = kInf;
    for (size_t j = a + 1; j < t.size(); ++j) {
      const double span = t[j] - t[a];
      if (span < 0.75 * longest) continue;
      const double off = period_s > 0 ? std::abs(span / period_s - std::round(span / period_s)) : 0;
      if (off < off_best - 1e-9) off_best = off, b = j;
    }
    sum += (u.s.v[b] - u.s.v[a]) / (t[b] - t[a]);
  }
  if (counters) return sum;
  const size_t skip = static_cast<size_t>(std::clamp((from_s - trace_start_s_) / Dt(), 0.0, 1.0 * trace_.size()));
  const GpoeoSamples tail = trace_.Slice(skip, trace_.size());
  return MeanTail(tail.power_w, WholePeriods(tail.size(), Dt(), period_s));
}

void Gpoeo::Tick(double now_ns) {
  if (!error().empty()) return;  // the back end failed: the method stops acting
  now_s_ = now_ns * 1e-9;
  double p = 0, u = 0, m = 0, c = 0;
  std::vector<double> gpu_p, gpu_u, gpu_m;
  for (int g = 0; g < gpus_->Count(); ++g) {
    const std::optional<double> power = gpus_->PowerW(g), util = gpus_->Utilization(g),
                                mem = gpus_->MemoryUtilization(g), clock = gpus_->ClockMhz(g);
    if (!power || !util || !mem || !clock) {
      Fail("GPU " + std::to_string(g) + ": telemetry read failed: " + gpus_->error());
      return;
    }
    p += *power;
    u += *util;
    m += *mem;
    c += *clock;
    gpu_p.push_back(*power);
    gpu_u.push_back(*util);
    gpu_m.push_back(*mem);
  }
  const double n = gpus_->Count();
  if (std::string err; windows_ && !windows_->Tick(&err)) {
    Fail(err);
    return;
  }
  gpu_util_ = gpu_u;
  for (size_t g = 0; g < gpu_u.size(); ++g)
    if (gpu_u[g] >= kIdleUtil) worked_[g] = true;
  if (state_ == State::kHold && IdleWatch()) return;
  ++ticks_;
  // The sample joins the measurement: the trace, and each reading's updates.
  auto record = [&] {
    if (trace_.size() == 0) trace_start_s_ = now_s_;
    if (held_from_s_ < 0) held_from_s_ = now_s_;
    trace_.push(p, u / n, m / n, c / n, windows_ ? windows_->activity() : nullptr,
                windows_ ? windows_->counters() : nullptr);
    for (int g = 0; g < gpus_->Count(); ++g) {
      const size_t i = static_cast<size_t>(g);
      series_[3 * i].Add(now_s_, gpu_p[i]);
      series_[3 * i + 1].Add(now_s_, gpu_u[i]);
      series_[3 * i + 2].Add(now_s_, gpu_m[i]);
      if (gpus_->Offers(Reading::kEnergy)) {
        const std::optional<double> j = gpus_->EnergyJ(g);
        if (!j) {
          Fail("GPU " + std::to_string(g) + ": energy counter read failed: " + gpus_->error());
          return;
        }
        energy_[i].Add(now_s_, *j);
      }
    }
  };
  switch (state_) {
    case State::kDetect: {
      record();
      // One growing trace, capped at 5.5 × TUpBound (GPOEO.md §1).
      const size_t cap = static_cast<size_t>(5.5 * GpoeoPeriodOptions{}.t_up_bound_s / Dt());
      if (trace_.size() > cap) {
        trace_ = trace_.Slice(trace_.size() - cap, trace_.size());
        trace_start_s_ = now_s_ - static_cast<double>(cap) * Dt();
      }
      const int every = std::max(1, static_cast<int>(std::lround(kDetectEveryS / Dt())));
      if (static_cast<double>(trace_.size()) * Dt() >= kMinDetectS && ticks_ % every == 0) Detect(now_s_);
      break;
    }
    case State::kAperiodic:
      if (static_cast<double>(ticks_) * Dt() >= kAperiodicRetryS) Restart(now_s_);
      break;
    case State::kSearch:
      if (ticks_ > settle_ticks_) record();
      if (ticks_ >= settle_ticks_ + measure_ticks_) EndProbe(now_s_);
      break;
    case State::kMemorySearch:
      if (ticks_ > settle_ticks_) record();
      if (ticks_ >= settle_ticks_ + measure_ticks_) EndMemoryProbe(now_s_);
      break;
    case State::kHold:
      if (ticks_ > settle_ticks_) record();
      if (ticks_ >= settle_ticks_ + measure_ticks_) Check(now_s_);
      break;
  }
}

bool Gpoeo::IdleWatch() {
  bool any = false;
  for (size_t g = 0; g < gpu_util_.size(); ++g) {
    double& since = idle_since_s_[g];
    if (gpu_util_[g] >= kIdleUtil)
      since = -1;
    else if (since < 0)
      since = now_s_;
    const bool idle = since >= 0 && now_s_ - since >= kIdleS;
    if (idle && !idle_locked_[g]) {
      LockGpu(static_cast<int>(g), clocks_.front());
      idle_locked_[g] = true;
      ++idle_drops_;
    } else if (!idle && idle_locked_[g]) {
      LockGpu(static_cast<int>(g), chosen_mhz_);
      idle_locked_[g] = false;
      ClearTrace();  // the phase-change check measures afresh, past the clock's return
    }
    any = any || (idle_locked_[g] && worked_[g]);
  }
  return any;
}

bool Gpoeo::WorkerIdle() const {
  for (size_t g = 0; g < gpu_util_.size() && g < worked_.size(); ++g)
    if (worked_[g] && gpu_util_[g] < kIdleUtil) return true;
  return false;
}

GpoeoUniform Gpoeo::Signal(double from_s) const {
  const bool counters = gpus_->Offers(Reading::kEnergy);
  std::vector<GpoeoSeries> series;
  for (size_t g = 0; g < energy_.size(); ++g)  // the energy counter, else power
    series.push_back((counters ? energy_[g] : series_[3 * g]).Since(from_s));
  return GpoeoUniformSignal(series, counters);
}

GpoeoPeriod Gpoeo::DetectPeriod(double from_s, const GpoeoPeriodOptions& po, double* update_s) const {
  const GpoeoUniform u = Signal(from_s);
  if (u.x.empty()) {
    GpoeoPeriod p;
    p.reason = "fewer than 3 updates of the readings";
    return p;
  }
  if (update_s) *update_s = u.dt_s;
  return GpoeoDetectPeriod(u.x, u.dt_s, po);
}

void Gpoeo::VoteOnUtilisation(double from_s) {
  vote_ = GpoeoVote();
  if (alias_) return;
  std::vector<GpoeoSeries> util;  // each GPU's utilisation updates since from_s
  for (size_t g = 0; g < energy_.size(); ++g) util.push_back(series_[3 * g + 1].Since(from_s));
  vote_ = GpoeoUtilisationVote(util, period_s_, update_s_);
  alias_ = vote_.voted;
}

void Gpoeo::Detect(double now_s) {
  detected_ = DetectPeriod(trace_start_s_, GpoeoPeriodOptions{}, &update_s_);
  if (detected_.verdict == GpoeoVerdict::kAperiodic || detected_.verdict == GpoeoVerdict::kFlat) {
    state_ = State::kAperiodic;  // the default clock stays; look again later
    ticks_ = 0;
    return;
  }
  if (!detected_.periodic()) return;  // measure on
  // The reference: the default clock's period and power, measured past the trace's first second
  // (a start-up or a clock change) over at least kMinReferenceS, as long as a probe's window.
  const double from = trace_start_s_ + kSkipS;
  if (now_s - from < std::max(kMinReferenceS, 3 * detected_.period_s)) return;  // measure on
  period_s_ = FoldPeriod(from, detected_.period_s, kFoldRange);
  VoteOnUtilisation(from);
  ref_power_w_ = MeanPower(from, period_s_);
  const size_t skip = static_cast<size_t>(std::lround(kSkipS / Dt()));
  features_ = GpoeoFeatures(trace_.Slice(std::min(skip, trace_.size()), trace_.size()), Dt(), period_s_, limit_w_,
                            clocks_.back());
  GpoeoPrediction pred;
  std::string err;
  if (!models_.Predict(features_, clocks_, clocks_.back(), &pred, &err)) {
    Fail(err);
    return;
  }
  const int n_clocks = static_cast<int>(clocks_.size());
  const GpoeoSearch scorer(n_clocks, n_clocks - 1, o_.step, o_.max_probes, o_.objective, o_.max_slowdown);
  auto score = [&](const GpoeoPrediction& p, size_t i) { return scorer.Score(p.energy_ratio[i], p.time_ratio[i]); };
  int best = n_clocks - 1;
  for (int i = 0; i < n_clocks; ++i)
    if (score(pred, static_cast<size_t>(i)) < score(pred, static_cast<size_t>(best))) best = i;
  predicted_mhz_ = clocks_[static_cast<size_t>(best)];
  predicted_energy_ = pred.energy_ratio[static_cast<size_t>(best)];
  predicted_time_ = pred.time_ratio[static_cast<size_t>(best)];
  // With memory models, every pair of clocks: where one at a lower memory clock scores best, the
  // SM clock's search runs at that memory clock.
  search_mem_ = -1;
  predicted_mem_mhz_ = 0;
  if (!mem_clocks_.empty() && models_.has_memory()) {
    std::vector<int> sm, mem;
    for (int m : mem_clocks_)
      for (int c : clocks_) sm.push_back(c), mem.push_back(m);
    GpoeoPrediction joint;
    if (!models_.PredictMemory(features_, sm, mem, clocks_.back(), mem_clocks_.back(), &joint, &err)) {
      Fail(err);
      return;
    }
    size_t top = sm.size() - 1;  // the default pair
    for (size_t i = 0; i < sm.size(); ++i)
      if (score(joint, i) < score(joint, top)) top = i;
    if (mem[top] != mem_clocks_.back()) {
      search_mem_ = static_cast<int>(top / clocks_.size());
      best = static_cast<int>(top % clocks_.size());
      predicted_mhz_ = sm[top];
      predicted_mem_mhz_ = mem[top];
      predicted_energy_ = joint.energy_ratio[top];
      predicted_time_ = joint.time_ratio[top];
      LockMemory(predicted_mem_mhz_);
    }
  }
  search_ = NewSearch(best);
  ++searches_;
  state_ = State::kSearch;
  const int next = search_->Next();
  if (next < 0)
    EndSearch(now_s);
  else
    StartProbe(next);
}

double GpoeoSearchBoundS(const GpoeoOptions& o, double period_s, double update_s) {
  // The period the readings show: the iteration's, or under two updates its alias, at the distance
  // of its frequency from the nearest multiple of the update rate (at most TUpBound).
  const double f = 1 / period_s, fs = 1 / update_s;
  const double alias = std::abs(f - fs * std::round(f / fs));
  const double signal_s = std::min(alias > 0 ? 1 / alias : kInf, GpoeoPeriodOptions{}.t_up_bound_s);
  // Detection first looks at kMinDetectS, settles within about 5 s more on a steady sub-second
  // period, and needs 5.3 periods.
  const double detect_s = std::max(kMinDetectS + 5, 6 * signal_s);
  const double probe_s =
      std::max(signal_s, 0.2) + std::max(o.probe_periods * 1.15 * signal_s, std::max(kMinProbeS, kMinReferenceS));
  return detect_s + (o.max_probes + 1 + (o.memory ? o.memory_probes : 0)) * probe_s;
}

int GpoeoSearchBoundIterations(const GpoeoOptions& o, double period_s) {
  return static_cast<int>(std::ceil(1.1 * GpoeoSearchBoundS(o, period_s) / period_s));
}

bool GpoeoShrinkLooksAliased(double update_s, double period_s, double probe_s, double slowest) {
  if (update_s <= 0 || probe_s <= 0 || probe_s / period_s >= kAliasShrink) return false;
  const double fs = 1 / update_s;
  if (1 / probe_s >= fs / 2) return false;  // not an alias on this grid either
  return (fs - 1 / period_s) / (fs - 1 / probe_s) <= kAliasTolerance * slowest;
}

bool GpoeoGrowthRefutesAlias(double update_s, double period_s, double probe_s, double slowest) {
  if (update_s <= 0 || probe_s * kAliasShrink <= period_s) return false;
  return probe_s > kAliasTolerance * slowest / (1 / update_s - 1 / period_s);
}

void Gpoeo::StartProbe(int clock_index) {
  probe_ = clock_index;
  Lock(clocks_[static_cast<size_t>(clock_index)]);
  OpenProbe();
}

void Gpoeo::OpenProbe() {
  ClearTrace();
  // One period to settle (the clock lands after the DVFS latency), then probe_periods of the
  // period expected at the lowest clock the search is likely to try, and at least kMinProbeS: the
  // readings update every 100-167 ms, and the period and energy are measured on those updates.
  settle_ticks_ = static_cast<int>(std::ceil(std::max(period_s_, 0.2) / Dt()));
  measure_ticks_ = static_cast<int>(std::ceil(std::max(o_.probe_periods * 1.15 * period_s_, kMinProbeS) / Dt()));
}

double Gpoeo::ShortestAbove(int clock) const {
  double shortest = period_s_;
  for (const Probed& q : probed_)
    if (q.clock > clock && q.mem == search_mem_ && q.period_s > 0) shortest = std::min(shortest, q.period_s);
  return shortest;
}

double Gpoeo::AliasPartner(double period_s) const { return 1 / (1 / update_s_ - 1 / period_s); }

double Gpoeo::TruePeriod(double signal_period_s) const {
  return alias_ ? AliasPartner(signal_period_s) : signal_period_s;
}

void Gpoeo::Ratios(const Probed& p, double* e, double* t) const {
  *e = *t = kInf;
  if (p.period_s <= 0) return;
  *t = TruePeriod(p.period_s) / TruePeriod(period_s_);
  *e = p.power_w / ref_power_w_ * *t;
  // A lower clock cannot run faster, nor slower than in proportion to the clock: such a
  // measurement saw something other than the period (a sub-multiple, a phase change).
  const double slowest = Slowest(p.clock, p.mem);
  auto plausible = [&](double r) { return r >= kImplausiblySooner && r <= kAliasTolerance * slowest; };
  // The readings show an iteration R and its alias partner A = 1/(1/update − 1/R) alike. Where the
  // reference's iteration may be one just under two updates (A0 ≥ 2 updates / (1 + cap + 1 point)),
  // a slowdown within the cap carries it across two updates, where the readings show it directly,
  // and the probe's readings R1 then say nothing about which side it is on. There the probe's time
  // ratio is the largest its readings allow, directly, through the alias, or across: max(R1/R0,
  // A1/A0, R1/A0) of those the clock can produce (the safe side; such jobs mostly keep the default
  // clock). Without it, one held-out A40 job of 0.193 s (models/README.md), seen as its 0.207 s
  // alias, read a clock that slowed it to 0.207 s as costing nothing and settled 7 % slower.
  if (update_s_ > 0 && period_s_ > 2 * update_s_ && p.period_s > 2 * update_s_) {
    const double a0 = AliasPartner(period_s_), a1 = AliasPartner(p.period_s);
    if (a0 * (1 + o_.max_slowdown + 0.01) > 2 * update_s_) {
      double worst = 0;
      for (double r : {p.period_s / period_s_, a1 / a0, p.period_s / a0})
        if (plausible(r)) worst = std::max(worst, r);
      if (worst > 0) *e *= worst / *t, *t = worst;
    }
  }
  // Through the alias, a reading past the alias branch's reach (the iteration sooner than it can
  // be) is the iteration slowed past two updates and seen directly (Measure keeps such readings).
  if (const double direct = p.period_s / TruePeriod(period_s_);
      alias_ && !plausible(*t) && *t < 1 && plausible(direct)) {
    *e *= direct / *t;
    *t = direct;
  }
  if (!plausible(*t)) *e = *t = kInf;
}

double Gpoeo::Slowest(int clock, int mem) const {
  const double sm = static_cast<double>(clocks_.back()) / clocks_[static_cast<size_t>(clock)];
  return mem < 0 ? sm : sm * mem_clocks_.back() / mem_clocks_[static_cast<size_t>(mem)];
}

int Gpoeo::MemorySearchStart() const {
  return search_mem_ >= 0 ? search_mem_ : static_cast<int>(mem_clocks_.size()) - 1;
}

std::unique_ptr<GpoeoSearch> Gpoeo::NewSearch(int start) const {
  return std::make_unique<GpoeoSearch>(static_cast<int>(clocks_.size()), start, o_.step, o_.max_probes, o_.objective,
                                       o_.max_slowdown, search_mem_ < 0);
}

void Gpoeo::RecordAgain() {
  search_ = NewSearch(probed_.front().clock);
  for (const Probed& q : probed_) {
    double e = kInf, t = kInf;
    Ratios(q, &e, &t);
    search_->Record(q.clock, e, t);
  }
}

Gpoeo::Probed Gpoeo::Measure(int clock, int mem, double ref_s) const {
  const double period_s = ref_s > 0 ? ref_s : period_s_;
  // The periods the readings can show at these clocks: the iteration at most kAliasTolerance × the
  // clocks' ratio longer and at most 3 % shorter, seen directly or (on the same alias branch as the
  // reference's) through its alias; both until a probe has shown which (GPOEO.md §2 Candidates 3
  // keeps [0.8, 1.5]·Tp, which can hold neither).
  GpoeoPeriodOptions po;
  const double r_max = kAliasTolerance * Slowest(clock, mem);
  const double r_min = kImplausiblySooner;
  po.keep_min_s = alias_ ? kInf : r_min * period_s;
  po.keep_max_s = alias_ ? 0 : r_max * period_s;
  if (update_s_ > 0 && period_s > 2 * update_s_) {
    const double fs = 1 / update_s_, f = fs - 1 / period_s;  // the iteration's, if the reference is an alias
    const double hi = fs - f / r_min > 0 ? 1 / (fs - f / r_min) : po.t_up_bound_s;
    po.keep_min_s = std::min(po.keep_min_s, 1 / (fs - f / r_max));
    po.keep_max_s = std::max(po.keep_max_s, std::min(hi, po.t_up_bound_s));
    // An iteration slowed past two updates leaves the alias branch (its alias would be under two
    // updates, which detection cannot show) and is seen directly: up to r_max times its length.
    if (r_max / f > 2 * update_s_) po.keep_max_s = std::max(po.keep_max_s, std::min(r_max / f, po.t_up_bound_s));
  }
  const GpoeoPeriod p = DetectPeriod(trace_start_s_, po);
  Probed probed{clock, 0, 0, mem};
  if (p.period_s > 0) {
    probed.period_s = FoldPeriod(trace_start_s_, p.period_s, kFoldRange);
    probed.power_w = MeanPower(trace_start_s_, probed.period_s);
  }
  return probed;
}

// On the readings' lattice at the default clock (a period of L/k updates folds the same L phases
// as its multiples) detection cannot tell a period from a multiple of it, and it reports the
// fraction (GpoeoDetectPeriod): a 0.475 s A100 pipeline read at 0.95 s and 0.475 s is 0.475 s, but
// a 0.90 s one whose last suffix read a quarter of it (one of four micro-batches) is 0.90 s. A
// probe's clock moves the iteration off the lattice, where a fraction that is not the period
// folds the readings clearly worse than the multiple, and a multiple of the period folds them as
// well as the period itself.
Gpoeo::Probed Gpoeo::MeasureFirstProbe() {
  const Probed fraction = Measure(probe_, search_mem_);
  if (detected_.multiple_s <= 0 || alias_ || detected_.period_s <= 0) return fraction;
  const double k = std::round(detected_.multiple_s / detected_.period_s);
  const Probed multiple = Measure(probe_, search_mem_, k * period_s_);
  if (multiple.period_s <= 0) return fraction;
  const GpoeoUniform u = Signal(trace_start_s_);
  if (u.x.empty()) return fraction;
  const GpoeoPeriodOptions po;
  const double at_multiple = GpoeoMismatch(u.x, u.dt_s, multiple.period_s);
  if (fraction.period_s > 0 &&
      GpoeoMismatch(u.x, u.dt_s, fraction.period_s) <= at_multiple * (1 + po.match_rel) + po.match_abs)
    return fraction;
  period_s_ *= k;
  multiple_taken_ = true;
  return multiple;
}

void Gpoeo::EndProbe(double now_s) {
  const Probed probed = probed_.empty() ? MeasureFirstProbe() : Measure(probe_, search_mem_);
  const double slowest = Slowest(probe_, search_mem_);
  probed_.push_back(probed);
  if (!alias_ && !alias_refuted_ && GpoeoShrinkLooksAliased(update_s_, period_s_, probed.period_s, slowest)) {
    // The readings' period shrank at a lower clock: an iteration shorter than two updates, seen
    // through its alias. The search starts over on the iteration's periods behind the aliases.
    alias_ = true;
    RecordAgain();
  } else if (alias_ && GpoeoGrowthRefutesAlias(update_s_, ShortestAbove(probe_), probed.period_s, slowest)) {
    // And grew at another (from the reference's, or from a probe's at a higher clock, each lower
    // clock shrinking an alias further): the shrink was noise, or a clock above the one the default
    // ran at (a GeForce under its power limit), and the readings show the iteration itself.
    // Through the alias, a long period (1.55 s, the alias of 0.107 s) hides the slowdown: a 3080 Ti
    // pipeline job whose first probe read 1 % shorter settled 14.8 % slower, every lower probe
    // measured as no slower, until this check.
    alias_ = false;
    alias_refuted_ = true;
    RecordAgain();
  } else {
    double e = kInf, t = kInf;
    Ratios(probed, &e, &t);
    search_->Record(probe_, e, t);
  }
  const int next = search_->Next();
  if (next < 0)
    EndSearch(now_s);
  else
    StartProbe(next);
}

void Gpoeo::EndSearch(double now_s) {
  int best = search_->Best();
  // At a predicted lower memory clock, the highest SM clock there is not the default pair: where no
  // probe there is within the cap (or they contradicted each other), the default clocks, and the
  // memory search from the default down as without memory models.
  bool measured = search_mem_ < 0;
  for (const GpoeoSearch::Probe& pr : search_->probes())
    measured = measured || (pr.clock == best && search_->Score(pr.energy_ratio, pr.time_ratio) < kBroken);
  if (search_mem_ >= 0 && (!measured || search_->contradiction().first >= 0)) {
    best = static_cast<int>(clocks_.size()) - 1;
    measured = false;
    search_mem_ = -1;
    LockMemory(mem_clocks_.back());
  }
  chosen_ci_ = best;
  chosen_mhz_ = clocks_[static_cast<size_t>(best)];
  chosen_energy_ = 1;
  chosen_time_ = 1;
  // What the phase-change check compares: the readings' period (an alias's, if so) and power.
  chosen_period_s_ = period_s_;
  chosen_power_w_ = ref_power_w_;
  if (measured) {
    for (const GpoeoSearch::Probe& pr : search_->probes())
      if (pr.clock == best) chosen_energy_ = pr.energy_ratio, chosen_time_ = pr.time_ratio;
    for (const Probed& q : probed_)
      if (q.clock == best) chosen_period_s_ = q.period_s, chosen_power_w_ = q.power_w;
  }
  last_probes_ = search_->probes();
  contradiction_ = search_->contradiction();
  Lock(chosen_mhz_);
  if (mem_clocks_.empty()) {
    Hold(now_s);
    return;
  }
  // The memory clock from where the SM clock was searched (the default, or the predicted one, with
  // its neighbours both ways), the held SM clock's measurement as that point's.
  const int n = static_cast<int>(mem_clocks_.size());
  const int start = MemorySearchStart();
  mem_search_ =
      std::make_unique<GpoeoSearch>(n, start, 1, o_.memory_probes + 1, o_.objective, o_.max_slowdown, search_mem_ < 0);
  mem_search_->Record(start, chosen_energy_, chosen_time_);
  mem_probed_.clear();
  state_ = State::kMemorySearch;
  const int next = mem_search_->Next();
  if (next < 0)
    EndMemorySearch(now_s);
  else
    StartMemoryProbe(next);
}

void Gpoeo::StartMemoryProbe(int mem_index) {
  mem_probe_ = mem_index;
  LockMemory(mem_clocks_[static_cast<size_t>(mem_index)]);
  OpenProbe();
}

void Gpoeo::EndMemoryProbe(double now_s) {
  const Probed probed = Measure(chosen_ci_, mem_probe_);
  mem_probed_.push_back(probed);
  double e = kInf, t = kInf;
  Ratios(probed, &e, &t);
  mem_search_->Record(mem_probe_, e, t);
  const int next = mem_search_->Next();
  if (next < 0)
    EndMemorySearch(now_s);
  else
    StartMemoryProbe(next);
}

void Gpoeo::EndMemorySearch(double now_s) {
  const int n = static_cast<int>(mem_clocks_.size());
  const int start = MemorySearchStart();
  int best = mem_search_->Best();
  last_mem_probes_ = mem_search_->probes();
  bool measured = best == start;
  for (const Probed& q : mem_probed_)
    if (best != start && q.mem == best && q.period_s > 0) {
      Ratios(q, &chosen_energy_, &chosen_time_);
      chosen_period_s_ = q.period_s, chosen_power_w_ = q.power_w;
      measured = true;
    }
  // From a predicted memory clock, measurements that contradicted each other: the default clocks.
  if (start != n - 1 && (!measured || mem_search_->contradiction().first >= 0)) {
    best = n - 1;
    chosen_ci_ = static_cast<int>(clocks_.size()) - 1;
    chosen_mhz_ = clocks_.back();
    chosen_energy_ = chosen_time_ = 1;
    chosen_period_s_ = period_s_, chosen_power_w_ = ref_power_w_;
    Lock(chosen_mhz_);
  }
  chosen_mem_mhz_ = mem_clocks_[static_cast<size_t>(best)];
  LockMemory(chosen_mem_mhz_);
  Hold(now_s);
}

void Gpoeo::Hold(double now_s) {
  settle_s_ = now_s - start_s_;
  state_ = State::kHold;
  Watch();
}

void Gpoeo::Watch() {
  ClearTrace();
  settle_ticks_ = static_cast<int>(std::ceil(std::max(chosen_period_s_, 0.2) / Dt()));
  measure_ticks_ = static_cast<int>(std::ceil(std::max(o_.check_periods * chosen_period_s_, kMinProbeS) / Dt()));
}

void Gpoeo::Check(double now_s) {
  const GpoeoPeriod p = DetectPeriod(trace_start_s_, GpoeoPeriodOptions{});
  const double period = p.periodic() ? FoldPeriod(trace_start_s_, p.period_s, kFoldRange) : chosen_period_s_;
  const double power = MeanPower(trace_start_s_, period);
  // A multiple or sub-multiple of the period held is the same iteration seen through another
  // spectral peak (GPOEO.md §2 keeps up to 6 candidates), not a new phase.
  const double ratio = std::max(period, chosen_period_s_) / std::min(period, chosen_period_s_);
  double period_drift = std::abs(ratio / std::max(1.0, std::round(ratio)) - 1);
  // Nor is another period while the period held still repeats the readings: readings of an
  // iteration near a whole number of updates, or seen through its alias, fold well at several
  // periods (gpoeo_period.h), and detection may take any of them.
  if (p.periodic() && period_drift > o_.drift) {
    const GpoeoUniform u = Signal(trace_start_s_);
    if (GpoeoMismatch(u.x, u.dt_s, chosen_period_s_) <= GpoeoPeriodOptions{}.max_mismatch) period_drift = 0;
  }
  const double power_drift = chosen_power_w_ > 0 ? std::abs(power / chosen_power_w_ - 1) : 0;
  if (period_drift > o_.drift || power_drift > o_.drift) {
    if (WorkerIdle()) {
      ClearTrace();  // a GPU of the job fell idle: the idle watchdog's, not a phase
      return;
    }
    phase_changes_.push_back({now_s, chosen_period_s_, p.periodic() ? p.period_s : 0, chosen_power_w_, power});
    Restart(now_s);
    return;
  }
  if (Guard(now_s)) return;
  // The next check's window, read on from here without a settle (the clocks stay); the readings'
  // updates stay for the guard's window.
  trace_.clear();
  ticks_ = 0;
  settle_ticks_ = 0;
  const double keep_from = now_s - GuardWindowS();
  for (Updates& u : series_) u.DropBefore(keep_from);
  for (Updates& u : energy_) u.DropBefore(keep_from);
}

double Gpoeo::GuardWindowS() const { return std::max(kGuardS, kGuardPeriods * period_s()); }

bool Gpoeo::Guard(double now_s) {
  if (!o_.guard || o_.objective != GpoeoObjective::kEnergy || chosen_mhz_ == clocks_.back()) return false;
  const double window = GuardWindowS();
  if (held_from_s_ < 0 || now_s - held_from_s_ < window) return false;
  int mem = -1;  // the held memory clock's index (-1: not tuned)
  for (size_t i = 0; i < mem_clocks_.size(); ++i)
    if (mem_clocks_[i] == chosen_mem_mhz_) mem = static_cast<int>(i);
  // The period the probe measured at this clock, refined over the window (not found afresh: a
  // period of another lattice of whole readings is the phase check's business).
  const double from = now_s - window;
  Probed held{chosen_ci_, FoldPeriod(from, chosen_period_s_, kFoldRange), 0, mem};
  held.power_w = MeanPower(from, held.period_s);
  double e = kInf, t = kInf;
  Ratios(held, &e, &t);
  // An iteration that moved by more than a probe misreads it, to where the clock cannot have taken
  // it (over the cap the search kept to, or sooner than the default clock runs), is the job's doing,
  // not the clock's: a phase change under the check's drift (a model grown by 8 %), which the cap
  // cannot be held to by raising the clock against the old reference. Moved within that range, it
  // is the probe's misreading: near a whole number of readings a probe's 4 s fold can be 3-4 % off,
  // and each start over would probe, hold and misread again.
  const bool moved = std::abs(TruePeriod(held.period_s) / TruePeriod(chosen_period_s_) - 1) > kGuardRange;
  const bool over_cap = !(t <= 1 + o_.max_slowdown + kGuardMargin);
  if (moved && (over_cap || t < 1 - kGuardRange)) {
    phase_changes_.push_back({now_s, chosen_period_s_, held.period_s, chosen_power_w_, held.power_w});
    Restart(now_s);
    return true;
  }
  if (!std::isfinite(t)) return false;
  guard_time_ = t, guard_energy_ = e;
  if (!over_cap) return false;
  ++chosen_ci_;
  guard_steps_.push_back({now_s, chosen_mhz_, clocks_[static_cast<size_t>(chosen_ci_)], t});
  chosen_mhz_ = clocks_[static_cast<size_t>(chosen_ci_)];
  chosen_period_s_ = held.period_s;  // the next clock's period is within a point or so of it
  Lock(chosen_mhz_);
  Watch();
  return true;
}

void Gpoeo::Finish() {
  for (int g = 0; g < gpus_->Count(); ++g) {
    std::string err;
    if (!gpus_->ResetClock(g, &err)) Fail(err);
    if (!mem_clocks_.empty() && !gpus_->ResetMemoryClock(g, &err)) Fail(err);
  }
}

void Gpoeo::Report(std::vector<std::string>* lines, nlohmann::ordered_json* findings) const {
  auto probes_json = [](const std::vector<GpoeoSearch::Probe>& list, const std::vector<int>& clocks) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const GpoeoSearch::Probe& pr : list)
      out.push_back(
          {{"mhz", clocks[static_cast<size_t>(pr.clock)]},
           {"energy_ratio", std::isfinite(pr.energy_ratio) ? nlohmann::ordered_json(pr.energy_ratio) : nullptr},
           {"time_ratio", std::isfinite(pr.time_ratio) ? nlohmann::ordered_json(pr.time_ratio) : nullptr}});
    return out;
  };
  nlohmann::ordered_json changes = nlohmann::ordered_json::array();
  for (const PhaseChange& c : phase_changes_)
    changes.push_back({{"at_s", c.at_s},
                       {"old_period_s", c.old_period_s},
                       {"new_period_s", c.new_period_s},
                       {"old_power_w", c.old_power_w},
                       {"new_power_w", c.new_power_w}});
  nlohmann::ordered_json steps = nlohmann::ordered_json::array();
  for (const GuardStep& g : guard_steps_)
    steps.push_back({{"at_s", g.at_s}, {"from_mhz", g.from_mhz}, {"to_mhz", g.to_mhz}, {"time_ratio", g.time_ratio}});
  const nlohmann::ordered_json guard = {
      {"on", o_.guard && o_.objective == GpoeoObjective::kEnergy},
      {"window_s", period_s_ > 0 ? GuardWindowS() : 0},
      {"time_ratio", guard_time_ > 0 ? nlohmann::ordered_json(guard_time_) : nullptr},
      {"energy_ratio", guard_energy_ > 0 ? nlohmann::ordered_json(guard_energy_) : nullptr},
      {"steps", steps}};
  nlohmann::ordered_json features = nlohmann::ordered_json::object();  // by name, as the models take them
  const std::vector<std::string> names = GpoeoFeatureNames(models_.feature_set);
  for (size_t i = 0; i < features_.size() && i < names.size(); ++i) features[names[i]] = features_[i];
  *findings = {{"state", StateName(state_)},
               {"objective", ObjectiveName(o_.objective)},
               {"max_slowdown", o_.max_slowdown},
               {"verdict", GpoeoVerdictName(detected_.verdict)},
               {"period_s", period_s()},
               {"readings_period_s", period_s_},
               {"aliased", alias_},
               {"alias_refuted", alias_refuted_},
               {"multiple_taken", multiple_taken_},
               {"utilisation_vote", vote_.voted ? nlohmann::ordered_json{{"period_s", vote_.iteration_s},
                                                                         {"mismatch", vote_.mismatch},
                                                                         {"readings_mismatch", vote_.readings_mismatch}}
                                                : nlohmann::ordered_json()},
               {"features", features},
               {"predicted_mhz", predicted_mhz_},
               {"predicted_memory_mhz", predicted_mem_mhz_},
               {"predicted_energy_ratio", predicted_energy_},
               {"predicted_time_ratio", predicted_time_},
               {"chosen_mhz", chosen_mhz_},
               {"measured_energy_ratio", chosen_energy_},
               {"measured_time_ratio", chosen_time_},
               {"probes", probes_json(last_probes_, clocks_)},
               {"memory_mhz", chosen_mem_mhz_},
               {"memory_probes", probes_json(last_mem_probes_, mem_clocks_)},
               {"contradicted", contradiction_.first >= 0},
               {"searches", searches_},
               {"settle_s", settle_s_},
               {"settle_periods", period_s_ > 0 ? settle_s_ / period_s() : 0},
               {"phase_changes", changes},
               {"guard", guard},
               {"idle_drops", idle_drops_}};
  if (o_.memory && mem_clocks_.empty())
    lines->push_back(
        "gpoeo: memory=1, but GPU 0 offers no memory clock to lock (one listed, or a back end that "
        "cannot lock them): the memory clock is left alone");
  if (period_s_ <= 0) {
    lines->push_back(fmt::format("gpoeo: no period found ({}: {})", GpoeoVerdictName(detected_.verdict),
                                 detected_.reason.empty() ? "not enough trace" : detected_.reason));
    return;
  }
  lines->push_back(
      fmt::format("gpoeo: period {:.3f} s at the default clock; predicted {} MHz{} (energy {:+.1f} %, "
                  "time {:+.1f} %)",
                  period_s(), predicted_mhz_,
                  predicted_mem_mhz_ > 0 ? fmt::format(", memory {} MHz", predicted_mem_mhz_) : std::string(),
                  100 * (predicted_energy_ - 1), 100 * (predicted_time_ - 1)));
  if (multiple_taken_)
    lines->push_back(fmt::format(
        "gpoeo: detection read {:.3f} s, a whole fraction of the {:.3f} s its best estimate took, which the "
        "readings fold alike at the default clock; the first probe's readings fold clearly worse at the fraction: "
        "the period is {:.3f} s",
        detected_.period_s, detected_.multiple_s, period_s_));
  if (vote_.voted)
    lines->push_back(
        fmt::format("gpoeo: the readings' period, {:.3f} s, is the alias of a {:.3f} s iteration, under two of the "
                    "readings' {:.0f} ms updates: the utilisation, on its own update grid, repeats at the iteration "
                    "(mismatch {:.2f}) and not at the alias ({:.2f}); the probes are measured through it",
                    period_s_, vote_.iteration_s, 1e3 * update_s_, vote_.mismatch, vote_.readings_mismatch));
  else if (alias_)
    lines->push_back(
        fmt::format("gpoeo: the readings' period, {:.3f} s, shrank at a lower clock: it is the alias of a {:.3f} s "
                    "iteration, under two of the readings' {:.0f} ms updates; the probes are measured through it",
                    period_s_, period_s(), 1e3 * update_s_));
  if (alias_refuted_)
    lines->push_back(
        fmt::format("gpoeo: the readings' period, {:.3f} s, shrank at one lower clock and grew at another, which "
                    "no alias can: the first shrink was noise, and the probes read the iteration directly",
                    period_s_));
  auto tried = [](const std::vector<GpoeoSearch::Probe>& list, const std::vector<int>& clocks) {
    std::string out;
    for (const GpoeoSearch::Probe& pr : list)
      out += fmt::format("{}{} MHz E {:+.1f} % T {:+.1f} %", out.empty() ? "" : ", ",
                         clocks[static_cast<size_t>(pr.clock)], 100 * (pr.energy_ratio - 1), 100 * (pr.time_ratio - 1));
    return out.empty() ? std::string("nothing") : out;
  };
  // The search's choice, before any raise by the guard.
  const int searched_mhz = guard_steps_.empty() ? chosen_mhz_ : guard_steps_.front().from_mhz;
  if (chosen_mhz_ > 0) {
    lines->push_back(fmt::format("gpoeo: probed {}", tried(last_probes_, clocks_)));
    if (contradiction_.first >= 0)
      lines->push_back(fmt::format(
          "gpoeo: {} MHz measured faster than {} MHz: the period was misread at one of them, so no clock is "
          "trusted and the default is kept",
          clocks_[static_cast<size_t>(contradiction_.first)], clocks_[static_cast<size_t>(contradiction_.second)]));
    if (chosen_mem_mhz_ > 0)
      lines->push_back(
          fmt::format("gpoeo: memory clocks at {} MHz: probed {}", chosen_mhz_, tried(last_mem_probes_, mem_clocks_)));
    lines->push_back(
        fmt::format("gpoeo: chose {} MHz{} ({} objective): measured energy {:+.1f} %, time {:+.1f} % per period vs the "
                    "default clocks; settled after {:.1f} s ({:.0f} periods)",
                    searched_mhz, chosen_mem_mhz_ > 0 ? fmt::format(", memory {} MHz", chosen_mem_mhz_) : std::string(),
                    ObjectiveName(o_.objective), 100 * (chosen_energy_ - 1), 100 * (chosen_time_ - 1), settle_s_,
                    settle_s_ / period_s()));
    for (const GuardStep& g : guard_steps_)
      lines->push_back(fmt::format(
          "gpoeo: guard: {} MHz measured {:+.1f} % time over the last {:.0f} s of holding, over the {:g} % cap by "
          "more than {:g} points: raised to {} MHz at {:.1f} s",
          g.from_mhz, 100 * (g.time_ratio - 1), GuardWindowS(), 100 * o_.max_slowdown, 100 * kGuardMargin, g.to_mhz,
          g.at_s));
    if (guard_time_ > 0)
      lines->push_back(
          fmt::format("gpoeo: guard: {} MHz measures energy {:+.1f} %, time {:+.1f} % over the last {:.0f} s",
                      chosen_mhz_, 100 * (guard_energy_ - 1), 100 * (guard_time_ - 1), GuardWindowS()));
  } else {
    lines->push_back(fmt::format("gpoeo: still {} at the end of the run", StateName(state_)));
  }
  for (const PhaseChange& c : phase_changes_)
    lines->push_back(
        fmt::format("gpoeo: phase change at {:.1f} s: period {:.3f} s → {:.3f} s, power {:.0f} W → "
                    "{:.0f} W; started over",
                    c.at_s, c.old_period_s, c.new_period_s, c.old_power_w, c.new_power_w));
}

}  // namespace emo

// calibrate.cc — device profiles from microbenchmark runs (see calibrate.h).
#include "model/calibrate.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace emo {

namespace {

constexpr int kProfileLaunches = 12;     // a metrics run: launches 2..11 are profiled (the first warms up)
constexpr double kSettleS = 0.03;        // beyond the 5-15 ms DVFS latency
constexpr double kUpdateMarginS = 0.15;  // room for counter updates on both sides of the window
constexpr int kFloorLaunches = 256;      // empty kernels per floor measurement
// All-reduces per collective measurement (the first, a warm-up, not counted), each large enough
// that NCCL's fixed latency is negligible beside the transfer.
constexpr int kCollectiveLaunches = 8;
constexpr double kCollectiveBytes = 256.0 * 1024 * 1024;

struct Sample {
  double t_ns, energy_j, mhz;
};

// The cells already measured, keyed [bench][clock index]; time 0 = not yet.
struct Cells {
  std::vector<double> time_s, energy_j, throttled_mhz;  // [bench * clocks + c]
  std::vector<double> floor_s;                          // per clock; 0 = not yet
  std::vector<double> collective_s;                     // per clock: an all-reduce's time; 0 = not yet
  std::vector<char> have_metrics;                       // per bench
  std::vector<std::array<double, kMetrics>> metrics;
};

bool ReadPartial(const std::string& path, const std::string& device, const std::vector<int>& clocks, Cells* cells,
                 std::string* err) {
  std::ifstream f(path);
  if (!f) return true;  // nothing to resume
  std::string line;
  bool header = false;
  int line_no = 0;
  while (std::getline(f, line)) {
    ++line_no;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;  // a line cut short by an interruption
    if (!header) {
      if (j.value("device", "") != device || j.value("clocks_mhz", std::vector<int>{}) != clocks) {
        *err = path + ": a partial calibration of another device or clock set; remove it to start afresh";
        return false;
      }
      header = true;
      continue;
    }
    if (j.contains("collective")) {
      const auto it = std::find(clocks.begin(), clocks.end(), j.value("mhz", 0));
      if (it != clocks.end()) cells->collective_s[static_cast<size_t>(it - clocks.begin())] = j.value("time_s", 0.0);
      continue;
    }
    const std::string name = j.value("bench", "");
    int b = 0;
    while (b <= kBenchEmpty && name != MicrobenchName(static_cast<Microbench>(b))) ++b;
    if (b > kBenchEmpty) {
      *err = path + ":" + std::to_string(line_no) + ": unknown benchmark '" + name + "'";
      return false;
    }
    if (b == kBenchEmpty) {
      const auto it = std::find(clocks.begin(), clocks.end(), j.value("mhz", 0));
      if (it != clocks.end()) cells->floor_s[static_cast<size_t>(it - clocks.begin())] = j.value("floor_s", 0.0);
    } else if (j.contains("metrics")) {
      const std::vector<double> m = j["metrics"].get<std::vector<double>>();
      if (m.size() != kMetrics) continue;
      std::copy(m.begin(), m.end(), cells->metrics[b].begin());
      cells->have_metrics[b] = 1;
    } else {
      const int mhz = j.value("mhz", 0);
      const auto it = std::find(clocks.begin(), clocks.end(), mhz);
      if (it == clocks.end()) continue;
      const size_t at = static_cast<size_t>(b) * clocks.size() + static_cast<size_t>(it - clocks.begin());
      cells->time_s[at] = j.value("time_s", 0.0);
      cells->energy_j[at] = j.value("energy_j", 0.0);
      cells->throttled_mhz[at] = j.value("throttled_mhz", 0.0);
    }
  }
  return true;
}

bool Append(const std::string& path, const nlohmann::json& j, std::string* err) {
  if (path.empty()) return true;
  std::ofstream f(path, std::ios::app);
  f << j.dump() << "\n";
  f.flush();
  if (!f) {
    *err = path + ": cannot write";
    return false;
  }
  return true;
}

// One run of benchmark b at `mhz`: time and energy per launch. False when no steady window was seen.
// *too_short (with false): the clock settled too late in the run for two counter updates (a
// power-limited clock the controller keeps moving); a longer run may do.
bool MeasureOnce(BenchDevice& dev, Microbench b, int mhz, int launches, const CalibrateOptions& opt, double* time_s,
                 double* energy_j, double* throttled_mhz, bool* too_short, std::string* err) {
  *too_short = false;
  std::vector<Sample> samples;
  std::string read_err;
  BenchRun run;
  auto start = [&](GpuControl& gpus) {
    if (!gpus.SetLockedClock(0, mhz, &read_err)) read_err = "locking " + std::to_string(mhz) + " MHz: " + read_err;
  };
  auto poll = [&](GpuControl& gpus, double now) {
    const std::optional<double> e = gpus.EnergyJ(0);
    const std::optional<double> f = gpus.ClockMhz(0);
    if (!e || !f) {
      if (read_err.empty()) read_err = "telemetry: " + gpus.error();
      return;
    }
    samples.push_back({now, *e, *f});
  };
  if (!dev.Run(b, launches, opt.poll_ms, start, poll, &run, err)) return false;
  if (!read_err.empty()) {
    *err = read_err;
    return false;
  }
  const std::string what = std::string(MicrobenchName(b)) + " at " + std::to_string(mhz) + " MHz";
  // The clock has landed from the first sample on which it holds its final value: the locked clock,
  // or lower where the power limit throttles this benchmark (then the profile records what the
  // device does at this setting, as it would do to a pack; *throttled_mhz says so).
  if (samples.empty()) {
    *err = what + ": no telemetry during the run";
    return false;
  }
  size_t landed = samples.size() - 1;
  while (landed > 0 && samples[landed - 1].mhz == samples.back().mhz) --landed;
  *throttled_mhz = samples.back().mhz < mhz - 0.5 ? samples.back().mhz : 0;
  // Counter updates after the clock landed and before the last launch ended: (time, energy).
  const double end_ns = run.launch_end_ns.back();
  std::vector<std::pair<double, double>> edges;
  for (size_t i = landed + 1; i < samples.size(); ++i) {
    if (samples[i].energy_j == samples[i - 1].energy_j) continue;
    const double t = 0.5 * (samples[i - 1].t_ns + samples[i].t_ns);
    if (samples[i - 1].t_ns > samples[landed].t_ns && samples[i].t_ns < end_ns)
      edges.push_back({t, samples[i].energy_j});
  }
  if (edges.size() < 2) {
    *err = what + ": fewer than two energy-counter updates in the run";
    *too_short = true;
    return false;
  }
  const double t0 = edges.front().first, t1 = edges.back().first;
  const double power_w = (edges.back().second - edges.front().second) / ((t1 - t0) * 1e-9);
  const auto& ends = run.launch_end_ns;
  const size_t j1 = static_cast<size_t>(std::lower_bound(ends.begin(), ends.end(), t0) - ends.begin());
  const size_t j2 = static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), t1) - ends.begin());
  if (j2 < j1 + 2) {
    *err = what + ": fewer than two launches ended inside the measured window";
    return false;
  }
  *time_s = (ends[j2 - 1] - ends[j1]) * 1e-9 / static_cast<double>(j2 - 1 - j1);
  *energy_j = power_w * *time_s;
  return true;
}

// The kernel floor at `mhz`: the duration of an empty kernel, run back to back behind its gate
// (kEmptyGateS), as the interquartile mean over the launches (robust to a launch the host fed late
// and to the events' resolution). False when the clock had not landed (taken the value it ran at
// to the end: the clock locked, or the highest the device reaches) before the first launch.
bool MeasureFloor(BenchDevice& dev, int mhz, double poll_ms, double* floor_s, std::string* err) {
  std::vector<std::pair<double, double>> clock;  // (time ns, MHz) samples
  std::string lock_err;
  auto start = [&](GpuControl& gpus) {
    if (!gpus.SetLockedClock(0, mhz, &lock_err)) lock_err = "locking " + std::to_string(mhz) + " MHz: " + lock_err;
  };
  auto poll = [&](GpuControl& gpus, double now) {
    if (const std::optional<double> f = gpus.ClockMhz(0)) clock.push_back({now, *f});
  };
  BenchRun run;
  if (!dev.Run(kBenchEmpty, kFloorLaunches, poll_ms, start, poll, &run, err)) return false;
  const std::string what = "empty kernel at " + std::to_string(mhz) + " MHz: ";
  if (!lock_err.empty()) {
    *err = what + lock_err;
    return false;
  }
  if (run.launch_start_ns.empty() || run.launch_start_ns.size() != run.launch_end_ns.size()) {
    *err = what + "the run reported no launches";
    return false;
  }
  const double first = run.launch_start_ns.front();
  size_t at = 0;  // the last sample before the first launch started
  while (at + 1 < clock.size() && clock[at + 1].first <= first) ++at;
  if (clock.empty() || clock[at].first > first || clock[at].second != clock.back().second) {
    *err = what + "the clock had not landed when the kernels started";
    return false;
  }
  std::vector<double> d;
  for (size_t i = 0; i < run.launch_end_ns.size(); ++i) d.push_back(run.launch_end_ns[i] - run.launch_start_ns[i]);
  std::sort(d.begin(), d.end());
  double sum = 0;
  const size_t lo = d.size() / 4, hi = d.size() - d.size() / 4;
  for (size_t i = lo; i < hi; ++i) sum += d[i];
  *floor_s = std::max(sum / static_cast<double>(hi - lo), 0.0) * 1e-9;
  return true;
}

// An all-reduce's time at `mhz` (every GPU locked there): the mean time of kCollectiveLaunches
// back to back, the first (a warm-up) left out. False with *err where the device cannot run one
// (*unsupported) or the run failed.
bool MeasureCollective(BenchDevice& dev, int mhz, double* time_s, bool* unsupported, std::string* err) {
  *unsupported = false;
  std::string lock_err;
  auto start = [&](GpuControl& gpus) {
    for (int g = 0; g < gpus.Count(); ++g)
      if (!gpus.SetLockedClock(g, mhz, &lock_err)) {
        lock_err = "locking GPU " + std::to_string(g) + " at " + std::to_string(mhz) + " MHz: " + lock_err;
        return;
      }
  };
  BenchRun run;
  if (!dev.RunCollective(kCollectiveBytes, kCollectiveLaunches, start, &run, err)) {
    *unsupported = true;
    return false;
  }
  const std::string what = "all-reduce at " + std::to_string(mhz) + " MHz: ";
  if (!lock_err.empty()) {
    *err = what + lock_err;
    return false;
  }
  if (run.launch_end_ns.size() != static_cast<size_t>(kCollectiveLaunches) ||
      run.launch_start_ns.size() != run.launch_end_ns.size()) {
    *err = what + "the run reported " + std::to_string(run.launch_end_ns.size()) + " of " +
           std::to_string(kCollectiveLaunches) + " collectives";
    return false;
  }
  double sum = 0;
  for (size_t i = 1; i < run.launch_end_ns.size(); ++i) sum += run.launch_end_ns[i] - run.launch_start_ns[i];
  *time_s = sum / static_cast<double>(run.launch_end_ns.size() - 1) * 1e-9;
  if (!(*time_s > 0)) {
    *err = what + "the collectives took no time";
    return false;
  }
  return true;
}

}  // namespace

std::vector<int> SpreadClocks(const std::vector<int>& supported, int n) {
  const int size = static_cast<int>(supported.size());
  if (n <= 0 || n >= size) return supported;
  std::vector<int> out;
  for (int i = 0; i < n; ++i) {
    const int at = n == 1 ? size - 1 : static_cast<int>(std::lround(static_cast<double>(i) * (size - 1) / (n - 1)));
    const int mhz = supported[static_cast<size_t>(at)];
    if (out.empty() || out.back() != mhz) out.push_back(mhz);
  }
  return out;
}

bool ParseClocks(const std::string& text, const std::vector<int>& supported, std::vector<int>* out, std::string* err) {
  if (text == "all") {
    *out = supported;
    return true;
  }
  if (text.find(',') == std::string::npos && !text.empty() &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) && text.size() <= 2) {
    const int n = std::stoi(text);
    if (n < 2) {
      *err = "--clocks " + text + ": need at least 2 clocks";
      return false;
    }
    *out = SpreadClocks(supported, n);
    return true;
  }
  out->clear();
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || std::find(supported.begin(), supported.end(), v) == supported.end()) {
      *err = "--clocks: '" + item + "' is not a supported clock (" + std::to_string(supported.front()) + ".." +
             std::to_string(supported.back()) + " MHz)";
      return false;
    }
    out->push_back(static_cast<int>(v));
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  if (out->back() != supported.back()) out->push_back(supported.back());  // the default anchors metrics
  return true;
}

bool Calibrate(BenchDevice& dev, const CalibrateOptions& opt, DeviceProfile* out, std::string* err) {
  const std::vector<int> supported = dev.SupportedClocks();
  const std::vector<int>& clocks = opt.clocks_mhz;
  if (clocks.empty() || supported.empty() || clocks.back() != supported.back()) {
    *err = "the clocks to calibrate must include the default clock " +
           std::to_string(supported.empty() ? 0 : supported.back()) + " MHz";
    return false;
  }
  const size_t nc = clocks.size();
  Cells cells;
  cells.time_s.assign(kMicrobenches * nc, 0);
  cells.energy_j.assign(kMicrobenches * nc, 0);
  cells.throttled_mhz.assign(kMicrobenches * nc, 0);
  cells.have_metrics.assign(kMicrobenches, 0);
  cells.metrics.assign(kMicrobenches, {});
  cells.floor_s.assign(nc, 0);
  cells.collective_s.assign(nc, 0);
  if (!opt.partial_path.empty()) {
    if (!ReadPartial(opt.partial_path, dev.Name(), clocks, &cells, err)) return false;
    std::ifstream probe(opt.partial_path, std::ios::ate);
    if (!probe && !Append(opt.partial_path, {{"device", dev.Name()}, {"clocks_mhz", clocks}}, err)) return false;
    // A last line cut short by an interruption is ended, so that the next one is not glued to it.
    char last = '\n';
    if (probe && probe.tellg() > 0 && probe.seekg(-1, std::ios::end)) probe.get(last);
    if (last != '\n') std::ofstream(opt.partial_path, std::ios::app) << "\n";
  }
  const int total = kMicrobenches * static_cast<int>(nc + 1) + 2 * static_cast<int>(nc);
  int done = 0;
  ProfileCost cost;
  for (int bi = 0; bi < kMicrobenches; ++bi) {
    const Microbench b = static_cast<Microbench>(bi);
    if (!cells.have_metrics[bi]) {
      std::vector<PackMetrics> m;
      if (!dev.Profile(b, kProfileLaunches, {{0, 1, kProfileLaunches - 2}}, &m, &cost, err)) return false;
      PackMetrics per = m[0];
      for (int k = 0; k < kMetrics; ++k)
        if (k != kWarpsPerActiveCycle) per.v[k] /= static_cast<double>(per.kernels);
      cells.metrics[bi] = per.v;
      cells.have_metrics[bi] = 1;
      if (!Append(opt.partial_path, {{"bench", MicrobenchName(b)}, {"metrics", per.v}}, err)) return false;
    }
    if (opt.progress) opt.progress(++done, total);
    for (size_t c = 0; c < nc; ++c) {
      const size_t at = static_cast<size_t>(bi) * nc + c;
      if (cells.time_s[at] > 0) {
        if (opt.progress) opt.progress(++done, total);
        continue;
      }
      // Size the run from a pilot of a few launches at this clock.
      double pilot_t = 0;
      int launches = 0;
      {
        BenchRun run;
        std::string ignored;
        auto start = [&](GpuControl& gpus) { gpus.SetLockedClock(0, clocks[c], &ignored); };
        auto poll = [](GpuControl&, double) {};
        if (!dev.Run(b, 8, 10, start, poll, &run, err)) return false;
        pilot_t = (run.launch_end_ns.back() - run.launch_end_ns.front()) * 1e-9 / 7;
        launches = static_cast<int>(std::ceil((kSettleS + opt.window_s + kUpdateMarginS) / std::max(pilot_t, 1e-6)));
        launches = std::max(launches, 8);
      }
      std::vector<double> ts, es;
      double throttled = 0;
      for (int r = 0; r < opt.max_repeats; ++r) {
        double t = 0, e = 0;
        bool too_short = false;
        for (int longer = 0;; ++longer) {  // up to 8x the pilot's length
          if (MeasureOnce(dev, b, clocks[c], launches, opt, &t, &e, &throttled, &too_short, err)) break;
          if (!too_short || longer == 3) return false;
          launches *= 2;
        }
        ts.push_back(t);
        es.push_back(e);
        if (static_cast<int>(es.size()) < opt.min_repeats) continue;
        const auto [lo, hi] = std::minmax_element(es.begin(), es.end());
        double mean = 0;
        for (double v : es) mean += v / static_cast<double>(es.size());
        if ((*hi - *lo) / mean < opt.spread) break;
      }
      double t = 0, e = 0;
      for (size_t i = 0; i < ts.size(); ++i) {
        t += ts[i] / static_cast<double>(ts.size());
        e += es[i] / static_cast<double>(es.size());
      }
      cells.time_s[at] = t;
      cells.energy_j[at] = e;
      cells.throttled_mhz[at] = throttled;
      if (!Append(opt.partial_path,
                  {{"bench", MicrobenchName(b)},
                   {"mhz", clocks[c]},
                   {"time_s", t},
                   {"energy_j", e},
                   {"repeats", ts.size()},
                   {"throttled_mhz", throttled}},
                  err))
        return false;
      if (opt.progress) opt.progress(++done, total);
    }
  }
  for (size_t c = 0; c < nc; ++c) {
    if (cells.floor_s[c] <= 0) {
      if (!MeasureFloor(dev, clocks[c], opt.poll_ms, &cells.floor_s[c], err)) return false;
      if (!Append(opt.partial_path,
                  {{"bench", MicrobenchName(kBenchEmpty)}, {"mhz", clocks[c]}, {"floor_s", cells.floor_s[c]}}, err))
        return false;
    }
    if (opt.progress) opt.progress(++done, total);
  }
  // The collective curve, highest clock first: the default anchors the ratios, and a device that
  // cannot run a collective says so on the first.
  bool collectives = true;
  for (size_t c = nc; c-- > 0;) {
    if (collectives && cells.collective_s[c] <= 0) {
      bool unsupported = false;
      std::string why;
      if (!MeasureCollective(dev, clocks[c], &cells.collective_s[c], &unsupported, &why)) {
        if (!unsupported) {
          *err = why;
          return false;
        }
        collectives = false;
        if (opt.note) opt.note("collective time curve not measured: " + why);
      } else if (!Append(opt.partial_path,
                         {{"collective", "all_reduce"}, {"mhz", clocks[c]}, {"time_s", cells.collective_s[c]}}, err)) {
        return false;
      }
    }
    if (opt.progress) opt.progress(++done, total);
  }
  DeviceProfile p;
  p.device = dev.Name();
  p.clocks_mhz = clocks;
  p.default_mhz = clocks.back();
  p.provenance = {opt.date, opt.command, "emo calibrate: microbenchmarks, energy counter, range counters"};
  for (int bi = 0; bi < kMicrobenches; ++bi) {
    p.bench[bi].metrics = cells.metrics[bi];
    std::vector<double> throttled;
    for (size_t c = 0; c < nc; ++c) {
      p.bench[bi].time_s.push_back(cells.time_s[bi * nc + c]);
      p.bench[bi].energy_j.push_back(cells.energy_j[bi * nc + c]);
      throttled.push_back(cells.throttled_mhz[bi * nc + c]);
    }
    p.bench[bi].SetThrottled(std::move(throttled));
  }
  p.kernel_floor_s = cells.floor_s;
  if (collectives)
    for (size_t c = 0; c < nc; ++c)
      p.collective_time_ratio.push_back(cells.collective_s[c] / cells.collective_s[nc - 1]);
  if (!CheckProfile(p, err)) return false;
  *out = std::move(p);
  return true;
}

}  // namespace emo

// device_profile.cc — device profiles: checks and JSON.
#include "model/device_profile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/field_name.h"

namespace emo {

int DeviceProfile::ClockIndex(int mhz) const {
  for (int i = 0; i < clocks(); ++i)
    if (clocks_mhz[i] == mhz) return i;
  return -1;
}

void DeviceProfile::Bench::SetThrottled(std::vector<double> mhz) {
  if (std::all_of(mhz.begin(), mhz.end(), [](double x) { return x == 0; })) mhz.clear();
  throttled_mhz = std::move(mhz);
}

bool CheckProfile(const DeviceProfile& p, std::string* err) {
  auto fail = [&](const std::string& what) {
    *err = what;
    return false;
  };
  if (p.device.empty()) return fail("field device: empty");
  if (p.clocks_mhz.empty()) return fail("field clocks_mhz: empty");
  for (int i = 0; i < p.clocks(); ++i) {
    if (p.clocks_mhz[i] <= 0) return fail("field clocks_mhz[" + std::to_string(i) + "]: not positive");
    if (i > 0 && p.clocks_mhz[i] <= p.clocks_mhz[i - 1])
      return fail("field clocks_mhz[" + std::to_string(i) + "]: not ascending");
  }
  if (p.ClockIndex(p.default_mhz) < 0)
    return fail("field default_mhz: " + std::to_string(p.default_mhz) + " not in clocks_mhz");
  for (int b = 0; b < kMicrobenches; ++b) {
    const DeviceProfile::Bench& bench = p.bench[b];
    const std::string at = std::string("field benchmarks.") + MicrobenchName(static_cast<Microbench>(b));
    for (int m = 0; m < kMetrics; ++m)
      if (!std::isfinite(bench.metrics[m]) || bench.metrics[m] < 0)
        return fail(at + ".metrics." + MetricName(static_cast<Metric>(m)) + ": not a finite non-negative number");
    if (bench.time_s.size() != p.clocks_mhz.size())
      return fail(at + ".time_s: " + std::to_string(bench.time_s.size()) + " values for " + std::to_string(p.clocks()) +
                  " clocks");
    if (bench.energy_j.size() != p.clocks_mhz.size())
      return fail(at + ".energy_j: " + std::to_string(bench.energy_j.size()) + " values for " +
                  std::to_string(p.clocks()) + " clocks");
    for (int i = 0; i < p.clocks(); ++i) {
      if (!std::isfinite(bench.time_s[i]) || bench.time_s[i] <= 0)
        return fail(at + ".time_s[" + std::to_string(i) + "]: not a finite positive number");
      if (!std::isfinite(bench.energy_j[i]) || bench.energy_j[i] <= 0)
        return fail(at + ".energy_j[" + std::to_string(i) + "]: not a finite positive number");
    }
    if (!bench.throttled_mhz.empty() && bench.throttled_mhz.size() != p.clocks_mhz.size())
      return fail(at + ".throttled_mhz: " + std::to_string(bench.throttled_mhz.size()) + " values for " +
                  std::to_string(p.clocks()) + " clocks");
    for (size_t i = 0; i < bench.throttled_mhz.size(); ++i) {
      const double t = bench.throttled_mhz[i];
      if (!std::isfinite(t) || t < 0 || t >= p.clocks_mhz[i])
        return fail(at + ".throttled_mhz[" + std::to_string(i) + "]: expected 0 or a clock below " +
                    std::to_string(p.clocks_mhz[i]) + " MHz");
    }
  }
  if (!p.kernel_floor_s.empty() && p.kernel_floor_s.size() != p.clocks_mhz.size())
    return fail("field kernel_floor_s: " + std::to_string(p.kernel_floor_s.size()) + " values for " +
                std::to_string(p.clocks()) + " clocks");
  for (size_t i = 0; i < p.kernel_floor_s.size(); ++i)
    if (!std::isfinite(p.kernel_floor_s[i]) || p.kernel_floor_s[i] < 0)
      return fail("field kernel_floor_s[" + std::to_string(i) + "]: not a finite non-negative number");
  if (!p.collective_time_ratio.empty() && p.collective_time_ratio.size() != p.clocks_mhz.size())
    return fail("field collective_time_ratio: " + std::to_string(p.collective_time_ratio.size()) + " values for " +
                std::to_string(p.clocks()) + " clocks");
  for (size_t i = 0; i < p.collective_time_ratio.size(); ++i)
    if (!std::isfinite(p.collective_time_ratio[i]) || p.collective_time_ratio[i] <= 0)
      return fail("field collective_time_ratio[" + std::to_string(i) + "]: not a finite positive number");
  return true;
}

bool ParseProfile(const std::string& source, const std::string& text, DeviceProfile* out, std::string* err) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    *err = source + ": not JSON";
    return false;
  }
  auto fail = [&](const std::string& what) {
    *err = source + ": " + what;
    return false;
  };
  if (!j.is_object()) return fail("expected an object");
  DeviceProfile p;
  if (!j.contains("device") || !j["device"].is_string()) return fail("field device: expected a string");
  p.device = j["device"].get<std::string>();
  if (!j.contains("clocks_mhz") || !j["clocks_mhz"].is_array()) return fail("field clocks_mhz: expected an array");
  for (size_t i = 0; i < j["clocks_mhz"].size(); ++i) {
    const auto& c = j["clocks_mhz"][i];
    if (!c.is_number_integer()) return fail("field clocks_mhz[" + std::to_string(i) + "]: expected an integer");
    p.clocks_mhz.push_back(c.get<int>());
  }
  if (!j.contains("default_mhz") || !j["default_mhz"].is_number_integer())
    return fail("field default_mhz: expected an integer");
  p.default_mhz = j["default_mhz"].get<int>();
  if (j.contains("provenance")) {
    const auto& pv = j["provenance"];
    if (!pv.is_object()) return fail("field provenance: expected an object");
    for (const char* key : {"date", "command", "source"}) {
      if (pv.contains(key) && !pv[key].is_string())
        return fail(std::string("field provenance.") + key + ": expected a string");
    }
    p.provenance.date = pv.value("date", "");
    p.provenance.command = pv.value("command", "");
    p.provenance.source = pv.value("source", "");
  }
  if (!j.contains("benchmarks") || !j["benchmarks"].is_object()) return fail("field benchmarks: expected an object");
  const auto& benches = j["benchmarks"];
  for (auto it = benches.begin(); it != benches.end(); ++it) {
    bool known = false;
    for (int b = 0; b < kMicrobenches; ++b) known = known || it.key() == MicrobenchName(static_cast<Microbench>(b));
    if (!known) return fail("field benchmarks." + FieldName(it.key()) + ": unknown microbenchmark");
  }
  for (int b = 0; b < kMicrobenches; ++b) {
    const std::string name = MicrobenchName(static_cast<Microbench>(b));
    const std::string at = "field benchmarks." + name;
    if (!benches.contains(name) || !benches[name].is_object()) return fail(at + ": missing");
    const auto& jb = benches[name];
    DeviceProfile::Bench& bench = p.bench[b];
    if (!jb.contains("metrics") || !jb["metrics"].is_object()) return fail(at + ".metrics: expected an object");
    for (int m = 0; m < kMetrics; ++m) {
      const char* metric = MetricName(static_cast<Metric>(m));
      if (!jb["metrics"].contains(metric) || !jb["metrics"][metric].is_number())
        return fail(at + ".metrics." + metric + ": expected a number");
      bench.metrics[m] = jb["metrics"][metric].get<double>();
    }
    std::vector<double> throttled;
    for (const char* key : {"time_s", "energy_j", "throttled_mhz"}) {
      const std::string k = key;
      if (k == "throttled_mhz" && !jb.contains(key)) continue;  // optional: none throttled
      if (!jb.contains(key) || !jb[key].is_array()) return fail(at + "." + key + ": expected an array");
      std::vector<double>& v = k == "time_s" ? bench.time_s : k == "energy_j" ? bench.energy_j : throttled;
      for (size_t i = 0; i < jb[key].size(); ++i) {
        if (!jb[key][i].is_number()) return fail(at + "." + key + "[" + std::to_string(i) + "]: expected a number");
        v.push_back(jb[key][i].get<double>());
      }
    }
    bench.SetThrottled(std::move(throttled));
  }
  for (const char* key : {"kernel_floor_s", "collective_time_ratio"}) {  // optional
    if (!j.contains(key)) continue;
    const auto& ja = j[key];
    if (!ja.is_array()) return fail(std::string("field ") + key + ": expected an array");
    std::vector<double>& v = std::string(key) == "kernel_floor_s" ? p.kernel_floor_s : p.collective_time_ratio;
    for (size_t i = 0; i < ja.size(); ++i) {
      if (!ja[i].is_number())
        return fail(std::string("field ") + key + "[" + std::to_string(i) + "]: expected a number");
      v.push_back(ja[i].get<double>());
    }
  }
  std::string why;
  if (!CheckProfile(p, &why)) return fail(why);
  *out = std::move(p);
  return true;
}

bool LoadProfile(const std::string& path, DeviceProfile* out, std::string* err) {
  std::ifstream f(path);
  if (!f) {
    *err = path + ": cannot open";
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseProfile(path, ss.str(), out, err);
}

std::string ProfileJson(const DeviceProfile& p) {
  nlohmann::ordered_json j;
  j["device"] = p.device;
  j["clocks_mhz"] = p.clocks_mhz;
  j["default_mhz"] = p.default_mhz;
  j["provenance"] = {{"date", p.provenance.date}, {"command", p.provenance.command}, {"source", p.provenance.source}};
  nlohmann::ordered_json benches = nlohmann::ordered_json::object();
  for (int b = 0; b < kMicrobenches; ++b) {
    const DeviceProfile::Bench& bench = p.bench[b];
    nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
    for (int m = 0; m < kMetrics; ++m) metrics[MetricName(static_cast<Metric>(m))] = bench.metrics[m];
    nlohmann::ordered_json& jb = benches[MicrobenchName(static_cast<Microbench>(b))];
    jb = {{"metrics", metrics}, {"time_s", bench.time_s}, {"energy_j", bench.energy_j}};
    if (!bench.throttled_mhz.empty()) jb["throttled_mhz"] = bench.throttled_mhz;
  }
  j["benchmarks"] = benches;
  if (!p.kernel_floor_s.empty()) j["kernel_floor_s"] = p.kernel_floor_s;
  if (!p.collective_time_ratio.empty()) j["collective_time_ratio"] = p.collective_time_ratio;
  return j.dump(2);
}

bool SaveProfile(const std::string& path, const DeviceProfile& p, std::string* err) {
  std::ofstream f(path);
  if (f) f << ProfileJson(p) << "\n";
  if (!f) {
    *err = path + ": cannot write";
    return false;
  }
  return true;
}

}  // namespace emo

// frequency_policy.cc — reading and writing frequency policies as JSON.
#include "device/frequency_policy.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace emo {
namespace {

constexpr int64_t kMaxGpu = 1 << 20;  // far beyond any machine
constexpr int64_t kMaxMhz = 100000;   // far beyond any SM clock

}  // namespace

bool ParsePolicy(const std::string& source, const std::string& text, FrequencyPolicy* out, std::string* err) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    *err = source + ": not JSON";
    return false;
  }
  auto fail = [&](const std::string& what) {
    *err = source + ": " + what;
    return false;
  };
  if (!j.is_object() || !j.contains("gpus") || !j["gpus"].is_array()) return fail("field gpus: expected an array");
  *out = FrequencyPolicy{};
  if (j.contains("budget")) {
    if (!j["budget"].is_number() || !(j["budget"].get<double>() >= 0))
      return fail("field budget: expected a non-negative fraction (0.05 = 5 %)");
    out->budget = j["budget"].get<double>();
  }
  if (j.contains("default_iteration_ms")) {
    if (!j["default_iteration_ms"].is_number() || !(j["default_iteration_ms"].get<double>() > 0))
      return fail("field default_iteration_ms: expected a positive number of ms");
    out->default_iteration_ms = j["default_iteration_ms"].get<double>();
  }
  for (size_t i = 0; i < j["gpus"].size(); ++i) {
    const auto& g = j["gpus"][i];
    std::string at = "gpus[" + std::to_string(i) + "]";
    // Integers are read as 64 bits and bounded before narrowing, so 2^32 is an error, not GPU 0.
    if (!g.is_object() || !g.contains("gpu") || !g["gpu"].is_number_integer() || g["gpu"].get<int64_t>() < 0 ||
        g["gpu"].get<int64_t>() > kMaxGpu)
      return fail("field " + at + ".gpu: expected a non-negative integer");
    if (!g.contains("changes") || !g["changes"].is_array()) return fail("field " + at + ".changes: expected an array");
    FrequencyPolicy::Gpu pg;
    pg.gpu = g["gpu"].get<int>();
    for (size_t k = 0; k < g["changes"].size(); ++k) {
      const auto& c = g["changes"][k];
      std::string ck = at + ".changes[" + std::to_string(k) + "]";
      if (!c.is_object() || !c.contains("t_ms") || !c["t_ms"].is_number() || c["t_ms"].get<double>() < 0)
        return fail("field " + ck + ".t_ms: expected a non-negative number");
      if (!c.contains("mhz") || !c["mhz"].is_number_integer() || c["mhz"].get<int64_t>() <= 0 ||
          c["mhz"].get<int64_t>() > kMaxMhz)
        return fail("field " + ck + ".mhz: expected a positive integer of MHz");
      pg.changes.push_back({c["t_ms"].get<double>(), c["mhz"].get<int>()});
    }
    std::stable_sort(pg.changes.begin(), pg.changes.end(),
                     [](const ClockChange& a, const ClockChange& b) { return a.t_ms < b.t_ms; });
    out->gpus.push_back(std::move(pg));
  }
  return true;
}

bool LoadPolicy(const std::string& path, FrequencyPolicy* out, std::string* err) {
  std::ifstream f(path);
  if (!f) {
    *err = path + ": cannot open";
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ParsePolicy(path, ss.str(), out, err);
}

std::string PolicyJson(const FrequencyPolicy& p) {
  nlohmann::ordered_json j;
  if (p.budget >= 0) j["budget"] = p.budget;
  if (p.default_iteration_ms > 0) j["default_iteration_ms"] = p.default_iteration_ms;
  j["gpus"] = nlohmann::ordered_json::array();
  for (const auto& g : p.gpus) {
    nlohmann::ordered_json changes = nlohmann::ordered_json::array();
    for (const ClockChange& c : g.changes) changes.push_back({{"t_ms", c.t_ms}, {"mhz", c.mhz}});
    j["gpus"].push_back({{"gpu", g.gpu}, {"changes", changes}});
  }
  return j.dump(2);
}

}  // namespace emo

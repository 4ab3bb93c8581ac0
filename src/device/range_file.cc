// range_file.cc — JSON for the pack profiler's ranges and results.
#include "device/range_file.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace emo {

std::string RangesJson(const std::vector<KernelRange>& ranges) {
  nlohmann::json j = {{"ranges", nlohmann::json::array()}};
  for (const KernelRange& r : ranges) j["ranges"].push_back({{"gpu", r.gpu}, {"first", r.first}, {"last", r.last}});
  return j.dump();
}

bool ParseRanges(const std::string& json, std::vector<KernelRange>* ranges, std::string* err) {
  ranges->clear();
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("ranges") || !j["ranges"].is_array()) {
    *err = "expected {\"ranges\": [...]}";
    return false;
  }
  for (size_t i = 0; i < j["ranges"].size(); ++i) {
    const nlohmann::json& r = j["ranges"][i];
    if (!r.is_object() || !r.contains("gpu") || !r.contains("first") || !r.contains("last") ||
        !r["gpu"].is_number_integer() || !r["first"].is_number_integer() || !r["last"].is_number_integer()) {
      *err = "range " + std::to_string(i) + ": expected integer gpu, first and last";
      return false;
    }
    const KernelRange k{r["gpu"].get<int>(), r["first"].get<int64_t>(), r["last"].get<int64_t>()};
    if (k.gpu < 0 || k.first < 0 || k.last < k.first) {
      *err = "range " + std::to_string(i) + ": needs gpu >= 0 and 0 <= first <= last";
      return false;
    }
    ranges->push_back(k);
  }
  std::vector<KernelRange> sorted = *ranges;
  std::sort(sorted.begin(), sorted.end(), [](const KernelRange& a, const KernelRange& b) {
    return a.gpu != b.gpu ? a.gpu < b.gpu : a.first < b.first;
  });
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].gpu == sorted[i - 1].gpu && sorted[i].first <= sorted[i - 1].last) {
      *err = "ranges " + std::to_string(sorted[i - 1].first) + ".." + std::to_string(sorted[i - 1].last) + " and " +
             std::to_string(sorted[i].first) + ".." + std::to_string(sorted[i].last) + " overlap on GPU " +
             std::to_string(sorted[i].gpu);
      return false;
    }
  return true;
}

std::string ProfileResultJson(const ProfileResult& r) {
  nlohmann::json j = {
      {"gpu", r.gpu}, {"kernels_seen", r.kernels_seen}, {"passes_per_kernel", r.passes_per_kernel}, {"error", r.error}};
  j["ranges"] = nlohmann::json::array();
  for (const ProfiledRange& p : r.ranges) {
    nlohmann::json m = nlohmann::json::object();
    for (int k = 0; k < kMetrics; ++k) m[MetricName(static_cast<Metric>(k))] = p.metrics.v[k];
    j["ranges"].push_back({{"gpu", p.range.gpu},
                           {"first", p.range.first},
                           {"last", p.range.last},
                           {"kernels", p.metrics.kernels},
                           {"first_kernel", p.first_kernel},
                           {"metrics", m}});
  }
  return j.dump(1);
}

bool ParseProfileResult(const std::string& json, ProfileResult* out, std::string* err) {
  *out = ProfileResult();
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  try {
    if (j.is_discarded() || !j.is_object()) throw std::runtime_error("not a JSON object");
    out->gpu = j.at("gpu").get<int>();
    out->kernels_seen = j.at("kernels_seen").get<int64_t>();
    out->passes_per_kernel = j.value("passes_per_kernel", int64_t{0});
    out->error = j.value("error", "");
    for (const nlohmann::json& r : j.at("ranges")) {
      ProfiledRange p;
      p.range = {r.at("gpu").get<int>(), r.at("first").get<int64_t>(), r.at("last").get<int64_t>()};
      p.metrics.kernels = r.at("kernels").get<int64_t>();
      p.first_kernel = r.at("first_kernel").get<std::string>();
      for (int k = 0; k < kMetrics; ++k)
        p.metrics.v[k] = r.at("metrics").at(MetricName(static_cast<Metric>(k))).get<double>();
      out->ranges.push_back(p);
    }
  } catch (const std::exception& e) {
    *err = std::string("profile result: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace emo

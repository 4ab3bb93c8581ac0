// workload_phases.cc — kind "phases" (workload.h): a job whose work changes mid-run, built from one
// spec per phase and merged into one program that switches each thread's code at the phase starts.
#include "sim/workload_phases.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "sim/device_spec.h"
#include "util/field_name.h"

namespace emo::sim::wl {
namespace {

using nlohmann::json;

constexpr size_t kMaxPhases = 64;
constexpr int64_t kMaxPhaseIterations = 1000000;
// Each phase is bounded as a spec of its kind is (workload_spec.h); together they are bounded too,
// so that 64 of the largest phases cannot take the memory of 64 programs (~50 bytes an instruction).
constexpr size_t kMaxInstructions = 8'000'000;

size_t Instructions(const Program& p) {
  size_t n = 0;
  for (const RankProgram& r : p.ranks)
    for (const Thread& t : r.threads) {
      n += t.code.size();
      for (const auto& c : t.phase_code) n += c.size();
    }
  return n;
}

// Appends phase `q` (built alone) to `out` as its next phase, starting at iteration `start`.
bool Append(Program q, int32_t start, size_t k, Program* out, std::string* err) {
  const std::string where = "field phases[" + std::to_string(k) + "]: ";
  if (q.ranks.size() != out->ranks.size()) {
    *err = where + "runs on " + std::to_string(q.ranks.size()) + " GPUs, phase 0 on " +
           std::to_string(out->ranks.size()) + ": phases of one job share its GPUs";
    return false;
  }
  if (q.device != out->device || q.link_bytes_per_s != out->link_bytes_per_s) {
    *err = where + "runs on " + q.device + " with another link than phase 0 (" + out->device +
           "): phases of one job share its GPUs";
    return false;
  }
  const auto kernels = static_cast<int32_t>(out->kernels.size()), groups = static_cast<int32_t>(out->groups.size()),
             ranges = static_cast<int32_t>(out->ranges.size());
  std::move(q.kernels.begin(), q.kernels.end(), std::back_inserter(out->kernels));
  std::move(q.groups.begin(), q.groups.end(), std::back_inserter(out->groups));
  std::move(q.ranges.begin(), q.ranges.end(), std::back_inserter(out->ranges));
  for (size_t r = 0; r < q.ranks.size(); ++r) {
    RankProgram& from = q.ranks[r];
    RankProgram& to = out->ranks[r];
    if (from.threads.size() != to.threads.size()) {
      *err = where + "rank " + std::to_string(r) + " has " + std::to_string(from.threads.size()) +
             " threads, in phase 0 " + std::to_string(to.threads.size()) +
             ": a phase changes the work, not the threads";
      return false;
    }
    to.streams = std::max(to.streams, from.streams);
    to.events = std::max(to.events, from.events);
    to.flags = std::max(to.flags, from.flags);
    for (size_t t = 0; t < from.threads.size(); ++t) {
      if (from.threads[t].background != to.threads[t].background) {
        *err = where + "rank " + std::to_string(r) + " thread " + std::to_string(t) +
               " runs free of the steps in one phase and not in phase 0: a phase changes the work, not the threads";
        return false;
      }
      std::vector<Instr> code = std::move(from.threads[t].code);
      for (Instr& in : code) {
        if (in.kernel >= 0) in.kernel += kernels;
        if (in.group >= 0) in.group += groups;
        if (in.range >= 0) in.range += ranges;
      }
      to.threads[t].phase_code.push_back(std::move(code));
    }
  }
  out->phase_starts.push_back(start);
  return true;
}

}  // namespace

bool BuildPhases(const json& spec, const std::string& default_name, const BuildPhase& build, Program* out,
                 std::string* err) {
  for (const auto& [key, v] : spec.items())
    if (key != "kind" && key != "name" && key != "description" && key != "device" && key != "phases") {
      *err = "field " + FieldName(key) + ": unknown field of a phases spec (kind, name, description, device, phases)";
      return false;
    }
  const DeviceSpec* device = nullptr;
  if (spec.contains("device")) {
    const json& d = spec["device"];
    device = d.is_string() ? FindDevice(d.get<std::string>()) : nullptr;
    if (device == nullptr) {
      *err = "field device: unknown device " + d.dump();
      return false;
    }
  }
  if (spec.contains("name") && !spec["name"].is_string()) {
    *err = "field name: expected a string";
    return false;
  }
  const auto phases = spec.find("phases");
  if (phases == spec.end() || !phases->is_array() || phases->size() < 2 || phases->size() > kMaxPhases) {
    *err = "field phases: expected an array of 2 to " + std::to_string(kMaxPhases) + " phases";
    return false;
  }
  Program merged;
  int64_t start = 0;
  for (size_t k = 0; k < phases->size(); ++k) {
    const json& ph = (*phases)[k];
    const std::string field = "field phases[" + std::to_string(k) + "]";
    const bool last = k + 1 == phases->size();
    if (!ph.is_object()) {
      *err = field + ": expected an object {\"workload\": ..., \"iterations\": N}";
      return false;
    }
    for (const auto& [key, v] : ph.items())
      if (key != "workload" && key != "iterations") {
        *err = field + "." + FieldName(key) + ": unknown field of a phase (workload, iterations)";
        return false;
      }
    const auto it = ph.find("iterations");
    if (last && it != ph.end()) {
      *err = field + ".iterations: the last phase runs until the run ends";
      return false;
    }
    if (!last && (it == ph.end() || !it->is_number_integer() || it->get<int64_t>() < 1 ||
                  it->get<int64_t>() > kMaxPhaseIterations)) {
      *err = field + ".iterations: expected an integer in 1.." + std::to_string(kMaxPhaseIterations);
      return false;
    }
    const auto w = ph.find("workload");
    if (w == ph.end() || !(w->is_object() || w->is_string())) {
      *err = field + ".workload: expected a workload spec (an object) or its file (a string)";
      return false;
    }
    Program q;
    if (!build(*w, &q, err)) {
      *err = field + ".workload: " + *err;
      return false;
    }
    if (device) q.device = device->name;
    if (k == 0) {
      merged = std::move(q);
    } else if (!Append(std::move(q), static_cast<int32_t>(start), k, &merged, err)) {
      return false;
    }
    if (!last) start += it->get<int64_t>();
    if (Instructions(merged) > kMaxInstructions) {
      *err = field + ": the phases up to this one hold more than " + std::to_string(kMaxInstructions) +
             " instructions; make them smaller or fewer";
      return false;
    }
  }
  merged.name = spec.value("name", default_name.empty() ? std::string("phases-workload") : default_name);
  std::string why;
  if (!Validate(merged, &why)) {
    *err = "internal error: the merged phases are not a valid program: " + why;
    return false;
  }
  *out = std::move(merged);
  return true;
}

}  // namespace emo::sim::wl

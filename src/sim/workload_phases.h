// workload_phases.h — the builder of kind "phases" (workload.h): one spec per phase, merged into one
// program that switches each thread's code where a phase begins. Internal to the workload generators.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "sim/program.h"

namespace emo::sim::wl {

// Builds one phase's program from its "workload" field: a spec object, or the path of a spec file.
using BuildPhase = std::function<bool(const nlohmann::json& workload, Program* out, std::string* err)>;

// Reads a phases spec and merges its phases. False with *err naming the field.
bool BuildPhases(const nlohmann::json& spec, const std::string& default_name, const BuildPhase& build, Program* out,
                 std::string* err);

}  // namespace emo::sim::wl

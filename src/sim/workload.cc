// workload.cc — the entry points of the workload generators (see workload.h): a spec is read by
// the checked reader (workload_spec.h), then built by its kind's builder (workload_kinds.h), or,
// for kind replay, its trace imported and re-executed (replay_workload.h).
#include "sim/workload.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "graph/builder.h"
#include "sim/replay_workload.h"
#include "sim/transformer.h"
#include "sim/workload_kinds.h"
#include "sim/workload_phases.h"
#include "sim/workload_spec.h"
#include "trace/load.h"

namespace emo::sim {
namespace {

using nlohmann::json;

// Builds the program of a spec of kind tp, pp, dp or offload.
bool BuildFromSpec(const wl::Spec& s, Program* out, std::string* err) {
  if (s.kind == wl::Kind::kReplay) {
    *err = "field kind: a replay spec names its trace relative to its file; load it with LoadWorkload";
    return false;
  }
  Program p;
  p.name = s.name;
  p.device = s.device->name;
  p.link_bytes_per_s = s.link_bytes_per_s;
  const wl::Naming nm = wl::MakeNaming(s);
  switch (s.kind) {
    case wl::Kind::kTp:
      wl::BuildTp(s, nm, &p);
      break;
    case wl::Kind::kPp:
      wl::BuildPp(s, nm, &p);
      break;
    case wl::Kind::kDp:
      wl::BuildDp(s, nm, &p);
      break;
    case wl::Kind::kOffload:
      wl::BuildOffload(s, nm, &p);
      break;
    case wl::Kind::kReplay:
      break;  // above
  }
  wl::AddBackgroundThreads(s, &p);
  std::string why;
  if (!Validate(p, &why)) {  // a generator bug, not a spec error
    *err = "internal error: generated program is invalid: " + why;
    return false;
  }
  *out = std::move(p);
  return true;
}

// kind "replay": the trace (a file or directory, relative to the spec at `spec_path`) is imported and
// re-executed (replay_workload.h).
bool LoadReplay(const std::string& spec_path, const wl::Spec& s, Program* out, std::string* err) {
  std::filesystem::path trace_path = s.trace;
  if (trace_path.is_relative()) trace_path = std::filesystem::path(spec_path).parent_path() / trace_path;
  std::vector<std::string> files;
  Trace trace;
  Graph g;
  BuildReport report;
  if (!ExpandTracePaths({trace_path.string()}, &files, err) || !LoadTraces(files, &trace, err) ||
      !BuildGraph(trace, &g, &report, err) || !BuildReplayWorkload(trace, g, s.device->name, out, err))
    return false;
  out->name = s.name;
  return true;
}

bool IsPhases(const json& spec) { return spec.is_object() && spec.value("kind", json()) == "phases"; }

bool LoadFile(const std::string& path, bool in_phase, Program* out, std::string* err);

// A parsed spec of any kind. `path` is its file ("": none, so that a replay spec or a phase given
// by its file cannot be resolved), `stem` its default name; `in_phase`: it is a phase of another.
bool BuildParsed(const json& spec, const std::string& path, const std::string& stem, bool in_phase, Program* out,
                 std::string* err) {
  if (IsPhases(spec)) {
    if (in_phase) {
      *err = "a phase cannot have phases of its own";
      return false;
    }
    auto phase = [&](const json& w, Program* p, std::string* e) {
      if (w.is_object()) return BuildParsed(w, path, "", true, p, e);
      if (path.empty()) {
        *e = "a phase given by its file needs a spec read from a file (LoadWorkload)";
        return false;
      }
      std::filesystem::path file = w.get<std::string>();
      if (file.is_relative()) file = std::filesystem::path(path).parent_path() / file;
      return LoadFile(file.string(), true, p, e);
    };
    return wl::BuildPhases(spec, stem, phase, out, err);
  }
  wl::Spec s;
  return wl::ReadSpec(spec, stem, &s, err) &&
         (s.kind == wl::Kind::kReplay && !path.empty() ? LoadReplay(path, s, out, err) : BuildFromSpec(s, out, err));
}

bool LoadFile(const std::string& path, bool in_phase, Program* out, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *err = path + ": cannot open";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  json spec;
  try {
    spec = json::parse(text.str());
  } catch (const json::parse_error& e) {
    *err = path + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what();
    return false;
  }
  std::string stem = path.substr(path.find_last_of('/') + 1);
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem.resize(stem.size() - 5);
  const bool ok = BuildParsed(spec, path, stem, in_phase, out, err);
  if (!ok) *err = path + ": " + *err;
  return ok;
}

}  // namespace

bool BuildWorkload(const nlohmann::json& spec, Program* out, std::string* err) {
  return BuildParsed(spec, "", "", false, out, err);
}

bool LoadWorkload(const std::string& path, Program* out, std::string* err) { return LoadFile(path, false, out, err); }

}  // namespace emo::sim

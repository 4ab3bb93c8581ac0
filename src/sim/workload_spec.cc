// workload_spec.cc — the checked reader of workload specs (see workload_spec.h): typed field
// access naming each field by its dotted path, the unknown-field check, and the cross-field rules.
#include "sim/workload_spec.h"

#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "util/field_name.h"

namespace emo::sim::wl {
namespace {

using nlohmann::json;

// Reads the fields of one JSON object, naming each by its dotted path in errors. Fields not
// asked for are reported by Finish().
struct Fields {
  const json* obj = nullptr;  // null: the object is absent (every field takes its default)
  std::string prefix;         // "model." etc.
  std::string* err = nullptr;
  std::set<std::string> known;

  const json* Get(const char* key) {
    known.insert(key);
    if (obj == nullptr) return nullptr;
    auto it = obj->find(key);
    return it == obj->end() ? nullptr : &*it;
  }
  bool Fail(const char* key, const std::string& what) {
    *err = "field " + prefix + key + ": " + what;
    return false;
  }
  // An integer in [min, max]; `def` when absent (required when there is none).
  bool Int(const char* key, int64_t min, std::optional<int64_t> def, int64_t* out, int64_t max = kMaxField) {
    const json* v = Get(key);
    const std::string want = min == 1   ? "a positive integer"
                             : min == 0 ? "a non-negative integer"
                                        : "an integer >= " + std::to_string(min);
    if (v == nullptr) {
      if (!def) return Fail(key, "missing (" + want + ")");
      *out = *def;
      return true;
    }
    int64_t x = 0;
    if (v->is_number_integer()) {
      x = v->get<int64_t>();
    } else if (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>() &&
               std::fabs(v->get<double>()) < 9e15) {
      x = static_cast<int64_t>(v->get<double>());
    } else {
      return Fail(key, "expected " + want + " (got " + v->dump() + ")");
    }
    if (x < min) return Fail(key, "expected " + want + " (got " + std::to_string(x) + ")");
    if (x > max) return Fail(key, "at most " + std::to_string(max) + " (got " + std::to_string(x) + ")");
    *out = x;
    return true;
  }
  // A finite number > 0 (or >= 0 when zero_ok).
  bool Number(const char* key, bool zero_ok, double def, double* out) {
    const json* v = Get(key);
    if (v == nullptr) {
      *out = def;
      return true;
    }
    const char* want = zero_ok ? "a non-negative number" : "a positive number";
    if (!v->is_number()) return Fail(key, std::string("expected ") + want + " (got " + v->dump() + ")");
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < 0 || (x == 0 && !zero_ok))
      return Fail(key, std::string("expected ") + want + " (got " + v->dump() + ")");
    *out = x;
    return true;
  }
  // One of `choices`; its index in *out. `def` when absent (required when negative).
  bool Choice(const char* key, std::initializer_list<const char*> choices, int def, int* out) {
    const json* v = Get(key);
    std::string list;
    for (const char* c : choices) list += std::string(list.empty() ? "" : ", ") + c;
    if (v == nullptr) {
      if (def < 0) return Fail(key, "missing (one of " + list + ")");
      *out = def;
      return true;
    }
    if (v->is_string()) {
      int i = 0;
      for (const char* c : choices) {
        if (v->get<std::string>() == c) {
          *out = i;
          return true;
        }
        ++i;
      }
    }
    return Fail(key, "expected one of " + list + " (got " + v->dump() + ")");
  }
  // true or false; `def` when absent.
  bool Bool(const char* key, bool def, bool* out) {
    const json* v = Get(key);
    if (v == nullptr) {
      *out = def;
      return true;
    }
    if (!v->is_boolean()) return Fail(key, "expected true or false (got " + v->dump() + ")");
    *out = v->get<bool>();
    return true;
  }
  // A string; unchanged when absent, or an error `missing` when that is given.
  bool String(const char* key, std::string* out, const char* missing = nullptr) {
    const json* v = Get(key);
    if (v == nullptr) return missing == nullptr || Fail(key, missing);
    if (!v->is_string()) return Fail(key, "expected a string (got " + v->dump() + ")");
    *out = v->get<std::string>();
    return true;
  }
  // The sub-object `key`, read by *out (absent: every field of it takes its default).
  bool Object(const char* key, Fields* out) {
    out->prefix = prefix + key + ".";
    out->err = err;
    const json* v = Get(key);
    if (v == nullptr) return true;
    if (!v->is_object()) return Fail(key, "expected an object (got " + v->dump() + ")");
    out->obj = v;
    return true;
  }
  bool Finish() {
    if (obj == nullptr) return true;
    for (auto it = obj->begin(); it != obj->end(); ++it)
      if (!known.count(it.key())) return Fail(FieldName(it.key()).c_str(), "unknown field");
    return true;
  }
};

bool Divides(int64_t part, int64_t whole) { return part > 0 && whole % part == 0; }

// Divisibility and kind-specific requirements, named by the field that must change.
bool CheckSpec(const Spec& s, std::string* err) {
  const ModelSpec& m = s.model;
  const ParallelSpec& p = s.parallel;
  auto fail = [&](const std::string& field, const std::string& what) {
    *err = "field " + field + ": " + what;
    return false;
  };
  auto n = [](int64_t x) { return std::to_string(x); };
  if (!Divides(m.heads, m.hidden))
    return fail("model.heads", n(m.heads) + " does not divide model.hidden (" + n(m.hidden) + ")");
  if (!Divides(m.kv_heads, m.heads))
    return fail("model.kv_heads", n(m.kv_heads) + " does not divide model.heads (" + n(m.heads) + ")");
  if (m.flash && m.dtype_bytes != 2) return fail("model.attention", "flash attention needs model.dtype_bytes 2");
  const bool moe = m.experts > 0 || m.top_k > 0 || m.expert_ffn > 0 || m.shared_experts > 0 || m.dense_layers > 0;
  if (s.kind != Kind::kOffload && moe) return fail("model.experts", "MoE layers are supported by kind offload only");
  if (s.kind != Kind::kTp && p.tp != 1) return fail("parallel.tp", "only kind tp supports tp > 1");
  if (s.kind != Kind::kPp && p.pp != 1) return fail("parallel.pp", "only kind pp supports pp > 1");
  if (s.kind != Kind::kDp && p.dp != 1) return fail("parallel.dp", "only kind dp supports dp > 1");
  if (s.kind != Kind::kDp && s.step != StepKind::kTrain)
    return fail("step", "only kind dp has eval and checkpoint steps");
  if (s.step != StepKind::kTrain && s.threads.autograd)
    return fail("threads.autograd", "an eval or checkpoint step has no backward pass for the autograd thread");
  if (s.kind == Kind::kOffload && s.threads.autograd)
    return fail("threads.autograd", "kind offload is inference: no backward pass for the autograd thread");
  for (auto [field, degree] : {std::pair{"parallel.tp", p.tp}, {"parallel.pp", p.pp}, {"parallel.dp", p.dp}})
    if (degree > kMaxRanks) return fail(field, "at most " + n(kMaxRanks) + " GPUs (got " + n(degree) + ")");
  if (m.layers * p.microbatches * p.tp * p.dp > kMaxPasses)
    return fail("parallel.microbatches", "model.layers × parallel.microbatches × GPUs above " + n(kMaxPasses) +
                                             ": the program would be too large");
  switch (s.kind) {
    case Kind::kTp:
      if (!Divides(p.tp, m.heads))
        return fail("parallel.tp", n(p.tp) + " does not divide model.heads (" + n(m.heads) + ")");
      if (!Divides(p.tp, m.kv_heads))
        return fail("parallel.tp", n(p.tp) + " does not divide model.kv_heads (" + n(m.kv_heads) + ")");
      if (!Divides(p.tp, m.ffn)) return fail("parallel.tp", n(p.tp) + " does not divide model.ffn (" + n(m.ffn) + ")");
      if (!Divides(p.tp, m.vocab))
        return fail("parallel.tp", n(p.tp) + " does not divide model.vocab (" + n(m.vocab) + ")");
      if (p.chunks != 1 && p.chunks != 2) return fail("parallel.chunks", "expected 1 or 2 (got " + n(p.chunks) + ")");
      if (m.batch < p.chunks)
        return fail("model.batch", "the micro-batch (" + n(m.batch) + ") cannot be split in " + n(p.chunks) +
                                       " chunks; set parallel.chunks to 1");
      break;
    case Kind::kPp:
      if (m.layers < p.pp)
        return fail("parallel.pp", n(p.pp) + " stages need at least as many layers (model.layers " + n(m.layers) + ")");
      break;
    case Kind::kDp:
    case Kind::kReplay:
      break;
    case Kind::kOffload:
      if (m.experts < 1) return fail("model.experts", "kind offload needs a positive integer");
      if (m.top_k < 1 || m.top_k > m.experts)
        return fail("model.top_k", "expected 1 to model.experts (" + n(m.experts) + ")");
      if (m.expert_ffn < 1) return fail("model.expert_ffn", "kind offload needs a positive integer");
      if (m.dense_layers > m.layers) return fail("model.dense_layers", "more than model.layers (" + n(m.layers) + ")");
      break;
  }
  return true;
}

// The device, required.
bool ReadDevice(Fields* top, Spec* s) {
  std::string device;
  if (!top->String("device", &device, "missing (one of the simulated devices)")) return false;
  s->device = FindDevice(device);
  if (s->device == nullptr) {
    std::string known;
    for (const std::string& d : DeviceNames()) known += (known.empty() ? "" : ", ") + d;
    return top->Fail("device", "unknown device \"" + device + "\" (known: " + known + ")");
  }
  return true;
}

}  // namespace

bool ReadSpec(const json& j, const std::string& default_name, Spec* s, std::string* err) {
  if (!j.is_object()) {
    *err = "expected a JSON object (got " + std::string(j.type_name()) + ")";
    return false;
  }
  Fields top{&j, "", err, {}};
  int kind = 0;
  if (!top.Choice("kind", {kKindNames[0], kKindNames[1], kKindNames[2], kKindNames[3], kKindNames[4]}, -1, &kind))
    return false;
  s->kind = static_cast<Kind>(kind);
  s->name = default_name;
  if (!top.String("name", &s->name)) return false;
  if (s->name.empty()) s->name = s->kind == Kind::kReplay ? "replay" : std::string(kKindNames[kind]) + "-workload";
  std::string description;
  if (!top.String("description", &description)) return false;
  if (!ReadDevice(&top, s)) return false;

  if (s->kind == Kind::kReplay) {  // {"kind": "replay", "trace": PATH, "device": NAME, "name": optional}
    if (!top.String("trace", &s->trace, "missing (the path of a trace file or directory)")) return false;
    if (s->trace.empty()) return top.Fail("trace", "expected the path of a trace file or directory (got \"\")");
    return top.Finish();
  }

  s->link_bytes_per_s = s->device->link_bandwidth_bps;
  if (const json* link = top.Get("link")) {
    if (link->is_number()) {
      if (!top.Number("link", false, 0, &s->link_bytes_per_s)) return false;
    } else if (*link == "nvlink") {
      if (s->device->pcie) return top.Fail("link", s->device->name + " has no NVLink");
    } else if (*link == "pcie") {
      // An SXM board's GPUs talking through the host: PCIe 4.0 x16 (PCIe 5.0 on Hopper).
      if (!s->device->pcie) s->link_bytes_per_s = s->device->name.find("H100") != std::string::npos ? 40e9 : 20e9;
    } else {
      return top.Fail("link", "expected \"nvlink\", \"pcie\" or bytes per second (got " + link->dump() + ")");
    }
  }

  Fields model, parallel, cpu, threads;
  if (!top.Object("model", &model) || !top.Object("parallel", &parallel) || !top.Object("cpu", &cpu) ||
      !top.Object("threads", &threads))
    return false;
  if (model.obj == nullptr) return top.Fail("model", "missing (an object)");
  ModelSpec& m = s->model;
  int arch = 0, attention = 0;
  if (!model.Int("layers", 1, {}, &m.layers, kMaxLayers) || !model.Int("hidden", 1, {}, &m.hidden) ||
      !model.Int("heads", 1, {}, &m.heads) || !model.Int("kv_heads", 1, m.heads, &m.kv_heads) ||
      !model.Int("seq", 1, {}, &m.seq) || !model.Int("batch", 1, {}, &m.batch) ||
      !model.Int("vocab", 1, {}, &m.vocab) || !model.Int("ffn", 1, 4 * m.hidden, &m.ffn) ||
      !model.Int("dtype_bytes", 2, 2, &m.dtype_bytes) || !model.Choice("arch", {"gpt", "llama"}, 0, &arch) ||
      !model.Choice("attention", {"flash", "unfused"}, 0, &attention) || !model.Int("experts", 0, 0, &m.experts) ||
      !model.Int("top_k", 0, 0, &m.top_k) || !model.Int("expert_ffn", 0, 0, &m.expert_ffn) ||
      !model.Int("shared_experts", 0, 0, &m.shared_experts) || !model.Int("dense_layers", 0, 0, &m.dense_layers) ||
      !model.Finish())
    return false;
  if (m.dtype_bytes != 2 && m.dtype_bytes != 4)
    return model.Fail("dtype_bytes", "expected 2 or 4 (got " + std::to_string(m.dtype_bytes) + ")");
  m.llama = arch == 1;
  m.flash = attention == 0;

  ParallelSpec& p = s->parallel;
  int partition = 0;
  double bucket_mb = 25;
  if (!parallel.Int("tp", 1, 1, &p.tp) || !parallel.Int("pp", 1, 1, &p.pp) || !parallel.Int("dp", 1, 1, &p.dp) ||
      !parallel.Int("microbatches", 1, 1, &p.microbatches) || !parallel.Int("chunks", 1, 2, &p.chunks) ||
      !parallel.Choice("partition", {"uniform", "parameter"}, 0, &partition) ||
      !parallel.Number("bucket_mb", false, 25, &bucket_mb) || !parallel.Finish())
    return false;
  p.parameter_partition = partition == 1;
  p.bucket_bytes = bucket_mb * 1024 * 1024;

  double gap_us = 6, write_gbps = 2;
  if (!cpu.Number("launch_gap_us", true, 6, &gap_us) || !cpu.Number("gflops", false, 1000, &s->cpu_gflops) ||
      !cpu.Number("write_gbps", false, 2, &write_gbps) || !cpu.Finish())
    return false;
  s->write_bytes_per_s = write_gbps * 1e9;
  int step = 0;
  if (!top.Choice("step", {"train", "eval", "checkpoint"}, 0, &step)) return false;
  s->step = static_cast<StepKind>(step);
  s->launch_gap_ns = gap_us * 1e3;
  double poll_ms = 0, loader_ms = 0;
  if (!threads.Bool("autograd", false, &s->threads.autograd) || !threads.Number("poll_ms", true, 0, &poll_ms) ||
      !threads.Number("loader_ms", true, 0, &loader_ms) || !threads.Finish())
    return false;
  s->threads.poll_ns = poll_ms * 1e6;
  s->threads.loader_ns = loader_ms * 1e6;
  if (!top.Finish()) return false;
  return CheckSpec(*s, err);
}

}  // namespace emo::sim::wl

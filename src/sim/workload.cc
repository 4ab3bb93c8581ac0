// workload.cc — builds simulator programs from JSON workload specs (see workload.h): the spec
// reader, kernel lists of a transformer's pieces, and one program builder per kind.
#include "sim/workload.h"

#include <filesystem>

#include "graph/builder.h"
#include "sim/replay_workload.h"
#include "trace/load.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "sim/device_spec.h"
#include "sim/kernel_model.h"

namespace emo::sim {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// The spec.

enum class Kind { kTp = 0, kPp = 1, kDp = 2, kOffload = 3 };
constexpr const char* kKindNames[] = {"tp", "pp", "dp", "offload"};

struct ModelSpec {
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, seq = 0, batch = 0, vocab = 0;
  int64_t ffn = 0;
  int64_t dtype_bytes = 2;
  bool llama = false;  // RMSNorm, rotary, SwiGLU, no biases (else GPT: LayerNorm, GeLU, biases)
  bool flash = true;   // fused attention kernel (else Q·Kᵀ, softmax, dropout, P·V)
  int64_t experts = 0, top_k = 0, expert_ffn = 0, shared_experts = 0, dense_layers = 0;
};

struct ParallelSpec {
  int64_t tp = 1, pp = 1, dp = 1, microbatches = 1, chunks = 2;
  bool parameter_partition = false;
  double bucket_bytes = 25.0 * 1024 * 1024;
};

struct Spec {
  Kind kind = Kind::kTp;
  std::string name;
  const DeviceSpec* device = nullptr;
  double link_bytes_per_s = 0;
  ModelSpec model;
  ParallelSpec parallel;
  double launch_gap_ns = 6000;
  double cpu_gflops = 1000;
};

constexpr int64_t kMaxField = 1000000000;  // bound of every integer field: no size overflows
constexpr int64_t kMaxRanks = 4096;
constexpr int64_t kMaxPasses = 100000;    // layers × micro-batches × tp × dp: bounds the program's size

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
  // An integer >= min; `def` when absent (required when there is none).
  bool Int(const char* key, int64_t min, std::optional<int64_t> def, int64_t* out) {
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
    if (x > kMaxField) return Fail(key, "at most " + std::to_string(kMaxField) + " (got " + std::to_string(x) + ")");
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
  bool String(const char* key, std::string* out) {
    const json* v = Get(key);
    if (v == nullptr) return true;
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
      if (!known.count(it.key())) return Fail(it.key().c_str(), "unknown field");
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
  if (m.flash && m.dtype_bytes != 2)
    return fail("model.attention", "flash attention needs model.dtype_bytes 2");
  const bool moe = m.experts > 0 || m.top_k > 0 || m.expert_ffn > 0 || m.shared_experts > 0 ||
                   m.dense_layers > 0;
  if (s.kind != Kind::kOffload && moe)
    return fail("model.experts", "MoE layers are supported by kind offload only");
  if (s.kind != Kind::kTp && p.tp != 1) return fail("parallel.tp", "only kind tp supports tp > 1");
  if (s.kind != Kind::kPp && p.pp != 1) return fail("parallel.pp", "only kind pp supports pp > 1");
  if (s.kind != Kind::kDp && p.dp != 1) return fail("parallel.dp", "only kind dp supports dp > 1");
  for (auto [field, degree] : {std::pair{"parallel.tp", p.tp}, {"parallel.pp", p.pp}, {"parallel.dp", p.dp}})
    if (degree > kMaxRanks) return fail(field, "at most " + n(kMaxRanks) + " GPUs (got " + n(degree) + ")");
  if (m.layers * p.microbatches * p.tp * p.dp > kMaxPasses)
    return fail("parallel.microbatches", "model.layers × parallel.microbatches × GPUs above " +
                                             n(kMaxPasses) + ": the program would be too large");
  switch (s.kind) {
    case Kind::kTp:
      if (!Divides(p.tp, m.heads))
        return fail("parallel.tp", n(p.tp) + " does not divide model.heads (" + n(m.heads) + ")");
      if (!Divides(p.tp, m.kv_heads))
        return fail("parallel.tp", n(p.tp) + " does not divide model.kv_heads (" + n(m.kv_heads) + ")");
      if (!Divides(p.tp, m.ffn))
        return fail("parallel.tp", n(p.tp) + " does not divide model.ffn (" + n(m.ffn) + ")");
      if (!Divides(p.tp, m.vocab))
        return fail("parallel.tp", n(p.tp) + " does not divide model.vocab (" + n(m.vocab) + ")");
      if (p.chunks != 1 && p.chunks != 2)
        return fail("parallel.chunks", "expected 1 or 2 (got " + n(p.chunks) + ")");
      if (m.batch < p.chunks)
        return fail("model.batch", "the micro-batch (" + n(m.batch) + ") cannot be split in " +
                                       n(p.chunks) + " chunks; set parallel.chunks to 1");
      break;
    case Kind::kPp:
      if (m.layers < p.pp)
        return fail("parallel.pp", n(p.pp) + " stages need at least as many layers (model.layers " +
                                       n(m.layers) + ")");
      break;
    case Kind::kDp:
      break;
    case Kind::kOffload:
      if (m.experts < 1) return fail("model.experts", "kind offload needs a positive integer");
      if (m.top_k < 1 || m.top_k > m.experts)
        return fail("model.top_k", "expected 1 to model.experts (" + n(m.experts) + ")");
      if (m.expert_ffn < 1) return fail("model.expert_ffn", "kind offload needs a positive integer");
      if (m.dense_layers > m.layers)
        return fail("model.dense_layers", "more than model.layers (" + n(m.layers) + ")");
      break;
  }
  return true;
}

bool ParseSpec(const json& j, Spec* s, std::string* err) {
  if (!j.is_object()) {
    *err = "expected a JSON object (got " + std::string(j.type_name()) + ")";
    return false;
  }
  Fields top{&j, "", err, {}};
  int kind = 0;
  if (!top.Choice("kind", {kKindNames[0], kKindNames[1], kKindNames[2], kKindNames[3]}, -1, &kind))
    return false;
  s->kind = static_cast<Kind>(kind);
  if (!top.String("name", &s->name)) return false;
  std::string description;
  if (!top.String("description", &description)) return false;

  std::string device;
  if (top.Get("device") == nullptr) return top.Fail("device", "missing (one of the simulated devices)");
  if (!top.String("device", &device)) return false;
  s->device = FindDevice(device);
  if (s->device == nullptr) {
    std::string known;
    for (const std::string& d : DeviceNames()) known += (known.empty() ? "" : ", ") + d;
    return top.Fail("device", "unknown device \"" + device + "\" (known: " + known + ")");
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

  Fields model, parallel, cpu;
  if (!top.Object("model", &model) || !top.Object("parallel", &parallel) || !top.Object("cpu", &cpu))
    return false;
  if (model.obj == nullptr) return top.Fail("model", "missing (an object)");
  ModelSpec& m = s->model;
  int arch = 0, attention = 0;
  if (!model.Int("layers", 1, {}, &m.layers) || !model.Int("hidden", 1, {}, &m.hidden) ||
      !model.Int("heads", 1, {}, &m.heads) || !model.Int("kv_heads", 1, m.heads, &m.kv_heads) ||
      !model.Int("seq", 1, {}, &m.seq) || !model.Int("batch", 1, {}, &m.batch) ||
      !model.Int("vocab", 1, {}, &m.vocab) || !model.Int("ffn", 1, 4 * m.hidden, &m.ffn) ||
      !model.Int("dtype_bytes", 2, 2, &m.dtype_bytes) ||
      !model.Choice("arch", {"gpt", "llama"}, 0, &arch) ||
      !model.Choice("attention", {"flash", "unfused"}, 0, &attention) ||
      !model.Int("experts", 0, 0, &m.experts) || !model.Int("top_k", 0, 0, &m.top_k) ||
      !model.Int("expert_ffn", 0, 0, &m.expert_ffn) ||
      !model.Int("shared_experts", 0, 0, &m.shared_experts) ||
      !model.Int("dense_layers", 0, 0, &m.dense_layers) || !model.Finish())
    return false;
  if (m.dtype_bytes != 2 && m.dtype_bytes != 4)
    return model.Fail("dtype_bytes", "expected 2 or 4 (got " + std::to_string(m.dtype_bytes) + ")");
  m.llama = arch == 1;
  m.flash = attention == 0;

  ParallelSpec& p = s->parallel;
  int partition = 0;
  double bucket_mb = 25;
  if (!parallel.Int("tp", 1, 1, &p.tp) || !parallel.Int("pp", 1, 1, &p.pp) ||
      !parallel.Int("dp", 1, 1, &p.dp) || !parallel.Int("microbatches", 1, 1, &p.microbatches) ||
      !parallel.Int("chunks", 1, 2, &p.chunks) ||
      !parallel.Choice("partition", {"uniform", "parameter"}, 0, &partition) ||
      !parallel.Number("bucket_mb", false, 25, &bucket_mb) || !parallel.Finish())
    return false;
  p.parameter_partition = partition == 1;
  p.bucket_bytes = bucket_mb * 1024 * 1024;

  double gap_us = 6;
  if (!cpu.Number("launch_gap_us", true, 6, &gap_us) ||
      !cpu.Number("gflops", false, 1000, &s->cpu_gflops) || !cpu.Finish())
    return false;
  s->launch_gap_ns = gap_us * 1e3;
  if (!top.Finish()) return false;
  if (s->name.empty()) s->name = std::string(kKindNames[kind]) + "-workload";
  return CheckSpec(*s, err);
}

// ---------------------------------------------------------------------------------------------
// Kernels and their profiler names.

// Program::kernels with reuse: a kernel of the same name and traits is stored once.
struct KernelTable {
  Program* program = nullptr;
  std::map<std::string, int32_t> index;  // name + traits → index into program->kernels

  int32_t Add(const std::string& name, const KernelTraits& t) {
    const double v[] = {t.tensor_flop, t.fp32_flop, t.fp64_flop, t.int_ops, t.sfu_ops,
                        t.lsu_ops, t.dram_read_bytes, t.dram_write_bytes, t.l2_bytes, t.l1_bytes,
                        t.shared_bytes, t.link_bytes, t.occupancy, t.overhead_s};
    std::string key = name;
    char buf[40];
    for (double x : v) {
      std::snprintf(buf, sizeof buf, "|%a", x);
      key += buf;
    }
    auto [it, added] = index.emplace(key, static_cast<int32_t>(program->kernels.size()));
    if (added) program->kernels.push_back({name, t});
    return it->second;
  }
};

// How kernels are named on this device and data type.
struct Naming {
  bool hopper = false;
  bool nvlink = false;      // NCCL uses its LL128 protocol on NVLink only
  double sm_count = 1;
  int64_t dtype_bytes = 2;
  std::string torch;        // {T}: c10::BFloat16 | float
  std::string cutlass;      // {C}: cutlass::bfloat16_t
  std::string nccl;         // bfloat16 | float
  std::string head_dim;     // {D}
};

Naming MakeNaming(const Spec& s) {
  Naming nm;
  nm.hopper = s.device->name.find("H100") != std::string::npos;
  nm.nvlink = !s.device->pcie && s.link_bytes_per_s >= 100e9;
  nm.sm_count = s.device->sm_count;
  nm.dtype_bytes = s.model.dtype_bytes;
  nm.torch = nm.dtype_bytes == 2 ? "c10::BFloat16" : "float";
  nm.cutlass = "cutlass::bfloat16_t";
  nm.nccl = nm.dtype_bytes == 2 ? "bfloat16" : "float";
  nm.head_dim = std::to_string(s.model.hidden / s.model.heads);
  return nm;
}

// `pattern` with {T}, {C} and {D} replaced.
std::string Subst(const std::string& pattern, const Naming& nm) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{' && i + 2 < pattern.size() && pattern[i + 2] == '}') {
      const char c = pattern[i + 1];
      if (c == 'T' || c == 'C' || c == 'D') {
        out += c == 'T' ? nm.torch : c == 'C' ? nm.cutlass : nm.head_dim;
        i += 2;
        continue;
      }
    }
    out += pattern[i];
  }
  return out;
}

// PyTorch's vectorized elementwise kernel around a functor with `arity` tensors.
std::string VecKernel(const std::string& functor, int arity) {
  const std::string array = "at::detail::Array<char*, " + std::to_string(arity) + ">";
  return "void at::native::vectorized_elementwise_kernel<4, " + functor + ", " + array + " >(int, " +
         functor + ", " + array + ")";
}
std::string ReduceKernel(const std::string& op) {
  return "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<" + op + ", unsigned int, float, 4> >(at::native::ReduceOp<" + op + ", unsigned int, float, 4>)";
}

const std::string kAdd = VecKernel("at::native::CUDAFunctor_add<{T}>", 3);
const std::string kMul = VecKernel("at::native::BinaryFunctor<{T}, {T}, {T}, at::native::binary_internal::MulFunctor<float> >", 3);
const std::string kFill = VecKernel("at::native::FillFunctor<{T}>", 1);
const std::string kCast = VecKernel("at::native::(anonymous namespace)::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}", 2);
const std::string kDropoutAdd = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<{T}, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<{T} const, unsigned int>, at::cuda::detail::TensorInfo<{T}, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)";
const std::string kDropoutBwd = VecKernel("at::native::(anonymous namespace)::masked_scale_kernel<bool, {T}, {T}>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda({T}, bool)#1}", 3);
const std::string kLayerNorm = "void cuApplyLayerNorm<{T}, float, {T}>({T}*, float*, float*, {T} const*, int, int, float, {T} const*, {T} const*)";
const std::string kRmsNorm = "void cuApplyRMSNorm<{T}, float, {T}>({T}*, float*, {T} const*, int, int, float, {T} const*)";
const std::string kNormGradInput = "void cuComputeGradInput<{T}, float, {T}>({T} const*, {T} const*, int, int, float const*, float const*, float, {T} const*, {T}*)";
const std::string kNormGradGamma = "void cuComputePartGradGammaBeta<{T}, float, {T}>({T} const*, {T} const*, int, int, float const*, float const*, float, float*, float*)";
const std::string kGelu = VecKernel("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda({T})#1}", 2);
const std::string kGeluBwd = VecKernel("at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda({T}, {T})#1}", 3);
const std::string kSilu = VecKernel("at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda({T})#1}", 2);
const std::string kSiluBwd = VecKernel("at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda({T}, {T})#1}", 3);
const std::string kRope = "void fused_rope_forward<{T}>(int, int, int, int, int, int, int, int, int, int, {T} const*, float const*, {T}*)";
const std::string kRopeBwd = "void fused_rope_backward<{T}>(int, int, int, int, int, int, int, int, int, int, {T} const*, float const*, {T}*)";
const std::string kBiasGrad = ReduceKernel("{T}, at::native::func_wrapper_t<{T}, at::native::sum_functor<{T}, float, {T}>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>");
const std::string kFlashFwd = "void flash_fwd_kernel<Flash_fwd_kernel_traits<{D}, 128, 64, 4, false, false, {C}, Flash_kernel_traits<{D}, 128, 64, 4, {C}> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)";
const std::string kFlashBwdPrep = "void flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<{D}, 64, 128, 8, 2, 4, 2, false, false, {C}, Flash_kernel_traits<{D}, 64, 128, 8, {C}> > >(Flash_bwd_params)";
const std::string kFlashBwd = "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<{D}, 64, 128, 8, 2, 4, 2, false, false, {C}, Flash_kernel_traits<{D}, 64, 128, 8, {C}> >, true, false, false, false, false, true, false, false>(Flash_bwd_params)";
const std::string kFlashBwdConvert = "void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<{D}, 64, 128, 8, 2, 4, 2, false, false, {C}, Flash_kernel_traits<{D}, 64, 128, 8, {C}> > >(Flash_bwd_params, int)";
const std::string kFlashDecode = "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<{D}, 64, 128, 4, false, false, {C}, Flash_kernel_traits<{D}, 64, 128, 4, {C}> >, false, true, false, false, true, false, true, false>(Flash_fwd_params)";
const std::string kFlashDecodeCombine = "void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<{D}, 64, 128, 4, false, false, {C}, Flash_kernel_traits<{D}, 64, 128, 4, {C}> >, 4, 3, false>(Flash_fwd_params)";
const std::string kSoftmax = "void (anonymous namespace)::scaled_upper_triang_masked_softmax_warp_forward<{T}, {T}, float, 11>({T}*, {T} const*, float, int, int, int)";
const std::string kSoftmaxBwd = "void (anonymous namespace)::scaled_upper_triang_masked_softmax_warp_backward<{T}, {T}, float, 11>({T}*, {T}*, {T} const*, float, int, int, int)";
const std::string kAttnDropout = kDropoutAdd;
const std::string kEmbedding = "void at::native::(anonymous namespace)::indexSelectLargeIndex<{T}, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<{T}, unsigned int>, at::cuda::detail::TensorInfo<{T} const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)";
const std::string kEmbeddingMask = VecKernel("at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda({T}, bool)#1}", 3);
const std::string kEmbeddingBwd = "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<{T}, float, long>(long const*, {T} const*, float*, int, long, int, int)";
const std::string kLogitsMax = ReduceKernel("float, at::native::MaxOps<float>");
const std::string kLogitsSum = ReduceKernel("float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>");
const std::string kLogitsSub = VecKernel("at::native::CUDAFunctor_sub<float>", 3);
const std::string kLogitsGather = "void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&)::{lambda(int)#1}>(long, at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} const&)::{lambda(int)#1})";
const std::string kLogitsExp = VecKernel("at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}", 2);
const std::string kLoss = VecKernel("at::native::(anonymous namespace)::log_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}", 2);
const std::string kLossGrad = VecKernel("at::native::(anonymous namespace)::div_true_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float, float)#1}", 3);
const std::string kL2Norm = "void multi_tensor_apply_kernel<TensorListMetadata<1>, L2NormFunctor<{T}, float>, float*, float*, bool, int>(long, int volatile*, TensorListMetadata<1>&, L2NormFunctor<{T}, float>, float*, float*, bool, int)";
const std::string kAdam = "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<{T}, float, long>, float, float, float, float, float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>&, AdamFunctor<{T}, float, long>, float, float, float, float, float, float, adamMode_t, float)";
const std::string kRouterSoftmax = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, {T}, float, {T}, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>({T}*, {T} const*, int)";
const std::string kTopK = "void at::native::sbtopk::gatherTopK<{T}, unsigned int, 2, false>(at::cuda::detail::TensorInfo<{T} const, unsigned int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<{T}, unsigned int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, {T}*)";
const std::string kArgmax = ReduceKernel("float, at::native::ArgMaxOps<float>");
const std::string kSendRecv = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t";

// cuBLAS's name for a GEMM of an m×n output; `layout` is tn (forward), nn (data gradient) or nt
// (weight gradient). The tile follows the number of output tiles per SM, as cuBLAS's heuristic.
std::string GemmName(const Naming& nm, double m, double n, double batch, const char* layout) {
  const double tiles = batch * std::ceil(m / 128) * std::ceil(n / 128);
  const double sms = nm.sm_count;
  if (nm.dtype_bytes == 4) return std::string("ampere_sgemm_") + (tiles >= sms ? "128x128_" : "128x64_") + layout;
  if (nm.hopper) {
    const char* tile = tiles >= 2 * sms ? "128x256x64_warpgroupsize2x1x1"
                       : tiles >= sms / 2 ? "128x128x64_warpgroupsize1x1x1"
                                          : "64x128x64_warpgroupsize1x1x1";
    return std::string("sm90_xmma_gemm_bf16bf16_bf16f32_f32_") + layout + "_n_tilesize" + tile +
           "_execute_segment_k_off_kernel__5x_cublas";
  }
  const char* tile = tiles >= 4 * sms ? "256x128_ldg8_f2f_stages_64x3"
                     : tiles >= sms   ? "128x128_ldg8_f2f_stages_64x3"
                     : tiles >= sms / 4 ? "128x64_ldg8_f2f_stages_64x4"
                                        : "64x64_sliced1x2_ldg8_f2f_stages_64x5";
  return std::string("ampere_bf16_s16816gemm_bf16_") + tile + "_" + layout;
}

// NCCL's ring all-reduce kernel for a message size: LL for small messages, LL128 for medium ones
// on NVLink, SIMPLE otherwise.
std::string AllReduceName(const Naming& nm, double bytes, const char* op, const std::string& type) {
  const char* proto = bytes <= 64 * 1024 ? "LL" : nm.nvlink && bytes <= 16 * 1024 * 1024 ? "LL128" : "SIMPLE";
  return std::string("ncclKernel_AllReduce_RING_") + proto + "_" + op + "_" + type;
}

// A kernel's work scaled by f (the same occupancy and launch overhead).
KernelTraits Scaled(KernelTraits k, double f) {
  for (double* x : {&k.tensor_flop, &k.fp32_flop, &k.fp64_flop, &k.int_ops, &k.sfu_ops, &k.lsu_ops,
                    &k.dram_read_bytes, &k.dram_write_bytes, &k.l2_bytes, &k.l1_bytes,
                    &k.shared_bytes, &k.link_bytes})
    *x *= f;
  return k;
}

// NCCL point-to-point transfer of `bytes` each way it goes: read from one GPU, written on the other.
KernelTraits SendRecvKernel(double bytes) {
  KernelTraits k = MemcpyKernel(bytes);
  k.link_bytes = bytes;
  k.occupancy = 0.25;
  k.overhead_s = 10e-6;
  return k;
}

// ---------------------------------------------------------------------------------------------
// A transformer's kernels, as runs ("phases") separated by tensor-parallel all-reduces.

struct Step {
  int32_t kernel = -1;
  double grad_params = 0;  // parameters whose gradient this kernel completes (for DDP buckets)
};

// Kernels that end in a tensor-parallel all-reduce of their output (none when tp = 1).
struct Phase {
  std::vector<Step> compute;     // stream 0; the first ones consume the previous all-reduce
  int32_t allreduce_kernel = -1;
  double allreduce_bytes = 0;
  std::vector<Step> overlap;     // after the all-reduce is issued and independent of it
};

// A model slice's passes over one micro-batch (or Domino chunk).
struct Passes {
  std::vector<Phase> forward, backward;
};

// What every kernel builder needs.
struct Ctx {
  const ModelSpec& m;
  const Naming& nm;
  KernelTable* kt;
  int64_t tp;
};

// Shapes of one rank's shard of a layer for `batch` sequences.
struct Dims {
  double b, s, t, h, d, heads, kv, qkv, ffn, up, vocab, B;
};

Dims MakeDims(const Ctx& c, double batch) {
  const double tp = static_cast<double>(c.tp);
  Dims d;
  d.b = batch;
  d.s = static_cast<double>(c.m.seq);
  d.t = d.b * d.s;
  d.h = static_cast<double>(c.m.hidden);
  d.d = d.h / static_cast<double>(c.m.heads);
  d.heads = static_cast<double>(c.m.heads) / tp;
  d.kv = static_cast<double>(c.m.kv_heads) / tp;
  d.qkv = (d.heads + 2 * d.kv) * d.d;
  d.ffn = static_cast<double>(c.m.ffn) / tp;
  d.up = c.m.llama ? 2 * d.ffn : d.ffn;  // SwiGLU's gate and up projections in one GEMM
  d.vocab = static_cast<double>(c.m.vocab) / tp;
  d.B = static_cast<double>(c.m.dtype_bytes);
  return d;
}

Step K(const Ctx& c, const std::string& pattern, const KernelTraits& t, double grad = 0) {
  return {c.kt->Add(Subst(pattern, c.nm), t), grad};
}
// Y[m×n] = X[m×k]·W; layout as GemmName.
Step Gemm(const Ctx& c, double m, double n, double k, const char* layout, double grad = 0,
          double batch = 1) {
  const bool tensor = c.m.dtype_bytes == 2;
  return {c.kt->Add(GemmName(c.nm, m, n, batch, layout),
                    GemmKernel(m, n, k, static_cast<double>(c.m.dtype_bytes), tensor, batch)),
          grad};
}
// A linear layer's backward: data gradient (nn), weight gradient (nt), bias gradient (GPT).
Step DataGrad(const Ctx& c, double rows, double out, double in) { return Gemm(c, rows, in, out, "nn"); }
void WeightGrad(const Ctx& c, const Dims& d, double rows, double out, double in, bool bias,
                std::vector<Step>* steps) {
  steps->push_back(Gemm(c, out, in, rows, "nt", out * in));
  if (bias && !c.m.llama) steps->push_back(K(c, kBiasGrad, ReductionKernel(rows * out, d.B), out));
}

void EndWithAllReduce(const Ctx& c, Phase* ph, double bytes, const char* op, bool fp32) {
  if (c.tp <= 1) return;
  const double elem = fp32 ? 4 : static_cast<double>(c.m.dtype_bytes);
  ph->allreduce_kernel = c.kt->Add(AllReduceName(c.nm, bytes, op, fp32 ? "float" : c.nm.nccl),
                                   AllReduceKernel(bytes, static_cast<double>(c.tp), elem));
  ph->allreduce_bytes = bytes;
}

double NormParams(const Ctx& c) { return (c.m.llama ? 1 : 2) * static_cast<double>(c.m.hidden); }

Step ResidualAdd(const Ctx& c, const Dims& d) {
  if (c.m.llama) return K(c, kAdd, ElementwiseKernel(d.t * d.h, 2 * d.B, d.B, 1));
  return K(c, kDropoutAdd, ElementwiseKernel(d.t * d.h, 3 * d.B, d.B + 1, 4));  // bias+dropout+add
}
Step Norm(const Ctx& c, const Dims& d) {
  return K(c, c.m.llama ? kRmsNorm : kLayerNorm, LayerNormKernel(d.t, d.h, d.B));
}
// A norm's backward: input gradient, weight gradient, and the residual branch's gradient added.
void NormBackward(const Ctx& c, const Dims& d, std::vector<Step>* steps) {
  steps->push_back(K(c, kNormGradInput, ElementwiseKernel(d.t * d.h, 2 * d.B, d.B, 12)));
  steps->push_back(K(c, kNormGradGamma, ReductionKernel((c.m.llama ? 1 : 2) * d.t * d.h, d.B), NormParams(c)));
  steps->push_back(K(c, kAdd, ElementwiseKernel(d.t * d.h, 2 * d.B, d.B, 1)));
}

Phase EmbeddingForward(const Ctx& c, const Dims& d) {
  Phase ph;
  KernelTraits lookup = ElementwiseKernel(d.t * d.h, d.B, d.B, 0);
  lookup.dram_read_bytes += d.t * 8;  // token ids
  ph.compute.push_back(K(c, kEmbedding, lookup));
  if (c.tp > 1)  // vocabulary-parallel: zero the rows of tokens outside this rank's shard
    ph.compute.push_back(K(c, kEmbeddingMask, ElementwiseKernel(d.t * d.h, d.B + 1, d.B, 1)));
  EndWithAllReduce(c, &ph, d.t * d.h * d.B, "Sum", false);
  return ph;
}

// An MLP of `width` over d.t tokens: up projection (SwiGLU: gate and up in one GEMM),
// activation, down projection.
void Mlp(const Ctx& c, const Dims& d, double width, std::vector<Step>* steps) {
  const double n = d.t * width;
  steps->push_back(Gemm(c, d.t, c.m.llama ? 2 * width : width, d.h, "tn"));
  if (c.m.llama) {
    KernelTraits silu = ElementwiseKernel(n, d.B, d.B, 4);
    silu.sfu_ops = n;
    steps->push_back(K(c, kSilu, silu));
    steps->push_back(K(c, kMul, ElementwiseKernel(n, 2 * d.B, d.B, 1)));
  } else {
    KernelTraits gelu = ElementwiseKernel(n, d.B, d.B, 10);
    gelu.sfu_ops = n;  // tanh
    steps->push_back(K(c, kGelu, gelu));
  }
  steps->push_back(Gemm(c, d.t, d.h, width, "tn"));
}

// One layer forward: attention block, then MLP block, each ending in a row-parallel GEMM and its
// all-reduce. `residual_in`: the block's input still needs the previous block's residual add.
void LayerForward(const Ctx& c, const Dims& d, bool residual_in, std::vector<Phase>* out) {
  Phase attn;
  if (residual_in) attn.compute.push_back(ResidualAdd(c, d));
  attn.compute.push_back(Norm(c, d));
  attn.compute.push_back(Gemm(c, d.t, d.qkv, d.h, "tn"));
  if (c.m.llama)
    attn.compute.push_back(K(c, kRope, ElementwiseKernel(d.t * (d.heads + d.kv) * d.d, d.B, d.B, 6)));
  if (c.m.flash) {
    attn.compute.push_back(K(c, kFlashFwd, AttentionKernels(d.b, d.heads, d.s, d.d, d.B, true)[0]));
  } else {
    const std::vector<KernelTraits> ks = AttentionKernels(d.b, d.heads, d.s, d.d, d.B, false);
    attn.compute.push_back({c.kt->Add(GemmName(c.nm, d.s, d.s, d.b * d.heads, "tn"), ks[0]), 0});
    attn.compute.push_back(K(c, kSoftmax, ks[1]));
    attn.compute.push_back(K(c, kAttnDropout, ks[2]));
    attn.compute.push_back({c.kt->Add(GemmName(c.nm, d.s, d.d, d.b * d.heads, "nn"), ks[3]), 0});
  }
  attn.compute.push_back(Gemm(c, d.t, d.h, d.heads * d.d, "tn"));  // output projection
  EndWithAllReduce(c, &attn, d.t * d.h * d.B, "Sum", false);
  out->push_back(attn);

  Phase mlp;
  mlp.compute.push_back(ResidualAdd(c, d));
  mlp.compute.push_back(Norm(c, d));
  Mlp(c, d, d.ffn, &mlp.compute);
  EndWithAllReduce(c, &mlp, d.t * d.h * d.B, "Sum", false);
  out->push_back(mlp);
}

// Final norm, vocabulary-parallel logits and Megatron's vocabulary-parallel cross entropy: the
// logits' max, the target logits and the sum of exponentials each all-reduced (FP32, per token).
void HeadForward(const Ctx& c, const Dims& d, std::vector<Phase>* out) {
  const double logits = d.t * d.vocab;
  Phase a;
  a.compute.push_back(ResidualAdd(c, d));
  a.compute.push_back(Norm(c, d));
  a.compute.push_back(Gemm(c, d.t, d.vocab, d.h, "tn"));
  a.compute.push_back(K(c, kLogitsMax, ReductionKernel(logits, d.B)));
  EndWithAllReduce(c, &a, d.t * 4, "Max", true);
  Phase b;
  b.compute.push_back(K(c, kLogitsSub, ElementwiseKernel(logits, d.B, 4, 1)));
  b.compute.push_back(K(c, kLogitsGather, ElementwiseKernel(d.t, 12, 4, 1)));
  EndWithAllReduce(c, &b, d.t * 4, "Sum", true);
  Phase e;
  KernelTraits exp = ElementwiseKernel(logits, 4, 4, 2);
  exp.sfu_ops = logits;
  e.compute.push_back(K(c, kLogitsExp, exp));
  e.compute.push_back(K(c, kLogitsSum, ReductionKernel(logits, 4)));
  EndWithAllReduce(c, &e, d.t * 4, "Sum", true);
  Phase loss;
  KernelTraits log = ElementwiseKernel(d.t, 8, 4, 4);
  log.sfu_ops = d.t;
  loss.compute.push_back(K(c, kLoss, log));
  loss.compute.push_back(K(c, kLogitsSum, ReductionKernel(d.t, 4)));
  for (Phase* ph : {&a, &b, &e, &loss}) out->push_back(*ph);
}

Phase HeadBackward(const Ctx& c, const Dims& d) {
  Phase ph;
  ph.compute.push_back(K(c, kLossGrad, ElementwiseKernel(d.t * d.vocab, 4, d.B, 3)));  // softmax − one-hot
  ph.compute.push_back(DataGrad(c, d.t, d.vocab, d.h));
  EndWithAllReduce(c, &ph, d.t * d.h * d.B, "Sum", false);
  WeightGrad(c, d, d.t, d.vocab, d.h, false, &ph.overlap);
  return ph;
}

// One layer backward: MLP block, then attention block, each ending in the column-parallel
// data-gradient GEMM whose input gradient is all-reduced while its weight gradient is computed.
// `norm_above`: the block above's norm backward still has to run here (it does unless this is a
// pipeline stage's top layer without the output layer).
void LayerBackward(const Ctx& c, const Dims& d, bool norm_above, std::vector<Phase>* out) {
  Phase mlp;
  if (norm_above) NormBackward(c, d, &mlp.compute);
  if (!c.m.llama) mlp.compute.push_back(K(c, kDropoutBwd, ElementwiseKernel(d.t * d.h, d.B + 1, d.B, 2)));
  mlp.compute.push_back(DataGrad(c, d.t, d.h, d.ffn));
  WeightGrad(c, d, d.t, d.h, d.ffn, true, &mlp.compute);
  if (c.m.llama) {
    mlp.compute.push_back(K(c, kMul, ElementwiseKernel(d.t * d.ffn, 3 * d.B, 2 * d.B, 2)));
    mlp.compute.push_back(K(c, kSiluBwd, ElementwiseKernel(d.t * d.ffn, 2 * d.B, d.B, 8)));
  } else {
    mlp.compute.push_back(K(c, kGeluBwd, ElementwiseKernel(d.t * d.ffn, 2 * d.B, d.B, 14)));
  }
  mlp.compute.push_back(DataGrad(c, d.t, d.up, d.h));
  EndWithAllReduce(c, &mlp, d.t * d.h * d.B, "Sum", false);
  WeightGrad(c, d, d.t, d.up, d.h, true, &mlp.overlap);
  out->push_back(mlp);

  Phase attn;
  NormBackward(c, d, &attn.compute);
  if (!c.m.llama) attn.compute.push_back(K(c, kDropoutBwd, ElementwiseKernel(d.t * d.h, d.B + 1, d.B, 2)));
  attn.compute.push_back(DataGrad(c, d.t, d.h, d.heads * d.d));
  WeightGrad(c, d, d.t, d.h, d.heads * d.d, true, &attn.compute);
  const double bh = d.b * d.heads, scores = bh * d.s * d.s;
  if (c.m.flash) {
    const double qkvo = bh * d.s * d.d;
    KernelTraits prep = ElementwiseKernel(qkvo, 2 * d.B, 0, 2);
    prep.dram_write_bytes = bh * d.s * 4;
    attn.compute.push_back(K(c, kFlashBwdPrep, prep));
    // FlashAttention-2's backward does 2.5× the forward's matrix work (five products, one a recompute).
    attn.compute.push_back(K(c, kFlashBwd, Scaled(AttentionKernels(d.b, d.heads, d.s, d.d, d.B, true)[0], 2.5)));
    attn.compute.push_back(K(c, kFlashBwdConvert, ElementwiseKernel(qkvo, 4, d.B, 1)));
  } else {
    auto batched = [&](double m, double n, double k, const char* layout) {
      return Step{c.kt->Add(GemmName(c.nm, m, n, bh, layout), GemmKernel(m, n, k, d.B, d.B == 2, bh)), 0};
    };
    attn.compute.push_back(batched(d.s, d.s, d.d, "nt"));  // dP = dO·Vᵀ
    attn.compute.push_back(batched(d.s, d.d, d.s, "tn"));  // dV = Pᵀ·dO
    attn.compute.push_back(K(c, kDropoutBwd, ElementwiseKernel(scores, d.B + 1, d.B, 2)));
    attn.compute.push_back(K(c, kSoftmaxBwd, ElementwiseKernel(scores, 2 * d.B, d.B, 4)));
    attn.compute.push_back(batched(d.s, d.d, d.s, "nn"));  // dQ = dS·K
    attn.compute.push_back(batched(d.s, d.d, d.s, "tn"));  // dK = dSᵀ·Q
  }
  if (c.m.llama)
    attn.compute.push_back(K(c, kRopeBwd, ElementwiseKernel(d.t * (d.heads + d.kv) * d.d, d.B, d.B, 6)));
  attn.compute.push_back(DataGrad(c, d.t, d.qkv, d.h));
  EndWithAllReduce(c, &attn, d.t * d.h * d.B, "Sum", false);
  WeightGrad(c, d, d.t, d.qkv, d.h, true, &attn.overlap);
  out->push_back(attn);
}

// The passes of `layers` layers over `batch` sequences; `first` adds the embedding, `last` the
// final norm, output layer and loss.
Passes BuildPasses(const Ctx& c, double batch, int64_t layers, bool first, bool last) {
  const Dims d = MakeDims(c, batch);
  Passes p;
  if (first) p.forward.push_back(EmbeddingForward(c, d));
  for (int64_t i = 0; i < layers; ++i) LayerForward(c, d, first || i > 0, &p.forward);
  if (last) {
    HeadForward(c, d, &p.forward);
  } else {
    Phase out;  // the top block's residual add, before the activations leave the stage
    out.compute.push_back(ResidualAdd(c, d));
    p.forward.push_back(out);
  }
  if (last) p.backward.push_back(HeadBackward(c, d));
  for (int64_t i = layers - 1; i >= 0; --i) LayerBackward(c, d, last || i < layers - 1, &p.backward);
  Phase tail;  // the bottom layer's first norm, then the embedding's gradient
  NormBackward(c, d, &tail.compute);
  if (first) {
    tail.compute.push_back(K(c, kEmbeddingBwd, ElementwiseKernel(d.t * d.h, d.B, 4, 1)));
    tail.compute.push_back(K(c, kCast, ElementwiseKernel(d.vocab * d.h, 4, d.B, 0), d.vocab * d.h));
  }
  p.backward.push_back(tail);
  return p;
}

// Parameters this rank holds = the gradients its backward pass completes.
double LocalParams(const Passes& p) {
  double n = 0;
  for (const Phase& ph : p.backward)
    for (const std::vector<Step>* steps : {&ph.compute, &ph.overlap})
      for (const Step& s : *steps) n += s.grad_params;
  return n;
}

// Full (unsharded) parameter counts for pipeline partitioning.
double LayerParams(const ModelSpec& m) {
  const double h = static_cast<double>(m.hidden), d = h / static_cast<double>(m.heads);
  const double qkv = (static_cast<double>(m.heads) + 2 * static_cast<double>(m.kv_heads)) * d;
  const double ffn = static_cast<double>(m.ffn);
  if (m.llama) return 2 * h + h * qkv + h * h + 3 * h * ffn;
  return 4 * h + h * qkv + qkv + h * h + h + 2 * h * ffn + ffn + h;
}

// ---------------------------------------------------------------------------------------------
// Instruction emission.

// Appends a thread's instructions; every CUDA/NCCL call is preceded by the CPU launch gap.
struct Emitter {
  std::vector<Instr> code;
  double gap_ns = 0;

  void Cpu(double ns) {
    if (ns <= 0) return;
    if (!code.empty() && code.back().op == Op::kCpu) {
      code.back().cpu_ns += ns;
      return;
    }
    Instr i;
    i.op = Op::kCpu;
    i.cpu_ns = ns;
    code.push_back(i);
  }
  Instr& Call(Op op, int32_t stream) {
    Cpu(gap_ns);
    Instr i;
    i.op = op;
    i.stream = stream;
    code.push_back(i);
    return code.back();
  }
  void Launch(int32_t stream, int32_t kernel) { Call(Op::kLaunch, stream).kernel = kernel; }
  void Launch(int32_t stream, const std::vector<Step>& steps) {
    for (const Step& s : steps) Launch(stream, s.kernel);
  }
  void Copy(int32_t stream, double bytes, CopyDir dir) {
    Instr& i = Call(Op::kCopy, stream);
    i.bytes = bytes;
    i.dir = dir;
  }
  void Record(int32_t stream, int32_t event) { Call(Op::kRecord, stream).event = event; }
  void Wait(int32_t stream, int32_t event) { Call(Op::kWaitEvent, stream).event = event; }
  void StreamSync(int32_t stream) { Call(Op::kStreamSync, stream); }
  void DeviceSync() { Call(Op::kDeviceSync, -1); }
  void Collective(int32_t stream, int32_t kernel, int32_t group, double bytes) {
    Instr& i = Call(Op::kCollective, stream);
    i.kernel = kernel;
    i.group = group;
    i.bytes = bytes;
  }
};

constexpr double kOptimizerChunk = 64.0 * 1024 * 1024;  // parameters per multi-tensor launch
constexpr double kMaxOptimizerLaunches = 1024;          // (more parameters: bigger launches)

// zero_grad: the gradient buffer filled with zeros.
void ZeroGrad(const Ctx& c, double params, Emitter* e) {
  e->Launch(0, K(c, kFill, ElementwiseKernel(params, 0, static_cast<double>(c.m.dtype_bytes), 0)).kernel);
}

// Gradient norm and Adam over `params` parameters (FP32 master weights and moments), in
// multi-tensor launches of kOptimizerChunk parameters each (at most kMaxOptimizerLaunches).
void Optimizer(const Ctx& c, double params, Emitter* e) {
  const double B = static_cast<double>(c.m.dtype_bytes);
  const double chunk = std::max(kOptimizerChunk, params / kMaxOptimizerLaunches);
  for (int pass = 0; pass < 2; ++pass) {
    for (double done = 0; done < params; done += chunk) {
      const double n = std::min(chunk, params - done);
      if (pass == 0) {
        e->Launch(0, K(c, kL2Norm, ReductionKernel(n, B)).kernel);
      } else {
        KernelTraits adam = ElementwiseKernel(n, B + 12, 12 + B, 16);
        adam.sfu_ops = n;  // sqrt
        e->Launch(0, K(c, kAdam, adam).kernel);
      }
    }
  }
}

// The loss read back by the host (loss.item()), which waits for the whole step.
void FinishStep(Emitter* e) {
  e->Copy(0, 4, CopyDir::kDeviceToHost);
  e->StreamSync(0);
}

// An all-reduce group of ranks 0..n-1.
Group AllRanks(int64_t n, const char* name) {
  Group g;
  for (int32_t r = 0; r < n; ++r) g.ranks.push_back(r);
  g.kind = CollectiveKind::kAllReduce;
  g.name = name;
  return g;
}

RankProgram OneThread(Emitter&& e, int32_t streams, int32_t events) {
  RankProgram r;
  r.threads.resize(1);
  r.threads[0].code = std::move(e.code);
  r.streams = streams;
  r.events = events;
  return r;
}

// ---------------------------------------------------------------------------------------------
// The kinds.

// Tensor parallel with Domino overlap. Chunk c uses event 2c for "compute up to the all-reduce
// done" (stream 0 → 1) and 2c+1 for "all-reduce done" (stream 1 → 0).
void EmitDominoPhase(const std::vector<const Phase*>& chunks, int32_t group, Emitter* e,
                     std::vector<bool>* pending) {
  for (size_t c = 0; c < chunks.size(); ++c) {
    const Phase& ph = *chunks[c];
    const int32_t ev_compute = static_cast<int32_t>(2 * c), ev_reduced = ev_compute + 1;
    if ((*pending)[c]) {
      e->Wait(0, ev_reduced);
      (*pending)[c] = false;
    }
    e->Launch(0, ph.compute);
    if (ph.allreduce_kernel >= 0) {
      e->Record(0, ev_compute);
      e->Wait(1, ev_compute);
      e->Collective(1, ph.allreduce_kernel, group, ph.allreduce_bytes);
      e->Record(1, ev_reduced);
      (*pending)[c] = true;
    }
    e->Launch(0, ph.overlap);
  }
}

void BuildTp(const Spec& s, const Naming& nm, Program* p) {
  KernelTable kt{p, {}};
  const Ctx c{s.model, nm, &kt, s.parallel.tp};
  const int64_t chunks = s.parallel.chunks, b = s.model.batch;
  std::vector<Passes> passes;
  for (int64_t i = 0; i < chunks; ++i) {
    const int64_t size = b / chunks + (i < b % chunks ? 1 : 0);
    passes.push_back(BuildPasses(c, static_cast<double>(size), s.model.layers, true, true));
  }
  if (s.parallel.tp > 1) p->groups.push_back(AllRanks(s.parallel.tp, "tp"));

  Emitter e{{}, s.launch_gap_ns};
  const double params = LocalParams(passes[0]);
  ZeroGrad(c, params, &e);
  std::vector<bool> pending(static_cast<size_t>(chunks), false);
  auto run = [&](std::vector<Phase> Passes::*pass) {
    const size_t n = (passes[0].*pass).size();
    for (size_t i = 0; i < n; ++i) {
      std::vector<const Phase*> per_chunk;
      for (const Passes& ps : passes) per_chunk.push_back(&(ps.*pass)[i]);
      EmitDominoPhase(per_chunk, 0, &e, &pending);
    }
  };
  for (int64_t mb = 0; mb < s.parallel.microbatches; ++mb) {
    run(&Passes::forward);
    run(&Passes::backward);
  }
  for (size_t i = 0; i < pending.size(); ++i)
    if (pending[i]) e.Wait(0, static_cast<int32_t>(2 * i + 1));
  Optimizer(c, params, &e);
  FinishStep(&e);
  const RankProgram rank = OneThread(std::move(e), 2, static_cast<int32_t>(2 * chunks));
  p->ranks.assign(static_cast<size_t>(s.parallel.tp), rank);
}

// Layers per pipeline stage. Uniform: as even as possible, earlier stages taking the remainder.
// Parameter: the contiguous split that minimises the largest stage's parameters, the first stage
// also holding the embedding and the last the final norm and output layer.
std::vector<int64_t> PartitionLayers(const Spec& s) {
  const size_t L = static_cast<size_t>(s.model.layers), P = static_cast<size_t>(s.parallel.pp);
  std::vector<int64_t> out(P, static_cast<int64_t>(L / P));
  if (!s.parallel.parameter_partition) {
    for (size_t i = 0; i < L % P; ++i) ++out[i];
    return out;
  }
  const double layer = LayerParams(s.model);
  const double embed = static_cast<double>(s.model.vocab) * static_cast<double>(s.model.hidden);
  const double head = embed + (s.model.llama ? 1 : 2) * static_cast<double>(s.model.hidden);
  auto weight = [&](size_t stage, size_t n) {
    return static_cast<double>(n) * layer + (stage == 0 ? embed : 0) + (stage == P - 1 ? head : 0);
  };
  // best[k][l]: the least largest-stage weight when stages 0..k-1 hold layers 0..l-1, the last
  // of them taking take[k][l] layers.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(P + 1, std::vector<double>(L + 1, inf));
  std::vector<std::vector<size_t>> take(P + 1, std::vector<size_t>(L + 1, 0));
  best[0][0] = 0;
  for (size_t k = 1; k <= P; ++k)
    for (size_t l = k; l <= L; ++l)
      for (size_t n = 1; n <= l - (k - 1); ++n) {
        const double w = std::max(best[k - 1][l - n], weight(k - 1, n));
        if (w < best[k][l]) best[k][l] = w, take[k][l] = n;
      }
  for (size_t k = P, l = L; k >= 1; --k) {
    out[k - 1] = static_cast<int64_t>(take[k][l]);
    l -= take[k][l];
  }
  return out;
}

// Megatron's non-interleaved 1F1B schedule (schedules.py, forward_backward_pipelining_without_
// interleaving): warm-up forwards, steady one-forward-one-backward, cool-down backwards. Each p2p
// call (send, receive, or a batched send+receive with the same neighbour) is one collective of
// the pair's group; both neighbours issue them in the same order.
void BuildPp(const Spec& s, const Naming& nm, Program* p) {
  KernelTable kt{p, {}};
  const Ctx c{s.model, nm, &kt, 1};
  const int64_t P = s.parallel.pp, M = s.parallel.microbatches;
  const std::vector<int64_t> layers = PartitionLayers(s);
  const Dims d = MakeDims(c, static_cast<double>(s.model.batch));
  const double act_bytes = d.t * d.h * d.B;
  for (int32_t i = 0; i + 1 < P; ++i) {
    Group g;
    g.ranks = {i, i + 1};
    g.kind = CollectiveKind::kSendRecv;
    g.name = "pp_" + std::to_string(i) + "_" + std::to_string(i + 1);
    p->groups.push_back(g);
  }
  const int32_t p2p = kt.Add(kSendRecv, SendRecvKernel(act_bytes));
  constexpr int32_t kPrevStream = 1, kNextStream = 2;
  for (int64_t st = 0; st < P; ++st) {
    const bool first = st == 0, last = st == P - 1;
    const Passes passes = BuildPasses(c, static_cast<double>(s.model.batch), layers[static_cast<size_t>(st)], first, last);
    Emitter e{{}, s.launch_gap_ns};
    auto pass = [&](const std::vector<Phase>& phases) {
      for (const Phase& ph : phases) {
        e.Launch(0, ph.compute);
        e.Launch(0, ph.overlap);
      }
    };
    // One exchange with the previous (next) stage on its NCCL stream after the compute stream's
    // work so far, then torch.cuda.synchronize() as Megatron's batch_p2p_sync does (which also
    // orders the received activations or gradients before the next pass).
    auto exchange = [&](bool with_next) {
      const int32_t stream = with_next ? kNextStream : kPrevStream;
      const int32_t group = static_cast<int32_t>(with_next ? st : st - 1);
      e.Record(0, 0);
      e.Wait(stream, 0);
      e.Collective(stream, p2p, group, act_bytes);
      e.DeviceSync();
    };
    const double params = LocalParams(passes);
    ZeroGrad(c, params, &e);
    const int64_t warmup = std::min(P - st - 1, M), steady = M - warmup;
    for (int64_t i = 0; i < warmup; ++i) {
      if (!first) exchange(false);  // recv_forward
      pass(passes.forward);
      if (!last) exchange(true);    // send_forward
    }
    if (steady > 0 && !first) exchange(false);  // recv_forward
    for (int64_t i = 0; i < steady; ++i) {
      pass(passes.forward);
      if (!last) exchange(true);    // send_forward_recv_backward
      pass(passes.backward);
      if (!first) exchange(false);  // send_backward_recv_forward (send_backward on the last)
    }
    for (int64_t i = 0; i < warmup; ++i) {
      if (!last) exchange(true);    // recv_backward
      pass(passes.backward);
      if (!first) exchange(false);  // send_backward
    }
    Optimizer(c, params, &e);
    if (last) {
      FinishStep(&e);
    } else {
      e.DeviceSync();
    }
    p->ranks.push_back(OneThread(std::move(e), 3, 1));
  }
}

// DDP: gradient buckets of about bucket_bytes, filled in backward order, each all-reduced on
// stream 1 once its last gradient is computed (event 0: stream 0 → 1; event 1: the last
// all-reduce done, stream 1 → 0). Earlier micro-batches accumulate without communication (no_sync).
void BuildDp(const Spec& s, const Naming& nm, Program* p) {
  KernelTable kt{p, {}};
  const Ctx c{s.model, nm, &kt, 1};
  const Passes passes = BuildPasses(c, static_cast<double>(s.model.batch), s.model.layers, true, true);
  const bool reduce = s.parallel.dp > 1;
  if (reduce) p->groups.push_back(AllRanks(s.parallel.dp, "dp"));

  Emitter e{{}, s.launch_gap_ns};
  const double params = LocalParams(passes), B = static_cast<double>(s.model.dtype_bytes);
  ZeroGrad(c, params, &e);
  double bucket = 0;
  auto flush = [&] {
    if (bucket <= 0) return;
    const int32_t k = kt.Add(AllReduceName(nm, bucket, "Sum", nm.nccl),
                             AllReduceKernel(bucket, static_cast<double>(s.parallel.dp), B));
    e.Record(0, 0);
    e.Wait(1, 0);
    e.Collective(1, k, 0, bucket);
    bucket = 0;
  };
  for (int64_t mb = 0; mb < s.parallel.microbatches; ++mb) {
    const bool sync = reduce && mb == s.parallel.microbatches - 1;
    for (const Phase& ph : passes.forward) {
      e.Launch(0, ph.compute);
      e.Launch(0, ph.overlap);
    }
    for (const Phase& ph : passes.backward)
      for (const std::vector<Step>* steps : {&ph.compute, &ph.overlap})
        for (const Step& st : *steps) {
          e.Launch(0, st.kernel);
          if (!sync || st.grad_params <= 0) continue;
          bucket += st.grad_params * B;
          if (bucket >= s.parallel.bucket_bytes) flush();
        }
    if (sync) flush();
  }
  if (reduce) {
    e.Record(1, 1);
    e.Wait(0, 1);
  }
  Optimizer(c, params, &e);
  FinishStep(&e);
  const RankProgram rank = OneThread(std::move(e), 2, 2);
  p->ranks.assign(static_cast<size_t>(s.parallel.dp), rank);
}

// KTransformers-style MoE decode step: one token per sequence of the batch, attention over a
// context of model.seq tokens, routed experts on the CPU.
void BuildOffload(const Spec& s, const Naming& nm, Program* p) {
  KernelTable kt{p, {}};
  const Ctx c{s.model, nm, &kt, 1};
  const ModelSpec& m = s.model;
  Dims d = MakeDims(c, static_cast<double>(m.batch));
  d.t = d.b;  // one new token per sequence
  const double ctx = d.s, experts = static_cast<double>(m.experts);
  const double eff = static_cast<double>(m.expert_ffn), shared = static_cast<double>(m.shared_experts) * eff;
  Emitter e{{}, s.launch_gap_ns};
  auto launch = [&](const Step& st) { e.Launch(0, st.kernel); };

  e.Copy(0, d.t * 8, CopyDir::kHostToDevice);  // the step's input token ids
  launch(K(c, kEmbedding, ElementwiseKernel(d.t * d.h, d.B, d.B, 0)));
  for (int64_t l = 0; l < m.layers; ++l) {
    if (l > 0) launch(ResidualAdd(c, d));
    launch(Norm(c, d));
    launch(Gemm(c, d.t, d.qkv, d.h, "tn"));
    if (m.llama) launch(K(c, kRope, ElementwiseKernel(d.t * (d.heads + d.kv) * d.d, d.B, d.B, 6)));
    // Split-KV decode attention: streams the KV cache once, a few FLOPs per cached value.
    KernelTraits attn = ElementwiseKernel(d.b * ctx * 2 * d.kv * d.d, d.B, 0, 0);
    attn.tensor_flop = 4 * d.b * d.heads * ctx * d.d;
    attn.fp32_flop += 6 * d.b * d.heads * ctx;
    attn.sfu_ops = d.b * d.heads * ctx;
    attn.dram_write_bytes = d.b * d.heads * d.d * 4 * 8;  // per-split partial outputs
    launch(K(c, kFlashDecode, attn));
    launch(K(c, kFlashDecodeCombine, ElementwiseKernel(d.b * d.heads * d.d * 8, 4, 0, 2)));
    launch(Gemm(c, d.t, d.h, d.heads * d.d, "tn"));
    launch(ResidualAdd(c, d));
    launch(Norm(c, d));
    if (l < m.dense_layers) {  // a dense MLP on the GPU
      std::vector<Step> mlp;
      Mlp(c, d, d.ffn, &mlp);
      e.Launch(0, mlp);
      continue;
    }
    launch(Gemm(c, d.t, experts, d.h, "tn"));  // router
    launch(K(c, kRouterSoftmax, ElementwiseKernel(d.t * experts, d.B, d.B, 6)));
    launch(K(c, kTopK, ReductionKernel(d.t * experts, d.B)));
    e.Copy(0, d.t * d.h * d.B, CopyDir::kDeviceToHost);                                  // hidden states
    e.Copy(0, d.t * static_cast<double>(m.top_k) * (8 + 4), CopyDir::kDeviceToHost);     // expert ids, weights
    e.StreamSync(0);
    if (shared > 0) {  // the shared experts run on the GPU while the CPU computes the routed ones
      std::vector<Step> mlp;
      Mlp(c, d, shared, &mlp);
      e.Launch(0, mlp);
    }
    // Routed experts: gate, up and down projections of every (token, expert) pair.
    const double flop = d.t * static_cast<double>(m.top_k) * 3 * 2 * d.h * eff;
    e.Cpu(flop / s.cpu_gflops);  // FLOP / (GFLOP/s) = ns
    e.Copy(0, d.t * d.h * d.B, CopyDir::kHostToDevice);
    launch(K(c, kAdd, ElementwiseKernel(d.t * d.h, 2 * d.B, d.B, 1)));  // routed + shared
  }
  launch(ResidualAdd(c, d));
  launch(Norm(c, d));
  launch(Gemm(c, d.t, static_cast<double>(m.vocab), d.h, "tn"));
  launch(K(c, kArgmax, ReductionKernel(d.t * static_cast<double>(m.vocab), d.B)));  // greedy sampling
  e.Copy(0, d.t * 8, CopyDir::kDeviceToHost);
  e.StreamSync(0);
  p->ranks.push_back(OneThread(std::move(e), 1, 0));
}

}  // namespace

bool BuildWorkload(const nlohmann::json& spec, Program* out, std::string* err) {
  Spec s;
  if (!ParseSpec(spec, &s, err)) return false;
  Program p;
  p.name = s.name;
  p.device = s.device->name;
  p.link_bytes_per_s = s.link_bytes_per_s;
  const Naming nm = MakeNaming(s);
  switch (s.kind) {
    case Kind::kTp: BuildTp(s, nm, &p); break;
    case Kind::kPp: BuildPp(s, nm, &p); break;
    case Kind::kDp: BuildDp(s, nm, &p); break;
    case Kind::kOffload: BuildOffload(s, nm, &p); break;
  }
  std::string why;
  if (!Validate(p, &why)) {  // a generator bug, not a spec error
    *err = "internal error: generated program is invalid: " + why;
    return false;
  }
  *out = std::move(p);
  return true;
}

// kind "replay": {"kind": "replay", "trace": PATH (file or directory, relative to the spec),
// "device": NAME, "name": optional}. The trace is imported and re-executed (replay_workload.h).
static bool LoadReplay(const std::string& path, const json& spec, Program* out, std::string* err) {
  for (const auto& [key, value] : spec.items())
    if (key != "kind" && key != "trace" && key != "device" && key != "name" && key != "description") {
      *err = path + ": field " + key + ": unknown for kind replay";
      return false;
    }
  if (!spec.contains("trace") || !spec["trace"].is_string()) {
    *err = path + ": field trace: expected the path of a trace file or directory";
    return false;
  }
  if (!spec.contains("device") || !spec["device"].is_string()) {
    *err = path + ": field device: missing (one of the simulated devices)";
    return false;
  }
  std::filesystem::path trace_path = spec["trace"].get<std::string>();
  if (trace_path.is_relative()) trace_path = std::filesystem::path(path).parent_path() / trace_path;
  std::vector<std::string> files;
  Trace trace;
  Graph g;
  BuildReport report;
  if (!ExpandTracePaths({trace_path.string()}, &files, err) || !LoadTraces(files, &trace, err) ||
      !BuildGraph(trace, &g, &report, err) ||
      !BuildReplayWorkload(trace, g, spec["device"].get<std::string>(), out, err)) {
    *err = path + ": " + *err;
    return false;
  }
  out->name = spec.value("name", "replay");
  return true;
}

bool LoadWorkload(const std::string& path, Program* out, std::string* err) {
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
  if (spec.is_object() && !spec.contains("name")) {
    std::string stem = path.substr(path.find_last_of('/') + 1);
    if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem.resize(stem.size() - 5);
    spec["name"] = stem;
  }
  if (spec.is_object() && spec.value("kind", "") == "replay") return LoadReplay(path, spec, out, err);
  if (!BuildWorkload(spec, out, err)) {
    *err = path + ": " + *err;
    return false;
  }
  return true;
}

}  // namespace emo::sim

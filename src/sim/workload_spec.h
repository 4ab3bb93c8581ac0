// workload_spec.h — the checked reader of workload specs (the format is in workload.h): every
// field of a spec, of every kind, is read here, so that a bad spec gives one error naming the
// field and never an exception. Internal to the workload generators.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "sim/device_spec.h"

namespace emo::sim::wl {

enum class Kind { kTp = 0, kPp = 1, kDp = 2, kOffload = 3, kReplay = 4 };
inline constexpr const char* kKindNames[] = {"tp", "pp", "dp", "offload", "replay"};

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

// CPU threads beside the main one, as training jobs have them (kind dp).
struct ThreadsSpec {
  bool autograd = false;  // backward on an autograd thread, handed over by the blocked main thread
  double poll_ns = 0;     // a poller's cudaStreamQuery period (0: no poller)
  double loader_ns = 0;   // a data loader's CPU work per batch (0: no loader)
  bool any() const { return autograd || poll_ns > 0 || loader_ns > 0; }
};

// What an iteration of kind dp does: a training step, an evaluation step (the forward passes and
// the loss, no backward, no optimizer), or a checkpoint (rank 0 copies the parameters and the
// optimizer state to the host and writes them, the other ranks wait for it at a barrier).
enum class StepKind { kTrain = 0, kEval = 1, kCheckpoint = 2 };

struct Spec {
  Kind kind = Kind::kTp;
  StepKind step = StepKind::kTrain;
  std::string name;
  const DeviceSpec* device = nullptr;
  std::string trace;  // replay: the trace's path as written in the spec
  // The rest: kinds tp, pp, dp and offload.
  double link_bytes_per_s = 0;
  ModelSpec model;
  ParallelSpec parallel;
  double launch_gap_ns = 6000;
  double cpu_gflops = 1000;
  double write_bytes_per_s = 2e9;  // checkpoint: the host's write rate to storage
  ThreadsSpec threads;
};

// Bounds that keep a generated program small enough to build and run.
inline constexpr int64_t kMaxField = 1000000000;  // bound of every integer field: no size overflows
inline constexpr int64_t kMaxLayers = 1000;       // (pp's parameter partition costs pp × layers²)
inline constexpr int64_t kMaxRanks = 4096;
inline constexpr int64_t kMaxPasses = 100000;  // layers × micro-batches × tp × dp: bounds the program's size

// Reads and checks `j`. `default_name` names the program when the spec has no "name" (empty:
// "<kind>-workload"). False with *err naming the field, e.g.
// "field model.hidden: expected a positive integer (got -1)".
bool ReadSpec(const nlohmann::json& j, const std::string& default_name, Spec* s, std::string* err);

}  // namespace emo::sim::wl

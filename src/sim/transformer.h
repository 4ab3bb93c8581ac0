// transformer.h — what the workload kinds (tp, pp, dp, offload) build programs from: kernels with
// their profiler names, a transformer's forward and backward passes as kernel lists, and the
// emitter of a CPU thread's instructions. Internal to the workload generators.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sim/kernel_model.h"
#include "sim/program.h"
#include "sim/workload_spec.h"

namespace emo::sim::wl {

// ---------------------------------------------------------------------------------------------
// Kernels and their profiler names.

// Program::kernels with reuse: a kernel of the same name and traits is stored once.
struct KernelTable {
  Program* program = nullptr;
  std::map<std::string, int32_t> index;  // name + traits → index into program->kernels

  int32_t Add(const std::string& name, const KernelTraits& t);
};

// How kernels are named on this device and data type.
struct Naming {
  bool hopper = false;
  bool nvlink = false;  // NCCL uses its LL128 protocol on NVLink only
  double sm_count = 1;
  int64_t dtype_bytes = 2;
  std::string torch;     // {T}: c10::BFloat16 | float
  std::string cutlass;   // {C}: cutlass::bfloat16_t
  std::string nccl;      // bfloat16 | float
  std::string head_dim;  // {D}
};

Naming MakeNaming(const Spec& s);

// PyTorch's vectorized elementwise kernel around a functor with `arity` tensors, and its reduction.
std::string VecKernel(const std::string& functor, int arity);
std::string ReduceKernel(const std::string& op);

// Name patterns ({T}, {C}, {D} as Naming) used outside transformer.cc.
extern const std::string kAdd, kEmbedding, kRope;

// cuBLAS's name for a GEMM of an m×n output; `layout` is tn (forward), nn (data gradient) or nt
// (weight gradient).
std::string GemmName(const Naming& nm, double m, double n, double batch, const char* layout);
// NCCL's ring all-reduce kernel for a message size.
std::string AllReduceName(const Naming& nm, double bytes, const char* op, const std::string& type);

// ---------------------------------------------------------------------------------------------
// A transformer's kernels, as runs ("phases") separated by tensor-parallel all-reduces.

struct Step {
  int32_t kernel = -1;
  double grad_params = 0;  // parameters whose gradient this kernel completes (for DDP buckets)
};

// Kernels that end in a tensor-parallel all-reduce of their output (none when tp = 1).
struct Phase {
  std::vector<Step> compute;  // stream 0; the first ones consume the previous all-reduce
  int32_t allreduce_kernel = -1;
  double allreduce_bytes = 0;
  std::vector<Step> overlap;  // after the all-reduce is issued and independent of it
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

Dims MakeDims(const Ctx& c, double batch);

// The kernel of name `pattern` and traits `t`, completing `grad` parameters' gradients.
Step K(const Ctx& c, const std::string& pattern, const KernelTraits& t, double grad = 0);
// Y[m×n] = X[m×k]·W; layout as GemmName.
Step Gemm(const Ctx& c, double m, double n, double k, const char* layout, double grad = 0, double batch = 1);
Step ResidualAdd(const Ctx& c, const Dims& d);
Step Norm(const Ctx& c, const Dims& d);
// An MLP of `width` over d.t tokens: up projection (SwiGLU: gate and up in one GEMM),
// activation, down projection.
void Mlp(const Ctx& c, const Dims& d, double width, std::vector<Step>* steps);

// The passes of `layers` layers over `batch` sequences; `first` adds the embedding, `last` the
// final norm, output layer and loss.
Passes BuildPasses(const Ctx& c, double batch, int64_t layers, bool first, bool last);
// Parameters this rank holds = the gradients its backward pass completes.
double LocalParams(const Passes& p);
// Full (unsharded) parameter count of a layer, for pipeline partitioning.
double LayerParams(const ModelSpec& m);

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
  // A host-side range opens or closes (no API call, so no launch gap).
  void Range(bool push, int32_t range) {
    Instr i;
    i.op = push ? Op::kRangePush : Op::kRangePop;
    i.range = range;
    code.push_back(i);
  }
  // A host flag signalled or awaited (program.h): no API call, so no launch gap.
  void Flag(Op op, int32_t flag) {
    Instr i;
    i.op = op;
    i.flag = flag;
    code.push_back(i);
  }
  void Collective(int32_t stream, int32_t kernel, int32_t group, double bytes) {
    Instr& i = Call(Op::kCollective, stream);
    i.kernel = kernel;
    i.group = group;
    i.bytes = bytes;
  }
};

// zero_grad: the gradient buffer filled with zeros.
void ZeroGrad(const Ctx& c, double params, Emitter* e);
// Gradient norm and Adam over `params` parameters (FP32 master weights and moments).
void Optimizer(const Ctx& c, double params, Emitter* e);
// The loss read back by the host (loss.item()), which waits for the whole step.
void FinishStep(Emitter* e);
// PyTorch's autograd engine thread, when the spec asks for one (threads.autograd): a backward pass
// emitted into on() between Begin() and End() runs there, handed over by host flags (the main
// thread signals flag 0 and blocks on flag 1, which the autograd thread signals when the pass is
// done). Without it, on() is the main thread and Begin() and End() emit nothing.
struct AutogradThread {
  bool enabled = false;
  Emitter* main = nullptr;
  Emitter thread;
  Emitter& on() { return enabled ? thread : *main; }
  void Begin() {
    if (enabled) main->Flag(Op::kSignal, 0), thread.Flag(Op::kWait, 0);
  }
  void End() {
    if (enabled) thread.Flag(Op::kSignal, 1), main->Flag(Op::kWait, 1);
  }
  // The thread and its two flags join the rank (after the main thread's OneThread).
  void AddTo(RankProgram* rank) {
    if (!enabled) return;
    rank->threads.emplace_back().code = std::move(thread.code);
    rank->flags = 2;
  }
};

// An all-reduce group of ranks 0..n-1.
Group AllRanks(int64_t n, const char* name);
// A rank of one thread running `e`'s instructions.
RankProgram OneThread(Emitter&& e, int32_t streams, int32_t events);
// The spec's threads that run free of the steps, added to every rank: a poller (cudaStreamQuery on
// stream 0 every threads.poll_ns) and a data loader (CPU work only, prefetching: the main thread
// never waits for it).
void AddBackgroundThreads(const Spec& s, Program* p);

}  // namespace emo::sim::wl

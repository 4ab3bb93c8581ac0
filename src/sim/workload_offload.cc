// workload_offload.cc — kind "offload": a KTransformers-style MoE decode step, attention on the
// GPU and the routed experts on the CPU (see workload.h).
#include "sim/workload_kinds.h"

#include "sim/transformer.h"

namespace emo::sim::wl {

namespace {

const std::string kFlashDecode =
    "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<{D}, 64, 128, 4, false, false, {C}, "
    "Flash_kernel_traits<{D}, 64, 128, 4, {C}> >, false, true, false, false, true, false, true, "
    "false>(Flash_fwd_params)";
const std::string kFlashDecodeCombine =
    "void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<{D}, 64, 128, 4, false, false, {C}, "
    "Flash_kernel_traits<{D}, 64, 128, 4, {C}> >, 4, 3, false>(Flash_fwd_params)";
const std::string kRouterSoftmax =
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, {T}, float, {T}, at::native::(anonymous "
    "namespace)::SoftMaxForwardEpilogue>({T}*, {T} const*, int)";
const std::string kTopK =
    "void at::native::sbtopk::gatherTopK<{T}, unsigned int, 2, false>(at::cuda::detail::TensorInfo<{T} const, unsigned "
    "int>, unsigned int, unsigned int, bool, unsigned int, unsigned int, at::cuda::detail::TensorInfo<{T}, unsigned "
    "int>, unsigned int, at::cuda::detail::TensorInfo<long, unsigned int>, unsigned int, {T}*)";
const std::string kArgmax = ReduceKernel("float, at::native::ArgMaxOps<float>");

}  // namespace

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
    e.Copy(0, d.t * d.h * d.B, CopyDir::kDeviceToHost);                               // hidden states
    e.Copy(0, d.t * static_cast<double>(m.top_k) * (8 + 4), CopyDir::kDeviceToHost);  // expert ids, weights
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

}  // namespace emo::sim::wl

// transformer.cc — kernels and their profiler names, a transformer's passes as kernel lists, and
// the optimizer and step tail shared by the workload kinds (see transformer.h).
#include "sim/transformer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace emo::sim::wl {

// Program::kernels with reuse: a kernel of the same name and traits is stored once.
int32_t KernelTable::Add(const std::string& name, const KernelTraits& t) {
  const double v[] = {t.tensor_flop,  t.fp32_flop,       t.fp64_flop,        t.int_ops,   t.sfu_ops,
                      t.lsu_ops,      t.dram_read_bytes, t.dram_write_bytes, t.l2_bytes,  t.l1_bytes,
                      t.shared_bytes, t.link_bytes,      t.occupancy,        t.overhead_s};
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
  return "void at::native::vectorized_elementwise_kernel<4, " + functor + ", " + array + " >(int, " + functor + ", " +
         array + ")";
}
std::string ReduceKernel(const std::string& op) {
  return "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<" + op +
         ", unsigned int, float, 4> >(at::native::ReduceOp<" + op + ", unsigned int, float, 4>)";
}

const std::string kAdd = VecKernel("at::native::CUDAFunctor_add<{T}>", 3);
const std::string kMul =
    VecKernel("at::native::BinaryFunctor<{T}, {T}, {T}, at::native::binary_internal::MulFunctor<float> >", 3);
const std::string kFill = VecKernel("at::native::FillFunctor<{T}>", 1);
const std::string kCast = VecKernel(
    "at::native::(anonymous namespace)::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
    "const::{lambda()#7}::operator()() const::{lambda(float)#1}",
    2);
const std::string kDropoutAdd =
    "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<{T}, float, unsigned int, 1, 4, "
    "bool>(at::cuda::detail::TensorInfo<{T} const, unsigned int>, at::cuda::detail::TensorInfo<{T}, unsigned int>, "
    "at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)";
const std::string kDropoutBwd = VecKernel(
    "at::native::(anonymous namespace)::masked_scale_kernel<bool, {T}, {T}>(at::Tensor&, at::Tensor const&, at::Tensor "
    "const&, float)::{lambda({T}, bool)#1}",
    3);
const std::string kLayerNorm =
    "void cuApplyLayerNorm<{T}, float, {T}>({T}*, float*, float*, {T} const*, int, int, float, {T} const*, {T} const*)";
const std::string kRmsNorm =
    "void cuApplyRMSNorm<{T}, float, {T}>({T}*, float*, {T} const*, int, int, float, {T} const*)";
const std::string kNormGradInput =
    "void cuComputeGradInput<{T}, float, {T}>({T} const*, {T} const*, int, int, float const*, float const*, float, {T} "
    "const*, {T}*)";
const std::string kNormGradGamma =
    "void cuComputePartGradGammaBeta<{T}, float, {T}>({T} const*, {T} const*, int, int, float const*, float const*, "
    "float, float*, float*)";
const std::string kGelu = VecKernel(
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
    "const::{lambda()#4}::operator()() const::{lambda({T})#1}",
    2);
const std::string kGeluBwd = VecKernel(
    "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() "
    "const::{lambda()#4}::operator()() const::{lambda({T}, {T})#1}",
    3);
const std::string kSilu = VecKernel(
    "at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
    "const::{lambda()#4}::operator()() const::{lambda({T})#1}",
    2);
const std::string kSiluBwd = VecKernel(
    "at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() "
    "const::{lambda()#4}::operator()() const::{lambda({T}, {T})#1}",
    3);
const std::string kRope =
    "void fused_rope_forward<{T}>(int, int, int, int, int, int, int, int, int, int, {T} const*, float const*, {T}*)";
const std::string kRopeBwd =
    "void fused_rope_backward<{T}>(int, int, int, int, int, int, int, int, int, int, {T} const*, float const*, {T}*)";
const std::string kBiasGrad = ReduceKernel(
    "{T}, at::native::func_wrapper_t<{T}, at::native::sum_functor<{T}, float, "
    "{T}>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>");
const std::string kFlashFwd =
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<{D}, 128, 64, 4, false, false, {C}, Flash_kernel_traits<{D}, 128, "
    "64, 4, {C}> >, false, true, false, false, true, true, false, false>(Flash_fwd_params)";
const std::string kFlashBwdPrep =
    "void flash_bwd_dot_do_o_kernel<true, Flash_bwd_kernel_traits<{D}, 64, 128, 8, 2, 4, 2, false, false, {C}, "
    "Flash_kernel_traits<{D}, 64, 128, 8, {C}> > >(Flash_bwd_params)";
const std::string kFlashBwd =
    "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<{D}, 64, 128, 8, 2, 4, 2, false, false, "
    "{C}, Flash_kernel_traits<{D}, 64, 128, 8, {C}> >, true, false, false, false, false, true, false, "
    "false>(Flash_bwd_params)";
const std::string kFlashBwdConvert =
    "void flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<{D}, 64, 128, 8, 2, 4, 2, false, false, {C}, "
    "Flash_kernel_traits<{D}, 64, 128, 8, {C}> > >(Flash_bwd_params, int)";
const std::string kSoftmax =
    "void (anonymous namespace)::scaled_upper_triang_masked_softmax_warp_forward<{T}, {T}, float, 11>({T}*, {T} "
    "const*, float, int, int, int)";
const std::string kSoftmaxBwd =
    "void (anonymous namespace)::scaled_upper_triang_masked_softmax_warp_backward<{T}, {T}, float, 11>({T}*, {T}*, {T} "
    "const*, float, int, int, int)";
const std::string kAttnDropout = kDropoutAdd;
const std::string kEmbedding =
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<{T}, long, unsigned int, 2, 2, -2, "
    "true>(at::cuda::detail::TensorInfo<{T}, unsigned int>, at::cuda::detail::TensorInfo<{T} const, unsigned int>, "
    "at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)";
const std::string kEmbeddingMask = VecKernel(
    "at::native::(anonymous namespace)::masked_fill_kernel(at::TensorIterator&, c10::Scalar "
    "const&)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda({T}, bool)#1}",
    3);
const std::string kEmbeddingBwd =
    "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<{T}, float, long>(long const*, {T} "
    "const*, float*, int, long, int, int)";
const std::string kLogitsMax = ReduceKernel("float, at::native::MaxOps<float>");
const std::string kLogitsSum = ReduceKernel(
    "float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
    "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>");
const std::string kLogitsSub = VecKernel("at::native::CUDAFunctor_sub<float>", 3);
const std::string kLogitsGather =
    "void at::native::index_elementwise_kernel<128, 4, "
    "at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> "
    ">(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} "
    "const&)::{lambda(int)#1}>(long, "
    "at::native::gpu_index_kernel<at::native::index_kernel_impl<at::native::OpaqueType<4> >(at::TensorIteratorBase&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1}>(at::TensorIteratorBase&, "
    "c10::ArrayRef<long>, c10::ArrayRef<long>, at::native::index_kernel_impl<at::native::OpaqueType<4> "
    ">(at::TensorIteratorBase&, c10::ArrayRef<long>, c10::ArrayRef<long>)::{lambda(char*, char const*, long)#1} "
    "const&)::{lambda(int)#1})";
const std::string kLogitsExp = VecKernel(
    "at::native::exp_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
    "const::{lambda()#2}::operator()() const::{lambda(float)#1}",
    2);
const std::string kLoss = VecKernel(
    "at::native::(anonymous namespace)::log_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
    "const::{lambda()#2}::operator()() const::{lambda(float)#1}",
    2);
const std::string kLossGrad = VecKernel(
    "at::native::(anonymous namespace)::div_true_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() "
    "const::{lambda()#2}::operator()() const::{lambda(float, float)#1}",
    3);
const std::string kL2Norm =
    "void multi_tensor_apply_kernel<TensorListMetadata<1>, L2NormFunctor<{T}, float>, float*, float*, bool, int>(long, "
    "int volatile*, TensorListMetadata<1>&, L2NormFunctor<{T}, float>, float*, float*, bool, int)";
const std::string kAdam =
    "void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<{T}, float, long>, float, float, float, float, "
    "float, float, adamMode_t, float>(long, int volatile*, TensorListMetadata<4>&, AdamFunctor<{T}, float, long>, "
    "float, float, float, float, float, float, adamMode_t, float)";

// cuBLAS's name for a GEMM of an m×n output; `layout` is tn (forward), nn (data gradient) or nt
// (weight gradient). The tile follows the number of output tiles per SM, as cuBLAS's heuristic.
std::string GemmName(const Naming& nm, double m, double n, double batch, const char* layout) {
  const double tiles = batch * std::ceil(m / 128) * std::ceil(n / 128);
  const double sms = nm.sm_count;
  if (nm.dtype_bytes == 4) return std::string("ampere_sgemm_") + (tiles >= sms ? "128x128_" : "128x64_") + layout;
  if (nm.hopper) {
    const char* tile = tiles >= 2 * sms   ? "128x256x64_warpgroupsize2x1x1"
                       : tiles >= sms / 2 ? "128x128x64_warpgroupsize1x1x1"
                                          : "64x128x64_warpgroupsize1x1x1";
    return std::string("sm90_xmma_gemm_bf16bf16_bf16f32_f32_") + layout + "_n_tilesize" + tile +
           "_execute_segment_k_off_kernel__5x_cublas";
  }
  const char* tile = tiles >= 4 * sms   ? "256x128_ldg8_f2f_stages_64x3"
                     : tiles >= sms     ? "128x128_ldg8_f2f_stages_64x3"
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
  for (double* x : {&k.tensor_flop, &k.fp32_flop, &k.fp64_flop, &k.int_ops, &k.sfu_ops, &k.lsu_ops, &k.dram_read_bytes,
                    &k.dram_write_bytes, &k.l2_bytes, &k.l1_bytes, &k.shared_bytes, &k.link_bytes})
    *x *= f;
  return k;
}

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

Step K(const Ctx& c, const std::string& pattern, const KernelTraits& t, double grad) {
  return {c.kt->Add(Subst(pattern, c.nm), t), grad};
}
// Y[m×n] = X[m×k]·W; layout as GemmName.
Step Gemm(const Ctx& c, double m, double n, double k, const char* layout, double grad, double batch) {
  const bool tensor = c.m.dtype_bytes == 2;
  return {c.kt->Add(GemmName(c.nm, m, n, batch, layout),
                    GemmKernel(m, n, k, static_cast<double>(c.m.dtype_bytes), tensor, batch)),
          grad};
}
// A linear layer's backward: data gradient (nn), weight gradient (nt), bias gradient (GPT).
Step DataGrad(const Ctx& c, double rows, double out, double in) { return Gemm(c, rows, in, out, "nn"); }
void WeightGrad(const Ctx& c, const Dims& d, double rows, double out, double in, bool bias, std::vector<Step>* steps) {
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
  if (c.m.llama) attn.compute.push_back(K(c, kRope, ElementwiseKernel(d.t * (d.heads + d.kv) * d.d, d.B, d.B, 6)));
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
  if (c.m.llama) attn.compute.push_back(K(c, kRopeBwd, ElementwiseKernel(d.t * (d.heads + d.kv) * d.d, d.B, d.B, 6)));
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

void AddBackgroundThreads(const Spec& s, Program* p) {
  for (RankProgram& rank : p->ranks) {
    if (s.threads.poll_ns > 0) {
      Emitter poll{{}, s.threads.poll_ns};
      poll.Call(Op::kStreamQuery, 0);
      Thread& t = rank.threads.emplace_back();
      t.code = std::move(poll.code);
      t.background = true;
    }
    if (s.threads.loader_ns > 0) {
      Emitter load{{}, 0};
      load.Cpu(s.threads.loader_ns);
      Thread& t = rank.threads.emplace_back();
      t.code = std::move(load.code);
      t.background = true;
    }
  }
}

}  // namespace emo::sim::wl

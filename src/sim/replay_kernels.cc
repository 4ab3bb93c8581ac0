// replay_kernels.cc — archetypes of replayed real kernels (see replay_kernels.h).
//
// Every range below is a modelling choice made for variety, not a measurement: no per-kernel
// counter data of the traced kernels is at hand. What is derived rather than chosen says so: the
// operand traffic of a GEMM tile (2·Mt·Nt FLOP per (Mt+Nt)·K-slice of operands), FlashAttention's
// traffic (the same formulas as AttentionKernels in kernel_model.cc), the bytes of a gemv (each
// weight read once for one FMA).
#include "sim/replay_kernels.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <initializer_list>

namespace emo::sim {
namespace {

bool HasAny(const std::string& s, std::initializer_list<const char*> parts) {
  for (const char* p : parts)
    if (Has(s, p)) return true;
  return false;
}
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }
// `word` not inside a longer word of letters ("add" in "fused_add_relu", not in "padding").
bool HasToken(const std::string& s, const std::string& word) {
  for (size_t at = s.find(word); at != std::string::npos; at = s.find(word, at + 1)) {
    const bool left = at == 0 || !IsLower(s[at - 1]);
    const bool right = at + word.size() >= s.size() || !IsLower(s[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

std::string Lower(const std::string& s) {
  std::string n;
  n.reserve(s.size());
  for (char c : s) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return n;
}

// The kernel's own name, lower case: the demangled function name without its return type,
// template and call arguments ("void at::native::reduce_kernel<512, 1, ...>(...)" ->
// "at::native::reduce_kernel"); a CUTLASS launch wrapper ("cutlass::Kernel<cutlass_80_tensorop_
// s1688gemm_128x128_32x3_nn_align4>") gives its first template argument, which names the kernel.
// Template arguments are left out because they name other things: cuBLAS helpers carry
// "cublasGemvTensorStridedBatched" whatever they do.
std::string Head(const std::string& name) {
  std::string n = Lower(name);
  for (size_t at; (at = n.find("(anonymous namespace)::")) != std::string::npos;) n.erase(at, 23);
  for (size_t at; (at = n.find("fbgemm_gpu::")) != std::string::npos;) n.erase(at, 12);  // not a GEMM library
  if (n.rfind("void ", 0) == 0) n.erase(0, 5);
  if (n.rfind("std::enable_if", 0) == 0) {
    const size_t at = n.find(">::type ");
    if (at != std::string::npos) n.erase(0, at + 8);
  }
  const size_t end = n.find_first_of("<(");
  std::string head = n.substr(0, end);
  auto ends_with = [&](const char* tail) {
    const std::string t(tail);
    return head.size() >= t.size() && head.compare(head.size() - t.size(), t.size(), t) == 0;
  };
  if (end != std::string::npos && n[end] == '<' &&
      ((Has(head, "cutlass") && (ends_with("::kernel") || ends_with("::kernel2"))) || ends_with("device_kernel"))) {
    const size_t from = end + 1;
    const size_t to = n.find_first_of("<>,(", from);
    head = n.substr(from, to == std::string::npos ? std::string::npos : to - from);
    head.erase(0, head.find_first_not_of(' '));
  }
  return head;
}

// Independent uniform draws for one name: draw i is a function of the name and i only, so adding
// a draw leaves the others as they were. Under a seed of their own, apart from the name's hidden
// factors (kernel_model.h), which the engine draws under --kernel-seed.
constexpr uint64_t kArchetypeSeed = 0x61726368;  // "arch"
class Draws {
 public:
  explicit Draws(const std::string& name) : name_(name) {}
  double U(uint64_t i) const { return NameUniform(name_, kArchetypeSeed, i); }
  double Between(uint64_t i, double lo, double hi) const { return lo + (hi - lo) * U(i); }
  double LogBetween(uint64_t i, double lo, double hi) const { return lo * std::pow(hi / lo, U(i)); }
  template <typename T>
  T Pick(uint64_t i, std::initializer_list<T> from) const {
    const size_t k = std::min(from.size() - 1, static_cast<size_t>(U(i) * static_cast<double>(from.size())));
    return *(from.begin() + k);
  }

 private:
  std::string_view name_;  // the caller's, which outlives the draws
};

// The first "AxB" in `s` with both sides in [16, 512]: a GEMM tile ("128x128", "tilesize256x64x32");
// smaller pairs are other things ("sliced1x4", "warpsize2x2x1", "64x3" = K slice and stages).
bool TileShape(const std::string& s, double* m, double* n) {
  for (size_t x = s.find('x'); x != std::string::npos; x = s.find('x', x + 1)) {
    size_t a = x;
    while (a > 0 && std::isdigit(static_cast<unsigned char>(s[a - 1]))) --a;
    size_t b = x + 1;
    while (b < s.size() && std::isdigit(static_cast<unsigned char>(s[b]))) ++b;
    if (a == x || b == x + 1 || b - x > 4 || x - a > 3) continue;
    const double l = std::stod(s.substr(a, x - a)), r = std::stod(s.substr(x + 1, b - x - 1));
    if (l >= 16 && r >= 16 && l <= 512 && r <= 512) {
      *m = l, *n = r;
      return true;
    }
  }
  // Itanium-mangled CUTLASS names: GemmShape<128, 128, 32> is "gemmshapeili128eli128eli32ee".
  const size_t at = s.find("gemmshapeili");
  if (at != std::string::npos) {
    size_t p = at + 12, q = p;
    while (q < s.size() && std::isdigit(static_cast<unsigned char>(s[q]))) ++q;
    if (q > p && s.compare(q, 3, "eli") == 0) {
      size_t r = q + 3, t = r;
      while (t < s.size() && std::isdigit(static_cast<unsigned char>(s[t]))) ++t;
      if (t > r) {
        *m = std::stod(s.substr(p, q - p));
        *n = std::stod(s.substr(r, t - r));
        return *m >= 8 && *n >= 8;
      }
    }
  }
  return false;
}

// "warpsize2x2x1": warps along M and N of the CTA tile.
bool WarpLayout(const std::string& s, double* wm, double* wn) {
  const size_t at = s.find("warpsize");
  if (at == std::string::npos || at + 11 > s.size()) return false;
  const char a = s[at + 8], x = s[at + 9], b = s[at + 10];
  if (!std::isdigit(static_cast<unsigned char>(a)) || x != 'x' || !std::isdigit(static_cast<unsigned char>(b)))
    return false;
  *wm = std::max(1, a - '0');
  *wn = std::max(1, b - '0');
  return true;
}

// The data type of a kernel: the first type name in its template arguments ("reduce_kernel<512, 1,
// ReduceOp<float, ...": float), 4-byte float when there is none.
struct ElementType {
  double bytes = 4;
  bool fp64 = false;
};
ElementType TypeOf(const std::string& n) {
  struct Key {
    const char* word;
    double bytes;
  };
  static const Key keys[] = {{"double", 8}, {"long", 8},     {"int64_t", 8}, {"float", 4}, {"int", 4},
                             {"half", 2},   {"bfloat16", 2}, {"bf16", 2},    {"fp16", 2},  {"bool", 1},
                             {"char", 1},   {"int8_t", 1},   {"uint8_t", 1}, {"fp8", 1}};
  const size_t from = std::min(n.size(), n.find('<'));
  ElementType t;
  size_t best = std::string::npos;
  for (const Key& k : keys) {
    const std::string w(k.word);
    for (size_t at = n.find(w, from); at != std::string::npos && at < best; at = n.find(w, at + 1)) {
      const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(n[at - 1]));
      const bool right = at + w.size() >= n.size() || !IsLower(n[at + w.size()]);
      if (left && right) {
        best = at, t.bytes = k.bytes, t.fp64 = w == "double";
        break;
      }
    }
  }
  return t;
}

void AddStreaming(KernelTraits* k, double read_bytes, double write_bytes, double l2_over_dram, double access_bytes) {
  k->dram_read_bytes += read_bytes;
  k->dram_write_bytes += write_bytes;
  const double l2 = (read_bytes + write_bytes) * l2_over_dram;
  k->l2_bytes += l2;
  k->l1_bytes += l2;
  k->lsu_ops += l2 / access_bytes;
}

// --- archetypes, each for a unit of work; ReplayKernelTraits scales it to the traced time --------

// GEMM or implicit-GEMM convolution, F FLOP. The CTA tile Mt×Nt (from the name, else drawn from
// the usual CUTLASS/cuBLAS tiles) sets the operand traffic through L2: each K slice brings
// (Mt+Nt)·K·b bytes for 2·Mt·Nt·K FLOP. DRAM sees that divided by the reuse of operands in L2
// (drawn; larger tiles come with larger problems, so more reuse); split-K writes and re-reads
// partial sums (DRAM traffic drawn 2–6x higher), a gemv reads every weight once per FMA.
KernelTraits Gemm(const std::string& head, const std::string& n, bool tensor, const Draws& d) {
  KernelTraits k;
  const double flop = 1e9;
  double b = tensor ? 2 : 4;  // operand bytes
  double rate = 1;            // FP16-tensor-FLOP equivalents per FLOP (the pipe's relative speed)
  if (tensor) {
    if (HasAny(n, {"tf32"}) || (HasAny(head, {"s1688", "s16816"}) && !HasAny(n, {"f16", "bf16", "h1688", "h16816"})))
      b = 4, rate = 2;  // TF32 runs at half the FP16 tensor rate (A100/H100 datasheets)
    else if (HasAny(n, {"int8", "i8816", "imma", "fp8", "e4m3", "e5m2"}))
      b = 1, rate = 0.5;  // INT8/FP8 run at twice the FP16 rate
  }
  double mt = 0, nt = 0;
  if (!TileShape(head, &mt, &nt)) {
    mt = d.Pick<double>(
        1, tensor ? std::initializer_list<double>{64, 128, 256} : std::initializer_list<double>{32, 64, 128});
    nt = d.Pick<double>(
        2, tensor ? std::initializer_list<double>{64, 128, 256} : std::initializer_list<double>{32, 64, 128});
  }
  const double l2_intensity = 2 * mt * nt / ((mt + nt) * b);  // FLOP per operand byte from L2 (derived)
  double reuse = d.LogBetween(3, 2, 8) * std::sqrt(mt * nt / (128.0 * 128.0));  // chosen, unsourced
  double dram_intensity = l2_intensity * std::max(1.0, reuse);
  const bool split_k = HasAny(head, {"splitk", "split_k"});
  if (split_k) dram_intensity /= d.LogBetween(4, 2, 6);  // chosen, unsourced
  // Matrix-vector (and K = 1, small-N) products: one FMA per weight read; the panel of N columns
  // (drawn for small-N kernels) multiplies that.
  if (Has(head, "gemv") || Has(head, "gemmk1")) {
    dram_intensity = 2 / b * d.Between(5, 0.7, 1.3);
  } else if (Has(head, "gemmsn")) {
    dram_intensity = 2 / b * d.LogBetween(5, 2, 16);
  }
  const double dram = flop / dram_intensity;
  const double write_share = split_k ? d.Between(6, 0.3, 0.5) : d.Between(6, 0.05, 0.25);  // chosen
  k.dram_read_bytes = dram * (1 - write_share);
  k.dram_write_bytes = dram * write_share;
  k.l2_bytes = std::max(flop / l2_intensity, dram) + k.dram_write_bytes;
  k.l1_bytes = k.l2_bytes;
  // Each warp reads its own operand fragments from shared memory: a wm×wn warp tile reads
  // (wm+wn)·b bytes per 2·wm·wn FLOP (derived); 2×2 warps per CTA unless the name says.
  double wy = 2, wx = 2;
  WarpLayout(head, &wy, &wx);
  const double wm = std::max(16.0, mt / wy), wn = std::max(16.0, nt / wx);
  k.shared_bytes = k.l2_bytes + flop * (wm + wn) * b / (2 * wm * wn);
  if (Has(head, "sliced")) k.shared_bytes *= d.Between(7, 1.2, 1.5);  // K split across warps: partials via smem
  k.lsu_ops = k.shared_bytes / 16;
  k.int_ops = 2 * k.lsu_ops;
  if (tensor)
    k.tensor_flop = flop * rate;
  else
    k.fp32_flop = flop;
  // Epilogue (scale, bias, activation, convert): 2·M·N of 2·M·N·K, K drawn.
  k.fp32_flop += flop / d.LogBetween(8, 128, 8192);
  if (HasAny(head, {"relu", "bias", "gelu"})) k.fp32_flop += flop / d.LogBetween(9, 128, 2048);
  // Achieved fraction of the pipes' peak, which sets the power: chosen so that a traced GEMM stays
  // near or under the A100's 400 W at the default clock, as on the GPU that was traced (unsourced).
  k.occupancy = d.Between(10, 0.35, 0.65);
  return k;
}

// FFT (cuFFT, cuDNN's FFT convolution): FP32 butterflies at a few FLOP per byte, staged through
// shared memory, twiddles partly from the SFU.
KernelTraits Fft(const Draws& d) {
  KernelTraits k;
  const double flop = 1e9;
  k.fp32_flop = flop;
  const double dram = flop / d.LogBetween(1, 2, 8);  // chosen, unsourced
  k.dram_read_bytes = dram / 2;
  k.dram_write_bytes = dram / 2;
  k.l2_bytes = dram * d.Between(2, 1, 1.5);
  k.l1_bytes = k.l2_bytes;
  k.shared_bytes = dram * d.Between(3, 2, 5);
  k.sfu_ops = flop / d.LogBetween(4, 20, 100);
  k.lsu_ops = (k.l2_bytes + k.shared_bytes) / 8;
  k.int_ops = k.lsu_ops;
  k.occupancy = d.Between(5, 0.5, 0.8);
  return k;
}

// Fused attention of one (batch, head): the traffic of AttentionKernels (kernel_model.cc) for a
// drawn sequence length and head dimension (from the name when it has one), with the
// softmax's shared-memory round trips drawn heavier; backward kernels ~2.5x the matmuls.
KernelTraits Attention(const std::string& head, const std::string& n, const Draws& d) {
  KernelTraits k;
  // Head dimension: "hdim128", "headdim64", or CUTLASS fmha's "_k128".
  double hd = d.Pick<double>(1, {64, 80, 128});
  for (const char* key : {"hdim", "headdim", "_k"}) {
    const std::string w(key);
    for (size_t at = head.find(w); at != std::string::npos; at = head.find(w, at + 1)) {
      size_t p = at + w.size(), q = p;
      while (q < head.size() && std::isdigit(static_cast<unsigned char>(head[q]))) ++q;
      const double v = q > p ? std::stod(head.substr(p, q - p)) : 0;
      if (v >= 16 && v <= 512) hd = v;
    }
  }
  const double seq = d.LogBetween(2, 512, 8192);  // chosen, unsourced
  const double b = HasAny(n, {"float,", "<float", "f32"}) && !HasAny(n, {"half", "bf16", "f16"}) ? 4 : 2;
  const double block = 128;
  const double scores = seq * seq;
  k.tensor_flop = 4 * scores * hd;
  k.fp32_flop = 6 * scores;
  k.sfu_ops = scores;
  const double qkvo = seq * hd * b;
  k.dram_read_bytes = 3 * qkvo;
  k.dram_write_bytes = qkvo + seq * 4;
  k.l2_bytes = 2 * qkvo * seq / block + 4 * qkvo;
  k.l1_bytes = k.l2_bytes;
  k.shared_bytes = k.l2_bytes + k.tensor_flop * b / 64 * d.Between(3, 1.5, 3);
  if (HasAny(head, {"bwd", "backward", "cutlassb", "dq_dk_dv", "dkdv"})) {
    k.tensor_flop *= 2.5;
    k.fp32_flop *= 2;
    k.dram_read_bytes *= 2;
    k.dram_write_bytes *= 3;
    k.l2_bytes *= d.Between(4, 2, 3);  // dQ accumulated through L2 atomics
    k.shared_bytes *= 2.5;
  }
  k.lsu_ops = k.shared_bytes / 16;
  k.int_ops = 2 * k.lsu_ops + scores / 8;
  k.occupancy = d.Between(5, 0.35, 0.6);  // as for GEMMs
  return k;
}

// Reductions and normalisations of E elements: memory-bound, a few FP32 FLOP per element, warp
// shuffles; softmax and losses add exp/log on the SFU, normalisations an rsqrt per row. Reductions
// proper write a small fraction of what they read, normalisations and softmax as much as they
// read; backward kernels read two or three tensors.
KernelTraits Reduction(const std::string& head, const std::string& n, const Draws& d) {
  KernelTraits k;
  const double e = 1e6;
  const ElementType type = TypeOf(n);
  const double b = type.bytes;
  const bool backward = HasAny(head, {"backward", "grad", "bw", "_bwd"});
  const double inputs = backward ? d.Pick<double>(1, {2, 3}) : 1;
  const bool same_size = HasAny(head, {"softmax", "norm", "bn_", "batch_norm", "batchnorm", "dropout"}) &&
                         !HasAny(head, {"gammabeta", "moments", "normtwo"});
  const double write = same_size ? e * b : e * b * d.LogBetween(2, 0.001, 0.3);  // chosen, unsourced
  // A two-pass kernel (softmax, norms) re-reads its rows from L2.
  AddStreaming(&k, e * b * inputs, write, d.Between(3, 1.0, 1.6), d.Pick<double>(4, {4, 8, 16}));
  double flops = e * d.LogBetween(5, 1, 6);
  if (HasAny(head, {"norm", "welford", "moments", "bn_"})) flops += 4 * e;
  (type.fp64 ? k.fp64_flop : k.fp32_flop) = flops;
  if (HasAny(head, {"softmax", "entropy", "nll", "loss"})) k.sfu_ops = e * d.Between(6, 1, 2);
  if (HasAny(head, {"norm", "bn_", "moments"})) k.sfu_ops = e / d.LogBetween(7, 64, 8192);
  k.int_ops = k.lsu_ops * 2 + e * d.Between(8, 0.25, 1);  // shuffles, index arithmetic
  k.occupancy = d.Between(9, 0.6, 0.95);
  return k;
}

// Streaming kernels of E elements: inputs and FLOP per element drawn (fixed where the name says:
// fills read nothing, copies one tensor, optimizer steps four), transcendental functions on the
// SFU, random numbers (dropout) integer-heavy, strided (non-vectorised TensorIterator) kernels with
// index arithmetic and partly used sectors.
KernelTraits Elementwise(const std::string& head, const std::string& n, const Draws& d) {
  KernelTraits k;
  const double e = 1e6;
  const ElementType type = TypeOf(n);
  const double b = type.bytes;
  double inputs = d.Pick<double>(1, {1, 2, 2, 3});
  double outputs = 1;
  double flops = d.LogBetween(2, 0.25, 3);  // chosen, unsourced
  double sfu = 0, ints = 1;
  const bool optimizer = HasAny(n, {"adam", "lamb", "sgd", "adagrad", "optimizer"});
  if (HasToken(head, "fill") || Has(head, "fillfunctor") || Has(n, "fillfunctor")) inputs = 0, flops = 0;
  if (HasAny(head, {"copy", "transpose", "nchwtonhwc", "nhwctonchw", "cast"}) || HasToken(head, "cat")) {
    inputs = 1, flops = 0;
  }
  if (optimizer) inputs = 4, outputs = 3, flops = d.LogBetween(3, 10, 25), sfu = 1;
  if (HasAny(n, {"tanh", "sigmoid", "gelu", "silu", "erf", "softplus", "sqrt", "_exp", "expfunctor", "logfunctor",
                 "pow", "_sin", "_cos", "sinfunctor", "cosfunctor"})) {
    sfu += d.Between(4, 1, 3);
    flops += d.LogBetween(5, 4, 16);
  }
  if (HasAny(n, {"dropout", "distribution", "random", "philox", "uniform", "normal"})) {
    ints += d.LogBetween(6, 8, 20);             // Philox rounds per number: chosen, unsourced
    if (Has(n, "dropout")) outputs += 1.0 / b;  // the byte mask
  }
  double l2_over_dram = 1, access = 16;
  if (Has(head, "vectorized")) {
    access = 16;
  } else if (Has(head, "unrolled")) {
    access = b;
  } else if (HasAny(head, {"elementwise_kernel", "index", "transpose", "nchwtonhwc", "nhwctonchw"})) {
    // TensorIterator's generic path: per-element offsets (integer divisions per dimension),
    // strided operands that use part of each sector.
    access = b;
    ints += d.LogBetween(7, 4, 16);
    l2_over_dram = d.Between(8, 1.0, 1.6);
  } else {
    access = d.Pick<double>(9, {4, 8, 16});
  }
  AddStreaming(&k, e * b * inputs, e * b * outputs, l2_over_dram, access);
  (type.fp64 && !optimizer ? k.fp64_flop : k.fp32_flop) = e * flops;
  k.sfu_ops = e * sfu;
  k.int_ops = k.lsu_ops + e * ints;
  k.occupancy = d.Between(10, 0.75, 1.0);
  return k;
}

// Gather/scatter/index/embedding over E elements: the useful bytes (values and their indices) are
// few against the traffic they cause: scattered b-byte accesses use part of each 32-byte sector, so
// L2 moves several times what DRAM delivers, one load/store per element, address arithmetic, atomics
// at L2 for scatters and embedding backward; fewer warps resident (divergent, register-heavy).
KernelTraits Gather(const std::string& head, const std::string& n, const Draws& d) {
  KernelTraits k;
  const double e = 1e6;
  const double b = TypeOf(n).bytes;
  const double index_bytes = Has(n, "long") ? 8 : 4;
  const double read = e * (b * d.Between(1, 1, 2) + index_bytes), write = e * b;
  AddStreaming(&k, read, write, d.LogBetween(2, 1.2, 3.5), b);  // sector waste: chosen, unsourced
  if (HasAny(head, {"scatter", "backward", "put", "indexfunc", "index_add", "segment"}))
    k.l2_bytes *= d.Between(3, 1.2, 1.8);  // atomics
  k.lsu_ops = e * d.Between(4, 2, 4);
  k.int_ops = e * d.LogBetween(5, 6, 20);
  if (HasAny(head, {"offsets", "bucketize", "searchsorted", "sort", "radix", "unique", "permute", "linearize"}))
    k.int_ops *= 2;  // index computation rather than data movement
  k.fp32_flop = e * d.Between(6, 0, 1);
  if (HasAny(head, {"adagrad", "adam", "sgd"})) {  // fused optimizer step
    k.fp32_flop += e * d.LogBetween(7, 4, 12);
    k.sfu_ops = e;
  }
  k.occupancy = d.Between(8, 0.35, 0.75);
  return k;
}

// NCCL kernel without its peers (or the kernel of a collective): copies between buffers (and the
// reduction of all-reduce), on a few SMs (one block per channel).
KernelTraits Communication(const std::string& head, const Draws& d) {
  KernelTraits k;
  const double bytes = 1e6;
  AddStreaming(&k, bytes, bytes * d.Between(1, 0.5, 1), 1, 16);
  if (HasAny(head, {"allreduce", "reducescatter", "reduce_"})) k.fp32_flop = bytes / 4;
  k.int_ops = 4 * k.lsu_ops;
  k.occupancy = d.Between(2, 0.1, 0.3);  // 8–32 channels of 108 SMs: chosen, unsourced
  return k;
}

// memcpy/memset kernels: a copy (or a write only).
KernelTraits Copy(const std::string& head, const Draws& d) {
  KernelTraits k;
  const double bytes = 1e6;
  AddStreaming(&k, Has(head, "memset") ? 0 : bytes, bytes, 1, 16);
  k.int_ops = k.lsu_ops;
  k.occupancy = d.Between(1, 0.9, 1.0);
  return k;
}

// Nothing known: FP32 and integer work against DRAM traffic at an intensity drawn across the
// range from streaming (0.1 FLOP/byte) to compute-bound (100 FLOP/byte), some L2 reuse.
KernelTraits Unknown(const Draws& d) {
  KernelTraits k;
  const double bytes = 1e6;
  const double read = bytes * d.Between(1, 0.3, 0.8);
  AddStreaming(&k, read, bytes - read, d.LogBetween(2, 1, 4), d.Pick<double>(3, {4, 8, 16}));
  k.fp32_flop = bytes * d.LogBetween(4, 0.1, 100);
  k.int_ops = k.lsu_ops + k.fp32_flop * d.Between(5, 0.1, 1);
  k.sfu_ops = k.fp32_flop * d.Between(6, 0, 0.05);
  k.shared_bytes = bytes * d.Between(7, 0, 2);
  k.occupancy = d.Between(8, 0.4, 1.0);
  return k;
}

// Work scaled so that the kernel takes `seconds` at the device's default clock.
KernelTraits Scaled(const DeviceSpec& spec, KernelTraits t, double seconds) {
  t.overhead_s = 0;
  ScaleToTime(spec, seconds, spec.default_sm_clock_mhz, &t);
  return t;
}

}  // namespace

const char* ReplayKernelClassName(ReplayKernelClass c) {
  switch (c) {
    case ReplayKernelClass::kTensorGemm:
      return "tensor-gemm";
    case ReplayKernelClass::kFp32Gemm:
      return "fp32-gemm";
    case ReplayKernelClass::kAttention:
      return "attention";
    case ReplayKernelClass::kReduction:
      return "reduction";
    case ReplayKernelClass::kElementwise:
      return "elementwise";
    case ReplayKernelClass::kGather:
      return "gather";
    case ReplayKernelClass::kCommunication:
      return "communication";
    case ReplayKernelClass::kCopy:
      return "copy";
    case ReplayKernelClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

// The rules, first match wins; their order resolves names that match several (a split-K reduction
// is a reduction though CUTLASS names it, an index kernel is a gather though elementwise).
ReplayKernelClass ClassifyReplayKernel(const std::string& name) {
  const std::string n = Lower(name);
  const std::string h = Head(name);
  using C = ReplayKernelClass;
  if (Has(h, "nccl")) return C::kCommunication;
  if (HasAny(h, {"memcpy", "memset"})) return C::kCopy;
  if (HasAny(h, {"flash", "fmha", "attention", "sdpa", "attn"})) return C::kAttention;
  // GEMM helpers: sums of split-K partial products, cuDNN's offset tables.
  if (HasAny(h, {"splitkreduce", "reducesplitk", "reduce_wgrad"})) return C::kReduction;
  if (Has(h, "offsets")) return C::kGather;
  if (Has(h, "elementwise_kernel_with_index")) return C::kElementwise;  // arange
  // cuDNN's non-fused Winograd: the data, filter and output transforms around a batched GEMM.
  if (Has(h, "winograd_nonfused") || Has(h, "generatewinogradtiles")) return C::kElementwise;
  if (HasAny(h, {"sgemm", "scudnn", "simt", "cgemm", "dgemm", "fft"})) return C::kFp32Gemm;
  if (HasAny(h, {"cutlass", "xmma", "nvjet", "tensorop", "hmma", "imma", "wgmma", "s16816", "s1688", "h884", "h1688",
                 "h16816", "i8816", "implicit_convolve", "implicit_gemm", "implicitgemm", "cublaslt", "triton_tem"}))
    return C::kTensorGemm;
  if (HasAny(h, {"gemm", "gemv", "matmul", "wgrad", "dgrad", "fprop"}) || (Has(h, "conv") && !Has(h, "convert"))) {
    // Generic names: the data type decides the pipe.
    if (HasAny(n, {"half", "bf16", "bfloat16", "fp16", "tf32", "int8", "fp8"})) return C::kTensorGemm;
    return HasAny(n, {"float", "double"}) ? C::kFp32Gemm : C::kTensorGemm;
  }
  if (HasAny(h, {"gather", "scatter", "index", "embedding", "embs", "bucketize", "searchsorted", "permute_2d",
                 "permute_indices", "sparse", "sort", "radix", "unique", "segment", "jagged", "histogram"}))
    return C::kGather;
  if (HasAny(h, {"reduce", "sum",        "softmax",    "mean",       "cross_entropy", "nll_loss",  "loss", "bn_fw",
                 "bn_bw",  "batch_norm", "batchnorm",  "welford",    "moments",       "gammabeta", "pool", "argmax",
                 "argmin", "topk",       "dot_kernel", "triton_red", "triton_per",    "cumsum",    "scan"}) ||
      (Has(h, "norm") && !Has(h, "normal")))
    return C::kReduction;
  if (HasAny(h, {"elementwise", "vectorized", "unrolled",  "copy",       "dropout",  "multi_tensor_apply",
                 "adam",        "lamb",       "optimizer", "triton_poi", "epilogue", "transpose",
                 "nchwtonhwc",  "nhwctonchw", "scale",     "quantiz",    "clamp",    "distribution",
                 "random",      "philox",     "arange",    "relu",       "gelu",     "silu",
                 "tanh",        "sigmoid"}))
    return C::kElementwise;
  for (const char* word :
       {"add", "mul", "div", "sub", "fill", "cast", "where", "abs", "exp", "neg", "pow", "sqrt", "sgd", "fused", "cat"})
    if (HasToken(h, word)) return C::kElementwise;
  return C::kUnknown;
}

KernelTraits ReplayKernelTraits(const std::string& name, ReplayKernelClass cls, double seconds,
                                const DeviceSpec& spec) {
  const Draws d(name);
  const std::string n = Lower(name);
  const std::string h = Head(name);
  KernelTraits k;
  switch (cls) {
    case ReplayKernelClass::kTensorGemm:
      k = Gemm(h, n, true, d);
      break;
    case ReplayKernelClass::kFp32Gemm:
      k = Has(h, "fft") ? Fft(d) : Gemm(h, n, false, d);
      break;
    case ReplayKernelClass::kAttention:
      k = Attention(h, n, d);
      break;
    case ReplayKernelClass::kReduction:
      k = Reduction(h, n, d);
      break;
    case ReplayKernelClass::kElementwise:
      k = Elementwise(h, n, d);
      break;
    case ReplayKernelClass::kGather:
      k = Gather(h, n, d);
      break;
    case ReplayKernelClass::kCommunication:
      k = Communication(h, d);
      break;
    case ReplayKernelClass::kCopy:
      k = Copy(h, d);
      break;
    case ReplayKernelClass::kUnknown:
      k = Unknown(d);
      break;
  }
  return Scaled(spec, k, seconds);
}

KernelTraits ReplayKernelTraits(const std::string& name, double seconds, const DeviceSpec& spec) {
  return ReplayKernelTraits(name, ClassifyReplayKernel(name), seconds, spec);
}

}  // namespace emo::sim

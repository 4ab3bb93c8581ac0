// replay_kernels.h — the hidden characteristics of a replayed real kernel, inferred from its name.
//
// A trace gives a kernel's name and duration, not what it did. The replay gives each name an
// archetype (GEMM on tensor cores or in FP32, attention, reduction, elementwise, gather/scatter,
// communication, copy) from the words and tile shapes real kernel names carry, and draws the
// archetype's free characteristics (arithmetic intensity, read/write mix, coalescing, occupancy,
// special-function and integer work) from a distribution of that archetype, seeded by a stable hash
// of the name (FNV-1a): the same name always gets the same characteristics, two names of one
// archetype differ as real kernels do. The work is then scaled so that the kernel takes its traced
// duration at the device's default clock; what the draws change is how its time and power move
// with the clock. Only the simulator reads these (kernel_model.h).
#pragma once

#include <string>

#include "sim/device_spec.h"
#include "sim/kernel_model.h"

namespace emo::sim {

enum class ReplayKernelClass {
  kTensorGemm,     // GEMM or convolution on tensor cores (cuBLAS, CUTLASS, cuDNN xmma, nvjet)
  kFp32Gemm,       // GEMM or convolution in FP32 on the SIMT pipes (sgemm, scudnn), FFT
  kAttention,      // fused attention (FlashAttention, fmha, sdpa)
  kReduction,      // reductions and normalisations (sum, mean, softmax, layer/batch norm, pooling)
  kElementwise,    // streaming kernels (arithmetic, copies, fills, casts, dropout, optimizer steps)
  kGather,         // gather/scatter/index/embedding: irregular, poorly coalesced accesses
  kCommunication,  // NCCL kernels
  kCopy,           // memcpy/memset kernels
  kUnknown,        // nothing in the name says: drawn across the memory- to compute-bound range
};

const char* ReplayKernelClassName(ReplayKernelClass c);

// Whether a kernel name holds `part` (case as given).
inline bool Has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The archetype of a kernel name (exposed for the tests of the name table).
ReplayKernelClass ClassifyReplayKernel(const std::string& name);

// The characteristics a replayed kernel named `name` of class `cls` gets when it took `seconds`:
// drawn from the FNV-1a hash of `name`, scaled to take `seconds` at spec's default clock.
KernelTraits ReplayKernelTraits(const std::string& name, ReplayKernelClass cls, double seconds, const DeviceSpec& spec);
// The same with the class of the name (what the replay does for a kernel launch; tests use it).
KernelTraits ReplayKernelTraits(const std::string& name, double seconds, const DeviceSpec& spec);

}  // namespace emo::sim

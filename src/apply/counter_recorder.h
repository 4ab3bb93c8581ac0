// counter_recorder.h — samples GPUs' SM clock, power and energy counter into counter tracks
// (trace.h: CounterTrack), which libemo_inject.so writes beside the kernels it traces: Perfetto
// draws them, `emo analyze` summarises them, and `emo optimize --trace` takes each GPU's power and
// clock from them. The traced process numbers its GPUs as CUDA does (after CUDA_VISIBLE_DEVICES);
// the back end (NVML) numbers every GPU of the machine: the two meet by UUID.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "device/gpu_control.h"
#include "trace/trace.h"

namespace emo {

// A device UUID as NVML and nvidia-smi spell it ("GPU-" and 8-4-4-4-12 hex digits), from the 16
// bytes CUDA gives (cuDeviceGetUuid).
std::string GpuUuidString(const unsigned char (&bytes)[16]);

class CounterRecorder {
 public:
  // cuda_uuids: per CUDA device of the traced process (its ordinal, which the kernels carry), its
  // UUID. A device no GPU of `gpus` has (a MIG instance) gets no tracks; unmatched() names it.
  CounterRecorder(const GpuControl* gpus, const std::vector<std::string>& cuda_uuids);

  // One reading of each matched GPU's clock, power and energy, stamped t_ns (the trace's clock),
  // where `in_use` (per CUDA device; null: every one) says the process uses it. A reading refused
  // is left out; the clock is kept only where it changed.
  void Sample(int64_t t_ns, const std::vector<char>* in_use = nullptr);
  // Forgets every sample but the latest of each track: nothing before now will be written (no
  // window records yet), and memory stays bounded however long the process runs.
  void KeepLatestOnly();
  // The tracks so far (a copy).
  std::vector<CounterTrack> Tracks() const;
  // How many CUDA devices have tracks, and the UUIDs of those that do not.
  size_t matched() const { return devices_.size(); }
  const std::vector<std::string>& unmatched() const { return unmatched_; }

 private:
  struct Device {
    int32_t cuda;  // the ordinal in the traced process
    int gpu;       // the back end's index
  };
  const GpuControl* gpus_;
  std::vector<Device> devices_;
  std::vector<std::string> unmatched_;
  mutable std::mutex mu_;             // guards tracks_: Sample runs on a thread of its own
  std::vector<CounterTrack> tracks_;  // per device: clock, power, energy
};

}  // namespace emo

// gpu_selection.h — which of the machine's GPUs `emo run` controls and measures, numbered as the
// job sees them. A policy's GPU indices, an online method's and the measurement's per_gpu are CUDA
// device ordinals in the job (after CUDA_VISIBLE_DEVICES); a back end (NVML, zeusd) numbers every
// GPU of the machine. GpuView maps the one onto the other.
//
// Where the selection comes from, first match wins:
//   --gpus LIST            back-end indices as `emo gpus` lists them, or UUIDs (GPU-..., a unique
//                          prefix is enough), comma-separated; EMO then sets CUDA_VISIBLE_DEVICES
//                          for the job to those GPUs' UUIDs (indices and CUDA_DEVICE_ORDER=PCI_BUS_ID
//                          on a back end without UUIDs), so that the job's device i is LIST[i].
//   CUDA_VISIBLE_DEVICES   as CUDA reads it for the job: indices or UUID prefixes, comma-separated;
//                          a negative index ends the list ("-1" hides every GPU). Indices are taken
//                          in NVML's order (PCI bus order), which is CUDA's when
//                          CUDA_DEVICE_ORDER=PCI_BUS_ID or all the GPUs are of one model; otherwise
//                          a warning says to set it or to name the GPUs by UUID.
//   neither                every GPU, in the back end's order.
// An unknown index or UUID, an ambiguous prefix, a GPU named twice, a MIG device or an empty
// selection is an error naming the entry and where it came from.
#pragma once

#include <string>
#include <vector>

#include "device/gpu_control.h"

namespace emo {

inline constexpr const char* kCudaVisibleDevicesEnv = "CUDA_VISIBLE_DEVICES";

struct GpuSelection {
  std::vector<int> gpus;  // the back end's index of job device 0, 1, ...
  std::string source;     // "--gpus", "CUDA_VISIBLE_DEVICES" or "all"
  // The CUDA_VISIBLE_DEVICES to give the job; "" to leave the environment as it is.
  std::string job_cuda_visible_devices;
  bool job_pci_bus_order = false;  // and CUDA_DEVICE_ORDER=PCI_BUS_ID (indices, when UUIDs are unknown)
  std::string warning;             // "" or a line for the user
};

// The machine's GPUs as the back end lists them: uuids[i] is GPU i's ("" where unknown), names[i]
// its model.
struct GpuInventory {
  std::vector<std::string> uuids;
  std::vector<std::string> names;
};
GpuInventory InventoryOf(const GpuControl& gpus);

// gpus_option: the --gpus value ("" when not given). cuda_visible_devices: the environment's value
// (null when unset). cuda_device_order: CUDA_DEVICE_ORDER (null when unset). False with *err.
bool SelectJobGpus(const std::string& gpus_option, const char* cuda_visible_devices, const char* cuda_device_order,
                   const GpuInventory& machine, GpuSelection* out, std::string* err);

// The selected GPUs of `base` as a GpuControl of their own: GPU i here is base's gpus[i].
class GpuView : public GpuControl {
 public:
  GpuView(GpuControl* base, std::vector<int> gpus) : base_(base), gpus_(std::move(gpus)) {}
  int Count() const override { return static_cast<int>(gpus_.size()); }
  // The back end's index of GPU `gpu` of this view.
  int BaseIndex(int gpu) const { return gpus_[static_cast<size_t>(gpu)]; }

  std::string Name(int gpu) const override { return base_->Name(BaseIndex(gpu)); }
  std::string Uuid(int gpu) const override { return base_->Uuid(BaseIndex(gpu)); }
  std::vector<int> SupportedClocks(int gpu) const override { return base_->SupportedClocks(BaseIndex(gpu)); }
  bool SetLockedClock(int gpu, int mhz, std::string* err) override {
    return base_->SetLockedClock(BaseIndex(gpu), mhz, err);
  }
  bool ResetClock(int gpu, std::string* err) override { return base_->ResetClock(BaseIndex(gpu), err); }
  bool SetPowerLimit(int gpu, double watts, std::string* err) override {
    return base_->SetPowerLimit(BaseIndex(gpu), watts, err);
  }
  bool Offers(Reading r) const override { return base_->Offers(r); }
  std::optional<double> EnergyJ(int gpu) const override { return base_->EnergyJ(BaseIndex(gpu)); }
  std::optional<double> PowerW(int gpu) const override { return base_->PowerW(BaseIndex(gpu)); }
  std::optional<double> Utilization(int gpu) const override { return base_->Utilization(BaseIndex(gpu)); }
  std::optional<double> MemoryUtilization(int gpu) const override { return base_->MemoryUtilization(BaseIndex(gpu)); }
  std::optional<double> ClockMhz(int gpu) const override { return base_->ClockMhz(BaseIndex(gpu)); }
  std::optional<double> PowerLimitW(int gpu) const override { return base_->PowerLimitW(BaseIndex(gpu)); }
  bool PowerLimitRange(int gpu, double* min_w, double* max_w) const override {
    return base_->PowerLimitRange(BaseIndex(gpu), min_w, max_w);
  }
  bool StartActivity(int gpu) override { return base_->StartActivity(BaseIndex(gpu)); }
  std::optional<Activity> ReadActivity(int gpu) override { return base_->ReadActivity(BaseIndex(gpu)); }
  bool StartCounters(int gpu) override { return base_->StartCounters(BaseIndex(gpu)); }
  std::optional<PackMetrics> ReadCounters(int gpu) override { return base_->ReadCounters(BaseIndex(gpu)); }
  std::string error() const override { return base_->error(); }

 private:
  GpuControl* base_;
  std::vector<int> gpus_;
};

}  // namespace emo

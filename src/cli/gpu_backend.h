// gpu_backend.h — the `--backend` choice of `emo gpus` and `emo run`: the GPUs through NVML (needs
// root to change clocks) or through the Zeus daemon (zeusd does it on the user's behalf).
#pragma once

#include <memory>
#include <string>

#include "apply/nvml_gpu_control.h"
#include "apply/zeusd_gpu_control.h"

namespace emo {

inline constexpr const char* kGpuBackendUsage =
    "nvml (default; changes need root) or zeusd (the Zeus daemon at "
    "$ZEUSD_SOCK_PATH, default /var/run/zeusd.sock; token $ZEUSD_TOKEN)";

struct GpuBackend {
  std::unique_ptr<NvmlGpuControl> nvml;
  std::unique_ptr<ZeusdGpuControl> zeusd;
  GpuControl* gpus = nullptr;  // whichever is open

  // Opens `name` ("nvml" or "zeusd"); false with *err.
  bool Open(const std::string& name, std::string* err) {
    if (name == "nvml") {
      nvml = NvmlGpuControl::Open(err);
      gpus = nvml.get();
    } else if (name == "zeusd") {
      zeusd = ZeusdGpuControl::Open(err);
      gpus = zeusd.get();
    } else {
      *err = "unknown GPU back end '" + name + "' (nvml or zeusd)";
    }
    return gpus != nullptr;
  }
  // Restores what this process changed (both back ends remember it).
  bool RestoreAll(std::string* err) { return nvml ? nvml->RestoreAll(err) : zeusd->RestoreAll(err); }
};

}  // namespace emo

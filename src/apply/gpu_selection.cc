// gpu_selection.cc — reading --gpus and CUDA_VISIBLE_DEVICES into the back end's GPU indices.
#include "apply/gpu_selection.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace emo {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == ',') {
      out.push_back(Trim(s.substr(start, i - start)));
      start = i + 1;
    }
  return out;
}

bool AllDigits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool StartsWithNoCase(const std::string& s, const std::string& prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

// One entry: a back-end index or a UUID prefix. `where` names the source in errors. True with
// *gpu, or false with *err.
bool Resolve(const std::string& entry, const std::string& where, const GpuInventory& m, int* gpu, std::string* err) {
  const int count = static_cast<int>(m.uuids.size());
  if (AllDigits(entry)) {
    const long v = entry.size() > 9 ? count : std::strtol(entry.c_str(), nullptr, 10);
    if (v >= count) {
      *err = where + ": no GPU " + entry + " (there are " + std::to_string(count) + ": 0-" + std::to_string(count - 1) +
             ")";
      return false;
    }
    *gpu = static_cast<int>(v);
    return true;
  }
  if (StartsWithNoCase(entry, "MIG-")) {
    *err = where + ": " + entry + " is a MIG device; EMO controls whole GPUs only";
    return false;
  }
  if (!StartsWithNoCase(entry, "GPU-")) {
    *err = where + ": '" + entry + "' is neither a GPU index nor a UUID (GPU-...)";
    return false;
  }
  if (std::all_of(m.uuids.begin(), m.uuids.end(), [](const std::string& u) { return u.empty(); })) {
    *err = where + ": " + entry + ": this GPU back end reports no UUIDs; name the GPU by index";
    return false;
  }
  std::vector<int> hits;
  for (int i = 0; i < count; ++i)
    if (StartsWithNoCase(m.uuids[static_cast<size_t>(i)], entry)) hits.push_back(i);
  if (hits.empty()) {
    *err = where + ": no GPU has UUID " + entry + " (emo gpus lists them)";
    return false;
  }
  if (hits.size() > 1) {
    *err = where + ": UUID prefix " + entry + " matches GPUs " + std::to_string(hits[0]) + " and " +
           std::to_string(hits[1]) + "; give more of it";
    return false;
  }
  *gpu = hits[0];
  return true;
}

// Every entry of `list`; with cuda_rules, a negative index ends the list, as CUDA reads it.
bool ResolveList(const std::string& list, const std::string& where, bool cuda_rules, const GpuInventory& m,
                 std::vector<int>* out, std::string* err) {
  out->clear();
  const std::vector<std::string> entries = Trim(list).empty() ? std::vector<std::string>{} : Split(list);
  for (const std::string& e : entries) {
    if (cuda_rules && e.size() > 1 && e[0] == '-' && AllDigits(e.substr(1))) break;
    int gpu = -1;
    if (!Resolve(e, where, m, &gpu, err)) return false;
    if (std::find(out->begin(), out->end(), gpu) != out->end()) {
      *err = where + ": GPU " + std::to_string(gpu) + " named twice ('" + e + "')";
      return false;
    }
    out->push_back(gpu);
  }
  if (out->empty()) {
    *err = where + " '" + list + "' leaves the job no GPU: nothing for EMO to control or measure";
    return false;
  }
  return true;
}

}  // namespace

GpuInventory InventoryOf(const GpuControl& gpus) {
  GpuInventory m;
  for (int g = 0; g < gpus.Count(); ++g) {
    m.uuids.push_back(gpus.Uuid(g));
    m.names.push_back(gpus.Name(g));
  }
  return m;
}

bool SelectJobGpus(const std::string& gpus_option, const char* cuda_visible_devices, const char* cuda_device_order,
                   const GpuInventory& machine, GpuSelection* out, std::string* err) {
  *out = GpuSelection{};
  if (!gpus_option.empty()) {
    if (cuda_visible_devices) {
      *err = std::string("--gpus and ") + kCudaVisibleDevicesEnv + "='" + cuda_visible_devices +
             "' both choose the job's GPUs: give one (--gpus sets " + kCudaVisibleDevicesEnv + " for the job)";
      return false;
    }
    out->source = "--gpus";
    if (!ResolveList(gpus_option, "--gpus", /*cuda_rules=*/false, machine, &out->gpus, err)) return false;
    // The job sees exactly these GPUs, in this order: by UUID when the back end knows them (immune
    // to CUDA's device order), else by index in PCI bus order.
    std::string cvd;
    bool by_uuid = true;
    for (int g : out->gpus) by_uuid = by_uuid && !machine.uuids[static_cast<size_t>(g)].empty();
    for (int g : out->gpus)
      cvd += (cvd.empty() ? "" : ",") + (by_uuid ? machine.uuids[static_cast<size_t>(g)] : std::to_string(g));
    out->job_cuda_visible_devices = cvd;
    out->job_pci_bus_order = !by_uuid;
    return true;
  }
  if (cuda_visible_devices) {
    out->source = kCudaVisibleDevicesEnv;
    if (!ResolveList(cuda_visible_devices, kCudaVisibleDevicesEnv, /*cuda_rules=*/true, machine, &out->gpus, err))
      return false;
    // Indices are NVML's (PCI bus) order; CUDA's default order puts the fastest GPU first.
    bool by_index = false;
    for (const std::string& e : Split(cuda_visible_devices)) by_index = by_index || AllDigits(e);
    const bool mixed = std::any_of(machine.names.begin(), machine.names.end(),
                                   [&](const std::string& n) { return n != machine.names.front(); });
    if (by_index && mixed && (!cuda_device_order || std::string(cuda_device_order) != "PCI_BUS_ID"))
      out->warning = std::string(kCudaVisibleDevicesEnv) +
                     " holds indices and the GPUs are of different models: CUDA numbers them fastest first, EMO "
                     "in PCI bus order; set CUDA_DEVICE_ORDER=PCI_BUS_ID or name the GPUs by UUID";
    return true;
  }
  out->source = "all";
  for (int g = 0; g < static_cast<int>(machine.uuids.size()); ++g) out->gpus.push_back(g);
  return true;
}

}  // namespace emo

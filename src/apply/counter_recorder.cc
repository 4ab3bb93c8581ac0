// counter_recorder.cc — GPUs' clock, power and energy as counter tracks (counter_recorder.h).
#include "apply/counter_recorder.h"

#include <fmt/core.h>

namespace emo {

std::string GpuUuidString(const unsigned char (&b)[16]) {
  return fmt::format(
      "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}", b[0],
      b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

CounterRecorder::CounterRecorder(const GpuControl* gpus, const std::vector<std::string>& cuda_uuids) : gpus_(gpus) {
  for (size_t d = 0; d < cuda_uuids.size(); ++d) {
    int found = -1;
    for (int g = 0; g < gpus->Count() && found < 0; ++g)
      if (!cuda_uuids[d].empty() && gpus->Uuid(g) == cuda_uuids[d]) found = g;
    if (found < 0) {
      unmatched_.push_back(cuda_uuids[d]);
      continue;
    }
    const int32_t cuda = static_cast<int32_t>(d);
    devices_.push_back({cuda, found});
    tracks_.push_back({cuda, "sm_clock", "MHz", {}, {}});
    tracks_.push_back({cuda, "power", "W", {}, {}});
    tracks_.push_back({cuda, "energy", "J", {}, {}});
  }
}

void CounterRecorder::Sample(int64_t t_ns, const std::vector<char>* in_use) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    const size_t cuda = static_cast<size_t>(devices_[i].cuda);
    if (in_use && (cuda >= in_use->size() || !(*in_use)[cuda])) continue;
    const int gpu = devices_[i].gpu;
    const std::optional<double> readings[3] = {gpus_->ClockMhz(gpu), gpus_->PowerW(gpu), gpus_->EnergyJ(gpu)};
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t k = 0; k < 3; ++k) {
      CounterTrack& c = tracks_[3 * i + k];
      if (!readings[k] || (k == 0 && !c.value.empty() && c.value.back() == *readings[k])) continue;
      c.t_ns.push_back(t_ns);
      c.value.push_back(*readings[k]);
    }
  }
}

void CounterRecorder::KeepLatestOnly() {
  std::lock_guard<std::mutex> lock(mu_);
  for (CounterTrack& c : tracks_)
    if (c.t_ns.size() > 1) {
      c.t_ns.erase(c.t_ns.begin(), c.t_ns.end() - 1);
      c.value.erase(c.value.begin(), c.value.end() - 1);
    }
}

std::vector<CounterTrack> CounterRecorder::Tracks() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tracks_;
}

}  // namespace emo

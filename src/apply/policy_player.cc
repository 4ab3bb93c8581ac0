// policy_player.cc — playing a frequency policy at every iteration start.
#include "apply/policy_player.h"

namespace emo {

void PolicyPlayer::OnIterationStart(int /*iteration*/, double now_ns) {
  for (const auto& g : policy_.gpus) {
    for (const ClockChange& c : g.changes) {
      int gpu = g.gpu, mhz = c.mhz;
      host()->At(now_ns + c.t_ms * 1e6, [this, gpu, mhz](double) {
        std::string err;
        if (!gpus_->SetLockedClock(gpu, mhz, &err)) Fail(err);
      });
    }
  }
}

void PolicyPlayer::Finish() {
  for (const auto& g : policy_.gpus) {
    std::string err;
    if (!g.changes.empty() && !gpus_->ResetClock(g.gpu, &err)) Fail(err);
  }
}

}  // namespace emo

// fake_gpus.h — a scripted GpuControl for controller tests: the test sets what the telemetry
// reads and checks every command the controller sent.
#pragma once

#include <string>
#include <vector>

#include "device/gpu_control.h"

namespace emo {

class FakeGpus : public GpuControl {
 public:
  struct Command {
    enum What { kLock, kReset, kLimit } what;
    int gpu;
    double value;  // MHz or W
    int step;      // FakeGpus::step when sent
    bool operator==(const Command& o) const {
      return what == o.what && gpu == o.gpu && value == o.value && step == o.step;
    }
  };

  FakeGpus(int n, std::string name, std::vector<int> clocks, double min_w, double max_w)
      : energy(n, 0),
        power(n, 0),
        util(n, 0),
        mem_util(n, 0),
        clock(n, 0),
        limit(n, max_w),
        name_(std::move(name)),
        clocks_(std::move(clocks)),
        min_w_(min_w),
        max_w_(max_w) {}

  int Count() const override { return static_cast<int>(energy.size()); }
  std::string Name(int) const override { return name_; }
  std::vector<int> SupportedClocks(int) const override { return clocks_; }
  bool SetLockedClock(int gpu, int mhz, std::string* err) override {
    return Send({Command::kLock, gpu, static_cast<double>(mhz), step}, err);
  }
  bool ResetClock(int gpu, std::string* err) override { return Send({Command::kReset, gpu, 0, step}, err); }
  bool SetPowerLimit(int gpu, double watts, std::string* err) override {
    if (!Send({Command::kLimit, gpu, watts, step}, err)) return false;
    limit[static_cast<size_t>(gpu)] = watts;
    return true;
  }
  bool Offers(Reading r) const override {  // no GPM, no counters
    return r != missing && r != Reading::kActivity && r != Reading::kCounters;
  }
  std::optional<double> PowerLimitW(int gpu) const override { return Get(Reading::kPowerLimit, limit, gpu); }
  bool PowerLimitRange(int, double* min_w, double* max_w) const override {
    *min_w = min_w_;
    *max_w = max_w_;
    return true;
  }
  std::optional<double> EnergyJ(int gpu) const override { return Get(Reading::kEnergy, energy, gpu); }
  std::optional<double> PowerW(int gpu) const override { return Get(Reading::kPower, power, gpu); }
  std::optional<double> Utilization(int gpu) const override { return Get(Reading::kUtilization, util, gpu); }
  std::optional<double> MemoryUtilization(int gpu) const override {
    return Get(Reading::kMemoryUtilization, mem_util, gpu);
  }
  std::optional<double> ClockMhz(int gpu) const override { return Get(Reading::kClock, clock, gpu); }
  std::string error() const override { return failing ? "GPU fell off the bus" : ""; }

  // Commands of one kind to one GPU.
  std::vector<Command> Sent(Command::What what, int gpu) const {
    std::vector<Command> out;
    for (const Command& c : commands)
      if (c.what == what && c.gpu == gpu) out.push_back(c);
    return out;
  }

  int step = 0;                                // the test's notion of time (a training step or a tick)
  bool refuse = false;                         // every command fails, as without permission
  bool failing = false;                        // every read fails, as after a GPU is lost
  Reading missing = static_cast<Reading>(-1);  // a reading this back end does not offer, as zeusd's utilisation
  std::vector<Command> commands;
  std::vector<double> energy, power, util, mem_util, clock, limit;

 private:
  bool Send(const Command& c, std::string* err) {
    if (refuse) {
      *err = "no permission to change GPU " + std::to_string(c.gpu);
      return false;
    }
    commands.push_back(c);
    return true;
  }
  std::optional<double> Get(Reading r, const std::vector<double>& v, int gpu) const {
    if (failing || r == missing) return std::nullopt;
    return v[static_cast<size_t>(gpu)];
  }
  std::string name_;
  std::vector<int> clocks_;
  double min_w_, max_w_;
};

}  // namespace emo

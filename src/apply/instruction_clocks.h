// instruction_clocks.h — controllers for per-instruction clock methods (Perseus): they follow the
// training loop's instruction ranges (forward and backward of each microbatch, Controller::OnRange).
//
// InstructionProfiler measures each kind of range: its mean time (open to close; the profiled
// program synchronises the device at both ends, as ZeusMonitor's sync_execution does) and its
// mean power. A range's own energy-counter window is too coarse where the counter moves every
// ~100 ms and a forward lasts ~30 ms, so the profiler polls the counter every millisecond and
// attributes each of its steps to the time each kind of range (and the time outside any) took
// within the step, by least squares over the run: step energy = Σ_kind P_kind · t_kind + P_out · t_out.
//
// InstructionClockPlayer locks, at each range's open, the SM clock its plan gives that
// instruction, as Perseus's frequency controller does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "apply/controller.h"
#include "device/gpu_control.h"

namespace emo {

class InstructionProfiler : public Controller {
 public:
  // Measures from iteration `warmup` on (0-based).
  InstructionProfiler(GpuControl* gpus, int warmup) : gpus_(gpus), warmup_(warmup) {}
  struct Stat {
    int count = 0;
    double time_s = 0;   // mean
    double power_w = 0;  // fitted mean power while the range is open
    double energy_j() const { return power_w * time_s; }
  };
  // After the run: per GPU, per range name. False with *err when a GPU's counter steps do not
  // determine the powers (too few steps, or ranges that never vary in share).
  bool Estimate(std::vector<std::map<std::string, Stat>>* out, std::string* err) const;
  // Ranges opened on each GPU in the first measured iteration, in order (the instruction order).
  const std::vector<std::vector<std::string>>& order() const { return order_; }

  double PeriodMs() const override { return 1; }
  void OnIterationStart(int iteration, double now_ns) override;
  void Tick(double now_ns) override;
  bool WantsRanges() const override { return true; }
  void OnRange(int gpu, const std::string& name, bool push, double now_ns) override;

 private:
  struct Window {
    double t0, t1;  // ns
    int kind;       // index into names_
  };
  struct Step {
    double t0, t1, energy_j;
  };
  struct PerGpu {
    std::vector<Window> windows;
    std::vector<Step> steps;
    double open_t = -1;  // < 0: no range open
    int open_kind = -1;
    double counter_j = -1, counter_t = -1;  // the counter's last value and when it was first seen
  };
  PerGpu& Gpu(int gpu);

  GpuControl* gpus_;
  int warmup_;
  int iteration_ = -1;
  double start_ns_ = -1;  // start of the measured iterations
  std::vector<std::string> names_;
  std::vector<PerGpu> per_gpu_;
  std::vector<std::vector<std::string>> order_;
};

class InstructionClockPlayer : public Controller {
 public:
  // Per GPU, the clock of each instruction of an iteration in the order its ranges open, with the
  // range name expected there; a GPU without a plan is left alone.
  struct Step {
    std::string name;
    int mhz = 0;
  };
  InstructionClockPlayer(std::vector<std::vector<Step>> plan, GpuControl* gpus) : plan_(std::move(plan)), gpus_(gpus) {}

  bool WantsRanges() const override { return true; }
  void OnRange(int gpu, const std::string& name, bool push, double now_ns) override;
  void Finish() override;  // resets the clocks it locked

 private:
  std::vector<std::vector<Step>> plan_;
  GpuControl* gpus_;
  std::vector<size_t> next_;
  std::vector<int> locked_;  // per GPU, 0: never locked
};

}  // namespace emo

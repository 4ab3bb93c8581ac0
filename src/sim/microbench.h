// microbench.h — the simulator's back end of the 12 microbenchmarks and the empty kernel (device/microbench.h): each
// table row becomes a kernel whose hidden characteristics are the simulator's own, a program that
// launches it back to back on one GPU, and SimBenchDevice, the BenchDevice that runs them.
// Only code that hosts the simulator includes this.
#pragma once

#include <array>
#include <string>

#include "device/microbench.h"
#include "sim/device_spec.h"
#include "sim/engine.h"
#include "sim/program.h"

namespace emo::sim {

// The kernel of benchmark b on `spec`: the table's per-thread work times the grid.
KernelTraits MicrobenchTraits(const DeviceSpec& spec, Microbench b);

// One GPU, one thread: per iteration, `launches` launches of benchmark b on stream 0 (a short CPU
// gap before each; kBenchEmpty's behind its gate), then cudaStreamSynchronize.
Program MicrobenchProgram(const DeviceSpec& spec, Microbench b, int launches);

// One GPU, one thread: one iteration of `job` (its kernels on stream 0, a short CPU gap before each
// launch, cudaStreamSynchronize, then the host gap); run it for as many iterations as wanted.
Program MixJobProgram(const DeviceSpec& spec, const MixJob& job);

// Two GPUs of `spec` joined by its link (DeviceSpec::link_bandwidth_bps), one thread each: the gate
// (kEmptyGateS, during which the clocks land), then `launches` all-reduces of `bytes` between the
// two on stream 0 (a short CPU gap before each), then cudaStreamSynchronize.
Program CollectiveProgram(const DeviceSpec& spec, double bytes, int launches);

class SimBenchDevice : public BenchDevice {
 public:
  // `spec` must outlive the device. Every Run() draws a new noise seed from `seed`.
  explicit SimBenchDevice(const DeviceSpec& spec, uint64_t seed = 1) : spec_(spec), seed_(seed) {}
  std::string Name() const override { return spec_.name; }
  std::vector<int> SupportedClocks() const override { return spec_.sm_clocks_mhz; }
  std::vector<int> SupportedMemoryClocks() const override { return spec_.mem_clocks_mhz; }
  bool Run(Microbench b, int launches, double poll_ms, const std::function<void(GpuControl&)>& start,
           const std::function<void(GpuControl&, double now_ns)>& poll, BenchRun* out, std::string* err) override;
  bool RunJob(const MixJob& job, int iterations, double poll_ms, const std::function<void(GpuControl&)>& start,
              const std::function<void(GpuControl&, double now_ns)>& poll, JobRun* out, std::string* err) override;
  bool Profile(Microbench b, int launches, const std::vector<KernelRange>& ranges, std::vector<PackMetrics>* out,
               ProfileCost* cost, std::string* err) override;
  bool RunCollective(double bytes, int launches, const std::function<void(GpuControl&)>& start, BenchRun* out,
                     std::string* err) override;

 private:
  EngineOptions NextRun(int iterations, bool record_trace);  // one run's options, on the next seed

  const DeviceSpec& spec_;
  uint64_t seed_;
};

}  // namespace emo::sim

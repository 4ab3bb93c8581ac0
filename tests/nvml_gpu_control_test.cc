// nvml_gpu_control_test.cc — the NVML back end against a fake libnvidia-ml (fake_nvml.cc) that
// answers with NVML's codes and units: enumeration, unit conversion, clock and power-limit
// commands, refusals and lost GPUs reported by name, and everything restored on destruction; and
// the counter recorder of traced processes (counter_recorder.h) over it.
#include "apply/nvml_gpu_control.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "apply/counter_recorder.h"
#include "fake_nvml.h"

namespace emo {
namespace {

// Keeps the fake library loaded for the test and resets its state.
class Nvml : public ::testing::Test {
 protected:
  void SetUp() override {
    lib_ = dlopen(EMO_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib_, nullptr) << dlerror();
    auto state = reinterpret_cast<test::FakeNvml* (*)()>(dlsym(lib_, "fake_nvml_state"));
    ASSERT_NE(state, nullptr);
    fake_ = state();
    *fake_ = test::FakeNvml{};
  }
  void TearDown() override {
    if (lib_) dlclose(lib_);
  }
  std::unique_ptr<NvmlGpuControl> Open() {
    std::string err;
    auto c = NvmlGpuControl::Open(&err, EMO_FAKE_NVML);
    EXPECT_NE(c, nullptr) << err;
    return c;
  }
  void* lib_ = nullptr;
  test::FakeNvml* fake_ = nullptr;
};

TEST_F(Nvml, ListsGpusInTheInterfacesUnits) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(fake_->inits, 1);
  ASSERT_EQ(c->Count(), 2);
  EXPECT_EQ(c->Name(1), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(c->Uuid(1), "GPU-fa4e0000-0000-0000-0000-000000000001");  // as CUDA_VISIBLE_DEVICES names it
  const std::vector<int> clocks = c->SupportedClocks(0);
  ASSERT_EQ(clocks.size(), 81u);  // 210..1410 MHz in 15 MHz steps, ascending
  EXPECT_EQ(clocks.front(), 210);
  EXPECT_EQ(clocks.back(), 1410);
  EXPECT_DOUBLE_EQ(c->EnergyJ(0).value_or(-1), 123456.789);
  EXPECT_DOUBLE_EQ(c->PowerW(0).value_or(-1), 250.5);
  EXPECT_DOUBLE_EQ(c->Utilization(0).value_or(-1), 0.87);
  EXPECT_DOUBLE_EQ(c->MemoryUtilization(0).value_or(-1), 0.41);
  EXPECT_DOUBLE_EQ(c->ClockMhz(0).value_or(-1), 1410);
  EXPECT_DOUBLE_EQ(c->PowerLimitW(0).value_or(-1), 400);
  double lo = 0, hi = 0;
  EXPECT_TRUE(c->PowerLimitRange(0, &lo, &hi));
  EXPECT_DOUBLE_EQ(lo, 100);
  EXPECT_DOUBLE_EQ(hi, 500);
  c.reset();
  EXPECT_EQ(fake_->shutdowns, 1);
}

TEST_F(Nvml, CommandsReachTheDriverAndAreUndoneOnDestruction) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  std::string err;
  ASSERT_TRUE(c->SetLockedClock(1, 1005, &err)) << err;
  EXPECT_EQ(fake_->gpus[1].locked_min, 1005u);
  EXPECT_EQ(fake_->gpus[1].locked_max, 1005u);
  ASSERT_TRUE(c->SetPowerLimit(0, 300, &err)) << err;
  ASSERT_TRUE(c->SetPowerLimit(0, 250, &err)) << err;
  EXPECT_EQ(fake_->gpus[0].limit_mw, 250000u);
  c.reset();  // restores what it changed: GPU 1 unlocked, GPU 0 back to its 400 W
  EXPECT_EQ(fake_->gpus[1].locked_max, 0u);
  EXPECT_EQ(fake_->gpus[0].limit_mw, 400000u);
}

TEST_F(Nvml, ResetClockUnlocksAndRestoreAllLeavesOthersAlone) {
  fake_->gpus[0].locked_min = fake_->gpus[0].locked_max = 900;  // locked by someone else
  auto c = Open();
  ASSERT_NE(c, nullptr);
  std::string err;
  ASSERT_TRUE(c->SetLockedClock(1, 1200, &err));
  ASSERT_TRUE(c->ResetClock(1, &err));
  EXPECT_EQ(fake_->gpus[1].locked_max, 0u);
  ASSERT_TRUE(c->RestoreAll(&err)) << err;
  EXPECT_EQ(fake_->gpus[0].locked_max, 900u);  // not ours to reset
}

TEST_F(Nvml, MemoryClocksLockWhereListedAndAreUnlockedWithTheGpusClocks) {
  fake_->gpus[1].name = "NVIDIA GeForce RTX 3080 Ti";
  fake_->gpus[1].mem_clocks = {405, 810, 5001, 9251, 9501};
  auto c = Open();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->SupportedMemoryClocks(0), (std::vector<int>{1593}));
  EXPECT_EQ(c->SupportedMemoryClocks(1), (std::vector<int>{405, 810, 5001, 9251, 9501}));
  std::string err;
  EXPECT_FALSE(c->SetMemoryLockedClock(0, 1593, &err));  // HBM: the driver refuses
  EXPECT_EQ(err, "GPU 0 (NVIDIA A100-SXM4-80GB): nvmlDeviceSetMemoryLockedClocks: Not Supported");
  ASSERT_TRUE(c->SetMemoryLockedClock(1, 5001, &err)) << err;
  EXPECT_EQ(fake_->gpus[1].mem_locked_max, 5001u);
  EXPECT_DOUBLE_EQ(c->MemoryClockMhz(1).value_or(-1), 5001);
  c.reset();  // restores what it changed
  EXPECT_EQ(fake_->gpus[1].mem_locked_max, 0u);

  // Recovery after a dead process: unlocking a GPU's clocks unlocks its memory clock too, and a
  // GPU without memory locks (GPU 0) is no failure.
  fake_->gpus[1].mem_locked_min = fake_->gpus[1].mem_locked_max = 810;
  c = Open();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->RestoreForOther(0, true, 0, &err)) << err;
  ASSERT_TRUE(c->RestoreForOther(1, true, 0, &err)) << err;
  EXPECT_EQ(fake_->gpus[1].mem_locked_max, 0u);
  fake_->gpus[1].mem_locked_min = fake_->gpus[1].mem_locked_max = 810;
  ASSERT_TRUE(c->ResetToDefaults(1, &err)) << err;
  EXPECT_EQ(fake_->gpus[1].mem_locked_max, 0u);
}

TEST_F(Nvml, RefusalsAndLostGpusAreNamed) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  std::string err;
  fake_->deny = true;
  EXPECT_FALSE(c->SetLockedClock(0, 1005, &err));
  EXPECT_EQ(err,
            "GPU 0 (NVIDIA A100-SXM4-80GB): nvmlDeviceSetGpuLockedClocks: Insufficient Permissions "
            "(clock and power-limit changes need root or CAP_SYS_ADMIN)");
  EXPECT_EQ(fake_->gpus[0].locked_max, 0u);
  fake_->deny = false;
  EXPECT_FALSE(c->SetPowerLimit(0, 50, &err));  // below the 100 W minimum
  EXPECT_NE(err.find("Invalid Argument"), std::string::npos) << err;
  fake_->gpus[1].lost = true;
  EXPECT_FALSE(c->EnergyJ(1).has_value());
  EXPECT_EQ(c->error(),
            "GPU 1 (NVIDIA A100-SXM4-80GB): nvmlDeviceGetTotalEnergyConsumption: GPU is lost "
            "(the GPU fell off the bus)");
  EXPECT_DOUBLE_EQ(c->PowerW(0).value_or(-1), 250.5);  // the other GPU still answers
}

TEST_F(Nvml, ActivityIsReadBetweenGpmSamplesWhereEveryGpuHasGpm) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->Offers(Reading::kActivity));  // an A100: no GPM
  EXPECT_FALSE(c->StartActivity(0));
  EXPECT_NE(c->error().find("no GPM"), std::string::npos) << c->error();
  c.reset();

  for (test::FakeNvmlGpu& g : fake_->gpus) {
    g.name = "NVIDIA H100 80GB HBM3";
    g.gpm = true;
  }
  // Percent per NVML_GPM_METRIC_* id: SM_UTIL 2, SM_OCCUPANCY 3, INTEGER_UTIL 4, ANY_TENSOR_UTIL 5,
  // DRAM_BW_UTIL 10, FP64_UTIL 11, FP32_UTIL 12.
  double* pct = fake_->gpus[1].gpm_percent;
  pct[2] = 80, pct[3] = 40, pct[4] = 10, pct[5] = 55, pct[10] = 30, pct[11] = 1, pct[12] = 20;
  c = Open();
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->Offers(Reading::kActivity));
  EXPECT_FALSE(c->ReadActivity(1).has_value()) << "no window open yet";
  ASSERT_TRUE(c->StartActivity(1)) << c->error();
  EXPECT_FALSE(c->ReadActivity(1).has_value());
  EXPECT_NE(c->error().find("must span over 100 ms"), std::string::npos) << c->error();
  for (int window = 0; window < 2; ++window) {  // each read opens the next window
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
    const std::optional<Activity> a = c->ReadActivity(1);
    ASSERT_TRUE(a.has_value()) << c->error();
    EXPECT_DOUBLE_EQ(a->sm_util, 0.8);
    EXPECT_DOUBLE_EQ(a->sm_occupancy, 0.4);
    EXPECT_DOUBLE_EQ(a->integer_util, 0.1);
    EXPECT_DOUBLE_EQ(a->fp32_util, 0.2);
    EXPECT_DOUBLE_EQ(a->fp64_util, 0.01);
    EXPECT_DOUBLE_EQ(a->tensor_util, 0.55);
    EXPECT_DOUBLE_EQ(a->dram_bw_util, 0.3);
  }
  fake_->gpus[1].lost = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  EXPECT_FALSE(c->ReadActivity(1).has_value());
  EXPECT_NE(c->error().find("nvmlGpmSampleGet: GPU is lost"), std::string::npos) << c->error();
  c.reset();
  EXPECT_EQ(fake_->gpm_samples_freed, fake_->gpm_samples_allocated);
  EXPECT_EQ(fake_->gpm_samples_allocated, 2);
}

TEST_F(Nvml, MissingLibraryIsAClearError) {
  std::string err;
  EXPECT_EQ(NvmlGpuControl::Open(&err, "/nonexistent/libnvidia-ml.so.1"), nullptr);
  EXPECT_EQ(err.rfind("cannot load /nonexistent/libnvidia-ml.so.1 (is an NVIDIA driver installed?)", 0), 0u) << err;
}

// The traced process's CUDA devices meet NVML's GPUs by UUID (CUDA's 16 bytes spelled as NVML
// spells them): its device 0 is NVML's GPU 1, its device 1 a MIG instance NVML does not list. Each
// sample reads the clock (kept where it changed), the power and the energy counter in the
// trace's units; a lost GPU's refused readings are left out, and so is a device not in use.
TEST_F(Nvml, CounterRecorderSamplesTheTracedDevicesByUuid) {
  auto c = Open();
  ASSERT_NE(c, nullptr);
  const unsigned char gpu1[16] = {0xfa, 0x4e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(GpuUuidString(gpu1), "GPU-fa4e0000-0000-0000-0000-000000000001");
  CounterRecorder rec(c.get(), {GpuUuidString(gpu1), "MIG-0a1b"});
  EXPECT_EQ(rec.matched(), 1u);
  EXPECT_EQ(rec.unmatched(), (std::vector<std::string>{"MIG-0a1b"}));
  rec.Sample(100);
  fake_->gpus[1].power_mw = 300000;
  fake_->gpus[1].energy_mj += 30000;
  rec.Sample(200);
  fake_->gpus[1].sm_mhz = 1005;
  fake_->gpus[1].lost = true;
  rec.Sample(300);  // every reading refused
  fake_->gpus[1].lost = false;
  rec.Sample(400);
  const std::vector<char> unused = {0, 1};
  rec.Sample(500, &unused);  // device 0 not in use: not read
  const std::vector<CounterTrack> t = rec.Tracks();
  ASSERT_EQ(t.size(), 3u);
  for (const CounterTrack& x : t) EXPECT_EQ(x.device, 0);
  EXPECT_EQ(t[0].name + " " + t[0].unit, "sm_clock MHz");
  EXPECT_EQ(t[0].t_ns, (std::vector<int64_t>{100, 400}));
  EXPECT_EQ(t[0].value, (std::vector<double>{1410, 1005}));
  EXPECT_EQ(t[1].name + " " + t[1].unit, "power W");
  EXPECT_EQ(t[1].t_ns, (std::vector<int64_t>{100, 200, 400}));
  EXPECT_EQ(t[1].value, (std::vector<double>{250.5, 300, 300}));
  EXPECT_EQ(t[2].name + " " + t[2].unit, "energy J");
  ASSERT_EQ(t[2].value.size(), 3u);
  EXPECT_DOUBLE_EQ(t[2].value[1] - t[2].value[0], 30);
  rec.KeepLatestOnly();
  for (const CounterTrack& x : rec.Tracks()) EXPECT_EQ(x.t_ns, (std::vector<int64_t>{400}));
}

}  // namespace
}  // namespace emo

// gpu_selection_test.cc — `emo run`'s GPU selection: --gpus and CUDA_VISIBLE_DEVICES read into
// the back end's indices, the CUDA_VISIBLE_DEVICES the job is given, the errors, and GpuView
// sending the job's GPU i to the back end's.
#include "apply/gpu_selection.h"

#include <gtest/gtest.h>

#include "fake_gpus.h"

namespace emo {
namespace {

// Four GPUs as NVML lists them; 2 and 3 share a UUID prefix up to "GPU-b".
GpuInventory Machine() {
  return {{"GPU-a1111111-0000", "GPU-a2222222-0000", "GPU-b3333333-0000", "GPU-b4444444-0000"},
          {"A100", "A100", "A100", "A100"}};
}

GpuSelection Select(const std::string& opt, const char* cvd, const GpuInventory& m = Machine(),
                    const char* order = nullptr) {
  GpuSelection s;
  std::string err;
  EXPECT_TRUE(SelectJobGpus(opt, cvd, order, m, &s, &err)) << err;
  return s;
}

std::string Error(const std::string& opt, const char* cvd, const GpuInventory& m = Machine()) {
  GpuSelection s;
  std::string err;
  EXPECT_FALSE(SelectJobGpus(opt, cvd, nullptr, m, &s, &err));
  return err;
}

TEST(GpuSelection, EveryGpuWhenNothingChooses) {
  const GpuSelection s = Select("", nullptr);
  EXPECT_EQ(s.gpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s.source, "all");
  EXPECT_EQ(s.job_cuda_visible_devices, "");  // the job's environment is left alone
}

TEST(GpuSelection, GpusOptionByIndexAndUuidSetsTheJobsDevicesByUuid) {
  const GpuSelection s = Select("3, GPU-a1", nullptr);
  EXPECT_EQ(s.gpus, (std::vector<int>{3, 0}));  // the job's device 0 is NVML's 3
  EXPECT_EQ(s.source, "--gpus");
  EXPECT_EQ(s.job_cuda_visible_devices, "GPU-b4444444-0000,GPU-a1111111-0000");
  EXPECT_FALSE(s.job_pci_bus_order);
}

TEST(GpuSelection, GpusOptionWithoutUuidsGivesIndicesInPciBusOrder) {
  GpuInventory m = Machine();
  for (auto& u : m.uuids) u.clear();  // zeusd
  const GpuSelection s = Select("2,1", nullptr, m);
  EXPECT_EQ(s.job_cuda_visible_devices, "2,1");
  EXPECT_TRUE(s.job_pci_bus_order);
}

TEST(GpuSelection, CudaVisibleDevicesAsTheJobSeesIt) {
  GpuSelection s = Select("", "2,0");
  EXPECT_EQ(s.gpus, (std::vector<int>{2, 0}));
  EXPECT_EQ(s.source, "CUDA_VISIBLE_DEVICES");
  EXPECT_EQ(s.job_cuda_visible_devices, "");                              // the job reads it itself
  EXPECT_EQ(Select("", "GPU-b4,gpu-A2").gpus, (std::vector<int>{3, 1}));  // UUID prefixes, any case
  EXPECT_EQ(Select("", "1,-1,2").gpus, (std::vector<int>{1}));            // CUDA stops at a negative index
  EXPECT_TRUE(Select("", "1").warning.empty());                           // one model: CUDA's order is NVML's
}

TEST(GpuSelection, WarnsWhenCudaMayNumberMixedGpusDifferently) {
  GpuInventory m = Machine();
  m.names[3] = "A40";
  EXPECT_NE(Select("", "3", m).warning.find("CUDA_DEVICE_ORDER=PCI_BUS_ID"), std::string::npos);
  EXPECT_TRUE(Select("", "3", m, "PCI_BUS_ID").warning.empty());
  EXPECT_TRUE(Select("", "GPU-b4", m).warning.empty());  // by UUID: no order to get wrong
}

TEST(GpuSelection, ErrorsNameTheEntryAndItsSource) {
  EXPECT_EQ(Error("4", nullptr), "--gpus: no GPU 4 (there are 4: 0-3)");
  EXPECT_EQ(Error("", "0,9"), "CUDA_VISIBLE_DEVICES: no GPU 9 (there are 4: 0-3)");
  EXPECT_EQ(Error("99999999999999999999", nullptr), "--gpus: no GPU 99999999999999999999 (there are 4: 0-3)");
  EXPECT_EQ(Error("GPU-c", nullptr), "--gpus: no GPU has UUID GPU-c (emo gpus lists them)");
  EXPECT_EQ(Error("GPU-b", nullptr), "--gpus: UUID prefix GPU-b matches GPUs 2 and 3; give more of it");
  EXPECT_EQ(Error("1,GPU-a2", nullptr), "--gpus: GPU 1 named twice ('GPU-a2')");
  EXPECT_EQ(Error("-1", nullptr), "--gpus: '-1' is neither a GPU index nor a UUID (GPU-...)");
  EXPECT_EQ(Error("0,,1", nullptr), "--gpus: '' is neither a GPU index nor a UUID (GPU-...)");
  EXPECT_EQ(Error("", "MIG-1234"), "CUDA_VISIBLE_DEVICES: MIG-1234 is a MIG device; EMO controls whole GPUs only");
  EXPECT_EQ(Error("", "-1"), "CUDA_VISIBLE_DEVICES '-1' leaves the job no GPU: nothing for EMO to control or measure");
  EXPECT_EQ(Error("", ""), "CUDA_VISIBLE_DEVICES '' leaves the job no GPU: nothing for EMO to control or measure");
  EXPECT_NE(Error("0", "1").find("--gpus and CUDA_VISIBLE_DEVICES='1' both choose the job's GPUs"), std::string::npos);
  GpuInventory m = Machine();
  for (auto& u : m.uuids) u.clear();
  EXPECT_EQ(Error("GPU-a1", nullptr, m), "--gpus: GPU-a1: this GPU back end reports no UUIDs; name the GPU by index");
}

TEST(GpuView, SendsTheJobsGpuToTheBackEnds) {
  FakeGpus machine(4, "A100-SXM4-80GB", {1005, 1410}, 100, 400);
  machine.energy = {10, 20, 30, 40};
  GpuView view(&machine, {3, 0});
  EXPECT_EQ(view.Count(), 2);
  std::string err;
  ASSERT_TRUE(view.SetLockedClock(0, 1005, &err)) << err;
  ASSERT_TRUE(view.ResetClock(1, &err)) << err;
  ASSERT_TRUE(view.SetPowerLimit(0, 300, &err)) << err;
  EXPECT_EQ(machine.Sent(FakeGpus::Command::kLock, 3).size(), 1u);
  EXPECT_EQ(machine.Sent(FakeGpus::Command::kReset, 0).size(), 1u);
  EXPECT_EQ(machine.limit[3], 300);
  EXPECT_EQ(view.EnergyJ(0), 40);
  EXPECT_EQ(view.EnergyJ(1), 10);
  EXPECT_EQ(view.PowerLimitW(0), 300);
}

}  // namespace
}  // namespace emo

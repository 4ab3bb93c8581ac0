// test_main.cc — GoogleTest main that points the tests at the repository's data: the real
// traces, the DVFS measurements and the workload specs (compiled-in paths from CMake), unless the
// environment already names them (EMO_TRACES, EMO_DVFS_DATA, EMO_WORKLOADS).
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv) {
  setenv("EMO_TRACES", EMO_TRACES_DIR, 0);
  setenv("EMO_DVFS_DATA", EMO_DVFS_DATA_DIR, 0);
  setenv("EMO_WORKLOADS", EMO_WORKLOADS_DIR, 0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

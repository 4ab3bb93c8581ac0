// launcher_rank_test.cc — which rank (and trace file name) a process takes from the variables of
// torchrun, mpirun (Open MPI, MPICH/Intel MPI) and srun, with fake environments.
#include "trace/launcher_rank.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace emo {
namespace {

LauncherRank From(const std::map<std::string, std::string>& env) {
  return RankFromEnvironment([&](const char* var) -> const char* {
    auto it = env.find(var);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(LauncherRank, EachLaunchersVariables) {
  LauncherRank r = From({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}});  // torchrun
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.variable, "RANK");
  EXPECT_EQ(TraceFileName(r, 4242), "emo-trace-rank3.json");
  r = From({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "6"}});  // Open MPI
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.world_size, 6);
  r = From({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}});  // MPICH, Intel MPI
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.variable, "PMI_RANK");
  r = From({{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "16"}});  // srun
  EXPECT_EQ(r.rank, 7);
  EXPECT_EQ(r.world_size, 16);
}

TEST(LauncherRank, AnMpiRankWinsOverTheBatchScriptsSlurmProcid) {
  // mpirun inside sbatch: every rank inherits SLURM_PROCID=0 from the batch step.
  const LauncherRank r = From(
      {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.variable, "OMPI_COMM_WORLD_RANK");
}

TEST(LauncherRank, NoUsableRankNamesTheFileByPid) {
  LauncherRank r = From({});
  EXPECT_EQ(r.rank, -1);
  EXPECT_EQ(TraceFileName(r, 4242), "emo-trace-pid4242.json");
  // Malformed values are skipped, not read as rank 0; a world size that cannot hold the rank is unknown.
  r = From({{"RANK", "x1"},
            {"OMPI_COMM_WORLD_RANK", "-2"},
            {"PMI_RANK", "99999999999"},
            {"SLURM_PROCID", "4"},
            {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(r.world_size, 0);
  EXPECT_EQ(From({{"RANK", ""}}).rank, -1);
}

}  // namespace
}  // namespace emo

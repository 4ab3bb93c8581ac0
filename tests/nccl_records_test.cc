// nccl_records_test.cc — the NCCL profiler plugin's records merged into a trace directory written
// by `emo trace`: which kernel each record names, and the errors for cut-short or malformed files.
#include "trace/nccl_records.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"
#include "trace/launcher_rank.h"
#include "trace/load.h"

namespace emo {
namespace {

namespace fs = std::filesystem;
using test::Call;
using test::Kernel;
using test::TraceJson;

fs::path Dir(const char* name) {
  const fs::path dir = fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// Thread 77 launches an all-reduce kernel (corr 1, at 10 µs), a GEMM (corr 2) and a send/recv
// kernel (corr 3, at 30 µs). Rank 0 of communicator 0xab.
std::string RankJson() {
  return TraceJson(
      {Call("cudaLaunchKernel", 10, 2, 1, 77), Call("cudaLaunchKernel", 20, 2, 2, 77),
       Call("cudaLaunchKernel", 30, 2, 3, 77), Kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 9, 15, 50, 1),
       Kernel("gemm", 7, 25, 10, 2), Kernel("ncclDevKernel_SendRecv", 9, 70, 20, 3)},
      R"("distributedInfo": {"rank": 0, "world_size": 2},)");
}

// Group 1: all-reduce #5 of 256 floats, one launch; group 10: one send of 100 bf16 to rank 1;
// group 30: a broadcast captured into a CUDA graph (its kernel is not in the trace).
const char* kRecords =
    "# emo-nccl-profiler 1\n"
    "comm 00000000000000ab 0 2 1 world\n"
    "launch 4 00000000000000ab 0 1 77 10000 12000 7f00 0\n"
    "launch 21 00000000000000ab 0 30 77 20000 21000 7f00 1\n"
    "coll 20 00000000000000ab 0 30 77 19000 22000 0 Broadcast 8 ncclInt8 0 RING LL 1\n"
    "coll 3 00000000000000ab 0 1 77 9000 90000 5 AllReduce 256 ncclFloat32 0 RING LL 2\n"
    "launch 13 00000000000000ab 0 10 77 30000 32000 7f00 0\n"
    "p2p 12 00000000000000ab 0 10 77 29000 95000 0 Send 100 ncclBfloat16 1\n";

TEST(NcclRecords, AnnotateKernelsOfTracedProcess) {
  const fs::path dir = Dir("emo-nccl-merge");
  Write(dir / "emo-trace-rank0.json", RankJson());
  Write(dir / "emo-nccl-rank0.txt", kRecords);
  std::vector<std::string> files;
  std::string err;
  ASSERT_TRUE(ExpandTracePaths({dir.string()}, &files, &err)) << err;
  ASSERT_EQ(files.size(), 1u);  // the records are not a trace of their own
  Trace t;
  ASSERT_TRUE(LoadTraces(files, &t, &err)) << err;
  EXPECT_TRUE(t.notes.empty()) << t.notes[0];
  const std::vector<GpuOp>& ops = t.ranks[0].ops;  // by start: all-reduce, gemm, send/recv
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(t.names.Get(ops[0].process_group), "nccl:00000000000000ab");
  EXPECT_EQ(t.names.Get(ops[0].collective), "AllReduce");
  EXPECT_EQ(ops[0].collective_seq, 5);
  EXPECT_EQ(ops[0].bytes, 1024);  // 256 x 4
  EXPECT_EQ(ops[1].process_group, 0u);
  EXPECT_EQ(ops[1].collective_seq, -1);
  EXPECT_EQ(t.names.Get(ops[2].process_group), "nccl:00000000000000ab");
  EXPECT_EQ(t.names.Get(ops[2].collective), "p2p 0->1");  // rank 0 sends to rank 1
  EXPECT_EQ(ops[2].collective_seq, 0);
  EXPECT_EQ(ops[2].bytes, 200);  // 100 x 2
  fs::remove_all(dir);
}

// One launch recorded but two NCCL kernels launched on the thread: nothing is tied, and a note says why.
TEST(NcclRecords, CountMismatchLeavesThreadUnannotated) {
  NcclRecords recs;
  std::string err;
  ASSERT_TRUE(ParseNcclRecords("r.txt",
                               "# emo-nccl-profiler 1\n"
                               "launch 4 00000000000000ab 0 1 77 10000 12000 7f00 0\n"
                               "coll 3 00000000000000ab 0 1 77 9000 90000 5 AllReduce 256 ncclFloat32 0 RING LL 2\n",
                               &recs, &err))
      << err;
  Trace t;
  test::AddKinetoRank(RankJson(), &t);
  std::string note;
  EXPECT_EQ(AnnotateNcclKernels(recs, &t, 0, &note), 0);
  EXPECT_EQ(note,
            "NCCL kernels not tied to the plugin's records (thread 77: 2 NCCL kernel launches in the trace, 1 in the "
            "plugin's records)");
  for (const GpuOp& o : t.ranks[0].ops) EXPECT_EQ(o.collective_seq, -1);
}

TEST(NcclRecords, CutShortOrMalformedFileIsAnErrorNamingFileAndLine) {
  const fs::path dir = Dir("emo-nccl-bad");
  Write(dir / "emo-trace-rank0.json", RankJson());
  const std::string path = (dir / "emo-nccl-rank0.txt").string();
  const std::string records = kRecords;
  struct Case {
    std::string text, error;
  };
  const Case cases[] = {
      {records.substr(0, records.size() - 20), path + ":8: the last line has no newline: the file was cut short"},
      {"# emo-nccl-profiler 1\nlaunch 4 00000000000000ab 0 1 77 10000 12000 7f00\n",
       path + ":2: a launch line has 10 fields, this one 9"},
      {"# emo-nccl-profiler 1\ncoll 3 00000000000000ab 0 1 77 9000 90000 five AllReduce 256 ncclFloat32 0 RING LL 2\n",
       path + ":2: bad sequence number, count or peer/root in a coll line"},
      {"# emo-nccl-profiler 1\nlaunch 4 zz 0 1 77 10000 12000 7f00 0\n",
       path + ":2: bad number in the common fields of a launch line"},
      {"# emo-nccl-profiler 1\nbarrier 1\n", path + ":2: unknown record kind \"barrier\""},
      {"launch 4\n", path + ":1: not an EMO NCCL profiler file (expected \"# emo-nccl-profiler 1\")"},
      {"", path + ": empty file (no \"# emo-nccl-profiler 1\" header)"},
  };
  for (const Case& c : cases) {
    Write(path, c.text);
    Trace t;
    std::string err;
    EXPECT_FALSE(LoadTraces({(dir / "emo-trace-rank0.json").string()}, &t, &err));
    EXPECT_EQ(err, c.error);
  }
  fs::remove_all(dir);
}

TEST(NcclRecords, FileBesideTrace) {
  EXPECT_EQ(NcclFileBeside("/d/emo-trace-rank3.json"), "/d/emo-nccl-rank3.txt");
  EXPECT_EQ(NcclFileBeside("emo-trace-pid42.json"), "emo-nccl-pid42.txt");
  EXPECT_EQ(NcclFileBeside("/d/worker0.json"), "");
  EXPECT_EQ(NcclDatatypeBytes("ncclFloat64"), 8);
  EXPECT_EQ(NcclDatatypeBytes("ncclSomething"), 0);
}

}  // namespace
}  // namespace emo

// trace_control_test.cc — the on-demand trace protocol's files: requests numbered in turn, one start
// iteration for all the processes of a job, and the requester's wait, which expects an answer from
// each live process registered before the request and from no other.
#include "trace/trace_control.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace emo {
namespace {

namespace fs = std::filesystem;

fs::path FreshDir(const char* name) {
  const fs::path dir = fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// The pid of a process that has ended (and been reaped).
long EndedPid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  return child;
}

TEST(TraceControl, RequestsAreNumberedInTurn) {
  const fs::path dir = FreshDir("emo_trace_control_requests");
  TraceRequest r;
  std::string err;
  ASSERT_TRUE(ReadTraceRequest(dir, &r, &err)) << err;
  EXPECT_EQ(r.seq, 0);  // none yet
  ASSERT_TRUE(WriteTraceRequest(dir, 4, 30, &r, &err)) << err;
  EXPECT_EQ(r.seq, 1);
  ASSERT_TRUE(WriteTraceRequest(dir, 8, 2.5, &r, &err)) << err;
  TraceRequest read;
  ASSERT_TRUE(ReadTraceRequest(dir, &read, &err)) << err;
  EXPECT_EQ(read.seq, 2);
  EXPECT_EQ(read.iterations, 8);
  EXPECT_DOUBLE_EQ(read.timeout_s, 2.5);
  EXPECT_FALSE(WriteTraceRequest(dir, 0, 30, &r, &err));
  EXPECT_FALSE(WriteTraceRequest(dir, 3, 0, &r, &err));

  for (const char* bad : {"emo-trace-request 1 3 4", "emo-trace-request 2 3 4 5", "something 1 3 4 5",
                          "emo-trace-request 1 3 4 5 extra", "emo-trace-request 1 0 4 5"}) {
    std::ofstream(dir / "request") << bad << "\n";
    err.clear();
    EXPECT_FALSE(ReadTraceRequest(dir, &r, &err)) << bad;
    EXPECT_NE(err.find((dir / "request").string()), std::string::npos) << err;
    EXPECT_FALSE(WriteTraceRequest(dir, 4, 30, &r, &err)) << bad;  // no number to go on from
  }
  fs::remove_all(dir);
}

TEST(TraceControl, TheFirstProposedStartStandsForEveryProcess) {
  const fs::path dir = FreshDir("emo_trace_control_start");
  int64_t start = 0;
  std::string err;
  ASSERT_TRUE(ClaimWindowStart(dir, 3, 12, &start, &err)) << err;
  EXPECT_EQ(start, 12);
  ASSERT_TRUE(ClaimWindowStart(dir, 3, 15, &start, &err)) << err;  // a process further on
  EXPECT_EQ(start, 12);
  ASSERT_TRUE(ClaimWindowStart(dir, 4, 15, &start, &err)) << err;  // the next request
  EXPECT_EQ(start, 15);
  fs::create_directories(WindowDir(dir, 5));
  std::ofstream(fs::path(WindowDir(dir, 5)) / "start") << "twelve\n";
  EXPECT_FALSE(ClaimWindowStart(dir, 5, 20, &start, &err));
  EXPECT_NE(err.find("window-5/start"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(TraceControl, WaitsForEveryLiveProcessRegisteredBeforeTheRequest) {
  const fs::path dir = FreshDir("emo_trace_control_wait");
  std::string err;
  WindowAnswers answers;
  // Nobody registered: it says so once the time is up.
  EXPECT_FALSE(WaitForWindow(dir, 1, 0.1, 0.02, &answers, &err));
  EXPECT_NE(err.find("no traced process registered"), std::string::npos) << err;

  const long me = getpid();
  ASSERT_TRUE(RegisterTracedProcess(dir, me, "emo-trace-rank0.json", 0, &err)) << err;
  ASSERT_TRUE(RegisterTracedProcess(dir, EndedPid(), "emo-trace-rank1.json", 0, &err)) << err;  // owes nothing
  ASSERT_TRUE(RegisterTracedProcess(dir, 1, "emo-trace-rank2.json", 1, &err)) << err;           // began after request 1
  // Rank 0 answers 0.1 s after the wait begins.
  std::thread answer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    fs::create_directories(WindowDir(dir, 1));
    std::ofstream(fs::path(WindowDir(dir, 1)) / "emo-trace-rank0.json") << "{}\n";
  });
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = WaitForWindow(dir, 1, 10, 0.01, &answers, &err);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  answer.join();
  ASSERT_TRUE(ok) << err;
  EXPECT_LT(waited, 5);  // done when rank 0 answered, not at the timeout
  ASSERT_EQ(answers.files.size(), 1u);
  EXPECT_EQ(answers.files[0], (fs::path(WindowDir(dir, 1)) / "emo-trace-rank0.json").string());
  EXPECT_TRUE(answers.errors.empty());

  // Request 2: rank 2 (pid 1, alive) now owes an answer too; rank 0 says why it has none.
  fs::create_directories(WindowDir(dir, 2));
  std::ofstream(fs::path(WindowDir(dir, 2)) / "emo-trace-rank0.json.error") << "iteration 9 had begun\n";
  EXPECT_FALSE(WaitForWindow(dir, 2, 0.1, 0.02, &answers, &err));
  ASSERT_EQ(answers.errors.size(), 1u);
  EXPECT_EQ(answers.errors[0], "emo-trace-rank0.json: iteration 9 had begun");
  ASSERT_EQ(answers.missing.size(), 1u);
  EXPECT_EQ(answers.missing[0], 1);
  EXPECT_NE(err.find("window-2: no answer within 0.1 s from process 1"), std::string::npos) << err;

  // A wait that the job's end cancels (emo run --adapt) returns then, not at its timeout.
  std::atomic<bool> cancel{false};
  std::thread end([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_FALSE(WaitForWindow(dir, 3, 10, 0.01, &answers, &err, &cancel));
  end.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count(), 5);
  EXPECT_NE(err.find("window-3: no answer before the job ended from process "), std::string::npos) << err;

  // Only the ended process is left: nobody can answer, so the wait ends at once.
  UnregisterTracedProcess(dir, me);
  UnregisterTracedProcess(dir, 1);
  const auto t2 = std::chrono::steady_clock::now();
  EXPECT_FALSE(WaitForWindow(dir, 3, 10, 0.01, &answers, &err));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count(), 5);
  EXPECT_NE(err.find("the traced processes ended without answering (process "), std::string::npos) << err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace emo

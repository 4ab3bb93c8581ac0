// trace_control.h — on-demand trace windows of a running job, as Kineto's on-demand tracing gives
// them: `emo trace --on-demand -o DIR -- CMD` runs the job with libemo_inject.so recording nothing,
// and `emo trace --request DIR --iterations N` (from any shell, or EMO's online loop) asks every
// traced process of it for its next N iterations, which each writes as Kineto JSON.
//
// Protocol (version 1; files only, so that any number of processes take part and none waits on
// another):
//   DIR/proc-<pid>       written by each traced process when CUDA starts it: "<file> <seq>", the
//                        name of its trace file (TraceFileName) and the request it started after;
//                        removed at its exit.
//   DIR/request          "emo-trace-request 1 <seq> <iterations> <timeout_s>", replaced atomically by
//                        the requester with seq one above the last. Each process polls it.
//   DIR/window-<seq>/    each process that started before request seq answers it here: <file>, its
//                        trace of iterations start..start+iterations-1, or <file>.error saying why
//                        there is none. Iterations are counted in each process from its first NVTX
//                        step range (emo.step or ProfilerStep#N), so that the ranks of one job agree
//                        on them; `start` is in window-<seq>/start, written once by the first process
//                        to read the request: far enough ahead of the last iteration it had
//                        begun for the others to read it in time (libemo_inject.so: two, and as
//                        many more as begin in 0.25 s).
//                        A window that times out (timeout_s from the request) keeps the iterations
//                        that ended in time.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace emo {

// The environment variable that names DIR for libemo_inject.so.
inline constexpr const char* kTraceControlEnv = "EMO_TRACE_CONTROL";

struct TraceRequest {
  int64_t seq = 0;  // 0: no request yet
  int64_t iterations = 0;
  double timeout_s = 0;
};

// The directory's current request: true with *out (seq 0 when there is none yet); false with *err
// when the request file cannot be read or is malformed.
bool ReadTraceRequest(const std::string& dir, TraceRequest* out, std::string* err);
// A request file's text; false with *err saying what it expected.
bool ParseTraceRequest(const std::string& text, TraceRequest* out, std::string* err);
// Writes the next request (seq one above the current one), atomically; *out receives it.
bool WriteTraceRequest(const std::string& dir, int64_t iterations, double timeout_s, TraceRequest* out,
                       std::string* err);

// Where the answers to request `seq` go.
std::string WindowDir(const std::string& dir, int64_t seq);

// The window's first iteration: the one in window-<seq>/start, or `proposed`, written there when the
// file is not there yet (whichever process gets there first, its proposal stands).
bool ClaimWindowStart(const std::string& dir, int64_t seq, int64_t proposed, int64_t* start, std::string* err);

// A traced process's registration (the inject library's side).
bool RegisterTracedProcess(const std::string& dir, long pid, const std::string& file, int64_t seq, std::string* err);
void UnregisterTracedProcess(const std::string& dir, long pid);

// What the processes answered to one request.
struct WindowAnswers {
  std::vector<std::string> files;   // traces written, paths in WindowDir
  std::vector<std::string> errors;  // "<file>: why", from the .error files
  std::vector<long> missing;        // pids of live processes that have not answered
};

// Waits up to timeout_s for every live process registered before request `seq` to answer it, and
// polls every poll_s. False with *err when none is registered by then, or some have not answered
// (*out says which did); at once when every process registered before it has ended without an
// answer, or when *cancel becomes true.
bool WaitForWindow(const std::string& dir, int64_t seq, double timeout_s, double poll_s, WindowAnswers* out,
                   std::string* err, const std::atomic<bool>* cancel = nullptr);

}  // namespace emo

// trace_control.cc — the files of the on-demand trace protocol (trace_control.h).
#include "trace/trace_control.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace emo {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRequestMagic = "emo-trace-request";
constexpr int kProtocolVersion = 1;

// Writes `text` to `path` through a temporary file and a rename, so that readers see all or nothing.
bool WriteAtomically(const fs::path& path, const std::string& text, std::string* err) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
    if (!f) {
      *err = tmp.string() + ": cannot write";
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    *err = path.string() + ": cannot write: " + ec.message();
    return false;
  }
  return true;
}

bool Alive(long pid) { return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

}  // namespace

bool ParseTraceRequest(const std::string& text, TraceRequest* out, std::string* err) {
  std::istringstream f(text);
  std::string magic, rest;
  int version = 0;
  TraceRequest r;
  if (!(f >> magic >> version >> r.seq >> r.iterations >> r.timeout_s) || magic != kRequestMagic ||
      version != kProtocolVersion || r.seq < 1 || r.iterations < 1 || !(r.timeout_s > 0) || (f >> rest)) {
    *err = "not a request of protocol " + std::to_string(kProtocolVersion) + " (expected \"" + kRequestMagic +
           " 1 SEQ ITERATIONS TIMEOUT_S\")";
    return false;
  }
  *out = r;
  return true;
}

bool ReadTraceRequest(const std::string& dir, TraceRequest* out, std::string* err) {
  *out = TraceRequest();
  const fs::path path = fs::path(dir) / "request";
  std::ifstream f(path);
  if (!f) {
    std::error_code ec;
    if (!fs::exists(path, ec) && !ec) return true;  // no request yet
    *err = path.string() + ": cannot read";
    return false;
  }
  std::ostringstream text;
  text << f.rdbuf();
  if (ParseTraceRequest(text.str(), out, err)) return true;
  *err = path.string() + ": " + *err;
  return false;
}

bool WriteTraceRequest(const std::string& dir, int64_t iterations, double timeout_s, TraceRequest* out,
                       std::string* err) {
  if (iterations < 1 || !(timeout_s > 0)) {
    *err = "a request needs at least one iteration and a positive timeout";
    return false;
  }
  TraceRequest last;
  if (!ReadTraceRequest(dir, &last, err)) return false;
  const TraceRequest r{last.seq + 1, iterations, timeout_s};
  std::ostringstream text;
  text << kRequestMagic << " " << kProtocolVersion << " " << r.seq << " " << r.iterations << " " << r.timeout_s << "\n";
  if (!WriteAtomically(fs::path(dir) / "request", text.str(), err)) return false;
  *out = r;
  return true;
}

std::string WindowDir(const std::string& dir, int64_t seq) {
  return (fs::path(dir) / ("window-" + std::to_string(seq))).string();
}

bool ClaimWindowStart(const std::string& dir, int64_t seq, int64_t proposed, int64_t* start, std::string* err) {
  const fs::path window = WindowDir(dir, seq), path = window / "start";
  std::error_code ec;
  fs::create_directories(window, ec);
  if (ec) {
    *err = window.string() + ": cannot create the directory: " + ec.message();
    return false;
  }
  // Written whole under a name of this process's own, then linked: the link fails when another
  // process's proposal is already there.
  const fs::path mine = path.string() + "." + std::to_string(getpid());
  {
    std::ofstream f(mine);
    f << proposed << "\n";
    if (!f) {
      *err = mine.string() + ": cannot write";
      return false;
    }
  }
  const bool linked = link(mine.c_str(), path.c_str()) == 0;
  const int link_errno = errno;
  fs::remove(mine, ec);
  if (!linked && link_errno != EEXIST) {
    *err = path.string() + ": cannot write: " + std::strerror(link_errno);
    return false;
  }
  std::ifstream f(path);
  std::string rest;
  if (!(f >> *start) || *start < 1 || (f >> rest)) {
    *err = path.string() + ": not an iteration number";
    return false;
  }
  return true;
}

bool RegisterTracedProcess(const std::string& dir, long pid, const std::string& file, int64_t seq, std::string* err) {
  return WriteAtomically(fs::path(dir) / ("proc-" + std::to_string(pid)), file + " " + std::to_string(seq) + "\n", err);
}

void UnregisterTracedProcess(const std::string& dir, long pid) {
  std::error_code ec;
  fs::remove(fs::path(dir) / ("proc-" + std::to_string(pid)), ec);
}

bool WaitForWindow(const std::string& dir, int64_t seq, double timeout_s, double poll_s, WindowAnswers* out,
                   std::string* err, const std::atomic<bool>* cancel) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  const fs::path answers = WindowDir(dir, seq);
  for (;;) {
    *out = WindowAnswers();
    int expected = 0;
    std::vector<long> ended;  // registered before the request, gone without an answer
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with("proc-") || name.ends_with(".tmp")) continue;
      char* end = nullptr;
      const long pid = std::strtol(name.c_str() + 5, &end, 10);
      std::ifstream f(e.path());
      std::string file;
      int64_t started_after = 0;
      if (*end != '\0' || !(f >> file >> started_after) || started_after >= seq) continue;
      // A process that ended (or was killed) before answering owes nothing; one that answered and
      // then ended still counts.
      if (fs::exists(answers / file, ec)) {
        out->files.push_back((answers / file).string());
      } else if (std::ifstream why(answers / (file + ".error")); why) {
        std::string line;
        std::getline(why, line);
        out->errors.push_back(file + ": " + line);
      } else if (Alive(pid)) {
        out->missing.push_back(pid);
      } else {
        ended.push_back(pid);
        continue;
      }
      ++expected;
    }
    if (ec) {
      *err = dir + ": cannot list: " + ec.message();
      return false;
    }
    if (expected > 0 && out->missing.empty()) return true;
    if (expected == 0 && !ended.empty()) {  // nobody left to answer: no point in waiting
      std::string pids;
      for (long pid : ended) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
      *err = dir + ": the traced processes ended without answering (process " + pids + ")";
      return false;
    }
    if ((cancel && cancel->load()) || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
  std::ostringstream why;
  if (cancel && cancel->load())
    why << " before the job ended";
  else
    why << " within " << timeout_s << " s";
  if (out->files.empty() && out->errors.empty() && out->missing.empty()) {
    *err = dir + ": no traced process registered" + why.str() +
           " (is the job traced on demand, as emo trace --on-demand and emo run --adapt run it, and has it "
           "started CUDA?)";
  } else {
    std::string pids;
    for (long pid : out->missing) pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
    *err = WindowDir(dir, seq) + ": no answer" + why.str() + " from process " + pids;
  }
  return false;
}

}  // namespace emo

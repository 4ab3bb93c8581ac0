// fake_zeusd.h — a stand-in for the Zeus daemon for tests: a thread that serves zeusd's GPU routes
// (zeusd >= 0.3, query-parameter API) over HTTP/1.1 on a Unix socket in a temporary directory,
// with zeusd's answers and error answers, and logs every request.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace emo::test {

struct FakeZeusdGpu {
  uint64_t energy_mj = 123456789;
  uint32_t power_mw = 250000;
  uint32_t power_limit_mw = 400000;
  uint32_t min_power_limit_mw = 100000;
  uint32_t max_power_limit_mw = 400000;
  int locked_min_mhz = 0;  // 0: not locked
  int locked_max_mhz = 0;
};

class FakeZeusd {
 public:
  explicit FakeZeusd(int gpus = 2);
  ~FakeZeusd();  // Stop(), and removes the temporary directory
  FakeZeusd(const FakeZeusd&) = delete;
  FakeZeusd& operator=(const FakeZeusd&) = delete;

  // Settings, before Start(). With a token, every route but /discover and /time needs
  // "Authorization: Bearer TOKEN" (zeusd's JWT check, reduced to string equality).
  void set_token(const std::string& token) { token_ = token; }
  // Control routes answer as zeusd does when NVML refuses (403, NVML's "Insufficient Permissions").
  void set_refuse_control(bool refuse) { refuse_control_ = refuse; }

  // Listens on `socket_path` ("" = zeusd.sock in a fresh temporary directory) and serves until Stop().
  bool Start(std::string* err, const std::string& socket_path = "");
  void Stop();  // joins the thread and removes the socket file
  const std::string& socket_path() const { return socket_; }

  // Each request as "METHOD TARGET", plus " [Authorization: VALUE]" when the header came.
  std::vector<std::string> log() const;
  FakeZeusdGpu gpu(int i) const;
  void set_gpu(int i, const FakeZeusdGpu& g);

 private:
  struct Answer {
    int status = 200;
    std::string content_type = "application/json";
    std::string body;
  };
  void Serve();
  Answer Handle(const std::string& method, const std::string& target, const std::string& authorization);

  std::vector<FakeZeusdGpu> gpus_;
  std::string token_;
  bool refuse_control_ = false;
  std::string dir_, socket_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
  mutable std::mutex mu_;  // guards gpus_ and log_
  std::vector<std::string> log_;
};

}  // namespace emo::test

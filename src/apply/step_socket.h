// step_socket.h — how a training job tells EMO that an iteration begins, without linking EMO.
//
// Protocol (version 1). EMO binds a Unix datagram socket and passes its path to the job in the
// environment variable EMO_STEP_SOCKET. As each training iteration begins, the job sends one
// datagram to that path. The payload is "step" (up to 255 bytes; anything after "step " is free
// text, e.g. the step number, and is ignored); every datagram counts as one iteration start, in
// arrival order. Nothing is ever sent back, so a job never blocks on EMO: if EMO is gone the send
// fails and the job carries on. In Python:
//
//   import os, socket
//   steps = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
//   for batch in loader:
//       steps.sendto(b"step", os.environ["EMO_STEP_SOCKET"])
//       ...
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

namespace emo {

inline constexpr const char* kStepSocketEnv = "EMO_STEP_SOCKET";

// The receiving end: calls on_step() on its own thread for every datagram until Close().
class StepSocket {
 public:
  StepSocket() = default;
  ~StepSocket() { Close(); }
  StepSocket(const StepSocket&) = delete;
  StepSocket& operator=(const StepSocket&) = delete;

  // Binds a socket at `path` ("" = $TMPDIR/emo-steps-PID.sock). False with *err.
  bool Open(std::function<void()> on_step, std::string* err, const std::string& path = "");
  // Stops receiving and removes the socket file.
  void Close();
  const std::string& path() const { return path_; }
  int steps() const { return steps_; }

 private:
  std::string path_;
  int fd_ = -1;
  std::atomic<bool> closing_{false};
  std::atomic<int> steps_{0};
  std::thread thread_;
};

// The sending end, as a job written in C++ would use it. False with *err when nothing listens.
bool SendStep(const std::string& path, std::string* err);

}  // namespace emo

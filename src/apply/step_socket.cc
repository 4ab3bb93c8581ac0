// step_socket.cc — the Unix datagram socket of the step protocol.
#include "apply/step_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace emo {
namespace {

bool Address(const std::string& path, sockaddr_un* addr, std::string* err) {
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr->sun_path) {
    *err = "step socket path empty or too long: '" + path + "'";
    return false;
  }
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

}  // namespace

bool StepSocket::Open(std::function<void()> on_step, std::string* err, const std::string& path) {
  if (path.empty()) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/emo-steps-" + std::to_string(getpid()) + ".sock";
  } else {
    path_ = path;
  }
  sockaddr_un addr;
  if (!Address(path_, &addr, err)) return false;
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  unlink(path_.c_str());
  if (fd_ < 0 || bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    *err = "step socket " + path_ + ": " + std::strerror(errno);
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
    return false;
  }
  timeval tv{0, 100000};  // wake every 100 ms to notice Close()
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  closing_ = false;
  thread_ = std::thread([this, on_step = std::move(on_step)] {
    char buf[256];
    while (!closing_) {
      if (recv(fd_, buf, sizeof buf, 0) >= 0) {
        on_step();
        ++steps_;
      }
    }
  });
  return true;
}

void StepSocket::Close() {
  closing_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_), unlink(path_.c_str());
  fd_ = -1;
}

bool SendStep(const std::string& path, std::string* err) {
  sockaddr_un addr;
  if (!Address(path, &addr, err)) return false;
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const bool ok = fd >= 0 && sendto(fd, "step", 4, 0, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 4;
  if (!ok) *err = "step socket " + path + ": " + std::strerror(errno);
  if (fd >= 0) close(fd);
  return ok;
}

}  // namespace emo

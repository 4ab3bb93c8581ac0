// zeusd_gpu_control.h — GpuControl over the Zeus daemon (zeusd, github.com/ml-energy/zeus), which
// runs as root and changes clocks and power limits on behalf of unprivileged users. EMO speaks its
// HTTP API (zeusd >= 0.3: device ids and arguments in the query string) over its Unix socket with
// libcurl. Like the NVML back end, it remembers the clocks and power limits it changed and restores
// them when destroyed or asked to.
//
// What zeusd offers, and so what this back end offers:
//   commands  lock / reset SM clocks, set the power limit;
//   readings  the energy counter, power, the power limit and its range.
// zeusd has no route for the SM clock in effect, utilisation or memory utilisation: Offers() is
// false for those and their reads are std::nullopt. Its /discover answer lists GPU ids but neither
// names nor supported clocks, so Name() is "" and SupportedClocks() is empty (unknown, not none).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apply/watchdog.h"
#include "device/gpu_control.h"

namespace emo {

// zeusd's own default socket (its --socket-path), used when $ZEUSD_SOCK_PATH is unset.
inline constexpr const char* kZeusdDefaultSocket = "/var/run/zeusd.sock";

class ZeusdGpuControl : public GpuControl {
 public:
  // Connects to `socket_path` ("" = $ZEUSD_SOCK_PATH, else kZeusdDefaultSocket) and asks zeusd which
  // GPUs it manages (GET /discover). `token` ("" = $ZEUSD_TOKEN) is sent as "Authorization: Bearer"
  // when not empty. Null with *err naming the socket and what went wrong (no socket, permission
  // denied, a token required but none set, no GPU).
  static std::unique_ptr<ZeusdGpuControl> Open(std::string* err, const std::string& socket_path = "",
                                               const std::string& token = "");
  ~ZeusdGpuControl() override;  // RestoreAll()
  ZeusdGpuControl(const ZeusdGpuControl&) = delete;
  ZeusdGpuControl& operator=(const ZeusdGpuControl&) = delete;

  int Count() const override { return static_cast<int>(gpus_.size()); }
  std::string Name(int) const override { return ""; }                  // zeusd does not say
  std::vector<int> SupportedClocks(int) const override { return {}; }  // zeusd does not say
  bool SetLockedClock(int gpu, int mhz, std::string* err) override;
  bool ResetClock(int gpu, std::string* err) override;
  bool SetPowerLimit(int gpu, double watts, std::string* err) override;
  bool Offers(Reading r) const override;
  std::optional<double> EnergyJ(int gpu) const override;
  std::optional<double> PowerW(int gpu) const override;
  std::optional<double> Utilization(int) const override { return std::nullopt; }
  std::optional<double> MemoryUtilization(int) const override { return std::nullopt; }
  std::optional<double> ClockMhz(int) const override { return std::nullopt; }
  std::optional<double> PowerLimitW(int gpu) const override;
  bool PowerLimitRange(int gpu, double* min_w, double* max_w) const override;

  // From now on `w` hears of each clock this object locks and each limit it changes (with the
  // limit before), before the request goes out, so that the watchdog can restore them through
  // zeusd if this process dies first. Tells it the socket.
  void Watch(Watchdog* w);
  // Resets every clock this object locked and restores every power limit it changed. False with
  // *err (the first failure) when zeusd refused one; the others are still attempted.
  bool RestoreAll(std::string* err);
  // The last read that failed, or "".
  std::string error() const override;
  const std::string& socket_path() const { return socket_; }
  int ZeusdId(int gpu) const { return gpus_[static_cast<size_t>(gpu)].id; }  // zeusd's index of the GPU

 private:
  struct Gpu {
    int id = 0;                   // zeusd's GPU index (from /discover)
    bool locked = false;          // this object locked its clocks
    long original_limit_mw = -1;  // the limit before this object changed it; -1: unchanged
  };
  struct Http;
  ZeusdGpuControl();
  // One request; true on HTTP 200 with the body in *body, else false with *err naming the GPU
  // (when gpu >= 0), the request, zeusd's status and body, and a hint.
  bool Call(int gpu, const char* method, const std::string& target, std::string* body, std::string* err) const;
  // GET `route`?gpu_ids=ID and the number at answer[ID][field], or at answer[field][ID] when
  // per_gpu_object is false (/gpu/get_power's shape).
  std::optional<double> ReadField(int gpu, const std::string& route, const char* field, bool per_gpu_object) const;
  std::string Query(int gpu) const { return "?gpu_ids=" + std::to_string(gpus_[static_cast<size_t>(gpu)].id); }

  std::string socket_;
  std::string token_;
  Watchdog* watchdog_ = nullptr;
  std::unique_ptr<Http> http_;
  std::vector<Gpu> gpus_;
  mutable std::mutex mu_;  // one request at a time over the one connection; guards error_
  mutable std::string error_;
};

}  // namespace emo

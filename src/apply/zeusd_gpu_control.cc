// zeusd_gpu_control.cc — zeusd's HTTP routes (zeusd/src/routes/{server,gpu}.rs upstream) over its
// Unix socket with libcurl; answers are JSON in zeusd's units (mW, mJ), converted to W and J here.
#include "apply/zeusd_gpu_control.h"

#include <curl/curl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

namespace emo {

namespace {

size_t Append(char* data, size_t size, size_t n, void* to) {
  static_cast<std::string*>(to)->append(data, size * n);
  return size * n;
}

std::string EnvOr(const char* name, const std::string& given) {
  if (!given.empty()) return given;
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Why a connection to `path` may have failed, as a hint for the user; "" when the socket looks fine.
std::string SocketHint(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return "no socket at " + path + " (is zeusd running? set ZEUSD_SOCK_PATH to its --socket-path; default " +
             kZeusdDefaultSocket + ")";
    return "cannot see " + path + ": " + std::strerror(errno);
  }
  if (!S_ISSOCK(st.st_mode)) return path + " is not a socket (ZEUSD_SOCK_PATH must name zeusd's socket)";
  if (access(path.c_str(), R_OK | W_OK) != 0 && errno == EACCES)
    return "permission denied on " + path +
           " (connecting needs write access: start zeusd with --socket-permissions 666, or join its socket's group)";
  return "";
}

// The hint for a refusal, from zeusd's status and body (zeusd/src/auth.rs and error.rs upstream).
std::string StatusHint(long status, const std::string& body) {
  if (status == 401) return " (zeusd requires a token: set ZEUSD_TOKEN to one from `zeusd token issue`)";
  if (status == 403 && body.find("lacks required scope") != std::string::npos)
    return " (the token in ZEUSD_TOKEN lacks this scope: ask for a token with the gpu-control scope)";
  if (status == 403) return " (zeusd itself lacks the privilege: it must run as root)";
  if (status == 404) return " (this zeusd does not serve the route: enable its gpu-read and gpu-control API groups)";
  return "";
}

// answer[a][b] as a number, or nullopt.
std::optional<double> Number(const nlohmann::json& answer, const std::string& a, const std::string& b) {
  if (!answer.is_object() || !answer.contains(a) || !answer[a].is_object() || !answer[a].contains(b))
    return std::nullopt;
  const nlohmann::json& v = answer[a][b];
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

}  // namespace

struct ZeusdGpuControl::Http {
  CURL* curl = nullptr;
  curl_slist* headers = nullptr;
  ~Http() {
    if (headers) curl_slist_free_all(headers);
    if (curl) curl_easy_cleanup(curl);
  }
};

ZeusdGpuControl::ZeusdGpuControl() : http_(std::make_unique<Http>()) {}

std::unique_ptr<ZeusdGpuControl> ZeusdGpuControl::Open(std::string* err, const std::string& socket_path,
                                                       const std::string& token) {
  static const CURLcode global_init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (global_init != CURLE_OK) {
    *err = std::string("libcurl: ") + curl_easy_strerror(global_init);
    return nullptr;
  }
  std::unique_ptr<ZeusdGpuControl> c(new ZeusdGpuControl());
  c->socket_ = EnvOr("ZEUSD_SOCK_PATH", socket_path);
  if (c->socket_.empty()) c->socket_ = kZeusdDefaultSocket;
  c->token_ = EnvOr("ZEUSD_TOKEN", token);
  Http& h = *c->http_;
  h.curl = curl_easy_init();
  if (!h.curl) {
    *err = "libcurl: cannot create a handle";
    return nullptr;
  }
  curl_easy_setopt(h.curl, CURLOPT_UNIX_SOCKET_PATH, c->socket_.c_str());
  curl_easy_setopt(h.curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(h.curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h.curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(h.curl, CURLOPT_TIMEOUT_MS, 30000L);  // a blocking command waits for NVML
  if (!c->token_.empty()) {
    h.headers = curl_slist_append(h.headers, ("Authorization: Bearer " + c->token_).c_str());
    curl_easy_setopt(h.curl, CURLOPT_HTTPHEADER, h.headers);
  }

  std::string body;
  if (!c->Call(-1, "GET", "/discover", &body, err)) return nullptr;
  const nlohmann::json d = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!d.is_object() || !d.contains("gpu_ids") || !d["gpu_ids"].is_array()) {
    *err = "zeusd at " + c->socket_ + ": GET /discover: no gpu_ids in its answer: " + body;
    return nullptr;
  }
  for (const nlohmann::json& id : d["gpu_ids"])
    if (id.is_number_unsigned()) c->gpus_.push_back(Gpu{.id = id.get<int>()});
  if (d.value("auth_required", false) && c->token_.empty()) {
    *err = "zeusd at " + c->socket_ + " requires a token: set ZEUSD_TOKEN to one from `zeusd token issue`";
    return nullptr;
  }
  if (c->gpus_.empty()) {
    *err = "zeusd at " + c->socket_ + " manages no GPU (are its gpu-read and gpu-control API groups enabled?)";
    return nullptr;
  }
  return c;
}

ZeusdGpuControl::~ZeusdGpuControl() {
  std::string ignored;
  if (http_ && http_->curl) RestoreAll(&ignored);
}

bool ZeusdGpuControl::Call(int gpu, const char* method, const std::string& target, std::string* body,
                           std::string* err) const {
  std::lock_guard<std::mutex> lock(mu_);
  CURL* curl = http_->curl;
  body->clear();
  const std::string url = "http://localhost" + target;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
  if (std::strcmp(method, "POST") == 0) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, "");  // zeusd >= 0.3 takes its arguments in the query
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  const std::string where = (gpu >= 0 ? "GPU " + std::to_string(gpu) + ": " : std::string()) + "zeusd at " + socket_ +
                            ": " + method + " " + target + ": ";
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    const std::string hint = SocketHint(socket_);
    *err = where + curl_easy_strerror(rc) + (hint.empty() ? "" : "; " + hint);
    return false;
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (status == 200) return true;
  std::string shown = *body;
  while (!shown.empty() && (shown.back() == '\n' || shown.back() == '\r')) shown.pop_back();
  *err = where + "HTTP " + std::to_string(status) + ": " + (shown.empty() ? "(empty body)" : shown) +
         StatusHint(status, shown);
  return false;
}

void ZeusdGpuControl::Watch(Watchdog* w) {
  watchdog_ = w;
  w->Zeusd(socket_);
}

bool ZeusdGpuControl::SetLockedClock(int gpu, int mhz, std::string* err) {
  const std::string f = std::to_string(std::max(mhz, 0));
  if (!gpus_[static_cast<size_t>(gpu)].locked && watchdog_) watchdog_->Locked(gpu);
  std::string body;
  if (!Call(gpu, "POST",
            "/gpu/set_gpu_locked_clocks" + Query(gpu) + "&min_clock_mhz=" + f + "&max_clock_mhz=" + f + "&block=true",
            &body, err))
    return false;
  gpus_[static_cast<size_t>(gpu)].locked = true;
  return true;
}

bool ZeusdGpuControl::ResetClock(int gpu, std::string* err) {
  std::string body;
  if (!Call(gpu, "POST", "/gpu/reset_gpu_locked_clocks" + Query(gpu) + "&block=true", &body, err)) return false;
  gpus_[static_cast<size_t>(gpu)].locked = false;
  return true;
}

bool ZeusdGpuControl::SetPowerLimit(int gpu, double watts, std::string* err) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  long before = -1;
  if (g.original_limit_mw < 0) {
    const std::optional<double> w = PowerLimitW(gpu);
    if (!w) {
      *err = error();
      return false;
    }
    before = std::lround(*w * 1000);
  }
  const long mw = std::lround(std::max(watts, 0.0) * 1000);
  if (before >= 0 && watchdog_) watchdog_->LimitChanged(gpu, static_cast<unsigned int>(before));
  std::string body;
  if (!Call(gpu, "POST", "/gpu/set_power_limit" + Query(gpu) + "&power_limit_mw=" + std::to_string(mw) + "&block=true",
            &body, err))
    return false;
  if (g.original_limit_mw < 0) g.original_limit_mw = before;
  return true;
}

bool ZeusdGpuControl::RestoreAll(std::string* err) {
  bool ok = true;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    Gpu& g = gpus_[i];
    const int gpu = static_cast<int>(i);
    std::string e, body;
    if (g.locked && !ResetClock(gpu, &e) && ok) ok = false, *err = e;
    if (g.original_limit_mw >= 0) {
      if (Call(gpu, "POST",
               "/gpu/set_power_limit" + Query(gpu) + "&power_limit_mw=" + std::to_string(g.original_limit_mw) +
                   "&block=true",
               &body, &e))
        g.original_limit_mw = -1;
      else if (ok)
        ok = false, *err = e;
    }
  }
  return ok;
}

bool ZeusdGpuControl::Offers(Reading r) const {
  switch (r) {
    case Reading::kEnergy:
    case Reading::kPower:
    case Reading::kPowerLimit:
      return true;
    case Reading::kUtilization:
    case Reading::kMemoryUtilization:
    case Reading::kClock:
    case Reading::kActivity:
    case Reading::kCounters:
      return false;  // zeusd has no route for them
  }
  return false;
}

std::string ZeusdGpuControl::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::optional<double> ZeusdGpuControl::ReadField(int gpu, const std::string& route, const char* field,
                                                 bool per_gpu_object) const {
  const std::string id = std::to_string(gpus_[static_cast<size_t>(gpu)].id);
  std::string body, err;
  std::optional<double> v;
  if (Call(gpu, "GET", route + Query(gpu), &body, &err)) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    v = per_gpu_object ? Number(j, id, field) : Number(j, field, id);
    if (!v)
      err = "GPU " + std::to_string(gpu) + ": zeusd at " + socket_ + ": GET " + route + Query(gpu) + ": no " + field +
            " for GPU " + id + " in its answer: " + body;
  }
  if (!v) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = err;
  }
  return v;
}

std::optional<double> ZeusdGpuControl::EnergyJ(int gpu) const {
  const std::optional<double> mj = ReadField(gpu, "/gpu/get_cumulative_energy", "energy_mj", true);
  return mj ? std::optional<double>(*mj / 1e3) : std::nullopt;
}

std::optional<double> ZeusdGpuControl::PowerW(int gpu) const {
  const std::optional<double> mw = ReadField(gpu, "/gpu/get_power", "power_mw", false);
  return mw ? std::optional<double>(*mw / 1e3) : std::nullopt;
}

std::optional<double> ZeusdGpuControl::PowerLimitW(int gpu) const {
  const std::optional<double> mw = ReadField(gpu, "/gpu/get_power_limit", "power_limit_mw", true);
  return mw ? std::optional<double>(*mw / 1e3) : std::nullopt;
}

bool ZeusdGpuControl::PowerLimitRange(int gpu, double* min_w, double* max_w) const {
  const std::optional<double> lo = ReadField(gpu, "/gpu/get_power_limit_constraints", "min_power_limit_mw", true);
  if (!lo) return false;
  const std::optional<double> hi = ReadField(gpu, "/gpu/get_power_limit_constraints", "max_power_limit_mw", true);
  if (!hi) return false;
  *min_w = *lo / 1e3;
  *max_w = *hi / 1e3;
  return true;
}

}  // namespace emo

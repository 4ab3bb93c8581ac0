// fake_zeusd.cc — the fake daemon's HTTP/1.1 server (keep-alive, several connections, one thread)
// and its routes, answering as zeusd/src/routes/{server,gpu}.rs, auth.rs and error.rs do upstream.
#include "fake_zeusd.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

namespace emo::test {

namespace {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
  }
  return "Error";
}

std::string Decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

bool ParseU32(const std::string& s, uint32_t* v) {
  if (s.empty() || s.size() > 10) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  const unsigned long long x = std::strtoull(s.c_str(), nullptr, 10);
  if (x > 0xffffffffull) return false;
  *v = static_cast<uint32_t>(x);
  return true;
}

// zeusd's parse_gpu_ids: a comma-separated list; parts that are not numbers are dropped.
std::vector<int> ParseGpuIds(const std::string& raw) {
  std::vector<int> ids;
  size_t start = 0;
  while (start <= raw.size()) {
    size_t comma = raw.find(',', start);
    if (comma == std::string::npos) comma = raw.size();
    uint32_t v = 0;
    std::string part = raw.substr(start, comma - start);
    while (!part.empty() && part.front() == ' ') part.erase(part.begin());
    while (!part.empty() && part.back() == ' ') part.pop_back();
    if (ParseU32(part, &v)) ids.push_back(static_cast<int>(v));
    start = comma + 1;
  }
  return ids;
}

}  // namespace

FakeZeusd::FakeZeusd(int gpus) : gpus_(static_cast<size_t>(gpus)) {}

FakeZeusd::~FakeZeusd() {
  Stop();
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

bool FakeZeusd::Start(std::string* err, const std::string& socket_path) {
  socket_ = socket_path;
  if (socket_.empty()) {
    char tmpl[] = "/tmp/emo-fake-zeusd-XXXXXX";
    if (!mkdtemp(tmpl)) {
      *err = std::string("mkdtemp: ") + std::strerror(errno);
      return false;
    }
    dir_ = tmpl;
    socket_ = dir_ + "/zeusd.sock";
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof addr.sun_path) {
    *err = "socket path too long: " + socket_;
    return false;
  }
  std::strcpy(addr.sun_path, socket_.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 16) != 0 || pipe(stop_pipe_) != 0) {
    *err = "fake zeusd: " + socket_ + ": " + std::strerror(errno);
    return false;
  }
  thread_ = std::thread([this] { Serve(); });
  return true;
}

void FakeZeusd::Stop() {
  if (thread_.joinable()) {
    const char c = 'x';
    if (write(stop_pipe_[1], &c, 1) != 1) std::abort();
    thread_.join();
  }
  for (int* fd : {&listen_fd_, &stop_pipe_[0], &stop_pipe_[1]})
    if (*fd >= 0) close(*fd), *fd = -1;
  if (!socket_.empty()) unlink(socket_.c_str());
}

std::vector<std::string> FakeZeusd::log() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_;
}

FakeZeusdGpu FakeZeusd::gpu(int i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return gpus_[static_cast<size_t>(i)];
}

void FakeZeusd::set_gpu(int i, const FakeZeusdGpu& g) {
  std::lock_guard<std::mutex> lock(mu_);
  gpus_[static_cast<size_t>(i)] = g;
}

void FakeZeusd::Serve() {
  struct Conn {
    int fd;
    std::string in;
  };
  std::vector<Conn> conns;
  for (;;) {
    std::vector<pollfd> fds = {{stop_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const Conn& c : conns) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) break;
    if (fds[1].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) conns.push_back({fd, ""});
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Conn& c = conns[i - 2];
      char buf[4096];
      const ssize_t n = read(c.fd, buf, sizeof buf);
      if (n <= 0) {
        close(c.fd);
        c.fd = -1;
        continue;
      }
      c.in.append(buf, static_cast<size_t>(n));
      // Answer every complete request in the buffer (bodies are skipped by their Content-Length).
      for (;;) {
        const size_t end = c.in.find("\r\n\r\n");
        if (end == std::string::npos) break;
        const std::string head = c.in.substr(0, end);
        size_t body_len = 0;
        std::string authorization;
        size_t line = head.find("\r\n");
        const std::string request_line = head.substr(0, line);
        while (line != std::string::npos) {
          const size_t next = head.find("\r\n", line + 2);
          const std::string h = head.substr(line + 2, next == std::string::npos ? std::string::npos : next - line - 2);
          const size_t colon = h.find(':');
          std::string name = h.substr(0, colon);
          for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
          std::string value = colon == std::string::npos ? "" : h.substr(colon + 1);
          while (!value.empty() && value.front() == ' ') value.erase(value.begin());
          if (name == "content-length") body_len = std::strtoul(value.c_str(), nullptr, 10);
          if (name == "authorization") authorization = value;
          line = next;
        }
        if (c.in.size() < end + 4 + body_len) break;
        c.in.erase(0, end + 4 + body_len);
        const size_t sp1 = request_line.find(' '), sp2 = request_line.rfind(' ');
        const std::string method = request_line.substr(0, sp1);
        const std::string target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
        {
          std::lock_guard<std::mutex> lock(mu_);
          log_.push_back(method + " " + target +
                         (authorization.empty() ? "" : " [Authorization: " + authorization + "]"));
        }
        const Answer a = Handle(method, target, authorization);
        std::string out = "HTTP/1.1 " + std::to_string(a.status) + " " + Reason(a.status) +
                          "\r\ncontent-length: " + std::to_string(a.body.size()) + "\r\n";
        if (!a.body.empty()) out += "content-type: " + a.content_type + "\r\n";
        out += "\r\n" + a.body;
        size_t sent = 0;
        while (sent < out.size()) {
          const ssize_t w = write(c.fd, out.data() + sent, out.size() - sent);
          if (w <= 0) break;
          sent += static_cast<size_t>(w);
        }
      }
    }
    std::erase_if(conns, [](const Conn& c) { return c.fd < 0; });
  }
  for (const Conn& c : conns) close(c.fd);
}

FakeZeusd::Answer FakeZeusd::Handle(const std::string& method, const std::string& target,
                                    const std::string& authorization) {
  const size_t q = target.find('?');
  const std::string path = target.substr(0, q);
  std::map<std::string, std::string> params;
  std::string query = q == std::string::npos ? "" : target.substr(q + 1);
  for (size_t start = 0; start < query.size();) {
    size_t amp = query.find('&', start);
    if (amp == std::string::npos) amp = query.size();
    const std::string kv = query.substr(start, amp - start);
    const size_t eq = kv.find('=');
    params[Decode(kv.substr(0, eq))] = eq == std::string::npos ? "" : Decode(kv.substr(eq + 1));
    start = amp + 1;
  }
  auto json_error = [](int status, const std::string& msg) {
    return Answer{status, "application/json", "{\"error\":\"" + msg + "\"}"};
  };
  auto text_error = [](int status, const std::string& msg) { return Answer{status, "text/plain; charset=utf-8", msg}; };

  // auth.rs: /discover and /time are open; the rest needs a valid bearer token when auth is on.
  if (!token_.empty() && path != "/discover" && path != "/time") {
    if (authorization.rfind("Bearer ", 0) != 0)
      return json_error(401, "Authentication required. Provide an Authorization: Bearer <token> header.");
    if (authorization.substr(7) != token_) return json_error(401, "Invalid token: InvalidSignature");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const int count = static_cast<int>(gpus_.size());
  if (method == "GET" && path == "/discover") {
    std::string ids;
    for (int i = 0; i < count; ++i) ids += (i ? "," : "") + std::to_string(i);
    return {200, "application/json",
            "{\"gpu_ids\":[" + ids +
                "],\"cpu_ids\":[],\"dram_available\":[],\"enabled_api_groups\":[\"gpu-control\","
                "\"gpu-read\"],\"auth_required\":" +
                (token_.empty() ? "false" : "true") + "}"};
  }

  // Write routes (routes/gpu.rs, impl_write_handler_for_gpu_command): POST, the query deserialised
  // with deny_unknown_fields into gpu_ids, the command's fields and block.
  struct Write {
    const char* path;
    std::vector<std::string> fields;  // u32 fields
  };
  static const std::vector<Write> writes = {{"/gpu/set_power_limit", {"power_limit_mw"}},
                                            {"/gpu/set_gpu_locked_clocks", {"min_clock_mhz", "max_clock_mhz"}},
                                            {"/gpu/reset_gpu_locked_clocks", {}}};
  for (const Write& w : writes) {
    if (path != w.path) continue;
    if (method != "POST") return {405, "text/plain", ""};
    std::map<std::string, uint32_t> values;
    for (const auto& [k, v] : params) {
      const bool known =
          k == "gpu_ids" || k == "block" || std::find(w.fields.begin(), w.fields.end(), k) != w.fields.end();
      if (!known) return text_error(400, "Query deserialize error: unknown field `" + k + "`");
    }
    if (!params.count("gpu_ids")) return text_error(400, "Query deserialize error: missing field `gpu_ids`");
    for (const std::string& f : w.fields) {
      if (!params.count(f)) return text_error(400, "Query deserialize error: missing field `" + f + "`");
      if (!ParseU32(params[f], &values[f]))
        return text_error(400, "Query deserialize error: invalid digit found in string");
    }
    if (!params.count("block")) return text_error(400, "Query deserialize error: missing field `block`");
    if (params["block"] != "true" && params["block"] != "false")
      return text_error(400, "Query deserialize error: provided string was not `true` or `false`");
    const std::vector<int> ids = ParseGpuIds(params["gpu_ids"]);
    if (ids.empty()) return json_error(400, "gpu_ids must contain at least one GPU index");
    for (int id : ids)
      if (id >= count) return text_error(400, "GPU index " + std::to_string(id) + " does not exist.");
    if (refuse_control_) {
      std::string errors;
      for (int id : ids)
        errors += (errors.empty() ? "\"" : ",\"") + std::to_string(id) + "\":\"NVML error: Insufficient Permissions\"";
      return {403, "application/json", "{\"errors\":{" + errors + "}}"};
    }
    for (int id : ids) {
      FakeZeusdGpu& g = gpus_[static_cast<size_t>(id)];
      if (path == "/gpu/set_power_limit") g.power_limit_mw = values["power_limit_mw"];
      if (path == "/gpu/set_gpu_locked_clocks") {
        g.locked_min_mhz = static_cast<int>(values["min_clock_mhz"]);
        g.locked_max_mhz = static_cast<int>(values["max_clock_mhz"]);
      }
      if (path == "/gpu/reset_gpu_locked_clocks") g.locked_min_mhz = g.locked_max_mhz = 0;
    }
    return {200, "", ""};
  }

  // Read routes (impl_read_handler_for_gpu_command, get_power_handler): GET, optional gpu_ids
  // (default all), a JSON object keyed by GPU id.
  if (path == "/gpu/get_cumulative_energy" || path == "/gpu/get_power_limit" ||
      path == "/gpu/get_power_limit_constraints" || path == "/gpu/get_power") {
    if (method != "GET") return {405, "text/plain", ""};
    for (const auto& [k, v] : params)
      if (k != "gpu_ids")
        return text_error(400, "Query deserialize error: unknown field `" + k + "`, expected `gpu_ids`");
    std::vector<int> ids;
    if (params.count("gpu_ids")) {
      ids = ParseGpuIds(params["gpu_ids"]);
      if (ids.empty()) return json_error(400, "gpu_ids must contain at least one GPU index");
      for (int id : ids)
        if (id >= count) return json_error(400, "GPU " + std::to_string(id) + " not found");
    } else {
      for (int i = 0; i < count; ++i) ids.push_back(i);
    }
    std::string body;
    for (int id : ids) {
      const FakeZeusdGpu& g = gpus_[static_cast<size_t>(id)];
      std::string v;
      if (path == "/gpu/get_cumulative_energy") v = "{\"energy_mj\":" + std::to_string(g.energy_mj) + "}";
      if (path == "/gpu/get_power_limit") v = "{\"power_limit_mw\":" + std::to_string(g.power_limit_mw) + "}";
      if (path == "/gpu/get_power_limit_constraints")
        v = "{\"min_power_limit_mw\":" + std::to_string(g.min_power_limit_mw) +
            ",\"max_power_limit_mw\":" + std::to_string(g.max_power_limit_mw) + "}";
      if (path == "/gpu/get_power") v = std::to_string(g.power_mw);
      body += (body.empty() ? "\"" : ",\"") + std::to_string(id) + "\":" + v;
    }
    if (path == "/gpu/get_power")
      return {200, "application/json", "{\"timestamp_ms\":1700000000000,\"power_mw\":{" + body + "}}"};
    return {200, "application/json", "{" + body + "}"};
  }
  return {404, "", ""};
}

}  // namespace emo::test

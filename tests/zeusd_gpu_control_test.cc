// zeusd_gpu_control_test.cc — the zeusd back end against a fake daemon (fake_zeusd.h) on a Unix
// socket: discovery, the exact requests for clock and power-limit commands, unit conversion of
// readings, the bearer token, readings zeusd lacks, error messages, restore on destruction, and the
// watchdog restoring through zeusd when EMO dies.
#include "apply/zeusd_gpu_control.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "fake_zeusd.h"

namespace emo {
namespace {

class Zeusd : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ZEUSD_SOCK_PATH");
    unsetenv("ZEUSD_TOKEN");
  }
  void StartServer() {
    std::string err;
    ASSERT_TRUE(fake_.Start(&err)) << err;
  }
  std::unique_ptr<ZeusdGpuControl> Open(const std::string& token = "") {
    std::string err;
    auto c = ZeusdGpuControl::Open(&err, fake_.socket_path(), token);
    EXPECT_NE(c, nullptr) << err;
    return c;
  }
  bool Logged(const std::string& line) const {
    const std::vector<std::string> log = fake_.log();
    return std::find(log.begin(), log.end(), line) != log.end();
  }
  test::FakeZeusd fake_{2};
};

TEST_F(Zeusd, DiscoversGpusAndSaysWhatItOffers) {
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->Count(), 2);
  EXPECT_TRUE(Logged("GET /discover"));
  EXPECT_EQ(c->Name(0), "");                   // /discover names no model
  EXPECT_TRUE(c->SupportedClocks(1).empty());  // nor clocks
  EXPECT_TRUE(c->Offers(Reading::kEnergy));
  EXPECT_TRUE(c->Offers(Reading::kPower));
  EXPECT_TRUE(c->Offers(Reading::kPowerLimit));
  EXPECT_FALSE(c->Offers(Reading::kUtilization));
  EXPECT_FALSE(c->Offers(Reading::kMemoryUtilization));
  EXPECT_FALSE(c->Offers(Reading::kClock));
  EXPECT_EQ(c->Utilization(0), std::nullopt);
  EXPECT_EQ(c->MemoryUtilization(0), std::nullopt);
  EXPECT_EQ(c->ClockMhz(0), std::nullopt);
  EXPECT_EQ(fake_.log().size(), 1u);  // unoffered readings ask zeusd nothing
  std::string err;
  EXPECT_FALSE(CheckOffers(*c, {Reading::kEnergy, Reading::kUtilization}, &err));
  EXPECT_EQ(err, "the GPU back end offers no utilisation reading");
}

TEST_F(Zeusd, SocketFromEnvironment) {
  StartServer();
  setenv("ZEUSD_SOCK_PATH", fake_.socket_path().c_str(), 1);
  std::string err;
  auto c = ZeusdGpuControl::Open(&err);
  ASSERT_NE(c, nullptr) << err;
  EXPECT_EQ(c->socket_path(), fake_.socket_path());
  unsetenv("ZEUSD_SOCK_PATH");
}

TEST_F(Zeusd, LocksAndResetsClocksWithZeusdsQuery) {
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  std::string err;
  ASSERT_TRUE(c->SetLockedClock(1, 1005, &err)) << err;
  EXPECT_TRUE(Logged("POST /gpu/set_gpu_locked_clocks?gpu_ids=1&min_clock_mhz=1005&max_clock_mhz=1005&block=true"));
  EXPECT_EQ(fake_.gpu(1).locked_min_mhz, 1005);
  EXPECT_EQ(fake_.gpu(1).locked_max_mhz, 1005);
  EXPECT_EQ(fake_.gpu(0).locked_min_mhz, 0);
  ASSERT_TRUE(c->ResetClock(1, &err)) << err;
  EXPECT_TRUE(Logged("POST /gpu/reset_gpu_locked_clocks?gpu_ids=1&block=true"));
  EXPECT_EQ(fake_.gpu(1).locked_min_mhz, 0);
}

TEST_F(Zeusd, PowerLimitsInWattsAndReadings) {
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  EXPECT_DOUBLE_EQ(c->PowerLimitW(0).value_or(-1), 400.0);
  double lo = 0, hi = 0;
  ASSERT_TRUE(c->PowerLimitRange(0, &lo, &hi));
  EXPECT_DOUBLE_EQ(lo, 100.0);
  EXPECT_DOUBLE_EQ(hi, 400.0);
  std::string err;
  ASSERT_TRUE(c->SetPowerLimit(0, 275.5, &err)) << err;
  EXPECT_TRUE(Logged("POST /gpu/set_power_limit?gpu_ids=0&power_limit_mw=275500&block=true"));
  EXPECT_EQ(fake_.gpu(0).power_limit_mw, 275500u);
  EXPECT_DOUBLE_EQ(c->PowerLimitW(0).value_or(-1), 275.5);
  EXPECT_TRUE(Logged("GET /gpu/get_power_limit?gpu_ids=0"));
  EXPECT_DOUBLE_EQ(c->EnergyJ(1).value_or(-1), 123456.789);
  EXPECT_TRUE(Logged("GET /gpu/get_cumulative_energy?gpu_ids=1"));
  EXPECT_DOUBLE_EQ(c->PowerW(1).value_or(-1), 250.0);
  EXPECT_TRUE(Logged("GET /gpu/get_power?gpu_ids=1"));
  EXPECT_EQ(c->error(), "");
}

TEST_F(Zeusd, EnergyCounterAdvances) {
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  const double before = c->EnergyJ(0).value_or(-1);
  test::FakeZeusdGpu g = fake_.gpu(0);
  g.energy_mj += 2500;
  fake_.set_gpu(0, g);
  EXPECT_DOUBLE_EQ(c->EnergyJ(0).value_or(-1) - before, 2.5);
}

TEST_F(Zeusd, SendsTheBearerToken) {
  fake_.set_token("s3cret");
  StartServer();
  auto c = Open("s3cret");
  ASSERT_NE(c, nullptr);
  std::string err;
  ASSERT_TRUE(c->SetLockedClock(0, 1410, &err)) << err;
  EXPECT_TRUE(
      Logged("POST /gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=1410&max_clock_mhz=1410&block=true "
             "[Authorization: Bearer s3cret]"));
  EXPECT_TRUE(c->EnergyJ(0).has_value()) << c->error();
}

TEST_F(Zeusd, TokenFromEnvironment) {
  fake_.set_token("from-env");
  StartServer();
  setenv("ZEUSD_TOKEN", "from-env", 1);
  auto c = Open();
  unsetenv("ZEUSD_TOKEN");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->PowerW(0).has_value()) << c->error();
}

TEST_F(Zeusd, MissingOrWrongTokenIsExplained) {
  fake_.set_token("right");
  StartServer();
  std::string err;
  EXPECT_EQ(ZeusdGpuControl::Open(&err, fake_.socket_path()), nullptr);
  EXPECT_NE(err.find("requires a token: set ZEUSD_TOKEN"), std::string::npos) << err;
  auto c = Open("wrong");
  ASSERT_NE(c, nullptr);  // /discover needs no token
  EXPECT_FALSE(c->SetLockedClock(0, 1005, &err));
  EXPECT_NE(err.find("GPU 0: zeusd at " + fake_.socket_path() +
                     ": POST /gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=1005&max_clock_mhz=1005&block=true: "
                     "HTTP 401: {\"error\":\"Invalid token: InvalidSignature\"}"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("set ZEUSD_TOKEN"), std::string::npos) << err;
  EXPECT_EQ(c->EnergyJ(0), std::nullopt);
  EXPECT_NE(c->error().find("GET /gpu/get_cumulative_energy?gpu_ids=0: HTTP 401"), std::string::npos) << c->error();
}

TEST_F(Zeusd, AbsentSocketIsExplained) {
  std::string err;
  EXPECT_EQ(ZeusdGpuControl::Open(&err, "/nonexistent/zeusd.sock"), nullptr);
  EXPECT_NE(err.find("zeusd at /nonexistent/zeusd.sock: GET /discover: "), std::string::npos) << err;
  EXPECT_NE(err.find("no socket at /nonexistent/zeusd.sock (is zeusd running? set ZEUSD_SOCK_PATH"), std::string::npos)
      << err;
}

TEST_F(Zeusd, UnwritableSocketIsExplained) {
  if (geteuid() == 0) GTEST_SKIP() << "root can write any socket";
  StartServer();
  ASSERT_EQ(chmod(fake_.socket_path().c_str(), 0600 & ~0200), 0);
  std::string err;
  EXPECT_EQ(ZeusdGpuControl::Open(&err, fake_.socket_path()), nullptr);
  EXPECT_NE(err.find("permission denied on " + fake_.socket_path()), std::string::npos) << err;
}

TEST_F(Zeusd, RefusedCommandNamesGpuRouteAndAnswer) {
  fake_.set_refuse_control(true);
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  std::string err;
  EXPECT_FALSE(c->SetLockedClock(1, 1005, &err));
  EXPECT_EQ(err, "GPU 1: zeusd at " + fake_.socket_path() +
                     ": POST /gpu/set_gpu_locked_clocks?gpu_ids=1&min_clock_mhz=1005&max_clock_mhz=1005&block=true: "
                     "HTTP 403: {\"errors\":{\"1\":\"NVML error: Insufficient Permissions\"}} (zeusd itself lacks the "
                     "privilege: it must run as root)");
  EXPECT_FALSE(c->SetPowerLimit(0, 300, &err));
  EXPECT_NE(err.find("POST /gpu/set_power_limit?gpu_ids=0&power_limit_mw=300000&block=true: HTTP 403"),
            std::string::npos)
      << err;
  // Nothing was changed, so nothing is restored.
  const size_t before = fake_.log().size();
  EXPECT_TRUE(c->RestoreAll(&err)) << err;
  EXPECT_EQ(fake_.log().size(), before);
}

TEST_F(Zeusd, ZeusdErrorAnswersReachTheUser) {
  // A GPU index zeusd does not have, through a server that has fewer GPUs than the client saw.
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  fake_.Stop();
  test::FakeZeusd one(1);
  std::string err;
  ASSERT_TRUE(one.Start(&err, c->socket_path())) << err;
  EXPECT_FALSE(c->SetLockedClock(1, 1005, &err));
  EXPECT_NE(err.find("HTTP 400: GPU index 1 does not exist."), std::string::npos) << err;
  EXPECT_EQ(c->EnergyJ(1), std::nullopt);
  EXPECT_NE(c->error().find("HTTP 400: {\"error\":\"GPU 1 not found\"}"), std::string::npos) << c->error();
  EXPECT_TRUE(c->EnergyJ(0).has_value()) << c->error();
}

// One raw HTTP request to the fake, for answers the back end never provokes; the whole answer.
std::string RawRequest(const std::string& socket_path, const std::string& method, const std::string& target) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", socket_path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "connect failed";
  }
  const std::string req = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) return "write failed";
  shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST_F(Zeusd, FakeAnswersBadParametersAsZeusdDoes) {
  StartServer();
  const std::string& s = fake_.socket_path();
  EXPECT_NE(RawRequest(s, "POST", "/gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=abc&max_clock_mhz=1&block=true")
                .find("400 Bad Request"),
            std::string::npos);
  EXPECT_NE(RawRequest(s, "POST", "/gpu/set_power_limit?gpu_ids=0&power_limit_mw=1").find("missing field `block`"),
            std::string::npos);
  EXPECT_NE(RawRequest(s, "POST", "/gpu/reset_gpu_locked_clocks?gpu_ids=0&block=true&x=1").find("unknown field `x`"),
            std::string::npos);
  EXPECT_NE(RawRequest(s, "POST", "/gpu/reset_gpu_locked_clocks?gpu_ids=&block=true")
                .find("{\"error\":\"gpu_ids must contain at least one GPU index\"}"),
            std::string::npos);
  EXPECT_NE(RawRequest(s, "GET", "/gpu/get_power_limit").find("{\"0\":{\"power_limit_mw\":400000},\"1\":"),
            std::string::npos);
  EXPECT_NE(RawRequest(s, "GET", "/gpu/no_such_route").find("404 Not Found"), std::string::npos);
}

TEST_F(Zeusd, NegativeClockIsSentAsZero) {
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  std::string err;
  EXPECT_TRUE(c->SetLockedClock(0, -5, &err)) << err;
  EXPECT_TRUE(Logged("POST /gpu/set_gpu_locked_clocks?gpu_ids=0&min_clock_mhz=0&max_clock_mhz=0&block=true"));
}

TEST_F(Zeusd, RestoresWhatItChangedOnDestruction) {
  StartServer();
  {
    auto c = Open();
    ASSERT_NE(c, nullptr);
    std::string err;
    ASSERT_TRUE(c->SetLockedClock(0, 1200, &err)) << err;
    ASSERT_TRUE(c->SetPowerLimit(1, 250, &err)) << err;
    ASSERT_TRUE(c->SetPowerLimit(1, 200, &err)) << err;  // the first original is kept
    EXPECT_EQ(fake_.gpu(1).power_limit_mw, 200000u);
  }
  EXPECT_EQ(fake_.gpu(0).locked_min_mhz, 0);
  EXPECT_EQ(fake_.gpu(1).power_limit_mw, 400000u);
  const std::vector<std::string> log = fake_.log();
  ASSERT_GE(log.size(), 2u);
  EXPECT_EQ(log[log.size() - 2], "POST /gpu/reset_gpu_locked_clocks?gpu_ids=0&block=true");
  EXPECT_EQ(log.back(), "POST /gpu/set_power_limit?gpu_ids=1&power_limit_mw=400000&block=true");
  // GPU 1's clock was never locked, so it is not reset.
  EXPECT_FALSE(Logged("POST /gpu/reset_gpu_locked_clocks?gpu_ids=1&block=true"));
}

// EMO dies (here: the watchdog's pipe closes without Done()) after locking GPU 1's clocks and
// lowering GPU 0's power limit: the watchdog, forked before any thread as emo run forks it,
// restores both through zeusd. Told Done(), it leaves them alone.
TEST_F(Zeusd, WatchdogRestoresThroughZeusdWhenEmoDies) {
  std::string err;
  auto dog = std::make_unique<Watchdog>();
  ASSERT_TRUE(dog->Start(&err)) << err;
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  c->Watch(dog.get());
  ASSERT_TRUE(c->SetLockedClock(1, 1005, &err)) << err;
  ASSERT_TRUE(c->SetPowerLimit(0, 300, &err)) << err;
  ASSERT_EQ(fake_.gpu(0).power_limit_mw, 300000u);
  dog.reset();
  bool restored = false;
  for (int i = 0; i < 500 && !restored; ++i) {
    restored = fake_.gpu(1).locked_min_mhz == 0 && fake_.gpu(0).power_limit_mw == 400000;
    if (!restored) usleep(10000);
  }
  EXPECT_TRUE(restored);
  EXPECT_TRUE(Logged("POST /gpu/reset_gpu_locked_clocks?gpu_ids=1&block=true"));
  EXPECT_TRUE(Logged("POST /gpu/set_power_limit?gpu_ids=0&power_limit_mw=400000&block=true"));
}

TEST_F(Zeusd, WatchdogToldDoneLeavesTheGpusAlone) {
  std::string err;
  auto dog = std::make_unique<Watchdog>();
  ASSERT_TRUE(dog->Start(&err)) << err;
  StartServer();
  auto c = Open();
  ASSERT_NE(c, nullptr);
  c->Watch(dog.get());
  ASSERT_TRUE(c->SetLockedClock(1, 1005, &err)) << err;
  dog->Done();
  dog.reset();
  usleep(300000);  // time for a watchdog that wrongly acted to reach the daemon
  EXPECT_EQ(fake_.gpu(1).locked_min_mhz, 1005);
  EXPECT_FALSE(Logged("POST /gpu/reset_gpu_locked_clocks?gpu_ids=1&block=true"));
}

}  // namespace
}  // namespace emo
